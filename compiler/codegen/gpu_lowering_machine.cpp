// GpuLowering's target instructions (ir.h, MachineOpNode): ldmatrix, mma.sync and
// cp.async (+ commit / wait_group) as the NVVM intrinsics LLVM's NVPTX backend selects to
// those instructions; sm_90a's wgmma family and the fp8 mma.sync as inline PTX (LLVM 19
// has no intrinsics for wgmma.mma_async nor for .e4m3 / .e5m2), wgmma's accumulators tied through the fence and the wait so that no
// access to them moves across either. Register operands are elements of register arrays
// (f16 / bf16 / fp8 held as f32 values; their storage bits go in, as loaded),
// packed 32 / bits to a 32-bit register as the PTX ISA's fragments hold them (the
// lower-numbered element in the low bits).
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

namespace {

bool is_bf16(DataType t) { return t.kind == ir::TypeKind::BFloat; }

// matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4 (PTX ISA, wgmma's matrix descriptor).
uint64_t descriptor_encode(int64_t x) { return (static_cast<uint64_t>(x) & 0x3FFFF) >> 4; }

}  // namespace

void GpuLowering::store_element(const ir::Expr& dst, llvm::Value* storage_value) {
    auto* l = dst->as<ir::LoadNode>();
    if (!l) TILEC_ICE(who_ + ": a machine op destination that is not an element");
    b_.CreateStore(storage_value, element_ptr(buffer(l->buffer), l->indices));
}

