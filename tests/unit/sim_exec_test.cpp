// The GPU simulator (compiler/sim): thread-level kernels from the lowering match the
// reference interpreter for warps of 32 and 64 with no findings; hand-built thread-level
// IR proves each check fires at the right line (a missing barrier, a barrier under a
// thread-dependent `if`, out-of-bounds, uninitialised reads) and the counters give the
// hand-computed bank conflicts and sectors. Shared memory is one byte arena: buffers
// the plan puts on the same bytes race, read stale bytes or clobber each other there.
#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "interp/interp.h"
#include "lower/gpu_passes.h"
#include "support/interp_testing.h"
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

ir::PrimFunc lowered(const ir::PrimFunc& f, const char* arch) {
    auto out = lower::lower_to_thread_level(f, gpu(arch), nullptr);
    REQUIRE(out);
    return *out;
}

// Seeded inputs in [-1, 1); out tensors NaN.
interp::RunArgs make_args(const ir::PrimFunc& f, int64_t n, uint64_t seed) {
    interp::RunArgs a;
    uint64_t s = seed;
    auto next = [&] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1;
    };
    for (auto& p : f.params) {
        if (p.kind == ir::ParamKind::Size) a.sizes.push_back(n);
        if (p.kind == ir::ParamKind::Scalar) a.scalars.push_back(0.75);
        if (p.kind != ir::ParamKind::Tensor) continue;
        interp::TensorArg t;
        t.data.resize(static_cast<size_t>(n));
        for (auto& x : t.data) x = p.buffer->access == ir::Access::Out ? std::nan("") : next();
        a.tensors.push_back(std::move(t));
    }
    return a;
}

const interp::testing::Compiled& compiled(const std::string& path) {
    static std::map<std::string, std::unique_ptr<interp::testing::Compiled>> cache;
    auto& c = cache[path];
    if (!c) c = std::make_unique<interp::testing::Compiled>(interp::testing::compile_file(path));
    REQUIRE(c->ok);
    return *c;
}

std::string issues_str(const sim::Result& r) {
    std::string s;
    for (auto& i : r.issues) s += i.str() + "\n";
    return s;
}

}  // namespace

TEST_CASE("sim: lowered element-wise kernels match the reference for warps of 32 and 64", "[sim]") {
    const std::string std = interp::testing::stdlib_dir();
    struct Case {
        std::string file, name;
        double rtol;
    } cases[] = {
        {std + "/kernels/vector_add.tile", "vector_add_f32", 0},
        {std + "/kernels/vector_add.tile", "vector_add_f16", 0},
        {std + "/kernels/vector_add.tile", "vector_add_bf16", 0},
        {std + "/../samples/saxpy.tile", "saxpy_f32", 1e-6},
        {std + "/../samples/saxpy.tile", "saxpy_f16", 1e-3},
        {std + "/kernels/activations.tile", "gelu_f32", 1e-6},
        {std + "/kernels/activations.tile", "swiglu_bf16", 1e-2},
    };
    for (const char* arch : {"sm_80", "gfx942"}) {
        for (auto& c : cases) {
            const ir::PrimFunc* f = compiled(c.file).find(c.name);
            REQUIRE(f);
            ir::PrimFunc low = lowered(*f, arch);
            for (int64_t n : {1, 1000, 2049}) {
                INFO(arch << " " << c.name << " N=" << n);
                auto want = make_args(*f, n, 7), got = make_args(*f, n, 7);
                REQUIRE(interp::run(*f, want).ok);
                sim::Options o;
                o.target = &gpu(arch);
                auto r = sim::run(low, got, o);
                REQUIRE(r.ok);
                CHECK(issues_str(r).empty());
                CHECK(r.warp_size == gpu(arch).warp_size);
                for (size_t t = 0; t < want.tensors.size(); ++t) {
                    double scale = 0;
                    for (double x : want.tensors[t].data) scale = std::max(scale, std::fabs(x));
                    for (size_t k = 0; k < want.tensors[t].data.size(); ++k) {
                        double a = want.tensors[t].data[k], b = got.tensors[t].data[k];
                        REQUIRE(std::fabs(a - b) <= c.rtol * scale);
                    }
                }
            }
        }
    }
}

TEST_CASE("sim: a missing barrier is a race at the reading line", "[sim]") {
    auto c = interp::testing::compile_source(
        R"(kernel transpose(X: f32[N, N], Y: out f32[N, N]) grid(1) threads(64)
{
    shared s: f32[16, 16];
    copy(X[0, 0], s);
    for i, j in parallel(16, 16) {
        Y[i, j] = s[j, i];
    }
}
export transpose as transpose_f32;
)");
    REQUIRE(c.ok);
    ir::PrimFunc low = lowered(*c.find("transpose_f32"), "sm_80");
    auto args = make_args(low, 16, 1);
    args.tensors[0].data.resize(256, 0.5);
    args.tensors[1].data.resize(256, std::nan(""));
    auto clean = sim::run(low, args);
    REQUIRE(clean.ok);
    CHECK(issues_str(clean).empty());

    auto racy = sim::run(sim::drop_barriers(low), args);
    REQUIRE(racy.ok);
    REQUIRE(racy.issues.size() == 1);
    CHECK(racy.issues[0].kind == sim::IssueKind::Race);
    CHECK(racy.issues[0].loc.line == 6);
    CHECK(racy.issues[0].loc.col == 19);
    CHECK(racy.issues[0].count == 240);  // every element but the 16 on the diagonal
}

