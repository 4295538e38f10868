/* The control interface of the fake GPU drivers that tests/runtime builds (fake_cuda.c,
 * fake_hip.c): shared libraries with the entry points tile_cuda_launch / tile_hip_launch
 * look up, loaded by the runtime through TILE_CUDA_LIBRARY / TILE_HIP_LIBRARY. The test
 * program dlopens the same library (so it gets the same instance), configures devices and
 * failures, and reads what the runtime called. No GPU, no real driver. */
#ifndef TILE_TESTS_FAKE_DRIVER_H
#define TILE_TESTS_FAKE_DRIVER_H

#define FAKE_MAX_DEVICES 8
#define FAKE_TEXT_MAX 256
#define FAKE_MAX_PARAMS 16

/* What the runtime did to the fake. Counters only grow. */
typedef struct fake_stats {
    int init_calls;
    int primary_retains;     /* CUDA: cuDevicePrimaryCtxRetain */
    int set_current_calls;   /* CUDA: cuCtxSetCurrent */
    int module_loads;        /* successful cuModuleLoadDataEx / hipModuleLoadData */
    const void* last_image;  /* the pointer the last load was given */
    char last_image_text[FAKE_TEXT_MAX]; /* its text (images of the tests are text) */
    int get_function_calls;
    int set_attribute_calls; /* CUDA: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    int last_attribute_value;
    int launches;            /* successful launches */
    unsigned last_grid[3];
    unsigned last_block[3];
    unsigned last_smem;
    void* last_stream;
    void** last_args;
    char last_kernel[FAKE_TEXT_MAX];
    /* The bytes of the last launch's parameters, copied at the launch (the args array
     * lives in the caller's frame): the first FAKE_MAX_PARAMS, as many bytes of each as
     * fake_cuda_record_params said (none until then). */
    unsigned char last_params[FAKE_MAX_PARAMS][8];
    /* CUDA: successful cuTensorMapEncodeTiled calls and the last one's arguments; the fake
     * writes the global address into the map's first 8 bytes and the swizzle into the
     * next 4, so a test can tell the maps apart among a launch's parameters. */
    int tensor_map_encodes;
    int last_map_type;
    unsigned last_map_rank;
    const void* last_map_address;
    unsigned long long last_map_dims[5];
    unsigned long long last_map_strides[4];
    unsigned last_map_box[5];
    int last_map_swizzle;
} fake_stats;

/* Exported by both fakes (prefix fake_cuda_ / fake_hip_). */
typedef fake_stats* (*fake_stats_fn)(void);
/* Makes `function` (e.g. "cuLaunchKernel") return `result` from now on; 0 clears it. */
typedef void (*fake_fail_fn)(const char* function, int result);

/* fake_cuda_set_device(ordinal, major, minor, optin_smem): adds or changes a device.
 * Device 0 is 8.0 with 163 KiB of opt-in shared memory until set. */
typedef void (*fake_cuda_set_device_fn)(int ordinal, int major, int minor, int optin_smem);
/* fake_cuda_make_current(ordinal): makes device ordinal's context current on this thread;
 * -1: no current context (the state of a new thread). */
typedef void (*fake_cuda_make_current_fn)(int ordinal);
/* fake_cuda_record_params(count, sizes): from now on a launch copies sizes[i] (<= 8)
 * bytes of each of its first `count` parameters into fake_stats.last_params. */
typedef void (*fake_cuda_record_params_fn)(int count, const unsigned* sizes);

/* fake_hip_set_device(ordinal, gcn_arch_name); fake_hip_set_current(ordinal). Device 0
 * is "gfx90a:sramecc+:xnack-" until set. */
typedef void (*fake_hip_set_device_fn)(int ordinal, const char* arch);
typedef void (*fake_hip_set_current_fn)(int ordinal);
/* fake_hip_record_params(count, sizes): as fake_cuda_record_params. */
typedef void (*fake_hip_record_params_fn)(int count, const unsigned* sizes);

#endif
