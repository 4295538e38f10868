/* semantics_test.c: tests/e2e/semantics.tile on the CPU: integer floor division, modulo and
 * shifts; guarded reads that never touch memory past a tensor (an unmapped page follows
 * it); a failing assert; atomic_add from concurrent blocks in f32/f64/i32 and, through
 * compare-and-swap, f16/bf16; every reduction with and without clear. */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>

#include "e2e_common.h"
#include "semantics.h"

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

static void test_int_ops(void) {
    enum { N = 200 };
    int32_t a[N], b[N], q[N], r[N], s[N], l[N];
    int64_t a64[N], b64[N], q64[N], r64[N], s64[N], l64[N];
    int8_t a8[N], b8[N], q8[N], r8[N], s8[N], l8[N];
    uint32_t au[N], bu[N], qu[N], ru[N], su[N], lu[N];
    for (int i = 0; i < N; ++i) {
        a[i] = (int32_t)(e2e_next() % 2001) - 1000;
        b[i] = (int32_t)(e2e_next() % 41) - 20;
        if (b[i] == 0) b[i] = 7;
        a64[i] = (int64_t)(e2e_next() >> 2) * (i % 2 ? -1 : 1);
        b64[i] = (int64_t)(e2e_next() % 1000) - 500;
        if (b64[i] == 0) b64[i] = -3;
        a8[i] = (int8_t)(e2e_next() % 256 - 128);
        b8[i] = (int8_t)(e2e_next() % 21 - 10);
        if (b8[i] == 0 || (a8[i] == -128 && b8[i] == -1)) b8[i] = 3;
        au[i] = (uint32_t)e2e_next();
        bu[i] = (uint32_t)(e2e_next() % 100) + 1;
    }
    E2E_EXPECT(int_ops_i32_cpu(NULL, a, b, q, r, s, l, N) == TILE_SUCCESS, "%s", tile_last_error());
    E2E_EXPECT(int_ops_i64_cpu(NULL, a64, b64, q64, r64, s64, l64, N) == TILE_SUCCESS, "%s", tile_last_error());
    E2E_EXPECT(int_ops_i8_cpu(NULL, a8, b8, q8, r8, s8, l8, N) == TILE_SUCCESS, "%s", tile_last_error());
    E2E_EXPECT(int_ops_u32_cpu(NULL, au, bu, qu, ru, su, lu, N) == TILE_SUCCESS, "%s", tile_last_error());
    int bad = 0;
    for (int i = 0; i < N; ++i) {
        bad += q[i] != floor_div(a[i], b[i]) || r[i] != floor_mod(a[i], b[i]);
        bad += s[i] != (a[i] >> 3) || l[i] != (int32_t)((uint32_t)a[i] << 2);
        bad += q64[i] != floor_div(a64[i], b64[i]) || r64[i] != floor_mod(a64[i], b64[i]);
        bad += s64[i] != (a64[i] >> 3) || l64[i] != (int64_t)((uint64_t)a64[i] << 2);
        bad += q8[i] != (int8_t)floor_div(a8[i], b8[i]) || r8[i] != (int8_t)floor_mod(a8[i], b8[i]);
        bad += s8[i] != (int8_t)(a8[i] >> 3) || l8[i] != (int8_t)(uint8_t)((unsigned)a8[i] << 2);  // wraps
        bad += qu[i] != au[i] / bu[i] || ru[i] != au[i] % bu[i] || su[i] != au[i] >> 3 || lu[i] != au[i] << 2;
        if (bad && bad < 4)
            fprintf(stderr, "  [%d] i32 %d,%d -> %d,%d; i64 %lld,%lld -> %lld,%lld; i8 %d,%d -> %d,%d\n", i, a[i], b[i],
                    q[i], r[i], (long long)a64[i], (long long)b64[i], (long long)q64[i], (long long)r64[i], a8[i],
                    b8[i], q8[i], r8[i]);
    }
    E2E_EXPECT(bad == 0, "integer ops: %d mismatches", bad);
}

