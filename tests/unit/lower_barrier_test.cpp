// Barrier placement (compiler/lower/barrier_placement.cpp) on hand-built thread-level
// bodies: where a hazard between threads needs a barrier it gets one (and the simulator
// finds the race once that barrier is removed), where each element stays with one
// thread it gets none, loop back edges and buffers sharing bytes through the shared
// plan count, and no barrier is ever placed under a thread-dependent condition.
#include <catch2/catch.hpp>

#include <cmath>

#include "interp/interp.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "lower/thread_lower.h"
#include "sim/sim.h"
#include "target/target.h"

using namespace tilec;
using ir::Expr;
using ir::Stmt;

namespace {

constexpr int64_t kThreads = 64;

int count_barriers(const Stmt& s) {
    struct V : ir::IRVisitor {
        int n = 0;
        void visit_barrier(const ir::BarrierNode*) override { ++n; }
    } v;
    v.visit(s);
    return v.n;
}

// One block of kThreads threads, X (in) and Y (out) f32[1024].
struct Kernel {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(1024)}, ir::Access::In);
    ir::Buffer y = ir::make_tensor("Y", ir::DataType::f32(), {ir::make_int(1024)}, ir::Access::Out);
    ir::PrimFunc f;
    Kernel() {
        f.name = "hand";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(1)};
        f.threads = kThreads;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
    }
    // A shared f32 buffer of `n` elements at byte `offset` of the arena.
    static ir::Buffer shared(const std::string& name, int64_t n, int64_t offset) {
        ir::BufferNode b = *ir::make_buffer(name, ir::DataType::f32(), {ir::make_int(n)}, ir::Scope::Shared);
        b.shared_offset = offset;
        return ir::make_buffer(std::move(b));
    }
    Expr other() const { return ir::floormod(ir::add(tx, ir::make_int(1)), ir::make_int(kThreads)); }
    sim::Result run(const Stmt& body) {
        f.body = body;
        interp::RunArgs a;
        a.tensors.resize(2);
        a.tensors[0].data.assign(1024, 1.0);
        a.tensors[1].data.assign(1024, std::nan(""));
        sim::Options o;
        o.target = target::find_gpu_target("sm_80");
        REQUIRE(o.target);
        return sim::run(f, a, o);
    }
    bool races(const Stmt& body) {
        auto r = run(body);
        REQUIRE(r.ok);
        for (auto& i : r.issues)
            if (i.kind == sim::IssueKind::Race) return true;
        return false;
    }
    bool clean(const Stmt& body) {
        auto r = run(body);
        std::string all;
        for (auto& i : r.issues) all += i.str() + "\n";
        INFO(ir::print(f) << all);
        return r.clean();
    }
};

// The statements of a body under its allocations.
std::vector<Stmt> top(const Stmt& s) {
    Stmt b = s;
    while (auto a = ir::stmt_as<ir::AllocateNode>(b)) b = a->body;
    if (auto q = ir::stmt_as<ir::SeqNode>(b)) return q->stmts;
    return {b};
}

}  // namespace

TEST_CASE("barriers: a read of another thread's write gets a barrier between them", "[lower][barriers]") {
    Kernel k;
    auto s = Kernel::shared("s", kThreads, 0);
    Stmt body = ir::make_allocate(s, ir::make_seq({ir::make_store(s, {k.tx}, ir::make_load(k.x, {k.tx})),
                                                   ir::make_store(k.y, {k.tx}, ir::make_load(s, {k.other()}))}));
    CHECK(k.races(body));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    REQUIRE(stmts.size() == 3);
    CHECK(stmts[1]->is<ir::BarrierNode>());
    CHECK(count_barriers(placed) == 1);
    CHECK(k.clean(placed));
}

