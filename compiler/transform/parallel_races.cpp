// check-parallel-races: proves, by enumerating the iterations of each `parallel` loop,
// that one iteration reads or writes an element another iteration writes, and refuses
// the kernel at that access. Without it each target resolved such a race its own way
// (the GPU placed a barrier inside the loop, the CPU read the element's old value).
#include "transform/parallel_races.h"

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"
#include "transform/eval_int.h"

namespace tilec::transform {

using namespace ir;

namespace {

// Enumeration budget per parallel loop (iterations times the inner points of every
// access): enough for the tiles kernels use; a loop beyond it is not judged.
constexpr int64_t kMaxWork = int64_t(1) << 21;

using Binder = AccessBinder;

struct Access {
    const BufferNode* buffer;
    const std::vector<Expr>* indices;
    bool write;
    SourceLoc loc;
    std::vector<Binder> binders;
};

using Env = IntEnv;

// The accesses of a parallel loop's body to buffers shared by its iterations (tensors,
// shared and fragment tiles; `local` tiles are per thread), each with its binders.
class AccessCollector : public IRVisitor {
public:
    using IRVisitor::visit;
    std::vector<Access> accesses;

    void visit_load(const LoadNode* op) override {
        record(op->buffer, op->indices, false, op->loc);
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        IRVisitor::visit_store(op);  // the reads of the value and indices come first
        record(op->buffer, op->indices, true, op->loc);
    }
    void visit_let(const LetStmtNode* op) override {
        visit(op->value);
        ctx_.push_back({Binder::Let, op->var.get(), op->value, nullptr});
        visit(op->body);
        ctx_.pop_back();
    }
    void visit_if(const IfNode* op) override {
        visit(op->cond);
        ctx_.push_back({Binder::Cond, nullptr, op->cond, nullptr});
        visit(op->then_case);
        if (op->else_case) {
            ctx_.back().negated = true;
            visit(op->else_case);
        }
        ctx_.pop_back();
    }
    void visit_for(const ForNode* op) override {
        visit(op->min);
        visit(op->extent);
        ctx_.push_back({Binder::Loop, op->var.get(), op->min, op->extent});
        visit(op->body);
        ctx_.pop_back();
    }

private:
    void record(const Buffer& b, const std::vector<Expr>& indices, bool write, SourceLoc loc) {
        if (b->scope == Scope::Local || b->scope == Scope::Register) return;
        accesses.push_back({b.get(), &indices, write, loc, ctx_});
    }
    std::vector<Binder> ctx_;
};

// One parallel nest: its variables, extents and body.
struct Nest {
    std::vector<const VarNode*> vars;
    std::vector<int64_t> extents;
    std::vector<int64_t> mins;
    const ForNode* outer = nullptr;
    Stmt body;
};

class RaceChecker {
public:
    explicit RaceChecker(DiagnosticEngine& diag) : diag_(diag) {}

    void check(const Nest& n) {
        int64_t iterations = 1;
        for (int64_t e : n.extents) iterations *= e;
        AccessCollector c;
        c.visit(n.body);
        nest_ = &n;
        work_ = 0;
        // Every write first, each element with the iteration that writes it; a second
        // iteration writing it races; then the reads.
        struct Writer {
            int64_t iteration;
            const Access* access;
        };
        std::unordered_map<const BufferNode*, std::unordered_map<int64_t, Writer>> writers;
        for (bool writes : {true, false}) {
            for (const Access& a : c.accesses) {
                if (a.write != writes) continue;
                auto& mine = writers[a.buffer];
                bool raced = false;
                bool complete = enumerate(a, iterations, [&](int64_t it, int64_t elem) {
                    auto w = mine.find(elem);
                    if (w == mine.end()) {
                        if (writes) mine.emplace(elem, Writer{it, &a});
                        return true;
                    }
                    if (w->second.iteration == it) return true;
                    report(a, it, elem, *w->second.access, w->second.iteration);
                    raced = true;
                    return false;
                });
                if (raced) {
                    found_ = true;
                    return;
                }
                if (!complete) return;  // over the budget: the loop is not judged
            }
        }
    }

