// The reference interpreter on small kernels written for one rule each: integer
// semantics, copy masking and padding, narrow stores, tile ops, and every reported error.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "scalar/float_formats.h"
#include "interp/interp.h"
#include "support/interp_testing.h"

using namespace tilec;
using namespace tilec::interp;
using namespace tilec::scalar;  // the float formats
using tilec::ir::DataType;

namespace {

struct Kernel {
    testing::Compiled compiled;
    std::string source;
    const ir::PrimFunc& func() const {
        REQUIRE(!compiled.module.funcs.empty());
        return compiled.module.funcs.front();
    }
    Result run(RunArgs& args, const RunOptions& opt = {}) const { return interp::run(func(), args, opt); }
    // Line and column (1-based) of the n-th occurrence of `needle` in the source.
    SourceLoc where(const std::string& needle, int n = 0) const {
        size_t pos = source.find(needle);
        for (int k = 0; k < n && pos != std::string::npos; ++k) pos = source.find(needle, pos + 1);
        REQUIRE(pos != std::string::npos);
        SourceLoc loc;
        loc.line = 1;
        size_t line_start = 0;
        for (size_t k = 0; k < pos; ++k)
            if (source[k] == '\n') {
                ++loc.line;
                line_start = k + 1;
            }
        loc.col = static_cast<uint32_t>(pos - line_start + 1);
        return loc;
    }
};

Kernel compile(const std::string& src) {
    Kernel k{testing::compile_source(src), src};
    INFO(k.compiled.diagnostics);
    REQUIRE(k.compiled.ok);
    return k;
}

void require_ok(const Result& r) {
    INFO(r.str());
    REQUIRE(r.ok);
}

// The error is reported at `want` (line and column) and its message contains `text`.
void require_error(const Result& r, SourceLoc want, const std::string& text) {
    INFO(r.str());
    REQUIRE(!r.ok);
    CHECK(r.message.find(text) != std::string::npos);
    CHECK(r.loc.line == want.line);
    CHECK(r.loc.col == want.col);
}

TensorArg floats(std::vector<double> v) {
    return TensorArg{std::move(v), {}, {}, {}};
}
TensorArg ints(std::vector<int64_t> v) {
    return TensorArg{{}, std::move(v), {}, {}};
}
TensorArg nan_floats(size_t n) {
    return floats(std::vector<double>(n, NAN));
}
constexpr int64_t kPoison = -999;
TensorArg poison_ints(size_t n) {
    return ints(std::vector<int64_t>(n, kPoison));
}

}  // namespace

TEST_CASE("interp: integer / and % are floor division and modulo", "[interp]") {
    Kernel k = compile(R"(
kernel ints(X: i64[N], D: i64[N], Q: out i64[N], R: out i64[N]) {
    for i in range(N) {
        Q[i] = X[i] / D[i];
        R[i] = X[i] % D[i];
    }
}
)");
    const int64_t kMin = std::numeric_limits<int64_t>::min();
    RunArgs args;
    args.tensors = {ints({-7, 7, -7, 7, 0, -8, kMin, 5}), ints({2, 2, -2, -2, 3, 4, -1, 7}), poison_ints(8),
                    poison_ints(8)};
    args.sizes = {8};
    require_ok(k.run(args));
    CHECK(args.tensors[2].ints == std::vector<int64_t>{-4, 3, 3, -4, 0, -2, kMin, 0});
    CHECK(args.tensors[3].ints == std::vector<int64_t>{1, 1, -1, -1, 0, 0, 0, 5});
}

TEST_CASE("interp: integer division by zero is reported at the operator", "[interp]") {
    Kernel k = compile(R"(
kernel divz(X: i64[N], D: i64[N], Q: out i64[N]) {
    for i in range(N) {
        Q[i] = X[i] / D[i];
    }
}
)");
    RunArgs args;
    args.tensors = {ints({6, 6, 6, 6}), ints({1, 2, 0, 3}), poison_ints(4)};
    args.sizes = {4};
    Result r = k.run(args);
    require_error(r, k.where("/ D[i]"), "division by zero");
    CHECK(r.in_block);
    CHECK(r.str().find("(block 0, 0, 0)") != std::string::npos);
    // Everything before the failing element was written, nothing after.
    CHECK(args.tensors[2].ints == std::vector<int64_t>{6, 3, kPoison, kPoison});
}

