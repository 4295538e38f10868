/* saxpy_test.c: samples/saxpy.tile on the CPU: y = a * x + y (an inout tensor and a
 * scalar) for f32 and f16 on ragged sizes, against a float64 reference. */
#include "e2e_common.h"
#include "saxpy.h"

static const int64_t kSizes[] = {1, 1000, 1025, 4097, 0};

static void test_saxpy(int64_t n, int half) {
    size_t elem = half ? 2 : 4;
    void* x = e2e_alloc(n, elem);
    void* y = e2e_alloc(n, elem);
    double* y0 = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* got = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    float a = (float)e2e_uniform(-3, 3);
    for (int64_t i = 0; i < n; ++i) {
        double xv = e2e_uniform(-10, 10), yv = e2e_uniform(-10, 10);
        if (half) {
            ((uint16_t*)x)[i] = f16_bits(xv);
            ((uint16_t*)y)[i] = f16_bits(yv);
            xv = f16_round(xv);
            y0[i] = f16_round(yv);
        } else {
            ((float*)x)[i] = (float)xv;
            ((float*)y)[i] = (float)yv;
            xv = (float)xv;
            y0[i] = (float)yv;
        }
        ref[i] = (double)a * xv + y0[i];
    }
    tile_status st = half ? saxpy_f16_cpu(NULL, x, y, n, a) : saxpy_f32_cpu(NULL, x, y, n, a);
    E2E_EXPECT(st == TILE_SUCCESS, "saxpy_%s_cpu(N=%lld): %s", half ? "f16" : "f32", (long long)n, tile_last_error());
    for (int64_t i = 0; i < n; ++i) got[i] = half ? f16_value(((uint16_t*)y)[i]) : ((float*)y)[i];
    char what[64];
    snprintf(what, sizeof what, "saxpy_%s N=%lld", half ? "f16" : "f32", (long long)n);
    // f32: two roundings of ~2^-24; f16: one rounding to f16 (2^-11) on top.
    e2e_compare(what, got, ref, n, half ? 1.0 / 1024 : 4e-7, half ? 1e-3 : 1e-6);
    E2E_EXPECT(e2e_guard_intact(y, n, elem), "%s wrote past the end of y", what);
    free(x), free(y), free(y0), free(got), free(ref);
}

int main(void) {
    for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
        test_saxpy(kSizes[i], 0);
        test_saxpy(kSizes[i], 1);
    }
    float x[2] = {1, 2}, y[2] = {3, 4};
    static const char* const null_x[] = {"saxpy_f32_cpu: tensor x is NULL", NULL};
    e2e_expect_error("x NULL", saxpy_f32_cpu(NULL, NULL, y, 2, 1.0f), TILE_ERROR_INVALID_ARGUMENT, null_x);
    static const char* const neg[] = {"saxpy_f32_cpu: size N = -5 is negative", NULL};
    e2e_expect_error("N < 0", saxpy_f32_cpu(NULL, x, y, -5, 1.0f), TILE_ERROR_INVALID_ARGUMENT, neg);
    E2E_EXPECT(y[0] == 3 && y[1] == 4, "failed calls changed y");
    return e2e_finish("e2e/saxpy");
}
