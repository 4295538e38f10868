// GpuLowering's expressions (gpu_lowering.h): constants, variables and hardware indices,
// arithmetic, selects that may load, warp shuffles and math calls. Its own file because
// expressions are most of the lowering and change for reasons the statements don't.
#include "codegen/gpu_lowering.h"
#include "codegen/int_arith.h"
#include "scalar/float_formats.h"

#include <llvm/Analysis/ConstantFolding.h>

namespace tilec::codegen::gpu {

llvm::Value* GpuLowering::expr(const ir::Expr& e) {
    switch (e->kind) {
    case ir::ExprKind::IntImm: {
        auto* n = e->as<ir::IntImmNode>();
        return llvm::ConstantInt::get(reg_type(e->type), static_cast<uint64_t>(n->value), e->type.is_int());
    }
    case ir::ExprKind::FloatImm: {
        double v = e->as<ir::FloatImmNode>()->value;
        if (is_f8(e->type)) return llvm::ConstantFP::get(b_.getFloatTy(), scalar::round_to_float_type(v, e->type));
        if (is_narrow(e->type)) {
            // A literal of a narrow type is its rounded value.
            auto* c = llvm::ConstantFP::get(storage_type(e->type), v);
            return llvm::ConstantFoldCastOperand(llvm::Instruction::FPExt, c, b_.getFloatTy(), m_.getDataLayout());
        }
        return llvm::ConstantFP::get(reg_type(e->type), v);
    }
    case ir::ExprKind::StringImm: TILEC_ICE(who_ + ": string expression");
    case ir::ExprKind::Var: return var(*e->as<ir::VarNode>());
    case ir::ExprKind::Binary: return binary(*e->as<ir::BinaryNode>());
    case ir::ExprKind::Unary: {
        auto* u = e->as<ir::UnaryNode>();
        llvm::Value* a = expr(u->a);
        switch (u->op) {
        case ir::UnaryOp::Neg: return e->type.is_float() ? b_.CreateFNeg(a) : b_.CreateNeg(a);
        case ir::UnaryOp::Not: return b_.CreateNot(a);
        case ir::UnaryOp::BitNot: return b_.CreateNot(a);
        }
        TILEC_ICE(who_ + ": unary op");
    }
    case ir::ExprKind::Select: {
        auto* s = e->as<ir::SelectNode>();
        llvm::Value* c = expr(s->cond);
        if (!has_load(s->t) && !has_load(s->f)) return b_.CreateSelect(c, expr(s->t), expr(s->f));
        // A side that loads may be out of bounds when not chosen (`i < N ? A[i] : 0`).
        return branch(c, [&] { return expr(s->t); }, [&] { return expr(s->f); }, reg_type(e->type));
    }
    case ir::ExprKind::Cast: {
        auto* c = e->as<ir::CastNode>();
        return convert(expr(c->value), c->value->type, e->type);
    }
    case ir::ExprKind::Call: return call(*e->as<ir::CallNode>());
    case ir::ExprKind::Load: {
        auto* l = e->as<ir::LoadNode>();
        auto& g = buffer(l->buffer);
        auto* p = element_ptr(g, l->indices);
        return from_storage(b_.CreateLoad(g.elem, p), l->buffer->dtype);
    }
    }
    TILEC_ICE(who_ + ": unknown expression");
}

bool GpuLowering::has_load(const ir::Expr& e) {
    bool found = false;
    std::function<void(const ir::Expr&)> walk = [&](const ir::Expr& x) {
        if (!x || found) return;
        switch (x->kind) {
        case ir::ExprKind::Load: found = true; return;
        case ir::ExprKind::Binary: walk(x->as<ir::BinaryNode>()->a); walk(x->as<ir::BinaryNode>()->b); return;
        case ir::ExprKind::Unary: walk(x->as<ir::UnaryNode>()->a); return;
        case ir::ExprKind::Select: {
            auto* s = x->as<ir::SelectNode>();
            walk(s->cond), walk(s->t), walk(s->f);
            return;
        }
        case ir::ExprKind::Cast: walk(x->as<ir::CastNode>()->value); return;
        case ir::ExprKind::Call:
            for (auto& a : x->as<ir::CallNode>()->args) walk(a);
            return;
        default: return;
        }
    };
    walk(e);
    return found;
}

llvm::Value* GpuLowering::branch(llvm::Value* cond, const std::function<llvm::Value*()>& t,
                                 const std::function<llvm::Value*()>& f, llvm::Type* type) {
    auto* tb = llvm::BasicBlock::Create(ctx_, "sel.t", fn_);
    auto* fb = llvm::BasicBlock::Create(ctx_, "sel.f", fn_);
    auto* jb = llvm::BasicBlock::Create(ctx_, "sel.end", fn_);
    b_.CreateCondBr(cond, tb, fb);
    b_.SetInsertPoint(tb);
    llvm::Value* tv = t();
    auto* tend = b_.GetInsertBlock();
    b_.CreateBr(jb);
    b_.SetInsertPoint(fb);
    llvm::Value* fv = f();
    auto* fend = b_.GetInsertBlock();
    b_.CreateBr(jb);
    b_.SetInsertPoint(jb);
    auto* phi = b_.CreatePHI(type, 2);
    phi->addIncoming(tv, tend);
    phi->addIncoming(fv, fend);
    return phi;
}

llvm::Value* GpuLowering::var(const ir::VarNode& v) {
    if (v.var_kind == ir::VarKind::ThreadIdx || v.var_kind == ir::VarKind::BlockIdx) {
        if (v.dim < 0 || v.dim > 2) TILEC_ICE(who_ + ": hardware index of dimension " + std::to_string(v.dim));
        // Read once, in the entry block, so every use shares one register.
        auto key = std::make_pair(v.var_kind == ir::VarKind::ThreadIdx, v.dim);
        auto& slot = sregs_[key.first * 3 + key.second];
        if (!slot) {
            llvm::IRBuilder<> eb(alloca_point_);
            slot = eb.CreateZExt(hooks_.hardware_index(eb, v.var_kind == ir::VarKind::ThreadIdx, v.dim), reg_type(v.type),
                                v.name);
        }
        return slot;
    }
    auto it = vars_.find(&v);
    if (it == vars_.end()) TILEC_ICE(who_ + ": variable '" + v.name + "' has no value");
    return it->second;
}

llvm::Value* GpuLowering::binary(const ir::BinaryNode& e) {
    using ir::BinaryOp;
    DataType t = e.a->type;
    if (e.op == BinaryOp::And || e.op == BinaryOp::Or) {
        if (t.is_bool()) {
            // Short-circuit: the right side may load what the left side guards.
            llvm::Value* a = expr(e.a);
            if (!has_load(e.b)) return e.op == BinaryOp::And ? b_.CreateAnd(a, expr(e.b)) : b_.CreateOr(a, expr(e.b));
            if (e.op == BinaryOp::And) return branch(a, [&] { return expr(e.b); }, [&] { return b_.getFalse(); }, b_.getInt1Ty());
            return branch(a, [&] { return b_.getTrue(); }, [&] { return expr(e.b); }, b_.getInt1Ty());
        }
    }
    llvm::Value* a = expr(e.a);
    llvm::Value* b = expr(e.b);
    return t.is_float() ? binary_value(e, a, b) : arith(e, a, b);
}

llvm::Value* GpuLowering::arith(const ir::BinaryNode& e, llvm::Value* a, llvm::Value* b) {
    llvm::BasicBlock* block = b_.GetInsertBlock();
    if (b_.GetInsertPoint() != block->end()) return binary_value(e, a, b);
    DataType t = e.a->type;
    ArithKey key{int(e.op), int(t.kind), t.bits, t.lanes, a, b};
    auto it = arith_.find(key);
    if (it != arith_.end()) {
        auto* inst = llvm::dyn_cast<llvm::Instruction>(it->second);
        if (!inst || inst->getParent() == block) return it->second;
    }
    llvm::Value* v = binary_value(e, a, b);
    if (b_.GetInsertBlock() == block) arith_[key] = v;
    return v;
}

llvm::Value* GpuLowering::binary_value(const ir::BinaryNode& e, llvm::Value* a, llvm::Value* b) {
    using ir::BinaryOp;
    DataType t = e.a->type;
    bool is_float = t.is_float();
    bool is_signed = t.is_int();
    // Index arithmetic never overflows (ir.h); nsw lets LLVM see adjacent addresses.
    bool nsw = t == DataType::index();
    switch (e.op) {
    case BinaryOp::Add: return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, nsw);
    case BinaryOp::Sub: return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, nsw);
    case BinaryOp::Mul: return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, nsw);
    case BinaryOp::Div: return b_.CreateFDiv(a, b);
    case BinaryOp::Mod: return b_.CreateFRem(a, b);
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
        if (!is_signed) return e.op == BinaryOp::FloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
        return signed_floor_div_mod(b_, a, b, e.op == BinaryOp::FloorDiv);
    }
    case BinaryOp::Min:
    case BinaryOp::Max: {
        bool mn = e.op == BinaryOp::Min;
        if (is_float) return b_.CreateBinaryIntrinsic(mn ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum, a, b);
        auto id = is_signed ? (mn ? llvm::Intrinsic::smin : llvm::Intrinsic::smax)
                            : (mn ? llvm::Intrinsic::umin : llvm::Intrinsic::umax);
        return b_.CreateBinaryIntrinsic(id, a, b);
    }
    case BinaryOp::EQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case BinaryOp::NE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case BinaryOp::LT: return is_float ? b_.CreateFCmpOLT(a, b) : (is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b));
    case BinaryOp::LE: return is_float ? b_.CreateFCmpOLE(a, b) : (is_signed ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b));
    case BinaryOp::GT: return is_float ? b_.CreateFCmpOGT(a, b) : (is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b));
    case BinaryOp::GE: return is_float ? b_.CreateFCmpOGE(a, b) : (is_signed ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b));
    case BinaryOp::And:
    case BinaryOp::BitAnd: return b_.CreateAnd(a, b);
    case BinaryOp::Or:
    case BinaryOp::BitOr: return b_.CreateOr(a, b);
    case BinaryOp::BitXor: return b_.CreateXor(a, b);
    case BinaryOp::Shl: return b_.CreateShl(a, b);
    case BinaryOp::Shr: return is_signed ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
    }
    TILEC_ICE(who_ + ": binary op");
}

