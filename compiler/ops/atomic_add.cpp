// The home of atomic_add (see atomic_add.h). Its thread-level lowering: each thread adds
// the registers its Fragment gives it to their elements of the global region with one
// atomic read-modify-write each (AtomicRmwNode). As for a copy's store, one test of the
// whole region picks an unmasked path, else each element is guarded by its bounds (adds
// past the tensor's edge are dropped), and only replica 0 of a replicated element adds
// it (the others would add it again).
//
// Element types, as the interpreter defines them (dst += src in dst's type): f32 and f64
// tensors (the float atomic add of both GPUs), 32- and 64-bit integers (wrapping). The
// value is converted to dst's type first; for floats that is exact only when src is not
// wider than dst, so an f64 fragment into an f32 tensor is refused (the reference adds
// the f64 value and rounds once). f16 / bf16 / 8- and 16-bit tensors are refused: the
// reference rounds the exact sum once, the packed or CAS-loop atomics of the targets
// would round the value first.
#include "ops/atomic_add.h"

#include <cstdint>

#include "ops/elab_util.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_atomic_add(ElabContext& ctx) {
    auto a = ctx.bind({"dst", "src"}, 2);
    if (!a) return nullptr;
    const auto& args = *a;
    DiagnosticEngine& diags = ctx.diags();
    SourceRange call = ctx.call_range();
    TileOperand dst = ctx.tile(*args[0], "atomic_add", "destination");
    TileOperand src = ctx.tile(*args[1], "atomic_add", "source");
    if (!dst.ok() || !src.ok()) return nullptr;
    if (!src.whole) {
        diags.error(src.range, "the source of atomic_add is a whole tile");
        return nullptr;
    }
    if (dst.buffer->scope != Scope::Global && dst.buffer->scope != Scope::Shared) {
        diags.error(dst.range, "atomic_add adds into a global tensor or a shared buffer; '" + dst.buffer->name +
                                   "' is " + scope_word(dst.buffer->scope));
        return nullptr;
    }
    if (!ctx.check_writable(dst.buffer, dst.range)) return nullptr;
    if (!dst.buffer->dtype.is_float() && !dst.buffer->dtype.is_integer()) {
        diags.error(dst.range, "atomic_add needs a numeric destination");
        return nullptr;
    }
    std::optional<Region> rd = dst.whole ? std::optional<Region>(full_region(dst.buffer))
                                         : region_for(diags, dst, src.buffer->shape, call, "atomic_add");
    if (!rd) return nullptr;
    if (dst.whole && !same_shape(dst.buffer->shape, src.buffer->shape)) {
        diags.error(call, "atomic_add of '" + src.buffer->name + "' " + shape_str(src.buffer->shape) + " into '" +
                              dst.buffer->name + "' " + shape_str(dst.buffer->shape) +
                              ": shapes differ; give a start index, e.g. " + dst.buffer->name + "[i, j]");
        return nullptr;
    }
    return make_atomic_add(*rd, full_region(src.buffer), ctx.loc());
}

void atomic_add_layout(const AtomicAddNode&, LayoutConstraints&) {}


Stmt lower_atomic_add(const AtomicAddNode& op, LowerContext& lc) {
    SourceLoc loc = op.loc;
    const Buffer& db = op.dst.buffer;
    const Buffer& sb = op.src.buffer;
    if (db->scope != Scope::Global)
        unsupported(loc, std::string("atomic_add into a ") + scope_name(db->scope) + " buffer");
    if (sb->scope != Scope::Fragment || !is_full_region(op.src))
        unsupported(loc, "atomic_add from other than a whole fragment");
    DataType dt = db->dtype, st = sb->dtype;
    bool float_ok = dt.kind == TypeKind::Float && (dt.bits == 32 || dt.bits == 64);
    bool int_ok = dt.is_integer() && (dt.bits == 32 || dt.bits == 64);
    if (!float_ok && !int_ok) unsupported(loc, "atomic_add into a tensor of " + dt.str());
    if (float_ok && st.is_float() && st.bits > dt.bits)
        unsupported(loc, "atomic_add of " + st.str() + " values into a tensor of " + dt.str());
    const LowerContext::Registers& src = lc.registers(sb);
    std::vector<int64_t> tile = *const_shape(sb->shape);
    std::vector<int64_t> ext;
    for (auto& e : op.dst.extent) {
        auto v = as_const_int(e);
        if (!v) unsupported(loc, "atomic_add into a global region with a run-time extent");
        ext.push_back(*v);
    }
    auto value = [&](const Var& r) {
        Expr v = make_load(src.regs, {r}, loc);
        return st == dt ? v : make_cast(dt, v, loc);
    };
    auto add = [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
        return guard_replica(
            rep, make_atomic_rmw(AtomicOp::Add, db, global_indices(op.dst, tile, coord), value(r), loc));
    };
    Stmt fast = lc.register_loop(src.frag, loc, add);
    Stmt masked =
        lc.register_loop(src.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            return make_if(in_bounds(db, global_indices(op.dst, tile, coord)), add(r, coord, rep), nullptr,
                           loc);
        });
    return make_if(region_in_bounds(op.dst), fast, masked, loc);
}

}  // namespace tilec::ops
