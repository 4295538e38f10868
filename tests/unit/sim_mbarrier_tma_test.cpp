// The simulator's mbarrier and TMA models (sim/mbarrier_tma.h) against the documents'
// rules, never against what tilec's codegen assumes (issue 12):
//  - PTX ISA 9.7.13.15: a phase completes when the pending arrival count and the
//    tx-count both reach zero, whichever comes last (the tx-count may go negative when
//    bytes land before their expect-tx); the pending count resets to the expected count;
//    .parity waits see the current phase as incomplete and the preceding one as complete;
//    init counts 1 .. 2^20 - 1, tx-count within +-(2^20 - 1);
//  - cuda.h's requirements of cuTensorMapEncodeTiled (alignment, strides multiple of 16,
//    box limits, inner box <= swizzle span);
//  - the tiled box copy: dense box, dimension 0 fastest, out-of-bounds elements (also at
//    negative coordinates) zero-filled and counted in the complete-tx;
//  - what a 128B / 64B swizzled box writes is exactly where the wgmma model (its own
//    canonical layouts, PTX ISA 9.7.15.5.1.2) reads operand element (m, k), K-major and
//    MN-major: the two units share their swizzle patterns.
#include <catch2/catch.hpp>

#include <set>

#include "sim/mbarrier_tma.h"
#include "sim/warpgroup_mma.h"

using namespace tilec::sim::isa;

TEST_CASE("mbarrier: a phase completes when arrivals and tx-count both reach zero", "[sim][mbarrier]") {
    Mbarrier b;
    REQUIRE(b.init(1) == MbarrierProblem::None);
    CHECK(b.current_parity() == 0);
    CHECK_FALSE(b.test_wait_parity(0));  // the current phase
    CHECK(b.test_wait_parity(1));        // "the immediately preceding phase"
    REQUIRE(b.arrive_expect_tx(256) == MbarrierProblem::None);
    CHECK(b.pending == 0);
    CHECK(b.tx == 256);
    CHECK_FALSE(b.test_wait_parity(0));  // arrivals done, bytes not
    REQUIRE(b.complete_tx(128) == MbarrierProblem::None);
    CHECK_FALSE(b.test_wait_parity(0));
    REQUIRE(b.complete_tx(128) == MbarrierProblem::None);
    CHECK(b.test_wait_parity(0));
    CHECK_FALSE(b.test_wait_parity(1));
    CHECK(b.phase == 1);
    CHECK(b.pending == 1);  // reset to the expected count
    CHECK(b.tx == 0);

    SECTION("bytes that land before their expect-tx: the tx-count goes negative, the phase waits for the arrival") {
        REQUIRE(b.complete_tx(64) == MbarrierProblem::None);
        CHECK(b.tx == -64);
        CHECK_FALSE(b.test_wait_parity(1));
        REQUIRE(b.arrive_expect_tx(64) == MbarrierProblem::None);
        CHECK(b.phase == 2);
        CHECK(b.test_wait_parity(1));
    }
    SECTION("several arrivals: the last one completes the phase") {
        Mbarrier c;
        REQUIRE(c.init(3) == MbarrierProblem::None);
        REQUIRE(c.arrive_expect_tx(32) == MbarrierProblem::None);
        REQUIRE(c.complete_tx(32) == MbarrierProblem::None);
        CHECK(c.phase == 0);
        REQUIRE(c.arrive() == MbarrierProblem::None);
        CHECK(c.phase == 0);
        REQUIRE(c.arrive() == MbarrierProblem::None);
        CHECK(c.phase == 1);
        CHECK(c.pending == 3);
    }
}

TEST_CASE("mbarrier: what the document leaves undefined or forbids is reported", "[sim][mbarrier]") {
    Mbarrier b;
    CHECK(b.arrive() == MbarrierProblem::NotInitialised);
    CHECK(b.init(0) == MbarrierProblem::BadCount);
    CHECK(b.init(int64_t{1} << 20) == MbarrierProblem::BadCount);
    REQUIRE(b.init((int64_t{1} << 20) - 1) == MbarrierProblem::None);
    Mbarrier c;
    REQUIRE(c.init(2) == MbarrierProblem::None);
    CHECK(c.arrive(3) == MbarrierProblem::TooManyArrivals);
    CHECK(c.expect_tx(int64_t{1} << 20) == MbarrierProblem::TxOutOfRange);
    CHECK(c.complete_tx(int64_t{1} << 20) == MbarrierProblem::TxOutOfRange);
    CHECK(c.expect_tx((int64_t{1} << 20) - 1) == MbarrierProblem::None);
}

