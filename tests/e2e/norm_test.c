/* norm_test.c: stdlib/kernels/rmsnorm.tile and layernorm.tile on the CPU for f32, f16 and
 * bf16 on ragged M and N (rows within one 1024-column tile and across several; outputs
 * large enough for non-temporal stores), against a float64 reference. */
#include "e2e_common.h"
#include "layernorm.h"
#include "rmsnorm.h"

typedef tile_status (*rms_fn)(const tile_cpu_options*, const void*, const void*, void*, int64_t, int64_t, float);
typedef tile_status (*ln_fn)(const tile_cpu_options*, const void*, const void*, const void*, void*, int64_t,
                             int64_t, float);

/* layernorm when beta != NULL, else rmsnorm. Rows get an offset so a naive variance
 * would lose digits. */
static void test_norm(rms_fn rms, ln_fn ln, e2e_dtype t, int64_t M, int64_t N) {
    const float eps = 1e-5f;
    const char* kind = ln ? "layernorm" : "rmsnorm";
    void* X = e2e_alloc(M * N, e2e_size(t));
    void* W = e2e_alloc(N, e2e_size(t));
    void* Bt = e2e_alloc(N, e2e_size(t));
    void* Y = e2e_alloc(M * N, e2e_size(t));
    double* x = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* w = (double*)malloc(sizeof(double) * (size_t)(N + 1));
    double* bt = (double*)malloc(sizeof(double) * (size_t)(N + 1));
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t r = 0; r < M; ++r) {
        double offset = e2e_uniform(-4, 4);
        for (int64_t c = 0; c < N; ++c) x[r * N + c] = e2e_set(X, r * N + c, offset + e2e_uniform(-2, 2), t);
    }
    for (int64_t c = 0; c < N; ++c) {
        w[c] = e2e_set(W, c, e2e_uniform(0.5, 1.5), t);
        bt[c] = e2e_set(Bt, c, e2e_uniform(-1, 1), t);
    }
    for (int64_t r = 0; r < M; ++r) {
        const double* xr = x + r * N;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < N; ++c) mean += xr[c];
        mean /= (double)N;
        for (int64_t c = 0; c < N; ++c) var += ln ? (xr[c] - mean) * (xr[c] - mean) : xr[c] * xr[c];
        var /= (double)N;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int64_t c = 0; c < N; ++c)
            ref[r * N + c] = ln ? (xr[c] - mean) * rstd * w[c] + bt[c] : xr[c] * rstd * w[c];
    }
    tile_status st = ln ? ln(NULL, X, W, Bt, Y, M, N, eps) : rms(NULL, X, W, Y, M, N, eps);
    E2E_EXPECT(st == TILE_SUCCESS, "%s_%s(M=%lld, N=%lld): %s", kind, e2e_name(t), (long long)M, (long long)N,
               tile_last_error());
    for (int64_t i = 0; i < M * N; ++i) got[i] = e2e_get(Y, i, t);
    char what[80];
    snprintf(what, sizeof what, "%s_%s M=%lld N=%lld", kind, e2e_name(t), (long long)M, (long long)N);
    // Outputs are O(1): an absolute floor of one rounding at 1.0 as well.
    e2e_compare(what, got, ref, M * N, e2e_rtol(t), e2e_rtol(t));
    E2E_EXPECT(e2e_guard_intact(Y, M * N, e2e_size(t)), "%s wrote past the end of Y", what);
    free(X), free(W), free(Bt), free(Y), free(x), free(w), free(bt), free(got), free(ref);
}

int main(void) {
    static const int64_t rows[] = {1, 5, 17};
    static const int64_t cols[] = {1, 100, 1024, 1500, 3000};
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 5; ++j) {
            test_norm(rmsnorm_f32_cpu, NULL, E2E_F32, rows[i], cols[j]);
            test_norm(rmsnorm_f16_cpu, NULL, E2E_F16, rows[i], cols[j]);
            test_norm(rmsnorm_bf16_cpu, NULL, E2E_BF16, rows[i], cols[j]);
            test_norm(NULL, layernorm_f32_cpu, E2E_F32, rows[i], cols[j]);
            test_norm(NULL, layernorm_f16_cpu, E2E_F16, rows[i], cols[j]);
            test_norm(NULL, layernorm_bf16_cpu, E2E_BF16, rows[i], cols[j]);
        }
    // Many blocks of BM = 4 rows with a ragged last one.
    test_norm(rmsnorm_f32_cpu, NULL, E2E_F32, 127, 300);
    test_norm(rmsnorm_f16_cpu, NULL, E2E_F16, 127, 300);
    test_norm(rmsnorm_bf16_cpu, NULL, E2E_BF16, 127, 300);
    test_norm(NULL, layernorm_f32_cpu, E2E_F32, 127, 300);
    test_norm(NULL, layernorm_f16_cpu, E2E_F16, 127, 300);
    test_norm(NULL, layernorm_bf16_cpu, E2E_BF16, 127, 300);
    // Outputs of 8 MiB and more: the CPU target writes the aligned middle of each row
    // with non-temporal stores (rows of 2053 elements start at every alignment).
    test_norm(rmsnorm_f32_cpu, NULL, E2E_F32, 1031, 2053);
    test_norm(NULL, layernorm_f32_cpu, E2E_F32, 1031, 2053);
    test_norm(rmsnorm_bf16_cpu, NULL, E2E_BF16, 2053, 2053);
    return e2e_finish("e2e/norm");
}
