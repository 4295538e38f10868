// LLVM's O3 pipeline on the CPU module, tuned by the host TargetMachine (vector widths,
// costs). Its own file because PassBuilder's headers are the slowest to compile.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "codegen/cpu_lowering.h"

namespace tilec::codegen {

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const std::vector<std::string>& skipped) {
    // A skipped optional pass is declined by a PassInstrumentation callback (as
    // opt-bisect skips passes); required ones (the verifier, analyses) always run.
    // "Pass#N" declines only the N-th run of Pass on each function: O3 runs some passes
    // several times (InstCombine eight), and only some of the runs find work in a module.
    // The count follows the pipeline's fixed order and is keyed by the function's name
    // (not its address, which a function made after another's deletion could reuse), so
    // the result is deterministic; loop and module passes are counted per module.
    llvm::PassInstrumentationCallbacks callbacks;
    std::map<std::pair<std::string, std::string>, int> runs;
    if (!skipped.empty())
        callbacks.registerShouldRunOptionalPassCallback(
            [&skipped, &runs](llvm::StringRef pass, llvm::Any ir) {
                auto is_skipped = [&](const std::string& name) {
                    return std::find(skipped.begin(), skipped.end(), name) != skipped.end();
                };
                if (is_skipped(pass.str())) return false;
                const auto* const* fn = llvm::any_cast<const llvm::Function*>(&ir);
                int run = ++runs[{pass.str(), fn ? (*fn)->getName().str() : std::string()}];
                return !is_skipped(pass.str() + "#" + std::to_string(run));
            });
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    tuning.LoopUnrolling = true;
    llvm::PassBuilder pb(&tm, tuning, std::nullopt, &callbacks);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
}

void inline_math_functions(llvm::Module& m) {
    auto is_math = [](const llvm::Function* f) {
        return f && f->hasInternalLinkage() && f->getName().starts_with("tilec.vf.");
    };
    llvm::removeFromUsedLists(m, [&](llvm::Constant* c) { return is_math(llvm::dyn_cast<llvm::Function>(c)); });
    std::vector<llvm::Function*> math;
    for (auto& f : m)
        if (is_math(&f)) math.push_back(&f);
    // Inside out: a variant calls nothing, so one sweep over the callers suffices.
    std::vector<llvm::CallBase*> calls;
    for (auto& f : m)
        for (auto& bb : f)
            for (auto& inst : bb)
                if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst); call && is_math(call->getCalledFunction()))
                    calls.push_back(call);
    for (auto* call : calls) {
        llvm::InlineFunctionInfo info;
        llvm::InlineFunction(*call, info);
    }
    for (auto* f : math) {
        f->removeDeadConstantUsers();  // the old llvm.compiler.used array
        if (f->use_empty()) f->eraseFromParent();
    }
}

}  // namespace tilec::codegen
