// The parts of GPU launches that do not depend on the driver (gpu_module.h): argument
// checks, the module cache and its lookups, opening a driver library, the wording of
// driver failures, and the exception boundary of the C entry points.
#include "gpu_module.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace tilec::runtime::gpu {

namespace {

// The first version of each struct: anything smaller lacks fields this runtime reads.
constexpr size_t kMinModuleSize = offsetof(tile_gpu_module, cache) + sizeof(void*);
constexpr size_t kMinImageSize = offsetof(tile_gpu_image, size) + sizeof(size_t);

// "<name>: <why>" from dlerror, which usually starts with the name itself.
std::string dl_failure(const char* name) {
    const char* why = dlerror();
    if (why == nullptr) return std::string(name) + ": cannot be loaded";
    if (std::strncmp(why, name, std::strlen(name)) == 0) return why;
    return std::string(name) + ": " + why;
}

}  // namespace

const tile_gpu_image& image_at(const tile_gpu_module* module, size_t i) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(module->images);
    return *reinterpret_cast<const tile_gpu_image*>(bytes + i * module->image_size);
}

tile_status check_launch(const char* function, tile_gpu_module* module, const char* kernel,
                         const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem,
                         Launch* out) {
    if (module == nullptr) return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "%s: module is NULL", function);
    const char* name = module->struct_size >= kMinModuleSize && module->name ? module->name : "(unnamed)";
    const char* shown_kernel = kernel ? kernel : "(NULL)";
    if (module->struct_size < kMinModuleSize)
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "%s: module struct_size = %u is smaller than version 1 of tile_gpu_module (%zu); "
                              "was the module initialised with TILE_GPU_MODULE_INIT?",
                              function, module->struct_size, kMinModuleSize);
    if (kernel == nullptr || kernel[0] == '\0')
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "%s: module %s: the kernel name is %s", function,
                              name, kernel ? "empty" : "NULL");
    if (module->num_images > 0 && module->images == nullptr)
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "%s: module %s: images is NULL but num_images = %u",
                              function, name, module->num_images);
    if (module->num_images > 0 && module->image_size < kMinImageSize)
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "%s: module %s: image_size = %u is smaller than version 1 of tile_gpu_image (%zu)",
                              function, name, module->image_size, kMinImageSize);
    if (grid == nullptr || block == nullptr)
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "kernel %s (module %s): %s: %s is NULL", shown_kernel,
                              name, function, grid == nullptr ? "grid" : "block");
    for (int d = 0; d < 3; ++d) {
        if (grid[d] == 0 || block[d] == 0)
            return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                                  "kernel %s (module %s): %s: %s[%d] is 0 (grid %ux%ux%u, block %ux%ux%u); "
                                  "an empty launch must be skipped by the caller",
                                  shown_kernel, name, function, grid[d] == 0 ? "grid" : "block", d, grid[0],
                                  grid[1], grid[2], block[0], block[1], block[2]);
    }
    if (dynamic_smem > UINT32_MAX)
        return tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                              "kernel %s (module %s): %s: dynamic shared memory of %zu bytes does not fit the "
                              "driver's 32-bit size",
                              shown_kernel, name, function, dynamic_smem);
    out->function = function;
    out->module = module;
    out->module_name = name;
    out->kernel = kernel;
    out->images.clear();
    out->images.reserve(module->num_images);
    for (uint32_t i = 0; i < module->num_images; ++i) {
        const tile_gpu_image& image = image_at(module, i);
        if (image.arch == nullptr || image.arch[0] == '\0' || image.data == nullptr || image.size == 0)
            return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "%s: module %s: image %u has no %s", function, name, i,
                                  image.arch == nullptr || image.arch[0] == '\0' ? "arch" : "data");
        out->images.push_back(ImageInfo{image.kind, image.arch});
    }
    return TILE_SUCCESS;
}

