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
#include <thread>

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
}

bool Executor::yield_blocked() {
    Role* me = current_role_;
    if (!me) return false;
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

void Executor::run_roles(const IfNode* op, const Active& producers, const Active& consumers) {
    if (current_role_) fatal(op->loc, "a warp-role split inside a warp role");
    Role roles[2];
    roles[0].body = &op->then_case;
    roles[0].act = &producers;
    roles[1].body = &op->else_case;
    roles[1].act = &consumers;
    // Both start from the bindings here; the scheduler keeps its own aside.
    for (int r = 0; r < 2; ++r) {
        roles[r].index = r;
        roles[r].state.tvars.assign(tvars_.begin(), tvars_.begin() + static_cast<std::ptrdiff_t>(tdepth_));
        roles[r].state.tdepth = tdepth_;
        roles[r].state.buffers = buffers_;
        roles[r].state.stmt_loc = stmt_loc_;
        roles[r].state.unroll_depth = unroll_depth_;
        roles[r].state.shared_top = shared_top_;
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
    std::thread threads[2] = {std::thread(body, &roles[0]), std::thread(body, &roles[1])};
    int next = 0;
    for (;;) {
        if (roles[0].done && roles[1].done) break;
        if (roles[0].error || roles[1].error) {
            // A fatal error in one role ends the run: the other is abandoned where it waits.
            break;
        }
        // The next role that may progress: not done, and not waiting on a state nothing
        // has changed since it looked; when none, the first waiting one gives up.
        int pick = -1;
        for (int k = 0; k < 2 && pick < 0; ++k) {
            Role& r = roles[(next + k) % 2];
            if (!r.done && (!r.waiting || r.progress_seen != sync_progress_)) pick = r.index;
        }
        if (pick < 0) {
            for (int k = 0; k < 2 && pick < 0; ++k)
                if (!roles[(next + k) % 2].done) pick = roles[(next + k) % 2].index;
            roles[pick].give_up = true;
        }
        next = (pick + 1) % 2;
        std::unique_lock<std::mutex> lock(role_mutex_);
        role_running_ = pick;
        role_cv_.notify_all();
        role_cv_.wait(lock, [&] { return role_running_ == -1; });
    }
    std::exception_ptr error = roles[0].error ? roles[0].error : roles[1].error;
    // A role left unfinished by the other's error unwinds now (its frames own storage).
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
}

}  // namespace tilec::sim::detail
