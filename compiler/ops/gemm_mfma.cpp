// gemm on AMD matrix cores: the wave partition (plan_amd_matrix) and the lowering to LDS
// element loads + MFMA / WMMA (lower_gemm_amd_matrix). The operand and accumulator
// layouts are those of AMD's Matrix Instruction Calculator, as layout/fragment.h builds
// the accumulator; the simulator checks the instructions against its own models of the
// document (sim/wave_mfma.h), so a mistake here shows as a wrong result there.
#include "ops/gemm_mfma.h"

#include "ir/visitor.h"
#include "ops/gemm_mma.h"  // warp_split
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

namespace {

std::optional<target::ElemType> matrix_elem(DataType t) {
    if (t.kind == TypeKind::Float && t.bits == 16) return target::ElemType::F16;
    if (t.kind == TypeKind::BFloat) return target::ElemType::BF16;
    if (t == DataType::i8()) return target::ElemType::S8;
    // The language's OCP fp8 runs on CDNA3's FNUZ fp8 / bf8 instructions, rewritten on the
    // way in and scaled (scalar/fp8_fnuz.h, lower_gemm_amd_matrix).
    if (t.kind == TypeKind::Float8E4M3) return target::ElemType::E4M3Fnuz;
    if (t.kind == TypeKind::Float8E5M2) return target::ElemType::E5M2Fnuz;
    return std::nullopt;
}

bool is_f8(DataType t) { return t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2; }

}  // namespace

std::optional<AmdMatrixPlan> plan_amd_matrix(const GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                             const std::string& policy) {
    const Buffer &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
    const int64_t wave = t.warp_size;
    if (!t.is_amd() || threads % wave != 0) return std::nullopt;
    auto ab = matrix_elem(A->dtype), bb = matrix_elem(B->dtype);
    if (!ab || !bb) return std::nullopt;
    // f16 / bf16 into f32, and f16 into f16 (RDNA3's v_wmma_f16_16x16x16_f16; CDNA has no
    // f16-accumulator MFMA); i8 into i32 (RDNA3: iu8 WMMA with both operands signed); fp8
    // into f32, A and B each e4m3 or e5m2 (CDNA3 has all four pairs).
    const bool i8 = *ab == target::ElemType::S8, f8 = is_f8(A->dtype) && is_f8(B->dtype);
    const bool acc16 = *ab == target::ElemType::F16 && C->dtype == DataType::f16();
    if ((A->dtype != B->dtype && !f8) || C->scope != Scope::Fragment ||
        C->dtype != (i8 ? DataType::i32() : acc16 ? DataType::f16() : DataType::f32()))
        return std::nullopt;
    for (const Buffer& X : {A, B})
        if (X->scope != Scope::Shared && X->scope != Scope::Fragment) return std::nullopt;
    auto sa = const_shape(A->shape), sb = const_shape(B->shape);
    if (!sa || !sb || sa->size() != 2 || sb->size() != 2) return std::nullopt;
    const int64_t m = g.trans_a ? (*sa)[1] : (*sa)[0];
    const int64_t k = g.trans_a ? (*sa)[0] : (*sa)[1];
    const int64_t n = g.trans_b ? (*sb)[0] : (*sb)[1];
    // The shapes the simulator models (sim/wave_mfma.h), in the target's order.
    const target::ElemType acc = i8 ? target::ElemType::S32 : acc16 ? target::ElemType::F16 : target::ElemType::F32;
    // Under @warp_policy(full_row) (flash attention) the row statistics m, l, ... are the
    // accumulator's layout reduced over its columns: a lane holds 16 rows of each 32x32
    // atom but 4 of each 16x16 one, so the small atom comes first. With 32x32x8,
    // attn_fwd_causal_d64 held 2 x 32 rows of m and l across its loop and spilled 784
    // bytes on gfx942 (656 on gfx90a, attn_fwd_d64 336).
    std::vector<const target::MmaShape*> shapes = target::mma_shapes(t, *ab, *bb, acc);
    if (policy == "full_row")
        std::stable_sort(shapes.begin(), shapes.end(),
                         [](const target::MmaShape* x, const target::MmaShape* y) { return x->m < y->m; });
    for (const target::MmaShape* s : shapes) {
        const bool wmma = s->op == target::MatrixOp::Wmma;
        if ((s->op != target::MatrixOp::Mfma && !wmma) || (acc16 && !wmma)) continue;
        // i8: CDNA2's 32x32x8 / 16x16x16 and CDNA3's 32x32x16 / 16x16x32 (4 or 8 bytes a
        // lane); fp8: CDNA3's 32x32x16 / 16x16x32 (8 bytes).
        const bool modelled = wmma ? wave == 32 && s->m == 16 && s->k == 16 && !f8
                              : f8 ? wave == 64 && s->m * s->k == 512
                              : i8 ? wave == 64 && s->m * s->k >= 256 && s->m * s->k <= 512
                                   : wave == 64 && ((s->m == 32 && s->k == 8) || (s->m == 16 && s->k == 16));
        if (!modelled || !s->has_n(s->m) || k % s->k != 0) continue;
        auto split = warp_split(m, n, threads / wave, policy, s->m, s->m);
        if (!split) continue;
        using Atom = layout::Fragment::AmdMatrixAtom;
        // Swapping the operands needs the instruction for (B, A)'s types: the same types.
        const bool transposed = policy == "full_row" && !wmma && A->dtype == B->dtype;
        Atom atom = wmma           ? Atom::Wmma16
                    : s->m == 32   ? (transposed ? Atom::Mfma32T : Atom::Mfma32)
                                   : (transposed ? Atom::Mfma16T : Atom::Mfma16);
        auto c = layout::Fragment::amd_matrix_c(atom, m, n, split->first, split->second);
        if (!c) continue;
        return AmdMatrixPlan{m,    n,          k,          split->first, split->second,
                             s->m, s->k,       wave,       wmma,         transposed,
                             A->scope == Scope::Fragment, *c};
    }
    return std::nullopt;
}

