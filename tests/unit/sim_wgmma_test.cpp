// The simulator's wgmma models (sim/warpgroup_mma.h) against the PTX ISA's own tables and
// worked examples, never against what tilec's codegen assumes (issue 12):
//  - the matrix descriptor's bit fields (start 0-13, LBO 16-29, SBO 32-45, base offset
//    49-51, swizzle 62-63; matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4);
//  - 9.7.15.5.1.2.1.3 "Canonical Layouts": the examples of Figures 166-170, whose exact
//    CuTe layouts the document prints with their LBO / SBO (checked element by element,
//    in bytes: the document's layouts count elements);
//  - Table 41's repeat boundaries of the swizzle patterns (1024 / 512 / 256 bytes) and
//    Swizzle<s,4,3> on addresses (16-byte chunks XOR the row within the pattern);
//  - Figure 149 (m64nNk16 accumulator): warp w owns rows 16w..16w+15, thread 0 holds
//    (0,0), (0,1), (8,0), (8,1) and the same every 8 columns; the map is a bijection;
//  - D of a whole wgmma against a float64 product of matrices written into shared memory
//    here through the canonical layouts' formulas above;
//  - Figure 148 (m64nNk16 A in registers, .f16 / .bf16): entries of the figure, and the
//    whole of it as CuTe's ALayout_64x16 prints it; the register form's D with A put
//    into the threads' registers through that CuTe layout.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "scalar/float_formats.h"
#include "sim/warpgroup_mma.h"

using namespace tilec::sim::isa;

namespace {

WgmmaDescriptor desc(uint32_t lbo, uint32_t sbo, WgmmaSwizzle s, uint32_t start = 0) {
    WgmmaDescriptor d;
    d.start = start;
    d.lbo = lbo;
    d.sbo = sbo;
    d.swizzle = s;
    return d;
}

}  // namespace

TEST_CASE("wgmma descriptor: the bit fields of the matrix descriptor format", "[sim][wgmma]") {
    WgmmaDescriptor d = desc(256, 1024, WgmmaSwizzle::B128, 0x2340);
    uint64_t bits = encode_wgmma_descriptor(d);
    CHECK((bits & 0x3FFF) == (0x2340 >> 4));
    CHECK(((bits >> 16) & 0x3FFF) == 256 / 16);
    CHECK(((bits >> 32) & 0x3FFF) == 1024 / 16);
    CHECK(((bits >> 62) & 0x3) == 1);  // 1 = 128B
    CHECK(((bits >> 49) & 0x7) == 0);
    WgmmaDescriptor back = decode_wgmma_descriptor(bits);
    CHECK(back.start == 0x2340);
    CHECK(back.lbo == 256);
    CHECK(back.sbo == 1024);
    CHECK(back.swizzle == WgmmaSwizzle::B128);
    // Modes 2 and 3 are 64B and 32B; only bits 4..17 of an address are encoded.
    CHECK(decode_wgmma_descriptor(uint64_t(2) << 62).swizzle == WgmmaSwizzle::B64);
    CHECK(decode_wgmma_descriptor(uint64_t(3) << 62).swizzle == WgmmaSwizzle::B32);
    CHECK(decode_wgmma_descriptor(encode_wgmma_descriptor(desc(0, 0, WgmmaSwizzle::None, 0x40000 + 0x30))).start ==
          0x30);
}

