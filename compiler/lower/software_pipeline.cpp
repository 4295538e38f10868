// software-pipeline (thread level, after insert-async-waits, before the shared-memory
// plan): a `pipelined(n, stages = S)` loop whose body fills shared buffers from global
// memory with cp.async (the lowered copies: a full_write around cp.asyncs) issues the
// fills of iteration j + S - 1 while iteration j computes, as the hardware's
// asynchronous copies allow:
//
//   for s in 0 .. S-2:  if s < n { fills(s) };  commit          (prologue)
//   for j in 0 .. n:
//       wait_group S-2                     fills(j) have landed (S-2 newer groups may not)
//       if j + S - 1 < n { fills(j + S - 1) };  commit
//       the rest of the body for j
//   wait_group 0
//
// Every filled buffer X gets S copies, X'[s, ...] (a stage per iteration modulo S); the
// fills of iteration i write X'[i % S] and the rest of iteration i reads X'[i % S]. One
// commit per step, empty or not, keeps "the S-2 newest groups" meaning "the fills of the
// S-2 iterations after j". The waits insert-async-waits put in the body are dropped:
// these replace them. Barriers are place-barriers' (after the plan): the fill of stage
// (j - 1) % S must wait for iteration j - 1's reads of it, and iteration j's reads for
// the other threads' landed fills.
//
// On sm_90a, when the body's wgmma accumulators are touched by wgmma instructions alone
// (a GEMM main loop), the body's final wgmma_wait 0 becomes wgmma_wait 1: the wgmma of
// iteration j run while iteration j + 1 waits for its data and issues its own, and the
// fills move after the rest of the body, behind that wait (the stage they overwrite is
// the one iteration j - 1's wgmma read, complete once wait 1 returns in iteration j); a
// wgmma_wait 0 after the loop completes the last group before anything reads the
// accumulators.
//
// Fills with a TMA form (ops/copy_tma.h: `if (tensor map encodes) { thread 0: arrive
// expect-tx on a placeholder mbarrier, tma_load boxes } else { cp.async form }`) keep both
// forms: the placeholder becomes S mbarriers (one per stage, initialised before the loop
// by thread 0 with one arrival each), iteration i's fill arrives on and loads into stage
// i % S, and iteration j waits, after the cp.async wait, on its stage's mbarrier for the
// parity of its use of that stage since the initialisation, ((j - min) / S) % 2. Outside a
// pipelined loop the TMA form is dropped (one copy has nothing to overlap with).
//
// Warp specialization (sm_90a, issue 12): when every fill of a loop with wgmma has a TMA
// form and the block has 128 or 256 threads (one or two consumer warpgroups), the loop
// becomes, under the run-time condition that every tensor map encodes (shown for a GEMM,
// where the wgmma overlap above applies; where it does not, flash attention's loop, a
// consumer releases stage j % S at the end of iteration j and there is no final wait):
//
//   if (thread.x >= T) {                          producer warpgroup (split-warp-roles
//     setmaxnreg.dec                              appends it to the block)
//     if (thread.x == T) for j: { if j - min >= S: wait empty[j % S] for the release of
//                                 stage j % S by iteration j - S;  fills(j) by TMA }
//   } else {                                      consumers
//     setmaxnreg.inc
//     for j: { wait full[j % S];  the rest of the body (wgmma, wait_group 1);
//              if j > min: arrive on empty[(j - 1) % S] (iteration j - 1's wgmma done) }
//     wgmma_wait 0
//   }
//
// with the full mbarriers initialised with one arrival (the producer's expect-tx) and the
// empty ones with T (every consumer thread), and otherwise (a tensor the TMA cannot
// address) the cp.async pipeline above. No barrier orders the two roles: the mbarrier
// rings do, and split-warp-roles hoists the split to the top of the kernel (the consumers'
// barriers become named barriers of T threads). `@warp_specialize(false)` on the kernel
// keeps the single-warpgroup pipeline. Only one loop per kernel, and only one under no
// other loop or thread-dependent `if` (the mbarriers are initialised once, at the top of
// the kernel).
//
// On AMD (no asynchronous copy into LDS) the fills are ops/copy.cpp's vector fills, and
// the loop is pipelined through registers, two stages whatever S asks (register_staged_
// pipeline below): iteration j loads tile j + 1 into registers before its compute and
// stores it into stage (j + 1) % 2 after, where the kernel's registers and LDS leave room
// for it; otherwise it runs in order.
//
// A loop is pipelined when S >= 2 and every fill's indices and guards depend only on
// the loop variable, lets at the top of the body (index arithmetic, which may read
// `in` tensors: a page number from a block table, as their values never change, so the
// fill of a later iteration reads them again under its own guard) and values defined
// outside the loop, and no other statement of the body writes a filled buffer.
// Anything else runs in order (a serial loop), as does a loop without fills.
#include <algorithm>
#include <optional>
#include <unordered_set>

#include "ir/visitor.h"
#include "lower/thread_lower.h"

