// What the CUDA and HIP launchers share: checking a launch's arguments and module,
// the per-module cache of loaded modules and functions (behind tile_gpu_module::cache),
// and opening a driver library. Internal to libtile_runtime.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_select.h"
#include "tile/runtime.h"

namespace tilec::runtime::gpu {

enum class Backend { cuda, hip };

// One kernel looked up in a loaded module.
struct LoadedFunction {
    std::string name;
    void* handle = nullptr;        // CUfunction / hipFunction_t
    size_t smem_configured = 0;    // the largest dynamic shared memory it was granted
};

// A module loaded in one CUDA context or on one HIP device.
struct LoadedModule {
    Backend backend = Backend::cuda;
    uint64_t key = 0;              // CUDA context ID (or handle), HIP device ordinal
    void* handle = nullptr;        // CUmodule / hipModule_t, never unloaded
    int image = -1;                // the index of the image it was loaded from
    std::vector<LoadedFunction> functions;
};

// What tile_gpu_module::cache points to. Created at the module's first launch, never
// freed (generated modules are statics that live as long as the program).
struct ModuleCache {
    // Tells a cache made by this runtime from anything else in the slot (a cache made by
    // an incompatible runtime linked into the same process, or a slot the compiler did
    // not zero).
    static constexpr uint64_t kMagic = 0x74696c6567707531ull;  // "tilegpu1"
    uint64_t magic = kMagic;
    std::mutex mutex;                  // guards `loaded` and everything in it
    std::vector<LoadedModule> loaded;  // few entries: one per context/device in use
};

// A checked launch: the module's images as selection sees them, and names for messages.
struct Launch {
    const char* function = "";        // "tile_cuda_launch" / "tile_hip_launch"
    tile_gpu_module* module = nullptr;
    const char* module_name = "";
    const char* kernel = "";
    std::vector<ImageInfo> images;
};

// Checks the arguments of a launch (see tile/runtime.h) and fills `out`; on failure
// records the error and returns TILE_ERROR_INVALID_ARGUMENT. May throw std::bad_alloc.
tile_status check_launch(const char* function, tile_gpu_module* module, const char* kernel,
                         const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem,
                         Launch* out);

// The i-th image of a checked module (images are laid out image_size bytes apart).
const tile_gpu_image& image_at(const tile_gpu_module* module, size_t i);

// The module's cache, created on first use (thread-safe: the first to publish wins). On
// failure records the error and returns nullptr. May throw std::bad_alloc.
ModuleCache* module_cache(const Launch& launch);

// dlopen of the library named by the environment variable `env` if it is set and not
// empty, else of the first of `defaults` (a NULL-terminated list) that loads. On failure
// returns nullptr and sets *error to "<name>: <dlerror>" for the first name tried (the
// most useful one to report).
void* open_driver_library(const char* env, const char* const* defaults, std::string* error);

// A PTX image as the driver wants it: NUL-terminated. Returns the image's own bytes when
// they already end in NUL, else a copy in *storage.
const void* nul_terminated(const tile_gpu_image& image, std::string* storage);

}  // namespace tilec::runtime::gpu
