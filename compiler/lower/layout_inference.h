// Layout inference for GPU targets: which thread holds which element of every fragment
// and parallel loop, and how every shared buffer is laid out, decided for the whole
// kernel before thread-level lowering so that the lowering reads a fragment's registers
// inside a parallel loop without moving data. See layout_inference.cpp for the rules.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/ir.h"
#include "ir/pass.h"
#include "layout/fragment.h"
#include "layout/layout.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::lower {

// Kept on the function by the pass layout-inference (PrimFunc::layouts) for
// lower-tile-ops. Keys are the IR's nodes: a pass between the two that rebuilds
// buffers or loops must carry the plan over to its new nodes.
struct LayoutPlan : ir::LayoutAnnotation {
    // Every fragment buffer with a constant shape that divides among the threads.
    std::unordered_map<const ir::BufferNode*, layout::Fragment> fragments;
    // Every parallel loop nest, keyed by its outermost loop.
    std::unordered_map<const ir::ForNode*, layout::Fragment> loops;
    // Every shared buffer's layout (element offsets): row-major, or a swizzle / padding
    // an op or an @layout asked for, which lower-tile-ops applies to every access.
    std::unordered_map<const ir::BufferNode*, layout::Layout> shared;
    // Fragments whose layout came from a reduction (theirs or a relative's): they may
    // hold replicas by design (a row's result in every thread that held the row).
    std::unordered_set<const ir::BufferNode*> reduced;

    const layout::Fragment* fragment(const ir::BufferNode* b) const {
        auto it = fragments.find(b);
        return it == fragments.end() ? nullptr : &it->second;
    }
    const layout::Fragment* loop(const ir::ForNode* f) const {
        auto it = loops.find(f);
        return it == loops.end() ? nullptr : &it->second;
    }
    // One line per fragment, loop and shared buffer, sorted (the printer shows them as
    // `// layout` lines after layout-inference).
    std::string str() const override;
};

// Infers the plan of `f` on `target`. A conflict (one fragment wanted in two different
// layouts by two uses) is reported through `diag` as a located error with notes at both
// uses, and gives nullopt; without `diag`, a conflict is an internal error.
std::optional<LayoutPlan> infer_layouts(const ir::PrimFunc& f, const target::GpuTarget& target,
                                        DiagnosticEngine* diag);

}  // namespace tilec::lower
