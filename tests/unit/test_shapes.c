/* test_shapes.c - oqc's shape inference against ONNX's own.
 *
 * The files tests/shapes/NAME.shapes.tsv were written by tests/shapes/make_shapes.py with
 * onnx.shape_inference for every committed model (format in tests/shapes/README.md).
 * For each file the model is loaded and inferred by oqc; every tensor ONNX knows must
 * exist in oqc's graph with the same element type and the same dims. A dim ONNX leaves
 * unknown ('?', or '*' for an unknown rank) is not compared: oqc may know more (it
 * derives Reshape targets from Shape chains, which ONNX 1.12 does not). Files for a
 * model with a symbolic input dim are compared after fixing the dim to 1 (the
 * "__fixed_N1" files); the unfixed variant is skipped because oqc requires static
 * shapes (--input-shape). References of models that `make models` generates are
 * committed too; `make check-models` compares them. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "backend.h"

static int compare_file(const char *tsv_name) {
    char model[1024], path[1200];
    snprintf(model, sizeof model, "%s", tsv_name);
    char *suffix = strstr(model, ".shapes.tsv");
    if (!suffix)
        return 0;
    *suffix = 0;
    int fixed = 0;
    char *fx = strstr(model, "__fixed_N1");
    if (fx) {
        *fx = 0;
        fixed = 1;
    }
    for (char *p = strstr(model, "__"); p; p = strstr(p, "__")) {
        *p = '/';
        memmove(p + 1, p + 2, strlen(p + 2) + 1);
    }
    if (access(model, R_OK) != 0 && !oqc_test_made_model(model)) {
        /* References of `make models` networks: compared by make check-models (which
         * fails when the network is missing), left out of make check. */
        printf("\n  %s: a `make models` network, compared by make check-models", model);
        return 0;
    }
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_load_model(model, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int dynamic = 0;
    OqcInputShape shapes[16];
    int nshapes = 0;
    for (int i = 0; i < g->ninputs && nshapes < 16; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        if (oqc_shape_known(&t->shape))
            continue;
        dynamic = 1;
        shapes[nshapes].name = t->name;
        shapes[nshapes].shape = t->shape;
        for (int k = 0; k < t->shape.rank; k++)
            if (shapes[nshapes].shape.d[k] < 0)
                shapes[nshapes].shape.d[k] = 1;
        nshapes++;
    }
    if (dynamic && !fixed) {
        oqc_graph_free(g);
        oqc_diag_free(&d);
        return 0;
    }
    int rc = oqc_fix_inputs(g, shapes, nshapes, &d) == 0 ? oqc_infer_shapes(g, 0, &d) : -1;
    if (rc < 0)
        fprintf(stderr, "%s: %s", model, d.buf);
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(path, sizeof path, "tests/shapes/%s", tsv_name);
    char *text = oqc_test_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    int checked = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(tab2);
        *tab1 = *tab2 = 0;
        const char *name = line, *dims = tab2 + 1;
        int elem = atoi(tab1 + 1);
        int id = oqc_tensor_find(g, name);
        if (id < 0) {
            fprintf(stderr, "%s: tensor '%s' is missing\n", model, name);
            CU_FAIL("tensor missing");
            continue;
        }
        const OqcTensor *t = &g->tensors[id];
        if ((int)t->dtype != elem) {
            fprintf(stderr, "%s: '%s' dtype %d, onnx says %d\n", model, name, t->dtype, elem);
            CU_FAIL("dtype differs");
        }
        if (strcmp(dims, "*") == 0)
            continue;
        OqcShape want = {.rank = 0};
        if (strcmp(dims, "-") != 0)
            for (const char *p = dims; *p;) {
                want.d[want.rank++] = *p == '?' ? -1 : strtoll(p, NULL, 10);
                p = strchr(p, 'x');
                if (!p)
                    break;
                p++;
            }
        int same = want.rank == t->shape.rank;
        for (int k = 0; same && k < want.rank; k++)
            same = want.d[k] < 0 || want.d[k] == t->shape.d[k];
        if (!same) {
            char buf[128];
            fprintf(stderr, "%s: '%s' shape %s, onnx says %s\n", model, name,
                    oqc_shape_str(&t->shape, buf, sizeof buf), dims);
            CU_FAIL("shape differs");
        }
        checked++;
    }
    free(text);
    oqc_graph_free(g);
    oqc_diag_free(&d);
    return checked;
}

static void test_all_reference_shapes(void) {
    DIR *dir = opendir("tests/shapes");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    struct dirent *de;
    int files = 0, tensors = 0;
    while ((de = readdir(dir))) {
        if (!strstr(de->d_name, ".shapes.tsv"))
            continue;
        tensors += compare_file(de->d_name);
        files++;
    }
    closedir(dir);
    printf("\n  compared %d tensors in %d reference files\n", tensors, files);
    CU_ASSERT(files >= 100);
    CU_ASSERT(tensors >= 500);
}

/* Element counts saturate instead of overflowing (UB before: a fuzzed Pad with pads
 * near 2^62); a 0 extent gives 0 whatever the others, an unknown one -1. */
static void test_numel_saturates(void) {
    const int64_t big = (int64_t)1 << 40;
    OqcShape s = {.rank = 2, .d = {big, big}};
    CU_ASSERT_EQUAL(oqc_shape_numel(&s), INT64_MAX);
    s = (OqcShape){.rank = 3, .d = {big, big, 0}};
    CU_ASSERT_EQUAL(oqc_shape_numel(&s), 0);
    s = (OqcShape){.rank = 3, .d = {0, big, big}};
    CU_ASSERT_EQUAL(oqc_shape_numel(&s), 0);
    s = (OqcShape){.rank = 2, .d = {big, -1}};
    CU_ASSERT_EQUAL(oqc_shape_numel(&s), -1);
    s = (OqcShape){.rank = 2, .d = {(int64_t)1 << 31, (int64_t)1 << 31}};
    CU_ASSERT_EQUAL(oqc_shape_numel(&s), (int64_t)1 << 62);
    CU_ASSERT_EQUAL(oqc_mul_sat(INT64_MAX, 2), INT64_MAX);
    CU_ASSERT_EQUAL(oqc_mul_sat(INT64_MAX / 2, 2), INT64_MAX - 1);
    CU_ASSERT_EQUAL(oqc_mul_sat(INT64_MAX, 0), 0);
}

OQC_TEST_MAIN("shapes", OQC_TEST(test_all_reference_shapes), OQC_TEST(test_numel_saturates))
