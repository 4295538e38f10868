// The NVPTX backend (entry: compile_nvptx, assemble_cubin). The lowering of thread-level
// IR is shared with the AMDGPU backend (gpu_lowering.h); what is NVIDIA's own is here:
// the special registers, bar.sync, the PTX approximate instructions for exp2 / log2 (as
// CUDA's fast-math intrinsics do: ex2.approx, lg2.approx), shfl.sync, the ptx_kernel calling
// convention with nvvm.annotations, and ptxas.
#include "codegen/nvptx_backend.h"
#include "ir/tma_maps.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "codegen/cpu_lowering.h"  // optimize_module: LLVM's O3 pipeline for a target machine
#include "codegen/gpu_lowering.h"
#include "codegen/module_output.h"
#include "support/diagnostics.h"
#include "support/stage_timer.h"

#ifndef TILEC_PTXAS_PATH
#define TILEC_PTXAS_PATH ""
#endif

namespace tilec::codegen {

using ir::DataType;

namespace {

class NvptxHooks final : public gpu::GpuTargetHooks {
public:
    const char* backend_name() const override { return "NVPTX backend"; }
    llvm::Value* hardware_index(llvm::IRBuilder<>& b, bool thread, int dim) override {
        static const llvm::Intrinsic::ID tid[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                                   llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                                   llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
        static const llvm::Intrinsic::ID ctaid[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                                     llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                                     llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
        return b.CreateIntrinsic(thread ? tid[dim] : ctaid[dim], {}, {});
    }
    // bar.sync orders shared memory for the block by itself: no fences needed.
    void barrier(llvm::IRBuilder<>& b) override { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }
    llvm::Value* exp2(llvm::IRBuilder<>& b, llvm::Value* x) override {
        return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {}, {x});
    }
    llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x) override {
        return b.CreateIntrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {}, {x});
    }
    // shfl.sync.{bfly,up,down,idx}.b32 d, value, lane, c, 0xffffffff (PTX ISA 9.7.9.6):
    // the IR's shuffles are those of PTX over the whole 32-lane warp as one segment:
    // c = 0x1f clamps down / bfly / idx at lane 31, c = 0 clamps up at lane 0; either
    // way an out-of-range source gives the lane its own value, as ir.h defines. The full
    // membermask names lanes a partial warp lacks: those count as exited, which
    // shfl.sync does not wait for (the IR never reads them).
    llvm::Value* shuffle_i32(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* value, llvm::Value* lane) override {
        llvm::Intrinsic::ID id = op == ir::CallOp::ShflXor    ? llvm::Intrinsic::nvvm_shfl_sync_bfly_i32
                                 : op == ir::CallOp::ShflUp   ? llvm::Intrinsic::nvvm_shfl_sync_up_i32
                                 : op == ir::CallOp::ShflDown ? llvm::Intrinsic::nvvm_shfl_sync_down_i32
                                                              : llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
        uint32_t c = op == ir::CallOp::ShflUp ? 0u : 0x1fu;
        return b.CreateIntrinsic(id, {}, {b.getInt32(0xffffffffu), value, lane, b.getInt32(c)});
    }
};

void emit_kernel(llvm::Module& m, const ir::PrimFunc& f, const target::GpuTarget& target) {
    auto& ctx = m.getContext();
    NvptxHooks hooks;
    llvm::Function* fn = gpu::emit_kernel(m, f, target, hooks, llvm::CallingConv::PTX_Kernel);

    // nvvm.annotations: kernel (older readers of the IR look for it beside the calling
    // convention) and the block size, which ptxas uses to budget registers.
    auto* md = m.getOrInsertNamedMetadata("nvvm.annotations");
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto annotate = [&](const char* key, int64_t value) {
        md->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, key),
                                               llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, value))}));
    };
    annotate("kernel", 1);
    // The tensor maps (after the function's parameters) are __grid_constant__: read in
    // place, their address taken (1-based parameter numbers).
    if (size_t maps = ir::tma_map_uses(f).size()) {
        std::vector<llvm::Metadata*> numbers;
        for (size_t k = 0; k < maps; ++k)
            numbers.push_back(llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, f.params.size() + k + 1)));
        md->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "grid_constant"),
                                               llvm::MDNode::get(ctx, numbers)}));
    }
    annotate("maxntidx", f.threads);
    annotate("maxntidy", 1);
    annotate("maxntidz", 1);
    // A warp-specialized kernel's register split (setmaxnreg) is sized for this many
    // blocks per SM (lower/split_warp_roles.cpp): ptxas then caps the launch registers.
    for (auto& [k, v] : f.attrs)
        if (k == "min_blocks_per_sm") annotate("minctasm", std::stoll(v));
        else if (k == "max_registers") annotate("maxnreg", std::stoll(v));
        // Thread-block clusters (lower/cluster_multicast.cpp): LLVM 19 emits no cluster
        // directives, so the shape rides on the function to the PTX text
        // (add_cluster_directives).
        else if (k == "cluster") fn->addFnAttr("tilec-cluster", v);
}

