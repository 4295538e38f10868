// Thread-block clusters in the executor (issue 12): the CTAs of one cluster run together,
// each an Executor of its own on a host thread of its own, exactly one running at a time
// (a baton under ClusterRun::mutex, as sim/warp_roles.cpp runs warp roles). A CTA runs
// until a wait it cannot pass, an mbarrier phase or the cluster barrier (inside warp
// roles: once no role of it can go on), then the next CTA that may progress runs. When no
// CTA can, the program would hang on the GPU: the first waiting one is told to give up
// (its wait reports the hang) and goes on.
//
// What crosses CTAs goes through sim/cluster.h's models, written from the PTX ISA:
//  - barrier.cluster.arrive / wait (ClusterArrive, ClusterWait): a wait passes once every
//    non-exited thread of the cluster arrived; passing it starts a new race epoch of the
//    CTA (it orders every access of the cluster before it, the CTA's own included).
//  - a multicast TmaLoad (a ctaMask operand): the box is read once at the issue; its bytes
//    and complete-tx go to every CTA of the mask at the same CTA-relative offsets, landing
//    in a peer as in the issuer (when a wait there finds the phase short of them). Into a
//    peer's bytes that a copy still fills or a wgmma still reads (a stage its consumers
//    have not released), reported. And, whatever order the run took: into peer bytes
//    whose last reader has no release since the read that the issuing thread acquired
//    (a plain mbarrier arrival, local or remote, or a cluster-barrier arrival, of the
//    reader after the read, reaching the issuer through an mbarrier phase it waited for or
//    a cluster barrier it passed), reported: the peer's consumers did not release the
//    stage to this producer (a cluster's empty ring that leaves out a peer writing into the
//    stage, which this run's schedule may have let pass). Releases are followed directly,
//    not transitively through third threads, which the empty rings never need.
//  - a remote MbarrierArrive (a rank operand): mapa + mbarrier.arrive.shared::cluster on
//    the peer's object at the same offset.
//  - a peer's mbarrier used by a remote operation must be initialised, and its init
//    ordered before the use by a cluster-barrier phase (the initialising thread arrived
//    after the init, the user waited for that phase): else reported, as the peer's init
//    may not have happened yet on the GPU.
//  - a CTA's exit (the end of its body): bytes multicast into it not landed, or a peer's
//    remote operation into it that no cluster barrier orders before the exit, reported
//    (ClusterExits); a remote operation into a CTA that exited, reported.
#include <algorithm>
#include <thread>

#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

namespace {
// Unwinds a CTA abandoned because another failed.
struct ClusterAbort {};
}  // namespace

struct Executor::ClusterRun {
    isa::ClusterShape shape;
    std::vector<Executor*> ctas;  // by %cluster_ctarank
    isa::ClusterBarrier bar;
    isa::ClusterExits exits;
    std::mutex mutex;
    std::condition_variable cv;
    int running = -1;  // the CTA holding control (-1: the scheduler)
    uint64_t events = 0;  // cluster-barrier arrivals, exits
    struct Slot {
        bool done = false, waiting = false, give_up = false, abort = false;
        uint64_t seen = 0;
        std::exception_ptr error;
    };
    std::vector<Slot> slots;
    uint64_t progress() const {
        uint64_t p = events;
        for (auto* e : ctas) p += e->sync_progress_;
        return p;
    }
};

Executor& Executor::peer(int64_t rank) { return *cluster_->ctas.at(static_cast<size_t>(rank)); }

bool Executor::yield_cluster() {
    if (!cluster_) return false;
    ClusterRun& c = *cluster_;
    auto& me = c.slots[static_cast<size_t>(cta_rank_)];
    if (me.give_up) {
        me.give_up = false;
        return false;
    }
    me.waiting = true;
    me.seen = c.progress();
    {
        std::unique_lock<std::mutex> lock(c.mutex);
        c.running = -1;
        c.cv.notify_all();
        c.cv.wait(lock, [&] { return c.running == cta_rank_; });
    }
    me.waiting = false;
    if (me.abort) throw ClusterAbort{};
    return true;
}

