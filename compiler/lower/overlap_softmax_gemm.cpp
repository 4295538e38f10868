// overlap-softmax-gemm (tile level, first of the GPU passes, sm_90a only):
// FlashAttention-3's intra-warpgroup overlap (Shah et al. 2024, 3.2, Algorithm 2). An
// attention loop computes, per iteration j,
//
//   H1(j): fill k; s = q @ k^T            the first GEMM
//   H2(j): mask, softmax of s, rescale o, p = s
//   T(j):  fill v; o += p @ v             the second GEMM, last in the body
//
// and each step needs the one before it, so the tensor cores idle during the softmax.
// Rotated, iteration j issues its first GEMM and then the previous iteration's second,
// which depend on neither each other nor the softmax between them:
//
//   if n >= 1 { H1(min); H2(min) }                 (k's fill into a tile of its own)
//   for j in pipelined(min + 1, max(n - 1, 0)) {
//     H1(j); T(j - 1); H2(j)                       (v holds V's rows of block j - 1)
//   }
//   if n >= 1 { T(min + n - 1) }                   (v's fill into a tile of its own)
//
// On wgmma, sink-wgmma-waits then lets both GEMMs run while the softmax of s waits only
// for the first (wgmma.wait_group 1) and the rescale of o for the second (wait_group 0).
// The swap of T(j - 1) and H1(j) is the only reordering; it is legal when neither writes
// a buffer the other reads or writes, which is checked (MLA decode's second GEMM reads
// the tile its first fills: left alone). Only the kernel's first pipelined loop under no
// other loop (the one warp specialization takes), whose body holds exactly two GEMMs,
// the second with its A operand in a fragment (wgmma's register form: P) and its B
// operand filled from global memory by the copies right before it. The peeled fills get
// their own shared tiles: software-pipeline gives the loop's filled tiles a stage
// dimension, and the shared-memory plan lets the peeled tiles share bytes with buffers
// not live beside them.
//
// The rotation keeps P live across the first GEMM (besides S and O): where that did not
// fit, ptxas spilled (attn_fwd_d64's 180 fragment registers a thread: 1.5 KiB; the two
// consumer warpgroups of attn_fwd_wg2, whose ping-pong already overlaps one warpgroup's
// softmax with the other's GEMMs: 4 bytes). So only one consumer warpgroup (128 threads)
// whose fragments take at most kFragmentRegisters 32-bit registers a thread
// (attn_fwd at D = 128: 117) is rotated.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

using BufferSet = std::unordered_set<const BufferNode*>;

constexpr int64_t kFragmentRegisters = 128;

// The 32-bit registers a thread needs for the kernel's fragments, spread evenly.
int64_t fragment_registers(const PrimFunc& f) {
    struct Sum : IRVisitor {
        int64_t threads, regs = 0;
        explicit Sum(int64_t t) : threads(t) {}
        void visit_allocate(const AllocateNode* op) override {
            const Buffer& b = op->buffer;
            if (b->scope == Scope::Fragment) {
                int64_t bits = b->dtype.bits;
                for (auto& d : b->shape) bits *= ir::as_const_int(d).value_or(1 << 20);
                regs += (bits + 32 * threads - 1) / (32 * threads);
            }
            IRVisitor::visit_allocate(op);
        }
    } sum(std::max<int64_t>(f.threads, 1));
    sum.visit(f.body);
    return sum.regs;
}

// What a tile statement reads and writes; `ok` false for anything the analysis does not
// model (then nothing moves).
struct Effects : IRVisitor {
    BufferSet reads, writes;
    bool ok = true;
    void region(const Region& r, BufferSet& into) {
        into.insert(r.buffer.get());
        for (auto& e : r.start) visit(e);
        for (auto& e : r.extent) visit(e);
    }
    void region_read(const Region& r) { region(r, reads); }
    void region_write(const Region& r) { region(r, writes); }
    void visit_load(const LoadNode* op) override {
        reads.insert(op->buffer.get());
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        writes.insert(op->buffer.get());
        IRVisitor::visit_store(op);
    }
    void visit_copy(const CopyNode* op) override {
        region_read(op->src);
        region_write(op->dst);
        if (op->pad) visit(op->pad);
    }
    void visit_gemm(const GemmNode* op) override {
        region_read(op->a);
        region_read(op->b);
        region_write(op->c);
        if (!op->clear) reads.insert(op->c.buffer.get());
    }
    void visit_fill(const FillNode* op) override {
        region_write(op->dst);
        visit(op->value);
    }
    void visit_reduce(const ReduceNode* op) override {
        region_read(op->src);
        region_write(op->dst);
        if (!op->clear) reads.insert(op->dst.buffer.get());
    }
    void visit_allocate(const AllocateNode*) override { ok = false; }
    void visit_cumsum(const CumsumNode*) override { ok = false; }
    void visit_atomic_add(const AtomicAddNode*) override { ok = false; }
    void visit_print(const PrintNode*) override { ok = false; }
    void visit_assert(const AssertNode*) override { ok = false; }
    void visit_barrier(const BarrierNode*) override { ok = false; }
    void visit_atomic_rmw(const AtomicRmwNode*) override { ok = false; }
    void visit_full_write(const FullWriteNode*) override { ok = false; }
    void visit_machine_op(const MachineOpNode*) override { ok = false; }
};

