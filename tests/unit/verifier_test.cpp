// The IR verifier: a well-formed function passes, and each kind of broken IR is caught
// with a message that names the problem (one test per rule).
#include <catch2/catch.hpp>

#include <algorithm>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/verifier.h"

using namespace tilec::ir;

namespace {

Expr c(int64_t v) {
    return make_int(v);
}

// A function with M, N sizes, X (in) and Y (out) tensors of f32[M, N], grid (M/64),
// 128 threads, and `body` as its body.
struct Fixture {
    Var M = make_size_var("M"), N = make_size_var("N");
    Buffer X = make_tensor("X", DataType::f32(), {M, N}, Access::In);
    Buffer Y = make_tensor("Y", DataType::f32(), {M, N}, Access::Out);
    Buffer sh = make_buffer("sh", DataType::f32(), {c(64), c(32)}, Scope::Shared);
    Buffer fr = make_buffer("fr", DataType::f32(), {c(64), c(32)}, Scope::Fragment);
    PrimFunc f;

    Fixture() {
        f.name = "k";
        f.kernel = "k";
        f.block_idx = make_block_idx_vars();
        f.params = {{ParamKind::Tensor, X, nullptr},
                    {ParamKind::Tensor, Y, nullptr},
                    {ParamKind::Size, nullptr, M},
                    {ParamKind::Size, nullptr, N}};
        f.grid = {cdiv(M, c(64))};
        f.threads = 128;
        f.body = make_seq({});
    }
    PrimFunc with(Stmt body) {
        PrimFunc g = f;
        g.body = std::move(body);
        return g;
    }
    // Wraps `s` in allocations of sh and fr.
    Stmt alloc(Stmt s) { return make_allocate(sh, make_allocate(fr, std::move(s))); }
    Expr bx() const { return f.block_idx[0]; }
};

bool has(const std::vector<std::string>& errors, const std::string& needle) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

std::string all(const std::vector<std::string>& errors) {
    std::string s;
    for (const auto& e : errors) s += e + "\n";
    return s;
}

}  // namespace

TEST_CASE("verifier accepts a well-formed function", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i"), j = make_loop_var("j");
    Var t = make_let_var("t", DataType::index());
    Buffer acc = make_buffer("acc", DataType::f32(), {}, Scope::Local);
    Stmt body = fx.alloc(make_allocate(
        acc,
        make_seq({
            make_copy(make_region(fx.X, {mul(fx.bx(), c(64)), c(0)}, {c(64), c(32)}), full_region(fx.sh)),
            make_copy(full_region(fx.sh), full_region(fx.fr)),
            make_for(
                i, c(0), c(64), ForKind::Parallel,
                make_for(j, c(0), c(32), ForKind::Parallel,
                         make_let(t, add(mul(fx.bx(), c(64)), i),
                                  make_if(lt(t, fx.M), make_store(fx.Y, {t, j}, make_load(fx.fr, {i, j})))))),
            make_store(acc, {}, make_float(0.0)),
            make_fill(full_region(fx.fr), make_load(acc, {})),
        })));
    auto errors = verify(fx.with(body));
    INFO(all(errors));
    CHECK(errors.empty());
}

TEST_CASE("verifier rejects a variable used outside its loop", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i");
    Stmt body = make_seq({make_for(i, c(0), c(4), ForKind::Serial, make_seq({})),
                          make_store(fx.Y, {i, c(0)}, make_float(1.0))});
    CHECK(has(verify(fx.with(body)), "use of undefined variable 'i'"));
}

TEST_CASE("verifier rejects a let variable used outside its body", "[verifier]") {
    Fixture fx;
    Var t = make_let_var("t", DataType::index());
    Stmt body = make_seq({make_let(t, c(1), make_seq({})), make_store(fx.Y, {t, c(0)}, make_float(1.0))});
    CHECK(has(verify(fx.with(body)), "use of undefined variable 't'"));
}

