// The target table (compiler/target) against the vendors' documents. Every expected value
// below is written from the document named beside it, not from target.cpp, so a wrong
// row fails here. Documents read:
//  - NVIDIA, "PTX ISA" release 9.0: section 9.7.14.1 "Matrix Shape" (table of mma shapes,
//    types and the PTX ISA version of each), 9.7.14.5.14 "mma" (PTX ISA Notes, Target ISA
//    Notes), 9.7.14.5.15 "ldmatrix", 9.7.14.5.16 "stmatrix", 9.7.9.25.3.1 "cp.async",
//    9.7.9.25.4.1 "cp.async.bulk", 9.7.9.25.5.2 "cp.async.bulk.tensor", 9.7.13.15.9
//    "mbarrier.init", 9.7.13.15.11 "mbarrier.expect_tx", 9.7.15.2 "Matrix Shape" (wgmma),
//    9.7.15.5.2 "wgmma.mma_async", 9.7.19.5 "setmaxnreg", 13 "Release Notes" Table 57
//    "PTX Release History".
//  - NVIDIA, "CUDA C++ Programming Guide" (CUDA 13): 5.1.3 "Features and Technical
//    Specifications", Table 30 "Device and Streaming Multiprocessor (SM) Information per
//    Compute Capability" and Table 31 "Memory Information per Compute Capability" with
//    its footnote [3] (over 48 KB per block needs dynamic shared memory and an opt-in).
//  - AMD, the MFMA / WMMA instruction tables of the CDNA2 (MI200), CDNA3 (MI300) and RDNA3
//    ISA guides as AMD's Matrix Instruction Calculator (ROCm/amd_matrix_instruction_calculator,
//    matrix_calculator.py, tables 'cdna2', 'cdna3', 'rdna3') lists them: mnemonic, M, N,
//    K, input and output types, blocks; its --wavefront rule (64 only on gfx9 / CDNA,
//    32 or 64 on RDNA3). LDS per work-group: LLVM's AMDGPU getAddressableLocalMemorySize
//    (65536 bytes for GFX7 and later, up to GFX950 which is not in the table).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "target/target.h"

using namespace tilec;
using target::ElemType;
using target::MatrixOp;

