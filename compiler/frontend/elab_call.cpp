// Calls during elaboration: binding named and positional arguments, the scalar
// built-ins (min, exp, cdiv, ...), and funcs, which are inlined at each call with only
// their parameters in scope; calls as statements (a tile op goes to elab_tile_op.cpp).
#include <cmath>
#include <cstring>
#include <sstream>

#include "frontend/elaborator.h"
#include "ir/visitor.h"
#include "ops/elab_util.h"

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;

using ops::plural;

Elaborator::CallArgs Elaborator::bind_args(const ast::Expr& call, const std::string& callee,
                                           const std::vector<std::string>& names, size_t required) {
    CallArgs out;
    out.values.assign(names.size(), nullptr);
    size_t positional = 0;
    bool named_seen = false;
    bool misplaced = false;
    for (const ast::Arg& a : call.args) {
        if (a.name.empty()) {
            if (named_seen) {
                diags_.error(a.value->range, "positional argument after a named argument in call to '" + callee + "'");
                out.ok = false;
                misplaced = true;
                continue;
            }
            if (positional >= names.size()) {
                diags_.error(a.value->range, "too many arguments to '" + callee + "': it takes at most " +
                                                 plural(names.size(), "argument"));
                out.ok = false;
                return out;
            }
            out.values[positional++] = a.value.get();
            continue;
        }
        named_seen = true;
        auto it = std::find(names.begin(), names.end(), a.name);
        if (it == names.end()) {
            std::string list;
            for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
            diags_.error(a.name_range, "'" + callee + "' has no argument named '" + a.name + "' (its arguments: " +
                                           list + ")");
            out.ok = false;
            continue;
        }
        size_t pos = it - names.begin();
        if (out.values[pos]) {
            diags_.error(a.name_range, "argument '" + a.name + "' of '" + callee + "' is given twice");
            out.ok = false;
            continue;
        }
        out.values[pos] = a.value.get();
    }
    for (size_t i = 0; i < required && !misplaced; ++i) {
        if (!out.values[i]) {
            diags_.error(call.range, "missing argument '" + names[i] + "' in call to '" + callee + "' (it takes " +
                                         std::to_string(required) + " required " +
                                         (required == 1 ? "argument" : "arguments") + ")");
            out.ok = false;
            return out;
        }
    }
    return out;
}

Value Elaborator::eval_call(const ast::Expr& e) {
    const ast::Expr& callee = *e.operands[0];
    if (callee.kind != ast::ExprKind::Name) {
        diags_.error(callee.range, "only named functions can be called");
        return Value::poison();
    }
    const std::string& name = callee.text;
    if (const Binding* bound = lookup(name)) {
        if (bound->value.is_poison()) return Value::poison();
        diags_.error(callee.range, "'" + name + "' is not a function");
        return Value::poison();
    }
    Builtin b = lookup_builtin(name);
    if (b != Builtin::None) {
        if (is_tile_op(b)) {
            diags_.error(e.range, "'" + name + "' is a tile operation and produces no value; call it as a statement");
            return Value::poison();
        }
        return eval_builtin_call(b, e);
    }
    if (auto it = program_.funcs.find(name); it != program_.funcs.end()) return eval_func_call(*it->second, e);
    if (program_.kernels.count(name)) {
        diags_.error(callee.range, "'" + name + "' is a kernel; kernels cannot be called from kernels or funcs");
        return Value::poison();
    }
    if (DataType::from_name(name)) {
        diags_.error(e.range, "to convert to " + name + ", write cast<" + name + ">(...)");
        return Value::poison();
    }
    undeclared(name, callee.range);
    return Value::poison();
}

