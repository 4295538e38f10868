// Tile operations of the CPU backend as loop nests: copy (bounds-masked, padded,
// converting), gemm, fill, reduce_*, cumsum, atomic_add. One thread runs the block.
#include <algorithm>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"
#include "support/diagnostics.h"

namespace tilec::codegen {

using ir::DataType;

namespace {

// One side of a copy or atomic_add: the region's start (evaluated once), its dimensions
// of extent > 1 (the others are squeezed) and their extents.
struct Side {
    const ir::Region* region = nullptr;
    std::vector<llvm::Value*> start;
    std::vector<size_t> kept;
    std::vector<int64_t> extents;
    bool global = false;
};

}  // namespace

llvm::Value* FunctionLowering::convert_for_store(llvm::Value* v, DataType from, DataType to) {
    // A float stored into a narrow float is rounded once, by to_storage.
    if (from.is_float() && is_narrow_float(to)) return v;
    return convert(v, from, to);
}

// Emits the valid part [lo, hi) of one row along the inner dimensions (s_in, d_in) of
// the two sides, whose other indices are si and di.
using RowEmitter = std::function<void(llvm::Value* lo, llvm::Value* hi, const std::vector<llvm::Value*>& si,
                                      const std::vector<llvm::Value*>& di, size_t s_in, size_t d_in)>;

// Both sides of a region-to-region op, squeezed to the same shape; `body` runs for each
// element whose destination is inside a global destination, with the full indices of
// both sides and whether the source element is inside a global source. `valid_row`,
// when given, emits the rows' valid parts instead of a loop of `body`. `inside`: the
// caller has checked that both regions lie wholly inside their tensors, so there is
// nothing to mask and every loop runs over the region's constant extents.
static void for_each_element(
    FunctionLowering& fl, const ir::Region& src, const ir::Region& dst, const char* op,
    const std::function<void(const std::vector<llvm::Value*>& si, const std::vector<llvm::Value*>& di,
                             bool src_valid)>& body,
    const RowEmitter& valid_row = nullptr, bool inside = false) {
    auto& b = fl.builder();
    auto make_side = [&](const ir::Region& r) {
        Side s;
        s.region = &r;
        s.global = r.buffer->scope == ir::Scope::Global && !inside;
        for (size_t d = 0; d < r.start.size(); ++d) {
            s.start.push_back(fl.convert(fl.expr(r.start[d]), r.start[d]->type, DataType::i64()));
            int64_t e = const_extent(r.extent[d], "a tile-op extent");
            if (e != 1) {
                s.kept.push_back(d);
                s.extents.push_back(e);
            }
        }
        return s;
    };
    Side s = make_side(src), d = make_side(dst);
    if (s.extents != d.extents)
        TILEC_ICE(std::string("CPU backend: the two sides of ") + op + " have different shapes");
    const BufferInfo& sinfo = fl.buffer(src.buffer);
    const BufferInfo& dinfo = fl.buffer(dst.buffer);
    size_t n = s.extents.size();

    // 0 <= i < shape along every dimension but `skip` (a global side only).
    auto in_bounds = [&](const Side& side, const BufferInfo& info, const std::vector<llvm::Value*>& idx,
                         size_t skip) -> llvm::Value* {
        llvm::Value* ok = b.getTrue();
        if (!side.global) return ok;
        for (size_t k = 0; k < idx.size(); ++k) {
            if (k == skip) continue;
            llvm::Value* c = b.CreateICmpULT(idx[k], info.shape[k]);  // unsigned: also i >= 0
            ok = b.CreateAnd(ok, c);
        }
        return ok;
    };
    auto full_index = [&](const Side& side, const std::vector<llvm::Value*>& outer) {
        std::vector<llvm::Value*> idx = side.start;
        for (size_t k = 0; k < outer.size(); ++k)
            idx[side.kept[k]] = b.CreateAdd(idx[side.kept[k]], outer[k]);
        return idx;
    };

    if (n == 0) {  // a single element
        std::vector<llvm::Value*> si = s.start, di = d.start;
        fl.emit_if(in_bounds(d, dinfo, di, SIZE_MAX), [&] {
            if (!s.global) return body(si, di, true);
            fl.emit_if(
                in_bounds(s, sinfo, si, SIZE_MAX), [&] { body(si, di, true); }, [&] { body(si, di, false); });
        });
        return;
    }
    std::vector<int64_t> outer(s.extents.begin(), s.extents.end() - 1);
    int64_t inner = s.extents.back();
    size_t s_in = s.kept.back(), d_in = d.kept.back();
    fl.emit_nest(outer, LoopHint::None, [&](const std::vector<llvm::Value*>& oi) {
        std::vector<llvm::Value*> si = full_index(s, oi), di = full_index(d, oi);
        llvm::Value* zero = b.getInt64(0);
        llvm::Value* ext = b.getInt64(inner);
        auto clamp = [&](llvm::Value* v, llvm::Value* lo, llvm::Value* hi) {
            return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                           b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, lo), hi);
        };
        // The window of the inner dimension inside a side: [lo, hi) within [0, inner).
        auto window = [&](const Side& side, const BufferInfo& info, const std::vector<llvm::Value*>& idx,
                          size_t dim, llvm::Value*& lo, llvm::Value*& hi) {
            if (!side.global) {
                lo = zero;
                hi = ext;
                return;
            }
            llvm::Value* row_ok = in_bounds(side, info, idx, dim);
            lo = clamp(b.CreateNeg(idx[dim]), zero, ext);
            hi = clamp(b.CreateSub(info.shape[dim], idx[dim]), lo, ext);
            hi = b.CreateSelect(row_ok, hi, lo);
        };
        llvm::Value *wlo, *whi, *slo, *shi;
        window(d, dinfo, di, d_in, wlo, whi);
        window(s, sinfo, si, s_in, slo, shi);
        if (s.global) {  // an empty source row still has its window at 0
            llvm::Value* empty = b.CreateICmpEQ(slo, shi);
            slo = b.CreateSelect(empty, zero, slo);
            shi = b.CreateSelect(empty, zero, shi);
        }
        // Inside the destination window: padding before and after the source's window.
        llvm::Value* a = b.CreateBinaryIntrinsic(
            llvm::Intrinsic::smin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, wlo, slo), whi);
        llvm::Value* c = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                                 b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, whi, shi), a);
        auto run = [&](llvm::Value* lo, llvm::Value* hi, bool valid) {
            fl.emit_loop(lo, b.CreateSub(hi, lo), LoopHint::Vectorize, [&](llvm::Value* j) {
                std::vector<llvm::Value*> sj = si, dj = di;
                sj[s_in] = b.CreateAdd(si[s_in], j);
                dj[d_in] = b.CreateAdd(di[d_in], j);
                body(sj, dj, valid);
            });
        };
        if (s.global) run(wlo, a, false);
        if (valid_row)
            valid_row(a, c, si, di, s_in, d_in);
        else
            run(a, c, true);
        if (s.global) run(c, whi, false);
    });
}

