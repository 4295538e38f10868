// The CTA's named barriers (bar / barrier{.cta} .sync and .arrive), modelled from the PTX
// ISA and nothing else, in the style of mbarrier_tma.h; tests/unit/sim_named_barrier_test.cpp
// checks the model against the document's rules. It knows nothing of tilec's IR.
//
// Source: PTX ISA 9.7.13.1 "Parallel Synchronization and Communication Instructions: bar,
// barrier":
//  - "Each CTA instance has sixteen barriers numbered 0..15"; operand b "specifies the
//    number of threads participating in the barrier", "a multiple of the warp size", and
//    "a non-zero thread count is required for barrier{.cta}.arrive".
//  - "The barrier{.cta} instructions signal the arrival of the executing threads at the
//    named barrier." .sync (and .red) also cause the executing thread "to wait for
//    non-exited threads of all other warps participating in the barrier to arrive";
//    "barrier{.cta}.arrive does not cause executing thread to wait for threads of other
//    participating warps". The arrivals of .sync and .arrive on one barrier count toward
//    the one thread count b (the document's producer / consumer example: producers
//    arrive, consumers sync on the same barrier and count).
//  - "Once the barrier count is reached, the waiting threads are restarted without delay,
//    and the barrier is reinitialized so that it can be immediately reused."
//  - The threads of one use of a barrier give one thread count: arrivals of one phase
//    with different counts, or more arrivals than the count, are outside the ISA's
//    contract (reported).
// Granularity: an arrival is a set of threads at once (the executing warps' threads).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tilec::sim::isa {

enum class NamedBarrierProblem : uint8_t {
    None,
    BadId,           // not 0..15
    BadCount,        // not a positive multiple of 32 (the warp size)
    CountMismatch,   // a thread count other than the one the phase's first arrival gave
    TooManyThreads,  // more arrivals in the phase than its thread count
};

struct NamedBarrierArrival {
    NamedBarrierProblem problem = NamedBarrierProblem::None;
    bool completed = false;  // this arrival completed the phase (its waiters restart)
    uint64_t phase = 0;      // the phase joined: a sync waits until completed(id, phase)
};

class NamedBarriers {
public:
    // `threads` threads arrive on barrier `id` with thread count `count`; `sync`: they
    // wait (barrier.sync), else barrier.arrive. The phase completes when its arrivals
    // reach the count (too many complete it as well, reported).
    NamedBarrierArrival arrive(int64_t id, int64_t count, int64_t threads, bool sync);
    // Whether phase `phase` of barrier `id` has completed.
    bool completed(int64_t id, uint64_t phase) const;
    // Whether the phase that completed last, or is in progress, had .arrive arrivals.
    bool had_arrive(int64_t id) const;
    // The barriers with a phase in progress (arrivals short of the count).
    struct Pending {
        int id;
        int64_t count, arrived, waiting;  // waiting: the arrivals by .sync
    };
    std::vector<Pending> pending() const;
    // Forgets barrier id's phase in progress (after a hang was reported).
    void abandon(int64_t id);
    void reset() { bars_ = {}; }

private:
    struct State {
        int64_t count = 0, arrived = 0, waiting = 0;
        uint64_t phase = 0;     // phases completed so far
        bool arrives = false;   // the phase in progress (or, after completing, the last) had .arrive
    };
    std::array<State, 16> bars_{};
};

}  // namespace tilec::sim::isa