// PTX ISA "Cluster Dimension Directives": .explicitcluster (the kernel must be launched
// with a cluster) and .reqnctapercluster nx, ny, nz (the cluster shape every launch uses;
// a plain cuLaunchKernel then launches clusters of that shape, and the grid must be a
// multiple of it), among the entry's performance-tuning directives, before its body.
std::string add_cluster_directives(std::string ptx, const llvm::Module& m) {
    for (const auto& fn : m) {
        if (fn.isDeclaration() || !fn.hasFnAttribute("tilec-cluster")) continue;
        std::string shape = fn.getFnAttribute("tilec-cluster").getValueAsString().str();
        long long x = 1, y = 1, z = 1;
        if (std::sscanf(shape.c_str(), "%lldx%lldx%lld", &x, &y, &z) != 3) TILEC_ICE("NVPTX backend: cluster shape " + shape);
        const std::string entry = ".entry " + fn.getName().str() + "(";
        size_t at = ptx.find(entry);
        if (at == std::string::npos) TILEC_ICE("NVPTX backend: no entry " + fn.getName().str() + " in the PTX");
        size_t body = ptx.find("\n{", at);
        if (body == std::string::npos) TILEC_ICE("NVPTX backend: no body of " + fn.getName().str() + " in the PTX");
        ptx.insert(body + 1, ".explicitcluster\n.reqnctapercluster " + std::to_string(x) + ", " + std::to_string(y) +
                                 ", " + std::to_string(z) + "\n");
    }
    return ptx;
}

}  // namespace

namespace {

const char* const kTriple = "nvptx64-nvidia-cuda";

void init_nvptx() {
    static std::once_flag init;
    std::call_once(init, [] {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        // 32-bit shared-memory pointers (the shared window is 32-bit anyway): every
        // shared address is one register instead of a pair, which the register-heavy
        // tensor-core kernels need (MLA decode spilled 156 bytes on sm_80 with 64-bit
        // ones). LLVM exposes this only as a command-line option.
        auto& options = llvm::cl::getRegisteredOptions();
        auto short_ptr = options.find("nvptx-short-ptr");
        if (short_ptr == options.end()) TILEC_ICE("NVPTX backend: LLVM has no nvptx-short-ptr option");
        short_ptr->second->addOccurrence(0, "nvptx-short-ptr", "true");
    });
}

std::string features_of(const target::GpuTarget& target) {
    if (target.vendor != target::Vendor::Nvidia) TILEC_ICE("NVPTX backend: " + target.name + " is not an NVIDIA target");
    return "+ptx" + std::to_string(target.ptx_version);
}

}  // namespace

namespace {

// An LLVM context for `target`: its features, target machine and module.
struct NvptxExport {
    NvptxExport(const target::GpuTarget& target, const std::string& module_name)
        : target(target),
          features(features_of(target)),
          tm((init_nvptx(), gpu::create_target_machine(kTriple, target, features, std::nullopt, "NVPTX"))),
          backend(module_name, kTriple, *tm) {}

