// The AMDGPU backend on the element-wise kernels: assembly for every listed gfx target
// (kernel descriptors, wavefront size, global loads and stores), and HSACO from ld.lld
// whose AMDGPU metadata note (llvm-readelf --notes) names each kernel with its wavefront
// size and kernarg segment size. These are what `tilec --emit=amdgcn|hsaco` produce,
// without the driver. Warp shuffles of every value type become ds_bpermute_b32 (two for
// 64-bit values) addressed from the lane's mbcnt.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "codegen/amdgpu_backend.h"
#include "interp/testing.h"
#include "lower/thread_lower.h"
#include "support/diagnostics.h"
#include "target/target.h"

using namespace tilec;

namespace {

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx1100"};

struct Case {
    std::string file;
    std::vector<std::string> exports;
};
std::vector<Case> cases() {
    std::string root = TILEC_SOURCE_DIR;
    return {{root + "/stdlib/kernels/vector_add.tile", {"vector_add_f32", "vector_add_f16", "vector_add_bf16"}},
            {root + "/samples/saxpy.tile", {"saxpy_f32", "saxpy_f16"}},
            {root + "/stdlib/kernels/activations.tile",
             {"gelu_f16", "gelu_bf16", "gelu_f32", "silu_f16", "silu_bf16", "silu_f32", "swiglu_f16", "swiglu_bf16"}},
            // Scans through LDS; split-K gemm whose only global writes are atomics.
            {root + "/stdlib/kernels/cumsum.tile", {"cumsum_f32", "cumsum_f16", "cumsum_bf16", "cumsum_f32_reverse"}},
            {root + "/stdlib/kernels/gemm_splitk.tile", {"gemm_splitk_f16", "gemm_splitk_bf16", "gemm_splitk_f16_s8"}}};
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

// The explicit kernarg bytes of a kernel as the ABI lays them out: each parameter at its
// natural alignment, the total rounded up to 4 (LLVM's kernarg segment size with no
// hidden arguments).
int64_t kernarg_bytes(const ir::PrimFunc& f) {
    int64_t off = 0;
    for (auto& p : f.params) {
        int64_t size = 8;
        if (p.kind == ir::ParamKind::Scalar) {
            auto t = p.var->type;
            if (t.is_bool()) size = 4;
            else if (t.is_integer()) size = t.bits <= 8 ? 1 : t.bits / 8;
            else size = t.kind == ir::TypeKind::Float && t.bits == 64 ? 8 : 4;
        }
        off = (off + size - 1) / size * size + size;
    }
    return (off + 3) / 4 * 4;
}

std::string run_readelf_notes(const std::string& hsaco) {
    char path[] = "/tmp/tilec-amdgpu-test-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    {
        std::ofstream f(path, std::ios::binary);
        f << hsaco;
    }
    std::string cmd = std::string(TILEC_LLVM_READELF) + " --notes " + path + " 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int status = pclose(p);
    std::remove(path);
    INFO(out);
    REQUIRE(status == 0);
    return out;
}

// The metadata of each kernel in readelf's YAML rendering of the note: for every list
// item of amdhsa.kernels, its scalar keys (".name", ".wavefront_size", ...) and values.
std::map<std::string, std::map<std::string, std::string>> kernels_in_notes(const std::string& notes) {
    std::map<std::string, std::map<std::string, std::string>> out;
    std::istringstream in(notes);
    std::string line;
    bool in_kernels = false;
    size_t item_indent = std::string::npos;
    std::map<std::string, std::string> cur;
    auto flush = [&] {
        if (cur.count(".name")) out[cur[".name"]] = cur;
        cur.clear();
    };
    while (std::getline(in, line)) {
        size_t ind = line.find_first_not_of(' ');
        if (ind == std::string::npos) continue;
        std::string body = line.substr(ind);
        if (body.rfind("amdhsa.kernels:", 0) == 0) {
            in_kernels = true;
            continue;
        }
        if (!in_kernels) continue;
        if (body.rfind("- ", 0) == 0 && (item_indent == std::string::npos || ind == item_indent)) {
            item_indent = ind;
            flush();
            body = body.substr(2);
            ind += 2;
        } else if (item_indent != std::string::npos && ind <= item_indent) {
            if (body.rfind("amdhsa.", 0) == 0 || body.rfind("...", 0) == 0) {
                flush();
                in_kernels = false;
            }
            continue;
        }
        // Only the item's own keys (one level below the "- "), not those of .args.
        if (ind != item_indent + 2) continue;
        auto colon = body.find(':');
        if (colon == std::string::npos) continue;
        std::string key = body.substr(0, colon);
        std::string value = body.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        cur[key] = value;
    }
    flush();
    return out;
}

}  // namespace

