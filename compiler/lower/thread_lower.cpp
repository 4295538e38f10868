// Thread-level lowering (entry: lower_to_thread_level). Tile ops say what a block does;
// after this pass every statement says what one thread does: fragments become
// per-thread register arrays indexed by the register number of their Fragment, copies
// become per-register loads and stores at the coordinates the Fragment's inverse gives
// the thread, parallel loops become unrolled loops over the thread's registers. The
// tile level leaves bounds implicit (copies mask global accesses); here they become
// explicit: one test of the whole region picks an unmasked path (what vector loads
// need) or a per-element masked one (the ragged last block).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "layout/index_expr.h"
#include "lower/thread_lower.h"
#include "lower/thread_lowering.h"
#include "ops/registry.h"

namespace tilec::lower {

using namespace ir;

namespace detail {

namespace {

// Types and math the GPU backends do not handle yet: 4-bit integers (no packed access),
// transcendental functions of f64 (no approximate instructions; libdevice is not
// linked). 8-bit floats are bytes in memory and f32 in registers (gpu_lowering_f8.cpp).
void check_gpu_type(DataType t, SourceLoc loc) {
    if (t.is_integer() && t.bits == 4) unsupported(loc, t.str() + " data");
}

// The parameters too: one the body never touches still has a place in the kernel's
// signature, which the backends cannot type.
void check_gpu_types(const PrimFunc& f) {
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor)
            check_gpu_type(p.buffer->dtype, p.buffer->loc);
        else
            check_gpu_type(p.var->type, p.var->loc);
    }
    struct Check : IRVisitor {
        using IRVisitor::visit;
        static void type(DataType t, SourceLoc loc) { check_gpu_type(t, loc); }
        void visit(const Expr& e) override {
            if (!e) return;
            type(e->type, e->loc);
            if (auto* c = e->as<CallNode>(); c && e->type == DataType::f64() && c->op != CallOp::Abs &&
                                             c->op != CallOp::Floor && c->op != CallOp::Ceil &&
                                             c->op != CallOp::Sqrt && c->op != CallOp::Rsqrt)
                unsupported(e->loc, std::string(call_op_name(c->op)) + " of f64");
            IRVisitor::visit(e);
        }
        void visit_buffer_use(const Buffer& b) override { type(b->dtype, b->loc); }
        void visit_allocate(const AllocateNode* op) override {
            type(op->buffer->dtype, op->loc);
            IRVisitor::visit_allocate(op);
        }
    } check;
    check.visit(f.body);
}

}  // namespace

ThreadLowering::ThreadLowering(const PrimFunc& f, const target::GpuTarget& t, const LayoutPlan& plan)
    : f_(f), target_(t), plan_(plan) {
    tx_ = make_thread_idx_var(0, f.loc);
}

