// The two functions of each export on the CPU: the block function (one block of the
// grid) and the C entry point (argument checks, argument struct, tile_cpu_launch).
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/c_header.h"
#include "codegen/cpu_lowering.h"
#include "ir/printer.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;
using ir::ParamKind;

namespace {

// tile_status values (tile/runtime.h; part of its ABI).
constexpr int kInvalidArgument = 1;
constexpr int kOutOfMemory = 2;
constexpr int kLaunchError = 6;  // a failed assert in a block

std::string escape_percent(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '%') out += '%';
        out += c;
    }
    return out;
}

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

// The C type of a scalar parameter as an LLVM argument type (c_scalar_type in LLVM).
llvm::Type* c_arg_type(llvm::LLVMContext& ctx, DataType t) {
    if (t.is_bool()) return llvm::Type::getInt32Ty(ctx);  // int32_t
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits == 4 ? 8 : t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    return llvm::Type::getFloatTy(ctx);  // f32 and the narrow floats
}

llvm::Function* emit_block_function(ModuleState& ms, const ir::PrimFunc& f, const ArgsLayout& layout) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64, i64}, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, f.name + "_block", ms.module);
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

    fl.stmt(f.body);
    b.CreateBr(fl.exit_block);

    b.SetInsertPoint(fl.exit_block);
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
        auto* cas = b.CreateAtomicCmpXchg(fl.error_slot, null, ms.c_string(msg), llvm::MaybeAlign(),
                                          llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
        auto* won = llvm::BasicBlock::Create(ctx, "oom.first", fn);
        b.CreateCondBr(b.CreateExtractValue(cas, 1), won, fl.exit_block);
        b.SetInsertPoint(won);
        b.CreateStore(b.getInt32(kOutOfMemory), field(layout.error_status));
        b.CreateBr(fl.exit_block);
    }
    return fn;
}

// Collects the floor divisions inside a shape expression, innermost first (so each
// one's operands are checked before they are used): each must divide evenly.
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

