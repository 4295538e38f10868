// Test support: compile .tile source (a file or a string) through the frontend and the
// tile passes to Tile IR functions, ready for the interpreter.
//
// Test-only, so it lives under tests/ (it pulls in the frontend): link tilec_interp_testing.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "support/source.h"

namespace tilec::interp::testing {

struct CompileOptions {
    // -D NAME=VALUE: overrides compile-time parameter defaults (export arguments win).
    std::vector<std::pair<std::string, std::string>> defines;
    std::vector<std::string> import_paths;
    // Run the tile pass list (simplify) after elaboration, as tilec does.
    bool run_passes = true;
};

struct Compiled {
    bool ok = false;
    std::string diagnostics;                 // everything the frontend printed
    std::shared_ptr<SourceManager> sources;  // for Result::str(sources)
    ir::Module module;
    // The function with this export symbol, or null.
    const ir::PrimFunc* find(const std::string& name) const;
};

// The stdlib folder of the source tree ("<source>/stdlib").
std::string stdlib_dir();
// Compiles a file (imports resolve against its folder, the import paths, the stdlib).
Compiled compile_file(const std::string& path, const CompileOptions& options = {});
// Compiles source text, written to a temporary file named `file_name` (which the
// diagnostics and SourceLocs name).
Compiled compile_source(const std::string& text, const CompileOptions& options = {},
                        const std::string& file_name = "test.tile");

}  // namespace tilec::interp::testing