TEST_CASE("barriers: elements each thread keeps to itself need none", "[lower][barriers]") {
    Kernel k;
    auto s = Kernel::shared("s", 4 * kThreads, 0);
    // Register loops as the lowering writes them: thread t's elements 4t .. 4t+3, written
    // by one loop and read back (twice) by another with its own loop and let variables.
    auto reg_loop = [&](const std::function<Stmt(const Expr&)>& body, bool transposed) {
        ir::Var r = ir::make_loop_var("r");
        ir::Var i = ir::make_let_var("i", ir::DataType::index());
        Expr at = transposed ? ir::add(ir::mul(r, ir::make_int(kThreads)), k.tx) : ir::add(ir::mul(k.tx, ir::make_int(4)), r);
        return ir::make_for(r, ir::make_int(0), ir::make_int(4), ir::ForKind::Unroll, ir::make_let(i, at, body(i)));
    };
    Stmt write = reg_loop([&](const Expr& i) { return ir::make_store(s, {i}, ir::make_load(k.x, {i})); }, false);
    Stmt update = reg_loop(
        [&](const Expr& i) { return ir::make_store(s, {i}, ir::mul(ir::make_load(s, {i}), ir::make_float(2.0))); },
        false);
    Stmt same = reg_loop([&](const Expr& i) { return ir::make_store(k.y, {i}, ir::make_load(s, {i})); }, false);
    Stmt body = ir::make_allocate(s, ir::make_seq({ir::make_barrier(), write, ir::make_barrier(), update, same}));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    CHECK(count_barriers(placed) == 0);  // the ones already there are dropped too
    CHECK(k.clean(placed));

    // The same reads in the other order of elements (thread t reads r * 64 + t) cross
    // threads: one barrier, before them.
    Stmt crossed = reg_loop([&](const Expr& i) { return ir::make_store(k.y, {i}, ir::make_load(s, {i})); }, true);
    Stmt body2 = ir::make_allocate(s, ir::make_seq({write, crossed}));
    CHECK(k.races(body2));
    Stmt placed2 = lower::place_barriers(body2, kThreads);
    INFO(ir::print(placed2));
    auto stmts = top(placed2);
    REQUIRE(stmts.size() == 3);
    CHECK(stmts[1]->is<ir::BarrierNode>());
    CHECK(k.clean(placed2));
}

TEST_CASE("barriers: a hazard around a loop's back edge gets a barrier inside the loop", "[lower][barriers]") {
    Kernel k;
    auto s = Kernel::shared("s", kThreads, 0);
    ir::Var it = ir::make_loop_var("it");
    // Each iteration: write my element, read my neighbour's. Iteration n's read and
    // iteration n+1's write of the same element (WAR) are in different threads.
    Stmt loop_body = ir::make_seq(
        {ir::make_store(s, {k.tx}, ir::add(ir::make_load(k.x, {k.tx}), ir::make_cast(ir::DataType::f32(), it))),
         ir::make_store(k.y, {ir::add(ir::mul(it, ir::make_int(kThreads)), k.tx)}, ir::make_load(s, {k.other()}))});
    Stmt body = ir::make_allocate(s, ir::make_for(it, ir::make_int(0), ir::make_int(3), ir::ForKind::Serial, loop_body));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    REQUIRE(stmts.size() == 1);
    auto loop = ir::stmt_as<ir::ForNode>(stmts[0]);
    REQUIRE(loop);
    auto inner = top(loop->body);
    // [barrier (back edge: the previous iteration's reads), write, barrier (RAW), read]
    REQUIRE(inner.size() == 4);
    CHECK(inner[0]->is<ir::BarrierNode>());
    CHECK(inner[1]->is<ir::StoreNode>());
    CHECK(inner[2]->is<ir::BarrierNode>());
    CHECK(k.clean(placed));
    // Without the back-edge barrier the simulator sees the race.
    Stmt no_back = ir::make_allocate(
        s, ir::make_for(it, ir::make_int(0), ir::make_int(3), ir::ForKind::Serial,
                        ir::make_seq({inner[1], inner[2], inner[3]})));
    CHECK(k.races(no_back));
}

