// The layout algebra on shared-memory layouts: the swizzle functor against CUTLASS's
// definition, bijectivity and exact inverses of the dense and swizzled layouts,
// bank-conflict-free columns of the standard swizzles, composition identities, reshape,
// and that the IR expressions lowering emits evaluate to the same offsets.
#include <catch2/catch.hpp>

#include <set>

#include "ir/printer.h"
#include "layout/index_expr.h"
#include "layout/layout.h"

using namespace tilec;
using namespace tilec::layout;

// One Catch assertion per enumerated element costs more than the layout work; this
// fails the test the same way at a fraction of the cost (INFO still gives context).
#define REQUIRE_FAST(...)                                  \
    do {                                                   \
        if (!(__VA_ARGS__)) FAIL("failed: " #__VA_ARGS__); \
    } while (0)

namespace {

// Every coordinate of a shape, row-major.
std::vector<std::vector<int64_t>> coords_of(const std::vector<int64_t>& shape) {
    std::vector<std::vector<int64_t>> out;
    for (int64_t f = 0; f < shape_size(shape); ++f) out.push_back(unflatten(f, shape));
    return out;
}

// inverse(forward(x)) == x over the domain and forward(inverse(y)) == y over the codomain.
void check_round_trips(const Layout& l) {
    auto inv = l.inverse();
    REQUIRE_FAST(inv.has_value());
    CHECK(inv->shape() == l.codomain_shape());
    CHECK(inv->codomain_shape() == l.shape());
    for (const auto& c : coords_of(l.shape())) REQUIRE_FAST(inv->evaluate(l.evaluate(c)) == c);
    for (const auto& o : coords_of(l.codomain_shape())) REQUIRE_FAST(l.evaluate(inv->evaluate(o)) == o);
}

void check_same_map(const Layout& a, const Layout& b) {
    REQUIRE_FAST(a.shape() == b.shape());
    for (const auto& c : coords_of(a.shape())) REQUIRE_FAST(a.evaluate(c) == b.evaluate(c));
}

const std::vector<int64_t> kTileSizes = {16, 32, 64, 128, 256};
const std::vector<SmemSwizzle> kModes = {SmemSwizzle::None, SmemSwizzle::B32, SmemSwizzle::B64, SmemSwizzle::B128};

}  // namespace

TEST_CASE("swizzle XORs the B bits at M+S into the B bits at M as CUTLASS defines it", "[layout]") {
    Swizzle s(3, 3, 3);  // SW128 on 16-bit elements
    CHECK(s.apply(0) == 0);
    CHECK(s.apply(7) == 7);                               // the low M bits pass through
    CHECK(s.apply(5 << 6) == ((5 << 6) | (5 << 3)));      // YYY = 5 lands on ZZZ
    CHECK(s.apply((5 << 6) | (2 << 3) | 1) == ((5 << 6) | (7 << 3) | 1));
    CHECK(s.apply(1 << 9) == (1 << 9));                   // bits above M+S+B untouched
    CHECK(s.period() == 512);
    CHECK(s.str() == "Swizzle<3, 3, 3>");
    CHECK(Swizzle(2, 4, 3).apply(3 << 7) == ((3 << 7) | (3 << 4)));
}

TEST_CASE("swizzle is an involution and its IR expression evaluates like the integer form", "[layout]") {
    auto o = ir::make_var("o", ir::DataType::index(), ir::VarKind::Let);
    for (int b = 0; b <= 3; ++b)
        for (int m = 0; m <= 4; ++m)
            for (int sh = std::max(b, 1); sh <= 4; ++sh) {
                Swizzle s(b, m, sh);
                ir::Expr e = s.apply(ir::Expr(o));
                for (int64_t x = 0; x < 2 * s.period(); ++x) {
                    REQUIRE_FAST(s.apply(s.apply(x)) == x);
                    REQUIRE_FAST(s.apply(x) / s.period() == x / s.period());  // permutes each block
                    IndexEnv env;
                    env.bind(o, x);
                    REQUIRE_FAST(eval_index(e, env) == s.apply(x));
                }
            }
}

TEST_CASE("standard smem swizzle functors are the CUTLASS SW32 SW64 SW128 atoms in element units", "[layout]") {
    CHECK(smem_swizzle_functor(SmemSwizzle::B128, 16) == Swizzle(3, 3, 3));
    CHECK(smem_swizzle_functor(SmemSwizzle::B64, 16) == Swizzle(2, 3, 3));
    CHECK(smem_swizzle_functor(SmemSwizzle::B32, 16) == Swizzle(1, 3, 3));
    CHECK(smem_swizzle_functor(SmemSwizzle::B128, 32) == Swizzle(3, 2, 3));
    CHECK(smem_swizzle_functor(SmemSwizzle::B128, 8) == Swizzle(3, 4, 3));  // bytes: Swizzle<3,4,3>
    CHECK(smem_swizzle_functor(SmemSwizzle::None, 16).is_identity());
}

TEST_CASE("row-major and column-major and strided layouts evaluate and print and invert", "[layout]") {
    Layout r = Layout::row_major({16, 64});
    CHECK(r.offset({3, 5}) == 3 * 64 + 5);
    CHECK(r.size() == 1024);
    CHECK(r.codomain_size() == 1024);
    CHECK(r.is_bijective());
    CHECK(r.str() == "row_major[16, 64] -> [1024]: (i, j) -> i * 64 + j");
    CHECK(r.inverse()->str() == "inverse(row_major)[1024] -> [16, 64]: (o) -> (o / 64, o % 64)");
    check_round_trips(r);

    Layout c = Layout::col_major({16, 64});
    CHECK(c.offset({3, 5}) == 5 * 16 + 3);
    CHECK(c.is_bijective());
    check_round_trips(c);

    Layout s3 = Layout::row_major({4, 8, 16});
    CHECK(s3.offset({1, 2, 3}) == 128 + 32 + 3);
    check_round_trips(s3);

    Layout bc = Layout::strided({8, 16}, {0, 1});  // a broadcast row
    CHECK_FALSE(bc.is_injective());
    CHECK_FALSE(bc.inverse().has_value());
}

TEST_CASE("padded layouts are injective into their allocation but not bijective", "[layout]") {
    Layout p = Layout::padded({32, 64}, 8);
    CHECK(p.offset({1, 0}) == 72);
    CHECK(p.codomain_size() == 32 * 72);
    CHECK(p.is_injective());
    CHECK_FALSE(p.is_bijective());
    CHECK_FALSE(p.inverse().has_value());
    CHECK(Layout::padded({32, 64}, 0).is_bijective());
}

TEST_CASE("swizzled shared-memory layouts are bijective with exact inverses for every tile shape", "[layout]") {
    int built = 0;
    for (int bits : {16, 32})
        for (int64_t rows : kTileSizes)
            for (int64_t cols : kTileSizes)
                for (SmemSwizzle mode : kModes) {
                    auto l = Layout::swizzled(rows, cols, bits, mode);
                    int64_t width = smem_swizzle_bytes(mode) * 8 / bits;
                    CHECK(l.has_value() == (mode == SmemSwizzle::None || cols % width == 0));
                    if (!l) continue;
                    INFO(l->name() << " " << rows << "x" << cols);
                    CHECK(l->codomain_size() == rows * cols);
                    REQUIRE_FAST(l->is_bijective());
                    check_round_trips(*l);
                    ++built;
                }
    CHECK(built > 100);
}

TEST_CASE("swizzled layouts keep 16-byte chunks contiguous and spread a column over 8 bank groups", "[layout]") {
    // Shared memory has 32 banks of 4 bytes: a 16-byte chunk covers one of 8 bank
    // groups. ldmatrix (and a warp's column of 16-byte vector accesses) reads one chunk
    // from each of 8 consecutive rows: conflict-free iff the 8 chunks hit 8 groups.
    for (int bits : {16, 32})
        for (int64_t rows : kTileSizes)
            for (int64_t cols : kTileSizes)
                for (SmemSwizzle mode : {SmemSwizzle::B32, SmemSwizzle::B64, SmemSwizzle::B128}) {
                    auto l = Layout::swizzled(rows, cols, bits, mode);
                    if (!l) continue;
                    INFO(l->name() << " " << rows << "x" << cols);
                    int64_t vec = 128 / bits;  // elements per 16-byte chunk
                    for (int64_t r0 = 0; r0 < rows; r0 += 8)
                        for (int64_t c = 0; c < cols; c += vec) {
                            std::set<int64_t> groups;
                            for (int64_t r = r0; r < r0 + 8; ++r) {
                                int64_t base = l->offset({r, c});
                                REQUIRE_FAST(base % vec == 0);
                                for (int64_t e = 1; e < vec; ++e) REQUIRE_FAST(l->offset({r, c + e}) == base + e);
                                groups.insert((base * bits / 8 / 16) % 8);
                            }
                            REQUIRE_FAST(groups.size() == 8);
                        }
                }
}

TEST_CASE("without a swizzle a column of a 128-byte-row tile hits one bank group", "[layout]") {
    Layout l = *Layout::swizzled(8, 64, 16, SmemSwizzle::None);
    std::set<int64_t> groups;
    for (int64_t r = 0; r < 8; ++r) groups.insert((l.offset({r, 8}) * 2 / 16) % 8);
    CHECK(groups.size() == 1);
}

TEST_CASE("the 128B swizzle of an 8x64 f16 tile XORs the chunk index with the row", "[layout]") {
    Layout l = *Layout::swizzled(8, 64, 16, SmemSwizzle::B128);
    for (int64_t r = 0; r < 8; ++r)
        for (int64_t chunk = 0; chunk < 8; ++chunk) CHECK(l.offset({r, chunk * 8}) == r * 64 + (chunk ^ r) * 8);
    // Wider tiles are panels of 64 columns, one after another.
    Layout w = *Layout::swizzled(16, 128, 16, SmemSwizzle::B128);
    CHECK(w.offset({0, 64}) == 16 * 64);
    CHECK(w.offset({9, 64 + 8}) == 16 * 64 + 9 * 64 + (1 ^ 1) * 8);
}

TEST_CASE("widest_swizzle picks the widest mode the tile admits", "[layout]") {
    CHECK(Layout::widest_swizzle(128, 32, 16) == SmemSwizzle::B64);
    CHECK(Layout::widest_swizzle(128, 64, 16) == SmemSwizzle::B128);
    CHECK(Layout::widest_swizzle(32, 128, 16) == SmemSwizzle::B128);
    CHECK(Layout::widest_swizzle(64, 16, 16) == SmemSwizzle::B32);
    CHECK(Layout::widest_swizzle(64, 8, 32) == SmemSwizzle::B32);
    CHECK(Layout::widest_swizzle(64, 32, 32) == SmemSwizzle::B128);
    CHECK(Layout::widest_swizzle(4, 64, 16) == SmemSwizzle::None);  // fewer than 8 rows
    CHECK(Layout::widest_swizzle(64, 4, 16) == SmemSwizzle::None);  // narrower than 32 bytes
}

TEST_CASE("composition has an identity and cancels with the inverse and is associative", "[layout]") {
    for (int64_t rows : {16, 64})
        for (int64_t cols : {32, 128}) {
            Layout l = *Layout::swizzled(rows, cols, 16, Layout::widest_swizzle(rows, cols, 16));
            Layout id = *Layout::reshape_view({rows, cols}, {rows, cols});
            check_same_map(l.compose(id), l);
            Layout inv = *l.inverse();
            Layout round = inv.compose(l);  // coordinate -> coordinate
            for (const auto& c : coords_of(l.shape())) REQUIRE_FAST(round.evaluate(c) == c);
            Layout round2 = l.compose(inv);  // offset -> offset
            for (int64_t o = 0; o < l.codomain_size(); ++o) REQUIRE_FAST(round2.evaluate({o}) == std::vector<int64_t>{o});
            // A transpose view composed in: (l o t)(j, i) = l(i, j), and its inverse.
            Layout t = Layout::from_exprs(
                "transpose", {cols, rows}, {rows, cols}, [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; },
                [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; });
            Layout lt = l.compose(t);
            CHECK(lt.offset({3, 5}) == l.offset({5, 3}));
            CHECK(lt.is_bijective());
            check_round_trips(lt);
            // (l o t) o t' == l o (t o t') with t' the transpose back.
            Layout tb = Layout::from_exprs(
                "transpose", {rows, cols}, {cols, rows}, [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; },
                [](const auto& v) { return std::vector<ir::Expr>{v[1], v[0]}; });
            check_same_map(lt.compose(tb), l.compose(t.compose(tb)));
            check_same_map(lt.compose(tb), l);
        }
}

TEST_CASE("reshape and fuse and split keep the row-major element order", "[layout]") {
    Layout r = Layout::row_major({16, 64});
    Layout fused = *r.fuse(0);
    CHECK(fused.shape() == std::vector<int64_t>{1024});
    check_same_map(fused, Layout::row_major({1024}));
    Layout split = *r.split(1, 8);
    CHECK(split.shape() == std::vector<int64_t>{16, 8, 8});
    check_same_map(split, Layout::row_major({16, 8, 8}));
    CHECK_FALSE(r.split(1, 7).has_value());
    CHECK_FALSE(r.reshape({1000}).has_value());

    for (SmemSwizzle mode : {SmemSwizzle::B64, SmemSwizzle::B128}) {
        Layout l = *Layout::swizzled(32, 128, 16, mode);
        Layout s = *l.split(1, 8);  // [32, 16, 8]: 16-byte chunks as a dimension
        for (const auto& c : coords_of(s.shape())) REQUIRE_FAST(s.evaluate(c) == l.evaluate({c[0], c[1] * 8 + c[2]}));
        check_round_trips(s);
        Layout f = *l.reshape({32 * 128});
        for (const auto& c : coords_of(l.shape())) REQUIRE_FAST(f.evaluate({c[0] * 128 + c[1]}) == l.evaluate(c));
        check_round_trips(f);
    }
    // A layout with no structured form reshapes through a view.
    Layout t = Layout::from_exprs(
        "transpose", {8, 4}, {32}, [](const auto& v) { return std::vector<ir::Expr>{idx_add(idx_mul(v[1], 8), v[0])}; },
        [](const auto& v) { return std::vector<ir::Expr>{idx_floormod(v[0], 8), idx_floordiv(v[0], 8)}; });
    check_round_trips(t);
    Layout t2 = *t.reshape({2, 16});
    for (const auto& c : coords_of({2, 16})) REQUIRE_FAST(t2.evaluate(c) == t.evaluate(unflatten(c[0] * 16 + c[1], {8, 4})));
    check_round_trips(t2);
}

TEST_CASE("layout expressions applied to IR coordinates evaluate to the same offsets", "[layout]") {
    Layout l = *Layout::swizzled(64, 64, 16, SmemSwizzle::B128);
    auto i = ir::make_loop_var("row"), j = ir::make_loop_var("col");
    ir::Expr off = l.apply({i, j})[0];
    for (const auto& c : coords_of(l.shape())) {
        IndexEnv env;
        env.bind(i, c[0]);
        env.bind(j, c[1]);
        REQUIRE_FAST(eval_index(off, env) == l.offset(c));
    }
    CHECK(ir::print(off) == "row * 64 + col ^ (row * 64 + col >> 6 & 7) << 3");
}

TEST_CASE("offsets() lists offset() of every coordinate in row-major order, shared by copies", "[layout]") {
    std::vector<Layout> layouts{Layout::row_major({4, 6}),
                                Layout::col_major({3, 5}),
                                Layout::padded({4, 8}, 2),
                                Layout::strided({2, 3, 4}, {1, 8, 2}),
                                *Layout::swizzled(16, 64, 16, SmemSwizzle::B128),
                                *Layout::swizzled(8, 32, 32, SmemSwizzle::B64)};
    layouts.push_back(layouts[4].compose(*Layout::reshape_view({16, 64}, {16, 64})));
    for (const Layout& l : layouts) {
        INFO(l.str());
        auto table = l.offsets();
        REQUIRE(table->size() == size_t(l.size()));
        std::vector<int64_t> coord(l.rank(), 0);
        for (int64_t n = 0; n < l.size(); ++n) {
            int64_t rest = n;
            for (size_t d = l.rank(); d-- > 0;) coord[d] = rest % l.shape()[d], rest /= l.shape()[d];
            CHECK((*table)[size_t(n)] == l.offset(coord));
        }
        Layout copy = l;
        CHECK(copy.offsets() == table);  // computed once
    }
}
