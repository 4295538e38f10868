// Drives the ANTLR-generated parser and converts its tree into ast::File.
// Syntax errors go through a custom error strategy that words them for people.
#include "frontend/parser.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "TileLexer.h"
#include "TileParser.h"
#include "antlr4-runtime.h"

namespace tilec::frontend {
namespace {

using antlr4::ParserRuleContext;
using antlr4::Token;
using tile::TileLexer;
using tile::TileParser;

constexpr int kMaxNesting = 96;
// Binary and conditional operators in one statement. A chain `a + b + ...` is a tree as
// deep as it is long, and every stage after the parser walks trees recursively: a
// million terms overflowed the stack. Far above what a kernel writes by hand.
constexpr int kMaxOperatorsPerStatement = 4096;

SourceRange token_range(uint32_t file, const Token* t) {
    if (!t) return {};
    SourceLoc b{file, static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
    SourceLoc e = b;
    if (t->getType() != Token::EOF) {
        std::string text = t->getText();
        if (!text.empty() && text.find('\n') == std::string::npos) e.col = b.col + static_cast<uint32_t>(text.size()) - 1;
    }
    return {b, e};
}

// The position just after a token: where a missing ';' or ')' belongs.
SourceRange after_token(uint32_t file, const Token* t) {
    SourceRange r = token_range(file, t);
    r.begin = r.end;
    r.begin.col += 1;
    r.end = r.begin;
    return r;
}

bool is_keyword_text(const std::string& s) {
    return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
}

// Words the parser's expected-token set as a person would.
class HumanErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
    HumanErrorStrategy(uint32_t file, DiagnosticEngine& diags) : file_(file), diags_(diags) {}
    unsigned errors = 0;

protected:
    // ANTLR's loop-entry resync reports a stray token at the start of the next line when
    // a ';' is missing after a call; without it the error surfaces at the failed match,
    // where reportMissingToken words it as "expected ';' after statement".
    void sync(antlr4::Parser*) override {}

    void reportNoViableAlternative(antlr4::Parser* p, const antlr4::NoViableAltException& e) override {
        Token* t = e.getOffendingToken();
        report(p, t, unexpected(t) + expected_suffix(p, p->getExpectedTokens()));
    }
    void reportInputMismatch(antlr4::Parser* p, const antlr4::InputMismatchException& e) override {
        Token* t = e.getOffendingToken();
        report(p, t, unexpected(t) + expected_suffix(p, e.getExpectedTokens()));
    }
    void reportFailedPredicate(antlr4::Parser* p, const antlr4::FailedPredicateException& e) override {
        report(p, e.getOffendingToken(), unexpected(e.getOffendingToken()));
    }
    void reportUnwantedToken(antlr4::Parser* p) override {
        if (inErrorRecoveryMode(p)) return;
        beginErrorCondition(p);
        Token* t = p->getCurrentToken();
        report(p, t, unexpected(t) + expected_suffix(p, getExpectedTokens(p)));
    }
    void reportMissingToken(antlr4::Parser* p) override {
        if (inErrorRecoveryMode(p)) return;
        beginErrorCondition(p);
        Token* t = p->getCurrentToken();
        antlr4::misc::IntervalSet expecting = getExpectedTokens(p);
        std::string what = describe(p, expecting);
        std::string msg = "expected " + what;
        if (expecting.size() == 1 && p->getVocabulary().getLiteralName(expecting.getSingleElement()) == "';'")
            msg += after_what(p);
        // Point just after the previous token when the next one is on a later line,
        // as clang does for a forgotten ';'.
        Token* prev = previous_token(p);
        if (t && t->getType() == Token::EOF && unmatched_brace(p)) {
            report(p, t, msg);
        } else if (prev && t && (t->getLine() != prev->getLine() || t->getType() == Token::EOF)) {
            emit(after_token(file_, prev), msg);
        } else {
            emit(token_range(file_, t), msg + " before " + display(t));
        }
    }

private:
    Token* previous_token(antlr4::Parser* p) {
        auto* stream = dynamic_cast<antlr4::BufferedTokenStream*>(p->getTokenStream());
        if (!stream) return nullptr;
        size_t idx = stream->index();
        if (idx == 0) return nullptr;
        return stream->get(idx - 1);
    }

    std::string after_what(antlr4::Parser* p) {
        auto* ctx = p->getContext();
        while (ctx) {
            size_t rule = ctx->getRuleIndex();
            if (rule == TileParser::RuleImportDecl) return " after import";
            if (rule == TileParser::RuleExportDecl) return " after export";
            if (rule == TileParser::RuleStmt) return " after statement";
            ctx = dynamic_cast<ParserRuleContext*>(ctx->parent);
        }
        return "";
    }

    std::string display(Token* t) {
        if (!t || t->getType() == Token::EOF) return "end of file";
        return "'" + t->getText() + "'";
    }

    std::string unexpected(Token* t) {
        if (!t || t->getType() == Token::EOF) return "unexpected end of file";
        if (t->getType() == TileLexer::UNTERMINATED_STRING) return "missing terminating '\"' character";
        if (t->getType() == TileLexer::UNKNOWN_CHAR) {
            return "invalid character '" + t->getText() + "'";
        }
        std::string text = t->getText();
        if (t->getType() != TileLexer::ID && is_keyword_text(text))
            return "unexpected keyword '" + text + "'";
        return "unexpected " + display(t);
    }

    std::string expected_suffix(antlr4::Parser* p, const antlr4::misc::IntervalSet& set) {
        std::string what = describe(p, set);
        return what.empty() ? "" : "; expected " + what;
    }

    bool in_rule(antlr4::Parser* p, size_t rule) {
        auto* ctx = p->getContext();
        for (int depth = 0; ctx && depth < 3; ++depth) {
            if (ctx->getRuleIndex() == rule) return true;
            ctx = dynamic_cast<ParserRuleContext*>(ctx->parent);
        }
        return false;
    }

    std::string token_name(antlr4::Parser* p, size_t type) {
        if (type == Token::EOF) return "end of file";
        if (type == TileLexer::ID) return "a name";
        if (type == TileLexer::INT) return "an integer";
        if (type == TileLexer::FLOAT) return "a number";
        if (type == TileLexer::STRING) return "a string";
        std::string lit = p->getVocabulary().getLiteralName(type);
        return lit.empty() ? p->getVocabulary().getDisplayName(type) : lit;
    }

    std::string describe(antlr4::Parser* p, const antlr4::misc::IntervalSet& set) {
        std::vector<size_t> types;
        for (ssize_t t : set.toList()) types.push_back(static_cast<size_t>(t));
        bool starts_expr = set.contains(static_cast<size_t>(TileLexer::INT)) && set.contains(static_cast<size_t>(TileLexer::ID));
        size_t rule = p->getContext() ? p->getContext()->getRuleIndex() : 0;
        if (rule == TileParser::RuleFile || rule == TileParser::RuleTopDecl)
            return "'kernel', 'func', 'export' or 'import'";
        if (starts_expr && (rule == TileParser::RuleBlock || rule == TileParser::RuleStmt))
            return "a statement";
        if (starts_expr) return "an expression";
        if (types.size() > 5) return "";
        std::string out;
        for (size_t i = 0; i < types.size(); ++i) {
            if (i > 0) out += (i + 1 == types.size()) ? " or " : ", ";
            out += token_name(p, types[i]);
        }
        return out;
    }

    void report(antlr4::Parser* p, Token* t, std::string msg) {
        if (t && (t->getType() == TileLexer::UNKNOWN_CHAR || t->getType() == TileLexer::UNTERMINATED_STRING)) {
            emit(token_range(file_, t), unexpected(t));
            return;
        }
        if (!t || t->getType() == Token::EOF) {
            // At the end of the file, point just after the last token, and name the
            // bracket that is still open.
            Token* last = last_real_token(p);
            SourceRange where = last ? after_token(file_, last) : token_range(file_, t);
            if (Token* open = unmatched_brace(p)) {
                std::string close = open->getText() == "{" ? "}" : open->getText() == "(" ? ")" : "]";
                if (!seen_.insert({where.begin.line, where.begin.col}).second) return;
                if (errors > 0) return;  // an earlier mistake unbalanced the braces
                ++errors;
                diags_.error(where, "expected '" + close + "' at end of file")
                    .note(token_range(file_, open), "to match this '" + open->getText() + "'");
                return;
            }
            emit(where, msg);
            return;
        }
        emit(token_range(file_, t), msg);
    }

    Token* last_real_token(antlr4::Parser* p) {
        auto* stream = dynamic_cast<antlr4::BufferedTokenStream*>(p->getTokenStream());
        if (!stream) return nullptr;
        Token* last = nullptr;
        for (Token* t : stream->getTokens())
            if (t->getType() != Token::EOF && t->getChannel() == Token::DEFAULT_CHANNEL) last = t;
        return last;
    }

    Token* unmatched_brace(antlr4::Parser* p) {
        auto* stream = dynamic_cast<antlr4::BufferedTokenStream*>(p->getTokenStream());
        if (!stream) return nullptr;
        std::vector<Token*> open;
        for (Token* t : stream->getTokens()) {
            std::string s = t->getText();
            if (t->getType() == Token::EOF) break;
            if (s == "{" || s == "(" || s == "[") open.push_back(t);
            else if ((s == "}" || s == ")" || s == "]") && !open.empty()) open.pop_back();
        }
        return open.empty() ? nullptr : open.back();
    }

    void emit(SourceRange r, const std::string& msg) {
        // ANTLR may report the same spot twice while recovering; say it once. Recovery
        // from one mistake often trips again later on the same line, or on a closing
        // brace the recovery mismatched: those follow-on errors are not reported.
        auto key = std::make_pair(r.begin.line, r.begin.col);
        if (!seen_.insert(key).second) return;
        if (errors > 0 && (lines_.count(r.begin.line) || msg.find("'}'") != std::string::npos)) return;
        lines_.insert(r.begin.line);
        ++errors;
        diags_.error(r, msg);
    }

    uint32_t file_;
    DiagnosticEngine& diags_;
    std::set<std::pair<uint32_t, uint32_t>> seen_;
    std::set<uint32_t> lines_;
};

// Converts the ANTLR parse tree to the AST. Only called on trees without syntax errors.
class AstBuilder {
public:
    AstBuilder(uint32_t file, DiagnosticEngine& diags) : file_(file), diags_(diags) {}

