// cumsum(src, dst, dim = -1, reverse = false): the inclusive scan of a whole on-chip
// tile along one dimension, into a tile of its shape. The op's home: argument checks and
// IR, layout constraints (none), lowering (a chunked scan through shared memory).
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_cumsum(ElabContext& ctx);
// The scan goes through shared memory, so src and dst take any layouts: no constraint.
void cumsum_layout(const ir::CumsumNode& op, LayoutConstraints& lc);
ir::Stmt lower_cumsum(const ir::CumsumNode& op, LowerContext& lc);

}  // namespace tilec::ops
