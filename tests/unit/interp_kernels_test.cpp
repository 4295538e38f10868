// The reference interpreter on the stdlib kernels (small tiles, ragged shapes, random
// inputs) against float64 reference computations written here, with poisoned outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>

#include "scalar/float_formats.h"
#include "interp/interp.h"
#include "support/interp_testing.h"

using namespace tilec;
using namespace tilec::interp;
using namespace tilec::scalar;  // the float formats
using tilec::ir::DataType;

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

// Compiles a stdlib kernel file once per set of defines (kept for the whole run).
const testing::Compiled& stdlib_kernels(const std::string& file, const Defines& defines) {
    static std::vector<std::pair<std::string, std::unique_ptr<testing::Compiled>>> cache;
    std::string key = file;
    for (auto& [k, v] : defines) key += " -D" + k + "=" + v;
    for (auto& [k, c] : cache)
        if (k == key) return *c;
    testing::CompileOptions opt;
    opt.defines = defines;
    auto c = std::make_unique<testing::Compiled>(
        testing::compile_file(testing::stdlib_dir() + "/kernels/" + file, opt));
    INFO(c->diagnostics);
    REQUIRE(c->ok);
    cache.emplace_back(key, std::move(c));
    return *cache.back().second;
}

const ir::PrimFunc& kernel(const testing::Compiled& c, const std::string& name) {
    const ir::PrimFunc* f = c.find(name);
    INFO("export " << name);
    REQUIRE(f != nullptr);
    return *f;
}

double round_t(double v, DataType t) {
    return round_to_float_type(v, t);
}

// Random values exactly representable in t.
std::vector<double> random_values(size_t n, std::mt19937& rng, DataType t, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (auto& x : v) x = round_t(d(rng), t);
    return v;
}

constexpr size_t kGuard = 8;  // poisoned elements past the end of every output

// An output tensor of n elements and a guard tail, all NaN.
TensorArg poisoned(size_t n) {
    return TensorArg{std::vector<double>(n + kGuard, NAN), {}, {}, {}};
}

void run_ok(const ir::PrimFunc& f, RunArgs& args, const testing::Compiled& c) {
    Result r = run(f, args);
    INFO(r.str(*c.sources));
    REQUIRE(r.ok);
}

// Checks got[k] against want[k] for k < want.size() within
//     rel * |want[k]| + abs * scale[k] + floor      (scale[k] = 1 without `scale`),
// and that the guard tail is still NaN (nothing written past the end).
void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel, double abs,
                 const std::vector<double>* scale = nullptr, double floor = 0) {
    REQUIRE(got.size() == want.size() + kGuard);
    size_t bad = 0;
    for (size_t k = 0; k < want.size(); ++k) {
        double tol = rel * std::fabs(want[k]) + abs * (scale ? (*scale)[k] : 1.0) + floor;
        bool ok = std::isnan(want[k]) ? std::isnan(got[k]) : std::fabs(got[k] - want[k]) <= tol;
        if (!ok && bad++ < 5)
            FAIL_CHECK("element " << k << ": got " << got[k] << ", want " << want[k] << " (tol " << tol
                                  << ")");
    }
    CHECK(bad == 0);
    for (size_t k = want.size(); k < got.size(); ++k) CHECK(std::isnan(got[k]));
}

}  // namespace

TEST_CASE("interp: vector_add is exact in f32, f16 and bf16 at ragged sizes", "[interp][kernels]") {
    const auto& c = stdlib_kernels("vector_add.tile", {{"BLOCK", "16"}});
    std::mt19937 rng(1);
    for (auto [name, t] :
         {std::pair{"vector_add_f32", DataType::f32()}, std::pair{"vector_add_f16", DataType::f16()},
          std::pair{"vector_add_bf16", DataType::bf16()}}) {
        for (int64_t n : {1, 7, 16, 37}) {
            INFO(name << " N=" << n);
            auto a = random_values(n, rng, t), b = random_values(n, rng, t);
            RunArgs args;
            args.tensors = {{a, {}, {}, {}}, {b, {}, {}, {}}, poisoned(n)};
            args.sizes = {n};
            run_ok(kernel(c, name), args, c);
            std::vector<double> want(n);
            for (int64_t i = 0; i < n; ++i) want[i] = round_t(a[i] + b[i], t);
            check_close(args.tensors[2].data, want, 0, 0);
        }
    }
}

