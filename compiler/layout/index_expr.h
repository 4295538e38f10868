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
#include "ir/register_code.h"

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
    void bind_node(const ir::VarNode* v, int64_t value);
    void bind(const std::vector<ir::Var>& vars, const std::vector<int64_t>& values);
    const int64_t* find(const ir::VarNode* v) const;

private:
    std::vector<std::pair<const ir::VarNode*, int64_t>> binds_;
};

// The exact value of an integer expression (floor semantics, wrapping at the type's
// width); an internal error on a free variable or a float / load node.
int64_t eval_index(const ir::Expr& e, const IndexEnv& env);

// An index expression compiled once for many evaluations: layout inference and the tile
// op lowerings evaluate layouts and fragments at every coordinate of a tile, again and
// again, and walking the expression tree per coordinate (with an environment searched
// per variable) was over a quarter of the instructions tilec spent on a gemm export for
// sm_90a. Register code in evaluation order, one register per distinct node: layouts
// share subexpressions (a composition substitutes the inner layout's expressions for
// each use of a variable, a swizzle reads its offset twice), which the tree walk
// evaluated once per use. run() returns what eval_index returns with slots[k] bound to
// values[k] (a variable listed twice reads its last slot); where eval_index stops with an
// internal error (an unbound variable, a division by zero, a float), run() calls it with
// the same bindings so that it stops with the same error. A select's sides run only
// when taken, as eval_index's do, and share nothing computed inside the other side.
class IndexProgram {
public:
    IndexProgram(const ir::Expr& e, std::vector<const ir::VarNode*> slots);
    int64_t run(const int64_t* values) const;

private:
    enum class Op : uint8_t { Imm, Fail, Binary, Neg, Not, BitNot, Normalize, Move, JumpIfZero, Jump };
    struct Inst {
        using Op = IndexProgram::Op;  // for ir::emit_select
        Op op;
        ir::BinaryOp bop = ir::BinaryOp::Add;
        // Binary, Neg, BitNot, Normalize: the result's type, which the value is wrapped to
        // unless `wide` (a 64-bit integer: nothing to wrap).
        ir::DataType type{};
        bool wide = false;
        bool b_imm = false;  // Binary: the right operand is `imm`, not register b
        uint32_t dst = 0, a = 0, b = 0;
        int64_t imm = 0;  // Imm: the value; jumps: the target; Binary with b_imm: the operand
    };
    uint32_t emit(const ir::Expr& e);
    [[noreturn]] void report(const int64_t* values) const;
    ir::Expr expr_;
    std::vector<const ir::VarNode*> slots_;
    std::vector<Inst> code_;
    uint32_t registers_ = 0;  // the first slots_.size() hold the slots' values
    uint32_t result_ = 0;
    ir::NodeRegisters* regs_ = nullptr;  // compilation only
};

// Row-major helpers over a static shape.
int64_t shape_size(const std::vector<int64_t>& shape);
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape);
int64_t flatten(const std::vector<int64_t>& coord, const std::vector<int64_t>& shape);
// Steps coord[0 .. shape.size()) to the next coordinate (the last dimension fastest), so
// a loop over a shape needs no unflatten per element; after the last it wraps to zeros.
void next_coordinate(int64_t* coord, const std::vector<int64_t>& shape);
// "[16, 64]"
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace tilec::layout
