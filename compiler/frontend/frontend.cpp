// Loading a program: parse the inputs, follow `import`s (relative to the importing
// file, then -I paths, then the stdlib), and index kernels and funcs by name.
#include "frontend/frontend.h"

#include <filesystem>
#include <set>

#include "frontend/builtins.h"
#include "frontend/parser.h"

namespace tilec::frontend {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> resolve_import(const std::string& path, const std::string& importer,
                                          const FrontendOptions& options) {
    std::vector<fs::path> dirs;
    dirs.push_back(fs::path(importer).parent_path());
    for (auto& d : options.import_paths) dirs.emplace_back(d);
    if (!options.stdlib_dir.empty()) dirs.emplace_back(options.stdlib_dir);
    std::error_code ec;
    if (fs::path(path).is_absolute()) {
        if (fs::is_regular_file(path, ec)) return path;
        return std::nullopt;
    }
    for (auto& d : dirs) {
        fs::path candidate = d / path;
        if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
    }
    return std::nullopt;
}

}  // namespace

std::unique_ptr<Program> load_program(const std::vector<std::string>& inputs, const FrontendOptions& options,
                                      SourceManager& sources, DiagnosticEngine& diags) {
    auto program = std::make_unique<Program>();
    bool ok = true;
    std::vector<uint32_t> pending;
    for (auto& in : inputs) {
        std::string err;
        auto id = sources.load_file(in, &err);
        if (!id) {
            diags.error({}, "cannot read '" + in + "': " + err);
            ok = false;
            continue;
        }
        program->input_files.push_back(*id);
        pending.push_back(*id);
    }
    std::set<uint32_t> parsed;
    while (!pending.empty()) {
        uint32_t id = pending.front();
        pending.erase(pending.begin());
        if (!parsed.insert(id).second) continue;
        auto file = parse_file(id, sources, diags);
        if (!file) {
            ok = false;
            continue;
        }
        for (auto& imp : file->imports) {
            auto resolved = resolve_import(imp.path, sources.path(id), options);
            if (!resolved) {
                diags.error(imp.range, "cannot find imported file '" + imp.path +
                                           "' (searched the importing file's directory, -I paths and the stdlib)");
                ok = false;
                continue;
            }
            if (auto existing = sources.find_file(*resolved)) {
                pending.push_back(*existing);
                continue;
            }
            std::string err;
            auto nid = sources.load_file(*resolved, &err);
            if (!nid) {
                diags.error(imp.range, "cannot read imported file '" + *resolved + "': " + err);
                ok = false;
                continue;
            }
            program->imported_paths.push_back(*resolved);
            pending.push_back(*nid);
        }
        program->files.push_back(std::move(file));
    }
    if (!ok) return nullptr;

    // Kernels and funcs each have one namespace across all files. Kernels are never
    // called, so a kernel may share a name with a tile op (the stdlib's `gemm`).
    std::map<std::string, SourceRange> kernels_defined, funcs_defined;
    auto define = [&](std::map<std::string, SourceRange>& defined, const std::string& name, SourceRange where,
                      bool check_builtin) {
        if (check_builtin && is_builtin_name(name)) {
            diags.error(where, "cannot define func '" + name + "': '" + name + "' is a built-in operation");
            return false;
        }
        auto [it, inserted] = defined.emplace(name, where);
        if (!inserted) {
            diags.error(where, "redefinition of '" + name + "'").note(it->second, "previous definition is here");
            return false;
        }
        return true;
    };
    for (auto& f : program->files) {
        for (auto& k : f->kernels)
            if (define(kernels_defined, k->name, k->name_range, false)) {
                program->kernels[k->name] = k.get();
                program->kernel_file[k->name] = f->file_id;
            }
        for (auto& fn : f->funcs)
            if (define(funcs_defined, fn->name, fn->name_range, true)) program->funcs[fn->name] = fn.get();
    }
    return program;
}

}  // namespace tilec::frontend
