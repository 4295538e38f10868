// The simulator's models of AMD's matrix instructions (sim/wave_mfma.h) against AMD's
// Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator), never
// against what tilec's codegen assumes (issue 13):
//  - its "Matrix element to register mapping" table (element -> GPR, bits, lane), the
//    other direction of the formulas the model transcribes, for every element;
//  - single entries it printed with --get-register (quoted below);
//  - D = A * B + C against a float64 product, the operands packed into GPRs here from the
//    element -> register table (not through the model's coordinate functions);
//  - a lane that does not take part, and RDNA3's duplicated A/B (lanes l and l + 16),
//    reported.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "scalar/float_formats.h"
#include "sim/wave_mfma.h"

using namespace tilec::sim::isa;

namespace {

// Where the calculator's "Matrix element to register mapping with no modifiers" puts an
// A[i][k] (B[k][j]: the same with j for i) and a C/D[i][j] element.
struct Place {
    int gpr, half, lane;
};
// Lanes holding it: WMMA's A/B are held by lanes i and i + 16 ("Lane: i and i+16").
std::vector<Place> table_ab(AmdMatrixShape s, int i, int k) {
    switch (s) {
    // 32x32x8 A[i][k] GPR: (floor(k / 2) % 2).[16*(k % 2)+15 : 16*(k % 2)], Lane: 32 * floor(k / 4) + i
    case AmdMatrixShape::Mfma32x32x8: return {{(k / 2) % 2, k % 2, 32 * (k / 4) + i}};
    // 16x16x16 A[i][k] GPR: (floor(k / 2) % 2).[...], Lane: 16 * floor(k / 4) + i
    case AmdMatrixShape::Mfma16x16x16: return {{(k / 2) % 2, k % 2, 16 * (k / 4) + i}};
    // RDNA3 wave32 A[i][k] GPR: floor(k / 2).[16*(k % 2)+15 : 16*(k % 2)], Lane: i and i+16
    case AmdMatrixShape::Wmma16x16x16: return {{k / 2, k % 2, i}, {k / 2, k % 2, i + 16}};
    // The i8 instructions; `half` is the byte here, bits [8*(k % 4)+7 : 8*(k % 4)]:
    // CDNA2 V_MFMA_I32_32X32X8I8 A[i][k] GPR: 0.[8*(k % 4)+7 : 8*(k % 4)], Lane: 32 * floor(k / 4) + i
    case AmdMatrixShape::Mfma32x32x8I8: return {{0, k % 4, 32 * (k / 4) + i}};
    // CDNA2 V_MFMA_I32_16X16X16I8 A[i][k] GPR: 0.[...], Lane: 16 * floor(k / 4) + i
    case AmdMatrixShape::Mfma16x16x16I8: return {{0, k % 4, 16 * (k / 4) + i}};
    // CDNA3 V_MFMA_I32_32X32X16_I8 A[i][k] GPR: (floor(k / 4) % 2).[8*(k % 4)+7 : 8*(k % 4)],
    // Lane: 32 * floor(k / 8) + i
    case AmdMatrixShape::Mfma32x32x16I8: return {{(k / 4) % 2, k % 4, 32 * (k / 8) + i}};
    // CDNA3 V_MFMA_I32_16X16X32_I8 A[i][k] GPR: (floor(k / 4) % 2).[...], Lane: 16 * floor(k / 8) + i
    case AmdMatrixShape::Mfma16x16x32I8: return {{(k / 4) % 2, k % 4, 16 * (k / 8) + i}};
    // RDNA3 V_WMMA_I32_16X16X16_IU8 wave32 A[i][k] GPR: floor(k / 4).[8*(k % 4)+7 : 8*(k % 4)],
    // Lane: i and i+16
    case AmdMatrixShape::Wmma16x16x16I8: return {{k / 4, k % 4, i}, {k / 4, k % 4, i + 16}};
    // CDNA3 V_MFMA_F32_16X16X32_FP8_FP8 (and the other three type pairs) A[i][k] GPR:
    // (floor(k / 4) % 2).[8*(k % 4)+7 : 8*(k % 4)], Lane: 16 * floor(k / 8) + i
    case AmdMatrixShape::Mfma16x16x32F8: return {{(k / 4) % 2, k % 4, 16 * (k / 8) + i}};
    // CDNA3 V_MFMA_F32_32X32X16_FP8_FP8: as V_MFMA_I32_32X32X16_I8, Lane: 32 * floor(k / 8) + i
    case AmdMatrixShape::Mfma32x32x16F8: return {{(k / 4) % 2, k % 4, 32 * (k / 8) + i}};
    }
    return {};
}
// Elements of A / B per GPR: 16-bit halves, or i8 bytes.
int per_gpr(AmdMatrixShape s) {
    return s == AmdMatrixShape::Mfma32x32x8I8 || s == AmdMatrixShape::Mfma16x16x16I8 ||
                   s == AmdMatrixShape::Mfma32x32x16I8 || s == AmdMatrixShape::Mfma16x16x32I8 ||
                   s == AmdMatrixShape::Wmma16x16x16I8 || s == AmdMatrixShape::Mfma16x16x32F8 ||
                   s == AmdMatrixShape::Mfma32x32x16F8
               ? 4
               : 2;
}
Place table_cd(AmdMatrixShape s, int i, int j) {
    switch (s) {
    // C or D[i][j] GPR: 4 * floor(i / 8) + (i % 4), Lane: (32 * floor(i / 4)) % 64 + j
    case AmdMatrixShape::Mfma32x32x8: return {4 * (i / 8) + i % 4, 0, (32 * (i / 4)) % 64 + j};
    // C or D[i][j] GPR: (i % 4), Lane: 16 * floor(i / 4) + j
    case AmdMatrixShape::Mfma16x16x16: return {i % 4, 0, 16 * (i / 4) + j};
    // RDNA3 wave32 C or D[i][j] GPR: floor(i / 2), Lane: ((16 * i) % 32) + j
    case AmdMatrixShape::Wmma16x16x16:
    // (V_WMMA_I32_16X16X16_IU8 wave32: "C or D[i][j] GPR: floor(i / 2), Lane: ((16 * i) % 32) + j".)
    case AmdMatrixShape::Wmma16x16x16I8: return {i / 2, 0, (16 * i) % 32 + j};
    // The i8 ones: V_MFMA_I32_32X32X8I8 and _32X32X16_I8 "C or D[i][j] GPR: 4 * floor(i / 8) +
    // (i % 4), Lane: (32 * floor(i / 4)) % 64 + j"; _16X16X16I8 and _16X16X32_I8 "GPR: (i % 4),
    // Lane: 16 * floor(i / 4) + j".
    case AmdMatrixShape::Mfma32x32x8I8:
    case AmdMatrixShape::Mfma32x32x16I8:
    case AmdMatrixShape::Mfma32x32x16F8: return {4 * (i / 8) + i % 4, 0, (32 * (i / 4)) % 64 + j};
    case AmdMatrixShape::Mfma16x16x16I8:
    case AmdMatrixShape::Mfma16x16x32I8:
    // V_MFMA_F32_16X16X32_FP8_FP8: "C or D[i][j] GPR: (i % 4)", "Lane: 16 * floor(i / 4) + j".
    case AmdMatrixShape::Mfma16x16x32F8: return {i % 4, 0, 16 * (i / 4) + j};
    }
    return {};
}

const AmdMatrixShape kI8Shapes[] = {AmdMatrixShape::Mfma32x32x8I8, AmdMatrixShape::Mfma16x16x16I8,
                                    AmdMatrixShape::Mfma32x32x16I8, AmdMatrixShape::Mfma16x16x32I8,
                                    AmdMatrixShape::Wmma16x16x16I8};

const AmdMatrixShape kF8Shapes[] = {AmdMatrixShape::Mfma32x32x16F8, AmdMatrixShape::Mfma16x16x32F8};

const AmdMatrixShape kShapes[] = {AmdMatrixShape::Mfma32x32x8, AmdMatrixShape::Mfma16x16x16,
                                  AmdMatrixShape::Wmma16x16x16};

}  // namespace

