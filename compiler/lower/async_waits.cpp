// insert-async-waits (right after lower-tile-ops, before software pipelining): a
// cp.async's bytes land in shared memory only when a cp.async.wait_group completes its
// group (PTX ISA, cp.async.wait_group), so every access of those bytes by the issuing
// thread must come after such a wait. The copy lowering issues and commits the copies
// and leaves the waits to this pass, which puts `wait_group 0` just before the first
// statement that touches a buffer still in flight, as late as possible so the copies
// overlap the work between. (Before the shared-memory plan, buffers do not share bytes:
// a buffer is its own range.) Barrier placement then orders the landed bytes for the
// other threads (the wait comes before the access, so before its barrier). Software
// pipelining replaces the waits of the loops it pipelines with its own.
//
// Control flow: the in-flight set flows through sequences, joins over both branches of
// an `if`, and around a loop's back edge (its body is walked with what its end leaves
// in flight). A wait_group N > 0 (a software pipeline's own) completes an unknown part
// of the groups: nothing is taken off the set.
#include <algorithm>

#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

// Each buffer once: a loop adds what one iteration leaves to what it entered with, so
// with repeats the list doubled per loop level and per cp.async, and was copied at every
// statement (13 s for a row kernel of three nested loops).
struct InFlight {
    std::vector<const BufferNode*> buffers;
    bool overlaps(const BufferNode* b) const { return std::find(buffers.begin(), buffers.end(), b) != buffers.end(); }
    void push(const BufferNode* b) {
        if (!overlaps(b)) buffers.push_back(b);
    }
    void add(const InFlight& o) {
        for (auto* b : o.buffers) push(b);
    }
    bool empty() const { return buffers.empty(); }
    void clear() { buffers.clear(); }
};

class AsyncWaits {
public:
    Stmt run(const Stmt& body) {
        InFlight p;
        return walk(body, p, true);
    }

private:
    static Stmt wait0(SourceLoc loc) { return make_machine_op(MachineOp::CpAsyncWait, {0}, {}, {}, loc); }

    // Whether anything in `s` (but a cp.async's destination) touches bytes in flight.
    static bool touches(const Stmt& s, const InFlight& p) {
        if (p.empty()) return false;
        struct V : IRVisitor {
            const InFlight* p;
            bool found = false;
            void visit_load(const LoadNode* op) override {
                if (p->overlaps(op->buffer.get())) found = true;
                IRVisitor::visit_load(op);
            }
            void visit_store(const StoreNode* op) override {
                if (p->overlaps(op->buffer.get())) found = true;
                IRVisitor::visit_store(op);
            }
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op == MachineOp::CpAsync) {
                    for (auto& i : op->dst.at(0)->as<LoadNode>()->indices) visit(i);
                    for (auto& e : op->src) visit(e);
                    return;
                }
                IRVisitor::visit_machine_op(op);
            }
        } v;
        v.p = &p;
        v.visit(s);
        return v.found;
    }

    Stmt walk(const Stmt& s, InFlight& p, bool insert) {
        if (!s) return s;
        // A statement that touches bytes in flight waits before it as a whole (a compound
        // one too: the wait then sits at the level where barrier placement puts the
        // barrier before the access, which orders the landed bytes for the other threads).
        if (s->kind != StmtKind::Seq && touches(s, p)) {
            p.clear();
            Stmt inner = walk(s, p, insert);
            return insert ? make_seq({wait0(s->loc), inner}, s->loc) : inner;
        }
        switch (s->kind) {
        case StmtKind::Seq: {
            std::vector<Stmt> out;
            for (auto& c : s->as<SeqNode>()->stmts) out.push_back(walk(c, p, insert));
            return insert ? make_seq(out, s->loc) : s;
        }
        case StmtKind::For: {
            auto* f = s->as<ForNode>();
            InFlight entry = p, end = p;
            walk(f->body, end, false);  // what one iteration leaves in flight
            InFlight loop = entry;
            loop.add(end);
            Stmt body = walk(f->body, loop, insert);
            // After the loop: what its last iteration leaves, or also the entry's when it
            // may run no iteration.
            auto ext = as_const_int(f->extent);
            if (!ext || *ext <= 0) loop.add(entry);
            p = loop;
            return insert ? make_for(f->var, f->min, f->extent, f->for_kind, body, s->loc, f->stages) : s;
        }
        case StmtKind::If: {
            auto* i = s->as<IfNode>();
            InFlight other = p;
            Stmt t = walk(i->then_case, p, insert);
            Stmt e = i->else_case ? walk(i->else_case, other, insert) : nullptr;
            p.add(other);
            return insert ? make_if(i->cond, t, e, s->loc) : s;
        }
        case StmtKind::LetStmt: {
            auto* l = s->as<LetStmtNode>();
            Stmt body = walk(l->body, p, insert);
            return insert ? make_let(l->var, l->value, body, s->loc) : s;
        }
        case StmtKind::Allocate: {
            auto* a = s->as<AllocateNode>();
            Stmt body = walk(a->body, p, insert);
            return insert ? make_allocate(a->buffer, body, s->loc) : s;
        }
        case StmtKind::FullWrite: {
            auto* fw = s->as<FullWriteNode>();
            Stmt body = walk(fw->body, p, insert);
            return insert ? make_full_write(fw->buffer, body, s->loc) : s;
        }
        case StmtKind::MachineOp: {
            auto* m = s->as<MachineOpNode>();
            if (m->op == MachineOp::CpAsync) p.push(m->dst.at(0)->as<LoadNode>()->buffer.get());
            if (m->op == MachineOp::CpAsyncWait && m->imm.at(0) == 0) p.clear();
            return s;
        }
        case StmtKind::Store:
        case StmtKind::AtomicRmw:
        case StmtKind::Evaluate:
        case StmtKind::Barrier: return s;
        default: TILEC_ICE("insert-async-waits: a tile-level statement in thread-level IR");
        }
    }
};

}  // namespace

Stmt insert_async_waits(const Stmt& body) { return AsyncWaits().run(body); }

}  // namespace tilec::lower
