// Expressions of the CPU backend: operators with the IR's integer semantics (wrapping,
// floor division), math calls, selects that never evaluate a side that could trap.
#include <algorithm>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include "codegen/cpu_lowering.h"
#include "codegen/int_arith.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

// Sets fast-math flags on v where it is still an instruction (constants fold first).
static llvm::Value* set_fast_math(llvm::Value* v, llvm::FastMathFlags flags) {
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setFastMathFlags(flags);
    return v;
}

static llvm::FastMathFlags allow_reciprocal() {
    llvm::FastMathFlags flags;
    flags.setAllowReciprocal();
    return flags;
}

using ir::BinaryOp;
using ir::DataType;

namespace {

constexpr int64_t kRangeLimit = int64_t{1} << 40;  // keeps range arithmetic far from overflow

bool in_limit(int64_t lo, int64_t hi) {
    return lo >= -kRangeLimit && hi <= kRangeLimit;
}

}  // namespace

bool FunctionLowering::range_of(const ir::Expr& e, int64_t& lo, int64_t& hi) const {
    if (auto c = ir::as_const_int(e)) {
        lo = hi = *c;
        return in_limit(lo, hi);
    }
    if (auto* v = e->as<ir::VarNode>()) {
        auto it = ranges_.find(v);
        if (it == ranges_.end()) return false;
        lo = it->second.first;
        hi = it->second.second;
        return true;
    }
    auto* bin = e->as<ir::BinaryNode>();
    if (!bin || !e->type.is_integer()) return false;
    int64_t al, ah, bl, bh;
    if (!range_of(bin->a, al, ah) || !range_of(bin->b, bl, bh)) return false;
    switch (bin->op) {
    case BinaryOp::Add:
        lo = al + bl;
        hi = ah + bh;
        break;
    case BinaryOp::Sub:
        lo = al - bh;
        hi = ah - bl;
        break;
    case BinaryOp::Mul: {
        int64_t p[4] = {al * bl, al * bh, ah * bl, ah * bh};
        lo = *std::min_element(p, p + 4);
        hi = *std::max_element(p, p + 4);
        break;
    }
    case BinaryOp::Min:
        lo = std::min(al, bl);
        hi = std::min(ah, bh);
        break;
    case BinaryOp::Max:
        lo = std::max(al, bl);
        hi = std::max(ah, bh);
        break;
    case BinaryOp::FloorDiv:
        if (bl != bh || bl <= 0) return false;
        lo = (al >= 0 ? al / bl : -((-al + bl - 1) / bl));
        hi = (ah >= 0 ? ah / bl : -((-ah + bl - 1) / bl));
        break;
    case BinaryOp::FloorMod:
        if (bl != bh || bl <= 0) return false;
        lo = 0;
        hi = bl - 1;
        break;
    default: return false;
    }
    return in_limit(lo, hi);
}

bool FunctionLowering::speculatable(const ir::Expr& e) const {
    switch (e->kind) {
    case ir::ExprKind::IntImm:
    case ir::ExprKind::FloatImm:
    case ir::ExprKind::Var: return true;
    case ir::ExprKind::StringImm: return false;
    case ir::ExprKind::Binary: {
        auto* b = e->as<ir::BinaryNode>();
        if ((b->op == BinaryOp::FloorDiv || b->op == BinaryOp::FloorMod) && e->type.is_integer()) {
            auto c = ir::as_const_int(b->b);
            if (!c || *c <= 0) return false;
        }
        return speculatable(b->a) && speculatable(b->b);
    }
    case ir::ExprKind::Unary: return speculatable(e->as<ir::UnaryNode>()->a);
    case ir::ExprKind::Select: {
        auto* s = e->as<ir::SelectNode>();
        return speculatable(s->cond) && speculatable(s->t) && speculatable(s->f);
    }
    case ir::ExprKind::Cast: return speculatable(e->as<ir::CastNode>()->value);
    case ir::ExprKind::Call: {
        for (auto& a : e->as<ir::CallNode>()->args)
            if (!speculatable(a)) return false;
        return true;
    }
    case ir::ExprKind::Load: {
        auto* l = e->as<ir::LoadNode>();
        if (l->buffer->scope == ir::Scope::Global) return false;
        for (size_t d = 0; d < l->indices.size(); ++d) {
            int64_t lo, hi;
            auto extent = ir::as_const_int(l->buffer->shape[d]);
            if (!extent || !speculatable(l->indices[d]) || !range_of(l->indices[d], lo, hi) || lo < 0 ||
                hi >= *extent)
                return false;
        }
        return true;
    }
    }
    return false;
}

