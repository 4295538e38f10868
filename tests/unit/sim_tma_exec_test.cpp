// The simulator running hand-built thread-level IR with mbarriers and TMA box copies
// (ir.h: MbarrierInit / Arrive / Wait, TmaLoad; issue 12): a box over the ragged corner of
// a tensor lands with its zero fill once the waiting threads see the phase complete, and
// each way of getting the synchronisation wrong is reported at its line: no wait, a wait
// on the wrong parity, an arrive without the expect-tx (the phase completes before the
// bytes), a missing arrival (the wait would hang), no init, and a refill of the box
// while other threads still read it in the same barrier epoch. Then warp roles
// (sim/warp_roles.cpp): a producer warpgroup that waits for the consumers before it issues
// the copy they wait for runs as a coroutine of theirs; without the consumers' arrival the
// producer's wait is reported as a hang and the simulation still ends. Last, TMA stores
// (TmaStore, BulkCommit, BulkWaitRead): the box written inside the tensor only, and a
// missing or misplaced fence.proxy.async, or a rewrite of the source before the
// wait_group.read, reported.
#include <catch2/catch.hpp>
#include <cmath>

#include "interp/interp.h"
#include "sim/sim.h"
#include "target/target.h"

using namespace tilec;

namespace {

SourceLoc line(uint32_t l) {
    return SourceLoc{0, l, 5};
}

// X: f32[20, 12] (rows 48 bytes apart), Y: f32[128]; 128 threads, one block. The box is
// 16 (columns) x 8 (rows) at X[14, 4]: rows 14..19 and columns 4..11 lie inside.
struct TmaKernel {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(20), ir::make_int(12)}, ir::Access::In);
    ir::Buffer y = ir::make_tensor("Y", ir::DataType::f32(), {ir::make_int(128)}, ir::Access::Out);
    ir::Buffer bar = ir::make_buffer("bar", ir::DataType::u64(), {ir::make_int(1)}, ir::Scope::Shared);
    ir::Buffer s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(8), ir::make_int(16)}, ir::Scope::Shared);
    ir::Expr bar0() { return ir::make_load(bar, {ir::make_int(0)}); }
    ir::Stmt on_thread0(ir::Stmt s0, uint32_t l) { return ir::make_if(ir::eq(tx, ir::make_int(0)), s0, nullptr, line(l)); }
    ir::Stmt init(int64_t count = 1) {
        return on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {count}, {bar0()}, {}, line(2)), 2);
    }
    ir::Stmt arrive(int64_t tx_bytes) {
        return ir::make_machine_op(ir::MachineOp::MbarrierArrive, {tx_bytes}, {bar0()}, {}, line(4));
    }
    ir::Stmt tma() {
        return ir::make_machine_op(ir::MachineOp::TmaLoad, {0, 16, 8}, {ir::make_load(s, {ir::make_int(0), ir::make_int(0)})},
                                   {ir::make_load(x, {ir::make_int(14), ir::make_int(4)}), bar0()}, line(5));
    }
    ir::Stmt wait(int64_t parity) {
        return ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {}, {bar0(), ir::make_int(parity)}, line(6));
    }
    ir::Stmt read_all() {
        return ir::make_store(y, {tx}, ir::make_load(s, {ir::floordiv(tx, ir::make_int(16)), ir::floormod(tx, ir::make_int(16))}, line(7)),
                              line(7));
    }
    interp::RunArgs a;
    int64_t threads = 128;
    std::vector<ir::Buffer> more_shared;  // allocated around the body too
    sim::Result run(std::vector<ir::Stmt> stmts) {
        ir::PrimFunc f;
        f.name = "tma";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(1)};
        f.threads = threads;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
        f.body = ir::make_allocate(bar, ir::make_allocate(s, ir::make_seq(std::move(stmts))));
        for (auto& b : more_shared) f.body = ir::make_allocate(b, f.body);
        a = interp::RunArgs{};
        a.tensors.resize(2);
        for (int i = 0; i < 240; ++i) a.tensors[0].data.push_back(1.0 + i);
        a.tensors[1].data.assign(128, std::nan(""));
        sim::Options o;
        o.target = target::find_gpu_target("sm_90a");
        REQUIRE(o.target);
        return sim::run(f, a, o);
    }
    double expected(int t) const {
        int r = 14 + t / 16, c = 4 + t % 16;
        return r < 20 && c < 12 ? 1.0 + r * 12 + c : 0.0;
    }
};

