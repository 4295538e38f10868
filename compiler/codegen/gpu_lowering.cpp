// The GPU backends' shared pieces beyond the lowering class (gpu_lowering.h): the
// kernel's signature and parameter binding, the pre-O3 vectorisation, and running the
// external tools (ptxas, ld.lld).
#include "codegen/gpu_lowering.h"
#include "lower/rasterize.h"
#include "ops/lower_util.h"

#include "codegen/cpu_lowering.h"  // optimize_module: LLVM's O3 pipeline for a target machine
#include "codegen/module_output.h"
#include "support/stage_timer.h"

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Support/raw_ostream.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>


namespace tilec::codegen::gpu {

llvm::Type* scalar_arg_type(llvm::LLVMContext& ctx, DataType t) {
    if (t.is_bool()) return llvm::Type::getInt32Ty(ctx);
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits == 4 ? 8 : t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    return llvm::Type::getFloatTy(ctx);
}

llvm::Function* emit_kernel(llvm::Module& m, const ir::PrimFunc& f, const target::GpuTarget& target,
                            GpuTargetHooks& hooks, llvm::CallingConv::ID cc) {
    auto& ctx = m.getContext();
    std::vector<llvm::Type*> params;
    for (auto& p : f.params) {
        if (p.kind == ir::ParamKind::Tensor)
            params.push_back(llvm::PointerType::get(ctx, kGlobal));
        else if (p.kind == ir::ParamKind::Size)
            params.push_back(llvm::Type::getInt64Ty(ctx));
        else
            params.push_back(scalar_arg_type(ctx, p.var->type));
    }
    // The tensor maps of the tma_load instructions: 128-byte, 64-byte-aligned
    // __grid_constant__ parameters after the function's own (the entry point appends them).
    std::vector<ir::TmaMapUse> maps = ir::tma_map_uses(f);
    auto* map_type = llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), 128);
    for (size_t k = 0; k < maps.size(); ++k) params.push_back(llvm::PointerType::get(ctx, 0));
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, f.name, m);
    fn->setCallingConv(cc);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    GpuLowering low(m, fn, target, hooks);
    auto& b = low.builder();
    // Sizes and scalars first: tensor strides are computed from the sizes.
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        llvm::Argument* arg = fn->getArg(static_cast<unsigned>(i));
        if (p.kind == ir::ParamKind::Tensor) {
            arg->setName(p.buffer->name);
            // The GPU entry points require 16-byte-aligned tensors (what cudaMalloc and
            // hipMalloc give); it is what lets a thread's 4-vector be one 16-byte load.
            fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::getWithAlignment(ctx, llvm::Align(16)));
            fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoUndef);
            continue;
        }
        arg->setName(p.var->name);
        llvm::Value* v = arg;
        DataType t = p.var->type;
        if (t.is_bool())
            v = b.CreateICmpNE(arg, b.getInt32(0));
        else if (t.is_integer() && t.bits == 4)
            v = b.CreateTrunc(arg, b.getIntNTy(4));
        else if (GpuLowering::is_narrow(t))
            v = low.round_narrow(arg, t);
        low.bind(p.var, v);
    }
    if (!maps.empty()) {
        std::vector<llvm::Value*> addrs;
        for (size_t k = 0; k < maps.size(); ++k) {
            unsigned i = static_cast<unsigned>(f.params.size() + k);
            fn->getArg(i)->setName("tensor_map" + std::to_string(k));
            fn->addParamAttr(i, llvm::Attribute::getWithByValType(ctx, map_type));
            fn->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
            // With the grid_constant annotation the address is the parameter's own
            // (cvta.param), which is where the TMA unit reads the map.
            addrs.push_back(b.CreatePtrToInt(fn->getArg(i), b.getInt64Ty()));
        }
        low.bind_tensor_maps(f, maps, addrs);
    }
    if (f.shared_bytes) low.set_shared_arena(*f.shared_bytes, f.dynamic_shared_bytes() > 0);
    for (size_t i = 0; i < f.params.size(); ++i)
        if (f.params[i].kind == ir::ParamKind::Tensor)
            low.bind_tensor(f.params[i].buffer, fn->getArg(static_cast<unsigned>(i)));
    // @rasterize(panel = P): the tile a block computes follows the grouped launch order
    // (lower/rasterize.h); the IR keeps block.x / block.y as the tile indices.
    std::string panel = ops::func_attr(f, "rasterize");
    if (!panel.empty() && f.grid.size() >= 2 && std::stoll(panel) > 1) {
        ir::Var hw[2];
        for (int d = 0; d < 2; ++d) {
            hw[d] = ir::make_var(d == 0 ? "launch_x" : "launch_y", DataType::index(), ir::VarKind::Let);
            low.bind(hw[d], b.CreateZExt(hooks.hardware_index(b, false, d), b.getInt64Ty()));
        }
        auto tile = lower::rasterized_block(f.grid, std::stoll(panel), hw[0], hw[1]);
        for (int d = 0; d < 2; ++d) low.set_block_index(d, low.expr(tile[d]));
    }
    low.stmt(f.body);
    low.finish();
    return fn;
}