TEST_CASE("wave mfma: register counts of the calculator's 'Register usage'", "[sim][mfma]") {
    // 32x32x8: GPRs required for A: 2, B: 2, C: 16; 16x16x16: 2, 2, 4; RDNA3 WMMA f32
    // (wave32): A 8, B 8, C 8.
    auto a = amd_matrix_info(AmdMatrixShape::Mfma32x32x8);
    CHECK((a.a_regs == 2 && a.b_regs == 2 && a.c_regs == 16 && a.wave == 64));
    auto b = amd_matrix_info(AmdMatrixShape::Mfma16x16x16);
    CHECK((b.a_regs == 2 && b.b_regs == 2 && b.c_regs == 4 && b.wave == 64));
    auto c = amd_matrix_info(AmdMatrixShape::Wmma16x16x16);
    CHECK((c.a_regs == 8 && c.b_regs == 8 && c.c_regs == 8 && c.wave == 32));
}

TEST_CASE("wave mfma: the model's coordinates invert the calculator's element-to-register table",
          "[sim][mfma]") {
    std::vector<AmdMatrixShape> all(std::begin(kShapes), std::end(kShapes));
    all.insert(all.end(), std::begin(kI8Shapes), std::end(kI8Shapes));
    all.insert(all.end(), std::begin(kF8Shapes), std::end(kF8Shapes));
    for (AmdMatrixShape s : all) {
        auto info = amd_matrix_info(s);
        for (int i = 0; i < info.m; ++i)
            for (int k = 0; k < info.k; ++k)
                for (const Place& p : table_ab(s, i, k)) {
                    AmdMatCoord a = amd_matrix_a_coord(s, p.lane, per_gpr(s) * p.gpr + p.half);
                    AmdMatCoord b = amd_matrix_b_coord(s, p.lane, per_gpr(s) * p.gpr + p.half);
                    REQUIRE((a.row == i && a.col == k));
                    REQUIRE((b.row == k && b.col == i));
                }
        for (int i = 0; i < info.m; ++i)
            for (int j = 0; j < info.n; ++j) {
                Place p = table_cd(s, i, j);
                AmdMatCoord c = amd_matrix_c_coord(s, p.lane, p.gpr);
                REQUIRE((c.row == i && c.col == j));
            }
    }
}

