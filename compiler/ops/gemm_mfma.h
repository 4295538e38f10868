// gemm on AMD's matrix cores (issue 13): CDNA2/3 MFMA on wave64 (gfx90a, gfx942) and RDNA3
// WMMA on wave32 (gfx1100). The wave partition of the block tile and the lowering to
// element loads of the operands from LDS and one MachineOp::Mfma / Wmma per atom.
// Internal to compiler/ops (gemm.cpp's layout and lowering hooks call it).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ops/context.h"

namespace tilec::ops {

// The matrix-core plan of one gemm: C (M x N) split over warps_m x warps_n waves, each a
// (M / warps_m) x (N / warps_n) tile of atom x atom x atom_k instructions (32x32x8 or
// 16x16x16 MFMA, 16x16x16 WMMA); c is the accumulator's fragment
// (Fragment::amd_matrix_c of that partition).
struct AmdMatrixPlan {
    int64_t m, n, k;
    int64_t warps_m, warps_n;
    int64_t atom, atom_k;
    int64_t wave;
    bool wmma;
    layout::Fragment c;
};

// The plan for `g` on `t` with `threads` threads and the kernel's @warp_policy, or
// nullopt where the CUDA-core-style path takes the gemm: a target without the
// instruction for the types (f16 x f16 or bf16 x bf16 into f32), operands that are not
// on chip, or a shape no atom tiles. The target's preferred shape (its table's order:
// 32x32x8 before 16x16x16) is taken when it tiles the waves' tiles.
std::optional<AmdMatrixPlan> plan_amd_matrix(const ir::GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                             const std::string& policy);

// c (+)= op(a) @ op(b) with `a` and `b` whole shared tiles (the operands, or their shared
// copies), c's registers laid out as plan.c: per k-step of atom_k, each wave loads the
// elements its lanes hold of its A atoms and B atoms (the calculator's layouts: lane l
// of an MFMA holds row l % atom of A at K offsets 4 (l / atom) .. + 3; a WMMA lane the
// whole K row), then one Mfma / Wmma per (A atom, B atom).
ir::Stmt lower_gemm_amd_matrix(const ir::GemmNode& g, const AmdMatrixPlan& plan, const ir::Buffer& a,
                               const ir::Buffer& b, LowerContext& lc);

}  // namespace tilec::ops
