// cluster-multicast (sm_90a, issue 12): a kernel with @cluster(x = a, y = b) runs in
// thread-block clusters of a x b blocks, and the TMA fills of its warp-specialized
// pipeline that several blocks of a cluster load from the same global coordinates are
// loaded once for them:
//  - a fill whose coordinates do not depend on block.x (gemm's A tile, shared by the
//    blocks of one row of C tiles) is shared by the a blocks of the same cluster row
//    (same block.y): the block at cluster position cx issues rows [cx R/a, (cx+1) R/a)
//    of the box's outermost dimension with .multicast::cluster to its row;
//  - else, one whose coordinates do not depend on block.y (gemm's B tile, shared by the
//    blocks of one column of C tiles) is shared by the b blocks of the same cluster column
//    (same block.x): the block at cy issues rows [cy R/b, (cy+1) R/b) to its column.
// PTX ISA cp.async.bulk.tensor: "the source data is multicast to the same CTA-relative
// offset as dstMem in the shared memory of each destination CTA", and so is the mbarrier
// signal; so each block's full mbarrier, which expects the whole tiles' bytes as before,
// completes once every part of every tile landed (A's parts from its row, B's from its
// column).
//
// Ranks. The cluster tiles the grid (CUDA programming guide, "Thread Block Clusters": the
// grid a multiple of the cluster in each dimension), so the block's %cluster_ctaid is
// (cx, cy) = (block.x % a, block.y % b), and its %cluster_ctarank, the bit of ctaMask that
// names it, is cx + cy * a. The PTX ISA ("Special Registers": %cluster_ctarank, "a CTA
// identifier in a cluster across all dimensions", 0 .. %cluster_nctarank - 1) does not
// spell the order out; it is x fastest: CUTLASS's sm90 mainloop
// (NVIDIA/cutlass include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp)
// builds its multicast masks as 1 << Layout<ClusterShape>{}(ctaid.x, ctaid.y, 0), CuTe's
// default column-major layout, i.e. bit ctaid.x + ctaid.y * nctaid.x, and sim/cluster.h
// models the same order. So A's ctaMask is (2^a - 1) << (cy a), B's is
// (sum_{j < b} 2^(j a)) << cx.
//
// The empty ring (the protocol). Block W's producer, once its empty mbarrier of stage s
// completes, issues every fill of the stage: A's part into every block of its row, B's
// into every block of its column. So before that phase completes, the consumers of every
// block W writes into must have released stage s: the peers of W are its row (when some
// fill multicasts along x) united with its column (when some fill multicasts along y),
// (a + b - 1) blocks with both (W counted once; the other blocks of the cluster neither
// write into W's stage nor are written by W). The relation is symmetric (W writes into P
// iff P writes into W), so each consumer thread, releasing stage s, arrives on its own
// block's empty mbarrier and, through mapa + mbarrier.arrive.release.cluster.
// shared::cluster (PTX ISA "mapa", "mbarrier.arrive"), on each peer's at the same offset,
// and the empty mbarriers expect (peers) * T arrivals (CUTLASS's PipelineTmaAsync
// initialises its empty barriers to (cluster x + cluster y - 1) consumers alike). No
// arrival of one use of the stage can count toward the previous phase: P's consumers
// release use k + 1 of stage s only after P's full mbarrier saw every part of fill k + 1,
// W's among them, which W issued only after its empty phase of use k completed; had a
// block that W does not write into arrived on W's barrier, that argument would not hold
// (its arrivals could run a use ahead), which is why the peers are exactly the blocks W
// writes into and no more. The full mbarriers likewise: a peer's complete-tx of use k + 1
// comes after P released use k, so after P's full phase k completed.
//  - a cluster barrier (barrier.cluster.arrive.release / wait.acquire, PTX ISA
//    "barrier.cluster") after the mbarrier inits, so no peer's multicast or remote arrive
//    reaches an object before its mbarrier.init, and one at the kernel's end, so no block
//    exits while a peer may still write its shared memory or arrive on its mbarriers
//    (CUDA programming guide, distributed shared memory).
//  - the grid's x is rounded up to a multiple of a and its y to one of b (a cluster launch
//    requires it); the extra blocks run the body with every copy and store masked at the
//    tensors' edges, as the blocks of a ragged edge do.
// Nothing changes (and the attribute is dropped: a plain launch) where the target has no
// TMA multicast (only sm_90a: the PTX ISA restricts .multicast::cluster to sm_90a), where
// the kernel has no warp-role split, where the cluster spans z, or where no fill
// qualifies (its box's outermost dimension splits into a (b) parts of whole 1024-byte
// swizzle patterns); a one-dimensional grid ignores y (no blocks along y to share with).
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
    if (std::sscanf(attr->second.c_str(), "%lldx%lldx%lld", &x, &y, &z) != 3 || x * y < 2 || z != 1 ||
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

    // A grid of one dimension has no blocks along y to share with (and rounding its y up
    // would run the whole grid again): y is left out there.
    const int64_t a = x, b = f.grid.size() >= 2 ? y : 1;
    if (a * b < 2) return drop();
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
    // %cluster_ctaid (cx, cy) and the rank of a position (see the top comment); a 1-wide
    // dimension adds nothing (so an a x 1 cluster's code is the x-only code it always was).
    const Expr cx = a > 1 ? floormod(Expr(f.block_idx[0]), make_int(a)) : make_int(0);
    const Expr cy = b > 1 ? floormod(Expr(f.block_idx[1]), make_int(b)) : make_int(0);
    auto rank_of = [a, b](const Expr& px, const Expr& py) {
        if (b == 1) return px;
        if (a == 1) return py;
        return add(px, mul(py, make_int(a)));
    };
    // The ctaMasks of a block's row and of its column.
    int64_t column_bits = 0;
    for (int64_t j = 0; j < b; ++j) column_bits |= int64_t{1} << (j * a);
    const Expr row_mask = b > 1 ? make_binary(BinaryOp::Shl, make_int((int64_t{1} << a) - 1), mul(cy, make_int(a)))
                                : make_int((int64_t{1} << a) - 1);
    const Expr column_mask = a > 1 ? make_binary(BinaryOp::Shl, make_int(column_bits), cx) : make_int(column_bits);

    // The fills: each multicast among its row (x) or its column (y).
    struct Fills : IRMutator {
        int64_t a, b;
        Expr cx, cy, row_mask, column_mask;
        const VarNode* bx;
        const VarNode* by;
        const std::map<const VarNode*, Expr>* lets;
        bool along_x = false, along_y = false;
        Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
            if (op->op != MachineOp::TmaLoad || op->src.size() != 2) return self;
            auto* g = op->src.at(0)->as<LoadNode>();
            auto* d = op->dst.at(0)->as<LoadNode>();
            if (!g || !d || d->indices.empty()) return self;
            auto free_of = [&](const VarNode* v) {
                for (const auto& i : g->indices)
                    if (depends_on(i, v, *lets)) return false;
                return true;
            };
            if (a > 1 && free_of(bx))
                if (Stmt s = multicast(op, g, d, a, cx, row_mask); s) {
                    along_x = true;
                    return s;
                }
            if (b > 1 && (!by || free_of(by)))
                if (Stmt s = multicast(op, g, d, b, cy, column_mask); s) {
                    along_y = true;
                    return s;
                }
            return self;
        }
        // The fill split in n parts, part `part_index` issued here to the CTAs of `mask`;
        // null where the box does not split into whole swizzle patterns.
        Stmt multicast(const MachineOpNode* op, const LoadNode* g, const LoadNode* d, int64_t n,
                       const Expr& part_index, const Expr& mask) {
            const size_t r = g->indices.size();
            const std::vector<size_t> dims = tma_map_dims(op->imm, r);
            if (dims.size() != r) return nullptr;
            const int64_t outer = op->imm.at(r);  // box_{r-1}
            int64_t inner = 1;
            for (size_t i = 1; i < r; ++i) inner *= op->imm.at(i);
            const int64_t eb = (g->buffer->dtype.bits + 7) / 8;
            if (outer % n != 0 || ((outer / n) * inner * eb) % 1024 != 0) return nullptr;
            const int64_t part = outer / n;
            std::vector<int64_t> imm = op->imm;
            imm[r] = part;
            std::vector<Expr> gi = g->indices;
            gi[dims[r - 1]] = add(gi[dims[r - 1]], mul(part_index, make_int(part)));
            std::vector<Expr> di = d->indices;
            // The part's first element: whole swizzle patterns on, so the swizzle of the
            // box's start (bits 4..6 XOR 7..9 of the address) is the same.
            di.back() = add(di.back(), mul(part_index, make_int(part * inner)));
            return make_machine_op(MachineOp::TmaLoad, imm, {make_load(d->buffer, di, d->loc)},
                                   {make_load(g->buffer, gi, g->loc), op->src.at(1), mask}, op->loc);
        }
    } fills;
    fills.a = a;
    fills.b = b;
    fills.cx = cx;
    fills.cy = cy;
    fills.row_mask = row_mask;
    fills.column_mask = column_mask;
    fills.bx = f.block_idx[0].get();
    fills.by = f.block_idx[1] ? f.block_idx[1].get() : nullptr;
    fills.lets = &lets;
    Stmt body = fills.mutate(f.body);
    if (!fills.along_x && !fills.along_y) return drop();

    // The empty ring: the peers are the blocks this one's fills write into (its row, its
    // column, or both), the same blocks whose fills write into it.
    std::vector<Expr> peers;
    if (fills.along_x)
        for (int64_t q = 1; q < a; ++q) peers.push_back(rank_of(floormod(add(cx, make_int(q)), make_int(a)), cy));
    if (fills.along_y)
        for (int64_t q = 1; q < b; ++q) peers.push_back(rank_of(cx, floormod(add(cy, make_int(q)), make_int(b))));
    struct Ring : IRMutator {
        const std::vector<Expr>* peers;
        Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
            const int64_t n = static_cast<int64_t>(peers->size()) + 1;
            if (op->op == MachineOp::MbarrierInit && is_stage_empty(op->dst.at(0)))
                return make_machine_op(MachineOp::MbarrierInit, {op->imm.at(0) * n}, op->dst, op->src, op->loc);
            if (op->op == MachineOp::MbarrierArrive && op->src.empty() && op->imm.at(0) == 0 &&
                is_stage_empty(op->dst.at(0))) {
                std::vector<Stmt> v{self};
                for (const auto& p : *peers)
                    v.push_back(make_machine_op(MachineOp::MbarrierArrive, {0}, op->dst, {p}, op->loc));
                return make_seq(v, op->loc);
            }
            return self;
        }
    } ring;
    ring.peers = &peers;
    body = ring.mutate(body);

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
    out.attrs[static_cast<size_t>(attr - f.attrs.begin())].second =
        std::to_string(a) + "x" + std::to_string(b) + "x1";
    auto round_up = [](const Expr& e, int64_t n) { return mul(floordiv(add(e, make_int(n - 1)), make_int(n)), make_int(n)); };
    if (a > 1) out.grid[0] = round_up(out.grid[0], a);
    if (b > 1) out.grid[1] = round_up(out.grid[1], b);
    return out;
}

}  // namespace tilec::lower
