// The ISA models of warp_mma.h: PTX ldmatrix, mma.sync and cp.async with its groups, each
// written after its document's text and fragment formulas (cited in the header).
#include "sim/warp_mma.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tilec::sim::isa {

namespace {

uint16_t mma_isa_load_b16(std::span<const uint8_t> smem, std::size_t at) {
    return static_cast<uint16_t>(smem[at] | (smem[at + 1] << 8));
}
uint32_t mma_isa_pack2(uint16_t lo, uint16_t hi) {
    return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

bool mma_isa_overlaps(uint32_t a, uint32_t an, uint32_t b, uint32_t bn) {
    return static_cast<uint64_t>(a) < static_cast<uint64_t>(b) + bn &&
           static_cast<uint64_t>(b) < static_cast<uint64_t>(a) + an;
}

}  // namespace

// ---------------------------------------------------------------------------------
// ldmatrix

LdmatrixResult ptx_ldmatrix_m8n8_b16(int num, bool trans, std::span<const uint8_t> smem,
                                     const std::array<LdmatrixLane, 32>& lanes) {
    LdmatrixResult r;
    for (int lane = 0; lane < 32; ++lane) {
        if (lanes[lane].exited)
            r.issues.push_back({LdmatrixProblem::LaneExited, lane});
        else if (!lanes[lane].executes)
            r.issues.push_back({LdmatrixProblem::LaneNotExecuting, lane});
    }
    // The 8 * num row addresses: matrix j's row i from lane 8*j + i.
    std::array<bool, 32> row_ok{};
    for (int lane = 0; lane < 8 * num; ++lane) {
        const LdmatrixLane& l = lanes[lane];
        if (l.exited || !l.executes) continue;  // reported above; its row reads as 0
        if (l.addr % 16 != 0) {
            r.issues.push_back({LdmatrixProblem::RowMisaligned, lane});
            continue;
        }
        if (static_cast<uint64_t>(l.addr) + 16 > smem.size()) {
            r.issues.push_back({LdmatrixProblem::RowOutOfBounds, lane});
            continue;
        }
        row_ok[lane] = true;
    }
    // Element (row, col) of matrix j as stored: b16 number `col` of row `row`'s 16 bytes.
    auto element = [&](int j, int row, int col) -> uint16_t {
        const int supplier = 8 * j + row;
        if (!row_ok[supplier]) return 0;
        return mma_isa_load_b16(
            smem, static_cast<std::size_t>(lanes[supplier].addr) + 2u * static_cast<unsigned>(col));
    };
    for (int lane = 0; lane < 32; ++lane) {
        if (lanes[lane].exited || !lanes[lane].executes) continue;
        const int fr = lane / 4, fc = 2 * (lane % 4);  // the fragment's row, first column
        for (int j = 0; j < num; ++j) {
            if (!trans)
                r.r[lane][j] = mma_isa_pack2(element(j, fr, fc), element(j, fr, fc + 1));
            else
                r.r[lane][j] = mma_isa_pack2(element(j, fc, fr), element(j, fc + 1, fr));
        }
    }
    return r;
}

// ---------------------------------------------------------------------------------
// mma.sync

MmaShapeInfo mma_shape_info(MmaShape shape, MmaAbType ab) {
    if (shape == MmaShape::M16N8K16) return {16, 8, 16, 4, 2, 4, 2};
    if (shape == MmaShape::M16N8K32) return {16, 8, 32, 4, 2, 4, 4};
    if (ab == MmaAbType::Tf32) return {16, 8, 8, 4, 2, 4, 1};
    return {16, 8, 8, 2, 1, 4, 2};
}

MatCoord mma_a_coord(MmaShape shape, int lane, int i, MmaAbType ab) {
    const int group = lane >> 2, tig = lane % 4;
    if (shape == MmaShape::M16N8K16) {
        const int row = ((0 <= i && i < 2) || (4 <= i && i < 6)) ? group : group + 8;
        const int col = i < 4 ? tig * 2 + (i & 0x1) : tig * 2 + (i & 0x1) + 8;
        return {row, col};
    }
    if (shape == MmaShape::M16N8K32) {
        const int row = ((0 <= i && i < 4) || (8 <= i && i < 12)) ? group : group + 8;
        const int col = i < 8 ? tig * 4 + (i & 0x3) : tig * 4 + (i & 0x3) + 16;
        return {row, col};
    }
    if (ab == MmaAbType::Tf32)
        return {(i == 0 || i == 2) ? group : group + 8, i < 2 ? tig : tig + 4};
    return {i < 2 ? group : group + 8, tig * 2 + (i & 0x1)};
}

MatCoord mma_b_coord(MmaShape shape, int lane, int i, MmaAbType ab) {
    const int group = lane >> 2, tig = lane % 4;
    if (shape == MmaShape::M16N8K16) {
        const int row = i < 2 ? tig * 2 + (i & 0x1) : tig * 2 + (i & 0x1) + 8;
        return {row, group};
    }
    if (shape == MmaShape::M16N8K32) return {i < 4 ? tig * 4 + (i & 0x3) : tig * 4 + (i & 0x3) + 16, group};
    if (ab == MmaAbType::Tf32) return {i == 0 ? tig : tig + 4, group};
    return {tig * 2 + i, group};
}

MatCoord mma_c_coord(MmaShape, int lane, int i) {
    const int group = lane >> 2, tig = lane % 4;
    return {i < 2 ? group : group + 8, tig * 2 + (i & 0x1)};
}

float f16_to_float(uint16_t bits) {
    const int sign = bits >> 15, exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -24);  // zero, subnormal
    else if (exp == 31)
        v = man == 0 ? INFINITY : NAN;
    else
        v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
    return sign ? -v : v;
}

