// The AMDGPU backend (entry: compile_amdgpu, link_hsaco). The lowering of thread-level
// IR is shared with the NVPTX backend (gpu_lowering.h); what is AMD's own is here: the
// work-item and workgroup ids, s_barrier with its fences, exp2 / log2, ds_bpermute, the
// amdgpu_kernel calling convention with the workgroup size and wavefront attributes,
// the code object version, and ld.lld.
#include "codegen/amdgpu_backend.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/ObjCopy/ConfigManager.h>
#include <llvm/ObjCopy/ObjCopy.h>
#include <llvm/Object/ELF.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>

#include "codegen/cpu_lowering.h"  // optimize_module: LLVM's O3 pipeline for a target machine
#include "codegen/gpu_lowering.h"
#include "codegen/module_output.h"
#include "support/stage_timer.h"

#ifndef TILEC_LD_LLD_PATH
#define TILEC_LD_LLD_PATH ""
#endif

extern "C" {
void LLVMInitializeAMDGPUTargetInfo();
void LLVMInitializeAMDGPUTarget();
void LLVMInitializeAMDGPUTargetMC();
void LLVMInitializeAMDGPUAsmPrinter();
}

namespace tilec::codegen {

namespace {

class AmdgpuHooks final : public gpu::GpuTargetHooks {
public:
    explicit AmdgpuHooks(int wave) : wave_(wave) {}
    const char* backend_name() const override { return "AMDGPU backend"; }
    llvm::Value* hardware_index(llvm::IRBuilder<>& b, bool thread, int dim) override {
        static const llvm::Intrinsic::ID item[3] = {llvm::Intrinsic::amdgcn_workitem_id_x,
                                                    llvm::Intrinsic::amdgcn_workitem_id_y,
                                                    llvm::Intrinsic::amdgcn_workitem_id_z};
        static const llvm::Intrinsic::ID group[3] = {llvm::Intrinsic::amdgcn_workgroup_id_x,
                                                     llvm::Intrinsic::amdgcn_workgroup_id_y,
                                                     llvm::Intrinsic::amdgcn_workgroup_id_z};
        return b.CreateIntrinsic(thread ? item[dim] : group[dim], {}, {});
    }
    // s_barrier only synchronises execution: LDS accesses before it may still be in
    // flight. The workgroup-scope release/acquire fences make the compiler wait for them
    // (s_waitcnt lgkmcnt(0)) and keep loads and stores from moving across, as HIP's
    // __syncthreads does.
    void barrier(llvm::IRBuilder<>& b) override {
        auto scope = b.getContext().getOrInsertSyncScopeID("workgroup");
        b.CreateFence(llvm::AtomicOrdering::Release, scope);
        b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
        b.CreateFence(llvm::AtomicOrdering::Acquire, scope);
    }
    // The generic intrinsics rather than llvm.amdgcn.exp2 / llvm.amdgcn.log: AMDGPU
    // lowers them to v_exp_f32 / v_log_f32 plus the range scaling that keeps denormal
    // inputs and results (which the raw instructions flush) within an ulp or so, the
    // accuracy of PTX's ex2.approx.f32 / lg2.approx.f32 and of HIP's exp2f / log2f.
    llvm::Value* exp2(llvm::IRBuilder<>& b, llvm::Value* x) override {
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp2, x);
    }
    llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x) override {
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::log2, x);
    }
    // HIP's atomicAdd: agent (device) scope, with the hardware float atomics that
    // hipcc's -munsafe-fp-atomics selects. Without the hint LLVM 19 expands a float
    // atomic add into a compare-and-swap loop on gfx90a and gfx1100 (gfx942 needs only
    // the metadata, which LLVM 20 reads in place of the attribute): the hardware float
    // atomics do not work on fine-grained (host-coherent) memory, and gfx90a's
    // global_atomic_add_f32 flushes denormals whatever the mode. Tensors are device
    // allocations (hipMalloc: coarse-grained); a flushed denormal sum is the price, as
    // with hipcc's flag.
    llvm::SyncScope::ID device_scope(llvm::LLVMContext& ctx) override { return ctx.getOrInsertSyncScopeID("agent"); }
    void annotate_atomic(llvm::AtomicRMWInst* inst) override {
        auto& ctx = inst->getContext();
        inst->setMetadata("amdgpu.no.fine.grained.memory", llvm::MDNode::get(ctx, {}));
        if (inst->getType()->isFloatTy())
            inst->setMetadata("amdgpu.ignore.denormal.mode", llvm::MDNode::get(ctx, {}));
        if (inst->isFloatingPointOperation()) inst->getFunction()->addFnAttr("amdgpu-unsafe-fp-atomics", "true");
    }
    // ds_bpermute_b32 (CDNA ISA "LDS Instructions"; RDNA3 ISA 16.15): each lane reads
    // the value of the lane whose byte address (lane * 4) it gives. The source lane j is
    // the IR's (ir.h, CallOp), computed here in 32-bit arithmetic: lane ^ m; lane - d,
    // or the lane when below 0; lane + d, or the lane when W or more; s. The lane's own
    // index is mbcnt over a full mask (lo: lanes 0..31, hi: 32..63 on wave64).
    llvm::Value* shuffle_i32(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* value, llvm::Value* m) override {
        llvm::Value* self = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, {}, {b.getInt32(-1), b.getInt32(0)});
        if (wave_ == 64) self = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, {}, {b.getInt32(-1), self});
        llvm::Value* j = nullptr;
        switch (op) {
        case ir::CallOp::ShflXor: j = b.CreateXor(self, m); break;
        case ir::CallOp::ShflUp: {
            llvm::Value* up = b.CreateSub(self, m);
            j = b.CreateSelect(b.CreateICmpSLT(up, b.getInt32(0)), self, up);
            break;
        }
        case ir::CallOp::ShflDown: {
            llvm::Value* down = b.CreateAdd(self, m);
            j = b.CreateSelect(b.CreateICmpSGE(down, b.getInt32(wave_)), self, down);
            break;
        }
        default: j = m; break;
        }
        return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {b.CreateShl(j, 2), value});
    }

