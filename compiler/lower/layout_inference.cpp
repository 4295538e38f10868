// Layout inference (the step before thread-level lowering): a Fragment for every
// fragment buffer and parallel loop nest, a Layout for every shared buffer.
//
// Why: a parallel loop runs each element on the thread that holds it, so a loop and the
// fragments it touches at its own coordinates must share one Fragment, and a reduction's
// result must sit in the threads that held its rows. Deciding that per shape (the old
// rule) breaks as soon as two shapes meet, e.g. FlashAttention's scores s[BM, BN] are
// reduced into alpha[BM], which then rescales o[BM, D] with D != BN.
//
// How (in the spirit of TileLang's layout inference): the uses become constraints
// between nodes (fragments, loops), and layouts flow along them to a fixed point,
// by priority:
//   1. ops (strict): reduce: dst = src.reduce_dim(dim), and src = dst.expand_dim(dim, n)
//      when dst is known first; gemm on tensor cores fixes c to the mma accumulator
//      fragment of its warp partition (on CUDA cores c takes any complete fragment
//      without replicas, so it proposes nothing);
//   2. copies: a fragment <-> fragment copy of one shape: one layout (a copy between a
//      fragment and global or shared memory is free: it follows the fragment);
//   3. parallel loops: a fragment accessed at the loop's coordinates has the loop's
//      layout; a fragment read at all the loop's coordinates but one (m[i] in
//      `for i, j`) is the loop's layout reduced along that dimension, and the loop the
//      fragment's expanded (Fragment::expand_dim: the replicas take chunks of the new
//      dimension), so the read is a register of the reading thread. Equalities flow
//      before broadcasts: a loop that writes a fragment at its coordinates takes that
//      fragment's layout rather than an expansion of a row vector it reads (which
//      would then conflict with the fragment's).
// Rules 1 and 2 are the ops' own: each op's home (compiler/ops/<op>.cpp) states them
// through ops::LayoutConstraints, which this walker implements; rule 3 is the walker's.
// When nothing flows, the first free node (reduce sources first, then fragments, then
// loops, in program order) gets the default assign_fragment(shape) and flow resumes.
// A constraint whose two sides are both known and disagree is a conflict: a user error
// at the later use, with notes at the use that fixed the layout and the fix (copy into
// a fragment of its own between the two uses).
#include "lower/layout_inference.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "ir/visitor.h"
#include "layout/index_expr.h"
#include "lower/thread_lower.h"
#include "ops/copy.h"
#include "ops/lower_util.h"
#include "ops/registry.h"

namespace tilec::lower {

using namespace ir;

namespace {

struct Node {
    std::string what;  // "fragment 's'" / "the parallel loop over [64, 32]"
    std::vector<int64_t> shape;
    const BufferNode* buffer = nullptr;
    const ForNode* loop = nullptr;
    std::optional<layout::Fragment> frag;
    bool reduced = false;  // its layout came through a reduction
    bool tried = false;    // a default was tried and does not exist
    SourceLoc origin;      // the use that gave it its layout
    std::string origin_what;
};

enum class Rule { Fixed, Reduce, Copy, Loop, LoopBroadcast };

// a and b related by the rule: Copy/Loop: equal; Reduce: b = a.reduce_dim(dim, keep);
// LoopBroadcast: b (fragment) = a (loop).reduce_dim(dim); Fixed: a = b = the node, laid
// out as `fixed`.
struct Constraint {
    Rule rule;
    size_t a, b;
    size_t dim = 0;
    bool keep = false;
    SourceLoc loc;
    std::string use;  // "reduce of 's' into 'm'" ...
    std::optional<layout::Fragment> fixed;
};

struct Conflict {
    size_t node;
    const Constraint* c;
    layout::Fragment wanted;
};

// A layout's name for a conflict message; when both layouts have one name (the same
// atom split differently between warps), also where they first differ: which threads
// hold one element, so the two descriptions never read the same.
std::string describe_layout(const layout::Fragment& f, const layout::Fragment& other) {
    if (f.name() != other.name() || f.shape() != other.shape()) return f.name();
    std::vector<int64_t> c(f.rank(), 0);
    const int64_t n = f.size();
    for (int64_t e = 0; e < n; ++e) {
        int64_t rest = e;
        for (size_t d = f.rank(); d-- > 0;) {
            c[d] = rest % f.shape()[d];
            rest /= f.shape()[d];
        }
        auto mine = f.owners(c), theirs = other.owners(c);
        auto threads_of = [](const std::vector<layout::FragmentSlot>& slots) {
            std::vector<int64_t> t;
            for (const auto& sl : slots) t.push_back(sl.thread);
            std::sort(t.begin(), t.end());
            return t;
        };
        if (threads_of(mine) == threads_of(theirs)) continue;
        std::string at = "[";
        for (size_t d = 0; d < c.size(); ++d) at += (d ? ", " : "") + std::to_string(c[d]);
        std::string list;
        auto t = threads_of(mine);
        for (size_t k = 0; k < t.size() && k < 8; ++k) list += (k ? ", " : "") + std::to_string(t[k]);
        if (t.size() > 8) list += ", ... (" + std::to_string(t.size()) + " threads)";
        return f.name() + " (element " + at + "] in threads " + list + ")";
    }
    return f.name() + " (" + std::to_string(f.registers_per_thread()) + " registers a thread)";
}

class Inference : public ops::LayoutConstraints {
public:
    Inference(const PrimFunc& f, const target::GpuTarget& t) : f_(f), target_(t) {}

