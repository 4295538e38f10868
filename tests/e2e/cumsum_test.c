/* cumsum_test.c: stdlib/kernels/cumsum.tile on the CPU: inclusive row prefix sums (and the
 * reverse ones) for f32, f16 and bf16, rows within one 1024-column tile and across
 * several (the carry), against a float64 reference. */
#include "e2e_common.h"
#include "cumsum.h"

typedef tile_status (*scan_fn)(const tile_cpu_options*, const void*, void*, int64_t, int64_t);

static void test_scan(const char* name, scan_fn fn, e2e_dtype t, int reverse, int64_t M, int64_t N) {
    void* X = e2e_alloc(M * N, e2e_size(t));
    void* Y = e2e_alloc(M * N, e2e_size(t));
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* x = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M * N; ++i) x[i] = e2e_set(X, i, e2e_uniform(-1, 1), t);
    for (int64_t r = 0; r < M; ++r) {
        double s = 0;
        for (int64_t j = 0; j < N; ++j) {
            int64_t c = reverse ? N - 1 - j : j;
            s += x[r * N + c];
            ref[r * N + c] = s;
        }
    }
    tile_status st = fn(NULL, X, Y, M, N);
    E2E_EXPECT(st == TILE_SUCCESS, "%s(M=%lld, N=%lld): %s", name, (long long)M, (long long)N, tile_last_error());
    for (int64_t i = 0; i < M * N; ++i) got[i] = e2e_get(Y, i, t);
    char what[80];
    snprintf(what, sizeof what, "%s M=%lld N=%lld", name, (long long)M, (long long)N);
    e2e_compare(what, got, ref, M * N, e2e_rtol(t), t == E2E_F32 ? 1e-4 : 4e-2);
    E2E_EXPECT(e2e_guard_intact(Y, M * N, e2e_size(t)), "%s wrote past the end of Y", what);
    free(X), free(Y), free(got), free(ref), free(x);
}

int main(void) {
    static const int64_t rows[] = {1, 6};
    static const int64_t cols[] = {1, 100, 1024, 1500, 3000};
    for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 5; ++j) {
            test_scan("cumsum_f32", cumsum_f32_cpu, E2E_F32, 0, rows[i], cols[j]);
            test_scan("cumsum_f16", cumsum_f16_cpu, E2E_F16, 0, rows[i], cols[j]);
            test_scan("cumsum_bf16", cumsum_bf16_cpu, E2E_BF16, 0, rows[i], cols[j]);
            test_scan("cumsum_f32_reverse", cumsum_f32_reverse_cpu, E2E_F32, 1, rows[i], cols[j]);
        }
    // Many blocks of BM = 4 rows with a ragged last one.
    test_scan("cumsum_f32", cumsum_f32_cpu, E2E_F32, 0, 127, 300);
    test_scan("cumsum_f16", cumsum_f16_cpu, E2E_F16, 0, 127, 300);
    test_scan("cumsum_bf16", cumsum_bf16_cpu, E2E_BF16, 0, 127, 300);
    test_scan("cumsum_f32_reverse", cumsum_f32_reverse_cpu, E2E_F32, 1, 127, 300);
    return e2e_finish("e2e/cumsum");
}
