// Image selection for GPU launches (runtime/src/gpu_select.h): CUDA arch parsing and the
// binary-compatibility rules, AMDGPU target IDs, and the messages when nothing fits.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gpu_select.h"
#include "tile/runtime.h"

using namespace tilec::runtime::gpu;

namespace {

ImageInfo cubin(const char* arch) { return {TILE_GPU_IMAGE_CUBIN, arch}; }
ImageInfo ptx(const char* arch) { return {TILE_GPU_IMAGE_PTX, arch}; }
ImageInfo hsaco(const char* arch) { return {TILE_GPU_IMAGE_HSACO, arch}; }

// The arch of the image chosen for compute capability major.minor, or "none".
std::string chosen(const std::vector<ImageInfo>& images, int major, int minor) {
    int i = select_cuda_image(images, major, minor);
    return i < 0 ? "none" : std::string(images[static_cast<size_t>(i)].arch);
}

std::string chosen_hip(const std::vector<ImageInfo>& images, const char* device) {
    int i = select_hip_image(images, device);
    return i < 0 ? "none" : std::string(images[static_cast<size_t>(i)].arch);
}

bool runs(const char* arch, int major, int minor) {
    auto parsed = parse_cuda_arch(arch);
    REQUIRE(parsed.has_value());
    return cuda_arch_runs_on(*parsed, major, minor);
}

}  // namespace

TEST_CASE("gpu_select: CUDA arch names parse", "[runtime][gpu]") {
    auto a = parse_cuda_arch("sm_86");
    REQUIRE(a);
    CHECK(a->major == 8);
    CHECK(a->minor == 6);
    CHECK(a->variant == CudaArch::Variant::plain);
    CHECK_FALSE(a->ptx);

    auto b = parse_cuda_arch("compute_90a");
    REQUIRE(b);
    CHECK(b->major == 9);
    CHECK(b->minor == 0);
    CHECK(b->variant == CudaArch::Variant::specific);
    CHECK(b->ptx);

    auto c = parse_cuda_arch("sm_100f");
    REQUIRE(c);
    CHECK(c->major == 10);
    CHECK(c->minor == 0);
    CHECK(c->variant == CudaArch::Variant::family);

    auto d = parse_cuda_arch("sm_121");
    REQUIRE(d);
    CHECK(d->major == 12);
    CHECK(d->minor == 1);

    for (const char* bad : {"", "sm_", "sm_8", "sm_8x", "sm_1000", "sm_80b", "compute_", "gfx942", "SM_80",
                            "sm_05", "sm80", "sm_a", "compute_90aa"})
        CHECK_FALSE(parse_cuda_arch(bad).has_value());
}

TEST_CASE("gpu_select: cubins run on the same major at an equal or higher minor", "[runtime][gpu]") {
    CHECK(runs("sm_80", 8, 0));
    CHECK(runs("sm_80", 8, 6));
    CHECK(runs("sm_80", 8, 9));
    CHECK_FALSE(runs("sm_80", 9, 0));
    CHECK_FALSE(runs("sm_80", 7, 5));
    CHECK_FALSE(runs("sm_86", 8, 0));
    CHECK(runs("sm_86", 8, 9));
    CHECK(runs("sm_90", 9, 0));
    CHECK_FALSE(runs("sm_90", 10, 0));
    CHECK(runs("sm_100", 10, 3));
    CHECK_FALSE(runs("sm_100", 12, 0));
}

TEST_CASE("gpu_select: arch-specific images run on exactly their compute capability", "[runtime][gpu]") {
    CHECK(runs("sm_90a", 9, 0));
    CHECK_FALSE(runs("sm_90a", 10, 0));
    CHECK_FALSE(runs("sm_90a", 8, 9));
    CHECK(runs("sm_100a", 10, 0));
    CHECK_FALSE(runs("sm_100a", 10, 3));
    CHECK(runs("compute_90a", 9, 0));
    CHECK_FALSE(runs("compute_90a", 10, 0));
}

