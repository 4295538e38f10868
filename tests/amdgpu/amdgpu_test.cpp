// The AMDGPU backend on the element-wise kernels: assembly for every listed gfx target
// (kernel descriptors, wavefront size, global loads and stores), and HSACO from ld.lld
// whose AMDGPU metadata note (llvm-readelf --notes) names each kernel with its wavefront
// size and kernarg segment size. These are what `tilec --emit=amdgcn|hsaco` produce,
// without the driver. Warp shuffles of every value type become ds_bpermute_b32 (two for
// 64-bit values) addressed from the lane's mbcnt.
#include <catch2/catch.hpp>

#include <elf.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "codegen/amdgpu_backend.h"
#include "gpu_common/gpu_cases.h"
#include "support/diagnostics.h"
#include "target/target.h"

using namespace tilec;
using namespace tilec::gpu_test;

namespace {

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx1100"};

// Every stdlib kernel group the AMDGPU path covers.
std::vector<Case> cases() { return joined({elementwise_cases(), scan_and_atomic_cases()}); }

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

// The bytes of each sized symbol of an ELF64 file (a kernel's code, its descriptor
// NAME.kd), read from its symbol table. A descriptor's code entry offset (bytes 16..23,
// kernel_code_entry_byte_offset) depends on where the linker put the code: zeroed.
std::map<std::string, std::string> symbol_bytes(const std::string& elf) {
    std::map<std::string, std::string> out;
    REQUIRE(elf.size() > sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, elf.data(), sizeof eh);
    REQUIRE(eh.e_shoff + eh.e_shnum * sizeof(Elf64_Shdr) <= elf.size());
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    std::memcpy(sections.data(), elf.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
    for (auto& sec : sections) {
        if (sec.sh_type != SHT_SYMTAB) continue;
        const Elf64_Shdr& strtab = sections.at(sec.sh_link);
        for (size_t j = 0; j < sec.sh_size / sizeof(Elf64_Sym); ++j) {
            Elf64_Sym sym;
            std::memcpy(&sym, elf.data() + sec.sh_offset + j * sizeof sym, sizeof sym);
            if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections.size() || sym.st_size == 0) continue;
            std::string name = elf.data() + strtab.sh_offset + sym.st_name;
            const Elf64_Shdr& home = sections[sym.st_shndx];
            std::string bytes = elf.substr(home.sh_offset + (sym.st_value - home.sh_addr), sym.st_size);
            if (name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0 && bytes.size() >= 24)
                std::fill(bytes.begin() + 16, bytes.begin() + 24, '\0');
            out[name] = bytes;
        }
    }
    return out;
}

TEST_CASE(
    "amdgpu: exports compiled to their own objects link into one HSACO with one metadata note, each kernel's "
    "code as in one module",
    "[amdgpu][hsaco]") {
    if (codegen::ld_lld_path().empty() || std::string(TILEC_LLVM_READELF).empty()) {
        std::cout << "SKIPPED: ld.lld or llvm-readelf not found\n";
        return;
    }
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        std::vector<ir::PrimFunc> funcs;
        for (const auto& c : cases())
            for (auto& f : thread_level(c, *t)) funcs.push_back(std::move(f));
        funcs.resize(std::min<size_t>(funcs.size(), 6));
        REQUIRE(funcs.size() > 2);
        std::vector<std::string> bitcode, objects;
        for (auto& f : funcs) {
            bitcode.push_back(codegen::amdgpu_optimized_bitcode(f, *t, "test.tile"));
            objects.push_back(codegen::compile_amdgpu_optimized({bitcode.back()}, *t,
                                                                codegen::AmdgpuOutput::Object, "test.tile"));
        }
        std::string joined = codegen::link_hsaco(objects, *t);
        std::string whole = codegen::link_hsaco(
            codegen::compile_amdgpu_optimized(bitcode, *t, codegen::AmdgpuOutput::Object, "test.tile"), *t);
        INFO(arch);
        std::string notes = run_readelf_notes(joined);
        CHECK(count(notes, "NT_AMDGPU_METADATA") == 1u);
        CHECK(notes == run_readelf_notes(whole));
        auto resources = codegen::amdgpu_resources(joined, *t);
        REQUIRE(resources.size() == funcs.size());
        for (size_t i = 0; i < funcs.size(); ++i) CHECK(resources[i].kernel == funcs[i].name);
        auto mine = symbol_bytes(joined), theirs = symbol_bytes(whole);
        CHECK(mine.size() == 2 * funcs.size());  // each kernel and its descriptor
        for (auto& f : funcs) {
            INFO(f.name);
            REQUIRE(mine.count(f.name));
            REQUIRE(mine.count(f.name + ".kd"));
            CHECK(mine[f.name] == theirs[f.name]);
            CHECK(mine[f.name + ".kd"] == theirs[f.name + ".kd"]);
        }
    }
}

TEST_CASE("amdgpu: objects of other targets do not join", "[amdgpu][hsaco]") {
    if (codegen::ld_lld_path().empty()) {
        std::cout << "SKIPPED: ld.lld not found\n";
        return;
    }
    const auto* gfx942 = target::find_gpu_target("gfx942");
    const auto* gfx90a = target::find_gpu_target("gfx90a");
    auto object = [](const target::GpuTarget& t) {
        auto funcs = thread_level(cases().front(), t);
        return codegen::compile_amdgpu(funcs, t, codegen::AmdgpuOutput::Object, "test.tile");
    };
    try {
        (void)codegen::link_hsaco(std::vector<std::string>{object(*gfx942), object(*gfx90a)}, *gfx942);
        FAIL("no error");
    } catch (const InternalError& e) {
        CHECK(contains(e.what(), "metadata notes do not merge"));
    }
}

TEST_CASE("amdgpu: atomic_add is the hardware f32 atomic add on every gfx target", "[amdgpu]") {
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        INFO(arch);
        auto funcs = thread_level({source_path("stdlib/kernels/gemm_splitk.tile"), {"gemm_splitk_f16"}}, *t);
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
        CHECK(contains(e.what(), "kernel0.o"));  // the first object, as ld.lld names it
    }
}

TEST_CASE("amdgpu: an NVIDIA target is refused", "[amdgpu]") {
    const auto* t = target::find_gpu_target("sm_80");
    CHECK_THROWS_AS(codegen::compile_amdgpu({}, *t, codegen::AmdgpuOutput::Assembly, "x"), InternalError);
}

TEST_CASE("amdgpu: warp shuffles are ds_bpermute_b32 on the lane from mbcnt; HSACO builds", "[amdgpu][shuffle]") {
    for (const char* arch : kArchs) {
        const auto* t = target::find_gpu_target(arch);
        REQUIRE(t != nullptr);
        std::vector<ir::PrimFunc> funcs;
        for (auto ty : kShuffleTypes) funcs.push_back(shuffle_kernel(ty));
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
