// The pipeline, top to bottom; each step is one call. --print-after-all shows the IR
// after each pass, --time-passes how long each took.
#include "driver/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "driver/compile_cache.h"
#include "driver/task_graph.h"
#include "frontend/frontend.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "ir/tma_maps.h"
#include "support/diagnostics.h"
#include "support/sha256.h"
#include "support/stage_timer.h"
#include "target/target.h"
#include "transform/parallel_races.h"
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

bool write_file(const std::string& path, const std::string& text, DiagnosticEngine& diags) {
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

// The kernels of an object's GPU side, from the thread-level IR of each arch in
// `archs` (the object's order): NAME_cuda when there is an sm arch, NAME_hip when there
// is a gfx arch. The entry points pass NAME_cpu's arguments and one block and dynamic
// shared-memory size per API, so every arch must agree on those (internal errors if not).
void describe_gpu_kernels(const ir::Module& lowered, const std::vector<std::string>& archs,
                          const std::vector<ir::Module>& thread_level, codegen::GpuEmbedding& out) {
    bool nvidia = false, amd = false;
    for (auto& arch : archs) (target::find_gpu_target(arch)->is_nvidia() ? nvidia : amd) = true;
    for (size_t a = 0; a < archs.size(); ++a) {
        const std::string& arch = archs[a];
        const target::GpuTarget* t = target::find_gpu_target(arch);
        const ir::Module& level = thread_level[a];
        for (size_t i = 0; i < lowered.funcs.size(); ++i) {
            const auto& pa = lowered.funcs[i].params;
            const auto& pb = level.funcs.at(i).params;
            bool same = pa.size() == pb.size();
            for (size_t j = 0; same && j < pa.size(); ++j)
                same = pa[j].kind == pb[j].kind &&
                       (pa[j].kind == ir::ParamKind::Tensor ? pa[j].buffer->name == pb[j].buffer->name &&
                                                                  pa[j].buffer->dtype == pb[j].buffer->dtype
                                                            : pa[j].var->name == pb[j].var->name &&
                                                                  pa[j].var->type == pb[j].var->type);
            if (!same) TILEC_ICE("the thread-level parameters of " + lowered.funcs[i].name + " differ from the export's");
        }
        if (out.kernels.empty()) {
            for (auto& f : level.funcs) {
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
        }
        // The block is the same for every arch but where a kernel is warp-specialized
        // (sm_90a: a producer warpgroup more, lower/split_warp_roles.cpp), which only the
        // archs whose kernels take tensor maps are; kept apart as tma_threads.
        for (size_t i = 0; i < out.kernels.size(); ++i) {
            auto& k = out.kernels[i];
            const ir::PrimFunc& lf = level.funcs.at(i);
            bool specialized = false;
            for (auto& [key, v] : lf.attrs) specialized |= key == "min_blocks_per_sm";
            // Thread-block clusters (lower/cluster_multicast.cpp: "XxYx1"): the CUDA entry
            // rounds the grid up to them.
            for (auto& [key, v] : lf.attrs)
                if (key == "cluster" && t->is_nvidia()) {
                    long long cx = 1, cy = 1, cz = 1;
                    if (std::sscanf(v.c_str(), "%lldx%lldx%lld", &cx, &cy, &cz) != 3)
                        TILEC_ICE("cluster attribute '" + v + "' of " + k.symbol + " is not XxYxZ");
                    k.cluster_x = std::max<int64_t>(k.cluster_x, cx);
                    k.cluster_y = std::max<int64_t>(k.cluster_y, cy);
                }
            if (specialized) {
                if (ir::tma_map_uses(lf).empty() || !t->is_nvidia())
                    TILEC_ICE("warp-specialized kernel " + k.symbol + " without tensor maps");
                if (k.tma_threads && k.tma_threads != lf.threads)
                    TILEC_ICE("the warp-specialized block of " + k.symbol + " differs between NVIDIA targets");
                k.tma_threads = lf.threads;
                if (a == 0) k.threads = 0;  // set by an arch that is not specialized, if any
            } else if (k.threads == 0) {
                k.threads = lf.threads;
            } else if (k.threads != lf.threads) {
                TILEC_ICE("the block of " + k.symbol + " differs between GPU targets");
            }
        }
        // TMA tensor maps: taken by the kernels of some archs (sm_90a), alike where taken.
        if (t->is_nvidia())
            for (size_t i = 0; i < out.kernels.size(); ++i) {
                std::vector<ir::TmaMapUse> maps = ir::tma_map_uses(level.funcs.at(i));
                if (maps.empty()) continue;
                auto& k = out.kernels[i];
                if (k.tma_archs.empty()) k.tma_maps = maps;
                bool same = k.tma_maps.size() == maps.size();
                for (size_t m = 0; same && m < maps.size(); ++m)
                    same = k.tma_maps[m].param == maps[m].param && k.tma_maps[m].imm == maps[m].imm;
                if (!same) TILEC_ICE("the TMA tensor maps of " + k.symbol + " differ between NVIDIA targets");
                k.tma_archs.push_back(arch);
            }
        // One launch per API passes one size: the largest any arch of the vendor needs (the
        // plans agree but for what an arch adds, sm_90a's TMA mbarriers; a kernel given
        // more dynamic shared memory than it uses runs the same).
        for (size_t i = 0; i < out.kernels.size(); ++i) {
            int64_t bytes = level.funcs.at(i).dynamic_shared_bytes();
            int64_t& kept = t->vendor == target::Vendor::Amd ? out.kernels[i].hip_dynamic_smem
                                                             : out.kernels[i].cuda_dynamic_smem;
            kept = std::max(kept, bytes);
        }
    }
    for (auto& k : out.kernels)
        if (k.threads == 0) k.threads = k.tma_threads;  // every arch warp-specialized
}

// The compile cache's second level: one export's GPU code for one arch (its PTX; its
// AMDGPU code object with the optimised bitcode it came from), under
// TILEC_CACHE_DIR/exports, keyed by this tilec, the arch, the arch LLVM optimised for, the
// module's name (the source file's) and the export's LLVM module before optimisation
// (bitcode): everything LLVM's backends read. When a compilation's whole outputs miss
// (one export of a file changed), LLVM runs only for the exports that changed; ptxas,
// ld.lld and the host code run as before, so the outputs are the same bytes as without
// the cache (tests/lit/compile-cache-exports.tile). A hit shows in --time-passes as
// `cache-hit`.
struct ExportCache {
    std::string dir;       // TILEC_CACHE_DIR/exports
    std::string identity;  // tilec_build_identity
    std::string key(const std::vector<std::string>& fields) const {
        Sha256 h;
        h.field(identity);
        h.field(std::to_string(fields.size()));
        for (auto& f : fields) h.field(f);
        return h.hex();
    }
    // The `count` parts stored under `key`, or nullopt.
    std::optional<std::vector<std::string>> lookup(const std::string& key, size_t count,
                                                   const std::string& target) const {
        auto start = std::chrono::steady_clock::now();
        auto hit = cache_lookup(dir, key);
        if (!hit || hit->size() != count) return std::nullopt;
        std::vector<std::string> parts;
        for (auto& out : *hit) parts.push_back(std::move(out.bytes));
        StageTimer::global().add(target, "cache-hit", std::chrono::steady_clock::now() - start);
        return parts;
    }
    void store(const std::string& key, const std::vector<std::string>& parts) const {
        std::vector<CachedOutput> outputs;
        for (auto& p : parts) outputs.push_back({"", p});
        cache_store(dir, key, outputs);
    }
};

// What the backend tasks of one GPU arch produce (each field written by one task).
struct ArchResult {
    const target::GpuTarget* target = nullptr;
    std::vector<std::string> parts;  // per export: PTX (sm) or optimised bitcode (gfx)
    std::vector<std::string> optimized;  // sm, per export: the optimised LLVM module as bitcode
    std::vector<std::string> ptx_keys;   // sm, per export: the export cache's key of its PTX, or ""
    std::string ptx;                 // sm: the merged PTX
    std::optional<codegen::PtxasRun> ptxas;  // sm: when ptxas ran
    std::string text;                // gfx: assembly (--emit=amdgcn)
    std::vector<std::string> objects;  // gfx, per export: its relocatable code object, when built
    std::string hsaco;               // gfx: the linked code object, when built
    std::vector<codegen::KernelResources> resources;  // --verbose-resources
};

// Narrowing a kernel's masked fills' LDS addresses (codegen::amdgpu_optimized_bitcode)
// moves LLVM's register allocation either way (gpu_address_constants.cpp), so it is
// tried only where the first allocation spilled, and kept where the kernel spills less:
// every kernel that did not spill keeps its code, and a compilation without spills
// costs nothing more. An AMD target's exports compile one per task to their own code
// objects (compile_amd_export; ld.lld joins them), or, for assembly alone, to one
// module (retry_spilling_exports).

// Export i of an AMD target optimised into r.parts[i] and, with `object`, compiled to
// its own code object in r.objects[i], retried narrowed where it spills.
// `unoptimized`: the export's module before optimisation, where the caller made it ("": none).
void compile_amd_export_uncached(ArchResult& r, size_t i, const ir::PrimFunc& f, const std::string& source,
                                 bool object, const std::string& unoptimized = "") {
    const target::GpuTarget& t = *r.target;
    auto optimized = [&](bool narrowed) {
        return unoptimized.empty() ? codegen::amdgpu_optimized_bitcode(f, t, source, narrowed)
                                   : codegen::amdgpu_optimize_bitcode(unoptimized, t, source, narrowed);
    };
    r.parts[i] = optimized(false);
    if (!object) return;
    auto scratch = [&](const std::string& code) {
        auto bytes = codegen::amdgpu_scratch_bytes(code, codegen::AmdgpuOutput::Object, t);
        auto it = bytes.find(f.name);
        return it == bytes.end() ? int64_t{0} : it->second;
    };
    r.objects[i] = codegen::compile_amdgpu_optimized({r.parts[i]}, t, codegen::AmdgpuOutput::Object, source);
    int64_t before = scratch(r.objects[i]);
    if (before == 0) return;
    std::string narrowed = optimized(true);
    std::string second =
        codegen::compile_amdgpu_optimized({narrowed}, t, codegen::AmdgpuOutput::Object, source);
    if (scratch(second) >= before) return;
    r.parts[i] = std::move(narrowed);
    r.objects[i] = std::move(second);
}

// The same through the export cache (null: none), for a code object: both results
// are the export's unoptimised module's.
void compile_amd_export(ArchResult& r, size_t i, const ir::PrimFunc& f, const std::string& source,
                        bool object, const ExportCache* cache) {
    const target::GpuTarget& t = *r.target;
    if (!cache || !object) {
        compile_amd_export_uncached(r, i, f, source, object);
        return;
    }
    const std::string unoptimized = codegen::amdgpu_unoptimized_bitcode(f, t, source);
    const std::string key = cache->key({"amdgpu-object", t.name, source, unoptimized});
    if (auto hit = cache->lookup(key, 2, t.name)) {
        r.parts[i] = std::move((*hit)[0]);
        r.objects[i] = std::move((*hit)[1]);
        return;
    }
    compile_amd_export_uncached(r, i, f, source, object, unoptimized);
    cache->store(key, {r.parts[i], r.objects[i]});
}

// An AMD target's exports compiled to one module's assembly, with the second try above
// for each export whose kernel spills. Returns the assembly of r.parts as they end.
std::string retry_spilling_exports(ArchResult& r, const ir::Module& level, const target::GpuTarget& t,
                                   const std::string& source) {
    const codegen::AmdgpuOutput what = codegen::AmdgpuOutput::Assembly;
    std::string first = codegen::compile_amdgpu_optimized(r.parts, t, what, source);
    std::map<std::string, int64_t> before = codegen::amdgpu_scratch_bytes(first, what, t);
    std::vector<std::string> parts = r.parts;
    std::vector<size_t> retried;
    for (size_t i = 0; i < level.funcs.size(); ++i) {
        auto it = before.find(level.funcs[i].name);
        if (it == before.end() || it->second == 0) continue;
        parts[i] = codegen::amdgpu_optimized_bitcode(level.funcs[i], t, source, true);
        retried.push_back(i);
    }
    if (retried.empty()) return first;
    std::string second = codegen::compile_amdgpu_optimized(parts, t, what, source);
    std::map<std::string, int64_t> after = codegen::amdgpu_scratch_bytes(second, what, t);
    size_t kept = 0;
    for (size_t i : retried) {
        const std::string& name = level.funcs[i].name;
        if (after.count(name) && after[name] < before[name]) {
            r.parts[i] = std::move(parts[i]);
            ++kept;
        }
    }
    if (kept == retried.size()) return second;
    if (kept == 0) return first;
    // Some kept, some not: the code object of the mix (each kernel's code is its own).
    return codegen::compile_amdgpu_optimized(r.parts, t, what, source);
}

// What ptxas warned about in a run that succeeded (options such as -Xptxas --warn-on-spills
// ask for warnings), one warning per message, with the PTX lines it names: "ptxas
// kernel.ptx, line 38; warning : Program is doing double precision computations" on lines
// 38 and 49 is "ptxas for --target=sm_80: Program is doing double precision computations
// (at lines 38, 49 of the PTX that --emit=ptx writes)". Its info lines (-v,
// --verbose-resources) are not warnings.
void report_ptxas_warnings(const codegen::PtxasRun& run, const target::GpuTarget& t,
                           DiagnosticEngine& diags) {
    std::vector<std::pair<std::string, std::vector<std::string>>> messages;  // message, PTX lines
    std::istringstream in(run.output);
    for (std::string line; std::getline(in, line);) {
        size_t w = line.find("warning :");
        if (w == std::string::npos) w = line.find("warning:");
        if (w == std::string::npos) continue;
        std::string message = line.substr(line.find(':', w) + 1);
        while (!message.empty() && message.front() == ' ') message.erase(0, 1);
        while (!message.empty() && (message.back() == ' ' || message.back() == '\r' || message.back() == '.'))
            message.pop_back();
        std::string ptx_line;
        if (size_t l = line.rfind(", line ", w); l != std::string::npos) {
            size_t end = line.find(';', l);
            if (end != std::string::npos && end < w) ptx_line = line.substr(l + 7, end - l - 7);
        }
        auto it =
            std::find_if(messages.begin(), messages.end(), [&](const auto& m) { return m.first == message; });
        if (it == messages.end()) it = messages.insert(messages.end(), {message, {}});
        if (!ptx_line.empty()) it->second.push_back(ptx_line);
    }
    for (auto& [message, lines] : messages) {
        std::string where;
        for (auto& l : lines) where += (where.empty() ? "" : ", ") + l;
        diags.warning({}, "ptxas for --target=" + t.name + ": " + message +
                              (lines.empty() ? ""
                                             : " (at line" + std::string(lines.size() == 1 ? " " : "s ") +
                                                   where + " of the PTX that --emit=ptx writes)"));
    }
}

// The user's words for a ptxas failure: the user's when they gave -Xptxas options
// (ptxas's message as the diagnostic), else an internal error: the PTX is ours.
void report_ptxas_failure(const codegen::PtxasRun& run, const target::GpuTarget& t, const Options& options,
                          DiagnosticEngine& diags) {
    if (options.ptxas_args.empty())
        TILEC_ICE(run.command + " failed (" + codegen::ptxas_path() + ", exit status " + std::to_string(run.status) +
                  "):\n" + run.output);
    std::string given;
    for (auto& a : options.ptxas_args) given += (given.empty() ? "" : " ") + a;
    std::string out = run.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    diags.error({}, "ptxas failed for --target=" + t.name + " with -Xptxas " + given + " (exit status " +
                        std::to_string(run.status) + "): " + out);
}

// The NVIDIA archs' optimised LLVM modules of one export: each arch's module as the IR
// emitter makes it, and one O3 run per group of archs whose modules are the same bytes
// (sm_80 and sm_90a usually are), for the group's lowest arch (its IR is then within
// what each arch of the group has). Written to optimized[a][export] for each NVIDIA arch a
// of a group of several. An arch alone in its group gets its PTX in parts[a][export]
// straight away, its `optimized` left empty for the PTX task to skip; the only NVIDIA arch
// too, with no bitcode written at all (nothing to compare it with) unless `cache` (the
// export cache, null for none) needs it for its key. Each arch's PTX is looked up in the
// cache first, and stored there once made (here, or by the PTX task: ptx_keys).
void optimize_nvidia_export(size_t export_index, const std::vector<ir::Module>& thread_level,
                            std::vector<ArchResult>& results, const std::string& source,
                            const ExportCache* cache) {
    std::vector<size_t> nvidia;
    for (size_t a = 0; a < results.size(); ++a)
        if (results[a].target->is_nvidia()) nvidia.push_back(a);
    if (nvidia.size() == 1 && !cache) {
        ArchResult& r = results[nvidia[0]];
        r.parts.at(export_index) =
            codegen::nvptx_ptx_of_kernel(thread_level[nvidia[0]].funcs.at(export_index), *r.target, source);
        return;
    }
    struct Group {
        std::string unoptimized;
        size_t lowest;
        std::vector<size_t> archs;
    };
    std::vector<Group> groups;
    auto lower = [](const target::GpuTarget& a, const target::GpuTarget& b) {
        return a.arch < b.arch || (a.arch == b.arch && !a.arch_specific && b.arch_specific);
    };
    for (size_t a = 0; a < results.size(); ++a) {
        const target::GpuTarget& t = *results[a].target;
        if (!t.is_nvidia()) continue;
        std::string bc = codegen::nvptx_unoptimized_bitcode(thread_level[a].funcs.at(export_index), t, source);
        auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.unoptimized == bc; });
        if (same == groups.end()) {
            groups.push_back(Group{std::move(bc), a, {a}});
            continue;
        }
        same->archs.push_back(a);
        if (lower(t, *results[same->lowest].target)) same->lowest = a;
    }
    for (auto& g : groups) {
        // The export cache's key of each arch's PTX: optimised for the group's lowest arch.
        std::vector<std::string> keys;
        bool all_hit = cache != nullptr;
        if (cache)
            for (size_t a : g.archs) {
                const std::string& name = results[a].target->name;
                keys.push_back(
                    cache->key({"nvptx", results[g.lowest].target->name, name, source, g.unoptimized}));
                if (!all_hit) continue;
                if (auto hit = cache->lookup(keys.back(), 1, name))
                    results[a].parts.at(export_index) = std::move(hit->front());
                else
                    all_hit = false;
            }
        if (all_hit) continue;
        if (g.archs.size() == 1) {
            // O3 and PTX in the same context: the same PTX as through bitcode.
            ArchResult& r = results[g.lowest];
            r.parts.at(export_index) = codegen::nvptx_ptx_of_unoptimized(g.unoptimized, *r.target, source);
            if (cache) cache->store(keys.front(), {r.parts.at(export_index)});
            continue;
        }
        std::string optimized = codegen::nvptx_optimize_bitcode(g.unoptimized, *results[g.lowest].target, source);
        for (size_t k = 0; k < g.archs.size(); ++k) {
            results[g.archs[k]].optimized.at(export_index) = optimized;
            if (cache) results[g.archs[k]].ptx_keys.at(export_index) = keys[k];
        }
    }
}

