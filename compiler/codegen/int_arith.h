// Integer floor division and modulo in LLVM IR as the language defines them (scalar.h),
// shared by the CPU and GPU backends: a signed quotient that overflows wraps.
#pragma once

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>

namespace tilec::codegen {

// Signed floor division (`div`) or floor modulo of `a` by `d` (same integer type).
// LLVM's sdiv/srem of the type's minimum by -1 is undefined (x86 raises SIGFPE); the
// language wraps: MIN // -1 = MIN, x % -1 = 0. Where `d` may be -1, it divides by 1
// instead and negates; a constant divisor other than -1 gets the plain sequence.
inline llvm::Value* signed_floor_div_mod(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* d, bool div) {
    llvm::Type* ty = a->getType();
    llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
    llvm::Value* minus_one = nullptr;
    llvm::Value* divisor = d;
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(d);
    if (!c || c->isMinusOne()) {
        minus_one = b.CreateICmpEQ(d, llvm::ConstantInt::getSigned(ty, -1));
        divisor = b.CreateSelect(minus_one, llvm::ConstantInt::get(ty, 1), d);
    }
    // C's truncating quotient and remainder, corrected when the remainder is non-zero
    // and its sign differs from the divisor's.
    llvm::Value* q = b.CreateSDiv(a, divisor);
    llvm::Value* r = b.CreateSRem(a, divisor);
    llvm::Value* fix =
        b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpNE(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(d, zero)));
    if (div) {
        llvm::Value* floor_q = b.CreateSub(q, b.CreateZExt(fix, ty));
        // With the divisor 1, q = a and r = 0 (no fix): -a, wrapping.
        return minus_one ? b.CreateSelect(minus_one, b.CreateNeg(a), floor_q) : floor_q;
    }
    // With the divisor 1, r = 0, which is x % -1 too.
    return b.CreateSelect(fix, b.CreateAdd(r, d), r);
}

}  // namespace tilec::codegen