ModuleCache* module_cache(const Launch& launch) {
    // The slot is plain `void*` in a C struct; atomic_ref makes the publication of the
    // cache (and its reads) race-free without changing the struct's type.
    std::atomic_ref<void*> slot(launch.module->cache);
    void* existing = slot.load(std::memory_order_acquire);
    if (existing == nullptr) {
        auto* fresh = new ModuleCache();
        if (slot.compare_exchange_strong(existing, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) {
            existing = fresh;
        } else {
            delete fresh;  // another thread published first; `existing` is its cache
        }
    }
    auto* cache = static_cast<ModuleCache*>(existing);
    if (cache->magic != ModuleCache::kMagic) {
        tile_set_error(TILE_ERROR_INVALID_ARGUMENT,
                       "kernel %s (module %s): %s: the module's cache slot holds something this runtime did not "
                       "create (a module not zero-initialised, or shared with another tile runtime version)",
                       launch.kernel, launch.module_name, launch.function);
        return nullptr;
    }
    return cache;
}

void* open_driver_library(const char* env, const char* const* defaults, std::string* error) {
    const char* chosen = std::getenv(env);
    if (chosen != nullptr && chosen[0] != '\0') {
        void* handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) *error = dl_failure(chosen) + " (from " + env + ")";
        return handle;
    }
    for (const char* const* name = defaults; *name != nullptr; ++name) {
        void* handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) return handle;
        if (name == defaults) *error = dl_failure(*name);
    }
    return nullptr;
}

const void* nul_terminated(const tile_gpu_image& image, std::string* storage) {
    const auto* bytes = static_cast<const char*>(image.data);
    if (bytes[image.size - 1] == '\0') return bytes;
    storage->assign(bytes, image.size);
    return storage->c_str();
}

std::string describe_result(const char* type, int result, const char* name, const char* text) {
    std::string out = name ? name : std::string(type) + " " + decimal(result);
    if (text && (name == nullptr || std::strcmp(text, name) != 0)) out += std::string(" (") + text + ")";
    return out;
}

tile_status launch_failure(const Launch& launch, tile_status status, const std::string& what) {
    return tile_set_error(status, "kernel %s (module %s): %s", launch.kernel, launch.module_name, what.c_str());
}

std::string launch_config(const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem) {
    char config[160];
    std::snprintf(config, sizeof(config), " (grid %ux%ux%u, block %ux%ux%u, %zu bytes dynamic shared memory)",
                  grid[0], grid[1], grid[2], block[0], block[1], block[2], dynamic_smem);
    return config;
}

std::string no_kernel_note(const Launch& launch, const LoadedModule& module) {
    return "; the " + std::string(image_at(launch.module, module.image).arch) + " image has no kernel of that name";
}

tile_status cached_function(ModuleCache& cache, const Launch& launch, const ModuleLoader& loader,
                            LoadedFunction** out) {
    LoadedModule* loaded = nullptr;
    for (LoadedModule& m : cache.loaded)
        if (m.backend == loader.backend && m.key == loader.key) loaded = &m;
    if (loaded == nullptr) {
        LoadedModule fresh;
        if (tile_status s = loader.load_module(&fresh); s != TILE_SUCCESS) return s;
        fresh.backend = loader.backend;
        fresh.key = loader.key;
        cache.loaded.push_back(std::move(fresh));
        loaded = &cache.loaded.back();
    }
    LoadedFunction* f = nullptr;
    for (LoadedFunction& candidate : loaded->functions)
        if (candidate.name == launch.kernel) f = &candidate;
    if (f == nullptr) {
        void* handle = nullptr;
        if (tile_status s = loader.get_function(*loaded, &handle); s != TILE_SUCCESS) return s;
        loaded->functions.push_back(LoadedFunction{launch.kernel, handle, 0, loaded->image});
        f = &loaded->functions.back();
    }
    *out = f;
    return TILE_SUCCESS;
}

tile_status checked_launch(const char* function, LaunchFunction launch, tile_gpu_module* module,
                           const char* kernel, void* stream, const uint32_t grid[3], const uint32_t block[3],
                           size_t dynamic_smem, void** args, const Launch* tma) noexcept {
    try {
        Launch l;
        if (tile_status s = check_launch(function, module, kernel, grid, block, dynamic_smem, &l); s != TILE_SUCCESS)
            return s;
        if (tma) {
            if (tma->num_maps > 0 && tma->maps == nullptr)
                return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "%s: %u tensor maps at NULL", function, tma->num_maps);
            l.num_args = tma->num_args;
            l.maps = tma->maps;
            l.num_maps = tma->num_maps;
            l.tma_images = tma->tma_images;
        }
        return launch(l, stream, grid, block, dynamic_smem, args);
    } catch (const std::bad_alloc&) {
        return tile_set_error(TILE_ERROR_OUT_OF_MEMORY, "%s: out of host memory", function);
    } catch (const std::exception& e) {
        return tile_set_error(TILE_ERROR_INTERNAL, "%s: %s", function, e.what());
    } catch (...) {
        return tile_set_error(TILE_ERROR_INTERNAL, "%s: unknown exception", function);
    }
}

}  // namespace tilec::runtime::gpu