// Adds the backend tasks of every arch to `graph`: per export, LLVM IR and O3 in its own
// LLVM context (for NVIDIA, once per group of archs with the same IR, then code
// generation to PTX per arch; for gfx, the export's code object when one is needed); per
// arch, the exports' results joined (PTX merged; gfx code objects linked by ld.lld when
// `hsaco`, bitcode linked and compiled to one module's assembly when `amd_text`), then
// ptxas when `cubin`. Returns the arch tasks.
std::vector<size_t> add_gpu_tasks(TaskGraph& graph, const std::vector<ir::Module>& thread_level,
                                  std::vector<ArchResult>& results, bool cubin, bool hsaco, bool amd_text,
                                  const Options& options, const std::string& source,
                                  const ExportCache* cache) {
    size_t exports = thread_level.empty() ? 0 : thread_level.front().funcs.size();
    for (auto& r : results) {
        r.optimized.resize(exports);
        r.ptx_keys.resize(exports);
    }
    // The gfx targets' code objects (per export), for HSACO or their resources.
    const bool amd_objects = hsaco || options.verbose_resources;
    // Ready tasks run lowest index first: the AMD archs' come first, as their exports'
    // code generation is the most work, which then overlaps the NVIDIA archs' (gemm.tile's
    // fat object at -j2 on 2 cores: NVIDIA first took 0.7-1.1 s longer, 3 alternating runs).
    std::vector<size_t> order;
    for (size_t a = 0; a < results.size(); ++a)
        if (!results[a].target->is_nvidia()) order.push_back(a);
    for (size_t a = 0; a < results.size(); ++a)
        if (results[a].target->is_nvidia()) order.push_back(a);
    std::vector<size_t> nvidia_opt;  // per export: its optimize_nvidia_export task
    std::vector<size_t> arch_tasks;
    for (size_t a : order) {
        ArchResult& r = results[a];
        if (r.target->is_nvidia() && nvidia_opt.empty())
            for (size_t i = 0; i < exports; ++i)
                nvidia_opt.push_back(graph.add([i, &thread_level, &results, &source, cache] {
                    optimize_nvidia_export(i, thread_level, results, source, cache);
                }));
        const ir::Module& level = thread_level[a];
        const target::GpuTarget& t = *r.target;
        r.parts.resize(level.funcs.size());
        if (!t.is_nvidia() && amd_objects) r.objects.resize(level.funcs.size());
        std::vector<size_t> deps;
        for (size_t i = 0; i < level.funcs.size(); ++i) {
            const ir::PrimFunc* f = &level.funcs[i];
            std::string* part = &r.parts[i];
            if (t.is_nvidia()) {
                const std::string* optimized = &r.optimized[i];
                const std::string* key = &r.ptx_keys[i];
                deps.push_back(graph.add(
                    [part, optimized, key, &t, &source, cache] {
                        if (optimized->empty()) return;
                        *part = codegen::nvptx_ptx_of_bitcode(*optimized, t, source);
                        if (!key->empty()) cache->store(*key, {*part});
                    },
                    {nvidia_opt.at(i)}));
            } else {
                deps.push_back(graph.add([&r, i, f, &source, amd_objects, cache] {
                    compile_amd_export(r, i, *f, source, amd_objects, cache);
                }));
            }
        }
        arch_tasks.push_back(graph.add(
            [&r, &level, &t, &options, &source, cubin, hsaco, amd_text, amd_objects] {
                if (t.is_nvidia()) {
                    // A file with no exports (only funcs, or kernels without defaults) gives
                    // a module of no entries, as the AMDGPU and host outputs do.
                    r.ptx = r.parts.empty() ? codegen::compile_nvptx({}, t, codegen::NvptxOutput::Ptx, source)
                                            : codegen::merge_ptx(r.parts);
                    r.parts.clear();
                    r.optimized.clear();
                    r.ptx_keys.clear();
                    if (!cubin) return;
                    r.ptxas = codegen::run_ptxas(r.ptx, t, options.ptxas_args, options.verbose_resources);
                    if (r.ptxas->ok) r.resources = std::move(r.ptxas->resources);
                    return;
                }
                if (!amd_objects) {
                    if (amd_text) r.text = retry_spilling_exports(r, level, t, source);
                    r.parts.clear();
                    return;
                }
                // The exports' objects (a file with no exports: the object of an empty module).
                if (r.objects.empty())
                    r.objects.push_back(
                        codegen::compile_amdgpu_optimized({}, t, codegen::AmdgpuOutput::Object, source));
                if (amd_text)
                    r.text = codegen::compile_amdgpu_optimized(r.parts, t, codegen::AmdgpuOutput::Assembly,
                                                               source);
                r.parts.clear();
                if (options.verbose_resources)
                    for (const std::string& o : r.objects)
                        for (auto& k : codegen::amdgpu_resources(o, t)) r.resources.push_back(k);
                if (hsaco) r.hsaco = codegen::link_hsaco(r.objects, t);
            },
            deps));
    }
    return arch_tasks;
}