namespace tilec::lower {

using namespace ir;

// The placeholder mbarrier of `s` if it is a copy's TMA issue (ops/copy_tma.h).
std::optional<Buffer> tma_placeholder(const Stmt& s);

namespace {

bool has_load(const Expr& e) {
    struct V : IRVisitor {
        bool found = false;
        void visit_load(const LoadNode*) override { found = true; }
    } v;
    v.visit(e);
    return v.found;
}

// A load of anything but a global `in` tensor (whose elements no thread writes).
bool has_mutable_load(const Expr& e) {
    struct V : IRVisitor {
        bool found = false;
        void visit_load(const LoadNode* op) override {
            found |= op->buffer->scope != Scope::Global || op->buffer->access != Access::In;
            IRVisitor::visit_load(op);
        }
    } v;
    v.visit(e);
    return v.found;
}

// A fill: full_write X { ... cp.async into X ... } (an asynchronous fill), or on AMD
// full_write X { if (inside and aligned) { ... vector_copy into X ... } else { ... } }
// (ops/copy.cpp's vector fill, staged through registers: register_staged_split).
enum class FillKind { None, Async, Vector };
FillKind fill_kind(const Stmt& s) {
    auto* fw = s->as<FullWriteNode>();
    if (!fw || fw->buffer->scope != Scope::Shared) return FillKind::None;
    struct V : IRVisitor {
        const BufferNode* x;
        bool async = false, vector = false;
        void visit_machine_op(const MachineOpNode* op) override {
            if (op->dst.empty() || !op->dst.at(0)->as<LoadNode>() || op->dst.at(0)->as<LoadNode>()->buffer.get() != x)
                return;
            async |= op->op == MachineOp::CpAsync;
            vector |= op->op == MachineOp::VectorCopy;
        }
    } v;
    v.x = fw->buffer.get();
    v.visit(fw->body);
    if (v.async) return FillKind::Async;
    auto* branch = fw->body->as<IfNode>();
    if (v.vector && branch && branch->else_case) return FillKind::Vector;
    return FillKind::None;
}
const BufferNode* filled_buffer(const Stmt& s) {
    return fill_kind(s) == FillKind::None ? nullptr : s->as<FullWriteNode>()->buffer.get();
}

// A vector fill's vector branch split in two through a register buffer `regs` of the
// thread: `load` the vector loads of the chunks into registers (global -> register
// vector_copy), `store` their stores into the tile (register -> shared). Each vector_copy
// gets its own registers, indexed by the unrolled loops around it (constant once
// unrolled: no scratch). nullopt where a loop around one is not unrolled or of
// run-time length.
struct RegisterStaged {
    Stmt load, store;
    Buffer regs;
};
std::optional<RegisterStaged> register_staged_split(const Stmt& vector_branch, const Buffer& tile) {
    struct Split : IRMutator {
        bool store_side = false, ok = true;
        const BufferNode* tile;
        Buffer regs;
        int64_t next = 0;  // the next vector_copy's first register element
        std::vector<std::pair<Var, int64_t>> loops;  // (variable, extent), outermost first
        Stmt mutate_for(const ForNode* op, const Stmt& self) override {
            auto ext = as_const_int(op->extent);
            auto mn = as_const_int(op->min);
            if (op->for_kind != ForKind::Unroll || !ext || !mn || *mn != 0) {
                ok = false;
                return self;
            }
            loops.emplace_back(op->var, *ext);
            Stmt body = mutate(op->body);
            loops.pop_back();
            return make_for(op->var, op->min, op->extent, op->for_kind, body, op->loc);
        }
        Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
            auto* dst = op->op == MachineOp::VectorCopy ? op->dst.at(0)->as<LoadNode>() : nullptr;
            if (!dst || dst->buffer.get() != tile) {
                ok = false;
                return self;
            }
            const int64_t V = op->imm.at(0) / std::max(1, (dst->buffer->dtype.bits + 7) / 8);
            Expr slot = make_int(0);
            int64_t count = 1;
            for (size_t k = loops.size(); k-- > 0;) {
                slot = add(slot, mul(Expr(loops[k].first), make_int(count)));
                count *= loops[k].second;
            }
            Expr first = add(make_int(next), mul(slot, make_int(V)));
            next += count * V;
            Expr reg = make_load(regs, {first}, op->loc);
            if (store_side) return make_machine_op(MachineOp::VectorCopy, op->imm, op->dst, {reg}, op->loc);
            return make_machine_op(MachineOp::VectorCopy, op->imm, {reg}, op->src, op->loc);
        }
    };
    // The register buffer's size is known after the walk: a placeholder first.
    BufferNode rn = *tile;
    rn.name = tile->name + "_next";
    rn.scope = Scope::Register;
    rn.shape = {make_int(1)};
    rn.strides.clear();
    rn.shared_offset = -1;
    Split load;
    load.tile = tile.get();
    load.regs = make_buffer(BufferNode(rn));
    load.mutate(vector_branch);
    if (!load.ok || load.next == 0) return std::nullopt;
    rn.shape = {make_int(load.next)};
    Buffer regs = make_buffer(std::move(rn));
    Split loads, stores;
    loads.tile = stores.tile = tile.get();
    loads.regs = stores.regs = regs;
    stores.store_side = true;
    return RegisterStaged{loads.mutate(vector_branch), stores.mutate(vector_branch), regs};
}

bool is_wait(const Stmt& s) {
    auto* m = s->as<MachineOpNode>();
    return m && m->op == MachineOp::CpAsyncWait;
}

// How many accesses (loads, stores, target-instruction operands) name `b` in `s`.
int64_t uses_of(const Stmt& s, const BufferNode* b) {
    struct V : IRVisitor {
        const BufferNode* b;
        int64_t n = 0;
        void visit_load(const LoadNode* op) override {
            n += op->buffer.get() == b;
            IRVisitor::visit_load(op);
        }
        void visit_store(const StoreNode* op) override {
            n += op->buffer.get() == b;
            IRVisitor::visit_store(op);
        }
    } v;
    v.b = b;
    v.visit(s);
    return v.n;
}

// The TMA forms no pipeline took (their mbarrier still a placeholder) give way to their
// other form.
struct DropUnstagedTma : IRMutator {
    const std::unordered_set<const BufferNode*>* staged;
    Stmt mutate_if(const IfNode* op, const Stmt& self) override {
        auto bar = tma_placeholder(op->then_case);
        if (bar && !staged->count(bar->get())) return op->else_case ? mutate(op->else_case) : make_seq({}, op->loc);
        return IRMutator::mutate_if(op, self);
    }
};

class Pipeliner : public IRMutator {
public:
    Pipeliner(Stmt root, int64_t threads, bool allow_ws, const target::GpuTarget& target)
        : root_(std::move(root)), threads_(threads), allow_ws_(allow_ws), target_(target) {}

    Stmt mutate_for(const ForNode* op, const Stmt& self) override {
        ++nesting_;
        Stmt body = mutate(op->body);
        --nesting_;
        if (op->for_kind != ForKind::Pipelined)
            return body == op->body ? self : make_for(op->var, op->min, op->extent, op->for_kind, body, op->loc, op->stages);
        if (auto p = pipeline(*op, body)) return *p;
        return make_for(op->var, op->min, op->extent, ForKind::Serial, body, op->loc);
    }

