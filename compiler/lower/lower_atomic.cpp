// Thread-level lowering of atomic_add (part of lower_to_thread_level): each thread adds
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
#include <cstdint>

#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

Stmt ThreadLowering::lower_atomic_add(const AtomicAddNode& op) {
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
    const FragInfo& src = frags_.at(sb.get());
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
    Stmt fast = register_loop(src.frag, loc, add);
    Stmt masked =
        register_loop(src.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            return make_if(in_bounds(db, global_indices(op.dst, tile, coord)), add(r, coord, rep), nullptr,
                           loc);
        });
    return make_if(region_in_bounds(op.dst), fast, masked, loc);
}

}  // namespace tilec::lower::detail