// The GPU passes (tile level -> thread level) of every export for each arch, one
// pipeline per export and arch on `jobs` threads. Each reports into its own deferred
// diagnostics; afterwards they are replayed in (arch, export) order up to the first
// pipeline that failed, whose internal error, if any, is rethrown there: what is printed
// and returned is what running them one after another prints and returns. (With
// --print-after* or --time-passes the caller runs them in order instead: those print
// as the passes run.) Returns nullopt after an error.
std::optional<std::vector<ir::Module>> run_gpu_passes_parallel(const ir::Module& lowered,
                                                               const std::vector<const target::GpuTarget*>& archs,
                                                               const ir::PassManagerOptions& pmo,
                                                               const ir::PassContext& ctx, unsigned jobs) {
    struct Job {
        std::optional<ir::PrimFunc> out;
        std::vector<Diagnostic> reported;
        std::exception_ptr error;
    };
    const size_t n = lowered.funcs.size();
    std::vector<Job> slots(archs.size() * n);
    TaskGraph graph;
    for (size_t a = 0; a < archs.size(); ++a)
        for (size_t i = 0; i < n; ++i)
            graph.add([&, a, i] {
                Job& job = slots[a * n + i];
                DiagnosticEngine diags = ctx.diag->deferred(job.reported);
                ir::PassContext local = ctx;
                local.diag = &diags;
                ir::PassManager pm(pmo);
                for (auto& pass : lower::build_gpu_passes(*archs[a])) pm.add(std::move(pass));
                try {
                    job.out = pm.run(lowered.funcs[i], local);
                } catch (const ErrorLimitReached&) {
                    // Stopped at the limit: the replay reaches it again and stops there.
                } catch (...) {
                    job.error = std::current_exception();
                }
            });
    graph.run(jobs);
    std::vector<ir::Module> levels(archs.size());
    for (size_t a = 0; a < archs.size(); ++a)
        for (size_t i = 0; i < n; ++i) {
            Job& job = slots[a * n + i];
            for (const Diagnostic& d : job.reported) ctx.diag->report(d);
            if (job.error) std::rethrow_exception(job.error);
            if (!job.out || ctx.diag->has_errors()) return std::nullopt;
            levels[a].funcs.push_back(std::move(*job.out));
        }
    return levels;
}
#endif

}  // namespace

