/* softmax_test.c: stdlib/kernels/softmax.tile on the CPU: row softmax for f32, f16, bf16 on
 * ragged M and N, rows shorter and longer than the 1024-column tile (one and two passes),
 * outputs large enough for non-temporal stores, against a float64 reference. */
#include "e2e_common.h"
#include "softmax.h"

typedef tile_status (*softmax_fn)(const tile_cpu_options*, const void*, void*, int64_t, int64_t);

static void test_softmax(softmax_fn fn, e2e_dtype t, int64_t M, int64_t N, double scale) {
    void* X = e2e_alloc(M * N, e2e_size(t));
    void* Y = e2e_alloc(M * N, e2e_size(t));
    double* x = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M * N; ++i) x[i] = e2e_set(X, i, e2e_uniform(-scale, scale), t);
    for (int64_t r = 0; r < M; ++r) {
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < N; ++c) mx = fmax(mx, x[r * N + c]);
        for (int64_t c = 0; c < N; ++c) sum += exp(x[r * N + c] - mx);
        for (int64_t c = 0; c < N; ++c) ref[r * N + c] = exp(x[r * N + c] - mx) / sum;
    }
    tile_status st = fn(NULL, X, Y, M, N);
    E2E_EXPECT(st == TILE_SUCCESS, "softmax_%s(M=%lld, N=%lld): %s", e2e_name(t), (long long)M, (long long)N,
               tile_last_error());
    for (int64_t i = 0; i < M * N; ++i) got[i] = e2e_get(Y, i, t);
    char what[80];
    snprintf(what, sizeof what, "softmax_%s M=%lld N=%lld", e2e_name(t), (long long)M, (long long)N);
    e2e_compare(what, got, ref, M * N, e2e_rtol(t), 1e-7);
    E2E_EXPECT(e2e_guard_intact(Y, M * N, e2e_size(t)), "%s wrote past the end of Y", what);
    free(X), free(Y), free(x), free(got), free(ref);
}

int main(void) {
    static const int64_t rows[] = {1, 5, 17};
    static const int64_t cols[] = {1, 100, 1024, 1500, 3000};
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 5; ++j) {
            test_softmax(softmax_f32_cpu, E2E_F32, rows[i], cols[j], 10);
            test_softmax(softmax_f16_cpu, E2E_F16, rows[i], cols[j], 10);
            test_softmax(softmax_bf16_cpu, E2E_BF16, rows[i], cols[j], 10);
        }
    // Many blocks of BM = 4 rows with a ragged last one.
    test_softmax(softmax_f32_cpu, E2E_F32, 127, 300, 10);
    test_softmax(softmax_f16_cpu, E2E_F16, 127, 300, 10);
    test_softmax(softmax_bf16_cpu, E2E_BF16, 127, 300, 10);
    test_softmax(softmax_f32_cpu, E2E_F32, 3, 2000, 80);  // large logits: the max must be subtracted
    // Outputs of 8 MiB and more: the CPU target writes the aligned middle of each row
    // with non-temporal stores (rows of 2053 elements start at every alignment).
    test_softmax(softmax_f32_cpu, E2E_F32, 1031, 2053, 10);
    test_softmax(softmax_f16_cpu, E2E_F16, 2053, 2053, 10);
    return e2e_finish("e2e/softmax");
}
