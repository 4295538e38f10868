// GpuLowering's AMD matrix instructions (ir.h, MachineOp::Mfma / Wmma) as the
// llvm.amdgcn.mfma.* / llvm.amdgcn.wmma.* intrinsics the AMDGPU backend selects to
// v_mfma_* / v_wmma_*: the lane's A and B elements as one vector each (<N x half>, or
// bf16 as <N x i16>, element e at index e: the calculator's half e % 2 of GPR e / 2),
// C as <N x float> (RDNA3's f16-accumulator WMMA: <16 x half>, the 8 f16s of a lane
// at even indices, the low halves with OPSEL[2] = 0), the MFMA's cbsz / abid / blgp broadcast controls 0 (no broadcast);
// i8 into i32: the lane's 4 (CDNA2) or 8 (CDNA3) bytes as one i32 / i64, byte e at bits
// [8e+7 : 8e], C as <N x i32>; RDNA3's iu8 WMMA: 16 bytes as <4 x i32>, both operands
// marked signed; fp8 (gfx942): the lane's 8 OCP bytes as one i64, rewritten to the
// instruction's FNUZ bytes first (scalar/fp8_fnuz.h).
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "codegen/gpu_lowering.h"
#include "codegen/llvm_word.h"
#include "scalar/fp8_fnuz.h"

