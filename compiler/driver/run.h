// `tilec run`: compile one export of a .tile file for the host, run it on seeded random
// data through the JIT, run the reference interpreter on the same data in float64, and
// report how far apart the outputs are (PASS/FAIL) and how long each took.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec::driver {

struct RunOptions {
    std::string input;
    std::string kernel;  // the export's symbol; "" = the only export of the file
    std::vector<std::pair<std::string, int64_t>> sizes;        // --size M=300,N=200
    std::vector<std::pair<std::string, std::string>> scalars;  // --scalar eps=1e-5
    // --int-range NAME=LO:HI: integer input NAME uniform in [LO, HI] (0 included), for
    // index tensors (a block table, sequence lengths) that must stay in range.
    std::vector<std::pair<std::string, std::string>> int_ranges;
    std::vector<std::pair<std::string, std::string>> defines;  // -D BM=64
    std::vector<std::string> include_dirs;
    std::string stdlib_dir;
    std::vector<std::string> targets;  // one of: "host" (default), "sim:ARCH" (the GPU simulator)
    uint64_t seed = 1;
    int repeat = 3;                    // timed runs of the compiled kernel (best is reported)
    int threads = 0;                   // tile_cpu_options.num_threads (0: the runtime's default)
    std::optional<double> rtol, atol;  // override the per-dtype tolerances
    bool reference = true;             // run the interpreter (--no-reference: skip it)
    bool color = false;
    bool profile = false;            // sim: memory counters per source line
    bool sim_drop_barriers = false;  // sim: run without barriers (tests of the race check)
    std::string sim_drop_sync;       // sim: "barrier:N" / "wait:N", drop that one (debug)
    int64_t sim_blocks = 0;          // sim: run this many blocks of the grid, spread over it (0: all)
    unsigned error_limit = 20;
};

// Runs the whole command; returns the exit status: 0 PASS (or ran, with no reference),
// 1 FAIL or any user error. Internal errors throw tilec::InternalError (exit 2).
int run_kernel(const RunOptions& options);

// `tilec run ARGS...` (argv[0] is "run"): parses the options with CLI11, then
// run_kernel. `default_stdlib` is used when --stdlib-dir is not given.
int run_command(int argc, char** argv, const std::string& default_stdlib);

}  // namespace tilec::driver
