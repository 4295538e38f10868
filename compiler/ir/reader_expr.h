// The reader's lower half (see reader.h): the token cursor, names bound by scope, types,
// expressions, regions and buffer declarations. The statement and function grammar in
// reader.cpp builds on it; the split keeps each file to one level of the grammar.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/reader_lexer.h"

namespace tilec::ir::reader {

// The value of an enum whose name function gives `text`, or nullopt.
template <typename E, size_t N, typename NameFn>
std::optional<E> enum_by_name(const E (&values)[N], NameFn name, std::string_view text) {
    for (E v : values)
        if (text == name(v)) return v;
    return std::nullopt;
}

inline constexpr Scope kScopes[] = {Scope::Global, Scope::Shared, Scope::Fragment, Scope::Local,
                                    Scope::Register};

// What a name stands for in a scope: a Var or a Buffer.
struct Binding {
    Var var;
    Buffer buffer;
};

// Reads expressions (and the pieces statements share) from the token list; errors throw
// SyntaxError at the offending token.
class ExprReader {
public:
    ExprReader(std::vector<Token> toks, std::string_view text, uint32_t file)
        : toks_(std::move(toks)), text_(text), file_(file) {}

protected:
    // ---- tokens -------------------------------------------------------------------
    const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    bool at_punct(std::string_view p, size_t k = 0) const {
        return peek(k).kind == TokKind::Punct && peek(k).text == p;
    }
    bool at_ident(std::string_view w, size_t k = 0) const {
        return peek(k).kind == TokKind::Ident && peek(k).text == w;
    }
    bool accept_punct(std::string_view p) {
        if (!at_punct(p)) return false;
        next();
        return true;
    }
    SourceLoc loc_of(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }

    static std::string describe(const Token& t);
    [[noreturn]] void fail(const Token& t, const std::string& msg) const {
        throw SyntaxError{t.line, t.col, msg};
    }
    [[noreturn]] void fail_expected(const std::string& what) const {
        fail(peek(), "expected " + what + ", found " + describe(peek()));
    }
    void expect_punct(std::string_view p, const char* context);
    void expect_ident(std::string_view w, const char* context);
    const Token& expect_name(const char* what);
    int64_t expect_int(const char* what);
    bool expect_bool(const char* what);
    // The source text from token `first` up to (not including) the current token.
    std::string raw_since(size_t first) const;
    // Skips tokens to the next `,` or one of `closers` at bracket depth 0.
    void skip_balanced(std::string_view closers);

    // ---- names --------------------------------------------------------------------
    void bind(const std::string& name, Binding b) { scopes_.back()[name] = std::move(b); }
    const Binding* lookup(const std::string& name) const {
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
            auto f = it->find(name);
            if (f != it->end()) return &f->second;
        }
        return nullptr;
    }
    Var lookup_var(const Token& t);
    Buffer lookup_buffer(const Token& t);

    // ---- types --------------------------------------------------------------------
    // "f16", "i32", "bool", "f16x8".
    DataType parse_type(const char* what);

    // ---- expressions --------------------------------------------------------------
    Expr parse_expr();

    std::optional<int> binary_prec() const;

    Expr parse_binary(int min_prec);

    static BinaryOp binary_op_of(const std::string& s, const Expr& lhs);

    Expr parse_unary();

    Expr parse_number(const Token& t, bool negative);

    // `open e, e, ... close`, possibly empty; the contexts word a missing bracket.
    std::vector<Expr> parse_expr_list(const char* open, const char* close, const char* open_context,
                                      const char* close_context);
    std::vector<Expr> parse_args(const char* context);

    // `[i, j]` (possibly empty: a rank-0 buffer).
    std::vector<Expr> parse_indices();

    Expr parse_primary();

    Expr parse_call();

    // ---- regions and buffers ------------------------------------------------------
    // `A` (the whole buffer) or `A[s0 : +e0, s1 : +e1]`.
    Region parse_region();

    // After "NAME:" and the scope/access: `f16[M, K] strides(lda, 1) @layout(x) at byte 0`.
    Buffer parse_buffer_type(const Token& name, Scope scope, Access access);

    std::pair<Scope, Access> parse_scope_access();

    std::vector<Token> toks_;
    std::string_view text_;
    uint32_t file_;
    size_t pos_ = 0;
    std::vector<std::unordered_map<std::string, Binding>> scopes_;
    std::unordered_map<std::string, Var> thread_vars_;  // thread.x ... made on first use
};

}  // namespace tilec::ir::reader
