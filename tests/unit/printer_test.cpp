// The IR printer: the exact text of a small GEMM function (what --emit=tir shows and
// lit tests check), expression precedence, literals, and names of same-named vars.
#include <catch2/catch.hpp>

#include <cmath>

#include "ir/ir.h"
#include "ir/printer.h"

using namespace tilec::ir;

namespace {

Expr c(int64_t v) {
    return make_int(v);
}

// gemm<BM=128, BN=128, BK=32, STAGES=3, T=f16, ACC=f32> exported as gemm_f16.
PrimFunc gemm_func() {
    Var M = make_size_var("M"), N = make_size_var("N"), K = make_size_var("K");
    Buffer A = make_tensor("A", DataType::f16(), {M, K}, Access::In);
    Buffer B = make_tensor("B", DataType::f16(), {K, N}, Access::In);
    Buffer C = make_tensor("C", DataType::f16(), {M, N}, Access::Out);
    Buffer a = make_buffer("a", DataType::f16(), {c(128), c(32)}, Scope::Shared);
    Buffer b = make_buffer("b", DataType::f16(), {c(32), c(128)}, Scope::Shared);
    Buffer acc = make_buffer("acc", DataType::f32(), {c(128), c(128)}, Scope::Fragment);

    PrimFunc f;
    f.name = "gemm_f16";
    f.kernel = "gemm";
    f.constants = {{"BM", "128"}, {"BN", "128"}, {"BK", "32"}, {"STAGES", "3"}, {"T", "f16"}, {"ACC", "f32"}};
    f.block_idx = make_block_idx_vars();
    f.params = {{ParamKind::Tensor, A, nullptr}, {ParamKind::Tensor, B, nullptr},
                {ParamKind::Tensor, C, nullptr}, {ParamKind::Size, nullptr, M},
                {ParamKind::Size, nullptr, N},   {ParamKind::Size, nullptr, K}};
    f.grid = {cdiv(N, c(128)), cdiv(M, c(128))};
    f.threads = 128;

    Var bx = make_let_var("bx", DataType::index()), by = make_let_var("by", DataType::index());
    Var k = make_loop_var("k");
    Stmt loop = make_for(
        k, c(0), cdiv(K, c(32)), ForKind::Pipelined,
        make_seq({
            make_copy(make_region(A, {mul(by, c(128)), mul(k, c(32))}, {c(128), c(32)}), full_region(a)),
            make_copy(make_region(B, {mul(k, c(32)), mul(bx, c(128))}, {c(32), c(128)}), full_region(b)),
            make_gemm(full_region(a), full_region(b), full_region(acc)),
        }),
        {}, 3);
    Stmt body = make_seq({
        make_fill(full_region(acc), make_float(0.0)),
        loop,
        make_copy(full_region(acc), make_region(C, {mul(by, c(128)), mul(bx, c(128))}, {c(128), c(128)})),
    });
    body = make_let(bx, f.block_idx[0], make_let(by, f.block_idx[1], body));
    f.body = make_allocate(a, make_allocate(b, make_allocate(acc, body)));
    return f;
}

}  // namespace

TEST_CASE("printer prints a gemm function in its stable text form", "[printer]") {
    const char* want =
        "func gemm_f16 = gemm<BM=128, BN=128, BK=32, STAGES=3, T=f16, ACC=f32>\n"
        "  params(A: global in f16[M, K], B: global in f16[K, N], C: global out f16[M, N], M: size i64, "
        "N: size i64, K: size i64)\n"
        "  grid((N + 127) / 128, (M + 127) / 128) threads(128)\n"
        "{\n"
        "  alloc shared a: f16[128, 32]\n"
        "  alloc shared b: f16[32, 128]\n"
        "  alloc fragment acc: f32[128, 128]\n"
        "  let bx = block.x\n"
        "  let by = block.y\n"
        "  fill(acc, 0.0)\n"
        "  for k in pipelined(0, (K + 31) / 32, stages=3) {\n"
        "    copy(A[by * 128 : +128, k * 32 : +32] -> a, pad=0.0f16)\n"
        "    copy(B[k * 32 : +32, bx * 128 : +128] -> b, pad=0.0f16)\n"
        "    gemm(a, b, acc, trans_a=false, trans_b=false, clear=false)\n"
        "  }\n"
        "  copy(acc -> C[by * 128 : +128, bx * 128 : +128], pad=0.0)\n"
        "}\n";
    CHECK(print(gemm_func()) == want);
}

