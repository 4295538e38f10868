// cpp_api_test.cpp: the generated headers from C++17. Every stdlib kernel's header is
// included in one translation unit (they must compile as C++ with -pedantic -Werror,
// declare extern "C" functions, and not clash with each other or with tile/runtime.h);
// a few kernels then run on std::vector data against float64 references, through a
// small wrapper that turns statuses into exceptions.
#include "activations.h"
#include "cumsum.h"
#include "flash_attn.h"
#include "gemm.h"
#include "gemm_splitk.h"
#include "layernorm.h"
#include "rmsnorm.h"
#include "softmax.h"
#include "vector_add.h"
// Included twice: the include guards must hold.
#include "gemm.h"
#include "tile/runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    }
}

// The signatures C++ sees are the documented C ones (extern "C" is checked by linking).
static_assert(std::is_same_v<decltype(&vector_add_f32_cpu),
                             tile_status (*)(const tile_cpu_options*, const void*, const void*, void*, int64_t)>);
static_assert(std::is_same_v<decltype(&gemm_f16_cpu), tile_status (*)(const tile_cpu_options*, const void*,
                                                                       const void*, void*, int64_t, int64_t, int64_t)>);
static_assert(std::is_same_v<decltype(&layernorm_f32_cpu),
                             tile_status (*)(const tile_cpu_options*, const void*, const void*, const void*, void*,
                                             int64_t, int64_t, float)>);
static_assert(std::is_same_v<decltype(&attn_fwd_causal_cpu),
                             tile_status (*)(const tile_cpu_options*, const void*, const void*, const void*, void*,
                                             int64_t, int64_t, int64_t, float)>);
static_assert(std::is_enum_v<tile_status> || std::is_integral_v<tile_status>);

struct tile_error : std::runtime_error {
    tile_status status;
    tile_error(tile_status s, const char* msg) : std::runtime_error(msg), status(s) {}
};

// Calls an entry point; a failure becomes an exception carrying tile_last_error().
template <class Fn, class... Args>
void check(Fn fn, Args... args) {
    tile_status s = fn(args...);
    if (s != TILE_SUCCESS) throw tile_error(s, tile_last_error());
}

// f16 conversions by the bit layout (round to nearest even); enough for test data.
uint16_t to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = int32_t((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (e <= 0) {  // subnormal or zero (inputs here are >= 2^-14 in magnitude or zero)
        return uint16_t(sign);
    }
    uint32_t h = sign | (uint32_t(e) << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return uint16_t(h);
}
double from_f16(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

// Relative error |got - ref| <= rtol |ref| + atol for all elements; NaN fails.
template <class Got>
void compare(const std::string& what, const std::vector<Got>& got, const std::vector<double>& ref, double rtol,
             double atol, double (*value)(Got) = nullptr) {
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        double g = value ? value(got[i]) : double(got[i]);
        if (!(std::fabs(g - ref[i]) <= atol + rtol * std::fabs(ref[i]))) {
            if (bad < 5) std::fprintf(stderr, "  %s[%zu]: got %.9g, expected %.9g\n", what.c_str(), i, g, ref[i]);
            ++bad;
        }
    }
    expect(bad == 0, what + ": " + std::to_string(bad) + " of " + std::to_string(ref.size()) + " elements differ");
}

std::mt19937_64 rng(12345);
double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// Poisoned with NaN (0xff bytes) so unwritten elements are caught.
template <class T>
std::vector<T> poisoned(size_t n) {
    std::vector<T> v(n);
    std::memset(v.data(), 0xff, n * sizeof(T));
    return v;
}

void test_vector_add(int64_t n) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (auto& x : a) x = float(uniform(-10, 10));
    for (auto& x : b) x = float(uniform(-10, 10));
    auto c = poisoned<float>(static_cast<size_t>(n));
    check(vector_add_f32_cpu, nullptr, a.data(), b.data(), c.data(), n);
    std::vector<double> ref(static_cast<size_t>(n));
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = double(a[i] + b[i]);
    compare("vector_add_f32 N=" + std::to_string(n), c, ref, 0, 0);
}

void test_softmax(int64_t M, int64_t N) {
    std::vector<float> x(static_cast<size_t>(M * N));
    for (auto& v : x) v = float(uniform(-8, 8));
    auto y = poisoned<float>(x.size());
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = 2;
    check(softmax_f32_cpu, &opt, x.data(), y.data(), M, N);
    std::vector<double> ref(x.size());
    for (int64_t r = 0; r < M; ++r) {
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < N; ++c) mx = std::fmax(mx, x[static_cast<size_t>(r * N + c)]);
        for (int64_t c = 0; c < N; ++c) sum += std::exp(x[static_cast<size_t>(r * N + c)] - mx);
        for (int64_t c = 0; c < N; ++c) ref[static_cast<size_t>(r * N + c)] = std::exp(x[static_cast<size_t>(r * N + c)] - mx) / sum;
    }
    compare("softmax_f32 M=" + std::to_string(M) + " N=" + std::to_string(N), y, ref, 2e-5, 1e-7);
}

