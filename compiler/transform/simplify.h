// The integer simplifier for index arithmetic, with the bounds analysis it rests on:
// constant folding, canonical sums, floor div/mod and comparisons decided by ranges.
// Never changes a value: every rule is an identity for the IR's integer semantics.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/ir.h"
#include "ir/pass.h"

namespace tilec::transform {

// A closed integer interval [min, max]; min = kNegInf / max = kPosInf mean unbounded.
struct Interval {
    static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
    static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
    int64_t min = kNegInf;
    int64_t max = kPosInf;

    static Interval everything() { return {}; }
    static Interval point(int64_t v) { return {v, v}; }
    bool has_min() const { return min != kNegInf; }
    bool has_max() const { return max != kPosInf; }
    bool is_point() const { return has_min() && min == max; }
    bool contains(int64_t v) const { return min <= v && v <= max; }
    friend bool operator==(const Interval& a, const Interval& b) { return a.min == b.min && a.max == b.max; }
};

// Known ranges of variables, by identity.
class RangeMap {
public:
    RangeMap() = default;
    RangeMap(std::initializer_list<std::pair<ir::Var, Interval>> init) {
        for (auto& [v, i] : init) set(v, i);
    }
    void set(const ir::Var& v, Interval i) { map_[v.get()] = i; }
    void set(const ir::VarNode* v, Interval i) { map_[v] = i; }
    void erase(const ir::VarNode* v) { map_.erase(v); }
    const Interval* find(const ir::VarNode* v) const {
        auto it = map_.find(v);
        return it == map_.end() ? nullptr : &it->second;
    }

private:
    std::unordered_map<const ir::VarNode*, Interval> map_;
};

// Bounds of an integer or bool expression's value (bool: within [0, 1]). Vars not in
// `known` range over their type (i64: unbounded). Values of narrower types are exact
// when no intermediate can wrap, else the type's whole range. Floats: everything().
Interval bound_of(const ir::Expr& e, const RangeMap& known = {});

// An integer/bool binary op on constants of type `t` (the operands' type, values
// normalised to it), as the generated code computes it: wrapping to `t`, floor division
// and modulo; nullopt where the result is undefined (division by zero, overflowing
// division, shifts out of the type's range) or the op is not an integer op. The rule
// lives in compiler/scalar (scalar::fold_int_binary, next to the interpreter's); this
// is its name for the passes.
std::optional<int64_t> fold_int_binary(ir::BinaryOp op, int64_t a, int64_t b, ir::DataType t);

// Simplifies an expression. Integer/bool expressions are folded and canonicalised;
// float expressions keep their operations (only their integer parts and constant
// selects simplify). The result has the same type and value for every assignment of
// the vars within `known`.
ir::Expr simplify(const ir::Expr& e, const RangeMap& known = {});

// Simplifies every expression of a statement, with ranges from enclosing For loops
// ([min, min + extent - 1]) and Lets; removes If with a constant condition, For with
// extent <= 0, unrolls For with extent 1 (substituting the var), inlines Lets bound to
// constants or vars, and drops Assert(true).
ir::Stmt simplify(const ir::Stmt& s, const RangeMap& known = {});

// simplify over a function: block indices in [0, grid - 1], sizes >= 0.
ir::PrimFunc simplify_pass(const ir::PrimFunc& f);
// The pass for a PassManager, named "simplify".
ir::Pass make_simplify_pass();

}  // namespace tilec::transform
