// GPU images as constant data of the host object, the tile_gpu_module that describes
// them, and the NAME_cuda / NAME_hip entry points (gpu_entry.h). The argument checks are
// NAME_cpu's (entry_checks.h: same order, same messages, named after this entry point),
// plus alignment and the API's grid limits, so a caller sees one set of rules whichever
// backend it calls.
#include "codegen/gpu_entry.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <array>
#include <map>

#include "codegen/cpu_lowering.h"
#include "codegen/entry_checks.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::codegen {


std::string gpu_entry_name(const std::string& export_name, GpuApi api) {
    return export_name + (api == GpuApi::Cuda ? "_cuda" : "_hip");
}

std::string ptx_arch_label(const std::string& sm_arch) {
    const target::GpuTarget* t = target::find_gpu_target(sm_arch);
    if (!t || !t->is_nvidia()) TILEC_ICE("ptx_arch_label: not an NVIDIA target: " + sm_arch);
    return t->ptx_arch;
}

namespace {

// The GPU backends declare 16-byte-aligned tensor parameters (gpu_lowering.cpp), which
// is what lets a thread's 4-vector be one load; a misaligned pointer would fault.
constexpr int64_t kTensorAlignment = 16;

// The largest grid each API launches, per axis x, y, z, for a block of `threads` x 1 x 1.
// CUDA: x < 2^31, y and z < 2^16 (blocks). HIP: hipModuleLaunchKernel takes the grid in
// blocks, but HIP's documentation excludes launches whose gridDim x blockDim reaches 2^32
// in any dimension (the HSA dispatch packet's grid size, in work-items, is 32-bit).
std::array<int64_t, 3> grid_limits(GpuApi api, int64_t threads) {
    if (api == GpuApi::Cuda) return {(int64_t{1} << 31) - 1, 65535, 65535};
    const int64_t max_u32 = (int64_t{1} << 32) - 1;
    return {max_u32 / std::max<int64_t>(threads, 1), max_u32, max_u32};
}

const char* image_kind_name(GpuImageKind k) {
    switch (k) {
    case GpuImageKind::Cubin: return "cubin";
    case GpuImageKind::Ptx: return "ptx";
    case GpuImageKind::Hsaco: return "hsaco";
    }
    return "image";
}

// An image's global: tilec.gpu.KIND.ARCH.
std::string image_global_name(const GpuImage& image) {
    return std::string("tilec.gpu.") + image_kind_name(image.kind) + "." + image.arch;
}

// An image's bytes as a constant array. PTX goes to the driver as a C string: its NUL is
// embedded so the runtime need not copy. The table's size of an image is the array's.
llvm::Constant* image_bytes(llvm::LLVMContext& ctx, const GpuImage& image) {
    return llvm::ConstantDataArray::getString(ctx, image.data, image.kind == GpuImageKind::Ptx);
}

uint64_t image_size(const llvm::Constant* bytes) {
    return llvm::cast<llvm::ArrayType>(bytes->getType())->getNumElements();
}

// The layouts of tile_gpu_image and tile_gpu_module (tile/runtime.h).
struct RuntimeTypes {
    llvm::StructType* image = nullptr;
    llvm::StructType* module = nullptr;
};

RuntimeTypes runtime_types(llvm::LLVMContext& ctx, const llvm::DataLayout& dl) {
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* size_t_ty = dl.getIntPtrType(ctx);
    RuntimeTypes t;
    // {kind, flags, arch, data, size}
    t.image = llvm::StructType::create(ctx, {i32, i32, ptr, ptr, size_t_ty}, "tile_gpu_image");
    // {struct_size, image_size, name, images, num_images, flags, cache}
    t.module = llvm::StructType::create(ctx, {i32, i32, ptr, ptr, i32, i32, ptr}, "tile_gpu_module");
    return t;
}

llvm::GlobalVariable* emit_module_global(ModuleState& ms, const GpuEmbedding& gpu, const RuntimeTypes& types) {
    auto& ctx = ms.ctx;
    auto& m = ms.module;
    const llvm::DataLayout& dl = m.getDataLayout();
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto* size_t_ty = dl.getIntPtrType(ctx);
    std::vector<llvm::Constant*> entries;
    for (auto& image : gpu.images) {
        llvm::Constant* init = image_bytes(ctx, image);
        auto* bytes = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::InternalLinkage,
                                               init, image_global_name(image));
        // ELF images are read in place by the drivers: keep them aligned like a file mapping would be.
        bytes->setAlignment(llvm::Align(16));
        bytes->setSection(".rodata.tilec.gpu");
        uint64_t size = image_size(init);
        entries.push_back(llvm::ConstantStruct::get(
            types.image, {llvm::ConstantInt::get(i32, static_cast<uint32_t>(image.kind)), llvm::ConstantInt::get(i32, 0),
                          ms.c_string(image.arch), bytes, llvm::ConstantInt::get(size_t_ty, size)}));
    }
    auto* array_type = llvm::ArrayType::get(types.image, entries.size());
    auto* images = new llvm::GlobalVariable(m, array_type, true, llvm::GlobalValue::InternalLinkage,
                                            llvm::ConstantArray::get(array_type, entries), "tilec.gpu.images");
    images->setAlignment(llvm::Align(8));
    auto* null = llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
    auto* init = llvm::ConstantStruct::get(
        types.module,
        {llvm::ConstantInt::get(i32, dl.getTypeAllocSize(types.module).getFixedValue()),
         llvm::ConstantInt::get(i32, dl.getTypeAllocSize(types.image).getFixedValue()), ms.c_string(gpu.module_name),
         images, llvm::ConstantInt::get(i32, entries.size()), llvm::ConstantInt::get(i32, 0), null});
    // Writable: the runtime fills `cache` (atomically) at the first launch.
    auto* module = new llvm::GlobalVariable(m, types.module, false, llvm::GlobalValue::InternalLinkage, init,
                                            "tilec.gpu.module");
    module->setAlignment(llvm::Align(8));
    return module;
}

