/* The C side of libtile_runtime, as a C99 program sees it: tile/runtime.h compiles with
 * -std=c99 -pedantic -Werror, and every call behaves as documented. One ctest test per
 * case: `runtime_c_test <case>` (so environment changes stay in one process).
 * Threads come from POSIX threads; no case sleeps or measures time. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_checks.h"
#include "tile/runtime.h"

static long atomic_add(long* p, long v) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#else
    long old = *p;
    *p += v;
    return old;
#endif
}

/* ---- counting launches ---------------------------------------------------------------- */

/* One counter a block, a count of all calls, and a flag for indices outside the grid. */
typedef struct Grid {
    int64_t gx, gy, gz;
    long* counts;
    long calls;
    long out_of_range;
    pthread_t* thread_of_block; /* optional: who ran each block */
} Grid;

static void count_block(void* ctx, int64_t bx, int64_t by, int64_t bz) {
    Grid* g = (Grid*)ctx;
    atomic_add(&g->calls, 1);
    if (bx < 0 || bx >= g->gx || by < 0 || by >= g->gy || bz < 0 || bz >= g->gz) {
        atomic_add(&g->out_of_range, 1);
        return;
    }
    {
        int64_t index = (bz * g->gy + by) * g->gx + bx;
        atomic_add(&g->counts[index], 1);
        if (g->thread_of_block) g->thread_of_block[index] = pthread_self();
    }
}

static void grid_init(Grid* g, int64_t gx, int64_t gy, int64_t gz, int record_threads) {
    int64_t n = gx * gy * gz;
    g->gx = gx;
    g->gy = gy;
    g->gz = gz;
    g->counts = (long*)calloc((size_t)(n > 0 ? n : 1), sizeof(long));
    g->calls = 0;
    g->out_of_range = 0;
    g->thread_of_block =
        record_threads ? (pthread_t*)calloc((size_t)(n > 0 ? n : 1), sizeof(pthread_t)) : NULL;
}

static void grid_free(Grid* g) {
    free(g->counts);
    free(g->thread_of_block);
}

/* 1 when every block of the grid ran exactly once and nothing else was called. */
static int grid_exactly_once(const Grid* g) {
    int64_t n = g->gx * g->gy * g->gz, i;
    if (g->calls != n || g->out_of_range != 0) return 0;
    for (i = 0; i < n; ++i)
        if (g->counts[i] != 1) return 0;
    return 1;
}

/* The number of distinct threads that ran the grid's blocks. */
static int distinct_threads(const Grid* g) {
    int64_t n = g->gx * g->gy * g->gz, i, j;
    int distinct = 0;
    for (i = 0; i < n; ++i) {
        int seen = 0;
        for (j = 0; j < i && !seen; ++j) seen = pthread_equal(g->thread_of_block[i], g->thread_of_block[j]);
        distinct += !seen;
    }
    return distinct;
}

static int all_on_this_thread(const Grid* g) {
    int64_t n = g->gx * g->gy * g->gz, i;
    for (i = 0; i < n; ++i)
        if (!pthread_equal(g->thread_of_block[i], pthread_self())) return 0;
    return 1;
}

static tile_status launch_grid(const tile_cpu_options* opt, Grid* g) {
    return tile_cpu_launch(opt, g->gx, g->gy, g->gz, count_block, g);
}

/* ---- cases ---------------------------------------------------------------------------- */

static void test_status_strings(void) {
    tile_status all[] = {TILE_SUCCESS,          TILE_ERROR_INVALID_ARGUMENT,    TILE_ERROR_OUT_OF_MEMORY,
                         TILE_ERROR_NO_DRIVER,  TILE_ERROR_NO_DEVICE,           TILE_ERROR_NO_IMAGE_FOR_DEVICE,
                         TILE_ERROR_LAUNCH,     TILE_ERROR_INTERNAL,            TILE_ERROR_DRIVER};
    size_t n = sizeof(all) / sizeof(all[0]), i, j;
    for (i = 0; i < n; ++i) {
        const char* s = tile_status_string(all[i]);
        CHECK(s != NULL && s[0] != '\0');
        CHECK(strcmp(s, "unknown status") != 0);
        for (j = 0; j < i; ++j) CHECK(strcmp(s, tile_status_string(all[j])) != 0);
    }
    CHECK(strcmp(tile_status_string(TILE_SUCCESS), "success") == 0);
    CHECK(strcmp(tile_status_string(TILE_ERROR_INVALID_ARGUMENT), "invalid argument") == 0);
    CHECK(strcmp(tile_status_string((tile_status)12345), "unknown status") == 0);
    CHECK(strcmp(tile_status_string((tile_status)-1), "unknown status") == 0);
    /* ABI: the values never change. */
    CHECK(TILE_SUCCESS == 0 && TILE_ERROR_INVALID_ARGUMENT == 1 && TILE_ERROR_INTERNAL == 7);
    CHECK(tile_runtime_version() == TILE_RUNTIME_VERSION);
}

