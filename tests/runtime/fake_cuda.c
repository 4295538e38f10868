/* A fake libcuda for the runtime's GPU tests (fake_driver.h): the driver API functions
 * tile_cuda_launch uses, with devices, contexts, modules and failures the test controls,
 * recording every call. Images are text: a module "contains" the kernels named after
 * "kernels:" in its image; real images (tilec's embedded cubins and PTX, tests/gpu_host)
 * contain the kernels their ELF string table or PTX `.entry` names. Memory functions
 * (cuMemAlloc_v2, cuMemcpyHtoD_v2, ...) work on host memory, and a launch runs nothing:
 * tests/gpu uses that to check that its harness notices a kernel that wrote nothing.
 * Built with FAKE_CUDA_WITHOUT_LAUNCH, it lacks cuLaunchKernel (an incomplete driver). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_common.h"
#include "fake_driver.h"
#include "fake_image.h"

typedef int CUresult;

typedef struct Device {
    int present, major, minor, optin;
} Device;
static Device devices[FAKE_MAX_DEVICES] = {{1, 8, 0, 167936}};

/* Contexts are the handles (void*)(ordinal + 1); a new thread has none current. */
static __thread int current_ctx = 0;

typedef struct Failure {
    char function[64];
    int result;
} Failure;
static Failure failures[16];

EXPORT void fake_cuda_record_params(int count, const unsigned* sizes) { set_record_params(count, sizes); }

typedef struct Function {
    char name[FAKE_TEXT_MAX];
    int max_dynamic_smem;
} Function;

static int failure_of(const char* function) {
    int i, result = 0;
    pthread_mutex_lock(&lock);
    for (i = 0; i < 16; ++i)
        if (strcmp(failures[i].function, function) == 0) result = failures[i].result;
    pthread_mutex_unlock(&lock);
    return result;
}

EXPORT fake_stats* fake_cuda_stats(void) { return &stats; }

EXPORT void fake_cuda_fail(const char* function, int result) {
    int i, slot = -1;
    pthread_mutex_lock(&lock);
    for (i = 0; i < 16 && slot < 0; ++i)
        if (strcmp(failures[i].function, function) == 0) slot = i;
    for (i = 0; i < 16 && slot < 0; ++i)
        if (failures[i].function[0] == '\0') slot = i;
    if (slot >= 0) {
        strncpy(failures[slot].function, function, sizeof(failures[slot].function) - 1);
        failures[slot].result = result;
    }
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_set_device(int ordinal, int major, int minor, int optin) {
    Device d;
    d.present = 1;
    d.major = major;
    d.minor = minor;
    d.optin = optin;
    pthread_mutex_lock(&lock);
    devices[ordinal] = d;
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_make_current(int ordinal) { current_ctx = ordinal + 1; }

EXPORT CUresult cuInit(unsigned int flags) {
    int fail = failure_of("cuInit");
    (void)flags;
    count_call(&stats.init_calls);
    return fail;
}

static const char* error_name(CUresult r) {
    switch (r) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    default: return NULL;
    }
}

EXPORT CUresult cuGetErrorName(CUresult error, const char** out) {
    *out = error_name(error);
    return *out ? 0 : 1;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char** out) {
    *out = error_name(error) ? "fake driver error text" : NULL;
    return *out ? 0 : 1;
}

static int device_count(void) {
    int i, n = 0;
    for (i = 0; i < FAKE_MAX_DEVICES; ++i)
        if (devices[i].present) n = i + 1;
    return n;
}

EXPORT CUresult cuDeviceGetCount(int* count) {
    pthread_mutex_lock(&lock);
    *count = device_count();
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT CUresult cuDeviceGet(int* device, int ordinal) {
    if (ordinal < 0 || ordinal >= FAKE_MAX_DEVICES || !devices[ordinal].present) return 101;
    *device = ordinal;
    return 0;
}

EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
    Device d;
    if (device < 0 || device >= FAKE_MAX_DEVICES) return 101;
    pthread_mutex_lock(&lock);
    d = devices[device];
    pthread_mutex_unlock(&lock);
    switch (attribute) {
    case 75: *value = d.major; return 0;
    case 76: *value = d.minor; return 0;
    case 97: *value = d.optin; return 0;
    default: return 1;
    }
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, int device) {
    count_call(&stats.primary_retains);
    *ctx = (void*)(uintptr_t)(device + 1);
    return 0;
}

EXPORT CUresult cuCtxGetCurrent(void** ctx) {
    *ctx = (void*)(uintptr_t)current_ctx;
    return 0;
}

EXPORT CUresult cuCtxSetCurrent(void* ctx) {
    count_call(&stats.set_current_calls);
    current_ctx = (int)(uintptr_t)ctx;
    return 0;
}

EXPORT CUresult cuCtxGetDevice(int* device) {
    if (current_ctx == 0) return 201;
    *device = current_ctx - 1;
    return 0;
}

EXPORT CUresult cuCtxGetId(void* ctx, unsigned long long* id) {
    *id = 1000 + (unsigned long long)(uintptr_t)ctx;
    return 0;
}

EXPORT CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned int num_options, int* options,
                                   void** values) {
    const char* text = (const char*)image;
    int fail = failure_of("cuModuleLoadDataEx");
    Module* m;
    unsigned i;
    if (current_ctx == 0) return 201;
    if (fail == 0 && strncmp(text, "//BAD PTX", 9) == 0) {
        for (i = 0; i < num_options; ++i)
            if (options[i] == 5) strcpy((char*)values[i], "ptxas application ptx input, line 1; fatal: fake");
        fail = 218;
    }
    if (fail) return fail;
    m = (Module*)calloc(1, sizeof(Module));
    strncpy(m->text, text, sizeof(m->text) - 1);
    if (strstr(m->text, "kernels:") == NULL) {
        m->size = strncmp(text, "\177ELF", 4) == 0 ? elf_size((const unsigned char*)image) : strlen(text) + 1;
        m->bytes = (char*)malloc(m->size);
        memcpy(m->bytes, image, m->size);
    }
    record_module_load(image, m);
    *module = m;
    return 0;
}

