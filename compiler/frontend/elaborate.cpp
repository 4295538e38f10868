// Elaboration: each export becomes one ir::PrimFunc. The kernel is instantiated with
// its compile-time values, then its body is walked once: names resolve through lexical
// scopes, constants fold, types and tile shapes are checked, funcs are inlined, and
// Tile IR is built. Errors are reported with locations and elaboration goes on with a
// poison value, so one run reports several independent mistakes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "frontend/elaborator.h"
#include "frontend/frontend.h"
#include "ir/printer.h"
#include "transform/simplify.h"

namespace tilec::frontend {
namespace {

using ir::DataType;
using K = Value::Kind;

SourceLoc loc_of(SourceRange r) { return r.begin; }

std::string shape_str(const std::vector<ir::Expr>& shape);

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

const char* scope_word(ir::Scope s) {
    switch (s) {
    case ir::Scope::Global: return "a global tensor";
    case ir::Scope::Shared: return "a shared buffer";
    case ir::Scope::Fragment: return "a fragment";
    case ir::Scope::Local: return "a local buffer";
    case ir::Scope::Register: return "a register buffer";
    }
    return "a buffer";
}

std::string plural(size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string plural_index(size_t n) { return std::to_string(n) + (n == 1 ? " index" : " indices"); }

std::string shape_str(const std::vector<ir::Expr>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        if (auto c = ir::as_const_int(shape[i])) s += std::to_string(*c);
        else if (auto v = ir::expr_as<ir::VarNode>(shape[i])) s += v->name;
        else s += "?";
    }
    return s + "]";
}

// An operand of a tile op: a whole buffer, or a buffer with a start index.
struct TileArg {
    ir::Buffer buffer;
    bool whole = true;
    std::vector<ir::Expr> start;
    SourceRange range;
    bool ok() const { return buffer != nullptr; }
};

class Elaborator {
public:
    Elaborator(const Program& program, const FrontendOptions& options, DiagnosticEngine& diags)
        : program_(program), options_(options), diags_(diags) {}

    // Instantiates `kernel` with explicit values (from an export) and returns the
    // function, or nullopt after reporting errors.
    std::optional<ir::PrimFunc> instantiate(const ast::KernelDecl& kernel, const std::string& symbol,
                                            const std::vector<ast::ExportArg>* args, SourceRange export_range);

private:
    // ---- scopes ------------------------------------------------------------------
    struct Scope {
        std::map<std::string, Binding> names;
    };
    std::vector<Scope> scopes_;
    // A func body sees only its own scopes: lookups stop at this depth.
    size_t scope_floor_ = 0;

    void push_scope() { scopes_.emplace_back(); }
    // Inside a parallel loop at any depth: element-wise code only.
    bool in_parallel() const {
        return std::find(loop_stack_.begin(), loop_stack_.end(), ir::ForKind::Parallel) != loop_stack_.end();
    }
    void pop_scope() { scopes_.pop_back(); }

    const Binding* lookup(const std::string& name) const {
        for (size_t i = scopes_.size(); i > scope_floor_; --i) {
            auto it = scopes_[i - 1].names.find(name);
            if (it != scopes_[i - 1].names.end()) return &it->second;
        }
        // Compile-time parameters of the kernel stay visible inside funcs? No: funcs are
        // generic and see only their arguments.
        return nullptr;
    }

    bool bind(const std::string& name, SourceRange where, Value v, Origin origin) {
        auto& names = scopes_.back().names;
        auto it = names.find(name);
        if (it != names.end()) {
            diags_.error(where, "redefinition of '" + name + "'").note(it->second.where, "previous definition is here");
            return false;
        }
        if (is_builtin_name(name) || program_.funcs.count(name)) {
            diags_.error(where, "'" + name + "' is already the name of a " +
                                    (is_builtin_name(name) ? std::string("built-in operation") : std::string("func")) +
                                    "; choose another name");
            names.emplace(name, Binding{Value::poison(), origin, where});  // silence later uses
            return false;
        }
        names.emplace(name, Binding{std::move(v), origin, where});
        return true;
    }

    std::string suggest(const std::string& name) const {
        std::string best;
        size_t best_d = name.size() <= 2 ? 1 : 2;
        auto consider = [&](const std::string& cand) {
            size_t d = edit_distance(name, cand);
            if (d <= best_d && d > 0 && (best.empty() || d < best_d)) {
                best = cand;
                best_d = d;
            }
        };
        for (size_t i = scopes_.size(); i > scope_floor_; --i)
            for (auto& [n, b] : scopes_[i - 1].names) consider(n);
        for (auto n : builtin_names()) consider(std::string(n));
        consider("block");
        for (auto& [n, f] : program_.funcs) consider(n);
        static const char* kTypes[] = {"f16", "bf16", "f32", "f64", "i8", "u8", "i16", "i32", "u32", "i64", "bool",
                                       "f8e4m3", "f8e5m2", "i4", "u4"};
        for (auto* t : kTypes) consider(t);
        return best;
    }

    void undeclared(const std::string& name, SourceRange where) {
        std::string s = suggest(name);
        diags_.error(where, "use of undeclared name '" + name + "'" + (s.empty() ? "" : "; did you mean '" + s + "'?"));
    }

    // ---- expressions (below) -----------------------------------------------------
    Value eval(const ast::Expr& e);
    Value eval_name(const ast::Expr& e);
    Value eval_unary(const ast::Expr& e);
    Value eval_binary(const ast::Expr& e);
    Value apply_binary(ast::BinaryOp op, const Value& a, const Value& b, SourceRange ra, SourceRange rb,
                       SourceRange op_range);
    Value eval_ternary(const ast::Expr& e);
    Value eval_index(const ast::Expr& e);
    bool element_ref(const ast::Expr& e, ir::Buffer& buf, std::vector<ir::Expr>& idx);
    Value eval_call(const ast::Expr& e);
    Value eval_cast(const ast::Expr& e);
    Value eval_builtin_call(Builtin b, const ast::Expr& e);
    Value eval_func_call(const ast::FuncDecl& f, const ast::Expr& e);
    std::optional<DataType> resolve_type(const std::string& name, SourceRange where);
    // Converts a scalar value to an IR expression of type `want`. `what` names the
    // context for a narrowing error; implicit narrowing of run-time values is an error.
    ir::Expr convert(const Value& v, DataType want, SourceRange where, const char* what, bool allow_narrowing);
    ir::Expr to_expr(const Value& v, SourceRange where);  // natural type
    DataType natural_type(const Value& v) const;
    std::optional<DataType> unify(const Value& a, const Value& b, SourceRange where, const char* op);
    Value expect_scalar(Value v, SourceRange where, const char* what);
    std::optional<int64_t> expect_const_int(const ast::Expr& e, const char* what);
    std::optional<bool> expect_const_bool(const ast::Expr& e, const char* what);
    ir::Expr expect_index(const ast::Expr& e, const char* what);
    ir::Expr index_of(Value v, SourceRange range, const char* what);
    ir::Expr expect_condition(const ast::Expr& e, const char* what);

    // ---- statements --------------------------------------------------------------
    ir::Stmt elab_block(const std::vector<ast::StmtPtr>& stmts, size_t from);
    ir::Stmt elab_stmt_scoped(const ast::Stmt& s);
    // Elaborates one statement that does not open a scope for the rest of the block.
    ir::Stmt elab_simple(const ast::Stmt& s);
    ir::Stmt elab_for(const ast::Stmt& s);
    ir::Stmt elab_if(const ast::Stmt& s);
    ir::Stmt elab_assign(const ast::Stmt& s);
    ir::Stmt elab_annotation(const ast::Stmt& s);
    ir::Stmt elab_call_stmt(const ast::Expr& e);
    ir::Stmt elab_tile_op(Builtin b, const ast::Expr& e);
    ir::Stmt elab_func_stmt(const ast::FuncDecl& f, const ast::Expr& e);
    ir::Buffer declare_buffer(const ast::Stmt& s);

    TileArg tile_arg(const ast::Expr& e, const char* op, const char* role);
    bool check_writable(const ir::Buffer& b, SourceRange where);
    bool const_shape(const ir::Buffer& b, std::vector<int64_t>& out);
    std::optional<ir::Region> region_for(const TileArg& indexed, const std::vector<ir::Expr>& tile_shape,
                                         SourceRange where, const char* op);
    ir::Region whole(const TileArg& a) { return ir::full_region(a.buffer); }
    void check_const_index(const ir::Buffer& b, const std::vector<ir::Expr>& idx,
                           const std::vector<SourceRange>& ranges);