namespace {

const target::Target& row(const char* name) {
    const target::Target* t = target::find_target(name);
    REQUIRE(t != nullptr);
    return *t;
}

const char* const kNvidia[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

// One line of PTX ISA 9.0, 9.7.14.1 "Matrix Shape" (mma rows, dense), with the sm_XX that
// 9.7.14.5.14's Target ISA Notes require for it.
struct DocMma {
    int m, n, k;
    ElemType a, b, acc;
    int ptx;     // the table's "PTX ISA version" column
    int min_sm;  // Target ISA Notes
};

// .f16 m16n8k8: PTX 6.5, sm_75; .f16 m16n8k16: 7.0, sm_80 (accumulator .f16 or .f32, 9.7.14.2).
// .bf16 m16n8k8 / m16n8k16 and .tf32 m16n8k4 / m16n8k8: 7.0, sm_80, accumulator .f32.
// .u8/.s8 m16n8k16 / m16n8k32: 7.0, sm_80, accumulator .s32, .atype and .btype each {.u8, .s8}.
// .f64 m8n8k4: 7.0, sm_80; m16n8k4 / k8 / k16: 7.8, sm_90.
// .e4m3/.e5m2 m16n8k32: 8.4 (accumulator .f32); the .f16 accumulator and m16n8k16: 8.7; sm_89.
const std::vector<DocMma>& doc_mma_sync() {
    using E = ElemType;
    static const std::vector<DocMma> rows = [] {
        std::vector<DocMma> r = {
            {16, 8, 8, E::F16, E::F16, E::F16, 65, 75},     {16, 8, 8, E::F16, E::F16, E::F32, 65, 75},
            {16, 8, 16, E::F16, E::F16, E::F16, 70, 80},    {16, 8, 16, E::F16, E::F16, E::F32, 70, 80},
            {16, 8, 8, E::BF16, E::BF16, E::F32, 70, 80},   {16, 8, 16, E::BF16, E::BF16, E::F32, 70, 80},
            {16, 8, 4, E::TF32, E::TF32, E::F32, 70, 80},   {16, 8, 8, E::TF32, E::TF32, E::F32, 70, 80},
            {8, 8, 4, E::F64, E::F64, E::F64, 70, 80},      {16, 8, 4, E::F64, E::F64, E::F64, 78, 90},
            {16, 8, 8, E::F64, E::F64, E::F64, 78, 90},     {16, 8, 16, E::F64, E::F64, E::F64, 78, 90},
        };
        for (E a : {E::S8, E::U8})
            for (E b : {E::S8, E::U8})
                for (int k : {16, 32}) r.push_back({16, 8, k, a, b, E::S32, 70, 80});
        for (E a : {E::E4M3, E::E5M2})
            for (E b : {E::E4M3, E::E5M2}) {
                r.push_back({16, 8, 32, a, b, E::F32, 84, 89});
                r.push_back({16, 8, 32, a, b, E::F16, 87, 89});
                r.push_back({16, 8, 16, a, b, E::F32, 87, 89});
                r.push_back({16, 8, 16, a, b, E::F16, 87, 89});
            }
        return r;
    }();
    return rows;
}

}  // namespace

TEST_CASE("target table: every name the driver accepts is a row, host included, GPU rows first", "[target]") {
    std::vector<std::string> names;
    for (auto& t : target::all_targets()) names.push_back(t.name);
    CHECK(names == std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "gfx90a", "gfx942",
                                            "gfx1100", "host"});
    const auto& host = row("host");
    CHECK(host.is_host());
    CHECK_FALSE(host.is_gpu());
    CHECK(host.warp_size == 1);  // no warp collectives
    CHECK(host.mma.empty());
    CHECK(target::find_gpu_target("host") == nullptr);  // not a GPU: sim:host stays unknown
    CHECK(target::gpu_targets().size() == 8);
    for (auto& t : target::gpu_targets()) CHECK(t.is_gpu());
    CHECK(target::find_target("sm_70") == nullptr);
    CHECK(target::find_target("sm_100x") == nullptr);
    // The GPU names resolve to the same row both ways.
    CHECK(target::find_gpu_target("gfx942") == target::find_target("gfx942"));
}

TEST_CASE("target table: block, register and shared-memory limits (CUDA C++ Programming Guide, 5.1.3, "
          "Tables 30 and 31)",
          "[target]") {
    struct Cc {
        const char* name;
        int64_t per_block_kb;  // "Maximum amount of shared memory per thread block"
        int64_t per_sm_kb;     // "Maximum amount of shared memory per SM"
    };
    // Columns 8.0, 8.6, 8.9, 9.0 (sm_90a is compute capability 9.0). KB = 1024 bytes (the
    // note above Table 30).
    for (const Cc& c : {Cc{"sm_80", 163, 164}, Cc{"sm_86", 99, 100}, Cc{"sm_89", 99, 100}, Cc{"sm_90", 227, 228},
                        Cc{"sm_90a", 227, 228}}) {
        INFO(c.name);
        const auto& t = row(c.name);
        CHECK(t.is_nvidia());
        CHECK(t.max_shared_bytes == c.per_block_kb * 1024);
        CHECK(t.shared_bytes_per_sm == c.per_sm_kb * 1024);
        // Footnote [3]: above 48 KB per block, dynamic shared memory and an explicit opt-in.
        CHECK(t.static_shared_bytes == 48 * 1024);
        CHECK(t.max_threads_per_block == 1024);    // Table 30, "Maximum number of threads per block"
        CHECK(t.warp_size == 32);                  // Table 30, "Warp size"
        CHECK(t.max_registers_per_thread == 255);  // Table 31, "Maximum number of 32-bit registers per thread"
    }
}

