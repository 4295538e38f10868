// The pipeline, top to bottom; each step is one call. --print-after-all shows the IR
// after each pass, --time-passes how long each took.
#include "driver/pipeline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "frontend/frontend.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "support/diagnostics.h"
#include "target/target.h"
#include "transform/simplify.h"
#ifndef TILEC_VERSION
#define TILEC_VERSION "0.0.0"
#endif
#ifdef TILEC_WITH_LLVM
#include "codegen/amdgpu_backend.h"
#include "codegen/c_header.h"
#include "codegen/cpu_backend.h"
#include "codegen/gpu_entry.h"
#include "codegen/gpu_resources.h"
#include "codegen/nvptx_backend.h"
#include "lower/gpu_passes.h"
#endif

namespace tilec::driver {
namespace {

// The names of the target table's rows, sorted, for the unknown-target diagnostic.
std::string known_target_list() {
    std::set<std::string> names;
    for (auto& t : target::all_targets()) names.insert(t.name);
    std::string list;
    for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return list;
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

// The base name of a path ("dir/k.tile" -> "k.tile").
std::string base_name(const std::string& path) {
    auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The header written beside an object: "out/k.o" -> "out/k.h".
std::string header_beside(const std::string& object) {
    auto slash = object.find_last_of('/');
    auto dot = object.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return object + ".h";
    return object.substr(0, dot) + ".h";
}

// Where --emit=cubin|ptx|hsaco|amdgcn -o PATH writes one arch's file: PATH itself for
// one arch, else PATH with ".sm_XX" (".gfxNNN") before its extension ("k.cubin" ->
// "k.sm_80.cubin", "k.hsaco" -> "k.gfx942.hsaco").
std::string per_arch_path(const std::string& path, const std::string& arch, bool several) {
    if (!several || path.empty() || path == "-") return path;
    auto slash = path.find_last_of('/');
    auto dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
        return path + "." + arch;
    return path.substr(0, dot) + "." + arch + path.substr(dot);
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

#ifdef TILEC_WITH_LLVM
// --verbose-resources: one line per kernel of one arch, in the order of the exports
// (ptxas reports them in its own order), on standard error (standard output may carry
// PTX or assembly).
void print_resources(std::vector<codegen::KernelResources> resources, const std::vector<ir::PrimFunc>& funcs) {
    auto rank = [&](const codegen::KernelResources& r) {
        for (size_t i = 0; i < funcs.size(); ++i)
            if (funcs[i].name == r.kernel) return i;
        return funcs.size();
    };
    std::stable_sort(resources.begin(), resources.end(),
                     [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    for (auto& r : resources) {
        size_t i = rank(r);
        if (i < funcs.size() && !r.amd) r.dynamic_shared_bytes = funcs[i].dynamic_shared_bytes();
        std::cerr << codegen::format_resources(r) << "\n";
    }
}

// ptxas on one arch's PTX with the user's -Xptxas options (and -v for
// --verbose-resources). A failure is the user's when they gave options (ptxas's own
// words as the diagnostic), else an internal error: the PTX is ours. nullopt after a
// reported error.
std::optional<std::string> cubin_of(const std::string& ptx, const std::vector<ir::PrimFunc>& funcs,
                                    const target::GpuTarget& t, const Options& options, DiagnosticEngine& diags) {
    codegen::PtxasRun run = codegen::run_ptxas(ptx, t, options.ptxas_args, options.verbose_resources);
    if (!run.ok) {
        if (options.ptxas_args.empty())
            TILEC_ICE(run.command + " failed (" + codegen::ptxas_path() + ", exit status " +
                      std::to_string(run.status) + "):\n" + run.output);
        std::string given;
        for (auto& a : options.ptxas_args) given += (given.empty() ? "" : " ") + a;
        std::string out = run.output;
        while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
        diags.error({}, "ptxas failed for --target=" + t.name + " with -Xptxas " + given + " (exit status " +
                            std::to_string(run.status) + "): " + out);
        return std::nullopt;
    }
    if (options.verbose_resources) print_resources(run.resources, funcs);
    return run.cubin;
}

// One gfx arch's relocatable code object, its resources printed with
// --verbose-resources.
std::string amd_object_of(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& t, const Options& options,
                          const std::string& source) {
    std::string object = codegen::compile_amdgpu(funcs, t, codegen::AmdgpuOutput::Object, source);
    if (options.verbose_resources) print_resources(codegen::amdgpu_resources(object, t), funcs);
    return object;
}

// Checks that the tools an object's images need exist (a user-facing error, naming the
// configuration knob, rather than an internal one later).
bool check_gpu_tools(bool nvidia, bool amd, DiagnosticEngine& diags) {
    bool ok = true;
    if (nvidia) {
        std::string ptxas = codegen::ptxas_path();
        if (ptxas.empty() || !std::filesystem::exists(ptxas)) {
            diags.error({}, "ptxas (which builds cubins) was not found" +
                                (ptxas.empty() ? std::string() : " at " + ptxas) +
                                " (configure with -DTILEC_PTXAS=/path/to/ptxas or set TILEC_PTXAS)");
            ok = false;
        }
    }
    if (amd) {
        std::string lld = codegen::ld_lld_path();
        if (lld.empty() || !std::filesystem::exists(lld)) {
            diags.error({}, "ld.lld (which links HSACO code objects) was not found" +
                                (lld.empty() ? std::string() : " at " + lld) +
                                " (configure with -DTILEC_LD_LLD=/path/to/ld.lld or set TILEC_LD_LLD)");
            ok = false;
        }
    }
    return ok;
}

// The GPU side of an object for `archs` (sm_XX then gfxNNN, each in the target table's
// order): each export lowered to thread level per arch (an export the GPU path does not
// cover is a located error: the user asked for the arch), and with `images` one cubin per
// sm arch plus the PTX of the lowest one, for the driver to JIT on GPUs newer than every
// cubin, and one HSACO per gfx arch. Every kernel gets NAME_cuda when there is an sm arch
// and NAME_hip when there is a gfx arch. Returns false after reporting an error.
bool build_gpu_embedding(const ir::Module& lowered, const std::vector<std::string>& archs, bool images,
                         const Options& options, const ir::PassManagerOptions& pmo, ir::PassContext& ctx,
                         DiagnosticEngine& diags, const std::string& source, codegen::GpuEmbedding& out,
                         std::string& ptx_arch) {
    bool nvidia = false, amd = false;
    for (auto& arch : archs) (target::find_gpu_target(arch)->is_nvidia() ? nvidia : amd) = true;
    if (images && !check_gpu_tools(nvidia, amd, diags)) return false;
    out.module_name = source;
    const target::GpuTarget* lowest = nullptr;
    std::string lowest_ptx;
    bool seen_nvidia = false, seen_amd = false;
    for (auto& arch : archs) {
        const target::GpuTarget* t = target::find_gpu_target(arch);
        if (!t) TILEC_ICE("no target table row for " + arch);
        ir::PassManager gpm(pmo);
        for (auto& pass : lower::build_gpu_passes(*t)) gpm.add(std::move(pass));
        auto thread_level = gpm.run(lowered, ctx);
        if (!thread_level || diags.has_errors()) return false;
        // NAME_cuda / NAME_hip pass NAME_cpu's arguments: the kernel must take exactly those.
        for (size_t i = 0; i < lowered.funcs.size(); ++i) {
            const auto& a = lowered.funcs[i].params;
            const auto& b = thread_level->funcs.at(i).params;
            bool same = a.size() == b.size();
            for (size_t j = 0; same && j < a.size(); ++j)
                same = a[j].kind == b[j].kind &&
                       (a[j].kind == ir::ParamKind::Tensor ? a[j].buffer->name == b[j].buffer->name &&
                                                                 a[j].buffer->dtype == b[j].buffer->dtype
                                                           : a[j].var->name == b[j].var->name &&
                                                                 a[j].var->type == b[j].var->type);
            if (!same) TILEC_ICE("the thread-level parameters of " + lowered.funcs[i].name + " differ from the export's");
        }
        if (out.kernels.empty()) {
            for (auto& f : thread_level->funcs) {
                codegen::GpuKernel k;
                k.export_name = f.name;
                k.symbol = f.name;  // both backends name the kernel after the export
                // One block size for every arch: the thread-level code of every arch is laid
                // out for exactly `threads` threads (in warps of 32, waves of 64 on gfx9 and 32
                // on gfx11), and the AMDGPU kernel's flat work-group size is 1..threads.
                k.threads = f.threads;
                k.cuda = nvidia;
                k.hip = amd;
                out.kernels.push_back(k);
            }
        } else {
            for (size_t i = 0; i < out.kernels.size(); ++i)
                if (thread_level->funcs.at(i).threads != out.kernels[i].threads)
                    TILEC_ICE("the block of " + out.kernels[i].symbol + " differs between GPU targets");
        }
        // One launch per API passes one size: every arch of a vendor must agree (the plan
        // does not depend on the arch; only the static limit, the same per vendor, does).
        bool first_of_vendor = t->vendor == target::Vendor::Amd ? !seen_amd : !seen_nvidia;
        (t->vendor == target::Vendor::Amd ? seen_amd : seen_nvidia) = true;
        for (size_t i = 0; i < out.kernels.size(); ++i) {
            int64_t bytes = thread_level->funcs.at(i).dynamic_shared_bytes();
            int64_t& kept = t->vendor == target::Vendor::Amd ? out.kernels[i].hip_dynamic_smem
                                                             : out.kernels[i].cuda_dynamic_smem;
            if (first_of_vendor)
                kept = bytes;
            else if (bytes != kept)
                TILEC_ICE("the dynamic shared memory of " + out.kernels[i].symbol + " differs between " + arch +
                          " and the vendor's other targets");
        }
        if (t->vendor == target::Vendor::Amd) {
            if (!images) continue;
            std::string object = amd_object_of(thread_level->funcs, *t, options, source);
            out.images.push_back({codegen::GpuImageKind::Hsaco, arch, codegen::link_hsaco(object, *t)});
            continue;
        }
        // sm_90 before sm_90a: plain PTX runs on every later GPU, arch-specific PTX only on its own.
        bool is_lowest = !lowest || t->arch < lowest->arch ||
                         (t->arch == lowest->arch && !t->arch_specific && lowest->arch_specific);
        if (is_lowest) lowest = t;
        if (!images) continue;
        std::string ptx = codegen::compile_nvptx(thread_level->funcs, *t, codegen::NvptxOutput::Ptx, source);
        auto cubin = cubin_of(ptx, thread_level->funcs, *t, options, diags);
        if (!cubin) return false;
        out.images.push_back({codegen::GpuImageKind::Cubin, arch, std::move(*cubin)});
        if (is_lowest) lowest_ptx = std::move(ptx);
    }
    if (lowest) {
        ptx_arch = codegen::ptx_arch_label(lowest->name);
        if (images) out.images.push_back({codegen::GpuImageKind::Ptx, ptx_arch, lowest_ptx});
    }
    return true;
}
#endif

}  // namespace

void add_tile_passes(ir::PassManager& pm) { pm.add(transform::make_simplify_pass()); }

int compile(const Options& options) {
    SourceManager sources;
    DiagnosticEngine diags(sources, std::cerr);
    diags.set_color(options.color);
    diags.set_error_limit(options.error_limit);
    diags.set_warnings_as_errors(options.werror);
    diags.set_warnings_enabled(options.warnings);
    try {
        for (auto& t : options.targets) {
            if (!target::find_target(t))
                diags.error({}, "unknown target '" + t + "' (known: " + known_target_list() + ")");
        }
        // Outputs of the CPU backend: --emit=llvm|asm|obj|header, or an object (+ header)
        // with -o and no --emit.
        const bool make_object = !options.output.empty() && options.emit.empty();
        const bool backend = make_object || options.emit == "llvm" || options.emit == "asm" ||
                             options.emit == "obj" || options.emit == "header";
        // The GPU path: --emit=ptx|cubin for the sm_XX targets (thread-level lowering,
        // NVPTX, ptxas), --emit=amdgcn|hsaco for the gfxNNN targets (AMDGPU, ld.lld), for
        // the kernels the thread-level lowering covers.
        const bool amd_emit = options.emit == "amdgcn" || options.emit == "hsaco";
        const bool gpu_emit = options.emit == "ptx" || options.emit == "cubin" || amd_emit;
#ifndef TILEC_WITH_LLVM
        if (make_object) {
            diags.error({}, "writing an object (-o without --emit) needs the CPU/GPU backends, which are not built yet; "
                            "use --emit=tir or --emit=ast (or build tilec with -DTILEC_WITH_LLVM=ON for the CPU "
                            "backend)");
        } else if (backend) {
            diags.error({}, "--emit=" + options.emit + " needs the CPU backend, which this tilec was built without "
                            "(configure it with -DTILEC_WITH_LLVM=ON)");
        } else if (gpu_emit) {
            diags.error({}, "--emit=" + options.emit + " needs the " + (amd_emit ? "AMDGPU" : "NVPTX") +
                                " backend, which this tilec was built without "
                            "(configure it with -DTILEC_WITH_LLVM=ON)");
        }
#endif
        // The GPU targets of an object (or its LLVM IR, assembly, header): their images go
        // into the host object with NAME_cuda (sm_XX) and NAME_hip (gfxNNN) entry points
        // (codegen/gpu_entry.h).
        std::vector<std::string> object_gpu_targets;
        bool object_host = options.targets.empty();
        if (backend) {
            for (auto& t : options.targets) {
                const target::Target* row = target::find_target(t);
                if (row && row->is_host()) {
                    object_host = true;
                } else if (row) {
                    if (std::find(object_gpu_targets.begin(), object_gpu_targets.end(), t) == object_gpu_targets.end())
                        object_gpu_targets.push_back(t);
                }
            }
            if ((options.emit == "obj" || make_object) && (options.output.empty() || options.output == "-"))
                diags.error({}, "an object needs -o FILE (it is not written to standard output)");
        }
        // The sm_XX of --emit=ptx|cubin (the gfxNNN of --emit=amdgcn|hsaco), in order.
        std::vector<std::string> gpu_targets;
        if (gpu_emit) {
            for (auto& t : options.targets) {
                const target::Target* row = target::find_target(t);
                if (!row || row->is_host()) continue;
                if (row->vendor == (amd_emit ? target::Vendor::Amd : target::Vendor::Nvidia))
                    gpu_targets.push_back(t);
                else if (amd_emit)
                    diags.error({}, "--target=" + t + ": --emit=" + options.emit +
                                    " is for AMD gfxNNN targets (NVIDIA sm_XX targets take --emit=ptx|cubin)");
                else
                    diags.error({}, "--target=" + t + ": --emit=" + options.emit +
                                    " is for NVIDIA sm_XX targets (AMD gfxNNN targets take --emit=amdgcn|hsaco)");
            }
            if (gpu_targets.empty() && !diags.has_errors())
                diags.error({}, "--emit=" + options.emit + " needs " +
                                    (amd_emit ? "an AMD target, e.g. --target=gfx942"
                                              : "an NVIDIA target, e.g. --target=sm_80"));
            const bool binary = options.emit == "cubin" || options.emit == "hsaco";
            if (binary && (options.output.empty() || options.output == "-"))
                diags.error({}, "--emit=" + options.emit + " needs -o FILE (it is not written to standard output)");
        }
        // -Xptxas and --verbose-resources concern GPU code: say when they cannot apply.
        bool any_sm = false, any_gpu = false;
        for (auto& t : options.targets) {
            const target::Target* row = target::find_target(t);
            if (!row || row->is_host()) continue;
            any_gpu = true;
            any_sm |= row->is_nvidia();
        }
        const bool amd_only_emit = gpu_emit && amd_emit;
        if (!options.ptxas_args.empty() && (!any_sm || amd_only_emit || !(backend || gpu_emit)))
            diags.warning({}, "-Xptxas has no effect without an NVIDIA --target=sm_XX whose code is built "
                              "(an object, --emit=ptx or --emit=cubin)");
        if (options.verbose_resources && (!any_gpu || !(backend || gpu_emit)))
            diags.warning({}, "--verbose-resources has no effect without a GPU --target whose code is built");
#ifdef TILEC_WITH_LLVM
        // ptxas runs for cubins, and for the report or the options of --emit=ptx.
        if (gpu_emit && !amd_emit && !gpu_targets.empty() &&
            (options.emit == "cubin" || options.verbose_resources || !options.ptxas_args.empty()))
            check_gpu_tools(true, false, diags);
        if (gpu_emit && options.emit == "hsaco" && !gpu_targets.empty()) check_gpu_tools(false, true, diags);
#endif
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
        // The passes that will run: the tile passes, then the GPU passes per GPU target.
        std::vector<std::string> pass_names;
        for (auto& p : pm.passes()) pass_names.push_back(p.name);
#ifdef TILEC_WITH_LLVM
        if (gpu_emit || !object_gpu_targets.empty())
            for (auto& p : lower::build_gpu_passes(target::gpu_targets().front())) pass_names.push_back(p.name);
#endif
        for (auto& name : options.print_after) {
            if (std::find(pass_names.begin(), pass_names.end(), name) != pass_names.end()) continue;
            std::string list;
            for (auto& p : pass_names) list += (list.empty() ? "" : ", ") + p;
            diags.error({}, "--print-after=" + name + ": no pass of that name (passes: " + list + ")");
        }
        if (diags.has_errors()) return 1;
        ir::PassContext ctx;
        ctx.diag = &diags;
        auto lowered = pm.run(module, ctx);
        if (!lowered || diags.has_errors()) return 1;

        // 4. Outputs.
        if (options.emit == "tir" && !write_output(options.output, ir::print(*lowered), diags)) return 1;
#ifdef TILEC_WITH_LLVM
        // 5. The CPU backend: LLVM IR, assembly, an object, the C header.
        if (backend) {
            std::string source = base_name(options.inputs.front());
            codegen::HeaderOptions hopt;
            hopt.source_name = source;
            hopt.tilec_version = TILEC_VERSION;
            // In the target table's order (NVIDIA first), so the object does not depend on the
            // option's order.
            auto rank = [](const std::string& arch) {
                const auto& all = target::gpu_targets();
                for (size_t i = 0; i < all.size(); ++i)
                    if (all[i].name == arch) return i;
                return all.size();
            };
            std::stable_sort(object_gpu_targets.begin(), object_gpu_targets.end(),
                             [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
            hopt.cpu_entries = object_host;
            for (auto& arch : object_gpu_targets)
                (target::find_gpu_target(arch)->is_nvidia() ? hopt.cuda_archs : hopt.hip_archs).push_back(arch);
            codegen::GpuEmbedding gpu;
            if (!object_gpu_targets.empty()) {
                // The header needs only to know that every export lowers; the rest, images too.
                std::string ptx_arch;
                if (!build_gpu_embedding(*lowered, object_gpu_targets, options.emit != "header", options, pmo, ctx,
                                         diags, source, gpu, ptx_arch))
                    return 1;
                if (!ptx_arch.empty()) hopt.cuda_archs.push_back(ptx_arch);
            }
            if (options.emit == "header") {
                // Named after the output, or after the input on standard output.
                hopt.header_name = options.output.empty() || options.output == "-"
                                       ? header_beside(source)
                                       : base_name(options.output);
                if (!write_output(options.output, codegen::c_header(*lowered, hopt), diags)) return 1;
            } else {
                codegen::CpuOptions copt;
                copt.source_name = source;
                copt.sources = &sources;
                copt.cpu_entries = object_host;
                if (!object_gpu_targets.empty()) copt.gpu = &gpu;
                copt.cpu = options.cpu;
                auto what = options.emit == "llvm"  ? codegen::CpuOutput::LlvmIr
                            : options.emit == "asm" ? codegen::CpuOutput::Assembly
                                                    : codegen::CpuOutput::Object;
                auto code = codegen::compile_cpu(*lowered, what, copt, diags);
                if (!code || !write_output(options.output, *code, diags)) return 1;
                if (make_object) {
                    std::string header = header_beside(options.output);
                    hopt.header_name = base_name(header);
                    if (!write_output(header, codegen::c_header(*lowered, hopt), diags)) return 1;
                }
            }
        }
        // 6. The GPU path: thread level, PTX and cubins or AMDGPU assembly and HSACO, one
        // arch after another.
        if (gpu_emit) {
            std::string source = base_name(options.inputs.front());
            std::string ptx_out;  // the text (PTX, AMDGPU assembly) of each arch for standard output
            for (auto& arch : gpu_targets) {
                const target::GpuTarget* t = target::find_gpu_target(arch);
                if (!t) TILEC_ICE("no target table row for " + arch);
                ir::PassManager gpm(pmo);
                for (auto& pass : lower::build_gpu_passes(*t)) gpm.add(std::move(pass));
                auto thread_level = gpm.run(*lowered, ctx);
                if (!thread_level || diags.has_errors()) return 1;
                std::string path = per_arch_path(options.output, arch, gpu_targets.size() > 1);
                if (amd_emit) {
                    if (options.emit == "hsaco") {
                        std::string object = amd_object_of(thread_level->funcs, *t, options, source);
                        if (!write_output(path, codegen::link_hsaco(object, *t), diags)) return 1;
                        continue;
                    }
                    if (options.verbose_resources) amd_object_of(thread_level->funcs, *t, options, source);
                    std::string text =
                        codegen::compile_amdgpu(thread_level->funcs, *t, codegen::AmdgpuOutput::Assembly, source);
                    if (path.empty() || path == "-")
                        ptx_out += text;
                    else if (!write_output(path, text, diags))
                        return 1;
                    continue;
                }
                std::string ptx =
                    codegen::compile_nvptx(thread_level->funcs, *t, codegen::NvptxOutput::Ptx, source);
                if (options.emit == "ptx") {
                    // ptxas runs only for the report (or to check -Xptxas options).
                    if ((options.verbose_resources || !options.ptxas_args.empty()) &&
                        !cubin_of(ptx, thread_level->funcs, *t, options, diags))
                        return 1;
                    if (path.empty() || path == "-")
                        ptx_out += ptx;  // several archs on standard output: one after another
                    else if (!write_output(path, ptx, diags))
                        return 1;
                } else {
                    auto cubin = cubin_of(ptx, thread_level->funcs, *t, options, diags);
                    if (!cubin || !write_output(path, *cubin, diags)) return 1;
                }
            }
            if (!ptx_out.empty() && !write_output("-", ptx_out, diags)) return 1;
        }
#endif
        if (options.depfile) {
            std::string target = options.output.empty() ? "-" : options.output;
            std::string path = !options.depfile_path.empty() ? options.depfile_path
                                                             : (options.output.empty() ? "" : options.output + ".d");
            if (path.empty()) {
                diags.error({}, "-MD needs -o (or -MF FILE) to name the depfile");
                return 1;
            }
            std::ostringstream dep;
            if (gpu_emit && gpu_targets.size() > 1 && !options.output.empty() && options.output != "-") {
                // One file per arch was written: each depends on the sources.
                target.clear();
                for (auto& arch : gpu_targets)
                    target += (target.empty() ? "" : " ") + escape_make(per_arch_path(options.output, arch, true));
                dep << target << ":";
            } else {
                dep << escape_make(target) << ":";
            }
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
