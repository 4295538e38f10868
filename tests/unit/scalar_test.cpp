// The shared scalar rules (compiler/scalar) against facts: two's-complement wrapping at
// every width, floor division's signs, the overflowing and undefined corners, and IEEE /
// OCP float rounding. Expected values are written from the definitions, never computed
// by the code under test.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include "scalar/float_formats.h"
#include "scalar/scalar.h"

using namespace tilec;
using namespace tilec::scalar;
using ir::BinaryOp;
using ir::DataType;

namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

int64_t op(BinaryOp o, int64_t a, int64_t b, DataType t) {
    IntResult r = int_binary(o, a, b, t);
    REQUIRE(r.fault == IntFault::None);
    return r.value;
}
IntFault fault(BinaryOp o, int64_t a, int64_t b, DataType t) {
    return int_binary(o, a, b, t).fault;
}
double p2(int e) {
    return std::ldexp(1.0, e);
}
double round_to(double v, DataType t) {
    return round_to_float_type(v, t);
}

}  // namespace

TEST_CASE("integer add, sub and mul wrap to every width and signedness", "[scalar]") {
    // The largest value plus one is the smallest (signed) or 0 (unsigned).
    CHECK(op(BinaryOp::Add, 7, 1, DataType::i4()) == -8);
    CHECK(op(BinaryOp::Add, 127, 1, DataType::i8()) == -128);
    CHECK(op(BinaryOp::Add, 32767, 1, DataType::i16()) == -32768);
    CHECK(op(BinaryOp::Add, 2147483647, 1, DataType::i32()) == -2147483648LL);
    CHECK(op(BinaryOp::Add, kI64Max, 1, DataType::i64()) == kI64Min);
    CHECK(op(BinaryOp::Add, 15, 1, DataType::u4()) == 0);
    CHECK(op(BinaryOp::Add, 255, 1, DataType::u8()) == 0);
    CHECK(op(BinaryOp::Add, 65535, 1, DataType::u16()) == 0);
    CHECK(op(BinaryOp::Add, 4294967295LL, 1, DataType::u32()) == 0);
    CHECK(op(BinaryOp::Add, -1 /* u64 2^64 - 1 */, 1, DataType::u64()) == 0);
    // 0 - 1 in unsigned types is the largest value.
    CHECK(op(BinaryOp::Sub, 0, 1, DataType::u4()) == 15);
    CHECK(op(BinaryOp::Sub, 0, 1, DataType::u8()) == 255);
    CHECK(op(BinaryOp::Sub, 0, 1, DataType::u16()) == 65535);
    CHECK(op(BinaryOp::Sub, 0, 1, DataType::u32()) == 4294967295LL);
    CHECK(op(BinaryOp::Sub, 0, 1, DataType::u64()) == -1);
    CHECK(op(BinaryOp::Sub, -8, 1, DataType::i4()) == 7);
    // Products keep the low bits: 300 = 0x12c -> 0x2c = 44; 400 = 0x190 -> 0x90 = 144.
    CHECK(op(BinaryOp::Mul, 100, 3, DataType::i8()) == 44);
    CHECK(op(BinaryOp::Mul, 16, 16, DataType::i8()) == 0);
    CHECK(op(BinaryOp::Mul, 200, 2, DataType::u8()) == 144);
    CHECK(op(BinaryOp::Mul, 65536, 65536, DataType::i32()) == 0);
    CHECK(op(BinaryOp::Mul, 65536, 32768, DataType::i32()) == -2147483648LL);
    // bool is `!= 0` of the result, not a 1-bit wrap.
    CHECK(op(BinaryOp::Add, 1, 1, DataType::boolean()) == 1);
    CHECK(wrap(0x1ff, DataType::u8()) == 0xff);
    CHECK(wrap(0x180, DataType::i8()) == -128);
}

