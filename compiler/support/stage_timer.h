// Wall time of the stages after the Tile IR passes (LLVM IR generation, LLVM's
// optimisation and code generation, ptxas, ld.lld), per target, for --time-passes.
// Stages of several targets and exports run at once on the driver's thread pool, so
// the table is process-wide and locked; it prints in a fixed order (the target order
// the driver gives, then the stage order below), never in the order tasks finished.
#pragma once
#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

namespace tilec {

class StageTimer {
public:
    // The one table of the process; records nothing until enabled.
    static StageTimer& global();
    void enable(bool on);
    bool enabled() const;
    void add(const std::string& target, const std::string& stage, std::chrono::nanoseconds time);
    // One table per target of `targets` that has entries: a line per stage (time summed
    // over the tasks, the number of tasks), then the total. Stage times of parallel tasks
    // add up, so a target's total is CPU-side work, not the wall time of the run.
    void print(std::ostream& os, const std::vector<std::string>& targets) const;

    // Times a scope into the global table (a no-op when it is off).
    class Scope {
    public:
        Scope(std::string target, std::string stage);
        ~Scope();
        void stop();  // records now instead of at the end of the scope
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        std::string target_, stage_;
        std::chrono::steady_clock::time_point start_;
        bool on_;
    };

private:
    StageTimer() = default;
};

}  // namespace tilec
