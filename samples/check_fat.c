/* check_fat.c: saxpy.tile compiled into one fat object (host, sm_80, sm_90a, gfx90a,
 * gfx942, gfx1100). saxpy_f32_cpu runs here; saxpy_f32_cuda and saxpy_f32_hip are in the
 * same object and check their arguments before any driver is loaded, so this program
 * links and runs on a machine with no GPU. Exit status 0 when every check passes. */
#include <stdio.h>

#include "saxpy.h"

static int failures = 0;

static void expect(const char* what, tile_status got, tile_status want) {
    int ok = got == want;
    printf("%s %s: %s%s%s\n", ok ? "ok  " : "FAIL", what, tile_status_string(got), got ? ": " : "",
           got ? tile_last_error() : "");
    failures += !ok;
}

int main(void) {
    enum { N = 3000 };
    static float x[N], y[N];
    long bad = 0;
    for (int i = 0; i < N; ++i) x[i] = (float)i, y[i] = 1.0f;
    expect("saxpy_f32_cpu", saxpy_f32_cpu(NULL, x, y, N, 2.0f), TILE_SUCCESS);
    for (int i = 0; i < N; ++i) bad += y[i] != 2.0f * i + 1.0f;
    printf("%s saxpy_f32_cpu N=%d: %ld wrong elements\n", bad ? "FAIL" : "ok  ", N, bad);
    failures += bad != 0;
    /* The GPU entry points of the same object: a NULL tensor is refused before any driver
     * is touched, whatever the machine has. */
    expect("saxpy_f32_cuda (NULL x)", saxpy_f32_cuda(NULL, NULL, y, N, 2.0f), TILE_ERROR_INVALID_ARGUMENT);
    expect("saxpy_f32_hip (NULL x)", saxpy_f32_hip(NULL, NULL, y, N, 2.0f), TILE_ERROR_INVALID_ARGUMENT);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
