// The cross-lane instructions the GPU backends emit for warp shuffles, modelled one by
// one from the vendors' ISA documents and nothing else: what the simulator executes
// when thread-level IR shuffles (exec.cpp maps ir::CallOp::Shfl* to these the way the
// backends do), and what tests/unit/sim_warp_isa_test.cpp checks against the
// documents' own statements and examples. Every operand is a 32-bit register value, as
// in the documents; the models know nothing of tilec's IR.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace tilec::sim::isa {

// ---------------------------------------------------------------------------------
// NVIDIA: PTX ISA (8.x), section 9.7.9.6 "Data Movement and Conversion Instructions:
// shfl.sync" (9.7.8.6 in PTX ISA 7.x; introduced in PTX 6.0, sm_30+):
//
//     shfl.sync.mode.b32  d[|p], a, b, c, membermask;   .mode = { .up, .down, .bfly, .idx }
//
// Semantics, as the document's pseudocode gives them (lane = laneid, 0..31):
//     bval = b[4:0]; cval = c[4:0]; segmask = c[12:8];
//     maxLane = (lane & segmask) | (cval & ~segmask);  minLane = lane & segmask;
//     .up:   j = lane - bval;  pval = (j >= maxLane)
//     .down: j = lane + bval;  pval = (j <= maxLane)
//     .bfly: j = lane ^ bval;  pval = (j <= maxLane)
//     .idx:  j = minLane | (bval & ~segmask);  pval = (j <= maxLane)
//     if (!pval) j = lane;  d = SourceA[j];  p = pval;
// SourceA[lane] is the lane's `a` if it is active, "unpredictable" otherwise.
//
// What the document leaves undefined, reported as problems (the result of such a lane
// is then 0, a placeholder):
//  - "The behavior of shfl.sync is undefined if the executing thread is not in the
//    membermask";
//  - "shfl.sync will cause executing thread to wait until all non-exited threads
//    corresponding to membermask have executed shfl.sync with the same qualifiers and
//    same membermask value": a non-exited lane named in the mask that does not execute
//    it (in the simulator's lock step: it is elsewhere) never arrives, and lanes naming
//    each other with different masks never match;
//  - "results are undefined if a thread sources a register from an inactive thread or
//    a thread that is not in membermask" (an exited lane, or a lane of a partial warp
//    that does not exist, is inactive).
// (For sm_6x the document asks more: all lanes of membermask in convergence. tilec's
// NVIDIA targets are sm_80 and up.)
enum class ShflMode : uint8_t { Up, Down, Bfly, Idx };

struct ShflSyncLane {
    bool executes = false;  // the lane executes this shfl.sync
    bool exited = false;    // the lane has exited, or does not exist (a partial warp's tail)
    uint32_t a = 0, b = 0, c = 0, membermask = 0;
};

enum class ShflProblem : uint8_t {
    NotInMembermask,     // an executing lane is not in its own membermask
    MemberNotArrived,    // `other`, named by `lane`'s membermask and not exited, does not execute it
    MembermaskMismatch,  // `lane` and `other` name each other with different membermasks
    SourceInactive,      // `lane` reads `other`, which does not execute this shfl.sync
    SourceNotInMembermask,  // `lane` reads `other`, which is not in `lane`'s membermask
};
struct ShflIssue {
    ShflProblem problem;
    int lane = 0;
    int other = 0;
};

struct ShflSyncResult {
    std::array<uint32_t, 32> d{};   // executing lanes only
    std::array<bool, 32> p{};       // pval, executing lanes only
    std::array<int, 32> source{};   // the lane j each executing lane read (its own when !pval)
    std::vector<ShflIssue> issues;  // in lane order
};

ShflSyncResult ptx_shfl_sync(ShflMode mode, const std::array<ShflSyncLane, 32>& lanes);

// ---------------------------------------------------------------------------------
// AMD: DS_BPERMUTE_B32, "backward permute", which "does not access LDS memory" and
// "uses LDS hardware to implement an arbitrary swizzle across threads in a
// wavefront": each lane reads DATA0 of the lane its ADDR (a byte address: lane * 4)
// selects. "Note that EXEC mask is applied to both VGPR read and write. If src_lane
// selects a disabled thread then zero is returned." The documents' pseudocode:
//     for i: tmp[i] = 0
//     for i: src_lane = (ADDR[i] + OFFSET) / 4 % N;  if EXEC[src_lane]: tmp[i] = DATA0[src_lane]
//     for i: if EXEC[i]: VDST[i] = tmp[i]
// with, per document:
//  - CDNA (gfx9: the CDNA3 "AMD Instinct MI300" ISA; the CDNA4 ISA, section 12.12
//    "LDS Instructions", opcode 63): lanes 0..63, src_lane = (ADDR.u32 + OFFSET.u32)
//    / 4U % 64U (unsigned);
//  - RDNA3 (gfx11: "RDNA3" ISA reference guide, section 16.15 "LDS & GDS Instructions",
//    opcode 179): lanes 0..31 (wave32) or 0..63 (wave64), src_lane = 32'I(ADDR +
//    OFFSET) / 4 % 32, "destination lane is MOD 32 regardless of wave size" (a signed
//    division: a negative sum would name a negative lane, which the document does not
//    define; reported).
enum class DsPermuteIsa : uint8_t { Cdna, Rdna3 };

struct DsBpermuteResult {
    std::vector<uint32_t> vdst;              // per lane; lanes outside EXEC keep the `vdst_in` value
    std::vector<int> source;                 // src_lane per lane (-1: undefined, see above)
    std::vector<uint8_t> source_disabled;    // 1: an EXEC lane read a disabled lane and got 0
};

// `wave`: 32 or 64 lanes; `exec`: bit i = lane i enabled; `addr`, `data0`, `vdst_in`:
// one value per lane.
DsBpermuteResult amd_ds_bpermute(DsPermuteIsa isa, int wave, uint64_t exec, const std::vector<uint32_t>& addr,
                                 const std::vector<uint32_t>& data0, uint16_t offset,
                                 const std::vector<uint32_t>& vdst_in);

}  // namespace tilec::sim::isa