TEST_CASE("barriers: buffers the shared plan gives the same bytes conflict like one", "[lower][barriers]") {
    Kernel k;
    // a is read (each thread its own element), then b, at the given offset, is written
    // by the neighbour: the same bytes when the plan overlaps them.
    auto body_at = [&](int64_t b_offset, bool same_thread) {
        auto a = Kernel::shared("a", kThreads, 0);
        auto b = Kernel::shared("b", kThreads, b_offset);
        Expr bi = same_thread ? Expr(k.tx) : k.other();
        return ir::make_allocate(
            a, ir::make_allocate(b, ir::make_seq({ir::make_store(a, {k.tx}, ir::make_load(k.x, {k.tx})),
                                                  ir::make_store(k.y, {k.tx}, ir::make_load(a, {k.tx})),
                                                  ir::make_store(b, {bi}, ir::make_float(3.0)),
                                                  ir::make_store(k.y, {ir::add(k.tx, ir::make_int(kThreads))},
                                                                 ir::make_load(b, {bi}))})));
    };
    Stmt shared_bytes = lower::place_barriers(body_at(0, false), kThreads);
    INFO(ir::print(shared_bytes));
    auto stmts = top(shared_bytes);
    REQUIRE(stmts.size() == 5);
    CHECK(stmts[2]->is<ir::BarrierNode>());  // WAR: a's reads before b's writes
    CHECK(count_barriers(shared_bytes) == 1);
    // Half overlapping: b's first half is a's second half.
    CHECK(count_barriers(lower::place_barriers(body_at(kThreads * 4 / 2, false), kThreads)) == 1);
    // Apart: nothing to order.
    CHECK(count_barriers(lower::place_barriers(body_at(kThreads * 4, false), kThreads)) == 0);
    // The same bytes, but every byte stays with one thread.
    CHECK(count_barriers(lower::place_barriers(body_at(0, true), kThreads)) == 0);
}

TEST_CASE("barriers: never under a thread-dependent condition; inside a uniform one", "[lower][barriers]") {
    Kernel k;
    auto s = Kernel::shared("s", kThreads, 0);
    Stmt write = ir::make_store(s, {k.tx}, ir::make_load(k.x, {k.tx}));
    Stmt half_reads = ir::make_if(ir::lt(k.tx, ir::make_int(kThreads / 2)),
                                  ir::make_seq({ir::make_store(k.y, {k.tx}, ir::make_float(0.0)),
                                                ir::make_store(k.y, {k.tx}, ir::make_load(s, {ir::add(k.tx, ir::make_int(1))}))}));
    Stmt body = ir::make_allocate(s, ir::make_seq({write, half_reads}));
    CHECK(k.races(body));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    REQUIRE(stmts.size() == 3);
    CHECK(stmts[1]->is<ir::BarrierNode>());  // before the `if`, not at the read inside
    CHECK(count_barriers(stmts[2]) == 0);
    CHECK(k.clean(placed));

    // A loop whose trip count depends on the thread: the same.
    ir::Var i = ir::make_loop_var("i");
    Stmt ragged = ir::make_for(
        i, ir::make_int(0), ir::floormod(k.tx, ir::make_int(4)), ir::ForKind::Serial,
        ir::make_store(k.y, {ir::add(ir::mul(i, ir::make_int(kThreads)), k.tx)},
                       ir::make_load(s, {ir::floormod(ir::add(k.tx, ir::add(i, ir::make_int(1))), ir::make_int(kThreads))})));
    Stmt placed2 = lower::place_barriers(ir::make_allocate(s, ir::make_seq({write, ragged})), kThreads);
    INFO(ir::print(placed2));
    auto stmts2 = top(placed2);
    REQUIRE(stmts2.size() == 3);
    CHECK(stmts2[1]->is<ir::BarrierNode>());
    CHECK(count_barriers(stmts2[2]) == 0);
    CHECK(k.clean(placed2));

    // A condition on a register that differs between threads (a fragment's value) is
    // thread-dependent too.
    auto frag = ir::make_buffer("x", ir::DataType::f32(), {ir::make_int(1)}, ir::Scope::Register);
    Stmt on_value = ir::make_allocate(
        frag, ir::make_seq({ir::make_store(frag, {ir::make_int(0)}, ir::make_load(k.x, {k.tx})), write,
                            ir::make_if(ir::lt(ir::make_float(0.5), ir::make_load(frag, {ir::make_int(0)})),
                                        ir::make_store(k.y, {k.tx}, ir::make_load(s, {k.other()})))}));
    Stmt placed4 = lower::place_barriers(ir::make_allocate(s, on_value), kThreads);
    INFO(ir::print(placed4));
    auto stmts4 = top(placed4);
    REQUIRE(stmts4.size() == 4);
    CHECK(stmts4[2]->is<ir::BarrierNode>());
    CHECK(count_barriers(stmts4[3]) == 0);
    CHECK(k.clean(placed4));

    // A block-uniform condition may hold the barrier its own statements need.
    Stmt uniform = ir::make_if(ir::eq(k.f.block_idx[0], ir::make_int(0)),
                               ir::make_seq({write, ir::make_store(k.y, {k.tx}, ir::make_load(s, {k.other()}))}));
    Stmt placed3 = lower::place_barriers(ir::make_allocate(s, uniform), kThreads);
    INFO(ir::print(placed3));
    auto then_stmts = top(top(placed3).at(0)->as<ir::IfNode>()->then_case);
    REQUIRE(then_stmts.size() == 3);
    CHECK(then_stmts[1]->is<ir::BarrierNode>());
    CHECK(k.clean(placed3));
}

