// Layout inference (compiler/lower/layout_inference.cpp) and the Fragment operations it
// rests on: expand_dim is the converse of reduce_dim; every fragment and loop of every
// stdlib kernel gets a complete, injective Fragment; FlashAttention's alpha[BM], made by
// reducing s[BM, BN], rescales o[BM, D] (D != BN) from its own registers; conflicting
// uses are a located error with notes at both uses.
#include <catch2/catch.hpp>

#include <sstream>

#include "support/interp_testing.h"
#include "ir/visitor.h"
#include "layout/fragment.h"
#include "layout/index_expr.h"
#include "lower/layout_inference.h"
#include "lower/thread_lower.h"
#include "target/target.h"

using namespace tilec;

namespace {

const target::GpuTarget& gpu(const char* name) {
    const auto* t = target::find_gpu_target(name);
    REQUIRE(t != nullptr);
    return *t;
}

// Every parallel loop nest's outer loop and every fragment buffer of a function.
struct Census : ir::IRVisitor {
    std::vector<const ir::ForNode*> loops;
    std::vector<const ir::BufferNode*> fragments;
    void visit_for(const ir::ForNode* op) override {
        if (op->for_kind == ir::ForKind::Parallel) {
            loops.push_back(op);
            const ir::ForNode* f = op;
            while (auto* inner = f->body->as<ir::ForNode>()) {
                if (inner->for_kind != ir::ForKind::Parallel) break;
                f = inner;
            }
            return IRVisitor::visit(f->body);
        }
        IRVisitor::visit_for(op);
    }
    void visit_allocate(const ir::AllocateNode* op) override {
        if (op->buffer->scope == ir::Scope::Fragment) fragments.push_back(op->buffer.get());
        IRVisitor::visit_allocate(op);
    }
};

// Injective, or (with replicas) every element's replicas in distinct threads and
// distinct slots: is_injective covers both.
void check_fragment(const layout::Fragment& F, const std::string& what) {
    INFO(what << ": " << F.str());
    CHECK(F.is_complete());
    CHECK(F.is_injective());
    CHECK(F.inverse().has_value());
}

}  // namespace

TEST_CASE("layout: expand_dim is the converse of reduce_dim", "[layout]") {
    struct Case {
        std::vector<int64_t> shape;
        int64_t threads, vec;
        size_t dim;
        int64_t new_extent;
    };
    std::vector<Case> cases = {{{64, 64}, 128, 4, 1, 64},  {{64, 64}, 128, 4, 1, 128}, {{64, 32}, 128, 4, 1, 64},
                               {{64, 128}, 128, 4, 1, 64}, {{16, 256}, 256, 1, 1, 8}, {{128, 8}, 128, 4, 1, 16},
                               {{32, 64}, 128, 2, 0, 64}, {{64, 64}, 256, 4, 1, 32}};
    for (const auto& c : cases) {
        auto F = layout::Fragment::parallel(c.shape, c.threads, c.vec);
        REQUIRE(F);
        for (bool keep : {false, true}) {
            auto G = F->reduce_dim(c.dim, keep);
            REQUIRE(G);
            auto E = G->expand_dim(c.dim, c.new_extent, keep);
            INFO(F->str() << "\nreduced " << G->str() << "\nexpanded to " << c.new_extent << " keep " << keep);
            REQUIRE(E);
            std::vector<int64_t> want = c.shape;
            want[c.dim] = c.new_extent;
            CHECK(E->shape() == want);
            check_fragment(*E, "expanded");
            auto back = E->reduce_dim(c.dim, keep);
            REQUIRE(back);
            CHECK(back->same_slots(*G));
            // The replicas became the new dimension's chunks: fewer (or no) replicas.
            CHECK(E->replicate() <= G->replicate());
            // Expanding back to the original extent gives a layout the original's
            // reduction cannot tell apart from it.
            if (c.new_extent == c.shape[c.dim]) CHECK(E->reduce_dim(c.dim, keep)->same_slots(*G));
        }
    }
}

TEST_CASE("layout: same_slots compares what is held where, not the expressions", "[layout]") {
    auto F = layout::Fragment::parallel({64, 64}, 128, 4);
    auto G = layout::Fragment::parallel({64, 64}, 128, 2);
    REQUIRE(F);
    REQUIRE(G);
    CHECK(F->same_slots(*F));
    CHECK_FALSE(F->same_slots(*G));
    // The same map spelt as expressions.
    auto H = layout::Fragment::from_exprs("by hand", {64, 64}, 128, 1, [&](const auto& v, const auto&) {
        return F->apply({v[0], v[1]}, ir::make_int(0));
    });
    CHECK(F->same_slots(H));
    // Asked again, now from each fragment's table of owners kept from the first time, and
    // of a copy (which shares that table), the answers stay; a fragment derived from F
    // with a different map has a table of its own.
    layout::Fragment F2 = *F;
    CHECK(F2.same_slots(H));
    CHECK(H.same_slots(F2));
    CHECK_FALSE(G->same_slots(F2));
    CHECK_FALSE(H.same_slots(*G));
    auto R = F->reduce_dim(1, true);
    auto S = G->reduce_dim(1, true);
    REQUIRE(R);
    REQUIRE(S);
    CHECK(R->same_slots(*R));
    CHECK(R->same_slots(*S) == S->same_slots(*R));
    CHECK(F->same_slots(H));
}

