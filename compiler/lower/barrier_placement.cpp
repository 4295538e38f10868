// Barrier placement (place_barriers; the last step of lower_to_thread_level, after the
// shared-memory plan). The statement lowerings emit no barriers; this pass puts a block
// barrier exactly where a memory hazard between threads needs one, so a kernel pays for
// the orderings it uses rather than one barrier per statement touching shared memory.
//
// Hazard: two accesses, at least one a write (atomics count as writes; two atomics do
// not race), that may touch the same bytes from different threads with no barrier
// between them. Shared memory is compared by byte ranges in the block's arena
// (BufferNode::shared_offset): buffers to which the shared plan gives the same bytes
// conflict like one buffer. A global tensor written and read by one kernel is ordered
// too (bar.sync orders the block's global accesses as well), conservatively: any write
// and read of the same tensor conflict (global footprints are not enumerated).
//
// Same-thread proof: a shared access's footprint is computed by enumeration: for every
// thread index and every value of the loops, lets and guarding conditions the index
// depends on (constant ranges, bounded work), which bytes it touches and whether one
// thread or several touch each byte. Two accesses whose common bytes each belong to one
// and the same thread need no barrier (a thread's own accesses are in program order).
// Anything not enumerable (an index through a load, a run-time loop bound the index
// depends on, too much work) is assumed to touch the whole buffer from every thread.
//
// Placement, a greedy walk in program order keeping the accesses "pending" since the
// last barrier: before a statement whose accesses conflict with a pending one, a
// barrier, and the pending set restarts. Barriers go only where every thread of the
// block reaches them (the simulator and the hardware require it): between statements
// of uniform control flow. A thread-dependent `if` or loop bound (anything depending on
// the thread index, e.g. bounds masks, replica and leader guards, or on a register that
// differs between threads, e.g. a fragment's value) is one indivisible unit: the
// barrier goes before the whole unit. A warp-role split (software-pipeline) is the
// exception: its consumers' branch is walked as the block's own code, the producer's not.
// A uniform `if` or loop whose body conflicts with what is pending before it gets the
// barrier before it (once, not per iteration or per branch). Uniform `if`s walk both
// branches from the same pending set and join their results. A uniform loop walks its
// body again with what the previous iteration left pending (a hazard around the back
// edge: the barrier lands inside the body, before the first access that conflicts)
// until no barrier is added and the pending set is stable.
// Barriers already in the body are dropped first: the pass recomputes all of them.
//
// Stages: software-pipeline indexes a multi-buffered buffer's first dimension with
// (j + c) mod S, j the pipelined loop's variable. Within one iteration, accesses at
// different c touch different stages and never conflict; the pending accesses that
// cross the back edge are the previous iteration's, at (j - 1 + c) mod S, so the walk
// shifts their offsets by one before walking the body again, and forgets the stage
// (the whole buffer again) once the loop is left. That is what lets a double-buffered
// pipeline that stores the next tile into one stage while reading the other run on one
// barrier an iteration rather than two. The pipeline's prologue, a rolled loop over the
// first S - 1 stages, is treated alike (its stage index is a stage, not enumerated), and
// walked once per iteration: it has fewer iterations than stages, so no access of an
// earlier iteration comes back to the stage a later one writes.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/visitor.h"
#include "lower/thread_lower.h"
#include "transform/eval_int.h"
#include "transform/simplify.h"

namespace tilec::lower {

using namespace ir;

namespace {

// Enumerations of a footprint stop (and assume the worst) beyond this many steps:
// enough for every element of a tile's register loops on every thread (the same-thread
// proofs that matter), not for a gemm's k loop around them (reads of many threads'
// elements, which conflict with the writes anyway).
constexpr int64_t kMaxEnumeration = int64_t(1) << 18;
// Rolled loops of at most this many iterations are walked iteration by iteration.
constexpr int64_t kMaxWalkedTrips = 4;

using Binder = transform::AccessBinder;

// Enumerated footprints (BarrierPlacer::footprint) by their key: the thread count where
// the thread index matters, the buffer's shape, the access's span and the programs of its
// indices and binders. The owners are a function of the key alone, so the cache serves
// every kernel of the process (a file's exports share their fills' and epilogues'
// programs): the owners per element, or null where the enumeration gave up.
struct FootprintCache {
    std::mutex mutex;
    std::map<std::vector<int64_t>, std::shared_ptr<const std::vector<int32_t>>> owners;
};

FootprintCache& footprint_cache() {
    static FootprintCache cache;
    return cache;
}

struct MemAccess {
    const BufferNode* buffer = nullptr;
    bool shared = false;
    bool write = false;
    bool atomic = false;
    int64_t lo = 0, hi = 0;  // shared: bytes [lo, hi) of the arena
    int64_t elem = 1;        // bytes per element
    // Shared, when known: per element of the buffer, the thread that touches it, kNone
    // or kSeveral. Unknown: every byte of [lo, hi) by every thread.
    bool known = false;
    std::vector<int32_t> owner;
    // Shared, a stage of a multi-buffered buffer (software-pipeline): dimension
    // `stage_dim` indexed (stage_var + stage_off) mod stage_mod, stage_var a loop's
    // variable. Two accesses of one buffer at the same value of it whose offsets differ
    // modulo stage_mod touch different stages, whatever their other indices.
    const VarNode* stage_var = nullptr;
    int64_t stage_mod = 0, stage_off = 0;
    size_t stage_dim = 0;
    const MemAccess* origin = nullptr;  // the access this one restages (restaged())
    static constexpr int32_t kNone = -2, kSeveral = -1;
    int32_t owner_of_byte(int64_t b) const { return owner[static_cast<size_t>((b - lo) / elem)]; }
};

void free_vars(const Expr& e, std::unordered_set<const VarNode*>& out, bool& has_load) {
    struct V : IRVisitor {
        std::unordered_set<const VarNode*>* out;
        bool* has_load;
        void visit_var(const VarNode* op) override { out->insert(op); }
        void visit_load(const LoadNode* op) override {
            *has_load = true;
            IRVisitor::visit_load(op);
        }
    } v;
    v.out = &out;
    v.has_load = &has_load;
    v.visit(e);
}

using transform::IntProgram;

class BarrierPlacer {
public:
    explicit BarrierPlacer(int64_t threads) : threads_(threads) {}

