// The JIT behind `tilec run`: an LLJIT over the compiled object, with the runtime's
// functions given by address (tilec links libtile_runtime statically, with hidden
// symbols, so a search of the process would not find them) and everything else
// (malloc, printf, expf, ...) looked up in the process.
#include "codegen/cpu_jit.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "codegen/cpu_backend.h"
#include "codegen/module_output.h"
#include "tile/runtime.h"

namespace tilec::codegen {

struct CpuJit::Impl {
    std::unique_ptr<llvm::orc::LLJIT> jit;
};

CpuJit::CpuJit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuJit::~CpuJit() = default;

namespace {

std::string to_string(llvm::Error e) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << e;
    return s;
}

// The runtime's C API, by address.
llvm::orc::SymbolMap runtime_symbols(llvm::orc::LLJIT& jit) {
    llvm::orc::SymbolMap map;
    auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
    auto add = [&](const char* name, auto* fn) {
        map[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), flags};
    };
    add("tile_status_string", &tile_status_string);
    add("tile_last_error", &tile_last_error);
    add("tile_clear_error", &tile_clear_error);
    add("tile_set_error", &tile_set_error);
    add("tile_set_error_v", &tile_set_error_v);
    add("tile_cpu_launch", &tile_cpu_launch);
    add("tile_cpu_check_options", &tile_cpu_check_options);
    add("tile_cpu_x86_level", &tile_cpu_x86_level);
    add("tile_runtime_version", &tile_runtime_version);
    return map;
}

// The C type of a scalar argument (the header's c_scalar_type, as an LLVM type).
llvm::Type* c_arg_type(llvm::LLVMContext& ctx, ir::DataType t) {
    if (t.is_bool()) return llvm::Type::getInt32Ty(ctx);
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits == 4 ? 8 : t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    return llvm::Type::getFloatTy(ctx);
}

}  // namespace

std::unique_ptr<CpuJit> CpuJit::load(const std::string& object, std::string& error) {
    install_llvm_fatal_error_handler();
    static std::once_flag init;
    std::call_once(init, [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        llvm::InitializeNativeTargetAsmParser();
    });
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit) {
        error = "cannot create the JIT: " + to_string(jit.takeError());
        return nullptr;
    }
    auto& jd = (*jit)->getMainJITDylib();
    if (auto e = jd.define(llvm::orc::absoluteSymbols(runtime_symbols(**jit)))) {
        error = "cannot define the runtime's symbols: " + to_string(std::move(e));
        return nullptr;
    }
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*jit)->getDataLayout().getGlobalPrefix());
    if (!process) {
        error = "cannot search the process for symbols: " + to_string(process.takeError());
        return nullptr;
    }
    jd.addGenerator(std::move(*process));
    if (auto e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, "tilec-run.o"))) {
        error = "cannot load the compiled object: " + to_string(std::move(e));
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->jit = std::move(*jit);
    return std::unique_ptr<CpuJit>(new CpuJit(std::move(impl)));
}

PackedEntry CpuJit::packed_entry(const ir::PrimFunc& f, std::string& error) {
    auto& jit = *impl_->jit;
    const std::string entry = cpu_entry_name(f);
    const std::string packed = entry + "_packed";

    // i32 NAME_cpu_packed(ptr opt, ptr args) { return NAME_cpu(opt, *(T0*)args[0], ...); }
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = std::make_unique<llvm::Module>(packed, *ctx);
    m->setDataLayout(jit.getDataLayout());
    m->setTargetTriple(jit.getTargetTriple().str());
    auto* ptr = llvm::PointerType::get(*ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(*ctx);
    std::vector<llvm::Type*> types = {ptr};
    for (auto& p : f.params) {
        if (p.kind == ir::ParamKind::Tensor)
            types.push_back(ptr);
        else if (p.kind == ir::ParamKind::Size)
            types.push_back(llvm::Type::getInt64Ty(*ctx));
        else
            types.push_back(c_arg_type(*ctx, p.var->type));
    }
    auto* callee_ty = llvm::FunctionType::get(i32, types, false);
    auto* callee = llvm::Function::Create(callee_ty, llvm::GlobalValue::ExternalLinkage, entry, *m);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, ptr}, false),
                                      llvm::GlobalValue::ExternalLinkage, packed, *m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(*ctx, "entry", fn));
    std::vector<llvm::Value*> args = {fn->getArg(0)};
    for (size_t i = 0; i < f.params.size(); ++i) {
        llvm::Value* slot = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(1), i));
        args.push_back(b.CreateLoad(types[i + 1], slot));
    }
    auto* call = b.CreateCall(callee, args);
    // Small integers are widened by the caller, as the entry point's declaration says.
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        auto* t = types[i + 1];
        if (p.kind != ir::ParamKind::Scalar || !t->isIntegerTy() || t->getIntegerBitWidth() >= 32) continue;
        auto attr = p.var->type.is_int() ? llvm::Attribute::SExt : llvm::Attribute::ZExt;
        callee->addParamAttr(static_cast<unsigned>(i + 1), attr);
        call->addParamAttr(static_cast<unsigned>(i + 1), attr);
    }
    b.CreateRet(call);
    std::string verify;
    llvm::raw_string_ostream vos(verify);
    if (llvm::verifyModule(*m, &vos)) {
        error = "invalid packed wrapper for " + entry + ": " + verify;
        return nullptr;
    }
    if (auto e = jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx)))) {
        error = "cannot add the packed wrapper of " + entry + ": " + to_string(std::move(e));
        return nullptr;
    }
    auto addr = jit.lookup(packed);
    if (!addr) {
        error = "cannot link " + entry + ": " + to_string(addr.takeError());
        return nullptr;
    }
    return addr->toPtr<PackedEntry>();
}

}  // namespace tilec::codegen
