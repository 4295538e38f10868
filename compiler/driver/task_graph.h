// A small task graph for the backends: exports x targets (LLVM, ptxas, ld.lld) on N
// threads. Each task writes only its own result; the driver reads results and reports
// diagnostics after run() returns, in task order, so what tilec prints and writes does
// not depend on N or on which task finished first.
#pragma once
#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace tilec::driver {

class TaskGraph {
public:
    // Adds a task that starts once every task in `deps` (indices returned by earlier
    // add calls) has finished; returns its index.
    size_t add(std::function<void()> run, std::vector<size_t> deps = {});

    // Runs every task on `jobs` threads (each with a large stack, as tilec's main
    // thread), ready tasks lowest index first. A task that throws skips the tasks that
    // depend on it; the others still run. Afterwards rethrows the exception of the
    // lowest-numbered task that threw, which is the same task for every `jobs`.
    void run(unsigned jobs);

    // After run(): the wall seconds of every task summed (`work`), and of the longest
    // chain of tasks through their dependencies (`chain`): the wall time the graph would
    // take on unlimited threads, so work / chain bounds what more threads can gain
    // (--time-passes prints both; measured at -j1 the tasks do not slow each other).
    struct Times {
        size_t tasks = 0;
        double work = 0;
        double chain = 0;
    };
    Times times() const;

private:
    struct Task {
        std::function<void()> run;
        std::vector<size_t> deps;
        std::exception_ptr error;
        bool skipped = false;
        double seconds = 0;
    };
    std::vector<Task> tasks_;
};

}  // namespace tilec::driver