namespace tilec::codegen::gpu {

void GpuLowering::amd_matrix_op(const ir::MachineOpNode& m) {
    if (!target_.is_amd()) TILEC_ICE(who_ + ": machine " + ir::machine_op_name(m.op) + " on " + target_.name);
    const bool wmma = m.op == ir::MachineOp::Wmma;
    const DataType ab = m.src.at(0)->type;
    const bool bf16 = ab.kind == ir::TypeKind::BFloat;
    const unsigned cd = static_cast<unsigned>(m.dst.size());
    if (ab == DataType::i8()) return amd_matrix_i8(m, cd);
    if (is_f8(ab)) return amd_matrix_f8(m, cd);
    const unsigned per = wmma ? 16 : 4;
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
    const DataType acc = m.src.at(2 * per)->type;
    if (wmma && !bf16 && acc.kind == ir::TypeKind::Float && acc.bits == 16) {
        // v_wmma_f16_16x16x16_f16 (llvm.amdgcn.wmma.f16.16x16x16.f16: <16 x half> A, B and
        // C, i1 OPSEL[2]; its tests llvm/test/CodeGen/AMDGPU/llvm.amdgcn.wmma_32.ll): the
        // 8 f16s of C / D at even indices, the low half of each GPR (OPSEL[2] = 0); the odd
        // ones, D's other halves, are poison going in and never read.
        auto* v16 = llvm::FixedVectorType::get(b_.getHalfTy(), 16);
        llvm::Value* c = llvm::PoisonValue::get(v16);
        for (unsigned g = 0; g < cd; ++g)
            c = b_.CreateInsertElement(c, storage_value(m.src.at(2 * per + g), acc), uint64_t(2 * g));
        llvm::Value* d = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_wmma_f16_16x16x16_f16, {v16, ab_type},
                                            {a, b, c, b_.getFalse()});
        for (unsigned g = 0; g < cd; ++g) store_element(m.dst.at(g), b_.CreateExtractElement(d, uint64_t(2 * g)));
        return;
    }
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

void GpuLowering::amd_matrix_i8(const ir::MachineOpNode& m, unsigned cd) {
    const int64_t atom = m.imm.at(0), k = m.imm.at(2);
    const bool wmma = m.op == ir::MachineOp::Wmma;
    const unsigned per = wmma ? 16 : static_cast<unsigned>(atom * k / 64);  // bytes a lane
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), per);
    llvm::Type* ab_type = wmma ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getInt32Ty(), 4))
                               : b_.getIntNTy(8 * per);
    auto* cd_type = llvm::FixedVectorType::get(b_.getInt32Ty(), cd);
    auto operand = [&](size_t first) {
        llvm::Value* v = llvm::PoisonValue::get(bytes);
        for (unsigned i = 0; i < per; ++i)
            v = b_.CreateInsertElement(v, to_storage(expr(m.src.at(first + i)), DataType::i8()), uint64_t(i));
        return b_.CreateBitCast(v, ab_type);
    };
    llvm::Value* c = llvm::PoisonValue::get(cd_type);
    for (unsigned g = 0; g < cd; ++g) c = b_.CreateInsertElement(c, expr(m.src.at(2 * per + g)), uint64_t(g));
    if (wmma) {
        llvm::Value* d = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_wmma_i32_16x16x16_iu8, {cd_type, ab_type},
                                            {b_.getTrue(), operand(0), b_.getTrue(), operand(per), c, b_.getFalse()});
        for (unsigned g = 0; g < cd; ++g) store_element(m.dst.at(g), b_.CreateExtractElement(d, uint64_t(g)));
        return;
    }
    llvm::Intrinsic::ID id;
    if (atom == 32 && k == 8) id = llvm::Intrinsic::amdgcn_mfma_i32_32x32x8i8;
    else if (atom == 16 && k == 16) id = llvm::Intrinsic::amdgcn_mfma_i32_16x16x16i8;
    else if (atom == 32 && k == 16) id = llvm::Intrinsic::amdgcn_mfma_i32_32x32x16_i8;
    else if (atom == 16 && k == 32) id = llvm::Intrinsic::amdgcn_mfma_i32_16x16x32_i8;
    else TILEC_ICE(who_ + ": no i8 MFMA of shape " + std::to_string(atom) + "x" + std::to_string(atom) + "x" +
                   std::to_string(k));
    llvm::Value* d = b_.CreateIntrinsic(id, {}, {operand(0), operand(per), c, b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
    for (unsigned g = 0; g < cd; ++g) store_element(m.dst.at(g), b_.CreateExtractElement(d, uint64_t(g)));
}

// CDNA3's v_mfma_f32_{32x32x16,16x16x32}_{fp8,bf8}_{fp8,bf8} (LLVM 19:
// llvm.amdgcn.mfma.f32.32x32x16.fp8.bf8 etc., i64 A and B, <16 / 4 x float> C; its tests
// llvm/test/CodeGen/AMDGPU/llvm.amdgcn.mfma.gfx940.ll). The operands are the language's
// OCP bytes, the instruction reads FNUZ ones: each lane's word goes through
// scalar::fp8_ocp_to_fnuz (about ten 64-bit bit operations, not a per-byte decode), which
// maps -0 to 0 and NaN / Inf to the FNUZ NaN and leaves every other byte as it is, then
// worth half its OCP value; the products come out a quarter of the true ones and the
// gemm's lowering (ops/gemm_mfma.cpp) scales the accumulator by 1/4 before and 4 after.
void GpuLowering::amd_matrix_f8(const ir::MachineOpNode& m, unsigned cd) {
    const int64_t atom = m.imm.at(0), k = m.imm.at(2);
    const unsigned per = static_cast<unsigned>(atom * k / 64);  // bytes a lane: 8
    if (per != 8) TILEC_ICE(who_ + ": no fp8 MFMA of shape " + std::to_string(atom) + "x" + std::to_string(atom) + "x" +
                            std::to_string(k));
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), per);
    auto operand = [&](size_t first) {
        const DataType t = m.src.at(first)->type;
        llvm::Value* v = llvm::PoisonValue::get(bytes);
        for (unsigned i = 0; i < per; ++i) v = b_.CreateInsertElement(v, storage_value(m.src.at(first + i), t), uint64_t(i));
        LlvmWord w{&b_, b_.CreateBitCast(v, b_.getInt64Ty())};
        return scalar::fp8_ocp_to_fnuz(w, t.kind == ir::TypeKind::Float8E5M2,
                                       [&](uint64_t c) { return LlvmWord{&b_, b_.getInt64(c)}; })
            .v;
    };
    const bool a_bf8 = m.src.at(0)->type.kind == ir::TypeKind::Float8E5M2;
    const bool b_bf8 = m.src.at(per)->type.kind == ir::TypeKind::Float8E5M2;
    using namespace llvm::Intrinsic;
    static const ID k32[2][2] = {{amdgcn_mfma_f32_32x32x16_fp8_fp8, amdgcn_mfma_f32_32x32x16_fp8_bf8},
                                 {amdgcn_mfma_f32_32x32x16_bf8_fp8, amdgcn_mfma_f32_32x32x16_bf8_bf8}};
    static const ID k16[2][2] = {{amdgcn_mfma_f32_16x16x32_fp8_fp8, amdgcn_mfma_f32_16x16x32_fp8_bf8},
                                 {amdgcn_mfma_f32_16x16x32_bf8_fp8, amdgcn_mfma_f32_16x16x32_bf8_bf8}};
    const ID id = (atom == 32 ? k32 : k16)[a_bf8][b_bf8];
    auto* cd_type = llvm::FixedVectorType::get(b_.getFloatTy(), cd);
    llvm::Value* c = llvm::PoisonValue::get(cd_type);
    for (unsigned g = 0; g < cd; ++g) c = b_.CreateInsertElement(c, expr(m.src.at(2 * per + g)), uint64_t(g));
    llvm::Value* d = b_.CreateIntrinsic(id, {}, {operand(0), operand(per), c, b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
    for (unsigned g = 0; g < cd; ++g) store_element(m.dst.at(g), b_.CreateExtractElement(d, uint64_t(g)));
}

}  // namespace tilec::codegen::gpu