void FunctionLowering::emit_streaming_row(const ir::CopyNode& s, llvm::Value* lo, llvm::Value* hi,
                                          const std::vector<llvm::Value*>& si,
                                          const std::vector<llvm::Value*>& di, size_t s_in, size_t d_in) {
    DataType st = s.src.buffer->dtype, dt = s.dst.buffer->dtype;
    const BufferInfo& dinfo = buffer(s.dst.buffer);
    llvm::Type* elem = storage_type(ms_.ctx, dt);
    const uint64_t elem_bytes = elem->getPrimitiveSizeInBits() / 8;
    const uint64_t lanes = ms_.cpu.vector_bytes / elem_bytes;
    auto element = [&](llvm::Value* j, bool store_side) {
        std::vector<llvm::Value*> idx = store_side ? di : si;
        size_t dim = store_side ? d_in : s_in;
        idx[dim] = b_.CreateAdd(idx[dim], j);
        return idx;
    };
    auto plain = [&](llvm::Value* from, llvm::Value* to) {
        emit_loop(from, b_.CreateSub(to, from), LoopHint::Vectorize, [&](llvm::Value* j) {
            store_element(s.dst.buffer, element(j, true), convert_for_store(load_element(s.src.buffer, element(j, false)), st, dt));
        });
    };
    // Bytes of the whole destination tensor: large ones stream.
    llvm::Value* bytes = b_.getInt64(elem_bytes);
    for (llvm::Value* d : dinfo.shape) bytes = b_.CreateMul(bytes, d);
    llvm::Value* big = b_.CreateICmpUGE(bytes, b_.getInt64(kStreamingStoreBytes));
    // Consecutive along the row (a tensor with strides may step by more).
    big = b_.CreateAnd(big, b_.CreateICmpEQ(dinfo.strides[d_in], b_.getInt64(1)));
    // Elements before the first vector-aligned address (none stream if the address is
    // not even element-aligned), then whole vectors, then the rest.
    llvm::Value* n = b_.CreateSub(hi, lo);
    llvm::Value* addr = b_.CreatePtrToInt(element_ptr(s.dst.buffer, dinfo, element_offset(dinfo, element(lo, true))),
                                          b_.getInt64Ty());
    llvm::Value* misalign = b_.CreateAnd(addr, b_.getInt64(ms_.cpu.vector_bytes - 1));
    llvm::Value* elem_aligned = b_.CreateICmpEQ(b_.CreateURem(misalign, b_.getInt64(elem_bytes)), b_.getInt64(0));
    llvm::Value* head = b_.CreateUDiv(b_.CreateAnd(b_.CreateSub(b_.getInt64(ms_.cpu.vector_bytes), misalign),
                                                   b_.getInt64(ms_.cpu.vector_bytes - 1)),
                                      b_.getInt64(elem_bytes));
    head = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, head, n);
    llvm::Value* vectors = b_.CreateSDiv(b_.CreateSub(n, head), b_.getInt64(static_cast<int64_t>(lanes)));
    vectors = b_.CreateSelect(b_.CreateAnd(big, elem_aligned), vectors, b_.getInt64(0));
    llvm::Value* body_lo = b_.CreateSelect(b_.CreateICmpSGT(vectors, b_.getInt64(0)), b_.CreateAdd(lo, head), hi);
    llvm::Value* body_hi = b_.CreateAdd(body_lo, b_.CreateMul(vectors, b_.getInt64(static_cast<int64_t>(lanes))));
    plain(lo, body_lo);
    auto* vec_ty = llvm::FixedVectorType::get(elem, static_cast<unsigned>(lanes));
    llvm::MDNode* nontemporal =
        llvm::MDNode::get(ms_.ctx, {llvm::ConstantAsMetadata::get(b_.getInt32(1))});
    emit_loop(b_.getInt64(0), vectors, LoopHint::None, [&](llvm::Value* k) {
        llvm::Value* j0 = b_.CreateAdd(body_lo, b_.CreateMul(k, b_.getInt64(static_cast<int64_t>(lanes))));
        llvm::Value* v = llvm::PoisonValue::get(vec_ty);
        for (uint64_t l = 0; l < lanes; ++l) {
            llvm::Value* x = load_element(s.src.buffer, element(b_.CreateAdd(j0, b_.getInt64(static_cast<int64_t>(l))), false));
            v = b_.CreateInsertElement(v, to_storage(convert_for_store(x, st, dt), dt), b_.getInt64(static_cast<int64_t>(l)));
        }
        llvm::Value* p = element_ptr(s.dst.buffer, dinfo, element_offset(dinfo, element(j0, true)));
        auto* store = b_.CreateAlignedStore(v, p, llvm::Align(ms_.cpu.vector_bytes));
        store->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
        mark_access(store, s.dst.buffer);
    });
    plain(body_hi, hi);
    emitted_streaming_stores = true;
}