TEST_CASE("verifier rejects a variable defined twice", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i");
    Stmt loop = make_for(i, c(0), c(4), ForKind::Serial, make_store(fx.Y, {i, c(0)}, make_float(1.0)));
    CHECK(has(verify(fx.with(make_seq({loop, loop}))), "variable 'i' is defined twice"));
}

TEST_CASE("verifier rejects a block index of another function", "[verifier]") {
    Fixture fx;
    auto other = make_block_idx_vars();
    CHECK(has(verify(fx.with(make_store(fx.Y, {other[0], c(0)}, make_float(1.0)))),
              "is not one of the function's block indices"));
    CHECK(verify(fx.with(make_store(fx.Y, {fx.bx(), c(0)}, make_float(1.0)))).empty());
}

TEST_CASE("verifier rejects a buffer used outside its allocation", "[verifier]") {
    Fixture fx;
    Stmt body = make_store(fx.sh, {c(0), c(0)}, make_float(1.0));
    CHECK(has(verify(fx.with(body)), "use of buffer 'sh' outside its allocation"));
    Stmt after = make_seq({fx.alloc(make_seq({})), make_fill(full_region(fx.fr), make_float(0.0))});
    CHECK(has(verify(fx.with(after)), "use of buffer 'fr' outside its allocation"));
}

TEST_CASE("verifier rejects a buffer allocated twice", "[verifier]") {
    Fixture fx;
    Stmt body = make_seq({make_allocate(fx.sh, make_seq({})), make_allocate(fx.sh, make_seq({}))});
    CHECK(has(verify(fx.with(body)), "buffer 'sh' is defined twice"));
}

TEST_CASE("verifier rejects global allocations and non-constant shapes", "[verifier]") {
    Fixture fx;
    Buffer g = make_buffer("g", DataType::f32(), {c(4)}, Scope::Global);
    CHECK(has(verify(fx.with(make_allocate(g, make_seq({})))), "allocate of global buffer 'g'"));
    Buffer dyn = make_buffer("dyn", DataType::f32(), {fx.M}, Scope::Shared);
    CHECK(has(verify(fx.with(make_allocate(dyn, make_seq({})))), "must be a positive constant"));
    Buffer zero = make_buffer("zero", DataType::f32(), {c(0)}, Scope::Local);
    CHECK(has(verify(fx.with(make_allocate(zero, make_seq({})))), "must be a positive constant"));
}

TEST_CASE("verifier rejects index counts that differ from the rank", "[verifier]") {
    Fixture fx;
    CHECK(has(verify(fx.with(make_store(fx.Y, {c(0)}, make_float(1.0)))), "rank 2 indexed with 1 indices"));
    Stmt load = make_store(fx.Y, {c(0), c(0)}, make_load(fx.X, {c(0), c(0), c(0)}));
    CHECK(has(verify(fx.with(load)), "'X' of rank 2 indexed with 3 indices"));
}

TEST_CASE("verifier rejects non-integer indices", "[verifier]") {
    Fixture fx;
    CHECK(has(verify(fx.with(make_store(fx.Y, {make_float(0.0), c(0)}, make_float(1.0)))),
              "index of 'Y' must be an integer"));
}

TEST_CASE("verifier rejects stores and loads of the wrong type", "[verifier]") {
    Fixture fx;
    CHECK(has(verify(fx.with(make_store(fx.Y, {c(0), c(0)}, make_float(1.0, DataType::f16())))),
              "store of f16 into 'Y' of f32"));
    auto bad_load =
        std::make_shared<LoadNode>(fx.X, std::vector<Expr>{c(0), c(0)}, DataType::f16(), tilec::SourceLoc{});
    CHECK(has(verify(fx.with(make_store(fx.Y, {c(0), c(0)}, make_cast(DataType::f32(), bad_load)))),
              "load from 'X' has type f16, not f32"));
}

