// fill(dst, value): sets every element of a whole on-chip tile to one scalar. The op's
// home: argument checks and IR, layout constraints (none), lowering.
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_fill(ElabContext& ctx);
// A fill follows its fragment's layout, whatever it is: no constraint.
void fill_layout(const ir::FillNode& op, LayoutConstraints& lc);
// Each thread stores the value into the elements its Fragment gives it (a shared tile:
// the default split of its shape, replica 0 storing).
ir::Stmt lower_fill(const ir::FillNode& op, LowerContext& lc);

}  // namespace tilec::ops
