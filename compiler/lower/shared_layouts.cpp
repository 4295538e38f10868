// The last step of lower-tile-ops: every shared buffer whose planned layout
// (LayoutPlan::shared) is not row-major becomes a 1-d buffer of the layout's codomain,
// and every access to it (loads, stores, the target instructions' operands) takes the
// layout's offset of its coordinate. The ops' lowerings address tiles by coordinate and
// never see a swizzle; the backends and the simulator see plain offsets.
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
        const Remap* find(const Buffer& b) const {
            auto it = remap->find(b.get());
            return it == remap->end() ? nullptr : &it->second;
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
            return make_load(r->flat, r->layout->apply(idx), op->loc);
        }
        Stmt mutate_store(const StoreNode* op, const Stmt& self) override {
            const Remap* r = find(op->buffer);
            if (!r) return IRMutator::mutate_store(op, self);
            std::vector<Expr> idx;
            if (!mutate_exprs(op->indices, &idx)) idx = op->indices;
            return make_store(r->flat, r->layout->apply(idx), mutate(op->value), op->loc);
        }
    } m;
    m.remap = &remap;
    return m.mutate(body);
}

}  // namespace tilec::lower::detail
