// cluster-multicast (sm_90a, issue 12): a kernel with @cluster(x = n) runs in thread-block
// clusters of n blocks along x, and the TMA fills of its warp-specialized pipeline that
// every block of a cluster loads from the same global coordinates (their coordinates do
// not depend on block.x: gemm's A tile, shared by the blocks of one row of C tiles) are
// loaded once per cluster: each block issues 1/n of the box, rows [r * R/n, (r+1) * R/n)
// of its outermost dimension for %cluster_ctarank r, with .multicast::cluster to all n
// (PTX ISA cp.async.bulk.tensor: "the source data is multicast to the same CTA-relative
// offset as dstMem in the shared memory of each destination CTA", and so is the mbarrier
// signal), so each block's full mbarrier, which expects the whole tile's bytes as
// before, completes once every block's part landed. Then:
//  - the empty ring is cluster-wide: a producer may refill a stage in every block only
//    once the consumers of every block released it. Its mbarriers expect n * T arrivals,
//    and each consumer thread arrives on its own block's and, through mapa +
//    mbarrier.arrive.release.cluster.shared::cluster (PTX ISA "mapa", "mbarrier.arrive"),
//    on each peer's at the same offset.
//  - a cluster barrier (barrier.cluster.arrive.release / wait.acquire, PTX ISA
//    "barrier.cluster") after the mbarrier inits, so no peer's multicast or remote arrive
//    reaches an object before its mbarrier.init, and one at the kernel's end, so no block
//    exits while a peer may still write its shared memory or arrive on its mbarriers
//    (CUDA programming guide, distributed shared memory).
//  - the grid's x is rounded up to a multiple of n (a cluster launch requires it, CUDA
//    programming guide "Thread Block Clusters"); the extra blocks run the body with every
//    copy and store masked at the tensors' edges, as the blocks of a ragged edge do.
// %cluster_ctarank is block.x % n: with a cluster shape of n x 1 x 1 that tiles the grid,
// the rank (x fastest) of the block's position in its cluster.
// Nothing changes (and the attribute is dropped: a plain launch) where the target has no
// TMA multicast (only sm_90a: the PTX ISA restricts .multicast::cluster to sm_90a), where
// the kernel has no warp-role split, where the cluster spans y or z, or where no fill
// qualifies (its box's outermost dimension splits into n parts of whole 1024-byte
// swizzle patterns).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "ir/tma_maps.h"
#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

// Whether `e` reads `v`, through the let bindings of `lets` too.
bool depends_on(const Expr& e, const VarNode* v, const std::map<const VarNode*, Expr>& lets) {
    struct Find : IRVisitor {
        const VarNode* v;
        const std::map<const VarNode*, Expr>* lets;
        std::set<const VarNode*> seen;
        bool found = false;
        void visit_var(const VarNode* op) override {
            if (op == v) found = true;
            auto it = lets->find(op);
            if (it != lets->end() && seen.insert(op).second) visit(it->second);
        }
    } f;
    f.v = v;
    f.lets = &lets;
    f.visit(e);
    return f.found;
}

bool is_stage_empty(const Expr& e) {
    auto* l = e->as<LoadNode>();
    return l && l->buffer->name == "stage_empty";  // software_pipeline.cpp's empty ring
}

}  // namespace