    Stmt run(const Stmt& body) {
        find_thread_dependent(body);
        struct AsyncProxyReads : IRVisitor {
            bool found = false;
            void visit_machine_op(const MachineOpNode* op) override {
                found |= op->op == MachineOp::Wgmma || op->op == MachineOp::TmaStore;
            }
        } reads;
        reads.visit(body);
        fence_before_barriers_ = reads.found;
        Pending p;
        walk(body, p);
        return rewrite(body, true);
    }

private:
    struct Pending {
        std::vector<const MemAccess*> list;
        std::unordered_set<const MemAccess*> set;
        void add(const MemAccess* a) {
            if (set.insert(a).second) list.push_back(a);
        }
        void add(const Pending& o) {
            for (auto* a : o.list) add(a);
        }
        void clear() {
            list.clear();
            set.clear();
        }
        bool contains(const Pending& o) const {
            for (auto* a : o.list)
                if (!set.count(a)) return false;
            return true;
        }
    };

    // ---- thread dependence -------------------------------------------------------
    bool thread_dependent(const Expr& e) const {
        if (!e) return false;
        struct V : IRVisitor {
            const std::unordered_set<const VarNode*>* td;
            bool found = false;
            void visit_var(const VarNode* op) override {
                if (op->var_kind == VarKind::ThreadIdx || td->count(op)) found = true;
            }
            void visit_call(const CallNode* op) override {
                if (is_warp_shuffle(op->op)) found = true;
                IRVisitor::visit_call(op);
            }
            void visit_load(const LoadNode* op) override {
                if (varying_->count(op->buffer.get())) found = true;
                IRVisitor::visit_load(op);
            }
            const std::unordered_set<const BufferNode*>* varying_;
        } v;
        v.td = &td_vars_;
        v.varying_ = &varying_registers_;
        v.visit(e);
        return v.found;
    }

    // Let and loop variables, and register buffers, whose values differ between
    // threads: what depends on the thread index, a shuffle, or such a variable or
    // register (a fragment's registers; a `var` stays uniform while every store to it
    // is uniform and under uniform control). To a fixed point: a register may be
    // written after it is read.
    void find_thread_dependent(const Stmt& body) {
        struct V : IRVisitor {
            BarrierPlacer* self;
            int divergent = 0;  // enclosing thread-dependent conditions and loops
            bool changed = false;
            void mark(const VarNode* v) { changed |= self->td_vars_.insert(v).second; }
            void visit_let(const LetStmtNode* op) override {
                if (self->thread_dependent(op->value)) mark(op->var.get());
                IRVisitor::visit_let(op);
            }
            void visit_for(const ForNode* op) override {
                bool td = self->thread_dependent(op->min) || self->thread_dependent(op->extent);
                if (td) mark(op->var.get());
                divergent += td;
                IRVisitor::visit_for(op);
                divergent -= td;
            }
            void visit_if(const IfNode* op) override {
                bool td = self->thread_dependent(op->cond);
                divergent += td;
                IRVisitor::visit_if(op);
                divergent -= td;
            }
            void visit_machine_op(const MachineOpNode* op) override {
                for (auto& d : op->dst)
                    if (auto l = expr_as<LoadNode>(d); l && l->buffer->scope == Scope::Register)
                        changed |= self->varying_registers_.insert(l->buffer.get()).second;
                IRVisitor::visit_machine_op(op);
            }
            void visit_store(const StoreNode* op) override {
                if (op->buffer->scope == Scope::Register) {
                    bool td = divergent > 0 || self->thread_dependent(op->value);
                    for (auto& i : op->indices) td = td || self->thread_dependent(i);
                    if (td) changed |= self->varying_registers_.insert(op->buffer.get()).second;
                }
                IRVisitor::visit_store(op);
            }
        } v;
        v.self = this;
        do {
            v.changed = false;
            v.visit(body);
        } while (v.changed);
    }

    // software-pipeline's warp roles: `if (thread.x >= T) { producer } else { consumers }`,
    // the block's T threads all consumers here (split-warp-roles adds the producer
    // warpgroup later and makes the consumers' barriers named barriers of T threads).
    static bool role_split(const Stmt& s) {
        auto* i = s->kind == StmtKind::If ? s->as<IfNode>() : nullptr;
        return i && is_warp_role_split(*i);
    }

