// The thread-level lowering's internals, shared by its files and the passes of
// gpu_passes.cpp (not a public header):
// the ThreadLowering class whose statement lowerings live in thread_lower.cpp (the
// walk, allocations, parallel loops); each tile op's own lowering is in its home,
// compiler/ops/<op>.cpp, which sees this class through ops::LowerContext. A construct
// outside the coverage throws Unsupported, which the entry point
// (the passes of gpu_passes.cpp) turn into a located diagnostic.
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
#include "ops/context.h"
#include "ops/lower_util.h"
#include "target/target.h"

namespace tilec::lower::detail {

// A construct the path does not cover (thrown here and by the ops' lowerings); caught
// at the entry point.
using ops::Unsupported;
using ops::unsupported;

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
SharedPlan plan_shared_memory(const ir::Stmt& body, const FullWrites& full_writes,
                              const target::GpuTarget& target, int64_t threads, const std::string& kernel,
                              SourceLoc kernel_loc);
// lower-tile-ops marks those statements with full_write nodes (so the stage between the
// passes can be printed and read back); take_full_writes removes the marks and returns
// the table the plan reads. `kept` holds the statements the table points at alive.
struct FullWritesOf {
    ir::Stmt body;
    FullWrites full_writes;
    std::vector<ir::Stmt> kept;
};
FullWritesOf take_full_writes(const ir::Stmt& body);

// Every shared buffer whose planned layout is not row-major made a 1-d buffer of the
// layout's codomain, each access at the layout's offset (shared_layouts.cpp).
ir::Stmt apply_shared_layouts(const ir::Stmt& body, const LayoutPlan& plan);

// Shapes and global regions (ops/lower_util.h).
using ops::const_shape;
using ops::global_indices;
using ops::in_bounds;
using ops::region_in_bounds;

class ThreadLowering : public ops::LowerContext {
public:
    // `plan` (layout inference's, on f.layouts) must outlive the lowering.
    ThreadLowering(const ir::PrimFunc& f, const target::GpuTarget& t, const LayoutPlan& plan);
    // lower-tile-ops: the function at thread level, shared buffers not placed yet (no
    // arena offsets), the copies and fills that overwrite a shared buffer whole marked
    // by full_write nodes, no barriers.
    ir::PrimFunc run();

    // ---- what the ops' lowerings see (ops/context.h) -------------------------------------
    const target::GpuTarget& gpu_target() const override { return target_; }
    int64_t threads() const override { return f_.threads; }
    ir::Var thread_idx() const override { return tx_; }
    std::string attr(const std::string& name) const override { return ops::func_attr(f_, name); }
    const layout::Layout* shared_layout(const ir::Buffer& b) const override {
        auto it = plan_.shared.find(b.get());
        return it == plan_.shared.end() ? nullptr : &it->second;
    }
    const Registers& registers(const ir::Buffer& fragment) const override {
        auto it = frags_.find(fragment.get());
        if (it == frags_.end()) TILEC_ICE("thread-level lowering: fragment '" + fragment->name + "' not allocated");
        return it->second;
    }
    std::optional<layout::Fragment> default_fragment(const std::vector<int64_t>& shape) const override {
        return fragment_for(shape);
    }
    ir::Stmt register_loop(const layout::Fragment& F, SourceLoc loc, const RegBody& body) override;
    ir::Expr uniform(const ir::Expr& e) override;
    Footprint kernel_footprint() const override;

private:
    using Expr = ir::Expr;
    using Stmt = ir::Stmt;
    using Var = ir::Var;
    using Buffer = ir::Buffer;

    using FragInfo = Registers;

    // ---- fragment assignment (thread_lower.cpp) ----------------------------------------
    // The thread split of a tile no fragment or loop decides (a shared-memory copy or
    // fill): the default of its shape. Fragments and loops take the LayoutPlan's.
    std::optional<layout::Fragment> fragment_for(const std::vector<int64_t>& shape) const;

    // A store a replica thread must not repeat (ops/lower_util.h).
    static Stmt guard_replica(const Expr& rep, Stmt s) { return ops::guard_replica(rep, std::move(s)); }

    // ---- statements (thread_lower.cpp) -------------------------------------------------
    Stmt lower(const Stmt& s);
    Buffer overwritten_shared(const Stmt& s) const;
    Stmt lower_inner(const Stmt& s);
    Stmt lower_allocate(const ir::AllocateNode& a);
    Buffer plain_buffer(const Buffer& b, SourceLoc loc);
    Stmt lower_parallel(const ir::ForNode& outer);
    struct BodyRewriter;

    const ir::PrimFunc& f_;
    const target::GpuTarget& target_;
    Var tx_;
    const LayoutPlan& plan_;  // from layout inference (layout_inference.cpp)
    std::unordered_map<const ir::BufferNode*, FragInfo> frags_;
    std::unordered_map<const ir::BufferNode*, Buffer> locals_;
};

}  // namespace tilec::lower::detail
