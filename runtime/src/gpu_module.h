// What the CUDA and HIP launchers share: checking a launch's arguments and module,
// the per-module cache of loaded modules and functions (behind tile_gpu_module::cache)
// and its lookups, opening and binding a driver library, and the wording of driver
// failures. Each launcher keeps only what is particular to its driver API. Internal to
// libtile_runtime.
#pragma once
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <functional>
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
    int image = -1;                // the module's image it comes from
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
    // tile_cuda_launch_tma: the kernel's own parameters, its tensor maps, and which images'
    // kernels take them (bit i: image i).
    uint32_t num_args = 0;
    const tile_tma_map* maps = nullptr;
    uint32_t num_maps = 0;
    uint64_t tma_images = 0;
    // Threads per block (x) for the images in tma_images (warp-specialized kernels add a
    // producer warpgroup there); 0: block[0] as given.
    uint32_t tma_block_x = 0;
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

// Binds the driver function `name` to *out; when it is missing, the first such name goes
// to *missing. Returns whether it was found.
template <typename F>
bool bind_symbol(void* library, const char* name, F* out, std::string* missing) {
    *out = reinterpret_cast<F>(dlsym(library, name));
    if (*out == nullptr && missing->empty()) *missing = name;
    return *out != nullptr;
}

// A driver result as "NAME (text)", from the driver's name and text for it (either may be
// NULL: the text is left out when it is missing or the same as the name; without a name it
// is "<type> <number>", e.g. "CUresult 7").
std::string describe_result(const char* type, int result, const char* name, const char* text);

// Records "kernel K (module M): <what>" with `status` and returns `status`.
tile_status launch_failure(const Launch& launch, tile_status status, const std::string& what);

// " (grid AxBxC, block AxBxC, N bytes dynamic shared memory)": what a failed kernel
// launch's message adds.
std::string launch_config(const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem);

// "; the <arch> image has no kernel of that name": what a failed function lookup's message
// adds when the driver says the name is not in the module.
std::string no_kernel_note(const Launch& launch, const LoadedModule& module);

// How one driver API loads a module for the current context/device and looks a kernel up
// in it; each records its error and returns a status on failure.
struct ModuleLoader {
    Backend backend = Backend::cuda;
    uint64_t key = 0;  // the context/device the module must be loaded for
    std::function<tile_status(LoadedModule* out)> load_module;  // sets handle and image
    std::function<tile_status(const LoadedModule& module, void** function)> get_function;
};

// The function of launch.kernel in the module cached for (loader.backend, loader.key),
// loading the module and looking the function up the first time each is needed. The
// caller holds cache.mutex, and *out is valid only while it does (the cache's vectors
// grow under that lock); a function's handle itself stays valid for the process.
tile_status cached_function(ModuleCache& cache, const Launch& launch, const ModuleLoader& loader,
                            LoadedFunction** out);

// A launcher's driver-specific part: runs a checked launch.
using LaunchFunction = tile_status (*)(const Launch& launch, void* stream, const uint32_t grid[3],
                                       const uint32_t block[3], size_t dynamic_smem, void** args);

// The body of tile_cuda_launch / tile_hip_launch (`function` names it): checks the
// arguments, runs `launch`, and turns exceptions into statuses (no exception leaves).
// `tma` (may be null): the tensor-map fields to copy into the Launch.
tile_status checked_launch(const char* function, LaunchFunction launch, tile_gpu_module* module,
                           const char* kernel, void* stream, const uint32_t grid[3], const uint32_t block[3],
                           size_t dynamic_smem, void** args, const Launch* tma = nullptr) noexcept;

// A PTX image as the driver wants it: NUL-terminated. Returns the image's own bytes when
// they already end in NUL, else a copy in *storage.
const void* nul_terminated(const tile_gpu_image& image, std::string* storage);

}  // namespace tilec::runtime::gpu
