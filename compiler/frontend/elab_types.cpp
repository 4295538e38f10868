// Types and conversions during elaboration: element types by name, the type two operands
// meet at, implicit conversions (constants adapt, run-time narrowing needs cast) and the
// scalar, index, condition and constant forms that statements and ops ask for.
#include "frontend/elaborator.h"

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;

std::optional<DataType> Elaborator::resolve_type(const std::string& name, SourceRange where) {
    if (const Binding* b = lookup(name)) {
        if (b->value.kind == K::Type) return b->value.type;
        if (b->value.is_poison()) return std::nullopt;
        diags_.error(where, "'" + name + "' is not a type").note(b->where, "'" + name + "' is declared here");
        return std::nullopt;
    }
    if (auto t = DataType::from_name(name)) return t;
    std::string s = suggest(name);
    diags_.error(where, "unknown type '" + name + "'" + (s.empty() ? "" : "; did you mean '" + s + "'?"));
    return std::nullopt;
}

DataType Elaborator::natural_type(const Value& v) const {
    switch (v.kind) {
    case K::Int: return DataType::index();
    case K::Float: return DataType::f32();
    case K::Bool: return DataType::boolean();
    case K::Scalar: return v.expr->type;
    default: return DataType::index();
    }
}

ir::Expr Elaborator::to_expr(const Value& v, SourceRange where) {
    SourceLoc l = loc_of(where);
    switch (v.kind) {
    case K::Int: return ir::make_int(v.i, DataType::index(), l);
    case K::Float: return ir::make_float(v.f, DataType::f32(), l);
    case K::Bool: return ir::make_bool(v.b, l);
    case K::Scalar: return v.expr;
    default: return nullptr;
    }
}

static int float_rank(DataType t) {
    // bf16 and f16 have the same width but neither holds the other: they meet at f32.
    return t.bits;
}

std::optional<DataType> Elaborator::unify(const Value& a, const Value& b, SourceRange where, const char* op) {
    // Constants adapt to the other side.
    bool ca = a.is_const(), cb = b.is_const();
    if (ca && cb) {
        if (a.kind == K::Float || b.kind == K::Float) return DataType::f32();
        if (a.kind == K::Bool && b.kind == K::Bool) return DataType::boolean();
        if (a.kind == K::Bool || b.kind == K::Bool) {
            diags_.error(where, std::string("cannot combine bool and integer with '") + op + "'");
            return std::nullopt;
        }
        return DataType::index();
    }
    if (ca || cb) {
        const Value& c = ca ? a : b;
        DataType t = natural_type(ca ? b : a);
        if (t.is_bool() != (c.kind == K::Bool)) {
            diags_.error(where, std::string("cannot combine ") + (t.is_bool() ? "bool" : t.str()) + " and " +
                                    (c.kind == K::Bool ? "bool" : "a number") + " with '" + op + "'");
            return std::nullopt;
        }
        if (c.kind == K::Float && t.is_integer()) return DataType::f32();
        return t;
    }
    DataType ta = natural_type(a), tb = natural_type(b);
    if (ta == tb) return ta;
    if (ta.is_bool() || tb.is_bool()) {
        diags_.error(where, "cannot combine " + ta.str() + " and " + tb.str() + " with '" + op +
                                "'; convert with cast<T>(...)");
        return std::nullopt;
    }
    if (ta.is_float() && tb.is_float()) {
        if (ta.bits == tb.bits) return DataType::f32();  // f16 with bf16, f8 kinds
        return float_rank(ta) > float_rank(tb) ? ta : tb;
    }
    if (ta.is_float()) return ta;
    if (tb.is_float()) return tb;
    // Both integers: the wider; at equal width, unsigned wins (as in C).
    if (ta.bits != tb.bits) return ta.bits > tb.bits ? ta : tb;
    return ta.is_uint() ? ta : tb;
}

