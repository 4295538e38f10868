// The two functions of each export on the CPU: the block function (one block of the
// grid) and the C entry point (argument checks, argument struct, tile_cpu_launch).
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/c_header.h"
#include "codegen/cpu_lowering.h"
#include "codegen/entry_checks.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;
using ir::ParamKind;

namespace {

// tile_status values (tile/runtime.h; part of its ABI).
constexpr int kOutOfMemory = 2;
constexpr int kNoImageForDevice = 5;  // no block function this CPU can run
constexpr int kLaunchError = 6;       // a failed assert in a block

// The argument struct: tensors (ptr), sizes (i64), scalars (register types) in
// parameter order, then the first failure of a block: its message and status.
struct ArgsLayout {
    llvm::StructType* type = nullptr;
    unsigned error_msg = 0;
    unsigned error_status = 0;
};

ArgsLayout make_args_layout(ModuleState& ms, const ir::PrimFunc& f) {
    auto* ptr = llvm::PointerType::get(ms.ctx, 0);
    std::vector<llvm::Type*> fields;
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor)
            fields.push_back(ptr);
        else
            fields.push_back(reg_type(ms.ctx, p.var->type));
    }
    ArgsLayout layout;
    layout.error_msg = static_cast<unsigned>(fields.size());
    fields.push_back(ptr);
    layout.error_status = static_cast<unsigned>(fields.size());
    fields.push_back(llvm::Type::getInt32Ty(ms.ctx));
    layout.type = llvm::StructType::create(ms.ctx, fields, f.name + ".args");
    return layout;
}