TEST_CASE("amdgpu: assembly of every element-wise export for every gfx target", "[amdgpu]") {
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        for (const auto& c : cases()) {
            INFO(arch << " " << c.file);
            auto funcs = thread_level(c, *t);
            std::string s = codegen::compile_amdgpu(funcs, *t, codegen::AmdgpuOutput::Assembly, "test.tile");
            INFO(s.substr(0, 4000));
            CHECK(contains(s, ".amdgcn_target \"amdgcn-amd-amdhsa--" + std::string(arch)));
            for (auto& f : funcs) {
                CHECK(contains(s, ".amdhsa_kernel " + f.name + "\n"));
                CHECK(contains(s, ".name:           " + f.name + "\n"));
            }
            CHECK(contains(s, "global_load"));
            CHECK((contains(s, "global_store") || contains(s, "global_atomic")));
            if (t->warp_size == 32)
                CHECK(contains(s, ".amdhsa_wavefront_size32 1"));
            else
                CHECK_FALSE(contains(s, ".amdhsa_wavefront_size32 1"));
        }
    }
}

TEST_CASE("amdgpu: HSACO of every element-wise export for every gfx target, with its metadata note",
          "[amdgpu][hsaco]") {
    if (codegen::ld_lld_path().empty()) {
        std::cout << "SKIPPED: ld.lld not found (configure with -DTILEC_LD_LLD=/path/to/ld.lld)\n";
        return;
    }
    if (std::string(TILEC_LLVM_READELF).empty()) {
        std::cout << "SKIPPED: llvm-readelf not found\n";
        return;
    }
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        for (const auto& c : cases()) {
            INFO(arch << " " << c.file);
            auto funcs = thread_level(c, *t);
            std::string hsaco = codegen::compile_hsaco(funcs, *t, "test.tile");
            REQUIRE(hsaco.size() > 4);
            CHECK(hsaco.substr(0, 4) == "\x7f" "ELF");
            std::string notes = run_readelf_notes(hsaco);
            INFO(notes.substr(0, 6000));
            CHECK(contains(notes, "NT_AMDGPU_METADATA"));
            CHECK(contains(notes, "amdhsa.target:   amdgcn-amd-amdhsa--" + std::string(arch)));
            auto kernels = kernels_in_notes(notes);
            CHECK(kernels.size() == funcs.size());
            for (auto& f : funcs) {
                INFO(f.name);
                REQUIRE(kernels.count(f.name));
                auto& k = kernels[f.name];
                CHECK(k[".symbol"] == f.name + ".kd");
                CHECK(k[".wavefront_size"] == std::to_string(t->warp_size));
                CHECK(k[".kernarg_segment_size"] == std::to_string(kernarg_bytes(f)));
                CHECK(k[".max_flat_workgroup_size"] == std::to_string(f.threads));
            }
        }
    }
}

TEST_CASE("amdgpu: atomic_add is the hardware f32 atomic add on every gfx target", "[amdgpu]") {
    std::string root = TILEC_SOURCE_DIR;
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        INFO(arch);
        auto funcs = thread_level({root + "/stdlib/kernels/gemm_splitk.tile", {"gemm_splitk_f16"}}, *t);
        std::string s = codegen::compile_amdgpu(funcs, *t, codegen::AmdgpuOutput::Assembly, "test.tile");
        // The no-return global atomic (no glc: the old value is not needed), no
        // compare-and-swap loop.
        CHECK(contains(s, "global_atomic_add_f32 v"));
        CHECK_FALSE(contains(s, "cmpswap"));
        CHECK_FALSE(contains(s, "global_store"));
    }
}

