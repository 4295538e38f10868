// Integer evaluation of an index or condition under given values of its variables: what
// the analyses that enumerate accesses (place-barriers, check-parallel-races) compute.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/register_code.h"

namespace tilec::transform {

// The bound values, innermost last (few: a linear search beats hashing).
using IntEnv = std::vector<std::pair<const ir::VarNode*, int64_t>>;

// The value of an integer or bool expression of immediates, variables bound in `env`,
// casts, unary and binary operators and selects (the IR's integer semantics, wrapping);
// nullopt for anything else (a load, an unbound variable, a float, a division by zero).
std::optional<int64_t> eval_int(const ir::Expr& e, const IntEnv& env);

// An integer expression compiled once for many evaluations (the enumerations evaluate
// one index at up to 2^18 points; eval_int's walk of the tree, with a search of the
// environment per variable, was most of place-barriers' time): register code in
// evaluation order, one register per distinct node (indices share subexpressions: a
// swizzle reads its offset twice), each variable read from a numbered slot. run()
// returns what eval_int returns for the same expression with the same values bound,
// including nullopt, and evaluates only the taken side of a select, as eval_int does.
class IntProgram {
public:
    // `slots`: the variables bound where the expression is evaluated, slot k holding
    // slots[k]'s value (a variable listed twice reads its last slot, as eval_int reads
    // the innermost binding; one not listed is unbound).
    IntProgram(const ir::Expr& e, const std::vector<const ir::VarNode*>& slots);
    std::optional<int64_t> run(const int64_t* values) const;
    // Appends to `key` the program's code: two programs that append the same values
    // compute the same function of their slots (place-barriers keys its enumerations
    // on them, so accesses written alike under different variables enumerate once).
    void append_key(std::vector<int64_t>& key) const;

private:
    enum class Op : uint8_t { Imm, Fail, ToBool, Neg, Not, BitNot, Binary, Move, JumpIfZero, Jump };
    struct Inst {
        using Op = IntProgram::Op;  // for ir::emit_select
        Op op;
        ir::BinaryOp bop = ir::BinaryOp::Add;
        // Binary on a 64-bit integer or i32 (wrapped to 64 or 32 bits): the common
        // operators computed in place; 0: by fold_int_binary.
        uint8_t wrap_bits = 0;
        bool b_imm = false;   // Binary: the right operand is `imm`, not register b
        ir::DataType type{};  // Binary: the operands' type
        uint32_t dst = 0, a = 0, b = 0;
        int64_t imm = 0;  // Imm: the value; jumps: the target; Binary with b_imm: the operand
    };
    uint32_t emit(const ir::Expr& e);
    size_t slot_count_ = 0;
    std::vector<Inst> code_;
    uint32_t registers_ = 0;  // the first slot_count_ hold the slots' values
    uint32_t result_ = 0;
    // Compilation only.
    const std::vector<const ir::VarNode*>* slots_ = nullptr;
    ir::NodeRegisters* regs_ = nullptr;
};

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
