// The backends' task graph (driver/task_graph.h): dependencies run first, a failed task
// skips its dependents, and times() adds up the work and the longest dependent chain
// that --time-passes reports. Durations come from sleeps, so only bounds that a slow
// machine cannot break are checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "driver/task_graph.h"

using tilec::driver::TaskGraph;

namespace {
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
}  // namespace

TEST_CASE("task graph: dependencies finish before their dependents start, on any number of threads",
          "[task_graph]") {
    for (unsigned jobs : {1u, 2u, 4u}) {
        TaskGraph g;
        std::mutex m;
        std::vector<int> order;
        auto note = [&](int i) {
            std::lock_guard<std::mutex> lock(m);
            order.push_back(i);
        };
        size_t a = g.add([&] { sleep_ms(5); note(0); });
        size_t b = g.add([&] { note(1); });
        size_t c = g.add([&] { note(2); }, {a, b});
        g.add([&] { note(3); }, {c});
        g.run(jobs);
        REQUIRE(order.size() == 4);
        auto at = [&](int i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
        CHECK(at(2) > at(0));
        CHECK(at(2) > at(1));
        CHECK(at(3) > at(2));
    }
}

TEST_CASE("task graph: a task that throws skips its dependents and is rethrown after the others ran",
          "[task_graph]") {
    TaskGraph g;
    std::atomic<int> ran{0};
    size_t bad = g.add([] { throw std::runtime_error("first"); });
    g.add([&] { ++ran; }, {bad});   // skipped
    g.add([&] { ++ran; });          // independent: runs
    CHECK_THROWS_WITH(g.run(2), "first");
    CHECK(ran == 1);
}

TEST_CASE("task graph: times() sums the work and finds the longest chain of dependent tasks",
          "[task_graph]") {
    // a -> b is the chain (>= 60 ms); c runs beside it (>= 30 ms of work off the chain).
    TaskGraph g;
    size_t a = g.add([] { sleep_ms(30); });
    g.add([] { sleep_ms(30); }, {a});
    g.add([] { sleep_ms(30); });
    g.run(1);
    TaskGraph::Times t = g.times();
    CHECK(t.tasks == 3);
    CHECK(t.chain >= 0.060);
    CHECK(t.work >= 0.090);
    // On one thread the tasks ran one after another, so the work holds the chain and c.
    CHECK(t.work >= t.chain + 0.030);
}