    std::optional<LayoutPlan> run(DiagnosticEngine* diag) {
        collect(f_.body);
        std::vector<size_t> seeds;
        for (size_t n : reduce_sources_) seeds.push_back(n);
        for (size_t n = 0; n < nodes_.size(); ++n)
            if (nodes_[n].buffer) seeds.push_back(n);
        for (size_t n = 0; n < nodes_.size(); ++n)
            if (nodes_[n].loop) seeds.push_back(n);
        while (true) {
            if (auto c = flow()) return report(*c, diag);
            bool seeded = false;
            for (size_t n : seeds) {
                Node& node = nodes_[n];
                if (node.frag || node.tried) continue;
                node.tried = true;
                if (auto F = assign_fragment(node.shape, f_.threads)) {
                    node.frag = *F;
                    node.origin = node.loop ? node.loop->loc : SourceLoc{};
                    node.origin_what = "the default layout of its shape";
                    seeded = true;
                    break;
                }
            }
            if (!seeded) break;
        }
        LayoutPlan plan;
        for (const Node& n : nodes_) {
            if (!n.frag) continue;
            if (n.buffer) {
                plan.fragments.emplace(n.buffer, *n.frag);
                if (n.reduced) plan.reduced.insert(n.buffer);
            } else {
                plan.loops.emplace(n.loop, *n.frag);
            }
        }
        for (const auto& [b, shape] : shared_) plan.shared.emplace(b, shared_layout_of(*b, shape));
        return plan;
    }

private:
    size_t buffer_node(const BufferNode* b) {
        auto it = buffer_nodes_.find(b);
        if (it != buffer_nodes_.end()) return it->second;
        Node n;
        n.what = "fragment '" + b->name + "'";
        n.buffer = b;
        if (auto s = ops::positive_shape(b->shape)) n.shape = *s;
        nodes_.push_back(n);
        buffer_nodes_[b] = nodes_.size() - 1;
        return nodes_.size() - 1;
    }

