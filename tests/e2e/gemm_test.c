/* gemm_test.c: stdlib/kernels/gemm.tile and gemm_splitk.tile on the CPU: f16/bf16 inputs,
 * f32 accumulation, all four transposes, ragged M, N, K (not multiples of the 128 x 128 x
 * 32 tiles), against a float64 reference with relative error 1e-2; split-K adds into C. */
#include "e2e_common.h"
#include "gemm.h"
#include "gemm_splitk.h"

typedef tile_status (*gemm_fn)(const tile_cpu_options*, const void*, const void*, void*, int64_t, int64_t,
                                int64_t);

static const int64_t kShapes[][3] = {  // M, N, K
    {1, 1, 1},      {37, 37, 37},  {130, 37, 300}, {300, 130, 37}, {37, 300, 130},
    {1, 300, 130},  {130, 1, 37},  {300, 300, 300}, {129, 257, 33}, {128, 128, 32}, {127, 65, 200}};

/* A is M x K, B is K x N (logically); trans_a: A is stored as K x M row-major, trans_b: B
 * as N x K. Inputs in [-1, 1] rounded to the element type. */
static void test_gemm(const char* name, gemm_fn fn, int bf, int trans_a, int trans_b, int64_t M, int64_t N,
                      int64_t K) {
    uint16_t* A = (uint16_t*)e2e_alloc(M * K, 2);
    uint16_t* B = (uint16_t*)e2e_alloc(K * N, 2);
    uint16_t* C = (uint16_t*)e2e_alloc(M * N, 2);
    double* a = (double*)malloc(sizeof(double) * (size_t)(M * K));
    double* b = (double*)malloc(sizeof(double) * (size_t)(K * N));
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * N));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * N));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
            double v = e2e_uniform(-1, 1);
            uint16_t bits = bf ? bf16_bits(v) : f16_bits(v);
            a[m * K + k] = bf ? bf16_value(bits) : f16_value(bits);
            A[trans_a ? k * M + m : m * K + k] = bits;
        }
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) {
            double v = e2e_uniform(-1, 1);
            uint16_t bits = bf ? bf16_bits(v) : f16_bits(v);
            b[k * N + n] = bf ? bf16_value(bits) : f16_value(bits);
            B[trans_b ? n * K + k : k * N + n] = bits;
        }
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += a[m * K + k] * b[k * N + n];
            ref[m * N + n] = s;
        }
    tile_status st = fn(NULL, A, B, C, M, K, N);
    E2E_EXPECT(st == TILE_SUCCESS, "%s(M=%lld, N=%lld, K=%lld): %s", name, (long long)M, (long long)N, (long long)K,
               tile_last_error());
    for (int64_t i = 0; i < M * N; ++i) got[i] = bf ? bf16_value(C[i]) : f16_value(C[i]);
    char what[96];
    snprintf(what, sizeof what, "%s M=%lld N=%lld K=%lld", name, (long long)M, (long long)N, (long long)K);
    e2e_compare(what, got, ref, M * N, 1e-2, 1e-2);
    E2E_EXPECT(e2e_guard_intact(C, M * N, 2), "%s wrote past the end of C", what);
    free(A), free(B), free(C), free(a), free(b), free(got), free(ref);
}