    std::unique_ptr<ast::File> build(TileParser::FileContext* ctx) {
        auto f = std::make_unique<ast::File>();
        f->file_id = file_;
        for (auto* d : ctx->topDecl()) {
            if (auto* i = d->importDecl()) {
                f->imports.push_back({decode_string(i->STRING()->getSymbol()), range(i)});
            } else if (auto* k = d->kernelDecl()) {
                f->kernels.push_back(kernel(k));
            } else if (auto* fn = d->funcDecl()) {
                f->funcs.push_back(func(fn));
            } else if (auto* e = d->exportDecl()) {
                f->exports.push_back(export_decl(e));
            }
        }
        return f;
    }

private:
    SourceRange range(ParserRuleContext* ctx) {
        Token* a = ctx->getStart();
        Token* b = ctx->getStop();
        SourceRange r = token_range(file_, a);
        if (b && b->getTokenIndex() >= a->getTokenIndex()) {
            SourceRange rb = token_range(file_, b);
            r.end = rb.end;
        }
        return r;
    }
    SourceRange trange(Token* t) { return token_range(file_, t); }

    std::string decode_string(Token* t) {
        std::string raw = t->getText();
        std::string out;
        for (size_t i = 1; i + 1 < raw.size(); ++i) {
            char c = raw[i];
            if (c == '\\' && i + 2 < raw.size()) {
                char n = raw[++i];
                switch (n) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case '0': out += '\0'; break;
                default: out += n; break;
                }
            } else {
                out += c;
            }
        }
        return out;
    }

