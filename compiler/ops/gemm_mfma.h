// gemm on AMD's matrix cores (issue 13): CDNA2/3 MFMA on wave64 (gfx90a, gfx942) and RDNA3
// WMMA on wave32 (gfx1100). The wave partition of the block tile and the lowering to
// element loads of the operands from LDS and one MachineOp::Mfma / Wmma per atom.
// Internal to compiler/ops (gemm.cpp's layout and lowering hooks call it).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "ops/context.h"

namespace tilec::ops {

// The matrix-core plan of one gemm: C (M x N) split over warps_m x warps_n waves, each a
// (M / warps_m) x (N / warps_n) tile of atom x atom x atom_k instructions (32x32x8 or
// 16x16x16 MFMA, 16x16x16 WMMA); c is the accumulator's fragment
// (Fragment::amd_matrix_c of that partition). `transposed`: the instructions take A and B
// swapped and so compute C^T; c is then the transposed atoms' fragment (Mfma16T / Mfma32T),
// a lane holding rows where it held columns. `a_fragment`: A is a fragment (read from
// registers where its layout gives each lane its operand elements: amd_direct_a_registers).
struct AmdMatrixPlan {
    int64_t m, n, k;
    int64_t warps_m, warps_n;
    int64_t atom, atom_k;
    int64_t wave;
    bool wmma;
    bool transposed;
    bool a_fragment;
    layout::Fragment c;
};

// The plan for `g` on `t` with `threads` threads and the kernel's @warp_policy, or
// nullopt where the CUDA-core-style path takes the gemm: a target without the
// instruction for the types (f16 x f16 or bf16 x bf16 into f32), operands that are not
// on chip, or a shape no atom tiles. The target's preferred shape (its table's order:
// 32x32x8 before 16x16x16) is taken when it tiles the waves' tiles.
// Under @warp_policy(full_row) on MFMA (flash attention: each wave owns whole rows) the
// plan is transposed: the scores' accumulator then holds the A operand of p @ v in the
// lanes and registers that MFMA reads it from (so p needs no LDS copy), its row
// statistics one row of an atom a lane (4 lanes groups sharing it, where the plain layout
// gave a lane 4 rows of each atom: fewer registers, two shuffle steps a reduction instead
// of four), and the output accumulator the same rows as the scores.
std::optional<AmdMatrixPlan> plan_amd_matrix(const ir::GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                             const std::string& policy);

// The LDS layout of a shared operand tile `x` of a matrix-core gemm, or nullopt to keep
// row-major. Only a tile whose rows run along K (`k_last`: A not transposed, B
// transposed) is read in wide pieces: each lane reads up to 16 contiguous bytes of its
// row (ds_read_b64 / ds_read_b128), the rows of one instruction's lane groups at the
// same K. Its 16-byte chunks are XOR-swizzled by the row (Layout::swizzled, the widest
// mode the row's bytes fit: SW32 / SW64), which puts the rows a lane group
// reads in distinct banks and keeps each chunk whole, so the fills' 8- and 16-byte
// stores along the row stay conflict-free too. A tile whose rows run along M or N is
// read 2 bytes a lane, 32 consecutive elements of one row per half wave: conflict-free
// row-major. WMMA (RDNA3, wave32) takes the swizzle for rows along K of at most 64
// bytes or of more than 128 (stored_operand_layout in gemm_mfma.cpp says why not between).
// On MFMA, rows wider than 64 bytes (flash attention's q and k, D = 64 or 128)
// are padded by 16 bytes instead (Layout::padded, rows of a multiple of 128 bytes): the
// XOR swizzle put each k-step's chunk at a lane-dependent address, and flash attention,
// at CDNA's 512-register limit, spilled keeping them (attn_fwd_causal 68 bytes on
// gfx942); a padded row is read at immediate offsets from one address. The stdlib
// gemms' BK = 32 tiles (64-byte rows) take the swizzle.
// `transposed`: the tile is stored transposed (its fills read the tensor along its first
// dimension, a transposed operand): the layout above of the [cols, rows] tile, whose rows
// run along K where the logical tile's do not, composed with the transpose; the fills
// then move 16-byte chunks (ops/copy.cpp) and the reads follow the stored rows.
std::optional<layout::Layout> amd_operand_layout(const ir::BufferNode& x, bool k_last, const AmdMatrixPlan& plan,
                                                 bool transposed = false);
// The padding (elements a row) of the LDS copy of a fragment operand (flash attention's
// p in p @ v): 16 bytes where its rows run along K on MFMA and are a multiple of 32
// bytes, so that the rows a ds_read_b128 lane group reads start an odd number of
// 16-byte chunks apart and fall in 8 bank quads; 48 bytes on WMMA where they run along
// K and are a multiple of 128 bytes, if the padded copy takes at most `lds_left` bytes
// (what the kernel's other shared buffers leave: flash attention's _wg2 uses all 64 KiB
// of gfx1100's LDS unpadded); else 0.
int64_t amd_stage_pad(const ir::BufferNode& x, bool k_last, const AmdMatrixPlan& plan, int64_t lds_left);

// Where a transposed plan's A fragment `F` already holds each lane's A operand elements
// (flash attention's p, copied from the scores' transposed accumulator): regs[kk][mi][e]
// is the register of F holding element e of the lane's K run of A atom mi at k-step kk,
// the same in every thread; nullopt where some lane lacks one or threads disagree.
std::optional<std::vector<std::vector<std::vector<int64_t>>>> amd_direct_a_registers(const layout::Fragment& F,
                                                                                    const ir::GemmNode& g,
                                                                                    const AmdMatrixPlan& plan);

// c (+)= op(a) @ op(b) with `a` and `b` whole shared tiles (the operands, or their shared
// copies), c's registers laid out as plan.c: per `pack` k-steps of atom_k, each wave
// loads the elements its lanes hold of its A atoms and B atoms (the calculator's layouts:
// lane l of an MFMA holds row l % atom of A at K slots 4 (l / atom) .. + 3; a WMMA lane
// the whole K row), then one Mfma / Wmma per (A atom, B atom) and k-step. K is summed in
// any order, so a lane's K slots of the `pack` steps are made contiguous in K: lane
// group q reads K [p * pack * atom_k + q * pack * per, + pack * per) once (up to 16
// bytes: one ds_read_b128 from a K-major tile), step g of the pack taking elements
// [g * per, (g + 1) * per) of it; A and B use the same map, so every product pairs the
// same K.
// fp8 on CDNA3 wraps its k-steps in `acc *= 0.25` and `acc *= 4` (see the lowering), each
// an unrolled loop over the accumulator's registers whose variable has this name:
// hoist-accumulator-scale (lower/accumulator_scale.cpp) moves the pair out of a K loop.
inline constexpr const char* kFp8ScaleVar = "fp8_scale";

// `a_regs` (amd_direct_a_registers): A is read from its fragment's registers, the
// k-steps unrolled so that their indices are constants.
ir::Stmt lower_gemm_amd_matrix(const ir::GemmNode& g, const AmdMatrixPlan& plan, const ir::Buffer& a,
                               const ir::Buffer& b, LowerContext& lc,
                               const std::vector<std::vector<std::vector<int64_t>>>* a_regs = nullptr);

}  // namespace tilec::ops