Effects effects(const std::vector<Stmt>& stmts) {
    Effects e;
    for (auto& s : stmts) e.visit(s);
    return e;
}

bool disjoint(const BufferSet& a, const BufferSet& b) {
    for (auto* x : a)
        if (b.count(x)) return false;
    return true;
}

// Copies of the buffers in `map`: every region, load and store of one goes to the other.
struct RenameBuffers : IRMutator {
    std::unordered_map<const BufferNode*, Buffer> map;
    Region region(const Region& r) {
        Region out = r;
        if (auto it = map.find(r.buffer.get()); it != map.end()) out.buffer = it->second;
        for (auto& e : out.start) e = mutate(e);
        for (auto& e : out.extent) e = mutate(e);
        return out;
    }
    Expr mutate_load(const LoadNode* op, const Expr& self) override {
        auto it = map.find(op->buffer.get());
        if (it == map.end()) return IRMutator::mutate_load(op, self);
        std::vector<Expr> idx;
        for (auto& i : op->indices) idx.push_back(mutate(i));
        return make_load(it->second, idx, op->loc);
    }
    Stmt mutate_store(const StoreNode* op, const Stmt& self) override {
        auto it = map.find(op->buffer.get());
        if (it == map.end()) return IRMutator::mutate_store(op, self);
        std::vector<Expr> idx;
        for (auto& i : op->indices) idx.push_back(mutate(i));
        return make_store(it->second, idx, mutate(op->value), op->loc);
    }
    Stmt mutate_copy(const CopyNode* op, const Stmt&) override {
        return make_copy(region(op->src), region(op->dst), op->pad ? mutate(op->pad) : nullptr, op->loc);
    }
    Stmt mutate_gemm(const GemmNode* op, const Stmt&) override {
        return make_gemm(region(op->a), region(op->b), region(op->c), op->trans_a, op->trans_b, op->clear, op->loc);
    }
};

using Lets = std::vector<std::pair<Var, Expr>>;

// `s` under `lets`, the first outermost.
Stmt under(const Lets& lets, Stmt s, SourceLoc loc) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) s = make_let(it->first, it->second, s, loc);
    return s;
}

// `stmts` (under the body's leading lets) at iteration `j`, on fresh binders, with the
// shared tiles its copies fill from global memory moved to tiles of their own, each
// allocated around the result.
Stmt peeled(const Lets& lets, const std::vector<Stmt>& stmts, const Var& var, const Expr& j, SourceLoc loc) {
    Stmt s = under(lets, make_seq(stmts, loc), loc);
    VarMap at;
    at[var.get()] = j;
    s = with_fresh_binders(substitute(s, at));
    RenameBuffers rename;
    std::vector<Buffer> own;
    for (auto& st : stmts)
        if (auto* c = st->as<CopyNode>())
            if (c->src.buffer->scope == Scope::Global && c->dst.buffer->scope == Scope::Shared &&
                !rename.map.count(c->dst.buffer.get())) {
                BufferNode n = *c->dst.buffer;
                n.name += "_peeled";
                Buffer b = make_buffer(std::move(n));
                rename.map[c->dst.buffer.get()] = b;
                own.push_back(b);
            }
    s = rename.mutate(s);
    for (auto& b : own) s = make_allocate(b, s, loc);
    return s;
}