void Executor::report_cluster_exit(isa::ClusterExitProblem p, int64_t rank) {
    if (p == isa::ClusterExitProblem::None) return;
    issue(IssueKind::Cluster, f_.loc, 0, [&] {
        return std::string(isa::cluster_exit_problem_text(p)) + " (CTA rank " + std::to_string(rank) + ")";
    });
}

void Executor::run_cluster(const isa::ClusterShape& shape, const std::array<int64_t, 3>& first) {
    const int64_t n = shape.size();
    ClusterRun c;
    c.shape = shape;
    c.bar.reset(n * threads_);
    c.exits.reset(n, threads_);
    c.slots.resize(static_cast<size_t>(n));
    std::vector<std::unique_ptr<Executor>> peers;
    c.ctas.push_back(this);
    for (int64_t r = 1; r < n; ++r) {
        auto e = std::make_unique<Executor>(f_, opt_, res_);
        e->primary_ = this;
        e->threads_ = threads_;
        e->all_ = all_;
        e->sites_ = sites_;
        e->uniform_ = uniform_;
        e->buffers_ = buffers_;  // the tensors (shared buffers are added per CTA)
        e->block_slot_ = block_slot_;
        c.ctas.push_back(e.get());
        peers.push_back(std::move(e));
    }
    const auto saved_buffers = buffers_;
    for (int64_t r = 0; r < n; ++r) {
        c.ctas[static_cast<size_t>(r)]->cluster_ = &c;
        c.ctas[static_cast<size_t>(r)]->cta_rank_ = static_cast<int>(r);
    }
    auto body = [&](int64_t r) {
        Executor& e = *c.ctas[static_cast<size_t>(r)];
        auto& slot = c.slots[static_cast<size_t>(r)];
        {
            std::unique_lock<std::mutex> lock(c.mutex);
            c.cv.wait(lock, [&] { return c.running == r; });
        }
        try {
            if (!slot.abort) {
                e.run_block(isa::cluster_block_of_rank(shape, first, r));
                // The CTA exits: its threads hold up no cluster-barrier phase any more.
                e.report_cluster_exit(c.exits.exit(c.bar, r), r);
                ++c.events;
            }
        } catch (const ClusterAbort&) {
        } catch (...) {
            slot.error = std::current_exception();
        }
        std::unique_lock<std::mutex> lock(c.mutex);
        slot.done = true;
        c.running = -1;
        c.cv.notify_all();
    };
    std::vector<std::thread> threads;
    for (int64_t r = 0; r < n; ++r) threads.emplace_back(body, r);
    auto all_done = [&] {
        for (auto& s : c.slots)
            if (!s.done) return false;
        return true;
    };
    auto any_error = [&] {
        for (auto& s : c.slots)
            if (s.error) return true;
        return false;
    };
    size_t next = 0;
    while (!all_done() && !any_error()) {
        int pick = -1;
        const uint64_t now = c.progress();
        for (size_t k = 0; k < c.slots.size() && pick < 0; ++k) {
            auto& s = c.slots[(next + k) % c.slots.size()];
            if (!s.done && (!s.waiting || s.seen != now)) pick = static_cast<int>((next + k) % c.slots.size());
        }
        if (pick < 0) {
            for (size_t k = 0; k < c.slots.size() && pick < 0; ++k)
                if (!c.slots[(next + k) % c.slots.size()].done) pick = static_cast<int>((next + k) % c.slots.size());
            c.slots[static_cast<size_t>(pick)].give_up = true;
        }
        next = (static_cast<size_t>(pick) + 1) % c.slots.size();
        std::unique_lock<std::mutex> lock(c.mutex);
        c.running = pick;
        c.cv.notify_all();
        c.cv.wait(lock, [&] { return c.running == -1; });
    }
    std::exception_ptr error;
    for (auto& s : c.slots)
        if (s.error && !error) error = s.error;
    for (size_t r = 0; r < c.slots.size(); ++r)
        if (!c.slots[r].done) {
            c.slots[r].abort = true;
            std::unique_lock<std::mutex> lock(c.mutex);
            c.running = static_cast<int>(r);
            c.cv.notify_all();
            c.cv.wait(lock, [&] { return c.running == -1; });
        }
    for (auto& t : threads) t.join();
    // The peers' counters join this CTA's.
    for (auto& p : peers) {
        p->flush();
        for (auto& [key, pc] : p->counters_) {
            auto [it, fresh] = counters_.try_emplace(key, pc);
            if (fresh) continue;
            it->second.requests += pc.requests;
            it->second.lanes += pc.lanes;
            it->second.transactions += pc.transactions;
            it->second.ideal += pc.ideal;
        }
    }
    for (int64_t r = 0; r < n; ++r) c.ctas[static_cast<size_t>(r)]->cluster_ = nullptr;
    buffers_ = saved_buffers;
    if (error) std::rethrow_exception(error);
}

