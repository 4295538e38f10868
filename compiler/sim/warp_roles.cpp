// Warp roles of a warp-specialized kernel (lower/split_warp_roles.cpp): a producer
// warpgroup issuing TMA copies and consumer warpgroups computing, synchronised by mbarrier
// rings alone. Lock-step execution of an `if` runs one branch to its end before the
// other; here that would deadlock (the producer waits for a stage the consumers have not
// released yet), so the two branches run as coroutines: each on a host thread of its
// own, exactly one running at a time (a baton under role_mutex_), switching only where a
// branch waits on an mbarrier phase that has not completed. The schedule is
// deterministic: the producer runs first, as far as its ring lets it, then the consumers
// until they need a stage not yet issued, and so on. When neither can pass its wait and
// nothing changed since both last looked, the program would hang on the GPU: the waiting
// branch is told to give up (its wait reports the hang, as outside roles) and goes on.
// Consumers that hand the tensor cores to each other by named barriers (a barrier_arrive
// in their branch: lower/pingpong_consumers.cpp) run as one role per warpgroup, so one
// warpgroup can wait at a barrier.sync while the other goes on to the arrive that
// completes it; lock-step would deadlock there. Barriers switch roles as mbarrier waits
// do (named_barrier.h's model counts the arrivals).
#include <thread>

#include "ir/visitor.h"
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

namespace {
// Unwinds a role abandoned because the other one failed.
struct RoleAbort {};
}  // namespace

struct Executor::Role {
    int index = 0;
    const Stmt* body = nullptr;
    const Active* act = nullptr;
    RoleState state;
    bool done = false;
    bool waiting = false;
    bool give_up = false;
    bool abort = false;  // the other role failed: unwind at the next turn
    uint64_t progress_seen = 0;
    std::exception_ptr error;
};

void Executor::swap_role_state(RoleState& r) {
    std::swap(tvars_, r.tvars);
    std::swap(tdepth_, r.tdepth);
    std::swap(buffers_, r.buffers);
    std::swap(stmt_loc_, r.stmt_loc);
    std::swap(unroll_depth_, r.unroll_depth);
    std::swap(shared_top_, r.shared_top);
    std::swap(shuffled_, r.shuffled);
    std::swap(accesses_, r.accesses);
    std::swap(peer_role_, r.peer_role);
}

bool Executor::yield_blocked() {
    Role* me = current_role_;
    // Outside warp roles, in a cluster: the other CTAs may complete the wait.
    if (!me) return yield_cluster();
    if (me->give_up) {
        me->give_up = false;
        return false;
    }
    me->waiting = true;
    me->progress_seen = sync_progress_;
    swap_role_state(me->state);
    {
        std::unique_lock<std::mutex> lock(role_mutex_);
        role_running_ = -1;
        role_cv_.notify_all();
        role_cv_.wait(lock, [&] { return role_running_ == me->index; });
    }
    swap_role_state(me->state);
    current_role_ = me;
    me->waiting = false;
    if (me->abort) throw RoleAbort{};
    return true;
}

namespace {

bool has_barrier_arrive(const Stmt& s) {
    struct Find : IRVisitor {
        bool found = false;
        void visit_machine_op(const MachineOpNode* op) override {
            found |= op->op == MachineOp::BarrierArrive;
            IRVisitor::visit_machine_op(op);
        }
    } f;
    if (s) f.visit(s);
    return f.found;
}

}  // namespace