bool FunctionLowering::may_be_poison(const ir::Expr& e) const {
    switch (e->kind) {
    case ir::ExprKind::Binary: {
        auto* b = e->as<ir::BinaryNode>();
        if (b->op == BinaryOp::Shl || b->op == BinaryOp::Shr) {
            // LLVM's shl/ashr/lshr by the width or more (or a negative amount) give poison.
            int width = b->a->type.is_bool() ? 1 : b->a->type.bits;
            int64_t lo, hi;
            if (!range_of(b->b, lo, hi) || lo < 0 || hi >= width) return true;
        }
        return may_be_poison(b->a) || may_be_poison(b->b);
    }
    case ir::ExprKind::Unary: return may_be_poison(e->as<ir::UnaryNode>()->a);
    case ir::ExprKind::Select: {
        auto* s = e->as<ir::SelectNode>();
        return may_be_poison(s->cond) || may_be_poison(s->t) || may_be_poison(s->f);
    }
    case ir::ExprKind::Cast: return may_be_poison(e->as<ir::CastNode>()->value);
    case ir::ExprKind::Call:
        for (auto& a : e->as<ir::CallNode>()->args)
            if (may_be_poison(a)) return true;
        return false;
    case ir::ExprKind::Load:
        for (auto& i : e->as<ir::LoadNode>()->indices)
            if (may_be_poison(i)) return true;
        return false;
    default: return false;
    }
}

llvm::Value* FunctionLowering::expr(const ir::Expr& e) {
    switch (e->kind) {
    case ir::ExprKind::IntImm: return const_int(e->as<ir::IntImmNode>()->value, e->type);
    case ir::ExprKind::FloatImm: return const_value(e->as<ir::FloatImmNode>()->value, e->type);
    case ir::ExprKind::StringImm: TILEC_ICE("CPU backend: a string outside print()");
    case ir::ExprKind::Var: {
        auto* v = e->as<ir::VarNode>();
        auto it = vars_.find(v);
        if (it == vars_.end()) TILEC_ICE("CPU backend: variable '" + v->name + "' used before it is bound");
        return it->second;
    }
    case ir::ExprKind::Binary: {
        auto* bin = e->as<ir::BinaryNode>();
        if (bin->op == BinaryOp::And || bin->op == BinaryOp::Or) return lower_logical(*bin);
        return lower_binary(*bin);
    }
    case ir::ExprKind::Unary: {
        auto* u = e->as<ir::UnaryNode>();
        llvm::Value* a = expr(u->a);
        switch (u->op) {
        case ir::UnaryOp::Neg:
            if (u->a->type.is_float()) return b_.CreateFNeg(a);
            return b_.CreateNeg(a);
        case ir::UnaryOp::Not:
        case ir::UnaryOp::BitNot: return b_.CreateNot(a);
        }
        TILEC_ICE("CPU backend: unknown unary op");
    }
    case ir::ExprKind::Select: return lower_select(*e->as<ir::SelectNode>());
    case ir::ExprKind::Cast: {
        auto* c = e->as<ir::CastNode>();
        return convert(expr(c->value), c->value->type, e->type);
    }
    case ir::ExprKind::Call: return lower_call(*e->as<ir::CallNode>());
    case ir::ExprKind::Load: {
        auto* l = e->as<ir::LoadNode>();
        std::vector<llvm::Value*> idx;
        for (auto& i : l->indices) idx.push_back(convert(expr(i), i->type, DataType::i64()));
        return load_element(l->buffer, idx);
    }
    }
    TILEC_ICE("CPU backend: unknown expression kind");
}

