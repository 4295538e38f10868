// Hopper's asynchronous-copy synchronisation and tensor copies (sm_90, issue 12), modelled
// from NVIDIA's documents and nothing else, in the style of warp_mma.h: the mbarrier
// object's phases, arrival and transaction counts, and cp.async.bulk.tensor's tiled-mode
// box copy global -> shared with its out-of-bounds fill and swizzle modes. The models know
// nothing of tilec's IR; tests/unit/sim_mbarrier_tma_test.cpp checks them against the
// documents' own rules and against the wgmma model's canonical layouts (what TMA writes is
// what wgmma reads: the two units share their swizzle patterns).
//
// Sources:
//  - PTX ISA 9.7.13.15 "mbarrier": the object holds the current phase, the pending
//    arrival count, the expected arrival count and the tx-count. mbarrier.init sets
//    phase 0, both arrival counts to `count` (1 .. 2^20 - 1) and tx-count 0. An
//    arrive-on operation decrements the pending count; expect-tx(n) increments the
//    tx-count by n, complete-tx(n) (what a TMA does as its bytes land) decrements it; the
//    tx-count's valid range is -(2^20 - 1) .. 2^20 - 1. "The current phase is complete
//    when the pending arrival count reaches zero and the tx-count reaches zero"; the
//    object then moves to the next phase with the pending count reset to the expected
//    count. mbarrier.arrive.expect_tx performs the expect-tx before the arrive-on.
//    test_wait / try_wait .parity: "phaseParity ... is the integer parity of either the
//    current phase or the immediately preceding phase": parity of the current (incomplete)
//    phase -> false, of the preceding (complete) one -> true.
//  - cuda.h, cuTensorMapEncodeTiled's documented requirements (CUDA 13): rank 1..5;
//    globalAddress 16-byte aligned; globalDim 1 .. 2^32; globalStrides (dims 1..rank-1, in
//    bytes) multiples of 16 and < 2^40; boxDim 1..256 with boxDim[0] * element size a
//    multiple of 16 bytes; with a swizzle, the box's inner dimension in bytes at most the
//    swizzle span (32 / 64 / 128); out-of-bounds elements filled with zero
//    (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE). Dimension 0 is the innermost (contiguous).
//  - PTX ISA 9.7.9.25 cp.async.bulk.tensor, .tile mode: the box at the tensor coordinates
//    (signed 32-bit, innermost first) lands in shared memory as a dense box, dimension 0
//    fastest; the destination is 128-byte aligned; completion is a complete-tx of the
//    box's bytes (out-of-bounds elements included) on the mbarrier.
//  - The swizzle modes (PTX ISA "Tensor swizzling modes", Table 41's repeat boundaries of
//    1024 / 512 / 256 bytes): 16-byte chunks XORed with the row within the pattern, on
//    the shared address: Swizzle<s,4,3> with 2^s = span / 16, the function the wgmma model
//    applies to the same addresses (warpgroup_mma.h).
//
//  - cp.async.bulk.tensor's .global.shared::cta direction (the same section, the
//    .bulk_group completion): the same box read from shared memory, dense and swizzled as
//    a load writes it (the source 128-byte aligned), and written to the tensor; elements
//    of the box outside the tensor are not written (the tensor's bounds clip the box, as
//    a load's are zero-filled). cp.async.bulk.commit_group closes the thread's
//    uncommitted bulk copies into a bulk async-group; cp.async.bulk.wait_group.read n
//    waits until at most n of its groups are pending their reads of the source, after
//    which the source may be written again (the sections cp.async.bulk.commit_group and
//    cp.async.bulk.wait_group, whose .read qualifier waits for the reads only). The source is read
//    through the async proxy, so the generic-proxy stores that wrote it must be followed
//    by fence.proxy.async first (the memory consistency model's proxy rules, as for wgmma).
//
// Modelled subset: tiled mode, no interleave, element strides 1, no multicast, boxes whose
// inner dimension with a swizzle is exactly the swizzle span (a narrower one is refused as
// not modelled rather than guessed).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tilec::sim::isa {

// ---- mbarrier -----------------------------------------------------------------------

enum class MbarrierProblem : uint8_t {
    None,
    NotInitialised,   // an operation on an object no mbarrier.init set up
    BadCount,         // init count outside 1 .. 2^20 - 1
    TooManyArrivals,  // an arrive-on with no arrival pending (the document leaves it undefined)
    TxOutOfRange,     // the tx-count left -(2^20 - 1) .. 2^20 - 1
};
const char* mbarrier_problem_text(MbarrierProblem p);

struct Mbarrier {
    bool initialised = false;
    uint64_t phase = 0;  // phases completed so far: the current phase's number
    int32_t expected = 0;
    int32_t pending = 0;
    int32_t tx = 0;

    MbarrierProblem init(int64_t count);
    MbarrierProblem arrive(int32_t count = 1);
    MbarrierProblem expect_tx(int64_t bytes);
    MbarrierProblem arrive_expect_tx(int64_t bytes);
    MbarrierProblem complete_tx(int64_t bytes);
    // test_wait.parity / try_wait.parity: whether the phase of parity `parity` (of the
    // current and the immediately preceding phase) has completed.
    bool test_wait_parity(uint32_t parity) const;
    uint32_t current_parity() const { return static_cast<uint32_t>(phase & 1); }

private:
    void complete_phase_if_done();
};

// ---- tensor maps and the tiled box copy ---------------------------------------------

enum class TmaSwizzle : uint8_t { None = 0, B32 = 1, B64 = 2, B128 = 3 };  // CUtensorMapSwizzle's values
uint32_t tma_swizzle_span(TmaSwizzle s);  // 0 (none), 32, 64, 128
// The swizzled shared address of byte address `addr` (Swizzle<s,4,3>).
uint32_t tma_swizzle_address(TmaSwizzle s, uint32_t addr);

// What cuTensorMapEncodeTiled is given (dimension 0 innermost).
struct TensorMapDesc {
    int elem_bytes = 2;
    int rank = 2;
    uint64_t global_address = 0;
    uint64_t dims[5] = {};
    uint64_t strides[4] = {};  // bytes, of dimensions 1 .. rank - 1
    uint32_t box[5] = {};
    TmaSwizzle swizzle = TmaSwizzle::None;
};
// Why the driver would refuse `d` (cuTensorMapEncodeTiled's documented requirements), or
// why the model does not cover it; empty if it encodes.
std::string tensor_map_problem(const TensorMapDesc& d);

// One element of a box copy: its bytes at shared address `smem_addr`, from (a load) or to
// (a store) global address `global_addr`; `fill`: out of bounds (a load writes zeros, a
// store writes nothing).
struct TmaElementWrite {
    uint32_t smem_addr = 0;
    uint64_t global_addr = 0;
    bool fill = false;
};
struct TmaBoxCopy {
    std::string problem;  // non-empty: the copy is refused (map or destination)
    std::vector<TmaElementWrite> writes;  // one per box element, dimension 0 fastest
    uint32_t tx_bytes = 0;  // the complete-tx the copy performs on its mbarrier
};
// cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// [dst], [map, {coords}], [mbar] for the map `d`: where each element of the box lands.
TmaBoxCopy tma_load_tile(const TensorMapDesc& d, std::span<const int32_t> coords, uint32_t dst);
// cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [map, {coords}], [src]:
// where each element of the box is read (smem_addr) and written (global_addr; `fill`: outside
// the tensor, not written). tx_bytes is 0.
TmaBoxCopy tma_store_tile(const TensorMapDesc& d, std::span<const int32_t> coords, uint32_t src);

}  // namespace tilec::sim::isa
