// The textual IR reader against IR built in C++: the IR forms the printer used to
// print alike (a negated literal and a negative literal, an f16 infinity and a cast
// of an f32 one, a loop variable that is not i64) read back to the IR they were, and
// same-named Vars stay distinct. parse_module's errors are located diagnostics.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/reader.h"
#include "ir/verifier.h"
#include "support/diagnostics.h"
#include "support/source.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

struct Read {
    SourceManager sources;
    std::ostringstream errors;
    DiagnosticEngine diag{sources, errors};
    std::optional<Module> module;
    explicit Read(const std::string& text) {
        uint32_t file = sources.add_file("t.tir", text);
        module = parse_module(sources.contents(file), file, diag);
    }
};

// A function f(A: out f32[N]) whose body is `body`.
PrimFunc func_with(const Buffer& A, const Var& N, Stmt body) {
    PrimFunc f;
    f.name = "f";
    f.kernel = "f";
    f.block_idx = make_block_idx_vars();
    f.params = {{ParamKind::Tensor, A, nullptr}, {ParamKind::Size, nullptr, N}};
    f.grid = {make_int(1)};
    f.threads = 32;
    f.body = std::move(body);
    return f;
}

}  // namespace

TEST_CASE("reader: the negation of a literal and a negative literal read back as they were", "[reader]") {
    Var N = make_size_var("N");
    Buffer A = make_tensor("A", DataType::f32(), {N}, Access::Out);
    Expr neg = make_unary(UnaryOp::Neg, make_float(1.5));
    Expr lit = make_float(-1.5);
    PrimFunc f =
        func_with(A, N, make_seq({make_store(A, {make_int(0)}, neg), make_store(A, {make_int(1)}, lit)}));
    std::string text = print(f);
    CHECK(text.find("A[0] = -(1.5)") != std::string::npos);
    CHECK(text.find("A[1] = -1.5") != std::string::npos);
    Read r(text);
    REQUIRE(r.module);
    auto seq = stmt_as<SeqNode>(r.module->funcs.at(0).body);
    REQUIRE(seq);
    CHECK(seq->stmts[0]->as<StoreNode>()->value->is<UnaryNode>());
    auto back = seq->stmts[1]->as<StoreNode>()->value->as<FloatImmNode>();
    REQUIRE(back);
    CHECK(back->value == -1.5);
    CHECK(print(r.module->funcs[0]) == text);
    CHECK(verify(r.module->funcs[0]).empty());
}

TEST_CASE("reader: an f16 infinity constant and a cast of an f32 infinity stay apart", "[reader]") {
    Var N = make_size_var("N");
    Buffer A = make_tensor("A", DataType::f16(), {N}, Access::Out);
    double inf = std::numeric_limits<double>::infinity();
    Expr constant = make_float(-inf, DataType::f16());
    Expr cast = make_cast(DataType::f16(), make_float(-inf));
    PrimFunc f = func_with(
        A, N, make_seq({make_store(A, {make_int(0)}, constant), make_store(A, {make_int(1)}, cast)}));
    std::string text = print(f);
    CHECK(text.find("A[0] = cast<f16>(-inf)") != std::string::npos);
    CHECK(text.find("A[1] = cast<f16>((-inf))") != std::string::npos);
    Read r(text);
    REQUIRE(r.module);
    auto seq = stmt_as<SeqNode>(r.module->funcs.at(0).body);
    REQUIRE(seq);
    auto c0 = seq->stmts[0]->as<StoreNode>()->value->as<FloatImmNode>();
    REQUIRE(c0);
    CHECK(c0->type == DataType::f16());
    CHECK(std::isinf(c0->value));
    CHECK(seq->stmts[1]->as<StoreNode>()->value->is<CastNode>());
    CHECK(print(r.module->funcs[0]) == text);
}

TEST_CASE("reader: loop variable types, same-named vars, and names bound by scope", "[reader]") {
    Var N = make_size_var("N");
    Buffer A = make_tensor("A", DataType::f32(), {N}, Access::Out);
    Var i32 = make_loop_var("i", {}, DataType::i32());
    Var i64 = make_loop_var("i");
    Stmt a = make_for(i32, make_int(0, DataType::i32()), make_int(4, DataType::i32()), ForKind::Serial,
                      make_store(A, {make_cast(DataType::index(), i32)}, make_float(1.0)));
    Stmt b = make_for(i64, make_int(0), N, ForKind::Parallel, make_store(A, {i64}, make_float(2.0)));
    PrimFunc f = func_with(A, N, make_seq({a, b}));
    std::string text = print(f);
    CHECK(text.find("for i: i32 in serial(0i32, 4i32)") != std::string::npos);
    CHECK(text.find("for i_1 in parallel(0, N)") != std::string::npos);
    Read r(text);
    REQUIRE(r.module);
    auto seq = stmt_as<SeqNode>(r.module->funcs.at(0).body);
    REQUIRE(seq);
    auto f0 = seq->stmts[0]->as<ForNode>();
    auto f1 = seq->stmts[1]->as<ForNode>();
    CHECK(f0->var->type == DataType::i32());
    CHECK(f1->var->type == DataType::index());
    CHECK(f0->var != f1->var);
    CHECK(print(r.module->funcs[0]) == text);
    CHECK(verify(r.module->funcs[0]).empty());
}

TEST_CASE("reader: malformed text gives located errors, not crashes", "[reader]") {
    const char* cases[][2] = {
        {"func f = f\n  params(\n", "t.tir:2:10: error: expected a parameter name, found end of input"},
        {"func f = f params(N: size i64) grid(1) threads(32) {\n  x[0] = 1\n}\n",
         "t.tir:2:3: error: unknown buffer 'x'"},
        {"func f = f params() grid(1) threads(32) { for i in sideways(0, 4) { } }",
         "unknown loop kind 'sideways'"},
        {"funk", "t.tir:1:1: error: expected 'func' to start a function, found 'funk'"},
        {"func f = f params() grid(1) threads(99999999999999999999)", "out of range"},
    };
    for (auto& [text, want] : cases) {
        Read r(text);
        INFO(text);
        CHECK(!r.module);
        CHECK(r.errors.str().find(want) != std::string::npos);
    }
}