ops::LowerContext::Footprint ThreadLowering::kernel_footprint() const {
    struct Sum : IRVisitor {
        int64_t threads = 1;
        Footprint out;
        std::unordered_map<const BufferNode*, int64_t> bytes, stages;
        std::vector<int> pipelines;  // stages of the enclosing pipelined loops
        void visit_allocate(const AllocateNode* op) override {
            const Buffer& b = op->buffer;
            if (auto shape = const_shape(b->shape)) {
                if (b->scope == Scope::Shared) bytes[b.get()] = layout::shape_size(*shape) * ((b->dtype.bits + 7) / 8);
                if (b->scope == Scope::Fragment)
                    out.fragment_registers.emplace_back(
                        b.get(), (layout::shape_size(*shape) + threads - 1) / threads * (b->dtype.bits == 64 ? 2 : 1));
            }
            IRVisitor::visit_allocate(op);
        }
        void visit_for(const ForNode* op) override {
            bool pipelined = op->for_kind == ForKind::Pipelined && op->stages >= 2;
            if (pipelined) pipelines.push_back(op->stages);
            IRVisitor::visit_for(op);
            if (pipelined) pipelines.pop_back();
        }
        void visit_copy(const CopyNode* op) override {
            if (!pipelines.empty()) {
                int64_t& s = stages[op->dst.buffer.get()];
                s = std::max<int64_t>(s, pipelines.back());
            }
            IRVisitor::visit_copy(op);
        }
    } sum;
    sum.threads = std::max<int64_t>(1, f_.threads);
    sum.visit(f_.body);
    // Without asynchronous copies (AMD) the pipeline's fills are staged through
    // registers, in two stages of shared memory whatever the loop asks, where the
    // registers allow (software_pipeline.cpp's `fits`): in the stdlib, on the targets
    // whose MFMA accumulators live in AGPRs; elsewhere (gfx1100's WMMA accumulators
    // take the VGPRs) the loop is not pipelined and a tile is allocated once.
    const int64_t max_stages = target_.cp_async.available ? INT64_MAX : target_.has_agprs() ? 2 : 1;
    for (auto& [b, n] : sum.bytes) {
        auto it = sum.stages.find(b);
        sum.out.shared_bytes +=
            n * (it == sum.stages.end() ? 1 : std::clamp<int64_t>(it->second, 1, max_stages));
        sum.out.shared_bytes_once += n;
    }
    return sum.out;
}

PrimFunc ThreadLowering::run() {
    if (f_.threads > target_.max_threads_per_block)
        unsupported(f_.loc, std::to_string(f_.threads) + " threads per block (" + target_.name + " allows " +
                                std::to_string(target_.max_threads_per_block) + ")");
    check_gpu_types(f_);
    PrimFunc out = f_;
    out.body = apply_shared_layouts(lower(f_.body), plan_);
    out.level = FuncLevel::Thread;
    out.layouts = nullptr;  // consumed: the registers are laid out
    return out;
}

std::optional<layout::Fragment> ThreadLowering::fragment_for(const std::vector<int64_t>& shape) const {
    return assign_fragment(shape, f_.threads);
}

Stmt ThreadLowering::register_loop(const layout::Fragment& F, SourceLoc loc, const RegBody& body) {
    auto inv = F.inverse();
    if (!inv) TILEC_ICE("thread-level lowering: fragment without an inverse: " + F.str());
    Var r = make_loop_var("r", loc);
    auto outs = inv->apply({Expr(tx_), Expr(r)});
    std::vector<Var> lets;
    std::vector<Expr> coord;
    static const char* names[] = {"i", "j", "k", "l"};
    for (size_t d = 0; d < F.rank(); ++d) {
        lets.push_back(
            make_let_var(d < 4 ? std::string(names[d]) : "d" + std::to_string(d), DataType::index(), loc));
        coord.push_back(lets.back());
    }
    Expr rep = make_int(0);
    Var rep_var;
    if (F.replicate() > 1) {
        rep_var = make_let_var("rep", DataType::index(), loc);
        rep = rep_var;
    }
    Stmt s = body(r, coord, rep);
    if (rep_var) s = make_let(rep_var, outs.at(F.rank()), s, loc);
    for (size_t d = F.rank(); d-- > 0;) s = make_let(lets[d], outs.at(d), s, loc);
    return make_for(r, make_int(0), make_int(F.registers_per_thread()), ForKind::Unroll, s, loc);
}

// ---- statements ----------------------------------------------------------------
// No barriers here: place_barriers (barrier_placement.cpp) puts them where hazards
// need them once the shared plan has given every buffer its bytes.
Stmt ThreadLowering::lower(const Stmt& s) {
    Stmt out = lower_inner(s);
    if (Buffer whole = overwritten_shared(s)) out = make_full_write(std::move(whole), std::move(out), s->loc);
    return out;
}