static void test_set_error(void) {
    char expected[64];
    CHECK(strcmp(tile_last_error(), "") == 0);
    CHECK_STATUS(tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "gemm: %s = %d must be a multiple of %d", "K", 100, 32),
                 TILE_ERROR_INVALID_ARGUMENT);
    CHECK(strcmp(tile_last_error(), "gemm: K = 100 must be a multiple of 32") == 0);
    /* A success does not clear it; tile_clear_error does. */
    CHECK_STATUS(tile_cpu_launch(NULL, 0, 0, 0, count_block, NULL), TILE_SUCCESS);
    CHECK(strcmp(tile_last_error(), "gemm: K = 100 must be a multiple of 32") == 0);
    tile_clear_error();
    CHECK(strcmp(tile_last_error(), "") == 0);
    /* fmt NULL: the status string. */
    CHECK_STATUS(tile_set_error(TILE_ERROR_NO_DRIVER, NULL), TILE_ERROR_NO_DRIVER);
    CHECK(strcmp(tile_last_error(), tile_status_string(TILE_ERROR_NO_DRIVER)) == 0);
    /* TILE_SUCCESS clears. */
    CHECK_STATUS(tile_set_error(TILE_SUCCESS, "ignored"), TILE_SUCCESS);
    CHECK(strcmp(tile_last_error(), "") == 0);
    /* The arguments may be the current message itself. */
    tile_set_error(TILE_ERROR_LAUNCH, "inner");
    tile_set_error(TILE_ERROR_LAUNCH, "outer: %s (%s)", tile_last_error(), tile_last_error());
    CHECK(strcmp(tile_last_error(), "outer: inner (inner)") == 0);
    sprintf(expected, "%d%%", 50);
    tile_set_error(TILE_ERROR_INTERNAL, "%s", expected);
    CHECK(strcmp(tile_last_error(), "50%") == 0);
}

static void test_set_error_truncates(void) {
    static char long_message[5000];
    const char* got;
    size_t i, len;
    memset(long_message, 'x', sizeof(long_message) - 1);
    long_message[sizeof(long_message) - 1] = '\0';
    CHECK_STATUS(tile_set_error(TILE_ERROR_INTERNAL, "%s", long_message), TILE_ERROR_INTERNAL);
    got = tile_last_error();
    len = strlen(got);
    CHECK(len == TILE_ERROR_MESSAGE_MAX - 1);
    CHECK(len >= 3 && strcmp(got + len - 3, "...") == 0);
    for (i = 0; i + 3 < len; ++i) CHECK(got[i] == 'x');

    /* A message that fits exactly is kept whole. */
    long_message[TILE_ERROR_MESSAGE_MAX - 1] = '\0';
    tile_set_error(TILE_ERROR_INTERNAL, "%s", long_message);
    CHECK(strlen(tile_last_error()) == TILE_ERROR_MESSAGE_MAX - 1);
    CHECK(tile_last_error()[TILE_ERROR_MESSAGE_MAX - 2] == 'x');

    /* Multi-byte UTF-8 characters are never cut in half: "é" is 0xC3 0xA9; with an odd
     * prefix, a cut at the byte limit would land inside one. */
    {
        static char utf8[3000];
        size_t pos = 0;
        utf8[pos++] = 'a';
        while (pos + 2 < sizeof(utf8)) {
            utf8[pos++] = (char)0xC3;
            utf8[pos++] = (char)0xA9;
        }
        utf8[pos] = '\0';
        tile_set_error(TILE_ERROR_INTERNAL, "%s", utf8);
        got = tile_last_error();
        len = strlen(got);
        CHECK(len <= TILE_ERROR_MESSAGE_MAX - 1);
        CHECK(len >= 3 && strcmp(got + len - 3, "...") == 0);
        /* Before the "...": 'a', then whole 2-byte characters. */
        CHECK((len - 3 - 1) % 2 == 0);
        CHECK((unsigned char)got[len - 4] == 0xA9);
    }
}