    // Which constraints the IR gives.
    void collect(const Stmt& body) {
        struct Walker : IRVisitor {
            Inference* self;
            void visit_allocate(const AllocateNode* op) override {
                const Buffer& b = op->buffer;
                if (auto s = ops::positive_shape(b->shape)) {
                    if (b->scope == Scope::Fragment) self->buffer_node(b.get());
                    if (b->scope == Scope::Shared) self->shared_.emplace_back(b.get(), *s);
                }
                IRVisitor::visit_allocate(op);
            }
            using IRVisitor::visit;
            // A tile op states its own constraints (its home, compiler/ops/<op>.cpp).
            void visit(const Stmt& s) override {
                if (s && ops::is_tile_op(*s)) ops::infer_layout(*s, *self);
                IRVisitor::visit(s);
            }
            void visit_for(const ForNode* op) override {
                if (op->for_kind != ForKind::Parallel) return IRVisitor::visit_for(op);
                self->parallel(*op);
            }
        } w;
        w.self = this;
        // First every fill's contiguous dimension (shared_fill_dim), which ops read
        // before the copies that give it may have been visited.
        struct Fills : IRVisitor {
            Inference* self;
            using IRVisitor::visit;
            void visit(const Stmt& s) override {
                if (auto* c = s ? s->as<CopyNode>() : nullptr)
                    if (c->dst.buffer->scope == Scope::Shared && c->src.buffer->scope == Scope::Global) {
                        auto dim = ops::fill_contiguous_dim(*c);
                        auto [it, fresh] = self->fill_dims_.try_emplace(c->dst.buffer.get(), dim);
                        if (!fresh && it->second != dim) it->second = std::nullopt;
                    }
                IRVisitor::visit(s);
            }
        } fills;
        fills.self = this;
        fills.visit(body);
        w.visit(body);
    }

    // The ops' constraints (ops::LayoutConstraints).
    const target::GpuTarget& gpu_target() const override { return target_; }
    int64_t threads() const override { return f_.threads; }
    std::string attr(const std::string& name) const override { return ops::func_attr(f_, name); }
    void reduced(const Buffer& src, const Buffer& dst, size_t dim, bool keep, SourceLoc loc,
                 std::string use) override {
        size_t a = buffer_node(src.get()), b = buffer_node(dst.get());
        reduce_sources_.push_back(a);
        constraints_.push_back({Rule::Reduce, a, b, dim, keep, loc, std::move(use), std::nullopt});
    }
    void fixed(const Buffer& b, layout::Fragment F, SourceLoc loc, std::string use) override {
        size_t n = buffer_node(b.get());
        Constraint c{Rule::Fixed, n, n, 0, false, loc, std::move(use), std::nullopt};
        c.fixed = std::move(F);
        constraints_.push_back(std::move(c));
    }
    void shared_layout(const Buffer& b, layout::Layout L, SourceLoc, std::string) override {
        shared_wanted_.emplace(b.get(), std::move(L));
    }
    std::optional<size_t> shared_fill_dim(const Buffer& b) const override {
        auto it = fill_dims_.find(b.get());
        return it == fill_dims_.end() ? std::nullopt : it->second;
    }
    void same(const Buffer& a, const Buffer& b, SourceLoc loc, std::string use) override {
        size_t na = buffer_node(a.get()), nb = buffer_node(b.get());
        constraints_.push_back({Rule::Copy, na, nb, 0, false, loc, std::move(use), std::nullopt});
    }

