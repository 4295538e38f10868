// gemm on warpgroup tensor cores (gemm_wgmma.h). The descriptors follow the PTX ISA's
// canonical layouts (9.7.15.5.1.2.1.3): a shared tile in Layout::swizzled's form (panels
// as wide as the swizzle, each row-major and XOR-swizzled, the buffer aligned to the
// pattern by the shared-memory plan) is K-major when its contiguous dimension is K (rows
// of W bytes, 8-row groups SBO = 8W apart) and MN-major otherwise (k rows of W bytes,
// 8-row groups SBO = 8W apart, the next W bytes of M/N LBO = rows * W further). The
// simulator reads the operands through its own model of the document
// (sim/warpgroup_mma.h), so a mistake here shows as a wrong result there.
#include "ops/gemm_wgmma.h"

#include "ops/lower_util.h"

namespace tilec::ops {

using namespace ir;

std::optional<WgmmaPlan> plan_wgmma(const GemmNode& g, const target::GpuTarget& t, int64_t threads) {
    const Buffer &A = g.a.buffer, &B = g.b.buffer, &C = g.c.buffer;
    if (!t.has_wgmma() || threads % 128 != 0 || t.warp_size != 32) return std::nullopt;
    // A in registers: the register form (PTX ISA 9.7.15.5, f16 / bf16 only, no imm-trans-a).
    const bool a_regs = A->scope == Scope::Fragment;
    if ((A->scope != Scope::Shared && !a_regs) || B->scope != Scope::Shared || C->scope != Scope::Fragment)
        return std::nullopt;
    if (C->dtype != DataType::f32()) return std::nullopt;
    auto is_f8 = [](DataType t) { return t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2; };
    const bool f16 = A->dtype.kind == TypeKind::Float && A->dtype.bits == 16;
    const bool f8 = is_f8(A->dtype) && is_f8(B->dtype);
    if (!f8 && (A->dtype != B->dtype || (!f16 && A->dtype.kind != TypeKind::BFloat))) return std::nullopt;
    if (a_regs && (f8 || g.trans_a)) return std::nullopt;
    // The 8-bit form (m64nNk32 .e4m3 / .e5m2, either mix) takes no transpose: both
    // operands K-major in shared memory, which wgmma_operand_layout asks of their tiles.
    const int64_t step_k = f8 ? 32 : 16;
    auto sa = const_shape(A->shape), sb = const_shape(B->shape);
    if (!sa || !sb || sa->size() != 2 || sb->size() != 2) return std::nullopt;
    int64_t m = g.trans_a ? (*sa)[1] : (*sa)[0];
    int64_t k = g.trans_a ? (*sa)[0] : (*sa)[1];
    int64_t n = g.trans_b ? (*sb)[0] : (*sb)[1];
    if (k % step_k != 0) return std::nullopt;
    // Warpgroups along M first (each owns whole rows), then along N.
    const int64_t groups = threads / 128;
    for (int64_t gm = groups; gm >= 1; --gm) {
        if (groups % gm != 0) continue;
        int64_t gn = groups / gm;
        if (m % (64 * gm) != 0 || n % (8 * gn) != 0) continue;
        // A's registers split over the warpgroups' rows only (no replicas of A).
        if (a_regs && gn != 1) continue;
        int64_t per = n / gn, inst = per;
        while (inst > 256 && inst % 2 == 0) inst /= 2;
        if (inst > 256 || inst % 8 != 0) continue;
        auto c = layout::Fragment::wgmma_m64nNk16_d(m, n, gm, gn);
        if (!c) continue;
        std::optional<layout::Fragment> a;
        if (a_regs && !(a = layout::Fragment::wgmma_m64nNk16_d(m, k, gm, 1))) continue;
        return WgmmaPlan{m, n, k, gm, gn, inst, *c, step_k, a};
    }
    return std::nullopt;
}

std::optional<layout::Layout> wgmma_operand_layout(const Buffer& X, bool k_last) {
    auto s = const_shape(X->shape);
    if (!s || s->size() != 2) return std::nullopt;
    const int64_t rows = (*s)[0], cols = (*s)[1];
    const int bits = X->dtype.bits;
    if (k_last) return layout::Layout::swizzled(rows, cols, bits, layout::Layout::widest_swizzle(rows, cols, bits));
    // K along the tile's first dimension: stored transposed, K contiguous.
    auto phys = layout::Layout::swizzled(cols, rows, bits, layout::Layout::widest_swizzle(cols, rows, bits));
    if (!phys) return std::nullopt;
    auto transpose = layout::Layout::from_exprs(
        "transpose", {rows, cols}, {cols, rows}, [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; },
        [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; });
    return phys->compose(transpose);
}

namespace {

// How a 2-D shared tile is stored, when a matrix descriptor can describe it.
struct Storage {
    bool transposed;  // the buffer's first dimension is the contiguous one
    int64_t rows;     // extent of the outer (non-contiguous) dimension
    int64_t width;    // swizzle width in bytes (32 / 64 / 128)
    int64_t mode;     // descriptor swizzle mode: 1 128B, 2 64B, 3 32B
};

std::optional<Storage> storage_of(const Buffer& X, const layout::Layout* L) {
    auto s = const_shape(X->shape);
    if (!L || !s || s->size() != 2 || L->codomain_shape().size() != 1) return std::nullopt;
    const int64_t bits = X->dtype.bits;
    for (bool transposed : {false, true})
        for (auto mode : {layout::SmemSwizzle::B128, layout::SmemSwizzle::B64, layout::SmemSwizzle::B32}) {
            int64_t rows = transposed ? (*s)[1] : (*s)[0], cols = transposed ? (*s)[0] : (*s)[1];
            auto want = layout::Layout::swizzled(rows, cols, static_cast<int>(bits), mode);
            if (!want) continue;
            bool same = true;
            if (L->shape() == *s) {
                // Row-major tables: (i, j) of L, (j, i) of a transposed candidate.
                const std::vector<int64_t>&l = *L->offsets(), &w = *want->offsets();
                const int64_t n0 = (*s)[0], n1 = (*s)[1];
                for (int64_t i = 0; i < n0 && same; ++i)
                    for (int64_t j = 0; j < n1 && same; ++j)
                        same = l[size_t(i * n1 + j)] == w[size_t(transposed ? j * n0 + i : i * n1 + j)];
            } else {
                for (int64_t i = 0; i < (*s)[0] && same; ++i)
                    for (int64_t j = 0; j < (*s)[1] && same; ++j)
                        same =
                            L->offset({i, j}) == (transposed ? want->offset({j, i}) : want->offset({i, j}));
            }
            if (!same) continue;
            int64_t width = layout::smem_swizzle_bytes(mode);
            int64_t code = mode == layout::SmemSwizzle::B128 ? 1 : mode == layout::SmemSwizzle::B64 ? 2 : 3;
            return Storage{transposed, rows, width, code};
        }
    return std::nullopt;
}

}  // namespace

// The register form's A operands: per (m64 tile mi, k-step kk), the index in A's
// register array of each element a0..a7 (PTX ISA 9.7.15.5.1.1.1, Figure 148: element i
// of lane l of warp w of the warpgroup at row 16w + l/4 + 8*((i/2) % 2), column
// 2*(l%4) + i%2 + 8*(i/4) of the 64 x 16 tile), found through A's fragment F; one index
// for every thread of the block (the instruction's operands are the same registers in
// each thread), or nullopt where F does not hold A that way.
std::optional<std::vector<std::vector<std::vector<int64_t>>>> wgmma_a_registers(const layout::Fragment& F,
                                                                                const WgmmaPlan& p) {
    if (F.rank() != 2 || F.shape() != std::vector<int64_t>{p.m, p.k} || p.groups_n != 1) return std::nullopt;
    const int64_t threads = 128 * p.groups_m, per_m = p.m / p.groups_m, tiles_m = per_m / 64, steps_k = p.k / 16;
    if (F.thread_count() != threads) return std::nullopt;
    std::vector<std::vector<std::vector<int64_t>>> regs(
        static_cast<size_t>(tiles_m), std::vector<std::vector<int64_t>>(static_cast<size_t>(steps_k), std::vector<int64_t>(8, -1)));
    for (int64_t t = 0; t < threads; ++t) {
        const int64_t group = t / 128, warp = t % 128 / 32, lane = t % 32;
        for (int64_t mi = 0; mi < tiles_m; ++mi)
            for (int64_t kk = 0; kk < steps_k; ++kk)
                for (int64_t i = 0; i < 8; ++i) {
                    int64_t row = group * per_m + mi * 64 + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
                    int64_t col = kk * 16 + 2 * (lane % 4) + i % 2 + 8 * (i / 4);
                    int64_t reg = -1;
                    for (const auto& slot : F.owners({row, col}))
                        if (slot.thread == t) reg = slot.reg;
                    int64_t& want = regs[static_cast<size_t>(mi)][static_cast<size_t>(kk)][static_cast<size_t>(i)];
                    if (reg < 0 || (want >= 0 && want != reg)) return std::nullopt;
                    want = reg;
                }
    }
    return regs;
}

std::optional<Stmt> lower_gemm_wgmma(const GemmNode& g, const WgmmaPlan& p, LowerContext& lc) {
    SourceLoc loc = g.loc;
    const Buffer &a = g.a.buffer, &b = g.b.buffer;
    // A in registers (the register form) or a shared tile read through a descriptor.
    std::optional<std::vector<std::vector<std::vector<int64_t>>>> a_regs;
    if (p.a) {
        a_regs = wgmma_a_registers(lc.registers(a).frag, p);
        if (!a_regs) return std::nullopt;
    }
    auto sa = p.a ? std::optional<Storage>(Storage{false, 0, 16, 0}) : storage_of(a, lc.shared_layout(a)),
         sb = storage_of(b, lc.shared_layout(b));
    if (!sa || !sb) return std::nullopt;
    const int64_t eb = (a->dtype.bits + 7) / 8;
    // Buffer dimension of M/N for each operand: A is [M, K] (or [K, M] with trans_a), B
    // [K, N] (or [N, K] with trans_b). K-major when the contiguous dimension is K.
    const int dim_m = g.trans_a ? 1 : 0, dim_n = g.trans_b ? 0 : 1;
    auto contiguous = [](const Storage& s) { return s.transposed ? 0 : 1; };
    const bool a_mn_major = !p.a && contiguous(*sa) == dim_m, b_mn_major = contiguous(*sb) == dim_n;
    const int64_t tm = 64, tn = p.inst_n;
    // The descriptors' offsets, and what their start elements must respect: K-major, the
    // 16 k of a step inside one panel (W >= 32 bytes) and M/N starting on 8 rows;
    // MN-major, M/N starting on a panel.
    const int64_t step_k = p.step_k;
    if (step_k == 32 && (a_mn_major || b_mn_major)) return std::nullopt;  // 8-bit: K-major only
    auto offsets = [&](const Storage& s, bool mn_major, int64_t extent_mn) -> std::optional<std::pair<int64_t, int64_t>> {
        int64_t panel = s.width / eb;
        if (!mn_major) {
            if (step_k * eb > s.width) return std::nullopt;
            return std::make_pair(int64_t{16}, 8 * s.width);
        }
        if (extent_mn % panel != 0 && extent_mn > panel) return std::nullopt;
        return std::make_pair(s.rows * s.width, 8 * s.width);
    };
    auto oa = p.a ? std::optional<std::pair<int64_t, int64_t>>(std::make_pair(int64_t{0}, int64_t{0}))
                  : offsets(*sa, a_mn_major, tm),
         ob = offsets(*sb, b_mn_major, tn);
    if (!oa || !ob) return std::nullopt;
    const int64_t per_m = p.m / p.groups_m, per_n = p.n / p.groups_n;
    if (a_mn_major && per_m % (sa->width / eb) != 0) return std::nullopt;
    if (b_mn_major && tn % (sb->width / eb) != 0 && tn > sb->width / eb) return std::nullopt;

    const LowerContext::Registers& c = lc.registers(g.c.buffer);
    const int64_t tiles_m = per_m / tm, tiles_n = per_n / tn, steps_k = p.k / step_k;
    Expr group = floordiv(Expr(lc.thread_idx()), make_int(128));
    Var gm = make_let_var("group_m", DataType::index(), loc), gn = make_let_var("group_n", DataType::index(), loc);
    Var kk = make_loop_var("kk", loc);
    Expr k0 = mul(Expr(kk), make_int(step_k));
    auto acc = [&](int64_t first, int64_t count) {
        std::vector<Expr> out;
        for (int64_t i = 0; i < count; ++i) out.push_back(make_load(c.regs, {make_int(first + i)}, loc));
        return out;
    };
    const int64_t regs = c.frag.registers_per_thread();
    // The register form's A elements of (m64 tile, k-step): loads of A's registers.
    auto a_elements = [&](int64_t mi, int64_t kstep) {
        std::vector<Expr> out;
        const Buffer& ar = lc.registers(a).regs;
        for (int64_t r : (*a_regs)[static_cast<size_t>(mi)][static_cast<size_t>(kstep)]) out.push_back(make_load(ar, {make_int(r)}, loc));
        return out;
    };
    // One k-step's wgmma; `kstep` >= 0 a constant step (the register form, whose A
    // registers are per step), else the loop's kk.
    auto step_at = [&](int64_t kstep) {
        std::vector<Stmt> step;
        Expr kb = kstep >= 0 ? make_int(kstep * step_k) : k0;
        for (int64_t mi = 0; mi < tiles_m; ++mi)
            for (int64_t ni = 0; ni < tiles_n; ++ni) {
                Expr m0 = add(mul(Expr(gm), make_int(per_m)), make_int(mi * tm));
                Expr n0 = add(mul(Expr(gn), make_int(per_n)), make_int(ni * tn));
                Expr at_b = g.trans_b ? make_load(b, {n0, kb}, loc) : make_load(b, {kb, n0}, loc);
                int64_t first = mi * (per_n / 2) + ni * (tn / 2);
                std::vector<Expr> src;
                if (a_regs) src = a_elements(mi, kstep);
                else src.push_back(g.trans_a ? make_load(a, {kb, m0}, loc) : make_load(a, {m0, kb}, loc));
                src.push_back(at_b);
                for (auto& e : acc(first, tn / 2)) src.push_back(e);
                step.push_back(make_machine_op(MachineOp::Wgmma,
                                               {tn, a_mn_major ? 1 : 0, b_mn_major ? 1 : 0, oa->first, oa->second,
                                                sa->mode, ob->first, ob->second, sb->mode},
                                               acc(first, tn / 2), std::move(src), loc));
            }
        return step;
    };
    // Unrolled where K is a pipeline step's (up to 8 k-steps): a rolled k loop carries the
    // accumulators through PTX moves between wgmma instructions, and ptxas then injects a
    // warpgroup.arrive before each (C7519), waiting for the wgmma in flight. A long K (the
    // MLA decode kernel's q @ kv^T over 512) stays rolled: unrolled, its descriptors'
    // address arithmetic spilled (168 bytes at 255 registers).
    // The register form: the steps written out (each names its own A registers).
    Stmt loop;
    if (a_regs) {
        std::vector<Stmt> steps;
        for (int64_t ks = 0; ks < steps_k; ++ks)
            for (auto& st : step_at(ks)) steps.push_back(st);
        loop = make_seq(steps, loc);
    } else {
        loop = make_for(kk, make_int(0), make_int(steps_k), steps_k <= 8 ? ForKind::Unroll : ForKind::Serial,
                        make_seq(step_at(-1), loc), loc);
    }
    // The fence orders the registers' earlier writes before the wgmma: the accumulators,
    // and A's registers in the register form (PTX ISA, wgmma.fence: "between a register
    // access ... and any wgmma.mma_async instruction that accesses the same registers,
    // either as accumulator or input register containing fragments of matrix A").
    std::vector<Expr> fenced = acc(0, regs);
    if (a_regs)
        for (int64_t mi = 0; mi < tiles_m; ++mi)
            for (int64_t ks = 0; ks < steps_k; ++ks)
                for (auto& e : a_elements(mi, ks)) fenced.push_back(e);
    std::vector<Stmt> body{make_machine_op(MachineOp::FenceProxyAsync, {}, {}, {}, loc),
                           make_machine_op(MachineOp::WgmmaFence, {}, fenced, fenced, loc), loop,
                           make_machine_op(MachineOp::WgmmaCommit, {}, {}, {}, loc),
                           make_machine_op(MachineOp::WgmmaWait, {0}, acc(0, regs), acc(0, regs), loc)};
    Stmt out = make_seq(body, loc);
    out = make_let(gn, floormod(group, make_int(p.groups_n)), out, loc);
    out = make_let(gm, floordiv(group, make_int(p.groups_n)), out, loc);
    return out;
}

}  // namespace tilec::ops
