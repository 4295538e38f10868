// Fragments: the mma.m16n8k16 A / B / accumulator fragments against the PTX ISA's own
// formulas (section 9.7.14.5.8), tiled over every block shape and warp grid the stdlib
// uses; parallel-loop fragments; reductions that turn threads into replicas; exact
// inverses (thread, register) -> coordinate; composition with layouts; printing.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "layout/fragment.h"
#include "layout/index_expr.h"

using namespace tilec;
using namespace tilec::layout;

// One Catch assertion per enumerated element costs more than the layout work; this
// fails the test the same way at a fraction of the cost (INFO still gives context).
#define REQUIRE_FAST(...)                                  \
    do {                                                   \
        if (!(__VA_ARGS__)) FAIL("failed: " #__VA_ARGS__); \
    } while (0)

namespace {

std::vector<std::vector<int64_t>> coords_of(const std::vector<int64_t>& shape) {
    std::vector<std::vector<int64_t>> out;
    for (int64_t f = 0; f < shape_size(shape); ++f) out.push_back(unflatten(f, shape));
    return out;
}

// Inverse round trips over every (thread, reg) and every (element, replica).
void check_inverse(const Fragment& f) {
    auto inv = f.inverse();
    REQUIRE_FAST(inv.has_value());
    for (int64_t t = 0; t < f.thread_count(); ++t)
        for (int64_t r = 0; r < f.registers_per_thread(); ++r) {
            std::vector<int64_t> c = inv->evaluate({t, r});
            int64_t rep = f.replicate() > 1 ? c.back() : 0;
            if (f.replicate() > 1) c.pop_back();
            REQUIRE_FAST(f.evaluate(c, rep) == FragmentSlot{t, r});
        }
    auto back = inv->inverse();
    REQUIRE_FAST(back.has_value());
    for (const auto& c : coords_of(f.shape())) {
        std::vector<int64_t> cr = c;
        if (f.replicate() > 1) cr.push_back(f.replicate() - 1);
        FragmentSlot s = f.evaluate(c, f.replicate() - 1);
        REQUIRE_FAST(back->evaluate(cr) == std::vector<int64_t>{s.thread, s.reg});
    }
}

struct PtxIndex {
    int64_t row, col;
};

// The PTX ISA's formulas, transcribed as written (groupID = %laneid >> 2,
// threadID_in_group = %laneid % 4).
PtxIndex ptx_a(int64_t lane, int64_t i) {
    int64_t g = lane >> 2, t = lane % 4;
    int64_t row = ((0 <= i && i < 2) || (4 <= i && i < 6)) ? g : g + 8;
    int64_t col = i < 4 ? (t * 2) + (i & 0x1) : (t * 2) + (i & 0x1) + 8;
    return {row, col};
}
PtxIndex ptx_b(int64_t lane, int64_t i) {
    int64_t g = lane >> 2, t = lane % 4;
    int64_t row = i < 2 ? (t * 2) + (i & 0x1) : (t * 2) + (i & 0x1) + 8;
    return {row, g};
}
PtxIndex ptx_c(int64_t lane, int64_t i) {
    int64_t g = lane >> 2, t = lane % 4;
    int64_t row = i < 2 ? g : g + 8;
    return {row, (t * 2) + (i & 0x1)};
}

// Warp grids of 32..256 threads.
const std::vector<std::pair<int64_t, int64_t>> kWarpGrids = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1},
                                                             {1, 4}, {2, 4}, {4, 2}, {8, 1}, {1, 8}};
const std::vector<int64_t> kTileSizes = {16, 32, 64, 128, 256};

}  // namespace