void GpuLowering::machine_op(const ir::MachineOpNode& m) {
    if (m.op == ir::MachineOp::Mfma || m.op == ir::MachineOp::Wmma) return amd_matrix_op(m);
    if (!target_.is_nvidia() && m.op != ir::MachineOp::VectorCopy)
        TILEC_ICE(who_ + ": machine " + ir::machine_op_name(m.op) + " on " + target_.name);
    switch (m.op) {
    case ir::MachineOp::Ldmatrix: {
        int num = static_cast<int>(m.imm.at(0));
        bool trans = m.imm.at(1) != 0;
        static const llvm::Intrinsic::ID ids[2][3] = {
            {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16, llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16,
             llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16},
            {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16,
             llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16,
             llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16}};
        auto* src = m.src.at(0)->as<ir::LoadNode>();
        llvm::Value* p = element_ptr(buffer(src->buffer), src->indices);
        llvm::Value* r = b_.CreateIntrinsic(ids[trans][num == 1 ? 0 : num == 2 ? 1 : 2], {p->getType()}, {p});
        // Each b32 register holds 32 / bits elements (ldmatrix moves bytes; 8-, 16- and
        // 32-bit elements all fill it, lower-numbered element in the low bits).
        DataType t = src->buffer->dtype;
        const unsigned per = 32 / static_cast<unsigned>(t.bits);
        auto* packed = llvm::FixedVectorType::get(storage_type(t), per);
        for (int q = 0; q < num; ++q) {
            llvm::Value* word = num == 1 ? r : b_.CreateExtractValue(r, {unsigned(q)});
            llvm::Value* v = b_.CreateBitCast(word, packed);
            for (unsigned h = 0; h < per; ++h)
                store_element(m.dst.at(per * q + h), b_.CreateExtractElement(v, uint64_t(h)));
        }
        return;
    }
    case ir::MachineOp::Mma: {
        // The intrinsic of the form (ir::is_mma_form); its parameters are the fragment's
        // b32 registers (or f32 / <2 x half> values), filled from the elements in order.
        const int64_t k = m.imm.at(2);
        DataType ab = m.src.at(0)->type, cd = m.src.at(static_cast<size_t>(k / 2 + k / 4))->type;
        if (is_f8(ab)) return mma_f8(m);
        llvm::Intrinsic::ID id = k == 8                      ? llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32
                                 : k == 32 && ab.is_uint()   ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_u8
                                 : k == 32                   ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8
                                 : is_bf16(ab)               ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                 : cd == DataType::f32()     ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                                                             : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f16_f16;
        llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_, id);
        llvm::FunctionType* ft = fn->getFunctionType();
        std::vector<llvm::Value*> args;
        size_t next = 0;
        while (args.size() < ft->getNumParams()) {
            llvm::Type* want = ft->getParamType(static_cast<unsigned>(args.size()));
            DataType et = m.src.at(next)->type;
            if (et.bits == 32) {
                llvm::Value* v = expr(m.src.at(next++));
                // .tf32 operands: cvt.rna.tf32.f32 (the C elements stay f32).
                if (et == DataType::f32() && want->isIntegerTy(32))
                    v = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {v});
                args.push_back(v);
                continue;
            }
            const unsigned per = 32 / static_cast<unsigned>(et.bits);
            auto* packed = llvm::FixedVectorType::get(storage_type(et), per);
            llvm::Value* v = llvm::PoisonValue::get(packed);
            for (unsigned h = 0; h < per; ++h)
                v = b_.CreateInsertElement(v, storage_value(m.src.at(next++), et), uint64_t(h));
            args.push_back(want == packed ? v : b_.CreateBitCast(v, want));
        }
        llvm::Value* d = b_.CreateCall(fn, args);
        // D: four f32 / s32 values, or two <2 x half> (f16 accumulators).
        auto* st = llvm::cast<llvm::StructType>(d->getType());
        size_t out = 0;
        for (unsigned i = 0; i < st->getNumElements(); ++i) {
            llvm::Value* field = b_.CreateExtractValue(d, {i});
            if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(field->getType())) {
                for (unsigned h = 0; h < vt->getNumElements(); ++h)
                    store_element(m.dst.at(out++), b_.CreateExtractElement(field, uint64_t(h)));
            } else {
                store_element(m.dst.at(out++), field);
            }
        }
        return;
    }
    case ir::MachineOp::CpAsync: {
        // The .s form takes src-size: the bytes past it are zero-filled (ragged edges).
        // Inline PTX: LLVM 19 selects the intrinsic only for 64-bit shared pointers, and
        // ours are 32-bit (nvptx_backend.cpp). The memory clobber keeps LLVM from moving
        // shared loads across the copy, as the intrinsic's memory effects did.
        int bytes = static_cast<int>(m.imm.at(0));
        auto* dl = m.dst.at(0)->as<ir::LoadNode>();
        auto* sl = m.src.at(0)->as<ir::LoadNode>();
        llvm::Value* dst = b_.CreatePtrToInt(element_ptr(buffer(dl->buffer), dl->indices), b_.getInt32Ty());
        llvm::Value* src = element_ptr(buffer(sl->buffer), sl->indices);
        llvm::Value* n = b_.CreateSExtOrTrunc(expr(m.src.at(1)), b_.getInt32Ty());
        std::string text = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                           std::to_string(bytes) + ", $2;";
        auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {dst->getType(), src->getType(), n->getType()}, false);
        b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, "r,l,r,~{memory}", true), {dst, src, n});
        return;
    }
    case ir::MachineOp::VectorCopy: {
        // One vector load and one vector store of it, global <-> shared either way
        // (ld.shared.v4.b32 + st.global.v4.b32, or global_load_dwordx4 + ds_write_b128
        // for 16 bytes): 32-bit words, aligned to the size (the lowering guarantees it;
        // the simulator checks it). A register side (software-pipeline's register-staged
        // AMD fills) is the thread's alloca, 16-byte aligned, at a multiple of the size:
        // SROA makes it the vector's VGPRs.
        int bytes = static_cast<int>(m.imm.at(0));
        auto* dl = m.dst.at(0)->as<ir::LoadNode>();
        auto* sl = m.src.at(0)->as<ir::LoadNode>();
        llvm::Value* dst = element_ptr(buffer(dl->buffer), dl->indices);
        llvm::Value* src = element_ptr(buffer(sl->buffer), sl->indices);
        llvm::Type* ty = bytes == 4 ? static_cast<llvm::Type*>(b_.getInt32Ty())
                                    : llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(bytes / 4));
        llvm::Value* v = b_.CreateAlignedLoad(ty, src, llvm::MaybeAlign(bytes));
        b_.CreateAlignedStore(v, dst, llvm::MaybeAlign(bytes));
        return;
    }
    case ir::MachineOp::CpAsyncCommit: b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); return;
    case ir::MachineOp::Wgmma: wgmma(m); return;
    case ir::MachineOp::WgmmaFence: tied_registers_asm("wgmma.fence.sync.aligned;", m); return;
    case ir::MachineOp::WgmmaWait:
        tied_registers_asm("wgmma.wait_group.sync.aligned " + std::to_string(m.imm.at(0)) + ";", m);
        return;
    case ir::MachineOp::WgmmaCommit: tied_registers_asm("wgmma.commit_group.sync.aligned;", m); return;
    case ir::MachineOp::FenceProxyAsync: tied_registers_asm("fence.proxy.async.shared::cta;", m); return;
    case ir::MachineOp::MbarrierInit:
    case ir::MachineOp::MbarrierArrive:
    case ir::MachineOp::MbarrierWait:
    case ir::MachineOp::TmaLoad:
    case ir::MachineOp::TmaStore:
    case ir::MachineOp::BulkCommit:
    case ir::MachineOp::BulkWaitRead:
    case ir::MachineOp::SetMaxNReg:
    case ir::MachineOp::NamedBarrier:
    case ir::MachineOp::BarrierArrive:
    case ir::MachineOp::ClusterArrive:
    case ir::MachineOp::ClusterWait: mbarrier_or_tma(m); return;
    case ir::MachineOp::Mfma:
    case ir::MachineOp::Wmma: break;  // amd_matrix_op
    case ir::MachineOp::CpAsyncWait:
        b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(static_cast<uint32_t>(m.imm.at(0)))});
        return;
    }
    TILEC_ICE(who_ + ": machine " + ir::machine_op_name(m.op) + " is not lowered yet");
}