    // Statements inside which no barrier may go: the unit is placed around as a whole.
    bool indivisible(const Stmt& s) const {
        switch (s->kind) {
        case StmtKind::If: return !role_split(s) && thread_dependent(s->as<IfNode>()->cond);
        case StmtKind::For: {
            // A parallel loop's registers (thread_lower.cpp): a barrier inside could only
            // order one iteration after another, a race the simulator should report.
            auto* f = s->as<ForNode>();
            return f->for_kind == ForKind::Parallel || thread_dependent(f->min) ||
                   thread_dependent(f->extent);
        }
        case StmtKind::Seq:
        case StmtKind::LetStmt:
        case StmtKind::Allocate:
        case StmtKind::Barrier: return false;
        default: return true;
        }
    }

    // ---- accesses ----------------------------------------------------------------
    // `stage_only`: the access counts as the whole buffer, but for its stage (an
    // ldmatrix's rows other lanes address, in one stage of a multi-buffered tile).
    const MemAccess* access(const Buffer& b, const std::vector<Expr>& indices, bool write, bool atomic,
                            const void* node, int64_t span = 1, const std::vector<Expr>* stage_only = nullptr) {
        if (b->scope != Scope::Shared && b->scope != Scope::Global) return nullptr;
        // The same node under the same binders is the same access (walks repeat).
        std::vector<uintptr_t> key{reinterpret_cast<uintptr_t>(node), uintptr_t(write)};
        for (auto& c : ctx_) key.push_back(reinterpret_cast<uintptr_t>(c.origin) | uintptr_t(c.negated));
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second.get();
        auto a = std::make_unique<MemAccess>();
        a->buffer = b.get();
        a->shared = b->scope == Scope::Shared;
        a->write = write || atomic;
        a->atomic = atomic;
        if (a->shared) footprint(*a, b, indices, span);
        if (a->shared && stage_only && !a->stage_var && b->strides.empty())
            for (size_t d = 0; d < stage_only->size() && d < b->shape.size() && !a->stage_var; ++d)
                if (auto extent = as_const_int(b->shape[d])) stage_of(*a, (*stage_only)[d], d, *extent);
        const MemAccess* out = a.get();
        cache_.emplace(std::move(key), std::move(a));
        return out;
    }

    // Marks in `used` the let and loop binders among ctx_[0, end) that the expressions
    // depend on, transitively, and sets `tx` if they use the thread index; false if they
    // depend on a load or on a value no binder gives.
    bool binders_of(const std::vector<Expr>& exprs, size_t end, std::vector<bool>& used, const VarNode*& tx) const {
        std::unordered_set<const VarNode*> need;
        bool has_load = false;
        for (auto& e : exprs) free_vars(e, need, has_load);
        std::vector<bool> mine(ctx_.size(), false);
        for (size_t k = end; k-- > 0 && !has_load;) {
            const Binder& c = ctx_[k];
            if (c.kind == Binder::Cond || !need.count(c.var)) continue;
            mine[k] = true;
            free_vars(c.a, need, has_load);
            if (c.b) free_vars(c.b, need, has_load);
        }
        if (has_load) return false;
        std::unordered_set<const VarNode*> bound;
        for (size_t k = 0; k < end; ++k)
            if (mine[k]) bound.insert(ctx_[k].var);
        const VarNode* t = nullptr;
        for (auto* v : need) {
            if (bound.count(v)) continue;
            if (v->var_kind != VarKind::ThreadIdx || v->dim != 0) return false;
            t = v;
        }
        for (size_t k = 0; k < end; ++k) used[k] = used[k] || mine[k];
        if (t) tx = t;
        return true;
    }