// The shared buffer a copy or fill overwrites in full (every element, out-of-bounds
// ones with the pad), without reading it: the shared plan's liveness needs it.
Buffer ThreadLowering::overwritten_shared(const Stmt& s) const {
    const Region* dst = nullptr;
    if (s->kind == StmtKind::Copy) {
        auto* c = s->as<CopyNode>();
        if (c->src.buffer.get() != c->dst.buffer.get()) dst = &c->dst;
    } else if (s->kind == StmtKind::Fill) {
        dst = &s->as<FillNode>()->dst;
    }
    if (!dst || dst->buffer->scope != Scope::Shared || !is_full_region(*dst)) return nullptr;
    return dst->buffer;
}

Stmt ThreadLowering::lower_inner(const Stmt& s) {
    switch (s->kind) {
    case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (const auto& c : s->as<SeqNode>()->stmts) out.push_back(lower(c));
        return make_seq(out, s->loc);
    }
    case StmtKind::For: {
        auto* f = s->as<ForNode>();
        if (f->for_kind == ForKind::Parallel) return lower_parallel(*f);
        // Pipelined loops stay so for software-pipeline (which makes them serial).
        return make_for(f->var, uniform(f->min), uniform(f->extent), f->for_kind, lower(f->body), s->loc,
                        f->stages);
    }
    case StmtKind::If: {
        auto* i = s->as<IfNode>();
        return make_if(uniform(i->cond), lower(i->then_case), i->else_case ? lower(i->else_case) : nullptr,
                       s->loc);
    }
    case StmtKind::LetStmt: {
        auto* l = s->as<LetStmtNode>();
        return make_let(l->var, uniform(l->value), lower(l->body), s->loc);
    }
    case StmtKind::Allocate: return lower_allocate(*s->as<AllocateNode>());
    case StmtKind::Store: {
        // Outside a parallel loop a store is the block's, done once: by thread 0.
        auto* st = s->as<StoreNode>();
        Buffer b = plain_buffer(st->buffer, s->loc);
        std::vector<Expr> idx;
        for (auto& e : st->indices) idx.push_back(uniform(e));
        Stmt out = make_store(b, idx, uniform(st->value), s->loc);
        if (b->scope != Scope::Register) out = make_if(eq(Expr(tx_), make_int(0)), out, nullptr, s->loc);
        return out;
    }
    case StmtKind::Evaluate: return make_evaluate(uniform(s->as<EvaluateNode>()->value), s->loc);
    case StmtKind::Barrier: return s;
    case StmtKind::AtomicRmw: TILEC_ICE("thread-level lowering: an atomic in tile-level IR");
    case StmtKind::FullWrite: TILEC_ICE("thread-level lowering: a full_write in tile-level IR");
    case StmtKind::MachineOp: TILEC_ICE("thread-level lowering: a machine op in tile-level IR");
    // Tile ops: each op's home (compiler/ops/<op>.cpp).
    case StmtKind::Copy:
    case StmtKind::Fill:
    case StmtKind::Gemm:
    case StmtKind::Reduce:
    case StmtKind::Cumsum:
    case StmtKind::AtomicAdd:
    case StmtKind::Print:
    case StmtKind::Assert: return ops::lower(*s, *this);
    }
    TILEC_ICE("thread-level lowering: unknown statement kind");
}

Stmt ThreadLowering::lower_allocate(const AllocateNode& a) {
    const Buffer& b = a.buffer;
    auto shape = const_shape(b->shape);
    if (!shape) TILEC_ICE("thread-level lowering: allocation of '" + b->name + "' with a non-constant shape");
    switch (b->scope) {
    case Scope::Fragment: {
        const layout::Fragment* F = plan_.fragment(b.get());
        if (!F)
            unsupported(a.loc, "fragment '" + b->name + "' of shape " + layout::shape_str(*shape) + " on " +
                                   std::to_string(f_.threads) + " threads (it does not divide among them)");
        Buffer regs =
            make_buffer(b->name, b->dtype, {make_int(F->registers_per_thread())}, Scope::Register, b->loc);
        frags_.emplace(b.get(), FragInfo{regs, *F});
        return make_allocate(regs, lower(a.body), a.loc);
    }
    case Scope::Local: {
        // A `var` is per thread: each thread keeps its own copy of the block's value.
        BufferNode n = *b;
        n.scope = Scope::Register;
        Buffer regs = make_buffer(std::move(n));
        locals_.emplace(b.get(), regs);
        return make_allocate(regs, lower(a.body), a.loc);
    }
    case Scope::Shared: return make_allocate(b, lower(a.body), a.loc);  // placed by the shared plan
    case Scope::Register: return make_allocate(b, lower(a.body), a.loc);
    case Scope::Global: TILEC_ICE("thread-level lowering: allocation of a global buffer");
    }
    TILEC_ICE("thread-level lowering: unknown scope");
}

