// Element encodings follow the C header's storage notes (codegen/c_header.cpp), and the
// narrow float formats are the interpreter's exact encoders, so the compiled kernel and
// the reference read the same values.
#include "driver/run_tensors.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "scalar/float_formats.h"

namespace tilec::driver {

using ir::DataType;
using ir::TypeKind;

uint64_t SplitMix64::next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double SplitMix64::uniform(double lo, double hi) {
    return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53);
}

int64_t SplitMix64::integer(int64_t lo, int64_t hi) {
    uint64_t n = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0: all of int64
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + (n == 0 ? next() : next() % n));
}

namespace {

// Bytes per element; 0 for the packed 4-bit integers.
size_t element_bytes(DataType t) {
    if (t.is_bool()) return 1;
    if (t.bits == 4) return 0;
    return t.bits / 8;
}

}  // namespace

void HostTensor::allocate(std::vector<int64_t> shape_, std::vector<int64_t> strides_) {
    shape = std::move(shape_);
    strides = std::move(strides_);
    span = elements() == 0 ? 0 : 1;
    if (span)
        for (size_t k = 0; k < shape.size(); ++k) span += (shape[k] - 1) * strides[k];
    bytes.assign(data_bytes() + kGuardBytes, 0xff);
}

int64_t HostTensor::elements() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
}

size_t HostTensor::data_bytes() const {
    size_t eb = element_bytes(dtype);
    return eb ? static_cast<size_t>(span) * eb : static_cast<size_t>(span + 1) / 2;
}

double HostTensor::get_float(int64_t off) const {
    const unsigned char* p = bytes.data();
    switch (dtype.kind) {
    case TypeKind::Float:
        if (dtype.bits == 16) {
            uint16_t b;
            std::memcpy(&b, p + 2 * off, 2);
            return scalar::f16_value(b);
        }
        if (dtype.bits == 32) {
            float f;
            std::memcpy(&f, p + 4 * off, 4);
            return f;
        } else {
            double d;
            std::memcpy(&d, p + 8 * off, 8);
            return d;
        }
    case TypeKind::BFloat: {
        uint16_t b;
        std::memcpy(&b, p + 2 * off, 2);
        return scalar::bf16_value(b);
    }
    case TypeKind::Float8E4M3: return scalar::f8e4m3_value(p[off]);
    case TypeKind::Float8E5M2: return scalar::f8e5m2_value(p[off]);
    default: return static_cast<double>(get_int(off));
    }
}

int64_t HostTensor::get_int(int64_t off) const {
    const unsigned char* p = bytes.data();
    if (dtype.is_bool()) return p[off];
    if (dtype.bits == 4) {
        unsigned nibble = (p[off / 2] >> (off % 2 ? 4 : 0)) & 0xf;
        return ir::normalize_int(nibble, dtype);
    }
    uint64_t raw = 0;
    std::memcpy(&raw, p + element_bytes(dtype) * off, element_bytes(dtype));  // little-endian
    return ir::normalize_int(static_cast<int64_t>(raw), dtype);
}

void HostTensor::set_float(int64_t off, double v) {
    unsigned char* p = bytes.data();
    switch (dtype.kind) {
    case TypeKind::Float:
        if (dtype.bits == 16) {
            uint16_t b = scalar::f16_bits(v);
            std::memcpy(p + 2 * off, &b, 2);
        } else if (dtype.bits == 32) {
            float f = static_cast<float>(v);
            std::memcpy(p + 4 * off, &f, 4);
        } else {
            std::memcpy(p + 8 * off, &v, 8);
        }
        return;
    case TypeKind::BFloat: {
        uint16_t b = scalar::bf16_bits(v);
        std::memcpy(p + 2 * off, &b, 2);
        return;
    }
    case TypeKind::Float8E4M3: p[off] = scalar::f8e4m3_bits(v); return;
    case TypeKind::Float8E5M2: p[off] = scalar::f8e5m2_bits(v); return;
    default: set_int(off, static_cast<int64_t>(v)); return;
    }
}

void HostTensor::set_int(int64_t off, int64_t v) {
    unsigned char* p = bytes.data();
    if (dtype.is_bool()) {
        p[off] = v != 0;
        return;
    }
    if (dtype.bits == 4) {
        unsigned shift = off % 2 ? 4 : 0;
        p[off / 2] = static_cast<unsigned char>((p[off / 2] & ~(0xfu << shift)) | ((v & 0xf) << shift));
        return;
    }
    uint64_t raw = static_cast<uint64_t>(v);
    std::memcpy(p + element_bytes(dtype) * off, &raw, element_bytes(dtype));
}

void HostTensor::fill_random(SplitMix64& rng) {
    for (int64_t off = 0; off < span; ++off) {
        if (dtype.is_float())
            set_float(off, rng.uniform(-1.0, 1.0));
        else if (dtype.is_bool())
            set_int(off, rng.integer(0, 1));
        else if (dtype.is_uint())
            set_int(off, rng.integer(1, 15));
        else {
            int64_t v = rng.integer(-8, dtype.bits == 4 ? 6 : 7);  // one value short: 0 is skipped
            set_int(off, v >= 0 ? v + 1 : v);
        }
    }
}