bool has(const sim::Result& r, sim::IssueKind k, uint32_t l, const char* text) {
    for (const auto& i : r.issues)
        if (i.kind == k && i.loc.line == l && i.message.find(text) != std::string::npos) return true;
    return false;
}

// Thread 0 issues `tma` (the box above) after the init; every thread waits, then reads
// its element: no finding, the box's values and zero fill.
void check_box_lands(TmaKernel& k, ir::Stmt tma) {
    auto r = k.run({k.init(), ir::make_barrier(line(3)), k.on_thread0(ir::make_seq({k.arrive(512), std::move(tma)}), 4),
                    k.wait(0), k.read_all()});
    REQUIRE(r.ok);
    for (const auto& i : r.issues) INFO(i.message);
    CHECK(r.issues.empty());
    for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[static_cast<size_t>(t)] == k.expected(t));
}

}  // namespace

TEST_CASE("sim: a TMA box lands with its zero fill at the mbarrier wait", "[sim][tma]") {
    TmaKernel k;
    check_box_lands(k, k.tma());
}

TEST_CASE("sim: mbarrier and TMA mistakes are reported at their lines", "[sim][tma]") {
    TmaKernel k;
    auto issue0 = [&](bool init = true) {
        std::vector<ir::Stmt> v;
        if (init) v.push_back(k.init());
        v.push_back(ir::make_barrier(line(3)));
        return v;
    };
    SECTION("no wait: the reads find the bytes in flight") {
        auto v = issue0();
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        v.push_back(k.read_all());
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::AsyncCopy, 7, "TMA copy into it is in flight"));
    }
    SECTION("a wait on the preceding phase's parity returns at once") {
        auto v = issue0();
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        v.push_back(k.wait(1));
        v.push_back(k.read_all());
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::AsyncCopy, 7, "TMA copy into it is in flight"));
    }
    SECTION("an arrive without the expect-tx completes the phase before the bytes") {
        auto v = issue0();
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(0), k.tma()}), 4));
        v.push_back(k.wait(0));
        v.push_back(k.read_all());
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::AsyncCopy, 7, "in flight"));
    }
    SECTION("a missing arrival: the wait would hang") {
        auto v = issue0();
        v.push_back(k.on_thread0(k.tma(), 4));
        v.push_back(k.wait(0));
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Mbarrier, 6, "would hang"));
    }
    SECTION("no init") {
        auto v = issue0(false);
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        v.push_back(k.wait(0));
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Mbarrier, 4, "not initialised"));
    }
    SECTION("a use of the mbarrier by other threads before a barrier orders its init") {
        // Thread 0's init is a plain store: the others' waits need the barrier after it
        // (and thread 0's own use does not).
        auto v = std::vector<ir::Stmt>{k.init(), k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4), k.wait(0)};
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Mbarrier, 6, "initialised with no barrier since"));
        CHECK_FALSE(has(r, sim::IssueKind::Mbarrier, 4, "initialised with no barrier since"));
        auto w = issue0();
        w.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        w.push_back(k.wait(0));
        w.push_back(k.read_all());
        CHECK(k.run(w).clean());
    }
    SECTION("a refill while other threads read the box in the same barrier epoch") {
        auto v = issue0();
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        v.push_back(k.wait(0));
        v.push_back(k.read_all());
        // The next phase's copy into the same box, with no barrier after the reads.
        v.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        v.push_back(k.wait(1));
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Race, 5, "race"));
        // With the barrier, the same sequence is clean.
        auto w = issue0();
        w.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        w.push_back(k.wait(0));
        w.push_back(k.read_all());
        w.push_back(ir::make_barrier(line(8)));
        w.push_back(k.on_thread0(ir::make_seq({k.arrive(512), k.tma()}), 4));
        w.push_back(k.wait(1));
        w.push_back(k.read_all());
        auto ok = k.run(w);
        REQUIRE(ok.ok);
        for (const auto& i : ok.issues) INFO(i.message);
        CHECK(ok.issues.empty());
    }
}

