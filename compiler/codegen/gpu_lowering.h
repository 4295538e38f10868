// The GPU backends' shared lowering: thread-level Tile IR (compiler/lower) -> LLVM IR,
// the same for NVPTX (nvptx_backend.cpp) and AMDGPU (amdgpu_backend.cpp). A backend
// supplies GpuTargetHooks (hardware indices, barrier, exp2/log2, 32-bit warp shuffles) and its kernel calling
// convention and attributes; everything else (the value model, conversions, memory,
// control flow) is here, so both backends compute the same values from the same IR.
//
// Value model, as on the CPU: narrow floats (f16, bf16) are held in f32 registers and
// rounded to nearest even where the IR says (a store, a Cast): fptrunc. sqrt and
// division are IEEE; exp/log/pow/sigmoid/tanh are built on the target's exp2 and log2.
//
// Internal to compiler/codegen: it includes LLVM headers, which the rest of the
// compiler never sees.
#pragma once
#include <optional>
#include <llvm/Analysis/ConstantFolding.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpu_lowering.h"  // const_extent
#include "ir/ir.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::codegen::gpu {

using ir::DataType;

constexpr unsigned kGlobal = 1;  // the address spaces of global and shared memory: the same on NVPTX and AMDGPU
constexpr unsigned kShared = 3;

// What one GPU target does its own way.
class GpuTargetHooks {
public:
    virtual ~GpuTargetHooks() = default;
    // "NVPTX backend", "AMDGPU backend": the prefix of internal errors.
    virtual const char* backend_name() const = 0;
    // threadIdx (thread) or blockIdx (!thread) of dimension `dim` (0..2), as an i32.
    virtual llvm::Value* hardware_index(llvm::IRBuilder<>& b, bool thread, int dim) = 0;
    // A block-wide barrier that also orders shared-memory accesses across it.
    virtual void barrier(llvm::IRBuilder<>& b) = 0;
    // 2^x and log2(x) of an f32.
    virtual llvm::Value* exp2(llvm::IRBuilder<>& b, llvm::Value* x) = 0;
    virtual llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x) = 0;
    // The scope of a relaxed atomic on global memory that every block of the kernel
    // must see (CUDA's atomicAdd: the device), and what the target wants to know about
    // it (AMDGPU: metadata that lets it use its float atomic instructions).
    virtual llvm::SyncScope::ID device_scope(llvm::LLVMContext& /*ctx*/) { return llvm::SyncScope::System; }
    virtual void annotate_atomic(llvm::AtomicRMWInst* /*inst*/) {}
    // One 32-bit warp shuffle `op` (ir.h, CallOp::ShflXor ...) of the i32 `value` by the
    // i32 lane operand `lane`, executed by the whole warp: the result of the lane's
    // source lane as the IR defines it.
    virtual llvm::Value* shuffle_i32(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* value, llvm::Value* lane) = 0;
};

struct GpuBuffer {
    llvm::Value* base = nullptr;
    llvm::Type* elem = nullptr;  // storage type
    std::vector<llvm::Value*> strides;
};

// Thread-level Tile IR -> LLVM IR for one kernel, target-independent: expressions,
// statements, register buffers (allocas, promoted by SROA), shared memory (addrspace 3
// globals), loops, masks, conversions. What differs between GPUs goes through the hooks.
class GpuLowering {
public:
    GpuLowering(llvm::Module& m, llvm::Function* fn, const target::GpuTarget& t, GpuTargetHooks& hooks)
        : m_(m), ctx_(m.getContext()), fn_(fn), b_(ctx_), target_(t), hooks_(hooks), who_(hooks.backend_name()) {
        auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
        b_.SetInsertPoint(entry);
        alloca_point_ = b_.CreateAlloca(b_.getInt8Ty(), nullptr, "alloca.point");
    }

    void finish(llvm::Value* ret = nullptr) {
        if (ret)
            b_.CreateRet(ret);
        else
            b_.CreateRetVoid();
        alloca_point_->eraseFromParent();
    }

    llvm::IRBuilder<>& builder() { return b_; }