TEST_CASE("floor division rounds toward minus infinity and the modulo takes the divisor's sign", "[scalar]") {
    DataType t = DataType::i32();
    CHECK(op(BinaryOp::FloorDiv, 7, 2, t) == 3);
    CHECK(op(BinaryOp::FloorDiv, -7, 2, t) == -4);
    CHECK(op(BinaryOp::FloorDiv, 7, -2, t) == -4);
    CHECK(op(BinaryOp::FloorDiv, -7, -2, t) == 3);
    CHECK(op(BinaryOp::FloorMod, 7, 2, t) == 1);
    CHECK(op(BinaryOp::FloorMod, -7, 2, t) == 1);
    CHECK(op(BinaryOp::FloorMod, 7, -2, t) == -1);
    CHECK(op(BinaryOp::FloorMod, -7, -2, t) == -1);
    CHECK(op(BinaryOp::FloorDiv, -8, 2, t) == -4);  // exact: no adjustment
    CHECK(op(BinaryOp::FloorMod, -8, 2, t) == 0);
    CHECK(floor_div_i64(-1, 3) == -1);
    CHECK(floor_mod_i64(-1, 3) == 2);
    // u64 divides unsigned: (2^64 - 1) / 2 = 2^63 - 1; (2^64 - 1) % 10 = 5.
    CHECK(op(BinaryOp::FloorDiv, -1, 2, DataType::u64()) == kI64Max);
    CHECK(op(BinaryOp::FloorMod, -1, 10, DataType::u64()) == 5);
    // x / 0 and x % 0 fault, whatever x.
    CHECK(fault(BinaryOp::FloorDiv, 1, 0, t) == IntFault::DivisionByZero);
    CHECK(fault(BinaryOp::FloorMod, 0, 0, t) == IntFault::DivisionByZero);
    CHECK(fault(BinaryOp::FloorDiv, 1, 0, DataType::u64()) == IntFault::DivisionByZero);
}

TEST_CASE("the minimum divided by -1 wraps to the minimum and its modulo is 0", "[scalar]") {
    CHECK(op(BinaryOp::FloorDiv, -8, -1, DataType::i4()) == -8);
    CHECK(op(BinaryOp::FloorDiv, -128, -1, DataType::i8()) == -128);
    CHECK(op(BinaryOp::FloorDiv, -32768, -1, DataType::i16()) == -32768);
    CHECK(op(BinaryOp::FloorDiv, -2147483648LL, -1, DataType::i32()) == -2147483648LL);
    CHECK(op(BinaryOp::FloorDiv, kI64Min, -1, DataType::i64()) == kI64Min);
    CHECK(op(BinaryOp::FloorMod, -128, -1, DataType::i8()) == 0);
    CHECK(op(BinaryOp::FloorMod, kI64Min, -1, DataType::i64()) == 0);
    CHECK(op(BinaryOp::FloorDiv, 5, -1, DataType::i8()) == -5);
}