    std::unique_ptr<ast::KernelDecl> kernel(TileParser::KernelDeclContext* ctx) {
        auto k = std::make_unique<ast::KernelDecl>();
        k->name = ctx->name->getText();
        k->name_range = trange(ctx->name);
        k->range = range(ctx);
        if (auto* tp = ctx->templateParams()) {
            for (auto* p : tp->templateParam()) {
                ast::TemplateParam t;
                t.name = p->name->getText();
                t.range = trange(p->name);
                std::string kind = p->kind->getText();
                if (kind == "int") t.kind = ast::TemplateKind::Int;
                else if (kind == "bool") t.kind = ast::TemplateKind::Bool;
                else if (kind == "type") t.kind = ast::TemplateKind::Type;
                else diags_.error(trange(p->kind), "unknown compile-time parameter kind '" + kind +
                                                       "'; expected 'int', 'bool' or 'type'");
                if (auto* v = p->templateValue()) t.default_value = expr(v->unaryExpr());
                k->template_params.push_back(std::move(t));
            }
        }
        if (auto* pl = ctx->paramList()) {
            for (auto* p : pl->param()) {
                ast::Param q;
                q.name = p->name->getText();
                q.range = trange(p->name);
                if (p->access) {
                    q.access = p->access->getText() == "out" ? ast::Access::Out : ast::Access::InOut;
                    q.access_range = trange(p->access);
                }
                q.type = std::move(*type_spec(p->typeSpec()));
                k->params.push_back(std::move(q));
            }
        }
        for (auto* lc : ctx->launchClause()) {
            if (auto* g = dynamic_cast<TileParser::GridClauseContext*>(lc)) {
                if (k->grid_range.valid()) {
                    diags_.error(range(g), "kernel '" + k->name + "' has more than one grid(...) clause")
                        .note(k->grid_range, "previous grid(...) is here");
                    continue;
                }
                k->grid_range = range(g);
                for (auto* e : g->exprList()->expr()) k->grid.push_back(expr(e));
            } else if (auto* t = dynamic_cast<TileParser::ThreadsClauseContext*>(lc)) {
                if (k->threads) {
                    diags_.error(range(t), "kernel '" + k->name + "' has more than one threads(...) clause")
                        .note(k->threads_range, "previous threads(...) is here");
                    continue;
                }
                k->threads_range = range(t);
                k->threads = expr(t->expr());
            }
        }
        k->body = block(ctx->block());
        return k;
    }

