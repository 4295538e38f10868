/* conversions_test.c: tests/e2e/conversions.tile on the CPU: every pair of the 17 element
 * types, by cast<D>() and by copy(), checked bit for bit against reference conversions
 * written here (8-bit floats by brute force over all 256 codes). */
#include "conversions.h"
#include "e2e_common.h"

#define TYPES(X) \
    X(f64) X(f32) X(f16) X(bf16) X(f8e4m3) X(f8e5m2) X(i64) X(i32) X(i16) X(i8) X(i4) X(u64) X(u32) X(u16) X(u8) X(u4) X(bool)
#define TYPES_D(Y, s)                                                                                          \
    Y(s, f64) Y(s, f32) Y(s, f16) Y(s, bf16) Y(s, f8e4m3) Y(s, f8e5m2) Y(s, i64) Y(s, i32) Y(s, i16) Y(s, i8) \
        Y(s, i4) Y(s, u64) Y(s, u32) Y(s, u16) Y(s, u8) Y(s, u4) Y(s, bool)

typedef tile_status (*cvt_fn)(const tile_cpu_options*, const void*, void*, int64_t);
#define PAIR(s, d) {cvt_##s##_##d##_cpu, copy_##s##_##d##_cpu},
#define ROW(s) {TYPES_D(PAIR, s)},
static const struct {
    cvt_fn cast, copy;
} kFns[17][17] = {TYPES(ROW)};

enum { FLT, INT, UINT, BOOL };
typedef struct {
    const char* name;
    int kind, bits;  // storage bits: 4 for i4/u4 (packed), 8 for bool
    int E, M, fn;    // floats: exponent and mantissa bits; fn: OCP "FN" (no inf, saturating)
} type_info;
static const type_info kTypes[17] = {
    {"f64", FLT, 64, 11, 52, 0}, {"f32", FLT, 32, 8, 23, 0}, {"f16", FLT, 16, 5, 10, 0},  {"bf16", FLT, 16, 8, 7, 0},
    {"f8e4m3", FLT, 8, 4, 3, 1}, {"f8e5m2", FLT, 8, 5, 2, 0}, {"i64", INT, 64, 0, 0, 0}, {"i32", INT, 32, 0, 0, 0},
    {"i16", INT, 16, 0, 0, 0},   {"i8", INT, 8, 0, 0, 0},     {"i4", INT, 4, 0, 0, 0},    {"u64", UINT, 64, 0, 0, 0},
    {"u32", UINT, 32, 0, 0, 0},  {"u16", UINT, 16, 0, 0, 0},  {"u8", UINT, 8, 0, 0, 0},   {"u4", UINT, 4, 0, 0, 0},
    {"bool", BOOL, 8, 0, 0, 0}};

/* A source value: a double for floats, 64-bit two's complement for integers and bools. */
typedef struct {
    double f;
    uint64_t i;
} value;

/* ---- reference conversions ---- */

static double f8_value(uint32_t code, const type_info* t) {
    int bias = (1 << (t->E - 1)) - 1;
    uint32_t e = (code >> t->M) & ((1u << t->E) - 1), m = code & ((1u << t->M) - 1);
    double s = code & 0x80 ? -1.0 : 1.0;
    if (t->fn ? (code & 0x7f) == 0x7f : e == (1u << t->E) - 1) return t->fn || m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - bias - t->M);
    return s * ldexp((double)(m | (1u << t->M)), (int)e - bias - t->M);
}

/* Nearest code (ties to the even code) by trying all of them. */
static uint32_t f8_encode(double v, const type_info* t) {
    uint32_t sign = signbit(v) ? 0x80 : 0;
    if (isnan(v)) return sign | (t->fn ? 0x7f : 0x7e);
    double a = fabs(v);
    uint32_t best = 0;
    double best_d = INFINITY, max = 0;
    for (uint32_t c = 0; c < 0x80; ++c) {
        double x = f8_value(c, t);
        if (isnan(x) || isinf(x)) continue;
        if (x > max) max = x;
        double d = fabs(a - x);
        if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
    }
    if (!t->fn) {  // IEEE-like: past max + half an ulp is inf
        double half_ulp = ldexp(1.0, (1 << t->E) - 2 - ((1 << (t->E - 1)) - 1) - t->M - 1);
        if (a >= max + half_ulp) return sign | (((1u << t->E) - 1) << t->M);
    }
    return sign | best;
}