bool Executor::check_remote_mbarrier(int64_t rank, uint32_t bar, int t, SourceLoc loc, const char* what) {
    ClusterRun& c = *cluster_;
    if (rank < 0 || rank >= c.shape.size()) {
        issue(IssueKind::Cluster, loc, t, [&] {
            return std::string(what) + " names CTA rank " + std::to_string(rank) + ", outside the cluster of " +
                   std::to_string(c.shape.size());
        });
        return false;
    }
    if (auto p = c.exits.remote(c.bar, cluster_thread(t), cta_rank_, rank); p != isa::ClusterExitProblem::None) {
        issue(IssueKind::Cluster, loc, t, [&] {
            return std::string(what) + ": " + isa::cluster_exit_problem_text(p) + " (rank " + std::to_string(rank) + ")";
        });
        return false;
    }
    if (rank == cta_rank_) return true;
    Executor& p = peer(rank);
    auto m = p.mbarriers_.find(bar);
    if (m == p.mbarriers_.end() || !m->second.initialised) {
        issue(IssueKind::Cluster, loc, t, [&] {
            return std::string(what) + " on the mbarrier of CTA rank " + std::to_string(rank) +
                   ", which that CTA has not initialised (mbarrier.init, then a cluster barrier, before any peer "
                   "uses it)";
        });
        return false;
    }
    auto init = p.init_cluster_arrivals_.find(bar);
    if (init != p.init_cluster_arrivals_.end() && c.bar.waits(cluster_thread(t)) < init->second + 1) {
        const uint64_t need = init->second + 1;
        p.init_cluster_arrivals_.erase(init);  // once per init
        issue(IssueKind::Cluster, loc, t, [&] {
            return std::string(what) + " on the mbarrier of CTA rank " + std::to_string(rank) +
                   " with no cluster barrier between its mbarrier.init and this use (the thread waited for " +
                   std::to_string(c.bar.waits(cluster_thread(t))) + " cluster-barrier phases, the init is ordered by " +
                   std::to_string(need) + "): the peer's init may not have happened yet";
        });
    }
    return true;
}

