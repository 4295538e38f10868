// The pass manager: runs passes in order, verifies after each, and makes every stage
// visible (IR dumps, timings), so a broken pass is caught and named where it breaks.
#include "ir/pass.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "ir/printer.h"
#include "ir/verifier.h"

namespace tilec::ir {

std::string PassContext::option(const std::string& key, const std::string& fallback) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : it->second;
}

void verify_or_throw(const PrimFunc& f, const std::string& pass) {
    auto errors = verify(f);
    if (errors.empty()) return;
    std::string msg = "IR verification failed after pass '" + pass + "' in function '" + f.name + "':";
    for (const auto& e : errors) msg += "\n  " + e;
    try {
        TILEC_ICE(msg);
    } catch (InternalError& err) {
        err.pass = pass;
        throw;
    }
}

void PassManager::add(Pass pass) {
    TILEC_CHECK(static_cast<bool>(pass.run), "pass '" + pass.name + "' has no function");
    if (std::none_of(timings_.begin(), timings_.end(), [&](const Timing& t) { return t.pass == pass.name; }))
        timings_.push_back(Timing{pass.name, {}, 0});
    passes_.push_back(std::move(pass));
}

void PassManager::add(std::string name, std::function<PrimFunc(const PrimFunc&, PassContext&)> run) {
    add(Pass{std::move(name), std::move(run)});
}

bool PassManager::should_print(const std::string& pass) const {
    if (options_.print_after_all) return true;
    return std::find(options_.print_after.begin(), options_.print_after.end(), pass) !=
           options_.print_after.end();
}

std::optional<PrimFunc> PassManager::run_one(const PrimFunc& input, PassContext& ctx) {
    if (options_.verify) verify_or_throw(input, "<input>");
    PrimFunc f = input;
    for (const auto& pass : passes_) {
        unsigned errors_before = ctx.diag ? ctx.diag->error_count() : 0;
        auto start = std::chrono::steady_clock::now();
        try {
            f = pass.run(f, ctx);
        } catch (InternalError& err) {
            if (err.pass.empty()) err.pass = pass.name;
            throw;
        }
        auto elapsed = std::chrono::steady_clock::now() - start;
        for (auto& t : timings_) {
            if (t.pass == pass.name) {
                t.time += std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed);
                t.runs += 1;
            }
        }
        if (ctx.diag && ctx.diag->error_count() > errors_before) return std::nullopt;
        if (should_print(pass.name)) {
            std::ostream& os = options_.print_stream ? *options_.print_stream : std::cerr;
            os << "// ---- IR after " << pass.name << " (" << f.name << ") ----\n" << print(f);
            os.flush();
        }
        if (options_.verify) verify_or_throw(f, pass.name);
    }
    return f;
}

std::optional<PrimFunc> PassManager::run(const PrimFunc& f, PassContext& ctx) {
    auto out = run_one(f, ctx);
    if (options_.time_passes) print_timings(options_.time_stream ? *options_.time_stream : std::cerr);
    return out;
}

std::optional<Module> PassManager::run(const Module& m, PassContext& ctx) {
    Module out;
    bool ok = true;
    for (const auto& f : m.funcs) {
        auto g = run_one(f, ctx);
        if (!g) {
            ok = false;
            break;
        }
        out.funcs.push_back(std::move(*g));
    }
    if (options_.time_passes) print_timings(options_.time_stream ? *options_.time_stream : std::cerr);
    if (!ok) return std::nullopt;
    return out;
}

void PassManager::print_timings(std::ostream& os) const {
    std::chrono::nanoseconds total{0};
    size_t width = 4;
    for (const auto& t : timings_) {
        total += t.time;
        width = std::max(width, t.pass.size());
    }
    auto ms = [](std::chrono::nanoseconds ns) { return static_cast<double>(ns.count()) / 1e6; };
    char buf[256];
    os << "===-- pass timing (wall) --===\n";
    std::snprintf(buf, sizeof buf, "  %-*s %12s %8s %6s\n", static_cast<int>(width), "pass", "ms", "%",
                  "runs");
    os << buf;
    for (const auto& t : timings_) {
        double pct = total.count() > 0
                         ? 100.0 * static_cast<double>(t.time.count()) / static_cast<double>(total.count())
                         : 0.0;
        std::snprintf(buf, sizeof buf, "  %-*s %12.3f %7.1f%% %6d\n", static_cast<int>(width), t.pass.c_str(),
                      ms(t.time), pct, t.runs);
        os << buf;
    }
    std::snprintf(buf, sizeof buf, "  %-*s %12.3f %7.1f%%\n", static_cast<int>(width), "total", ms(total),
                  100.0);
    os << buf;
}

}  // namespace tilec::ir