TEST_CASE("amdgpu: ld.lld errors are internal errors with ld.lld's output", "[amdgpu][hsaco]") {
    if (codegen::ld_lld_path().empty()) {
        std::cout << "SKIPPED: ld.lld not found\n";
        return;
    }
    const auto* t = target::find_gpu_target("gfx942");
    try {
        (void)codegen::link_hsaco("not an object", *t);
        FAIL("no error");
    } catch (const InternalError& e) {
        CHECK(contains(e.what(), "ld.lld -shared for gfx942 failed"));
        CHECK(contains(e.what(), "kernel.o"));
    }
}

TEST_CASE("amdgpu: an NVIDIA target is refused", "[amdgpu]") {
    const auto* t = target::find_gpu_target("sm_80");
    CHECK_THROWS_AS(codegen::compile_amdgpu({}, *t, codegen::AmdgpuOutput::Assembly, "x"), InternalError);
}

namespace {

// A thread-level kernel of 128 threads doing every warp shuffle on values of `t`:
// Y[4 tx + 0..3] = shfl_xor(X[tx], 1), shfl_up(X[tx], 1), shfl_down(X[tx], 1),
// shfl_idx(X[tx], 0).
ir::PrimFunc shuffle_kernel(ir::DataType t) {
    ir::PrimFunc f;
    auto tx = ir::make_thread_idx_var(0);
    auto x = ir::make_tensor("X", t, {ir::make_int(1024)}, ir::Access::In);
    auto y = ir::make_tensor("Y", t, {ir::make_int(4096)}, ir::Access::Out);
    f.name = "shuffles_" + t.str();
    f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
    f.grid = {ir::make_int(1)};
    f.threads = 128;
    f.block_idx = ir::make_block_idx_vars();
    f.attrs = {{"level", "thread"}};
    std::vector<ir::Stmt> stores;
    int k = 0;
    for (auto op : {ir::CallOp::ShflXor, ir::CallOp::ShflUp, ir::CallOp::ShflDown, ir::CallOp::ShflIdx}) {
        auto v = ir::make_shuffle(op, ir::make_load(x, {tx}), ir::make_int(op == ir::CallOp::ShflIdx ? 0 : 1, ir::DataType::i32()));
        stores.push_back(ir::make_store(y, {ir::add(ir::mul(tx, ir::make_int(4)), ir::make_int(k++))}, v));
    }
    f.body = ir::make_seq(stores);
    return f;
}

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("amdgpu: warp shuffles are ds_bpermute_b32 on the lane from mbcnt; HSACO builds", "[amdgpu][shuffle]") {
    const ir::DataType types[] = {ir::DataType::f32(), ir::DataType::f16(), ir::DataType::bf16(), ir::DataType::f64(),
                                  ir::DataType::i32(), ir::DataType::i16(), ir::DataType::u8(),  ir::DataType::i64(),
                                  ir::DataType::u64(), ir::DataType::boolean()};
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        std::vector<ir::PrimFunc> funcs;
        for (auto ty : types) funcs.push_back(shuffle_kernel(ty));
        std::string s = codegen::compile_amdgpu(funcs, *t, codegen::AmdgpuOutput::Assembly, "test.tile");
        INFO(arch);
        for (auto& f : funcs) {
            size_t begin = s.find(f.name + ":\n");
            REQUIRE(begin != std::string::npos);
            size_t end = s.find("s_endpgm", begin);
            REQUIRE(end != std::string::npos);
            std::string body = s.substr(begin, end - begin);
            INFO(f.name << "\n" << body);
            // Four shuffles, two bpermutes each for 64-bit values.
            CHECK(count(body, "ds_bpermute_b32") == (f.params[0].buffer->dtype.bits == 64 ? 8u : 4u));
            CHECK(contains(body, "v_mbcnt_lo_u32_b32"));
            CHECK(contains(body, "v_mbcnt_hi_u32_b32") == (t->warp_size == 64));
        }
        if (codegen::ld_lld_path().empty()) continue;
        std::string hsaco = codegen::compile_hsaco(funcs, *t, "test.tile");
        CHECK(hsaco.substr(0, 4) == "\x7f" "ELF");
    }
}
