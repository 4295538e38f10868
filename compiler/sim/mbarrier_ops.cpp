// mbarrier and TMA instructions (ir.h: MbarrierInit / Arrive / Wait, TmaLoad, TmaStore) run through
// the document models of mbarrier_tma.h. A TMA reads global memory at its issue and
// writes the shadow as its issuing thread (so an access by another thread in the same
// barrier epoch, before the copy, is a race: the refill of a stage others still read);
// its bytes stay in flight (any access is reported) until a wait on its mbarrier lands
// them, and the wait is what orders them for the waiting threads (no barrier needed).
// A wait whose phase cannot complete (arrivals missing, bytes never expected) would hang
// on the GPU: it is reported, and the threads go on.
#include <cstring>

#include "ir/tma_maps.h"
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

std::optional<uint32_t> Executor::mbarrier_address(const Expr& bar, int t, SourceLoc loc) {
    auto* l = static_cast<const LoadNode*>(bar.get());
    Storage& s = storage(l->buffer, loc);
    if (s.scope != Scope::Shared || !s.arena || s.elem_bytes != 8)
        fatal(loc, "an mbarrier in '" + s.name() + "', which is not a shared buffer of 64-bit elements");
    int64_t off = offset_of(s, l->indices, loc, t, false);
    if (off < 0) return std::nullopt;
    return static_cast<uint32_t>(s.base + off * 8);
}

void Executor::land_tma(uint32_t bar) {
    isa::Mbarrier& m = mbarriers_[bar];
    for (auto it = tma_in_flight_.begin(); it != tma_in_flight_.end();) {
        if (it->bar != bar) {
            ++it;
            continue;
        }
        for (auto [addr, value] : it->bytes) {
            arena_.bytes[addr] = value;
            --arena_.tma_pending[addr];
            arena_.proxy_writer[addr] = -1;  // written by the async proxy
            // Ordered for the waiting threads by the barrier, not by a bar.sync epoch.
            arena_.shadow[addr].w_epoch = 0;
        }
        m.complete_tx(it->tx);
        if (it->remote) cluster_landed(it->tx);
        ++sync_progress_;
        it = tma_in_flight_.erase(it);
    }
}

void Executor::check_init_ordered(uint32_t bar, int t, SourceLoc loc, const char* what) {
    auto it = mbarrier_inits_.find(bar);
    if (it == mbarrier_inits_.end() || it->second.thread == t || it->second.epoch != epoch_) return;
    const int32_t by = it->second.thread;
    issue(IssueKind::Mbarrier, loc, t, [&] {
        return std::string(what) + " on an mbarrier that thread " + std::to_string(by) +
               " initialised with no barrier since: the init may not be visible to this thread";
    });
    mbarrier_inits_.erase(it);  // once per init
}