TEST_CASE("gpu_select: family-specific images run within their major", "[runtime][gpu]") {
    CHECK(runs("sm_100f", 10, 0));
    CHECK(runs("sm_100f", 10, 3));
    CHECK_FALSE(runs("sm_100f", 12, 0));
    CHECK(runs("compute_100f", 10, 3));
    CHECK_FALSE(runs("compute_100f", 12, 0));
    CHECK_FALSE(runs("compute_103f", 10, 0));
}

TEST_CASE("gpu_select: PTX runs on every device at or above its version", "[runtime][gpu]") {
    CHECK(runs("compute_80", 8, 0));
    CHECK(runs("compute_80", 8, 6));
    CHECK(runs("compute_80", 9, 0));
    CHECK(runs("compute_80", 12, 1));
    CHECK_FALSE(runs("compute_80", 7, 5));
    CHECK_FALSE(runs("compute_86", 8, 0));
    CHECK(runs("compute_75", 8, 0));
}

TEST_CASE("gpu_select: the CUDA choice among tilec's images", "[runtime][gpu]") {
    // What issue 4 compiles: cubins for sm_80 sm_86 sm_89 sm_90 sm_90a, PTX of the lowest.
    std::vector<ImageInfo> all = {cubin("sm_80"), cubin("sm_86"), cubin("sm_89"),     cubin("sm_90"),
                                  cubin("sm_90a"), ptx("compute_80"), hsaco("gfx942")};
    CHECK(chosen(all, 8, 0) == "sm_80");
    CHECK(chosen(all, 8, 6) == "sm_86");
    CHECK(chosen(all, 8, 7) == "sm_86");
    CHECK(chosen(all, 8, 9) == "sm_89");
    CHECK(chosen(all, 9, 0) == "sm_90a");  // 'a' before plain at 9.0
    CHECK(chosen(all, 10, 0) == "compute_80");
    CHECK(chosen(all, 12, 0) == "compute_80");
    CHECK(chosen(all, 7, 5) == "none");

    std::vector<ImageInfo> two = {cubin("sm_80"), ptx("compute_80")};
    CHECK(chosen(two, 8, 6) == "sm_80");  // SASS before JIT
    CHECK(chosen(two, 9, 0) == "compute_80");

    std::vector<ImageInfo> a_only = {cubin("sm_90a")};
    CHECK(chosen(a_only, 9, 0) == "sm_90a");
    CHECK(chosen(a_only, 10, 0) == "none");

    // The highest PTX not above the device; an 'a' PTX only on its own device.
    std::vector<ImageInfo> ptxs = {ptx("compute_70"), ptx("compute_90"), ptx("compute_80"), ptx("compute_100a")};
    CHECK(chosen(ptxs, 8, 9) == "compute_80");
    CHECK(chosen(ptxs, 9, 0) == "compute_90");
    CHECK(chosen(ptxs, 10, 0) == "compute_100a");
    CHECK(chosen(ptxs, 10, 3) == "compute_90");
    CHECK(chosen(ptxs, 7, 5) == "compute_70");
    CHECK(chosen(ptxs, 6, 1) == "none");

    // Order in the module does not matter, except to break ties.
    std::vector<ImageInfo> reversed = {cubin("sm_90a"), cubin("sm_90"), cubin("sm_80")};
    CHECK(chosen(reversed, 9, 0) == "sm_90a");
    std::vector<ImageInfo> twice = {cubin("sm_80"), cubin("sm_80")};
    CHECK(select_cuda_image(twice, 8, 0) == 0);

    // Labels that do not parse, or that contradict the kind, are never chosen.
    std::vector<ImageInfo> odd = {cubin("compute_80"), ptx("sm_80"), cubin("sm_8x"), {42, "sm_80"}};
    CHECK(chosen(odd, 8, 0) == "none");
    CHECK(chosen({}, 8, 0) == "none");
}

