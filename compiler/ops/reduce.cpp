// The home of reduce_sum|max|min|absmax (see reduce.h): argument checks (shared with
// cumsum, axis_args.cpp), the layout rule that keeps a row's result where the row was
// (layout inference plans it: lower/layout_inference.cpp), and the lowering: per-thread
// partials, warp shuffles, and a shared scratch when a row's replicas span warps.
#include "ops/reduce.h"

#include <cmath>
#include <cstdint>

#include "layout/index_expr.h"
#include "ops/axis_args.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_reduce(ElabContext& ctx, ReduceKind kind) {
    auto a = elab_axis_args(ctx, /*scan=*/false);
    if (!a) return nullptr;
    return make_reduce(kind, a->src, a->dst, a->dim, a->flag, ctx.loc());
}

void reduce_layout(const ReduceNode& op, LayoutConstraints& lc) {
    const Buffer& s = op.src.buffer;
    const Buffer& d = op.dst.buffer;
    if (s->scope == Scope::Fragment && d->scope == Scope::Fragment && whole_tile(op.src) && whole_tile(op.dst) &&
        positive_shape(s->shape) && positive_shape(d->shape))
        lc.reduced(s, d, static_cast<size_t>(op.dim), d->rank() == s->rank(), op.loc,
                   "the reduce of '" + s->name + "' into '" + d->name + "'");
}

