// The LDS / shared-memory bank model of lds_banks.h: the lane groups of the documents and
// the cycles of one group's distinct words.
#include "sim/lds_banks.h"

#include <algorithm>

namespace tilec::sim::isa {

namespace {

constexpr int kBanks = 32;
constexpr int kBankBytes = 4;

// Distinct words of the lanes in `group` (all lanes when empty): max per bank, ideal.
LdsCycles group_cycles(std::span<const LdsLaneAccess> lanes, const std::vector<int>* group) {
    std::vector<int64_t> words;
    for (const LdsLaneAccess& a : lanes) {
        if (a.bytes <= 0) continue;
        if (group && std::find(group->begin(), group->end(), a.lane) == group->end()) continue;
        for (int64_t w = a.addr / kBankBytes; w <= (a.addr + a.bytes - 1) / kBankBytes; ++w)
            words.push_back(w);
    }
    if (words.empty()) return {};
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    int per_bank[kBanks] = {};
    int most = 0;
    for (int64_t w : words) most = std::max(most, ++per_bank[((w % kBanks) + kBanks) % kBanks]);
    return {most, (static_cast<int64_t>(words.size()) + kBanks - 1) / kBanks};
}

}  // namespace

std::vector<std::vector<int>> cdna_lds_lane_groups(int bytes, bool store) {
    std::vector<std::vector<int>> groups;
    auto run = [](int first, int n) {
        std::vector<int> g;
        for (int l = first; l < first + n; ++l) g.push_back(l);
        return g;
    };
    if (bytes <= 8) {
        // Half waves (the OpenCL optimization guide's rule for GCN).
        groups.push_back(run(0, 32));
        groups.push_back(run(32, 32));
        return groups;
    }
    if (store) {
        // ds_write_b128: 8 phases of 8 consecutive lanes.
        for (int first = 0; first < 64; first += 8) groups.push_back(run(first, 8));
        return groups;
    }
    // ds_read_b128: 0:3+20:23, 4:7+16:19, 8:11+28:31, 12:15+24:27, and the same + 32.
    static constexpr int kPairs[4][2] = {{0, 20}, {4, 16}, {8, 28}, {12, 24}};
    for (int half : {0, 32})
        for (const auto& p : kPairs) {
            std::vector<int> g = run(half + p[0], 4);
            for (int l : run(half + p[1], 4)) g.push_back(l);
            groups.push_back(g);
        }
    return groups;
}

LdsCycles lds_cycles(BankModel model, std::span<const LdsLaneAccess> lanes, int bytes_per_lane, bool store) {
    if (model == BankModel::PerWarp) return group_cycles(lanes, nullptr);
    LdsCycles total;
    for (const auto& g : cdna_lds_lane_groups(bytes_per_lane, store)) {
        LdsCycles c = group_cycles(lanes, &g);
        total.actual += c.actual;
        total.ideal += c.ideal;
    }
    return total;
}

}  // namespace tilec::sim::isa
