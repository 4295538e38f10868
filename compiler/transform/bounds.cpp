// Bounds of integer expressions: interval arithmetic in wide integers, so the simplifier
// can decide comparisons and prove that a narrow type's arithmetic does not wrap.
#include <algorithm>

#include "transform/simplify_internal.h"

namespace tilec::transform {

namespace detail {

namespace {

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

}  // namespace

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

}  // namespace detail

}  // namespace tilec::transform
