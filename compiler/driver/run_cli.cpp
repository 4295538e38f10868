// The command line of `tilec run` (CLI11): its options, its help text with examples, and
// the parsing of --size/--scalar lists; the work itself is run_kernel (run.cpp).
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "driver/run.h"
#include "driver/subcommand_cli.h"

namespace tilec::driver {
namespace {

const char* kRunDescription = R"(tilec run: compile one export for the host CPU, run it on seeded random
data, run the reference interpreter (Tile IR evaluated in float64) on the same data,
and compare every output (--target=sim:ARCH: run it in the GPU simulator instead).

Inputs (in and inout tensors) are uniform in [-1, 1) rounded to their element type
(integers: [-8, 8] but never 0, unsigned [1, 15], or --int-range; bool: 0 or 1); out
tensors start as
0xff bytes (NaN in every float format), so elements the kernel never writes fail the
comparison. Sizes come from --size; a size used only as a stride may be left out (it
is then the row-major stride). Scalars come from --scalar, else 1 (1.0, true).

Errors are normwise per output: max abs error = max |got - ref|; max rel error =
max |got - ref| / max |ref|. An element fails when |got - ref| > atol + rtol * max |ref|.
Default rtol (atol) by output type: f64 1e-10 (1e-14), f32 1e-5 (1e-8), f16 1e-2
(1e-5), bf16 2e-2 (1e-5), f8e4m3 0.125 (1e-3), f8e5m2 0.25 (1e-3); integers exact.
The run also fails if the kernel writes past the end of a tensor or into an input.

Times: the compiled kernel's best of --repeat runs (the checked first run included;
the later runs reuse its buffers), and the reference's one run. The reference runs
every block serially in float64; for a long run a note gives an estimate after the
first block, and --no-reference skips it (then nothing is compared).

Exit status: 0 PASS (or ran, with --no-reference); 1 FAIL, an error in the input or
the options, an error reported by the kernel (its tile_last_error() is printed), or a
crash of the compiled kernel (the signal is named).

--target=sim:ARCH lowers the export to thread level for ARCH (sm_80, gfx942, ...) and
runs it in the GPU simulator instead of the JIT: every block, all threads in lock step,
warps of ARCH's width, shared memory and barriers, values rounded as the GPU rounds
them. It reports shared-memory races, out-of-bounds accesses, uninitialised reads and
barriers not reached by every thread as errors at their source lines (the run then
fails), and with --profile prints memory counters per source line.

Examples:
  tilec run stdlib/kernels/gemm.tile --kernel gemm_f16 --size M=300,N=200,K=130
  tilec run stdlib/kernels/vector_add.tile --kernel vector_add_f32 --size N=100000 --repeat 10
  tilec run stdlib/kernels/rmsnorm.tile --kernel rmsnorm_f16 --size M=7,N=1000 --scalar eps=1e-5
  tilec run my.tile --size N=1000 --seed 7 --rtol 1e-3       (a file with one export)
  tilec run gemm.tile --kernel gemm_f16 --size M=4096,N=4096,K=4096 --no-reference
  tilec run stdlib/kernels/vector_add.tile -k vector_add_f16 -s N=3001 --target=sim:sm_80 --profile
  tilec run stdlib/kernels/gemm.tile -k gemm_f16 -s M=70,N=50,K=40 --target=host,sim:sm_80,sim:gfx942
)";

// "M=300,N=200" (already split at commas by CLI11) -> pairs; "" on success.
std::string parse_assignment(const std::string& option, const std::string& item, std::string& name,
                             std::string& value) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        return option + " " + item + ": expected NAME=VALUE, e.g. " + option +
               (option == "--size" ? " M=256,N=128" : " eps=1e-5");
    name = item.substr(0, eq);
    value = item.substr(eq + 1);
    return "";
}

}  // namespace

