// The simulator's ISA models of the tensor-core instructions (sim/warp_mma.h) against the
// PTX ISA's own statements, figures and formulas, never against what tilec's codegen
// assumes (issue 11):
//  - 9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix": its Figure 104 of the
//    8x8 b16 fragment as the text describes it (a group of four threads loads a row;
//    thread 0 receives the first fragment), the row addresses from lanes 0-7 / 8-15 /
//    16-23 / 24-31, .trans = column-major, the natural 16-byte alignment of row
//    addresses, "undefined ... if any thread in the warp has exited";
//  - 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type" and
//    9.7.14.5.7 "... mma.m16n8k8": the a_i / b_i / c_i row/col formulas, checked as a
//    bijection onto the matrices and at the figure's corners; D checked against a
//    float64 product computed here from fragments this file packs itself (from the
//    figures' register tables, not through the model's coordinate functions);
//    9.7.14.5.10 "... mma.m16n8k32" (.s8) likewise, against the exact integer product;
//  - cp.async, 9.7.9.25.3.2 cp.async.commit_group, 9.7.9.25.3.3 cp.async.wait_group: the
//    wait_group example (three groups, "cp.async.wait_group 1; // waits for group 1 and
//    group 2 to complete"), zero fill past src-size, the empty group, wait_all, and the
//    missing wait reported.
#include <catch2/catch.hpp>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>

#include "scalar/float_formats.h"
#include "sim/warp_mma.h"

using namespace tilec::sim::isa;

namespace {

// ldmatrix: element (matrix j, row, col) encoded as a distinct b16 value.
uint16_t enc(int j, int row, int col) {
    return static_cast<uint16_t>(0x1000 + (j << 8) | (row << 4) | col);
}

// Four 8x8 matrices laid out in a 1 KiB view with rows scattered (not contiguous, rows of
// one matrix in a permuted order): row `row` of matrix j at row_addr(j, row).
uint32_t row_addr(int j, int row) {
    return static_cast<uint32_t>(16 * ((row * 5 + j * 11 + 3) % 64));
}

std::vector<uint8_t> ldmatrix_memory() {
    std::vector<uint8_t> smem(1024, 0xee);
    for (int j = 0; j < 4; ++j)
        for (int row = 0; row < 8; ++row)
            for (int col = 0; col < 8; ++col) {
                const uint16_t v = enc(j, row, col);
                smem[row_addr(j, row) + 2 * col] = static_cast<uint8_t>(v & 0xff);
                smem[row_addr(j, row) + 2 * col + 1] = static_cast<uint8_t>(v >> 8);
            }
    return smem;
}

std::array<LdmatrixLane, 32> ldmatrix_lanes(int num) {
    std::array<LdmatrixLane, 32> lanes{};
    for (int l = 0; l < 32; ++l) {
        // Lane 8*j + i supplies matrix j's row i; lanes past 8*num are not used: give
        // them misaligned garbage, which must then not matter.
        lanes[l].addr = l < 8 * num ? row_addr(l / 8, l % 8) : 0xdead0001u;
    }
    return lanes;
}

uint16_t lo(uint32_t r) {
    return static_cast<uint16_t>(r & 0xffff);
}
uint16_t hi(uint32_t r) {
    return static_cast<uint16_t>(r >> 16);
}

bool has(const LdmatrixResult& r, LdmatrixProblem p, int lane) {
    for (auto& i : r.issues)
        if (i.problem == p && i.lane == lane) return true;
    return false;
}

}  // namespace

TEST_CASE("warp mma: ldmatrix m8n8 b16 gives each lane the figure's row fragment", "[sim][warp_mma]") {
    const auto smem = ldmatrix_memory();
    for (int num : {1, 2, 4}) {
        INFO("num " << num);
        auto r = ptx_ldmatrix_m8n8_b16(num, false, smem, ldmatrix_lanes(num));
        CHECK(r.issues.empty());
        // "thread 0 receiving the first fragment": row 0, elements 0 and 1.
        CHECK(lo(r.r[0][0]) == enc(0, 0, 0));
        CHECK(hi(r.r[0][0]) == enc(0, 0, 1));
        // Lane 31: row 7, elements 6 and 7 of every matrix.
        for (int j = 0; j < num; ++j) CHECK(r.r[31][j] == (enc(j, 7, 6) | (uint32_t{enc(j, 7, 7)} << 16)));
        // "A group of four threads loads an entire row": lane l, row l/4, cols 2(l%4), +1;
        // register j from matrix j (".x2 ... the next destination register").
        for (int l = 0; l < 32; ++l)
            for (int j = 0; j < num; ++j) {
                CHECK(lo(r.r[l][j]) == enc(j, l / 4, 2 * (l % 4)));
                CHECK(hi(r.r[l][j]) == enc(j, l / 4, 2 * (l % 4) + 1));
            }
        // Every element of every matrix lands in exactly one lane's register.
        std::set<uint16_t> seen;
        for (int l = 0; l < 32; ++l)
            for (int j = 0; j < num; ++j) {
                seen.insert(lo(r.r[l][j]));
                seen.insert(hi(r.r[l][j]));
            }
        CHECK(seen.size() == static_cast<std::size_t>(64 * num));
    }
}

