// tma_map_uses (tma_maps.h): a walk over the tma_load and tma_store instructions.
#include "ir/tma_maps.h"

#include "ir/visitor.h"

namespace tilec::ir {

namespace {

int64_t param_of(const PrimFunc& f, const MachineOpNode& op) {
    const Expr& g = op.op == MachineOp::TmaStore ? op.dst.at(0) : op.src.at(0);
    const BufferNode* t = g->as<LoadNode>()->buffer.get();
    for (size_t i = 0; i < f.params.size(); ++i)
        if (f.params[i].kind == ParamKind::Tensor && f.params[i].buffer.get() == t) return static_cast<int64_t>(i);
    return -1;
}

}  // namespace

std::vector<size_t> tma_map_dims(const std::vector<int64_t>& imm, size_t rank) {
    std::vector<size_t> dims;
    if (imm.size() == rank + 1) {
        for (size_t i = 0; i < rank; ++i) dims.push_back(rank - 1 - i);
        return dims;
    }
    if (imm.size() != 2 * rank + 1) return {};
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < rank; ++i) {
        int64_t d = imm[rank + 1 + i];
        if (d < 0 || static_cast<size_t>(d) >= rank || seen[static_cast<size_t>(d)]) return {};
        seen[static_cast<size_t>(d)] = true;
        dims.push_back(static_cast<size_t>(d));
    }
    return dims;
}

int64_t tma_map_index(const std::vector<TmaMapUse>& maps, const PrimFunc& f, const MachineOpNode& op) {
    int64_t p = param_of(f, op);
    for (size_t k = 0; k < maps.size(); ++k)
        if (static_cast<int64_t>(maps[k].param) == p && maps[k].imm == op.imm) return static_cast<int64_t>(k);
    return -1;
}

std::vector<TmaMapUse> tma_map_uses(const PrimFunc& f) {
    struct V : IRVisitor {
        const PrimFunc* f;
        std::vector<TmaMapUse> maps;
        void visit_machine_op(const MachineOpNode* op) override {
            if ((op->op == MachineOp::TmaLoad || op->op == MachineOp::TmaStore) && tma_map_index(maps, *f, *op) < 0) {
                int64_t p = param_of(*f, *op);
                if (p >= 0) maps.push_back({static_cast<size_t>(p), op->imm});
            }
            IRVisitor::visit_machine_op(op);
        }
    } v;
    v.f = &f;
    if (f.body) v.visit(f.body);
    return v.maps;
}

}  // namespace tilec::ir
