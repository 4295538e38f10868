/* One object per kernel file holding host, CUDA and HIP code (tilec
 * --target=host,sm_80,sm_90,gfx90a,gfx942,gfx1100 -o k.o), called from C99 on a machine
 * without a GPU: the CPU entry points run, the _cuda and _hip ones check their arguments,
 * report a missing driver cleanly, and, against the fake libcuda / libamdhip64 of
 * tests/runtime (TILE_CUDA_LIBRARY, TILE_HIP_LIBRARY), launch the right kernel with the
 * right grid, block and parameters from the image the device's compute capability (CUDA)
 * or gcnArchName (HIP) selects. One ctest test per case (`gpu_host_test <case>`): each
 * driver is loaded once per process. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_checks.h"
#include "fake_client.h"
#include "fake_driver.h"
#include "gemm_tma.h"
#include "saxpy_gpu.h"
#include "shared_64k.h"
#include "tile/runtime.h"
#include "vector_add_gpu.h"

/* ---- the fake driver --------------------------------------------------------------------- */

static fake_stats* stats;
static fake_cuda_set_device_fn set_device;
static fake_cuda_make_current_fn make_current;
static fake_cuda_record_params_fn record_params;
static fake_stats* hip_stats;
static fake_hip_set_device_fn hip_set_device;
static fake_hip_set_current_fn hip_set_current;
static fake_hip_record_params_fn hip_record_params;

/* The same instance of the fake as the runtime loads (dlopen of one path). */
static void open_fake(void) {
    void* library = open_fake_library("TILE_CUDA_LIBRARY", "driver");
    fake_stats_fn stats_fn;
    fake_symbol(library, "fake_cuda_stats", &stats_fn, sizeof(stats_fn));
    fake_symbol(library, "fake_cuda_set_device", &set_device, sizeof(set_device));
    fake_symbol(library, "fake_cuda_make_current", &make_current, sizeof(make_current));
    fake_symbol(library, "fake_cuda_record_params", &record_params, sizeof(record_params));
    stats = stats_fn();
}

/* The same instance of the fake libamdhip64 as the runtime loads. */
static void open_fake_hip(void) {
    void* library = open_fake_library("TILE_HIP_LIBRARY", "HIP runtime");
    fake_stats_fn stats_fn;
    fake_symbol(library, "fake_hip_stats", &stats_fn, sizeof(stats_fn));
    fake_symbol(library, "fake_hip_set_device", &hip_set_device, sizeof(hip_set_device));
    fake_symbol(library, "fake_hip_set_current", &hip_set_current, sizeof(hip_set_current));
    fake_symbol(library, "fake_hip_record_params", &hip_record_params, sizeof(hip_record_params));
    hip_stats = stats_fn();
}

/* The processor of the HSACO the last hipModuleLoadData got, from its ELF header's
 * EF_AMDGPU_MACH (e_flags bits 0..7; the values of LLVM's ELF.h / the AMDGPU ELF ABI). */
static const char* last_hsaco_arch(void) {
    const unsigned char* image = (const unsigned char*)hip_stats->last_image;
    uint32_t flags;
    if (image == NULL) return "none";
    if (memcmp(image, "\177ELF", 4) != 0 || image[7] != 64 /* ELFOSABI_AMDGPU_HSA */) return "not an HSACO";
    memcpy(&flags, image + 48, 4);
    switch (flags & 0xff) {
    case 0x3f: return "gfx90a";
    case 0x4c: return "gfx942";
    case 0x41: return "gfx1100";
    default: return "another gfx";
    }
}

static int64_t hip_param_i64(int i) {
    int64_t v;
    memcpy(&v, hip_stats->last_params[i], 8);
    return v;
}

static void* hip_param_ptr(int i) {
    void* v;
    memcpy(&v, hip_stats->last_params[i], sizeof(v));
    return v;
}

/* What the last module load got: "sm_80" / "sm_90" for a cubin (its ELF e_flags; the
 * arch sits in bits 8..15 from ELF ABI version 8, bits 0..7 before), "ptx" for PTX. */
