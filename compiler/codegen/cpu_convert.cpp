// Types and conversions of the CPU backend: register and storage types of each element
// type, casts between every pair, and the narrow-float encoders (f16, bf16, f8) in IR.
#include <cmath>

#include <llvm/ADT/APFloat.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "codegen/cpu_lowering.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;
using ir::TypeKind;

bool is_narrow_float(DataType t) {
    return (t.kind == TypeKind::Float && t.bits == 16) || t.kind == TypeKind::BFloat ||
           t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2;
}

llvm::Type* reg_type(llvm::LLVMContext& ctx, DataType t) {
    if (!t.is_scalar()) TILEC_ICE("CPU backend: vector type " + t.str() + " in tile-level IR");
    if (t.is_bool()) return llvm::Type::getInt1Ty(ctx);
    if (t.is_integer()) return llvm::Type::getIntNTy(ctx, t.bits);
    if (t.kind == TypeKind::Float && t.bits == 64) return llvm::Type::getDoubleTy(ctx);
    if (t.is_float()) return llvm::Type::getFloatTy(ctx);
    TILEC_ICE("CPU backend: no register type for " + t.str());
}

llvm::Type* storage_type(llvm::LLVMContext& ctx, DataType t) {
    if (t.is_bool() || t.bits == 4) return llvm::Type::getInt8Ty(ctx);
    if (t.kind == TypeKind::Float && t.bits == 16) return llvm::Type::getHalfTy(ctx);
    if (t.kind == TypeKind::BFloat) return llvm::Type::getInt16Ty(ctx);
    if (t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2) return llvm::Type::getInt8Ty(ctx);
    return reg_type(ctx, t);
}

namespace {

// A binary float format: E exponent bits, M mantissa bits; IEEE-like (inf and NaNs in
// the all-ones exponent) or OCP "FN" (only all-ones is NaN; overflow saturates).
struct Format {
    int exp_bits;
    int man_bits;
    bool ieee;
    int bias() const { return (1 << (exp_bits - 1)) - 1; }
    int emin() const { return 1 - bias(); }
    int emax() const { return ((1 << exp_bits) - (ieee ? 2 : 1)) - bias(); }
    uint64_t exp_mask() const { return (uint64_t{1} << exp_bits) - 1; }
    uint64_t top_mantissa() const { return (uint64_t{1} << man_bits) - (ieee ? 1 : 2); }
    uint64_t max_bits() const { return ((ieee ? exp_mask() - 1 : exp_mask()) << man_bits) | top_mantissa(); }
    uint64_t inf_bits() const { return exp_mask() << man_bits; }
    uint64_t nan_bits() const {
        return ieee ? inf_bits() | (uint64_t{1} << (man_bits - 1))
                    : (exp_mask() << man_bits) | ((1u << man_bits) - 1);
    }
    double max_value() const {
        double mant =
            1.0 + static_cast<double>(top_mantissa()) / static_cast<double>(uint64_t{1} << man_bits);
        return std::ldexp(mant, emax());
    }
};

Format format_of(DataType t) {
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 16) return {5, 10, true};
        break;
    case TypeKind::BFloat: return {8, 7, true};
    case TypeKind::Float8E4M3: return {4, 3, false};
    case TypeKind::Float8E5M2: return {5, 2, true};
    default: break;
    }
    TILEC_ICE("CPU backend: no narrow float format for " + t.str());
}

const llvm::fltSemantics& semantics_of(DataType t) {
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 16) return llvm::APFloat::IEEEhalf();
        if (t.bits == 32) return llvm::APFloat::IEEEsingle();
        return llvm::APFloat::IEEEdouble();
    case TypeKind::BFloat: return llvm::APFloat::BFloat();
    case TypeKind::Float8E4M3: return llvm::APFloat::Float8E4M3FN();
    case TypeKind::Float8E5M2: return llvm::APFloat::Float8E5M2();
    default: TILEC_ICE("CPU backend: not a float type: " + t.str());
    }
}

