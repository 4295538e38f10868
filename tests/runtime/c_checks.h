/* The checks of the C99 test programs of the runtime (runtime_c_test.c,
 * runtime_gpu_test.c, tests/gpu_host/gpu_host_test.c): a failed check prints where and
 * what, and counts in `failures`, which the program's exit status comes from. */
#ifndef TILE_TESTS_C_CHECKS_H
#define TILE_TESTS_C_CHECKS_H

#include <stdio.h>
#include <string.h>

#include "tile/runtime.h"

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

/* `call` returns `expected`; otherwise the status and the last error are printed. */
#define CHECK_STATUS(call, expected)                                                           \
    do {                                                                                       \
        tile_status got_ = (call);                                                             \
        if (got_ != (expected)) {                                                              \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s; last error: \"%s\"\n",   \
                    __FILE__, __LINE__, #call, (int)got_, tile_status_string(got_), #expected, \
                    tile_last_error());                                                        \
            ++failures;                                                                        \
        }                                                                                      \
    } while (0)

/* The calling thread's last error message contains `text`. */
#define CHECK_MESSAGE_HAS(text)                                                                 \
    do {                                                                                        \
        if (strstr(tile_last_error(), (text)) == NULL) {                                        \
            fprintf(stderr, "%s:%d: the last error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                    tile_last_error(), (text));                                                 \
            ++failures;                                                                         \
        }                                                                                       \
    } while (0)

#endif
