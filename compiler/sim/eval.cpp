// Per-thread expression evaluation as the GPU computes it: the scalar rules of
// compiler/scalar with every float operation rounded to its register type (f64, or f32:
// the GPU code holds f16, bf16 and the 8-bit floats in f32 registers and rounds them to
// their type only where they are stored); loads and bounds.
#include <optional>

#include "ir/printer.h"
#include "scalar/float_formats.h"
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

namespace {

// The type a float result is computed in (codegen/gpu: GpuLowering::reg_type).
DataType register_type(DataType t) {
    return t.kind == TypeKind::Float && t.bits == 64 ? t : DataType::f32();
}

}  // namespace

Value Executor::var_value(const VarNode* v, int t, SourceLoc loc) const {
    for (size_t k = tdepth_; k-- > 0;)
        if (tvars_[k].var == v) return tvars_[k].vals[static_cast<size_t>(t)];
    if (v->var_kind == VarKind::ThreadIdx) return Value::of_int(v->dim == 0 ? t : 0);
    for (size_t k = uniform_.size(); k-- > 0;)
        if (uniform_[k].first == v) return uniform_[k].second;
    fatal(loc.valid() ? loc : v->loc, "variable '" + v->name + "' has no value here");
}

Storage& Executor::storage(const Buffer& b, SourceLoc loc) const {
    for (size_t k = buffers_.size(); k-- > 0;)
        if (buffers_[k].first == b.get()) return *buffers_[k].second;
    fatal(loc, "buffer '" + b->name + "' is not allocated here");
}

