/* sizes_test.c: sizes whose products or quotients leave int64 (issue 14 #14). The
 * entry point refuses them with a message and runs nothing: a tensor's bytes
 * (elements x element size), a derived dimension (M * N), a grid extent (cdiv(N, 1024),
 * M * N) computed from them, a grid divided by a zero size. A call whose outputs have no
 * elements runs nothing and succeeds, however large the grid. Before, such sizes reached
 * the kernel: wrapped grids, crashes, or TILE_SUCCESS having done nothing. */
#include "e2e_common.h"
#include "sizes.h"
#include "softmax.h"
#include "vector_add.h"

#define FRAGS(...) ((const char* const[]){__VA_ARGS__, NULL})

static const int64_t kMax = INT64_MAX;
static const int64_t k2_40 = (int64_t)1 << 40;

/* Large enough for any call here that runs; the refused ones touch nothing. */
static float X[64], Y[64];

static int y_untouched(void) {
    for (int i = 0; i < 64; ++i)
        if (Y[i] != -1.0f) return 0;
    return 1;
}

static void poison(void) {
    for (int i = 0; i < 64; ++i) X[i] = 1.0f, Y[i] = -1.0f;
}

static void test_tensor_bytes(void) {
    poison();
    e2e_expect_error("softmax M = 1, N = INT64_MAX", softmax_f32_cpu(NULL, X, Y, 1, kMax),
                     TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("softmax_f32_cpu: tensor X [1, 9223372036854775807] of f32 has more bytes than int64 can count"));
    e2e_expect_error("softmax M = N = 2^40", softmax_f32_cpu(NULL, X, Y, k2_40, k2_40), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("softmax_f32_cpu: tensor X [1099511627776, 1099511627776] of f32 has more bytes"));
    /* 2^61 f32 elements are 2^63 bytes: one too many; f16 ones fit, and the grid is then checked. */
    e2e_expect_error("softmax f32 M = 2^61", softmax_f32_cpu(NULL, X, Y, (int64_t)1 << 61, 1),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("softmax_f32_cpu: tensor X [2305843009213693952, 1]"));
    e2e_expect_error("vector_add N = INT64_MAX", vector_add_f32_cpu(NULL, X, X, Y, kMax), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("vector_add_f32_cpu: tensor A [9223372036854775807] of f32 has more bytes"));
    E2E_EXPECT(y_untouched(), "a refused call wrote its output");
}

static void test_derived_and_grid(void) {
    poison();
    /* M * N: the dimension of C, then the grid. */
    e2e_expect_error("outer M = N = 2^32", outer_cpu(NULL, X, X, Y, (int64_t)1 << 32, (int64_t)1 << 32),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("outer_cpu: M * N overflows int64 (dimension 0 of C is M * N)"));
    e2e_expect_error("grid M * N", grid_product_cpu(NULL, X, Y, (int64_t)1 << 32, (int64_t)1 << 32),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("grid_product_cpu: the grid's x extent (M * N) overflows int64"));
    /* cdiv(M, N) = (M + N - 1) / N: M + N - 1 overflows; N = 0 divides by zero (SIGFPE before). */
    e2e_expect_error("grid cdiv overflow", grid_quotient_cpu(NULL, X, Y, kMax, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("grid_quotient_cpu: the grid's x extent", "overflows int64"));
    e2e_expect_error("grid cdiv by 0", grid_quotient_cpu(NULL, X, Y, 4, 0), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("grid_quotient_cpu: the grid's x extent", "divides by zero"));
    E2E_EXPECT(y_untouched(), "a refused call wrote its output");
    /* In range, they run. */
    E2E_EXPECT(outer_cpu(NULL, X, X, Y, 4, 8) == TILE_SUCCESS, "outer 4 x 8: %s", tile_last_error());
    E2E_EXPECT(Y[31] == 1.0f && Y[32] == -1.0f, "outer 4 x 8: Y[31] = %g, Y[32] = %g", Y[31], Y[32]);
    E2E_EXPECT(grid_quotient_cpu(NULL, X, Y, 9, 4) == TILE_SUCCESS && Y[2] == 2.0f && Y[3] == 1.0f,
               "grid_quotient 9 / 4: %s; Y[2] = %g", tile_last_error(), Y[2]);
}

static void test_nothing_to_write(void) {
    poison();
    /* Y has no elements: 2^48 blocks would each do nothing (for months); none run. */
    E2E_EXPECT(softmax_f32_cpu(NULL, NULL, NULL, (int64_t)1 << 50, 0) == TILE_SUCCESS,
               "softmax M = 2^50, N = 0: %s", tile_last_error());
    E2E_EXPECT(grid_product_cpu(NULL, X, NULL, (int64_t)1 << 40, 0) == TILE_SUCCESS, "grid_product N = 0: %s",
               tile_last_error());
    /* The checks still come first. */
    e2e_expect_error("softmax M < 0, N = 0", softmax_f32_cpu(NULL, NULL, NULL, -1, 0), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("softmax_f32_cpu: size M = -1 is negative"));
}

int main(void) {
    test_tensor_bytes();
    test_derived_and_grid();
    test_nothing_to_write();
    return e2e_finish("e2e/sizes");
}
