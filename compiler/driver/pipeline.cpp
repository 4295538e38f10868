// The pipeline, top to bottom; each step is one call. --print-after-all shows the IR
// after each pass, --time-passes how long each took.
#include "driver/pipeline.h"

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "frontend/frontend.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "support/diagnostics.h"
#include "transform/simplify.h"

namespace tilec::driver {
namespace {

const std::set<std::string>& known_targets() {
    static const std::set<std::string> t = {"host", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
                                            "gfx90a", "gfx942", "gfx1100"};
    return t;
}

bool write_output(const std::string& path, const std::string& text, DiagnosticEngine& diags) {
    if (path.empty() || path == "-") {
        std::cout << text;
        return true;
    }
    std::ofstream out(path, std::ios::binary);
    if (!out || !(out << text)) {
        diags.error({}, "cannot write '" + path + "'");
        return false;
    }
    return true;
}

std::string escape_make(const std::string& p) {
    std::string out;
    for (char c : p) {
        if (c == ' ' || c == '#') out += '\\';
        if (c == '$') out += '$';
        out += c;
    }
    return out;
}

// The Tile IR passes run on every export, in order.
void add_tile_passes(ir::PassManager& pm) { pm.add(transform::make_simplify_pass()); }

}  // namespace

int compile(const Options& options) {
    SourceManager sources;
    DiagnosticEngine diags(sources, std::cerr);
    diags.set_color(options.color);
    diags.set_error_limit(options.error_limit);
    diags.set_warnings_as_errors(options.werror);
    diags.set_warnings_enabled(options.warnings);
    try {
        for (auto& t : options.targets) {
            if (!known_targets().count(t)) {
                std::string list;
                for (auto& k : known_targets()) list += (list.empty() ? "" : ", ") + k;
                diags.error({}, "unknown target '" + t + "' (known: " + list + ")");
            }
        }
        if (!options.output.empty() && options.emit.empty()) {
            diags.error({}, "writing an object (-o without --emit) needs the CPU/GPU backends, which are not "
                            "built yet; use --emit=tir or --emit=ast");
        }
        if (diags.has_errors()) return 1;

        frontend::FrontendOptions fopt;
        fopt.import_paths = options.include_dirs;
        fopt.stdlib_dir = options.stdlib_dir;
        fopt.defines = options.defines;

        // 1. Parse the inputs and their imports.
        auto program = frontend::load_program(options.inputs, fopt, sources, diags);
        if (!program) return 1;

        if (options.emit == "ast") {
            std::string text;
            for (uint32_t id : program->input_files)
                for (auto& f : program->files)
                    if (f->file_id == id) text += ast::print(*f);
            if (!write_output(options.output, text, diags)) return 1;
        }

        // 2. Instantiate, check and lower each export to Tile IR.
        ir::Module module = frontend::elaborate(*program, fopt, sources, diags);
        if (diags.has_errors()) return 1;

        // 3. Tile IR passes.
        ir::PassManagerOptions pmo;
        pmo.verify = options.verify;
        pmo.print_after_all = options.print_after_all;
        pmo.print_after = options.print_after;
        pmo.time_passes = options.time_passes;
        ir::PassManager pm(pmo);
        add_tile_passes(pm);
        if (options.debug_internal_error)
            pm.add("debug-internal-error", [](const ir::PrimFunc&, ir::PassContext&) -> ir::PrimFunc {
                TILEC_ICE("deliberate internal error (--debug-internal-error)");
            });
        for (auto& name : options.print_after) {
            bool found = false;
            for (auto& p : pm.passes()) found |= p.name == name;
            if (!found) {
                std::string list;
                for (auto& p : pm.passes()) list += (list.empty() ? "" : ", ") + p.name;
                diags.error({}, "--print-after=" + name + ": no pass of that name (passes: " + list + ")");
            }
        }
        if (diags.has_errors()) return 1;
        ir::PassContext ctx;
        ctx.diag = &diags;
        auto lowered = pm.run(module, ctx);
        if (!lowered || diags.has_errors()) return 1;

        // 4. Outputs.
        if (options.emit == "tir" && !write_output(options.output, ir::print(*lowered), diags)) return 1;
        if (options.depfile) {
            std::string target = options.output.empty() ? "-" : options.output;
            std::string path = !options.depfile_path.empty() ? options.depfile_path
                                                             : (options.output.empty() ? "" : options.output + ".d");
            if (path.empty()) {
                diags.error({}, "-MD needs -o (or -MF FILE) to name the depfile");
                return 1;
            }
            std::ostringstream dep;
            dep << escape_make(target) << ":";
            for (auto& in : options.inputs) dep << " \\\n  " << escape_make(in);
            for (auto& imp : program->imported_paths) dep << " \\\n  " << escape_make(imp);
            dep << "\n";
            std::ofstream out(path);
            if (!out || !(out << dep.str())) {
                diags.error({}, "cannot write depfile '" + path + "'");
                return 1;
            }
        }
        return diags.has_errors() ? 1 : 0;
    } catch (const ErrorLimitReached&) {
        return 1;
    }
}

}  // namespace tilec::driver