Value Executor::eval(const Expr& e, int t) {
    switch (e->kind) {
    case ExprKind::IntImm: return Value::of_int(static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::FloatImm:
        return Value::of_float(
            scalar::round_to_float_type(static_cast<const FloatImmNode*>(e.get())->value, e->type));
    case ExprKind::StringImm: fatal(at(e->loc), "a string is not a value");
    case ExprKind::Var: return var_value(static_cast<const VarNode*>(e.get()), t, e->loc);
    case ExprKind::Binary: return eval_binary(static_cast<const BinaryNode*>(e.get()), t);
    case ExprKind::Unary: {
        auto* op = static_cast<const UnaryNode*>(e.get());
        DataType ty = op->a->type;
        Value a = eval(op->a, t);
        if (op->op == UnaryOp::Neg && ty.is_float()) return Value::of_float(-a.f);
        return Value::of_int(scalar::int_unary(op->op, a.i, ty));
    }
    case ExprKind::Select: {
        auto* op = static_cast<const SelectNode*>(e.get());
        return eval(op->cond, t).i != 0 ? eval(op->t, t) : eval(op->f, t);
    }
    case ExprKind::Cast: {
        auto* op = static_cast<const CastNode*>(e.get());
        return scalar::convert(eval(op->value, t), op->value->type, op->type);
    }
    case ExprKind::Call: {
        auto* op = static_cast<const CallNode*>(e.get());
        if (!is_warp_shuffle(op->op)) return eval_call(op, t);
        auto it = shuffled_.find(op);
        if (it == shuffled_.end())
            fatal(at(op->loc), std::string("internal error in the simulator: ") + call_op_name(op->op) +
                                   " evaluated outside its statement's warp step");
        return it->second[static_cast<size_t>(t)];
    }
    case ExprKind::Load: return load(static_cast<const LoadNode*>(e.get()), t);
    }
    fatal(at(e->loc), "the simulator cannot evaluate this expression");
}

Value Executor::eval_binary(const BinaryNode* op, int t) {
    DataType ty = op->a->type;
    if (op->op == BinaryOp::And) return Value::of_int(eval(op->a, t).i != 0 && eval(op->b, t).i != 0);
    if (op->op == BinaryOp::Or) return Value::of_int(eval(op->a, t).i != 0 || eval(op->b, t).i != 0);
    Value a = eval(op->a, t), b = eval(op->b, t);
    if (ty.is_float()) {
        std::optional<Value> v = scalar::float_binary(op->op, a.f, b.f);
        if (!v) fatal(at(op->loc), std::string("operator '") + binary_op_name(op->op) + "' on floats");
        // The GPU rounds each arithmetic result to its register type (min/max pick an
        // operand): a bf16 w - 3.0 is an f32 difference until it is stored.
        if (scalar::is_float_arithmetic(op->op)) v->f = scalar::round_to_float_type(v->f, register_type(ty));
        return *v;
    }
    scalar::IntResult r = scalar::int_binary(op->op, a.i, b.i, ty);
    switch (r.fault) {
    case scalar::IntFault::None: return Value::of_int(r.value);
    case scalar::IntFault::DivisionByZero:
        issue(IssueKind::Arithmetic, at(op->loc), t, [&] {
            return std::string("integer ") + (op->op == BinaryOp::FloorDiv ? "division" : "modulo") +
                   " by zero: " + print(op->b) + " is 0";
        });
        return Value::of_int(0);
    case scalar::IntFault::ShiftOutOfRange:
        issue(IssueKind::Arithmetic, at(op->loc), t, [&] {
            int width = ty.is_bool() ? 1 : ty.bits;
            return "shift by " + std::to_string(b.i) + " (" + print(op->b) + ") is outside [0, " +
                   std::to_string(width) + ") for " + ty.str();
        });
        return Value::of_int(0);
    case scalar::IntFault::NotAnIntegerOp: break;
    }
    fatal(at(op->loc), std::string("operator '") + binary_op_name(op->op) + "' on " + ty.str());
}

Value Executor::eval_call(const CallNode* op, int t) {
    if (op->args.empty()) fatal(at(op->loc), std::string(call_op_name(op->op)) + " without arguments");
    DataType ty = op->args[0]->type;
    if (op->op == CallOp::Abs && !ty.is_float())
        return Value::of_int(scalar::int_abs(eval_int(op->args[0], t), ty));
    auto arg = [&](size_t k) {
        Value v = eval(op->args[k], t);
        DataType at = op->args[k]->type;
        return at.is_float() ? v.f : scalar::int_to_double(v.i, at);
    };
    double x = arg(0), y = 0;
    if (is_warp_shuffle(op->op))
        fatal(at(op->loc), "internal error in the simulator: shuffle as a plain call");
    if (op->op == CallOp::Pow) {
        if (op->args.size() != 2) fatal(at(op->loc), "pow takes two arguments");
        y = arg(1);
    }
    double r = scalar::math_call(op->op, x, y);
    if (!op->type.is_float()) return scalar::convert(Value::of_float(r), DataType::f64(), op->type);
    return Value::of_float(scalar::round_to_float_type(r, register_type(op->type)));
}

int64_t Executor::offset_of(const Storage& s, const std::vector<Expr>& indices, SourceLoc loc, int t,
                            bool store) {
    if (indices.size() != s.shape.size())
        fatal(loc, "'" + s.name() + "' of rank " + std::to_string(s.shape.size()) + " indexed with " +
                       std::to_string(indices.size()) + " indices");
    int64_t idx[kMaxRank];
    bool inside = true;
    int64_t off = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
        idx[d] = eval_int(indices[d], t);
        if (idx[d] < 0 || idx[d] >= s.shape[d]) inside = false;
        off += idx[d] * s.strides[d];
    }
    if (!inside) {
        issue(IssueKind::OutOfBounds, loc, t, [&] {
            std::vector<int64_t> v(idx, idx + indices.size());
            return std::string(store ? "store" : "load") + " out of bounds: '" + s.name() + "'" +
                   scalar::list_str(v) + " of " + kind_word(s.scope) +
                   (s.scope == Scope::Global ? " tensor" : " buffer") + " of shape " +
                   scalar::list_str(s.shape);
        });
        return -1;
    }
    return off;
}

Value Executor::load(const LoadNode* op, int t) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    int64_t off = offset_of(s, op->indices, loc, t, false);
    if (off < 0) return Value{};
    record(op, loc, s, false, t, off);
    int64_t slot = s.scope == Scope::Register ? t * s.size + off : off;
    if (s.scope == Scope::Shared) shared_read(s, off, t, loc, op);
    if (!s.wgmma_pending.empty()) check_wgmma_register(s, slot, off, t, loc, false);
    if (!s.init.empty() && !s.init[static_cast<size_t>(slot)] && opt_.check_uninitialized) {
        issue(IssueKind::Uninitialized, loc, t, [&] {
            return "read of uninitialised " + std::string(kind_word(s.scope)) + " element '" + s.name() +
                   "'[" + std::to_string(off) + "] (never written" +
                   (s.scope == Scope::Register ? " by thread " + std::to_string(t) : std::string()) + ")";
        });
    }
    return s.get(slot);
}

}  // namespace tilec::sim::detail