void emit_entry_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name,
                         const ArgsLayout& layout, llvm::Function* block_fn) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    std::vector<llvm::Type*> arg_types = {ptr};
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor)
            arg_types.push_back(ptr);
        else if (p.kind == ParamKind::Size)
            arg_types.push_back(llvm::Type::getInt64Ty(ctx));
        else
            arg_types.push_back(c_arg_type(ctx, p.var->type));
    }
    auto* fty = llvm::FunctionType::get(i32, arg_types, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, entry_name, ms.module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->getArg(0)->setName("opt");
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        auto* arg = fn->getArg(static_cast<unsigned>(i + 1));
        arg->setName(p.kind == ParamKind::Tensor ? p.buffer->name : p.var->name);
        // The C ABI widens small integers at the call (as clang marks them).
        if (p.kind == ParamKind::Scalar && arg->getType()->isIntegerTy() &&
            arg->getType()->getIntegerBitWidth() < 32)
            fn->addParamAttr(static_cast<unsigned>(i + 1),
                             p.var->type.is_int() ? llvm::Attribute::SExt : llvm::Attribute::ZExt);
    }

    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    llvm::IRBuilder<> b(entry);
    FunctionLowering fl(ms, fn, b);
    std::string prefix = escape_percent(entry_name) + ": ";
    // if (!ok) return tile_set_error(status, fmt, values...);
    auto check = [&](llvm::Value* ok, int status, const std::string& fmt, std::vector<llvm::Value*> values) {
        auto* fail = llvm::BasicBlock::Create(ctx, "bad_arg", fn);
        auto* cont = llvm::BasicBlock::Create(ctx, "ok", fn);
        b.CreateCondBr(ok, cont, fail, llvm::MDBuilder(ctx).createLikelyBranchWeights());
        b.SetInsertPoint(fail);
        std::vector<llvm::Value*> call_args = {b.getInt32(status), ms.c_string(prefix + fmt)};
        call_args.insert(call_args.end(), values.begin(), values.end());
        b.CreateRet(b.CreateCall(ms.tile_set_error(), call_args));
        b.SetInsertPoint(cont);
    };

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

    // Sizes and scalars as the body sees them.
    std::vector<llvm::Value*> arg_values(f.params.size(), nullptr);
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        llvm::Value* a = fn->getArg(static_cast<unsigned>(i + 1));
        if (p.kind == ParamKind::Size) {
            check(b.CreateICmpSGE(a, b.getInt64(0)), kInvalidArgument,
                  "size " + p.var->name + " = %lld is negative", {a});
            fl.bind(p.var, a);
        } else if (p.kind == ParamKind::Scalar) {
            DataType t = p.var->type;
            llvm::Value* v = a;
            if (t.is_bool())
                v = b.CreateICmpNE(a, b.getInt32(0));
            else if (t.bits == 4)
                v = b.CreateTrunc(a, reg_type(ctx, t));
            else if (is_narrow_float(t))
                v = fl.convert(a, DataType::f32(), t);  // rounds to t
            fl.bind(p.var, v);
        }
        arg_values[i] = p.kind == ParamKind::Tensor ? a : nullptr;
    }
    // Dimensions computed from sizes: every division must be exact (by a positive
    // divisor), and the result >= 0.
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
                    check(b.CreateICmpEQ(b.CreateSRem(num, b.getInt64(*c)), b.getInt64(0)), kInvalidArgument,
                          num_text + " = %lld must be a multiple of " + std::to_string(*c) + why, {num});
                    continue;
                }
                std::string den_text = escape_percent(ir::print(div->b));
                llvm::Value* den = fl.convert(fl.expr(div->b), div->b->type, DataType::i64());
                check(b.CreateICmpSGT(den, b.getInt64(0)), kInvalidArgument,
                      den_text + " = %lld must be positive" + why, {den});
                check(b.CreateICmpEQ(b.CreateSRem(num, den), b.getInt64(0)), kInvalidArgument,
                      num_text + " = %lld must be a multiple of " + den_text + " = %lld" + why, {num, den});
            }
            llvm::Value* v = fl.convert(fl.expr(e), e->type, DataType::i64());
            if (derived)
                check(b.CreateICmpSGE(v, b.getInt64(0)), kInvalidArgument,
                      escape_percent(ir::print(e)) + " = %lld is negative" + why, {v});
            dims[i].push_back(v);
        }
    }
    // Tensors: NULL only for a tensor without elements.
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        llvm::Value* empty = b.getFalse();
        for (auto* d : dims[i]) empty = b.CreateOr(empty, b.CreateICmpEQ(d, b.getInt64(0)));
        check(b.CreateOr(b.CreateIsNotNull(arg_values[i]), empty), kInvalidArgument,
              "tensor " + p.buffer->name + " is NULL", {});
    }
    // The grid.
    llvm::Value* grid[3] = {b.getInt64(1), b.getInt64(1), b.getInt64(1)};
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) {
        grid[d] = fl.convert(fl.expr(f.grid[d]), f.grid[d]->type, DataType::i64());
        const char* axis[3] = {"x", "y", "z"};
        check(b.CreateICmpSGE(grid[d], b.getInt64(0)), kInvalidArgument,
              std::string("the grid's ") + axis[d] + " extent (" + escape_percent(ir::print(f.grid[d])) +
                  ") = %lld is negative",
              {grid[d]});
    }

    // An empty grid runs nothing (after the checks above).
    llvm::Value* empty_grid = b.getFalse();
    for (auto* g : grid) empty_grid = b.CreateOr(empty_grid, b.CreateICmpEQ(g, b.getInt64(0)));
    auto* nothing = llvm::BasicBlock::Create(ctx, "empty_grid", fn);
    auto* launch = llvm::BasicBlock::Create(ctx, "launch", fn);
    b.CreateCondBr(empty_grid, nothing, launch);
    b.SetInsertPoint(nothing);
    b.CreateRet(b.getInt32(0));
    b.SetInsertPoint(launch);

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
    llvm::Function* block_fn = emit_block_function(ms, f, layout);
    emit_entry_function(ms, f, entry_name, layout, block_fn);
}

}  // namespace tilec::codegen
