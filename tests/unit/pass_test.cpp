// The pass manager: passes run in order over every function, broken IR is reported as
// an internal error naming the pass, and IR dumps and timings appear when asked.
#include <catch2/catch.hpp>

#include <sstream>

#include "ir/ir.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "support/diagnostics.h"
#include "support/source.h"
#include "transform/simplify.h"

using namespace tilec::ir;
using tilec::InternalError;

namespace {

Expr c(int64_t v) {
    return make_int(v);
}

PrimFunc small_func(const std::string& name) {
    PrimFunc f;
    f.name = name;
    f.kernel = "k";
    f.block_idx = make_block_idx_vars();
    Var n = make_size_var("n");
    Buffer Y = make_tensor("Y", DataType::f32(), {n}, Access::Out);
    f.params = {{ParamKind::Tensor, Y, nullptr}, {ParamKind::Size, nullptr, n}};
    f.grid = {c(4)};
    f.threads = 32;
    Var i = make_loop_var("i");
    Expr idx = add(mul(f.block_idx[0], c(32)), add(i, c(0)));
    f.body = make_for(i, c(0), c(32), ForKind::Parallel,
                      make_if(lt(idx, n), make_store(Y, {idx}, make_float(1.0))));
    return f;
}

// A pass that records its name in `log` and returns the function unchanged.
Pass logging_pass(const std::string& name, std::vector<std::string>* log) {
    return Pass{name, [name, log](const PrimFunc& f, PassContext&) {
                    log->push_back(name + ":" + f.name);
                    return f;
                }};
}

// A pass that breaks the IR: a store with an undefined variable.
Pass breaking_pass() {
    return Pass{"breaker", [](const PrimFunc& f, PassContext&) {
                    PrimFunc g = f;
                    Var ghost = make_loop_var("ghost");
                    g.body = make_seq({f.body, make_store(f.params[0].buffer, {ghost}, make_float(0.0))});
                    return g;
                }};
}

}  // namespace

TEST_CASE("pass manager runs passes in order over every function", "[pass]") {
    std::vector<std::string> log;
    PassManager pm;
    pm.add(logging_pass("a", &log));
    pm.add(logging_pass("b", &log));
    PassContext ctx;
    Module m{{small_func("f1"), small_func("f2")}};
    auto out = pm.run(m, ctx);
    REQUIRE(out);
    CHECK(out->funcs.size() == 2);
    CHECK(log == std::vector<std::string>{"a:f1", "b:f1", "a:f2", "b:f2"});
    REQUIRE(pm.timings().size() == 2);
    CHECK(pm.timings()[0].pass == "a");
    CHECK(pm.timings()[0].runs == 2);
}

TEST_CASE("pass manager reports broken IR as an internal error naming the pass", "[pass]") {
    std::vector<std::string> log;
    PassManager pm;
    pm.add(logging_pass("first", &log));
    pm.add(breaking_pass());
    pm.add(logging_pass("never", &log));
    PassContext ctx;
    try {
        pm.run(Module{{small_func("f")}}, ctx);
        FAIL("expected an internal error");
    } catch (const InternalError& e) {
        CHECK(e.pass == "breaker");
        CHECK(std::string(e.what()).find("after pass 'breaker' in function 'f'") != std::string::npos);
        CHECK(std::string(e.what()).find("use of undefined variable 'ghost'") != std::string::npos);
    }
    CHECK(log == std::vector<std::string>{"first:f"});
}

TEST_CASE("pass manager verifies its input", "[pass]") {
    PassManager pm;
    PassContext ctx;
    PrimFunc f = small_func("f");
    f.threads = 0;
    try {
        pm.run(f, ctx);
        FAIL("expected an internal error");
    } catch (const InternalError& e) {
        CHECK(e.pass == "<input>");
    }
}

TEST_CASE("pass manager names the pass of an internal error thrown inside it", "[pass]") {
    PassManager pm;
    pm.add("crasher", [](const PrimFunc&, PassContext&) -> PrimFunc { TILEC_ICE("boom"); });
    PassContext ctx;
    try {
        pm.run(small_func("f"), ctx);
        FAIL("expected an internal error");
    } catch (const InternalError& e) {
        CHECK(e.pass == "crasher");
        CHECK(std::string(e.what()) == "boom");
    }
    // A pass name already set by an inner pass manager is kept.
    PassManager outer;
    outer.add("outer", [](const PrimFunc& f, PassContext& c2) {
        PassManager inner;
        inner.add("inner", [](const PrimFunc&, PassContext&) -> PrimFunc { TILEC_ICE("deep"); });
        return *inner.run(f, c2);
    });
    try {
        outer.run(small_func("f"), ctx);
        FAIL("expected an internal error");
    } catch (const InternalError& e) {
        CHECK(e.pass == "inner");
    }
}

