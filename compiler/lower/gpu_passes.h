// The GPU pass pipeline: tile-level Tile IR in, thread-level Tile IR for one target out
// (what the NVPTX / AMDGPU backends and the simulator read). One list, built by one
// function, used by `tilec`, `tilec run`, `tilec opt` and the tests, so every stage can
// be printed (--print-after=NAME), timed (--time-passes) and tested alone (tilec opt).
//
//   tensorize            slot: each gemm's instruction and warp partition from the
//                        target's table (tensor cores; no-op today)
//   layout-inference     fragments, parallel loops and shared buffers get their layouts,
//                        kept on the function (PrimFunc::layouts)
//   software-pipeline    slot: multi-buffering and the stage schedule of `pipelined`
//                        loops (no-op today: they run in order)
//   lower-tile-ops       every tile op and parallel loop to what one thread does, by the
//                        layouts (level thread; whole-buffer writes marked full_write)
//   plan-shared-memory   every shared buffer its bytes in the block's arena (liveness-
//                        based sharing); PrimFunc::shared_bytes / dynamic_shared
//   insert-async-waits   slot: cp.async commit / wait placement (no-op today)
//   place-barriers       block barriers where shared- or global-memory hazards need them
//   verify-thread-level  the thread-level invariants (a failure is an internal error)
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/pass.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::lower {

// The passes above, in order, for `target`.
std::vector<ir::Pass> build_gpu_passes(const target::GpuTarget& target);

// Tile level -> thread level: every pass of build_gpu_passes in order, the IR verified
// after each. A construct the GPU path does not cover, or a layout conflict, is
// reported through `diag` at its location ("... is not supported for GPU targets yet")
// and gives nullopt; without `diag` it is an internal error.
std::optional<ir::PrimFunc> lower_to_thread_level(const ir::PrimFunc& f, const target::GpuTarget& target,
                                                  DiagnosticEngine* diag);

}  // namespace tilec::lower