    // Warp roles only for a loop under no other loop and no thread-dependent `if` (its
    // mbarriers are initialised once, at the top of the kernel, and both roles must reach
    // it: split-K's `if k_begin < k_end` is fine), and for one loop per kernel.
    Stmt mutate_if(const IfNode* op, const Stmt& self) override {
        struct ThreadDependent : IRVisitor {
            bool found = false;
            void visit_var(const VarNode* v) override { found |= v->var_kind == VarKind::ThreadIdx; }
            void visit_load(const LoadNode* op) override {
                found = true;  // a register or memory value may differ between threads
                IRVisitor::visit_load(op);
            }
        } dep;
        dep.visit(op->cond);
        nesting_ += dep.found;
        Stmt out = IRMutator::mutate_if(op, self);
        nesting_ -= dep.found;
        return out;
    }
    int nesting_ = 0;
    bool specialized_ = false;

    // Multi-buffered copies of the filled buffers, for the allocations to take.
    std::unordered_map<const BufferNode*, Buffer> staged;

    Stmt mutate_allocate(const AllocateNode* op, const Stmt& self) override {
        Stmt body = mutate(op->body);
        auto it = staged.find(op->buffer.get());
        if (it != staged.end()) return make_allocate(it->second, body, op->loc);
        return body == op->body ? self : make_allocate(op->buffer, body, op->loc);
    }

private:
    std::optional<Stmt> pipeline(const ForNode& loop, const Stmt& body) {
        if (loop.stages < 2) return std::nullopt;
        // The lets at the top: index arithmetic the fills may use (reading `in` tensors).
        std::vector<std::pair<Var, Expr>> lets;
        Stmt rest = body;
        while (auto* l = rest->as<LetStmtNode>()) {
            if (has_mutable_load(l->value)) break;
            lets.emplace_back(l->var, l->value);
            rest = l->body;
        }
        std::vector<Stmt> items;
        if (auto* seq = rest->as<SeqNode>())
            items = seq->stmts;
        else
            items = {rest};
        std::vector<Stmt> fills, others;
        std::unordered_set<const BufferNode*> filled;
        bool vector = false, async = false;
        for (auto& it : items) {
            if (const BufferNode* x = filled_buffer(it)) {
                fills.push_back(it);
                filled.insert(x);
                (fill_kind(it) == FillKind::Vector ? vector : async) = true;
            } else if (!is_wait(it)) {
                others.push_back(it);
            }
        }
        if (fills.empty() || (vector && async)) return std::nullopt;
        // Register-staged fills hold one tile in flight (in registers): two stages of
        // shared memory are all they use, whatever `stages` asks.
        const int64_t S = vector ? 2 : loop.stages;
        // The fills' TMA forms: their conditions and placeholder mbarriers.
        struct TmaStage {
            Expr condition;
            Buffer placeholder;
        };
        std::vector<TmaStage> tma;
        for (auto& f : fills) {
            struct FindTma : IRVisitor {
                std::vector<TmaStage>* out;
                void visit_if(const IfNode* op) override {
                    if (auto bar = tma_placeholder(op->then_case)) {
                        out->push_back({op->cond, *bar});
                        if (op->else_case) visit(op->else_case);
                        return;
                    }
                    IRVisitor::visit_if(op);
                }
            } find_tma;
            find_tma.out = &tma;
            find_tma.visit(f);
        }
        // A filled buffer used outside the loop keeps one copy (its value is not per stage).
        Stmt whole_loop = make_for(loop.var, loop.min, loop.extent, ForKind::Serial, body, loop.loc);
        for (auto* x : filled)
            if (uses_of(root_, x) != uses_of(whole_loop, x)) return std::nullopt;
        // The fills may use the loop variable, the top lets and what the loop does not bind.
        std::unordered_set<const VarNode*> allowed{loop.var.get()};
        for (auto& [v, e] : lets) allowed.insert(v.get());
        std::unordered_set<const VarNode*> bound_inside;
        struct Binders : IRVisitor {
            std::unordered_set<const VarNode*>* out;
            void visit_let(const LetStmtNode* op) override {
                out->insert(op->var.get());
                IRVisitor::visit_let(op);
            }
            void visit_for(const ForNode* op) override {
                out->insert(op->var.get());
                IRVisitor::visit_for(op);
            }
        } binders;
        binders.out = &bound_inside;
        for (auto& o : others) binders.visit(o);
        for (auto& f : fills) {
            std::unordered_set<const VarNode*> own;
            binders.out = &own;
            binders.visit(f);
            struct Free : IRVisitor {
                const std::unordered_set<const VarNode*>* inside;
                const std::unordered_set<const VarNode*>* own;
                bool bad = false;
                void visit_var(const VarNode* v) override {
                    if (inside->count(v) && !own->count(v)) bad = true;
                }
            } free;
            free.inside = &bound_inside;
            free.own = &own;
            free.visit(f);
            if (free.bad) return std::nullopt;
        }
        // No other statement writes a filled buffer.
        struct Writes : IRVisitor {
            const std::unordered_set<const BufferNode*>* filled;
            bool found = false;
            void visit_store(const StoreNode* op) override {
                if (filled->count(op->buffer.get())) found = true;
                IRVisitor::visit_store(op);
            }
            void visit_machine_op(const MachineOpNode* op) override {
                if ((op->op == MachineOp::CpAsync || op->op == MachineOp::VectorCopy) &&
                    op->dst.at(0)->as<LoadNode>() && filled->count(op->dst.at(0)->as<LoadNode>()->buffer.get()))
                    found = true;
            }
        } writes;
        writes.filled = &filled;
        for (auto& o : others) writes.visit(o);
        if (writes.found) return std::nullopt;

        // Vector fills split in two through registers, where there is room for them
        // (decided before any buffer is staged).
        std::vector<RegisterStaged> splits;
        if (vector && !register_staged_splits(fills, splits)) return std::nullopt;

        // S copies of each filled buffer.
        std::unordered_map<const BufferNode*, Buffer> stage_of;
        struct Find : IRVisitor {
            const std::unordered_set<const BufferNode*>* filled;
            std::unordered_map<const BufferNode*, Buffer> found;
            void visit_buffer_use(const Buffer& b) override {
                if (filled->count(b.get())) found.emplace(b.get(), b);
            }
            void visit_load(const LoadNode* op) override {
                visit_buffer_use(op->buffer);
                IRVisitor::visit_load(op);
            }
        } find;
        find.filled = &filled;
        for (auto& f : fills) find.visit(f);
        for (auto& [node, b] : find.found) {
            BufferNode n = *b;
            n.shape.insert(n.shape.begin(), make_int(S));
            n.strides.clear();
            Buffer m = make_buffer(std::move(n));
            stage_of[node] = m;
            staged[node] = m;
        }
        std::vector<Buffer> tma_bars;
        for (auto& st : tma) {
            BufferNode n = *st.placeholder;
            n.shape.insert(n.shape.begin(), make_int(S));
            Buffer m = make_buffer(std::move(n));
            stage_of[st.placeholder.get()] = m;
            staged_tma_.insert(m.get());
            tma_bars.push_back(m);
        }
        // A statement of iteration `iter` on its stage of every filled buffer.
        struct Restage : IRMutator {
            const std::unordered_map<const BufferNode*, Buffer>* stage_of;
            Expr stage;
            const Buffer* find(const Buffer& b) const {
                auto it = stage_of->find(b.get());
                return it == stage_of->end() ? nullptr : &it->second;
            }
            Expr mutate_load(const LoadNode* op, const Expr& self) override {
                const Buffer* m = find(op->buffer);
                if (!m) return IRMutator::mutate_load(op, self);
                std::vector<Expr> idx{stage};
                for (auto& i : op->indices) idx.push_back(mutate(i));
                return make_load(*m, idx, op->loc);
            }
            Stmt mutate_store(const StoreNode* op, const Stmt& self) override {
                const Buffer* m = find(op->buffer);
                if (!m) return IRMutator::mutate_store(op, self);
                std::vector<Expr> idx{stage};
                for (auto& i : op->indices) idx.push_back(mutate(i));
                return make_store(*m, idx, mutate(op->value), op->loc);
            }
            // The stage is not a whole write of the multi-buffered buffer: no mark.
            Stmt mutate_full_write(const FullWriteNode* op, const Stmt&) override { return mutate(op->body); }
            // A TMA issue's placeholder mbarrier: its stages are allocated around the loop.
            Stmt mutate_allocate(const AllocateNode* op, const Stmt& self) override {
                if (find(op->buffer)) return mutate(op->body);
                return IRMutator::mutate_allocate(op, self);
            }
            // One commit per pipeline step, placed by the pipeline.
            Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
                if (op->op == MachineOp::CpAsyncCommit) return make_seq({}, op->loc);
                return IRMutator::mutate_machine_op(op, self);
            }
        };
        // The statements as iteration `iter` runs them, on its stage of every filled
        // buffer. The fills (no lets) see the lets' values inlined: they run at another
        // iteration than the lets'. A let that reads memory stays a let (fresh), so the
        // fill reads it once.
        auto at_iteration = [&](const std::vector<Stmt>& stmts, const Expr& iter, bool with_lets) {
            Stmt seq = make_seq(stmts, loop.loc);
            if (!with_lets) {
                VarMap map;
                map[loop.var.get()] = iter;
                std::vector<std::pair<Var, Expr>> reads;
                for (auto& [v, e] : lets) {
                    Expr value = substitute(e, map);
                    if (has_load(value))
                        reads.emplace_back(v, value);
                    else
                        map[v.get()] = value;
                }
                seq = substitute(seq, map);
                for (size_t k = reads.size(); k-- > 0;) seq = make_let(reads[k].first, reads[k].second, seq, loop.loc);
                seq = with_fresh_binders(seq);
            }
            Restage rs;
            rs.stage_of = &stage_of;
            rs.stage = floormod(iter, make_int(S));
            seq = rs.mutate(seq);
            if (with_lets)
                for (size_t k = lets.size(); k-- > 0;) seq = make_let(lets[k].first, lets[k].second, seq, loop.loc);
            return seq;
        };
        SourceLoc loc = loop.loc;
        Expr mn = loop.min;
        std::vector<Stmt> out;
        Expr thread0 = eq(make_thread_idx_var(0), make_int(0));
        for (size_t k = 0; k < tma.size(); ++k) {
            std::vector<Stmt> inits;
            for (int64_t s = 0; s < S; ++s)
                inits.push_back(make_machine_op(MachineOp::MbarrierInit, {1},
                                                {make_load(tma_bars[k], {make_int(s), make_int(0)}, loc)}, {}, loc));
            out.push_back(make_if(logical_and(tma[k].condition, thread0), make_seq(inits, loc), nullptr, loc));
        }
        Var j = loop.var;
        Stmt body_j = at_iteration(others, Expr(j), true);
        if (vector) return register_staged_pipeline(loop, fills, splits, body_j, at_iteration);
        std::optional<Stmt> final_wgmma_wait;
        body_j = overlap_wgmma(body_j, final_wgmma_wait);
        // Producer / consumer roles only where no wgmma operand is still copied from
        // global memory in the body (a consumer copying an operand itself gains nothing
        // from a producer, and gemm_f8e4m3's transposing B copy then spilled under the
        // consumers' registers); tiles the body computes (attention's p) are fine.
        if (widest_wgmma(body_j) > 0 && allow_ws_ && (threads_ == 128 || threads_ == 256) && !tma.empty() &&
            tma.size() == fills.size() && nesting_ == 0 && !specialized_ && !writes_wgmma_operands(body_j, true)) {
            specialized_ = true;
            Stmt result = warp_specialized(loop, fills, body_j, final_wgmma_wait, tma_bars, tma, at_iteration, out);
            for (auto& b : tma_bars) result = make_allocate(b, result, loc);
            return result;
        }
        std::vector<Stmt> waits;
        for (size_t k = 0; k < tma.size(); ++k)
            waits.push_back(make_if(tma[k].condition, stage_wait(tma_bars[k], Expr(j), mn, S, 0, loc), nullptr, loc));
        for (auto& st : cp_async_pipeline(loop, j, fills, body_j, waits, final_wgmma_wait, at_iteration)) out.push_back(st);
        Stmt result = make_seq(out, loc);
        for (auto& b : tma_bars) result = make_allocate(b, result, loc);
        return result;
    }

