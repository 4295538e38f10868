// The home of gemm (see gemm.h): the shape and type rules of the call, and its
// thread-level lowering: on tensor cores where the target and types allow it
// (gemm_mma.cpp), on CUDA cores otherwise.
#include "ops/gemm.h"

#include "ops/gemm_mfma.h"
#include "ops/gemm_mma.h"
#include "ops/gemm_wgmma.h"

#include "ops/elab_util.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_gemm(ElabContext& ctx) {
    auto a = ctx.bind({"a", "b", "c", "trans_a", "trans_b", "clear"}, 3);
    if (!a) return nullptr;
    const auto& args = *a;
    DiagnosticEngine& diags = ctx.diags();
    TileOperand ops[3];
    const char* roles[3] = {"first operand", "second operand", "accumulator"};
    for (int i = 0; i < 3; ++i) {
        ops[i] = ctx.tile(*args[i], "gemm", roles[i]);
        if (!ops[i].ok()) return nullptr;
        if (!ops[i].whole) {
            diags.error(ops[i].range, "gemm operands are whole tiles; copy the part you need into a shared or "
                                      "fragment buffer first");
            return nullptr;
        }
    }
    bool flags[3] = {false, false, false};
    for (int i = 0; i < 3; ++i)
        if (args[3 + i]) {
            auto f = ctx.const_bool(*args[3 + i], i == 0 ? "trans_a" : i == 1 ? "trans_b" : "clear");
            if (!f) return nullptr;
            flags[i] = *f;
        }
    const Buffer &A = ops[0].buffer, &B = ops[1].buffer, &C = ops[2].buffer;
    if (C->scope != Scope::Fragment) {
        auto d = diags.error(ops[2].range, "the gemm accumulator '" + C->name + "' must be a fragment, but it is " +
                                               scope_word(C->scope));
        if (auto where = ctx.declared_at(C)) d.note(*where, "declare it as 'fragment " + C->name + ": ...'");
        return nullptr;
    }
    for (int i = 0; i < 2; ++i) {
        const Buffer& X = ops[i].buffer;
        if (X->scope == Scope::Global) {
            diags.error(ops[i].range, "gemm operand '" + X->name + "' is a global tensor; copy a tile of it into "
                                                                   "a shared buffer first");
            return nullptr;
        }
        if (X->scope == Scope::Local) {
            diags.error(ops[i].range, "gemm operand '" + X->name + "' is a local buffer; use a shared buffer or "
                                                                   "a fragment");
            return nullptr;
        }
    }
    for (int i = 0; i < 3; ++i)
        if (ops[i].buffer->rank() != 2) {
            diags.error(ops[i].range, "gemm operands must be 2-d tiles, but '" + ops[i].buffer->name + "' is " +
                                          std::to_string(ops[i].buffer->rank()) + "-d");
            return nullptr;
        }
    std::vector<int64_t> sa, sb, sc;
    if (!shape_values(A, sa) || !shape_values(B, sb) || !shape_values(C, sc)) return nullptr;
    int64_t M = flags[0] ? sa[1] : sa[0], Ka = flags[0] ? sa[0] : sa[1];
    int64_t Kb = flags[1] ? sb[1] : sb[0], N = flags[1] ? sb[0] : sb[1];
    auto dims = [](const std::vector<int64_t>& s) {
        return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + "]";
    };
    if (Ka != Kb) {
        diags.error(ctx.call_range(), "gemm K mismatch: '" + A->name + "' is " + dims(sa) +
                                          (flags[0] ? " (transposed)" : "") + " so K = " + std::to_string(Ka) +
                                          ", but '" + B->name + "' is " + dims(sb) +
                                          (flags[1] ? " (transposed)" : "") + " so K = " + std::to_string(Kb));
        return nullptr;
    }
    if (sc[0] != M || sc[1] != N) {
        diags.error(ops[2].range, "gemm accumulator '" + C->name + "' is " + dims(sc) + " but '" + A->name +
                                      "' @ '" + B->name + "' is [" + std::to_string(M) + ", " + std::to_string(N) +
                                      "]");
        return nullptr;
    }
    // The two 8-bit float formats mix (e4m3 x e5m2, as fp8 tensor cores take them);
    // other operand types must agree.
    auto f8 = [](DataType t) { return t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2; };
    if (A->dtype != B->dtype && !(f8(A->dtype) && f8(B->dtype))) {
        diags.error(ctx.call_range(), "gemm operands have different element types: '" + A->name + "' is " +
                                          A->dtype.str() + " and '" + B->name + "' is " + B->dtype.str());
        return nullptr;
    }
    bool ok_acc = A->dtype.is_float() ? C->dtype.is_float() && C->dtype.bits >= 16 : C->dtype == DataType::i32();
    if (!ok_acc || A->dtype.is_bool()) {
        diags.error(ops[2].range, "gemm accumulator '" + C->name + "' has type " + C->dtype.str() + "; use " +
                                      (A->dtype.is_float() ? "f32 (or f16)" : "i32") + " for " + A->dtype.str() +
                                      " inputs");
        return nullptr;
    }
    ctx.mark_written(C);
    return make_gemm(full_region(A), full_region(B), full_region(C), flags[0], flags[1], flags[2], ctx.loc());
}