void HostTensor::fill_random_ints(SplitMix64& rng, int64_t lo, int64_t hi) {
    for (int64_t off = 0; off < span; ++off) set_int(off, rng.integer(lo, hi));
}

void HostTensor::poison() {
    std::memset(bytes.data(), 0xff, data_bytes());
}

bool HostTensor::is_poison(int64_t off) const {
    if (dtype.bits == 4 && !dtype.is_bool()) return ((bytes[off / 2] >> (off % 2 ? 4 : 0)) & 0xf) == 0xf;
    size_t eb = element_bytes(dtype);
    for (size_t i = 0; i < eb; ++i)
        if (bytes[static_cast<size_t>(off) * eb + i] != 0xff) return false;
    return true;
}

int64_t HostTensor::ref_sentinel() const {
    if (dtype.is_bool()) return 0xfe;
    if (dtype.is_uint()) return ir::normalize_int(-2, dtype);  // the maximum - 1
    return dtype.min_value();
}

bool HostTensor::guard_intact() const {
    for (size_t i = data_bytes(); i < bytes.size(); ++i)
        if (bytes[i] != 0xff) return false;
    return true;
}

interp::TensorArg HostTensor::to_interp() const {
    interp::TensorArg a;
    a.shape = shape;
    a.strides = strides;
    if (dtype.is_float()) {
        a.data.resize(static_cast<size_t>(span));
        for (int64_t off = 0; off < span; ++off) a.data[off] = get_float(off);
    } else {
        a.ints.resize(static_cast<size_t>(span));
        for (int64_t off = 0; off < span; ++off)
            a.ints[off] = access == ir::Access::Out ? ref_sentinel() : get_int(off);
    }
    // A tensor without elements: the interpreter still wants a (possibly empty) array.
    return a;
}

Tolerance default_tolerance(DataType t) {
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 64) return {1e-10, 1e-14};
        if (t.bits == 32) return {1e-5, 1e-8};
        return {1e-2, 1e-5};
    case TypeKind::BFloat: return {2e-2, 1e-5};
    case TypeKind::Float8E4M3: return {0.125, 1e-3};
    case TypeKind::Float8E5M2: return {0.25, 1e-3};
    default: return {0, 0};
    }
}

std::string element_name(const std::string& tensor, const std::vector<int64_t>& index) {
    std::string s = tensor + "[";
    for (size_t k = 0; k < index.size(); ++k) s += (k ? ", " : "") + std::to_string(index[k]);
    return s + "]";
}

Comparison compare(const HostTensor& got, const interp::TensorArg& ref, Tolerance tol, bool skip_unwritten_by_both) {
    Comparison c;
    const bool is_float = got.dtype.is_float();
    auto ref_at = [&](int64_t off) { return is_float ? ref.data[off] : static_cast<double>(ref.ints[off]); };
    got.for_each([&](int64_t off, const std::vector<int64_t>&) {
        double r = ref_at(off);
        if (std::isfinite(r)) c.scale = std::max(c.scale, std::fabs(r));
    });
    const double limit = tol.atol + tol.rtol * c.scale;
    bool worst_is_nonfinite = false;
    const bool f8 = got.dtype.kind == TypeKind::Float8E4M3 || got.dtype.kind == TypeKind::Float8E5M2;
    const bool out = got.access == ir::Access::Out;
    got.for_each([&](int64_t off, const std::vector<int64_t>& idx) {
        const bool poison = out && got.is_poison(off);
        if (skip_unwritten_by_both && poison &&
            (is_float ? std::isnan(ref.data[off]) : ref.ints[off] == got.ref_sentinel())) {
            ++c.unsampled;
            return;
        }
        ++c.compared;
        bool bad = false, ref_unwritten = false;
        double g, r, err;
        if (is_float) {
            g = got.get_float(off);
            r = ref.data[off];
            ref_unwritten = out && std::isnan(r);
            if (std::isnan(g) && std::isnan(r) && (!poison || f8)) {
                ++c.both_nan;
                return;
            }
            if (!std::isfinite(g) || !std::isfinite(r)) {
                bad = !(g == r);  // equal infinities match; NaN never does here
                err = bad ? std::numeric_limits<double>::infinity() : 0.0;
            } else {
                err = std::fabs(g - r);
                bad = err > limit;
            }
        } else {
            int64_t gi = got.get_int(off), ri = ref.ints[off];
            g = static_cast<double>(gi);
            r = static_cast<double>(ri);
            ref_unwritten = out && ri == got.ref_sentinel();
            err = std::fabs(g - r);
            bad = gi != ri && err > limit;
        }
        if (bad) {
            ++c.mismatches;
            c.unwritten += poison;
            if (c.first.size() < 5) c.first.push_back({idx, g, r, poison, ref_unwritten});
        }
        // The worst element: the first non-finite mismatch, else the largest error.
        bool nonfinite = std::isinf(err);
        if (!worst_is_nonfinite && (err > c.max_abs || (nonfinite && bad))) {
            c.max_abs = err;
            c.worst = {idx, g, r, poison, ref_unwritten};
            worst_is_nonfinite = nonfinite;
        }
    });
    c.max_rel = c.max_abs == 0 ? 0.0
                : c.scale > 0  ? c.max_abs / c.scale
                               : std::numeric_limits<double>::infinity();
    return c;
}

}  // namespace tilec::driver
