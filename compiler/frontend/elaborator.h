// The elaborator: instantiates one kernel with its compile-time values and walks its
// body once, checking names, types, shapes and scopes and building Tile IR as it goes.
// Private to the frontend (elaborate.cpp: declarations and statements; elab_expr.cpp:
// expressions and types).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/builtins.h"
#include "frontend/frontend.h"
#include "ir/ir.h"

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

}  // namespace tilec::frontend