TEST_CASE("printer output is deterministic across calls and copies", "[printer]") {
    PrimFunc f = gemm_func();
    PrimFunc g = f;
    CHECK(print(f) == print(f));
    CHECK(print(f) == print(g));
    Module m{{f, g}};
    CHECK(print(m) == print(f) + "\n" + print(g));
}

TEST_CASE("printer uses minimal parentheses by precedence", "[printer]") {
    Var x = make_loop_var("x"), y = make_loop_var("y"), z = make_loop_var("z");
    CHECK(print(add(mul(x, y), z)) == "x * y + z");
    CHECK(print(mul(add(x, y), z)) == "(x + y) * z");
    CHECK(print(sub(x, sub(y, z))) == "x - (y - z)");
    CHECK(print(sub(sub(x, y), z)) == "x - y - z");
    CHECK(print(floordiv(x, mul(y, z))) == "x / (y * z)");
    CHECK(print(floormod(add(x, c(1)), c(8))) == "(x + 1) % 8");
    CHECK(print(make_unary(UnaryOp::Neg, add(x, c(1)))) == "-(x + 1)");
    CHECK(print(make_unary(UnaryOp::Neg, c(-3))) == "-(-3)");
    CHECK(print(add(x, c(-1))) == "x + -1");
    CHECK(print(logical_not(lt(x, y))) == "!(x < y)");
    CHECK(print(logical_or(logical_and(lt(x, y), lt(y, z)), eq(x, z))) == "x < y && y < z || x == z");
    CHECK(print(logical_and(logical_or(lt(x, y), lt(y, z)), eq(x, z))) == "(x < y || y < z) && x == z");
    CHECK(print(make_select(lt(x, y), x, make_select(lt(y, z), y, z))) == "x < y ? x : y < z ? y : z");
    CHECK(print(make_select(make_select(lt(x, y), lt(y, z), lt(x, z)), x, y)) ==
          "(x < y ? y < z : x < z) ? x : y");
    CHECK(print(add(make_select(lt(x, y), x, y), c(1))) == "(x < y ? x : y) + 1");
    CHECK(print(make_binary(BinaryOp::BitAnd, make_binary(BinaryOp::Shr, x, c(4)), c(15))) == "x >> 4 & 15");
    CHECK(print(make_binary(BinaryOp::Shr, make_binary(BinaryOp::BitAnd, x, c(15)), c(4))) ==
          "(x & 15) >> 4");
    CHECK(print(minimum(add(x, y), c(3))) == "min(x + y, 3)");
}

TEST_CASE("printer shows literal types, casts, calls and loads", "[printer]") {
    CHECK(print(c(5)) == "5");
    CHECK(print(make_int(5, DataType::i32())) == "5i32");
    CHECK(print(make_int(-1, DataType::u8())) == "255u8");
    CHECK(print(make_bool(true)) == "true");
    CHECK(print(make_float(1.5)) == "1.5");
    CHECK(print(make_float(2.0)) == "2.0");
    CHECK(print(make_float(0.5, DataType::f16())) == "0.5f16");
    CHECK(print(make_float(1e-20)) == "1e-20");
    CHECK(print(make_float(-INFINITY)) == "-inf");
    CHECK(print(make_float(-INFINITY, DataType::bf16())) == "cast<bf16>(-inf)");
    CHECK(print(make_string("a \"b\"\n")) == "\"a \\\"b\\\"\\n\"");
    Var x = make_var("x", DataType::f32(), VarKind::Scalar);
    CHECK(print(make_cast(DataType::f16(), x)) == "cast<f16>(x)");
    CHECK(print(make_call(CallOp::Exp, {sub(x, make_float(1.0))})) == "exp(x - 1.0)");
    CHECK(print(make_binary(BinaryOp::Mod, x, make_float(2.0))) == "fmod(x, 2.0)");
    Buffer s = make_buffer("s", DataType::f32(), {c(4), c(8)}, Scope::Fragment);
    Buffer v = make_buffer("v", DataType::f32(), {}, Scope::Local);
    Var i = make_loop_var("i");
    CHECK(print(make_load(s, {i, add(i, c(1))})) == "s[i, i + 1]");
    CHECK(print(make_load(v, {})) == "v[]");
    CHECK(print(make_thread_idx_var(0)) == "thread.x");
}

