// Integer evaluation of an index or condition under given values of its variables: what
// the analyses that enumerate accesses (place-barriers, check-parallel-races) compute.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace tilec::transform {

// The bound values, innermost last (few: a linear search beats hashing).
using IntEnv = std::vector<std::pair<const ir::VarNode*, int64_t>>;

// The value of an integer or bool expression of immediates, variables bound in `env`,
// casts, unary and binary operators and selects (the IR's integer semantics, wrapping);
// nullopt for anything else (a load, an unbound variable, a float, a division by zero).
std::optional<int64_t> eval_int(const ir::Expr& e, const IntEnv& env);

// A binding around an access that those analyses enumerate: a loop, a let, or an `if`
// condition (then or else side).
struct AccessBinder {
    enum Kind { Loop, Let, Cond } kind;
    const ir::VarNode* var = nullptr;  // Loop, Let
    ir::Expr a, b;                     // Loop: min, extent; Let: value; Cond: condition
    bool negated = false;              // Cond: the else side
    const void* origin = nullptr;      // the node that introduces it (a cache key)
};

}  // namespace tilec::transform
