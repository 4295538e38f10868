// The simulator's atomics (AtomicRmwNode) and the lowerings that emit them and shared
// scans: concurrent atomics to one element from every thread of several blocks are not
// races and sum exactly what they should; each atomic rounds its own result to the
// element type (as the hardware's atomic float add does); integers wrap; atomics into
// an input tensor, out of bounds or into shared memory are findings or refusals with
// their line; lowered atomic_add and cumsum kernels on ragged shapes match the
// reference for warps of 32 and 64.
#include <catch2/catch.hpp>
#include <cmath>

#include "interp/interp.h"
#include "interp/testing.h"
#include "ir/printer.h"
#include "lower/gpu_passes.h"
#include "lower/thread_lower.h"
#include "sim/sim.h"
#include "target/target.h"

using namespace tilec;

namespace {

const target::GpuTarget& gpu(const char* name) {
    const auto* t = target::find_gpu_target(name);
    REQUIRE(t);
    return *t;
}

SourceLoc line(uint32_t l, uint32_t c = 5) {
    return SourceLoc{0, l, c};
}

std::string issues_str(const sim::Result& r) {
    std::string s;
    for (auto& i : r.issues) s += i.str() + "\n";
    return s;
}

// A hand-built thread-level kernel: `blocks` blocks of `threads` threads, an inout
// tensor Y of `n` elements of `dt`, an input tensor X of n f32.
struct Hand {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer x;
    ir::Buffer y;
    ir::PrimFunc f;
    Hand(int64_t threads, int64_t blocks, ir::DataType dt, int64_t n = 64) {
        x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(n)}, ir::Access::In);
        y = ir::make_tensor("Y", dt, {ir::make_int(n)}, ir::Access::InOut);
        f.name = "hand";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(blocks)};
        f.threads = threads;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
    }
    sim::Result run(ir::Stmt body, interp::RunArgs& a, const char* arch = "sm_80") {
        f.body = std::move(body);
        sim::Options o;
        o.target = &gpu(arch);
        return sim::run(f, a, o);
    }
};

interp::RunArgs float_args(int64_t n, double x, double y) {
    interp::RunArgs a;
    a.tensors.resize(2);
    a.tensors[0].data.assign(static_cast<size_t>(n), x);
    a.tensors[1].data.assign(static_cast<size_t>(n), y);
    return a;
}

}  // namespace

TEST_CASE("sim: concurrent atomic adds from every thread and block are not races and sum exactly", "[sim]") {
    for (const char* arch : {"sm_80", "gfx942"}) {
        INFO(arch);
        // 3 blocks x 128 threads: thread t adds (t + 1) to Y[t % 4] and 1 to Y[63].
        Hand h(128, 3, ir::DataType::f32());
        ir::Expr v = ir::make_cast(ir::DataType::f32(), ir::add(h.tx, ir::make_int(1)));
        auto body = ir::make_seq(
            {ir::make_atomic_rmw(ir::AtomicOp::Add, h.y, {ir::floormod(h.tx, ir::make_int(4))}, v, line(3)),
             ir::make_atomic_rmw(ir::AtomicOp::Add, h.y, {ir::make_int(63)}, ir::make_float(1.0), line(4))});
        auto a = float_args(64, 0, 0.5);
        auto r = h.run(body, a, arch);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        for (int k = 0; k < 4; ++k) {
            // sum over t = k, k+4, ..., 124 of (t + 1), times 3 blocks, plus the initial 0.5.
            double want = 0.5;
            for (int t = k; t < 128; t += 4) want += 3.0 * (t + 1);
            CHECK(a.tensors[1].data[static_cast<size_t>(k)] == want);
        }
        CHECK(a.tensors[1].data[63] == 0.5 + 384);
        CHECK(a.tensors[1].data[5] == 0.5);  // untouched
        CHECK(r.written[1][0] == 1);
        CHECK(r.written[1][5] == 0);
    }
}

TEST_CASE("sim: each atomic float add rounds its own result to the element type", "[sim]") {
    // Y[0] = 2^24 in f32: 2^24 + 1 is a tie that rounds to even, 2^24. Four atomic adds
    // of 1 each leave 2^24 (one rounding per add); adding their exact sum (4) once
    // would give 2^24 + 4.
    Hand h(4, 1, ir::DataType::f32());
    auto body = ir::make_atomic_rmw(ir::AtomicOp::Add, h.y, {ir::make_int(0)}, ir::make_float(1.0), line(2));
    auto a = float_args(64, 0, 16777216.0);
    auto r = h.run(body, a);
    REQUIRE(r.ok);
    CHECK(a.tensors[1].data[0] == 16777216.0);
    // f64 keeps them.
    Hand d(4, 1, ir::DataType::f64());
    auto b = float_args(64, 0, 16777216.0);
    auto r2 = d.run(ir::make_atomic_rmw(ir::AtomicOp::Add, d.y, {ir::make_int(0)},
                                        ir::make_float(1.0, ir::DataType::f64()), line(2)),
                    b);
    REQUIRE(r2.ok);
    CHECK(b.tensors[1].data[0] == 16777220.0);
}