// Whether a global region lies wholly inside its tensor: 0 <= start and
// start + extent <= shape along every dimension (written start <= shape - extent, which
// cannot overflow: shapes are >= 0 and extents small constants).
static llvm::Value* region_inside(FunctionLowering& fl, const ir::Region& r) {
    auto& b = fl.builder();
    const BufferInfo& info = fl.buffer(r.buffer);
    llvm::Value* ok = b.getTrue();
    for (size_t d = 0; d < r.start.size(); ++d) {
        llvm::Value* start = fl.convert(fl.expr(r.start[d]), r.start[d]->type, DataType::i64());
        int64_t e = const_extent(r.extent[d], "a tile-op extent");
        ok = b.CreateAnd(ok, b.CreateICmpSGE(start, b.getInt64(0)));
        ok = b.CreateAnd(ok, b.CreateICmpSLE(start, b.CreateSub(info.shape[d], b.getInt64(e))));
    }
    return ok;
}

void FunctionLowering::emit_copy_elements(const ir::CopyNode& s, bool inside) {
    DataType st = s.src.buffer->dtype, dt = s.dst.buffer->dtype;
    llvm::Value* pad = convert_for_store(expr(s.pad), s.pad->type, dt);
    if (s.pad->type != st && !s.pad->type.is_float()) pad = convert(expr(s.pad), s.pad->type, dt);
    // A tile written out to a global tensor (never packed i4/u4 nibbles, never bool:
    // the streaming path stores whole storage elements).
    const bool streams = ms_.streaming_stores && s.dst.buffer->scope == ir::Scope::Global &&
                         s.src.buffer->scope != ir::Scope::Global && dt.bits >= 8 && !dt.is_bool();
    RowEmitter row;
    if (streams)
        row = [&](llvm::Value* lo, llvm::Value* hi, const std::vector<llvm::Value*>& si,
                  const std::vector<llvm::Value*>& di, size_t s_in, size_t d_in) {
            emit_streaming_row(s, lo, hi, si, di, s_in, d_in);
        };
    for_each_element(
        *this, s.src, s.dst, "copy",
        [&](const std::vector<llvm::Value*>& si, const std::vector<llvm::Value*>& di, bool valid) {
            llvm::Value* v = valid ? convert_for_store(load_element(s.src.buffer, si), st, dt) : pad;
            store_element(s.dst.buffer, di, v);
        },
        inside ? nullptr : row, inside);
}

void FunctionLowering::lower_copy(const ir::CopyNode& s) {
    // A tile read from a global tensor: where the region is inside the tensor (all but
    // the edge tiles), rows of constant length with no masking, which LLVM turns into
    // vector moves; the masked rows of dynamic length became three libc calls each
    // (memset, memcpy, memset: 480 per k-step of the f32 gemm's 128 x 32 and 32 x 128
    // tiles).
    if (s.src.buffer->scope == ir::Scope::Global && s.dst.buffer->scope != ir::Scope::Global)
        emit_if(
            region_inside(*this, s.src), [&] { emit_copy_elements(s, true); },
            [&] { emit_copy_elements(s, false); });
    else
        emit_copy_elements(s, false);
    note_tile_source(s);
}

const ir::BufferNode* FunctionLowering::lower_forwarded_copy(const ir::CopyNode& s,
                                                             const ForwardableCopy& use) {
    const BufferInfo& src = buffer(s.src.buffer);
    const size_t rank = s.src.buffer->rank();
    auto* unit = llvm::dyn_cast<llvm::ConstantInt>(src.strides[rank - 1]);
    if (!unit || unit->getSExtValue() != 1) {  // e.g. a transposed input: copy
        lower_copy(s);
        return nullptr;
    }
    llvm::Value* inside = region_inside(*this, s.src);
    std::vector<llvm::Value*> start;
    for (auto& e : s.src.start) start.push_back(convert(expr(e), e->type, DataType::i64()));
    // A plain GEP: outside the tensor (at the edges) the address is not used.
    llvm::Value* first =
        b_.CreateGEP(storage_type(ms_.ctx, s.src.buffer->dtype), src.base, element_offset(src, start));
    // A gemm's b is read in place only where its rows spread over the L1 cache's sets.
    // x86 L1 data caches index their 64 sets with address bits 6-11 (a way is 4 KiB), so
    // rows whose byte stride is a multiple of 512 start at no more than 8 set offsets,
    // and the micro-kernel's strip of b (all K rows, NR columns) evicts itself (the square
    // 1024 and 2048 gemms: every row at the same offset). There the copy, which packs the
    // rows next to each other, is faster: f32 2048^3 and 1536^3, 1 thread, 0.54-0.70x of
    // OpenBLAS with a and b in place against 0.76-0.91x copied; at 2000^3 (8000-byte
    // rows) 0.64-0.75x and 0.72-0.73x (a 2-core Xeon with 48 KiB L1, 3 rounds). The
    // micro-kernel reads a only MR (8) rows at a time, which fit the L1's ways even at one
    // set offset: a is read in place whatever its stride (256^3 to 2048^3: 0.80-0.91x of
    // OpenBLAS copied, 0.88-0.97x in place; docs/architecture.md, "CPU, sixth round").
    // An f16 or bf16 tile only feeds the gemm's packing (the micro-kernel reads the packed
    // f32 arrays): in place whatever its stride.
    llvm::Value* forward = inside;
    const DataType dt = s.dst.buffer->dtype;
    if (use.read_as_b && (dt == DataType::f32() || dt == DataType::f64())) {
        const int64_t elem_bytes = storage_type(ms_.ctx, s.src.buffer->dtype)->getPrimitiveSizeInBits() / 8;
        llvm::Value* stride_bytes = b_.CreateMul(src.strides[rank - 2], b_.getInt64(elem_bytes));
        llvm::Value* spread = b_.CreateICmpNE(b_.CreateAnd(stride_bytes, b_.getInt64(511)), b_.getInt64(0));
        forward = b_.CreateAnd(inside, spread);
    }
    if (!llvm::isa<llvm::Constant>(forward)) forward->setName("forward");
    emit_if(b_.CreateNot(forward), [&] {
        emit_if(
            inside, [&] { emit_copy_elements(s, true); }, [&] { emit_copy_elements(s, false); });
    });
    const BufferInfo& tile = buffer(s.dst.buffer);
    TileAlias alias;
    alias.base = b_.CreateSelect(forward, first, tile.base, s.dst.buffer->name + ".fwd");
    alias.row_stride =
        b_.CreateSelect(forward, src.strides[rank - 2], tile.strides[0], s.dst.buffer->name + ".fwd.stride");
    alias.in_place = forward;
    if (ir::pads_with_zero(s)) {
        alias.valid_rows = b_.CreateSub(src.shape[rank - 2], start[rank - 2]);
        alias.valid_cols = b_.CreateSub(src.shape[rank - 1], start[rank - 1]);
    }
    tile_aliases_[s.dst.buffer.get()] = alias;
    note_tile_source(s);
    return s.dst.buffer.get();
}