static const char* last_image_arch(void) {
    static char arch[16];
    const unsigned char* image = (const unsigned char*)stats->last_image;
    uint32_t flags;
    unsigned sm;
    if (image == NULL) return "none";
    if (memcmp(image, "\177ELF", 4) != 0) return strstr((const char*)image, ".target sm_80") ? "ptx" : "other";
    memcpy(&flags, image + 48, 4);
    sm = image[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    sprintf(arch, "sm_%u", sm);
    return arch;
}

static int64_t param_i64(int i) {
    int64_t v;
    memcpy(&v, stats->last_params[i], 8);
    return v;
}

static void* param_ptr(int i) {
    void* v;
    memcpy(&v, stats->last_params[i], sizeof(v));
    return v;
}

/* ---- cases ------------------------------------------------------------------------------- */

/* The CPU entry points of the mixed object compute what they should; the CUDA ones find
 * no driver (TILE_CUDA_LIBRARY names a missing file). */
static void test_cpu_and_no_driver(void) {
    enum { N = 3000 };
    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float)), *c = malloc(N * sizeof(float));
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    int i, bad = 0;
    for (i = 0; i < N; ++i) {
        a[i] = (float)i * 0.5f;
        b[i] = 1.0f - (float)i;
        c[i] = -99.0f;
        x[i] = (float)(i % 17);
        y[i] = (float)(i % 5) - 2.0f;
    }
    CHECK_STATUS(vector_add_f32_cpu(NULL, a, b, c, N), TILE_SUCCESS);
    for (i = 0; i < N; ++i) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
    CHECK_STATUS(saxpy_f32_cpu(NULL, x, y, N - 7, 2.5f), TILE_SUCCESS);
    for (i = 0; i < N; ++i) {
        float want = i < N - 7 ? 2.5f * (float)(i % 17) + ((float)(i % 5) - 2.0f) : (float)(i % 5) - 2.0f;
        bad += fabsf(y[i] - want) > 1e-6f * (1.0f + fabsf(want));
    }
    CHECK(bad == 0);

    CHECK_STATUS(vector_add_f32_cuda(NULL, a, b, c, N), TILE_ERROR_NO_DRIVER);
    CHECK_MESSAGE_HAS("no CUDA driver found");
    CHECK_STATUS(saxpy_f32_cuda(NULL, x, y, N, 2.5f), TILE_ERROR_NO_DRIVER);
    CHECK_MESSAGE_HAS("no CUDA driver found");
    /* The same object's HIP entry points find no HIP runtime (TILE_HIP_LIBRARY names a
     * missing file). Host pointers of malloc are 16-byte aligned, so the checks pass. */
    CHECK_STATUS(vector_add_f32_hip(NULL, a, b, c, N), TILE_ERROR_NO_DRIVER);
    CHECK_MESSAGE_HAS("no HIP runtime found (/nonexistent/libamdhip64.so");
    CHECK_STATUS(saxpy_f32_hip(NULL, x, y, N, 2.5f), TILE_ERROR_NO_DRIVER);
    CHECK_MESSAGE_HAS("no HIP runtime found");
    /* The CPU entry points still work after the failed driver loads. */
    CHECK_STATUS(vector_add_f32_cpu(NULL, a, b, c, 10), TILE_SUCCESS);
    bad = 0;
    for (i = 0; i < 10; ++i) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
    free(a);
    free(b);
    free(c);
    free(x);
    free(y);
}

/* With the default libcuda.so.1: on a machine without one, NO_DRIVER; where a driver is
 * installed the outcome depends on the machine and is only printed. */
static void test_default_driver(void) {
    float a[4] = {1, 2, 3, 4}, c[4];
    void* real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    tile_status s = vector_add_f32_cuda(NULL, a, a, c, 4);
    if (real == NULL) {
        CHECK(s == TILE_ERROR_NO_DRIVER);
        CHECK_MESSAGE_HAS("no CUDA driver found (libcuda.so.1");
    } else {
        printf("a CUDA driver is installed: vector_add_f32_cuda with host pointers gave %s (%s)\n",
               tile_status_string(s), tile_last_error());
    }
    /* HIP: libamdhip64.so, then .so.7, .so.6, .so.5; the message names the first. */
    real = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (real == NULL) real = dlopen("libamdhip64.so.7", RTLD_NOW | RTLD_LOCAL);
    if (real == NULL) real = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_LOCAL);
    if (real == NULL) real = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
    {
        static float buffer[12];
        float* aligned = (float*)(((uintptr_t)buffer + 15) & ~(uintptr_t)15);
        s = vector_add_f32_hip(NULL, aligned, aligned, aligned, 4);
    }
    if (real == NULL) {
        CHECK(s == TILE_ERROR_NO_DRIVER);
        CHECK_MESSAGE_HAS("no HIP runtime found (libamdhip64.so");
    } else {
        printf("a HIP runtime is installed: vector_add_f32_hip with host pointers gave %s (%s)\n",
               tile_status_string(s), tile_last_error());
    }
}

