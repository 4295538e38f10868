// The simulator's cluster models (sim/cluster.h) against the documents' rules, never
// against what tilec's codegen does (issue 12):
//  - %cluster_ctaid / %cluster_ctarank: the grid tiled by clusters, the rank row-major
//    with x fastest; grid dimensions multiples of the cluster's, at most 8 CTAs portable;
//  - barrier.cluster: a wait passes once every non-exited thread of the cluster arrived;
//    arrive and wait in pairs; exited threads hold up no phase;
//  - cp.async.bulk.tensor .multicast::cluster: each ctaMask bit a %cluster_ctarank; every
//    destination gets the whole box at the same CTA-relative offset and a complete-tx of
//    the whole box's bytes on its mbarrier at the same offset;
//  - remote mbarrier arrivals (mapa + mbarrier.arrive.shared::cluster) on an object not
//    initialised; a CTA's shared memory not accessed after it exits.
#include <catch2/catch.hpp>

#include <map>

#include "sim/cluster.h"
#include "sim/mbarrier_tma.h"

using namespace tilec::sim::isa;

TEST_CASE("cluster: ranks tile the grid, x fastest", "[sim][cluster]") {
    ClusterShape c{2, 1, 1};
    CHECK(cluster_ctarank(c, {0, 0, 0}) == 0);
    CHECK(cluster_ctarank(c, {1, 0, 0}) == 1);
    CHECK(cluster_ctarank(c, {2, 5, 0}) == 0);
    CHECK(cluster_ctarank(c, {3, 5, 0}) == 1);
    CHECK(cluster_first_block(c, {3, 5, 0}) == std::array<int64_t, 3>{2, 5, 0});
    ClusterShape c22{2, 2, 1};
    CHECK(cluster_ctarank(c22, {1, 1, 0}) == 3);
    CHECK(cluster_ctarank(c22, {0, 1, 0}) == 2);
    CHECK(cluster_ctaid(c22, {5, 3, 0}) == std::array<int64_t, 3>{1, 1, 0});
    for (int64_t r = 0; r < 4; ++r)
        CHECK(cluster_ctarank(c22, cluster_block_of_rank(c22, {4, 2, 0}, r)) == r);
    CHECK(cluster_block_of_rank(c22, {4, 2, 0}, 2) == std::array<int64_t, 3>{4, 3, 0});
}

TEST_CASE("cluster: the grid must be a multiple of the cluster, at most 8 CTAs", "[sim][cluster]") {
    CHECK(cluster_shape_problem({2, 1, 1}, {4, 3, 1}).empty());
    CHECK(cluster_shape_problem({2, 1, 1}, {3, 3, 1}).find("not a multiple") != std::string::npos);
    CHECK(cluster_shape_problem({1, 2, 1}, {3, 3, 1}).find("grid dimension y") != std::string::npos);
    CHECK(cluster_shape_problem({4, 2, 1}, {8, 8, 1}).empty());
    CHECK(cluster_shape_problem({4, 4, 1}, {8, 8, 1}).find("portable") != std::string::npos);
    CHECK(!cluster_shape_problem({0, 1, 1}, {8, 8, 1}).empty());
}

TEST_CASE("barrier.cluster: a wait passes once every thread of every CTA arrived", "[sim][cluster]") {
    // Two CTAs of 2 threads: cluster thread ids 0, 1 (rank 0) and 2, 3 (rank 1).
    ClusterBarrier b(4);
    CHECK(b.completed() == 0);
    REQUIRE(b.arrive(0) == ClusterBarrierProblem::None);
    REQUIRE(b.arrive(1) == ClusterBarrierProblem::None);
    CHECK_FALSE(b.can_pass(0));  // rank 1 has not arrived: its CTA holds the phase up
    REQUIRE(b.arrive(2) == ClusterBarrierProblem::None);
    CHECK_FALSE(b.can_pass(0));
    REQUIRE(b.arrive(3) == ClusterBarrierProblem::None);
    CHECK(b.completed() == 1);
    CHECK(b.can_pass(0));
    CHECK(b.can_pass(3));
    REQUIRE(b.wait(0) == ClusterBarrierProblem::None);
    // Reusable at once: thread 0 arrives at the next phase before the others waited.
    REQUIRE(b.arrive(0) == ClusterBarrierProblem::None);
    CHECK_FALSE(b.can_pass(0));
    CHECK(b.can_pass(1));  // its own (first) phase is complete
    REQUIRE(b.wait(1) == ClusterBarrierProblem::None);
}

