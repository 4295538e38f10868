// Expressions during elaboration: literals, names, operators (folded when constant, with
// overflow and division by zero reported), ?:, element reads t[i, j] (constant indices
// checked against on-chip shapes) and casts.
#include <cmath>

#include "frontend/elaborator.h"
#include "ops/elab_util.h"

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;

using ops::plural;
using ops::plural_index;

Value Elaborator::eval(const ast::Expr& e) {
    switch (e.kind) {
    case ast::ExprKind::Int:
        if (e.int_overflow) {
            diags_.error(e.range, "integer literal '" + e.text + "' is too large for a 64-bit integer");
            return Value::poison();
        }
        return Value::of_int(e.int_value);
    case ast::ExprKind::Float: return Value::of_float(e.float_value);
    case ast::ExprKind::Bool: return Value::of_bool(e.bool_value);
    case ast::ExprKind::Inf: return Value::of_float(INFINITY);
    case ast::ExprKind::String: {
        Value v;
        v.kind = K::String;
        v.str = e.text;
        return v;
    }
    case ast::ExprKind::Name: return eval_name(e);
    case ast::ExprKind::Unary: return eval_unary(e);
    case ast::ExprKind::Binary: return eval_binary(e);
    case ast::ExprKind::Ternary: return eval_ternary(e);
    case ast::ExprKind::Index: return eval_index(e);
    case ast::ExprKind::Call: return eval_call(e);
    case ast::ExprKind::Cast: return eval_cast(e);
    case ast::ExprKind::Member: {
        const ast::Expr& base = *e.operands[0];
        Value b = eval(base);
        if (b.is_poison()) return b;
        if (b.kind != K::Block) {
            diags_.error(e.op_range, "'." + e.text + "': only 'block' has members (block.x, block.y, block.z)");
            return Value::poison();
        }
        int dim = e.text == "x" ? 0 : e.text == "y" ? 1 : e.text == "z" ? 2 : -1;
        if (dim < 0) {
            diags_.error(e.op_range, "'block' has no member '" + e.text + "'; it has x, y and z");
            return Value::poison();
        }
        if (!block_idx_[0]) {
            diags_.error(e.range, "block indices are not available here (only inside a kernel body)");
            return Value::poison();
        }
        return Value::of_expr(block_idx_[dim]);
    }
    }
    return Value::poison();
}

Value Elaborator::eval_name(const ast::Expr& e) {
    if (const Binding* b = lookup(e.text)) return b->value;
    if (e.text == "block") {
        Value v;
        v.kind = K::Block;
        return v;
    }
    if (auto t = DataType::from_name(e.text)) return Value::of_type(*t);
    if (lookup_builtin(e.text) != Builtin::None || program_.funcs.count(e.text)) {
        diags_.error(e.range, "'" + e.text + "' is a function; call it with (...)");
        return Value::poison();
    }
    undeclared(e.text, e.range);
    return Value::poison();
}

Value Elaborator::eval_unary(const ast::Expr& e) {
    const ast::Expr& x = *e.operands[0];
    Value v = expect_scalar(eval(x), x.range, "an operand");
    if (v.is_poison()) return v;
    SourceLoc l = loc_of(e.range);
    switch (e.unary_op) {
    case ast::UnaryOp::Plus:
        if (natural_type(v).is_bool()) break;
        return v;
    case ast::UnaryOp::Neg:
        if (v.kind == K::Int) {
            if (v.i == INT64_MIN) break;
            return Value::of_int(-v.i);
        }
        if (v.kind == K::Float) return Value::of_float(-v.f);
        if (natural_type(v).is_bool()) break;
        return Value::of_expr(ir::make_unary(ir::UnaryOp::Neg, to_expr(v, x.range), l));
    case ast::UnaryOp::Not:
        if (v.kind == K::Bool) return Value::of_bool(!v.b);
        if (!natural_type(v).is_bool()) {
            diags_.error(e.op_range, "'!' needs a bool operand, but it has type " +
                                         (v.is_const() ? std::string("number") : natural_type(v).str()) +
                                         "; for bits use '~'");
            return Value::poison();
        }
        return Value::of_expr(ir::logical_not(to_expr(v, x.range)));
    case ast::UnaryOp::BitNot:
        if (v.kind == K::Int) return Value::of_int(~v.i);
        if (!natural_type(v).is_integer()) {
            diags_.error(e.op_range, "'~' needs an integer operand, but it has type " + natural_type(v).str());
            return Value::poison();
        }
        return Value::of_expr(ir::make_unary(ir::UnaryOp::BitNot, to_expr(v, x.range), l));
    }
    diags_.error(e.op_range, std::string("invalid operand for unary '") + ast::to_string(e.unary_op) + "'");
    return Value::poison();
}

