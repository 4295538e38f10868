// Argument checks of the ops along one dimension (see axis_args.h), kept together so
// that reduce_* and cumsum word the same mistakes the same way.
#include "ops/axis_args.h"

#include "ops/elab_util.h"

namespace tilec::ops {

using namespace ir;

std::optional<AxisArgs> elab_axis_args(ElabContext& ctx, bool scan) {
    const std::string& name = ctx.name();
    auto a = ctx.bind({"src", "dst", "dim", scan ? "reverse" : "clear"}, 2);
    if (!a) return std::nullopt;
    const auto& args = *a;
    DiagnosticEngine& diags = ctx.diags();
    TileOperand src = ctx.tile(*args[0], name.c_str(), "source");
    TileOperand dst = ctx.tile(*args[1], name.c_str(), "destination");
    if (!src.ok() || !dst.ok()) return std::nullopt;
    for (TileOperand* t : {&src, &dst}) {
        if (!t->whole || t->buffer->scope == Scope::Global) {
            diags.error(t->range, name + " works on whole shared, fragment or local tiles; copy tensors into a "
                                         "tile first");
            return std::nullopt;
        }
    }
    int64_t rank = static_cast<int64_t>(src.buffer->rank());
    int64_t dim = -1;
    if (args[2]) {
        auto c = ctx.const_int(*args[2], "the dimension");
        if (!c) return std::nullopt;
        dim = *c;
    }
    if (rank == 0 || dim < -rank || dim >= rank) {
        diags.error(args[2] ? args[2]->range : ctx.call_range(),
                    "dim " + std::to_string(dim) + " is out of range for the " + std::to_string(rank) +
                        "-d tile '" + src.buffer->name + "'");
        return std::nullopt;
    }
    if (dim < 0) dim += rank;
    bool flag = !scan;
    if (args[3]) {
        auto f = ctx.const_bool(*args[3], scan ? "reverse" : "clear");
        if (!f) return std::nullopt;
        flag = *f;
    }
    std::vector<int64_t> ss, ds;
    shape_values(src.buffer, ss);
    shape_values(dst.buffer, ds);
    std::vector<int64_t> want = ss;
    if (!scan) want.erase(want.begin() + dim);
    std::vector<int64_t> want_keep = ss;
    want_keep[dim] = 1;
    bool ok = ds == want || (!scan && ds == want_keep) || (!scan && want.empty() && ds == std::vector<int64_t>{1});
    if (!ok) {
        std::vector<Expr> w;
        for (auto x : want) w.push_back(make_int(x));
        diags.error(dst.range, name + " of '" + src.buffer->name + "' " + shape_str(src.buffer->shape) +
                                   (scan ? "" : " over dim " + std::to_string(dim)) + " gives " + shape_str(w) +
                                   ", but '" + dst.buffer->name + "' is " + shape_str(dst.buffer->shape));
        return std::nullopt;
    }
    if (src.buffer->dtype.is_bool() || dst.buffer->dtype.is_bool()) {
        diags.error(ctx.call_range(), name + " needs numeric tiles");
        return std::nullopt;
    }
    ctx.mark_written(dst.buffer);
    return AxisArgs{full_region(src.buffer), full_region(dst.buffer), static_cast<int>(dim), flag};
}

}  // namespace tilec::ops