private:
    int wave_;
};

std::string features_of(const target::GpuTarget& target) {
    if (target.warp_size != 32 && target.warp_size != 64)
        TILEC_ICE("AMDGPU backend: " + target.name + " has a wavefront of " + std::to_string(target.warp_size));
    return target.warp_size == 64 ? "+wavefrontsize64" : "+wavefrontsize32";
}

}  // namespace

namespace {

void init_amdgpu() {
    static std::once_flag init;
    std::call_once(init, [] {
        LLVMInitializeAMDGPUTargetInfo();
        LLVMInitializeAMDGPUTarget();
        LLVMInitializeAMDGPUTargetMC();
        LLVMInitializeAMDGPUAsmPrinter();
    });
}

const char* const kTriple = "amdgcn-amd-amdhsa";

std::optional<llvm::CodeGenFileType> file_type(AmdgpuOutput what) {
    return what == AmdgpuOutput::LlvmIr     ? std::nullopt
           : what == AmdgpuOutput::Assembly ? std::optional(llvm::CodeGenFileType::AssemblyFile)
                                            : std::optional(llvm::CodeGenFileType::ObjectFile);
}

void emit_kernels(llvm::Module& m, const std::vector<const ir::PrimFunc*>& funcs, const target::GpuTarget& target) {
    // Code object v4: what ROCm 4.x through 6.x loaders all accept (v5 needs ROCm 5.x+).
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 400);
    AmdgpuHooks hooks(target.warp_size);
    StageTimer::Scope timed_ir(target.name, "llvm-ir");
    for (const ir::PrimFunc* f : funcs) {
        llvm::Function* fn = gpu::emit_kernel(m, *f, target, hooks, llvm::CallingConv::AMDGPU_KERNEL);
        // The exact workgroup size bounds the registers per work-item and lets LLVM
        // know workitem.id.y/z are 0.
        fn->addFnAttr("amdgpu-flat-work-group-size", "1," + std::to_string(f->threads));
        // Every size is an explicit parameter: the kernel reads no implicit (hidden)
        // arguments, so its kernarg segment is exactly the parameters above, which a host
        // entry point fills without knowing the hidden layout.
        fn->addFnAttr("amdgpu-no-implicitarg-ptr");
        fn->addFnAttr("amdgpu-implicitarg-num-bytes", "0");
        // The minimum occupancy LLVM must keep: at or below it the GCN scheduler reverts
        // a schedule that raises the pressure of a region already over the register
        // budget (GCNSchedStage::mayCauseSpilling). With LLVM's default of 1 it keeps
        // such schedules whenever the kernel runs 2 or more waves (by its LDS: flash
        // attention's D = 64 exports on gfx1100), and they spilled 48 and 80 bytes. Up to
        // full_register_waves the register budget is the same 256.
        if (target.full_register_waves > 1)
            fn->addFnAttr("amdgpu-waves-per-eu", std::to_string(target.full_register_waves));
    }
}

