// The NVPTX backend: thread-level Tile IR (compiler/lower) -> LLVM IR for
// nvptx64-nvidia-cuda -> PTX through LLVM's NVPTX target machine -> cubin through
// ptxas. One kernel (`.entry NAME`) per export, its parameters in the order of the CPU
// entry point: tensor pointers (global, 16-byte aligned), int64 sizes, scalars as their
// C types (bool as int32, narrow floats as float). The grid is block.x/y/z = ctaid.x/y/z;
// the block is `threads` threads in x.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/gpu_resources.h"
#include "ir/ir.h"
#include "support/source.h"
#include "target/target.h"

namespace tilec::codegen {

enum class NvptxOutput { LlvmIr, Ptx };

// Every function of `funcs` must be thread level (PrimFunc::level, after the GPU passes of lower/gpu_passes.h); `target` an
// NVIDIA row. Returns the module as LLVM IR text or PTX text. Failures are internal
// errors (the lowering refuses what the backend cannot do).
std::string compile_nvptx(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                          NvptxOutput what, const std::string& module_name);

// compile_nvptx of one export in three steps, each in its own LLVM context, so that the
// driver runs them on several threads and optimises once for the NVIDIA archs whose LLVM
// IR of an export is the same (the thread-level IR is, and so is everything the IR
// emitter reads of the arch): the unoptimised module as bitcode; that bitcode optimised
// (O3) for `target`, the lowest arch of such a group; and the optimised bitcode compiled
// to PTX for `target` (any arch of the group: its own CPU and PTX version replace the
// optimising arch's). Optimising for the lowest arch keeps the IR within what every arch
// of the group has.
std::string nvptx_unoptimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                      const std::string& module_name);
std::string nvptx_optimize_bitcode(const std::string& bitcode, const target::GpuTarget& target,
                                   const std::string& module_name);
std::string nvptx_ptx_of_bitcode(const std::string& bitcode, const target::GpuTarget& target,
                                 const std::string& module_name);
// The three steps in one LLVM context, for an export built for one NVIDIA arch (no group
// to share the O3 run with): the same PTX, without writing and reading back the module
// twice as bitcode (a sixth of the NVIDIA backend's time on gemm.tile).
std::string nvptx_ptx_of_kernel(const ir::PrimFunc& func, const target::GpuTarget& target,
                                const std::string& module_name);
// The last two steps in one context, for an arch whose unoptimised bitcode no other
// arch shares.
std::string nvptx_ptx_of_unoptimized(const std::string& bitcode, const target::GpuTarget& target,
                                     const std::string& module_name);

// One PTX module of the PTX modules of compile_nvptx for single exports (the same
// target), in order: the first's header, then each module's declarations and entry. The
// driver compiles each export on its own thread and merges them, so the text does not
// depend on how many threads ran.
std::string merge_ptx(const std::vector<std::string>& modules);

// The ptxas that `assemble_cubin` runs: $TILEC_PTXAS if set, else the one found at
// configure time (CMake cache variable TILEC_PTXAS); "" if neither.
std::string ptxas_path();

// What `ptxas --version` prints ("" without a ptxas), for the compile cache's key.
std::string ptxas_version();

// Runs `ptxas -arch=<target> ptx -o cubin` and returns the cubin's bytes. A missing
// ptxas or an assembler error throws InternalError with ptxas's output: the PTX is ours.
std::string assemble_cubin(const std::string& ptx, const target::GpuTarget& target);

// ptxas with the user's options (-Xptxas) and, with `verbose`, its -v report parsed.
struct PtxasRun {
    bool ok = false;
    int status = 0;          // ptxas's exit status
    std::string command;     // "ptxas -arch=sm_80 <extra args>", for messages
    std::string output;      // what ptxas printed
    std::string cubin;       // when ok
    std::vector<KernelResources> resources;  // with verbose: one per kernel, in ptxas's order
};
// `ptxas -arch=<target> [-v] <extra_args...> ptx -o cubin`. A missing ptxas is an
// internal error (the driver checks first); ptxas failing is not: the caller decides
// (options the user gave may be why).
PtxasRun run_ptxas(const std::string& ptx, const target::GpuTarget& target, const std::vector<std::string>& extra_args,
                   bool verbose);

// The kernels of a `ptxas -v` report: "Compiling entry function 'K' for 'sm_80'", then
// "N bytes stack frame, S bytes spill stores, L bytes spill loads" and "Used R registers,
// [B bytes smem, ]..." Exposed for tests.
std::vector<KernelResources> parse_ptxas_verbose(const std::string& output, const std::string& arch);

// For tests: the backend's `cast<to>(x)` as it emits it for `target` (same LLVM IR,
// compiled for the host by a JIT). The function takes x as a double (float sources,
// rounded to `from` first) or an int64 (integer sources, truncated to `from`) and
// returns the result's bits in memory (16 for bf16 / f16, 32 for f32, ...).
std::function<uint64_t(double, int64_t)> host_conversion_for_test(ir::DataType from, ir::DataType to,
                                                                  const target::GpuTarget& target);

}  // namespace tilec::codegen
