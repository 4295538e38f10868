// The last step of lower-tile-ops: every shared buffer whose planned layout
// (LayoutPlan::shared) is not row-major becomes a 1-d buffer of the layout's codomain,
// and every access to it (loads, stores, the target instructions' operands) takes the
// layout's offset of its coordinate. The ops' lowerings address tiles by coordinate and
// never see a swizzle; the backends and the simulator see plain offsets.
//
// A vector access keeps its vector form: where one coordinate (the last, else an
// earlier one: a tile stored transposed) is `base + e` (or a let bound to it), `e` an
// unrolled loop's variable of extent n (or `r % n` of one) and `base` a product by a
// multiple of n, and the layout maps every aligned run of n along that dimension to n
// contiguous offsets (checked by enumeration), the offset is L(..., base, ...) + e: after
// unrolling, the n accesses differ by constants, which LLVM's load/store vectorizer joins
// into one ds_read / ds_write_b64 / b128 (a swizzle's XOR over the whole coordinate would
// hide that from it). Where the layout keeps only shorter runs contiguous (m dividing
// n), each m-run is one vector access.
#include <map>
#include <tuple>

#include "ir/visitor.h"
#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

Stmt apply_shared_layouts(const Stmt& body, const LayoutPlan& plan) {
    struct Remap {
        Buffer flat;
        const layout::Layout* layout;
    };
    std::unordered_map<const BufferNode*, Remap> remap;
    for (const auto& [b, L] : plan.shared) {
        if (L.codomain_shape().size() != 1 || L.str() == layout::Layout::row_major(L.shape()).str()) continue;
        BufferNode n = *b;
        n.shape = {make_int(L.codomain_size())};
        n.strides.clear();
        remap.emplace(b, Remap{make_buffer(std::move(n)), &L});
    }
    if (remap.empty()) return body;
    struct M : IRMutator {
        std::unordered_map<const BufferNode*, Remap>* remap;
        std::unordered_map<const VarNode*, int64_t> unrolled;  // enclosing unrolled loops: extent (min 0)
        std::unordered_map<const VarNode*, Expr> lets;         // enclosing lets
        std::map<std::tuple<const layout::Layout*, int64_t, size_t>, bool> contiguous_runs;
        const Remap* find(const Buffer& b) const {
            auto it = remap->find(b.get());
            return it == remap->end() ? nullptr : &it->second;
        }
        Stmt mutate_for(const ForNode* op, const Stmt& self) override {
            auto mn = as_const_int(op->min), ext = as_const_int(op->extent);
            bool unroll = op->for_kind == ForKind::Unroll && mn && *mn == 0 && ext;
            if (unroll) unrolled[op->var.get()] = *ext;
            Stmt out = IRMutator::mutate_for(op, self);
            if (unroll) unrolled.erase(op->var.get());
            return out;
        }
        Stmt mutate_let(const LetStmtNode* op, const Stmt& self) override {
            lets[op->var.get()] = op->value;
            Stmt out = IRMutator::mutate_let(op, self);
            lets.erase(op->var.get());
            return out;
        }
        // Every aligned run of n along dimension `dim` contiguous under L.
        bool runs_contiguous(const layout::Layout& L, int64_t n, size_t dim) {
            auto key = std::make_tuple(&L, n, dim);
            auto it = contiguous_runs.find(key);
            if (it != contiguous_runs.end()) return it->second;
            std::vector<int64_t> shape = L.shape(), c(shape.size(), 0);
            bool ok = dim < shape.size() && shape[dim] % n == 0;
            int64_t total = 1;
            for (int64_t e : shape) total *= e;
            for (int64_t k = 0; ok && k < total; ++k) {
                int64_t rest = k;
                for (size_t d = shape.size(); d-- > 0;) c[d] = rest % shape[d], rest /= shape[d];
                if (c[dim] % n != 0) continue;
                int64_t base = L.offset(c);
                for (int64_t e = 1; ok && e < n; ++e) {
                    auto x = c;
                    x[dim] += e;
                    ok = L.offset(x) == base + e;
                }
            }
            contiguous_runs[key] = ok;
            return ok;
        }
        // (base, e) where `last` (a coordinate) is base + e as above, or nullopt.
        std::optional<std::pair<Expr, Expr>> split_run(const Expr& last) const {
            Expr x = last;
            if (auto v = expr_as<VarNode>(x)) {
                auto it = lets.find(v.get());
                if (it == lets.end()) return std::nullopt;
                x = it->second;
            }
            auto* add = x->as<BinaryNode>();
            if (!add || add->op != BinaryOp::Add) return std::nullopt;
            int64_t n = 0;
            if (auto v = expr_as<VarNode>(add->b)) {
                auto it = unrolled.find(v.get());
                if (it == unrolled.end()) return std::nullopt;
                n = it->second;
            } else if (auto* m = add->b->as<BinaryNode>(); m && m->op == BinaryOp::FloorMod) {
                auto v = expr_as<VarNode>(m->a);
                auto k = as_const_int(m->b);
                if (!v || !k || !unrolled.count(v.get())) return std::nullopt;
                n = *k;
            } else {
                return std::nullopt;
            }
            auto* mul = add->a->as<BinaryNode>();
            auto c = mul && mul->op == BinaryOp::Mul ? as_const_int(mul->b) : std::nullopt;
            if (n <= 1 || !c || *c % n != 0) return std::nullopt;
            return std::make_pair(add->a, add->b);
        }
        Expr offset(const Remap& r, std::vector<Expr> idx) {
            if (idx.empty()) return r.layout->apply(idx).front();
            for (size_t dim = idx.size(); dim-- > 0;) {
                auto run = split_run(idx[dim]);
                if (!run) continue;
                int64_t n = 0;
                if (auto v = expr_as<VarNode>(run->second))
                    n = unrolled.at(v.get());
                else
                    n = *as_const_int(run->second->as<BinaryNode>()->b);
                if (runs_contiguous(*r.layout, n, dim)) {
                    idx[dim] = run->first;
                    return ir::add(r.layout->apply(idx).front(), run->second);
                }
                // Runs of n that the layout splits (a WMMA lane's 16 f16 of K across two
                // 16-byte swizzle chunks): the widest m dividing n whose aligned runs stay
                // contiguous, e = (e / m) * m + e % m; after unrolling e / m is a constant,
                // so each m-run is still one vector access.
                for (int64_t m = n / 2; m > 1; m /= 2) {
                    if (n % m != 0 || !runs_contiguous(*r.layout, m, dim)) continue;
                    Expr e = run->second;
                    idx[dim] = ir::add(run->first, mul(floordiv(e, make_int(m)), make_int(m)));
                    return ir::add(r.layout->apply(idx).front(), floormod(e, make_int(m)));
                }
            }
            return r.layout->apply(idx).front();
        }
        Buffer mutate_buffer(const Buffer& b) override {
            const Remap* r = find(b);
            return r ? r->flat : b;
        }
        Expr mutate_load(const LoadNode* op, const Expr& self) override {
            const Remap* r = find(op->buffer);
            if (!r) return IRMutator::mutate_load(op, self);
            std::vector<Expr> idx;
            if (!mutate_exprs(op->indices, &idx)) idx = op->indices;
            return make_load(r->flat, {offset(*r, idx)}, op->loc);
        }
        Stmt mutate_store(const StoreNode* op, const Stmt& self) override {
            const Remap* r = find(op->buffer);
            if (!r) return IRMutator::mutate_store(op, self);
            std::vector<Expr> idx;
            if (!mutate_exprs(op->indices, &idx)) idx = op->indices;
            return make_store(r->flat, {offset(*r, idx)}, mutate(op->value), op->loc);
        }
    } m;
    m.remap = &remap;
    return m.mutate(body);
}

}  // namespace tilec::lower::detail
