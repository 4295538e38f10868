// Hopper's thread-block clusters (sm_90, issue 12), modelled from the PTX ISA and the CUDA
// documents and nothing else, in the style of mbarrier_tma.h and named_barrier.h: where a
// CTA sits in its cluster, the cluster barrier, the multicast form of the TMA box copy,
// mapa / remote mbarrier arrivals, and when a CTA may exit while its peers still reach
// into its shared memory. The models know nothing of tilec's IR;
// tests/unit/sim_cluster_test.cpp checks them against the documents' own rules.
//
// Sources:
//  - PTX ISA "Special registers": %cluster_ctaid is the CTA's position in its cluster
//    (each component 0 .. %cluster_nctaid - 1), %cluster_ctarank "a CTA identifier in a
//    cluster across all dimensions", 0 .. %cluster_nctarank - 1, the row-major rank of
//    %cluster_ctaid with x fastest; %clusterid the cluster's position in the grid. The
//    grid is tiled by clusters: the CTA of block index b is at %cluster_ctaid b mod c in
//    cluster b / c (c the cluster shape). CUDA programming guide, "Thread Block Clusters":
//    "the grid dimension must be a multiple of the cluster size" in each dimension, and
//    "a maximum of 8 thread blocks in a cluster is supported as a portable cluster size"
//    (16 on H100 with the non-portable opt-in, not modelled: refused).
//  - PTX ISA "barrier.cluster": barrier.cluster.arrive marks the executing thread's
//    arrival; "barrier.cluster.wait causes the executing thread to wait for all non-exited
//    threads of the cluster to perform barrier.cluster.arrive". Each thread arrives, then
//    waits, once per use ("arrive and wait ... in pairs": a second arrive before the wait,
//    or a wait with no arrive of its own pending, is outside the contract, reported);
//    the barrier is reusable at once. PTX ISA "exit": exiting threads no longer hold up a
//    barrier.cluster ("if the exiting threads are holding up the barrier, the barrier is
//    released").
//  - PTX ISA "cp.async.bulk.tensor", .multicast::cluster: "operand ctaMask specifies the
//    destination CTAs in the cluster such that each bit position in the 16-bit ctaMask
//    operand corresponds to the %cluster_ctarank of the destination CTA. The source data is
//    multicast to the same CTA-relative offset as dstMem in the shared memory of each
//    destination CTA. The mbarrier signal is also multicast to the same CTA-relative offset
//    as mbar in the shared memory of the destination CTA": every destination CTA gets the
//    whole box and a complete-tx of the whole box's bytes on its own mbarrier. A bit at or
//    above the cluster's CTA count names no CTA (outside the contract, reported), and so
//    does an empty mask.
//  - PTX ISA "mapa": maps the address of a shared variable of the executing CTA to the
//    address of "the corresponding variable in the target CTA" (rank b) in the
//    shared::cluster window. "mbarrier.arrive" on a .shared::cluster address arrives on
//    that CTA's object (no state is returned: the sink `_`); the object must have been
//    initialised (mbarrier.init), which a peer can only know through an ordering such as
//    the cluster barrier after the init.
//  - CUDA programming guide, "Distributed Shared Memory": a CTA's shared memory must not
//    be accessed after it exits ("ensure that all distributed shared memory operations
//    happen before a thread block exits"), hence a cluster barrier before the exit.
//    Modelled as: a remote operation (a multicast's bytes or complete-tx, a remote arrive)
//    into a CTA that has exited is reported; a CTA that exits with multicast bytes to it
//    still in flight is reported; and a CTA exits safely from a remote operation only once
//    its threads passed a cluster-barrier wait for a phase the issuing thread arrived at
//    after issuing it (else the exit may overtake it on the GPU, whatever order one run
//    shows: reported).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tilec::sim::isa {

// ---- cluster shape and ranks ------------------------------------------------------------

struct ClusterShape {
    int64_t x = 1, y = 1, z = 1;
    int64_t size() const { return x * y * z; }  // %cluster_nctarank
};
// Why a launch of `grid` blocks in clusters of `c` is refused (empty: it launches).
std::string cluster_shape_problem(const ClusterShape& c, const std::array<int64_t, 3>& grid);
// %cluster_ctaid of block `b`, its %cluster_ctarank, and the first block of its cluster.
std::array<int64_t, 3> cluster_ctaid(const ClusterShape& c, const std::array<int64_t, 3>& b);
int64_t cluster_ctarank(const ClusterShape& c, const std::array<int64_t, 3>& b);
std::array<int64_t, 3> cluster_first_block(const ClusterShape& c, const std::array<int64_t, 3>& b);
// The block index of rank r in the cluster whose first block is `first`.
std::array<int64_t, 3> cluster_block_of_rank(const ClusterShape& c, const std::array<int64_t, 3>& first, int64_t r);