namespace {

TensorMapDesc map2d(int eb, uint64_t inner, uint64_t outer, uint64_t stride, uint32_t box0, uint32_t box1,
                    TmaSwizzle s = TmaSwizzle::None) {
    TensorMapDesc d;
    d.elem_bytes = eb;
    d.rank = 2;
    d.global_address = 0x10000;
    d.dims[0] = inner;
    d.dims[1] = outer;
    d.strides[0] = stride;
    d.box[0] = box0;
    d.box[1] = box1;
    d.swizzle = s;
    return d;
}

}  // namespace

TEST_CASE("tensor maps: cuTensorMapEncodeTiled's documented requirements", "[sim][tma]") {
    CHECK(tensor_map_problem(map2d(2, 100, 50, 208, 64, 32)).empty());
    CHECK_FALSE(tensor_map_problem(map2d(2, 100, 50, 200, 64, 32)).empty());  // stride 200: not a multiple of 16
    CHECK_FALSE(tensor_map_problem(map2d(2, 100, 50, 208, 64, 257)).empty());  // box > 256
    CHECK_FALSE(tensor_map_problem(map2d(2, 100, 50, 208, 4, 32)).empty());    // inner box 8 bytes
    CHECK_FALSE(tensor_map_problem(map2d(2, 0, 50, 208, 64, 32)).empty());     // empty dimension
    CHECK_FALSE(tensor_map_problem(map2d(2, 100, 50, 208, 128, 8, TmaSwizzle::B128)).empty());  // 256 B > span
    CHECK(tensor_map_problem(map2d(2, 100, 50, 208, 64, 8, TmaSwizzle::B128)).empty());
    CHECK(tensor_map_problem(map2d(2, 100, 50, 208, 32, 8, TmaSwizzle::B64)).empty());
    TensorMapDesc misaligned = map2d(2, 100, 50, 208, 64, 32);
    misaligned.global_address += 8;
    CHECK_FALSE(tensor_map_problem(misaligned).empty());
    TensorMapDesc wide = map2d(2, 100, 50, uint64_t{1} << 40, 64, 32);
    CHECK_FALSE(tensor_map_problem(wide).empty());
}

TEST_CASE("TMA tiled box copy: dense box, dimension 0 fastest, out-of-bounds zero fill", "[sim][tma]") {
    // f16 tensor 10 x 3 (inner 10), rows 32 bytes apart; an 8 x 4 box.
    TensorMapDesc d = map2d(2, 10, 3, 32, 8, 4);
    SECTION("a box over the ragged corner") {
        int32_t at[2] = {4, 1};
        TmaBoxCopy c = tma_load_tile(d, at, 0x400);
        REQUIRE(c.problem.empty());
        REQUIRE(c.writes.size() == 32);
        CHECK(c.tx_bytes == 64);  // every box element counts, filled or not
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 8; ++x) {
                const TmaElementWrite& w = c.writes[static_cast<size_t>(y * 8 + x)];
                CHECK(w.smem_addr == 0x400u + static_cast<uint32_t>(2 * (y * 8 + x)));
                bool inside = 4 + x < 10 && 1 + y < 3;
                CHECK(w.fill == !inside);
                if (inside) CHECK(w.global_addr == 0x10000u + static_cast<uint64_t>((1 + y) * 32 + (4 + x) * 2));
            }
    }
    SECTION("negative coordinates are outside too") {
        int32_t at[2] = {-2, -1};
        TmaBoxCopy c = tma_load_tile(d, at, 0x400);
        REQUIRE(c.problem.empty());
        int filled = 0;
        for (const auto& w : c.writes) filled += w.fill ? 1 : 0;
        CHECK(filled == 32 - 6 * 3);  // x in 0..5, y in 0..2 inside
        CHECK(c.writes[static_cast<size_t>(1 * 8 + 2)].global_addr == 0x10000u);  // box (2, 1) is tensor (0, 0)
    }
    SECTION("a destination not 128-byte aligned, or the wrong number of coordinates, is refused") {
        int32_t at[2] = {0, 0};
        CHECK_FALSE(tma_load_tile(d, at, 0x440).problem.empty());
        int32_t one[1] = {0};
        CHECK_FALSE(tma_load_tile(d, one, 0x400).problem.empty());
    }
}

