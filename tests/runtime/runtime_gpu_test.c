/* GPU launches of libtile_runtime from C99, without a GPU: tile_cuda_launch and
 * tile_hip_launch against a missing driver (a clean TILE_ERROR_NO_DRIVER), bad arguments,
 * and the fake drivers of fake_cuda.c / fake_hip.c (loaded through TILE_CUDA_LIBRARY /
 * TILE_HIP_LIBRARY, which ctest sets per case) to prove the loader: load once, cache per
 * context / device, image choice by the device's arch, the shared memory attribute, and
 * driver errors turned into statuses and messages. One ctest test per case:
 * `runtime_gpu_test <case>`, since the driver is loaded once per process. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_checks.h"
#include "fake_client.h"
#include "fake_driver.h"
#include "tile/runtime.h"

/* ---- images and modules ---------------------------------------------------------------- */

/* Images are text for the fakes: which image a load got is visible in its text. */
static const char cubin80[] = "FAKE CUBIN sm_80 kernels: scale gemm";
static const char cubin90a[] = "FAKE CUBIN sm_90a kernels: scale gemm";
static const char ptx80[] = "//FAKE PTX compute_80 kernels: scale gemm";
static const char hsaco942[] = "FAKE HSACO gfx942 kernels: scale";
static const char hsaco942_xnack_on[] = "FAKE HSACO gfx942:xnack+ kernels: scale";
static const char hsaco942_sramecc[] = "FAKE HSACO gfx942:sramecc+ kernels: scale";
static const char hsaco90a[] = "FAKE HSACO gfx90a kernels: scale";

#define IMAGE(kind, arch, bytes) {kind, 0, arch, bytes, sizeof(bytes)}

static const tile_gpu_image mixed_images[] = {
    IMAGE(TILE_GPU_IMAGE_CUBIN, "sm_80", cubin80),
    IMAGE(TILE_GPU_IMAGE_CUBIN, "sm_90a", cubin90a),
    IMAGE(TILE_GPU_IMAGE_PTX, "compute_80", ptx80),
    IMAGE(TILE_GPU_IMAGE_HSACO, "gfx90a", hsaco90a),
    IMAGE(TILE_GPU_IMAGE_HSACO, "gfx942:xnack+", hsaco942_xnack_on),
    IMAGE(TILE_GPU_IMAGE_HSACO, "gfx942", hsaco942),
    IMAGE(TILE_GPU_IMAGE_HSACO, "gfx942:sramecc+", hsaco942_sramecc),
};
static tile_gpu_module mixed = TILE_GPU_MODULE_INIT("mixed.tile", mixed_images, 7);

static const uint32_t grid_4x2[3] = {4, 2, 1};
static const uint32_t block_128[3] = {128, 1, 1};

/* ---- the fakes --------------------------------------------------------------------------- */

static fake_stats* cuda_stats;
static fake_fail_fn cuda_fail;
static fake_cuda_set_device_fn cuda_set_device;
static fake_cuda_make_current_fn cuda_make_current;

static void open_fake_cuda(void) {
    void* library = open_fake_library("TILE_CUDA_LIBRARY", "driver");
    fake_stats_fn stats_fn;
    fake_symbol(library, "fake_cuda_stats", &stats_fn, sizeof(stats_fn));
    fake_symbol(library, "fake_cuda_fail", &cuda_fail, sizeof(cuda_fail));
    fake_symbol(library, "fake_cuda_set_device", &cuda_set_device, sizeof(cuda_set_device));
    fake_symbol(library, "fake_cuda_make_current", &cuda_make_current, sizeof(cuda_make_current));
    cuda_stats = stats_fn();
}

static fake_stats* hip_stats;
static fake_fail_fn hip_fail;
static fake_hip_set_device_fn hip_set_device;
static fake_hip_set_current_fn hip_set_current;

