// The home of copy (see copy.h): why each rule holds is said where it is applied. The
// thread-level part is what vector loads need: one test of the whole global region picks
// an unmasked path, and only the ragged last block pays for a mask per element.
#include "ops/copy.h"
#include "ops/copy_tma.h"

#include <algorithm>
#include <functional>

#include "ir/visitor.h"
#include "layout/index_expr.h"
#include "ops/elab_util.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

namespace {

// The tile dimension a global region's copy reads contiguously: the one mapped to the
// tensor's unit-stride dimension (the last, unless strides say otherwise); nullopt if
// none is.
std::optional<size_t> contiguous_tile_dim(const Region& g, const std::vector<int64_t>& tile) {
    const Buffer& t = g.buffer;
    std::optional<size_t> unit;
    if (t->strides.empty()) {
        unit = t->shape.size() - 1;
    } else {
        for (size_t d = 0; d < t->strides.size(); ++d)
            if (is_const_int(t->strides[d], 1)) unit = d;
    }
    if (!unit || is_const_int(g.extent[*unit], 1)) return std::nullopt;
    // global_indices: the tile's non-unit dims in order are the region's non-unit dims.
    size_t live = 0;
    for (size_t d = 0; d < *unit; ++d) live += !is_const_int(g.extent[d], 1);
    for (size_t d = 0, k = 0; d < tile.size(); ++d) {
        if (tile[d] == 1) continue;
        if (k++ == live) return d;
    }
    return std::nullopt;
}

// The tensor's unit-stride dimension: the last, unless strides say otherwise.
size_t unit_stride_dim(const Buffer& t) {
    size_t last = t->shape.size() - 1;
    if (!t->strides.empty())
        for (size_t d = 0; d < t->shape.size(); ++d)
            if (is_const_int(t->strides[d], 1)) last = d;
    return last;
}

// The run-time condition under which every chunk of V elements of the region that
// starts at a multiple of V along the unit-stride dimension `last` is aligned to V
// elements in the tensor: the region's start in `last` and every other stride multiples
// of V (the base pointer is 16-byte aligned: the entry points check it).
Expr chunks_aligned(const Region& g, size_t last, int64_t V) {
    const Buffer& t = g.buffer;
    const size_t rank = t->shape.size();
    Expr aligned = eq(floormod(g.start[last], make_int(V)), make_int(0));
    for (size_t d = 0; d < rank; ++d) {
        if (d == last) continue;
        Expr stride = t->strides.empty() ? Expr() : t->strides[d];
        if (!stride) {
            stride = t->shape[rank - 1];
            for (size_t e = d + 1; e + 1 < rank; ++e) stride = mul(stride, t->shape[e]);
        }
        aligned = logical_and(aligned, eq(floormod(stride, make_int(V)), make_int(0)));
    }
    return aligned;
}

// The side of a copy that should carry the start index: a global tensor, else the
// tile with more elements (the smaller whole tile then gives the extent).
const Buffer& larger_side(const Buffer& a, const Buffer& b) {
    if (a->scope == Scope::Global) return a;
    if (b->scope == Scope::Global) return b;
    auto count = [](const Buffer& x) {
        int64_t n = 1;
        for (auto& d : x->shape) n *= as_const_int(d).value_or(1);
        return n;
    };
    return count(a) >= count(b) ? a : b;
}

std::vector<int64_t> squeeze(const std::vector<int64_t>& v) {
    std::vector<int64_t> out;
    for (auto e : v)
        if (e != 1) out.push_back(e);
    return out;
}

// One side of a copy, seen per element of the tile.
struct Side {
    const Region* region = nullptr;
    bool global = false;
    std::vector<int64_t> tile;  // the non-global buffer's shape
};

Side classify(const Region& r, SourceLoc loc, const char* what) {
    Side s;
    s.region = &r;
    const Buffer& b = r.buffer;
    if (b->scope == Scope::Global) {
        s.global = true;
        return s;
    }
    if (b->scope != Scope::Fragment && b->scope != Scope::Shared)
        unsupported(loc, std::string("copy ") + what + " a " + scope_name(b->scope) + " buffer");
    if (!is_full_region(r))
        unsupported(loc, std::string("copy ") + what + " part of " + scope_name(b->scope) + " buffer '" +
                             b->name + "'");
    s.tile = *const_shape(b->shape);
    return s;
}

// The element at `coord` of the tile of shape `tile` (register `r` of a fragment).
Expr read(LowerContext& lc, const Side& s, const std::vector<int64_t>& tile, const Var& r,
          const std::vector<Expr>& coord) {
    const Buffer& b = s.region->buffer;
    if (s.global) return make_load(b, global_indices(*s.region, tile, coord));
    if (b->scope == Scope::Fragment) return make_load(lc.registers(b).regs, {r});
    return make_load(b, coord);
}

Stmt write(LowerContext& lc, const Side& s, const std::vector<int64_t>& tile, const Var& r,
           const std::vector<Expr>& coord, const Expr& rep, Expr v, SourceLoc loc) {
    const Buffer& b = s.region->buffer;
    if (s.global) return guard_replica(rep, make_store(b, global_indices(*s.region, tile, coord), v, loc));
    if (b->scope == Scope::Fragment) return make_store(lc.registers(b).regs, {r}, v, loc);
    return guard_replica(rep, make_store(b, coord, v, loc));
}

// `s` with its unrolled loops made `kind` (serial, or rolled on a cold path: LLVM does not
// unroll it either): a copy whose loads cannot be vectors anyway keeps few values in
// registers (the unrolled form would hold them all at once). The loops over the
// variables in `keep` stay unrolled (one vector's elements).
Stmt rolled(const Stmt& s, ForKind kind, const std::vector<const VarNode*>& keep = {}) {
    struct Rolled : IRMutator {
        const std::vector<const VarNode*>* keep;
        ForKind kind;
        Stmt mutate_for(const ForNode* op, const Stmt& self) override {
            if (std::find(keep->begin(), keep->end(), op->var.get()) != keep->end()) return self;
            Stmt body = mutate(op->body);
            if (op->for_kind != ForKind::Unroll && body == op->body) return self;
            ForKind k = op->for_kind == ForKind::Unroll ? kind : op->for_kind;
            return make_for(op->var, op->min, op->extent, k, body, op->loc, op->stages);
        }
    } r;
    r.keep = &keep;
    r.kind = kind;
    return r.mutate(s);
}

// Whether every aligned chunk of V elements along tile dimension `cd` is contiguous and
// aligned to V elements under the shared layout L (by enumeration): one vector access.
bool chunks_whole(const layout::Layout& L, const std::vector<int64_t>& tile, size_t cd, int64_t V) {
    std::vector<int64_t> c(tile.size(), 0);
    int64_t total = 1, stride = 1;  // stride: of dimension cd in row-major order
    for (int64_t e : tile) total *= e;
    for (size_t d = cd + 1; d < tile.size(); ++d) stride *= tile[d];
    // The layout's table where it covers the tile, else evaluated per coordinate.
    std::shared_ptr<const std::vector<int64_t>> table = L.shape() == tile ? L.offsets() : nullptr;
    for (int64_t n = 0; n < total; ++n) {
        int64_t rest = n;
        for (size_t d = tile.size(); d-- > 0;) c[d] = rest % tile[d], rest /= tile[d];
        if (c[cd] % V != 0) continue;
        int64_t base = table ? (*table)[size_t(n)] : L.offset(c);
        if (base % V != 0) return false;
        for (int64_t e = 1; e < V; ++e) {
            int64_t at;
            if (table && c[cd] + e < tile[cd]) {
                at = (*table)[size_t(n + e * stride)];
            } else {
                auto x = c;
                x[cd] += e;
                at = L.offset(x);
            }
            if (at != base + e) return false;
        }
    }
    return true;
}

// The threads' split of a tile's chunks of V elements along dimension `cd`: chunks along
// `cd` fastest, so consecutive threads take consecutive chunks of one contiguous run
// (coalesced). The fragment runs over the chunk shape with `cd` moved last; `order` maps
// its dimensions back to the tile's. F is nullopt where the chunks do not divide.
struct ChunkThreads {
    std::vector<size_t> order;
    std::optional<layout::Fragment> F;
};
ChunkThreads chunk_threads(const std::vector<int64_t>& tile, size_t cd, int64_t V, int64_t threads) {
    std::vector<int64_t> chunks = tile, order_shape;
    chunks[cd] /= V;
    ChunkThreads out;
    for (size_t d = 0; d < chunks.size(); ++d)
        if (d != cd) out.order.push_back(d);
    out.order.push_back(cd);
    for (size_t d : out.order) order_shape.push_back(chunks[d]);
    out.F = layout::Fragment::parallel(order_shape, threads, 1);
    return out;
}

// A global tile into a whole shared buffer with cp.async, where the target has it: the
// tile's last dimension contiguous in the tensor, in chunks of `bytes` (16: .cg; 8 or 4:
// .ca) spread over the threads like a copy's vectors (consecutive threads, consecutive
// chunks: coalesced). A chunk past the tensor's edge reads fewer bytes (src-size) and the
// hardware zero-fills the rest: no masked path. The copies are committed as one group;
// insert-async-waits puts the wait before the first read. On wgmma targets a tile wholly
// inside the tensor takes an unguarded path (no per-chunk bounds or src-size arithmetic:
// in a GEMM main loop that arithmetic was most of the issued instructions). nullopt where
// this chunk size does not apply; `aligned` is set to the run-time condition under which
// every chunk is aligned to its size in the tensor (the row length and start multiples of
// the chunk).
std::optional<Stmt> async_fill(const CopyNode& c, LowerContext& lc, int64_t bytes, Expr& aligned) {
    const Region& g = c.src;
    const Buffer& dst = c.dst.buffer;
    const Buffer& t = g.buffer;
    const int64_t eb = (t->dtype.bits + 7) / 8;
    if (t->dtype.bits % 8 != 0 || bytes % eb != 0) return std::nullopt;
    const int64_t V = bytes / eb;
    auto tile = const_shape(dst->shape);
    if (!tile || tile->empty()) return std::nullopt;
    const size_t rank = t->shape.size();
    // The tile dimension `cd` read contiguously from the tensor's unit-stride dimension
    // `last`, in chunks of V elements that are contiguous in the shared layout too.
    auto cd_opt = contiguous_tile_dim(g, *tile);
    if (rank == 0 || !cd_opt) return std::nullopt;
    const size_t cd = *cd_opt;
    const size_t last = unit_stride_dim(t);
    if ((*tile)[cd] % V != 0 || !is_const_int(g.extent[last], (*tile)[cd])) return std::nullopt;
    const layout::Layout* planned = lc.shared_layout(dst);
    if (!chunks_whole(planned ? *planned : layout::Layout::row_major(*tile), *tile, cd, V)) return std::nullopt;
    auto [order, F] = chunk_threads(*tile, cd, V, lc.threads());
    if (!F) return std::nullopt;
    aligned = chunks_aligned(g, last, V);
    SourceLoc loc = c.loc;
    // The whole tile inside the tensor (its first and last elements' indices in range,
    // the indices growing with the tile's): then no chunk needs a guard, and the copy is
    // the address arithmetic and the cp.async alone (what a GEMM main loop runs, but at
    // the edges).
    Expr tile_inside = make_bool(true);
    {
        std::vector<Expr> first(tile->size(), make_int(0)), end(tile->size());
        for (size_t d = 0; d < tile->size(); ++d) end[d] = make_int((*tile)[d] - 1);
        std::vector<Expr> lo = global_indices(g, *tile, first), hi = global_indices(g, *tile, end);
        for (size_t d = 0; d < rank; ++d)
            tile_inside = logical_and(tile_inside, logical_and(ge(lo[d], make_int(0)), lt(hi[d], t->shape[d])));
    }
    auto chunk_loop = [&](bool guarded) {
    return lc.register_loop(*F, loc, [&](const Var&, const std::vector<Expr>& ordered, const Expr& rep) {
        std::vector<Expr> coord(tile->size());
        for (size_t k = 0; k < order.size(); ++k) coord[order[k]] = ordered[k];
        coord[cd] = mul(coord[cd], make_int(V));
        std::vector<Expr> gi = global_indices(g, *tile, coord);
        if (!guarded)
            return guard_replica(rep, make_machine_op(MachineOp::CpAsync, {bytes}, {make_load(dst, coord, loc)},
                                                      {make_load(t, gi, loc), make_int(bytes)}, loc));
        // Bytes of this chunk inside the tensor: none outside its other dimensions, else
        // up to the end of the contiguous one.
        Expr rows_in = make_bool(true);
        for (size_t d = 0; d < rank; ++d)
            if (d != last)
                rows_in = logical_and(rows_in, logical_and(ge(gi[d], make_int(0)), lt(gi[d], t->shape[d])));
        Expr left = maximum(make_int(0), minimum(make_int(V), sub(t->shape[last], gi[last])));
        Expr src_bytes = make_select(rows_in, mul(left, make_int(eb)), make_int(0), loc);
        // Nothing is read at src-size 0, but the address stays inside the tensor.
        std::vector<Expr> at;
        Expr inside = logical_and(rows_in, gt(left, make_int(0)));
        for (auto& i : gi) at.push_back(make_select(inside, i, make_int(0), loc));
        return guard_replica(rep, make_machine_op(MachineOp::CpAsync, {bytes}, {make_load(dst, coord, loc)},
                                                  {make_load(t, at, loc), src_bytes}, loc));
    });
    };
    // Only where wgmma keeps the accumulators out of the way: with mma.sync (sm_80..sm_90)
    // the unguarded path's hoisted addresses push gemm_*_nt and attn_fwd_d64 past 255
    // registers (spills), and its gain there is not measured yet.
    Stmt copies = lc.gpu_target().has_wgmma() && bytes == 16
                      ? make_if(tile_inside, chunk_loop(false), chunk_loop(true), loc)
                      : chunk_loop(true);
    return make_seq({copies, make_machine_op(MachineOp::CpAsyncCommit, {}, {}, {}, loc)}, loc);
}

// The cp.async fill of a global tile into shared memory (async_fill) in the widest chunk
// the tile allows: 16-byte .cg, or 8- / 4-byte .ca for a tile whose rows are 8 or 4 bytes
// (a [64, 4] f16 tile, say), where every chunk is aligned to it at run time; else the
// caller's synchronous copy `sync`. (A narrower cp.async as the run-time fallback of a
// 16-byte fill, for rows that are only 4- or 8-byte aligned, was tried: even as loops it
// pushed gemm_i8 past 255 registers on sm_80, 84 bytes spilled.) nullopt where no chunk
// size applies at compile time.
std::optional<Stmt> lower_copy_async(const CopyNode& c, LowerContext& lc, const Stmt& sync) {
    const Region& g = c.src;
    const Buffer& dst = c.dst.buffer;
    const Buffer& t = g.buffer;
    if (!lc.gpu_target().cp_async.available || t->scope != Scope::Global || dst->scope != Scope::Shared ||
        !is_full_region(c.dst) || t->dtype != dst->dtype || !pads_with_zero(c))
        return std::nullopt;
    for (int64_t bytes : {16, 8, 4}) {
        Expr aligned;
        // The fallback (misaligned rows) is rare: its element loops stay loops rather
        // than unrolled loads, so it does not raise the kernel's register count, and
        // LLVM keeps them rolled too (unrolled by 2, they took a third of ptxas's time
        // for gemm_f16 on sm_90a).
        if (auto fill = async_fill(c, lc, bytes, aligned))
            return make_if(aligned, *fill, rolled(sync, ForKind::Rolled), c.loc);
    }
    return std::nullopt;
}

// A global tile into a whole shared buffer on AMD (no asynchronous copy into LDS here):
// each thread moves `bytes`-wide chunks along the tile dimension the tensor holds
// contiguously, a vector load and a vector store apiece (vector_copy: global_load_dwordx4
// + ds_write_b128 for 16 bytes), consecutive threads consecutive chunks (coalesced). A
// transposed operand tile is stored transposed (gemm_layout's AMD branch), so its chunks
// stay whole in LDS too. The tile wholly inside the tensor with aligned chunks (the row
// length and start multiples of the chunk, tested at run time) takes the unrolled vector
// loop; a tile at the ragged edge, or rows not so aligned, a rolled loop that loads each
// chunk element by element (`pad` outside the tensor) and stores it whole, so a wave's
// lanes still write consecutive chunks (one element of each of 8 lanes' chunks at a time
// would put them in one bank). A vector for the chunks inside an edge tile, beside the
// elements for the others, made flash attention's D = 64 exports spill on gfx1100 (52 and
// 168 bytes). nullopt where no chunk size applies.
std::optional<Stmt> lower_copy_vector_fill(const CopyNode& c, LowerContext& lc) {
    const Region& g = c.src;
    const Buffer& dst = c.dst.buffer;
    const Buffer& t = g.buffer;
    if (!lc.gpu_target().is_amd() || t->scope != Scope::Global || dst->scope != Scope::Shared ||
        !is_full_region(c.dst) || t->dtype != dst->dtype || t->dtype.bits % 8 != 0)
        return std::nullopt;
    auto tile = const_shape(dst->shape);
    auto cd_opt = tile && !tile->empty() ? contiguous_tile_dim(g, *tile) : std::nullopt;
    if (!cd_opt) return std::nullopt;
    const size_t cd = *cd_opt, last = unit_stride_dim(t);
    const int64_t eb = t->dtype.bits / 8;
    const layout::Layout* planned = lc.shared_layout(dst);
    const layout::Layout L = planned ? *planned : layout::Layout::row_major(*tile);
    SourceLoc loc = c.loc;
    for (int64_t bytes : {16, 8, 4}) {
        if (bytes % eb != 0) continue;
        const int64_t V = bytes / eb;
        if (V < 2 || (*tile)[cd] % V != 0 || !is_const_int(g.extent[last], (*tile)[cd]) || !chunks_whole(L, *tile, cd, V))
            continue;
        auto [order, F] = chunk_threads(*tile, cd, V, lc.threads());
        if (!F) continue;
        Expr aligned = chunks_aligned(g, last, V);
        Expr pad = c.pad ? c.pad : make_zero(t->dtype);
        // The elements of the chunk at `coord` one by one (rows at the ragged edge, or not
        // aligned to the chunk): each loaded from its index where it is in the tensor and
        // from the tensor's first element where not, `pad` selected there. No branch, so
        // the chunk's stores stay one vector store (the loop stays unrolled in the rolled
        // chunk loops). An empty tensor has no first element: then all are `pad`.
        std::vector<const VarNode*> element_loops;
        Expr nonempty = make_bool(true);
        for (auto& d : t->shape) nonempty = logical_and(nonempty, gt(d, make_int(0)));
        auto elements = [&](const std::vector<Expr>& coord) {
            auto loop = [&](bool from_tensor) {
                Var e = make_loop_var("e", loc);
                std::vector<Expr> ce = coord;
                ce[cd] = add(coord[cd], Expr(e));
                Expr v = pad;
                if (from_tensor) {
                    std::vector<Expr> ge = global_indices(g, *tile, ce), clamped;
                    Expr in = in_bounds(t, ge);
                    for (auto& i : ge) clamped.push_back(make_select(in, i, make_int(0), loc));
                    v = make_select(in, make_load(t, clamped, loc), pad, loc);
                }
                element_loops.push_back(e.get());
                return make_for(e, make_int(0), make_int(V), ForKind::Unroll, make_store(dst, ce, v, loc), loc);
            };
            return make_if(nonempty, loop(true), loop(false), loc);
        };
        enum class Chunks { Vectors, Elements };
        auto chunk_loop = [&](Chunks form) {
            return lc.register_loop(*F, loc, [&](const Var&, const std::vector<Expr>& ordered, const Expr& rep) {
                std::vector<Expr> coord(tile->size());
                for (size_t k = 0; k < order.size(); ++k) coord[order[k]] = ordered[k];
                coord[cd] = mul(coord[cd], make_int(V));
                if (form == Chunks::Elements) return guard_replica(rep, elements(coord));
                std::vector<Expr> gi = global_indices(g, *tile, coord);
                return guard_replica(rep, make_machine_op(MachineOp::VectorCopy, {bytes}, {make_load(dst, coord, loc)},
                                                          {make_load(t, gi, loc)}, loc));
            });
        };
        // Serial, not ForKind::Rolled: rolled, gfx942's gemm assembly shrank by a quarter
        // (116k -> 88k lines; 93k -> 65k instructions with the staged epilogue) but the
        // scalar code and block layout of the MFMA k-loop, which holds this fill, changed,
        // which needs a GPU to judge, and flash attention's D = 64 exports spilled (10-14
        // VGPRs on gfx1100, 2 SGPRs on gfx90a). Rolled only in kernels with one large
        // fragment (gemm): no spills, gemm_f16 on gfx942 4.6k -> 2.9k instructions, but
        // LLVM moved the next fill's bounds tests into the MFMA block (139 -> 162
        // instructions: 64-bit compares, moves, scalar branches beside the 32 MFMAs).
        return make_if(logical_and(aligned, region_in_bounds(g)), chunk_loop(Chunks::Vectors),
                       rolled(chunk_loop(Chunks::Elements), ForKind::Serial, element_loops), loc);
    }
    return std::nullopt;
}

constexpr int64_t kOtherFragmentRegisters = 8;

// The slot of replica 0 of each element of a [rows, cols] fragment, for the checks below
// that visit every element: read from the fragment's table of owners (computed once per
// mapping, often already by layout inference) where it covers exactly these elements
// with one replica each, else evaluated per element.
class ElementSlots {
public:
    ElementSlots(const layout::Fragment& F, int64_t rows, int64_t cols) : F_(F), cols_(cols) {
        if (F.replicate() == 1 && F.shape() == std::vector<int64_t>{rows, cols}) table_ = F.all_owners();
    }
    layout::FragmentSlot operator()(int64_t i, int64_t j) const {
        if (!table_) return F_.evaluate({i, j});
        const size_t at = static_cast<size_t>(2 * (i * cols_ + j));
        return {(*table_)[at], (*table_)[at + 1]};
    }

private:
    const layout::Fragment& F_;
    int64_t cols_;
    std::shared_ptr<const std::vector<int64_t>> table_;
};

// Whether the direct stores of a rows x cols fragment F of `eb`-byte elements are both
// narrower than 16 bytes and scattered: one thread's longest run along a row (a power of
// two: every run starting at a multiple of it lies in one thread) under 16 bytes, and
// the first warp's lanes at some register on more rows than the request's bytes need
// (an mma accumulator: 8 rows for 32 pairs). A fragment whose lanes store along a row
// (rmsnorm's rows of 4 elements per thread) is coalesced as it is.
bool direct_stores_scattered(const layout::Fragment& F, int64_t rows, int64_t cols, int64_t eb, int warp) {
    std::vector<int64_t> owner(static_cast<size_t>(rows * cols));
    std::vector<std::vector<int64_t>> row_of(static_cast<size_t>(warp),
                                             std::vector<int64_t>(static_cast<size_t>(F.registers_per_thread()), -1));
    const ElementSlots slots(F, rows, cols);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            layout::FragmentSlot s = slots(i, j);
            owner[static_cast<size_t>(i * cols + j)] = s.thread;
            if (s.thread < warp && s.reg >= 0 && s.reg < F.registers_per_thread())
                row_of[static_cast<size_t>(s.thread)][static_cast<size_t>(s.reg)] = i;
        }
    int64_t run = 1;
    for (int64_t L = 2; L <= cols && cols % L == 0; L *= 2) {
        bool held = true;
        for (int64_t e = 0; e < rows * cols && held; e += L)
            for (int64_t x = 1; x < L && held; ++x)
                held = owner[static_cast<size_t>(e + x)] == owner[static_cast<size_t>(e)];
        if (!held) break;
        run = L;
    }
    if (run * eb >= 16) return false;
    const int64_t needed = (warp * run + cols - 1) / cols;
    for (int64_t r = 0; r < F.registers_per_thread(); ++r) {
        std::vector<int64_t> seen;
        for (int t = 0; t < warp; ++t) seen.push_back(row_of[static_cast<size_t>(t)][static_cast<size_t>(r)]);
        std::sort(seen.begin(), seen.end());
        if (std::unique(seen.begin(), seen.end()) - seen.begin() > needed) return true;
    }
    return false;
}

