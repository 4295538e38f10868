// Copies through the Tensor Memory Accelerator (sm_90+, issue 12). Global -> shared: the
// candidate form of a fill, which software-pipeline turns into a TMA stage of a pipelined
// loop (its mbarriers, expect-tx and waits) and removes everywhere else (a lone copy keeps
// its cp.async form: a TMA's mbarrier phase bookkeeping pays off in a pipeline only).
// Shared -> global: the store of a staged epilogue (ops/copy.cpp), one thread issuing
// the boxes, the ragged edge clipped by the unit instead of masked per element.
#include "ops/copy_tma.h"

#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

namespace {

// Swizzle<s,4,3> of a byte offset from a pattern-aligned base (the TMA and wgmma pattern:
// 16-byte chunks XOR the row within the 2^s rows of the pattern).
int64_t swizzled(int64_t span, int64_t byte) {
    if (span == 0) return byte;
    int64_t mask = span / 16 - 1;
    return byte ^ (((byte >> 7) & mask) << 4);
}

int64_t swizzle_mode(int64_t span) { return span == 128 ? 3 : span == 64 ? 2 : span == 32 ? 1 : 0; }

}  // namespace

Expr tma_tensor_ok(const Buffer& t, size_t contiguous) {
    const int64_t eb = (t->dtype.bits + 7) / 8;
    const size_t rank = t->shape.size();
    Expr ok = make_bool(true);
    Expr packed = make_int(1);  // the row-major stride, where the tensor has no strides of its own
    for (size_t k = rank; k-- > 0;) {
        const Expr& n = t->shape[k];
        ok = logical_and(ok, logical_and(ge(n, make_int(1)), le(n, make_int((int64_t{1} << 31) - 1))));
        if (k != contiguous) {
            Expr bytes = mul(t->strides.empty() ? packed : t->strides[k], make_int(eb));
            ok = logical_and(ok, logical_and(eq(floormod(bytes, make_int(16)), make_int(0)),
                                             logical_and(gt(bytes, make_int(0)), lt(bytes, make_int(int64_t{1} << 40)))));
        }
        packed = mul(packed, n);
    }
    return ok;
}

