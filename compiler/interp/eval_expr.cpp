// Expression evaluation: integers wrap to their type, floats compute in double, loads
// are bounds- and init-checked. See interp.h for the semantics this implements.
#include <cmath>
#include <limits>

#include "interp/float_formats.h"
#include "interp/machine.h"
#include "ir/printer.h"

namespace tilec::interp::detail {

using namespace ir;

namespace {

int64_t wrap(uint64_t v, DataType t) {
    return normalize_int(static_cast<int64_t>(v), t);
}

double nan_min(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b < a ? b : a;
}
double nan_max(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b > a ? b : a;
}

bool int_less(int64_t a, int64_t b, DataType t) {
    return is_u64(t) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

// Floor division and modulo of integers of type t (b != 0), wrapped to t.
int64_t floor_div(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return wrap(static_cast<uint64_t>(a), t);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return wrap(static_cast<uint64_t>(q), t);
}
int64_t floor_mod(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return wrap(static_cast<uint64_t>(r), t);
}

}  // namespace

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
            round_to_float_type(static_cast<const FloatImmNode*>(e.get())->value, e->type));
    case ExprKind::StringImm: fail(e->loc, "a string is not a value");
    case ExprKind::Var: return var_value(static_cast<const VarNode*>(e.get()), e->loc);
    case ExprKind::Binary: return eval_binary(static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Unary: {
        auto* op = static_cast<const UnaryNode*>(e.get());
        DataType t = op->a->type;
        Value a = eval(op->a);
        switch (op->op) {
        case UnaryOp::Neg:
            if (t.is_float()) return Value::of_float(-a.f);
            return Value::of_int(wrap(0 - static_cast<uint64_t>(a.i), t));
        case UnaryOp::Not: return Value::of_int(a.i == 0 ? 1 : 0);
        case UnaryOp::BitNot: return Value::of_int(wrap(~static_cast<uint64_t>(a.i), t));
        }
        break;
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
    auto truth = [](bool v) { return Value::of_int(v ? 1 : 0); };
    if (t.is_float()) {
        double x = a.f, y = b.f;
        switch (op->op) {
        case BinaryOp::Add: return Value::of_float(x + y);
        case BinaryOp::Sub: return Value::of_float(x - y);
        case BinaryOp::Mul: return Value::of_float(x * y);
        case BinaryOp::Div: return Value::of_float(x / y);
        case BinaryOp::Mod: return Value::of_float(std::fmod(x, y));
        case BinaryOp::Min: return Value::of_float(nan_min(x, y));
        case BinaryOp::Max: return Value::of_float(nan_max(x, y));
        case BinaryOp::EQ: return truth(x == y);
        case BinaryOp::NE: return truth(x != y);
        case BinaryOp::LT: return truth(x < y);
        case BinaryOp::LE: return truth(x <= y);
        case BinaryOp::GT: return truth(x > y);
        case BinaryOp::GE: return truth(x >= y);
        default: fail(op->loc, std::string("operator '") + binary_op_name(op->op) + "' on floats");
        }
    }
    int64_t x = a.i, y = b.i;
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op->op) {
    case BinaryOp::Add: return Value::of_int(wrap(ux + uy, t));
    case BinaryOp::Sub: return Value::of_int(wrap(ux - uy, t));
    case BinaryOp::Mul: return Value::of_int(wrap(ux * uy, t));
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod:
        if (y == 0)
            fail(op->loc, std::string("integer ") + (op->op == BinaryOp::FloorDiv ? "division" : "modulo") +
                              " by zero: " + print(op->b) + " is 0");
        return Value::of_int(op->op == BinaryOp::FloorDiv ? floor_div(x, y, t) : floor_mod(x, y, t));
    case BinaryOp::Min: return Value::of_int(int_less(y, x, t) ? y : x);
    case BinaryOp::Max: return Value::of_int(int_less(x, y, t) ? y : x);
    case BinaryOp::EQ: return truth(x == y);
    case BinaryOp::NE: return truth(x != y);
    case BinaryOp::LT: return truth(int_less(x, y, t));
    case BinaryOp::LE: return truth(!int_less(y, x, t));
    case BinaryOp::GT: return truth(int_less(y, x, t));
    case BinaryOp::GE: return truth(!int_less(x, y, t));
    case BinaryOp::BitAnd: return Value::of_int(wrap(ux & uy, t));
    case BinaryOp::BitOr: return Value::of_int(wrap(ux | uy, t));
    case BinaryOp::BitXor: return Value::of_int(wrap(ux ^ uy, t));
    case BinaryOp::Shl:
    case BinaryOp::Shr: {
        int width = t.is_bool() ? 1 : t.bits;
        bool negative = !t.is_uint() && y < 0;
        if (negative || static_cast<uint64_t>(y) >= static_cast<uint64_t>(width))
            fail(op->loc, "shift by " + std::to_string(is_u64(t) ? static_cast<int64_t>(uy) : y) + " (" +
                              print(op->b) + ") is outside [0, " + std::to_string(width) + ") for " +
                              t.str());
        if (op->op == BinaryOp::Shl) return Value::of_int(wrap(ux << y, t));
        // Arithmetic for signed types (x is sign-extended), logical for unsigned ones.
        if (t.is_uint()) return Value::of_int(wrap(ux >> y, t));
        return Value::of_int(wrap(static_cast<uint64_t>(x >> y), t));
    }
    default: break;
    }
    fail(op->loc, std::string("operator '") + binary_op_name(op->op) + "' on " + t.str());
}

Value Machine::eval_call(const CallNode* op) {
    if (op->args.empty()) fail(op->loc, std::string(call_op_name(op->op)) + " without arguments");
    if (is_warp_shuffle(op->op))
        fail(op->loc, std::string(call_op_name(op->op)) + " is a thread-level warp operation; the reference "
                                                          "interpreter runs tile-level IR");
    DataType t = op->args[0]->type;
    if (op->op == CallOp::Abs && !t.is_float()) {
        int64_t x = eval_int(op->args[0]);
        bool neg = t.is_int() && x < 0;
        return Value::of_int(neg ? normalize_int(static_cast<int64_t>(0 - static_cast<uint64_t>(x)), t) : x);
    }
    auto arg = [&](size_t k) {
        Value v = eval(op->args[k]);
        DataType at = op->args[k]->type;
        return at.is_float() ? v.f : int_to_double(v.i, at);
    };
    double x = arg(0);
    double r = 0;
    switch (op->op) {
    case CallOp::Exp: r = std::exp(x); break;
    case CallOp::Exp2: r = std::exp2(x); break;
    case CallOp::Log: r = std::log(x); break;
    case CallOp::Log2: r = std::log2(x); break;
    case CallOp::Sqrt: r = std::sqrt(x); break;
    case CallOp::Rsqrt: r = 1.0 / std::sqrt(x); break;
    case CallOp::Tanh: r = std::tanh(x); break;
    case CallOp::Sigmoid: r = 1.0 / (1.0 + std::exp(-x)); break;
    case CallOp::Abs: r = std::fabs(x); break;
    case CallOp::Floor: r = std::floor(x); break;
    case CallOp::Ceil: r = std::ceil(x); break;
    case CallOp::Pow:
        if (op->args.size() != 2) fail(op->loc, "pow takes two arguments");
        r = std::pow(x, arg(1));
        break;
    case CallOp::ShflXor:
    case CallOp::ShflUp:
    case CallOp::ShflDown:
    case CallOp::ShflIdx: break;  // refused above
    }
    if (!op->type.is_float()) return convert(Value::of_float(r), DataType::f64(), op->type);
    return Value::of_float(r);
}

}  // namespace tilec::interp::detail
