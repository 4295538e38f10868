// The named-barrier model of named_barrier.h: per barrier, the phase in progress's thread
// count and arrivals; a phase completes when its arrivals reach the count.
#include "sim/named_barrier.h"

namespace tilec::sim::isa {

NamedBarrierArrival NamedBarriers::arrive(int64_t id, int64_t count, int64_t threads, bool sync) {
    NamedBarrierArrival r;
    if (id < 0 || id > 15) {
        r.problem = NamedBarrierProblem::BadId;
        return r;
    }
    if (count <= 0 || count % 32 != 0) {
        r.problem = NamedBarrierProblem::BadCount;
        return r;
    }
    State& b = bars_[static_cast<size_t>(id)];
    if (b.arrived == 0) {
        b.count = count;
        b.arrives = false;
    } else if (count != b.count) {
        r.problem = NamedBarrierProblem::CountMismatch;
    }
    b.arrived += threads;
    if (sync) b.waiting += threads;
    else b.arrives = true;
    r.phase = b.phase;
    if (b.arrived >= b.count) {
        if (b.arrived > b.count && r.problem == NamedBarrierProblem::None)
            r.problem = NamedBarrierProblem::TooManyThreads;
        r.completed = true;
        ++b.phase;
        b.arrived = b.waiting = 0;
    }
    return r;
}

bool NamedBarriers::completed(int64_t id, uint64_t phase) const {
    return id >= 0 && id <= 15 && bars_[static_cast<size_t>(id)].phase > phase;
}

bool NamedBarriers::had_arrive(int64_t id) const {
    return id >= 0 && id <= 15 && bars_[static_cast<size_t>(id)].arrives;
}

std::vector<NamedBarriers::Pending> NamedBarriers::pending() const {
    std::vector<Pending> out;
    for (size_t k = 0; k < bars_.size(); ++k)
        if (bars_[k].arrived > 0) out.push_back({static_cast<int>(k), bars_[k].count, bars_[k].arrived, bars_[k].waiting});
    return out;
}

void NamedBarriers::abandon(int64_t id) {
    if (id < 0 || id > 15) return;
    State& b = bars_[static_cast<size_t>(id)];
    b.arrived = b.waiting = 0;
}

}  // namespace tilec::sim::isa
