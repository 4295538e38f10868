// The target table. Where each figure comes from: block, register and shared-memory
// limits from the CUDA C++ Programming Guide's per-compute-capability tables and AMD's
// LDS size; PTX versions are the lowest PTX ISA that knows the arch (sm_80 7.0, sm_86
// 7.1), except where an instruction the row offers needs more: sm_89 and later emit 8.4,
// the first version with mma.sync on .e4m3 / .e5m2 (mma's "PTX ISA Notes"), which the
// ptxas of CUDA 12.4 and later assembles (sm_89 and sm_90 alone would need 7.8, sm_90a
// 8.0); instruction families
// and matrix shapes from the PTX ISA (each instruction's "Target ISA Notes", the
// "Matrix Shape" tables of mma and wgmma) and AMD's CDNA2 / CDNA3 / RDNA3 ISA guides.
// tests/unit/target_table_test.cpp checks the rows against those documents.
#include "target/target.h"

#include <algorithm>

namespace tilec::target {

namespace {

using E = ElemType;

MmaShape shape(MatrixOp op, int m, int n, int k, E a, E b, E acc, int ptx, std::string_view instruction) {
    MmaShape s;
    s.op = op;
    s.m = m;
    s.k = k;
    s.n_min = s.n_max = n;
    s.a = a;
    s.b = b;
    s.acc = acc;
    s.min_ptx_version = ptx;
    s.instruction = instruction;
    return s;
}

// The 8-bit integer and fp8 multiplicands take each operand's type separately: all four
// pairs of {x, y}.
template <typename Add>
void each_pair(E x, E y, Add add) {
    add(x, x);
    add(x, y);
    add(y, x);
    add(y, y);
}

// mma.sync of one arch (PTX ISA 9.0, 9.7.14.1 "Matrix Shape" and 9.7.14.5.14 "mma",
// Target ISA Notes), larger K first. Only the shapes of sm_80 and later and of the
// types the language has (no .s4/.u4/.b1, no sparse mma).
void add_mma_sync(std::vector<MmaShape>& out, int arch) {
    using M = MatrixOp;
    for (E acc : {E::F32, E::F16}) {
        out.push_back(shape(M::MmaSync, 16, 8, 16, E::F16, E::F16, acc, 70, "mma.sync.aligned.m16n8k16"));
        out.push_back(shape(M::MmaSync, 16, 8, 8, E::F16, E::F16, acc, 65, "mma.sync.aligned.m16n8k8"));
    }
    out.push_back(shape(M::MmaSync, 16, 8, 16, E::BF16, E::BF16, E::F32, 70, "mma.sync.aligned.m16n8k16"));
    out.push_back(shape(M::MmaSync, 16, 8, 8, E::BF16, E::BF16, E::F32, 70, "mma.sync.aligned.m16n8k8"));
    out.push_back(shape(M::MmaSync, 16, 8, 8, E::TF32, E::TF32, E::F32, 70, "mma.sync.aligned.m16n8k8"));
    out.push_back(shape(M::MmaSync, 16, 8, 4, E::TF32, E::TF32, E::F32, 70, "mma.sync.aligned.m16n8k4"));
    each_pair(E::S8, E::U8, [&](E a, E b) {
        out.push_back(shape(M::MmaSync, 16, 8, 32, a, b, E::S32, 70, "mma.sync.aligned.m16n8k32"));
    });
    each_pair(E::S8, E::U8, [&](E a, E b) {
        out.push_back(shape(M::MmaSync, 16, 8, 16, a, b, E::S32, 70, "mma.sync.aligned.m16n8k16"));
    });
    if (arch >= 89) {
        // .e4m3/.e5m2: m16n8k32 with an f32 accumulator since PTX 8.4; the f16
        // accumulator and the m16n8k16 shape since 8.7.
        each_pair(E::E4M3, E::E5M2, [&](E a, E b) {
            out.push_back(shape(M::MmaSync, 16, 8, 32, a, b, E::F32, 84, "mma.sync.aligned.m16n8k32"));
            out.push_back(shape(M::MmaSync, 16, 8, 32, a, b, E::F16, 87, "mma.sync.aligned.m16n8k32"));
        });
        each_pair(E::E4M3, E::E5M2, [&](E a, E b) {
            out.push_back(shape(M::MmaSync, 16, 8, 16, a, b, E::F32, 87, "mma.sync.aligned.m16n8k16"));
            out.push_back(shape(M::MmaSync, 16, 8, 16, a, b, E::F16, 87, "mma.sync.aligned.m16n8k16"));
        });
    }
    if (arch >= 90) {
        out.push_back(shape(M::MmaSync, 16, 8, 16, E::F64, E::F64, E::F64, 78, "mma.sync.aligned.m16n8k16"));
        out.push_back(shape(M::MmaSync, 16, 8, 8, E::F64, E::F64, E::F64, 78, "mma.sync.aligned.m16n8k8"));
        out.push_back(shape(M::MmaSync, 16, 8, 4, E::F64, E::F64, E::F64, 78, "mma.sync.aligned.m16n8k4"));
    }
    out.push_back(shape(M::MmaSync, 8, 8, 4, E::F64, E::F64, E::F64, 70, "mma.sync.aligned.m8n8k4"));
}

// wgmma.mma_async (sm_90a; PTX ISA 9.0, 9.7.15.2 "Matrix Shape" and 9.7.15.5.2): M = 64,
// N every multiple of 8 from 8 to 256 (of 16 from 32 for the 8-bit integers).
void add_wgmma(std::vector<MmaShape>& out) {
    auto range = [&](int k, E a, E b, E acc, int ptx, std::string_view insn, int n_min, int n_step) {
        MmaShape s = shape(MatrixOp::Wgmma, 64, n_min, k, a, b, acc, ptx, insn);
        s.n_max = 256;
        s.n_step = n_step;
        out.push_back(s);
    };
    for (E acc : {E::F32, E::F16}) range(16, E::F16, E::F16, acc, 80, "wgmma.mma_async.m64nNk16", 8, 8);
    range(16, E::BF16, E::BF16, E::F32, 80, "wgmma.mma_async.m64nNk16", 8, 8);
    range(8, E::TF32, E::TF32, E::F32, 80, "wgmma.mma_async.m64nNk8", 8, 8);
    each_pair(E::E4M3, E::E5M2, [&](E a, E b) {
        for (E acc : {E::F32, E::F16}) range(32, a, b, acc, 80, "wgmma.mma_async.m64nNk32", 8, 8);
    });
    // .s8.s8 and .u8.u8 since PTX 8.0, the mixed pairs since 8.4; N 8, 16, 24, then 32..256 by 16.
    each_pair(E::S8, E::U8, [&](E a, E b) {
        int ptx = a == b ? 80 : 84;
        MmaShape low = shape(MatrixOp::Wgmma, 64, 8, 32, a, b, E::S32, ptx, "wgmma.mma_async.m64nNk32");
        low.n_max = 24;
        out.push_back(low);
        range(32, a, b, E::S32, ptx, "wgmma.mma_async.m64nNk32", 32, 16);
    });
}

Target nvidia(std::string name, int arch, bool specific, int64_t max_smem, int64_t smem_per_sm, int ptx) {
    Target t;
    t.llvm_cpu = name;
    t.ptx_arch = "compute_" + name.substr(name.find('_') + 1);
    t.name = std::move(name);
    t.vendor = Vendor::Nvidia;
    t.arch = arch;
    t.arch_specific = specific;
    t.warp_size = 32;
    t.max_threads_per_block = 1024;
    t.max_registers_per_thread = 255;
    t.static_shared_bytes = 48 * 1024;
    t.max_shared_bytes = max_smem;
    t.shared_bytes_per_sm = smem_per_sm;
    t.ptx_version = ptx;
    t.cvt_bf16_from_f64_and_int = arch >= 90;
    auto since = [&](int min_arch, int min_ptx) { return Feature{arch >= min_arch, min_ptx}; };
    t.ldmatrix = since(75, 65);
    t.stmatrix = since(90, 78);
    t.cp_async = since(80, 70);
    t.mbarrier = since(80, 70);
    t.mbarrier_tx_count = since(90, 80);
    t.bulk_copy = since(90, 80);
    t.tma = since(90, 80);
    t.setmaxnreg = Feature{specific && arch == 90, 80};
    t.cvt_fp8 = since(89, 78);
    add_mma_sync(t.mma, arch);
    if (specific && arch == 90) add_wgmma(t.mma);
    return t;
}

Target amd(std::string name, int arch, int warp, int64_t lds) {
    Target t;
    t.llvm_cpu = name;
    t.name = std::move(name);
    t.vendor = Vendor::Amd;
    t.arch = arch;
    t.warp_size = warp;
    t.max_threads_per_block = 1024;
    t.max_registers_per_thread = 256;  // v0..v255 (CDNA's 256 AccVGPRs come on top)
    t.static_shared_bytes = lds;
    t.max_shared_bytes = lds;
    t.shared_bytes_per_sm = lds;
    t.max_waves_per_cu = 32;  // 4 x 8 (CDNA), 2 x 16 (RDNA3)
    return t;
}

void add_mfma(Target& t, int m, int n, int k, E a, E b, E acc, std::string_view insn) {
    t.mma.push_back(shape(MatrixOp::Mfma, m, n, k, a, b, acc, 0, insn));
}

// CDNA2 (MI200) MFMA, single-block forms (the multi-block ones, several small products
// at once, are left out): f16, bf16 (the "_1k" forms first: twice the K of the older
// ones), i8, f32, f64.
Target gfx90a() {
    Target t = amd("gfx90a", 90010, 64, 64 * 1024);
    t.lds_lane_groups = true;
    add_mfma(t, 32, 32, 8, E::F16, E::F16, E::F32, "v_mfma_f32_32x32x8f16");
    add_mfma(t, 16, 16, 16, E::F16, E::F16, E::F32, "v_mfma_f32_16x16x16f16");
    add_mfma(t, 32, 32, 8, E::BF16, E::BF16, E::F32, "v_mfma_f32_32x32x8bf16_1k");
    add_mfma(t, 16, 16, 16, E::BF16, E::BF16, E::F32, "v_mfma_f32_16x16x16bf16_1k");
    add_mfma(t, 32, 32, 4, E::BF16, E::BF16, E::F32, "v_mfma_f32_32x32x4bf16");
    add_mfma(t, 16, 16, 8, E::BF16, E::BF16, E::F32, "v_mfma_f32_16x16x8bf16");
    add_mfma(t, 32, 32, 8, E::S8, E::S8, E::S32, "v_mfma_i32_32x32x8i8");
    add_mfma(t, 16, 16, 16, E::S8, E::S8, E::S32, "v_mfma_i32_16x16x16i8");
    add_mfma(t, 32, 32, 2, E::F32, E::F32, E::F32, "v_mfma_f32_32x32x2f32");
    add_mfma(t, 16, 16, 4, E::F32, E::F32, E::F32, "v_mfma_f32_16x16x4f32");
    add_mfma(t, 16, 16, 4, E::F64, E::F64, E::F64, "v_mfma_f64_16x16x4f64");
    return t;
}

// CDNA3 (MI300) MFMA, single-block forms: CDNA2's types with K doubled for i8, plus
// xf32 and the FNUZ fp8 pair ("fp8" = E4M3Fnuz, "bf8" = E5M2Fnuz), in all four pairs.
Target gfx942() {
    Target t = amd("gfx942", 90402, 64, 64 * 1024);
    t.lds_lane_groups = true;
    add_mfma(t, 32, 32, 8, E::F16, E::F16, E::F32, "v_mfma_f32_32x32x8_f16");
    add_mfma(t, 16, 16, 16, E::F16, E::F16, E::F32, "v_mfma_f32_16x16x16_f16");
    add_mfma(t, 32, 32, 8, E::BF16, E::BF16, E::F32, "v_mfma_f32_32x32x8_bf16");
    add_mfma(t, 16, 16, 16, E::BF16, E::BF16, E::F32, "v_mfma_f32_16x16x16_bf16");
    add_mfma(t, 32, 32, 16, E::S8, E::S8, E::S32, "v_mfma_i32_32x32x16_i8");
    add_mfma(t, 16, 16, 32, E::S8, E::S8, E::S32, "v_mfma_i32_16x16x32_i8");
    add_mfma(t, 32, 32, 4, E::XF32, E::XF32, E::F32, "v_mfma_f32_32x32x4_xf32");
    add_mfma(t, 16, 16, 8, E::XF32, E::XF32, E::F32, "v_mfma_f32_16x16x8_xf32");
    struct Fp8 {
        E a, b;
        std::string_view m32, m16;
    };
    for (const Fp8& f : {Fp8{E::E4M3Fnuz, E::E4M3Fnuz, "v_mfma_f32_32x32x16_fp8_fp8", "v_mfma_f32_16x16x32_fp8_fp8"},
                         Fp8{E::E4M3Fnuz, E::E5M2Fnuz, "v_mfma_f32_32x32x16_fp8_bf8", "v_mfma_f32_16x16x32_fp8_bf8"},
                         Fp8{E::E5M2Fnuz, E::E4M3Fnuz, "v_mfma_f32_32x32x16_bf8_fp8", "v_mfma_f32_16x16x32_bf8_fp8"},
                         Fp8{E::E5M2Fnuz, E::E5M2Fnuz, "v_mfma_f32_32x32x16_bf8_bf8", "v_mfma_f32_16x16x32_bf8_bf8"}}) {
        add_mfma(t, 32, 32, 16, f.a, f.b, E::F32, f.m32);
        add_mfma(t, 16, 16, 32, f.a, f.b, E::F32, f.m16);
    }
    add_mfma(t, 32, 32, 2, E::F32, E::F32, E::F32, "v_mfma_f32_32x32x2_f32");
    add_mfma(t, 16, 16, 4, E::F32, E::F32, E::F32, "v_mfma_f32_16x16x4_f32");
    add_mfma(t, 16, 16, 4, E::F64, E::F64, E::F64, "v_mfma_f64_16x16x4_f64");
    return t;
}

// RDNA3 WMMA in wave32: 16x16x16 only; f16 and bf16 accumulate in f32 or in their own
// type; iu8 takes each operand's signedness separately.
Target gfx1100() {
    Target t = amd("gfx1100", 110000, 32, 64 * 1024);
    // 1536 VGPRs a SIMD in wave32, allocated 24 at a time (RDNA3 ISA 3.3; LLVM's
    // AMDGPUUsage, "gfx1100 ... 1536 VGPRs"): 5 waves of 256 (264 allocated). CDNA's 512
    // VGPRs + AGPRs a SIMD give one wave its 512 (the default, 1).
    t.full_register_waves = 5;
    auto wmma = [&](E a, E b, E acc, std::string_view insn) {
        t.mma.push_back(shape(MatrixOp::Wmma, 16, 16, 16, a, b, acc, 0, insn));
    };
    wmma(E::F16, E::F16, E::F32, "v_wmma_f32_16x16x16_f16");
    wmma(E::F16, E::F16, E::F16, "v_wmma_f16_16x16x16_f16");
    wmma(E::BF16, E::BF16, E::F32, "v_wmma_f32_16x16x16_bf16");
    wmma(E::BF16, E::BF16, E::BF16, "v_wmma_bf16_16x16x16_bf16");
    each_pair(E::S8, E::U8, [&](E a, E b) { wmma(a, b, E::S32, "v_wmma_i32_16x16x16_iu8"); });
    return t;
}

// The CPU: one row so that names are validated in one place. A block is one task of the
// thread pool, so there are no warps (warp_size 1), no shared memory and no GPU
// instructions; --cpu picks the LLVM CPU.
Target host() {
    Target t;
    t.name = "host";
    t.vendor = Vendor::Host;
    t.warp_size = 1;
    t.max_threads_per_block = 1;
    t.max_registers_per_thread = 0;
    t.static_shared_bytes = 0;
    t.max_shared_bytes = 0;
    t.shared_bytes_per_sm = 0;
    return t;
}

struct Table {
    std::vector<Target> rows;
    size_t gpu_count = 0;  // the GPU rows come first
};

const Table& table() {
    static const Table t = [] {
        Table t;
        t.rows = {
            nvidia("sm_80", 80, false, 163 * 1024, 164 * 1024, 70),
            nvidia("sm_86", 86, false, 99 * 1024, 100 * 1024, 71),
            nvidia("sm_89", 89, false, 99 * 1024, 100 * 1024, 84),
            nvidia("sm_90", 90, false, 227 * 1024, 228 * 1024, 84),
            nvidia("sm_90a", 90, true, 227 * 1024, 228 * 1024, 84),
            gfx90a(),
            gfx942(),
            gfx1100(),
            host(),
        };
        t.gpu_count = static_cast<size_t>(
            std::find_if(t.rows.begin(), t.rows.end(), [](const Target& r) { return r.is_host(); }) - t.rows.begin());
        return t;
    }();
    return t;
}

}  // namespace

bool Target::has_wgmma() const {
    return std::any_of(mma.begin(), mma.end(), [](const MmaShape& s) { return s.op == MatrixOp::Wgmma; });
}

bool Target::has_agprs() const {
    return std::any_of(mma.begin(), mma.end(), [](const MmaShape& s) { return s.op == MatrixOp::Mfma; });
}

const std::vector<Target>& all_targets() { return table().rows; }

const Target* find_target(std::string_view name) {
    for (const auto& t : table().rows)
        if (t.name == name) return &t;
    return nullptr;
}

std::span<const Target> gpu_targets() { return {table().rows.data(), table().gpu_count}; }

const GpuTarget* find_gpu_target(std::string_view name) {
    for (const auto& t : gpu_targets())
        if (t.name == name) return &t;
    return nullptr;
}

std::vector<const MmaShape*> mma_shapes(const Target& t, ElemType a, ElemType b, ElemType acc) {
    std::vector<const MmaShape*> out;
    for (const auto& s : t.mma)
        if (s.a == a && s.b == b && s.acc == acc) out.push_back(&s);
    return out;
}

const MmaShape* find_mma(const Target& t, ElemType a, ElemType b, ElemType acc) {
    for (const auto& s : t.mma)
        if (s.a == a && s.b == b && s.acc == acc) return &s;
    return nullptr;
}

const MmaShape* find_mma(const Target& t, MatrixOp op, int m, int n, int k, ElemType a, ElemType b, ElemType acc) {
    for (const auto& s : t.mma)
        if (s.op == op && s.m == m && s.k == k && s.has_n(n) && s.a == a && s.b == b && s.acc == acc) return &s;
    return nullptr;
}

const char* elem_type_name(ElemType t) {
    switch (t) {
    case ElemType::F64: return "f64";
    case ElemType::F32: return "f32";
    case ElemType::TF32: return "tf32";
    case ElemType::XF32: return "xf32";
    case ElemType::F16: return "f16";
    case ElemType::BF16: return "bf16";
    case ElemType::E4M3: return "e4m3";
    case ElemType::E5M2: return "e5m2";
    case ElemType::E4M3Fnuz: return "e4m3fnuz";
    case ElemType::E5M2Fnuz: return "e5m2fnuz";
    case ElemType::S8: return "s8";
    case ElemType::U8: return "u8";
    case ElemType::S32: return "s32";
    }
    return "?";
}

}  // namespace tilec::target
