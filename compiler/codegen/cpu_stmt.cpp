// Statements of the CPU backend: loops (parallel ones annotated for the vectorizer),
// buffers (stack or heap), element loads and stores (packed i4/u4), print and assert.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu_lowering.h"
#include "ir/printer.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;

namespace {

// Block-local buffers up to this size live on the stack, while the block's stack use
// stays under kStackBudget; larger ones are allocated on the heap for each block.
constexpr uint64_t kStackBufferLimit = 128 * 1024;
constexpr uint64_t kStackBudget = 512 * 1024;

}  // namespace

int64_t const_extent(const ir::Expr& e, const char* what) {
    auto c = ir::as_const_int(e);
    if (!c)
        TILEC_ICE(std::string("CPU backend: ") + what + " is not a compile-time constant: " + ir::print(e));
    return *c;
}

FunctionLowering::FunctionLowering(ModuleState& ms, llvm::Function* fn, llvm::IRBuilderBase& b)
    : ms_(ms), fn_(fn), b_(b) {}

void FunctionLowering::bind(const ir::Var& v, llvm::Value* value) {
    vars_[v.get()] = value;
}

void FunctionLowering::bind_tensor(const ir::Buffer& buf, llvm::Value* base) {
    BufferInfo info;
    info.base = base;
    info.global = true;
    info.packed = buf->dtype.bits == 4;
    for (auto& d : buf->shape) info.shape.push_back(convert(expr(d), d->type, DataType::i64()));
    size_t rank = buf->rank();
    if (!buf->strides.empty()) {
        for (auto& s : buf->strides) info.strides.push_back(convert(expr(s), s->type, DataType::i64()));
    } else {
        info.strides.assign(rank, nullptr);
        llvm::Value* stride = b_.getInt64(1);
        for (size_t d = rank; d-- > 0;) {
            info.strides[d] = stride;
            stride = b_.CreateMul(stride, info.shape[d], "", false, true);
        }
    }
    buffers_[buf.get()] = std::move(info);
}

const BufferInfo& FunctionLowering::buffer(const ir::Buffer& b) {
    auto it = buffers_.find(b.get());
    if (it == buffers_.end()) TILEC_ICE("CPU backend: buffer '" + b->name + "' used outside its allocation");
    return it->second;
}

llvm::Value* FunctionLowering::element_offset(const BufferInfo& info, const std::vector<llvm::Value*>& idx) {
    if (idx.size() != info.strides.size())
        TILEC_ICE("CPU backend: element access with the wrong number of indices");
    llvm::Value* off = nullptr;
    for (size_t d = 0; d < idx.size(); ++d) {
        llvm::Value* term = b_.CreateMul(idx[d], info.strides[d], "", false, true);
        off = off ? b_.CreateAdd(off, term, "", false, true) : term;
    }
    return off ? off : b_.getInt64(0);
}

llvm::Value* FunctionLowering::element_ptr(const ir::BufferNode& b, const BufferInfo& info, llvm::Value* offset) {
    return b_.CreateInBoundsGEP(storage_type(ms_.ctx, b.dtype), info.base, offset);
}

void FunctionLowering::mark_access(llvm::Value* inst, const ir::BufferNode& b) {
    // Per-thread buffers (`local`, `var`) are private to each iteration of a parallel
    // loop on a GPU, but shared by all of them here: their accesses stay ordered.
    if (access_groups_.empty() || b.scope == ir::Scope::Local) return;
    auto* i = llvm::cast<llvm::Instruction>(inst);
    llvm::MDNode* md = access_groups_.size() == 1
                           ? access_groups_[0]
                           : llvm::MDNode::get(ms_.ctx, std::vector<llvm::Metadata*>(access_groups_.begin(),
                                                                                     access_groups_.end()));
    i->setMetadata(llvm::LLVMContext::MD_access_group, md);
}

void FunctionLowering::block_body(const ir::Stmt& body) {
    live_after_ = tiles_live_after(body);
    forwardable_ = forwardable_copies(body);
    prefetching_ = prefetching_copies(body);
    stored_extents_ = accumulator_stored_extents(body);
    stmt(body);
}

