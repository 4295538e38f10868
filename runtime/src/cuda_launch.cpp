// tile_cuda_launch: the CUDA driver API loaded at run time with dlopen (libcuda.so.1 or
// $TILE_CUDA_LIBRARY), a module loaded once per context from the image that suits the
// device, and cuLaunchKernel. The declarations below are this file's own, written from
// the CUDA driver API's documented signatures and enum values; no CUDA header is needed
// to build the runtime.
#include <string>
#include <vector>

#include "gpu_module.h"
#include "tile/runtime.h"

namespace tilec::runtime::gpu {
namespace {

// ---- the driver API, as far as it is used here ----------------------------------------

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// Above this, a kernel must opt in to dynamic shared memory (cuFuncSetAttribute).
constexpr size_t kDefaultSmemLimit = 48 * 1024;

// Devices whose primary context this runtime retains (when a thread has no context).
constexpr int kMaxDevices = 64;

struct CudaDriver {
    tile_status status = TILE_SUCCESS;
    std::string message;  // why the driver is unusable, when status != TILE_SUCCESS

    CUresult (*cuInit)(unsigned int) = nullptr;
    CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
    CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
    CUresult (*cuDeviceGetCount)(int*) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
    CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
    CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
    CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
    CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
    CUresult (*cuCtxGetId)(CUcontext, unsigned long long*) = nullptr;  // CUDA >= 12.0; optional
    CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned int, int*, void**) = nullptr;
    CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
    CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                               unsigned int, unsigned int, CUstream, void**, void**) = nullptr;
    // CUDA >= 12.0; optional (only kernels with TMA tensor maps need it). cuda.h's
    // signature: (CUtensorMap*, CUtensorMapDataType, cuuint32_t rank, void* globalAddress,
    // const cuuint64_t* globalDim, const cuuint64_t* globalStrides, const cuuint32_t*
    // boxDim, const cuuint32_t* elementStrides, CUtensorMapInterleave, CUtensorMapSwizzle,
    // CUtensorMapL2promotion, CUtensorMapFloatOOBfill), the enums as ints.
    CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned int, void*, const uint64_t*, const uint64_t*,
                                       const unsigned int*, const unsigned int*, int, int, int, int) = nullptr;

    // Primary contexts retained for threads that had none, per device ordinal. They are
    // kept (never released) so that modules loaded in them stay valid.
    std::mutex primary_mutex;
    CUcontext primary[kMaxDevices] = {};
};

// "CUDA_ERROR_INVALID_VALUE (invalid argument)", or the number when the driver cannot
// name it.
std::string describe(const CudaDriver& d, CUresult result) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (d.cuGetErrorName == nullptr || d.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (d.cuGetErrorString == nullptr || d.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
    return describe_result("CUresult", result, name, text);
}

void load_driver(CudaDriver* d) {
    static const char* const kDefaults[] = {"libcuda.so.1", nullptr};
    std::string error;
    void* library = open_driver_library("TILE_CUDA_LIBRARY", kDefaults, &error);
    if (library == nullptr) {
        d->status = TILE_ERROR_NO_DRIVER;
        d->message = "no CUDA driver found (" + error + ")";
        return;
    }
    std::string missing;
    bind_symbol(library, "cuInit", &d->cuInit, &missing);
    bind_symbol(library, "cuGetErrorName", &d->cuGetErrorName, &missing);
    bind_symbol(library, "cuGetErrorString", &d->cuGetErrorString, &missing);
    bind_symbol(library, "cuDeviceGetCount", &d->cuDeviceGetCount, &missing);
    bind_symbol(library, "cuDeviceGet", &d->cuDeviceGet, &missing);
    bind_symbol(library, "cuDeviceGetAttribute", &d->cuDeviceGetAttribute, &missing);
    bind_symbol(library, "cuDevicePrimaryCtxRetain", &d->cuDevicePrimaryCtxRetain, &missing);
    bind_symbol(library, "cuCtxGetCurrent", &d->cuCtxGetCurrent, &missing);
    bind_symbol(library, "cuCtxSetCurrent", &d->cuCtxSetCurrent, &missing);
    bind_symbol(library, "cuCtxGetDevice", &d->cuCtxGetDevice, &missing);
    bind_symbol(library, "cuModuleLoadDataEx", &d->cuModuleLoadDataEx, &missing);
    bind_symbol(library, "cuModuleGetFunction", &d->cuModuleGetFunction, &missing);
    bind_symbol(library, "cuFuncSetAttribute", &d->cuFuncSetAttribute, &missing);
    bind_symbol(library, "cuLaunchKernel", &d->cuLaunchKernel, &missing);
    if (!missing.empty()) {
        // The library stays loaded: dlclose of a driver is not worth its risks.
        d->status = TILE_ERROR_NO_DRIVER;
        d->message = "the CUDA driver library lacks " + missing + " (driver too old, or not libcuda)";
        return;
    }
    std::string optional;
    bind_symbol(library, "cuCtxGetId", &d->cuCtxGetId, &optional);
    bind_symbol(library, "cuTensorMapEncodeTiled", &d->cuTensorMapEncodeTiled, &optional);
    CUresult result = d->cuInit(0);
    if (result != CUDA_SUCCESS) {
        d->status = result == CUDA_ERROR_NO_DEVICE ? TILE_ERROR_NO_DEVICE : TILE_ERROR_NO_DRIVER;
        d->message = (result == CUDA_ERROR_NO_DEVICE ? "no CUDA device: cuInit failed: "
                                                     : "the CUDA driver cannot be initialised: cuInit failed: ") +
                     describe(*d, result);
    }
}

// Loaded and initialised once per process, at the first launch (thread-safe static
// initialisation); its outcome, failures included, holds for the rest of the process.
CudaDriver& driver() {
    static CudaDriver* d = [] {
        auto* fresh = new CudaDriver();
        load_driver(fresh);
        return fresh;
    }();
    return *d;
}

tile_status map_status(CUresult result, tile_status otherwise) {
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return TILE_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE) return TILE_ERROR_NO_DEVICE;
    return otherwise;
}