static bool checked_int(ast::BinaryOp op, int64_t a, int64_t b, int64_t& out) {
    switch (op) {
    case ast::BinaryOp::Add: return !__builtin_add_overflow(a, b, &out);
    case ast::BinaryOp::Sub: return !__builtin_sub_overflow(a, b, &out);
    case ast::BinaryOp::Mul: return !__builtin_mul_overflow(a, b, &out);
    case ast::BinaryOp::Div: {
        if (a == INT64_MIN && b == -1) return false;
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        out = q;
        return true;
    }
    case ast::BinaryOp::Mod: {
        if (b == -1) { out = 0; return true; }
        int64_t r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        out = r;
        return true;
    }
    case ast::BinaryOp::Shl:
        if (b < 0 || b >= 63) return false;
        out = static_cast<int64_t>(static_cast<uint64_t>(a) << b);
        return true;
    case ast::BinaryOp::Shr:
        if (b < 0 || b >= 64) return false;
        out = a >> b;
        return true;
    case ast::BinaryOp::BitAnd: out = a & b; return true;
    case ast::BinaryOp::BitOr: out = a | b; return true;
    case ast::BinaryOp::BitXor: out = a ^ b; return true;
    default: return false;
    }
}

Value Elaborator::eval_binary(const ast::Expr& e) {
    using B = ast::BinaryOp;
    const ast::Expr& xa = *e.operands[0];
    const ast::Expr& xb = *e.operands[1];
    B op = e.binary_op;
    const char* opname = ast::to_string(op);
    // && and || on compile-time bools short-circuit, so `CAUSAL && ...` folds.
    Value a = expect_scalar(eval(xa), xa.range, "an operand");
    if ((op == B::And || op == B::Or) && a.kind == K::Bool) {
        if (op == B::And && !a.b) return Value::of_bool(false);
        if (op == B::Or && a.b) return Value::of_bool(true);
        Value b = expect_scalar(eval(xb), xb.range, "an operand");
        if (b.is_poison()) return b;
        if (!natural_type(b).is_bool() || b.kind == K::Int || b.kind == K::Float) {
            diags_.error(xb.range, std::string("operands of '") + opname + "' must be bool");
            return Value::poison();
        }
        return b;
    }
    Value b = expect_scalar(eval(xb), xb.range, "an operand");
    return apply_binary(op, a, b, xa.range, xb.range, e.op_range);
}

