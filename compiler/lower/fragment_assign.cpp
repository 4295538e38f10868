// The default Fragment of a tile shape: what layout inference (layout_inference.cpp)
// gives a fragment or loop that no op, copy or loop constrains, and the thread split of
// copies and fills of shared memory.
#include <array>

#include "lower/thread_lower.h"

namespace tilec::lower {

std::optional<layout::Fragment> assign_fragment(const std::vector<int64_t>& shape, int64_t threads) {
    if (shape.empty() || threads <= 0) return std::nullopt;
    int64_t n = 1;
    for (int64_t e : shape) {
        if (e <= 0) return std::nullopt;
        n *= e;
    }
    // Vectors of 4 make a thread's accesses 16 bytes for f32 (8 for 16-bit types), which
    // the NVPTX load/store vectoriser turns into ld.global.v4 where the mask allows; the
    // width depends on the shape only so that fragments of different element types
    // (an f16 tensor copied into an f32 fragment) still agree.
    constexpr std::array<int64_t, 3> widths = {4, 2, 1};
    // First choice: a width that gives every thread at least one full vector (no replicas).
    for (int64_t vw : widths)
        if (shape.back() % vw == 0 && n >= threads * vw)
            if (auto f = layout::Fragment::parallel(shape, threads, vw)) return f;
    // A tile smaller than the block: spare threads hold replicas; scalars first, so
    // as many threads as possible hold distinct elements.
    for (int64_t vw : {int64_t{1}, int64_t{2}, int64_t{4}})
        if (shape.back() % vw == 0)
            if (auto f = layout::Fragment::parallel(shape, threads, vw)) return f;
    return std::nullopt;
}

bool is_thread_level(const ir::PrimFunc& f) { return f.level == ir::FuncLevel::Thread; }

}  // namespace tilec::lower
