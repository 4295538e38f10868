/* What the fake drivers (fake_cuda.c, fake_hip.c) do alike: the lock and the statistics
 * the test reads (fake_driver.h), a loaded module, and recording parameters, module loads
 * and launches. Static definitions for the fakes only (each is one translation unit). */
#ifndef TILE_TESTS_FAKE_COMMON_H
#define TILE_TESTS_FAKE_COMMON_H

#include <pthread.h>
#include <string.h>

#include "fake_driver.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_stats stats;

/* A loaded module: its image's text (the test images are text), and a real image's bytes
 * (ELF, or PTX for CUDA) kept for the function lookup; bytes is NULL for a text image. */
typedef struct Module {
    char text[FAKE_TEXT_MAX];
    char* bytes;
    size_t size;
} Module;

/* How many parameters a launch copies into stats.last_params, and how many bytes of each. */
static int record_count = 0;
static unsigned record_sizes[FAKE_MAX_PARAMS];

/* The body of fake_cuda_record_params / fake_hip_record_params. */
static void set_record_params(int count, const unsigned* sizes) {
    int i;
    pthread_mutex_lock(&lock);
    record_count = count < FAKE_MAX_PARAMS ? count : FAKE_MAX_PARAMS;
    for (i = 0; i < record_count; ++i) record_sizes[i] = sizes[i] < 8 ? sizes[i] : 8;
    pthread_mutex_unlock(&lock);
}

/* Counts a successful module load of `image` (loaded as m). */
static void record_module_load(const void* image, const Module* m) {
    pthread_mutex_lock(&lock);
    ++stats.module_loads;
    stats.last_image = image;
    memcpy(stats.last_image_text, m->text, sizeof(m->text));
    pthread_mutex_unlock(&lock);
}

/* Adds one to a counter of stats. */
static void count_call(int* counter) {
    pthread_mutex_lock(&lock);
    ++*counter;
    pthread_mutex_unlock(&lock);
}

/* Counts a successful launch and keeps its configuration, parameters and `kernel` (a
 * Function's name, FAKE_TEXT_MAX bytes). */
static void record_launch(const char* kernel, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                          unsigned int by, unsigned int bz, unsigned int smem, void* stream, void** params) {
    int i;
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
    for (i = 0; i < record_count; ++i) memcpy(stats.last_params[i], params[i], record_sizes[i]);
    memcpy(stats.last_kernel, kernel, FAKE_TEXT_MAX);
    pthread_mutex_unlock(&lock);
}

#endif