void FunctionLowering::note_tile_source(const ir::CopyNode& s) {
    tile_sources_.erase(s.dst.buffer.get());
    if (s.src.buffer->scope != ir::Scope::Global || s.dst.buffer->scope == ir::Scope::Global) return;
    for (size_t l = serial_loops_.size(); l-- > 0;)
        for (auto& e : s.src.start)
            if (ir::uses_var(e, serial_loops_[l].var)) {
                tile_sources_[s.dst.buffer.get()] = {s.src, l};
                return;
            }
}

std::optional<FunctionLowering::NextTileRows> FunctionLowering::next_tile_rows(const ir::Buffer& tile) {
    auto it = tile_sources_.find(tile.get());
    if (it == tile_sources_.end() || it->second.loop >= serial_loops_.size()) return std::nullopt;
    const ir::Region& r = it->second.src;
    const SerialLoop& loop = serial_loops_[it->second.loop];
    if (r.start.size() != 2 || r.buffer->dtype.bits < 8) return std::nullopt;
    for (auto& e : r.start) {
        bool pure = true;  // index arithmetic only: evaluating it again has no effect
        ir::for_each_expr(e, [&](const ir::Expr& x) {
            if (x->kind == ir::ExprKind::Load || x->kind == ir::ExprKind::Call) pure = false;
        });
        if (!pure) return std::nullopt;
    }
    // Rows along one dimension, consecutive elements along the other (unit stride).
    const BufferInfo& info = buffer(r.buffer);
    auto unit = [&](size_t d) {
        auto* c = llvm::dyn_cast<llvm::ConstantInt>(info.strides[d]);
        return c && c->getSExtValue() == 1;
    };
    size_t inner = unit(1) ? 1 : unit(0) ? 0 : 2;
    if (inner == 2) return std::nullopt;
    size_t outer = 1 - inner;
    const int64_t elem_bytes = storage_type(ms_.ctx, r.buffer->dtype)->getPrimitiveSizeInBits() / 8;
    NextTileRows next;
    next.rows = const_extent(r.extent[outer], "a copy extent");
    next.bytes = const_extent(r.extent[inner], "a copy extent") * elem_bytes;
    // A row of 128 bytes that starts off a line (e.g. 16 bytes past one, where glibc's
    // malloc puts large blocks) covers 3 lines: addresses 0, 64, ... and the last byte
    // reach every line the row touches, however it is aligned.
    next.lines = (next.bytes + 63) / 64 + 1;
    // The region's start with the loop variable one step on (past the loop's end in its
    // last iteration: a prefetch never faults).
    llvm::Value* saved = vars_[loop.var];
    vars_[loop.var] = convert(b_.CreateAdd(loop.index, b_.getInt64(1)), DataType::i64(), loop.var->type);
    std::vector<llvm::Value*> start;
    for (auto& e : r.start) start.push_back(convert(expr(e), e->type, DataType::i64()));
    vars_[loop.var] = saved;
    // A plain GEP: the address may lie outside the tensor.
    next.first = b_.CreateGEP(storage_type(ms_.ctx, r.buffer->dtype), info.base, element_offset(info, start));
    next.row_stride = b_.CreateMul(info.strides[outer], b_.getInt64(elem_bytes));
    return next;
}

void FunctionLowering::lower_atomic_add(const ir::AtomicAddNode& s) {
    DataType st = s.src.buffer->dtype, dt = s.dst.buffer->dtype;
    for_each_element(
        *this, s.src, s.dst, "atomic_add",
        [&](const std::vector<llvm::Value*>& si, const std::vector<llvm::Value*>& di, bool valid) {
            if (!valid) return;  // the source is a tile: always valid
            llvm::Value* v = load_element(s.src.buffer, si);
            // Into a narrow float, as the reference does: old + v in f64, rounded once to
            // the narrow type where it is stored. Rounding v to it first (then the sum
            // again) gave other bits, e.g. f8e4m3 sums from several blocks.
            if (is_narrow_float(dt) && st.is_float()) {
                if (!v->getType()->isDoubleTy()) v = b_.CreateFPExt(v, b_.getDoubleTy());
            } else {
                v = convert(v, st, dt);
            }
            atomic_add_element(s.dst.buffer, di, v);
        });
}

static std::optional<int64_t> const_of_expr(const ir::Expr& e) {
    return ir::as_const_int(e);
}

// Indices of a whole-tile region: start + i along each dimension.
static std::vector<llvm::Value*> region_index(FunctionLowering& fl, const ir::Region& r,
                                              const std::vector<llvm::Value*>& i) {
    std::vector<llvm::Value*> idx;
    for (size_t d = 0; d < i.size(); ++d) {
        auto c = ir::as_const_int(r.start[d]);
        if (c && *c == 0)
            idx.push_back(i[d]);
        else
            idx.push_back(fl.builder().CreateAdd(
                fl.convert(fl.expr(r.start[d]), r.start[d]->type, DataType::i64()), i[d]));
    }
    return idx;
}

static std::vector<int64_t> region_extents(const ir::Region& r, const char* what) {
    std::vector<int64_t> e;
    for (auto& x : r.extent) e.push_back(const_extent(x, what));
    return e;
}

