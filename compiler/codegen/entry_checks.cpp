// The signature and argument checks every generated C entry point shares (entry_checks.h):
// one emitter, so NAME_cpu, NAME_cuda and NAME_hip cannot drift apart.
#include "codegen/entry_checks.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/int_arith.h"
#include "ir/printer.h"
#include "ir/size_rules.h"
#include "ir/visitor.h"

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

// Size arithmetic as an entry point evaluates it: in i64, every +, - and * checked for
// overflow, every floor division and modulo for a zero divisor. The body's lowering of
// the same expressions marks index arithmetic nsw (ir.h: it never overflows), so sizes
// whose derived dimensions or grid overflow must be refused before anything uses them:
// a wrapped value would not even be reliably wrong. Operations that shapes and grids do
// not use in practice go through the ordinary lowering.
class SizeArithmetic {
public:
    SizeArithmetic(FunctionLowering& fl) : fl_(fl), b_(fl.builder()) {}

    // The value, and whether some step overflowed or divided by zero (i1 each).
    struct Result {
        llvm::Value* value;
        llvm::Value* overflow;
        llvm::Value* zero_divisor;
    };
    Result eval(const ir::Expr& e) {
        overflow_ = b_.getFalse();
        zero_divisor_ = b_.getFalse();
        llvm::Value* v = value(e);
        return {v, overflow_, zero_divisor_};
    }

private:
    llvm::Value* value(const ir::Expr& e) {
        auto* bin = e->as<ir::BinaryNode>();
        if (bin && e->type.is_integer() && e->type.bits == 64) {
            llvm::Value* a = value(bin->a);
            llvm::Value* c = value(bin->b);
            if (a->getType() == c->getType()) {
                switch (bin->op) {
                case ir::BinaryOp::Add: return with_overflow(llvm::Intrinsic::sadd_with_overflow, a, c);
                case ir::BinaryOp::Sub: return with_overflow(llvm::Intrinsic::ssub_with_overflow, a, c);
                case ir::BinaryOp::Mul: return with_overflow(llvm::Intrinsic::smul_with_overflow, a, c);
                case ir::BinaryOp::FloorDiv:
                case ir::BinaryOp::FloorMod: {
                    llvm::Value* zero = b_.CreateICmpEQ(c, b_.getInt64(0));
                    zero_divisor_ = b_.CreateOr(zero_divisor_, zero);
                    llvm::Value* safe = b_.CreateSelect(zero, b_.getInt64(1), c);
                    if (!e->type.is_int())
                        return bin->op == ir::BinaryOp::FloorDiv ? b_.CreateUDiv(a, safe)
                                                                 : b_.CreateURem(a, safe);
                    // INT64_MIN // -1 is the one quotient out of range.
                    if (bin->op == ir::BinaryOp::FloorDiv)
                        overflow_ =
                            b_.CreateOr(overflow_, b_.CreateAnd(b_.CreateICmpEQ(a, b_.getInt64(INT64_MIN)),
                                                                b_.CreateICmpEQ(safe, b_.getInt64(-1))));
                    return signed_floor_div_mod(b_, a, safe, bin->op == ir::BinaryOp::FloorDiv);
                }
                default: break;
                }
            }
        }
        return fl_.expr(e);
    }
    llvm::Value* with_overflow(llvm::Intrinsic::ID id, llvm::Value* a, llvm::Value* c) {
        llvm::Value* pair = b_.CreateBinaryIntrinsic(id, a, c);
        overflow_ = b_.CreateOr(overflow_, b_.CreateExtractValue(pair, 1));
        return b_.CreateExtractValue(pair, 0);
    }

    FunctionLowering& fl_;
    llvm::IRBuilderBase& b_;
    llvm::Value* overflow_ = nullptr;
    llvm::Value* zero_divisor_ = nullptr;
};

