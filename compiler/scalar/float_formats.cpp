// Encoders and decoders for the narrow float formats, written once over a generic
// "sign, E exponent bits, M mantissa bits" description and checked bit-exactly in tests.
#include "scalar/float_formats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilec::scalar {

namespace {

enum class Overflow { Infinity, Saturate };

struct Format {
    int exp_bits;
    int man_bits;
    // IEEE-like: the all-ones exponent holds inf (mantissa 0) and NaNs. Otherwise (the
    // OCP "FN" formats) only all-ones exponent and mantissa is NaN, the rest are normal.
    bool ieee_specials;

    int bias() const { return (1 << (exp_bits - 1)) - 1; }
    int emin() const { return 1 - bias(); }
    int emax() const { return ((1 << exp_bits) - (ieee_specials ? 2 : 1)) - bias(); }
    // Largest mantissa field in the top binade.
    uint32_t top_mantissa() const { return (1u << man_bits) - (ieee_specials ? 1 : 2); }
    uint32_t exp_mask() const { return (1u << exp_bits) - 1; }
    uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
    uint32_t inf_bits() const { return exp_mask() << man_bits; }
    uint32_t max_bits() const {
        return ((ieee_specials ? exp_mask() - 1 : exp_mask()) << man_bits) | top_mantissa();
    }
    uint32_t nan_bits() const {
        return ieee_specials ? inf_bits() | (1u << (man_bits - 1))
                             : (exp_mask() << man_bits) | ((1u << man_bits) - 1);
    }
};

constexpr Format kF16{5, 10, true};
constexpr Format kBF16{8, 7, true};
constexpr Format kE4M3{4, 3, false};
constexpr Format kE5M2{5, 2, true};
constexpr Format kF32{8, 23, true};

// Rounds q >= 0 to the nearest integer, ties to even (independent of the FP environment).
double round_half_even(double q) {
    double fl = std::floor(q);
    double diff = q - fl;
    if (diff > 0.5) return fl + 1;
    if (diff < 0.5) return fl;
    return std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1;
}

uint32_t encode(double v, const Format& fmt, Overflow overflow) {
    uint32_t sign = std::signbit(v) ? fmt.sign_bit() : 0;
    if (std::isnan(v)) return sign | fmt.nan_bits();
    double a = std::fabs(v);
    auto overflowed = [&]() -> uint32_t {
        if (overflow == Overflow::Infinity && fmt.ieee_specials) return sign | fmt.inf_bits();
        return sign | fmt.max_bits();
    };
    if (std::isinf(a)) return overflowed();
    if (a == 0.0) return sign;
    int e2 = 0;
    std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1): the leading bit is 2^(e2 - 1)
    int e = std::max(e2 - 1, fmt.emin());
    if (e > fmt.emax()) return overflowed();  // rounding never lowers the exponent
    // q = a / ulp, where ulp = 2^(e - man_bits) in this binade (or the subnormal range).
    double r = round_half_even(std::ldexp(a, fmt.man_bits - e));
    const double one = std::ldexp(1.0, fmt.man_bits);  // the implicit leading bit
    if (r >= 2 * one) {                                // rounded up into the next binade
        r = one;
        ++e;
    }
    if (r == 0) return sign;
    if (r < one) return sign | static_cast<uint32_t>(r);  // subnormal (e == emin)
    uint32_t mant = static_cast<uint32_t>(r - one);
    if (e > fmt.emax() || (e == fmt.emax() && mant > fmt.top_mantissa())) return overflowed();
    return sign | (static_cast<uint32_t>(e + fmt.bias()) << fmt.man_bits) | mant;
}

double decode(uint32_t bits, const Format& fmt) {
    bool neg = (bits & fmt.sign_bit()) != 0;
    uint32_t exp = (bits >> fmt.man_bits) & fmt.exp_mask();
    uint32_t mant = bits & ((1u << fmt.man_bits) - 1);
    double mag;
    if (fmt.ieee_specials && exp == fmt.exp_mask()) {
        mag = mant == 0 ? HUGE_VAL : std::nan("");
    } else if (!fmt.ieee_specials && exp == fmt.exp_mask() && mant == (1u << fmt.man_bits) - 1) {
        mag = std::nan("");
    } else if (exp == 0) {
        mag = std::ldexp(static_cast<double>(mant), fmt.emin() - fmt.man_bits);
    } else {
        mag = std::ldexp(static_cast<double>((1u << fmt.man_bits) | mant),
                         static_cast<int>(exp) - fmt.bias() - fmt.man_bits);
    }
    return neg ? -mag : mag;
}

}  // namespace

uint16_t f16_bits(double v) {
    return static_cast<uint16_t>(encode(v, kF16, Overflow::Infinity));
}
double f16_value(uint16_t bits) {
    return decode(bits, kF16);
}

uint16_t bf16_bits(double v) {
    return static_cast<uint16_t>(encode(v, kBF16, Overflow::Infinity));
}
double bf16_value(uint16_t bits) {
    return decode(bits, kBF16);
}

uint8_t f8e4m3_bits(double v) {
    return static_cast<uint8_t>(encode(v, kE4M3, Overflow::Saturate));
}
double f8e4m3_value(uint8_t bits) {
    return decode(bits, kE4M3);
}

uint8_t f8e5m2_bits(double v, bool saturate) {
    return static_cast<uint8_t>(encode(v, kE5M2, saturate ? Overflow::Saturate : Overflow::Infinity));
}
double f8e5m2_value(uint8_t bits) {
    return decode(bits, kE5M2);
}

namespace {

// A FNUZ byte with `man` mantissa bits and exponent bias `bias` (float_formats.h).
double fnuz_value(uint8_t bits, int man, int bias) {
    if (bits == 0x80) return std::numeric_limits<double>::quiet_NaN();
    const int e = (bits & 0x7f) >> man, m = bits & ((1 << man) - 1);
    // Subnormal: 0.m * 2^(1 - bias); normal: 1.m * 2^(e - bias).
    const double v = e == 0 ? std::ldexp(m, 1 - bias - man) : std::ldexp((1 << man) + m, e - bias - man);
    return bits & 0x80 ? -v : v;
}

}  // namespace

double f8e4m3fnuz_value(uint8_t bits) { return fnuz_value(bits, 3, 8); }
double f8e5m2fnuz_value(uint8_t bits) { return fnuz_value(bits, 2, 16); }

double round_to_float_type_slow(double v, ir::DataType t) {
    switch (t.kind) {
    case ir::TypeKind::Float:
        if (t.bits == 64) return v;
        if (t.bits == 32) {
            // In range, the conversion rounds to nearest even; beyond it, it would be UB.
            if (std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max()))
                return static_cast<double>(static_cast<float>(v));
            return decode(encode(v, kF32, Overflow::Infinity), kF32);
        }
        if (t.bits == 16) return f16_value(f16_bits(v));
        break;
    case ir::TypeKind::BFloat: return bf16_value(bf16_bits(v));
    case ir::TypeKind::Float8E4M3: return f8e4m3_value(f8e4m3_bits(v));
    case ir::TypeKind::Float8E5M2: return f8e5m2_value(f8e5m2_bits(v));
    default: break;
    }
    return v;
}

}  // namespace tilec::scalar