tile_status fail_call(const Launch& l, CudaDriver& d, tile_status status, const char* call, CUresult result) {
    return launch_failure(l, map_status(result, status),
                          std::string(call) + " failed: " + describe(d, result));
}

// The calling thread's context; if it has none, device 0's primary context, retained
// once per process and made current (as the CUDA runtime API does).
tile_status current_context(const Launch& l, CudaDriver& d, CUcontext* ctx) {
    CUresult result = d.cuCtxGetCurrent(ctx);
    if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuCtxGetCurrent", result);
    if (*ctx != nullptr) return TILE_SUCCESS;
    int count = 0;
    result = d.cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuDeviceGetCount", result);
    if (count <= 0)
        return launch_failure(l, TILE_ERROR_NO_DEVICE, "no CUDA device (cuDeviceGetCount returned 0)");
    constexpr int ordinal = 0;
    {
        std::lock_guard<std::mutex> lock(d.primary_mutex);
        if (d.primary[ordinal] == nullptr) {
            CUdevice device = 0;
            result = d.cuDeviceGet(&device, ordinal);
            if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuDeviceGet", result);
            result = d.cuDevicePrimaryCtxRetain(&d.primary[ordinal], device);
            if (result != CUDA_SUCCESS) {
                d.primary[ordinal] = nullptr;
                return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuDevicePrimaryCtxRetain", result);
            }
        }
        *ctx = d.primary[ordinal];
    }
    result = d.cuCtxSetCurrent(*ctx);
    if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuCtxSetCurrent", result);
    return TILE_SUCCESS;
}

// Loads the module's best image into the current context.
tile_status load_module(const Launch& l, CudaDriver& d, LoadedModule* out) {
    CUdevice device = 0;
    CUresult result = d.cuCtxGetDevice(&device);
    if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_NO_DEVICE, "cuCtxGetDevice", result);
    int major = 0, minor = 0;
    result = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    if (result == CUDA_SUCCESS)
        result = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    if (result != CUDA_SUCCESS) return fail_call(l, d, TILE_ERROR_DRIVER, "cuDeviceGetAttribute", result);

    int index = select_cuda_image(l.images, major, minor);
    if (index < 0)
        return tile_set_error(TILE_ERROR_NO_IMAGE_FOR_DEVICE, "%s",
                              no_cuda_image_message(l.module_name, l.kernel, l.images, major, minor).c_str());
    const tile_gpu_image& image = image_at(l.module, static_cast<size_t>(index));
    std::string ptx;
    const void* data = image.kind == TILE_GPU_IMAGE_PTX ? nul_terminated(image, &ptx) : image.data;

    // The JIT's error log says why PTX did not compile; a cubin leaves it empty.
    char log[1024] = {};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log) - 1))};
    CUmodule handle = nullptr;
    result = d.cuModuleLoadDataEx(&handle, data, 2, options, values);
    if (result != CUDA_SUCCESS) {
        log[sizeof(log) - 1] = '\0';
        tile_status status = result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                                 ? TILE_ERROR_NO_IMAGE_FOR_DEVICE
                                 : TILE_ERROR_DRIVER;
        std::string what = "cuModuleLoadDataEx failed on the " + std::string(image.arch) + " image (device sm_" +
                           decimal(major * 10 + minor) + "): " + describe(d, result);
        if (log[0] != '\0') what += ": " + std::string(log);
        return launch_failure(l, map_status(result, status), what);
    }
    out->handle = handle;
    out->image = index;
    return TILE_SUCCESS;
}

// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TensorMapBytes {
    unsigned char bytes[128];
};

// The maps of a launch, encoded (or zeroed where the TMA unit cannot address the tensor:
// the kernel then copies without TMA, by the same rule).
tile_status encode_tensor_maps(const Launch& l, CudaDriver& d, std::vector<TensorMapBytes>* out) {
    out->assign(l.num_maps, TensorMapBytes{});
    for (uint32_t k = 0; k < l.num_maps; ++k) {
        const tile_tma_map& m = l.maps[k];
        if (!tile_tma_map_encodes(&m)) continue;
        if (d.cuTensorMapEncodeTiled == nullptr)
            return launch_failure(l, TILE_ERROR_NO_DRIVER,
                                  "the CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12 or later), which the "
                                  "kernel's TMA copies need");
        // CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32 / UINT64 by width: the unit moves
        // bytes, and out-of-bounds elements are zero (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE).
        const int type = m.elem_bytes == 1 ? 0 : m.elem_bytes == 2 ? 1 : m.elem_bytes == 4 ? 2 : 4;
        const unsigned int element_strides[5] = {1, 1, 1, 1, 1};
        constexpr int kInterleaveNone = 0, kL2Promotion128B = 2, kOobFillNone = 0;
        CUresult result = d.cuTensorMapEncodeTiled((*out)[k].bytes, type, m.rank, const_cast<void*>(m.base), m.dims,
                                                   m.strides, m.box, element_strides, kInterleaveNone,
                                                   static_cast<int>(m.swizzle), kL2Promotion128B, kOobFillNone);
        if (result != CUDA_SUCCESS)
            return launch_failure(l, map_status(result, TILE_ERROR_DRIVER),
                                  "cuTensorMapEncodeTiled failed on tensor map " + decimal(k) + ": " +
                                      describe(d, result));
    }
    return TILE_SUCCESS;
}

