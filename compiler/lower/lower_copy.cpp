// Thread-level lowering of copy and fill (part of lower_to_thread_level): each thread
// moves the elements its Fragment gives it; a copy touching a global tensor gets an
// unmasked path when the whole region is in bounds (what vector loads need) and a
// per-element masked one for the ragged last block.
#include <cmath>
#include <cstdint>

#include "layout/index_expr.h"
#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

namespace {

std::vector<int64_t> squeeze(const std::vector<int64_t>& v) {
    std::vector<int64_t> out;
    for (auto e : v)
        if (e != 1) out.push_back(e);
    return out;
}

}  // namespace

// The global indices of the tile coordinate `coord` (unit dims of either side skipped).
std::vector<Expr> global_indices(const Region& g, const std::vector<int64_t>& tile,
                                 const std::vector<Expr>& coord) {
    std::vector<Expr> live;
    for (size_t d = 0; d < tile.size(); ++d)
        if (tile[d] != 1) live.push_back(coord[d]);
    std::vector<Expr> out;
    size_t k = 0;
    for (size_t d = 0; d < g.start.size(); ++d) {
        if (is_const_int(g.extent[d], 1))
            out.push_back(g.start[d]);
        else
            out.push_back(layout::idx_add(g.start[d], live.at(k++)));
    }
    return out;
}

Expr in_bounds(const Buffer& b, const std::vector<Expr>& idx) {
    Expr c;
    for (size_t d = 0; d < idx.size(); ++d) {
        Expr ok = logical_and(ge(idx[d], make_int(0)), lt(idx[d], b->shape[d]));
        c = c ? logical_and(c, ok) : ok;
    }
    return c ? c : make_bool(true);
}

// The whole region inside its tensor: the unmasked path's condition.
Expr region_in_bounds(const Region& g) {
    Expr c;
    for (size_t d = 0; d < g.start.size(); ++d) {
        Expr ok =
            logical_and(ge(g.start[d], make_int(0)), le(add(g.start[d], g.extent[d]), g.buffer->shape[d]));
        c = c ? logical_and(c, ok) : ok;
    }
    return c ? c : make_bool(true);
}

ThreadLowering::Side ThreadLowering::classify(const Region& r, SourceLoc loc, const char* what) {
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

Expr ThreadLowering::read(const Side& s, const Var& r, const std::vector<Expr>& coord) {
    const Buffer& b = s.region->buffer;
    if (s.global) return make_load(b, global_indices(*s.region, tileshape_, coord));
    if (b->scope == Scope::Fragment) return make_load(frags_.at(b.get()).regs, {r});
    return make_load(b, coord);
}

Stmt ThreadLowering::write(const Side& s, const Var& r, const std::vector<Expr>& coord, const Expr& rep,
                           Expr v, SourceLoc loc) {
    const Buffer& b = s.region->buffer;
    if (s.global)
        return guard_replica(rep, make_store(b, global_indices(*s.region, tileshape_, coord), v, loc));
    if (b->scope == Scope::Fragment) return make_store(frags_.at(b.get()).regs, {r}, v, loc);
    return guard_replica(rep, make_store(b, coord, v, loc));
}

Stmt ThreadLowering::lower_copy(const CopyNode& c) {
    Side src = classify(c.src, c.loc, "from");
    Side dst = classify(c.dst, c.loc, "into");
    if (src.global && dst.global) unsupported(c.loc, "copy between two global tensors");
    const Side& tile_side = src.global ? dst : src;
    tileshape_ = tile_side.tile;
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
        if (squeeze(ext) != squeeze(tileshape_)) TILEC_ICE("thread-level lowering: copy extents disagree");
    }
    // The thread split: the fragment's own, or the shape's for shared memory.
    std::optional<layout::Fragment> F;
    if (tile_side.region->buffer->scope == Scope::Fragment)
        F = frags_.at(tile_side.region->buffer.get()).frag;
    else if (!src.global && src.region->buffer->scope == Scope::Fragment)
        F = frags_.at(src.region->buffer.get()).frag;
    else if (!dst.global && dst.region->buffer->scope == Scope::Fragment)
        F = frags_.at(dst.region->buffer.get()).frag;
    else
        F = fragment_for(tileshape_);
    if (!F)
        unsupported(c.loc, "copy of a tile of shape " + layout::shape_str(tileshape_) +
                               " that does not divide among the threads");

    DataType sd = src.region->buffer->dtype, dd = dst.region->buffer->dtype;
    auto conv = [&](Expr v) { return sd == dd ? v : make_cast(dd, v, c.loc); };
    auto plain = [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        return write(dst, r, coord, rep, conv(read(src, r, coord)), c.loc);
    };
    if (!g) return register_loop(*F, c.loc, plain);
    Stmt fast = register_loop(*F, c.loc, plain);
    Stmt masked =
        register_loop(*F, c.loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            auto gi = global_indices(*g->region, tileshape_, coord);
            Expr inside = in_bounds(g->region->buffer, gi);
            if (src.global) {
                Stmt load = write(dst, r, coord, rep, conv(read(src, r, coord)), c.loc);
                Stmt pad = write(dst, r, coord, rep, conv(c.pad ? c.pad : make_zero(sd)), c.loc);
                return make_if(inside, load, pad, c.loc);
            }
            return make_if(inside, plain(r, coord, rep), nullptr, c.loc);
        });
    return make_if(region_in_bounds(*g->region), fast, masked, c.loc);
}

Stmt ThreadLowering::lower_fill(const FillNode& f) {
    const Buffer& b = f.dst.buffer;
    if (b->scope != Scope::Fragment && b->scope != Scope::Shared)
        unsupported(f.loc, std::string("fill of a ") + scope_name(b->scope) + " buffer");
    if (!is_full_region(f.dst))
        unsupported(f.loc,
                    "fill of part of " + std::string(scope_name(b->scope)) + " buffer '" + b->name + "'");
    Expr v = uniform(f.value);
    if (b->scope == Scope::Fragment) {
        const auto& info = frags_.at(b.get());
        return register_loop(info.frag, f.loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return make_store(info.regs, {r}, v, f.loc);
        });
    }
    auto shape = *const_shape(b->shape);
    auto F = fragment_for(shape);
    if (!F) unsupported(f.loc, "fill of a tile that does not divide among the threads");
    return register_loop(*F, f.loc, [&](const Var&, const std::vector<Expr>& coord, const Expr& rep) {
        return guard_replica(rep, make_store(b, coord, v, f.loc));
    });
}

}  // namespace tilec::lower::detail
