/* test_passes.c - every pass preserves the FP32 outputs, alone and as the pipeline.
 *
 * For each model (committed ones; the `make models` networks under make check-models) the
 * graph is run on pseudo-random inputs as loaded; then, freshly loaded again, after
 * each pass alone and after the whole pipeline, and the outputs are compared:
 * max|diff| <= PASS_TOL * max|ref|.  Folding BatchNormalization into weights
 * reassociates float products, which moves results by a few ulps: measured, the
 * largest max|diff|/max|ref| over all models and passes is 3.2e-7 (the line printed at
 * the end); PASS_TOL is about 10x that.  A fold that drops BatchNorm's epsilon moves
 * batchnorm_after_conv by 7.5e-6 and fails. Batch 1 and batch 4: four samples through the batch-1 graph, and the
 * dynamic-batch model compiled at N = 4. Models with non-float inputs are skipped. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "backend.h"
#include "passes.h"

#define MAX_IO 8
#define PASS_TOL 3e-6

/* The float outputs of a model over all samples. */
typedef struct Outs {
    int n;                   /* graph outputs */
    int64_t elems[MAX_IO];   /* float elements per sample (0: not a float output) */
    float *v[MAX_IO];        /* stacked values per output (malloc'd) */
    int nodes;               /* node count of the graph that ran */
} Outs;

static void free_outs(Outs *o) {
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    o->n = 0;
}

/* Runs the model (after passes `only`, "all" for the pipeline, NULL for none) on
 * `samples` pseudo-random inputs. Returns 0, or -1 when it cannot run (non-float input). */
static int run_model(const char *path, const OqcInputShape *shape, const char *only,
                     int samples, Outs *res) {
    memset(res, 0, sizeof *res);
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare(path, shape, shape ? 1 : 0, 1, &d);
    if (!g) {
        oqc_diag_free(&d);
        return -1;
    }
    for (int i = 0; i < g->ninputs; i++)
        if (g->tensors[g->inputs[i]].dtype != OQCF_FLOAT || g->ninputs > MAX_IO ||
            g->noutputs > MAX_IO) {
            oqc_graph_free(g);
            oqc_diag_free(&d);
            return -1;
        }
    if (only && oqc_run_passes(g, strcmp(only, "all") ? only : NULL, NULL, NULL, NULL, &d) < 0) {
        fprintf(stderr, "%s after %s: %s", path, only, d.buf);
        CU_FAIL("pass failed");
        oqc_graph_free(g);
        oqc_diag_free(&d);
        return -1;
    }
    res->nodes = g->nnodes;
    OqcExec *e = oqc_exec_new(g, 1, &d);
    if (!e) {
        fprintf(stderr, "%s after %s: %s", path, only ? only : "-", d.buf);
        CU_FAIL("executor");
        oqc_graph_free(g);
        oqc_diag_free(&d);
        return -1;
    }
    res->n = g->noutputs;
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        res->elems[i] = t->dtype == OQCF_FLOAT ? oqc_shape_numel(&t->shape) : 0;
        res->v[i] = calloc((size_t)(res->elems[i] * samples + 1), sizeof(float));
    }
    uint32_t seed = 2024;
    for (int s = 0; s < samples; s++) {
        const void *ins[MAX_IO];
        void *os[MAX_IO];
        float *bufs[MAX_IO];
        for (int i = 0; i < g->ninputs; i++) {
            int64_t n = oqc_shape_numel(&g->tensors[g->inputs[i]].shape);
            bufs[i] = malloc((size_t)(n ? n : 1) * sizeof(float));
            for (int64_t k = 0; k < n; k++) {
                seed = seed * 1664525u + 1013904223u;
                bufs[i][k] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
            }
            ins[i] = bufs[i];
        }
        void *scratch[MAX_IO];
        for (int i = 0; i < g->noutputs; i++) {
            const OqcTensor *t = &g->tensors[g->outputs[i]];
            scratch[i] = malloc((size_t)oqc_shape_numel(&t->shape) * oqcf_dtype_size(t->dtype) + 1);
            os[i] = scratch[i];
        }
        int rc = oqc_exec_run(e, ins, os, &d);
        CU_ASSERT_EQUAL(rc, 0);
        for (int i = 0; i < g->noutputs; i++) {
            if (res->elems[i])
                memcpy(res->v[i] + s * res->elems[i], scratch[i],
                       (size_t)res->elems[i] * sizeof(float));
            free(scratch[i]);
        }
        for (int i = 0; i < g->ninputs; i++)
            free(bufs[i]);
    }
    oqc_exec_free(e);
    oqc_graph_free(g);
    oqc_diag_free(&d);
    return 0;
}