TEST_CASE("wave mfma: entries the calculator printed with --get-register", "[sim][mfma]") {
    // CDNA3 V_MFMA_F32_32X32X8_F16: "A[5][6] = v1{37}.[15:0]", "D[13][7] = v5{39}".
    auto a = amd_matrix_a_coord(AmdMatrixShape::Mfma32x32x8, 37, 2 * 1 + 0);
    CHECK((a.row == 5 && a.col == 6));
    auto d = amd_matrix_c_coord(AmdMatrixShape::Mfma32x32x8, 39, 5);
    CHECK((d.row == 13 && d.col == 7));
    // CDNA2 V_MFMA_F32_32X32X8BF16_1K: "C[30][17] = v14{49}".
    auto c2 = amd_matrix_c_coord(AmdMatrixShape::Mfma32x32x8, 49, 14);
    CHECK((c2.row == 30 && c2.col == 17));
    // CDNA3 V_MFMA_F32_16X16X16_BF16: "B[11][3] = v1{35}.[31:16]".
    auto b = amd_matrix_b_coord(AmdMatrixShape::Mfma16x16x16, 35, 2 * 1 + 1);
    CHECK((b.row == 11 && b.col == 3));
    // CDNA3 V_MFMA_F32_16X16X16_F16: "C[14][9] = v2{57}".
    auto c = amd_matrix_c_coord(AmdMatrixShape::Mfma16x16x16, 57, 2);
    CHECK((c.row == 14 && c.col == 9));
    // RDNA3 V_WMMA_F32_16X16X16_F16, wave32: "D[11][4] = v5{20}", "A[3][9] = v4{3}.[31:16]"
    // and "A[3][9] = v4{19}.[31:16]".
    auto w = amd_matrix_c_coord(AmdMatrixShape::Wmma16x16x16, 20, 5);
    CHECK((w.row == 11 && w.col == 4));
    for (int lane : {3, 19}) {
        auto wa = amd_matrix_a_coord(AmdMatrixShape::Wmma16x16x16, lane, 2 * 4 + 1);
        CHECK((wa.row == 3 && wa.col == 9));
    }
    // i8 (byte e % 4 of GPR e / 4): CDNA3 V_MFMA_I32_32X32X16_I8 "A[5][13] = v1{37}.[15:8]"
    // and "D[13][7] = v5{39}"; CDNA2 V_MFMA_I32_32X32X8I8 "B[6][20] = v0{52}.[23:16]".
    auto ia = amd_matrix_a_coord(AmdMatrixShape::Mfma32x32x16I8, 37, 4 * 1 + 1);
    CHECK((ia.row == 5 && ia.col == 13));
    auto id = amd_matrix_c_coord(AmdMatrixShape::Mfma32x32x16I8, 39, 5);
    CHECK((id.row == 13 && id.col == 7));
    auto ib = amd_matrix_b_coord(AmdMatrixShape::Mfma32x32x8I8, 52, 2);
    CHECK((ib.row == 6 && ib.col == 20));
}