namespace {

// Bytes of padding a K row (rows of a multiple of 128 bytes, read in 16-byte chunks by
// ds_read_b128 lane groups: lanes 0-3 + 20-23, 4-7 + 16-19, ...). 32x32 atoms: lanes
// 0-31 are 32 rows at one K chunk, so a row one bank quad after the previous one puts
// a group's 8 rows in 8 quads. 16x16 atoms: lanes 0-15 are 16 rows at chunk q = lane /
// 16, so a group is rows 0-3 at chunk q and rows 4-7 at chunk q + 1; rows two quads
// apart give the first four the even quads and the other four the odd ones (one quad
// apart, row 7's chunk q + 1 lands on row 0's chunk q).
int64_t k_row_pad_bytes(const AmdMatrixPlan& plan) { return plan.atom == 16 ? 32 : 16; }

// The k-steps a lane loads at once: K is summed in any order, so up to 16 bytes of
// consecutive K (one ds_read_b128) feed `pack` MFMAs.
int64_t k_steps_packed(const AmdMatrixPlan& p, DataType t) {
    // A fragment A read from its registers (amd_direct_a_registers): a transposed
    // accumulator gives a lane one atom_k run per K atom, not `pack` consecutive ones.
    if (p.a_fragment && p.transposed) return 1;
    const int64_t groups = p.wmma ? 1 : p.wave / p.atom, per = p.atom_k / groups, eb = (t.bits + 7) / 8;
    const int64_t steps_k = p.k / p.atom_k;
    int64_t pack = 1;
    while (steps_k % (pack * 2) == 0 && pack * 2 * per * eb <= 16) pack *= 2;
    return pack;
}

// The layout of a [rows, cols] operand tile as stored (amd_operand_layout).
std::optional<layout::Layout> stored_operand_layout(const std::vector<int64_t>& shape, DataType dtype, bool k_last,
                                                    const AmdMatrixPlan& plan) {
    const int64_t row_bytes = shape[1] * dtype.bits / 8;
    if (plan.wmma) {
        // WMMA (wave32): lane l reads row l % 16 of the atom, its whole K run (16
        // elements: two ds_read_b128 for f16 / bf16, one for i8), lanes l and l + 16 the
        // same words. Tiles whose rows run along M / N are read 2 bytes a lane, 16
        // consecutive elements of one K row per instruction: row-major. Rows along K:
        // the 16 rows at one K chunk fall in 2 bank quads of a row-major tile of 64-byte
        // rows (8 words a bank where 4 is the ideal); the XOR swizzle spreads them over
        // all 8 (rows r and r + 2 at different chunks, 16-byte chunks kept whole).
        // Rows of 256 bytes or more (flash attention's q and k at D = 128 f16 / bf16)
        // all start at bank 0 row-major, the 16 rows in one quad (16 wavefronts where 2
        // is the ideal); the 128-byte swizzle (chunk ^ row % 8 within each 128 bytes)
        // puts rows 0-7 and 8-15 each in all 8 quads, with no LDS added (attn_fwd_wg2
        // uses all 64 KiB: 16 bytes of padding a row did not fit it) and fewer VGPRs
        // (attn_fwd 215 -> 209, _causal 224 -> 213). Rows of 65-128 bytes (the D = 64
        // exports' q and k) stay row-major: attn_fwd_causal_d64 sits at 256 VGPRs and
        // spilled 16 bytes swizzled (12 with 16 bytes of padding a
        // row and p's copy padded).
        if (!k_last || (row_bytes > 64 && row_bytes <= 128)) return std::nullopt;
        auto mode = layout::Layout::widest_swizzle(shape[0], shape[1], dtype.bits);
        return layout::Layout::swizzled(shape[0], shape[1], dtype.bits, mode);
    }
    if (!k_last) {
        // Rows along M / N are read 2 bytes a lane, per half wave. A 32x32 atom's half
        // wave is 32 consecutive elements of one K row; a 16x16 atom's is 16 elements (32
        // bytes) of K row k (lanes 0-15) and 16 of row k + run (lanes 16-31, the next lane
        // group's K run), in the same banks when rows are a multiple of 128 bytes. 64 /
        // run bytes of padding a row move row k + run by 64 bytes, half the banks.
        const int64_t run = k_steps_packed(plan, dtype) * plan.atom_k / (plan.wave / plan.atom);
        const int64_t pad_bits = 64 / run * 8;
        if (plan.atom != 16 || row_bytes % 128 != 0 || 64 % run != 0 || pad_bits % dtype.bits != 0)
            return std::nullopt;
        return layout::Layout::padded(shape, pad_bits / dtype.bits);
    }
    if (row_bytes > 64) {
        // Padding (k_row_pad_bytes) rather than the XOR swizzle: a lane's K runs stay at
        // immediate offsets from its row's address (no per-step XOR to keep live).
        if (row_bytes % 128 != 0 || 128 % dtype.bits != 0) return std::nullopt;
        return layout::Layout::padded(shape, k_row_pad_bytes(plan) * 8 / dtype.bits);
    }
    auto mode = layout::Layout::widest_swizzle(shape[0], shape[1], dtype.bits);
    return layout::Layout::swizzled(shape[0], shape[1], dtype.bits, mode);
}

}  // namespace

