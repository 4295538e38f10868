// The reader's parser: a recursive descent over the printer's grammar (printer.cpp is
// the specification; each parse_* function mirrors the printer case that writes it), so
// that printed IR can be read back, passes run on it alone, and the text re-printed.
// This file holds statements and functions; reader_expr.cpp the expressions below them.
#include "ir/reader.h"

#include "ir/reader_expr.h"
#include "ir/reader_lexer.h"

namespace tilec::ir {

namespace {

using reader::Binding;
using reader::enum_by_name;
using reader::ExprReader;
using reader::kScopes;
using reader::SyntaxError;
using reader::Token;
using reader::TokKind;

constexpr ForKind kForKinds[] = {ForKind::Serial, ForKind::Unroll, ForKind::Parallel, ForKind::Pipelined,
                                 ForKind::Rolled};
constexpr MachineOp kMachineOps[] = {MachineOp::Ldmatrix, MachineOp::Mma, MachineOp::CpAsync, MachineOp::CpAsyncCommit,
                                     MachineOp::CpAsyncWait, MachineOp::Wgmma, MachineOp::WgmmaFence,
                                     MachineOp::WgmmaCommit, MachineOp::WgmmaWait, MachineOp::FenceProxyAsync,
                                     MachineOp::MbarrierInit, MachineOp::MbarrierArrive, MachineOp::MbarrierWait,
                                     MachineOp::TmaLoad, MachineOp::TmaStore, MachineOp::BulkCommit, MachineOp::BulkWaitRead, MachineOp::SetMaxNReg, MachineOp::NamedBarrier, MachineOp::BarrierArrive,
                                     MachineOp::Mfma, MachineOp::Wmma, MachineOp::VectorCopy, MachineOp::ClusterArrive, MachineOp::ClusterWait};
constexpr ReduceKind kReduceKinds[] = {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::AbsMax};

// Statements and functions over ExprReader's expressions.
class Parser : public ExprReader {
public:
    using ExprReader::ExprReader;

    Module parse_module() {
        Module m;
        while (peek().kind != TokKind::End) m.funcs.push_back(parse_func());
        return m;
    }

private:
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
        if (w == "machine") {  // thread level: machine OP[imm, ...] {dst, ...} = {src, ...}
            next();
            const Token& name = expect_name("a machine op name");
            auto op = enum_by_name(kMachineOps, machine_op_name, name.text);
            if (!op) fail(name, "unknown machine op '" + name.text + "'");
            std::vector<int64_t> imm;
            expect_punct("[", "before the machine op's immediates");
            if (!accept_punct("]")) {
                do imm.push_back(expect_int("an immediate"));
                while (accept_punct(","));
                expect_punct("]", "after the machine op's immediates");
            }
            auto list = [&](const char* what) { return parse_expr_list("{", "}", what, what); };
            auto dst = list("around the machine op's destinations");
            for (const auto& e : dst)
                if (!expr_as<LoadNode>(e)) fail(t, "a machine op destination must be a buffer element");
            expect_punct("=", "between the machine op's destinations and operands");
            auto src = list("around the machine op's operands");
            return make_machine_op(*op, std::move(imm), std::move(dst), std::move(src), loc);
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
                if (!kind)
                    fail(t,
                         "unknown reduction '" + w + "' (reduce_sum, reduce_max, reduce_min, reduce_absmax)");
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
    std::vector<std::pair<std::string, std::string>> parse_raw_pairs(std::string_view close,
                                                                     const char* what) {
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