static uint64_t float_bits(double v, const type_info* t) {
    if (t->bits == 64) {
        uint64_t b;
        memcpy(&b, &v, 8);
        return b;
    }
    if (t->bits == 32) {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    if (t->bits == 16) return e2e_encode(v, t->E, t->M);
    return f8_encode(v, t);
}

static double float_value(uint64_t bits, const type_info* t) {
    if (t->bits == 64) {
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    if (t->bits == 32) {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    if (t->bits == 16) return e2e_decode((uint32_t)bits, t->E, t->M);
    return f8_value((uint32_t)bits, t);
}

static uint64_t mask_of(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* Converts a value of type s to the storage bits of type d. */
static uint64_t ref_convert(value v, const type_info* s, const type_info* d) {
    int s_float = s->kind == FLT;
    if (d->kind == BOOL) return s_float ? (v.f != 0 || isnan(v.f)) : v.i != 0;
    if (d->kind == FLT) {
        if (s_float) return float_bits(v.f, d);
        int is_signed = s->kind == INT;
        if (d->bits == 32) {  // one rounding, as the kernel's sitofp/uitofp to float
            float f = is_signed ? (float)(int64_t)v.i : (float)v.i;
            return float_bits(f, d);
        }
        return float_bits(is_signed ? (double)(int64_t)v.i : (double)v.i, d);
    }
    uint64_t bits;
    if (s_float) {  // truncate toward zero, saturate, NaN -> 0
        double x = trunc(v.f);
        if (isnan(x)) {
            bits = 0;
        } else if (d->kind == INT) {
            double hi = ldexp(1.0, d->bits - 1);  // 2^(n-1)
            int64_t max = d->bits == 64 ? INT64_MAX : (int64_t)hi - 1;
            int64_t min = d->bits == 64 ? INT64_MIN : -(int64_t)hi;
            bits = (uint64_t)(x >= hi ? max : x < -hi ? min : (int64_t)x);
        } else {
            double hi = ldexp(1.0, d->bits);
            bits = x <= 0 ? 0 : x >= hi ? mask_of(d->bits) : (uint64_t)x;
        }
    } else {
        bits = v.i;  // wrap
    }
    return bits & mask_of(d->bits);
}

/* ---- storage ---- */

static int64_t storage_bytes(const type_info* t, int64_t n) { return t->bits == 4 ? (n + 1) / 2 : n * t->bits / 8; }

static void put(void* p, int64_t i, uint64_t bits, const type_info* t) {
    unsigned char* b = (unsigned char*)p;
    if (t->bits == 4) {
        unsigned char* byte = b + i / 2;
        int shift = (int)(i % 2) * 4;
        *byte = (unsigned char)((*byte & ~(0xf << shift)) | ((bits & 0xf) << shift));
        return;
    }
    memcpy(b + i * (t->bits / 8), &bits, (size_t)(t->bits / 8));  // little-endian host
}

static uint64_t get(const void* p, int64_t i, const type_info* t) {
    const unsigned char* b = (const unsigned char*)p;
    if (t->bits == 4) return (b[i / 2] >> ((i % 2) * 4)) & 0xf;
    uint64_t bits = 0;
    memcpy(&bits, b + i * (t->bits / 8), (size_t)(t->bits / 8));
    return bits;
}

/* The value that storage bits of type t hold. */
static value value_of(uint64_t bits, const type_info* t) {
    value v = {0, 0};
    if (t->kind == FLT) {
        v.f = float_value(bits, t);
    } else if (t->kind == INT && t->bits < 64) {
        uint64_t sign = 1ull << (t->bits - 1);
        v.i = (bits & sign) ? bits | ~mask_of(t->bits) : bits;
    } else if (t->kind == BOOL) {
        v.i = bits != 0;  // nonzero bytes read as true
    } else {
        v.i = bits;
    }
    return v;
}

/* ---- inputs ---- */

enum { N = 700 };  // two full 256-element blocks and a ragged one

/* Storage bits of interesting values of type t: specials, ties of narrower float formats
 * (and values just beside them, which a double rounding would get wrong), random values
 * of every magnitude; 8-bit floats: every code. */
static void make_inputs(const type_info* t, uint64_t* bits) {
    int64_t n = 0;
    if (t->kind == FLT && t->bits == 8) {
        for (uint32_t c = 0; c < 256; ++c) bits[n++] = c;
        while (n < N) bits[n++] = e2e_next() & 0xff;
        return;
    }
    if (t->kind == FLT && t->bits == 16) {
        while (n < N) bits[n++] = e2e_next() & 0xffff;
        return;
    }
    if (t->kind == FLT) {
        const double specials[] = {0.0,   -0.0,   INFINITY, -INFINITY, NAN,     448.0,    -448.0,   449.0,
                                   464.0, 480.0,  1e6,      57344.0,   61439.0, 61440.0,  65504.0,  65519.0,
                                   65520.0, 3e38, -3.4e38,  1e-45,     1e-8,    -6e-8,    2.5,      -3.5,
                                   127.9, 128.0,  -128.9,   255.5,     -1.5,    1e10,     -1e10,    4294967296.0,
                                   9.3e18, -9.3e18, 1.9e19, 2e19};
        for (size_t k = 0; k < sizeof specials / sizeof specials[0]; ++k) bits[n++] = float_bits(specials[k], t);
        // Ties between neighbours of the narrow formats, and just beside them.
        const type_info* narrow[] = {&kTypes[2], &kTypes[3], &kTypes[4], &kTypes[5]};
        while (n < 400) {
            const type_info* f = narrow[e2e_next() % 4];
            uint64_t c = e2e_next() & (f->bits == 8 ? 0x7e : 0x7bfe);
            double lo = float_value(c, f), hi = float_value(c + 1, f);
            if (isnan(lo) || isnan(hi) || isinf(hi)) continue;
            double mid = 0.5 * (lo + hi) * (e2e_next() & 1 ? -1 : 1);
            int which = (int)(e2e_next() % 3);
            double v = which == 0 ? mid : which == 1 ? nextafter(mid, INFINITY) : nextafter(mid, -INFINITY);
            bits[n++] = float_bits(v, t);
        }
        while (n < N) {
            double v = ldexp(e2e_uniform(1, 2), (int)(e2e_next() % 160) - 80) * (e2e_next() & 1 ? -1 : 1);
            bits[n++] = float_bits(v, t);
        }
        return;
    }
    if (t->kind == BOOL) {
        for (; n < N; ++n) bits[n] = n % 3 == 2 ? 2 : n % 2;  // 2 reads as true
        return;
    }
    uint64_t m = mask_of(t->bits);
    const uint64_t edges[] = {0, 1, m, m >> 1, (m >> 1) + 1, 2, m - 1};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; ++k) bits[n++] = edges[k] & m;
    while (n < N) bits[n++] = (e2e_next() >> (e2e_next() % 64)) & m;
}

static int test_pair(int si, int di, int use_copy) {
    const type_info *s = &kTypes[si], *d = &kTypes[di];
    uint64_t in[N];
    make_inputs(s, in);
    void* X = e2e_alloc(storage_bytes(s, N), 1);
    void* Y = e2e_alloc(storage_bytes(d, N), 1);
    for (int64_t i = 0; i < N; ++i) put(X, i, in[i], s);
    cvt_fn fn = use_copy ? kFns[si][di].copy : kFns[si][di].cast;
    tile_status st = fn(NULL, X, Y, N);
    E2E_EXPECT(st == TILE_SUCCESS, "%s %s -> %s: %s", use_copy ? "copy" : "cast", s->name, d->name, tile_last_error());
    int bad = 0;
    for (int64_t i = 0; i < N; ++i) {
        value v = value_of(in[i], s);
        uint64_t want = ref_convert(v, s, d), got = get(Y, i, d);
        int ok = got == want;
        if (d->kind == FLT && isnan(float_value(want, d))) ok = isnan(float_value(got, d));
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s %s -> %s [%lld]: input bits 0x%llx (%.17g / %lld): got 0x%llx, expected 0x%llx\n",
                    use_copy ? "copy" : "cast", s->name, d->name, (long long)i, (unsigned long long)in[i], v.f,
                    (long long)v.i, (unsigned long long)got, (unsigned long long)want);
    }
    E2E_EXPECT(bad == 0, "%s %s -> %s: %d of %d elements differ", use_copy ? "copy" : "cast", s->name, d->name, bad, N);
    E2E_EXPECT(e2e_guard_intact(Y, storage_bytes(d, N), 1), "%s -> %s wrote past the end of Y", s->name, d->name);
    free(X), free(Y);
    return bad;
}

int main(void) {
    int pairs = 0;
    for (int s = 0; s < 17; ++s)
        for (int d = 0; d < 17; ++d) {
            test_pair(s, d, 0);
            test_pair(s, d, 1);
            pairs += 2;
        }
    printf("%d conversions of %d elements each\n", pairs, N);
    return e2e_finish("e2e/conversions");
}
