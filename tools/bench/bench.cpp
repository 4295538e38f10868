// bench.cpp: CPU throughput of tilec-compiled kernels next to naive C++ loops, in one run.
// GEMM f32 (tools/bench/bench.tile) and f16 (stdlib gemm_f16), f32 accumulation, in
// GFLOP/s; row softmax f32 (stdlib softmax_f32) in GB/s. The naive versions are plain
// loops (i-k-j GEMM, three-pass softmax with std::exp) compiled with the flags of
// tools/bench/cpu.sh, split over rows on the same number of threads, so the ratio shows
// what the compiled kernel adds over what the C++ compiler gets from straightforward
// code. Every timing is the best of N runs after one warm-up, and each result is
// checked against the naive one so the figures are of correct work. No thresholds.
//
//   tile_bench [--quick] [--reps N] [--threads T]
//     --quick    small sizes, one rep (the ctest smoke test: keeps the program working)
//     --threads  default: the hardware threads of the machine
#include "gemm.h"
#include "softmax.h"
#include "bench.h"
#include "tile/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_threads = 1;
int g_reps = 5;
bool g_ok = true;

double seconds_best_of(int reps, const std::function<void()>& fn) {
    fn();  // warm-up: page faults, the pool's threads, caches
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
}

// Runs body(row_begin, row_end) over [0, rows) on g_threads threads.
void parallel_rows(int64_t rows, const std::function<void(int64_t, int64_t)>& body) {
    int t = int(std::min<int64_t>(g_threads, std::max<int64_t>(rows, 1)));
    std::vector<std::thread> pool;
    int64_t chunk = (rows + t - 1) / t;
    for (int i = 1; i < t; ++i) {
        int64_t b = i * chunk, e = std::min(rows, b + chunk);
        if (b < e) pool.emplace_back(body, b, e);
    }
    body(0, std::min(rows, chunk));
    for (auto& th : pool) th.join();
}

void check_status(tile_status s, const char* what) {
    if (s != TILE_SUCCESS) {
        std::fprintf(stderr, "%s failed: %s (%s)\n", what, tile_last_error(), tile_status_string(s));
        std::exit(1);
    }
}

// Largest |got - ref| relative to the largest |ref|: a norm-wise check that different
// summation orders pass and wrong results do not.
void verify(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
    double diff = 0, scale = 0, sum_got = 0, sum_ref = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        double d = std::fabs(got[i] - ref[i]);
        diff = std::isnan(d) ? INFINITY : std::max(diff, d);
        scale = std::max(scale, std::fabs(ref[i]));
        sum_got += got[i];
        sum_ref += ref[i];
    }
    double rel = scale > 0 ? diff / scale : diff;
    bool ok = rel <= tol;
    g_ok = g_ok && ok;
    std::printf("    check %-22s checksum %.6e vs naive %.6e, max err / max |naive| = %.2e  %s\n", what, sum_got,
                sum_ref, rel, ok ? "ok" : "MISMATCH");
}

// f16 <-> float through _Float16 (F16C with -march=native).
inline uint16_t f16_bits(float f) {
    _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}
inline float f16_float(uint16_t b) {
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
}

// Naive GEMM C = A B, row-major, i-k-j so the inner loop is contiguous and vectorizes.
template <class In, class Load, class Store, class Out>
void naive_gemm(const In* A, const In* B, Out* C, int64_t M, int64_t N, int64_t K, Load load, Store store) {
    parallel_rows(M, [&](int64_t m0, int64_t m1) {
        std::vector<float> acc(static_cast<size_t>(N));
        for (int64_t m = m0; m < m1; ++m) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int64_t k = 0; k < K; ++k) {
                float a = load(A[m * K + k]);
                const In* b = B + k * N;
                for (int64_t n = 0; n < N; ++n) acc[static_cast<size_t>(n)] += a * load(b[n]);
            }
            for (int64_t n = 0; n < N; ++n) C[m * N + n] = store(acc[static_cast<size_t>(n)]);
        }
    });
}

void bench_gemm_f32(int64_t n) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> A(static_cast<size_t>(n * n)), B(static_cast<size_t>(n * n)), C(static_cast<size_t>(n * n)), Cn(static_cast<size_t>(n * n));
    for (auto& x : A) x = u(rng);
    for (auto& x : B) x = u(rng);
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = g_threads;
    double t_tile = seconds_best_of(g_reps, [&] { check_status(gemm_f32_cpu(&opt, A.data(), B.data(), C.data(), n, n, n), "gemm_f32"); });
    auto id = [](float x) { return x; };
    double t_naive = seconds_best_of(g_reps, [&] { naive_gemm(A.data(), B.data(), Cn.data(), n, n, n, id, id); });
    double flop = 2.0 * double(n) * double(n) * double(n);
    std::printf("  gemm f32 %5lld^3   tilec %8.2f GFLOP/s   naive %8.2f GFLOP/s   ratio %5.2fx\n", (long long)n,
                flop / t_tile * 1e-9, flop / t_naive * 1e-9, t_naive / t_tile);
    verify("gemm_f32", std::vector<double>(C.begin(), C.end()), std::vector<double>(Cn.begin(), Cn.end()), 1e-5);
}

