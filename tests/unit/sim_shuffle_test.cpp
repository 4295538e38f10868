// Warp shuffles in thread-level IR (ir.h, CallOp::ShflXor ...) run by the simulator on
// both warp widths: the IR's definition of each shuffle (the same results through PTX
// shfl.sync on sm_80 and through ds_bpermute on gfx942 / gfx1100), every value type
// (16-bit extended, 64-bit in halves), a butterfly reduction bit-identical in every
// lane, and the contract's violations reported with their line; the verifier keeps
// shuffles out of tile-level functions and conditional expressions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "interp/float_formats.h"
#include "interp/interp.h"
#include "ir/verifier.h"
#include "sim/sim.h"
#include "target/target.h"

using namespace tilec;
using ir::DataType;

namespace {

const target::GpuTarget& gpu(const char* name) {
    const auto* t = target::find_gpu_target(name);
    REQUIRE(t);
    return *t;
}

SourceLoc line(uint32_t l, uint32_t c = 5) {
    return SourceLoc{0, l, c};
}

// A thread-level function of `threads` threads and one block: X (in) and Y (out), `n`
// elements of `t` each.
struct Kernel {
    ir::Var tx = ir::make_thread_idx_var(0);
    ir::Buffer x, y;
    ir::PrimFunc f;
    Kernel(int64_t threads, DataType t, int64_t n = 1024) {
        x = ir::make_tensor("X", t, {ir::make_int(n)}, ir::Access::In);
        y = ir::make_tensor("Y", t, {ir::make_int(n)}, ir::Access::Out);
        f.name = "shuffles";
        f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
        f.grid = {ir::make_int(1)};
        f.threads = threads;
        f.block_idx = ir::make_block_idx_vars();
        f.level = ir::FuncLevel::Thread;
    }
    ir::Expr lane(int warp) const { return ir::floormod(tx, ir::make_int(warp)); }
    ir::Expr load() const { return ir::make_load(x, {tx}); }
    // Y[tx] = value.
    ir::Stmt store(ir::Expr value, SourceLoc loc = line(3)) { return ir::make_store(y, {tx}, std::move(value), loc); }
    // Runs `body` with X given as doubles (floats) or ints; returns Y.
    sim::Result run(ir::Stmt body, const char* arch, const std::vector<double>& xs, std::vector<double>& ys) {
        f.body = std::move(body);
        REQUIRE(ir::verify(f).empty());
        interp::RunArgs a;
        a.tensors.resize(2);
        a.tensors[0].data = xs;
        a.tensors[0].data.resize(1024, 0.0);
        a.tensors[1].data.assign(1024, std::nan(""));
        sim::Options o;
        o.target = &gpu(arch);
        auto r = sim::run(f, a, o);
        ys = a.tensors[1].data;
        return r;
    }
    sim::Result run_ints(ir::Stmt body, const char* arch, const std::vector<int64_t>& xs, std::vector<int64_t>& ys) {
        f.body = std::move(body);
        REQUIRE(ir::verify(f).empty());
        interp::RunArgs a;
        a.tensors.resize(2);
        a.tensors[0].ints = xs;
        a.tensors[0].ints.resize(1024, 0);
        a.tensors[1].ints.assign(1024, 0);
        sim::Options o;
        o.target = &gpu(arch);
        auto r = sim::run(f, a, o);
        ys = a.tensors[1].ints;
        return r;
    }
};

ir::Expr i32(int64_t v) {
    return ir::make_int(v, DataType::i32());
}

std::string issues_str(const sim::Result& r) {
    std::string s;
    for (auto& i : r.issues) s += i.str() + "\n";
    return s;
}

// The source lane of `op` in `lane` with operand `m`, as ir.h defines it.
int source_lane(ir::CallOp op, int lane, int m, int warp) {
    switch (op) {
    case ir::CallOp::ShflXor: return lane ^ m;
    case ir::CallOp::ShflUp: return lane - m < 0 ? lane : lane - m;
    case ir::CallOp::ShflDown: return lane + m >= warp ? lane : lane + m;
    default: return m;
    }
}

const char* const kArchs[] = {"sm_80", "gfx942", "gfx1100"};

}  // namespace