TEST_CASE("interp: narrow integers wrap, casts truncate and shifts follow signedness", "[interp]") {
    Kernel k = compile(R"(
kernel wrapk(A: i8[N], B: u8[N], C: i32[N], F: f32[N],
             YA: out i8[N], YB: out u8[N], YC: out i32[N], YW: out i64[N],
             Y1: out i32[N], Y2: out u8[N], Y3: out i32[N], Y4: out u8[N], Y5: out i4[N]) {
    for i in range(N) {
        YA[i] = A[i] * A[i];
        YB[i] = B[i] + B[i];
        YC[i] = C[i] + C[i];
        YW[i] = cast<i64>(cast<i8>(C[i]));
        Y1[i] = cast<i32>(F[i]);
        Y2[i] = cast<u8>(F[i]);
        Y3[i] = C[i] >> 2;
        Y4[i] = cast<u8>(C[i]) >> 4;
        Y5[i] = cast<i4>(C[i]);
    }
}
)");
    const int64_t imax = std::numeric_limits<int32_t>::max();
    RunArgs args;
    args.tensors = {ints({100, -128, 11, 0, 3}), ints({200, 128, 127, 255, 0}), ints({-16, 240, 9, -1, imax}),
                    floats({2.7, -2.7, 300.5, NAN, -1e20})};
    for (int k = 0; k < 9; ++k) args.tensors.push_back(poison_ints(5));
    args.sizes = {5};
    require_ok(k.run(args));
    auto out = [&](int k) { return args.tensors[4 + k].ints; };
    CHECK(out(0) == std::vector<int64_t>{16, 0, 121, 0, 9});      // i8: 10000 mod 256 = 16
    CHECK(out(1) == std::vector<int64_t>{144, 0, 254, 254, 0});   // u8
    CHECK(out(2) == std::vector<int64_t>{-32, 480, 18, -2, -2});  // i32: 2^32 - 2 wraps
    CHECK(out(3) == std::vector<int64_t>{-16, -16, 9, -1, -1});   // i32 -> i8 -> i64
    CHECK(out(4) == std::vector<int64_t>{2, -2, 300, 0, std::numeric_limits<int32_t>::min()});
    CHECK(out(5) == std::vector<int64_t>{2, 0, 255, 0, 0});           // saturating, NaN -> 0
    CHECK(out(6) == std::vector<int64_t>{-4, 60, 2, -1, imax >> 2});  // arithmetic shift
    CHECK(out(7) == std::vector<int64_t>{15, 15, 0, 15, 15});         // logical shift of u8
    CHECK(out(8) == std::vector<int64_t>{0, 0, -7, -1, -1});          // i4 wraps into [-8, 7]
}

TEST_CASE("interp: a shift by the type's width is an error", "[interp]") {
    Kernel k = compile(R"(
kernel sh(A: i32[N], S: i32[N], Y: out i32[N]) {
    for i in range(N) {
        Y[i] = A[i] << S[i];
    }
}
)");
    RunArgs args;
    args.tensors = {ints({1, 1}), ints({31, 32}), poison_ints(2)};
    args.sizes = {2};
    require_error(k.run(args), k.where("<< S"), "shift by 32");
    CHECK(args.tensors[2].ints[0] == std::numeric_limits<int32_t>::min());
}

