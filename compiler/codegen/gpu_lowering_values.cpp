// GpuLowering's value model (gpu_lowering.h): the kernel's entry block, register and
// storage types of each IR type, and conversions between them, apart from the rest so
// that the rounding rules both GPU backends share can be read in one place.
#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

GpuLowering::GpuLowering(llvm::Module& m, llvm::Function* fn, const target::GpuTarget& t, GpuTargetHooks& hooks)
    : m_(m), ctx_(m.getContext()), fn_(fn), b_(ctx_), target_(t), hooks_(hooks), who_(hooks.backend_name()) {
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    alloca_point_ = b_.CreateAlloca(b_.getInt8Ty(), nullptr, "alloca.point");
}

void GpuLowering::finish(llvm::Value* ret) {
    if (ret)
        b_.CreateRet(ret);
    else
        b_.CreateRetVoid();
    alloca_point_->eraseFromParent();
}

llvm::Type* GpuLowering::reg_type(DataType t) {
    if (!t.is_scalar()) TILEC_ICE(who_ + ": vector type " + t.str());
    if (t.is_bool()) return b_.getInt1Ty();
    if (t.is_integer()) return b_.getIntNTy(t.bits);
    if (t.kind == ir::TypeKind::Float && t.bits == 64) return b_.getDoubleTy();
    if (t.kind == ir::TypeKind::Float || t.kind == ir::TypeKind::BFloat || is_f8(t)) return b_.getFloatTy();
    TILEC_ICE(who_ + ": type " + t.str() + " is not supported");
}

llvm::Type* GpuLowering::storage_type(DataType t) {
    if (t.is_bool()) return b_.getInt8Ty();
    if (t.kind == ir::TypeKind::Float && t.bits == 16) return b_.getHalfTy();
    if (t.kind == ir::TypeKind::BFloat) return b_.getBFloatTy();
    if (is_f8(t)) return b_.getInt8Ty();
    return reg_type(t);
}

bool GpuLowering::is_narrow(DataType t) {
    return (t.kind == ir::TypeKind::Float && t.bits == 16) || t.kind == ir::TypeKind::BFloat || is_f8(t);
}

bool GpuLowering::is_f8(DataType t) {
    return t.kind == ir::TypeKind::Float8E4M3 || t.kind == ir::TypeKind::Float8E5M2;
}

llvm::Value* GpuLowering::to_storage(llvm::Value* v, DataType t) {
    if (t.is_bool()) return b_.CreateZExt(v, b_.getInt8Ty());
    if (is_f8(t)) return f8_encode(v, t);
    if (is_narrow(t)) return b_.CreateFPTrunc(v, storage_type(t));
    return v;
}

llvm::Value* GpuLowering::from_storage(llvm::Value* v, DataType t) {
    if (t.is_bool()) return b_.CreateICmpNE(v, b_.getInt8(0));
    if (is_f8(t)) return f8_decode(v, t);
    if (is_narrow(t)) return b_.CreateFPExt(v, b_.getFloatTy());
    return v;
}

llvm::Value* GpuLowering::storage_value(const ir::Expr& e, DataType t) {
    if (auto* l = e->as<ir::LoadNode>(); l && l->buffer->dtype == t && e->type == t) {
        auto& g = buffer(l->buffer);
        return b_.CreateLoad(g.elem, element_ptr(g, l->indices));
    }
    return to_storage(expr(e), t);
}

llvm::Value* GpuLowering::round_narrow(llvm::Value* v, DataType t) {
    if (is_f8(t)) return f8_decode(f8_encode(v, t), t);
    return b_.CreateFPExt(b_.CreateFPTrunc(v, storage_type(t)), b_.getFloatTy());
}