void Executor::exec_mbarrier(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    begin_statement();
    const Expr& bar = op->op == MachineOp::MbarrierWait ? op->src.at(0) : op->dst.at(0);
    for (const auto& i : static_cast<const LoadNode*>(bar.get())->indices) prepare(i, act);
    if (op->op == MachineOp::MbarrierWait) prepare(op->src.at(1), act);
    if (op->op == MachineOp::MbarrierArrive && op->src.size() == 1) prepare(op->src[0], act);
    auto report = [&](int t, isa::MbarrierProblem p) {
        if (p != isa::MbarrierProblem::None)
            issue(IssueKind::Mbarrier, loc, t, [&] { return std::string(machine_op_name(op->op)) + ": " + isa::mbarrier_problem_text(p); });
    };
    bool gave_up = false;
    for (int32_t t : act) {
        auto addr = mbarrier_address(bar, t, loc);
        if (!addr) continue;
        isa::Mbarrier& m = mbarriers_[*addr];
        switch (op->op) {
        case MachineOp::MbarrierInit: {
            // Bytes still in flight on the object would complete a phase of the new one.
            bool busy = false;
            for (const auto& f : tma_in_flight_) busy |= f.bar == *addr;
            if (busy)
                issue(IssueKind::Mbarrier, loc, t, [&] { return std::string("mbarrier_init of an object with TMA bytes in flight"); });
            report(t, m.init(op->imm.at(0)));
            released_[*addr] = false;
            release_known_.erase(*addr);
            mbarrier_inits_[*addr] = {t, epoch_};
            init_cluster_arrivals_[*addr] = cluster_arrivals(t);
            ++sync_progress_;
            break;
        }
        case MachineOp::MbarrierArrive:
            if (op->src.size() == 1) {  // to the object at this offset in a CTA of the cluster
                remote_arrive(eval_int(op->src[0], t), *addr, t, loc);
                break;
            }
            check_init_ordered(*addr, t, loc, "mbarrier_arrive");
            // A phase waiting on bytes alone completes when they land, which the hardware may
            // do any time: an arrival for the next phase finds them landed.
            if (m.initialised && m.pending == 0) land_tma(*addr);
            {
                const isa::Mbarrier before = m;
                report(t, op->imm.at(0) > 0 ? m.arrive_expect_tx(op->imm.at(0)) : m.arrive());
                if (op->imm.at(0) == 0 && cluster_) release_arrive(*this, *addr, before, m, t);
            }
            if (op->imm.at(0) == 0) released_[*addr] = true;
            ++sync_progress_;
            break;
        case MachineOp::MbarrierWait: {
            uint32_t parity = static_cast<uint32_t>(eval_int(op->src.at(1), t) & 1);
            check_init_ordered(*addr, t, loc, "mbarrier_wait");
            if (!m.initialised) {
                report(t, isa::MbarrierProblem::NotInitialised);
                break;
            }
            if (!m.test_wait_parity(parity)) land_tma(*addr);
            // In a warp role, the other role may still complete the phase.
            while (!m.test_wait_parity(parity) && !gave_up && yield_blocked()) land_tma(*addr);
            // The other threads of this wait do not ask again once one gave up.
            gave_up |= !m.test_wait_parity(parity);
            if (m.test_wait_parity(parity)) {
                if (cluster_) release_acquire(*addr, parity, t);
                // Passing a phase other threads arrived on (not only bytes landing):
                // their accesses before the arrival are ordered before this thread's
                // after the wait (release / acquire), a new epoch of the race shadow.
                auto rel = released_.find(*addr);
                if (rel != released_.end() && rel->second) {
                    rel->second = false;
                    ++epoch_;
                }
                break;
            }
            if (!m.test_wait_parity(parity))
                issue(IssueKind::Mbarrier, loc, t, [&] {
                    return "mbarrier_wait on phase parity " + std::to_string(parity) +
                           " that nothing can complete (" + std::to_string(m.pending) +
                           " arrivals missing, tx-count " + std::to_string(m.tx) + "): the thread would hang";
                });
            break;
        }
        default: break;
        }
    }
}

isa::TensorMapDesc Executor::tensor_map(const Storage& g, const LoadNode* gl, const MachineOpNode& op,
                                        const std::vector<size_t>& dims, int t, std::vector<int32_t>& coords) {
    const int eb = g.elem_bytes;
    const int rank = static_cast<int>(gl->indices.size());
    isa::TensorMapDesc map;
    map.elem_bytes = eb;
    map.rank = rank;
    map.global_address = 0;  // the tensor's own byte 0 (the entry point checks the pointer's alignment)
    coords.assign(static_cast<size_t>(rank), 0);
    for (int i = 0; i < rank; ++i) {
        size_t dim = dims.at(static_cast<size_t>(i));
        map.dims[i] = static_cast<uint64_t>(g.shape.at(dim));
        if (i > 0) map.strides[i - 1] = static_cast<uint64_t>(g.strides.at(dim) * eb);
        map.box[i] = static_cast<uint32_t>(op.imm.at(static_cast<size_t>(1 + i)));
        coords[static_cast<size_t>(i)] = static_cast<int32_t>(eval_int(gl->indices[dim], t));
    }
    map.swizzle = static_cast<isa::TmaSwizzle>(op.imm.at(0));
    return map;
}

