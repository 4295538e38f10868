// libtile_runtime from C++ (Catch2; ctest names runtime/<case>): the header as a C++
// program sees it, and the thread pool's promises that need C++ to check: blocks really
// run in parallel, threads are reused, exceptions come back as statuses, fork() is safe.
// No case sleeps or measures time.
#include <tile/runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#if defined(__unix__)
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace {

// Every API function is noexcept in C++.
static_assert(noexcept(tile_cpu_launch(nullptr, 0, 0, 0, nullptr, nullptr)));
static_assert(noexcept(tile_set_error(TILE_ERROR_INTERNAL, "x")));
static_assert(noexcept(tile_last_error()));
static_assert(std::is_standard_layout_v<tile_cpu_options>);
static_assert(TILE_RUNTIME_VERSION == 100);

// A grid whose blocks count their own calls and note the thread that ran them.
struct CountingGrid {
    int64_t gx, gy, gz;
    std::vector<std::atomic<int>> counts;
    std::atomic<int64_t> out_of_range{0};
    std::mutex mutex;
    std::set<std::thread::id> threads;

    CountingGrid(int64_t x, int64_t y, int64_t z)
        : gx(x), gy(y), gz(z), counts(static_cast<size_t>(x * y * z)) {}

    static void block(void* ctx, int64_t bx, int64_t by, int64_t bz) {
        auto* g = static_cast<CountingGrid*>(ctx);
        if (bx < 0 || bx >= g->gx || by < 0 || by >= g->gy || bz < 0 || bz >= g->gz) {
            ++g->out_of_range;
            return;
        }
        g->counts[static_cast<size_t>((bz * g->gy + by) * g->gx + bx)].fetch_add(1);
        std::lock_guard<std::mutex> lock(g->mutex);
        g->threads.insert(std::this_thread::get_id());
    }

    tile_status launch(const tile_cpu_options* opt) { return tile_cpu_launch(opt, gx, gy, gz, block, this); }

    bool exactly_once() const {
        return out_of_range == 0 && std::all_of(counts.begin(), counts.end(),
                                                [](const std::atomic<int>& c) { return c.load() == 1; });
    }
};

tile_cpu_options with_threads(int32_t n) {
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = n;
    return opt;
}

// Unsets TILE_NUM_THREADS for the duration of a case, whatever the caller's environment.
struct CleanEnvironment {
    CleanEnvironment() { unsetenv("TILE_NUM_THREADS"); }
    ~CleanEnvironment() { unsetenv("TILE_NUM_THREADS"); }
};

}  // namespace

TEST_CASE("header: options initialisers agree and set struct_size", "[runtime]") {
    tile_cpu_options a = TILE_CPU_OPTIONS_INIT;
    tile_cpu_options b;
    b.struct_size = 7;
    b.num_threads = 9;
    tile_cpu_options_init(&b);
    CHECK(a.struct_size == sizeof(tile_cpu_options));
    CHECK(b.struct_size == sizeof(tile_cpu_options));
    CHECK(a.num_threads == 0);
    CHECK(b.num_threads == 0);
    CHECK(tile_runtime_version() == TILE_RUNTIME_VERSION);
}

TEST_CASE("status strings are distinct, and unknown values have one too", "[runtime]") {
    std::set<std::string> seen;
    for (int s = TILE_SUCCESS; s <= TILE_ERROR_DRIVER; ++s) {
        std::string text = tile_status_string(static_cast<tile_status>(s));
        CHECK_FALSE(text.empty());
        CHECK(text != "unknown status");
        CHECK(seen.insert(text).second);
    }
    CHECK(std::string(tile_status_string(static_cast<tile_status>(99))) == "unknown status");
}

TEST_CASE("the last error is per thread", "[runtime]") {
    tile_clear_error();
    tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "main thread: %d", 1);
    std::string other_at_start, other_at_end;
    std::thread other([&] {
        other_at_start = tile_last_error();
        tile_set_error(TILE_ERROR_NO_DEVICE, "other thread: %d", 2);
        other_at_end = tile_last_error();
    });
    other.join();
    CHECK(other_at_start.empty());
    CHECK(other_at_end == "other thread: 2");
    CHECK(std::string(tile_last_error()) == "main thread: 1");
}

TEST_CASE("tile_set_error formats, truncates long messages and returns the status", "[runtime]") {
    CHECK(tile_set_error(TILE_ERROR_LAUNCH, "%s failed with %d", "cuLaunchKernel", 700) == TILE_ERROR_LAUNCH);
    CHECK(std::string(tile_last_error()) == "cuLaunchKernel failed with 700");
    const std::string huge(100000, 'y');
    CHECK(tile_set_error(TILE_ERROR_INTERNAL, "%s", huge.c_str()) == TILE_ERROR_INTERNAL);
    const std::string got = tile_last_error();
    CHECK(got.size() == TILE_ERROR_MESSAGE_MAX - 1);
    CHECK(got == huge.substr(0, TILE_ERROR_MESSAGE_MAX - 4) + "...");
    tile_clear_error();
    CHECK(std::string(tile_last_error()).empty());
}

