/* dispatch_test.c: an object built for several CPUs (tilec --cpu=x86-64-v3,x86-64-v4)
 * runs the variant of this CPU's level, and on a CPU below every variant (here made so
 * with TILE_CPU_MAX_LEVEL=2: CMakeLists.txt runs this program with and without it) the
 * entry point returns TILE_ERROR_NO_IMAGE_FOR_DEVICE with a message instead of running
 * code the CPU lacks. The arithmetic of each variant is checked by the gemm and math
 * programs run against such objects. */
#include <string.h>

#include "e2e_common.h"
#include "vector_add.h"

int main(void) {
    const int level = tile_cpu_x86_level();
    const int64_t n = 1025;
    float* a = (float*)e2e_alloc(n, sizeof(float));
    float* b = (float*)e2e_alloc(n, sizeof(float));
    float* c = (float*)e2e_alloc(n, sizeof(float));
    for (int64_t i = 0; i < n; ++i) {
        a[i] = (float)e2e_uniform(-10, 10);
        b[i] = (float)e2e_uniform(-10, 10);
        c[i] = -1234.5f;
    }
    tile_status st = vector_add_f32_cpu(NULL, a, b, c, n);
    if (level >= 3) {
        E2E_EXPECT(st == TILE_SUCCESS, "vector_add_f32_cpu at x86-64 level %d: %s", level, tile_last_error());
        for (int64_t i = 0; i < n; ++i)
            E2E_EXPECT(c[i] == (float)((double)a[i] + (double)b[i]), "C[%lld] = %g", (long long)i, (double)c[i]);
    } else {
        E2E_EXPECT(st == TILE_ERROR_NO_IMAGE_FOR_DEVICE, "vector_add_f32_cpu at x86-64 level %d returned %d", level,
                   (int)st);
        const char* msg = tile_last_error();
        E2E_EXPECT(strstr(msg, "vector_add_f32_cpu: this CPU's x86-64 level is ") == msg &&
                       strstr(msg, "tilec --cpu=x86-64-v3,x86-64-v4") != NULL,
                   "message: %s", msg);
        for (int64_t i = 0; i < n; ++i) E2E_EXPECT(c[i] == -1234.5f, "C[%lld] written: %g", (long long)i, (double)c[i]);
    }
    /* An empty grid runs no code: success on any CPU. */
    E2E_EXPECT(vector_add_f32_cpu(NULL, a, b, c, 0) == TILE_SUCCESS, "N = 0: %s", tile_last_error());
    free(a), free(b), free(c);
    return e2e_finish("dispatch");
}
