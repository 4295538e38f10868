// copy(src, dst, pad = 0): moves a tile between memories (global, shared, fragment,
// local), converting the element type; global accesses outside the tensor read `pad`
// and drop writes. The op's home: argument checks and IR, layout constraints, lowering.
#pragma once
#include "ops/context.h"

namespace tilec::ops {

// The call `copy(...)`: one side is a whole tile, which gives the extent; the other a
// whole tile of the same shape or a buffer with a start index.
ir::Stmt elab_copy(ElabContext& ctx);
// A copy between two whole fragments of one shape: one layout (common priority). A copy
// between a fragment and global or shared memory follows the fragment: no constraint.
void copy_layout(const ir::CopyNode& op, LayoutConstraints& lc);
// The dimension of the tile a global -> whole shared copy reads contiguously from the
// tensor (its unit-stride dimension's), nullopt for other copies or if none is. A tile
// filled along its first dimension holds a transposed operand.
std::optional<size_t> fill_contiguous_dim(const ir::CopyNode& op);
// Each thread moves the elements its Fragment gives it; a global side gets an unmasked
// path when the whole region is in bounds and a per-element masked one otherwise.
ir::Stmt lower_copy(const ir::CopyNode& op, LowerContext& lc);

}  // namespace tilec::ops