float bf16_to_float(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float e4m3_to_float(uint8_t bits) {
    const int sign = bits >> 7, exp = (bits >> 3) & 0xf, man = bits & 0x7;
    float v;
    if (exp == 0xf && man == 0x7)
        v = NAN;  // S.1111.111, the only NaN; no infinities
    else if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -9);  // zero, subnormal: man * 2^(1 - 7 - 3)
    else
        v = std::ldexp(static_cast<float>(man | 0x8), exp - 10);
    return sign ? -v : v;
}

float e5m2_to_float(uint8_t bits) {
    const int sign = bits >> 7, exp = (bits >> 2) & 0x1f, man = bits & 0x3;
    float v;
    if (exp == 0x1f)
        v = man == 0 ? INFINITY : NAN;
    else if (exp == 0)
        v = std::ldexp(static_cast<float>(man), -16);  // man * 2^(1 - 15 - 2)
    else
        v = std::ldexp(static_cast<float>(man | 0x4), exp - 17);
    return sign ? -v : v;
}

namespace {
void mma_isa_lane_issues(const std::array<MmaLane, 32>& lanes, MmaResult& r) {
    for (int lane = 0; lane < 32; ++lane) {
        if (lanes[lane].exited)
            r.issues.push_back({MmaProblem::LaneExited, lane});
        else if (!lanes[lane].executes)
            r.issues.push_back({MmaProblem::LaneNotExecuting, lane});
    }
}
}  // namespace