/* Split-K: C (f32) += A @ B, several blocks adding into each element with atomics. */
static void test_splitk(const char* name, gemm_fn fn, int bf, int64_t M, int64_t N, int64_t K) {
    uint16_t* A = (uint16_t*)e2e_alloc(M * K, 2);
    uint16_t* B = (uint16_t*)e2e_alloc(K * N, 2);
    float* C = (float*)e2e_alloc(M * N, 4);
    double* got = (double*)malloc(sizeof(double) * (size_t)(M * N));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; ++i) A[i] = bf ? bf16_bits(e2e_uniform(-1, 1)) : f16_bits(e2e_uniform(-1, 1));
    for (int64_t i = 0; i < K * N; ++i) B[i] = bf ? bf16_bits(e2e_uniform(-1, 1)) : f16_bits(e2e_uniform(-1, 1));
    for (int64_t i = 0; i < M * N; ++i) C[i] = (float)e2e_uniform(-1, 1);  // a bias: C is inout
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = C[m * N + n];
            for (int64_t k = 0; k < K; ++k)
                s += bf ? bf16_value(A[m * K + k]) * bf16_value(B[k * N + n])
                        : f16_value(A[m * K + k]) * f16_value(B[k * N + n]);
            ref[m * N + n] = s;
        }
    tile_status st = fn(NULL, A, B, C, M, K, N);
    E2E_EXPECT(st == TILE_SUCCESS, "%s: %s", name, tile_last_error());
    for (int64_t i = 0; i < M * N; ++i) got[i] = C[i];
    char what[96];
    snprintf(what, sizeof what, "%s M=%lld N=%lld K=%lld", name, (long long)M, (long long)N, (long long)K);
    e2e_compare(what, got, ref, M * N, 1e-4, 1e-4);
    E2E_EXPECT(e2e_guard_intact(C, M * N, 4), "%s wrote past the end of C", what);
    free(A), free(B), free(C), free(got), free(ref);
}

int main(void) {
    struct {
        const char* name;
        gemm_fn fn;
        int bf, ta, tb;
    } variants[] = {
        {"gemm_f16", gemm_f16_cpu, 0, 0, 0},       {"gemm_f16_nt", gemm_f16_nt_cpu, 0, 0, 1},
        {"gemm_f16_tn", gemm_f16_tn_cpu, 0, 1, 0}, {"gemm_f16_tt", gemm_f16_tt_cpu, 0, 1, 1},
        {"gemm_bf16", gemm_bf16_cpu, 1, 0, 0},     {"gemm_bf16_nt", gemm_bf16_nt_cpu, 1, 0, 1},
        {"gemm_bf16_tn", gemm_bf16_tn_cpu, 1, 1, 0}, {"gemm_bf16_tt", gemm_bf16_tt_cpu, 1, 1, 1},
        {"gemm_f16_m64", gemm_f16_m64_cpu, 0, 0, 0}, {"gemm_bf16_m64", gemm_bf16_m64_cpu, 1, 0, 0},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v)
        for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; ++s) {
            // The big shape once per variant family is enough.
            if (kShapes[s][0] == 300 && kShapes[s][1] == 300 && v != 0 && v != 4) continue;
            test_gemm(variants[v].name, variants[v].fn, variants[v].bf, variants[v].ta, variants[v].tb, kShapes[s][0],
                      kShapes[s][1], kShapes[s][2]);
        }
    // Split-K shapes: K within one split, K with empty splits (cdiv(K, BK) < SPLIT_K),
    // long K over ragged M and N.
    static const int64_t splitk_shapes[][3] = {{1, 1, 1}, {130, 37, 300}, {127, 1, 70}, {70, 150, 1000}};
    for (size_t s = 0; s < sizeof splitk_shapes / sizeof splitk_shapes[0]; ++s) {
        int64_t M = splitk_shapes[s][0], N = splitk_shapes[s][1], K = splitk_shapes[s][2];
        test_splitk("gemm_splitk_f16", gemm_splitk_f16_cpu, 0, M, N, K);
        test_splitk("gemm_splitk_bf16", gemm_splitk_bf16_cpu, 1, M, N, K);
        test_splitk("gemm_splitk_f16_s8", gemm_splitk_f16_s8_cpu, 0, M, N, K);
    }

    // Empty problems: M = 0 launches nothing; K = 0 gives C = 0.
    uint16_t C[4] = {0xffff, 0xffff, 0xffff, 0xffff};
    E2E_EXPECT(gemm_f16_cpu(NULL, NULL, NULL, C, 2, 0, 2) == TILE_SUCCESS, "K = 0: %s", tile_last_error());
    for (int i = 0; i < 4; ++i) E2E_EXPECT(C[i] == 0, "K = 0: C[%d] = 0x%04x, expected +0", i, C[i]);
    static const char* const neg_k[] = {"gemm_f16_cpu: size K = -1 is negative", NULL};
    e2e_expect_error("K < 0", gemm_f16_cpu(NULL, C, C, C, 2, -1, 2), TILE_ERROR_INVALID_ARGUMENT, neg_k);
    return e2e_finish("e2e/gemm");
}