// Whether the body prints or asserts: then a call with no output elements still has
// something to do.
bool prints_or_asserts(const ir::Stmt& body) {
    struct Find : ir::IRVisitor {
        bool found = false;
        void visit_print(const ir::PrintNode* op) override {
            found = true;
            ir::IRVisitor::visit_print(op);
        }
        void visit_assert(const ir::AssertNode* op) override {
            found = true;
            ir::IRVisitor::visit_assert(op);
        }
    } find;
    find.visit(body);
    return find.found;
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
    SizeArithmetic sizes(fl);
    // A size expression's value, refused where its arithmetic leaves int64.
    auto checked_size = [&](const ir::Expr& e, const std::string& what, const std::string& why) {
        SizeArithmetic::Result r = sizes.eval(e);
        check(b.CreateNot(r.zero_divisor), what + " divides by zero" + why, {});
        check(b.CreateNot(r.overflow), what + " overflows int64" + why, {});
        return fl.convert(r.value, e->type, DataType::i64());
    };
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
            if (derived) divs = ir::floor_divisions(e);
            for (auto* div : divs) {
                std::string num_text = escape_percent(ir::print(div->a));
                llvm::Value* num = checked_size(div->a, num_text, why);
                if (auto c = ir::as_const_int(div->b)) {
                    check(b.CreateICmpEQ(b.CreateSRem(num, b.getInt64(*c)), b.getInt64(0)),
                          num_text + " = %lld must be a multiple of " + std::to_string(*c) + why, {num});
                    continue;
                }
                std::string den_text = escape_percent(ir::print(div->b));
                llvm::Value* den = checked_size(div->b, den_text, why);
                check(b.CreateICmpSGT(den, b.getInt64(0)), den_text + " = %lld must be positive" + why,
                      {den});
                check(b.CreateICmpEQ(b.CreateSRem(num, den), b.getInt64(0)),
                      num_text + " = %lld must be a multiple of " + den_text + " = %lld" + why, {num, den});
            }
            llvm::Value* v = derived ? checked_size(e, escape_percent(ir::print(e)), why)
                                     : fl.convert(fl.expr(e), e->type, DataType::i64());
            if (derived)
                check(b.CreateICmpSGE(v, b.getInt64(0)),
                      escape_percent(ir::print(e)) + " = %lld is negative" + why, {v});
            dims[i].push_back(v);
        }
    }
    // Tensors: NULL only without elements.
    std::vector<llvm::Value*> empty_tensor(f.params.size(), nullptr);
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        llvm::Value* empty = b.getFalse();
        for (auto* d : dims[i]) empty = b.CreateOr(empty, b.CreateICmpEQ(d, b.getInt64(0)));
        empty_tensor[i] = empty;
        check(b.CreateOr(b.CreateIsNotNull(out.tensors[i]), empty), "tensor " + p.buffer->name + " is NULL",
              {});
    }
    // Element counts: a tensor's bytes fit in int64 (ptrdiff_t), so that no index or
    // offset into it overflows. Partial products may overflow on the way to a zero.
    for (size_t i = 0; i < f.params.size(); ++i) {
        auto& p = f.params[i];
        if (p.kind != ParamKind::Tensor) continue;
        int64_t elem_bytes = std::max(1, p.buffer->dtype.bits / 8);
        llvm::Value* bytes = b.getInt64(elem_bytes);
        llvm::Value* overflow = b.getFalse();
        std::string shape;
        for (auto* d : dims[i]) {
            llvm::Value* pair = b.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, bytes, d);
            overflow = b.CreateOr(overflow, b.CreateExtractValue(pair, 1));
            bytes = b.CreateExtractValue(pair, 0);
            shape += shape.empty() ? "%lld" : ", %lld";
        }
        llvm::Value* empty = empty_tensor[i];
        check(b.CreateOr(b.CreateNot(overflow), empty),
              "tensor " + p.buffer->name + " [" + shape + "] of " + p.buffer->dtype.str() +
                  " has more bytes than int64 can count",
              dims[i]);
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
    // A call whose writable tensors are all empty has nothing to write: without a print
    // or an assert in the body, running its blocks (2^48 of them for softmax with M =
    // 2^50, N = 0) could change nothing, so nothing runs.
    llvm::Value* nothing_to_write = b.getFalse();
    if (!prints_or_asserts(f.body)) {
        nothing_to_write = b.getTrue();
        for (size_t i = 0; i < f.params.size(); ++i)
            if (f.params[i].kind == ParamKind::Tensor && f.params[i].buffer->access != ir::Access::In)
                nothing_to_write = b.CreateAnd(nothing_to_write, empty_tensor[i]);
    }
    // The grid: no negative extent, and none beyond what the API launches.
    static const char* axis[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d) out.grid[d] = b.getInt64(1);
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) {
        std::string extent =
            std::string("the grid's ") + axis[d] + " extent (" + escape_percent(ir::print(f.grid[d])) + ")";
        out.grid[d] = checked_size(f.grid[d], extent, "");
        std::string what = extent + " = %lld";
        check(b.CreateICmpSGE(out.grid[d], b.getInt64(0)), what + " is negative", {out.grid[d]});
        if (int64_t limit = rules.grid_limit[d]; limit > 0)
            check(b.CreateOr(nothing_to_write, b.CreateICmpSLE(out.grid[d], b.getInt64(limit))),
                  what + " exceeds " + rules.api + "'s limit of " + std::to_string(limit) + " blocks",
                  {out.grid[d]});
    }
    out.empty_grid = nothing_to_write;
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
