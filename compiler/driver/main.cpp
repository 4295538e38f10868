// tilec's command line: parse options, run the pipeline (frontend -> Tile IR passes ->
// output), map failures to exit codes: 0 ok, 1 user error, 2 internal compiler error.
// The pipeline runs on a thread with a large stack so no input can overflow it.
// main() itself is tilec.cpp's, so that the fork server of the fuzzers (tools/fuzz)
// runs this same function in its children.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#ifdef TILEC_WITH_LLVM
#include "codegen/cpu_backend.h"
#endif
#include "driver/main.h"
#include "driver/opt.h"
#include "driver/pipeline.h"
#include "driver/run.h"
#include "driver/subcommand_cli.h"
#include "support/diagnostics.h"

#ifndef TILEC_VERSION
#define TILEC_VERSION "0.0.0"
#endif
#ifndef TILEC_STDLIB_DIR
#define TILEC_STDLIB_DIR ""
#endif

namespace {

// A tilec built with the CPU backend (-DTILEC_WITH_LLVM=ON) also writes LLVM IR,
// assembly, objects and headers; without it, the text and the options are as before.
#ifdef TILEC_WITH_LLVM
const char* kDescription = R"(tilec: the tile language compiler.

Compiles .tile kernels (the data flow of one thread block over tiles) ahead of time:
every export is checked, lowered to Tile IR and compiled into one object and a C header:
host CPU code (NAME_cpu) and, for the GPU targets asked for, NVIDIA cubins and PTX
(NAME_cuda) and AMD HSACO code objects (NAME_hip), launched through drivers loaded at
run time.

Examples:
  tilec stdlib/kernels/gemm.tile --emit=tir          print the Tile IR of each export
  tilec gemm.tile -o gemm.o                          the object, and the header gemm.h beside it
  tilec gemm.tile --emit=header -o gemm.h            the C header alone
  tilec gemm.tile --emit=llvm                        the (optimised) LLVM IR of the CPU code
  tilec k.tile --target=host,sm_80,sm_90,gfx942 -o k.o
                                                     one object: CPU code, cubins + PTX, HSACO;
                                                     k.h declares NAME_cpu, NAME_cuda, NAME_hip
  tilec k.tile --target=sm_80 --emit=ptx             the PTX of each export (no print/assert yet)
  tilec k.tile --target=sm_80,gfx942 -o k.o --verbose-resources
                                                     also print registers, shared memory, spills
  tilec k.tile --target=sm_90 -o k.o -Xptxas --warn-on-spills
                                                     pass an option to ptxas
  tilec k.tile --target=sm_80,sm_90 --emit=cubin -o k.cubin
                                                     ptxas per arch: k.sm_80.cubin, k.sm_90.cubin
  tilec k.tile --target=gfx90a,gfx1100 --emit=hsaco -o k.hsaco
                                                     AMD code objects: k.gfx90a.hsaco, k.gfx1100.hsaco
  tilec gemm.tile -D BM=64 --emit=tir                override a compile-time default
  tilec attn.tile -I include/ --emit=ast             print the syntax tree
  tilec gemm.tile --print-after-all                  print the IR after every pass
  tilec gemm.tile -o gemm.o -MD                      also write a depfile gemm.o.d
  tilec run gemm.tile --kernel gemm_f16 --size M=300,N=200,K=130
                                                     run one export on random data and compare it
                                                     with the reference interpreter (tilec run --help)
  tilec opt gemm.tir --passes=simplify               run passes on printed IR (tilec opt --help)
)";
const char* kEmitHelp =
    "What to produce:\n"
    "  ast     the syntax tree of each input file\n"
    "  tir     the Tile IR of each export after the pass pipeline\n"
    "  llvm    the LLVM IR of the host code, optimised for the host\n"
    "  asm     the host assembly of the host code\n"
    "  obj     the host object (needs -o): CPU code, and the images and entry\n"
    "          points of the GPU targets (sm_XX: NAME_cuda, gfxNNN: NAME_hip)\n"
    "  header  the C header declaring the entry points\n"
    "  ptx     the PTX of every export for each --target=sm_XX (GPU targets)\n"
    "  cubin   ptxas's cubin for each --target=sm_XX (needs -o; with several\n"
    "          archs, one file each: k.cubin -> k.sm_80.cubin, k.sm_90.cubin)\n"
    "  amdgcn  the AMDGPU assembly of every export for each --target=gfxNNN\n"
    "  hsaco   the HSACO code object (ld.lld) for each --target=gfxNNN (needs -o;\n"
    "          with several, one file each: k.hsaco -> k.gfx942.hsaco)\n"
    "  (default: check only; with -o FILE.o: the object, and FILE.h beside it)\n"
    "e.g. --emit=tir";
