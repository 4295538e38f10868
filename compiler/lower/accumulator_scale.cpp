// hoist-accumulator-scale: gfx942's fp8 gemm lowering (ops/gemm_mfma.cpp) runs its
// accumulator at a quarter scale between `acc *= 0.25` and `acc *= 4`; in a K loop whose
// only other uses of acc are the MFMAs, the pair moves out of the loop, so that the
// multiplies (and their AGPR <-> VGPR moves) run once per kernel, not once per k-tile.
#include "lower/thread_lower.h"

#include "ir/visitor.h"
#include "ops/gemm_mfma.h"  // kFp8ScaleVar

namespace tilec::lower {

using namespace ir;

namespace {

// `for r in unroll(0, n) { R[r] = R[r] * f }` with R a register buffer, as the fp8 gemm
// lowering makes it (its loop variable named kFp8ScaleVar, so that a user's own scaling
// is never taken for it): R and f, or null.
struct Scale {
    const BufferNode* buffer = nullptr;
    double factor = 0;
};
Scale as_scale(const Stmt& s) {
    auto* loop = s->as<ForNode>();
    if (!loop || loop->for_kind != ForKind::Unroll || loop->var->name != ops::kFp8ScaleVar) return {};
    auto* st = loop->body->as<StoreNode>();
    if (!st || st->buffer->scope != Scope::Register || st->indices.size() != 1) return {};
    auto* mul = st->value->as<BinaryNode>();
    if (!mul || mul->op != BinaryOp::Mul) return {};
    auto* ld = mul->a->as<LoadNode>();
    auto* f = mul->b->as<FloatImmNode>();
    if (!ld || !f || ld->buffer != st->buffer) return {};
    auto* i = st->indices[0]->as<VarNode>();
    auto* j = ld->indices.size() == 1 ? ld->indices[0]->as<VarNode>() : nullptr;
    if (!i || i != j || i != loop->var.get()) return {};
    return {st->buffer.get(), f->value};
}

// Whether `s` reads or writes `buffer` other than as an MFMA's accumulator.
class Touches : public IRVisitor {
public:
    explicit Touches(const BufferNode* b) : buffer_(b) {}
    bool found = false;

protected:
    void visit_load(const LoadNode* op) override {
        if (op->buffer.get() == buffer_) found = true;
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        if (op->buffer.get() == buffer_) found = true;
        IRVisitor::visit_store(op);
    }
    void visit_machine_op(const MachineOpNode* op) override {
        if (op->op != MachineOp::Mfma) IRVisitor::visit_machine_op(op);
    }

private:
    const BufferNode* buffer_;
};

void flatten(const Stmt& s, std::vector<Stmt>& out) {
    if (auto* seq = s->as<SeqNode>()) {
        for (const Stmt& x : seq->stmts) flatten(x, out);
        return;
    }
    out.push_back(s);
}

class Hoist : public IRMutator {
public:
    Stmt mutate_for(const ForNode* op, const Stmt& self) override {
        Stmt loop = IRMutator::mutate_for(op, self);  // inner loops first
        auto* f = loop->as<ForNode>();
        if (f->for_kind != ForKind::Serial && f->for_kind != ForKind::Pipelined) return loop;
        std::vector<Stmt> body;
        flatten(f->body, body);
        // One quarter-scale pair on one buffer, down before up, nothing else touching it.
        int down = -1, up = -1;
        const BufferNode* acc = nullptr;
        for (size_t i = 0; i < body.size(); ++i) {
            Scale s = as_scale(body[i]);
            if (s.buffer && s.factor == 0.25) {
                if (down >= 0) return loop;
                down = static_cast<int>(i), acc = s.buffer;
            } else if (s.buffer && s.factor == 4.0 && s.buffer == acc && up < 0) {
                up = static_cast<int>(i);
            }
        }
        if (down < 0 || up < 0) return loop;
        std::vector<Stmt> rest;
        for (size_t i = 0; i < body.size(); ++i) {
            if (static_cast<int>(i) == down || static_cast<int>(i) == up) continue;
            Touches t(acc);
            t.visit(body[i]);
            if (t.found) return loop;
            rest.push_back(body[i]);
        }
        // (acc * 4) * 0.25 == acc between iterations: exact unless acc * 4 overflowed or
        // acc / 4 was an f32 subnormal, where the hoisted form is the more exact one.
        Stmt inner = make_for(f->var, f->min, f->extent, f->for_kind, make_seq(rest, f->loc), f->loc, f->stages);
        return make_seq({body[static_cast<size_t>(down)], inner, body[static_cast<size_t>(up)]}, f->loc);
    }
};

}  // namespace

Stmt hoist_accumulator_scale(const Stmt& body) { return Hoist().mutate(body); }

}  // namespace tilec::lower