TEST_CASE("wgmma canonical layouts: the document's worked examples (Figures 166-170)", "[sim][wgmma]") {
    SECTION("K-major, no swizzling, tf32: ((8,2),(4,4)):((4,32),(1,64)), LBO 64*4, SBO 32*4") {
        WgmmaDescriptor d = desc(64 * 4, 32 * 4, WgmmaSwizzle::None);
        for (int r = 0; r < 8; ++r)
            for (int m1 = 0; m1 < 2; ++m1)
                for (int c = 0; c < 4; ++c)
                    for (int k1 = 0; k1 < 4; ++k1)
                        CHECK(wgmma_canonical_offset(d, false, 4, r + 8 * m1, c + 4 * k1) ==
                              4u * (r * 4 + m1 * 32 + c * 1 + k1 * 64));
    }
    SECTION("K-major, 32B swizzling, tf32: ((8,2),(4,4)):((8,64),(1,4)), SBO 64*4 (one k8 step)") {
        WgmmaDescriptor d = desc(16, 64 * 4, WgmmaSwizzle::B32);
        for (int r = 0; r < 8; ++r)
            for (int m1 = 0; m1 < 2; ++m1)
                for (int c = 0; c < 4; ++c)
                    for (int k1 = 0; k1 < 2; ++k1)
                        CHECK(wgmma_canonical_offset(d, false, 4, r + 8 * m1, c + 4 * k1) ==
                              4u * (r * 8 + m1 * 64 + c * 1 + k1 * 4));
    }
    SECTION("MN-major, no swizzling, bf16: ((8,1,2),(8,2)):((1,8,64),(8,128)), LBO 128*2, SBO 64*2") {
        WgmmaDescriptor d = desc(128 * 2, 64 * 2, WgmmaSwizzle::None);
        for (int c = 0; c < 8; ++c)
            for (int m2 = 0; m2 < 2; ++m2)
                for (int r = 0; r < 8; ++r)
                    for (int k1 = 0; k1 < 2; ++k1)
                        CHECK(wgmma_canonical_offset(d, true, 2, c + 8 * m2, r + 8 * k1) ==
                              2u * (c + 64 * m2 + 8 * r + 128 * k1));
    }
    SECTION("MN-major, 32B swizzling, bf16: ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO 128*2, SBO 256*2") {
        WgmmaDescriptor d = desc(128 * 2, 256 * 2, WgmmaSwizzle::B32);
        for (int c = 0; c < 8; ++c)
            for (int j = 0; j < 2; ++j)
                for (int m2 = 0; m2 < 2; ++m2)
                    for (int r = 0; r < 8; ++r)
                        for (int k1 = 0; k1 < 2; ++k1)
                            CHECK(wgmma_canonical_offset(d, true, 2, c + 8 * j + 16 * m2, r + 8 * k1) ==
                                  2u * (c + 8 * j + 128 * m2 + 16 * r + 256 * k1));
    }
    SECTION("MN-major, 64B swizzling, bf16: ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO 256*2, SBO 512*2") {
        WgmmaDescriptor d = desc(256 * 2, 512 * 2, WgmmaSwizzle::B64);
        for (int c = 0; c < 8; ++c)
            for (int j = 0; j < 4; ++j)
                for (int m2 = 0; m2 < 2; ++m2)
                    for (int r = 0; r < 8; ++r)
                        for (int k1 = 0; k1 < 2; ++k1)
                            CHECK(wgmma_canonical_offset(d, true, 2, c + 8 * j + 32 * m2, r + 8 * k1) ==
                                  2u * (c + 8 * j + 256 * m2 + 32 * r + 512 * k1));
    }
}

TEST_CASE("wgmma swizzle: Swizzle<s,4,3> on addresses, repeating at Table 41's boundaries", "[sim][wgmma]") {
    struct Mode {
        WgmmaSwizzle s;
        uint32_t width, period;
    };
    for (Mode m : {Mode{WgmmaSwizzle::B128, 128, 1024}, Mode{WgmmaSwizzle::B64, 64, 512}, Mode{WgmmaSwizzle::B32, 32, 256}}) {
        CAPTURE(m.width);
        for (uint32_t addr = 0; addr < 4 * m.period; addr += 2) {
            uint32_t row = (addr / 128) % (m.width / 16);  // address bits 7.. within the pattern
            uint32_t chunk = (addr / 16) % (m.width / 16);
            uint32_t want = addr - chunk * 16 + ((chunk ^ row) * 16);
            REQUIRE(wgmma_swizzle_address(m.s, addr) == want);
            // The same pattern one repeat further on; the 16 bytes of a chunk stay together.
            CHECK(wgmma_swizzle_address(m.s, addr + m.period) == want + m.period);
            CHECK(wgmma_swizzle_address(m.s, addr) % 16 == addr % 16);
        }
    }
    CHECK(wgmma_swizzle_address(WgmmaSwizzle::None, 0x1234) == 0x1234);
}

