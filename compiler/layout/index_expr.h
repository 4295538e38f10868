// Index arithmetic for layouts: builders of i64 Tile IR expressions that fold the
// constants layouts produce everywhere (x * 1, x / 1, x % 1, 0 + x), and an exact
// integer evaluator, so one expression is both what lowering emits and what the
// layout algebra enumerates to check itself.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace tilec::layout {

// Builders over the index type (i64); each folds constant operands and the identities
// of 0 and 1. floordiv / floormod take a positive constant divisor.
ir::Expr idx(int64_t v);
ir::Expr idx_add(ir::Expr a, ir::Expr b);
ir::Expr idx_mul(ir::Expr a, int64_t c);
ir::Expr idx_floordiv(ir::Expr a, int64_t c);
ir::Expr idx_floormod(ir::Expr a, int64_t c);
ir::Expr idx_xor(ir::Expr a, ir::Expr b);
ir::Expr idx_and(ir::Expr a, int64_t mask);
ir::Expr idx_shr(ir::Expr a, int64_t bits);
ir::Expr idx_shl(ir::Expr a, int64_t bits);

// Placeholder variables for a map's inputs: "i", "j", "k", ... by position (beyond
// six: "d6", "d7", ...), or `prefix` + position when a prefix is given.
std::vector<ir::Var> make_index_vars(size_t n, const std::string& prefix = "");

// Values bound to variables, by identity; layouts bind at most a handful, so a flat
// list beats a hash map in the enumeration loops.
class IndexEnv {
public:
    void bind(const ir::Var& v, int64_t value);
    void bind(const std::vector<ir::Var>& vars, const std::vector<int64_t>& values);
    const int64_t* find(const ir::VarNode* v) const;

private:
    std::vector<std::pair<const ir::VarNode*, int64_t>> binds_;
};

// The exact value of an integer expression (floor semantics, wrapping at the type's
// width); an internal error on a free variable or a float / load node.
int64_t eval_index(const ir::Expr& e, const IndexEnv& env);

// Row-major helpers over a static shape.
int64_t shape_size(const std::vector<int64_t>& shape);
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape);
int64_t flatten(const std::vector<int64_t>& coord, const std::vector<int64_t>& shape);
// "[16, 64]"
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace tilec::layout