void Executor::exec_cluster_barrier(const MachineOpNode* op, const Active& act) {
    if (act.empty()) return;
    const SourceLoc loc = at(op->loc);
    if (!cluster_) {
        // A kernel launched without clusters is a cluster of one CTA (PTX ISA: every CTA
        // is in a cluster, of 1x1x1 by default): the barrier orders the CTA's threads.
        if (op->op == MachineOp::ClusterWait) ++epoch_;
        return;
    }
    ClusterRun& c = *cluster_;
    auto report = [&](int t, isa::ClusterBarrierProblem p) {
        if (p != isa::ClusterBarrierProblem::None)
            issue(IssueKind::Cluster, loc, t, [&] { return std::string(isa::cluster_barrier_problem_text(p)); });
    };
    if (op->op == MachineOp::ClusterArrive) {
        for (int32_t t : act) {
            report(t, c.bar.arrive(cluster_thread(t)));
            ++release_arrivals_[static_cast<size_t>(t)];  // a release, as a plain mbarrier arrival is
        }
        ++c.events;
        return;
    }
    bool gave_up = false;
    for (int32_t t : act) {
        const int64_t id = cluster_thread(t);
        if (c.bar.arrivals(id) <= c.bar.waits(id)) {
            report(t, isa::ClusterBarrierProblem::WaitWithoutArrive);
            continue;
        }
        while (!c.bar.can_pass(id) && !gave_up && yield_blocked()) {
        }
        if (!c.bar.can_pass(id) && !gave_up) {
            gave_up = true;
            issue(IssueKind::Cluster, loc, t, [&] {
                return "barrier.cluster.wait that nothing can complete (" + std::to_string(c.bar.completed()) +
                       " phases completed, the thread waits for phase " + std::to_string(c.bar.arrivals(id)) +
                       "): the threads would hang";
            });
        }
        report(t, c.bar.wait(id));
    }
    // Every access of the cluster before the phase is ordered before the threads' after it
    // (so are the peers' reads, for the multicast's release check).
    ++epoch_;
    release_floor_.assign(static_cast<size_t>(c.shape.size() * threads_), 0);
    for (int64_t r = 0; r < c.shape.size(); ++r)
        for (int64_t u = 0; u < threads_; ++u)
            if (static_cast<size_t>(u) < peer(r).release_arrivals_.size())
                release_floor_[static_cast<size_t>(r * threads_ + u)] = peer(r).release_arrivals_[static_cast<size_t>(u)];
}

uint64_t Executor::cluster_arrivals(int t) const {
    return cluster_ ? cluster_->bar.arrivals(cluster_thread(t)) : 0;
}

void Executor::cluster_landed(uint32_t tx) {
    if (cluster_) cluster_->exits.landed(cta_rank_, tx);
}

void Executor::remote_arrive(int64_t rank, uint32_t bar, int t, SourceLoc loc) {
    if (!cluster_) {
        if (rank != 0) {
            issue(IssueKind::Cluster, loc, t, [&] {
                return "mbarrier_arrive to CTA rank " + std::to_string(rank) + " of a kernel launched without clusters";
            });
            return;
        }
    } else if (!check_remote_mbarrier(rank, bar, t, loc, "mbarrier_arrive to a cluster rank")) {
        return;
    }
    Executor& p = cluster_ ? peer(rank) : *this;
    isa::Mbarrier& m = p.mbarriers_[bar];
    if (m.initialised && m.pending == 0) p.land_tma(bar);
    const isa::Mbarrier before = m;
    isa::MbarrierProblem r = m.arrive();
    if (cluster_) release_arrive(p, bar, before, m, t);
    if (r != isa::MbarrierProblem::None)
        issue(IssueKind::Mbarrier, loc, t, [&] {
            return "mbarrier_arrive to CTA rank " + std::to_string(rank) + ": " + isa::mbarrier_problem_text(r);
        });
    p.released_[bar] = true;
    ++p.sync_progress_;
    ++sync_progress_;
}

std::vector<int> Executor::multicast_ranks(const MachineOpNode* op, int t, SourceLoc loc) {
    const int64_t mask = eval_int(op->src.at(2), t);
    std::vector<int> ranks;
    const int64_t n = cluster_ ? cluster_->shape.size() : 1;
    isa::MulticastProblem p = isa::multicast_targets(static_cast<uint32_t>(mask), n, ranks);
    if (p != isa::MulticastProblem::None || mask < 0 || mask > 0xffff) {
        issue(IssueKind::Cluster, loc, t, [&] {
            return std::string("tma_load multicast: ") +
                   (p != isa::MulticastProblem::None ? isa::multicast_problem_text(p) : "a ctaMask outside 16 bits") +
                   " (mask " + std::to_string(mask) + ", " + std::to_string(n) + " CTAs in the cluster)";
        });
        ranks.clear();
    }
    return ranks;
}

