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
#include "scalar/scalar.h"
#include "support/diagnostics.h"
#include "transform/simplify_internal.h"

namespace tilec::transform {

using namespace ir;

using namespace detail;

namespace {

// Exactly representable in float type t (for folding int -> float casts).
using scalar::int_exact_in_float;

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
        Sum q{t, {}, floor_div_i64(sum.constant, c)}, r{t, {}, floor_mod_i64(sum.constant, c)};
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
        Sum r{t, {}, floor_mod_i64(sum.constant, c)};
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
            if (to.is_float() && int_exact_in_float(*c, to))
                return make_float(static_cast<double>(*c), to, loc);
        }
        if (auto f = v->as<FloatImmNode>()) {
            double x = f->value;
            // Only integral values the source type holds exactly (rounding is codegen's).
            bool small_integral = std::isfinite(x) && x >= -2048 && x <= 2048 && x == std::trunc(x) &&
                                  int_exact_in_float(static_cast<int64_t>(x), v->type);
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
        // A parallel loop keeps its unit dimensions: they are how its fragments' indices
        // match its coordinates (s[i, c] in `parallel(1, BN)`, a row per block).
        if (is_const_int(ext, 1) && op->for_kind != ForKind::Parallel)
            return mutate(substitute(op->body, VarMap{{op->var.get(), mn}}));
        // (A range of one value would fold the variable to a constant all the same.)
        if (!is_const_int(ext, 1)) known_.set(op->var, narrow(WI{bm.lo, addw(addw(bm.hi, be.hi), -1)}));
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
    return scalar::fold_int_binary(op, a, b, t);
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