TEST_CASE("lower: layout inference gives every stdlib fragment and loop a complete injective fragment",
          "[lower][layout]") {
    const char* files[] = {"kernels/vector_add.tile", "kernels/activations.tile", "kernels/softmax.tile",
                           "kernels/rmsnorm.tile",    "kernels/layernorm.tile",   "kernels/gemm.tile",
                           "kernels/gemm_splitk.tile", "kernels/cumsum.tile",     "kernels/flash_attn.tile"};
    for (const char* file : files) {
        auto c = interp::testing::compile_file(interp::testing::stdlib_dir() + "/" + file);
        INFO(file << "\n" << c.diagnostics);
        REQUIRE(c.ok);
        for (const ir::PrimFunc& f : c.module.funcs) {
            for (const char* t : {"sm_80", "gfx942"}) {
                INFO(f.name << " on " << t);
                auto plan = lower::infer_layouts(f, gpu(t), nullptr);
                REQUIRE(plan);
                Census census;
                census.visit(f.body);
                for (auto* b : census.fragments) {
                    const layout::Fragment* F = plan->fragment(b);
                    INFO("fragment " << b->name);
                    REQUIRE(F != nullptr);
                    check_fragment(*F, b->name);
                }
                for (auto* l : census.loops) {
                    const layout::Fragment* F = plan->loop(l);
                    INFO("loop at line " << l->loc.line);
                    REQUIRE(F != nullptr);
                    check_fragment(*F, "loop");
                }
            }
        }
    }
}

TEST_CASE("lower: flash attention's alpha[BM] rescales o[BM, D] from the reducing threads' registers",
          "[lower][layout]") {
    auto c = interp::testing::compile_file(interp::testing::stdlib_dir() + "/kernels/flash_attn.tile");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    for (const char* name : {"attn_fwd", "attn_fwd_d64"}) {
        const ir::PrimFunc* f = c.find(name);
        REQUIRE(f != nullptr);
        auto plan = lower::infer_layouts(*f, gpu("sm_80"), nullptr);
        REQUIRE(plan);
        std::map<std::string, const layout::Fragment*> by_name;
        for (const auto& [b, F] : plan->fragments) by_name[b->name] = &F;
        for (const char* n : {"s", "o", "m", "l", "alpha"}) REQUIRE(by_name.count(n));
        const auto &s = *by_name["s"], &o = *by_name["o"], &alpha = *by_name["alpha"], &m = *by_name["m"];
        INFO("s " << s.str() << "\no " << o.str() << "\nalpha " << alpha.str());
        if (std::string(name) == "attn_fwd") CHECK(s.shape() != o.shape());  // [64, 64] and [64, 128]
        CHECK(s.reduce_dim(1)->same_slots(m));
        CHECK(alpha.same_slots(m));
        // o's rows are where alpha's are: its reduction over D is alpha's layout.
        CHECK(o.reduce_dim(1)->same_slots(alpha));
        CHECK(o.replicate() == 1);
        CHECK(o.is_exact());
        // Every parallel loop over [BM, D] (rescale_rows, normalize_rows) has o's layout.
        int wide = 0;
        for (const auto& [l, F] : plan->loops)
            if (F.shape() == o.shape()) {
                ++wide;
                CHECK(F.same_slots(o));
            }
        CHECK(wide >= 2);
    }
}

TEST_CASE("lower: layout inference reports conflicting uses at both places", "[lower][layout]") {
    // m is x's row max, q its column max; the loop over [32, 64] reads q[i] (so it is
    // laid out as q expanded over j) and m[j], which that layout holds elsewhere.
    const char* src = R"(kernel k(A: f32[64, 32], B: out f32[32, 64]) grid(1) threads(128)
{
    fragment x: f32[64, 32];
    fragment m: f32[64];
    fragment q: f32[32];
    fragment y: f32[32, 64];
    copy(A[0, 0], x);
    reduce_max(x, m, dim = 1);
    reduce_max(x, q, dim = 0);
    for i, j in parallel(32, 64) {
        y[i, j] = q[i] + m[j];
    }
    copy(y, B[0, 0]);
}
export k as k;
)";
    auto c = interp::testing::compile_source(src, {}, "conflict.tile");
    INFO(c.diagnostics);
    REQUIRE(c.ok);
    const ir::PrimFunc* f = c.find("k");
    REQUIRE(f != nullptr);
    std::ostringstream out;
    DiagnosticEngine diag(*c.sources, out);
    auto plan = lower::infer_layouts(*f, gpu("sm_80"), &diag);
    CHECK_FALSE(plan);
    std::string text = out.str();
    INFO(text);
    CHECK(text.find("conflict.tile:11:26: error: conflicting layouts for fragment 'm': the read of 'm' in the "
                    "parallel loop over [32, 64] wants") != std::string::npos);
    CHECK(text.find("conflict.tile:8:5: note: fragment 'm' gets its layout from the reduce of 'x' into 'm'") !=
          std::string::npos);
    CHECK(text.find("note: copy 'm' into a shared buffer between the two uses") != std::string::npos);
}