TEST_CASE("wgmma accumulator fragment m64nNk16 (Figure 149)", "[sim][wgmma]") {
    // Thread 0: (0,0), (0,1), (8,0), (8,1), then the same 8 columns on.
    CHECK(wgmma_d_coord(0, 0).row == 0);
    CHECK(wgmma_d_coord(0, 0).col == 0);
    CHECK(wgmma_d_coord(0, 1).col == 1);
    CHECK(wgmma_d_coord(0, 2).row == 8);
    CHECK(wgmma_d_coord(0, 3).row == 8);
    CHECK(wgmma_d_coord(0, 3).col == 1);
    CHECK(wgmma_d_coord(0, 4).col == 8);
    // Warp w: rows 16w..16w+15; a quad shares a row, neighbouring column pairs.
    CHECK(wgmma_d_coord(32, 0).row == 16);
    CHECK(wgmma_d_coord(96 + 31, 0).row == 48 + 7);
    CHECK(wgmma_d_coord(1, 0).col == 2);
    CHECK(wgmma_d_coord(3, 1).col == 7);
    CHECK(wgmma_d_coord(4, 0).row == 1);
    // A bijection onto 64 x N for N = 256.
    std::set<std::pair<int, int>> seen;
    for (int t = 0; t < 128; ++t)
        for (int i = 0; i < 128; ++i) {
            MatCoord at = wgmma_d_coord(t, i);
            REQUIRE(at.row < 64);
            REQUIRE(at.col < 256);
            seen.insert({at.row, at.col});
        }
    CHECK(seen.size() == 64u * 256u);
}

TEST_CASE("wgmma m64nNk16: D = A * B + C through descriptors, every major-ness and swizzle", "[sim][wgmma]") {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> small(-8, 8);
    const int N = 24;
    struct Case {
        bool trans_a, trans_b;
        WgmmaSwizzle sa, sb;
    };
    for (Case cs : {Case{false, false, WgmmaSwizzle::B64, WgmmaSwizzle::B128}, Case{false, true, WgmmaSwizzle::B128, WgmmaSwizzle::B32},
                    Case{true, false, WgmmaSwizzle::B128, WgmmaSwizzle::B64}, Case{true, true, WgmmaSwizzle::None, WgmmaSwizzle::None}}) {
        CAPTURE(cs.trans_a, cs.trans_b, int(cs.sa), int(cs.sb));
        std::vector<uint8_t> smem(64 * 1024, 0);
        std::vector<double> A(64 * 16), B(16 * N);
        // Strides that hold each operand without overlap: K-major rows of the swizzle
        // width (the whole K of 16 fits in 32 bytes), 8-row groups SBO apart; MN-major
        // rows of the width along MN, blocks of it LBO apart, 8-row k groups SBO apart.
        auto place = [&](WgmmaSwizzle s, bool mn_major, int mn_extent, uint32_t start) {
            const uint32_t W = wgmma_swizzle_bytes(s), blocks = uint32_t((mn_extent + 7) / 8);
            WgmmaDescriptor d = desc(16, 0, s, start);
            if (s == WgmmaSwizzle::None) {
                // 8 x 16-byte core matrices: the mn groups SBO apart, the second 8 k after all.
                d.sbo = 128;
                d.lbo = 128 * blocks;
            } else if (!mn_major) {
                d.sbo = 8 * W;  // rows of W bytes along k, 8-row groups
            } else {
                d.sbo = 8 * W;      // k rows of W bytes along mn, 8-row k groups
                d.lbo = 2 * 8 * W;  // the next W bytes of mn after both k groups
            }
            return d;
        };
        WgmmaDescriptor da = place(cs.sa, cs.trans_a, 64, 0);
        WgmmaDescriptor db = place(cs.sb, cs.trans_b, N, 32 * 1024);
        std::set<uint32_t> used;
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < 16; ++k) {
                double v = small(rng);
                A[m * 16 + k] = v;
                uint32_t at = wgmma_operand_address(da, cs.trans_a, 2, m, k);
                REQUIRE(used.insert(at).second);
                uint16_t bits = tilec::scalar::f16_bits(v);
                smem[at] = uint8_t(bits), smem[at + 1] = uint8_t(bits >> 8);
            }
        for (int k = 0; k < 16; ++k)
            for (int n = 0; n < N; ++n) {
                double v = small(rng);
                B[k * N + n] = v;
                uint32_t at = wgmma_operand_address(db, cs.trans_b, 2, n, k);
                REQUIRE(used.insert(at).second);
                uint16_t bits = tilec::scalar::f16_bits(v);
                smem[at] = uint8_t(bits), smem[at + 1] = uint8_t(bits >> 8);
            }
        std::vector<std::vector<float>> c(128, std::vector<float>(N / 2));
        for (auto& row : c)
            for (auto& x : row) x = float(small(rng));
        std::array<bool, 128> all{};
        all.fill(true);
        WgmmaResult r = ptx_wgmma_m64nNk16_f32(N, MmaAbType::F16, encode_wgmma_descriptor(da), encode_wgmma_descriptor(db),
                                               true, cs.trans_a, cs.trans_b, smem, c, all);
        REQUIRE(r.issues.empty());
        for (int t = 0; t < 128; ++t)
            for (int i = 0; i < N / 2; ++i) {
                int warp = t / 32, lane = t % 32;  // Figure 149, written out here
                int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
                double want = c[t][i];
                for (int k = 0; k < 16; ++k) want += A[row * 16 + k] * B[k * N + col];
                REQUIRE(r.d[t][i] == want);
            }
    }
}

