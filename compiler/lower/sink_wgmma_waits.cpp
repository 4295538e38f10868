// sink-wgmma-waits (thread level, last before the verifier, sm_90a): each gemm's
// lowering waits for its wgmma group at once (`wgmma_wait 0` after its commit). Moved
// down to just before the first statement that needs it, a wait lets the tensor cores
// run beside what comes between: another gemm's group (the wait then counts the groups
// committed after its own, `wgmma.wait_group N`, as the PTX ISA defines it: at most N of
// the newest groups pending, every older one complete) and arithmetic on other registers.
// With overlap-softmax-gemm's rotated attention loop this is FlashAttention-3's
// intra-warpgroup overlap: S = Q K^T and the previous O += P V in flight together, the
// softmax waiting for S only (wait_group 1), the rescale of O for both (wait_group 0).
//
// A wait moves within its statement list, and out of the end of a `let` body that holds
// it (it names registers only, no let variable), past a statement when that statement
// touches none of the registers its group uses (accumulators and A operands, the whole
// register buffers), writes no shared or global memory, holds no wait, no barrier other
// than the ping-pong's issue-order barriers (named barriers 2 and up), no mbarrier or
// async-copy operation (a stage's release must follow the wgmma that read it), and
// commits wgmma groups only on its straight-line path (each counted once).
#include <optional>
#include <unordered_set>
#include <utility>

#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

using BufferSet = std::unordered_set<const BufferNode*>;

const MachineOpNode* machine(const Stmt& s, MachineOp op) {
    auto* m = s ? s->as<MachineOpNode>() : nullptr;
    return m && m->op == op ? m : nullptr;
}

// Every buffer a statement names.
struct Buffers : IRVisitor {
    BufferSet all;
    void visit_buffer_use(const Buffer& b) override { all.insert(b.get()); }
    void visit_load(const LoadNode* op) override {
        all.insert(op->buffer.get());
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        all.insert(op->buffer.get());
        IRVisitor::visit_store(op);
    }
};

// The register buffers the wgmma instructions of `s` use.
BufferSet wgmma_registers(const Stmt& s) {
    struct Collect : IRVisitor {
        BufferSet regs;
        void visit_machine_op(const MachineOpNode* op) override {
            if (op->op != MachineOp::Wgmma) return;
            Buffers b;
            for (auto& e : op->dst) b.visit(e);
            for (auto& e : op->src) b.visit(e);
            for (auto* x : b.all)
                if (x->scope == Scope::Register) regs.insert(x);
        }
    } c;
    c.visit(s);
    return c.regs;
}

// Whether a wait for a group using `regs` may move past `s`, and how many groups `s`
// commits.
struct Passable : IRVisitor {
    const BufferSet& regs;
    bool ok = true;
    int commits = 0;
    int nesting = 0;  // inside a loop or an `if`
    explicit Passable(const BufferSet& r) : regs(r) {}
    void use(const BufferNode* b) {
        if (regs.count(b)) ok = false;
    }
    void visit_buffer_use(const Buffer& b) override { use(b.get()); }
    void visit_load(const LoadNode* op) override {
        use(op->buffer.get());
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        use(op->buffer.get());
        if (op->buffer->scope == Scope::Shared || op->buffer->scope == Scope::Global) ok = false;
        IRVisitor::visit_store(op);
    }
    void visit_atomic_rmw(const AtomicRmwNode*) override { ok = false; }
    void visit_barrier(const BarrierNode*) override { ok = false; }
    void visit_full_write(const FullWriteNode*) override { ok = false; }
    void visit_for(const ForNode* op) override {
        ++nesting;
        IRVisitor::visit_for(op);
        --nesting;
    }
    void visit_if(const IfNode* op) override {
        ++nesting;
        IRVisitor::visit_if(op);
        --nesting;
    }
    void visit_machine_op(const MachineOpNode* op) override {
        switch (op->op) {
            case MachineOp::Wgmma:
            case MachineOp::WgmmaFence:
            case MachineOp::FenceProxyAsync:
                break;
            case MachineOp::WgmmaCommit:
                if (nesting > 0) ok = false;
                ++commits;
                break;
            case MachineOp::NamedBarrier:
            case MachineOp::BarrierArrive:
                if (op->imm.empty() || op->imm[0] < 2) ok = false;
                break;
            default:
                ok = false;
        }
        IRVisitor::visit_machine_op(op);
    }
};

