// The simulator running hand-built thread-level IR in thread-block clusters (issue 12;
// sim/cluster_exec.cpp): two CTAs of a 2x1x1 cluster each issue half of one box with
// .multicast::cluster to both, each CTA's mbarrier expecting the whole tile's bytes (PTX
// ISA cp.async.bulk.tensor: data and mbarrier signal land at the same CTA-relative
// offsets in every CTA of the ctaMask); both CTAs read the whole box. The cluster barrier
// after the mbarrier init and before the exit, as the PTX ISA and the CUDA guide ask; each
// way of getting it wrong reported: no barrier after the init (a peer's multicast or
// remote arrive finds the object not initialised), none before the exit (a peer's remote
// operation unordered before the exit), a refill of a peer's stage its consumers have not
// waited for, a ctaMask naming a CTA outside the cluster, a grid that is not a multiple
// of the cluster. And a 2x2x1 cluster (gemm's B multicast): each CTA issues half of the
// box to the CTAs of its cluster column (ctaMask 0b0101 << %cluster_ctaid.x, ranks x + 2 y),
// and every CTA gets the whole box; with the row's mask instead, a CTA gets the same half
// twice and never the other (both reported). And a stage refilled once its consumers
// released it: with every CTA's consumers arriving on each peer's empty mbarrier, quiet;
// with only their own CTA's (the empty ring of a cluster that forgot its peers), the
// refill's multicast into the peer is reported although this run's order let it pass.
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

