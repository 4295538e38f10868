// The simulator's LDS bank model (sim/lds_banks.h) against AMD's documents, never against
// what tilec's lowering does (issue 13):
//  - ROCm Composable Kernel docs, "Understanding AMD GPU LDS and Bank Conflicts": 32 banks
//    of 4 bytes; ds_write_b128 served in 8 phases of lanes 0-7, 8-15, ..., 56-63;
//    ds_read_b128 conflict-free when none of the groups 0:3+20:23, 4:7+16:19, 8:11+28:31,
//    12:15+24:27, 32:35+52:55, 36:39+48:51, 40:43+60:63, 44:47+56:59 conflicts (the ROCm
//    blog "Avoiding LDS Bank Conflicts on AMD GPUs Using CK-Tile Framework" states the same
//    "Bank Conflict Check Rule");
//  - AMD's OpenCL optimization guide (GCN LDS): "Threads 0 through 31 are checked for
//    conflicts as are threads 32 through 63 within a wavefront" (the model's rule for
//    accesses of up to 8 bytes per lane);
//  - the RDNA3 ISA reference guide, 12.1 (gfx1100's wave32 model; its test, last).
#include <catch2/catch.hpp>

#include <vector>

#include "sim/lds_banks.h"

using namespace tilec::sim::isa;

namespace {

std::vector<LdsLaneAccess> wave(int bytes, int64_t (*addr)(int)) {
    std::vector<LdsLaneAccess> v;
    for (int l = 0; l < 64; ++l) v.push_back({l, addr(l), bytes});
    return v;
}

}  // namespace

TEST_CASE("lds banks: the CDNA lane groups are the documents' phases", "[sim][lds]") {
    auto reads = cdna_lds_lane_groups(16, false);
    REQUIRE(reads.size() == 8);
    CHECK(reads[0] == std::vector<int>{0, 1, 2, 3, 20, 21, 22, 23});
    CHECK(reads[1] == std::vector<int>{4, 5, 6, 7, 16, 17, 18, 19});
    CHECK(reads[2] == std::vector<int>{8, 9, 10, 11, 28, 29, 30, 31});
    CHECK(reads[3] == std::vector<int>{12, 13, 14, 15, 24, 25, 26, 27});
    CHECK(reads[4] == std::vector<int>{32, 33, 34, 35, 52, 53, 54, 55});
    CHECK(reads[5] == std::vector<int>{36, 37, 38, 39, 48, 49, 50, 51});
    CHECK(reads[6] == std::vector<int>{40, 41, 42, 43, 60, 61, 62, 63});
    CHECK(reads[7] == std::vector<int>{44, 45, 46, 47, 56, 57, 58, 59});
    auto writes = cdna_lds_lane_groups(16, true);
    REQUIRE(writes.size() == 8);
    for (int p = 0; p < 8; ++p)
        CHECK(writes[static_cast<size_t>(p)] == std::vector<int>{8 * p, 8 * p + 1, 8 * p + 2, 8 * p + 3,
                                                                 8 * p + 4, 8 * p + 5, 8 * p + 6, 8 * p + 7});
    for (int bytes : {1, 2, 4, 8}) {
        auto halves = cdna_lds_lane_groups(bytes, false);
        REQUIRE(halves.size() == 2);
        CHECK(halves[0].front() == 0);
        CHECK(halves[0].back() == 31);
        CHECK(halves[1].front() == 32);
        CHECK(halves[1].back() == 63);
    }
}

TEST_CASE("lds banks: 16-byte accesses conflict within the documented groups only", "[sim][lds]") {
    // Quads of lanes q = lane / 4, each quad 16 bytes per lane over one half of the 32
    // banks (h = 0: banks 0-15, h = 1: 16-31), every word distinct (quads 1024 bytes
    // apart). h per quad 0..7: the write phases pair quads (0,1), (2,3), ...: different
    // halves; the read groups pair quads (0,5), (1,4), (2,7), (3,6): the same half.
    static constexpr int h[16] = {0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0};
    auto addr = [](int l) -> int64_t { return 16 * (l % 4) + 64 * h[l / 4] + 1024 * (l / 4); };
    auto lanes = wave(16, addr);
    // ds_write_b128: each phase 8 lanes x 4 words on 32 distinct banks: 8 cycles.
    LdsCycles w = lds_cycles(BankModel::CdnaPasses, lanes, 16, true);
    CHECK(w.actual == 8);
    CHECK(w.ideal == 8);
    // ds_read_b128: each group's two quads on the same 16 banks: 2-way, 16 cycles.
    LdsCycles r = lds_cycles(BankModel::CdnaPasses, lanes, 16, false);
    CHECK(r.actual == 16);
    CHECK(r.ideal == 8);
    // The whole-warp model sees 8 words per bank over 256 words: no conflict.
    LdsCycles all = lds_cycles(BankModel::PerWarp, lanes, 16, false);
    CHECK(all.actual == all.ideal);
}