namespace {

// The compile cache's key: this tilec, the tools and LLVM it generates code with, every
// option that changes an output (not -j: the outputs are the same for every N), and the
// path and contents of every file the compilation read.
std::string compile_cache_key(const Options& options, const SourceManager& sources) {
    // -o's name, not its folder: outputs name the header after it, but a fresh build
    // folder must find the entries of another (the outputs are kept relative to it).
    std::string output_name = options.output.substr(options.output.find_last_of('/') + 1);
    Sha256 h;
    h.field(tilec_build_identity(TILEC_VERSION));
    auto list = [&](const char* what, const std::vector<std::string>& items) {
        h.field(what);
        h.field(std::to_string(items.size()));
        for (auto& item : items) h.field(item);
    };
    list("inputs", options.inputs);
    list("output", {output_name, options.emit, options.cpu, options.stdlib_dir});
    list("targets", options.targets);
    list("include", options.include_dirs);
    list("exports", options.exports);
    list("ptxas-args", options.ptxas_args);
    std::vector<std::string> defines;
    for (auto& [name, value] : options.defines) defines.push_back(name + "=" + value);
    list("defines", defines);
    list("diagnostics", {options.warnings ? "warnings" : "-w", options.werror ? "-Werror" : "", options.verify ? "" : "--no-verify"});
#ifdef TILEC_WITH_LLVM
    h.field(codegen::host_codegen_identity(options.cpu));
    bool nvidia = false, amd = false;
    for (auto& t : options.targets)
        if (const target::Target* row = target::find_target(t); row && !row->is_host())
            (row->is_nvidia() ? nvidia : amd) = true;
    if (nvidia) list("ptxas", {codegen::ptxas_path(), codegen::ptxas_version()});
    if (amd) list("ld.lld", {codegen::ld_lld_path(), codegen::ld_lld_version()});
#endif
    h.field("files");
    for (uint32_t id = 1; id <= sources.file_count(); ++id) {
        h.field(sources.path(id));
        h.field(sources.contents(id));
    }
    return h.hex();
}

}  // namespace

