// The home of copy (see copy.h): why each rule holds is said where it is applied. The
// thread-level part is what vector loads need: one test of the whole global region picks
// an unmasked path, and only the ragged last block pays for a mask per element.
#include "ops/copy.h"

#include "layout/index_expr.h"
#include "ops/elab_util.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

namespace {

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

void copy_layout(const CopyNode& op, LayoutConstraints& lc) {
    const Buffer& s = op.src.buffer;
    const Buffer& d = op.dst.buffer;
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
    return make_if(region_in_bounds(*g->region), fast, masked, c.loc);
}

}  // namespace tilec::ops