void gemm_layout(const GemmNode& g, LayoutConstraints& lc) {
    // AMD's matrix cores: the accumulator layout, and the LDS layout of the operand tiles
    // (ops/gemm_mfma.h, amd_operand_layout), stored transposed where their fills read the
    // tensor along the tile's first dimension (a transposed operand).
    if (auto p = plan_amd_matrix(g, lc.gpu_target(), lc.threads(), lc.attr("warp_policy"))) {
        lc.fixed(g.c.buffer, p->c, g.loc,
                 std::string("the ") + (p->wmma ? "WMMA" : "MFMA") + " gemm into '" + g.c.buffer->name + "'");
        for (auto [X, k_last] : {std::pair{g.a.buffer, !g.trans_a}, std::pair{g.b.buffer, g.trans_b}})
            if (auto L = amd_operand_layout(*X, k_last, *p, lc.shared_fill_dim(X) == size_t{0}))
                lc.shared_layout(X, *L, g.loc, "the LDS operand reads of the matrix-core gemm");
        return;
    }
    // Hopper's warpgroup instructions where B is a shared tile and A a shared tile or (the
    // register form) a fragment, else mma.sync. The register form fixes A's fragment to
    // the layout the instruction reads (flash attention's p, copied from the scores of a
    // wgmma of the same rows, has it already: gemm_wgmma.h).
    if (auto w = plan_wgmma(g, lc.gpu_target(), lc.threads())) {
        lc.fixed(g.c.buffer, w->c, g.loc, "the warpgroup tensor-core gemm into '" + g.c.buffer->name + "'");
        if (w->a)
            lc.fixed(g.a.buffer, *w->a, g.loc,
                     "the A registers of the warpgroup tensor-core gemm into '" + g.c.buffer->name + "'");
        if (w->step_k == 32) {
            // 8-bit operands: K-major tiles (a [K, N] b stored transposed).
            for (auto [X, k_last] : {std::pair{g.a.buffer, !g.trans_a}, std::pair{g.b.buffer, g.trans_b}})
                if (auto L = wgmma_operand_layout(X, k_last))
                    lc.shared_layout(X, *L, g.loc, "the K-major operand reads of the 8-bit warpgroup gemm");
            return;
        }
    } else if (auto p = plan_mma(g, lc.gpu_target(), lc.threads(), lc.attr("warp_policy"),
                               !lc.attr("allow_tf32").empty()))
        lc.fixed(g.c.buffer, p->c, g.loc, "the tensor-core gemm into '" + g.c.buffer->name + "'");
    else
        return;
    // ldmatrix reads 8 rows of 16 bytes at one column: the XOR swizzle of the row's
    // 16-byte chunks puts them in 8 different bank groups.
    for (const Buffer& X : {g.a.buffer, g.b.buffer}) {
        if (X->scope != Scope::Shared) continue;
        auto s = const_shape(X->shape);
        if (!s || s->size() != 2) continue;
        auto mode = layout::Layout::widest_swizzle((*s)[0], (*s)[1], X->dtype.bits);
        if (auto L = layout::Layout::swizzled((*s)[0], (*s)[1], X->dtype.bits, mode))
            lc.shared_layout(X, *L, g.loc, "the ldmatrix reads of the tensor-core gemm");
    }
}

