// split-warp-roles (thread level, after place-barriers): finishes the warp specialization
// software-pipeline starts (sm_90a, issue 12). That pass leaves, where a GEMM loop was, a
// role split `if (thread.x >= T) { setmaxnreg.dec; producer } else { setmaxnreg.inc;
// consumers }` inside the kernel's body; here the split moves to the top of the kernel
// and the block grows by one producer warpgroup (threads T .. T + 127):
//
//   mbarrier inits (thread 0); block barrier         every thread, before any role
//   if (thread.x >= T) { setmaxnreg.dec;  the path of the body to the producer }
//   else               { setmaxnreg.inc;  the body, with the consumers' part of the split }
//
// The producer's slice keeps only what leads to its part (the lets, allocations, loops
// and conditions around it), so the producer warps run nothing of the kernel's other
// statements, whose layouts are for the T consumer threads. In the consumers' slice every
// block barrier becomes a named barrier of T threads (id 1): the producer warps never
// reach it. The mbarrier inits move before the split (a wait must not run before its
// object is initialised), wrapped in their allocations (after the shared-memory plan an
// allocation names bytes, so it may appear twice). The func's `min_blocks_per_sm` (and
// `max_registers`) attributes record what the register split was sized for
// (software_pipeline.cpp), for the backend's launch bounds.
#include "ir/visitor.h"
#include "lower/thread_lower.h"
#include "support/diagnostics.h"

namespace tilec::lower {

using namespace ir;

namespace {

bool is_split(const Stmt& s) {
    auto* i = s->as<IfNode>();
    return i && is_warp_role_split(*i);
}

// An `if` that only initialises mbarriers.
bool is_init(const Stmt& s) {
    auto* i = s->as<IfNode>();
    if (!i || i->else_case) return false;
    auto is_op = [](const Stmt& t) {
        auto* m = t->as<MachineOpNode>();
        return m && m->op == MachineOp::MbarrierInit;
    };
    if (is_op(i->then_case)) return true;
    auto* seq = i->then_case->as<SeqNode>();
    if (!seq || seq->stmts.empty()) return false;
    for (auto& t : seq->stmts)
        if (!is_op(t)) return false;
    return true;
}

Stmt without_first(const Stmt& s) {
    auto* seq = s->as<SeqNode>();
    return make_seq(std::vector<Stmt>(seq->stmts.begin() + 1, seq->stmts.end()), s->loc);
}

const Stmt* find_split(const Stmt& s, int& count) {
    if (!s) return nullptr;
    if (is_split(s)) {
        ++count;
        return &s;
    }
    const Stmt* found = nullptr;
    auto in = [&](const Stmt& c) {
        if (const Stmt* x = find_split(c, count)) found = x;
    };
    switch (s->kind) {
    case StmtKind::Seq:
        for (auto& c : s->as<SeqNode>()->stmts) in(c);
        break;
    case StmtKind::LetStmt: in(s->as<LetStmtNode>()->body); break;
    case StmtKind::Allocate: in(s->as<AllocateNode>()->body); break;
    case StmtKind::For: in(s->as<ForNode>()->body); break;
    case StmtKind::FullWrite: in(s->as<FullWriteNode>()->body); break;
    case StmtKind::If:
        in(s->as<IfNode>()->then_case);
        in(s->as<IfNode>()->else_case);
        break;
    default: break;
    }
    return found;
}

// The path of `s` to the split, with the split replaced by `producer`; null where the
// split is not inside.
Stmt producer_slice(const Stmt& s, const StmtNode* split, const Stmt& producer) {
    if (!s) return nullptr;
    if (s.get() == split) return producer;
    switch (s->kind) {
    case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (auto& c : s->as<SeqNode>()->stmts)
            if (Stmt x = producer_slice(c, split, producer)) out.push_back(x);
        return out.empty() ? nullptr : make_seq(out, s->loc);
    }
    case StmtKind::LetStmt: {
        auto* l = s->as<LetStmtNode>();
        Stmt b = producer_slice(l->body, split, producer);
        return b ? make_let(l->var, l->value, b, l->loc) : nullptr;
    }
    case StmtKind::Allocate: {
        auto* a = s->as<AllocateNode>();
        Stmt b = producer_slice(a->body, split, producer);
        return b ? make_allocate(a->buffer, b, a->loc) : nullptr;
    }
    case StmtKind::For: {
        auto* f = s->as<ForNode>();
        Stmt b = producer_slice(f->body, split, producer);
        return b ? make_for(f->var, f->min, f->extent, f->for_kind, b, f->loc, f->stages) : nullptr;
    }
    case StmtKind::FullWrite: return producer_slice(s->as<FullWriteNode>()->body, split, producer);
    case StmtKind::If: {
        auto* i = s->as<IfNode>();
        Stmt t = producer_slice(i->then_case, split, producer);
        Stmt e = producer_slice(i->else_case, split, producer);
        if (!t && !e) return nullptr;
        return make_if(i->cond, t ? t : make_seq({}, i->loc), e, i->loc);
    }
    default: return nullptr;
    }
}

// `s` without the allocations around the split (into `allocs`, outermost first): they
// move to the top, around both roles (after the plan they only name bytes).
Stmt strip_allocations(const Stmt& s, const StmtNode* split, std::vector<Buffer>& allocs) {
    int count = 0;
    if (!s || s.get() == split || !find_split(s, count)) return s;
    switch (s->kind) {
    case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (auto& c : s->as<SeqNode>()->stmts) out.push_back(strip_allocations(c, split, allocs));
        return make_seq(out, s->loc);
    }
    case StmtKind::LetStmt: {
        auto* l = s->as<LetStmtNode>();
        return make_let(l->var, l->value, strip_allocations(l->body, split, allocs), l->loc);
    }
    case StmtKind::Allocate: {
        auto* a = s->as<AllocateNode>();
        allocs.push_back(a->buffer);
        return strip_allocations(a->body, split, allocs);
    }
    case StmtKind::For: {
        auto* f = s->as<ForNode>();
        return make_for(f->var, f->min, f->extent, f->for_kind, strip_allocations(f->body, split, allocs), f->loc,
                        f->stages);
    }
    case StmtKind::FullWrite: return strip_allocations(s->as<FullWriteNode>()->body, split, allocs);
    case StmtKind::If: {
        auto* i = s->as<IfNode>();
        return make_if(i->cond, strip_allocations(i->then_case, split, allocs),
                       i->else_case ? strip_allocations(i->else_case, split, allocs) : nullptr, i->loc);
    }
    default: return s;
    }
}

