// What every backend's LLVM module goes through (module_output.h): its setup,
// diagnostics, verification, and LLVM IR / assembly / object output, written once for
// the CPU and GPU backends.
#include "codegen/module_output.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "support/diagnostics.h"

namespace tilec::codegen {

void on_llvm_diagnostic(const llvm::DiagnosticInfo* info, void* context) {
    if (info->getSeverity() != llvm::DS_Error) return;
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::DiagnosticPrinterRawOStream printer(os);
    info->print(printer);
    static_cast<std::string*>(context)->append(text + "\n");
}

BackendModule::BackendModule(const std::string& name, const std::string& triple, const llvm::TargetMachine& tm)
    : module(name, context) {
    context.setDiagnosticHandlerCallBack(on_llvm_diagnostic, &llvm_errors);
    module.setSourceFileName(name);
    module.setTargetTriple(triple);
    module.setDataLayout(tm.createDataLayout());
}

void verify_module(llvm::Module& m, const std::string& who) {
    std::string verify_errors;
    llvm::raw_string_ostream vos(verify_errors);
    if (llvm::verifyModule(m, &vos)) TILEC_ICE(who + " backend produced invalid LLVM IR: " + verify_errors);
}

void check_llvm_errors(const std::string& llvm_errors, const std::string& stage, const std::string& who) {
    if (!llvm_errors.empty()) TILEC_ICE("LLVM failed to " + stage + " the " + who + " module: " + llvm_errors);
}

std::string emit_module(llvm::Module& m, llvm::TargetMachine& tm, std::optional<llvm::CodeGenFileType> kind,
                        const std::string& who, const std::string& cannot_emit, const std::string& llvm_errors) {
    std::string out;
    if (!kind) {
        llvm::raw_string_ostream os(out);
        m.print(os, nullptr);
        return out;
    }
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (tm.addPassesToEmitFile(pm, os, nullptr, *kind)) TILEC_ICE(cannot_emit);
    pm.run(m);
    check_llvm_errors(llvm_errors, "compile", who);
    return std::string(buffer.begin(), buffer.end());
}

}  // namespace tilec::codegen
