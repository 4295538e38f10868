// IRVisitor and IRMutator defaults: the one place that knows every node's children, so
// passes override only what they change. Also substitution, built on IRMutator.
#include "ir/visitor.h"

#include "support/diagnostics.h"

namespace tilec::ir {

// ---------------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit(const Expr& e) {
    if (!e) return;
    switch (e->kind) {
    case ExprKind::IntImm: return visit_int_imm(e->as<IntImmNode>());
    case ExprKind::FloatImm: return visit_float_imm(e->as<FloatImmNode>());
    case ExprKind::StringImm: return visit_string_imm(e->as<StringImmNode>());
    case ExprKind::Var: return visit_var(e->as<VarNode>());
    case ExprKind::Binary: return visit_binary(e->as<BinaryNode>());
    case ExprKind::Unary: return visit_unary(e->as<UnaryNode>());
    case ExprKind::Select: return visit_select(e->as<SelectNode>());
    case ExprKind::Cast: return visit_cast(e->as<CastNode>());
    case ExprKind::Call: return visit_call(e->as<CallNode>());
    case ExprKind::Load: return visit_load(e->as<LoadNode>());
    }
}

void IRVisitor::visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::Seq: return visit_seq(s->as<SeqNode>());
    case StmtKind::For: return visit_for(s->as<ForNode>());
    case StmtKind::If: return visit_if(s->as<IfNode>());
    case StmtKind::LetStmt: return visit_let(s->as<LetStmtNode>());
    case StmtKind::Allocate: return visit_allocate(s->as<AllocateNode>());
    case StmtKind::Store: return visit_store(s->as<StoreNode>());
    case StmtKind::Evaluate: return visit_evaluate(s->as<EvaluateNode>());
    case StmtKind::Copy: return visit_copy(s->as<CopyNode>());
    case StmtKind::Gemm: return visit_gemm(s->as<GemmNode>());
    case StmtKind::Fill: return visit_fill(s->as<FillNode>());
    case StmtKind::Reduce: return visit_reduce(s->as<ReduceNode>());
    case StmtKind::Cumsum: return visit_cumsum(s->as<CumsumNode>());
    case StmtKind::AtomicAdd: return visit_atomic_add(s->as<AtomicAddNode>());
    case StmtKind::Print: return visit_print(s->as<PrintNode>());
    case StmtKind::Assert: return visit_assert(s->as<AssertNode>());
    case StmtKind::Barrier: return visit_barrier(s->as<BarrierNode>());
    case StmtKind::AtomicRmw: return visit_atomic_rmw(s->as<AtomicRmwNode>());
    case StmtKind::FullWrite: return visit_full_write(s->as<FullWriteNode>());
    case StmtKind::MachineOp: return visit_machine_op(s->as<MachineOpNode>());
    }
}

void IRVisitor::visit_region(const Region& r) {
    visit_buffer_use(r.buffer);
    for (const auto& e : r.start) visit(e);
    for (const auto& e : r.extent) visit(e);
}

void IRVisitor::visit_binary(const BinaryNode* op) {
    visit(op->a);
    visit(op->b);
}
void IRVisitor::visit_unary(const UnaryNode* op) {
    visit(op->a);
}
void IRVisitor::visit_select(const SelectNode* op) {
    visit(op->cond);
    visit(op->t);
    visit(op->f);
}
void IRVisitor::visit_cast(const CastNode* op) {
    visit(op->value);
}
void IRVisitor::visit_call(const CallNode* op) {
    for (const auto& a : op->args) visit(a);
}
void IRVisitor::visit_load(const LoadNode* op) {
    visit_buffer_use(op->buffer);
    for (const auto& i : op->indices) visit(i);
}