    void emit(const ir::PrimFunc& func) { emit_kernel(backend.module, func, target); }
    void optimize() {
        gpu::optimize_gpu_module(backend.module, *tm, target, features, "NVPTX", backend.llvm_errors);
    }
    // Code generation of the optimised module for `target` (its CPU and features
    // replacing those of the arch that optimised it).
    std::string ptx() {
        for (auto& fn : backend.module) {
            if (fn.isDeclaration()) continue;
            fn.addFnAttr("target-cpu", target.llvm_cpu);
            fn.addFnAttr("target-features", features);
        }
        verify_module(backend.module, "NVPTX");
        return add_cluster_directives(gpu::emit_gpu_module(backend.module, *tm, target, "NVPTX", backend.llvm_errors,
                                                           llvm::CodeGenFileType::AssemblyFile),
                                      backend.module);
    }

    const target::GpuTarget& target;
    std::string features;
    std::unique_ptr<llvm::TargetMachine> tm;
    BackendModule backend;
};

}  // namespace

std::string compile_nvptx(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                          NvptxOutput what, const std::string& module_name) {
    NvptxExport e(target, module_name);
    {
        StageTimer::Scope timed(target.name, "llvm-ir");
        for (auto& f : funcs) e.emit(f);
    }
    llvm::Module& m = e.backend.module;
    std::string out = gpu::finish_module(m, *e.tm, target, e.features, "NVPTX", e.backend.llvm_errors,
                                         what == NvptxOutput::LlvmIr ? std::nullopt
                                                                     : std::optional(llvm::CodeGenFileType::AssemblyFile));
    return what == NvptxOutput::LlvmIr ? out : add_cluster_directives(std::move(out), m);
}

std::string nvptx_unoptimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                      const std::string& module_name) {
    NvptxExport e(target, module_name);
    StageTimer::Scope timed(target.name, "llvm-ir");
    e.emit(func);
    return module_bitcode(e.backend.module);
}

std::string nvptx_optimize_bitcode(const std::string& bitcode, const target::GpuTarget& target,
                                   const std::string& module_name) {
    NvptxExport e(target, module_name);
    link_bitcode(bitcode, e.backend, module_name, "NVPTX");
    e.optimize();
    return module_bitcode(e.backend.module);
}

std::string nvptx_ptx_of_bitcode(const std::string& bitcode, const target::GpuTarget& target,
                                 const std::string& module_name) {
    NvptxExport e(target, module_name);
    link_bitcode(bitcode, e.backend, module_name, "NVPTX");
    return e.ptx();
}

std::string nvptx_ptx_of_unoptimized(const std::string& bitcode, const target::GpuTarget& target,
                                     const std::string& module_name) {
    NvptxExport e(target, module_name);
    link_bitcode(bitcode, e.backend, module_name, "NVPTX");
    e.optimize();
    return e.ptx();
}

std::string nvptx_ptx_of_kernel(const ir::PrimFunc& func, const target::GpuTarget& target,
                                const std::string& module_name) {
    NvptxExport e(target, module_name);
    {
        StageTimer::Scope timed(target.name, "llvm-ir");
        e.emit(func);
    }
    e.optimize();
    return e.ptx();
}

