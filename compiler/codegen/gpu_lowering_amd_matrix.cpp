// GpuLowering's AMD matrix instructions (ir.h, MachineOp::Mfma / Wmma) as the
// llvm.amdgcn.mfma.* / llvm.amdgcn.wmma.* intrinsics the AMDGPU backend selects to
// v_mfma_* / v_wmma_*: the lane's A and B elements as one vector each (<N x half>, or
// bf16 as <N x i16>, element e at index e: the calculator's half e % 2 of GPR e / 2),
// C as <N x float>, the MFMA's cbsz / abid / blgp broadcast controls 0 (no broadcast).
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

void GpuLowering::amd_matrix_op(const ir::MachineOpNode& m) {
    if (!target_.is_amd()) TILEC_ICE(who_ + ": machine " + ir::machine_op_name(m.op) + " on " + target_.name);
    const bool wmma = m.op == ir::MachineOp::Wmma;
    const DataType ab = m.src.at(0)->type;
    const bool bf16 = ab.kind == ir::TypeKind::BFloat;
    const unsigned per = wmma ? 16 : 4, cd = static_cast<unsigned>(m.dst.size());
    llvm::Type* half = bf16 ? static_cast<llvm::Type*>(b_.getInt16Ty()) : storage_type(ab);
    auto* ab_type = llvm::FixedVectorType::get(half, per);
    auto* cd_type = llvm::FixedVectorType::get(b_.getFloatTy(), cd);
    auto vector_of = [&](size_t first, unsigned count, llvm::FixedVectorType* type, bool narrow) {
        llvm::Value* v = llvm::PoisonValue::get(type);
        for (unsigned i = 0; i < count; ++i) {
            llvm::Value* e = expr(m.src.at(first + i));
            if (narrow) {
                e = to_storage(e, ab);
                if (bf16) e = b_.CreateBitCast(e, b_.getInt16Ty());
            }
            v = b_.CreateInsertElement(v, e, uint64_t(i));
        }
        return v;
    };
    llvm::Value* a = vector_of(0, per, ab_type, true);
    llvm::Value* b = vector_of(per, per, ab_type, true);
    llvm::Value* c = vector_of(2 * per, cd, cd_type, false);
    llvm::Value* d = nullptr;
    if (wmma) {
        auto id = bf16 ? llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_bf16 : llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_f16;
        d = b_.CreateIntrinsic(id, {cd_type, ab_type}, {a, b, c});
    } else {
        const bool m32 = m.imm.at(0) == 32;
        auto id = m32 ? (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k : llvm::Intrinsic::amdgcn_mfma_f32_32x32x8f16)
                      : (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k
                              : llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16);
        d = b_.CreateIntrinsic(id, {}, {a, b, c, b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
    }
    for (unsigned g = 0; g < cd; ++g) store_element(m.dst.at(g), b_.CreateExtractElement(d, uint64_t(g)));
}

}  // namespace tilec::codegen::gpu