int run_command(int argc, char** argv, const std::string& default_stdlib) {
    CLI::App app{kRunDescription, "tilec run"};
    RunOptions o;
    std::vector<std::string> sizes, scalars, int_ranges, defines;
    // NaN: not given (the per-dtype defaults apply).
    double rtol = std::nan(""), atol = std::nan("");
    bool no_reference = false;
    std::string color = "auto";
    app.add_option("file", o.input, "The .tile file")->required()->type_name("FILE");
    app.add_option("--kernel,-k", o.kernel,
                   "The export to run (its C symbol, e.g. gemm_f16); may be left out when the\n"
                   "file has exactly one export")
        ->type_name("NAME");
    app.add_option("--size,-s", sizes, "Size arguments, e.g. --size M=300,N=200,K=130 (repeatable)")
        ->delimiter(',')
        ->type_name("NAME=N,...");
    app.add_option("--scalar", scalars,
                   "Scalar arguments, e.g. --scalar eps=1e-5 (repeatable; default 1, 1.0 or true)")
        ->delimiter(',')
        ->type_name("NAME=VALUE,...");
    app.add_option("--int-range", int_ranges,
                   "Integer input NAME uniform in [LO, HI] instead of [-8, 8] \\ {0}, e.g.\n"
                   "--int-range block_table=0:5,cache_seqlens=1:300 (index tensors; repeatable)")
        ->delimiter(',')
        ->type_name("NAME=LO:HI,...");
    app.add_option("--seed", o.seed, "Seed of the random inputs (default 1)")->type_name("N");
    app.add_option("--repeat", o.repeat, "Runs of the compiled kernel; the best time is reported (default 3)")
        ->type_name("N");
    app.add_option("--threads", o.threads, "Threads of the CPU launch (default 0: TILE_NUM_THREADS or all)")
        ->type_name("N");
    app.add_option("--rtol", rtol, "Relative tolerance (times max |ref|) for every output")->type_name("X");
    app.add_option("--atol", atol, "Absolute tolerance for every output")->type_name("X");
    app.add_flag("--no-reference", no_reference,
                 "Do not run the reference interpreter (slow for large sizes: it runs every\n"
                 "block serially in float64); the outputs are then not compared");
    app.add_option("--target", o.targets,
                   "Where to run: host (the CPU, default) or sim:ARCH (the GPU simulator running\n"
                   "ARCH's thread-level code, e.g. sim:sm_80, sim:gfx942); a list, e.g.\n"
                   "host,sim:sm_80,sim:gfx942, runs each on the same inputs against one reference run")
        ->delimiter(',')
        ->type_name("LIST");
    app.add_flag("--profile", o.profile,
                 "With sim:ARCH: print global-memory sectors and shared-memory bank conflicts\n"
                 "per warp request, per source line");
    app.add_option("--sim-blocks", o.sim_blocks,
                   "With sim:ARCH: simulate only N blocks of the grid, the first, the last and\n"
                   "evenly spaced ones between (the reference runs the same blocks; outputs\n"
                   "that no sampled block writes stay unwritten in both); default: every block")
        ->type_name("N");
    // For tests of the simulator's race check: the lowering's barriers removed.
    app.add_flag("--sim-drop-barriers", o.sim_drop_barriers, "")->group("");
    app.add_option("--sim-drop-sync", o.sim_drop_sync,
                   "With sim:ARCH, a debug aid: lower, then drop one synchronisation statement,\n"
                   "barrier:N (the N-th barrier(), from 0, as --print-after=verify-thread-level\n"
                   "prints them), wait:N (the N-th cp_async_wait), wgmma_wait:N (the N-th\n"
                   "wgmma_wait, sm_90a), mbarrier_wait:N (the N-th mbarrier_wait of a TMA\n"
                   "pipeline, sm_90a), fence_proxy_async:N, bulk_wait_read:N (a TMA store's\n"
                   "wait, sm_90a), named_barrier:N or barrier_arrive:N (barrier.sync /\n"
                   "barrier.arrive, sm_90a), cluster_wait:N (barrier.cluster.wait) or remote_arrive:N\n"
                   "(an mbarrier_arrive on a peer CTA's object, sm_90a clusters), and run: the\n"
                   "simulator should report the race, the read of\n"
                   "bytes still in flight, the write of bytes a wgmma or a TMA store still reads,\n"
                   "or a wgmma or TMA store read of stores not fenced for its proxy, or a hang /\n"
                   "an arrival left at a named barrier")
        ->type_name("KIND:N");
    app.add_option("-D", defines, "Override a compile-time default, e.g. -D BM=64 (as for tilec)")
        ->type_name("NAME=VALUE");
    app.add_option("-I", o.include_dirs, "Add DIR to the import search path")->type_name("DIR");
    app.add_option("--stdlib-dir", o.stdlib_dir, "Where `import \"std/...\"` is found")->type_name("DIR");
    app.add_option("--color", color, "Colour diagnostics: auto, always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->type_name("WHEN");
    app.footer("Docs: docs/cli.md (section `tilec run`).");

    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) args.push_back(argv[i]);
    if (auto status = parse_subcommand(app, args, "run", o.input,
                                       "no input file: tilec run FILE --kernel NAME --size NAME=N,..."))
        return *status;

    for (auto& item : sizes) {
        std::string name, value, err = parse_assignment("--size", item, name, value);
        if (!err.empty()) {
            std::cerr << "tilec: error: " << err << "\n";
            return 1;
        }
        int64_t v = 0;
        size_t used = 0;
        bool ok = true;
        try {
            v = std::stoll(value, &used, 10);
        } catch (...) {
            ok = false;
        }
        if (!ok || used != value.size()) {
            std::cerr << "tilec: error: --size " << item << ": " << value << " is not an integer\n";
            return 1;
        }
        o.sizes.emplace_back(name, v);
    }
    // NAME=VALUE items, kept as text (checked against the export later).
    for (auto [option, items, out] : {std::tuple{"--scalar", &scalars, &o.scalars},
                                      std::tuple{"--int-range", &int_ranges, &o.int_ranges}}) {
        for (auto& item : *items) {
            std::string name, value, err = parse_assignment(option, item, name, value);
            if (!err.empty()) {
                std::cerr << "tilec: error: " << err << "\n";
                return 1;
            }
            out->emplace_back(name, value);
        }
    }
    for (auto& d : defines) {
        auto eq = d.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::cerr << "tilec: error: -D " << d << ": expected NAME=VALUE, e.g. -D BM=64\n";
            return 1;
        }
        o.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
    }
    // Unset, they stay NaN (the output type's default); given, they must be usable bounds.
    for (auto [flag, value] : {std::pair{"--rtol", rtol}, std::pair{"--atol", atol}}) {
        if (app.count(flag) && !(std::isfinite(value) && value >= 0)) {
            std::cerr << "tilec: error: " << flag << " " << value
                      << ": a tolerance must be a finite number >= 0, e.g. " << flag << " 1e-3\n";
            return 1;
        }
    }
    if (!std::isnan(rtol)) o.rtol = rtol;
    if (!std::isnan(atol)) o.atol = atol;
    o.reference = !no_reference;
    if (o.stdlib_dir.empty()) o.stdlib_dir = default_stdlib;
    o.color = color == "always" || (color == "auto" && isatty(STDERR_FILENO));
    return run_kernel(o);
}

}  // namespace tilec::driver