void GpuLowering::mma_f8(const ir::MachineOpNode& m) {
    // mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 (PTX ISA 8.4+, no
    // NVVM intrinsic in LLVM 19): A in four b32 registers, B in two, four bytes apiece
    // (a0 in the low byte, 9.7.14.5.10), C and D four f32.
    DataType a = m.src.at(0)->type, b = m.src.at(16)->type;
    auto name = [](DataType t) { return t.kind == ir::TypeKind::Float8E4M3 ? "e4m3" : "e5m2"; };
    std::vector<llvm::Value*> ins;
    auto* word = llvm::FixedVectorType::get(b_.getInt8Ty(), 4);
    for (size_t r = 0; r < 6; ++r) {
        DataType t = r < 4 ? a : b;
        llvm::Value* v = llvm::PoisonValue::get(word);
        for (unsigned h = 0; h < 4; ++h) v = b_.CreateInsertElement(v, storage_value(m.src.at(4 * r + h), t), uint64_t(h));
        ins.push_back(b_.CreateBitCast(v, b_.getInt32Ty()));
    }
    for (size_t i = 24; i < 28; ++i) ins.push_back(expr(m.src.at(i)));
    std::string text = std::string("mma.sync.aligned.m16n8k32.row.col.f32.") + name(a) + "." + name(b) +
                       ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
    auto* f32 = b_.getFloatTy();
    std::vector<llvm::Type*> in_types;
    for (auto* v : ins) in_types.push_back(v->getType());
    auto* fty = llvm::FunctionType::get(llvm::StructType::get(ctx_, {f32, f32, f32, f32}), in_types, false);
    llvm::Value* d =
        b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", false), ins);
    for (unsigned i = 0; i < 4; ++i) store_element(m.dst.at(i), b_.CreateExtractValue(d, {i}));
}

void GpuLowering::tied_registers_asm(const std::string& text, const ir::MachineOpNode& m) {
    // dst[i] = src[i] through the asm: "=f" outputs, each tied to its input. 16-bit
    // elements (the A registers of wgmma's register form) come in pairs, each pair one
    // "=r" .b32 register as the wgmma reads it (the lower-numbered element in the low
    // bits), so that the packing happens before the asm, not after it.
    std::vector<llvm::Type*> outs;
    std::vector<llvm::Value*> ins;
    std::vector<std::pair<size_t, size_t>> elems;  // per operand: first element, count
    std::string cons;
    for (size_t i = 0; i < m.dst.size(); ++i) {
        DataType t = m.src.at(i)->type;
        if (t.bits == 16 && i + 1 < m.dst.size() && m.src.at(i + 1)->type == t) {
            auto* packed = llvm::FixedVectorType::get(storage_type(t), 2);
            llvm::Value* v = llvm::PoisonValue::get(packed);
            for (unsigned h = 0; h < 2; ++h) v = b_.CreateInsertElement(v, storage_value(m.src.at(i + h), t), uint64_t(h));
            ins.push_back(b_.CreateBitCast(v, b_.getInt32Ty()));
            outs.push_back(b_.getInt32Ty());
            elems.push_back({i, 2});
            cons += "=r,";
            ++i;
            continue;
        }
        ins.push_back(expr(m.src.at(i)));
        outs.push_back(ins.back()->getType());
        elems.push_back({i, 1});
        cons += "=f,";
    }
    for (size_t i = 0; i < outs.size(); ++i) cons += std::to_string(i) + ",";
    cons += "~{memory}";
    llvm::Type* ret = outs.empty()      ? b_.getVoidTy()
                      : outs.size() == 1 ? outs[0]
                                         : static_cast<llvm::Type*>(llvm::StructType::get(ctx_, outs));
    std::vector<llvm::Type*> in_types;
    for (auto* v : ins) in_types.push_back(v->getType());
    auto* fty = llvm::FunctionType::get(ret, in_types, false);
    llvm::Value* r = b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, true), ins);
    for (size_t o = 0; o < outs.size(); ++o) {
        llvm::Value* v = outs.size() == 1 ? r : b_.CreateExtractValue(r, {unsigned(o)});
        auto [first, count] = elems[o];
        if (count == 1) {
            store_element(m.dst[first], v);
            continue;
        }
        DataType t = m.src.at(first)->type;
        llvm::Value* pair = b_.CreateBitCast(v, llvm::FixedVectorType::get(storage_type(t), 2));
        for (unsigned h = 0; h < 2; ++h) store_element(m.dst[first + h], b_.CreateExtractElement(pair, uint64_t(h)));
    }
}

