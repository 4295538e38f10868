// The CPU backend: Tile IR (tile level) straight to LLVM IR for the host, then to
// assembly or an object with LLVM's TargetMachine; and the C header of the entry points.
//
// What the object holds, per export NAME (one ir::PrimFunc):
//   static void NAME_block(void* ctx, int64_t bx, int64_t by, int64_t bz)
//       one block of the grid: unpacks the arguments from ctx and runs the body;
//   tile_status NAME_cpu(const tile_cpu_options* opt, <tensors>, <sizes>, <scalars>)
//       checks the arguments, packs them and runs every block with tile_cpu_launch.
// The entry point never prints and never exits: a bad argument returns
// TILE_ERROR_INVALID_ARGUMENT after tile_set_error() recorded a message naming it.
// Code is generated for the host triple and, by default, the host CPU (like
// -march=native); CpuOptions::cpu picks another CPU (like -march=x86-64-v3).
// This header is free of LLVM: only compiler/codegen/*.cpp include LLVM headers.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace llvm {
class Target;
}

namespace tilec::codegen {

enum class CpuOutput { LlvmIr, Assembly, Object };

struct GpuEmbedding;  // codegen/gpu_entry.h
struct GpuImage;      // codegen/gpu_entry.h

struct CpuOptions {
    // The module's source file name (recorded in the object); the input's base name.
    std::string source_name = "module.tile";
    // The CPU to generate code for: "native" (this machine's CPU and all its features;
    // the object may not run on an older CPU) or an LLVM CPU name such as "x86-64"
    // (every x86-64), "x86-64-v3" (AVX2), "znver4". An unknown name is a user error.
    std::string cpu = "native";
    // Run LLVM's optimisation pipeline (O3) before emitting; off only to debug codegen.
    bool optimize = true;
    // Names the files of source locations in the messages of failed asserts; may be null.
    const SourceManager* sources = nullptr;
    // Emit NAME_block and NAME_cpu for every export (off for an object of GPU targets only).
    bool cpu_entries = true;
    // GPU images and kernels to embed, with their NAME_cuda / NAME_hip entry points
    // (codegen/gpu_entry.h); null for a host-only object, which is then unchanged.
    const GpuEmbedding* gpu = nullptr;
};

// Lowers every function of `module` into one LLVM module and returns its text (LLVM IR,
// assembly) or bytes (an ELF object). Deterministic: same IR, same bytes. Returns
// nullopt after reporting an error (a host target LLVM cannot create). Unsupported IR
// is an internal error (TILEC_ICE).
std::optional<std::string> compile_cpu(const ir::Module& module, CpuOutput what, const CpuOptions& options,
                                       DiagnosticEngine& diags);

// The same in two steps, so that the host module's O3 runs beside the GPU backends whose
// images it embeds: optimize_cpu builds and optimises the module with a placeholder for
// the bytes of each image of options.gpu (only their kinds and archs are read), and
// emit_cpu puts in the images' bytes (`images`: the same kinds and archs in the same
// order; null without options.gpu) and emits the code. The entry points hold only the
// images' addresses, so optimisation does not depend on their bytes, and compile_cpu
// runs these two steps: the output is the same bytes either way. optimize_cpu returns
// null after reporting an error.
struct HostModule {
    struct Impl;
    explicit HostModule(std::unique_ptr<Impl> impl);
    ~HostModule();
    std::unique_ptr<Impl> impl;
};
// LLVM's host target registered (once per process; optimize_cpu and compile_cpu call it).
// The driver calls it before its backend tasks start, so that the host target is not
// registered while other threads look up the GPU targets in LLVM's registry.
void initialize_host_target();
std::unique_ptr<HostModule> optimize_cpu(const ir::Module& module, CpuOutput what, const CpuOptions& options,
                                         DiagnosticEngine& diags);
std::string emit_cpu(HostModule& host, const std::vector<GpuImage>* images);

// What --cpu asks for, checked: `cpu` and `features` for LLVM's TargetMachine (for
// "native", this machine's CPU and features; for a list, baseline "x86-64") and, for a
// list of x86-64 levels, each level with its CPU name, ascending (empty otherwise).
// Null after reporting an unknown CPU, a malformed list, or a host LLVM cannot target.
// optimize_cpu calls it; the driver too, before compiling, so that every run (one that
// only checks as well) rejects what the CPU backend would.
struct CpuChoice {
    const llvm::Target* target = nullptr;
    std::string triple, cpu, features;
    std::vector<std::pair<int, std::string>> levels;
};
std::optional<CpuChoice> parse_cpu_option(const std::string& option, DiagnosticEngine& diags);

// Reports an LLVM fatal error through the handler every backend installs (an internal
// compiler error, exit status 2); for the test of that handler (--debug-llvm-fatal-error).
[[noreturn]] void debug_llvm_fatal_error();

// What the host code depends on besides the IR, for the compile cache's key: the LLVM
// version, the host triple, and the CPU `cpu` names with its features (for "native",
// this machine's CPU and the features it has).
std::string host_codegen_identity(const std::string& cpu);

// The entry-point symbol of an export for the CPU backend: NAME_cpu.
std::string cpu_entry_name(const ir::PrimFunc& f);

}  // namespace tilec::codegen
