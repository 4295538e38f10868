// copy global -> shared through TMA (sm_90+, issue 12): the candidate form of a fill.
// Internal to compiler/ops (copy.cpp's lowering calls it); software-pipeline consumes it.
#pragma once
#include <optional>

#include "ops/context.h"

namespace tilec::ops {

// A copy's TMA form: `issue` (alloc barrier { if thread 0: arrive on barrier[0] expecting
// the tile's bytes, then one tma_load per box of at most 128 bytes across }) where `condition` holds at
// run time (the tensor's tensor map encodes: cuTensorMapEncodeTiled's stride and size
// rules), else the copy's other form. `barrier` is a placeholder shared u64[1], allocated
// around the issue alone to keep the IR well formed: software-pipeline stages it (and its waits) in a pipelined loop and
// drops the TMA form everywhere else.
struct TmaFill {
    ir::Expr condition;
    ir::Stmt issue;
    ir::Buffer barrier;
};

// The TMA form of `c`, or nullopt: a target without TMA or wgmma (whose 1024-byte tile
// alignment the swizzled boxes need), a tile under 1 KiB or of 8-bit elements, a tensor
// with no dimension of stride 1 known at compile time, or a shared layout that is not the
// boxes' dense rows (along the contiguous dimension: a transposed operand's box is its
// memory order, the K-major or MN-major tile wgmma reads) with their swizzle.
std::optional<TmaFill> lower_copy_tma(const ir::CopyNode& c, LowerContext& lc);

// The TMA form of a staged store (ops/copy.cpp): the tile of shape `tile` in the shared
// `staging` buffer (flat, laid out by `L`) to the global region `g`, where `condition`
// holds at run time (the tensor map encodes; else the caller's other form): `issue`
// (thread 0: one tma_store per box, bulk_commit, bulk_wait_read 0, so the staging bytes
// are free again when it goes on). It reads the whole tile: place-barriers puts a barrier
// before it, and a fence.proxy.async before that barrier (as before every barrier of a
// kernel whose async proxy reads shared memory). nullopt: a target without TMA, a tile
// under 1 KiB, or a layout that is not the boxes' swizzled rows on their pattern
// boundaries (the staging tile must start on a 1024-byte boundary: the shared plan's
// rule for such tiles on wgmma targets).
struct TmaStoreForm {
    ir::Expr condition;
    ir::Stmt issue;
};
std::optional<TmaStoreForm> lower_store_tma(const ir::Region& g, const ir::Buffer& staging, const layout::Layout& L,
                                            const std::vector<int64_t>& tile, LowerContext& lc, SourceLoc loc);

// Whether `t`'s tensor map encodes at run time (each dimension 1 .. 2^31 - 1, byte strides
// of the dimensions other than the contiguous one multiples of 16 in 16 .. 2^40), as the
// entry point decides it.
ir::Expr tma_tensor_ok(const ir::Buffer& t, size_t contiguous);

}  // namespace tilec::ops