TEST_CASE("barriers: global tensors: a read after a write is ordered; atomics only against plain accesses",
          "[lower][barriers]") {
    Kernel k;
    auto add = [&](const Expr& i) {
        return ir::make_atomic_rmw(ir::AtomicOp::Add, k.y, {i}, ir::make_float(1.0));
    };
    Stmt store = ir::make_store(k.y, {k.tx}, ir::make_float(2.0));
    Stmt read_back = ir::make_store(k.y, {ir::add(k.tx, ir::make_int(kThreads))}, ir::make_load(k.y, {k.other()}));
    // Global footprints are not enumerated: a write and a later read of one tensor get a
    // barrier whatever their indices.
    Stmt placed = lower::place_barriers(ir::make_seq({store, read_back}), kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    REQUIRE(stmts.size() == 3);
    CHECK(stmts[1]->is<ir::BarrierNode>());
    // Atomics do not race with each other; two plain writes are not ordered either.
    CHECK(count_barriers(lower::place_barriers(ir::make_seq({add(k.tx), add(k.other())}), kThreads)) == 0);
    CHECK(count_barriers(lower::place_barriers(ir::make_seq({store, store}), kThreads)) == 0);
    // An atomic is a write: a read of the tensor after it waits.
    CHECK(count_barriers(lower::place_barriers(ir::make_seq({add(k.tx), read_back}), kThreads)) == 1);
    // Another tensor is not ordered.
    Stmt read_x = ir::make_store(k.y, {k.tx}, ir::make_load(k.x, {k.other()}));
    CHECK(count_barriers(lower::place_barriers(ir::make_seq({add(k.tx), read_x}), kThreads)) == 0);
}

TEST_CASE("barriers: inside a uniform unrolled loop where its iterations meet", "[lower][barriers]") {
    Kernel k;
    auto s = Kernel::shared("s", kThreads, 0);
    // for it in unroll(2): s[tx] = ...; Y[..] = s[neighbour]  (a user's `unroll` loop)
    ir::Var it = ir::make_loop_var("it");
    Stmt body = ir::make_seq(
        {ir::make_store(s, {k.tx}, ir::add(ir::make_load(k.x, {k.tx}), ir::make_cast(ir::DataType::f32(), it))),
         ir::make_store(k.y, {ir::add(ir::mul(it, ir::make_int(kThreads)), k.tx)}, ir::make_load(s, {k.other()}))});
    Stmt placed = lower::place_barriers(
        ir::make_allocate(s, ir::make_for(it, ir::make_int(0), ir::make_int(2), ir::ForKind::Unroll, body)), kThreads);
    INFO(ir::print(placed));
    auto loop = ir::stmt_as<ir::ForNode>(top(placed).at(0));
    REQUIRE(loop);
    CHECK(count_barriers(loop->body) == 2);
    CHECK(k.clean(placed));
}

TEST_CASE("barriers: mbarriers: one after the inits, none between arrivals", "[lower][barriers]") {
    // The set-up of a pipeline's rings (thread 0 initialises each mbarrier under its own
    // guard), then a loop in which every thread waits on one ring and arrives on the
    // other, as a warp-specialized gemm's consumers do each k-step. The inits are plain
    // stores another thread's use must follow through a barrier; arrivals and waits are
    // atomic operations the mbarrier orders itself, so none between them.
    Kernel k;
    auto bars = [&](const std::string& name, int64_t offset) {
        ir::BufferNode b = *ir::make_buffer(name, ir::DataType::u64(), {ir::make_int(2)}, ir::Scope::Shared);
        b.shared_offset = offset;
        return ir::make_buffer(std::move(b));
    };
    ir::Buffer full = bars("full", 0), empty = bars("empty", 16);
    auto at = [](const ir::Buffer& b, Expr i) { return ir::make_load(b, {std::move(i)}); };
    auto on_thread0 = [&](Stmt s) { return ir::make_if(ir::eq(k.tx, ir::make_int(0)), std::move(s)); };
    std::vector<Stmt> setup;
    for (int64_t i = 0; i < 2; ++i) {
        setup.push_back(on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {kThreads}, {at(full, ir::make_int(i))}, {})));
        setup.push_back(on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {kThreads}, {at(empty, ir::make_int(i))}, {})));
    }
    ir::Var it = ir::make_loop_var("it");
    Expr stage = ir::floormod(it, ir::make_int(2));
    // Every thread arrives on full[stage] and waits for its phase, then arrives on
    // empty[stage] (released for a next round no one waits for here).
    Stmt step = ir::make_seq(
        {ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {at(full, stage)}, {}),
         ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {}, {at(full, stage), ir::floormod(ir::floordiv(it, ir::make_int(2)), ir::make_int(2))}),
         ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {at(empty, stage)}, {}),
         ir::make_store(k.y, {ir::add(ir::mul(it, ir::make_int(kThreads)), k.tx)}, ir::make_load(k.x, {k.tx}))});
    setup.push_back(ir::make_for(it, ir::make_int(0), ir::make_int(4), ir::ForKind::Serial, step));
    Stmt body = ir::make_allocate(full, ir::make_allocate(empty, ir::make_seq(setup)));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    REQUIRE(stmts.size() == 6);
    for (size_t i = 0; i < 4; ++i) CHECK(stmts[i]->is<ir::IfNode>());
    CHECK(stmts[4]->is<ir::BarrierNode>());
    CHECK(count_barriers(placed) == 1);
    CHECK(k.clean(placed));
}