TEST_CASE("wgmma m64nNk16: problems reported", "[sim][wgmma]") {
    std::vector<uint8_t> smem(1024, 0);
    std::vector<std::vector<float>> c(128, std::vector<float>(4));
    std::array<bool, 128> all{};
    all.fill(true);
    WgmmaDescriptor d = desc(16, 128, WgmmaSwizzle::None);
    auto run = [&](int n, const WgmmaDescriptor& a, const std::array<bool, 128>& ex) {
        return ptx_wgmma_m64nNk16_f32(n, MmaAbType::F16, encode_wgmma_descriptor(a), encode_wgmma_descriptor(d), true,
                                      false, false, smem, c, ex);
    };
    CHECK(run(12, d, all).issues.at(0).problem == WgmmaProblem::BadN);
    auto ex = all;
    ex[37] = false;
    auto r = run(8, d, ex);
    REQUIRE(!r.issues.empty());
    CHECK(r.issues[0].problem == WgmmaProblem::ThreadNotExecuting);
    CHECK(r.issues[0].thread == 37);
    WgmmaDescriptor far = desc(16, 128, WgmmaSwizzle::None, 960);
    CHECK(run(8, far, all).issues.at(0).problem == WgmmaProblem::OutOfBounds);
    WgmmaDescriptor based = d;
    based.base_offset = 3;
    CHECK(run(8, based, all).issues.at(0).problem == WgmmaProblem::BaseOffsetNotModelled);
}