// 256 threads: the producer warpgroup (128..255) waits on `ready` (128 consumer arrivals)
// before thread 128 issues the box; the consumers (0..127) arrive on `ready`, then wait
// for the box and read it. In lock step the producer's branch would run first and wait
// forever; as roles, the consumers' arrivals let it go on.
TEST_CASE("sim: producer and consumer warp roles run as coroutines", "[sim][tma][warp_roles]") {
    TmaKernel k;
    k.threads = 256;
    ir::Buffer ready = ir::make_buffer("ready", ir::DataType::u64(), {ir::make_int(1)}, ir::Scope::Shared);
    k.more_shared = {ready};
    ir::Expr ready0 = ir::make_load(ready, {ir::make_int(0)});
    auto roles = [&](bool consumers_arrive) {
        std::vector<ir::Stmt> v{k.init(),
                                k.on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {128}, {ready0}, {}, line(3)), 3),
                                ir::make_barrier(line(3))};
        ir::Stmt producer = ir::make_seq(
            {ir::make_machine_op(ir::MachineOp::SetMaxNReg, {0, 40}, {}, {}, line(10)),
             ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {}, {ready0, ir::make_int(0)}, line(11)),
             ir::make_if(ir::eq(k.tx, ir::make_int(128)), ir::make_seq({k.arrive(512), k.tma()}), nullptr, line(12))});
        std::vector<ir::Stmt> c{ir::make_machine_op(ir::MachineOp::SetMaxNReg, {1, 232}, {}, {}, line(13))};
        if (consumers_arrive) c.push_back(ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {ready0}, {}, line(14)));
        c.push_back(k.wait(0));
        c.push_back(k.read_all());
        v.push_back(ir::make_if(ir::ge(k.tx, ir::make_int(128)), producer, ir::make_seq(c), line(9)));
        return v;
    };
    SECTION("the consumers' arrival releases the producer, whose box they then read") {
        auto r = k.run(roles(true));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
        for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[t] == k.expected(t));
    }
    SECTION("without it, the producer would hang: reported, and the run goes on") {
        // Both roles wait with nothing left to change: the producer gives up first (its
        // wait is reported), issues the box, and the consumers' wait then passes.
        auto r = k.run(roles(false));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Mbarrier, 11, "would hang"));
        CHECK_FALSE(has(r, sim::IssueKind::Mbarrier, 6, "would hang"));
    }
}

// A tensor map's dimensions are in memory order, dimension 0 the contiguous one (CUDA
// driver API, cuTensorMapEncodeTiled: globalDim[0] is the innermost, globalStrides start
// at dimension 1). XT: f32[12, 20] with strides (1, 12) is X transposed in the same
// memory; a tma_load naming map dimensions {0, 1} (ir.h, TmaLoad) with the box 16 (along
// XT's dimension 0) x 8 at XT[4, 14] lands XT[4 + c, 14 + r] = X[14 + r, 4 + c] at s[r, c]:
// the box of the row-major test above, zero-filled past dimension 0's 12 and dimension
// 1's 20.
TEST_CASE("sim: a TMA box of a transposed tensor follows its memory order", "[sim][tma]") {
    TmaKernel k;
    k.x = ir::make_tensor("XT", ir::DataType::f32(), {ir::make_int(12), ir::make_int(20)}, ir::Access::In, {},
                          {ir::make_int(1), ir::make_int(12)});
    auto tma = [&](std::vector<int64_t> imm) {
        return ir::make_machine_op(ir::MachineOp::TmaLoad, std::move(imm), {ir::make_load(k.s, {ir::make_int(0), ir::make_int(0)})},
                                   {ir::make_load(k.x, {ir::make_int(4), ir::make_int(14)}), k.bar0()}, line(5));
    };
    check_box_lands(k, tma({0, 16, 8, 0, 1}));
}