// The store of a whole 2-d fragment into a global tile through shared memory, where the
// fragment's layout (an mma or wgmma accumulator: pairs of adjacent columns per thread,
// rows 8 apart; an MFMA or WMMA accumulator: a column per lane) makes the direct stores
// narrow and scattered over rows: each thread writes its registers into a staging tile
// (swizzled like the operand tiles, so that the 8 rows a warp's store touches fall in 8
// bank groups), a barrier (place-barriers), then each thread copies 16-byte chunks of
// rows, consecutive threads consecutive chunks (vector_copy: ld.shared.v4 and
// st.global.v4, global_store_dwordx4 on AMD; a warp's store a whole run of rows:
// coalesced). A tile wholly inside the tensor with aligned chunks (row length and start
// multiples of the vector, checked at run time) takes the unrolled vector loop alone;
// otherwise a rolled loop stores each chunk as a vector where it is inside and aligned,
// else element by element under a mask (the ragged edge, or rows that are not 16-byte
// aligned). Taken only when the staging tile fits in the shared memory the kernel's own
// buffers already take (the shared plan then lets it reuse their bytes after the main
// loop: it lives after them) or, on NVIDIA, in the static shared memory next to them (on
// AMD the LDS a block takes is how many blocks share a CU: it must not grow), and only
// in kernels whose other fragments are small (at most kOtherFragmentRegisters registers
// per thread): in flash attention (s, p and the row statistics beside o) the staging's
// address arithmetic pushed attn_fwd on sm_80 from 210 registers to 255 and 12-104 bytes
// of spills. nullopt: the direct path.
// Whether every thread's registers r, r + 1 (r even) of fragment F hold elements (i, j)
// and (i, j + 1) of the [rows, cols] tile with j even, and layout L puts (i, j) at an
// even offset and (i, j + 1) right after it: then each pair is one aligned 32-bit word of
// 16-bit elements in the staging tile.
bool register_pairs_adjacent(const layout::Fragment& F, const layout::Layout& L, int64_t rows, int64_t cols) {
    if (cols % 2 != 0 || F.replicate() != 1) return false;
    const ElementSlots slots(F, rows, cols);
    if (L.shape() != std::vector<int64_t>{rows, cols}) return false;
    const std::vector<int64_t>& offsets = *L.offsets();
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; j += 2) {
            layout::FragmentSlot a = slots(i, j), b = slots(i, j + 1);
            if (a.thread != b.thread || a.reg % 2 != 0 || b.reg != a.reg + 1) return false;
            int64_t off = offsets[size_t(i * cols + j)];
            if (off % 2 != 0 || offsets[size_t(i * cols + j + 1)] != off + 1) return false;
        }
    return true;
}