llvm::Value* GpuLowering::convert(llvm::Value* v, DataType from, DataType to) {
    if (from == to) return v;
    llvm::Type* rt = reg_type(to);
    if (to.is_bool()) {
        if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
        return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (to.is_float()) {
        llvm::Value* f;
        if (from.is_float()) {
            // f64 -> narrow rounds once, straight from double (to the 8-bit floats
            // through f32 rounded to odd, which keeps what their rounding needs).
            if (is_f8(to) && v->getType()->isDoubleTy()) return round_narrow(f64_to_f32_odd(v), to);
            if (is_narrow(to) && v->getType()->isDoubleTy()) {
                if (to.kind == ir::TypeKind::BFloat && !target_.cvt_bf16_from_f64_and_int)
                    return b_.CreateFPExt(b_.CreateFPTrunc(f64_to_f32_odd(v), storage_type(to)), rt);
                return b_.CreateFPExt(b_.CreateFPTrunc(v, storage_type(to)), rt);
            }
            f = v->getType() == rt ? v : (v->getType()->isDoubleTy() ? b_.CreateFPTrunc(v, rt) : b_.CreateFPExt(v, rt));
        } else if (is_f8(to)) {
            return round_narrow(int_to_f32_odd(v, from), to);
        } else if (to.kind == ir::TypeKind::BFloat && !target_.cvt_bf16_from_f64_and_int) {
            return b_.CreateFPExt(b_.CreateFPTrunc(int_to_f32_odd(v, from), storage_type(to)), rt);
        } else if (from.is_bool() || from.is_uint()) {
            if (is_narrow(to)) return b_.CreateFPExt(b_.CreateUIToFP(v, storage_type(to)), rt);
            f = b_.CreateUIToFP(v, rt);
        } else {
            if (is_narrow(to)) return b_.CreateFPExt(b_.CreateSIToFP(v, storage_type(to)), rt);
            f = b_.CreateSIToFP(v, rt);
        }
        return is_narrow(to) ? round_narrow(f, to) : f;
    }
    // to an integer
    if (from.is_float()) {
        auto id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
        return b_.CreateIntrinsic(id, {rt, v->getType()}, {v});
    }
    if (from.is_bool() || from.is_uint()) return b_.CreateZExtOrTrunc(v, rt);
    return b_.CreateSExtOrTrunc(v, rt);
}

llvm::Value* GpuLowering::f64_to_f32_odd(llvm::Value* x) {
    llvm::Value* r = b_.CreateFPTrunc(x, b_.getFloatTy());
    llvm::Value* bits = b_.CreateBitCast(r, b_.getInt32Ty());
    llvm::Value* back = b_.CreateFPExt(r, b_.getDoubleTy());
    auto fabs = [&](llvm::Value* v) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v); };
    // Rounded away from zero (or to inf): step back one ulp toward zero = truncation.
    llvm::Value* away = b_.CreateFCmpOGT(fabs(back), fabs(x));
    bits = b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), bits);
    llvm::Value* inexact = b_.CreateFCmpONE(b_.CreateFPExt(b_.CreateBitCast(bits, b_.getFloatTy()), b_.getDoubleTy()), x);
    bits = b_.CreateSelect(inexact, b_.CreateOr(bits, b_.getInt32(1)), bits);
    llvm::Value* odd = b_.CreateBitCast(bits, b_.getFloatTy());
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), r, odd);  // NaN stays NaN
}

llvm::Value* GpuLowering::int_to_f32_odd(llvm::Value* v, DataType from) {
    auto* i64 = b_.getInt64Ty();
    bool is_signed = from.is_int();
    llvm::Value* w = from.is_bool() || !is_signed ? b_.CreateZExt(v, i64) : b_.CreateSExt(v, i64);
    llvm::Value* neg = is_signed ? b_.CreateICmpSLT(w, b_.getInt64(0)) : b_.getFalse();
    llvm::Value* mag = is_signed ? b_.CreateSelect(neg, b_.CreateNeg(w), w) : w;  // |INT64_MIN| wraps to 2^63: right as unsigned
    llvm::Value* lz = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, mag, b_.getTrue());
    llvm::Value* zero = b_.CreateICmpEQ(mag, b_.getInt64(0));
    lz = b_.CreateSelect(zero, b_.getInt64(0), lz);
    llvm::Value* n = b_.CreateShl(mag, lz);
    llvm::Value* sticky = b_.CreateZExt(b_.CreateICmpNE(b_.CreateAnd(n, b_.getInt64((int64_t{1} << 40) - 1)), b_.getInt64(0)), i64);
    llvm::Value* top = b_.CreateOr(b_.CreateLShr(n, b_.getInt64(40)), sticky);
    llvm::Value* f = b_.CreateUIToFP(top, b_.getFloatTy());  // < 2^24: exact
    // f * 2^(40 - lz): the exponent field of a power of two, built directly.
    llvm::Value* e = b_.CreateTrunc(b_.CreateSub(b_.getInt64(40 + 127), lz), b_.getInt32Ty());
    llvm::Value* scale = b_.CreateBitCast(b_.CreateShl(e, b_.getInt32(23)), b_.getFloatTy());
    llvm::Value* out = b_.CreateFMul(f, scale);
    return b_.CreateSelect(neg, b_.CreateFNeg(out), out);
}

}  // namespace tilec::codegen::gpu