std::optional<layout::Layout> amd_operand_layout(const BufferNode& x, bool k_last, const AmdMatrixPlan& plan,
                                                 bool transposed) {
    if (x.scope != Scope::Shared) return std::nullopt;
    auto s = const_shape(x.shape);
    if (!s || s->size() != 2) return std::nullopt;
    if (!transposed) return stored_operand_layout(*s, x.dtype, k_last, plan);
    // Stored transposed: the layout of the [cols, rows] tile (whose rows run along K
    // where the logical tile's do not), composed with the transpose.
    const int64_t rows = (*s)[0], cols = (*s)[1];
    auto stored = stored_operand_layout({cols, rows}, x.dtype, !k_last, plan);
    auto transpose = layout::Layout::from_exprs(
        "transpose", {rows, cols}, {cols, rows},
        [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; },
        [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; });
    return (stored ? *stored : layout::Layout::row_major({cols, rows})).compose(transpose);
}

int64_t amd_stage_pad(const BufferNode& x, bool k_last, const AmdMatrixPlan& plan, int64_t lds_left) {
    auto s = const_shape(x.shape);
    if (!k_last || !s || s->size() != 2 || 128 % x.dtype.bits != 0) return 0;
    const int64_t row_bytes = (*s)[1] * x.dtype.bits / 8;
    if (!plan.wmma) return row_bytes % 32 == 0 ? 128 / x.dtype.bits : 0;
    // WMMA: rows of a multiple of 128 bytes all start in one bank quad; 48 bytes more a
    // row (3 quads) put the 16 rows a lane group reads in distinct quads and the stores'
    // row pairs (2g, 2g + 1) apart, where the padded copy fits beside the kernel's other
    // shared buffers.
    if (row_bytes % 128 != 0 || 384 % x.dtype.bits != 0) return 0;
    const int64_t pad = 384 / x.dtype.bits;
    return (*s)[0] * ((*s)[1] + pad) * x.dtype.bits / 8 <= lds_left ? pad : 0;
}

