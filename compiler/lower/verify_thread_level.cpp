// The thread-level verifier (entry: verify_thread_level): what must be gone after
// thread-level lowering, on top of ir::verify. A backend that meets a tile op or a
// fragment would otherwise have to guess what the block meant.
#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

namespace {

class ThreadLevelVerifier : public IRVisitor {
public:
    std::vector<std::string> errors;

private:
    void error(SourceLoc loc, const std::string& msg) {
        std::string s;
        if (loc.valid()) s = std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
        errors.push_back(s + msg);
    }
    void tile_op(SourceLoc loc, const char* name) { error(loc, std::string("tile op '") + name + "' at thread level"); }

    void visit_buffer_use(const Buffer& b) override {
        if (b->scope == Scope::Fragment || b->scope == Scope::Local)
            error(b->loc, std::string(scope_name(b->scope)) + " buffer '" + b->name + "' at thread level");
    }
    void visit_var(const VarNode* v) override {
        if (v->var_kind == VarKind::ThreadIdx && (v->dim < 0 || v->dim > 2))
            error(v->loc, "thread index '" + v->name + "' of dimension " + std::to_string(v->dim));
    }
    void visit_for(const ForNode* op) override {
        // A parallel loop at thread level is a parallel loop's registers (thread_lower.cpp).
        if (op->for_kind == ForKind::Pipelined)
            error(op->loc, std::string(for_kind_name(op->for_kind)) + " loop at thread level");
        if (op->for_kind == ForKind::Parallel && (!as_const_int(op->min) || !as_const_int(op->extent)))
            error(op->loc, "parallel loop of run-time bounds at thread level");
        IRVisitor::visit_for(op);
    }
    void visit_allocate(const AllocateNode* op) override {
        const Buffer& b = op->buffer;
        if (b->scope == Scope::Register && b->rank() > 1)
            error(op->loc, "register buffer '" + b->name + "' of rank " + std::to_string(b->rank()));
        if (b->scope == Scope::Shared && b->shared_offset < 0)
            error(op->loc, "shared buffer '" + b->name + "' without an arena offset");
        visit_buffer_use(b);
        IRVisitor::visit_allocate(op);
    }
    void visit_full_write(const FullWriteNode* op) override {
        error(op->loc, "full_write of '" + op->buffer->name + "' after the shared-memory plan");
        IRVisitor::visit_full_write(op);
    }
    void visit_copy(const CopyNode* op) override { tile_op(op->loc, "copy"); }
    void visit_gemm(const GemmNode* op) override { tile_op(op->loc, "gemm"); }
    void visit_fill(const FillNode* op) override { tile_op(op->loc, "fill"); }
    void visit_reduce(const ReduceNode* op) override { tile_op(op->loc, "reduce"); }
    void visit_cumsum(const CumsumNode* op) override { tile_op(op->loc, "cumsum"); }
    void visit_atomic_add(const AtomicAddNode* op) override { tile_op(op->loc, "atomic_add"); }
};

}  // namespace

std::vector<std::string> verify_thread_level(const PrimFunc& f) {
    ThreadLevelVerifier v;
    if (!is_thread_level(f)) v.errors.push_back("function '" + f.name + "' is not thread level");
    if (!f.shared_bytes) v.errors.push_back("function '" + f.name + "' has no shared-memory plan");
    if (f.layouts) v.errors.push_back("function '" + f.name + "' still carries layout inference's layouts");
    v.visit(f.body);
    return std::move(v.errors);
}

}  // namespace tilec::lower
