// What the rules about sizes share: the C entry points' argument checks
// (codegen/entry_checks.cpp) and tilec run's, made before it allocates tensors
// (driver/run.cpp). Kept out of ir.h so that a change here recompiles little.
#pragma once
#include <vector>

#include "ir/ir.h"

namespace tilec::ir {

// The floor divisions inside a size expression (a derived dimension, a grid extent),
// innermost first, so that each one's operands can be checked before they are used.
std::vector<const BinaryNode*> floor_divisions(const Expr& e);

}  // namespace tilec::ir
