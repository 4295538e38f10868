// The GPU pass pipeline: tile-level Tile IR in, thread-level Tile IR for one target out
// (what the NVPTX / AMDGPU backends and the simulator read). One list, built by one
// function, used by `tilec`, `tilec run`, `tilec opt` and the tests, so every stage can
// be printed (--print-after=NAME), timed (--time-passes) and tested alone (tilec opt).
//
//   layout-inference     fragments, parallel loops and shared buffers get their layouts,
//                        kept on the function (PrimFunc::layouts); a gemm the target's
//                        tensor cores take (ops/gemm_mma.cpp) fixes its accumulator to
//                        the mma fragment of its warp split and swizzles its operands
//   lower-tile-ops       every tile op and parallel loop to what one thread does, by the
//                        layouts (level thread; whole-buffer writes marked full_write;
//                        gemm to ldmatrix + mma.sync, global->shared copies to cp.async
//                        where the target has them; swizzled shared buffers flattened)
//   hoist-accumulator-scale  gfx942 fp8 gemms' quarter-scale accumulator pair out of
//                        K loops that use the accumulator only in the MFMAs
//   insert-async-waits   cp.async.wait_group 0 before the first touch of bytes in flight
//   software-pipeline    `pipelined` loops: their cp.async fills issued stages - 1
//                        iterations ahead into multi-buffered shared buffers, with
//                        wait_group stages - 2; other pipelined loops run in order
//   plan-shared-memory   every shared buffer its bytes in the block's arena (liveness-
//                        based sharing); PrimFunc::shared_bytes / dynamic_shared
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