llvm::Value* FunctionLowering::load_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx) {
    if (auto it = forwarded_.find(b.get()); it != forwarded_.end())
        return from_storage(b_.CreateLoad(storage_type(ms_.ctx, b->dtype), it->second), b->dtype);
    const BufferInfo& info = buffer(b);
    llvm::Value* off = element_offset(info, idx);
    if (info.packed) {
        llvm::Value* p = b_.CreateInBoundsGEP(b_.getInt8Ty(), info.base, b_.CreateAShr(off, 1));
        llvm::Value* byte = b_.CreateLoad(b_.getInt8Ty(), p);
        mark_access(byte, b);
        llvm::Value* shift = b_.CreateShl(b_.CreateTrunc(b_.CreateAnd(off, 1), b_.getInt8Ty()), 2);
        return b_.CreateTrunc(b_.CreateLShr(byte, shift), reg_type(ms_.ctx, b->dtype));
    }
    llvm::Value* v = b_.CreateLoad(storage_type(ms_.ctx, b->dtype), element_ptr(b, info, off));
    mark_access(v, b);
    return from_storage(v, b->dtype);
}

void FunctionLowering::store_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx,
                                     llvm::Value* reg) {
    if (auto it = forwarded_.find(b.get()); it != forwarded_.end()) {
        b_.CreateStore(to_storage(reg, b->dtype), it->second);
        return;
    }
    const BufferInfo& info = buffer(b);
    llvm::Value* off = element_offset(info, idx);
    if (info.packed) {
        // Two elements share a byte, and blocks run concurrently: clear and set the
        // nibble with atomic and/or, which leave the other nibble alone.
        llvm::Value* p = b_.CreateInBoundsGEP(b_.getInt8Ty(), info.base, b_.CreateAShr(off, 1));
        llvm::Value* shift = b_.CreateShl(b_.CreateTrunc(b_.CreateAnd(off, 1), b_.getInt8Ty()), 2);
        llvm::Value* nib = b_.CreateShl(b_.CreateZExt(reg, b_.getInt8Ty()), shift);
        llvm::Value* keep = b_.CreateNot(b_.CreateShl(b_.getInt8(0xf), shift));
        b_.CreateAtomicRMW(llvm::AtomicRMWInst::And, p, keep, llvm::MaybeAlign(1),
                           llvm::AtomicOrdering::Monotonic);
        b_.CreateAtomicRMW(llvm::AtomicRMWInst::Or, p, nib, llvm::MaybeAlign(1),
                           llvm::AtomicOrdering::Monotonic);
        return;
    }
    auto* st = b_.CreateStore(to_storage(reg, b->dtype), element_ptr(b, info, off));
    mark_access(st, b);
}

void FunctionLowering::atomic_add_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx,
                                          llvm::Value* reg) {
    const BufferInfo& info = buffer(b);
    DataType t = b->dtype;
    // A narrow float's sum comes as an f64 (lower_atomic_add): the old value widens to it.
    auto add = [&](llvm::Value* x) {
        if (!t.is_float()) return b_.CreateAdd(x, reg);
        if (x->getType() != reg->getType()) x = b_.CreateFPExt(x, reg->getType());
        return b_.CreateFAdd(x, reg);
    };
    if (!info.global) {  // one block owns it: a plain read-modify-write
        store_element(b, idx, add(load_element(b, idx)));
        return;
    }
    llvm::Value* off = element_offset(info, idx);
    auto order = llvm::AtomicOrdering::Monotonic;
    bool native = (t.is_float() && !is_narrow_float(t)) || (t.is_integer() && t.bits >= 8);
    if (native) {
        auto op = t.is_float() ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
        b_.CreateAtomicRMW(op, element_ptr(b, info, off), reg, llvm::MaybeAlign(), order);
        return;
    }
    // Narrow floats and packed nibbles: a compare-and-swap loop on the storage word.
    llvm::Value* p;
    llvm::Type* word;
    llvm::Value* shift = nullptr;
    if (info.packed) {
        word = b_.getInt8Ty();
        p = b_.CreateInBoundsGEP(word, info.base, b_.CreateAShr(off, 1));
        shift = b_.CreateShl(b_.CreateTrunc(b_.CreateAnd(off, 1), word), 2);
    } else {
        word = b_.getIntNTy(storage_type(ms_.ctx, t)->getPrimitiveSizeInBits());
        p = element_ptr(b, info, off);
    }
    auto* first = b_.CreateLoad(word, p);
    first->setAtomic(order);
    first->setAlignment(llvm::Align(word->getPrimitiveSizeInBits() / 8));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ms_.ctx, "cas", fn_);
    auto* done = llvm::BasicBlock::Create(ms_.ctx, "cas.done", fn_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    auto* old = b_.CreatePHI(word, 2);
    old->addIncoming(first, pre);
    llvm::Value* updated;
    if (info.packed) {
        llvm::Value* cur = b_.CreateTrunc(b_.CreateLShr(old, shift), reg_type(ms_.ctx, t));
        llvm::Value* nib = b_.CreateShl(b_.CreateZExt(add(cur), word), shift);
        llvm::Value* keep = b_.CreateAnd(old, b_.CreateNot(b_.CreateShl(b_.getInt8(0xf), shift)));
        updated = b_.CreateOr(keep, nib);
    } else {
        llvm::Type* st = storage_type(ms_.ctx, t);
        llvm::Value* cur = from_storage(b_.CreateBitCast(old, st), t);
        updated = b_.CreateBitCast(to_storage(add(cur), t), word);
    }
    auto* cas = b_.CreateAtomicCmpXchg(p, old, updated, llvm::MaybeAlign(), order, order);
    old->addIncoming(b_.CreateExtractValue(cas, 0), loop);
    b_.CreateCondBr(b_.CreateExtractValue(cas, 1), done, loop);
    b_.SetInsertPoint(done);
}

