// Warp shuffles: every lane's operands at once, grouped by warp, run through the vendor
// instruction's model (warp_isa.h), with what the ISA or the IR leaves undefined reported.
#include <algorithm>

#include "sim/executor.h"
#include "sim/warp_isa.h"

namespace tilec::sim::detail {

using namespace ir;

void Executor::prepare(const Expr& e, const Active& act) {
    if (!e) return;
    switch (e->kind) {
    case ExprKind::Binary: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        prepare(op->a, act);
        prepare(op->b, act);
        return;
    }
    case ExprKind::Unary: prepare(static_cast<const UnaryNode*>(e.get())->a, act); return;
    case ExprKind::Select: {
        auto* op = static_cast<const SelectNode*>(e.get());
        prepare(op->cond, act);
        prepare(op->t, act);
        prepare(op->f, act);
        return;
    }
    case ExprKind::Cast: prepare(static_cast<const CastNode*>(e.get())->value, act); return;
    case ExprKind::Load:
        for (const auto& i : static_cast<const LoadNode*>(e.get())->indices) prepare(i, act);
        return;
    case ExprKind::Call: {
        auto* op = static_cast<const CallNode*>(e.get());
        for (const auto& a : op->args) prepare(a, act);
        if (is_warp_shuffle(op->op) && !shuffled_.count(op)) shuffle(op, act);
        return;
    }
    default: return;
    }
}

void Executor::shuffle(const CallNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    if (op->args.size() != 2) fatal(loc, std::string(call_op_name(op->op)) + " takes 2 arguments");
    DataType t = op->args[0]->type;
    if (t.bits > 64) fatal(loc, std::string(call_op_name(op->op)) + " of " + t.str());
    // Every executing thread's operands first, as the warp's lanes supply them at once.
    std::vector<uint64_t> bits(static_cast<size_t>(threads_));
    std::vector<int64_t> lane_arg(static_cast<size_t>(threads_));
    for (int32_t th : act) {
        bits[th] = register_bits(eval(op->args[0], th), t);
        lane_arg[th] = eval_int(op->args[1], th);
    }
    std::vector<Value> out(static_cast<size_t>(threads_));
    for (size_t k = 0; k < act.size();) {
        size_t end = k;
        while (end < act.size() && act[end] / warp_ == act[k] / warp_) ++end;
        shuffle_warp(op, loc, act, k, end, bits, lane_arg, out);
        k = end;
    }
    shuffled_[op] = std::move(out);
}