TEST_CASE("sim: integer atomic adds wrap at the element's width", "[sim]") {
    // 64 threads add 2^26 to an i32 element holding 7: 64 * 2^26 = 2^32 wraps to 0.
    Hand h(64, 1, ir::DataType::i32());
    auto body = ir::make_atomic_rmw(ir::AtomicOp::Add, h.y, {ir::make_int(1)},
                                    ir::make_int(int64_t{1} << 26, ir::DataType::i32()), line(2));
    interp::RunArgs a;
    a.tensors.resize(2);
    a.tensors[0].data.assign(64, 0);
    a.tensors[1].ints.assign(64, 7);
    auto r = h.run(body, a);
    REQUIRE(r.ok);
    CHECK(issues_str(r).empty());
    CHECK(a.tensors[1].ints[1] == 7);
    // 63 of them: 2^32 - 2^26 wraps to -2^26.
    Hand g(63, 1, ir::DataType::i32());
    a.tensors[1].ints.assign(64, 7);
    auto r2 = g.run(ir::make_atomic_rmw(ir::AtomicOp::Add, g.y, {ir::make_int(1)},
                                        ir::make_int(int64_t{1} << 26, ir::DataType::i32()), line(2)),
                    a);
    REQUIRE(r2.ok);
    CHECK(a.tensors[1].ints[1] == 7 - (int64_t{1} << 26));
}

TEST_CASE("sim: atomics out of bounds or into an input are findings; shared atomics are refused", "[sim]") {
    Hand h(32, 1, ir::DataType::f32());
    auto body = ir::make_seq(
        {ir::make_atomic_rmw(ir::AtomicOp::Add, h.y, {ir::mul(h.tx, ir::make_int(3))}, ir::make_float(1.0), line(3)),
         ir::make_atomic_rmw(ir::AtomicOp::Add, h.x, {h.tx}, ir::make_float(1.0), line(4))});
    auto a = float_args(64, 0, 0);
    auto r = h.run(body, a);
    REQUIRE(r.ok);
    REQUIRE(r.issues.size() == 2);
    CHECK(r.issues[0].kind == sim::IssueKind::OutOfBounds);
    CHECK(r.issues[0].loc.line == 3);
    CHECK(r.issues[0].thread == 22);  // 22 * 3 = 66 >= 64
    CHECK(r.issues[0].count == 10);
    CHECK(r.issues[1].kind == sim::IssueKind::InputWrite);
    CHECK(r.issues[1].loc.line == 4);
    CHECK(a.tensors[0].data[0] == 0);  // not written

    Hand s(32, 1, ir::DataType::f32());
    auto sh = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(32)}, ir::Scope::Shared);
    auto b = float_args(64, 0, 0);
    auto r2 = s.run(ir::make_allocate(sh, ir::make_atomic_rmw(ir::AtomicOp::Add, sh, {h.tx}, ir::make_float(1.0),
                                                              line(5))),
                    b);
    CHECK_FALSE(r2.ok);
    CHECK(r2.message.find("shared") != std::string::npos);
    CHECK(r2.loc.line == 5);
}

namespace {

// Seeded values in [-1, 1).
struct Rng {
    uint64_t s;
    double next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1;
    }
};

// Runs `f` (tile level) in the reference and its lowering in the simulator on the same
// seeded inputs (out tensors NaN, inout random) and checks every float element within
// `tol` (absolute) and every integer exactly; no findings.
void check_against_reference(const ir::PrimFunc& f, const std::vector<int64_t>& sizes, const char* arch,
                             double tol) {
    auto low = lower::lower_to_thread_level(f, gpu(arch), nullptr);
    REQUIRE(low);
    REQUIRE(lower::verify_thread_level(*low).empty());
    interp::RunArgs want;
    want.sizes = sizes;
    Rng rng{42};
    // Tensors sized from the sizes: evaluate each shape with the sizes bound in order.
    size_t si = 0;
    std::map<const ir::VarNode*, int64_t> size_of;
    for (auto& p : f.params)
        if (p.kind == ir::ParamKind::Size) size_of[p.var.get()] = sizes.at(si++);
    for (auto& p : f.params) {
        if (p.kind != ir::ParamKind::Tensor) continue;
        int64_t n = 1;
        for (auto& e : p.buffer->shape) {
            if (auto c = ir::as_const_int(e))
                n *= *c;
            else
                n *= size_of.at(static_cast<const ir::VarNode*>(e.get()));
        }
        interp::TensorArg t;
        bool out = p.buffer->access == ir::Access::Out;
        if (p.buffer->dtype.is_integer()) {
            // Anywhere in the type's range, so sums wrap; out tensors a marker value.
            t.ints.resize(static_cast<size_t>(n));
            for (auto& x : t.ints) x = out ? -12345 : static_cast<int64_t>(std::ldexp(rng.next(), 31));
        } else {
            t.data.resize(static_cast<size_t>(n));
            for (auto& x : t.data) x = out ? std::nan("") : rng.next();
        }
        want.tensors.push_back(std::move(t));
    }
    interp::RunArgs got = want;
    REQUIRE(interp::run(f, want).ok);
    sim::Options o;
    o.target = &gpu(arch);
    auto r = sim::run(*low, got, o);
    INFO(r.message);
    REQUIRE(r.ok);
    CHECK(issues_str(r).empty());
    for (size_t t = 0; t < want.tensors.size(); ++t) {
        INFO("tensor " << t);
        CHECK(want.tensors[t].ints == got.tensors[t].ints);
        double worst = 0;
        for (size_t k = 0; k < want.tensors[t].data.size(); ++k) {
            double a = want.tensors[t].data[k], b = got.tensors[t].data[k];
            REQUIRE(std::isnan(a) == std::isnan(b));
            if (!std::isnan(a)) worst = std::max(worst, std::fabs(a - b));
        }
        CHECK(worst <= tol);
    }
}

}  // namespace