void FunctionLowering::lower_fill(const ir::FillNode& s) {
    DataType t = s.dst.buffer->dtype;
    llvm::Value* v = convert_for_store(expr(s.value), s.value->type, t);
    emit_nest(region_extents(s.dst, "a fill extent"), LoopHint::Vectorize,
              [&](const std::vector<llvm::Value*>& i) {
                  store_element(s.dst.buffer, region_index(*this, s.dst, i), v);
              });
}

// The register-blocked gemm: c[M, N] += a[M, K] @ b[K, N] with a float accumulator in
// a block-local buffer. a and b are first packed, converted to the accumulator's type,
// into row-major stack arrays (a[M][K], b[K][N]), which takes every transpose and every
// narrow-float conversion out of the inner loop for O(M K + K N) work against the
// O(M N K) of the product. Then each MR x NR block of c is held in MR vector registers
// for the whole k loop: per k, one vector load of b and MR broadcasts of a feed MR fused
// multiply-adds, so c is read and written once per block rather than once per k.
// The sum over k for each element runs in the same order (k ascending, one fmuladd per
// step) as the plain loop nest, so the results are the same. Returns false (and emits
// nothing) when the shapes do not fit: extents that no MR/NR divides, or packed
// operands over kPackBudget bytes; the caller then uses the plain loop nest.
bool FunctionLowering::lower_gemm_blocked(const ir::GemmNode& s, int64_t M, int64_t N, int64_t K,
                                          const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& load_a,
                                          const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& load_b) {
    constexpr uint64_t kPackBudget = 256 * 1024;
    DataType acc = s.c.buffer->dtype;
    if (!(acc == DataType::f32() || acc == DataType::f64()) || s.c.buffer->scope == ir::Scope::Global) return false;
    // NR: two SIMD registers of c per row where N allows; MR: as many rows as keep the
    // accumulators within half the register file (the rest hold b, a and addresses).
    llvm::Type* acc_ty = reg_type(ms_.ctx, acc);
    const int64_t elem_bytes = acc_ty->getPrimitiveSizeInBits() / 8;
    const int64_t lanes = ms_.cpu.vector_bytes / elem_bytes;
    int64_t NR = 0, MR = 0;
    for (int64_t nr : {2 * lanes, lanes, lanes / 2, lanes / 4})
        if (nr > 0 && N % nr == 0) { NR = nr; break; }
    for (int64_t mr : {8, 4, 2, 1})
        if (M % mr == 0 && NR && mr * std::max<int64_t>(1, NR / lanes) <= ms_.cpu.vector_registers / 2) {
            MR = mr;
            break;
        }
    if (!NR || !MR || K <= 0) return false;
    uint64_t pack_bytes = static_cast<uint64_t>(M * K + K * N) * (acc_ty->getPrimitiveSizeInBits() / 8);
    if (pack_bytes > kPackBudget) return false;
    // The c region must be row-major with unit stride along n for vector loads.
    const BufferInfo& ci = buffer(s.c.buffer);
    auto unit = llvm::dyn_cast<llvm::ConstantInt>(ci.strides.back());
    if (!unit || unit->getSExtValue() != 1) return false;

    // An operand that is already what packing would make (a whole block-local tile of
    // the accumulator's type, not transposed, not c itself: a row-major [rows][cols]
    // array) is read in place: packing it was a 16 KB memcpy per operand and k-step in
    // the f32 gemm.
    auto packed_already = [&](const ir::Region& r, bool trans, int64_t rows, int64_t cols) -> llvm::Value* {
        const ir::Buffer& buf = r.buffer;
        if (trans || buf->scope == ir::Scope::Global || buf->dtype != acc || buf.get() == s.c.buffer.get() ||
            buf->rank() != 2)
            return nullptr;
        auto r0 = const_of_expr(buf->shape[0]), r1 = const_of_expr(buf->shape[1]);
        if (!r0 || !r1 || *r0 != rows || *r1 != cols) return nullptr;
        for (auto& st : r.start)
            if (auto c = const_of_expr(st); !c || *c != 0) return nullptr;
        return buffer(buf).base;
    };
    llvm::Value* pa = packed_already(s.a, s.trans_a, M, K);
    llvm::Value* pb = packed_already(s.b, s.trans_b, K, N);
    // Row strides of the operands as the micro-kernel reads them: the packed arrays' and
    // the tiles' are the extents; a forwarded copy's operand is read in the source tensor.
    llvm::Value* lda = b_.getInt64(K);
    llvm::Value* ldb = b_.getInt64(N);
    if (auto it = tile_aliases_.find(s.a.buffer.get()); pa && it != tile_aliases_.end()) {
        pa = it->second.base;
        lda = it->second.row_stride;
    }
    llvm::Value* b_in_place = nullptr;  // where b is a forwarded copy's alias: whether no copy ran
    if (auto it = tile_aliases_.find(s.b.buffer.get()); pb && it != tile_aliases_.end()) {
        pb = it->second.base;
        b_in_place = it->second.in_place;
        ldb = it->second.row_stride;
    }
    // The k steps whose products are not all 0 * 0: where a's and b's tiles are copies
    // padded with zeros (forwarded, so nothing else writes them), a's columns and b's rows
    // from max(a's valid columns, b's valid rows) on are both padding (the last k-step's
    // at a ragged K). Skipping them leaves every sum as it was, but for the sign of a
    // zero: a -0 accumulator would have become +0 (fill(acc, 0) starts at +0, which
    // sums of finite products never turn into -0).
    llvm::Value* k_end = b_.getInt64(K);
    {
        auto ia = tile_aliases_.find(s.a.buffer.get());
        auto ib = tile_aliases_.find(s.b.buffer.get());
        if (ia != tile_aliases_.end() && ib != tile_aliases_.end() && ia->second.valid_cols &&
            ib->second.valid_rows) {
            llvm::Value* v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, ia->second.valid_cols,
                                                      ib->second.valid_rows, nullptr, "gemm.k_valid");
            v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, b_.getInt64(0));
            k_end = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v, b_.getInt64(K), nullptr, "gemm.k_end");
        }
    }
    // The micro-tiles that hold some element the accumulator's store can reach (all of
    // them where that is not known): at a ragged edge the rest are never read.
    llvm::Value* row_tiles = b_.getInt64(M / MR);
    llvm::Value* col_tiles = b_.getInt64(N / NR);
    if (auto it = stored_extents_.find(s.c.buffer.get()); it != stored_extents_.end()) {
        auto reached = [&](const ir::Expr& limit, int64_t extent, int64_t step, const char* name) {
            llvm::Value* v = b_.CreateSExtOrTrunc(expr(limit), b_.getInt64Ty());
            v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, b_.getInt64(0));
            v = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v, b_.getInt64(extent));
            return b_.CreateUDiv(b_.CreateAdd(v, b_.getInt64(step - 1)), b_.getInt64(step), name);
        };
        row_tiles = reached(it->second.rows, M, MR, "gemm.stored.row_tiles");
        col_tiles = reached(it->second.cols, N, NR, "gemm.stored.col_tiles");
    }
    // Packed: the rows of a and of b that the micro-tiles read (each row's columns all,
    // so that the vectorised loop has a constant trip count).
    if (!pa) {
        pa = entry_alloca(acc_ty, static_cast<uint64_t>(M * K), "gemm.a");
        emit_nest({b_.CreateMul(row_tiles, b_.getInt64(MR)), b_.getInt64(K)}, LoopHint::VectorizeFull,
                  [&](const std::vector<llvm::Value*>& i) {
                      llvm::Value* off = b_.CreateAdd(b_.CreateMul(i[0], b_.getInt64(K)), i[1]);
                      b_.CreateStore(load_a(i[0], i[1]), b_.CreateGEP(acc_ty, pa, off));
                  });
    }
    if (!pb) {
        pb = entry_alloca(acc_ty, static_cast<uint64_t>(K * N), "gemm.b");
        emit_nest({k_end, b_.getInt64(N)}, LoopHint::VectorizeFull, [&](const std::vector<llvm::Value*>& i) {
            llvm::Value* off = b_.CreateAdd(b_.CreateMul(i[0], b_.getInt64(N)), i[1]);
            b_.CreateStore(load_b(i[0], i[1]), b_.CreateGEP(acc_ty, pb, off));
        });
    }

    // The operands' next tiles, where they are copied from global tensors in a serial
    // loop around the gemm: each micro-tile below prefetches its share of their lines,
    // so that the loads arrive spread over the whole product instead of stalling the
    // next copy (a row of each tile on its own page: no hardware prefetcher follows).
    std::vector<NextTileRows> prefetches;
    for (const ir::Buffer& operand : {s.a.buffer, s.b.buffer})
        if (auto next = next_tile_rows(operand)) prefetches.push_back(*next);
    const int64_t micro_tiles = (M / MR) * (N / NR);

    auto* vec_ty = llvm::FixedVectorType::get(acc_ty, static_cast<unsigned>(NR));
    const llvm::Align elem_align(acc_ty->getPrimitiveSizeInBits() / 8);
    // One stack slot per accumulator row; SROA turns them into registers.
    std::vector<llvm::Value*> slots;
    for (int64_t r = 0; r < MR; ++r) slots.push_back(entry_alloca(vec_ty, 1, "gemm.acc"));
    // The micro-tiles row by row (cols_outer false: each row strip of a, MR x K, stays in L1
    // while it meets every column strip of b), or column by column (b's K x NR strip stays
    // while it meets every row strip of a).
    auto emit_micro_tiles = [&](bool cols_outer) {
        std::vector<llvm::Value*> nest = cols_outer ? std::vector<llvm::Value*>{col_tiles, row_tiles}
                                                    : std::vector<llvm::Value*>{row_tiles, col_tiles};
        emit_nest(nest, LoopHint::None, [&](const std::vector<llvm::Value*>& blk_in) {
            std::vector<llvm::Value*> blk = blk_in;
            if (cols_outer) std::swap(blk[0], blk[1]);
            llvm::Value* m0 = b_.CreateMul(blk[0], b_.getInt64(MR));
            llvm::Value* n0 = b_.CreateMul(blk[1], b_.getInt64(NR));
            auto c_ptr = [&](int64_t r) {
                auto idx = region_index(*this, s.c, {b_.CreateAdd(m0, b_.getInt64(r)), n0});
                return element_ptr(s.c.buffer, ci, element_offset(ci, idx));
            };
            for (int64_t r = 0; r < MR; ++r)
                b_.CreateStore(b_.CreateAlignedLoad(vec_ty, c_ptr(r), elem_align), slots[r]);
            llvm::Value* tile = b_.CreateAdd(b_.CreateMul(blk[0], b_.getInt64(N / NR)), blk[1]);
            for (const NextTileRows& next : prefetches) {
                // Lines [tile * per_tile, (tile + 1) * per_tile) of the next tile, row by row.
                const int64_t total = next.rows * next.lines;
                const int64_t per_tile = (total + micro_tiles - 1) / micro_tiles;
                for (int64_t q = 0; q < per_tile; ++q) {
                    llvm::Value* line =
                        b_.CreateAdd(b_.CreateMul(tile, b_.getInt64(per_tile)), b_.getInt64(q));
                    llvm::Value* row = b_.CreateUDiv(line, b_.getInt64(next.lines));
                    if (total % micro_tiles != 0)
                        row =
                            b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, row, b_.getInt64(next.rows - 1));
                    llvm::Value* col = b_.CreateURem(line, b_.getInt64(next.lines));
                    llvm::Value* in_row =
                        b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateMul(col, b_.getInt64(64)),
                                                 b_.getInt64(next.bytes - 1));
                    llvm::Value* off = b_.CreateAdd(b_.CreateMul(row, next.row_stride), in_row);
                    llvm::Value* p = b_.CreateGEP(b_.getInt8Ty(), next.first, off);
                    // read, into every cache level (prefetcht0; into L2 only measured no
                    // better), data
                    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {p->getType()},
                                       {p, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
                }
            }
            emit_loop(b_.getInt64(0), k_end, LoopHint::None, [&](llvm::Value* k) {
                llvm::Value* boff = b_.CreateAdd(b_.CreateMul(k, ldb), n0);
                llvm::Value* bv = b_.CreateAlignedLoad(vec_ty, b_.CreateGEP(acc_ty, pb, boff), elem_align);
                for (int64_t r = 0; r < MR; ++r) {
                    llvm::Value* row = b_.CreateAdd(m0, b_.getInt64(r));
                    llvm::Value* aoff = b_.CreateAdd(b_.CreateMul(row, lda), k);
                    llvm::Value* av = b_.CreateVectorSplat(
                        static_cast<unsigned>(NR), b_.CreateLoad(acc_ty, b_.CreateGEP(acc_ty, pa, aoff)));
                    llvm::Value* cv = b_.CreateLoad(vec_ty, slots[r]);
                    b_.CreateStore(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec_ty}, {av, bv, cv}),
                                   slots[r]);
                }
            });
            for (int64_t r = 0; r < MR; ++r)
                b_.CreateAlignedStore(b_.CreateLoad(vec_ty, slots[r]), c_ptr(r), elem_align);
        });
    };
    // Where b is read in place (a forwarded copy: each of its K rows a line of its own, a
    // row stride apart), column by column, so that b's strip is read from memory once per
    // gemm; a packed b (the tile, contiguous) row by row. f32 gemm, 1 thread, 7 rounds,
    // medians (ranges) of the ratio to OpenBLAS: b in place, 2000^3 0.63x (0.61-0.75x) row
    // by row, 0.67x (0.65-0.81x) so; 1000^3 0.65x (0.62-0.75x), 0.70x (0.67-0.82x). b
    // copied (2048^3: rows 8 KiB apart), column by column measured 0.76-0.77x against row
    // by row's 0.80-0.81x (docs/architecture.md, "CPU, fifth round").
    if (b_in_place) {
        emit_if(
            b_in_place, [&] { emit_micro_tiles(true); }, [&] { emit_micro_tiles(false); });
    } else {
        emit_micro_tiles(false);
    }
    return true;
}