void add_tile_passes(ir::PassManager& pm) {
    pm.add(transform::make_simplify_pass());
    pm.add(transform::make_parallel_race_check_pass());
}

int compile(const Options& options) {
    SourceManager sources;
    DiagnosticEngine diags(sources, std::cerr);
    diags.set_color(options.color);
    diags.set_error_limit(options.error_limit);
    diags.set_warnings_as_errors(options.werror);
    diags.set_warnings_enabled(options.warnings);
    StageTimer::global().enable(options.time_passes);
    try {
        // What this compilation writes, in order, for the compile cache. Every file output
        // is -o's or beside it (k.h, k.sm_80.cubin): the cache keeps its path relative to
        // -o's folder ("@k.h"), so a fresh build folder (CI) finds the entries of another.
        const std::string output_dir = options.output.substr(0, options.output.find_last_of('/') + 1);
        std::vector<CachedOutput> written;
        auto write_output = [&](const std::string& path, const std::string& text, DiagnosticEngine& d) {
            std::string kept = path.empty() || path == "-" ? "-"
                               : path.compare(0, output_dir.size(), output_dir) == 0 ? "@" + path.substr(output_dir.size())
                                                                                      : path;
            written.push_back({kept, text});
            return write_file(path, text, d);
        };
        for (auto& t : options.targets) {
            if (!target::find_target(t))
                diags.error({}, "unknown target '" + t + "' (known: " + known_target_list() + ")");
        }
#ifdef TILEC_WITH_LLVM
        // --cpu is checked whether or not host code is built: a run that only checks
        // rejects what an object's build would.
        if (options.cpu != "native") codegen::parse_cpu_option(options.cpu, diags);
#endif
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
        [[maybe_unused]] bool object_host = options.targets.empty();
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
        fopt.exports = options.exports;

        // 1. Parse the inputs and their imports.
        auto program = frontend::load_program(options.inputs, fopt, sources, diags);
        if (!program) return 1;

        // -MD: the outputs depend on the inputs and every file they import.
        auto write_depfile = [&](const frontend::Program& program) -> bool {
            if (!options.depfile) return true;
            std::string target = options.output.empty() ? "-" : options.output;
            std::string path = !options.depfile_path.empty() ? options.depfile_path
                                                             : (options.output.empty() ? "" : options.output + ".d");
            if (path.empty()) {
                diags.error({}, "-MD needs -o (or -MF FILE) to name the depfile");
                return false;
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
            for (auto& imp : program.imported_paths) dep << " \\\n  " << escape_make(imp);
            dep << "\n";
            std::ofstream out(path);
            if (!out || !(out << dep.str())) {
                diags.error({}, "cannot write depfile '" + path + "'");
                return false;
            }
            return true;
        };

        if (options.emit == "ast") {
            std::string text;
            for (uint32_t id : program->input_files)
                for (auto& f : program->files)
                    if (f->file_id == id) text += ast::print(*f);
            if (!write_output(options.output, text, diags)) return 1;
        }

        // The compile cache (TILEC_CACHE_DIR): outputs keyed by everything they depend on,
        // every file read included. Not for runs whose point is what they print besides
        // their outputs (IR dumps, timings, resources) or that write nothing.
        const std::string cache_dir = cache_dir_from_environment();
        const bool use_cache = !cache_dir.empty() && options.emit != "ast" &&
                               (make_object || !options.emit.empty()) && !options.print_after_all &&
                               options.print_after.empty() && !options.time_passes && !options.verbose_resources &&
                               !options.debug_internal_error;
        std::string cache_key;
        if (use_cache) {
            cache_key = compile_cache_key(options, sources);
            if (auto hit = cache_lookup(cache_dir, cache_key)) {
                for (auto& out : *hit) {
                    std::string path = out.path.rfind("@", 0) == 0 ? output_dir + out.path.substr(1) : out.path;
                    if (!write_file(path, out.bytes, diags)) return 1;
                }
                return write_depfile(*program) ? 0 : 1;
            }
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
        // 5. Thread level for each GPU arch, one after another (their diagnostics in order):
        // the archs of an object in the target table's order (NVIDIA first), so the object
        // does not depend on the option's order; those of --emit=ptx|cubin|amdgcn|hsaco as given.
        std::string source = base_name(options.inputs.front());
        TaskGraph::Times backend_times;  // for --time-passes
        auto rank = [](const std::string& arch) {
            const auto& all = target::gpu_targets();
            for (size_t i = 0; i < all.size(); ++i)
                if (all[i].name == arch) return i;
            return all.size();
        };
        std::stable_sort(object_gpu_targets.begin(), object_gpu_targets.end(),
                         [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
        const std::vector<std::string>& archs = gpu_emit ? gpu_targets : object_gpu_targets;
        std::vector<ir::Module> thread_level;
        std::vector<ArchResult> results;
        for (auto& arch : archs) {
            const target::GpuTarget* t = target::find_gpu_target(arch);
            if (!t) TILEC_ICE("no target table row for " + arch);
            results.emplace_back().target = t;
        }
        if (options.print_after_all || !options.print_after.empty() || options.time_passes || options.jobs <= 1 ||
            archs.size() * lowered->funcs.size() <= 1) {
            for (auto& r : results) {
                ir::PassManager gpm(pmo);
                for (auto& pass : lower::build_gpu_passes(*r.target)) gpm.add(std::move(pass));
                auto level = gpm.run(*lowered, ctx);
                if (!level || diags.has_errors()) return 1;
                thread_level.push_back(std::move(*level));
            }
        } else if (!archs.empty()) {
            std::vector<const target::GpuTarget*> targets;
            for (auto& r : results) targets.push_back(r.target);
            auto levels = run_gpu_passes_parallel(*lowered, targets, pmo, ctx, options.jobs);
            if (!levels) return 1;
            thread_level = std::move(*levels);
        }
        if (backend || gpu_emit) {
            // The header needs only to know that every export lowers; the rest, images too.
            const bool images = backend && options.emit != "header" && !archs.empty();
            codegen::HeaderOptions hopt;
            codegen::GpuEmbedding gpu;
            const ArchResult* lowest = nullptr;  // the sm arch whose PTX the object carries
            if (backend) {
                hopt.source_name = source;
                hopt.tilec_version = TILEC_VERSION;
                hopt.cpu_entries = object_host;
                for (auto& arch : object_gpu_targets)
                    (target::find_gpu_target(arch)->is_nvidia() ? hopt.cuda_archs : hopt.hip_archs).push_back(arch);
                if (!archs.empty()) {
                    if (images) {
                        bool nvidia = !hopt.cuda_archs.empty(), amd = !hopt.hip_archs.empty();
                        if (!check_gpu_tools(nvidia, amd, diags)) return 1;
                    }
                    gpu.module_name = source;
                    describe_gpu_kernels(*lowered, archs, thread_level, gpu);
                    // The PTX of the lowest sm arch goes in too, for the driver to JIT on GPUs
                    // newer than every cubin; sm_90 before sm_90a: plain PTX runs on every later
                    // GPU, arch-specific PTX only on its own.
                    for (auto& r : results) {
                        const target::GpuTarget* t = r.target;
                        if (!t->is_nvidia()) continue;
                        if (!lowest || t->arch < lowest->target->arch ||
                            (t->arch == lowest->target->arch && !t->arch_specific && lowest->target->arch_specific))
                            lowest = &r;
                    }
                    if (lowest) hopt.cuda_archs.push_back(codegen::ptx_arch_label(lowest->target->name));
                }
            }
            // 6. The backends, exports x targets on the thread pool (-j): results land in
            // their own slots and are reported and written below, in order.
            TaskGraph graph;
            std::vector<size_t> arch_tasks;
            // The export cache: with TILEC_CACHE_DIR, but not while TILEC_DEBUG_GPU_IR asks
            // for every module's IR (a hit compiles nothing to dump). The tasks hold it.
            std::optional<ExportCache> export_cache;
            const char* debug_ir = std::getenv("TILEC_DEBUG_GPU_IR");
            if (!cache_dir.empty() && !(debug_ir && *debug_ir))
                export_cache = ExportCache{cache_dir + "/exports", tilec_build_identity(TILEC_VERSION)};
            if (gpu_emit || images) {
                const bool cubin = images || options.emit == "cubin" ||
                                   (options.emit == "ptx" && (options.verbose_resources || !options.ptxas_args.empty()));
                const bool hsaco = images || options.emit == "hsaco";
                arch_tasks =
                    add_gpu_tasks(graph, thread_level, results, cubin, hsaco, options.emit == "amdgcn",
                                  options, source, export_cache ? &*export_cache : nullptr);
            }
            std::optional<std::string> host_code;
            std::unique_ptr<codegen::HostModule> host_module;
            const bool host_backend = backend && options.emit != "header";
            auto gpu_failed = [&] {
                for (auto& r : results)
                    if (r.ptxas && !r.ptxas->ok) return true;
                return false;
            };
            if (host_backend) {
                // The host module is built and optimised beside the GPU backends, with the
                // images' kinds and archs (their bytes are placeholders until they exist:
                // codegen::optimize_cpu); its code is emitted once every arch is done.
                for (auto& r : results)
                    gpu.images.push_back(
                        {r.target->is_nvidia() ? codegen::GpuImageKind::Cubin : codegen::GpuImageKind::Hsaco,
                         r.target->name, ""});
                if (lowest)
                    gpu.images.push_back(
                        {codegen::GpuImageKind::Ptx, codegen::ptx_arch_label(lowest->target->name), ""});
                codegen::initialize_host_target();
                size_t optimized = graph.add([&] {
                    codegen::CpuOptions copt;
                    copt.source_name = source;
                    copt.sources = &sources;
                    copt.cpu_entries = object_host;
                    if (!archs.empty()) copt.gpu = &gpu;
                    copt.cpu = options.cpu;
                    auto what = options.emit == "llvm"  ? codegen::CpuOutput::LlvmIr
                                : options.emit == "asm" ? codegen::CpuOutput::Assembly
                                                        : codegen::CpuOutput::Object;
                    host_module = codegen::optimize_cpu(*lowered, what, copt, diags);
                });
                std::vector<size_t> deps = arch_tasks;
                deps.push_back(optimized);
                graph.add(
                    [&] {
                        if (gpu_failed() || !host_module) return;
                        // The bytes of the images listed above, in their order.
                        for (size_t a = 0; a < results.size(); ++a)
                            gpu.images[a].data =
                                results[a].target->is_nvidia() ? results[a].ptxas->cubin : results[a].hsaco;
                        if (lowest) gpu.images.back().data = lowest->ptx;
                        host_code = codegen::emit_cpu(*host_module, archs.empty() ? nullptr : &gpu.images);
                        host_module.reset();
                    },
                    deps);
            }
            graph.run(options.jobs);
            backend_times = graph.times();
            // ptxas's failures (the first arch's: the same options fail for every arch), its
            // warnings and --verbose-resources, in arch order.
            for (auto& r : results) {
                if (r.ptxas && !r.ptxas->ok) {
                    report_ptxas_failure(*r.ptxas, *r.target, options, diags);
                    return 1;
                }
            }
            for (auto& r : results)
                if (r.ptxas) report_ptxas_warnings(*r.ptxas, *r.target, diags);
            if (diags.has_errors()) return 1;  // -Werror
            if (options.verbose_resources)
                for (size_t a = 0; a < results.size(); ++a)
                    if (results[a].ptxas || !results[a].objects.empty())
                        print_resources(results[a].resources, thread_level[a].funcs);
            if (host_backend) {
                if (!host_code || !write_output(options.output, *host_code, diags)) return 1;
                if (make_object) {
                    std::string header = header_beside(options.output);
                    hopt.header_name = base_name(header);
                    if (!write_output(header, codegen::c_header(*lowered, hopt), diags)) return 1;
                }
            } else if (options.emit == "header") {
                // Named after the output, or after the input on standard output.
                hopt.header_name = options.output.empty() || options.output == "-" ? header_beside(source)
                                                                                   : base_name(options.output);
                if (!write_output(options.output, codegen::c_header(*lowered, hopt), diags)) return 1;
            }
            if (gpu_emit) {
                std::string text_out;  // the text (PTX, AMDGPU assembly) of each arch for standard output
                for (auto& r : results) {
                    std::string path = per_arch_path(options.output, r.target->name, results.size() > 1);
                    const std::string& bytes = options.emit == "ptx"      ? r.ptx
                                               : options.emit == "cubin"  ? r.ptxas->cubin
                                               : options.emit == "amdgcn" ? r.text
                                                                          : r.hsaco;
                    bool binary = options.emit == "cubin" || options.emit == "hsaco";
                    if (!binary && (path.empty() || path == "-"))
                        text_out += bytes;  // several archs on standard output: one after another
                    else if (!write_output(path, bytes, diags))
                        return 1;
                }
                if (!text_out.empty() && !write_output("-", text_out, diags)) return 1;
            }
        }
        if (options.time_passes) {
            std::vector<std::string> order = {"host"};
            for (auto& t : target::gpu_targets()) order.push_back(t.name);
            StageTimer::global().print(std::cerr, order);
            if (backend_times.tasks) {
                char line[160];
                std::snprintf(line, sizeof line, "  %zu tasks, %.3f s of work, longest chain %.3f s\n",
                              backend_times.tasks, backend_times.work, backend_times.chain);
                std::cerr << "===-- backend tasks (wall; the chain is the time on unlimited threads) --===\n"
                          << line;
            }
        }
#endif
        if (!write_depfile(*program)) return 1;
        if (use_cache && !diags.has_errors() && diags.warning_count() == 0) cache_store(cache_dir, cache_key, written);
        return diags.has_errors() ? 1 : 0;
    } catch (const ErrorLimitReached&) {
        return 1;
    }
}

}  // namespace tilec::driver
