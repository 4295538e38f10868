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
    // Warp rows interleaved (Fragment::mma_m16n8k16_c_interleaved): on targets with wgmma,
    // for one column of warps, so flash attention's two accumulators (s from wgmma, o
    // from mma.sync with p in registers) give each warp the same rows.
    bool interleave_m = false;
    // The first row of M atom `mi` of warp row `warp_m`.
    int64_t atom_row(int64_t warp_m, int64_t mi) const {
        return interleave_m ? (mi * warps_m + warp_m) * 16 : warp_m * (m / warps_m) + mi * 16;
    }
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
//
// With `a_regs` (an A fragment whose registers already hold, in each thread, the
// elements the thread's A fragments need: a_regs[k][m][i] is the register of element i
// of A atom m at k-step k, the same in every thread; see direct_a_registers), A is read
// from those registers instead (FlashAttention's P = softmax(S) kept in the layout of
// the mma accumulator S: no round trip through shared memory); `a` is then unused.
ir::Stmt lower_gemm_mma(const ir::GemmNode& g, const MmaPlan& plan, const ir::Buffer& a, const ir::Buffer& b,
                        LowerContext& lc, const std::vector<std::vector<std::vector<int64_t>>>* a_regs = nullptr);

// For a fragment A operand laid out as `F`: per k-step, A atom and element i < 8 of the
// m16n8k16 A fragment, the register of F that holds it in every thread that needs it,
// if each thread holds all of its own elements at registers that do not depend on the
// thread; nullopt otherwise (the operand is then staged through shared memory).
std::optional<std::vector<std::vector<std::vector<int64_t>>>> direct_a_registers(const layout::Fragment& F,
                                                                                 const ir::GemmNode& g,
                                                                                 const MmaPlan& plan);

}  // namespace tilec::ops