TEST_CASE("shifts within the width shift, at or beyond it (or negative) fault", "[scalar]") {
    CHECK(op(BinaryOp::Shl, 1, 31, DataType::i32()) == -2147483648LL);
    CHECK(op(BinaryOp::Shl, 1, 31, DataType::u32()) == 2147483648LL);
    CHECK(op(BinaryOp::Shl, 1, 63, DataType::i64()) == kI64Min);
    CHECK(op(BinaryOp::Shl, 1, 3, DataType::i4()) == -8);
    CHECK(op(BinaryOp::Shl, 1, 3, DataType::u4()) == 8);
    CHECK(op(BinaryOp::Shl, 0x40, 1, DataType::i8()) == -128);
    CHECK(op(BinaryOp::Shl, 0xff, 4, DataType::u8()) == 0xf0);
    // >> is arithmetic for signed types, logical for unsigned ones.
    CHECK(op(BinaryOp::Shr, -128, 7, DataType::i8()) == -1);
    CHECK(op(BinaryOp::Shr, 128, 7, DataType::u8()) == 1);
    CHECK(op(BinaryOp::Shr, kI64Min, 63, DataType::i64()) == -1);
    CHECK(op(BinaryOp::Shr, kI64Min, 63, DataType::u64()) == 1);
    for (DataType t : {DataType::i4(), DataType::i8(), DataType::i16(), DataType::i32(), DataType::i64(),
                       DataType::u4(), DataType::u8(), DataType::u16(), DataType::u32(), DataType::u64()}) {
        INFO(t.str());
        CHECK(fault(BinaryOp::Shl, 1, t.bits - 1, t) == IntFault::None);
        CHECK(fault(BinaryOp::Shl, 1, t.bits, t) == IntFault::ShiftOutOfRange);
        CHECK(fault(BinaryOp::Shr, 1, t.bits, t) == IntFault::ShiftOutOfRange);
        CHECK(fault(BinaryOp::Shr, 1, t.bits + 1, t) == IntFault::ShiftOutOfRange);
    }
    // A negative amount faults; a u64 amount with the top bit set is huge, not negative.
    CHECK(fault(BinaryOp::Shl, 1, -1, DataType::i32()) == IntFault::ShiftOutOfRange);
    CHECK(fault(BinaryOp::Shr, 1, -1, DataType::u64()) == IntFault::ShiftOutOfRange);
    // bool is one bit wide.
    CHECK(fault(BinaryOp::Shl, 1, 0, DataType::boolean()) == IntFault::None);
    CHECK(fault(BinaryOp::Shl, 1, 1, DataType::boolean()) == IntFault::ShiftOutOfRange);
}

TEST_CASE("u64 compares unsigned, other types signed", "[scalar]") {
    CHECK(op(BinaryOp::LT, 1, kI64Min /* 2^63 */, DataType::u64()) == 1);
    CHECK(op(BinaryOp::LT, 1, kI64Min, DataType::i64()) == 0);
    CHECK(op(BinaryOp::Max, 1, -1, DataType::u64()) == -1);
    CHECK(op(BinaryOp::Min, 1, -1, DataType::i32()) == -1);
    CHECK(op(BinaryOp::GE, 3, 3, DataType::i8()) == 1);
    CHECK(fault(BinaryOp::Div, 1, 1, DataType::i32()) == IntFault::NotAnIntegerOp);
}

TEST_CASE("negation, bitwise not and abs wrap; the minimum stays the minimum", "[scalar]") {
    CHECK(int_unary(ir::UnaryOp::Neg, -128, DataType::i8()) == -128);
    CHECK(int_unary(ir::UnaryOp::Neg, 1, DataType::u8()) == 255);
    CHECK(int_unary(ir::UnaryOp::BitNot, 0, DataType::u8()) == 255);
    CHECK(int_unary(ir::UnaryOp::BitNot, 0, DataType::i8()) == -1);
    CHECK(int_unary(ir::UnaryOp::Not, 0, DataType::i32()) == 1);
    CHECK(int_unary(ir::UnaryOp::Not, 5, DataType::i32()) == 0);
    CHECK(int_abs(-128, DataType::i8()) == -128);
    CHECK(int_abs(-5, DataType::i8()) == 5);
    CHECK(int_abs(200, DataType::u8()) == 200);
}

