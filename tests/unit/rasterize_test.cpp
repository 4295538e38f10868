// Block rasterization (lower/rasterize.h): the grouped launch order is a bijection of the
// grid onto itself, and inside a full panel consecutive launches walk the panel's rows
// before its columns (so they share the B tile of their column).
#include <catch2/catch.hpp>

#include <set>
#include <utility>

#include "ir/visitor.h"
#include "lower/rasterize.h"
#include "transform/simplify.h"

using namespace tilec;

namespace {

std::pair<int64_t, int64_t> tile_of(int64_t gx, int64_t gy, int64_t panel, int64_t x, int64_t y) {
    ir::Var hx = ir::make_loop_var("hx"), hy = ir::make_loop_var("hy");
    auto t = lower::rasterized_block({ir::make_int(gx), ir::make_int(gy)}, panel, hx, hy);
    ir::VarMap at;
    at[hx.get()] = ir::make_int(x);
    at[hy.get()] = ir::make_int(y);
    auto tx = ir::as_const_int(transform::simplify(ir::substitute(t[0], at)));
    auto ty = ir::as_const_int(transform::simplify(ir::substitute(t[1], at)));
    REQUIRE(tx.has_value());
    REQUIRE(ty.has_value());
    return {*tx, *ty};
}

}  // namespace

TEST_CASE("rasterize: the grouped launch order maps every grid onto itself, one tile per block") {
    for (int64_t gx = 1; gx <= 6; ++gx)
        for (int64_t gy = 1; gy <= 7; ++gy)
            for (int64_t panel : {1, 2, 3, 8}) {
                INFO("grid " << gx << " x " << gy << ", panel " << panel);
                std::set<std::pair<int64_t, int64_t>> seen;
                for (int64_t y = 0; y < gy; ++y)
                    for (int64_t x = 0; x < gx; ++x) {
                        auto t = tile_of(gx, gy, panel, x, y);
                        CHECK(t.first >= 0);
                        CHECK(t.first < gx);
                        CHECK(t.second >= 0);
                        CHECK(t.second < gy);
                        seen.insert(t);
                    }
                CHECK(static_cast<int64_t>(seen.size()) == gx * gy);
            }
}

TEST_CASE("rasterize: within a full panel, consecutive launches take the rows of one column first") {
    // 4 x 6 grid, panels of 3 rows: launches 0, 1, 2 are column 0, rows 0..2; launch 3 is
    // column 1, row 0; launch 12 starts the second panel (rows 3..5).
    auto at = [&](int64_t pid) { return tile_of(4, 6, 3, pid % 4, pid / 4); };
    CHECK(at(0) == std::make_pair(int64_t{0}, int64_t{0}));
    CHECK(at(1) == std::make_pair(int64_t{0}, int64_t{1}));
    CHECK(at(2) == std::make_pair(int64_t{0}, int64_t{2}));
    CHECK(at(3) == std::make_pair(int64_t{1}, int64_t{0}));
    CHECK(at(11) == std::make_pair(int64_t{3}, int64_t{2}));
    CHECK(at(12) == std::make_pair(int64_t{0}, int64_t{3}));
    // A last panel of fewer rows (7 rows in panels of 3: one row left) walks its columns.
    auto last = [&](int64_t pid) { return tile_of(4, 7, 3, pid % 4, pid / 4); };
    CHECK(last(24) == std::make_pair(int64_t{0}, int64_t{6}));
    CHECK(last(25) == std::make_pair(int64_t{1}, int64_t{6}));
}