// The rotated loop, or nullopt where the body is not of the shape above.
std::optional<Stmt> rotate(const ForNode& loop, SourceLoc loc) {
    Lets lets;
    Stmt body = loop.body;
    while (auto* l = body->as<LetStmtNode>()) {
        lets.emplace_back(l->var, l->value);
        body = l->body;
    }
    auto* seq = body->as<SeqNode>();
    if (!seq) return std::nullopt;
    const auto& v = seq->stmts;
    std::vector<size_t> gemms;
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i]->as<GemmNode>()) gemms.push_back(i);
    if (gemms.size() != 2 || gemms[1] + 1 != v.size()) return std::nullopt;
    // Every other gemm-like op (nested under an `if`, say) would stay unseen: refuse.
    size_t nested = 0;
    struct CountGemms : IRVisitor {
        size_t* n;
        void visit_gemm(const GemmNode* op) override {
            ++*n;
            IRVisitor::visit_gemm(op);
        }
    } count;
    count.n = &nested;
    count.visit(body);
    if (nested != 2) return std::nullopt;
    auto* second = v[gemms[1]]->as<GemmNode>();
    if (second->a.buffer->scope != Scope::Fragment || second->b.buffer->scope != Scope::Shared) return std::nullopt;
    // T: the second GEMM and the copies right before it that fill its B operand.
    size_t t0 = gemms[1];
    bool fills_b = false;
    while (t0 > gemms[0] + 1) {
        auto* c = v[t0 - 1]->as<CopyNode>();
        if (!c || c->src.buffer->scope != Scope::Global || c->dst.buffer->scope != Scope::Shared) break;
        fills_b |= c->dst.buffer == second->b.buffer;
        --t0;
    }
    if (!fills_b) return std::nullopt;
    std::vector<Stmt> h1(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(gemms[0]) + 1);
    std::vector<Stmt> h2(v.begin() + static_cast<std::ptrdiff_t>(gemms[0]) + 1, v.begin() + static_cast<std::ptrdiff_t>(t0));
    std::vector<Stmt> t(v.begin() + static_cast<std::ptrdiff_t>(t0), v.end());
    if (h2.empty()) return std::nullopt;
    Effects e1 = effects(h1), e2 = effects(h2), et = effects(t);
    if (!e1.ok || !e2.ok || !et.ok) return std::nullopt;
    if (!disjoint(e1.writes, et.reads) || !disjoint(e1.writes, et.writes) || !disjoint(et.writes, e1.reads))
        return std::nullopt;
    // The lets must not read what the body writes (T(j - 1) re-evaluates them after H1(j)).
    Effects el;
    for (auto& [var, value] : lets) el.visit(value);
    if (!disjoint(el.reads, e1.writes) || !disjoint(el.reads, e2.writes) || !disjoint(el.reads, et.writes))
        return std::nullopt;

    const Var& j = loop.var;
    Expr n = loop.extent;
    Expr last = sub(add(loop.min, n), make_int(1));
    std::vector<Stmt> head = h1;
    head.insert(head.end(), h2.begin(), h2.end());
    Stmt prologue = make_if(ge(n, make_int(1)), peeled(lets, head, j, loop.min, loc), nullptr, loc);
    Stmt epilogue = make_if(ge(n, make_int(1)), peeled(lets, t, j, last, loc), nullptr, loc);

    // T(j - 1) inside the loop: the body's lets evaluated again for j - 1, at the top of
    // the body beside the originals (software-pipeline reads a fill's indices from lets
    // at the top of the body only).
    VarMap back;
    back[j.get()] = sub(Expr(j), make_int(1));
    Lets prev_lets;
    for (auto& [var, value] : lets) {
        Var fresh = make_var(var->name, var->type, var->var_kind, var->loc, var->dim);
        prev_lets.emplace_back(fresh, substitute(value, back));
        back[var.get()] = fresh;
    }
    std::vector<Stmt> rotated = h1;
    rotated.push_back(with_fresh_binders(substitute(make_seq(t, loc), back)));
    rotated.insert(rotated.end(), h2.begin(), h2.end());
    Stmt new_body = under(lets, under(prev_lets, make_seq(rotated, loc), loc), loc);
    Stmt rotated_loop = make_for(j, add(loop.min, make_int(1)), maximum(sub(n, make_int(1)), make_int(0)),
                                 loop.for_kind, new_body, loop.loc, loop.stages);
    return make_seq({prologue, rotated_loop, epilogue}, loc);
}

// The first pipelined loop under no other loop, rotated where it has the shape.
struct FirstPipelinedLoop : IRMutator {
    bool seen = false;
    int depth = 0;
    Stmt mutate_for(const ForNode* op, const Stmt& self) override {
        if (seen) return self;
        if (op->for_kind == ForKind::Pipelined && depth == 0) {
            seen = true;
            auto r = rotate(*op, self->loc);
            return r ? *r : self;
        }
        ++depth;
        Stmt out = IRMutator::mutate_for(op, self);
        --depth;
        return out;
    }
};

}  // namespace

PrimFunc overlap_softmax_gemm(const PrimFunc& f, const target::GpuTarget& target) {
    if (!target.has_wgmma() || f.level != FuncLevel::Tile || f.threads != 128 ||
        fragment_registers(f) > kFragmentRegisters)
        return f;
    PrimFunc out = f;
    out.body = FirstPipelinedLoop().mutate(f.body);
    return out;
}

}  // namespace tilec::lower