TEST_CASE("interp: copy reads pad past a tensor's edge and drops stores past it", "[interp]") {
    Kernel k = compile(R"(
kernel padk(X: f32[M, N], Y: out f32[R, C]) grid(cdiv(C, 4), cdiv(R, 4)) {
    fragment t: f32[4, 4];
    copy(X[block.y * 4, block.x * 4], t, pad = 7.5);
    for i, j in parallel(4, 4) {
        t[i, j] = t[i, j] + 1.0;
    }
    copy(t, Y[block.y * 4, block.x * 4]);
}
)");
    const int64_t M = 5, N = 3, R = 9, C = 6;
    std::vector<double> x(M * N);
    for (size_t q = 0; q < x.size(); ++q) x[q] = 0.25 * q;
    RunArgs args;
    args.tensors = {floats(x), nan_floats(R * C + 8)};
    args.sizes = {M, N, R, C};
    require_ok(k.run(args));
    const auto& y = args.tensors[1].data;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
            INFO("Y[" << r << ", " << c << "]");
            CHECK(y[r * C + c] == ((r < M && c < N) ? x[r * N + c] + 1 : 8.5));
        }
    for (size_t q = R * C; q < y.size(); ++q) CHECK(std::isnan(y[q]));
}

TEST_CASE("interp: copy lines up a tile with the last dimensions of a tensor", "[interp]") {
    Kernel k = compile(R"(
kernel sq(X: f32[B, M, N], Y: out f32[B, N, M]) grid(B) {
    shared t: f32[4, 8];
    fragment u: f32[8, 4];
    copy(X[block.x, 0, 0], t);
    for i, j in parallel(8, 4) {
        u[i, j] = t[j, i];
    }
    copy(u, Y[block.x, 0, 0]);
}
)");
    const int64_t B = 2, M = 3, N = 5;
    std::vector<double> x(B * M * N);
    for (size_t q = 0; q < x.size(); ++q) x[q] = q;
    RunArgs args;
    args.tensors = {floats(x), nan_floats(B * N * M)};
    args.sizes = {B, M, N};
    require_ok(k.run(args));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t m = 0; m < M; ++m)
                CHECK(args.tensors[1].data[(b * N + n) * M + m] == x[(b * M + m) * N + n]);
}

TEST_CASE("interp: strided tensors read through their declared strides", "[interp]") {
    Kernel k = compile(R"(
kernel st(A: f32[M, K] strides(lda, 1), Y: out f32[M, K]) {
    fragment t: f32[4, 4];
    copy(A[0, 0], t);
    copy(t, Y[0, 0]);
}
)");
    const int64_t M = 3, K = 2, lda = 5;
    std::vector<double> a(M * lda, -1.0);
    for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < K; ++c) a[m * lda + c] = 10 * m + c;
    RunArgs args;
    args.tensors = {floats(a), nan_floats(M * K)};
    args.sizes = {M, K, lda};
    require_ok(k.run(args));
    CHECK(args.tensors[1].data == std::vector<double>{0, 1, 10, 11, 20, 21});

    // A tensor stated with other strides, or too small for its strides, is refused.
    args.tensors[0].strides = {K, 1};
    CHECK(k.run(args).message.find("declared with [5, 1]") != std::string::npos);
    args.tensors[0].strides = {};
    args.tensors[0].data.resize(M * lda - 4);
    CHECK(k.run(args).message.find("needs 12 elements; 11 are given") != std::string::npos);
}

TEST_CASE("interp: out-of-bounds shared accesses are reported where they happen", "[interp]") {
    Kernel k = compile(R"(
kernel oob(Y: out f32[N]) {
    shared s: f32[8];
    fill(s, 1.5);
    for i in range(N) {
        Y[i] = s[i];
    }
}
)");
    RunArgs args;
    args.tensors = {nan_floats(8)};
    args.sizes = {8};
    require_ok(k.run(args));
    CHECK(args.tensors[0].data == std::vector<double>(8, 1.5));
    args.tensors = {nan_floats(9)};
    args.sizes = {9};
    require_error(k.run(args), k.where("s[i]"), "index out of bounds: 's'[8] of shared buffer of shape [8]");
}

TEST_CASE("interp: a tile-op region outside a shared buffer is reported at the op", "[interp]") {
    Kernel k = compile(R"(
kernel oob2(Y: out f32[4], k: i64) {
    shared s: f32[8];
    fragment t: f32[4];
    fill(s, 0.5);
    copy(s[k], t);
    copy(t, Y);
}
)");
    RunArgs args;
    args.tensors = {nan_floats(4)};
    args.scalars = {4};
    require_ok(k.run(args));
    CHECK(args.tensors[0].data == std::vector<double>(4, 0.5));
    args.scalars = {5};
    require_error(k.run(args), k.where("copy(s[k]"), "region [5, 9) of shared buffer 's' is out of bounds");
}

