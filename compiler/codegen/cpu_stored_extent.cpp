// Stored extents of gemm accumulators for the CPU backend (entry:
// accumulator_stored_extents): for a block-local accumulator whose only reader is one copy
// into a global tensor, how many of its rows and columns that copy can store. The copy
// drops the elements past the tensor's edge, so at a ragged edge the rows and columns of
// the accumulator past it are never read, and the register-blocked gemm need not compute
// them: the edge blocks of a 2000^3 f32 gemm (128 x 128 tiles) multiplied 48 rows or
// columns of padding in 128, about 4% of all the multiply-adds.
//
// An accumulator `acc` qualifies when every mention of it is one of
// - a fill of all of it (writes only),
// - a gemm with acc, whole, as its c (and not as its a or b): it reads and writes
//   acc[i, j] only to compute acc[i, j], from row i of a and column j of b,
// - an element-wise update `acc[x, y] = f(...)` whose indices are variables, with the
//   loads of acc in f (counted with it) all at the same [x, y]: an epilogue (a bias, an
//   activation) that computes each element from itself alone, so a dead element stays
//   dead (its value, the fill's or what the update made of it, reaches no store),
// - exactly one copy of all of acc into a global region whose dimensions but the last two
//   have extent 1 (acc[i, j] lands at [start0 + i, start1 + j] of the tensor, stored only
//   where that is inside it),
// and the region's last two starts are expressions of the sizes, scalar parameters and
// block indices (let names are replaced by their values; nothing that a loop, a thread or
// a load decides): they are the same wherever in the block function they are evaluated,
// so an element past the edge is not stored by any execution of the copy, and the
// gemm can evaluate the limit where it runs.
#include <unordered_map>

#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"

namespace tilec::codegen {

namespace {

class Finder : public ir::IRVisitor {
public:
    std::unordered_map<const ir::BufferNode*, int> mentions;  // every mention of a buffer
    std::unordered_map<const ir::BufferNode*, int> allowed;   // fills, gemm c's, element-wise updates
    std::unordered_map<const ir::BufferNode*, std::vector<const ir::CopyNode*>> stores;
    ir::VarMap lets;  // every let's value, its own lets replaced

protected:
    void visit_buffer_use(const ir::Buffer& b) override { ++mentions[b.get()]; }
    void visit_let(const ir::LetStmtNode* op) override {
        lets[op->var.get()] = ir::substitute(op->value, lets);
        ir::IRVisitor::visit_let(op);
    }
    void visit_fill(const ir::FillNode* op) override {
        if (ir::is_full_region(op->dst)) ++allowed[op->dst.buffer.get()];
        ir::IRVisitor::visit_fill(op);
    }
    void visit_gemm(const ir::GemmNode* op) override {
        const ir::BufferNode* c = op->c.buffer.get();
        if (ir::is_full_region(op->c) && op->a.buffer.get() != c && op->b.buffer.get() != c) ++allowed[c];
        ir::IRVisitor::visit_gemm(op);
    }
    void visit_store(const ir::StoreNode* op) override {
        const ir::BufferNode* t = op->buffer.get();
        auto same_element = [&](const std::vector<ir::Expr>& idx) {
            if (idx.size() != 2 || op->indices.size() != 2) return false;
            for (size_t d = 0; d < 2; ++d)
                if (idx[d] != op->indices[d] || idx[d]->kind != ir::ExprKind::Var) return false;
            return true;
        };
        if (t->scope != ir::Scope::Global && same_element(op->indices)) {
            ++allowed[t];
            ir::for_each_expr(op->value, [&](const ir::Expr& x) {
                if (auto* l = x->as<ir::LoadNode>(); l && l->buffer.get() == t && same_element(l->indices))
                    ++allowed[t];
            });
        }
        ir::IRVisitor::visit_store(op);
    }
    void visit_copy(const ir::CopyNode* op) override {
        if (op->src.buffer->scope != ir::Scope::Global && op->dst.buffer->scope == ir::Scope::Global)
            stores[op->src.buffer.get()].push_back(op);
        ir::IRVisitor::visit_copy(op);
    }
};

// Whether e is the same value everywhere in the block function: built from constants,
// sizes, scalar parameters and block indices only.
bool block_invariant(const ir::Expr& e) {
    bool ok = true;
    ir::for_each_expr(e, [&](const ir::Expr& x) {
        switch (x->kind) {
        case ir::ExprKind::IntImm:
        case ir::ExprKind::Binary:
        case ir::ExprKind::Unary:
        case ir::ExprKind::Select:
        case ir::ExprKind::Cast: return;
        case ir::ExprKind::Var: {
            auto k = static_cast<const ir::VarNode*>(x.get())->var_kind;
            if (k != ir::VarKind::Size && k != ir::VarKind::Scalar && k != ir::VarKind::BlockIdx) ok = false;
            return;
        }
        default: ok = false; return;
        }
    });
    return ok;
}

}  // namespace

std::unordered_map<const ir::BufferNode*, StoredExtent> accumulator_stored_extents(const ir::Stmt& body) {
    Finder f;
    f.visit(body);
    std::unordered_map<const ir::BufferNode*, StoredExtent> found;
    for (auto& [acc, copies] : f.stores) {
        if (copies.size() != 1 || acc->rank() != 2) continue;
        const ir::CopyNode& c = *copies[0];
        if (!ir::is_full_region(c.src) || f.mentions[acc] != f.allowed[acc] + 1) continue;
        const ir::Region& dst = c.dst;
        const size_t r = dst.buffer->rank();
        if (r < 2 || dst.start.size() != r || dst.extent.size() != r) continue;
        bool fits = true;
        for (size_t d = 0; d < r; ++d) {
            auto e = ir::as_const_int(dst.extent[d]);
            auto want = d + 2 < r ? std::optional<int64_t>(1) : ir::as_const_int(acc->shape[d + 2 - r]);
            if (!e || !want || *e != *want) fits = false;
        }
        if (!fits) continue;
        StoredExtent ext;
        for (int d = 0; d < 2; ++d) {
            const size_t g = r - 2 + d;
            ir::Expr limit = ir::sub(ir::substitute(dst.buffer->shape[g], f.lets), ir::substitute(dst.start[g], f.lets));
            if (!block_invariant(limit)) {
                fits = false;
                break;
            }
            (d == 0 ? ext.rows : ext.cols) = limit;
        }
        if (fits) found[acc] = ext;
    }
    return found;
}

}  // namespace tilec::codegen