void check_amd(const target::GpuTarget& target) {
    if (target.vendor != target::Vendor::Amd) TILEC_ICE("AMDGPU backend: " + target.name + " is not an AMD target");
}

}  // namespace

std::string compile_amdgpu(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                           AmdgpuOutput what, const std::string& module_name) {
    check_amd(target);
    init_amdgpu();
    std::string features = features_of(target);
    auto tm = gpu::create_target_machine(kTriple, target, features, llvm::Reloc::PIC_, "AMDGPU");
    BackendModule backend_module(module_name, kTriple, *tm);
    std::vector<const ir::PrimFunc*> list;
    for (auto& f : funcs) list.push_back(&f);
    emit_kernels(backend_module.module, list, target);
    return gpu::finish_module(backend_module.module, *tm, target, features, "AMDGPU", backend_module.llvm_errors,
                              file_type(what));
}

namespace {

// One export's module in its own LLVM context, made by `fill` (emitted from Tile IR, or
// read from its unoptimised bitcode), optimised as compile_amdgpu optimises it, as bitcode.
std::string optimized_bitcode(const target::GpuTarget& target, const std::string& module_name,
                              bool narrow_masked_fills, const std::function<void(BackendModule&)>& fill) {
    check_amd(target);
    init_amdgpu();
    std::string features = features_of(target);
    auto tm = gpu::create_target_machine(kTriple, target, features, llvm::Reloc::PIC_, "AMDGPU");
    BackendModule backend_module(module_name, kTriple, *tm);
    fill(backend_module);
    gpu::optimize_gpu_module(backend_module.module, *tm, target, features, "AMDGPU", backend_module.llvm_errors,
                             narrow_masked_fills);
    return module_bitcode(backend_module.module);
}

}  // namespace

std::string amdgpu_optimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                     const std::string& module_name, bool narrow_masked_fills) {
    return optimized_bitcode(target, module_name, narrow_masked_fills,
                             [&](BackendModule& m) { emit_kernels(m.module, {&func}, target); });
}

std::string amdgpu_optimize_bitcode(const std::string& unoptimized, const target::GpuTarget& target,
                                    const std::string& module_name, bool narrow_masked_fills) {
    return optimized_bitcode(target, module_name, narrow_masked_fills,
                             [&](BackendModule& m) { link_bitcode(unoptimized, m, module_name, "AMDGPU"); });
}

std::string amdgpu_unoptimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                       const std::string& module_name) {
    check_amd(target);
    init_amdgpu();
    auto tm = gpu::create_target_machine(kTriple, target, features_of(target), llvm::Reloc::PIC_, "AMDGPU");
    BackendModule backend_module(module_name, kTriple, *tm);
    emit_kernels(backend_module.module, {&func}, target);
    return module_bitcode(backend_module.module);
}

