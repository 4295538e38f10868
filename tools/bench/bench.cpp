// bench.cpp: the CPU table of issue 15 in one run: tilec-compiled kernels next to the
// speed limits of this machine, each ratio from the same run.
//   - row kernels (stdlib softmax_f32, rmsnorm_f32, layernorm_f32 at 4096 x 4096) in GB/s
//     next to memcpy of the same bytes (read X once, write Y once) on the same threads;
//   - GEMM f32 (tools/bench/bench.tile) and f16 (stdlib gemm_f16) in GFLOP/s next to
//     OpenBLAS's cblas_sgemm, loaded with dlopen when libopenblas.so.0 is installed (the
//     column is skipped otherwise: OpenBLAS is never a build dependency), with
//     OPENBLAS_CORETYPE=SkylakeX where the CPU has AVX-512 (the core is printed);
//   - the measured FMA peak (a register-only AVX-512 FMA loop on the same
//     threads, timed beside each GEMM), and each GEMM as a fraction of it.
// Every timing is the best of N runs after one warm-up (N = 25 for the row kernels, whose
// runs take milliseconds: memcpy's best on this VM rose from 31-36 to 36-46 GB/s with 25
// instead of 5, the kernels' less; 5 for the GEMMs), each kernel's runs alternating
// with its references' (memcpy; OpenBLAS and the FMA peak) so that all see the same
// phases of a shared machine's drifting bandwidth and clock, and each result is checked
// against a plain C++ loop (not timed) so the figures are of correct work. No thresholds.
// The row kernels also print the median over rounds of each round's memcpy time / kernel
// time: a ratio of two runs a moment apart, steadier than the ratio of two bests when the
// machine's bandwidth moves between phases.
//
//   tile_bench [--quick] [--reps N] [--threads T] [--only rows|gemm] [--cpu-time] [--offset B]
//     --reps     N runs of every kernel and reference, rows and GEMMs alike
//     --quick    small sizes, one rep (the ctest smoke test: keeps the program working)
//     --offset   the row kernels' X and Y (and memcpy's buffers) start B bytes past a
//                64-byte boundary (default 0, as a framework's allocator aligns tensors;
//                16 is where glibc's malloc puts large blocks): the CPU code streams a row
//                inside its compute loop only where the row starts on a 64-byte line
//     --cpu-time time every column by the CPU time of the thread that runs it instead of
//                the wall clock (needs --threads 1, which runs everything on the main
//                thread): on a shared machine other processes' time slices then stay out
//                of the figures, where wall times vary 2x from run to run
//     --threads  default: the hardware threads of the machine
//     --only     just the row kernels (with memcpy) or just the GEMMs (with the FMA peak)
#include "gemm.h"
#include "softmax.h"
#include "rmsnorm.h"
#include "layernorm.h"
#include "bench.h"
#include "tile/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <immintrin.h>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

