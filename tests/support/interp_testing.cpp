// Test support: the driver's front half (load, elaborate, tile passes) as a function
// that returns the Tile IR and the diagnostics text instead of printing them.
#include "support/interp_testing.h"

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/frontend.h"
#include "ir/pass.h"
#include "support/diagnostics.h"
#include "transform/simplify.h"

namespace tilec::interp::testing {

const ir::PrimFunc* Compiled::find(const std::string& name) const {
    for (const auto& f : module.funcs)
        if (f.name == name) return &f;
    return nullptr;
}

std::string stdlib_dir() {
    return TILEC_INTERP_STDLIB_DIR;
}

Compiled compile_file(const std::string& path, const CompileOptions& options) {
    Compiled out;
    out.sources = std::make_shared<SourceManager>();
    std::ostringstream diag_text;
    DiagnosticEngine diags(*out.sources, diag_text);
    diags.set_error_limit(0);
    frontend::FrontendOptions fopt;
    fopt.import_paths = options.import_paths;
    fopt.stdlib_dir = stdlib_dir();
    fopt.defines = options.defines;
    try {
        auto program = frontend::load_program({path}, fopt, *out.sources, diags);
        if (program) {
            ir::Module module = frontend::elaborate(*program, fopt, *out.sources, diags);
            if (!diags.has_errors()) {
                if (options.run_passes) {
                    ir::PassManager pm;
                    pm.add(transform::make_simplify_pass());
                    ir::PassContext ctx;
                    ctx.diag = &diags;
                    auto lowered = pm.run(module, ctx);
                    if (lowered) out.module = std::move(*lowered);
                } else {
                    out.module = std::move(module);
                }
                out.ok = !diags.has_errors();
            }
        }
    } catch (const InternalError& e) {
        diag_text << "internal compiler error: " << e.what() << "\n";
        out.ok = false;
    } catch (const ErrorLimitReached&) {
        out.ok = false;
    }
    out.diagnostics = diag_text.str();
    return out;
}

Compiled compile_source(const std::string& text, const CompileOptions& options,
                        const std::string& file_name) {
    namespace fs = std::filesystem;
    static std::atomic<int> counter{0};
    fs::path dir = fs::temp_directory_path() /
                   ("tilec-interp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(dir);
    fs::path file = dir / file_name;
    {
        std::ofstream os(file, std::ios::binary);
        os << text;
    }
    Compiled out = compile_file(file.string(), options);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return out;
}

}  // namespace tilec::interp::testing