Value Elaborator::apply_binary(ast::BinaryOp op, const Value& a, const Value& b, SourceRange ra, SourceRange rb,
                               SourceRange op_range) {
    using B = ast::BinaryOp;
    const char* opname = ast::to_string(op);
    if (a.is_poison() || b.is_poison()) return Value::poison();
    SourceLoc l = loc_of(op_range);
    struct { SourceRange range; } xa{ra}, xb{rb};
    struct { SourceRange op_range; } e{op_range};

    // Compile-time folding.
    if (a.kind == K::Int && b.kind == K::Int) {
        if ((op == B::Div || op == B::Mod) && b.i == 0) {
            diags_.error(e.op_range, std::string(op == B::Div ? "division" : "modulo") + " by zero");
            return Value::poison();
        }
        int64_t r;
        switch (op) {
        case B::Lt: return Value::of_bool(a.i < b.i);
        case B::Le: return Value::of_bool(a.i <= b.i);
        case B::Gt: return Value::of_bool(a.i > b.i);
        case B::Ge: return Value::of_bool(a.i >= b.i);
        case B::Eq: return Value::of_bool(a.i == b.i);
        case B::Ne: return Value::of_bool(a.i != b.i);
        case B::And:
        case B::Or:
            diags_.error(e.op_range, std::string("operands of '") + opname + "' must be bool, not integers");
            return Value::poison();
        default:
            if (!checked_int(op, a.i, b.i, r)) {
                diags_.error(e.op_range, std::string("integer overflow in constant expression with '") + opname + "'");
                return Value::poison();
            }
            return Value::of_int(r);
        }
    }
    if (a.is_const() && b.is_const() && a.kind != K::Bool && b.kind != K::Bool) {
        double x = a.kind == K::Int ? static_cast<double>(a.i) : a.f;
        double y = b.kind == K::Int ? static_cast<double>(b.i) : b.f;
        switch (op) {
        case B::Add: return Value::of_float(x + y);
        case B::Sub: return Value::of_float(x - y);
        case B::Mul: return Value::of_float(x * y);
        case B::Div: return Value::of_float(x / y);
        case B::Lt: return Value::of_bool(x < y);
        case B::Le: return Value::of_bool(x <= y);
        case B::Gt: return Value::of_bool(x > y);
        case B::Ge: return Value::of_bool(x >= y);
        case B::Eq: return Value::of_bool(x == y);
        case B::Ne: return Value::of_bool(x != y);
        default: break;
        }
    }
    if (a.kind == K::Bool && b.kind == K::Bool) {
        switch (op) {
        case B::Eq: return Value::of_bool(a.b == b.b);
        case B::Ne: return Value::of_bool(a.b != b.b);
        case B::And: return Value::of_bool(a.b && b.b);
        case B::Or: return Value::of_bool(a.b || b.b);
        case B::BitAnd: return Value::of_bool(a.b && b.b);
        case B::BitOr: return Value::of_bool(a.b || b.b);
        case B::BitXor: return Value::of_bool(a.b != b.b);
        default: break;
        }
    }

    auto t = unify(a, b, e.op_range, opname);
    if (!t) return Value::poison();
    auto bad = [&](const char* need) {
        diags_.error(e.op_range, std::string("'") + opname + "' needs " + need + " operands, but they have type " +
                                     t->str());
        return Value::poison();
    };
    ir::Expr x = convert(a, *t, xa.range, "an operand", false);
    ir::Expr y = convert(b, *t, xb.range, "an operand", false);
    if (!x || !y) return Value::poison();
    if (b.kind == K::Int && b.i == 0 && (op == B::Div || op == B::Mod) && t->is_integer()) {
        diags_.error(e.op_range, std::string(op == B::Div ? "division" : "modulo") + " by zero");
        return Value::poison();
    }
    ir::BinaryOp iop;
    switch (op) {
    case B::Add: iop = ir::BinaryOp::Add; break;
    case B::Sub: iop = ir::BinaryOp::Sub; break;
    case B::Mul: iop = ir::BinaryOp::Mul; break;
    case B::Div: iop = t->is_float() ? ir::BinaryOp::Div : ir::BinaryOp::FloorDiv; break;
    case B::Mod: iop = t->is_float() ? ir::BinaryOp::Mod : ir::BinaryOp::FloorMod; break;
    case B::Lt: iop = ir::BinaryOp::LT; break;
    case B::Le: iop = ir::BinaryOp::LE; break;
    case B::Gt: iop = ir::BinaryOp::GT; break;
    case B::Ge: iop = ir::BinaryOp::GE; break;
    case B::Eq: iop = ir::BinaryOp::EQ; break;
    case B::Ne: iop = ir::BinaryOp::NE; break;
    case B::And: iop = ir::BinaryOp::And; break;
    case B::Or: iop = ir::BinaryOp::Or; break;
    case B::BitAnd: iop = t->is_bool() ? ir::BinaryOp::And : ir::BinaryOp::BitAnd; break;
    case B::BitOr: iop = t->is_bool() ? ir::BinaryOp::Or : ir::BinaryOp::BitOr; break;
    case B::BitXor: iop = t->is_bool() ? ir::BinaryOp::NE : ir::BinaryOp::BitXor; break;
    case B::Shl: iop = ir::BinaryOp::Shl; break;
    case B::Shr: iop = ir::BinaryOp::Shr; break;
    default: return Value::poison();
    }
    bool arith = op == B::Add || op == B::Sub || op == B::Mul || op == B::Div || op == B::Mod;
    if (arith && t->is_bool()) return bad("numeric");
    if ((op == B::Lt || op == B::Le || op == B::Gt || op == B::Ge) && t->is_bool()) return bad("numeric");
    if ((op == B::And || op == B::Or) && !t->is_bool()) return bad("bool");
    if ((op == B::Shl || op == B::Shr) && !t->is_integer()) return bad("integer");
    if ((op == B::Shl || op == B::Shr) && b.kind == K::Int && (b.i < 0 || b.i >= t->bits)) {
        diags_.error(e.op_range, "shift amount " + std::to_string(b.i) + " is " +
                                     (b.i < 0 ? std::string("negative") : "not less than the width of " + t->str()));
        return Value::poison();
    }
    if ((op == B::BitAnd || op == B::BitOr || op == B::BitXor) && t->is_float()) return bad("integer or bool");
    return Value::of_expr(ir::make_binary(iop, x, y, l));
}

Value Elaborator::eval_ternary(const ast::Expr& e) {
    const ast::Expr& xc = *e.operands[0];
    Value c = expect_scalar(eval(xc), xc.range, "a condition");
    if (c.is_poison()) return c;
    if (c.kind == K::Bool) {
        // A compile-time condition picks one side; the other is not elaborated (as with
        // `if` on a constant), so it may be ill-formed for this instantiation.
        const ast::Expr& chosen = *e.operands[c.b ? 1 : 2];
        return expect_scalar(eval(chosen), chosen.range, "a value");
    }
    if (!natural_type(c).is_bool()) {
        diags_.error(xc.range, "the condition of '?:' must be a bool, but it has type " +
                                   (c.is_const() ? std::string("number") : natural_type(c).str()));
        return Value::poison();
    }
    const ast::Expr& xt = *e.operands[1];
    const ast::Expr& xf = *e.operands[2];
    Value t = expect_scalar(eval(xt), xt.range, "a value");
    Value f = expect_scalar(eval(xf), xf.range, "a value");
    if (t.is_poison() || f.is_poison()) return Value::poison();
    auto ty = unify(t, f, e.range, "?:");
    if (!ty) return Value::poison();
    ir::Expr a = convert(t, *ty, xt.range, "'?:'", false);
    ir::Expr b = convert(f, *ty, xf.range, "'?:'", false);
    if (!a || !b) return Value::poison();
    return Value::of_expr(ir::make_select(to_expr(c, xc.range), a, b, loc_of(e.range)));
}