// ---- reductions -----------------------------------------------------------------
// dst = reduce(src, dim) for whole fragments, dst laid out as src reduced (see
// lower/layout_inference.cpp). Each thread folds its own registers into one partial per row
// it holds; replicas of a row in lanes of one warp that differ in a set of lane bits
// fold their partials by butterfly shuffles (shfl_xor); when the replicas span several
// such groups, the groups' leaders publish to a shared scratch [rows x replicas] and,
// after a barrier, every replica folds its row's leader partials in the same order, so
// all replicas agree bit for bit. The barriers (between publish and gather, and before
// the scratch's bytes are written again, e.g. by the reduce in a loop) are
// place_barriers' (lower/barrier_placement.cpp): the hazards call for them.
// Floats accumulate in at least f32, as the interpreter accumulates in double.
Stmt lower_reduce(const ReduceNode& op, LowerContext& lc) {
    const Buffer& sb = op.src.buffer;
    const Buffer& db = op.dst.buffer;
    SourceLoc loc = op.loc;
    if (sb->scope != Scope::Fragment || db->scope != Scope::Fragment || !is_full_region(op.src) ||
        !is_full_region(op.dst))
        unsupported(loc, "reduce other than of a whole fragment into a whole fragment");
    const LowerContext::Registers& src = lc.registers(sb);
    const LowerContext::Registers& dst = lc.registers(db);
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
    Stmt init = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
        return make_store(part, {r}, identity, loc);
    });
    size_t dim = static_cast<size_t>(op.dim);
    bool keep = db->rank() == sb->rank();
    // A source smaller than the block has replicas (each element on several threads):
    // only replica 0 folds its registers, the others' partials stay the identity, so the
    // exchange below counts every element once.
    Stmt fold = lc.register_loop(src.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        std::vector<Expr> out;
        for (size_t d = 0; d < coord.size(); ++d) {
            if (d != dim)
                out.push_back(coord[d]);
            else if (keep)
                out.push_back(make_int(0));
        }
        Expr g = G->apply(out, make_int(0)).second;
        Expr x = as_acc(make_load(src.regs, {r}, loc), sb->dtype);
        return guard_replica(rep, make_store(part, {g}, combine(make_load(part, {g}, loc), x), loc));
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
        Stmt done = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return finish(r, combine(start(r), make_load(part, {r}, loc)));
        });
        return make_allocate(part, make_seq({init, fold, done}, loc), loc);
    }
    auto dshape = *const_shape(db->shape);
    int64_t rows = layout::shape_size(dshape);

    // The warp step: the thread bits below the warp width that a row's replicas differ
    // in, where flipping the bit keeps every register of every thread on the same row.
    // A butterfly (shfl_xor over those bits, highest first) folds each group of replicas
    // within the warp, every lane ending with the same bits (each step combines the
    // same two values, commutatively). Only the group leaders (those bits 0) then go
    // through the shared scratch, and only when the replicas span several groups.
    const int64_t T = G->thread_count(), R = G->registers_per_thread();
    std::vector<int64_t> row_at(static_cast<size_t>(T * R), -1);
    std::vector<std::vector<layout::FragmentSlot>> owners_of(static_cast<size_t>(rows));
    {
        std::vector<int64_t> c(dshape.size(), 0);
        for (int64_t row = 0; row < rows; ++row) {
            int64_t rest = row;
            for (size_t d = dshape.size(); d-- > 0;) {
                c[d] = rest % dshape[d];
                rest /= dshape[d];
            }
            owners_of[static_cast<size_t>(row)] = G->owners(c);
            for (const auto& sl : owners_of[static_cast<size_t>(row)])
                if (sl.thread >= 0 && sl.thread < T && sl.reg >= 0 && sl.reg < R)
                    row_at[static_cast<size_t>(sl.thread * R + sl.reg)] = row;
        }
    }
    std::vector<int64_t> bits;  // lane bits of the butterfly, highest first
    for (int64_t b = lc.gpu_target().warp_size / 2; b >= 1; b /= 2) {
        bool ok = true;
        for (int64_t t = 0; t < T && ok; ++t)
            for (int64_t r = 0; r < R && ok; ++r) {
                int64_t row = row_at[static_cast<size_t>(t * R + r)];
                ok = row >= 0 && (t ^ b) < T && row_at[static_cast<size_t>((t ^ b) * R + r)] == row;
            }
        if (ok) bits.push_back(b);
    }
    int64_t mask = 0;
    for (int64_t b : bits) mask |= b;
    // The replicas (rep numbers) of a row whose threads lead a group: the same for
    // every row, or no warp step.
    std::vector<int64_t> leaders;
    for (int64_t row = 0; row < rows && !bits.empty(); ++row) {
        std::vector<int64_t> mine;
        const auto& own = owners_of[static_cast<size_t>(row)];
        for (size_t rep = 0; rep < own.size(); ++rep)
            if ((own[rep].thread & mask) == 0) mine.push_back(static_cast<int64_t>(rep));
        if (row == 0)
            leaders = mine;
        else if (mine != leaders)
            bits.clear();
    }
    // Each leader stands for the 2^|bits| lanes its butterfly folds (not mask + 1: the bits
    // need not be the lowest, e.g. lane bits 16 and 32 for MFMA's transposed accumulator).
    if (bits.empty() || leaders.empty() ||
        static_cast<int64_t>(leaders.size()) * (int64_t{1} << bits.size()) != P) {
        bits.clear();
        leaders.clear();
    }
    Stmt butterfly = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
        std::vector<Stmt> steps;
        for (int64_t b : bits) {
            Expr mine = make_load(part, {r}, loc);
            Expr theirs = make_shuffle(CallOp::ShflXor, make_load(part, {r}, loc), make_int(b, DataType::i32()), loc);
            // Partials are already folded: absmax's are magnitudes (a plain max; and no
            // shuffle inside the select combine() would make for it).
            Expr both = op.reduce_kind == ReduceKind::AbsMax ? maximum(mine, theirs) : combine(mine, theirs);
            steps.push_back(make_store(part, {r}, both, loc));
        }
        return make_seq(steps, loc);
    });
    if (!bits.empty() && leaders.size() == 1) {
        // Every replica of a row in one warp group: no shared memory.
        Stmt done = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return finish(r, combine(start(r), make_load(part, {r}, loc)));
        });
        return make_allocate(part, make_seq({init, fold, butterfly, done}, loc), loc);
    }
    Buffer scratch = make_buffer(db->name + "_red", acc, {make_int(rows * P)}, Scope::Shared, loc);
    auto row_index = [&](const std::vector<Expr>& coord) {
        Expr lin = coord.at(0);
        for (size_t d = 1; d < coord.size(); ++d) lin = add(mul(lin, make_int(dshape[d])), coord[d]);
        return lin;
    };
    auto row_of = [&](const std::vector<Expr>& coord) { return mul(row_index(coord), make_int(P)); };
    // The partials a row's value folds, in one order for every replica.
    std::vector<int64_t> sources = leaders;
    if (bits.empty())
        for (int64_t p = 0; p < P; ++p) sources.push_back(p);
    const int64_t S = static_cast<int64_t>(sources.size());
    Stmt publish = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        Stmt st = make_store(scratch, {add(row_of(coord), rep)}, make_load(part, {r}, loc), loc);
        if (bits.empty()) return st;
        Expr lead = eq(make_binary(BinaryOp::BitAnd, Expr(lc.thread_idx()), make_int(mask), loc), make_int(0));
        return make_if(lead, st, nullptr, loc);
    });
    // Two-step gather, when each thread holds many rows of many partials (MLA decode's
    // 64 x 512 accumulator split by columns over 8 warps: 8 rows x 8 warps = 64 loads a
    // thread, all independent, which ptxas issues at once next to 128 accumulator
    // registers and spills): first one thread a row folds the row's partials into
    // `combined`, then every replica reads its rows' results (S + R loads a thread
    // instead of S * R, one barrier more, placed by the hazards as the others). Up to 32
    // loads a thread (a row kernel's column sums) stay one step: the barrier would cost
    // more than ptxas's registers for them.
    if (R * S > 32) {
        Buffer combined = make_buffer(db->name + "_rows", acc, {make_int(rows)}, Scope::Shared, loc);
        const int64_t threads = T;
        Var q = make_loop_var("q", loc);
        Expr row = add(mul(Expr(q), make_int(threads)), Expr(lc.thread_idx()));
        Expr base = mul(row, make_int(P));
        Expr folded = make_load(scratch, {add(base, make_int(sources[0]))}, loc);
        for (int64_t k = 1; k < S; ++k)
            folded = combine(folded, make_load(scratch, {add(base, make_int(sources[static_cast<size_t>(k)]))}, loc));
        Stmt one = make_store(combined, {row}, folded, loc);
        if (rows % threads != 0) one = make_if(lt(row, make_int(rows)), one, nullptr, loc);
        Stmt fold_rows =
            make_for(q, make_int(0), make_int((rows + threads - 1) / threads), ForKind::Serial, one, loc);
        Stmt read = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
            return finish(r, combine(start(r), make_load(combined, {row_index(coord)}, loc)));
        });
        return make_allocate(
            scratch,
            make_allocate(combined,
                          make_allocate(part,
                                        make_seq({init, fold, bits.empty() ? make_seq({}) : butterfly, publish,
                                                  fold_rows, read},
                                                 loc),
                                        loc),
                          loc),
            loc);
    }
    Stmt gather = lc.register_loop(*G, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
        if (!bits.empty()) {
            // The group leaders' partials, in one order for every replica.
            Expr acc_v = make_load(scratch, {add(row_of(coord), make_int(leaders[0]))}, loc);
            for (size_t k = 1; k < leaders.size(); ++k)
                acc_v = combine(acc_v, make_load(scratch, {add(row_of(coord), make_int(leaders[k]))}, loc));
            return finish(r, combine(start(r), acc_v));
        }
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
        make_allocate(part,
                      make_seq({init, fold, bits.empty() ? make_seq({}) : butterfly, publish, gather},
                               loc),
                      loc),
        loc);
}

}  // namespace tilec::ops