TEST_CASE("barrier.cluster: arrive and wait come in pairs", "[sim][cluster]") {
    ClusterBarrier b(2);
    CHECK(b.wait(0) == ClusterBarrierProblem::WaitWithoutArrive);
    REQUIRE(b.arrive(0) == ClusterBarrierProblem::None);
    CHECK(b.arrive(0) == ClusterBarrierProblem::ArriveTwice);
    REQUIRE(b.arrive(1) == ClusterBarrierProblem::None);
    REQUIRE(b.wait(0) == ClusterBarrierProblem::None);
    CHECK(b.wait(0) == ClusterBarrierProblem::WaitWithoutArrive);
}

TEST_CASE("barrier.cluster: exited threads hold up no phase", "[sim][cluster]") {
    // "barrier.cluster.wait causes the executing thread to wait for all non-exited threads".
    ClusterBarrier b(4);
    for (int64_t t : {0, 1}) REQUIRE(b.arrive(t) == ClusterBarrierProblem::None);
    CHECK_FALSE(b.can_pass(0));
    b.exit(2);
    CHECK_FALSE(b.can_pass(0));
    b.exit(3);  // the last thread holding it up exits: released
    CHECK(b.can_pass(0));
    CHECK(b.arrive(2) == ClusterBarrierProblem::AfterExit);
}

TEST_CASE("multicast: each ctaMask bit is a %cluster_ctarank", "[sim][cluster]") {
    std::vector<int> r;
    REQUIRE(multicast_targets(0b11, 2, r) == MulticastProblem::None);
    CHECK(r == std::vector<int>{0, 1});
    REQUIRE(multicast_targets(0b1010, 4, r) == MulticastProblem::None);
    CHECK(r == std::vector<int>{1, 3});
    CHECK(multicast_targets(0, 2, r) == MulticastProblem::EmptyMask);
    CHECK(multicast_targets(0b100, 2, r) == MulticastProblem::RankOutsideCluster);
}

TEST_CASE("multicast: the whole box and its bytes' complete-tx land in every destination CTA", "[sim][cluster]") {
    // A 64 x 8 f16 box (128-byte rows, 128B swizzle) multicast to ranks 0 and 1; the
    // mbarrier at the same CTA-relative offset (0x2000) in each, armed by its own CTA's
    // arrive.expect_tx of the whole tile (what each CTA's consumers wait for).
    TensorMapDesc d;
    d.elem_bytes = 2;
    d.rank = 2;
    d.global_address = 1 << 20;
    d.dims[0] = 64;
    d.dims[1] = 100;
    d.strides[0] = 128;
    d.box[0] = 64;
    d.box[1] = 8;
    d.swizzle = TmaSwizzle::B128;
    const int32_t coords[2] = {0, 96};  // rows 96..103: 4 rows outside, zero-filled
    const uint32_t dst = 0x400, bar = 0x2000;
    std::vector<int> ranks;
    REQUIRE(multicast_targets(0b11, 2, ranks) == MulticastProblem::None);
    TmaBoxCopy box = tma_load_tile(d, coords, dst);
    REQUIRE(box.problem.empty());
    CHECK(box.tx_bytes == 64 * 8 * 2);
    // Per CTA: its mbarriers by CTA-relative address, and its shared bytes written.
    std::vector<std::map<uint32_t, Mbarrier>> bars(2);
    std::vector<std::map<uint32_t, int>> written(2);
    for (int r : {0, 1}) {
        REQUIRE(bars[r][bar].init(1) == MbarrierProblem::None);
        REQUIRE(bars[r][bar].arrive_expect_tx(box.tx_bytes) == MbarrierProblem::None);
    }
    for (int r : ranks) {
        for (const auto& w : box.writes) ++written[r][w.smem_addr];
        REQUIRE(bars[r][bar].complete_tx(box.tx_bytes) == MbarrierProblem::None);
    }
    for (int r : {0, 1}) {
        CHECK(bars[r][bar].test_wait_parity(0));  // each CTA's phase completed
        CHECK(written[r].size() == box.writes.size());
        CHECK(written[r].begin()->first >= dst);
    }
    // Two CTAs each issuing half the box (rows 96..99 and 100..103) to both: each CTA's
    // mbarrier, expecting the whole tile, completes only once both halves landed.
    TensorMapDesc half = d;
    half.box[1] = 4;
    const int32_t c0[2] = {0, 96}, c1[2] = {0, 100};
    TmaBoxCopy h0 = tma_load_tile(half, c0, dst), h1 = tma_load_tile(half, c1, dst + 4 * 128);
    REQUIRE(h0.problem.empty());
    REQUIRE(h1.problem.empty());
    CHECK(h0.tx_bytes + h1.tx_bytes == box.tx_bytes);
    for (int r : {0, 1}) {
        REQUIRE(bars[r][bar].arrive_expect_tx(box.tx_bytes) == MbarrierProblem::None);
        REQUIRE(bars[r][bar].complete_tx(h0.tx_bytes) == MbarrierProblem::None);
        CHECK_FALSE(bars[r][bar].test_wait_parity(1));
        REQUIRE(bars[r][bar].complete_tx(h1.tx_bytes) == MbarrierProblem::None);
        CHECK(bars[r][bar].test_wait_parity(1));
    }
    // The halves together write the whole box's addresses (the swizzle is per 1024-byte
    // pattern of 8 rows, and the second half starts at row 4 of it: its own address).
    std::map<uint32_t, int> both;
    for (const auto& w : h0.writes) ++both[w.smem_addr];
    for (const auto& w : h1.writes) ++both[w.smem_addr];
    CHECK(both.size() == box.writes.size());
}

