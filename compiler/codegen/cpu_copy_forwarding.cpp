// Copy forwarding for the CPU backend (entry: forwardable_copies): the copies of a global
// region into a tile that only gemms read, which the CPU code need not make. A GEMM's
// k loop copies an A and a B tile from the inputs and multiplies them; on the CPU the
// register-blocked gemm can read the same elements from the input itself, with the
// input's row stride, so the copy (each k-step's 32 KiB loaded and stored in the f32
// gemm) is left out wherever the region lies inside the tensor. Measured with the f32
// gemm at 2048^3, 1 thread: 0.88-0.92x of OpenBLAS with the copies, 0.96-0.98x without
// them at BK = 64 (medians; docs/architecture.md, "GEMM, fourth round").
//
// A copy `copy(G[...] -> t)` is forwardable when what the gemm reads through the source is
// what it would have read from the tile:
// - t is a 2-d block-local tile of f32 or f64 (stored as the CPU code computes with it,
//   so the gemm reads G's elements as they are) or of f16 or bf16 (which the gemm converts
//   into its packed f32 arrays anyway: from G, one pass over the elements instead of the
//   copy's and the packing's), the copy writes all of it, from a region
//   of G of the same element type whose dimensions but the last two have extent 1 (the
//   tile's rows are G's rows; the lowering also checks at run time that G's last
//   dimension is contiguous);
// - nothing writes G in the function (every mention of G is a copy's source), so the
//   elements cannot change between the copy and the gemm;
// - every other mention of t is a gemm's `a` or `b` operand, whole and not transposed,
//   in the same statement list as the copy and after it (lower_seq lowers a list with
//   its nested lists flattened, and so does this), so the gemms run only after the copy
//   in the same pass through the list and the copy is t's only writer.
// Copies at the ragged edges still copy (with their padding), and so do copies into a
// gemm's b whose source rows are a multiple of 512 bytes apart (they would share the L1's
// sets: lower_forwarded_copy); the gemm then reads the tile: the lowering selects between
// the two at run time.
#include <unordered_map>
#include <unordered_set>

#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"

namespace tilec::codegen {

namespace {

// Every mention of each buffer, and those of each global tensor as a copy's source.
class CountMentions : public ir::IRVisitor {
public:
    std::unordered_map<const ir::BufferNode*, int> all, as_source;

protected:
    void visit_buffer_use(const ir::Buffer& b) override { ++all[b.get()]; }
    void visit_copy(const ir::CopyNode* op) override {
        ++as_source[op->src.buffer.get()];
        ir::IRVisitor::visit_copy(op);
    }
};

bool forwardable_shape(const ir::CopyNode& c) {
    const ir::Buffer& t = c.dst.buffer;
    const ir::Buffer& g = c.src.buffer;
    if (t->scope == ir::Scope::Global || g->scope != ir::Scope::Global) return false;
    if (t->rank() != 2 || g->rank() < 2 || t->dtype != g->dtype) return false;
    const ir::DataType dt = t->dtype;
    if (dt != ir::DataType::f32() && dt != ir::DataType::f64() && dt != ir::DataType::f16() &&
        dt != ir::DataType::bf16())
        return false;
    if (!ir::is_full_region(c.dst)) return false;
    const size_t r = g->rank();
    for (size_t d = 0; d < r; ++d) {
        auto e = ir::as_const_int(c.src.extent[d]);
        if (!e) return false;
        if (d + 2 < r && *e != 1) return false;
        if (d + 2 >= r) {
            auto s = ir::as_const_int(t->shape[d + 2 - r]);
            if (!s || *s != *e) return false;
        }
    }
    return true;
}

// A gemm operand that reads all of a tile as it is stored.
bool whole_operand(const ir::Region& r, bool trans) {
    return !trans && ir::is_full_region(r);
}

class Finder {
public:
    std::unordered_map<const ir::BufferNode*, int> mentions;  // every mention of a buffer
    std::unordered_map<const ir::BufferNode*, int> sources;   // as a copy's source
    std::unordered_map<const ir::CopyNode*, ForwardableCopy> found;

    void walk(const ir::Stmt& s) {
        if (!s) return;
        if (s->kind != ir::StmtKind::Seq) {
            walk_children(s.get());
            return;
        }
        std::vector<const ir::StmtNode*> flat;
        flatten(s, flat);
        list(flat);
        for (auto* x : flat) walk_children(x);
    }

private:
    static void flatten(const ir::Stmt& s, std::vector<const ir::StmtNode*>& out) {
        if (auto* q = s->as<ir::SeqNode>())
            for (auto& x : q->stmts) flatten(x, out);
        else
            out.push_back(s.get());
    }

    void walk_children(const ir::StmtNode* s) {
        switch (s->kind) {
        case ir::StmtKind::For: walk(static_cast<const ir::ForNode*>(s)->body); return;
        case ir::StmtKind::If: {
            auto* n = static_cast<const ir::IfNode*>(s);
            walk(n->then_case);
            walk(n->else_case);
            return;
        }
        case ir::StmtKind::LetStmt: walk(static_cast<const ir::LetStmtNode*>(s)->body); return;
        case ir::StmtKind::Allocate: walk(static_cast<const ir::AllocateNode*>(s)->body); return;
        default: return;  // a list's nested lists are flattened into it
        }
    }

    // The copies of one statement list whose tile only the list's later gemms read.
    void list(const std::vector<const ir::StmtNode*>& stmts) {
        for (size_t i = 0; i < stmts.size(); ++i) {
            if (stmts[i]->kind != ir::StmtKind::Copy) continue;
            auto* c = static_cast<const ir::CopyNode*>(stmts[i]);
            if (!forwardable_shape(*c)) continue;
            const ir::BufferNode* t = c->dst.buffer.get();
            const ir::BufferNode* g = c->src.buffer.get();
            if (mentions[g] != sources[g]) continue;  // something writes g
            int reads = 0;
            ForwardableCopy use;
            for (size_t j = i + 1; j < stmts.size(); ++j) {
                if (stmts[j]->kind != ir::StmtKind::Gemm) continue;
                auto* m = static_cast<const ir::GemmNode*>(stmts[j]);
                if (m->a.buffer.get() == t && whole_operand(m->a, m->trans_a)) ++reads;
                if (m->b.buffer.get() == t && whole_operand(m->b, m->trans_b)) {
                    ++reads;
                    use.read_as_b = true;
                }
            }
            // The copy's own mention and those reads are all of t's.
            if (reads > 0 && mentions[t] == 1 + reads) found[c] = use;
        }
    }
};

}  // namespace

std::unordered_map<const ir::CopyNode*, ForwardableCopy> forwardable_copies(const ir::Stmt& body) {
    CountMentions counts;
    counts.visit(body);
    Finder f;
    f.mentions = std::move(counts.all);
    f.sources = std::move(counts.as_source);
    f.walk(body);
    return std::move(f.found);
}

}  // namespace tilec::codegen
