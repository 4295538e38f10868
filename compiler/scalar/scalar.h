// Scalar semantics of the language, in one place: the value carrier, conversions between
// types, integer wrapping, floor division and modulo, shifts, comparisons, the math
// calls, and the integer folding the generated code allows. The reference interpreter,
// the GPU simulator and the simplifier all compute with these, so they cannot drift.
//
// What is NOT here, on purpose: where a component rounds. The interpreter computes
// floats in double and rounds only on stores and casts (interp.h); the simulator rounds
// every float operation to its type as the GPU does (sim.h). Both call the same
// round_to_float_type (float_formats.h); each decides when.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec::scalar {

// A scalar: `f` for float types, `i` for integer and bool types (normalised to the
// type, see ir::normalize_int; u64 holds its bit pattern). Which one is meant follows
// from the expression's type.
struct Value {
    double f = 0;
    int64_t i = 0;
    static Value of_float(double v) { return {v, 0}; }
    static Value of_int(int64_t v) { return {0, v}; }
};

// ---- conversions ------------------------------------------------------------------

inline bool is_u64(ir::DataType t);
// The integer `v` of type `t` as a double (u64 read unsigned).
inline double int_to_double(int64_t v, ir::DataType t);
// Converts a value of type `from` to type `to`: to a float type, round to nearest even
// (round_to_float_type); float -> integer truncates toward zero and saturates at the
// type's range (NaN -> 0); integer -> integer wraps; to bool is `!= 0`.
Value convert(Value v, ir::DataType from, ir::DataType to);

// ---- integers ---------------------------------------------------------------------

// `v` (any 64-bit pattern) wrapped to the width and signedness of `t`.
inline int64_t wrap(uint64_t v, ir::DataType t);
// floor(a / b) and the modulo with the divisor's sign, on int64 exactly (b != 0, and
// not INT64_MIN / -1): the arithmetic the typed versions below and the simplifier's
// rewrites rest on.
inline int64_t floor_div_i64(int64_t a, int64_t b);
inline int64_t floor_mod_i64(int64_t a, int64_t b);
// a < b in the type (u64 compares unsigned; the other types' values are exact in int64).
inline bool int_less(int64_t a, int64_t b, ir::DataType t);
// Floor division and modulo of values of type `t`, b != 0, wrapped to `t`: the result
// rounds toward negative infinity and the modulo takes the sign of the divisor; u64
// divides unsigned. Dividing the type's minimum by -1 wraps (to the minimum); x % -1
// is 0.
inline int64_t floor_div(int64_t a, int64_t b, ir::DataType t);
inline int64_t floor_mod(int64_t a, int64_t b, ir::DataType t);
// A shift amount `b` outside [0, width) of `t` (bool: width 1; unsigned types read b
// unsigned, so a u64 amount with the top bit set is out of range, not negative).
inline bool shift_out_of_range(int64_t b, ir::DataType t);
// |x| wrapped to `t` (the minimum of a signed type stays the minimum).
inline int64_t int_abs(int64_t x, ir::DataType t);

// What an integer operation did besides giving a value.
enum class IntFault { None, DivisionByZero, ShiftOutOfRange, NotAnIntegerOp };
struct IntResult {
    int64_t value = 0;  // 0 when faulted
    IntFault fault = IntFault::None;
};
// An integer/bool binary op on values of type `t` (the operands' type), as the
// interpreter and the simulator evaluate it: wrapping, floor division and modulo, u64
// unsigned, `>>` arithmetic for signed types and logical for unsigned ones;
// comparisons and `&&`/`||` give 0 or 1. Division or modulo by zero and out-of-range
// shifts fault (the caller reports them its own way). Float-only ops (Div, Mod) give
// NotAnIntegerOp.
inline IntResult int_binary(ir::BinaryOp op, int64_t a, int64_t b, ir::DataType t);
// Integer negation and bitwise not, wrapped to `t`; logical not (0 or 1).
inline int64_t int_unary(ir::UnaryOp op, int64_t a, ir::DataType t);

