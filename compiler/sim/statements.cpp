// SIMT lock-step statements: each runs for every active thread before the next; loops,
// ifs (splitting the active set), stores, atomics, allocations and barriers.
#include <algorithm>

#include "scalar/float_formats.h"
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

std::vector<Value>& Executor::push_tvar(const VarNode* v) {
    if (tdepth_ == tvars_.size()) tvars_.push_back({v, std::vector<Value>(static_cast<size_t>(threads_))});
    tvars_[tdepth_].var = v;
    return tvars_[tdepth_++].vals;
}

void Executor::exec(const Stmt& s, const Active& act) {
    if (act.empty()) return;
    stmt_loc_ = s->loc.valid() ? s->loc : stmt_loc_;
    switch (s->kind) {
    case StmtKind::Seq:
        for (const auto& c : static_cast<const SeqNode*>(s.get())->stmts) exec(c, act);
        return;
    case StmtKind::For: {
        auto* op = static_cast<const ForNode*>(s.get());
        begin_statement();
        prepare(op->min, act);
        prepare(op->extent, act);
        std::vector<int64_t> mins(static_cast<size_t>(threads_)), ext(static_cast<size_t>(threads_));
        int64_t most = 0;
        for (int32_t t : act) {
            mins[t] = eval_int(op->min, t);
            ext[t] = eval_int(op->extent, t);
            most = std::max(most, ext[t]);
        }
        flush();
        // The backend turns an unrolled register loop's accesses into vector accesses:
        // count them as one request per node and warp over all iterations.
        bool vector = op->for_kind == ForKind::Unroll || op->for_kind == ForKind::Parallel;
        unroll_depth_ += vector;
        std::vector<Value>& vals = push_tvar(op->var.get());
        Active sub;
        for (int64_t k = 0; k < most; ++k) {
            sub.clear();
            for (int32_t t : act)
                if (k < ext[t]) {
                    sub.push_back(t);
                    tvars_[tdepth_ - 1].vals[t] = Value::of_int(normalize_int(
                        static_cast<int64_t>(static_cast<uint64_t>(mins[t]) + k), op->var->type));
                }
            exec(op->body, sub);
        }
        (void)vals;
        pop_tvar();
        unroll_depth_ -= vector;
        flush();
        return;
    }
    case StmtKind::If: {
        auto* op = static_cast<const IfNode*>(s.get());
        begin_statement();
        prepare(op->cond, act);
        Active yes, no;
        for (int32_t t : act) (eval(op->cond, t).i != 0 ? yes : no).push_back(t);
        flush();
        if (ir::is_warp_role_split(*op)) {
            run_roles(op, yes, no);
            return;
        }
        exec(op->then_case, yes);
        if (op->else_case) exec(op->else_case, no);
        return;
    }
    case StmtKind::LetStmt: {
        auto* op = static_cast<const LetStmtNode*>(s.get());
        // Evaluated before the binding exists (the value may name an outer binding of
        // the same variable).
        std::vector<Value> tmp(static_cast<size_t>(threads_));
        begin_statement();
        prepare(op->value, act);
        for (int32_t t : act) tmp[t] = eval(op->value, t);
        flush();
        std::vector<Value>& vals = push_tvar(op->var.get());
        for (int32_t t : act) vals[t] = tmp[t];
        exec(op->body, act);
        pop_tvar();
        return;
    }
    case StmtKind::Allocate: exec_allocate(static_cast<const AllocateNode*>(s.get()), act); return;
    case StmtKind::Store: exec_store(static_cast<const StoreNode*>(s.get()), act); return;
    case StmtKind::Evaluate:
        begin_statement();
        prepare(static_cast<const EvaluateNode*>(s.get())->value, act);
        for (int32_t t : act) eval(static_cast<const EvaluateNode*>(s.get())->value, t);
        flush();
        return;
    case StmtKind::Barrier: barrier(static_cast<const BarrierNode*>(s.get()), act); return;
    case StmtKind::AtomicRmw: exec_atomic_rmw(static_cast<const AtomicRmwNode*>(s.get()), act); return;
    case StmtKind::FullWrite: exec(static_cast<const FullWriteNode*>(s.get())->body, act); return;  // a mark only
    case StmtKind::MachineOp: exec_machine_op(static_cast<const MachineOpNode*>(s.get()), act); return;
    case StmtKind::Print:
    case StmtKind::Assert:
    case StmtKind::Copy:
    case StmtKind::Gemm:
    case StmtKind::Fill:
    case StmtKind::Reduce:
    case StmtKind::Cumsum:
    case StmtKind::AtomicAdd: break;
    }
    fatal(s->loc, "the simulator runs thread-level IR; this statement is not thread level (lower it first)");
}