TEST_CASE("sim shuffle: xor, up, down and idx give each lane its source lane's value", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        const int warp = gpu(arch).warp_size;
        for (auto op : {ir::CallOp::ShflXor, ir::CallOp::ShflUp, ir::CallOp::ShflDown, ir::CallOp::ShflIdx}) {
            for (int m : {0, 1, 5, warp / 2, warp - 1}) {
                INFO(arch << " " << ir::call_op_name(op) << " " << m);
                Kernel k(128, DataType::f32());
                std::vector<double> xs(128), ys;
                for (int t = 0; t < 128; ++t) xs[t] = 0.5 * t - 7;
                auto r = k.run(k.store(ir::make_shuffle(op, k.load(), i32(m), line(3, 9))), arch, xs, ys);
                REQUIRE(r.ok);
                CHECK(issues_str(r).empty());
                for (int t = 0; t < 128; ++t) {
                    int lane = t % warp, base = t - lane;
                    REQUIRE(ys[t] == xs[base + source_lane(op, lane, m, warp)]);
                }
            }
        }
        // A lane operand that differs per lane: idx from a rotating source.
        Kernel k(128, DataType::f32());
        std::vector<double> xs(128), ys;
        for (int t = 0; t < 128; ++t) xs[t] = t;
        ir::Expr src = ir::make_cast(DataType::i32(), ir::floormod(ir::add(k.tx, ir::make_int(3)), ir::make_int(warp)));
        auto r = k.run(k.store(ir::make_shuffle(ir::CallOp::ShflIdx, k.load(), src)), arch, xs, ys);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        for (int t = 0; t < 128; ++t) CHECK(ys[t] == t - t % warp + (t % warp + 3) % warp);
    }
}

TEST_CASE("sim shuffle: a butterfly sum over the warp is bit-identical in every lane", "[sim][shuffle]") {
    std::mt19937 gen(11);
    std::uniform_real_distribution<double> dist(-1, 1);
    for (const char* arch : kArchs) {
        const int warp = gpu(arch).warp_size;
        INFO(arch);
        Kernel k(256, DataType::f32());
        std::vector<double> xs(256), ys;
        for (auto& v : xs) v = static_cast<double>(static_cast<float>(dist(gen) * 100));
        // let v = X[tx]; v = v + shfl_xor(v, W/2); ...; v = v + shfl_xor(v, 1); Y[tx] = v
        std::vector<ir::Var> vs;
        vs.push_back(ir::make_let_var("v", DataType::f32()));
        std::vector<std::pair<ir::Var, ir::Expr>> lets = {{vs[0], k.load()}};
        for (int m = warp / 2; m >= 1; m /= 2) {
            ir::Var prev = vs.back();
            vs.push_back(ir::make_let_var("v", DataType::f32()));
            lets.push_back({vs.back(), ir::add(prev, ir::make_shuffle(ir::CallOp::ShflXor, prev, i32(m)))});
        }
        ir::Stmt body = k.store(vs.back());
        for (size_t i = lets.size(); i-- > 0;) body = ir::make_let(lets[i].first, lets[i].second, body);
        auto r = k.run(body, arch, xs, ys);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        for (int w = 0; w < 256 / warp; ++w) {
            // The same butterfly in float, for the expected bits.
            std::vector<float> v(static_cast<size_t>(warp));
            for (int l = 0; l < warp; ++l) v[l] = static_cast<float>(xs[w * warp + l]);
            for (int m = warp / 2; m >= 1; m /= 2) {
                std::vector<float> next(v.size());
                for (int l = 0; l < warp; ++l) next[l] = v[l] + v[l ^ m];
                v = next;
            }
            double sum = 0;
            for (int l = 0; l < warp; ++l) sum += xs[w * warp + l];
            for (int l = 0; l < warp; ++l) {
                REQUIRE(ys[w * warp + l] == static_cast<double>(v[0]));
                REQUIRE(ys[w * warp + l] == ys[w * warp]);
            }
            CHECK(std::fabs(ys[w * warp] - sum) <= 1e-4 * warp * 100);
        }
    }
}