ir::Expr Elaborator::convert(const Value& v, DataType want, SourceRange where, const char* what,
                             bool allow_narrowing) {
    SourceLoc l = loc_of(where);
    switch (v.kind) {
    case K::Int:
        if (want.is_float()) return ir::make_float(static_cast<double>(v.i), want, l);
        if (want.is_bool()) {
            diags_.error(where, std::string("cannot use an integer as a bool in ") + what + "; compare with 0");
            return nullptr;
        }
        if (want.bits < 64 && (v.i < want.min_value() || v.i > want.max_value())) {
            diags_.error(where, "constant " + std::to_string(v.i) + " does not fit in " + want.str() + " in " + what);
            return nullptr;
        }
        return ir::make_int(v.i, want, l);
    case K::Float:
        if (want.is_float()) return ir::make_float(v.f, want, l);
        if (allow_narrowing && !want.is_bool()) return ir::make_cast(want, ir::make_float(v.f, DataType::f64(), l), l);
        diags_.error(where, std::string("cannot implicitly convert a float constant to ") + want.str() + " in " +
                                what + "; use cast<" + want.str() + ">(...)");
        return nullptr;
    case K::Bool:
        if (want.is_bool()) return ir::make_bool(v.b, l);
        if (allow_narrowing) return ir::make_int(v.b ? 1 : 0, want, l);
        diags_.error(where, std::string("cannot use a bool as ") + want.str() + " in " + what +
                                "; use cast<" + want.str() + ">(...)");
        return nullptr;
    case K::Scalar: {
        DataType have = v.expr->type;
        if (have == want) return v.expr;
        if (allow_narrowing) return ir::make_cast(want, v.expr, l);
        bool ok = false;
        if (want.is_float() && have.is_float()) ok = want.bits > have.bits || (want.bits == have.bits && false);
        else if (want.is_float() && have.is_integer()) ok = true;  // integers convert to float
        else if (want.is_integer() && have.is_integer())
            // Same signedness and not narrower, or unsigned into a strictly wider signed.
            ok = (want.is_int() == have.is_int() && want.bits >= have.bits) ||
                 (have.is_uint() && want.is_int() && want.bits > have.bits);
        if (!ok) {
            diags_.error(where, "implicit conversion from " + have.str() + " to " + want.str() + " in " + what +
                                    " may lose information; write cast<" + want.str() + ">(...)");
            return nullptr;
        }
        return ir::make_cast(want, v.expr, l);
    }
    case K::Poison: return nullptr;
    case K::Tile:
        diags_.error(where, "'" + v.buffer->name + "' is a tile, not a scalar; index it to use one element");
        return nullptr;
    case K::Type: diags_.error(where, "a type is not a value here"); return nullptr;
    case K::String: diags_.error(where, "a string is not a value here"); return nullptr;
    case K::Block: diags_.error(where, "'block' has members x, y and z"); return nullptr;
    case K::MutVar: return ir::make_load(v.buffer, {}, l);
    }
    return nullptr;
}

Value Elaborator::expect_scalar(Value v, SourceRange where, const char* what) {
    switch (v.kind) {
    case K::Poison:
    case K::Int:
    case K::Float:
    case K::Bool:
    case K::Scalar: return v;
    case K::MutVar: return Value::of_expr(ir::make_load(v.buffer, {}, loc_of(where)));
    case K::Tile:
        diags_.error(where, std::string("'") + v.buffer->name + "' is a tile; " + what +
                                " needs a scalar (index the tile to use one element, e.g. " + v.buffer->name + "[i])");
        return Value::poison();
    case K::Type: diags_.error(where, std::string("a type cannot be used as ") + what); return Value::poison();
    case K::String: diags_.error(where, std::string("a string cannot be used as ") + what); return Value::poison();
    case K::Block:
        diags_.error(where, "'block' is not a value; use block.x, block.y or block.z");
        return Value::poison();
    }
    return Value::poison();
}

std::optional<int64_t> Elaborator::expect_const_int(const ast::Expr& e, const char* what) {
    Value v = eval(e);
    if (v.is_poison()) return std::nullopt;
    if (v.kind == K::Int) return v.i;
    if (v.kind == K::Scalar) {
        if (auto c = ir::as_const_int(v.expr); c && v.expr->type.is_integer()) return c;
    }
    diags_.error(e.range, std::string(what) + " must be a compile-time integer constant");
    return std::nullopt;
}

std::optional<bool> Elaborator::expect_const_bool(const ast::Expr& e, const char* what) {
    Value v = eval(e);
    if (v.is_poison()) return std::nullopt;
    if (v.kind == K::Bool) return v.b;
    diags_.error(e.range, std::string(what) + " must be a compile-time bool (true or false)");
    return std::nullopt;
}

ir::Expr Elaborator::expect_index(const ast::Expr& e, const char* what) { return index_of(eval(e), e.range, what); }

ir::Expr Elaborator::index_of(Value value, SourceRange range, const char* what) {
    struct {
        SourceRange range;
    } e{range};
    Value v = expect_scalar(value, range, what);
    if (v.is_poison()) return nullptr;
    if (v.kind == K::Int) return ir::make_int(v.i, DataType::index(), loc_of(e.range));
    DataType t = natural_type(v);
    if (!t.is_integer()) {
        diags_.error(e.range, std::string(what) + " must be an integer, but it has type " + t.str());
        return nullptr;
    }
    ir::Expr x = to_expr(v, e.range);
    if (t != DataType::index()) x = ir::make_cast(DataType::index(), x, loc_of(e.range));
    return x;
}

ir::Expr Elaborator::expect_condition(const ast::Expr& e, const char* what) {
    Value v = expect_scalar(eval(e), e.range, what);
    if (v.is_poison()) return nullptr;
    DataType t = natural_type(v);
    if (!t.is_bool()) {
        diags_.error(e.range, std::string(what) + " must be a bool, but it has type " +
                                  (v.kind == K::Int ? std::string("integer") : t.str()) +
                                  "; compare it explicitly (e.g. x != 0)");
        return nullptr;
    }
    return to_expr(v, e.range);
}

}  // namespace tilec::frontend