TEST_CASE("interp: gemm (all transposes, f16/bf16) against a float64 product", "[interp][kernels]") {
    const auto& c = stdlib_kernels("gemm.tile", {{"BM", "16"}, {"BN", "16"}, {"BK", "16"}});
    std::mt19937 rng(2);
    struct Case {
        const char* name;
        DataType t;
        bool ta, tb;
    };
    for (Case k :
         {Case{"gemm_f16", DataType::f16(), false, false}, Case{"gemm_f16_nt", DataType::f16(), false, true},
          Case{"gemm_f16_tn", DataType::f16(), true, false}, Case{"gemm_f16_tt", DataType::f16(), true, true},
          Case{"gemm_bf16", DataType::bf16(), false, false}}) {
        for (auto [M, N, K] :
             {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 37, 20}, {37, 7, 33}, {16, 32, 16}}) {
            INFO(k.name << " M=" << M << " N=" << N << " K=" << K);
            auto a = random_values(M * K, rng, k.t), b = random_values(K * N, rng, k.t);
            // Logical A[m, k] and B[k, n], at the offsets of the declared strides.
            auto A = [&](int64_t m, int64_t kk) { return a[k.ta ? m + kk * M : m * K + kk]; };
            auto B = [&](int64_t kk, int64_t n) { return b[k.tb ? kk + n * K : kk * N + n]; };
            RunArgs args;
            args.tensors = {{a, {}, {M, K}, k.ta ? std::vector<int64_t>{1, M} : std::vector<int64_t>{K, 1}},
                            {b, {}, {K, N}, {}},
                            poisoned(M * N)};
            args.sizes = {M, K, N};
            run_ok(kernel(c, k.name), args, c);
            std::vector<double> want(M * N), mag(M * N);
            for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n) {
                    double s = 0, sa = 0;
                    for (int64_t kk = 0; kk < K; ++kk) {
                        s += A(m, kk) * B(kk, n);
                        sa += std::fabs(A(m, kk) * B(kk, n));
                    }
                    want[m * N + n] = s;
                    mag[m * N + n] = sa;
                }
            // One rounding to the output type (unit roundoff 2^-11 for f16, 2^-8 for bf16;
            // f16 subnormals are 2^-24 apart), f32 roundings of the accumulator per K step.
            bool f16 = k.t == DataType::f16();
            double rel = f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
            check_close(args.tensors[2].data, want, rel * 1.01, 1e-6, &mag, f16 ? std::ldexp(1.0, -25) : 0);
        }
    }
}

TEST_CASE("interp: gemm_splitk adds A @ B into C, skipping empty splits", "[interp][kernels]") {
    const auto& c =
        stdlib_kernels("gemm_splitk.tile", {{"BM", "16"}, {"BN", "16"}, {"BK", "8"}, {"SPLIT_K", "4"}});
    std::mt19937 rng(3);
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 37}, {37, 20, 9}, {7, 1, 64}}) {
        INFO("M=" << M << " N=" << N << " K=" << K);
        auto a = random_values(M * K, rng, DataType::f16()), b = random_values(K * N, rng, DataType::f16());
        auto bias = random_values(M * N, rng, DataType::f32());
        RunArgs args;
        TensorArg C{bias, {}, {}, {}};
        C.data.resize(M * N + kGuard, NAN);
        args.tensors = {{a, {}, {}, {}}, {b, {}, {}, {}}, C};
        args.sizes = {M, K, N};
        run_ok(kernel(c, "gemm_splitk_f16"), args, c);
        std::vector<double> want(M * N), mag(M * N);
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
                double s = bias[m * N + n], sa = std::fabs(s);
                for (int64_t k = 0; k < K; ++k) {
                    s += a[m * K + k] * b[k * N + n];
                    sa += std::fabs(a[m * K + k] * b[k * N + n]);
                }
                want[m * N + n] = s;
                mag[m * N + n] = sa;
            }
        check_close(args.tensors[2].data, want, 0, 1e-6, &mag);
    }
}

