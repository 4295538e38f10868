// The pieces of the GPU lowering that other stages and the tests call directly: the
// default fragment of a tile, barrier placement, the thread-level invariants. The pass
// list that runs the lowering is in gpu_passes.h; this comment says what it covers.
//
// Coverage today (the thinnest end-to-end path): element-wise kernels. `copy` between
// a global region and a whole fragment or shared buffer (or between two whole
// non-global buffers of one shape), `fill` of a fragment or shared buffer, `parallel`
// loops whose fragment stores are at the loop's own coordinates (a read elsewhere goes
// through a copy of the fragment published in shared memory before the loop; fragments
// smaller than the block are replicated), serial loops, `if`,
// `let`, `var` locals, shared memory up to the target's static limit; and row
// reductions: reduce_sum / max / min / absmax of a whole fragment over one dimension
// into a whole fragment (dim dropped or kept as 1), the layouts planned by layout
// inference (layout_inference.h: the destination is the source reduced,
// Fragment::reduce_dim, replicated over the threads that held a row):
// per-thread partials, a shared scratch [rows x replicas] (a barrier between its
// writes and reads), every replica folding the row's partials. A parallel loop may read such a fragment at all
// its coordinates but the reduced one (m[i] in `for i, c`), also over a wider shape than
// the source's (inference expands the layout, Fragment::expand_dim).
// gemm on CUDA cores: whole shared a and b (trans_a / trans_b / clear) into a whole
// fragment, each thread's registers of c accumulated over k (serial k loop around the
// unrolled register loop) with mul and add in c's type; `pipelined` loops run in order.
// cumsum of a whole fragment into a whole fragment (a chunked scan through shared
// memory, ops/cumsum.cpp); atomic_add of a whole fragment into a global region of
// f32, f64 or 32/64-bit integers (one relaxed atomic add per register, masked,
// ops/atomic_add.cpp).
// Anything else (tensor-core gemm, print, assert, cumsum of shared / local tiles,
// atomic_add into shared memory or narrow tensors, reduce of shared memory or into a
// differently laid out fragment, f8 / 4-bit data, f64 exp and friends, ...) is
// refused: a user error with its location when a DiagnosticEngine is given, an
// internal error otherwise.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/pass.h"
#include "layout/fragment.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::lower {

// Whether `f` is thread level (PrimFunc::level; set by lower-tile-ops).
bool is_thread_level(const ir::PrimFunc& f);

// The Fragment the lowering gives a tile of `shape` (a fragment buffer, a parallel
// loop, the thread split of a copy) on `threads` threads (fragment_assign.cpp):
// Fragment::parallel with vectors of 4 when the innermost extent allows it and every
// thread gets a full vector, else 2, else 1: the default layout inference falls back on
// where nothing constrains a fragment or loop. nullopt if the tile does not divide among
// the threads.
std::optional<layout::Fragment> assign_fragment(const std::vector<int64_t>& shape, int64_t threads);

// Barrier placement (barrier_placement.cpp; the pass place-barriers, after the
// shared-memory plan): drops the barriers in a thread-level body of a block of
// `threads` threads and inserts block barriers only where two accesses of shared memory
// (by byte range in the planned arena: shared_offset) or of one global tensor, one a
// write, may come from different threads with no barrier between them, including around
// loop back edges; never under an `if` or loop bound that depends on the thread (its
// index, or a register that differs between threads).
ir::Stmt place_barriers(const ir::Stmt& body, int64_t threads);

// hoist-accumulator-scale (accumulator_scale.cpp, right after lower-tile-ops): the
// quarter-scale pair `acc *= 0.25` ... `acc *= 4` of gfx942's fp8 gemm lowering
// (ops/gemm_mfma.h, kFp8ScaleVar) out of each serial / pipelined loop whose body holds
// one such pair and touches acc otherwise only as MFMA accumulators.
ir::Stmt hoist_accumulator_scale(const ir::Stmt& body);

