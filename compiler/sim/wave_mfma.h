// AMD's matrix instructions (issue 13), modelled from AMD's documents and nothing else, in
// the style of warp_mma.h: CDNA2/CDNA3 v_mfma_f32_{32x32x8,16x16x16}{f16,bf16} executed by
// a wave of 64 (with their i8 forms, and CDNA3's fp8 / bf8 ones into f32), and RDNA3
// v_wmma_f32_16x16x16_{f16,bf16} (and iu8, and v_wmma_f16_16x16x16_f16 with its f16
// accumulator) by a wave of 32. Operands are
// what the documents say they are: 32-bit VGPRs per lane. The models know nothing of
// tilec's IR; tests/unit/sim_wave_mfma_test.cpp checks them against the documents' own
// register tables.
//
// Document read: AMD Matrix Instruction Calculator (github.com/ROCm/
// amd_matrix_instruction_calculator, AMD's tool that prints the matrix layouts of the
// CDNA and RDNA3 ISA guides), run with `--detail-instruction` for CDNA3
// V_MFMA_F32_32X32X8_F16 / _BF16 and V_MFMA_F32_16X16X16_F16 / _BF16, CDNA2
// V_MFMA_F32_32X32X8F16 / 32X32X8BF16_1K / 16X16X16F16 / 16X16X16BF16_1K and RDNA3
// V_WMMA_F32_16X16X16_F16 / _BF16: its "Register usage" and "Matrix element to register
// mapping with no modifiers" (CBSZ = ABID = BLGP = 0; OPSEL = 0), and for RDNA3
// "A[i][k] Lane: i and i+16" (wave32: A and B are held twice, by lanes l and l + 16).
//
// The layouts (calculator, "Register to matrix element mapping", lane l, GPR g, a
// 16-bit element in bits [16h+15 : 16h] of its GPR, so element e of a lane's A or B is
// half e % 2 of GPR e / 2):
//  v_mfma_f32_32x32x8 (A: 2 GPRs, B: 2, C/D: 16)
//     A i = l % 32, k = 4 * (l / 32) + 2g + h;   B j = l % 32, k = 4 * (l / 32) + 2g + h
//     C/D i = 8 * (g / 4) + 4 * (l / 32) + g % 4, j = l % 32
//  v_mfma_f32_16x16x16 (A: 2 GPRs, B: 2, C/D: 4)
//     A i = l % 16, k = 4 * (l / 16) + 2g + h;   B j = l % 16, k = 4 * (l / 16) + 2g + h
//     C/D i = 4 * (l / 16) + g % 4, j = l % 16
//  v_mfma_i32_32x32x8i8 (CDNA2; A: 1 GPR, B: 1, C/D: 16) and v_mfma_i32_32x32x16_i8
//  (CDNA3; A: 2 GPRs, B: 2), an 8-bit element in bits [8b+7 : 8b] of its GPR, element e
//  of a lane being byte e % 4 of GPR e / 4, p = 4 or 8 elements per lane:
//     A i = l % 32, k = p * (l / 32) + 4g + b;   B j = l % 32, k likewise;  C/D as 32x32x8
//  v_mfma_i32_16x16x16i8 (CDNA2; 1 GPR) and v_mfma_i32_16x16x32_i8 (CDNA3; 2 GPRs):
//     A i = l % 16, k = p * (l / 16) + 4g + b;   B likewise;  C/D as 16x16x16
//  v_wmma_i32_16x16x16_iu8 wave32 (A: 4 GPRs, B: 4, C/D: 8): A i = l % 16, k = 4g + b
//     (lanes l and l + 16 the same), C/D as the f32 WMMA. "IU8": each operand signed or
//     unsigned by an instruction bit (the calculator: "NEG bits supported"); tilec's i8
//     is signed, and the model reads signed bytes.
//  (calculator, CDNA2 / CDNA3 / RDNA3, "Register to matrix element mapping with no
//  modifiers"; C and D are int32 there.)
//  CDNA3 v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8} and v_mfma_f32_32x32x16_* (A: 2 GPRs,
//  B: 2, C/D: 4 / 16, f32): the i8 forms' layouts, byte e % 4 of GPR e / 4 (calculator,
//  CDNA3 V_MFMA_F32_16X16X32_FP8_FP8: "A k: 8 * floor(lane / 16) + 4 * GPR_num +
//  floor(GPR_bits / 8)", "C or D i: 4 * floor(lane / 16) + (GPR_num % 4)"). A and B each
//  take their own format, "fp8" = E4M3FNUZ, "bf8" = E5M2FNUZ ("FP8 (AMD 4-bit exponent,
//  3-bit mantissa floating point)"), decoded by scalar/float_formats.h; 0x80 is NaN.
//  v_wmma_f32_16x16x16 wave32 (A: 8 GPRs, B: 8, C/D: 8)
//     A i = l % 16, k = 2g + h (lanes l and l + 16 hold the same A row); B likewise
//     C/D i = 2g + l / 16, j = l % 16
//  v_wmma_f16_16x16x16_f16 wave32 (calculator, RDNA3 V_WMMA_F16_16X16X16_F16,
//  --detail-instruction: "Wave32 register usage: GPRs required for A: 8, B: 8, C: 8,
//  D: 8", all four "FP16 (IEEE binary16 floating point)", "OPSEL[1:0] supported: False,
//  OPSEL[2] supported: True"; the tool's note: "In gfx11 matrix operations with 16b
//  outputs, OPSEL[2] is used to decide whether to use the lower or upper half of each
//  register in C[] and D[]"). A and B as the f32 WMMA's; "C or D[i][j] GPR:
//  (floor(i / 2)).[15:0], Lane: ((16 * i) % 32) + j" with no modifiers, and with --opsel 4
//  every C / D entry at [31:16] of the same GPR and lane (e.g. "D[11][4] = v5{20}.[15:0]",
//  with OPSEL = 4 "v5{20}.[31:16]"): C/D i = 2g + l / 16, j = l % 16, in the half
//  OPSEL[2] picks. The calculator says nothing of D's other half; the model leaves it
//  as C's (LLVM keeps this instruction two-address, D tied to C, so that two WMMAs can
//  fill the two halves of one register set: reviews.llvm.org/D158059). tilec uses
//  OPSEL[2] = 0 and reads the low halves only.
//
// Arithmetic: the documents fix neither the order of the K additions nor intermediate
// rounding; as warp_mma.h, each product of two f16 / bf16 values is exact in f32, formed
// there and accumulated in f32 round-to-nearest-even in the order
//     d = c;  for k = 0 .. K-1:  d = fl32(d + a[i][k] * b[k][j])
// (exact, and so order-free, for inputs whose sums f32 holds exactly). The f16-accumulator
// WMMA: the documents say no more of it (not whether partial sums are rounded to f16), so
// the model is warp_mma.h's for mma.sync .f16.f16.f16.f16: c's f16 value widened to f32,
// the sum formed as above in f32, d rounded once to f16 (round to nearest even). fp8 / bf8 products
// are exact in f32 too. Whether the hardware flushes FNUZ subnormal inputs is not in the
// documents read; the model keeps them (OCP subnormals stay subnormal under the lowering's
// rewrite, scalar/fp8_fnuz.h, so a flush would hit the same bytes either way).
//
// Problems, reported and never guessed (0 stands in the result): a lane of the wave that
// does not execute the instruction or does not exist (the matrix is spread over all of
// the wave's lanes); WMMA A/B rows that differ between lanes l and l + 16.
#pragma once
#include <array>
#include <optional>
#include <cstdint>
#include <span>
#include <vector>

