// The NVPTX backend on the element-wise kernels: PTX for every listed sm arch, with the
// kernel entry, thread and block indices, global loads and stores, and cubins from
// ptxas. These are what `tilec --emit=ptx|cubin` produce, without the driver. Warp
// shuffles of every value type become shfl.sync (two for 64-bit values) that ptxas
// accepts.
#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

#include "codegen/nvptx_backend.h"
#include "gpu_common/gpu_cases.h"
#include "scalar/float_formats.h"
#include "target/target.h"

using namespace tilec;
using namespace tilec::gpu_test;

namespace {

const char* const kArchs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

// Every stdlib kernel group the NVPTX path covers.
std::vector<Case> cases() {
    return joined({elementwise_cases(), reduction_cases(), gemm_cases(), scan_and_atomic_cases()});
}

}  // namespace

TEST_CASE("nvptx: PTX of every element-wise export for every sm arch", "[nvptx]") {
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        for (const auto& c : cases()) {
            INFO(arch << " " << c.file);
            auto funcs = thread_level(c, *t);
            std::string ptx = codegen::compile_nvptx(funcs, *t, codegen::NvptxOutput::Ptx, "test.tile");
            INFO(ptx.substr(0, 4000));
            CHECK(contains(ptx, ".target " + std::string(arch)));
            for (auto& name : c.exports) CHECK(contains(ptx, ".entry " + name + "("));
            CHECK(contains(ptx, "%tid.x"));
            CHECK(contains(ptx, "%ctaid.x"));
            // Global reads: loads, or cp.async copies into shared memory (sm_80 and later).
            CHECK((contains(ptx, "ld.global") || contains(ptx, "cp.async.cg.shared.global")));
            CHECK((contains(ptx, "st.global") || contains(ptx, "atom.global")));
            CHECK(contains(ptx, ".maxntid"));
        }
    }
}

TEST_CASE("nvptx: ptxas assembles vector_add and saxpy for every sm arch", "[nvptx][ptxas]") {
    if (codegen::ptxas_path().empty()) {
        std::cout << "SKIPPED: ptxas not found (configure with -DTILEC_PTXAS=/path/to/ptxas)\n";
        return;
    }
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        for (const auto& c : cases()) {
            INFO(arch << " " << c.file);
            auto funcs = thread_level(c, *t);
            std::string ptx = codegen::compile_nvptx(funcs, *t, codegen::NvptxOutput::Ptx, "test.tile");
            std::string cubin = codegen::assemble_cubin(ptx, *t);
            REQUIRE(cubin.size() > 4);
            CHECK(cubin.substr(0, 4) == "\x7f" "ELF");
        }
    }
}

TEST_CASE("nvptx: f32 vector_add uses 16-byte vector loads on the unmasked path", "[nvptx]") {
    const auto* t = target::find_gpu_target("sm_80");
    auto funcs = thread_level(cases()[0], *t);
    std::string ptx = codegen::compile_nvptx({funcs[0]}, *t, codegen::NvptxOutput::Ptx, "test.tile");
    INFO(ptx);
    CHECK(contains(ptx, "ld.global.v4.f32"));
    CHECK(contains(ptx, "st.global.v4.f32"));
}

TEST_CASE("nvptx: atomic_add is a relaxed f32 atomic add on global memory, cumsum a shared scan", "[nvptx]") {
    const auto* t = target::find_gpu_target("sm_80");
    auto splitk = thread_level({source_path("stdlib/kernels/gemm_splitk.tile"), {"gemm_splitk_f16"}}, *t);
    std::string ptx = codegen::compile_nvptx(splitk, *t, codegen::NvptxOutput::Ptx, "test.tile");
    INFO(ptx.substr(0, 4000));
    // Relaxed at the GPU scope: atom / red without .acq_rel / .sys qualifiers.
    CHECK((contains(ptx, "atom.global.add.f32") || contains(ptx, "red.global.add.f32")));
    CHECK_FALSE(contains(ptx, "st.global"));
    CHECK_FALSE(contains(ptx, ".acq_rel"));
    CHECK_FALSE(contains(ptx, "atom.global.cas"));
    auto scan = thread_level({source_path("stdlib/kernels/cumsum.tile"), {"cumsum_f32"}}, *t);
    ptx = codegen::compile_nvptx(scan, *t, codegen::NvptxOutput::Ptx, "test.tile");
    CHECK(contains(ptx, "ld.shared.f32"));
    CHECK(contains(ptx, "st.shared.f32"));
    CHECK(contains(ptx, "bar.sync"));
}