TEST_CASE("target table: each NVIDIA row emits the first PTX ISA that knows it and its instructions (PTX ISA "
          "9.0, 13, Table 57; mma's PTX ISA Notes)",
          "[target]") {
    // "Supported Targets" column: sm_80 from PTX ISA 7.0, sm_86 from 7.1, sm_89 and sm_90
    // from 7.8, sm_90a from 8.0; but mma.sync on .e4m3 / .e5m2 (which sm_89 and later
    // have) came with 8.4, so those rows emit 8.4: every mma shape of their table must be
    // one the emitted version has (checked below).
    CHECK(row("sm_80").ptx_version == 70);
    CHECK(row("sm_86").ptx_version == 71);
    CHECK(row("sm_89").ptx_version == 84);
    CHECK(row("sm_90").ptx_version == 84);
    CHECK(row("sm_90a").ptx_version == 84);
    for (const char* name : {"sm_89", "sm_90", "sm_90a"}) {
        const auto* f8 = target::find_mma(row(name), MatrixOp::MmaSync, 16, 8, 32, target::ElemType::E4M3, target::ElemType::E4M3, target::ElemType::F32);
        REQUIRE(f8);
        CHECK(f8->min_ptx_version <= row(name).ptx_version);
    }
    CHECK(row("sm_90a").arch_specific);
    CHECK_FALSE(row("sm_90").arch_specific);
    CHECK(row("sm_80").ptx_arch == "compute_80");
    CHECK(row("sm_90a").ptx_arch == "compute_90a");
}

TEST_CASE("target table: mma.sync shapes and types per arch (PTX ISA 9.0, 9.7.14.1 table, 9.7.14.5.14 Target "
          "ISA Notes)",
          "[target]") {
    for (const char* name : kNvidia) {
        const auto& t = row(name);
        for (const DocMma& d : doc_mma_sync()) {
            INFO(name << " m" << d.m << "n" << d.n << "k" << d.k << " " << target::elem_type_name(d.a) << "."
                      << target::elem_type_name(d.b) << " -> " << target::elem_type_name(d.acc));
            const target::MmaShape* s = target::find_mma(t, MatrixOp::MmaSync, d.m, d.n, d.k, d.a, d.b, d.acc);
            if (t.arch < d.min_sm) {
                CHECK(s == nullptr);
                continue;
            }
            REQUIRE(s != nullptr);
            CHECK(s->min_ptx_version == d.ptx);
            CHECK(s->instruction.starts_with("mma.sync.aligned.m" + std::to_string(d.m) + "n" +
                                             std::to_string(d.n) + "k" + std::to_string(d.k)));
        }
        // Every mma.sync row the table has is one of the document's.
        for (const auto& s : t.mma) {
            if (s.op != MatrixOp::MmaSync) continue;
            bool documented = false;
            for (const DocMma& d : doc_mma_sync())
                documented |= d.m == s.m && s.has_n(d.n) && d.k == s.k && d.a == s.a && d.b == s.b && d.acc == s.acc;
            CHECK(documented);
        }
    }
    // 9.7.14.2: .bf16 and .tf32 accumulate in .f32 only; no OCP fp8 before sm_89.
    CHECK(target::find_mma(row("sm_90"), ElemType::BF16, ElemType::BF16, ElemType::F16) == nullptr);
    CHECK(target::find_mma(row("sm_86"), ElemType::E4M3, ElemType::E4M3, ElemType::F32) == nullptr);
    // The one-call question a pass asks: the preferred f16 instruction is the larger K.
    const auto* best = target::find_mma(row("sm_80"), ElemType::F16, ElemType::F16, ElemType::F32);
    REQUIRE(best != nullptr);
    CHECK(best->op == MatrixOp::MmaSync);
    CHECK((best->m == 16 && best->n_min == 8 && best->k == 16));
    CHECK(target::mma_shapes(row("sm_80"), ElemType::F16, ElemType::F16, ElemType::F32).size() == 2);
}