Value Elaborator::eval_builtin_call(Builtin b, const ast::Expr& e) {
    const std::string& name = e.operands[0]->text;
    SourceLoc l = loc_of(e.range);
    bool binary = b == Builtin::Min || b == Builtin::Max || b == Builtin::Pow || b == Builtin::Cdiv;
    std::vector<std::string> names = binary ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"x"};
    CallArgs args = bind_args(e, name, names, names.size());
    if (!args.ok) return Value::poison();
    std::vector<Value> vals;
    for (auto* a : args.values) vals.push_back(expect_scalar(eval(*a), a->range, "an argument"));
    for (auto& v : vals)
        if (v.is_poison()) return v;

    if (b == Builtin::Cdiv) {
        if (vals[0].kind == K::Int && vals[1].kind == K::Int) {
            if (vals[1].i == 0) {
                diags_.error(args.values[1]->range, "cdiv by zero");
                return Value::poison();
            }
            int64_t a = vals[0].i, d = vals[1].i;
            int64_t q = a / d;
            if ((a % d != 0) && ((a < 0) == (d < 0))) ++q;
            return Value::of_int(q);
        }
        for (size_t i = 0; i < 2; ++i) {
            if (!natural_type(vals[i]).is_integer() && vals[i].kind != K::Int) {
                diags_.error(args.values[i]->range, "cdiv needs integer arguments");
                return Value::poison();
            }
        }
        if (vals[1].kind == K::Int && vals[1].i <= 0) {
            diags_.error(args.values[1]->range, vals[1].i == 0 ? "cdiv by zero" : "cdiv needs a positive divisor");
            return Value::poison();
        }
        auto t = unify(vals[0], vals[1], e.range, "cdiv");
        if (!t) return Value::poison();
        ir::Expr x = convert(vals[0], *t, args.values[0]->range, "cdiv", false);
        ir::Expr y = convert(vals[1], *t, args.values[1]->range, "cdiv", false);
        if (!x || !y) return Value::poison();
        return Value::of_expr(ir::cdiv(x, y));
    }
    if (b == Builtin::Min || b == Builtin::Max) {
        if (vals[0].kind == K::Int && vals[1].kind == K::Int)
            return Value::of_int(b == Builtin::Min ? std::min(vals[0].i, vals[1].i) : std::max(vals[0].i, vals[1].i));
        auto t = unify(vals[0], vals[1], e.range, name.c_str());
        if (!t) return Value::poison();
        if (t->is_bool()) {
            diags_.error(e.range, name + " needs numeric arguments");
            return Value::poison();
        }
        ir::Expr x = convert(vals[0], *t, args.values[0]->range, name.c_str(), false);
        ir::Expr y = convert(vals[1], *t, args.values[1]->range, name.c_str(), false);
        if (!x || !y) return Value::poison();
        return Value::of_expr(ir::make_binary(b == Builtin::Min ? ir::BinaryOp::Min : ir::BinaryOp::Max, x, y, l));
    }
    if (b == Builtin::Abs) {
        if (vals[0].kind == K::Int) return Value::of_int(vals[0].i < 0 ? -vals[0].i : vals[0].i);
        if (vals[0].kind == K::Float) return Value::of_float(std::fabs(vals[0].f));
        DataType t = natural_type(vals[0]);
        if (t.is_bool()) {
            diags_.error(e.range, "abs needs a numeric argument");
            return Value::poison();
        }
        return Value::of_expr(ir::make_call(ir::CallOp::Abs, {to_expr(vals[0], e.range)}, l));
    }
    // Float math: integers convert to f32.
    DataType t = natural_type(vals[0]);
    if (vals[0].kind == K::Int || t.is_integer()) t = DataType::f32();
    if (binary) {
        auto u = unify(vals[0], vals[1], e.range, name.c_str());
        if (!u) return Value::poison();
        t = u->is_float() ? *u : DataType::f32();
    }
    if (t.is_bool()) {
        diags_.error(e.range, name + " needs a numeric argument");
        return Value::poison();
    }
    std::vector<ir::Expr> xs;
    for (size_t i = 0; i < vals.size(); ++i) {
        ir::Expr x = convert(vals[i], t, args.values[i]->range, name.c_str(), false);
        if (!x) return Value::poison();
        xs.push_back(x);
    }
    ir::CallOp op;
    switch (b) {
    case Builtin::Exp: op = ir::CallOp::Exp; break;
    case Builtin::Exp2: op = ir::CallOp::Exp2; break;
    case Builtin::Log: op = ir::CallOp::Log; break;
    case Builtin::Log2: op = ir::CallOp::Log2; break;
    case Builtin::Sqrt: op = ir::CallOp::Sqrt; break;
    case Builtin::Rsqrt: op = ir::CallOp::Rsqrt; break;
    case Builtin::Tanh: op = ir::CallOp::Tanh; break;
    case Builtin::Sigmoid: op = ir::CallOp::Sigmoid; break;
    case Builtin::Floor: op = ir::CallOp::Floor; break;
    case Builtin::Ceil: op = ir::CallOp::Ceil; break;
    case Builtin::Pow: op = ir::CallOp::Pow; break;
    default: return Value::poison();
    }
    return Value::of_expr(ir::make_call(op, xs, t, l));
}