    std::unique_ptr<ast::FuncDecl> func(TileParser::FuncDeclContext* ctx) {
        auto f = std::make_unique<ast::FuncDecl>();
        f->name = ctx->name->getText();
        f->name_range = trange(ctx->name);
        if (auto* pl = ctx->funcParamList()) {
            for (auto* p : pl->funcParam()) {
                ast::FuncParam q;
                q.name = p->name->getText();
                q.range = trange(p->name);
                if (auto* ts = p->typeSpec()) q.type = type_spec(ts);
                f->params.push_back(std::move(q));
            }
        }
        f->body = block(ctx->block());
        return f;
    }

    ast::ExportDecl export_decl(TileParser::ExportDeclContext* ctx) {
        ast::ExportDecl e;
        e.kernel = ctx->kernel->getText();
        e.kernel_range = trange(ctx->kernel);
        e.symbol = ctx->symbol->getText();
        e.symbol_range = trange(ctx->symbol);
        e.range = range(ctx);
        for (auto* a : ctx->exportArg()) {
            ast::ExportArg arg;
            arg.name = a->name->getText();
            arg.name_range = trange(a->name);
            arg.value = expr(a->templateValue()->unaryExpr());
            e.args.push_back(std::move(arg));
        }
        return e;
    }

    std::unique_ptr<ast::TypeSpec> type_spec(TileParser::TypeSpecContext* ctx) {
        auto t = std::make_unique<ast::TypeSpec>();
        t->elem = ctx->elem->getText();
        t->elem_range = trange(ctx->elem);
        t->range = range(ctx);
        if (auto* dims = ctx->exprList()) {
            t->has_dims = true;
            for (auto* e : dims->expr()) t->dims.push_back(expr(e));
        } else if (ctx->children.size() > 1) {
            // `T[]`: brackets with no dims; the grammar requires dims, so unreachable.
            t->has_dims = true;
        }
        if (auto* s = ctx->stridesSpec())
            for (auto* e : s->exprList()->expr()) t->strides.push_back(expr(e));
        return t;
    }

