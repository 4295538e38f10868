// Passes and the pass manager. A pass is a function PrimFunc -> PrimFunc; the manager
// runs a list of them over every function of a module, verifies the IR after each one,
// and shows the IR (--print-after-all, --print-after=NAME) and timings (--time-passes).
#pragma once
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/diagnostics.h"

namespace tilec::ir {

// What a pass may use besides the IR: the diagnostics engine for user errors (may be
// null in tests) and string options (e.g. {"target", "sm_90a"}).
struct PassContext {
    DiagnosticEngine* diag = nullptr;
    std::map<std::string, std::string> options;

    // The option's value, or `fallback` when unset.
    std::string option(const std::string& key, const std::string& fallback = "") const;
};

struct Pass {
    std::string name;
    std::function<PrimFunc(const PrimFunc&, PassContext&)> run;
};

struct PassManagerOptions {
    bool verify = true;  // verify the input and after every pass
    bool print_after_all = false;
    std::vector<std::string> print_after;  // pass names
    std::ostream* print_stream = nullptr;  // default std::cerr
    bool time_passes = false;
    std::ostream* time_stream = nullptr;  // default std::cerr
};

class PassManager {
public:
    explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

    void add(Pass pass);
    void add(std::string name, std::function<PrimFunc(const PrimFunc&, PassContext&)> run);
    const std::vector<Pass>& passes() const { return passes_; }

    // Runs every pass over every function, in order (function by function). After each
    // pass: prints the IR if asked, with a header line
    //     // ---- IR after <pass> (<func>) ----
    // then verifies it. A verifier failure throws InternalError naming the pass
    // ("<input>" for the IR given to run); an InternalError thrown inside a pass gets
    // its `pass` filled in if empty, and is rethrown. If a pass reported new errors to
    // ctx.diag, stops and returns nullopt (the diagnostics say why). With time_passes,
    // prints a table of wall time per pass when done.
    std::optional<Module> run(const Module& m, PassContext& ctx);
    std::optional<PrimFunc> run(const PrimFunc& f, PassContext& ctx);

    // Accumulated wall time per pass name, in the order passes were added.
    struct Timing {
        std::string pass;
        std::chrono::nanoseconds time{0};
        int runs = 0;
    };
    const std::vector<Timing>& timings() const { return timings_; }
    // The table printed by time_passes: one line per pass, then the total.
    void print_timings(std::ostream& os) const;

private:
    std::optional<PrimFunc> run_one(const PrimFunc& f, PassContext& ctx);
    bool should_print(const std::string& pass) const;
    PassManagerOptions options_;
    std::vector<Pass> passes_;
    std::vector<Timing> timings_;
};

// Throws InternalError (with `pass` set) if `f` fails verification.
void verify_or_throw(const PrimFunc& f, const std::string& pass);

}  // namespace tilec::ir