TEST_CASE("target table: wgmma only on sm_90a, N from 8 to 256 (PTX ISA 9.0, 9.7.15.2 and 9.7.15.5.2)",
          "[target]") {
    // 9.7.15.5.2 Target ISA Notes: "Requires sm_90a"; PTX ISA Notes: introduced in 8.0,
    // .u8.s8 and .s8.u8 in 8.4.
    for (const char* name : kNvidia) CHECK(row(name).has_wgmma() == (std::string(name) == "sm_90a"));
    for (const char* name : {"gfx90a", "gfx942", "gfx1100", "host"}) CHECK_FALSE(row(name).has_wgmma());
    const auto& t = row("sm_90a");
    using E = ElemType;
    // 9.7.15.2: .f16 / .bf16 m64nNk16, .tf32 m64nNk8, .e4m3/.e5m2 m64nNk32 for N = 8, 16, ..., 256.
    for (int n = 8; n <= 256; n += 8) {
        INFO("N = " << n);
        CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, n, 16, E::F16, E::F16, E::F32) != nullptr);
        CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, n, 16, E::F16, E::F16, E::F16) != nullptr);
        CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, n, 16, E::BF16, E::BF16, E::F32) != nullptr);
        CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, n, 8, E::TF32, E::TF32, E::F32) != nullptr);
        CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, n, 32, E::E4M3, E::E5M2, E::F16) != nullptr);
        // .u8/.s8: N = 8, 16, 24, 32, 48, 64, ..., 256 (no 40, 56, ...).
        bool int_n = n <= 32 || n % 16 == 0;
        CHECK((target::find_mma(t, MatrixOp::Wgmma, 64, n, 32, E::S8, E::S8, E::S32) != nullptr) == int_n);
    }
    CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, 264, 16, E::F16, E::F16, E::F32) == nullptr);
    CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, 12, 16, E::F16, E::F16, E::F32) == nullptr);
    CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, 64, 16, E::BF16, E::BF16, E::F16) == nullptr);  // .dtype = {.f32}
    const auto* mixed = target::find_mma(t, MatrixOp::Wgmma, 64, 64, 32, E::U8, E::S8, E::S32);
    REQUIRE(mixed != nullptr);
    CHECK(mixed->min_ptx_version == 84);
    CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, 64, 32, E::S8, E::S8, E::S32)->min_ptx_version == 80);
    CHECK(target::find_mma(t, MatrixOp::Wgmma, 64, 64, 16, E::F16, E::F16, E::F32)->min_ptx_version == 80);
}

TEST_CASE("target table: async copies, barriers and register control per arch (PTX ISA 9.0, Target ISA Notes)",
          "[target]") {
    struct Doc {
        const char* what;
        target::Feature target::Target::*field;
        int min_sm;         // "Requires sm_XX or higher"
        bool sm90a_only;    // setmaxnreg: "Supported on ... sm_90a, sm_100a, ..."
        int ptx;            // "Introduced in PTX ISA version X.Y"
    };
    const Doc docs[] = {
        {"ldmatrix (9.7.14.5.15)", &target::Target::ldmatrix, 75, false, 65},
        {"stmatrix (9.7.14.5.16)", &target::Target::stmatrix, 90, false, 78},
        {"cp.async (9.7.9.25.3.1)", &target::Target::cp_async, 80, false, 70},
        {"mbarrier.init (9.7.13.15.9)", &target::Target::mbarrier, 80, false, 70},
        {"mbarrier.expect_tx (9.7.13.15.11)", &target::Target::mbarrier_tx_count, 90, false, 80},
        {"cp.async.bulk (9.7.9.25.4.1)", &target::Target::bulk_copy, 90, false, 80},
        {"cp.async.bulk.tensor (9.7.9.25.5.2)", &target::Target::tma, 90, false, 80},
        {"setmaxnreg (9.7.19.5)", &target::Target::setmaxnreg, 90, true, 80},
        // cvt's .e4m3x2 / .e5m2x2: "Introduced in PTX ISA version 7.8", "requires sm_89 or higher".
        {"cvt .e4m3x2 / .e5m2x2 (9.7.9.21)", &target::Target::cvt_fp8, 89, false, 78},
    };
    for (const Doc& d : docs) {
        for (auto& t : target::all_targets()) {
            INFO(d.what << " on " << t.name);
            const target::Feature& f = t.*d.field;
            bool expected = t.is_nvidia() && t.arch >= d.min_sm && (!d.sm90a_only || t.arch_specific);
            CHECK(f.available == expected);
            if (expected) CHECK(f.min_ptx_version == d.ptx);
        }
    }
}

