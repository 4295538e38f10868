// The thread-level lowering's internals, shared by its files and the passes of
// gpu_passes.cpp (not a public header):
// the ThreadLowering class whose statement lowerings live in thread_lower.cpp (the
// walk, allocations, parallel loops), lower_copy.cpp (copy, fill), lower_reduce.cpp
// (reductions and the fragments of reduced shapes), lower_gemm.cpp (gemm on CUDA
// cores), lower_cumsum.cpp (scans) and lower_atomic.cpp (atomic_add). A construct outside the coverage throws Unsupported, which the entry point
// (lower_to_thread_level) turns into a located diagnostic.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "layout/fragment.h"
#include "lower/layout_inference.h"
#include "lower/thread_lower.h"
#include "target/target.h"

namespace tilec::lower::detail {

// A construct the path does not cover; caught at the entry point.
struct Unsupported {
    SourceLoc loc;
    std::string what;
};

[[noreturn]] inline void unsupported(SourceLoc loc, std::string what) {
    throw Unsupported{loc, std::move(what)};
}

// A user error that is not a gap in the coverage (e.g. more shared memory than the
// target has): reported with its message as is.
struct UserError {
    SourceLoc loc;
    std::string message;
};

// The shared-memory plan of a thread-level body (shared_plan.cpp): the body with every
// shared buffer given its arena offset (BufferNode::shared_offset), the arena's bytes,
// and whether they exceed the target's static limit (dynamic shared memory). Throws
// UserError when the arena exceeds the target's maximum.
struct SharedPlan {
    ir::Stmt body;
    int64_t bytes = 0;
    bool dynamic = false;
};
// `full_writes` maps a thread-level statement (a lowered copy or fill) to the shared
// buffer it overwrites whole: a loop whose first access to a buffer is such a write
// does not carry the buffer's value from one iteration to the next.
using FullWrites = std::unordered_map<const ir::StmtNode*, const ir::BufferNode*>;
SharedPlan plan_shared_memory(const ir::Stmt& body, const FullWrites& full_writes, const target::GpuTarget& target,
                              const std::string& kernel, SourceLoc kernel_loc);
// lower-tile-ops marks those statements with full_write nodes (so the stage between the
// passes can be printed and read back); take_full_writes removes the marks and returns
// the table the plan reads. `kept` holds the statements the table points at alive.
struct FullWritesOf {
    ir::Stmt body;
    FullWrites full_writes;
    std::vector<ir::Stmt> kept;
};
FullWritesOf take_full_writes(const ir::Stmt& body);

// The shape's extents, or nullopt if one is not a compile-time constant.
std::optional<std::vector<int64_t>> const_shape(const std::vector<ir::Expr>& shape);

// Global tensor regions (lower_copy.cpp): the indices of the region `g` at the tile
// coordinate `coord` of a tile of shape `tile` (unit dims of either side skipped);
// whether indices lie inside the tensor; whether the whole region does (the unmasked
// path's condition).
std::vector<ir::Expr> global_indices(const ir::Region& g, const std::vector<int64_t>& tile,
                                     const std::vector<ir::Expr>& coord);
ir::Expr in_bounds(const ir::Buffer& b, const std::vector<ir::Expr>& idx);
ir::Expr region_in_bounds(const ir::Region& g);

class ThreadLowering {
public:
    ThreadLowering(const ir::PrimFunc& f, const target::GpuTarget& t, LayoutPlan plan);
    // lower-tile-ops: the function at thread level, shared buffers not placed yet (no
    // arena offsets), the copies and fills that overwrite a shared buffer whole marked
    // by full_write nodes, no barriers.
    ir::PrimFunc run();

private:
    using Expr = ir::Expr;
    using Stmt = ir::Stmt;
    using Var = ir::Var;
    using Buffer = ir::Buffer;

    struct FragInfo {
        Buffer regs;
        layout::Fragment frag;
    };

    // ---- fragment assignment (thread_lower.cpp) ----------------------------------------
    // The thread split of a tile no fragment or loop decides (a shared-memory copy or
    // fill): the default of its shape. Fragments and loops take the LayoutPlan's.
    std::optional<layout::Fragment> fragment_for(const std::vector<int64_t>& shape) const;

    // One register loop: for r in unroll(regs): let coord... = F^-1(tx, r); body.
    // `body` gets the register var, the coordinate exprs (let vars) and the replica
    // number (an expr; constant 0 without replication).
    using RegBody = std::function<Stmt(const Var& r, const std::vector<Expr>& coord, const Expr& rep)>;
    Stmt register_loop(const layout::Fragment& F, SourceLoc loc, const RegBody& body);
    static Stmt guard_replica(const Expr& rep, Stmt s);

    // ---- statements (thread_lower.cpp) -------------------------------------------------
    Stmt lower(const Stmt& s);
    Buffer overwritten_shared(const Stmt& s) const;
    Stmt lower_inner(const Stmt& s);
    Stmt lower_allocate(const ir::AllocateNode& a);
    Buffer plain_buffer(const Buffer& b, SourceLoc loc);
    Expr uniform(const Expr& e);
    Stmt lower_parallel(const ir::ForNode& outer);
    struct BodyRewriter;

    // ---- copy and fill (lower_copy.cpp) ------------------------------------------------
    // One side of a copy, seen per element of the tile.
    struct Side {
        const ir::Region* region = nullptr;
        bool global = false;
        std::vector<int64_t> tile;  // the non-global buffer's shape
    };
    Side classify(const ir::Region& r, SourceLoc loc, const char* what);
    Expr read(const Side& s, const Var& r, const std::vector<Expr>& coord);
    Stmt write(const Side& s, const Var& r, const std::vector<Expr>& coord, const Expr& rep, Expr v,
               SourceLoc loc);
    Stmt lower_copy(const ir::CopyNode& c);
    Stmt lower_fill(const ir::FillNode& f);

    // ---- reductions (lower_reduce.cpp) and gemm (lower_gemm.cpp) ------------------------
    Stmt lower_reduce(const ir::ReduceNode& op);
    Stmt lower_gemm(const ir::GemmNode& g);

    // ---- cumsum (lower_cumsum.cpp) and atomic_add (lower_atomic.cpp) --------------------
    Stmt lower_cumsum(const ir::CumsumNode& op);
    Stmt lower_atomic_add(const ir::AtomicAddNode& op);

    const ir::PrimFunc& f_;
    const target::GpuTarget& target_;
    Var tx_;
    LayoutPlan plan_;  // from layout inference (layout_inference.cpp)
    std::unordered_map<const ir::BufferNode*, FragInfo> frags_;
    std::unordered_map<const ir::BufferNode*, Buffer> locals_;
    std::vector<int64_t> tileshape_;
};

}  // namespace tilec::lower::detail
