// The home of cumsum (see cumsum.h): argument checks (shared with the reductions,
// axis_args.cpp) and the thread-level lowering, an inclusive scan of a whole fragment
// along one dimension into a whole fragment.
//
// A line (the elements along `dim` at fixed other coordinates) is spread over many
// threads, and a thread's elements of a line need not be contiguous (Fragment::parallel
// deals vectors round-robin), so the scan goes through shared memory, in four steps
// that hand data between threads (the barriers between them, and before the scratch is
// written again, are place_barriers', lower/barrier_placement.cpp, where the hazards are):
//   1. publish: every thread stores its source registers into a shared copy of the tile
//      (in the accumulation type; replica 0 of a replicated element);
//   2. chunk scan: each line is cut into P contiguous chunks of C elements, a chunk per
//      (line, part) unit and a unit per thread (units u = tx, tx + threads, ...; the P
//      units of a line are P consecutive threads); the unit scans its chunk in place,
//      serially, in scan order (reversed for `reverse`), and stores its total;
//   3. offsets: each unit sums the totals of the chunks before it in its line (an
//      exclusive scan of P values). A warp shuffle scan (shfl_up) of the totals would
//      replace this step's shared round trip when a line's P units share a warp:
//      the P units of a line are consecutive threads for that reason;
//   4. gather: every thread reads its destination registers' elements back, each plus
//      the offset of its chunk, and converts them to the destination type;
// P is as large as the threads allow per line (threads / lines, at most the line's
// length) and C = cdiv(n, P), so a thread's serial work is about C + P additions
// instead of n. The shared copy has one padding word per 32 elements so that units
// scanning chunks of 32 (a multiple of the bank count apart) do not hit one bank.
//
// Accumulation as the interpreter does it: floats in f32 (f64 if either side is f64),
// integers in i64 (wrapping, which equals the reference's wrapping in any order);
// one rounding to the destination type at the end. The float additions are
// associated differently from the reference's left-to-right sum (a chunk's prefix,
// then the sum of the earlier chunks' totals), so each result carries an error of at
// most about (C + P) * 2^-24 * sum |x| over its line, against n * 2^-24 * sum |x| for
// a serial f32 sum.
#include "ops/cumsum.h"

#include <algorithm>
#include <cstdint>
#include <functional>

#include "layout/index_expr.h"
#include "ops/axis_args.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_cumsum(ElabContext& ctx) {
    auto a = elab_axis_args(ctx, /*scan=*/true);
    if (!a) return nullptr;
    return make_cumsum(a->src, a->dst, a->dim, a->flag, ctx.loc());
}

void cumsum_layout(const CumsumNode&, LayoutConstraints&) {}

using layout::idx;
using layout::idx_add;
using layout::idx_floordiv;
using layout::idx_floormod;
using layout::idx_mul;