void IRVisitor::visit_seq(const SeqNode* op) {
    for (const auto& s : op->stmts) visit(s);
}
void IRVisitor::visit_for(const ForNode* op) {
    visit(op->min);
    visit(op->extent);
    visit(op->body);
}
void IRVisitor::visit_if(const IfNode* op) {
    visit(op->cond);
    visit(op->then_case);
    visit(op->else_case);
}
void IRVisitor::visit_let(const LetStmtNode* op) {
    visit(op->value);
    visit(op->body);
}
void IRVisitor::visit_allocate(const AllocateNode* op) {
    visit(op->body);
}
void IRVisitor::visit_store(const StoreNode* op) {
    visit_buffer_use(op->buffer);
    for (const auto& i : op->indices) visit(i);
    visit(op->value);
}
void IRVisitor::visit_atomic_rmw(const AtomicRmwNode* op) {
    visit_buffer_use(op->buffer);
    for (const auto& i : op->indices) visit(i);
    visit(op->value);
}
void IRVisitor::visit_full_write(const FullWriteNode* op) {
    visit_buffer_use(op->buffer);
    visit(op->body);
}
void IRVisitor::visit_machine_op(const MachineOpNode* op) {
    for (const auto& e : op->dst) visit(e);
    for (const auto& e : op->src) visit(e);
}
void IRVisitor::visit_evaluate(const EvaluateNode* op) {
    visit(op->value);
}
void IRVisitor::visit_copy(const CopyNode* op) {
    visit_region(op->src);
    visit_region(op->dst);
    visit(op->pad);
}
void IRVisitor::visit_gemm(const GemmNode* op) {
    visit_region(op->a);
    visit_region(op->b);
    visit_region(op->c);
}
void IRVisitor::visit_fill(const FillNode* op) {
    visit_region(op->dst);
    visit(op->value);
}
void IRVisitor::visit_reduce(const ReduceNode* op) {
    visit_region(op->src);
    visit_region(op->dst);
}
void IRVisitor::visit_cumsum(const CumsumNode* op) {
    visit_region(op->src);
    visit_region(op->dst);
}
void IRVisitor::visit_atomic_add(const AtomicAddNode* op) {
    visit_region(op->dst);
    visit_region(op->src);
}
void IRVisitor::visit_print(const PrintNode* op) {
    for (const auto& a : op->args) visit(a);
}
void IRVisitor::visit_assert(const AssertNode* op) {
    visit(op->cond);
}

// ---------------------------------------------------------------------------------
// IRMutator

Expr IRMutator::mutate(const Expr& e) {
    if (!e) return e;
    switch (e->kind) {
    case ExprKind::IntImm: return mutate_int_imm(e->as<IntImmNode>(), e);
    case ExprKind::FloatImm: return mutate_float_imm(e->as<FloatImmNode>(), e);
    case ExprKind::StringImm: return mutate_string_imm(e->as<StringImmNode>(), e);
    case ExprKind::Var: return mutate_var(e->as<VarNode>(), e);
    case ExprKind::Binary: return mutate_binary(e->as<BinaryNode>(), e);
    case ExprKind::Unary: return mutate_unary(e->as<UnaryNode>(), e);
    case ExprKind::Select: return mutate_select(e->as<SelectNode>(), e);
    case ExprKind::Cast: return mutate_cast(e->as<CastNode>(), e);
    case ExprKind::Call: return mutate_call(e->as<CallNode>(), e);
    case ExprKind::Load: return mutate_load(e->as<LoadNode>(), e);
    }
    return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
    case StmtKind::Seq: return mutate_seq(s->as<SeqNode>(), s);
    case StmtKind::For: return mutate_for(s->as<ForNode>(), s);
    case StmtKind::If: return mutate_if(s->as<IfNode>(), s);
    case StmtKind::LetStmt: return mutate_let(s->as<LetStmtNode>(), s);
    case StmtKind::Allocate: return mutate_allocate(s->as<AllocateNode>(), s);
    case StmtKind::Store: return mutate_store(s->as<StoreNode>(), s);
    case StmtKind::Evaluate: return mutate_evaluate(s->as<EvaluateNode>(), s);
    case StmtKind::Copy: return mutate_copy(s->as<CopyNode>(), s);
    case StmtKind::Gemm: return mutate_gemm(s->as<GemmNode>(), s);
    case StmtKind::Fill: return mutate_fill(s->as<FillNode>(), s);
    case StmtKind::Reduce: return mutate_reduce(s->as<ReduceNode>(), s);
    case StmtKind::Cumsum: return mutate_cumsum(s->as<CumsumNode>(), s);
    case StmtKind::AtomicAdd: return mutate_atomic_add(s->as<AtomicAddNode>(), s);
    case StmtKind::Print: return mutate_print(s->as<PrintNode>(), s);
    case StmtKind::Assert: return mutate_assert(s->as<AssertNode>(), s);
    case StmtKind::Barrier: return mutate_barrier(s->as<BarrierNode>(), s);
    case StmtKind::AtomicRmw: return mutate_atomic_rmw(s->as<AtomicRmwNode>(), s);
    case StmtKind::FullWrite: return mutate_full_write(s->as<FullWriteNode>(), s);
    case StmtKind::MachineOp: return mutate_machine_op(s->as<MachineOpNode>(), s);
    }
    return s;
}

bool IRMutator::mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out) {
    bool changed = false;
    out->clear();
    out->reserve(in.size());
    for (const auto& e : in) {
        out->push_back(mutate(e));
        changed |= out->back() != e;
    }
    return changed;
}