void Executor::run_roles(const IfNode* op, const Active& producers, const Active& consumers) {
    if (current_role_) fatal(op->loc, "a warp-role split inside a warp role");
    // Role 0 the producer; then the consumers, one role per warpgroup where they hand
    // barriers to each other.
    std::vector<Active> parts{producers};
    const bool peers = consumers.size() > 128 && has_barrier_arrive(op->else_case);
    if (peers) {
        for (int32_t t : consumers) {
            if (parts.size() == 1 || t / 128 != parts.back().front() / 128) parts.emplace_back();
            parts.back().push_back(t);
        }
    } else {
        parts.push_back(consumers);
    }
    const size_t n = parts.size();
    std::vector<Role> roles(n);
    // Every role starts from the bindings here; the scheduler keeps its own aside.
    for (size_t r = 0; r < n; ++r) {
        roles[r].index = static_cast<int>(r);
        roles[r].body = r == 0 ? &op->then_case : &op->else_case;
        roles[r].act = &parts[r];
        roles[r].state.tvars.assign(tvars_.begin(), tvars_.begin() + static_cast<std::ptrdiff_t>(tdepth_));
        roles[r].state.tdepth = tdepth_;
        roles[r].state.buffers = buffers_;
        roles[r].state.stmt_loc = stmt_loc_;
        roles[r].state.unroll_depth = unroll_depth_;
        roles[r].state.shared_top = shared_top_;
        roles[r].state.peer_role = peers && r > 0 ? static_cast<int>(r) : -1;
    }
    RoleState outer;
    swap_role_state(outer);
    auto body = [this](Role* role) {
        {
            std::unique_lock<std::mutex> lock(role_mutex_);
            role_cv_.wait(lock, [&] { return role_running_ == role->index; });
        }
        current_role_ = role;
        swap_role_state(role->state);
        try {
            if (!role->act->empty() && !role->abort) exec(*role->body, *role->act);
        } catch (const RoleAbort&) {
        } catch (...) {
            role->error = std::current_exception();
        }
        swap_role_state(role->state);
        current_role_ = nullptr;
        std::unique_lock<std::mutex> lock(role_mutex_);
        role->done = true;
        role_running_ = -1;
        role_cv_.notify_all();
    };
    std::vector<std::thread> threads;
    for (auto& r : roles) threads.emplace_back(body, &r);
    auto all_done = [&] {
        for (auto& r : roles)
            if (!r.done) return false;
        return true;
    };
    auto any_error = [&] {
        for (auto& r : roles)
            if (r.error) return true;
        return false;
    };
    size_t next = 0;
    // The CTA abandoned (in a cluster, another CTA failed): its roles unwind as below, and
    // the abandonment goes on up once their threads are joined.
    std::exception_ptr abandoned;
    // A fatal error in one role ends the run: the others are abandoned where they wait.
    while (!all_done() && !any_error()) {
        // The next role that may progress: not done, and not waiting on a state nothing
        // has changed since it looked; when none, the first waiting one gives up.
        int pick = -1;
        for (size_t k = 0; k < n && pick < 0; ++k) {
            Role& r = roles[(next + k) % n];
            if (!r.done && (!r.waiting || r.progress_seen != sync_progress_)) pick = r.index;
        }
        // No role of this CTA can go on: in a cluster, the other CTAs may change that.
        if (pick < 0) {
            bool resumed = false;
            try {
                resumed = yield_cluster();
            } catch (...) {
                abandoned = std::current_exception();
                break;
            }
            if (resumed) continue;
        }
        if (pick < 0) {
            for (size_t k = 0; k < n && pick < 0; ++k)
                if (!roles[(next + k) % n].done) pick = roles[(next + k) % n].index;
            roles[static_cast<size_t>(pick)].give_up = true;
        }
        next = (static_cast<size_t>(pick) + 1) % n;
        std::unique_lock<std::mutex> lock(role_mutex_);
        role_running_ = pick;
        role_cv_.notify_all();
        role_cv_.wait(lock, [&] { return role_running_ == -1; });
    }
    std::exception_ptr error;
    for (auto& r : roles)
        if (r.error && !error) error = r.error;
    // A role left unfinished by another's error unwinds now (its frames own storage).
    for (auto& r : roles)
        if (!r.done) {
            r.abort = true;
            std::unique_lock<std::mutex> lock(role_mutex_);
            role_running_ = r.index;
            role_cv_.notify_all();
            role_cv_.wait(lock, [&] { return role_running_ == -1; });
        }
    for (auto& t : threads) t.join();
    swap_role_state(outer);
    if (error) std::rethrow_exception(error);
    if (abandoned) std::rethrow_exception(abandoned);
}

void Executor::exec_named_barrier(const MachineOpNode* op, const Active& act) {
    if (act.empty()) return;  // a branch no thread of this role takes
    const bool sync = op->op == MachineOp::NamedBarrier;
    const int64_t id = op->imm.at(0), count = op->imm.at(1);
    const SourceLoc loc = at(op->loc);
    const std::string what = std::string(sync ? "barrier.sync " : "barrier.arrive ") + std::to_string(id) + ", " +
                             std::to_string(count);
    isa::NamedBarrierArrival r = named_barriers_.arrive(id, count, static_cast<int64_t>(act.size()), sync);
    ++sync_progress_;
    if (r.problem != isa::NamedBarrierProblem::None)
        issue(IssueKind::BarrierDivergence, loc, act.front(), [&] {
            switch (r.problem) {
            case isa::NamedBarrierProblem::BadId: return what + ": no such barrier (ids 0..15)";
            case isa::NamedBarrierProblem::BadCount: return what + ": the thread count is not a positive multiple of 32";
            case isa::NamedBarrierProblem::CountMismatch:
                return what + ": another thread count than the other arrivals of the barrier's phase";
            default:
                return what + " reached by " + std::to_string(act.size()) + " threads (" +
                       std::to_string(act.front()) + ".." + std::to_string(act.back()) +
                       ") with more arrivals than its count in the phase";
            }
        });
    if (r.problem == isa::NamedBarrierProblem::BadId || r.problem == isa::NamedBarrierProblem::BadCount) return;
    // A phase of syncs alone orders every participant's accesses before the barrier
    // before their accesses after it: a new epoch of the race shadow. A phase with
    // arrives orders only the arrivers' earlier accesses before the syncers' later ones;
    // the shadow has no such partial order, so it starts no epoch (it keeps reporting
    // what the barrier does not order, and what it does: none of tilec's ping-pong
    // barriers order memory).
    auto completed_phase = [&] {
        if (!named_barriers_.had_arrive(id)) ++epoch_;
    };
    if (r.completed) {
        completed_phase();
        return;
    }
    if (!sync) return;
    // Wait for the others: in a warpgroup role, another role may arrive.
    while (!named_barriers_.completed(id, r.phase))
        if (!yield_blocked()) break;
    if (named_barriers_.completed(id, r.phase)) return;  // the completing arrival started the epoch
    issue(IssueKind::BarrierDivergence, loc, act.front(), [&] {
        int64_t arrived = 0;
        for (const auto& p : named_barriers_.pending())
            if (p.id == id) arrived = p.arrived;
        return what + " reached by " + std::to_string(act.size()) + " threads (" + std::to_string(act.front()) + ".." +
               std::to_string(act.back()) + "), " + std::to_string(arrived) + " of its " + std::to_string(count) +
               " arrivals, and nothing can bring the rest: the threads would hang";
    });
    named_barriers_.abandon(id);
}

}  // namespace tilec::sim::detail