    // Named arguments of a call: positional ones fill `names` in order.
    struct CallArgs {
        std::vector<const ast::Expr*> values;  // by parameter position; null = absent
        bool ok = true;
    };
    CallArgs bind_args(const ast::Expr& call, const std::string& callee, const std::vector<std::string>& names,
                       size_t required);

    // ---- declarations ------------------------------------------------------------
    bool bind_template_params(const ast::KernelDecl& kernel, const std::vector<ast::ExportArg>* args,
                              SourceRange export_range, ir::PrimFunc& func);
    bool bind_params(const ast::KernelDecl& kernel, ir::PrimFunc& func);
    void bind_launch(const ast::KernelDecl& kernel, ir::PrimFunc& func);
    std::optional<Value> template_value(const ast::TemplateParam& p, const ast::Expr& e);
    std::optional<Value> define_value(const ast::TemplateParam& p, const std::string& text);

    const Program& program_;
    const FrontendOptions& options_;
    DiagnosticEngine& diags_;
    std::array<ir::Var, 3> block_idx_;
    bool in_kernel_body_ = false;
    std::vector<const ast::FuncDecl*> inline_stack_;
    std::vector<ir::ForKind> loop_stack_;
    std::set<const ir::BufferNode*> written_;
    std::vector<std::pair<std::string, std::string>> attrs_;
    std::map<const ir::BufferNode*, std::string> layout_hints_;
    std::map<const ir::BufferNode*, SourceRange> buffer_decl_;
    int let_counter_ = 0;
};

// =================================================================================
// Types and conversions

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

// =================================================================================
// Expressions

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

// Binds a func's parameters in a fresh scope; returns false after reporting errors.
// (Defined as a lambda-like helper inside the calls below.)

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
// Statements

ir::Stmt Elaborator::elab_block(const std::vector<ast::StmtPtr>& stmts, size_t from) {
    std::vector<ir::Stmt> out;
    for (size_t i = from; i < stmts.size(); ++i) {
        const ast::Stmt& s = *stmts[i];
        SourceLoc l = loc_of(s.range);
        if (s.kind == ast::StmtKind::Let) {
            Value v = eval(*s.value);
            if (v.kind == K::MutVar) v = Value::of_expr(ir::make_load(v.buffer, {}, loc_of(s.value->range)));
            if (v.kind == K::Block || v.kind == K::String) v = expect_scalar(v, s.value->range, "a let");
            if (s.type && !v.is_poison()) {
                if (s.type->has_dims) {
                    diags_.error(s.type->range, "a let binds a scalar or an existing tile; declare tiles with "
                                                "shared, fragment or local");
                    v = Value::poison();
                } else if (auto t = resolve_type(s.type->elem, s.type->elem_range)) {
                    ir::Expr x = convert(v, *t, s.value->range, "a let", false);
                    v = x ? Value::of_expr(x) : Value::poison();
                } else {
                    v = Value::poison();
                }
            }
            if (v.kind == K::Scalar && !v.expr->is<ir::VarNode>() && !v.expr->is<ir::IntImmNode>() &&
                !v.expr->is<ir::FloatImmNode>()) {
                ir::Var var = ir::make_let_var(s.name, v.expr->type, l);
                ir::Expr value = v.expr;
                if (!bind(s.name, s.name_range, Value::of_expr(var), Origin::Let)) continue;
                ir::Stmt rest = elab_block(stmts, i + 1);
                out.push_back(ir::make_let(var, value, rest, l));
                return ir::make_seq(out);
            }
            bind(s.name, s.name_range, v, Origin::Let);
            continue;
        }
        if (s.kind == ast::StmtKind::Var) {
            if (s.type->has_dims) {
                diags_.error(s.type->range, "var declares one scalar; for an array use 'local " + s.name + ": " +
                                                s.type->elem + "[...]'");
                continue;
            }
            auto t = resolve_type(s.type->elem, s.type->elem_range);
            if (!t) {
                bind(s.name, s.name_range, Value::poison(), Origin::Var);
                continue;
            }
            ir::Buffer buf = ir::make_buffer(s.name, *t, {}, ir::Scope::Local, l);
            buffer_decl_[buf.get()] = s.name_range;
            ir::Stmt init;
            if (s.value) {
                Value v = expect_scalar(eval(*s.value), s.value->range, "an initial value");
                if (!v.is_poison())
                    if (ir::Expr x = convert(v, *t, s.value->range, "the initial value", false))
                        init = ir::make_store(buf, {}, x, l);
            }
            Value mv;
            mv.kind = K::MutVar;
            mv.buffer = buf;
            if (!bind(s.name, s.name_range, mv, Origin::Var)) continue;
            ir::Stmt rest = elab_block(stmts, i + 1);
            out.push_back(ir::make_allocate(buf, ir::make_seq({init, rest}), l));
            return ir::make_seq(out);
        }
        if (s.kind == ast::StmtKind::Buffer) {
            ir::Buffer buf = declare_buffer(s);
            if (!buf) {
                bind(s.name, s.name_range, Value::poison(), Origin::Buffer);
                continue;
            }
            if (!bind(s.name, s.name_range, Value::of_tile(buf), Origin::Buffer)) continue;
            ir::Stmt rest = elab_block(stmts, i + 1);
            out.push_back(ir::make_allocate(buf, rest, l));
            return ir::make_seq(out);
        }
        if (ir::Stmt st = elab_simple(s)) out.push_back(st);
    }
    return ir::make_seq(out);
}

ir::Buffer Elaborator::declare_buffer(const ast::Stmt& s) {
    const char* scope_kw = s.scope == ast::BufferScope::Shared ? "shared" : s.scope == ast::BufferScope::Fragment
                                                                               ? "fragment"
                                                                               : "local";
    if (in_parallel()) {
        diags_.error(s.range, std::string("cannot declare a ") + scope_kw + " buffer inside a parallel loop");
        return nullptr;
    }
    auto t = resolve_type(s.type->elem, s.type->elem_range);
    if (!s.type->has_dims) {
        diags_.error(s.type->range, std::string(scope_kw) + " buffer '" + s.name + "' needs a shape, e.g. " +
                                        s.type->elem + "[128, 32]" +
                                        (s.scope == ast::BufferScope::Local ? "; for one scalar use var" : ""));
        return nullptr;
    }
    if (!s.type->strides.empty()) {
        diags_.error(s.type->range, "strides(...) applies to tensor parameters only; on-chip buffers get their "
                                    "layout from the compiler (or @layout)");
        return nullptr;
    }
    std::vector<ir::Expr> shape;
    bool ok = t.has_value();
    int64_t elems = 1;
    for (auto& d : s.type->dims) {
        Value v = eval(*d);
        if (v.is_poison()) {
            ok = false;
            continue;
        }
        std::optional<int64_t> c;
        if (v.kind == K::Int) c = v.i;
        else if (v.kind == K::Scalar) c = ir::as_const_int(v.expr);
        if (!c) {
            std::string why = v.kind == K::Scalar ? " ('" + ir::print(v.expr) + "' is only known at run time)" : "";
            diags_.error(d->range, std::string("the shape of ") + scope_kw + " buffer '" + s.name +
                                       "' must be compile-time constants" + why);
            ok = false;
            continue;
        }
        if (*c <= 0) {
            diags_.error(d->range, "dimension of '" + s.name + "' must be positive, but it is " + std::to_string(*c));
            ok = false;
            continue;
        }
        if (__builtin_mul_overflow(elems, *c, &elems) || elems > (int64_t(1) << 31)) {
            diags_.error(s.type->range, "buffer '" + s.name + "' is too large");
            ok = false;
            break;
        }
        shape.push_back(ir::make_int(*c, DataType::index(), loc_of(d->range)));
    }
    if (!ok) return nullptr;
    ir::Scope scope = s.scope == ast::BufferScope::Shared     ? ir::Scope::Shared
                      : s.scope == ast::BufferScope::Fragment ? ir::Scope::Fragment
                                                              : ir::Scope::Local;
    ir::Buffer b = ir::make_buffer(s.name, *t, shape, scope, loc_of(s.name_range));
    buffer_decl_[b.get()] = s.name_range;
    return b;
}

ir::Stmt Elaborator::elab_stmt_scoped(const ast::Stmt& s) {
    push_scope();
    ir::Stmt r = s.kind == ast::StmtKind::Block ? elab_block(s.body, 0) : elab_simple(s);
    pop_scope();
    return r;
}

ir::Stmt Elaborator::elab_simple(const ast::Stmt& s) {
    switch (s.kind) {
    case ast::StmtKind::Block: return elab_stmt_scoped(s);
    case ast::StmtKind::For: return elab_for(s);
    case ast::StmtKind::If: return elab_if(s);
    case ast::StmtKind::Assign: return elab_assign(s);
    case ast::StmtKind::Annotation: return elab_annotation(s);
    case ast::StmtKind::Empty: return nullptr;
    case ast::StmtKind::Return:
        if (inline_stack_.empty()) diags_.error(s.range, "'return' is not allowed in a kernel");
        else diags_.error(s.range, "'return' with a value must be the last statement of a func, which is then "
                                   "called in an expression");
        return nullptr;
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue:
        diags_.error(s.range, std::string("'") + (s.kind == ast::StmtKind::Break ? "break" : "continue") +
                                  "' is not supported: loops have a fixed trip count; guard the body with 'if'");
        return nullptr;
    case ast::StmtKind::Expr: {
        const ast::Expr& e = *s.value;
        if (e.kind == ast::ExprKind::Call) return elab_call_stmt(e);
        Value v = eval(e);
        if (!v.is_poison()) diags_.warning(e.range, "expression result unused");
        return nullptr;
    }
    case ast::StmtKind::Let:
    case ast::StmtKind::Var:
    case ast::StmtKind::Buffer: {
        // A declaration as the whole body of an if/else: scoped to nothing.
        std::vector<ast::StmtPtr> none;
        return elab_stmt_scoped(s);
    }
    }
    return nullptr;
}

ir::Stmt Elaborator::elab_for(const ast::Stmt& s) {
    const std::string& kind = s.name;
    SourceLoc l = loc_of(s.range);
    ir::ForKind fk;
    if (kind == "range") fk = ir::ForKind::Serial;
    else if (kind == "unroll") fk = ir::ForKind::Unroll;
    else if (kind == "parallel") fk = ir::ForKind::Parallel;
    else if (kind == "pipelined") fk = ir::ForKind::Pipelined;
    else {
        diags_.error(s.name_range, "unknown loop kind '" + kind + "'; expected range, unroll, parallel or pipelined");
        return nullptr;
    }
    bool inside_parallel = std::find(loop_stack_.begin(), loop_stack_.end(), ir::ForKind::Parallel) != loop_stack_.end();
    if (inside_parallel && (fk == ir::ForKind::Parallel || fk == ir::ForKind::Pipelined)) {
        diags_.error(s.name_range, fk == ir::ForKind::Parallel
                                       ? "parallel loops cannot be nested; write one loop over several "
                                         "variables, e.g. for i, j in parallel(M, N)"
                                       : "a pipelined loop cannot be inside a parallel loop");
        return nullptr;
    }
    std::vector<const ast::Expr*> positional;
    const ast::Expr* stages_arg = nullptr;
    for (auto& a : s.args) {
        if (a.name.empty()) {
            positional.push_back(a.value.get());
        } else if (a.name == "stages" && fk == ir::ForKind::Pipelined) {
            stages_arg = a.value.get();
        } else {
            diags_.error(a.name_range, "'" + kind + "' has no argument named '" + a.name + "'" +
                                           (fk == ir::ForKind::Pipelined ? " (it takes 'stages')" : ""));
            return nullptr;
        }
    }
    size_t nvars = s.loop_vars.size();
    std::vector<ir::Expr> mins, extents;
    std::vector<ir::Expr> starts;  // range with start/step: i = start + v * step
    int64_t step = 1;
    int stages = 0;
    if (fk == ir::ForKind::Parallel) {
        if (positional.size() != nvars) {
            diags_.error(s.range, "parallel has " + plural(positional.size(), "extent") + " but " +
                                      plural(nvars, "loop variable") + "; give one extent per variable");
            return nullptr;
        }
        for (auto* p : positional) {
            auto c = expect_const_int(*p, "the extent of a parallel loop");
            if (!c) return nullptr;
            if (*c <= 0) {
                diags_.error(p->range, "the extent of a parallel loop must be positive");
                return nullptr;
            }
            mins.push_back(ir::make_int(0));
            extents.push_back(ir::make_int(*c));
        }
    } else {
        if (nvars != 1) {
            diags_.error(s.loop_vars[1].range, "'" + kind + "' loops take one variable; only parallel takes several");
            return nullptr;
        }
        size_t max_args = fk == ir::ForKind::Pipelined ? 2 : 3;
        if (positional.empty() || positional.size() > max_args) {
            diags_.error(s.name_range, kind + " takes " + (fk == ir::ForKind::Pipelined ? "(n) or (start, end)"
                                                                                       : "(n), (start, end) or (start, end, step)"));
            return nullptr;
        }
        ir::Expr start = positional.size() == 1 ? ir::make_int(0) : expect_index(*positional[0], "a loop bound");
        ir::Expr end = expect_index(*positional[positional.size() == 1 ? 0 : 1], "a loop bound");
        if (!start || !end) return nullptr;
        if (positional.size() == 3) {
            auto c = expect_const_int(*positional[2], "the step of a range");
            if (!c) return nullptr;
            if (*c == 0) {
                diags_.error(positional[2]->range, "the step of a range must not be zero");
                return nullptr;
            }
            step = *c;
        }
        ir::Expr extent;
        if (step == 1) extent = ir::sub(end, start);
        else if (step > 0) extent = ir::floordiv(ir::add(ir::sub(end, start), ir::make_int(step - 1)), ir::make_int(step));
        else extent = ir::floordiv(ir::add(ir::sub(start, end), ir::make_int(-step - 1)), ir::make_int(-step));
        if (fk == ir::ForKind::Unroll && !ir::as_const_int(transform::simplify(extent))) {
            diags_.error(s.name_range, "the trip count of an unroll loop must be a compile-time constant");
            return nullptr;
        }
        if (fk == ir::ForKind::Pipelined) {
            stages = 2;
            if (stages_arg) {
                auto c = expect_const_int(*stages_arg, "the number of pipeline stages");
                if (!c) return nullptr;
                if (*c < 1 || *c > 16) {
                    diags_.error(stages_arg->range, "stages must be between 1 and 16, but it is " + std::to_string(*c));
                    return nullptr;
                }
                stages = static_cast<int>(*c);
            }
        }
        if (step == 1) {
            mins.push_back(start);
            extents.push_back(extent);
        } else {
            mins.push_back(ir::make_int(0));
            extents.push_back(extent);
            starts.push_back(start);
        }
    }
    push_scope();
    std::vector<ir::Var> vars;
    for (auto& lv : s.loop_vars) {
        ir::Var v = ir::make_loop_var(lv.name, loc_of(lv.range));
        vars.push_back(v);
    }
    // With a step, the loop runs over a counter and binds the variable to start + k*step.
    ir::Var counter;
    if (!starts.empty()) {
        counter = ir::make_loop_var(s.loop_vars[0].name + "_k", loc_of(s.loop_vars[0].range));
        ir::Var iv = ir::make_let_var(s.loop_vars[0].name, DataType::index(), loc_of(s.loop_vars[0].range));
        vars[0] = iv;
    }
    bool ok = true;
    for (size_t i = 0; i < vars.size(); ++i) ok &= bind(s.loop_vars[i].name, s.loop_vars[i].range, Value::of_expr(vars[i]), Origin::Loop);
    loop_stack_.push_back(fk);
    ir::Stmt body = ok ? elab_block(s.then_branch->body, 0) : nullptr;
    loop_stack_.pop_back();
    pop_scope();
    if (!ok) return nullptr;
    if (!body) body = ir::make_seq({});
    if (counter) {
        body = ir::make_let(vars[0], ir::add(starts[0], ir::mul(counter, ir::make_int(step))), body, l);
        return ir::make_for(counter, mins[0], extents[0], fk, body, l, stages);
    }
    for (size_t i = vars.size(); i > 0; --i) body = ir::make_for(vars[i - 1], mins[i - 1], extents[i - 1], fk, body, l, stages);
    return body;
}

ir::Stmt Elaborator::elab_if(const ast::Stmt& s) {
    Value c = expect_scalar(eval(*s.value), s.value->range, "a condition");
    if (c.kind == K::Bool) {
        // A compile-time condition: only the taken branch is elaborated (like `if
        // constexpr`), so the other may be ill-formed for this instantiation.
        if (c.b) return elab_stmt_scoped(*s.then_branch);
        if (s.else_branch) return elab_stmt_scoped(*s.else_branch);
        return nullptr;
    }
    ir::Expr cond;
    if (!c.is_poison()) {
        if (!natural_type(c).is_bool()) {
            diags_.error(s.value->range, "the condition of 'if' must be a bool, but it has type " +
                                             (c.is_const() ? std::string("number") : natural_type(c).str()) +
                                             "; compare it explicitly (e.g. x != 0)");
        } else {
            cond = to_expr(c, s.value->range);
        }
    }
    ir::Stmt then_s = elab_stmt_scoped(*s.then_branch);
    ir::Stmt else_s = s.else_branch ? elab_stmt_scoped(*s.else_branch) : nullptr;
    if (!cond) return nullptr;
    return ir::make_if(cond, then_s ? then_s : ir::make_seq({}), else_s, loc_of(s.range));
}

bool Elaborator::check_writable(const ir::Buffer& b, SourceRange where) {
    if (b->scope == ir::Scope::Global && b->access == ir::Access::In) {
        auto d = diags_.error(where, "cannot write to '" + b->name + "': it is an input tensor; mark it 'out' or "
                                                                     "'inout' in the kernel's parameters");
        if (buffer_decl_.count(b.get())) d.note(buffer_decl_[b.get()], "'" + b->name + "' is declared here");
        return false;
    }
    written_.insert(b.get());
    return true;
}

ir::Stmt Elaborator::elab_assign(const ast::Stmt& s) {
    const ast::Expr& target = *s.target;
    SourceLoc l = loc_of(s.range);
    ir::Buffer buf;
    std::vector<ir::Expr> idx;
    SourceRange target_range = target.range;
    if (target.kind == ast::ExprKind::Name) {
        const Binding* b = lookup(target.text);
        if (!b) {
            eval_name(target);
            return nullptr;
        }
        if (b->value.is_poison()) return nullptr;
        if (b->value.kind == K::MutVar) {
            buf = b->value.buffer;
        } else {
            const char* what = "it is not a var";
            switch (b->origin) {
            case Origin::Let: what = "it is declared with 'let'; use 'var' for a mutable scalar"; break;
            case Origin::Loop: what = "it is a loop variable"; break;
            case Origin::TemplateParam: what = "it is a compile-time parameter"; break;
            case Origin::Size: what = "it is a tensor size"; break;
            case Origin::ScalarParam: what = "it is a scalar parameter"; break;
            case Origin::FuncParam: what = "it is a func parameter"; break;
            case Origin::Tensor:
            case Origin::Buffer: what = "it is a whole tile; assign elements (t[i, j] = ...) or use fill/copy"; break;
            case Origin::Var: break;
            }
            diags_.error(target.range, "cannot assign to '" + target.text + "': " + what)
                .note(b->where, "'" + target.text + "' is declared here");
            return nullptr;
        }
    } else if (target.kind == ast::ExprKind::Index) {
        if (!element_ref(target, buf, idx)) return nullptr;
        if (!check_writable(buf, target.range)) return nullptr;
    } else {
        diags_.error(target.range, "cannot assign to this expression; assign to a var or an element t[i, j]");
        return nullptr;
    }
    Value rhs = expect_scalar(eval(*s.value), s.value->range, "an assigned value");
    if (rhs.is_poison()) return nullptr;
    if (s.assign_op != "=") {
        static const std::map<std::string, ast::BinaryOp> ops = {
            {"+=", ast::BinaryOp::Add}, {"-=", ast::BinaryOp::Sub}, {"*=", ast::BinaryOp::Mul},
            {"/=", ast::BinaryOp::Div}, {"%=", ast::BinaryOp::Mod}, {"&=", ast::BinaryOp::BitAnd},
            {"|=", ast::BinaryOp::BitOr}, {"^=", ast::BinaryOp::BitXor}, {"<<=", ast::BinaryOp::Shl},
            {">>=", ast::BinaryOp::Shr}};
        Value cur = Value::of_expr(ir::make_load(buf, idx, l));
        rhs = apply_binary(ops.at(s.assign_op), cur, rhs, target_range, s.value->range, s.op_range);
        if (rhs.is_poison()) return nullptr;
    }
    ir::Expr v = convert(rhs, buf->dtype, s.value->range, ("the assignment to '" + buf->name + "'").c_str(), false);
    if (!v) return nullptr;
    return ir::make_store(buf, idx, v, l);
}

ir::Stmt Elaborator::elab_annotation(const ast::Stmt& s) {
    auto name_arg = [&](size_t i) -> std::string {
        if (i >= s.args.size() || s.args[i].value->kind != ast::ExprKind::Name) return "";
        return s.args[i].value->text;
    };
    if (s.name == "rasterize") {
        if (s.args.size() != 1 || (!s.args[0].name.empty() && s.args[0].name != "panel")) {
            diags_.error(s.range, "@rasterize takes one argument: @rasterize(panel = N)");
            return nullptr;
        }
        auto c = expect_const_int(*s.args[0].value, "the rasterization panel");
        if (!c) return nullptr;
        if (*c < 1) {
            diags_.error(s.args[0].value->range, "the rasterization panel must be at least 1");
            return nullptr;
        }
        attrs_.emplace_back("rasterize", std::to_string(*c));
        return nullptr;
    }
    if (s.name == "warp_policy") {
        std::string p = name_arg(0);
        if (s.args.size() != 1 || (p != "full_row" && p != "full_col" && p != "square")) {
            diags_.error(s.range, "@warp_policy takes one of full_row, full_col, square");
            return nullptr;
        }
        attrs_.emplace_back("warp_policy", p);
        return nullptr;
    }
    if (s.name == "layout") {
        std::string buf = name_arg(0), kind = name_arg(1);
        if (s.args.size() != 2 || buf.empty() || (kind != "swizzle" && kind != "row_major" && kind != "padded")) {
            diags_.error(s.range, "@layout takes a shared buffer and a layout: @layout(buf, swizzle | row_major | "
                                  "padded)");
            return nullptr;
        }
        Value v = eval(*s.args[0].value);
        if (v.is_poison()) return nullptr;
        if (v.kind != K::Tile || v.buffer->scope != ir::Scope::Shared) {
            diags_.error(s.args[0].value->range, "@layout applies to shared buffers; '" + buf + "' is not one");
            return nullptr;
        }
        attrs_.emplace_back("layout(" + buf + ")", kind);
        return nullptr;
    }
    diags_.warning(s.name_range, "unknown annotation '@" + s.name + "' ignored (known: @layout, @rasterize, "
                                                                   "@warp_policy)");
    return nullptr;
}

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

// =================================================================================
// Tile operations

TileArg Elaborator::tile_arg(const ast::Expr& e, const char* op, const char* role) {
    TileArg t;
    t.range = e.range;
    if (e.kind == ast::ExprKind::Index) {
        Value b = eval(*e.operands[0]);
        if (b.is_poison()) return t;
        if (b.kind != K::Tile) {
            diags_.error(e.operands[0]->range, std::string("the ") + role + " of " + op + " must be a tensor or a tile");
            return t;
        }
        size_t n = e.operands.size() - 1;
        if (n != b.buffer->rank()) {
            diags_.error(e.range, std::string("the start index of '") + b.buffer->name + "' in " + op + " needs " +
                                      plural_index(b.buffer->rank()) + " (one per dimension), but " +
                                      std::to_string(n) + (n == 1 ? " was" : " were") + " given");
            return t;
        }
        for (size_t i = 1; i < e.operands.size(); ++i) {
            ir::Expr x = expect_index(*e.operands[i], "a start index");
            if (!x) return t;
            t.start.push_back(x);
        }
        t.whole = false;
        t.buffer = b.buffer;
        return t;
    }
    Value v = eval(e);
    if (v.is_poison()) return t;
    if (v.kind != K::Tile) {
        diags_.error(e.range, std::string("the ") + role + " of " + op + " must be a tile or a tensor" +
                                  (v.kind == K::MutVar || v.is_scalar_value() ? ", not a scalar" : ""));
        return t;
    }
    t.buffer = v.buffer;
    return t;
}

bool Elaborator::const_shape(const ir::Buffer& b, std::vector<int64_t>& out) {
    out.clear();
    for (auto& d : b->shape) {
        auto c = ir::as_const_int(d);
        if (!c) return false;
        out.push_back(*c);
    }
    return true;
}

std::optional<ir::Region> Elaborator::region_for(const TileArg& indexed, const std::vector<ir::Expr>& tile_shape,
                                                 SourceRange where, const char* op) {
    const ir::Buffer& b = indexed.buffer;
    size_t R = b->rank(), r = tile_shape.size();
    if (r > R) {
        diags_.error(where, std::string(op) + " of a " + std::to_string(r) + "-d tile with " + std::to_string(R) +
                                "-d '" + b->name + "': the tile has more dimensions than the tensor");
        return std::nullopt;
    }
    std::vector<ir::Expr> extent;
    for (size_t i = 0; i < R - r; ++i) extent.push_back(ir::make_int(1));
    for (auto& d : tile_shape) extent.push_back(d);
    if (b->scope != ir::Scope::Global) {
        for (size_t d = 0; d < R; ++d) {
            auto n = ir::as_const_int(b->shape[d]);
            auto x = ir::as_const_int(extent[d]);
            auto s = ir::as_const_int(indexed.start[d]);
            if (!n || !x) continue;
            if (*x > *n || (s && (*s < 0 || *s + *x > *n))) {
                diags_.error(indexed.range, std::string(op) + " reaches outside '" + b->name + "' " +
                                                shape_str(b->shape) + " in dimension " + std::to_string(d) + ": " +
                                                (s ? "[" + std::to_string(*s) + ", " + std::to_string(*s + *x) + ")"
                                                   : std::to_string(*x) + " elements") +
                                                "; only global tensors are bounds-masked");
                return std::nullopt;
            }
        }
    }
    return ir::make_region(b, indexed.start, extent);
}

// The side of a copy that should carry the start index: a global tensor, else the
// tile with more elements (the smaller whole tile then gives the extent).
static const ir::Buffer& larger_side(const ir::Buffer& a, const ir::Buffer& b) {
    if (a->scope == ir::Scope::Global) return a;
    if (b->scope == ir::Scope::Global) return b;
    auto count = [](const ir::Buffer& x) {
        int64_t n = 1;
        for (auto& d : x->shape) n *= ir::as_const_int(d).value_or(1);
        return n;
    };
    return count(a) >= count(b) ? a : b;
}

static bool same_shape(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
    return a.size() == b.size() && ir::structural_equal(a, b);
}

ir::Stmt Elaborator::elab_tile_op(Builtin b, const ast::Expr& e) {
    const std::string& name = e.operands[0]->text;
    SourceLoc l = loc_of(e.range);
    switch (b) {
    case Builtin::Copy: {
        CallArgs a = bind_args(e, name, {"src", "dst", "pad"}, 2);
        if (!a.ok) return nullptr;
        TileArg src = tile_arg(*a.values[0], "copy", "source");
        TileArg dst = tile_arg(*a.values[1], "copy", "destination");
        if (!src.ok() || !dst.ok()) return nullptr;
        if (!check_writable(dst.buffer, dst.range)) return nullptr;
        std::optional<ir::Region> rs, rd;
        if (src.whole && dst.whole) {
            if (!same_shape(src.buffer->shape, dst.buffer->shape)) {
                diags_.error(e.range, "copy between '" + src.buffer->name + "' " + shape_str(src.buffer->shape) +
                                          " and '" + dst.buffer->name + "' " + shape_str(dst.buffer->shape) +
                                          " of different shapes; give a start index on the larger side, e.g. " +
                                          larger_side(src.buffer, dst.buffer)->name + "[i, j]");
                return nullptr;
            }
            rs = whole(src);
            rd = whole(dst);
        } else if (src.whole) {
            rs = whole(src);
            rd = region_for(dst, src.buffer->shape, e.range, "copy");
        } else if (dst.whole) {
            rd = whole(dst);
            rs = region_for(src, dst.buffer->shape, e.range, "copy");
        } else {
            diags_.error(e.range, "copy needs one side to be a whole tile, which gives the extent; both '" +
                                      src.buffer->name + "' and '" + dst.buffer->name + "' have start indices");
            return nullptr;
        }
        if (!rs || !rd) return nullptr;
        ir::Expr pad;
        if (a.values[2]) {
            Value pv = expect_scalar(eval(*a.values[2]), a.values[2]->range, "the pad value");
            if (pv.is_poison()) return nullptr;
            pad = convert(pv, src.buffer->dtype, a.values[2]->range, "the pad value", false);
            if (!pad) return nullptr;
        }
        return ir::make_copy(*rs, *rd, pad, l);
    }
    case Builtin::Gemm: {
        CallArgs a = bind_args(e, name, {"a", "b", "c", "trans_a", "trans_b", "clear"}, 3);
        if (!a.ok) return nullptr;
        TileArg ops[3];
        const char* roles[3] = {"first operand", "second operand", "accumulator"};
        for (int i = 0; i < 3; ++i) {
            ops[i] = tile_arg(*a.values[i], "gemm", roles[i]);
            if (!ops[i].ok()) return nullptr;
            if (!ops[i].whole) {
                diags_.error(ops[i].range, "gemm operands are whole tiles; copy the part you need into a shared or "
                                           "fragment buffer first");
                return nullptr;
            }
        }
        bool flags[3] = {false, false, false};
        for (int i = 0; i < 3; ++i)
            if (a.values[3 + i]) {
                auto f = expect_const_bool(*a.values[3 + i], i == 0 ? "trans_a" : i == 1 ? "trans_b" : "clear");
                if (!f) return nullptr;
                flags[i] = *f;
            }
        const ir::Buffer &A = ops[0].buffer, &B = ops[1].buffer, &C = ops[2].buffer;
        if (C->scope != ir::Scope::Fragment) {
            auto d = diags_.error(ops[2].range, "the gemm accumulator '" + C->name + "' must be a fragment, but it is " +
                                                    scope_word(C->scope));
            if (buffer_decl_.count(C.get())) d.note(buffer_decl_[C.get()], "declare it as 'fragment " + C->name + ": ...'");
            return nullptr;
        }
        for (int i = 0; i < 2; ++i) {
            const ir::Buffer& X = ops[i].buffer;
            if (X->scope == ir::Scope::Global) {
                diags_.error(ops[i].range, "gemm operand '" + X->name + "' is a global tensor; copy a tile of it into "
                                                                        "a shared buffer first");
                return nullptr;
            }
            if (X->scope == ir::Scope::Local) {
                diags_.error(ops[i].range, "gemm operand '" + X->name + "' is a local buffer; use a shared buffer or "
                                                                        "a fragment");
                return nullptr;
            }
        }
        for (int i = 0; i < 3; ++i)
            if (ops[i].buffer->rank() != 2) {
                diags_.error(ops[i].range, "gemm operands must be 2-d tiles, but '" + ops[i].buffer->name + "' is " +
                                               std::to_string(ops[i].buffer->rank()) + "-d");
                return nullptr;
            }
        std::vector<int64_t> sa, sb, sc;
        if (!const_shape(A, sa) || !const_shape(B, sb) || !const_shape(C, sc)) return nullptr;
        int64_t M = flags[0] ? sa[1] : sa[0], Ka = flags[0] ? sa[0] : sa[1];
        int64_t Kb = flags[1] ? sb[1] : sb[0], N = flags[1] ? sb[0] : sb[1];
        auto dims = [](const std::vector<int64_t>& s) {
            return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + "]";
        };
        if (Ka != Kb) {
            diags_.error(e.range, "gemm K mismatch: '" + A->name + "' is " + dims(sa) + (flags[0] ? " (transposed)" : "") +
                                      " so K = " + std::to_string(Ka) + ", but '" + B->name + "' is " + dims(sb) +
                                      (flags[1] ? " (transposed)" : "") + " so K = " + std::to_string(Kb));
            return nullptr;
        }
        if (sc[0] != M || sc[1] != N) {
            diags_.error(ops[2].range, "gemm accumulator '" + C->name + "' is " + dims(sc) + " but '" + A->name +
                                           "' @ '" + B->name + "' is [" + std::to_string(M) + ", " + std::to_string(N) +
                                           "]");
            return nullptr;
        }
        if (A->dtype != B->dtype) {
            diags_.error(e.range, "gemm operands have different element types: '" + A->name + "' is " +
                                      A->dtype.str() + " and '" + B->name + "' is " + B->dtype.str());
            return nullptr;
        }
        bool ok_acc = A->dtype.is_float() ? C->dtype.is_float() && C->dtype.bits >= 16
                                          : C->dtype == DataType::i32();
        if (!ok_acc || A->dtype.is_bool()) {
            diags_.error(ops[2].range, "gemm accumulator '" + C->name + "' has type " + C->dtype.str() + "; use " +
                                           (A->dtype.is_float() ? "f32 (or f16)" : "i32") + " for " + A->dtype.str() +
                                           " inputs");
            return nullptr;
        }
        written_.insert(C.get());
        return ir::make_gemm(whole(ops[0]), whole(ops[1]), whole(ops[2]), flags[0], flags[1], flags[2], l);
    }
    case Builtin::Fill: {
        CallArgs a = bind_args(e, name, {"dst", "value"}, 2);
        if (!a.ok) return nullptr;
        TileArg dst = tile_arg(*a.values[0], "fill", "destination");
        if (!dst.ok()) return nullptr;
        if (!dst.whole) {
            diags_.error(dst.range, "fill takes a whole tile");
            return nullptr;
        }
        if (dst.buffer->scope == ir::Scope::Global) {
            diags_.error(dst.range, "fill works on shared, fragment and local tiles; to set a tensor, fill a tile "
                                    "and copy it");
            return nullptr;
        }
        Value v = expect_scalar(eval(*a.values[1]), a.values[1]->range, "the fill value");
        if (v.is_poison()) return nullptr;
        ir::Expr x = convert(v, dst.buffer->dtype, a.values[1]->range, "the fill value", false);
        if (!x) return nullptr;
        written_.insert(dst.buffer.get());
        return ir::make_fill(whole(dst), x, l);
    }
    case Builtin::ReduceSum:
    case Builtin::ReduceMax:
    case Builtin::ReduceMin:
    case Builtin::ReduceAbsMax:
    case Builtin::Cumsum: {
        bool cumsum = b == Builtin::Cumsum;
        CallArgs a = bind_args(e, name, {"src", "dst", "dim", cumsum ? "reverse" : "clear"}, 2);
        if (!a.ok) return nullptr;
        TileArg src = tile_arg(*a.values[0], name.c_str(), "source");
        TileArg dst = tile_arg(*a.values[1], name.c_str(), "destination");
        if (!src.ok() || !dst.ok()) return nullptr;
        for (TileArg* t : {&src, &dst}) {
            if (!t->whole || t->buffer->scope == ir::Scope::Global) {
                diags_.error(t->range, name + " works on whole shared, fragment or local tiles; copy tensors into a "
                                              "tile first");
                return nullptr;
            }
        }
        int64_t rank = static_cast<int64_t>(src.buffer->rank());
        int64_t dim = -1;
        if (a.values[2]) {
            auto c = expect_const_int(*a.values[2], "the dimension");
            if (!c) return nullptr;
            dim = *c;
        }
        if (rank == 0 || dim < -rank || dim >= rank) {
            diags_.error(a.values[2] ? a.values[2]->range : e.range,
                         "dim " + std::to_string(dim) + " is out of range for the " + std::to_string(rank) +
                             "-d tile '" + src.buffer->name + "'");
            return nullptr;
        }
        if (dim < 0) dim += rank;
        bool flag = !cumsum;
        if (a.values[3]) {
            auto f = expect_const_bool(*a.values[3], cumsum ? "reverse" : "clear");
            if (!f) return nullptr;
            flag = *f;
        }
        std::vector<int64_t> ss, ds;
        const_shape(src.buffer, ss);
        const_shape(dst.buffer, ds);
        std::vector<int64_t> want = ss;
        if (!cumsum) want.erase(want.begin() + dim);
        std::vector<int64_t> want_keep = ss;
        want_keep[dim] = 1;
        bool ok = ds == want || (!cumsum && ds == want_keep) || (!cumsum && want.empty() && ds == std::vector<int64_t>{1});
        if (!ok) {
            std::vector<ir::Expr> w;
            for (auto x : want) w.push_back(ir::make_int(x));
            diags_.error(dst.range, name + " of '" + src.buffer->name + "' " + shape_str(src.buffer->shape) +
                                        (cumsum ? "" : " over dim " + std::to_string(dim)) + " gives " +
                                        shape_str(w) + ", but '" + dst.buffer->name + "' is " +
                                        shape_str(dst.buffer->shape));
            return nullptr;
        }
        if (src.buffer->dtype.is_bool() || dst.buffer->dtype.is_bool()) {
            diags_.error(e.range, name + " needs numeric tiles");
            return nullptr;
        }
        written_.insert(dst.buffer.get());
        if (cumsum) return ir::make_cumsum(whole(src), whole(dst), static_cast<int>(dim), flag, l);
        ir::ReduceKind rk = b == Builtin::ReduceSum   ? ir::ReduceKind::Sum
                            : b == Builtin::ReduceMax ? ir::ReduceKind::Max
                            : b == Builtin::ReduceMin ? ir::ReduceKind::Min
                                                      : ir::ReduceKind::AbsMax;
        return ir::make_reduce(rk, whole(src), whole(dst), static_cast<int>(dim), flag, l);
    }
    case Builtin::AtomicAdd: {
        CallArgs a = bind_args(e, name, {"dst", "src"}, 2);
        if (!a.ok) return nullptr;
        TileArg dst = tile_arg(*a.values[0], "atomic_add", "destination");
        TileArg src = tile_arg(*a.values[1], "atomic_add", "source");
        if (!dst.ok() || !src.ok()) return nullptr;
        if (!src.whole) {
            diags_.error(src.range, "the source of atomic_add is a whole tile");
            return nullptr;
        }
        if (dst.buffer->scope != ir::Scope::Global && dst.buffer->scope != ir::Scope::Shared) {
            diags_.error(dst.range, "atomic_add adds into a global tensor or a shared buffer; '" + dst.buffer->name +
                                        "' is " + scope_word(dst.buffer->scope));
            return nullptr;
        }
        if (!check_writable(dst.buffer, dst.range)) return nullptr;
        if (!dst.buffer->dtype.is_float() && !dst.buffer->dtype.is_integer()) {
            diags_.error(dst.range, "atomic_add needs a numeric destination");
            return nullptr;
        }
        std::optional<ir::Region> rd = dst.whole ? std::optional<ir::Region>(whole(dst))
                                                 : region_for(dst, src.buffer->shape, e.range, "atomic_add");
        if (!rd) return nullptr;
        if (dst.whole && !same_shape(dst.buffer->shape, src.buffer->shape)) {
            diags_.error(e.range, "atomic_add of '" + src.buffer->name + "' " + shape_str(src.buffer->shape) +
                                      " into '" + dst.buffer->name + "' " + shape_str(dst.buffer->shape) +
                                      ": shapes differ; give a start index, e.g. " + dst.buffer->name + "[i, j]");
            return nullptr;
        }
        return ir::make_atomic_add(*rd, whole(src), l);
    }
    case Builtin::Print: {
        if (e.args.empty() || e.args[0].value->kind != ast::ExprKind::String || !e.args[0].name.empty()) {
            diags_.error(e.range, "print takes a format string first: print(\"x = {}\", x)");
            return nullptr;
        }
        const std::string& fmt = e.args[0].value->text;
        size_t holes = 0;
        for (size_t p = fmt.find("{}"); p != std::string::npos; p = fmt.find("{}", p + 2)) ++holes;
        if (holes != e.args.size() - 1) {
            diags_.error(e.args[0].value->range, "the format has " + plural(holes, "'{}' placeholder") + " but " +
                                                     plural(e.args.size() - 1, "value") + (e.args.size() == 2 ? " is" : " are") +
                                                     " given");
            return nullptr;
        }
        std::vector<ir::Expr> vals;
        for (size_t i = 1; i < e.args.size(); ++i) {
            if (!e.args[i].name.empty()) {
                diags_.error(e.args[i].name_range, "print takes no named arguments");
                return nullptr;
            }
            Value v = expect_scalar(eval(*e.args[i].value), e.args[i].value->range, "a printed value");
            if (v.is_poison()) return nullptr;
            vals.push_back(to_expr(v, e.args[i].value->range));
        }
        return ir::make_print(fmt, vals, l);
    }
    case Builtin::Assert: {
        CallArgs a = bind_args(e, name, {"cond", "msg"}, 1);
        if (!a.ok) return nullptr;
        ir::Expr c = expect_condition(*a.values[0], "the condition of assert");
        std::string msg = "assertion failed";
        if (a.values[1]) {
            if (a.values[1]->kind != ast::ExprKind::String) {
                diags_.error(a.values[1]->range, "the message of assert must be a string literal");
                return nullptr;
            }
            msg = a.values[1]->text;
        }
        if (!c) return nullptr;
        return ir::make_assert(c, msg, l);
    }
    default: return nullptr;
    }
}

// =================================================================================
// Declarations and instantiation

std::optional<Value> Elaborator::template_value(const ast::TemplateParam& p, const ast::Expr& e) {
    Value v = eval(e);
    if (v.is_poison()) return std::nullopt;
    switch (p.kind) {
    case ast::TemplateKind::Int:
        if (v.kind == K::Int) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is an int, but this is not an integer constant")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    case ast::TemplateKind::Bool:
        if (v.kind == K::Bool) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is a bool; give true or false")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    case ast::TemplateKind::Type:
        if (v.kind == K::Type) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is a type; give an element type such as f16")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<Value> Elaborator::define_value(const ast::TemplateParam& p, const std::string& text) {
    auto fail = [&](const char* want) -> std::optional<Value> {
        diags_.error(p.range, "-D " + p.name + "=" + text + ": '" + p.name + "' is " + want + ", and '" + text +
                                  "' is not");
        return std::nullopt;
    };
    switch (p.kind) {
    case ast::TemplateKind::Int: {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 0);
        if (text.empty() || *end != '\0' || errno == ERANGE) return fail("an int");
        return Value::of_int(v);
    }
    case ast::TemplateKind::Bool:
        if (text == "true" || text == "1") return Value::of_bool(true);
        if (text == "false" || text == "0") return Value::of_bool(false);
        return fail("a bool (true or false)");
    case ast::TemplateKind::Type:
        if (auto t = DataType::from_name(text)) return Value::of_type(*t);
        return fail("a type (such as f16)");
    }
    return std::nullopt;
}

static std::string value_text(const Value& v) {
    switch (v.kind) {
    case K::Int: return std::to_string(v.i);
    case K::Bool: return v.b ? "true" : "false";
    case K::Type: return v.type.str();
    default: return "?";
    }
}

bool Elaborator::bind_template_params(const ast::KernelDecl& kernel, const std::vector<ast::ExportArg>* args,
                                      SourceRange export_range, ir::PrimFunc& func) {
    bool ok = true;
    std::map<std::string, const ast::ExportArg*> given;
    if (args) {
        for (auto& a : *args) {
            auto it = std::find_if(kernel.template_params.begin(), kernel.template_params.end(),
                                   [&](const ast::TemplateParam& p) { return p.name == a.name; });
            if (it == kernel.template_params.end()) {
                diags_.error(a.name_range, "kernel '" + kernel.name + "' has no compile-time parameter '" + a.name + "'")
                    .note(kernel.name_range, "'" + kernel.name + "' is defined here");
                ok = false;
                continue;
            }
            if (!given.emplace(a.name, &a).second) {
                diags_.error(a.name_range, "compile-time parameter '" + a.name + "' is given twice");
                ok = false;
            }
        }
    }
    for (auto& p : kernel.template_params) {
        std::optional<Value> v;
        if (auto it = given.find(p.name); it != given.end()) {
            v = template_value(p, *it->second->value);
        } else if (auto d = std::find_if(options_.defines.rbegin(), options_.defines.rend(),
                                         [&](auto& kv) { return kv.first == p.name; });
                   d != options_.defines.rend()) {
            v = define_value(p, d->second);
        } else if (p.default_value) {
            v = template_value(p, *p.default_value);
        } else {
            auto d = diags_.error(export_range.valid() ? export_range : p.range,
                                  "no value for compile-time parameter '" + p.name + "' of '" + kernel.name +
                                      "', which has no default; give it in the export, e.g. export " + kernel.name +
                                      "<" + p.name + " = ...> as ...");
            if (export_range.valid()) d.note(p.range, "'" + p.name + "' is declared here");
        }
        if (!v) {
            ok = false;
            bind(p.name, p.range, Value::poison(), Origin::TemplateParam);
            continue;
        }
        bind(p.name, p.range, *v, Origin::TemplateParam);
        func.constants.emplace_back(p.name, value_text(*v));
    }
    return ok;
}

bool Elaborator::bind_params(const ast::KernelDecl& kernel, ir::PrimFunc& func) {
    std::vector<ir::Buffer> tensors;
    std::vector<ir::Var> sizes, scalars;
    bool ok = true;
    // A plain name in a dimension that is not yet bound introduces a run-time size.
    auto dim_expr = [&](const ast::Expr& d, const char* what) -> ir::Expr {
        if (d.kind == ast::ExprKind::Name && !lookup(d.text) && !DataType::from_name(d.text) &&
            !is_builtin_name(d.text) && !program_.funcs.count(d.text) && !program_.kernels.count(d.text)) {
            ir::Var v = ir::make_size_var(d.text, loc_of(d.range));
            bind(d.text, d.range, Value::of_expr(v), Origin::Size);
            sizes.push_back(v);
            return v;
        }
        // Names that are not bound yet cannot be used in an expression (only as a plain
        // dimension, which binds them).
        bool unbound = false;
        std::function<void(const ast::Expr&)> find_unbound = [&](const ast::Expr& x) {
            if (x.kind == ast::ExprKind::Name && !lookup(x.text) && x.text != "block" && !DataType::from_name(x.text) &&
                !is_builtin_name(x.text) && !program_.funcs.count(x.text)) {
                diags_.error(x.range, "size '" + x.text + "' is used in an expression before it is bound; a "
                                      "dimension may use only names bound by earlier dimensions (name it as a "
                                      "plain dimension first)");
                unbound = true;
                return;
            }
            for (auto& o : x.operands) find_unbound(*o);
            for (auto& a : x.args) find_unbound(*a.value);
        };
        find_unbound(d);
        if (unbound) return nullptr;
        Value v = eval(d);
        if (v.kind == K::Int) {
            if (v.i <= 0) {
                diags_.error(d.range, std::string(what) + " must be positive, but it is " + std::to_string(v.i));
                return nullptr;
            }
            return ir::make_int(v.i, DataType::index(), loc_of(d.range));
        }
        return index_of(v, d.range, what);
    };
    for (auto& p : kernel.params) {
        auto t = resolve_type(p.type.elem, p.type.elem_range);
        if (!p.type.has_dims) {
            if (p.access != ast::Access::In) {
                diags_.error(p.access_range, "scalar parameter '" + p.name + "' cannot be '" +
                                                 (p.access == ast::Access::Out ? "out" : "inout") +
                                                 "'; only tensors are written");
                ok = false;
            }
            if (!p.type.strides.empty()) {
                diags_.error(p.type.range, "strides(...) applies to tensors; '" + p.name + "' is a scalar");
                ok = false;
            }
            if (!t) {
                ok = false;
                bind(p.name, p.range, Value::poison(), Origin::ScalarParam);
                continue;
            }
            ir::Var v = ir::make_var(p.name, *t, ir::VarKind::Scalar, loc_of(p.range));
            if (bind(p.name, p.range, Value::of_expr(v), Origin::ScalarParam)) scalars.push_back(v);
            else ok = false;
            continue;
        }
        std::vector<ir::Expr> shape, strides;
        bool pok = t.has_value();
        for (auto& d : p.type.dims) {
            ir::Expr x = dim_expr(*d, "a tensor dimension");
            if (!x) pok = false;
            shape.push_back(x);
        }
        if (!p.type.strides.empty()) {
            if (p.type.strides.size() != p.type.dims.size()) {
                diags_.error(p.type.range, "strides(...) of '" + p.name + "' has " +
                                               std::to_string(p.type.strides.size()) + (p.type.strides.size() == 1 ? " entry" : " entries") +
                                               " but '" + p.name + "' has " + plural(p.type.dims.size(), "dimension"));
                pok = false;
            } else {
                for (auto& s : p.type.strides) {
                    ir::Expr x = dim_expr(*s, "a stride");
                    if (!x) pok = false;
                    strides.push_back(x);
                }
            }
        }
        if (!pok) {
            ok = false;
            bind(p.name, p.range, Value::poison(), Origin::Tensor);
            continue;
        }
        ir::Access access = p.access == ast::Access::Out     ? ir::Access::Out
                            : p.access == ast::Access::InOut ? ir::Access::InOut
                                                             : ir::Access::In;
        ir::Buffer b = ir::make_tensor(p.name, *t, shape, access, loc_of(p.range), strides);
        buffer_decl_[b.get()] = p.range;
        if (bind(p.name, p.range, Value::of_tile(b), Origin::Tensor)) tensors.push_back(b);
        else ok = false;
    }
    for (auto& b : tensors) func.params.push_back(ir::Param{ir::ParamKind::Tensor, b, nullptr});
    for (auto& v : sizes) func.params.push_back(ir::Param{ir::ParamKind::Size, nullptr, v});
    for (auto& v : scalars) func.params.push_back(ir::Param{ir::ParamKind::Scalar, nullptr, v});
    return ok;
}

// A bad launch clause poisons no name, so the body is still checked after it.
void Elaborator::bind_launch(const ast::KernelDecl& kernel, ir::PrimFunc& func) {
    bool ok = true;

    // Launch configuration.
    if (kernel.grid.size() > 3) {
        diags_.error(kernel.grid_range, "grid(...) takes 1 to 3 dimensions, but " +
                                            std::to_string(kernel.grid.size()) + " were given");
        ok = false;
    } else if (kernel.grid.empty()) {
        func.grid.push_back(ir::make_int(1));
    } else {
        for (auto& g : kernel.grid) {
            ir::Expr x = expect_index(*g, "a grid dimension");
            if (!x) {
                ok = false;
                continue;
            }
            if (auto c = ir::as_const_int(x); c && *c <= 0) {
                diags_.error(g->range, "grid dimensions must be positive, but this is " + std::to_string(*c));
                ok = false;
            }
            func.grid.push_back(x);
        }
    }
    func.threads = 128;
    if (kernel.threads) {
        auto c = expect_const_int(*kernel.threads, "threads(...)");
        if (!c) {
            ok = false;
        } else if (*c < 1 || *c > 1024) {
            diags_.error(kernel.threads->range, "threads(" + std::to_string(*c) +
                                                    ") is out of range: a block has 1 to 1024 threads");
            ok = false;
        } else {
            func.threads = *c;
        }
    }
    (void)ok;
}

std::optional<ir::PrimFunc> Elaborator::instantiate(const ast::KernelDecl& kernel, const std::string& symbol,
                                                    const std::vector<ast::ExportArg>* args,
                                                    SourceRange export_range) {
    unsigned before = diags_.error_count();
    ir::PrimFunc func;
    func.name = symbol;
    func.kernel = kernel.name;
    func.loc = loc_of(kernel.name_range);
    scopes_.clear();
    scope_floor_ = 0;
    written_.clear();
    attrs_.clear();
    block_idx_ = {};
    push_scope();  // compile-time parameters
    bool ok = bind_template_params(kernel, args, export_range, func);
    push_scope();  // run-time parameters
    if (ok) ok = bind_params(kernel, func);
    if (ok) bind_launch(kernel, func);
    if (ok) {
        block_idx_ = ir::make_block_idx_vars(loc_of(kernel.name_range));
        func.block_idx = block_idx_;
        push_scope();
        func.body = elab_block(kernel.body->body, 0);
        pop_scope();
        // After an error, a dropped statement may be the write; say nothing then.
        for (auto& p : func.params) {
            if (diags_.error_count() != before) break;
            if (p.kind == ir::ParamKind::Tensor && p.buffer->access != ir::Access::In && !written_.count(p.buffer.get()))
                diags_.warning(buffer_decl_.count(p.buffer.get()) ? buffer_decl_[p.buffer.get()] : SourceRange{},
                               "tensor '" + p.buffer->name + "' is marked '" + ir::access_name(p.buffer->access) +
                                   "' but kernel '" + kernel.name + "' never writes it");
        }
    }
    scopes_.clear();
    func.attrs = attrs_;
    if (diags_.error_count() != before) {
        if (export_range.valid())
            diags_.report(Diagnostic{Severity::Note, export_range,
                                     "while instantiating kernel '" + kernel.name + "' as '" + symbol + "'", {}});
        return std::nullopt;
    }
    if (!func.body) func.body = ir::make_seq({});
    return func;
}

}  // namespace

ir::Module elaborate(const Program& program, const FrontendOptions& options, const SourceManager& sources,
                     DiagnosticEngine& diags) {
    ir::Module module;
    Elaborator elab(program, options, diags);
    std::map<std::string, SourceRange> symbols;
    std::set<std::string> template_names;
    auto claim = [&](const std::string& symbol, SourceRange where) {
        auto [it, inserted] = symbols.emplace(symbol, where);
        if (!inserted) {
            diags.error(where, "duplicate export symbol '" + symbol + "'").note(it->second, "previously exported here");
            return false;
        }
        return true;
    };
    for (uint32_t id : program.input_files) {
        const ast::File* file = nullptr;
        for (auto& f : program.files)
            if (f->file_id == id) file = f.get();
        if (!file) continue;
        if (file->exports.empty()) {
            // A file without exports compiles each kernel whose parameters all have defaults.
            for (auto& k : file->kernels) {
                bool all_defaults = std::all_of(k->template_params.begin(), k->template_params.end(),
                                                [](const ast::TemplateParam& p) { return p.default_value != nullptr; });
                if (program.kernels.count(k->name) == 0 || program.kernels.at(k->name) != k.get()) continue;
                if (!all_defaults) {
                    auto p = std::find_if(k->template_params.begin(), k->template_params.end(),
                                          [](const ast::TemplateParam& t) { return !t.default_value; });
                    diags.warning(k->name_range, "kernel '" + k->name + "' is not compiled: compile-time parameter '" +
                                                     p->name + "' has no default and no export gives it");
                    continue;
                }
                for (auto& p : k->template_params) template_names.insert(p.name);
                if (!claim(k->name, k->name_range)) continue;
                if (auto f = elab.instantiate(*k, k->name, nullptr, {})) module.funcs.push_back(std::move(*f));
            }
            continue;
        }
        for (auto& e : file->exports) {
            auto it = program.kernels.find(e.kernel);
            if (it == program.kernels.end() && program.funcs.count(e.kernel)) {
                diags.error(e.kernel_range, "'" + e.kernel + "' is a func; only kernels can be exported")
                    .note(program.funcs.at(e.kernel)->name_range, "'" + e.kernel + "' is defined here");
                continue;
            }
            if (it == program.kernels.end()) {
                std::string best;
                size_t best_d = 3;
                for (auto& [n, k] : program.kernels) {
                    size_t d = edit_distance(e.kernel, n);
                    if (d < best_d) {
                        best = n;
                        best_d = d;
                    }
                }
                diags.error(e.kernel_range, "export of unknown kernel '" + e.kernel + "'" +
                                                (best.empty() ? "" : "; did you mean '" + best + "'?"));
                continue;
            }
            for (auto& p : it->second->template_params) template_names.insert(p.name);
            if (!claim(e.symbol, e.symbol_range)) continue;
            if (auto f = elab.instantiate(*it->second, e.symbol, &e.args, e.range)) module.funcs.push_back(std::move(*f));
        }
    }
    for (auto& [name, value] : options.defines)
        if (!template_names.count(name))
            diags.warning({}, "-D " + name + "=" + value + " matches no compile-time parameter of the compiled kernels");
    (void)sources;
    return module;
}

}  // namespace tilec::frontend