// A buffer accessed element by element outside the register loops: locals become
// their register copies; fragments have no coordinate here.
Buffer ThreadLowering::plain_buffer(const Buffer& b, SourceLoc loc) {
    if (b->scope == Scope::Fragment)
        unsupported(loc, "an element of fragment '" + b->name + "' outside a parallel loop");
    if (auto it = locals_.find(b.get()); it != locals_.end()) return it->second;
    return b;
}

// An expression evaluated by every thread alike (outside parallel loops).
Expr ThreadLowering::uniform(const Expr& e) {
    if (!e) return e;
    struct M : IRMutator {
        ThreadLowering* self;
        Expr mutate_load(const LoadNode* op, const Expr& s) override {
            Buffer b = self->plain_buffer(op->buffer, op->loc);
            std::vector<Expr> idx;
            bool changed = mutate_exprs(op->indices, &idx);
            if (!changed && b == op->buffer) return s;
            return make_load(b, changed ? idx : op->indices, op->loc);
        }
    } m;
    m.self = this;
    return m.mutate(e);
}

// The body of a parallel loop, for one register: fragment elements at the loop's
// own coordinates become that register; stores to memory shared by threads are
// done by replica 0 only.
struct ThreadLowering::BodyRewriter : IRMutator {
    ThreadLowering* self;
    const std::vector<Var>& vars;
    const std::vector<int64_t>& extents;
    Var r;
    Expr rep;
    const layout::Fragment* loop_frag;
    BodyRewriter(ThreadLowering* s, const std::vector<Var>& v, const std::vector<int64_t>& e, Var reg,
                 Expr rp, const layout::Fragment* lf)
        : self(s), vars(v), extents(e), r(std::move(reg)), rep(std::move(rp)), loop_frag(lf) {}

    // A read of a reduced fragment at the loop's coordinates but one (m[i] inside
    // `for i, c in parallel`): when its fragment is the loop's reduced along that
    // dimension, the thread at (i, c) holds row i, in the register the reduced
    // fragment gives i (its register digits do not involve the replica).
    std::optional<Expr> broadcast_register(const layout::Fragment& frag, const std::vector<Expr>& indices) {
        if (indices.size() + 1 != vars.size()) return std::nullopt;
        size_t missing = vars.size();
        for (size_t d = 0, k = 0; d < vars.size(); ++d) {
            auto v = k < indices.size() ? expr_as<VarNode>(indices[k]) : nullptr;
            if (v && v.get() == vars[d].get()) {
                ++k;
            } else if (missing == vars.size()) {
                missing = d;
            } else {
                return std::nullopt;
            }
        }
        if (missing == vars.size()) return std::nullopt;
        auto G = loop_frag->reduce_dim(missing);
        if (!G || !G->same_slots(frag)) return std::nullopt;
        return frag.apply(indices, make_int(0)).second;
    }

    const FragInfo& fragment(const Buffer& b) const {
        auto it = self->frags_.find(b.get());
        if (it == self->frags_.end())
            TILEC_ICE("thread-level lowering: fragment '" + b->name + "' not allocated");
        return it->second;
    }

    // Whether a fragment access is at the loop's own coordinates (its register r).
    bool at_coordinates(const Buffer& b, const std::vector<Expr>& indices) const {
        bool same = indices.size() == vars.size() && fragment(b).frag.shape() == extents;
        for (size_t d = 0; same && d < indices.size(); ++d) {
            auto v = expr_as<VarNode>(indices[d]);
            same = v && v.get() == vars[d].get();
        }
        return same;
    }

