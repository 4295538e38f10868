// gemm on NVIDIA tensor cores: the warp partition (plan_mma) and the lowering to
// ldmatrix + mma.sync (lower_gemm_mma). The fragment formulas are the PTX ISA's
// (sections 9.7.14.5.7-9.7.14.5.10: m16n8k8 .tf32, m16n8k16, m16n8k32 .s8/.u8 and
// .e4m3/.e5m2, whose A and B tables name the same figures and formulas), as
// layout/fragment.h builds them; the simulator checks
// the instructions against its own models of the document (sim/warp_mma.h), so a
// mistake here shows as a wrong result there, not as a shared assumption.
#include "ops/gemm_mma.h"

#include <cstdlib>
#include <limits>

#include "ir/visitor.h"
#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

namespace {

// The mma.sync operand type of a tile element type (f32 only as tf32, when allowed).
std::optional<target::ElemType> mma_elem(DataType t, bool allow_tf32) {
    if (t.kind == TypeKind::Float && t.bits == 16) return target::ElemType::F16;
    if (t.kind == TypeKind::BFloat) return target::ElemType::BF16;
    if (t == DataType::i8()) return target::ElemType::S8;
    if (t == DataType::u8()) return target::ElemType::U8;
    if (t == DataType::f32() && allow_tf32) return target::ElemType::TF32;
    if (t.kind == TypeKind::Float8E4M3) return target::ElemType::E4M3;
    if (t.kind == TypeKind::Float8E5M2) return target::ElemType::E5M2;
    return std::nullopt;
}

// The mma.sync accumulator type of a fragment element type.
std::optional<target::ElemType> mma_acc(DataType t) {
    if (t == DataType::f32()) return target::ElemType::F32;
    if (t.kind == TypeKind::Float && t.bits == 16) return target::ElemType::F16;
    if (t == DataType::i32()) return target::ElemType::S32;
    return std::nullopt;
}

}  // namespace

// full_row puts every warp on its own rows (warps_n = 1), full_col on its own columns;
// square (the default) takes the split whose warp tile is closest to square (fewest
// operand loads per mma).
std::optional<std::pair<int64_t, int64_t>> warp_split(int64_t m, int64_t n, int64_t warps, const std::string& policy,
                                                      int64_t atom_m, int64_t atom_n) {
    auto fits = [&](int64_t wm, int64_t wn) { return m % (atom_m * wm) == 0 && n % (atom_n * wn) == 0; };
    if (policy == "full_row" && fits(warps, 1)) return std::make_pair(warps, int64_t{1});
    if (policy == "full_col" && fits(1, warps)) return std::make_pair(int64_t{1}, warps);
    std::optional<std::pair<int64_t, int64_t>> best;
    int64_t best_cost = std::numeric_limits<int64_t>::max();
    for (int64_t wm = 1; wm <= warps; ++wm) {
        if (warps % wm != 0 || !fits(wm, warps / wm)) continue;
        int64_t cost = std::abs(m / wm - n / (warps / wm));
        if (cost < best_cost) best_cost = cost, best = std::make_pair(wm, warps / wm);
    }
    return best;
}

std::optional<MmaPlan> plan_mma(const GemmNode& g, const target::GpuTarget& t, int64_t threads,
                                const std::string& policy, bool allow_tf32) {
    const Buffer &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
    if (!t.ldmatrix.available || threads % 32 != 0 || t.warp_size != 32) return std::nullopt;
    if (A->dtype.bits != B->dtype.bits || C->scope != Scope::Fragment) return std::nullopt;
    auto ea = mma_elem(A->dtype, allow_tf32), eb = mma_elem(B->dtype, allow_tf32);
    auto acc = mma_acc(C->dtype);
    if (!ea || !eb || !acc) return std::nullopt;
    // Mixed operand types only where the instruction takes them and the IR says so
    // (ir::is_mma_form): the fp8 pairs.
    if (A->dtype != B->dtype && !(A->dtype.bits == 8 && A->dtype.is_float() && B->dtype.is_float()))
        return std::nullopt;
    // One atom's K row is 32 bytes (two 16-byte ldmatrix rows); the target must have
    // that shape for these types in the PTX version it emits.
    const int64_t atom_k = 256 / A->dtype.bits;
    const target::MmaShape* shape =
        target::find_mma(t, target::MatrixOp::MmaSync, 16, 8, static_cast<int>(atom_k), *ea, *eb, *acc);
    if (!shape || shape->min_ptx_version > t.ptx_version) return std::nullopt;
    for (const Buffer& X : {A, B})
        if (X->scope != Scope::Shared && X->scope != Scope::Fragment) return std::nullopt;
    auto sa = const_shape(A->shape), sb = const_shape(B->shape);
    if (!sa || !sb || sa->size() != 2 || sb->size() != 2) return std::nullopt;
    int64_t m = g.trans_a ? (*sa)[1] : (*sa)[0];
    int64_t k = g.trans_a ? (*sa)[0] : (*sa)[1];
    int64_t n = g.trans_b ? (*sb)[0] : (*sb)[1];
    if (k % atom_k != 0) return std::nullopt;
    auto split = warp_split(m, n, threads / 32, policy, 16, 8);
    if (!split) return std::nullopt;
    bool interleave = t.has_wgmma() && split->second == 1 && split->first > 1;
    auto c = interleave ? layout::Fragment::mma_m16n8k16_c_interleaved(m, n, split->first, split->second)
                        : layout::Fragment::mma_m16n8k16_c(m, n, split->first, split->second);
    if (!c) return std::nullopt;
    return MmaPlan{m, n, k, split->first, split->second, *c, atom_k, interleave};
}

