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

struct LayoutPlan {
    // Every fragment buffer with a constant shape that divides among the threads.
    std::unordered_map<const ir::BufferNode*, layout::Fragment> fragments;
    // Every parallel loop nest, keyed by its outermost loop.
    std::unordered_map<const ir::ForNode*, layout::Fragment> loops;
    // Every shared buffer: row-major for now (a Layout, so swizzles can come later).
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
    // One line per fragment, loop and shared buffer (for --print-after and tests).
    std::string str() const;
};

// Infers the plan of `f` on `target`. A conflict (one fragment wanted in two different
// layouts by two uses) is reported through `diag` as a located error with notes at both
// uses, and gives nullopt; without `diag`, a conflict is an internal error.
std::optional<LayoutPlan> infer_layouts(const ir::PrimFunc& f, const target::GpuTarget& target,
                                        DiagnosticEngine* diag);

// The pass "layout-inference" (before "lower-thread-level", which infers again, so the
// two stay independent): reports conflicts through the context's DiagnosticEngine, and
// with the context option {"print-layouts", "1"} (the driver's
// --print-after=layout-inference) prints the plan to standard error. The IR is unchanged.
ir::Pass layout_inference_pass(const target::GpuTarget& target);

}  // namespace tilec::lower