TEST_CASE("mma m16n8k16 fragments of one warp match the PTX ISA formulas", "[layout][fragment]") {
    Fragment a = *Fragment::mma_m16n8k16_a(16, 16, 1, 1);
    Fragment b = *Fragment::mma_m16n8k16_b(16, 8, 1, 1);
    Fragment c = *Fragment::mma_m16n8k16_c(16, 8, 1, 1);
    CHECK(a.registers_per_thread() == 8);
    CHECK(b.registers_per_thread() == 4);
    CHECK(c.registers_per_thread() == 4);
    for (const Fragment* f : {&a, &b, &c}) {
        CHECK(f->thread_count() == 32);
        CHECK(f->replicate() == 1);
        CHECK(f->is_exact());
    }
    for (int64_t lane = 0; lane < 32; ++lane) {
        for (int64_t i = 0; i < 8; ++i) {
            PtxIndex p = ptx_a(lane, i);
            REQUIRE_FAST(a.evaluate({p.row, p.col}) == FragmentSlot{lane, i});
            REQUIRE_FAST(a.inverse()->evaluate({lane, i}) == std::vector<int64_t>{p.row, p.col});
        }
        for (int64_t i = 0; i < 4; ++i) {
            PtxIndex pb = ptx_b(lane, i), pc = ptx_c(lane, i);
            REQUIRE_FAST(b.evaluate({pb.row, pb.col}) == FragmentSlot{lane, i});
            REQUIRE_FAST(b.inverse()->evaluate({lane, i}) == std::vector<int64_t>{pb.row, pb.col});
            REQUIRE_FAST(c.evaluate({pc.row, pc.col}) == FragmentSlot{lane, i});
            REQUIRE_FAST(c.inverse()->evaluate({lane, i}) == std::vector<int64_t>{pc.row, pc.col});
        }
    }
    // The document's own reading of the accumulator: c0, c1 on row groupID, c2, c3 on
    // groupID + 8; lane 5 is groupID 1, threadID_in_group 1.
    CHECK(c.evaluate({1, 2}) == FragmentSlot{5, 0});
    CHECK(c.evaluate({1, 3}) == FragmentSlot{5, 1});
    CHECK(c.evaluate({9, 2}) == FragmentSlot{5, 2});
    CHECK(c.evaluate({9, 3}) == FragmentSlot{5, 3});
}

TEST_CASE("tiled mma accumulators are exact over every block tile and warp grid", "[layout][fragment]") {
    Fragment atom = *Fragment::mma_m16n8k16_c(16, 8, 1, 1);
    std::vector<std::vector<FragmentSlot>> atom_c(16);
    for (int64_t r = 0; r < 16; ++r)
        for (int64_t c = 0; c < 8; ++c) atom_c[r].push_back(atom.evaluate({r, c}));
    int built = 0;
    for (int64_t m : kTileSizes)
        for (int64_t n : kTileSizes)
            for (auto [wm, wn] : kWarpGrids) {
                auto f = Fragment::mma_m16n8k16_c(m, n, wm, wn);
                CHECK(f.has_value() == (m % (16 * wm) == 0 && n % (8 * wn) == 0));
                if (!f) continue;
                INFO(m << "x" << n << " warps " << wm << "x" << wn);
                ++built;
                CHECK(f->thread_count() == 32 * wm * wn);
                CHECK(f->registers_per_thread() == m * n / (32 * wm * wn));
                REQUIRE_FAST(f->is_exact());
                for (const auto& c : coords_of(f->shape())) {
                    FragmentSlot s = f->evaluate(c);
                    const FragmentSlot& in_atom = atom_c[c[0] % 16][c[1] % 8];
                    REQUIRE_FAST(s.thread % 32 == in_atom.thread);
                    REQUIRE_FAST(s.reg % 4 == in_atom.reg);
                    REQUIRE_FAST(s.thread / 32 == (c[0] / (m / wm)) * wn + c[1] / (n / wn));
                }
                check_inverse(*f);
            }
    CHECK(built > 150);
}

TEST_CASE("tiled mma operands are replicated over the other warp dimension", "[layout][fragment]") {
    Fragment atom_a = *Fragment::mma_m16n8k16_a(16, 16, 1, 1);
    Fragment atom_b = *Fragment::mma_m16n8k16_b(16, 8, 1, 1);
    std::vector<std::vector<FragmentSlot>> table_a(16), table_b(16);
    for (int64_t r = 0; r < 16; ++r) {
        for (int64_t c = 0; c < 16; ++c) table_a[r].push_back(atom_a.evaluate({r, c}));
        for (int64_t c = 0; c < 8; ++c) table_b[r].push_back(atom_b.evaluate({r, c}));
    }
    for (int64_t mn : kTileSizes)
        for (int64_t k : {16, 32, 64})
            for (auto [wm, wn] : kWarpGrids) {
                INFO(mn << " k " << k << " warps " << wm << "x" << wn);
                if (auto a = Fragment::mma_m16n8k16_a(mn, k, wm, wn)) {
                    CHECK(a->replicate() == wn);
                    REQUIRE_FAST(a->is_exact());
                    for (const auto& c : coords_of(a->shape())) {
                        std::set<int64_t> warps;
                        const FragmentSlot& in_atom = table_a[c[0] % 16][c[1] % 16];
                        for (const FragmentSlot& s : a->owners(c)) {
                            REQUIRE_FAST(s.thread % 32 == in_atom.thread);
                            REQUIRE_FAST(s.reg % 8 == in_atom.reg);
                            REQUIRE_FAST((s.thread / 32) / wn == c[0] / (mn / wm));  // the warp row holding it
                            warps.insert(s.thread / 32);
                        }
                        REQUIRE_FAST(int64_t(warps.size()) == wn);
                    }
                    check_inverse(*a);
                }
                if (auto b = Fragment::mma_m16n8k16_b(k, mn, wm, wn)) {
                    CHECK(b->replicate() == wm);
                    REQUIRE_FAST(b->is_exact());
                    for (const auto& c : coords_of(b->shape()))
                        for (const FragmentSlot& s : b->owners(c)) {
                            const FragmentSlot& in_atom = table_b[c[0] % 16][c[1] % 8];
                            REQUIRE_FAST(s.thread % 32 == in_atom.thread);
                            REQUIRE_FAST(s.reg % 4 == in_atom.reg);
                            REQUIRE_FAST((s.thread / 32) % wn == c[1] / (mn / wn));
                        }
                    check_inverse(*b);
                }
            }
}

