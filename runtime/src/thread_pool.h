// The CPU thread pool behind tile_cpu_launch: persistent worker threads that join the
// launching thread to run the blocks of a grid. Internal to libtile_runtime.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>

#include "tile/runtime.h"

namespace tilec::runtime {

// One launch: the grid, the block function, and what the threads running it share. It
// lives on the launching thread's stack until every thread has left it.
struct Job {
    tile_block_fn fn = nullptr;
    void* ctx = nullptr;
    int64_t gx = 1, gy = 1;
    int64_t total = 0;                // gx * gy * gz blocks, numbered x fastest
    int64_t chunk = 1;                // blocks a thread takes at a time
    std::atomic<int64_t> next{0};     // the first block nobody has taken yet
    std::atomic<bool> failed{false};  // a block threw: take no more blocks
    // Written only by the thread that set `failed` (so at most once), read by the
    // launching thread after every helper has left the job.
    tile_status status = TILE_SUCCESS;
    char message[TILE_ERROR_MESSAGE_MAX] = {};

    // Owned by the pool, guarded by its mutex.
    int helper_slots = 0;    // pool threads that may still join
    int active_helpers = 0;  // pool threads running blocks of this job now
    bool queued = false;
    Job* prev = nullptr;
    Job* next_queued = nullptr;
    std::condition_variable helpers_done;  // notified when active_helpers drops to 0
};

// Runs blocks of `job` on this thread until none is left to take, or one failed. While
// it runs, in_block() is true on this thread.
void run_blocks(Job& job) noexcept;

// True while this thread is running a block function (so a launch from it must run inline).
bool in_block() noexcept;

// Runs `job` on this thread together with up to `helpers` pool threads, and returns once
// every block has finished and no pool thread touches `job` any more. Uses fewer
// helpers (down to none) when threads cannot be started.
void run_with_helpers(Job& job, int helpers) noexcept;

}  // namespace tilec::runtime