TEST_CASE("interp: reads of never-written buffer elements are reported", "[interp]") {
    SECTION("a copy out of a partly written fragment") {
        Kernel k = compile(R"(
kernel un(Y: out f32[N]) {
    fragment t: f32[8];
    for i in parallel(4) {
        t[i] = 1.0;
    }
    copy(t, Y[0]);
}
)");
        RunArgs args;
        args.tensors = {nan_floats(4)};
        args.sizes = {4};
        require_ok(k.run(args));  // elements 4.. would be dropped: never read
        args.tensors = {nan_floats(8)};
        args.sizes = {8};
        require_error(k.run(args), k.where("copy(t"),
                      "read of uninitialised element 't'[4] of fragment buffer");
        // Without tracking, the run completes (the unwritten elements read as NaN).
        RunOptions opt;
        opt.check_uninitialized = false;
        require_ok(k.run(args, opt));
    }
    SECTION("a var read before it is assigned") {
        Kernel k = compile(R"(
kernel uv(Y: out f32[1]) {
    var x: f32;
    Y[0] = x;
}
)");
        RunArgs args;
        args.tensors = {nan_floats(1)};
        require_error(k.run(args), k.where("x;\n}"), "uninitialised");
    }
    SECTION("each execution of an allocation starts uninitialised") {
        Kernel k = compile(R"(
kernel fresh(Y: out f32[4]) {
    for r in range(2) {
        fragment a: f32[4];
        if r == 0 {
            fill(a, 1.0);
        }
        copy(a, Y);
    }
}
)");
        RunArgs args;
        args.tensors = {nan_floats(4)};
        require_error(k.run(args), k.where("copy(a"), "'a'[0]");
    }
}

TEST_CASE("interp: a failed assert stops with its message and location", "[interp]") {
    Kernel k = compile(R"(
kernel chk(X: f32[N], Y: out f32[N]) {
    for i in range(N) {
        assert(X[i] >= 0.0, "inputs must be non-negative");
        Y[i] = sqrt(X[i]);
    }
}
)");
    RunArgs args;
    args.tensors = {floats({4, 9}), nan_floats(2)};
    args.sizes = {2};
    require_ok(k.run(args));
    CHECK(args.tensors[1].data == std::vector<double>{2, 3});
    args.tensors = {floats({4, -1}), nan_floats(2)};
    Result r = k.run(args);
    require_error(r, k.where("assert"), "assertion failed: inputs must be non-negative");
    CHECK(r.str(*k.compiled.sources).find("test.tile:4:9: assertion failed") != std::string::npos);
}

TEST_CASE("interp: print substitutes values into its format", "[interp]") {
    Kernel k = compile(R"(
kernel pr(X: f32[N], H: f16[N], I: i32[N]) {
    for i in range(N) {
        print("i={} x={} h={} n={} pos={}", i, X[i], H[i], I[i], X[i] > 0.0);
    }
}
)");
    RunArgs args;
    args.tensors = {floats({0.1, -2.5}), floats({0.5, -3}), ints({-7, 12})};
    args.sizes = {2};
    std::ostringstream out;
    RunOptions opt;
    opt.print_stream = &out;
    require_ok(k.run(args, opt));
    CHECK(out.str() == "i=0 x=0.1 h=0.5 n=-7 pos=true\ni=1 x=-2.5 h=-3 n=12 pos=false\n");
}