    // The pipeline of vector fills (AMD: no asynchronous copy into LDS), two stages,
    // the next tile's loads in flight in registers while this one is computed on:
    //
    //   if 0 < n { fills(min) }                          (stage min % 2; both paths)
    //   for j in min .. min + n:
    //       if j + 1 < min + n { if fast(j + 1) { regs = global loads of tile j + 1 } }
    //       the rest of the body for j                   (reads stage j % 2)
    //       if j + 1 < min + n {
    //           if fast(j + 1) { stage (j + 1) % 2 = regs }  else { fills(j + 1) }
    //       }
    //
    // fast(i) is the fill's own test (the tile inside the tensor, rows aligned to the
    // chunk); an edge tile is filled as before, after the body. place-barriers puts one
    // barrier an iteration before the body's reads (stage j % 2 complete; the stores of
    // iteration j into the other stage need none: they are apart from the reads of j, and
    // the reads of j - 1 of that stage precede this barrier). The loads' latency runs
    // under the barrier and the body's MFMAs; LLVM waits for them (s_waitcnt vmcnt) at
    // the stores.
    // Each vector fill's split (register_staged_split), if all split and fit.
    bool register_staged_splits(const std::vector<Stmt>& fills, std::vector<RegisterStaged>& out) const {
        int64_t staged_words = 0, stage_bytes = 0;
        for (auto& f : fills) {
            auto* fw = f->as<FullWriteNode>();
            auto split = register_staged_split(fw->body->as<IfNode>()->then_case, fw->buffer);
            if (!split) return false;
            staged_words += words(split->regs);
            stage_bytes += bytes_of(fw->buffer);
            out.push_back(std::move(*split));
        }
        return fits(staged_words, stage_bytes);
    }