// The consumers' slice: the split's consumer part, block barriers named, inits gone
// (into `inits`).
struct ConsumerSlice : IRMutator {
    const StmtNode* split = nullptr;
    int64_t threads = 0;
    std::vector<Stmt>* inits = nullptr;
    Stmt mutate_if(const IfNode* op, const Stmt& self) override {
        if (self.get() == split) return mutate(without_first(op->else_case));
        if (is_init(self)) {
            inits->push_back(self);
            return make_seq({}, op->loc);
        }
        return IRMutator::mutate_if(op, self);
    }
    Stmt mutate_barrier(const BarrierNode* op, const Stmt&) override {
        return make_machine_op(MachineOp::NamedBarrier, {1, threads}, {}, {}, op->loc);
    }
    // Barriers that ordered the removed inits end up next to each other: one suffices.
    Stmt mutate_seq(const SeqNode* op, const Stmt& self) override {
        Stmt m = IRMutator::mutate_seq(op, self);
        auto* seq = m->as<SeqNode>();
        if (!seq) return m;
        auto is_named = [](const Stmt& s) {
            auto* b = s->as<MachineOpNode>();
            return b && b->op == MachineOp::NamedBarrier;
        };
        auto is_empty = [](const Stmt& s) {
            auto* q = s->as<SeqNode>();
            return q && q->stmts.empty();
        };
        std::vector<Stmt> out;
        for (auto& s : seq->stmts) {
            if (is_empty(s)) continue;
            if (is_named(s) && !out.empty() && is_named(out.back())) continue;
            out.push_back(s);
        }
        return out.size() == seq->stmts.size() ? m : make_seq(out, m->loc);
    }
};

}  // namespace

PrimFunc split_warp_roles(const PrimFunc& f) {
    int count = 0;
    const Stmt* found = find_split(f.body, count);
    if (!found) return f;
    if (count != 1) TILEC_ICE("split-warp-roles: " + std::to_string(count) + " warp-role splits in " + f.name);
    Stmt split = *found;
    auto* role_if = split->as<IfNode>();
    const int64_t T = f.threads;
    SourceLoc loc = split->loc;
    std::vector<Buffer> allocs;
    Stmt body = strip_allocations(f.body, split.get(), allocs);
    // The producer's lets and loops are its own variables (both slices bind them).
    Stmt producer = with_fresh_binders(producer_slice(body, split.get(), without_first(role_if->then_case)));
    std::vector<Stmt> inits;
    ConsumerSlice cs;
    cs.split = split.get();
    cs.threads = T;
    cs.inits = &inits;
    Stmt consumer = cs.mutate(body);
    Stmt prologue = make_seq(inits, loc);
    Expr tid = make_thread_idx_var(0);
    Stmt roles = make_if(ge(tid, make_int(T)),
                         make_seq({role_if->then_case->as<SeqNode>()->stmts[0], producer}, loc),
                         make_seq({role_if->else_case->as<SeqNode>()->stmts[0], consumer}, loc), loc);
    PrimFunc out = f;
    Stmt top = make_seq({prologue, make_barrier(loc), roles}, loc);
    for (size_t k = allocs.size(); k-- > 0;) top = make_allocate(allocs[k], top, loc);
    out.body = top;
    out.threads = T + 128;
    // The register split software-pipeline chose (producer 24: two blocks a SM at 128
    // registers; else one at 168).
    bool two_blocks = role_if->then_case->as<SeqNode>()->stmts[0]->as<MachineOpNode>()->imm.at(1) == 24;
    out.attrs.emplace_back("min_blocks_per_sm", two_blocks ? "2" : "1");
    if (!two_blocks) out.attrs.emplace_back("max_registers", "168");
    return out;
}

}  // namespace tilec::lower
