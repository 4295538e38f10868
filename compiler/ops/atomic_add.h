// atomic_add(dst, src): adds a whole tile into a global tensor (or a shared buffer)
// element by element, atomically, so that blocks may add into one place. The op's home:
// argument checks and IR, layout constraints (none), lowering.
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_atomic_add(ElabContext& ctx);
// Each thread adds the registers it holds: src keeps its fragment's layout, no constraint.
void atomic_add_layout(const ir::AtomicAddNode& op, LayoutConstraints& lc);
ir::Stmt lower_atomic_add(const ir::AtomicAddNode& op, LowerContext& lc);

}  // namespace tilec::ops
