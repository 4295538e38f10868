// The simulator's ISA models of the shuffle instructions (sim/warp_isa.h) against the
// documents' own statements and examples: PTX ISA 9.7.9.6 shfl.sync (its butterfly
// reduction and scan examples, the pseudocode's clamp and segment mask, what it calls
// undefined) and AMD DS_BPERMUTE_B32 (the CDNA and RDNA3 ISA guides' 4-lane examples,
// "If src_lane selects a disabled thread then zero is returned", the lane modulus).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "sim/warp_isa.h"

using namespace tilec::sim::isa;

namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// A full warp executing with membermask 0xffffffff, `a` per lane, b and c uniform.
std::array<ShflSyncLane, 32> full_warp(const std::array<uint32_t, 32>& a, uint32_t b, uint32_t c) {
    std::array<ShflSyncLane, 32> lanes{};
    for (int l = 0; l < 32; ++l) lanes[l] = {true, false, a[l], b, c, 0xffffffffu};
    return lanes;
}

bool has(const ShflSyncResult& r, ShflProblem p, int lane, int other) {
    for (auto& i : r.issues)
        if (i.problem == p && i.lane == lane && i.other == other) return true;
    return false;
}

}  // namespace

TEST_CASE("warp isa: the PTX butterfly reduction example leaves the sum in every lane", "[sim][isa]") {
    // PTX ISA, shfl.sync Examples, "BUTTERFLY REDUCTION": shfl.sync.bfly.b32 Ry, Rx, 0x10,
    // 0x1f, 0xffffffff; add.f32 Rx, Ry, Rx; ... 0x8, 0x4, 0x2, 0x1. "All threads now hold
    // sum in Rx."
    std::array<uint32_t, 32> rx{};
    for (int l = 0; l < 32; ++l) rx[l] = bits_of(static_cast<float>(l + 1));
    for (uint32_t b : {0x10u, 0x8u, 0x4u, 0x2u, 0x1u}) {
        auto r = ptx_shfl_sync(ShflMode::Bfly, full_warp(rx, b, 0x1f));
        CHECK(r.issues.empty());
        for (int l = 0; l < 32; ++l) {
            CHECK(r.source[l] == (l ^ static_cast<int>(b)));
            CHECK(r.p[l]);
            rx[l] = bits_of(float_of(r.d[l]) + float_of(rx[l]));
        }
    }
    for (int l = 0; l < 32; ++l) CHECK(float_of(rx[l]) == 528.0f);  // 1 + ... + 32

    // With values whose float sums round, every lane still ends with the same bits: each
    // step adds the same two values in every pair of partners.
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& x : rx) x = bits_of(dist(gen) * 1e3f);
    for (uint32_t b : {0x10u, 0x8u, 0x4u, 0x2u, 0x1u}) {
        auto r = ptx_shfl_sync(ShflMode::Bfly, full_warp(rx, b, 0x1f));
        for (int l = 0; l < 32; ++l) rx[l] = bits_of(float_of(r.d[l]) + float_of(rx[l]));
    }
    for (int l = 1; l < 32; ++l) CHECK(rx[l] == rx[0]);
}

TEST_CASE("warp isa: the PTX inclusive scan examples (up with c = 0, down with c = 0x1f)", "[sim][isa]") {
    // "Warp-level INCLUSIVE PLUS SCAN": shfl.sync.up.b32 Ry|p, Rx, 0x1, 0x0, 0xffffffff;
    // @p add.f32 Rx, Ry, Rx; ... 0x2, 0x4, 0x8, 0x10.
    std::array<uint32_t, 32> rx{};
    for (int l = 0; l < 32; ++l) rx[l] = bits_of(static_cast<float>(l + 1));
    for (uint32_t b : {0x1u, 0x2u, 0x4u, 0x8u, 0x10u}) {
        auto r = ptx_shfl_sync(ShflMode::Up, full_warp(rx, b, 0x0));
        CHECK(r.issues.empty());
        for (int l = 0; l < 32; ++l) {
            // j = lane - bval, in range when j >= maxLane = 0; else the lane's own value.
            CHECK(r.p[l] == (l >= static_cast<int>(b)));
            if (!r.p[l]) CHECK(r.d[l] == rx[l]);
            if (r.p[l]) rx[l] = bits_of(float_of(r.d[l]) + float_of(rx[l]));
        }
    }
    for (int l = 0; l < 32; ++l) CHECK(float_of(rx[l]) == static_cast<float>((l + 1) * (l + 2) / 2));

    // "INCLUSIVE PLUS REVERSE-SCAN": shfl.sync.down.b32 Ry|p, Rx, 0x1, 0x1f, ...
    for (int l = 0; l < 32; ++l) rx[l] = bits_of(static_cast<float>(l + 1));
    for (uint32_t b : {0x1u, 0x2u, 0x4u, 0x8u, 0x10u}) {
        auto r = ptx_shfl_sync(ShflMode::Down, full_warp(rx, b, 0x1f));
        for (int l = 0; l < 32; ++l) {
            CHECK(r.p[l] == (l + static_cast<int>(b) <= 31));
            if (r.p[l]) rx[l] = bits_of(float_of(r.d[l]) + float_of(rx[l]));
        }
    }
    for (int l = 0; l < 32; ++l) CHECK(float_of(rx[l]) == static_cast<float>((l + 1 + 32) * (32 - l) / 2));
}