TEST_CASE("nvptx: ptxas errors are internal errors with ptxas's output", "[nvptx][ptxas]") {
    if (codegen::ptxas_path().empty()) {
        std::cout << "SKIPPED: ptxas not found\n";
        return;
    }
    const auto* t = target::find_gpu_target("sm_80");
    try {
        (void)codegen::assemble_cubin(".version 7.0\n.target sm_80\n.address_size 64\nnonsense;\n", *t);
        FAIL("no error");
    } catch (const InternalError& e) {
        CHECK(contains(e.what(), "ptxas -arch=sm_80 --split-compile=0 failed"));  // the command as run
        CHECK(contains(e.what(), "nonsense"));
    }
}

TEST_CASE("nvptx: ptxas -v reports registers, shared memory and spills per kernel", "[nvptx][ptxas]") {
    if (codegen::ptxas_path().empty()) {
        std::cout << "SKIPPED: ptxas not found\n";
        return;
    }
    const auto* t = target::find_gpu_target("sm_80");
    auto all = cases();
    auto gemm = std::find_if(all.begin(), all.end(), [](const auto& c) { return c.exports.front() == "gemm_f16_m64"; });
    REQUIRE(gemm != all.end());
    auto funcs = thread_level(*gemm, *t);  // gemm_f16_m64, gemm_bf16_nt
    std::string ptx = codegen::compile_nvptx(funcs, *t, codegen::NvptxOutput::Ptx, "test.tile");
    auto run = codegen::run_ptxas(ptx, *t, {}, true);
    INFO(run.output);
    REQUIRE(run.ok);
    REQUIRE(run.resources.size() == 2);
    for (auto& r : run.resources) {
        CHECK(r.arch == "sm_80");
        CHECK(r.registers > 32);
        CHECK(r.spill_store_bytes == 0);
        // Static shared memory: the a and b tiles, [BM, 32] and [32, 128] of 2-byte elements,
        // each 3 times over (the 3-stage software pipeline).
        CHECK(r.shared_bytes ==
              3 * (r.kernel == "gemm_f16_m64" ? 64 * 32 * 2 + 32 * 128 * 2 : 128 * 32 * 2 + 32 * 128 * 2));
    }
    // A register cap on every kernel (.maxnreg instead of .maxntid, which makes ptxas
    // ignore --maxrregcount) forces spills: they are reported.
    std::string capped = ptx;
    for (size_t at; (at = capped.find(".maxntid 128, 1, 1")) != std::string::npos;)
        capped.replace(at, std::string(".maxntid 128, 1, 1").size(), ".maxnreg 32");
    auto spilled = codegen::run_ptxas(capped, *t, {}, true);
    INFO(spilled.output);
    REQUIRE(spilled.ok);
    REQUIRE(spilled.resources.size() == 2);
    for (auto& r : spilled.resources) {
        CHECK(r.registers <= 32);
        CHECK(r.spill_store_bytes > 0);
        CHECK(r.spill_load_bytes > 0);
        CHECK(codegen::format_resources(r).find(" bytes spilled") != std::string::npos);
    }
    // Options reach ptxas; a bad one fails the run (the driver reports it), not an ICE.
    auto bad = codegen::run_ptxas(ptx, *t, {"--no-such-option"}, false);
    CHECK_FALSE(bad.ok);
    CHECK(contains(bad.command, "ptxas -arch=sm_80 --no-such-option"));
    CHECK(contains(bad.output, "no-such-option"));
}

