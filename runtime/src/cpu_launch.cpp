// tile_cpu_launch: checks a launch's arguments and options, decides how many threads run
// it, and hands the grid to the thread pool (or runs it inline when nested).
#include <cctype>
#include <cinttypes>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "thread_pool.h"
#include "tile/runtime.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace tilec::runtime {
namespace {

// Grids are limited to 2^62 blocks, so that block counters never overflow.
constexpr int64_t kMaxBlocks = int64_t{1} << 62;

// The smallest struct_size a caller's tile_cpu_options may have: version 1 of the struct.
constexpr size_t kMinOptionsSize = offsetof(tile_cpu_options, num_threads) + sizeof(int32_t);

// How many threads this process may run on: its CPU affinity where the system says,
// else std::thread::hardware_concurrency, at least 1 and at most TILE_MAX_THREADS.
int hardware_threads() noexcept {
    int count = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) count = CPU_COUNT(&set);
#endif
    if (count <= 0) count = static_cast<int>(std::thread::hardware_concurrency());
    if (count <= 0) count = 1;
    return count < TILE_MAX_THREADS ? count : TILE_MAX_THREADS;
}

// Parses TILE_NUM_THREADS: unset or empty means the hardware's count; otherwise it must
// be a decimal integer from 1 to TILE_MAX_THREADS (spaces around it are allowed).
tile_status threads_from_environment(int* out, const char* who) noexcept {
    const char* value = std::getenv("TILE_NUM_THREADS");
    if (value == nullptr || value[0] == '\0') {
        *out = hardware_threads();
        return TILE_SUCCESS;
    }
    const char* p = value;
    while (std::isspace(static_cast<unsigned char>(*p))) ++p;
    int64_t parsed = 0;
    bool digits = false;
    while (*p >= '0' && *p <= '9') {
        digits = true;
        if (parsed <= TILE_MAX_THREADS) parsed = parsed * 10 + (*p - '0');
        ++p;
    }
    while (std::isspace(static_cast<unsigned char>(*p))) ++p;
    if (!digits || *p != '\0' || parsed < 1 || parsed > TILE_MAX_THREADS) {
        return tile_set_error(
            TILE_ERROR_INVALID_ARGUMENT,
            "%s: TILE_NUM_THREADS=\"%.64s%s\" is not a valid thread count: expected "
            "an integer from 1 to %d, or unset for one thread per hardware thread",
            who, value, std::strlen(value) > 64 ? "..." : "", TILE_MAX_THREADS);
    }
    *out = static_cast<int>(parsed);
    return TILE_SUCCESS;
}

// The number of threads a launch with these options may use (the caller included).
tile_status resolve_threads(const tile_cpu_options* opt, int* out, const char* who) noexcept {
    if (opt == nullptr) return threads_from_environment(out, who);
    if (opt->struct_size < kMinOptionsSize) {
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "%s: options struct_size is %" PRIu32
                              ", less than %zu: initialise tile_cpu_options with TILE_CPU_OPTIONS_INIT or "
                              "tile_cpu_options_init()",
                              who, opt->struct_size, kMinOptionsSize);
    }
    if (opt->num_threads == 0) return threads_from_environment(out, who);
    if (opt->num_threads < 0 || opt->num_threads > TILE_MAX_THREADS) {
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "%s: options num_threads is %" PRId32
                              ": expected 0 (the default) or a count from 1 to %d",
                              who, opt->num_threads, TILE_MAX_THREADS);
    }
    *out = opt->num_threads;
    return TILE_SUCCESS;
}

tile_status launch(const tile_cpu_options* opt, int64_t gx, int64_t gy, int64_t gz, tile_block_fn fn,
                   void* ctx) noexcept {
    if (gx < 0 || gy < 0 || gz < 0) {
        return tile_set_error(
            TILE_ERROR_INVALID_ARGUMENT,
            "tile_cpu_launch: grid size %" PRId64 " x %" PRId64 " x %" PRId64 " is negative", gx, gy, gz);
    }
    if (fn == nullptr) return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "tile_cpu_launch: fn is NULL");
    int threads = 1;
    if (tile_status status = resolve_threads(opt, &threads, "tile_cpu_launch"); status != TILE_SUCCESS) return status;
    if (gx == 0 || gy == 0 || gz == 0) return TILE_SUCCESS;
    if (gx > kMaxBlocks / gy || gx * gy > kMaxBlocks / gz) {
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "tile_cpu_launch: grid %" PRId64 " x %" PRId64 " x %" PRId64
                              " has more than 2^62 blocks",
                              gx, gy, gz);
    }

    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.gx = gx;
    job.gy = gy;
    job.total = gx * gy * gz;
    if (job.total < threads) threads = static_cast<int>(job.total);
    if (threads <= 1 || in_block()) {
        // Nested launches run inline: the pool's threads may all be busy running the
        // blocks that launched them, and this thread has nothing better to do.
        job.chunk = job.total;
        run_blocks(job);
    } else {
        // Several chunks a thread, so that threads that finish early take over work.
        job.chunk = job.total / (int64_t{threads} * 8);
        if (job.chunk < 1) job.chunk = 1;
        run_with_helpers(job, threads - 1);
    }
    if (job.status != TILE_SUCCESS) return tile_set_error(job.status, "%s", job.message);
    return TILE_SUCCESS;
}

}  // namespace
}  // namespace tilec::runtime

extern "C" TILE_API tile_status tile_cpu_launch(const tile_cpu_options* opt, int64_t gx, int64_t gy,
                                                int64_t gz, tile_block_fn fn, void* ctx) noexcept {
    return tilec::runtime::launch(opt, gx, gy, gz, fn, ctx);
}

extern "C" TILE_API tile_status tile_cpu_check_options(const tile_cpu_options* opt, const char* who) noexcept {
    int threads = 1;
    return tilec::runtime::resolve_threads(opt, &threads, who != nullptr ? who : "tile_cpu_check_options");
}