// setmaxnreg is warpgroup-collective (PTX ISA, "setmaxnreg": .sync.aligned, every thread
// of the warpgroup executes the same instruction); split-warp-roles' named barrier is
// the consumers' alone, threads 0 .. n-1 (its count n), and orders their shared accesses
// as the block barrier does.
TEST_CASE("sim: setmaxnreg and the consumers' named barrier are checked", "[sim][warp_roles]") {
    TmaKernel k;
    ir::Buffer sh = ir::make_buffer("sh", ir::DataType::f32(), {ir::make_int(128)}, ir::Scope::Shared);
    k.more_shared = {sh};
    auto write_then_read_neighbour = [&](std::vector<ir::Stmt> between) {
        std::vector<ir::Stmt> v{ir::make_store(sh, {k.tx}, ir::make_float(2.0, ir::DataType::f32()), line(20))};
        for (auto& b : between) v.push_back(b);
        v.push_back(ir::make_store(k.y, {k.tx},
                                   ir::make_load(sh, {ir::floormod(ir::add(k.tx, ir::make_int(1)), ir::make_int(128))}, line(22)),
                                   line(22)));
        return v;
    };
    SECTION("a named barrier of all 128 orders the exchange") {
        auto r = k.run(write_then_read_neighbour({ir::make_machine_op(ir::MachineOp::NamedBarrier, {1, 128}, {}, {}, line(21))}));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
        for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[static_cast<size_t>(t)] == 2.0);
    }
    SECTION("without it, the read races with the neighbour's write") {
        auto r = k.run(write_then_read_neighbour({}));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Race, 22, "race"));
    }
    // `op` at line `l` executed by threads 0 .. threads - 1 only.
    auto by_first = [&](int64_t threads, ir::MachineOp op, std::vector<int64_t> imm, uint32_t l) {
        return k.run({ir::make_if(ir::lt(k.tx, ir::make_int(threads)), ir::make_machine_op(op, std::move(imm), {}, {}, line(l)),
                                  nullptr, line(l))});
    };
    SECTION("a named barrier reached by part of its threads is reported") {
        auto r = by_first(64, ir::MachineOp::NamedBarrier, {1, 128}, 21);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::BarrierDivergence, 21, "reached by 64 threads"));
    }
    SECTION("setmaxnreg by part of a warpgroup is reported") {
        auto r = by_first(96, ir::MachineOp::SetMaxNReg, {1, 232}, 23);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::BarrierDivergence, 23, "part of a warpgroup"));
    }
}