    // The register buffer for a fragment store at the loop's coordinates.
    Buffer register_of(const Buffer& b, const std::vector<Expr>& indices, SourceLoc loc) {
        if (!at_coordinates(b, indices))
            unsupported(loc, "a store to fragment '" + b->name +
                                 "' indexed other than by its parallel loop's coordinates");
        return fragment(b).regs;
    }

    // A fragment read elsewhere than at the loop's coordinates (y[i, BN - 1], a[j, i]):
    // the element may sit in another thread's registers, so the loop reads a copy of
    // the whole fragment that lower_parallel publishes in shared memory before it.
    // Under the race rule no other iteration writes what an iteration reads, so the
    // copy taken before the loop holds every value read.
    Buffer staged(const Buffer& b, SourceLoc loc) {
        for (auto& [frag, copy] : staged_fragments)
            if (frag == b) return copy;
        Buffer copy = make_buffer(b->name + "_staged", b->dtype, b->shape, Scope::Shared, loc);
        staged_fragments.emplace_back(b, copy);
        return copy;
    }
    std::vector<std::pair<Buffer, Buffer>> staged_fragments;  // fragment, its shared copy

    Expr mutate_load(const LoadNode* op, const Expr& s) override {
        if (op->buffer->scope == Scope::Fragment) {
            const FragInfo& info = fragment(op->buffer);
            if (auto reg = broadcast_register(info.frag, op->indices))
                return make_load(info.regs, {*reg}, op->loc);
            if (at_coordinates(op->buffer, op->indices)) return make_load(info.regs, {r}, op->loc);
            std::vector<Expr> idx;
            if (!mutate_exprs(op->indices, &idx)) idx = op->indices;
            return make_load(staged(op->buffer, op->loc), idx, op->loc);
        }
        Buffer b = self->plain_buffer(op->buffer, op->loc);
        std::vector<Expr> idx;
        bool changed = mutate_exprs(op->indices, &idx);
        if (!changed && b == op->buffer) return s;
        return make_load(b, changed ? idx : op->indices, op->loc);
    }
    Stmt mutate_store(const StoreNode* op, const Stmt& s) override {
        Expr value = mutate(op->value);
        if (op->buffer->scope == Scope::Fragment)
            return make_store(register_of(op->buffer, op->indices, op->loc), {r}, value, op->loc);
        // Each thread has its own copy of an outer `var`: a write to it here would
        // be a reduction across threads, which this lowering does not do.
        if (op->buffer->scope == Scope::Local && !inner_locals.count(op->buffer.get()))
            unsupported(op->loc,
                        "writing `var` '" + op->buffer->name +
                            "' (declared outside) inside a parallel loop (a reduction across threads)");
        Buffer b = self->plain_buffer(op->buffer, op->loc);
        std::vector<Expr> idx;
        if (!mutate_exprs(op->indices, &idx)) idx = op->indices;
        Stmt out = make_store(b, idx, value, op->loc);
        if (b->scope == Scope::Global || b->scope == Scope::Shared) out = guard_replica(rep, out);
        return out;
    }
    Stmt mutate_for(const ForNode* op, const Stmt& s) override {
        if (op->for_kind == ForKind::Parallel)
            unsupported(op->loc, "a parallel loop nested inside another's body");
        return IRMutator::mutate_for(op, s);
    }
    Stmt mutate_allocate(const AllocateNode* op, const Stmt& s) override {
        if (op->buffer->scope != Scope::Local)
            unsupported(op->loc, std::string(scope_name(op->buffer->scope)) + " buffer '" + op->buffer->name +
                                     "' declared inside a parallel loop");
        BufferNode n = *op->buffer;
        n.scope = Scope::Register;
        Buffer regs = make_buffer(std::move(n));
        self->locals_.emplace(op->buffer.get(), regs);
        inner_locals.insert(op->buffer.get());
        return make_allocate(regs, mutate(op->body), op->loc);
    }
    std::unordered_set<const BufferNode*> inner_locals;  // `var`s declared in the body
    Stmt mutate_copy(const CopyNode* op, const Stmt&) override {
        unsupported(op->loc, "copy inside a parallel loop");
    }
    Stmt mutate_gemm(const GemmNode* op, const Stmt&) override { unsupported(op->loc, "gemm"); }
    Stmt mutate_fill(const FillNode* op, const Stmt&) override {
        unsupported(op->loc, "fill inside a parallel loop");
    }
    Stmt mutate_reduce(const ReduceNode* op, const Stmt&) override { unsupported(op->loc, "reduce"); }
    Stmt mutate_cumsum(const CumsumNode* op, const Stmt&) override { unsupported(op->loc, "cumsum"); }
    Stmt mutate_atomic_add(const AtomicAddNode* op, const Stmt&) override {
        unsupported(op->loc, "atomic_add");
    }
    Stmt mutate_print(const PrintNode* op, const Stmt&) override { unsupported(op->loc, "print"); }
    Stmt mutate_assert(const AssertNode* op, const Stmt&) override { unsupported(op->loc, "assert"); }
};