TEST_CASE("wave mfma: D = A * B + C against a float64 product, f16 and bf16", "[sim][mfma]") {
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> small(-8, 8);
    for (AmdMatrixShape s : kShapes)
        for (AmdMatrixAb ab : {AmdMatrixAb::F16, AmdMatrixAb::Bf16}) {
            auto info = amd_matrix_info(s);
            // Small integers: every product and partial sum is exact in f32.
            std::vector<double> A(info.m * info.k), B(info.k * info.n), C(info.m * info.n);
            for (auto& v : A) v = small(rng);
            for (auto& v : B) v = small(rng);
            for (auto& v : C) v = small(rng) * 4;
            std::vector<AmdMatrixLane> lanes(static_cast<size_t>(info.wave));
            auto bits16 = [&](double v) {
                return ab == AmdMatrixAb::F16 ? tilec::scalar::f16_bits(v) : tilec::scalar::bf16_bits(v);
            };
            for (int i = 0; i < info.m; ++i)
                for (int k = 0; k < info.k; ++k)
                    for (const Place& p : table_ab(s, i, k)) {
                        lanes[p.lane].a[p.gpr] |= uint32_t(bits16(A[i * info.k + k])) << (16 * p.half);
                        lanes[p.lane].b[p.gpr] |= uint32_t(bits16(B[k * info.n + i])) << (16 * p.half);
                    }
            for (int i = 0; i < info.m; ++i)
                for (int j = 0; j < info.n; ++j) {
                    Place p = table_cd(s, i, j);
                    lanes[p.lane].c[p.gpr] = std::bit_cast<uint32_t>(static_cast<float>(C[i * info.n + j]));
                }
            AmdMatrixResult r = amd_matrix_f32(s, ab, lanes);
            REQUIRE(r.issues.empty());
            for (int i = 0; i < info.m; ++i)
                for (int j = 0; j < info.n; ++j) {
                    double want = C[i * info.n + j];
                    for (int k = 0; k < info.k; ++k) want += A[i * info.k + k] * B[k * info.n + j];
                    Place p = table_cd(s, i, j);
                    REQUIRE(std::bit_cast<float>(r.d[p.lane][p.gpr]) == want);
                }
        }
}

TEST_CASE("wave mfma: a lane that does not take part, and differing WMMA copies, are reported", "[sim][mfma]") {
    std::vector<AmdMatrixLane> wave(64);
    wave[40].executes = false;
    wave[63].exited = true;
    auto r = amd_matrix_f32(AmdMatrixShape::Mfma32x32x8, AmdMatrixAb::F16, wave);
    REQUIRE(r.issues.size() == 2);
    CHECK((r.issues[0].problem == AmdMatrixProblem::LaneNotExecuting && r.issues[0].lane == 40));
    CHECK((r.issues[1].problem == AmdMatrixProblem::LaneExited && r.issues[1].lane == 63));

    std::vector<AmdMatrixLane> w32(32);
    w32[21].a[3] = 0x3c00;  // lane 21's A row 5 differs from lane 5's
    auto q = amd_matrix_f32(AmdMatrixShape::Wmma16x16x16, AmdMatrixAb::F16, w32);
    REQUIRE(q.issues.size() == 1);
    CHECK((q.issues[0].problem == AmdMatrixProblem::WmmaReplicaDiffers && q.issues[0].lane == 21));
}

// i8 into i32 (issue 13): CDNA2's V_MFMA_I32_32X32X8I8 / 16X16X16I8 and CDNA3's
// V_MFMA_I32_32X32X16_I8 / 16X16X32_I8, from the calculator's tables above.
TEST_CASE("wave mfma i8: register counts of the calculator's 'Register usage'", "[sim][mfma]") {
    // CDNA2 32x32x8i8: A 1, B 1, C 16; 16x16x16i8: 1, 1, 4; CDNA3 32x32x16_i8: 2, 2, 16;
    // 16x16x32_i8: 2, 2, 4; RDNA3 V_WMMA_I32_16X16X16_IU8 "Wave32 register usage": 4, 4, 8.
    const int want[5][4] = {{1, 1, 16, 64}, {1, 1, 4, 64}, {2, 2, 16, 64}, {2, 2, 4, 64}, {4, 4, 8, 32}};
    for (int n = 0; n < 5; ++n) {
        auto info = amd_matrix_info(kI8Shapes[n]);
        CHECK((info.a_regs == want[n][0] && info.b_regs == want[n][1] && info.c_regs == want[n][2] &&
               info.wave == want[n][3]));
    }
    CHECK(amd_matrix_i8_shape(32, 16) == AmdMatrixShape::Mfma32x32x16I8);
    CHECK(amd_matrix_i8_shape(16, 16) == AmdMatrixShape::Mfma16x16x16I8);
    CHECK(!amd_matrix_i8_shape(32, 32));
}

