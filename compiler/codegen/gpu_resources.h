// What a GPU kernel uses per thread and per block once compiled for one arch, for
// `tilec --verbose-resources`: registers, static shared memory and spills, read from
// `ptxas -v` (NVIDIA) or from the code object's AMDGPU metadata note (AMD). No LLVM here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tilec::codegen {

struct KernelResources {
    std::string kernel;  // the kernel's symbol (the export's name)
    std::string arch;    // "sm_80", "gfx942"
    // NVIDIA (ptxas -v): registers per thread, static shared memory per block, and the
    // bytes of spill stores / loads to local memory.
    int64_t registers = 0;
    int64_t shared_bytes = 0;
    int64_t dynamic_shared_bytes = 0;  // what each launch passes (from the shared plan, not ptxas)
    int64_t spill_store_bytes = 0;
    int64_t spill_load_bytes = 0;
    // AMD (.vgpr_count, .agpr_count, .sgpr_count, .vgpr_spill_count, .sgpr_spill_count,
    // .private_segment_fixed_size; .group_segment_fixed_size is shared_bytes).
    bool amd = false;
    int64_t vgprs = 0;
    int64_t agprs = -1;  // -1: the note has no .agpr_count (targets without AGPRs)
    int64_t sgprs = 0;
    int64_t vgpr_spills = 0;
    int64_t sgpr_spills = 0;
    int64_t scratch_bytes = 0;
};

// One line per kernel, e.g.
//   "gemm_f16 sm_80: 40 registers, 16384 bytes shared, 0 bytes spilled"
//   "attn_fwd sm_80: 255 registers, 0 bytes shared + 65536 dynamic, 824 bytes spilled"
//   "gemm_f16 gfx942: 52 VGPRs, 0 AGPRs, 18 SGPRs, 16384 bytes shared, 0 VGPRs and 0 SGPRs spilled, 0 bytes scratch"
inline std::string format_resources(const KernelResources& r) {
    auto n = [](int64_t v) { return std::to_string(v); };
    std::string s = r.kernel + " " + r.arch + ": ";
    if (!r.amd) {
        s += n(r.registers) + " registers, " + n(r.shared_bytes) + " bytes shared";
        if (r.dynamic_shared_bytes > 0) s += " + " + n(r.dynamic_shared_bytes) + " dynamic";
        s += ", " + n(r.spill_store_bytes) + " bytes spilled";
        if (r.spill_load_bytes != r.spill_store_bytes) s += " (" + n(r.spill_load_bytes) + " bytes of spill loads)";
        return s;
    }
    s += n(r.vgprs) + " VGPRs, ";
    if (r.agprs >= 0) s += n(r.agprs) + " AGPRs, ";
    s += n(r.sgprs) + " SGPRs, " + n(r.shared_bytes) + " bytes shared, " + n(r.vgpr_spills) + " VGPRs and " +
         n(r.sgpr_spills) + " SGPRs spilled, " + n(r.scratch_bytes) + " bytes scratch";
    return s;
}

}  // namespace tilec::codegen