namespace tilec::sim::isa {

enum class AmdMatrixShape : uint8_t {
    Mfma32x32x8,
    Mfma16x16x16,
    Wmma16x16x16,
    // i8 into i32: CDNA2's v_mfma_i32_32x32x8i8 / 16x16x16i8 (one GPR of A and B: 4 bytes)
    // and CDNA3's v_mfma_i32_32x32x16_i8 / 16x16x32_i8 (two GPRs: 8 bytes).
    Mfma32x32x8I8,
    Mfma16x16x16I8,
    Mfma32x32x16I8,
    Mfma16x16x32I8,
    // RDNA3's v_wmma_i32_16x16x16_iu8 in wave32 with both operands signed: A and B 4 GPRs
    // (16 bytes, the whole K), lanes l and l + 16 the same row; C/D as the f32 WMMA's.
    Wmma16x16x16I8,
    // CDNA3's fp8 / bf8 into f32: v_mfma_f32_32x32x16_* and 16x16x32_* (two GPRs: 8 bytes).
    Mfma32x32x16F8,
    Mfma16x16x32F8,
};
// Fp8 / Bf8: CDNA3's FNUZ formats (E4M3FNUZ / E5M2FNUZ), not the OCP ones.
enum class AmdMatrixAb : uint8_t { F16, Bf16, I8, Fp8, Bf8 };
// The i8 shape of an M x N x K MFMA (M = 32 or 16), or nullopt.
std::optional<AmdMatrixShape> amd_matrix_i8_shape(int m, int k);
// The fp8 shape of an M x N x K MFMA (32x32x16 or 16x16x32), or nullopt.
std::optional<AmdMatrixShape> amd_matrix_f8_shape(int m, int k);

struct AmdMatrixInfo {
    int m, n, k, wave;
    int a_regs, b_regs, c_regs;  // 32-bit GPRs per lane
};
AmdMatrixInfo amd_matrix_info(AmdMatrixShape shape);

struct AmdMatCoord {
    int row = 0, col = 0;
};
// Element e of lane l's A (row i, col k) / B (row k, col j) operand, and GPR g of C/D.
AmdMatCoord amd_matrix_a_coord(AmdMatrixShape shape, int lane, int e);
AmdMatCoord amd_matrix_b_coord(AmdMatrixShape shape, int lane, int e);
AmdMatCoord amd_matrix_c_coord(AmdMatrixShape shape, int lane, int g);

struct AmdMatrixLane {
    bool executes = true;
    bool exited = false;
    std::array<uint32_t, 8> a{};   // a_regs used
    std::array<uint32_t, 8> b{};   // b_regs used
    std::array<uint32_t, 16> c{};  // f32 / i32 bits (amd_wmma_f16: two f16 halves), c_regs used
};
enum class AmdMatrixProblem : uint8_t {
    LaneExited,        // `lane` does not exist or has exited
    LaneNotExecuting,  // `lane` does not execute it
    WmmaReplicaDiffers,  // WMMA: lane `lane` (16..31) holds other A or B values than lane - 16
};
struct AmdMatrixIssue {
    AmdMatrixProblem problem;
    int lane = 0;
};
struct AmdMatrixResult {
    std::vector<std::array<uint32_t, 16>> d;  // f32 bits per lane
    std::vector<AmdMatrixIssue> issues;
};
// `lanes` holds the wave's lanes (amd_matrix_info(shape).wave of them).
AmdMatrixResult amd_matrix_f32(AmdMatrixShape shape, AmdMatrixAb ab, std::span<const AmdMatrixLane> lanes);
// A and B of their own types (the fp8 shapes take Fp8 / Bf8 each; the others one type).
AmdMatrixResult amd_matrix_f32(AmdMatrixShape shape, AmdMatrixAb a, AmdMatrixAb b, std::span<const AmdMatrixLane> lanes);
// The i8 shapes: C and D are i32 bits; the sums wrap at 32 bits.
AmdMatrixResult amd_matrix_i32(AmdMatrixShape shape, std::span<const AmdMatrixLane> lanes);
// RDNA3 v_wmma_f16_16x16x16_f16 in wave32 (shape Wmma16x16x16, A and B f16): C and D are
// 8 GPRs of two f16 halves, the matrix in half `opsel_hi` (OPSEL[2]) of each; D's other
// half is C's.
AmdMatrixResult amd_wmma_f16(std::span<const AmdMatrixLane> lanes, bool opsel_hi);

}  // namespace tilec::sim::isa