TEST_CASE("pass manager stops when a pass reports a user error", "[pass]") {
    tilec::SourceManager sources;
    std::ostringstream diag_out;
    tilec::DiagnosticEngine diag(sources, diag_out);
    std::vector<std::string> log;
    PassManager pm;
    pm.add("complainer", [](const PrimFunc& f, PassContext& c2) {
        { auto d = c2.diag->error(tilec::SourceRange(), "layout conflict"); }
        return f;
    });
    pm.add(logging_pass("after", &log));
    PassContext ctx;
    ctx.diag = &diag;
    CHECK_FALSE(pm.run(Module{{small_func("f")}}, ctx).has_value());
    CHECK(log.empty());
    CHECK(diag.error_count() == 1);
}

TEST_CASE("pass manager prints the IR after every pass or after one", "[pass]") {
    std::vector<std::string> log;
    std::ostringstream out;
    PassManagerOptions all;
    all.print_after_all = true;
    all.print_stream = &out;
    PassManager pm(all);
    pm.add(logging_pass("one", &log));
    pm.add(logging_pass("two", &log));
    PassContext ctx;
    PrimFunc f = small_func("f");
    pm.run(f, ctx);
    std::string text = print(f);
    CHECK(out.str() == "// ---- IR after one (f) ----\n" + text + "// ---- IR after two (f) ----\n" + text);

    std::ostringstream out2;
    PassManagerOptions one;
    one.print_after = {"two"};
    one.print_stream = &out2;
    PassManager pm2(one);
    pm2.add(logging_pass("one", &log));
    pm2.add(logging_pass("two", &log));
    pm2.run(f, ctx);
    CHECK(out2.str() == "// ---- IR after two (f) ----\n" + text);
}

TEST_CASE("pass manager prints a timing table with every pass", "[pass]") {
    std::vector<std::string> log;
    std::ostringstream out;
    PassManagerOptions opts;
    opts.time_passes = true;
    opts.time_stream = &out;
    PassManager pm(opts);
    pm.add(logging_pass("alpha", &log));
    pm.add(tilec::transform::make_simplify_pass());
    PassContext ctx;
    pm.run(Module{{small_func("f")}}, ctx);
    std::string table = out.str();
    CHECK(table.find("alpha") != std::string::npos);
    CHECK(table.find("simplify") != std::string::npos);
    CHECK(table.find("total") != std::string::npos);
}

TEST_CASE("the simplify pass keeps a function valid and simplifies it", "[pass][simplify]") {
    PassManager pm;
    pm.add(tilec::transform::make_simplify_pass());
    PassContext ctx;
    auto out = pm.run(small_func("f"), ctx);
    REQUIRE(out);
    std::string text = print(*out);
    CHECK(text.find("block.x * 32 + i < n") != std::string::npos);
    CHECK(text.find("+ 0") == std::string::npos);
}

TEST_CASE("pass context options fall back to a default", "[pass]") {
    PassContext ctx;
    ctx.options["target"] = "sm_90a";
    CHECK(ctx.option("target") == "sm_90a");
    CHECK(ctx.option("missing", "x") == "x");
}

// The driver runs the GPU passes of each export on its own thread into a deferred
// engine and replays what it kept afterwards: nothing is printed until then, counts and
// -Werror work as in the engine it came from, and the replay prints exactly what
// reporting directly would have.
TEST_CASE("a deferred diagnostic engine keeps what is reported for a replay", "[pass]") {
    tilec::SourceManager sources;
    uint32_t file = sources.add_file("k.tile", "kernel k() {}\n");
    tilec::SourceRange at(tilec::SourceLoc{file, 1, 8});
    auto report_some = [&](tilec::DiagnosticEngine& e) {
        { auto w = e.warning(at, "unused value"); }
        { auto d = e.error(at, "layout conflict"); d.note(at, "here"); }
    };
    std::ostringstream direct_out, deferred_out, replay_out;
    tilec::DiagnosticEngine direct(sources, direct_out);
    direct.set_warnings_as_errors(true);
    report_some(direct);

    tilec::DiagnosticEngine main(sources, replay_out);
    main.set_warnings_as_errors(true);
    std::vector<tilec::Diagnostic> kept;
    tilec::DiagnosticEngine deferred = main.deferred(kept);
    report_some(deferred);
    CHECK(replay_out.str().empty());
    CHECK(deferred.error_count() == 2);  // the warning counts as an error under -Werror
    REQUIRE(kept.size() == 2);
    CHECK(kept[0].severity == tilec::Severity::Warning);  // promoted again on replay
    CHECK(main.error_count() == 0);
    for (auto& d : kept) main.report(d);
    CHECK(main.error_count() == 2);
    CHECK(replay_out.str() == direct_out.str());
    CHECK(replay_out.str().find("error: unused value") != std::string::npos);

    // The error limit stops the deferred engine where it would stop the direct one, and
    // the replay stops (printing the limit's message) at the same diagnostic.
    main.set_error_limit(1);
    std::vector<tilec::Diagnostic> limited;
    tilec::DiagnosticEngine capped = main.deferred(limited);
    CHECK_THROWS_AS(report_some(capped), tilec::ErrorLimitReached);
    CHECK(limited.size() == 1);
}
