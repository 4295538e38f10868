// The integer simplifier, rule by rule: each test builds an expression, simplifies it,
// and checks the printed result (the printer is tested on its own in printer_test.cpp).
#include <catch2/catch.hpp>

#include "ir/ir.h"
#include "ir/printer.h"
#include "transform/simplify.h"

using namespace tilec::ir;
using tilec::transform::bound_of;
using tilec::transform::Interval;
using tilec::transform::RangeMap;
using tilec::transform::simplify;

namespace {

Expr c(int64_t v) {
    return make_int(v);
}
std::string simp(const Expr& e, const RangeMap& known = {}) {
    return print(simplify(e, known));
}

struct Vars {
    Var x = make_loop_var("x");
    Var y = make_loop_var("y");
    Var i = make_loop_var("i");
    Var n = make_size_var("n");
};

}  // namespace

TEST_CASE("simplify folds integer constants with floor semantics", "[simplify]") {
    CHECK(simp(add(c(2), c(3))) == "5");
    CHECK(simp(sub(c(2), c(7))) == "-5");
    CHECK(simp(mul(c(-4), c(6))) == "-24");
    CHECK(simp(floordiv(c(7), c(2))) == "3");
    CHECK(simp(floordiv(c(-7), c(2))) == "-4");
    CHECK(simp(floordiv(c(7), c(-2))) == "-4");
    CHECK(simp(floordiv(c(-7), c(-2))) == "3");
    CHECK(simp(floormod(c(7), c(3))) == "1");
    CHECK(simp(floormod(c(-7), c(3))) == "2");
    CHECK(simp(floormod(c(7), c(-3))) == "-2");
    CHECK(simp(floormod(c(-7), c(-3))) == "-1");
    CHECK(simp(minimum(c(3), c(-1))) == "-1");
    CHECK(simp(maximum(c(3), c(-1))) == "3");
    CHECK(simp(make_binary(BinaryOp::BitAnd, c(12), c(10))) == "8");
    CHECK(simp(make_binary(BinaryOp::BitOr, c(12), c(10))) == "14");
    CHECK(simp(make_binary(BinaryOp::BitXor, c(12), c(10))) == "6");
    CHECK(simp(make_binary(BinaryOp::Shl, c(3), c(4))) == "48");
    CHECK(simp(make_binary(BinaryOp::Shr, c(-16), c(2))) == "-4");
    CHECK(simp(make_unary(UnaryOp::BitNot, c(0))) == "-1");
    CHECK(simp(make_unary(UnaryOp::Neg, c(5))) == "-5");
}

TEST_CASE("simplify folds comparisons and logic on constants", "[simplify]") {
    CHECK(simp(lt(c(1), c(2))) == "true");
    CHECK(simp(ge(c(1), c(2))) == "false");
    CHECK(simp(eq(c(4), c(4))) == "true");
    CHECK(simp(ne(c(4), c(4))) == "false");
    CHECK(simp(logical_and(make_bool(true), make_bool(false))) == "false");
    CHECK(simp(logical_or(make_bool(true), make_bool(false))) == "true");
    CHECK(simp(logical_not(make_bool(false))) == "true");
}

TEST_CASE("simplify wraps constants at the type's width", "[simplify]") {
    Expr a = make_int(200, DataType::u8()), b = make_int(100, DataType::u8());
    CHECK(simp(add(a, b)) == "44u8");
    CHECK(simp(sub(b, a)) == "156u8");
    CHECK(simp(add(make_int(127, DataType::i8()), make_int(1, DataType::i8()))) == "-128i8");
    CHECK(simp(make_binary(BinaryOp::Shr, make_int(255, DataType::u8()), make_int(4, DataType::u8()))) ==
          "15u8");
    CHECK(simp(make_unary(UnaryOp::BitNot, make_int(5, DataType::u8()))) == "250u8");
    CHECK(simp(lt(make_int(-1, DataType::u8()), make_int(1, DataType::u8()))) == "false");  // 255 < 1
}