Executor::TmaOperands Executor::tma_operands(const MachineOpNode* op, const Active& act, SourceLoc loc) {
    const bool load = op->op == MachineOp::TmaLoad;
    auto* gl = static_cast<const LoadNode*>((load ? op->src : op->dst).at(0).get());
    auto* sl = static_cast<const LoadNode*>((load ? op->dst : op->src).at(0).get());
    Storage& g = storage(gl->buffer, loc);
    Storage& s = storage(sl->buffer, loc);
    if (s.scope != Scope::Shared || !s.arena || g.scope != Scope::Global || s.dtype != g.dtype)
        fatal(loc, load ? "tma_load from '" + g.name() + "' into '" + s.name() + "': global to shared of one type only"
                        : "tma_store from '" + s.name() + "' into '" + g.name() + "': shared to global of one type only");
    if (!load && !g.writable) fatal(loc, "tma_store into '" + g.name() + "', which is not an out / inout tensor");
    begin_statement();
    for (const auto& i : sl->indices) prepare(i, act);
    for (const auto& i : gl->indices) prepare(i, act);
    if (load)
        for (const auto& i : static_cast<const LoadNode*>(op->src.at(1).get())->indices) prepare(i, act);
    if (load && op->src.size() == 3) prepare(op->src[2], act);  // a multicast's ctaMask
    std::vector<size_t> dims = tma_map_dims(op->imm, gl->indices.size());
    if (dims.size() != gl->indices.size() || g.strides.at(dims.at(0)) != 1)
        fatal(loc, std::string(load ? "tma_load of '" : "tma_store into '") + g.name() +
                       "': its map's innermost dimension is not the tensor's contiguous one");
    return {g, s, gl, sl, std::move(dims)};
}

void Executor::exec_tma_load(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    auto [g, d, gl, dl, dims] = tma_operands(op, act, loc);
    const int eb = d.elem_bytes;
    for (int32_t t : act) {
        int64_t doff = offset_of(d, dl->indices, loc, t, true);
        auto bar = mbarrier_address(op->src.at(1), t, loc);
        if (doff < 0 || !bar) continue;
        // .multicast::cluster: the ranks of the ctaMask (sim/cluster.h).
        const bool multicast = op->src.size() == 3;
        std::vector<int> ranks;
        if (multicast) {
            ranks = multicast_ranks(op, t, loc);
            if (ranks.empty()) continue;
        }
        check_init_ordered(*bar, t, loc, "tma_load");
        // The tensor map of the tensor: map dimension i is tensor dimension dims[i].
        std::vector<int32_t> coords;
        isa::TensorMapDesc map = tensor_map(g, gl, *op, dims, t, coords);
        isa::TmaBoxCopy copy = isa::tma_load_tile(map, coords, static_cast<uint32_t>(d.base + doff * eb));
        if (!copy.problem.empty()) {
            issue(IssueKind::Tma, loc, t, [&] { return "tma_load of '" + g.name() + "' refused: " + copy.problem; });
            continue;
        }
        TmaInFlight f;
        f.bar = *bar;
        f.tx = copy.tx_bytes;
        f.bytes.reserve(copy.writes.size() * static_cast<size_t>(eb));
        bool first_write = true;
        for (const auto& w : copy.writes) {
            if (w.smem_addr + static_cast<uint32_t>(eb) > static_cast<uint32_t>(d.base + d.size * eb) ||
                w.smem_addr < static_cast<uint32_t>(d.base)) {
                issue(IssueKind::Tma, loc, t, [&] {
                    return "tma_load box of '" + g.name() + "' writes past the end of '" + d.name() + "'";
                });
                f.bytes.clear();
                break;
            }
            uint8_t v[8] = {};
            if (!w.fill) {
                int64_t goff = static_cast<int64_t>(w.global_addr) / eb;
                encode(v, g.get(goff), g.dtype);
                // The box is one instruction of the issuing thread.
                accesses_.push_back({gl, loc, false, false, t, g.base + goff * eb, eb, 0,
                                     first_write ? MemAccess::Form::Instruction : MemAccess::Form::Continued});
                first_write = false;
            }
            int64_t elem = (static_cast<int64_t>(w.smem_addr) - d.base) / eb;
            shared_write(d, elem, t, loc, op);
            for (int b = 0; b < eb; ++b) {
                f.bytes.emplace_back(w.smem_addr + static_cast<uint32_t>(b), v[b]);
                ++arena_.tma_pending[w.smem_addr + static_cast<uint32_t>(b)];
            }
        }
        if (multicast) {
            // The same box into every CTA of the mask (the issuer's own when its bit is set).
            bool own = false;
            for (int r : ranks) {
                if (r == cta_rank_) {
                    own = true;
                    continue;
                }
                if (!f.bytes.empty()) multicast_into(r, f, d, t, loc);
            }
            if (!own) {
                for (auto [addr, v] : f.bytes) --arena_.tma_pending[addr];
                f.bytes.clear();
            }
        }
        if (!f.bytes.empty()) tma_in_flight_.push_back(std::move(f));
        ++sync_progress_;
    }
    flush();
}

