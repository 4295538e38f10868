// Thread-level lowering of reductions (part of lower_to_thread_level), and the layout
// of the fragments they write.
//
// The destination's layout is the source's reduced (Fragment::reduce_dim, replicated
// over the threads that held a row), as layout inference (layout_inference.cpp)
// plans it, so a row's result sits in every thread that held part of the row.
#include <cmath>
#include <cstdint>

#include "ir/visitor.h"
#include "layout/index_expr.h"
#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

// ---- reductions -----------------------------------------------------------------
// dst = reduce(src, dim) for whole fragments, dst laid out as src reduced (see
// layout_inference.cpp). Each thread folds its own registers into one partial per row
// it holds; the partials go to a shared scratch [rows x replicas]; after a barrier
// every replica folds its row's partials in the same order, so all replicas agree
// bit for bit; a second barrier lets the scratch be reused (the reduce in a loop).
// Floats accumulate in at least f32, as the interpreter accumulates in double.
Stmt ThreadLowering::lower_reduce(const ReduceNode& op) {
    const Buffer& sb = op.src.buffer;
    const Buffer& db = op.dst.buffer;
    SourceLoc loc = op.loc;
    if (sb->scope != Scope::Fragment || db->scope != Scope::Fragment || !is_full_region(op.src) ||
        !is_full_region(op.dst))
        unsupported(loc, "reduce other than of a whole fragment into a whole fragment");
    const FragInfo& src = frags_.at(sb.get());
    const FragInfo& dst = frags_.at(db.get());
    if (src.frag.replicate() > 1)
        unsupported(loc, "reduce of fragment '" + sb->name + "' held by several threads (replicas)");
    auto G = src.frag.reduce_dim(static_cast<size_t>(op.dim), db->rank() == sb->rank());
    if (!G || !G->same_slots(dst.frag))
        unsupported(loc, "reduce into fragment '" + db->name + "' laid out other than '" + sb->name +
                             "' reduced (needs layout inference)");
    DataType dt = db->dtype;
    DataType acc = dt.is_float() ? (dt.bits > 32 ? dt : DataType::f32()) : dt;
    Expr identity;
    switch (op.reduce_kind) {
    case ReduceKind::Sum:
    case ReduceKind::AbsMax: identity = make_zero(acc); break;
    case ReduceKind::Max:
    case ReduceKind::Min: {
        bool hi = op.reduce_kind == ReduceKind::Min;
        if (acc.is_float()) {
            identity = make_float(hi ? HUGE_VAL : -HUGE_VAL, acc);
        } else if (acc.is_uint()) {
            identity =
                hi ? make_int(acc.bits >= 64 ? -1 : (int64_t{1} << acc.bits) - 1, acc) : make_zero(acc);
        } else {
            int64_t m = acc.bits >= 64 ? INT64_MAX : (int64_t{1} << (acc.bits - 1)) - 1;
            identity = make_int(hi ? m : -m - 1, acc);
        }
        break;
    }
    }
    auto combine = [&](Expr a, Expr x) -> Expr {
        switch (op.reduce_kind) {
        case ReduceKind::Sum: return add(a, x);
        case ReduceKind::Max: return maximum(a, x);
        case ReduceKind::Min: return minimum(a, x);
        case ReduceKind::AbsMax:
            if (acc.is_uint()) return maximum(a, x);
            return maximum(a, make_select(lt(x, make_zero(acc)), sub(make_zero(acc), x), x, loc));
        }
        TILEC_ICE("thread-level lowering: unknown reduce kind");
    };
    auto as_acc = [&](Expr v, DataType t) { return t == acc ? v : make_cast(acc, v, loc); };

    Buffer part =
        make_buffer(db->name + "_part", acc, {make_int(G->registers_per_thread())}, Scope::Register, loc);
    Stmt init = register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
        return make_store(part, {r}, identity, loc);
    });
    size_t dim = static_cast<size_t>(op.dim);
    bool keep = db->rank() == sb->rank();
    Stmt fold = register_loop(src.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
        std::vector<Expr> out;
        for (size_t d = 0; d < coord.size(); ++d) {
            if (d != dim)
                out.push_back(coord[d]);
            else if (keep)
                out.push_back(make_int(0));
        }
        Expr g = G->apply(out, make_int(0)).second;
        Expr x = as_acc(make_load(src.regs, {r}, loc), sb->dtype);
        return make_store(part, {g}, combine(make_load(part, {g}, loc), x), loc);
    });
    auto start = [&](const Var& r) -> Expr {
        return op.clear ? identity : as_acc(make_load(dst.regs, {r}, loc), dt);
    };
    auto finish = [&](const Var& r, Expr v) {
        return make_store(dst.regs, {r}, acc == dt ? v : make_cast(dt, v, loc), loc);
    };
    const int64_t P = G->replicate();
    if (P == 1) {
        // Every row within one thread: no exchange.
        Stmt done = register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return finish(r, combine(start(r), make_load(part, {r}, loc)));
        });
        return make_allocate(part, make_seq({init, fold, done}, loc), loc);
    }
    auto dshape = *const_shape(db->shape);
    int64_t rows = layout::shape_size(dshape);
    int64_t bytes = rows * P * ((acc.bits + 7) / 8);
    shared_bytes_ += bytes;
    if (shared_bytes_ > target_.static_shared_bytes)
        unsupported(loc, "reduce scratch above " + std::to_string(target_.static_shared_bytes / 1024) +
                             " KiB of shared memory per block");
    Buffer scratch = make_buffer(db->name + "_red", acc, {make_int(rows * P)}, Scope::Shared, loc);
    auto row_of = [&](const std::vector<Expr>& coord) {
        Expr lin = coord.at(0);
        for (size_t d = 1; d < coord.size(); ++d) lin = add(mul(lin, make_int(dshape[d])), coord[d]);
        return mul(lin, make_int(P));
    };
    Stmt publish = register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        return make_store(scratch, {add(row_of(coord), rep)}, make_load(part, {r}, loc), loc);
    });
    Stmt gather = register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
        Var p = make_loop_var("p", loc);
        Stmt step = make_store(
            part, {r},
            combine(make_load(part, {r}, loc), make_load(scratch, {add(row_of(coord), Expr(p))}, loc)), loc);
        return make_seq({make_store(part, {r}, identity, loc),
                         make_for(p, make_int(0), make_int(P), ForKind::Serial, step, loc),
                         finish(r, combine(start(r), make_load(part, {r}, loc)))},
                        loc);
    });
    return make_allocate(
        scratch,
        make_allocate(
            part, make_seq({init, fold, publish, make_barrier(loc), gather, make_barrier(loc)}, loc), loc),
        loc);
}

}  // namespace tilec::lower::detail