    template <typename AtIteration>
    Stmt register_staged_pipeline(const ForNode& loop, const std::vector<Stmt>& fills,
                                  const std::vector<RegisterStaged>& splits, const Stmt& body_j,
                                  AtIteration& at_iteration) {
        SourceLoc loc = loop.loc;
        std::vector<Stmt> loads, stores;
        for (size_t k = 0; k < fills.size(); ++k) {
            auto* branch = fills[k]->as<FullWriteNode>()->body->as<IfNode>();
            loads.push_back(make_if(branch->cond, splits[k].load, nullptr, branch->loc));
            stores.push_back(make_if(branch->cond, splits[k].store, branch->else_case, branch->loc));
        }
        Var j = loop.var;
        Expr mn = loop.min, end = add(loop.min, loop.extent);
        Expr next = add(Expr(j), make_int(1));
        Expr has_next = lt(next, end);
        std::vector<Stmt> out;
        out.push_back(make_if(lt(make_int(0), loop.extent), at_iteration(fills, mn, false), nullptr, loc));
        Stmt step = make_seq({make_if(has_next, at_iteration(loads, next, false), nullptr, loc), body_j,
                              make_if(has_next, at_iteration(stores, next, false), nullptr, loc)},
                             loc);
        out.push_back(make_for(j, mn, loop.extent, ForKind::Serial, step, loc));
        Stmt result = make_seq(out, loc);
        for (auto& sp : splits) result = make_allocate(sp.regs, result, loc);
        return result;
    }

    static int64_t bytes_of(const Buffer& b) {
        int64_t n = (b->dtype.bits + 7) / 8;
        for (auto& e : b->shape) n *= as_const_int(e).value_or(0);
        return n;
    }
    static int64_t words(const Buffer& b) { return (bytes_of(b) + 3) / 4; }

