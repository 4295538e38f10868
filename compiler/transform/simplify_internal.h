// The simplifier's internals, shared by its source files: wide interval arithmetic for
// bounds, the integer-type facts both bounds and rewrites use, and linear forms.
//   bounds.cpp       bound(): the value range of an integer expression
//   linear_form.cpp  sums of coeff * atom + constant, built from and turned back into IR
//   simplify.cpp     the rewriting itself (expressions and statements) and the pass
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "scalar/scalar.h"
#include "transform/simplify.h"

namespace tilec::transform::detail {

using namespace ir;

// ---------------------------------------------------------------------------------
// Wide interval arithmetic: values in __int128 with infinities as +-2^100, so no
// operation on bounds can overflow.

using W = __int128;
constexpr W kInf = W(1) << 100;
constexpr int64_t kNeg = Interval::kNegInf;
constexpr int64_t kPos = Interval::kPosInf;

inline W widen(int64_t v) {
    return v == kNeg ? -kInf : v == kPos ? kInf : W(v);
}
inline W clampw(W x) {
    return x >= W(kPos) ? kInf : x <= W(kNeg) ? -kInf : x;
}
inline int64_t narrow(W x) {
    return x >= W(kPos) ? kPos : x <= W(kNeg) ? kNeg : static_cast<int64_t>(x);
}
inline bool is_inf(W x) {
    return x == kInf || x == -kInf;
}

inline W addw(W a, W b) {
    if (is_inf(a)) return a;
    if (is_inf(b)) return b;
    return clampw(a + b);
}
inline W negw(W a) {
    return -a;
}
inline W mulw(W a, W b) {
    if (a == 0 || b == 0) return 0;
    if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? -kInf : kInf;
    return clampw(a * b);
}
// floor(a / b) for b > 0 (b may be infinite).
inline W floordivw(W a, W b) {
    if (is_inf(a)) return a;
    if (is_inf(b)) return a >= 0 ? 0 : -1;
    W q = a / b;
    if ((a % b != 0) && (a < 0)) q -= 1;
    return q;
}

struct WI {
    W lo = -kInf, hi = kInf;
    bool bounded() const { return !is_inf(lo) && !is_inf(hi); }
};
inline WI widen(Interval i) {
    return {widen(i.min), widen(i.max)};
}
inline Interval narrow(WI i) {
    return {narrow(i.lo), narrow(i.hi)};
}

// ---------------------------------------------------------------------------------
// Integer semantics shared by folding and bounds.

inline bool is_int_scalar(DataType t) {
    return (t.is_integer() || t.is_bool()) && t.is_scalar();
}
// 64-bit integer arithmetic is assumed not to overflow (index arithmetic).
inline bool assume_no_overflow(DataType t) {
    return t.is_integer() && t.bits >= 64;
}

inline WI type_range(DataType t) {
    if (!is_int_scalar(t)) return {};
    if (assume_no_overflow(t)) return {};
    return {W(t.min_value()), W(t.max_value())};
}

inline bool fits(WI i, DataType t) {
    if (assume_no_overflow(t)) return true;
    WI r = type_range(t);
    return i.lo >= r.lo && i.hi <= r.hi;
}
// The value range of an op of type t whose exact result lies in i: i if nothing can
// wrap, else the whole type.
inline WI fit(WI i, DataType t) {
    if (fits(i, t)) return i;
    return type_range(t);
}

using scalar::floor_div_i64;
using scalar::floor_mod_i64;
inline uint64_t u(int64_t v) {
    return static_cast<uint64_t>(v);
}
inline int64_t s(uint64_t v) {
    return static_cast<int64_t>(v);
}

inline std::optional<bool> decide_compare(BinaryOp op, WI a, WI b) {
    switch (op) {
    case BinaryOp::LT:
        if (a.hi < b.lo) return true;
        if (a.lo >= b.hi) return false;
        break;
    case BinaryOp::LE:
        if (a.hi <= b.lo) return true;
        if (a.lo > b.hi) return false;
        break;
    case BinaryOp::GT:
        if (a.lo > b.hi) return true;
        if (a.hi <= b.lo) return false;
        break;
    case BinaryOp::GE:
        if (a.lo >= b.hi) return true;
        if (a.hi < b.lo) return false;
        break;
    case BinaryOp::EQ:
        if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo && !is_inf(a.lo)) return true;
        if (a.hi < b.lo || b.hi < a.lo) return false;
        break;
    case BinaryOp::NE:
        if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo && !is_inf(a.lo)) return false;
        if (a.hi < b.lo || b.hi < a.lo) return true;
        break;
    default: break;
    }
    return std::nullopt;
}

inline WI bool_range(std::optional<bool> v) {
    if (v) return {W(*v ? 1 : 0), W(*v ? 1 : 0)};
    return {0, 1};
}

// The value range of an integer or bool expression (bounds.cpp).
WI bound(const Expr& e, const RangeMap& known);

// ---------------------------------------------------------------------------------
// Linear forms: sum of coeff * atom + constant, for integer types. Coefficients and
// the constant live in the signed view of the type's width (u32 `x - y` keeps -1);
// all of it is exact modulo 2^bits, and exact outright when nothing wraps.

inline int64_t wadd(int64_t a, int64_t b) {
    return s(u(a) + u(b));
}
inline int64_t wmul(int64_t a, int64_t b) {
    return s(u(a) * u(b));
}
inline int64_t wneg(int64_t a) {
    return s(0 - u(a));
}

struct Sum {
    DataType type;
    std::vector<std::pair<Expr, int64_t>> terms;  // atoms: never Add/Sub/Neg/Mul-by-const
    int64_t constant = 0;
};

inline int64_t coef_norm(int64_t v, DataType t) {
    return normalize_int(v, DataType(TypeKind::Int, t.bits));
}
inline int64_t signed_min(DataType t) {
    return DataType(TypeKind::Int, t.bits).min_value();
}

// Adds coeff * atom to the sum (linear_form.cpp), merging equal atoms.
void add_term(Sum& sum, const Expr& atom, int64_t coeff);
// Adds coeff * e, splitting e's sums, differences, negations and products by constants.
void collect(const Expr& e, int64_t coeff, Sum& sum);
// x = c * floordiv(x, c) + floormod(x, c): folds k * c * (x / c) + k * (x % c) into k * x.
bool fold_div_mod_pairs(Sum& sum);
Sum to_sum(const Expr& e);
Expr from_sum(const Sum& sum, SourceLoc loc);

inline BinaryOp flip(BinaryOp op) {  // a op b == b flip(op) a
    switch (op) {
    case BinaryOp::LT: return BinaryOp::GT;
    case BinaryOp::LE: return BinaryOp::GE;
    case BinaryOp::GT: return BinaryOp::LT;
    case BinaryOp::GE: return BinaryOp::LE;
    default: return op;
    }
}

inline BinaryOp negate(BinaryOp op) {  // !(a op b) == a negate(op) b, for integers
    switch (op) {
    case BinaryOp::LT: return BinaryOp::GE;
    case BinaryOp::LE: return BinaryOp::GT;
    case BinaryOp::GT: return BinaryOp::LE;
    case BinaryOp::GE: return BinaryOp::LT;
    case BinaryOp::EQ: return BinaryOp::NE;
    case BinaryOp::NE: return BinaryOp::EQ;
    default: return op;
    }
}

}  // namespace tilec::transform::detail
