// GpuLowering's statements (gpu_lowering.h): sequences, ifs, lets, stores, barriers,
// atomics and loops (register loops unrolled); the control flow of the kernel, apart
// from the values it computes.
#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

void GpuLowering::stmt(const ir::Stmt& s) {
    switch (s->kind) {
    case ir::StmtKind::Seq:
        for (auto& c : s->as<ir::SeqNode>()->stmts) stmt(c);
        return;
    case ir::StmtKind::For: lower_for(*s->as<ir::ForNode>()); return;
    case ir::StmtKind::If: {
        auto* i = s->as<ir::IfNode>();
        llvm::Value* c = expr(i->cond);
        auto* tb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
        auto* eb = i->else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : nullptr;
        auto* jb = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
        b_.CreateCondBr(c, tb, eb ? eb : jb);
        b_.SetInsertPoint(tb);
        stmt(i->then_case);
        b_.CreateBr(jb);
        if (eb) {
            b_.SetInsertPoint(eb);
            stmt(i->else_case);
            b_.CreateBr(jb);
        }
        b_.SetInsertPoint(jb);
        return;
    }
    case ir::StmtKind::LetStmt: {
        auto* l = s->as<ir::LetStmtNode>();
        bind(l->var, expr(l->value));
        stmt(l->body);
        return;
    }
    case ir::StmtKind::Allocate: lower_allocate(*s->as<ir::AllocateNode>()); return;
    case ir::StmtKind::Store: {
        auto* st = s->as<ir::StoreNode>();
        auto& g = buffer(st->buffer);
        llvm::Value* v = storage_value(st->value, st->buffer->dtype);
        b_.CreateStore(v, element_ptr(g, st->indices));
        return;
    }
    case ir::StmtKind::Evaluate: expr(s->as<ir::EvaluateNode>()->value); return;
    case ir::StmtKind::Barrier: hooks_.barrier(b_); return;
    case ir::StmtKind::AtomicRmw: atomic_rmw(*s->as<ir::AtomicRmwNode>()); return;
    case ir::StmtKind::MachineOp: machine_op(*s->as<ir::MachineOpNode>()); return;
    default: break;
    }
    TILEC_ICE(who_ + ": statement of kind " + std::to_string(static_cast<int>(s->kind)) +
              " at thread level (the lowering should have removed it)");
}

void GpuLowering::atomic_rmw(const ir::AtomicRmwNode& a) {
    DataType t = a.buffer->dtype;
    if (a.buffer->scope != ir::Scope::Global)
        TILEC_ICE(who_ + ": atomic on " + ir::scope_name(a.buffer->scope) + " buffer '" + a.buffer->name + "'");
    bool is_float = t.is_float();
    if (!(is_float ? (t.kind == ir::TypeKind::Float && (t.bits == 32 || t.bits == 64))
                   : (t.is_integer() && (t.bits == 32 || t.bits == 64))))
        TILEC_ICE(who_ + ": atomic add of " + t.str());
    auto& g = buffer(a.buffer);
    llvm::Value* v = expr(a.value);
    llvm::Value* p = element_ptr(g, a.indices);
    auto* inst = b_.CreateAtomicRMW(is_float ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, p, v,
                                    llvm::MaybeAlign(t.bits / 8), llvm::AtomicOrdering::Monotonic,
                                    hooks_.device_scope(ctx_));
    hooks_.annotate_atomic(inst);
}

void GpuLowering::lower_for(const ir::ForNode& f) {
    auto mn = ir::as_const_int(f.min);
    auto ext = ir::as_const_int(f.extent);
    if ((f.for_kind == ir::ForKind::Unroll || f.for_kind == ir::ForKind::Parallel) && mn && ext &&
        *ext <= 256) {
        // Register loops (a parallel loop's, at thread level, too): unrolled here, so
        // register indices are constants and the register arrays become registers.
        for (int64_t i = 0; i < *ext; ++i) {
            bind(f.var, llvm::ConstantInt::get(reg_type(f.var->type), *mn + i, true));
            stmt(f.body);
        }
        return;
    }
    llvm::Type* t = reg_type(f.var->type);
    llvm::Value* lo = expr(f.min);
    llvm::Value* hi = b_.CreateAdd(lo, expr(f.extent));
    auto* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "for.head", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "for.end", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* iv = b_.CreatePHI(t, 2, f.var->name);
    iv->addIncoming(lo, pre);
    llvm::Value* cond = f.var->type.is_uint() ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi);
    b_.CreateCondBr(cond, body, done);
    b_.SetInsertPoint(body);
    bind(f.var, iv);
    stmt(f.body);
    llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(t, 1));
    iv->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* latch = b_.CreateBr(head);
    // AMD: LICM off for the loop (llvm.licm.disable). A main loop's fills and operand
    // reads are unrolled over a thread's elements, and each element's address (a 64-bit
    // global pointer, an LDS offset, its bounds test) is loop-invariant but for the
    // step's offset: hoisted, they were all live across the loop beside the
    // accumulators, and the gfx1100 gemms and attentions spilled 12-504 bytes of them
    // (MLA decode 112). Computed in the loop they cost a few VALU instructions a step and
    // no scratch (gemm_f16_nt 160 -> 0 bytes, attn_fwd_causal_d64 504 -> 80). The
    // register allocator's own rematerialisation and MachineLICM still hoist what the
    // registers allow.
    //
    // A rolled loop (a copy's cold element fallback, ir::ForKind::Rolled): unrolling off
    // (llvm.loop.unroll.disable; LLVM unrolled these by 2, or wholly at 8 iterations).
    // They run only at ragged edges and on misaligned rows; unrolled, they cost gemm_f16
    // a third of ptxas's time on sm_90a and 40% on sm_80 (docs/architecture.md, "Compile
    // time").
    std::vector<llvm::Metadata*> hints;
    if (target_.is_amd()) hints.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.licm.disable")}));
    if (f.for_kind == ir::ForKind::Rolled)
        hints.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    if (!hints.empty()) {
        hints.insert(hints.begin(), nullptr);
        llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, hints);
        loop_id->replaceOperandWith(0, loop_id);
        latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(done);
}

}  // namespace tilec::codegen::gpu
