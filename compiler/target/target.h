// Targets are data: the facts about a GPU that passes and backends ask for (warp
// width, threads and shared memory per block, the PTX ISA version LLVM must emit),
// one row per architecture the compiler accepts. Passes read these fields; they never
// switch on an architecture's name.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::target {

enum class Vendor : uint8_t { Nvidia, Amd };

struct GpuTarget {
    std::string name;  // as on the command line: "sm_80", "sm_90a", "gfx942"
    Vendor vendor = Vendor::Nvidia;
    int arch = 0;                 // sm_XX: XX (90 for sm_90a); gfx: the hex number read as decimal digits
    bool arch_specific = false;   // sm_90a: wgmma / setmaxnreg; code runs on that arch only
    int warp_size = 32;           // 32 (NVIDIA, RDNA wave32) or 64 (CDNA wave64)
    int max_threads_per_block = 1024;
    int64_t static_shared_bytes = 48 * 1024;  // without the dynamic opt-in
    int64_t max_shared_bytes = 48 * 1024;     // per block, with the opt-in (NVIDIA) / LDS (AMD)
    int ptx_version = 0;          // NVIDIA: the PTX ISA version emitted, e.g. 78 for 7.8
    bool cvt_bf16_from_f64_and_int = false;  // cvt.rn.bf16.{f64,s32,...} exist (sm_90+)
    std::string llvm_cpu;         // the LLVM target CPU: "sm_90a", "gfx942"
};

// The row for `name` ("sm_80", ...), or nullptr if the compiler has none.
const GpuTarget* find_gpu_target(std::string_view name);
// Every row, NVIDIA first, in the order of the table.
const std::vector<GpuTarget>& gpu_targets();

}  // namespace tilec::target