void Executor::exec_store(const StoreNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    // All values first, then all stores: a warp's lanes read before any of them writes.
    struct Pending {
        int32_t t;
        int64_t off;
        Value v;
    };
    std::vector<Pending> pending;
    pending.reserve(act.size());
    begin_statement();
    for (const auto& i : op->indices) prepare(i, act);
    prepare(op->value, act);
    for (int32_t t : act) {
        int64_t off = offset_of(s, op->indices, loc, t, true);
        Value v = eval(op->value, t);
        if (off >= 0) pending.push_back({t, off, scalar::convert(v, op->value->type, s.dtype)});
    }
    for (auto& p : pending) {
        int t = p.t;
        int64_t off = p.off;
        if (s.scope == Scope::Global && !s.writable) {
            issue(IssueKind::InputWrite, loc, t,
                  [&] { return "store into the input tensor '" + s.name() + "'"; });
            continue;
        }
        record(op, loc, s, true, t, off);
        int64_t slot = s.scope == Scope::Register ? t * s.size + off : off;
        if (s.scope == Scope::Shared) shared_write(s, off, t, loc, op);
        if (!s.wgmma_pending.empty()) check_wgmma_register(s, slot, off, t, loc, true);
        s.set(slot, p.v);
        if (!s.init.empty()) s.init[static_cast<size_t>(slot)] = 1;
        if (s.written) (*s.written)[static_cast<size_t>(off)] = 1;
    }
    flush();
}

// Atomics: every active thread's operands first (as for a store), then the read-modify-
// writes one after another in thread order, each on the value the previous one left: the
// hardware serialises atomics to one address in some order, and thread order is one of
// them. Global memory only, where the simulator keeps no race shadow (it checks races in
// shared memory only), so atomics need no exemption there; shared-memory atomics, whose
// race rules differ (atomics do not race with each other, but do with plain accesses),
// are refused until the lowering emits them.
void Executor::exec_atomic_rmw(const AtomicRmwNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    if (s.scope != Scope::Global)
        fatal(loc, std::string("atomics on ") + kind_word(s.scope) + " memory ('" + s.name() +
                       "') are not simulated (global tensors only)");
    DataType dt = s.dtype;
    if (!dt.is_float() && !dt.is_integer()) fatal(loc, "atomic on '" + s.name() + "' of " + dt.str());
    struct Pending {
        int32_t t;
        int64_t off;
        Value v;
    };
    std::vector<Pending> pending;
    pending.reserve(act.size());
    for (int32_t t : act) {
        int64_t off = offset_of(s, op->indices, loc, t, true);
        Value v = eval(op->value, t);
        if (off >= 0) pending.push_back({t, off, scalar::convert(v, op->value->type, dt)});
    }
    for (auto& p : pending) {
        if (!s.writable) {
            issue(IssueKind::InputWrite, loc, p.t,
                  [&] { return "atomic add into the input tensor '" + s.name() + "'"; });
            continue;
        }
        record(op, loc, s, true, p.t, p.off);
        Value old = s.get(p.off);
        switch (op->op) {
        case AtomicOp::Add:
            // One rounding of the exact sum to the element type, as the hardware's
            // atomic float add (f32: the double sum of two floats rounds to the same
            // float as the exact one) and wrapping integer add.
            if (dt.is_float())
                s.set(p.off, Value::of_float(scalar::round_to_float_type(old.f + p.v.f, dt)));
            else
                s.set(p.off, Value::of_int(scalar::wrap(
                                 static_cast<uint64_t>(old.i) + static_cast<uint64_t>(p.v.i), dt)));
            break;
        }
        if (s.written) (*s.written)[static_cast<size_t>(p.off)] = 1;
    }
    flush();
}

