/* A program built against an installed libtile_runtime (runtime/install): the header
 * compiles as C99, and a launch runs. Exit status 0 when all is well. */
#include <stdio.h>
#include <string.h>

#include <tile/runtime.h>

static void add_one(void* ctx, int64_t bx, int64_t by, int64_t bz) {
    int* cells = (int*)ctx;
    cells[(bz * 3 + by) * 4 + bx] += 1;
}

int main(void) {
    int cells[24] = {0};
    int i;
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    opt.num_threads = 2;
    if (tile_cpu_launch(&opt, 4, 3, 2, add_one, cells) != TILE_SUCCESS) {
        fprintf(stderr, "launch failed: %s\n", tile_last_error());
        return 1;
    }
    for (i = 0; i < 24; ++i)
        if (cells[i] != 1) return 2;
    if (tile_cpu_launch(NULL, -1, 1, 1, add_one, cells) != TILE_ERROR_INVALID_ARGUMENT) return 3;
    if (strstr(tile_last_error(), "negative") == NULL) return 4;
    if (tile_runtime_version() != TILE_RUNTIME_VERSION) return 5;
    printf("consumer ok: runtime %d\n", tile_runtime_version());
    return 0;
}