    // The block's shared arena (the thread-level plan's bytes; every planned shared
    // buffer is an offset in it): a static array, or with `dynamic` the external
    // zero-length array that dynamic shared memory is (CUDA's `extern __shared__`),
    // sized by the launch.
    void set_shared_arena(int64_t bytes, bool dynamic) {
        if (bytes <= 0) return;
        auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), dynamic ? 0 : static_cast<uint64_t>(bytes));
        auto* gv = new llvm::GlobalVariable(
            m_, arr, false, dynamic ? llvm::GlobalValue::ExternalLinkage : llvm::GlobalValue::InternalLinkage,
            dynamic ? nullptr : llvm::UndefValue::get(arr), fn_->getName().str() + (dynamic ? "_dynamic_smem" : "_smem"),
            nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
        gv->setAlignment(llvm::Align(128));
        shared_arena_ = gv;
    }

    void bind(const ir::Var& v, llvm::Value* value) { vars_[v.get()] = value; }

    void bind_tensor(const ir::Buffer& buf, llvm::Value* base) {
        GpuBuffer g;
        g.base = base;
        g.elem = storage_type(buf->dtype);
        size_t rank = buf->rank();
        g.strides.resize(rank);
        if (!buf->strides.empty()) {
            for (size_t d = 0; d < rank; ++d) g.strides[d] = expr(buf->strides[d]);
        } else {
            llvm::Value* s = b_.getInt64(1);
            for (size_t d = rank; d-- > 0;) {
                g.strides[d] = s;
                if (d) s = b_.CreateMul(s, expr(buf->shape[d]), "", false, true);
            }
        }
        buffers_[buf.get()] = g;
    }

    // ---- types ---------------------------------------------------------------------
    llvm::Type* reg_type(DataType t) {
        if (!t.is_scalar()) TILEC_ICE(who_ + ": vector type " + t.str());
        if (t.is_bool()) return b_.getInt1Ty();
        if (t.is_integer()) return b_.getIntNTy(t.bits);
        if (t.kind == ir::TypeKind::Float && t.bits == 64) return b_.getDoubleTy();
        if (t.kind == ir::TypeKind::Float || t.kind == ir::TypeKind::BFloat) return b_.getFloatTy();
        TILEC_ICE(who_ + ": type " + t.str() + " is not supported");
    }
    llvm::Type* storage_type(DataType t) {
        if (t.is_bool()) return b_.getInt8Ty();
        if (t.kind == ir::TypeKind::Float && t.bits == 16) return b_.getHalfTy();
        if (t.kind == ir::TypeKind::BFloat) return b_.getBFloatTy();
        return reg_type(t);
    }
    static bool is_narrow(DataType t) {
        return (t.kind == ir::TypeKind::Float && t.bits == 16) || t.kind == ir::TypeKind::BFloat;
    }
    llvm::Value* to_storage(llvm::Value* v, DataType t) {
        if (t.is_bool()) return b_.CreateZExt(v, b_.getInt8Ty());
        if (is_narrow(t)) return b_.CreateFPTrunc(v, storage_type(t));
        return v;
    }
    llvm::Value* from_storage(llvm::Value* v, DataType t) {
        if (t.is_bool()) return b_.CreateICmpNE(v, b_.getInt8(0));
        if (is_narrow(t)) return b_.CreateFPExt(v, b_.getFloatTy());
        return v;
    }
    // Rounds an f32 register value to the narrow float `t` (and back to f32).
    llvm::Value* round_narrow(llvm::Value* v, DataType t) {
        return b_.CreateFPExt(b_.CreateFPTrunc(v, storage_type(t)), b_.getFloatTy());
    }

    // cast<to>(v): float -> int truncates toward zero and saturates (NaN -> 0), int ->
    // int wraps, to bool is != 0, to a narrow float rounds once (the CPU's rules).
    llvm::Value* convert(llvm::Value* v, DataType from, DataType to) {
        if (from == to) return v;
        llvm::Type* rt = reg_type(to);
        if (to.is_bool()) {
            if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
            return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
        }
        if (to.is_float()) {
            llvm::Value* f;
            if (from.is_float()) {
                // f64 -> narrow rounds once, straight from double.
                if (is_narrow(to) && v->getType()->isDoubleTy()) {
                    if (to.kind == ir::TypeKind::BFloat && !target_.cvt_bf16_from_f64_and_int)
                        return b_.CreateFPExt(b_.CreateFPTrunc(f64_to_f32_odd(v), storage_type(to)), rt);
                    return b_.CreateFPExt(b_.CreateFPTrunc(v, storage_type(to)), rt);
                }
                f = v->getType() == rt ? v : (v->getType()->isDoubleTy() ? b_.CreateFPTrunc(v, rt) : b_.CreateFPExt(v, rt));
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

    // Before sm_90, PTX converts to bf16 only from f32 (cvt.rn.bf16.f32), and LLVM goes
    // through f32 with two roundings, which can differ from one. Rounding to f32 "to
    // odd" (truncate, then set the last bit if anything was lost) keeps the information
    // that the final round-to-nearest-even to bf16 (16 fewer bits) needs: one rounding.
    llvm::Value* f64_to_f32_odd(llvm::Value* x) {
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
    // An integer as an f32 rounded to odd (see above): its magnitude normalised to the
    // top of 64 bits, cut to 24 bits with the bits below folded into the last one (which
    // f32 holds exactly), then scaled back by a power of two (exact).
    llvm::Value* int_to_f32_odd(llvm::Value* v, DataType from) {
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

    // ---- expressions ---------------------------------------------------------------
    llvm::Value* expr(const ir::Expr& e) {
        switch (e->kind) {
        case ir::ExprKind::IntImm: {
            auto* n = e->as<ir::IntImmNode>();
            return llvm::ConstantInt::get(reg_type(e->type), static_cast<uint64_t>(n->value), e->type.is_int());
        }
        case ir::ExprKind::FloatImm: {
            double v = e->as<ir::FloatImmNode>()->value;
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

    static bool has_load(const ir::Expr& e) {
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

    llvm::Value* branch(llvm::Value* cond, const std::function<llvm::Value*()>& t,
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

    llvm::Value* var(const ir::VarNode& v) {
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

    llvm::Value* binary(const ir::BinaryNode& e) {
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
            llvm::Value* q = b_.CreateSDiv(a, b);
            llvm::Value* r = b_.CreateSRem(a, b);
            auto* zero = llvm::ConstantInt::get(a->getType(), 0);
            // Floor: when the remainder is non-zero and its sign differs from the divisor's.
            llvm::Value* adjust =
                b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
            if (e.op == BinaryOp::FloorDiv)
                return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
            return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
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

    // A warp shuffle of a scalar of up to 64 bits, as the 32-bit shuffles of the target
    // (ir.h, CallOp): f32 registers (f32, and f16 / bf16, which live in them) as their
    // bits, narrower integers and bools zero-extended, 64-bit values in two halves
    // shuffled from the same source lane.
    llvm::Value* shuffle(const ir::CallNode& e) {
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

    llvm::Value* call(const ir::CallNode& e) {
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

    // ---- memory --------------------------------------------------------------------
    GpuBuffer& buffer(const ir::Buffer& b) {
        auto it = buffers_.find(b.get());
        if (it == buffers_.end()) TILEC_ICE(who_ + ": buffer '" + b->name + "' used outside its allocation");
        return it->second;
    }

    llvm::Value* element_ptr(const GpuBuffer& g, const std::vector<ir::Expr>& indices) {
        llvm::Value* off = nullptr;
        for (size_t d = 0; d < indices.size(); ++d) {
            llvm::Value* i = b_.CreateSExtOrTrunc(expr(indices[d]), b_.getInt64Ty());
            llvm::Value* term = b_.CreateMul(i, g.strides[d], "", false, true);
            off = off ? b_.CreateAdd(off, term, "", false, true) : term;
        }
        if (!off) return g.base;
        return b_.CreateInBoundsGEP(g.elem, g.base, off);
    }

    // ---- statements ----------------------------------------------------------------
    void stmt(const ir::Stmt& s) {
        switch (s->kind) {
        case ir::StmtKind::Seq:
            for (auto& c : s->as<ir::SeqNode>()->stmts) stmt(c);
            return;
        case ir::StmtKind::For: lower_for(*s->as<ir::ForNode>()); return;
        case ir::StmtKind::If: {
            auto* i = s->as<ir::IfNode>();
            llvm::Value* c = expr(i->cond);
            auto* tb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
            auto* eb = i->else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : nullptr;
            auto* jb = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
            b_.CreateCondBr(c, tb, eb ? eb : jb);
            b_.SetInsertPoint(tb);
            stmt(i->then_case);
            b_.CreateBr(jb);
            if (eb) {
                b_.SetInsertPoint(eb);
                stmt(i->else_case);
                b_.CreateBr(jb);
            }
            b_.SetInsertPoint(jb);
            return;
        }
        case ir::StmtKind::LetStmt: {
            auto* l = s->as<ir::LetStmtNode>();
            bind(l->var, expr(l->value));
            stmt(l->body);
            return;
        }
        case ir::StmtKind::Allocate: lower_allocate(*s->as<ir::AllocateNode>()); return;
        case ir::StmtKind::Store: {
            auto* st = s->as<ir::StoreNode>();
            auto& g = buffer(st->buffer);
            llvm::Value* v = to_storage(expr(st->value), st->buffer->dtype);
            b_.CreateStore(v, element_ptr(g, st->indices));
            return;
        }
        case ir::StmtKind::Evaluate: expr(s->as<ir::EvaluateNode>()->value); return;
        case ir::StmtKind::Barrier: hooks_.barrier(b_); return;
        case ir::StmtKind::AtomicRmw: atomic_rmw(*s->as<ir::AtomicRmwNode>()); return;
        default: break;
        }
        TILEC_ICE(who_ + ": statement of kind " + std::to_string(static_cast<int>(s->kind)) +
                  " at thread level (the lowering should have removed it)");
    }

    // buffer[i] += v, relaxed (monotonic) at device scope: atomic against every thread
    // of every block, ordering nothing else, as the IR says. NVPTX: atom.global.add
    // (.f32, .f64, .u32, .u64) with an unused result; AMDGPU: its no-return global
    // atomics where the target has them (see its hooks), a compare-and-swap loop
    // elsewhere (f64 on gfx1100).
    void atomic_rmw(const ir::AtomicRmwNode& a) {
        DataType t = a.buffer->dtype;
        if (a.buffer->scope != ir::Scope::Global)
            TILEC_ICE(who_ + ": atomic on " + ir::scope_name(a.buffer->scope) + " buffer '" + a.buffer->name + "'");
        bool is_float = t.is_float();
        if (!(is_float ? (t.kind == ir::TypeKind::Float && (t.bits == 32 || t.bits == 64))
                       : (t.is_integer() && (t.bits == 32 || t.bits == 64))))
            TILEC_ICE(who_ + ": atomic add of " + t.str());
        auto& g = buffer(a.buffer);
        llvm::Value* v = expr(a.value);
        llvm::Value* p = element_ptr(g, a.indices);
        auto* inst = b_.CreateAtomicRMW(is_float ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, p, v,
                                        llvm::MaybeAlign(t.bits / 8), llvm::AtomicOrdering::Monotonic,
                                        hooks_.device_scope(ctx_));
        hooks_.annotate_atomic(inst);
    }

    void lower_for(const ir::ForNode& f) {
        auto mn = ir::as_const_int(f.min);
        auto ext = ir::as_const_int(f.extent);
        if (f.for_kind == ir::ForKind::Unroll && mn && ext && *ext <= 256) {
            // Register loops: unrolled here, so register indices are constants and the
            // register arrays become registers.
            for (int64_t i = 0; i < *ext; ++i) {
                bind(f.var, llvm::ConstantInt::get(reg_type(f.var->type), *mn + i, true));
                stmt(f.body);
            }
            return;
        }
        llvm::Type* t = reg_type(f.var->type);
        llvm::Value* lo = expr(f.min);
        llvm::Value* hi = b_.CreateAdd(lo, expr(f.extent));
        auto* pre = b_.GetInsertBlock();
        auto* head = llvm::BasicBlock::Create(ctx_, "for.head", fn_);
        auto* body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
        auto* done = llvm::BasicBlock::Create(ctx_, "for.end", fn_);
        b_.CreateBr(head);
        b_.SetInsertPoint(head);
        auto* iv = b_.CreatePHI(t, 2, f.var->name);
        iv->addIncoming(lo, pre);
        llvm::Value* cond = f.var->type.is_uint() ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi);
        b_.CreateCondBr(cond, body, done);
        b_.SetInsertPoint(body);
        bind(f.var, iv);
        stmt(f.body);
        llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(t, 1));
        iv->addIncoming(next, b_.GetInsertBlock());
        b_.CreateBr(head);
        b_.SetInsertPoint(done);
    }

    void lower_allocate(const ir::AllocateNode& a) {
        const ir::Buffer& buf = a.buffer;
        uint64_t count = 1;
        for (auto& e : buf->shape) count *= static_cast<uint64_t>(const_extent(e, "allocation extent"));
        GpuBuffer g;
        g.elem = storage_type(buf->dtype);
        auto* arr = llvm::ArrayType::get(g.elem, count);
        if (buf->scope == ir::Scope::Shared && buf->shared_offset >= 0) {
            if (!shared_arena_) TILEC_ICE(who_ + ": shared buffer '" + buf->name + "' planned without an arena");
            g.base = b_.CreateInBoundsGEP(b_.getInt8Ty(), shared_arena_, b_.getInt64(buf->shared_offset),
                                          buf->name);
        } else if (buf->scope == ir::Scope::Shared) {
            auto* gv = new llvm::GlobalVariable(m_, arr, false, llvm::GlobalValue::InternalLinkage,
                                                llvm::UndefValue::get(arr), fn_->getName().str() + "." + buf->name,
                                                nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
            gv->setAlignment(llvm::Align(16));
            g.base = gv;
        } else if (buf->scope == ir::Scope::Register) {
            llvm::IRBuilder<> eb(alloca_point_);
            auto* al = eb.CreateAlloca(arr, nullptr, buf->name);
            al->setAlignment(llvm::Align(16));
            g.base = al;
        } else {
            TILEC_ICE((who_ + ": ") + ir::scope_name(buf->scope) + " buffer '" + buf->name +
                      "' at thread level");
        }
        g.strides.resize(buf->rank());
        int64_t s = 1;
        for (size_t d = buf->rank(); d-- > 0;) {
            g.strides[d] = b_.getInt64(s);
            s *= const_extent(buf->shape[d], "allocation extent");
        }
        buffers_[buf.get()] = g;
        stmt(a.body);
        buffers_.erase(buf.get());
    }

private:
    llvm::Module& m_;
    llvm::LLVMContext& ctx_;
    llvm::Function* fn_;
    llvm::IRBuilder<> b_;
    llvm::Instruction* alloca_point_ = nullptr;
    llvm::Value* shared_arena_ = nullptr;
    std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;
    std::unordered_map<const ir::BufferNode*, GpuBuffer> buffers_;
    llvm::Value* sregs_[6] = {};
    const target::GpuTarget& target_;
    GpuTargetHooks& hooks_;
    std::string who_;
};

// The C type of a scalar parameter (as the CPU entry point and the header pass it).
llvm::Type* scalar_arg_type(llvm::LLVMContext& ctx, DataType t);

// Defines the kernel for `f` in `m`: parameters in the order of the CPU entry point
// (tensors as 16-byte-aligned global pointers, sizes as int64, scalars as their C
// types), calling convention `cc`, body lowered with `hooks`. Returns the function, for
// the backend's own attributes and metadata.
llvm::Function* emit_kernel(llvm::Module& m, const ir::PrimFunc& f, const target::GpuTarget& target,
                            GpuTargetHooks& hooks, llvm::CallingConv::ID cc);

// The target machine of a GPU backend for `target`: LLVM's target for `triple` (`who`,
// e.g. "NVPTX", names the backend and that target in internal errors), `target`'s CPU,
// `features`, relocation model `reloc`, O3 code generation.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const std::string& triple,
                                                           const target::GpuTarget& target,
                                                           const std::string& features,
                                                           std::optional<llvm::Reloc::Model> reloc,
                                                           const std::string& who);

// Registers promoted, alignment inferred and adjacent loads and stores combined into
// vectors, before the O3 pipeline (see gpu_lowering.cpp).
void vectorize_early(llvm::Module& m, llvm::TargetMachine& tm, const std::string& who);

// The tail both GPU backends share: `target`'s CPU and `features` on every function,
// verification, early vectorisation and O3, then the module as LLVM IR text (no `kind`)
// or as the target's assembly / object. `who` names the backend in internal errors;
// `llvm_errors` is the string the module's diagnostic handler (codegen::on_llvm_diagnostic,
// module_output.h) appends to, checked after optimising and after code generation.
std::string finish_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                          const std::string& features, const std::string& who, const std::string& llvm_errors,
                          std::optional<llvm::CodeGenFileType> kind);

// Runs `tool args...` with its standard output and error captured; returns the exit
// status (-1 if it did not exit normally, 127 if it could not be started) and the output.
struct ToolResult {
    int status = -1;
    std::string output;
};
ToolResult run_tool(const std::string& tool, const std::vector<std::string>& args);

// A fresh temporary folder (under the system's), removed when this goes out of scope.
class TempDir {
public:
    explicit TempDir(const std::string& prefix);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::string& bytes);

}  // namespace tilec::codegen::gpu