    ast::StmtPtr block(TileParser::BlockContext* ctx) {
        auto s = std::make_unique<ast::Stmt>(ast::StmtKind::Block, range(ctx));
        for (auto* st : ctx->stmt()) s->body.push_back(stmt(st));
        return s;
    }

    void args(TileParser::ArgListContext* ctx, std::vector<ast::Arg>& out) {
        if (!ctx) return;
        for (auto* a : ctx->arg()) {
            ast::Arg arg;
            if (a->name) {
                arg.name = a->name->getText();
                arg.name_range = trange(a->name);
            }
            arg.value = expr(a->expr());
            out.push_back(std::move(arg));
        }
    }

    ast::StmtPtr stmt(TileParser::StmtContext* ctx) {
        SourceRange r = range(ctx);
        using K = ast::StmtKind;
        if (auto* c = dynamic_cast<TileParser::BlockStmtContext*>(ctx)) return block(c->block());
        if (auto* c = dynamic_cast<TileParser::LetStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::Let, r);
            s->name = c->name->getText();
            s->name_range = trange(c->name);
            if (auto* ts = c->typeSpec()) s->type = type_spec(ts);
            s->value = expr(c->expr());
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::VarStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::Var, r);
            s->name = c->name->getText();
            s->name_range = trange(c->name);
            s->type = type_spec(c->typeSpec());
            if (auto* e = c->expr()) s->value = expr(e);
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::BufferStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::Buffer, r);
            std::string scope = c->scope->getText();
            s->scope = scope == "shared" ? ast::BufferScope::Shared
                       : scope == "fragment" ? ast::BufferScope::Fragment
                                             : ast::BufferScope::Local;
            s->name = c->name->getText();
            s->name_range = trange(c->name);
            s->type = type_spec(c->typeSpec());
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::ForStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::For, r);
            for (auto* id : c->ID()) {
                if (id->getSymbol() == c->loop) continue;
                s->loop_vars.push_back({id->getText(), trange(id->getSymbol())});
            }
            s->name = c->loop->getText();
            s->name_range = trange(c->loop);
            args(c->argList(), s->args);
            s->then_branch = block(c->block());
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::IfStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::If, r);
            s->value = expr(c->expr());
            s->then_branch = block(c->block());
            if (c->ifElse) s->else_branch = stmt(c->ifElse);
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::ReturnStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::Return, r);
            if (auto* e = c->expr()) s->value = expr(e);
            return s;
        }
        if (dynamic_cast<TileParser::BreakStmtContext*>(ctx)) return std::make_unique<ast::Stmt>(K::Break, r);
        if (dynamic_cast<TileParser::ContinueStmtContext*>(ctx)) return std::make_unique<ast::Stmt>(K::Continue, r);
        if (auto* c = dynamic_cast<TileParser::AnnotationStmtContext*>(ctx)) {
            auto s = std::make_unique<ast::Stmt>(K::Annotation, r);
            s->name = c->name->getText();
            s->name_range = trange(c->name);
            args(c->argList(), s->args);
            return s;
        }
        if (auto* c = dynamic_cast<TileParser::ExprStmtContext*>(ctx)) {
            if (c->op) {
                auto s = std::make_unique<ast::Stmt>(K::Assign, r);
                s->target = expr(c->target);
                s->assign_op = c->op->getText();
                s->op_range = range(c->op);
                s->value = expr(c->value);
                return s;
            }
            auto s = std::make_unique<ast::Stmt>(K::Expr, r);
            s->value = expr(c->target);
            return s;
        }
        return std::make_unique<ast::Stmt>(K::Empty, r);
    }

    ast::ExprPtr make_binary(ast::BinaryOp op, ast::ExprPtr a, ast::ExprPtr b, SourceRange op_range) {
        SourceRange r{a->range.begin, b->range.end};
        auto e = std::make_unique<ast::Expr>(ast::ExprKind::Binary, r);
        e->binary_op = op;
        e->op_range = op_range;
        e->operands.push_back(std::move(a));
        e->operands.push_back(std::move(b));
        return e;
    }

    static ast::BinaryOp binary_op(const std::string& t) {
        using B = ast::BinaryOp;
        if (t == "+") return B::Add;
        if (t == "-") return B::Sub;
        if (t == "*") return B::Mul;
        if (t == "/") return B::Div;
        if (t == "%") return B::Mod;
        if (t == "<<") return B::Shl;
        if (t == ">>") return B::Shr;
        if (t == "<") return B::Lt;
        if (t == "<=") return B::Le;
        if (t == ">") return B::Gt;
        if (t == ">=") return B::Ge;
        if (t == "==") return B::Eq;
        if (t == "!=") return B::Ne;
        if (t == "&") return B::BitAnd;
        if (t == "^") return B::BitXor;
        if (t == "|") return B::BitOr;
        if (t == "&&") return B::And;
        return B::Or;
    }

    // A left-associative chain: operands are rule contexts, operators are terminals
    // (or a shiftOp rule, whose two '>' tokens must touch).
    ast::ExprPtr chain(ParserRuleContext* ctx) {
        ast::ExprPtr acc;
        std::string pending;
        SourceRange pending_range;
        for (auto* child : ctx->children) {
            if (auto* term = dynamic_cast<antlr4::tree::TerminalNode*>(child)) {
                pending = term->getText();
                pending_range = trange(term->getSymbol());
                continue;
            }
            auto* rule = dynamic_cast<ParserRuleContext*>(child);
            if (auto* sh = dynamic_cast<TileParser::ShiftOpContext*>(rule)) {
                pending_range = range(sh);
                if (sh->children.size() == 2) {
                    Token* a = sh->getStart();
                    Token* b = sh->getStop();
                    if (a->getLine() != b->getLine() || b->getCharPositionInLine() != a->getCharPositionInLine() + 1)
                        diags_.error(pending_range, "'>' '>' with a space between; write '>>' for a shift");
                    pending = ">>";
                } else {
                    pending = sh->getText();
                }
                continue;
            }
            ast::ExprPtr operand = expr_any(rule);
            if (!acc) acc = std::move(operand);
            else acc = make_binary(binary_op(pending), std::move(acc), std::move(operand), pending_range);
        }
        return acc;
    }

    ast::ExprPtr expr(TileParser::ExprContext* ctx) { return expr_any(ctx->ternaryExpr()); }
    ast::ExprPtr expr(TileParser::UnaryExprContext* ctx) { return expr_any(ctx); }

    ast::ExprPtr expr_any(ParserRuleContext* ctx) {
        if (auto* e = dynamic_cast<TileParser::ExprContext*>(ctx)) return expr(e);
        if (auto* t = dynamic_cast<TileParser::TernaryExprContext*>(ctx)) {
            ast::ExprPtr cond = expr_any(t->cond);
            if (!t->then) return cond;
            auto e = std::make_unique<ast::Expr>(ast::ExprKind::Ternary, range(t));
            e->operands.push_back(std::move(cond));
            e->operands.push_back(expr(t->then));
            e->operands.push_back(expr_any(t->otherwise));
            return e;
        }
        if (auto* u = dynamic_cast<TileParser::UnaryExprContext*>(ctx)) {
            if (auto* p = u->postfixExpr()) return postfix(p);
            auto e = std::make_unique<ast::Expr>(ast::ExprKind::Unary, range(u));
            std::string op = u->op->getText();
            e->unary_op = op == "-" ? ast::UnaryOp::Neg
                          : op == "+" ? ast::UnaryOp::Plus
                          : op == "!" ? ast::UnaryOp::Not
                                      : ast::UnaryOp::BitNot;
            e->op_range = trange(u->op);
            e->operands.push_back(expr_any(u->unaryExpr()));
            return e;
        }
        if (auto* p = dynamic_cast<TileParser::PostfixExprContext*>(ctx)) return postfix(p);
        return chain(ctx);  // or/and/bit/eq/rel/shift/add/mul chains
    }

    ast::ExprPtr postfix(TileParser::PostfixExprContext* ctx) {
        SourceRange r = range(ctx);
        if (auto* c = dynamic_cast<TileParser::PrimaryPostfixContext*>(ctx)) return primary(c->primary());
        if (auto* c = dynamic_cast<TileParser::IndexPostfixContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(ast::ExprKind::Index, r);
            e->operands.push_back(postfix(c->postfixExpr()));
            for (auto* i : c->exprList()->expr()) e->operands.push_back(expr(i));
            return e;
        }
        if (auto* c = dynamic_cast<TileParser::CallPostfixContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(ast::ExprKind::Call, r);
            e->operands.push_back(postfix(c->postfixExpr()));
            args(c->argList(), e->args);
            return e;
        }
        auto* c = dynamic_cast<TileParser::MemberPostfixContext*>(ctx);
        auto e = std::make_unique<ast::Expr>(ast::ExprKind::Member, r);
        e->operands.push_back(postfix(c->postfixExpr()));
        e->text = c->member->getText();
        e->op_range = trange(c->member);
        return e;
    }

    ast::ExprPtr primary(TileParser::PrimaryContext* ctx) {
        SourceRange r = range(ctx);
        using K = ast::ExprKind;
        if (auto* c = dynamic_cast<TileParser::IntLiteralContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::Int, r);
            std::string text = c->getText();
            e->text = text;
            int base = 10;
            std::string digits = text;
            if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'b')) {
                base = text[1] == 'x' ? 16 : 2;
                digits = text.substr(2);
            }
            errno = 0;
            unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
            if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
                // In every base, as decimal: a literal is a non-negative int64 (0x8000... would
                // otherwise wrap to a negative value the program never wrote).
                e->int_overflow = true;
            } else {
                e->int_value = static_cast<int64_t>(v);
            }
            return e;
        }
        if (auto* c = dynamic_cast<TileParser::FloatLiteralContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::Float, r);
            e->text = c->getText();
            e->float_value = std::strtod(e->text.c_str(), nullptr);
            return e;
        }
        if (auto* c = dynamic_cast<TileParser::BoolLiteralContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::Bool, r);
            e->bool_value = c->getText() == "true";
            return e;
        }
        if (dynamic_cast<TileParser::InfLiteralContext*>(ctx)) return std::make_unique<ast::Expr>(K::Inf, r);
        if (auto* c = dynamic_cast<TileParser::StringLiteralContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::String, r);
            e->text = decode_string(c->STRING()->getSymbol());
            return e;
        }
        if (auto* c = dynamic_cast<TileParser::CastExprContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::Cast, r);
            e->cast_type = type_spec(c->typeSpec());
            e->operands.push_back(expr(c->expr()));
            return e;
        }
        if (auto* c = dynamic_cast<TileParser::NameExprContext*>(ctx)) {
            auto e = std::make_unique<ast::Expr>(K::Name, r);
            e->text = c->getText();
            return e;
        }
        auto* c = dynamic_cast<TileParser::ParenExprContext*>(ctx);
        ast::ExprPtr inner = expr(c->expr());
        inner->range = r;  // keep the parentheses in the range so carets cover them
        return inner;
    }

    uint32_t file_;
    DiagnosticEngine& diags_;
};