// ---------------------------------------------------------------------------------
// Control flow

void FunctionLowering::emit_loop(llvm::Value* lo, llvm::Value* extent, LoopHint hint,
                                 const std::function<void(llvm::Value*)>& body, llvm::MDNode* access_group) {
    auto& ctx = ms_.ctx;
    llvm::Value* end = b_.CreateAdd(lo, extent, "", false, true);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx, "loop", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx, "loop.end", fn_);
    auto c = llvm::dyn_cast<llvm::ConstantInt>(extent);
    if (c && c->getSExtValue() > 0)
        b_.CreateBr(header);
    else
        b_.CreateCondBr(b_.CreateICmpSGT(extent, b_.getInt64(0)), header, exit);
    b_.SetInsertPoint(header);
    auto* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(lo, pre);
    body(i);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", false, true);
    auto* br = b_.CreateCondBr(b_.CreateICmpSLT(next, end), header, exit);
    i->addIncoming(next, b_.GetInsertBlock());
    std::vector<llvm::Metadata*> md = {nullptr};
    if (hint == LoopHint::Vectorize || hint == LoopHint::VectorizeFull)
        md.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                                             llvm::ConstantAsMetadata::get(b_.getTrue())}));
    if (hint == LoopHint::VectorizeFull) {
        const auto lanes = static_cast<int32_t>(ms_.cpu.vector_bytes / 4);
        md.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.width"),
                                             llvm::ConstantAsMetadata::get(b_.getInt32(lanes))}));
        md.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")}));
    }
    if (hint == LoopHint::Unroll)
        md.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.full")}));
    if (access_group)
        md.push_back(
            llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.parallel_accesses"), access_group}));
    if (md.size() > 1) {
        auto* loop_id = llvm::MDNode::getDistinct(ctx, md);
        loop_id->replaceOperandWith(0, loop_id);
        br->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    }
    b_.SetInsertPoint(exit);
}

void FunctionLowering::emit_nest(const std::vector<int64_t>& extents, LoopHint inner_hint,
                                 const std::function<void(const std::vector<llvm::Value*>&)>& body) {
    std::vector<llvm::Value*> values;
    for (int64_t e : extents) values.push_back(b_.getInt64(e));
    emit_nest(values, inner_hint, body);
}

void FunctionLowering::emit_nest(const std::vector<llvm::Value*>& extents, LoopHint inner_hint,
                                 const std::function<void(const std::vector<llvm::Value*>&)>& body) {
    std::vector<llvm::Value*> idx;
    std::function<void(size_t)> level = [&](size_t d) {
        if (d == extents.size()) {
            body(idx);
            return;
        }
        LoopHint hint = d + 1 == extents.size() ? inner_hint : LoopHint::None;
        emit_loop(b_.getInt64(0), extents[d], hint, [&](llvm::Value* i) {
            idx.push_back(i);
            level(d + 1);
            idx.pop_back();
        });
    };
    level(0);
}

void FunctionLowering::emit_if(llvm::Value* cond, const std::function<void()>& then_fn,
                               const std::function<void()>& else_fn) {
    auto* then_bb = llvm::BasicBlock::Create(ms_.ctx, "then", fn_);
    auto* else_bb = else_fn ? llvm::BasicBlock::Create(ms_.ctx, "else", fn_) : nullptr;
    auto* done = llvm::BasicBlock::Create(ms_.ctx, "endif", fn_);
    b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : done);
    b_.SetInsertPoint(then_bb);
    then_fn();
    b_.CreateBr(done);
    if (else_bb) {
        b_.SetInsertPoint(else_bb);
        else_fn();
        b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
}