std::string compile_amdgpu_optimized(const std::vector<std::string>& bitcode, const target::GpuTarget& target,
                                     AmdgpuOutput what, const std::string& module_name) {
    check_amd(target);
    init_amdgpu();
    std::string features = features_of(target);
    auto tm = gpu::create_target_machine(kTriple, target, features, llvm::Reloc::PIC_, "AMDGPU");
    BackendModule backend_module(module_name, kTriple, *tm);
    {
        StageTimer::Scope timed(target.name, "llvm-link");
        for (auto& bc : bitcode) link_bitcode(bc, backend_module, module_name, "AMDGPU");
    }
    verify_module(backend_module.module, "AMDGPU");
    return gpu::emit_gpu_module(backend_module.module, *tm, target, "AMDGPU", backend_module.llvm_errors,
                                file_type(what));
}

std::map<std::string, int64_t> amdgpu_scratch_bytes(const std::string& code, AmdgpuOutput what,
                                                    const target::GpuTarget& target) {
    std::map<std::string, int64_t> out;
    if (what == AmdgpuOutput::Object) {
        for (const KernelResources& r : amdgpu_resources(code, target)) out[r.kernel] = r.scratch_bytes;
        return out;
    }
    if (what != AmdgpuOutput::Assembly) TILEC_ICE("AMDGPU backend: scratch bytes of LLVM IR asked for");
    // ".amdhsa_kernel NAME" opens a kernel's descriptor block, which sets
    // ".amdhsa_private_segment_fixed_size N".
    std::istringstream lines(code);
    std::string line, kernel;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string directive, value;
        words >> directive >> value;
        if (directive == ".amdhsa_kernel") kernel = value;
        else if (directive == ".amdhsa_private_segment_fixed_size" && !kernel.empty())
            out[kernel] = std::stoll(value);
    }
    return out;
}

std::string ld_lld_path() {
    if (const char* env = std::getenv("TILEC_LD_LLD"); env && *env) return env;
    return TILEC_LD_LLD_PATH;
}

std::string ld_lld_version() {
    std::string lld = ld_lld_path();
    if (lld.empty() || !std::filesystem::exists(lld)) return "";
    return gpu::run_tool(lld, {"--version"}).output;
}