static int checked_models, checked_runs;
static double worst_rel; /* largest max|diff| / max|ref| seen, printed at the end */

static void check_model(const char *path, const OqcInputShape *shape, int samples) {
    Outs ref, got;
    if (run_model(path, shape, NULL, samples, &ref) < 0)
        return;
    int npasses;
    const OqcPass *pl = oqc_pipeline(&npasses);
    for (int p = 0; p <= npasses; p++) {
        const char *only = p < npasses ? pl[p].name : "all";
        CU_ASSERT_EQUAL_FATAL(run_model(path, shape, only, samples, &got), 0);
        CU_ASSERT_EQUAL_FATAL(got.n, ref.n);
        for (int i = 0; i < ref.n; i++) {
            int64_t n = ref.elems[i] * samples;
            double m = 0, diff = 0;
            for (int64_t k = 0; k < n; k++) {
                m = fmax(m, fabs(ref.v[i][k]));
                diff = fmax(diff, fabs((double)ref.v[i][k] - got.v[i][k]));
            }
            if (m > 0 && diff / m > worst_rel)
                worst_rel = diff / m;
            if (!(diff <= PASS_TOL * m)) {
                fprintf(stderr, "%s after %s: output %d max|diff| %g > %g * %g\n", path,
                        only, i, diff, PASS_TOL, m);
                CU_FAIL("outputs changed");
            }
        }
        if (p == npasses && samples == 1)
            printf("\n  %-48s nodes %4d -> %4d", path, ref.nodes, got.nodes);
        free_outs(&got);
        checked_runs++;
    }
    free_outs(&ref);
    checked_models++;
}

static void check_dir(const char *dir, int samples) {
    DIR *dd = opendir(dir);
    if (!dd)
        return;
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd))) {
        size_t len = strlen(de->d_name);
        if (len > 5 && !strcmp(de->d_name + len - 5, ".onnx")) {
            names = realloc(names, (size_t)(n + 1) * sizeof *names);
            names[n++] = strdup(de->d_name);
        }
    }
    closedir(dd);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!strstr(names[i], "dynamic_batch"))
            check_model(path, NULL, samples);
        free(names[i]);
    }
    free(names);
}

static void test_tiny_models(void) {
    check_dir("models/tiny", 1);
    check_dir("models/tiny", 4);
    OqcInputShape n4 = {"x", {4, {4, 3, 8, 8}}};
    check_model("models/tiny/dynamic_batch.onnx", &n4, 1);
    CU_ASSERT(checked_models >= 100);
}

static void test_real_models(void) {
    static const char *const models[] = {
        "models/fashion/fashion_cnn.onnx", "models/tv/squeezenet1_1.onnx",
        "models/tv/resnet18.onnx", "models/tv/mobilenet_v2.onnx", "models/tv/googlenet.onnx"};
    int before = checked_models;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        if (i >= 2 && !oqc_test_made_model(models[i]))
            continue; /* made by `make models`: checked by make check-models */
        check_model(models[i], NULL, 1);
        check_model(models[i], NULL, 4);
    }
    printf("\n  %d models, %d pass runs compared, largest max|diff|/max|ref| %.3g (bound %g)",
           checked_models, checked_runs, worst_rel, PASS_TOL);
    CU_ASSERT(checked_models - before >= 4);
}

OQC_TEST_MAIN("passes", OQC_TEST(test_tiny_models), OQC_TEST(test_real_models))