TEST_CASE("sim: lowered atomic_add on ragged shapes from several blocks matches the reference", "[sim][lower]") {
    // 3 blocks along z all add the same tile: C = C0 + 3 * X, masked at the edges.
    auto c = interp::testing::compile_source(
        R"(kernel acc3<BM: int, BN: int>(X: f32[M, N], C: inout f32[M, N])
    grid(cdiv(N, BN), cdiv(M, BM), 3) threads(128)
{
    fragment x: f32[BM, BN];
    copy(X[block.y * BM, block.x * BN], x);
    atomic_add(C[block.y * BM, block.x * BN], x);
}
export acc3<BM = 16, BN = 64> as acc_big;
export acc3<BM = 8, BN = 16> as acc_small;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    for (const char* arch : {"sm_80", "gfx942"})
        for (const char* name : {"acc_big", "acc_small"}) {
            INFO(arch << " " << name);
            // Three f32 additions of values below 4 in magnitude: a few ulps of 4.
            check_against_reference(*c.find(name), {37, 70}, arch, 3 * 0x1p-22);
        }
}

TEST_CASE("sim: lowered cumsum along either dimension, forward and reverse, matches the reference", "[sim][lower]") {
    // Shapes that exercise several chunks per line (P > 1), one chunk per line (more
    // lines than threads), a ragged last chunk (rows12_f32: 12 lines, P = 10, C = 7, n = 64), integers.
    auto c = interp::testing::compile_source(
        R"(kernel scan<BM: int, BN: int, D: int, R: bool, T: type>(X: T[M, N], Y: out T[M, N])
    grid(cdiv(N, BN), cdiv(M, BM)) threads(128)
{
    fragment x: T[BM, BN];
    fragment y: T[BM, BN];
    copy(X[block.y * BM, block.x * BN], x);
    cumsum(x, y, dim = D, reverse = R);
    copy(y, Y[block.y * BM, block.x * BN]);
}
export scan<BM = 4, BN = 1024, D = 1, R = false, T = f32> as rows_f32;
export scan<BM = 4, BN = 1024, D = 1, R = true, T = f32> as rows_rev_f32;
export scan<BM = 12, BN = 64, D = 1, R = false, T = f32> as rows12_f32;
export scan<BM = 64, BN = 16, D = 0, R = false, T = f32> as cols_f32;
export scan<BM = 40, BN = 16, D = 0, R = true, T = f32> as cols_rev_f32;
export scan<BM = 256, BN = 4, D = 1, R = false, T = f32> as many_lines_f32;
export scan<BM = 8, BN = 128, D = 1, R = false, T = i32> as rows_i32;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    for (const char* arch : {"sm_80", "gfx942"})
        for (const char* name :
             {"rows_f32", "rows_rev_f32", "rows12_f32", "cols_f32", "cols_rev_f32", "many_lines_f32", "rows_i32"}) {
            INFO(arch << " " << name);
            // Floats: each result is a prefix of at most 1024 values in [-1, 1), summed
            // in f32 as a chunk's serial prefix plus the serial sum of the earlier
            // chunks' totals: at most C + P <= 64 additions on its path, each rounding
            // an intermediate below 1024 in magnitude by at most 2^-24 * 1024, and one
            // rounding of the result (the reference rounds only that one). Integers:
            // wrapping sums, exact.
            bool integer = std::string(name).find("i32") != std::string::npos;
            check_against_reference(*c.find(name), {37, 1000}, arch, integer ? 0 : 65 * 0x1p-24 * 1024);
        }
}