static void open_fake_hip(void) {
    void* library = open_fake_library("TILE_HIP_LIBRARY", "driver");
    fake_stats_fn stats_fn;
    fake_symbol(library, "fake_hip_stats", &stats_fn, sizeof(stats_fn));
    fake_symbol(library, "fake_hip_fail", &hip_fail, sizeof(hip_fail));
    fake_symbol(library, "fake_hip_set_device", &hip_set_device, sizeof(hip_set_device));
    fake_symbol(library, "fake_hip_set_current", &hip_set_current, sizeof(hip_set_current));
    hip_stats = stats_fn();
}

/* ---- no driver --------------------------------------------------------------------------- */

/* TILE_CUDA_LIBRARY / TILE_HIP_LIBRARY name files that do not exist. */
static void test_no_driver(void) {
    void* args[1] = {NULL};
    int i;
    for (i = 0; i < 2; ++i) { /* the second call gets the same answer from the cached load */
        tile_clear_error();
        CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, args), TILE_ERROR_NO_DRIVER);
        CHECK(strncmp(tile_last_error(), "no CUDA driver found (", 22) == 0);
        CHECK_MESSAGE_HAS("/nonexistent/libcuda.so.1");
        CHECK_MESSAGE_HAS("TILE_CUDA_LIBRARY");
        tile_clear_error();
        CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, args), TILE_ERROR_NO_DRIVER);
        CHECK(strncmp(tile_last_error(), "no HIP runtime found (", 22) == 0);
        CHECK_MESSAGE_HAS("/nonexistent/libamdhip64.so");
    }
    CHECK(mixed.cache == NULL); /* nothing was loaded, so no cache was made */
}

/* The default library names, whatever this machine has: with no GPU, never success and
 * never a crash; the status says the driver or the device is missing. */
static void test_default_libraries(void) {
    tile_status s = tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL);
    CHECK(s != TILE_SUCCESS);
    if (s == TILE_ERROR_NO_DRIVER) CHECK(strncmp(tile_last_error(), "no CUDA driver found (libcuda.so.1", 34) == 0);
    CHECK(strlen(tile_last_error()) > 0);
    printf("CUDA: %s: %s\n", tile_status_string(s), tile_last_error());
    s = tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL);
    CHECK(s != TILE_SUCCESS);
    CHECK(strlen(tile_last_error()) > 0);
    printf("HIP: %s: %s\n", tile_status_string(s), tile_last_error());
}

/* ---- argument checks ------------------------------------------------------------------- */