// ---- gemm on CUDA cores -----------------------------------------------------------
// c (+)= op(a) @ op(b) with a and b whole shared tiles and c a whole fragment: each
// thread owns c's elements its Fragment gives it and computes their dot products
// over k with FMAs, reading a and b from shared memory. The k loop is outermost and
// serial so the register loop inside it stays unrolled and c stays in registers.
// Barriers (before the reads of a and b, and before the next write into their bytes)
// are place_barriers' (lower/barrier_placement.cpp).
// No tensor cores yet: that needs mma fragments for a, b and c (layout inference).
//
// A fragment a or b (flash attention's p @ v, p in registers): the thread computing
// c[i, j] needs all of row i of a (column j of b), held by other threads, so the
// fragment is staged through a shared copy of its shape (each thread stores its
// registers, then, after the barrier the hazard calls for, the shared-operand gemm
// reads the copy). The shared plan
// gives the copy bytes only while the gemm runs.
Stmt lower_gemm(const GemmNode& g, LowerContext& lc) {
    SourceLoc loc = g.loc;
    const Buffer& cb = g.c.buffer;
    if (!is_full_region(g.a) || !is_full_region(g.b) || !is_full_region(g.c))
        unsupported(loc, "gemm of part of a buffer");
    std::vector<Buffer> staged;
    std::vector<Stmt> stores;
    // pad: elements added to each row of the copy (never written or read).
    auto stage = [&](const Buffer& op, int64_t pad = 0) -> Buffer {
        if (op->scope == Scope::Shared) return op;
        if (op->scope != Scope::Fragment) unsupported(loc, "gemm of a " + std::string(scope_name(op->scope)) + " operand");
        const LowerContext::Registers& fi = lc.registers(op);
        std::vector<Expr> shape = op->shape;
        if (pad) shape.back() = make_int(*as_const_int(shape.back()) + pad);  // amd_stage_pad: constant shapes
        Buffer copy = make_buffer(op->name + "_stage", op->dtype, shape, Scope::Shared, loc);
        stores.push_back(lc.register_loop(fi.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr& rep) {
            return guard_replica(rep, make_store(copy, coord, make_load(fi.regs, {r}, loc), loc));
        }));
        staged.push_back(copy);
        return copy;
    };
    if (cb->scope != Scope::Fragment) unsupported(loc, "gemm into a " + std::string(scope_name(cb->scope)) + " buffer");
    auto zero_c = [&]() {
        const LowerContext::Registers& c = lc.registers(cb);
        return lc.register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return make_store(c.regs, {r}, make_zero(cb->dtype), loc);
        });
    };
    if (auto w = plan_wgmma(g, lc.gpu_target(), lc.threads()); w && lc.registers(cb).frag.same_slots(w->c))
        if (auto out = lower_gemm_wgmma(g, *w, lc)) return g.clear ? make_seq({zero_c(), *out}, loc) : *out;
    auto finish = [&](Stmt out) {
        if (staged.empty()) return out;
        stores.push_back(out);
        out = make_seq(stores, loc);
        for (auto& b : staged) out = make_allocate(b, out, loc);
        return out;
    };
    // AMD's matrix cores (a fragment operand staged through LDS, its rows padded as
    // amd_operand_layout pads a shared tile's where they run along K).
    // A fragment A that a transposed plan reads from its registers is not staged.
    if (auto amd = plan_amd_matrix(g, lc.gpu_target(), lc.threads(), lc.attr("warp_policy"));
        amd && lc.registers(cb).frag.same_slots(amd->c)) {
        std::optional<std::vector<std::vector<std::vector<int64_t>>>> a_regs;
        if (g.a.buffer->scope == Scope::Fragment)
            a_regs = amd_direct_a_registers(lc.registers(g.a.buffer).frag, g, *amd);
        const int64_t lds_left = lc.gpu_target().max_shared_bytes - lc.kernel_footprint().shared_bytes_once;
        Buffer ab = a_regs ? g.a.buffer : stage(g.a.buffer, amd_stage_pad(*g.a.buffer, !g.trans_a, *amd, lds_left)),
               bb = stage(g.b.buffer, amd_stage_pad(*g.b.buffer, g.trans_b, *amd, lds_left));
        Stmt out = lower_gemm_amd_matrix(g, *amd, ab, bb, lc, a_regs ? &*a_regs : nullptr);
        if (g.clear) out = make_seq({zero_c(), out}, loc);
        return finish(out);
    }
    // Tensor cores with A already in its threads' registers: no staging of A.
    auto plan = plan_mma(g, lc.gpu_target(), lc.threads(), lc.attr("warp_policy"), !lc.attr("allow_tf32").empty());
    if (plan && !lc.registers(cb).frag.same_slots(plan->c)) plan.reset();
    std::optional<std::vector<std::vector<std::vector<int64_t>>>> a_regs;
    if (plan && g.a.buffer->scope == Scope::Fragment)
        a_regs = direct_a_registers(lc.registers(g.a.buffer).frag, g, *plan);
    Buffer ab = a_regs ? g.a.buffer : stage(g.a.buffer);
    Buffer bb = stage(g.b.buffer);
    if (plan) {
        Stmt mma = lower_gemm_mma(g, *plan, ab, bb, lc, a_regs ? &*a_regs : nullptr);
        if (g.clear) mma = make_seq({zero_c(), mma}, loc);
        return finish(mma);
    }
    auto as = *const_shape(ab->shape), bs = *const_shape(bb->shape), cs = *const_shape(cb->shape);
    if (as.size() != 2 || bs.size() != 2 || cs.size() != 2) unsupported(loc, "gemm of tiles other than 2-D");
    int64_t M = g.trans_a ? as[1] : as[0], K = g.trans_a ? as[0] : as[1];
    int64_t KB = g.trans_b ? bs[1] : bs[0], N = g.trans_b ? bs[0] : bs[1];
    if (K != KB || cs[0] != M || cs[1] != N) TILEC_ICE("thread-level lowering: gemm shapes disagree");
    // A replicated c (its layout set by another op, e.g. a row reduction shared with a
    // matrix-core accumulator of other rows per wave): each thread holding a copy
    // computes it, the same dot product in the same order, so the copies agree.
    const LowerContext::Registers& c = lc.registers(cb);
    DataType acc = cb->dtype;
    auto as_acc = [&](Expr v, DataType t) { return t == acc ? v : make_cast(acc, v, loc); };
    Var k = make_loop_var("k", loc);
    Stmt step = lc.register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>& coord, const Expr&) {
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
        Stmt zero = lc.register_loop(c.frag, loc, [&](const Var& r, const std::vector<Expr>&, const Expr&) {
            return make_store(c.regs, {r}, make_zero(acc), loc);
        });
        out = make_seq({zero, loop}, loc);
    }
    return finish(out);
}

}  // namespace tilec::ops
