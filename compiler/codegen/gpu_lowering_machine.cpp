// GpuLowering's target instructions (ir.h, MachineOpNode): ldmatrix, mma.sync and
// cp.async (+ commit / wait_group) as the NVVM intrinsics LLVM's NVPTX backend selects to those instructions. Register operands
// are elements of register arrays (f16 / bf16 held as f32 values, rounded exactly back
// to their storage type here), packed two to a 32-bit register as the PTX ISA's fragments
// hold them (element 2j in the low half).
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

namespace {

bool is_bf16(DataType t) { return t.kind == ir::TypeKind::BFloat; }

}  // namespace

void GpuLowering::store_element(const ir::Expr& dst, llvm::Value* storage_value) {
    auto* l = dst->as<ir::LoadNode>();
    if (!l) TILEC_ICE(who_ + ": a machine op destination that is not an element");
    b_.CreateStore(storage_value, element_ptr(buffer(l->buffer), l->indices));
}

void GpuLowering::machine_op(const ir::MachineOpNode& m) {
    if (!target_.is_nvidia())
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
        DataType t = src->buffer->dtype;
        auto* pair = llvm::FixedVectorType::get(storage_type(t), 2);
        for (int q = 0; q < num; ++q) {
            llvm::Value* word = num == 1 ? r : b_.CreateExtractValue(r, {unsigned(q)});
            llvm::Value* v = b_.CreateBitCast(word, pair);
            for (int h = 0; h < 2; ++h) store_element(m.dst.at(2 * q + h), b_.CreateExtractElement(v, uint64_t(h)));
        }
        return;
    }
    case ir::MachineOp::Mma: {
        DataType ab = m.src.at(0)->type;
        llvm::Intrinsic::ID id = is_bf16(ab) ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                             : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
        llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_, id);
        llvm::FunctionType* ft = fn->getFunctionType();
        auto* pair = llvm::FixedVectorType::get(storage_type(ab), 2);
        std::vector<llvm::Value*> args;
        for (int i = 0; i < 6; ++i) {
            llvm::Value* v = llvm::PoisonValue::get(pair);
            for (int h = 0; h < 2; ++h)
                v = b_.CreateInsertElement(v, to_storage(expr(m.src.at(2 * i + h)), ab), uint64_t(h));
            llvm::Type* want = ft->getParamType(static_cast<unsigned>(args.size()));
            args.push_back(want == pair ? v : b_.CreateBitCast(v, want));
        }
        for (int i = 12; i < 16; ++i) args.push_back(expr(m.src.at(i)));
        llvm::Value* d = b_.CreateCall(fn, args);
        for (unsigned i = 0; i < 4; ++i) store_element(m.dst.at(i), b_.CreateExtractValue(d, {i}));
        return;
    }
    case ir::MachineOp::CpAsync: {
        // The .s form takes src-size: the bytes past it are zero-filled (ragged edges).
        int bytes = static_cast<int>(m.imm.at(0));
        llvm::Intrinsic::ID id = bytes == 16  ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                                 : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                                              : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
        auto* dl = m.dst.at(0)->as<ir::LoadNode>();
        auto* sl = m.src.at(0)->as<ir::LoadNode>();
        llvm::Value* dst = element_ptr(buffer(dl->buffer), dl->indices);
        llvm::Value* src = element_ptr(buffer(sl->buffer), sl->indices);
        llvm::Value* n = b_.CreateSExtOrTrunc(expr(m.src.at(1)), b_.getInt32Ty());
        b_.CreateIntrinsic(id, {}, {dst, src, n});
        return;
    }
    case ir::MachineOp::CpAsyncCommit: b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); return;
    case ir::MachineOp::CpAsyncWait:
        b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(static_cast<uint32_t>(m.imm.at(0)))});
        return;
    }
    TILEC_ICE(who_ + ": machine " + ir::machine_op_name(m.op) + " is not lowered yet");
}

}  // namespace tilec::codegen::gpu