std::unique_ptr<llvm::TargetMachine> create_target_machine(const std::string& triple,
                                                           const target::GpuTarget& target,
                                                           const std::string& features,
                                                           std::optional<llvm::Reloc::Model> reloc,
                                                           const std::string& who) {
    std::string error;
    const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!llvm_target) TILEC_ICE(who + " backend: LLVM has no " + who + " target: " + error);
    llvm::TargetOptions options;
    std::unique_ptr<llvm::TargetMachine> tm(llvm_target->createTargetMachine(
        triple, target.llvm_cpu, features, options, reloc, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
    if (!tm) TILEC_ICE(who + " backend: cannot create the target machine for " + target.name);
    return tm;
}

// Runs a textual LLVM pass pipeline on the module.
void run_function_passes(llvm::Module& m, llvm::TargetMachine& tm, const std::string& pipeline, const std::string& who) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (auto err = pb.parsePassPipeline(mpm, pipeline))
        TILEC_ICE(who + ": bad pass pipeline: " + llvm::toString(std::move(err)));
    mpm.run(m, mam);
}

// A copy's unmasked and masked register loops load the same addresses; left to O3,
// SimplifyCFG sinks their common last load into a shared block before the target's
// load/store vectoriser runs, and a thread's last vector becomes v2 + scalars.
// Registers promoted, alignment inferred and loads combined into vectors first, the
// two paths no longer end alike.
void vectorize_early(llvm::Module& m, llvm::TargetMachine& tm, const std::string& who) {
    // A textual "instcombine" verifies that one run reaches a fixpoint and aborts the
    // process when it does not (LLVM 19: on for -passes= pipelines, which tests use; off
    // in the O3 pipeline). Not reaching it only leaves work for the O3 run that follows.
    run_function_passes(m, tm,
                        "function(sroa,early-cse,instcombine<no-verify-fixpoint>,infer-alignment,load-store-vectorizer)",
                        who);
}

namespace {

// TILEC_DEBUG_GPU_IR=DIR (a debugging aid, not an interface): each GPU module's LLVM IR
// is written to DIR before and after optimisation, as TARGET.KERNEL[.narrow].STAGE.ll,
// for timing and inspecting LLVM's passes with opt and llc.
void dump_gpu_ir(const llvm::Module& m, const target::GpuTarget& target, bool narrow, const char* stage) {
    const char* dir = std::getenv("TILEC_DEBUG_GPU_IR");
    if (!dir || !*dir) return;
    std::string kernel = "empty";
    for (auto& fn : m)
        if (!fn.isDeclaration()) {
            kernel = fn.getName().str();
            break;
        }
    std::string path = std::string(dir) + "/" + target.name + "." + kernel + (narrow ? ".narrow." : ".") + stage + ".ll";
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) TILEC_ICE("TILEC_DEBUG_GPU_IR: cannot write " + path + ": " + ec.message());
    m.print(os, nullptr);
}

}  // namespace

// The passes of LLVM's O3 pipeline that GPU modules skip, by class name ("Name#N": only
// the N-th run on each function; optimize_module). Dead store elimination: on the GPU
// modules tilec emits (registers promoted by SROA first, shared and global memory
// ordered by barriers and fences) it changed no output, while its MemorySSA walks over
// the unrolled loads and stores took 13-26% of the O3 passes' time (opt -time-passes on
// gemm_f16 and attn_fwd; the PTX and AMDGPU assembly of every stdlib kernel, for every
// GPU target, were byte-identical with and without it under LLVM 19). SCCP (3% of O3's
// time on gemm_f16) repeats what IPSCCP did at the start of the pipeline: without it the
// cubins (sm_80, sm_90a: code, register and shared-memory info) and the AMDGPU assembly
// (gfx90a, gfx942, gfx1100) of every stdlib kernel were unchanged. The rest were found
// the same way, one pass or one run at a time, then together (docs/architecture.md,
// "Compile time" (10)): without each, the PTX (sm_80, sm_89, sm_90a) and the AMDGPU
// assembly (gfx90a, gfx942, gfx1100) of every stdlib kernel were byte-identical: passes
// with nothing to do after tilec's early pipeline (vectorize_early: SROA, InstCombine)
// and in kernels without calls (call-site splitting, called-value propagation), and the
// runs of InstCombine, SimplifyCFG and SROA that find nothing the earlier runs left.
// The CPU backend's O3 (cpu_optimize.cpp) keeps them all.
const std::vector<std::string> kSkippedGpuPasses = {"DSEPass",
                                                    "SCCPPass",
                                                    "CalledValuePropagationPass",
                                                    "ConstraintEliminationPass",
                                                    "CallSiteSplittingPass",
                                                    "BDCEPass",
                                                    "AggressiveInstCombinePass",
                                                    "JumpThreadingPass",
                                                    "InstSimplifyPass",
                                                    "InstCombinePass#7",
                                                    "SimplifyCFGPass#3",
                                                    "SimplifyCFGPass#4",
                                                    "SROAPass#2",
                                                    "SROAPass#3",
                                                    "SROAPass#4",
                                                    "MemCpyOptPass",
                                                    "ADCEPass",
                                                    "TailCallElimPass",
                                                    "SimpleLoopUnswitchPass",
                                                    "MergedLoadStoreMotionPass",
                                                    "Float2IntPass"};
