// The language's OCP fp8 bytes (f8e4m3 = E4M3FN, f8e5m2 = E5M2) as the FNUZ bytes of
// gfx942's fp8 / bf8 MFMA (float_formats.h), eight at a time in one 64-bit word. One
// formula for the AMDGPU lowering (which builds it in LLVM IR) and the simulator (which
// runs it on uint64_t), tested byte by byte against both formats' decoders.
//
// Why it is a conversion of specials only: the two encodings have the same fields and
// the FNUZ bias is one more (8 vs E4M3FN's 7, 16 vs E5M2's 15: the OCP 8-bit Floating
// Point Specification (OFP8) rev. 1.0's table of the E4M3 / E5M2 encodings, as
// float_formats.h transcribes it; FNUZ: float_formats.h), and the
// subnormals of both are 0.m * 2^(1 - bias). So an OCP byte read as FNUZ is exactly half
// its OCP value, for every finite non-zero byte, normal or subnormal. Only the specials
// differ and are rewritten:
//   0x80 (OCP -0)                              -> 0x00 (FNUZ 0x80 would be NaN)
//   E4M3FN NaN S.1111.111 (|b| = 0x7f)         -> 0x80 (FNUZ NaN; as FNUZ it is +-240)
//   E5M2 Inf / NaN S.11111.xx (|b| >= 0x7c)    -> 0x80 (FNUZ has no Inf: Inf becomes NaN)
// Everything else is unchanged. The MFMA's products are then a quarter of the true ones
// (ops/gemm_mfma.cpp scales the accumulator).
#pragma once
#include <cstdint>

namespace tilec::scalar {

// `x`: eight OCP fp8 bytes in a 64-bit word type W with &, |, +, -, ~ and logical >> (no
// carries cross a byte below: every sum stays under 0x100 per byte); `e5m2`: the bytes'
// format; `k(v)` makes the 64-bit constant v as a W.
template <class W, class K>
W fp8_ocp_to_fnuz(W x, bool e5m2, K k) {
    const W low7 = k(0x7f7f7f7f7f7f7f7full), sign = k(0x8080808080808080ull);
    const W mag = x & low7;
    // Bit 7 of a byte of (mag + 0x7f) is set iff its magnitude is non-zero: the sign is
    // kept there, so -0 becomes +0.
    const W nonzero = (mag + low7) & sign;
    // Bit 7 of (mag + 0x01) (E4M3FN) / (mag + 0x04) (E5M2) is set iff the byte is NaN
    // (or E5M2 Inf): magnitude 0x7f, or >= 0x7c.
    const W special = (mag + k(e5m2 ? 0x0404040404040404ull : 0x0101010101010101ull)) & sign;
    // Its bytes' low 7 bits cleared (special - special >> 7 is 0x7f there), bit 7 set.
    const W payload = special - (special >> 7);
    return (mag & ~payload) | (x & nonzero) | special;
}

inline uint64_t fp8_ocp_to_fnuz(uint64_t x, bool e5m2) {
    return fp8_ocp_to_fnuz(x, e5m2, [](uint64_t v) { return v; });
}

}  // namespace tilec::scalar
