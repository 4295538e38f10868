/* vector_add_test.c: stdlib/kernels/vector_add.tile on the CPU: C = A + B for f32, f16 and
 * bf16 on ragged sizes, exact against a float64 reference; and the argument checks. */
#include "e2e_common.h"
#include "vector_add.h"

static const int64_t kSizes[] = {1, 1000, 1025, 4097, 0};

static void test_f32(int64_t n, const tile_cpu_options* opt) {
    float* a = (float*)e2e_alloc(n, sizeof(float));
    float* b = (float*)e2e_alloc(n, sizeof(float));
    float* c = (float*)e2e_alloc(n, sizeof(float));
    double* got = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; ++i) {
        a[i] = (float)e2e_uniform(-10, 10);
        b[i] = (float)e2e_uniform(-10, 10);
    }
    tile_status st = vector_add_f32_cpu(opt, a, b, c, n);
    E2E_EXPECT(st == TILE_SUCCESS, "vector_add_f32_cpu(N=%lld): %s", (long long)n, tile_last_error());
    for (int64_t i = 0; i < n; ++i) {
        got[i] = c[i];
        ref[i] = (float)((double)a[i] + (double)b[i]);  // one rounding, as the kernel's f32 add
    }
    char what[64];
    snprintf(what, sizeof what, "vector_add_f32 N=%lld", (long long)n);
    e2e_compare(what, got, ref, n, 0, 0);
    E2E_EXPECT(e2e_guard_intact(c, n, sizeof(float)), "%s wrote past the end of C", what);
    free(a), free(b), free(c), free(got), free(ref);
}

/* f16 and bf16: the sum of two rounded inputs, rounded once (exactly what f32 math then a
 * round-to-nearest-even store gives). */
static void test_16(int64_t n, int bf) {
    uint16_t* a = (uint16_t*)e2e_alloc(n, 2);
    uint16_t* b = (uint16_t*)e2e_alloc(n, 2);
    uint16_t* c = (uint16_t*)e2e_alloc(n, 2);
    double* got = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; ++i) {
        double x = e2e_uniform(-100, 100), y = e2e_uniform(-100, 100);
        a[i] = bf ? bf16_bits(x) : f16_bits(x);
        b[i] = bf ? bf16_bits(y) : f16_bits(y);
    }
    tile_status st = bf ? vector_add_bf16_cpu(NULL, a, b, c, n) : vector_add_f16_cpu(NULL, a, b, c, n);
    E2E_EXPECT(st == TILE_SUCCESS, "vector_add_%s_cpu(N=%lld): %s", bf ? "bf16" : "f16", (long long)n,
               tile_last_error());
    for (int64_t i = 0; i < n; ++i) {
        double s = bf ? bf16_value(a[i]) + bf16_value(b[i]) : f16_value(a[i]) + f16_value(b[i]);
        got[i] = bf ? bf16_value(c[i]) : f16_value(c[i]);
        ref[i] = bf ? bf16_round(s) : f16_round(s);
    }
    char what[64];
    snprintf(what, sizeof what, "vector_add_%s N=%lld", bf ? "bf16" : "f16", (long long)n);
    e2e_compare(what, got, ref, n, 0, 0);
    E2E_EXPECT(e2e_guard_intact(c, n, 2), "%s wrote past the end of C", what);
    free(a), free(b), free(c), free(got), free(ref);
}

static void test_argument_checks(void) {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[4] = {0, 0, 0, 0};
    static const char* const null_a[] = {"vector_add_f32_cpu", "A", "NULL", NULL};
    e2e_expect_error("A NULL", vector_add_f32_cpu(NULL, NULL, b, c, 4), TILE_ERROR_INVALID_ARGUMENT, null_a);
    static const char* const null_b[] = {"vector_add_f32_cpu", "tensor B is NULL", NULL};
    e2e_expect_error("B NULL", vector_add_f32_cpu(NULL, a, NULL, c, 4), TILE_ERROR_INVALID_ARGUMENT, null_b);
    static const char* const null_c[] = {"vector_add_f32_cpu", "tensor C is NULL", NULL};
    e2e_expect_error("C NULL", vector_add_f32_cpu(NULL, a, b, NULL, 4), TILE_ERROR_INVALID_ARGUMENT, null_c);
    static const char* const neg[] = {"vector_add_f32_cpu", "N = -1", "negative", NULL};
    e2e_expect_error("N < 0", vector_add_f32_cpu(NULL, a, b, c, -1), TILE_ERROR_INVALID_ARGUMENT, neg);
    static const char* const neg_big[] = {"N = -9223372036854775808", NULL};
    e2e_expect_error("N = INT64_MIN", vector_add_f32_cpu(NULL, a, b, c, INT64_MIN), TILE_ERROR_INVALID_ARGUMENT,
                     neg_big);
    // Nothing was written by the failed calls.
    for (int i = 0; i < 4; ++i) E2E_EXPECT(c[i] == 0, "c[%d] = %g after failed calls", i, c[i]);
    // Empty tensors may be NULL.
    E2E_EXPECT(vector_add_f32_cpu(NULL, NULL, NULL, NULL, 0) == TILE_SUCCESS, "N = 0 with NULL: %s",
               tile_last_error());
    // Bad options come back from the runtime.
    tile_cpu_options bad;
    tile_cpu_options_init(&bad);
    bad.struct_size = 0;
    e2e_expect_error("struct_size 0", vector_add_f32_cpu(&bad, a, b, c, 4), TILE_ERROR_INVALID_ARGUMENT, NULL);
    E2E_EXPECT(c[0] == 0, "a launch with bad options wrote C");
}

int main(void) {
    tile_cpu_options one, three;
    tile_cpu_options_init(&one);
    one.num_threads = 1;
    tile_cpu_options_init(&three);
    three.num_threads = 3;
    for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
        test_f32(kSizes[i], NULL);
        test_f32(kSizes[i], &one);
        test_f32(kSizes[i], &three);
        test_16(kSizes[i], 0);
        test_16(kSizes[i], 1);
    }
    test_argument_checks();
    return e2e_finish("e2e/vector_add");
}