TEST_CASE("launch runs every block of a grid exactly once", "[runtime]") {
    CleanEnvironment env;
    const int64_t grids[][3] = {{1, 1, 1}, {7, 3, 2}, {1000, 1, 1}, {1, 1, 1000}, {17, 19, 23}, {2, 3, 1}};
    for (int32_t threads : {0, 1, 2, 4, 16}) {
        for (const auto& shape : grids) {
            CountingGrid g(shape[0], shape[1], shape[2]);
            tile_cpu_options opt = with_threads(threads);
            INFO("grid " << shape[0] << "x" << shape[1] << "x" << shape[2] << ", num_threads " << threads);
            REQUIRE(g.launch(&opt) == TILE_SUCCESS);
            CHECK(g.exactly_once());
            CHECK(g.threads.size() <= static_cast<size_t>(threads == 0 ? TILE_MAX_THREADS : threads));
        }
    }
}

TEST_CASE("writes of the blocks are visible to the caller when launch returns", "[runtime]") {
    CleanEnvironment env;
    std::vector<int64_t> out(4096, -1);  // plain memory, no atomics
    auto fill = [](void* ctx, int64_t bx, int64_t by, int64_t) {
        static_cast<int64_t*>(ctx)[by * 64 + bx] = by * 64 + bx;
    };
    tile_cpu_options opt = with_threads(4);
    for (int round = 0; round < 20; ++round) {
        std::fill(out.begin(), out.end(), -1);
        REQUIRE(tile_cpu_launch(&opt, 64, 64, 1, fill, out.data()) == TILE_SUCCESS);
        for (int64_t i = 0; i < 4096; ++i) REQUIRE(out[static_cast<size_t>(i)] == i);
    }
}

// Four blocks that each wait until all four have started: this returns only if four
// threads really run the launch at the same time (a hang here fails by ctest's timeout).
TEST_CASE("num_threads 4 runs four blocks at the same time", "[runtime]") {
    CleanEnvironment env;
    struct Rendezvous {
        std::atomic<int> arrived{0};
        std::mutex mutex;
        std::set<std::thread::id> threads;
    } r;
    auto block = [](void* ctx, int64_t, int64_t, int64_t) {
        auto* rv = static_cast<Rendezvous*>(ctx);
        {
            std::lock_guard<std::mutex> lock(rv->mutex);
            rv->threads.insert(std::this_thread::get_id());
        }
        rv->arrived.fetch_add(1);
        while (rv->arrived.load() < 4) std::this_thread::yield();
    };
    tile_cpu_options opt = with_threads(4);
    REQUIRE(tile_cpu_launch(&opt, 4, 1, 1, block, &r) == TILE_SUCCESS);
    CHECK(r.arrived == 4);
    CHECK(r.threads.size() == 4);
}

TEST_CASE("TILE_NUM_THREADS limits the threads of a launch with default options", "[runtime]") {
    CleanEnvironment env;
    for (int n : {1, 2, 3}) {
        setenv("TILE_NUM_THREADS", std::to_string(n).c_str(), 1);
        CountingGrid g(300, 2, 1);
        REQUIRE(g.launch(nullptr) == TILE_SUCCESS);
        CHECK(g.exactly_once());
        CHECK(g.threads.size() <= static_cast<size_t>(n));
        if (n == 1) CHECK(*g.threads.begin() == std::this_thread::get_id());
    }
}

TEST_CASE("an invalid TILE_NUM_THREADS is an invalid argument with a message", "[runtime]") {
    CleanEnvironment env;
    for (const char* value : {"abc", "-1", "0", "12abc", "1e3", "1025", "18446744073709551617"}) {
        setenv("TILE_NUM_THREADS", value, 1);
        tile_clear_error();
        CountingGrid g(8, 1, 1);
        INFO("TILE_NUM_THREADS=" << value);
        CHECK(g.launch(nullptr) == TILE_ERROR_INVALID_ARGUMENT);
        const std::string message = tile_last_error();
        CHECK(message.find("TILE_NUM_THREADS") != std::string::npos);
        CHECK(message.find(value) != std::string::npos);
        CHECK(g.threads.empty());
    }
}

