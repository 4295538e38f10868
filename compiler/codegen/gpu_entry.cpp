// GPU images as constant data of the host object, the tile_gpu_module that describes
// them, and the NAME_cuda / NAME_hip entry points (gpu_entry.h). The argument checks
// mirror cpu_entry.cpp's (same order, same messages, named after this entry point) so a
// caller sees one set of rules whichever backend it calls.
#include "codegen/gpu_entry.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <map>

#include "codegen/cpu_lowering.h"
#include "ir/printer.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;
using ir::ParamKind;

std::string gpu_entry_name(const std::string& export_name, GpuApi api) {
    return export_name + (api == GpuApi::Cuda ? "_cuda" : "_hip");
}

std::string ptx_arch_label(const std::string& sm_arch) {
    if (sm_arch.rfind("sm_", 0) != 0) TILEC_ICE("ptx_arch_label: not an sm_XX arch: " + sm_arch);
    return "compute_" + sm_arch.substr(3);
}

namespace {

constexpr int kInvalidArgument = 1;  // TILE_ERROR_INVALID_ARGUMENT

// The GPU backends declare 16-byte-aligned tensor parameters (nvptx_backend.cpp), which
// is what lets a thread's 4-vector be one load; a misaligned pointer would fault.
constexpr int64_t kTensorAlignment = 16;

std::string escape_percent(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '%') out += '%';
        out += c;
    }
    return out;
}

// The C type of a scalar argument (the same as the CPU entry's and the NVPTX kernel's
// parameter: bool as int32, i4 as int8, narrow floats as float, rounded by the kernel).
llvm::Type* c_arg_type(llvm::LLVMContext& ctx, DataType t) {
    if (t.is_bool()) return llvm::Type::getInt32Ty(ctx);
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits == 4 ? 8 : t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    return llvm::Type::getFloatTy(ctx);
}

// The floor divisions inside a shape expression, innermost first.
void collect_divisions(const ir::Expr& e, std::vector<const ir::BinaryNode*>& out) {
    if (auto* bin = e->as<ir::BinaryNode>()) {
        collect_divisions(bin->a, out);
        collect_divisions(bin->b, out);
        if (bin->op == ir::BinaryOp::FloorDiv) out.push_back(bin);
    } else if (auto* u = e->as<ir::UnaryNode>()) {
        collect_divisions(u->a, out);
    } else if (auto* c = e->as<ir::CastNode>()) {
        collect_divisions(c->value, out);
    }
}

const char* image_kind_name(GpuImageKind k) {
    switch (k) {
    case GpuImageKind::Cubin: return "cubin";
    case GpuImageKind::Ptx: return "ptx";
    case GpuImageKind::Hsaco: return "hsaco";
    }
    return "image";
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
        // PTX goes to the driver as a C string: embed its NUL so the runtime need not copy.
        bool text = image.kind == GpuImageKind::Ptx;
        auto* init = llvm::ConstantDataArray::getString(ctx, image.data, text);
        auto* bytes = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::InternalLinkage, init,
                                               std::string("tilec.gpu.") + image_kind_name(image.kind) + "." +
                                                   image.arch);
        // ELF images are read in place by the drivers: keep them aligned like a file mapping would be.
        bytes->setAlignment(llvm::Align(16));
        bytes->setSection(".rodata.tilec.gpu");
        uint64_t size = image.data.size() + (text ? 1 : 0);
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