TEST_CASE("sim shuffle: 16-bit values travel extended and 64-bit values whole", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        const int warp = gpu(arch).warp_size;
        for (auto op : {ir::CallOp::ShflXor, ir::CallOp::ShflIdx, ir::CallOp::ShflDown}) {
            int m = op == ir::CallOp::ShflIdx ? 3 : 1;
            // Integers: i16 (negative), u16, i8, bool, i64 and u64 with distinct halves.
            for (DataType t : {DataType::i16(), DataType::u16(), DataType::i8(), DataType::boolean(), DataType::i32(),
                               DataType::i64(), DataType::u64()}) {
                INFO(arch << " " << ir::call_op_name(op) << " " << t.str());
                Kernel k(64, t);
                std::vector<int64_t> xs(64), ys;
                for (int i = 0; i < 64; ++i) {
                    int64_t v = t.bits >= 64 ? (static_cast<int64_t>(i + 1) << 40) - 3 * i - 1  // high and low halves differ
                                             : -i * 3 + 5;
                    xs[i] = ir::normalize_int(t.is_uint() && t.bits == 64 ? static_cast<int64_t>(~uint64_t{0} - i) : v, t);
                }
                auto r = k.run_ints(k.store(ir::make_shuffle(op, k.load(), i32(m))), arch, xs, ys);
                REQUIRE(r.ok);
                CHECK(issues_str(r).empty());
                for (int i = 0; i < 64; ++i)
                    REQUIRE(ys[i] == xs[i - i % warp + source_lane(op, i % warp, m, warp)]);
            }
            // Floats: f16, bf16, f32, f64 (the 64-bit halves from one lane).
            for (DataType t : {DataType::f16(), DataType::bf16(), DataType::f32(), DataType::f64()}) {
                INFO(arch << " " << ir::call_op_name(op) << " " << t.str());
                Kernel k(64, t);
                std::vector<double> xs(64), ys;
                for (int i = 0; i < 64; ++i)
                    xs[i] = interp::round_to_float_type(std::ldexp(1.0 + i / 64.0 + 1.0 / 3, i % 7 - 3) * (i % 3 ? 1 : -1), t);
                auto r = k.run(k.store(ir::make_shuffle(op, k.load(), i32(m))), arch, xs, ys);
                REQUIRE(r.ok);
                CHECK(issues_str(r).empty());
                for (int i = 0; i < 64; ++i) REQUIRE(ys[i] == xs[i - i % warp + source_lane(op, i % warp, m, warp)]);
            }
        }
    }
}

TEST_CASE("sim shuffle: nested shuffles and shuffles in loop bounds and conditions", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        const int warp = gpu(arch).warp_size;
        INFO(arch);
        Kernel k(64, DataType::f32());
        std::vector<double> xs(64), ys;
        for (int i = 0; i < 64; ++i) xs[i] = i;
        // shfl_xor(shfl_xor(v, 1), 2): lane ^ 3.
        auto nested = ir::make_shuffle(ir::CallOp::ShflXor,
                                       ir::make_shuffle(ir::CallOp::ShflXor, k.load(), i32(1)), i32(2));
        auto r = k.run(k.store(nested), arch, xs, ys);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        for (int i = 0; i < 64; ++i) CHECK(ys[i] == (i ^ 3));
        // if (shfl_idx(tx, 0) == tx - lane): true in every lane (the warp's first thread).
        Kernel k2(64, DataType::f32());
        auto first = ir::make_shuffle(ir::CallOp::ShflIdx, ir::make_cast(DataType::i32(), k2.tx), i32(0));
        auto cond = ir::eq(first, ir::make_cast(DataType::i32(), ir::sub(k2.tx, k2.lane(warp))));
        r = k2.run(ir::make_if(cond, k2.store(ir::make_float(1.0)), k2.store(ir::make_float(2.0))), arch, xs, ys);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        for (int i = 0; i < 64; ++i) CHECK(ys[i] == 1.0);
    }
}

