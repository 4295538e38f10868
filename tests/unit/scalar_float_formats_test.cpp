// The narrow-float conversions (compiler/scalar) against known bit patterns (max values,
// subnormals, ties to even, overflow rules) and exhaustively against their own decoders.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "scalar/float_formats.h"
#include "scalar/fp8_fnuz.h"

using namespace tilec::scalar;
using tilec::ir::DataType;

namespace {
double p2(int e) {
    return std::ldexp(1.0, e);
}
}  // namespace

TEST_CASE("f16 conversion: known bit patterns", "[interp][float]") {
    CHECK(f16_bits(1.0) == 0x3c00);
    CHECK(f16_bits(-2.0) == 0xc000);
    CHECK(f16_bits(0.0) == 0x0000);
    CHECK(f16_bits(-0.0) == 0x8000);
    CHECK(f16_bits(65504.0) == 0x7bff);   // max
    CHECK(f16_bits(65519.99) == 0x7bff);  // just below the midpoint to 65536
    CHECK(f16_bits(65520.0) == 0x7c00);   // the midpoint: ties to even = inf
    CHECK(f16_bits(1e6) == 0x7c00);
    CHECK(f16_bits(-1e6) == 0xfc00);
    CHECK(f16_bits(-INFINITY) == 0xfc00);
    CHECK(f16_bits(NAN) == 0x7e00);
    CHECK(f16_bits(p2(-14)) == 0x0400);         // min normal
    CHECK(f16_bits(1023 * p2(-24)) == 0x03ff);  // max subnormal
    CHECK(f16_bits(p2(-24)) == 0x0001);         // min subnormal
    CHECK(f16_bits(p2(-25)) == 0x0000);         // half of it: tie to even (0)
    CHECK(f16_bits(p2(-25) * 1.0001) == 0x0001);
    CHECK(f16_bits(3 * p2(-25)) == 0x0002);            // 1.5 ulp: tie to even (2)
    CHECK(f16_bits(1 + p2(-11)) == 0x3c00);            // tie: down to even
    CHECK(f16_bits(1 + 3 * p2(-11)) == 0x3c02);        // tie: up to even
    CHECK(f16_bits(1 + p2(-11) + p2(-40)) == 0x3c01);  // above the tie (via f32 it would tie)
    CHECK(f16_bits(2049.0) == 0x6800);
    CHECK(f16_bits(2051.0) == 0x6802);
    CHECK(f16_value(0x7bff) == 65504.0);
    CHECK(f16_value(0x0001) == p2(-24));
    CHECK(f16_value(0x3555) == 0.333251953125);
    CHECK(f16_value(0xfc00) == -INFINITY);
    CHECK(std::isnan(f16_value(0x7c01)));
    CHECK(std::signbit(f16_value(0x8000)));
}

TEST_CASE("bf16 conversion: known bit patterns", "[interp][float]") {
    CHECK(bf16_bits(1.0) == 0x3f80);
    CHECK(bf16_bits(-3.0) == 0xc040);
    CHECK(bf16_bits(M_PI) == 0x4049);
    CHECK(bf16_bits(1 + p2(-8)) == 0x3f80);               // tie: down to even
    CHECK(bf16_bits(1 + 3 * p2(-8)) == 0x3f82);           // tie: up to even
    CHECK(bf16_bits(1 + p2(-8) + p2(-30)) == 0x3f81);     // above the tie
    CHECK(bf16_value(0x7f7f) == (2 - p2(-7)) * p2(127));  // max
    CHECK(bf16_bits((2 - p2(-7)) * p2(127)) == 0x7f7f);
    CHECK(bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);  // past max + ulp/2
    CHECK(bf16_bits(p2(-133)) == 0x0001);                           // min subnormal
    CHECK(bf16_bits(p2(-134)) == 0x0000);                           // tie to even
    CHECK(bf16_bits(NAN) == 0x7fc0);
    CHECK(bf16_bits(INFINITY) == 0x7f80);
}