// `v` (a double) rounded to `t` (nearest, ties to even) and widened back to f32 or f64
// exactly. f8e4m3 saturates like the encoder.
llvm::APFloat round_constant(double v, DataType t) {
    // f8e4m3 saturates: every finite or infinite value beyond 448 becomes +-448.
    if (t.kind == TypeKind::Float8E4M3 && !std::isnan(v) && std::fabs(v) > 448.0) v = v > 0 ? 448.0 : -448.0;
    llvm::APFloat f(v);
    bool loses = false;
    f.convert(semantics_of(t), llvm::APFloat::rmNearestTiesToEven, &loses);
    const auto& wide = (t.kind == TypeKind::Float && t.bits == 64) ? llvm::APFloat::IEEEdouble()
                                                                   : llvm::APFloat::IEEEsingle();
    f.convert(wide, llvm::APFloat::rmNearestTiesToEven, &loses);
    return f;
}

}  // namespace

ModuleState::ModuleState(llvm::Module& m, const SourceManager* src)
    : module(m), ctx(m.getContext()), sources(src) {}

void ModuleState::keep_until_inlined(const std::vector<llvm::Constant*>& fns) {
    std::vector<llvm::GlobalValue*> list;
    for (auto* f : fns) list.push_back(llvm::cast<llvm::GlobalValue>(f));
    llvm::appendToCompilerUsed(module, list);
}

std::string ModuleState::describe(SourceLoc loc) const {
    if (!loc.valid()) return "<unknown>";
    std::string file = sources && loc.file != 0 ? sources->path(loc.file) : "<input>";
    return file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

llvm::Function* ModuleState::encoder(DataType t) {
    std::string name = "tilec.encode." + t.str();
    if (auto it = encoders_.find(name); it != encoders_.end()) return it->second;
    Format fmt = format_of(t);
    int width = 1 + fmt.exp_bits + fmt.man_bits;
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* f64 = llvm::Type::getDoubleTy(ctx);
    auto* out_ty = llvm::Type::getIntNTy(ctx, width);
    auto* fty = llvm::FunctionType::get(out_ty, {f64}, false);
    auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, module);
    fn->addFnAttr(llvm::Attribute::AlwaysInline);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    fn->setDoesNotAccessMemory();
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    llvm::Value* x = fn->getArg(0);
    auto c64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, static_cast<uint64_t>(v)); };
    auto cf = [&](double v) { return llvm::ConstantFP::get(f64, v); };
    auto pow2 = [&](int e) { return cf(std::ldexp(1.0, e)); };

    llvm::Value* bits = b.CreateBitCast(x, i64);
    llvm::Value* sign = b.CreateLShr(bits, 63);
    llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* is_nan = b.CreateFCmpUNO(x, x);
    // The binade of |x|, clamped to [emin, emax + 1]: below emin the quantum is the
    // subnormal one; above emax everything overflows anyway.
    llvm::Value* e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, 52), c64(0x7ff)), c64(1023));
    e = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, e, c64(fmt.emin()));
    e = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, e, c64(fmt.emax() + 1));
    // r = roundeven(|x| / q) * q with the quantum q = 2^(e - M): exact scalings by powers
    // of two around one rounding to an integer.
    llvm::Value* q = b.CreateBitCast(b.CreateShl(b.CreateAdd(e, c64(1023 - fmt.man_bits)), 52), f64);
    llvm::Value* q_inv = b.CreateBitCast(b.CreateShl(b.CreateSub(c64(1023 + fmt.man_bits), e), 52), f64);
    llvm::Value* r =
        b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(ax, q_inv)), q);
    llvm::Value* overflow = b.CreateFCmpOGT(r, cf(fmt.max_value()));
    // Encode r: a normal number from its double fields, a subnormal as a count of quanta.
    llvm::Value* rb = b.CreateBitCast(r, i64);
    llvm::Value* re = b.CreateSub(b.CreateAnd(b.CreateLShr(rb, 52), c64(0x7ff)), c64(1023 - fmt.bias()));
    llvm::Value* rm = b.CreateAnd(b.CreateLShr(rb, 52 - fmt.man_bits), c64((int64_t{1} << fmt.man_bits) - 1));
    llvm::Value* normal = b.CreateOr(b.CreateShl(re, fmt.man_bits), rm);
    llvm::Value* subnormal = b.CreateFPToUI(b.CreateFMul(r, pow2(fmt.man_bits - fmt.emin())), i64);
    llvm::Value* is_normal = b.CreateFCmpOGE(r, pow2(fmt.emin()));
    llvm::Value* mag = b.CreateSelect(is_normal, normal, subnormal);
    mag =
        b.CreateSelect(overflow, c64(static_cast<int64_t>(fmt.ieee ? fmt.inf_bits() : fmt.max_bits())), mag);
    mag = b.CreateSelect(is_nan, c64(static_cast<int64_t>(fmt.nan_bits())), mag);
    llvm::Value* res = b.CreateOr(b.CreateShl(sign, fmt.exp_bits + fmt.man_bits), mag);
    b.CreateRet(b.CreateTrunc(res, out_ty));
    encoders_[name] = fn;
    return fn;
}