TEST_CASE("wave mfma i8: D = A * B + C in int32 (signed bytes, the calculator's int8 / int32 types)",
          "[sim][mfma]") {
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> byte(-128, 127);
    for (AmdMatrixShape s : kI8Shapes) {
        auto info = amd_matrix_info(s);
        std::vector<int64_t> A(info.m * info.k), B(info.k * info.n), C(info.m * info.n);
        for (auto& v : A) v = byte(rng);
        for (auto& v : B) v = byte(rng);
        for (auto& v : C) v = int64_t(byte(rng)) * 100000;
        A[0] = -128, B[0] = -128;  // the extremes: (-128) * (-128) = 16384
        std::vector<AmdMatrixLane> lanes(static_cast<size_t>(info.wave));
        for (int i = 0; i < info.m; ++i)
            for (int k = 0; k < info.k; ++k) {
                for (const Place& p : table_ab(s, i, k)) {
                    lanes[p.lane].a[p.gpr] |= uint32_t(uint8_t(int8_t(A[i * info.k + k]))) << (8 * p.half);
                    lanes[p.lane].b[p.gpr] |= uint32_t(uint8_t(int8_t(B[k * info.n + i]))) << (8 * p.half);
                }
            }
        for (int i = 0; i < info.m; ++i)
            for (int j = 0; j < info.n; ++j) {
                Place p = table_cd(s, i, j);
                lanes[p.lane].c[p.gpr] = uint32_t(int32_t(C[i * info.n + j]));
            }
        AmdMatrixResult r = amd_matrix_i32(s, lanes);
        REQUIRE(r.issues.empty());
        for (int i = 0; i < info.m; ++i)
            for (int j = 0; j < info.n; ++j) {
                int64_t want = C[i * info.n + j];
                for (int k = 0; k < info.k; ++k) want += A[i * info.k + k] * B[k * info.n + j];
                Place p = table_cd(s, i, j);
                REQUIRE(int32_t(r.d[p.lane][p.gpr]) == want);
            }
    }
    // A lane left out is reported, as for the float forms.
    std::vector<AmdMatrixLane> wave(64);
    wave[9].executes = false;
    auto q = amd_matrix_i32(AmdMatrixShape::Mfma32x32x16I8, wave);
    REQUIRE(q.issues.size() == 1);
    CHECK((q.issues[0].problem == AmdMatrixProblem::LaneNotExecuting && q.issues[0].lane == 9));
}

// CDNA3's fp8 / bf8 into f32 (issue 13): V_MFMA_F32_32X32X16_{FP8,BF8}_{FP8,BF8} and
// 16X16X32_*, the FNUZ formats ("FP8 (AMD 4-bit exponent, 3-bit mantissa floating point)";
// bias 8 / 16, 0x80 NaN: scalar/float_formats.h). The values below are the formats'
// own (240, 57344, 2^-10, 2^-17), written here, not computed by the decoders.
namespace {

const AmdMatrixAb kF8Types[] = {AmdMatrixAb::Fp8, AmdMatrixAb::Bf8};

// Lanes holding A (m x k) and B (k x n) as the calculator's table places them, C = 0.
std::vector<AmdMatrixLane> pack_f8(AmdMatrixShape s, const std::vector<uint8_t>& A, const std::vector<uint8_t>& B) {
    auto info = amd_matrix_info(s);
    std::vector<AmdMatrixLane> lanes(static_cast<size_t>(info.wave));
    for (int i = 0; i < info.m; ++i)
        for (int k = 0; k < info.k; ++k)
            for (const Place& p : table_ab(s, i, k)) {
                lanes[p.lane].a[p.gpr] |= uint32_t(A[i * info.k + k]) << (8 * p.half);
                lanes[p.lane].b[p.gpr] |= uint32_t(B[k * info.n + i]) << (8 * p.half);
            }
    return lanes;
}

float d_at(AmdMatrixShape s, const AmdMatrixResult& r, int i, int j) {
    Place p = table_cd(s, i, j);
    return std::bit_cast<float>(r.d[p.lane][p.gpr]);
}

}  // namespace

