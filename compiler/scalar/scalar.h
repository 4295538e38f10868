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
#include <cstdint>
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

bool is_u64(ir::DataType t);
// The integer `v` of type `t` as a double (u64 read unsigned).
double int_to_double(int64_t v, ir::DataType t);
// Converts a value of type `from` to type `to`: to a float type, round to nearest even
// (round_to_float_type); float -> integer truncates toward zero and saturates at the
// type's range (NaN -> 0); integer -> integer wraps; to bool is `!= 0`.
Value convert(Value v, ir::DataType from, ir::DataType to);

// ---- integers ---------------------------------------------------------------------

// `v` (any 64-bit pattern) wrapped to the width and signedness of `t`.
int64_t wrap(uint64_t v, ir::DataType t);
// floor(a / b) and the modulo with the divisor's sign, on int64 exactly (b != 0, and
// not INT64_MIN / -1): the arithmetic the typed versions below and the simplifier's
// rewrites rest on.
int64_t floor_div_i64(int64_t a, int64_t b);
int64_t floor_mod_i64(int64_t a, int64_t b);
// a < b in the type (u64 compares unsigned; the other types' values are exact in int64).
bool int_less(int64_t a, int64_t b, ir::DataType t);
// Floor division and modulo of values of type `t`, b != 0, wrapped to `t`: the result
// rounds toward negative infinity and the modulo takes the sign of the divisor; u64
// divides unsigned. Dividing the type's minimum by -1 wraps (to the minimum); x % -1
// is 0.
int64_t floor_div(int64_t a, int64_t b, ir::DataType t);
int64_t floor_mod(int64_t a, int64_t b, ir::DataType t);
// A shift amount `b` outside [0, width) of `t` (bool: width 1; unsigned types read b
// unsigned, so a u64 amount with the top bit set is out of range, not negative).
bool shift_out_of_range(int64_t b, ir::DataType t);
// |x| wrapped to `t` (the minimum of a signed type stays the minimum).
int64_t int_abs(int64_t x, ir::DataType t);

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
IntResult int_binary(ir::BinaryOp op, int64_t a, int64_t b, ir::DataType t);
// Integer negation and bitwise not, wrapped to `t`; logical not (0 or 1).
int64_t int_unary(ir::UnaryOp op, int64_t a, ir::DataType t);

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
double nan_min(double a, double b);
double nan_max(double a, double b);
// A float binary op on doubles, unrounded: arithmetic in double (`%` is fmod),
// comparisons as 0/1 ints; nullopt for integer-only ops.
std::optional<Value> float_binary(ir::BinaryOp op, double a, double b);
// Add, Sub, Mul, Div, Mod: the ops whose float result a GPU rounds to the type.
bool is_float_arithmetic(ir::BinaryOp op);
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

}  // namespace tilec::scalar
