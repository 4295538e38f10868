// Targets are data: one row per target the compiler accepts (the CPU "host" and each GPU
// architecture), holding what passes and backends ask for: warp width, block limits,
// shared memory, registers, the PTX ISA version LLVM must emit, which asynchronous-copy
// and barrier instructions exist, and the matrix instructions (mma.sync, wgmma, MFMA,
// WMMA) with their shapes and operand types. Passes read these fields; they never test
// a target's name, so adding a target means adding a row (target.cpp).
//
// No dependencies (not even compiler/ir): the element types of matrix instructions are
// this module's own small enum, because several (tf32, AMD's xf32 and FNUZ fp8) are
// operand formats of the hardware rather than types of the language.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::target {

enum class Vendor : uint8_t { Host, Nvidia, Amd };

// The element formats of matrix-instruction operands.
enum class ElemType : uint8_t {
    F64,
    F32,
    TF32,      // NVIDIA: f32 with a 10-bit mantissa, in a 32-bit register
    XF32,      // AMD CDNA3: f32 operands reduced to tf32-like precision
    F16,
    BF16,
    E4M3,      // OCP fp8 (NVIDIA .e4m3)
    E5M2,      // OCP fp8 (NVIDIA .e5m2)
    E4M3Fnuz,  // AMD CDNA3 "fp8": no infinities, one NaN, exponent bias 8
    E5M2Fnuz,  // AMD CDNA3 "bf8": no infinities, one NaN, exponent bias 16
    S8,
    U8,
    S32,
};

// Which family of matrix instruction a shape belongs to; each has its own register
// layouts and its own group of threads.
enum class MatrixOp : uint8_t {
    MmaSync,  // PTX mma.sync.aligned: one warp of 32
    Wgmma,    // PTX wgmma.mma_async: one warpgroup (4 warps), B (and A) from shared memory
    Mfma,     // AMD CDNA v_mfma_*: one wave of 64
    Wmma,     // AMD RDNA3 v_wmma_*: one wave of 32
};

// One matrix multiply-accumulate instruction: D (m x n, acc) = A (m x k, a) * B (k x n, b)
// + C (m x n, acc), executed by the op's group of threads.
struct MmaShape {
    MatrixOp op = MatrixOp::MmaSync;
    int m = 0;
    int k = 0;
    // The N it takes: n_min, n_min + n_step, ..., n_max. One N (n_min == n_max) for all
    // but wgmma, whose N ranges over multiples of 8 (or 16) up to 256.
    int n_min = 0;
    int n_max = 0;
    int n_step = 8;
    ElemType a = ElemType::F16;
    ElemType b = ElemType::F16;
    ElemType acc = ElemType::F32;  // C and D
    // NVIDIA: the PTX ISA version that introduced this shape with these types (e.g. 84
    // for 8.4); emitting it needs at least that version, which can be above the row's
    // ptx_version. 0 on AMD.
    int min_ptx_version = 0;
    // The instruction as the vendor's ISA document names it: "mma.sync.aligned.m16n8k16",
    // "wgmma.mma_async.m64nNk16", "v_mfma_f32_32x32x8f16".
    std::string_view instruction;

    bool has_n(int n) const { return n >= n_min && n <= n_max && (n - n_min) % n_step == 0; }
};

// An instruction family a target may have, and for NVIDIA the PTX ISA version that
// introduced it (what the PTX must declare to use it).
struct Feature {
    bool available = false;
    int min_ptx_version = 0;
};

