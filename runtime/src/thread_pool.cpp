// The process-wide pool of worker threads that tile_cpu_launch shares between launches:
// started lazily, grown on demand, reused, and never in the way of fork() or dlclose().
#include "thread_pool.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <new>
#include <thread>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#define TILE_RUNTIME_POSIX 1
#endif

namespace tilec::runtime {
namespace {

// Set while this thread runs a block function. Thread-local by nature (it describes
// what this thread is doing), so it is not shared state.
thread_local bool tls_in_block = false;

class InBlockScope {
public:
    InBlockScope() : saved_(tls_in_block) { tls_in_block = true; }
    ~InBlockScope() { tls_in_block = saved_; }
    InBlockScope(const InBlockScope&) = delete;
    InBlockScope& operator=(const InBlockScope&) = delete;

private:
    bool saved_;
};

// Records the first failure of a job; later ones are dropped (one message per launch).
void fail(Job& job, tile_status status, const char* what) noexcept {
    if (job.failed.exchange(true, std::memory_order_relaxed)) return;
    job.status = status;
    std::snprintf(job.message, sizeof(job.message), "tile_cpu_launch: a block function %s", what);
}

void run_blocks_unguarded(Job& job) {
    const tile_block_fn fn = job.fn;
    void* const ctx = job.ctx;
    const int64_t gx = job.gx, gy = job.gy, total = job.total, chunk = job.chunk;
    while (!job.failed.load(std::memory_order_relaxed)) {
        const int64_t begin = job.next.fetch_add(chunk, std::memory_order_relaxed);
        if (begin >= total) return;
        const int64_t end = std::min(begin + chunk, total);
        int64_t bx = begin % gx, by = (begin / gx) % gy, bz = begin / gx / gy;
        for (int64_t i = begin; i < end; ++i) {
            fn(ctx, bx, by, bz);
            if (++bx == gx) {
                bx = 0;
                if (++by == gy) {
                    by = 0;
                    ++bz;
                }
            }
        }
    }
}

// The pool. Workers sleep on `work_` until a launch queues a job with helper slots left;
// a worker takes a slot, runs blocks with the launching thread, and goes back to sleep.
// Jobs sit in an intrusive FIFO list (no allocation), and leave it when their last slot
// is taken or when their launching thread has run out of blocks.
class ThreadPool {
public:
    void run(Job& job, int helpers) noexcept {
        int slots = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            start_workers(helpers);
            slots = std::min(helpers, workers_);
            if (slots > 0) {
                job.helper_slots = slots;
                enqueue(job);
            }
        }
        for (int i = 0; i < slots; ++i) work_.notify_one();
        run_blocks(job);
        if (slots == 0) return;
        std::unique_lock<std::mutex> lock(mutex_);
        if (job.queued) dequeue(job);  // no block is left for late helpers
        job.helpers_done.wait(lock, [&] { return job.active_helpers == 0; });
    }

private:
    // Starts threads until there are `wanted` (at most TILE_MAX_THREADS - 1: the
    // launching thread is the other one). Called with mutex_ held. A thread that cannot
    // be started is not an error: launches then use fewer helpers.
    void start_workers(int wanted) noexcept {
        wanted = std::min(wanted, TILE_MAX_THREADS - 1);
        if (workers_ >= wanted) return;
#ifdef TILE_RUNTIME_POSIX
        // Workers block the asynchronous signals (they inherit the mask), so that signals
        // meant for the application's threads are never delivered to a pool thread. Faults
        // stay unblocked: Linux resets the handler of a blocked fault signal to the default,
        // which would take a crash handler (e.g. Python's faulthandler) away.
        sigset_t all, saved;
        sigfillset(&all);
        for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) sigdelset(&all, fault);
        const bool masked = pthread_sigmask(SIG_SETMASK, &all, &saved) == 0;
#endif
        while (workers_ < wanted) {
            try {
                // Detached: the pool is never destroyed (see pool()), so neither are they.
                std::thread([this] { worker_main(); }).detach();
                ++workers_;
            } catch (...) {
                break;
            }
        }
#ifdef TILE_RUNTIME_POSIX
        if (masked) pthread_sigmask(SIG_SETMASK, &saved, nullptr);
#endif
    }