TEST_CASE("barriers: a double buffer's stages: one barrier an iteration, before the reads", "[lower][barriers]") {
    // software-pipeline's register-staged form: stage s[(it + 1) % 2] written (each
    // thread its own element) after the iteration reads s[it % 2] (a neighbour's
    // element), in a loop of run-time length (the stage index is not enumerable).
    Kernel k;
    ir::Var n = ir::make_size_var("n");
    k.f.params.push_back(ir::Param{ir::ParamKind::Size, nullptr, n});
    ir::BufferNode sn = *ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(2), ir::make_int(kThreads)},
                                        ir::Scope::Shared);
    sn.shared_offset = 0;
    ir::Buffer s = ir::make_buffer(std::move(sn));
    ir::Var it = ir::make_loop_var("it");
    Expr next = ir::add(it, ir::make_int(1));
    auto fill = [&](const Expr& stage, const Expr& iter) {
        return ir::make_store(s, {stage, k.tx},
                              ir::add(ir::make_load(k.x, {k.tx}), ir::make_cast(ir::DataType::f32(), iter)));
    };
    Stmt loop_body = ir::make_seq(
        {ir::make_store(k.y, {ir::add(ir::mul(it, ir::make_int(kThreads)), k.tx)},
                        ir::make_load(s, {ir::floormod(it, ir::make_int(2)), k.other()})),
         ir::make_if(ir::lt(next, n), fill(ir::floormod(next, ir::make_int(2)), next), nullptr)});
    Stmt body = ir::make_allocate(
        s, ir::make_seq({fill(ir::make_int(0), ir::make_int(0)),
                         ir::make_for(it, ir::make_int(0), n, ir::ForKind::Serial, loop_body)}));
    Stmt placed = lower::place_barriers(body, kThreads);
    INFO(ir::print(placed));
    auto stmts = top(placed);
    // [prologue fill, barrier (the fill before the first reads), loop]
    REQUIRE(stmts.size() == 3);
    CHECK(stmts[1]->is<ir::BarrierNode>());
    auto loop = ir::stmt_as<ir::ForNode>(stmts[2]);
    REQUIRE(loop);
    auto inner = top(loop->body);
    // [barrier (the previous iteration's fill of this stage), read, fill of the other]
    REQUIRE(inner.size() == 3);
    CHECK(inner[0]->is<ir::BarrierNode>());
    CHECK(count_barriers(placed) == 2);
    for (int64_t len : {1, 2, 5}) {
        k.f.body = placed;
        interp::RunArgs a;
        a.tensors.resize(2);
        a.tensors[0].data.assign(1024, 1.0);
        a.tensors[1].data.assign(1024, std::nan(""));
        a.sizes = {len};
        sim::Options o;
        o.target = target::find_gpu_target("gfx942");
        REQUIRE(o.target);
        auto r = sim::run(k.f, a, o);
        std::string all;
        for (auto& i : r.issues) all += i.str() + "\n";
        INFO("n = " << len << "\n" << all);
        CHECK(r.clean());
        // Without the loop's barrier, iteration it + 1's reads race iteration it's fill.
        if (len >= 2) {
            k.f.body = ir::make_allocate(
                s, ir::make_seq({stmts[0], stmts[1],
                                 ir::make_for(it, ir::make_int(0), n, ir::ForKind::Serial,
                                              ir::make_seq({inner[1], inner[2]}))}));
            auto bad = sim::run(k.f, a, o);
            bool race = false;
            for (auto& i : bad.issues) race |= i.kind == sim::IssueKind::Race;
            CHECK(race);
        }
    }
    // A fill of the stage the iteration reads ((it + 2) % 2 = it % 2) conflicts still:
    // its barrier goes between the read and the fill.
    Stmt same = ir::make_allocate(
        s, ir::make_seq({fill(ir::make_int(0), ir::make_int(0)),
                         ir::make_for(it, ir::make_int(0), n, ir::ForKind::Serial,
                                      ir::make_seq({ir::make_store(k.y, {ir::add(ir::mul(it, ir::make_int(kThreads)), k.tx)},
                                                                   ir::make_load(s, {ir::floormod(it, ir::make_int(2)), k.other()})),
                                                    fill(ir::floormod(ir::add(it, ir::make_int(2)), ir::make_int(2)), next)}))}));
    Stmt same_placed = lower::place_barriers(same, kThreads);
    INFO(ir::print(same_placed));
    auto same_loop = ir::stmt_as<ir::ForNode>(top(same_placed).back());
    REQUIRE(same_loop);
    auto same_inner = top(same_loop->body);
    REQUIRE(same_inner.size() == 3);
    CHECK(same_inner[1]->is<ir::BarrierNode>());
}

