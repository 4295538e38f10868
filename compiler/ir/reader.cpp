// The reader's parser: a recursive descent over the printer's grammar (printer.cpp is
// the specification; each parse_* function mirrors the printer case that writes it), so
// that printed IR can be read back, passes run on it alone, and the text re-printed.
#include "ir/reader.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/reader_lexer.h"

namespace tilec::ir {

namespace {

using reader::SyntaxError;
using reader::Token;
using reader::TokKind;

// Binary operator precedences, as the printer's (loosest first); select sits below kOr.
enum Prec : int { kOr = 2, kAnd, kBitOr, kBitXor, kBitAnd, kEquality, kRelational, kShift, kAdditive, kMultiplicative };

struct BinaryToken {
    std::string_view text;
    int prec;
};
constexpr BinaryToken kBinaryTokens[] = {
    {"||", kOr},         {"&&", kAnd},        {"|", kBitOr},        {"^", kBitXor},       {"&", kBitAnd},
    {"==", kEquality},   {"!=", kEquality},   {"<", kRelational},   {"<=", kRelational},  {">", kRelational},
    {">=", kRelational}, {"<<", kShift},      {">>", kShift},       {"+", kAdditive},     {"-", kAdditive},
    {"*", kMultiplicative}, {"/", kMultiplicative}, {"%", kMultiplicative},
};

constexpr CallOp kCallOps[] = {CallOp::Exp,     CallOp::Exp2,   CallOp::Log,      CallOp::Log2,
                               CallOp::Sqrt,    CallOp::Rsqrt,  CallOp::Tanh,     CallOp::Sigmoid,
                               CallOp::Abs,     CallOp::Floor,  CallOp::Ceil,     CallOp::Pow,
                               CallOp::ShflXor, CallOp::ShflUp, CallOp::ShflDown, CallOp::ShflIdx};
constexpr Scope kScopes[] = {Scope::Global, Scope::Shared, Scope::Fragment, Scope::Local, Scope::Register};
constexpr Access kAccesses[] = {Access::In, Access::Out, Access::InOut};
constexpr ForKind kForKinds[] = {ForKind::Serial, ForKind::Unroll, ForKind::Parallel, ForKind::Pipelined};
constexpr ReduceKind kReduceKinds[] = {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::AbsMax};

template <typename E, size_t N, typename NameFn>
std::optional<E> enum_by_name(const E (&values)[N], NameFn name, std::string_view text) {
    for (E v : values)
        if (text == name(v)) return v;
    return std::nullopt;
}

// What a name stands for in a scope: a Var or a Buffer.
struct Binding {
    Var var;
    Buffer buffer;
};

class Parser {
public:
    Parser(std::vector<Token> toks, std::string_view text, uint32_t file)
        : toks_(std::move(toks)), text_(text), file_(file) {}

    Module parse_module() {
        Module m;
        while (peek().kind != TokKind::End) m.funcs.push_back(parse_func());
        return m;
    }

private:
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