const std::vector<std::string> kEmitStages = {"ast", "tir", "llvm", "asm", "obj",
                                              "header", "ptx", "cubin", "amdgcn", "hsaco"};
const char* kTargetHelp =
    "Targets to compile for, e.g. --target=host,sm_80,sm_90a,gfx942\n"
    "(all are checked; host, the default, generates CPU code (NAME_cpu); in an\n"
    "object (-o k.o), sm_XX adds a cubin each plus the lowest one's PTX\n"
    "(NAME_cuda) and gfxNNN an HSACO each (NAME_hip); sm_XX also gives\n"
    "--emit=ptx|cubin and gfxNNN --emit=amdgcn|hsaco. GPU targets take every\n"
    "stdlib kernel: gemm on tensor cores (mma.sync, wgmma and TMA on sm_90a,\n"
    "MFMA / WMMA on AMD), attention, reductions; print / assert are host only)";
#else
const char* kDescription = R"(tilec: the tile language compiler.

Compiles .tile kernels (the data flow of one thread block over tiles) ahead of time.
Today tilec parses, checks and lowers every export to Tile IR; the CPU and GPU
backends (objects, headers) come next.

Examples:
  tilec stdlib/kernels/gemm.tile --emit=tir          print the Tile IR of each export
  tilec gemm.tile -D BM=64 --emit=tir                override a compile-time default
  tilec attn.tile -I include/ --emit=ast             print the syntax tree
  tilec gemm.tile --print-after-all                  print the IR after every pass
  tilec gemm.tile --emit=tir -o gemm.tir -MD         write the IR and a depfile gemm.tir.d
)";
const char* kEmitHelp =
    "What to produce:\n"
    "  ast  the syntax tree of each input file\n"
    "  tir  the Tile IR of each export after the pass pipeline\n"
    "  (default: check only; nothing is written)\n"
    "e.g. --emit=tir";
const std::vector<std::string> kEmitStages = {"ast", "tir"};
const char* kTargetHelp =
    "Targets to compile for, e.g. --target=host,sm_80,sm_90a,gfx942\n"
    "(accepted and checked now; code generation comes with the backends)";
#endif

struct Args {
    std::vector<std::string> inputs;
    std::string output;
    std::string emit;
    std::vector<std::string> defines;
    std::vector<std::string> include_dirs;
    std::vector<std::string> targets;
    std::string cpu = "native";
    std::string stdlib_dir;  // empty: <prefix>/share/tilec/stdlib if there, else TILEC_STDLIB_DIR
    bool md = false;
    std::string mf;
    unsigned error_limit = 20;
    bool werror = false;
    bool no_warnings = false;
    std::string color = "auto";
    bool print_after_all = false;
    std::vector<std::string> print_after;
    bool time_passes = false;
    bool no_verify = false;
    bool debug_ice = false;
    bool debug_llvm_fatal = false;
    std::vector<std::string> ptxas_args;
    bool verbose_resources = false;
    std::vector<std::string> exports;
    long jobs = -1;  // not given: the number of cores
};

struct ThreadJob {
    int argc;
    char** argv;
    int rc = 0;
};

std::string stdlib_near_executable(const char* argv0) {
    // An installed tilec finds the stdlib at <prefix>/share/tilec/stdlib.
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return "";
    buf[n] = '\0';
    std::string exe(buf);
    auto slash = exe.rfind('/');
    if (slash == std::string::npos) return "";
    std::string candidate = exe.substr(0, slash) + "/../share/tilec/stdlib";
    std::ifstream probe(candidate + "/std/math.tile");
    return probe ? candidate : "";
}

