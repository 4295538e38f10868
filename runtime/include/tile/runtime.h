/* tile/runtime.h: the C API of libtile_runtime, the small runtime that kernels compiled
 * by tilec call: status codes and error messages, CPU launch options, and the CPU
 * thread pool that runs a kernel's grid of blocks.
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
    /* The object holds no device image (cubin, PTX, HSACO) the current device can run. */
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
