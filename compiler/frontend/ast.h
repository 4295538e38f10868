// The syntax tree of a .tile file, as the author wrote it (no types, no folding).
// Built from ANTLR's parse tree by parser.cpp; nothing here depends on ANTLR.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/source.h"

namespace tilec::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

enum class ExprKind { Int, Float, Bool, Inf, String, Name, Unary, Binary, Ternary, Index, Call, Member, Cast };
enum class UnaryOp { Neg, Plus, Not, BitNot };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Shl, Shr, Lt, Le, Gt, Ge, Eq, Ne, BitAnd, BitXor, BitOr, And, Or };

const char* to_string(UnaryOp op);
const char* to_string(BinaryOp op);

// A named or positional argument of a call, a loop or an annotation.
struct Arg {
    std::string name;  // empty when positional
    SourceRange name_range;
    ExprPtr value;
};

// `T[M, K] strides(lda, 1)`, or just `f32` for a scalar.
struct TypeSpec {
    std::string elem;
    SourceRange elem_range;
    bool has_dims = false;
    std::vector<ExprPtr> dims;
    std::vector<ExprPtr> strides;  // empty: row-major
    SourceRange range;
};

struct Expr {
    ExprKind kind;
    SourceRange range;
    int64_t int_value = 0;
    double float_value = 0;
    bool bool_value = false;
    bool int_overflow = false;  // an integer literal too large for i64
    std::string text;           // Name: the name; String: the decoded text; Member: the member; Float: spelling
    UnaryOp unary_op = UnaryOp::Neg;
    BinaryOp binary_op = BinaryOp::Add;
    SourceRange op_range;       // the operator token (binary/unary)
    // Unary [x]; Binary [a, b]; Ternary [cond, then, else]; Index [base, i0, i1...];
    // Call [callee]; Member [base]; Cast [value].
    std::vector<ExprPtr> operands;
    std::vector<Arg> args;      // Call only
    std::unique_ptr<TypeSpec> cast_type;  // Cast only

    explicit Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
};

enum class StmtKind { Block, Let, Var, Buffer, For, If, Return, Break, Continue, Annotation, Assign, Expr, Empty };
enum class BufferScope { Shared, Fragment, Local };

struct LoopVar {
    std::string name;
    SourceRange range;
};

struct Stmt {
    StmtKind kind;
    SourceRange range;
    std::string name;               // Let/Var/Buffer name; Annotation name; For: the loop kind (range, parallel...)
    SourceRange name_range;
    std::unique_ptr<TypeSpec> type; // Let (optional)/Var/Buffer
    BufferScope scope = BufferScope::Shared;
    ExprPtr value;                  // Let/Var init/Return/Expr/Assign value; If condition
    ExprPtr target;                 // Assign target
    std::string assign_op;          // "=", "+=", ...
    SourceRange op_range;
    std::vector<LoopVar> loop_vars; // For
    std::vector<Arg> args;          // For loop arguments; Annotation arguments
    std::vector<StmtPtr> body;      // Block statements
    StmtPtr then_branch;            // For body; If then (a Block)
    StmtPtr else_branch;            // If else (Block or If), may be null

    explicit Stmt(StmtKind k, SourceRange r) : kind(k), range(r) {}
};

enum class TemplateKind { Int, Bool, Type };

struct TemplateParam {
    std::string name;
    SourceRange range;
    TemplateKind kind = TemplateKind::Int;
    ExprPtr default_value;  // may be null
};

enum class Access { In, Out, InOut };

struct Param {
    std::string name;
    SourceRange range;
    Access access = Access::In;
    SourceRange access_range;
    TypeSpec type;
};

struct KernelDecl {
    std::string name;
    SourceRange name_range;
    SourceRange range;
    std::vector<TemplateParam> template_params;
    std::vector<Param> params;
    std::vector<ExprPtr> grid;
    SourceRange grid_range;
    ExprPtr threads;
    SourceRange threads_range;
    StmtPtr body;
};

struct FuncParam {
    std::string name;
    SourceRange range;
    std::unique_ptr<TypeSpec> type;  // optional
};

struct FuncDecl {
    std::string name;
    SourceRange name_range;
    std::vector<FuncParam> params;
    StmtPtr body;
};

struct ExportArg {
    std::string name;
    SourceRange name_range;
    ExprPtr value;
};

struct ExportDecl {
    std::string kernel;
    SourceRange kernel_range;
    std::vector<ExportArg> args;
    std::string symbol;
    SourceRange symbol_range;
    SourceRange range;
};

struct ImportDecl {
    std::string path;
    SourceRange range;
};

struct File {
    uint32_t file_id = 0;
    std::vector<ImportDecl> imports;
    std::vector<std::unique_ptr<KernelDecl>> kernels;
    std::vector<std::unique_ptr<FuncDecl>> funcs;
    std::vector<ExportDecl> exports;
};

// Prints the tree in an indented, stable form (`tilec --emit=ast`).
std::string print(const File& file);
std::string print(const Expr& e);

}  // namespace tilec::ast
