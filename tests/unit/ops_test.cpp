// The tile ops' homes (compiler/ops) driven through their interfaces alone, as layout
// inference, the thread-level lowering and the elaborator drive them: each op states its
// own layout constraints, the registry dispatches only tile ops, an op refused on GPUs
// throws ops::Unsupported, and an op's argument checks run on evaluated arguments (no AST).
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "ir/ir.h"
#include "ops/context.h"
#include "ops/fill.h"
#include "ops/registry.h"

using namespace tilec;

namespace {

ir::Buffer tile(const char* name, ir::Scope scope, std::vector<int64_t> shape) {
    std::vector<ir::Expr> dims;
    for (int64_t d : shape) dims.push_back(ir::make_int(d));
    return ir::make_buffer(name, ir::DataType::f32(), dims, scope);
}

// Records the constraints an op states (for a block of 128 threads on `target`).
struct Recorder : ops::LayoutConstraints {
    explicit Recorder(const char* target = "sm_80") : target_(*target::find_gpu_target(target)) {}
    const target::GpuTarget& gpu_target() const override { return target_; }
    int64_t threads() const override { return 128; }
    std::string attr(const std::string& name) const override { return name == "warp_policy" ? policy : ""; }
    void fixed(const ir::Buffer& b, layout::Fragment F, SourceLoc, std::string use) override {
        calls.push_back("fixed " + b->name + " " + F.name() + " " + std::to_string(F.thread_count()) + "x" +
                        std::to_string(F.registers_per_thread()) + ": " + use);
        fixed_layouts.push_back(std::move(F));
    }
    void shared_layout(const ir::Buffer& b, layout::Layout L, SourceLoc, std::string) override {
        calls.push_back("shared " + b->name + " " + L.name());
        shared_layouts.push_back(std::move(L));
    }
    std::vector<layout::Layout> shared_layouts;
    std::optional<size_t> shared_fill_dim(const ir::Buffer& b) const override {
        auto it = fill_dims.find(b->name);
        return it == fill_dims.end() ? std::nullopt : std::optional<size_t>(it->second);
    }
    const target::GpuTarget& target_;
    std::string policy;
    std::map<std::string, size_t> fill_dims;  // buffer name -> the dimension its fills read contiguously
    std::vector<layout::Fragment> fixed_layouts;
    std::vector<std::string> calls;
    void reduced(const ir::Buffer& src, const ir::Buffer& dst, size_t dim, bool keep, SourceLoc,
                 std::string use) override {
        calls.push_back("reduced " + src->name + " " + dst->name + " dim " + std::to_string(dim) +
                        (keep ? " keep" : "") + ": " + use);
    }
    void same(const ir::Buffer& a, const ir::Buffer& b, SourceLoc, std::string use) override {
        calls.push_back("same " + a->name + " " + b->name + ": " + use);
    }
};

// A lowering context that no refused op may touch.
struct NoLowering : ops::LowerContext {
    const target::GpuTarget& gpu_target() const override { FAIL("gpu_target"); throw 0; }
    int64_t threads() const override { return 128; }
    ir::Var thread_idx() const override { return nullptr; }
    std::string attr(const std::string&) const override { return ""; }
    const layout::Layout* shared_layout(const ir::Buffer&) const override { return nullptr; }
    const Registers& registers(const ir::Buffer&) const override { FAIL("registers"); throw 0; }
    std::optional<layout::Fragment> default_fragment(const std::vector<int64_t>&) const override {
        return std::nullopt;
    }
    ir::Stmt register_loop(const layout::Fragment&, SourceLoc, const RegBody&) override { return nullptr; }
    ir::Expr uniform(const ir::Expr& e) override { return e; }
    Footprint kernel_footprint() const override { return {}; }
};

// fill(dst, value) with dst already evaluated to `dst` and value to 0.
struct FillCall : ops::ElabContext {
    FillCall(DiagnosticEngine& d, ir::Buffer b) : diag(d), dst(std::move(b)) {
        args_.resize(2);
        args_[0].range = SourceLoc{1, 3, 10};
        args_[1].range = SourceLoc{1, 3, 14};
    }
    DiagnosticEngine& diags() override { return diag; }
    const std::string& name() const override { return name_; }
    SourceRange call_range() const override { return SourceLoc{1, 3, 5}; }
    const std::vector<ops::CallArg>& args() const override { return args_; }
    std::optional<std::vector<const ops::CallArg*>> bind(const std::vector<std::string>& names, size_t) override {
        REQUIRE(names == std::vector<std::string>{"dst", "value"});
        return std::vector<const ops::CallArg*>{&args_[0], &args_[1]};
    }
    ops::TileOperand tile(const ops::CallArg& a, const char*, const char*) override {
        ops::TileOperand t;
        t.buffer = dst;
        t.range = a.range;
        return t;
    }
    ir::Expr scalar(const ops::CallArg&, ir::DataType want, const char*) override {
        ++evaluated;
        return ir::make_float(0.0, want);
    }
    ir::Expr scalar_value(const ops::CallArg&, const char*) override { return nullptr; }
    ir::Expr condition(const ops::CallArg&, const char*) override { return nullptr; }
    std::optional<int64_t> const_int(const ops::CallArg&, const char*) override { return std::nullopt; }
    std::optional<bool> const_bool(const ops::CallArg&, const char*) override { return std::nullopt; }
    bool check_writable(const ir::Buffer&, SourceRange) override { return true; }
    void mark_written(const ir::Buffer& b) override { written.push_back(b->name); }
    std::optional<SourceRange> declared_at(const ir::Buffer&) const override { return std::nullopt; }

