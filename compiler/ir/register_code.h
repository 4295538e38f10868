// What the compiled evaluators of integer expressions (layout::IndexProgram,
// transform::IntProgram) share: register code in evaluation order with one register per
// distinct node, so subexpressions shared by pointer (compositions, swizzles) run once,
// and selects whose sides run only when taken and share nothing computed inside the side
// not taken. Header-only: the two differ in their operators' semantics, not in this.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tilec::ir {

// The register of each node compiled so far, by scope (a select's side is a scope,
// forgotten when it closes).
class NodeRegisters {
public:
    NodeRegisters() : scopes_(1) {}
    const uint32_t* find(const ExprNode* node) const {
        auto it = regs_.find(node);
        return it == regs_.end() ? nullptr : &it->second;
    }
    void add(const ExprNode* node, uint32_t reg) {
        regs_.emplace(node, reg);
        scopes_.back().push_back(node);
    }
    void open() { scopes_.emplace_back(); }
    void close() {
        for (const ExprNode* node : scopes_.back()) regs_.erase(node);
        scopes_.pop_back();
    }

private:
    std::unordered_map<const ExprNode*, uint32_t> regs_;
    std::vector<std::vector<const ExprNode*>> scopes_;
};

// The register holding e where it needs no new code: a slot's variable (the last slot
// listing it: registers [0, slots.size()) hold the slots' values) or a node compiled in a
// scope in force.
inline std::optional<uint32_t> compiled_register(const Expr& e, const std::vector<const VarNode*>& slots,
                                                 const NodeRegisters& regs) {
    if (e->kind == ExprKind::Var)
        for (size_t k = slots.size(); k-- > 0;)
            if (slots[k] == e.get()) return static_cast<uint32_t>(k);
    if (const uint32_t* reg = regs.find(e.get())) return *reg;
    return std::nullopt;
}

// A binary node's operands: the left one's register in `in.a`; the right one as the
// immediate `in.imm` (`in.b_imm`) where it is a constant, else its register in `in.b`.
template <class Inst, class Emit>
void emit_binary_operands(Inst& in, const BinaryNode& b, Emit&& emit) {
    in.a = emit(b.a);
    if (b.b->kind == ExprKind::IntImm) {
        in.b_imm = true;
        in.imm = static_cast<const IntImmNode*>(b.b.get())->value;
    } else {
        in.b = emit(b.b);
    }
}

// Appends `in`, computing `node`'s value into a new register, and returns the register.
template <class Inst>
uint32_t append_node(std::vector<Inst>& code, NodeRegisters& regs, uint32_t& registers, const ExprNode* node,
                     Inst in) {
    in.dst = registers++;
    code.push_back(in);
    regs.add(node, in.dst);
    return in.dst;
}

// Appends the code of select node `sel`, `cond` the register of its condition, and
// returns the register of its value; `emit(expr)` compiles a side and returns its
// register. Inst has Op::JumpIfZero, Move and Jump, and fields dst, a and imm (a jump's
// target).
template <class Inst, class Emit>
uint32_t emit_select(std::vector<Inst>& code, NodeRegisters& regs, uint32_t& registers, const SelectNode& sel,
                     uint32_t cond, Emit&& emit) {
    uint32_t dst = registers++;
    auto side = [&](const Expr& value) {
        regs.open();
        uint32_t v = emit(value);
        regs.close();
        code.push_back({Inst::Op::Move});
        code.back().dst = dst;
        code.back().a = v;
    };
    size_t to_else = code.size();
    code.push_back({Inst::Op::JumpIfZero});
    code.back().a = cond;
    side(sel.t);
    size_t to_end = code.size();
    code.push_back({Inst::Op::Jump});
    code[to_else].imm = static_cast<int64_t>(code.size());
    side(sel.f);
    code[to_end].imm = static_cast<int64_t>(code.size());
    regs.add(&sel, dst);
    return dst;
}

}  // namespace tilec::ir