EXPORT CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
    const Module* m = (const Module*)module;
    const char* kernels = strstr(m->text, "kernels:");
    const char* found = kernels ? strstr(kernels, name) : NULL;
    size_t n = strlen(name);
    Function* f;
    count_call(&stats.get_function_calls);
    if (m->bytes != NULL) {
        if (!real_image_has(m->bytes, m->size, name)) return 500;
    } else if (found == NULL || (found[n] != ' ' && found[n] != '\0' && found[n] != '\n')) {
        return 500;
    }
    f = (Function*)calloc(1, sizeof(Function));
    strncpy(f->name, name, sizeof(f->name) - 1);
    f->max_dynamic_smem = 48 * 1024;
    *function = f;
    return 0;
}

EXPORT CUresult cuFuncSetAttribute(void* function, int attribute, int value) {
    Function* f = (Function*)function;
    if (attribute != 8 || current_ctx == 0) return 1;
    if (value > devices[current_ctx - 1].optin) return 1;
    pthread_mutex_lock(&lock);
    ++stats.set_attribute_calls;
    stats.last_attribute_value = value;
    f->max_dynamic_smem = value;
    pthread_mutex_unlock(&lock);
    return 0;
}

#ifndef FAKE_CUDA_WITHOUT_LAUNCH
EXPORT CUresult cuLaunchKernel(void* function, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int smem, void* stream, void** params,
                               void** extra) {
    Function* f = (Function*)function;
    int fail = failure_of("cuLaunchKernel");
    if (fail) return fail;
    if (extra != NULL || (unsigned long long)bx * by * bz > 1024) return 1;
    if ((int)smem > f->max_dynamic_smem) return 1; /* the attribute was not raised first */
    record_launch(f->name, gx, gy, gz, bx, by, bz, smem, stream, params);
    return 0;
}
#endif

/* cuda.h's signature; the map must be 64-byte aligned. */
EXPORT CUresult cuTensorMapEncodeTiled(void* map, int type, unsigned rank, void* address, const unsigned long long* dims,
                                       const unsigned long long* strides, const unsigned* box,
                                       const unsigned* element_strides, int interleave, int swizzle, int l2, int oob) {
    unsigned i;
    int fail = failure_of("cuTensorMapEncodeTiled");
    if (fail) return fail;
    if ((uintptr_t)map % 64 != 0 || rank < 1 || rank > 5 || (uintptr_t)address % 16 != 0 || interleave != 0 ||
        oob != 0 || l2 < 0 || l2 > 3)
        return 1;
    for (i = 0; i < rank; ++i)
        if (element_strides[i] != 1 || box[i] < 1 || box[i] > 256) return 1;
    pthread_mutex_lock(&lock);
    stats.tensor_map_encodes++;
    stats.last_map_type = type;
    stats.last_map_rank = rank;
    stats.last_map_address = address;
    memset(stats.last_map_dims, 0, sizeof stats.last_map_dims);
    memset(stats.last_map_strides, 0, sizeof stats.last_map_strides);
    memset(stats.last_map_box, 0, sizeof stats.last_map_box);
    for (i = 0; i < rank; ++i) {
        stats.last_map_dims[i] = dims[i];
        stats.last_map_box[i] = box[i];
        if (i + 1 < rank) stats.last_map_strides[i] = strides[i];
    }
    stats.last_map_swizzle = swizzle;
    pthread_mutex_unlock(&lock);
    memset(map, 0, 128);
    memcpy(map, &address, sizeof address);
    memcpy((char*)map + 8, &swizzle, sizeof swizzle);
    return 0;
}

/* Device memory is host memory here; nothing runs on it. */
EXPORT CUresult cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
    void* p = malloc(bytes ? bytes : 1);
    if (p == NULL) return 2;
    *ptr = (unsigned long long)(uintptr_t)p;
    return 0;
}

EXPORT CUresult cuMemFree_v2(unsigned long long ptr) {
    free((void*)(uintptr_t)ptr);
    return 0;
}

EXPORT CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t bytes) {
    memcpy((void*)(uintptr_t)dst, src, bytes);
    return 0;
}

EXPORT CUresult cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
    memcpy(dst, (const void*)(uintptr_t)src, bytes);
    return 0;
}

EXPORT CUresult cuCtxSynchronize(void) { return current_ctx == 0 ? 201 : 0; }