llvm::Value* GpuLowering::shuffle(const ir::CallNode& e) {
    if (e.args.size() != 2) TILEC_ICE(who_ + ": " + ir::call_op_name(e.op) + " without its two operands");
    llvm::Value* v = expr(e.args[0]);
    llvm::Value* lane = expr(e.args[1]);
    auto* i32 = b_.getInt32Ty();
    auto* i64 = b_.getInt64Ty();
    auto one = [&](llvm::Value* x) { return hooks_.shuffle_i32(b_, e.op, x, lane); };
    llvm::Type* vt = v->getType();
    if (vt->isFloatTy()) return b_.CreateBitCast(one(b_.CreateBitCast(v, i32)), vt);
    if (vt->isIntegerTy() && vt->getIntegerBitWidth() < 32) return b_.CreateTrunc(one(b_.CreateZExt(v, i32)), vt);
    if (vt->isIntegerTy(32)) return one(v);
    if (!vt->isDoubleTy() && !vt->isIntegerTy(64))
        TILEC_ICE(who_ + ": " + ir::call_op_name(e.op) + " of " + e.args[0]->type.str());
    llvm::Value* u = vt->isDoubleTy() ? b_.CreateBitCast(v, i64) : v;
    llvm::Value* lo = one(b_.CreateTrunc(u, i32));
    llvm::Value* hi = one(b_.CreateTrunc(b_.CreateLShr(u, 32), i32));
    llvm::Value* r = b_.CreateOr(b_.CreateZExt(lo, i64), b_.CreateShl(b_.CreateZExt(hi, i64), 32));
    return vt->isDoubleTy() ? b_.CreateBitCast(r, vt) : r;
}