int run(int argc, char** argv) {
    // `tilec run ...`: its own options (driver/run_cli.cpp); the plain usage is unchanged.
    if (argc > 1 && std::string(argv[1]) == "run") {
        std::string stdlib = stdlib_near_executable(argv[0]);
        if (stdlib.empty()) stdlib = TILEC_STDLIB_DIR;
        return tilec::driver::run_command(argc - 1, argv + 1, stdlib);
    }
    // `tilec opt FILE.tir --passes=...`: run passes on printed IR (driver/opt.cpp).
    if (argc > 1 && std::string(argv[1]) == "opt") return tilec::driver::opt_command(argc - 1, argv + 1);
    CLI::App app{kDescription, "tilec"};
    Args a;
    app.add_option("files", a.inputs, "Input .tile files")->required()->type_name("FILE...");
    app.add_option("-o", a.output, "Write the output to FILE (default: standard output for text stages)")
        ->type_name("FILE");
    app.add_option("--emit", a.emit, kEmitHelp)
        ->check(CLI::IsMember(kEmitStages))
        ->type_name("STAGE");
    app.add_option("-D", a.defines,
                   "Override the default of compile-time parameter NAME in every kernel,\n"
                   "e.g. -D BM=64 -D T=bf16 -D CAUSAL=true (export arguments still win)")
        ->type_name("NAME=VALUE");
    app.add_option("-I", a.include_dirs,
                   "Add DIR to the import search path (after the importing file's\n"
                   "directory, before the stdlib), e.g. -I third_party/kernels")
        ->type_name("DIR");
    app.add_option("--target", a.targets, kTargetHelp)
        ->delimiter(',')
        ->type_name("LIST");
    app.add_option("--cpu", a.cpu,
                   "The CPU the host code is for: native (default: this machine's CPU with all\n"
                   "its features; the object may not run on older CPUs), or an LLVM CPU name:\n"
                   "x86-64 (any x86-64), x86-64-v2, x86-64-v3 (AVX2), x86-64-v4 (AVX-512),\n"
                   "znver4, ... Build objects that ship to other machines for the oldest CPU\n"
                   "they must run on, e.g. --cpu=x86-64-v3; or list x86-64 levels, e.g.\n"
                   "--cpu=x86-64-v3,x86-64-v4: a block function per level, and NAME_cpu runs\n"
                   "the highest one the CPU has (an error status, never an illegal\n"
                   "instruction, on a CPU below them all)")
        ->type_name("NAME|LIST");
    app.add_option("--Xptxas", a.ptxas_args,
                   "Pass ARG to ptxas for every sm_XX target (also spelled -Xptxas ARG;\n"
                   "repeatable; ARG may list several, comma-separated, as nvcc's),\n"
                   "e.g. -Xptxas --warn-on-spills. ptxas rejecting it is an error")
        ->type_name("ARG");
    app.add_flag("--verbose-resources", a.verbose_resources,
                 "Print, per kernel and GPU arch, its registers, static shared memory and\n"
                 "spills (to standard error; ptxas -v for sm_XX, the code object's metadata\n"
                 "for gfxNNN), e.g. \"gemm_f16 sm_80: 40 registers, 16384 bytes shared,\n"
                 "0 bytes spilled\"; dynamic shared memory the launch passes is added\n"
                 "(\"0 bytes shared + 65536 dynamic\")");
    app.add_option("--export", a.exports,
                   "Compile only the export NAME (its C symbol; repeatable), e.g. --export gemm_f16.\n"
                   "A name the inputs do not export is an error listing those they do")
        ->type_name("NAME");
    app.add_option("-j,--jobs", a.jobs,
                   "Compile exports and targets on N threads (default: the number of cores).\n"
                   "The output is the same for every N")
        ->type_name("N");
    app.add_option("--stdlib-dir", a.stdlib_dir, "Where `import \"std/...\"` is found (default: the built-in stdlib)")
        ->type_name("DIR");
    app.add_flag("--MD", a.md, "Also write a depfile (Make syntax) listing the inputs and every imported\nfile (also spelled -MD)");
    app.add_option("--MF", a.mf, "Name of the depfile (default: OUTPUT.d; also spelled -MF)")->type_name("FILE");
    app.add_option("--error-limit", a.error_limit, "Stop after N errors (0: no limit; default 20)")
        ->type_name("N");
    app.add_flag("--Werror", a.werror, "Treat warnings as errors (also: -Werror)");
    app.add_flag("-w", a.no_warnings, "Do not print warnings");
    app.add_option("--color", a.color, "Colour diagnostics: auto (on a terminal), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->type_name("WHEN");
    app.add_flag("--print-after-all", a.print_after_all, "Print the Tile IR after every pass (to standard error)");
    app.add_option("--print-after", a.print_after, "Print the Tile IR after pass NAME, e.g. --print-after=simplify")
        ->type_name("NAME");
    app.add_flag("--time-passes", a.time_passes, "Print the time spent in each pass (to standard error)");
    app.add_flag("--no-verify", a.no_verify, "Skip the IR verifier between passes (for debugging the compiler)");
    // Hidden: makes a pass raise an internal error, to test how tilec reports its own bugs.
    app.add_flag("--debug-internal-error", a.debug_ice)->group("");
    // Hidden: makes LLVM report a fatal error, to test that it is an internal error too.
    app.add_flag("--debug-llvm-fatal-error", a.debug_llvm_fatal)->group("");
    app.set_version_flag("--version", std::string("tilec ") + TILEC_VERSION);
    app.footer("Environment:\n"
               "  TILEC_CACHE_DIR=DIR  keep the outputs in DIR, keyed by every input, option and tool\n"
               "                       version: a rebuild of unchanged kernels copies them, and after a\n"
               "                       change to one kernel only its GPU code goes through LLVM again\n"
               "                       (off when unset)\n"
               "  TILEC_PTXAS=PATH     the ptxas for sm_XX targets (default: the one found at configure time)\n"
               "  TILEC_LD_LLD=PATH    the ld.lld for gfxNNN targets (default: the one found at configure time)\n"
               "\n"
               "Exit status: 0 success, 1 errors in the input, 2 internal compiler error.\n"
               "Docs: docs/cli.md (options), docs/language.md (the language).");

    // Accept the common spellings -Werror and --emit tir / -DNAME=V.
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        std::string s = argv[i];
        // Compiler spellings CLI11 cannot declare (multi-letter single-dash options).
        if (s == "-Werror") s = "--Werror";
        else if (s == "-MD") s = "--MD";
        else if (s == "-MF") s = "--MF";
        // CLI11 would take the next argument as the value of `--cpu=` (an empty value).
        if (s.size() > 3 && s.rfind("--", 0) == 0 && s.back() == '=') {
            std::cerr << "tilec: error: " << s << ": the option needs a value after the =\n"
                      << "Run 'tilec --help' for the options.\n";
            return 1;
        }
        // CLI11 drops the empty items of a list: --target=host,,sm_80 is a typo, not two targets.
        if (s.rfind("--target=", 0) == 0 || (s == "--target" && i + 1 < argc)) {
            std::string list = s == "--target" ? std::string(argv[i + 1]) : s.substr(9);
            if (list.empty() || list.front() == ',' || list.back() == ',' || list.find(",,") != std::string::npos) {
                std::cerr << "tilec: error: --target=" << list
                          << ": empty target name in the list, e.g. --target=host,sm_80\n"
                          << "Run 'tilec --help' for the options.\n";
                return 1;
            }
        }
        // -Xptxas ARG: ARG usually starts with '-', which CLI11 would take for an option;
        // as --Xptxas=ARG it is a value.
        if (s == "-Xptxas" || s == "--Xptxas") {
            if (i + 1 == argc) {
                std::cerr << "tilec: error: " << s << " needs an argument, e.g. -Xptxas --warn-on-spills\n"
                          << "Run 'tilec --help' for the options.\n";
                return 1;
            }
            s = std::string("--Xptxas=") + argv[++i];
        } else if (s.rfind("-Xptxas=", 0) == 0) {
            s = "-" + s;
        }
        args.push_back(s);
    }
    std::reverse(args.begin(), args.end());
    tilec::driver::one_value_per_use(app);
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp& e) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp& e) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::cout << "tilec " << TILEC_VERSION << "\n";
        return 0;
    } catch (const CLI::RequiredError& e) {
        if (a.inputs.empty()) {
            std::cerr << "tilec: error: no input files\nRun 'tilec --help' for the options.\n";
            return 1;
        }
        std::cerr << "tilec: error: " << e.what() << "\nRun 'tilec --help' for the options.\n";
        return 1;
    } catch (const CLI::ParseError& e) {
        std::cerr << "tilec: error: " << e.what() << "\n"
                  << "Run 'tilec --help' for the options.\n";
        return 1;
    }

    if (a.cpu.empty()) {
        std::cerr << "tilec: error: --cpu needs a CPU name, e.g. --cpu=native or --cpu=x86-64-v3\n"
                  << "Run 'tilec --help' for the options.\n";
        return 1;
    }

