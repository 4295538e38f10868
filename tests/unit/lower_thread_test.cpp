// Thread-level lowering (compiler/lower) on the element-wise kernels: the fragments it
// assigns, registers per thread, the bounds masks of ragged copies, what it refuses, the
// thread-level verifier, and a semantic check: the lowered vector_add, with its threads
// run one after another by the reference interpreter, gives the tile-level answers.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <unordered_map>

#include "interp/interp.h"
#include "support/interp_testing.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "lower/gpu_passes.h"
#include "lower/thread_lower.h"
#include "sim/sim.h"
#include "target/target.h"

using namespace tilec;
using tilec::ir::DataType;

namespace {

const target::GpuTarget& sm80() {
    const auto* t = target::find_gpu_target("sm_80");
    REQUIRE(t != nullptr);
    return *t;
}

const interp::testing::Compiled& compiled(const std::string& path, bool stdlib = true) {
    static std::vector<std::pair<std::string, std::unique_ptr<interp::testing::Compiled>>> cache;
    for (auto& [k, c] : cache)
        if (k == path) return *c;
    auto c = std::make_unique<interp::testing::Compiled>(
        interp::testing::compile_file(stdlib ? interp::testing::stdlib_dir() + "/" + path : path));
    INFO(c->diagnostics);
    REQUIRE(c->ok);
    cache.emplace_back(path, std::move(c));
    return *cache.back().second;
}

const ir::PrimFunc& kernel(const interp::testing::Compiled& c, const std::string& name) {
    const ir::PrimFunc* f = c.find(name);
    INFO("export " << name);
    REQUIRE(f != nullptr);
    return *f;
}

ir::PrimFunc lowered(const ir::PrimFunc& f, const target::GpuTarget* t = nullptr) {
    auto out = lower::lower_to_thread_level(f, t ? *t : sm80(), nullptr);
    REQUIRE(out.has_value());
    auto errs = ir::verify(*out);
    INFO(ir::print(*out));
    for (auto& e : errs) INFO(e);
    REQUIRE(errs.empty());
    REQUIRE(lower::verify_thread_level(*out).empty());
    return *out;
}

struct Census : ir::IRVisitor {
    std::vector<ir::Buffer> registers;
    int barriers = 0, unrolled = 0, ifs = 0, tile_ops = 0, thread_vars = 0;
    void visit_allocate(const ir::AllocateNode* op) override {
        if (op->buffer->scope == ir::Scope::Register) registers.push_back(op->buffer);
        IRVisitor::visit_allocate(op);
    }
    void visit_barrier(const ir::BarrierNode*) override { ++barriers; }
    void visit_for(const ir::ForNode* op) override {
        // A parallel loop's registers stay `parallel` at thread level (unrolled alike).
        if (op->for_kind == ir::ForKind::Unroll || op->for_kind == ir::ForKind::Parallel) ++unrolled;
        IRVisitor::visit_for(op);
    }
    void visit_if(const ir::IfNode* op) override {
        ++ifs;
        IRVisitor::visit_if(op);
    }
    void visit_var(const ir::VarNode* v) override {
        if (v->var_kind == ir::VarKind::ThreadIdx) ++thread_vars;
    }
    void visit_copy(const ir::CopyNode*) override { ++tile_ops; }
    void visit_fill(const ir::FillNode*) override { ++tile_ops; }
};

// Runs a thread-level function in the tile-level interpreter, with GPU semantics for
// block-wide barriers: the body is cut at its top-level barriers into phases, and each
// phase runs every thread in turn (`for t in threads: phase[thread.x := t]`), so all
// threads finish a phase before any starts the next, as a barrier guarantees. Registers
// become a [threads, registers] local buffer, so each thread's survive between phases.
// Barriers must sit in the top-level chain of allocations, lets and sequences (what the
// element-wise lowering produces).
struct PhaseSerializer {
    int64_t threads;
    std::unordered_map<const ir::BufferNode*, ir::Buffer> regs;  // register -> [threads, R] local
    const ir::VarNode* tid = nullptr;
    int phases = 0;

    static bool has_barrier(const ir::Stmt& s) {
        struct F : ir::IRVisitor {
            bool found = false;
            void visit_barrier(const ir::BarrierNode*) override { found = true; }
        } f;
        f.visit(s);
        return f.found;
    }