TEST_CASE("parallel-loop fragments cover the stdlib tiles coalesced and exact", "[layout][fragment]") {
    const std::vector<std::vector<int64_t>> shapes = {{2048}, {1024}, {4, 1024}, {128, 128}, {128, 32},
                                                      {32, 128}, {64, 64}, {128, 64}, {16, 16}, {256, 256}};
    for (const auto& shape : shapes)
        for (int64_t threads : {32, 64, 128, 256})
            for (int64_t vec : {1, 4, 8}) {  // scalar, 16 bytes of f32, 16 bytes of f16
                auto f = Fragment::parallel(shape, threads, vec);
                INFO(shape_str(shape) << " threads " << threads << " vec " << vec);
                REQUIRE_FAST(f.has_value());
                int64_t n = shape_size(shape);
                CHECK(f->thread_count() == threads);
                CHECK(f->replicate() == std::max<int64_t>(1, threads * vec / n));
                REQUIRE_FAST(f->is_exact());
                for (const auto& c : coords_of(shape)) {
                    int64_t flat = flatten(c, shape);
                    FragmentSlot s = f->evaluate(c);
                    REQUIRE_FAST(s.thread == (flat / vec) % threads);  // vector v on thread v % threads
                    REQUIRE_FAST(s.reg % vec == flat % vec);           // a vector is consecutive registers
                }
                check_inverse(*f);
            }
    CHECK_FALSE(Fragment::parallel({100}, 128, 8).has_value());
    CHECK_FALSE(Fragment::parallel({96}, 64, 1).has_value());
}

TEST_CASE("small parallel tiles replicate over the spare threads", "[layout][fragment]") {
    Fragment f = *Fragment::parallel({16}, 128, 4);
    CHECK(f.replicate() == 32);
    CHECK(f.registers_per_thread() == 4);
    CHECK(f.is_exact());
    CHECK(f.owners({5}).size() == 32);
    check_inverse(f);
}

TEST_CASE("reducing a row of an mma accumulator replicates the row over its threads", "[layout][fragment]") {
    for (int64_t m : {16, 64, 128})
        for (int64_t n : {32, 64, 128})
            for (auto [wm, wn] : kWarpGrids) {
                auto c = Fragment::mma_m16n8k16_c(m, n, wm, wn);
                if (!c) continue;
                INFO(m << "x" << n << " warps " << wm << "x" << wn);
                Fragment rows = *c->reduce_dim(1);
                CHECK(rows.shape() == std::vector<int64_t>{m});
                CHECK(rows.replicate() == 4 * wn);  // 4 lanes of a quad, times the warps of a row
                CHECK(rows.registers_per_thread() == 2 * m / (16 * wm));
                REQUIRE_FAST(rows.is_exact());
                // Row i is held by exactly the threads that held some (i, j).
                std::map<int64_t, std::set<int64_t>> holders;
                for (const auto& e : coords_of(c->shape())) holders[e[0]].insert(c->evaluate(e).thread);
                for (int64_t i = 0; i < m; ++i) {
                    std::set<int64_t> got;
                    for (const FragmentSlot& s : rows.owners({i})) got.insert(s.thread);
                    REQUIRE_FAST(got == holders[i]);
                }
                check_inverse(rows);
                Fragment kept = *c->reduce_dim(1, /*keep_dim=*/true);
                CHECK(kept.shape() == std::vector<int64_t>{m, 1});
                CHECK(kept.is_exact());
            }
}

