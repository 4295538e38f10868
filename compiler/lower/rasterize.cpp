// Block rasterization: see rasterize.h.
#include "lower/rasterize.h"

#include "support/diagnostics.h"

namespace tilec::lower {

using namespace ir;

std::array<Expr, 2> rasterized_block(const std::vector<Expr>& grid, int64_t panel, const Expr& hw_x,
                                     const Expr& hw_y) {
    TILEC_CHECK(grid.size() >= 2 && panel >= 1, "rasterized_block needs a 2-d grid and a panel >= 1");
    Expr gx = grid[0], gy = grid[1];
    Expr pid = add(mul(hw_y, gx), hw_x);
    Expr width = mul(make_int(panel), gx);
    Expr first = mul(floordiv(pid, width), make_int(panel));
    Expr rows = minimum(sub(gy, first), make_int(panel));
    Expr in_group = floormod(pid, width);
    return {floordiv(in_group, rows), add(first, floormod(in_group, rows))};
}

}  // namespace tilec::lower