    // A parallel loop nest: its node and the constraints of its fragment accesses.
    void parallel(const ForNode& outer) {
        std::vector<const VarNode*> vars;
        std::vector<int64_t> extents;
        const ForNode* f = &outer;
        Stmt body;
        while (true) {
            auto e = as_const_int(f->extent);
            if (!e || *e <= 0) return;  // the lowering refuses it
            vars.push_back(f->var.get());
            extents.push_back(*e);
            body = f->body;
            auto* inner = body->as<ForNode>();
            if (!inner || inner->for_kind != ForKind::Parallel) break;
            f = inner;
        }
        Node n;
        n.what = "the parallel loop over " + layout::shape_str(extents);
        n.shape = extents;
        n.loop = &outer;
        nodes_.push_back(n);
        size_t loop = nodes_.size() - 1;
        auto access = [&](const Buffer& b, const std::vector<Expr>& idx, SourceLoc loc, bool write) {
            if (b->scope != Scope::Fragment) return;
            auto shape = ops::positive_shape(b->shape);
            if (!shape) return;
            std::string use = std::string(write ? "the write of '" : "the read of '") + b->name + "' in " +
                              nodes_[loop].what;
            if (idx.size() == vars.size() && *shape == extents) {
                bool same = true;
                for (size_t d = 0; same && d < idx.size(); ++d) {
                    auto v = expr_as<VarNode>(idx[d]);
                    same = v && v.get() == vars[d];
                }
                if (same) constraints_.push_back({Rule::Loop, loop, buffer_node(b.get()), 0, false, loc, use, std::nullopt});
                return;
            }
            if (write || idx.size() + 1 != vars.size()) return;
            size_t missing = vars.size();
            for (size_t d = 0, k = 0; d < vars.size(); ++d) {
                auto v = k < idx.size() ? expr_as<VarNode>(idx[k]) : nullptr;
                if (v && v.get() == vars[d]) {
                    ++k;
                } else if (missing == vars.size()) {
                    missing = d;
                } else {
                    return;
                }
            }
            if (missing < vars.size())
                constraints_.push_back({Rule::LoopBroadcast, loop, buffer_node(b.get()), missing, false, loc, use, std::nullopt});
        };
        struct Accesses : IRVisitor {
            std::function<void(const Buffer&, const std::vector<Expr>&, SourceLoc, bool)> fn;
            void visit_load(const LoadNode* op) override {
                fn(op->buffer, op->indices, op->loc, false);
                IRVisitor::visit_load(op);
            }
            void visit_store(const StoreNode* op) override {
                fn(op->buffer, op->indices, op->loc, true);
                IRVisitor::visit_store(op);
            }
        } acc;
        acc.fn = access;
        acc.visit(body);
    }

    // What `c` makes of its known side for the other: (node, proposal).
    std::optional<std::pair<size_t, std::optional<layout::Fragment>>> propose(const Constraint& c) const {
        const Node& A = nodes_[c.a];
        const Node& B = nodes_[c.b];
        switch (c.rule) {
        case Rule::Fixed:
            if (!A.frag) return std::make_pair(c.a, c.fixed);
            return std::nullopt;
        case Rule::Copy:
        case Rule::Loop:
            if (A.frag && !B.frag) return std::make_pair(c.b, A.frag);
            if (B.frag && !A.frag) return std::make_pair(c.a, B.frag);
            return std::nullopt;
        case Rule::Reduce:
        case Rule::LoopBroadcast: {
            if (A.frag && !B.frag) return std::make_pair(c.b, A.frag->reduce_dim(c.dim, c.keep));
            if (B.frag && !A.frag)
                return std::make_pair(c.a, B.frag->expand_dim(c.dim, A.shape.at(c.dim), c.keep));
            return std::nullopt;
        }
        }
        return std::nullopt;
    }

    // nullopt if consistent; else what the constraint wants of node b.
    std::optional<layout::Fragment> check(const Constraint& c) const {
        const Node& A = nodes_[c.a];
        const Node& B = nodes_[c.b];
        if (!A.frag || !B.frag) return std::nullopt;
        std::optional<layout::Fragment> want = c.rule == Rule::Fixed ? c.fixed : A.frag;
        if (c.rule == Rule::Reduce || c.rule == Rule::LoopBroadcast) want = A.frag->reduce_dim(c.dim, c.keep);
        if (!want || want->same_slots(*B.frag)) return std::nullopt;
        return want;
    }

    // Flows layouts to a fixed point, ops first, then copies, then loops.
    std::optional<Conflict> flow() {
        const std::vector<std::vector<Rule>> tiers = {
            {Rule::Fixed, Rule::Reduce}, {Rule::Copy}, {Rule::Loop}, {Rule::LoopBroadcast}};
        bool changed = true;
        while (changed) {
            changed = false;
            for (const auto& tier : tiers) {
                for (const Constraint& c : constraints_) {
                    if (std::find(tier.begin(), tier.end(), c.rule) == tier.end()) continue;
                    if (auto wanted = check(c)) return Conflict{c.b, &c, *wanted};
                    auto p = propose(c);
                    if (!p || !p->second) continue;
                    Node& n = nodes_[p->first];
                    n.frag = p->second;
                    n.origin = c.loc;
                    n.origin_what = c.use;
                    size_t other = p->first == c.a ? c.b : c.a;
                    n.reduced = c.rule != Rule::Fixed &&
                                (nodes_[other].reduced || c.rule == Rule::Reduce || c.rule == Rule::LoopBroadcast);
                    changed = true;
                }
                if (changed) break;
            }
        }
        return std::nullopt;
    }