TEST_CASE("reducing the rows of a parallel fragment as layernorm does on 128 threads", "[layout][fragment]") {
    Fragment x = *Fragment::parallel({4, 1024}, 128, 4);
    Fragment mean = *x.reduce_dim(1);
    CHECK(mean.replicate() == 128);
    CHECK(mean.registers_per_thread() == 4);
    CHECK(mean.is_exact());
    check_inverse(mean);
    Fragment b = Fragment::broadcast({4}, 128);
    for (int64_t i = 0; i < 4; ++i) CHECK(b.owners({i}) == mean.owners({i}));
}

TEST_CASE("fragments compose with layouts and reshape", "[layout][fragment]") {
    Fragment c = *Fragment::mma_m16n8k16_c(32, 16, 2, 1);
    Layout t = Layout::from_exprs(
        "transpose", {16, 32}, {32, 16}, [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; },
        [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; });
    Fragment ct = c.compose(t);
    CHECK(ct.shape() == std::vector<int64_t>{16, 32});
    for (const auto& e : coords_of(ct.shape())) REQUIRE_FAST(ct.evaluate(e) == c.evaluate({e[1], e[0]}));
    CHECK(ct.is_exact());
    check_inverse(ct);

    Fragment x = *Fragment::parallel({4, 1024}, 128, 4);
    Fragment flat = *x.reshape({4096});
    for (int64_t i = 0; i < 4096; ++i) REQUIRE_FAST(flat.evaluate({i}) == x.evaluate(unflatten(i, {4, 1024})));
    check_inverse(flat);
    Fragment a = *Fragment::mma_m16n8k16_a(64, 32, 2, 2);
    Fragment a3 = *a.reshape({64, 2, 16});
    for (const auto& e : coords_of(a3.shape()))
        for (int64_t r = 0; r < 2; ++r) REQUIRE_FAST(a3.evaluate(e, r) == a.evaluate({e[0], e[1] * 16 + e[2]}, r));
    check_inverse(a3);
}

TEST_CASE("incomplete and overlapping fragments are detected", "[layout][fragment]") {
    // Thread j for j < 8 of 4 threads: threads 4..7 don't exist.
    Fragment out_of_range = Fragment::from_exprs("bad", {8}, 4, 1, [](const auto& v, const auto&) {
        return std::pair<ir::Expr, ir::Expr>{v[0], idx(0)};
    });
    CHECK_FALSE(out_of_range.is_complete());
    // Two elements in one register of one thread.
    Fragment overlap = Fragment::from_exprs("bad", {8}, 4, 1, [](const auto& v, const auto&) {
        return std::pair<ir::Expr, ir::Expr>{idx_floormod(v[0], 4), idx(0)};
    });
    CHECK(overlap.is_complete());
    CHECK_FALSE(overlap.is_injective());
    // Replicas of one element in the same thread don't count as replication.
    Fragment same_thread = Fragment::from_exprs("bad", {4}, 4, 2, [](const auto& v, const auto& rep) {
        return std::pair<ir::Expr, ir::Expr>{v[0], ir::Expr(rep)};
    });
    CHECK(same_thread.registers_per_thread() == 2);
    CHECK_FALSE(same_thread.is_injective());
    CHECK_FALSE(same_thread.inverse().has_value());
    CHECK_FALSE(same_thread.reduce_dim(0).has_value());
}

TEST_CASE("fragments print their shape and threads and registers and index expressions", "[layout][fragment]") {
    CHECK(Fragment::mma_m16n8k16_c(16, 8, 1, 1)->str() ==
          "mma_m16n8k16_c[16, 8] -> 32 threads x 4 regs: (i, j) -> thread i % 8 * 4 + j / 2, "
          "reg i / 8 * 2 + j % 2");
    CHECK(Fragment::parallel({16}, 128, 4)->str() ==
          "parallel<v4>[16] -> 128 threads x 4 regs: (i; rep < 32) -> thread i / 4 + rep * 4, reg i % 4");
}

