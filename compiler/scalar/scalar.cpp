// The scalar rules of scalar.h, written once: before this file the interpreter, the
// simulator and the simplifier each had a copy, and copies of integer corner cases drift.
#include "scalar/scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scalar/float_formats.h"

namespace tilec::scalar {

using namespace ir;

namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

uint64_t u(int64_t v) {
    return static_cast<uint64_t>(v);
}
int64_t s(uint64_t v) {
    return static_cast<int64_t>(v);
}

}  // namespace

// ---------------------------------------------------------------------------------
// Conversions

bool is_u64(DataType t) {
    return t.is_uint() && t.bits == 64;
}

double int_to_double(int64_t v, DataType t) {
    return is_u64(t) ? static_cast<double>(u(v)) : static_cast<double>(v);
}

Value convert(Value v, DataType from, DataType to) {
    if (to.is_float()) {
        double d = from.is_float() ? v.f : int_to_double(v.i, from);
        return Value::of_float(round_to_float_type(d, to));
    }
    if (to.is_bool()) return Value::of_int(from.is_float() ? (v.f != 0.0) : (v.i != 0));
    if (!from.is_float()) return Value::of_int(normalize_int(v.i, to));
    // Float -> integer: truncate toward zero, saturate at the type's range, NaN -> 0.
    double d = v.f;
    if (std::isnan(d)) return Value::of_int(0);
    d = std::trunc(d);
    const double two_pow_bits = std::ldexp(1.0, to.bits);
    if (to.is_uint()) {
        if (d <= 0) return Value::of_int(0);
        if (d >= two_pow_bits) return Value::of_int(normalize_int(-1, to));  // all ones
        return Value::of_int(s(static_cast<uint64_t>(d)));
    }
    const double half = two_pow_bits / 2;  // 2^(bits-1)
    if (d <= -half) return Value::of_int(to.min_value());
    if (d >= half) return Value::of_int(to.max_value());
    return Value::of_int(static_cast<int64_t>(d));
}

// ---------------------------------------------------------------------------------
// Integers

int64_t floor_div_i64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
int64_t floor_mod_i64(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

int64_t wrap(uint64_t v, DataType t) {
    return normalize_int(s(v), t);
}

bool int_less(int64_t a, int64_t b, DataType t) {
    return is_u64(t) ? u(a) < u(b) : a < b;
}

int64_t floor_div(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return s(u(a) / u(b));
    if (a == kInt64Min && b == -1) return wrap(u(a), t);
    return wrap(u(floor_div_i64(a, b)), t);
}

int64_t floor_mod(int64_t a, int64_t b, DataType t) {
    if (is_u64(t)) return s(u(a) % u(b));
    if (b == -1) return 0;
    return wrap(u(floor_mod_i64(a, b)), t);
}

bool shift_out_of_range(int64_t b, DataType t) {
    int width = t.is_bool() ? 1 : t.bits;
    bool negative = !t.is_uint() && b < 0;
    return negative || u(b) >= static_cast<uint64_t>(width);
}

int64_t int_abs(int64_t x, DataType t) {
    bool neg = t.is_int() && x < 0;
    return neg ? wrap(0 - u(x), t) : x;
}

IntResult int_binary(BinaryOp op, int64_t x, int64_t y, DataType t) {
    auto ok = [](int64_t v) { return IntResult{v, IntFault::None}; };
    auto truth = [](bool v) { return IntResult{v ? 1 : 0, IntFault::None}; };
    uint64_t ux = u(x), uy = u(y);
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
        return ok(wrap(u(x >> y), t));
    case BinaryOp::Div:
    case BinaryOp::Mod: break;
    }
    return {0, IntFault::NotAnIntegerOp};
}

int64_t int_unary(UnaryOp op, int64_t a, DataType t) {
    switch (op) {
    case UnaryOp::Neg: return wrap(0 - u(a), t);
    case UnaryOp::Not: return a == 0 ? 1 : 0;
    case UnaryOp::BitNot: return wrap(~u(a), t);
    }
    return 0;
}

