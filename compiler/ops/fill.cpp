// The home of fill (see fill.h). A global tensor is refused at the call: filling a
// tensor with no bounds to mask is what fill-then-copy says explicitly.
#include "ops/fill.h"

#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_fill(ElabContext& ctx) {
    auto a = ctx.bind({"dst", "value"}, 2);
    if (!a) return nullptr;
    const auto& args = *a;
    TileOperand dst = ctx.tile(*args[0], "fill", "destination");
    if (!dst.ok()) return nullptr;
    if (!dst.whole) {
        ctx.diags().error(dst.range, "fill takes a whole tile");
        return nullptr;
    }
    if (dst.buffer->scope == Scope::Global) {
        ctx.diags().error(dst.range, "fill works on shared, fragment and local tiles; to set a tensor, fill a tile "
                                     "and copy it");
        return nullptr;
    }
    Expr x = ctx.scalar(*args[1], dst.buffer->dtype, "the fill value");
    if (!x) return nullptr;
    ctx.mark_written(dst.buffer);
    return make_fill(full_region(dst.buffer), x, ctx.loc());
}

void fill_layout(const FillNode&, LayoutConstraints&) {}

Stmt lower_fill(const FillNode& f, LowerContext& lc) {
    const Buffer& b = f.dst.buffer;
    if (b->scope != Scope::Fragment && b->scope != Scope::Shared)
        unsupported(f.loc, std::string("fill of a ") + scope_name(b->scope) + " buffer");
    if (!is_full_region(f.dst))
        unsupported(f.loc,
                    "fill of part of " + std::string(scope_name(b->scope)) + " buffer '" + b->name + "'");
    Expr v = lc.uniform(f.value);
    if (b->scope == Scope::Fragment) {
        const auto& info = lc.registers(b);
        return lc.register_loop(info.frag, f.loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return make_store(info.regs, {r}, v, f.loc);
        });
    }
    auto shape = *const_shape(b->shape);
    auto F = lc.default_fragment(shape);
    if (!F) unsupported(f.loc, "fill of a tile that does not divide among the threads");
    return lc.register_loop(*F, f.loc, [&](const Var&, const std::vector<Expr>& coord, const Expr& rep) {
        return guard_replica(rep, make_store(b, coord, v, f.loc));
    });
}

}  // namespace tilec::ops
