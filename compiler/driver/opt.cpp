// `tilec opt`: the pass runner over textual IR. It has no pipeline of its own: the
// passes come by name from the same lists the compiler runs (add_tile_passes, the GPU
// passes for --target), so a lit test of one pass tests what `tilec` runs.
#include "driver/opt.h"

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "driver/pipeline.h"
#include "driver/subcommand_cli.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "ir/reader.h"
#include "ir/verifier.h"
#include "support/diagnostics.h"
#include "support/source.h"
#ifdef TILEC_WITH_LLVM
#include "lower/gpu_passes.h"
#include "target/target.h"
#endif

namespace tilec::driver {
namespace {

const char* kOptDescription =
    R"(tilec opt: read Tile IR as tilec prints it (--emit=tir, --print-after-all), run the
named passes on every function in the order given, and print the result. The IR is
verified when read and after every pass. With no passes (--passes=) it reads and
prints, which is how the reader is tested: the text comes back identical, except for
`// layout` comment lines, which the reader skips (running layout-inference again
recomputes them; lower-tile-ops needs them, so start it from tile-level IR with
--passes=layout-inference,lower-tile-ops).

Passes: the tile-level passes every export goes through (simplify), and with
--target=ARCH the GPU passes for ARCH (lower/gpu_passes.h, in pipeline order:
tensorize, layout-inference, software-pipeline, lower-tile-ops, plan-shared-memory,
insert-async-waits, place-barriers, verify-thread-level). Each reads what the one
before it printed, so one pass can be run on the IR printed after the previous one.
A GPU pass without --target is an error, as is an unknown name.

Input: the text of ir::print; several functions may follow each other, and `//`
comments (the --print-after-all headers) are skipped. Errors in the text are reported
as FILE:LINE:COL: error: ... (exit status 1).

Examples:
  tilec gemm.tile --emit=tir -o gemm.tir
  tilec opt gemm.tir --passes=                         read and print again
  tilec opt gemm.tir --passes=simplify --print-after-all
  tilec opt gemm.tir --passes=layout-inference,lower-tile-ops --target=sm_80 -o gemm.thread.tir
  tilec opt gemm.thread.tir --passes=plan-shared-memory,place-barriers --target=sm_80
  tilec opt gemm.tir --passes=simplify --time-passes
  tilec opt - --passes=simplify < gemm.tir             (standard input)
)";

#ifdef TILEC_WITH_LLVM
// The GPU passes for one target, in pipeline order: the one list tilec itself runs.
std::vector<ir::Pass> gpu_passes(const target::GpuTarget& t) {
    return lower::build_gpu_passes(t);
}
#endif

std::string join(const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// The names a --passes list may use, for messages; GPU names from any target's list.
std::string pass_names() {
    ir::PassManager pm;
    add_tile_passes(pm);
    std::vector<std::string> tile, gpu;
    for (const auto& p : pm.passes()) tile.push_back(p.name);
#ifdef TILEC_WITH_LLVM
    for (const auto& p : gpu_passes(target::gpu_targets().front())) gpu.push_back(p.name);
#endif
    return join(tile) + (gpu.empty() ? "" : "; with --target=ARCH: " + join(gpu));
}

// The pass of that name, or nullopt (then `error` says why).
std::optional<ir::Pass> find_pass(const std::string& name, const std::string& target_name,
                                  std::string& error) {
    ir::PassManager pm;
    add_tile_passes(pm);
    for (const auto& p : pm.passes())
        if (p.name == name) return p;
#ifdef TILEC_WITH_LLVM
    const target::GpuTarget* t = target_name.empty() ? nullptr : target::find_gpu_target(target_name);
    for (const auto& p : gpu_passes(t ? *t : target::gpu_targets().front())) {
        if (p.name != name) continue;
        if (!t) {
            error = "the GPU pass '" + name + "' needs --target=ARCH (e.g. --target=sm_80)";
            return std::nullopt;
        }
        return p;
    }
#endif
    error = "unknown pass '" + name + "' (passes: " + pass_names() + ")";
    return std::nullopt;
}

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

}  // namespace

int opt_command(int argc, char** argv) {
    CLI::App app{kOptDescription, "tilec opt"};
    std::string input, output, passes, target_name, color = "auto";
    std::vector<std::string> print_after;
    bool print_after_all = false, time_passes = false;
    app.add_option("file", input, "The IR to read (.tir), or - for standard input")
        ->required()
        ->type_name("FILE");
    auto* passes_option =
        app.add_option("--passes", passes,
                       "The passes to run, comma-separated, in order (empty: none, read and print)")
            ->type_name("A,B,...");
    app.add_option("--target", target_name, "The GPU architecture of the GPU passes (sm_80, gfx942, ...)")
        ->type_name("ARCH");
    app.add_option("-o", output, "Write the IR to FILE (default: standard output)")->type_name("FILE");
    app.add_flag("--print-after-all", print_after_all, "Print the IR after every pass (to standard error)");
    app.add_option("--print-after", print_after, "Print the IR after the pass NAME (repeatable)")
        ->type_name("NAME");
    app.add_flag("--time-passes", time_passes, "Print the wall time of every pass (to standard error)");
    app.add_option("--color", color, "Colour diagnostics: auto, always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->type_name("WHEN");
    app.footer("Docs: docs/cli.md (section `tilec opt`).");

    // CLI11 refuses an empty value; `--passes=` (run none) is meaningful here.
    bool no_passes = false;
    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) {
        if (std::string(argv[i]) == "--passes=") {
            no_passes = true;
            continue;
        }
        args.push_back(argv[i]);
    }
    if (auto status = parse_subcommand(app, args, "opt", input, "no input file: tilec opt FILE.tir --passes=A,B"))
        return *status;
    if (passes_option->count() == 0 && !no_passes) {
        std::cerr << "tilec: error: no --passes given (--passes= runs none; passes: " << pass_names()
                  << ")\n";
        return 1;
    }

    SourceManager sources;
    DiagnosticEngine diags(sources, std::cerr);
    diags.set_color(color == "always" || (color == "auto" && isatty(STDERR_FILENO)));
#ifdef TILEC_WITH_LLVM
    if (!target_name.empty() && !target::find_gpu_target(target_name)) {
        std::vector<std::string> names;
        for (const auto& t : target::gpu_targets()) names.push_back(t.name);
        std::cerr << "tilec: error: unknown GPU target '" << target_name << "' (targets: " << join(names)
                  << ")\n";
        return 1;
    }
#endif

    // The passes first: a wrong name is reported before the input is read.
    ir::PassManagerOptions pmo;
    pmo.print_after_all = print_after_all;
    pmo.print_after = print_after;
    pmo.time_passes = time_passes;
    ir::PassManager pm(pmo);
    for (const auto& name : split_commas(passes)) {
        std::string error;
        auto pass = find_pass(name, target_name, error);
        if (!pass) {
            std::cerr << "tilec: error: --passes: " << error << "\n";
            return 1;
        }
        pm.add(*pass);
    }
    for (const auto& name : print_after) {
        bool found = false;
        for (const auto& p : pm.passes()) found |= p.name == name;
        if (!found) {
            std::vector<std::string> names;
            for (const auto& p : pm.passes()) names.push_back(p.name);
            std::cerr << "tilec: error: --print-after=" << name << ": not among the passes run ("
                      << (names.empty() ? "none" : join(names)) << ")\n";
            return 1;
        }
    }

    uint32_t file = 0;
    if (input == "-") {
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        file = sources.add_file("<stdin>", std::move(text));
    } else {
        std::string error;
        auto id = sources.load_file(input, &error);
        if (!id) {
            std::cerr << "tilec: error: " << error << "\n";
            return 1;
        }
        file = *id;
    }
    auto module = ir::parse_module(sources.contents(file), file, diags);
    if (!module) return 1;
    // What was read must be well formed before a pass sees it: a verifier message here
    // is an error in the input, located in it.
    bool bad = false;
    for (const auto& f : module->funcs) {
        for (const auto& msg : ir::verify(f)) {
            // "line:col: message" -> "FILE:line:col: error: message", as the reader's errors.
            size_t colon = msg.find(':');
            size_t at = colon == std::string::npos ? std::string::npos : msg.find(": ", colon + 1);
            bool located = at != std::string::npos && msg.find_first_not_of("0123456789:") == at + 1;
            std::string where = located ? msg.substr(0, at) + ": " : "";
            std::cerr << sources.path(file) << ":" << where
                      << "error: " << (located ? msg.substr(at + 2) : msg) << " (in function " << f.name
                      << ")\n";
            bad = true;
        }
    }
    if (bad) {
        std::cerr << "tilec: error: " << sources.path(file) << ": the IR does not verify\n";
        return 1;
    }

    ir::PassContext ctx;
    ctx.diag = &diags;
    auto result = pm.run(*module, ctx);
    if (!result || diags.has_errors()) return 1;

    std::string text = ir::print(*result);
    if (output.empty() || output == "-") {
        std::cout << text;
        return 0;
    }
    std::ofstream out(output, std::ios::binary);
    out << text;
    if (!out.flush()) {
        std::cerr << "tilec: error: cannot write " << output << "\n";
        return 1;
    }
    return 0;
}

}  // namespace tilec::driver