llvm::GlobalVariable* ModuleState::f8_table(DataType t) {
    std::string name = "tilec.decode." + t.str();
    if (auto it = tables_.find(name); it != tables_.end()) return it->second;
    std::vector<float> values(256);
    for (unsigned code = 0; code < 256; ++code) {
        llvm::APFloat f(semantics_of(t), llvm::APInt(8, code));
        bool loses = false;
        f.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &loses);
        values[code] = f.convertToFloat();
    }
    auto* init = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<float>(values));
    auto* gv = new llvm::GlobalVariable(module, init->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                        init, name);
    gv->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    gv->setAlignment(llvm::Align(64));
    tables_[name] = gv;
    return gv;
}

llvm::Constant* ModuleState::c_string(const std::string& s) {
    if (auto it = strings_.find(s); it != strings_.end()) return it->second;
    auto* init = llvm::ConstantDataArray::getString(ctx, s, true);
    auto* gv = new llvm::GlobalVariable(module, init->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                        init, ".str");
    gv->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    gv->setAlignment(llvm::Align(1));
    strings_[s] = gv;
    return gv;
}

llvm::FunctionCallee ModuleState::tile_set_error() {
    // tile_status tile_set_error(tile_status, const char* fmt, ...)
    auto* fty = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx),
                                        {llvm::Type::getInt32Ty(ctx), llvm::PointerType::get(ctx, 0)}, true);
    return module.getOrInsertFunction("tile_set_error", fty);
}

llvm::FunctionCallee ModuleState::tile_cpu_launch() {
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i64 = llvm::Type::getInt64Ty(ctx);
    auto* fty = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), {ptr, i64, i64, i64, ptr, ptr}, false);
    return module.getOrInsertFunction("tile_cpu_launch", fty);
}

llvm::FunctionCallee ModuleState::tile_cpu_check_options() {
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* fty = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), {ptr, ptr}, false);
    return module.getOrInsertFunction("tile_cpu_check_options", fty);
}

llvm::FunctionCallee ModuleState::tile_cpu_x86_level() {
    return module.getOrInsertFunction("tile_cpu_x86_level",
                                      llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), false));
}

llvm::FunctionCallee ModuleState::libc(const std::string& name) {
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* f32 = llvm::Type::getFloatTy(ctx);
    auto* f64 = llvm::Type::getDoubleTy(ctx);
    llvm::FunctionType* fty = nullptr;
    if (name == "malloc")
        fty = llvm::FunctionType::get(ptr, {llvm::Type::getInt64Ty(ctx)}, false);
    else if (name == "free")
        fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
    else if (name == "printf")
        fty = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), {ptr}, true);
    else if (name == "tanhf")
        fty = llvm::FunctionType::get(f32, {f32}, false);
    else if (name == "tanh")
        fty = llvm::FunctionType::get(f64, {f64}, false);
    else
        TILEC_ICE("CPU backend: unknown C library function " + name);
    return module.getOrInsertFunction(name, fty);
}