llvm::Value* FunctionLowering::lower_binary(const ir::BinaryNode& e) {
    if (assumed_true_.count(&e)) return b_.getTrue();  // a column bound that covers the loop
    DataType t = e.a->type;
    llvm::Value* a = expr(e.a);
    llvm::Value* b = expr(e.b);
    if (e.b->type != t) b = convert(b, e.b->type, t);
    bool is_float = t.is_float();
    bool is_signed = t.is_int();
    // Index arithmetic (i64) never overflows (ir.h); other integers wrap.
    bool nsw = t == DataType::i64();
    switch (e.op) {
    case BinaryOp::Add: return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, nsw);
    case BinaryOp::Sub: return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, nsw);
    case BinaryOp::Mul: return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, nsw);
    case BinaryOp::Div:
        if (!is_float) TILEC_ICE("CPU backend: float division on " + t.str());
        // arcp: a divisor that does not change in a loop becomes one reciprocal before
        // it and a multiply per element (LLVM's LICM); softmax and the norms divide a
        // row by its sum. Within about an ulp of the quotient (docs/language.md, s. 10).
        return set_fast_math(b_.CreateFDiv(a, b), allow_reciprocal());
    case BinaryOp::Mod:
        if (!is_float) TILEC_ICE("CPU backend: fmod on " + t.str());
        return b_.CreateFRem(a, b);
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
        if (is_float) TILEC_ICE("CPU backend: floor division on " + t.str());
        bool div = e.op == BinaryOp::FloorDiv;
        if (!is_signed) return div ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
        return signed_floor_div_mod(b_, a, b, div);
    }
    case BinaryOp::Min:
    case BinaryOp::Max: {
        bool mn = e.op == BinaryOp::Min;
        if (is_float) return float_min_max(mn, a, b);
        auto id = is_signed ? (mn ? llvm::Intrinsic::smin : llvm::Intrinsic::smax)
                            : (mn ? llvm::Intrinsic::umin : llvm::Intrinsic::umax);
        return b_.CreateBinaryIntrinsic(id, a, b);
    }
    case BinaryOp::EQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case BinaryOp::NE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case BinaryOp::LT:
        return is_float    ? b_.CreateFCmpOLT(a, b)
               : is_signed ? b_.CreateICmpSLT(a, b)
                           : b_.CreateICmpULT(a, b);
    case BinaryOp::LE:
        return is_float    ? b_.CreateFCmpOLE(a, b)
               : is_signed ? b_.CreateICmpSLE(a, b)
                           : b_.CreateICmpULE(a, b);
    case BinaryOp::GT:
        return is_float    ? b_.CreateFCmpOGT(a, b)
               : is_signed ? b_.CreateICmpSGT(a, b)
                           : b_.CreateICmpUGT(a, b);
    case BinaryOp::GE:
        return is_float    ? b_.CreateFCmpOGE(a, b)
               : is_signed ? b_.CreateICmpSGE(a, b)
                           : b_.CreateICmpUGE(a, b);
    case BinaryOp::BitAnd: return b_.CreateAnd(a, b);
    case BinaryOp::BitOr: return b_.CreateOr(a, b);
    case BinaryOp::BitXor: return b_.CreateXor(a, b);
    case BinaryOp::Shl: return b_.CreateShl(a, b);
    case BinaryOp::Shr: return is_signed ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
    case BinaryOp::And:
    case BinaryOp::Or: return lower_logical(e);
    }
    TILEC_ICE("CPU backend: unknown binary op");
}

// `a && b`, `a || b`: b is evaluated only when needed unless it is speculatable.
llvm::Value* FunctionLowering::lower_logical(const ir::BinaryNode& e) {
    bool is_and = e.op == BinaryOp::And;
    llvm::Value* a = expr(e.a);
    if (speculatable(e.b)) {
        llvm::Value* b = expr(e.b);
        // `or i1 true, poison` is poison, so a b that may be poison (an out-of-range shift
        // that a guarding a skips in the language) takes select, which does not propagate it.
        if (may_be_poison(e.b)) return is_and ? b_.CreateSelect(a, b, b_.getFalse()) : b_.CreateSelect(a, b_.getTrue(), b);
        return is_and ? b_.CreateAnd(a, b) : b_.CreateOr(a, b);
    }
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* rhs_bb = llvm::BasicBlock::Create(ms_.ctx, is_and ? "and.rhs" : "or.rhs", fn_);
    auto* done = llvm::BasicBlock::Create(ms_.ctx, is_and ? "and.end" : "or.end", fn_);
    if (is_and)
        b_.CreateCondBr(a, rhs_bb, done);
    else
        b_.CreateCondBr(a, done, rhs_bb);
    b_.SetInsertPoint(rhs_bb);
    llvm::Value* rhs = expr(e.b);
    llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    auto* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(!is_and), from);
    phi->addIncoming(rhs, rhs_end);
    return phi;
}