std::optional<Stmt> lower_copy_staged(const CopyNode& c, LowerContext& lc, const layout::Fragment& F,
                                      const std::function<Expr(const Var&)>& value) {
    const Region& g = c.dst;
    const Buffer& t = g.buffer;
    const Buffer& frag = c.src.buffer;
    const target::GpuTarget& target = lc.gpu_target();
    if (frag->scope != Scope::Fragment || t->scope != Scope::Global || F.replicate() != 1)
        return std::nullopt;
    auto tile = const_shape(frag->shape);
    const DataType dt = t->dtype;
    if (!tile || tile->size() != 2 || dt.lanes != 1 || dt.bits % 8 != 0 || 16 % (dt.bits / 8) != 0)
        return std::nullopt;
    const int64_t eb = dt.bits / 8, V = 16 / eb, rows = (*tile)[0], cols = (*tile)[1];
    const int64_t threads = lc.threads(), chunks = rows * cols / V;
    if (contiguous_tile_dim(g, *tile) != size_t{1} || cols % V != 0 || chunks % threads != 0) return std::nullopt;
    const LowerContext::Footprint kernel = lc.kernel_footprint();
    const int64_t bytes = rows * cols * eb;
    if (bytes > kernel.shared_bytes &&
        (target.is_amd() || bytes + kernel.shared_bytes > target.static_shared_bytes))
        return std::nullopt;
    int64_t others = 0;
    for (auto& [b, regs] : kernel.fragment_registers)
        if (b != frag.get()) others += regs;
    if (others > kOtherFragmentRegisters) return std::nullopt;
    if (!direct_stores_scattered(F, rows, cols, eb, target.warp_size)) return std::nullopt;
    layout::Layout L = layout::Layout::row_major({rows, cols});
    if (auto sw = layout::Layout::swizzled(rows, cols, dt.bits, layout::Layout::widest_swizzle(rows, cols, dt.bits)))
        L = *sw;
    // Every chunk contiguous and aligned in the staging tile (the swizzles move whole
    // 16-byte chunks; checked rather than assumed).
    const std::vector<int64_t>& offsets = *L.offsets();  // L is [rows, cols]
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; j += V) {
            int64_t base = offsets[size_t(i * cols + j)];
            if (base % V != 0) return std::nullopt;
            for (int64_t e = 1; e < V; ++e)
                if (offsets[size_t(i * cols + j + e)] != base + e) return std::nullopt;
        }
    SourceLoc loc = c.loc;
    Buffer st = make_buffer(frag->name + "_epilogue", dt, {make_int(rows * cols)}, Scope::Shared, loc);
    auto at = [&](const Expr& i, const Expr& j) { return L.apply({i, j}).at(0); };
    Stmt writes;
    if (eb == 2 && register_pairs_adjacent(F, L, rows, cols)) {
        // Two 16-bit elements per 32-bit store: each thread's registers r, r + 1 (r even)
        // hold columns j, j + 1 of a row (j even), which stay adjacent in the staging
        // tile, so the pair is converted into a two-element register buffer and stored
        // as one word (gemm's f16 epilogue on sm_90a: 64 st.shared.b32 a thread where
        // there were 128 st.shared.b16).
        Buffer pair = make_buffer(frag->name + "_pair", dt, {make_int(2)}, Scope::Register, loc);
        Stmt loop = lc.register_loop(F, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
            Var r1 = make_let_var("r_next", DataType::index(), loc);
            Stmt word = make_seq({make_store(pair, {make_int(0)}, value(r), loc),
                                  make_let(r1, add(Expr(r), make_int(1)),
                                           make_store(pair, {make_int(1)}, value(r1), loc), loc),
                                  make_machine_op(MachineOp::VectorCopy, {4},
                                                  {make_load(st, {at(coord[0], coord[1])}, loc)},
                                                  {make_load(pair, {make_int(0)}, loc)}, loc)},
                                 loc);
            return make_if(eq(floormod(Expr(r), make_int(2)), make_int(0)), word, nullptr, loc);
        });
        writes = make_allocate(pair, loop, loc);
    } else {
        writes = lc.register_loop(F, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
            return make_store(st, {at(coord[0], coord[1])}, value(r), loc);
        });
    }
    const size_t last = unit_stride_dim(t);
    const int64_t per_row = cols / V, per_thread = chunks / threads;
    // One loop over this thread's chunks q = thread + k * threads: (i, j) its first element.
    auto chunk_loop = [&](ForKind kind, const std::function<Stmt(const Expr& i, const Expr& j)>& body) {
        Var k = make_loop_var("k", loc);
        Var i = make_let_var("i", DataType::index(), loc), j = make_let_var("j", DataType::index(), loc);
        Expr q = add(lc.thread_idx(), mul(Expr(k), make_int(threads)));
        Stmt s = make_let(i, floordiv(q, make_int(per_row)),
                          make_let(j, mul(floormod(q, make_int(per_row)), make_int(V)), body(i, j), loc), loc);
        return make_for(k, make_int(0), make_int(per_thread), kind, s, loc);
    };
    auto vector = [&](const Expr& i, const Expr& j) {
        return make_machine_op(MachineOp::VectorCopy, {16}, {make_load(t, global_indices(g, *tile, {i, j}), loc)},
                               {make_load(st, {at(i, j)}, loc)}, loc);
    };
    Expr aligned = chunks_aligned(g, last, V);
    Stmt fast = chunk_loop(ForKind::Unroll, vector);
    // A chunk element by element, each under its mask.
    auto elements = [&](const Expr& i, const Expr& j) {
        Var e = make_loop_var("e", loc);
        Expr je = add(j, Expr(e));
        std::vector<Expr> ge = global_indices(g, *tile, {i, je});
        Stmt element = make_if(in_bounds(t, ge), make_store(t, ge, make_load(st, {at(i, je)}, loc), loc), nullptr, loc);
        return make_for(e, make_int(0), make_int(V), ForKind::Rolled, element, loc);
    };
    // On sm_90a, one thread stores the tile through TMA where the tensor map encodes: the
    // unit clips the ragged edge, so no masked path, and the threads' stores end at the
    // staging tile (place-barriers fences them for the async proxy before the barrier
    // it puts before the issue). Where it
    // does not, the rows are not 16-byte multiples (or the tensor is beyond 2^31 rows or
    // columns), so the chunks are not aligned either: the other form is the masked
    // element loop alone (with the vector paths beside the TMA issue, ptxas spilled 8-16
    // bytes in the warp-specialized gemms).
    if (auto tma = lower_store_tma(g, st, L, {rows, cols}, lc, loc))
        return make_allocate(st,
                             make_seq({writes, make_if(tma->condition, tma->issue,
                                                       chunk_loop(ForKind::Rolled, elements), loc)},
                                      loc),
                             loc);
    Stmt slow = chunk_loop(ForKind::Rolled, [&](const Expr& i, const Expr& j) {
        std::vector<Expr> gi = global_indices(g, *tile, {i, j});
        Expr inside = logical_and(in_bounds(t, gi), lt(add(gi[last], make_int(V - 1)), t->shape[last]));
        return make_if(logical_and(aligned, inside), vector(i, j), elements(i, j), loc);
    });
    Stmt stores = make_if(logical_and(aligned, region_in_bounds(g)), fast, slow, loc);
    return make_allocate(st, make_seq({writes, stores}, loc), loc);
}

}  // namespace

