// Row fusion of the CPU backend: consecutive statements that work row by row on the same
// rows of block-local tiles run as one loop over the rows, and inside a row, those that
// also work column by column share one vectorised loop over the columns.
//
// A row kernel (softmax, norms) is a sequence of tile statements over one [R, C] tile:
// copy a block of rows in, scale it, reduce each row, update per-row statistics, scale
// again, copy out. Lowered one statement at a time, each is a pass over the whole tile;
// fused, each row of the tile is read from global memory, transformed and reduced in
// one pass while it is in registers and L1, and the per-row scalar statements run
// between the passes of that row. The rules (docs/architecture.md, "Row fusion"):
//
// - A *row statement* has a row count R >= 2: a `parallel` loop over [0, R) whose body
//   touches no global tensor and writes block-local buffers only at [i, ...]; a copy,
//   reduce (not along dim 0) or fill whose block-local regions start at row 0 with R
//   rows, and whose global region (copies) spans R rows. Row i of it is the statement
//   restricted to row i.
// - A *run* of consecutive row statements with the same R is fused when every buffer
//   written in the run is accessed only at row i by all of them, and, if a global tensor
//   is written, every global region of the run starts at the same row: then running
//   statement after statement for each row gives the same result as running each
//   statement over all rows. A copy or fill that touches none of the run's buffers (and
//   no global written by it) is moved before the run instead of ending it.
// - Inside a row, a *segment* of consecutive column statements over the same C columns
//   (an [i, c] parallel loop nest, a copy from a global tensor into a whole [R, C] tile,
//   a reduce along dim 1 of a whole tile, a fill of it) becomes one loop over c when each
//   buffer written in the segment is read or written only at [i, c] and no statement
//   reads a reduction's result computed in the same segment. Reductions keep their
//   accumulator in a register and store it after the loop. A copy from a global tensor
//   takes the fused loop only where the row is inside the tensor and all C columns are;
//   rows at the edges run the statements one after another (with masking and padding).
//   A row statement that is not a column statement and touches none of the segment's
//   buffers (nor a global tensor) runs before the segment instead of ending it.
// - A tile the segment writes that nothing reads after it (no later statement of the
//   run, not live after the run: cpu_tile_liveness.cpp) stays in a register in the
//   fused loop instead of being stored.
#include <algorithm>
#include <map>
#include <set>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>

#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"

