// The CPU backend's driver: one LLVM module for the whole compilation, the host
// TargetMachine, the optimisation pipeline, and LLVM IR / assembly / object output.
#include "codegen/cpu_backend.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "codegen/cpu_lowering.h"
#include "codegen/gpu_entry.h"
#include "codegen/module_output.h"
#include "support/stage_timer.h"

namespace tilec::codegen {

std::string cpu_entry_name(const ir::PrimFunc& f) {
    return f.name + "_cpu";
}

namespace {

// "+avx2,+fma,-avx512f,...": the host CPU's features, sorted so the text is stable.
std::string host_features() {
    std::vector<std::string> list;
    for (auto& kv : llvm::sys::getHostCPUFeatures())
        list.push_back((kv.second ? "+" : "-") + kv.first().str());
    std::sort(list.begin(), list.end());
    std::string out;
    for (auto& f : list) out += (out.empty() ? "" : ",") + f;
    return out;
}

}  // namespace

std::string host_codegen_identity(const std::string& cpu) {
    const bool native = cpu.empty() || cpu == "native";
    return std::string("LLVM ") + LLVM_VERSION_STRING + "\n" + llvm::sys::getProcessTriple() + "\n" +
           (native ? llvm::sys::getHostCPUName().str() + "\n" + host_features() : cpu) + "\n";
}

struct HostModule::Impl {
    std::unique_ptr<llvm::TargetMachine> tm;
    std::unique_ptr<BackendModule> backend;
    CpuOutput what = CpuOutput::Object;
};

HostModule::HostModule(std::unique_ptr<Impl> i) : impl(std::move(i)) {}
HostModule::~HostModule() = default;

std::optional<std::string> compile_cpu(const ir::Module& module, CpuOutput what, const CpuOptions& options,
                                       DiagnosticEngine& diags) {
    std::unique_ptr<HostModule> host = optimize_cpu(module, what, options, diags);
    if (!host) return std::nullopt;
    return emit_cpu(*host, options.gpu ? &options.gpu->images : nullptr);
}

void initialize_host_target() {
    static std::once_flag init;
    std::call_once(init, [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        llvm::InitializeNativeTargetAsmParser();
    });
}

std::optional<CpuChoice> parse_cpu_option(const std::string& option, DiagnosticEngine& diags) {
    initialize_host_target();
    const std::string triple = llvm::sys::getProcessTriple();
    std::string error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target) {
        diags.error({}, "cannot generate code for the host (" + triple + "): " + error);
        return std::nullopt;
    }
    // "native": this machine's CPU with every feature it has; otherwise an LLVM CPU name
    // whose features LLVM knows (x86-64 = any x86-64, x86-64-v3 = AVX2, znver4, ...); or
    // a list of x86-64 levels, one block function each, chosen at run time.
    llvm::SmallVector<llvm::StringRef, 4> cpu_list;  // empty names kept: they are errors below
    llvm::StringRef(option).split(cpu_list, ',', -1, true);
    CpuChoice choice;
    const bool dispatch = cpu_list.size() > 1;
    if (dispatch) {
        static const std::map<std::string, int> kLevels = {
            {"x86-64", 1}, {"x86-64-v2", 2}, {"x86-64-v3", 3}, {"x86-64-v4", 4}};
        if (!llvm::Triple(triple).isX86() || !llvm::Triple(triple).isArch64Bit()) {
            diags.error({}, "--cpu=" + option +
                                ": a list of CPUs (one block function each, chosen at run time) "
                                "is for x86-64 hosts; this host is " +
                                triple);
            return std::nullopt;
        }
        for (llvm::StringRef ref : cpu_list) {
            const std::string name = ref.str();
            auto it = kLevels.find(name);
            if (it == kLevels.end()) {
                diags.error({}, "--cpu=" + option + ": '" + name +
                                    "' in a list of CPUs: a list names x86-64 levels (x86-64, x86-64-v2, "
                                    "x86-64-v3, x86-64-v4), which the entry points check at run time");
                return std::nullopt;
            }
            for (auto& [level, seen] : choice.levels)
                if (seen == name) {
                    diags.error({}, "--cpu=" + option + ": '" + name + "' is listed twice");
                    return std::nullopt;
                }
            choice.levels.emplace_back(it->second, name);
        }
        std::sort(choice.levels.begin(), choice.levels.end());
    }
    const bool native = !dispatch && (option.empty() || option == "native");
    // With a list, the entry points and shared helpers are baseline x86-64 code: they
    // must run, and report, on a CPU below every variant.
    choice.cpu = dispatch ? "x86-64" : native ? llvm::sys::getHostCPUName().str() : option;
    choice.features = native ? host_features() : "";
    if (!native && !dispatch) {
        std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
        if (!sti || !sti->isCPUStringValid(choice.cpu)) {
            diags.error({}, "unknown CPU '" + choice.cpu + "' for " + triple +
                                " (use native, or an LLVM CPU name such as x86-64, x86-64-v2, x86-64-v3, "
                                "x86-64-v4, znver4, sapphirerapids; or a list of x86-64 levels, e.g. "
                                "x86-64-v3,x86-64-v4)");
            return std::nullopt;
        }
    }
    choice.target = target;
    choice.triple = triple;
    return choice;
}