    DiagnosticEngine& diag;
    ir::Buffer dst;
    std::string name_ = "fill";
    std::vector<ops::CallArg> args_;
    int evaluated = 0;
    std::vector<std::string> written;
};

}  // namespace

TEST_CASE("ops: a copy between two fragments of one shape states one common constraint, with shared memory none") {
    auto a = tile("a", ir::Scope::Fragment, {64, 32});
    auto b = tile("b", ir::Scope::Fragment, {64, 32});
    auto s = tile("s", ir::Scope::Shared, {64, 32});
    Recorder r;
    ops::infer_layout(*ir::make_copy(ir::full_region(a), ir::full_region(b)), r);
    ops::infer_layout(*ir::make_copy(ir::full_region(s), ir::full_region(b)), r);
    REQUIRE(r.calls == std::vector<std::string>{"same a b: the copy of 'a' into 'b'"});
}

TEST_CASE("ops: a reduce states a strict constraint with its dimension and whether it is kept") {
    auto s = tile("s", ir::Scope::Fragment, {64, 32});
    auto m = tile("m", ir::Scope::Fragment, {64});
    auto k = tile("k", ir::Scope::Fragment, {64, 1});
    Recorder r;
    ops::infer_layout(*ir::make_reduce(ir::ReduceKind::Max, ir::full_region(s), ir::full_region(m), 1), r);
    ops::infer_layout(*ir::make_reduce(ir::ReduceKind::Sum, ir::full_region(s), ir::full_region(k), 1), r);
    REQUIRE(r.calls == std::vector<std::string>{"reduced s m dim 1: the reduce of 's' into 'm'",
                                                "reduced s k dim 1 keep: the reduce of 's' into 'k'"});
}

namespace {
ir::Buffer tile_of(const char* name, ir::Scope scope, std::vector<int64_t> shape, ir::DataType t) {
    std::vector<ir::Expr> dims;
    for (int64_t d : shape) dims.push_back(ir::make_int(d));
    return ir::make_buffer(name, t, dims, scope);
}
}  // namespace

