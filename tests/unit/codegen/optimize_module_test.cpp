// optimize_module's skipped passes (compiler/codegen/cpu_optimize.cpp): a class name
// declines every run of a pass, "Name#N" only its N-th run on each function. The GPU
// modules leave out single runs of InstCombine that find no work in them
// (gpu_lowering.cpp), so the count must reach every run and restart for each function.
// The probe: (x ^ -1) + 1 is -x, a fold of InstCombine's alone in O3.
#include <catch2/catch.hpp>

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu_lowering.h"
#include "host_target_machine.h"

namespace {

// Two functions with the probe; returns, per function, whether the xor survived O3.
std::vector<bool> xor_survives(const std::vector<std::string>& skipped) {
    static const char* kIr = R"(
define i32 @first(i32 %x) {
  %a = xor i32 %x, -1
  %b = add i32 %a, 1
  ret i32 %b
}
define i32 @second(i32 %x) {
  %a = xor i32 %x, -1
  %b = add i32 %a, 1
  ret i32 %b
}
)";
    llvm::LLVMContext ctx;
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(kIr, diag, ctx);
    REQUIRE(m);
    auto tm = host_target_machine();
    m->setDataLayout(tm->createDataLayout());
    tilec::codegen::optimize_module(*m, *tm, skipped);
    std::vector<bool> survives;
    for (auto& fn : *m) {
        bool found = false;
        for (auto& bb : fn)
            for (auto& inst : bb)
                if (inst.getOpcode() == llvm::Instruction::Xor) found = true;
        survives.push_back(found);
    }
    return survives;
}

}  // namespace

TEST_CASE("optimize_module skips a pass's every run, or its N-th run on each function",
          "[codegen][optimize-module]") {
    CHECK(xor_survives({}) == std::vector<bool>{false, false});
    CHECK(xor_survives({"InstCombinePass"}) == std::vector<bool>{true, true});
    // A later run folds what the first one was not allowed to.
    CHECK(xor_survives({"InstCombinePass#1"}) == std::vector<bool>{false, false});
    // All eight runs O3 makes on each function, counted per function: declining them one
    // by one is declining the pass.
    std::vector<std::string> every_run;
    for (int run = 1; run <= 8; ++run) every_run.push_back("InstCombinePass#" + std::to_string(run));
    CHECK(xor_survives(every_run) == std::vector<bool>{true, true});
    every_run.pop_back();
    CHECK(xor_survives(every_run) == std::vector<bool>{false, false});
}