void FunctionLowering::lower_gemm(const ir::GemmNode& s) {
    auto ae = region_extents(s.a, "a gemm extent");
    auto be = region_extents(s.b, "a gemm extent");
    auto ce = region_extents(s.c, "a gemm extent");
    if (ae.size() != 2 || be.size() != 2 || ce.size() != 2)
        TILEC_ICE("CPU backend: gemm on tiles that are not 2-d");
    int64_t M = ce[0], N = ce[1], K = s.trans_a ? ae[0] : ae[1];
    DataType acc = s.c.buffer->dtype, at = s.a.buffer->dtype, bt = s.b.buffer->dtype;
    bool fp = acc.is_float();
    auto mul_add = [&](llvm::Value* x, llvm::Value* y, llvm::Value* z) -> llvm::Value* {
        if (fp) return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, z});
        return b_.CreateAdd(b_.CreateMul(x, y), z);
    };
    // An operand whose copy was forwarded (lower_forwarded_copy) is read where the alias
    // points: whole and not transposed (forwardable_copies), so [m, k] is row m, column k.
    auto aliased = [&](const ir::Region& r, llvm::Value* row, llvm::Value* col) -> llvm::Value* {
        auto it = tile_aliases_.find(r.buffer.get());
        if (it == tile_aliases_.end()) return nullptr;
        llvm::Value* off = b_.CreateAdd(b_.CreateMul(row, it->second.row_stride), col);
        llvm::Type* ty = storage_type(ms_.ctx, r.buffer->dtype);
        return from_storage(b_.CreateLoad(ty, b_.CreateGEP(ty, it->second.base, off)), r.buffer->dtype);
    };
    auto load_a = [&](llvm::Value* m, llvm::Value* k) {
        if (llvm::Value* v = aliased(s.a, m, k)) return convert(v, at, acc);
        std::vector<llvm::Value*> i =
            s.trans_a ? std::vector<llvm::Value*>{k, m} : std::vector<llvm::Value*>{m, k};
        return convert(load_element(s.a.buffer, region_index(*this, s.a, i)), at, acc);
    };
    auto load_b = [&](llvm::Value* k, llvm::Value* n) {
        if (llvm::Value* v = aliased(s.b, k, n)) return convert(v, bt, acc);
        std::vector<llvm::Value*> i =
            s.trans_b ? std::vector<llvm::Value*>{n, k} : std::vector<llvm::Value*>{k, n};
        return convert(load_element(s.b.buffer, region_index(*this, s.b, i)), bt, acc);
    };
    auto c_index = [&](llvm::Value* m, llvm::Value* n) { return region_index(*this, s.c, {m, n}); };
    llvm::Type* acc_ty = reg_type(ms_.ctx, acc);
    if (s.clear) {
        llvm::Value* zero = const_value(0.0, acc);
        emit_nest({M, N}, LoopHint::Vectorize, [&](const std::vector<llvm::Value*>& i) {
            store_element(s.c.buffer, c_index(i[0], i[1]), zero);
        });
    }
    if (fp && lower_gemm_blocked(s, M, N, K, load_a, load_b)) return;
    if (s.trans_b && !s.trans_a) {
        // Rows of a and of b are contiguous along k: a dot product per element of c.
        llvm::Value* slot = entry_alloca(acc_ty, 1, "dot");
        emit_nest({M, N}, LoopHint::None, [&](const std::vector<llvm::Value*>& i) {
            b_.CreateStore(load_element(s.c.buffer, c_index(i[0], i[1])), slot);
            emit_loop(b_.getInt64(0), b_.getInt64(K), LoopHint::Vectorize, [&](llvm::Value* k) {
                b_.CreateStore(mul_add(load_a(i[0], k), load_b(k, i[1]), b_.CreateLoad(acc_ty, slot)), slot);
            });
            store_element(s.c.buffer, c_index(i[0], i[1]), b_.CreateLoad(acc_ty, slot));
        });
        return;
    }
    // c[m, :] += a[m, k] * b[k, :], the inner loop along a row of c and of b.
    emit_nest({M, K}, LoopHint::None, [&](const std::vector<llvm::Value*>& i) {
        llvm::Value* av = load_a(i[0], i[1]);
        emit_loop(b_.getInt64(0), b_.getInt64(N), LoopHint::Vectorize, [&](llvm::Value* n) {
            auto ci = c_index(i[0], n);
            store_element(s.c.buffer, ci, mul_add(av, load_b(i[1], n), load_element(s.c.buffer, ci)));
        });
    });
}