// The folding the simplifier may do on constants (ir constant folding feeds codegen):
// int_binary's value where the generated code's result is defined, nullopt where it is
// not (division by zero, a quotient that overflows the type such as INT_MIN / -1 or
// i8 -128 / -1, shifts outside [0, bits)) or the op is not an integer op.
//
// KNOWN DISAGREEMENT with int_binary, kept as it is (changing it would change what the
// compiler emits): this folding reads every value signed, so for u64 operands with the
// top bit set (>= 2^63) min/max, comparisons, floor division/modulo and `>>` differ
// from int_binary's unsigned results. The other types agree wherever this folds.
std::optional<int64_t> fold_int_binary(ir::BinaryOp op, int64_t a, int64_t b, ir::DataType t);

// ---- floats -----------------------------------------------------------------------

// `v` is exactly a value of float type `t` (f16, bf16, f32, f64: |v| within 2^mantissa
// bits; f8 types: false, so a caller leaves those conversions alone).
bool int_exact_in_float(int64_t v, ir::DataType t);
// min/max that propagate NaN (std::fmin would drop it).
inline double nan_min(double a, double b);
inline double nan_max(double a, double b);
// A float binary op on doubles, unrounded: arithmetic in double (`%` is fmod),
// comparisons as 0/1 ints; nullopt for integer-only ops.
inline std::optional<Value> float_binary(ir::BinaryOp op, double a, double b);
// Add, Sub, Mul, Div, Mod: the ops whose float result a GPU rounds to the type.
inline bool is_float_arithmetic(ir::BinaryOp op);
// The math call `op` on doubles (`y` only for pow), unrounded, as the correctly rounded
// libm result (not a GPU's approximation). Shuffles are not math: 0.
double math_call(ir::CallOp op, double x, double y);

// ---- argument binding (shared by the interpreter and the simulator) -----------------

// What is wrong with giving `f` this many tensors, sizes and scalars ("'k' takes 2
// tensors, 1 given"), checked in that order; nullopt when the counts match.
std::optional<std::string> param_count_error(const ir::PrimFunc& f, size_t tensors, size_t sizes,
                                             size_t scalars);
// Row-major strides (in elements) of `shape`.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// "[4, 16]"
std::string list_str(const std::vector<int64_t>& v);
// The memory of a tensor of float type `t` holds values of that type: rounds what the
// caller wrote, in place (f64: unchanged).
void round_tensor_data(std::vector<double>& data, ir::DataType t);

// ---- inline definitions ---------------------------------------------------------------
// The per-operation rules are inline: the simulator evaluates them for every thread and
// every operation, where a call into another library each time would cost.

using ir::BinaryOp;
using ir::DataType;
using ir::normalize_int;
using ir::UnaryOp;

inline bool is_u64(DataType t) {
    return t.is_uint() && t.bits == 64;
}