TEST_CASE("f8e4m3 (FN) conversion: saturating, no infinities", "[interp][float]") {
    CHECK(f8e4m3_bits(1.0) == 0x38);
    CHECK(f8e4m3_bits(448.0) == 0x7e);  // max
    CHECK(f8e4m3_value(0x7e) == 448.0);
    CHECK(f8e4m3_value(0x78) == 256.0);  // exponent 1111 is normal in FN
    CHECK(f8e4m3_bits(240.0) == 0x77);
    CHECK(f8e4m3_bits(464.0) == 0x7e);  // midpoint past max: saturates
    CHECK(f8e4m3_bits(1000.0) == 0x7e);
    CHECK(f8e4m3_bits(-1e9) == 0xfe);
    CHECK(f8e4m3_bits(INFINITY) == 0x7e);
    CHECK(f8e4m3_bits(-INFINITY) == 0xfe);
    CHECK(f8e4m3_bits(NAN) == 0x7f);
    CHECK(std::isnan(f8e4m3_value(0x7f)));
    CHECK(std::isnan(f8e4m3_value(0xff)));
    CHECK(f8e4m3_bits(0.1) == 0x1d);
    CHECK(f8e4m3_value(0x1d) == 0.1015625);
    CHECK(f8e4m3_bits(p2(-6)) == 0x08);   // min normal
    CHECK(f8e4m3_bits(p2(-9)) == 0x01);   // min subnormal
    CHECK(f8e4m3_bits(p2(-10)) == 0x00);  // tie to even
    CHECK(f8e4m3_bits(3 * p2(-10)) == 0x02);
    CHECK(f8e4m3_bits(1.0625) == 0x38);  // 1 + half ulp: to even
    CHECK(f8e4m3_bits(1.1875) == 0x3a);  // 1 + 1.5 ulp: to even
}

TEST_CASE("f8e5m2 conversion: IEEE-like with infinities", "[interp][float]") {
    CHECK(f8e5m2_bits(1.0) == 0x3c);
    CHECK(f8e5m2_bits(57344.0) == 0x7b);  // max
    CHECK(f8e5m2_value(0x7b) == 57344.0);
    CHECK(f8e5m2_bits(61439.0) == 0x7b);
    CHECK(f8e5m2_bits(61440.0) == 0x7c);  // midpoint: ties to even = inf
    CHECK(f8e5m2_bits(61440.0, /*saturate=*/true) == 0x7b);
    CHECK(f8e5m2_bits(INFINITY, true) == 0x7b);
    CHECK(f8e5m2_bits(-INFINITY) == 0xfc);
    CHECK(f8e5m2_value(0xfc) == -INFINITY);
    CHECK(f8e5m2_bits(NAN) == 0x7e);
    CHECK(std::isnan(f8e5m2_value(0x7d)));
    CHECK(f8e5m2_bits(p2(-16)) == 0x01);  // min subnormal
    CHECK(f8e5m2_bits(p2(-14)) == 0x04);  // min normal
    CHECK(f8e5m2_bits(1.125) == 0x3c);    // tie: down to even
    CHECK(f8e5m2_bits(1.375) == 0x3e);    // tie: up to even
}

TEST_CASE("f32 rounding rounds once and overflows to infinity", "[interp][float]") {
    const double fmax = std::numeric_limits<float>::max();
    CHECK(round_to_float_type(1 + p2(-24), DataType::f32()) == 1.0);
    CHECK(round_to_float_type(1 + 3 * p2(-24), DataType::f32()) == 1 + p2(-22));
    CHECK(round_to_float_type(fmax + p2(102), DataType::f32()) == fmax);      // below the midpoint
    CHECK(round_to_float_type(fmax + p2(103), DataType::f32()) == INFINITY);  // the midpoint
    CHECK(round_to_float_type(-1e300, DataType::f32()) == -INFINITY);
    CHECK(round_to_float_type(p2(-150), DataType::f32()) == 0.0);  // tie to even
    CHECK(round_to_float_type(p2(-149), DataType::f32()) == p2(-149));
    CHECK(round_to_float_type(0.1, DataType::f64()) == 0.1);
    CHECK(round_to_float_type(0.1, DataType::f16()) == f16_value(f16_bits(0.1)));
    CHECK(round_to_float_type(0.1, DataType::bf16()) == bf16_value(bf16_bits(0.1)));
}

namespace {

// For every pair of adjacent finite values of a format: both round-trip, the midpoint
// goes to the even one, and a hair either side of it goes to the nearer one.
template <typename Enc, typename Dec>
void check_exhaustive(int bits, Enc enc, Dec dec) {
    int failures = 0;
    uint32_t n = 1u << (bits - 1);  // the non-negative half
    for (uint32_t b = 0; b + 1 < n && failures < 5; ++b) {
        double lo = dec(b), hi = dec(b + 1);
        if (std::isnan(lo) || std::isnan(hi) || std::isinf(hi)) continue;
        if (enc(lo) != b || enc(-lo) != (b | n)) {
            ++failures;
            FAIL_CHECK("round trip of bits " << b << " = " << lo);
        }
        double mid = (lo + hi) / 2;
        uint32_t even = (b & 1) == 0 ? b : b + 1;
        if (enc(mid) != even) {
            ++failures;
            FAIL_CHECK("midpoint of " << b << " and " << b + 1 << " gave " << enc(mid));
        }
        double hair = (hi - lo) * 1e-3;
        if (enc(mid - hair) != b || enc(mid + hair) != b + 1) {
            ++failures;
            FAIL_CHECK("near the midpoint of " << b << " and " << b + 1);
        }
    }
    CHECK(failures == 0);
}

}  // namespace

