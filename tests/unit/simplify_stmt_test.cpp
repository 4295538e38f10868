// The simplifier over statements and functions: loop ranges feed the expression rules,
// dead branches and trivial loops go, and the function's block indices get ranges.
#include <catch2/catch.hpp>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "transform/simplify.h"

using namespace tilec::ir;
using tilec::transform::simplify;
using tilec::transform::simplify_pass;

namespace {
Expr c(int64_t v) {
    return make_int(v);
}
Buffer buf(const char* name, int64_t n) {
    return make_buffer(name, DataType::f32(), {c(n)}, Scope::Fragment);
}
}  // namespace

TEST_CASE("simplify uses a loop's range inside its body", "[simplify][stmt]") {
    Var i = make_loop_var("i");
    Buffer s = buf("s", 256);
    Stmt body =
        make_if(lt(i, c(128)),
                make_store(s, {add(mul(floordiv(i, c(128)), c(128)), floormod(i, c(128)))}, make_float(1.0)));
    Stmt loop = make_for(i, c(0), c(128), ForKind::Parallel, body);
    CHECK(print(simplify(loop)) ==
          "for i in parallel(0, 128) {\n"
          "  s[i] = 1.0\n"
          "}\n");
    // Outside the loop nothing is known about i.
    CHECK(print(simplify(body)) == "if i < 128 {\n  s[i] = 1.0\n}\n");
}

TEST_CASE("simplify offsets loop ranges by the loop start", "[simplify][stmt]") {
    Var i = make_loop_var("i");
    Buffer s = buf("s", 256);
    Stmt loop =
        make_for(i, c(64), c(64), ForKind::Serial, make_store(s, {floordiv(i, c(64))}, make_float(1.0)));
    CHECK(print(simplify(loop)) == "for i in serial(64, 64) {\n  s[1] = 1.0\n}\n");
}

TEST_CASE("simplify removes loops with no iterations and unrolls single ones", "[simplify][stmt]") {
    Var i = make_loop_var("i"), j = make_loop_var("j");
    Buffer s = buf("s", 8);
    Stmt empty = make_for(i, c(0), sub(c(3), c(3)), ForKind::Serial, make_store(s, {i}, make_float(1.0)));
    CHECK(is_no_op(simplify(empty)));
    Stmt single =
        make_for(j, c(5), c(1), ForKind::Pipelined, make_store(s, {add(j, c(1))}, make_float(1.0)), {}, 2);
    CHECK(print(simplify(single)) == "s[6] = 1.0\n");
}

TEST_CASE("simplify keeps the branch a constant condition selects", "[simplify][stmt]") {
    Buffer s = buf("s", 8);
    Stmt a = make_store(s, {c(0)}, make_float(1.0)), b = make_store(s, {c(1)}, make_float(2.0));
    CHECK(print(simplify(make_if(lt(c(1), c(2)), a, b))) == "s[0] = 1.0\n");
    CHECK(print(simplify(make_if(gt(c(1), c(2)), a, b))) == "s[1] = 2.0\n");
    CHECK(is_no_op(simplify(make_if(gt(c(1), c(2)), a))));
}

TEST_CASE("simplify inlines trivial lets and ranges the others", "[simplify][stmt]") {
    Var i = make_loop_var("i");
    Var k = make_let_var("k", DataType::index()), t = make_let_var("t", DataType::index());
    Buffer s = buf("s", 64);
    Stmt let_const = make_let(k, c(4), make_store(s, {mul(k, c(2))}, make_float(1.0)));
    CHECK(print(simplify(let_const)) == "s[8] = 1.0\n");
    Stmt let_range =
        make_for(i, c(0), c(16), ForKind::Serial,
                 make_let(t, mul(i, c(4)), make_if(lt(t, c(64)), make_store(s, {t}, make_float(1.0)))));
    CHECK(print(simplify(let_range)) ==
          "for i in serial(0, 16) {\n"
          "  let t = i * 4\n"
          "  s[t] = 1.0\n"
          "}\n");
}

TEST_CASE("simplify drops asserts that always hold", "[simplify][stmt]") {
    Var i = make_loop_var("i");
    Stmt loop = make_for(i, c(0), c(8), ForKind::Serial,
                         make_seq({make_assert(lt(i, c(8)), "in range"), make_assert(lt(i, c(4)), "half")}));
    CHECK(print(simplify(loop)) == "for i in serial(0, 8) {\n  assert(i < 4, \"half\")\n}\n");
}

TEST_CASE("simplify_pass ranges block indices by the grid", "[simplify][stmt]") {
    PrimFunc f;
    f.name = "k";
    f.kernel = "k";
    f.block_idx = make_block_idx_vars();
    Var n = make_size_var("n");
    Buffer Y = make_tensor("Y", DataType::f32(), {n}, Access::Out);
    f.params = {{ParamKind::Tensor, Y, nullptr}, {ParamKind::Size, nullptr, n}};
    f.grid = {add(c(2), c(2))};
    f.threads = 32;
    // block.x < 4 always; block.y is 0 in a 1-D grid; n >= 0.
    f.body = make_seq({
        make_if(lt(f.block_idx[0], c(4)), make_store(Y, {f.block_idx[1]}, make_float(1.0))),
        make_if(ge(n, c(0)), make_store(Y, {add(f.block_idx[0], c(0))}, make_float(2.0))),
    });
    PrimFunc g = simplify_pass(f);
    CHECK(verify(g).empty());
    CHECK(print(g) ==
          "func k = k\n"
          "  params(Y: global out f32[n], n: size i64)\n"
          "  grid(4) threads(32)\n"
          "{\n"
          "  Y[0] = 1.0\n"
          "  Y[block.x] = 2.0\n"
          "}\n");
}

TEST_CASE("simplify over statements leaves unchanged statements as they are", "[simplify][stmt]") {
    Var i = make_loop_var("i");
    Var n = make_size_var("n");
    Buffer s = buf("s", 8);
    Stmt loop = make_for(i, c(0), n, ForKind::Serial, make_store(s, {floormod(i, c(8))}, make_float(1.0)));
    CHECK(simplify(loop) == loop);
}