Stmt elab_copy(ElabContext& ctx) {
    auto a = ctx.bind({"src", "dst", "pad"}, 2);
    if (!a) return nullptr;
    const auto& args = *a;
    SourceRange call = ctx.call_range();
    TileOperand src = ctx.tile(*args[0], "copy", "source");
    TileOperand dst = ctx.tile(*args[1], "copy", "destination");
    if (!src.ok() || !dst.ok()) return nullptr;
    if (!ctx.check_writable(dst.buffer, dst.range)) return nullptr;
    std::optional<Region> rs, rd;
    if (src.whole && dst.whole) {
        if (!same_shape(src.buffer->shape, dst.buffer->shape)) {
            ctx.diags().error(call, "copy between '" + src.buffer->name + "' " + shape_str(src.buffer->shape) +
                                        " and '" + dst.buffer->name + "' " + shape_str(dst.buffer->shape) +
                                        " of different shapes; give a start index on the larger side, e.g. " +
                                        larger_side(src.buffer, dst.buffer)->name + "[i, j]");
            return nullptr;
        }
        rs = full_region(src.buffer);
        rd = full_region(dst.buffer);
    } else if (src.whole) {
        rs = full_region(src.buffer);
        rd = region_for(ctx.diags(), dst, src.buffer->shape, call, "copy");
    } else if (dst.whole) {
        rd = full_region(dst.buffer);
        rs = region_for(ctx.diags(), src, dst.buffer->shape, call, "copy");
    } else {
        ctx.diags().error(call, "copy needs one side to be a whole tile, which gives the extent; both '" +
                                    src.buffer->name + "' and '" + dst.buffer->name + "' have start indices");
        return nullptr;
    }
    if (!rs || !rd) return nullptr;
    Expr pad;
    if (args[2]) {
        pad = ctx.scalar(*args[2], src.buffer->dtype, "the pad value");
        if (!pad) return nullptr;
    }
    return make_copy(*rs, *rd, pad, ctx.loc());
}