// X: f32[20, 12]; Y: f32[512] (128 per CTA); 128 threads a CTA, grid 2 in one cluster
// (or grid_x x grid_y in clusters of `cluster`).
// The box is 16 (columns) x 8 (rows) at X[14, 4]; rank r issues rows 4r..4r+3 of it.
struct ClusterKernel {
    ir::Var tx = ir::make_thread_idx_var(0);
    std::array<ir::Var, 3> block = ir::make_block_idx_vars();
    ir::Buffer x = ir::make_tensor("X", ir::DataType::f32(), {ir::make_int(20), ir::make_int(12)}, ir::Access::In);
    ir::Buffer y = ir::make_tensor("Y", ir::DataType::f32(), {ir::make_int(512)}, ir::Access::Out);
    // bar[0]: the full mbarrier; bar[1]: an empty one (the refill tests).
    ir::Buffer bar = ir::make_buffer("bar", ir::DataType::u64(), {ir::make_int(2)}, ir::Scope::Shared);
    ir::Buffer s = ir::make_buffer("s", ir::DataType::f32(), {ir::make_int(8), ir::make_int(16)}, ir::Scope::Shared);
    ir::Expr rank() { return ir::floormod(block[0], ir::make_int(2)); }
    ir::Expr bar0() { return ir::make_load(bar, {ir::make_int(0)}); }
    ir::Stmt on_thread0(ir::Stmt s0, uint32_t l) { return ir::make_if(ir::eq(tx, ir::make_int(0)), s0, nullptr, line(l)); }
    ir::Stmt init() { return on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {1}, {bar0()}, {}, line(2)), 2); }
    ir::Stmt cluster_sync(uint32_t l) {
        return ir::make_seq({ir::make_machine_op(ir::MachineOp::ClusterArrive, {}, {}, {}, line(l)),
                             ir::make_machine_op(ir::MachineOp::ClusterWait, {}, {}, {}, line(l))});
    }
    ir::Stmt arrive(int64_t tx_bytes) {
        return ir::make_machine_op(ir::MachineOp::MbarrierArrive, {tx_bytes}, {bar0()}, {}, line(4));
    }
    // This rank's half, multicast to the CTAs of `mask`.
    ir::Stmt half(int64_t mask, uint32_t l = 5) { return half_of(rank(), ir::make_int(mask), l); }
    // Half `part` (0 or 1) of the box, multicast to the CTAs of `mask`.
    ir::Stmt half_of(ir::Expr part, ir::Expr mask, uint32_t l = 5) {
        ir::Expr row = ir::mul(std::move(part), ir::make_int(4));
        return ir::make_machine_op(ir::MachineOp::TmaLoad, {0, 16, 4}, {ir::make_load(s, {row, ir::make_int(0)})},
                                   {ir::make_load(x, {ir::add(ir::make_int(14), row), ir::make_int(4)}), bar0(),
                                    std::move(mask)},
                                   line(l));
    }
    ir::Stmt wait() { return ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {}, {bar0(), ir::make_int(0)}, line(6)); }
    ir::Stmt read_all() {
        ir::Expr cta = ir::add(block[0], ir::mul(block[1], ir::make_int(grid)));
        return ir::make_store(y, {ir::add(ir::mul(cta, ir::make_int(128)), tx)},
                              ir::make_load(s, {ir::floordiv(tx, ir::make_int(16)), ir::floormod(tx, ir::make_int(16))}, line(7)),
                              line(7));
    }
    interp::RunArgs a;
    int64_t grid = 2, grid_y = 1;
    std::string cluster = "2x1x1";
    sim::Result run(std::vector<ir::Stmt> stmts) {
        ir::PrimFunc f;
        f.name = "mc";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(grid), ir::make_int(grid_y)};
        f.threads = 128;
        f.block_idx = block;
        f.level = ir::FuncLevel::Thread;
        f.attrs = {{"cluster", cluster}};
        f.body = ir::make_allocate(bar, ir::make_allocate(s, ir::make_seq(std::move(stmts))));
        a = interp::RunArgs{};
        a.tensors.resize(2);
        for (int i = 0; i < 240; ++i) a.tensors[0].data.push_back(1.0 + i);
        a.tensors[1].data.assign(512, std::nan(""));
        sim::Options o;
        o.target = target::find_gpu_target("sm_90a");
        REQUIRE(o.target);
        return sim::run(f, a, o);
    }
    double expected(int t) const {
        int r = 14 + t / 16, c = 4 + t % 16;
        return r < 20 && c < 12 ? 1.0 + r * 12 + c : 0.0;
    }
    // The whole protocol; `skip` leaves out one step by name.
    std::vector<ir::Stmt> program(const std::string& skip = "") {
        std::vector<ir::Stmt> v{init()};
        if (skip != "start") v.push_back(cluster_sync(3));
        v.push_back(on_thread0(ir::make_seq({arrive(512), half(3)}), 4));
        v.push_back(wait());
        v.push_back(read_all());
        if (skip != "exit") v.push_back(cluster_sync(8));
        return v;
    }
};

