// Expression evaluation: integers wrap to their type, floats compute in double, loads
// are bounds- and init-checked. See interp.h; the scalar rules are compiler/scalar's.
#include <cmath>
#include <limits>

#include "interp/machine.h"
#include "ir/printer.h"
#include "scalar/float_formats.h"

namespace tilec::interp::detail {

using namespace ir;

Value Machine::var_value(const VarNode* v, SourceLoc loc) const {
    for (size_t k = vars_.size(); k-- > 0;)
        if (vars_[k].first == v) return vars_[k].second;
    if (v->var_kind == VarKind::ThreadIdx)
        fail(loc.valid() ? loc : v->loc,
             "thread-level IR ('" + v->name +
                 "') is not interpreted here: the reference interpreter runs tile-level "
                 "IR, one logical thread per block");
    fail(loc.valid() ? loc : v->loc, "variable '" + v->name + "' has no value here");
}

Storage& Machine::storage(const Buffer& b, SourceLoc loc) const {
    for (size_t k = buffers_.size(); k-- > 0;)
        if (buffers_[k].first == b.get()) return *buffers_[k].second;
    fail(loc, "buffer '" + b->name + "' is not allocated here");
}

int64_t Machine::element_offset(const Storage& s, const std::vector<Expr>& indices, SourceLoc loc,
                                int64_t* idx) {
    if (indices.size() != s.shape.size())
        fail(loc, "'" + s.name() + "' of rank " + std::to_string(s.shape.size()) + " indexed with " +
                      std::to_string(indices.size()) + " indices");
    for (size_t d = 0; d < indices.size(); ++d) idx[d] = eval_int(indices[d]);
    if (!s.in_bounds(idx))
        fail(loc, std::string("index out of bounds: ") + element_str(s, idx) + " of " +
                      scope_name(s.buffer->scope) + " buffer of shape " + shape_str(s.shape));
    return s.offset(idx);
}

Value Machine::eval(const Expr& e) {
    switch (e->kind) {
    case ExprKind::IntImm: return Value::of_int(static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::FloatImm:
        return Value::of_float(
            scalar::round_to_float_type(static_cast<const FloatImmNode*>(e.get())->value, e->type));
    case ExprKind::StringImm: fail(e->loc, "a string is not a value");
    case ExprKind::Var: return var_value(static_cast<const VarNode*>(e.get()), e->loc);
    case ExprKind::Binary: return eval_binary(static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Unary: {
        auto* op = static_cast<const UnaryNode*>(e.get());
        DataType t = op->a->type;
        Value a = eval(op->a);
        if (op->op == UnaryOp::Neg && t.is_float()) return Value::of_float(-a.f);
        return Value::of_int(scalar::int_unary(op->op, a.i, t));
    }
    case ExprKind::Select: {
        auto* op = static_cast<const SelectNode*>(e.get());
        return eval_bool(op->cond) ? eval(op->t) : eval(op->f);
    }
    case ExprKind::Cast: {
        auto* op = static_cast<const CastNode*>(e.get());
        return convert(eval(op->value), op->value->type, op->type);
    }
    case ExprKind::Call: return eval_call(static_cast<const CallNode*>(e.get()));
    case ExprKind::Load: {
        auto* op = static_cast<const LoadNode*>(e.get());
        const Storage& s = storage(op->buffer, op->loc);
        int64_t idx[kMaxRank];
        int64_t off = element_offset(s, op->indices, op->loc, idx);
        if (parallel_) race_check(s, off, idx, op->loc, false);
        return s.read(off, idx, op->loc);
    }
    }
    fail(e->loc, "cannot evaluate this expression");
}

double Machine::eval_float(const Expr& e) {
    return eval(e).f;
}
int64_t Machine::eval_int(const Expr& e) {
    return eval(e).i;
}

Value Machine::eval_binary(const BinaryNode* op) {
    DataType t = op->a->type;
    // The logical operators evaluate their right side only when needed.
    if (op->op == BinaryOp::And) return Value::of_int(eval_bool(op->a) && eval_bool(op->b) ? 1 : 0);
    if (op->op == BinaryOp::Or) return Value::of_int(eval_bool(op->a) || eval_bool(op->b) ? 1 : 0);
    Value a = eval(op->a), b = eval(op->b);
    if (t.is_float()) {
        if (auto v = scalar::float_binary(op->op, a.f, b.f)) return *v;
        fail(op->loc, std::string("operator '") + binary_op_name(op->op) + "' on floats");
    }
    scalar::IntResult r = scalar::int_binary(op->op, a.i, b.i, t);
    switch (r.fault) {
    case scalar::IntFault::None: return Value::of_int(r.value);
    case scalar::IntFault::DivisionByZero:
        fail(op->loc, std::string("integer ") + (op->op == BinaryOp::FloorDiv ? "division" : "modulo") +
                          " by zero: " + print(op->b) + " is 0");
    case scalar::IntFault::ShiftOutOfRange: {
        int width = t.is_bool() ? 1 : t.bits;
        fail(op->loc, "shift by " + std::to_string(b.i) + " (" + print(op->b) + ") is outside [0, " +
                          std::to_string(width) + ") for " + t.str());
    }
    case scalar::IntFault::NotAnIntegerOp: break;
    }
    fail(op->loc, std::string("operator '") + binary_op_name(op->op) + "' on " + t.str());
}

Value Machine::eval_call(const CallNode* op) {
    if (op->args.empty()) fail(op->loc, std::string(call_op_name(op->op)) + " without arguments");
    if (is_warp_shuffle(op->op))
        fail(op->loc, std::string(call_op_name(op->op)) + " is a thread-level warp operation; the reference "
                                                          "interpreter runs tile-level IR");
    DataType t = op->args[0]->type;
    if (op->op == CallOp::Abs && !t.is_float())
        return Value::of_int(scalar::int_abs(eval_int(op->args[0]), t));
    auto arg = [&](size_t k) {
        Value v = eval(op->args[k]);
        DataType at = op->args[k]->type;
        return at.is_float() ? v.f : int_to_double(v.i, at);
    };
    double x = arg(0), y = 0;
    if (op->op == CallOp::Pow) {
        if (op->args.size() != 2) fail(op->loc, "pow takes two arguments");
        y = arg(1);
    }
    double r = scalar::math_call(op->op, x, y);  // shuffles were refused above
    if (!op->type.is_float()) return convert(Value::of_float(r), DataType::f64(), op->type);
    return Value::of_float(r);
}

}  // namespace tilec::interp::detail