MmaResult ptx_mma_sync_f32(MmaShape shape, MmaAbType ab, const std::array<MmaLane, 32>& lanes) {
    MmaResult r;
    if (shape == MmaShape::M16N8K32 || (ab == MmaAbType::Tf32 && shape != MmaShape::M16N8K8)) {
        r.issues.push_back({MmaProblem::ShapeTypeMismatch, -1});
        return r;
    }
    mma_isa_lane_issues(lanes, r);
    const MmaShapeInfo info = mma_shape_info(shape, ab);
    // Element i of a register: a 16-bit half (f16, bf16) or the whole tf32 register,
    // whose low 13 bits are not part of the value.
    auto element = [&](uint32_t reg, int i) {
        if (ab == MmaAbType::Tf32) return std::bit_cast<float>(reg & ~uint32_t{0x1fff});
        const uint16_t half = static_cast<uint16_t>((i & 1) ? reg >> 16 : reg & 0xffff);
        return ab == MmaAbType::F16 ? f16_to_float(half) : bf16_to_float(half);
    };
    // Gather the full matrices from every lane's fragments (a non-executing lane's
    // elements are 0: the result is undefined and reported).
    std::vector<float> A(static_cast<std::size_t>(info.m * info.k), 0.0f);
    std::vector<float> B(static_cast<std::size_t>(info.k * info.n), 0.0f);
    std::vector<float> C(static_cast<std::size_t>(info.m * info.n), 0.0f);
    for (int lane = 0; lane < 32; ++lane) {
        const MmaLane& l = lanes[lane];
        if (l.exited || !l.executes) continue;
        for (int i = 0; i < info.per_reg * info.a_regs; ++i) {
            const MatCoord at = mma_a_coord(shape, lane, i, ab);
            A[static_cast<std::size_t>(at.row * info.k + at.col)] = element(l.a[i / info.per_reg], i);
        }
        for (int i = 0; i < info.per_reg * info.b_regs; ++i) {
            const MatCoord at = mma_b_coord(shape, lane, i, ab);
            B[static_cast<std::size_t>(at.row * info.n + at.col)] = element(l.b[i / info.per_reg], i);
        }
        for (int i = 0; i < info.c_regs; ++i) {
            const MatCoord at = mma_c_coord(shape, lane, i);
            C[static_cast<std::size_t>(at.row * info.n + at.col)] = std::bit_cast<float>(l.c[i]);
        }
    }
    std::vector<float> D(C);
    for (int m = 0; m < info.m; ++m)
        for (int n = 0; n < info.n; ++n) {
            float acc = C[static_cast<std::size_t>(m * info.n + n)];
            for (int k = 0; k < info.k; ++k) {
                const float p =
                    A[static_cast<std::size_t>(m * info.k + k)] * B[static_cast<std::size_t>(k * info.n + n)];
                acc = acc + p;
            }
            D[static_cast<std::size_t>(m * info.n + n)] = acc;
        }
    // Scatter D by the C/D fragment formulas.
    for (int lane = 0; lane < 32; ++lane) {
        if (lanes[lane].exited || !lanes[lane].executes) continue;
        for (int i = 0; i < info.c_regs; ++i) {
            const MatCoord at = mma_c_coord(shape, lane, i);
            r.d[lane][i] = std::bit_cast<uint32_t>(D[static_cast<std::size_t>(at.row * info.n + at.col)]);
        }
    }
    return r;
}

namespace {

// The m16n8k32 8-bit forms' matrices gathered from the executing lanes' fragments
// (9.7.14.5.10, Figures 88, 90, 91: four bytes a register, a_i in byte i % 4): A and B
// element values from their bytes by `a_value` / `b_value`, C's from its registers by
// `c_value`, into D; elements of lanes that do not execute stay 0.
template <typename T, typename AValue, typename BValue, typename CValue>
void gather_k32(const std::array<MmaLane, 32>& lanes, AValue a_value, BValue b_value, CValue c_value,
                std::vector<T>& A, std::vector<T>& B, std::vector<T>& D) {
    const MmaShape shape = MmaShape::M16N8K32;
    const MmaShapeInfo info = mma_shape_info(shape);
    auto byte = [](uint32_t reg, int i) { return static_cast<uint8_t>(reg >> (8 * (i & 3))); };
    A.assign(static_cast<std::size_t>(info.m * info.k), T{});
    B.assign(static_cast<std::size_t>(info.k * info.n), T{});
    D.assign(static_cast<std::size_t>(info.m * info.n), T{});
    for (int lane = 0; lane < 32; ++lane) {
        const MmaLane& l = lanes[lane];
        if (l.exited || !l.executes) continue;
        for (int i = 0; i < 4 * info.a_regs; ++i) {
            const MatCoord at = mma_a_coord(shape, lane, i);
            A[static_cast<std::size_t>(at.row * info.k + at.col)] = a_value(byte(l.a[i / 4], i));
        }
        for (int i = 0; i < 4 * info.b_regs; ++i) {
            const MatCoord at = mma_b_coord(shape, lane, i);
            B[static_cast<std::size_t>(at.row * info.n + at.col)] = b_value(byte(l.b[i / 4], i));
        }
        for (int i = 0; i < info.c_regs; ++i) {
            const MatCoord at = mma_c_coord(shape, lane, i);
            D[static_cast<std::size_t>(at.row * info.n + at.col)] = c_value(l.c[i]);
        }
    }
}

// D's elements scattered to the executing lanes' registers by the C/D formulas, as bits.
template <typename T, typename Bits>
void scatter_d(const std::array<MmaLane, 32>& lanes, MmaShape shape, const std::vector<T>& D, Bits bits,
               MmaResult& r) {
    const int n = mma_shape_info(shape).n;
    for (int lane = 0; lane < 32; ++lane) {
        if (lanes[lane].exited || !lanes[lane].executes) continue;
        for (int i = 0; i < 4; ++i) {
            const MatCoord at = mma_c_coord(shape, lane, i);
            r.d[lane][i] = bits(D[static_cast<std::size_t>(at.row * n + at.col)]);
        }
    }
}

}  // namespace