TEST_CASE("narrow float conversions are exact round-to-nearest-even everywhere", "[interp][float]") {
    check_exhaustive(
        16, [](double v) { return uint32_t(f16_bits(v)); }, [](uint32_t b) { return f16_value(b); });
    check_exhaustive(
        16, [](double v) { return uint32_t(bf16_bits(v)); }, [](uint32_t b) { return bf16_value(b); });
    check_exhaustive(
        8, [](double v) { return uint32_t(f8e4m3_bits(v)); }, [](uint32_t b) { return f8e4m3_value(b); });
    check_exhaustive(
        8, [](double v) { return uint32_t(f8e5m2_bits(v)); }, [](uint32_t b) { return f8e5m2_value(b); });
}

// AMD CDNA3's FNUZ formats, from their definitions (float_formats.h: bias 8 / 16, 0x80
// the one NaN, no -0, no infinity), never from the OCP decoders.
TEST_CASE("f8 FNUZ decoders: the formats' special and extreme values", "[interp][float][fp8]") {
    CHECK(std::isnan(f8e4m3fnuz_value(0x80)));
    CHECK(std::isnan(f8e5m2fnuz_value(0x80)));
    CHECK(f8e4m3fnuz_value(0x00) == 0.0);
    CHECK(!std::signbit(f8e4m3fnuz_value(0x00)));
    CHECK(f8e4m3fnuz_value(0x7f) == 240.0);  // S.1111.111: the largest, finite
    CHECK(f8e4m3fnuz_value(0xff) == -240.0);
    CHECK(f8e4m3fnuz_value(0x40) == 1.0);                      // 0.1000.000: 2^(8 - 8)
    CHECK(f8e4m3fnuz_value(0x08) == std::ldexp(1.0, -7));      // smallest normal
    CHECK(f8e4m3fnuz_value(0x07) == 7 * std::ldexp(1.0, -10));  // largest subnormal
    CHECK(f8e4m3fnuz_value(0x01) == std::ldexp(1.0, -10));     // smallest subnormal
    CHECK(f8e5m2fnuz_value(0x7f) == 57344.0);                  // S.11111.11
    CHECK(f8e5m2fnuz_value(0xfc) == -32768.0);
    CHECK(f8e5m2fnuz_value(0x40) == 1.0);  // 0.10000.00: 2^(16 - 16)
    CHECK(f8e5m2fnuz_value(0x04) == std::ldexp(1.0, -15));
    CHECK(f8e5m2fnuz_value(0x01) == std::ldexp(1.0, -17));
    CHECK(f8e5m2fnuz_value(0x83) == -3 * std::ldexp(1.0, -17));
}

// scalar/fp8_fnuz.h: every OCP byte, at every byte of a word of other random bytes, against
// the two formats' decoders: -0 -> 0, NaN (and e5m2 Inf) -> the FNUZ NaN, every other byte
// kept and worth half its OCP value as FNUZ; the other bytes of the word as they would be
// alone (no carry or borrow leaks across bytes).
TEST_CASE("fp8 OCP -> FNUZ word rewrite: byte by byte against the decoders", "[interp][float][fp8]") {
    std::mt19937_64 rng(942);
    for (bool e5m2 : {false, true}) {
        auto ocp = [&](uint8_t b) { return e5m2 ? f8e5m2_value(b) : f8e4m3_value(b); };
        auto fnuz = [&](uint8_t b) { return e5m2 ? f8e5m2fnuz_value(b) : f8e4m3fnuz_value(b); };
        auto one = [&](uint8_t b) { return uint8_t(fp8_ocp_to_fnuz(uint64_t(b), e5m2)); };
        int nans = 0;
        for (int b = 0; b < 256; ++b) {
            const uint8_t x = uint8_t(b), y = one(x);
            const double v = ocp(x);
            if (std::isnan(v) || std::isinf(v)) {
                CHECK(y == 0x80);
                ++nans;
            } else if (v == 0) {
                CHECK(y == 0x00);  // +0 and -0
            } else {
                CHECK(y == x);
                CHECK(fnuz(y) == v / 2);
            }
            for (int pos = 0; pos < 8; ++pos) {
                uint64_t w = rng();
                w = (w & ~(uint64_t(0xff) << (8 * pos))) | uint64_t(x) << (8 * pos);
                const uint64_t r = fp8_ocp_to_fnuz(w, e5m2);
                for (int q = 0; q < 8; ++q) REQUIRE(uint8_t(r >> (8 * q)) == one(uint8_t(w >> (8 * q))));
            }
        }
        // E4M3FN: 0x7f / 0xff; E5M2: +-Inf and 3 NaNs a sign.
        CHECK(nans == (e5m2 ? 8 : 2));
    }
}
