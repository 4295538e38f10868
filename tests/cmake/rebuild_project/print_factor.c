/* print_factor.c: prints "factor=<Y[0]>" for X = {1}, i.e. the factor that kernel.tile
 * was compiled with. */
#include <stdio.h>

#include "kernel.h"

int main(void) {
    float x[1] = {1.0f}, y[1] = {0.0f};
    if (scale_f32_cpu(NULL, x, y, 1) != TILE_SUCCESS) {
        fprintf(stderr, "scale_f32_cpu: %s\n", tile_last_error());
        return 1;
    }
    printf("factor=%g\n", y[0]);
    return 0;
}