std::unique_ptr<HostModule> optimize_cpu(const ir::Module& module, CpuOutput what, const CpuOptions& options,
                                         DiagnosticEngine& diags) {
    std::optional<CpuChoice> choice = parse_cpu_option(options.cpu, diags);
    if (!choice) return nullptr;
    const llvm::Target* target = choice->target;
    const std::string& triple = choice->triple;
    const std::vector<std::pair<int, std::string>>& levels = choice->levels;
    const std::string& cpu = choice->cpu;
    const std::string& features = choice->features;
    llvm::TargetOptions target_options;
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(triple, cpu, features, target_options,
                                                                        llvm::Reloc::PIC_, std::nullopt,
                                                                        llvm::CodeGenOptLevel::Aggressive));
    if (!tm) {
        diags.error({}, "cannot create the LLVM target machine for " + triple + " (" + cpu + ")");
        return nullptr;
    }

    auto backend = std::make_unique<BackendModule>(options.source_name, triple, *tm);
    BackendModule& backend_module = *backend;
    llvm::Module& m = backend_module.module;
    m.setPICLevel(llvm::PICLevel::BigPIC);  // the object may go into a shared library
    ModuleState ms(m, options.sources);
    // The SIMD registers and features the lowering sizes its code by.
    auto set_features = [](const llvm::MCSubtargetInfo& sti, ModuleState::CpuShape& into) {
        if (sti.checkFeatures("+avx512f")) {
            into.avx512f = true;
            into.avx512vl = sti.checkFeatures("+avx512vl");
            into.avx512dq = sti.checkFeatures("+avx512dq");
            into.vector_bytes = 64;
            into.vector_registers = 32;
        } else if (sti.checkFeatures("+avx")) {
            into.vector_bytes = 32;
        }
    };
    set_features(*tm->getMCSubtargetInfo(), ms.cpu);
    for (auto& [level, name] : levels) {
        ModuleState::CpuVariant v;
        v.name = name;
        v.level = level;
        v.shape.function_suffix = ".cpu" + std::to_string(level);
        std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, name, ""));
        set_features(*sti, v.shape);
        ms.cpu_variants.push_back(v);
    }
    ms.streaming_stores = llvm::Triple(triple).isX86();
    StageTimer::Scope timed_ir("host", "llvm-ir");
    if (options.cpu_entries)
        for (auto& f : module.funcs) emit_cpu_function(ms, f, cpu_entry_name(f));
    if (options.gpu) {
        // Each image's bytes are a placeholder until emit_cpu (distinct, so that nothing
        // merges them): the names of their globals.
        GpuEmbedding pending = *options.gpu;
        for (GpuImage& image : pending.images)
            image.data = "tilec.gpu." + std::to_string(static_cast<uint32_t>(image.kind)) + "." + image.arch;
        emit_gpu_embedding(ms, module, pending);
    }
    for (auto& fn : m) {
        if (fn.isDeclaration()) continue;
        // A variant's functions (their names carry its suffix) are that CPU's code.
        std::string fn_cpu = cpu;
        unsigned vector_bytes = ms.cpu.vector_bytes;
        for (const ModuleState::CpuVariant& v : ms.cpu_variants)
            if (fn.getName().contains(v.shape.function_suffix)) {
                fn_cpu = v.name;
                vector_bytes = v.shape.vector_bytes;
            }
        // LLVM's tuning for x86-64-v4 and for Intel's AVX-512 server CPUs prefers 256-bit
        // vectors (for CPUs that clock down on 512-bit ones); tilec's own code is sized for
        // the 64-byte registers (the gemm's register blocks, exp2's vscalefps), and the
        // vectoriser follows them too: exp2 on 8 lanes instead of 16 cost softmax 10-15%
        // on Zen 4, and on a Xeon with two 512-bit FMA units (AMX, AVX512-FP16) softmax f32
        // 4096^2 went from 0.60-0.67x to 0.81-0.85x of memcpy (1 and 2 threads).
        if (vector_bytes == 64) fn.addFnAttr("prefer-vector-width", "512");
        fn.addFnAttr("target-cpu", fn_cpu);
        if (!features.empty()) fn.addFnAttr("target-features", features);
        fn.setUWTableKind(llvm::UWTableKind::Async);  // unwind tables, as C compilers emit
    }
    verify_module(m, "CPU");
    timed_ir.stop();
    if (options.optimize) {
        StageTimer::Scope timed("host", "llvm-opt");
        optimize_module(m, *tm);
    }
    inline_math_functions(m);
    check_llvm_errors(backend_module.llvm_errors, "optimise", "CPU");
    auto impl = std::make_unique<HostModule::Impl>();
    impl->tm = std::move(tm);
    impl->backend = std::move(backend);
    impl->what = what;
    return std::make_unique<HostModule>(std::move(impl));
}

std::string emit_cpu(HostModule& host, const std::vector<GpuImage>* images) {
    HostModule::Impl& h = *host.impl;
    llvm::Module& m = h.backend->module;
    if (images) fill_gpu_images(m, *images);
    std::optional<llvm::CodeGenFileType> kind;
    if (h.what != CpuOutput::LlvmIr)
        kind = h.what == CpuOutput::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                             : llvm::CodeGenFileType::ObjectFile;
    StageTimer::Scope timed("host", "llvm-codegen");
    return emit_module(m, *h.tm, kind, "CPU", "the host target machine cannot emit this file type",
                       h.backend->llvm_errors);
}

}  // namespace tilec::codegen