void test_layernorm(int64_t M, int64_t N) {
    std::vector<float> x(static_cast<size_t>(M * N)), g(static_cast<size_t>(N)), b(static_cast<size_t>(N));
    for (auto& v : x) v = float(uniform(-3, 3));
    for (auto& v : g) v = float(uniform(0.5, 1.5));
    for (auto& v : b) v = float(uniform(-1, 1));
    auto y = poisoned<float>(x.size());
    const float eps = 1e-5f;
    check(layernorm_f32_cpu, nullptr, x.data(), g.data(), b.data(), y.data(), M, N, eps);
    std::vector<double> ref(x.size());
    for (int64_t r = 0; r < M; ++r) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < N; ++c) mean += x[static_cast<size_t>(r * N + c)];
        mean /= double(N);
        for (int64_t c = 0; c < N; ++c) var += (x[static_cast<size_t>(r * N + c)] - mean) * (x[static_cast<size_t>(r * N + c)] - mean);
        double rstd = 1 / std::sqrt(var / double(N) + double(eps));
        for (int64_t c = 0; c < N; ++c)
            ref[static_cast<size_t>(r * N + c)] = (x[static_cast<size_t>(r * N + c)] - mean) * rstd * g[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
    }
    compare("layernorm_f32 M=" + std::to_string(M) + " N=" + std::to_string(N), y, ref, 2e-5, 2e-5);
}

void test_gemm(int64_t M, int64_t N, int64_t K) {
    std::vector<uint16_t> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
    for (auto& v : a) v = to_f16(float(uniform(-1, 1)));
    for (auto& v : b) v = to_f16(float(uniform(-1, 1)));
    auto c = poisoned<uint16_t>(static_cast<size_t>(M * N));
    check(gemm_f16_cpu, nullptr, a.data(), b.data(), c.data(), M, K, N);
    std::vector<double> ref(c.size());
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += from_f16(a[static_cast<size_t>(m * K + k)]) * from_f16(b[static_cast<size_t>(k * N + n)]);
            ref[static_cast<size_t>(m * N + n)] = s;
        }
    compare<uint16_t>("gemm_f16 M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K), c,
                      ref, 1e-2, 1e-2, from_f16);
}

void test_errors() {
    std::vector<float> y(4);
    try {
        check(vector_add_f32_cpu, nullptr, nullptr, y.data(), y.data(), int64_t{4});
        expect(false, "vector_add_f32 with A NULL did not fail");
    } catch (const tile_error& e) {
        expect(e.status == TILE_ERROR_INVALID_ARGUMENT, "A NULL: status " + std::to_string(int(e.status)));
        expect(std::strstr(e.what(), "vector_add_f32_cpu: tensor A is NULL") != nullptr,
               std::string("A NULL: message \"") + e.what() + "\"");
    }
    // The error is per thread: a std::thread starts with none and keeps its own.
    std::string seen, own;
    std::thread t([&] {
        seen = tile_last_error();
        std::vector<float> z(2);
        (void)softmax_f32_cpu(nullptr, z.data(), z.data(), -1, 2);
        own = tile_last_error();
    });
    t.join();
    expect(seen.empty(), "a new std::thread saw \"" + seen + "\"");
    expect(own.find("softmax_f32_cpu: size M = -1 is negative") != std::string::npos, "thread's own: " + own);
    expect(std::string(tile_last_error()).find("tensor A is NULL") != std::string::npos,
           std::string("main thread's message became \"") + tile_last_error() + "\"");
    expect(std::string(tile_status_string(TILE_ERROR_INVALID_ARGUMENT)) == "invalid argument",
           "tile_status_string");
}

}  // namespace

int main() {
    try {
        for (int64_t n : {1, 1000, 4097}) test_vector_add(n);
        test_softmax(1, 1);
        test_softmax(5, 1500);
        test_softmax(127, 300);
        test_layernorm(1, 100);
        test_layernorm(7, 1025);
        test_gemm(1, 130, 37);
        test_gemm(127, 65, 200);
        test_gemm(300, 37, 33);
        test_errors();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FAILED: exception: %s\n", e.what());
        return 1;
    }
    if (failures) {
        std::fprintf(stderr, "e2e/cpp_api: %d check(s) FAILED\n", failures);
        return 1;
    }
    std::printf("e2e/cpp_api: all checks passed\n");
    return 0;
}
