// gemm on NVIDIA tensor cores (sm_80+): the warp partition of the block tile and the
// ldmatrix + mma.sync lowering. Internal to compiler/ops (gemm.cpp's layout and
// lowering hooks call it).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ops/context.h"

namespace tilec::ops {

// The tensor-core plan of one gemm: C (M x N) split over warps_m x warps_n warps, each
// warp a (M / warps_m) x (N / warps_n) tile of m16n8k16 atoms; c is the accumulator's
// fragment (Fragment::mma_m16n8k16_c of that partition).
struct MmaPlan {
    int64_t m, n, k;
    int64_t warps_m, warps_n;
    layout::Fragment c;
};

// The plan for `g` on `t` with `threads` threads and the kernel's @warp_policy
// (`policy`: "full_row", "full_col", "square" or ""), or nullopt where the CUDA-core
// path takes the gemm: a target without mma.sync m16n8k16 / ldmatrix, operand types
// other than f16 x f16 or bf16 x bf16 into f32, or a shape the atoms do not tile.
std::optional<MmaPlan> plan_mma(const ir::GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                const std::string& policy);

// c (+)= op(a) @ op(b) with `a` and `b` whole shared tiles (the operands, or their
// shared copies), c's registers laid out as plan.c: per k-step of 16, ldmatrix.x4
// loads of each warp's A atoms (.trans for a transposed a) and B atom pairs (.trans
// for a row-major b), then one mma.sync per (A atom, B atom).
ir::Stmt lower_gemm_mma(const ir::GemmNode& g, const MmaPlan& plan, const ir::Buffer& a, const ir::Buffer& b,
                        LowerContext& lc);

}  // namespace tilec::ops