TEST_CASE("nvptx: the ptxas -v parser", "[nvptx]") {
    // The lines ptxas 13 prints (other lines, e.g. gmem and compile time, are ignored).
    std::string out =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
        "ptxas info    : Function properties for k2\n"
        "    24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 360 bytes cmem[0]\n"
        "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
        "ptxas info    : Function properties for k1\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 8 registers, 360 bytes cmem[0]\n"
        "ptxas info    : Compile time = 3.1 ms\n";
    auto r = codegen::parse_ptxas_verbose(out, "sm_90");
    REQUIRE(r.size() == 2);
    CHECK(r[0].kernel == "k2");
    CHECK(r[0].registers == 32);
    CHECK(r[0].shared_bytes == 1024);
    CHECK(r[0].spill_store_bytes == 20);
    CHECK(r[0].spill_load_bytes == 16);
    CHECK(codegen::format_resources(r[0]) ==
          "k2 sm_90: 32 registers, 1024 bytes shared, 20 bytes spilled (16 bytes of spill loads)");
    CHECK(r[1].kernel == "k1");
    CHECK(r[1].registers == 8);
    CHECK(r[1].shared_bytes == 0);
    CHECK(codegen::format_resources(r[1]) == "k1 sm_90: 8 registers, 0 bytes shared, 0 bytes spilled");
}

namespace {

// bf16 bits of a value exactly representable in bf16.
uint64_t bf16_bits(double v) {
    float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u >> 16;
}

// An integer rounded to bf16 (8 significant bits, nearest, ties to even), exactly.
double int_to_bf16(bool neg, uint64_t m) {
    if (m == 0) return 0.0;
    int p = 63 - __builtin_clzll(m);
    int shift = p - 7;
    double out;
    if (shift <= 0) {
        out = static_cast<double>(m);
    } else {
        uint64_t q = m >> shift, rem = m & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
        out = std::ldexp(static_cast<double>(q), shift);
    }
    return neg ? -out : out;
}

}  // namespace

TEST_CASE("nvptx: conversions to bf16 round once where PTX lacks a direct cvt (sm_80)", "[nvptx][convert]") {
    const auto* sm80 = target::find_gpu_target("sm_80");
    REQUIRE_FALSE(sm80->cvt_bf16_from_f64_and_int);
    using ir::DataType;
    std::mt19937_64 rng(5);

    // f64 -> bf16: random values over many binades, and values just off bf16 ties, where
    // rounding to f32 first lands on the tie and then goes the wrong way.
    auto from_f64 = codegen::host_conversion_for_test(DataType::f64(), DataType::bf16(), *sm80);
    std::vector<double> values = {0.0, -0.0, 1.0, 1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-8 - 0x1p-40,
                                  -(1.0 + 0x1p-8 + 0x1p-40), 3.0 * 0x1p-9 + 0x1p-45, 0x1p-140, 1e39, -1e39,
                                  INFINITY, -INFINITY, 3.3895313892515355e38};
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> ex(-130, 127);
    for (int k = 0; k < 20000; ++k) values.push_back((k & 1 ? -1 : 1) * std::ldexp(mant(rng), ex(rng)));
    for (int k = 0; k < 2000; ++k) {
        // bf16 midpoint m (8 significant bits + a half) nudged by a few f64 ulps.
        double m = std::ldexp(std::floor(std::ldexp(mant(rng), 7)) + 0.5, ex(rng) - 7);
        values.push_back(std::nextafter(m, 0.0));
        values.push_back(std::nextafter(m, INFINITY * m));
    }
    int bad = 0;
    for (double v : values) {
        // The host's f32 -> bf16 (the last step here, cvt.rn.bf16.f32 on the GPU, which
        // keeps subnormals) flushes subnormals, so the JIT cannot check that range.
        if (std::fabs(v) < 0x1p-126 && v != 0) continue;
        uint64_t want = bf16_bits(scalar::round_to_float_type(v, DataType::bf16()));
        uint64_t got = from_f64(v, 0);
        if (got != want && bad++ < 5) FAIL_CHECK("f64 " << v << ": got 0x" << std::hex << got << ", want 0x" << want);
    }
    CHECK(bad == 0);
    CHECK((from_f64(NAN, 0) & 0x7fff) > 0x7f80);  // NaN stays NaN

    // Integers -> bf16: i32, i64, u64, including ties and values past 2^53.
    std::vector<int64_t> ints = {0, 1, -1, 255, 256, 257, 258, 259, 0x1010, 0x1018, -0x1018, INT64_MIN, INT64_MAX,
                                 (int64_t{1} << 60) + (int64_t{1} << 52) + 1, (int64_t{1} << 60) + (int64_t{1} << 52)};
    for (int k = 0; k < 20000; ++k) ints.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
    auto i64c = codegen::host_conversion_for_test(DataType::i64(), DataType::bf16(), *sm80);
    auto u64c = codegen::host_conversion_for_test(DataType::u64(), DataType::bf16(), *sm80);
    auto i32c = codegen::host_conversion_for_test(DataType::i32(), DataType::bf16(), *sm80);
    bad = 0;
    for (int64_t v : ints) {
        uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        auto check = [&](const char* what, uint64_t got, double want) {
            if (got != bf16_bits(want) && bad++ < 5)
                FAIL_CHECK(what << " " << v << ": got 0x" << std::hex << got << ", want 0x" << bf16_bits(want));
        };
        check("i64", i64c(0, v), int_to_bf16(v < 0, mag));
        check("u64", u64c(0, v), int_to_bf16(false, static_cast<uint64_t>(v)));
        int32_t w = static_cast<int32_t>(v);
        uint64_t wmag = w < 0 ? 0 - static_cast<uint64_t>(static_cast<int64_t>(w)) : static_cast<uint64_t>(w);
        check("i32", i32c(0, w), int_to_bf16(w < 0, wmag));
    }
    CHECK(bad == 0);
}

