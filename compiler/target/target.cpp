// The table of GPU targets. Shared-memory limits are the CUDA / ROCm programming
// guides' per-block figures; PTX versions are the lowest PTX ISA that knows the arch
// (sm_89 and sm_90 need 7.8, sm_90a 8.0), which every ptxas since then assembles.
#include "target/target.h"

namespace tilec::target {

namespace {

GpuTarget nvidia(std::string name, int arch, bool specific, int64_t max_smem, int ptx) {
    GpuTarget t;
    t.llvm_cpu = name;
    t.name = std::move(name);
    t.vendor = Vendor::Nvidia;
    t.arch = arch;
    t.arch_specific = specific;
    t.warp_size = 32;
    t.max_threads_per_block = 1024;
    t.static_shared_bytes = 48 * 1024;
    t.max_shared_bytes = max_smem;
    t.ptx_version = ptx;
    t.cvt_bf16_from_f64_and_int = arch >= 90;
    return t;
}

GpuTarget amd(std::string name, int arch, int warp, int64_t lds) {
    GpuTarget t;
    t.llvm_cpu = name;
    t.name = std::move(name);
    t.vendor = Vendor::Amd;
    t.arch = arch;
    t.warp_size = warp;
    t.max_threads_per_block = 1024;
    t.static_shared_bytes = lds;
    t.max_shared_bytes = lds;
    return t;
}

}  // namespace

const std::vector<GpuTarget>& gpu_targets() {
    static const std::vector<GpuTarget> table = {
        nvidia("sm_80", 80, false, 163 * 1024, 70),
        nvidia("sm_86", 86, false, 99 * 1024, 71),
        nvidia("sm_89", 89, false, 99 * 1024, 78),
        nvidia("sm_90", 90, false, 227 * 1024, 78),
        nvidia("sm_90a", 90, true, 227 * 1024, 80),
        amd("gfx90a", 90010, 64, 64 * 1024),
        amd("gfx942", 90402, 64, 64 * 1024),
        amd("gfx1100", 110000, 32, 64 * 1024),
    };
    return table;
}

const GpuTarget* find_gpu_target(std::string_view name) {
    for (const auto& t : gpu_targets())
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace tilec::target
