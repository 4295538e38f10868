/* tile/runtime.h: the C API of libtile_runtime, the small runtime that kernels compiled
 * by tilec call: status codes and error messages, CPU launch options, the CPU thread
 * pool that runs a kernel's grid of blocks, and GPU launches (CUDA, HIP) of the device
 * images embedded in an object, through driver libraries loaded at run time.
 *
 * Pure C99 (also valid C++), standard C headers only. Every function is safe to call
 * from any thread; none prints, exits, aborts or lets a C++ exception escape.
 * docs/c-api.md describes the conventions of the entry points tilec generates.
 */
#ifndef TILE_RUNTIME_H
#define TILE_RUNTIME_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* TILE_API marks the functions libtile_runtime exports (the library is built with
 * hidden visibility; only these symbols are visible). */
#if defined(_WIN32)
#if defined(TILE_RUNTIME_STATIC)
#define TILE_API
#elif defined(TILE_RUNTIME_BUILDING)
#define TILE_API __declspec(dllexport)
#else
#define TILE_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define TILE_API __attribute__((visibility("default")))
#else
#define TILE_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TILE_PRINTF_FORMAT(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define TILE_PRINTF_FORMAT(fmt_index, first_arg)
#endif

#ifdef __cplusplus
#define TILE_NOEXCEPT noexcept
extern "C" {
#else
#define TILE_NOEXCEPT
#endif

/* The version of this header: major * 10000 + minor * 100 + patch. tile_runtime_version()
 * returns the version of the library actually linked. */
#define TILE_RUNTIME_VERSION_MAJOR 0
#define TILE_RUNTIME_VERSION_MINOR 1
#define TILE_RUNTIME_VERSION_PATCH 0
#define TILE_RUNTIME_VERSION                                                     \
    (TILE_RUNTIME_VERSION_MAJOR * 10000 + TILE_RUNTIME_VERSION_MINOR * 100 + \
     TILE_RUNTIME_VERSION_PATCH)

/* The size of the per-thread error message buffer, the terminating NUL included. Longer
 * messages are truncated and end with "...". */
#define TILE_ERROR_MESSAGE_MAX 1024

/* The largest thread count a launch accepts (tile_cpu_options.num_threads and the
 * TILE_NUM_THREADS environment variable). */
#define TILE_MAX_THREADS 1024

/* ---------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------- */

/* What every runtime function and every generated entry point returns. The values are
 * part of the ABI: they never change, and new codes are only added at the end. */
typedef enum tile_status {
    TILE_SUCCESS = 0,
    /* An argument is wrong: a null pointer, a negative size, a size that the kernel's
     * constants require (e.g. a multiple of 16), a misaligned pointer, bad options or a
     * bad TILE_NUM_THREADS. Nothing was run. */
    TILE_ERROR_INVALID_ARGUMENT = 1,
    /* Memory (host, or device for GPU entry points) could not be allocated. */
    TILE_ERROR_OUT_OF_MEMORY = 2,
    /* A GPU entry point could not load the driver library (libcuda.so.1 for CUDA,
     * libamdhip64.so for HIP) or a function it needs from it. */
    TILE_ERROR_NO_DRIVER = 3,
    /* The driver loaded but there is no usable device (or no current context). */
    TILE_ERROR_NO_DEVICE = 4,
    /* The object holds no device image (cubin, PTX, HSACO) the current device can run;
     * for a CPU entry point built for several CPUs (`tilec --cpu=LIST`), no host code
     * this CPU can run (its x86-64 level is below every variant's). */
    TILE_ERROR_NO_IMAGE_FOR_DEVICE = 5,
    /* The kernel launch itself failed (launch configuration, resources, a fault
     * reported at launch). */
    TILE_ERROR_LAUNCH = 6,
    /* A bug in tilec or the runtime, or a block function that threw a C++ exception. */
    TILE_ERROR_INTERNAL = 7,
    /* Another driver call failed (module load, memory copy, ...); the message names
     * the call and the driver's own error. */
    TILE_ERROR_DRIVER = 8
} tile_status;

/* A short, static, English description of `status` ("success", "invalid argument",
 * ...); "unknown status" for a value that is not a tile_status. Never NULL; the string
 * is owned by the library and lives for the whole program. Thread-safe. */
TILE_API const char* tile_status_string(tile_status status) TILE_NOEXCEPT;

/* ---------------------------------------------------------------------------------------
 * Error messages
 * ------------------------------------------------------------------------------------- */

/* The message of the last call on *this thread* that failed (returned a status other
 * than TILE_SUCCESS), e.g. "gemm_f16_cpu: K = 100 must be a multiple of 32"; "" if no
 * call failed on this thread since it started or since tile_clear_error(). A successful
 * call does not clear it, so read it right after a call returned an error.
 *
 * Never NULL. The string lives in thread-local storage owned by the library: it stays
 * valid, on this thread, until the next runtime call on this thread that fails, sets or
 * clears the error. Do not free it; copy it to keep it or to hand it to another thread.
 * Errors of one thread are never visible on another. */
TILE_API const char* tile_last_error(void) TILE_NOEXCEPT;

/* Makes tile_last_error() return "" on this thread. Thread-safe (touches only this
 * thread's state). */
TILE_API void tile_clear_error(void) TILE_NOEXCEPT;

/* Records an error on this thread and returns `status`, so that generated code (and
 * any library built on this runtime) can write
 *     return tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "gemm_f16_cpu: A is NULL");
 * `fmt` and the arguments follow printf; the formatted message replaces this thread's
 * message, truncated to TILE_ERROR_MESSAGE_MAX - 1 bytes (ending in "..." when cut, and
 * never in the middle of a UTF-8 sequence). fmt NULL: the message is
 * tile_status_string(status). status TILE_SUCCESS: the message is cleared, as by
 * tile_clear_error(). The arguments may point into tile_last_error() itself.
 * Never prints, never allocates. Thread-safe (touches only this thread's state). */
TILE_API TILE_PRINTF_FORMAT(2, 3) tile_status tile_set_error(tile_status status, const char* fmt,
                                                              ...) TILE_NOEXCEPT;

/* tile_set_error with a va_list, for wrappers that take their own "...". */
TILE_API TILE_PRINTF_FORMAT(2, 0) tile_status tile_set_error_v(tile_status status, const char* fmt,
                                                                va_list args) TILE_NOEXCEPT;

/* ---------------------------------------------------------------------------------------
 * CPU launches
 * ------------------------------------------------------------------------------------- */

/* Options of a CPU entry point (`<kernel>_cpu(const tile_cpu_options* opt, ...)`) and of
 * tile_cpu_launch. Passing NULL means "all defaults". Otherwise initialise the struct
 * with TILE_CPU_OPTIONS_INIT or tile_cpu_options_init() before setting fields: the
 * runtime reads struct_size to know which fields the caller's header had, so fields can
 * be added at the end in later versions without breaking compiled callers. A struct
 * whose struct_size is 0 (or too small) is rejected with TILE_ERROR_INVALID_ARGUMENT.
 * The runtime only reads the struct during the call and keeps no pointer to it. */
typedef struct tile_cpu_options {
    /* sizeof(tile_cpu_options) as the caller compiled it; set by the initialisers. */
    uint32_t struct_size;
    /* How many threads may run the blocks of one launch, the calling thread included.
     * 0 (default): the TILE_NUM_THREADS environment variable if set and not empty,
     * else the number of hardware threads. 1: the calling thread runs every block.
     * From 1 to TILE_MAX_THREADS; anything else is TILE_ERROR_INVALID_ARGUMENT. */
    int32_t num_threads;
} tile_cpu_options;

/* Static initialiser: `tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;` */
#define TILE_CPU_OPTIONS_INIT {sizeof(tile_cpu_options), 0}

/* Sets *opt to the defaults (the same as TILE_CPU_OPTIONS_INIT). Inline, so struct_size
 * is the size this header gives the struct. opt must not be NULL. */
static inline void tile_cpu_options_init(tile_cpu_options* opt) {
    tile_cpu_options defaults = TILE_CPU_OPTIONS_INIT;
    *opt = defaults;
}

/* The code of one block: called once for each (bx, by, bz) of the grid, with the `ctx`
 * given to tile_cpu_launch. Blocks of one launch run concurrently on several threads,
 * in no particular order, so a block function must only write what its block owns. */
typedef void (*tile_block_fn)(void* ctx, int64_t bx, int64_t by, int64_t bz);

/* Runs fn(ctx, bx, by, bz) exactly once for every 0 <= bx < gx, 0 <= by < gy,
 * 0 <= bz < gz, spread over up to num_threads threads (see tile_cpu_options; the
 * calling thread works too), and returns when every block has finished; everything
 * the blocks wrote is then visible to the caller.
 *
 * The threads other than the caller come from one persistent pool per process,
 * created at the first launch that needs it and grown (never shrunk) as launches ask
 * for more threads; its threads sleep when idle and are reused by later launches.
 *
 * Returns:
 *   TILE_SUCCESS                 every block ran (also when a size is 0: then no block
 *                                runs at all);
 *   TILE_ERROR_INVALID_ARGUMENT  a negative size, fn NULL, gx*gy*gz above 2^62, bad
 *                                options, or TILE_NUM_THREADS (consulted only when
 *                                num_threads is 0) that is not an integer from 1 to
 *                                TILE_MAX_THREADS; no block runs;
 *   TILE_ERROR_INTERNAL / TILE_ERROR_OUT_OF_MEMORY  a block function threw a C++
 *                                exception (std::bad_alloc: out of memory): blocks not
 *                                yet started are skipped, the others finish first.
 * With an error, tile_last_error() on the calling thread says what went wrong.
 *
 * Thread-safety: may be called from several threads at once (their launches share the
 * pool), and from inside a block function: such a nested launch runs all its blocks
 * inline on the calling thread, in order (x fastest, then y, then z), before returning.
 * If the pool cannot start threads (resource limits), fewer threads are used (down to
 * the caller alone); this is not an error. `ctx` is passed through untouched and is
 * owned by the caller. Safe to call in a child process after fork(). */
TILE_API tile_status tile_cpu_launch(const tile_cpu_options* opt, int64_t gx, int64_t gy, int64_t gz,
                                     tile_block_fn fn, void* ctx) TILE_NOEXCEPT;

/* Checks `opt` as tile_cpu_launch does (NULL, or a valid struct_size and num_threads;
 * TILE_NUM_THREADS when the thread count comes from it) without launching anything.
 * Generated entry points call it before they look at their other arguments, so bad
 * options are reported first, and also when the grid is empty. `who` starts the
 * message (e.g. "gemm_f16_cpu: options num_threads is -1: ..."); NULL names this
 * function. Returns TILE_SUCCESS or TILE_ERROR_INVALID_ARGUMENT. */
TILE_API tile_status tile_cpu_check_options(const tile_cpu_options* opt, const char* who) TILE_NOEXCEPT;

/* The x86-64 micro-architecture level of this CPU, as its features and the operating
 * system's saved register state allow (the psABI's levels: 1 = x86-64, 2 = x86-64-v2
 * with SSE4.2 and POPCNT, 3 = x86-64-v3 with AVX2, FMA, BMI2, 4 = x86-64-v4 with
 * AVX-512 F, BW, CD, DQ, VL); 0 on other processors. The TILE_CPU_MAX_LEVEL environment
 * variable, when it is a number from 0 to 4, caps the result (read at every call: a
 * test can run an object's lower variants on a newer machine; anything else there is
 * ignored). Entry points of objects built for several CPUs (`tilec --cpu=LIST`) call it
 * at each launch to pick their code. Thread-safe. */
TILE_API int tile_cpu_x86_level(void) TILE_NOEXCEPT;

/* ---------------------------------------------------------------------------------------
 * GPU launches (CUDA, HIP)
 * ------------------------------------------------------------------------------------- */

/* What a GPU entry point (`<export>_cuda(void* stream, ...)`, `<export>_hip(...)`) hands
 * the runtime: a module, i.e. the device images tilec embedded in the object (constant
 * data emitted by the compiler), and the name of one kernel in them. The runtime loads
 * the driver library with dlopen at the first launch, picks the image the current device
 * can run, loads it once per CUDA context / HIP device, and launches.
 *
 * The driver libraries are never linked: a program using these functions builds and
 * runs on machines without a GPU, where a launch returns TILE_ERROR_NO_DRIVER. Driver
 * libraries are looked up as follows (each read once, at the first launch of a backend):
 *   CUDA: $TILE_CUDA_LIBRARY if set and not empty (a path or a soname), else libcuda.so.1
 *   HIP:  $TILE_HIP_LIBRARY if set and not empty, else libamdhip64.so, then
 *         libamdhip64.so.7, .so.6, .so.5 */

/* The kind of a device image. Values are ABI; new kinds are only appended, and a runtime
 * ignores images of kinds it does not know. */
typedef enum tile_gpu_image_kind {
    /* NVIDIA SASS: an ELF cubin. arch "sm_XY" (compute capability X.Y; runs on X.Z for
     * Z >= Y), "sm_XYa" (runs on exactly X.Y), "sm_XYf" (runs on X.Z for Z >= Y). */
    TILE_GPU_IMAGE_CUBIN = 1,
    /* PTX text, compiled by the driver at load time. arch "compute_XY" (runs on every
     * device of compute capability >= X.Y), "compute_XYa" (exactly X.Y), "compute_XYf"
     * (X.Z for Z >= Y). The text need not be NUL-terminated within `size`. */
    TILE_GPU_IMAGE_PTX = 2,
    /* An AMDGPU code object (HSACO, ELF). arch a target ID: "gfx942", or with features
     * "gfx942:sramecc+:xnack-" (a feature left out matches either setting). */
    TILE_GPU_IMAGE_HSACO = 3
} tile_gpu_image_kind;

/* One device image. */
typedef struct tile_gpu_image {
    uint32_t kind;     /* a tile_gpu_image_kind */
    uint32_t flags;    /* reserved: 0 */
    const char* arch;  /* e.g. "sm_90a", "compute_80", "gfx90a"; never NULL */
    const void* data;  /* the image bytes; never NULL */
    size_t size;       /* their size in bytes; > 0 */
} tile_gpu_image;

/* The images of one object (or one kernel library), and the runtime's cache of what it
 * loaded from them. Generated code defines one per object, as a zero-initialised
 * non-const static (the runtime writes `cache`):
 *     static const tile_gpu_image images[] = {{TILE_GPU_IMAGE_CUBIN, 0, "sm_80", cubin80,
 *                                              sizeof cubin80}, ...};
 *     static tile_gpu_module module = TILE_GPU_MODULE_INIT("gemm.tile", images, 3);
 * One module may hold CUDA and HIP images together: tile_cuda_launch only considers
 * CUBIN and PTX images, tile_hip_launch only HSACO ones.
 *
 * ABI: struct_size and image_size say which version of the structs the compiler emitted
 * (the runtime steps through images[] by image_size), so either struct can gain fields
 * at its end. A module whose struct_size or image_size is smaller than this version's is
 * rejected with TILE_ERROR_INVALID_ARGUMENT. */
typedef struct tile_gpu_module {
    uint32_t struct_size;          /* sizeof(tile_gpu_module) as compiled */
    uint32_t image_size;           /* sizeof(tile_gpu_image) as compiled: the stride of images */
    const char* name;              /* for messages, e.g. the source file; may be NULL */
    const tile_gpu_image* images;  /* num_images images; may be NULL if num_images is 0 */
    uint32_t num_images;
    uint32_t flags;                /* reserved: 0 */
    /* Owned by the runtime: NULL in the definition, then set (atomically) to the loaded
     * modules and functions, per CUDA context / HIP device. Never freed: a module lives
     * as long as the program (as the code it describes does). */
    void* cache;
} tile_gpu_module;

/* Static initialiser of a tile_gpu_module. */
#define TILE_GPU_MODULE_INIT(name, images, num_images) \
    {sizeof(tile_gpu_module), sizeof(tile_gpu_image), (name), (images), (num_images), 0, NULL}

/* Launches `kernel` (its symbol name in the images) of `module` on the CUDA stream
 * `stream` (a CUstream; NULL: the legacy default stream of the current context), with a
 * grid of grid[0] x grid[1] x grid[2] blocks of block[0] x block[1] x block[2] threads,
 * `dynamic_smem` bytes of dynamic shared memory, and the kernel's parameters as
 * cuLaunchKernel takes them (`args[i]` points to the value of parameter i; NULL for a
 * kernel without parameters). Returns once the kernel is enqueued, without waiting.
 *
 * The context is the calling thread's current CUDA context; if it has none, the primary
 * context of device 0 is retained and made current on the thread (as the CUDA runtime
 * API does). The first launch in a context loads the module in it: the cubin with the
 * highest compute capability the device runs ("sm_90a" before "sm_90" on a 9.0 device),
 * else the PTX with the highest compute capability not above the device's (JIT-compiled
 * by the driver). Later launches in that context reuse the loaded module and function.
 * A launch with dynamic_smem above 48 KiB first raises the function's
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (once per size, per function).
 *
 * Returns:
 *   TILE_SUCCESS                    the kernel is enqueued;
 *   TILE_ERROR_INVALID_ARGUMENT     module, its images or kernel NULL, a struct_size or
 *                                   image_size too small, an image without arch or data,
 *                                   a grid or block dimension of 0, dynamic_smem above
 *                                   4 GiB - 1; nothing was loaded or launched;
 *   TILE_ERROR_NO_DRIVER            the driver library cannot be loaded, lacks a function,
 *                                   or cuInit fails (other than for want of a device):
 *                                   "no CUDA driver found (libcuda.so.1: <dlerror>)";
 *   TILE_ERROR_NO_DEVICE            no CUDA device, or the current context is unusable;
 *   TILE_ERROR_NO_IMAGE_FOR_DEVICE  no image suits the device (the message lists the
 *                                   module's archs and the device's compute capability),
 *                                   or the driver rejects the chosen one as not for this
 *                                   GPU / a PTX version it does not know;
 *   TILE_ERROR_OUT_OF_MEMORY        host or device memory ran out;
 *   TILE_ERROR_DRIVER               loading the module or finding the kernel failed;
 *   TILE_ERROR_LAUNCH               the dynamic shared memory cannot be granted, or
 *                                   cuLaunchKernel failed.
 * Driver errors are reported with the call and the driver's error name and text, e.g.
 * "kernel gemm (module gemm.tile): cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE
 * (invalid argument)". Faults while the kernel runs surface at the stream's next
 * synchronisation, as in CUDA.
 *
 * Thread-safe: any number of threads may launch, from one module or several, at once;
 * the driver is loaded once per process and a module once per context, under a lock of
 * that module. Never prints, exits or throws. */
TILE_API tile_status tile_cuda_launch(tile_gpu_module* module, const char* kernel, void* stream,
                                      const uint32_t grid[3], const uint32_t block[3],
                                      size_t dynamic_smem, void** args) TILE_NOEXCEPT;

/* One TMA tensor map a kernel takes (sm_90a kernels whose pipelines copy through the
 * Tensor Memory Accelerator): the tensor and the box, dimension 0 innermost (the
 * tensor's contiguous dimension), as cuTensorMapEncodeTiled takes them. */
typedef struct tile_tma_map {
    const void* base;      /* the tensor's first element (16-byte aligned) */
    uint64_t dims[5];      /* elements per dimension, dims[0] innermost */
    uint64_t strides[4];   /* bytes between consecutive indices of dimensions 1 .. rank-1 */
    uint32_t elem_bytes;   /* 1, 2, 4 or 8 */
    uint32_t rank;         /* 1..5 */
    uint32_t swizzle;      /* CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B */
    uint32_t box[5];       /* the box, in elements, box[0] innermost */
} tile_tma_map;

/* tile_cuda_launch for kernels with TMA tensor maps: `args` holds the kernel's own
 * `num_args` parameters; when the image loaded for the device is one whose kernel takes
 * tensor maps (bit i of `tma_images` set for image i of the module), each of the
 * `num_maps` maps is encoded with the driver's cuTensorMapEncodeTiled and passed after
 * them, as a 128-byte __grid_constant__ parameter. A map whose tensor the TMA unit
 * cannot address (a dimension outside 1 .. 2^31 - 1, a stride not a multiple of 16
 * bytes or not below 2^40) is passed zeroed: the kernel tests the same rule and copies
 * without TMA then. Statuses as tile_cuda_launch's, and TILE_ERROR_NO_DRIVER when the
 * driver lacks cuTensorMapEncodeTiled (CUDA 12 or later has it), TILE_ERROR_DRIVER when
 * it refuses a map. Those images' kernels run with `tma_block_x` threads per block (x)
 * when it is not 0 (a warp-specialized kernel's extra producer warpgroup), the others with
 * block[0]. */
TILE_API tile_status tile_cuda_launch_tma(tile_gpu_module* module, const char* kernel, void* stream,
                                          const uint32_t grid[3], const uint32_t block[3], size_t dynamic_smem,
                                          void** args, uint32_t num_args, const tile_tma_map* maps,
                                          uint32_t num_maps, uint64_t tma_images,
                                          uint32_t tma_block_x) TILE_NOEXCEPT;

/* Whether `map` describes a tensor the TMA unit addresses (the rule above). */
TILE_API int tile_tma_map_encodes(const tile_tma_map* map) TILE_NOEXCEPT;

/* tile_cuda_launch for AMD GPUs through HIP: `stream` is a hipStream_t (NULL: the null
 * stream of the current device), the device is the calling thread's current HIP device
 * (hipGetDevice), the image the HSACO whose target ID matches the device's gcnArchName:
 * the same processor ("gfx942"), and no feature set the other way ("gfx942:xnack+"
 * does not run on a device reporting xnack-; "gfx942" runs on any gfx942); the most
 * specific match wins. Loaded once per device. Status codes and messages as above, with
 * hipModuleLoadData / hipModuleGetFunction / hipModuleLaunchKernel and hipError_t
 * names; no shared memory attribute is set. Needs ROCm 5 or later. */
TILE_API tile_status tile_hip_launch(tile_gpu_module* module, const char* kernel, void* stream,
                                     const uint32_t grid[3], const uint32_t block[3],
                                     size_t dynamic_smem, void** args) TILE_NOEXCEPT;

/* ---------------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------------- */

/* The version of the linked library, in the encoding of TILE_RUNTIME_VERSION.
 * Thread-safe. */
TILE_API int tile_runtime_version(void) TILE_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TILE_RUNTIME_H */
