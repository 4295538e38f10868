// Block rasterization (@rasterize(panel = P)): the order in which a 2-d grid's tiles are
// handed to blocks. The hardware starts blocks in launch order (x fastest); with the
// identity map a wave of blocks covers a few rows of C tiles end to end and reads every
// column tile of B, which then leave L2 before the next rows need them. Grouped order
// (as Triton's GROUP_M): the launch index walks panels of P tile rows, column by column,
// so consecutive blocks share their B tiles and the panel's A tiles stay in L2.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace tilec::lower {

// The tile (x, y) that the block launched as (hw_x, hw_y) computes, for grid extents
// (gx, gy) = (grid[0], grid[1]) and panels of `panel` rows: with pid = hw_y * gx + hw_x,
// group = pid / (panel * gx), first = group * panel, rows = min(gy - first, panel):
// y = first + (pid % (panel * gx)) % rows, x = (pid % (panel * gx)) / rows. A bijection of
// the grid onto itself for every gx, gy >= 1 and panel >= 1.
std::array<ir::Expr, 2> rasterized_block(const std::vector<ir::Expr>& grid, int64_t panel, const ir::Expr& hw_x,
                                         const ir::Expr& hw_y);

}  // namespace tilec::lower
