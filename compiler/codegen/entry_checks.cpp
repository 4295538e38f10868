// The signature and argument checks every generated C entry point shares (entry_checks.h):
// one emitter, so NAME_cpu, NAME_cuda and NAME_hip cannot drift apart.
#include "codegen/entry_checks.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "ir/printer.h"

namespace tilec::codegen {

using ir::DataType;
using ir::ParamKind;

namespace {

constexpr int kInvalidArgument = 1;  // TILE_ERROR_INVALID_ARGUMENT (tile/runtime.h; ABI)

// The C type of a scalar parameter as an LLVM argument type (c_scalar_type of
// c_header.h): bool as int32, i4 as int8, narrow floats as float (rounded by the callee).
llvm::Type* entry_arg_type(llvm::LLVMContext& ctx, DataType t) {
    if (t.is_bool()) return llvm::Type::getInt32Ty(ctx);
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits == 4 ? 8 : t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    return llvm::Type::getFloatTy(ctx);
}

// The floor divisions inside a shape expression, innermost first (so each one's operands
// are checked before they are used).
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

}  // namespace

std::string escape_percent(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '%') out += '%';
        out += c;
    }
    return out;
}

llvm::Function* declare_entry_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name,
                                       const std::string& first_name) {
    auto& ctx = ms.ctx;
    auto* ptr = llvm::PointerType::get(ctx, 0);
    std::vector<llvm::Type*> arg_types = {ptr};
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor)
            arg_types.push_back(ptr);
        else if (p.kind == ParamKind::Size)
            arg_types.push_back(llvm::Type::getInt64Ty(ctx));
        else
            arg_types.push_back(entry_arg_type(ctx, p.var->type));
    }
    auto* fty = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), arg_types, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, entry_name, ms.module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->getArg(0)->setName(first_name);
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
    return fn;
}

CheckedArguments emit_argument_checks(ModuleState& ms, FunctionLowering& fl, llvm::Function* fn,
                                      const ir::PrimFunc& f, const std::string& entry_name,
                                      const EntryCheckRules& rules) {
    auto& ctx = ms.ctx;
    auto& b = fl.builder();
    const std::string prefix = escape_percent(entry_name) + ": ";
    // if (!ok) return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "<entry>: " fmt, values...);
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

    CheckedArguments out;
    out.tensors.assign(f.params.size(), nullptr);
    // Sizes and scalars as the shape and grid expressions (and the CPU body) see them.
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
                v = fl.convert(a, DataType::f32(), t);  // rounds to t
            fl.bind(p.var, v);
        } else {
            out.tensors[i] = a;
        }
    }
    // Dimensions computed from sizes: every division exact (by a positive divisor), the
    // result >= 0.
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
    // Tensors: NULL only without elements.
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        llvm::Value* empty = b.getFalse();
        for (auto* d : dims[i]) empty = b.CreateOr(empty, b.CreateICmpEQ(d, b.getInt64(0)));
        check(b.CreateOr(b.CreateIsNotNull(out.tensors[i]), empty), "tensor " + p.buffer->name + " is NULL", {});
    }
    // Aligned as the kernel assumes (a GPU kernel's vector loads would fault otherwise).
    if (rules.tensor_alignment > 0) {
        auto* intptr = ms.module.getDataLayout().getIntPtrType(ctx);
        for (size_t i = 0; i < f.params.size(); ++i) {
            auto& p = f.params[i];
            if (p.kind != ParamKind::Tensor) continue;
            llvm::Value* low = b.CreateAnd(b.CreatePtrToInt(out.tensors[i], intptr),
                                           llvm::ConstantInt::get(intptr, rules.tensor_alignment - 1));
            check(b.CreateICmpEQ(low, llvm::ConstantInt::get(intptr, 0)),
                  "tensor " + p.buffer->name + " = %p is not " + std::to_string(rules.tensor_alignment) +
                      "-byte aligned" + rules.alignment_why,
                  {out.tensors[i]});
        }
    }
    // The grid: no negative extent, and none beyond what the API launches.
    static const char* axis[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d) out.grid[d] = b.getInt64(1);
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) {
        out.grid[d] = fl.convert(fl.expr(f.grid[d]), f.grid[d]->type, DataType::i64());
        std::string what =
            std::string("the grid's ") + axis[d] + " extent (" + escape_percent(ir::print(f.grid[d])) + ") = %lld";
        check(b.CreateICmpSGE(out.grid[d], b.getInt64(0)), what + " is negative", {out.grid[d]});
        if (int64_t limit = rules.grid_limit[d]; limit > 0)
            check(b.CreateICmpSLE(out.grid[d], b.getInt64(limit)),
                  what + " exceeds " + rules.api + "'s limit of " + std::to_string(limit) + " blocks", {out.grid[d]});
    }
    out.empty_grid = b.getFalse();
    for (auto* g : out.grid) out.empty_grid = b.CreateOr(out.empty_grid, b.CreateICmpEQ(g, b.getInt64(0)));
    return out;
}

void return_if_empty_grid(llvm::IRBuilderBase& b, llvm::Function* fn, llvm::Value* empty_grid) {
    auto& ctx = fn->getContext();
    auto* nothing = llvm::BasicBlock::Create(ctx, "empty_grid", fn);
    auto* launch = llvm::BasicBlock::Create(ctx, "launch", fn);
    b.CreateCondBr(empty_grid, nothing, launch);
    b.SetInsertPoint(nothing);
    b.CreateRet(b.getInt32(0));
    b.SetInsertPoint(launch);
}

}  // namespace tilec::codegen