std::optional<int64_t> fold_int_binary(BinaryOp op, int64_t a, int64_t b, DataType t) {
    // Values are read signed throughout (see the header: u64 >= 2^63 differs from
    // int_binary); where that does not matter this is int_binary with refusals.
    auto norm = [&](int64_t v) { return normalize_int(v, t); };
    switch (op) {
    case BinaryOp::Add: return norm(s(u(a) + u(b)));
    case BinaryOp::Sub: return norm(s(u(a) - u(b)));
    case BinaryOp::Mul: return norm(s(u(a) * u(b)));
    case BinaryOp::FloorDiv: {
        if (b == 0 || (a == kInt64Min && b == -1)) return std::nullopt;
        int64_t q = floor_div_i64(a, b);
        if (normalize_int(q, t) != q) return std::nullopt;  // overflow (e.g. -128 / -1 in i8)
        return q;
    }
    case BinaryOp::FloorMod:
        if (b == 0) return std::nullopt;
        if (b == -1) return 0;
        return norm(floor_mod_i64(a, b));
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::EQ: return a == b;
    case BinaryOp::NE: return a != b;
    case BinaryOp::LT: return a < b;
    case BinaryOp::LE: return a <= b;
    case BinaryOp::GT: return a > b;
    case BinaryOp::GE: return a >= b;
    case BinaryOp::And: return (a != 0) && (b != 0);
    case BinaryOp::Or: return (a != 0) || (b != 0);
    case BinaryOp::BitAnd: return norm(a & b);
    case BinaryOp::BitOr: return norm(a | b);
    case BinaryOp::BitXor: return norm(a ^ b);
    case BinaryOp::Shl:
        if (b < 0 || b >= t.bits) return std::nullopt;
        return norm(s(u(a) << b));
    case BinaryOp::Shr:
        if (b < 0 || b >= t.bits) return std::nullopt;
        return norm(a >> b);  // normalised values below u64 are >= 0: logical shift
    case BinaryOp::Div:
    case BinaryOp::Mod: return std::nullopt;
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------------
// Floats

bool int_exact_in_float(int64_t v, DataType t) {
    int mantissa = 0;  // significand bits, the implicit one included
    switch (t.kind) {
    case TypeKind::Float: mantissa = t.bits == 16 ? 11 : t.bits == 32 ? 24 : t.bits == 64 ? 53 : 0; break;
    case TypeKind::BFloat: mantissa = 8; break;
    default: return false;  // f8
    }
    if (mantissa == 0) return false;
    int64_t limit = int64_t(1) << mantissa;
    return v >= -limit && v <= limit;
}

double nan_min(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b < a ? b : a;
}
double nan_max(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return b > a ? b : a;
}

bool is_float_arithmetic(BinaryOp op) {
    return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
           op == BinaryOp::Mod;
}

std::optional<Value> float_binary(BinaryOp op, double x, double y) {
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

double math_call(CallOp op, double x, double y) {
    switch (op) {
    case CallOp::Exp: return std::exp(x);
    case CallOp::Exp2: return std::exp2(x);
    case CallOp::Log: return std::log(x);
    case CallOp::Log2: return std::log2(x);
    case CallOp::Sqrt: return std::sqrt(x);
    case CallOp::Rsqrt: return 1.0 / std::sqrt(x);
    case CallOp::Tanh: return std::tanh(x);
    case CallOp::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case CallOp::Abs: return std::fabs(x);
    case CallOp::Floor: return std::floor(x);
    case CallOp::Ceil: return std::ceil(x);
    case CallOp::Pow: return std::pow(x, y);
    case CallOp::ShflXor:
    case CallOp::ShflUp:
    case CallOp::ShflDown:
    case CallOp::ShflIdx: break;
    }
    return 0;
}

// ---------------------------------------------------------------------------------
// Argument binding

std::optional<std::string> param_count_error(const PrimFunc& f, size_t tensors, size_t sizes,
                                             size_t scalars) {
    size_t want[3] = {0, 0, 0};
    for (const auto& p : f.params)
        ++want[p.kind == ParamKind::Tensor ? 0 : p.kind == ParamKind::Size ? 1 : 2];
    const size_t got[3] = {tensors, sizes, scalars};
    const char* what[3] = {"tensors", "sizes", "scalars"};
    for (int k = 0; k < 3; ++k)
        if (want[k] != got[k])
            return "'" + f.name + "' takes " + std::to_string(want[k]) + " " + what[k] + ", " +
                   std::to_string(got[k]) + " given";
    return std::nullopt;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    return strides;
}

std::string list_str(const std::vector<int64_t>& v) {
    std::string out = "[";
    for (size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + std::to_string(v[k]);
    return out + "]";
}

void round_tensor_data(std::vector<double>& data, DataType t) {
    if (!t.is_float() || t == DataType::f64()) return;
    for (double& x : data) x = round_to_float_type(x, t);
}

}  // namespace tilec::scalar