TEST_CASE("wgmma m64nNk32 .e4m3 / .e5m2: D = A * B + C, K-major operands through every swizzle", "[sim][wgmma]") {
    // The 8-bit form (9.7.15.5: `.m64nNk32.f32.atype.btype`, no imm-trans) reads both
    // operands K-major. The canonical K-major layouts in bytes, with T = 128 / 8 = 16
    // elements a core-matrix row, written out here from the document's table:
    //   none:  (mn % 8) * 16 + (mn / 8) * SBO + (k % 16) + (k / 16) * LBO
    //   W-byte swizzle (32 / 64 / 128): (mn % 8) * W + (mn / 8) * SBO + k, then
    //          Swizzle<s,4,3> on the address: bits [4, 4 + s) ^= bits [7, 7 + s).
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> small(-6, 6);  // exact in e4m3 and e5m2
    const int N = 16, K = 32;
    struct Case {
        WgmmaAbType ta, tb;
        WgmmaSwizzle sa, sb;
    };
    auto place = [](WgmmaSwizzle s, int mn, int k, uint32_t start, uint32_t mn_extent) {
        const uint32_t W = wgmma_swizzle_bytes(s);
        if (s == WgmmaSwizzle::None) {
            const uint32_t sbo = 128, lbo = 128 * ((mn_extent + 7) / 8);
            return start + uint32_t(mn % 8) * 16 + uint32_t(mn / 8) * sbo + uint32_t(k % 16) + uint32_t(k / 16) * lbo;
        }
        const uint32_t bits = W == 32 ? 1 : W == 64 ? 2 : 3;
        uint32_t addr = start + uint32_t(mn % 8) * W + uint32_t(mn / 8) * (8 * W) + uint32_t(k);
        return addr ^ (((addr >> 7) & ((1u << bits) - 1)) << 4);
    };
    for (Case cs : {Case{WgmmaAbType::E4m3, WgmmaAbType::E4m3, WgmmaSwizzle::B64, WgmmaSwizzle::B32},
                    Case{WgmmaAbType::E4m3, WgmmaAbType::E5m2, WgmmaSwizzle::B128, WgmmaSwizzle::B128},
                    Case{WgmmaAbType::E5m2, WgmmaAbType::E4m3, WgmmaSwizzle::None, WgmmaSwizzle::B64},
                    Case{WgmmaAbType::E5m2, WgmmaAbType::E5m2, WgmmaSwizzle::B32, WgmmaSwizzle::None}}) {
        CAPTURE(int(cs.ta), int(cs.tb), int(cs.sa), int(cs.sb));
        auto descriptor = [](WgmmaSwizzle s, uint32_t start, uint32_t mn_extent) {
            const uint32_t W = wgmma_swizzle_bytes(s);
            if (s == WgmmaSwizzle::None) return desc(128 * ((mn_extent + 7) / 8), 128, s, start);
            return desc(16, 8 * W, s, start);
        };
        auto bits_of = [](WgmmaAbType t, double v) {
            return t == WgmmaAbType::E4m3 ? tilec::scalar::f8e4m3_bits(v) : tilec::scalar::f8e5m2_bits(v);
        };
        std::vector<uint8_t> smem(64 * 1024, 0);
        std::vector<double> A(64 * K), B(K * N);
        std::set<uint32_t> used;
        const uint32_t start_b = 32 * 1024;
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < K; ++k) {
                double v = small(rng);
                A[m * K + k] = v;
                uint32_t at = place(cs.sa, m, k, 0, 64);
                REQUIRE(used.insert(at).second);
                smem[at] = bits_of(cs.ta, v);
            }
        for (int k = 0; k < K; ++k)
            for (int n = 0; n < N; ++n) {
                double v = small(rng);
                B[k * N + n] = v;
                uint32_t at = place(cs.sb, n, k, start_b, N);
                REQUIRE(used.insert(at).second);
                smem[at] = bits_of(cs.tb, v);
            }
        std::vector<std::vector<float>> c(128, std::vector<float>(N / 2));
        for (auto& row : c)
            for (auto& x : row) x = float(small(rng));
        std::array<bool, 128> all{};
        all.fill(true);
        WgmmaDescriptor da = descriptor(cs.sa, 0, 64), db = descriptor(cs.sb, start_b, N);
        WgmmaResult r = ptx_wgmma_f32(N, cs.ta, cs.tb, encode_wgmma_descriptor(da), encode_wgmma_descriptor(db), true,
                                      false, false, smem, c, all);
        REQUIRE(r.issues.empty());
        for (int t = 0; t < 128; ++t)
            for (int i = 0; i < N / 2; ++i) {
                int warp = t / 32, lane = t % 32;  // Figure 149 (the k32 shapes share it)
                int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
                double want = c[t][i];
                for (int k = 0; k < K; ++k) want += A[row * K + k] * B[k * N + col];
                REQUIRE(r.d[t][i] == want);
            }
    }
    // No transposed 8-bit operand: the instruction has no imm-trans for them.
    std::vector<uint8_t> smem(4096, 0);
    std::vector<std::vector<float>> c(128, std::vector<float>(4));
    std::array<bool, 128> all{};
    all.fill(true);
    uint64_t d = encode_wgmma_descriptor(desc(16, 128, WgmmaSwizzle::None));
    CHECK(ptx_wgmma_f32(8, WgmmaAbType::E4m3, WgmmaAbType::E4m3, d, d, true, false, true, smem, c, all)
              .issues.at(0)
              .problem == WgmmaProblem::TransposedEightBit);
    CHECK(wgmma_k(WgmmaAbType::E5m2) == 32);
    CHECK(wgmma_k(WgmmaAbType::Bf16) == 16);
}