// Rejects absurd nesting before ANTLR's recursive descent sees it, so no input can
// exhaust the stack.
bool check_nesting(uint32_t file, antlr4::CommonTokenStream& tokens, DiagnosticEngine& diags) {
    int depth = 0;
    for (Token* t : tokens.getTokens()) {
        std::string s = t->getText();
        if (t->getType() == Token::EOF) break;
        if (s == "(" || s == "[" || s == "{") {
            if (++depth > kMaxNesting) {
                diags.error(token_range(file, t), "brackets nested too deeply (more than " +
                                                      std::to_string(kMaxNesting) + " levels)");
                return false;
            }
        } else if (s == ")" || s == "]" || s == "}") {
            depth = depth > 0 ? depth - 1 : 0;
        }
    }
    // Long operator chains nest as deeply as they are long.
    int operators = 0;
    static const std::set<std::string> kOperators = {
        "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|", "^", "<<", ">>", "?"};
    for (Token* t : tokens.getTokens()) {
        if (t->getType() == Token::EOF) break;
        std::string s = t->getText();
        if (s == ";" || s == "{" || s == "}") {
            operators = 0;
        } else if (kOperators.count(s) && ++operators > kMaxOperatorsPerStatement) {
            diags.error(token_range(file, t), "expression too long: more than " +
                                                  std::to_string(kMaxOperatorsPerStatement) +
                                                  " operators in one statement");
            return false;
        }
    }
    // Long runs of prefix operators recurse too.
    int run = 0;
    for (Token* t : tokens.getTokens()) {
        std::string s = t->getText();
        if (s == "-" || s == "!" || s == "~" || s == "+") {
            if (++run > kMaxNesting) {
                diags.error(token_range(file, t), "too many prefix operators in a row");
                return false;
            }
        } else {
            run = 0;
        }
    }
    return true;
}