// NAME_cuda's launch of a kernel with TMA tensor maps: a tile_tma_map per map, filled from
// the arguments (the tensor's pointer, its dimensions in the map's order, innermost
// first, and the byte strides of the outer ones) and the map's box and swizzle, then tile_cuda_launch_tma with
// the images whose kernel takes them.
void emit_tma_launch(ModuleState& ms, FunctionLowering& fl, const ir::PrimFunc& f, const GpuKernel& kernel,
                     const std::vector<GpuImage>& images, llvm::GlobalVariable* module_global, llvm::Function* fn,
                     llvm::Value* args, size_t num_args, llvm::Value* grid_arr, llvm::Value* block_arr) {
    auto& ctx = ms.ctx;
    llvm::IRBuilderBase& b = fl.builder();
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* intptr = ms.module.getDataLayout().getIntPtrType(ctx);
    // tile/runtime.h's tile_tma_map.
    auto* map_type = llvm::StructType::get(ctx, {ptr, llvm::ArrayType::get(i64, 5), llvm::ArrayType::get(i64, 4), i32,
                                                 i32, i32, llvm::ArrayType::get(i32, 5)});
    const size_t n_maps = kernel.tma_maps.size();
    auto* maps_type = llvm::ArrayType::get(map_type, n_maps);
    llvm::Value* maps;
    {
        llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().getFirstInsertionPt());
        maps = eb.CreateAlloca(maps_type, nullptr, "tma_maps");
    }
    b.CreateStore(llvm::Constant::getNullValue(maps_type), maps);
    for (size_t k = 0; k < n_maps; ++k) {
        const ir::TmaMapUse& use = kernel.tma_maps[k];
        const ir::Buffer& t = f.params.at(use.param).buffer;
        const size_t rank = t->shape.size();
        const int64_t eb = (t->dtype.bits + 7) / 8;
        llvm::Value* m = b.CreateConstInBoundsGEP2_32(maps_type, maps, 0, static_cast<unsigned>(k));
        b.CreateStore(fn->getArg(static_cast<unsigned>(use.param + 1)), b.CreateStructGEP(map_type, m, 0));
        const std::vector<size_t> dims = ir::tma_map_dims(use.imm, rank);
        if (dims.size() != rank) TILEC_ICE("a tensor map whose dimensions are not the tensor's");
        // Row-major strides where the tensor has none of its own (then dims is r-1 .. 0).
        std::vector<llvm::Value*> packed(rank);
        {
            llvm::Value* p = b.getInt64(1);
            for (size_t d = rank; d-- > 0;) {
                packed[d] = p;
                p = b.CreateMul(p, fl.expr(t->shape[d]));
            }
        }
        for (size_t i = 0; i < rank; ++i) {
            const size_t dim = dims[i];
            llvm::Value* extent = fl.expr(t->shape[dim]);
            b.CreateStore(extent, b.CreateConstInBoundsGEP2_32(llvm::ArrayType::get(i64, 5), b.CreateStructGEP(map_type, m, 1), 0,
                                                               static_cast<unsigned>(i)));
            if (i > 0) {
                llvm::Value* stride = t->strides.empty() ? packed[dim] : fl.expr(t->strides[dim]);
                b.CreateStore(b.CreateMul(stride, b.getInt64(static_cast<uint64_t>(eb))),
                              b.CreateConstInBoundsGEP2_32(llvm::ArrayType::get(i64, 4), b.CreateStructGEP(map_type, m, 2),
                                                           0, static_cast<unsigned>(i - 1)));
            }
            b.CreateStore(b.getInt32(static_cast<uint32_t>(use.imm.at(1 + i))),
                          b.CreateConstInBoundsGEP2_32(llvm::ArrayType::get(i32, 5), b.CreateStructGEP(map_type, m, 6), 0,
                                                       static_cast<unsigned>(i)));
        }
        b.CreateStore(b.getInt32(static_cast<uint32_t>(eb)), b.CreateStructGEP(map_type, m, 3));
        b.CreateStore(b.getInt32(static_cast<uint32_t>(rank)), b.CreateStructGEP(map_type, m, 4));
        b.CreateStore(b.getInt32(static_cast<uint32_t>(use.imm.at(0))), b.CreateStructGEP(map_type, m, 5));
    }
    // Which images' kernels take the maps: cubins by arch, the PTX by its virtual arch.
    uint64_t mask = 0;
    for (size_t i = 0; i < images.size() && i < 64; ++i) {
        for (const auto& arch : kernel.tma_archs) {
            const target::GpuTarget* t = target::find_gpu_target(arch);
            bool match = images[i].kind == GpuImageKind::Ptx ? t && images[i].arch == t->ptx_arch : images[i].arch == arch;
            if (match) mask |= uint64_t{1} << i;
        }
    }
    // tile_status tile_cuda_launch_tma(module, kernel, stream, grid, block, dynamic_smem,
    //     args, num_args, maps, num_maps, tma_images, tma_block_x)
    auto* lty = llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr, intptr, ptr, i32, ptr, i32, i64, i32}, false);
    auto launcher = ms.module.getOrInsertFunction("tile_cuda_launch_tma", lty);
    llvm::Value* status = b.CreateCall(
        launcher, {module_global, ms.c_string(kernel.symbol), fn->getArg(0), grid_arr, block_arr,
                   llvm::ConstantInt::get(intptr, kernel.cuda_dynamic_smem), args,
                   b.getInt32(static_cast<uint32_t>(num_args)), maps, b.getInt32(static_cast<uint32_t>(n_maps)),
                   b.getInt64(mask), b.getInt32(static_cast<uint32_t>(kernel.tma_threads))},
        "status");
    b.CreateRet(status);
}