void emit_entry(ModuleState& ms, const ir::PrimFunc& f, const GpuKernel& kernel, GpuApi api,
                llvm::GlobalVariable* module_global) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    const std::string entry_name = gpu_entry_name(f.name, api);
    std::vector<llvm::Type*> arg_types = {ptr};
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor)
            arg_types.push_back(ptr);
        else if (p.kind == ParamKind::Size)
            arg_types.push_back(i64);
        else
            arg_types.push_back(c_arg_type(ctx, p.var->type));
    }
    auto* fty = llvm::FunctionType::get(i32, arg_types, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, entry_name, ms.module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->getArg(0)->setName("stream");
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        auto* arg = fn->getArg(static_cast<unsigned>(i + 1));
        arg->setName(p.kind == ParamKind::Tensor ? p.buffer->name : p.var->name);
        if (p.kind == ParamKind::Scalar && arg->getType()->isIntegerTy() &&
            arg->getType()->getIntegerBitWidth() < 32)
            fn->addParamAttr(static_cast<unsigned>(i + 1),
                             p.var->type.is_int() ? llvm::Attribute::SExt : llvm::Attribute::ZExt);
    }

    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    llvm::IRBuilder<> b(entry);
    FunctionLowering fl(ms, fn, b);
    std::string prefix = escape_percent(entry_name) + ": ";
    auto check = [&](llvm::Value* ok, const std::string& fmt, std::vector<llvm::Value*> values) {
        auto* fail = llvm::BasicBlock::Create(ctx, "bad_arg", fn);
        auto* cont = llvm::BasicBlock::Create(ctx, "ok", fn);
        b.CreateCondBr(ok, cont, fail, llvm::MDBuilder(ctx).createLikelyBranchWeights());
        b.SetInsertPoint(fail);
        std::vector<llvm::Value*> call_args = {b.getInt32(kInvalidArgument), ms.c_string(prefix + fmt)};
        call_args.insert(call_args.end(), values.begin(), values.end());
        b.CreateRet(b.CreateCall(ms.tile_set_error(), call_args));
        b.SetInsertPoint(cont);
    };

    // Sizes and scalars as the shape and grid expressions see them (the stream needs no
    // check: NULL is the default stream).
    std::vector<llvm::Value*> tensors(f.params.size(), nullptr);
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        llvm::Value* a = fn->getArg(static_cast<unsigned>(i + 1));
        if (p.kind == ParamKind::Size) {
            check(b.CreateICmpSGE(a, b.getInt64(0)), "size " + p.var->name + " = %lld is negative", {a});
            fl.bind(p.var, a);
        } else if (p.kind == ParamKind::Scalar) {
            DataType t = p.var->type;
            llvm::Value* v = a;
            if (t.is_bool())
                v = b.CreateICmpNE(a, b.getInt32(0));
            else if (t.bits == 4)
                v = b.CreateTrunc(a, reg_type(ctx, t));
            else if (is_narrow_float(t))
                v = fl.convert(a, DataType::f32(), t);
            fl.bind(p.var, v);
        } else {
            tensors[i] = a;
        }
    }
    std::vector<std::vector<llvm::Value*>> dims(f.params.size());
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        for (size_t d = 0; d < p.buffer->rank(); ++d) {
            const ir::Expr& e = p.buffer->shape[d];
            bool derived = !e->is<ir::VarNode>() && !e->is<ir::IntImmNode>();
            std::string why = " (dimension " + std::to_string(d) + " of " + p.buffer->name + " is " +
                              escape_percent(ir::print(e)) + ")";
            std::vector<const ir::BinaryNode*> divs;
            if (derived) collect_divisions(e, divs);
            for (auto* div : divs) {
                std::string num_text = escape_percent(ir::print(div->a));
                llvm::Value* num = fl.convert(fl.expr(div->a), div->a->type, DataType::i64());
                if (auto c = ir::as_const_int(div->b)) {
                    check(b.CreateICmpEQ(b.CreateSRem(num, b.getInt64(*c)), b.getInt64(0)),
                          num_text + " = %lld must be a multiple of " + std::to_string(*c) + why, {num});
                    continue;
                }
                std::string den_text = escape_percent(ir::print(div->b));
                llvm::Value* den = fl.convert(fl.expr(div->b), div->b->type, DataType::i64());
                check(b.CreateICmpSGT(den, b.getInt64(0)), den_text + " = %lld must be positive" + why, {den});
                check(b.CreateICmpEQ(b.CreateSRem(num, den), b.getInt64(0)),
                      num_text + " = %lld must be a multiple of " + den_text + " = %lld" + why, {num, den});
            }
            llvm::Value* v = fl.convert(fl.expr(e), e->type, DataType::i64());
            if (derived)
                check(b.CreateICmpSGE(v, b.getInt64(0)), escape_percent(ir::print(e)) + " = %lld is negative" + why,
                      {v});
            dims[i].push_back(v);
        }
    }
    // Tensors: NULL only without elements; otherwise aligned as the kernel assumes.
    auto* intptr = ms.module.getDataLayout().getIntPtrType(ctx);
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        llvm::Value* empty = b.getFalse();
        for (auto* d : dims[i]) empty = b.CreateOr(empty, b.CreateICmpEQ(d, b.getInt64(0)));
        check(b.CreateOr(b.CreateIsNotNull(tensors[i]), empty), "tensor " + p.buffer->name + " is NULL", {});
    }
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        llvm::Value* low = b.CreateAnd(b.CreatePtrToInt(tensors[i], intptr),
                                       llvm::ConstantInt::get(intptr, kTensorAlignment - 1));
        check(b.CreateICmpEQ(low, llvm::ConstantInt::get(intptr, 0)),
              "tensor " + p.buffer->name + " = %p is not " + std::to_string(kTensorAlignment) +
                  "-byte aligned (GPU entry points need the alignment of cudaMalloc/hipMalloc)",
              {tensors[i]});
    }
    // The grid, within the API's limits (CUDA: x < 2^31, y and z < 2^16; HIP: every
    // extent times the block below 2^32).
    const char* axis[3] = {"x", "y", "z"};
    llvm::Value* grid[3] = {b.getInt64(1), b.getInt64(1), b.getInt64(1)};
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) {
        grid[d] = fl.convert(fl.expr(f.grid[d]), f.grid[d]->type, DataType::i64());
        std::string what = std::string("the grid's ") + axis[d] + " extent (" + escape_percent(ir::print(f.grid[d])) +
                           ") = %lld";
        check(b.CreateICmpSGE(grid[d], b.getInt64(0)), what + " is negative", {grid[d]});
        int64_t limit = api == GpuApi::Cuda ? (d == 0 ? (int64_t{1} << 31) - 1 : 65535)
                                            : ((int64_t{1} << 32) - 1) / std::max<int64_t>(kernel.threads, 1);
        check(b.CreateICmpSLE(grid[d], b.getInt64(limit)),
              what + " exceeds " + (api == GpuApi::Cuda ? "CUDA" : "HIP") + "'s limit of " + std::to_string(limit) +
                  " blocks",
              {grid[d]});
    }

    // An empty grid launches nothing, and so does not load the driver either.
    llvm::Value* empty_grid = b.getFalse();
    for (auto* g : grid) empty_grid = b.CreateOr(empty_grid, b.CreateICmpEQ(g, b.getInt64(0)));
    auto* nothing = llvm::BasicBlock::Create(ctx, "empty_grid", fn);
    auto* launch = llvm::BasicBlock::Create(ctx, "launch", fn);
    b.CreateCondBr(empty_grid, nothing, launch);
    b.SetInsertPoint(nothing);
    b.CreateRet(b.getInt32(0));
    b.SetInsertPoint(launch);

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
        b.CreateStore(b.CreateTrunc(grid[d], i32), b.CreateConstInBoundsGEP2_32(dims_type, grid_arr, 0, d));
        b.CreateStore(b.getInt32(d == 0 ? static_cast<uint32_t>(kernel.threads) : 1),
                      b.CreateConstInBoundsGEP2_32(dims_type, block_arr, 0, d));
    }
    // tile_status tile_cuda_launch(tile_gpu_module*, const char* kernel, void* stream,
    //     const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem, void** args)
    auto* lty = llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr, intptr, ptr}, false);
    auto launcher = ms.module.getOrInsertFunction(api == GpuApi::Cuda ? "tile_cuda_launch" : "tile_hip_launch", lty);
    llvm::Value* status =
        b.CreateCall(launcher, {module_global, ms.c_string(kernel.symbol), fn->getArg(0), grid_arr, block_arr,
                                llvm::ConstantInt::get(intptr, kernel.dynamic_smem), args},
                     "status");
    // The runtime's status and message are the entry point's (no re-wording).
    b.CreateRet(status);
}

}  // namespace

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
        if (k.cuda) emit_entry(ms, *it->second, k, GpuApi::Cuda, module_global);
        if (k.hip) emit_entry(ms, *it->second, k, GpuApi::Hip, module_global);
    }
}

}  // namespace tilec::codegen
