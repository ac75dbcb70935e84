/* test_api.c - the public API (compiler/api/oqc.h) used the way a library user would:
 * only oqc.h is included. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "oqc.h"

static void test_load_describe_run(void) {
    char *err = NULL;
    OqcModel *m = oqc_model_load("models/tiny/mixed_small_cnn.onnx", NULL, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(oqc_model_num_inputs(m), 1);
    CU_ASSERT_EQUAL(oqc_model_num_outputs(m), 1);
    const char *name;
    int dtype;
    int64_t dims[8];
    CU_ASSERT_EQUAL(oqc_model_input(m, 0, &name, &dtype, dims), 4);
    CU_ASSERT_STRING_EQUAL(name, "x");
    CU_ASSERT_EQUAL(dtype, 1);
    CU_ASSERT(dims[0] == 1 && dims[1] == 3 && dims[2] == 16 && dims[3] == 16);
    CU_ASSERT_EQUAL(oqc_model_output(m, 0, &name, &dtype, dims), 2);
    CU_ASSERT(dims[0] == 1 && dims[1] == 10);
    CU_ASSERT_EQUAL(oqc_model_input(m, 1, NULL, NULL, NULL), -1);
    static float x[3 * 16 * 16];
    for (int i = 0; i < 3 * 16 * 16; i++)
        x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    float y1[10], y2[10];
    const void *in[1] = {x};
    void *out1[1] = {y1}, *out2[1] = {y2};
    CU_ASSERT_EQUAL(oqc_model_run(m, in, out1, 1, &err), 0);
    CU_ASSERT_EQUAL(oqc_model_run(m, in, out2, 2, &err), 0);
    /* Same kernels, same blocking per output element: identical results. */
    CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof y1), 0);
    FILE *f = tmpfile();
    CU_ASSERT_EQUAL(oqc_model_dump(m, f, "text", NULL, &err), 0);
    CU_ASSERT(ftell(f) > 100);
    CU_ASSERT_EQUAL(oqc_model_dump(m, f, "pdf", NULL, &err), -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown format 'pdf'"));
    free(err);
    fclose(f);
    oqc_model_free(m);
}

static void test_errors_are_returned(void) {
    char *err = NULL;
    CU_ASSERT_PTR_NULL(oqc_model_load("tests/bad/cycle.onnx", NULL, 0, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tests/bad/cycle.onnx"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cycle"));
    free(err);
    err = NULL;
    const char *bad_shape[] = {"x=1xZ"};
    CU_ASSERT_PTR_NULL(oqc_model_load("models/tiny/dynamic_batch.onnx", bad_shape, 1, &err));
    CU_ASSERT(err && strstr(err, "--input-shape 'x=1xZ'"));
    free(err);
    const char *good_shape[] = {"x=2x3x8x8"};
    OqcModel *m = oqc_model_load("models/tiny/dynamic_batch.onnx", good_shape, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL(m);
    oqc_model_free(m);
    CU_ASSERT_PTR_NULL(oqc_model_load("models/tiny/dynamic_batch.onnx", NULL, 0, NULL));
    CU_ASSERT_STRING_EQUAL(oqc_version(), OQC_VERSION); /* the Makefile's VERSION */
}

OQC_TEST_MAIN("api", OQC_TEST(test_load_describe_run), OQC_TEST(test_errors_are_returned))
