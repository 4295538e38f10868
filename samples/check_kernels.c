/* check_kernels.c: calls saxpy_f32 (saxpy.tile), gelu_f32 and silu_f32 (the stdlib's
 * activations.tile) from C99 on random data, compares with a double-precision
 * reference, and prints a verdict; the exit status is 0 when every result is within
 * tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "activations.h"
#include "saxpy.h"

static int failures = 0;

/* Uniform in [lo, hi), from rand(): reproducible, and good enough for test data. */
static double uniform(double lo, double hi) {
    return lo + (hi - lo) * (rand() / (RAND_MAX + 1.0));
}

/* The worst error relative to max(|ref|, floor) must stay under tol: floor keeps results
 * that cancel to nearly 0 (saxpy) from counting as large relative errors. */
static void compare(const char* what, const float* got, const double* ref, long n, double floor_,
                    double tol) {
    double worst = 0;
    long at = 0;
    for (long i = 0; i < n; ++i) {
        double scale = fabs(ref[i]) > floor_ ? fabs(ref[i]) : floor_;
        double err = fabs((double)got[i] - ref[i]) / scale;
        if (!(err <= worst)) worst = err, at = i; /* !(<=) also catches NaN */
    }
    int ok = worst <= tol;
    printf("%s %s: worst relative error %.3g at %ld (tolerance %.3g)\n", ok ? "ok  " : "FAIL", what, worst,
           at, tol);
    failures += !ok;
}

static void check_saxpy(long n) {
    float* x = malloc(sizeof(float) * n);
    float* y = malloc(sizeof(float) * n);
    double* ref = malloc(sizeof(double) * n);
    float a = (float)uniform(-2, 2);
    for (long i = 0; i < n; ++i) {
        x[i] = (float)uniform(-10, 10);
        y[i] = (float)uniform(-10, 10);
        ref[i] = (double)a * x[i] + y[i];
    }
    tile_status st = saxpy_f32_cpu(NULL, x, y, n, a);
    char what[64];
    snprintf(what, sizeof what, "saxpy_f32 N=%ld", n);
    if (st != TILE_SUCCESS) {
        printf("FAIL %s: %s (%s)\n", what, tile_status_string(st), tile_last_error());
        ++failures;
    } else {
        compare(what, y, ref, n, 1.0, 1e-5);
    }
    free(x), free(y), free(ref);
}

/* act = 0: gelu_f32 (tanh approximation), 1: silu_f32. */
static void check_activation(int act, long n) {
    float* x = malloc(sizeof(float) * n);
    float* y = malloc(sizeof(float) * n);
    double* ref = malloc(sizeof(double) * n);
    for (long i = 0; i < n; ++i) {
        double v = x[i] = (float)uniform(-8, 8);
        ref[i] = act == 0 ? 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                          : v / (1 + exp(-v));
    }
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = 2;
    tile_status st = act == 0 ? gelu_f32_cpu(&opt, x, y, n) : silu_f32_cpu(&opt, x, y, n);
    char what[64];
    snprintf(what, sizeof what, "%s_f32 N=%ld", act == 0 ? "gelu" : "silu", n);
    if (st != TILE_SUCCESS) {
        printf("FAIL %s: %s (%s)\n", what, tile_status_string(st), tile_last_error());
        ++failures;
    } else {
        compare(what, y, ref, n, 1.0, 1e-5); /* 1 + tanh(..) cancels for x << 0 */
    }
    free(x), free(y), free(ref);
}

int main(void) {
    srand(1);
    check_saxpy(1);
    check_saxpy(3000);         /* not a multiple of the tile: a ragged last block */
    check_activation(0, 5000); /* more than one block, the last one ragged */
    check_activation(1, 5000);
    printf("%s\n", failures ? "check_kernels_c: FAILED" : "check_kernels_c: all results match the reference");
    return failures ? 1 : 0;
}