void bench_gemm_f16(int64_t n) {
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<uint16_t> A(static_cast<size_t>(n * n)), B(static_cast<size_t>(n * n)), C(static_cast<size_t>(n * n)), Cn(static_cast<size_t>(n * n));
    for (auto& x : A) x = f16_bits(u(rng));
    for (auto& x : B) x = f16_bits(u(rng));
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = g_threads;
    double t_tile = seconds_best_of(g_reps, [&] { check_status(gemm_f16_cpu(&opt, A.data(), B.data(), C.data(), n, n, n), "gemm_f16"); });
    // Naive f16: widen A and B to f32 first (timed; element-wise conversions in the inner
    // loop would become library calls and make the baseline look far worse than it is).
    std::vector<float> Af(A.size()), Bf(B.size());
    double t_naive = seconds_best_of(g_reps, [&] {
        parallel_rows(n, [&](int64_t r0, int64_t r1) {
            for (int64_t i = r0 * n; i < r1 * n; ++i) Af[static_cast<size_t>(i)] = f16_float(A[static_cast<size_t>(i)]);
            for (int64_t i = r0 * n; i < r1 * n; ++i) Bf[static_cast<size_t>(i)] = f16_float(B[static_cast<size_t>(i)]);
        });
        auto id = [](float x) { return x; };
        naive_gemm(Af.data(), Bf.data(), Cn.data(), n, n, n, id, f16_bits);
    });
    double flop = 2.0 * double(n) * double(n) * double(n);
    std::printf("  gemm f16 %5lld^3   tilec %8.2f GFLOP/s   naive %8.2f GFLOP/s   ratio %5.2fx\n", (long long)n,
                flop / t_tile * 1e-9, flop / t_naive * 1e-9, t_naive / t_tile);
    std::vector<double> got(C.size()), ref(C.size());
    for (size_t i = 0; i < C.size(); ++i) got[i] = f16_float(C[i]), ref[i] = f16_float(Cn[i]);
    verify("gemm_f16", got, ref, 2e-3);  // both round to f16 at the end: one ulp apart at most
}

void bench_softmax_f32(int64_t M, int64_t N) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-8, 8);
    std::vector<float> X(static_cast<size_t>(M * N)), Y(static_cast<size_t>(M * N)), Yn(static_cast<size_t>(M * N));
    for (auto& x : X) x = u(rng);
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = g_threads;
    double t_tile = seconds_best_of(g_reps, [&] { check_status(softmax_f32_cpu(&opt, X.data(), Y.data(), M, N), "softmax_f32"); });
    double t_naive = seconds_best_of(g_reps, [&] {
        parallel_rows(M, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* x = X.data() + r * N;
                float* y = Yn.data() + r * N;
                float mx = -INFINITY, sum = 0;
                for (int64_t c = 0; c < N; ++c) mx = std::max(mx, x[c]);
                for (int64_t c = 0; c < N; ++c) sum += (y[c] = std::exp(x[c] - mx));
                float inv = 1.0f / sum;
                for (int64_t c = 0; c < N; ++c) y[c] *= inv;
            }
        });
    });
    double bytes = 2.0 * double(M) * double(N) * sizeof(float);  // read X once, write Y once
    std::printf("  softmax f32 %lld x %lld   tilec %8.2f GB/s   naive %8.2f GB/s   ratio %5.2fx\n", (long long)M,
                (long long)N, bytes / t_tile * 1e-9, bytes / t_naive * 1e-9, t_naive / t_tile);
    verify("softmax_f32", std::vector<double>(Y.begin(), Y.end()), std::vector<double>(Yn.begin(), Yn.end()), 1e-5);
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    g_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--reps" && i + 1 < argc) {
            g_reps = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--threads" && i + 1 < argc) {
            g_threads = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: %s [--quick] [--reps N] [--threads T]\n", argv[0]);
            return 2;
        }
    }
    if (quick) g_reps = 1;
    std::printf("tile_bench: %d thread(s) (tilec kernels and naive loops alike), best of %d run(s)%s\n", g_threads,
                g_reps, quick ? ", --quick sizes" : "");
    const std::vector<int64_t> gemm_sizes = quick ? std::vector<int64_t>{67, 130} : std::vector<int64_t>{1024, 2048};
    for (int64_t n : gemm_sizes) bench_gemm_f32(n);
    for (int64_t n : gemm_sizes) bench_gemm_f16(n);
    if (quick)
        bench_softmax_f32(37, 1500);
    else
        bench_softmax_f32(4096, 4096);
    if (!g_ok) {
        std::printf("tile_bench: some results did NOT match the naive loops\n");
        return 1;
    }
    return 0;
}