    // Register accesses r[i] -> r'[thread.x, i]; thread.x is replaced per phase.
    struct Rewrite : ir::IRMutator {
        PhaseSerializer* self;
        ir::Expr mutate_load(const ir::LoadNode* op, const ir::Expr& e) override {
            auto it = self->regs.find(op->buffer.get());
            if (it == self->regs.end()) return ir::IRMutator::mutate_load(op, e);
            std::vector<ir::Expr> idx{self->tid_expr};
            for (auto& i : op->indices) idx.push_back(mutate(i));
            return ir::make_load(it->second, idx, op->loc);
        }
        ir::Stmt mutate_store(const ir::StoreNode* op, const ir::Stmt& st) override {
            auto it = self->regs.find(op->buffer.get());
            if (it == self->regs.end()) return ir::IRMutator::mutate_store(op, st);
            std::vector<ir::Expr> idx{self->tid_expr};
            for (auto& i : op->indices) idx.push_back(mutate(i));
            return ir::make_store(it->second, idx, mutate(op->value), op->loc);
        }
    };
    ir::Expr tid_expr;

    ir::Stmt run_phase(std::vector<ir::Stmt> group) {
        ir::Stmt body = ir::make_seq(std::move(group));
        Rewrite rw;
        rw.self = this;
        body = rw.mutate(body);
        ir::Var t = ir::make_loop_var("t" + std::to_string(phases++));
        ir::VarMap map;
        if (tid) map[tid] = t;
        return ir::make_for(t, ir::make_int(0), ir::make_int(threads), ir::ForKind::Serial, ir::substitute(body, map));
    }

    ir::Stmt chain(const ir::Stmt& s) {
        if (auto a = ir::stmt_as<ir::AllocateNode>(s)) {
            ir::Buffer b = a->buffer;
            if (b->scope == ir::Scope::Register) {
                ir::BufferNode n = *b;
                n.scope = ir::Scope::Local;
                n.shape.insert(n.shape.begin(), ir::make_int(threads));
                ir::Buffer local = ir::make_buffer(std::move(n));
                regs[b.get()] = local;
                b = local;
            }
            return ir::make_allocate(b, chain(a->body), s->loc);
        }
        if (auto l = ir::stmt_as<ir::LetStmtNode>(s)) {
            if (tid) REQUIRE_FALSE(ir::uses_var(l->value, tid));
            return ir::make_let(l->var, l->value, chain(l->body), s->loc);
        }
        std::vector<ir::Stmt> items = {s};
        if (auto q = ir::stmt_as<ir::SeqNode>(s)) items = q->stmts;
        std::vector<ir::Stmt> out, group;
        for (auto& c : items) {
            if (c->is<ir::BarrierNode>()) {
                out.push_back(run_phase(std::move(group)));
                group.clear();
            } else if (has_barrier(c) && (c->is<ir::ForNode>() || c->is<ir::IfNode>())) {
                // A block-uniform loop or branch around barriers (a reduce in a loop over
                // column blocks): every thread takes the same path, so run it once with
                // the phases inside.
                if (!group.empty()) out.push_back(run_phase(std::move(group)));
                group.clear();
                if (auto f = ir::stmt_as<ir::ForNode>(c)) {
                    if (tid) REQUIRE_FALSE((ir::uses_var(f->min, tid) || ir::uses_var(f->extent, tid)));
                    out.push_back(ir::make_for(f->var, f->min, f->extent, ir::ForKind::Serial, chain(f->body), c->loc));
                } else {
                    auto i = ir::stmt_as<ir::IfNode>(c);
                    if (tid) REQUIRE_FALSE(ir::uses_var(i->cond, tid));
                    out.push_back(ir::make_if(i->cond, chain(i->then_case), i->else_case ? chain(i->else_case) : nullptr,
                                              c->loc));
                }
            } else if (has_barrier(c)) {
                REQUIRE((c->is<ir::AllocateNode>() || c->is<ir::LetStmtNode>() || c->is<ir::SeqNode>()));
                if (!group.empty()) out.push_back(run_phase(std::move(group)));
                group.clear();
                out.push_back(chain(c));
            } else {
                group.push_back(c);
            }
        }
        if (!group.empty()) out.push_back(run_phase(std::move(group)));
        return ir::make_seq(out, s->loc);
    }
};

ir::PrimFunc serialize_threads(const ir::PrimFunc& f, int* phases = nullptr) {
    PhaseSerializer ps;
    ps.threads = f.threads;
    struct Find : ir::IRVisitor {
        const ir::VarNode* tid = nullptr;
        void visit_var(const ir::VarNode* v) override {
            if (v->var_kind == ir::VarKind::ThreadIdx) tid = v;
        }
    } find;
    find.visit(f.body);
    ps.tid = find.tid;
    REQUIRE(ps.tid != nullptr);
    // The thread index var as an Expr (a non-owning alias: the lowered function keeps it alive).
    ps.tid_expr = ir::Expr(std::shared_ptr<const ir::ExprNode>(std::shared_ptr<const ir::ExprNode>{}, ps.tid));
    ir::PrimFunc out = f;
    out.body = ps.chain(f.body);
    if (phases) *phases = ps.phases;
    return out;
}

}  // namespace