std::optional<size_t> fill_contiguous_dim(const CopyNode& op) {
    if (op.src.buffer->scope != Scope::Global || op.dst.buffer->scope != Scope::Shared || !is_full_region(op.dst))
        return std::nullopt;
    auto tile = const_shape(op.dst.buffer->shape);
    return tile ? contiguous_tile_dim(op.src, *tile) : std::nullopt;
}

void copy_layout(const CopyNode& op, LayoutConstraints& lc) {
    const Buffer& s = op.src.buffer;
    const Buffer& d = op.dst.buffer;
    // A 2-d shared tile filled from a tensor whose contiguous dimension is the tile's
    // first (a transposed gemm operand): stored transposed (and swizzled) so the fill is
    // 16-byte cp.async chunks along that dimension; its readers follow the layout.
    if (s->scope == Scope::Global && d->scope == Scope::Shared && lc.gpu_target().cp_async.available &&
        is_full_region(op.dst) && s->dtype == d->dtype) {
        auto tile = const_shape(d->shape);
        if (tile && tile->size() == 2 && contiguous_tile_dim(op.src, *tile) == size_t{0}) {
            int64_t rows = (*tile)[0], cols = (*tile)[1];
            auto mode = layout::Layout::widest_swizzle(cols, rows, d->dtype.bits);
            if (auto phys = layout::Layout::swizzled(cols, rows, d->dtype.bits, mode)) {
                auto transpose = layout::Layout::from_exprs(
                    "transpose", {rows, cols}, {cols, rows},
                    [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; },
                    [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; });
                lc.shared_layout(d, phys->compose(transpose), op.loc, "the fill of '" + d->name + "' along its first dimension");
            }
        }
    }
    if (s->scope == Scope::Fragment && d->scope == Scope::Fragment && whole_tile(op.src) && whole_tile(op.dst) &&
        positive_shape(s->shape) == positive_shape(d->shape) && positive_shape(s->shape))
        lc.same(s, d, op.loc, "the copy of '" + s->name + "' into '" + d->name + "'");
}

