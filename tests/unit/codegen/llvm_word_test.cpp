// The gfx942 fp8 MFMA lowering emits scalar::fp8_ocp_to_fnuz through codegen/llvm_word.h.
// The formula is tested on uint64_t (scalar_float_formats_test.cpp); this runs the LLVM
// IR the lowering builds from it (on constants, which the IRBuilder folds exactly as it
// would compute them) and compares every byte value at every byte position.
#include <catch2/catch.hpp>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>

#include <cstdint>
#include <random>

#include "codegen/llvm_word.h"
#include "scalar/fp8_fnuz.h"

using tilec::codegen::gpu::LlvmWord;

TEST_CASE("fp8 OCP -> FNUZ rewrite as LLVM IR equals the formula on uint64_t", "[codegen][fp8]") {
    llvm::LLVMContext ctx;
    llvm::IRBuilder<> b(ctx);
    std::mt19937_64 rng(942);
    for (bool e5m2 : {false, true})
        for (int byte = 0; byte < 256; ++byte)
            for (int pos = 0; pos < 8; ++pos) {
                uint64_t x = rng();
                x = (x & ~(uint64_t(0xff) << (8 * pos))) | uint64_t(byte) << (8 * pos);
                LlvmWord w{&b, b.getInt64(x)};
                llvm::Value* r =
                    tilec::scalar::fp8_ocp_to_fnuz(w, e5m2, [&](uint64_t c) { return LlvmWord{&b, b.getInt64(c)}; }).v;
                auto* c = llvm::dyn_cast<llvm::ConstantInt>(r);
                REQUIRE(c != nullptr);
                REQUIRE(c->getZExtValue() == tilec::scalar::fp8_ocp_to_fnuz(x, e5m2));
            }
}