    // `span`: the access covers that many elements from the indexed one on (a cp.async's
    // 16-byte chunk).
    void footprint(MemAccess& a, const Buffer& b, const std::vector<Expr>& indices, int64_t span = 1) {
        int64_t elem = (b->dtype.bits + 7) / 8;
        std::vector<int64_t> shape;
        int64_t size = 1;
        for (auto& e : b->shape) {
            auto v = as_const_int(e);
            if (!v) TILEC_ICE("barrier placement: shared buffer '" + b->name + "' of non-constant shape");
            shape.push_back(*v);
            size *= *v;
        }
        int64_t base = b->shared_offset;
        if (base < 0) {
            // Not planned (a hand-built body): its own range, apart from every other.
            auto [it, fresh] = unplanned_base_.emplace(b.get(), 0);
            if (fresh) it->second = next_unplanned_ += int64_t(1) << 40;
            base = it->second;
        }
        a.lo = base;
        a.hi = base + size * elem;
        a.elem = elem;
        if (!b->strides.empty() || indices.size() != shape.size()) return;

        // The binders the index depends on; then the conditions around the access
        // that can be evaluated with binders too (masks, replica and leader guards),
        // which narrow the footprint.
        // A dimension whose index cannot be enumerated (the stage of a multi-buffered
        // buffer, (k + 2) % 3 in a loop of run-time length) is a wildcard: the access
        // counts at every value of it, owned as the other dimensions say. Two threads
        // then conflict on an element position in any stage, one thread never with
        // itself (program order), which is what the software pipeline's stages need.
        std::vector<bool> wild(indices.size(), false);
        std::vector<Expr> exact;
        for (size_t d = 0; d < indices.size(); ++d) {
            std::vector<bool> u(ctx_.size(), false);
            const VarNode* t = nullptr;
            bool ok = binders_of({indices[d]}, ctx_.size(), u, t);
            for (size_t k = 0; ok && k < ctx_.size(); ++k)
                if (u[k] && ctx_[k].kind == Binder::Loop && !as_const_int(ctx_[k].b)) ok = false;
            // A rolled loop's stage index (software-pipeline's prologue filling stage s of
            // S - 1 in `for s in rolled(0, S - 1)`) is a stage too, although enumerable:
            // enumerated, each iteration's fill would cover every stage, and the aligned
            // and masked forms of consecutive iterations would conflict in stages neither
            // touches (a barrier an iteration).
            if (ok && !a.stage_var && rolled_stage(indices[d], shape[d])) ok = false;
            wild[d] = !ok;
            if (ok) exact.push_back(indices[d]);
            if (!ok && !a.stage_var) stage_of(a, indices[d], d, shape[d]);
        }
        if (exact.empty()) return;
        std::vector<bool> used(ctx_.size(), false);
        const VarNode* tx = nullptr;
        if (!binders_of(exact, ctx_.size(), used, tx)) return;
        for (size_t k = 0; k < ctx_.size(); ++k) {
            if (ctx_[k].kind != Binder::Cond) continue;
            std::vector<bool> more(ctx_.size(), false);
            const VarNode* cond_tx = nullptr;
            if (!binders_of({ctx_[k].a}, k, more, cond_tx)) continue;
            used[k] = true;
            for (size_t m = 0; m < k; ++m) used[m] = used[m] || more[m];
            if (cond_tx) tx = cond_tx;
        }
        std::vector<const Binder*> binders;
        for (size_t k = 0; k < ctx_.size(); ++k)
            if (used[k]) binders.push_back(&ctx_[k]);

        // Too many points for the budget: known before enumerating them.
        int64_t points = tx ? threads_ : 1;
        for (auto* c : binders)
            if (c->kind == Binder::Loop)
                if (auto ext = as_const_int(c->b); ext && *ext > 0) points *= *ext;
        if (points > kMaxEnumeration) return;
        std::vector<int32_t> owner(static_cast<size_t>(size), MemAccess::kNone);
        // Every expression compiled once, its variables read from slots: slot 0 the
        // thread index, then one per loop and let binder, in order (what each binder's
        // own expressions may read: the slots before its own).
        std::vector<const VarNode*> slot_vars{tx};
        std::vector<IntProgram> first;                  // per binder: its a
        std::vector<std::optional<IntProgram>> extent;  // per binder: a loop's extent
        std::vector<size_t> slot(binders.size(), 0);
        for (size_t k = 0; k < binders.size(); ++k) {
            const Binder& c = *binders[k];
            first.emplace_back(c.a, slot_vars);
            extent.emplace_back();
            if (c.kind == Binder::Loop) extent.back().emplace(c.b, slot_vars);
            if (c.kind != Binder::Cond) {
                slot[k] = slot_vars.size();
                slot_vars.push_back(c.var);
            }
        }
        std::vector<std::optional<IntProgram>> index_programs(indices.size());
        for (size_t d = 0; d < indices.size(); ++d)
            if (!wild[d]) index_programs[d].emplace(indices[d], slot_vars);
        // Accesses written alike (a pipeline's fills in its prologue, its loop and their
        // masked forms; the same tile op unrolled) compile to the same programs under
        // different variables, and so have the same footprint: enumerated once.
        std::vector<int64_t> key{tx ? threads_ : 0, size, span, int64_t(indices.size())};
        key.insert(key.end(), shape.begin(), shape.end());
        for (size_t d = 0; d < indices.size(); ++d) {
            key.push_back(wild[d]);
            if (!wild[d]) index_programs[d]->append_key(key);
        }
        for (size_t k = 0; k < binders.size(); ++k) {
            key.insert(key.end(),
                       {int64_t(binders[k]->kind), int64_t(binders[k]->negated), int64_t(slot[k])});
            first[k].append_key(key);
            if (extent[k]) extent[k]->append_key(key);
        }
        FootprintCache& cache = footprint_cache();
        {
            std::lock_guard<std::mutex> lock(cache.mutex);
            if (auto it = cache.owners.find(key); it != cache.owners.end()) {
                if (!it->second) return;
                a.owner = *it->second;
                a.known = true;
                return;
            }
        }
        // Enumerated below and recorded either way, null where it gives up (a thread that
        // got there first recorded the same).
        auto record = [&](std::shared_ptr<const std::vector<int32_t>> owners) {
            std::lock_guard<std::mutex> lock(cache.mutex);
            cache.owners.emplace(std::move(key), std::move(owners));
        };
        std::vector<int64_t> values(slot_vars.size(), 0);
        std::vector<int64_t> lins, next;
        int64_t work = 0;
        bool ok = true;
        std::function<void(size_t, int32_t)> enumerate = [&](size_t k, int32_t t) {
            if (!ok) return;
            if (++work > kMaxEnumeration) {
                ok = false;
                return;
            }
            if (k == binders.size()) {
                // The linear positions the access touches here (several where a
                // dimension is a wildcard); buffers kept across points.
                lins.assign(1, 0);
                for (size_t d = 0; d < indices.size(); ++d) {
                    if (wild[d]) {
                        next.clear();
                        for (int64_t l : lins)
                            for (int64_t v = 0; v < shape[d]; ++v) next.push_back(l * shape[d] + v);
                        lins.swap(next);
                        continue;
                    }
                    auto v = index_programs[d]->run(values.data());
                    if (!v) {
                        ok = false;
                        return;
                    }
                    if (*v < 0 || *v >= shape[d]) {  // out of bounds: a guard not modelled
                        ok = false;
                        return;
                    }
                    for (int64_t& l : lins) l = l * shape[d] + *v;
                }
                for (int64_t lin : lins) {
                    if (lin + span > size) {
                        ok = false;
                        return;
                    }
                    for (int64_t e = lin; e < lin + span; ++e) {
                        int32_t& o = owner[static_cast<size_t>(e)];
                        if (o == MemAccess::kNone)
                            o = t;
                        else if (o != t)
                            o = MemAccess::kSeveral;
                    }
                }
                return;
            }
            const Binder& c = *binders[k];
            switch (c.kind) {
            case Binder::Cond: {
                auto v = first[k].run(values.data());
                if (v && ((*v != 0) == c.negated)) return;  // this side is not taken
                enumerate(k + 1, t);
                return;
            }
            case Binder::Let: {
                auto v = first[k].run(values.data());
                if (!v) {
                    ok = false;
                    return;
                }
                values[slot[k]] = *v;
                enumerate(k + 1, t);
                return;
            }
            case Binder::Loop: {
                auto mn = first[k].run(values.data());
                auto ext = extent[k]->run(values.data());
                if (!mn || !ext) {
                    ok = false;
                    return;
                }
                for (int64_t i = 0; i < *ext && ok; ++i) {
                    values[slot[k]] = *mn + i;
                    enumerate(k + 1, t);
                }
                return;
            }
            }
        };
        for (int32_t t = 0; t < (tx ? threads_ : 1) && ok; ++t) {
            values[0] = t;
            enumerate(0, tx ? t : MemAccess::kSeveral);
        }
        if (!ok) return record(nullptr);
        a.owner = std::move(owner);
        a.known = true;
        record(std::make_shared<const std::vector<int32_t>>(a.owner));
    }