namespace {
bool same_region(const Region& a, const Region& b) {
    if (a.buffer != b.buffer || a.start.size() != b.start.size() || a.extent.size() != b.extent.size())
        return false;
    for (size_t i = 0; i < a.start.size(); ++i)
        if (a.start[i] != b.start[i]) return false;
    for (size_t i = 0; i < a.extent.size(); ++i)
        if (a.extent[i] != b.extent[i]) return false;
    return true;
}
}  // namespace

Region IRMutator::mutate_region(const Region& r) {
    Region out;
    out.buffer = mutate_buffer(r.buffer);
    mutate_exprs(r.start, &out.start);
    mutate_exprs(r.extent, &out.extent);
    return out;
}

Expr IRMutator::mutate_binary(const BinaryNode* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a == op->a && b == op->b) return self;
    return make_binary(op->op, std::move(a), std::move(b), op->loc);
}

Expr IRMutator::mutate_unary(const UnaryNode* op, const Expr& self) {
    Expr a = mutate(op->a);
    if (a == op->a) return self;
    return make_unary(op->op, std::move(a), op->loc);
}

Expr IRMutator::mutate_select(const SelectNode* op, const Expr& self) {
    Expr c = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
    if (c == op->cond && t == op->t && f == op->f) return self;
    return make_select(std::move(c), std::move(t), std::move(f), op->loc);
}

Expr IRMutator::mutate_cast(const CastNode* op, const Expr& self) {
    Expr v = mutate(op->value);
    if (v == op->value) return self;
    return make_cast(op->type, std::move(v), op->loc);
}

Expr IRMutator::mutate_call(const CallNode* op, const Expr& self) {
    std::vector<Expr> args;
    if (!mutate_exprs(op->args, &args)) return self;
    return make_call(op->op, std::move(args), op->type, op->loc);
}

Expr IRMutator::mutate_load(const LoadNode* op, const Expr& self) {
    Buffer b = mutate_buffer(op->buffer);
    std::vector<Expr> idx;
    bool changed = mutate_exprs(op->indices, &idx);
    if (!changed && b == op->buffer) return self;
    return make_load(std::move(b), std::move(idx), op->loc);
}

Stmt IRMutator::mutate_seq(const SeqNode* op, const Stmt& self) {
    std::vector<Stmt> stmts;
    stmts.reserve(op->stmts.size());
    bool changed = false;
    for (const auto& s : op->stmts) {
        stmts.push_back(mutate(s));
        changed |= stmts.back() != s;
    }
    if (!changed) return self;
    return make_seq(std::move(stmts), op->loc);
}

Stmt IRMutator::mutate_for(const ForNode* op, const Stmt& self) {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Stmt body = mutate(op->body);
    if (mn == op->min && ext == op->extent && body == op->body) return self;
    return make_for(op->var, std::move(mn), std::move(ext), op->for_kind, std::move(body), op->loc,
                    op->stages);
}

Stmt IRMutator::mutate_if(const IfNode* op, const Stmt& self) {
    Expr c = mutate(op->cond);
    Stmt t = mutate(op->then_case);
    Stmt e = mutate(op->else_case);
    if (c == op->cond && t == op->then_case && e == op->else_case) return self;
    return make_if(std::move(c), std::move(t), std::move(e), op->loc);
}

Stmt IRMutator::mutate_let(const LetStmtNode* op, const Stmt& self) {
    Expr v = mutate(op->value);
    Stmt body = mutate(op->body);
    if (v == op->value && body == op->body) return self;
    return make_let(op->var, std::move(v), std::move(body), op->loc);
}

Stmt IRMutator::mutate_allocate(const AllocateNode* op, const Stmt& self) {
    Buffer b = mutate_buffer(op->buffer);
    Stmt body = mutate(op->body);
    if (b == op->buffer && body == op->body) return self;
    return make_allocate(std::move(b), std::move(body), op->loc);
}

Stmt IRMutator::mutate_store(const StoreNode* op, const Stmt& self) {
    Buffer b = mutate_buffer(op->buffer);
    std::vector<Expr> idx;
    bool changed = mutate_exprs(op->indices, &idx);
    Expr v = mutate(op->value);
    if (!changed && b == op->buffer && v == op->value) return self;
    return make_store(std::move(b), std::move(idx), std::move(v), op->loc);
}

Stmt IRMutator::mutate_atomic_rmw(const AtomicRmwNode* op, const Stmt& self) {
    Buffer b = mutate_buffer(op->buffer);
    std::vector<Expr> idx;
    bool changed = mutate_exprs(op->indices, &idx);
    Expr v = mutate(op->value);
    if (!changed && b == op->buffer && v == op->value) return self;
    return make_atomic_rmw(op->op, std::move(b), std::move(idx), std::move(v), op->loc);
}