TEST_CASE("target table: AMD wave width and LDS (Matrix Instruction Calculator --wavefront rule; LLVM AMDGPU "
          "addressable local memory)",
          "[target]") {
    struct Amd {
        const char* name;
        int wave;
        int full_register_waves;
    };
    // CDNA2 / CDNA3 (gfx9): wave64 only. RDNA3 (gfx11): wave32 or wave64; the backend uses
    // wave32 (+wavefrontsize32). Waves a SIMD runs with all 256 VGPRs each: CDNA's 512
    // VGPRs + AGPRs a lane go to one wave; gfx1100's 1536 VGPRs in wave32 (allocated 24 at
    // a time) to 5 waves of 264.
    for (const Amd& a : {Amd{"gfx90a", 64, 1}, Amd{"gfx942", 64, 1}, Amd{"gfx1100", 32, 5}}) {
        INFO(a.name);
        const auto& t = row(a.name);
        CHECK(t.is_amd());
        CHECK(t.warp_size == a.wave);
        CHECK(t.full_register_waves == a.full_register_waves);
        CHECK(t.max_shared_bytes == 65536);  // 64 KiB of LDS per work-group
        CHECK(t.static_shared_bytes == 65536);
        CHECK(t.max_threads_per_block == 1024);
        CHECK(t.ptx_version == 0);
        CHECK_FALSE(t.cp_async.available);
        CHECK_FALSE(t.tma.available);
    }
}