    // The enclosing loop whose variable v makes `index` a stage index (v + c) mod extent
    // (or c + v), with the offset c; null if it is none.
    const Binder* stage_loop(const Expr& index, int64_t extent, int64_t& c) const {
        auto* mod = index->as<BinaryNode>();
        if (!mod || mod->op != BinaryOp::FloorMod || as_const_int(mod->b) != extent || extent < 2) return nullptr;
        const VarNode* v = nullptr;
        c = 0;
        if (auto* var = mod->a->as<VarNode>()) {
            v = var;
        } else if (auto* sum = mod->a->as<BinaryNode>(); sum && (sum->op == BinaryOp::Add || sum->op == BinaryOp::Sub)) {
            auto* lhs = sum->a->as<VarNode>();
            auto rhs = as_const_int(sum->b);
            if (!lhs && sum->op == BinaryOp::Add) {  // c + v
                lhs = sum->b->as<VarNode>();
                rhs = as_const_int(sum->a);
            }
            if (!lhs || !rhs) return nullptr;
            v = lhs;
            c = sum->op == BinaryOp::Add ? *rhs : -*rhs;
        }
        if (!v) return nullptr;
        for (auto& b : ctx_)
            if (b.kind == Binder::Loop && b.var == v) return &b;
        return nullptr;
    }

    bool rolled_stage(const Expr& index, int64_t extent) const {
        int64_t c = 0;
        const Binder* loop = stage_loop(index, extent, c);
        auto* f = loop ? static_cast<const ForNode*>(loop->origin) : nullptr;
        return f && f->for_kind == ForKind::Rolled;
    }

    // Records in `a` that dimension `d` (of extent `extent`) is a stage index
    // (v + c) mod extent, v the variable of an enclosing loop.
    void stage_of(MemAccess& a, const Expr& index, size_t d, int64_t extent) const {
        int64_t c = 0;
        const Binder* loop = stage_loop(index, extent, c);
        if (!loop) return;
        const VarNode* v = loop->var;
        a.stage_var = v;
        a.stage_mod = extent;
        a.stage_off = ((c % extent) + extent) % extent;
        a.stage_dim = d;
    }

    // `a` as an access of the previous iteration of the loop over `v` (its stage offset
    // one less), or with its stage forgotten (`forget`: the loop is left); `a` itself
    // where its stage does not follow `v`.
    const MemAccess* restaged(const MemAccess* a, const VarNode* v, bool forget) {
        if (a->stage_var != v || !v) return a;
        // Keyed by the original access and the new offset, so that the walk's repeated
        // shifts come back to the same accesses (the pending sets stabilise).
        const MemAccess* base = a->origin ? a->origin : a;
        const int64_t off = forget ? -1 : (a->stage_off + a->stage_mod - 1) % a->stage_mod;
        if (off == base->stage_off) return base;
        auto key = std::make_pair(base, off);
        auto it = restaged_.find(key);
        if (it != restaged_.end()) return it->second.get();
        auto copy = std::make_unique<MemAccess>(*base);
        copy->origin = base;
        if (forget)
            copy->stage_var = nullptr;
        else
            copy->stage_off = off;
        const MemAccess* out = copy.get();
        restaged_.emplace(key, std::move(copy));
        return out;
    }
    Pending restaged(const Pending& p, const VarNode* v, bool forget) {
        Pending out;
        for (auto* a : p.list) out.add(restaged(a, v, forget));
        return out;
    }

