// Image selection for GPU launches (gpu_select.h): the CUDA binary-compatibility rules and
// AMDGPU target-ID matching, as pure functions.
#include "gpu_select.h"

#include <cstdio>

#include "tile/runtime.h"

namespace tilec::runtime::gpu {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// Orders candidates: a higher compute capability first, then the more specific variant
// (an 'a' cubin uses features a plain one cannot, so it is the better build for the one
// device it runs on).
int rank(const CudaArch& a) {
    return (a.major * 10 + a.minor) * 4 + static_cast<int>(a.variant);
}

}  // namespace

std::string decimal(long long value) {
    char digits[32];
    std::snprintf(digits, sizeof(digits), "%lld", value);
    return digits;
}

std::optional<CudaArch> parse_cuda_arch(std::string_view arch) {
    CudaArch out;
    if (starts_with(arch, "sm_")) {
        arch.remove_prefix(3);
    } else if (starts_with(arch, "compute_")) {
        arch.remove_prefix(8);
        out.ptx = true;
    } else {
        return std::nullopt;
    }
    if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) {
        out.variant = arch.back() == 'a' ? CudaArch::Variant::specific : CudaArch::Variant::family;
        arch.remove_suffix(1);
    }
    if (arch.size() < 2 || arch.size() > 3) return std::nullopt;
    int value = 0;
    for (char c : arch) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    out.major = value / 10;
    out.minor = value % 10;
    if (out.major == 0) return std::nullopt;
    return out;
}

bool cuda_arch_runs_on(const CudaArch& arch, int major, int minor) {
    using V = CudaArch::Variant;
    if (arch.variant == V::specific) return major == arch.major && minor == arch.minor;
    bool same_family = major == arch.major && minor >= arch.minor;
    if (!arch.ptx || arch.variant == V::family) return same_family;
    return major > arch.major || same_family;
}

int select_cuda_image(const std::vector<ImageInfo>& images, int major, int minor) {
    for (bool ptx : {false, true}) {
        int best = -1;
        int best_rank = -1;
        for (size_t i = 0; i < images.size(); ++i) {
            uint32_t want = ptx ? TILE_GPU_IMAGE_PTX : TILE_GPU_IMAGE_CUBIN;
            if (images[i].kind != want) continue;
            auto arch = parse_cuda_arch(images[i].arch);
            // A cubin labelled compute_XY (or PTX labelled sm_XY) is a compiler bug; such
            // an image is not trusted for either role.
            if (!arch || arch->ptx != ptx || !cuda_arch_runs_on(*arch, major, minor)) continue;
            if (rank(*arch) > best_rank) {
                best_rank = rank(*arch);
                best = static_cast<int>(i);
            }
        }
        if (best >= 0) return best;
    }
    return -1;
}

std::optional<AmdTarget> parse_amd_target(std::string_view target) {
    AmdTarget out;
    size_t colon = target.find(':');
    out.processor = std::string(target.substr(0, colon));
    if (out.processor.empty()) return std::nullopt;
    while (colon != std::string_view::npos) {
        target.remove_prefix(colon + 1);
        colon = target.find(':');
        std::string_view part = target.substr(0, colon);
        if (part.size() < 2 || (part.back() != '+' && part.back() != '-')) return std::nullopt;
        out.features.emplace_back(std::string(part.substr(0, part.size() - 1)), part.back());
    }
    return out;
}

bool amd_target_runs_on(const AmdTarget& image, const AmdTarget& device) {
    if (image.processor != device.processor) return false;
    for (const auto& [name, sign] : image.features)
        for (const auto& [device_name, device_sign] : device.features)
            if (name == device_name && sign != device_sign) return false;
    return true;
}

int select_hip_image(const std::vector<ImageInfo>& images, std::string_view device) {
    auto device_target = parse_amd_target(device);
    if (!device_target) return -1;
    int best = -1;
    int best_score = 0;
    for (size_t i = 0; i < images.size(); ++i) {
        if (images[i].kind != TILE_GPU_IMAGE_HSACO) continue;
        auto target = parse_amd_target(images[i].arch);
        if (!target || !amd_target_runs_on(*target, *device_target)) continue;
        // A feature the device confirms counts for the image, one it does not report at
        // all against it (the build assumes something nobody vouched for).
        int score = 0;
        for (const auto& feature : target->features) {
            bool reported = false;
            for (const auto& device_feature : device_target->features)
                reported = reported || device_feature.first == feature.first;
            score += reported ? 1 : -1;
        }
        if (best < 0 || score > best_score) {
            best_score = score;
            best = static_cast<int>(i);
        }
    }
    return best;
}

std::string list_archs(const std::vector<ImageInfo>& images, uint32_t kind_a, uint32_t kind_b) {
    std::string out;
    for (const ImageInfo& image : images) {
        if (image.kind != kind_a && image.kind != kind_b) continue;
        if (!out.empty()) out += ", ";
        out += image.arch;
    }
    return out.empty() ? "no images" : out;
}

std::string no_cuda_image_message(std::string_view module, std::string_view kernel,
                                  const std::vector<ImageInfo>& images, int major, int minor) {
    std::string out = "kernel " + std::string(kernel) + " (module " + std::string(module) +
                      "): no CUDA image for this device: the module has " +
                      list_archs(images, TILE_GPU_IMAGE_CUBIN, TILE_GPU_IMAGE_PTX) +
                      "; the device is compute capability " + decimal(major) + "." +
                      decimal(minor) + " (sm_" + decimal(major * 10 + minor) +
                      "), which needs a cubin sm_" + decimal(major) + "x with x <= " +
                      decimal(minor) + " or PTX compute_XY with XY <= " +
                      decimal(major * 10 + minor);
    return out;
}

std::string no_hip_image_message(std::string_view module, std::string_view kernel,
                                 const std::vector<ImageInfo>& images, std::string_view device) {
    return "kernel " + std::string(kernel) + " (module " + std::string(module) +
           "): no HIP image for this device: the module has " +
           list_archs(images, TILE_GPU_IMAGE_HSACO, TILE_GPU_IMAGE_HSACO) + "; the device is " +
           std::string(device);
}

}  // namespace tilec::runtime::gpu