void Elaborator::check_const_index(const ir::Buffer& b, const std::vector<ir::Expr>& idx,
                                   const std::vector<SourceRange>& ranges) {
    if (b->scope == ir::Scope::Global) return;
    for (size_t d = 0; d < idx.size() && d < b->shape.size(); ++d) {
        auto i = ir::as_const_int(idx[d]);
        auto n = ir::as_const_int(b->shape[d]);
        if (i && n && (*i < 0 || *i >= *n)) {
            diags_.error(ranges[d], "index " + std::to_string(*i) + " is out of bounds for dimension " +
                                        std::to_string(d) + " of '" + b->name + "' (size " + std::to_string(*n) + ")")
                .note(buffer_decl_.count(b.get()) ? buffer_decl_[b.get()] : SourceRange{},
                      "'" + b->name + "' is declared here");
        }
    }
}

// Resolves `t[i, j]` to its buffer and checked indices (for reads and for writes).
bool Elaborator::element_ref(const ast::Expr& e, ir::Buffer& buf, std::vector<ir::Expr>& idx) {
    const ast::Expr& base = *e.operands[0];
    Value bv = eval(base);
    if (bv.is_poison()) return false;
    if (bv.kind != K::Tile) {
        if (bv.kind == K::MutVar)
            diags_.error(e.range, "'" + bv.buffer->name + "' is a scalar var; use it without an index");
        else
            diags_.error(base.range, "only tensors and tiles can be indexed");
        return false;
    }
    buf = bv.buffer;
    size_t n = e.operands.size() - 1;
    if (n != buf->rank()) {
        diags_.error(e.range, "'" + buf->name + "' has " + plural(buf->rank(), "dimension") + " but " +
                                  plural_index(n) + (n == 1 ? " was" : " were") + " given");
        return false;
    }
    std::vector<SourceRange> ranges;
    bool ok = true;
    for (size_t i = 1; i < e.operands.size(); ++i) {
        ir::Expr x = expect_index(*e.operands[i], "an index");
        if (!x) ok = false;
        idx.push_back(x);
        ranges.push_back(e.operands[i]->range);
    }
    if (!ok) return false;
    check_const_index(buf, idx, ranges);
    return true;
}

Value Elaborator::eval_index(const ast::Expr& e) {
    ir::Buffer buf;
    std::vector<ir::Expr> idx;
    if (!element_ref(e, buf, idx)) return Value::poison();
    return Value::of_expr(ir::make_load(buf, idx, loc_of(e.range)));
}

Value Elaborator::eval_cast(const ast::Expr& e) {
    const ast::TypeSpec& ts = *e.cast_type;
    if (ts.has_dims) {
        diags_.error(ts.range, "cast<...> takes an element type, not a tile type");
        return Value::poison();
    }
    auto t = resolve_type(ts.elem, ts.elem_range);
    const ast::Expr& x = *e.operands[0];
    Value v = expect_scalar(eval(x), x.range, "the operand of cast");
    if (!t || v.is_poison()) return Value::poison();
    SourceLoc l = loc_of(e.range);
    if (v.kind == K::Int) {
        if (t->is_float()) return Value::of_expr(ir::make_float(static_cast<double>(v.i), *t, l));
        if (t->is_bool()) return Value::of_expr(ir::make_bool(v.i != 0, l));
        return Value::of_expr(ir::make_int(ir::normalize_int(v.i, *t), *t, l));
    }
    if (v.kind == K::Bool) {
        if (t->is_bool()) return Value::of_expr(ir::make_bool(v.b, l));
        if (t->is_float()) return Value::of_expr(ir::make_float(v.b ? 1.0 : 0.0, *t, l));
        return Value::of_expr(ir::make_int(v.b ? 1 : 0, *t, l));
    }
    if (v.kind == K::Float) {
        if (t->is_float()) return Value::of_expr(ir::make_float(v.f, *t, l));
        return Value::of_expr(ir::make_cast(*t, ir::make_float(v.f, DataType::f64(), l), l));
    }
    if (v.expr->type == *t) return v;
    return Value::of_expr(ir::make_cast(*t, v.expr, l));
}

}  // namespace tilec::frontend