    // Whether a register-staged pipeline has room: its staged registers beside every
    // register buffer of the kernel (an upper bound of what is live at once: the loop's
    // accumulators and operand registers), each counted twice (the other half for
    // addresses and temporaries), within the thread's registers; on CDNA, whose MFMA
    // accumulators the instructions update in place in the AccVGPRs (another 256 a
    // thread), the accumulators once. And a second stage of the filled buffers beside
    // every shared buffer of the kernel within the LDS (flash attention's k and v at
    // D = 128 do not fit twice in 64 KiB). Counting RDNA3's accumulators once too let
    // gemm_i8 on gfx1100 (128 + 2 * (32 + 16) <= 256) spill 78 VGPRs; gemm_f16 there
    // (2 * (192 + 32) > 256) spilled 70 staged under the first form of this gate.
    // CDNA's attn_fwd_d64: 128 + 2 * (100 + 32) <= 512, no VGPR spilled staged.
    bool fits(int64_t staged_words, int64_t stage_bytes) const {
        struct Sizes : IRVisitor {
            int64_t words = 0, shared = 0;
            std::unordered_set<const BufferNode*> accumulators;
            std::unordered_map<const BufferNode*, int64_t> register_words;
            void visit_allocate(const AllocateNode* op) override {
                if (op->buffer->scope == Scope::Register)
                    words += 2 * (register_words[op->buffer.get()] = Pipeliner::words(op->buffer));
                if (op->buffer->scope == Scope::Shared) shared += bytes_of(op->buffer);
                IRVisitor::visit_allocate(op);
            }
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op == MachineOp::Mfma || op->op == MachineOp::Wmma)
                    for (auto& d : op->dst)
                        if (auto* l = d->as<LoadNode>()) accumulators.insert(l->buffer.get());
                IRVisitor::visit_machine_op(op);
            }
        } sizes;
        sizes.visit(root_);
        const bool agprs = target_.has_agprs();
        if (agprs)
            for (auto* b : sizes.accumulators) sizes.words -= sizes.register_words[b];
        const int64_t registers = target_.max_registers_per_thread + (agprs ? 256 : 0);
        return sizes.words + 2 * staged_words <= registers && sizes.shared + stage_bytes <= target_.max_shared_bytes;
    }

    // The widest wgmma's n in `s`, 0 without one.
    static int64_t widest_wgmma(const Stmt& s) {
        struct Widest : IRVisitor {
            int64_t n = 0;
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op == MachineOp::Wgmma) n = std::max(n, op->imm.at(0));
            }
        } widest;
        widest.visit(s);
        return widest.n;
    }

    // The wait of iteration `iter` on its stage of the mbarrier ring `bar` (S stages from
    // iteration `mn`): the parity of the stage's use since the initialisation, plus
    // `phase_offset` (1: the phase before, the previous use's release).
    static Stmt stage_wait(const Buffer& bar, const Expr& iter, const Expr& mn, int64_t S, int64_t phase_offset,
                           SourceLoc loc) {
        Expr use = floordiv(sub(iter, mn), make_int(S));
        return make_machine_op(MachineOp::MbarrierWait, {}, {},
                               {make_load(bar, {floormod(iter, make_int(S)), make_int(0)}, loc),
                                floormod(add(use, make_int(phase_offset)), make_int(2))},
                               loc);
    }

    // The warp-specialized form of the header; `inits` holds the full mbarriers' inits.
    // With `final_wait` (overlap_wgmma relaxed the body's wgmma wait to 1: a GEMM) a
    // consumer releases a stage one iteration later, once the wgmma reading it has
    // completed, and waits for the last after the loop; without (every wgmma waited for
    // within the body: flash attention, whose softmax reads the scores) it releases the
    // stage at the end of the iteration that read it.
    template <typename AtIteration, typename TmaStage>
    Stmt warp_specialized(const ForNode& loop, const std::vector<Stmt>& fills, const Stmt& body_j,
                          const std::optional<Stmt>& final_wait, const std::vector<Buffer>& full,
                          const std::vector<TmaStage>& tma, AtIteration& at_iteration, std::vector<Stmt> inits) {
        const int64_t S = loop.stages, T = threads_;
        SourceLoc loc = loop.loc;
        // The widest wgmma: ptxas compiles each instruction within the launch's register
        // count, so an n = 256 wgmma (128 accumulators) needs more than two blocks a SM allow.
        two_blocks_ = T == 128 && widest_wgmma(body_j) <= 128;
        Expr n = loop.extent, mn = loop.min;
        Expr all_maps = tma[0].condition;
        for (size_t k = 1; k < tma.size(); ++k) all_maps = logical_and(all_maps, tma[k].condition);
        Expr tid = make_thread_idx_var(0);
        // The empty ring: one arrival per consumer thread releases a stage.
        BufferNode en = *full[0];
        en.name = "stage_empty";
        Buffer empty = make_buffer(std::move(en));
        for (int64_t s = 0; s < S; ++s)
            inits.push_back(make_if(logical_and(all_maps, eq(tid, make_int(0))),
                                    make_machine_op(MachineOp::MbarrierInit, {T},
                                                    {make_load(empty, {make_int(s), make_int(0)}, loc)}, {}, loc),
                                    nullptr, loc));
        // Producer: the TMA issues alone (the fills' TMA branches, no thread-0 guard: one
        // producer thread runs them).
        struct TmaOnly : IRMutator {
            Stmt mutate_if(const IfNode* op, const Stmt& self) override {
                if (tma_placeholder(op->then_case)) {
                    auto* a = op->then_case->as<AllocateNode>();
                    auto* guard = a->body->as<IfNode>();
                    return make_allocate(a->buffer, guard->then_case, a->loc);
                }
                return IRMutator::mutate_if(op, self);
            }
        } tma_only;
        std::vector<Stmt> tma_fills;
        for (auto& f : fills) tma_fills.push_back(tma_only.mutate(f));
        Var jp = make_var(loop.var->name + "_tma", loop.var->type, loop.var->var_kind, loop.var->loc);
        Stmt release_wait = make_if(ge(sub(Expr(jp), mn), make_int(S)), stage_wait(empty, Expr(jp), mn, S, 1, loc), nullptr, loc);
        Stmt producer_loop = make_for(jp, mn, n, ForKind::Serial,
                                      make_seq({release_wait, at_iteration(tma_fills, Expr(jp), false)}, loc), loc);
        Stmt producer = make_seq({make_machine_op(MachineOp::SetMaxNReg, {0, producer_registers()}, {}, {}, loc),
                                  make_if(eq(tid, make_int(T)), producer_loop, nullptr, loc)},
                                 loc);
        // Consumers: wait for the stage, compute, release the previous stage.
        Var j = loop.var;
        std::vector<Stmt> step;
        for (const Buffer& bar : full) step.push_back(stage_wait(bar, Expr(j), mn, S, 0, loc));
        step.push_back(body_j);
        auto release = [&](const Expr& iter) {
            return make_machine_op(MachineOp::MbarrierArrive, {0},
                                   {make_load(empty, {floormod(iter, make_int(S)), make_int(0)}, loc)}, {}, loc);
        };
        if (final_wait)
            step.push_back(make_if(gt(Expr(j), mn), release(sub(Expr(j), make_int(1))), nullptr, loc));
        else
            step.push_back(release(Expr(j)));
        std::vector<Stmt> consumer_stmts{make_machine_op(MachineOp::SetMaxNReg, {1, consumer_registers()}, {}, {}, loc),
                                         make_for(j, mn, n, ForKind::Serial, make_seq(step, loc), loc)};
        if (final_wait) consumer_stmts.push_back(*final_wait);
        Stmt consumer = make_seq(consumer_stmts, loc);
        Stmt roles = make_if(ge(tid, make_int(T)), producer, consumer, loc);
        // Where a tensor map does not encode: the cp.async pipeline, on fresh binders.
        const std::unordered_set<const BufferNode*> none_staged;
        DropUnstagedTma drop;
        drop.staged = &none_staged;
        std::vector<Stmt> plain_fills;
        for (auto& f : fills) plain_fills.push_back(drop.mutate(f));
        Var jc = make_var(loop.var->name, loop.var->type, loop.var->var_kind, loop.var->loc);
        VarMap rename;
        rename[j.get()] = jc;
        Stmt body_c = with_fresh_binders_and_buffers(substitute(body_j, rename));
        std::optional<Stmt> final_c;
        if (final_wait) final_c = with_fresh_binders(*final_wait);
        std::vector<Stmt> plain = cp_async_pipeline(loop, jc, plain_fills, body_c, {}, final_c, at_iteration);
        inits.push_back(make_if(all_maps, roles, make_seq(plain, loc), loc));
        return make_allocate(empty, make_seq(inits, loc), loc);
    }

    // The cp.async pipeline of a header over loop variable `j`: the S - 1 prologue fills,
    // each committed as a group; per iteration, the wait for iteration j's group (and
    // `waits`: its TMA stages), then the refill of iteration j + S - 1 into the stage
    // iteration j - 1 read, committed, and the body; where the body leaves its wgmma in
    // flight (`final_wait`: it waits for the previous one) the refill goes after it,
    // once that wgmma no longer reads the stage; after the loop, wait for every group
    // and then `final_wait`.
    template <typename AtIteration>
    std::vector<Stmt> cp_async_pipeline(const ForNode& loop, const Var& j, const std::vector<Stmt>& fills,
                                        const Stmt& body, const std::vector<Stmt>& waits,
                                        const std::optional<Stmt>& final_wait, AtIteration& at_iteration) {
        const int64_t S = loop.stages;
        SourceLoc loc = loop.loc;
        Expr n = loop.extent, mn = loop.min;
        auto commit = [&] { return make_machine_op(MachineOp::CpAsyncCommit, {}, {}, {}, loc); };
        auto wait = [&](int64_t k) { return make_machine_op(MachineOp::CpAsyncWait, {k}, {}, {}, loc); };
        std::vector<Stmt> out;
        // The prologue: with two stages or more to fill, a rolled loop over them (it runs
        // once a block; written out, each stage's copy of the fills, in all their forms,
        // was code for LLVM and ptxas to compile again: gemm.tile's PTX -16% on sm_80,
        // -18% on sm_90a, its tensor-core blocks the same).
        auto stage_fill = [&](const Expr& s) {
            return make_if(lt(s, n), at_iteration(fills, add(mn, s), false), nullptr, loc);
        };
        if (S - 1 >= 2) {
            Var s = make_var("stage", DataType::index(), VarKind::Loop, loc);
            out.push_back(make_for(s, make_int(0), make_int(S - 1), ForKind::Rolled,
                                   make_seq({stage_fill(Expr(s)), commit()}, loc), loc));
        } else if (S - 1 == 1) {
            out.push_back(stage_fill(make_int(0)));
            out.push_back(commit());
        }
        Expr ahead = add(Expr(j), make_int(S - 1));
        Stmt refill = make_if(lt(ahead, add(mn, n)), at_iteration(fills, ahead, false), nullptr, loc);
        std::vector<Stmt> step{wait(S - 2)};
        step.insert(step.end(), waits.begin(), waits.end());
        if (final_wait)
            step.insert(step.end(), {body, refill, commit()});
        else
            step.insert(step.end(), {refill, commit(), body});
        out.push_back(make_for(j, mn, n, ForKind::Serial, make_seq(step, loc), loc));
        out.push_back(wait(0));
        if (final_wait) out.push_back(*final_wait);
        return out;
    }

    // setmaxnreg: the producer warpgroup gives registers to the consumers. With one
    // consumer warpgroup and wgmma up to n = 128, two blocks share an SM (launch at 128
    // registers a thread, .minnctapersm 2: 128 * 24 + 128 * 232 = 32768, half the file);
    // otherwise one block (launch at 168, .maxnreg: 128 * 40 + 256 * 232 = 64512 with two
    // consumer warpgroups). split-warp-roles reads the choice back from the dec.
    bool two_blocks_ = false;
    int64_t producer_registers() const { return two_blocks_ ? 24 : 40; }
    int64_t consumer_registers() const { return 232; }

    // Whether `body` writes (other than through the pipeline's fills, which are not in it)
    // a shared tile one of its wgmma instructions reads; with `from_global`, only writes
    // of values loaded from global memory (a fill left in the body, not a tile computed
    // there such as attention's probabilities).
    static bool writes_wgmma_operands(const Stmt& body, bool from_global = false) {
        struct Operands : IRVisitor {
            std::unordered_set<const BufferNode*> tiles;
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op == MachineOp::Wgmma) {
                    // A's shared tile (the descriptor form) and B's; A in registers is no tile.
                    const size_t na = wgmma_a_operands(*op);
                    for (size_t k : {size_t{0}, na})
                        if (auto* l = op->src.at(k)->as<LoadNode>(); l && l->buffer->scope == Scope::Shared)
                            tiles.insert(l->buffer.get());
                }
                IRVisitor::visit_machine_op(op);
            }
        } operands;
        operands.visit(body);
        struct GlobalLoad : IRVisitor {
            bool found = false;
            void visit_load(const LoadNode* op) override {
                found |= op->buffer->scope == Scope::Global;
                IRVisitor::visit_load(op);
            }
        };
        struct Writes : IRVisitor {
            const std::unordered_set<const BufferNode*>* tiles;
            bool from_global = false;
            bool found = false;
            void visit_store(const StoreNode* op) override {
                if (tiles->count(op->buffer.get())) {
                    GlobalLoad g;
                    g.visit(op->value);
                    found |= !from_global || g.found;
                }
                IRVisitor::visit_store(op);
            }
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op != MachineOp::Wgmma && op->op != MachineOp::WgmmaFence && op->op != MachineOp::WgmmaWait)
                    for (auto& d : op->dst)
                        if (auto* l = d->as<LoadNode>()) found |= tiles->count(l->buffer.get()) > 0;
                IRVisitor::visit_machine_op(op);
            }
        } writes;
        writes.tiles = &operands.tiles;
        writes.from_global = from_global;
        writes.visit(body);
        return writes.found;
    }

    // The wgmma overlap of the header: `body` with its one wgmma_wait 0 relaxed to 1 when
    // the registers it names are touched by wgmma instructions alone, and in `after` the
    // wait 0 that then follows the loop; `body` unchanged otherwise.
    static Stmt overlap_wgmma(const Stmt& body, std::optional<Stmt>& after) {
        std::vector<const MachineOpNode*> waits;
        std::unordered_set<const BufferNode*> regs;
        struct Waits : IRVisitor {
            std::vector<const MachineOpNode*>* waits;
            std::unordered_set<const BufferNode*>* regs;
            void visit_machine_op(const MachineOpNode* op) override {
                if (op->op == MachineOp::WgmmaWait) {
                    waits->push_back(op);
                    for (auto& d : op->dst) regs->insert(d->as<LoadNode>()->buffer.get());
                }
                IRVisitor::visit_machine_op(op);
            }
        } w;
        w.waits = &waits;
        w.regs = &regs;
        w.visit(body);
        if (waits.size() != 1 || waits[0]->imm.at(0) != 0) return body;
        struct OtherUse : IRVisitor {
            const std::unordered_set<const BufferNode*>* regs;
            bool found = false;
            void visit_machine_op(const MachineOpNode* op) override {
                bool wgmma = op->op == MachineOp::Wgmma || op->op == MachineOp::WgmmaFence || op->op == MachineOp::WgmmaWait;
                if (!wgmma) IRVisitor::visit_machine_op(op);
            }
            void visit_load(const LoadNode* op) override {
                found |= regs->count(op->buffer.get()) > 0;
                IRVisitor::visit_load(op);
            }
            void visit_store(const StoreNode* op) override {
                found |= regs->count(op->buffer.get()) > 0;
                IRVisitor::visit_store(op);
            }
        } use;
        use.regs = &regs;
        use.visit(body);
        if (use.found) return body;
        // Nor when the body itself writes a tile the wgmma reads (a fill that is not
        // staged, e.g. the transposing copy of an 8-bit operand into its K-major tile):
        // with wait 1, iteration j's write would race iteration j - 1's wgmma still
        // reading it.
        if (writes_wgmma_operands(body)) return body;
        const MachineOpNode* wait0 = waits[0];
        after = make_machine_op(MachineOp::WgmmaWait, {0}, wait0->dst, wait0->src, wait0->loc);
        struct Relax : IRMutator {
            const MachineOpNode* target;
            Stmt mutate_machine_op(const MachineOpNode* op, const Stmt& self) override {
                if (op != target) return IRMutator::mutate_machine_op(op, self);
                return make_machine_op(MachineOp::WgmmaWait, {1}, op->dst, op->src, op->loc);
            }
        } relax;
        relax.target = wait0;
        return relax.mutate(body);
    }

    Stmt root_;
    int64_t threads_;
    bool allow_ws_;
    const target::GpuTarget& target_;