TEST_CASE("interp: arguments are checked against the parameters", "[interp]") {
    Kernel k = compile(R"(
kernel va(A: f32[N], C: out f32[N], s: f32) grid(cdiv(N, 4)) {
    fragment a: f32[4];
    copy(A[block.x * 4], a);
    for i in parallel(4) {
        a[i] = a[i] * s;
    }
    copy(a, C[block.x * 4]);
}
)");
    RunArgs args;
    args.tensors = {floats({1, 2, 3, 4, 5}), nan_floats(5)};
    args.sizes = {5};
    args.scalars = {0.1};
    require_ok(k.run(args));
    // The f32 scalar is rounded to f32 first; the product is rounded on the store.
    const double s = round_to_float_type(0.1, DataType::f32());
    for (int q = 0; q < 5; ++q)
        CHECK(args.tensors[1].data[q] == round_to_float_type((q + 1) * s, DataType::f32()));

    RunArgs bad = args;
    bad.tensors.pop_back();
    CHECK(k.run(bad).message == "'va' takes 2 tensors, 1 given");
    bad = args;
    bad.sizes = {-1};
    CHECK(k.run(bad).message == "size 'N' is negative (-1)");
    bad = args;
    bad.tensors[1].data.resize(4);
    CHECK(k.run(bad).message.find("needs 5 elements; 4 are given") != std::string::npos);
    bad = args;
    bad.tensors[0].shape = {6};
    CHECK(k.run(bad).message.find("given with shape [6]; the sizes make it [5]") != std::string::npos);
}

TEST_CASE("interp: a block filter runs only the chosen blocks", "[interp]") {
    Kernel k = compile(R"(
kernel ids(Y: out i64[N]) grid(cdiv(N, 2)) {
    for i in range(2) {
        if block.x * 2 + i < N {
            Y[block.x * 2 + i] = block.x;
        }
    }
}
)");
    RunArgs args;
    args.tensors = {poison_ints(7)};
    args.sizes = {7};
    RunOptions opt;
    opt.block_filter = [](int64_t x, int64_t, int64_t) { return x == 0 || x == 3; };
    require_ok(k.run(args, opt));
    CHECK(args.tensors[0].ints == std::vector<int64_t>{0, 0, kPoison, kPoison, kPoison, kPoison, 3});
}

TEST_CASE("interp: grids of more than 2^31 blocks are refused", "[interp]") {
    Kernel k = compile(R"(
kernel big(X: f32[N], Z: out f32[M]) grid(N, M) {
    Z[0] = X[0];
}
)");
    RunArgs args;
    args.tensors = {floats(std::vector<double>(65537, 1.0)), nan_floats(65537)};
    args.sizes = {65537, 65537};
    Result r = k.run(args);
    REQUIRE(!r.ok);
    CHECK(r.message.find("more than 2^31 blocks") != std::string::npos);
    CHECK(!r.in_block);
}

TEST_CASE("interp: reductions (sum, max, min, absmax; clear = false; kept dim)", "[interp]") {
    Kernel k = compile(R"(
kernel red(X: f32[4, 8], S: out f32[4], MX: out f32[8], MN: out f32[4], AM: out f32[4, 1]) {
    fragment x: f32[4, 8];
    fragment s: f32[4];
    fragment mx: f32[8];
    fragment mn: f32[4];
    fragment am: f32[4, 1];
    copy(X, x);
    fill(s, 100.0);
    reduce_sum(x, s, dim = 1, clear = false);
    reduce_max(x, mx, dim = 0);
    fill(mn, -0.25);
    reduce_min(x, mn, dim = -1, clear = false);
    reduce_absmax(x, am, dim = 1);
    copy(s, S);
    copy(mx, MX);
    copy(mn, MN);
    copy(am, AM);
}
)");
    std::vector<double> x(32);
    for (int q = 0; q < 32; ++q) x[q] = ((q * 7) % 11 - 5) * 0.5;  // exact in f32
    RunArgs args;
    args.tensors = {floats(x), nan_floats(4), nan_floats(8), nan_floats(4), nan_floats(4)};
    require_ok(k.run(args));
    for (int r = 0; r < 4; ++r) {
        double sum = 100, mn = -0.25, am = 0;
        for (int c = 0; c < 8; ++c) {
            sum += x[r * 8 + c];
            mn = std::min(mn, x[r * 8 + c]);
            am = std::max(am, std::fabs(x[r * 8 + c]));
        }
        CHECK(args.tensors[1].data[r] == sum);
        CHECK(args.tensors[3].data[r] == mn);
        CHECK(args.tensors[4].data[r] == am);
    }
    for (int c = 0; c < 8; ++c) {
        double mx = -INFINITY;
        for (int r = 0; r < 4; ++r) mx = std::max(mx, x[r * 8 + c]);
        CHECK(args.tensors[2].data[c] == mx);
    }
}