#if defined(__unix__)
// In a child process, whose pool starts empty (see the fork test), whatever cases ran
// before in this process: with num_threads 3 the pool needs 2 threads, and 200 launches
// must not add more.
TEST_CASE("pool threads are reused across launches", "[runtime]") {
    CleanEnvironment env;
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        std::set<std::thread::id> all;
        tile_cpu_options opt = with_threads(3);
        bool ok = true;
        for (int round = 0; round < 200 && ok; ++round) {
            CountingGrid g(50, 1, 1);
            ok = g.launch(&opt) == TILE_SUCCESS && g.exactly_once();
            all.insert(g.threads.begin(), g.threads.end());
        }
        _exit(!ok ? 1 : all.size() > 3 ? 2 : 0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    INFO("child exit code: 1 = a launch failed, 2 = more than 3 distinct threads");
    CHECK(WEXITSTATUS(status) == 0);
}
#endif

TEST_CASE("zero-size grids run nothing; negative sizes are invalid", "[runtime]") {
    CleanEnvironment env;
    CountingGrid g(1, 1, 1);
    CHECK(tile_cpu_launch(nullptr, 0, 1, 1, CountingGrid::block, &g) == TILE_SUCCESS);
    CHECK(tile_cpu_launch(nullptr, 1, 0, 1, CountingGrid::block, &g) == TILE_SUCCESS);
    CHECK(tile_cpu_launch(nullptr, 1, 1, 0, CountingGrid::block, &g) == TILE_SUCCESS);
    CHECK(tile_cpu_launch(nullptr, -3, 1, 1, CountingGrid::block, &g) == TILE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(tile_last_error()).find("-3") != std::string::npos);
    CHECK(tile_cpu_launch(nullptr, 0, 0, -1, CountingGrid::block, &g) == TILE_ERROR_INVALID_ARGUMENT);
    CHECK(g.counts[0] == 0);
}

TEST_CASE("options from a newer header (a larger struct_size) are accepted", "[runtime]") {
    CleanEnvironment env;
    struct NewerOptions {
        tile_cpu_options v1;
        int64_t field_from_the_future;
    } newer{};
    newer.v1.struct_size = sizeof(NewerOptions);
    newer.v1.num_threads = 2;
    CountingGrid g(10, 10, 1);
    CHECK(g.launch(&newer.v1) == TILE_SUCCESS);
    CHECK(g.exactly_once());
    CHECK(g.threads.size() <= 2);
}

TEST_CASE("launches from four threads at once each run their grid exactly once", "[runtime]") {
    CleanEnvironment env;
    std::atomic<int> bad{0};
    std::vector<std::thread> launchers;
    for (int t = 0; t < 4; ++t) {
        launchers.emplace_back([t, &bad] {
            for (int round = 0; round < 50; ++round) {
                CountingGrid g(1 + (round * 7 + t) % 97, 1 + round % 4, 1 + t % 2);
                tile_cpu_options opt = with_threads(round % 6);  // 0 (default) to 5
                if (g.launch(&opt) != TILE_SUCCESS || !g.exactly_once()) ++bad;
            }
        });
    }
    for (std::thread& t : launchers) t.join();
    CHECK(bad == 0);
}

TEST_CASE("a launch from inside a block runs inline on that block's thread", "[runtime]") {
    CleanEnvironment env;
    struct Outer {
        std::vector<std::unique_ptr<CountingGrid>> inner;
        std::atomic<int> failed{0};
        std::atomic<int> not_inline{0};
    } outer;
    for (int i = 0; i < 12; ++i) outer.inner.push_back(std::make_unique<CountingGrid>(4, 3, 2));
    auto block = [](void* ctx, int64_t bx, int64_t by, int64_t) {
        auto* o = static_cast<Outer*>(ctx);
        CountingGrid& g = *o->inner[static_cast<size_t>(by * 4 + bx)];
        tile_cpu_options opt = with_threads(8);
        if (g.launch(&opt) != TILE_SUCCESS) ++o->failed;
        if (g.threads.size() != 1 || *g.threads.begin() != std::this_thread::get_id()) ++o->not_inline;
    };
    tile_cpu_options opt = with_threads(4);
    REQUIRE(tile_cpu_launch(&opt, 4, 3, 1, block, &outer) == TILE_SUCCESS);
    CHECK(outer.failed == 0);
    CHECK(outer.not_inline == 0);
    for (const auto& g : outer.inner) CHECK(g->exactly_once());
}

TEST_CASE("a block that throws gives a status and a message, not a crash", "[runtime]") {
    CleanEnvironment env;
    std::atomic<int> calls{0};
    auto throws = [](void* ctx, int64_t bx, int64_t, int64_t) {
        static_cast<std::atomic<int>*>(ctx)->fetch_add(1);
        if (bx == 5) throw std::runtime_error("block 5 is broken");
    };
    for (int32_t threads : {1, 4}) {
        calls = 0;
        tile_clear_error();
        tile_cpu_options opt = with_threads(threads);
        CHECK(tile_cpu_launch(&opt, 100, 1, 1, throws, &calls) == TILE_ERROR_INTERNAL);
        CHECK(std::string(tile_last_error()).find("block 5 is broken") != std::string::npos);
        CHECK(calls <= 100);
    }
    auto out_of_memory = [](void*, int64_t, int64_t, int64_t) { throw std::bad_alloc(); };
    tile_cpu_options opt = with_threads(2);
    CHECK(tile_cpu_launch(&opt, 10, 1, 1, out_of_memory, nullptr) == TILE_ERROR_OUT_OF_MEMORY);
    auto throws_int = [](void*, int64_t, int64_t, int64_t) { throw 42; };
    CHECK(tile_cpu_launch(&opt, 10, 1, 1, throws_int, nullptr) == TILE_ERROR_INTERNAL);
    // The pool still works afterwards.
    CountingGrid g(100, 1, 1);
    CHECK(g.launch(&opt) == TILE_SUCCESS);
    CHECK(g.exactly_once());
}

#if defined(__unix__)
// Pool threads leave asynchronous signals (SIGINT, SIGTERM, ...) to the application's own
// threads, but not faults: a crash handler must still run on them.
TEST_CASE("pool threads block asynchronous signals but not faults", "[runtime]") {
    CleanEnvironment env;
    struct Masks {
        std::thread::id caller = std::this_thread::get_id();
        std::atomic<int> arrived{0};
        std::atomic<int> helpers{0};
        std::atomic<int> wrong{0};
    } m;
    auto block = [](void* ctx, int64_t, int64_t, int64_t) {
        auto* masks = static_cast<Masks*>(ctx);
        masks->arrived.fetch_add(1);
        while (masks->arrived.load() < 3) std::this_thread::yield();  // three threads at once
        if (std::this_thread::get_id() == masks->caller) return;
        ++masks->helpers;
        sigset_t current;
        if (pthread_sigmask(SIG_BLOCK, nullptr, &current) != 0 || sigismember(&current, SIGINT) != 1 ||
            sigismember(&current, SIGTERM) != 1 || sigismember(&current, SIGSEGV) != 0 ||
            sigismember(&current, SIGBUS) != 0)
            ++masks->wrong;
    };
    tile_cpu_options opt = with_threads(3);
    REQUIRE(tile_cpu_launch(&opt, 3, 1, 1, block, &m) == TILE_SUCCESS);
    CHECK(m.helpers == 2);
    CHECK(m.wrong == 0);
}
#endif

#if defined(__unix__)
TEST_CASE("a child process after fork() can launch", "[runtime]") {
    CleanEnvironment env;
    tile_cpu_options opt = with_threads(4);
    CountingGrid before(64, 1, 1);
    REQUIRE(before.launch(&opt) == TILE_SUCCESS);  // the parent's pool has threads now
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        CountingGrid g(64, 4, 1);
        bool ok = g.launch(&opt) == TILE_SUCCESS && g.exactly_once();
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
#endif

TEST_CASE("tile_cpu_x86_level agrees with the compiler's own CPU checks and obeys TILE_CPU_MAX_LEVEL",
          "[runtime]") {
    // An independent oracle: GCC's and Clang's __builtin_cpu_supports knows the psABI
    // levels (libgcc's / compiler-rt's CPUID code, not ours).
    int want = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    want = __builtin_cpu_supports("x86-64-v4")   ? 4
           : __builtin_cpu_supports("x86-64-v3") ? 3
           : __builtin_cpu_supports("x86-64-v2") ? 2
                                                 : 1;
#endif
    const char* saved = std::getenv("TILE_CPU_MAX_LEVEL");
    std::string restore = saved ? saved : "";
    unsetenv("TILE_CPU_MAX_LEVEL");
    CHECK(tile_cpu_x86_level() == want);
    for (int cap = 0; cap <= 4; ++cap) {
        setenv("TILE_CPU_MAX_LEVEL", std::to_string(cap).c_str(), 1);
        CHECK(tile_cpu_x86_level() == std::min(cap, want));  // a cap never raises it
    }
    for (const char* ignored : {"", "5", "-1", "33", "x", "3x"}) {
        setenv("TILE_CPU_MAX_LEVEL", ignored, 1);
        CHECK(tile_cpu_x86_level() == want);
    }
    if (saved)
        setenv("TILE_CPU_MAX_LEVEL", restore.c_str(), 1);
    else
        unsetenv("TILE_CPU_MAX_LEVEL");
}
