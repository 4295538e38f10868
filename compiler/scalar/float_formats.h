// Narrow floating-point formats (f16, bf16, f8e4m3, f8e5m2) and f32: exact encoders with
// round-to-nearest-even and each format's overflow rule, one copy for every component.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "ir/ir.h"

namespace tilec::scalar {

// Encoders take any double and round to nearest, ties to even, exactly once (never via
// f32). Decoders give the exact value. NaN encodes as the format's canonical quiet NaN
// with the input's sign.
//
// f16 (IEEE binary16: 5 exponent bits, 10 mantissa bits, max 65504): overflow rounds to
// +-inf (anything >= 65520 in magnitude), subnormals down to 2^-24.
uint16_t f16_bits(double v);
double f16_value(uint16_t bits);

// bf16 (8 exponent bits, 7 mantissa bits, f32's range): overflow to +-inf.
uint16_t bf16_bits(double v);
double bf16_value(uint16_t bits);

// f8e4m3 (OCP FP8 E4M3 "FN": 4 exponent bits, bias 7, 3 mantissa bits). No infinities;
// S.1111.111 is NaN (0x7f / 0xff), so the largest finite value is 448 (S.1111.110).
// Saturating: finite values beyond 448 and +-inf give +-448 (as NVIDIA's satfinite
// conversions do); subnormals down to 2^-9.
uint8_t f8e4m3_bits(double v);
double f8e4m3_value(uint8_t bits);

// f8e5m2 (OCP FP8 E5M2, IEEE-like: 5 exponent bits, bias 15, 2 mantissa bits, max
// 57344, infinities and NaNs as in IEEE). Overflow rounds to +-inf (>= 61440 in
// magnitude); with `saturate`, finite overflow and +-inf give +-57344 instead.
uint8_t f8e5m2_bits(double v, bool saturate = false);
double f8e5m2_value(uint8_t bits);

// AMD CDNA3's "FNUZ" fp8 formats (MI300's MFMA operands: "fp8" and "bf8"), decoders only:
// the simulator reads what the instruction reads. Finite, unsigned zero: 0x80 (what
// would be -0) is the one NaN, there is no -0 and no infinity; exponent 0 is subnormal.
//  e4m3fnuz: bias 8, max S.1111.111 = 240, min normal 2^-7, min subnormal 2^-10.
//  e5m2fnuz: bias 16, max S.11111.11 = 57344, min normal 2^-15, min subnormal 2^-17.
// (LLVM's APFloat Float8E4M3FNUZ / Float8E5M2FNUZ, reviews.llvm.org/D141863 and the RFC
// "Adding the AMD/GraphCore float8 formats to APFloat": "all NaN values are represented
// by 0x80"; "minimum exponents one smaller than ... the existing Float8 formats"; AMD's
// Matrix Instruction Calculator, CDNA3 V_MFMA_F32_16X16X32_FP8_FP8 "Register data types":
// "FP8 (AMD 4-bit exponent, 3-bit mantissa floating point)".)
double f8e4m3fnuz_value(uint8_t bits);
double f8e5m2fnuz_value(uint8_t bits);

// `v` rounded to the float type `t` (f64: unchanged; f32: the nearest float, overflow
// to +-inf). `t` must be a float type. Inline for f64 and in-range f32, which the
// simulator meets on every float operation.
double round_to_float_type_slow(double v, ir::DataType t);
inline double round_to_float_type(double v, ir::DataType t) {
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return v;
    if (t.kind == ir::TypeKind::Float && t.bits == 32 && std::fabs(v) <= static_cast<double>(FLT_MAX))
        return static_cast<double>(static_cast<float>(v));
    return round_to_float_type_slow(v, t);
}

}  // namespace tilec::scalar