llvm::Value* FunctionLowering::reduce_identity(const ir::ReduceNode& s) {
    DataType dt = s.dst.buffer->dtype;
    bool fp = dt.is_float();
    switch (s.reduce_kind) {
    case ir::ReduceKind::Sum:
    case ir::ReduceKind::AbsMax: return const_value(0.0, dt);
    case ir::ReduceKind::Max:
        return fp ? llvm::ConstantFP::getInfinity(reg_type(ms_.ctx, dt), true) : const_int(dt.min_value(), dt);
    case ir::ReduceKind::Min:
        return fp ? llvm::ConstantFP::getInfinity(reg_type(ms_.ctx, dt), false) : const_int(dt.max_value(), dt);
    }
    TILEC_ICE("CPU backend: unknown reduction");
}

llvm::Value* FunctionLowering::reduce_combine(const ir::ReduceNode& s, llvm::Value* acc, llvm::Value* x) {
    DataType dt = s.dst.buffer->dtype;
    bool fp = dt.is_float();
    bool is_signed = dt.is_int();
    switch (s.reduce_kind) {
    case ir::ReduceKind::Sum: return fp ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x);
    case ir::ReduceKind::AbsMax:
        x = fp ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
               : (is_signed ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse()) : x);
        [[fallthrough]];
    case ir::ReduceKind::Max:
    case ir::ReduceKind::Min: {
        bool is_min = s.reduce_kind == ir::ReduceKind::Min;
        if (fp) return float_min_max(is_min, acc, x);
        return b_.CreateBinaryIntrinsic(is_signed ? (is_min ? llvm::Intrinsic::smin : llvm::Intrinsic::smax)
                                                  : (is_min ? llvm::Intrinsic::umin : llvm::Intrinsic::umax),
                                        acc, x);
    }
    }
    return acc;
}