/* X ends exactly where an unmapped page begins: a speculative read of X[N] would crash. */
static void test_guarded(void) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char* mem = (unsigned char*)mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE,
                                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    E2E_EXPECT(mem != MAP_FAILED, "mmap failed");
    if (mem == MAP_FAILED) return;
    E2E_EXPECT(mprotect(mem + page, (size_t)page, PROT_NONE) == 0, "mprotect failed");
    enum { N = 10, M = 40 };
    float* X = (float*)(mem + page) - N;
    float Y[M];
    uint8_t Z[M];
    for (int i = 0; i < N; ++i) X[i] = (float)(i % 3) - 1.0f;
    E2E_EXPECT(guarded_cpu(NULL, X, Y, Z, N, M) == TILE_SUCCESS, "guarded: %s", tile_last_error());
    for (int i = 0; i < M; ++i) {
        E2E_EXPECT(Y[i] == (i < N ? X[i] : -1.0f), "guarded: Y[%d] = %g", i, Y[i]);
        E2E_EXPECT(Z[i] == (i < N && X[i] > 0), "guarded: Z[%d] = %d", i, Z[i]);
    }
    munmap(mem, (size_t)(2 * page));
}

static void test_assert(void) {
    float x[40];
    for (int i = 0; i < 40; ++i) x[i] = (float)i;
    E2E_EXPECT(checked_cpu(NULL, x, 40) == TILE_SUCCESS, "checked: %s", tile_last_error());
    x[33] = -1;
    static const char* const frags[] = {"semantics.tile:", "assertion failed: X must be non-negative", NULL};
    e2e_expect_error("assert", checked_cpu(NULL, x, 40), TILE_ERROR_LAUNCH, frags);
}

typedef tile_status (*acc_fn)(const tile_cpu_options*, const void*, void*, int64_t);

/* Y (of type t) += 4 * X from four concurrent blocks. */
static void test_accumulate(const char* name, acc_fn fn, int t /* 0 f32, 1 f16, 2 bf16, 3 i32, 4 f64 */) {
    enum { N = 300 };
    float X[N];
    double y0[N], got[N], ref[N];
    void* Y = e2e_alloc(N, 8);
    for (int i = 0; i < N; ++i) {
        X[i] = t == 3 ? (float)(int)(e2e_next() % 200) - 100 : (float)e2e_uniform(-4, 4);
        double v = e2e_uniform(-100, 100);
        switch (t) {
        case 0: y0[i] = ((float*)Y)[i] = (float)v; break;
        case 1: y0[i] = e2e_set(Y, i, v, E2E_F16); break;
        case 2: y0[i] = e2e_set(Y, i, v, E2E_BF16); break;
        case 3: y0[i] = ((int32_t*)Y)[i] = (int32_t)v; break;
        default: y0[i] = ((double*)Y)[i] = v; break;
        }
        ref[i] = y0[i] + 4.0 * X[i];
    }
    tile_cpu_options opt;
    tile_cpu_options_init(&opt);
    opt.num_threads = 4;
    E2E_EXPECT(fn(&opt, X, Y, N) == TILE_SUCCESS, "%s: %s", name, tile_last_error());
    for (int i = 0; i < N; ++i) {
        switch (t) {
        case 0: got[i] = ((float*)Y)[i]; break;
        case 1: got[i] = e2e_get(Y, i, E2E_F16); break;
        case 2: got[i] = e2e_get(Y, i, E2E_BF16); break;
        case 3: got[i] = ((int32_t*)Y)[i]; break;
        default: got[i] = ((double*)Y)[i]; break;
        }
    }
    // Four roundings to the type.
    double rtol = t == 1 ? 4e-3 : t == 2 ? 3e-2 : t == 0 ? 1e-6 : 0;
    e2e_compare(name, got, ref, N, rtol, t == 1 ? 0.1 : t == 2 ? 1.0 : 1e-5);
    free(Y);
}