std::string merge_ptx(const std::vector<std::string>& modules) {
    if (modules.empty()) TILEC_ICE("NVPTX backend: no PTX modules to merge");
    // LLVM's PTX opens with comments, .version, .target and .address_size; the rest is
    // module-scope declarations and entries, whose names are the exports' own.
    const std::string end_of_header = ".address_size 64\n";
    auto split = [&](const std::string& ptx) {
        size_t at = ptx.find(end_of_header);
        if (at == std::string::npos) TILEC_ICE("NVPTX backend: PTX without .address_size 64");
        return at + end_of_header.size();
    };
    size_t header_end = split(modules.front());
    std::string header = modules.front().substr(0, header_end);
    std::string out = header;
    for (size_t i = 0; i < modules.size(); ++i) {
        const std::string& ptx = modules[i];
        size_t at = split(ptx);
        if (ptx.compare(0, at, header) != 0) TILEC_ICE("NVPTX backend: the exports' PTX headers differ");
        // Branch labels are $L__BB<function number>_<block>; each module has one
        // function, number 0. Renumbered as one module of all exports numbers them (the
        // labels are then what one module of every export would name them: no two entries share one).
        const std::string label = "$L__BB0_", renamed = "$L__BB" + std::to_string(i) + "_";
        std::string body;
        body.reserve(ptx.size() - at);
        size_t pos = at;
        while (true) {
            size_t next = ptx.find("$L__", pos);
            if (next == std::string::npos) {
                body.append(ptx, pos, std::string::npos);
                break;
            }
            if (ptx.compare(next, label.size(), label) != 0)
                TILEC_ICE("NVPTX backend: unexpected local symbol in an export's PTX: " + ptx.substr(next, 16));
            body.append(ptx, pos, next - pos);
            body += renamed;
            pos = next + label.size();
        }
        out += body;
    }
    return out;
}

std::function<uint64_t(double, int64_t)> host_conversion_for_test(ir::DataType from, ir::DataType to,
                                                                  const target::GpuTarget& target) {
    static std::once_flag init;
    std::call_once(init, [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
    });
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = std::make_unique<llvm::Module>("conversion", *ctx);
    auto* i64 = llvm::Type::getInt64Ty(*ctx);
    auto* fty = llvm::FunctionType::get(i64, {llvm::Type::getDoubleTy(*ctx), i64}, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, "convert", *m);
    NvptxHooks hooks;
    gpu::GpuLowering low(*m, fn, target, hooks);
    auto& b = low.builder();
    llvm::Value* x;
    if (from.is_float()) {
        x = fn->getArg(0);
        if (!from.is_scalar() || from.bits != 64) x = b.CreateFPTrunc(x, b.getFloatTy());
        if (gpu::GpuLowering::is_narrow(from)) x = low.round_narrow(x, from);
    } else {
        x = b.CreateTrunc(fn->getArg(1), low.reg_type(from));
    }
    llvm::Value* r = low.to_storage(low.convert(x, from, to), to);
    unsigned bits = r->getType()->getPrimitiveSizeInBits();
    r = b.CreateBitCast(r, b.getIntNTy(bits));
    low.finish(b.CreateZExt(r, i64));
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(*m, &os)) TILEC_ICE("conversion test module: " + err);
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit) TILEC_ICE("conversion test: " + llvm::toString(jit.takeError()));
    std::shared_ptr<llvm::orc::LLJIT> j(std::move(*jit));
    if (auto e = j->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
        TILEC_ICE("conversion test: " + llvm::toString(std::move(e)));
    auto sym = j->lookup("convert");
    if (!sym) TILEC_ICE("conversion test: " + llvm::toString(sym.takeError()));
    auto* f = sym->toPtr<uint64_t (*)(double, int64_t)>();
    return [j, f](double d, int64_t i) { return f(d, i); };
}

std::string ptxas_path() {
    if (const char* env = std::getenv("TILEC_PTXAS"); env && *env) return env;
    return TILEC_PTXAS_PATH;
}

std::string ptxas_version() {
    std::string ptxas = ptxas_path();
    if (ptxas.empty() || !std::filesystem::exists(ptxas)) return "";
    return gpu::run_tool(ptxas, {"--version"}).output;
}

