// Shared-memory (LDS) bank conflicts of one warp instruction, modelled from the vendors'
// documents: which lanes the hardware serves together, and how many cycles the distinct
// 4-byte words they touch take. The counters (counters.cpp) feed it one instruction at a
// time; tests/unit/sim_lds_banks_test.cpp checks it against the documents' statements.
//
// Both vendors: 32 banks of 4 bytes, bank = (byte address / 4) % 32; within one group of
// lanes served together, distinct words in one bank serialise, and lanes reading the
// same word share it (a broadcast). A group of lanes costs max over banks of its distinct
// words (at least 1); its ideal is ceil(distinct words / 32).
//
// NVIDIA (BankModel::PerWarp): every lane of the warp in one group (the CUDA C++
// programming guide's "shared memory" sections: a request is split into as many
// conflict-free wavefronts as needed).
//
// AMD RDNA3, wave32 (gfx1100): PerWarp as well. RDNA3 ISA reference guide (AMD, 2023),
// 12.1 "Overview" (chapter 12, "Data Share Operations"): 128 kB a WGP in "64 banks of
// DWORD-wide RAMs ... two sets of 32-banks each where 32 of the banks are affiliated with
// a pair of SIMD32's"; "DWORDs are placed in the banks serially"; "32 store or load
// instructions, each nominally 32-bits" execute concurrently, and accesses to one bank at
// the same time are turned "into serial accesses". So a wave32 instruction sees 32 banks,
// bank = (address / 4) % 32, one DWORD a bank a cycle. The guide does not say how the
// lanes of a wider access (b64 / b96 / b128) are grouped; the model serves them as one
// group, the fewest cycles the 32 banks allow (a lower bound if the hardware splits them
// as CDNA does), and it shares a DWORD read by several lanes (a broadcast), which the
// guide does not state either. tests/unit/sim_lds_banks_test.cpp checks the guide's
// statements.
//
// AMD CDNA, wave64 (BankModel::CdnaPasses, gfx90a / gfx942). Documents read:
//  - ROCm Composable Kernel documentation, "Understanding AMD GPU LDS and Bank Conflicts"
//    (docs/conceptual/ck_tile/hardware/lds_bank_conflicts.rst): "32 banks ... each bank
//    has a 4 bytes width", bank = (address in bytes / 4) mod 32; "HW divides access to
//    LDS from wavefront into phases. Which lanes would be considered in each phase
//    depends on the width of the instruction": ds_write_b128 in 8 phases of lanes 0-7,
//    8-15, ..., 56-63; ds_read_b128 conflict-free "when there is no bank conflict in these
//    8 lane groups: 0:3+20:23, 4:7+16:19, 8:11+28:31, 12:15+24:27, 32:35+52:55,
//    36:39+48:51, 40:43+60:63, 44:47+56:59".
//  - ROCm blog "Avoiding LDS Bank Conflicts on AMD GPUs Using CK-Tile Framework" (2025):
//    the same two rules, "Bank Conflict Check Rule", for MI-series GPUs (64 lanes, 32
//    banks of 4 bytes).
//  - AMD Accelerated Parallel Processing OpenCL Optimization Guide, "Local Memory (LDS)
//    Optimization" (GCN): "Bank conflicts are determined by what addresses are accessed
//    on each half wavefront boundary. Threads 0 through 31 are checked for conflicts as
//    are threads 32 through 63 within a wavefront." The model applies it to accesses of
//    up to 8 bytes per lane (ds_read/write_b32, _b64, _u16, _b16, _u8), which the CDNA
//    documents above do not break down further.
// An instruction of more than 8 bytes per lane (b96, b128) takes the 16-byte rules.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace tilec::sim::isa {

enum class BankModel : uint8_t { PerWarp, CdnaPasses };

// One lane's part of one instruction: `bytes` contiguous bytes at `addr`.
struct LdsLaneAccess {
    int lane = 0;  // 0 .. warp - 1
    int64_t addr = 0;
    int bytes = 0;
};

struct LdsCycles {
    int64_t actual = 0;  // wavefronts (cycles of the 32 banks)
    int64_t ideal = 0;   // the same without conflicts
};

// The groups of lanes a CDNA wave64 instruction of `bytes` per lane is served in (the
// documents' phases, above).
std::vector<std::vector<int>> cdna_lds_lane_groups(int bytes, bool store);

// The cycles of one instruction: `lanes` are the executing lanes' parts (a lane at most
// once). `bytes_per_lane` is the instruction's width (the widest part).
LdsCycles lds_cycles(BankModel model, std::span<const LdsLaneAccess> lanes, int bytes_per_lane, bool store);

}  // namespace tilec::sim::isa
