/* e2e_common.h: what the end-to-end C programs share: a seeded random generator, exact
 * f16/bf16 conversions (round to nearest even), guarded and poisoned buffers, and checks
 * that count failures and print the first few. C99, header-only. */
#ifndef TILEC_E2E_COMMON_H
#define TILEC_E2E_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile/runtime.h"

static int e2e_failures = 0;

#define E2E_EXPECT(cond, ...)                                              \
    do {                                                                   \
        if (!(cond)) {                                                     \
            ++e2e_failures;                                                \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
        }                                                                  \
    } while (0)

/* Ends main: prints the verdict, returns the exit status. */
static inline int e2e_finish(const char* name) {
    if (e2e_failures) {
        fprintf(stderr, "%s: %d check(s) FAILED\n", name, e2e_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* splitmix64: the same numbers on every machine. */
static uint64_t e2e_rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t e2e_next(void) {
    uint64_t z = (e2e_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double e2e_uniform(double lo, double hi) {
    return lo + (hi - lo) * ((double)(e2e_next() >> 11) * (1.0 / 9007199254740992.0));
}

/* IEEE-like binary formats with E exponent and M mantissa bits: round to nearest even. */
static inline uint32_t e2e_encode(double v, int E, int M) {
    int bias = (1 << (E - 1)) - 1, emin = 1 - bias, emax = (1 << E) - 2 - bias;
    uint32_t sign = signbit(v) ? 1u << (E + M) : 0;
    uint32_t inf = ((1u << E) - 1) << M;
    if (isnan(v)) return sign | inf | (1u << (M - 1));
    double a = fabs(v);
    if (isinf(a)) return sign | inf;
    if (a == 0) return sign;
    int e2;
    frexp(a, &e2);
    int e = e2 - 1 < emin ? emin : e2 - 1;
    if (e > emax) return sign | inf;
    double q = ldexp(a, M - e), r = floor(q), diff = q - r;
    if (diff > 0.5 || (diff == 0.5 && fmod(r, 2.0) != 0)) r += 1;
    double one = ldexp(1.0, M);
    if (r >= 2 * one) {
        r = one;
        ++e;
    }
    if (r < one) return sign | (uint32_t)r;
    if (e > emax) return sign | inf;
    return sign | ((uint32_t)(e + bias) << M) | (uint32_t)(r - one);
}
static inline double e2e_decode(uint32_t bits, int E, int M) {
    int bias = (1 << (E - 1)) - 1;
    double s = (bits >> (E + M)) & 1 ? -1.0 : 1.0;
    uint32_t e = (bits >> M) & ((1u << E) - 1), m = bits & ((1u << M) - 1);
    if (e == (1u << E) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - bias - M);
    return s * ldexp((double)(m | (1u << M)), (int)e - bias - M);
}
static inline uint16_t f16_bits(double v) { return (uint16_t)e2e_encode(v, 5, 10); }
static inline double f16_value(uint16_t b) { return e2e_decode(b, 5, 10); }
static inline uint16_t bf16_bits(double v) { return (uint16_t)e2e_encode(v, 8, 7); }
static inline double bf16_value(uint16_t b) { return e2e_decode(b, 8, 7); }
static inline double f16_round(double v) { return f16_value(f16_bits(v)); }
static inline double bf16_round(double v) { return bf16_value(bf16_bits(v)); }

/* Tensors of f32, f16 or bf16 elements, read and written as doubles. */
typedef enum e2e_dtype { E2E_F32, E2E_F16, E2E_BF16 } e2e_dtype;
static inline size_t e2e_size(e2e_dtype t) { return t == E2E_F32 ? 4 : 2; }
static inline const char* e2e_name(e2e_dtype t) { return t == E2E_F32 ? "f32" : t == E2E_F16 ? "f16" : "bf16"; }
/* Stores v rounded to t; returns the value stored. */
static inline double e2e_set(void* p, int64_t i, double v, e2e_dtype t) {
    if (t == E2E_F32) return ((float*)p)[i] = (float)v;
    uint16_t b = t == E2E_F16 ? f16_bits(v) : bf16_bits(v);
    ((uint16_t*)p)[i] = b;
    return t == E2E_F16 ? f16_value(b) : bf16_value(b);
}
static inline double e2e_get(const void* p, int64_t i, e2e_dtype t) {
    if (t == E2E_F32) return ((const float*)p)[i];
    uint16_t b = ((const uint16_t*)p)[i];
    return t == E2E_F16 ? f16_value(b) : bf16_value(b);
}
/* A relative tolerance that covers one rounding to t and a few f32 operations. */
static inline double e2e_rtol(e2e_dtype t) { return t == E2E_F32 ? 2e-5 : t == E2E_F16 ? 2e-3 : 1e-2; }

/* Buffers with E2E_GUARD extra elements after the end, all filled with a byte pattern
 * that is NaN as f16, bf16, f32 and f64 (0xff bytes): poisoned outputs, and a guard
 * zone that a write out of bounds would change. */
#define E2E_GUARD 64
static inline void* e2e_alloc(int64_t n, size_t elem) {
    size_t bytes = ((size_t)n + E2E_GUARD) * elem;
    unsigned char* p = (unsigned char*)malloc(bytes);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(p, 0xff, bytes);
    return p;
}
/* True if the E2E_GUARD elements after element n still hold the poison. */
static inline int e2e_guard_intact(const void* p, int64_t n, size_t elem) {
    const unsigned char* b = (const unsigned char*)p + (size_t)n * elem;
    for (size_t i = 0; i < E2E_GUARD * elem; ++i)
        if (b[i] != 0xff) return 0;
    return 1;
}

/* Compares got[i] with ref[i]: |got - ref| <= atol + rtol * |ref|, NaN never matches.
 * Prints the first mismatches and the largest error; returns the mismatch count. */
static inline int64_t e2e_compare(const char* what, const double* got, const double* ref, int64_t n, double rtol,
                           double atol) {
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
        double err = fabs(got[i] - ref[i]);
        double tol = atol + rtol * fabs(ref[i]);
        if (!(err <= tol)) {
            if (bad < 5) fprintf(stderr, "  %s[%lld]: got %.9g, expected %.9g\n", what, (long long)i, got[i], ref[i]);
            ++bad;
        }
        if (err > worst || isnan(err)) worst = err;
    }
    if (bad) {
        ++e2e_failures;
        fprintf(stderr, "FAILED: %s: %lld of %lld elements differ (largest error %.3g)\n", what, (long long)bad,
                (long long)n, worst);
    }
    return bad;
}

/* Checks a returned status and that tile_last_error() mentions every given fragment
 * (a NULL-terminated list). */
static inline void e2e_expect_error(const char* what, tile_status got, tile_status want, const char* const* fragments) {
    const char* msg = tile_last_error();
    E2E_EXPECT(got == want, "%s: status %d (%s), expected %d; message: %s", what, (int)got, tile_status_string(got),
               (int)want, msg);
    for (; fragments && *fragments; ++fragments)
        E2E_EXPECT(strstr(msg, *fragments) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, *fragments);
}

#endif /* TILEC_E2E_COMMON_H */