    [[noreturn]] void worker_main() noexcept {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_.wait(lock, [&] { return head_ != nullptr; });
            Job& job = *head_;
            ++job.active_helpers;
            if (--job.helper_slots == 0) dequeue(job);
            lock.unlock();
            run_blocks(job);
            lock.lock();
            // Notified under the mutex: the launching thread cannot see 0 and return
            // (ending the job's life) before this call is done with the job.
            if (--job.active_helpers == 0) job.helpers_done.notify_all();
        }
    }

    void enqueue(Job& job) noexcept {
        job.queued = true;
        job.prev = tail_;
        job.next_queued = nullptr;
        (tail_ ? tail_->next_queued : head_) = &job;
        tail_ = &job;
    }

    void dequeue(Job& job) noexcept {
        (job.prev ? job.prev->next_queued : head_) = job.next_queued;
        (job.next_queued ? job.next_queued->prev : tail_) = job.prev;
        job.prev = job.next_queued = nullptr;
        job.queued = false;
    }

    std::mutex mutex_;
    std::condition_variable work_;
    Job* head_ = nullptr;  // jobs with helper slots left, oldest first
    Job* tail_ = nullptr;
    int workers_ = 0;
};

// Global mutable state, and why: the point of the pool is that threads outlive a launch
// and are shared by every launch of the process, so there is one per process. It is
// created on first use and deliberately never destroyed: destroying it at exit would
// race with launches still running on other threads, or from other static destructors.
// (The shared library is linked with -z nodelete, so dlclose never unmaps the code its
// threads run.) After fork() the child has only the forking thread, and the parent's
// pool may have been locked by a thread that does not exist there: the child forgets
// that pool (leaking it) and starts a fresh one at its next launch.
std::atomic<ThreadPool*> g_pool{nullptr};

#ifdef TILE_RUNTIME_POSIX
void forget_pool_in_child() {
    g_pool.store(nullptr, std::memory_order_relaxed);
}
#endif

ThreadPool* pool() noexcept {
    ThreadPool* existing = g_pool.load(std::memory_order_acquire);
    if (existing != nullptr) return existing;
#ifdef TILE_RUNTIME_POSIX
    static const bool fork_handler_installed = pthread_atfork(nullptr, nullptr, forget_pool_in_child) == 0;
    (void)fork_handler_installed;
#endif
    auto* fresh = new (std::nothrow) ThreadPool;
    if (fresh == nullptr) return nullptr;
    if (g_pool.compare_exchange_strong(existing, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;  // another thread won the race
    return existing;
}

}  // namespace

bool in_block() noexcept {
    return tls_in_block;
}

void run_blocks(Job& job) noexcept {
    InBlockScope scope;
    try {
        run_blocks_unguarded(job);
    } catch (const std::bad_alloc&) {
        fail(job, TILE_ERROR_OUT_OF_MEMORY, "ran out of memory (threw std::bad_alloc)");
    } catch (const std::exception& e) {
        char what[TILE_ERROR_MESSAGE_MAX - 64];
        std::snprintf(what, sizeof(what), "threw an exception: %s", e.what());
        fail(job, TILE_ERROR_INTERNAL, what);
    } catch (...) {
        fail(job, TILE_ERROR_INTERNAL, "threw an exception of unknown type");
    }
}

void run_with_helpers(Job& job, int helpers) noexcept {
    ThreadPool* p = helpers > 0 ? pool() : nullptr;
    if (p == nullptr) {
        run_blocks(job);
        return;
    }
    p->run(job, helpers);
}

}  // namespace tilec::runtime