namespace {

// How TMA boxes cover a tile of `tile`'s shape laid out by `L` in shared memory, for the
// global region `g` of the same extent (a copy either way).
struct TmaBoxes {
    std::vector<int64_t> imm;                      // the instructions' immediates (ir.h, TmaLoad)
    std::vector<std::vector<int64_t>> first;       // per box: its first tile element
    std::vector<size_t> dims;                      // the map's dimensions, innermost first
    int64_t bytes = 0;                             // the tile's bytes
};

// The boxes, or nullopt: no dimension of stride 1 known at compile time, a box the map
// cannot take, or a layout that is not the boxes' dense rows (along the contiguous
// dimension: a transposed operand's box is its memory order) with their swizzle, each
// box on a boundary of its swizzle pattern.
std::optional<TmaBoxes> plan_tma_boxes(const Region& g, const std::vector<int64_t>& tile, const layout::Layout& L) {
    const Buffer& t = g.buffer;
    const size_t rank = t->shape.size();
    if (t->dtype.bits % 8 != 0 || rank < 1 || rank > 5 || tile.empty()) return std::nullopt;
    // The map's dimensions, innermost first: the tensor's contiguous one (stride 1: the
    // last without strides; a transposed operand's first), then the others from the last.
    std::vector<size_t> dims;
    for (size_t d = 0; d < rank; ++d)
        if (t->strides.empty() ? d + 1 == rank : is_const_int(t->strides[d], 1)) dims.push_back(d);
    if (dims.size() != 1) return std::nullopt;
    for (size_t d = rank; d-- > 0;)
        if (d != dims[0]) dims.push_back(d);
    const int64_t eb = t->dtype.bits / 8;
    int64_t elems = 1;
    for (int64_t e : tile) elems *= e;
    // The box: the region's extent per tensor dimension.
    std::vector<int64_t> ext(rank);
    for (size_t d = 0; d < rank; ++d) {
        auto e = as_const_int(g.extent[d]);
        if (!e || *e < 1 || *e > 256 * 256) return std::nullopt;
        ext[d] = *e;
    }
    // Tile dimensions other than 1 are the tensor dimensions of extent other than 1, in order.
    std::vector<int64_t> tensor_dim_of(tile.size(), -1);
    {
        size_t k = 0;
        for (size_t d = 0; d < tile.size(); ++d) {
            if (tile[d] == 1) continue;
            while (k < rank && ext[k] == 1) ++k;
            if (k == rank || ext[k] != tile[d]) return std::nullopt;
            tensor_dim_of[d] = static_cast<int64_t>(k++);
        }
    }
    // The inner (contiguous) dimension in boxes of at most 128 bytes, each with the swizzle
    // of its width (a wider row is several boxes side by side, as wgmma's MN-major atoms).
    const int64_t inner = ext[dims[0]];
    int64_t width = inner * eb <= 128 ? inner : 128 / eb;
    if (inner % width != 0 || (width * eb) % 16 != 0) return std::nullopt;
    const int64_t span = (width * eb == 32 || width * eb == 64 || width * eb == 128) ? width * eb : 0;
    for (size_t i = 1; i < rank; ++i)
        if (ext[dims[i]] > 256) return std::nullopt;
    const int64_t boxes = inner / width;
    // Where each box starts in the tile (element offset of its first element) and the
    // check, element by element, that the tile's layout is the boxes' dense rows swizzled.
    std::vector<int64_t> box_base(static_cast<size_t>(boxes), -1);
    std::vector<int64_t> coord(tile.size(), 0);
    std::shared_ptr<const std::vector<int64_t>> table = L.shape() == tile ? L.offsets() : nullptr;
    for (int64_t n = 0; n < elems; ++n) {
        int64_t rest = n;
        for (size_t d = tile.size(); d-- > 0;) coord[d] = rest % tile[d], rest /= tile[d];
        std::vector<int64_t> o(rank, 0);
        for (size_t d = 0; d < tile.size(); ++d)
            if (tensor_dim_of[d] >= 0) o[static_cast<size_t>(tensor_dim_of[d])] = coord[d];
        int64_t q = o[dims[0]] / width;
        int64_t linear = o[dims[0]] % width, scale = width;
        for (size_t i = 1; i < rank; ++i) {
            linear += o[dims[i]] * scale;
            scale *= ext[dims[i]];
        }
        int64_t at = (table ? (*table)[size_t(n)] : L.offset(coord)) * eb;
        if (linear == 0) box_base[static_cast<size_t>(q)] = at;
        if (box_base[static_cast<size_t>(q)] < 0) return std::nullopt;  // a box's first element comes first
        if (at != box_base[static_cast<size_t>(q)] + swizzled(span, linear * eb)) return std::nullopt;
    }
    for (int64_t b : box_base)
        if (b % (span == 0 ? 128 : 8 * span) != 0) return std::nullopt;
    TmaBoxes out;
    out.dims = dims;
    out.bytes = elems * eb;
    out.imm = {swizzle_mode(span), width};
    for (size_t i = 1; i < rank; ++i) out.imm.push_back(ext[dims[i]]);
    if (dims[0] + 1 != rank)  // not the row-major order: name the dimensions (ir.h, TmaLoad)
        for (size_t d : dims) out.imm.push_back(static_cast<int64_t>(d));
    for (int64_t q = 0; q < boxes; ++q) {
        std::vector<int64_t> first(tile.size(), 0);
        for (size_t d = 0; d < tile.size(); ++d)
            if (tensor_dim_of[d] == static_cast<int64_t>(dims[0])) first[d] = q * width;
        out.first.push_back(first);
    }
    return out;
}

std::vector<Expr> exprs(const std::vector<int64_t>& v) {
    std::vector<Expr> out;
    for (int64_t x : v) out.push_back(make_int(x));
    return out;
}

}  // namespace

// tma_tensor_ok's rule written as one minimum and one maximum over the dimensions (and
// byte strides, where the dimensions do not bound them), for a test after the main loop:
// in the form of the loads' tests, LLVM merged its compares with theirs at the top of the
// kernel and kept them live across the loop (ptxas spilled 8-16 bytes in the warp-
// specialized gemms).
Expr tma_tensor_ok_folded(const Buffer& t, size_t contiguous) {
    const int64_t eb = (t->dtype.bits + 7) / 8;
    const size_t rank = t->shape.size();
    Expr lo = t->shape[0], hi = t->shape[0];
    for (size_t k = 1; k < rank; ++k) {
        lo = minimum(lo, t->shape[k]);
        hi = maximum(hi, t->shape[k]);
    }
    Expr ok = logical_and(ge(lo, make_int(1)), le(hi, make_int((int64_t{1} << 31) - 1)));
    Expr packed = make_int(1);
    int64_t factors = 0;  // dimensions in the row-major stride
    for (size_t k = rank; k-- > 0;) {
        if (k != contiguous) {
            Expr bytes = mul(t->strides.empty() ? packed : t->strides[k], make_int(eb));
            ok = logical_and(ok, eq(floormod(bytes, make_int(16)), make_int(0)));
            // One dimension of at most 2^31 - 1 elements bounds a row-major stride: 1 ..
            // 2^34 bytes.
            if (!t->strides.empty() || factors > 1)
                ok = logical_and(ok, logical_and(gt(bytes, make_int(0)), lt(bytes, make_int(int64_t{1} << 40))));
        }
        packed = mul(packed, t->shape[k]);
        ++factors;
    }
    return ok;
}