MmaResult ptx_mma_sync_s32_s8(const std::array<MmaLane, 32>& lanes, bool a_unsigned, bool b_unsigned) {
    MmaResult r;
    mma_isa_lane_issues(lanes, r);
    const MmaShapeInfo info = mma_shape_info(MmaShape::M16N8K32);
    auto as = [](bool is_unsigned) {
        return [is_unsigned](uint8_t b) { return is_unsigned ? int64_t{b} : int64_t{static_cast<int8_t>(b)}; };
    };
    std::vector<int64_t> A, B, D;
    gather_k32(lanes, as(a_unsigned), as(b_unsigned), [](uint32_t c) { return int64_t{static_cast<int32_t>(c)}; }, A,
               B, D);
    for (int m = 0; m < info.m; ++m)
        for (int n = 0; n < info.n; ++n) {
            int64_t& acc = D[static_cast<std::size_t>(m * info.n + n)];
            for (int k = 0; k < info.k; ++k)
                acc +=
                    A[static_cast<std::size_t>(m * info.k + k)] * B[static_cast<std::size_t>(k * info.n + n)];
            if (acc < INT32_MIN || acc > INT32_MAX) {
                r.issues.push_back({MmaProblem::Int32Overflow, m * info.n + n});
                acc = 0;
            }
        }
    scatter_d(lanes, MmaShape::M16N8K32, D, [](int64_t v) { return static_cast<uint32_t>(static_cast<int32_t>(v)); },
              r);
    return r;
}

MmaResult ptx_mma_sync_f32_f8(const std::array<MmaLane, 32>& lanes, bool a_e5m2, bool b_e5m2) {
    MmaResult r;
    mma_isa_lane_issues(lanes, r);
    const MmaShapeInfo info = mma_shape_info(MmaShape::M16N8K32);
    auto as = [](bool e5m2) { return [e5m2](uint8_t b) { return e5m2 ? e5m2_to_float(b) : e4m3_to_float(b); }; };
    std::vector<float> A, B, D;
    gather_k32(lanes, as(a_e5m2), as(b_e5m2), [](uint32_t c) { return std::bit_cast<float>(c); }, A, B, D);
    for (int m = 0; m < info.m; ++m)
        for (int n = 0; n < info.n; ++n) {
            float& acc = D[static_cast<std::size_t>(m * info.n + n)];
            for (int k = 0; k < info.k; ++k)
                acc = acc + A[static_cast<std::size_t>(m * info.k + k)] * B[static_cast<std::size_t>(k * info.n + n)];
        }
    scatter_d(lanes, MmaShape::M16N8K32, D, [](float v) { return std::bit_cast<uint32_t>(v); }, r);
    return r;
}

MmaResult ptx_mma_sync_f16(const std::array<MmaLane, 32>& lanes) {
    // C as f32 values in the f32 model's registers, the sums as it forms them, then each
    // d rounded to f16 and packed two to a register.
    std::array<MmaLane, 32> wide = lanes;
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) {
            const uint32_t reg = lanes[lane].c[i / 2];
            const uint16_t h = static_cast<uint16_t>((i & 1) ? reg >> 16 : reg & 0xffff);
            wide[lane].c[i] = std::bit_cast<uint32_t>(f16_to_float(h));
        }
    MmaResult r = ptx_mma_sync_f32(MmaShape::M16N8K16, MmaAbType::F16, wide);
    for (auto& d : r.d) {
        uint32_t packed[2] = {0, 0};
        for (int i = 0; i < 4; ++i) {
            const _Float16 h = static_cast<_Float16>(std::bit_cast<float>(d[i]));  // IEEE RNE
            packed[i / 2] |= static_cast<uint32_t>(std::bit_cast<uint16_t>(h)) << (16 * (i & 1));
        }
        d = {packed[0], packed[1], 0, 0};
    }
    return r;
}

uint32_t ptx_cvt_rna_tf32_f32(float a) {
    const uint32_t bits = std::bit_cast<uint32_t>(a);
    if (!std::isfinite(a)) return bits;
    // Round the magnitude at bit 13, halves away from zero (adding half an ulp to the
    // magnitude bits carries into the exponent as it should), then clear the low bits.
    return (bits + 0x1000u) & ~uint32_t{0x1fff};
}

