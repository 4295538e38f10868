// GpuLowering's 8-bit floats (gpu_lowering.h): f8e4m3 and f8e5m2 are bytes in memory and
// f32 in registers, and LLVM has neither a type nor intrinsics for them. On targets with
// the PTX cvt for fp8 pairs (sm_89+, Target::cvt_fp8) the conversions are those
// instructions as inline PTX; elsewhere (sm_80/86, AMD) the same roundings in integer
// and f32 arithmetic, which tests/nvptx checks value by value against
// scalar/float_formats.h (the reference interpreter's encoders).
#include <cmath>

#include <llvm/IR/InlineAsm.h>

#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

namespace {

// The OCP fp8 formats: E exponent bits, M mantissa bits; e4m3 has no infinities (only
// S.1111.111 is NaN, so its largest finite value is 448 and overflow saturates, as
// the language says), e5m2 is IEEE-like (overflow gives +-inf).
struct F8Format {
    int exp_bits, man_bits;
    bool ieee;
    int bias() const { return (1 << (exp_bits - 1)) - 1; }
    int emin() const { return 1 - bias(); }
    int emax() const { return (1 << exp_bits) - (ieee ? 2 : 1) - bias(); }
    uint32_t top_mantissa() const { return (1u << man_bits) - (ieee ? 1 : 2); }
    double max_value() const { return std::ldexp(1.0 + double(top_mantissa()) / double(1u << man_bits), emax()); }
    uint32_t inf_bits() const { return ((1u << exp_bits) - 1) << man_bits; }
    uint32_t max_bits() const { return ((ieee ? (1u << exp_bits) - 2 : (1u << exp_bits) - 1) << man_bits) | top_mantissa(); }
    uint32_t nan_bits() const { return ieee ? inf_bits() | (1u << (man_bits - 1)) : 0x7f; }
};

F8Format f8_format(DataType t) { return t.kind == ir::TypeKind::Float8E4M3 ? F8Format{4, 3, false} : F8Format{5, 2, true}; }

}  // namespace

llvm::Value* GpuLowering::f8_encode(llvm::Value* x, DataType t) {
    const F8Format fmt = f8_format(t);
    const bool e4m3 = !fmt.ieee;
    auto* f32 = b_.getFloatTy();
    auto* i32 = b_.getInt32Ty();
    if (target_.cvt_fp8.available) {
        // cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b: d[15:8] = a, d[7:0] = b, rounded to
        // nearest even; .satfinite (mandatory here) gives NaN for NaN and the largest
        // finite value for anything beyond it (PTX ISA, cvt).
        auto* fty = llvm::FunctionType::get(b_.getInt16Ty(), {f32, f32}, false);
        std::string text = std::string("cvt.rn.satfinite.") + (e4m3 ? "e4m3x2" : "e5m2x2") + ".f32 $0, $1, $2;";
        llvm::Value* pair = b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, "=h,f,f", false),
                                          {llvm::ConstantFP::get(f32, 0.0), x});
        llvm::Value* byte = b_.CreateTrunc(pair, b_.getInt8Ty());
        if (e4m3) return byte;
        // f8e5m2 overflows to infinity: from 61440 (57344 plus half its ulp; the tie goes
        // to the even 65536) and for infinities, where satfinite stopped at 57344.
        llvm::Value* big = b_.CreateFCmpOGE(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                                            llvm::ConstantFP::get(f32, 61440.0));
        llvm::Value* sign = b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(x, i32), 24), b_.getInt8Ty());
        llvm::Value* inf = b_.CreateOr(b_.CreateAnd(sign, b_.getInt8(0x80)), b_.getInt8(static_cast<uint8_t>(fmt.inf_bits())));
        return b_.CreateSelect(big, inf, byte);
    }
    // r = roundeven(|x| / q) * q with the quantum q = 2^(e - M) of |x|'s binade e, clamped
    // to [emin, emax + 1] (below emin the quantum is the subnormal one; above emax all
    // overflows anyway): exact scalings by powers of two around one rounding. The scaled
    // value never overflows f32 (q < 1 only where |x| < 2^(emax + 1)).
    auto c32 = [&](int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); };
    auto pow2 = [&](int e) { return llvm::ConstantFP::get(f32, std::ldexp(1.0, e)); };
    llvm::Value* bits = b_.CreateBitCast(x, i32);
    llvm::Value* sign = b_.CreateLShr(bits, 31);
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, 23), c32(0xff)), c32(127));
    e = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, e, c32(fmt.emin()));
    e = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, e, c32(fmt.emax() + 1));
    llvm::Value* q = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, c32(127 - fmt.man_bits)), 23), f32);
    llvm::Value* q_inv = b_.CreateBitCast(b_.CreateShl(b_.CreateSub(c32(127 + fmt.man_bits), e), 23), f32);
    llvm::Value* r = b_.CreateFMul(b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(ax, q_inv)), q);
    llvm::Value* overflow = b_.CreateFCmpOGT(r, llvm::ConstantFP::get(f32, fmt.max_value()));
    // r's encoding: a normal number from its f32 fields, a subnormal as a count of quanta.
    llvm::Value* rb = b_.CreateBitCast(r, i32);
    llvm::Value* re = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(rb, 23), c32(0xff)), c32(127 - fmt.bias()));
    llvm::Value* rm = b_.CreateAnd(b_.CreateLShr(rb, 23 - fmt.man_bits), c32((1 << fmt.man_bits) - 1));
    llvm::Value* normal = b_.CreateOr(b_.CreateShl(re, fmt.man_bits), rm);
    llvm::Value* subnormal = b_.CreateFPToUI(b_.CreateFMul(r, pow2(fmt.man_bits - fmt.emin())), i32);
    llvm::Value* mag = b_.CreateSelect(b_.CreateFCmpOGE(r, pow2(fmt.emin())), normal, subnormal);
    mag = b_.CreateSelect(overflow, c32(fmt.ieee ? fmt.inf_bits() : fmt.max_bits()), mag);
    mag = b_.CreateSelect(b_.CreateFCmpUNO(x, x), c32(fmt.nan_bits()), mag);
    return b_.CreateTrunc(b_.CreateOr(b_.CreateShl(sign, 7), mag), b_.getInt8Ty());
}

