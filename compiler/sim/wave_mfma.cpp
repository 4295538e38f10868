// The AMD matrix instruction models of wave_mfma.h: the calculator's layouts as written
// there, and the f32 accumulation of warp_mma.h's models (rounded once to f16 for the
// f16-accumulator WMMA, as its mma.sync .f16 model).
#include "sim/wave_mfma.h"

#include <bit>
#include <cstring>

#include "scalar/float_formats.h"  // the FNUZ decoders
#include "sim/warp_mma.h"          // f16_to_float, bf16_to_float

namespace tilec::sim::isa {

AmdMatrixInfo amd_matrix_info(AmdMatrixShape shape) {
    switch (shape) {
    case AmdMatrixShape::Mfma32x32x8: return {32, 32, 8, 64, 2, 2, 16};
    case AmdMatrixShape::Mfma16x16x16: return {16, 16, 16, 64, 2, 2, 4};
    case AmdMatrixShape::Wmma16x16x16: return {16, 16, 16, 32, 8, 8, 8};
    case AmdMatrixShape::Mfma32x32x8I8: return {32, 32, 8, 64, 1, 1, 16};
    case AmdMatrixShape::Mfma16x16x16I8: return {16, 16, 16, 64, 1, 1, 4};
    case AmdMatrixShape::Mfma32x32x16I8: return {32, 32, 16, 64, 2, 2, 16};
    case AmdMatrixShape::Mfma16x16x32I8: return {16, 16, 32, 64, 2, 2, 4};
    case AmdMatrixShape::Wmma16x16x16I8: return {16, 16, 16, 32, 4, 4, 8};
    case AmdMatrixShape::Mfma32x32x16F8: return {32, 32, 16, 64, 2, 2, 16};
    case AmdMatrixShape::Mfma16x16x32F8: return {16, 16, 32, 64, 2, 2, 4};
    }
    return {};
}

std::optional<AmdMatrixShape> amd_matrix_i8_shape(int m, int k) {
    if (m == 32 && k == 8) return AmdMatrixShape::Mfma32x32x8I8;
    if (m == 16 && k == 16) return AmdMatrixShape::Mfma16x16x16I8;
    if (m == 32 && k == 16) return AmdMatrixShape::Mfma32x32x16I8;
    if (m == 16 && k == 32) return AmdMatrixShape::Mfma16x16x32I8;
    return std::nullopt;
}

std::optional<AmdMatrixShape> amd_matrix_f8_shape(int m, int k) {
    if (m == 32 && k == 16) return AmdMatrixShape::Mfma32x32x16F8;
    if (m == 16 && k == 32) return AmdMatrixShape::Mfma16x16x32F8;
    return std::nullopt;
}

namespace {

bool is_f8(AmdMatrixShape shape) {
    return shape == AmdMatrixShape::Mfma32x32x16F8 || shape == AmdMatrixShape::Mfma16x16x32F8;
}

bool is_i8(AmdMatrixShape shape) {
    return shape == AmdMatrixShape::Mfma32x32x8I8 || shape == AmdMatrixShape::Mfma16x16x16I8 ||
           shape == AmdMatrixShape::Mfma32x32x16I8 || shape == AmdMatrixShape::Mfma16x16x32I8 ||
           shape == AmdMatrixShape::Wmma16x16x16I8;
}

// Elements of A (and of B) per lane: 2 per GPR for 16-bit types, 4 for i8 and fp8.
int ab_elements(AmdMatrixShape shape) {
    return amd_matrix_info(shape).a_regs * (is_i8(shape) || is_f8(shape) ? 4 : 2);
}

}  // namespace

// Element e is half e % 2 of GPR e / 2, so 2g + h = e in the calculator's formulas.
AmdMatCoord amd_matrix_a_coord(AmdMatrixShape shape, int lane, int e) {
    switch (shape) {
    case AmdMatrixShape::Mfma32x32x8: return {lane % 32, 4 * (lane / 32) + e};
    case AmdMatrixShape::Mfma16x16x16: return {lane % 16, 4 * (lane / 16) + e};
    case AmdMatrixShape::Wmma16x16x16:
    case AmdMatrixShape::Wmma16x16x16I8: return {lane % 16, e};
    case AmdMatrixShape::Mfma32x32x8I8:
    case AmdMatrixShape::Mfma32x32x16I8:
    case AmdMatrixShape::Mfma32x32x16F8: return {lane % 32, ab_elements(shape) * (lane / 32) + e};
    case AmdMatrixShape::Mfma16x16x16I8:
    case AmdMatrixShape::Mfma16x16x32I8:
    case AmdMatrixShape::Mfma16x16x32F8: return {lane % 16, ab_elements(shape) * (lane / 16) + e};
    }
    return {};
}

AmdMatCoord amd_matrix_b_coord(AmdMatrixShape shape, int lane, int e) {
    AmdMatCoord a = amd_matrix_a_coord(shape, lane, e);  // B's (k, j) are A's (i, k) swapped
    return {a.col, a.row};
}

AmdMatCoord amd_matrix_c_coord(AmdMatrixShape shape, int lane, int g) {
    switch (shape) {
    case AmdMatrixShape::Mfma32x32x8: return {8 * (g / 4) + 4 * (lane / 32) + g % 4, lane % 32};
    case AmdMatrixShape::Mfma16x16x16: return {4 * (lane / 16) + g % 4, lane % 16};
    case AmdMatrixShape::Wmma16x16x16:
    case AmdMatrixShape::Wmma16x16x16I8: return {2 * g + lane / 16, lane % 16};
    case AmdMatrixShape::Mfma32x32x8I8:
    case AmdMatrixShape::Mfma32x32x16I8:
    case AmdMatrixShape::Mfma32x32x16F8: return amd_matrix_c_coord(AmdMatrixShape::Mfma32x32x8, lane, g);
    case AmdMatrixShape::Mfma16x16x16I8:
    case AmdMatrixShape::Mfma16x16x32I8:
    case AmdMatrixShape::Mfma16x16x32F8: return amd_matrix_c_coord(AmdMatrixShape::Mfma16x16x16, lane, g);
    }
    return {};
}

namespace {

// The problems of wave_mfma.h, for either result type.
AmdMatrixResult check_lanes(AmdMatrixShape shape, std::span<const AmdMatrixLane> lanes) {
    const AmdMatrixInfo info = amd_matrix_info(shape);
    AmdMatrixResult r;
    r.d.assign(static_cast<size_t>(info.wave), {});
    for (int l = 0; l < info.wave; ++l) {
        const AmdMatrixLane& lane = lanes[static_cast<size_t>(l)];
        if (lane.exited) r.issues.push_back({AmdMatrixProblem::LaneExited, l});
        else if (!lane.executes) r.issues.push_back({AmdMatrixProblem::LaneNotExecuting, l});
    }
    if (shape == AmdMatrixShape::Wmma16x16x16 || shape == AmdMatrixShape::Wmma16x16x16I8)
        for (int l = 16; l < 32; ++l) {
            const AmdMatrixLane &hi = lanes[static_cast<size_t>(l)], &lo = lanes[static_cast<size_t>(l - 16)];
            if (hi.a != lo.a || hi.b != lo.b) r.issues.push_back({AmdMatrixProblem::WmmaReplicaDiffers, l});
        }
    return r;
}

}  // namespace

AmdMatrixResult amd_matrix_i32(AmdMatrixShape shape, std::span<const AmdMatrixLane> lanes) {
    AmdMatrixResult r = check_lanes(shape, lanes);
    if (!r.issues.empty() || !is_i8(shape)) return r;
    const AmdMatrixInfo info = amd_matrix_info(shape);
    std::vector<int32_t> A(static_cast<size_t>(info.m * info.k)), B(static_cast<size_t>(info.k * info.n));
    const int elems = ab_elements(shape);
    for (int l = 0; l < info.wave; ++l)
        for (int e = 0; e < elems; ++e) {
            const AmdMatrixLane& lane = lanes[static_cast<size_t>(l)];
            auto byte = [&](const std::array<uint32_t, 8>& gprs) {
                return int32_t(int8_t(uint8_t(gprs[static_cast<size_t>(e / 4)] >> (8 * (e % 4)))));
            };
            AmdMatCoord a = amd_matrix_a_coord(shape, l, e), b = amd_matrix_b_coord(shape, l, e);
            A[static_cast<size_t>(a.row * info.k + a.col)] = byte(lane.a);
            B[static_cast<size_t>(b.row * info.n + b.col)] = byte(lane.b);
        }
    for (int l = 0; l < info.wave; ++l)
        for (int g = 0; g < info.c_regs; ++g) {
            AmdMatCoord c = amd_matrix_c_coord(shape, l, g);
            uint32_t d = lanes[static_cast<size_t>(l)].c[static_cast<size_t>(g)];
            for (int k = 0; k < info.k; ++k)
                d += static_cast<uint32_t>(A[static_cast<size_t>(c.row * info.k + k)] *
                                           B[static_cast<size_t>(k * info.n + c.col)]);
            r.d[static_cast<size_t>(l)][static_cast<size_t>(g)] = d;
        }
    return r;
}

AmdMatrixResult amd_matrix_f32(AmdMatrixShape shape, AmdMatrixAb ab, std::span<const AmdMatrixLane> lanes) {
    return amd_matrix_f32(shape, ab, ab, lanes);
}

AmdMatrixResult amd_matrix_f32(AmdMatrixShape shape, AmdMatrixAb at, AmdMatrixAb bt,
                               std::span<const AmdMatrixLane> lanes) {
    const AmdMatrixInfo info = amd_matrix_info(shape);
    AmdMatrixResult r = check_lanes(shape, lanes);
    if (!r.issues.empty()) return r;
    // Element e of a lane's GPRs: half e % 2 of GPR e / 2, or for fp8 byte e % 4 of GPR
    // e / 4. Every fp8 value is exact in f32 (at most 4 significant bits, exponents
    // -17..15), and so is each product of two.
    const int per_gpr = is_f8(shape) ? 4 : 2;
    auto value = [&](AmdMatrixAb t, const std::array<uint32_t, 8>& gprs, int e) {
        const uint32_t reg = gprs[static_cast<size_t>(e / per_gpr)];
        if (per_gpr == 4) {
            const auto byte = static_cast<uint8_t>(reg >> (8 * (e % 4)));
            return static_cast<float>(t == AmdMatrixAb::Fp8 ? scalar::f8e4m3fnuz_value(byte)
                                                            : scalar::f8e5m2fnuz_value(byte));
        }
        uint16_t bits = static_cast<uint16_t>(reg >> (16 * (e % 2)));
        return t == AmdMatrixAb::F16 ? f16_to_float(bits) : bf16_to_float(bits);
    };
    // Gather A and B from the lanes that hold them (for WMMA, the lower copy).
    std::vector<float> A(static_cast<size_t>(info.m * info.k)), B(static_cast<size_t>(info.k * info.n));
    const int elems = per_gpr * info.a_regs;
    for (int l = 0; l < info.wave; ++l)
        for (int e = 0; e < elems; ++e) {
            const AmdMatrixLane& lane = lanes[static_cast<size_t>(l)];
            AmdMatCoord a = amd_matrix_a_coord(shape, l, e), b = amd_matrix_b_coord(shape, l, e);
            A[static_cast<size_t>(a.row * info.k + a.col)] = value(at, lane.a, e);
            B[static_cast<size_t>(b.row * info.n + b.col)] = value(bt, lane.b, e);
        }
    for (int l = 0; l < info.wave; ++l)
        for (int g = 0; g < info.c_regs; ++g) {
            AmdMatCoord c = amd_matrix_c_coord(shape, l, g);
            float d;
            uint32_t cbits = lanes[static_cast<size_t>(l)].c[static_cast<size_t>(g)];
            std::memcpy(&d, &cbits, 4);
            for (int k = 0; k < info.k; ++k)
                d = d + A[static_cast<size_t>(c.row * info.k + k)] * B[static_cast<size_t>(k * info.n + c.col)];
            std::memcpy(&r.d[static_cast<size_t>(l)][static_cast<size_t>(g)], &d, 4);
        }
    return r;
}

AmdMatrixResult amd_wmma_f16(std::span<const AmdMatrixLane> lanes, bool opsel_hi) {
    const AmdMatrixShape shape = AmdMatrixShape::Wmma16x16x16;
    const int shift = opsel_hi ? 16 : 0;
    // C's selected halves as f32 values in the f32 model's registers (exact), its sums
    // as that model forms them, then each d rounded to f16 into the same half of D.
    std::vector<AmdMatrixLane> wide(lanes.begin(), lanes.end());
    for (auto& lane : wide)
        for (uint32_t& c : lane.c) c = std::bit_cast<uint32_t>(f16_to_float(static_cast<uint16_t>(c >> shift)));
    AmdMatrixResult r = amd_matrix_f32(shape, AmdMatrixAb::F16, wide);
    if (!r.issues.empty()) return r;
    const uint32_t keep = opsel_hi ? 0x0000ffffu : 0xffff0000u;
    const int c_regs = amd_matrix_info(shape).c_regs;
    for (size_t l = 0; l < r.d.size(); ++l)
        for (int g = 0; g < c_regs; ++g) {
            uint32_t& d = r.d[l][static_cast<size_t>(g)];
            const auto h = static_cast<_Float16>(std::bit_cast<float>(d));  // IEEE round to nearest even
            d = (lanes[l].c[static_cast<size_t>(g)] & keep) | uint32_t(std::bit_cast<uint16_t>(h)) << shift;
        }
    return r;
}

}  // namespace tilec::sim::isa
