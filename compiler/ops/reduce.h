// reduce_sum|max|min|absmax(src, dst, dim = -1, clear = true): folds a whole on-chip
// tile along one dimension into a tile without it (or with it kept as 1). The op's home:
// argument checks and IR, layout constraints, lowering.
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_reduce(ElabContext& ctx, ir::ReduceKind kind);
// Between whole fragments (strict): dst is src reduced along dim, replicated over the
// threads that held a row, so a row's result sits where the row was.
void reduce_layout(const ir::ReduceNode& op, LayoutConstraints& lc);
ir::Stmt lower_reduce(const ir::ReduceNode& op, LowerContext& lc);

}  // namespace tilec::ops