TEST_CASE("verifier rejects writes to input tensors", "[verifier]") {
    Fixture fx;
    CHECK(has(verify(fx.with(make_store(fx.X, {c(0), c(0)}, make_float(1.0)))),
              "store writes to input tensor 'X'"));
    Stmt copy = fx.alloc(make_copy(full_region(fx.sh), make_region(fx.X, {c(0), c(0)}, {c(64), c(32)})));
    CHECK(has(verify(fx.with(copy)), "copy writes to input tensor 'X'"));
}

TEST_CASE("verifier rejects regions of the wrong rank", "[verifier]") {
    Fixture fx;
    Stmt s = fx.alloc(make_fill(make_region(fx.sh, {c(0)}, {c(64)}), make_float(0.0)));
    CHECK(has(verify(fx.with(s)), "region of 'sh' has 1 starts and 1 extents for rank 2"));
}

TEST_CASE("verifier rejects non-constant or out-of-shape extents of on-chip regions", "[verifier]") {
    Fixture fx;
    Stmt dyn = fx.alloc(make_fill(make_region(fx.sh, {c(0), c(0)}, {fx.M, c(32)}), make_float(0.0)));
    CHECK(has(verify(fx.with(dyn)), "non-constant extent M"));
    Stmt over = fx.alloc(make_fill(make_region(fx.sh, {c(0), c(16)}, {c(64), c(32)}), make_float(0.0)));
    CHECK(has(verify(fx.with(over)), "region [16, 48) of 'sh' exceeds dimension 1 of size 32"));
    Stmt zero = fx.alloc(make_fill(make_region(fx.sh, {c(0), c(0)}, {c(0), c(32)}), make_float(0.0)));
    CHECK(has(verify(fx.with(zero)), "non-positive extent 0"));
    // Global regions may have symbolic extents.
    Stmt global = make_fill(make_region(fx.Y, {c(0), c(0)}, {fx.M, fx.N}), make_float(0.0));
    CHECK(verify(fx.with(global)).empty());
}

TEST_CASE("verifier rejects copies whose extents differ", "[verifier]") {
    Fixture fx;
    Stmt bad = fx.alloc(make_copy(make_region(fx.X, {c(0), c(0)}, {c(64), c(16)}), full_region(fx.sh)));
    CHECK(has(verify(fx.with(bad)), "copy: extents [64, 16] of 'X' and [64, 32] of 'sh' differ"));
    // Unit dimensions are ignored: a [1, 64, 32] box of a rank-3 tensor fills a [64, 32] tile.
    Buffer Q = make_tensor("Q", DataType::f32(), {fx.M, c(64), c(32)}, Access::In);
    PrimFunc g = fx.f;
    g.params.push_back({ParamKind::Tensor, Q, nullptr});
    g.body =
        fx.alloc(make_copy(make_region(Q, {fx.bx(), c(0), c(0)}, {c(1), c(64), c(32)}), full_region(fx.sh)));
    auto errors = verify(g);
    INFO(all(errors));
    CHECK(errors.empty());
}

TEST_CASE("verifier rejects a copy pad of the wrong type", "[verifier]") {
    Fixture fx;
    Stmt s = fx.alloc(make_copy(make_region(fx.X, {c(0), c(0)}, {c(64), c(32)}), full_region(fx.sh),
                                make_float(0.0, DataType::f16())));
    CHECK(has(verify(fx.with(s)), "copy pad of type f16 for a source of f32"));
}