TEST_CASE("simplify never folds division or modulo by zero", "[simplify]") {
    CHECK(simp(floordiv(c(7), c(0))) == "7 / 0");
    CHECK(simp(floormod(c(7), c(0))) == "7 % 0");
    Vars v;
    CHECK(simp(floordiv(v.x, c(0))) == "x / 0");
    CHECK(simp(floormod(v.x, c(0))) == "x % 0");
    // x / x is not 1 when x may be 0.
    CHECK(simp(floordiv(v.x, v.x)) == "x / x");
    // Division overflow is left alone too.
    Expr m = make_int(-128, DataType::i8());
    CHECK(simp(floordiv(m, make_int(-1, DataType::i8()))) == "-128i8 / -1i8");
}

TEST_CASE("simplify moves constants to the right", "[simplify]") {
    Vars v;
    CHECK(simp(add(c(3), v.x)) == "x + 3");
    CHECK(simp(mul(c(3), v.x)) == "x * 3");
    CHECK(simp(minimum(c(3), v.x)) == "min(x, 3)");
    CHECK(simp(lt(c(3), v.x)) == "x > 3");
    CHECK(simp(make_binary(BinaryOp::BitAnd, c(3), v.x)) == "x & 3");
}

TEST_CASE("simplify applies additive and multiplicative identities", "[simplify]") {
    Vars v;
    CHECK(simp(add(v.x, c(0))) == "x");
    CHECK(simp(sub(v.x, c(0))) == "x");
    CHECK(simp(mul(v.x, c(1))) == "x");
    CHECK(simp(mul(v.x, c(0))) == "0");
    CHECK(simp(sub(v.x, v.x)) == "0");
    CHECK(simp(add(sub(v.x, v.y), v.y)) == "x");
    CHECK(simp(sub(add(v.x, v.y), v.x)) == "y");
    CHECK(simp(sub(add(v.x, v.y), v.y)) == "x");
    CHECK(simp(add(add(v.x, c(3)), c(4))) == "x + 7");
    CHECK(simp(sub(add(v.x, c(3)), c(4))) == "x - 1");
    CHECK(simp(add(mul(v.x, c(2)), mul(v.x, c(3)))) == "x * 5");
    CHECK(simp(mul(add(v.x, c(2)), c(4))) == "x * 4 + 8");
    CHECK(simp(sub(c(5), v.x)) == "5 - x");
    CHECK(simp(sub(c(0), v.x)) == "-x");
    CHECK(simp(make_unary(UnaryOp::Neg, make_unary(UnaryOp::Neg, v.x))) == "x");
    // Non-linear products stay as they are.
    CHECK(simp(mul(v.x, v.y)) == "x * y");
}

TEST_CASE("simplify cancels multiplication by division", "[simplify]") {
    Vars v;
    CHECK(simp(floordiv(mul(v.x, c(8)), c(8))) == "x");
    CHECK(simp(floordiv(mul(v.x, c(32)), c(8))) == "x * 4");
    CHECK(simp(floordiv(mul(v.x, c(8)), c(32))) == "x / 4");
    CHECK(simp(floordiv(add(mul(v.x, c(6)), c(4)), c(8))) == "(x * 3 + 2) / 4");
    CHECK(simp(floormod(mul(v.x, c(8)), c(8))) == "0");
    CHECK(simp(floormod(mul(v.x, c(16)), c(8))) == "0");
    CHECK(simp(floordiv(floordiv(v.x, c(4)), c(8))) == "x / 32");
    CHECK(simp(floormod(floormod(v.x, c(16)), c(4))) == "x % 4");
    CHECK(simp(floordiv(v.x, c(1))) == "x");
    CHECK(simp(floormod(v.x, c(1))) == "0");
}