void emit_entry(ModuleState& ms, const ir::PrimFunc& f, const GpuKernel& kernel, GpuApi api,
                llvm::GlobalVariable* module_global, const std::vector<GpuImage>& images) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto* intptr = ms.module.getDataLayout().getIntPtrType(ctx);
    const std::string entry_name = gpu_entry_name(f.name, api);
    llvm::Function* fn = declare_entry_function(ms, f, entry_name, "stream");
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    llvm::IRBuilder<> b(entry);
    FunctionLowering fl(ms, fn, b);

    // NAME_cpu's checks (entry_checks.h), plus the alignment the kernel assumes and the
    // API's grid limits; the stream needs none (NULL is the default stream).
    EntryCheckRules rules;
    rules.tensor_alignment = kTensorAlignment;
    rules.alignment_why = " (GPU entry points need the alignment of cudaMalloc/hipMalloc)";
    rules.grid_limit = grid_limits(api, std::max(kernel.threads, kernel.tma_threads));
    rules.api = api == GpuApi::Cuda ? "CUDA" : "HIP";
    CheckedArguments checked = emit_argument_checks(ms, fl, fn, f, entry_name, rules);
    llvm::Value* const* grid = checked.grid;

    // An empty grid launches nothing, and so does not load the driver either.
    return_if_empty_grid(b, fn, checked.empty_grid);

    // void* args[] = {&A, &B, &C, &N, ...}: one local per kernel parameter, of its type.
    auto alloca_in_entry = [&](llvm::Type* t, const std::string& name) {
        llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
        return eb.CreateAlloca(t, nullptr, name);
    };
    size_t n = f.params.size();
    auto* args_type = llvm::ArrayType::get(ptr, std::max<size_t>(n, 1));
    auto* args = alloca_in_entry(args_type, "args");
    for (size_t i = 0; i < n; ++i) {
        llvm::Value* a = fn->getArg(static_cast<unsigned>(i + 1));
        llvm::Value* slot = alloca_in_entry(a->getType(), a->getName().str() + ".param");
        b.CreateStore(a, slot);
        b.CreateStore(slot, b.CreateConstInBoundsGEP2_32(args_type, args, 0, static_cast<unsigned>(i)));
    }
    auto* dims_type = llvm::ArrayType::get(i32, 3);
    auto* grid_arr = alloca_in_entry(dims_type, "grid");
    auto* block_arr = alloca_in_entry(dims_type, "block");
    for (unsigned d = 0; d < 3; ++d) {
        llvm::Value* g = grid[d];
        const int64_t cluster = d == 0 ? kernel.cluster_x : d == 1 ? kernel.cluster_y : 1;
        if (api == GpuApi::Cuda && cluster > 1) {
            // A launch in clusters needs the grid a multiple of the cluster (CUDA guide).
            llvm::Value* n = llvm::ConstantInt::get(g->getType(), static_cast<uint64_t>(cluster));
            g = b.CreateMul(b.CreateUDiv(b.CreateAdd(g, b.CreateSub(n, llvm::ConstantInt::get(g->getType(), 1))), n), n);
        }
        b.CreateStore(b.CreateTrunc(g, i32), b.CreateConstInBoundsGEP2_32(dims_type, grid_arr, 0, d));
        b.CreateStore(b.getInt32(d == 0 ? static_cast<uint32_t>(kernel.threads) : 1),
                      b.CreateConstInBoundsGEP2_32(dims_type, block_arr, 0, d));
    }
    if (api == GpuApi::Cuda && !kernel.tma_maps.empty()) {
        emit_tma_launch(ms, fl, f, kernel, images, module_global, fn, args, n, grid_arr, block_arr);
        return;
    }
    // tile_status tile_cuda_launch(tile_gpu_module*, const char* kernel, void* stream,
    //     const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem, void** args)
    auto* lty = llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr, intptr, ptr}, false);
    auto launcher = ms.module.getOrInsertFunction(api == GpuApi::Cuda ? "tile_cuda_launch" : "tile_hip_launch", lty);
    llvm::Value* status =
        b.CreateCall(launcher, {module_global, ms.c_string(kernel.symbol), fn->getArg(0), grid_arr, block_arr,
                                llvm::ConstantInt::get(intptr, api == GpuApi::Cuda ? kernel.cuda_dynamic_smem : kernel.hip_dynamic_smem),
                                args},
                     "status");
    // The runtime's status and message are the entry point's (no re-wording).
    b.CreateRet(status);
}

}  // namespace