static void test_reductions(int64_t M, int64_t N) {
    float* X = (float*)e2e_alloc(M * N, 4);
    float* Out = (float*)e2e_alloc(M * 5, 4);
    int32_t* I = (int32_t*)e2e_alloc(M * 2, 4);
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * 7));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * 7));
    for (int64_t i = 0; i < M * N; ++i) X[i] = (float)e2e_uniform(-5, 3);
    for (int64_t r = 0; r < M; ++r) {
        double sum = 0, mx = -INFINITY, mn = INFINITY, amx = 0;
        int64_t isum = 0, imax = INT64_MIN;
        for (int64_t c = 0; c < 100; ++c) {
            double v = c < N ? X[r * N + c] : 0.0;  // columns past N read as 0
            int64_t iv = (int64_t)(float)(v * 10.0f);
            sum += v, mx = fmax(mx, v), mn = fmin(mn, v), amx = fmax(amx, fabs(v));
            isum += iv;
            if (iv > imax) imax = iv;
        }
        double want[7] = {sum, mx, mn, amx, 1000 + sum, (double)isum, (double)imax};
        for (int k = 0; k < 7; ++k) ref[r * 7 + k] = want[k];
    }
    E2E_EXPECT(reductions_cpu(NULL, X, Out, I, M, N) == TILE_SUCCESS, "reductions: %s", tile_last_error());
    for (int64_t r = 0; r < M; ++r) {
        for (int k = 0; k < 5; ++k) got[r * 7 + k] = Out[r * 5 + k];
        got[r * 7 + 5] = I[r * 2];
        got[r * 7 + 6] = I[r * 2 + 1];
    }
    char what[64];
    snprintf(what, sizeof what, "reductions M=%lld N=%lld", (long long)M, (long long)N);
    e2e_compare(what, got, ref, M * 7, 1e-5, 1e-4);
    E2E_EXPECT(e2e_guard_intact(Out, M * 5, 4), "%s wrote past Out", what);
    free(X), free(Out), free(I), free(got), free(ref);
}

static void test_derived_dims(void) {
    float X[8] = {1, 2, 3, 4, 5, 6, 7, 8}, H[4] = {0}, P[4] = {2, 0, 0, 0}, Q[8] = {0};
    E2E_EXPECT(halves_cpu(NULL, X, H, P, Q, 8, 4, 1) == TILE_SUCCESS, "halves: %s", tile_last_error());
    for (int i = 0; i < 4; ++i) E2E_EXPECT(H[i] == X[2 * i] + X[2 * i + 1], "H[%d] = %g", i, H[i]);
    for (int i = 0; i < 2; ++i) E2E_EXPECT(Q[i] == 2.0f * (float)i, "Q[%d] = %g", i, Q[i]);
    E2E_EXPECT(halves_cpu(NULL, X, H, P, Q, 8, 4, 0) == TILE_SUCCESS && H[0] == -1, "flag false: H[0] = %g", H[0]);
    static const char* const odd[] = {"halves_cpu: K = 7 must be a multiple of 2 (dimension 0 of H is K / 2)", NULL};
    e2e_expect_error("K odd", halves_cpu(NULL, X, H, P, Q, 7, 1, 1), TILE_ERROR_INVALID_ARGUMENT, odd);
    static const char* const zero[] = {"halves_cpu: G = 0 must be positive (dimension 0 of Q is K / G)", NULL};
    e2e_expect_error("G = 0", halves_cpu(NULL, X, H, P, Q, 8, 0, 1), TILE_ERROR_INVALID_ARGUMENT, zero);
    static const char* const uneven[] = {"halves_cpu: K = 8 must be a multiple of G = 3", NULL};
    e2e_expect_error("G = 3", halves_cpu(NULL, X, H, P, Q, 8, 3, 1), TILE_ERROR_INVALID_ARGUMENT, uneven);
    static const char* const null_q[] = {"halves_cpu: tensor Q is NULL", NULL};
    e2e_expect_error("Q NULL", halves_cpu(NULL, X, H, P, NULL, 8, 4, 1), TILE_ERROR_INVALID_ARGUMENT, null_q);
}

int main(void) {
    test_int_ops();
    test_derived_dims();
    test_guarded();
    test_assert();
    test_accumulate("accumulate_f32", accumulate_f32_cpu, 0);
    test_accumulate("accumulate_f16", accumulate_f16_cpu, 1);
    test_accumulate("accumulate_bf16", accumulate_bf16_cpu, 2);
    test_accumulate("accumulate_i32", accumulate_i32_cpu, 3);
    test_accumulate("accumulate_f64", accumulate_f64_cpu, 4);
    test_reductions(1, 37);
    test_reductions(7, 100);
    test_reductions(9, 150);
    return e2e_finish("e2e/semantics");
}
