// What every backend's LLVM module goes through (module_output.h): its setup,
// diagnostics, verification, and LLVM IR / assembly / object output, written once for
// the CPU and GPU backends.
#include "codegen/module_output.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/Signals.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "codegen/cpu_backend.h"
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

namespace {

// LLVM's fatal errors ("LLVM ERROR: ...", then exit(1) or abort) are tilec's bugs, never
// the input's: they are reported as internal errors with exit status 2. The handler must
// not return, and cannot throw InternalError through LLVM's frames (built without
// exceptions), so it leaves the process itself.
void on_llvm_fatal_error(void*, const char* reason, bool) {
    std::fflush(nullptr);
    std::string text = std::string("tilec: internal compiler error: LLVM: ") + reason +
                       "\nThis is a bug in tilec, not in your kernel; please report it with the input.\n";
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    llvm::sys::RunInterruptHandlers();  // removes the files LLVM was writing
    std::_Exit(2);
}

}  // namespace

void install_llvm_fatal_error_handler() {
    static std::once_flag once;
    std::call_once(once, [] { llvm::install_fatal_error_handler(on_llvm_fatal_error, nullptr); });
}

void debug_llvm_fatal_error() {
    install_llvm_fatal_error_handler();
    llvm::report_fatal_error("deliberate fatal error (--debug-llvm-fatal-error)");
}

std::string module_bitcode(const llvm::Module& m) {
    std::string out;
    llvm::raw_string_ostream os(out);
    llvm::WriteBitcodeToFile(m, os, /*ShouldPreserveUseListOrder=*/true);
    os.flush();
    return out;
}

void link_bitcode(const std::string& bitcode, BackendModule& into, const std::string& name, const std::string& who) {
    auto part = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, name), into.context);
    if (!part) TILEC_ICE(who + " backend: cannot read back an export's bitcode: " + llvm::toString(part.takeError()));
    if (llvm::Linker::linkModules(into.module, std::move(*part)))
        TILEC_ICE(who + " backend: cannot link an export's module: " + into.llvm_errors);
}

namespace {

// Storage for one llvm::Module that no later module of this process gets (see
// BackendModule). Kept reachable, so leak checkers do not report it.
void* unique_module_storage() {
    static std::mutex lock;
    static std::vector<std::unique_ptr<unsigned char[]>> slots;
    std::lock_guard<std::mutex> guard(lock);
    slots.push_back(std::make_unique<unsigned char[]>(sizeof(llvm::Module)));
    return slots.back().get();
}

}  // namespace

namespace {

// LLVM's CodeGenPrepare walks a function's blocks again from the first after every
// change to a block's instructions or to the CFG, until a walk changes nothing, unless the
// function has more blocks than `cgpp-huge-func` (10000): then each walk after the first
// revisits only the blocks that changed. Every walk re-parses the constraints of each
// inline asm (wgmma, TMA, mbarrier: 100 calls of up to 100 operands in gemm_f16), and
// gemm_f16 on sm_90a took 31 walks: CodeGenPrepare was 12% of its compile
// (callgrind). With every function counted as huge the stdlib's PTX, AMDGPU and host
// assembly are the same bytes (docs/architecture.md, "Compile time"). The option is
// process-wide, so it is set before the first module of any backend exists; an LLVM
// without it compiles as before.
void set_llvm_codegen_options() {
    static std::once_flag once;
    std::call_once(once, [] {
        auto& options = llvm::cl::getRegisteredOptions();
        if (auto it = options.find("cgpp-huge-func"); it != options.end())
            it->second->addOccurrence(0, "cgpp-huge-func", "0");
    });
}

}  // namespace

BackendModule::BackendModule(const std::string& name, const std::string& triple, const llvm::TargetMachine& tm)
    : module(*new (unique_module_storage()) llvm::Module(name, context)) {
    install_llvm_fatal_error_handler();
    set_llvm_codegen_options();
    context.setDiagnosticHandlerCallBack(on_llvm_diagnostic, &llvm_errors);
    module.setSourceFileName(name);
    module.setTargetTriple(triple);
    module.setDataLayout(tm.createDataLayout());
}

BackendModule::~BackendModule() { module.~Module(); }

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