TEST_CASE("interp: gemm with trans_a accumulates into c, rounding once per call", "[interp]") {
    Kernel k = compile(R"(
kernel tg(A: f32[8, 4], B: f32[8, 4], C: out f32[4, 4]) {
    shared a: f32[8, 4];
    shared b: f32[8, 4];
    fragment c: f32[4, 4];
    copy(A, a);
    copy(B, b);
    fill(c, 1.0);
    gemm(a, b, c, trans_a = true);
    copy(c, C);
}
)");
    std::vector<double> a(32), b(32);
    for (int q = 0; q < 32; ++q) {
        a[q] = round_to_float_type(std::sin(q + 1.0), DataType::f32());
        b[q] = round_to_float_type(std::cos(q * 0.7), DataType::f32());
    }
    RunArgs args;
    args.tensors = {floats(a), floats(b), nan_floats(16)};
    require_ok(k.run(args));
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 4; ++n) {
            double s = 1.0;
            for (int kk = 0; kk < 8; ++kk) s += a[kk * 4 + m] * b[kk * 4 + n];
            CHECK(args.tensors[2].data[m * 4 + n] == round_to_float_type(s, DataType::f32()));
        }
}

TEST_CASE("interp: integer gemm and reduce stay exact in i32", "[interp]") {
    Kernel k = compile(R"(
kernel igemm(A: i8[4, 8], B: i8[8, 4], C: out i32[4, 4], RS: out i32[4]) {
    shared a: i8[4, 8];
    shared b: i8[8, 4];
    fragment c: i32[4, 4];
    fragment rs: i32[4];
    copy(A, a);
    copy(B, b);
    gemm(a, b, c, clear = true);
    reduce_sum(c, rs, dim = 1);
    copy(c, C);
    copy(rs, RS);
}
)");
    std::vector<int64_t> a(32), b(32);
    for (int q = 0; q < 32; ++q) {
        a[q] = (q * 37) % 256 - 128;
        b[q] = 127 - (q * 53) % 256;
    }
    RunArgs args;
    args.tensors = {ints(a), ints(b), poison_ints(16), poison_ints(4)};
    require_ok(k.run(args));
    for (int m = 0; m < 4; ++m) {
        int64_t row = 0;
        for (int n = 0; n < 4; ++n) {
            int64_t s = 0;
            for (int kk = 0; kk < 8; ++kk) s += a[m * 8 + kk] * b[kk * 4 + n];
            CHECK(args.tensors[2].ints[m * 4 + n] == s);
            row += s;
        }
        CHECK(args.tensors[3].ints[m] == row);
    }
}

TEST_CASE("interp: stores into f8 and i4 buffers round or saturate", "[interp]") {
    Kernel k = compile(R"(
kernel narrow(X: f32[N], Y8: out f32[N], Y5: out f32[N], YI: out i32[N]) {
    fragment a: f8e4m3[8];
    fragment b: f8e5m2[8];
    fragment c: i4[8];
    copy(X[0], a);
    copy(X[0], b);
    copy(X[0], c);
    copy(a, Y8[0]);
    copy(b, Y5[0]);
    copy(c, YI[0]);
}
)");
    std::vector<double> x = {0.1, 500, -1e6, 3.7, -9.2, 1.0625, 61440};
    RunArgs args;
    args.tensors = {floats(x), nan_floats(7), nan_floats(7), poison_ints(7)};
    args.sizes = {7};
    require_ok(k.run(args));
    for (size_t q = 0; q < x.size(); ++q) {
        double xf = round_to_float_type(x[q], DataType::f32());
        CHECK(args.tensors[1].data[q] == f8e4m3_value(f8e4m3_bits(xf)));
        CHECK(args.tensors[2].data[q] == f8e5m2_value(f8e5m2_bits(xf)));
    }
    CHECK(args.tensors[1].data[1] == 448);        // saturated
    CHECK(args.tensors[2].data[2] == -INFINITY);  // overflows to -inf
    CHECK(args.tensors[3].ints == std::vector<int64_t>{0, 7, -8, 3, -8, 1, 7});
}

