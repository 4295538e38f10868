// What every backend's LLVM module goes through, CPU and GPU alike: its context and
// setup for the target machine, LLVM's error diagnostics collected, the module verified, errors of a pipeline turned into internal
// errors, and the module written as LLVM IR text or as the target's assembly / object.
// Each backend keeps what differs (function attributes, which passes run). Part of the
// CPU backend's library (tilec_codegen): no GPU code, and the GPU backends link it.
//
// Internal to compiler/codegen: it includes LLVM headers.
#pragma once
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <optional>
#include <string>

namespace tilec::codegen {

// An LLVMContext diagnostic handler that appends error texts (one a line) to the
// std::string* context; remarks and warnings ("loop not vectorized") are dropped. A
// backend's LLVM errors are its bugs: checked with check_llvm_errors.
void on_llvm_diagnostic(const llvm::DiagnosticInfo* info, void* context);

// From the first call on, an LLVM fatal error prints an internal compiler error (no
// source location: it is tilec's bug) and exits with status 2 instead of LLVM's exit 1
// or abort. BackendModule calls it; code that uses LLVM without one calls it first.
void install_llvm_fatal_error_handler();

// One compilation's LLVM context and module, set up for `tm`: the module named after the
// source (`name`), with `triple` and tm's data layout; LLVM's error diagnostics go to
// llvm_errors (on_llvm_diagnostic). Never copied or moved: the context's handler holds
// the address of llvm_errors.
//
// No two modules of one process ever share an address: each is built in storage that is
// never reused (a few hundred bytes a module). LLVM 19's NVPTX backend caches every
// module's nvvm.annotations (maxntid, kernel) in a process-wide map keyed by the
// module's and the function's addresses, and drops an entry only when its AsmPrinter
// finishes that module. The NVIDIA tasks optimise a module and hand it on as bitcode, so
// the entry stayed, and a later module built at the same address read another kernel's
// block size: under -j, the O3 run of a 256-thread gemm assumed tid.x < 128 (wrong code,
// found as PTX that differed between runs). Hidden symbols only clear the cache.
struct BackendModule {
    BackendModule(const std::string& name, const std::string& triple, const llvm::TargetMachine& tm);
    ~BackendModule();
    BackendModule(const BackendModule&) = delete;
    BackendModule& operator=(const BackendModule&) = delete;

    llvm::LLVMContext context;
    std::string llvm_errors;
    llvm::Module& module;  // destroyed before the context, its storage kept (above)
};

// `m` as bitcode, its use-list order kept (a module read back from it optimises to the
// same code as `m` itself would).
std::string module_bitcode(const llvm::Module& m);
// Reads bitcode from module_bitcode and links it into `into`'s module (`name` names the
// buffer); an internal error of the `who` backend if it cannot.
void link_bitcode(const std::string& bitcode, BackendModule& into, const std::string& name, const std::string& who);

// An internal error "<who> backend produced invalid LLVM IR: ..." unless `m` verifies.
void verify_module(llvm::Module& m, const std::string& who);

// An internal error "LLVM failed to <stage> the <who> module: <llvm_errors>" unless
// the errors that on_llvm_diagnostic collected are empty.
void check_llvm_errors(const std::string& llvm_errors, const std::string& stage, const std::string& who);

// The module as LLVM IR text (no `kind`), or as what `tm` emits for `kind`: an internal
// error `cannot_emit` if it cannot, and one as from check_llvm_errors("compile", who)
// if code generation reported errors.
std::string emit_module(llvm::Module& m, llvm::TargetMachine& tm, std::optional<llvm::CodeGenFileType> kind,
                        const std::string& who, const std::string& cannot_emit, const std::string& llvm_errors);

}  // namespace tilec::codegen
