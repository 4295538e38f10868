// The cluster models (cluster.h): each rule is the document's, as quoted in the header.
#include "sim/cluster.h"

#include <algorithm>
#include <limits>

namespace tilec::sim::isa {

std::string cluster_shape_problem(const ClusterShape& c, const std::array<int64_t, 3>& grid) {
    const int64_t dims[3] = {c.x, c.y, c.z};
    const char* names = "xyz";
    for (int d = 0; d < 3; ++d) {
        if (dims[d] < 1) return std::string("cluster dimension ") + names[d] + " is not positive";
        if (grid[static_cast<size_t>(d)] % dims[d] != 0)
            return std::string("grid dimension ") + names[d] + " (" + std::to_string(grid[static_cast<size_t>(d)]) +
                   ") is not a multiple of the cluster's (" + std::to_string(dims[d]) + ")";
    }
    if (c.size() > 8)
        return "a cluster of " + std::to_string(c.size()) + " CTAs is over the portable size of 8";
    return {};
}

std::array<int64_t, 3> cluster_ctaid(const ClusterShape& c, const std::array<int64_t, 3>& b) {
    return {b[0] % c.x, b[1] % c.y, b[2] % c.z};
}

int64_t cluster_ctarank(const ClusterShape& c, const std::array<int64_t, 3>& b) {
    auto id = cluster_ctaid(c, b);
    return id[0] + id[1] * c.x + id[2] * c.x * c.y;
}

std::array<int64_t, 3> cluster_first_block(const ClusterShape& c, const std::array<int64_t, 3>& b) {
    auto id = cluster_ctaid(c, b);
    return {b[0] - id[0], b[1] - id[1], b[2] - id[2]};
}

std::array<int64_t, 3> cluster_block_of_rank(const ClusterShape& c, const std::array<int64_t, 3>& first, int64_t r) {
    return {first[0] + r % c.x, first[1] + (r / c.x) % c.y, first[2] + r / (c.x * c.y)};
}

const char* multicast_problem_text(MulticastProblem p) {
    switch (p) {
    case MulticastProblem::None: return "";
    case MulticastProblem::EmptyMask: return "the multicast's ctaMask names no CTA";
    case MulticastProblem::RankOutsideCluster: return "the multicast's ctaMask names a CTA rank outside the cluster";
    }
    return "";
}

MulticastProblem multicast_targets(uint32_t mask, int64_t ncta, std::vector<int>& ranks) {
    ranks.clear();
    mask &= 0xffffu;  // a 16-bit operand
    if (mask == 0) return MulticastProblem::EmptyMask;
    for (int r = 0; r < 16; ++r)
        if (mask & (1u << r)) {
            if (r >= ncta) return MulticastProblem::RankOutsideCluster;
            ranks.push_back(r);
        }
    return MulticastProblem::None;
}

const char* cluster_barrier_problem_text(ClusterBarrierProblem p) {
    switch (p) {
    case ClusterBarrierProblem::None: return "";
    case ClusterBarrierProblem::ArriveTwice:
        return "barrier.cluster.arrive by a thread whose previous arrive was not followed by a barrier.cluster.wait";
    case ClusterBarrierProblem::WaitWithoutArrive:
        return "barrier.cluster.wait by a thread with no barrier.cluster.arrive of its own pending";
    case ClusterBarrierProblem::AfterExit: return "barrier.cluster by a thread that has exited";
    }
    return "";
}

void ClusterBarrier::reset(int64_t threads) {
    arrived_.assign(static_cast<size_t>(threads), 0);
    waited_.assign(static_cast<size_t>(threads), 0);
    exited_.assign(static_cast<size_t>(threads), 0);
}

ClusterBarrierProblem ClusterBarrier::arrive(int64_t thread) {
    auto t = static_cast<size_t>(thread);
    if (exited_[t]) return ClusterBarrierProblem::AfterExit;
    if (arrived_[t] > waited_[t]) return ClusterBarrierProblem::ArriveTwice;
    ++arrived_[t];
    return ClusterBarrierProblem::None;
}

uint64_t ClusterBarrier::completed() const {
    // Phase k (1-based) is complete when every non-exited thread arrived k times.
    uint64_t lo = std::numeric_limits<uint64_t>::max();
    for (size_t t = 0; t < arrived_.size(); ++t)
        if (!exited_[t]) lo = std::min(lo, arrived_[t]);
    if (lo == std::numeric_limits<uint64_t>::max()) {  // every thread exited
        lo = 0;
        for (uint64_t a : arrived_) lo = std::max(lo, a);
    }
    return lo;
}

bool ClusterBarrier::can_pass(int64_t thread) const {
    auto t = static_cast<size_t>(thread);
    return arrived_[t] > waited_[t] && completed() >= arrived_[t];
}

ClusterBarrierProblem ClusterBarrier::wait(int64_t thread) {
    auto t = static_cast<size_t>(thread);
    if (exited_[t]) return ClusterBarrierProblem::AfterExit;
    if (arrived_[t] <= waited_[t]) return ClusterBarrierProblem::WaitWithoutArrive;
    waited_[t] = arrived_[t];
    return ClusterBarrierProblem::None;
}

void ClusterBarrier::exit(int64_t thread) { exited_[static_cast<size_t>(thread)] = 1; }

const char* cluster_exit_problem_text(ClusterExitProblem p) {
    switch (p) {
    case ClusterExitProblem::None: return "";
    case ClusterExitProblem::IntoExited:
        return "a remote operation into the shared memory of a CTA of the cluster that has exited";
    case ClusterExitProblem::InFlightAtExit:
        return "a CTA of the cluster exits with multicast bytes to its shared memory not landed";
    case ClusterExitProblem::UnorderedAtExit:
        return "a CTA of the cluster exits before a cluster barrier orders a peer's remote operation into its "
               "shared memory before the exit";
    }
    return "";
}

void ClusterExits::reset(int64_t ncta, int64_t threads_per_cta) {
    threads_ = threads_per_cta;
    in_flight_.assign(static_cast<size_t>(ncta), 0);
    exited_.assign(static_cast<size_t>(ncta), 0);
    must_wait_.assign(static_cast<size_t>(ncta), 0);
}

ClusterExitProblem ClusterExits::remote(const ClusterBarrier& bar, int64_t issuer, int64_t from, int64_t to) {
    if (from == to) return ClusterExitProblem::None;
    if (exited_[static_cast<size_t>(to)]) return ClusterExitProblem::IntoExited;
    // Ordered before `to`'s exit once `to` waited for the phase the issuer's next arrival
    // joins: the issuer's arrivals so far + 1.
    auto& w = must_wait_[static_cast<size_t>(to)];
    w = std::max(w, bar.arrivals(issuer) + 1);
    return ClusterExitProblem::None;
}

ClusterExitProblem ClusterExits::exit(ClusterBarrier& bar, int64_t cta) {
    auto c = static_cast<size_t>(cta);
    ClusterExitProblem p = ClusterExitProblem::None;
    if (in_flight_[c] > 0) p = ClusterExitProblem::InFlightAtExit;
    if (p == ClusterExitProblem::None)
        for (int64_t t = cta * threads_; t < (cta + 1) * threads_; ++t)
            if (bar.waits(t) < must_wait_[c]) {
                p = ClusterExitProblem::UnorderedAtExit;
                break;
            }
    for (int64_t t = cta * threads_; t < (cta + 1) * threads_; ++t) bar.exit(t);
    exited_[c] = 1;
    return p;
}

}  // namespace tilec::sim::isa