TEST_CASE("wave mfma fp8: register counts of the calculator's 'Register usage'", "[sim][mfma][fp8]") {
    // V_MFMA_F32_16X16X32_FP8_FP8: "GPRs required for A: 2, B: 2, C: 4"; 32X32X16: 2, 2, 16.
    auto a = amd_matrix_info(AmdMatrixShape::Mfma16x16x32F8);
    CHECK((a.m == 16 && a.k == 32 && a.a_regs == 2 && a.b_regs == 2 && a.c_regs == 4 && a.wave == 64));
    auto b = amd_matrix_info(AmdMatrixShape::Mfma32x32x16F8);
    CHECK((b.m == 32 && b.k == 16 && b.a_regs == 2 && b.b_regs == 2 && b.c_regs == 16 && b.wave == 64));
    CHECK(amd_matrix_f8_shape(16, 32) == AmdMatrixShape::Mfma16x16x32F8);
    CHECK(amd_matrix_f8_shape(32, 16) == AmdMatrixShape::Mfma32x32x16F8);
    CHECK(!amd_matrix_f8_shape(32, 8));
    // The calculator's formula for 16X16X32_FP8_FP8, lane 37, GPR 1, bits [15:8]:
    // "A i: (lane % 16)" = 5, "A k: 8 * floor(lane / 16) + 4 * GPR_num + floor(GPR_bits / 8)" = 21.
    auto e = amd_matrix_a_coord(AmdMatrixShape::Mfma16x16x32F8, 37, 4 * 1 + 1);
    CHECK((e.row == 5 && e.col == 21));
}

TEST_CASE("wave mfma fp8: D = A * B + C against a float64 product, all four type pairs", "[sim][mfma][fp8]") {
    std::mt19937 rng(942);
    // Bytes of a narrow exponent range (e4m3fnuz: exponent fields 7..10, 0.5 .. 7.5;
    // e5m2fnuz: 15..18, 0.5 .. 7), so every sum of 32 products is exact in f32 and the
    // order of the additions cannot matter; their values from the fields, here.
    auto random_byte = [&](AmdMatrixAb t, double& value) {
        const int sign = int(rng() % 2), man_bits = t == AmdMatrixAb::Fp8 ? 3 : 2, bias = t == AmdMatrixAb::Fp8 ? 8 : 16;
        const int e = (bias - 1) + int(rng() % 4), m = int(rng() % (1u << man_bits));
        value = (sign ? -1 : 1) * std::ldexp(1.0 + double(m) / (1 << man_bits), e - bias);
        return uint8_t(sign << 7 | e << man_bits | m);
    };
    for (AmdMatrixShape s : kF8Shapes)
        for (AmdMatrixAb at : kF8Types)
            for (AmdMatrixAb bt : kF8Types) {
                auto info = amd_matrix_info(s);
                std::vector<uint8_t> A(info.m * info.k), B(info.k * info.n);
                std::vector<double> Av(A.size()), Bv(B.size());
                for (size_t x = 0; x < A.size(); ++x) A[x] = random_byte(at, Av[x]);
                for (size_t x = 0; x < B.size(); ++x) B[x] = random_byte(bt, Bv[x]);
                std::vector<AmdMatrixLane> lanes = pack_f8(s, A, B);
                std::vector<double> C(info.m * info.n);
                for (int i = 0; i < info.m; ++i)
                    for (int j = 0; j < info.n; ++j) {
                        C[i * info.n + j] = double(int(rng() % 17) - 8);
                        Place p = table_cd(s, i, j);
                        lanes[p.lane].c[p.gpr] = std::bit_cast<uint32_t>(float(C[i * info.n + j]));
                    }
                AmdMatrixResult r = amd_matrix_f32(s, at, bt, lanes);
                REQUIRE(r.issues.empty());
                for (int i = 0; i < info.m; ++i)
                    for (int j = 0; j < info.n; ++j) {
                        double want = C[i * info.n + j];
                        for (int k = 0; k < info.k; ++k) want += Av[i * info.k + k] * Bv[k * info.n + j];
                        REQUIRE(d_at(s, r, i, j) == want);
                    }
            }
}