    bool conflict(const MemAccess* x, const MemAccess* y) {
        if (!x->write && !y->write) return false;
        if (x->atomic && y->atomic) return false;
        if (x->shared != y->shared) return false;
        // A global tensor: a read and a write of it, as the statement lowerings have
        // always ordered them; two writes of one element from different threads (a
        // kernel storing an element twice) are not ordered.
        if (!x->shared) return x->buffer == y->buffer && (!x->write || !y->write);
        if (x->hi <= y->lo || y->hi <= x->lo) return false;
        if (x->buffer == y->buffer && x->stage_var && x->stage_var == y->stage_var && x->stage_mod == y->stage_mod &&
            x->stage_dim == y->stage_dim && x->stage_off != y->stage_off)
            return false;
        if (!x->known || !y->known) return true;
        auto key = std::make_pair(std::min(x, y), std::max(x, y));
        auto it = conflicts_.find(key);
        if (it != conflicts_.end()) return it->second;
        bool found = false;
        int64_t from = std::max(x->lo, y->lo), to = std::min(x->hi, y->hi);
        // Same layout: element by element; else byte by byte.
        int64_t step = x->lo == y->lo && x->elem == y->elem ? x->elem : 1;
        for (int64_t b = from; b < to && !found; b += step) {
            int32_t p = x->owner_of_byte(b), q = y->owner_of_byte(b);
            if (p == MemAccess::kNone || q == MemAccess::kNone) continue;
            found = p == MemAccess::kSeveral || p != q;
        }
        conflicts_.emplace(key, found);
        return found;
    }

    // The accesses of an expression (loads), in the current context.
    void collect(const Expr& e, std::vector<const MemAccess*>& out) {
        if (!e) return;
        struct V : IRVisitor {
            BarrierPlacer* self;
            std::vector<const MemAccess*>* out;
            void visit_load(const LoadNode* op) override {
                if (auto* a = self->access(op->buffer, op->indices, false, false, op)) out->push_back(a);
                IRVisitor::visit_load(op);
            }
        } v;
        v.self = this;
        v.out = &out;
        v.visit(e);
    }

    // Every access of a statement and what it contains, with their binders.
    void collect(const Stmt& s, std::vector<const MemAccess*>& out) {
        if (!s) return;
        switch (s->kind) {
        case StmtKind::Seq:
            for (auto& c : s->as<SeqNode>()->stmts) collect(c, out);
            return;
        case StmtKind::For: {
            auto* f = s->as<ForNode>();
            collect(f->min, out);
            collect(f->extent, out);
            ctx_.push_back({Binder::Loop, f->var.get(), f->min, f->extent, false, f});
            collect(f->body, out);
            ctx_.pop_back();
            return;
        }
        case StmtKind::If: {
            auto* i = s->as<IfNode>();
            collect(i->cond, out);
            ctx_.push_back({Binder::Cond, nullptr, i->cond, nullptr, false, i});
            collect(i->then_case, out);
            ctx_.back().negated = true;
            collect(i->else_case, out);
            ctx_.pop_back();
            return;
        }
        case StmtKind::LetStmt: {
            auto* l = s->as<LetStmtNode>();
            collect(l->value, out);
            ctx_.push_back({Binder::Let, l->var.get(), l->value, nullptr, false, l});
            collect(l->body, out);
            ctx_.pop_back();
            return;
        }
        case StmtKind::Allocate: collect(s->as<AllocateNode>()->body, out); return;
        case StmtKind::Store: {
            auto* st = s->as<StoreNode>();
            for (auto& i : st->indices) collect(i, out);
            collect(st->value, out);
            if (auto* a = access(st->buffer, st->indices, true, false, st)) out.push_back(a);
            return;
        }
        case StmtKind::AtomicRmw: {
            auto* at = s->as<AtomicRmwNode>();
            for (auto& i : at->indices) collect(i, out);
            collect(at->value, out);
            if (auto* a = access(at->buffer, at->indices, true, true, at)) out.push_back(a);
            return;
        }
        case StmtKind::Evaluate: collect(s->as<EvaluateNode>()->value, out); return;
        case StmtKind::Barrier: return;
        case StmtKind::MachineOp: {
            // ldmatrix reads rows other lanes address, cp.async writes bytes beyond its
            // first element: their shared operands count as the whole buffer, touched by
            // every thread (no footprint), but for a cp.async's or vector_copy's own
            // chunk. Registers are no memory here.
            // An mbarrier is one 8-byte element: its init a plain store (ordered before
            // other threads' use by a barrier), its arrivals, waits and a TMA's
            // complete-tx atomic operations on it, which the mbarrier orders itself
            // (consumers arriving on a stage's empty barrier each k-step need no block
            // barrier between them).
            auto* m = s->as<MachineOpNode>();
            auto is_mbarrier = [&](const Expr& e, bool write) {
                switch (m->op) {
                case MachineOp::MbarrierInit:
                case MachineOp::MbarrierArrive: return write;
                case MachineOp::MbarrierWait: return !write && e == m->src.at(0);
                case MachineOp::TmaLoad: return !write && e == m->src.at(1);
                default: return false;
                }
            };
            auto whole = [&](const Expr& e, bool write) {
                auto l = expr_as<LoadNode>(e);
                if (!l) return collect(e, out);
                for (auto& i : l->indices) collect(i, out);
                bool exact = l->buffer->scope == Scope::Global;
                bool atomic = false;
                // A cp.async writes its chunk only, from its own thread.
                int64_t span = 1;
                // A vector_copy reads and writes its own chunk likewise.
                if ((m->op == MachineOp::CpAsync && write) || m->op == MachineOp::VectorCopy) {
                    exact = true;
                    span = m->imm.at(0) / ((l->buffer->dtype.bits + 7) / 8);
                } else if (is_mbarrier(e, write)) {
                    exact = true;
                    atomic = m->op != MachineOp::MbarrierInit;
                }
                // An ldmatrix reads its stage only, and at once. (Not so a wgmma: its reads
                // stay in flight until its wait_group, after the barrier that follows its
                // issue, so its stage is left whole: the refill of the stage the previous
                // iteration's wgmma read, after that wait, keeps its barrier against the
                // other warpgroup's wgmma, not yet waited for.)
                const bool stage_only = m->op == MachineOp::Ldmatrix;
                if (auto* a = access(l->buffer, exact ? l->indices : std::vector<Expr>{}, write, atomic, l.get(), span,
                                     stage_only ? &l->indices : nullptr))
                    out.push_back(a);
            };
            for (auto& e : m->src) whole(e, false);
            for (auto& e : m->dst) whole(e, true);
            return;
        }
        default: TILEC_ICE("barrier placement: a tile-level statement in thread-level IR");
        }
    }