TEST_CASE("gpu_select: AMDGPU target IDs parse", "[runtime][gpu]") {
    auto t = parse_amd_target("gfx942:sramecc+:xnack-");
    REQUIRE(t);
    CHECK(t->processor == "gfx942");
    REQUIRE(t->features.size() == 2);
    CHECK(t->features[0] == std::pair<std::string, char>{"sramecc", '+'});
    CHECK(t->features[1] == std::pair<std::string, char>{"xnack", '-'});

    auto plain = parse_amd_target("gfx1100");
    REQUIRE(plain);
    CHECK(plain->processor == "gfx1100");
    CHECK(plain->features.empty());

    for (const char* bad : {"", ":xnack+", "gfx942:", "gfx942:xnack", "gfx942::xnack+", "gfx942:+"})
        CHECK_FALSE(parse_amd_target(bad).has_value());
}

TEST_CASE("gpu_select: the HIP choice matches the processor and respects features", "[runtime][gpu]") {
    std::vector<ImageInfo> plain = {hsaco("gfx90a"), hsaco("gfx942"), hsaco("gfx1100"), cubin("sm_80")};
    CHECK(chosen_hip(plain, "gfx942") == "gfx942");
    CHECK(chosen_hip(plain, "gfx942:sramecc+:xnack-") == "gfx942");
    CHECK(chosen_hip(plain, "gfx90a:sramecc-:xnack+") == "gfx90a");
    CHECK(chosen_hip(plain, "gfx1100") == "gfx1100");
    CHECK(chosen_hip(plain, "gfx1101") == "none");  // no "close enough" between processors
    CHECK(chosen_hip(plain, "gfx940") == "none");
    CHECK(chosen_hip(plain, "") == "none");

    // A feature the image sets must not contradict the device; the most specific wins.
    std::vector<ImageInfo> featured = {hsaco("gfx942:xnack+"), hsaco("gfx942"), hsaco("gfx942:sramecc+:xnack-")};
    CHECK(chosen_hip(featured, "gfx942:sramecc+:xnack-") == "gfx942:sramecc+:xnack-");
    CHECK(chosen_hip(featured, "gfx942:sramecc+:xnack+") == "gfx942:xnack+");
    CHECK(chosen_hip(featured, "gfx942:sramecc-:xnack-") == "gfx942");
    // A device that reports no features (an older runtime) runs any build of its processor,
    // and gets the one that assumes the least.
    CHECK(chosen_hip(featured, "gfx942") == "gfx942");
    std::vector<ImageInfo> only_featured = {hsaco("gfx942:sramecc+:xnack-"), hsaco("gfx942:xnack+")};
    CHECK(chosen_hip(only_featured, "gfx942") == "gfx942:xnack+");

    std::vector<ImageInfo> xnack_on = {hsaco("gfx90a:xnack+")};
    CHECK(chosen_hip(xnack_on, "gfx90a:sramecc+:xnack-") == "none");
    CHECK(chosen_hip(xnack_on, "gfx90a:sramecc+:xnack+") == "gfx90a:xnack+");
}

TEST_CASE("gpu_select: messages name the archs compiled and the device found", "[runtime][gpu]") {
    std::vector<ImageInfo> images = {cubin("sm_80"), cubin("sm_90a"), ptx("compute_80"), hsaco("gfx942")};
    std::string cuda = no_cuda_image_message("gemm.tile", "gemm_f16", images, 7, 5);
    CHECK(cuda.find("kernel gemm_f16 (module gemm.tile)") != std::string::npos);
    CHECK(cuda.find("the module has sm_80, sm_90a, compute_80;") != std::string::npos);
    CHECK(cuda.find("compute capability 7.5 (sm_75)") != std::string::npos);
    CHECK(cuda.find("gfx942") == std::string::npos);

    std::string hip = no_hip_image_message("gemm.tile", "gemm_f16", images, "gfx1100");
    CHECK(hip.find("the module has gfx942; the device is gfx1100") != std::string::npos);

    std::vector<ImageInfo> cuda_only = {cubin("sm_80")};
    CHECK(no_hip_image_message("m", "k", cuda_only, "gfx942").find("the module has no images") !=
          std::string::npos);
    CHECK(list_archs(images, TILE_GPU_IMAGE_HSACO, TILE_GPU_IMAGE_HSACO) == "gfx942");
}