namespace {

// A hand-built thread-level function: `threads` threads, one block, tensors X (in)
// and Y (out) of `n` f32 elements; body built by the caller.
struct Hand {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(1024)}, ir::Access::In);
    ir::Buffer y = ir::make_tensor("Y", ir::DataType::f32(), {ir::make_int(1024)}, ir::Access::Out);
    ir::PrimFunc f;
    Hand(int64_t threads) {
        f.name = "hand";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr},
                    ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(1)};
        f.threads = threads;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
    }
    interp::RunArgs a;  // the last run's tensors (Y: a[1])
    sim::Result run(ir::Stmt body, const char* arch = "sm_80") {
        f.body = std::move(body);
        a = interp::RunArgs{};
        a.tensors.resize(2);
        a.tensors[0].data.assign(1024, 1.0);
        a.tensors[1].data.assign(1024, std::nan(""));
        sim::Options o;
        o.target = &gpu(arch);
        return sim::run(f, a, o);
    }
    double out(size_t k) const { return a.tensors[1].data[k]; }
};

SourceLoc line(uint32_t l, uint32_t c = 5) {
    return SourceLoc{0, l, c};
}

}  // namespace

TEST_CASE("sim: a barrier under a thread-dependent if is reported at its line", "[sim]") {
    Hand h(64);
    auto body = ir::make_if(ir::lt(h.tx, ir::make_int(32)), ir::make_barrier(line(7)), nullptr, line(6));
    auto r = h.run(body);
    REQUIRE(r.ok);
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].kind == sim::IssueKind::BarrierDivergence);
    CHECK(r.issues[0].loc.line == 7);
    CHECK(r.issues[0].message.find("32 of the block's 64 threads") != std::string::npos);
    CHECK(r.issues[0].message.find("thread 32 does not reach it") != std::string::npos);
    // A uniform condition is fine.
    auto ok = h.run(ir::make_if(ir::lt(ir::make_int(0), ir::make_int(32)), ir::make_barrier(line(7))));
    CHECK(ok.issues.empty());
}

TEST_CASE("sim: out-of-bounds shared and global accesses are reported at their lines", "[sim]") {
    Hand h(64);
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(64)}, ir::Scope::Shared);
    auto body = ir::make_allocate(
        s, ir::make_seq({ir::make_store(s, {ir::add(h.tx, ir::make_int(1))}, ir::make_float(1.0), line(3)),
                         ir::make_store(h.y, {ir::mul(h.tx, ir::make_int(17))},
                                        ir::make_load(h.x, {h.tx}, line(4, 30)), line(4))}));
    auto r = h.run(body);
    REQUIRE(r.ok);
    REQUIRE(r.issues.size() == 2);
    CHECK(r.issues[0].kind == sim::IssueKind::OutOfBounds);
    CHECK(r.issues[0].loc.line == 3);
    CHECK(r.issues[0].thread == 63);
    CHECK(r.issues[0].count == 1);
    CHECK(r.issues[1].kind == sim::IssueKind::OutOfBounds);
    CHECK(r.issues[1].loc.line == 4);
    CHECK(r.issues[1].thread == 61);  // 61 * 17 = 1037 >= 1024
    CHECK(r.issues[1].count == 3);
    CHECK(r.issues[1].message.find("'Y'[1037]") != std::string::npos);
}

TEST_CASE("sim: reads of uninitialised shared and register elements", "[sim]") {
    Hand h(32);
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(32)}, ir::Scope::Shared);
    auto r = ir::make_buffer("r", ir::DataType::f32(), {ir::make_int(2)}, ir::Scope::Register);
    auto body = ir::make_allocate(
        s,
        ir::make_allocate(r, ir::make_seq({
                                 ir::make_store(r, {ir::make_int(0)}, ir::make_float(2.0), line(3)),
                                 // thread t writes s[t] for even t only; every thread reads s[t].
                                 ir::make_if(ir::eq(ir::floormod(h.tx, ir::make_int(2)), ir::make_int(0)),
                                             ir::make_store(s, {h.tx}, ir::make_float(1.0), line(5))),
                                 ir::make_barrier(line(6)),
                                 ir::make_store(h.y, {h.tx}, ir::make_load(s, {h.tx}, line(7, 20)), line(7)),
                                 ir::make_store(h.y, {ir::add(h.tx, ir::make_int(32))},
                                                ir::make_load(r, {ir::make_int(1)}, line(8, 20)), line(8)),
                             })));
    auto res = h.run(body);
    REQUIRE(res.ok);
    REQUIRE(res.issues.size() == 2);
    CHECK(res.issues[0].kind == sim::IssueKind::Uninitialized);
    CHECK(res.issues[0].loc.line == 7);
    CHECK(res.issues[0].thread == 1);
    CHECK(res.issues[0].count == 16);
    CHECK(res.issues[1].kind == sim::IssueKind::Uninitialized);
    CHECK(res.issues[1].loc.line == 8);
    CHECK(res.issues[1].count == 32);
    CHECK(res.issues[1].message.find("register") != std::string::npos);
}