TEST_CASE("interp: atomic_add into a shared tile accumulates element-wise", "[interp]") {
    Kernel k = compile(R"(
kernel aa(X: f32[N], Y: out f32[8]) {
    shared acc: f32[8];
    fragment t: f32[4];
    fill(acc, 0.5);
    for j in range(cdiv(N, 4)) {
        copy(X[j * 4], t);
        atomic_add(acc[2], t);
    }
    copy(acc, Y);
}
)");
    RunArgs args;
    args.tensors = {floats({1, 2, 3, 4, 10, 20, 30}), nan_floats(8)};
    args.sizes = {7};
    require_ok(k.run(args));
    CHECK(args.tensors[1].data == std::vector<double>{0.5, 0.5, 11.5, 22.5, 33.5, 4.5, 0.5, 0.5});
}

TEST_CASE("interp: &&, || and ?: evaluate only the side they need", "[interp]") {
    Kernel k = compile(R"(
kernel guard(X: f32[N], Y: out f32[P], Z: out i64[P]) {
    for i in range(P) {
        Y[i] = i < N ? X[i] : -1.0;
        Z[i] = (i >= N || X[i] < 0.0) ? 1 : 0;
        if i < N && X[i] > 1.0 {
            Z[i] = 2;
        }
    }
}
)");
    RunArgs args;
    args.tensors = {floats({0.5, -2, 3}), nan_floats(5), poison_ints(5)};
    args.sizes = {3, 5};
    require_ok(k.run(args));
    CHECK(args.tensors[1].data == std::vector<double>{0.5, -2, 3, -1, -1});
    CHECK(args.tensors[2].ints == std::vector<int64_t>{0, 1, 2, 1, 1});
}

TEST_CASE("interp: float expressions compute in double and round on the store", "[interp]") {
    Kernel k = compile(R"(
kernel fx(X: f64[N], F: f32[N], Y: out f64[N, 16], W: out f32[N]) {
    for i in range(N) {
        let x = X[i];
        Y[i, 0] = exp(x);
        Y[i, 1] = exp2(x);
        Y[i, 2] = log(abs(x));
        Y[i, 3] = log2(abs(x));
        Y[i, 4] = sqrt(abs(x));
        Y[i, 5] = rsqrt(abs(x));
        Y[i, 6] = tanh(x);
        Y[i, 7] = sigmoid(x);
        Y[i, 8] = floor(x);
        Y[i, 9] = ceil(x);
        Y[i, 10] = pow(abs(x), 1.5);
        Y[i, 11] = min(x, 0.25);
        Y[i, 12] = max(x, 0.25);
        Y[i, 13] = x % 0.75;
        Y[i, 14] = x / 3.0;
        Y[i, 15] = cast<f64>(F[i] * 3.0) - 3.0 * cast<f64>(F[i]);
        W[i] = (F[i] + 100000000.0) - 100000000.0;
    }
}
)");
    std::vector<double> x = {0.3, -1.7, 2.5, -0.0625};
    std::vector<double> f = {0.5, 0.1, -3.25, 1e-3};
    RunArgs args;
    args.tensors = {floats(x), floats(f), nan_floats(4 * 16), nan_floats(4)};
    args.sizes = {4};
    require_ok(k.run(args));
    for (int i = 0; i < 4; ++i) {
        INFO("x = " << x[i]);
        const double* y = &args.tensors[2].data[i * 16];
        double a = std::fabs(x[i]);
        CHECK(y[0] == std::exp(x[i]));
        CHECK(y[1] == std::exp2(x[i]));
        CHECK(y[2] == std::log(a));
        CHECK(y[3] == std::log2(a));
        CHECK(y[4] == std::sqrt(a));
        CHECK(y[5] == 1.0 / std::sqrt(a));
        CHECK(y[6] == std::tanh(x[i]));
        CHECK(y[7] == 1.0 / (1.0 + std::exp(-x[i])));
        CHECK(y[8] == std::floor(x[i]));
        CHECK(y[9] == std::ceil(x[i]));
        CHECK(y[10] == std::pow(a, 1.5));
        CHECK(y[11] == std::min(x[i], 0.25));
        CHECK(y[12] == std::max(x[i], 0.25));
        CHECK(y[13] == std::fmod(x[i], 0.75));
        CHECK(y[14] == x[i] / 3.0);
        // f32 operands, but the f32 product is not rounded before the cast to f64.
        double fi = round_to_float_type(f[i], DataType::f32());
        CHECK(y[15] == fi * 3.0 - 3.0 * fi);
        // (F + 1e8) - 1e8 in f32 arithmetic would lose F; in double it keeps it.
        CHECK(args.tensors[3].data[i] == round_to_float_type((fi + 1e8) - 1e8, DataType::f32()));
        if (i == 0) CHECK(args.tensors[3].data[i] == 0.5);
    }
}