TEST_CASE("wave mfma fp8: FNUZ specials: 0x80 is NaN, the largest values, subnormals", "[sim][mfma][fp8]") {
    for (AmdMatrixShape s : kF8Shapes)
        for (AmdMatrixAb at : kF8Types)
            for (AmdMatrixAb bt : kF8Types) {
                auto info = amd_matrix_info(s);
                const double max_a = at == AmdMatrixAb::Fp8 ? 240.0 : 57344.0, max_b = bt == AmdMatrixAb::Fp8 ? 240.0 : 57344.0;
                const double min_a = std::ldexp(1.0, at == AmdMatrixAb::Fp8 ? -10 : -17);
                const double min_b = std::ldexp(1.0, bt == AmdMatrixAb::Fp8 ? -10 : -17);
                std::vector<uint8_t> A(info.m * info.k, 0), B(info.k * info.n, 0);
                // K = 3 (the last k of the first lane group's run and a GPR's top byte).
                const int k = 3;
                A[0 * info.k + k] = 0x7f;  // +max
                A[1 * info.k + k] = 0x81;  // -(smallest subnormal)
                A[2 * info.k + k] = 0x80;  // NaN
                A[3 * info.k + k] = 0x00;
                B[k * info.n + 0] = 0xff;  // -max
                B[k * info.n + 1] = 0x01;  // +(smallest subnormal)
                AmdMatrixResult r = amd_matrix_f32(s, at, bt, pack_f8(s, A, B));
                REQUIRE(r.issues.empty());
                CHECK(d_at(s, r, 0, 0) == -max_a * max_b);
                CHECK(d_at(s, r, 0, 1) == max_a * min_b);
                CHECK(d_at(s, r, 1, 0) == min_a * max_b);
                CHECK(d_at(s, r, 1, 1) == -min_a * min_b);
                for (int j = 0; j < info.n; ++j) CHECK(std::isnan(d_at(s, r, 2, j)));  // NaN * 0 too
                CHECK(d_at(s, r, 3, 0) == 0.0f);
                CHECK(d_at(s, r, 0, 2) == 0.0f);
            }
}

// RDNA3 V_WMMA_F16_16X16X16_F16, wave32, from the calculator (--detail-instruction,
// --register-layout and --get-register with and without --opsel 4): A and B as the f32
// WMMA's; "C or D[i][j] GPR: (floor(i / 2)).[15:0], Lane: ((16 * i) % 32) + j", and with
// OPSEL = 4 (OPSEL[2] = 1) every C / D entry in bits [31:16] of the same GPR and lane.
namespace {

Place table_cd_f16(int i, int j, bool opsel_hi) { return {i / 2, opsel_hi ? 1 : 0, (16 * i) % 32 + j}; }

// A, B (table_ab of the f32 WMMA: the calculator prints the same A / B rows for both) and
// C's selected halves from matrices of f16 values; C's other halves `other`.
std::vector<AmdMatrixLane> wmma_f16_lanes(const std::vector<double>& A, const std::vector<double>& B,
                                          const std::vector<double>& C, bool opsel_hi, uint16_t other) {
    std::vector<AmdMatrixLane> lanes(32);
    for (int i = 0; i < 16; ++i)
        for (int k = 0; k < 16; ++k)
            for (const Place& p : table_ab(AmdMatrixShape::Wmma16x16x16, i, k)) {
                lanes[p.lane].a[p.gpr] |= uint32_t(tilec::scalar::f16_bits(A[i * 16 + k])) << (16 * p.half);
                lanes[p.lane].b[p.gpr] |= uint32_t(tilec::scalar::f16_bits(B[k * 16 + i])) << (16 * p.half);
            }
    for (auto& lane : lanes)
        for (int g = 0; g < 8; ++g) lane.c[g] = uint32_t(other) << (opsel_hi ? 0 : 16);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            Place p = table_cd_f16(i, j, opsel_hi);
            lanes[p.lane].c[p.gpr] |= uint32_t(tilec::scalar::f16_bits(C[i * 16 + j])) << (16 * p.half);
        }
    return lanes;
}

uint16_t half_of(uint32_t gpr, int half) { return static_cast<uint16_t>(gpr >> (16 * half)); }

}  // namespace

TEST_CASE("wave wmma f16: D = A * B + C in the half OPSEL[2] picks, against a float64 product",
          "[sim][mfma][wmma_f16]") {
    std::mt19937 rng(16);
    std::uniform_int_distribution<int> small(-8, 8);
    for (bool opsel_hi : {false, true}) {
        // Small integers: every product and sum is exact in f16 (|d| <= 16 * 64 + 32).
        std::vector<double> A(256), B(256), C(256);
        for (auto& v : A) v = small(rng);
        for (auto& v : B) v = small(rng);
        for (auto& v : C) v = small(rng) * 4;
        const uint16_t other = 0x5a5a;  // C's other half, which D keeps
        AmdMatrixResult r = amd_wmma_f16(wmma_f16_lanes(A, B, C, opsel_hi, other), opsel_hi);
        REQUIRE(r.issues.empty());
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                double want = C[i * 16 + j];
                for (int k = 0; k < 16; ++k) want += A[i * 16 + k] * B[k * 16 + j];
                Place p = table_cd_f16(i, j, opsel_hi);
                const uint32_t d = r.d[p.lane][p.gpr];
                REQUIRE(tilec::scalar::f16_value(half_of(d, p.half)) == want);
                REQUIRE(half_of(d, 1 - p.half) == other);
            }
    }
}