llvm::Function* emit_block_function(ModuleState& ms, const ir::PrimFunc& f, const ArgsLayout& layout) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64, i64}, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage,
                                      f.name + "_block" + ms.cpu.function_suffix, ms.module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addParamAttr(0, llvm::Attribute::NoCapture);
    fn->getArg(0)->setName("args");
    const char* names[3] = {"bx", "by", "bz"};
    for (unsigned d = 0; d < 3; ++d) fn->getArg(d + 1)->setName(names[d]);

    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
    llvm::IRBuilder<> b(entry);
    b.CreateBr(body);  // replaced below when heap buffers need a NULL check
    b.SetInsertPoint(body);
    FunctionLowering fl(ms, fn, b);
    llvm::Value* args = fn->getArg(0);
    auto field = [&](unsigned i) { return b.CreateStructGEP(layout.type, args, i); };
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind == ParamKind::Tensor) continue;
        fl.bind(p.var, b.CreateLoad(layout.type->getElementType(static_cast<unsigned>(i)),
                                    field(static_cast<unsigned>(i)), p.var->name));
    }
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        fl.bind_tensor(p.buffer, b.CreateLoad(ptr, field(static_cast<unsigned>(i)), p.buffer->name));
    }
    for (unsigned d = 0; d < 3; ++d)
        if (f.block_idx[d])
            fl.bind(f.block_idx[d], fl.convert(fn->getArg(d + 1), DataType::i64(), f.block_idx[d]->type));
    fl.error_slot = field(layout.error_msg);
    fl.exit_block = llvm::BasicBlock::Create(ctx, "exit", fn);

    fl.block_body(f.body);
    b.CreateBr(fl.exit_block);

    b.SetInsertPoint(fl.exit_block);
    // Non-temporal stores are weakly ordered: the fence makes them visible before the
    // pool reports the block done.
    if (fl.emitted_streaming_stores) b.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
    for (auto* p : fl.heap_buffers) b.CreateCall(ms.libc("free"), {p});
    b.CreateRetVoid();

    if (!fl.heap_buffers.empty()) {
        // A failed malloc: record "out of memory" and leave (free(NULL) is harmless).
        entry->getTerminator()->eraseFromParent();
        b.SetInsertPoint(entry);
        llvm::Value* failed = b.getFalse();
        for (auto* p : fl.heap_buffers) failed = b.CreateOr(failed, b.CreateIsNull(p));
        auto* oom = llvm::BasicBlock::Create(ctx, "oom", fn);
        b.CreateCondBr(failed, oom, body, llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
        b.SetInsertPoint(oom);
        auto* null = llvm::ConstantPointerNull::get(ptr);
        std::string msg = f.name + "_cpu: out of memory for the buffers of a block";
        // The slot's address again: fl.error_slot is computed in `body`, which this block
        // does not pass through.
        auto* cas = b.CreateAtomicCmpXchg(field(layout.error_msg), null, ms.c_string(msg), llvm::MaybeAlign(),
                                          llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
        auto* won = llvm::BasicBlock::Create(ctx, "oom.first", fn);
        b.CreateCondBr(b.CreateExtractValue(cas, 1), won, fl.exit_block);
        b.SetInsertPoint(won);
        b.CreateStore(b.getInt32(kOutOfMemory), field(layout.error_status));
        b.CreateBr(fl.exit_block);
    }
    return fn;
}

// The block function that the entry point launches: the only one, or (an object for
// several CPUs) the variant of the highest x86-64 level this CPU has, chosen at each
// launch; where it has none, the entry returns TILE_ERROR_NO_IMAGE_FOR_DEVICE with a
// message (no variant's code runs, so no illegal instruction either).
struct BlockVariant {
    llvm::Function* fn;
    int level;         // 0: the only one
    std::string name;  // the --cpu name it was compiled for (a variant)
};

llvm::Value* choose_block_function(ModuleState& ms, llvm::IRBuilderBase& b, llvm::Function* fn,
                                   const std::string& entry_name, const std::vector<BlockVariant>& blocks) {
    if (blocks.size() == 1 && blocks[0].level == 0) return blocks[0].fn;
    llvm::Value* level = b.CreateCall(ms.tile_cpu_x86_level(), {}, "cpu_level");
    llvm::Value* chosen = llvm::ConstantPointerNull::get(llvm::PointerType::get(ms.ctx, 0));
    for (const BlockVariant& v : blocks)  // ascending levels: the last that fits wins
        chosen = b.CreateSelect(b.CreateICmpSGE(level, b.getInt32(v.level)), v.fn, chosen);
    auto& ctx = ms.ctx;
    auto* none = llvm::BasicBlock::Create(ctx, "no_cpu_variant", fn);
    auto* found = llvm::BasicBlock::Create(ctx, "cpu_variant", fn);
    b.CreateCondBr(b.CreateIsNull(chosen), none, found, llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
    b.SetInsertPoint(none);
    std::string built;  // "x86-64-v3,x86-64-v4": the levels, ascending
    for (const BlockVariant& v : blocks) built += (built.empty() ? "" : ",") + v.name;
    b.CreateRet(b.CreateCall(
        ms.tile_set_error(),
        {b.getInt32(kNoImageForDevice),
         ms.c_string(entry_name +
                     ": this CPU's x86-64 level is %d, below every level its host "
                     "code was built for (tilec --cpu=" +
                     built + "); the TILE_CPU_MAX_LEVEL environment variable, if set, caps the level"),
         level}));
    b.SetInsertPoint(found);
    return chosen;
}

void emit_entry_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name,
                         const ArgsLayout& layout, const std::vector<BlockVariant>& blocks) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    llvm::Function* fn = declare_entry_function(ms, f, entry_name, "opt");
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    llvm::IRBuilder<> b(entry);
    FunctionLowering fl(ms, fn, b);

    // The options first: a bad options struct is reported before any other argument,
    // and also when the grid turns out to be empty.
    {
        llvm::Value* st = b.CreateCall(ms.tile_cpu_check_options(), {fn->getArg(0), ms.c_string(entry_name)});
        auto* fail = llvm::BasicBlock::Create(ctx, "bad_options", fn);
        auto* cont = llvm::BasicBlock::Create(ctx, "options_ok", fn);
        b.CreateCondBr(b.CreateICmpEQ(st, b.getInt32(0)), cont, fail, llvm::MDBuilder(ctx).createLikelyBranchWeights());
        b.SetInsertPoint(fail);
        b.CreateRet(st);
        b.SetInsertPoint(cont);
    }
    // Then the arguments, as every entry point checks them (entry_checks.h).
    CheckedArguments checked = emit_argument_checks(ms, fl, fn, f, entry_name, EntryCheckRules{});
    const std::vector<llvm::Value*>& arg_values = checked.tensors;
    llvm::Value* const* grid = checked.grid;

    return_if_empty_grid(b, fn, checked.empty_grid);

    llvm::Value* block_fn = choose_block_function(ms, b, fn, entry_name, blocks);

    // Pack the arguments and launch.
    auto* args = b.CreateAlloca(layout.type, nullptr, "args");
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        llvm::Value* v = p.kind == ParamKind::Tensor ? arg_values[i] : fl.expr(p.var);
        b.CreateStore(v, b.CreateStructGEP(layout.type, args, static_cast<unsigned>(i)));
    }
    b.CreateStore(llvm::ConstantPointerNull::get(ptr),
                  b.CreateStructGEP(layout.type, args, layout.error_msg));
    b.CreateStore(b.getInt32(kLaunchError), b.CreateStructGEP(layout.type, args, layout.error_status));
    llvm::Value* status = b.CreateCall(ms.tile_cpu_launch(),
                                       {fn->getArg(0), grid[0], grid[1], grid[2], block_fn, args}, "status");
    auto* launched = llvm::BasicBlock::Create(ctx, "launched", fn);
    auto* failed = llvm::BasicBlock::Create(ctx, "launch_failed", fn);
    b.CreateCondBr(b.CreateICmpEQ(status, b.getInt32(0)), launched, failed);
    b.SetInsertPoint(failed);
    b.CreateRet(status);
    // A block that failed (assert, out of memory) left its message.
    b.SetInsertPoint(launched);
    llvm::Value* msg = b.CreateLoad(ptr, b.CreateStructGEP(layout.type, args, layout.error_msg));
    auto* block_failed = llvm::BasicBlock::Create(ctx, "block_failed", fn);
    auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
    b.CreateCondBr(b.CreateIsNull(msg), done, block_failed);
    b.SetInsertPoint(block_failed);
    llvm::Value* st = b.CreateLoad(i32, b.CreateStructGEP(layout.type, args, layout.error_status));
    b.CreateRet(b.CreateCall(ms.tile_set_error(), {st, ms.c_string("%s"), msg}));
    b.SetInsertPoint(done);
    b.CreateRet(b.getInt32(0));
}

}  // namespace

void emit_cpu_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name) {
    ArgsLayout layout = make_args_layout(ms, f);
    std::vector<BlockVariant> blocks;
    if (ms.cpu_variants.empty()) {
        blocks.push_back({emit_block_function(ms, f, layout), 0, ""});
    } else {
        // One block function per CPU variant, each lowered with that CPU's vector width
        // and features; the entry point itself stays baseline code.
        const ModuleState::CpuShape baseline = ms.cpu;
        for (const ModuleState::CpuVariant& v : ms.cpu_variants) {
            ms.cpu = v.shape;
            blocks.push_back({emit_block_function(ms, f, layout), v.level, v.name});
        }
        ms.cpu = baseline;
    }
    emit_entry_function(ms, f, entry_name, layout, blocks);
}

}  // namespace tilec::codegen