Stmt lower_cumsum(const CumsumNode& op, LowerContext& lc) {
    SourceLoc loc = op.loc;
    const Buffer& sb = op.src.buffer;
    const Buffer& db = op.dst.buffer;
    if (sb->scope != Scope::Fragment || db->scope != Scope::Fragment || !is_full_region(op.src) ||
        !is_full_region(op.dst))
        unsupported(loc, "cumsum other than of a whole fragment into a whole fragment");
    const LowerContext::Registers& src = lc.registers(sb);
    const LowerContext::Registers& dst = lc.registers(db);
    const std::vector<int64_t> shape = *const_shape(sb->shape);
    if (shape != *const_shape(db->shape)) TILEC_ICE("thread-level lowering: cumsum shapes disagree");
    if (op.dim < 0 || static_cast<size_t>(op.dim) >= shape.size())
        TILEC_ICE("thread-level lowering: cumsum dim out of range");
    const size_t dim = static_cast<size_t>(op.dim);

    DataType st = sb->dtype, dt = db->dtype;
    DataType acc;
    if (st.is_float() || dt.is_float())
        acc = (st.is_float() && st.bits == 64) || (dt.is_float() && dt.bits == 64) ? DataType::f64()
                                                                                   : DataType::f32();
    else
        acc = DataType::i64();

    // The lines and their chunks.
    const int64_t n = shape[dim];
    int64_t stride = 1;  // between neighbours along dim, row-major
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    const int64_t size = layout::shape_size(shape);
    const int64_t lines = size / n;
    const int64_t threads = lc.threads();
    const int64_t max_parts = std::max<int64_t>(1, std::min(n, threads / lines));
    const int64_t C = (n + max_parts - 1) / max_parts;
    const int64_t P = (n + C - 1) / C;  // no empty chunk
    const int64_t units = lines * P;
    const int64_t rounds = (units + threads - 1) / threads;

    const int64_t padded = size + (size - 1) / 32 + 1;
    Buffer scan = make_buffer(db->name + "_scan", acc, {make_int(padded)}, Scope::Shared, loc);
    Buffer totals = make_buffer(db->name + "_tot", acc, {make_int(units)}, Scope::Shared, loc);
    Buffer offsets = make_buffer(db->name + "_off", acc, {make_int(units)}, Scope::Shared, loc);
    Buffer run = make_buffer(db->name + "_run", acc, {make_int(1)}, Scope::Register, loc);

    auto slot = [](Expr lin) { return idx_add(lin, idx_floordiv(lin, 32)); };
    // Row-major position of (line, j): the line numbers the other coordinates row-major.
    auto lin_of_line = [&](const Expr& line, const Expr& j) {
        Expr outer = idx_floordiv(line, stride), inner = idx_floormod(line, stride);
        return idx_add(idx_mul(idx_add(idx_mul(outer, n), j), stride), inner);
    };
    auto line_of = [&](const std::vector<Expr>& coord) {
        Expr outer = idx(0), inner = idx(0);
        for (size_t d = 0; d < dim; ++d) outer = idx_add(idx_mul(outer, shape[d]), coord[d]);
        for (size_t d = dim + 1; d < shape.size(); ++d) inner = idx_add(idx_mul(inner, shape[d]), coord[d]);
        return idx_add(idx_mul(outer, stride), inner);
    };
    auto lin_of = [&](const std::vector<Expr>& coord) {
        Expr lin = idx(0);
        for (size_t d = 0; d < shape.size(); ++d) lin = idx_add(idx_mul(lin, shape[d]), coord[d]);
        return lin;
    };
    // Scan order k <-> position j along the line.
    auto position = [&](const Expr& k) { return op.reverse ? sub(idx(n - 1), k) : k; };
    auto as_acc = [&](Expr v, DataType t) { return t == acc ? v : make_cast(acc, v, loc); };
    auto run_value = [&] { return make_load(run, {idx(0)}, loc); };
    auto set_run = [&](Expr v) { return make_store(run, {idx(0)}, std::move(v), loc); };

    // Every unit of the thread: body(u, line, part).
    auto for_units = [&](const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& body) {
        Var q = make_loop_var("q", loc);
        Expr u = rounds == 1 ? Expr(lc.thread_idx()) : idx_add(Expr(lc.thread_idx()), idx_mul(q, threads));
        Stmt b = body(u, idx_floordiv(u, P), idx_floormod(u, P));
        if (units % threads != 0) b = make_if(lt(u, idx(units)), b, nullptr, loc);
        if (rounds == 1) return b;
        return make_for(q, idx(0), idx(rounds), ForKind::Serial, b, loc);
    };

    // 1. publish
    Stmt publish = lc.register_loop(src.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        return guard_replica(rep, make_store(scan, {slot(lin_of(coord))}, as_acc(make_load(src.regs, {r}, loc), st), loc));
    });

    // 2. chunk scans
    Stmt chunks = for_units([&](const Expr& u, const Expr& line, const Expr& part) {
        Var k = make_loop_var("k", loc);
        Var at = make_let_var("at", DataType::index(), loc);
        Expr pos = idx_add(idx_mul(part, C), k);
        Stmt step = make_seq({set_run(add(run_value(), make_load(scan, {at}, loc))),
                              make_store(scan, {at}, run_value(), loc)},
                             loc);
        step = make_let(at, slot(lin_of_line(line, position(pos))), step, loc);
        if (P * C != n) step = make_if(lt(pos, idx(n)), step, nullptr, loc);
        Stmt total = P > 1 ? make_store(totals, {u}, run_value(), loc) : nullptr;
        return make_seq({set_run(make_zero(acc)), make_for(k, idx(0), idx(C), ForKind::Serial, step, loc), total},
                        loc);
    });

    // 3. offsets: the exclusive scan of the line's chunk totals (see the top comment
    // for where a shfl_up scan goes).
    Stmt offs = for_units([&](const Expr& u, const Expr& line, const Expr& part) {
        Var q = make_loop_var("p", loc);
        Stmt step = set_run(add(run_value(), make_load(totals, {idx_add(idx_mul(line, P), q)}, loc)));
        return make_seq({set_run(make_zero(acc)), make_for(q, idx(0), part, ForKind::Serial, step, loc),
                         make_store(offsets, {u}, run_value(), loc)},
                        loc);
    });

    // 4. gather
    Stmt gather = lc.register_loop(dst.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
        Expr k = position(coord[dim]);  // the scan order is its own inverse
        Expr part = idx_floordiv(k, C);
        Expr v = make_load(scan, {slot(lin_of(coord))}, loc);
        if (P > 1) v = add(v, make_load(offsets, {idx_add(idx_mul(line_of(coord), P), part)}, loc));
        return make_store(dst.regs, {r}, acc == dt ? v : make_cast(dt, v, loc), loc);
    });

    Stmt body;
    if (P > 1) {
        body = make_seq({publish, chunks, offs, gather}, loc);
        body = make_allocate(totals, make_allocate(offsets, make_allocate(run, body, loc), loc), loc);
    } else {
        // One chunk per line: no totals or offsets.
        body = make_allocate(
            run, make_seq({publish, chunks, gather}, loc), loc);
    }
    return make_allocate(scan, body, loc);
}

}  // namespace tilec::ops