#ifdef TILEC_WITH_LLVM
    if (a.debug_llvm_fatal) tilec::codegen::debug_llvm_fatal_error();
#endif

    tilec::driver::Options opt;
    opt.inputs = a.inputs;
    opt.output = a.output;
    opt.emit = a.emit;
    opt.include_dirs = a.include_dirs;
    opt.targets = a.targets;
    opt.cpu = a.cpu;
    for (auto& arg : a.ptxas_args) {
        // nvcc's convention: -Xptxas -v,-O3 is two options.
        size_t start = 0;
        while (start <= arg.size()) {
            size_t comma = arg.find(',', start);
            std::string one = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (!one.empty()) opt.ptxas_args.push_back(one);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    }
    opt.verbose_resources = a.verbose_resources;
    opt.exports = a.exports;
    if (a.jobs == -1) {
        // The cores this process may run on (a container or taskset may allow fewer than
        // the machine has).
        cpu_set_t set;
        CPU_ZERO(&set);
        int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
        opt.jobs = cores > 0 ? static_cast<unsigned>(cores) : std::max(1u, std::thread::hardware_concurrency());
    } else if (a.jobs < 1 || a.jobs > 4096) {
        std::cerr << "tilec: error: -j " << a.jobs << ": the number of threads must be from 1 to 4096, e.g. -j 4\n"
                  << "Run 'tilec --help' for the options.\n";
        return 1;
    } else {
        opt.jobs = static_cast<unsigned>(a.jobs);
    }
    opt.stdlib_dir = a.stdlib_dir;
    if (opt.stdlib_dir.empty()) opt.stdlib_dir = stdlib_near_executable(argv[0]);
    if (opt.stdlib_dir.empty()) opt.stdlib_dir = TILEC_STDLIB_DIR;
    for (auto& d : a.defines) {
        auto eq = d.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::cerr << "tilec: error: -D " << d << ": expected NAME=VALUE, e.g. -D BM=64\n";
            return 1;
        }
        opt.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
    }
    opt.depfile = a.md || !a.mf.empty();
    opt.depfile_path = a.mf;
    opt.error_limit = a.error_limit;
    opt.werror = a.werror;
    opt.warnings = !a.no_warnings;
    opt.color = a.color == "always" || (a.color == "auto" && isatty(STDERR_FILENO));
    opt.print_after_all = a.print_after_all;
    opt.print_after = a.print_after;
    opt.time_passes = a.time_passes;
    opt.verify = !a.no_verify;
    opt.debug_internal_error = a.debug_ice;
    return tilec::driver::compile(opt);
}