llvm::Value* FunctionLowering::entry_alloca(llvm::Type* t, uint64_t count, const std::string& name) {
    llvm::BasicBlock& entry = fn_->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    auto* a = eb.CreateAlloca(t, eb.getInt64(count), name);
    a->setAlignment(llvm::Align(64));
    return a;
}

// ---------------------------------------------------------------------------------
// Statements

void FunctionLowering::stmt(const ir::Stmt& s) {
    switch (s->kind) {
    case ir::StmtKind::Seq: lower_seq(s->as<ir::SeqNode>()->stmts); return;
    case ir::StmtKind::For: lower_for(*s->as<ir::ForNode>()); return;
    case ir::StmtKind::If: {
        auto* n = s->as<ir::IfNode>();
        llvm::Value* c = expr(n->cond);
        if (n->else_case)
            emit_if(
                c, [&] { stmt(n->then_case); }, [&] { stmt(n->else_case); });
        else
            emit_if(c, [&] { stmt(n->then_case); });
        return;
    }
    case ir::StmtKind::LetStmt: {
        auto* n = s->as<ir::LetStmtNode>();
        bind(n->var, expr(n->value));
        int64_t lo, hi;
        if (n->value->type.is_integer() && range_of(n->value, lo, hi)) ranges_[n->var.get()] = {lo, hi};
        stmt(n->body);
        return;
    }
    case ir::StmtKind::Allocate: lower_allocate(*s->as<ir::AllocateNode>()); return;
    case ir::StmtKind::Store: {
        auto* n = s->as<ir::StoreNode>();
        std::vector<llvm::Value*> idx;
        for (auto& i : n->indices) idx.push_back(convert(expr(i), i->type, DataType::i64()));
        llvm::Value* v = expr(n->value);
        if (n->value->type != n->buffer->dtype) v = convert(v, n->value->type, n->buffer->dtype);
        store_element(n->buffer, idx, v);
        return;
    }
    case ir::StmtKind::Evaluate: expr(s->as<ir::EvaluateNode>()->value); return;
    case ir::StmtKind::Copy: lower_copy(*s->as<ir::CopyNode>()); return;
    case ir::StmtKind::Gemm: lower_gemm(*s->as<ir::GemmNode>()); return;
    case ir::StmtKind::Fill: lower_fill(*s->as<ir::FillNode>()); return;
    case ir::StmtKind::Reduce: lower_reduce(*s->as<ir::ReduceNode>()); return;
    case ir::StmtKind::Cumsum: lower_cumsum(*s->as<ir::CumsumNode>()); return;
    case ir::StmtKind::AtomicAdd: lower_atomic_add(*s->as<ir::AtomicAddNode>()); return;
    case ir::StmtKind::Print: lower_print(*s->as<ir::PrintNode>()); return;
    case ir::StmtKind::Assert: lower_assert(*s->as<ir::AssertNode>()); return;
    case ir::StmtKind::Barrier: return;  // one thread runs the whole block
    case ir::StmtKind::AtomicRmw: TILEC_ICE("CPU backend: a thread-level atomic (GPU lowering only)");
    case ir::StmtKind::FullWrite: TILEC_ICE("CPU backend: a thread-level full_write (GPU lowering only)");
    case ir::StmtKind::MachineOp: TILEC_ICE("CPU backend: a thread-level machine op (GPU lowering only)");
    }
    TILEC_ICE("CPU backend: unknown statement kind");
}

void FunctionLowering::lower_for(const ir::ForNode& s) {
    llvm::Value* lo = convert(expr(s.min), s.min->type, DataType::i64());
    llvm::Value* extent = convert(expr(s.extent), s.extent->type, DataType::i64());
    auto cmin = ir::as_const_int(s.min);
    auto cext = ir::as_const_int(s.extent);
    if (cmin && cext && *cext > 0) ranges_[s.var.get()] = {*cmin, *cmin + *cext - 1};
    LoopHint hint = s.for_kind == ir::ForKind::Parallel ? LoopHint::Vectorize
                    : s.for_kind == ir::ForKind::Unroll ? LoopHint::Unroll
                                                        : LoopHint::None;
    llvm::MDNode* group = nullptr;
    if (s.for_kind == ir::ForKind::Parallel) {
        group = llvm::MDNode::getDistinct(ms_.ctx, {});
        access_groups_.push_back(group);
    }
    const bool serial = s.for_kind != ir::ForKind::Parallel;
    emit_loop(
        lo, extent, hint,
        [&](llvm::Value* i) {
            bind(s.var, convert(i, DataType::i64(), s.var->type));
            if (serial) serial_loops_.push_back({s.var.get(), i});
            stmt(s.body);
            if (serial) {
                serial_loops_.pop_back();
                std::erase_if(tile_sources_, [&](const auto& e) { return e.second.loop >= serial_loops_.size(); });
            }
        },
        group);
    if (group) access_groups_.pop_back();
}

