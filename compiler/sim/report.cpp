// The simulator's reports: issue text, the counter table of --profile, and the
// barrier-free variant of a function that tests of the race check run.
#include <cstdio>

#include "ir/visitor.h"
#include "sim/sim.h"

namespace tilec::sim {

const char* issue_kind_name(IssueKind k) {
    switch (k) {
    case IssueKind::Race: return "race";
    case IssueKind::OutOfBounds: return "out-of-bounds";
    case IssueKind::Uninitialized: return "uninitialised read";
    case IssueKind::BarrierDivergence: return "divergent barrier";
    case IssueKind::Arithmetic: return "arithmetic";
    case IssueKind::InputWrite: return "input write";
    case IssueKind::ShuffleDivergence: return "divergent shuffle";
    case IssueKind::ShuffleSource: return "shuffle source";
    case IssueKind::ShuffleOperand: return "shuffle operand";
    case IssueKind::SharedOverlap: return "overlapping shared buffers";
    case IssueKind::WarpCollective: return "divergent warp instruction";
    case IssueKind::MatrixAddress: return "ldmatrix address";
    case IssueKind::AsyncCopy: return "async copy";
    case IssueKind::AsyncRead: return "async read";
    case IssueKind::Mbarrier: return "mbarrier";
    case IssueKind::ProxyFence: return "proxy fence";
    case IssueKind::Tma: return "tma";
    case IssueKind::Misaligned: return "misaligned vector access";
    case IssueKind::Cluster: return "cluster";
    }
    return "?";
}

namespace {

std::string where(SourceLoc loc, const SourceManager* sources) {
    if (!loc.valid()) return "";
    std::string out;
    if (sources && loc.file != 0 && loc.file <= sources->file_count()) out = sources->path(loc.file) + ":";
    return out + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
}

}  // namespace

std::string Issue::str(const SourceManager* sources) const {
    std::string out = where(loc, sources) + message + " (block " + std::to_string(block[0]) + ", " +
                      std::to_string(block[1]) + ", " + std::to_string(block[2]) + ", thread " +
                      std::to_string(thread) + ")";
    if (count > 1) out += ", " + std::to_string(count) + " times";
    return out;
}

ir::PrimFunc drop_barriers(const ir::PrimFunc& f) {
    struct Drop : ir::IRMutator {
        ir::Stmt mutate_barrier(const ir::BarrierNode* op, const ir::Stmt&) override {
            return ir::make_seq({}, op->loc);
        }
    } drop;
    ir::PrimFunc out = f;
    out.body = drop.mutate(f.body);
    return out;
}

std::optional<ir::PrimFunc> drop_sync(const ir::PrimFunc& f, SyncKind kind, int64_t index) {
    struct Drop : ir::IRMutator {
        SyncKind kind;
        int64_t index, seen = 0;
        bool dropped = false;
        ir::Stmt hit(const ir::Stmt& self) {
            if (seen++ != index) return self;
            dropped = true;
            return ir::make_seq({}, self->loc);
        }
        ir::Stmt mutate_barrier(const ir::BarrierNode*, const ir::Stmt& self) override {
            return kind == SyncKind::Barrier ? hit(self) : self;
        }
        ir::Stmt mutate_machine_op(const ir::MachineOpNode* op, const ir::Stmt& self) override {
            bool match = (kind == SyncKind::AsyncWait && op->op == ir::MachineOp::CpAsyncWait) ||
                         (kind == SyncKind::WgmmaWait && op->op == ir::MachineOp::WgmmaWait) ||
                         (kind == SyncKind::MbarrierWait && op->op == ir::MachineOp::MbarrierWait) ||
                         (kind == SyncKind::ProxyFence && op->op == ir::MachineOp::FenceProxyAsync) ||
                         (kind == SyncKind::BulkWaitRead && op->op == ir::MachineOp::BulkWaitRead) ||
                         (kind == SyncKind::NamedBarrier && op->op == ir::MachineOp::NamedBarrier) ||
                         (kind == SyncKind::BarrierArrive && op->op == ir::MachineOp::BarrierArrive) ||
                         (kind == SyncKind::ClusterWait && op->op == ir::MachineOp::ClusterWait) ||
                         (kind == SyncKind::RemoteArrive && op->op == ir::MachineOp::MbarrierArrive && !op->src.empty());
            return match ? hit(self) : self;
        }
    } drop;
    drop.kind = kind;
    drop.index = index;
    ir::PrimFunc out = f;
    out.body = drop.mutate(f.body);
    if (!drop.dropped) return std::nullopt;
    return out;
}

std::string format_counters(const Result& r, const SourceManager* sources) {
    std::string out = "memory counters per source line (warp " + std::to_string(r.warp_size) + ", " +
                      std::to_string(r.blocks_run) + (r.blocks_run == 1 ? " block" : " blocks") + "):\n";
    if (r.counters.empty()) return out + "  (no global or shared accesses)\n";
    char buf[256];
    for (const auto& c : r.counters) {
        std::string loc = where(c.loc, sources);
        if (!loc.empty()) loc.resize(loc.size() - 2);  // without ": "
        const char* what = c.shared ? (c.store ? "shared store" : "shared load")
                                    : (c.store ? "global store" : "global load");
        double lanes = c.requests ? static_cast<double>(c.lanes) / static_cast<double>(c.requests) : 0;
        if (c.shared)
            std::snprintf(
                buf, sizeof buf,
                "%s: %lld requests (%.1f accesses each), %lld wavefronts, ideal %lld, bank conflicts %lld",
                what, static_cast<long long>(c.requests), lanes, static_cast<long long>(c.transactions),
                static_cast<long long>(c.ideal), static_cast<long long>(c.transactions - c.ideal));
        else
            std::snprintf(buf, sizeof buf,
                          "%s: %lld requests (%.1f accesses each), %lld sectors, ideal %lld (%.2f per ideal)",
                          what, static_cast<long long>(c.requests), lanes,
                          static_cast<long long>(c.transactions), static_cast<long long>(c.ideal),
                          c.ideal ? static_cast<double>(c.transactions) / static_cast<double>(c.ideal) : 0.0);
        out += "  " + (loc.empty() ? std::string("(unknown line)") : loc) + ": " + buf + "\n";
    }
    return out;
}

}  // namespace tilec::sim
