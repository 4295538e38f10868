// The wgmma models of warpgroup_mma.h: every formula is the header's reading of the
// PTX ISA's tables, in bytes.
#include "sim/warpgroup_mma.h"

#include <bit>
#include <cstring>

namespace tilec::sim::isa {

namespace {

uint64_t descriptor_encode(uint32_t x) { return (x & 0x3FFFFu) >> 4; }

// D = A B (+ C where scale_d) over the wgmma accumulator layout: A row-major M x K, B
// K x n, each thread's n / 2 elements summed in K order in f32 (both operand forms).
void multiply_into_d(int n, int K, const std::vector<float>& A, const std::vector<float>& B, bool scale_d,
                     const std::vector<std::vector<float>>& c, WgmmaResult& res) {
    for (int t = 0; t < 128; ++t)
        for (int i = 0; i < n / 2; ++i) {
            MatCoord at = wgmma_d_coord(t, i);
            float acc = scale_d ? c[static_cast<size_t>(t)][static_cast<size_t>(i)] : 0.0f;
            for (int k = 0; k < K; ++k)
                acc = acc + A[static_cast<size_t>(at.row * K + k)] * B[static_cast<size_t>(k * n + at.col)];
            res.d[static_cast<size_t>(t)][static_cast<size_t>(i)] = acc;
        }
}

}  // namespace

WgmmaDescriptor decode_wgmma_descriptor(uint64_t desc) {
    WgmmaDescriptor d;
    d.start = static_cast<uint32_t>(desc & 0x3FFF) << 4;
    d.lbo = static_cast<uint32_t>((desc >> 16) & 0x3FFF) << 4;
    d.sbo = static_cast<uint32_t>((desc >> 32) & 0x3FFF) << 4;
    d.base_offset = static_cast<uint32_t>((desc >> 49) & 0x7);
    d.swizzle = static_cast<WgmmaSwizzle>((desc >> 62) & 0x3);
    return d;
}

uint64_t encode_wgmma_descriptor(const WgmmaDescriptor& d) {
    return descriptor_encode(d.start) | (descriptor_encode(d.lbo) << 16) | (descriptor_encode(d.sbo) << 32) |
           (uint64_t(d.base_offset & 0x7) << 49) | (uint64_t(static_cast<uint8_t>(d.swizzle)) << 62);
}

uint32_t wgmma_swizzle_bytes(WgmmaSwizzle s) {
    switch (s) {
    case WgmmaSwizzle::None: return 16;
    case WgmmaSwizzle::B32: return 32;
    case WgmmaSwizzle::B64: return 64;
    case WgmmaSwizzle::B128: return 128;
    }
    return 16;
}

uint32_t wgmma_swizzle_address(WgmmaSwizzle s, uint32_t addr) {
    // Swizzle<B,4,3>: B = log2(width / 16).
    uint32_t bits = static_cast<uint32_t>(std::countr_zero(wgmma_swizzle_bytes(s) / 16));
    uint32_t mask = (1u << bits) - 1;
    return addr ^ (((addr >> 7) & mask) << 4);
}

uint32_t wgmma_canonical_offset(const WgmmaDescriptor& d, bool mn_major, int elem_bytes, int mn, int k) {
    const uint32_t eb = static_cast<uint32_t>(elem_bytes), T = 16 / eb, W = wgmma_swizzle_bytes(d.swizzle);
    const uint32_t umn = static_cast<uint32_t>(mn), uk = static_cast<uint32_t>(k);
    if (!mn_major) {
        // ((8,m),(T,2k)) : ((1T,SBO),(1,LBO)) or ((2^s T,SBO),(1,T)), in elements.
        uint32_t r = umn % 8, m1 = umn / 8;
        if (d.swizzle == WgmmaSwizzle::None) return r * 16 + m1 * d.sbo + (uk % T) * eb + (uk / T) * d.lbo;
        return r * W + m1 * d.sbo + uk * eb;
    }
    // ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO)) or ((T,2^s,m),(8,k)) : ((1,T,LBO),(2^s T,SBO)).
    uint32_t k0 = uk % 8, k1 = uk / 8;
    if (d.swizzle == WgmmaSwizzle::None) return (umn % T) * eb + (umn / T) * d.sbo + k0 * 16 + k1 * d.lbo;
    uint32_t per_row = W / eb;
    return (umn % per_row) * eb + (umn / per_row) * d.lbo + k0 * W + k1 * d.sbo;
}

uint32_t wgmma_operand_address(const WgmmaDescriptor& d, bool mn_major, int elem_bytes, int mn, int k) {
    return wgmma_swizzle_address(d.swizzle, d.start + wgmma_canonical_offset(d, mn_major, elem_bytes, mn, k));
}

MatCoord wgmma_d_coord(int thread, int i) {
    int warp = thread / 32, lane = thread % 32;
    return {16 * warp + lane / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2};
}

MatCoord wgmma_a_coord(int thread, int i) {
    int warp = thread / 32, lane = thread % 32;
    return {16 * warp + lane / 4 + 8 * ((i / 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
}

int wgmma_ab_bytes(WgmmaAbType t) { return t == WgmmaAbType::F16 || t == WgmmaAbType::Bf16 ? 2 : 1; }

int wgmma_k(WgmmaAbType t) { return 32 / wgmma_ab_bytes(t); }

WgmmaResult ptx_wgmma_f32(int n, WgmmaAbType a_type, WgmmaAbType b_type, uint64_t desc_a, uint64_t desc_b,
                          bool scale_d, bool trans_a, bool trans_b, std::span<const uint8_t> smem,
                          const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes) {
    WgmmaResult res;
    res.d.assign(128, std::vector<float>(static_cast<size_t>(n / 2), 0.0f));
    if (n < 8 || n > 256 || n % 8 != 0) {
        res.issues.push_back({WgmmaProblem::BadN, -1});
        return res;
    }
    const bool eight_bit = wgmma_ab_bytes(a_type) == 1;
    if (eight_bit && (trans_a || trans_b)) {
        res.issues.push_back({WgmmaProblem::TransposedEightBit, -1});
        return res;
    }
    for (int t = 0; t < 128; ++t)
        if (!executes[static_cast<size_t>(t)]) res.issues.push_back({WgmmaProblem::ThreadNotExecuting, t});
    const WgmmaDescriptor da = decode_wgmma_descriptor(desc_a), db = decode_wgmma_descriptor(desc_b);
    if (da.base_offset != 0 || db.base_offset != 0) {
        res.issues.push_back({WgmmaProblem::BaseOffsetNotModelled, -1});
        return res;
    }
    const int M = 64, K = wgmma_k(a_type);
    bool oob = false;
    auto element = [&](WgmmaAbType type, const WgmmaDescriptor& d, bool mn_major, int mn, int k) {
        const int bytes = wgmma_ab_bytes(type);
        uint32_t addr = wgmma_operand_address(d, mn_major, bytes, mn, k);
        if (size_t(addr) + size_t(bytes) > smem.size()) {
            oob = true;
            return 0.0f;
        }
        switch (type) {
        case WgmmaAbType::E4m3: return e4m3_to_float(smem[addr]);
        case WgmmaAbType::E5m2: return e5m2_to_float(smem[addr]);
        default: break;
        }
        uint16_t bits = static_cast<uint16_t>(smem[addr] | (smem[addr + 1] << 8));
        return type == WgmmaAbType::Bf16 ? bf16_to_float(bits) : f16_to_float(bits);
    };
    std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * n));
    for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) A[static_cast<size_t>(m * K + k)] = element(a_type, da, trans_a, m, k);
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < n; ++j) B[static_cast<size_t>(k * n + j)] = element(b_type, db, trans_b, j, k);
    if (oob) res.issues.push_back({WgmmaProblem::OutOfBounds, -1});
    multiply_into_d(n, K, A, B, scale_d, c, res);
    return res;
}

