// print("x = {}", x, ...): prints scalars from the block (a debugging aid; the CPU
// target and the interpreter run it). The op's home: argument checks and IR, layout
// constraints (none), lowering (refused on GPUs for now).
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_print(ElabContext& ctx);
void print_layout(const ir::PrintNode& op, LayoutConstraints& lc);
ir::Stmt lower_print(const ir::PrintNode& op, LowerContext& lc);

}  // namespace tilec::ops
