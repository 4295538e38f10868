// The mbarrier and TMA box-copy models (mbarrier_tma.h): each rule is the document's, as
// quoted in the header.
#include "sim/mbarrier_tma.h"

#include <bit>

namespace tilec::sim::isa {

namespace {
constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;  // arrival counts and |tx-count|
}

const char* mbarrier_problem_text(MbarrierProblem p) {
    switch (p) {
    case MbarrierProblem::None: return "";
    case MbarrierProblem::NotInitialised: return "the mbarrier object was not initialised (mbarrier.init)";
    case MbarrierProblem::BadCount: return "mbarrier.init count outside 1 .. 2^20 - 1";
    case MbarrierProblem::TooManyArrivals:
        return "an arrive-on operation with no arrival pending in the current phase (undefined)";
    case MbarrierProblem::TxOutOfRange: return "the mbarrier's tx-count left its range -(2^20 - 1) .. 2^20 - 1";
    }
    return "";
}

MbarrierProblem Mbarrier::init(int64_t count) {
    if (count < 1 || count > kMaxCount) return MbarrierProblem::BadCount;
    initialised = true;
    phase = 0;
    expected = pending = static_cast<int32_t>(count);
    tx = 0;
    return MbarrierProblem::None;
}

void Mbarrier::complete_phase_if_done() {
    if (pending == 0 && tx == 0) {
        ++phase;
        pending = expected;
    }
}

MbarrierProblem Mbarrier::arrive(int32_t count) {
    if (!initialised) return MbarrierProblem::NotInitialised;
    if (count < 1 || count > pending) return MbarrierProblem::TooManyArrivals;
    pending -= count;
    complete_phase_if_done();
    return MbarrierProblem::None;
}

MbarrierProblem Mbarrier::expect_tx(int64_t bytes) {
    if (!initialised) return MbarrierProblem::NotInitialised;
    if (bytes < 0 || tx + bytes > kMaxCount) return MbarrierProblem::TxOutOfRange;
    tx += static_cast<int32_t>(bytes);
    return MbarrierProblem::None;
}

MbarrierProblem Mbarrier::arrive_expect_tx(int64_t bytes) {
    if (MbarrierProblem p = expect_tx(bytes); p != MbarrierProblem::None) return p;
    return arrive(1);
}

MbarrierProblem Mbarrier::complete_tx(int64_t bytes) {
    if (!initialised) return MbarrierProblem::NotInitialised;
    if (bytes < 0 || tx - bytes < -kMaxCount) return MbarrierProblem::TxOutOfRange;
    tx -= static_cast<int32_t>(bytes);
    complete_phase_if_done();
    return MbarrierProblem::None;
}

bool Mbarrier::test_wait_parity(uint32_t parity) const {
    // The current phase is incomplete by definition; the other parity is the preceding
    // phase's, which completed (phase 0's predecessor counts as complete, as the hardware's
    // parity bit starts at 0).
    return (parity & 1) != current_parity();
}

uint32_t tma_swizzle_span(TmaSwizzle s) {
    switch (s) {
    case TmaSwizzle::None: return 0;
    case TmaSwizzle::B32: return 32;
    case TmaSwizzle::B64: return 64;
    case TmaSwizzle::B128: return 128;
    }
    return 0;
}

uint32_t tma_swizzle_address(TmaSwizzle s, uint32_t addr) {
    uint32_t span = tma_swizzle_span(s);
    if (span == 0) return addr;
    uint32_t mask = (span / 16) - 1;  // 2^s - 1
    return addr ^ (((addr >> 7) & mask) << 4);
}

std::string tensor_map_problem(const TensorMapDesc& d) {
    if (d.elem_bytes != 1 && d.elem_bytes != 2 && d.elem_bytes != 4 && d.elem_bytes != 8)
        return "element size " + std::to_string(d.elem_bytes) + " bytes is not one of the tensor map's types";
    if (d.rank < 1 || d.rank > 5) return "tensor rank " + std::to_string(d.rank) + " outside 1..5";
    if (d.global_address % 16 != 0) return "global address not 16-byte aligned";
    for (int i = 0; i < d.rank; ++i) {
        if (d.dims[i] < 1 || d.dims[i] > (uint64_t{1} << 32))
            return "globalDim[" + std::to_string(i) + "] = " + std::to_string(d.dims[i]) + " outside 1 .. 2^32";
        if (d.box[i] < 1 || d.box[i] > 256)
            return "boxDim[" + std::to_string(i) + "] = " + std::to_string(d.box[i]) + " outside 1..256";
    }
    for (int i = 0; i + 1 < d.rank; ++i)
        if (d.strides[i] % 16 != 0 || d.strides[i] >= (uint64_t{1} << 40))
            return "globalStrides[" + std::to_string(i) + "] = " + std::to_string(d.strides[i]) +
                   " bytes is not a multiple of 16 below 2^40";
    uint64_t inner = uint64_t{d.box[0]} * static_cast<uint64_t>(d.elem_bytes);
    if (inner % 16 != 0) return "the box's inner dimension (" + std::to_string(inner) + " bytes) is not a multiple of 16";
    uint32_t span = tma_swizzle_span(d.swizzle);
    if (span != 0 && inner > span)
        return "the box's inner dimension (" + std::to_string(inner) + " bytes) exceeds the " +
               std::to_string(span) + "-byte swizzle span";
    if (span != 0 && inner != span)
        return "a box narrower (" + std::to_string(inner) + " bytes) than its " + std::to_string(span) +
               "-byte swizzle span is not modelled";
    return {};
}

namespace {

// The box of `d` at `coords` against shared address `smem` (a load's destination, a
// store's source): per element its swizzled shared address and its global address, or
// `fill` where it lies outside the tensor.
TmaBoxCopy box_elements(const TensorMapDesc& d, std::span<const int32_t> coords, uint32_t smem, const char* side) {
    TmaBoxCopy r;
    r.problem = tensor_map_problem(d);
    if (r.problem.empty() && static_cast<int>(coords.size()) != d.rank)
        r.problem = std::to_string(coords.size()) + " coordinates for a rank-" + std::to_string(d.rank) + " map";
    if (r.problem.empty() && smem % 128 != 0) r.problem = std::string("shared ") + side + " not 128-byte aligned";
    if (!r.problem.empty()) return r;
    uint64_t count = 1;
    for (int i = 0; i < d.rank; ++i) count *= d.box[i];
    r.writes.reserve(count);
    const auto eb = static_cast<uint64_t>(d.elem_bytes);
    for (uint64_t n = 0; n < count; ++n) {
        uint64_t rest = n, global = d.global_address;
        bool inside = true;
        for (int i = 0; i < d.rank; ++i) {
            int64_t c = int64_t{coords[static_cast<size_t>(i)]} + static_cast<int64_t>(rest % d.box[i]);
            rest /= d.box[i];
            if (c < 0 || static_cast<uint64_t>(c) >= d.dims[i]) inside = false;
            if (inside) global += static_cast<uint64_t>(c) * (i == 0 ? eb : d.strides[i - 1]);
        }
        TmaElementWrite w;
        w.smem_addr = tma_swizzle_address(d.swizzle, smem + static_cast<uint32_t>(n * eb));
        w.global_addr = inside ? global : 0;
        w.fill = !inside;
        r.writes.push_back(w);
    }
    r.tx_bytes = static_cast<uint32_t>(count * eb);
    return r;
}

}  // namespace

TmaBoxCopy tma_load_tile(const TensorMapDesc& d, std::span<const int32_t> coords, uint32_t dst) {
    return box_elements(d, coords, dst, "destination");
}

TmaBoxCopy tma_store_tile(const TensorMapDesc& d, std::span<const int32_t> coords, uint32_t src) {
    TmaBoxCopy r = box_elements(d, coords, src, "source");
    r.tx_bytes = 0;  // a store completes through its bulk async-group, not an mbarrier
    return r;
}

}  // namespace tilec::sim::isa
