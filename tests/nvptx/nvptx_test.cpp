// The NVPTX backend on the element-wise kernels: PTX for every listed sm arch, with the
// kernel entry, thread and block indices, global loads and stores, and cubins from
// ptxas. These are what `tilec --emit=ptx|cubin` produce, without the driver.
#include <catch2/catch.hpp>

#include <iostream>

#include "codegen/nvptx_backend.h"
#include "interp/testing.h"
#include "lower/thread_lower.h"
#include "target/target.h"

using namespace tilec;

namespace {

const char* const kArchs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

// The element-wise kernels: (file, exports).
struct Case {
    std::string file;
    std::vector<std::string> exports;
};
std::vector<Case> cases() {
    std::string root = TILEC_SOURCE_DIR;
    return {{root + "/stdlib/kernels/vector_add.tile", {"vector_add_f32", "vector_add_f16", "vector_add_bf16"}},
            {root + "/samples/saxpy.tile", {"saxpy_f32", "saxpy_f16"}},
            {root + "/stdlib/kernels/activations.tile",
             {"gelu_f16", "gelu_bf16", "gelu_f32", "silu_f16", "silu_bf16", "silu_f32", "swiglu_f16", "swiglu_bf16"}}};
}

std::vector<ir::PrimFunc> thread_level(const Case& c, const target::GpuTarget& t) {
    auto compiled = interp::testing::compile_file(c.file);
    INFO(compiled.diagnostics);
    REQUIRE(compiled.ok);
    std::vector<ir::PrimFunc> out;
    for (auto& name : c.exports) {
        const ir::PrimFunc* f = compiled.find(name);
        INFO(name);
        REQUIRE(f != nullptr);
        auto low = lower::lower_to_thread_level(*f, t, nullptr);
        REQUIRE(low.has_value());
        REQUIRE(lower::verify_thread_level(*low).empty());
        out.push_back(*low);
    }
    return out;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

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
            CHECK(contains(ptx, "ld.global"));
            CHECK(contains(ptx, "st.global"));
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
        CHECK(contains(e.what(), "ptxas -arch=sm_80 failed"));
        CHECK(contains(e.what(), "nonsense"));
    }
}