TEST_CASE("lower: target table holds the listed archs with their warp widths", "[lower][target]") {
    for (const char* n : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
        const auto* t = target::find_gpu_target(n);
        REQUIRE(t != nullptr);
        CHECK(t->vendor == target::Vendor::Nvidia);
        CHECK(t->warp_size == 32);
        CHECK(t->static_shared_bytes == 48 * 1024);
        CHECK(t->ptx_version >= 70);
    }
    CHECK(target::find_gpu_target("sm_90a")->arch_specific);
    CHECK(target::find_gpu_target("sm_90a")->ptx_version >= 80);
    CHECK(target::find_gpu_target("gfx942")->warp_size == 64);
    CHECK(target::find_gpu_target("gfx1100")->warp_size == 32);
    CHECK(target::find_gpu_target("sm_70") == nullptr);
}

TEST_CASE("lower: fragment assignment vectorises by 4 and covers the tile exactly", "[lower]") {
    auto f = lower::assign_fragment({1024}, 128);
    REQUIRE(f.has_value());
    CHECK(f->registers_per_thread() == 8);
    CHECK(f->replicate() == 1);
    CHECK(f->is_exact());
    // Thread 0 holds elements 0..3 (one 16-byte vector of f32), then 512..515.
    CHECK(f->evaluate({3}) == layout::FragmentSlot{0, 3});
    CHECK(f->evaluate({4}) == layout::FragmentSlot{1, 0});
    CHECK(f->evaluate({512}) == layout::FragmentSlot{0, 4});
    // 2-D: the innermost extent decides the vector width.
    auto g = lower::assign_fragment({16, 8}, 32);
    REQUIRE(g.has_value());
    CHECK(g->registers_per_thread() == 4);
    CHECK(g->evaluate({1, 0}) == layout::FragmentSlot{2, 0});
    CHECK(g->is_exact());
    // Too narrow for a full vector per thread: scalars, still exact.
    auto n = lower::assign_fragment({16, 2}, 32);
    REQUIRE(n.has_value());
    CHECK(n->registers_per_thread() == 1);
    CHECK(n->is_exact());
    // A tile smaller than the block: replicas.
    auto s = lower::assign_fragment({64}, 128);
    REQUIRE(s.has_value());
    CHECK(s->replicate() == 2);
    CHECK_FALSE(lower::assign_fragment({100}, 128).has_value());
}

TEST_CASE("lower: vector_add gets registers per thread, an explicit thread index and masks", "[lower]") {
    const auto& c = compiled("kernels/vector_add.tile");
    for (const char* name : {"vector_add_f32", "vector_add_f16", "vector_add_bf16"}) {
        INFO(name);
        ir::PrimFunc t = lowered(kernel(c, name));
        CHECK(lower::is_thread_level(t));
        Census census;
        census.visit(t.body);
        // a and b: 1024 elements over 128 threads = 8 registers each.
        REQUIRE(census.registers.size() == 2);
        for (auto& r : census.registers) {
            CHECK(r->rank() == 1);
            CHECK(ir::is_const_int(r->shape[0], 8));
        }
        CHECK(census.tile_ops == 0);
        CHECK(census.barriers == 0);
        CHECK(census.thread_vars > 0);
        // Three copies, each an unmasked and a masked register loop, plus the parallel loop.
        CHECK(census.unrolled == 7);
        std::string text = ir::print(t);
        INFO(text);
        // The masked path tests each element against N.
        CHECK(text.find("< N") != std::string::npos);
        CHECK(text.find("thread") != std::string::npos);
    }
}