llvm::Value* GpuLowering::call(const ir::CallNode& e) {
    if (ir::is_warp_shuffle(e.op)) return shuffle(e);
    std::vector<llvm::Value*> args;
    for (auto& a : e.args) args.push_back(expr(a));
    DataType t = e.type;
    bool is_float = t.is_float();
    if (e.op == ir::CallOp::Abs) {
        if (is_float) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args.at(0));
        if (t.is_uint()) return args.at(0);
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args.at(0), b_.getFalse());
    }
    if (e.op == ir::CallOp::Floor || e.op == ir::CallOp::Ceil) {
        if (!is_float) return args.at(0);
        return b_.CreateUnaryIntrinsic(e.op == ir::CallOp::Floor ? llvm::Intrinsic::floor : llvm::Intrinsic::ceil,
                                       args.at(0));
    }
    llvm::Value* x = args.at(0);
    if (e.op == ir::CallOp::Sqrt) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    if (e.op == ir::CallOp::Rsqrt) {
        auto* one = llvm::ConstantFP::get(x->getType(), 1.0);
        return b_.CreateFDiv(one, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    }
    if (!x->getType()->isFloatTy())
        TILEC_ICE((who_ + ": ") + ir::call_op_name(e.op) + " of " + t.str() +
                  " (only f32 and narrower)");
    auto f = [&](double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); };
    auto ex2 = [&](llvm::Value* v) { return hooks_.exp2(b_, v); };
    auto lg2 = [&](llvm::Value* v) { return hooks_.log2(b_, v); };
    auto exp = [&](llvm::Value* v) { return ex2(b_.CreateFMul(v, f(1.4426950408889634))); };
    switch (e.op) {
    case ir::CallOp::Exp: return exp(x);
    case ir::CallOp::Exp2: return ex2(x);
    case ir::CallOp::Log: return b_.CreateFMul(lg2(x), f(0.6931471805599453));
    case ir::CallOp::Log2: return lg2(x);
    case ir::CallOp::Pow: return ex2(b_.CreateFMul(args.at(1), lg2(x)));
    case ir::CallOp::Sigmoid: return b_.CreateFDiv(f(1.0), b_.CreateFAdd(f(1.0), exp(b_.CreateFNeg(x))));
    case ir::CallOp::Tanh: {
        // tanh |x| = 1 - 2 / (e^{2|x|} + 1), sign restored; below 2^-4 the series
        // x - x^3/3 + 2x^5/15, where the subtraction above would lose digits.
        llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        llvm::Value* big = b_.CreateFSub(f(1.0), b_.CreateFDiv(f(2.0), b_.CreateFAdd(exp(b_.CreateFMul(ax, f(2.0))), f(1.0))));
        big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
        llvm::Value* x2 = b_.CreateFMul(x, x);
        llvm::Value* poly = b_.CreateFAdd(f(-1.0 / 3.0), b_.CreateFMul(x2, f(2.0 / 15.0)));
        llvm::Value* small = b_.CreateFAdd(x, b_.CreateFMul(x, b_.CreateFMul(x2, poly)));
        return b_.CreateSelect(b_.CreateFCmpOLT(ax, f(0.0625)), small, big);
    }
    default: break;
    }
    TILEC_ICE(who_ + ": call " + ir::call_op_name(e.op));
}

}  // namespace tilec::codegen::gpu
