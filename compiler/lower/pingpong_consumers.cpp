// pingpong-consumers (thread level, right after split-warp-roles): FlashAttention-3's
// inter-warpgroup "ping-pong" schedule (Shah et al. 2024, 3.1) for two consumer
// warpgroups. Where a warp-specialized loop's body issues a wgmma group, waits for it and
// then does other work before more tensor-core work (attention: S = Q K^T, softmax,
// O += P V), the two warpgroups take turns issuing their wgmma groups, so one
// warpgroup's softmax runs while the other's GEMMs have the tensor cores. Every wgmma
// group the body issues on its straight-line path (not under an `if` or an inner loop:
// each runs exactly once an iteration) is bracketed; on sm_90a attention both S = Q K^T
// and O += P V (the register form of wgmma, A = P in registers) are. Warpgroup w
// (threads 128 w ..) owns named barrier 2 + w (ids 0 and 1 are the block's and the
// consumers' barriers):
//
//   if (w == 1) barrier.arrive 2, 256          before the loop: warpgroup 0 goes first
//   for j ... {
//     ...
//     barrier.sync 2 + w, 256                  wait for the other warpgroup's issue
//     wgmma_fence; wgmma ...; wgmma_commit     a group, issued
//     barrier.arrive 2 + (1 - w), 256          the other warpgroup may issue its own
//     wgmma_wait 0; ...                        (the same around each of the g groups)
//   }
//   if (w == 0) barrier.sync 2, 256            after the loop: takes warpgroup 1's last arrive
//
// With g bracketed groups an iteration, barrier 3 sees g n syncs and g n arrives a
// block, barrier 2 g n + 1 of each (the one before and the one after the loop balance
// it, for any trip count n, 0 included), so no phase is left with arrivals at the
// block's end. The issues alternate: warpgroup 1's k-th group waits for warpgroup 0's
// k-th, and warpgroup 0's (k+1)-th for warpgroup 1's k-th, so one warpgroup's arrive
// never runs a phase ahead of the other's sync. The barriers order issue only, no
// memory. `@pingpong(false)` keeps the warpgroups unordered.
#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

constexpr int64_t kFirstId = 2;     // warpgroup w's barrier: kFirstId + w
constexpr int64_t kThreads = 256;   // both consumer warpgroups count toward each phase

const MachineOpNode* machine(const Stmt& s, MachineOp op) {
    auto* m = s ? s->as<MachineOpNode>() : nullptr;
    return m && m->op == op ? m : nullptr;
}

// The machine ops of `s` in the order they run (printed order).
std::vector<const MachineOpNode*> machine_ops(const Stmt& s) {
    struct Collect : IRVisitor {
        std::vector<const MachineOpNode*> ops;
        void visit_machine_op(const MachineOpNode* op) override {
            ops.push_back(op);
            IRVisitor::visit_machine_op(op);
        }
    } c;
    c.visit(s);
    return c.ops;
}

// A body the schedule applies to: it waits on an mbarrier (a warp-specialized consumer
// loop), and after its first wgmma group's wait_group 0 comes more tensor-core work
// (wgmma or mma.sync) with other statements between (what overlaps the other's GEMM).
// Not where the warpgroups meet at a barrier inside the body (they exchange rows
// through shared memory, MLA decode): there one cannot run ahead of the other.
bool attention_like(const Stmt& body) {
    auto ops = machine_ops(body);
    for (auto* op : ops)
        if (op->op == MachineOp::NamedBarrier) return false;
    bool waits = false;
    size_t k = 0;
    for (; k < ops.size() && ops[k]->op != MachineOp::WgmmaCommit; ++k) waits |= ops[k]->op == MachineOp::MbarrierWait;
    if (!waits || k == ops.size()) return false;
    if (++k == ops.size() || ops[k]->op != MachineOp::WgmmaWait || ops[k]->imm.at(0) != 0) return false;
    for (++k; k < ops.size(); ++k)
        if (ops[k]->op == MachineOp::Wgmma || ops[k]->op == MachineOp::Mma) return true;
    return false;
}

