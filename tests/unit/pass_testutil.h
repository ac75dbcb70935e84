/* pass_testutil.h - helpers shared by the graph pass tests (test_pass_fold_fuse.c,
 * test_pass_bn_pad.c): loading a model, its text dump, FP32 runs on pseudo-random
 * inputs and their comparison, running one pass directly or through the driver.
 * Header-only (static inline), so it links into nothing else. */
#ifndef OQC_PASS_TESTUTIL_H
#define OQC_PASS_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "backend.h"
#include "passes.h"

/* The model at path, shape-inferred (NULL with the error printed). */
static inline OqcGraph *load(const char *path) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare(path, NULL, 0, 1, &d);
    if (!g)
        printf("\n  %s: %s", path, d.buf ? d.buf : "?");
    oqc_diag_free(&d);
    return g;
}

/* The text dump as a malloc'd string. */
static inline char *dump(const OqcGraph *g) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(oqc_dump_text(g, f), 0);
    fclose(f);
    return buf;
}

/* Outputs of one FP32 run. */
typedef struct Outs {
    int n;            /* graph outputs */
    float *v[8];      /* their values (malloc'd) */
    int64_t len[8];   /* their element counts */
} Outs;

static inline void outs_free(Outs *o) {
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    o->n = 0;
}

/* Runs g on pseudo-random inputs in [-1, 1) (the same for every call: the inputs of a
 * graph do not change under these passes). */
static inline int run(OqcGraph *g, Outs *o) {
    OqcDiag d;
    oqc_diag_init(&d);
    memset(o, 0, sizeof *o);
    CU_ASSERT_FATAL(g->ninputs <= 8 && g->noutputs <= 8);
    const void *in[8];
    float *inbuf[8] = {0};
    void *out[8];
    uint32_t seed = 12345;
    for (int i = 0; i < g->ninputs; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        CU_ASSERT_EQUAL_FATAL(t->dtype, OQCF_FLOAT);
        int64_t n = oqc_shape_numel(&t->shape);
        inbuf[i] = malloc((size_t)(n ? n : 1) * sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            seed = seed * 1664525u + 1013904223u;
            inbuf[i][k] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
        }
        in[i] = inbuf[i];
    }
    o->n = g->noutputs;
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        CU_ASSERT_EQUAL_FATAL(t->dtype, OQCF_FLOAT);
        o->len[i] = oqc_shape_numel(&t->shape);
        o->v[i] = malloc((size_t)(o->len[i] ? o->len[i] : 1) * sizeof(float));
        out[i] = o->v[i];
    }
    OqcExec *e = oqc_exec_new(g, 1, &d);
    int rc = e && oqc_exec_run(e, in, out, &d) == 0 ? 0 : -1;
    if (rc < 0)
        printf("\n  %s: %s", g->path, d.buf ? d.buf : "?");
    oqc_exec_free(e);
    for (int i = 0; i < g->ninputs; i++)
        free(inbuf[i]);
    oqc_diag_free(&d);
    return rc;
}

/* Largest max|a - b| / max|a| over the outputs (0 when identical). */
static inline double rel_diff(const Outs *a, const Outs *b) {
    CU_ASSERT_EQUAL_FATAL(a->n, b->n);
    double worst = 0;
    for (int i = 0; i < a->n; i++) {
        CU_ASSERT_EQUAL_FATAL(a->len[i], b->len[i]);
        double ref = 0, diff = 0;
        for (int64_t k = 0; k < a->len[i]; k++) {
            ref = fmax(ref, fabs(a->v[i][k]));
            diff = fmax(diff, fabs((double)a->v[i][k] - b->v[i][k]));
        }
        double r = diff == 0 ? 0 : diff / (ref > 0 ? ref : 1e-30);
        worst = fmax(worst, r);
    }
    return worst;
}

static inline int bitwise_equal(const Outs *a, const Outs *b) {
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->len[i] != b->len[i] ||
            memcmp(a->v[i], b->v[i], (size_t)a->len[i] * sizeof(float)) != 0)
            return 0;
    return 1;
}

/* Runs pass `name` on g directly (then sorts and re-infers, as oqc_run_passes does) or
 * through the driver; returns the direct call's return value (its rewrites), or through
 * the driver the number of nodes the pass removed; the -v lines in *log (malloc'd). */
static inline int run_pass(OqcGraph *g, const char *name, int via_driver, char **log) {
    OqcDiag d;
    oqc_diag_init(&d);
    size_t len = 0;
    *log = NULL;
    d.verbose = 1;
    d.log = open_memstream(log, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d.log);
    int before = g->nnodes, r;
    if (via_driver) {
        r = oqc_run_passes(g, name, NULL, NULL, NULL, &d);
        if (r == 0)
            r = before - g->nnodes;
    } else {
        r = oqc_pass_find(name)->fn(g, &d);
        if (r >= 0 && (oqc_graph_toposort(g, &d) < 0 || oqc_infer_shapes(g, 1, &d) < 0))
            r = -1;
    }
    fclose(d.log);
    if (r < 0)
        printf("\n  %s after %s: %s", g->path, name, d.buf ? d.buf : "?");
    oqc_diag_free(&d);
    return r;
}

#endif