// `c ? t : f` as a select when both sides are safe to evaluate, else as branches.
llvm::Value* FunctionLowering::float_min_max(bool is_min, llvm::Value* a, llvm::Value* b) {
    // NaN-propagating like the reference interpreter; nsz because ordering -0 below +0
    // costs x86 two blends per vector and the language does not promise it.
    llvm::FastMathFlags no_signed_zeros;
    no_signed_zeros.setNoSignedZeros();
    return set_fast_math(
        b_.CreateBinaryIntrinsic(is_min ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum, a, b),
        no_signed_zeros);
}

llvm::Value* FunctionLowering::lower_select(const ir::SelectNode& e) {
    llvm::Value* c = expr(e.cond);
    auto side = [&](const ir::Expr& x) { return convert(expr(x), x->type, e.type); };
    if (speculatable(e.t) && speculatable(e.f)) {
        llvm::Value* t = side(e.t);
        llvm::Value* f = side(e.f);
        return b_.CreateSelect(c, t, f);
    }
    auto* then_bb = llvm::BasicBlock::Create(ms_.ctx, "sel.t", fn_);
    auto* else_bb = llvm::BasicBlock::Create(ms_.ctx, "sel.f", fn_);
    auto* done = llvm::BasicBlock::Create(ms_.ctx, "sel.end", fn_);
    b_.CreateCondBr(c, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* t = side(e.t);
    llvm::BasicBlock* t_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(else_bb);
    llvm::Value* f = side(e.f);
    llvm::BasicBlock* f_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    auto* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, t_end);
    phi->addIncoming(f, f_end);
    return phi;
}