TEST_CASE("interp: softmax over ragged rows, one and several column blocks", "[interp][kernels]") {
    const auto& c = stdlib_kernels("softmax.tile", {{"BM", "4"}, {"BN", "16"}});
    std::mt19937 rng(4);
    for (auto [name, t] :
         {std::pair{"softmax_f32", DataType::f32()}, std::pair{"softmax_f16", DataType::f16()},
          std::pair{"softmax_bf16", DataType::bf16()}}) {
        for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 1}, {7, 7}, {7, 37}, {37, 16}}) {
            INFO(name << " M=" << M << " N=" << N);
            auto x = random_values(M * N, rng, t, -4, 4);
            RunArgs args;
            args.tensors = {{x, {}, {}, {}}, poisoned(M * N)};
            args.sizes = {M, N};
            run_ok(kernel(c, name), args, c);
            std::vector<double> want(M * N);
            for (int64_t r = 0; r < M; ++r) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < N; ++j) mx = std::max(mx, x[r * N + j]);
                for (int64_t j = 0; j < N; ++j) sum += std::exp(x[r * N + j] - mx);
                for (int64_t j = 0; j < N; ++j) want[r * N + j] = std::exp(x[r * N + j] - mx) / sum;
            }
            // Unit roundoff of the output: 2^-11 (f16), 2^-8 (bf16); f32 intermediates add ~1e-7.
            double rel = t == DataType::f32() ? 1e-5 : t == DataType::f16() ? 1e-3 : std::ldexp(1.05, -8);
            check_close(args.tensors[1].data, want, rel, 1e-7);
        }
    }
}

TEST_CASE("interp: layernorm and rmsnorm against float64 statistics", "[interp][kernels]") {
    const auto& ln = stdlib_kernels("layernorm.tile", {{"BM", "4"}, {"BN", "16"}});
    const auto& rn = stdlib_kernels("rmsnorm.tile", {{"BM", "4"}, {"BN", "16"}});
    std::mt19937 rng(5);
    const double eps = 1e-5;
    for (auto [suffix, t] : {std::pair{"f32", DataType::f32()}, std::pair{"f16", DataType::f16()}}) {
        for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 7}, {7, 37}, {37, 16}, {5, 1}}) {
            INFO(suffix << " M=" << M << " N=" << N);
            // Rows with a mean of 3: the streaming statistics must not cancel.
            auto x = random_values(M * N, rng, t, 1, 5);
            auto g = random_values(N, rng, t, 0.5, 1.5), be = random_values(N, rng, t, -0.5, 0.5);
            double rel = t == DataType::f32() ? 1e-5 : 1e-3, abs = t == DataType::f32() ? 1e-5 : 2e-3;

            RunArgs args;
            args.tensors = {{x, {}, {}, {}}, {g, {}, {}, {}}, {be, {}, {}, {}}, poisoned(M * N)};
            args.sizes = {M, N};
            args.scalars = {eps};
            run_ok(kernel(ln, std::string("layernorm_") + suffix), args, ln);
            std::vector<double> want(M * N);
            for (int64_t r = 0; r < M; ++r) {
                double mean = 0, var = 0;
                for (int64_t j = 0; j < N; ++j) mean += x[r * N + j] / N;
                for (int64_t j = 0; j < N; ++j) var += (x[r * N + j] - mean) * (x[r * N + j] - mean) / N;
                for (int64_t j = 0; j < N; ++j)
                    want[r * N + j] = (x[r * N + j] - mean) / std::sqrt(var + eps) * g[j] + be[j];
            }
            {
                INFO("layernorm");
                check_close(args.tensors[3].data, want, rel, abs);
            }

            RunArgs rargs;
            rargs.tensors = {{x, {}, {}, {}}, {g, {}, {}, {}}, poisoned(M * N)};
            rargs.sizes = {M, N};
            rargs.scalars = {eps};
            run_ok(kernel(rn, std::string("rmsnorm_") + suffix), rargs, rn);
            for (int64_t r = 0; r < M; ++r) {
                double ms = 0;
                for (int64_t j = 0; j < N; ++j) ms += x[r * N + j] * x[r * N + j] / N;
                for (int64_t j = 0; j < N; ++j) want[r * N + j] = x[r * N + j] / std::sqrt(ms + eps) * g[j];
            }
            INFO("rmsnorm");
            check_close(rargs.tensors[2].data, want, rel, abs);
        }
    }
}

