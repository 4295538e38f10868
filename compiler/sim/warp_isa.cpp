// The ISA models of warp_isa.h: PTX shfl.sync and AMD DS_BPERMUTE_B32, each written
// after its document's pseudocode (cited in the header), step for step.
#include "sim/warp_isa.h"

#include <cstddef>

namespace tilec::sim::isa {

ShflSyncResult ptx_shfl_sync(ShflMode mode, const std::array<ShflSyncLane, 32>& lanes) {
    ShflSyncResult r;
    auto in = [](uint32_t mask, int lane) { return ((mask >> lane) & 1u) != 0; };
    // The synchronisation the instruction begins with: wait_for_specified_threads(membermask).
    for (int lane = 0; lane < 32; ++lane) {
        const ShflSyncLane& me = lanes[lane];
        if (!me.executes) continue;
        if (!in(me.membermask, lane)) r.issues.push_back({ShflProblem::NotInMembermask, lane, lane});
        for (int other = 0; other < 32; ++other) {
            if (other == lane || !in(me.membermask, other) || lanes[other].exited) continue;
            if (!lanes[other].executes)
                r.issues.push_back({ShflProblem::MemberNotArrived, lane, other});
            else if (lanes[other].membermask != me.membermask)
                r.issues.push_back({ShflProblem::MembermaskMismatch, lane, other});
        }
    }
    for (int lane = 0; lane < 32; ++lane) {
        const ShflSyncLane& me = lanes[lane];
        if (!me.executes) continue;
        const int bval = static_cast<int>(me.b & 0x1f);
        const int cval = static_cast<int>(me.c & 0x1f);
        const int segmask = static_cast<int>((me.c >> 8) & 0x1f);
        const int max_lane = (lane & segmask) | (cval & ~segmask);
        const int min_lane = lane & segmask;
        int j = 0;
        bool pval = false;
        switch (mode) {
        case ShflMode::Up:
            j = lane - bval;
            pval = j >= max_lane;
            break;
        case ShflMode::Down:
            j = lane + bval;
            pval = j <= max_lane;
            break;
        case ShflMode::Bfly:
            j = lane ^ bval;
            pval = j <= max_lane;
            break;
        case ShflMode::Idx:
            j = min_lane | (bval & ~segmask);
            pval = j <= max_lane;
            break;
        }
        if (!pval) j = lane;  // copy from own lane
        r.source[lane] = j;
        r.p[lane] = pval;
        if (!lanes[j].executes) {
            r.issues.push_back({ShflProblem::SourceInactive, lane, j});
            r.d[lane] = 0;
        } else if (!in(me.membermask, j)) {
            r.issues.push_back({ShflProblem::SourceNotInMembermask, lane, j});
            r.d[lane] = 0;
        } else {
            r.d[lane] = lanes[j].a;
        }
    }
    return r;
}

DsBpermuteResult amd_ds_bpermute(DsPermuteIsa isa, int wave, uint64_t exec, const std::vector<uint32_t>& addr,
                                 const std::vector<uint32_t>& data0, uint16_t offset,
                                 const std::vector<uint32_t>& vdst_in) {
    const std::size_t n = static_cast<std::size_t>(wave);
    DsBpermuteResult r;
    r.vdst = vdst_in;
    r.source.assign(n, -1);
    r.source_disabled.assign(n, 0);
    auto enabled = [&](int lane) { return lane >= 0 && lane < wave && ((exec >> lane) & 1u) != 0; };
    std::vector<uint32_t> tmp(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        int src = -1;
        if (isa == DsPermuteIsa::Cdna) {
            src = static_cast<int>((addr[i] + static_cast<uint32_t>(offset)) / 4u % 64u);
        } else {
            int32_t sum = static_cast<int32_t>(addr[i] + static_cast<uint32_t>(offset));
            int32_t lane = sum / 4 % 32;
            src = lane < 0 ? -1 : lane;
        }
        r.source[i] = src;
        // "EXEC is applied to the source VGPR reads."
        if (enabled(src)) tmp[i] = data0[static_cast<std::size_t>(src)];
        else if (enabled(static_cast<int>(i))) r.source_disabled[i] = 1;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (enabled(static_cast<int>(i))) r.vdst[i] = tmp[i];
    return r;
}

}  // namespace tilec::sim::isa