void FunctionLowering::lower_allocate(const ir::AllocateNode& s) {
    const ir::Buffer& buf = s.buffer;
    if (buf->scope == ir::Scope::Global) TILEC_ICE("CPU backend: allocation of a global buffer");
    BufferInfo info;
    uint64_t count = 1;
    for (auto& d : buf->shape) {
        int64_t n = const_extent(d, "a buffer dimension");
        info.shape.push_back(b_.getInt64(n));
        count *= static_cast<uint64_t>(n);
    }
    info.strides.assign(buf->rank(), nullptr);
    uint64_t stride = 1;
    for (size_t d = buf->rank(); d-- > 0;) {
        info.strides[d] = b_.getInt64(stride);
        stride *= static_cast<uint64_t>(const_extent(buf->shape[d], "a buffer dimension"));
    }
    llvm::Type* elem = storage_type(ms_.ctx, buf->dtype);
    uint64_t bytes = count * (elem->getPrimitiveSizeInBits() / 8);
    if (bytes <= kStackBufferLimit && stack_bytes_ + bytes <= kStackBudget) {
        stack_bytes_ += bytes;
        info.base = entry_alloca(elem, count, buf->name);
    } else {
        // Heap: allocated in the entry block (checked for NULL by cpu_entry.cpp) and freed
        // on the way out of the block function.
        llvm::BasicBlock& entry = fn_->getEntryBlock();
        llvm::IRBuilder<> eb(entry.getTerminator());
        auto* p = eb.CreateCall(ms_.libc("malloc"), {eb.getInt64(bytes)}, buf->name);
        heap_buffers.push_back(p);
        info.base = p;
    }
    buffers_[buf.get()] = std::move(info);
    stmt(s.body);
}

void FunctionLowering::lower_print(const ir::PrintNode& s) {
    // "{}" placeholders become printf conversions; the line ends with a newline.
    std::string fmt;
    std::vector<llvm::Value*> args = {nullptr};
    size_t arg = 0;
    for (size_t i = 0; i < s.fmt.size(); ++i) {
        if (s.fmt.compare(i, 2, "{}") == 0 && arg < s.args.size()) {
            const ir::Expr& e = s.args[arg++];
            llvm::Value* v = expr(e);
            if (e->type.is_bool()) {
                fmt += "%s";
                args.push_back(b_.CreateSelect(v, ms_.c_string("true"), ms_.c_string("false")));
            } else if (e->type.is_float()) {
                fmt += "%g";
                args.push_back(convert(v, e->type, DataType::f64()));
            } else {
                fmt += e->type.is_int() ? "%lld" : "%llu";
                args.push_back(b_.CreateIntCast(v, b_.getInt64Ty(), e->type.is_int()));
            }
            ++i;
            continue;
        }
        if (s.fmt[i] == '%') fmt += '%';
        fmt += s.fmt[i];
    }
    fmt += '\n';
    args[0] = ms_.c_string(fmt);
    b_.CreateCall(ms_.libc("printf"), args);
}

void FunctionLowering::lower_assert(const ir::AssertNode& s) {
    if (!error_slot || !exit_block) TILEC_ICE("CPU backend: assert outside a block function");
    llvm::Value* ok = expr(s.cond);
    auto* fail = llvm::BasicBlock::Create(ms_.ctx, "assert.fail", fn_);
    auto* cont = llvm::BasicBlock::Create(ms_.ctx, "assert.ok", fn_);
    b_.CreateCondBr(ok, cont, fail, llvm::MDBuilder(ms_.ctx).createLikelyBranchWeights());
    b_.SetInsertPoint(fail);
    // The first failure wins; the entry point reports it after the launch.
    std::string msg = ms_.describe(s.loc) + ": assertion failed" + (s.msg.empty() ? "" : ": " + s.msg);
    auto* null = llvm::ConstantPointerNull::get(llvm::PointerType::get(ms_.ctx, 0));
    b_.CreateAtomicCmpXchg(error_slot, null, ms_.c_string(msg), llvm::MaybeAlign(),
                           llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
    b_.CreateBr(exit_block);
    b_.SetInsertPoint(cont);
}

}  // namespace tilec::codegen
