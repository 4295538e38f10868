// Memory counters: the accesses of one statement grouped per node and warp, turned into
// global 32-byte sectors and shared-memory wavefronts, each against the ideal.
#include <algorithm>

#include "sim/executor.h"
#include "sim/lds_banks.h"

namespace tilec::sim::detail {

using namespace ir;

// The wavefronts of one warp's shared-memory request accesses_[k..end) (one node, one
// warp, one pass). Where the whole warp is one group of lanes (NVIDIA), every access of
// the request at once. Where the LDS serves lanes in groups by the instruction's width
// (CDNA), the request is first split into the instructions the backend emits: each
// lane's accesses, in program order, merged into runs of contiguous bytes while a run
// stays within 16 bytes and aligned to its size (what LLVM's load/store vectorizer
// forms into ds_read/ds_write_b64 / _b128); instruction i is every lane's i-th run.
isa::LdsCycles Executor::shared_cycles(size_t k, size_t end) const {
    const MemAccess& first = accesses_[k];
    if (!lds_lane_groups_) {
        std::vector<isa::LdsLaneAccess> all;
        for (size_t a = k; a < end; ++a) all.push_back({0, accesses_[a].addr, accesses_[a].bytes});
        return isa::lds_cycles(isa::BankModel::PerWarp, all, first.bytes, first.store);
    }
    std::vector<std::vector<isa::LdsLaneAccess>> runs(static_cast<size_t>(warp_));
    for (size_t a = k; a < end; ++a) {
        const MemAccess& m = accesses_[a];
        int lane = m.thread % warp_;
        auto& r = runs[static_cast<size_t>(lane)];
        if (!r.empty()) {
            isa::LdsLaneAccess& last = r.back();
            int64_t len = last.bytes + m.bytes;
            int64_t pow2 = 1;
            while (pow2 < len) pow2 *= 2;
            if (m.addr == last.addr + last.bytes && len <= 16 && last.addr % pow2 == 0) {
                last.bytes = static_cast<int>(len);
                continue;
            }
        }
        r.push_back({lane, m.addr, m.bytes});
    }
    size_t most = 0;
    for (const auto& r : runs) most = std::max(most, r.size());
    isa::LdsCycles total;
    std::vector<isa::LdsLaneAccess> insn;
    for (size_t i = 0; i < most; ++i) {
        insn.clear();
        int width = 0;
        for (const auto& r : runs)
            if (i < r.size()) {
                insn.push_back(r[i]);
                width = std::max(width, r[i].bytes);
            }
        isa::LdsCycles c = isa::lds_cycles(isa::BankModel::CdnaPasses, insn, width, first.store);
        total.actual += c.actual;
        total.ideal += c.ideal;
    }
    return total;
}

void Executor::flush() {
    if (accesses_.empty() || unroll_depth_ > 0) return;
    // Group by node (the accesses of one node are contiguous per thread order, but
    // different nodes interleave), then by warp.
    std::stable_sort(accesses_.begin(), accesses_.end(), [w = warp_](const MemAccess& a, const MemAccess& b) {
        if (a.node != b.node) return a.node < b.node;
        if (a.thread / w != b.thread / w) return a.thread < b.thread;
        return a.phase < b.phase || (a.phase == b.phase && a.thread < b.thread);
    });
    size_t k = 0;
    std::vector<int64_t> units;
    while (k < accesses_.size()) {
        size_t end = k;
        const MemAccess& first = accesses_[k];
        int warp = first.thread / warp_;
        while (end < accesses_.size() && accesses_[end].node == first.node &&
               accesses_[end].thread / warp_ == warp && accesses_[end].phase == first.phase)
            ++end;
        CounterKey key{first.loc.file, first.loc.line, first.shared, first.store};
        auto [it, fresh] = counters_.try_emplace(key);
        LineCounters& c = it->second;
        if (fresh) {
            c.loc = first.loc;
            c.shared = first.shared;
            c.store = first.store;
        }
        if (first.phase == 0) ++c.requests;  // a pass after the first is the same request
        c.lanes += static_cast<int64_t>(end - k);
        units.clear();
        if (first.shared) {
            isa::LdsCycles cyc = shared_cycles(k, end);
            c.transactions += cyc.actual;
            c.ideal += cyc.ideal;
        } else {
            // Distinct sectors against the distinct bytes.
            std::vector<int64_t> bytes;
            for (size_t a = k; a < end; ++a) {
                for (int64_t s = accesses_[a].addr / kSectorBytes;
                     s <= (accesses_[a].addr + accesses_[a].bytes - 1) / kSectorBytes; ++s)
                    units.push_back(s);
                bytes.push_back(accesses_[a].addr);
            }
            std::sort(units.begin(), units.end());
            units.erase(std::unique(units.begin(), units.end()), units.end());
            std::sort(bytes.begin(), bytes.end());
            bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
            c.transactions += static_cast<int64_t>(units.size());
            c.ideal += (static_cast<int64_t>(bytes.size()) * first.bytes + kSectorBytes - 1) / kSectorBytes;
        }
        k = end;
    }
    accesses_.clear();
}

}  // namespace tilec::sim::detail