// insert-async-waits (async_waits.cpp, right after lower-tile-ops): a
// cp.async.wait_group 0 before the first access of shared bytes a cp.async issued
// before it may still be writing.
ir::Stmt insert_async_waits(const ir::Stmt& body);
// software-pipeline (software_pipeline.cpp, after insert-async-waits): the cp.async
// fills of a pipelined loop issued stages - 1 iterations ahead into multi-buffered
// shared buffers, with its own commit / wait_group; other loops of kind pipelined serial.
// On sm_90a, GEMM loops whose fills all have TMA forms get producer / consumer warp roles
// (split-warp-roles finishes them). On AMD (vector fills, no cp.async) the next tile is
// staged through registers into a second stage, where the target's registers and LDS
// leave room for it. Reads f's threads and its warp_specialize attribute.
ir::Stmt software_pipeline(const ir::PrimFunc& f, const target::GpuTarget& target);
// split-warp-roles (split_warp_roles.cpp, after place-barriers): a warp-role split left by
// software-pipeline moves to the top of the kernel, the block grows by the producer
// warpgroup, the consumers' barriers become named barriers. Other functions unchanged.
ir::PrimFunc split_warp_roles(const ir::PrimFunc& f);
// pingpong-consumers (pingpong_consumers.cpp, right after split-warp-roles): with two
// consumer warpgroups, FlashAttention-3's ping-pong: the warpgroups take turns issuing
// the first wgmma group of an attention-like loop body (named barriers 2 and 3), unless
// the kernel says @pingpong(false). Other functions unchanged.
ir::PrimFunc pingpong_consumers(const ir::PrimFunc& f);
// cluster-multicast (cluster_multicast.cpp, after pingpong-consumers): @cluster(x = a,
// y = b) on sm_90a: thread-block clusters of a x b, the warp-specialized TMA fills that the
// blocks of a cluster row (fills free of block.x) or of a cluster column (free of
// block.y) load alike multicast among them (each block issues its share of the box), a
// cluster-wide empty ring over each block's row and column peers, cluster barriers after
// the inits and at the end, the grid's x and y multiples of a and b. Elsewhere (or with
// nothing to multicast) the attribute is dropped.
ir::PrimFunc cluster_multicast(const ir::PrimFunc& f, const target::GpuTarget& target);
// overlap-softmax-gemm (overlap_softmax_gemm.cpp, tile level, before layout-inference):
// on sm_90a, an attention loop (fill, GEMM, softmax, fill, GEMM with A in registers) is
// rotated so that iteration j issues its first GEMM and then iteration j - 1's second,
// FlashAttention-3's intra-warpgroup overlap, where no buffer dependence forbids it.
ir::PrimFunc overlap_softmax_gemm(const ir::PrimFunc& f, const target::GpuTarget& target);
// sink-wgmma-waits (sink_wgmma_waits.cpp, last before the verifier): on sm_90a each
// wgmma_wait moves down to the first statement that needs its group's registers (or
// does what must follow it), past other groups' issue, counting their commits.
ir::PrimFunc sink_wgmma_waits(const ir::PrimFunc& f, const target::GpuTarget& target);
// `s` with a new variable for every let and loop it binds (a statement placed twice must
// not bind one variable twice).
ir::Stmt with_fresh_binders(const ir::Stmt& s);
// `s` with a new buffer for every allocation in it as well, for a copy of a statement
// placed beside the original (a loop body in two pipelines: flash attention's row
// statistics are allocated inside its loop).
ir::Stmt with_fresh_binders_and_buffers(const ir::Stmt& s);
// Thread-level invariants beyond ir::verify (verify_thread_level.cpp), what the
// backends may rely on after the last pass: level thread, the shared-memory plan made
// (shared_bytes set, every shared buffer at an arena offset, no full_write left), no
// layouts annotation, no fragment or
// local buffers, no tile ops (copy, gemm, fill, reduce, cumsum, atomic_add; the
// thread-level AtomicRmw is not one), no
// parallel or pipelined loops, register buffers rank 1, thread indices of dims 0..2.
// One message per violation; empty when the function is well formed.
std::vector<std::string> verify_thread_level(const ir::PrimFunc& f);

}  // namespace tilec::lower