// =================================================================================
// funcs: inlined at each call; their bodies see only their parameters.

namespace {

// The most IR nodes an inlined func call may produce, counted as a tree.
constexpr int64_t kMaxInlinedNodes = 1 << 20;

// Whether `e`, counted as a tree (a shared node as often as it is reached), has more
// than `limit` nodes; stops counting there.
bool tree_size_above(const ir::Expr& e, int64_t limit) {
    struct Count : ir::IRVisitor {
        using ir::IRVisitor::visit;
        int64_t left;
        explicit Count(int64_t l) : left(l) {}
        void visit(const ir::Expr& x) override {
            if (!x || left < 0) return;
            --left;
            ir::IRVisitor::visit(x);
        }
    } count(limit);
    count.visit(e);
    return count.left < 0;
}

// The memo key of a value func call: the func and each argument's kind and value (its IR
// node's address for a run-time value; the memo keeps the node alive).
std::string inlined_call_key(const ast::FuncDecl& f, const std::vector<Value>& vals) {
    std::ostringstream key;
    key << static_cast<const void*>(&f);
    for (auto& v : vals) {
        uint64_t bits = 0;
        std::memcpy(&bits, &v.f, sizeof bits);
        key << '|' << static_cast<int>(v.kind) << ':' << v.i << ':' << bits << ':' << v.b << ':' << v.type.str()
            << ':' << static_cast<const void*>(v.expr.get()) << ':' << static_cast<const void*>(v.buffer.get())
            << ':' << v.str.size() << ':' << v.str;
    }
    return key.str();
}

struct InlineGuard {
    std::vector<const ast::FuncDecl*>& stack;
    size_t& floor;
    size_t saved_floor;
    InlineGuard(std::vector<const ast::FuncDecl*>& s, size_t& f, const ast::FuncDecl* fn, size_t new_floor)
        : stack(s), floor(f), saved_floor(f) {
        stack.push_back(fn);
        floor = new_floor;
    }
    ~InlineGuard() {
        stack.pop_back();
        floor = saved_floor;
    }
};
}  // namespace