TEST_CASE("TMA tiled box store: the same box read from shared memory, clipped at the tensor's edge", "[sim][tma]") {
    // The f16 tensor and box above, stored from shared memory: element (x, y) of
    // the box is read where a load would have written it and written to the tensor where
    // a load would have read it, or not at all outside the tensor.
    TensorMapDesc d = map2d(2, 10, 3, 32, 8, 4);
    int32_t at[2] = {4, 1};
    TmaBoxCopy load = tma_load_tile(d, at, 0x400);
    TmaBoxCopy store = tma_store_tile(d, at, 0x400);
    REQUIRE(store.problem.empty());
    REQUIRE(store.writes.size() == load.writes.size());
    CHECK(store.tx_bytes == 0);  // completes through its bulk group, not an mbarrier
    int written = 0;
    for (size_t n = 0; n < store.writes.size(); ++n) {
        CHECK(store.writes[n].smem_addr == load.writes[n].smem_addr);
        CHECK(store.writes[n].fill == load.writes[n].fill);
        if (!store.writes[n].fill) {
            CHECK(store.writes[n].global_addr == load.writes[n].global_addr);
            ++written;
        }
    }
    CHECK(written == 6 * 2);  // columns 4..9, rows 1..2
    SECTION("a source not 128-byte aligned is refused") {
        CHECK_FALSE(tma_store_tile(d, at, 0x440).problem.empty());
    }
}

TEST_CASE("TMA swizzles: what the box writes is where wgmma reads the operand", "[sim][tma][wgmma]") {
    const uint32_t dst = 0x2000;  // 1024-byte aligned: the patterns start here
    SECTION("K-major A, 64 x 64 f16, 128B swizzle (SBO 1024)") {
        TensorMapDesc d = map2d(2, 4096, 4096, 8192, 64, 64, TmaSwizzle::B128);
        int32_t at[2] = {128, 64};
        TmaBoxCopy c = tma_load_tile(d, at, dst);
        REQUIRE(c.problem.empty());
        WgmmaDescriptor w;
        w.start = dst;
        w.lbo = 16;
        w.sbo = 1024;
        w.swizzle = WgmmaSwizzle::B128;
        std::set<uint32_t> seen;
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < 64; ++k) {
                const auto& e = c.writes[static_cast<size_t>(m * 64 + k)];  // box (k, m)
                CHECK(e.smem_addr == wgmma_operand_address(w, false, 2, m, k));
                seen.insert(e.smem_addr);
            }
        CHECK(seen.size() == 64 * 64);
    }
    SECTION("K-major A, 64 x 32 f16, 64B swizzle (SBO 512)") {
        TensorMapDesc d = map2d(2, 4096, 4096, 8192, 32, 64, TmaSwizzle::B64);
        int32_t at[2] = {0, 0};
        TmaBoxCopy c = tma_load_tile(d, at, dst);
        REQUIRE(c.problem.empty());
        WgmmaDescriptor w;
        w.start = dst;
        w.lbo = 16;
        w.sbo = 512;
        w.swizzle = WgmmaSwizzle::B64;
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < 32; ++k)
                CHECK(c.writes[static_cast<size_t>(m * 32 + k)].smem_addr == wgmma_operand_address(w, false, 2, m, k));
    }
    SECTION("MN-major B, 16 (k) x 64 (n) bf16, 128B swizzle (SBO 1024 between 8-row groups of k)") {
        TensorMapDesc d = map2d(2, 4096, 4096, 8192, 64, 16, TmaSwizzle::B128);
        int32_t at[2] = {64, 32};
        TmaBoxCopy c = tma_load_tile(d, at, dst);
        REQUIRE(c.problem.empty());
        WgmmaDescriptor w;
        w.start = dst;
        w.lbo = 8192;  // the next 64-column atom: none within this box
        w.sbo = 1024;
        w.swizzle = WgmmaSwizzle::B128;
        for (int k = 0; k < 16; ++k)
            for (int n = 0; n < 64; ++n)
                CHECK(c.writes[static_cast<size_t>(k * 64 + n)].smem_addr == wgmma_operand_address(w, true, 2, n, k));
    }
}