TEST_CASE("folding refuses what the generated code leaves undefined and agrees elsewhere", "[scalar]") {
    CHECK_FALSE(fold_int_binary(BinaryOp::FloorDiv, 1, 0, DataType::i32()));
    CHECK_FALSE(fold_int_binary(BinaryOp::FloorMod, 1, 0, DataType::i32()));
    CHECK_FALSE(fold_int_binary(BinaryOp::FloorDiv, -128, -1, DataType::i8()));  // 128 overflows i8
    CHECK_FALSE(fold_int_binary(BinaryOp::FloorDiv, kI64Min, -1, DataType::i64()));
    CHECK_FALSE(fold_int_binary(BinaryOp::Shl, 1, 32, DataType::i32()));
    CHECK_FALSE(fold_int_binary(BinaryOp::Shr, 1, -1, DataType::i32()));
    CHECK_FALSE(fold_int_binary(BinaryOp::Div, 1, 1, DataType::i32()));
    CHECK(fold_int_binary(BinaryOp::FloorMod, -128, -1, DataType::i8()) == 0);
    CHECK(fold_int_binary(BinaryOp::FloorDiv, 7, -2, DataType::i32()) == -4);
    CHECK(fold_int_binary(BinaryOp::FloorMod, -7, 2, DataType::i32()) == 1);
    CHECK(fold_int_binary(BinaryOp::Add, 127, 1, DataType::i8()) == -128);
    CHECK(fold_int_binary(BinaryOp::Shl, 1, 31, DataType::i32()) == -2147483648LL);
    // Where the folding folds, it agrees with int_binary (u64 aside, below).
    for (DataType t : {DataType::i8(), DataType::u8(), DataType::i32(), DataType::u32(), DataType::i64()})
        for (BinaryOp o :
             {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::FloorDiv, BinaryOp::FloorMod,
              BinaryOp::Min, BinaryOp::Max, BinaryOp::LT, BinaryOp::BitXor, BinaryOp::Shl, BinaryOp::Shr})
            for (int64_t a : {int64_t(-100), int64_t(-1), int64_t(0), int64_t(3), int64_t(100)})
                for (int64_t b : {int64_t(-7), int64_t(-1), int64_t(0), int64_t(2), int64_t(5)}) {
                    int64_t x = ir::normalize_int(a, t), y = ir::normalize_int(b, t);
                    auto folded = fold_int_binary(o, x, y, t);
                    if (!folded) continue;
                    INFO(t.str() << " " << ir::binary_op_name(o) << " " << x << ", " << y);
                    CHECK(int_binary(o, x, y, t).value == *folded);
                }
}

TEST_CASE("known disagreement: folding reads u64 values with the top bit set as signed", "[scalar]") {
    // Kept as it is (scalar.h says why); this test shows it, and fails once it is fixed.
    CHECK(fold_int_binary(BinaryOp::LT, 1, kI64Min, DataType::u64()) == 0);
    CHECK(int_binary(BinaryOp::LT, 1, kI64Min, DataType::u64()).value == 1);
}

TEST_CASE("float to integer truncates toward zero and saturates; NaN is 0", "[scalar]") {
    auto to = [](double v, DataType t) { return convert(Value::of_float(v), DataType::f64(), t).i; };
    CHECK(to(3.9, DataType::i32()) == 3);
    CHECK(to(-3.9, DataType::i32()) == -3);
    CHECK(to(1e10, DataType::i32()) == 2147483647);
    CHECK(to(-1e10, DataType::i32()) == -2147483648LL);
    CHECK(to(127.5, DataType::i8()) == 127);
    CHECK(to(-128.9, DataType::i8()) == -128);
    CHECK(to(-5.0, DataType::u8()) == 0);
    CHECK(to(255.9, DataType::u8()) == 255);
    CHECK(to(300.0, DataType::u8()) == 255);
    CHECK(to(1e30, DataType::u64()) == -1);  // all ones
    CHECK(to(1e30, DataType::i64()) == kI64Max);
    CHECK(to(INFINITY, DataType::i16()) == 32767);
    CHECK(to(-INFINITY, DataType::i16()) == -32768);
    CHECK(to(NAN, DataType::i32()) == 0);
    CHECK(to(NAN, DataType::u8()) == 0);
    // To bool: != 0 (NaN != 0 is true).
    CHECK(to(0.5, DataType::boolean()) == 1);
    CHECK(to(-0.0, DataType::boolean()) == 0);
    CHECK(to(NAN, DataType::boolean()) == 1);
    // Integer to integer wraps; to bool is != 0.
    CHECK(convert(Value::of_int(300), DataType::i32(), DataType::i8()).i == 44);
    CHECK(convert(Value::of_int(-1), DataType::i32(), DataType::u16()).i == 65535);
    CHECK(convert(Value::of_int(256), DataType::i32(), DataType::boolean()).i == 1);
    // Integer to float reads u64 unsigned and rounds once: 2^64 - 1 -> 2^64 in f64.
    CHECK(convert(Value::of_int(-1), DataType::u64(), DataType::f64()).f == p2(64));
    CHECK(convert(Value::of_int(-1), DataType::i64(), DataType::f64()).f == -1.0);
    // 2^24 + 1 lies halfway between two floats; ties go to the even one, 2^24.
    CHECK(convert(Value::of_int((1 << 24) + 1), DataType::i32(), DataType::f32()).f == p2(24));
    CHECK(convert(Value::of_int((1 << 24) + 3), DataType::i32(), DataType::f32()).f == p2(24) + 4);
}