// Two consumer warpgroups (0..127, 128..255) beside a producer (256..383) that hand
// named barriers to each other (PTX ISA, barrier{.cta}: .arrive counts toward the
// barrier's thread count without waiting, .sync waits until the count is reached). A
// warpgroup's barrier.sync that the other's later barrier.arrive completes deadlocks in
// lock step; the simulator runs such warpgroups as coroutines, so it passes.
TEST_CASE("sim: ping-pong consumer warpgroups interleave at named barriers", "[sim][warp_roles][named_barrier]") {
    TmaKernel k;
    k.threads = 384;
    auto first_wg = [&] { return ir::lt(k.tx, ir::make_int(128)); };
    auto op = [&](ir::MachineOp o, int64_t id, uint32_t l) {
        return ir::make_machine_op(o, {id, 256}, {}, {}, line(l));
    };
    auto roles = [&](std::vector<ir::Stmt> consumers) {
        consumers.insert(consumers.begin(), ir::make_machine_op(ir::MachineOp::SetMaxNReg, {1, 232}, {}, {}, line(13)));
        // (A split's branches are sequences that start with setmaxnreg: two statements.)
        ir::Stmt producer = ir::make_seq({ir::make_machine_op(ir::MachineOp::SetMaxNReg, {0, 40}, {}, {}, line(10)),
                                          ir::make_if(ir::eq(k.tx, ir::make_int(256)), ir::make_seq({}), nullptr, line(11))});
        return std::vector<ir::Stmt>{
            ir::make_if(ir::ge(k.tx, ir::make_int(256)), producer, ir::make_seq(consumers), line(9))};
    };
    SECTION("a sync completed by the other warpgroup's later arrive") {
        auto r = k.run(roles({ir::make_if(first_wg(), op(ir::MachineOp::NamedBarrier, 2, 20), nullptr, line(20)),
                              ir::make_if(first_wg(), ir::make_seq({}), op(ir::MachineOp::BarrierArrive, 2, 21), line(21))}));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) UNSCOPED_INFO(i.message);
        CHECK(r.issues.empty());
    }
    SECTION("turns: each warpgroup syncs on its own barrier and arrives on the other's") {
        std::vector<ir::Stmt> c{ir::make_if(first_wg(), ir::make_seq({}), op(ir::MachineOp::BarrierArrive, 2, 20), line(20))};
        for (int round = 0; round < 3; ++round) {
            c.push_back(ir::make_if(first_wg(), op(ir::MachineOp::NamedBarrier, 2, 21), op(ir::MachineOp::NamedBarrier, 3, 21), line(21)));
            c.push_back(ir::make_if(first_wg(), op(ir::MachineOp::BarrierArrive, 3, 22), op(ir::MachineOp::BarrierArrive, 2, 22), line(22)));
        }
        c.push_back(ir::make_if(first_wg(), op(ir::MachineOp::NamedBarrier, 2, 23), nullptr, line(23)));
        auto r = k.run(roles(c));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) UNSCOPED_INFO(i.message);
        CHECK(r.issues.empty());
        // Without the final sync, warpgroup 1's last arrive stays on barrier 2.
        c.pop_back();
        auto left = k.run(roles(c));
        REQUIRE(left.ok);
        CHECK(has(left, sim::IssueKind::BarrierDivergence, 0, "named barrier 2 left with 128 of its 256 arrivals"));
    }
    SECTION("a sync nothing completes is reported as a hang, and the run goes on") {
        auto r = k.run(roles({ir::make_if(first_wg(), op(ir::MachineOp::NamedBarrier, 2, 20), nullptr, line(20)),
                              ir::make_if(first_wg(), op(ir::MachineOp::NamedBarrier, 3, 21), op(ir::MachineOp::BarrierArrive, 3, 21), line(21))}));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::BarrierDivergence, 20, "would hang"));
        CHECK_FALSE(has(r, sim::IssueKind::BarrierDivergence, 21, "would hang"));
    }
    SECTION("counts that differ within a phase are reported") {
        auto r = k.run(roles({ir::make_if(first_wg(), ir::make_machine_op(ir::MachineOp::BarrierArrive, {4, 512}, {}, {}, line(20)),
                                          op(ir::MachineOp::NamedBarrier, 4, 21), line(20))}));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::BarrierDivergence, 21, "another thread count"));
    }
}