// ---- multicast ---------------------------------------------------------------------------

enum class MulticastProblem : uint8_t { None, EmptyMask, RankOutsideCluster };
const char* multicast_problem_text(MulticastProblem p);
// The destination ranks of ctaMask `mask` in a cluster of `ncta` CTAs, lowest first.
MulticastProblem multicast_targets(uint32_t mask, int64_t ncta, std::vector<int>& ranks);

// ---- barrier.cluster ---------------------------------------------------------------------

enum class ClusterBarrierProblem : uint8_t {
    None,
    ArriveTwice,        // an arrive while the thread's previous arrive has not been waited on
    WaitWithoutArrive,  // a wait with no arrive of the thread pending
    AfterExit,          // an exited thread arrives or waits
};
const char* cluster_barrier_problem_text(ClusterBarrierProblem p);

class ClusterBarrier {
public:
    // `threads`: every thread of every CTA of the cluster (thread ids 0 .. threads - 1).
    explicit ClusterBarrier(int64_t threads = 0) { reset(threads); }
    void reset(int64_t threads);
    ClusterBarrierProblem arrive(int64_t thread);
    // Whether `thread`'s pending arrival's phase has completed (it may pass its wait).
    bool can_pass(int64_t thread) const;
    // The wait itself: the thread's arrival is consumed (call after can_pass, or after a
    // hang was reported).
    ClusterBarrierProblem wait(int64_t thread);
    // The thread exits: it holds up no phase any more.
    void exit(int64_t thread);
    bool exited(int64_t thread) const { return exited_[static_cast<size_t>(thread)] != 0; }
    // Phases completed so far (every non-exited thread arrived at them).
    uint64_t completed() const;
    // Arrivals / waits the thread performed.
    uint64_t arrivals(int64_t thread) const { return arrived_[static_cast<size_t>(thread)]; }
    uint64_t waits(int64_t thread) const { return waited_[static_cast<size_t>(thread)]; }

private:
    std::vector<uint64_t> arrived_, waited_;
    std::vector<uint8_t> exited_;
};

// ---- remote operations and exits -----------------------------------------------------------

enum class ClusterExitProblem : uint8_t {
    None,
    IntoExited,        // a remote operation (multicast bytes, complete-tx, arrive) into an exited CTA
    InFlightAtExit,    // the CTA exits with multicast bytes to it not landed
    UnorderedAtExit,   // a peer's remote operation into it is not ordered before its exit
};
const char* cluster_exit_problem_text(ClusterExitProblem p);

// Per CTA of one cluster: the remote operations into it and what orders them before its
// exit (the cluster barrier of `bar`, whose thread ids are rank * threads_per_cta + t).
class ClusterExits {
public:
    void reset(int64_t ncta, int64_t threads_per_cta);
    // A thread of CTA `from` (cluster thread id `issuer`) performs a remote operation into
    // CTA `to` (its own included: then nothing is checked). Reported when `to` exited.
    ClusterExitProblem remote(const ClusterBarrier& bar, int64_t issuer, int64_t from, int64_t to);
    // Multicast bytes into CTA `to` issued / landed.
    void in_flight(int64_t to, int64_t bytes) { in_flight_[static_cast<size_t>(to)] += bytes; }
    void landed(int64_t to, int64_t bytes) { in_flight_[static_cast<size_t>(to)] -= bytes; }
    int64_t bytes_in_flight(int64_t to) const { return in_flight_[static_cast<size_t>(to)]; }
    // CTA `cta` exits (all its threads finished): the first problem found.
    ClusterExitProblem exit(ClusterBarrier& bar, int64_t cta);
    bool has_exited(int64_t cta) const { return exited_[static_cast<size_t>(cta)] != 0; }

private:
    int64_t threads_ = 0;
    std::vector<int64_t> in_flight_;
    std::vector<uint8_t> exited_;
    // Per target CTA: the cluster-barrier phase its threads must have waited for before
    // exiting (one more than the issuer's arrivals at the latest remote operation).
    std::vector<uint64_t> must_wait_;
};

}  // namespace tilec::sim::isa
