// The AMDGPU backend: thread-level Tile IR (compiler/lower) -> LLVM IR for
// amdgcn-amd-amdhsa (the lowering shared with the NVPTX backend, gpu_lowering.h) ->
// a relocatable code object (v4) through LLVM's AMDGPU target machine for the gfx CPU
// -> HSACO through `ld.lld -shared`. One kernel (`.amdhsa_kernel NAME`) per export,
// its parameters in the order of the CPU entry point and the PTX kernel: tensor
// pointers (global, 16-byte aligned), int64 sizes, scalars as their C types (bool as
// int32, narrow floats as float). The grid is workgroup id x/y/z; the workgroup is
// `threads` work-items in x; the wavefront is the target row's warp_size (64 on gfx9,
// 32 on gfx11).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/gpu_resources.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tilec::codegen {

enum class AmdgpuOutput { LlvmIr, Assembly, Object };

// Every function of `funcs` must be thread level (PrimFunc::level, after the GPU passes of lower/gpu_passes.h); `target` an
// AMD row. Returns the module as LLVM IR text, AMDGPU assembly text or the bytes of an
// ELF relocatable object. Failures are internal errors (the lowering refuses what the
// backend cannot do).
std::string compile_amdgpu(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                           AmdgpuOutput what, const std::string& module_name);

// The same, in two steps, so the exports of one target compile on several threads:
// one export in its own LLVM context, optimised as compile_amdgpu optimises it, returned
// as bitcode; then the bitcode of one or more exports (in order) linked into one module
// and compiled to `what` (the driver compiles each export's object alone, on its own
// thread, and link_hsaco joins them).
// `narrow_masked_fills`: optimised with gpu::narrow_masked_fill_addresses too (the driver
// asks for it for an export whose kernel spills without it).
std::string amdgpu_optimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                     const std::string& module_name, bool narrow_masked_fills = false);
std::string compile_amdgpu_optimized(const std::vector<std::string>& bitcode, const target::GpuTarget& target,
                                     AmdgpuOutput what, const std::string& module_name);
// The export's LLVM module before optimisation, as bitcode: what the optimisation and
// code generation above make their output of (the driver's per-export compile cache
// keys an export's code object by it).
std::string amdgpu_unoptimized_bitcode(const ir::PrimFunc& func, const target::GpuTarget& target,
                                       const std::string& module_name);
// amdgpu_optimized_bitcode of the export whose unoptimised module that is (the same
// bytes: what the driver runs when it made that bitcode for the cache's key anyway).
std::string amdgpu_optimize_bitcode(const std::string& unoptimized, const target::GpuTarget& target,
                                    const std::string& module_name, bool narrow_masked_fills = false);

// The scratch bytes of each kernel (by name) of compile_amdgpu_optimized's assembly
// (.amdhsa_private_segment_fixed_size) or object (its metadata note).
std::map<std::string, int64_t> amdgpu_scratch_bytes(const std::string& code, AmdgpuOutput what,
                                                    const target::GpuTarget& target);

// The ld.lld that `link_hsaco` runs: $TILEC_LD_LLD if set, else the one found at
// configure time (CMake cache variable TILEC_LD_LLD); "" if neither.
std::string ld_lld_path();

// What `ld.lld --version` prints ("" without an ld.lld), for the compile cache's key.
std::string ld_lld_version();

// Runs `ld.lld -shared object... -o hsaco` and returns the HSACO's bytes. A missing
// ld.lld or a link error throws InternalError with ld.lld's output: the objects are ours.
// Objects compiled one export each (the driver compiles a target's exports on several
// threads) carry a metadata note each; the HSACO gets one, as a module of all the
// kernels does: the first object's note is replaced by the kernels' entries of every
// object in order, the others' removed. (Clang's AMDGPU LTO partitions leave a note per
// partition, which ROCm's comgr merges; one note also serves a loader that reads the
// first.) Each kernel's code is the same as in a module of all the kernels; each
// object's code ends in its own end-of-code padding.
std::string link_hsaco(const std::vector<std::string>& objects, const target::GpuTarget& target);
std::string link_hsaco(const std::string& object, const target::GpuTarget& target);

// The resources of each kernel of an AMDGPU code object (relocatable or HSACO), read from
// its metadata note (NT_AMDGPU_METADATA, msgpack: amdhsa.kernels[] .name, .vgpr_count,
// .agpr_count, .sgpr_count, .group_segment_fixed_size, .vgpr_spill_count,
// .sgpr_spill_count, .private_segment_fixed_size), in the note's order. A code object
// without the note or with a malformed one is an internal error: the object is ours.
std::vector<KernelResources> amdgpu_resources(const std::string& code_object, const target::GpuTarget& target);

// compile_amdgpu(..., Object) then link_hsaco.
std::string compile_hsaco(const std::vector<ir::PrimFunc>& funcs, const target::GpuTarget& target,
                          const std::string& module_name);

}  // namespace tilec::codegen