Executor::BulkGroups& Executor::bulk_groups_of(int t) {
    if (bulk_groups_.size() <= static_cast<size_t>(t)) bulk_groups_.resize(static_cast<size_t>(t) + 1);
    return bulk_groups_[static_cast<size_t>(t)];
}

void Executor::exec_tma_store(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    auto [g, s, gl, sl, dims] = tma_operands(op, act, loc);
    const int eb = s.elem_bytes;
    for (int32_t t : act) {
        int64_t soff = offset_of(s, sl->indices, loc, t, false);
        if (soff < 0) continue;
        std::vector<int32_t> coords;
        isa::TensorMapDesc map = tensor_map(g, gl, *op, dims, t, coords);
        isa::TmaBoxCopy copy = isa::tma_store_tile(map, coords, static_cast<uint32_t>(s.base + soff * eb));
        if (!copy.problem.empty()) {
            issue(IssueKind::Tma, loc, t, [&] { return "tma_store into '" + g.name() + "' refused: " + copy.problem; });
            continue;
        }
        auto& open = bulk_groups_of(t).open;
        bool first_access = true;
        for (const auto& w : copy.writes) {
            if (w.smem_addr + static_cast<uint32_t>(eb) > static_cast<uint32_t>(s.base + s.size * eb) ||
                w.smem_addr < static_cast<uint32_t>(s.base)) {
                issue(IssueKind::Tma, loc, t, [&] {
                    return "tma_store box into '" + g.name() + "' reads past the end of '" + s.name() + "'";
                });
                break;
            }
            int64_t elem = (static_cast<int64_t>(w.smem_addr) - s.base) / eb;
            // Read through the async proxy: every byte's generic-proxy writer must have
            // fenced since its store (the memory consistency model's proxy rule).
            for (int b = 0; b < eb; ++b) {
                uint32_t addr = w.smem_addr + static_cast<uint32_t>(b);
                int32_t writer = arena_.proxy_writer[addr];
                if (writer >= 0 && !proxy_visible(addr, t, t + 1)) {
                    issue(IssueKind::ProxyFence, loc, t, [&] {
                        return "tma_store reads '" + s.name() + "' element " + std::to_string(elem) + ", which thread " +
                               std::to_string(writer) +
                               " stored (generic proxy) with no fence.proxy.async since that a barrier orders "
                               "before this store: the async proxy may not see the store";
                    });
                    arena_.proxy_writer[addr] = -1;  // once per store
                }
                ++arena_.bulk_reading[addr];
                open.push_back(addr);
            }
            shared_read(s, elem, t, loc, op);
            if (w.fill) continue;  // outside the tensor: not written
            int64_t goff = static_cast<int64_t>(w.global_addr) / eb;
            g.set(goff, s.get(elem));
            if (g.written) (*g.written)[static_cast<size_t>(goff)] = 1;
            // The box is one instruction of the issuing thread.
            accesses_.push_back({gl, loc, false, true, t, g.base + goff * eb, eb, 0,
                                 first_access ? MemAccess::Form::Instruction : MemAccess::Form::Continued});
            first_access = false;
        }
        ++sync_progress_;
    }
    flush();
}

}  // namespace tilec::sim::detail