void GpuLowering::mbarrier_or_tma(const ir::MachineOpNode& m) {
    // A shared element's 32-bit shared-window address (what the instructions' [addr] take).
    auto shared_address = [&](const ir::Expr& e) {
        auto* l = e->as<ir::LoadNode>();
        return b_.CreateTrunc(b_.CreatePtrToInt(element_ptr(buffer(l->buffer), l->indices), b_.getInt64Ty()),
                              b_.getInt32Ty());
    };
    auto emit = [&](const std::string& text, const std::string& cons, const std::vector<llvm::Value*>& ins) {
        std::vector<llvm::Type*> types;
        for (auto* v : ins) types.push_back(v->getType());
        auto* fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
        b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons + "~{memory}", true), ins);
    };
    switch (m.op) {
    case ir::MachineOp::MbarrierInit:
        emit("mbarrier.init.shared::cta.b64 [$0], $1;", "r,n,", {shared_address(m.dst.at(0)), b_.getInt32(uint32_t(m.imm.at(0)))});
        return;
    case ir::MachineOp::MbarrierArrive:
        if (m.src.size() == 1) {
            // The object at the same CTA-relative offset in CTA `rank` of the cluster (PTX
            // ISA "mapa": the corresponding variable in the target CTA), arrived on through
            // the shared::cluster window with release at cluster scope (PTX ISA
            // "mbarrier.arrive": a .shared::cluster address returns no state, the sink `_`).
            emit("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}",
                 "r,r,", {shared_address(m.dst.at(0)), b_.CreateTrunc(expr(m.src.at(0)), b_.getInt32Ty())});
            return;
        }
        if (m.imm.at(0) > 0)
            emit("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,n,",
                 {shared_address(m.dst.at(0)), b_.getInt32(uint32_t(m.imm.at(0)))});
        else
            emit("mbarrier.arrive.shared::cta.b64 _, [$0];", "r,", {shared_address(m.dst.at(0))});
        return;
    case ir::MachineOp::MbarrierWait: {
        // try_wait suspends for a system-dependent time and may return false: retry. The
        // labels are local to the braces, so the asm can appear many times.
        llvm::Value* parity = b_.CreateTrunc(expr(m.src.at(1)), b_.getInt32Ty());
        emit("{\n.reg .pred p;\nwait_again:\nmbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
             "@!p bra wait_again;\n}",
             "r,r,", {shared_address(m.src.at(0)), parity});
        return;
    }
    case ir::MachineOp::TmaLoad:
    case ir::MachineOp::TmaStore: {
        // Both name the tensor map and the box's coordinates, the map's innermost dimension
        // first, from the global Load (a load's source, a store's destination); the shared
        // side and the load's mbarrier around them.
        const bool load = m.op == ir::MachineOp::TmaLoad;
        const std::string what = load ? "a tma_load" : "a tma_store";
        int64_t k = tma_func_ ? ir::tma_map_index(tma_maps_, *tma_func_, m) : -1;
        if (k < 0) TILEC_ICE(who_ + ": " + what + " whose tensor map is not a kernel parameter");
        auto* g = (load ? m.src.at(0) : m.dst.at(0))->as<ir::LoadNode>();
        const size_t rank = g->indices.size();
        const std::vector<size_t> dims = ir::tma_map_dims(m.imm, rank);
        if (dims.size() != rank) TILEC_ICE(who_ + ": " + what + " whose map dimensions are not the tensor's");
        std::vector<llvm::Value*> ins;
        std::string cons;
        if (load) {
            ins.push_back(shared_address(m.dst.at(0)));
            cons += "r,";
        }
        const size_t map = ins.size();  // the map's operand number; the coordinates follow
        ins.push_back(tma_addrs_.at(static_cast<size_t>(k)));
        cons += "l,";
        std::string coords;
        for (size_t i = 0; i < rank; ++i) {
            ins.push_back(b_.CreateTrunc(expr(g->indices[dims[i]]), b_.getInt32Ty()));
            coords += (i ? ", $" : "$") + std::to_string(map + 1 + i);
            cons += "r,";
        }
        ins.push_back(shared_address(m.src.at(load ? 1 : 0)));  // the load's mbarrier, the store's tile
        cons += "r,";
        const std::string box = "[$" + std::to_string(map) + ", {" + coords + "}]";
        const std::string last = "[$" + std::to_string(map + 1 + rank) + "]";
        const std::string dim = "cp.async.bulk.tensor." + std::to_string(rank) + "d.";
        if (load && m.src.size() == 3) {
            // .multicast::cluster (PTX ISA cp.async.bulk.tensor): the box and the mbarrier
            // signal land at the same CTA-relative offsets in every CTA of the 16-bit
            // ctaMask, one bit per %cluster_ctarank.
            ins.push_back(b_.CreateTrunc(expr(m.src.at(2)), b_.getInt16Ty()));
            cons += "h,";
            emit(dim + "shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], " + box +
                     ", " + last + ", $" + std::to_string(map + 2 + rank) + ";",
                 cons, ins);
            return;
        }
        emit(load ? dim + "shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], " + box + ", " + last + ";"
                  : dim + "global.shared::cta.tile.bulk_group " + box + ", " + last + ";",
             cons, ins);
        return;
    }
    case ir::MachineOp::BulkCommit: emit("cp.async.bulk.commit_group;", "", {}); return;
    case ir::MachineOp::BulkWaitRead:
        emit("cp.async.bulk.wait_group.read " + std::to_string(m.imm.at(0)) + ";", "", {});
        return;
    case ir::MachineOp::SetMaxNReg:
        emit(std::string("setmaxnreg.") + (m.imm.at(0) ? "inc" : "dec") + ".sync.aligned.u32 " +
                 std::to_string(m.imm.at(1)) + ";",
             "", {});
        return;
    case ir::MachineOp::NamedBarrier:
        // bar.sync id, count: also a memory fence among the participating threads, as
        // the block barrier is.
        emit("barrier.sync.aligned $0, $1;", "n,n,", {b_.getInt32(uint32_t(m.imm.at(0))), b_.getInt32(uint32_t(m.imm.at(1)))});
        return;
    case ir::MachineOp::BarrierArrive:
        // barrier.arrive id, count: counts toward the barrier without waiting (a release
        // of the thread's earlier memory accesses to the threads that sync on it).
        emit("barrier.arrive.aligned $0, $1;", "n,n,", {b_.getInt32(uint32_t(m.imm.at(0))), b_.getInt32(uint32_t(m.imm.at(1)))});
        return;
    case ir::MachineOp::ClusterArrive:
        // PTX ISA "barrier.cluster": arrive with release, wait with acquire; .aligned, as
        // every thread of the block executes both at the kernel's top level.
        emit("barrier.cluster.arrive.release.aligned;", "", {});
        return;
    case ir::MachineOp::ClusterWait: emit("barrier.cluster.wait.acquire.aligned;", "", {}); return;
    default: TILEC_ICE(who_ + ": not an mbarrier, TMA or warp-specialization instruction");
    }
}

