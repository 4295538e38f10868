// Helpers of the tile ops' argument checks: the wording of shapes, scopes and counts in
// messages (shared with the elaborator's own), and the region a start index gives.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ops/context.h"

namespace tilec::ops {

std::string plural(size_t n, const char* word);  // "1 index", "2 dimensions"
std::string plural_index(size_t n);
std::string shape_str(const std::vector<ir::Expr>& shape);  // "[64, N]"
const char* scope_word(ir::Scope s);                        // "a shared buffer"

// The buffer's extents into `out`; false if one is not a compile-time constant.
bool shape_values(const ir::Buffer& b, std::vector<int64_t>& out);
bool same_shape(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b);

// The region of `indexed` (a buffer with a start index) that a tile of `tile_shape`
// covers (leading unit dims where the tile has fewer); a tile of more dimensions is an
// error at `where` (the call), an on-chip buffer that does not contain the region one at
// `indexed` (only global tensors are bounds-masked); nullopt after either.
std::optional<ir::Region> region_for(DiagnosticEngine& diags, const TileOperand& indexed,
                                     const std::vector<ir::Expr>& tile_shape, SourceRange where, const char* op);

}  // namespace tilec::ops
