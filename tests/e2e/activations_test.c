/* activations_test.c: stdlib/kernels/activations.tile on the CPU: gelu (tanh form), silu and
 * swiglu for f32, f16 and bf16 on ragged sizes around the 2048-element tile, against a
 * float64 reference. */
#include "e2e_common.h"
#include "activations.h"

typedef tile_status (*act_fn)(const tile_cpu_options*, const void*, void*, int64_t);
typedef tile_status (*glu_fn)(const tile_cpu_options*, const void*, const void*, void*, int64_t);

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double silu(double x) { return x / (1.0 + exp(-x)); }

/* kind 0: gelu, 1: silu, 2: swiglu. */
static void test_act(int kind, act_fn act, glu_fn glu, e2e_dtype t, int64_t n) {
    static const char* names[] = {"gelu", "silu", "swiglu"};
    void* X = e2e_alloc(n, e2e_size(t));
    void* U = e2e_alloc(n, e2e_size(t));
    void* Y = e2e_alloc(n, e2e_size(t));
    double* got = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; ++i) {
        double x = e2e_set(X, i, e2e_uniform(-6, 6), t);
        double u = e2e_set(U, i, e2e_uniform(-2, 2), t);
        ref[i] = kind == 0 ? gelu(x) : kind == 1 ? silu(x) : silu(x) * u;
    }
    tile_status st = kind == 2 ? glu(NULL, X, U, Y, n) : act(NULL, X, Y, n);
    E2E_EXPECT(st == TILE_SUCCESS, "%s_%s(N=%lld): %s", names[kind], e2e_name(t), (long long)n, tile_last_error());
    for (int64_t i = 0; i < n; ++i) got[i] = e2e_get(Y, i, t);
    char what[64];
    snprintf(what, sizeof what, "%s_%s N=%lld", names[kind], e2e_name(t), (long long)n);
    e2e_compare(what, got, ref, n, e2e_rtol(t), 1e-6);
    E2E_EXPECT(e2e_guard_intact(Y, n, e2e_size(t)), "%s wrote past the end of Y", what);
    free(X), free(U), free(Y), free(got), free(ref);
}

int main(void) {
    static const int64_t sizes[] = {1, 1000, 2047, 2049, 5000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        int64_t n = sizes[i];
        test_act(0, gelu_f32_cpu, NULL, E2E_F32, n);
        test_act(0, gelu_f16_cpu, NULL, E2E_F16, n);
        test_act(0, gelu_bf16_cpu, NULL, E2E_BF16, n);
        test_act(1, silu_f32_cpu, NULL, E2E_F32, n);
        test_act(1, silu_f16_cpu, NULL, E2E_F16, n);
        test_act(1, silu_bf16_cpu, NULL, E2E_BF16, n);
        test_act(2, NULL, swiglu_f16_cpu, E2E_F16, n);
        test_act(2, NULL, swiglu_bf16_cpu, E2E_BF16, n);
    }
    return e2e_finish("e2e/activations");
}
