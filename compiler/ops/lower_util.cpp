// Shape and global-region helpers of the tile ops' hooks (see lower_util.h), in one
// place because copy, atomic_add and layout inference ask the same questions.
#include "ops/lower_util.h"

#include "layout/index_expr.h"

namespace tilec::ops {

using namespace ir;

std::optional<std::vector<int64_t>> const_shape(const std::vector<Expr>& shape) {
    std::vector<int64_t> out;
    for (const auto& e : shape) {
        auto v = as_const_int(e);
        if (!v) return std::nullopt;
        out.push_back(*v);
    }
    return out;
}

std::optional<std::vector<int64_t>> positive_shape(const std::vector<Expr>& shape) {
    std::vector<int64_t> out;
    for (const Expr& e : shape) {
        auto v = as_const_int(e);
        if (!v || *v <= 0) return std::nullopt;
        out.push_back(*v);
    }
    return out;
}

bool whole_tile(const Region& r) { return positive_shape(r.buffer->shape) && is_full_region(r); }

std::vector<Expr> global_indices(const Region& g, const std::vector<int64_t>& tile,
                                 const std::vector<Expr>& coord) {
    std::vector<Expr> live;
    for (size_t d = 0; d < tile.size(); ++d)
        if (tile[d] != 1) live.push_back(coord[d]);
    std::vector<Expr> out;
    size_t k = 0;
    for (size_t d = 0; d < g.start.size(); ++d) {
        if (is_const_int(g.extent[d], 1))
            out.push_back(g.start[d]);
        else
            out.push_back(layout::idx_add(g.start[d], live.at(k++)));
    }
    return out;
}

Expr in_bounds(const Buffer& b, const std::vector<Expr>& idx) { return in_bounds_dims(b, idx, idx.size()); }

Expr in_bounds_dims(const Buffer& b, const std::vector<Expr>& idx, size_t n) {
    Expr c;
    for (size_t d = 0; d < n; ++d) {
        Expr ok = logical_and(ge(idx[d], make_int(0)), lt(idx[d], b->shape[d]));
        c = c ? logical_and(c, ok) : ok;
    }
    return c ? c : make_bool(true);
}

Expr region_in_bounds(const Region& g) {
    Expr c;
    for (size_t d = 0; d < g.start.size(); ++d) {
        Expr ok =
            logical_and(ge(g.start[d], make_int(0)), le(add(g.start[d], g.extent[d]), g.buffer->shape[d]));
        c = c ? logical_and(c, ok) : ok;
    }
    return c ? c : make_bool(true);
}

std::string func_attr(const PrimFunc& f, const std::string& name) {
    for (const auto& [k, v] : f.attrs)
        if (k == name) return v;
    return "";
}

Stmt guard_replica(const Expr& rep, Stmt s) {
    if (is_const_int(rep, 0)) return s;
    return make_if(eq(rep, make_int(0)), std::move(s), nullptr, s->loc);
}

std::vector<Expr> register_elements(const Buffer& r, int64_t first, int64_t count, SourceLoc loc) {
    std::vector<Expr> out;
    for (int64_t i = 0; i < count; ++i) out.push_back(make_load(r, {make_int(first + i)}, loc));
    return out;
}

std::optional<OperandRegisters> fragment_operand_registers(
    const layout::Fragment& F, int64_t threads, int64_t steps, int64_t atoms, int64_t slots,
    const std::function<std::pair<int64_t, int64_t>(int64_t, int64_t, int64_t, int64_t)>& element) {
    if (F.rank() != 2 || F.thread_count() != threads) return std::nullopt;
    OperandRegisters regs(steps, std::vector<std::vector<int64_t>>(atoms, std::vector<int64_t>(slots, -1)));
    for (int64_t t = 0; t < threads; ++t)
        for (int64_t kk = 0; kk < steps; ++kk)
            for (int64_t mi = 0; mi < atoms; ++mi)
                for (int64_t i = 0; i < slots; ++i) {
                    auto [row, col] = element(t, kk, mi, i);
                    int64_t reg = -1;
                    for (const auto& slot : F.owners({row, col}))
                        if (slot.thread == t) reg = slot.reg;
                    int64_t& want = regs[kk][mi][i];
                    if (reg < 0 || (want >= 0 && want != reg)) return std::nullopt;
                    want = reg;
                }
    return regs;
}

}  // namespace tilec::ops