void FunctionLowering::lower_reduce(const ir::ReduceNode& s) {
    auto se = region_extents(s.src, "a reduce extent");
    auto de = region_extents(s.dst, "a reduce extent");
    DataType st = s.src.buffer->dtype, dt = s.dst.buffer->dtype;
    bool keep_dim = de.size() == se.size();
    size_t dim = static_cast<size_t>(s.dim);
    std::vector<int64_t> out;
    for (size_t d = 0; d < se.size(); ++d)
        if (d != dim) out.push_back(se[d]);
    llvm::Value* identity = reduce_identity(s);
    llvm::Type* acc_ty = reg_type(ms_.ctx, dt);
    llvm::Value* slot = entry_alloca(acc_ty, 1, "red");
    emit_nest(out, LoopHint::None, [&](const std::vector<llvm::Value*>& oi) {
        std::vector<llvm::Value*> di = oi;
        if (keep_dim) di.insert(di.begin() + static_cast<std::ptrdiff_t>(dim), b_.getInt64(0));
        di = region_index(*this, s.dst, di);
        b_.CreateStore(s.clear ? identity : load_element(s.dst.buffer, di), slot);
        emit_loop(b_.getInt64(0), b_.getInt64(se[dim]), LoopHint::Vectorize, [&](llvm::Value* j) {
            std::vector<llvm::Value*> si = oi;
            si.insert(si.begin() + static_cast<std::ptrdiff_t>(dim), j);
            llvm::Value* x = convert(load_element(s.src.buffer, region_index(*this, s.src, si)), st, dt);
            b_.CreateStore(reduce_combine(s, b_.CreateLoad(acc_ty, slot), x), slot);
        });
        store_element(s.dst.buffer, di, b_.CreateLoad(acc_ty, slot));
    });
}

void FunctionLowering::lower_cumsum(const ir::CumsumNode& s) {
    auto se = region_extents(s.src, "a cumsum extent");
    DataType st = s.src.buffer->dtype, dt = s.dst.buffer->dtype;
    size_t dim = static_cast<size_t>(s.dim);
    std::vector<int64_t> out;
    for (size_t d = 0; d < se.size(); ++d)
        if (d != dim) out.push_back(se[d]);
    llvm::Type* acc_ty = reg_type(ms_.ctx, dt);
    llvm::Value* slot = entry_alloca(acc_ty, 1, "scan");
    bool fp = dt.is_float();
    emit_nest(out, LoopHint::None, [&](const std::vector<llvm::Value*>& oi) {
        b_.CreateStore(const_value(0.0, dt), slot);
        emit_loop(b_.getInt64(0), b_.getInt64(se[dim]), LoopHint::None, [&](llvm::Value* j) {
            llvm::Value* pos = s.reverse ? b_.CreateSub(b_.getInt64(se[dim] - 1), j) : j;
            std::vector<llvm::Value*> i = oi;
            i.insert(i.begin() + static_cast<std::ptrdiff_t>(dim), pos);
            llvm::Value* x = convert(load_element(s.src.buffer, region_index(*this, s.src, i)), st, dt);
            llvm::Value* acc = b_.CreateLoad(acc_ty, slot);
            acc = fp ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x);
            b_.CreateStore(acc, slot);
            store_element(s.dst.buffer, region_index(*this, s.dst, i), acc);
        });
    });
}

}  // namespace tilec::codegen