TEST_CASE("lower: saxpy keeps shared memory, with a barrier only where threads meet", "[lower]") {
    const auto& c = compiled(interp::testing::stdlib_dir() + "/../samples/saxpy.tile", false);
    ir::PrimFunc t = lowered(kernel(c, "saxpy_f32"));
    Census census;
    census.visit(t.body);
    CHECK(census.registers.empty());
    // Each thread reads back the shared elements it copied: no barrier for xs and ys;
    // one between the read of y (copy into ys) and its write (copy back).
    CHECK(census.barriers == 1);
}

TEST_CASE("lower: ops outside the GPU path are refused, with their location", "[lower]") {
    auto c = interp::testing::compile_source(
        R"(kernel acc16(X: f16[N], C: inout f16[N]) grid(cdiv(N, 256)) threads(128)
{
    fragment x: f16[256];
    copy(X[block.x * 256], x);
    atomic_add(C[block.x * 256], x);
}
export acc16 as acc16;
)");
    REQUIRE(c.ok);
    // Without diagnostics: an internal error naming the op.
    try {
        (void)lower::lower_to_thread_level(*c.find("acc16"), sm80(), nullptr);
        FAIL("no error");
    } catch (const InternalError& e) {
        std::string msg = e.what();
        CHECK(msg.find("atomic_add into a tensor of f16") != std::string::npos);
        CHECK(msg.find("not supported for GPU targets yet") != std::string::npos);
    }
}

TEST_CASE("lower: atomic_add becomes masked atomics, cumsum a shared scan between barriers", "[lower]") {
    const auto& c = compiled("kernels/gemm_splitk.tile");
    ir::PrimFunc t = lowered(kernel(c, "gemm_splitk_f16"));
    std::string text = ir::print(t);
    INFO(text);
    // An unmasked and a masked register loop of atomic adds into C, nothing stored to C.
    CHECK(text.find("atomic_add C[") != std::string::npos);
    CHECK(text.find("  C[") == std::string::npos);
    const auto& cs = compiled("kernels/cumsum.tile");
    ir::PrimFunc s = lowered(kernel(cs, "cumsum_f32"));
    Census census;
    census.visit(s.body);
    std::string stext = ir::print(s);
    INFO(stext);
    CHECK(stext.find("shared") != std::string::npos);
    CHECK(census.barriers >= 4);
}

TEST_CASE("lower: the thread-level verifier rejects tile-level leftovers", "[lower]") {
    const auto& c = compiled("kernels/vector_add.tile");
    const auto& f = kernel(c, "vector_add_f32");
    auto errs = lower::verify_thread_level(f);
    // Tile level: not thread level, no shared plan, fragments, copies and a parallel loop.
    CHECK(errs.size() >= 4);
}

TEST_CASE("lower: vector_add at thread level, threads run in turn, matches the tile level", "[lower][interp]") {
    const auto& c = compiled("kernels/vector_add.tile");
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> d(-1, 1);
    for (const char* name : {"vector_add_f32", "vector_add_f16", "vector_add_bf16"}) {
        const auto& f = kernel(c, name);
        ir::PrimFunc low = lowered(f);
        int phases = 0;
        ir::PrimFunc serial = serialize_threads(low, &phases);
        CHECK(phases == 1);  // no barrier: one phase
        REQUIRE(ir::verify(serial).empty());
        for (int64_t n : {1, 5, 1024, 1500, 2048 + 3}) {
            INFO(name << " N=" << n);
            std::vector<double> a(n), b(n);
            for (auto& x : a) x = d(rng);
            for (auto& x : b) x = d(rng);
            auto args_for = [&] {
                interp::RunArgs args;
                args.tensors = {{a, {}, {}, {}}, {b, {}, {}, {}}, {std::vector<double>(n, NAN), {}, {}, {}}};
                args.sizes = {n};
                return args;
            };
            auto want = args_for(), got = args_for();
            auto r1 = interp::run(f, want);
            REQUIRE(r1.ok);
            auto r2 = interp::run(serial, got);
            INFO(r2.str());
            REQUIRE(r2.ok);
            for (int64_t i = 0; i < n; ++i) REQUIRE(got.tensors[2].data[i] == want.tensors[2].data[i]);
        }
    }
}