Stmt lower_copy(const CopyNode& c, LowerContext& lc) {
    Side src = classify(c.src, c.loc, "from");
    Side dst = classify(c.dst, c.loc, "into");
    if (src.global && dst.global) unsupported(c.loc, "copy between two global tensors");
    const Side& tile_side = src.global ? dst : src;
    const std::vector<int64_t> tileshape = tile_side.tile;
    // Both sides are indexed by one fragment's coordinates: the shapes must be equal.
    if (!src.global && !dst.global && src.tile != dst.tile)
        unsupported(c.loc, "copy between tiles of different shapes");
    const Side* g = src.global ? &src : (dst.global ? &dst : nullptr);
    if (g) {
        std::vector<int64_t> ext;
        for (auto& e : g->region->extent) {
            auto v = as_const_int(e);
            if (!v) unsupported(c.loc, "copy of a global region with a run-time extent");
            ext.push_back(*v);
        }
        if (squeeze(ext) != squeeze(tileshape)) TILEC_ICE("thread-level lowering: copy extents disagree");
    }
    // The thread split: the fragment's own, or the shape's for shared memory.
    std::optional<layout::Fragment> F;
    if (tile_side.region->buffer->scope == Scope::Fragment)
        F = lc.registers(tile_side.region->buffer).frag;
    else if (!src.global && src.region->buffer->scope == Scope::Fragment)
        F = lc.registers(src.region->buffer).frag;
    else if (!dst.global && dst.region->buffer->scope == Scope::Fragment)
        F = lc.registers(dst.region->buffer).frag;
    else
        F = lc.default_fragment(tileshape);
    if (!F)
        unsupported(c.loc, "copy of a tile of shape " + layout::shape_str(tileshape) +
                               " that does not divide among the threads");

    DataType sd = src.region->buffer->dtype, dd = dst.region->buffer->dtype;
    auto conv = [&](Expr v) { return sd == dd ? v : make_cast(dd, v, c.loc); };
    auto plain = [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        return write(lc, dst, tileshape, r, coord, rep, conv(read(lc, src, tileshape, r, coord)), c.loc);
    };
    if (!g) return lc.register_loop(*F, c.loc, plain);
    if (dst.global && src.region->buffer->scope == Scope::Fragment)
        if (auto staged = lower_copy_staged(c, lc, *F, [&](const Var& r) {
                return conv(make_load(lc.registers(src.region->buffer).regs, {r}));
            }))
            return *staged;
    Stmt fast = lc.register_loop(*F, c.loc, plain);
    Stmt masked =
        lc.register_loop(*F, c.loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            auto gi = global_indices(*g->region, tileshape, coord);
            Expr inside = in_bounds(g->region->buffer, gi);
            if (src.global) {
                Stmt load = write(lc, dst, tileshape, r, coord, rep, conv(read(lc, src, tileshape, r, coord)), c.loc);
                Stmt pad = write(lc, dst, tileshape, r, coord, rep, conv(c.pad ? c.pad : make_zero(sd)), c.loc);
                return make_if(inside, load, pad, c.loc);
            }
            return make_if(inside, plain(r, coord, rep), nullptr, c.loc);
        });
    Stmt sync = make_if(region_in_bounds(*g->region), fast, masked, c.loc);
    if (auto async = lower_copy_async(c, lc, sync)) {
        if (auto tma = lower_copy_tma(c, lc)) return make_if(tma->condition, tma->issue, *async, c.loc);
        return *async;
    }
    if (auto vector = lower_copy_vector_fill(c, lc)) return *vector;
    // Global memory into shared memory along a dimension that is not contiguous in the
    // tensor (a transposed operand): element loads that cannot become vectors.
    const Buffer& t = g->region->buffer;
    bool contiguous = t->strides.empty() || is_const_int(t->strides.back(), 1);
    if (src.global && dst.region->buffer->scope == Scope::Shared && !contiguous) return rolled(sync, ForKind::Serial);
    return sync;
}

}  // namespace tilec::ops