// ---- parallel loops --------------------------------------------------------------
Stmt ThreadLowering::lower_parallel(const ForNode& outer) {
    std::vector<Var> vars;
    std::vector<int64_t> extents;
    std::vector<Expr> mins;
    Stmt body;
    const ForNode* f = &outer;
    while (true) {
        auto ext = as_const_int(f->extent);
        if (!ext || *ext <= 0) unsupported(f->loc, "a parallel loop with a run-time extent");
        vars.push_back(f->var);
        extents.push_back(*ext);
        mins.push_back(uniform(f->min));
        body = f->body;
        auto* inner = body->as<ForNode>();
        if (!inner || inner->for_kind != ForKind::Parallel) break;
        f = inner;
    }
    const layout::Fragment* F = plan_.loop(&outer);
    if (!F)
        unsupported(outer.loc, "a parallel loop over " + layout::shape_str(extents) + " on " +
                                   std::to_string(f_.threads) + " threads (it does not divide among them)");
    std::vector<std::pair<Buffer, Buffer>> staged;
    Stmt loop =
        register_loop(*F, outer.loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            BodyRewriter rw(this, vars, extents, r, rep, F);
            Stmt b = rw.mutate(body);
            staged = rw.staged_fragments;
            VarMap map;
            for (size_t d = 0; d < vars.size(); ++d)
                map[vars[d].get()] = is_const_int(mins[d], 0) ? coord[d] : add(mins[d], coord[d]);
            return substitute(b, map);
        });
    // Each iteration on one thread: nothing in the body needs another thread's access
    // ordered before it, except another iteration's, which is a race (language.md,
    // section 12). The loop stays `parallel` so that place-barriers keeps it whole and
    // the simulator reports such a race instead of a barrier hiding it. A replicated
    // loop's stores are done by replica 0 and read by all: barriers may go inside.
    if (F->replicate() == 1) {
        auto* f = loop->as<ForNode>();
        loop = make_for(f->var, f->min, f->extent, ForKind::Parallel, f->body, f->loc);
    }
    // The fragments the body reads off its coordinates, published whole beforehand
    // (each element by one replica; place-barriers then orders the loop after it).
    for (auto& [frag, copy] : staged) {
        const FragInfo& info = frags_.at(frag.get());
        Stmt publish = register_loop(
            info.frag, outer.loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
                return guard_replica(
                    rep, make_store(copy, coord, make_load(info.regs, {r}, outer.loc), outer.loc));
            });
        loop = make_allocate(copy, make_seq({make_full_write(copy, publish, outer.loc), loop}, outer.loc),
                             outer.loc);
    }
    return loop;
}

}  // namespace detail

}  // namespace tilec::lower