TEST_CASE("warp mma: ldmatrix .trans loads the matrices column-major", "[sim][warp_mma]") {
    const auto smem = ldmatrix_memory();
    for (int num : {1, 2, 4}) {
        INFO("num " << num);
        auto r = ptx_ldmatrix_m8n8_b16(num, true, smem, ldmatrix_lanes(num));
        CHECK(r.issues.empty());
        // The transposed matrix M^T in place of M: lane l holds M^T[l/4][2(l%4)], +1,
        // that is M[2(l%4)][l/4] and M[2(l%4)+1][l/4].
        for (int l = 0; l < 32; ++l)
            for (int j = 0; j < num; ++j) {
                CHECK(lo(r.r[l][j]) == enc(j, 2 * (l % 4), l / 4));
                CHECK(hi(r.r[l][j]) == enc(j, 2 * (l % 4) + 1, l / 4));
            }
        // Transposing twice: the non-trans load of M^T equals the trans load of M.
        std::vector<uint8_t> t(1024, 0);
        for (int j = 0; j < 4; ++j)
            for (int row = 0; row < 8; ++row)
                for (int col = 0; col < 8; ++col) {
                    const uint16_t v = enc(j, col, row);
                    t[row_addr(j, row) + 2 * col] = static_cast<uint8_t>(v & 0xff);
                    t[row_addr(j, row) + 2 * col + 1] = static_cast<uint8_t>(v >> 8);
                }
        auto plain = ptx_ldmatrix_m8n8_b16(num, false, t, ldmatrix_lanes(num));
        for (int l = 0; l < 32; ++l)
            for (int j = 0; j < num; ++j) CHECK(plain.r[l][j] == r.r[l][j]);
    }
}

TEST_CASE("warp mma: ldmatrix reports what the document leaves undefined", "[sim][warp_mma]") {
    const auto smem = ldmatrix_memory();
    SECTION("a row address not naturally (16-byte) aligned") {
        auto lanes = ldmatrix_lanes(2);
        lanes[11].addr += 8;
        auto r = ptx_ldmatrix_m8n8_b16(2, false, smem, lanes);
        REQUIRE(r.issues.size() == 1);
        CHECK(has(r, LdmatrixProblem::RowMisaligned, 11));
        // The rows of other lanes are unaffected.
        CHECK(lo(r.r[0][1]) == enc(1, 0, 0));
    }
    SECTION("an unused lane's address does not matter, a used one's does") {
        auto lanes = ldmatrix_lanes(1);
        lanes[7].addr = 1024;  // one past the view
        auto r = ptx_ldmatrix_m8n8_b16(1, false, smem, lanes);
        REQUIRE(r.issues.size() == 1);
        CHECK(has(r, LdmatrixProblem::RowOutOfBounds, 7));
    }
    SECTION("an exited lane, a lane elsewhere") {
        auto lanes = ldmatrix_lanes(4);
        lanes[20].exited = true;
        lanes[30].executes = false;
        auto r = ptx_ldmatrix_m8n8_b16(4, false, smem, lanes);
        CHECK(has(r, LdmatrixProblem::LaneExited, 20));
        CHECK(has(r, LdmatrixProblem::LaneNotExecuting, 30));
        CHECK(r.issues.size() == 2);
    }
}

namespace {

struct FragCase {
    MmaShape shape;
    int m, n, k;
};
const FragCase kShapes[] = {{MmaShape::M16N8K16, 16, 8, 16}, {MmaShape::M16N8K8, 16, 8, 8}};

// The fragments packed the way the document's figures tabulate the registers (not via
// the model's mma_*_coord): m16n8k16 A: {a0,a1} row g, cols 2t,2t+1; {a2,a3} row g+8;
// {a4,a5} row g, cols 2t+8, 2t+9; {a6,a7} row g+8, cols 2t+8, 2t+9. B: {b0,b1} rows 2t,
// 2t+1 of column g; {b2,b3} rows 2t+8, 2t+9. m16n8k8 A: {a0,a1} row g, {a2,a3} row g+8,
// cols 2t, 2t+1; B: {b0,b1} rows 2t, 2t+1 of column g. C/D: c0,c1 row g, cols 2t, 2t+1;
// c2, c3 row g+8.
template <class Enc>
std::array<MmaLane, 32> pack(const FragCase& s, const std::vector<double>& A, const std::vector<double>& B,
                             const std::vector<float>& C, Enc encode) {
    std::array<MmaLane, 32> lanes{};
    auto pair = [&](double x, double y) { return uint32_t{encode(x)} | (uint32_t{encode(y)} << 16); };
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        auto a = [&](int row, int col) { return A[static_cast<std::size_t>(row * s.k + col)]; };
        auto b = [&](int row, int col) { return B[static_cast<std::size_t>(row * s.n + col)]; };
        auto c = [&](int row, int col) {
            return std::bit_cast<uint32_t>(C[static_cast<std::size_t>(row * s.n + col)]);
        };
        MmaLane& L = lanes[l];
        L.a[0] = pair(a(g, 2 * t), a(g, 2 * t + 1));
        L.a[1] = pair(a(g + 8, 2 * t), a(g + 8, 2 * t + 1));
        L.b[0] = pair(b(2 * t, g), b(2 * t + 1, g));
        if (s.k == 16) {
            L.a[2] = pair(a(g, 2 * t + 8), a(g, 2 * t + 9));
            L.a[3] = pair(a(g + 8, 2 * t + 8), a(g + 8, 2 * t + 9));
            L.b[1] = pair(b(2 * t + 8, g), b(2 * t + 9, g));
        }
        L.c = {c(g, 2 * t), c(g, 2 * t + 1), c(g + 8, 2 * t), c(g + 8, 2 * t + 1)};
    }
    return lanes;
}

// D as the figures place it, read back into a matrix.
std::vector<double> unpack_d(const FragCase& s, const MmaResult& r) {
    std::vector<double> D(static_cast<std::size_t>(s.m * s.n), NAN);
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
        for (int i = 0; i < 4; ++i)
            D[static_cast<std::size_t>(rows[i] * s.n + cols[i])] = std::bit_cast<float>(r.d[l][i]);
    }
    return D;
}