TEST_CASE("sim shuffle: a shuffle not executed by the whole warp is reported at its line", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        INFO(arch);
        Kernel k(64, DataType::f32());
        std::vector<double> xs(64, 1.0), ys;
        // if (tx < 16) Y[tx] = shfl_xor(X[tx], 1): the lanes it reads execute it, but the
        // rest of the warp does not.
        auto body = ir::make_if(ir::lt(k.tx, ir::make_int(16)),
                                k.store(ir::make_shuffle(ir::CallOp::ShflXor, k.load(), i32(1), line(7, 12)), line(7)),
                                nullptr, line(6));
        auto r = k.run(body, arch, xs, ys);
        REQUIRE(r.ok);
        INFO(issues_str(r));
        REQUIRE(r.issues.size() == 1);
        CHECK(r.issues[0].kind == sim::IssueKind::ShuffleDivergence);
        CHECK(r.issues[0].loc.line == 7);
        CHECK(r.issues[0].loc.col == 12);
        CHECK(r.issues[0].thread == 0);
        int lanes = gpu(arch).warp_size;
        CHECK(r.issues[0].message.find("executed by 16 of the warp's " + std::to_string(lanes) + " lanes") !=
              std::string::npos);
        CHECK(r.issues[0].message.find("lane 16") != std::string::npos);
        CHECK(r.issues[0].message.find(std::string(gpu(arch).vendor == target::Vendor::Nvidia ? "shfl.sync.bfly"
                                                                                               : "ds_bpermute")) !=
              std::string::npos);
        // Reading a lane that is elsewhere: lanes 0..15 read 16..31 with xor 16.
        Kernel k2(64, DataType::f32());
        auto body2 = ir::make_if(ir::lt(k2.tx, ir::make_int(16)),
                                 k2.store(ir::make_shuffle(ir::CallOp::ShflXor, k2.load(), i32(16), line(9)), line(9)));
        auto r2 = k2.run(body2, arch, xs, ys);
        REQUIRE(r2.ok);
        INFO(issues_str(r2));
        REQUIRE(r2.issues.size() == 2);
        CHECK(r2.issues[0].kind == sim::IssueKind::ShuffleDivergence);
        CHECK(r2.issues[1].kind == sim::IssueKind::ShuffleSource);
        CHECK(r2.issues[1].count == 16);
        CHECK(r2.issues[1].message.find("in lane 0 reads lane 16, which does not execute it") != std::string::npos);
    }
}

TEST_CASE("sim shuffle: a shuffle in a loop some lanes have left", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        INFO(arch);
        Kernel k(32, DataType::f32());
        std::vector<double> xs(32, 1.0), ys;
        // for i in 0 .. 1 + tx % 2: Y[tx] = shfl_xor(X[tx], 2): the second iteration runs
        // with the odd lanes only.
        auto i = ir::make_loop_var("i");
        auto body = ir::make_for(i, ir::make_int(0), ir::add(ir::make_int(1), ir::floormod(k.tx, ir::make_int(2))),
                                 ir::ForKind::Serial,
                                 k.store(ir::make_shuffle(ir::CallOp::ShflXor, k.load(), i32(2), line(4)), line(4)),
                                 line(3));
        auto r = k.run(body, arch, xs, ys);
        REQUIRE(r.ok);
        REQUIRE_FALSE(r.issues.empty());
        CHECK(r.issues[0].kind == sim::IssueKind::ShuffleDivergence);
        CHECK(r.issues[0].loc.line == 4);
        CHECK(r.issues[0].message.find("executed by 16 of the warp's 32 lanes: lane 0") != std::string::npos);
    }
}