TEST_CASE("interp: u64 values divide, compare and convert as unsigned", "[interp]") {
    Kernel k = compile(R"(
kernel uk(A: u64[N], B: u64[N], Q: out u64[N], L: out i64[N], F: out f64[N], M: out u64[N]) {
    for i in range(N) {
        Q[i] = A[i] / B[i];
        L[i] = A[i] < B[i] ? 1 : 0;
        F[i] = cast<f64>(A[i]);
        M[i] = max(A[i], B[i]) >> 60;
    }
}
)");
    const int64_t big = static_cast<int64_t>((uint64_t(1) << 63) + 10);  // 2^63 + 10, as its bits
    RunArgs args;
    args.tensors = {ints({big, 7, big}), ints({3, big, 2}), poison_ints(3),
                    poison_ints(3),      nan_floats(3),     poison_ints(3)};
    args.sizes = {3};
    require_ok(k.run(args));
    uint64_t ub = (uint64_t(1) << 63) + 10;
    CHECK(args.tensors[2].ints == std::vector<int64_t>{int64_t(ub / 3), 0, int64_t(ub / 2)});
    CHECK(args.tensors[3].ints == std::vector<int64_t>{0, 1, 0});
    CHECK(args.tensors[4].data == std::vector<double>{double(ub), 7, double(ub)});
    CHECK(args.tensors[5].ints == std::vector<int64_t>{8, 8, 8});
}

TEST_CASE("interp: range with a negative step, unroll, and a var accumulator", "[interp]") {
    Kernel k = compile(R"(
kernel rg(Y: out i64[N]) {
    var n: i64 = 0;
    for i in range(N, 0, -3) {
        Y[n] = i;
        n += 1;
    }
    for j in unroll(2) {
        Y[N - 1 - j] = 100 + j;
    }
}
)");
    RunArgs args;
    args.tensors = {poison_ints(7)};
    args.sizes = {7};
    require_ok(k.run(args));
    CHECK(args.tensors[0].ints == std::vector<int64_t>{7, 4, 1, kPoison, kPoison, 101, 100});
}

TEST_CASE("interp: integer cumsum along dim 0, reversed", "[interp]") {
    Kernel k = compile(R"(
kernel ics(X: i32[3, 4], Y: out i32[3, 4]) {
    fragment x: i32[3, 4];
    fragment y: i32[3, 4];
    copy(X, x);
    cumsum(x, y, dim = 0, reverse = true);
    copy(y, Y);
}
)");
    std::vector<int64_t> x = {1, 2, 3, 4, 10, 20, 30, 40, 100, 200, 300, 2147483647};
    RunArgs args;
    args.tensors = {ints(x), poison_ints(12)};
    require_ok(k.run(args));
    // The last column wraps at i32: 2147483647 + 40 + 4.
    int64_t wrapped = static_cast<int32_t>(static_cast<uint32_t>(2147483647u + 44u));
    CHECK(args.tensors[1].ints == std::vector<int64_t>{111, 222, 333, wrapped, 110, 220, 330, wrapped - 4,
                                                       100, 200, 300, 2147483647});
}