std::vector<double> product64(const FragCase& s, const std::vector<double>& A, const std::vector<double>& B,
                              const std::vector<float>& C) {
    std::vector<double> D(static_cast<std::size_t>(s.m * s.n));
    for (int m = 0; m < s.m; ++m)
        for (int n = 0; n < s.n; ++n) {
            double acc = C[static_cast<std::size_t>(m * s.n + n)];
            for (int k = 0; k < s.k; ++k)
                acc += A[static_cast<std::size_t>(m * s.k + k)] * B[static_cast<std::size_t>(k * s.n + n)];
            D[static_cast<std::size_t>(m * s.n + n)] = acc;
        }
    return D;
}

}  // namespace

TEST_CASE("warp mma: the fragment formulas cover each matrix once, as the figures show", "[sim][warp_mma]") {
    const FragCase all[] = {kShapes[0], kShapes[1], {MmaShape::M16N8K32, 16, 8, 32}};
    for (const FragCase& s : all) {
        const MmaShapeInfo info = mma_shape_info(s.shape);
        CHECK(info.m == s.m);
        CHECK(info.n == s.n);
        CHECK(info.k == s.k);
        CHECK(info.per_reg == (s.k == 32 ? 4 : 2));
        std::set<std::pair<int, int>> a, b, c;
        for (int l = 0; l < 32; ++l) {
            for (int i = 0; i < info.per_reg * info.a_regs; ++i) {
                auto at = mma_a_coord(s.shape, l, i);
                CHECK((at.row >= 0 && at.row < s.m && at.col >= 0 && at.col < s.k));
                a.insert({at.row, at.col});
            }
            for (int i = 0; i < info.per_reg * info.b_regs; ++i) {
                auto at = mma_b_coord(s.shape, l, i);
                CHECK((at.row >= 0 && at.row < s.k && at.col >= 0 && at.col < s.n));
                b.insert({at.row, at.col});
            }
            for (int i = 0; i < info.c_regs; ++i) {
                auto at = mma_c_coord(s.shape, l, i);
                c.insert({at.row, at.col});
            }
        }
        CHECK(a.size() == static_cast<std::size_t>(s.m * s.k));
        CHECK(b.size() == static_cast<std::size_t>(s.k * s.n));
        CHECK(c.size() == static_cast<std::size_t>(s.m * s.n));
    }
    // The m16n8k16 figures' corners: T0 holds a0,a1 at row 0 cols 0,1 and a2 at row 8;
    // T31 (groupID 7, threadID_in_group 3) holds a0 at (7,6) and a7 at (15,15); b0 of T0
    // is (0,0), b3 of T31 is (15,7); c3 of T31 is (15,7).
    auto A = [](int l, int i) {
        auto c = mma_a_coord(MmaShape::M16N8K16, l, i);
        return std::pair{c.row, c.col};
    };
    auto B = [](int l, int i) {
        auto c = mma_b_coord(MmaShape::M16N8K16, l, i);
        return std::pair{c.row, c.col};
    };
    auto C = [](int l, int i) {
        auto c = mma_c_coord(MmaShape::M16N8K16, l, i);
        return std::pair{c.row, c.col};
    };
    CHECK(A(0, 0) == std::pair{0, 0});
    CHECK(A(0, 1) == std::pair{0, 1});
    CHECK(A(0, 2) == std::pair{8, 0});
    CHECK(A(0, 4) == std::pair{0, 8});
    CHECK(A(31, 0) == std::pair{7, 6});
    CHECK(A(31, 7) == std::pair{15, 15});
    CHECK(B(0, 0) == std::pair{0, 0});
    CHECK(B(0, 1) == std::pair{1, 0});
    CHECK(B(31, 3) == std::pair{15, 7});
    CHECK(C(0, 2) == std::pair{8, 0});
    CHECK(C(31, 3) == std::pair{15, 7});
    // m16n8k32 (.s8): T0's a0..a3 are row 0 cols 0..3, a4 is row 8, a8 is row 0 col 16;
    // T31's a15 is (15, 31); T31's b7 is (31, 7).
    auto A32 = [](int l, int i) {
        auto c = mma_a_coord(MmaShape::M16N8K32, l, i);
        return std::pair{c.row, c.col};
    };
    auto B32 = [](int l, int i) {
        auto c = mma_b_coord(MmaShape::M16N8K32, l, i);
        return std::pair{c.row, c.col};
    };
    CHECK(A32(0, 3) == std::pair{0, 3});
    CHECK(A32(0, 4) == std::pair{8, 0});
    CHECK(A32(0, 8) == std::pair{0, 16});
    CHECK(A32(31, 15) == std::pair{15, 31});
    CHECK(B32(0, 3) == std::pair{3, 0});
    CHECK(B32(31, 7) == std::pair{31, 7});
}

TEST_CASE("warp mma: a known matrix round-trips through the fragments", "[sim][warp_mma]") {
    // A = I-like selector: with B = identity-ish columns, D picks out A's entries. Here:
    // A[m][k] distinct small integers, B = the k x n matrix with B[k][n] = (k == n), C = 0:
    // D[m][n] = A[m][n] for n < 8. And A = e_m selectors with B distinct: D = B's rows.
    for (const FragCase& s : kShapes)
        for (MmaAbType ab : {MmaAbType::F16, MmaAbType::Bf16}) {
            auto encode = [ab](double v) {
                return ab == MmaAbType::F16 ? tilec::scalar::f16_bits(v) : tilec::scalar::bf16_bits(v);
            };
            std::vector<double> A(static_cast<std::size_t>(s.m * s.k)),
                B(static_cast<std::size_t>(s.k * s.n), 0.0);
            std::vector<float> C(static_cast<std::size_t>(s.m * s.n), 0.0f);
            for (int m = 0; m < s.m; ++m)
                for (int k = 0; k < s.k; ++k)
                    A[static_cast<std::size_t>(m * s.k + k)] = m * 16 + k;  // < 256: exact in bf16
            for (int n = 0; n < s.n; ++n) B[static_cast<std::size_t>(n * s.n + n)] = 1.0;
            auto r = ptx_mma_sync_f32(s.shape, ab, pack(s, A, B, C, encode));
            CHECK(r.issues.empty());
            auto D = unpack_d(s, r);
            for (int m = 0; m < s.m; ++m)
                for (int n = 0; n < s.n; ++n) CHECK(D[static_cast<std::size_t>(m * s.n + n)] == m * 16 + n);
            // k = 8 + n picks the second half of A's columns when K = 16.
            if (s.k == 16) {
                std::fill(B.begin(), B.end(), 0.0);
                for (int n = 0; n < s.n; ++n) B[static_cast<std::size_t>((8 + n) * s.n + n)] = 1.0;
                auto D2 = unpack_d(s, ptx_mma_sync_f32(s.shape, ab, pack(s, A, B, C, encode)));
                for (int m = 0; m < s.m; ++m)
                    for (int n = 0; n < s.n; ++n)
                        CHECK(D2[static_cast<std::size_t>(m * s.n + n)] == m * 16 + 8 + n);
            }
        }
}