/* ---- errors are per thread -------------------------------------------------------------- */

typedef struct ThreadReport {
    char seen_at_start[64];
    char seen_at_end[64];
} ThreadReport;

static void* set_error_on_thread(void* arg) {
    ThreadReport* r = (ThreadReport*)arg;
    snprintf(r->seen_at_start, sizeof(r->seen_at_start), "%s", tile_last_error());
    tile_set_error(TILE_ERROR_NO_DEVICE, "error of thread %s", "B");
    snprintf(r->seen_at_end, sizeof(r->seen_at_end), "%s", tile_last_error());
    return NULL;
}

static void test_errors_per_thread(void) {
    pthread_t t;
    ThreadReport r;
    memset(&r, 0, sizeof(r));
    tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "error of thread %s", "A");
    CHECK(pthread_create(&t, NULL, set_error_on_thread, &r) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    /* The other thread did not see this one's message, and this one does not see its. */
    CHECK(strcmp(r.seen_at_start, "") == 0);
    CHECK(strcmp(r.seen_at_end, "error of thread B") == 0);
    CHECK(strcmp(tile_last_error(), "error of thread A") == 0);

    /* A failing launch on another thread leaves this thread's message alone. */
    tile_clear_error();
    memset(&r, 0, sizeof(r));
    CHECK(pthread_create(&t, NULL, set_error_on_thread, &r) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(strcmp(tile_last_error(), "") == 0);
}

/* ---- launches ---------------------------------------------------------------------------- */

static void test_launch_covers_grid(void) {
    static const int64_t grids[][3] = {{1, 1, 1},  {7, 3, 2}, {1000, 1, 1}, {1, 1000, 1},
                                       {1, 1, 1000}, {3, 5, 7}, {64, 64, 1},  {2, 1, 333}};
    static const int32_t thread_counts[] = {0, 1, 2, 3, 8};
    size_t i, t;
    for (t = 0; t < sizeof(thread_counts) / sizeof(thread_counts[0]); ++t) {
        tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
        opt.num_threads = thread_counts[t];
        for (i = 0; i < sizeof(grids) / sizeof(grids[0]); ++i) {
            Grid g;
            grid_init(&g, grids[i][0], grids[i][1], grids[i][2], 0);
            CHECK_STATUS(launch_grid(&opt, &g), TILE_SUCCESS);
            if (!grid_exactly_once(&g)) {
                fprintf(stderr, "grid %dx%dx%d with num_threads %d: not every block ran exactly once\n",
                        (int)g.gx, (int)g.gy, (int)g.gz, (int)opt.num_threads);
                ++failures;
            }
            grid_free(&g);
        }
    }
    /* opt NULL means defaults. */
    {
        Grid g;
        grid_init(&g, 7, 3, 2, 0);
        CHECK_STATUS(launch_grid(NULL, &g), TILE_SUCCESS);
        CHECK(grid_exactly_once(&g));
        grid_free(&g);
    }
}

static void test_num_threads_option(void) {
    int32_t n;
    for (n = 1; n <= 4; ++n) {
        tile_cpu_options opt;
        Grid g;
        tile_cpu_options_init(&opt);
        opt.num_threads = n;
        grid_init(&g, 500, 1, 1, 1);
        CHECK_STATUS(launch_grid(&opt, &g), TILE_SUCCESS);
        CHECK(grid_exactly_once(&g));
        CHECK(distinct_threads(&g) <= n);
        if (n == 1) CHECK(all_on_this_thread(&g));
        grid_free(&g);
    }
}

static void test_env_num_threads(void) {
    static const char* values[] = {"1", "2", "3", " 2 "};
    static const int limits[] = {1, 2, 3, 2};
    size_t i;
    for (i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
        Grid g;
        CHECK(setenv("TILE_NUM_THREADS", values[i], 1) == 0);
        grid_init(&g, 400, 1, 1, 1);
        CHECK_STATUS(launch_grid(NULL, &g), TILE_SUCCESS);
        CHECK(grid_exactly_once(&g));
        CHECK(distinct_threads(&g) <= limits[i]);
        if (limits[i] == 1) CHECK(all_on_this_thread(&g));
        grid_free(&g);
    }
    /* num_threads in the options wins over the environment. */
    {
        tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
        Grid g;
        opt.num_threads = 1;
        CHECK(setenv("TILE_NUM_THREADS", "4", 1) == 0);
        grid_init(&g, 100, 1, 1, 1);
        CHECK_STATUS(launch_grid(&opt, &g), TILE_SUCCESS);
        CHECK(all_on_this_thread(&g));
        grid_free(&g);
    }
    /* Empty counts as unset. */
    {
        Grid g;
        CHECK(setenv("TILE_NUM_THREADS", "", 1) == 0);
        grid_init(&g, 100, 1, 1, 0);
        CHECK_STATUS(launch_grid(NULL, &g), TILE_SUCCESS);
        CHECK(grid_exactly_once(&g));
        grid_free(&g);
    }
}

static void test_env_num_threads_invalid(void) {
    static const char* values[] = {"abc", "-1", "0", "4x", "x4", "+2", "1.5", "1025",
                                   "99999999999999999999999", "2 3"};
    size_t i;
    for (i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
        Grid g;
        CHECK(setenv("TILE_NUM_THREADS", values[i], 1) == 0);
        tile_clear_error();
        grid_init(&g, 10, 1, 1, 0);
        CHECK_STATUS(launch_grid(NULL, &g), TILE_ERROR_INVALID_ARGUMENT);
        CHECK(g.calls == 0);
        CHECK(strstr(tile_last_error(), "TILE_NUM_THREADS") != NULL);
        CHECK(strstr(tile_last_error(), values[i]) != NULL);
        grid_free(&g);
    }
    /* An explicit num_threads does not read the environment at all. */
    {
        tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
        Grid g;
        opt.num_threads = 2;
        CHECK(setenv("TILE_NUM_THREADS", "abc", 1) == 0);
        grid_init(&g, 10, 1, 1, 0);
        CHECK_STATUS(launch_grid(&opt, &g), TILE_SUCCESS);
        CHECK(grid_exactly_once(&g));
        grid_free(&g);
    }
}

static void test_sizes_and_arguments(void) {
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    Grid g;
    grid_init(&g, 1, 1, 1, 0);
    /* Zero-size grids: no call, success. */
    CHECK_STATUS(tile_cpu_launch(NULL, 0, 1, 1, count_block, &g), TILE_SUCCESS);
    CHECK_STATUS(tile_cpu_launch(NULL, 5, 0, 3, count_block, &g), TILE_SUCCESS);
    CHECK_STATUS(tile_cpu_launch(&opt, 5, 3, 0, count_block, &g), TILE_SUCCESS);
    CHECK(g.calls == 0);
    /* Negative sizes, anywhere, even with another size 0. */
    tile_clear_error();
    CHECK_STATUS(tile_cpu_launch(NULL, -1, 1, 1, count_block, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tile_last_error(), "-1") != NULL);
    CHECK_STATUS(tile_cpu_launch(NULL, 1, -5, 1, count_block, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(tile_cpu_launch(NULL, 0, 1, INT64_MIN, count_block, &g), TILE_ERROR_INVALID_ARGUMENT);
    /* fn NULL. */
    tile_clear_error();
    CHECK_STATUS(tile_cpu_launch(NULL, 1, 1, 1, NULL, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tile_last_error(), "fn") != NULL);
    /* Grids too large to count. */
    CHECK_STATUS(tile_cpu_launch(NULL, INT64_MAX, 2, 1, count_block, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(tile_cpu_launch(NULL, INT64_MAX, INT64_MAX, INT64_MAX, count_block, &g),
                 TILE_ERROR_INVALID_ARGUMENT);
    CHECK(g.calls == 0);
    /* Bad options. */
    opt.num_threads = -1;
    CHECK_STATUS(launch_grid(&opt, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tile_last_error(), "num_threads") != NULL);
    opt.num_threads = TILE_MAX_THREADS + 1;
    CHECK_STATUS(launch_grid(&opt, &g), TILE_ERROR_INVALID_ARGUMENT);
    opt.num_threads = 2;
    opt.struct_size = 0; /* e.g. memset to 0 instead of initialised */
    CHECK_STATUS(launch_grid(&opt, &g), TILE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tile_last_error(), "struct_size") != NULL);
    CHECK(g.calls == 0);
    opt.struct_size = (uint32_t)sizeof(opt);
    CHECK_STATUS(launch_grid(&opt, &g), TILE_SUCCESS);
    CHECK(grid_exactly_once(&g));
    grid_free(&g);
}

/* ---- four threads launching at once ------------------------------------------------------ */

static void* launch_many(void* arg) {
    long* bad = (long*)arg;
    int round;
    for (round = 0; round < 25; ++round) {
        tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
        Grid g;
        opt.num_threads = round % 5; /* 0 (default) to 4 */
        grid_init(&g, 1 + round * 13, 1 + round % 3, 2, 0);
        if (launch_grid(&opt, &g) != TILE_SUCCESS || !grid_exactly_once(&g)) ++*bad;
        grid_free(&g);
    }
    return NULL;
}

static void test_concurrent_launches(void) {
    pthread_t threads[4];
    long bad[4] = {0, 0, 0, 0};
    int i;
    for (i = 0; i < 4; ++i) CHECK(pthread_create(&threads[i], NULL, launch_many, &bad[i]) == 0);
    for (i = 0; i < 4; ++i) CHECK(pthread_join(threads[i], NULL) == 0);
    for (i = 0; i < 4; ++i) CHECK(bad[i] == 0);
}

/* ---- a launch from inside a block ---------------------------------------------------------- */

typedef struct Nested {
    Grid outer;
    Grid inner[6]; /* one per outer block */
    long wrong_status;
    long not_inline;
    long bad_argument_not_reported;
} Nested;

static void outer_block(void* ctx, int64_t bx, int64_t by, int64_t bz) {
    Nested* n = (Nested*)ctx;
    Grid* inner = &n->inner[by * 3 + bx];
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    int64_t i;
    count_block(&n->outer, bx, by, bz);
    opt.num_threads = 4;
    if (tile_cpu_launch(&opt, inner->gx, inner->gy, inner->gz, count_block, inner) != TILE_SUCCESS)
        atomic_add(&n->wrong_status, 1);
    /* The nested launch ran inline, on this thread. */
    for (i = 0; i < inner->gx * inner->gy * inner->gz; ++i)
        if (!pthread_equal(inner->thread_of_block[i], pthread_self())) atomic_add(&n->not_inline, 1);
    /* Errors of a nested launch come back to the block, on this thread. */
    if (tile_cpu_launch(NULL, -1, 1, 1, count_block, inner) != TILE_ERROR_INVALID_ARGUMENT ||
        strstr(tile_last_error(), "negative") == NULL)
        atomic_add(&n->bad_argument_not_reported, 1);
}

static void test_nested_launch(void) {
    Nested n;
    tile_cpu_options opt = TILE_CPU_OPTIONS_INIT;
    int i;
    memset(&n, 0, sizeof(n));
    opt.num_threads = 3;
    grid_init(&n.outer, 3, 2, 1, 0);
    for (i = 0; i < 6; ++i) grid_init(&n.inner[i], 5 + i, 3, 2, 1);
    CHECK_STATUS(tile_cpu_launch(&opt, 3, 2, 1, outer_block, &n), TILE_SUCCESS);
    CHECK(grid_exactly_once(&n.outer));
    for (i = 0; i < 6; ++i) CHECK(grid_exactly_once(&n.inner[i]));
    CHECK(n.wrong_status == 0);
    CHECK(n.not_inline == 0);
    CHECK(n.bad_argument_not_reported == 0);
    grid_free(&n.outer);
    for (i = 0; i < 6; ++i) grid_free(&n.inner[i]);
}

/* ---- main -------------------------------------------------------------------------------- */

typedef struct Case {
    const char* name;
    void (*run)(void);
} Case;

static const Case cases[] = {
    {"status_strings", test_status_strings},
    {"set_error", test_set_error},
    {"set_error_truncates", test_set_error_truncates},
    {"errors_per_thread", test_errors_per_thread},
    {"launch_covers_grid", test_launch_covers_grid},
    {"num_threads_option", test_num_threads_option},
    {"env_num_threads", test_env_num_threads},
    {"env_num_threads_invalid", test_env_num_threads_invalid},
    {"sizes_and_arguments", test_sizes_and_arguments},
    {"concurrent_launches", test_concurrent_launches},
    {"nested_launch", test_nested_launch},
};

int main(int argc, char** argv) {
    size_t i;
    int ran = 0;
    /* The cases set TILE_NUM_THREADS themselves; start from "unset" whatever the caller's. */
    unsetenv("TILE_NUM_THREADS");
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
        tile_clear_error();
        cases[i].run();
        unsetenv("TILE_NUM_THREADS");
        ++ran;
    }
    if (ran == 0) {
        fprintf(stderr, "no test case named \"%s\"\n", argv[1]);
        return 2;
    }
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok (%d case%s)\n", ran, ran == 1 ? "" : "s");
    return 0;
}