std::optional<TmaFill> lower_copy_tma(const CopyNode& c, LowerContext& lc) {
    const target::GpuTarget& target = lc.gpu_target();
    const Region& g = c.src;
    const Buffer& t = g.buffer;
    const Buffer& dst = c.dst.buffer;
    if (!target.tma.available || !target.has_wgmma() || t->scope != Scope::Global || dst->scope != Scope::Shared ||
        !is_full_region(c.dst) || t->dtype != dst->dtype || t->dtype.bits % 8 != 0 || t->shape.empty())
        return std::nullopt;
    if (!pads_with_zero(c)) return std::nullopt;
    auto tile = const_shape(dst->shape);
    if (!tile || tile->empty()) return std::nullopt;
    const int64_t eb = t->dtype.bits / 8;
    // i8 tiles feed mma.sync on sm_90a (no i8 wgmma yet), in kernels at the edge of their
    // register budget: the TMA issue's registers made them spill. The 8-bit floats feed
    // wgmma (k32).
    if (eb < 2 && t->dtype.kind != TypeKind::Float8E4M3 && t->dtype.kind != TypeKind::Float8E5M2) return std::nullopt;
    int64_t elems = 1;
    for (int64_t e : *tile) elems *= e;
    // Tiles of 1 KiB or more start on 1024-byte boundaries on wgmma targets (the shared
    // plan), where every swizzle pattern starts: the offsets below are then addresses.
    if (elems * eb < 1024) return std::nullopt;
    const layout::Layout* planned = lc.shared_layout(dst);
    const layout::Layout L = planned ? *planned : layout::Layout::row_major(*tile);
    auto boxes = plan_tma_boxes(g, *tile, L);
    if (!boxes) return std::nullopt;

    SourceLoc loc = c.loc;
    TmaFill out;
    out.barrier = make_buffer(dst->name + "_full", DataType::u64(), {make_int(1)}, Scope::Shared);
    out.condition = tma_tensor_ok(t, boxes->dims[0]);
    Expr bar = make_load(out.barrier, {make_int(0)}, loc);
    std::vector<Stmt> issue{make_machine_op(MachineOp::MbarrierArrive, {boxes->bytes}, {bar}, {}, loc)};
    for (const auto& first : boxes->first) {
        std::vector<Expr> at = global_indices(g, *tile, exprs(first));
        issue.push_back(make_machine_op(MachineOp::TmaLoad, boxes->imm, {make_load(dst, exprs(first), loc)},
                                        {make_load(t, at, loc), bar}, loc));
    }
    out.issue = make_allocate(out.barrier, make_if(eq(lc.thread_idx(), make_int(0)), make_seq(issue, loc), nullptr, loc), loc);
    return out;
}

std::optional<TmaStoreForm> lower_store_tma(const Region& g, const Buffer& staging, const layout::Layout& L,
                                            const std::vector<int64_t>& tile, LowerContext& lc, SourceLoc loc) {
    const target::GpuTarget& target = lc.gpu_target();
    const Buffer& t = g.buffer;
    if (!target.tma.available || !target.has_wgmma() || t->scope != Scope::Global || staging->scope != Scope::Shared ||
        t->dtype != staging->dtype || t->dtype.bits % 8 != 0 || t->shape.empty())
        return std::nullopt;
    auto boxes = plan_tma_boxes(g, tile, L);
    if (!boxes || boxes->bytes < 1024) return std::nullopt;
    TmaStoreForm out;
    out.condition = tma_tensor_ok_folded(t, boxes->dims[0]);
    std::vector<Stmt> issue;
    for (const auto& first : boxes->first)
        issue.push_back(make_machine_op(MachineOp::TmaStore, boxes->imm,
                                        {make_load(t, global_indices(g, tile, exprs(first)), loc)},
                                        {make_load(staging, {make_int(L.offset(first))}, loc)}, loc));
    issue.push_back(make_machine_op(MachineOp::BulkCommit, {}, {}, {}, loc));
    issue.push_back(make_machine_op(MachineOp::BulkWaitRead, {0}, {}, {}, loc));
    out.issue = make_if(eq(lc.thread_idx(), make_int(0)), make_seq(issue, loc), nullptr, loc);
    return out;
}

}  // namespace tilec::ops
