// The reader's expressions: precedence climbing over the printer's operator table (its
// parenthesisation is exact, so the tree comes back as it was), names bound by scope,
// and literals typed by their suffix.
#include "ir/reader_expr.h"

#include "ir/precedence.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tilec::ir::reader {

namespace {

// Binary operator precedences: the printer's (ir/precedence.h); select sits below kOr.
struct BinaryToken {
    std::string_view text;
    int prec;
};
constexpr BinaryToken kBinaryTokens[] = {
    {"||", kOr},
    {"&&", kAnd},
    {"|", kBitOr},
    {"^", kBitXor},
    {"&", kBitAnd},
    {"==", kEquality},
    {"!=", kEquality},
    {"<", kRelational},
    {"<=", kRelational},
    {">", kRelational},
    {">=", kRelational},
    {"<<", kShift},
    {">>", kShift},
    {"+", kAdditive},
    {"-", kAdditive},
    {"*", kMultiplicative},
    {"/", kMultiplicative},
    {"%", kMultiplicative},
};

constexpr CallOp kCallOps[] = {CallOp::Exp,     CallOp::Exp2,   CallOp::Log,      CallOp::Log2,
                               CallOp::Sqrt,    CallOp::Rsqrt,  CallOp::Tanh,     CallOp::Sigmoid,
                               CallOp::Abs,     CallOp::Floor,  CallOp::Ceil,     CallOp::Pow,
                               CallOp::ShflXor, CallOp::ShflUp, CallOp::ShflDown, CallOp::ShflIdx};
constexpr Access kAccesses[] = {Access::In, Access::Out, Access::InOut};

}  // namespace

std::string ExprReader::describe(const Token& t) {
    switch (t.kind) {
    case TokKind::End: return "end of input";
    case TokKind::String: return "a string";
    default: return "'" + t.text + t.suffix + "'";
    }
}

void ExprReader::expect_punct(std::string_view p, const char* context) {
    if (!accept_punct(p)) fail_expected("'" + std::string(p) + "' " + context);
}

void ExprReader::expect_ident(std::string_view w, const char* context) {
    if (!at_ident(w)) fail_expected("'" + std::string(w) + "' " + context);
    next();
}

const Token& ExprReader::expect_name(const char* what) {
    if (peek().kind != TokKind::Ident) fail_expected(what);
    return next();
}

int64_t ExprReader::expect_int(const char* what) {
    const Token& t = peek();
    bool neg = at_punct("-") && peek(1).kind == TokKind::Number;
    const Token& num = neg ? peek(1) : t;
    if (num.kind != TokKind::Number || !num.suffix.empty() ||
        num.text.find_first_of(".eE") != std::string::npos)
        fail_expected(what);
    int64_t v = 0;
    std::string s = (neg ? "-" : "") + num.text;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) fail(num, std::string(what) + " out of range: " + s);
    next();
    if (neg) next();
    return v;
}

bool ExprReader::expect_bool(const char* what) {
    if (at_ident("true") || at_ident("false")) return next().text == "true";
    fail_expected(std::string(what) + " (true or false)");
}

// The source text from token `first` up to (not including) the current token.
std::string ExprReader::raw_since(size_t first) const {
    size_t b = toks_[first].offset, e = toks_[pos_ - 1].end;
    return std::string(text_.substr(b, e - b));
}

// Skips tokens to the next `,` or one of `closers` at bracket depth 0.
void ExprReader::skip_balanced(std::string_view closers) {
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

Var ExprReader::lookup_var(const Token& t) {
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

Buffer ExprReader::lookup_buffer(const Token& t) {
    const Binding* b = lookup(t.text);
    if (!b) fail(t, "unknown buffer '" + t.text + "'");
    if (!b->buffer) fail(t, "'" + t.text + "' is a variable, not a buffer");
    return b->buffer;
}

// "f16", "i32", "bool", "f16x8".
DataType ExprReader::parse_type(const char* what) {
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

Expr ExprReader::parse_expr() {
    const Token& start = peek();
    Expr c = parse_binary(kOr);
    if (!accept_punct("?")) return c;
    Expr t = parse_binary(kOr);
    expect_punct(":", "in a select (c ? a : b)");
    Expr f = parse_expr();
    return make_select(c, t, f, loc_of(start));
}

std::optional<int> ExprReader::binary_prec() const {
    if (peek().kind != TokKind::Punct) return std::nullopt;
    for (const auto& b : kBinaryTokens)
        if (peek().text == b.text) return b.prec;
    return std::nullopt;
}

Expr ExprReader::parse_binary(int min_prec) {
    Expr lhs = parse_unary();
    for (;;) {
        auto prec = binary_prec();
        if (!prec || *prec < min_prec) return lhs;
        const Token& op_tok = next();
        Expr rhs = parse_binary(*prec + 1);
        lhs = make_binary(binary_op_of(op_tok.text, lhs), lhs, rhs, lhs->loc);
    }
}

BinaryOp ExprReader::binary_op_of(const std::string& s, const Expr& lhs) {
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

Expr ExprReader::parse_unary() {
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

Expr ExprReader::parse_number(const Token& t, bool negative) {
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

std::vector<Expr> ExprReader::parse_expr_list(const char* open, const char* close, const char* open_context,
                                              const char* close_context) {
    std::vector<Expr> out;
    expect_punct(open, open_context);
    if (!accept_punct(close)) {
        do out.push_back(parse_expr());
        while (accept_punct(","));
        expect_punct(close, close_context);
    }
    return out;
}

std::vector<Expr> ExprReader::parse_args(const char* context) { return parse_expr_list("(", ")", context, context); }

// `[i, j]` (possibly empty: a rank-0 buffer).
std::vector<Expr> ExprReader::parse_indices() { return parse_expr_list("[", "]", "before indices", "after indices"); }

Expr ExprReader::parse_primary() {
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

Expr ExprReader::parse_call() {
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

// `A` (the whole buffer) or `A[s0 : +e0, s1 : +e1]`.
Region ExprReader::parse_region() {
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
Buffer ExprReader::parse_buffer_type(const Token& name, Scope scope, Access access) {
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

std::pair<Scope, Access> ExprReader::parse_scope_access() {
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

}  // namespace tilec::ir::reader