TEST_CASE("lower: saxpy (shared memory, barriers) at thread level matches the tile level", "[lower][interp]") {
    const auto& c = compiled(interp::testing::stdlib_dir() + "/../samples/saxpy.tile", false);
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> d(-2, 2);
    for (const char* name : {"saxpy_f32", "saxpy_f16"}) {
        const auto& f = kernel(c, name);
        // gfx942: plain loads and stores, and the fills' vector_copy, which the
        // interpreter runs as the element copies it is (sm_80's cp.async copies need the
        // simulator, which stdlib/sim and the lit tests run them in).
        ir::PrimFunc low = lowered(f, target::find_gpu_target("gfx942"));
        int phases = 0;
        ir::PrimFunc serial = serialize_threads(low, &phases);
        CHECK(phases == 2);  // copy x, copy y, loop | copy back
        REQUIRE(ir::verify(serial).empty());
        for (int64_t n : {3, 1024, 1025, 3000}) {
            INFO(name << " N=" << n);
            std::vector<double> x(n), y(n);
            for (auto& v : x) v = d(rng);
            for (auto& v : y) v = d(rng);
            auto args_for = [&] {
                interp::RunArgs args;
                args.tensors = {{x, {}, {}, {}}, {y, {}, {}, {}}};
                args.sizes = {n};
                args.scalars = {1.5};
                return args;
            };
            auto want = args_for(), got = args_for();
            REQUIRE(interp::run(f, want).ok);
            auto r = interp::run(serial, got);
            INFO(r.str());
            REQUIRE(r.ok);
            for (int64_t i = 0; i < n; ++i) REQUIRE(got.tensors[1].data[i] == want.tensors[1].data[i]);
        }
    }
}

TEST_CASE("lower: a shared tile smaller than the block (replicas) at thread level matches the tile level",
          "[lower][interp]") {
    auto c = interp::testing::compile_source(R"(
kernel scale2d(X: f32[M, N], Y: out f32[M, N]) grid(cdiv(N, 8), cdiv(M, 8)) threads(128) {
    shared s: f32[8, 8];
    var acc: f32;
    acc = 3.0;
    copy(X[block.y * 8, block.x * 8], s, pad = 1.0);
    for i, j in parallel(8, 8) {
        s[i, j] = s[i, j] * acc + cast<f32>(i);
    }
    copy(s, Y[block.y * 8, block.x * 8]);
}
export scale2d as scale2d;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    const auto& f = c.module.funcs.at(0);
    ir::PrimFunc low = lowered(f);
    INFO(ir::print(low));
    CHECK(ir::print(low).find("if rep == 0") != std::string::npos);
    ir::PrimFunc serial = serialize_threads(low);
    REQUIRE(ir::verify(serial).empty());
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto [m, n] : {std::pair<int64_t, int64_t>{8, 8}, {13, 21}, {1, 3}}) {
        INFO("M=" << m << " N=" << n);
        std::vector<double> x(m * n);
        for (auto& v : x) v = d(rng);
        auto args_for = [&] {
            interp::RunArgs args;
            args.tensors = {{x, {}, {}, {}}, {std::vector<double>(m * n, NAN), {}, {}, {}}};
            args.sizes = {m, n};
            return args;
        };
        auto want = args_for(), got = args_for();
        REQUIRE(interp::run(f, want).ok);
        auto r = interp::run(serial, got);
        INFO(r.str());
        REQUIRE(r.ok);
        for (int64_t i = 0; i < m * n; ++i) REQUIRE(got.tensors[1].data[i] == want.tensors[1].data[i]);
    }
}

// ---- reductions ---------------------------------------------------------------------

