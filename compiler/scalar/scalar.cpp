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
