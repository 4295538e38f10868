/* math_test.c: exp, exp2 and sigmoid of f32 as the CPU backend computes them (inline
 * polynomials, so that loops vectorise) against double, in units in the last place:
 * a sweep over the whole range where the result is a normal float, the subnormal and
 * overflow edges, and the special values (NaN, +-inf, +-0). */
#include "e2e_common.h"
#include "math_kernels.h" /* from tests/e2e/math.tile */

typedef tile_status (*unary_fn)(const tile_cpu_options*, const void*, void*, int64_t);

/* The distance in ulps of float `got` from the exact `ref`: |got - ref| / ulp(ref), with
 * the ulp of the float nearest ref (the smallest subnormal's below 2^-126). */
static double ulps(float got, double ref) {
    if (isnan(ref)) return isnan(got) ? 0 : INFINITY;
    if (isinf(ref) || fabs(ref) > 3.4028234663852886e38) return (isinf(got) && (got > 0) == (ref > 0)) ? 0 : INFINITY;
    int e;
    frexp(ref, &e);
    if (e < -125) e = -125;
    return fabs((double)got - ref) / ldexp(1.0, e - 24);
}

static void check(const char* name, unary_fn fn, double (*ref)(double), double lo, double hi, int64_t n,
                  double max_ulps) {
    float* X = (float*)e2e_alloc(n, 4);
    float* Y = (float*)e2e_alloc(n, 4);
    for (int64_t i = 0; i < n; ++i) X[i] = (float)(lo + (hi - lo) * (double)i / (double)(n - 1));
    tile_status st = fn(NULL, X, Y, n);
    E2E_EXPECT(st == TILE_SUCCESS, "%s: %s", name, tile_last_error());
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
        double u = ulps(Y[i], ref(X[i]));
        if (!(u <= worst)) worst = u, at = i;
    }
    E2E_EXPECT(worst <= max_ulps, "%s on [%g, %g]: %.2f ulps at x = %.9g (got %.9g, expected %.9g)", name, lo, hi,
               worst, (double)X[at], (double)Y[at], ref(X[at]));
    printf("%s on [%g, %g]: max error %.2f ulps over %lld values\n", name, lo, hi, worst, (long long)n);
    E2E_EXPECT(e2e_guard_intact(Y, n, 4), "%s wrote past the end of Y", name);
    free(X), free(Y);
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void specials(const char* name, unary_fn fn, double (*ref)(double)) {
    static const float S[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-30f, -1e-30f, 200.0f, -200.0f, 3e38f, -3e38f};
    enum { ns = sizeof S / sizeof S[0] };
    /* Repeated over 7 * 12 = 84 elements, so the specials go through whole vectors of up
       to 64 lanes (the vectorised loop body) as well as its remainder. */
    enum { n = 7 * ns };
    float X[n];
    for (int i = 0; i < n; ++i) X[i] = S[i % ns];
    float* Y = (float*)e2e_alloc(n, 4);
    E2E_EXPECT(fn(NULL, X, Y, n) == TILE_SUCCESS, "%s specials: %s", name, tile_last_error());
    for (int i = 0; i < n; ++i) {
        double r = ref(X[i]);
        E2E_EXPECT(ulps(Y[i], r) <= 2, "%s(%g) = %.9g, expected %.9g", name, (double)X[i], (double)Y[i], r);
    }
    free(Y);
}

int main(void) {
    /* exp: normal results for x in [-87.3, 88.7]; subnormal below; inf above 88.72. */
    check("exp", exp_f32_cpu, exp, -87.0, 88.5, 200003, 2.5);
    check("exp", exp_f32_cpu, exp, -1.0, 1.0, 100003, 2.5);
    check("exp", exp_f32_cpu, exp, -103.0, -87.5, 10007, 2.5);  /* subnormal results */
    check("exp", exp_f32_cpu, exp, 88.5, 89.5, 1001, 2.5);      /* the overflow edge */
    check("exp2", exp2_f32_cpu, exp2, -126.0, 127.9, 200003, 2.5);
    check("exp2", exp2_f32_cpu, exp2, -1.0, 1.0, 100003, 2.5);
    check("exp2", exp2_f32_cpu, exp2, -149.0, -126.0, 10007, 2.5);
    check("exp2", exp2_f32_cpu, exp2, 127.5, 128.5, 1001, 2.5);
    check("sigmoid", sigmoid_f32_cpu, sigmoid, -80.0, 80.0, 100003, 4.0);
    specials("exp", exp_f32_cpu, exp);
    specials("exp2", exp2_f32_cpu, exp2);
    specials("sigmoid", sigmoid_f32_cpu, sigmoid);
    return e2e_finish("e2e/math");
}
