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
// warp a (M / warps_m) x (N / warps_n) tile of m16n8k{atom_k} atoms; c is the
// accumulator's fragment (Fragment::mma_m16n8k16_c of that partition: every m16n8 shape
// has the same C/D fragment, PTX ISA 9.7.14.5.7-9.7.14.5.10). An atom's K is 32 bytes
// of its operand type: k16 for f16 / bf16, k32 for i8 / u8 / fp8, k8 for f32 (as .tf32).
struct MmaPlan {
    int64_t m, n, k;
    int64_t warps_m, warps_n;
    layout::Fragment c;
    int64_t atom_k = 16;
    // Warp rows interleaved (Fragment::mma_m16n8k16_c_interleaved): on targets with wgmma,
    // for one column of warps, so flash attention's two accumulators (s from wgmma, o
    // from mma.sync with p in registers) give each warp the same rows.
    bool interleave_m = false;
    // The first row of M atom `mi` of warp row `warp_m`.
    int64_t atom_row(int64_t warp_m, int64_t mi) const {
        return interleave_m ? (mi * warps_m + warp_m) * 16 : warp_m * (m / warps_m) + mi * 16;
    }
};

// warps_m x warps_n = `warps` with M and N divisible into atom_m x atom_n atoms per warp,
// as @warp_policy asks ("full_row": warps_n = 1, "full_col": warps_m = 1) where it can,
// else the split whose warp tile is closest to square; nullopt if none divides.
std::optional<std::pair<int64_t, int64_t>> warp_split(int64_t m, int64_t n, int64_t warps, const std::string& policy,
                                                      int64_t atom_m, int64_t atom_n);

// The plan for `g` on `t` with `threads` threads and the kernel's @warp_policy
// (`policy`: "full_row", "full_col", "square" or ""), or nullopt where the CUDA-core
// path takes the gemm: a target without ldmatrix or without the mma.sync form of the
// types (f16 x f16 or bf16 x bf16 into f32, f16 x f16 into f16, i8 x i8 or u8 x u8
// into i32, f8e4m3 / f8e5m2 x f8e4m3 / f8e5m2 into f32 on sm_89+ (m16n8k32, PTX 8.4),
// and f32 x f32 into f32 as tf32 when `allow_tf32`, the kernel's @allow_tf32: tf32
// keeps 10 of f32's 23 mantissa bits), or a shape the atoms do not tile.
std::optional<MmaPlan> plan_mma(const ir::GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                const std::string& policy, bool allow_tf32);

// c (+)= op(a) @ op(b) with `a` and `b` whole shared tiles (the operands, or their
// shared copies), c's registers laid out as plan.c: per k-step of atom_k, ldmatrix.x4
// loads of each warp's A atoms (.trans for a transposed a) and B atom pairs (.trans
// for a row-major b), then one mma.sync per (A atom, B atom). ldmatrix moves 16-bit
// pairs, so .trans exists for 16-bit operands only: an 8- or 32-bit operand whose
// 16-byte runs do not lie along K (a transposed a, a row-major b) is loaded element by
// element from shared memory instead, at the ISA's fragment coordinates.
//
// With `a_regs` (an A fragment whose registers already hold, in each thread, the
// elements the thread's A fragments need: a_regs[k][m][i] is the register of element i
// of A atom m at k-step k, the same in every thread; see direct_a_registers), A is read
// from those registers instead (FlashAttention's P = softmax(S) kept in the layout of
// the mma accumulator S: no round trip through shared memory); `a` is then unused.
ir::Stmt lower_gemm_mma(const ir::GemmNode& g, const MmaPlan& plan, const ir::Buffer& a, const ir::Buffer& b,
                        LowerContext& lc, const std::vector<std::vector<std::vector<int64_t>>>* a_regs = nullptr);

// For a fragment A operand laid out as `F` (an m16n8k16 plan: 16-bit operands): per
// k-step, A atom and element i < 8 of the m16n8k16 A fragment, the register of F that holds it in every thread that needs it,
// if each thread holds all of its own elements at registers that do not depend on the
// thread; nullopt otherwise (the operand is then staged through shared memory).
std::optional<std::vector<std::vector<std::vector<int64_t>>>> direct_a_registers(const layout::Fragment& F,
                                                                                 const ir::GemmNode& g,
                                                                                 const MmaPlan& plan);

}  // namespace tilec::ops
