/* harness.c - CUnit driver shared by every tests/unit/test_*.c (see harness.h).
 * With an argument, runs only the tests whose name contains it. */
#include "harness.h"

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned skipped; /* oqc_test_skip calls of this process */

void oqc_test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("\nskip ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    skipped++;
}

/* 1 under `make check-models`. */
static int check_models(void) {
    const char *v = getenv("OQC_TEST_MODELS");
    return v && *v;
}

int oqc_test_made_model(const char *path) {
    if (!check_models())
        return 0;
    if (access(path, R_OK) == 0)
        return 1;
    char msg[512];
    snprintf(msg, sizeof msg, "%s missing: `make check-models` needs `make models` first", path);
    printf("\n  %s", msg);
    CU_assertImplementation(CU_FALSE, __LINE__, msg, __FILE__, "", CU_FALSE);
    return 0;
}

int oqc_test_main(const char *suite, const OqcTestCase *cases, int argc, char **argv) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "%s: cannot initialise CUnit\n", suite);
        return 2;
    }
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    for (const OqcTestCase *c = cases; s && c->name; c++)
        if ((argc < 2 || strstr(c->name, argv[1])) && (!c->made_models || check_models()))
            CU_add_test(s, c->name, c->fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned run = CU_get_number_of_tests_run();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    printf("RESULT %s %u %u %u\n", suite, run - failed, failed, skipped);
    CU_cleanup_registry();
    return (failed || asserts_failed) ? 1 : 0;
}

char *oqc_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static char tmpdir[64]; /* this process's scratch directory, made on first use */

static void cleanup_tmp(void) {
    if (tmpdir[0] && !getenv("OQC_KEEP_TMP")) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
}

const char *oqc_test_tmp(const char *name) {
    static char buf[32][256];
    static int k;
    k = (k + 1) % 32;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/oqc-test-XXXXXX");
        if (!mkdtemp(tmpdir))
            abort();
        atexit(cleanup_tmp);
    }
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

int oqc_test_write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int oqc_test_same_file(const char *a, const char *b) {
    size_t na, nb;
    char *pa = oqc_test_read_file(a, &na), *pb = oqc_test_read_file(b, &nb);
    int same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}
