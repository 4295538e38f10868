// The elaborator: instantiates one kernel with its compile-time values and walks its
// body once, checking names, types, shapes and scopes and building Tile IR as it goes.
// Private to the frontend; its members are defined by concern in elaborate.cpp (the
// entry, compile-time and run-time parameters), elab_names.cpp (scopes, did you mean),
// elab_types.cpp (types and conversions), elab_expr.cpp (expressions), elab_call.cpp
// (calls, built-ins, funcs inlined), elab_stmt.cpp (statements and declarations) and
// elab_tile_op.cpp (tile ops, whose checks live in compiler/ops).
#pragma once
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/builtins.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "ops/context.h"

namespace tilec::frontend {

// What a name or an expression stands for during elaboration.
struct Value {
    enum class Kind {
        Poison,  // an error was already reported; silences follow-on errors
        Int,     // compile-time integer (adapts its type to the other operand)
        Float,   // compile-time float literal (adapts likewise)
        Bool,    // compile-time bool
        Type,    // an element type
        Scalar,  // a run-time scalar: `expr` of type `expr->type`
        Tile,    // a buffer (global tensor, shared, fragment, local)
        MutVar,  // a `var`: a rank-0 local buffer
        String,
        Block,   // the built-in `block`
    };
    Kind kind = Kind::Poison;
    int64_t i = 0;
    double f = 0;
    bool b = false;
    ir::DataType type;  // Type
    ir::Expr expr;      // Scalar
    ir::Buffer buffer;  // Tile / MutVar
    std::string str;    // String

    static Value poison() { return {}; }
    static Value of_int(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
    static Value of_float(double v) { Value x; x.kind = Kind::Float; x.f = v; return x; }
    static Value of_bool(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
    static Value of_type(ir::DataType t) { Value x; x.kind = Kind::Type; x.type = t; return x; }
    static Value of_expr(ir::Expr e) { Value x; x.kind = Kind::Scalar; x.expr = std::move(e); return x; }
    static Value of_tile(ir::Buffer b) { Value x; x.kind = Kind::Tile; x.buffer = std::move(b); return x; }
    bool is_poison() const { return kind == Kind::Poison; }
    bool is_const() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    bool is_scalar_value() const { return is_const() || kind == Kind::Scalar; }
};

// How a name was bound: for messages such as "cannot assign to 'n': it is a let".
enum class Origin { TemplateParam, Size, ScalarParam, Tensor, Let, Var, Loop, Buffer, FuncParam };

struct Binding {
    Value value;
    Origin origin;
    SourceRange where;
};

inline SourceLoc loc_of(SourceRange r) { return r.begin; }

// Levenshtein distance, for "did you mean" suggestions (elab_names.cpp).
size_t edit_distance(const std::string& a, const std::string& b);

class Elaborator {
    using DataType = ir::DataType;

public:
    Elaborator(const Program& program, const FrontendOptions& options, DiagnosticEngine& diags)
        : program_(program), options_(options), diags_(diags) {}

    // Instantiates `kernel` with explicit values (from an export) and returns the
    // function, or nullopt after reporting errors (elaborate.cpp).
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

    // Binds `name` in the innermost scope; a redefinition or a built-in's or func's name
    // is reported (false), the latter bound to poison to silence later uses.
    bool bind(const std::string& name, SourceRange where, Value v, Origin origin);
    // The closest name in scope, built-in, func or type ("did you mean"), or "".
    std::string suggest(const std::string& name) const;
    void undeclared(const std::string& name, SourceRange where);

    // ---- types and conversions (elab_types.cpp), expressions (elab_expr.cpp) --------
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

    // ---- statements (elab_stmt.cpp) -------------------------------------------------
    ir::Stmt elab_block(const std::vector<ast::StmtPtr>& stmts, size_t from);
    ir::Stmt elab_stmt_scoped(const ast::Stmt& s);
    // Elaborates one statement that does not open a scope for the rest of the block.
    ir::Stmt elab_simple(const ast::Stmt& s);
    ir::Stmt elab_for(const ast::Stmt& s);
    ir::Stmt elab_if(const ast::Stmt& s);
    ir::Stmt elab_assign(const ast::Stmt& s);
    ir::Stmt elab_annotation(const ast::Stmt& s);
    ir::Buffer declare_buffer(const ast::Stmt& s);
    ir::Stmt elab_call_stmt(const ast::Expr& e);
    ir::Stmt elab_func_stmt(const ast::FuncDecl& f, const ast::Expr& e);
    // A tile op's call, elaborated by its home (compiler/ops) through TileOpCall
    // (elab_tile_op.cpp).
    ir::Stmt elab_tile_op(Builtin b, const ast::Expr& e);
    ops::TileOperand tile_arg(const ast::Expr& e, const char* op, const char* role);
    friend class TileOpCall;

    bool check_writable(const ir::Buffer& b, SourceRange where);
    void check_const_index(const ir::Buffer& b, const std::vector<ir::Expr>& idx,
                           const std::vector<SourceRange>& ranges);

    // ---- calls: arguments, built-ins, funcs inlined (elab_call.cpp) ----------------------
    // Named arguments of a call: positional ones fill `names` in order.
    struct CallArgs {
        std::vector<const ast::Expr*> values;  // by parameter position; null = absent
        bool ok = true;
    };
    CallArgs bind_args(const ast::Expr& call, const std::string& callee, const std::vector<std::string>& names,
                       size_t required);

    // ---- compile-time and run-time parameters, launch (elaborate.cpp) --------------------
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
    // Value funcs are pure (lets and a return over their parameters), so a call with the
    // same arguments (the same IR nodes, kept alive here so their addresses stay theirs)
    // gives the same result: inlined once and shared. h(x) = g(x) + g(x) nested 40 deep
    // was elaborated 2^40 times. Cleared per instantiation.
    struct InlinedCall {
        std::vector<Value> args;
        Value result;
    };
    std::map<std::string, InlinedCall> inlined_calls_;
    std::vector<ir::ForKind> loop_stack_;
    std::set<const ir::BufferNode*> written_;
    std::vector<std::pair<std::string, std::string>> attrs_;
    std::map<const ir::BufferNode*, std::string> layout_hints_;
    std::map<const ir::BufferNode*, SourceRange> buffer_decl_;
    int let_counter_ = 0;
    // Compile-time parameters whose -D value was checked already (an export that gives
    // the value does not use the -D one, but a bad -D value is still an error, once).
    std::set<const ast::TemplateParam*> defines_checked_;
};

}  // namespace tilec::frontend