/* Checked before the driver is touched: the fake sees no call at all. */
static void test_invalid_arguments(void) {
    static const uint32_t zero_x[3] = {0, 1, 1};
    static const uint32_t zero_z[3] = {1, 1, 0};
    static const tile_gpu_image no_data[] = {{TILE_GPU_IMAGE_CUBIN, 0, "sm_80", NULL, 10}};
    static const tile_gpu_image no_arch[] = {{TILE_GPU_IMAGE_CUBIN, 0, NULL, cubin80, sizeof(cubin80)}};
    tile_gpu_module zeroed;
    tile_gpu_module old_images = TILE_GPU_MODULE_INIT("old.tile", mixed_images, 7);
    tile_gpu_module bad_data = TILE_GPU_MODULE_INIT("bad.tile", no_data, 1);
    tile_gpu_module bad_arch = TILE_GPU_MODULE_INIT("bad.tile", no_arch, 1);
    tile_gpu_module no_images = TILE_GPU_MODULE_INIT("none.tile", NULL, 2);
    open_fake_cuda();
    memset(&zeroed, 0, sizeof(zeroed));
    old_images.image_size = 8;

    CHECK_STATUS(tile_cuda_launch(NULL, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("tile_cuda_launch: module is NULL");
    CHECK_STATUS(tile_hip_launch(NULL, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("tile_hip_launch: module is NULL");
    CHECK_STATUS(tile_cuda_launch(&mixed, NULL, NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("kernel name is NULL");
    CHECK_STATUS(tile_cuda_launch(&mixed, "", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("kernel name is empty");
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, zero_x, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("grid[0] is 0");
    CHECK_MESSAGE_HAS("kernel scale (module mixed.tile)");
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, zero_z, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("grid[2] is 0");
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, zero_x, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("block[0] is 0");
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, NULL, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("grid is NULL");
    CHECK_STATUS(tile_cuda_launch(&zeroed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("struct_size = 0");
    CHECK_STATUS(tile_cuda_launch(&old_images, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("image_size = 8");
    CHECK_STATUS(tile_cuda_launch(&bad_data, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("image 0 has no data");
    CHECK_STATUS(tile_hip_launch(&bad_arch, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("image 0 has no arch");
    CHECK_STATUS(tile_cuda_launch(&no_images, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("images is NULL but num_images = 2");
    if (sizeof(size_t) > 4) {
        size_t huge = (size_t)UINT32_MAX + 1;
        CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, huge, NULL),
                     TILE_ERROR_INVALID_ARGUMENT);
        CHECK_MESSAGE_HAS("does not fit");
    }
    CHECK(cuda_stats->init_calls == 0);
    CHECK(mixed.cache == NULL);
}

/* ---- the fake CUDA driver --------------------------------------------------------------- */

/* The image follows the device's compute capability; the module is loaded once per context,
 * the function looked up once per kernel; the launch gets the caller's configuration. */
static void test_cuda_select(void) {
    float x = 1.0f;
    int64_t n = 100;
    void* args[2];
    void* stream = (void*)(uintptr_t)0x5000;
    static const uint32_t grid[3] = {7, 5, 3};
    static const uint32_t block[3] = {32, 4, 2};
    args[0] = &x;
    args[1] = &n;
    open_fake_cuda();
    cuda_set_device(0, 8, 6, 101376);
    cuda_set_device(1, 9, 0, 232448);
    cuda_set_device(2, 10, 0, 232448);
    cuda_set_device(3, 7, 5, 65536);
    cuda_set_device(4, 8, 9, 101376);

    cuda_make_current(0); /* 8.6: the sm_80 cubin */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", stream, grid, block, 1024, args), TILE_SUCCESS);
    CHECK(cuda_stats->init_calls == 1);
    CHECK(cuda_stats->module_loads == 1);
    CHECK(cuda_stats->last_image == cubin80);
    CHECK(cuda_stats->launches == 1);
    CHECK(cuda_stats->last_grid[0] == 7 && cuda_stats->last_grid[1] == 5 && cuda_stats->last_grid[2] == 3);
    CHECK(cuda_stats->last_block[0] == 32 && cuda_stats->last_block[1] == 4 && cuda_stats->last_block[2] == 2);
    CHECK(cuda_stats->last_smem == 1024);
    CHECK(cuda_stats->last_stream == stream);
    CHECK(cuda_stats->last_args == args);
    CHECK(strcmp(cuda_stats->last_kernel, "scale") == 0);
    CHECK(cuda_stats->primary_retains == 0); /* the thread had a context */
    CHECK(mixed.cache != NULL);

    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->init_calls == 1);
    CHECK(cuda_stats->module_loads == 1);
    CHECK(cuda_stats->get_function_calls == 2);
    CHECK(cuda_stats->launches == 4);
    CHECK(strcmp(cuda_stats->last_kernel, "gemm") == 0);

    cuda_make_current(1); /* 9.0: sm_80 does not run; sm_90a does */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->module_loads == 2);
    CHECK(cuda_stats->last_image == cubin90a);

    cuda_make_current(2); /* 10.0: no cubin runs; the compute_80 PTX is JIT-compiled */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->module_loads == 3);
    CHECK(strcmp(cuda_stats->last_image_text, ptx80) == 0);

    cuda_make_current(4); /* 8.9: sm_80 */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->module_loads == 4);
    CHECK(cuda_stats->last_image == cubin80);

    cuda_make_current(3); /* 7.5: nothing */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("kernel scale (module mixed.tile)");
    CHECK_MESSAGE_HAS("sm_80, sm_90a, compute_80;"); /* the HSACO images are not listed */
    CHECK_MESSAGE_HAS("compute capability 7.5");
    CHECK(cuda_stats->module_loads == 4);

    cuda_make_current(0); /* back in the first context: nothing is loaded again */
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->module_loads == 4);
}

/* A thread without a context gets device 0's primary context, retained once. */
static void test_cuda_primary_context(void) {
    open_fake_cuda();
    cuda_set_device(0, 9, 0, 232448);
    cuda_make_current(-1);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->primary_retains == 1);
    CHECK(cuda_stats->set_current_calls == 1);
    CHECK(cuda_stats->last_image == cubin90a);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_current_calls == 1); /* now current on this thread */
    cuda_make_current(-1);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->primary_retains == 1);
    CHECK(cuda_stats->set_current_calls == 2);
    CHECK(cuda_stats->module_loads == 1);
}

/* Dynamic shared memory above 48 KiB raises the function's limit first, once per size. */
static void test_cuda_shared_memory(void) {
    open_fake_cuda();
    cuda_set_device(0, 8, 6, 101376);
    cuda_make_current(0);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 48 * 1024, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_attribute_calls == 0);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 64 * 1024, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_attribute_calls == 1);
    CHECK(cuda_stats->last_attribute_value == 64 * 1024);
    CHECK(cuda_stats->last_smem == 64 * 1024);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 64 * 1024, NULL), TILE_SUCCESS);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 50 * 1024, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_attribute_calls == 1);
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 96 * 1024, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_attribute_calls == 2);
    CHECK(cuda_stats->last_attribute_value == 96 * 1024);
    /* Another kernel starts from the default limit. */
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 64 * 1024, NULL), TILE_SUCCESS);
    CHECK(cuda_stats->set_attribute_calls == 3);
    /* More than the device has. */
    CHECK_STATUS(tile_cuda_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 200 * 1024, NULL), TILE_ERROR_LAUNCH);
    CHECK_MESSAGE_HAS("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 204800");
    CHECK_MESSAGE_HAS("CUDA_ERROR_INVALID_VALUE");
    CHECK_MESSAGE_HAS("at most 101376 bytes");
    CHECK(cuda_stats->launches == 6);
}