void Executor::multicast_into(int64_t rank, TmaInFlight f, const Storage& dst, int t, SourceLoc loc) {
    if (!check_remote_mbarrier(rank, f.bar, t, loc, "tma_load multicast")) return;
    Executor& p = peer(rank);
    // The peer's own (latest) execution of the tile's alloc, at the same offset (the same
    // program). From its list of instances: its bindings may be swapped out to a warp role.
    int32_t instance = 0;
    for (size_t i = p.instances_.size(); i-- > 1;)
        if (p.instances_[i].buffer == dst.buffer && p.instances_[i].base == dst.base) {
            instance = static_cast<int32_t>(i);
            break;
        }
    uint32_t hi = 0;
    for (const auto& [addr, v] : f.bytes) hi = std::max(hi, addr + 1);
    p.arena_.ensure(hi);
    bool reported = false;
    for (const auto& [addr, v] : f.bytes) {
        // A stage of the peer still being filled (its consumers have not waited for the
        // previous fill) or read by a wgmma: its consumers have not released it.
        if (!reported && (p.arena_.tma_pending[addr] > 0 || p.arena_.wgmma_reading[addr] > 0 ||
                          p.arena_.bulk_reading[addr] > 0)) {
            reported = true;
            issue(IssueKind::Cluster, loc, t, [&] {
                return "tma_load multicast into '" + dst.name() + "' of CTA rank " + std::to_string(rank) +
                       ", whose bytes " +
                       (p.arena_.tma_pending[addr] > 0 ? std::string("an earlier copy still fills (not waited for)")
                                                       : std::string("an asynchronous read still reads")) +
                       ": the peer's consumers have not released the stage";
            });
        }
        ++p.arena_.tma_pending[addr];
        if (instance) {
            ByteShadow& x = p.arena_.shadow[addr];
            if (x.writer != instance) {
                x.overwritten = x.writer;
                x.writer = instance;
            }
        }
    }
    // The bytes' last readers in the peer released them to this thread: an arrival of
    // theirs after the read is among those it acquired (its empty-ring waits).
    if (!reported) {
        const auto& known = release_acquired_[t];
        for (const auto& [addr, v] : f.bytes) {
            const int32_t r = p.arena_.reader[addr];
            if (r < 0) continue;
            const int64_t who = p.cluster_thread(r);
            auto k = known.find(who);
            if (k != known.end() && k->second > p.arena_.reader_arrivals[addr]) continue;
            if (static_cast<size_t>(who) < release_floor_.size() &&
                release_floor_[static_cast<size_t>(who)] > p.arena_.reader_arrivals[addr])
                continue;
            issue(IssueKind::Cluster, loc, t, [&] {
                return "tma_load multicast into '" + dst.name() + "' of CTA rank " + std::to_string(rank) +
                       ", whose bytes thread " + std::to_string(r) +
                       " of that CTA read with no mbarrier arrival since that this thread acquired: the peer's "
                       "consumers have not released the stage to this CTA (its producer may overwrite bytes they "
                       "have yet to read)";
            });
            break;
        }
    }
    cluster_->exits.in_flight(rank, f.tx);
    f.remote = true;
    p.tma_in_flight_.push_back(std::move(f));
    ++p.sync_progress_;
}

void Executor::release_arrive(Executor& p, uint32_t bar, const isa::Mbarrier& before, const isa::Mbarrier& after,
                              int t) {
    const uint32_t n = ++release_arrivals_[static_cast<size_t>(t)];
    Executor::ReleaseKnown& k = p.release_known_[bar];
    k.pending[cluster_thread(t)] = n;
    if (after.phase != before.phase) {  // the arrival completed the phase
        k.done[before.phase & 1] = std::move(k.pending);
        k.pending.clear();
    }
}

void Executor::release_acquire(uint32_t bar, uint32_t parity, int t) {
    auto k = release_known_.find(bar);
    if (k == release_known_.end()) return;
    auto& mine = release_acquired_[t];
    for (const auto& [thread, n] : k->second.done[parity & 1]) {
        uint32_t& m = mine[thread];
        m = std::max(m, n);
    }
}

}  // namespace tilec::sim::detail