TEST_CASE("sim shuffle: source lanes a partial warp lacks, and lane operands outside the warp", "[sim][shuffle]") {
    for (const char* arch : kArchs) {
        const int warp = gpu(arch).warp_size;
        INFO(arch);
        // 48 threads: on W = 32 the second warp has lanes 0..15, on W = 64 the one wave
        // lanes 0..47. xor 8 stays within existing lanes; xor 16 makes 16 lanes read
        // lanes that do not exist (16..31 of warp 1, or 48..63).
        std::vector<double> xs(48, 2.0), ys;
        Kernel ok(48, DataType::f32());
        auto r = ok.run(ok.store(ir::make_shuffle(ir::CallOp::ShflXor, ok.load(), i32(8))), arch, xs, ys);
        REQUIRE(r.ok);
        CHECK(issues_str(r).empty());
        Kernel bad(48, DataType::f32());
        r = bad.run(bad.store(ir::make_shuffle(ir::CallOp::ShflXor, bad.load(), i32(16), line(5))), arch, xs, ys);
        REQUIRE(r.ok);
        REQUIRE(r.issues.size() == 1);
        CHECK(r.issues[0].kind == sim::IssueKind::ShuffleSource);
        CHECK(r.issues[0].loc.line == 5);
        CHECK(r.issues[0].count == 16);
        CHECK(r.issues[0].message.find("which does not exist in the block") != std::string::npos);
        CHECK(r.issues[0].thread == 32);
        // idx 32: outside [0, W) on a 32-lane warp (PTX would read lane 0 from b[4:0]);
        // a lane of the wave on gfx942.
        Kernel idx(64, DataType::f32());
        std::vector<double> xs64(64), ys64;
        for (int i = 0; i < 64; ++i) xs64[i] = i;
        r = idx.run(idx.store(ir::make_shuffle(ir::CallOp::ShflIdx, idx.load(), i32(32), line(6))), arch, xs64, ys64);
        REQUIRE(r.ok);
        if (warp == 32) {
            REQUIRE(r.issues.size() == 1);
            CHECK(r.issues[0].kind == sim::IssueKind::ShuffleOperand);
            CHECK(r.issues[0].message.find("lane operand 32 of shfl_idx is outside [0, 32)") != std::string::npos);
            CHECK(r.issues[0].count == 64);
        } else {
            CHECK(issues_str(r).empty());
            for (int i = 0; i < 64; ++i) CHECK(ys64[i] == 32);
        }
    }
}

TEST_CASE("verifier: shuffles only at thread level, never where they might not execute", "[ir][shuffle]") {
    Kernel k(32, DataType::f32());
    auto shfl = ir::make_shuffle(ir::CallOp::ShflXor, k.load(), i32(1), line(3, 7));
    k.f.body = k.store(shfl);
    CHECK(ir::verify(k.f).empty());
    // Not thread level.
    k.f.level = ir::FuncLevel::Tile;
    auto errs = ir::verify(k.f);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0] == "3:7: shfl_xor in a function that is not thread level");
    k.f.level = ir::FuncLevel::Thread;
    // In a select's branch, or the right side of &&.
    k.f.body = k.store(ir::make_select(ir::lt(k.tx, ir::make_int(3)), shfl, ir::make_float(0.0)));
    errs = ir::verify(k.f);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("inside a select or the right side of && / ||") != std::string::npos);
    k.f.body = k.store(ir::make_select(ir::lt(shfl, ir::make_float(0.0)), ir::make_float(1.0), ir::make_float(0.0)));
    CHECK(ir::verify(k.f).empty());  // the condition always executes
    auto cond = ir::logical_and(ir::lt(k.tx, ir::make_int(3)), ir::lt(shfl, ir::make_float(0.0)));
    k.f.body = k.store(ir::make_select(cond, ir::make_float(1.0), ir::make_float(0.0)));
    CHECK(ir::verify(k.f).size() == 1);
    // Operand types.
    k.f.body = k.store(ir::make_call(ir::CallOp::ShflXor, {k.load(), ir::make_int(1)}, DataType::f32(), line(4, 2)));
    errs = ir::verify(k.f);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0] == "4:2: lane operand of shfl_xor must be i32, not i64");
    k.f.body = k.store(ir::make_call(ir::CallOp::ShflUp, {k.load()}, DataType::f32(), line(4, 2)));
    CHECK(ir::verify(k.f).size() == 1);
}