/* Driver failures become statuses with the call and the driver's error name. */
static void test_cuda_errors(void) {
    static const char bad_ptx[] = "//BAD PTX kernels: scale";
    static const tile_gpu_image bad_images[] = {IMAGE(TILE_GPU_IMAGE_PTX, "compute_70", bad_ptx)};
    tile_gpu_module bad = TILE_GPU_MODULE_INIT("bad.tile", bad_images, 1);
    tile_gpu_module fresh = TILE_GPU_MODULE_INIT("fresh.tile", mixed_images, 7);
    tile_gpu_module empty = TILE_GPU_MODULE_INIT("empty.tile", NULL, 0);
    open_fake_cuda();
    cuda_make_current(0);

    cuda_fail("cuLaunchKernel", 701);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_LAUNCH);
    CHECK_MESSAGE_HAS("kernel scale (module mixed.tile): cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
    CHECK_MESSAGE_HAS("grid 4x2x1, block 128x1x1");
    cuda_fail("cuLaunchKernel", 2);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_OUT_OF_MEMORY);
    cuda_fail("cuLaunchKernel", 0);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);

    CHECK_STATUS(tile_cuda_launch(&mixed, "missing", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_DRIVER);
    CHECK_MESSAGE_HAS("kernel missing (module mixed.tile): cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND");
    CHECK_MESSAGE_HAS("the sm_80 image has no kernel of that name");

    CHECK_STATUS(tile_cuda_launch(&bad, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_DRIVER);
    CHECK_MESSAGE_HAS("cuModuleLoadDataEx failed on the compute_70 image (device sm_80): CUDA_ERROR_INVALID_PTX");
    CHECK_MESSAGE_HAS("fatal: fake"); /* the JIT's log */

    cuda_fail("cuModuleLoadDataEx", 209);
    CHECK_STATUS(tile_cuda_launch(&fresh, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("CUDA_ERROR_NO_BINARY_FOR_GPU");
    cuda_fail("cuModuleLoadDataEx", 0); /* a failed load is not cached: the next one loads */
    CHECK_STATUS(tile_cuda_launch(&fresh, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);

    CHECK_STATUS(tile_cuda_launch(&empty, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("the module has no images");
}

/* PTX whose size does not include a NUL reaches the driver NUL-terminated (a copy). */
static void test_cuda_ptx_without_nul(void) {
    static const struct {
        char text[22];
        char after[4];
    } ptx = {{'/', '/', 'F', 'A', 'K', 'E', ' ', 'P', 'T', 'X', ' ', 'k', 'e', 'r', 'n', 'e', 'l', 's', ':', ' ',
              'k', '1'},
             "XXX"};
    static const tile_gpu_image images[] = {{TILE_GPU_IMAGE_PTX, 0, "compute_80", ptx.text, sizeof(ptx.text)}};
    tile_gpu_module module = TILE_GPU_MODULE_INIT("ptx.tile", images, 1);
    open_fake_cuda();
    cuda_make_current(0);
    CHECK_STATUS(tile_cuda_launch(&module, "k1", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(strcmp(cuda_stats->last_image_text, "//FAKE PTX kernels: k1") == 0);
    CHECK(cuda_stats->last_image != ptx.text);
}

static tile_gpu_module threaded = TILE_GPU_MODULE_INIT("threaded.tile", mixed_images, 7);

static void* launch_many(void* arg) {
    long* errors = (long*)arg;
    int i;
    for (i = 0; i < 50; ++i)
        if (tile_cuda_launch(&threaded, i % 2 ? "scale" : "gemm", NULL, grid_4x2, block_128, 64 * 1024, NULL) !=
            TILE_SUCCESS)
            ++*errors;
    return NULL;
}

/* Threads racing on a fresh module and a driver not yet loaded: one driver load, one
 * module load, one lookup per kernel, one attribute call per kernel, every launch. */
static void test_cuda_threads(void) {
    pthread_t threads[8];
    long errors[8] = {0};
    int i;
    open_fake_cuda();
    for (i = 0; i < 8; ++i) CHECK(pthread_create(&threads[i], NULL, launch_many, &errors[i]) == 0);
    for (i = 0; i < 8; ++i) {
        pthread_join(threads[i], NULL);
        CHECK(errors[i] == 0);
    }
    CHECK(cuda_stats->init_calls == 1);
    CHECK(cuda_stats->primary_retains == 1);
    CHECK(cuda_stats->module_loads == 1);
    CHECK(cuda_stats->get_function_calls == 2);
    CHECK(cuda_stats->set_attribute_calls == 2);
    CHECK(cuda_stats->launches == 400);
}

/* cuInit fails for want of a device: TILE_ERROR_NO_DEVICE, every time, without retrying. */
static void test_cuda_init_fails(void) {
    open_fake_cuda();
    cuda_fail("cuInit", 100);
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_NO_DEVICE);
    CHECK_MESSAGE_HAS("no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE");
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_NO_DEVICE);
    CHECK(cuda_stats->init_calls == 1);
}

/* A library without cuLaunchKernel is no driver. */
static void test_cuda_incomplete_driver(void) {
    CHECK_STATUS(tile_cuda_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_NO_DRIVER);
    CHECK_MESSAGE_HAS("the CUDA driver library lacks cuLaunchKernel");
}

/* ---- the fake HIP runtime --------------------------------------------------------------- */

static void test_hip_select(void) {
    void* args[1];
    int value = 3;
    void* stream = (void*)(uintptr_t)0x7000;
    args[0] = &value;
    open_fake_hip();
    hip_set_device(0, "gfx942:sramecc+:xnack-");
    hip_set_device(1, "gfx90a:sramecc-:xnack+");
    hip_set_device(2, "gfx1100");
    hip_set_device(3, "gfx942:sramecc-:xnack+");

    hip_set_current(0); /* gfx942:sramecc+ is the most specific that fits */
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", stream, grid_4x2, block_128, 70000, args), TILE_SUCCESS);
    CHECK(hip_stats->init_calls == 1);
    CHECK(hip_stats->module_loads == 1);
    CHECK(hip_stats->last_image == hsaco942_sramecc);
    CHECK(hip_stats->last_smem == 70000);
    CHECK(hip_stats->last_stream == stream);
    CHECK(hip_stats->last_args == args);
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", stream, grid_4x2, block_128, 0, args), TILE_SUCCESS);
    CHECK(hip_stats->module_loads == 1);
    CHECK(hip_stats->get_function_calls == 1);
    CHECK(hip_stats->launches == 2);

    hip_set_current(1); /* gfx90a */
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(hip_stats->last_image == hsaco90a);

    hip_set_current(3); /* xnack+ and sramecc-: gfx942:xnack+ */
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_SUCCESS);
    CHECK(hip_stats->last_image == hsaco942_xnack_on);

    hip_set_current(2); /* gfx1100: nothing */
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("gfx90a, gfx942:xnack+, gfx942, gfx942:sramecc+;");
    CHECK_MESSAGE_HAS("the device is gfx1100");
    CHECK(hip_stats->module_loads == 3);

    hip_set_current(0);
    hip_fail("hipModuleLaunchKernel", 701);
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_LAUNCH);
    CHECK_MESSAGE_HAS("kernel scale (module mixed.tile): hipModuleLaunchKernel failed: hipErrorLaunchOutOfResources");
    hip_fail("hipModuleLaunchKernel", 0);
    CHECK_STATUS(tile_hip_launch(&mixed, "gemm", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_DRIVER);
    CHECK_MESSAGE_HAS("hipModuleGetFunction failed: hipErrorNotFound");
    CHECK(hip_stats->module_loads == 3);
}

static void test_hip_init_fails(void) {
    open_fake_hip();
    hip_fail("hipInit", 100);
    CHECK_STATUS(tile_hip_launch(&mixed, "scale", NULL, grid_4x2, block_128, 0, NULL), TILE_ERROR_NO_DEVICE);
    CHECK_MESSAGE_HAS("no HIP device: hipInit failed: hipErrorNoDevice");
}

/* ---- main -------------------------------------------------------------------------------- */

typedef struct Case {
    const char* name;
    void (*run)(void);
} Case;

static const Case cases[] = {
    {"no_driver", test_no_driver},
    {"default_libraries", test_default_libraries},
    {"invalid_arguments", test_invalid_arguments},
    {"cuda_select", test_cuda_select},
    {"cuda_primary_context", test_cuda_primary_context},
    {"cuda_shared_memory", test_cuda_shared_memory},
    {"cuda_errors", test_cuda_errors},
    {"cuda_ptx_without_nul", test_cuda_ptx_without_nul},
    {"cuda_threads", test_cuda_threads},
    {"cuda_init_fails", test_cuda_init_fails},
    {"cuda_incomplete_driver", test_cuda_incomplete_driver},
    {"hip_select", test_hip_select},
    {"hip_init_fails", test_hip_init_fails},
};

int main(int argc, char** argv) {
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: %s <case>\n", argv[0]);
        return 2;
    }
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].run();
            if (failures) fprintf(stderr, "%s: %d check(s) failed\n", argv[1], failures);
            return failures ? 1 : 0;
        }
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
