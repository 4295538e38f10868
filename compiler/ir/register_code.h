// What the compiled evaluators of integer expressions (layout::IndexProgram,
// transform::IntProgram) share: register code in evaluation order with one register per
// distinct node, so subexpressions shared by pointer (compositions, swizzles) run once,
// and selects whose sides run only when taken and share nothing computed inside the side
// not taken. Header-only: the two differ in their operators' semantics, not in this.
#pragma once
#include <cstdint>
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

// Appends a select's code: `cond` the register of its condition, `dst` its result's;
// `emit(expr)` compiles a side and returns its register. Inst has Op::JumpIfZero, Move
// and Jump, and fields dst, a and imm (a jump's target).
template <class Inst, class Emit>
void emit_select(std::vector<Inst>& code, NodeRegisters& regs, const SelectNode& sel, uint32_t cond,
                 uint32_t dst, Emit&& emit) {
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
}

}  // namespace tilec::ir