void fill_gpu_images(llvm::Module& m, const std::vector<GpuImage>& images) {
    auto& ctx = m.getContext();
    llvm::GlobalVariable* table = m.getGlobalVariable("tilec.gpu.images", true);
    if (!table) {
        // None written (no kernels), or optimised away with the images, as O3 removes them
        // when no entry point can launch (every grid over the APIs' limits): nothing to fill.
        for (const GpuImage& image : images)
            if (m.getGlobalVariable(image_global_name(image), true))
                TILEC_ICE("host module: GPU image " + image_global_name(image) + " without the image table");
        return;
    }
    auto* entries =
        table->hasInitializer() ? llvm::dyn_cast<llvm::ConstantArray>(table->getInitializer()) : nullptr;
    if (!entries || entries->getNumOperands() != images.size())
        TILEC_ICE("host module: the GPU image table to fill is not the one written (" +
                  std::to_string(images.size()) + " images)");
    std::vector<uint64_t> sizes;
    for (const GpuImage& image : images) {
        std::string name = image_global_name(image);
        llvm::GlobalVariable* old = m.getGlobalVariable(name, true);
        if (!old) TILEC_ICE("host module: no GPU image " + name + " to fill");
        llvm::Constant* init = image_bytes(ctx, image);
        sizes.push_back(image_size(init));
        auto* bytes = new llvm::GlobalVariable(m, init->getType(), true, old->getLinkage(), init, "", old);
        bytes->copyAttributesFrom(old);
        bytes->takeName(old);
        old->replaceAllUsesWith(bytes);
        old->eraseFromParent();
    }
    // The table's entries now point at the new globals; their sizes follow.
    entries = llvm::cast<llvm::ConstantArray>(table->getInitializer());
    std::vector<llvm::Constant*> filled;
    for (size_t i = 0; i < images.size(); ++i) {
        auto* entry = llvm::cast<llvm::ConstantStruct>(entries->getOperand(static_cast<unsigned>(i)));
        std::vector<llvm::Constant*> fields;
        for (unsigned f = 0; f < entry->getNumOperands(); ++f) fields.push_back(entry->getOperand(f));
        fields.back() = llvm::ConstantInt::get(fields.back()->getType(), sizes[i]);
        filled.push_back(llvm::ConstantStruct::get(entry->getType(), fields));
    }
    table->setInitializer(llvm::ConstantArray::get(entries->getType(), filled));
}

void emit_gpu_embedding(ModuleState& ms, const ir::Module& module, const GpuEmbedding& gpu) {
    if (gpu.kernels.empty()) return;
    std::map<std::string, const ir::PrimFunc*> funcs;
    for (auto& f : module.funcs) funcs[f.name] = &f;
    RuntimeTypes types = runtime_types(ms.ctx, ms.module.getDataLayout());
    llvm::GlobalVariable* module_global = emit_module_global(ms, gpu, types);
    for (auto& k : gpu.kernels) {
        auto it = funcs.find(k.export_name);
        if (it == funcs.end()) TILEC_ICE("GPU entry point for an unknown export " + k.export_name);
        if (k.threads <= 0 || k.threads > 1024)
            TILEC_ICE("GPU kernel " + k.symbol + " has " + std::to_string(k.threads) + " threads per block");
        if (k.cuda) emit_entry(ms, *it->second, k, GpuApi::Cuda, module_global, gpu.images);
        if (k.hip) emit_entry(ms, *it->second, k, GpuApi::Hip, module_global, gpu.images);
    }
}

}  // namespace tilec::codegen