namespace {

// TMA stores (ir.h: TmaStore, BulkCommit, BulkWaitRead): 128 threads write an 8 x 16 f32
// staging tile, thread 0 stores it as one box at Z[14, 4] of Z: f32[20, 12], whose rows
// 14..19 and columns 4..11 lie inside.
struct TmaStoreKernel {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer z = ir::make_tensor("Z", ir::DataType::f32(), {ir::make_int(20), ir::make_int(12)}, ir::Access::Out);
    ir::Buffer s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(128)}, ir::Scope::Shared);
    ir::Stmt write_all(uint32_t l, double add = 0) {
        return ir::make_store(s, {tx}, ir::add(ir::make_cast(ir::DataType::f32(), tx), ir::make_float(add, ir::DataType::f32())),
                              line(l));
    }
    ir::Stmt fence() { return ir::make_machine_op(ir::MachineOp::FenceProxyAsync, {}, {}, {}, line(3)); }
    ir::Stmt store(bool wait) {
        std::vector<ir::Stmt> v{
            ir::make_machine_op(ir::MachineOp::TmaStore, {0, 16, 8}, {ir::make_load(z, {ir::make_int(14), ir::make_int(4)})},
                                {ir::make_load(s, {ir::make_int(0)})}, line(5)),
            ir::make_machine_op(ir::MachineOp::BulkCommit, {}, {}, {}, line(5))};
        if (wait) v.push_back(ir::make_machine_op(ir::MachineOp::BulkWaitRead, {0}, {}, {}, line(6)));
        return ir::make_if(ir::eq(tx, ir::make_int(0)), ir::make_seq(v), nullptr, line(5));
    }
    interp::RunArgs a;
    sim::Result run(std::vector<ir::Stmt> stmts) {
        ir::PrimFunc f;
        f.name = "tma_store";
        f.params = {ir::Param{ir::ParamKind::Tensor, z, nullptr}};
        f.grid = {ir::make_int(1)};
        f.threads = 128;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
        f.body = ir::make_allocate(s, ir::make_seq(std::move(stmts)));
        a = interp::RunArgs{};
        a.tensors.resize(1);
        a.tensors[0].data.assign(240, std::nan(""));
        sim::Options o;
        o.target = target::find_gpu_target("sm_90a");
        REQUIRE(o.target);
        return sim::run(f, a, o);
    }
};

}  // namespace

TEST_CASE("sim: a TMA store writes the box's elements inside the tensor and nothing else", "[sim][tma]") {
    TmaStoreKernel k;
    auto r = k.run({k.write_all(2), k.fence(), ir::make_barrier(line(4)), k.store(true)});
    REQUIRE(r.ok);
    for (const auto& i : r.issues) INFO(i.message);
    CHECK(r.issues.empty());
    for (int row = 0; row < 20; ++row)
        for (int col = 0; col < 12; ++col) {
            double v = k.a.tensors[0].data[static_cast<size_t>(row * 12 + col)];
            if (row >= 14 && col >= 4) CHECK(v == (row - 14) * 16 + (col - 4));
            else CHECK(std::isnan(v));  // outside the box: untouched
        }
}

TEST_CASE("sim: TMA store mistakes are reported at their lines", "[sim][tma]") {
    TmaStoreKernel k;
    SECTION("no fence.proxy.async: the async proxy may not see the stores") {
        auto r = k.run({k.write_all(2), ir::make_barrier(line(4)), k.store(true)});
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::ProxyFence, 5, "tma_store reads 's' element"));
    }
    SECTION("a fence after the barrier orders nothing before thread 0's store") {
        auto r = k.run({k.write_all(2), ir::make_barrier(line(4)), k.fence(), k.store(true)});
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::ProxyFence, 5, "which thread 1 stored"));
        CHECK_FALSE(has(r, sim::IssueKind::ProxyFence, 5, "which thread 0 stored"));  // its own fence orders its stores
    }
    SECTION("rewriting the staging tile before the wait_group.read") {
        auto r = k.run({k.write_all(2), k.fence(), ir::make_barrier(line(4)), k.store(false), ir::make_barrier(line(7)),
                        k.write_all(8, 1)});
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::AsyncRead, 8, "while a TMA store that reads it is in flight"));
    }
    SECTION("after the wait_group.read the tile may be written again") {
        auto r = k.run({k.write_all(2), k.fence(), ir::make_barrier(line(4)), k.store(true), ir::make_barrier(line(7)),
                        k.write_all(8, 1)});
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
    }
}