    bool hazard(const std::vector<const MemAccess*>& accs, const Pending& p) {
        for (auto* a : accs)
            for (auto* q : p.list)
                if (conflict(a, q)) return true;
        return false;
    }

    // Accesses that happen at `s` (its own, before anything inside): a barrier before
    // `s` if one conflicts with a pending access.
    void arrive(const Stmt& s, const std::vector<const MemAccess*>& accs, Pending& p) {
        if (hazard(accs, p)) {
            barrier_before_.insert(s.get());
            p.clear();
        }
        for (auto* a : accs) p.add(a);
    }

    // ---- the walk over uniform control flow -----------------------------------------
    void walk(const Stmt& s, Pending& p) {
        if (!s) return;
        if (barrier_before_.count(s.get())) p.clear();
        if (indivisible(s)) {
            std::vector<const MemAccess*> accs;
            collect(s, accs);
            arrive(s, accs, p);
            return;
        }
        switch (s->kind) {
        case StmtKind::Seq:
            for (auto& c : s->as<SeqNode>()->stmts) walk(c, p);
            return;
        case StmtKind::Barrier: return;  // recomputed
        case StmtKind::Allocate: walk(s->as<AllocateNode>()->body, p); return;
        case StmtKind::LetStmt: {
            auto* l = s->as<LetStmtNode>();
            std::vector<const MemAccess*> accs;
            collect(l->value, accs);
            arrive(s, accs, p);
            ctx_.push_back({Binder::Let, l->var.get(), l->value, nullptr, false, l});
            walk(l->body, p);
            ctx_.pop_back();
            return;
        }
        case StmtKind::If: {
            auto* i = s->as<IfNode>();
            if (role_split(s)) {
                // The consumers' branch is the block's uniform code; the producer's TMA
                // issues are ordered with it by the mbarrier rings, not by barriers (the
                // simulator checks those), and hold none.
                walk(i->else_case, p);
                return;
            }
            std::vector<const MemAccess*> accs;
            collect(i->cond, accs);
            arrive(s, accs, p);
            ctx_.push_back({Binder::Cond, nullptr, i->cond, nullptr, false, i});
            // A hazard of either branch with what precedes: one barrier before the `if`
            // rather than one at the top of each branch (a copy's masked and unmasked
            // paths).
            std::vector<const MemAccess*> inner;
            collect(i->then_case, inner);
            ctx_.back().negated = true;
            collect(i->else_case, inner);
            ctx_.back().negated = false;
            if (!barrier_before_.count(s.get()) && hazard(inner, p)) {
                barrier_before_.insert(s.get());
                p.clear();
            }
            Pending other = p;
            walk(i->then_case, p);
            ctx_.back().negated = true;
            walk(i->else_case, other);
            ctx_.pop_back();
            p.add(other);
            return;
        }
        case StmtKind::For: {
            auto* f = s->as<ForNode>();
            std::vector<const MemAccess*> accs;
            collect(f->min, accs);
            collect(f->extent, accs);
            arrive(s, accs, p);
            ctx_.push_back({Binder::Loop, f->var.get(), f->min, f->extent, false, f});
            // A hazard with what precedes the loop: one barrier before it rather than
            // one per iteration.
            std::vector<const MemAccess*> inner;
            collect(f->body, inner);
            if (!barrier_before_.count(s.get()) && hazard(inner, p)) {
                barrier_before_.insert(s.get());
                p.clear();
            }
            // A rolled loop of a few iterations (software-pipeline's prologue over the
            // stages it fills) is walked once per iteration, each walk after the
            // previous one's pending accesses, restaged one iteration back: exact where
            // the fixed point below would also carry accesses from more iterations back
            // than the loop has, shifted onto the stage the current one writes.
            auto trips = as_const_int(f->extent);
            if (f->for_kind == ForKind::Rolled && trips && *trips >= 1 && *trips <= kMaxWalkedTrips) {
                Pending q = p;
                for (int64_t it = 0; it < *trips; ++it) {
                    if (it) q = restaged(q, f->var.get(), false);
                    walk(f->body, q);
                }
                ctx_.pop_back();
                p = restaged(q, f->var.get(), true);
                return;
            }
            Pending entry = p, back;
            for (;;) {
                Pending q = entry;
                q.add(restaged(back, f->var.get(), false));
                size_t barriers = barrier_before_.size();
                walk(f->body, q);
                bool stable = barriers == barrier_before_.size() && back.contains(q);
                back.add(q);
                if (stable) break;
            }
            ctx_.pop_back();
            // The last iteration's pending accesses (and the entry's, if it may not run).
            auto ext = as_const_int(f->extent);
            if (!ext || *ext <= 0) back.add(entry);
            p = restaged(back, f->var.get(), true);
            return;
        }
        default: TILEC_ICE("barrier placement: unexpected statement");
        }
    }