bool has(const sim::Result& r, sim::IssueKind k, const char* text) {
    for (const auto& i : r.issues)
        if (i.kind == k && i.message.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("sim cluster: two CTAs' multicast halves land whole in both", "[sim][cluster]") {
    ClusterKernel k;
    auto r = k.run(k.program());
    REQUIRE(r.ok);
    for (const auto& i : r.issues) INFO(i.message);
    CHECK(r.issues.empty());
    CHECK(r.blocks_run == 2);
    for (int b = 0; b < 2; ++b)
        for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[static_cast<size_t>(b * 128 + t)] == k.expected(t));
}

TEST_CASE("sim cluster: each CTA's mbarrier waits for the peer's half", "[sim][cluster]") {
    // Only rank 0 issues (its half to both): the rank-1 half never comes; both CTAs' waits
    // would hang, and are reported.
    ClusterKernel k;
    std::vector<ir::Stmt> v{k.init(), k.cluster_sync(3),
                            k.on_thread0(ir::make_seq({k.arrive(512),
                                                       ir::make_if(ir::eq(k.rank(), ir::make_int(0)), k.half(3), nullptr, line(5))}),
                                         4),
                            k.wait(), k.read_all(), k.cluster_sync(8)};
    auto r = k.run(v);
    REQUIRE(r.ok);
    CHECK(has(r, sim::IssueKind::Mbarrier, "nothing can complete"));
}

TEST_CASE("sim cluster: mistakes of the cluster protocol are reported", "[sim][cluster]") {
    ClusterKernel k;
    SECTION("no cluster barrier after the mbarrier init: the peer's object is not initialised yet") {
        auto r = k.run(k.program("start"));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "has not initialised"));
    }
    SECTION("no cluster barrier before the exit: a peer's multicast is not ordered before it") {
        auto r = k.run(k.program("exit"));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "exits before a cluster barrier orders"));
    }
    SECTION("a remote arrive before the cluster barrier") {
        std::vector<ir::Stmt> v{k.init(),
                                k.on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {k.bar0()},
                                                                 {ir::sub(ir::make_int(1), k.rank())}, line(9)),
                                             9),
                                k.cluster_sync(3), k.cluster_sync(8)};
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "mbarrier_arrive to a cluster rank on the mbarrier of CTA rank 1"));
    }
    SECTION("a remote arrive after the cluster barrier completes the peer's phase") {
        std::vector<ir::Stmt> v{k.init(), k.cluster_sync(3),
                                k.on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {k.bar0()},
                                                                 {ir::sub(ir::make_int(1), k.rank())}, line(9)),
                                             9),
                                k.wait(), k.cluster_sync(8)};
        auto r = k.run(v);
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
    }
    SECTION("a second fill of the peer's stage before its consumers waited for the first") {
        std::vector<ir::Stmt> v{k.init(), k.cluster_sync(3),
                                k.on_thread0(ir::make_seq({k.arrive(1024), k.half(3), k.half(3, 10)}), 4), k.wait(),
                                k.read_all(), k.cluster_sync(8)};
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "have not released the stage"));
    }
    SECTION("a ctaMask naming a CTA outside the cluster") {
        std::vector<ir::Stmt> v{k.init(), k.cluster_sync(3), k.on_thread0(ir::make_seq({k.arrive(512), k.half(5)}), 4),
                                k.cluster_sync(8)};
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "outside the cluster"));
    }
    SECTION("a cluster wait with no arrive") {
        std::vector<ir::Stmt> v{k.init(), ir::make_machine_op(ir::MachineOp::ClusterWait, {}, {}, {}, line(11))};
        auto r = k.run(v);
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "no barrier.cluster.arrive of its own pending"));
    }
    SECTION("a grid that is not a multiple of the cluster does not launch") {
        k.grid = 3;
        auto r = k.run(k.program());
        CHECK_FALSE(r.ok);
        CHECK(r.message.find("not a multiple of the cluster's") != std::string::npos);
    }
}

TEST_CASE("sim cluster: a 2x2 cluster multicasts along its columns", "[sim][cluster]") {
    // Ranks x + 2 y (%cluster_ctaid (x, y)); CTA (x, y) issues half y of the box to its
    // column {x, x + 2}: ctaMask 0b0101 << x.
    ClusterKernel k;
    k.grid_y = 2;
    k.cluster = "2x2x1";
    ir::Expr cx = ir::floormod(k.block[0], ir::make_int(2)), cy = ir::floormod(k.block[1], ir::make_int(2));
    auto program = [&](ir::Expr mask) {
        return std::vector<ir::Stmt>{k.init(), k.cluster_sync(3),
                                     k.on_thread0(ir::make_seq({k.arrive(512), k.half_of(cy, std::move(mask))}), 4),
                                     k.wait(), k.read_all(), k.cluster_sync(8)};
    };
    SECTION("the column's mask: every CTA gets the whole box") {
        auto r = k.run(program(ir::make_binary(ir::BinaryOp::Shl, ir::make_int(5), cx)));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
        CHECK(r.blocks_run == 4);
        for (int b = 0; b < 4; ++b)
            for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[static_cast<size_t>(b * 128 + t)] == k.expected(t));
    }
    SECTION("the row's mask: a CTA gets its row peer's copy of the same half, never the other half") {
        // The row peers issue the same half (their y is the same): the second copy into a
        // CTA writes bytes the first still fills, and the other half is never written
        // (the mbarrier completes all the same: two halves' bytes arrived).
        auto r = k.run(program(ir::make_binary(ir::BinaryOp::Shl, ir::make_int(3), ir::mul(cy, ir::make_int(2)))));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::AsyncCopy, "while a TMA copy into it is in flight"));
        CHECK(has(r, sim::IssueKind::Uninitialized, "(never written)"));
    }
}