TEST_CASE("remote arrive: an mbarrier not initialised is reported", "[sim][cluster]") {
    // mapa gives the peer's object at the same offset; the arrive there finds it as the
    // peer's mbarrier.init left it (here: never run).
    std::vector<std::map<uint32_t, Mbarrier>> bars(2);
    CHECK(bars[1][0x100].arrive() == MbarrierProblem::NotInitialised);
    REQUIRE(bars[1][0x100].init(2) == MbarrierProblem::None);
    REQUIRE(bars[1][0x100].arrive() == MbarrierProblem::None);  // rank 0's consumer, remote
    REQUIRE(bars[1][0x100].arrive() == MbarrierProblem::None);  // rank 1's own
    CHECK(bars[1][0x100].test_wait_parity(0));
}

TEST_CASE("cluster exits: remote operations must be ordered before a CTA exits", "[sim][cluster]") {
    // Two CTAs of one thread each: cluster thread 0 is rank 0, thread 1 rank 1.
    ClusterBarrier bar(2);
    ClusterExits ex;

    SECTION("a cluster barrier after the last remote operation: safe") {
        ex.reset(2, 1);
        REQUIRE(ex.remote(bar, 0, 0, 1) == ClusterExitProblem::None);  // rank 0 arrives on rank 1's object
        REQUIRE(bar.arrive(0) == ClusterBarrierProblem::None);
        REQUIRE(bar.arrive(1) == ClusterBarrierProblem::None);
        REQUIRE(bar.wait(1) == ClusterBarrierProblem::None);
        CHECK(ex.exit(bar, 1) == ClusterExitProblem::None);
    }
    SECTION("no cluster barrier: the exit may overtake the remote operation") {
        ex.reset(2, 1);
        REQUIRE(ex.remote(bar, 0, 0, 1) == ClusterExitProblem::None);
        CHECK(ex.exit(bar, 1) == ClusterExitProblem::UnorderedAtExit);
    }
    SECTION("a barrier phase before the remote operation does not order it") {
        ex.reset(2, 1);
        REQUIRE(bar.arrive(0) == ClusterBarrierProblem::None);
        REQUIRE(bar.arrive(1) == ClusterBarrierProblem::None);
        REQUIRE(bar.wait(0) == ClusterBarrierProblem::None);
        REQUIRE(bar.wait(1) == ClusterBarrierProblem::None);
        REQUIRE(ex.remote(bar, 0, 0, 1) == ClusterExitProblem::None);
        CHECK(ex.exit(bar, 1) == ClusterExitProblem::UnorderedAtExit);
    }
    SECTION("into a CTA that exited") {
        ex.reset(2, 1);
        REQUIRE(ex.exit(bar, 1) == ClusterExitProblem::None);
        CHECK(ex.remote(bar, 0, 0, 1) == ClusterExitProblem::IntoExited);
        // Its exit released the cluster barrier for the survivor.
        REQUIRE(bar.arrive(0) == ClusterBarrierProblem::None);
        CHECK(bar.can_pass(0));
    }
    SECTION("multicast bytes in flight at the exit") {
        ex.reset(2, 1);
        ex.in_flight(1, 1024);
        CHECK(ex.exit(bar, 1) == ClusterExitProblem::InFlightAtExit);
    }
    SECTION("its own operations need no ordering") {
        ex.reset(2, 1);
        REQUIRE(ex.remote(bar, 1, 1, 1) == ClusterExitProblem::None);
        ex.in_flight(1, 64);
        ex.landed(1, 64);
        CHECK(ex.exit(bar, 1) == ClusterExitProblem::None);
    }
}