    // ---- the result ------------------------------------------------------------------
    Stmt rewrite(const Stmt& s, bool uniform) {
        if (!s) return s;
        const bool fenced = after_fence_;
        Stmt out = rewrite_inner(s, uniform && !indivisible(s));
        if (uniform && barrier_before_.count(s.get())) {
            // Where wgmma or TMA stores read shared memory through the async proxy, the
            // stores before a barrier are fenced for it first: a thread's
            // fence.proxy.async orders its own stores, so another thread's later wgmma
            // or TMA store sees them only if the fence precedes the barrier between
            // (MLA decode's q tiles, written by every warpgroup before the loop, were
            // fenced only inside it, after the barrier).
            // (Not again right after the gemm lowering's own fence.proxy.async and
            // wgmma.fence before a wgmma.)
            std::vector<Stmt> seq;
            if (fence_before_barriers_ && !fenced)
                seq.push_back(make_machine_op(MachineOp::FenceProxyAsync, {}, {}, {}, s->loc));
            seq.push_back(make_barrier(s->loc));
            seq.push_back(out);
            out = make_seq(seq, s->loc);
        }
        return out;
    }
    Stmt rewrite_inner(const Stmt& s, bool uniform) {
        switch (s->kind) {
        case StmtKind::Seq: {
            std::vector<Stmt> out;
            const MachineOpNode* prev = nullptr;
            for (auto& c : s->as<SeqNode>()->stmts) {
                if (c->kind == StmtKind::Barrier) continue;
                after_fence_ = prev && (prev->op == MachineOp::FenceProxyAsync || prev->op == MachineOp::WgmmaFence);
                out.push_back(rewrite(c, uniform));
                after_fence_ = false;
                prev = c->as<MachineOpNode>();
            }
            return make_seq(out, s->loc);
        }
        case StmtKind::Barrier: return make_seq({}, s->loc);
        case StmtKind::For: {
            auto* f = s->as<ForNode>();
            return make_for(f->var, f->min, f->extent, f->for_kind, rewrite(f->body, uniform), s->loc);
        }
        case StmtKind::If: {
            auto* i = s->as<IfNode>();
            if (role_split(s)) return make_if(i->cond, rewrite(i->then_case, false), rewrite(i->else_case, uniform), s->loc);
            return make_if(i->cond, rewrite(i->then_case, uniform), rewrite(i->else_case, uniform), s->loc);
        }
        case StmtKind::LetStmt: {
            auto* l = s->as<LetStmtNode>();
            return make_let(l->var, l->value, rewrite(l->body, uniform), s->loc);
        }
        case StmtKind::Allocate: {
            auto* a = s->as<AllocateNode>();
            return make_allocate(a->buffer, rewrite(a->body, uniform), s->loc);
        }
        default: return s;
        }
    }

    int64_t threads_;
    int64_t next_unplanned_ = 0;
    std::unordered_set<const VarNode*> td_vars_;
    std::unordered_set<const BufferNode*> varying_registers_;
    std::vector<Binder> ctx_;
    std::map<std::vector<uintptr_t>, std::unique_ptr<MemAccess>> cache_;
    std::unordered_map<const BufferNode*, int64_t> unplanned_base_;
    std::map<std::pair<const MemAccess*, const MemAccess*>, bool> conflicts_;
    std::map<std::pair<const MemAccess*, int64_t>, std::unique_ptr<MemAccess>> restaged_;
    std::unordered_set<const StmtNode*> barrier_before_;
    bool fence_before_barriers_ = false;
    bool after_fence_ = false;  // the statement being rewritten follows a fence in its sequence
};

}  // namespace

Stmt place_barriers(const Stmt& body, int64_t threads) { return BarrierPlacer(threads).run(body); }

}  // namespace tilec::lower
