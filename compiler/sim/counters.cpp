// Memory counters: the accesses of one statement grouped per node and warp, turned into
// global 32-byte sectors and shared-memory wavefronts, each against the ideal.
#include <algorithm>
#include <climits>

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

// A warp request is what one instruction of each lane asks for: the n-th instruction of
// every lane of the warp for one node. Within an unrolled register loop one node runs
// many times per thread, so its accesses are numbered per thread in execution order,
// and element accesses (plain loads and stores) merge into the vectors the backend's
// load/store vectoriser forms from them: a run of consecutive elements at contiguous
// addresses, cut into pieces of at most 16 bytes, each as long as its address is
// aligned to (a power of two). The alignment is the address's at run time, which the
// vectoriser may fail to prove (a row start `i * N` with N unknown): its scalar
// accesses are then counted as vectors, an underestimate of the requests and, for
// accesses spread over rows, of the sectors.
void Executor::form_instructions() {
    std::vector<size_t> order(accesses_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const MemAccess &x = accesses_[a], &y = accesses_[b];
        return x.node != y.node ? x.node < y.node : x.thread < y.thread;
    });
    std::vector<MemAccess> out;
    out.reserve(accesses_.size());
    size_t i = 0;
    while (i < order.size()) {
        size_t run_end = i;
        while (run_end < order.size() && accesses_[order[run_end]].node == accesses_[order[i]].node &&
               accesses_[order[run_end]].thread == accesses_[order[i]].thread)
            ++run_end;
        int32_t seq = 0;
        size_t k = i;
        while (k < run_end) {
            const MemAccess& a = accesses_[order[k]];
            if (a.form != MemAccess::Form::Element) {
                // One instruction with the bytes that continue it.
                size_t j = k + 1;
                while (j < run_end && accesses_[order[j]].form == MemAccess::Form::Continued) ++j;
                for (size_t c = k; c < j; ++c) {
                    out.push_back(accesses_[order[c]]);
                    out.back().seq = seq;
                }
                ++seq;
                k = j;
                continue;
            }
            // Consecutive element accesses at contiguous addresses.
            size_t j = k + 1;
            while (j < run_end) {
                const MemAccess& b = accesses_[order[j]];
                const MemAccess& prev = accesses_[order[j - 1]];
                if (b.form != MemAccess::Form::Element || b.bytes != a.bytes || b.addr != prev.addr + prev.bytes) break;
                ++j;
            }
            for (size_t p = k; p < j;) {
                const MemAccess& first = accesses_[order[p]];
                int64_t left = static_cast<int64_t>(j - p) * first.bytes;
                int64_t z = 16;
                while (z > first.bytes && (z > left || first.addr % z != 0)) z /= 2;
                int n = static_cast<int>(std::max<int64_t>(1, z / first.bytes));
                MemAccess v = first;
                v.bytes = n * first.bytes;
                v.elems = n;
                v.seq = seq++;
                out.push_back(v);
                p += static_cast<size_t>(n);
            }
            k = j;
        }
        i = run_end;
    }
    accesses_ = std::move(out);
}

void Executor::flush() {
    if (accesses_.empty() || unroll_depth_ > 0) return;
    form_instructions();
    // Group by node, then by warp and instruction number (and the pass over it).
    std::stable_sort(accesses_.begin(), accesses_.end(), [w = warp_](const MemAccess& a, const MemAccess& b) {
        if (a.node != b.node) return a.node < b.node;
        if (a.thread / w != b.thread / w) return a.thread < b.thread;
        if (a.seq != b.seq) return a.seq < b.seq;
        return a.phase < b.phase || (a.phase == b.phase && a.thread < b.thread);
    });
    size_t k = 0;
    std::vector<int64_t> units;
    while (k < accesses_.size()) {
        size_t end = k;
        const MemAccess& first = accesses_[k];
        int warp = first.thread / warp_;
        while (end < accesses_.size() && accesses_[end].node == first.node &&
               accesses_[end].thread / warp_ == warp && accesses_[end].seq == first.seq &&
               accesses_[end].phase == first.phase)
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
        for (size_t a = k; a < end; ++a) c.lanes += accesses_[a].elems;
        units.clear();
        if (first.shared) {
            isa::LdsCycles cyc = shared_cycles(k, end);
            c.transactions += cyc.actual;
            c.ideal += cyc.ideal;
        } else {
            // Distinct sectors against the distinct bytes.
            std::vector<std::pair<int64_t, int64_t>> spans;
            for (size_t a = k; a < end; ++a) {
                for (int64_t s = accesses_[a].addr / kSectorBytes;
                     s <= (accesses_[a].addr + accesses_[a].bytes - 1) / kSectorBytes; ++s)
                    units.push_back(s);
                spans.emplace_back(accesses_[a].addr, accesses_[a].addr + accesses_[a].bytes);
            }
            std::sort(units.begin(), units.end());
            units.erase(std::unique(units.begin(), units.end()), units.end());
            std::sort(spans.begin(), spans.end());
            int64_t distinct = 0, covered = INT64_MIN;
            for (auto& [b, e] : spans) {
                if (e > covered) distinct += e - std::max(b, covered);
                covered = std::max(covered, e);
            }
            c.transactions += static_cast<int64_t>(units.size());
            c.ideal += (distinct + kSectorBytes - 1) / kSectorBytes;
        }
        k = end;
    }
    accesses_.clear();
}

}  // namespace tilec::sim::detail