Value Elaborator::eval_func_call(const ast::FuncDecl& f, const ast::Expr& e) {
    if (std::find(inline_stack_.begin(), inline_stack_.end(), &f) != inline_stack_.end()) {
        diags_.error(e.range, "recursive call to '" + f.name + "': funcs are inlined, so they cannot recurse")
            .note(f.name_range, "'" + f.name + "' is defined here");
        return Value::poison();
    }
    const ast::Stmt* ret = f.body->body.empty() ? nullptr : f.body->body.back().get();
    if (!ret || ret->kind != ast::StmtKind::Return || !ret->value) {
        diags_.error(e.range, "'" + f.name + "' does not return a value; call it as a statement")
            .note(f.name_range, "'" + f.name + "' is defined here");
        return Value::poison();
    }
    std::vector<std::string> names;
    for (auto& p : f.params) names.push_back(p.name);
    CallArgs args = bind_args(e, f.name, names, names.size());
    if (!args.ok) return Value::poison();
    std::vector<Value> vals;
    for (size_t i = 0; i < f.params.size(); ++i) {
        Value v = eval(*args.values[i]);
        if (v.kind == K::MutVar) v = Value::of_expr(ir::make_load(v.buffer, {}, loc_of(args.values[i]->range)));
        if (v.is_poison()) return v;
        if (f.params[i].type && !f.params[i].type->has_dims && v.is_scalar_value()) {
            auto t = resolve_type(f.params[i].type->elem, f.params[i].type->elem_range);
            if (!t) return Value::poison();
            ir::Expr x = convert(v, *t, args.values[i]->range, "a func argument", false);
            if (!x) return Value::poison();
            v = Value::of_expr(x);
        }
        vals.push_back(v);
    }
    std::string memo_key = inlined_call_key(f, vals);
    if (auto it = inlined_calls_.find(memo_key); it != inlined_calls_.end()) return it->second.result;
    push_scope();
    Value result;
    {
        InlineGuard guard(inline_stack_, scope_floor_, &f, scopes_.size() - 1);
        if (inline_stack_.size() > 64) {
            diags_.error(e.range, "funcs inlined more than 64 deep");
            pop_scope();
            return Value::poison();
        }
        for (size_t i = 0; i < f.params.size(); ++i) bind(f.params[i].name, f.params[i].range, vals[i], Origin::FuncParam);
        bool ok = true;
        for (size_t i = 0; i + 1 < f.body->body.size(); ++i) {
            const ast::Stmt& s = *f.body->body[i];
            if (s.kind == ast::StmtKind::Empty) continue;
            if (s.kind != ast::StmtKind::Let) {
                diags_.error(s.range, "a func that returns a value may contain only 'let' statements before its "
                                      "'return'");
                ok = false;
                break;
            }
            Value v = eval(*s.value);
            if (v.kind == K::MutVar) v = Value::of_expr(ir::make_load(v.buffer, {}, loc_of(s.value->range)));
            if (s.type && v.is_scalar_value()) {
                if (auto t = resolve_type(s.type->elem, s.type->elem_range)) {
                    ir::Expr x = convert(v, *t, s.value->range, "a let", false);
                    v = x ? Value::of_expr(x) : Value::poison();
                } else {
                    v = Value::poison();
                }
            }
            bind(s.name, s.name_range, v, Origin::Let);
        }
        if (ok) result = expect_scalar(eval(*ret->value), ret->value->range, "a return value");
    }
    pop_scope();
    if (result.is_poison() && diags_.has_errors()) {
        // The error inside the func is reported at its own line; say where it was called.
        diags_.report(Diagnostic{Severity::Note, e.range, "in the call to '" + f.name + "' here", {}});
    }
    // Shared subexpressions still cost their full size downstream (every later stage
    // walks the IR as a tree), so the inlined tree is bounded.
    if (result.kind == K::Scalar && tree_size_above(result.expr, kMaxInlinedNodes)) {
        diags_.error(e.range, "inlining '" + f.name + "' here gives an expression of more than " +
                                  std::to_string(kMaxInlinedNodes) + " operations")
            .note(f.name_range, "'" + f.name + "' is defined here");
        result = Value::poison();
    }
    inlined_calls_[memo_key] = InlinedCall{vals, result};
    return result;
}