TEST_CASE("warp mma: D = A*B + C matches a float64 product", "[sim][warp_mma]") {
    std::mt19937 rng(11);
    for (const FragCase& s : kShapes)
        for (MmaAbType ab : {MmaAbType::F16, MmaAbType::Bf16}) {
            INFO("k " << s.k << (ab == MmaAbType::F16 ? " f16" : " bf16"));
            auto encode = [ab](double v) {
                return ab == MmaAbType::F16 ? tilec::scalar::f16_bits(v) : tilec::scalar::bf16_bits(v);
            };
            auto decode = [ab](uint16_t b) {
                return ab == MmaAbType::F16 ? tilec::scalar::f16_value(b) : tilec::scalar::bf16_value(b);
            };
            for (int trial = 0; trial < 20; ++trial) {
                // Small integers: every partial sum is exact in f32, so D is exact.
                std::uniform_int_distribution<int> small(-8, 8);
                std::vector<double> A(static_cast<std::size_t>(s.m * s.k)),
                    B(static_cast<std::size_t>(s.k * s.n));
                std::vector<float> C(static_cast<std::size_t>(s.m * s.n));
                for (auto& v : A) v = small(rng);
                for (auto& v : B) v = small(rng);
                for (auto& v : C) v = static_cast<float>(small(rng) * 4);
                auto D = unpack_d(s, ptx_mma_sync_f32(s.shape, ab, pack(s, A, B, C, encode)));
                auto want = product64(s, A, B, C);
                for (std::size_t i = 0; i < D.size(); ++i) CHECK(D[i] == want[i]);

                // Random values in [-1, 1] rounded to the input type: within f32 rounding
                // of the float64 product (K additions, each |error| <= 2^-24 of a partial
                // sum bounded by sum |a*b| + |c|).
                std::uniform_real_distribution<double> unit(-1.0, 1.0);
                for (auto& v : A) v = decode(encode(unit(rng)));
                for (auto& v : B) v = decode(encode(unit(rng)));
                for (auto& v : C) v = static_cast<float>(unit(rng));
                auto Df = unpack_d(s, ptx_mma_sync_f32(s.shape, ab, pack(s, A, B, C, encode)));
                auto wf = product64(s, A, B, C);
                for (int m = 0; m < s.m; ++m)
                    for (int n = 0; n < s.n; ++n) {
                        double bound = std::fabs(C[static_cast<std::size_t>(m * s.n + n)]);
                        for (int k = 0; k < s.k; ++k)
                            bound += std::fabs(A[static_cast<std::size_t>(m * s.k + k)] *
                                               B[static_cast<std::size_t>(k * s.n + n)]);
                        const std::size_t i = static_cast<std::size_t>(m * s.n + n);
                        CHECK(std::fabs(Df[i] - wf[i]) <= bound * s.k * std::ldexp(1.0, -24));
                    }
            }
        }
}

namespace {

// m16n8k32 .s8 fragments packed as the figures tabulate them: A register 0 = row g, cols
// 4t..4t+3 (low byte first); 1 = row g+8; 2 = row g, cols 4t+16..4t+19; 3 = row g+8,
// cols 4t+16..; B register 0 = rows 4t..4t+3 of column g; 1 = rows 4t+16..4t+19.
std::array<MmaLane, 32> pack_s8(const std::vector<int>& A, const std::vector<int>& B,
                                const std::vector<int32_t>& C) {
    std::array<MmaLane, 32> lanes{};
    auto quad = [](int x0, int x1, int x2, int x3) {
        auto u = [](int x) { return uint32_t{static_cast<uint8_t>(static_cast<int8_t>(x))}; };
        return u(x0) | (u(x1) << 8) | (u(x2) << 16) | (u(x3) << 24);
    };
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        auto a = [&](int row, int c0) {
            auto at = [&](int c) { return A[static_cast<std::size_t>(row * 32 + c)]; };
            return quad(at(c0), at(c0 + 1), at(c0 + 2), at(c0 + 3));
        };
        auto b = [&](int r0, int col) {
            auto at = [&](int r) { return B[static_cast<std::size_t>(r * 8 + col)]; };
            return quad(at(r0), at(r0 + 1), at(r0 + 2), at(r0 + 3));
        };
        auto c = [&](int row, int col) {
            return static_cast<uint32_t>(C[static_cast<std::size_t>(row * 8 + col)]);
        };
        lanes[l].a = {a(g, 4 * t), a(g + 8, 4 * t), a(g, 4 * t + 16), a(g + 8, 4 * t + 16)};
        lanes[l].b = {b(4 * t, g), b(4 * t + 16, g)};
        lanes[l].c = {c(g, 2 * t), c(g, 2 * t + 1), c(g + 8, 2 * t), c(g + 8, 2 * t + 1)};
    }
    return lanes;
}

}  // namespace