TEST_CASE("ops: a gemm on tensor cores fixes its accumulator to the mma.sync fragment of its warp split") {
    auto a = tile_of("a", ir::Scope::Shared, {128, 32}, ir::DataType::f16());
    auto b = tile_of("b", ir::Scope::Shared, {32, 64}, ir::DataType::f16());
    auto c = tile("c", ir::Scope::Fragment, {128, 64});
    auto gemm = ir::make_gemm(ir::full_region(a), ir::full_region(b), ir::full_region(c));
    SECTION("square: 2 x 2 warps of 64 x 32") {
        Recorder r;
        ops::infer_layout(*gemm, r);
        // a: 64-byte rows (32B... 64B mode); b: 128-byte rows (128B mode).
        REQUIRE(r.calls == std::vector<std::string>{"fixed c mma_m16n8k16_c 128x64: the tensor-core gemm into 'c'",
                                                    "shared a swizzle64B<b16>", "shared b swizzle128B<b16>"});
        auto want = layout::Fragment::mma_m16n8k16_c(128, 64, 2, 2);
        CHECK(r.fixed_layouts[0].same_slots(*want));
    }
    SECTION("full_row: 4 x 1 warps of 32 x 64") {
        Recorder r;
        r.policy = "full_row";
        ops::infer_layout(*gemm, r);
        REQUIRE(r.fixed_layouts.size() == 1);
        CHECK(r.calls.size() == 3);
        CHECK(r.fixed_layouts[0].same_slots(*layout::Fragment::mma_m16n8k16_c(128, 64, 4, 1)));
    }
    SECTION("on AMD the MFMA accumulator, and the XOR swizzle of the tile whose rows run along K") {
        Recorder amd("gfx942");
        ops::infer_layout(*gemm, amd);
        // 128 threads: 2 waves of 64, split 2 x 1 (64 x 64 each: square). a's 64-byte K
        // rows are read 16 bytes a lane (swizzled); b's rows run along N (row-major).
        REQUIRE(amd.calls == std::vector<std::string>{"fixed c mfma_32x32_c 128x64: the MFMA gemm into 'c'",
                                                      "shared a swizzle64B<b16>"});
        using Atom = layout::Fragment::AmdMatrixAtom;
        CHECK(amd.fixed_layouts[0].same_slots(*layout::Fragment::amd_matrix_c(Atom::Mfma32, 128, 64, 2, 1)));
    }
    SECTION("on AMD a tile filled along its first dimension is stored transposed") {
        // b's tensor holds it [N, K] (a transposed B): its fills read along b's first
        // dimension (K), so b is stored [64, 32], rows along K, swizzled as a's are, and
        // a lane's 8 consecutive K of one column are one 16-byte chunk.
        Recorder amd("gfx942");
        amd.fill_dims["b"] = 0;
        ops::infer_layout(*gemm, amd);
        REQUIRE(amd.calls.size() == 3);
        CHECK(amd.calls[1] == "shared a swizzle64B<b16>");
        CHECK(amd.calls[2].rfind("shared b ", 0) == 0);
        const layout::Layout& L = amd.shared_layouts.at(1);
        CHECK(L.shape() == std::vector<int64_t>{32, 64});
        for (int64_t n = 0; n < 64; ++n)
            for (int64_t k = 0; k < 32; k += 8) {
                int64_t base = L.offset({k, n});
                CHECK(base % 8 == 0);
                for (int64_t e = 1; e < 8; ++e) CHECK(L.offset({k + e, n}) == base + e);
            }
        // A fill along the last dimension keeps b as it was (row-major: no request).
        Recorder rows("gfx942");
        rows.fill_dims["b"] = 1;
        ops::infer_layout(*gemm, rows);
        CHECK(rows.calls.size() == 2);
    }
    SECTION("none for f32 operands, none when K is not a multiple of 16") {
        auto af = tile("af", ir::Scope::Shared, {128, 32});
        auto bf = tile("bf", ir::Scope::Shared, {32, 64});
        Recorder r;
        ops::infer_layout(*ir::make_gemm(ir::full_region(af), ir::full_region(bf), ir::full_region(c)), r);
        auto a8 = tile_of("a8", ir::Scope::Shared, {128, 8}, ir::DataType::f16());
        auto b8 = tile_of("b8", ir::Scope::Shared, {8, 64}, ir::DataType::f16());
        ops::infer_layout(*ir::make_gemm(ir::full_region(a8), ir::full_region(b8), ir::full_region(c)), r);
        CHECK(r.calls.empty());
    }
}

TEST_CASE("ops: the registry knows the tile ops only, and print's and assert's lowerings refuse them") {
    auto f = tile("f", ir::Scope::Fragment, {8});
    CHECK(ops::is_tile_op(*ir::make_fill(ir::full_region(f), ir::make_float(0.0, ir::DataType::f32()))));
    CHECK_FALSE(ops::is_tile_op(*ir::make_seq({})));
    NoLowering lc;
    SourceLoc at{1, 7, 3};
    try {
        ops::lower(*ir::make_print("x", {}, at), lc);
        FAIL("print lowered");
    } catch (const ops::Unsupported& u) {
        CHECK(u.what == "print");
        CHECK(u.loc.line == 7);
    }
    CHECK_THROWS_AS(ops::lower(*ir::make_assert(ir::make_bool(true), "m", at), lc), ops::Unsupported);
}

TEST_CASE("ops: fill's checks run on evaluated arguments: a global tensor is refused before its value is evaluated") {
    SourceManager sources;
    sources.add_file("k.tile", "\n\n    fill(t, 0);\n");
    std::ostringstream out;
    DiagnosticEngine diag(sources, out);
    FillCall global(diag, ir::make_tensor("t", ir::DataType::f32(), {ir::make_int(8)}, ir::Access::Out));
    CHECK(ops::elab_fill(global) == nullptr);
    CHECK(global.evaluated == 0);
    CHECK(out.str().find("k.tile:3:10: error: fill works on shared, fragment and local tiles") != std::string::npos);

    FillCall shared(diag, tile("s", ir::Scope::Shared, {8}));
    ir::Stmt s = ops::elab_fill(shared);
    REQUIRE(s != nullptr);
    CHECK(s->kind == ir::StmtKind::Fill);
    CHECK(shared.evaluated == 1);
    CHECK(shared.written == std::vector<std::string>{"s"});
}