TEST_CASE("sim: write-after-read in one epoch is a race; the same thread is not", "[sim]") {
    Hand h(32);
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(32)}, ir::Scope::Shared);
    auto fill = ir::make_store(s, {h.tx}, ir::make_float(1.0), line(2));
    // Each thread reads its own element and then its neighbour's writes it: WAR.
    auto body = ir::make_allocate(
        s, ir::make_seq({fill, ir::make_barrier(line(3)),
                         ir::make_store(h.y, {h.tx}, ir::make_load(s, {h.tx}, line(4, 20)), line(4)),
                         ir::make_store(s, {ir::floormod(ir::add(h.tx, ir::make_int(1)), ir::make_int(32))},
                                        ir::make_float(2.0), line(5)),
                         ir::make_barrier(line(6)),
                         ir::make_store(s, {h.tx}, ir::make_load(s, {h.tx}, line(7, 20)), line(7))}));
    auto r = h.run(body);
    REQUIRE(r.ok);
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].kind == sim::IssueKind::Race);
    CHECK(r.issues[0].loc.line == 5);
    CHECK(r.issues[0].count == 32);
}

TEST_CASE("sim: bank conflicts and sectors per warp request, hand-computed", "[sim]") {
    auto counters = [](const sim::Result& r, uint32_t l, bool shared) {
        for (auto& c : r.counters)
            if (c.loc.line == l && c.shared == shared) return c;
        FAIL("no counters for line " << l);
        return sim::LineCounters{};
    };
    for (const char* arch : {"sm_80", "gfx942"}) {
        int warp = gpu(arch).warp_size;
        INFO(arch);
        Hand h(64);
        auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(64 * 32)}, ir::Scope::Shared);
        auto d = ir::make_buffer("d", ir::DataType::f64(), {ir::make_int(64)}, ir::Scope::Shared);
        auto body = ir::make_allocate(
            s,
            ir::make_allocate(
                d, ir::make_seq({
                       ir::make_store(s, {h.tx}, ir::make_float(1.0), line(2)),
                       ir::make_barrier(),  // stride 1
                       ir::make_store(s, {ir::mul(h.tx, ir::make_int(32))}, ir::make_float(1.0), line(3)),
                       ir::make_barrier(),  // stride 32
                       ir::make_store(s, {ir::mul(h.tx, ir::make_int(2))}, ir::make_float(1.0), line(4)),
                       ir::make_barrier(),  // stride 2
                       ir::make_store(d, {h.tx}, ir::make_float(1.0, ir::DataType::f64()), line(5)),  // f64
                       ir::make_store(h.y, {h.tx}, ir::make_float(1.0), line(6)),  // coalesced
                       ir::make_store(h.y, {ir::mul(h.tx, ir::make_int(8))}, ir::make_float(1.0),
                                      line(7)),  // 32 B apart
                       ir::make_store(h.y, {ir::make_int(5)},
                                      ir::make_load(h.x, {ir::make_int(3)}, line(8, 20)),  // broadcast
                                      line(8)),
                   })));
        auto r = h.run(body, arch);
        REQUIRE(r.ok);
        int64_t requests = 64 / warp;
        // 32 banks: a warp of 32 lanes on consecutive words is 1 wavefront; wave64 2.
        auto c2 = counters(r, 2, true);
        CHECK(c2.requests == requests);
        CHECK(c2.transactions == requests * (warp / 32));
        CHECK(c2.ideal == c2.transactions);
        // Stride 32 words: every lane in bank 0, distinct words: one wavefront per lane.
        auto c3 = counters(r, 3, true);
        CHECK(c3.transactions == requests * warp);
        CHECK(c3.ideal == requests * (warp / 32));
        // Stride 2: 2-way conflicts.
        auto c4 = counters(r, 4, true);
        CHECK(c4.transactions == requests * 2 * (warp / 32));
        CHECK(c4.ideal == requests * (warp / 32));
        // f64, stride 1: two words per lane, conflict-free.
        auto c5 = counters(r, 5, true);
        CHECK(c5.transactions == requests * 2 * (warp / 32));
        CHECK(c5.ideal == c5.transactions);
        // Global f32 stride 1: 4 bytes x warp lanes / 32-byte sectors.
        auto c6 = counters(r, 6, false);
        CHECK(c6.transactions == requests * warp * 4 / 32);
        CHECK(c6.ideal == c6.transactions);
        // Stride 8 floats: one sector per lane.
        auto c7 = counters(r, 7, false);
        CHECK(c7.transactions == requests * warp);
        CHECK(c7.ideal == requests * warp * 4 / 32);
        // Every lane the same element: one sector (load and store alike).
        int64_t line8 = 0;
        for (auto& c : r.counters)
            if (c.loc.line == 8) line8 += c.transactions;
        CHECK(line8 == 2 * requests);
        CHECK(issues_str(r).empty());  // barriers between the shared stores: no races
        CHECK(sim::format_counters(r).find("bank conflicts") != std::string::npos);
    }
}

