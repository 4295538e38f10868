// Values as the GPU holds them: the bytes of each type in memory, the bits of a register
// (what a shuffle moves), and the storage of one buffer.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "scalar/float_formats.h"
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

void encode(uint8_t* p, Value v, DataType t) {
    uint64_t u = 0;
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 64) {
            std::memcpy(p, &v.f, 8);
            return;
        }
        if (t.bits == 32) {
            float x = static_cast<float>(v.f);
            std::memcpy(p, &x, 4);
            return;
        }
        u = scalar::f16_bits(v.f);
        break;
    case TypeKind::BFloat: u = scalar::bf16_bits(v.f); break;
    case TypeKind::Float8E4M3: u = scalar::f8e4m3_bits(v.f); break;
    case TypeKind::Float8E5M2: u = scalar::f8e5m2_bits(v.f); break;
    default: u = static_cast<uint64_t>(v.i); break;
    }
    int n = std::max(1, (t.bits + 7) / 8);
    for (int b = 0; b < n; ++b) p[b] = static_cast<uint8_t>(u >> (8 * b));
}
Value decode(const uint8_t* p, DataType t) {
    if (t.kind == TypeKind::Float && t.bits >= 32) {
        if (t.bits == 64) {
            double d;
            std::memcpy(&d, p, 8);
            return Value::of_float(d);
        }
        float x;
        std::memcpy(&x, p, 4);
        return Value::of_float(static_cast<double>(x));
    }
    int n = std::max(1, (t.bits + 7) / 8);
    uint64_t u = 0;
    for (int b = 0; b < n; ++b) u |= static_cast<uint64_t>(p[b]) << (8 * b);
    switch (t.kind) {
    case TypeKind::Float: {
        // f16 loads are hot (gemm and attention tiles): every value's decoding once.
        static const std::vector<float> f16_table = [] {
            std::vector<float> v(65536);
            for (uint32_t b = 0; b < 65536; ++b)
                v[b] = static_cast<float>(scalar::f16_value(static_cast<uint16_t>(b)));
            return v;
        }();
        return Value::of_float(static_cast<double>(f16_table[static_cast<size_t>(u & 0xffff)]));
    }
    case TypeKind::BFloat: {
        // bf16 is f32's upper half.
        uint32_t w = static_cast<uint32_t>(u & 0xffff) << 16;
        float x;
        std::memcpy(&x, &w, 4);
        return Value::of_float(static_cast<double>(x));
    }
    case TypeKind::Float8E4M3: return Value::of_float(scalar::f8e4m3_value(static_cast<uint8_t>(u)));
    case TypeKind::Float8E5M2: return Value::of_float(scalar::f8e5m2_value(static_cast<uint8_t>(u)));
    default: return Value::of_int(normalize_int(static_cast<int64_t>(u), t));
    }
}

uint64_t register_bits(Value v, DataType t) {
    if (t.is_float()) {
        if (t.bits == 64) {
            uint64_t u;
            std::memcpy(&u, &v.f, sizeof u);
            return u;
        }
        float f = static_cast<float>(v.f);  // exact: the value is of its (<= 32-bit) type
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        return u;
    }
    int bits = t.is_bool() ? 1 : t.bits;
    uint64_t u = static_cast<uint64_t>(v.i);
    return bits >= 64 ? u : u & ((uint64_t{1} << bits) - 1);
}
Value from_register_bits(uint64_t u, DataType t) {
    if (t.is_float()) {
        if (t.bits == 64) {
            double d;
            std::memcpy(&d, &u, sizeof d);
            return Value::of_float(d);
        }
        uint32_t w = static_cast<uint32_t>(u);
        float f;
        std::memcpy(&f, &w, sizeof f);
        return Value::of_float(static_cast<double>(f));
    }
    return Value::of_int(normalize_int(static_cast<int64_t>(u), t));
}

void SharedArena::ensure(int64_t n) {
    if (n <= static_cast<int64_t>(bytes.size())) return;
    bytes.resize(static_cast<size_t>(n), 0xff);  // all-ones: NaN in every float format
    shadow.resize(static_cast<size_t>(n));
    pending.resize(static_cast<size_t>(n), 0);
    wgmma_reading.resize(static_cast<size_t>(n), 0);
    tma_pending.resize(static_cast<size_t>(n), 0);
    bulk_reading.resize(static_cast<size_t>(n), 0);
    proxy_writer.resize(static_cast<size_t>(n), -1);
    proxy_fence.resize(static_cast<size_t>(n), 0);
    reader.resize(static_cast<size_t>(n), -1);
    reader_arrivals.resize(static_cast<size_t>(n), 0);
}

void SharedArena::reset() {
    std::fill(bytes.begin(), bytes.end(), uint8_t{0xff});
    std::fill(shadow.begin(), shadow.end(), ByteShadow{});
    std::fill(pending.begin(), pending.end(), 0);
    std::fill(wgmma_reading.begin(), wgmma_reading.end(), 0);
    std::fill(tma_pending.begin(), tma_pending.end(), 0);
    std::fill(bulk_reading.begin(), bulk_reading.end(), 0);
    std::fill(proxy_writer.begin(), proxy_writer.end(), -1);
    std::fill(reader.begin(), reader.end(), -1);
}

void Storage::allocate_own(int64_t n) {
    if (dtype.is_float()) {
        own_f.assign(static_cast<size_t>(n), std::nan(""));
        f = own_f.data();
    } else {
        own_i.assign(static_cast<size_t>(n), 0);
        i = own_i.data();
    }
}

const char* kind_word(Scope s) {
    return s == Scope::Shared ? "shared" : s == Scope::Register ? "register" : "global";
}

}  // namespace tilec::sim::detail