/* Bad arguments are reported before the driver is touched, and an empty grid succeeds
 * without it. */
static void test_arguments(void) {
    static float buffer[64];
    float* aligned = (float*)(((uintptr_t)buffer + 15) & ~(uintptr_t)15);
    open_fake();
    CHECK_STATUS(vector_add_f32_cuda(NULL, NULL, aligned, aligned, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_cuda: tensor A is NULL");
    CHECK_STATUS(vector_add_f32_cuda(NULL, aligned, aligned, NULL, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_cuda: tensor C is NULL");
    CHECK_STATUS(vector_add_f32_cuda(NULL, aligned, aligned, aligned, -1), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_cuda: size N = -1 is negative");
    CHECK_STATUS(vector_add_f32_cuda(NULL, aligned, aligned + 1, aligned, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_cuda: tensor B = ");
    CHECK_MESSAGE_HAS("is not 16-byte aligned");
    CHECK_STATUS(saxpy_f32_cuda(NULL, aligned, NULL, 5, 1.0f), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("saxpy_f32_cuda: tensor y is NULL");
    CHECK_STATUS(saxpy_f32_cuda(NULL, aligned, aligned, -7, 1.0f), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("saxpy_f32_cuda: size N = -7 is negative");
    /* Sizes whose bytes or grid leave int64 are refused as on the CPU (e2e/sizes). */
    CHECK_STATUS(vector_add_f32_cuda(NULL, aligned, aligned, aligned, INT64_MAX), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_cuda: tensor A [9223372036854775807] of f32 has more bytes than int64 can count");
    /* No elements: NULL tensors are fine and nothing is launched. */
    CHECK_STATUS(vector_add_f32_cuda(NULL, NULL, NULL, NULL, 0), TILE_SUCCESS);
    CHECK_STATUS(saxpy_f32_cuda((void*)0x1234, NULL, NULL, 0, 3.0f), TILE_SUCCESS);
    CHECK(stats->init_calls == 0);
    CHECK(stats->module_loads == 0);
    CHECK(stats->launches == 0);
}

/* The HIP entry points check what the CUDA ones do, in the same words (named after
 * themselves), with HIP's grid limit: grid x block below 2^32 per axis. */
static void test_hip_arguments(void) {
    static float buffer[64];
    float* aligned = (float*)(((uintptr_t)buffer + 15) & ~(uintptr_t)15);
    /* vector_add: 1024 elements and 128 work-items per block, so at most
     * (2^32 - 1) / 128 = 33554431 blocks: N = 33554432 * 1024 is one block too many. */
    const int64_t too_many = (int64_t)33554432 * 1024;
    open_fake_hip();
    CHECK_STATUS(vector_add_f32_hip(NULL, NULL, aligned, aligned, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_hip: tensor A is NULL");
    CHECK_STATUS(vector_add_f32_hip(NULL, aligned, aligned, NULL, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_hip: tensor C is NULL");
    CHECK_STATUS(vector_add_f32_hip(NULL, aligned, aligned, aligned, -1), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_hip: size N = -1 is negative");
    CHECK_STATUS(vector_add_f32_hip(NULL, aligned, aligned + 1, aligned, 10), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_hip: tensor B = ");
    CHECK_MESSAGE_HAS("is not 16-byte aligned");
    CHECK_STATUS(saxpy_f32_hip(NULL, aligned, NULL, 5, 1.0f), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("saxpy_f32_hip: tensor y is NULL");
    CHECK_STATUS(vector_add_f32_hip(NULL, aligned, aligned, aligned, too_many), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE_HAS("vector_add_f32_hip: the grid's x extent (");
    CHECK_MESSAGE_HAS(") = 33554432 exceeds HIP's limit of 33554431 blocks");
    /* No elements: NULL tensors are fine and nothing is launched. */
    CHECK_STATUS(vector_add_f32_hip(NULL, NULL, NULL, NULL, 0), TILE_SUCCESS);
    CHECK_STATUS(saxpy_f32_hip((void*)0x1234, NULL, NULL, 0, 3.0f), TILE_SUCCESS);
    CHECK(hip_stats->init_calls == 0);
    CHECK(hip_stats->module_loads == 0);
    CHECK(hip_stats->launches == 0);
    /* CUDA's x limit (2^31 - 1 blocks) is wider: the same call passes the CUDA checks and
     * fails later, for want of a driver (TILE_CUDA_LIBRARY names a missing file). */
    CHECK_STATUS(vector_add_f32_cuda(NULL, aligned, aligned, aligned, too_many), TILE_ERROR_NO_DRIVER);
    /* One block fewer is within HIP's limit and launches. */
    CHECK_STATUS(vector_add_f32_hip(NULL, aligned, aligned, aligned, too_many - 1024), TILE_SUCCESS);
    CHECK(hip_stats->launches == 1);
    CHECK(hip_stats->last_grid[0] == 33554431u);
}

static void launch_vector_add(int ordinal, const char* want_arch) {
    int loads = stats->module_loads, launches = stats->launches;
    make_current(ordinal);
    CHECK_STATUS(vector_add_f32_cuda((void*)0x5000, (void*)0x10000, (void*)0x20000, (void*)0x30000, 3000),
                 TILE_SUCCESS);
    CHECK(stats->module_loads == loads + 1); /* a new context loads the module */
    CHECK(stats->launches == launches + 1);
    if (strcmp(last_image_arch(), want_arch) != 0) {
        fprintf(stderr, "device %d: got the %s image, expected %s\n", ordinal, last_image_arch(), want_arch);
        ++failures;
    }
}

/* Through the fake driver: what the entry point hands to cuLaunchKernel, and which
 * embedded image each compute capability gets. */
static void test_launch(void) {
    static const unsigned four_params[4] = {8, 8, 8, 8};
    static const unsigned saxpy_params[4] = {8, 8, 8, 4};
    float a;
    open_fake();
    record_params(4, four_params);

    /* Device 0 is 8.0: the sm_80 cubin. */
    launch_vector_add(0, "sm_80");
    CHECK(strcmp(stats->last_kernel, "vector_add_f32") == 0);
    CHECK(stats->last_grid[0] == 3 && stats->last_grid[1] == 1 && stats->last_grid[2] == 1);
    CHECK(stats->last_block[0] == 128 && stats->last_block[1] == 1 && stats->last_block[2] == 1);
    CHECK(stats->last_smem == 0);
    CHECK(stats->last_stream == (void*)0x5000);
    CHECK(param_ptr(0) == (void*)0x10000);
    CHECK(param_ptr(1) == (void*)0x20000);
    CHECK(param_ptr(2) == (void*)0x30000);
    CHECK(param_i64(3) == 3000);

    /* The other exports are kernels of the same module (no second load in this context). */
    CHECK_STATUS(vector_add_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 1025), TILE_SUCCESS);
    CHECK(strcmp(stats->last_kernel, "vector_add_f16") == 0);
    CHECK(stats->last_grid[0] == 2);
    CHECK(param_i64(3) == 1025);

    /* saxpy (another object, another module): x, y, N, a; 256 threads. */
    record_params(4, saxpy_params);
    CHECK_STATUS(saxpy_f32_cuda(NULL, (void*)0x40000, (void*)0x50000, 5000, 2.5f), TILE_SUCCESS);
    CHECK(strcmp(stats->last_kernel, "saxpy_f32") == 0);
    CHECK(stats->last_grid[0] == 5 && stats->last_block[0] == 256);
    CHECK(param_ptr(0) == (void*)0x40000);
    CHECK(param_ptr(1) == (void*)0x50000);
    CHECK(param_i64(2) == 5000);
    memcpy(&a, stats->last_params[3], 4);
    CHECK(a == 2.5f);
    CHECK(strcmp(last_image_arch(), "sm_80") == 0);

    /* 64 KiB of shared memory: dynamic on NVIDIA (the fake refuses a launch above 48 KiB
     * unless cuFuncSetAttribute raised the kernel's limit). */
    record_params(3, saxpy_params);
    CHECK_STATUS(copy_twice_cuda(NULL, (void*)0x40000, (void*)0x50000, 100), TILE_SUCCESS);
    CHECK(strcmp(stats->last_kernel, "copy_twice") == 0);
    CHECK(stats->last_grid[0] == 2 && stats->last_block[0] == 256);
    CHECK(stats->last_smem == 65536);
    CHECK(param_i64(2) == 100);
    record_params(4, four_params);

    /* The image by compute capability, one context per device: 8.6 runs sm_80, 9.0 has
     * its cubin, 12.0 has none and JIT-compiles the compute_80 PTX. */
    set_device(1, 8, 6, 101376);
    set_device(2, 9, 0, 232448);
    set_device(3, 12, 0, 232448);
    set_device(4, 7, 5, 65536);
    launch_vector_add(1, "sm_80");
    launch_vector_add(2, "sm_90");
    launch_vector_add(3, "ptx");
    CHECK(strcmp(stats->last_kernel, "vector_add_f32") == 0);

    /* 7.5: nothing runs there; the message lists what the object has. */
    make_current(4);
    CHECK_STATUS(vector_add_f32_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 3000),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("vector_add_f32");
    CHECK_MESSAGE_HAS("vector_add.tile");
    CHECK_MESSAGE_HAS("sm_80, sm_90, compute_80");
}

static void launch_vector_add_hip(int ordinal, const char* want_arch) {
    int loads = hip_stats->module_loads, launches = hip_stats->launches;
    hip_set_current(ordinal);
    CHECK_STATUS(vector_add_f32_hip((void*)0x6000, (void*)0x10000, (void*)0x20000, (void*)0x30000, 5000),
                 TILE_SUCCESS);
    CHECK(hip_stats->module_loads == loads + 1); /* a new device loads the module */
    CHECK(hip_stats->launches == launches + 1);
    if (strcmp(last_hsaco_arch(), want_arch) != 0) {
        fprintf(stderr, "HIP device %d: got the %s image, expected %s\n", ordinal, last_hsaco_arch(), want_arch);
        ++failures;
    }
    CHECK(strcmp(hip_stats->last_kernel, "vector_add_f32") == 0);
    CHECK(hip_stats->last_grid[0] == 5 && hip_stats->last_grid[1] == 1 && hip_stats->last_grid[2] == 1);
    CHECK(hip_stats->last_block[0] == 128 && hip_stats->last_block[1] == 1 && hip_stats->last_block[2] == 1);
    CHECK(hip_param_ptr(0) == (void*)0x10000);
    CHECK(hip_param_ptr(1) == (void*)0x20000);
    CHECK(hip_param_ptr(2) == (void*)0x30000);
    CHECK(hip_param_i64(3) == 5000);
}

/* Through the fake libamdhip64: the kernel, grid, block, stream and parameter bytes of
 * hipModuleLaunchKernel, and which embedded HSACO each gcnArchName gets. */
static void test_hip_launch(void) {
    static const unsigned four_params[4] = {8, 8, 8, 8};
    static const unsigned saxpy_params[4] = {8, 8, 8, 4};
    float a;
    open_fake_hip();
    hip_record_params(4, four_params);

    /* Device 0 is "gfx90a:sramecc+:xnack-": the gfx90a image (tilec's name "gfx90a" runs
     * with either feature setting). */
    launch_vector_add_hip(0, "gfx90a");
    CHECK(hip_stats->last_smem == 0);
    CHECK(hip_stats->last_stream == (void*)0x6000);

    /* The other exports are kernels of the same module (no second load on this device). */
    CHECK_STATUS(vector_add_bf16_hip(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 1025), TILE_SUCCESS);
    CHECK(strcmp(hip_stats->last_kernel, "vector_add_bf16") == 0);
    CHECK(hip_stats->last_grid[0] == 2);
    CHECK(hip_param_i64(3) == 1025);

    /* saxpy (another object, another module): x, y, N, a; 256 work-items. */
    hip_record_params(4, saxpy_params);
    CHECK_STATUS(saxpy_f32_hip(NULL, (void*)0x40000, (void*)0x50000, 5000, -1.25f), TILE_SUCCESS);
    CHECK(strcmp(hip_stats->last_kernel, "saxpy_f32") == 0);
    CHECK(hip_stats->last_grid[0] == 5 && hip_stats->last_block[0] == 256);
    CHECK(hip_param_ptr(0) == (void*)0x40000);
    CHECK(hip_param_ptr(1) == (void*)0x50000);
    CHECK(hip_param_i64(2) == 5000);
    memcpy(&a, hip_stats->last_params[3], 4);
    CHECK(a == -1.25f);
    CHECK(strcmp(last_hsaco_arch(), "gfx90a") == 0);

    /* 64 KiB of LDS is static on AMD: no dynamic bytes at launch. */
    hip_record_params(3, saxpy_params);
    CHECK_STATUS(copy_twice_hip(NULL, (void*)0x40000, (void*)0x50000, 100), TILE_SUCCESS);
    CHECK(strcmp(hip_stats->last_kernel, "copy_twice") == 0);
    CHECK(hip_stats->last_grid[0] == 2 && hip_stats->last_block[0] == 256);
    CHECK(hip_stats->last_smem == 0);
    hip_record_params(4, four_params);

    /* The image by gcnArchName, one module per device. */
    hip_set_device(1, "gfx942:sramecc+:xnack-");
    hip_set_device(2, "gfx1100");
    hip_set_device(3, "gfx1030");
    launch_vector_add_hip(1, "gfx942");
    launch_vector_add_hip(2, "gfx1100");

    /* gfx1030: nothing runs there; the message lists what the object has for HIP. */
    hip_set_current(3);
    CHECK_STATUS(vector_add_f32_hip(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 3000),
                 TILE_ERROR_NO_IMAGE_FOR_DEVICE);
    CHECK_MESSAGE_HAS("vector_add_f32");
    CHECK_MESSAGE_HAS("vector_add.tile");
    CHECK_MESSAGE_HAS("gfx90a, gfx942, gfx1100");
    CHECK_MESSAGE_HAS("gfx1030");
}

/* The sm_90a kernel of gemm_f16 copies its tiles through TMA: the entry point encodes one
 * tensor map per operand (A: box 32 x 128, 64-byte swizzle; B: two 64 x 32 boxes across
 * its tile, 128-byte swizzle) and one for C (the epilogue's TMA stores: two 64 x 128
 * boxes, 128-byte swizzle), and the runtime passes them after the six parameters. */
static void test_tma_launch(void) {
    static const unsigned nine_params[9] = {8, 8, 8, 8, 8, 8, 8, 8, 8};
    int encodes;
    open_fake();
    record_params(9, nine_params);
    set_device(0, 9, 0, 232448);
    set_device(1, 8, 0, 167936);
    make_current(0);
    CHECK_STATUS(gemm_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 128, 256), TILE_SUCCESS);
    CHECK(strcmp(last_image_arch(), "sm_90") == 0);
    CHECK(strcmp(stats->last_kernel, "gemm_f16") == 0);
    CHECK(stats->tensor_map_encodes == 3);
    /* The last map is C's: f16 [M = 256, N = 256] as UINT16, innermost first. */
    CHECK(stats->last_map_type == 1);
    CHECK(stats->last_map_rank == 2);
    CHECK(stats->last_map_address == (void*)0x30000);
    CHECK(stats->last_map_dims[0] == 256 && stats->last_map_dims[1] == 256);
    CHECK(stats->last_map_strides[0] == 512);
    CHECK(stats->last_map_box[0] == 64 && stats->last_map_box[1] == 128);
    CHECK(stats->last_map_swizzle == 3);
    CHECK(param_ptr(0) == (void*)0x10000);
    CHECK(param_i64(3) == 256 && param_i64(4) == 128 && param_i64(5) == 256);
    CHECK(param_ptr(6) == (void*)0x10000); /* map A (the fake wrote the address first) */
    CHECK(param_ptr(7) == (void*)0x20000); /* map B */
    CHECK(param_ptr(8) == (void*)0x30000); /* map C */

    /* K = 170: A's rows are 340 bytes, no tensor map: A's map is zeroed (the kernel copies
     * A with cp.async), B's and C's are encoded. */
    encodes = stats->tensor_map_encodes;
    CHECK_STATUS(gemm_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 170, 256), TILE_SUCCESS);
    CHECK(stats->tensor_map_encodes == encodes + 2);
    CHECK(param_ptr(6) == NULL);
    CHECK(param_ptr(7) == (void*)0x20000);
    CHECK(param_ptr(8) == (void*)0x30000);

    /* An 8.0 device runs the sm_80 kernel: its six parameters, no maps. */
    encodes = stats->tensor_map_encodes;
    record_params(6, nine_params);
    make_current(1);
    CHECK_STATUS(gemm_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 128, 256), TILE_SUCCESS);
    CHECK(strcmp(last_image_arch(), "sm_80") == 0);
    CHECK(stats->tensor_map_encodes == encodes);
}

/* The fat object of issue 13: gemm_f16 for host, sm_80, sm_90a, gfx90a, gfx942 and gfx1100
 * in one .o (gemm_tma.o). The CPU entry computes; each CUDA device and each HIP device gets
 * its own image of the same kernel, launched with the same grid and block. */
static void launch_gemm_hip(int ordinal, const char* want_arch) {
    int loads = hip_stats->module_loads;
    hip_set_current(ordinal);
    CHECK_STATUS(gemm_f16_hip(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 128, 384), TILE_SUCCESS);
    CHECK(hip_stats->module_loads == loads + 1);
    if (strcmp(last_hsaco_arch(), want_arch) != 0) {
        fprintf(stderr, "HIP device %d: got the %s image, expected %s\n", ordinal, last_hsaco_arch(), want_arch);
        ++failures;
    }
    CHECK(strcmp(hip_stats->last_kernel, "gemm_f16") == 0);
    /* grid (cdiv(N, 128), cdiv(M, 128)), 128 work-items: 2 waves of 64 or 4 of 32. */
    CHECK(hip_stats->last_grid[0] == 3 && hip_stats->last_grid[1] == 2 && hip_stats->last_grid[2] == 1);
    CHECK(hip_stats->last_block[0] == 128 && hip_stats->last_block[1] == 1);
    CHECK(hip_param_ptr(0) == (void*)0x10000 && hip_param_ptr(2) == (void*)0x30000);
    CHECK(hip_param_i64(3) == 256 && hip_param_i64(4) == 128 && hip_param_i64(5) == 384);
}

static void test_fat_launch(void) {
    static const unsigned six_params[6] = {8, 8, 8, 8, 8, 8};
    static const unsigned nine_params[9] = {8, 8, 8, 8, 8, 8, 8, 8, 8};
    /* C = A @ B on the CPU with A all 1.0 and B all 2.0 (f16 bits): every sum is 2 K. */
    enum { M = 3, K = 16, N = 5 };
    uint16_t A[M * K], B[K * N], C[M * N];
    int i;
    for (i = 0; i < M * K; ++i) A[i] = 0x3c00;
    for (i = 0; i < K * N; ++i) B[i] = 0x4000;
    CHECK_STATUS(gemm_f16_cpu(NULL, A, B, C, M, K, N), TILE_SUCCESS);
    for (i = 0; i < M * N; ++i) CHECK(C[i] == 0x5000); /* 32.0 */

    open_fake();
    set_device(0, 8, 0, 167936);
    set_device(1, 9, 0, 232448);
    record_params(6, six_params);
    make_current(0);
    CHECK_STATUS(gemm_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 128, 384), TILE_SUCCESS);
    CHECK(strcmp(last_image_arch(), "sm_80") == 0);
    CHECK(strcmp(stats->last_kernel, "gemm_f16") == 0);
    CHECK(stats->last_grid[0] == 3 && stats->last_grid[1] == 2 && stats->last_block[0] == 128);
    record_params(9, nine_params); /* the sm_90a kernel: six parameters and three tensor maps */
    make_current(1);
    CHECK_STATUS(gemm_f16_cuda(NULL, (void*)0x10000, (void*)0x20000, (void*)0x30000, 256, 128, 384), TILE_SUCCESS);
    CHECK(strcmp(last_image_arch(), "sm_90") == 0); /* the sm_90a cubin (ELF arch 90) */
    CHECK(stats->tensor_map_encodes == 3);

    open_fake_hip();
    hip_record_params(6, six_params);
    hip_set_device(1, "gfx942:sramecc+:xnack-");
    hip_set_device(2, "gfx1100");
    launch_gemm_hip(0, "gfx90a"); /* device 0 of the fake is gfx90a */
    launch_gemm_hip(1, "gfx942");
    launch_gemm_hip(2, "gfx1100");
}

typedef struct Case {
    const char* name;
    void (*run)(void);
} Case;

static const Case cases[] = {
    {"cpu_and_no_driver", test_cpu_and_no_driver},
    {"default_driver", test_default_driver},
    {"arguments", test_arguments},
    {"launch", test_launch},
    {"tma_launch", test_tma_launch},
    {"hip_arguments", test_hip_arguments},
    {"hip_launch", test_hip_launch},
    {"fat_launch", test_fat_launch},
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