// exp and exp2 of an f32 register, inline and branch-free, so that loops over them
// vectorise (a call to expf/exp2f keeps LLVM's vectoriser away: softmax and attention
// spend their time there). x = n + f with n the nearest integer (for exp: x = n ln2 + r,
// with ln2 split in two parts, Cody and Waite, so r is exact to about 2^-40), then
// 2^f resp. e^r by its Taylor polynomial of degree 7 on |f| <= 1/2 resp. |r| <= ln2/2
// (truncation below 1e-8 relative, under an ulp), times 2^n as two exact powers of two
// (so results in the subnormal range and overflow to inf come out right). Under an ulp
// (tests/e2e/math_test.c; a degree-6 Chebyshev fit measured 0.96-1.03 ulps, Taylor's
// 7 0.83-0.89); NaN stays NaN, +inf gives inf, -inf gives 0.
//
// n comes from adding and subtracting 1.5 * 2^23 (round to nearest even, as
// roundeven), whose bits also hold n as an integer: no float-to-int conversion, which
// would be poison for NaN. The clamps keep NaN (x < lo is false for it), and NaN then
// flows through the polynomial into the result; no select at the end.
//
// The same code serves a scalar and a vector of f32 (x's type). With `scalef` (AVX-512:
// vscalefps, for vectors of 16, or of 4 and 8 with AVX512VL) the last step is
// p * 2^n in one instruction, rounded once as the two exact multiplies are: the same
// bits, 9 fewer vector operations per exp.
static llvm::Value* emit_exp_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool base2, bool scalef = false,
                                 bool reduce = false) {
    llvm::Type* f32 = x->getType();
    llvm::Type* i32 = b.getInt32Ty();
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(f32)) i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
    auto k = [&](double v) { return llvm::ConstantFP::get(f32, v); };
    auto ki = [&](int64_t v) { return llvm::ConstantInt::get(i32, uint64_t(v), true); };
    // fmuladd, not fma: fused where the CPU has FMA, a multiply and an add where it does
    // not (an fma there is a libm call). Both are accurate enough here: n * ln2_hi is
    // exact in f32 (ln2_hi has 15 significant bits, |n| <= 152 has 8).
    auto fma = [&](llvm::Value* m, llvm::Value* a, llvm::Value* c) {
        return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {m, a, c});
    };
    static const double kPow2[] = {1.0, 0.6931471805599453, 0.2402265069591007, 0.055504108664821576, 0.009618129107628477, 0.0013333558146428441, 0.00015403530393381606, 1.5252733804059838e-05};
    static const double kExp[] = {1.0, 1.0, 0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333, 0.001388888888888889, 0.0001984126984126984};
    auto poly = [&](llvm::Value* r, const double* coef) {
        llvm::Value* p = k(coef[7]);
        for (int i = 6; i >= 0; --i) p = fma(p, r, k(coef[i]));
        return p;
    };
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(f32);
    const unsigned lanes = vt ? vt->getNumElements() : 1;
    if (base2 && scalef && reduce) {
        // AVX-512 DQ: n = roundeven(x) (vrndscaleps) and f = x - n (vreduceps, exact),
        // with no clamps: vreduceps gives f = 0 for +-inf, and vscalefps then 0 or inf
        // (as for any x whose n is past the exponent range); NaN stays NaN. The same
        // n and f as below for every x in the clamped range, so the same bits: 5 vector
        // operations fewer (two clamps, three for the rounding) for 2 more.
        llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
        llvm::Value* imm = b.getInt32(0x08);  // keep 0 fraction bits, nearest even, no precision exception
        llvm::Value* pass = llvm::Constant::getNullValue(f32);
        llvm::Value* f;
        if (lanes == 16)
            f = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_reduce_ps_512, {},
                                  {x, imm, pass, b.getInt16(0xffff), b.getInt32(4)});
        else
            f = b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_reduce_ps_256
                                             : llvm::Intrinsic::x86_avx512_mask_reduce_ps_128,
                                  {}, {x, imm, pass, b.getInt8(0xff)});
        llvm::Value* p = poly(f, kPow2);
        llvm::Value* all = llvm::ConstantInt::get(lanes == 16 ? b.getInt16Ty() : b.getInt8Ty(), uint64_t(-1), true);
        if (lanes == 16)
            return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {}, {p, n, pass, all, b.getInt32(4)});
        return b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                            : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128,
                                 {}, {p, n, pass, all});
    }
    // Past these bounds the result is inf or 0 already; clamping keeps n in range.
    llvm::Value* lo = k(base2 ? -152.0 : -105.0);
    llvm::Value* hi = k(base2 ? 129.0 : 90.0);
    llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(x, lo), lo, x);
    xc = b.CreateSelect(b.CreateFCmpOGT(xc, hi), hi, xc);
    const double* coef = base2 ? kPow2 : kExp;
    llvm::Value* magic = k(12582912.0);  // 1.5 * 2^23
    llvm::Value* shifted = base2 ? b.CreateFAdd(xc, magic) : fma(xc, k(1.4426950408889634), magic);
    llvm::Value* n = b.CreateFSub(shifted, magic);
    llvm::Value* r;
    if (base2) {
        r = b.CreateFSub(xc, n);
    } else {
        r = fma(b.CreateFNeg(n), k(0.693145751953125), xc);           // ln2, high 16 bits
        r = fma(b.CreateFNeg(n), k(1.4286068203094172e-06), r);       // ln2 - high part
    }
    llvm::Value* p = poly(r, coef);
    if (scalef) {
        llvm::Value* all = llvm::ConstantInt::get(lanes == 16 ? b.getInt16Ty() : b.getInt8Ty(), uint64_t(-1), true);
        llvm::Value* pass = llvm::Constant::getNullValue(f32);
        if (lanes == 16)  // rounding: the current mode (4)
            return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {}, {p, n, pass, all, b.getInt32(4)});
        return b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                            : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128,
                                 {}, {p, n, pass, all});
    }
    // 2^n = 2^n1 * 2^n2 with n1 = n >> 1: each factor is a normal float.
    llvm::Value* ni = b.CreateSub(b.CreateBitCast(shifted, i32), ki(0x4b400000));  // bits of 1.5 * 2^23
    llvm::Value* n1 = b.CreateAShr(ni, ki(1));
    llvm::Value* n2 = b.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* e) {
        return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ki(127)), ki(23)), f32);
    };
    return b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
}

