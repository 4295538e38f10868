// Walking and rewriting Tile IR. IRVisitor visits every node of a tree (a pass overrides
// only the nodes it cares about and calls the base to keep recursing); IRMutator
// rebuilds a tree bottom-up and returns the same pointer wherever nothing changed.
#pragma once
#include <functional>
#include <unordered_map>

#include "ir/ir.h"

namespace tilec::ir {

// Read-only traversal. The default of each visit_* visits the node's children, in
// source order: expressions inside a statement, then its sub-statements. Definitions
// (a For's var, a LetStmt's var, an Allocate's buffer) are not visited as uses; buffer
// shapes are not visited. Override `visit_buffer_use` to see every buffer reference
// (Load, Store, regions of tile ops).
class IRVisitor {
public:
    virtual ~IRVisitor() = default;

    // Dispatch on the node's kind; null is ignored.
    virtual void visit(const Expr& e);
    virtual void visit(const Stmt& s);
    // Visits the region's buffer use, then start and extent expressions.
    virtual void visit_region(const Region& r);
    virtual void visit_buffer_use(const Buffer& /*b*/) {}

protected:
    virtual void visit_int_imm(const IntImmNode* /*op*/) {}
    virtual void visit_float_imm(const FloatImmNode* /*op*/) {}
    virtual void visit_string_imm(const StringImmNode* /*op*/) {}
    virtual void visit_var(const VarNode* /*op*/) {}
    virtual void visit_binary(const BinaryNode* op);
    virtual void visit_unary(const UnaryNode* op);
    virtual void visit_select(const SelectNode* op);
    virtual void visit_cast(const CastNode* op);
    virtual void visit_call(const CallNode* op);
    virtual void visit_load(const LoadNode* op);

    virtual void visit_seq(const SeqNode* op);
    virtual void visit_for(const ForNode* op);
    virtual void visit_if(const IfNode* op);
    virtual void visit_let(const LetStmtNode* op);
    virtual void visit_allocate(const AllocateNode* op);
    virtual void visit_store(const StoreNode* op);
    virtual void visit_evaluate(const EvaluateNode* op);
    virtual void visit_copy(const CopyNode* op);
    virtual void visit_gemm(const GemmNode* op);
    virtual void visit_fill(const FillNode* op);
    virtual void visit_reduce(const ReduceNode* op);
    virtual void visit_cumsum(const CumsumNode* op);
    virtual void visit_atomic_add(const AtomicAddNode* op);
    virtual void visit_print(const PrintNode* op);
    virtual void visit_assert(const AssertNode* op);
    virtual void visit_barrier(const BarrierNode* /*op*/) {}
    virtual void visit_atomic_rmw(const AtomicRmwNode* op);
    virtual void visit_full_write(const FullWriteNode* op);
    // Visits dst's Loads like src's: an analysis that tells reads from writes overrides it.
    virtual void visit_machine_op(const MachineOpNode* op);
};

// Bottom-up rebuild. Each mutate_* receives the node and the handle that holds it
// (`self`); the defaults mutate the children and return `self` when every child came
// back unchanged (pointer-equal), else a new node with the same loc. Definitions (For /
// LetStmt vars) are kept; every buffer reference (Load, Store, Allocate, regions) goes
// through `mutate_buffer` (default: unchanged), so a pass can swap buffers.
class IRMutator {
public:
    virtual ~IRMutator() = default;

    virtual Expr mutate(const Expr& e);
    virtual Stmt mutate(const Stmt& s);
    virtual Region mutate_region(const Region& r);
    virtual Buffer mutate_buffer(const Buffer& b) { return b; }
    // Mutates each element; returns true if any changed.
    bool mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out);

protected:
    virtual Expr mutate_int_imm(const IntImmNode* /*op*/, const Expr& self) { return self; }
    virtual Expr mutate_float_imm(const FloatImmNode* /*op*/, const Expr& self) { return self; }
    virtual Expr mutate_string_imm(const StringImmNode* /*op*/, const Expr& self) { return self; }
    virtual Expr mutate_var(const VarNode* /*op*/, const Expr& self) { return self; }
    virtual Expr mutate_binary(const BinaryNode* /*op*/, const Expr& self);
    virtual Expr mutate_unary(const UnaryNode* /*op*/, const Expr& self);
    virtual Expr mutate_select(const SelectNode* /*op*/, const Expr& self);
    virtual Expr mutate_cast(const CastNode* /*op*/, const Expr& self);
    virtual Expr mutate_call(const CallNode* /*op*/, const Expr& self);
    virtual Expr mutate_load(const LoadNode* /*op*/, const Expr& self);

    virtual Stmt mutate_seq(const SeqNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_for(const ForNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_if(const IfNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_let(const LetStmtNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_allocate(const AllocateNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_store(const StoreNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_evaluate(const EvaluateNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_copy(const CopyNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_gemm(const GemmNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_fill(const FillNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_reduce(const ReduceNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_cumsum(const CumsumNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_atomic_add(const AtomicAddNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_print(const PrintNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_assert(const AssertNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_barrier(const BarrierNode* /*op*/, const Stmt& self) { return self; }
    virtual Stmt mutate_atomic_rmw(const AtomicRmwNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_full_write(const FullWriteNode* /*op*/, const Stmt& self);
    virtual Stmt mutate_machine_op(const MachineOpNode* /*op*/, const Stmt& self);
};

// Pointer-identity maps, for substitution and analyses.
using VarMap = std::unordered_map<const VarNode*, Expr>;

// Replaces every use of a mapped Var by its expression.
Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);

// Calls `f` on every expression node of the tree, parents before children.
void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& f);

// True if `e` uses the variable `v`.
bool uses_var(const Expr& e, const VarNode* v);

}  // namespace tilec::ir
