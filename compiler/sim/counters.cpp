// Memory counters: the accesses of one statement grouped per node and warp, turned into
// global 32-byte sectors and shared-memory wavefronts, each against the ideal.
#include <algorithm>

#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

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
            // Distinct 4-byte words; per bank, the distinct words serialise.
            for (size_t a = k; a < end; ++a)
                for (int64_t w = accesses_[a].addr / kBankBytes;
                     w <= (accesses_[a].addr + accesses_[a].bytes - 1) / kBankBytes; ++w)
                    units.push_back(w);
            std::sort(units.begin(), units.end());
            units.erase(std::unique(units.begin(), units.end()), units.end());
            int per_bank[kBanks] = {};
            int most = 0;
            for (int64_t w : units) most = std::max(most, ++per_bank[w % kBanks]);
            c.transactions += most;
            c.ideal += (static_cast<int64_t>(units.size()) + kBanks - 1) / kBanks;
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