TEST_CASE("sim: an unrolled loop's accesses count per instruction, elements merged into aligned vectors", "[sim]") {
    // 32 threads (one warp) storing f32 elements of Y[1024] in unrolled loops.
    auto counters = [](const sim::Result& r, uint32_t l) {
        for (auto& c : r.counters)
            if (c.loc.line == l && !c.shared) return c;
        FAIL("no counters for line " << l);
        return sim::LineCounters{};
    };
    Hand h(32);
    auto r4 = ir::make_loop_var("r");
    auto loop = [&](int64_t n, ir::Expr index, uint32_t l) {
        return ir::make_for(r4, ir::make_int(0), ir::make_int(n), ir::ForKind::Unroll,
                            ir::make_store(h.y, {index}, ir::make_float(1.0), line(l)), line(l));
    };
    auto body = ir::make_seq({
        // 4 consecutive floats per thread: one 16-byte vector each, one request of 512 bytes.
        loop(4, ir::add(ir::mul(h.tx, ir::make_int(4)), r4), 2),
        // Element r of every thread next to the other threads': 4 requests of 128 bytes.
        loop(4, ir::add(ir::mul(r4, ir::make_int(32)), h.tx), 3),
        // Pairs 32 bytes apart (an mma accumulator's rows): 8-byte vectors, a sector each.
        loop(2, ir::add(ir::mul(h.tx, ir::make_int(8)), r4), 4),
        // 3 floats from a 16-byte boundary: a vector of 8 and one of 4 bytes.
        loop(3, ir::add(ir::mul(h.tx, ir::make_int(4)), r4), 5),
    });
    auto r = h.run(body);
    REQUIRE(r.ok);
    auto c2 = counters(r, 2);
    CHECK(c2.requests == 1);
    CHECK(c2.lanes == 128);
    CHECK(c2.transactions == 16);
    CHECK(c2.ideal == 16);
    auto c3 = counters(r, 3);
    CHECK(c3.requests == 4);
    CHECK(c3.transactions == 16);
    CHECK(c3.ideal == 16);
    auto c4 = counters(r, 4);
    CHECK(c4.requests == 1);
    CHECK(c4.transactions == 32);
    CHECK(c4.ideal == 8);
    auto c5 = counters(r, 5);
    CHECK(c5.requests == 2);
    CHECK(c5.transactions == 16 + 16);  // 8 bytes at 16-byte steps, then 4: 16 sectors each
    CHECK(c5.ideal == 8 + 4);
}

TEST_CASE("sim: vector_copy moves 16 aligned bytes from shared to global memory, misaligned is reported", "[sim]") {
    Hand h(32);
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(128)}, ir::Scope::Shared);
    auto r = ir::make_loop_var("r");
    auto four = [&](ir::Expr extra) { return ir::add(ir::mul(h.tx, ir::make_int(4)), extra); };
    auto copy = [&](ir::Expr g, uint32_t l) {
        return ir::make_machine_op(ir::MachineOp::VectorCopy, {16}, {ir::make_load(h.y, {g}, line(l))},
                                   {ir::make_load(s, {four(ir::make_int(0))}, line(l))}, line(l));
    };
    auto body = ir::make_allocate(
        s, ir::make_seq({
               // s[i] = X[i] + i: each thread fills its own 16 bytes.
               ir::make_for(r, ir::make_int(0), ir::make_int(4), ir::ForKind::Unroll,
                            ir::make_store(s, {four(r)},
                                           ir::add(ir::make_load(h.x, {four(r)}, line(2)),
                                                   ir::make_cast(ir::DataType::f32(), four(r))),
                                           line(2)),
                            line(2)),
               // Another thread's 16 bytes (thread t reads what t + 1 wrote): after a barrier.
               ir::make_barrier(),
               ir::make_machine_op(ir::MachineOp::VectorCopy, {16},
                                   {ir::make_load(h.y, {four(ir::make_int(0))}, line(3))},
                                   {ir::make_load(s, {ir::floormod(four(ir::make_int(4)), ir::make_int(128))}, line(3))},
                                   line(3)),
               // Y[128 + 4t + 1]: 4 bytes past a 16-byte boundary.
               copy(four(ir::make_int(129)), 4),
           }));
    auto res = h.run(body);
    REQUIRE(res.ok);
    for (size_t k = 0; k < 128; ++k) CHECK(h.out(k) == 1.0 + double((k + 4) % 128));
    for (size_t k = 128; k < 260; ++k) CHECK(std::isnan(h.out(k)));
    REQUIRE(res.issues.size() == 1);
    CHECK(res.issues[0].kind == sim::IssueKind::Misaligned);
    CHECK(res.issues[0].loc.line == 4);
    CHECK(res.issues[0].count == 32);
    // One request of 512 contiguous bytes: 16 sectors; the shared read in 4 passes.
    for (auto& c : res.counters)
        if (c.loc.line == 3) {
            CHECK(c.requests == 1);
            CHECK(c.transactions == (c.shared ? 4 : 16));
            CHECK(c.ideal == c.transactions);
        }
}

