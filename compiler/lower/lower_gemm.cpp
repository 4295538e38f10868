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
// The barrier after (from lower()) keeps the next copy into a or b from racing.
// No tensor cores yet: that needs mma fragments for a, b and c (layout inference).
Stmt ThreadLowering::lower_gemm(const GemmNode& g) {
    SourceLoc loc = g.loc;
    const Buffer& ab = g.a.buffer;
    const Buffer& bb = g.b.buffer;
    const Buffer& cb = g.c.buffer;
    if (ab->scope != Scope::Shared || bb->scope != Scope::Shared || cb->scope != Scope::Fragment)
        unsupported(loc, "gemm other than of shared a and b into a fragment");
    if (!is_full_region(g.a) || !is_full_region(g.b) || !is_full_region(g.c))
        unsupported(loc, "gemm of part of a buffer");
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
    if (!g.clear) return loop;
    Stmt zero = register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
        return make_store(c.regs, {r}, make_zero(acc), loc);
    });
    return make_seq({zero, loop}, loc);
}

}  // namespace tilec::lower::detail