TEST_CASE("warp mma: m16n8k32 s32.s8.s8.s32 equals the exact integer product", "[sim][warp_mma]") {
    std::mt19937 rng(32);
    std::uniform_int_distribution<int> s8(-128, 127), small(-100000, 100000);
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<int> A(16 * 32), B(32 * 8);
        std::vector<int32_t> C(16 * 8);
        for (auto& v : A) v = s8(rng);
        for (auto& v : B) v = s8(rng);
        for (auto& v : C) v = small(rng);
        auto r = ptx_mma_sync_s32_s8(pack_s8(A, B, C));
        CHECK(r.issues.empty());
        for (int l = 0; l < 32; ++l) {
            const int g = l / 4, t = l % 4;
            const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
            for (int i = 0; i < 4; ++i) {
                int64_t want = C[static_cast<std::size_t>(rows[i] * 8 + cols[i])];
                for (int k = 0; k < 32; ++k)
                    want += int64_t{A[static_cast<std::size_t>(rows[i] * 32 + k)]} *
                            B[static_cast<std::size_t>(k * 8 + cols[i])];
                CHECK(static_cast<int32_t>(r.d[l][i]) == want);
            }
        }
    }
    // Without .satfinite an s32 overflow is reported, not guessed.
    std::vector<int> A(16 * 32, 1), B(32 * 8, 1);
    std::vector<int32_t> C(16 * 8, 0);
    C[3 * 8 + 5] = INT32_MAX;
    auto r = ptx_mma_sync_s32_s8(pack_s8(A, B, C));
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].problem == MmaProblem::Int32Overflow);
    CHECK(r.issues[0].lane == 3 * 8 + 5);
    // The f32 entry point does not take the integer shape.
    CHECK(ptx_mma_sync_f32(MmaShape::M16N8K32, MmaAbType::F16, {}).issues.at(0).problem ==
          MmaProblem::ShapeTypeMismatch);
}

TEST_CASE("warp mma: mma.sync reports exited and absent lanes", "[sim][warp_mma]") {
    std::array<MmaLane, 32> lanes{};
    lanes[5].exited = true;
    lanes[17].executes = false;
    auto r = ptx_mma_sync_f32(MmaShape::M16N8K16, MmaAbType::F16, lanes);
    REQUIRE(r.issues.size() == 2);
    CHECK((r.issues[0].problem == MmaProblem::LaneExited && r.issues[0].lane == 5));
    CHECK((r.issues[1].problem == MmaProblem::LaneNotExecuting && r.issues[1].lane == 17));
}

TEST_CASE("warp mma: f16 and bf16 decoders agree with scalar's exact decoders", "[sim][warp_mma]") {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const uint16_t bits = static_cast<uint16_t>(b);
        const double f = tilec::scalar::f16_value(bits), g = tilec::scalar::bf16_value(bits);
        if (std::isnan(f))
            CHECK(std::isnan(f16_to_float(bits)));
        else if (f16_to_float(bits) != f)
            FAIL("f16 " << b);
        if (std::isnan(g))
            CHECK(std::isnan(bf16_to_float(bits)));
        else if (bf16_to_float(bits) != g)
            FAIL("bf16 " << b);
    }
}

namespace {

std::vector<uint8_t> bytes(uint8_t first, int n) {
    std::vector<uint8_t> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<uint8_t>(first + i);
    return v;
}
bool has(const CpAsyncThread& t, CpAsyncProblem p) {
    for (auto& i : t.issues())
        if (i.problem == p) return true;
    return false;
}

}  // namespace

TEST_CASE("warp mma: cp.async.wait_group 1 completes groups 1 and 2 of three (the document's example)",
          "[sim][warp_mma]") {
    // cp.async.ca.shared.global [shrd3], [gbl3], 8;  commit_group  // End of group 1
    // cp.async.cg.shared.global [shrd4], [gbl4], 16; commit_group  // End of group 2
    // cp.async.cg.shared.global [shrd5], [gbl5], 16; commit_group  // End of group 3
    // cp.async.wait_group 1;  // waits for group 1 and group 2 to complete
    std::vector<uint8_t> smem(256, 0);
    CpAsyncThread t(smem);
    const uint32_t shrd3 = 8, shrd4 = 32, shrd5 = 64;
    const auto g3 = bytes(30, 8), g4 = bytes(40, 16), g5 = bytes(50, 16);
    t.cp_async(shrd3, g3, 8);
    t.commit_group();
    t.cp_async(shrd4, g4, 16, -1, false, /*cg=*/true);
    t.commit_group();
    t.cp_async(shrd5, g5, 16, -1, false, /*cg=*/true);
    t.commit_group();
    CHECK(t.committed_pending_groups() == 3);
    // Nothing has landed before a wait: the model writes at completion only.
    CHECK(smem[shrd3] == 0);
    t.wait_group(1);
    CHECK(t.committed_pending_groups() == 1);
    CHECK(t.issues().empty());
    CHECK(t.read(shrd3, 8) == g3);
    CHECK(t.read(shrd4, 16) == g4);
    CHECK(t.issues().empty());
    // Group 3 is still pending: reading its destination is the missing wait.
    auto early = t.read(shrd5 + 4, 4);
    REQUIRE(t.issues().size() == 1);
    CHECK(t.issues()[0].problem == CpAsyncProblem::ReadBeforeWait);
    CHECK(t.issues()[0].addr == shrd5 + 4);
    CHECK(early == std::vector<uint8_t>(4, 0));  // the old contents
    t.wait_group(0);
    CHECK(t.committed_pending_groups() == 0);
    CHECK(t.read(shrd5, 16) == g5);
    CHECK(t.issues().size() == 1);
}