PtxasRun run_ptxas(const std::string& ptx, const target::GpuTarget& target, const std::vector<std::string>& extra_args,
                   bool verbose) {
    namespace fs = std::filesystem;
    std::string ptxas = ptxas_path();
    if (ptxas.empty() || !fs::exists(ptxas))
        TILEC_ICE("ptxas not found" + (ptxas.empty() ? std::string() : " at " + ptxas) +
                  ": configure with -DTILEC_PTXAS=/path/to/ptxas or set TILEC_PTXAS");
    gpu::TempDir dir("tilec-ptxas");
    std::string in = dir.path() + "/kernel.ptx", out = dir.path() + "/kernel.cubin";
    gpu::write_file_bytes(in, ptx);
    std::vector<std::string> args = {"-arch=" + target.name};
    if (verbose) args.push_back("-v");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    // ptxas compiles the kernels of a module on several threads with --split-compile; 0
    // (as many as the machine has cores) rather than -j's N because ptxas records its
    // options in the cubin (.note.nv.tkinfo): the same option for every -j keeps the
    // output the same bytes, and the code is the same with any number of threads (every
    // other section of gemm.tile's sm_90a cubin compared). A ptxas without the option
    // (before CUDA 12) is asked once, then no more.
    static std::atomic<bool> split_unsupported{false};
    bool user_split = false;
    for (auto& a : extra_args) user_split = user_split || a.find("split-compile") != std::string::npos;
    const bool split = !user_split && !split_unsupported.load();
    if (split) args.push_back("--split-compile=0");
    auto with_files = [&](std::vector<std::string> a) {
        a.insert(a.end(), {in, "-o", out});
        return a;
    };
    gpu::ToolResult r;
    {
        StageTimer::Scope timed(target.name, "ptxas");
        r = gpu::run_tool(ptxas, with_files(args));
        if (split && r.status != 0 && r.output.find("split-compile") != std::string::npos) {
            split_unsupported = true;
            args.pop_back();
            r = gpu::run_tool(ptxas, with_files(args));
        }
    }
    PtxasRun run;
    run.command = "ptxas";  // as it ran
    for (auto& a : args) run.command += " " + a;
    run.status = r.status;
    run.output = r.output;
    run.ok = r.status == 0 && fs::exists(out);
    if (!run.ok) return run;
    run.cubin = gpu::read_file_bytes(out);
    if (verbose) run.resources = parse_ptxas_verbose(r.output, target.name);
    return run;
}

std::string assemble_cubin(const std::string& ptx, const target::GpuTarget& target) {
    PtxasRun run = run_ptxas(ptx, target, {}, false);
    if (!run.ok)
        TILEC_ICE(run.command + " failed (" + ptxas_path() + ", exit status " + std::to_string(run.status) + "):\n" +
                  run.output);
    return run.cubin;
}

std::vector<KernelResources> parse_ptxas_verbose(const std::string& output, const std::string& arch) {
    std::vector<KernelResources> out;
    // The number before `unit` in `line` ("... 16 bytes spill stores" -> 16), or -1.
    auto number_before = [](const std::string& line, const std::string& unit) -> int64_t {
        size_t at = line.find(unit);
        if (at == std::string::npos || at == 0) return -1;
        size_t end = at;
        while (end > 0 && line[end - 1] == ' ') --end;
        size_t begin = end;
        while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
        if (begin == end) return -1;
        return std::stoll(line.substr(begin, end - begin));
    };
    size_t pos = 0;
    while (pos < output.size()) {
        size_t eol = output.find('\n', pos);
        if (eol == std::string::npos) eol = output.size();
        std::string line = output.substr(pos, eol - pos);
        pos = eol + 1;
        const std::string entry = "Compiling entry function '";
        if (size_t at = line.find(entry); at != std::string::npos) {
            size_t begin = at + entry.size();
            size_t end = line.find('\'', begin);
            if (end == std::string::npos) continue;
            KernelResources k;
            k.kernel = line.substr(begin, end - begin);
            k.arch = arch;
            out.push_back(k);
            continue;
        }
        if (out.empty()) continue;
        KernelResources& k = out.back();
        if (line.find("bytes spill stores") != std::string::npos) {
            k.spill_store_bytes = std::max<int64_t>(0, number_before(line, "bytes spill stores"));
            k.spill_load_bytes = std::max<int64_t>(0, number_before(line, "bytes spill loads"));
        } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
            k.registers = std::max<int64_t>(0, number_before(line, " registers"));
            k.shared_bytes = std::max<int64_t>(0, number_before(line, " bytes smem"));
        }
    }
    return out;
}

}  // namespace tilec::codegen