TEST_CASE("wave wmma f16: entries the calculator printed with --get-register", "[sim][mfma][wmma_f16]") {
    // "D[11][4] = v5{20}.[15:0]", with --opsel 4 "D[11][4] = v5{20}.[31:16]"; with --opsel 4
    // "C[6][13] = v3{13}.[31:16]". A = B = 0: D is C, so a C entry alone shows where D's is.
    for (bool opsel_hi : {false, true}) {
        std::vector<AmdMatrixLane> lanes(32);
        lanes[20].c[5] = uint32_t(0x4700) << (opsel_hi ? 16 : 0);  // 7.0
        AmdMatrixResult r = amd_wmma_f16(lanes, opsel_hi);
        REQUIRE(r.issues.empty());
        for (int l = 0; l < 32; ++l)
            for (int g = 0; g < 8; ++g)
                CHECK(r.d[l][g] == (l == 20 && g == 5 ? uint32_t(0x4700) << (opsel_hi ? 16 : 0) : 0u));
    }
    std::vector<double> A(256, 0.0), B(256, 0.0), C(256, 0.0);
    A[6 * 16 + 2] = 3, B[2 * 16 + 13] = 5;  // D[6][13] = 15, every other element 0
    AmdMatrixResult r = amd_wmma_f16(wmma_f16_lanes(A, B, C, true, 0), true);
    CHECK(r.d[13][3] == uint32_t(tilec::scalar::f16_bits(15)) << 16);
}

TEST_CASE("wave wmma f16: d is rounded to f16 once, after an f32 sum (the model's choice, as mma.sync .f16)",
          "[sim][mfma][wmma_f16]") {
    // The documents do not say how partial sums round; the model sums in f32 and rounds d
    // once (round to nearest even). 2048 + 16 * 0.5: f16's ulp at 2048 is 2, so rounding
    // each step (2048 + 0.5 -> 2048) would leave 2048; one rounding gives 2056 exactly.
    std::vector<double> A(256, 1.0), B(256, 0.5), C(256, 2048.0);
    AmdMatrixResult r = amd_wmma_f16(wmma_f16_lanes(A, B, C, false, 0), false);
    CHECK(tilec::scalar::f16_value(half_of(r.d[0][0], 0)) == 2056.0);
    // 2048 + 1 is a tie between 2048 and 2050: to even, 2048; 2048 + 3 -> 2052.
    std::vector<double> one(256, 0.0), three(256, 0.0);
    for (int k = 0; k < 2; ++k) one[k * 16] = 0.5;    // B column 0: two halves -> + 1
    for (int k = 0; k < 6; ++k) three[k * 16] = 0.5;  // six halves -> + 3
    AmdMatrixResult r1 = amd_wmma_f16(wmma_f16_lanes(A, one, C, false, 0), false);
    AmdMatrixResult r3 = amd_wmma_f16(wmma_f16_lanes(A, three, C, false, 0), false);
    CHECK(tilec::scalar::f16_value(half_of(r1.d[0][0], 0)) == 2048.0);
    CHECK(tilec::scalar::f16_value(half_of(r3.d[0][0], 0)) == 2052.0);
    // Past f16's largest finite value (65504): 65504 + 32 rounds to +Inf.
    std::vector<double> big(256, 65504.0), two(256, 2.0);
    AmdMatrixResult ro = amd_wmma_f16(wmma_f16_lanes(A, two, big, false, 0), false);
    CHECK(half_of(ro.d[0][0], 0) == 0x7c00);
}

TEST_CASE("wave wmma f16: a lane that does not take part is reported", "[sim][mfma][wmma_f16]") {
    std::vector<AmdMatrixLane> w32(32);
    w32[7].executes = false;
    auto r = amd_wmma_f16(w32, false);
    REQUIRE(r.issues.size() == 1);
    CHECK((r.issues[0].problem == AmdMatrixProblem::LaneNotExecuting && r.issues[0].lane == 7));
}