ir::Stmt Elaborator::elab_func_stmt(const ast::FuncDecl& f, const ast::Expr& e) {
    if (std::find(inline_stack_.begin(), inline_stack_.end(), &f) != inline_stack_.end()) {
        diags_.error(e.range, "recursive call to '" + f.name + "': funcs are inlined, so they cannot recurse")
            .note(f.name_range, "'" + f.name + "' is defined here");
        return nullptr;
    }
    std::vector<std::string> names;
    for (auto& p : f.params) names.push_back(p.name);
    CallArgs args = bind_args(e, f.name, names, names.size());
    if (!args.ok) return nullptr;
    std::vector<Value> vals;
    std::vector<std::pair<ir::Var, ir::Expr>> lets;
    for (size_t i = 0; i < f.params.size(); ++i) {
        const ast::Expr& a = *args.values[i];
        Value v = eval(a);
        if (v.is_poison()) return nullptr;
        if (v.kind == K::MutVar) v = Value::of_expr(ir::make_load(v.buffer, {}, loc_of(a.range)));
        const auto& pt = f.params[i].type;
        if (pt) {
            auto t = resolve_type(pt->elem, pt->elem_range);
            if (!t) return nullptr;
            if (pt->has_dims) {
                if (v.kind != K::Tile) {
                    diags_.error(a.range, "argument '" + f.params[i].name + "' of '" + f.name + "' must be a tile");
                    return nullptr;
                }
                if (v.buffer->dtype != *t || v.buffer->rank() != pt->dims.size()) {
                    diags_.error(a.range, "argument '" + f.params[i].name + "' of '" + f.name + "' must be a " +
                                              std::to_string(pt->dims.size()) + "-d " + t->str() + " tile, but '" +
                                              v.buffer->name + "' is " + std::to_string(v.buffer->rank()) + "-d " +
                                              v.buffer->dtype.str())
                        .note(f.params[i].range, "parameter declared here");
                    return nullptr;
                }
            } else {
                ir::Expr x = convert(v, *t, a.range, "a func argument", false);
                if (!x) return nullptr;
                v = Value::of_expr(x);
            }
        }
        // A run-time argument that reads memory is evaluated once, at the call.
        if (v.kind == K::Scalar && !v.expr->is<ir::VarNode>() && !v.expr->is<ir::IntImmNode>() &&
            !v.expr->is<ir::FloatImmNode>()) {
            ir::Var tmp = ir::make_let_var(f.params[i].name, v.expr->type, loc_of(a.range));
            lets.emplace_back(tmp, v.expr);
            v = Value::of_expr(tmp);
        }
        vals.push_back(v);
    }
    push_scope();
    ir::Stmt body;
    unsigned before = diags_.error_count();
    {
        InlineGuard guard(inline_stack_, scope_floor_, &f, scopes_.size() - 1);
        if (inline_stack_.size() > 64) {
            diags_.error(e.range, "funcs inlined more than 64 deep");
            pop_scope();
            return nullptr;
        }
        for (size_t i = 0; i < f.params.size(); ++i) bind(f.params[i].name, f.params[i].range, vals[i], Origin::FuncParam);
        auto saved_loops = loop_stack_;
        body = elab_block(f.body->body, 0);
        loop_stack_ = saved_loops;
    }
    pop_scope();
    if (diags_.error_count() != before)
        diags_.report(Diagnostic{Severity::Note, e.range, "in the call to '" + f.name + "' here", {}});
    for (size_t i = lets.size(); i > 0; --i) body = ir::make_let(lets[i - 1].first, lets[i - 1].second, body);
    return body;
}

// =================================================================================
// Calls as statements: a tile op (its home checks it, elab_tile_op.cpp), a func without
// a value; anything else is evaluated and its unused result warned about.

ir::Stmt Elaborator::elab_call_stmt(const ast::Expr& e) {
    const ast::Expr& callee = *e.operands[0];
    if (callee.kind == ast::ExprKind::Name && !lookup(callee.text)) {
        Builtin b = lookup_builtin(callee.text);
        if (is_tile_op(b)) {
            if (in_parallel() && b != Builtin::Print &&
                b != Builtin::Assert) {
                diags_.error(e.range, "'" + callee.text + "' works on whole tiles and cannot be used inside a "
                                                         "parallel loop");
                return nullptr;
            }
            return elab_tile_op(b, e);
        }
        if (auto it = program_.funcs.find(callee.text); it != program_.funcs.end()) {
            const ast::FuncDecl& f = *it->second;
            bool returns = !f.body->body.empty() && f.body->body.back()->kind == ast::StmtKind::Return &&
                           f.body->body.back()->value;
            if (!returns) return elab_func_stmt(f, e);
        }
    }
    Value v = eval(e);
    if (!v.is_poison()) diags_.warning(e.range, "result of call is unused");
    return nullptr;
}

}  // namespace tilec::frontend