TEST_CASE("interp: row cumsum forward and reverse across column blocks", "[interp][kernels]") {
    const auto& c = stdlib_kernels("cumsum.tile", {{"BM", "4"}, {"BN", "16"}});
    std::mt19937 rng(6);
    struct Case {
        const char* name;
        DataType t;
        bool reverse;
    };
    for (Case k :
         {Case{"cumsum_f32", DataType::f32(), false}, Case{"cumsum_f32_reverse", DataType::f32(), true},
          Case{"cumsum_f16", DataType::f16(), false}}) {
        for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 1}, {7, 37}, {5, 32}}) {
            INFO(k.name << " M=" << M << " N=" << N);
            auto x = random_values(M * N, rng, k.t);
            RunArgs args;
            args.tensors = {{x, {}, {}, {}}, poisoned(M * N)};
            args.sizes = {M, N};
            run_ok(kernel(c, k.name), args, c);
            std::vector<double> want(M * N), mag(M * N);
            for (int64_t r = 0; r < M; ++r) {
                double s = 0, sa = 0;
                for (int64_t j = 0; j < N; ++j) {
                    int64_t col = k.reverse ? N - 1 - j : j;
                    s += x[r * N + col];
                    sa += std::fabs(x[r * N + col]);
                    want[r * N + col] = s;
                    mag[r * N + col] = sa;
                }
            }
            double rel = k.t == DataType::f32() ? 0 : std::ldexp(1.0, -11);
            check_close(args.tensors[1].data, want, rel * 1.01, 1e-6, &mag, std::ldexp(1.0, -25));
        }
    }
}

TEST_CASE("interp: flash attention (plain and causal) against a float64 softmax", "[interp][kernels]") {
    const auto& c = stdlib_kernels("flash_attn.tile", {{"BM", "16"}, {"BN", "16"}, {"D", "16"}});
    std::mt19937 rng(7);
    const int64_t D = 16;
    for (bool causal : {false, true}) {
        for (auto [B, H, S] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 2, 37}, {2, 1, 20}}) {
            INFO((causal ? "causal" : "plain") << " B=" << B << " H=" << H << " S=" << S);
            size_t n = B * H * S * D;
            auto q = random_values(n, rng, DataType::f16()), k = random_values(n, rng, DataType::f16()),
                 v = random_values(n, rng, DataType::f16());
            double scale = 1.0 / std::sqrt(double(D));
            RunArgs args;
            args.tensors = {{q, {}, {}, {}}, {k, {}, {}, {}}, {v, {}, {}, {}}, poisoned(n)};
            args.sizes = {B, H, S};
            args.scalars = {scale};
            run_ok(kernel(c, causal ? "attn_fwd_causal" : "attn_fwd"), args, c);
            std::vector<double> want(n);
            double sc = round_t(scale, DataType::f32());  // the scalar is an f32 parameter
            for (int64_t bh = 0; bh < B * H; ++bh) {
                const double* Q = &q[bh * S * D];
                const double* Kp = &k[bh * S * D];
                const double* V = &v[bh * S * D];
                for (int64_t i = 0; i < S; ++i) {
                    int64_t last = causal ? i + 1 : S;
                    std::vector<double> s(last);
                    double mx = -INFINITY, sum = 0;
                    for (int64_t j = 0; j < last; ++j) {
                        double dot = 0;
                        for (int64_t d = 0; d < D; ++d) dot += Q[i * D + d] * Kp[j * D + d];
                        s[j] = sc * dot;
                        mx = std::max(mx, s[j]);
                    }
                    for (int64_t j = 0; j < last; ++j) sum += std::exp(s[j] - mx);
                    for (int64_t d = 0; d < D; ++d) {
                        double o = 0;
                        for (int64_t j = 0; j < last; ++j) o += std::exp(s[j] - mx) / sum * V[j * D + d];
                        want[bh * S * D + i * D + d] = o;
                    }
                }
            }
            // p is rounded to f16 before p @ v, the output to f16: ~2^-11 relative each.
            check_close(args.tensors[3].data, want, 2e-3, 2e-3);
        }
    }
}