// ---------------------------------------------------------------------------------
// Conversions

llvm::Value* FunctionLowering::const_int(int64_t v, DataType t) {
    return llvm::ConstantInt::get(reg_type(ms_.ctx, t), static_cast<uint64_t>(ir::normalize_int(v, t)),
                                  t.is_int());
}

llvm::Value* FunctionLowering::const_value(double v, DataType t) {
    if (!t.is_float()) return const_int(static_cast<int64_t>(v), t);
    return llvm::ConstantFP::get(ms_.ctx, round_constant(v, t));
}

llvm::Value* FunctionLowering::from_storage(llvm::Value* v, DataType t) {
    auto& ctx = ms_.ctx;
    if (t.is_bool()) return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    if (t.bits == 4) return b_.CreateTrunc(v, reg_type(ctx, t));
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 16) return b_.CreateFPExt(v, llvm::Type::getFloatTy(ctx));
        return v;
    case TypeKind::BFloat: {
        auto* i32 = llvm::Type::getInt32Ty(ctx);
        return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, i32), 16), llvm::Type::getFloatTy(ctx));
    }
    case TypeKind::Float8E4M3:
    case TypeKind::Float8E5M2: {
        auto* table = ms_.f8_table(t);
        auto* idx = b_.CreateZExt(v, llvm::Type::getInt64Ty(ctx));
        auto* p = b_.CreateInBoundsGEP(table->getValueType(), table, {b_.getInt64(0), idx});
        return b_.CreateLoad(llvm::Type::getFloatTy(ctx), p);
    }
    default: return v;
    }
}

llvm::Value* FunctionLowering::to_storage(llvm::Value* v, DataType t) {
    auto& ctx = ms_.ctx;
    if (t.is_bool()) return b_.CreateZExt(v, llvm::Type::getInt8Ty(ctx));
    if (t.bits == 4) return t.is_int() ? b_.CreateSExt(v, b_.getInt8Ty()) : b_.CreateZExt(v, b_.getInt8Ty());
    if (t.kind == TypeKind::Float && t.bits == 16) {
        if (v->getType()->isDoubleTy())
            return b_.CreateBitCast(b_.CreateCall(ms_.encoder(t), {v}), b_.getHalfTy());
        return b_.CreateFPTrunc(v, b_.getHalfTy());
    }
    if (is_narrow_float(t)) {
        llvm::Value* d = v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, b_.getDoubleTy());
        return b_.CreateCall(ms_.encoder(t), {d});
    }
    return v;
}

llvm::Value* FunctionLowering::convert(llvm::Value* v, DataType from, DataType to) {
    auto& ctx = ms_.ctx;
    llvm::Type* to_reg = reg_type(ctx, to);
    if (from == to && !is_narrow_float(to)) return v;
    // To bool: != 0 (NaN is true, as in C).
    if (to.is_bool()) {
        if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
        return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (to.is_integer()) {
        if (from.is_float()) {
            auto id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
            return b_.CreateIntrinsic(id, {to_reg, v->getType()}, {v});
        }
        // From an integer or bool: wrap (bool and unsigned zero-extend).
        return b_.CreateIntCast(v, to_reg, from.is_int());
    }
    // To a float.
    if (!from.is_float()) {
        bool is_signed = from.is_int();
        if (!is_narrow_float(to)) return is_signed ? b_.CreateSIToFP(v, to_reg) : b_.CreateUIToFP(v, to_reg);
        llvm::Value* d =
            is_signed ? b_.CreateSIToFP(v, b_.getDoubleTy()) : b_.CreateUIToFP(v, b_.getDoubleTy());
        return from_storage(to_storage(d, to), to);
    }
    if (!is_narrow_float(to)) {
        if (v->getType() == to_reg) return v;
        return to_reg->isDoubleTy() ? b_.CreateFPExt(v, to_reg) : b_.CreateFPTrunc(v, to_reg);
    }
    // Round to the narrow type once (from the f32 or f64 register), then widen exactly.
    return from_storage(to_storage(v, to), to);
}

}  // namespace tilec::codegen