namespace {

int g_threads = 1;
int g_reps = 5;       // the GEMMs' runs
int g_row_reps = 25;  // the row kernels' runs (each a few milliseconds)
bool g_ok = true;
bool g_cpu_time = false;  // --cpu-time
int g_offset = 0;         // --offset: bytes past a 64-byte boundary of the row buffers

// Seconds now: wall clock, or with --cpu-time this thread's CPU time.
double now_seconds() {
    if (g_cpu_time) {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The best time of each of `fns` (null ones skipped: 0) over `reps` rounds, each round
// running them in turn, and every round's times (rounds[r][i]: function i in round r).
// On a shared machine the memory bandwidth and clock drift by tens of percent within
// seconds; timed one after the other, a kernel and its reference (memcpy, OpenBLAS, the
// FMA peak) could each catch a different phase and their ratio would carry the drift.
struct Interleaved {
    std::vector<double> best;
    std::vector<std::vector<double>> rounds;
};

Interleaved seconds_interleaved(int reps, const std::vector<std::function<void()>>& fns) {
    for (auto& fn : fns)
        if (fn) fn();  // warm-up
    Interleaved out;
    out.best.assign(fns.size(), 0);
    for (size_t i = 0; i < fns.size(); ++i)
        if (fns[i]) out.best[i] = 1e300;
    for (int r = 0; r < reps; ++r) {
        out.rounds.emplace_back(fns.size(), 0.0);
        for (size_t i = 0; i < fns.size(); ++i) {
            if (!fns[i]) continue;
            // OpenBLAS's worker threads spin for tens of milliseconds after a call
            // returns (its THREAD_TIMEOUT): whatever ran next lost a core to them (the FMA
            // peak right after sgemm read half). A pause lets them go to sleep first.
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            double t0 = now_seconds();
            fns[i]();
            double t = now_seconds() - t0;
            out.rounds.back()[i] = t;
            out.best[i] = std::min(out.best[i], t);
        }
    }
    return out;
}

std::vector<double> seconds_best_interleaved(int reps, const std::vector<std::function<void()>>& fns) {
    return seconds_interleaved(reps, fns).best;
}

// The median over rounds of time(reference) / time(kernel) (indices into `fns`): a
// ratio of two runs made a moment apart. The memory bandwidth of a shared machine moves
// by 2x between phases; the best of each alone may come from different phases, the two
// halves of one round share theirs.
double median_round_ratio(const Interleaved& t, size_t kernel, size_t reference) {
    std::vector<double> r;
    for (auto& round : t.rounds) r.push_back(round[reference] / round[kernel]);
    std::sort(r.begin(), r.end());
    size_t n = r.size();
    return n == 0 ? 0.0 : n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
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
    std::printf("    check %-22s checksum %.6e vs reference %.6e, max err / max |ref| = %.2e  %s\n", what, sum_got,
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

// OpenBLAS's cblas_sgemm through dlopen, or null when the library is not installed.
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
struct OpenBlas {
    SgemmFn sgemm = nullptr;
    std::string core;
};
OpenBlas load_openblas() {
    // Its AVX-512 kernels where the CPU has AVX-512: the comparison the issue asks for,
    // even where the environment pins another core (some machines set Haswell).
    if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    OpenBlas ob;
    void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return ob;
    ob.sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
    if (auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads")))
        set_threads(g_threads);
    if (auto core = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"))) ob.core = core();
    return ob;
}
OpenBlas g_openblas;

// FMA peak: kFmaChains independent register accumulators (more than FMA latency x FMA
// ports), so each thread's loop is bound by FMA throughput alone. AVX-512 only: the
// issue's comparison; the intrinsics need the target attribute on their function.
constexpr int kFmaChains = 16;
constexpr int64_t kFmaIters = 10'000'000;
constexpr double kFmaFlop = 2.0 * 16 * kFmaChains * double(kFmaIters);  // per thread and run
__attribute__((target("avx512f"))) float fma_chains_avx512() {
    __m512 acc[kFmaChains], a = _mm512_set1_ps(0.999f);
    for (auto& x : acc) x = a;
    for (int64_t i = 0; i < kFmaIters; ++i)
        for (auto& x : acc) x = _mm512_fmadd_ps(x, a, a);
    for (int j = 1; j < kFmaChains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[0]);
    return lanes[0];
}
// One run of the FMA chains on each of g_threads threads; null without AVX-512. Timed
// beside each GEMM (seconds_best_interleaved), so the "% of FMA peak" is of a peak
// measured in the same phases of the machine as the GEMM (measured once, it moved
// 286 -> 396 GFLOP/s between runs here).
std::function<void()> fma_peak_run() {
    if (!__builtin_cpu_supports("avx512f")) return nullptr;
    return [] {
        std::vector<float> sink(static_cast<size_t>(g_threads));
        parallel_rows(g_threads, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) sink[size_t(i)] = fma_chains_avx512();
        });
        if (sink[0] == 42.0f) std::printf(" ");  // the result is used: the loop stays
    };
}

void print_gemm_row(const char* what, int64_t n, const std::vector<double>& t) {
    double flop = 2.0 * double(n) * double(n) * double(n);
    double tile = flop / t[0] * 1e-9;
    std::printf("  gemm %s %5lld^3           tilec %8.1f GFLOP/s", what, (long long)n, tile);
    if (t[1] > 0)
        std::printf("   OpenBLAS sgemm %8.1f GFLOP/s   ratio %5.2fx", flop / t[1] * 1e-9, t[1] / t[0]);
    else
        std::printf("   OpenBLAS: not installed (libopenblas.so.0), column skipped");
    if (t[2] > 0) {
        double peak = kFmaFlop * g_threads / t[2] * 1e-9;
        std::printf("   FMA peak %6.1f GFLOP/s: %3.0f%%", peak, 100.0 * tile / peak);
    } else {
        std::printf("   FMA peak: no AVX-512, not measured");
    }
    std::printf("\n");
}

void bench_gemm_f32(int64_t n) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> A(static_cast<size_t>(n * n)), B(static_cast<size_t>(n * n)), C(static_cast<size_t>(n * n)), Cn(static_cast<size_t>(n * n));
    for (auto& x : A) x = u(rng);
    for (auto& x : B) x = u(rng);
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = g_threads;
    int ni = int(n);
    std::function<void()> blas;
    if (g_openblas.sgemm)
        blas = [&] {
            g_openblas.sgemm(101 /*row major*/, 111 /*no trans*/, 111, ni, ni, ni, 1.0f, A.data(), ni, B.data(), ni, 0.0f, Cn.data(), ni);
        };
    print_gemm_row(
        "f32", n,
        seconds_best_interleaved(
            g_reps, {[&] { check_status(gemm_f32_cpu(&opt, A.data(), B.data(), C.data(), n, n, n), "gemm_f32"); }, blas,
                     fma_peak_run()}));
    auto id = [](float x) { return x; };
    naive_gemm(A.data(), B.data(), Cn.data(), n, n, n, id, id);
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
    std::vector<float> Af(A.size()), Bf(B.size()), Cf(C.size());
    for (size_t i = 0; i < A.size(); ++i) Af[i] = f16_float(A[i]), Bf[i] = f16_float(B[i]);
    int ni = int(n);
    std::function<void()> blas;
    if (g_openblas.sgemm)  // OpenBLAS has no f16 GEMM here: sgemm on the widened inputs
        blas = [&] { g_openblas.sgemm(101, 111, 111, ni, ni, ni, 1.0f, Af.data(), ni, Bf.data(), ni, 0.0f, Cf.data(), ni); };
    print_gemm_row(
        "f16", n,
        seconds_best_interleaved(
            g_reps, {[&] { check_status(gemm_f16_cpu(&opt, A.data(), B.data(), C.data(), n, n, n), "gemm_f16"); }, blas,
                     fma_peak_run()}));
    auto id = [](float x) { return x; };
    naive_gemm(Af.data(), Bf.data(), Cn.data(), n, n, n, id, f16_bits);
    std::vector<double> got(C.size()), ref(C.size());
    for (size_t i = 0; i < C.size(); ++i) got[i] = f16_float(C[i]), ref[i] = f16_float(Cn[i]);
    verify("gemm_f16", got, ref, 2e-3);  // both round to f16 at the end: one ulp apart at most
}

// memcpy of `count` floats from src to dst, split in contiguous chunks over g_threads.
void memcpy_threads(const float* src, float* dst, int64_t count) {
    parallel_rows(count, [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, size_t(e - b) * sizeof(float)); });
}

void print_row_kernel(const char* what, int64_t M, int64_t N, const Interleaved& t) {
    double bytes = 2.0 * double(M) * double(N) * sizeof(float);  // read X once, write Y once
    double t_tile = t.best[0], t_memcpy = t.best[1];
    std::printf("  %-13s %lld x %lld   tilec %8.2f GB/s   memcpy %8.2f GB/s   ratio %5.2fx   median of rounds %5.2fx\n",
                what, (long long)M, (long long)N, bytes / t_tile * 1e-9, bytes / t_memcpy * 1e-9, t_memcpy / t_tile,
                median_round_ratio(t, 0, 1));
}

// M * N floats starting g_offset bytes past a 64-byte boundary.
struct RowBuffer {
    std::vector<float> storage;
    float* p;
    explicit RowBuffer(int64_t n) : storage(size_t(n) + 32) {
        auto a = reinterpret_cast<uintptr_t>(storage.data());
        p = reinterpret_cast<float*>((a + 63) / 64 * 64 + uintptr_t(g_offset));
    }
    std::vector<double> doubles(int64_t n) const { return std::vector<double>(p, p + n); }
};

struct RowData {
    RowBuffer X, Y, copy;
    std::vector<float> ref, gamma, beta;
    RowData(int64_t M, int64_t N) : X(M * N), Y(M * N), copy(M * N), ref(size_t(M * N)), gamma(size_t(N)), beta(size_t(N)) {
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> u(-8, 8);
        for (int64_t i = 0; i < M * N; ++i) X.p[i] = u(rng);
        for (auto& g : gamma) g = u(rng) / 8;
        for (auto& b : beta) b = u(rng) / 8;
    }
};

void bench_row_kernels(int64_t M, int64_t N) {
    RowData d(M, N);
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = g_threads;
    const float eps = 1e-5f;
    // Each kernel is timed alternately with memcpy of the same bytes (seconds_interleaved).
    auto copy = [&] { memcpy_threads(d.X.p, d.copy.p, M * N); };
    auto rows = [&](auto per_row) {  // the plain reference, row by row in double
        for (int64_t r = 0; r < M; ++r) per_row(d.X.p + r * N, d.ref.data() + r * N);
    };

    auto times = seconds_interleaved(
        g_row_reps, {[&] { check_status(softmax_f32_cpu(&opt, d.X.p, d.Y.p, M, N), "softmax_f32"); }, copy});
    print_row_kernel("softmax f32", M, N, times);
    rows([&](const float* x, float* y) {
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < N; ++c) mx = std::max(mx, double(x[c]));
        for (int64_t c = 0; c < N; ++c) sum += std::exp(double(x[c]) - mx);
        for (int64_t c = 0; c < N; ++c) y[c] = float(std::exp(double(x[c]) - mx) / sum);
    });
    verify("softmax_f32", d.Y.doubles(M * N), std::vector<double>(d.ref.begin(), d.ref.end()), 1e-5);

    times = seconds_interleaved(
        g_row_reps, {[&] { check_status(rmsnorm_f32_cpu(&opt, d.X.p, d.gamma.data(), d.Y.p, M, N, eps), "rmsnorm_f32"); },
                 copy});
    print_row_kernel("rmsnorm f32", M, N, times);
    rows([&](const float* x, float* y) {
        double ss = 0;
        for (int64_t c = 0; c < N; ++c) ss += double(x[c]) * x[c];
        double rstd = 1 / std::sqrt(ss / double(N) + eps);
        for (int64_t c = 0; c < N; ++c) y[c] = float(x[c] * rstd * d.gamma[size_t(c)]);
    });
    verify("rmsnorm_f32", d.Y.doubles(M * N), std::vector<double>(d.ref.begin(), d.ref.end()), 1e-5);

    times = seconds_interleaved(g_row_reps, {[&] {
                                                   check_status(layernorm_f32_cpu(&opt, d.X.p, d.gamma.data(), d.beta.data(),
                                                                                  d.Y.p, M, N, eps),
                                                                "layernorm_f32");
                                               },
                                               copy});
    print_row_kernel("layernorm f32", M, N, times);
    rows([&](const float* x, float* y) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < N; ++c) mean += x[c];
        mean /= double(N);
        for (int64_t c = 0; c < N; ++c) var += (x[c] - mean) * (x[c] - mean);
        double rstd = 1 / std::sqrt(var / double(N) + eps);
        for (int64_t c = 0; c < N; ++c) y[c] = float((x[c] - mean) * rstd * d.gamma[size_t(c)] + d.beta[size_t(c)]);
    });
    verify("layernorm_f32", d.Y.doubles(M * N), std::vector<double>(d.ref.begin(), d.ref.end()), 1e-5);
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string only;
    g_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--reps" && i + 1 < argc) {
            g_reps = g_row_reps = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--threads" && i + 1 < argc) {
            g_threads = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--offset" && i + 1 < argc) {
            g_offset = std::atoi(argv[++i]) / 4 * 4;
            if (g_offset < 0 || g_offset >= 64) {
                std::fprintf(stderr, "%s: --offset takes 0 to 60 bytes\n", argv[0]);
                return 2;
            }
        } else if (a == "--cpu-time") {
            g_cpu_time = true;
        } else if (a == "--only" && i + 1 < argc && (std::string(argv[i + 1]) == "rows" || std::string(argv[i + 1]) == "gemm")) {
            only = argv[++i];
        } else {
            std::fprintf(stderr, "usage: %s [--quick] [--reps N] [--threads T] [--only rows|gemm] [--cpu-time] [--offset B]\n", argv[0]);
            return 2;
        }
    }
    if (quick) g_reps = g_row_reps = 1;
    if (g_cpu_time && g_threads != 1) {
        std::fprintf(stderr, "%s: --cpu-time needs --threads 1\n", argv[0]);
        return 2;
    }
    g_openblas = load_openblas();
    std::printf("tile_bench: %d thread(s) for every column, best of %d (rows) and %d (GEMMs) run(s) by %s%s; row buffers "
                "%d bytes past 64-byte lines; OpenBLAS: %s\n",
                g_threads, g_row_reps, g_reps, g_cpu_time ? "thread CPU time" : "wall time", quick ? ", --quick sizes" : "", g_offset,
                g_openblas.sgemm ? (g_openblas.core.empty() ? "loaded" : g_openblas.core.c_str()) : "not installed");
    if (only != "gemm") {
        if (quick)
            bench_row_kernels(37, 1500);
        else
            bench_row_kernels(4096, 4096);
    }
    if (only != "rows") {
        const std::vector<int64_t> gemm_sizes = quick ? std::vector<int64_t>{67, 130} : std::vector<int64_t>{1024, 2048, 2000};
        for (int64_t n : gemm_sizes) bench_gemm_f32(n);
        for (int64_t n : gemm_sizes) bench_gemm_f16(n);
    }
    if (!g_ok) {
        std::printf("tile_bench: some results did NOT match the plain C++ reference\n");
        return 1;
    }
    return 0;
}