namespace tilec::codegen {

using ir::DataType;

namespace {

std::optional<int64_t> const_of(const ir::Expr& e) {
    return ir::as_const_int(e);
}

bool is_zero(const ir::Expr& e) {
    auto c = const_of(e);
    return c && *c == 0;
}

bool has_load(const ir::Expr& e) {
    bool found = false;
    ir::for_each_expr(e, [&](const ir::Expr& x) {
        if (x->kind == ir::ExprKind::Load) found = true;
    });
    return found;
}

// Uses of buffers inside a parallel loop over rows (var `row`) and, for a column loop
// nest, columns (`col`); refuses what a row of the loop cannot be run alone for.
class LoopUses : public ir::IRVisitor {
public:
    LoopUses(const ir::VarNode* row, const ir::VarNode* col) : row_(row), col_(col) {}
    std::vector<RowUse> uses;
    bool ok = true;
    bool nested_loop = false;

protected:
    void visit_load(const ir::LoadNode* op) override {
        note(op->buffer, op->indices, false);
        IRVisitor::visit_load(op);
    }
    void visit_store(const ir::StoreNode* op) override {
        note(op->buffer, op->indices, true);
        IRVisitor::visit_store(op);
    }
    void visit_for(const ir::ForNode* op) override {
        nested_loop = true;
        IRVisitor::visit_for(op);
    }
    void visit_allocate(const ir::AllocateNode*) override { ok = false; }
    void visit_copy(const ir::CopyNode*) override { ok = false; }
    void visit_gemm(const ir::GemmNode*) override { ok = false; }
    void visit_fill(const ir::FillNode*) override { ok = false; }
    void visit_reduce(const ir::ReduceNode*) override { ok = false; }
    void visit_cumsum(const ir::CumsumNode*) override { ok = false; }
    void visit_atomic_add(const ir::AtomicAddNode*) override { ok = false; }
    void visit_print(const ir::PrintNode*) override { ok = false; }
    void visit_assert(const ir::AssertNode*) override { ok = false; }
    void visit_barrier(const ir::BarrierNode*) override { ok = false; }
    void visit_atomic_rmw(const ir::AtomicRmwNode*) override { ok = false; }
    void visit_full_write(const ir::FullWriteNode*) override { ok = false; }
    void visit_machine_op(const ir::MachineOpNode*) override { ok = false; }

private:
    void note(const ir::Buffer& b, const std::vector<ir::Expr>& idx, bool write) {
        if (b->scope == ir::Scope::Global) {
            ok = false;
            return;
        }
        bool r = !idx.empty() && idx[0].get() == row_;
        bool c = r && col_ && idx.size() == 2 && idx[1].get() == col_;
        if (write && !r) ok = false;
        uses.push_back({b.get(), write, r, c});
    }
    const ir::VarNode* row_;
    const ir::VarNode* col_;
};

// A block-local region's row count (it starts at row 0), or 0.
int64_t tile_rows(const ir::Region& r) {
    if (r.buffer->scope == ir::Scope::Global || r.start.empty() || !is_zero(r.start[0])) return 0;
    auto e = const_of(r.extent[0]);
    return e ? *e : 0;
}

// The column count of a whole-width 2-d block-local region [0, R) x [0, C), or 0.
int64_t tile_cols(const ir::Region& r) {
    if (r.buffer->scope == ir::Scope::Global || r.start.size() != 2 || !is_zero(r.start[1])) return 0;
    auto e = const_of(r.extent[1]);
    auto w = const_of(r.buffer->shape[1]);
    return e && w && *e == *w ? *e : 0;
}

std::optional<RowStmt> loop_form(const ir::Stmt& s) {
    auto* f = s->as<ir::ForNode>();
    if (f->for_kind != ir::ForKind::Parallel || !is_zero(f->min)) return std::nullopt;
    auto rows = const_of(f->extent);
    if (!rows || *rows < 2) return std::nullopt;
    RowStmt rs{s, RowKind::Loop, *rows};
    // A column nest: the body is one parallel loop over [0, C) with no loop inside.
    const ir::ForNode* inner = f->body->as<ir::ForNode>();
    if (auto* seq = f->body->as<ir::SeqNode>(); seq && seq->stmts.size() == 1) inner = seq->stmts[0]->as<ir::ForNode>();
    if (inner && (inner->for_kind != ir::ForKind::Parallel || !is_zero(inner->min) || !const_of(inner->extent)))
        inner = nullptr;
    if (inner) {
        LoopUses cu(f->var.get(), inner->var.get());
        cu.visit(inner->body);
        bool all_writes_col = true;
        for (auto& u : cu.uses)
            if (u.write && !u.col) all_writes_col = false;
        if (cu.ok && !cu.nested_loop && all_writes_col) {
            rs.cols = *const_of(inner->extent);
            rs.inner = inner;
            rs.uses = std::move(cu.uses);
            return rs;
        }
    }
    LoopUses ru(f->var.get(), nullptr);
    ru.visit(f->body);
    if (!ru.ok) return std::nullopt;
    rs.uses = std::move(ru.uses);
    return rs;
}

std::optional<RowStmt> copy_form(const ir::Stmt& s) {
    auto* c = s->as<ir::CopyNode>();
    RowStmt rs{s, RowKind::Copy};
    int64_t rows = 0;
    for (const ir::Region* r : {&c->src, &c->dst}) {
        bool write = r == &c->dst;
        int64_t n;
        if (r->buffer->scope == ir::Scope::Global) {
            if (r->buffer->dtype.bits < 8 || r->start.empty() || has_load(r->start[0])) return std::nullopt;
            auto e = const_of(r->extent[0]);
            n = e ? *e : 0;
            rs.globals.push_back({r->start[0], write});
        } else {
            n = tile_rows(*r);
            rs.uses.push_back({r->buffer.get(), write, true, tile_cols(*r) > 0});
        }
        if (n < 2 || (rows && n != rows)) return std::nullopt;
        rows = n;
    }
    rs.rows = rows;
    // Column form: a global [R, C] block into a whole [R, C] tile, or a whole tile out
    // into a global block (not bool: its storage is not a whole number of bits per lane).
    if (c->src.buffer->scope == ir::Scope::Global && c->src.start.size() == 2 &&
        c->dst.buffer->scope != ir::Scope::Global) {
        int64_t cols = tile_cols(c->dst);
        auto e = const_of(c->src.extent[1]);
        if (cols && e && *e == cols && !has_load(c->src.start[1])) rs.cols = cols;
    } else if (c->dst.buffer->scope == ir::Scope::Global && c->dst.start.size() == 2 &&
               c->src.buffer->scope != ir::Scope::Global && !c->dst.buffer->dtype.is_bool()) {
        int64_t cols = tile_cols(c->src);
        auto e = const_of(c->dst.extent[1]);
        if (cols && e && *e == cols && !has_load(c->dst.start[1])) rs.cols = cols;
    }
    return rs;
}

std::optional<RowStmt> reduce_form(const ir::Stmt& s) {
    auto* r = s->as<ir::ReduceNode>();
    if (r->dim == 0) return std::nullopt;
    int64_t rows = tile_rows(r->src);
    if (rows < 2 || tile_rows(r->dst) != rows) return std::nullopt;
    RowStmt rs{s, RowKind::Reduce, rows};
    int64_t cols = r->dim == 1 ? tile_cols(r->src) : 0;
    if (r->dst.start.size() == 2 && !is_zero(r->dst.start[1])) cols = 0;
    rs.uses.push_back({r->src.buffer.get(), false, true, cols > 0});
    rs.uses.push_back({r->dst.buffer.get(), true, true, false});
    if (!r->clear) rs.uses.push_back({r->dst.buffer.get(), false, true, false});
    rs.cols = cols;
    return rs;
}

std::optional<RowStmt> fill_form(const ir::Stmt& s) {
    auto* f = s->as<ir::FillNode>();
    int64_t rows = tile_rows(f->dst);
    if (rows < 2 || has_load(f->value)) return std::nullopt;
    RowStmt rs{s, RowKind::Fill, rows};
    rs.cols = tile_cols(f->dst);
    rs.uses.push_back({f->dst.buffer.get(), true, true, rs.cols > 0});
    return rs;
}

std::optional<RowStmt> row_form(const ir::Stmt& s) {
    switch (s->kind) {
    case ir::StmtKind::For: return loop_form(s);
    case ir::StmtKind::Copy: return copy_form(s);
    case ir::StmtKind::Reduce: return reduce_form(s);
    case ir::StmtKind::Fill: return fill_form(s);
    default: return std::nullopt;
    }
}

// Whether running the statements row by row gives what running them one after another does.
bool run_legal(const std::vector<RowStmt>& run) {
    std::set<const ir::BufferNode*> written;
    for (auto& rs : run)
        for (auto& u : rs.uses)
            if (u.write) written.insert(u.buffer);
    for (auto& rs : run)
        for (auto& u : rs.uses)
            if (written.count(u.buffer) && !u.row) return false;
    const ir::Expr* first = nullptr;
    bool global_written = false;
    for (auto& rs : run)
        for (auto& [start, write] : rs.globals) {
            global_written = global_written || write;
            if (!first) first = &start;
        }
    if (!global_written) return true;
    for (auto& rs : run)
        for (auto& g : rs.globals)
            if (!ir::structural_equal(g.first, *first)) return false;
    return true;
}

// Whether a copy or fill `s` may run before the whole run: it touches no buffer the run
// writes, writes none the run uses, and writes no global tensor.
bool hoistable(const ir::Stmt& s, const std::vector<RowStmt>& run) {
    std::vector<std::pair<const ir::BufferNode*, bool>> uses;  // (buffer, write)
    std::vector<const ir::Region*> regions;
    if (auto* c = s->as<ir::CopyNode>()) {
        if (c->dst.buffer->scope == ir::Scope::Global || has_load(c->pad)) return false;
        uses = {{c->src.buffer.get(), false}, {c->dst.buffer.get(), true}};
        regions = {&c->src, &c->dst};
    } else if (auto* f = s->as<ir::FillNode>()) {
        if (f->dst.buffer->scope == ir::Scope::Global || has_load(f->value)) return false;
        uses = {{f->dst.buffer.get(), true}};
        regions = {&f->dst};
    } else {
        return false;
    }
    for (auto* r : regions)
        for (auto& e : r->start)
            if (has_load(e)) return false;
    for (auto& rs : run) {
        for (auto& [start, write] : rs.globals)
            if (write) return false;
        for (auto& u : rs.uses)
            for (auto& [b, w] : uses)
                if (u.buffer == b && (u.write || w)) return false;
    }
    return true;
}

// Whether `k` can join the column segment `seg` (same columns already checked).
bool column_legal(const std::vector<const RowStmt*>& seg, const RowStmt& k) {
    std::set<const ir::BufferNode*> written, reduced, read_other;
    for (auto* rs : seg)
        for (auto& u : rs->uses) {
            if (u.write && rs->kind == RowKind::Reduce) reduced.insert(u.buffer);
            else if (u.write) written.insert(u.buffer);
            if (!u.col) read_other.insert(u.buffer);
        }
    for (auto& u : k.uses) {
        if (reduced.count(u.buffer)) return false;
        if (written.count(u.buffer) && !u.col) return false;
        if (u.write && read_other.count(u.buffer)) return false;
    }
    return true;
}

// Whether row statement `rs` touches no buffer that the segment writes and writes none
// it uses, and no global tensor: then it may run before the segment.
bool independent(const RowStmt& rs, const std::vector<const RowStmt*>& seg) {
    if (!rs.globals.empty()) return false;
    for (auto* other : seg)
        for (auto& v : other->uses)
            for (auto& u : rs.uses)
                if (u.buffer == v.buffer && (u.write || v.write)) return false;
    return true;
}

ir::Region restrict_to_row(const ir::Region& r, const ir::Var& row) {
    ir::Region out = r;
    ir::Expr i = row;
    if (r.start[0]->type != row->type) i = ir::make_cast(r.start[0]->type, i);
    out.start[0] = is_zero(r.start[0]) ? i : ir::add(r.start[0], i);
    out.extent[0] = ir::make_int(1, r.extent[0]->type);
    return out;
}

// The tiles a column segment may keep in registers: each is written in the segment,
// only at [row, column], not used by the run's statements from `rest` on, and not live
// after the run. Then no one reads what the loop would store into it. Unknown
// liveness: none.
TileSet dead_after_segment(const std::vector<const RowStmt*>& seg, const std::vector<RowStmt>& run,
                           size_t rest, const TileSet* live_after) {
    TileSet dead;
    if (!live_after) return dead;
    for (auto* rs : seg)
        for (auto& u : rs->uses)
            if (u.write && u.col && !live_after->count(u.buffer)) dead.insert(u.buffer);
    for (auto* rs : seg)
        for (auto& u : rs->uses)
            if (u.write && !u.col) dead.erase(u.buffer);
    for (size_t k = rest; k < run.size(); ++k)
        for (auto& u : run[k].uses) dead.erase(u.buffer);
    return dead;
}

// The compares `c < e` (or `e > c`) of a column loop's variable c with a variable e bound
// before the loop (not in its body), which hold for every column when e >= the loop's
// column count: layernorm's `c < n` mask of a column block's valid columns.
class ColumnBounds : public ir::IRVisitor {
public:
    ColumnBounds(const ir::VarNode* col) : col_(col) {}
    std::vector<std::pair<const ir::BinaryNode*, const ir::VarNode*>> found;
    std::set<const ir::VarNode*> bound_inside;

protected:
    void visit_binary(const ir::BinaryNode* op) override {
        auto* a = op->a->as<ir::VarNode>();
        auto* b = op->b->as<ir::VarNode>();
        // Signed and of one type: then the compare is the one the range check makes.
        bool same_int = op->a->type == op->b->type && op->a->type.is_int();
        if (op->op == ir::BinaryOp::LT && same_int && a == col_ && b && b != col_)
            found.push_back({op, b});
        else if (op->op == ir::BinaryOp::GT && same_int && b == col_ && a && a != col_)
            found.push_back({op, a});
        ir::IRVisitor::visit_binary(op);
    }
    void visit_let(const ir::LetStmtNode* op) override {
        bound_inside.insert(op->var.get());
        ir::IRVisitor::visit_let(op);
    }
    void visit_for(const ir::ForNode* op) override {
        bound_inside.insert(op->var.get());
        ir::IRVisitor::visit_for(op);
    }

private:
    const ir::VarNode* col_;
};

// The last copy out of each global tensor in program order (prefetching_copies). Why
// the last: a row kernel reads its rows twice (statistics, then the output pass), and
// the first pass is a light loop (load, scale, max or sum) that, prefetching too, would
// issue a prefetch every few instructions, more than the memory system takes in flight,
// for rows that the output pass reads again anyway; the output pass has the arithmetic
// (softmax's exp2) and the stores to hide them behind. Measured (docs/architecture.md,
// "Row kernels, sixth round"): softmax f32 4096^2 on 1 thread +12%.
class LastCopyFrom : public ir::IRVisitor {
public:
    std::map<const ir::BufferNode*, const ir::CopyNode*> last;

protected:
    void visit_copy(const ir::CopyNode* op) override {
        if (op->src.buffer->scope == ir::Scope::Global) last[op->src.buffer.get()] = op;
        ir::IRVisitor::visit_copy(op);
    }
};

}  // namespace

std::unordered_set<const ir::CopyNode*> prefetching_copies(const ir::Stmt& body) {
    LastCopyFrom v;
    v.visit(body);
    std::unordered_set<const ir::CopyNode*> out;
    for (auto& [tensor, copy] : v.last) out.insert(copy);
    return out;
}

void FunctionLowering::lower_seq(const std::vector<ir::Stmt>& stmts) {
    std::vector<ir::Stmt> flat;
    std::function<void(const std::vector<ir::Stmt>&)> flatten = [&](const std::vector<ir::Stmt>& v) {
        for (auto& s : v) {
            if (auto* q = s->as<ir::SeqNode>())
                flatten(q->stmts);
            else
                flat.push_back(s);
        }
    };
    flatten(stmts);
    std::vector<RowStmt> run;
    auto flush = [&] {
        const TileSet* live = nullptr;
        if (!run.empty())
            if (auto it = live_after_.find(run.back().stmt.get()); it != live_after_.end())
                live = &it->second;
        emit_row_run(run, live);
        run.clear();
    };
    std::vector<const ir::BufferNode*> aliased;  // tiles whose copy this list forwarded
    for (auto& s : flat) {
        if (auto* c = s->as<ir::CopyNode>(); c && forwardable_.count(c)) {
            flush();
            if (auto* tile = lower_forwarded_copy(*c, forwardable_.at(c))) aliased.push_back(tile);
            continue;
        }
        auto rs = row_form(s);
        if (rs && !run.empty() && rs->rows == run[0].rows) {
            run.push_back(*rs);
            if (run_legal(run)) continue;
            run.pop_back();
        }
        if (!run.empty() && hoistable(s, run)) {
            stmt(s);
            continue;
        }
        flush();
        if (rs)
            run.push_back(*rs);
        else
            stmt(s);
    }
    flush();
    // The gemms that read through them are this list's (forwardable_copies).
    for (auto* tile : aliased) tile_aliases_.erase(tile);
}

void FunctionLowering::emit_row_run(const std::vector<RowStmt>& run, const TileSet* live_after) {
    if (run.empty()) return;
    if (run.size() == 1) {
        stmt(run[0].stmt);
        return;
    }
    const int64_t rows = run[0].rows;
    ir::Var row = ir::make_loop_var("row", run[0].stmt->loc);
    ranges_[row.get()] = {0, rows - 1};
    emit_loop(b_.getInt64(0), b_.getInt64(rows), LoopHint::None, [&](llvm::Value* i) {
        bind(row, i);
        std::vector<const RowStmt*> seg;
        // `rest`: the run's statements after the segment.
        auto flush = [&](size_t rest) {
            if (seg.size() == 1)
                emit_row_stmt(*seg[0], row);
            else if (seg.size() > 1)
                emit_fused_columns(seg, row, dead_after_segment(seg, run, rest, live_after));
            seg.clear();
        };
        for (size_t k = 0; k < run.size(); ++k) {
            const RowStmt& rs = run[k];
            if (rs.cols > 0 && !seg.empty() && rs.cols == seg[0]->cols && column_legal(seg, rs)) {
                seg.push_back(&rs);
                continue;
            }
            if (rs.cols == 0 && !seg.empty() && independent(rs, seg)) {
                emit_row_stmt(rs, row);  // e.g. softmax's copy(m, m_old) before the max
                continue;
            }
            flush(k);
            if (rs.cols > 0)
                seg.push_back(&rs);
            else
                emit_row_stmt(rs, row);
        }
        flush(run.size());
    });
}

void FunctionLowering::emit_row_stmt(const RowStmt& rs, const ir::Var& row) {
    const ir::Stmt& s = rs.stmt;
    switch (rs.kind) {
    case RowKind::Loop: {
        auto* f = s->as<ir::ForNode>();
        bind(f->var, convert(vars_.at(row.get()), DataType::i64(), f->var->type));
        ranges_[f->var.get()] = {0, rs.rows - 1};
        stmt(f->body);
        return;
    }
    case RowKind::Copy: {
        auto* c = s->as<ir::CopyNode>();
        lower_copy(ir::CopyNode(restrict_to_row(c->src, row), restrict_to_row(c->dst, row), c->pad, c->loc));
        return;
    }
    case RowKind::Reduce: {
        auto* r = s->as<ir::ReduceNode>();
        lower_reduce(ir::ReduceNode(r->reduce_kind, restrict_to_row(r->src, row), restrict_to_row(r->dst, row),
                                    r->dim, r->clear, r->loc));
        return;
    }
    case RowKind::Fill: {
        auto* f = s->as<ir::FillNode>();
        lower_fill(ir::FillNode(restrict_to_row(f->dst, row), f->value, f->loc));
        return;
    }
    }
}

void FunctionLowering::emit_fused_columns(const std::vector<const RowStmt*>& seg, const ir::Var& row,
                                          const TileSet& dead) {
    const int64_t cols = seg[0]->cols;
    llvm::Value* i = vars_.at(row.get());
    auto i64 = [&](const ir::Expr& e) { return convert(expr(e), e->type, DataType::i64()); };
    // Per statement, what the loop needs: a copy's source start, a fill's value, a
    // reduction's accumulator.
    struct Prep {
        llvm::Value* src_row = nullptr;
        llvm::Value* src_col = nullptr;
        llvm::Value* value = nullptr;
        llvm::Value* slot = nullptr;
        llvm::Value* next_row = nullptr;  // a copy: its source row R rows further down
        llvm::Value* out_row = nullptr;   // a copy out: where its row starts (streaming)
        std::vector<llvm::Value*> dst_index;
    };
    std::vector<Prep> prep(seg.size());
    llvm::Value* fast = b_.getTrue();
    // With copies out to global tensors: whether they may store with non-temporal vector
    // stores in the loop (every destination a tensor of 8 MiB or more with consecutive
    // columns, the row starting on a 64-byte line), and whether one would stream unfused.
    bool copies_out = false;
    llvm::Value* streams = b_.getInt1(ms_.streaming_stores);
    llvm::Value* any_big = b_.getFalse();
    for (size_t k = 0; k < seg.size(); ++k) {
        if (seg[k]->kind != RowKind::Copy) continue;
        auto* c = seg[k]->stmt->as<ir::CopyNode>();
        if (c->dst.buffer->scope == ir::Scope::Global) {
            copies_out = true;
            const BufferInfo& info = buffer(c->dst.buffer);
            prep[k].dst_index = {b_.CreateAdd(i64(c->dst.start[0]), i), i64(c->dst.start[1])};
            llvm::Value* end = b_.CreateAdd(prep[k].dst_index[1], b_.getInt64(cols));
            fast = b_.CreateAnd(fast, b_.CreateICmpULT(prep[k].dst_index[0], info.shape[0]));
            fast = b_.CreateAnd(fast, b_.CreateICmpSGE(prep[k].dst_index[1], b_.getInt64(0)));
            fast = b_.CreateAnd(fast, b_.CreateICmpSLE(end, info.shape[1]));
            llvm::Type* et = storage_type(ms_.ctx, c->dst.buffer->dtype);
            llvm::Value* bytes = b_.getInt64(et->getPrimitiveSizeInBits() / 8);
            for (llvm::Value* d : info.shape) bytes = b_.CreateMul(bytes, d);
            llvm::Value* big = b_.CreateICmpUGE(bytes, b_.getInt64(kStreamingStoreBytes));
            auto* inner = llvm::dyn_cast<llvm::ConstantInt>(info.strides[1]);
            if (ms_.streaming_stores && !info.packed && inner && inner->isOne()) {
                llvm::Value* off = b_.CreateAdd(b_.CreateMul(prep[k].dst_index[0], info.strides[0]),
                                                prep[k].dst_index[1]);
                prep[k].out_row = b_.CreateGEP(et, info.base, off);
                llvm::Value* misalign = b_.CreateAnd(b_.CreatePtrToInt(prep[k].out_row, b_.getInt64Ty()), b_.getInt64(63));
                streams = b_.CreateAnd(streams, b_.CreateAnd(big, b_.CreateICmpEQ(misalign, b_.getInt64(0))));
                any_big = b_.CreateOr(any_big, big);
            } else {
                streams = b_.getFalse();
                // Unfused, a large tensor whose columns turn out consecutive streams.
                if (ms_.streaming_stores) any_big = b_.CreateOr(any_big, big);
            }
            continue;
        }
        const BufferInfo& info = buffer(c->src.buffer);
        prep[k].src_row = b_.CreateAdd(i64(c->src.start[0]), i);
        prep[k].src_col = i64(c->src.start[1]);
        llvm::Value* end = b_.CreateAdd(prep[k].src_col, b_.getInt64(cols));
        fast = b_.CreateAnd(fast, b_.CreateICmpULT(prep[k].src_row, info.shape[0]));
        fast = b_.CreateAnd(fast, b_.CreateICmpSGE(prep[k].src_col, b_.getInt64(0)));
        fast = b_.CreateAnd(fast, b_.CreateICmpSLE(end, info.shape[1]));
        // Where this row's columns start R rows further down (a pointer past the tensor
        // is harmless: a prefetch never faults); for consecutive columns only, and only
        // in the block's last pass over the tensor (prefetching_copies).
        auto* inner = llvm::dyn_cast<llvm::ConstantInt>(info.strides[1]);
        if (!info.packed && inner && inner->isOne() && prefetching_.count(c)) {
            llvm::Value* row_ahead = b_.CreateAdd(prep[k].src_row, b_.getInt64(seg[k]->rows));
            llvm::Value* off = b_.CreateAdd(b_.CreateMul(row_ahead, info.strides[0]), prep[k].src_col);
            prep[k].next_row = b_.CreateGEP(storage_type(ms_.ctx, c->src.buffer->dtype), info.base, off);
        }
    }
    // How the loop stores a copy out: plainly, with non-temporal vector stores (where
    // `streams` holds), or not at all: each runs unfused after the loop, streaming the
    // row's aligned middle (a row of a large tensor that does not start on a line:
    // plain stores would first read each line from memory, and the scalar iterations
    // of a loop peeled up to the first line cost more than the copy).
    enum class Out { Plain, Streaming, After };
    auto fused_loop = [&](Out out) {
        for (size_t k = 0; k < seg.size(); ++k) {
            const RowStmt& rs = *seg[k];
            if (rs.kind == RowKind::Fill) {
                auto* f = rs.stmt->as<ir::FillNode>();
                prep[k].value = convert_for_store(expr(f->value), f->value->type, f->dst.buffer->dtype);
            } else if (rs.kind == RowKind::Reduce) {
                auto* r = rs.stmt->as<ir::ReduceNode>();
                prep[k].dst_index = {i};
                if (r->dst.start.size() == 2) prep[k].dst_index.push_back(b_.getInt64(0));
                prep[k].slot = entry_alloca(reg_type(ms_.ctx, r->dst.buffer->dtype), 1, "fused.red");
                b_.CreateStore(r->clear ? reduce_identity(*r) : load_element(r->dst.buffer, prep[k].dst_index),
                               prep[k].slot);
            }
        }
        // The dead tiles' elements live in slots that SROA turns into registers, except
        // where the copies out run after the loop and read the tile. Each iteration
        // starts its slot from the tile (an earlier segment may have written it; where
        // the segment writes it first, the load is dead and LLVM drops it).
        // (In the segment's order, not the set's: the code must not depend on addresses.)
        std::vector<std::pair<const ir::BufferNode*, llvm::Value*>> slots;
        if (out != Out::After)
            for (auto* rs : seg)
                for (auto& u : rs->uses) {
                    const ir::BufferNode* t = u.buffer;
                    bool listed =
                        std::any_of(slots.begin(), slots.end(), [&](auto& e) { return e.first == t; });
                    if (dead.count(t) && !listed)
                        slots.push_back(
                            {t, entry_alloca(storage_type(ms_.ctx, t->dtype), 1, "fused." + t->name)});
                }
        llvm::MDNode* group = llvm::MDNode::getDistinct(ms_.ctx, {});
        access_groups_.push_back(group);
        emit_loop(
            b_.getInt64(0), b_.getInt64(cols), LoopHint::Vectorize,
            [&](llvm::Value* c) {
                for (auto [t, slot] : slots) {
                    const BufferInfo& info = buffers_.at(t);
                    auto* v = b_.CreateLoad(storage_type(ms_.ctx, t->dtype),
                                            element_ptr(*t, info, element_offset(info, {i, c})));
                    mark_access(v, *t);
                    b_.CreateStore(v, slot);
                    forwarded_[t] = slot;
                }
                for (size_t k = 0; k < seg.size(); ++k) {
                    const RowStmt& rs = *seg[k];
                    switch (rs.kind) {
                    case RowKind::Loop: {
                        auto* f = rs.stmt->as<ir::ForNode>();
                        bind(f->var, convert(i, DataType::i64(), f->var->type));
                        ranges_[f->var.get()] = {0, rs.rows - 1};
                        bind(rs.inner->var, convert(c, DataType::i64(), rs.inner->var->type));
                        ranges_[rs.inner->var.get()] = {0, cols - 1};
                        stmt(rs.inner->body);
                        break;
                    }
                    case RowKind::Copy: {
                        auto* cp = rs.stmt->as<ir::CopyNode>();
                        if (cp->dst.buffer->scope == ir::Scope::Global) {
                            // Stored right where the row is computed: the writes of this
                            // block overlap its arithmetic and the next block's reads.
                            if (out == Out::After) break;
                            DataType dt = cp->dst.buffer->dtype;
                            llvm::Value* v = convert_for_store(load_element(cp->src.buffer, {i, c}),
                                                               cp->src.buffer->dtype, dt);
                            if (out == Out::Streaming) {
                                emit_streaming_store(prep[k].out_row, c, to_storage(v, dt));
                            } else {
                                store_element(cp->dst.buffer, {prep[k].dst_index[0], b_.CreateAdd(prep[k].dst_index[1], c)},
                                              v);
                            }
                            break;
                        }
                        llvm::Value* col = b_.CreateAdd(prep[k].src_col, c);
                        llvm::Value* v = load_element(cp->src.buffer, {prep[k].src_row, col});
                        if (prep[k].next_row) {
                            // The same columns R rows further down: what the next block of
                            // the grid reads here (a thread runs consecutive blocks), on its
                            // way from memory while this block computes and writes.
                            llvm::Type* et = storage_type(ms_.ctx, cp->src.buffer->dtype);
                            emit_prefetch(prep[k].next_row, c, unsigned(et->getPrimitiveSizeInBits() / 8));
                        }
                        store_element(cp->dst.buffer, {i, c},
                                      convert_for_store(v, cp->src.buffer->dtype, cp->dst.buffer->dtype));
                        break;
                    }
                    case RowKind::Fill: {
                        auto* f = rs.stmt->as<ir::FillNode>();
                        store_element(f->dst.buffer, {i, c}, prep[k].value);
                        break;
                    }
                    case RowKind::Reduce: {
                        auto* r = rs.stmt->as<ir::ReduceNode>();
                        llvm::Type* acc_ty = reg_type(ms_.ctx, r->dst.buffer->dtype);
                        llvm::Value* x = convert(load_element(r->src.buffer, {i, c}), r->src.buffer->dtype,
                                                 r->dst.buffer->dtype);
                        b_.CreateStore(reduce_combine(*r, b_.CreateLoad(acc_ty, prep[k].slot), x), prep[k].slot);
                        break;
                    }
                    }
                }
            },
            group);
        access_groups_.pop_back();
        for (auto [t, slot] : slots) forwarded_.erase(t);
        for (size_t k = 0; k < seg.size(); ++k)
            if (seg[k]->kind == RowKind::Reduce) {
                auto* r = seg[k]->stmt->as<ir::ReduceNode>();
                llvm::Type* acc_ty = reg_type(ms_.ctx, r->dst.buffer->dtype);
                store_element(r->dst.buffer, prep[k].dst_index, b_.CreateLoad(acc_ty, prep[k].slot));
            }
    };
    // Where every column loop's `c < e` bound covers the loop (e >= cols: a whole column
    // block, as all but a row's last are), a version of the loop without the compares:
    // they are true there (lower_binary), and the select they feed is gone.
    std::vector<const ir::BinaryNode*> bounds;
    llvm::Value* bounds_hold = b_.getTrue();
    for (auto* rs : seg) {
        if (rs->kind != RowKind::Loop) continue;
        ColumnBounds cb(rs->inner->var.get());
        cb.visit(rs->inner->body);
        // The statement's own row variable is bound only inside the fused loop.
        const ir::VarNode* row_var = rs->stmt->as<ir::ForNode>()->var.get();
        for (auto [cmp, e] : cb.found) {
            if (cb.bound_inside.count(e) || e == row_var || !vars_.count(e)) continue;
            bounds.push_back(cmp);
            llvm::Value* v = convert(vars_.at(e), e->type, DataType::i64());
            bounds_hold = b_.CreateAnd(bounds_hold, b_.CreateICmpSGE(v, b_.getInt64(cols)));
        }
    }
    auto fused = [&](Out out) {
        if (bounds.empty()) return fused_loop(out);
        emit_if(
            bounds_hold,
            [&] {
                for (auto* cmp : bounds) assumed_true_.insert(cmp);
                fused_loop(out);
                for (auto* cmp : bounds) assumed_true_.erase(cmp);
            },
            [&] { fused_loop(out); });
    };
    auto is_out = [](const RowStmt* rs) {
        return rs->kind == RowKind::Copy && rs->stmt->as<ir::CopyNode>()->dst.buffer->scope == ir::Scope::Global;
    };
    // All statements one after another, or all but the copies out (`after`).
    auto one_by_one = [&](bool after) {
        for (auto* rs : seg)
            if (!after || !is_out(rs)) emit_row_stmt(*rs, row);
    };
    // if (cond) then_fn() else else_fn(), without the branch where cond is a constant.
    auto choose = [&](llvm::Value* cond, const std::function<void()>& then_fn, const std::function<void()>& else_fn) {
        if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(cond))
            k->isOne() ? then_fn() : else_fn();
        else
            emit_if(cond, then_fn, else_fn);
    };
    if (!copies_out) {
        choose(fast, [&] { fused(Out::Plain); }, [&] { one_by_one(false); });
        return;
    }
    // Copies out may wait until after the loop when nothing after the first of them in
    // the segment is anything else (then the tile rows they read are final).
    bool trailing = true, seen = false;
    for (auto* rs : seg) {
        if (seen && !is_out(rs)) trailing = false;
        seen = seen || is_out(rs);
    }
    if (!trailing) {
        choose(fast, [&] { choose(streams, [&] { fused(Out::Streaming); }, [&] { fused(Out::Plain); }); },
               [&] { one_by_one(false); });
        return;
    }
    // Otherwise the rows that do not stream in the loop run the other statements (fused
    // or not) and then the copies, the same code as without this fusion.
    choose(b_.CreateAnd(fast, streams), [&] { fused(Out::Streaming); },
           [&] {
               choose(fast, [&] { fused(Out::After); }, [&] { one_by_one(true); });
               for (auto* rs : seg)
                   if (is_out(rs)) emit_row_stmt(*rs, row);
           });
}

}  // namespace tilec::codegen
