/* api_test.c: the argument checks of generated entry points, seen through the C API:
 * NULL tensors and negative sizes named in the message (for every tensor and size of
 * gemm, and of a kernel with a scalar), bad tile_cpu_options (struct_size, num_threads),
 * a bad TILE_NUM_THREADS, a newer (larger) options struct accepted, failed calls writing
 * nothing, and tile_last_error() being per thread for errors from generated code.
 * Derived-size rules (K / 2, K / G) are checked in semantics_test.c. */
#define _POSIX_C_SOURCE 200809L /* setenv, pthreads: the rest is C99 */
#include <pthread.h>

#include "e2e_common.h"
#include "gemm.h"
#include "layernorm.h"

/* Fragments of the message after a failed call (NULL-terminated lists). */
#define FRAGS(...) ((const char* const[]){__VA_ARGS__, NULL})

static uint16_t A[4], B[4], C[4];

static int c_untouched(void) {
    for (int i = 0; i < 4; ++i)
        if (C[i] != 0xffff) return 0;
    return 1;
}

static void test_null_and_negative(void) {
    memset(C, 0xff, sizeof C);
    e2e_expect_error("A NULL", gemm_f16_cpu(NULL, NULL, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: tensor A is NULL"));
    e2e_expect_error("B NULL", gemm_f16_cpu(NULL, A, NULL, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: tensor B is NULL"));
    e2e_expect_error("C NULL", gemm_bf16_nt_cpu(NULL, A, B, NULL, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_bf16_nt_cpu: tensor C is NULL"));
    /* Sizes are M, K, N in the argument list (the order they first appear). */
    e2e_expect_error("M < 0", gemm_f16_cpu(NULL, A, B, C, -3, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: size M = -3 is negative"));
    e2e_expect_error("K < 0", gemm_f16_cpu(NULL, A, B, C, 2, -4, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: size K = -4 is negative"));
    e2e_expect_error("N < 0", gemm_f16_cpu(NULL, A, B, C, 2, 2, -5), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: size N = -5 is negative"));
    /* A tensor with no elements may be NULL: A and B are M x 0 and 0 x N, C is written. */
    E2E_EXPECT(gemm_f16_cpu(NULL, NULL, NULL, C, 2, 0, 2) == TILE_SUCCESS, "K = 0 with NULL A, B: %s",
               tile_last_error());
    E2E_EXPECT(C[0] == 0 && C[3] == 0, "K = 0: C = 0x%04x ... 0x%04x, expected zeros", C[0], C[3]);
    memset(C, 0xff, sizeof C);
    /* But not when the tensor has elements, even if the grid would be empty elsewhere. */
    e2e_expect_error("C NULL, K = 0", gemm_f16_cpu(NULL, NULL, NULL, NULL, 2, 0, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: tensor C is NULL"));
    /* Layernorm: tensors, two sizes and a scalar; gamma and beta have N elements. */
    uint16_t X[6], W[3], Bt[3], Y[6];
    memset(X, 0, sizeof X), memset(W, 0, sizeof W), memset(Bt, 0, sizeof Bt), memset(Y, 0xff, sizeof Y);
    e2e_expect_error("beta NULL", layernorm_f16_cpu(NULL, X, W, NULL, Y, 2, 3, 1e-5f), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("layernorm_f16_cpu: tensor beta is NULL"));
    e2e_expect_error("gamma NULL", layernorm_f16_cpu(NULL, X, NULL, Bt, Y, 2, 3, 1e-5f),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("layernorm_f16_cpu: tensor gamma is NULL"));
    /* M = 0 leaves gamma and beta with N elements: still checked. */
    e2e_expect_error("gamma NULL, M = 0", layernorm_f16_cpu(NULL, NULL, NULL, Bt, NULL, 0, 3, 1e-5f),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("layernorm_f16_cpu: tensor gamma is NULL"));
    E2E_EXPECT(layernorm_f16_cpu(NULL, NULL, NULL, NULL, NULL, 0, 0, 1e-5f) == TILE_SUCCESS, "M = N = 0: %s",
               tile_last_error());
    e2e_expect_error("M < 0", layernorm_f16_cpu(NULL, X, W, Bt, Y, -1, 3, 1e-5f), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("layernorm_f16_cpu: size M = -1 is negative"));
    for (int i = 0; i < 6; ++i) E2E_EXPECT(Y[i] == 0xffff, "failed layernorm calls wrote Y[%d]", i);
    E2E_EXPECT(c_untouched(), "failed gemm calls wrote C");
}

static void test_options(void) {
    memset(C, 0xff, sizeof C);
    memset(A, 0, sizeof A), memset(B, 0, sizeof B);
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    E2E_EXPECT(opt.struct_size == sizeof(tile_cpu_options) && opt.num_threads == 0, "TILE_CPU_OPTIONS_INIT");

    opt.struct_size = 0; /* zeroed rather than initialised */
    e2e_expect_error("struct_size 0", gemm_f16_cpu(&opt, A, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("struct_size", "0"));
    opt.struct_size = 4; /* smaller than version 1 of the struct */
    e2e_expect_error("struct_size 4", gemm_f16_cpu(&opt, A, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("struct_size", "4"));
    E2E_EXPECT(c_untouched(), "calls with bad struct_size wrote C");

    tile_cpu_options_init(&opt);
    opt.num_threads = -1;
    e2e_expect_error("num_threads -1", gemm_f16_cpu(&opt, A, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("num_threads", "-1"));
    opt.num_threads = TILE_MAX_THREADS + 1;
    e2e_expect_error("num_threads 1025", gemm_f16_cpu(&opt, A, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("num_threads", "1025"));
    E2E_EXPECT(c_untouched(), "calls with bad num_threads wrote C");

    /* Options are checked first: before the tensors (A is NULL here), and when the grid
     * is empty (M = 0) so that nothing would run. The message names the entry point. */
    opt.num_threads = -5;
    e2e_expect_error("bad options before NULL A", gemm_f16_cpu(&opt, NULL, B, C, 2, 2, 2),
                     TILE_ERROR_INVALID_ARGUMENT, FRAGS("gemm_f16_cpu: options num_threads is -5"));
    e2e_expect_error("bad options, empty grid", gemm_f16_cpu(&opt, A, B, C, 0, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("gemm_f16_cpu: options num_threads is -5"));

    /* A caller compiled against a newer header: a larger struct, unknown fields ignored. */
    struct {
        tile_cpu_options base;
        int64_t future[4];
    } newer;
    memset(&newer, 0x5a, sizeof newer);
    tile_cpu_options_init(&newer.base);
    newer.base.struct_size = (uint32_t)sizeof newer;
    newer.base.num_threads = 2;
    E2E_EXPECT(gemm_f16_cpu(&newer.base, A, B, C, 2, 2, 2) == TILE_SUCCESS, "larger struct_size: %s",
               tile_last_error());
    E2E_EXPECT(C[0] == 0 && C[3] == 0, "larger struct_size: C not computed");

    /* TILE_NUM_THREADS is read for num_threads 0; a bad value fails, quoting it. */
    memset(C, 0xff, sizeof C);
    setenv("TILE_NUM_THREADS", "4x", 1);
    e2e_expect_error("TILE_NUM_THREADS=4x", gemm_f16_cpu(NULL, A, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("TILE_NUM_THREADS", "4x"));
    E2E_EXPECT(c_untouched(), "a call with a bad TILE_NUM_THREADS wrote C");
    tile_cpu_options_init(&opt);
    opt.num_threads = 1; /* explicit: the environment is not read */
    E2E_EXPECT(gemm_f16_cpu(&opt, A, B, C, 2, 2, 2) == TILE_SUCCESS, "num_threads 1 with a bad env: %s",
               tile_last_error());
    setenv("TILE_NUM_THREADS", " 3 ", 1);
    E2E_EXPECT(gemm_f16_cpu(NULL, A, B, C, 2, 2, 2) == TILE_SUCCESS, "TILE_NUM_THREADS=' 3 ': %s",
               tile_last_error());
    unsetenv("TILE_NUM_THREADS");
}

/* ---- tile_last_error is per thread -------------------------------------------------- */

typedef struct {
    char seen_at_start[256];
    char seen_after_fail[256];
    tile_status status;
} Report;

static void* other_thread(void* arg) {
    Report* r = (Report*)arg;
    uint16_t c[4];
    snprintf(r->seen_at_start, sizeof r->seen_at_start, "%s", tile_last_error());
    r->status = gemm_f16_cpu(NULL, A, B, c, 2, 2, -7);
    snprintf(r->seen_after_fail, sizeof r->seen_after_fail, "%s", tile_last_error());
    return NULL;
}

static void test_error_per_thread(void) {
    tile_clear_error();
    e2e_expect_error("main thread", gemm_f16_cpu(NULL, NULL, B, C, 2, 2, 2), TILE_ERROR_INVALID_ARGUMENT,
                     FRAGS("tensor A is NULL"));
    Report r;
    pthread_t t;
    E2E_EXPECT(pthread_create(&t, NULL, other_thread, &r) == 0, "pthread_create");
    E2E_EXPECT(pthread_join(t, NULL) == 0, "pthread_join");
    E2E_EXPECT(r.seen_at_start[0] == '\0', "a new thread sees another thread's error \"%s\"", r.seen_at_start);
    E2E_EXPECT(r.status == TILE_ERROR_INVALID_ARGUMENT, "other thread: status %d", (int)r.status);
    E2E_EXPECT(strstr(r.seen_after_fail, "size N = -7 is negative") != NULL, "other thread's message: \"%s\"",
               r.seen_after_fail);
    E2E_EXPECT(strstr(tile_last_error(), "tensor A is NULL") != NULL,
               "the main thread's message changed to \"%s\" after the other thread failed", tile_last_error());
    /* Like errno: success does not clear it; tile_clear_error does. */
    E2E_EXPECT(gemm_f16_cpu(NULL, A, B, C, 2, 2, 2) == TILE_SUCCESS, "%s", tile_last_error());
    E2E_EXPECT(strstr(tile_last_error(), "tensor A is NULL") != NULL, "a successful call changed the message");
    tile_clear_error();
    E2E_EXPECT(tile_last_error()[0] == '\0', "tile_clear_error left \"%s\"", tile_last_error());
}

/* Two threads run the same entry point at once on their own data (the shared pool). */
typedef struct {
    int64_t n;
    uint16_t *a, *b, *c;
    tile_status status;
} Job;

static void* run_job(void* arg) {
    Job* j = (Job*)arg;
    for (int rep = 0; rep < 5 && j->status == TILE_SUCCESS; ++rep)
        j->status = gemm_f16_cpu(NULL, j->a, j->b, j->c, j->n, j->n, j->n);
    return NULL;
}

static void test_concurrent_calls(void) {
    enum { kJobs = 3 };
    Job jobs[kJobs];
    pthread_t t[kJobs];
    for (int k = 0; k < kJobs; ++k) {
        int64_t n = 60 + 37 * k;
        jobs[k].n = n;
        jobs[k].status = TILE_SUCCESS;
        jobs[k].a = (uint16_t*)e2e_alloc(n * n, 2);
        jobs[k].b = (uint16_t*)e2e_alloc(n * n, 2);
        jobs[k].c = (uint16_t*)e2e_alloc(n * n, 2);
        /* A = identity scaled by k + 1, B random: C = (k + 1) B exactly. */
        for (int64_t i = 0; i < n * n; ++i) {
            jobs[k].a[i] = f16_bits(i / n == i % n ? k + 1 : 0);
            jobs[k].b[i] = f16_bits(e2e_uniform(-1, 1));
        }
    }
    for (int k = 0; k < kJobs; ++k) E2E_EXPECT(pthread_create(&t[k], NULL, run_job, &jobs[k]) == 0, "create");
    for (int k = 0; k < kJobs; ++k) E2E_EXPECT(pthread_join(t[k], NULL) == 0, "join");
    for (int k = 0; k < kJobs; ++k) {
        Job* j = &jobs[k];
        E2E_EXPECT(j->status == TILE_SUCCESS, "concurrent job %d: status %d", k, (int)j->status);
        int64_t bad = 0;
        for (int64_t i = 0; i < j->n * j->n; ++i)
            if (f16_value(j->c[i]) != f16_round((k + 1) * f16_value(j->b[i]))) ++bad;
        E2E_EXPECT(bad == 0, "concurrent job %d (n = %lld): %lld wrong elements", k, (long long)j->n,
                   (long long)bad);
        E2E_EXPECT(e2e_guard_intact(j->c, j->n * j->n, 2), "concurrent job %d wrote past C", k);
        free(j->a), free(j->b), free(j->c);
    }
}

int main(void) {
    test_null_and_negative();
    test_options();
    test_error_per_thread();
    test_concurrent_calls();
    return e2e_finish("e2e/api");
}