TEST_CASE("nvptx: warp shuffles are shfl.sync with a full membermask, 64-bit values in two", "[nvptx][shuffle]") {
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        std::vector<ir::PrimFunc> funcs;
        for (auto ty : kShuffleTypes) funcs.push_back(shuffle_kernel(ty));
        std::string ptx = codegen::compile_nvptx(funcs, *t, codegen::NvptxOutput::Ptx, "test.tile");
        INFO(arch);
        for (auto& f : funcs) {
            size_t begin = ptx.find(".entry " + f.name + "(");
            REQUIRE(begin != std::string::npos);
            size_t end = ptx.find(".entry ", begin + 1);
            std::string body = ptx.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
            INFO(f.name << "\n" << body);
            size_t per = f.params[0].buffer->dtype.bits == 64 ? 2 : 1;
            // mode, value, lane operand, c (0x1f = 31; 0 for up), membermask -1.
            CHECK(count(body, "shfl.sync.bfly.b32") == per);
            CHECK(count(body, "shfl.sync.up.b32") == per);
            CHECK(count(body, "shfl.sync.down.b32") == per);
            CHECK(count(body, "shfl.sync.idx.b32") == per);
            CHECK(contains(body, ", 1, 31, -1;"));
            CHECK(contains(body, ", 1, 0, -1;"));
            CHECK(contains(body, ", 0, 31, -1;"));
        }
        if (codegen::ptxas_path().empty()) continue;
        std::string cubin = codegen::assemble_cubin(ptx, *t);
        CHECK(cubin.substr(0, 4) == "\x7f" "ELF");
    }
}