TEST_CASE("simplify splits floor div and mod of x*c + y using y's range", "[simplify]") {
    Vars v;
    RangeMap known{{v.y, {0, 7}}};
    Expr e = add(mul(v.x, c(8)), v.y);
    CHECK(simp(floordiv(e, c(8)), known) == "x");
    CHECK(simp(floormod(e, c(8)), known) == "y");
    // Without a range for y, only the multiple of c moves out.
    CHECK(simp(floordiv(e, c(8))) == "x + y / 8");
    CHECK(simp(floormod(e, c(8))) == "y % 8");
    // Constants split too: (x*8 + 10) / 8 = x + 1, (x*8 + 10) % 8 = 2.
    CHECK(simp(floordiv(add(mul(v.x, c(8)), c(10)), c(8))) == "x + 1");
    CHECK(simp(floormod(add(mul(v.x, c(8)), c(10)), c(8))) == "2");
    CHECK(simp(floordiv(sub(mul(v.x, c(8)), c(1)), c(8))) == "x - 1");
    CHECK(simp(floormod(sub(mul(v.x, c(8)), c(1)), c(8))) == "7");
}

TEST_CASE("simplify decides div and mod of a bounded value", "[simplify]") {
    Vars v;
    RangeMap known{{v.i, {0, 127}}};
    CHECK(simp(floordiv(v.i, c(128)), known) == "0");
    CHECK(simp(floormod(v.i, c(128)), known) == "i");
    CHECK(simp(floordiv(v.i, c(64)), known) == "i / 64");
    CHECK(simp(floormod(v.i, c(64)), known) == "i % 64");
    RangeMap shifted{{v.i, {128, 255}}};
    CHECK(simp(floordiv(v.i, c(128)), shifted) == "1");
    CHECK(simp(floormod(v.i, c(128)), shifted) == "i - 128");
    // A negative range lands in the period below zero.
    RangeMap negative{{v.i, {-8, -1}}};
    CHECK(simp(floordiv(v.i, c(8)), negative) == "-1");
    CHECK(simp(floormod(v.i, c(8)), negative) == "i + 8");
    // A divisor that is a variable: decided when the numerator is below it.
    RangeMap both{{v.i, {0, 15}}, {v.n, {16, 1000}}};
    CHECK(simp(floordiv(v.i, v.n), both) == "0");
    CHECK(simp(floormod(v.i, v.n), both) == "i");
}

TEST_CASE("simplify recombines x / c * c + x % c into x", "[simplify]") {
    Vars v;
    Expr e = add(mul(floordiv(v.x, c(16)), c(16)), floormod(v.x, c(16)));
    CHECK(simp(e) == "x");
    Expr scaled = add(mul(floordiv(v.x, c(4)), c(12)), mul(floormod(v.x, c(4)), c(3)));
    CHECK(simp(scaled) == "x * 3");
    // Different divisors do not combine.
    Expr mixed = add(mul(floordiv(v.x, c(8)), c(16)), floormod(v.x, c(16)));
    CHECK(simp(mixed) == "x / 8 * 16 + x % 16");
}

TEST_CASE("simplify orders min and max by bounds", "[simplify]") {
    Vars v;
    RangeMap known{{v.i, {0, 127}}, {v.x, {200, 300}}};
    CHECK(simp(minimum(v.i, c(128)), known) == "i");
    CHECK(simp(maximum(v.i, c(128)), known) == "128");
    CHECK(simp(minimum(v.x, v.i), known) == "i");
    CHECK(simp(maximum(v.x, v.i), known) == "x");
    CHECK(simp(minimum(v.i, c(64)), known) == "min(i, 64)");
    // By the difference: min(y + 1, y + 3) = y + 1 whatever y is.
    CHECK(simp(minimum(add(v.y, c(1)), add(v.y, c(3)))) == "y + 1");
    CHECK(simp(maximum(add(v.y, c(1)), add(v.y, c(3)))) == "y + 3");
    CHECK(simp(minimum(v.y, v.y)) == "y");
    CHECK(simp(minimum(minimum(v.y, c(5)), c(3))) == "min(y, 3)");
    CHECK(simp(maximum(maximum(v.y, c(5)), c(3))) == "max(y, 5)");
}

