// assert(cond, msg = "assertion failed"): stops the kernel with a message when a
// condition fails (a debugging aid; the CPU target and the interpreter check it). The
// op's home: argument checks and IR, layout constraints (none), lowering (refused on
// GPUs for now).
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_assert(ElabContext& ctx);
void assert_layout(const ir::AssertNode& op, LayoutConstraints& lc);
ir::Stmt lower_assert(const ir::AssertNode& op, LowerContext& lc);

}  // namespace tilec::ops