// ANTLR decodes its input as UTF-8 and throws on malformed bytes; report the first
// bad byte as a located error instead.
bool check_utf8(uint32_t file, const std::string& text, DiagnosticEngine& diags) {
    uint32_t line = 1, col = 1;
    for (size_t i = 0; i < text.size();) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        bool ok = len != 0 && i + len <= text.size();
        for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
        if (ok && len == 2) ok = c >= 0xC2;  // no overlong encodings
        if (!ok) {
            SourceLoc at{file, line, col};
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", c);
            diags.error(SourceRange(at), std::string("invalid UTF-8 byte ") + hex + " in source file");
            return false;
        }
        if (c == '\n') {
            ++line;
            col = 1;
        } else {
            col += static_cast<uint32_t>(len);
        }
        i += len;
    }
    return true;
}

}  // namespace

std::unique_ptr<ast::File> parse_file(uint32_t file_id, const SourceManager& sources, DiagnosticEngine& diags) {
    if (!check_utf8(file_id, sources.contents(file_id), diags)) return nullptr;
    antlr4::ANTLRInputStream input(sources.contents(file_id));
    TileLexer lexer(&input);
    lexer.removeErrorListeners();
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    if (!check_nesting(file_id, tokens, diags)) return nullptr;
    TileParser parser(&tokens);
    parser.removeErrorListeners();
    auto strategy = std::make_shared<HumanErrorStrategy>(file_id, diags);
    parser.setErrorHandler(strategy);
    TileParser::FileContext* tree = parser.file();
    if (strategy->errors > 0 || parser.getNumberOfSyntaxErrors() > 0) return nullptr;
    unsigned before = diags.error_count();
    AstBuilder builder(file_id, diags);
    auto file = builder.build(tree);
    if (diags.error_count() != before) return nullptr;
    return file;
}

}  // namespace tilec::frontend