TEST_CASE("warp mma: cp.async zero fill, empty groups, wait_all, uncommitted copies", "[sim][warp_mma]") {
    std::vector<uint8_t> smem(64, 0xff);
    CpAsyncThread t(smem);
    SECTION("src-size < cp-size: the remaining bytes are filled with zeros; ignore-src: all zeros") {
        t.cp_async(0, bytes(1, 5), 8, 5);
        t.cp_async(16, bytes(1, 16), 16, -1, /*ignore_src=*/true);
        t.wait_all();
        CHECK(t.read(0, 8) == std::vector<uint8_t>{1, 2, 3, 4, 5, 0, 0, 0});
        CHECK(t.read(16, 16) == std::vector<uint8_t>(16, 0));
        CHECK(t.issues().empty());
    }
    SECTION("an empty cp.async-group is trivially complete and still counts as a group") {
        t.cp_async(0, bytes(7, 4), 4);
        t.commit_group();  // group 1
        t.commit_group();  // group 2: empty
        t.wait_group(1);   // group 1 completes: one (the empty one) may stay pending
        CHECK(t.read(0, 4) == bytes(7, 4));
        CHECK(t.issues().empty());
    }
    SECTION("wait_group completes committed groups only; wait_all commits first") {
        t.cp_async(0, bytes(9, 4), 4);
        t.wait_group(0);
        CHECK(t.uncommitted_copies() == 1);
        t.read(0, 4);
        CHECK(has(t, CpAsyncProblem::ReadBeforeWait));
        t.wait_all();
        CHECK(t.uncommitted_copies() == 0);
        CHECK(t.read(0, 4) == bytes(9, 4));
        CHECK(t.issues().size() == 1);
    }
    SECTION("a store to a pending destination is unordered with the copy") {
        t.cp_async(4, bytes(9, 4), 4);
        t.commit_group();
        const std::vector<uint8_t> w{1, 2};
        t.write(6, w);
        CHECK(has(t, CpAsyncProblem::WriteBeforeWait));
    }
}

TEST_CASE("warp mma: cp.async operand constraints from the document", "[sim][warp_mma]") {
    std::vector<uint8_t> smem(64, 0);
    CpAsyncThread t(smem);
    SECTION("cp-size can only be 4, 8 and 16; .cg only 16") {
        t.cp_async(0, bytes(0, 12), 12);
        CHECK(has(t, CpAsyncProblem::BadCpSize));
        CpAsyncThread u(smem);
        u.cp_async(0, bytes(0, 8), 8, -1, false, /*cg=*/true);
        CHECK(has(u, CpAsyncProblem::BadCpSize));
    }
    SECTION("src-size larger than cp-size is undefined") {
        t.cp_async(0, bytes(0, 16), 8, 9);
        CHECK(has(t, CpAsyncProblem::SrcSizeTooLarge));
    }
    SECTION("dst aligned to cp-size, inside the view") {
        t.cp_async(4, bytes(0, 8), 8);
        CHECK(has(t, CpAsyncProblem::DstMisaligned));
        CpAsyncThread u(smem);
        u.cp_async(64, bytes(0, 4), 4);
        CHECK(has(u, CpAsyncProblem::DstOutOfBounds));
    }
    SECTION("two copies of one group to the same location are undefined") {
        t.cp_async(0, bytes(0, 8), 8);
        t.cp_async(4, bytes(0, 4), 4);
        CHECK(has(t, CpAsyncProblem::SameDstInGroup));
        CpAsyncThread u(smem);
        u.cp_async(0, bytes(0, 8), 8);
        u.commit_group();
        u.cp_async(0, bytes(0, 8), 8);  // another group: ordered by waits, not reported here
        CHECK(u.issues().empty());
    }
}

// Issue 11, the other dtypes. Each packs its fragments from the section's register table
// as written in the document (not through the model's coordinate functions).

TEST_CASE("warp mma: m16n8k32 .u8 operands are unsigned (PTX ISA 9.7.14.5.10, .u8)", "[sim][warp_mma]") {
    std::mt19937 rng(8);
    std::uniform_int_distribution<int> u8(0, 255), small(-100000, 100000);
    std::vector<int> A(16 * 32), B(32 * 8);
    std::vector<int32_t> C(16 * 8);
    for (auto& v : A) v = u8(rng);
    for (auto& v : B) v = u8(rng);
    for (auto& v : C) v = small(rng);
    auto r = ptx_mma_sync_s32_s8(pack_s8(A, B, C), /*a_unsigned=*/true, /*b_unsigned=*/true);
    CHECK(r.issues.empty());
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
        for (int i = 0; i < 4; ++i) {
            int64_t want = C[static_cast<std::size_t>(rows[i] * 8 + cols[i])];
            for (int k = 0; k < 32; ++k)
                want += int64_t{A[static_cast<std::size_t>(rows[i] * 32 + k)]} * B[static_cast<std::size_t>(k * 8 + cols[i])];
            CHECK(static_cast<int32_t>(r.d[l][i]) == want);
        }
    }
    // The same bytes read as .s8 give another (signed) product: the flag matters.
    auto s = ptx_mma_sync_s32_s8(pack_s8(A, B, C));
    CHECK(s.d != r.d);
}

namespace {

// m16n8k8 .tf32 fragments as 9.7.14.5.7 (Figure 72 and the formulas under it) lists
// them: A a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4); B b0 =
// (t, g), b1 = (t + 4, g); C c0..c3 = (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
// `junk` is or-ed into the low 13 bits of every A and B register.
std::array<MmaLane, 32> pack_tf32(const std::vector<float>& A, const std::vector<float>& B,
                                  const std::vector<float>& C, uint32_t junk) {
    std::array<MmaLane, 32> lanes{};
    auto bits = [&](float v) { return std::bit_cast<uint32_t>(v) | junk; };
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        auto a = [&](int row, int col) { return bits(A[static_cast<std::size_t>(row * 8 + col)]); };
        auto b = [&](int row, int col) { return bits(B[static_cast<std::size_t>(row * 8 + col)]); };
        auto c = [&](int row, int col) { return std::bit_cast<uint32_t>(C[static_cast<std::size_t>(row * 8 + col)]); };
        lanes[l].a = {a(g, t), a(g + 8, t), a(g, t + 4), a(g + 8, t + 4)};
        lanes[l].b = {b(t, g), b(t + 4, g)};
        lanes[l].c = {c(g, 2 * t), c(g, 2 * t + 1), c(g + 8, 2 * t), c(g + 8, 2 * t + 1)};
    }
    return lanes;
}

}  // namespace