TEST_CASE("barriers: footprints are shared by accesses written alike, never across thread counts",
          "[lower][barriers]") {
    // Thread t writes s[t], then reads s[t mod 32]: its own element with 32 threads, another
    // thread's with 64. Each body is built anew (new variables and nodes), so only the
    // process-wide cache of footprints, keyed by programs and thread count, links them.
    auto body = [] {
        ir::Var tx = ir::make_thread_idx_var(0);
        auto s = Kernel::shared("s", 64, 0);
        ir::Buffer x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(64)}, ir::Access::In);
        ir::Buffer y = ir::make_tensor("Y", ir::DataType::f32(), {ir::make_int(64)}, ir::Access::Out);
        return ir::make_allocate(
            s,
            ir::make_seq({ir::make_store(s, {tx}, ir::make_load(x, {tx})),
                          ir::make_store(y, {tx}, ir::make_load(s, {ir::floormod(tx, ir::make_int(32))}))}));
    };
    CHECK(count_barriers(lower::place_barriers(body(), 32)) == 0);
    CHECK(count_barriers(lower::place_barriers(body(), 64)) == 1);
    CHECK(count_barriers(lower::place_barriers(body(), 32)) == 0);
    CHECK(count_barriers(lower::place_barriers(body(), 64)) == 1);
}