TEST_CASE("simplify decides comparisons by bounds", "[simplify]") {
    Vars v;
    RangeMap known{{v.i, {0, 127}}};
    CHECK(simp(lt(v.i, c(128)), known) == "true");
    CHECK(simp(lt(v.i, c(127)), known) == "i < 127");
    CHECK(simp(le(v.i, c(127)), known) == "true");
    CHECK(simp(ge(v.i, c(0)), known) == "true");
    CHECK(simp(gt(v.i, c(127)), known) == "false");
    CHECK(simp(eq(v.i, c(200)), known) == "false");
    CHECK(simp(ne(v.i, c(-1)), known) == "true");
    CHECK(simp(lt(v.y, add(v.y, c(1)))) == "true");
    CHECK(simp(le(add(v.y, c(2)), v.y)) == "false");
    CHECK(simp(eq(add(v.x, v.y), add(v.y, v.x))) == "true");
    CHECK(simp(lt(v.x, v.y)) == "x < y");
    // A bool: x == true -> x, x == false -> !x.
    Expr b = lt(v.x, v.y);
    CHECK(simp(eq(b, make_bool(true))) == "x < y");
    CHECK(simp(eq(b, make_bool(false))) == "x >= y");
    CHECK(simp(logical_not(logical_not(b))) == "x < y");
}

TEST_CASE("simplify reduces and, or and select with constants", "[simplify]") {
    Vars v;
    Expr b = lt(v.x, v.y);
    CHECK(simp(logical_and(make_bool(true), b)) == "x < y");
    CHECK(simp(logical_and(b, make_bool(false))) == "false");
    CHECK(simp(logical_or(b, make_bool(true))) == "true");
    CHECK(simp(logical_or(make_bool(false), b)) == "x < y");
    CHECK(simp(logical_and(b, b)) == "x < y");
    CHECK(simp(make_select(make_bool(true), v.x, v.y)) == "x");
    CHECK(simp(make_select(make_bool(false), v.x, v.y)) == "y");
    CHECK(simp(make_select(b, v.x, v.x)) == "x");
    RangeMap known{{v.i, {0, 127}}};
    CHECK(simp(make_select(lt(v.i, c(128)), v.x, v.y), known) == "x");
    // Floats keep their operations: only the condition simplifies.
    Expr f = make_float(1.5), g = make_float(2.5);
    CHECK(simp(make_select(lt(c(1), c(2)), f, g)) == "1.5");
    CHECK(simp(add(f, g)) == "1.5 + 2.5");
}

TEST_CASE("simplify folds casts of constants only where exact", "[simplify]") {
    CHECK(simp(make_cast(DataType::i32(), c(5))) == "5i32");
    CHECK(simp(make_cast(DataType::u8(), c(300))) == "44u8");
    CHECK(simp(make_cast(DataType::i64(), make_int(-1, DataType::i8()))) == "-1");
    CHECK(simp(make_cast(DataType::f32(), c(3))) == "3.0");
    CHECK(simp(make_cast(DataType::f16(), c(2048))) == "2048.0f16");
    // 4097 is not an f16 value: left to the target's rounding.
    CHECK(simp(make_cast(DataType::f16(), c(4097))) == "cast<f16>(4097)");
    CHECK(simp(make_cast(DataType::i32(), make_float(-3.0))) == "-3i32");
    CHECK(simp(make_cast(DataType::i32(), make_float(2.5))) == "cast<i32>(2.5)");
    CHECK(simp(make_cast(DataType::boolean(), c(7))) == "true");
    Vars v;
    CHECK(simp(make_cast(DataType::i64(), v.x)) == "x");
}

TEST_CASE("simplify applies bitwise identities", "[simplify]") {
    Var w = make_var("w", DataType::u8(), VarKind::Scalar);
    auto u8 = [](int64_t v) { return make_int(v, DataType::u8()); };
    CHECK(simp(make_binary(BinaryOp::BitAnd, w, u8(0))) == "0u8");
    CHECK(simp(make_binary(BinaryOp::BitAnd, w, u8(255))) == "w");
    CHECK(simp(make_binary(BinaryOp::BitOr, w, u8(0))) == "w");
    CHECK(simp(make_binary(BinaryOp::BitXor, w, w)) == "0u8");
    CHECK(simp(make_binary(BinaryOp::Shr, w, u8(0))) == "w");
    CHECK(simp(make_binary(BinaryOp::Shl, w, u8(0))) == "w");
    // (w >> 4) & 15 is already exact for u8 (w >> 4 <= 15): the mask goes.
    CHECK(simp(make_binary(BinaryOp::BitAnd, make_binary(BinaryOp::Shr, w, u8(4)), u8(15))) == "w >> 4u8");
    CHECK(simp(make_binary(BinaryOp::BitAnd, w, u8(15))) == "w & 15u8");
    Vars v;
    RangeMap known{{v.i, {0, 15}}};
    CHECK(simp(make_binary(BinaryOp::Shr, v.i, c(4)), known) == "0");
    CHECK(simp(make_binary(BinaryOp::BitAnd, v.i, c(15)), known) == "i");
}