TEST_CASE("verifier rejects gemm with a non-fragment accumulator or mismatched shapes", "[verifier]") {
    Fixture fx;
    Buffer a = make_buffer("a", DataType::f16(), {c(64), c(16)}, Scope::Shared);
    Buffer b = make_buffer("b", DataType::f16(), {c(16), c(32)}, Scope::Shared);
    Buffer b_bad = make_buffer("b_bad", DataType::f16(), {c(8), c(32)}, Scope::Shared);
    auto wrap = [&](Stmt s) { return fx.alloc(make_allocate(a, make_allocate(b, make_allocate(b_bad, s)))); };
    CHECK(verify(fx.with(wrap(make_gemm(full_region(a), full_region(b), full_region(fx.fr))))).empty());
    CHECK(has(verify(fx.with(wrap(make_gemm(full_region(a), full_region(b), full_region(fx.sh))))),
              "gemm accumulator 'sh' must be a fragment, not shared"));
    CHECK(has(verify(fx.with(wrap(make_gemm(full_region(a), full_region(b_bad), full_region(fx.fr))))),
              "gemm K mismatch: 16 vs 8"));
    // trans_b: b is [N, K].
    CHECK(
        has(verify(fx.with(wrap(make_gemm(full_region(a), full_region(b), full_region(fx.fr), false, true)))),
            "mismatch"));
}

TEST_CASE("verifier rejects reduce and cumsum with bad dims", "[verifier]") {
    Fixture fx;
    Buffer m = make_buffer("m", DataType::f32(), {c(64)}, Scope::Fragment);
    Buffer m32 = make_buffer("m32", DataType::f32(), {c(32)}, Scope::Fragment);
    auto wrap = [&](Stmt s) { return fx.alloc(make_allocate(m, make_allocate(m32, s))); };
    CHECK(verify(fx.with(wrap(make_reduce(ReduceKind::Max, full_region(fx.fr), full_region(m), 1)))).empty());
    CHECK(
        verify(fx.with(wrap(make_reduce(ReduceKind::Sum, full_region(fx.fr), full_region(m32), 0)))).empty());
    CHECK(has(verify(fx.with(wrap(make_reduce(ReduceKind::Max, full_region(fx.fr), full_region(m), 2)))),
              "reduce dim 2 out of range for rank 2"));
    CHECK(has(verify(fx.with(wrap(make_reduce(ReduceKind::Max, full_region(fx.fr), full_region(m), 0)))),
              "does not match the source with dim 0 removed"));
    CHECK(
        has(verify(fx.with(wrap(make_cumsum(full_region(fx.fr), full_region(fx.fr), -1)))), "cumsum dim -1"));
}

TEST_CASE("verifier rejects fill values of the wrong type", "[verifier]") {
    Fixture fx;
    CHECK(has(verify(fx.with(fx.alloc(make_fill(full_region(fx.fr), c(0))))), "with a value of type i64"));
}

TEST_CASE("verifier checks condition and operand types", "[verifier]") {
    Fixture fx;
    Stmt store = make_store(fx.Y, {c(0), c(0)}, make_float(1.0));
    CHECK(has(verify(fx.with(make_if(c(1), store))), "if condition must be bool"));
    CHECK(has(verify(fx.with(make_assert(c(1), "x"))), "assert condition must be bool"));
    CHECK(has(
        verify(fx.with(make_store(fx.Y, {add(c(0), make_int(1, DataType::i32())), c(0)}, make_float(1.0)))),
        "operands of '+' have different types i64 and i32"));
    CHECK(has(verify(fx.with(make_if(logical_and(c(1), c(0)), store))), "operands of '&&' must be bool"));
    CHECK(has(verify(fx.with(make_store(fx.Y, {c(0), c(0)}, floordiv(make_float(1.0), make_float(2.0))))),
              "operands of '/' must be integers"));
    CHECK(has(
        verify(fx.with(make_store(fx.Y, {make_binary(BinaryOp::Div, c(4), c(2)), c(0)}, make_float(1.0)))),
        "operands of '/' must be floats"));
    CHECK(has(verify(fx.with(make_store(fx.Y, {make_select(c(1), c(0), c(1)), c(0)}, make_float(1.0)))),
              "select condition must be bool"));
    CHECK(has(
        verify(fx.with(make_store(fx.Y, {c(0), c(0)}, make_call(CallOp::Exp, {c(1)}, DataType::f32(), {})))),
        "argument of exp must be a float"));
}

