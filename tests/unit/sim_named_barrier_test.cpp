// The simulator's named-barrier model (sim/named_barrier.h) against the PTX ISA's
// description of bar / barrier{.cta} (9.7.13.1), never against what tilec's codegen
// assumes: .sync and .arrive arrivals count toward one thread count; .arrive does not
// wait; a phase completes when its arrivals reach the count and the barrier is
// immediately reusable; 16 barriers 0..15; counts positive multiples of the warp size;
// one count per phase.
#include <catch2/catch.hpp>

#include "sim/named_barrier.h"

using namespace tilec::sim::isa;

TEST_CASE("named barrier: a sync waits until the count's threads arrived", "[sim][named_barrier]") {
    NamedBarriers b;
    auto first = b.arrive(1, 256, 128, /*sync=*/true);
    CHECK(first.problem == NamedBarrierProblem::None);
    CHECK_FALSE(first.completed);
    CHECK_FALSE(b.completed(1, first.phase));  // the first 128 wait
    auto second = b.arrive(1, 256, 128, /*sync=*/true);
    CHECK(second.completed);
    CHECK(second.phase == first.phase);
    CHECK(b.completed(1, first.phase));  // "the waiting threads are restarted"
    CHECK(b.pending().empty());
}

TEST_CASE("named barrier: arrive and sync arrivals combine toward one count", "[sim][named_barrier]") {
    NamedBarriers b;
    // Producer / consumer: 128 threads arrive (no wait), 128 sync.
    auto arrive = b.arrive(3, 256, 128, /*sync=*/false);
    CHECK(arrive.problem == NamedBarrierProblem::None);
    CHECK_FALSE(arrive.completed);  // .arrive does not complete the phase alone ...
    REQUIRE(b.pending().size() == 1);
    CHECK(b.pending()[0].id == 3);
    CHECK(b.pending()[0].arrived == 128);
    CHECK(b.pending()[0].waiting == 0);  // ... and its threads do not wait
    auto sync = b.arrive(3, 256, 128, /*sync=*/true);
    CHECK(sync.completed);  // the sync finds the count reached: it does not wait
    CHECK(b.completed(3, sync.phase));
    CHECK(b.had_arrive(3));
    // The other order: the sync waits for the arrive.
    auto s2 = b.arrive(3, 256, 128, /*sync=*/true);
    CHECK_FALSE(b.completed(3, s2.phase));
    auto a2 = b.arrive(3, 256, 128, /*sync=*/false);
    CHECK(a2.completed);
    CHECK(b.completed(3, s2.phase));
}

TEST_CASE("named barrier: reusable at once, barriers independent", "[sim][named_barrier]") {
    NamedBarriers b;
    for (int round = 0; round < 3; ++round) {
        auto a = b.arrive(2, 64, 32, false);
        auto s = b.arrive(2, 64, 32, true);
        CHECK(s.completed);
        CHECK(s.phase == a.phase);
        CHECK(s.phase == static_cast<uint64_t>(round));
    }
    // Arrivals on barrier 4 do not count toward barrier 5.
    auto x = b.arrive(4, 64, 32, true);
    auto y = b.arrive(5, 64, 32, true);
    CHECK_FALSE(b.completed(4, x.phase));
    CHECK_FALSE(b.completed(5, y.phase));
    CHECK(b.pending().size() == 2);
    b.abandon(4);
    b.abandon(5);
    CHECK(b.pending().empty());
}

TEST_CASE("named barrier: arrivals outside the ISA's contract are reported", "[sim][named_barrier]") {
    NamedBarriers b;
    CHECK(b.arrive(16, 64, 32, true).problem == NamedBarrierProblem::BadId);
    CHECK(b.arrive(-1, 64, 32, true).problem == NamedBarrierProblem::BadId);
    CHECK(b.arrive(1, 0, 32, false).problem == NamedBarrierProblem::BadCount);  // arrive needs a count
    CHECK(b.arrive(1, 48, 32, true).problem == NamedBarrierProblem::BadCount);  // not a multiple of 32
    CHECK(b.pending().empty());
    // One phase, two counts.
    CHECK(b.arrive(1, 256, 128, false).problem == NamedBarrierProblem::None);
    CHECK(b.arrive(1, 128, 32, true).problem == NamedBarrierProblem::CountMismatch);
    b.abandon(1);
    // More arrivals than the count: the phase completes, reported.
    CHECK(b.arrive(1, 128, 96, false).problem == NamedBarrierProblem::None);
    auto over = b.arrive(1, 128, 64, true);
    CHECK(over.problem == NamedBarrierProblem::TooManyThreads);
    CHECK(over.completed);
}