namespace {

// A code object of ours whose kernel metadata cannot be read: an internal error.
[[noreturn]] void unreadable_metadata(const target::GpuTarget& target, const std::string& why) {
    TILEC_ICE("AMDGPU backend: cannot read the kernel metadata of the " + target.name +
              " code object: " + why);
}

// The descriptions of a code object's NT_AMDGPU_METADATA notes (msgpack), in order.
std::vector<llvm::StringRef> metadata_notes(const std::string& code_object, const target::GpuTarget& target) {
    auto fail = [&](const std::string& why) -> std::vector<llvm::StringRef> {
        unreadable_metadata(target, why);
    };
    auto file = llvm::object::ELF64LEFile::create(llvm::StringRef(code_object));
    if (!file) return fail(llvm::toString(file.takeError()));
    auto sections = file->sections();
    if (!sections) return fail(llvm::toString(sections.takeError()));
    std::vector<llvm::StringRef> out;
    for (auto& section : *sections) {
        if (section.sh_type != llvm::ELF::SHT_NOTE) continue;
        llvm::Error err = llvm::Error::success();
        for (auto note : file->notes(section, err))
            if (note.getName() == "AMDGPU" && note.getType() == llvm::ELF::NT_AMDGPU_METADATA)
                out.push_back(note.getDescAsStringRef(section.sh_addralign));
        if (err) return fail(llvm::toString(std::move(err)));
    }
    return out;
}

// One NT_AMDGPU_METADATA note for the kernels of every object, in order: the first
// object's metadata with the others' `amdhsa.kernels` entries appended, every other
// field the same in all (amdhsa.version, amdhsa.target). It is the note one module of
// all the kernels gets: the AMDGPU backend writes the kernels' entries in the module's
// order, and msgpack maps in key order.
std::string merged_metadata_note(const std::vector<std::string>& objects, const target::GpuTarget& target) {
    llvm::msgpack::Document doc;
    auto merge = [](llvm::msgpack::DocNode* dest, llvm::msgpack::DocNode src,
                    llvm::msgpack::DocNode key) -> int {
        if (key.getKind() == llvm::msgpack::Type::String && key.getString() == "amdhsa.kernels" &&
            dest->getKind() == llvm::msgpack::Type::Array && src.getKind() == llvm::msgpack::Type::Array)
            return static_cast<int>(dest->getArray().size());  // appended
        if (dest->getKind() != src.getKind()) return -1;
        if (src.getKind() == llvm::msgpack::Type::Array || src.getKind() == llvm::msgpack::Type::Map)
            return 0;  // merged element by element: each must then be equal
        return *dest == src ? 0 : -1;
    };
    for (const std::string& object : objects) {
        std::vector<llvm::StringRef> notes = metadata_notes(object, target);
        if (notes.size() != 1)
            TILEC_ICE("AMDGPU backend: a " + target.name + " code object with " +
                      std::to_string(notes.size()) + " metadata notes, not one");
        if (!doc.readFromBlob(notes[0], false, merge))
            TILEC_ICE("AMDGPU backend: the " + target.name + " kernels' metadata notes do not merge");
    }
    std::string desc;
    doc.writeToBlob(desc);
    // Elf64_Nhdr (namesz, descsz, type), the name and the description, each padded to 4
    // bytes (the section's alignment, as the backend writes it).
    static const char kName[] = "AMDGPU";
    auto word = [](std::string& out, uint32_t v) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    std::string note;
    word(note, sizeof kName);
    word(note, static_cast<uint32_t>(desc.size()));
    word(note, llvm::ELF::NT_AMDGPU_METADATA);
    note.append(kName, sizeof kName);
    note.resize((note.size() + 3) & ~size_t{3}, '\0');
    note += desc;
    note.resize((note.size() + 3) & ~size_t{3}, '\0');
    return note;
}

// `object` with its `.note` section replaced by `note`, or removed when `note` is empty
// (llvm-objcopy's --update-section / --remove-section, in process).
std::string with_note(const std::string& object, const std::string& note, const target::GpuTarget& target) {
    auto fail = [&](llvm::Error err) -> std::string {
        TILEC_ICE("AMDGPU backend: cannot rewrite the metadata note of a " + target.name +
                  " code object: " + llvm::toString(std::move(err)));
    };
    auto binary = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "kernel.o"));
    if (!binary) return fail(binary.takeError());
    llvm::objcopy::ConfigManager config;
    if (note.empty()) {
        auto name = llvm::objcopy::NameOrPattern::create(".note", llvm::objcopy::MatchStyle::Literal,
                                                         [](llvm::Error e) { return e; });
        if (llvm::Error err = config.Common.ToRemove.addMatcher(std::move(name))) return fail(std::move(err));
    } else {
        config.Common.UpdateSection.emplace_back(".note",
                                                 llvm::MemoryBuffer::getMemBufferCopy(note, ".note"));
    }
    std::string out;
    llvm::raw_string_ostream os(out);
    if (llvm::Error err = llvm::objcopy::executeObjcopyOnBinary(config, **binary, os))
        return fail(std::move(err));
    os.flush();
    return out;
}

}  // namespace