TEST_CASE("warp mma: m16n8k8 .tf32 fragments and product (PTX ISA 9.7.14.5.7, Figure 72)", "[sim][warp_mma]") {
    // The formulas cover A (16 x 8) and B (8 x 8) once each.
    const MmaShapeInfo info = mma_shape_info(MmaShape::M16N8K8, MmaAbType::Tf32);
    CHECK((info.per_reg == 1 && info.a_regs == 4 && info.b_regs == 2));
    std::set<std::pair<int, int>> a, b;
    for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < 4; ++i) a.insert({mma_a_coord(MmaShape::M16N8K8, l, i, MmaAbType::Tf32).row,
                                              mma_a_coord(MmaShape::M16N8K8, l, i, MmaAbType::Tf32).col});
        for (int i = 0; i < 2; ++i) b.insert({mma_b_coord(MmaShape::M16N8K8, l, i, MmaAbType::Tf32).row,
                                              mma_b_coord(MmaShape::M16N8K8, l, i, MmaAbType::Tf32).col});
    }
    CHECK((a.size() == 128 && a.begin()->first == 0 && a.rbegin()->first == 15 && a.rbegin()->second == 7));
    CHECK((b.size() == 64 && b.rbegin()->first == 7 && b.rbegin()->second == 7));
    // Values with few significant bits: D exact, and the low 13 bits do not count.
    std::mt19937 rng(19);
    std::uniform_int_distribution<int> small(-64, 64);
    std::vector<float> A(16 * 8), B(8 * 8), C(16 * 8);
    for (auto& v : A) v = static_cast<float>(small(rng)) / 8;
    for (auto& v : B) v = static_cast<float>(small(rng));
    for (auto& v : C) v = static_cast<float>(small(rng));
    for (uint32_t junk : {0u, 0x1fffu, 0x0155u}) {
        auto r = ptx_mma_sync_f32(MmaShape::M16N8K8, MmaAbType::Tf32, pack_tf32(A, B, C, junk));
        CHECK(r.issues.empty());
        for (int l = 0; l < 32; ++l) {
            const int g = l / 4, t = l % 4;
            const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
            for (int i = 0; i < 4; ++i) {
                double want = C[static_cast<std::size_t>(rows[i] * 8 + cols[i])];
                for (int k = 0; k < 8; ++k)
                    want += double{A[static_cast<std::size_t>(rows[i] * 8 + k)]} * B[static_cast<std::size_t>(k * 8 + cols[i])];
                CHECK(std::bit_cast<float>(r.d[l][i]) == want);
            }
        }
    }
    // .tf32 is m16n8k8 (or k4) only: not the k16 shape.
    CHECK(ptx_mma_sync_f32(MmaShape::M16N8K16, MmaAbType::Tf32, {}).issues.at(0).problem ==
          MmaProblem::ShapeTypeMismatch);
}

TEST_CASE("warp mma: cvt.rna.tf32.f32 rounds to nearest, ties away from zero", "[sim][warp_mma]") {
    auto tf32 = [](float v) { return std::bit_cast<float>(ptx_cvt_rna_tf32_f32(v)); };
    // tf32 keeps 10 mantissa bits: its ulp at 1 is 2^-10.
    CHECK(tf32(1.0f) == 1.0f);
    CHECK(tf32(1.0f + std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -10));           // tie: away
    CHECK(tf32(-(1.0f + std::ldexp(1.0f, -11))) == -(1.0f + std::ldexp(1.0f, -10)));     // tie: away
    CHECK(tf32(1.0f + 3 * std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -9));        // tie: away (up)
    CHECK(tf32(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23)) == 1.0f);           // below the tie
    CHECK(tf32(2.0f - std::ldexp(1.0f, -23)) == 2.0f);                                    // carries into the exponent
    for (float v : {0.1f, -3.14159f, 1e-30f, 6.5e4f}) CHECK((ptx_cvt_rna_tf32_f32(v) & 0x1fffu) == 0);
}

