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

#include "fake_common.h"
#include "fake_driver.h"
#include "fake_image.h"

#define ARCH_NAME_OFFSET 1160

typedef int hipError_t;

static char arch_names[FAKE_MAX_DEVICES][64] = {"gfx90a:sramecc+:xnack-"};
static __thread int current_device = 0;
static char failing_function[64];
static int failing_result;

EXPORT void fake_hip_record_params(int count, const unsigned* sizes) { set_record_params(count, sizes); }

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
    count_call(&stats.init_calls);
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
    record_module_load(image, m);
    *module = m;
    return 0;
}

EXPORT hipError_t hipModuleGetFunction(void** function, void* module, const char* name) {
    const Module* m = (const Module*)module;
    const char* kernels = strstr(m->text, "kernels:");
    Function* f;
    count_call(&stats.get_function_calls);
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
    record_launch(f->name, gx, gy, gz, bx, by, bz, smem, stream, params);
    return 0;
}