TEST_CASE("sim cluster: a refill multicast only after the peer's consumers released the stage to the issuer",
          "[sim][cluster]") {
    // Two fills of one stage; between them every thread reads the stage, arrives on the
    // empty mbarrier bar[1] of its own CTA and (done right) of the peer (mapa + remote
    // arrive), and thread 0 waits for its empty phase before the refill.
    ClusterKernel k;
    ir::Expr bar1 = ir::make_load(k.bar, {ir::make_int(1)});
    enum class Release { EveryThread, OwnCtaOnly, Thread0Only };
    auto program = [&](Release to_peer) {
        ir::Stmt remote = ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {bar1},
                                              {ir::sub(ir::make_int(1), k.rank())}, line(12));
        std::vector<ir::Stmt> release{ir::make_machine_op(ir::MachineOp::MbarrierArrive, {0}, {bar1}, {}, line(12))};
        if (to_peer == Release::EveryThread) release.push_back(remote);
        if (to_peer == Release::Thread0Only) release.push_back(k.on_thread0(remote, 12));
        const int64_t count = to_peer == Release::EveryThread ? 256 : to_peer == Release::Thread0Only ? 129 : 128;
        auto wait_full = [&](int64_t parity) {
            return ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {}, {k.bar0(), ir::make_int(parity)}, line(6));
        };
        return std::vector<ir::Stmt>{
            k.init(),
            k.on_thread0(ir::make_machine_op(ir::MachineOp::MbarrierInit, {count}, {bar1}, {}, line(2)), 2),
            k.cluster_sync(3),
            k.on_thread0(ir::make_seq({k.arrive(512), k.half(3)}), 4),
            wait_full(0),
            k.read_all(),
            ir::make_seq(release),
            k.on_thread0(ir::make_seq({ir::make_machine_op(ir::MachineOp::MbarrierWait, {}, {},
                                                           {bar1, ir::make_int(0)}, line(13)),
                                       k.arrive(512), k.half(3, 14)}),
                         13),
            wait_full(1),
            k.read_all(),
            k.cluster_sync(8)};
    };
    SECTION("released to every peer: quiet, and both fills land whole") {
        auto r = k.run(program(Release::EveryThread));
        REQUIRE(r.ok);
        for (const auto& i : r.issues) INFO(i.message);
        CHECK(r.issues.empty());
        for (int b = 0; b < 2; ++b)
            for (int t = 0; t < 128; ++t) CHECK(k.a.tensors[1].data[static_cast<size_t>(b * 128 + t)] == k.expected(t));
    }
    SECTION("released to its own CTA only: the peer refills bytes not yet read") {
        auto r = k.run(program(Release::OwnCtaOnly));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "have not released the stage"));
    }
    SECTION("only thread 0 releases to the peer: the other readers' bytes are reported, though this run read them first") {
        // The peer's refill waits for thread 0's remote arrival, which comes after every
        // thread's read here; on the GPU nothing orders the other threads' reads before it.
        auto r = k.run(program(Release::Thread0Only));
        REQUIRE(r.ok);
        CHECK(has(r, sim::IssueKind::Cluster, "read with no mbarrier arrival since that this thread acquired"));
        CHECK_FALSE(has(r, sim::IssueKind::Cluster, "an earlier copy still fills"));
    }
}