    static std::string describe(const Token& t) {
        switch (t.kind) {
        case TokKind::End: return "end of input";
        case TokKind::String: return "a string";
        default: return "'" + t.text + t.suffix + "'";
        }
    }
    [[noreturn]] void fail(const Token& t, const std::string& msg) const { throw SyntaxError{t.line, t.col, msg}; }
    [[noreturn]] void fail_expected(const std::string& what) const {
        fail(peek(), "expected " + what + ", found " + describe(peek()));
    }
    void expect_punct(std::string_view p, const char* context) {
        if (!accept_punct(p)) fail_expected("'" + std::string(p) + "' " + context);
    }
    void expect_ident(std::string_view w, const char* context) {
        if (!at_ident(w)) fail_expected("'" + std::string(w) + "' " + context);
        next();
    }
    const Token& expect_name(const char* what) {
        if (peek().kind != TokKind::Ident) fail_expected(what);
        return next();
    }
    int64_t expect_int(const char* what) {
        const Token& t = peek();
        bool neg = at_punct("-") && peek(1).kind == TokKind::Number;
        const Token& num = neg ? peek(1) : t;
        if (num.kind != TokKind::Number || !num.suffix.empty() || num.text.find_first_of(".eE") != std::string::npos)
            fail_expected(what);
        int64_t v = 0;
        std::string s = (neg ? "-" : "") + num.text;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size()) fail(num, std::string(what) + " out of range: " + s);
        next();
        if (neg) next();
        return v;
    }
    bool expect_bool(const char* what) {
        if (at_ident("true") || at_ident("false")) return next().text == "true";
        fail_expected(std::string(what) + " (true or false)");
    }
    // The source text from token `first` up to (not including) the current token.
    std::string raw_since(size_t first) const {
        size_t b = toks_[first].offset, e = toks_[pos_ - 1].end;
        return std::string(text_.substr(b, e - b));
    }
    // Skips tokens to the next `,` or one of `closers` at bracket depth 0.
    void skip_balanced(std::string_view closers) {
        int depth = 0;
        for (;;) {
            const Token& t = peek();
            if (t.kind == TokKind::End) fail_expected("')'");
            if (t.kind == TokKind::Punct) {
                if (depth == 0 && (t.text == "," || closers.find(t.text) != std::string_view::npos)) return;
                if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
                if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
            }
            next();
        }
    }

    // ---- names --------------------------------------------------------------------
    void bind(const std::string& name, Binding b) { scopes_.back()[name] = std::move(b); }
    const Binding* lookup(const std::string& name) const {
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
            auto f = it->find(name);
            if (f != it->end()) return &f->second;
        }
        return nullptr;
    }
    Var lookup_var(const Token& t) {
        if (const Binding* b = lookup(t.text)) {
            if (!b->var) fail(t, "'" + t.text + "' is a buffer, not a variable (a load needs [indices])");
            return b->var;
        }
        // thread.x/y/z (and printer-disambiguated thread.x_1) are defined by the hardware.
        if (t.text.size() >= 8 && t.text.compare(0, 7, "thread.") == 0) {
            char d = t.text[7];
            if ((d == 'x' || d == 'y' || d == 'z') && (t.text.size() == 8 || t.text[8] == '_')) {
                auto& v = thread_vars_[t.text];
                if (!v) v = make_var(t.text, DataType::index(), VarKind::ThreadIdx, loc_of(t), d - 'x');
                return v;
            }
        }
        fail(t, "unknown name '" + t.text + "'");
    }
    Buffer lookup_buffer(const Token& t) {
        const Binding* b = lookup(t.text);
        if (!b) fail(t, "unknown buffer '" + t.text + "'");
        if (!b->buffer) fail(t, "'" + t.text + "' is a variable, not a buffer");
        return b->buffer;
    }

    // ---- types --------------------------------------------------------------------
    // "f16", "i32", "bool", "f16x8".
    DataType parse_type(const char* what) {
        const Token& t = peek();
        if (t.kind != TokKind::Ident) fail_expected(what);
        std::string name = t.text;
        int lanes = 1;
        auto x = name.rfind('x');
        if (x != std::string::npos && x > 0 && x + 1 < name.size() &&
            name.find_first_not_of("0123456789", x + 1) == std::string::npos) {
            lanes = std::atoi(name.c_str() + x + 1);
            name = name.substr(0, x);
        }
        auto dt = DataType::from_name(name);
        if (!dt || lanes < 1 || lanes > 65535) fail(t, "unknown type '" + t.text + "'");
        next();
        return dt->with_lanes(lanes);
    }

    // ---- expressions --------------------------------------------------------------
    Expr parse_expr() {
        const Token& start = peek();
        Expr c = parse_binary(kOr);
        if (!accept_punct("?")) return c;
        Expr t = parse_binary(kOr);
        expect_punct(":", "in a select (c ? a : b)");
        Expr f = parse_expr();
        return make_select(c, t, f, loc_of(start));
    }

    std::optional<int> binary_prec() const {
        if (peek().kind != TokKind::Punct) return std::nullopt;
        for (const auto& b : kBinaryTokens)
            if (peek().text == b.text) return b.prec;
        return std::nullopt;
    }