// The register form's A (PTX ISA 9.7.15.5.1.1.1, "Multiplicand A in registers", Figure
// 148 "WGMMA .m64nNk16 register fragment layout for matrix A"): entries of the figure,
// thread Tn's element ai at (row, col) of the 64 x 16 tile. Warp 0 holds rows 0..15:
// row 0 reads T0:a0 T0:a1 T1:a0 T1:a1 ... T3:a1 in columns 0..7, then T0:a4 T0:a5 ...
// in columns 8..15; row 8 holds the same threads' a2, a3 (columns 0..7) and a6, a7
// (8..15); row 1 starts with T4; warp 1 (T32..) starts at row 16.
TEST_CASE("wgmma A fragment in registers m64nNk16 (Figure 148)", "[sim][wgmma]") {
    struct Entry {
        int thread, i, row, col;
    };
    for (Entry e : {Entry{0, 0, 0, 0}, Entry{0, 1, 0, 1}, Entry{1, 0, 0, 2}, Entry{3, 1, 0, 7}, Entry{0, 4, 0, 8},
                    Entry{0, 5, 0, 9}, Entry{3, 5, 0, 15}, Entry{0, 2, 8, 0}, Entry{0, 3, 8, 1}, Entry{0, 6, 8, 8},
                    Entry{0, 7, 8, 9}, Entry{4, 0, 1, 0}, Entry{31, 7, 15, 15}, Entry{32, 0, 16, 0},
                    Entry{64 + 5, 2, 32 + 9, 2}, Entry{127, 7, 63, 15}}) {
        CAPTURE(e.thread, e.i);
        CHECK(wgmma_a_coord(e.thread, e.i).row == e.row);
        CHECK(wgmma_a_coord(e.thread, e.i).col == e.col);
    }
    // The whole figure as the text that reproduces it gives it (CuTe's ALayout_64x16,
    // cute/atom/mma_traits_sm90_gmma.hpp): (thread, value) -> m + 64 k through
    // ((4,8,4),(2,2,2)) : ((128,1,16),(64,8,512)); value i is a_i. A bijection onto 64 x 16.
    std::set<std::pair<int, int>> seen;
    for (int t = 0; t < 128; ++t)
        for (int v = 0; v < 8; ++v) {
            int idx = 128 * (t % 4) + 1 * (t / 4 % 8) + 16 * (t / 32) + 64 * (v % 2) + 8 * (v / 2 % 2) + 512 * (v / 4);
            CAPTURE(t, v);
            REQUIRE(wgmma_a_coord(t, v).row == idx % 64);
            REQUIRE(wgmma_a_coord(t, v).col == idx / 64);
            seen.insert({idx % 64, idx / 64});
        }
    CHECK(seen.size() == 64u * 16u);
}