namespace {

// Runs f at tile level and its lowering with threads serialised, on the same inputs, and
// compares every tensor: exactly, or within `rel` (relative to max(1, |want|)).
void check_same(const ir::PrimFunc& f, const std::function<interp::RunArgs()>& args_for, double rel = 0) {
    ir::PrimFunc low = lowered(f);
    INFO(ir::print(low));
    auto want = args_for(), got = args_for();
    auto r1 = interp::run(f, want);
    INFO(r1.str());
    REQUIRE(r1.ok);
    // Warp shuffles (reductions) and tensor-core instructions (gemm) need the warp: those
    // run in the simulator, whose f32 arithmetic rounds per operation, hence a tolerance.
    struct HasShuffle : ir::IRVisitor {
        bool found = false;
        void visit_call(const ir::CallNode* op) override {
            found |= ir::is_warp_shuffle(op->op);
            ir::IRVisitor::visit_call(op);
        }
        void visit_machine_op(const ir::MachineOpNode*) override { found = true; }
    } hs;
    hs.visit(low.body);
    if (hs.found) {
        sim::Options o;
        o.target = &sm80();
        auto rs = sim::run(low, got, o);
        INFO(rs.message);
        REQUIRE(rs.ok);
        for (auto& i : rs.issues) FAIL_CHECK(i.str());
        rel = std::max(rel, 1e-5);
    } else {
        ir::PrimFunc serial = serialize_threads(low);
        REQUIRE(ir::verify(serial).empty());
        auto r2 = interp::run(serial, got);
        INFO(r2.str());
        REQUIRE(r2.ok);
    }
    for (size_t t = 0; t < want.tensors.size(); ++t)
        for (size_t i = 0; i < want.tensors[t].data.size(); ++i) {
            double w = want.tensors[t].data[i], g = got.tensors[t].data[i];
            INFO("tensor " << t << " element " << i);
            if (std::isnan(w)) {
                REQUIRE(std::isnan(g));
            } else if (rel == 0) {
                REQUIRE(g == w);
            } else {
                REQUIRE(std::fabs(g - w) <= rel * std::max(1.0, std::fabs(w)));
            }
        }
}

}  // namespace