TEST_CASE("f32 rounds to nearest even and overflows to infinity past the midpoint", "[scalar]") {
    DataType t = DataType::f32();
    CHECK(round_to(1 + p2(-24), t) == 1.0);              // tie: down to even
    CHECK(round_to(1 + 3 * p2(-24), t) == 1 + p2(-22));  // tie: up to even
    CHECK(round_to(FLT_MAX + p2(102), t) == FLT_MAX);    // below the midpoint 2^128 - 2^103
    CHECK(round_to(p2(128) - p2(103), t) == INFINITY);   // the midpoint: FLT_MAX is odd
    CHECK(round_to(-1e39, t) == -INFINITY);
    CHECK(std::isnan(round_to(NAN, t)));
    CHECK(round_to(p2(-150), t) == 0.0);           // half the smallest subnormal: even 0
    CHECK(round_to(3 * p2(-150), t) == p2(-148));  // 1.5 ulp: even 2 ulp
    CHECK(round_to(0.1, DataType::f64()) == 0.1);
}

TEST_CASE("f16 and bf16 round to nearest even, overflow to infinity, keep NaN", "[scalar]") {
    DataType h = DataType::f16(), b = DataType::bf16();
    // f16: 10 mantissa bits (ulp at 1 is 2^-10), max 65504 = (2 - 2^-10) * 2^15.
    CHECK(round_to(1 + p2(-11), h) == 1.0);
    CHECK(round_to(1 + 3 * p2(-11), h) == 1 + p2(-9));
    CHECK(round_to(65504, h) == 65504);
    CHECK(round_to(65519, h) == 65504);
    CHECK(round_to(65520, h) == INFINITY);  // the midpoint to 2^16: 65504 is odd
    CHECK(round_to(-1e9, h) == -INFINITY);
    CHECK(round_to(INFINITY, h) == INFINITY);
    CHECK(std::isnan(round_to(NAN, h)));
    CHECK(round_to(p2(-24), h) == p2(-24));  // the smallest subnormal
    CHECK(round_to(p2(-25), h) == 0.0);      // half of it: even 0
    CHECK(f16_bits(65504) == 0x7bff);
    CHECK(f16_bits(-INFINITY) == 0xfc00);
    // bf16: 7 mantissa bits, f32's exponent range; max (2 - 2^-7) * 2^127.
    CHECK(round_to(1 + p2(-8), b) == 1.0);
    CHECK(round_to(1 + 3 * p2(-8), b) == 1 + p2(-6));
    CHECK(round_to((2 - p2(-7)) * p2(127), b) == (2 - p2(-7)) * p2(127));
    CHECK(round_to((2 - p2(-8)) * p2(127), b) == INFINITY);  // the midpoint: odd max rounds up
    CHECK(std::isnan(round_to(NAN, b)));
    CHECK(bf16_bits(1.0) == 0x3f80);
    CHECK(bf16_bits(-2.0) == 0xc000);
}

