// The frontend's entry points: load a program (input files and everything they import)
// and elaborate each export into a Tile IR function.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "support/diagnostics.h"

namespace tilec::frontend {

struct FrontendOptions {
    std::vector<std::string> import_paths;  // -I, searched after the importing file's directory
    std::string stdlib_dir;                 // searched last
    // -D NAME=VALUE: overrides the default of every compile-time parameter NAME.
    std::vector<std::pair<std::string, std::string>> defines;
    // --export NAME: the export symbols to compile (empty: all). A name the inputs do not
    // export is an error listing the ones they do.
    std::vector<std::string> exports;
};

// Every parsed file of one compilation, with kernels and funcs by name.
struct Program {
    std::vector<std::unique_ptr<ast::File>> files;
    std::vector<uint32_t> input_files;       // the files named on the command line
    std::vector<std::string> imported_paths;  // resolved paths of imported files (for -MD)
    std::map<std::string, const ast::KernelDecl*> kernels;
    std::map<std::string, const ast::FuncDecl*> funcs;
    std::map<std::string, uint32_t> kernel_file;  // kernel name -> file id
};

// Parses the inputs and, transitively, their imports. Returns null when any file has
// syntax errors or cannot be read (all reported).
std::unique_ptr<Program> load_program(const std::vector<std::string>& inputs, const FrontendOptions& options,
                                      SourceManager& sources, DiagnosticEngine& diags);

// Instantiates each export of the input files (or, in a file with no exports, each
// kernel whose compile-time parameters all have defaults) and checks and lowers it to
// Tile IR. Errors are reported; functions with errors are left out.
ir::Module elaborate(const Program& program, const FrontendOptions& options, const SourceManager& sources,
                     DiagnosticEngine& diags);

}  // namespace tilec::frontend