// ---------------------------------------------------------------------------------
// cp.async

void CpAsyncThread::cp_async(uint32_t dst, std::span<const uint8_t> src, int cp_size, int src_size,
                             bool ignore_src, bool cg) {
    const uint32_t size = cp_size > 0 ? static_cast<uint32_t>(cp_size) : 0;
    if (!(cp_size == 4 || cp_size == 8 || cp_size == 16) || (cg && cp_size != 16)) {
        issues_.push_back({CpAsyncProblem::BadCpSize, dst, size});
        return;
    }
    if (src_size < 0) src_size = cp_size;
    if (src_size > cp_size || (!ignore_src && static_cast<std::size_t>(src_size) > src.size())) {
        issues_.push_back({CpAsyncProblem::SrcSizeTooLarge, dst, size});
        return;
    }
    if (dst % size != 0) {
        issues_.push_back({CpAsyncProblem::DstMisaligned, dst, size});
        return;
    }
    if (static_cast<uint64_t>(dst) + size > smem_.size()) {
        issues_.push_back({CpAsyncProblem::DstOutOfBounds, dst, size});
        return;
    }
    for (const Copy& c : open_)
        if (mma_isa_overlaps(c.dst, static_cast<uint32_t>(c.bytes.size()), dst, size))
            issues_.push_back({CpAsyncProblem::SameDstInGroup, dst, size});
    Copy c;
    c.dst = dst;
    c.bytes.assign(size, 0);
    if (!ignore_src)
        for (int i = 0; i < src_size; ++i)
            c.bytes[static_cast<std::size_t>(i)] = src[static_cast<std::size_t>(i)];
    open_.push_back(std::move(c));
}

void CpAsyncThread::commit_group() {
    groups_.push_back(std::move(open_));  // possibly empty: "an empty cp.async-group"
    open_.clear();
}

void CpAsyncThread::complete(const std::vector<Copy>& group) {
    for (const Copy& c : group) {
        for (std::size_t i = 0; i < c.bytes.size(); ++i) smem_[c.dst + i] = c.bytes[i];
        if (on_complete) on_complete(c.dst, static_cast<uint32_t>(c.bytes.size()));
    }
}

void CpAsyncThread::wait_group(int n) {
    if (n < 0) {
        issues_.push_back({CpAsyncProblem::BadWaitN, 0, 0});
        return;
    }
    // "only N or fewer of the most recent cp.async-groups are pending": the older ones
    // complete, oldest first (within a group there is no order; mma_isa_overlaps were reported).
    while (static_cast<int>(groups_.size()) > n) {
        complete(groups_.front());
        groups_.erase(groups_.begin());
    }
}

void CpAsyncThread::wait_all() {
    commit_group();
    wait_group(0);
}

bool CpAsyncThread::pending_overlap(uint32_t addr, uint32_t size) const {
    for (const Copy& c : open_)
        if (mma_isa_overlaps(c.dst, static_cast<uint32_t>(c.bytes.size()), addr, size)) return true;
    for (const auto& g : groups_)
        for (const Copy& c : g)
            if (mma_isa_overlaps(c.dst, static_cast<uint32_t>(c.bytes.size()), addr, size)) return true;
    return false;
}

std::vector<uint8_t> CpAsyncThread::read(uint32_t addr, uint32_t size) {
    if (pending_overlap(addr, size)) issues_.push_back({CpAsyncProblem::ReadBeforeWait, addr, size});
    std::vector<uint8_t> out(size, 0);
    for (uint32_t i = 0; i < size; ++i)
        if (static_cast<uint64_t>(addr) + i < smem_.size()) out[i] = smem_[addr + i];
    return out;
}

void CpAsyncThread::write(uint32_t addr, std::span<const uint8_t> bytes) {
    const uint32_t size = static_cast<uint32_t>(bytes.size());
    if (pending_overlap(addr, size)) issues_.push_back({CpAsyncProblem::WriteBeforeWait, addr, size});
    for (uint32_t i = 0; i < size; ++i)
        if (static_cast<uint64_t>(addr) + i < smem_.size()) smem_[addr + i] = bytes[i];
}

}  // namespace tilec::sim::isa