    Expr parse_binary(int min_prec) {
        Expr lhs = parse_unary();
        for (;;) {
            auto prec = binary_prec();
            if (!prec || *prec < min_prec) return lhs;
            const Token& op_tok = next();
            Expr rhs = parse_binary(*prec + 1);
            lhs = make_binary(binary_op_of(op_tok.text, lhs), lhs, rhs, lhs->loc);
        }
    }

    static BinaryOp binary_op_of(const std::string& s, const Expr& lhs) {
        if (s == "+") return BinaryOp::Add;
        if (s == "-") return BinaryOp::Sub;
        if (s == "*") return BinaryOp::Mul;
        if (s == "/") return lhs->type.is_float() ? BinaryOp::Div : BinaryOp::FloorDiv;
        if (s == "%") return BinaryOp::FloorMod;
        if (s == "==") return BinaryOp::EQ;
        if (s == "!=") return BinaryOp::NE;
        if (s == "<") return BinaryOp::LT;
        if (s == "<=") return BinaryOp::LE;
        if (s == ">") return BinaryOp::GT;
        if (s == ">=") return BinaryOp::GE;
        if (s == "&&") return BinaryOp::And;
        if (s == "||") return BinaryOp::Or;
        if (s == "&") return BinaryOp::BitAnd;
        if (s == "|") return BinaryOp::BitOr;
        if (s == "^") return BinaryOp::BitXor;
        if (s == "<<") return BinaryOp::Shl;
        return BinaryOp::Shr;
    }

    Expr parse_unary() {
        const Token& t = peek();
        if (at_punct("-")) {
            // "-3", "-1.5f16", "-inf": one negative literal (the printer writes the
            // negation of a literal as "-(3)").
            if (peek(1).kind == TokKind::Number) {
                next();
                return parse_number(next(), true);
            }
            if (at_ident("inf", 1)) {
                next();
                next();
                return make_float(-std::numeric_limits<double>::infinity(), DataType::f32(), loc_of(t));
            }
            next();
            return make_unary(UnaryOp::Neg, parse_unary(), loc_of(t));
        }
        if (accept_punct("!")) return make_unary(UnaryOp::Not, parse_unary(), loc_of(t));
        if (accept_punct("~")) return make_unary(UnaryOp::BitNot, parse_unary(), loc_of(t));
        return parse_primary();
    }