WgmmaResult ptx_wgmma_rs_f32(int n, WgmmaAbType ab, const std::vector<std::vector<float>>& a, uint64_t desc_b,
                             bool scale_d, bool trans_b, std::span<const uint8_t> smem,
                             const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes) {
    WgmmaResult res;
    res.d.assign(128, std::vector<float>(static_cast<size_t>(n / 2), 0.0f));
    if (n < 8 || n > 256 || n % 8 != 0) {
        res.issues.push_back({WgmmaProblem::BadN, -1});
        return res;
    }
    if (ab != WgmmaAbType::F16 && ab != WgmmaAbType::Bf16) {
        res.issues.push_back({WgmmaProblem::ARegisterType, -1});
        return res;
    }
    bool bad_count = false;
    for (int t = 0; t < 128; ++t) {
        if (!executes[static_cast<size_t>(t)]) res.issues.push_back({WgmmaProblem::ThreadNotExecuting, t});
        else if (a.size() != 128 || a[static_cast<size_t>(t)].size() != 8) {
            res.issues.push_back({WgmmaProblem::ARegisterCount, t});
            bad_count = true;
        }
    }
    if (bad_count) return res;
    const WgmmaDescriptor db = decode_wgmma_descriptor(desc_b);
    if (db.base_offset != 0) {
        res.issues.push_back({WgmmaProblem::BaseOffsetNotModelled, -1});
        return res;
    }
    const int M = 64, K = 16, eb = 2;
    // A from the threads' registers (a thread that does not execute gives nothing: its
    // elements read as 0, and the issue above says so).
    std::vector<float> A(static_cast<size_t>(M * K), 0.0f);
    for (int t = 0; t < 128; ++t)
        if (executes[static_cast<size_t>(t)])
            for (int i = 0; i < 8; ++i) {
                MatCoord at = wgmma_a_coord(t, i);
                A[static_cast<size_t>(at.row * K + at.col)] = a[static_cast<size_t>(t)][static_cast<size_t>(i)];
            }
    bool oob = false;
    std::vector<float> B(static_cast<size_t>(K * n));
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < n; ++j) {
            uint32_t addr = wgmma_operand_address(db, trans_b, eb, j, k);
            if (size_t(addr) + 2 > smem.size()) {
                oob = true;
                continue;
            }
            uint16_t bits = static_cast<uint16_t>(smem[addr] | (smem[addr + 1] << 8));
            B[static_cast<size_t>(k * n + j)] = ab == WgmmaAbType::Bf16 ? bf16_to_float(bits) : f16_to_float(bits);
        }
    if (oob) res.issues.push_back({WgmmaProblem::OutOfBounds, -1});
    multiply_into_d(n, K, A, B, scale_d, c, res);
    return res;
}

WgmmaResult ptx_wgmma_m64nNk16_f32(int n, MmaAbType ab, uint64_t desc_a, uint64_t desc_b, bool scale_d,
                                   bool trans_a, bool trans_b, std::span<const uint8_t> smem,
                                   const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes) {
    const WgmmaAbType t = ab == MmaAbType::Bf16 ? WgmmaAbType::Bf16 : WgmmaAbType::F16;
    return ptx_wgmma_f32(n, t, t, desc_a, desc_b, scale_d, trans_a, trans_b, smem, c, executes);
}

}  // namespace tilec::sim::isa