TEST_CASE("verifier checks loops and lets", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i");
    CHECK(has(verify(fx.with(make_for(i, c(0), make_float(4.0), ForKind::Serial, make_seq({})))),
              "loop extent must be an integer"));
    CHECK(has(verify(fx.with(make_for(i, c(0), c(4), ForKind::Pipelined, make_seq({}), {}, 0))),
              "pipelined loop with 0 stages"));
    Var wrong = make_let_var("w", DataType::index());
    CHECK(has(verify(fx.with(make_for(wrong, c(0), c(4), ForKind::Serial, make_seq({})))),
              "loop variable 'w' has kind let"));
    Var t = make_let_var("t", DataType::i32());
    CHECK(has(verify(fx.with(make_let(t, c(1), make_seq({})))),
              "let 't' of type i32 bound to a value of type i64"));
}

TEST_CASE("verifier checks the function signature", "[verifier]") {
    Fixture fx;
    PrimFunc g = fx.f;
    g.grid.clear();
    g.threads = 0;
    auto errors = verify(g);
    CHECK(has(errors, "grid has 0 dimensions"));
    CHECK(has(errors, "threads per block must be positive"));
    PrimFunc h = fx.f;
    h.params.push_back({ParamKind::Size, nullptr, make_var("S", DataType::index(), VarKind::Scalar)});
    CHECK(has(verify(h), "parameter 'S' has kind scalar, expected size"));
    PrimFunc u = fx.f;
    Var L = make_size_var("L");
    u.params.push_back({ParamKind::Tensor, make_tensor("Z", DataType::f32(), {L}, Access::In), nullptr});
    CHECK(has(verify(u), "use of undefined variable 'L'"));
    PrimFunc s = fx.f;
    s.params.push_back(
        {ParamKind::Tensor, make_buffer("W", DataType::f32(), {c(4)}, Scope::Shared), nullptr});
    CHECK(has(verify(s), "tensor parameter 'W' is not global"));
}

TEST_CASE("verifier messages carry the source position", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i", tilec::SourceLoc{1, 7, 12});
    Stmt s = make_store(fx.Y, {i, c(0)}, make_float(1.0));
    auto errors = verify(fx.with(s));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == "7:12: use of undefined variable 'i'");
}

TEST_CASE("verifier collects every violation, not just the first", "[verifier]") {
    Fixture fx;
    Var i = make_loop_var("i"), j = make_loop_var("j");
    Stmt s = make_seq(
        {make_store(fx.Y, {i, c(0)}, make_float(1.0)), make_store(fx.Y, {j, c(0)}, make_float(1.0))});
    auto errors = verify(fx.with(s));
    CHECK(errors.size() == 2);
    CHECK(has(errors, "'i'"));
    CHECK(has(errors, "'j'"));
}

TEST_CASE("verifier checks thread-level atomics like stores, and they print", "[verifier][printer]") {
    Fixture fx;
    Stmt ok = make_atomic_rmw(AtomicOp::Add, fx.Y, {c(1), c(2)}, make_float(1.0));
    CHECK(verify(fx.with(ok)).empty());
    CHECK(print(fx.with(ok)).find("atomic_add Y[1, 2], 1.0") != std::string::npos);
    CHECK(has(verify(fx.with(make_atomic_rmw(AtomicOp::Add, fx.Y, {c(0), c(0)}, make_float(1.0, DataType::f16())))),
              "atomic_add of f16 into 'Y' of f32"));
    CHECK(has(verify(fx.with(make_atomic_rmw(AtomicOp::Add, fx.X, {c(0), c(0)}, make_float(1.0)))),
              "atomic writes to input tensor 'X'"));
    CHECK(has(verify(fx.with(make_atomic_rmw(AtomicOp::Add, fx.Y, {c(0)}, make_float(1.0)))),
              "'Y' of rank 2 indexed with 1 indices"));
    Buffer b = make_tensor("B", DataType::boolean(), {fx.M}, Access::InOut);
    PrimFunc g = fx.f;
    g.params.push_back({ParamKind::Tensor, b, nullptr});
    g.body = make_atomic_rmw(AtomicOp::Add, b, {c(0)}, make_bool(true));
    CHECK(has(verify(g), "atomic on 'B' of bool"));
}

