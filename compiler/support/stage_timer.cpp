#include "support/stage_timer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <ostream>

namespace tilec {
namespace {

struct Entry {
    std::chrono::nanoseconds time{0};
    int runs = 0;
};

// The stages in pipeline order; a stage not listed prints after these, by name.
const std::vector<std::string> kStageOrder = {"cache-hit",    "llvm-ir", "llvm-opt", "llvm-link",
                                              "llvm-codegen", "ptxas",   "ld.lld"};

std::mutex g_mutex;
std::atomic<bool> g_on{false};
std::map<std::pair<std::string, std::string>, Entry> g_entries;

size_t stage_rank(const std::string& s) {
    auto it = std::find(kStageOrder.begin(), kStageOrder.end(), s);
    return static_cast<size_t>(it - kStageOrder.begin());
}

}  // namespace

StageTimer& StageTimer::global() {
    static StageTimer timer;
    return timer;
}

void StageTimer::enable(bool on) { g_on = on; }
bool StageTimer::enabled() const { return g_on; }

void StageTimer::add(const std::string& target, const std::string& stage, std::chrono::nanoseconds time) {
    if (!g_on) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    Entry& e = g_entries[{target, stage}];
    e.time += time;
    e.runs += 1;
}

void StageTimer::print(std::ostream& os, const std::vector<std::string>& targets) const {
    std::lock_guard<std::mutex> lock(g_mutex);
    char buf[256];
    for (auto& target : targets) {
        std::vector<std::pair<std::string, Entry>> rows;
        for (auto& [key, e] : g_entries)
            if (key.first == target) rows.emplace_back(key.second, e);
        if (rows.empty()) continue;
        std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
            size_t ra = stage_rank(a.first), rb = stage_rank(b.first);
            return ra != rb ? ra < rb : a.first < b.first;
        });
        std::chrono::nanoseconds total{0};
        for (auto& r : rows) total += r.second.time;
        auto ms = [](std::chrono::nanoseconds ns) { return static_cast<double>(ns.count()) / 1e6; };
        os << "===-- backend timing, " << target << " (wall, summed over tasks) --===\n";
        std::snprintf(buf, sizeof buf, "  %-14s %12s %8s %6s\n", "stage", "ms", "%", "runs");
        os << buf;
        for (auto& [stage, e] : rows) {
            double pct = total.count() > 0 ? 100.0 * static_cast<double>(e.time.count()) /
                                                 static_cast<double>(total.count())
                                           : 0.0;
            std::snprintf(buf, sizeof buf, "  %-14s %12.3f %7.1f%% %6d\n", stage.c_str(), ms(e.time), pct, e.runs);
            os << buf;
        }
        std::snprintf(buf, sizeof buf, "  %-14s %12.3f %7.1f%%\n", "total", ms(total), 100.0);
        os << buf;
    }
}

StageTimer::Scope::Scope(std::string target, std::string stage)
    : target_(std::move(target)), stage_(std::move(stage)), on_(g_on) {
    if (on_) start_ = std::chrono::steady_clock::now();
}

StageTimer::Scope::~Scope() { stop(); }

void StageTimer::Scope::stop() {
    if (!on_) return;
    on_ = false;
    auto elapsed = std::chrono::steady_clock::now() - start_;
    StageTimer::global().add(target_, stage_, std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed));
}

}  // namespace tilec