tile_status launch(const Launch& l, void* stream, const uint32_t grid[3], const uint32_t block[3],
                   size_t dynamic_smem, void** args) {
    CudaDriver& d = driver();
    if (d.status != TILE_SUCCESS) return tile_set_error(d.status, "%s", d.message.c_str());

    CUcontext ctx = nullptr;
    if (tile_status s = current_context(l, d, &ctx); s != TILE_SUCCESS) return s;
    // A context's ID is never reused, unlike its handle (a destroyed context's address
    // can come back), so the ID keys the cache where the driver has it.
    uint64_t key = reinterpret_cast<uintptr_t>(ctx);
    unsigned long long id = 0;
    if (d.cuCtxGetId != nullptr && d.cuCtxGetId(ctx, &id) == CUDA_SUCCESS) key = id;

    ModuleCache* cache = module_cache(l);
    if (cache == nullptr) return TILE_ERROR_INVALID_ARGUMENT;
    ModuleLoader loader;
    loader.backend = Backend::cuda;
    loader.key = key;
    loader.load_module = [&](LoadedModule* out) { return load_module(l, d, out); };
    loader.get_function = [&](const LoadedModule& module, void** handle) {
        CUresult result = d.cuModuleGetFunction(handle, module.handle, l.kernel);
        if (result == CUDA_SUCCESS) return TILE_SUCCESS;
        std::string what = "cuModuleGetFunction failed: " + describe(d, result);
        if (result == CUDA_ERROR_NOT_FOUND) what += no_kernel_note(l, module);
        return launch_failure(l, map_status(result, TILE_ERROR_DRIVER), what);
    };
    CUfunction function = nullptr;
    int function_image = -1;
    {
        std::lock_guard<std::mutex> lock(cache->mutex);
        LoadedFunction* f = nullptr;
        if (tile_status s = cached_function(*cache, l, loader, &f); s != TILE_SUCCESS) return s;
        if (dynamic_smem > kDefaultSmemLimit && dynamic_smem > f->smem_configured) {
            CUresult result = d.cuFuncSetAttribute(f->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                   static_cast<int>(dynamic_smem));
            if (result != CUDA_SUCCESS) {
                std::string what = "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                                   decimal(dynamic_smem) + ") failed: " + describe(d, result);
                CUdevice device = 0;
                int optin = 0;
                if (d.cuCtxGetDevice(&device) == CUDA_SUCCESS &&
                    d.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device) ==
                        CUDA_SUCCESS)
                    what += "; the device allows at most " + decimal(optin) +
                            " bytes of shared memory per block";
                return launch_failure(l, map_status(result, TILE_ERROR_LAUNCH), what);
            }
            f->smem_configured = dynamic_smem;
        }
        function = f->handle;
        function_image = f->image;
    }
    // The tensor maps, after the kernel's own parameters, where the loaded image's kernel
    // takes them (cuLaunchKernel copies the parameters: locals suffice).
    std::vector<void*> with_maps;
    std::vector<TensorMapBytes> maps;
    uint32_t tma_block[3] = {block[0], block[1], block[2]};
    if (function_image >= 0 && function_image < 64 && ((l.tma_images >> function_image) & 1) && l.tma_block_x != 0) {
        tma_block[0] = l.tma_block_x;
        block = tma_block;
    }
    if (l.num_maps > 0 && function_image >= 0 && function_image < 64 && ((l.tma_images >> function_image) & 1)) {
        if (tile_status s = encode_tensor_maps(l, d, &maps); s != TILE_SUCCESS) return s;
        with_maps.assign(args, args + l.num_args);
        for (auto& m : maps) with_maps.push_back(m.bytes);
        args = with_maps.data();
    }
    // Launched outside the lock: the function handle stays valid, and launches of one
    // module from several threads need not wait for each other.
    CUresult result = d.cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                       static_cast<unsigned int>(dynamic_smem), stream, args, nullptr);
    if (result != CUDA_SUCCESS)
        return launch_failure(l, map_status(result, TILE_ERROR_LAUNCH),
                              "cuLaunchKernel failed: " + describe(d, result) +
                                  launch_config(grid, block, dynamic_smem));
    return TILE_SUCCESS;
}

}  // namespace
}  // namespace tilec::runtime::gpu

extern "C" TILE_API tile_status tile_cuda_launch(tile_gpu_module* module, const char* kernel, void* stream,
                                                 const uint32_t grid[3], const uint32_t block[3],
                                                 size_t dynamic_smem, void** args) noexcept {
    using namespace tilec::runtime::gpu;
    return checked_launch("tile_cuda_launch", launch, module, kernel, stream, grid, block, dynamic_smem, args);
}

extern "C" TILE_API tile_status tile_cuda_launch_tma(tile_gpu_module* module, const char* kernel, void* stream,
                                                     const uint32_t grid[3], const uint32_t block[3],
                                                     size_t dynamic_smem, void** args, uint32_t num_args,
                                                     const tile_tma_map* maps, uint32_t num_maps,
                                                     uint64_t tma_images, uint32_t tma_block_x) noexcept {
    using namespace tilec::runtime::gpu;
    Launch tma;
    tma.tma_block_x = tma_block_x;
    tma.num_args = num_args;
    tma.maps = maps;
    tma.num_maps = num_maps;
    tma.tma_images = tma_images;
    return checked_launch("tile_cuda_launch_tma", launch, module, kernel, stream, grid, block, dynamic_smem, args,
                          &tma);
}

extern "C" TILE_API int tile_tma_map_encodes(const tile_tma_map* m) noexcept {
    if (m == nullptr || m->rank < 1 || m->rank > 5) return 0;
    if (m->elem_bytes != 1 && m->elem_bytes != 2 && m->elem_bytes != 4 && m->elem_bytes != 8) return 0;
    if (reinterpret_cast<uintptr_t>(m->base) % 16 != 0) return 0;
    for (uint32_t i = 0; i < m->rank; ++i)
        if (m->dims[i] < 1 || m->dims[i] > (uint64_t{1} << 31) - 1) return 0;
    for (uint32_t i = 0; i + 1 < m->rank; ++i)
        if (m->strides[i] == 0 || m->strides[i] % 16 != 0 || m->strides[i] >= (uint64_t{1} << 40)) return 0;
    return 1;
}