public:
    // The mbarriers of the TMA stages made so far.
    std::unordered_set<const BufferNode*> staged_tma_;
};

}  // namespace

namespace {

// with_fresh_binders (thread_lower.h), and with `buffers` its allocations as well.
struct FreshBinders : IRMutator {
    bool buffers = false;
    VarMap map;
    std::unordered_map<const BufferNode*, Buffer> buffer_map;
    Expr mutate_var(const VarNode* op, const Expr& self) override {
        auto it = map.find(op);
        return it == map.end() ? self : it->second;
    }
    Var fresh(const Var& v) {
        Var n = make_var(v->name, v->type, v->var_kind, v->loc, v->dim);
        map[v.get()] = n;
        return n;
    }
    Stmt mutate_let(const LetStmtNode* op, const Stmt&) override {
        Expr value = mutate(op->value);
        Var v = fresh(op->var);
        return make_let(v, value, mutate(op->body), op->loc);
    }
    Stmt mutate_for(const ForNode* op, const Stmt&) override {
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        Var v = fresh(op->var);
        return make_for(v, mn, ext, op->for_kind, mutate(op->body), op->loc, op->stages);
    }
    const Buffer* renamed(const Buffer& b) const {
        auto it = buffer_map.find(b.get());
        return it == buffer_map.end() ? nullptr : &it->second;
    }
    Stmt mutate_allocate(const AllocateNode* op, const Stmt& self) override {
        if (!buffers) return IRMutator::mutate_allocate(op, self);
        BufferNode n = *op->buffer;
        Buffer b = make_buffer(std::move(n));
        buffer_map[op->buffer.get()] = b;
        return make_allocate(b, mutate(op->body), op->loc);
    }
    std::vector<Expr> indices(const std::vector<Expr>& in) {
        std::vector<Expr> out;
        for (auto& i : in) out.push_back(mutate(i));
        return out;
    }
    Expr mutate_load(const LoadNode* op, const Expr& self) override {
        const Buffer* b = renamed(op->buffer);
        return b ? make_load(*b, indices(op->indices), op->loc) : IRMutator::mutate_load(op, self);
    }
    Stmt mutate_store(const StoreNode* op, const Stmt& self) override {
        const Buffer* b = renamed(op->buffer);
        return b ? make_store(*b, indices(op->indices), mutate(op->value), op->loc) : IRMutator::mutate_store(op, self);
    }
    Stmt mutate_atomic_rmw(const AtomicRmwNode* op, const Stmt& self) override {
        const Buffer* b = renamed(op->buffer);
        return b ? make_atomic_rmw(op->op, *b, indices(op->indices), mutate(op->value), op->loc)
                 : IRMutator::mutate_atomic_rmw(op, self);
    }
    Stmt mutate_full_write(const FullWriteNode* op, const Stmt& self) override {
        const Buffer* b = renamed(op->buffer);
        return b ? make_full_write(*b, mutate(op->body), op->loc) : IRMutator::mutate_full_write(op, self);
    }
};

}  // namespace