std::string link_hsaco(const std::vector<std::string>& objects, const target::GpuTarget& target) {
    namespace fs = std::filesystem;
    std::string lld = ld_lld_path();
    if (lld.empty() || !fs::exists(lld))
        TILEC_ICE("ld.lld not found" + (lld.empty() ? std::string() : " at " + lld) +
                  ": configure with -DTILEC_LD_LLD=/path/to/ld.lld or set TILEC_LD_LLD");
    if (objects.empty()) TILEC_ICE("AMDGPU backend: an HSACO of no code object asked for");
    gpu::TempDir dir("tilec-lld");
    std::vector<std::string> args = {"-shared"};
    std::string note = objects.size() > 1 ? merged_metadata_note(objects, target) : std::string();
    for (size_t i = 0; i < objects.size(); ++i) {
        std::string in = dir.path() + "/kernel" + std::to_string(i) + ".o";
        gpu::write_file_bytes(
            in, objects.size() == 1 ? objects[i] : with_note(objects[i], i == 0 ? note : "", target));
        args.push_back(in);
    }
    std::string out = dir.path() + "/kernel.hsaco";
    args.push_back("-o");
    args.push_back(out);
    gpu::ToolResult r;
    {
        StageTimer::Scope timed(target.name, "ld.lld");
        r = gpu::run_tool(lld, args);
    }
    if (r.status != 0 || !fs::exists(out))
        TILEC_ICE("ld.lld -shared for " + target.name + " failed (" + lld + ", exit status " + std::to_string(r.status) +
                  "):\n" + r.output);
    return gpu::read_file_bytes(out);
}

std::string link_hsaco(const std::string& object, const target::GpuTarget& target) {
    return link_hsaco(std::vector<std::string>{object}, target);
}

std::vector<KernelResources> amdgpu_resources(const std::string& code_object, const target::GpuTarget& target) {
    auto fail = [&](const std::string& why) -> std::vector<KernelResources> {
        unreadable_metadata(target, why);
    };
    std::vector<llvm::StringRef> notes = metadata_notes(code_object, target);
    if (notes.empty()) return fail("no NT_AMDGPU_METADATA note");
    std::vector<KernelResources> out;
    for (llvm::StringRef blob : notes) {
        llvm::msgpack::Document doc;
        if (!doc.readFromBlob(blob, false)) return fail("the metadata note is not msgpack");
        if (doc.getRoot().getKind() != llvm::msgpack::Type::Map) return fail("the metadata is not a map");
        auto& root = doc.getRoot().getMap();
        auto kernels = root.find("amdhsa.kernels");
        if (kernels == root.end() || kernels->second.getKind() != llvm::msgpack::Type::Array)
            return fail("no amdhsa.kernels array");
        for (auto& node : kernels->second.getArray()) {
            if (node.getKind() != llvm::msgpack::Type::Map) return fail("a kernel entry is not a map");
            auto& k = node.getMap();
            auto number = [&](const char* key, int64_t otherwise) -> int64_t {
                auto it = k.find(key);
                if (it == k.end()) return otherwise;
                if (it->second.getKind() == llvm::msgpack::Type::UInt)
                    return static_cast<int64_t>(it->second.getUInt());
                if (it->second.getKind() == llvm::msgpack::Type::Int) return it->second.getInt();
                return otherwise;
            };
            auto name = k.find(".name");
            if (name == k.end() || name->second.getKind() != llvm::msgpack::Type::String)
                return fail("a kernel without .name");
            KernelResources r;
            r.amd = true;
            r.kernel = name->second.getString().str();
            r.arch = target.name;
            r.vgprs = number(".vgpr_count", 0);
            r.agprs = number(".agpr_count", -1);
            r.sgprs = number(".sgpr_count", 0);
            r.shared_bytes = number(".group_segment_fixed_size", 0);
            r.vgpr_spills = number(".vgpr_spill_count", 0);
            r.sgpr_spills = number(".sgpr_spill_count", 0);
            r.scratch_bytes = number(".private_segment_fixed_size", 0);
            out.push_back(r);
        }
    }
    return out;
}

std::string compile_hsaco(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                          const std::string& module_name) {
    return link_hsaco(compile_amdgpu(funcs, target, AmdgpuOutput::Object, module_name), target);
}

}  // namespace tilec::codegen
