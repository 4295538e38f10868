// The text form of Tile IR: what `tilec --emit=tir` and --print-after-all show, and
// what lit tests FileCheck. Stable and deterministic: same IR, same text.
//
// Shape of the output (one statement per line, two-space indent):
//   func gemm_f16 = gemm<BM=128, T=f16>
//     params(A: global in f16[M, K], C: global out f16[M, N] strides(ldc, 1), M: size i64, scale: f32)
//     grid((N + 127) / 128, (M + 127) / 128) threads(128)
//     attrs(rasterize=8)
//   {
//     alloc shared a: f16[128, 32] @layout(swizzle)
//     let bx = block.x
//     for k in pipelined(0, K / 32, stages=3) {      // (min, extent)
//       copy(A[by * 128 : +128, k * 32 : +32] -> a, pad=0.0f16)
//       gemm(a, b, acc, trans_a=false, trans_b=false, clear=false)
//     }
//     reduce_max(s -> m, dim=1, clear=false)
//     c[i, j] = exp(s[i, j] - m[i])
//     x[] = 1                                        // rank-0 buffer
//   }
// `alloc` and `let` scope over the statements that follow them in the same block when
// they are the last statement of that block; otherwise they open braces. A whole-buffer
// region prints as the buffer's name. Integer `/` and `%` are floor div/mod (float `/`
// is division; float mod prints as fmod). Literals: i64 and f32 plain (1, 1.5), others
// with a type suffix (1i32, 255u8, 0.5f16), bools true/false; a non-f32 infinity or NaN
// as cast<f16>(-inf). Two distinct Vars or Buffers with one name print as `i`, `i_1`,
// ... in order of first appearance.
//
// The text determines the IR (ir/reader.h reads it back): where two IRs would print
// alike, one of them is marked: the negation of a literal prints as -(3) (a negative
// literal is -3), a real cast of an f32 infinity/NaN as cast<f16>((-inf)), and a loop
// variable that is not i64 with its type (for i: i32 in ...), as let does.
#pragma once
#include <string>

#include "ir/ir.h"

namespace tilec::ir {

std::string print(const Module& m);
std::string print(const PrimFunc& f);
std::string print(const Stmt& s);
std::string print(const Expr& e);
std::string print(const Region& r);
// "shared a: f16[128, 32]", "global in A: f16[M, K] strides(lda, 1)" (as after `alloc`).
std::string print_buffer_decl(const Buffer& b);

}  // namespace tilec::ir
