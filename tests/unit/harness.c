/* harness.c - CUnit driver shared by every tests/unit/test_*.c (see harness.h).
 * With an argument, runs only the tests whose name contains it. */
#include "harness.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oqc_test_main(const char *suite, const OqcTestCase *cases, int argc, char **argv) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "%s: cannot initialise CUnit\n", suite);
        return 2;
    }
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    for (const OqcTestCase *c = cases; s && c->name; c++)
        if (argc < 2 || strstr(c->name, argv[1]))
            CU_add_test(s, c->name, c->fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned run = CU_get_number_of_tests_run();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    printf("RESULT %s %u %u\n", suite, run - failed, failed);
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