TEST_CASE("lds banks: up to 8 bytes per lane, each half wave on its own", "[sim][lds]") {
    // b64, lanes 0-31 on 256 contiguous bytes and lanes 32-63 on other words of the same
    // banks: 2 cycles per half wave, no conflict.
    auto halves = wave(8, [](int l) -> int64_t { return 8 * (l % 32) + 4096 * (l / 32); });
    LdsCycles c = lds_cycles(BankModel::CdnaPasses, halves, 8, false);
    CHECK(c.actual == 4);
    CHECK(c.ideal == 4);
    // b64 at a 64-byte stride: a half wave's lanes on banks {0, 1, 16, 17}, 16 distinct
    // words per bank: 16 cycles per half against 2.
    auto strided = wave(8, [](int l) -> int64_t { return 64 * l; });
    LdsCycles s = lds_cycles(BankModel::CdnaPasses, strided, 8, false);
    CHECK(s.actual == 32);
    CHECK(s.ideal == 4);
    // u16: lanes 2w and 2w + 1 in one word (a broadcast of the word, not a conflict).
    auto pairs = wave(2, [](int l) -> int64_t { return 2 * l; });
    LdsCycles p = lds_cycles(BankModel::CdnaPasses, pairs, 2, false);
    CHECK(p.actual == 2);
    CHECK(p.ideal == 2);
}

TEST_CASE("lds banks: every lane on the same 16 bytes is one cycle per group", "[sim][lds]") {
    auto same = wave(16, [](int) -> int64_t { return 256; });
    LdsCycles c = lds_cycles(BankModel::CdnaPasses, same, 16, false);
    CHECK(c.actual == 8);
    CHECK(c.ideal == 8);
    // A lane missing from the instruction (inactive) leaves its group's cost alone.
    std::vector<LdsLaneAccess> one{{5, 0, 16}};
    LdsCycles o = lds_cycles(BankModel::CdnaPasses, one, 16, false);
    CHECK(o.actual == 1);
    CHECK(o.ideal == 1);
}

// RDNA3 ISA reference guide (AMD, 2023), section 12.1 "Overview" of chapter 12, "Data
// Share Operations": "64 banks of DWORD-wide RAMs ... sub-divided into two sets of
// 32-banks each where 32 of the banks are affiliated with a pair of SIMD32's"; "DWORDs
// are placed in the banks serially"; "it is possible to concurrently execute 32 store or
// load instructions, each nominally 32-bits; extended instructions, load_2addr /
// store_2addr, can be 64-bits each. If, however, more than one access attempt is made to
// the same bank at the same time ... turning them into serial accesses." A wave32
// instruction therefore sees 32 banks, bank = (address / 4) % 32 (BankModel::PerWarp).
TEST_CASE("lds banks: RDNA3 wave32, 32 banks served serially per dword", "[sim][lds]") {
    auto wave32 = [](int bytes, auto addr) {
        std::vector<LdsLaneAccess> v;
        for (int l = 0; l < 32; ++l) v.push_back({l, addr(l), bytes});
        return v;
    };
    // 32 lanes x 32 bits on consecutive DWORDs: one per bank, all at once.
    LdsCycles linear = lds_cycles(BankModel::PerWarp, wave32(4, [](int l) -> int64_t { return 4 * l; }), 4, false);
    CHECK(linear.actual == 1);
    CHECK(linear.ideal == 1);
    // DWORDs placed serially: 32 DWORDs (128 bytes) apart is the same bank, so 32 lanes a
    // row apart are 32 serial accesses of one bank.
    LdsCycles column = lds_cycles(BankModel::PerWarp, wave32(4, [](int l) -> int64_t { return 128 * l; }), 4, true);
    CHECK(column.actual == 32);
    CHECK(column.ideal == 1);
    // Lanes 2k and 2k + 1 on DWORD k of two rows 1 KiB apart: two accesses per bank.
    LdsCycles two = lds_cycles(BankModel::PerWarp, wave32(4, [](int l) -> int64_t { return 1024 * (l % 2) + 4 * (l / 2); }), 4, false);
    CHECK(two.actual == 2);
    CHECK(two.ideal == 1);
    // 64 bits a lane (load_2addr / a b64): 64 consecutive DWORDs, two per bank.
    LdsCycles wide = lds_cycles(BankModel::PerWarp, wave32(8, [](int l) -> int64_t { return 8 * l; }), 8, false);
    CHECK(wide.actual == 2);
    CHECK(wide.ideal == 2);
}