void* thread_main(void* p) {
    auto* job = static_cast<ThreadJob*>(p);
    try {
        job->rc = run(job->argc, job->argv);
    } catch (const tilec::InternalError& e) {
        std::cerr << "tilec: internal compiler error";
        if (!e.pass.empty()) std::cerr << " in pass '" << e.pass << "'";
        std::cerr << ": " << e.what() << " (at " << e.file << ":" << e.line << ")\n"
                  << "This is a bug in tilec, not in your kernel; please report it with the input.\n";
        job->rc = 2;
    } catch (const std::exception& e) {
        std::cerr << "tilec: internal compiler error: unexpected exception: " << e.what() << "\n";
        job->rc = 2;
    }
    return nullptr;
}

}  // namespace

int tilec::driver::tilec_main(int argc, char** argv) {
    ThreadJob job{argc, argv};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512u << 20);  // 512 MiB of address space, touched only as used
    pthread_t t;
    if (pthread_create(&t, &attr, thread_main, &job) != 0) {
        thread_main(&job);
    } else {
        pthread_join(t, nullptr);
    }
    pthread_attr_destroy(&attr);
    // Output written to a full disk or a closed pipe is an error, not a success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::cerr << "tilec: error: cannot write to standard output\n";
        return job.rc == 0 ? 1 : job.rc;
    }
    return job.rc;
}