inline double int_to_double(int64_t v, DataType t) {
    return is_u64(t) ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

inline int64_t floor_div_i64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
inline int64_t floor_mod_i64(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

inline int64_t wrap(uint64_t v, DataType t) {
    return normalize_int(static_cast<int64_t>(v), t);
}

inline bool int_less(int64_t a, int64_t b, DataType t) {
    return is_u64(t) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

inline int64_t floor_div(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return wrap(static_cast<uint64_t>(a), t);
    return wrap(static_cast<uint64_t>(floor_div_i64(a, b)), t);
}

inline int64_t floor_mod(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    if (b == -1) return 0;
    return wrap(static_cast<uint64_t>(floor_mod_i64(a, b)), t);
}

inline bool shift_out_of_range(int64_t b, DataType t) {
    int width = t.is_bool() ? 1 : t.bits;
    bool negative = !t.is_uint() && b < 0;
    return negative || static_cast<uint64_t>(b) >= static_cast<uint64_t>(width);
}

inline int64_t int_abs(int64_t x, DataType t) {
    bool neg = t.is_int() && x < 0;
    return neg ? wrap(0 - static_cast<uint64_t>(x), t) : x;
}

inline IntResult int_binary(BinaryOp op, int64_t x, int64_t y, DataType t) {
    auto ok = [](int64_t v) { return IntResult{v, IntFault::None}; };
    auto truth = [](bool v) { return IntResult{v ? 1 : 0, IntFault::None}; };
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op) {
    case BinaryOp::Add: return ok(wrap(ux + uy, t));
    case BinaryOp::Sub: return ok(wrap(ux - uy, t));
    case BinaryOp::Mul: return ok(wrap(ux * uy, t));
    case BinaryOp::FloorDiv:
        if (y == 0) return {0, IntFault::DivisionByZero};
        return ok(floor_div(x, y, t));
    case BinaryOp::FloorMod:
        if (y == 0) return {0, IntFault::DivisionByZero};
        return ok(floor_mod(x, y, t));
    case BinaryOp::Min: return ok(int_less(y, x, t) ? y : x);
    case BinaryOp::Max: return ok(int_less(x, y, t) ? y : x);
    case BinaryOp::EQ: return truth(x == y);
    case BinaryOp::NE: return truth(x != y);
    case BinaryOp::LT: return truth(int_less(x, y, t));
    case BinaryOp::LE: return truth(!int_less(y, x, t));
    case BinaryOp::GT: return truth(int_less(y, x, t));
    case BinaryOp::GE: return truth(!int_less(x, y, t));
    case BinaryOp::And: return truth(x != 0 && y != 0);
    case BinaryOp::Or: return truth(x != 0 || y != 0);
    case BinaryOp::BitAnd: return ok(wrap(ux & uy, t));
    case BinaryOp::BitOr: return ok(wrap(ux | uy, t));
    case BinaryOp::BitXor: return ok(wrap(ux ^ uy, t));
    case BinaryOp::Shl:
    case BinaryOp::Shr:
        if (shift_out_of_range(y, t)) return {0, IntFault::ShiftOutOfRange};
        if (op == BinaryOp::Shl) return ok(wrap(ux << y, t));
        // Arithmetic for signed types (x is sign-extended), logical for unsigned ones.
        if (t.is_uint()) return ok(wrap(ux >> y, t));
        return ok(wrap(static_cast<uint64_t>(x >> y), t));
    case BinaryOp::Div:
    case BinaryOp::Mod: break;
    }
    return {0, IntFault::NotAnIntegerOp};
}

inline int64_t int_unary(UnaryOp op, int64_t a, DataType t) {
    switch (op) {
    case UnaryOp::Neg: return wrap(0 - static_cast<uint64_t>(a), t);
    case UnaryOp::Not: return a == 0 ? 1 : 0;
    case UnaryOp::BitNot: return wrap(~static_cast<uint64_t>(a), t);
    }
    return 0;
}

inline double nan_min(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b < a ? b : a;
}
inline double nan_max(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b > a ? b : a;
}

inline bool is_float_arithmetic(BinaryOp op) {
    return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
           op == BinaryOp::Mod;
}

inline std::optional<Value> float_binary(BinaryOp op, double x, double y) {
    auto truth = [](bool v) { return Value::of_int(v ? 1 : 0); };
    switch (op) {
    case BinaryOp::Add: return Value::of_float(x + y);
    case BinaryOp::Sub: return Value::of_float(x - y);
    case BinaryOp::Mul: return Value::of_float(x * y);
    case BinaryOp::Div: return Value::of_float(x / y);
    case BinaryOp::Mod: return Value::of_float(std::fmod(x, y));
    case BinaryOp::Min: return Value::of_float(nan_min(x, y));
    case BinaryOp::Max: return Value::of_float(nan_max(x, y));
    case BinaryOp::EQ: return truth(x == y);
    case BinaryOp::NE: return truth(x != y);
    case BinaryOp::LT: return truth(x < y);
    case BinaryOp::LE: return truth(x <= y);
    case BinaryOp::GT: return truth(x > y);
    case BinaryOp::GE: return truth(x >= y);
    default: return std::nullopt;
    }
}

}  // namespace tilec::scalar