// AMD's accumulators against the Matrix Instruction Calculator's "Matrix element to
// register mapping" for C/D (CDNA3 V_MFMA_F32_32X32X8_F16 / 16X16X16_F16, RDNA3
// V_WMMA_F32_16X16X16_F16 wave32): C[i][j] in GPR g of lane l of the atom, the atoms
// tiled over waves (lane + wave * W) and over the wave's atoms (registers atom by atom,
// row-major).
TEST_CASE("AMD MFMA / WMMA accumulators follow the calculator's C/D table, tiled", "[layout][fragment]") {
    using Atom = Fragment::AmdMatrixAtom;
    struct Case {
        Atom atom;
        int64_t side, wave, regs;
        FragmentSlot (*table)(int64_t i, int64_t j);  // (lane, GPR)
    };
    const Case cases[] = {
        // GPR: 4 * floor(i / 8) + (i % 4); Lane: (32 * floor(i / 4)) % 64 + j
        {Atom::Mfma32, 32, 64, 16, [](int64_t i, int64_t j) { return FragmentSlot{(32 * (i / 4)) % 64 + j, 4 * (i / 8) + i % 4}; }},
        // GPR: (i % 4); Lane: 16 * floor(i / 4) + j
        {Atom::Mfma16, 16, 64, 4, [](int64_t i, int64_t j) { return FragmentSlot{16 * (i / 4) + j, i % 4}; }},
        // GPR: floor(i / 2); Lane: ((16 * i) % 32) + j
        {Atom::Wmma16, 16, 32, 8, [](int64_t i, int64_t j) { return FragmentSlot{(16 * i) % 32 + j, i / 2}; }},
        // The MFMA atoms of the product computed with the operands swapped (D^T = B^T
        // A^T): element (i, j) of the tile sits where the table puts D^T's (j, i).
        {Atom::Mfma32T, 32, 64, 16, [](int64_t i, int64_t j) { return FragmentSlot{(32 * (j / 4)) % 64 + i, 4 * (j / 8) + j % 4}; }},
        {Atom::Mfma16T, 16, 64, 4, [](int64_t i, int64_t j) { return FragmentSlot{16 * (j / 4) + i, j % 4}; }},
    };
    for (const Case& k : cases)
        for (int64_t m : {32, 64, 128})
            for (int64_t n : {32, 64, 128})
                for (auto [wm, wn] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}}) {
                    auto f = Fragment::amd_matrix_c(k.atom, m, n, wm, wn);
                    CHECK(f.has_value() == (m % (k.side * wm) == 0 && n % (k.side * wn) == 0));
                    if (!f) continue;
                    INFO(m << "x" << n << " waves " << wm << "x" << wn);
                    CHECK(f->thread_count() == k.wave * wm * wn);
                    REQUIRE_FAST(f->is_exact());
                    const int64_t an = n / wn / k.side;
                    for (const auto& c : coords_of(f->shape())) {
                        const int64_t wave = c[0] / (m / wm) * wn + c[1] / (n / wn);
                        const int64_t atom = (c[0] % (m / wm)) / k.side * an + (c[1] % (n / wn)) / k.side;
                        FragmentSlot in_atom = k.table(c[0] % k.side, c[1] % k.side);
                        REQUIRE_FAST(f->evaluate(c) == FragmentSlot{wave * k.wave + in_atom.thread, atom * k.regs + in_atom.reg});
                    }
                    check_inverse(*f);
                }
}

TEST_CASE("all_owners lists every element's owners as owners() gives them", "[layout][fragment]") {
    // A tiled accumulator (one replica) and a replicated operand: row-major elements,
    // each with its replicate() (thread, reg) pairs sorted.
    for (auto f : {Fragment::mma_m16n8k16_c(64, 32, 2, 2), Fragment::mma_m16n8k16_a(32, 16, 2, 2)}) {
        REQUIRE(f.has_value());
        auto table = f->all_owners();
        REQUIRE(table->size() == static_cast<size_t>(f->size() * f->replicate() * 2));
        for (int64_t i = 0; i < f->shape()[0]; ++i)
            for (int64_t j = 0; j < f->shape()[1]; ++j) {
                std::vector<std::pair<int64_t, int64_t>> want;
                for (const FragmentSlot& s : f->owners({i, j})) want.emplace_back(s.thread, s.reg);
                std::sort(want.begin(), want.end());
                const size_t at = static_cast<size_t>((i * f->shape()[1] + j) * f->replicate() * 2);
                for (size_t r = 0; r < want.size(); ++r) {
                    CHECK((*table)[at + 2 * r] == want[r].first);
                    CHECK((*table)[at + 2 * r + 1] == want[r].second);
                }
            }
    }
}