TEST_CASE("sim: vector_copy moves 16 bytes from global to shared memory; misaligned, past a row's end reported",
          "[sim]") {
    // An AMD fill (ops/copy.cpp, lower_copy_vector_fill) on gfx942's wave64: thread t
    // copies X[4t .. 4t + 3] into s[4t ..], a barrier, then writes s back to Y element by
    // element, shifted by one thread. 64 lanes x 16 bytes, consecutive: ds_write_b128's
    // 8 phases of 8 lanes each 128 contiguous bytes, no bank conflict.
    Hand h(64);
    auto z = ir::make_tensor("Z", ir::DataType::f32(), {ir::make_int(4), ir::make_int(6)}, ir::Access::In);
    h.f.params.push_back(ir::Param{ir::ParamKind::Tensor, z, nullptr});
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(256)}, ir::Scope::Shared);
    auto r = ir::make_loop_var("r");
    auto four = [&](ir::Expr extra) { return ir::add(ir::mul(h.tx, ir::make_int(4)), extra); };
    auto body = ir::make_allocate(
        s, ir::make_seq({
               ir::make_machine_op(ir::MachineOp::VectorCopy, {16}, {ir::make_load(s, {four(ir::make_int(0))}, line(2))},
                                   {ir::make_load(h.x, {four(ir::make_int(0))}, line(2))}, line(2)),
               ir::make_barrier(),
               ir::make_for(r, ir::make_int(0), ir::make_int(4), ir::ForKind::Unroll,
                            ir::make_store(h.y, {four(r)},
                                           ir::make_load(s, {ir::floormod(four(ir::add(r, ir::make_int(4))),
                                                                          ir::make_int(256))},
                                                         line(3)),
                                           line(3)),
                            line(3)),
               ir::make_barrier(),
               // X[4t + 2]: 8 bytes past a 16-byte boundary.
               ir::make_machine_op(ir::MachineOp::VectorCopy, {16}, {ir::make_load(s, {four(ir::make_int(0))}, line(4))},
                                   {ir::make_load(h.x, {four(ir::make_int(2))}, line(4))}, line(4)),
               ir::make_barrier(),
               // Thread 0 only: Z[2, 4 ..] is aligned (element 16, byte 64) but its row has
               // 6 elements: the vector would run into row 3.
               ir::make_if(ir::eq(h.tx, ir::make_int(0)),
                           ir::make_machine_op(ir::MachineOp::VectorCopy, {16},
                                               {ir::make_load(s, {ir::make_int(0)}, line(5))},
                                               {ir::make_load(z, {ir::make_int(2), ir::make_int(4)}, line(5))}, line(5)),
                           nullptr, line(5)),
           }));
    h.f.body = body;
    interp::RunArgs a;
    a.tensors.resize(3);
    a.tensors[0].data.resize(1024);
    for (size_t k = 0; k < 1024; ++k) a.tensors[0].data[k] = double(k);
    a.tensors[1].data.assign(1024, std::nan(""));
    a.tensors[2].data.assign(24, 1.0);
    sim::Options o;
    o.target = &gpu("gfx942");
    auto res = sim::run(h.f, a, o);
    REQUIRE(res.ok);
    for (size_t k = 0; k < 256; ++k) CHECK(a.tensors[1].data[k] == double((k + 4) % 256));
    REQUIRE(res.issues.size() == 2);
    CHECK(res.issues[0].kind == sim::IssueKind::Misaligned);
    CHECK(res.issues[0].loc.line == 4);
    CHECK(res.issues[0].count == 64);
    CHECK(res.issues[1].kind == sim::IssueKind::OutOfBounds);
    CHECK(res.issues[1].loc.line == 5);
    CHECK(res.issues[1].message.find("past the end of a row of 'Z'") != std::string::npos);
    bool seen = false;
    for (auto& c : res.counters)
        if (c.loc.line == 2 && c.shared) {
            seen = true;
            CHECK(c.store);
            CHECK(c.requests == 1);
            CHECK(c.transactions == c.ideal);  // no bank conflict
            CHECK(c.ideal == 8);               // 1024 bytes, 128 a wavefront
        }
    CHECK(seen);
}

TEST_CASE("sim: vector_copy through registers: global -> register, register -> shared; unwritten registers reported",
          "[sim]") {
    // software-pipeline's register-staged AMD fill on gfx942's wave64: thread t loads
    // X[4t .. 4t + 3] into its registers r[4 .. 7], stores them into s[4t ..] (a
    // ds_write_b128 of consecutive lanes: no bank conflict), a barrier, and Y reads s
    // shifted by one thread. Then a store from r[0 ..], which no load wrote.
    Hand h(64);
    auto s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(256)}, ir::Scope::Shared);
    auto regs = ir::make_buffer("r", ir::DataType::f32(), {ir::make_int(8)}, ir::Scope::Register);
    auto e = ir::make_loop_var("e");
    auto four = [&](ir::Expr extra) { return ir::add(ir::mul(h.tx, ir::make_int(4)), extra); };
    auto body = ir::make_allocate(
        s, ir::make_allocate(
               regs,
               ir::make_seq({
                   ir::make_machine_op(ir::MachineOp::VectorCopy, {16}, {ir::make_load(regs, {ir::make_int(4)}, line(2))},
                                       {ir::make_load(h.x, {four(ir::make_int(0))}, line(2))}, line(2)),
                   ir::make_machine_op(ir::MachineOp::VectorCopy, {16},
                                       {ir::make_load(s, {four(ir::make_int(0))}, line(3))},
                                       {ir::make_load(regs, {ir::make_int(4)}, line(3))}, line(3)),
                   ir::make_barrier(),
                   ir::make_for(e, ir::make_int(0), ir::make_int(4), ir::ForKind::Unroll,
                                ir::make_store(h.y, {four(e)},
                                               ir::make_load(s, {ir::floormod(four(ir::add(e, ir::make_int(4))),
                                                                              ir::make_int(256))},
                                                             line(4)),
                                               line(4)),
                                line(4)),
                   ir::make_barrier(),
                   ir::make_machine_op(ir::MachineOp::VectorCopy, {16},
                                       {ir::make_load(s, {four(ir::make_int(0))}, line(5))},
                                       {ir::make_load(regs, {ir::make_int(0)}, line(5))}, line(5)),
               })));
    h.f.body = body;
    interp::RunArgs a;
    a.tensors.resize(2);
    a.tensors[0].data.resize(1024);
    for (size_t k = 0; k < 1024; ++k) a.tensors[0].data[k] = double(k) + 0.5;
    a.tensors[1].data.assign(1024, std::nan(""));
    sim::Options o;
    o.target = &gpu("gfx942");
    auto res = sim::run(h.f, a, o);
    REQUIRE(res.ok);
    for (size_t k = 0; k < 256; ++k) CHECK(a.tensors[1].data[k] == double((k + 4) % 256) + 0.5);
    REQUIRE(res.issues.size() == 1);
    CHECK(res.issues[0].kind == sim::IssueKind::Uninitialized);
    CHECK(res.issues[0].loc.line == 5);
    bool seen = false;
    for (auto& c : res.counters)
        if (c.loc.line == 3 && c.shared) {
            seen = true;
            CHECK(c.store);
            CHECK(c.transactions == c.ideal);  // no bank conflict
            CHECK(c.ideal == 8);
        }
    CHECK(seen);
}