// The lane counts of the vector variants of tilec's internal `tilec.vf.*` functions, and
// the "vector-function-abi-variant" attribute that names them for a call of `name`:
// `_ZGV_LLVM_N<lanes><params>_<name>(<name>.v<lanes>)` per lane count, `params` the
// vector ABI's parameter codes ("v" a vector, "u" uniform, "l" linear with step 1).
static const unsigned kVariantLanes[] = {4, 8, 16, 32};

static std::string vector_variants(const std::string& name, const char* params) {
    std::string variants;
    for (unsigned lanes : kVariantLanes)
        variants += std::string(variants.empty() ? "" : ",") + "_ZGV_LLVM_N" + std::to_string(lanes) + params + "_" +
                    name + "(" + name + ".v" + std::to_string(lanes) + ")";
    return variants;
}

// exp / exp2 of an f32 as a call of an internal function `tilec.vf.exp.f32` /
// `tilec.vf.exp2.f32` whose vector variants (4, 8, 16 and 32 lanes, the same code on
// vectors; vscalefps where the CPU has it) LLVM's loop vectoriser calls, by the call's
// "vector-function-abi-variant" attribute. inline_math_functions inlines them all
// after the optimisation pipeline, so the loops end up as branch-free vector code.
static llvm::Value* emit_exp_call(ModuleState& ms, llvm::IRBuilderBase& b, llvm::Value* x, bool base2) {
    const std::string name = (base2 ? "tilec.vf.exp2.f32" : "tilec.vf.exp.f32") + ms.cpu.function_suffix;
    llvm::Module& m = ms.module;
    llvm::Function* fn = m.getFunction(name);
    llvm::Type* f32 = b.getFloatTy();
    auto make = [&](const std::string& fname, llvm::Type* t, bool scalef, bool reduce = false) {
        auto* f = llvm::Function::Create(llvm::FunctionType::get(t, {t}, false), llvm::GlobalValue::InternalLinkage,
                                         fname, m);
        f->setDoesNotThrow();
        f->setDoesNotAccessMemory();
        f->setWillReturn();
        f->addFnAttr(llvm::Attribute::NoInline);  // until inline_math_functions
        llvm::IRBuilder<> fb(llvm::BasicBlock::Create(ms.ctx, "entry", f));
        fb.CreateRet(emit_exp_f32(fb, f->getArg(0), base2, scalef, reduce));
        return f;
    };
    if (!fn) {
        fn = make(name, f32, false);
        std::vector<llvm::Constant*> keep;
        for (unsigned lanes : kVariantLanes) {
            bool scalef = ms.cpu.avx512f && (lanes == 16 || (ms.cpu.avx512vl && lanes < 16));
            keep.push_back(make(name + ".v" + std::to_string(lanes), llvm::FixedVectorType::get(f32, lanes),
                                scalef, scalef && ms.cpu.avx512dq));
        }
        ms.keep_until_inlined(keep);
    }
    llvm::CallInst* call = b.CreateCall(fn, {x});
    call->setDoesNotThrow();
    call->setDoesNotAccessMemory();
    call->addFnAttr(llvm::Attribute::get(ms.ctx, "vector-function-abi-variant", vector_variants(name, "v")));
    return call;
}