TEST_CASE("printer gives distinct vars with one name distinct names", "[printer]") {
    Var i1 = make_loop_var("i"), i2 = make_loop_var("i"), i3 = make_loop_var("i_1");
    Buffer s = make_buffer("s", DataType::f32(), {c(4), c(4)}, Scope::Fragment);
    Stmt body = make_for(i1, c(0), c(4), ForKind::Serial,
                         make_for(i2, c(0), c(4), ForKind::Parallel,
                                  make_for(i3, c(0), c(1), ForKind::Unroll,
                                           make_store(s, {i1, add(i2, i3)}, make_float(1.0)))));
    CHECK(print(body) ==
          "for i in serial(0, 4) {\n"
          "  for i_1 in parallel(0, 4) {\n"
          "    for i_1_1 in unroll(0, 1) {\n"
          "      s[i, i_1 + i_1_1] = 1.0\n"
          "    }\n"
          "  }\n"
          "}\n");
    // The same var printed twice keeps its name.
    CHECK(print(add(i1, i1)) == "i + i");
}

TEST_CASE("printer braces alloc and let only when more statements follow", "[printer]") {
    Buffer t = make_buffer("t", DataType::f32(), {c(2)}, Scope::Local);
    Var x = make_let_var("x", DataType::i32());
    Stmt inner = make_store(t, {c(0)}, make_float(1.0));
    Stmt s = make_seq({make_allocate(t, inner), make_let(x, make_int(3, DataType::i32()), make_evaluate(x)),
                       make_barrier()});
    CHECK(print(s) ==
          "alloc local t: f32[2] {\n"
          "  t[0] = 1.0\n"
          "}\n"
          "let x: i32 = 3i32 {\n"
          "  eval x\n"
          "}\n"
          "barrier()\n");
}

TEST_CASE("printer prints if chains and every tile op", "[printer]") {
    Var i = make_loop_var("i");
    Buffer s = make_buffer("s", DataType::f32(), {c(64), c(32)}, Scope::Fragment);
    Buffer m = make_buffer("m", DataType::f32(), {c(64)}, Scope::Fragment);
    Var L = make_size_var("L");
    BufferNode gn;
    gn.name = "G";
    gn.dtype = DataType::f32();
    gn.shape = {L, c(32)};
    gn.strides = {make_size_var("ld"), c(1)};
    gn.scope = Scope::Global;
    gn.access = Access::InOut;
    gn.layout_hint = "swizzle";
    Buffer G = make_buffer(gn);
    Stmt chain = make_if(lt(i, c(1)), make_barrier(),
                         make_if(lt(i, c(2)), make_print("i=%d", {i}), make_assert(lt(i, c(3)), "i < 3")));
    Stmt ops = make_seq({
        chain,
        make_reduce(ReduceKind::Max, full_region(s), full_region(m), 1, false),
        make_reduce(ReduceKind::AbsMax, full_region(s), full_region(m), 1, true),
        make_cumsum(full_region(s), full_region(s), 0, true),
        make_atomic_add(make_region(G, {mul(i, c(64)), c(0)}, {c(64), c(32)}), full_region(s)),
        make_fill(make_region(s, {c(0), c(16)}, {c(64), c(16)}), make_float(-INFINITY)),
    });
    CHECK(print(ops) ==
          "if i < 1 {\n"
          "  barrier()\n"
          "} else if i < 2 {\n"
          "  print(\"i=%d\", i)\n"
          "} else {\n"
          "  assert(i < 3, \"i < 3\")\n"
          "}\n"
          "reduce_max(s -> m, dim=1, clear=false)\n"
          "reduce_absmax(s -> m, dim=1, clear=true)\n"
          "cumsum(s -> s, dim=0, reverse=true)\n"
          "atomic_add(s -> G[i * 64 : +64, 0 : +32])\n"
          "fill(s[0 : +64, 16 : +16], -inf)\n");
    CHECK(print_buffer_decl(G) == "global inout G: f32[L, 32] strides(ld, 1) @layout(swizzle)");
    CHECK(print_buffer_decl(m) == "fragment m: f32[64]");
}

TEST_CASE("printer shows attrs and scalar parameters", "[printer]") {
    PrimFunc f = gemm_func();
    f.attrs = {{"rasterize", "8"}};
    f.params.push_back({ParamKind::Scalar, nullptr, make_var("alpha", DataType::f32(), VarKind::Scalar)});
    std::string text = print(f);
    CHECK(text.find("  attrs(rasterize=8)\n{\n") != std::string::npos);
    CHECK(text.find(", alpha: f32)\n") != std::string::npos);
}
