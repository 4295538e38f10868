// tile_hip_launch: the HIP runtime (libamdhip64) loaded at run time with dlopen, a
// module loaded once per device from the HSACO whose target ID suits the device, and
// hipModuleLaunchKernel. The declarations below are this file's own, written from HIP's
// documented signatures and enum values; no HIP header is needed to build the runtime.
#include <cstring>
#include <string>
#include <vector>

#include "gpu_module.h"
#include "tile/runtime.h"

namespace tilec::runtime::gpu {
namespace {

using hipError_t = int;
using hipModule_t = void*;
using hipFunction_t = void*;
using hipStream_t = void*;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorNoBinaryForGpu = 209;
constexpr hipError_t hipErrorNotFound = 500;

// hipDeviceProp_t is a large struct whose layout changed in ROCm 6 (hipGetDeviceProperties
// became a macro for hipGetDevicePropertiesR0600). Only gcnArchName is needed, so the
// struct is filled into a generous buffer and that field read at its offset in each
// layout (LP64): 1160 in hipDeviceProp_tR0600, 396 in the ROCm 5 (R0000) layout.
constexpr size_t kPropsBuffer = 8192;  // the R0600 struct is 1472 bytes
constexpr size_t kArchNameOffsetR0600 = 1160;
constexpr size_t kArchNameOffsetR0000 = 396;
constexpr size_t kArchNameSize = 256;
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "the hipDeviceProp_t offsets above are for LP64");

struct HipDriver {
    tile_status status = TILE_SUCCESS;
    std::string message;

    hipError_t (*hipInit)(unsigned int) = nullptr;
    const char* (*hipGetErrorName)(hipError_t) = nullptr;
    const char* (*hipGetErrorString)(hipError_t) = nullptr;
    hipError_t (*hipGetDevice)(int*) = nullptr;
    hipError_t (*hipGetDeviceProperties)(void*, int) = nullptr;
    size_t arch_name_offset = 0;  // of gcnArchName in what hipGetDeviceProperties fills
    hipError_t (*hipModuleLoadData)(hipModule_t*, const void*) = nullptr;
    hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*) = nullptr;
    hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned int, unsigned int, unsigned int, unsigned int,
                                        unsigned int, unsigned int, unsigned int, hipStream_t, void**,
                                        void**) = nullptr;
};

std::string describe(const HipDriver& d, hipError_t result) {
    const char* name = d.hipGetErrorName ? d.hipGetErrorName(result) : nullptr;
    const char* text = d.hipGetErrorString ? d.hipGetErrorString(result) : nullptr;
    return describe_result("hipError_t", result, name, text);
}

void load_driver(HipDriver* d) {
    static const char* const kDefaults[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                            "libamdhip64.so.5", nullptr};
    std::string error;
    void* library = open_driver_library("TILE_HIP_LIBRARY", kDefaults, &error);
    if (library == nullptr) {
        d->status = TILE_ERROR_NO_DRIVER;
        d->message = "no HIP runtime found (" + error + ")";
        return;
    }
    std::string missing;
    bind_symbol(library, "hipInit", &d->hipInit, &missing);
    bind_symbol(library, "hipGetErrorName", &d->hipGetErrorName, &missing);
    bind_symbol(library, "hipGetErrorString", &d->hipGetErrorString, &missing);
    bind_symbol(library, "hipGetDevice", &d->hipGetDevice, &missing);
    bind_symbol(library, "hipModuleLoadData", &d->hipModuleLoadData, &missing);
    bind_symbol(library, "hipModuleGetFunction", &d->hipModuleGetFunction, &missing);
    bind_symbol(library, "hipModuleLaunchKernel", &d->hipModuleLaunchKernel, &missing);
    // The versioned name first: in ROCm >= 6 the plain one keeps the old layout.
    std::string no_r0600;
    if (bind_symbol(library, "hipGetDevicePropertiesR0600", &d->hipGetDeviceProperties, &no_r0600))
        d->arch_name_offset = kArchNameOffsetR0600;
    else if (bind_symbol(library, "hipGetDeviceProperties", &d->hipGetDeviceProperties, &missing))
        d->arch_name_offset = kArchNameOffsetR0000;
    if (!missing.empty()) {
        d->status = TILE_ERROR_NO_DRIVER;
        d->message = "the HIP runtime library lacks " + missing + " (too old, or not libamdhip64)";
        return;
    }
    hipError_t result = d->hipInit(0);
    if (result != hipSuccess) {
        bool no_device = result == hipErrorNoDevice || result == hipErrorInvalidDevice;
        d->status = no_device ? TILE_ERROR_NO_DEVICE : TILE_ERROR_NO_DRIVER;
        d->message = (no_device ? "no HIP device: hipInit failed: " : "the HIP runtime cannot be initialised: "
                                                                      "hipInit failed: ") +
                     describe(*d, result);
    }
}