void Executor::exec_allocate(const AllocateNode* op, const Active& act) {
    const Buffer& b = op->buffer;
    if (b->scope != Scope::Shared && b->scope != Scope::Register)
        fatal(op->loc, std::string("the simulator runs thread-level IR; ") + scope_name(b->scope) +
                           " buffer '" + b->name + "' is not thread level (lower it first)");
    Storage st;
    st.buffer = b.get();
    st.scope = b->scope;
    st.dtype = b->dtype;
    st.elem_bytes = std::max(1, (b->dtype.bits + 7) / 8);
    if (b->rank() > kMaxRank) fatal(op->loc, "buffer '" + b->name + "' has more than 16 dimensions");
    int64_t size = 1;
    for (const auto& e : b->shape) {
        int64_t n = eval_int(e, act.front());
        if (n <= 0) fatal(op->loc, "buffer '" + b->name + "' has a dimension of size " + std::to_string(n));
        st.shape.push_back(n);
        if (size > (int64_t(1) << 28) / n)
            fatal(op->loc, "buffer '" + b->name + "' is too large to simulate");
        size *= n;
    }
    st.size = size;
    st.strides.assign(st.shape.size(), 1);
    for (size_t d = st.shape.size(); d-- > 1;) st.strides[d - 1] = st.strides[d] * st.shape[d];
    int64_t saved_top = shared_top_;
    if (b->scope == Scope::Shared) {
        if (b->dtype.lanes != 1)
            fatal(op->loc, "shared buffer '" + b->name + "' of vector type " + b->dtype.str());
        // Planned buffers sit where the shared plan put them, sharing bytes where it says
        // so; unplanned ones (IR written by hand) get the next 128-byte slot.
        st.base = b->shared_offset >= 0 ? b->shared_offset : (shared_top_ + 127) / 128 * 128;
        shared_top_ = std::max(shared_top_, st.base + size * st.elem_bytes);
        arena_.ensure(st.base + size * st.elem_bytes);
        st.arena = &arena_;
        st.instance = static_cast<int32_t>(instances_.size());
        if (peer_role_ >= 0) {
            // One warpgroup role of several: the same execution in another role made the
            // block's instance already (the warpgroups run one program).
            int k = peer_allocs_seen_[{peer_role_, op}]++;
            auto [it, made] = peer_instances_.try_emplace({op, k}, st.instance);
            st.instance = it->second;
            if (made) instances_.push_back({b.get(), st.base, st.elem_bytes});
        } else {
            instances_.push_back({b.get(), st.base, st.elem_bytes});
        }
    } else {
        st.allocate_own(size * threads_);
        st.init.assign(static_cast<size_t>(size * threads_), 0);
    }
    buffers_.emplace_back(b.get(), &st);
    exec(op->body, act);
    buffers_.pop_back();
    shared_top_ = saved_top;
    // Registers of a wgmma never waited for leave with their buffer.
    if (!st.wgmma_pending.empty())
        for (auto& g : wgmma_groups_) {
            auto gone = [&](const std::pair<Storage*, int64_t>& r) { return r.first == &st; };
            std::erase_if(g.open_regs, gone);
            for (auto& c : g.committed_regs) std::erase_if(c, gone);
        }
}

void Executor::barrier(const BarrierNode* op, const Active& act) {
    if (static_cast<int>(act.size()) != threads_) {
        // The first thread that is not here (act is in increasing order).
        int32_t missing = 0;
        for (int32_t t : act) {
            if (t != missing) break;
            ++missing;
        }
        issue(IssueKind::BarrierDivergence, at(op->loc), act.front(), [&] {
            return "barrier reached by " + std::to_string(act.size()) + " of the block's " +
                   std::to_string(threads_) + " threads (thread " + std::to_string(missing) +
                   " does not reach it: a barrier under a thread-dependent condition)";
        });
    }
    ++epoch_;
}

}  // namespace tilec::sim::detail