void GpuLowering::wgmma(const ir::MachineOpNode& m) {
    const int64_t n = m.imm.at(0), regs = n / 2;
    DataType ab = m.src.at(0)->type;
    // The register form (ir::wgmma_a_operands): A's 8 elements packed in pairs into 4
    // .b32 registers (PTX ISA 9.7.15.5.1.1.1: four .f16x2 registers, a0 .. a7 low to
    // high), then B's descriptor; no imm-trans-a.
    const size_t na = ir::wgmma_a_operands(m);
    auto descriptor = [&](const ir::Expr& e, int64_t lbo, int64_t sbo, int64_t mode) {
        auto* l = e->as<ir::LoadNode>();
        llvm::Value* addr = b_.CreatePtrToInt(element_ptr(buffer(l->buffer), l->indices), b_.getInt64Ty());
        llvm::Value* start = b_.CreateLShr(b_.CreateAnd(addr, b_.getInt64(0x3FFFF)), 4);
        uint64_t rest = (descriptor_encode(lbo) << 16) | (descriptor_encode(sbo) << 32) |
                        (static_cast<uint64_t>(mode & 3) << 62);
        return b_.CreateOr(start, b_.getInt64(rest));
    };
    std::vector<llvm::Value*> ins;
    std::vector<llvm::Type*> outs;
    std::string cons, list;
    for (int64_t i = 0; i < regs; ++i) {
        ins.push_back(expr(m.src.at(na + 1 + static_cast<size_t>(i))));
        outs.push_back(b_.getFloatTy());
        cons += "=f,";
        list += (i ? ", $" : "$") + std::to_string(i);
    }
    for (int64_t i = 0; i < regs; ++i) cons += std::to_string(i) + ",";
    if (na == 8) {
        auto* packed = llvm::FixedVectorType::get(storage_type(ab), 2);
        for (size_t r = 0; r < 4; ++r) {
            llvm::Value* v = llvm::PoisonValue::get(packed);
            for (unsigned h = 0; h < 2; ++h) v = b_.CreateInsertElement(v, storage_value(m.src.at(2 * r + h), ab), uint64_t(h));
            ins.push_back(b_.CreateBitCast(v, b_.getInt32Ty()));
            cons += "r,";
        }
    } else {
        ins.push_back(descriptor(m.src.at(0), m.imm.at(3), m.imm.at(4), m.imm.at(5)));
        cons += "l,";
    }
    cons += "l,r,~{memory}";
    ins.push_back(descriptor(m.src.at(na), m.imm.at(6), m.imm.at(7), m.imm.at(8)));
    ins.push_back(b_.getInt32(1));  // scale-d: D = A * B + D
    // PTX ISA 9.7.15.5: .f16 / .bf16 take K = 16 and imm-trans-a / imm-trans-b; the 8-bit
    // floats K = 32, each operand its own type, and no transpose (K-major operands).
    auto ptx_type = [&](DataType t) -> std::string {
        if (t.kind == ir::TypeKind::Float8E4M3) return "e4m3";
        if (t.kind == ir::TypeKind::Float8E5M2) return "e5m2";
        return is_bf16(t) ? "bf16" : "f16";
    };
    const bool f8 = is_f8(ab);
    const std::string shape = "m64n" + std::to_string(n) + (f8 ? "k32" : "k16");
    // Operand numbers: the outputs, the tied accumulators, A (4 registers or a
    // descriptor), B's descriptor, scale-d.
    const int64_t a_ins = na == 8 ? 4 : 1, first_a = 2 * regs, b_in = first_a + a_ins, scale_in = b_in + 1;
    std::string a_text = "$" + std::to_string(first_a);
    if (na == 8)
        a_text = "{$" + std::to_string(first_a) + ", $" + std::to_string(first_a + 1) + ", $" +
                 std::to_string(first_a + 2) + ", $" + std::to_string(first_a + 3) + "}";
    std::string trans = f8 ? "" : na == 8 ? ", " + std::to_string(m.imm.at(2))
                                          : ", " + std::to_string(m.imm.at(1)) + ", " + std::to_string(m.imm.at(2));
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(scale_in) +
                       ", 0;\nwgmma.mma_async.sync.aligned." + shape + ".f32." + ptx_type(ab) + "." +
                       ptx_type(m.src.at(na)->type) + " {" + list + "}, " + a_text + ", $" + std::to_string(b_in) +
                       ", p, 1, 1" + trans + ";\n}";
    std::vector<llvm::Type*> in_types;
    for (auto* v : ins) in_types.push_back(v->getType());
    auto* fty = llvm::FunctionType::get(llvm::StructType::get(ctx_, outs), in_types, false);
    llvm::Value* r = b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, true), ins);
    for (int64_t i = 0; i < regs; ++i) store_element(m.dst.at(static_cast<size_t>(i)), b_.CreateExtractValue(r, {unsigned(i)}));
}

}  // namespace tilec::codegen::gpu