Stmt IRMutator::mutate_full_write(const FullWriteNode* op, const Stmt& self) {
    Buffer b = mutate_buffer(op->buffer);
    Stmt body = mutate(op->body);
    if (b == op->buffer && body == op->body) return self;
    return make_full_write(std::move(b), std::move(body), op->loc);
}

Stmt IRMutator::mutate_machine_op(const MachineOpNode* op, const Stmt& self) {
    std::vector<Expr> dst, src;
    bool d = mutate_exprs(op->dst, &dst), r = mutate_exprs(op->src, &src);
    if (!d && !r) return self;
    return make_machine_op(op->op, op->imm, d ? std::move(dst) : op->dst, r ? std::move(src) : op->src, op->loc);
}

Stmt IRMutator::mutate_evaluate(const EvaluateNode* op, const Stmt& self) {
    Expr v = mutate(op->value);
    if (v == op->value) return self;
    return make_evaluate(std::move(v), op->loc);
}

Stmt IRMutator::mutate_copy(const CopyNode* op, const Stmt& self) {
    Region src = mutate_region(op->src), dst = mutate_region(op->dst);
    Expr pad = mutate(op->pad);
    if (same_region(src, op->src) && same_region(dst, op->dst) && pad == op->pad) return self;
    return make_copy(std::move(src), std::move(dst), std::move(pad), op->loc);
}

Stmt IRMutator::mutate_gemm(const GemmNode* op, const Stmt& self) {
    Region a = mutate_region(op->a), b = mutate_region(op->b), c = mutate_region(op->c);
    if (same_region(a, op->a) && same_region(b, op->b) && same_region(c, op->c)) return self;
    return make_gemm(std::move(a), std::move(b), std::move(c), op->trans_a, op->trans_b, op->clear, op->loc);
}

Stmt IRMutator::mutate_fill(const FillNode* op, const Stmt& self) {
    Region dst = mutate_region(op->dst);
    Expr v = mutate(op->value);
    if (same_region(dst, op->dst) && v == op->value) return self;
    return make_fill(std::move(dst), std::move(v), op->loc);
}

Stmt IRMutator::mutate_reduce(const ReduceNode* op, const Stmt& self) {
    Region src = mutate_region(op->src), dst = mutate_region(op->dst);
    if (same_region(src, op->src) && same_region(dst, op->dst)) return self;
    return make_reduce(op->reduce_kind, std::move(src), std::move(dst), op->dim, op->clear, op->loc);
}

Stmt IRMutator::mutate_cumsum(const CumsumNode* op, const Stmt& self) {
    Region src = mutate_region(op->src), dst = mutate_region(op->dst);
    if (same_region(src, op->src) && same_region(dst, op->dst)) return self;
    return make_cumsum(std::move(src), std::move(dst), op->dim, op->reverse, op->loc);
}

Stmt IRMutator::mutate_atomic_add(const AtomicAddNode* op, const Stmt& self) {
    Region dst = mutate_region(op->dst), src = mutate_region(op->src);
    if (same_region(dst, op->dst) && same_region(src, op->src)) return self;
    return make_atomic_add(std::move(dst), std::move(src), op->loc);
}

Stmt IRMutator::mutate_print(const PrintNode* op, const Stmt& self) {
    std::vector<Expr> args;
    if (!mutate_exprs(op->args, &args)) return self;
    return make_print(op->fmt, std::move(args), op->loc);
}

Stmt IRMutator::mutate_assert(const AssertNode* op, const Stmt& self) {
    Expr c = mutate(op->cond);
    if (c == op->cond) return self;
    return make_assert(std::move(c), op->msg, op->loc);
}

// ---------------------------------------------------------------------------------
// Substitution and small queries

namespace {
class Substituter : public IRMutator {
public:
    explicit Substituter(const VarMap& map) : map_(map) {}

protected:
    Expr mutate_var(const VarNode* op, const Expr& self) override {
        auto it = map_.find(op);
        return it == map_.end() ? self : it->second;
    }

private:
    const VarMap& map_;
};

class ExprWalker : public IRVisitor {
public:
    explicit ExprWalker(const std::function<void(const Expr&)>& f) : f_(f) {}
    void visit(const Expr& e) override {
        if (!e) return;
        f_(e);
        IRVisitor::visit(e);
    }
    using IRVisitor::visit;

private:
    const std::function<void(const Expr&)>& f_;
};
}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
    if (map.empty()) return e;
    Substituter s(map);
    return s.mutate(e);
}

Stmt substitute(const Stmt& st, const VarMap& map) {
    if (map.empty()) return st;
    Substituter s(map);
    return s.mutate(st);
}

void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& f) {
    ExprWalker w(f);
    w.visit(e);
}

bool uses_var(const Expr& e, const VarNode* v) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
        if (x.get() == v) found = true;
    });
    return found;
}

}  // namespace tilec::ir