TEST_CASE("lower: row and column reductions through shared memory match the tile level", "[lower][interp]") {
    auto c = interp::testing::compile_source(R"(
kernel rowops(X: f32[M, N], S: out f32[M], MX: out f32[M], MN: out f32[M, 1], AM: out f32[M],
              CS: out f32[64], Y: out f32[M, N]) grid(cdiv(M, 8)) threads(128) {
    fragment x: f32[8, 64];
    fragment s: f32[8];
    fragment mx: f32[8];
    fragment am: f32[8];
    fragment mn: f32[8, 1];
    fragment col: f32[64];
    copy(X[block.x * 8, 0], x);
    reduce_sum(x, s, dim = 1);
    fill(mx, 5.0);
    reduce_max(x, mx, dim = 1, clear = false);
    reduce_min(x, mn, dim = 1);
    reduce_absmax(x, am, dim = 1);
    reduce_sum(x, col, dim = 0);
    for i, j in parallel(8, 64) {
        x[i, j] = x[i, j] - mx[i] + s[i] * 2.0;
    }
    for i in parallel(8) {
        am[i] = am[i] + s[i];
    }
    copy(x, Y[block.x * 8, 0]);
    copy(s, S[block.x * 8]);
    copy(mx, MX[block.x * 8]);
    copy(mn, MN[block.x * 8, 0]);
    copy(am, AM[block.x * 8]);
    if block.x == 0 {
        copy(col, CS[0]);
    }
}
export rowops as rowops;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    const auto& f = c.module.funcs.at(0);
    {
        ir::PrimFunc low = lowered(f);
        Census census;
        census.visit(low.body);
        // Rows over 16 lanes of one warp: butterfly shuffles, no shared memory; the one
        // reduction whose replicas span warps: shuffles within each warp, then the
        // warps' leaders through a shared scratch, a barrier between their writes and
        // the reads (none after: nothing writes those bytes again).
        CHECK(census.barriers == 1);
        std::string text = ir::print(low);
        INFO(text);
        CHECK(text.find("shared") != std::string::npos);
        CHECK(text.find("shfl_xor") != std::string::npos);
    }
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> d(-8, 8);
    for (auto [m, n] : {std::pair<int64_t, int64_t>{8, 64}, {13, 40}, {3, 64}, {17, 7}}) {
        INFO("M=" << m << " N=" << n);
        std::vector<double> x(m * n);
        for (auto& v : x) v = d(rng);  // integers: every summation order gives the same f32
        check_same(f, [&] {
            interp::RunArgs args;
            args.tensors = {{x, {}, {}, {}},
                            {std::vector<double>(m, NAN), {}, {}, {}},
                            {std::vector<double>(m, NAN), {}, {}, {}},
                            {std::vector<double>(m, NAN), {}, {}, {}},
                            {std::vector<double>(m, NAN), {}, {}, {}},
                            {std::vector<double>(64, NAN), {}, {}, {}},
                            {std::vector<double>(m * n, NAN), {}, {}, {}}};
            args.sizes = {m, n};
            return args;
        });
    }
}

TEST_CASE("lower: a reduction with many rows a thread folds each row once, then every replica reads it",
          "[lower][interp]") {
    // Each row of x spans the 8 warps (256 threads x 4 columns) and each thread holds all
    // 16 rows: 16 rows x 8 warps' partials = 128 loads a thread in one step, so the
    // lowering folds each row in one thread first (reduce.cpp: the two-step gather).
    auto c = interp::testing::compile_source(R"(
kernel rowsum(X: f32[M, N], S: out f32[M], Y: out f32[M, N]) grid(cdiv(M, 16)) threads(256) {
    fragment x: f32[16, 1024];
    fragment s: f32[16];
    copy(X[block.x * 16, 0], x);
    reduce_sum(x, s, dim = 1);
    for i, j in parallel(16, 1024) {
        x[i, j] = x[i, j] - s[i];
    }
    copy(x, Y[block.x * 16, 0]);
    copy(s, S[block.x * 16]);
}
export rowsum as rowsum;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    const auto& f = c.module.funcs.at(0);
    {
        ir::PrimFunc low = lowered(f);
        Census census;
        census.visit(low.body);
        std::string text = ir::print(low);
        INFO(text);
        // Between the partials' writes and the folds, and between the folds and the reads.
        CHECK(census.barriers == 2);
        CHECK(text.find("s_rows") != std::string::npos);
    }
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> d(-8, 8);
    for (auto [m, n] : {std::pair<int64_t, int64_t>{16, 1024}, {21, 1000}, {3, 77}}) {
        INFO("M=" << m << " N=" << n);
        std::vector<double> x(m * n);
        for (auto& v : x) v = d(rng);  // integers: every summation order gives the same f32
        check_same(f, [&] {
            interp::RunArgs args;
            args.tensors = {{x, {}, {}, {}},
                            {std::vector<double>(m, NAN), {}, {}, {}},
                            {std::vector<double>(m * n, NAN), {}, {}, {}}};
            args.sizes = {m, n};
            return args;
        });
    }
}

TEST_CASE("lower: stdlib softmax, rmsnorm and layernorm at thread level match the tile level", "[lower][interp]") {
    std::mt19937 rng(9);
    std::uniform_real_distribution<double> d(-3, 3);
    struct Case {
        const char* file;
        const char* name;
    };
    for (auto [file, name] : {Case{"kernels/softmax.tile", "softmax_f32"}, Case{"kernels/softmax.tile", "softmax_f16"},
                              Case{"kernels/rmsnorm.tile", "rmsnorm_f32"}, Case{"kernels/layernorm.tile", "layernorm_f32"}}) {
        const auto& f = kernel(compiled(file), name);
        for (auto [m, n] : {std::pair<int64_t, int64_t>{4, 1024}, {5, 300}, {3, 2500}}) {
            INFO(name << " M=" << m << " N=" << n);
            std::vector<double> x(m * n);
            for (auto& v : x) v = d(rng);
            check_same(
                f,
                [&] {
                    interp::RunArgs args;
                    for (size_t p = 0; p < f.params.size(); ++p) {
                        const auto& prm = f.params[p];
                        if (prm.kind != ir::ParamKind::Tensor) continue;
                        // X first; weights / biases by their column count; outputs NaN.
                        int64_t len = prm.buffer->rank() == 2 ? m * n : n;
                        std::vector<double> v(len);
                        if (p == 0) {
                            v = x;
                        } else if (prm.buffer->access == ir::Access::Out) {
                            v.assign(len, NAN);
                        } else {
                            for (int64_t i = 0; i < len; ++i) v[i] = 0.5 + 0.25 * static_cast<double>(i) / len;
                        }
                        args.tensors.push_back({v, {}, {}, {}});
                    }
                    args.sizes = {m, n};
                    for (auto& prm : f.params)
                        if (prm.kind == ir::ParamKind::Scalar) args.scalars.push_back(1e-5);
                    return args;
                },
                2e-3);
        }
    }
}

// ---- gemm on CUDA cores ---------------------------------------------------------------

TEST_CASE("lower: gemm on CUDA cores (shared a and b, fragment acc) matches the tile level", "[lower][interp]") {
    auto c = interp::testing::compile_source(R"(
kernel mm<TA: bool = false, TB: bool = false>
    (A: f16[M, K] strides(TA ? 1 : K, TA ? M : 1), B: f16[K, N] strides(TB ? 1 : N, TB ? K : 1),
     C: out f32[M, N]) grid(cdiv(N, 16), cdiv(M, 32)) threads(64) {
    shared a: f16[32, 8];
    shared b: f16[8, 16];
    shared at: f16[8, 32];
    shared bt: f16[16, 8];
    fragment acc: f32[32, 16];
    fill(acc, 1.0);
    for k in range(cdiv(K, 8)) {
        copy(A[block.y * 32, k * 8], a);
        copy(B[k * 8, block.x * 16], b);
        if TA {
            for i, j in parallel(8, 32) { at[i, j] = a[j, i]; }
            if TB {
                for i, j in parallel(16, 8) { bt[i, j] = b[j, i]; }
                gemm(at, bt, acc, trans_a = true, trans_b = true, clear = false);
            } else {
                gemm(at, b, acc, trans_a = true, clear = false);
            }
        } else {
            if TB {
                for i, j in parallel(16, 8) { bt[i, j] = b[j, i]; }
                gemm(a, bt, acc, trans_b = true, clear = false);
            } else {
                gemm(a, b, acc, clear = false);
            }
        }
    }
    copy(acc, C[block.y * 32, block.x * 16]);
}
export mm as mm_nn;
export mm<TA = true> as mm_tn;
export mm<TB = true> as mm_nt;
export mm<TA = true, TB = true> as mm_tt;
)");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> d(-4, 4);
    for (const auto& f : c.module.funcs) {
        for (auto [m, n, k] : {std::array<int64_t, 3>{32, 16, 8}, {45, 19, 21}, {7, 33, 3}}) {
            INFO(f.name << " M=" << m << " N=" << n << " K=" << k);
            std::vector<double> a(m * k), b(k * n);
            for (auto& v : a) v = d(rng);  // small integers: exact in f16 and in any summation order
            for (auto& v : b) v = d(rng);
            check_same(f, [&] {
                interp::RunArgs args;
                args.tensors = {{a, {}, {}, {}}, {b, {}, {}, {}}, {std::vector<double>(m * n, NAN), {}, {}, {}}};
                args.sizes = {m, k, n};
                return args;
            });
        }
    }
}

TEST_CASE("lower: stdlib gemm at thread level matches the tile level", "[lower][interp]") {
    const auto& c = compiled("kernels/gemm.tile");
    std::mt19937 rng(17);
    std::uniform_int_distribution<int> d(-3, 3);
    for (const char* name : {"gemm_f16_m64", "gemm_bf16_tn"}) {
        const auto& f = kernel(c, name);
        {
            ir::PrimFunc low = lowered(f);
            Census census;
            census.visit(low.body);
            CHECK(census.tile_ops == 0);
        }
        int64_t m = 70, n = 9, k = 40;
        INFO(name);
        std::vector<double> a(m * k), b(k * n);
        for (auto& v : a) v = d(rng);
        for (auto& v : b) v = d(rng);
        check_same(f, [&] {
            interp::RunArgs args;
            args.tensors = {{a, {}, {}, {}}, {b, {}, {}, {}}, {std::vector<double>(m * n, NAN), {}, {}, {}}};
            args.sizes = {m, k, n};
            return args;
        });
    }
}