TEST_CASE("sim: floats round per operation to their register type", "[sim]") {
    // The GPU code holds f16 (bf16, the 8-bit floats) in f32 registers and rounds to the
    // type only at a store or conversion (GpuLowering::reg_type): (2048 + 1) + 1 in f16 is
    // 2050, not the 2048 of f16 arithmetic. f32 does round each operation: (2^24 + 1) + 1
    // is 2^24 there, where the float64 reference, rounding once at the store, gives
    // 2^24 + 2.
    for (auto [type, big, expected] : {std::tuple{ir::DataType::f16(), 2048.0, 2050.0},
                                       std::tuple{ir::DataType::f32(), 16777216.0, 16777216.0}}) {
        INFO(type.str());
        Hand h(1);
        ir::Expr a = ir::make_float(big, type);
        ir::Expr one = ir::make_float(1.0, type);
        ir::Expr sum = ir::add(ir::add(a, one), one);
        ir::PrimFunc& f = h.f;
        f.body = ir::make_store(h.y, {ir::make_int(0)}, ir::make_cast(ir::DataType::f32(), sum), line(2));
        interp::RunArgs args;
        args.tensors.resize(2);
        args.tensors[0].data.assign(1024, 1.0);
        args.tensors[1].data.assign(1024, std::nan(""));
        auto r = sim::run(f, args);
        REQUIRE(r.ok);
        CHECK(args.tensors[1].data[0] == expected);
        CHECK(r.written[1][0] == 1);
        CHECK(r.written[1][1] == 0);
    }
}

TEST_CASE("sim: tile-level IR and bad arguments are refused, not crashed on", "[sim]") {
    Hand h(32);
    h.f.level = ir::FuncLevel::Tile;
    auto r = h.run(ir::make_seq({}));
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("thread-level") != std::string::npos);
    Hand g(32);
    g.f.body = ir::make_seq({});
    interp::RunArgs none;
    auto r2 = sim::run(g.f, none);
    CHECK_FALSE(r2.ok);
    CHECK(r2.message.find("takes 2 tensors") != std::string::npos);
}