TEST_CASE("warp mma: m16n8k16 .f16.f16.f16.f16, C/D as two .f16x2 registers (PTX ISA 9.7.14.5.8)",
          "[sim][warp_mma]") {
    const FragCase s = kShapes[0];
    REQUIRE(s.k == 16);
    std::mt19937 rng(16);
    std::uniform_int_distribution<int> small(-8, 8);
    std::vector<double> A(16 * 16), B(16 * 8);
    std::vector<float> C(16 * 8);
    for (auto& v : A) v = small(rng);
    for (auto& v : B) v = small(rng) / 4.0;
    for (auto& v : C) v = static_cast<float>(small(rng));
    auto lanes = pack(s, A, B, C, [](double v) { return tilec::scalar::f16_bits(v); });
    // C/D .f16: "two .f16x2 registers": c0, c1 (row g) in register 0, c2, c3 (row g + 8)
    // in register 1, the lower-numbered element in the low half.
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        auto h = [&](int row, int col) {
            return uint32_t{tilec::scalar::f16_bits(C[static_cast<std::size_t>(row * 8 + col)])};
        };
        lanes[l].c = {h(g, 2 * t) | (h(g, 2 * t + 1) << 16), h(g + 8, 2 * t) | (h(g + 8, 2 * t + 1) << 16), 0, 0};
    }
    auto r = ptx_mma_sync_f16(lanes);
    CHECK(r.issues.empty());
    auto want = product64(s, A, B, C);
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        auto d = [&](int reg, int half) { return tilec::scalar::f16_value(static_cast<uint16_t>(r.d[l][reg] >> (16 * half))); };
        CHECK(d(0, 0) == want[static_cast<std::size_t>(g * 8 + 2 * t)]);
        CHECK(d(0, 1) == want[static_cast<std::size_t>(g * 8 + 2 * t + 1)]);
        CHECK(d(1, 0) == want[static_cast<std::size_t>((g + 8) * 8 + 2 * t)]);
        CHECK(d(1, 1) == want[static_cast<std::size_t>((g + 8) * 8 + 2 * t + 1)]);
        CHECK((r.d[l][2] == 0 && r.d[l][3] == 0));
    }
    // D is rounded to f16: 2049 (not an f16) becomes 2048 (round to nearest even).
    std::vector<double> A1(16 * 16, 0), B1(16 * 8, 0);
    std::vector<float> C1(16 * 8, 0);
    A1[0] = 1, B1[0] = 1;
    auto one = pack(s, A1, B1, C1, [](double v) { return tilec::scalar::f16_bits(v); });
    for (auto& l : one) l.c = {0, 0, 0, 0};
    one[0].c[0] = tilec::scalar::f16_bits(2048.0);
    CHECK(tilec::scalar::f16_value(static_cast<uint16_t>(ptx_mma_sync_f16(one).d[0][0] & 0xffff)) == 2048.0);
}

TEST_CASE("warp mma: e4m3 and e5m2 decoders agree with scalar's exact decoders", "[sim][warp_mma]") {
    for (unsigned b = 0; b < 256; ++b) {
        const uint8_t bits = static_cast<uint8_t>(b);
        const double e4 = tilec::scalar::f8e4m3_value(bits), e5 = tilec::scalar::f8e5m2_value(bits);
        if (std::isnan(e4) ? !std::isnan(e4m3_to_float(bits)) : e4m3_to_float(bits) != e4) FAIL("e4m3 " << b);
        if (std::isnan(e5) ? !std::isnan(e5m2_to_float(bits)) : e5m2_to_float(bits) != e5) FAIL("e5m2 " << b);
    }
    // The document's formats: e4m3's largest finite value 448 (S.1111.110), its NaN
    // S.1111.111, no infinity; e5m2's largest 57344, infinity S.11111.00.
    CHECK(e4m3_to_float(0x7e) == 448.0f);
    CHECK(std::isnan(e4m3_to_float(0x7f)));
    CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));
    CHECK(e5m2_to_float(0x7b) == 57344.0f);
    CHECK(std::isinf(e5m2_to_float(0x7c)));
    CHECK(e5m2_to_float(0x01) == std::ldexp(1.0f, -16));
}

TEST_CASE("warp mma: m16n8k32 .f32.e4m3/.e5m2 (PTX ISA 9.7.14.5.10: the .s8 figures' fragments) equals the "
          "float64 product",
          "[sim][warp_mma]") {
    // Elements with at most two significant bits and small exponents: every product and
    // every partial sum is exact in f32, so the model's order of additions does not
    // matter and the float64 product is the answer. Bytes are packed by this file's
    // pack_s8 (the .s8 register tables of Figures 88, 90, 91, which the .e4m3 / .e5m2
    // rows of the section's tables name too).
    std::mt19937 rng(89);
    for (int trial = 0; trial < 12; ++trial) {
        const bool a_e5 = trial % 3 == 1, b_e5 = trial % 3 != 0;
        auto pick = [&](bool e5) {
            // A byte whose value is +-{0, 0.25, ..., 6}: exponent field near the bias,
            // mantissa 0 or the top mantissa bit.
            const int bias = e5 ? 15 : 7, man_bits = e5 ? 2 : 3;
            const int exp = bias - 2 + static_cast<int>(rng() % 5), top = static_cast<int>(rng() % 2);
            int byte = (exp << man_bits) | (top << (man_bits - 1));
            if (rng() % 7 == 0) byte = 0;
            if (rng() % 2) byte |= 0x80;
            return byte;
        };
        std::vector<int> A(16 * 32), B(32 * 8);
        std::vector<int32_t> C(16 * 8);
        std::vector<float> Cf(16 * 8);
        for (auto& v : A) v = pick(a_e5);
        for (auto& v : B) v = pick(b_e5);
        for (size_t i = 0; i < C.size(); ++i) {
            Cf[i] = static_cast<float>(static_cast<int>(rng() % 64) - 32) / 4;
            C[i] = std::bit_cast<int32_t>(Cf[i]);
        }
        auto value = [](int byte, bool e5) {
            return e5 ? e5m2_to_float(static_cast<uint8_t>(byte)) : e4m3_to_float(static_cast<uint8_t>(byte));
        };
        auto r = ptx_mma_sync_f32_f8(pack_s8(A, B, C), a_e5, b_e5);
        CHECK(r.issues.empty());
        for (int l = 0; l < 32; ++l) {
            const int g = l / 4, t = l % 4;
            const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
            for (int i = 0; i < 4; ++i) {
                double want = Cf[static_cast<std::size_t>(rows[i] * 8 + cols[i])];
                for (int k = 0; k < 32; ++k)
                    want += double(value(A[static_cast<std::size_t>(rows[i] * 32 + k)], a_e5)) *
                            double(value(B[static_cast<std::size_t>(k * 8 + cols[i])], b_e5));
                CHECK(std::bit_cast<float>(r.d[l][i]) == static_cast<float>(want));
            }
        }
        // The same bytes read in the other format give another product: the flags matter.
        CHECK(ptx_mma_sync_f32_f8(pack_s8(A, B, C), !a_e5, b_e5).d != r.d);
    }
}