TEST_CASE("nvptx: the software fp8 conversions (no cvt for fp8 before sm_89) round as the reference encoders",
          "[nvptx][convert]") {
    // sm_80 has no cvt for .e4m3x2 / .e5m2x2 (PTX ISA, cvt: sm_89 and later), so the
    // backend's integer-arithmetic encoder and decoder run here, compiled for the host.
    const auto* sm80 = target::find_gpu_target("sm_80");
    REQUIRE_FALSE(sm80->cvt_fp8.available);
    REQUIRE(target::find_gpu_target("sm_89")->cvt_fp8.available);
    using ir::DataType;
    std::mt19937_64 rng(8);
    std::vector<double> values = {0.0, -0.0, 448.0, 464.0, 465.0, 479.0, 480.0, -500.0, 57344.0, 61439.0,
                                  61440.0, -61440.0, 1e30, -1e30, INFINITY, -INFINITY, 0x1p-9, 0x1p-10,
                                  0x1.8p-10, 0x1p-16, 0x1p-17, 0x1.8p-17, 0x1p-126, 3e-39};
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> ex(-20, 18);
    for (int k = 0; k < 20000; ++k)
        values.push_back(static_cast<float>((k & 1 ? -1 : 1) * std::ldexp(mant(rng), ex(rng))));
    // Every midpoint between neighbouring fp8 values, and f32 values one ulp either side.
    for (unsigned code = 0; code < 0x7f; ++code) {
        for (bool e4 : {true, false}) {
            double lo = e4 ? scalar::f8e4m3_value(uint8_t(code)) : scalar::f8e5m2_value(uint8_t(code));
            double hi = e4 ? scalar::f8e4m3_value(uint8_t(code + 1)) : scalar::f8e5m2_value(uint8_t(code + 1));
            if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
            float mid = static_cast<float>((lo + hi) / 2);
            values.push_back(mid);
            values.push_back(std::nextafter(mid, 0.0f));
            values.push_back(std::nextafter(mid, INFINITY));
        }
    }
    struct Fmt {
        DataType t;
        uint8_t (*encode)(double);
        double (*decode)(uint8_t);
    };
    const Fmt fmts[] = {{DataType::f8e4m3(), scalar::f8e4m3_bits, scalar::f8e4m3_value},
                        {DataType::f8e5m2(), [](double v) { return scalar::f8e5m2_bits(v); }, scalar::f8e5m2_value}};
    for (const Fmt& f : fmts) {
        INFO(f.t.str());
        // f32 -> fp8: the byte stored.
        auto enc = codegen::host_conversion_for_test(DataType::f32(), f.t, *sm80);
        int bad = 0;
        for (double v : values) {
            uint64_t want = f.encode(v), got = enc(v, 0);
            if (got != want && bad++ < 5) FAIL_CHECK("f32 " << v << ": got 0x" << std::hex << got << ", want 0x" << want);
        }
        CHECK(bad == 0);
        CHECK(std::isnan(f.decode(static_cast<uint8_t>(enc(NAN, 0)))));
        // fp8 -> f32: every byte's value read back (the JIT rounds the input to the
        // format first, exact for these values, then converts).
        auto dec = codegen::host_conversion_for_test(f.t, DataType::f32(), *sm80);
        bad = 0;
        for (unsigned code = 0; code < 256; ++code) {
            double want = f.decode(uint8_t(code));
            uint32_t bits = static_cast<uint32_t>(dec(want, 0));
            float got;
            std::memcpy(&got, &bits, 4);
            bool same = std::isnan(want) ? std::isnan(got) : static_cast<double>(got) == want;
            if (!same && bad++ < 5) FAIL_CHECK("byte 0x" << std::hex << code << ": got " << got << ", want " << want);
        }
        CHECK(bad == 0);
        // f64 and integers -> fp8 round once (through f32 rounded to odd).
        auto from_f64 = codegen::host_conversion_for_test(DataType::f64(), f.t, *sm80);
        auto from_i32 = codegen::host_conversion_for_test(DataType::i32(), f.t, *sm80);
        bad = 0;
        for (double v : {448.00000000001, 464.0 + 1e-9, 464.0 - 1e-9, 0x1.4p-9 + 1e-20, 61440.0 - 1e-9, 1e300})
            if (from_f64(v, 0) != f.encode(v) && bad++ < 5) FAIL_CHECK("f64 " << v);
        for (int64_t i : {0, 1, -3, 17, 19, 449, 463, 465, 60000, 61440, 100000, -100000})
            if (from_i32(0, i) != f.encode(static_cast<double>(i)) && bad++ < 5) FAIL_CHECK("i32 " << i);
        CHECK(bad == 0);
    }
}
