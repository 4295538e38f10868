// The tile ops' hooks by IR node: the one switch that layout inference and thread-level
// lowering call through, so that neither lists the ops itself. (The frontend calls each
// op's elaboration by its built-in name: frontend/elab_tile_op.cpp.)
#pragma once
#include "ops/context.h"

namespace tilec::ops {

// copy, gemm, fill, reduce, cumsum, atomic_add, print, assert.
bool is_tile_op(const ir::StmtNode& s);
// The op's layout constraints (TileLang's InferLayout); nothing for other nodes.
void infer_layout(const ir::StmtNode& s, LayoutConstraints& lc);
// The op's thread-level lowering (TileLang's Lower); an internal error for other nodes.
ir::Stmt lower(const ir::StmtNode& s, LowerContext& lc);

}  // namespace tilec::ops