// wgmma's register form (ir.h, MachineOp::Wgmma): A's 8 elements in registers of one
// f16 / bf16 type, then B's shared element and the n/2 f32 accumulators; no A
// descriptor nor transpose; wgmma_fence pairs 16-bit registers.
TEST_CASE("verifier checks wgmma with A in registers", "[verifier][wgmma]") {
    Fixture fx;
    fx.f.level = FuncLevel::Thread;
    Buffer a = make_buffer("a", DataType::f16(), {c(8)}, Scope::Register);
    Buffer a8 = make_buffer("a8", DataType::f8e4m3(), {c(8)}, Scope::Register);
    Buffer acc = make_buffer("acc", DataType::f32(), {c(4)}, Scope::Register);
    Buffer b = make_buffer("b", DataType::f16(), {c(16), c(8)}, Scope::Shared);
    Buffer as = make_buffer("as", DataType::f16(), {c(64), c(16)}, Scope::Shared);
    auto regs = [&](const Buffer& r, int n) {
        std::vector<Expr> out;
        for (int i = 0; i < n; ++i) out.push_back(make_load(r, {c(i)}));
        return out;
    };
    auto wgmma = [&](std::vector<Expr> a_src, std::vector<int64_t> imm) {
        std::vector<Expr> src = std::move(a_src);
        src.push_back(make_load(b, {c(0), c(0)}));
        for (auto& e : regs(acc, 4)) src.push_back(e);
        return make_machine_op(MachineOp::Wgmma, std::move(imm), regs(acc, 4), src);
    };
    auto run = [&](Stmt s) {
        return verify(fx.with(make_allocate(a, make_allocate(a8, make_allocate(acc, make_allocate(b, make_allocate(as, s)))))));
    };
    const std::vector<int64_t> ok_imm{8, 0, 1, 0, 0, 0, 128, 256, 0};
    auto good = run(wgmma(regs(a, 8), ok_imm));
    INFO(all(good));
    CHECK(good.empty());
    // A transposed, or an A descriptor: the register form has neither.
    CHECK(has(run(wgmma(regs(a, 8), {8, 1, 1, 0, 0, 0, 128, 256, 0})), "takes no transpose nor descriptor of A"));
    CHECK(has(run(wgmma(regs(a, 8), {8, 0, 1, 16, 128, 0, 128, 256, 0})), "takes no transpose nor descriptor of A"));
    // 8-bit A in registers: not a form tilec emits.
    CHECK(has(run(wgmma(regs(a8, 8), ok_imm)), "A and B are f16 x f16 or bf16 x bf16"));
    // Shared elements where A's registers go.
    std::vector<Expr> shared_a;
    for (int i = 0; i < 8; ++i) shared_a.push_back(make_load(as, {c(0), c(i)}));
    CHECK(has(run(wgmma(shared_a, ok_imm)), "A's 8 register elements are registers of one type"));
    // 7 elements: neither form's operand count.
    CHECK(has(run(wgmma(regs(a, 7), ok_imm)), "takes 9 immediates"));
    // wgmma_fence: 16-bit registers in pairs (a .b32 each).
    std::vector<Expr> fenced = regs(acc, 4);
    for (auto& e : regs(a, 8)) fenced.push_back(e);
    CHECK(run(make_machine_op(MachineOp::WgmmaFence, {}, fenced, fenced)).empty());
    fenced.pop_back();
    CHECK(has(run(make_machine_op(MachineOp::WgmmaFence, {}, fenced, fenced)), "16-bit registers come in pairs"));
}