namespace {

// A shared buffer placed by hand at `offset` of the block's arena, as the shared plan
// places buffers (-1: unplanned, the next 128-byte slot).
ir::Buffer shared_at(const char* name, ir::DataType t, int64_t n, int64_t offset) {
    ir::BufferNode node = *ir::make_buffer(name, t, {ir::make_int(n)}, ir::Scope::Shared);
    node.shared_offset = offset;
    return ir::make_buffer(std::move(node));
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sim: buffers on the same arena bytes race with each other across buffers", "[sim]") {
    Hand h(32);
    auto a = shared_at("A", ir::DataType::f32(), 32, 0);
    auto b = shared_at("B", ir::DataType::f32(), 32, 0);
    auto t0 = ir::eq(h.tx, ir::make_int(0)), t1 = ir::eq(h.tx, ir::make_int(1));
    // Thread 0 reads A[0]; thread 1 then stores B[0], the same four bytes.
    auto body = [&](bool barrier) {
        std::vector<ir::Stmt> s = {
            ir::make_store(a, {h.tx}, ir::make_float(1.0), line(2)),
            ir::make_barrier(line(3)),
            ir::make_if(t0, ir::make_store(h.y, {ir::make_int(0)}, ir::make_load(a, {ir::make_int(0)}, line(4, 20)),
                                           line(4))),
        };
        if (barrier) s.push_back(ir::make_barrier(line(5)));
        s.push_back(ir::make_if(t1, ir::make_store(b, {ir::make_int(0)}, ir::make_float(2.0), line(6))));
        return ir::make_allocate(a, ir::make_allocate(b, ir::make_seq(s)));
    };
    auto racy = h.run(body(false));
    REQUIRE(racy.ok);
    INFO(issues_str(racy));
    REQUIRE(racy.issues.size() == 1);
    CHECK(racy.issues[0].kind == sim::IssueKind::Race);
    CHECK(racy.issues[0].loc.line == 6);
    CHECK(racy.issues[0].thread == 1);
    CHECK(has(racy.issues[0].message, "'B' element 0 written by thread 1 after thread 0 read the same bytes as "
                                      "'A' at 4:20, with no barrier between"));
    CHECK(h.out(0) == 1.0);

    auto fenced = h.run(body(true));
    REQUIRE(fenced.ok);
    CHECK(issues_str(fenced).empty());

    // Write after write: thread 0 stores A[0], thread 1 B[0] in the same epoch; and a
    // read through B of what thread 0 stored through A, also unfenced.
    auto ww = h.run(ir::make_allocate(
        a, ir::make_allocate(b, ir::make_seq({
                                    ir::make_if(t0, ir::make_store(a, {ir::make_int(0)}, ir::make_float(1.0), line(2))),
                                    ir::make_if(t1, ir::make_store(b, {ir::make_int(0)}, ir::make_float(2.0), line(3))),
                                }))));
    REQUIRE(ww.ok);
    REQUIRE(ww.issues.size() == 1);
    CHECK(ww.issues[0].kind == sim::IssueKind::Race);
    CHECK(has(ww.issues[0].message, "'B' element 0 written by thread 1 and by thread 0 as 'A'[0] at 2:5"));
}

TEST_CASE("sim: a read through a reused slot of bytes another buffer wrote is stale", "[sim]") {
    Hand h(32);
    auto a = shared_at("A", ir::DataType::f32(), 32, 0);
    auto b = shared_at("B", ir::DataType::f32(), 32, 0);
    // A written, barrier, B read at the same bytes: what B reads is A's, not B's.
    auto stale = h.run(ir::make_allocate(
        a, ir::make_allocate(b, ir::make_seq({
                                    ir::make_store(a, {h.tx}, ir::make_float(1.5), line(2)),
                                    ir::make_barrier(line(3)),
                                    ir::make_store(h.y, {h.tx}, ir::make_load(b, {h.tx}, line(4, 20)), line(4)),
                                }))));
    REQUIRE(stale.ok);
    INFO(issues_str(stale));
    REQUIRE(stale.issues.size() == 1);
    CHECK(stale.issues[0].kind == sim::IssueKind::Uninitialized);
    CHECK(stale.issues[0].loc.line == 4);
    CHECK(stale.issues[0].count == 32);
    CHECK(has(stale.issues[0].message, "'B'[0]: reads bytes of 'B' last written as 'A' ('A'[0] at 2:5"));
    CHECK(h.out(5) == 1.5);  // the GPU reads the bytes that are there

    // The legitimate reuse: B stores its own values after A's last use (fenced) and
    // reads them back: clean, and B's values.
    auto reuse = h.run(ir::make_allocate(
        a, ir::make_allocate(b, ir::make_seq({
                                    ir::make_store(a, {h.tx}, ir::make_float(1.5), line(2)),
                                    ir::make_barrier(line(3)),
                                    ir::make_store(h.y, {h.tx}, ir::make_load(a, {h.tx}, line(4, 20)), line(4)),
                                    ir::make_barrier(line(5)),
                                    ir::make_store(b, {h.tx}, ir::make_float(-3.0), line(6)),
                                    ir::make_barrier(line(7)),
                                    ir::make_store(h.y, {ir::add(h.tx, ir::make_int(32))},
                                                   ir::make_load(b, {h.tx}, line(8, 20)), line(8)),
                                }))));
    REQUIRE(reuse.ok);
    CHECK(issues_str(reuse).empty());
    CHECK(h.out(3) == 1.5);
    CHECK(h.out(35) == -3.0);

    // Both live at once (a wrong plan): A stores, B overwrites the bytes, A reads them back.
    auto clobber = h.run(ir::make_allocate(
        a, ir::make_allocate(b, ir::make_seq({
                                    ir::make_store(a, {h.tx}, ir::make_float(1.5), line(2)),
                                    ir::make_barrier(line(3)),
                                    ir::make_store(b, {h.tx}, ir::make_float(-3.0), line(4)),
                                    ir::make_barrier(line(5)),
                                    ir::make_store(h.y, {h.tx}, ir::make_load(a, {h.tx}, line(6, 20)), line(6)),
                                }))));
    REQUIRE(clobber.ok);
    INFO(issues_str(clobber));
    REQUIRE(clobber.issues.size() == 1);
    CHECK(clobber.issues[0].kind == sim::IssueKind::SharedOverlap);
    CHECK(clobber.issues[0].loc.line == 6);
    CHECK(clobber.issues[0].count == 32);
    CHECK(has(clobber.issues[0].message, "'A'[0] after a store to 'B'[0] at 4:5 overwrote its bytes (arena byte 0): "
                                         "'A' and 'B' share bytes while both are live"));
    CHECK(h.out(0) == -3.0);
}

TEST_CASE("sim: shared values are the bytes of their type, and the shadow is per byte", "[sim]") {
    Hand h(32);
    auto half = shared_at("H", ir::DataType::f16(), 64, 0);
    auto word = shared_at("W", ir::DataType::f32(), 32, 0);
    auto bits = shared_at("I", ir::DataType::i32(), 32, 0);
    auto t0 = ir::eq(h.tx, ir::make_int(0)), t1 = ir::eq(h.tx, ir::make_int(1));
    // f16 elements 2t and 2t+1 share a 4-byte word; threads t store neighbours: no race.
    // 2049 rounds to 2048 in f16, once, as the store's conversion does.
    auto adjacent = h.run(ir::make_allocate(
        half, ir::make_seq({
                  ir::make_store(half, {h.tx}, ir::add(ir::make_float(2049.0), ir::make_cast(ir::DataType::f32(), h.tx)),
                                 line(2)),
                  ir::make_barrier(line(3)),
                  ir::make_store(h.y, {h.tx},
                                 ir::make_cast(ir::DataType::f32(), ir::make_load(half, {h.tx}, line(4, 20))), line(4)),
              })));
    REQUIRE(adjacent.ok);
    CHECK(issues_str(adjacent).empty());
    CHECK(h.out(0) == 2048.0);  // 2049 -> 2048 (ties to even)
    CHECK(h.out(1) == 2050.0);
    CHECK(h.out(3) == 2052.0);  // 2052 exact

    // Two threads on one f16 element are a race.
    auto same = h.run(ir::make_allocate(
        half, ir::make_store(half, {ir::floordiv(h.tx, ir::make_int(2))}, ir::make_float(1.0), line(2))));
    REQUIRE(same.ok);
    REQUIRE(same.issues.size() == 1);
    CHECK(same.issues[0].kind == sim::IssueKind::Race);
    CHECK(same.issues[0].count == 16);

    // A partial overlap: thread 0 stores H[1] (bytes 2..3), thread 1 reads W[0] (bytes
    // 0..3) in the same epoch.
    auto partial = h.run(ir::make_allocate(
        half, ir::make_allocate(
                  word, ir::make_seq({
                            ir::make_store(word, {h.tx}, ir::make_float(0.0), line(2)),
                            ir::make_barrier(line(3)),
                            ir::make_if(t0, ir::make_store(half, {ir::make_int(1)}, ir::make_float(1.0), line(4))),
                            ir::make_if(t1, ir::make_store(h.y, {ir::make_int(0)},
                                                           ir::make_load(word, {ir::make_int(0)}, line(5, 20)), line(5))),
                        }))));
    REQUIRE(partial.ok);
    INFO(issues_str(partial));
    bool race = false;
    for (auto& i : partial.issues)
        if (i.kind == sim::IssueKind::Race && i.loc.line == 5 &&
            has(i.message, "'W' element 0 read by thread 1 after thread 0 wrote the same bytes as 'H'[1] at 4:5"))
            race = true;
    CHECK(race);

    // The bytes are the GPU's: f32 1.0 read as i32 is 0x3f800000 (a stale read, reported).
    auto pun = h.run(ir::make_allocate(
        word, ir::make_allocate(
                  bits, ir::make_seq({
                            ir::make_store(word, {h.tx}, ir::make_float(1.0), line(2)),
                            ir::make_barrier(line(3)),
                            ir::make_store(h.y, {h.tx},
                                           ir::make_cast(ir::DataType::f32(), ir::make_load(bits, {h.tx}, line(4, 20))),
                                           line(4)),
                        }))));
    REQUIRE(pun.ok);
    REQUIRE(pun.issues.size() == 1);
    CHECK(pun.issues[0].kind == sim::IssueKind::Uninitialized);
    CHECK(h.out(7) == static_cast<double>(0x3f800000));
}

TEST_CASE("sim: unplanned buffers get their own slots, and out of bounds is per buffer", "[sim]") {
    Hand h(32);
    // Unplanned (offset -1): A f32[40] is 160 bytes, so B starts at byte 256; each thread
    // stores A[t] and B[t] with no barrier between and reads both after one: no finding.
    auto a = shared_at("A", ir::DataType::f32(), 40, -1);
    auto b = shared_at("B", ir::DataType::f32(), 40, -1);
    auto r = h.run(ir::make_allocate(
        a, ir::make_allocate(
               b, ir::make_seq({
                      ir::make_store(a, {h.tx}, ir::make_float(1.0), line(2)),
                      ir::make_store(b, {ir::floormod(ir::add(h.tx, ir::make_int(1)), ir::make_int(32))},
                                     ir::make_float(2.0), line(3)),
                      ir::make_barrier(line(4)),
                      ir::make_store(h.y, {h.tx},
                                     ir::add(ir::make_load(a, {h.tx}, line(5, 20)), ir::make_load(b, {h.tx}, line(5, 40))),
                                     line(5)),
                  }))));
    REQUIRE(r.ok);
    CHECK(issues_str(r).empty());
    CHECK(h.out(9) == 3.0);

    // A planned buffer of 4 elements at byte 0 under a bigger one: A[t] for t >= 4 lands
    // inside the arena (in B's bytes) but outside A: out of bounds, skipped.
    auto small = shared_at("A", ir::DataType::f32(), 4, 0);
    auto big = shared_at("B", ir::DataType::f32(), 32, 0);
    auto oob = h.run(ir::make_allocate(
        big, ir::make_allocate(small, ir::make_seq({
                                          ir::make_store(big, {h.tx}, ir::make_float(2.0), line(2)),
                                          ir::make_barrier(line(3)),
                                          ir::make_store(small, {h.tx}, ir::make_float(1.0), line(4)),
                                      }))));
    REQUIRE(oob.ok);
    INFO(issues_str(oob));
    REQUIRE(oob.issues.size() == 1);
    CHECK(oob.issues[0].kind == sim::IssueKind::OutOfBounds);
    CHECK(oob.issues[0].count == 28);
    CHECK(has(oob.issues[0].message, "'A'[4] of shared buffer of shape [4]"));
}