llvm::Value* GpuLowering::f8_decode(llvm::Value* byte, DataType t) {
    const bool e4m3 = t.kind == ir::TypeKind::Float8E4M3;
    auto* i16 = b_.getInt16Ty();
    llvm::Value* wide = b_.CreateZExt(byte, i16);
    llvm::Value* half;
    if (target_.cvt_fp8.available) {
        // cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a: each byte of a to f16 (exact), the low byte's
        // in d's low half (PTX ISA, cvt).
        auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {i16}, false);
        std::string text = std::string("cvt.rn.f16x2.") + (e4m3 ? "e4m3x2" : "e5m2x2") + " $0, $1;";
        llvm::Value* pair = b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, "=r,h", false), {wide});
        half = b_.CreateBitCast(b_.CreateTrunc(pair, i16), b_.getHalfTy());
        return b_.CreateFPExt(half, b_.getFloatTy());
    }
    if (!e4m3) {
        // e5m2 is f16 with its low 8 mantissa bits dropped: the byte is f16's high byte.
        half = b_.CreateBitCast(b_.CreateShl(wide, 8), b_.getHalfTy());
        return b_.CreateFPExt(half, b_.getFloatTy());
    }
    // e4m3's exponent and mantissa fields placed in f16's (exponent bias 15 instead of 7,
    // subnormals included) read as f16 are its value times 2^-8; S.1111.111 is NaN.
    llvm::Value* fields = b_.CreateAnd(wide, b_.getInt16(0x7f));
    llvm::Value* h = b_.CreateOr(b_.CreateShl(b_.CreateAnd(wide, b_.getInt16(0x80)), 8), b_.CreateShl(fields, 7));
    llvm::Value* v = b_.CreateFMul(b_.CreateFPExt(b_.CreateBitCast(h, b_.getHalfTy()), b_.getFloatTy()),
                                   llvm::ConstantFP::get(b_.getFloatTy(), 256.0));
    return b_.CreateSelect(b_.CreateICmpEQ(fields, b_.getInt16(0x7f)), llvm::ConstantFP::getNaN(b_.getFloatTy()), v);
}

}  // namespace tilec::codegen::gpu