    std::optional<LayoutPlan> report(const Conflict& c, DiagnosticEngine* diag) const {
        const Node& n = nodes_[c.node];
        std::string msg = "conflicting layouts for " + n.what + ": " + c.c->use + " wants it laid out as " +
                          describe_layout(c.wanted, *n.frag) + ", but it is already laid out as " +
                          describe_layout(*n.frag, c.wanted);
        if (!diag) TILEC_ICE("layout inference of '" + f_.name + "': " + msg);
        SourceLoc here = c.c->loc.valid() ? c.c->loc : f_.loc;
        auto e = diag->error(here, msg);
        if (n.origin.valid()) e.note(n.origin, n.what + " gets its layout from " + n.origin_what + " here");
        // A fragment copied into a fragment takes its layout along (copy_layout): only a
        // trip through shared memory changes which thread holds an element.
        const std::string name = n.buffer ? n.buffer->name : std::string("it");
        e.note(here, "copy '" + name + "' into a shared buffer between the two uses and read that here (a copy into "
                     "another fragment keeps the layout)");
        return std::nullopt;
    }

    // A shared buffer's layout: its @layout annotation's (swizzle: the widest mode its
    // shape takes; padded: 16 bytes more per row), else what an op reading it wants,
    // else row-major.
    layout::Layout shared_layout_of(const BufferNode& b, const std::vector<int64_t>& shape) const {
        auto row_major = layout::Layout::row_major(shape);
        int bits = b.dtype.bits;
        std::string hint = ops::func_attr(f_, "layout(" + b.name + ")");  // @layout(b, KIND)
        if (hint.empty()) hint = b.layout_hint;
        if (hint == "row_major") return row_major;
        if (hint == "padded" && shape.size() == 2 && bits >= 8 && 128 % bits == 0)
            return layout::Layout::padded(shape, 128 / bits);
        if (hint == "swizzle" && shape.size() == 2) {
            auto mode = layout::Layout::widest_swizzle(shape[0], shape[1], bits);
            if (auto L = layout::Layout::swizzled(shape[0], shape[1], bits, mode)) return *L;
            return row_major;
        }
        auto it = shared_wanted_.find(&b);
        return it != shared_wanted_.end() ? it->second : row_major;
    }

    const PrimFunc& f_;
    const target::GpuTarget& target_;
    std::unordered_map<const BufferNode*, layout::Layout> shared_wanted_;
    std::unordered_map<const BufferNode*, std::optional<size_t>> fill_dims_;
    std::vector<Node> nodes_;
    std::unordered_map<const BufferNode*, size_t> buffer_nodes_;
    std::vector<Constraint> constraints_;
    std::vector<size_t> reduce_sources_;
    std::vector<std::pair<const BufferNode*, std::vector<int64_t>>> shared_;
};

}  // namespace

std::string LayoutPlan::str() const {
    std::vector<std::string> lines;
    for (const auto& [b, F] : fragments) lines.push_back("fragment " + b->name + ": " + F.str());
    for (const auto& [l, F] : loops)
        lines.push_back("parallel loop " + l->var->name + " (line " + std::to_string(l->loc.line) + "): " + F.str());
    for (const auto& [b, L] : shared) lines.push_back("shared " + b->name + ": " + L.str());
    std::sort(lines.begin(), lines.end());
    std::string s;
    for (auto& l : lines) s += l + "\n";
    return s;
}

std::optional<LayoutPlan> infer_layouts(const PrimFunc& f, const target::GpuTarget& target, DiagnosticEngine* diag) {
    return Inference(f, target).run(diag);
}

}  // namespace tilec::lower