std::optional<std::vector<std::vector<std::vector<int64_t>>>> amd_direct_a_registers(const layout::Fragment& F,
                                                                                    const GemmNode& g,
                                                                                    const AmdMatrixPlan& p) {
    if (!p.transposed || !p.a_fragment || p.wmma || g.trans_a || F.rank() != 2 ||
        F.shape() != std::vector<int64_t>{p.m, p.k})
        return std::nullopt;
    const int64_t groups = p.wave / p.atom, per = p.atom_k / groups, run = k_steps_packed(p, g.a.buffer->dtype) * per;
    const int64_t wtile_m = p.m / p.warps_m;
    return fragment_operand_registers(
        F, p.wave * p.warps_m * p.warps_n, p.k / (run * groups), wtile_m / p.atom, run,
        [&](int64_t t, int64_t kk, int64_t mi, int64_t e) -> std::pair<int64_t, int64_t> {
            // As lower_gemm_amd_matrix addresses A: the wave's row of waves, the lane's row
            // in the atom and its K group.
            const int64_t warp_m = t / p.wave / p.warps_n, lane = t % p.wave;
            return {warp_m * wtile_m + mi * p.atom + lane % p.atom, (kk * groups + lane / p.atom) * run + e};
        });
}

Stmt lower_gemm_amd_matrix(const GemmNode& g, const AmdMatrixPlan& p, const Buffer& a, const Buffer& b,
                           LowerContext& lc, const std::vector<std::vector<std::vector<int64_t>>>* a_regs) {
    SourceLoc loc = g.loc;
    const LowerContext::Registers& c = lc.registers(g.c.buffer);
    const DataType t = a->dtype;
    const int64_t wtile_m = p.m / p.warps_m, wtile_n = p.n / p.warps_n;
    const int64_t atoms_m = wtile_m / p.atom, atoms_n = wtile_n / p.atom, steps_k = p.k / p.atom_k;
    // MFMA: the wave's lanes are wave / atom groups of `atom`, group q holding K offsets
    // [q * per, (q + 1) * per) of its row (A) or column (B). WMMA: every lane the whole K
    // (lanes l and l + 16 the same row).
    const int64_t groups = p.wmma ? 1 : p.wave / p.atom, per = p.atom_k / groups;
    const int64_t c_regs = p.atom * p.atom / (p.wmma ? 32 : p.wave);
    const int64_t pack = k_steps_packed(p, t), run = pack * per;  // run: K elements a lane reads at once

    Expr tx = lc.thread_idx();
    Var warp_m = make_let_var("warp_m", DataType::index(), loc), warp_n = make_let_var("warp_n", DataType::index(), loc);
    Var lane_row = make_let_var("lane_row", DataType::index(), loc), lane_k = make_let_var("lane_k", DataType::index(), loc);
    Expr wave = floordiv(tx, make_int(p.wave));
    Expr lane = floormod(tx, make_int(p.wave));

    Buffer af = make_buffer(g.c.buffer->name + "_a", t, {make_int(atoms_m * run)}, Scope::Register, loc);
    Buffer bf = make_buffer(g.c.buffer->name + "_b", b->dtype, {make_int(atoms_n * run)}, Scope::Register, loc);
    auto regs = [&](const Buffer& r, int64_t first, int64_t count) { return register_elements(r, first, count, loc); };
    auto element = [&](const Buffer& s, bool trans_x, Expr r, Expr col) {
        return trans_x ? make_load(s, {col, r}, loc) : make_load(s, {r, col}, loc);
    };
    Var kk = make_loop_var("kk", loc);
    // The lane's K run: (kk * groups + lane_k) * run + e (run * groups = pack * atom_k),
    // in the form apply_shared_layouts keeps as one vector access (lower/shared_layouts.cpp).
    Expr k_run = add(mul(Expr(kk), make_int(groups)), Expr(lane_k));
    std::vector<Stmt> step;
    // One unrolled loop per atom: the lane's `run` consecutive K of its row / column.
    auto load_run = [&](const Buffer& regs_buf, int64_t first, const Buffer& s, bool trans_x, bool k_second,
                        Expr rc) {
        Var e = make_loop_var("e", loc);
        Expr kx = add(mul(k_run, make_int(run)), Expr(e));
        Expr v = k_second ? element(s, trans_x, rc, kx) : element(s, trans_x, kx, rc);
        step.push_back(make_for(e, make_int(0), make_int(run), ForKind::Unroll,
                                make_store(regs_buf, {add(make_int(first), Expr(e))}, v, loc), loc));
    };
    // k-step `kstep` (a constant only where A comes from registers; else kk).
    auto k_step = [&](int64_t kstep) {
    step.clear();
    for (int64_t mi = 0; mi < atoms_m && !a_regs; ++mi)
        load_run(af, mi * run, a, g.trans_a, true,
                 add(add(mul(Expr(warp_m), make_int(wtile_m)), make_int(mi * p.atom)), Expr(lane_row)));
    const MachineOp op = p.wmma ? MachineOp::Wmma : MachineOp::Mfma;
    auto load_b = [&](int64_t ni) {
        load_run(bf, ni * run, b, g.trans_b, false,
                 add(add(mul(Expr(warp_n), make_int(wtile_n)), make_int(ni * p.atom)), Expr(lane_row)));
    };
    auto mma = [&](int64_t gi, int64_t mi, int64_t ni) {
        int64_t c0 = c_regs * (mi * atoms_n + ni);
        std::vector<Expr> src_a, src_b = regs(bf, ni * run + gi * per, per);
        if (a_regs) {
            const Buffer& held = lc.registers(g.a.buffer).regs;
            for (int64_t e = gi * per; e < (gi + 1) * per; ++e)
                src_a.push_back(make_load(held, {make_int((*a_regs)[kstep][mi][e])}, loc));
        } else {
            src_a = regs(af, mi * run + gi * per, per);
        }
        // Transposed: B's registers as the instruction's A, A's as its B (C^T = B^T A^T;
        // an MFMA lane holds the same elements of X as an A operand as of X^T as a B one).
        std::vector<Expr> src = p.transposed ? src_b : src_a;
        for (auto& e : p.transposed ? src_a : src_b) src.push_back(e);
        for (auto& e : regs(c.regs, c0, c_regs)) src.push_back(e);
        step.push_back(make_machine_op(op, {p.atom, p.atom, p.atom_k}, regs(c.regs, c0, c_regs), std::move(src), loc));
    };
    // MFMA: B one atom column at a time, each right before its instructions, so one B run
    // is live beside the A runs and the accumulators (attn_fwd_causal_d64 on gfx942: 20
    // bytes of scratch with all B runs loaded first, none so). WMMA keeps every load first
    // and the instructions row by row: on gfx1100 the column order spilled more (gemm_f16
    // 0 -> 112 bytes, gemm_f16_nt 96 -> 224). Either way each accumulator sums its
    // k-steps in order gi = 0, 1, ...
    if (p.wmma) {
        for (int64_t ni = 0; ni < atoms_n; ++ni) load_b(ni);
        for (int64_t gi = 0; gi < pack; ++gi)
            for (int64_t mi = 0; mi < atoms_m; ++mi)
                for (int64_t ni = 0; ni < atoms_n; ++ni) mma(gi, mi, ni);
    } else {
        for (int64_t ni = 0; ni < atoms_n; ++ni) {
            load_b(ni);
            for (int64_t gi = 0; gi < pack; ++gi)
                for (int64_t mi = 0; mi < atoms_m; ++mi) mma(gi, mi, ni);
        }
    }
    return make_seq(step, loc);
    };
    Stmt body;
    if (a_regs) {
        std::vector<Stmt> steps;
        for (int64_t s = 0; s < steps_k / pack; ++s) {
            VarMap at;
            at[kk.get()] = make_int(s);
            steps.push_back(substitute(k_step(s), at));
        }
        body = make_seq(steps, loc);
    } else {
        body = make_for(kk, make_int(0), make_int(steps_k / pack), ForKind::Serial, k_step(0), loc);
    }
    Stmt scale_down, scale_up;
    if (is_f8(t)) {
        // CDNA3's fp8 MFMA reads FNUZ bytes, which the lowering of the instruction makes of
        // the OCP ones by rewriting -0, NaN and Inf only (scalar/fp8_fnuz.h): every other
        // byte then reads as half its value and each product is a quarter of the true one.
        // So the accumulator runs at a quarter scale across this gemm's k-steps: C / 4 in,
        // D * 4 out. Powers of two: exact, and every rounding of the sums is that of the
        // unscaled sums, except where C / 4 falls into f32's subnormals (a non-zero |C| <
        // 2^-124 loses low bits; no product gets there: the smallest, e5m2's 2^-16 squared,
        // is 2^-34 at a quarter). A quarter-scale result beyond FLT_MAX / 4 becomes Inf at
        // the last multiply, as the unscaled sums would. Two multiplies per accumulator
        // register per gemm, not per instruction; and in a K loop whose only other uses of
        // the accumulator are these MFMAs, once per loop: hoist-accumulator-scale moves the
        // pair out (they sit outside the gemm's lets for that). Per k-tile, gemm_f8e4m3's
        // 64 registers a lane took 64 v_pk_mul_f32 and 128 AGPR <-> VGPR moves beside 8 MFMAs.
        const int64_t all = atoms_m * atoms_n * c_regs;
        auto scale = [&](double f) {
            Var r = make_loop_var(kFp8ScaleVar, loc);
            Expr x = make_load(c.regs, {Expr(r)}, loc);
            return make_for(r, make_int(0), make_int(all), ForKind::Unroll,
                            make_store(c.regs, {Expr(r)}, mul(x, make_float(f, x->type, loc)), loc), loc);
        };
        scale_down = scale(0.25), scale_up = scale(4.0);
    }
    body = make_allocate(bf, body, loc);
    if (!a_regs) body = make_allocate(af, body, loc);
    body = make_let(lane_k, p.wmma ? make_int(0) : floordiv(lane, make_int(p.atom)), body, loc);
    body = make_let(lane_row, floormod(lane, make_int(p.atom)), body, loc);
    body = make_let(warp_n, floormod(wave, make_int(p.warps_n)), body, loc);
    body = make_let(warp_m, floordiv(wave, make_int(p.warps_n)), body, loc);
    return scale_down ? make_seq({scale_down, body, scale_up}, loc) : body;
}

}  // namespace tilec::ops