// NVIDIA also skips the loop vectoriser (4% of O3's time on gemm_f16): NVPTX's 32-bit
// vector registers leave it nothing to do in tilec's loops (the PTX of every stdlib
// kernel was byte-identical without it); on AMD it changed gemm.tile's gfx90a and
// gfx1100 code, so AMD keeps it. The same holds for the runs below: each changed some
// AMD kernel's assembly and no PTX. (SimplifyCFG's second and seventh runs and SROA's
// first, alone also without effect on the PTX, changed it beside the others.)
const std::vector<std::string> kSkippedNvidiaPasses = [] {
    std::vector<std::string> passes = kSkippedGpuPasses;
    for (const char* pass :
         {"LoopVectorizePass", "InstCombinePass#4", "InstCombinePass#5", "SimplifyCFGPass#6"})
        passes.push_back(pass);
    return passes;
}();

void optimize_gpu_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                         const std::string& features, const std::string& who, const std::string& llvm_errors,
                         bool narrow_masked_fills) {
    for (auto& fn : m) {
        if (fn.isDeclaration()) continue;
        fn.addFnAttr("target-cpu", target.llvm_cpu);
        fn.addFnAttr("target-features", features);
    }
    verify_module(m, who);
    dump_gpu_ir(m, target, narrow_masked_fills, "pre");
    {
        StageTimer::Scope timed(target.name, "llvm-opt");
        vectorize_early(m, tm, who + " backend");
        optimize_module(m, tm,
                        target.vendor == target::Vendor::Nvidia ? kSkippedNvidiaPasses : kSkippedGpuPasses);
        // Addresses as thread register + immediate (gpu_address_constants.cpp); the
        // duplicated index arithmetic it leaves is merged and the dead removed. NVIDIA
        // only: on AMD serial loops keep their addresses inside (llvm.licm.disable,
        // gpu_lowering_stmt.cpp), and the split moved gfx1100's gemm_i8 to 12 bytes
        // of scratch.
        int rewritten = 0;
        for (auto& fn : m) {
            if (fn.isDeclaration()) continue;
            if (target.vendor == target::Vendor::Nvidia) rewritten += split_address_constants(fn);
            if (target.vendor == target::Vendor::Amd && narrow_masked_fills) rewritten += narrow_masked_fill_addresses(fn);
        }
        if (rewritten) run_function_passes(m, tm, "function(early-cse,adce)", who + " backend");
    }
    dump_gpu_ir(m, target, narrow_masked_fills, "opt");
    check_llvm_errors(llvm_errors, "optimise", who);
}

std::string emit_gpu_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                            const std::string& who, const std::string& llvm_errors,
                            std::optional<llvm::CodeGenFileType> kind) {
    std::string cannot_emit;
    if (kind)
        cannot_emit = who + " backend: the target machine cannot emit " +
                      (*kind == llvm::CodeGenFileType::AssemblyFile ? "assembly" : "an object");
    StageTimer::Scope timed(target.name, "llvm-codegen");
    return emit_module(m, tm, kind, who, cannot_emit, llvm_errors);
}

std::string finish_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                          const std::string& features, const std::string& who, const std::string& llvm_errors,
                          std::optional<llvm::CodeGenFileType> kind) {
    optimize_gpu_module(m, tm, target, features, who, llvm_errors);
    return emit_gpu_module(m, tm, target, who, llvm_errors, kind);
}

TempDir::TempDir(const std::string& prefix) {
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) TILEC_ICE("cannot create a temporary folder for " + prefix);
    path_ = buf.data();
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string read_file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
    if (!f) TILEC_ICE("cannot write " + path);
}

ToolResult run_tool(const std::string& tool, const std::vector<std::string>& args) {
    // The output goes to a file rather than a pipe: a tool that writes much before it
    // exits cannot block on a full pipe, and no reader thread is needed.
    TempDir dir("tilec-tool");
    std::string log = dir.path() + "/output.log";
    std::vector<std::string> argv_s = {tool};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    // posix_spawn, not fork + exec: tools run from several threads at once, and a forked
    // child of a threaded process may only make async-signal-safe calls.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    int err = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ToolResult r;
    if (err != 0) {
        // As a shell reports a command it cannot run; the caller words the failure.
        r.status = 127;
        r.output = "cannot run " + tool + ": " + std::strerror(err) + "\n";
        return r;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.output = read_file_bytes(log);
    return r;
}

}  // namespace tilec::codegen::gpu