Expr first_warpgroup() { return lt(make_thread_idx_var(0), make_int(128)); }

Stmt barrier_op(MachineOp op, int64_t id, SourceLoc loc) { return make_machine_op(op, {id, kThreads}, {}, {}, loc); }

// `sync_own`: barrier.sync on the executing warpgroup's barrier; else barrier.arrive on
// the other's.
Stmt per_warpgroup(bool sync_own, SourceLoc loc) {
    MachineOp op = sync_own ? MachineOp::NamedBarrier : MachineOp::BarrierArrive;
    return make_if(first_warpgroup(), barrier_op(op, sync_own ? kFirstId : kFirstId + 1, loc),
                   barrier_op(op, sync_own ? kFirstId + 1 : kFirstId, loc), loc);
}

// The loop body with each wgmma group's issue bracketed: a sync before its wgmma_fence,
// an arrive after its wgmma_commit (one Seq holds both: the gemm's lowering). Only on
// the body's straight-line path: not into an `if` or an inner loop, where a group could
// run other than once an iteration (the balance above counts g a iteration).
struct Bracket : IRMutator {
    int groups = 0;
    Stmt mutate_for(const ForNode*, const Stmt& self) override { return self; }
    Stmt mutate_if(const IfNode*, const Stmt& self) override { return self; }
    Stmt mutate_seq(const SeqNode* op, const Stmt& self) override {
        const auto& v = op->stmts;
        std::vector<Stmt> out;
        bool changed = false;
        for (size_t a = 0; a < v.size(); ++a) {
            if (machine(v[a], MachineOp::WgmmaFence)) {
                size_t b = a + 1;
                while (b < v.size() && !machine(v[b], MachineOp::WgmmaCommit)) ++b;
                if (b < v.size()) {
                    out.push_back(per_warpgroup(true, v[a]->loc));
                    out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(a),
                               v.begin() + static_cast<std::ptrdiff_t>(b) + 1);
                    out.push_back(per_warpgroup(false, v[b]->loc));
                    ++groups;
                    changed = true;
                    a = b;
                    continue;
                }
            }
            Stmt m = mutate(v[a]);
            changed |= m != v[a];
            out.push_back(m);
        }
        return changed ? make_seq(out, self->loc) : self;
    }
};

// In the consumers' branch: the first attention-like loop, bracketed and balanced.
struct Consumers : IRMutator {
    bool done = false;
    Stmt mutate_for(const ForNode* op, const Stmt& self) override {
        if (done) return self;
        if (!attention_like(op->body)) return IRMutator::mutate_for(op, self);
        Bracket br;
        Stmt body = br.mutate(op->body);
        if (br.groups == 0) return self;
        done = true;
        SourceLoc loc = self->loc;
        Stmt loop = make_for(op->var, op->min, op->extent, op->for_kind, body, loc, op->stages);
        Stmt before = make_if(first_warpgroup(), make_seq({}, loc), barrier_op(MachineOp::BarrierArrive, kFirstId, loc), loc);
        Stmt after = make_if(first_warpgroup(), barrier_op(MachineOp::NamedBarrier, kFirstId, loc), nullptr, loc);
        return make_seq({before, loop, after}, loc);
    }
};

struct Roles : IRMutator {
    Stmt mutate_if(const IfNode* op, const Stmt& self) override {
        if (!is_warp_role_split(*op)) return IRMutator::mutate_if(op, self);
        Consumers c;
        Stmt consumers = c.mutate(op->else_case);
        return c.done ? make_if(op->cond, op->then_case, consumers, op->loc) : self;
    }
};

}  // namespace

PrimFunc pingpong_consumers(const PrimFunc& f) {
    for (const auto& [k, v] : f.attrs)
        if (k == "pingpong" && (v == "false" || v == "0")) return f;
    // Two consumer warpgroups (split-warp-roles added the producer's 128 threads; Roles
    // acts on its split only).
    if (f.threads != kThreads + 128) return f;
    PrimFunc out = f;
    out.body = Roles().mutate(f.body);
    return out;
}

}  // namespace tilec::lower
