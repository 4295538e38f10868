/* attention_test.c: stdlib/kernels/flash_attn.tile on the CPU: O = softmax(Q K^T * scale) V
 * per (batch, head), every export (causal and not, f16 and bf16, D = 128 and 64), sequence lengths that
 * are not multiples of the 128-row and 64-column tiles, against a float64 reference. */
#include "e2e_common.h"
#include "flash_attn.h"

typedef tile_status (*attn_fn)(const tile_cpu_options*, const void*, const void*, const void*, void*, int64_t,
                               int64_t, int64_t, float);

static void test_attn(const char* name, attn_fn fn, e2e_dtype t, int causal, int64_t D, int64_t B, int64_t H,
                      int64_t S) {
    int64_t n = B * H * S * D;
    void* Q = e2e_alloc(n, e2e_size(t));
    void* K = e2e_alloc(n, e2e_size(t));
    void* V = e2e_alloc(n, e2e_size(t));
    void* O = e2e_alloc(n, e2e_size(t));
    double* q = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* k = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* v = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* got = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* ref = (double*)malloc(sizeof(double) * (size_t)(n + 1));
    double* p = (double*)malloc(sizeof(double) * (size_t)(S + 1));
    for (int64_t i = 0; i < n; ++i) {
        q[i] = e2e_set(Q, i, e2e_uniform(-1, 1), t);
        k[i] = e2e_set(K, i, e2e_uniform(-1, 1), t);
        v[i] = e2e_set(V, i, e2e_uniform(-1, 1), t);
    }
    float scale = (float)(1.0 / sqrt((double)D));
    for (int64_t bh = 0; bh < B * H; ++bh) {
        const double *qb = q + bh * S * D, *kb = k + bh * S * D, *vb = v + bh * S * D;
        for (int64_t i = 0; i < S; ++i) {
            double mx = -INFINITY, sum = 0;
            int64_t last = causal ? i : S - 1;
            for (int64_t j = 0; j <= last; ++j) {
                double s = 0;
                for (int64_t d = 0; d < D; ++d) s += qb[i * D + d] * kb[j * D + d];
                p[j] = s * scale;
                mx = fmax(mx, p[j]);
            }
            for (int64_t j = 0; j <= last; ++j) sum += (p[j] = exp(p[j] - mx));
            for (int64_t d = 0; d < D; ++d) {
                double o = 0;
                for (int64_t j = 0; j <= last; ++j) o += p[j] * vb[j * D + d];
                ref[bh * S * D + i * D + d] = o / sum;
            }
        }
    }
    tile_status st = fn(NULL, Q, K, V, O, B, H, S, scale);
    E2E_EXPECT(st == TILE_SUCCESS, "%s(B=%lld, H=%lld, S=%lld): %s", name, (long long)B, (long long)H, (long long)S,
               tile_last_error());
    for (int64_t i = 0; i < n; ++i) got[i] = e2e_get(O, i, t);
    char what[96];
    snprintf(what, sizeof what, "%s B=%lld H=%lld S=%lld", name, (long long)B, (long long)H, (long long)S);
    // p is rounded to T before p @ v: a relative error of 1e-2 with a small floor.
    e2e_compare(what, got, ref, n, 1e-2, t == E2E_F16 ? 2e-3 : 1e-2);
    E2E_EXPECT(e2e_guard_intact(O, n, e2e_size(t)), "%s wrote past the end of O", what);
    free(Q), free(K), free(V), free(O), free(q), free(k), free(v), free(got), free(ref), free(p);
}

int main(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {1, 2, 100}, {2, 1, 200}, {1, 1, 129}, {1, 1, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        int64_t B = shapes[s][0], H = shapes[s][1], S = shapes[s][2];
        test_attn("attn_fwd", attn_fwd_cpu, E2E_F16, 0, 128, B, H, S);
        test_attn("attn_fwd_causal", attn_fwd_causal_cpu, E2E_F16, 1, 128, B, H, S);
        test_attn("attn_fwd_bf16", attn_fwd_bf16_cpu, E2E_BF16, 0, 128, B, H, S);
        test_attn("attn_fwd_causal_bf16", attn_fwd_causal_bf16_cpu, E2E_BF16, 1, 128, B, H, S);
        test_attn("attn_fwd_d64", attn_fwd_d64_cpu, E2E_F16, 0, 64, B, H, S);
        test_attn("attn_fwd_causal_d64", attn_fwd_causal_d64_cpu, E2E_F16, 1, 64, B, H, S);
    }
    return e2e_finish("e2e/attention");
}
