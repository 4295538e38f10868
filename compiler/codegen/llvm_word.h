// An integer value of an IRBuilder with C++'s bit operators, so that a formula written
// once as a template over its word type (scalar/fp8_fnuz.h) is emitted as LLVM IR, and
// tested (tests/unit/codegen/llvm_word_test.cpp) as that same IR.
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace tilec::codegen::gpu {

struct LlvmWord {
    llvm::IRBuilder<>* b;
    llvm::Value* v;
    LlvmWord operator&(LlvmWord o) const { return {b, b->CreateAnd(v, o.v)}; }
    LlvmWord operator|(LlvmWord o) const { return {b, b->CreateOr(v, o.v)}; }
    LlvmWord operator+(LlvmWord o) const { return {b, b->CreateAdd(v, o.v)}; }
    LlvmWord operator-(LlvmWord o) const { return {b, b->CreateSub(v, o.v)}; }
    LlvmWord operator~() const { return {b, b->CreateNot(v)}; }
    // Logical: the formulas move bits within bytes, and a sign copied in would leak.
    LlvmWord operator>>(unsigned n) const { return {b, b->CreateLShr(v, n)}; }
};

}  // namespace tilec::codegen::gpu