std::optional<std::vector<std::vector<std::vector<int64_t>>>> direct_a_registers(const layout::Fragment& F,
                                                                                 const GemmNode& g,
                                                                                 const MmaPlan& p) {
    if (p.atom_k != 16 || g.trans_a || F.rank() != 2 || F.shape() != std::vector<int64_t>{p.m, p.k})
        return std::nullopt;
    const int64_t wtile_m = p.m / p.warps_m;
    return fragment_operand_registers(
        F, 32 * p.warps_m * p.warps_n, p.k / 16, wtile_m / 16, 8,
        [&](int64_t t, int64_t kk, int64_t mi, int64_t i) -> std::pair<int64_t, int64_t> {
            const int64_t warp_m = t / 32 / p.warps_n, lane = t % 32, group = lane / 4, in_group = lane % 4;
            // PTX ISA 9.7.14.5.8: a_i at row groupID + 8 * ((i >> 1) & 1), column
            // threadID_in_group * 2 + (i & 1) + 8 * (i >> 2).
            return {p.atom_row(warp_m, mi) + group + 8 * ((i >> 1) & 1),
                    kk * 16 + in_group * 2 + (i & 1) + 8 * (i >> 2)};
        });
}

Stmt lower_gemm_mma(const GemmNode& g, const MmaPlan& p, const Buffer& a, const Buffer& b, LowerContext& lc,
                    const std::vector<std::vector<std::vector<int64_t>>>* a_regs) {
    SourceLoc loc = g.loc;
    const LowerContext::Registers& c = lc.registers(g.c.buffer);
    DataType t = a->dtype;
    const int64_t wtile_m = p.m / p.warps_m, wtile_n = p.n / p.warps_n;
    const int64_t atoms_m = wtile_m / 16, atoms_n = wtile_n / 8, steps_k = p.k / p.atom_k;
    // A 32-bit register holds `per` elements; an 8x8 b16 matrix of ldmatrix is 8 rows of
    // `run` elements (16 bytes); an A atom is 4 registers, a B atom 2 (ISA 9.7.14.5.7-10).
    const int64_t per = 32 / t.bits, run = 16 * 8 / t.bits;
    const int64_t a_elems = 4 * per, b_elems = 2 * per;

    // Per lane: its warp's place in the partition, the row of an 8x8 matrix whose
    // address it supplies to ldmatrix (lanes 8q..8q+7: rows 0..7 of matrix q), and its
    // groupID / threadID_in_group of the ISA's fragment formulas.
    Expr tx = lc.thread_idx();
    Var warp_m = make_let_var("warp_m", DataType::index(), loc), warp_n = make_let_var("warp_n", DataType::index(), loc);
    Var mat = make_let_var("mat", DataType::index(), loc), row = make_let_var("mat_row", DataType::index(), loc);
    Var group = make_let_var("group", DataType::index(), loc), tig = make_let_var("tig", DataType::index(), loc);
    Expr warp = floordiv(tx, make_int(32));
    Expr lane = floormod(tx, make_int(32));

    Buffer af = make_buffer(g.c.buffer->name + "_a", t, {make_int(atoms_m * a_elems)}, Scope::Register, loc);
    Buffer bf = make_buffer(g.c.buffer->name + "_b", b->dtype, {make_int(atoms_n * b_elems)}, Scope::Register, loc);
    auto regs = [&](const Buffer& r, int64_t first, int64_t count) { return register_elements(r, first, count, loc); };
    Var kk = make_loop_var("kk", loc);
    Expr k0 = mul(Expr(kk), make_int(p.atom_k));
    // The 16-byte run a lane addresses for the 8x8 matrix of op(X) at (R, C) (op(X)'s
    // coordinates), and whether ldmatrix needs .trans. The runs lie along the buffer's
    // contiguous dimension (the last, or the first when its layout stores it
    // transposed: `phys`), which is along op(X)'s columns when trans_x == phys. A lane
    // receives elements of one run's row (plain) or column (.trans): A's fragments want
    // op(A)'s rows in the lanes, B's op(B)'s columns.
    auto run_start = [&](const Buffer& s, bool trans_x, bool phys, bool want_rows, Expr R, Expr C) {
        bool along_cols = trans_x == phys;
        Expr r = along_cols ? add(R, Expr(row)) : R;
        Expr c = along_cols ? C : add(C, Expr(row));
        Expr at = trans_x ? make_load(s, {c, r}, loc) : make_load(s, {r, c}, loc);
        return std::make_pair(at, want_rows ? !along_cols : along_cols);
    };
    // Whether a shared buffer's layout stores its first dimension contiguously.
    auto transposed = [&](const Buffer& s) {
        const layout::Layout* L = lc.shared_layout(s);
        return L && L->rank() == 2 && L->shape()[0] > 1 && L->offset({1, 0}) == L->offset({0, 0}) + 1;
    };
    const bool pa = transposed(a), pb = transposed(b);
    // .trans moves 16-bit elements: other widths need their runs along K (no .trans).
    const bool a_ldmatrix = t.bits == 16 || (g.trans_a == pa);
    const bool b_ldmatrix = t.bits == 16 || (g.trans_b != pb);
    auto element = [&](const Buffer& s, bool trans_x, Expr r, Expr col) {
        return trans_x ? make_load(s, {col, r}, loc) : make_load(s, {r, col}, loc);
    };
    // One k-step; `kstep` is the constant step when A comes from registers (their
    // indices depend on it: the steps are unrolled so the registers stay registers).
    // The operand with fewer atoms is loaded whole first; the other one atom (B: a pair
    // of atoms) at a time, right before that atom's mma instructions, so that one of its
    // atoms is live beside the first and the accumulators instead of all of them (MLA
    // decode's q @ kv^T: 4 A atoms against 1 B atom; its p @ kv: 8 B atoms).
    auto k_step = [&](int64_t kstep) {
    std::vector<std::vector<Stmt>> a_loads(static_cast<size_t>(atoms_m)), b_loads(static_cast<size_t>(atoms_n));
    // A atom (16 x atom_k) mi: matrices q = 0..3 at rows 8 * (q % 2), columns
    // run * (q / 2): registers 0..3 of the A fragment (ISA 9.7.14.5.7-10).
    for (int64_t mi = 0; mi < atoms_m && !a_regs; ++mi) {
        auto& out = a_loads[static_cast<size_t>(mi)];
        Expr r0 = p.interleave_m ? add(mul(Expr(warp_m), make_int(16)), make_int(mi * 16 * p.warps_m))
                                 : add(mul(Expr(warp_m), make_int(wtile_m)), make_int(mi * 16));
        if (!a_ldmatrix) {
            // Element i: register j = i / per, at row groupID + 8 (j % 2), column
            // run (j / 2) + threadID_in_group * per + i % per.
            for (int64_t i = 0; i < a_elems; ++i) {
                int64_t j = i / per;
                Expr r = add(add(r0, Expr(group)), make_int(8 * (j % 2)));
                Expr col = add(add(k0, make_int(run * (j / 2) + i % per)), mul(Expr(tig), make_int(per)));
                out.push_back(make_store(af, {make_int(mi * a_elems + i)}, element(a, g.trans_a, r, col), loc));
            }
            continue;
        }
        auto [src, trans] = run_start(a, g.trans_a, pa, true, add(r0, mul(floormod(Expr(mat), make_int(2)), make_int(8))),
                                      add(k0, mul(floordiv(Expr(mat), make_int(2)), make_int(run))));
        out.push_back(make_machine_op(MachineOp::Ldmatrix, {4, trans ? 1 : 0}, regs(af, mi * a_elems, a_elems), {src}, loc));
    }
    // B atoms (atom_k x 8) ni, ni + 1: matrices q at k rows run * (q % 2), atom ni + q / 2:
    // registers 0, 1 of ni, then of ni + 1 (loaded together: listed under ni). B is
    // K x N; stored row-major (k rows) its columns are the n the lanes need: .trans.
    for (int64_t ni = 0; ni < atoms_n; ni += 2) {
        auto& out = b_loads[static_cast<size_t>(ni)];
        Expr n0 = add(mul(Expr(warp_n), make_int(wtile_n)), make_int(ni * 8));
        if (!b_ldmatrix) {
            // Element i of atoms ni, ni + 1: register j = i / per, at k row run * j +
            // threadID_in_group * per + i % per, column groupID.
            for (int64_t nj = ni; nj < std::min(ni + 2, atoms_n); ++nj)
                for (int64_t i = 0; i < b_elems; ++i) {
                    Expr kr = add(add(k0, make_int(run * (i / per) + i % per)), mul(Expr(tig), make_int(per)));
                    Expr col = add(add(n0, make_int(8 * (nj - ni))), Expr(group));
                    out.push_back(make_store(bf, {make_int(nj * b_elems + i)}, element(b, g.trans_b, kr, col), loc));
                }
            continue;
        }
        int64_t num = ni + 1 < atoms_n ? 4 : 2;
        Expr q = num == 4 ? Expr(mat) : floormod(Expr(mat), make_int(2));
        auto [src, trans] = run_start(b, g.trans_b, pb, false, add(k0, mul(floormod(q, make_int(2)), make_int(run))),
                                      add(n0, mul(floordiv(q, make_int(2)), make_int(8))));
        out.push_back(make_machine_op(MachineOp::Ldmatrix, {num, trans ? 1 : 0}, regs(bf, ni * b_elems, num / 2 * b_elems),
                                      {src}, loc));
    }
    auto mma = [&](int64_t mi, int64_t ni) {
        int64_t c0 = 4 * (mi * atoms_n + ni);
        std::vector<Expr> src;
        if (a_regs) {
            const Buffer& held = lc.registers(g.a.buffer).regs;
            for (int64_t i = 0; i < 8; ++i) src.push_back(make_load(held, {make_int((*a_regs)[kstep][mi][i])}, loc));
        } else {
            src = regs(af, mi * a_elems, a_elems);
        }
        for (auto& e : regs(bf, ni * b_elems, b_elems)) src.push_back(e);
        for (auto& e : regs(c.regs, c0, 4)) src.push_back(e);
        return make_machine_op(MachineOp::Mma, {16, 8, p.atom_k}, regs(c.regs, c0, 4), std::move(src), loc);
    };
    std::vector<Stmt> step;
    auto emit = [&](std::vector<Stmt>& loads) {
        for (auto& st : loads) step.push_back(std::move(st));
    };
    if (!a_regs && atoms_n * b_elems < atoms_m * a_elems) {
        for (auto& loads : b_loads) emit(loads);
        for (int64_t mi = 0; mi < atoms_m; ++mi) {
            emit(a_loads[static_cast<size_t>(mi)]);
            for (int64_t ni = 0; ni < atoms_n; ++ni) step.push_back(mma(mi, ni));
        }
    } else {
        for (auto& loads : a_loads) emit(loads);
        for (int64_t ni = 0; ni < atoms_n; ++ni) {
            emit(b_loads[static_cast<size_t>(ni)]);
            for (int64_t mi = 0; mi < atoms_m; ++mi) step.push_back(mma(mi, ni));
        }
    }
    return make_seq(step, loc);
    };
    Stmt body;
    if (a_regs) {
        std::vector<Stmt> steps;
        for (int64_t s = 0; s < steps_k; ++s) {
            VarMap at;
            at[kk.get()] = make_int(s);
            steps.push_back(substitute(k_step(s), at));
        }
        body = make_allocate(bf, make_seq(steps, loc), loc);
    } else {
        body = make_for(kk, make_int(0), make_int(steps_k), ForKind::Serial, k_step(0), loc);
        body = make_allocate(af, make_allocate(bf, body, loc), loc);
    }
    if (!a_ldmatrix || !b_ldmatrix) {
        body = make_let(tig, floormod(lane, make_int(4)), body, loc);
        body = make_let(group, floordiv(lane, make_int(4)), body, loc);
    }
    body = make_let(row, floormod(lane, make_int(8)), body, loc);
    body = make_let(mat, floordiv(lane, make_int(8)), body, loc);
    body = make_let(warp_n, floormod(warp, make_int(p.warps_n)), body, loc);
    body = make_let(warp_m, floordiv(warp, make_int(p.warps_n)), body, loc);
    return body;
}

}  // namespace tilec::ops