bool names_var(const MachineOpNode& op, const VarNode* v) {
    for (auto& e : op.dst)
        if (uses_var(e, v)) return true;
    for (auto& e : op.src)
        if (uses_var(e, v)) return true;
    return false;
}

// `s` with the wgmma_wait that ends it (`s` itself, the last of a list, the end of a let
// body, nested) taken out: what is left and the wait; nullopt where `s` does not end so,
// or where the wait names a let variable it would leave.
std::optional<std::pair<Stmt, Stmt>> split_trailing_wait(const Stmt& s) {
    if (machine(s, MachineOp::WgmmaWait)) return std::make_pair(make_seq({}, s->loc), s);
    if (auto* seq = s->as<SeqNode>(); seq && !seq->stmts.empty()) {
        auto inner = split_trailing_wait(seq->stmts.back());
        if (!inner) return std::nullopt;
        std::vector<Stmt> front(seq->stmts.begin(), seq->stmts.end() - 1);
        front.push_back(inner->first);
        return std::make_pair(make_seq(front, s->loc), inner->second);
    }
    if (auto* l = s->as<LetStmtNode>()) {
        auto inner = split_trailing_wait(l->body);
        if (!inner || names_var(*inner->second->as<MachineOpNode>(), l->var.get())) return std::nullopt;
        return std::make_pair(make_let(l->var, l->value, inner->first, s->loc), inner->second);
    }
    return std::nullopt;
}

struct Sink : IRMutator {
    std::unordered_set<const StmtNode*> placed;  // waits already moved
    Stmt mutate_seq(const SeqNode* op, const Stmt& self) override {
        std::vector<Stmt> plain, v;
        bool changed = false, moved = false;
        for (auto& s : op->stmts) {
            Stmt m = mutate(s);
            changed |= m != s;
            plain.push_back(m);
            // Lift a wait out of the end of a let body into this list (kept only where
            // a wait of the list moves).
            std::optional<std::pair<Stmt, Stmt>> split;
            if (m->as<LetStmtNode>()) split = split_trailing_wait(m);
            if (split) {
                v.push_back(split->first);
                v.push_back(split->second);
            } else {
                v.push_back(m);
            }
        }
        for (size_t a = 0; a < v.size(); ++a) {
            auto* w = machine(v[a], MachineOp::WgmmaWait);
            if (!w || a == 0 || w->imm.empty() || placed.count(w)) continue;
            // Its group: the statement before it, past waits moved there.
            size_t g = a - 1;
            while (g > 0 && machine(v[g], MachineOp::WgmmaWait)) --g;
            BufferSet regs = wgmma_registers(v[g]);
            if (regs.empty()) continue;
            for (auto& e : w->dst) {
                Buffers b;
                b.visit(e);
                regs.insert(b.all.begin(), b.all.end());
            }
            size_t b = a + 1;
            int commits = 0;
            // A fence.proxy.async of its own belongs to the pipeline's refill that follows
            // (GEMM main loops): the wait stays before it.
            while (b < v.size() && !machine(v[b], MachineOp::FenceProxyAsync)) {
                Passable p(regs);
                p.visit(v[b]);
                if (!p.ok) break;
                commits += p.commits;
                ++b;
            }
            if (b == a + 1) continue;
            Stmt wait = make_machine_op(MachineOp::WgmmaWait, {w->imm[0] + commits}, w->dst, w->src, w->loc);
            v.erase(v.begin() + static_cast<std::ptrdiff_t>(a));
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(b) - 1, wait);
            placed.insert(wait.get());
            moved = true;
            // v[a] is now the statement after the old wait: look at it again.
            --a;
        }
        if (moved) return make_seq(v, self->loc);
        return changed ? make_seq(plain, self->loc) : self;
    }
};

}  // namespace

PrimFunc sink_wgmma_waits(const PrimFunc& f, const target::GpuTarget& target) {
    if (!target.has_wgmma()) return f;
    PrimFunc out = f;
    out.body = Sink().mutate(f.body);
    return out;
}

}  // namespace tilec::lower