TEST_CASE("wgmma m64nNk16 with A in registers: D = A * B + C", "[sim][wgmma]") {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> small(-8, 8);
    const int N = 32;
    for (bool trans_b : {false, true})
        for (MmaAbType ab : {MmaAbType::F16, MmaAbType::Bf16}) {
            CAPTURE(trans_b, int(ab));
            std::vector<uint8_t> smem(16 * 1024, 0);
            std::vector<double> A(64 * 16), B(16 * N);
            // B through a 64-byte swizzle: K-major rows of 64 bytes (16 k of 2 bytes fit),
            // 8-row groups SBO = 512 apart; MN-major: k rows of 64 bytes along n, 8-row k
            // groups SBO = 512 apart, the next 32 n LBO = 1024 further.
            WgmmaDescriptor db = desc(trans_b ? 1024 : 16, 512, WgmmaSwizzle::B64, 4096);
            auto bits = [&](double v) { return ab == MmaAbType::Bf16 ? tilec::scalar::bf16_bits(v) : tilec::scalar::f16_bits(v); };
            std::set<uint32_t> used;
            for (int k = 0; k < 16; ++k)
                for (int n = 0; n < N; ++n) {
                    double v = small(rng);
                    B[k * N + n] = v;
                    uint32_t at = wgmma_operand_address(db, trans_b, 2, n, k);
                    REQUIRE(used.insert(at).second);
                    uint16_t b = bits(v);
                    smem[at] = uint8_t(b), smem[at + 1] = uint8_t(b >> 8);
                }
            // A into the threads' registers through CuTe's ALayout_64x16 (the text of
            // Figure 148), not through the model's formula.
            std::vector<std::vector<float>> a(128, std::vector<float>(8));
            for (int m = 0; m < 64; ++m)
                for (int k = 0; k < 16; ++k) A[m * 16 + k] = small(rng);
            for (int t = 0; t < 128; ++t)
                for (int v = 0; v < 8; ++v) {
                    int idx = 128 * (t % 4) + (t / 4 % 8) + 16 * (t / 32) + 64 * (v % 2) + 8 * (v / 2 % 2) + 512 * (v / 4);
                    a[t][v] = float(A[(idx % 64) * 16 + idx / 64]);
                }
            std::vector<std::vector<float>> c(128, std::vector<float>(N / 2));
            for (auto& row : c)
                for (auto& x : row) x = float(small(rng));
            std::array<bool, 128> all{};
            all.fill(true);
            WgmmaResult r = ptx_wgmma_rs_f32(N, ab == MmaAbType::Bf16 ? WgmmaAbType::Bf16 : WgmmaAbType::F16, a,
                                             encode_wgmma_descriptor(db), true, trans_b, smem, c, all);
            REQUIRE(r.issues.empty());
            for (int t = 0; t < 128; ++t)
                for (int i = 0; i < N / 2; ++i) {
                    int warp = t / 32, lane = t % 32;  // Figure 149, written out here
                    int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
                    double want = c[t][i];
                    for (int k = 0; k < 16; ++k) want += A[row * 16 + k] * B[k * N + col];
                    REQUIRE(r.d[t][i] == want);
                }
            // A permuted register (thread 5's a0 and a2 swapped: (1,2) and (9,2)) changes D.
            std::swap(a[5][0], a[5][2]);
            WgmmaResult bad = ptx_wgmma_rs_f32(N, ab == MmaAbType::Bf16 ? WgmmaAbType::Bf16 : WgmmaAbType::F16, a,
                                               encode_wgmma_descriptor(db), true, trans_b, smem, c, all);
            bool differs = false;
            for (int t = 0; t < 128; ++t)
                for (int i = 0; i < N / 2; ++i) differs |= bad.d[t][i] != r.d[t][i];
            REQUIRE(A[1 * 16 + 2] != A[9 * 16 + 2]);  // the swap moves a value (this seed)
            CHECK(differs);
        }
}

TEST_CASE("wgmma m64nNk16 with A in registers: problems reported", "[sim][wgmma]") {
    std::vector<uint8_t> smem(4096, 0);
    std::vector<std::vector<float>> c(128, std::vector<float>(4)), a(128, std::vector<float>(8, 1.0f));
    std::array<bool, 128> all{};
    all.fill(true);
    uint64_t db = encode_wgmma_descriptor(desc(16, 128, WgmmaSwizzle::None));
    auto run = [&](int n, WgmmaAbType t, const std::vector<std::vector<float>>& av, const std::array<bool, 128>& ex) {
        return ptx_wgmma_rs_f32(n, t, av, db, true, false, smem, c, ex);
    };
    CHECK(run(8, WgmmaAbType::F16, a, all).issues.empty());
    CHECK(run(12, WgmmaAbType::F16, a, all).issues.at(0).problem == WgmmaProblem::BadN);
    // Four .f16x2 registers a thread, no fewer: thread 70 gives 6 elements.
    auto short_a = a;
    short_a[70].resize(6);
    auto r = run(8, WgmmaAbType::F16, short_a, all);
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].problem == WgmmaProblem::ARegisterCount);
    CHECK(r.issues[0].thread == 70);
    CHECK(run(8, WgmmaAbType::E4m3, a, all).issues.at(0).problem == WgmmaProblem::ARegisterType);
    auto ex = all;
    ex[3] = false;
    r = run(8, WgmmaAbType::Bf16, a, ex);
    REQUIRE(!r.issues.empty());
    CHECK(r.issues[0].problem == WgmmaProblem::ThreadNotExecuting);
    CHECK(r.issues[0].thread == 3);
}