void Executor::shuffle_warp(const CallNode* op, SourceLoc loc, const Active& act, size_t k, size_t end,
                            const std::vector<uint64_t>& bits, const std::vector<int64_t>& lane_arg,
                            std::vector<Value>& out) {
    const std::string name = call_op_name(op->op);
    const DataType t = op->args[0]->type;
    const int first = act[k] / warp_ * warp_;
    const int lanes_here = std::min(warp_, threads_ - first);  // the warp's lanes that exist
    std::vector<uint8_t> active(static_cast<size_t>(warp_), 0);
    for (size_t a = k; a < end; ++a) active[static_cast<size_t>(act[a] - first)] = 1;
    const int halves = t.bits > 32 ? 2 : 1;
    std::vector<uint64_t> result(static_cast<size_t>(warp_), 0);
    auto thread_of = [&](int lane) { return first + lane; };

    // The IR's contract (ir.h): the lane operand lies in [0, W). PTX reads only its low 5
    // bits and ds_bpermute wraps the address: either would quietly read another lane.
    for (size_t a = k; a < end; ++a) {
        int64_t m = lane_arg[act[a]];
        if (m < 0 || m >= warp_)
            issue(IssueKind::ShuffleOperand, loc, act[a], [&] {
                return "lane operand " + std::to_string(m) + " of " + name + " is outside [0, " +
                       std::to_string(warp_) + ") (the warp's lanes)";
            });
    }

    if (!opt_.target || opt_.target->vendor == target::Vendor::Nvidia) {
        // shfl.sync.MODE.b32 d, a, b, c, 0xffffffff with c = 0x1f (0 for up): the whole
        // 32-lane warp as one segment, as the NVPTX backend emits it.
        isa::ShflMode mode = op->op == CallOp::ShflXor    ? isa::ShflMode::Bfly
                             : op->op == CallOp::ShflUp   ? isa::ShflMode::Up
                             : op->op == CallOp::ShflDown ? isa::ShflMode::Down
                                                          : isa::ShflMode::Idx;
        const char* ptx = mode == isa::ShflMode::Bfly   ? "bfly"
                          : mode == isa::ShflMode::Up   ? "up"
                          : mode == isa::ShflMode::Down ? "down"
                                                        : "idx";
        const std::string instr = name + " (shfl.sync." + ptx + ")";
        for (int h = 0; h < halves; ++h) {
            std::array<isa::ShflSyncLane, 32> lanes{};
            for (int l = 0; l < 32; ++l) {
                isa::ShflSyncLane& ln = lanes[static_cast<size_t>(l)];
                ln.exited = l >= lanes_here;
                ln.executes = l < warp_ && active[static_cast<size_t>(l)];
                ln.membermask = 0xffffffffu;
                ln.c = op->op == CallOp::ShflUp ? 0u : 0x1fu;
                if (!ln.executes) continue;
                ln.a = static_cast<uint32_t>(bits[thread_of(l)] >> (32 * h));
                ln.b = static_cast<uint32_t>(lane_arg[thread_of(l)]);
            }
            isa::ShflSyncResult r = isa::ptx_shfl_sync(mode, lanes);
            for (int l = 0; l < 32; ++l)
                if (lanes[static_cast<size_t>(l)].executes)
                    result[static_cast<size_t>(l)] |= static_cast<uint64_t>(r.d[static_cast<size_t>(l)])
                                                      << (32 * h);
            if (h > 0) continue;  // the second half's findings are the first's
            int missing = -1, absent = 0;
            for (const auto& is : r.issues)
                if (is.problem == isa::ShflProblem::MemberNotArrived && is.lane == act[k] - first) {
                    if (missing < 0) missing = is.other;
                    ++absent;
                }
            if (missing >= 0)
                issue(IssueKind::ShuffleDivergence, loc, act[k], [&] {
                    return instr + " executed by " + std::to_string(lanes_here - absent) + " of the warp's " +
                           std::to_string(lanes_here) + " lanes: lane " + std::to_string(missing) +
                           ", named by membermask 0xffffffff, does not execute it (a shuffle under a "
                           "lane-dependent condition; undefined in PTX)";
                });
            for (const auto& is : r.issues) {
                if (is.problem == isa::ShflProblem::SourceInactive ||
                    is.problem == isa::ShflProblem::SourceNotInMembermask)
                    issue(IssueKind::ShuffleSource, loc, thread_of(is.lane), [&] {
                        return instr + " in lane " + std::to_string(is.lane) + " reads lane " +
                               std::to_string(is.other) +
                               (is.other >= lanes_here ? ", which does not exist in the block"
                                                       : ", which does not execute it") +
                               " (undefined in PTX)";
                    });
                else if (is.problem != isa::ShflProblem::MemberNotArrived)
                    issue(IssueKind::ShuffleDivergence, loc, thread_of(is.lane), [&] {
                        return instr + " in lane " + std::to_string(is.lane) +
                               ": membermasks disagree with lane " + std::to_string(is.other) +
                               " (undefined in PTX)";
                    });
            }
        }
    } else {
        // ds_bpermute_b32 with the byte address of the source lane the IR defines (ir.h),
        // computed as the AMDGPU backend computes it, in 32-bit arithmetic.
        const std::string instr = name + " (ds_bpermute_b32)";
        int executing = static_cast<int>(end - k);
        if (executing < lanes_here) {
            int missing = 0;
            while (missing < lanes_here && active[static_cast<size_t>(missing)]) ++missing;
            issue(IssueKind::ShuffleDivergence, loc, act[k], [&] {
                return instr + " executed by " + std::to_string(executing) + " of the warp's " +
                       std::to_string(lanes_here) + " lanes: lane " + std::to_string(missing) +
                       " does not execute it (a shuffle under a lane-dependent condition; "
                       "tilec's shuffles need the whole warp)";
            });
        }
        uint64_t exec = 0;
        std::vector<uint32_t> addr(static_cast<size_t>(warp_), 0), data(static_cast<size_t>(warp_), 0),
            zeros(static_cast<size_t>(warp_), 0);
        for (int l = 0; l < warp_; ++l) {
            if (!active[static_cast<size_t>(l)]) continue;
            exec |= uint64_t{1} << l;
            int32_t m = static_cast<int32_t>(lane_arg[thread_of(l)]);
            int32_t lane = l, j = 0;
            switch (op->op) {
            case CallOp::ShflXor: j = lane ^ m; break;
            case CallOp::ShflUp:
                j = static_cast<int32_t>(static_cast<uint32_t>(lane) - static_cast<uint32_t>(m));
                j = j < 0 ? lane : j;
                break;
            case CallOp::ShflDown:
                j = static_cast<int32_t>(static_cast<uint32_t>(lane) + static_cast<uint32_t>(m));
                j = j >= warp_ ? lane : j;
                break;
            default: j = m; break;
            }
            addr[static_cast<size_t>(l)] = static_cast<uint32_t>(j) << 2;
        }
        // gfx9 (CDNA, wave64) and gfx11 (RDNA3, wave32): the two documents' texts.
        isa::DsPermuteIsa variant = warp_ == 64 ? isa::DsPermuteIsa::Cdna : isa::DsPermuteIsa::Rdna3;
        for (int h = 0; h < halves; ++h) {
            for (int l = 0; l < warp_; ++l)
                data[static_cast<size_t>(l)] = active[static_cast<size_t>(l)]
                                                   ? static_cast<uint32_t>(bits[thread_of(l)] >> (32 * h))
                                                   : 0u;
            isa::DsBpermuteResult r = isa::amd_ds_bpermute(variant, warp_, exec, addr, data, 0, zeros);
            for (int l = 0; l < warp_; ++l)
                if (active[static_cast<size_t>(l)])
                    result[static_cast<size_t>(l)] |= static_cast<uint64_t>(r.vdst[static_cast<size_t>(l)])
                                                      << (32 * h);
            if (h > 0) continue;
            for (int l = 0; l < warp_; ++l)
                if (active[static_cast<size_t>(l)] && r.source_disabled[static_cast<size_t>(l)])
                    issue(IssueKind::ShuffleSource, loc, thread_of(l), [&] {
                        int src = r.source[static_cast<size_t>(l)];
                        return instr + " in lane " + std::to_string(l) + " reads lane " +
                               std::to_string(src) +
                               (src >= lanes_here ? ", which does not exist in the block"
                                                  : ", which does not execute it") +
                               " (ds_bpermute returns 0 for a disabled lane)";
                    });
        }
    }
    for (size_t a = k; a < end; ++a)
        out[static_cast<size_t>(act[a])] = from_register_bits(result[static_cast<size_t>(act[a] - first)], t);
}

}  // namespace tilec::sim::detail
