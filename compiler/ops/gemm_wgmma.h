// gemm on NVIDIA Hopper's warpgroup tensor cores (sm_90a, issue 12): the warpgroup
// partition of the block tile and the lowering to wgmma.mma_async reading both operands
// from shared memory through matrix descriptors. Internal to compiler/ops (gemm.cpp's
// layout and lowering hooks call it).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ops/context.h"

namespace tilec::ops {

// The warpgroup plan of one gemm: C (M x N) split over groups_m x groups_n warpgroups of
// 128 threads, each a (M / groups_m) x (N / groups_n) tile of m64 x inst_n wgmma tiles;
// c is the accumulator's fragment (Fragment::wgmma_m64nNk16_d of that partition).
struct WgmmaPlan {
    int64_t m, n, k;
    int64_t groups_m, groups_n;
    int64_t inst_n;
    layout::Fragment c;
    int64_t step_k;  // K of one instruction: 16 (f16, bf16), 32 (8-bit floats)
    // A a fragment (the register form, f16 / bf16 only, groups_n = 1): the layout its
    // registers must have, the m64nNk16 A fragment of each warpgroup's rows (PTX ISA
    // Figure 148), which is the accumulator fragment of [M, K] with the same partition
    // (Figure 149's formula at K's columns: register 8 kk + i of a thread is element a_i
    // of k-step kk). nullopt where A is a shared tile.
    std::optional<layout::Fragment> a;
};

// The plan for `g` on `t` with `threads` threads, or nullopt where another path takes the
// gemm: a target without wgmma, B not a shared tile, A neither a shared tile nor (f16 /
// bf16, not transposed, rows split over the warpgroups alone) a fragment, types other
// than f16 x f16, bf16 x bf16 or the 8-bit floats (e4m3 / e5m2, either mix) into f32,
// or a shape the instructions do not tile.
std::optional<WgmmaPlan> plan_wgmma(const ir::GemmNode& g, const target::GpuTarget& t, int64_t threads);

// The shared layout an 8-bit operand tile of a wgmma needs (the instruction reads those
// only K-major, PTX ISA 9.7.15.5): swizzled row-major when K is the tile's last dimension
// (`k_last`), else stored transposed so that K is contiguous; nullopt if no swizzle fits.
std::optional<layout::Layout> wgmma_operand_layout(const ir::Buffer& X, bool k_last);

// c (+)= op(a) @ op(b), c's registers laid out as plan.c, or nullopt when a shared
// layout is not one a matrix descriptor describes, or A's registers (plan.a) are not
// laid out as the register form reads them (the caller then takes the CUDA-core
// path, which any accumulator layout allows). Per k-step of 16, one wgmma per (m64 tile,
// n tile) of the thread's warpgroup; fence.proxy.async and wgmma.fence before (the
// operands were written through the generic proxy; the fence names A's registers too),
// commit and wait 0 after.
std::optional<ir::Stmt> lower_gemm_wgmma(const ir::GemmNode& g, const WgmmaPlan& plan, LowerContext& lc);

}  // namespace tilec::ops