// A prefetch (into L2 and closer: locality 2) of element `index` of an array of
// `elem_bytes`-byte elements at `base`, in a loop over `index` that LLVM's vectoriser may
// widen: a bare llvm.prefetch would keep the loop scalar, so this is a call of the
// internal `tilec.vf.prefetch.eN(base, index)`, whose variants for 4 to 32 lanes take
// the uniform base and the first lane's index (linear, step 1) and fetch one line, once
// per vector. Inlined like the math functions after the optimisation pipeline.
void FunctionLowering::emit_prefetch(llvm::Value* base, llvm::Value* index, unsigned elem_bytes) {
    const std::string name = "tilec.vf.prefetch.e" + std::to_string(elem_bytes) + ms_.cpu.function_suffix;
    llvm::Module& m = ms_.module;
    llvm::Function* fn = m.getFunction(name);
    if (!fn) {
        auto* ptr = b_.getPtrTy();
        auto make = [&](const std::string& fname) {
            auto* f = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr, b_.getInt64Ty()}, false),
                                             llvm::GlobalValue::InternalLinkage, fname, m);
            f->setDoesNotThrow();
            f->setWillReturn();
            f->setOnlyAccessesInaccessibleMemory();
            f->addFnAttr(llvm::Attribute::NoInline);  // until inline_math_functions
            llvm::IRBuilder<> fb(llvm::BasicBlock::Create(ms_.ctx, "entry", f));
            llvm::Value* p = fb.CreateGEP(fb.getIntNTy(8 * elem_bytes), f->getArg(0), f->getArg(1));
            fb.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr}, {p, fb.getInt32(0), fb.getInt32(2), fb.getInt32(1)});
            fb.CreateRetVoid();
            return f;
        };
        fn = make(name);
        std::vector<llvm::Constant*> keep;
        for (unsigned lanes : kVariantLanes) keep.push_back(make(name + ".v" + std::to_string(lanes)));
        ms_.keep_until_inlined(keep);
    }
    llvm::CallInst* call = b_.CreateCall(fn, {base, index});
    call->setDoesNotThrow();
    call->setOnlyAccessesInaccessibleMemory();
    call->addFnAttr(llvm::Attribute::get(ms_.ctx, "vector-function-abi-variant", vector_variants(name, "ul")));
}

// A non-temporal store of `value` (a storage value, 1 to 8 bytes) into element `index`
// of the array at `base`, in a loop over index that the vectoriser may widen: a store
// with !nontemporal metadata is not widened unless its alignment already is the
// vector's, which a scalar store's cannot be. So it is a call of the internal
// `tilec.vf.ntstore.<type>(base, index, value)`: the scalar function stores plainly (a
// remainder iteration), its variants for 4 to 32 lanes store the whole vector at
// base + index with !nontemporal, aligned to the vector's bytes up to 64. The caller
// guarantees that alignment: a vector's first index is a multiple of its lanes from a
// 64-byte aligned element 0. Inlined with the math functions after the pipeline.
void FunctionLowering::emit_streaming_store(llvm::Value* base, llvm::Value* index, llvm::Value* value) {
    llvm::Type* t = value->getType();
    const uint64_t elem_bytes = t->getPrimitiveSizeInBits() / 8;
    const std::string name = std::string("tilec.vf.ntstore.") + (t->isFloatingPointTy() ? "f" : "i") +
                             std::to_string(8 * elem_bytes) + ms_.cpu.function_suffix;
    llvm::Module& m = ms_.module;
    llvm::Function* fn = m.getFunction(name);
    if (!fn) {
        auto* ptr = b_.getPtrTy();
        auto make = [&](const std::string& fname, unsigned lanes) {
            llvm::Type* vt = lanes ? llvm::FixedVectorType::get(t, lanes) : t;
            auto* f = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr, b_.getInt64Ty(), vt}, false),
                                             llvm::GlobalValue::InternalLinkage, fname, m);
            f->setDoesNotThrow();
            f->setWillReturn();
            // Reads too, as far as LLVM knows: the loop vectoriser refuses a call that
            // only writes memory, but takes one with vector variants that may read.
            f->setMemoryEffects(llvm::MemoryEffects::argMemOnly() | llvm::MemoryEffects::inaccessibleMemOnly());
            f->addFnAttr(llvm::Attribute::NoInline);  // until inline_math_functions
            llvm::IRBuilder<> fb(llvm::BasicBlock::Create(ms_.ctx, "entry", f));
            llvm::Value* p = fb.CreateGEP(t, f->getArg(0), f->getArg(1));
            if (!lanes) {
                fb.CreateStore(f->getArg(2), p);
                // Something LLVM must take for a read, or it infers that the function
                // only writes (and then the call keeps the loop scalar, as above).
                fb.CreateIntrinsic(llvm::Intrinsic::sideeffect, {}, {});
            } else {
                uint64_t align = std::min<uint64_t>(64, lanes * elem_bytes);
                auto* st = fb.CreateAlignedStore(f->getArg(2), p, llvm::Align(align));
                st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                                llvm::MDNode::get(ms_.ctx, {llvm::ConstantAsMetadata::get(fb.getInt32(1))}));
            }
            fb.CreateRetVoid();
            return f;
        };
        fn = make(name, 0);
        std::vector<llvm::Constant*> keep;
        for (unsigned lanes : kVariantLanes) keep.push_back(make(name + ".v" + std::to_string(lanes), lanes));
        ms_.keep_until_inlined(keep);
    }
    llvm::CallInst* call = b_.CreateCall(fn, {base, index, value});
    call->setDoesNotThrow();
    call->setMemoryEffects(llvm::MemoryEffects::argMemOnly() | llvm::MemoryEffects::inaccessibleMemOnly());
    call->addFnAttr(llvm::Attribute::get(ms_.ctx, "vector-function-abi-variant", vector_variants(name, "ulv")));
    emitted_streaming_stores = true;
}

