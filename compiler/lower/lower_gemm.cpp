// Thread-level lowering of gemm (part of lower_to_thread_level).
#include <cmath>
#include <cstdint>

#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

// ---- gemm on CUDA cores -----------------------------------------------------------
// c (+)= op(a) @ op(b) with a and b whole shared tiles and c a whole fragment: each
// thread owns c's elements its Fragment gives it and computes their dot products
// over k with FMAs, reading a and b from shared memory. The k loop is outermost and
// serial so the register loop inside it stays unrolled and c stays in registers.
// Barriers (before the reads of a and b, and before the next write into their bytes)
// are place_barriers' (barrier_placement.cpp).
// No tensor cores yet: that needs mma fragments for a, b and c (layout inference).
//
// A fragment a or b (flash attention's p @ v, p in registers): the thread computing
// c[i, j] needs all of row i of a (column j of b), held by other threads, so the
// fragment is staged through a shared copy of its shape (each thread stores its
// registers, then, after the barrier the hazard calls for, the shared-operand gemm
// reads the copy). The shared plan
// gives the copy bytes only while the gemm runs.
Stmt ThreadLowering::lower_gemm(const GemmNode& g) {
    SourceLoc loc = g.loc;
    const Buffer& cb = g.c.buffer;
    if (!is_full_region(g.a) || !is_full_region(g.b) || !is_full_region(g.c))
        unsupported(loc, "gemm of part of a buffer");
    std::vector<Buffer> staged;
    std::vector<Stmt> stores;
    auto stage = [&](const Buffer& op) -> Buffer {
        if (op->scope == Scope::Shared) return op;
        if (op->scope != Scope::Fragment) unsupported(loc, "gemm of a " + std::string(scope_name(op->scope)) + " operand");
        auto it = frags_.find(op.get());
        if (it == frags_.end()) TILEC_ICE("thread-level lowering: fragment '" + op->name + "' not allocated");
        const FragInfo& fi = it->second;
        Buffer copy = make_buffer(op->name + "_stage", op->dtype, op->shape, Scope::Shared, loc);
        stores.push_back(register_loop(fi.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            return guard_replica(rep, make_store(copy, coord, make_load(fi.regs, {r}, loc), loc));
        }));
        staged.push_back(copy);
        return copy;
    };
    if (cb->scope != Scope::Fragment) unsupported(loc, "gemm into a " + std::string(scope_name(cb->scope)) + " buffer");
    Buffer ab = stage(g.a.buffer);
    Buffer bb = stage(g.b.buffer);
    auto as = *const_shape(ab->shape), bs = *const_shape(bb->shape), cs = *const_shape(cb->shape);
    if (as.size() != 2 || bs.size() != 2 || cs.size() != 2) unsupported(loc, "gemm of tiles other than 2-D");
    int64_t M = g.trans_a ? as[1] : as[0], K = g.trans_a ? as[0] : as[1];
    int64_t KB = g.trans_b ? bs[1] : bs[0], N = g.trans_b ? bs[0] : bs[1];
    if (K != KB || cs[0] != M || cs[1] != N) TILEC_ICE("thread-level lowering: gemm shapes disagree");
    const FragInfo& c = frags_.at(cb.get());
    if (c.frag.replicate() > 1)
        unsupported(loc, "gemm into fragment '" + cb->name + "' held by several threads (replicas)");
    DataType acc = cb->dtype;
    auto as_acc = [&](Expr v, DataType t) { return t == acc ? v : make_cast(acc, v, loc); };
    Var k = make_loop_var("k", loc);
    Stmt step = register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
        const Expr& i = coord[0];
        const Expr& j = coord[1];
        Expr av = make_load(ab, g.trans_a ? std::vector<Expr>{k, i} : std::vector<Expr>{i, k}, loc);
        Expr bv = make_load(bb, g.trans_b ? std::vector<Expr>{j, k} : std::vector<Expr>{k, j}, loc);
        Expr prod = mul(as_acc(av, ab->dtype), as_acc(bv, bb->dtype));
        return make_store(c.regs, {r}, add(make_load(c.regs, {r}, loc), prod), loc);
    });
    Stmt loop = make_for(k, make_int(0), make_int(K), ForKind::Serial, step, loc);
    Stmt out = loop;
    if (g.clear) {
        Stmt zero = register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return make_store(c.regs, {r}, make_zero(acc), loc);
        });
        out = make_seq({zero, loop}, loc);
    }
    if (staged.empty()) return out;
    stores.push_back(out);
    out = make_seq(stores, loc);
    for (auto& b : staged) out = make_allocate(b, out, loc);
    return out;
}

}  // namespace tilec::lower::detail