TEST_CASE("simplify keeps wrapping types exact", "[simplify]") {
    // In u8, x * 16 / 16 is not x (x = 20: 320 wraps to 64, 64 / 16 = 4).
    Var x = make_var("x", DataType::u8(), VarKind::Scalar);
    auto u8 = [](int64_t v) { return make_int(v, DataType::u8()); };
    CHECK(simp(floordiv(mul(x, u8(16)), u8(16))) == "x * 16u8 / 16u8");
    // With x known to be small, nothing wraps and the rule applies.
    RangeMap known{{x, {0, 15}}};
    CHECK(simp(floordiv(mul(x, u8(16)), u8(16)), known) == "x");
    // Ring identities hold under wrapping, so they always apply.
    CHECK(simp(sub(add(x, u8(200)), u8(200))) == "x");
    // i8 comparisons: x + 1 > x is false for x = 127.
    Var s = make_var("s", DataType::i8(), VarKind::Scalar);
    CHECK(simp(gt(add(s, make_int(1, DataType::i8())), s)) == "s + 1i8 > s");
}

TEST_CASE("simplify replaces a variable known to be one value", "[simplify]") {
    Vars v;
    RangeMap known{{v.i, {3, 3}}};
    CHECK(simp(add(v.i, v.x), known) == "x + 3");
}

TEST_CASE("simplify returns the same node when nothing changes", "[simplify]") {
    Vars v;
    Expr e = add(mul(v.x, c(4)), v.y);
    CHECK(simplify(e) == e);
    Expr d = floordiv(v.x, c(7));
    CHECK(simplify(d) == d);
}

TEST_CASE("bound_of computes ranges of index expressions", "[simplify]") {
    Vars v;
    RangeMap known{{v.i, {0, 127}}, {v.x, {-4, 4}}};
    CHECK(bound_of(add(mul(v.i, c(2)), c(1)), known) == Interval{1, 255});
    CHECK(bound_of(sub(v.i, v.x), known) == Interval{-4, 131});
    CHECK(bound_of(mul(v.x, v.x), known) == Interval{-16, 16});
    CHECK(bound_of(floordiv(v.i, c(32)), known) == Interval{0, 3});
    CHECK(bound_of(floordiv(v.x, c(3)), known) == Interval{-2, 1});
    CHECK(bound_of(floormod(v.x, c(3)), known) == Interval{0, 2});
    CHECK(bound_of(floormod(v.i, c(200)), known) == Interval{0, 127});
    CHECK(bound_of(minimum(v.i, v.x), known) == Interval{-4, 4});
    CHECK(bound_of(maximum(v.i, v.x), known) == Interval{0, 127});
    CHECK(bound_of(make_select(lt(v.x, c(0)), v.i, v.x), known) == Interval{-4, 127});
    CHECK(bound_of(lt(v.i, c(200)), known) == Interval{1, 1});
    // Unknown i64 vars are unbounded; narrow types give their range.
    Interval all = bound_of(v.y, known);
    CHECK_FALSE(all.has_min());
    CHECK_FALSE(all.has_max());
    Var b = make_var("b", DataType::u8(), VarKind::Scalar);
    CHECK(bound_of(b) == Interval{0, 255});
    // u8 b + 1 can wrap: the whole range, never [1, 256].
    CHECK(bound_of(add(b, make_int(1, DataType::u8()))) == Interval{0, 255});
    CHECK(bound_of(make_cast(DataType::i64(), b)) == Interval{0, 255});
}