TEST_CASE("warp isa: PTX shfl.sync idx, segment masks and out-of-range b", "[sim][isa]") {
    std::array<uint32_t, 32> a{};
    for (int l = 0; l < 32; ++l) a[l] = 100 + static_cast<uint32_t>(l);
    // c = 0x1f, no segments: idx reads lane b from every lane.
    auto r = ptx_shfl_sync(ShflMode::Idx, full_warp(a, 7, 0x1f));
    for (int l = 0; l < 32; ++l) CHECK(r.d[l] == 107);
    // Segments of 16 lanes (CUDA's width 16: c = ((32 - 16) << 8) | 0x1f): segmask = 0x10,
    // minLane = lane & 0x10, j = minLane | (bval & ~segmask).
    r = ptx_shfl_sync(ShflMode::Idx, full_warp(a, 3, (16u << 8) | 0x1f));
    for (int l = 0; l < 32; ++l) CHECK(r.d[l] == 100 + static_cast<uint32_t>((l & 16) | 3));
    // Width 16, down by 4: maxLane = (lane & 0x10) | 0xf, the end of the lane's segment.
    r = ptx_shfl_sync(ShflMode::Down, full_warp(a, 4, (16u << 8) | 0x1f));
    for (int l = 0; l < 32; ++l) {
        bool in = (l & 15) + 4 <= 15;
        CHECK(r.p[l] == in);
        CHECK(r.d[l] == 100 + static_cast<uint32_t>(in ? l + 4 : l));
    }
    // "Note that an out of range value of b may still result in a valid computed source
    // lane index j. In this case, a data transfer occurs and the destination predicate p
    // is True": bval = b[4:0], so b = 33 reads lane 1.
    r = ptx_shfl_sync(ShflMode::Idx, full_warp(a, 33, 0x1f));
    for (int l = 0; l < 32; ++l) {
        CHECK(r.d[l] == 101);
        CHECK(r.p[l]);
    }
    // A clamp below the lane: bfly 1 with c = 0xf: lanes above 15 read themselves.
    r = ptx_shfl_sync(ShflMode::Bfly, full_warp(a, 1, 0xf));
    for (int l = 0; l < 32; ++l) CHECK(r.d[l] == 100 + static_cast<uint32_t>(l < 16 ? l ^ 1 : l));
}

TEST_CASE("warp isa: what PTX shfl.sync leaves undefined is reported", "[sim][isa]") {
    std::array<uint32_t, 32> a{};
    for (int l = 0; l < 32; ++l) a[l] = static_cast<uint32_t>(l);
    // Lanes 16..31 do not execute it (a lane-dependent branch) but are named by the
    // membermask and have not exited: the executing lanes wait for them.
    auto lanes = full_warp(a, 16, 0x1f);
    for (int l = 16; l < 32; ++l) lanes[l].executes = false;
    auto r = ptx_shfl_sync(ShflMode::Bfly, lanes);
    CHECK(has(r, ShflProblem::MemberNotArrived, 0, 16));
    CHECK(has(r, ShflProblem::MemberNotArrived, 15, 31));
    // ... and lanes 0..15 read lanes 16..31: "undefined if a thread sources a register from
    // an inactive thread".
    CHECK(has(r, ShflProblem::SourceInactive, 3, 19));
    // Exited lanes (a partial warp of 16) are not waited for; reading them is undefined.
    for (int l = 16; l < 32; ++l) lanes[l].exited = true;
    r = ptx_shfl_sync(ShflMode::Bfly, lanes);
    for (auto& i : r.issues) CHECK(i.problem == ShflProblem::SourceInactive);
    CHECK(r.issues.size() == 16);
    auto ok = ptx_shfl_sync(ShflMode::Bfly, [&] {
        auto l2 = lanes;
        for (auto& l : l2) l.b = 8;  // lanes 0..15 read within 0..15
        return l2;
    }());
    CHECK(ok.issues.empty());
    // "undefined if the executing thread is not in the membermask".
    auto bad = full_warp(a, 1, 0x1f);
    for (auto& l : bad) l.membermask = 0x0000ffffu;
    r = ptx_shfl_sync(ShflMode::Bfly, bad);
    CHECK(has(r, ShflProblem::NotInMembermask, 20, 20));
    CHECK_FALSE(has(r, ShflProblem::NotInMembermask, 3, 3));
    // Lane 16 (outside the mask 0xffff) is read by nobody inside it here: bfly 1 pairs
    // lanes within 0..15. With bfly 16, lane 0 reads lane 16: not in its membermask.
    for (auto& l : bad) l.b = 16;
    r = ptx_shfl_sync(ShflMode::Bfly, bad);
    CHECK(has(r, ShflProblem::SourceNotInMembermask, 0, 16));
    // Different membermasks naming each other never match.
    auto mixed = full_warp(a, 1, 0x1f);
    mixed[5].membermask = 0x7fffffffu;
    r = ptx_shfl_sync(ShflMode::Bfly, mixed);
    CHECK(has(r, ShflProblem::MembermaskMismatch, 0, 5));
}

