// The GPU pass list (entry: build_gpu_passes): each pass wraps one stage's entry
// function (layout_inference.cpp, thread_lower.cpp, shared_plan.cpp,
// barrier_placement.cpp, verify_thread_level.cpp), checks the level of IR it expects,
// and turns the lowering's exceptions into located diagnostics, so that the stages can
// run one at a time from printed IR (tilec opt) as well as in one go.
#include "lower/gpu_passes.h"

#include <memory>
#include <string>
#include <utility>

#include "ir/visitor.h"
#include "lower/layout_inference.h"
#include "lower/thread_lower.h"
#include "lower/thread_lowering.h"

namespace tilec::lower {

using ir::FuncLevel;
using ir::Pass;
using ir::PassContext;
using ir::PrimFunc;

namespace {

// Reports a user error of `pass` on `f`: through the context's diagnostics (the pass
// manager then stops), or, without them (library callers), as an internal error.
PrimFunc report(const PrimFunc& f, PassContext& ctx, SourceLoc loc, const std::string& msg) {
    if (!ctx.diag) TILEC_ICE("thread-level lowering of '" + f.name + "': " + msg);
    ctx.diag->error(loc.valid() ? loc : f.loc, msg);
    return f;
}

// Runs one lowering step; a construct outside the GPU path's coverage or a user error
// found while lowering (too much shared memory, ...) becomes a located diagnostic.
template <typename Fn>
PrimFunc reporting(const PrimFunc& f, const target::GpuTarget& target, PassContext& ctx, Fn&& step) {
    try {
        return step();
    } catch (const detail::Unsupported& u) {
        return report(f, ctx, u.loc, u.what + " is not supported for GPU targets yet (--target=" + target.name + ")");
    } catch (const detail::UserError& e) {
        return report(f, ctx, e.loc, e.message);
    }
}

// A pass that needs IR of `level` refuses other IR (a pass list given out of order to
// tilec opt) with an error naming what should run first.
bool expect_level(const PrimFunc& f, PassContext& ctx, const char* pass, FuncLevel level, const char* first) {
    if (f.level == level) return true;
    report(f, ctx, f.loc,
           std::string(pass) + " needs " + (level == FuncLevel::Tile ? "tile-level" : "thread-level") +
               " IR, but '" + f.name + "' is " + (f.level == FuncLevel::Tile ? "tile" : "thread") + " level" +
               (first ? std::string(" (run ") + first + " first)" : std::string()));
    return false;
}

// What no block of `target` can hold, refused before layout inference enumerates the
// elements (and the lowering unrolls a register loop over them), which for a fragment of
// 2^31 elements would take hours: a fragment needing more registers per thread than the
// target has (narrow floats live in 32-bit registers, 64-bit values take two), and a
// shared buffer larger than a block's shared memory on its own (the shared-memory plan
// reports the sum of several).
void check_block_capacity(const PrimFunc& f, const target::GpuTarget& target) {
    struct Check : ir::IRVisitor {
        const PrimFunc& f;
        const target::GpuTarget& target;
        Check(const PrimFunc& func, const target::GpuTarget& t) : f(func), target(t) {}
        void visit_allocate(const ir::AllocateNode* op) override {
            const ir::Buffer& b = op->buffer;
            if (b->scope == ir::Scope::Fragment || b->scope == ir::Scope::Shared) {
                // Constant shapes (the frontend's rule for block buffers); a product beyond
                // int64 is beyond any limit too.
                int64_t elements = 1;
                bool huge = false;
                for (auto& d : b->shape) {
                    auto n = ir::as_const_int(d);
                    if (!n || *n < 0) return;
                    if (*n != 0 && elements > INT64_MAX / *n) huge = true;
                    if (!huge) elements *= *n;
                }
                std::string shape = b->dtype.str() + "[" + ops_shape(b) + "]";
                if (b->scope == ir::Scope::Fragment) {
                    int64_t per_thread = huge ? INT64_MAX : (elements + f.threads - 1) / f.threads;
                    int64_t regs =
                        per_thread > INT64_MAX / 2 ? INT64_MAX : per_thread * (b->dtype.bits == 64 ? 2 : 1);
                    if (huge || regs > target.max_registers_per_thread)
                        throw detail::UserError{
                            op->loc, "fragment '" + b->name + "' (" + shape + ") needs " +
                                         (huge ? std::string("more than 2^63") : std::to_string(regs)) +
                                         " registers per thread on " + std::to_string(f.threads) +
                                         " threads, but " + target.name + " has " +
                                         std::to_string(target.max_registers_per_thread) +
                                         " (a block cannot hold it: use smaller tiles or more threads)"};
                } else {
                    int64_t elem_bytes = std::max(1, b->dtype.bits / 8);
                    if (huge || elements > target.max_shared_bytes / elem_bytes)
                        throw detail::UserError{
                            op->loc, "shared buffer '" + b->name + "' (" + shape + ") needs " +
                                         (huge ? std::string("more than 2^63")
                                               : std::to_string(elements * elem_bytes)) +
                                         " bytes, above the " + std::to_string(target.max_shared_bytes) +
                                         " bytes of shared memory per block " + target.name + " allows"};
                }
            }
            ir::IRVisitor::visit_allocate(op);
        }
        static std::string ops_shape(const ir::Buffer& b) {
            std::string out;
            for (auto& d : b->shape) out += (out.empty() ? "" : ", ") + std::to_string(*ir::as_const_int(d));
            return out;
        }
    } check(f, target);
    check.visit(f.body);
}

Pass layout_inference(const target::GpuTarget& target) {
    return Pass{"layout-inference", [target](const PrimFunc& f, PassContext& ctx) {
                    if (!expect_level(f, ctx, "layout-inference", FuncLevel::Tile, nullptr)) return f;
                    bool fits = false;
                    reporting(f, target, ctx, [&] {
                        check_block_capacity(f, target);
                        fits = true;
                        return f;
                    });
                    if (!fits) return f;
                    auto plan = infer_layouts(f, target, ctx.diag);
                    if (!plan) return f;  // a conflict, reported
                    PrimFunc out = f;
                    out.layouts = std::make_shared<const LayoutPlan>(std::move(*plan));
                    return out;
                }};
}

Pass lower_tile_ops(const target::GpuTarget& target) {
    return Pass{"lower-tile-ops", [target](const PrimFunc& f, PassContext& ctx) {
                    if (!expect_level(f, ctx, "lower-tile-ops", FuncLevel::Tile, nullptr)) return f;
                    auto* plan = dynamic_cast<const LayoutPlan*>(f.layouts.get());
                    if (!plan)
                        return report(f, ctx, f.loc,
                                      "lower-tile-ops needs the layouts of '" + f.name +
                                          "' (run layout-inference first)");
                    return reporting(f, target, ctx,
                                     [&] { return detail::ThreadLowering(f, target, *plan).run(); });
                }};
}

Pass plan_shared(const target::GpuTarget& target) {
    return Pass{"plan-shared-memory", [target](const PrimFunc& f, PassContext& ctx) {
                    if (!expect_level(f, ctx, "plan-shared-memory", FuncLevel::Thread, "lower-tile-ops")) return f;
                    return reporting(f, target, ctx, [&] {
                        detail::FullWritesOf writes = detail::take_full_writes(f.body);
                        detail::SharedPlan plan = detail::plan_shared_memory(
                            writes.body, writes.full_writes, target, f.threads, f.name, f.loc);
                        PrimFunc out = f;
                        out.body = plan.body;
                        out.shared_bytes = plan.bytes;
                        out.dynamic_shared = plan.dynamic;
                        return out;
                    });
                }};
}

// A thread-level pass that rewrites the body alone.
Pass body_pass(const char* name, ir::Stmt (*rewrite)(const ir::Stmt&)) {
    return Pass{name, [name, rewrite](const PrimFunc& f, PassContext& ctx) {
                    if (!expect_level(f, ctx, name, FuncLevel::Thread, "lower-tile-ops")) return f;
                    PrimFunc out = f;
                    out.body = rewrite(f.body);
                    return out;
                }};
}

Pass barriers() {
    return Pass{"place-barriers", [](const PrimFunc& f, PassContext& ctx) {
                    if (!expect_level(f, ctx, "place-barriers", FuncLevel::Thread, "lower-tile-ops")) return f;
                    // Hazards are between byte ranges of the arena, which the plan decides.
                    if (!f.shared_bytes)
                        return report(f, ctx, f.loc,
                                      "place-barriers needs the shared-memory plan of '" + f.name +
                                          "' (run plan-shared-memory first)");
                    PrimFunc out = f;
                    out.body = place_barriers(f.body, f.threads);
                    return out;
                }};
}

Pass verify() {
    return Pass{"verify-thread-level", [](const PrimFunc& f, PassContext&) {
                    auto errors = verify_thread_level(f);
                    if (!errors.empty()) {
                        std::string msg = "thread-level IR of '" + f.name + "' is malformed:";
                        for (auto& e : errors) msg += "\n  " + e;
                        TILEC_ICE(msg);
                    }
                    return f;
                }};
}

}  // namespace

std::vector<Pass> build_gpu_passes(const target::GpuTarget& target) {
    return {
        Pass{"overlap-softmax-gemm",
             [t = &target](const PrimFunc& f, PassContext& ctx) {
                 if (!expect_level(f, ctx, "overlap-softmax-gemm", FuncLevel::Tile, nullptr)) return f;
                 return overlap_softmax_gemm(f, *t);
             }},
        layout_inference(target),
        lower_tile_ops(target),
        body_pass("hoist-accumulator-scale", hoist_accumulator_scale),
        body_pass("insert-async-waits", insert_async_waits),
        Pass{"software-pipeline",
             [t = &target](const PrimFunc& f, PassContext& ctx) {
                 if (!expect_level(f, ctx, "software-pipeline", FuncLevel::Thread, "lower-tile-ops")) return f;
                 PrimFunc out = f;
                 out.body = software_pipeline(f, *t);
                 return out;
             }},
        plan_shared(target),
        barriers(),
        Pass{"split-warp-roles", [](const PrimFunc& f, PassContext&) { return split_warp_roles(f); }},
        Pass{"pingpong-consumers", [](const PrimFunc& f, PassContext&) { return pingpong_consumers(f); }},
        Pass{"cluster-multicast", [t = &target](const PrimFunc& f, PassContext&) { return cluster_multicast(f, *t); }},
        Pass{"sink-wgmma-waits", [t = &target](const PrimFunc& f, PassContext&) { return sink_wgmma_waits(f, *t); }},
        verify(),
    };
}

std::optional<PrimFunc> lower_to_thread_level(const PrimFunc& f, const target::GpuTarget& target,
                                              DiagnosticEngine* diag) {
    ir::PassManager pm;
    for (auto& p : build_gpu_passes(target)) pm.add(std::move(p));
    PassContext ctx;
    ctx.diag = diag;
    return pm.run(f, ctx);
}

}  // namespace tilec::lower