    bool found() const { return found_; }

private:
    // Calls visit(iteration, element) for every instance of `a` that certainly runs and
    // whose element is known, until visit returns false; false if stopped or over budget.
    bool enumerate(const Access& a, int64_t iterations, const std::function<bool(int64_t, int64_t)>& visit) {
        std::vector<int64_t> shape;
        for (auto& e : a.buffer->shape) {
            auto v = as_const_int(e);
            if (!v) return true;  // a tensor's run-time shape: elements are not enumerated
            shape.push_back(*v);
        }
        if (a.indices->size() != shape.size()) return true;
        Env env;
        bool go = true;
        std::function<void(size_t, int64_t)> walk = [&](size_t k, int64_t it) {
            if (!go) return;
            if (++work_ > kMaxWork) {
                go = false;
                return;
            }
            if (k == a.binders.size()) {
                int64_t flat = 0;
                for (size_t d = 0; d < shape.size(); ++d) {
                    auto v = eval_int((*a.indices)[d], env);
                    if (!v || *v < 0 || *v >= shape[d]) return;  // unknown, or out of bounds
                    flat = flat * shape[d] + *v;
                }
                if (!visit(it, flat)) go = false;
                return;
            }
            const Binder& b = a.binders[k];
            switch (b.kind) {
            case Binder::Let: {
                auto v = eval_int(b.a, env);
                if (!v) return walk(k + 1, it);  // uses of it are unknown
                env.emplace_back(b.var, *v);
                walk(k + 1, it);
                env.pop_back();
                return;
            }
            case Binder::Cond: {
                auto v = eval_int(b.a, env);
                if (!v || (*v != 0) == b.negated) return;  // may not run, or does not
                return walk(k + 1, it);
            }
            case Binder::Loop: {
                auto mn = eval_int(b.a, env);
                auto ext = eval_int(b.b, env);
                if (!mn || !ext) return;
                for (int64_t v = 0; v < *ext && go; ++v) {
                    env.emplace_back(b.var, *mn + v);
                    walk(k + 1, it);
                    env.pop_back();
                }
                return;
            }
            }
        };
        for (int64_t it = 0; it < iterations && go; ++it) {
            env.clear();
            int64_t rest = it;
            for (size_t d = nest_->vars.size(); d-- > 0;) {
                env.emplace_back(nest_->vars[d], nest_->mins[d] + rest % nest_->extents[d]);
                rest /= nest_->extents[d];
            }
            walk(0, it);
        }
        return work_ <= kMaxWork;
    }

    std::string iteration_str(int64_t it) const {
        std::vector<std::string> parts(nest_->vars.size());
        for (size_t d = nest_->vars.size(); d-- > 0;) {
            parts[d] = nest_->vars[d]->name + " = " + std::to_string(nest_->mins[d] + it % nest_->extents[d]);
            it /= nest_->extents[d];
        }
        std::string s = "(";
        for (size_t d = 0; d < parts.size(); ++d) s += (d ? ", " : "") + parts[d];
        return s + ")";
    }

    static std::string element_str(const BufferNode* b, int64_t flat) {
        std::vector<int64_t> idx(b->shape.size());
        for (size_t d = idx.size(); d-- > 0;) {
            int64_t n = *as_const_int(b->shape[d]);
            idx[d] = flat % n;
            flat /= n;
        }
        std::string s = b->name + "[";
        for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
        return s + "]";
    }

    void report(const Access& a, int64_t it, int64_t elem, const Access& w, int64_t wit) {
        std::string what = element_str(a.buffer, elem);
        diag_
            .error(a.loc, "race in a parallel loop: iteration " + iteration_str(it) + " " +
                              (a.write ? "writes '" : "reads '") + what + "', which iteration " +
                              iteration_str(wit) +
                              " writes (the iterations of one parallel loop run in no order: " +
                              (a.write ? "give each element one writer"
                                       : "read another iteration's result in a later statement") +
                              ")")
            .note(w.loc, "'" + what + "' written here");
    }

    DiagnosticEngine& diag_;
    const Nest* nest_ = nullptr;
    int64_t work_ = 0;
    bool found_ = false;
};

}  // namespace

bool check_parallel_races(const PrimFunc& f, DiagnosticEngine& diag) {
    RaceChecker checker(diag);
    struct Finder : IRVisitor {
        RaceChecker* checker;
        void visit_for(const ForNode* op) override {
            if (op->for_kind != ForKind::Parallel) return IRVisitor::visit_for(op);
            Nest n;
            n.outer = op;
            const ForNode* l = op;
            while (true) {
                auto mn = as_const_int(l->min);
                auto ext = as_const_int(l->extent);
                if (!mn || !ext || *ext <= 0) return;  // refused elsewhere
                n.vars.push_back(l->var.get());
                n.mins.push_back(*mn);
                n.extents.push_back(*ext);
                n.body = l->body;
                auto* inner = l->body->as<ForNode>();
                if (!inner || inner->for_kind != ForKind::Parallel) break;
                l = inner;
            }
            int64_t iterations = 1;
            for (int64_t e : n.extents) {
                if (e > kMaxWork / iterations) return;
                iterations *= e;
            }
            checker->check(n);
        }
    } finder;
    finder.checker = &checker;
    finder.visit(f.body);
    return !checker.found();
}

Pass make_parallel_race_check_pass() {
    return Pass{"check-parallel-races", [](const PrimFunc& f, PassContext& ctx) {
                    if (ctx.diag) check_parallel_races(f, *ctx.diag);
                    return f;
                }};
}

}  // namespace tilec::transform
