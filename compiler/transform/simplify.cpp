// The integer simplifier: index arithmetic written by authors and produced by lowering
// (tile offsets, cdiv, floor div/mod) folded to what codegen and layout inference need.
//
// How it stays correct. Sums are canonicalised as linear forms (ring identities, valid
// under wrapping too). Rules that need exact integers (floor div/mod splitting, bounds)
// are applied to 64-bit types under the IR's no-overflow assumption for index
// arithmetic, and to narrower types only when the bounds prove nothing can wrap.
#include "transform/simplify.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/visitor.h"
#include "support/diagnostics.h"

namespace tilec::transform {

using namespace ir;

namespace {

// ---------------------------------------------------------------------------------
// Wide interval arithmetic: values in __int128 with infinities as +-2^100, so no
// operation on bounds can overflow.

using W = __int128;
constexpr W kInf = W(1) << 100;
constexpr int64_t kNeg = Interval::kNegInf;
constexpr int64_t kPos = Interval::kPosInf;

W widen(int64_t v) {
    return v == kNeg ? -kInf : v == kPos ? kInf : W(v);
}
W clampw(W x) {
    return x >= W(kPos) ? kInf : x <= W(kNeg) ? -kInf : x;
}
int64_t narrow(W x) {
    return x >= W(kPos) ? kPos : x <= W(kNeg) ? kNeg : static_cast<int64_t>(x);
}
bool is_inf(W x) {
    return x == kInf || x == -kInf;
}

W addw(W a, W b) {
    if (is_inf(a)) return a;
    if (is_inf(b)) return b;
    return clampw(a + b);
}
W negw(W a) {
    return -a;
}
W mulw(W a, W b) {
    if (a == 0 || b == 0) return 0;
    if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? -kInf : kInf;
    return clampw(a * b);
}
// floor(a / b) for b > 0 (b may be infinite).
W floordivw(W a, W b) {
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
WI widen(Interval i) {
    return {widen(i.min), widen(i.max)};
}
Interval narrow(WI i) {
    return {narrow(i.lo), narrow(i.hi)};
}

// ---------------------------------------------------------------------------------
// Integer semantics shared by folding and bounds.

bool is_int_scalar(DataType t) {
    return (t.is_integer() || t.is_bool()) && t.is_scalar();
}
// 64-bit integer arithmetic is assumed not to overflow (index arithmetic).
bool assume_no_overflow(DataType t) {
    return t.is_integer() && t.bits >= 64;
}

WI type_range(DataType t) {
    if (!is_int_scalar(t)) return {};
    if (assume_no_overflow(t)) return {};
    return {W(t.min_value()), W(t.max_value())};
}

bool fits(WI i, DataType t) {
    if (assume_no_overflow(t)) return true;
    WI r = type_range(t);
    return i.lo >= r.lo && i.hi <= r.hi;
}
// The value range of an op of type t whose exact result lies in i: i if nothing can
// wrap, else the whole type.
WI fit(WI i, DataType t) {
    if (fits(i, t)) return i;
    return type_range(t);
}

int64_t floordiv_i64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
int64_t floormod_i64(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
uint64_t u(int64_t v) {
    return static_cast<uint64_t>(v);
}
int64_t s(uint64_t v) {
    return static_cast<int64_t>(v);
}

std::optional<bool> decide_compare(BinaryOp op, WI a, WI b) {
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

WI bool_range(std::optional<bool> v) {
    if (v) return {W(*v ? 1 : 0), W(*v ? 1 : 0)};
    return {0, 1};
}

// ---------------------------------------------------------------------------------
// Bounds

WI bound(const Expr& e, const RangeMap& known);

WI bound_binary(const BinaryNode* op, const RangeMap& known) {
    DataType t = op->type;
    DataType ot = op->a->type;
    if (!is_int_scalar(ot)) {
        if (is_comparison(op->op)) return {0, 1};
        return {};
    }
    WI a = bound(op->a, known), b = bound(op->b, known);
    switch (op->op) {
    case BinaryOp::Add: return fit({addw(a.lo, b.lo), addw(a.hi, b.hi)}, t);
    case BinaryOp::Sub: return fit({addw(a.lo, negw(b.hi)), addw(a.hi, negw(b.lo))}, t);
    case BinaryOp::Mul: {
        W c[4] = {mulw(a.lo, b.lo), mulw(a.lo, b.hi), mulw(a.hi, b.lo), mulw(a.hi, b.hi)};
        return fit({*std::min_element(c, c + 4), *std::max_element(c, c + 4)}, t);
    }
    case BinaryOp::FloorDiv: {
        if (b.lo > 0) {
            W lo = a.lo >= 0 ? floordivw(a.lo, b.hi) : floordivw(a.lo, b.lo);
            W hi = a.hi >= 0 ? floordivw(a.hi, b.lo) : floordivw(a.hi, b.hi);
            return fit({lo, hi}, t);
        }
        if (b.hi < 0 && b.lo == b.hi && !is_inf(b.lo)) {  // constant negative divisor
            W c = -b.lo;                                  // floor(x / -c) = -ceil(x / c) = floor(-x / c)
            return fit({floordivw(negw(a.hi), c), floordivw(negw(a.lo), c)}, t);
        }
        return type_range(t);
    }
    case BinaryOp::FloorMod: {
        if (b.lo > 0) {
            if (b.lo == b.hi && a.bounded() && floordivw(a.lo, b.lo) == floordivw(a.hi, b.lo)) {
                W base = floordivw(a.lo, b.lo) * b.lo;
                return {a.lo - base, a.hi - base};
            }
            W hi = is_inf(b.hi) ? kInf : b.hi - 1;
            if (a.lo >= 0) hi = std::min(hi, a.hi);
            return {0, hi};
        }
        if (b.hi < 0) {
            W lo = is_inf(b.lo) ? -kInf : b.lo + 1;
            return {lo, 0};
        }
        return type_range(t);
    }
    case BinaryOp::Min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    case BinaryOp::Max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    case BinaryOp::EQ:
    case BinaryOp::NE:
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE: return bool_range(decide_compare(op->op, a, b));
    case BinaryOp::And:
        if (a.hi == 0 || b.hi == 0) return {0, 0};
        if (a.lo == 1 && b.lo == 1) return {1, 1};
        return {0, 1};
    case BinaryOp::Or:
        if (a.lo == 1 || b.lo == 1) return {1, 1};
        if (a.hi == 0 && b.hi == 0) return {0, 0};
        return {0, 1};
    case BinaryOp::BitAnd:
        if (a.lo >= 0 && b.lo >= 0) return {0, std::min(a.hi, b.hi)};
        if (a.lo >= 0) return {0, a.hi};
        if (b.lo >= 0) return {0, b.hi};
        return type_range(t);
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
        if (a.lo >= 0 && b.lo >= 0 && a.bounded() && b.bounded()) {
            W m = std::max(a.hi, b.hi), p = 1;
            while (p <= m) p <<= 1;
            return fit({0, p - 1}, t);
        }
        return type_range(t);
    case BinaryOp::Shl:
        if (b.lo == b.hi && b.lo >= 0 && b.lo < ot.bits) {
            W f = W(1) << static_cast<int>(b.lo);
            return fit({mulw(a.lo, f), mulw(a.hi, f)}, t);
        }
        return type_range(t);
    case BinaryOp::Shr:
        if (b.lo == b.hi && b.lo >= 0 && b.lo < ot.bits) {
            W f = W(1) << static_cast<int>(b.lo);
            return {floordivw(a.lo, f), floordivw(a.hi, f)};
        }
        if (a.lo >= 0 && b.lo >= 0) return {0, a.hi};
        return type_range(t);
    case BinaryOp::Div:
    case BinaryOp::Mod: return {};
    }
    return type_range(t);
}

WI bound(const Expr& e, const RangeMap& known) {
    if (!e) return {};
    DataType t = e->type;
    if (!is_int_scalar(t)) return {};
    switch (e->kind) {
    case ExprKind::IntImm: {
        W v = e->as<IntImmNode>()->value;
        return {v, v};
    }
    case ExprKind::Var: {
        WI r = type_range(t);
        if (const Interval* k = known.find(e->as<VarNode>())) {
            WI w = widen(*k);
            r.lo = std::max(r.lo, w.lo);
            r.hi = std::min(r.hi, w.hi);
        }
        return r;
    }
    case ExprKind::Binary: return bound_binary(e->as<BinaryNode>(), known);
    case ExprKind::Unary: {
        auto op = e->as<UnaryNode>();
        WI a = bound(op->a, known);
        switch (op->op) {
        case UnaryOp::Neg: return fit({negw(a.hi), negw(a.lo)}, t);
        case UnaryOp::Not:
            if (a.lo == 1) return {0, 0};
            if (a.hi == 0) return {1, 1};
            return {0, 1};
        case UnaryOp::BitNot:
            if (t.is_uint() && !assume_no_overflow(t)) {
                W m = t.max_value();
                return {m - a.hi, m - a.lo};
            }
            if (t.is_bool()) return {0, 1};
            return fit({addw(negw(a.hi), -1), addw(negw(a.lo), -1)}, t);
        }
        return type_range(t);
    }
    case ExprKind::Select: {
        auto op = e->as<SelectNode>();
        WI c = bound(op->cond, known);
        if (c.lo == 1) return bound(op->t, known);
        if (c.hi == 0) return bound(op->f, known);
        WI x = bound(op->t, known), y = bound(op->f, known);
        return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
    case ExprKind::Cast: {
        auto op = e->as<CastNode>();
        if (t.is_bool()) return {0, 1};
        if (!is_int_scalar(op->value->type)) return type_range(t);
        return fit(bound(op->value, known), t);
    }
    case ExprKind::Call: {
        auto op = e->as<CallNode>();
        if (op->op == CallOp::Abs && op->args.size() == 1) {
            WI a = bound(op->args[0], known);
            W m = std::max(a.hi < 0 ? negw(a.hi) : a.hi, a.lo < 0 ? negw(a.lo) : a.lo);
            W lo = (a.lo <= 0 && a.hi >= 0) ? W(0) : std::min(a.lo < 0 ? negw(a.hi) : a.lo, m);
            return fit({lo, m}, t);
        }
        return type_range(t);
    }
    default: return type_range(t);
    }
}

// ---------------------------------------------------------------------------------
// Linear forms: sum of coeff * atom + constant, for integer types. Coefficients and
// the constant live in the signed view of the type's width (u32 `x - y` keeps -1);
// all of it is exact modulo 2^bits, and exact outright when nothing wraps.

int64_t wadd(int64_t a, int64_t b) {
    return s(u(a) + u(b));
}
int64_t wmul(int64_t a, int64_t b) {
    return s(u(a) * u(b));
}
int64_t wneg(int64_t a) {
    return s(0 - u(a));
}

struct Sum {
    DataType type;
    std::vector<std::pair<Expr, int64_t>> terms;  // atoms: never Add/Sub/Neg/Mul-by-const
    int64_t constant = 0;
};

int64_t coef_norm(int64_t v, DataType t) {
    return normalize_int(v, DataType(TypeKind::Int, t.bits));
}
int64_t signed_min(DataType t) {
    return DataType(TypeKind::Int, t.bits).min_value();
}

void add_term(Sum& sum, const Expr& atom, int64_t coeff) {
    for (auto& [a, c] : sum.terms) {
        if (structural_equal(a, atom)) {
            c = coef_norm(wadd(c, coeff), sum.type);
            return;
        }
    }
    sum.terms.emplace_back(atom, coef_norm(coeff, sum.type));
}

void collect(const Expr& e, int64_t coeff, Sum& sum) {
    if (auto imm = e->as<IntImmNode>()) {
        sum.constant = coef_norm(wadd(sum.constant, wmul(imm->value, coeff)), sum.type);
        return;
    }
    if (auto b = e->as<BinaryNode>()) {
        switch (b->op) {
        case BinaryOp::Add:
            collect(b->a, coeff, sum);
            collect(b->b, coeff, sum);
            return;
        case BinaryOp::Sub:
            collect(b->a, coeff, sum);
            collect(b->b, wneg(coeff), sum);
            return;
        case BinaryOp::Mul:
            if (auto c = as_const_int(b->b)) return collect(b->a, wmul(coeff, *c), sum);
            if (auto c = as_const_int(b->a)) return collect(b->b, wmul(coeff, *c), sum);
            break;
        default: break;
        }
    }
    if (auto un = e->as<UnaryNode>(); un && un->op == UnaryOp::Neg) return collect(un->a, wneg(coeff), sum);
    add_term(sum, e, coeff);
}

// x = c * floordiv(x, c) + floormod(x, c): folds k * c * (x / c) + k * (x % c) into k * x.
bool fold_div_mod_pairs(Sum& sum) {
    for (size_t i = 0; i < sum.terms.size(); ++i) {
        auto mod = sum.terms[i].first->as<BinaryNode>();
        int64_t k = sum.terms[i].second;
        if (!mod || mod->op != BinaryOp::FloorMod || k == 0) continue;
        auto c = as_const_int(mod->b);
        if (!c || *c == 0) continue;
        for (size_t j = 0; j < sum.terms.size(); ++j) {
            auto div = sum.terms[j].first->as<BinaryNode>();
            if (!div || div->op != BinaryOp::FloorDiv || !is_const_int(div->b, *c)) continue;
            if (!structural_equal(div->a, mod->a)) continue;
            if (sum.terms[j].second != coef_norm(wmul(k, *c), sum.type)) continue;
            Expr x = mod->a;
            sum.terms[i].second = 0;
            sum.terms[j].second = 0;
            collect(x, k, sum);
            return true;
        }
    }
    return false;
}

Sum to_sum(const Expr& e) {
    Sum sum;
    sum.type = e->type;
    collect(e, 1, sum);
    while (fold_div_mod_pairs(sum)) {
    }
    return sum;
}

Expr from_sum(const Sum& sum, SourceLoc loc) {
    DataType t = sum.type;
    auto lit = [&](int64_t v) { return make_int(v, t, loc); };
    auto scaled = [&](const Expr& atom, int64_t c) {  // c > 0 or the width's minimum
        return c == 1 ? atom : make_binary(BinaryOp::Mul, atom, lit(c), loc);
    };
    Expr r;
    for (const auto& [atom, c] : sum.terms) {
        if (c <= 0) continue;
        r = r ? make_binary(BinaryOp::Add, r, scaled(atom, c), loc) : scaled(atom, c);
    }
    int64_t k = sum.constant;
    bool k_used = false;
    for (const auto& [atom, c] : sum.terms) {
        if (c >= 0) continue;
        if (!r) {
            if (k > 0) {
                r = lit(k);
                k_used = true;
            } else {
                r = c == -1 ? make_unary(UnaryOp::Neg, atom, loc)
                            : make_binary(BinaryOp::Mul, atom, lit(c), loc);
                continue;
            }
        }
        if (c == signed_min(t))
            r = make_binary(BinaryOp::Add, r, scaled(atom, c), loc);
        else
            r = make_binary(BinaryOp::Sub, r, scaled(atom, wneg(c)), loc);
    }
    if (k_used) return r;
    if (!r) return lit(k);
    if (k > 0 || k == signed_min(t)) return make_binary(BinaryOp::Add, r, lit(k), loc);
    if (k < 0) return make_binary(BinaryOp::Sub, r, lit(wneg(k)), loc);
    return r;
}

BinaryOp flip(BinaryOp op) {  // a op b == b flip(op) a
    switch (op) {
    case BinaryOp::LT: return BinaryOp::GT;
    case BinaryOp::LE: return BinaryOp::GE;
    case BinaryOp::GT: return BinaryOp::LT;
    case BinaryOp::GE: return BinaryOp::LE;
    default: return op;
    }
}

BinaryOp negate(BinaryOp op) {  // !(a op b) == a negate(op) b, for integers
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

// Exactly representable in float type t (for folding int -> float casts).
bool exact_in_float(int64_t v, DataType t) {
    int mantissa = 0;
    switch (t.kind) {
    case TypeKind::Float: mantissa = t.bits == 16 ? 11 : t.bits == 32 ? 24 : t.bits == 64 ? 53 : 0; break;
    case TypeKind::BFloat: mantissa = 8; break;
    default: return false;  // f8: leave to codegen
    }
    if (mantissa == 0) return false;
    int64_t limit = int64_t(1) << mantissa;
    return v >= -limit && v <= limit;
}

// ---------------------------------------------------------------------------------
// The simplifier

class Simplifier : public IRMutator {
public:
    explicit Simplifier(RangeMap known) : known_(std::move(known)) {}

    using IRMutator::mutate;
    RangeMap known_;

    WI bnd(const Expr& e) const { return bound(e, known_); }

    WI sum_bound(const Sum& sum) const {
        WI r{sum.constant, sum.constant};
        for (const auto& [atom, c] : sum.terms) {
            WI a = bnd(atom);
            W x = mulw(a.lo, c), y = mulw(a.hi, c);
            r.lo = addw(r.lo, std::min(x, y));
            r.hi = addw(r.hi, std::max(x, y));
        }
        return r;
    }
    // The sum's computed value equals its exact integer value.
    bool exact(const Sum& sum) const { return fits(sum_bound(sum), sum.type); }
    // a - b computed in a's type equals the exact difference.
    bool exact_difference(const Expr& a, const Expr& b) const {
        if (assume_no_overflow(a->type)) return true;
        WI x = bnd(a), y = bnd(b);
        return fits({addw(x.lo, negw(y.hi)), addw(x.hi, negw(y.lo))}, a->type);
    }

    // ---- binary -------------------------------------------------------------------
    Expr binary(BinaryOp op, const Expr& a, const Expr& b, SourceLoc loc) {
        DataType t = a->type;
        if (!is_int_scalar(t) || !is_int_scalar(b->type)) return make_binary(op, a, b, loc);
        auto ca = as_const_int(a), cb = as_const_int(b);
        if (ca && cb) {
            if (auto v = fold_int_binary(op, *ca, *cb, t)) {
                DataType rt = (is_comparison(op) || is_logical(op)) ? DataType::boolean() : t;
                return make_int(*v, rt, loc);
            }
            return make_binary(op, a, b, loc);
        }
        if (t.is_bool()) return bool_binary(op, a, b, loc);
        switch (op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Mul: {
            if (op == BinaryOp::Mul && !ca && !cb) return make_binary(op, a, b, loc);
            Sum sum{t, {}, 0};
            if (op == BinaryOp::Mul) {
                if (cb)
                    collect(a, *cb, sum);
                else
                    collect(b, *ca, sum);
            } else {
                collect(a, 1, sum);
                collect(b, op == BinaryOp::Add ? 1 : -1, sum);
            }
            while (fold_div_mod_pairs(sum)) {
            }
            return from_sum(sum, loc);
        }
        case BinaryOp::FloorDiv: return floor_div(a, b, loc);
        case BinaryOp::FloorMod: return floor_mod(a, b, loc);
        case BinaryOp::Min:
        case BinaryOp::Max: return min_max(op, a, b, loc);
        case BinaryOp::EQ:
        case BinaryOp::NE:
        case BinaryOp::LT:
        case BinaryOp::LE:
        case BinaryOp::GT:
        case BinaryOp::GE: return compare(op, a, b, loc);
        case BinaryOp::BitAnd:
        case BinaryOp::BitOr:
        case BinaryOp::BitXor:
        case BinaryOp::Shl:
        case BinaryOp::Shr: return bits(op, a, b, loc);
        default: return make_binary(op, a, b, loc);
        }
    }

    Expr bool_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
        if (as_const_int(a) && !as_const_int(b) && is_commutative(op)) std::swap(a, b);
        auto cb = as_const_int(b);
        bool same = structural_equal(a, b);
        switch (op) {
        case BinaryOp::And:
        case BinaryOp::BitAnd:
            if (cb) return *cb ? a : make_bool(false, loc);
            if (same) return a;
            break;
        case BinaryOp::Or:
        case BinaryOp::BitOr:
            if (cb) return *cb ? make_bool(true, loc) : a;
            if (same) return a;
            break;
        case BinaryOp::EQ:
            if (cb) return *cb ? a : unary(UnaryOp::Not, a, loc);
            if (same) return make_bool(true, loc);
            break;
        case BinaryOp::NE:
        case BinaryOp::BitXor:
            if (cb) return *cb ? unary(UnaryOp::Not, a, loc) : a;
            if (same) return make_bool(false, loc);
            break;
        default: break;
        }
        return make_binary(op, a, b, loc);
    }

    Expr floor_div(const Expr& a, const Expr& b, SourceLoc loc) {
        DataType t = a->type;
        auto cb = as_const_int(b);
        WI ba = bnd(a);
        if (!cb) {
            WI bb = bnd(b);
            if (bb.lo > 0 && ba.lo >= 0 && ba.hi < bb.lo) return make_int(0, t, loc);
            return make_binary(BinaryOp::FloorDiv, a, b, loc);
        }
        int64_t c = *cb;
        if (c == 1) return a;
        if (c <= 0) return make_binary(BinaryOp::FloorDiv, a, b, loc);
        if (ba.bounded() && floordivw(ba.lo, c) == floordivw(ba.hi, c))
            return make_int(static_cast<int64_t>(floordivw(ba.lo, c)), t, loc);
        // (x / c1) / c -> x / (c1 * c)
        if (auto inner = a->as<BinaryNode>(); inner && inner->op == BinaryOp::FloorDiv) {
            if (auto c1 = as_const_int(inner->b); c1 && *c1 > 0) {
                W p = W(*c1) * W(c);
                if (p <= W(t.max_value()))
                    return floor_div(inner->a, make_int(static_cast<int64_t>(p), t, loc), loc);
            }
        }
        Sum sum = to_sum(a);
        if (!exact(sum)) return make_binary(BinaryOp::FloorDiv, a, b, loc);
        // Divide through by a common factor of every coefficient, the constant and c.
        int64_t g = c;
        for (const auto& [atom, k] : sum.terms) {
            if (k == signed_min(t))
                g = 1;
            else
                g = std::gcd(g, k < 0 ? -k : k);
        }
        g = sum.constant == signed_min(t) ? 1 : std::gcd(g, sum.constant < 0 ? -sum.constant : sum.constant);
        if (g > 1) {
            Sum reduced{t, {}, sum.constant / g};
            for (const auto& [atom, k] : sum.terms) reduced.terms.emplace_back(atom, k / g);
            return floor_div(from_sum(reduced, loc), make_int(c / g, t, loc), loc);
        }
        // (q * c + r) / c -> q + r / c
        Sum q{t, {}, floordiv_i64(sum.constant, c)}, r{t, {}, floormod_i64(sum.constant, c)};
        for (const auto& [atom, k] : sum.terms) {
            if (k % c == 0)
                q.terms.emplace_back(atom, k / c);
            else
                r.terms.emplace_back(atom, k);
        }
        if ((q.terms.empty() && q.constant == 0) || !exact(r))
            return make_binary(BinaryOp::FloorDiv, a, b, loc);
        Expr quotient = from_sum(q, loc);
        if (r.terms.empty()) return quotient;  // 0 <= r.constant < c
        return binary(BinaryOp::Add, quotient, floor_div(from_sum(r, loc), b, loc), loc);
    }

    Expr floor_mod(const Expr& a, const Expr& b, SourceLoc loc) {
        DataType t = a->type;
        auto cb = as_const_int(b);
        WI ba = bnd(a);
        if (!cb) {
            WI bb = bnd(b);
            if (bb.lo > 0 && ba.lo >= 0 && ba.hi < bb.lo) return a;
            return make_binary(BinaryOp::FloorMod, a, b, loc);
        }
        int64_t c = *cb;
        if (c == 1 || c == -1) return make_int(0, t, loc);
        if (c <= 0) return make_binary(BinaryOp::FloorMod, a, b, loc);
        if (ba.bounded() && floordivw(ba.lo, c) == floordivw(ba.hi, c)) {
            W base = floordivw(ba.lo, c) * c;
            if (base == 0) return a;
            return binary(BinaryOp::Sub, a, make_int(static_cast<int64_t>(base), t, loc), loc);
        }
        // (x % c1) % c -> x % c when c divides c1
        if (auto inner = a->as<BinaryNode>(); inner && inner->op == BinaryOp::FloorMod) {
            if (auto c1 = as_const_int(inner->b); c1 && *c1 > 0 && *c1 % c == 0)
                return floor_mod(inner->a, b, loc);
        }
        // (q * c + r) % c -> r % c
        Sum sum = to_sum(a);
        if (!exact(sum)) return make_binary(BinaryOp::FloorMod, a, b, loc);
        Sum r{t, {}, floormod_i64(sum.constant, c)};
        bool dropped = r.constant != sum.constant;
        for (const auto& [atom, k] : sum.terms) {
            if (k % c == 0)
                dropped = true;
            else
                r.terms.emplace_back(atom, k);
        }
        if (dropped && exact(r)) {
            if (r.terms.empty()) return make_int(r.constant, t, loc);
            return floor_mod(from_sum(r, loc), b, loc);
        }
        return make_binary(BinaryOp::FloorMod, a, b, loc);
    }

    Expr min_max(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
        bool is_min = op == BinaryOp::Min;
        if (structural_equal(a, b)) return a;
        if (as_const_int(a) && !as_const_int(b)) std::swap(a, b);
        WI ba = bnd(a), bb = bnd(b);
        if (ba.hi <= bb.lo) return is_min ? a : b;
        if (bb.hi <= ba.lo) return is_min ? b : a;
        if (exact_difference(a, b)) {
            WI d = bnd(binary(BinaryOp::Sub, a, b, loc));
            if (d.hi <= 0) return is_min ? a : b;
            if (d.lo >= 0) return is_min ? b : a;
        }
        // min(min(x, c1), c2) -> min(x, min(c1, c2))
        if (auto cb = as_const_int(b)) {
            if (auto inner = a->as<BinaryNode>(); inner && inner->op == op) {
                if (auto c1 = as_const_int(inner->b)) {
                    int64_t c = is_min ? std::min(*c1, *cb) : std::max(*c1, *cb);
                    return make_binary(op, inner->a, make_int(c, a->type, loc), loc);
                }
            }
        }
        return make_binary(op, a, b, loc);
    }

    Expr compare(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
        if (structural_equal(a, b))
            return make_bool(op == BinaryOp::EQ || op == BinaryOp::LE || op == BinaryOp::GE, loc);
        if (as_const_int(a) && !as_const_int(b)) {
            std::swap(a, b);
            op = flip(op);
        }
        if (auto v = decide_compare(op, bnd(a), bnd(b))) return make_bool(*v, loc);
        if (exact_difference(a, b)) {
            WI d = bnd(binary(BinaryOp::Sub, a, b, loc));
            if (auto v = decide_compare(op, d, WI{0, 0})) return make_bool(*v, loc);
        }
        return make_binary(op, a, b, loc);
    }

    Expr bits(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
        DataType t = a->type;
        if (is_commutative(op) && as_const_int(a) && !as_const_int(b)) std::swap(a, b);
        auto cb = as_const_int(b);
        bool same = structural_equal(a, b);
        WI ba = bnd(a);
        switch (op) {
        case BinaryOp::BitAnd:
            if (cb && *cb == 0) return make_int(0, t, loc);
            if (cb && *cb == normalize_int(-1, t)) return a;
            if (same) return a;
            // x & (2^k - 1) -> x when 0 <= x < 2^k
            if (cb && *cb > 0 && (*cb & (*cb + 1)) == 0 && ba.lo >= 0 && ba.hi <= *cb) return a;
            break;
        case BinaryOp::BitOr:
            if (cb && *cb == 0) return a;
            if (same) return a;
            break;
        case BinaryOp::BitXor:
            if (cb && *cb == 0) return a;
            if (same) return make_int(0, t, loc);
            break;
        case BinaryOp::Shl:
        case BinaryOp::Shr:
            if (cb && *cb == 0) return a;
            if (op == BinaryOp::Shr && cb && *cb > 0 && *cb < t.bits && ba.lo >= 0 &&
                ba.hi < (W(1) << static_cast<int>(*cb)))
                return make_int(0, t, loc);
            break;
        default: break;
        }
        return make_binary(op, a, b, loc);
    }

    // ---- unary, select, cast ------------------------------------------------------
    Expr unary(UnaryOp op, const Expr& a, SourceLoc loc) {
        DataType t = a->type;
        if (!is_int_scalar(t)) return make_unary(op, a, loc);
        auto ca = as_const_int(a);
        switch (op) {
        case UnaryOp::Neg: {
            if (t.is_bool()) break;
            Sum sum{t, {}, 0};
            collect(a, -1, sum);
            return from_sum(sum, loc);
        }
        case UnaryOp::Not: {
            if (ca) return make_bool(*ca == 0, loc);
            if (auto inner = a->as<UnaryNode>(); inner && inner->op == UnaryOp::Not) return inner->a;
            if (auto cmp = a->as<BinaryNode>(); cmp && is_comparison(cmp->op) && is_int_scalar(cmp->a->type))
                return make_binary(negate(cmp->op), cmp->a, cmp->b, loc);
            break;
        }
        case UnaryOp::BitNot: {
            if (ca) return make_int(~*ca, t, loc);
            if (auto inner = a->as<UnaryNode>(); inner && inner->op == UnaryOp::BitNot) return inner->a;
            break;
        }
        }
        return make_unary(op, a, loc);
    }

    Expr select(const Expr& c, const Expr& t, const Expr& f, SourceLoc loc) {
        if (auto cc = as_const_int(c)) return *cc ? t : f;
        if (structural_equal(t, f)) return t;
        return make_select(c, t, f, loc);
    }

    Expr cast(DataType to, const Expr& v, SourceLoc loc) {
        if (v->type == to) return v;
        if (!to.is_scalar() || !v->type.is_scalar()) return make_cast(to, v, loc);
        if (auto c = as_const_int(v)) {
            if (to.is_integer() || to.is_bool()) return make_int(*c, to, loc);
            if (to.is_float() && exact_in_float(*c, to)) return make_float(static_cast<double>(*c), to, loc);
        }
        if (auto f = v->as<FloatImmNode>()) {
            double x = f->value;
            // Only integral values the source type holds exactly (rounding is codegen's).
            bool small_integral = std::isfinite(x) && x >= -2048 && x <= 2048 && x == std::trunc(x) &&
                                  exact_in_float(static_cast<int64_t>(x), v->type);
            if (small_integral && (to.is_integer() || to.is_bool())) {
                int64_t i = static_cast<int64_t>(x);
                if (to.is_bool()) return make_bool(i != 0, loc);
                if (i >= to.min_value() && i <= to.max_value()) return make_int(i, to, loc);
            }
        }
        return make_cast(to, v, loc);
    }

    // ---- IRMutator hooks: expressions ---------------------------------------------
    static Expr keep(const Expr& result, const Expr& self) {
        return structural_equal(result, self) ? self : result;
    }

    Expr mutate_var(const VarNode* op, const Expr& self) override {
        if (is_int_scalar(op->type)) {
            WI b = bnd(self);
            if (b.bounded() && b.lo == b.hi) return make_int(static_cast<int64_t>(b.lo), op->type, op->loc);
        }
        return self;
    }
    Expr mutate_binary(const BinaryNode* op, const Expr& self) override {
        return keep(binary(op->op, mutate(op->a), mutate(op->b), op->loc), self);
    }
    Expr mutate_unary(const UnaryNode* op, const Expr& self) override {
        return keep(unary(op->op, mutate(op->a), op->loc), self);
    }
    Expr mutate_select(const SelectNode* op, const Expr& self) override {
        return keep(select(mutate(op->cond), mutate(op->t), mutate(op->f), op->loc), self);
    }
    Expr mutate_cast(const CastNode* op, const Expr& self) override {
        return keep(cast(op->type, mutate(op->value), op->loc), self);
    }

    // ---- IRMutator hooks: statements ----------------------------------------------
    Stmt mutate_for(const ForNode* op, const Stmt& self) override {
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        WI be = bnd(ext), bm = bnd(mn);
        if (be.hi <= 0) return make_seq({}, op->loc);
        if (is_const_int(ext, 1)) return mutate(substitute(op->body, VarMap{{op->var.get(), mn}}));
        known_.set(op->var, narrow(WI{bm.lo, addw(addw(bm.hi, be.hi), -1)}));
        Stmt body = mutate(op->body);
        known_.erase(op->var.get());
        if (mn == op->min && ext == op->extent && body == op->body) return self;
        return make_for(op->var, mn, ext, op->for_kind, body, op->loc, op->stages);
    }

    Stmt mutate_if(const IfNode* op, const Stmt& self) override {
        Expr c = mutate(op->cond);
        if (auto cc = as_const_int(c)) {
            if (*cc) return mutate(op->then_case);
            return op->else_case ? mutate(op->else_case) : make_seq({}, op->loc);
        }
        Stmt t = mutate(op->then_case);
        Stmt e = mutate(op->else_case);
        if (is_no_op(e)) e = nullptr;
        if (is_no_op(t) && !e) return make_seq({}, op->loc);
        if (c == op->cond && t == op->then_case && e == op->else_case) return self;
        return make_if(c, t, e, op->loc);
    }

    Stmt mutate_let(const LetStmtNode* op, const Stmt& self) override {
        Expr v = mutate(op->value);
        if (v->is<IntImmNode>() || v->is<FloatImmNode>() || v->is<VarNode>())
            return mutate(substitute(op->body, VarMap{{op->var.get(), v}}));
        bool ranged = is_int_scalar(op->var->type);
        if (ranged) known_.set(op->var, narrow(bnd(v)));
        Stmt body = mutate(op->body);
        if (ranged) known_.erase(op->var.get());
        if (v == op->value && body == op->body) return self;
        return make_let(op->var, v, body, op->loc);
    }

    Stmt mutate_assert(const AssertNode* op, const Stmt& self) override {
        Expr c = mutate(op->cond);
        if (is_const_int(c, 1)) return make_seq({}, op->loc);
        if (c == op->cond) return self;
        return make_assert(c, op->msg, op->loc);
    }
};

}  // namespace

std::optional<int64_t> fold_int_binary(BinaryOp op, int64_t a, int64_t b, DataType t) {
    auto norm = [&](int64_t v) { return normalize_int(v, t); };
    switch (op) {
    case BinaryOp::Add: return norm(s(u(a) + u(b)));
    case BinaryOp::Sub: return norm(s(u(a) - u(b)));
    case BinaryOp::Mul: return norm(s(u(a) * u(b)));
    case BinaryOp::FloorDiv: {
        if (b == 0 || (a == kNeg && b == -1)) return std::nullopt;
        int64_t q = floordiv_i64(a, b);
        if (normalize_int(q, t) != q) return std::nullopt;  // overflow (e.g. -128 / -1 in i8)
        return q;
    }
    case BinaryOp::FloorMod:
        if (b == 0) return std::nullopt;
        if (b == -1) return 0;
        return norm(floormod_i64(a, b));
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::EQ: return a == b;
    case BinaryOp::NE: return a != b;
    case BinaryOp::LT: return a < b;
    case BinaryOp::LE: return a <= b;
    case BinaryOp::GT: return a > b;
    case BinaryOp::GE: return a >= b;
    case BinaryOp::And: return (a != 0) && (b != 0);
    case BinaryOp::Or: return (a != 0) || (b != 0);
    case BinaryOp::BitAnd: return norm(a & b);
    case BinaryOp::BitOr: return norm(a | b);
    case BinaryOp::BitXor: return norm(a ^ b);
    case BinaryOp::Shl:
        if (b < 0 || b >= t.bits) return std::nullopt;
        return norm(s(u(a) << b));
    case BinaryOp::Shr:
        if (b < 0 || b >= t.bits) return std::nullopt;
        return norm(a >> b);  // normalised unsigned values are >= 0: logical shift
    case BinaryOp::Div:
    case BinaryOp::Mod: return std::nullopt;
    }
    return std::nullopt;
}

Interval bound_of(const Expr& e, const RangeMap& known) {
    return narrow(bound(e, known));
}

Expr simplify(const Expr& e, const RangeMap& known) {
    if (!e) return e;
    Simplifier s(known);
    return s.mutate(e);
}

Stmt simplify(const Stmt& st, const RangeMap& known) {
    if (!st) return st;
    Simplifier s(known);
    return s.mutate(st);
}

PrimFunc simplify_pass(const PrimFunc& f) {
    RangeMap known;
    for (const auto& p : f.params)
        if (p.kind == ParamKind::Size && p.var) known.set(p.var, Interval{0, Interval::kPosInf});
    PrimFunc out = f;
    for (auto& g : out.grid) g = simplify(g, known);
    for (int d = 0; d < 3; ++d) {
        if (!f.block_idx[d]) continue;
        Interval r{0, 0};
        if (static_cast<size_t>(d) < out.grid.size()) {
            Interval g = bound_of(out.grid[d], known);
            r.max = g.has_max() ? std::max<int64_t>(0, g.max - 1) : Interval::kPosInf;
        }
        known.set(f.block_idx[d], r);
    }
    out.body = simplify(f.body, known);
    return out;
}

Pass make_simplify_pass() {
    return Pass{"simplify", [](const PrimFunc& f, PassContext&) { return simplify_pass(f); }};
}

}  // namespace tilec::transform