TEST_CASE("target table: MFMA and WMMA instructions (CDNA2, CDNA3, RDNA3 ISA tables via AMD's Matrix "
          "Instruction Calculator)",
          "[target]") {
    using E = ElemType;
    struct Doc {
        const char* arch;
        const char* instruction;  // the calculator's key, as the ISA guide spells it
        MatrixOp op;
        int m, n, k;
        E a, b, acc;
    };
    const Doc docs[] = {
        // 'cdna2' (MI200): single-block forms, in_type / out_type as listed.
        {"gfx90a", "v_mfma_f32_32x32x8f16", MatrixOp::Mfma, 32, 32, 8, E::F16, E::F16, E::F32},
        {"gfx90a", "v_mfma_f32_16x16x16f16", MatrixOp::Mfma, 16, 16, 16, E::F16, E::F16, E::F32},
        {"gfx90a", "v_mfma_f32_32x32x8bf16_1k", MatrixOp::Mfma, 32, 32, 8, E::BF16, E::BF16, E::F32},
        {"gfx90a", "v_mfma_f32_16x16x16bf16_1k", MatrixOp::Mfma, 16, 16, 16, E::BF16, E::BF16, E::F32},
        {"gfx90a", "v_mfma_f32_32x32x4bf16", MatrixOp::Mfma, 32, 32, 4, E::BF16, E::BF16, E::F32},
        {"gfx90a", "v_mfma_f32_16x16x8bf16", MatrixOp::Mfma, 16, 16, 8, E::BF16, E::BF16, E::F32},
        {"gfx90a", "v_mfma_i32_32x32x8i8", MatrixOp::Mfma, 32, 32, 8, E::S8, E::S8, E::S32},
        {"gfx90a", "v_mfma_i32_16x16x16i8", MatrixOp::Mfma, 16, 16, 16, E::S8, E::S8, E::S32},
        {"gfx90a", "v_mfma_f32_32x32x2f32", MatrixOp::Mfma, 32, 32, 2, E::F32, E::F32, E::F32},
        {"gfx90a", "v_mfma_f32_16x16x4f32", MatrixOp::Mfma, 16, 16, 4, E::F32, E::F32, E::F32},
        {"gfx90a", "v_mfma_f64_16x16x4f64", MatrixOp::Mfma, 16, 16, 4, E::F64, E::F64, E::F64},
        // 'cdna3' (MI300): i8 with K doubled, xf32, fp8 = E4M3 FNUZ and bf8 = E5M2 FNUZ.
        {"gfx942", "v_mfma_f32_32x32x8_f16", MatrixOp::Mfma, 32, 32, 8, E::F16, E::F16, E::F32},
        {"gfx942", "v_mfma_f32_16x16x16_f16", MatrixOp::Mfma, 16, 16, 16, E::F16, E::F16, E::F32},
        {"gfx942", "v_mfma_f32_32x32x8_bf16", MatrixOp::Mfma, 32, 32, 8, E::BF16, E::BF16, E::F32},
        {"gfx942", "v_mfma_f32_16x16x16_bf16", MatrixOp::Mfma, 16, 16, 16, E::BF16, E::BF16, E::F32},
        {"gfx942", "v_mfma_i32_32x32x16_i8", MatrixOp::Mfma, 32, 32, 16, E::S8, E::S8, E::S32},
        {"gfx942", "v_mfma_i32_16x16x32_i8", MatrixOp::Mfma, 16, 16, 32, E::S8, E::S8, E::S32},
        {"gfx942", "v_mfma_f32_32x32x4_xf32", MatrixOp::Mfma, 32, 32, 4, E::XF32, E::XF32, E::F32},
        {"gfx942", "v_mfma_f32_16x16x8_xf32", MatrixOp::Mfma, 16, 16, 8, E::XF32, E::XF32, E::F32},
        {"gfx942", "v_mfma_f32_32x32x16_fp8_fp8", MatrixOp::Mfma, 32, 32, 16, E::E4M3Fnuz, E::E4M3Fnuz, E::F32},
        {"gfx942", "v_mfma_f32_32x32x16_fp8_bf8", MatrixOp::Mfma, 32, 32, 16, E::E4M3Fnuz, E::E5M2Fnuz, E::F32},
        {"gfx942", "v_mfma_f32_32x32x16_bf8_fp8", MatrixOp::Mfma, 32, 32, 16, E::E5M2Fnuz, E::E4M3Fnuz, E::F32},
        {"gfx942", "v_mfma_f32_32x32x16_bf8_bf8", MatrixOp::Mfma, 32, 32, 16, E::E5M2Fnuz, E::E5M2Fnuz, E::F32},
        {"gfx942", "v_mfma_f32_16x16x32_fp8_fp8", MatrixOp::Mfma, 16, 16, 32, E::E4M3Fnuz, E::E4M3Fnuz, E::F32},
        {"gfx942", "v_mfma_f32_16x16x32_bf8_bf8", MatrixOp::Mfma, 16, 16, 32, E::E5M2Fnuz, E::E5M2Fnuz, E::F32},
        {"gfx942", "v_mfma_f64_16x16x4_f64", MatrixOp::Mfma, 16, 16, 4, E::F64, E::F64, E::F64},
        // 'rdna3': 16x16x16 only.
        {"gfx1100", "v_wmma_f32_16x16x16_f16", MatrixOp::Wmma, 16, 16, 16, E::F16, E::F16, E::F32},
        {"gfx1100", "v_wmma_f16_16x16x16_f16", MatrixOp::Wmma, 16, 16, 16, E::F16, E::F16, E::F16},
        {"gfx1100", "v_wmma_f32_16x16x16_bf16", MatrixOp::Wmma, 16, 16, 16, E::BF16, E::BF16, E::F32},
        {"gfx1100", "v_wmma_bf16_16x16x16_bf16", MatrixOp::Wmma, 16, 16, 16, E::BF16, E::BF16, E::BF16},
        {"gfx1100", "v_wmma_i32_16x16x16_iu8", MatrixOp::Wmma, 16, 16, 16, E::U8, E::S8, E::S32},
    };
    for (const Doc& d : docs) {
        INFO(d.arch << " " << d.instruction);
        const auto* s = target::find_mma(row(d.arch), d.op, d.m, d.n, d.k, d.a, d.b, d.acc);
        REQUIRE(s != nullptr);
        CHECK(s->instruction == d.instruction);
        CHECK(s->min_ptx_version == 0);
    }
    // Neither matrix unit takes what the other vendor's does: CDNA3's fp8 is FNUZ, not the
    // OCP e4m3 of sm_89+; CDNA2 has no fp8, RDNA3 no MFMA, CDNA no WMMA.
    CHECK(target::find_mma(row("gfx942"), E::E4M3, E::E4M3, E::F32) == nullptr);
    CHECK(target::find_mma(row("gfx90a"), E::E4M3Fnuz, E::E4M3Fnuz, E::F32) == nullptr);
    CHECK(target::find_mma(row("gfx90a"), E::XF32, E::XF32, E::F32) == nullptr);
    for (auto& s : row("gfx1100").mma) CHECK(s.op == MatrixOp::Wmma);
    for (const char* cdna : {"gfx90a", "gfx942"})
        for (auto& s : row(cdna).mma) CHECK(s.op == MatrixOp::Mfma);
    // The one call a pass makes on CDNA2 for bf16: the "_1k" form (twice the K) first.
    const auto* bf16 = target::find_mma(row("gfx90a"), E::BF16, E::BF16, E::F32);
    REQUIRE(bf16 != nullptr);
    CHECK(bf16->instruction == "v_mfma_f32_32x32x8bf16_1k");
}