struct Target {
    std::string name;  // as on the command line: "host", "sm_80", "sm_90a", "gfx942"
    Vendor vendor = Vendor::Nvidia;
    int arch = 0;                 // sm_XX: XX (90 for sm_90a); gfx: the hex number read as decimal digits; host: 0
    bool arch_specific = false;   // sm_90a: wgmma / setmaxnreg; code runs on that arch only
    int warp_size = 32;           // 32 (NVIDIA, RDNA wave32) or 64 (CDNA wave64); host: 1 (no warp collectives)
    int max_threads_per_block = 1024;
    int max_registers_per_thread = 255;       // 32-bit registers (NVIDIA) / architectural VGPRs (AMD)
    int64_t static_shared_bytes = 48 * 1024;  // without the dynamic opt-in
    int64_t max_shared_bytes = 48 * 1024;     // per block, with the opt-in (NVIDIA) / LDS (AMD)
    int64_t shared_bytes_per_sm = 48 * 1024;  // per SM (NVIDIA) / per CU (AMD)
    int ptx_version = 0;          // NVIDIA: the PTX ISA version emitted, e.g. 78 for 7.8
    std::string ptx_arch;         // NVIDIA: the virtual architecture of its PTX: "compute_80", "compute_90a"
    bool cvt_bf16_from_f64_and_int = false;  // cvt.rn.bf16.{f64,s32,...} exist (sm_90+)
    std::string llvm_cpu;         // the LLVM target CPU: "sm_90a", "gfx942"; host: empty (--cpu decides)
    // CDNA (wave64): the LDS serves an instruction in groups of lanes that depend on its
    // width (half waves up to 8 bytes per lane, AMD's 8-lane groups for 16), rather than
    // the whole warp at once; the simulator's bank counters follow (sim/lds_banks.h).
    bool lds_lane_groups = false;
    // AMD: the most waves a SIMD runs with each still given all max_registers_per_thread
    // VGPRs (and AGPRs); at this occupancy or below, fewer registers buy no more waves.
    // The AMDGPU backend gives it to LLVM as the kernel's minimum waves per EU.
    int full_register_waves = 1;
    // AMD: the most waves a CU runs (AMDGPU's waves per EU: 8 on gfx90a / gfx942, whose
    // CUs have 4 SIMDs; 16 on gfx11, 2 SIMD32s in CU mode): with threads and LDS per
    // block, how many blocks share a CU (the shared plan).
    int max_waves_per_cu = 0;

    // Asynchronous copies, barriers and register control (PTX ISA, each instruction's
    // "Target ISA Notes"); all unavailable on AMD and the host.
    Feature ldmatrix;           // ldmatrix: shared -> registers in mma fragment layout
    Feature stmatrix;           // stmatrix: the other way
    Feature cp_async;           // cp.async + cp.async.commit_group / wait_group
    Feature mbarrier;           // mbarrier.init / arrive / test_wait in shared memory
    Feature mbarrier_tx_count;  // mbarrier.expect_tx / complete_tx (transaction counts)
    Feature bulk_copy;          // cp.async.bulk (non-tensor)
    Feature tma;                // cp.async.bulk.tensor (the Tensor Memory Accelerator)
    Feature setmaxnreg;         // setmaxnreg: warpgroup register reallocation
    Feature cvt_fp8;            // cvt between f32 / f16x2 and .e4m3x2 / .e5m2x2 (fp8 pairs)

    // Matrix instructions, the preferred one first for each (a, b, acc): larger K first.
    std::vector<MmaShape> mma;

    bool is_host() const { return vendor == Vendor::Host; }
    bool is_gpu() const { return vendor != Vendor::Host; }
    bool is_nvidia() const { return vendor == Vendor::Nvidia; }
    bool is_amd() const { return vendor == Vendor::Amd; }
    bool has_wgmma() const;
    // CDNA's MFMA targets: the accumulators live in AccVGPRs, beside the VGPRs.
    bool has_agprs() const;
};

// The GPU rows are Targets as well; the name stays for the passes and backends that
// take only GPU rows.
using GpuTarget = Target;

// Every row: the GPU rows (NVIDIA first, in the order of the table), then host.
const std::vector<Target>& all_targets();
// The row for `name` ("host", "sm_80", ...), or nullptr if the compiler has none.
const Target* find_target(std::string_view name);
// The GPU rows only, in the table's order, and the GPU row for `name` (nullptr for
// "host" and unknown names).
std::span<const Target> gpu_targets();
const GpuTarget* find_gpu_target(std::string_view name);

// The preferred matrix instruction of `t` for multiplicands (a, b) and accumulator
// `acc`, of any shape; nullptr if it has none.
const MmaShape* find_mma(const Target& t, ElemType a, ElemType b, ElemType acc);
// The instruction of `t` of op `op` and shape m x n x k for those types; nullptr if none.
const MmaShape* find_mma(const Target& t, MatrixOp op, int m, int n, int k, ElemType a, ElemType b, ElemType acc);
// Every matrix instruction of `t` for those types, preferred first.
std::vector<const MmaShape*> mma_shapes(const Target& t, ElemType a, ElemType b, ElemType acc);

const char* elem_type_name(ElemType t);  // "f16", "e4m3fnuz", ...

}  // namespace tilec::target