    Expr parse_number(const Token& t, bool negative) {
        std::string s = (negative ? "-" : "") + t.text;
        bool is_float = t.text.find_first_of(".eE") != std::string::npos;
        DataType type = is_float ? DataType::f32() : DataType::index();
        if (!t.suffix.empty()) {
            auto dt = DataType::from_name(t.suffix);
            if (!dt) fail(t, "unknown type suffix '" + t.suffix + "' on the literal " + t.text);
            type = *dt;
        }
        if (is_float) {
            if (!type.is_float()) fail(t, "float literal " + t.text + " with the non-float type " + type.str());
            double v = 0;
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (ec != std::errc() || p != s.data() + s.size()) fail(t, "bad float literal " + s);
            return make_float(v, type, loc_of(t));
        }
        if (!type.is_integer() && !type.is_bool())
            fail(t, "integer literal " + t.text + " with the non-integer type " + type.str());
        int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size()) fail(t, "integer literal out of range: " + s);
        return make_int(v, type, loc_of(t));
    }

    std::vector<Expr> parse_args(const char* context) {
        std::vector<Expr> args;
        expect_punct("(", context);
        if (!accept_punct(")")) {
            do args.push_back(parse_expr());
            while (accept_punct(","));
            expect_punct(")", context);
        }
        return args;
    }

    // `[i, j]` (possibly empty: a rank-0 buffer).
    std::vector<Expr> parse_indices() {
        std::vector<Expr> idx;
        expect_punct("[", "before indices");
        if (!accept_punct("]")) {
            do idx.push_back(parse_expr());
            while (accept_punct(","));
            expect_punct("]", "after indices");
        }
        return idx;
    }

    Expr parse_primary() {
        const Token& t = peek();
        SourceLoc loc = loc_of(t);
        switch (t.kind) {
        case TokKind::Number: return parse_number(next(), false);
        case TokKind::String: return make_string(next().text, loc);
        case TokKind::Punct:
            if (accept_punct("(")) {
                Expr e = parse_expr();
                expect_punct(")", "to close '('");
                return e;
            }
            fail_expected("an expression");
        case TokKind::End: fail_expected("an expression");
        case TokKind::Ident: break;
        }
        const std::string& w = t.text;
        if (w == "true" || w == "false") return make_bool(next().text == "true", loc);
        if (w == "inf" || w == "nan") {
            double v = next().text == "inf" ? std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN();
            return make_float(v, DataType::f32(), loc);
        }
        if (at_punct("(", 1) || (w == "cast" && at_punct("<", 1))) return parse_call();
        next();
        if (at_punct("[")) {
            Buffer b = lookup_buffer(t);
            auto idx = parse_indices();
            return make_load(b, std::move(idx), loc);
        }
        return lookup_var(t);
    }

    Expr parse_call() {
        const Token& t = next();
        SourceLoc loc = loc_of(t);
        const std::string& w = t.text;
        if (w == "cast") {
            expect_punct("<", "after cast");
            DataType type = parse_type("a type in cast<...>");
            expect_punct(">", "after the type of a cast");
            // The printer writes a non-f32 infinity or NaN constant as cast<T>(inf); a
            // real cast of such an f32 constant has its operand in parentheses.
            size_t lit = at_punct("-", 1) ? 2 : 1;
            if (type.is_float() && at_punct("(") && (at_ident("inf", lit) || at_ident("nan", lit)) &&
                at_punct(")", lit + 1)) {
                next();
                bool neg = lit == 2;
                if (neg) next();
                double v = next().text == "inf" ? std::numeric_limits<double>::infinity()
                                                : std::numeric_limits<double>::quiet_NaN();
                next();
                return make_float(neg ? -v : v, type, loc);
            }
            expect_punct("(", "after cast<T>");
            Expr v = parse_expr();
            expect_punct(")", "to close cast<T>(");
            return make_cast(type, v, loc);
        }
        std::vector<Expr> args = parse_args("in a call");
        auto two = [&](BinaryOp op) {
            if (args.size() != 2) fail(t, w + " takes 2 arguments, got " + std::to_string(args.size()));
            return make_binary(op, args[0], args[1], loc);
        };
        if (w == "min") return two(BinaryOp::Min);
        if (w == "max") return two(BinaryOp::Max);
        if (w == "fmod") return two(BinaryOp::Mod);
        auto op = enum_by_name(kCallOps, call_op_name, w);
        if (!op) fail(t, "unknown function '" + w + "'");
        if (args.empty()) fail(t, w + " without arguments");
        DataType type = args[0]->type;
        return make_call(*op, std::move(args), type, loc);
    }

    // ---- regions and buffers ------------------------------------------------------
    // `A` (the whole buffer) or `A[s0 : +e0, s1 : +e1]`.
    Region parse_region() {
        const Token& t = expect_name("a buffer or region");
        Buffer b = lookup_buffer(t);
        if (!accept_punct("[")) return full_region(b);
        std::vector<Expr> start, extent;
        if (!accept_punct("]")) {
            do {
                start.push_back(parse_expr());
                expect_punct(":", "in a region (start : +extent)");
                expect_punct("+", "in a region (start : +extent)");
                extent.push_back(parse_expr());
            } while (accept_punct(","));
            expect_punct("]", "to close a region");
        }
        return make_region(b, std::move(start), std::move(extent));
    }

    // After "NAME:" and the scope/access: `f16[M, K] strides(lda, 1) @layout(x) at byte 0`.
    Buffer parse_buffer_type(const Token& name, Scope scope, Access access) {
        BufferNode n;
        n.name = name.text;
        n.scope = scope;
        n.access = access;
        n.loc = loc_of(name);
        n.dtype = parse_type("an element type");
        n.shape = parse_indices();
        if (at_ident("strides")) {
            next();
            n.strides = parse_args("after strides");
        }
        if (accept_punct("@")) {
            expect_ident("layout", "after '@'");
            expect_punct("(", "after @layout");
            size_t first = pos_;
            skip_balanced(")");
            if (pos_ == first) fail_expected("a layout name");
            n.layout_hint = raw_since(first);
            expect_punct(")", "to close @layout(");
        }
        if (at_ident("at")) {
            next();
            expect_ident("byte", "after 'at'");
            n.shared_offset = expect_int("a byte offset");
        }
        return make_buffer(std::move(n));
    }

    std::pair<Scope, Access> parse_scope_access() {
        const Token& t = expect_name("a buffer scope (global, shared, fragment, local, register)");
        auto scope = enum_by_name(kScopes, scope_name, t.text);
        if (!scope) fail(t, "unknown buffer scope '" + t.text + "'");
        Access access = Access::InOut;
        if (*scope == Scope::Global) {
            const Token& a = expect_name("an access (in, out, inout)");
            auto acc = enum_by_name(kAccesses, access_name, a.text);
            if (!acc) fail(a, "unknown access '" + a.text + "' (in, out, inout)");
            access = *acc;
        }
        return {*scope, access};
    }

    // ---- statements ---------------------------------------------------------------
    // Statements up to the closing '}' (not consumed). A flat `let`/`alloc` takes the
    // rest of the block as its body.
    Stmt parse_block() {
        SourceLoc loc = loc_of(peek());
        std::vector<Stmt> stmts;
        while (!at_punct("}") && peek().kind != TokKind::End) {
            if ((at_ident("let") || at_ident("alloc")) && !at_punct("[", 1)) {
                bool flat = false;
                stmts.push_back(parse_scoped(&flat));
                if (flat) break;
                continue;
            }
            stmts.push_back(parse_stmt());
        }
        if (stmts.size() == 1) return stmts[0];
        return std::make_shared<SeqNode>(std::move(stmts), loc);
    }

    Stmt parse_braced_block(const char* context) {
        expect_punct("{", context);
        scopes_.emplace_back();
        Stmt body = parse_block();
        scopes_.pop_back();
        expect_punct("}", context);
        return body;
    }

    // `let x[: T] = v` / `alloc scope B: T[...]`: braced when '{' ends the line, else flat.
    Stmt parse_scoped(bool* flat) {
        const Token& kw = next();
        SourceLoc loc = loc_of(kw);
        Binding binding;
        Expr value;
        if (kw.text == "let") {
            const Token& name = expect_name("a variable name after let");
            DataType type = DataType::index();
            if (accept_punct(":")) type = parse_type("a type");
            expect_punct("=", "in let");
            value = parse_expr();  // the value cannot see the variable
            binding.var = make_let_var(name.text, type, loc_of(name));
        } else {
            auto [scope, access] = parse_scope_access();
            const Token& name = expect_name("a buffer name");
            expect_punct(":", "after the buffer name");
            binding.buffer = parse_buffer_type(name, scope, access);
        }
        *flat = !(at_punct("{") && peek().line == toks_[pos_ - 1].line);
        scopes_.emplace_back();
        bind(binding.var ? binding.var->name : binding.buffer->name, binding);
        Stmt body;
        if (*flat) {
            body = parse_block();
        } else {
            next();
            body = parse_block();
            expect_punct("}", "to close the let/alloc block");
        }
        scopes_.pop_back();
        if (binding.var) return make_let(binding.var, value, body, loc);
        return make_allocate(binding.buffer, body, loc);
    }

    Stmt parse_stmt() {
        const Token& t = peek();
        SourceLoc loc = loc_of(t);
        if (t.kind == TokKind::Punct && t.text == "{") {
            next();
            scopes_.emplace_back();
            Stmt inner = parse_block();
            scopes_.pop_back();
            expect_punct("}", "to close a '{' block");
            std::vector<Stmt> stmts;
            if (auto seq = stmt_as<SeqNode>(inner))
                stmts = seq->stmts;
            else
                stmts.push_back(inner);
            return std::make_shared<SeqNode>(std::move(stmts), loc);
        }
        if (t.kind != TokKind::Ident) fail_expected("a statement");
        const std::string& w = t.text;
        if (at_punct("[", 1)) {  // B[i, j] = v
            next();
            Buffer b = lookup_buffer(t);
            auto idx = parse_indices();
            expect_punct("=", "in a store (B[i] = value)");
            return make_store(b, std::move(idx), parse_expr(), loc);
        }
        if (w == "for") return parse_for();
        if (w == "if") {
            next();
            return parse_if_rest(loc);
        }
        if (w == "eval") {
            next();
            return make_evaluate(parse_expr(), loc);
        }
        if (w == "full_write") {
            next();
            Buffer b = lookup_buffer(expect_name("a buffer after full_write"));
            return make_full_write(b, parse_braced_block("around the full_write body"), loc);
        }
        if (w == "atomic_add" && peek(1).kind == TokKind::Ident) {  // thread level: atomic_add B[i], v
            next();
            Buffer b = lookup_buffer(next());
            auto idx = parse_indices();
            expect_punct(",", "between the element and the value of atomic_add");
            return make_atomic_rmw(AtomicOp::Add, b, std::move(idx), parse_expr(), loc);
        }
        if (at_punct("(", 1)) return parse_tile_op();
        fail(t, "expected a statement, found " + describe(t));
    }

    Stmt parse_for() {
        SourceLoc loc = loc_of(next());
        const Token& name = expect_name("a loop variable");
        DataType type = DataType::index();
        if (accept_punct(":")) type = parse_type("a loop variable type");
        expect_ident("in", "after the loop variable");
        const Token& k = expect_name("a loop kind (serial, unroll, parallel, pipelined)");
        auto kind = enum_by_name(kForKinds, for_kind_name, k.text);
        if (!kind) fail(k, "unknown loop kind '" + k.text + "' (serial, unroll, parallel, pipelined)");
        expect_punct("(", "after the loop kind");
        Expr min = parse_expr();
        expect_punct(",", "between the loop start and extent");
        Expr extent = parse_expr();
        int stages = 0;
        if (accept_punct(",")) {
            expect_ident("stages", "in a loop header");
            expect_punct("=", "after stages");
            int64_t st = expect_int("a stage count");
            if (st < 0 || st > 1000) fail(peek(), "stage count out of range");
            stages = static_cast<int>(st);
        }
        expect_punct(")", "to close the loop range");
        Var var = make_loop_var(name.text, loc_of(name), type);
        expect_punct("{", "before the loop body");
        scopes_.emplace_back();
        bind(name.text, Binding{var, nullptr});
        Stmt body = parse_block();
        scopes_.pop_back();
        expect_punct("}", "to close the loop body");
        return make_for(var, min, extent, *kind, body, loc, stages);
    }

    // After `if` (or `else if`): cond { ... } [else if ... | else { ... }]
    Stmt parse_if_rest(SourceLoc loc) {
        Expr cond = parse_expr();
        Stmt then_case = parse_braced_block("around the if body");
        Stmt else_case;
        if (at_ident("else")) {
            next();
            if (at_ident("if")) {
                SourceLoc l = loc_of(next());
                // The chain's one closing '}' ends its last arm.
                return make_if(cond, then_case, parse_if_rest(l), loc);
            }
            else_case = parse_braced_block("around the else body");
        }
        return make_if(cond, then_case, else_case, loc);
    }

    Stmt parse_tile_op() {
        const Token& t = next();
        SourceLoc loc = loc_of(t);
        const std::string& w = t.text;
        expect_punct("(", "after the op name");
        auto flag = [&](const char* name) {
            expect_punct(",", "before a flag");
            expect_ident(name, "(a flag)");
            expect_punct("=", "after a flag name");
        };
        Stmt s;
        if (w == "copy") {
            Region src = parse_region();
            expect_punct("->", "between source and destination");
            Region dst = parse_region();
            flag("pad");
            s = make_copy(src, dst, parse_expr(), loc);
        } else if (w == "gemm") {
            Region a = parse_region();
            expect_punct(",", "between gemm operands");
            Region b = parse_region();
            expect_punct(",", "between gemm operands");
            Region c = parse_region();
            flag("trans_a");
            bool ta = expect_bool("trans_a");
            flag("trans_b");
            bool tb = expect_bool("trans_b");
            flag("clear");
            bool cl = expect_bool("clear");
            s = make_gemm(a, b, c, ta, tb, cl, loc);
        } else if (w == "fill") {
            Region dst = parse_region();
            expect_punct(",", "between the region and the value of fill");
            s = make_fill(dst, parse_expr(), loc);
        } else if (w.rfind("reduce_", 0) == 0 || w == "cumsum") {
            std::optional<ReduceKind> kind;
            if (w != "cumsum") {
                kind = enum_by_name(kReduceKinds, reduce_kind_name, std::string_view(w).substr(7));
                if (!kind) fail(t, "unknown reduction '" + w + "' (reduce_sum, reduce_max, reduce_min, reduce_absmax)");
            }
            Region src = parse_region();
            expect_punct("->", "between source and destination");
            Region dst = parse_region();
            flag("dim");
            int64_t dim = expect_int("a dimension");
            if (dim < -1000 || dim > 1000) fail(peek(), "dimension out of range");
            flag(kind ? "clear" : "reverse");
            bool b = expect_bool(kind ? "clear" : "reverse");
            s = kind ? make_reduce(*kind, src, dst, static_cast<int>(dim), b, loc)
                     : make_cumsum(src, dst, static_cast<int>(dim), b, loc);
        } else if (w == "atomic_add") {
            Region src = parse_region();
            expect_punct("->", "between source and destination");
            s = make_atomic_add(parse_region(), src, loc);
        } else if (w == "print") {
            if (peek().kind != TokKind::String) fail_expected("a format string");
            std::string fmt = next().text;
            std::vector<Expr> args;
            while (accept_punct(",")) args.push_back(parse_expr());
            s = make_print(fmt, std::move(args), loc);
        } else if (w == "assert") {
            Expr cond = parse_expr();
            expect_punct(",", "between the condition and the message of assert");
            if (peek().kind != TokKind::String) fail_expected("a message string");
            s = make_assert(cond, next().text, loc);
        } else if (w == "barrier") {
            s = make_barrier(loc);
        } else {
            fail(t, "unknown statement '" + w + "'");
        }
        expect_punct(")", ("to close " + w + "(").c_str());
        return s;
    }

    // ---- functions ----------------------------------------------------------------
    // `k=v, ...` up to `close`, values kept as written (constants, attrs).
    std::vector<std::pair<std::string, std::string>> parse_raw_pairs(std::string_view close, const char* what) {
        std::vector<std::pair<std::string, std::string>> out;
        if (at_punct(close)) return out;
        do {
            std::string key = expect_name(what).text;
            expect_punct("=", "after the name");
            size_t first = pos_;
            skip_balanced(close);
            if (pos_ == first) fail_expected(std::string("a value for ") + key);
            out.emplace_back(key, raw_since(first));
        } while (accept_punct(","));
        return out;
    }

    // Sizes and scalars first, since tensor shapes and strides name them wherever they
    // stand in the list.
    void predeclare_params() {
        size_t save = pos_;
        while (!at_punct(")") && peek().kind != TokKind::End) {
            const Token& name = expect_name("a parameter name");
            expect_punct(":", "after the parameter name");
            if (at_ident("size")) {
                next();
                DataType type = parse_type("the type of a size");
                bind(name.text, Binding{make_var(name.text, type, VarKind::Size, loc_of(name)), nullptr});
            } else if (peek().kind == TokKind::Ident && !enum_by_name(kScopes, scope_name, peek().text)) {
                DataType type = parse_type("a parameter type");
                bind(name.text, Binding{make_var(name.text, type, VarKind::Scalar, loc_of(name)), nullptr});
            }
            skip_balanced(")");
            if (!accept_punct(",")) break;
        }
        pos_ = save;
    }

    std::vector<Param> parse_params() {
        expect_ident("params", "after the function header");
        expect_punct("(", "after params");
        predeclare_params();
        std::vector<Param> params;
        if (!accept_punct(")")) {
            do {
                const Token& name = expect_name("a parameter name");
                expect_punct(":", "after the parameter name");
                Param p;
                if (at_ident("size") || !enum_by_name(kScopes, scope_name, peek().text)) {
                    if (at_ident("size")) next();
                    parse_type("a parameter type");
                    const Binding* b = lookup(name.text);
                    if (!b || !b->var) fail(name, "malformed parameter '" + name.text + "'");
                    p.var = b->var;
                    p.kind = p.var->var_kind == VarKind::Size ? ParamKind::Size : ParamKind::Scalar;
                } else {
                    auto [scope, access] = parse_scope_access();
                    p.buffer = parse_buffer_type(name, scope, access);
                    bind(name.text, Binding{nullptr, p.buffer});
                }
                params.push_back(std::move(p));
            } while (accept_punct(","));
            expect_punct(")", "to close params(");
        }
        return params;
    }

    PrimFunc parse_func() {
        const Token& kw = peek();
        expect_ident("func", "to start a function");
        PrimFunc f;
        f.loc = loc_of(kw);
        f.name = expect_name("a function name").text;
        expect_punct("=", "after the function name");
        f.kernel = expect_name("a kernel name").text;
        if (accept_punct("<")) {
            f.constants = parse_raw_pairs(">", "a constant name");
            expect_punct(">", "to close the constants");
        }
        scopes_.clear();
        scopes_.emplace_back();
        thread_vars_.clear();
        f.block_idx = make_block_idx_vars(f.loc);
        for (const auto& v : f.block_idx) bind(v->name, Binding{v, nullptr});
        f.params = parse_params();
        expect_ident("grid", "after params(...)");
        f.grid = parse_args("after grid");
        expect_ident("threads", "after grid(...)");
        expect_punct("(", "after threads");
        f.threads = expect_int("a thread count");
        expect_punct(")", "to close threads(");
        if (at_ident("attrs")) {
            next();
            expect_punct("(", "after attrs");
            f.attrs = parse_raw_pairs(")", "an attribute name");
            expect_punct(")", "to close attrs(");
        }
        if (at_ident("level")) {
            next();
            expect_punct("(", "after level");
            const Token& l = expect_name("a level (tile or thread)");
            if (l.text == "thread")
                f.level = FuncLevel::Thread;
            else if (l.text != "tile")
                fail(l, "unknown level '" + l.text + "' (tile or thread)");
            expect_punct(")", "to close level(");
            if (at_ident("shared")) {
                next();
                expect_punct("(", "after shared");
                f.shared_bytes = expect_int("a byte count");
                expect_ident("bytes", "after the shared byte count");
                expect_punct(",", "in shared(N bytes, static|dynamic)");
                const Token& k = expect_name("static or dynamic");
                if (k.text != "static" && k.text != "dynamic") fail(k, "expected static or dynamic");
                f.dynamic_shared = k.text == "dynamic";
                expect_punct(")", "to close shared(");
            }
        }
        f.body = parse_braced_block("around the function body");
        return f;
    }

    std::vector<Token> toks_;
    std::string_view text_;
    uint32_t file_;
    size_t pos_ = 0;
    std::vector<std::unordered_map<std::string, Binding>> scopes_;
    std::unordered_map<std::string, Var> thread_vars_;
};

}  // namespace

std::optional<Module> parse_module(std::string_view text, uint32_t file, DiagnosticEngine& diag) {
    try {
        Parser p(reader::tokenize(text), text, file);
        return p.parse_module();
    } catch (const SyntaxError& e) {
        diag.error(SourceRange(SourceLoc{file, e.line, e.col}), e.message);
        return std::nullopt;
    }
}

}  // namespace tilec::ir
