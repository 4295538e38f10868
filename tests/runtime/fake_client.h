/* What a test program needs to drive the fake drivers (fake_driver.h) that the runtime
 * loads: the same instance (dlopen of the path the runtime is given), and its control
 * functions. Static functions for runtime_gpu_test.c and tests/gpu_host/gpu_host_test.c. */
#ifndef TILE_TESTS_FAKE_CLIENT_H
#define TILE_TESTS_FAKE_CLIENT_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fake library named by the environment variable `env` (`what`: "driver", "HIP
 * runtime", for the message); exits with status 2 where it cannot be opened. */
static void* open_fake_library(const char* env, const char* what) {
    const char* path = getenv(env);
    void* handle = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (handle == NULL) {
        fprintf(stderr, "cannot open the fake %s named by %s: %s\n", what, env, path ? dlerror() : "unset");
        exit(2);
    }
    return handle;
}

/* dlsym for a function, without the object-to-function pointer cast ISO C frowns on;
 * exits with status 2 where the fake lacks it. */
static void fake_symbol(void* library, const char* name, void* out_fn, size_t size) {
    void* symbol = dlsym(library, name);
    if (symbol == NULL) {
        fprintf(stderr, "the fake driver lacks %s\n", name);
        exit(2);
    }
    memcpy(out_fn, &symbol, size);
}

#endif