TEST_CASE("warp isa: the AMD DS_BPERMUTE_B32 examples of the CDNA and RDNA3 guides", "[sim][isa]") {
    // "Examples (simplified 4-thread wavefronts): VGPR[SRC0] = { A, B, C, D }; VGPR[ADDR] =
    // { 0, 0, 12, 4 }; EXEC = 0xF, OFFSET = 0; VGPR[VDST] = { A, A, D, B }" and, with
    // EXEC = 0xA, "VGPR[VDST] = { -, 0, -, B }" ('-': unchanged). The four lanes are the
    // first of a wave whose other lanes are disabled.
    const uint32_t A = 0xA, B = 0xB, C = 0xC, D = 0xD, keep = 0xdeadbeef;
    for (auto isa : {DsPermuteIsa::Cdna, DsPermuteIsa::Rdna3}) {
        for (int wave : {32, 64}) {
            if (isa == DsPermuteIsa::Cdna && wave == 32) continue;  // CDNA is wave64
            INFO("wave " << wave);
            std::vector<uint32_t> addr(static_cast<size_t>(wave), 0), data(static_cast<size_t>(wave), 0),
                old(static_cast<size_t>(wave), keep);
            addr[0] = 0, addr[1] = 0, addr[2] = 12, addr[3] = 4;
            data[0] = A, data[1] = B, data[2] = C, data[3] = D;
            auto r = amd_ds_bpermute(isa, wave, 0xF, addr, data, 0, old);
            CHECK(r.vdst[0] == A);
            CHECK(r.vdst[1] == A);
            CHECK(r.vdst[2] == D);
            CHECK(r.vdst[3] == B);
            CHECK(r.vdst[4] == keep);
            r = amd_ds_bpermute(isa, wave, 0xA, addr, data, 0, old);
            CHECK(r.vdst[0] == keep);
            CHECK(r.vdst[1] == 0);  // "If src_lane selects a disabled thread then zero is returned."
            CHECK(r.source_disabled[1] == 1);
            CHECK(r.vdst[2] == keep);
            CHECK(r.vdst[3] == B);
            CHECK(r.source_disabled[3] == 0);
        }
    }
}

TEST_CASE("warp isa: DS_BPERMUTE_B32 lane arithmetic: / 4, the offset, % 64 on CDNA, % 32 on RDNA3",
          "[sim][isa]") {
    std::vector<uint32_t> data(64), addr(64), old(64, 0);
    for (uint32_t l = 0; l < 64; ++l) data[l] = 1000 + l;
    const uint64_t all = ~uint64_t{0};
    // "ADDR needs to be divided by 4. High-order bits are ignored."
    addr[0] = 7;               // -> lane 1
    addr[1] = 33 * 4;          // CDNA: lane 33; RDNA3 ("MOD 32 regardless of wave size"): lane 1
    addr[2] = 256 + 2 * 4;     // CDNA: (264 / 4) % 64 = 2
    addr[3] = 0xfffffffcu;     // CDNA: 0x3fffffff % 64 = 63; RDNA3: 32'I(-4) / 4 % 32 = -1: undefined
    auto cdna = amd_ds_bpermute(DsPermuteIsa::Cdna, 64, all, addr, data, 0, old);
    CHECK(cdna.vdst[0] == 1001);
    CHECK(cdna.vdst[1] == 1033);
    CHECK(cdna.vdst[2] == 1002);
    CHECK(cdna.vdst[3] == 1063);
    auto rdna = amd_ds_bpermute(DsPermuteIsa::Rdna3, 64, all, addr, data, 0, old);
    CHECK(rdna.vdst[0] == 1001);
    CHECK(rdna.vdst[1] == 1001);
    CHECK(rdna.source[3] == -1);
    // The instruction's offset adds to every lane's address: src_lane = (ADDR + OFFSET) / 4.
    std::fill(addr.begin(), addr.end(), 0);
    auto off = amd_ds_bpermute(DsPermuteIsa::Cdna, 64, all, addr, data, 4 * 5, old);
    for (int l = 0; l < 64; ++l) CHECK(off.vdst[static_cast<size_t>(l)] == 1005);
}
