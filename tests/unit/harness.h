/* harness.h - the one way oqc's CUnit tests are written.
 *
 * A test file is tests/unit/test_NAME.c; the Makefile builds it into its own binary
 * (build/tests/test_NAME) linked with liboqc.a, and tests/run.sh runs it from the
 * repository root, so model paths are relative to the root.  A file ends with
 *
 *     OQC_TEST_MAIN("suite name", OQC_TEST(test_a), OQC_TEST(test_b))
 *
 * and every test is a plain `static void test_a(void)` using CUnit's CU_ASSERT_*.
 * The harness prints CUnit's summary and a line
 * "RESULT <suite> <passed> <failed> <skipped>" that tests/run.sh adds up.  A check that
 * cannot run here (an instruction set the CPU lacks) calls oqc_test_skip with the
 * reason instead of returning quietly: the skip is counted and listed, never taken for
 * a pass (tests/expected-to-run.txt names the suites that must not skip, but for
 * reasons beginning "CPU lacks").  Checks on the networks `make models` writes are not
 * skips: they belong to `make check-models`, and oqc_test_made_model says whether this
 * run is that one. */
#ifndef OQC_TEST_HARNESS_H
#define OQC_TEST_HARNESS_H

#include <CUnit/CUnit.h>

typedef struct OqcTestCase {
    const char *name;   /* test name as printed */
    CU_TestFunc fn;     /* the test body */
    int made_models;    /* 1: a test of `make models` networks alone, run only by
                           `make check-models` (OQC_TEST_MADE) */
} OqcTestCase;

/* Runs the cases as one CUnit suite; returns the process exit status. */
int oqc_test_main(const char *suite, const OqcTestCase *cases, int argc, char **argv);

/* Reports a skipped check: prints "skip REASON" on a line of its own and counts it in
 * the RESULT line.  Reasons beginning "CPU lacks" mark instruction sets the CPU lacks
 * (allowed by tests/run.sh even in suites of tests/expected-to-run.txt). */
void oqc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For a model `make models` writes (models/tv/resnet18, mobilenet_v2, googlenet): 1 when
 * this run checks it, i.e. under `make check-models` (OQC_TEST_MODELS set) with the file
 * present; under check-models a missing file is a failure naming it (and 0); under
 * `make check` 0, and the caller leaves the model out (not a skip: it is another
 * target's check). */
int oqc_test_made_model(const char *path);

/* Reads a whole file into malloc'd memory (NUL-terminated); NULL if unreadable. */
char *oqc_test_read_file(const char *path, size_t *len);
/* Path of name in this process's scratch directory (/tmp/oqc-test-XXXXXX, made on first
 * use, removed at exit unless OQC_KEEP_TMP is set); valid for the next 31 calls. */
const char *oqc_test_tmp(const char *name);
/* Writes n bytes to path: 0, or -1. */
int oqc_test_write_file(const char *path, const void *p, size_t n);
/* 1 when both files exist and hold the same bytes. */
int oqc_test_same_file(const char *a, const char *b);

#define OQC_TEST(fn) { #fn, fn, 0 }
/* A test that checks only networks `make models` writes: registered only under
 * `make check-models`, so that `make check` neither runs nor counts it. */
#define OQC_TEST_MADE(fn) { #fn, fn, 1 }
#define OQC_TEST_MAIN(suite, ...)                                                  \
    int main(int argc, char **argv) {                                              \
        static const OqcTestCase oqc_cases_[] = { __VA_ARGS__, { 0, 0, 0 } };      \
        return oqc_test_main(suite, oqc_cases_, argc, argv);                       \
    }

#endif