HipDriver& driver() {
    static HipDriver* d = [] {
        auto* fresh = new HipDriver();
        load_driver(fresh);
        return fresh;
    }();
    return *d;
}

tile_status map_status(hipError_t result, tile_status otherwise) {
    if (result == hipErrorOutOfMemory) return TILE_ERROR_OUT_OF_MEMORY;
    if (result == hipErrorNoDevice || result == hipErrorInvalidDevice) return TILE_ERROR_NO_DEVICE;
    return otherwise;
}

tile_status fail_call(const Launch& l, HipDriver& d, tile_status status, const char* call, hipError_t result) {
    return launch_failure(l, map_status(result, status),
                          std::string(call) + " failed: " + describe(d, result));
}

tile_status load_module(const Launch& l, HipDriver& d, int device, LoadedModule* out) {
    std::vector<unsigned char> props(kPropsBuffer, 0);
    hipError_t result = d.hipGetDeviceProperties(props.data(), device);
    if (result != hipSuccess) return fail_call(l, d, TILE_ERROR_DRIVER, "hipGetDeviceProperties", result);
    char arch[kArchNameSize + 1] = {};
    std::memcpy(arch, props.data() + d.arch_name_offset, kArchNameSize);
    if (std::strncmp(arch, "gfx", 3) != 0)
        return launch_failure(l, TILE_ERROR_DRIVER,
                              "hipGetDeviceProperties gave no gcnArchName starting with \"gfx\" for device " +
                                  decimal(device) + " (an unexpected hipDeviceProp_t layout)");

    int index = select_hip_image(l.images, arch);
    if (index < 0)
        return tile_set_error(TILE_ERROR_NO_IMAGE_FOR_DEVICE, "%s",
                              no_hip_image_message(l.module_name, l.kernel, l.images, arch).c_str());
    const tile_gpu_image& image = image_at(l.module, static_cast<size_t>(index));
    hipModule_t handle = nullptr;
    result = d.hipModuleLoadData(&handle, image.data);
    if (result != hipSuccess) {
        tile_status status = result == hipErrorNoBinaryForGpu || result == hipErrorInvalidImage
                                 ? TILE_ERROR_NO_IMAGE_FOR_DEVICE
                                 : TILE_ERROR_DRIVER;
        return launch_failure(l, map_status(result, status),
                              "hipModuleLoadData failed on the " + std::string(image.arch) + " image (device " +
                                  arch + "): " + describe(d, result));
    }
    out->handle = handle;
    out->image = index;
    return TILE_SUCCESS;
}

tile_status launch(const Launch& l, void* stream, const uint32_t grid[3], const uint32_t block[3],
                   size_t dynamic_smem, void** args) {
    HipDriver& d = driver();
    if (d.status != TILE_SUCCESS) return tile_set_error(d.status, "%s", d.message.c_str());

    int device = 0;
    hipError_t result = d.hipGetDevice(&device);
    if (result != hipSuccess) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "hipGetDevice", result);

    ModuleCache* cache = module_cache(l);
    if (cache == nullptr) return TILE_ERROR_INVALID_ARGUMENT;
    ModuleLoader loader;
    loader.backend = Backend::hip;
    loader.key = static_cast<uint64_t>(device);
    loader.load_module = [&](LoadedModule* out) { return load_module(l, d, device, out); };
    loader.get_function = [&](const LoadedModule& module, void** handle) {
        hipError_t lookup = d.hipModuleGetFunction(handle, module.handle, l.kernel);
        if (lookup == hipSuccess) return TILE_SUCCESS;
        std::string what = "hipModuleGetFunction failed: " + describe(d, lookup);
        if (lookup == hipErrorNotFound) what += no_kernel_note(l, module);
        return launch_failure(l, map_status(lookup, TILE_ERROR_DRIVER), what);
    };
    hipFunction_t function = nullptr;
    {
        std::lock_guard<std::mutex> lock(cache->mutex);
        LoadedFunction* f = nullptr;
        if (tile_status s = cached_function(*cache, l, loader, &f); s != TILE_SUCCESS) return s;
        function = f->handle;
    }
    result = d.hipModuleLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                     static_cast<unsigned int>(dynamic_smem), stream, args, nullptr);
    if (result != hipSuccess)
        return launch_failure(l, map_status(result, TILE_ERROR_LAUNCH),
                              "hipModuleLaunchKernel failed: " + describe(d, result) +
                                  launch_config(grid, block, dynamic_smem));
    return TILE_SUCCESS;
}

}  // namespace
}  // namespace tilec::runtime::gpu

extern "C" TILE_API tile_status tile_hip_launch(tile_gpu_module* module, const char* kernel, void* stream,
                                                const uint32_t grid[3], const uint32_t block[3],
                                                size_t dynamic_smem, void** args) noexcept {
    using namespace tilec::runtime::gpu;
    return checked_launch("tile_hip_launch", launch, module, kernel, stream, grid, block, dynamic_smem, args);
}
