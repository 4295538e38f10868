/* A fake libamdhip64 for the runtime's GPU tests (fake_driver.h): the HIP functions
 * tile_hip_launch uses, with devices and failures the test controls, recording every
 * call. It exports hipGetDevicePropertiesR0600 and fills gcnArchName where ROCm 6 puts
 * it (offset 1160 of hipDeviceProp_tR0600 on LP64). Images are text, as in fake_cuda.c:
 * a module "contains" the kernels named after "kernels:"; real HSACO images (tilec's,
 * tests/gpu_host) contain the kernels their ELF symbol names name. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "fake_image.h"

#define EXPORT __attribute__((visibility("default")))
#define ARCH_NAME_OFFSET 1160

typedef int hipError_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_stats stats;
static char arch_names[FAKE_MAX_DEVICES][64] = {"gfx90a:sramecc+:xnack-"};
static __thread int current_device = 0;
static char failing_function[64];
static int failing_result;

typedef struct Module {
    char text[FAKE_TEXT_MAX];
    char* bytes; /* a real (ELF) image kept for hipModuleGetFunction; else NULL */
    size_t size;
} Module;

static int record_count = 0;
static unsigned record_sizes[FAKE_MAX_PARAMS];

EXPORT void fake_hip_record_params(int count, const unsigned* sizes) {
    int i;
    pthread_mutex_lock(&lock);
    record_count = count < FAKE_MAX_PARAMS ? count : FAKE_MAX_PARAMS;
    for (i = 0; i < record_count; ++i) record_sizes[i] = sizes[i] < 8 ? sizes[i] : 8;
    pthread_mutex_unlock(&lock);
}
typedef struct Function {
    char name[FAKE_TEXT_MAX];
} Function;

static int failure_of(const char* function) {
    int result;
    pthread_mutex_lock(&lock);
    result = strcmp(failing_function, function) == 0 ? failing_result : 0;
    pthread_mutex_unlock(&lock);
    return result;
}

EXPORT fake_stats* fake_hip_stats(void) { return &stats; }

EXPORT void fake_hip_fail(const char* function, int result) {
    pthread_mutex_lock(&lock);
    strncpy(failing_function, function, sizeof(failing_function) - 1);
    failing_result = result;
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_hip_set_device(int ordinal, const char* arch) {
    pthread_mutex_lock(&lock);
    strncpy(arch_names[ordinal], arch, sizeof(arch_names[ordinal]) - 1);
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_hip_set_current(int ordinal) { current_device = ordinal; }

EXPORT hipError_t hipInit(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    ++stats.init_calls;
    pthread_mutex_unlock(&lock);
    return failure_of("hipInit");
}

static const char* error_name(hipError_t e) {
    switch (e) {
    case 0: return "hipSuccess";
    case 1: return "hipErrorInvalidValue";
    case 100: return "hipErrorNoDevice";
    case 209: return "hipErrorNoBinaryForGpu";
    case 500: return "hipErrorNotFound";
    case 701: return "hipErrorLaunchOutOfResources";
    default: return "hipErrorUnknown";
    }
}

EXPORT const char* hipGetErrorName(hipError_t e) { return error_name(e); }
EXPORT const char* hipGetErrorString(hipError_t e) { return e == 0 ? "no error" : "fake hip error text"; }

EXPORT hipError_t hipGetDevice(int* device) {
    int fail = failure_of("hipGetDevice");
    if (fail) return fail;
    *device = current_device;
    return 0;
}

EXPORT hipError_t hipGetDevicePropertiesR0600(void* props, int device) {
    if (device < 0 || device >= FAKE_MAX_DEVICES || arch_names[device][0] == '\0') return 101;
    pthread_mutex_lock(&lock);
    strcpy((char*)props + ARCH_NAME_OFFSET, arch_names[device]);
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT hipError_t hipModuleLoadData(void** module, const void* image) {
    int fail = failure_of("hipModuleLoadData");
    Module* m;
    if (fail) return fail;
    m = (Module*)calloc(1, sizeof(Module));
    strncpy(m->text, (const char*)image, sizeof(m->text) - 1);
    if (strncmp((const char*)image, "\177ELF", 4) == 0) {
        m->size = elf_size((const unsigned char*)image);
        m->bytes = (char*)malloc(m->size);
        memcpy(m->bytes, image, m->size);
    }
    pthread_mutex_lock(&lock);
    ++stats.module_loads;
    stats.last_image = image;
    memcpy(stats.last_image_text, m->text, sizeof(m->text));
    pthread_mutex_unlock(&lock);
    *module = m;
    return 0;
}

EXPORT hipError_t hipModuleGetFunction(void** function, void* module, const char* name) {
    const Module* m = (const Module*)module;
    const char* kernels = strstr(m->text, "kernels:");
    Function* f;
    pthread_mutex_lock(&lock);
    ++stats.get_function_calls;
    pthread_mutex_unlock(&lock);
    if (m->bytes != NULL) {
        if (!real_image_has(m->bytes, m->size, name)) return 500;
    } else if (kernels == NULL || strstr(kernels, name) == NULL) {
        return 500;
    }
    f = (Function*)calloc(1, sizeof(Function));
    strncpy(f->name, name, sizeof(f->name) - 1);
    *function = f;
    return 0;
}

EXPORT hipError_t hipModuleLaunchKernel(void* function, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                                        void* stream, void** params, void** extra) {
    Function* f = (Function*)function;
    int fail = failure_of("hipModuleLaunchKernel");
    if (fail) return fail;
    if (extra != NULL) return 1;
    pthread_mutex_lock(&lock);
    ++stats.launches;
    stats.last_grid[0] = gx;
    stats.last_grid[1] = gy;
    stats.last_grid[2] = gz;
    stats.last_block[0] = bx;
    stats.last_block[1] = by;
    stats.last_block[2] = bz;
    stats.last_smem = smem;
    stats.last_stream = stream;
    stats.last_args = params;
    {
        int i;
        for (i = 0; i < record_count; ++i) memcpy(stats.last_params[i], params[i], record_sizes[i]);
    }
    memcpy(stats.last_kernel, f->name, sizeof(f->name));
    pthread_mutex_unlock(&lock);
    return 0;
}