llvm::Value* FunctionLowering::lower_call(const ir::CallNode& e) {
    if (ir::is_warp_shuffle(e.op))
        TILEC_ICE(std::string("CPU backend: warp shuffle ") + ir::call_op_name(e.op) + " (thread-level IR only)");
    DataType t = e.type;
    std::vector<llvm::Value*> args;
    for (auto& a : e.args) args.push_back(convert(expr(a), a->type, t));
    auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, args.at(0)); };
    bool is_float = t.is_float();
    switch (e.op) {
    case ir::CallOp::Abs:
        if (is_float) return unary(llvm::Intrinsic::fabs);
        if (t.is_uint() || t.is_bool()) return args.at(0);
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args.at(0), b_.getFalse());
    case ir::CallOp::Floor: return is_float ? unary(llvm::Intrinsic::floor) : args.at(0);
    case ir::CallOp::Ceil: return is_float ? unary(llvm::Intrinsic::ceil) : args.at(0);
    default: break;
    }
    if (!is_float) TILEC_ICE(std::string("CPU backend: ") + ir::call_op_name(e.op) + " on " + t.str());
    llvm::Value* x = args.at(0);
    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
    const bool f32 = x->getType()->isFloatTy();
    switch (e.op) {
    case ir::CallOp::Exp: return f32 ? emit_exp_call(ms_, b_, x, false) : unary(llvm::Intrinsic::exp);
    case ir::CallOp::Exp2: return f32 ? emit_exp_call(ms_, b_, x, true) : unary(llvm::Intrinsic::exp2);
    case ir::CallOp::Log: return unary(llvm::Intrinsic::log);
    case ir::CallOp::Log2: return unary(llvm::Intrinsic::log2);
    case ir::CallOp::Sqrt: return unary(llvm::Intrinsic::sqrt);
    case ir::CallOp::Rsqrt: return b_.CreateFDiv(one, unary(llvm::Intrinsic::sqrt));
    case ir::CallOp::Pow: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args.at(0), args.at(1));
    case ir::CallOp::Sigmoid: {
        llvm::Value* nx = b_.CreateFNeg(x);
        llvm::Value* e_nx = f32 ? emit_exp_call(ms_, b_, nx, false) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, nx);
        return b_.CreateFDiv(one, b_.CreateFAdd(one, e_nx));
    }
    case ir::CallOp::Tanh: {
        auto* call = b_.CreateCall(ms_.libc(x->getType()->isDoubleTy() ? "tanh" : "tanhf"), {x});
        call->setDoesNotAccessMemory();
        call->setDoesNotThrow();
        return call;
    }
    default: break;
    }
    TILEC_ICE(std::string("CPU backend: unknown call ") + ir::call_op_name(e.op));
}

}  // namespace tilec::codegen