Stmt with_fresh_binders(const Stmt& s) { return FreshBinders{}.mutate(s); }

Stmt with_fresh_binders_and_buffers(const Stmt& s) {
    FreshBinders r;
    r.buffers = true;
    return r.mutate(s);
}

std::optional<Buffer> tma_placeholder(const Stmt& s) {
    // ops/copy_tma.cpp's issue: alloc bar { if (thread 0) { mbarrier_arrive bar; tma_load ... } }
    auto* a = s ? s->as<AllocateNode>() : nullptr;
    auto* i = a ? a->body->as<IfNode>() : nullptr;
    auto* seq = i && !i->else_case ? i->then_case->as<SeqNode>() : nullptr;
    if (!seq || seq->stmts.size() < 2) return std::nullopt;
    auto* arrive = seq->stmts[0]->as<MachineOpNode>();
    if (!arrive || arrive->op != MachineOp::MbarrierArrive) return std::nullopt;
    for (size_t k = 1; k < seq->stmts.size(); ++k) {
        auto* m = seq->stmts[k]->as<MachineOpNode>();
        if (!m || m->op != MachineOp::TmaLoad) return std::nullopt;
    }
    return arrive->dst.at(0)->as<LoadNode>()->buffer;
}

Stmt software_pipeline(const PrimFunc& f, const target::GpuTarget& target) {
    bool allow_ws = true;
    for (auto& [k, v] : f.attrs)
        if (k == "warp_specialize") allow_ws = v != "0" && v != "false";
    Pipeliner p(f.body, f.threads, allow_ws, target);
    Stmt out = p.mutate(f.body);
    DropUnstagedTma drop;
    drop.staged = &p.staged_tma_;
    return drop.mutate(out);
}

}  // namespace tilec::lower
