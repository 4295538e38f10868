// The compiler pipeline as one readable function (like Halide's Lower.cpp): load and
// check the program, elaborate exports to Tile IR, run the pass list, write outputs.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ir/pass.h"

namespace tilec::driver {

struct Options {
    std::vector<std::string> inputs;
    std::string output;
    std::string emit;  // "", "ast", "tir"
    std::vector<std::string> include_dirs;
    std::vector<std::string> targets;
    std::string cpu = "native";  // --cpu: the host code's CPU (codegen::CpuOptions::cpu)
    std::vector<std::string> exports;  // --export: the exports to compile (empty: all)
    unsigned jobs = 1;                 // -j: backend tasks (exports x targets) run at once
    std::vector<std::string> ptxas_args;  // -Xptxas: passed to every ptxas run, in order
    bool verbose_resources = false;       // print registers, shared memory, spills per kernel and arch
    std::string stdlib_dir;
    std::vector<std::pair<std::string, std::string>> defines;
    bool depfile = false;
    std::string depfile_path;
    unsigned error_limit = 20;
    bool werror = false;
    bool warnings = true;
    bool color = false;
    bool print_after_all = false;
    std::vector<std::string> print_after;
    bool time_passes = false;
    bool verify = true;
    bool debug_internal_error = false;  // adds a pass that fails with an internal error
};

// Adds the Tile IR passes every export goes through, in order (shared with tilec run).
void add_tile_passes(ir::PassManager& pm);

// Runs the whole compilation; returns the exit status (0, 1). Internal errors throw
// tilec::InternalError, which the caller maps to exit status 2.
int compile(const Options& options);

}  // namespace tilec::driver