TEST_CASE("f8e4m3 saturates at 448 with no infinity; f8e5m2 overflows to infinity unless saturating",
          "[scalar]") {
    DataType e4 = DataType::f8e4m3(), e5 = DataType::f8e5m2();
    // E4M3 (OCP FN): bias 7, 3 mantissa bits; S.1111.111 is NaN, so max is 1.75 * 2^8 = 448.
    CHECK(round_to(448, e4) == 448);
    CHECK(round_to(464, e4) == 448);
    CHECK(round_to(1e6, e4) == 448);
    CHECK(round_to(-INFINITY, e4) == -448);
    CHECK(std::isnan(round_to(NAN, e4)));
    CHECK(round_to(1 + p2(-4), e4) == 1.0);       // tie (ulp 2^-3): even
    CHECK(round_to(1 + 3 * p2(-4), e4) == 1.25);  // tie: up to even
    CHECK(round_to(p2(-9), e4) == p2(-9));        // the smallest subnormal
    CHECK(round_to(p2(-10), e4) == 0.0);          // half of it: even 0
    CHECK(f8e4m3_bits(448) == 0x7e);
    CHECK(f8e4m3_bits(NAN) == 0x7f);
    CHECK(f8e4m3_bits(1.0) == 0x38);
    // E5M2: bias 15, 2 mantissa bits, IEEE specials; max 1.75 * 2^15 = 57344.
    CHECK(round_to(57344, e5) == 57344);
    CHECK(round_to(61439, e5) == 57344);
    CHECK(round_to(61440, e5) == INFINITY);  // the midpoint to 2^16: 57344 is odd
    CHECK(std::isnan(round_to(NAN, e5)));
    CHECK(f8e5m2_bits(1e6) == 0x7c);
    CHECK(f8e5m2_bits(1e6, true) == 0x7b);
    CHECK(f8e5m2_bits(-INFINITY, true) == 0xfb);
    CHECK(f8e5m2_bits(1.0) == 0x3c);
}

TEST_CASE("float min/max propagate NaN and float % is fmod (the dividend's sign)", "[scalar]") {
    CHECK(std::isnan(nan_min(NAN, 1.0)));
    CHECK(std::isnan(nan_min(1.0, NAN)));
    CHECK(std::isnan(nan_max(NAN, 1.0)));
    CHECK(nan_min(-0.5, 2.0) == -0.5);
    CHECK(float_binary(BinaryOp::Mod, -7.0, 2.0)->f == -1.0);
    CHECK(float_binary(BinaryOp::LT, 1.0, 2.0)->i == 1);
    CHECK(float_binary(BinaryOp::LT, NAN, 2.0)->i == 0);
    CHECK_FALSE(float_binary(BinaryOp::Shl, 1.0, 2.0));
    CHECK(is_float_arithmetic(BinaryOp::Mod));
    CHECK_FALSE(is_float_arithmetic(BinaryOp::Min));
}

TEST_CASE("integers exact in a float type are those within 2^significand bits", "[scalar]") {
    CHECK(int_exact_in_float(2048, DataType::f16()));
    CHECK_FALSE(int_exact_in_float(2049, DataType::f16()));
    CHECK(int_exact_in_float(-256, DataType::bf16()));
    CHECK_FALSE(int_exact_in_float(257, DataType::bf16()));
    CHECK(int_exact_in_float(1 << 24, DataType::f32()));
    CHECK_FALSE(int_exact_in_float((1 << 24) + 1, DataType::f32()));
    CHECK_FALSE(int_exact_in_float(1, DataType::f8e4m3()));
}

TEST_CASE("argument binding helpers: row-major strides and rounding a tensor to its type", "[scalar]") {
    CHECK(row_major_strides({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
    CHECK(row_major_strides({}).empty());
    CHECK(list_str({4, 16}) == "[4, 16]");
    std::vector<double> d = {1 + p2(-11), 0.1};
    round_tensor_data(d, DataType::f16());
    CHECK(d[0] == 1.0);
    std::vector<double> e = {0.1};
    round_tensor_data(e, DataType::f64());
    CHECK(e[0] == 0.1);
}
