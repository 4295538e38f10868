// Which device image of a tile_gpu_module a GPU can run: parsing of CUDA arch names
// ("sm_90a", "compute_80") and AMDGPU target IDs ("gfx942:sramecc+:xnack-"), the CUDA
// and HIP compatibility rules, and the message when nothing fits. Pure functions (no
// driver, no state), so that tests/runtime can check every rule without a GPU.
// Internal to libtile_runtime.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::runtime::gpu {

// The decimal digits of `value`. (Not std::to_string: its inline helper's static table
// would be exported from the shared library as a unique symbol.)
std::string decimal(long long value);

// What selection needs of one tile_gpu_image.
struct ImageInfo {
    uint32_t kind = 0;             // a tile_gpu_image_kind
    std::string_view arch;
};

// A parsed CUDA arch: "sm_86" is {8, 6, plain, sass}, "compute_90a" {9, 0, 'a', ptx}.
struct CudaArch {
    enum class Variant { plain, family /* f */, specific /* a */ };
    int major = 0;
    int minor = 0;
    Variant variant = Variant::plain;
    bool ptx = false;
};

// "sm_" or "compute_", then two or three digits (the last is the minor version), then an
// optional 'a' or 'f'. Anything else: nullopt.
std::optional<CudaArch> parse_cuda_arch(std::string_view arch);

// Whether an image of this arch runs on a device of compute capability major.minor.
// SASS: same major and minor >= the image's ('a': exactly the same). PTX: any device at
// or above the image's version ('a': exactly; 'f': same major, minor >= the image's).
bool cuda_arch_runs_on(const CudaArch& arch, int major, int minor);

// The index of the image to load on a device of compute capability major.minor, or -1.
// Cubins first: the highest version that runs, 'a' before 'f' before plain at equal
// versions; else PTX by the same order. Images of other kinds, or whose arch does not
// parse, are skipped. At equal rank the first listed wins.
int select_cuda_image(const std::vector<ImageInfo>& images, int major, int minor);

// A parsed AMDGPU target ID: "gfx90a:sramecc+:xnack-" is {"gfx90a", {{"sramecc", '+'},
// {"xnack", '-'}}}.
struct AmdTarget {
    std::string processor;
    std::vector<std::pair<std::string, char>> features;  // (name, '+' or '-')
};

// The processor, then ":feature+" / ":feature-" parts; nullopt if empty or malformed
// (a feature without a sign, an empty part).
std::optional<AmdTarget> parse_amd_target(std::string_view target);

// Whether code for `image` runs on `device`: the same processor, and no feature that both
// name with different signs. A feature only one of them names is compatible: the image
// says "either" or the device does not report it.
bool amd_target_runs_on(const AmdTarget& image, const AmdTarget& device);

// The index of the HSACO image for a device whose gcnArchName is `device`, or -1. Among
// the images that run, the most specific build wins: +1 for each feature it sets that the
// device reports (with the same sign, or it would not run), -1 for each the device does
// not report; the first listed at a tie.
int select_hip_image(const std::vector<ImageInfo>& images, std::string_view device);

// "sm_80, sm_90a, compute_80": the archs of the images of the given kinds, in order, or
// "no images" when there are none.
std::string list_archs(const std::vector<ImageInfo>& images, uint32_t kind_a, uint32_t kind_b);

// The TILE_ERROR_NO_IMAGE_FOR_DEVICE messages.
std::string no_cuda_image_message(std::string_view module, std::string_view kernel,
                                  const std::vector<ImageInfo>& images, int major, int minor);
std::string no_hip_image_message(std::string_view module, std::string_view kernel,
                                 const std::vector<ImageInfo>& images, std::string_view device);

}  // namespace tilec::runtime::gpu