PrimFunc cluster_multicast(const PrimFunc& f, const target::GpuTarget& target) {
    auto attr = std::find_if(f.attrs.begin(), f.attrs.end(), [](const auto& a) { return a.first == "cluster"; });
    if (attr == f.attrs.end()) return f;
    PrimFunc out = f;
    auto drop = [&] {
        out.attrs.erase(out.attrs.begin() + (attr - f.attrs.begin()));
        return out;
    };
    long long x = 1, y = 1, z = 1;
    if (std::sscanf(attr->second.c_str(), "%lldx%lldx%lld", &x, &y, &z) != 3 || x < 2 || y != 1 || z != 1 ||
        !target.tma.available || !target.arch_specific || !f.body)
        return drop();
    bool split = false;
    struct FindSplit : IRVisitor {
        bool* found;
        void visit_if(const IfNode* op) override {
            *found |= is_warp_role_split(*op);
            IRVisitor::visit_if(op);
        }
    } find_split;
    find_split.found = &split;
    find_split.visit(f.body);
    if (!split) return drop();

    const int64_t n = x;
    const VarNode* bx = f.block_idx[0].get();
    std::map<const VarNode*, Expr> lets;
    struct Lets : IRVisitor {
        std::map<const VarNode*, Expr>* lets;
        void visit_let(const LetStmtNode* op) override {
            (*lets)[op->var.get()] = op->value;
            IRVisitor::visit_let(op);
        }
    } collect;
    collect.lets = &lets;
    collect.visit(f.body);

    SourceLoc loc = f.loc;
    Expr rank = floormod(Expr(f.block_idx[0]), make_int(n));
    struct Rewrite : IRMutator {
        int64_t n;
        Expr rank;
        const VarNode* bx;
        const std::map<const VarNode*, Expr>* lets;
        int multicasts = 0;
        Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
            if (op->op == MachineOp::MbarrierInit && is_stage_empty(op->dst.at(0)))
                return make_machine_op(MachineOp::MbarrierInit, {op->imm.at(0) * n}, op->dst, op->src, op->loc);
            if (op->op == MachineOp::MbarrierArrive && op->src.empty() && op->imm.at(0) == 0 &&
                is_stage_empty(op->dst.at(0))) {
                std::vector<Stmt> v{self};
                for (int64_t q = 1; q < n; ++q)
                    v.push_back(make_machine_op(MachineOp::MbarrierArrive, {0}, op->dst,
                                                {floormod(add(rank, make_int(q)), make_int(n))}, op->loc));
                return make_seq(v, op->loc);
            }
            if (op->op != MachineOp::TmaLoad || op->src.size() != 2) return self;
            auto* g = op->src.at(0)->as<LoadNode>();
            auto* d = op->dst.at(0)->as<LoadNode>();
            if (!g || !d || d->indices.empty()) return self;
            for (const auto& i : g->indices)
                if (depends_on(i, bx, *lets)) return self;
            const size_t r = g->indices.size();
            const std::vector<size_t> dims = tma_map_dims(op->imm, r);
            if (dims.size() != r) return self;
            const int64_t outer = op->imm.at(r);  // box_{r-1}
            int64_t inner = 1;
            for (size_t i = 1; i < r; ++i) inner *= op->imm.at(i);
            const int64_t eb = (g->buffer->dtype.bits + 7) / 8;
            if (outer % n != 0 || ((outer / n) * inner * eb) % 1024 != 0) return self;
            const int64_t part = outer / n;
            std::vector<int64_t> imm = op->imm;
            imm[r] = part;
            std::vector<Expr> gi = g->indices;
            gi[dims[r - 1]] = add(gi[dims[r - 1]], mul(rank, make_int(part)));
            std::vector<Expr> di = d->indices;
            // The part's first element: whole swizzle patterns on, so the swizzle of the
            // box's start (bits 4..6 XOR 7..9 of the address) is the same.
            di.back() = add(di.back(), mul(rank, make_int(part * inner)));
            ++multicasts;
            return make_machine_op(MachineOp::TmaLoad, imm, {make_load(d->buffer, di, d->loc)},
                                   {make_load(g->buffer, gi, g->loc), op->src.at(1), make_int((int64_t{1} << n) - 1)},
                                   op->loc);
        }
    } rw;
    rw.n = n;
    rw.rank = rank;
    rw.bx = bx;
    rw.lets = &lets;
    Stmt body = rw.mutate(f.body);
    if (rw.multicasts == 0) return drop();

    // The cluster barriers: after the first block barrier of the kernel's top-level
    // sequence (the one after the mbarrier inits) and at its end.
    auto cluster_sync = [&] {
        return std::vector<Stmt>{make_machine_op(MachineOp::ClusterArrive, {}, {}, {}, loc),
                                 make_machine_op(MachineOp::ClusterWait, {}, {}, {}, loc)};
    };
    struct Place : IRMutator {
        std::function<std::vector<Stmt>()> sync;
        bool done = false;
        Stmt mutate_seq(const SeqNode* op, const Stmt& self) override {
            if (done) return self;
            size_t at = op->stmts.size();
            for (size_t i = 0; i < op->stmts.size() && at == op->stmts.size(); ++i)
                if (op->stmts[i]->as<BarrierNode>()) at = i + 1;
            if (at == op->stmts.size()) return self;
            done = true;
            std::vector<Stmt> v(op->stmts.begin(), op->stmts.begin() + static_cast<std::ptrdiff_t>(at));
            for (auto& s : sync()) v.push_back(s);
            v.insert(v.end(), op->stmts.begin() + static_cast<std::ptrdiff_t>(at), op->stmts.end());
            for (auto& s : sync()) v.push_back(s);
            return make_seq(v, op->loc);
        }
        // Only through the allocations around the top-level sequence.
        Stmt mutate_allocate(const AllocateNode* op, const Stmt& self) override {
            Stmt b = mutate(op->body);
            return b == op->body ? self : make_allocate(op->buffer, b, op->loc);
        }
        Stmt mutate_if(const IfNode*, const Stmt& self) override { return self; }
        Stmt mutate_for(const ForNode*, const Stmt& self) override { return self; }
        Stmt mutate_let(const LetStmtNode*, const Stmt& self) override { return self; }
    } place;
    place.sync = cluster_sync;
    body = place.mutate(body);
    if (!place.done) return drop();  // no top-level barrier after the inits: left alone
    out.body = body;
    out.attrs[static_cast<size_t>(attr - f.attrs.begin())].second = std::to_string(n) + "x1x1";
    out.grid[0] = mul(floordiv(add(f.grid[0], make_int(n - 1)), make_int(n)), make_int(n));
    return out;
}

}  // namespace tilec::lower
