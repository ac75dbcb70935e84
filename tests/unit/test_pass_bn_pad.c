/* test_pass_bn_pad.c - the bn-conv and fold-pad passes.
 *
 * On the models of models/tiny/make_pass_models.py's second group (counts documented
 * there), each pass is run alone through oqc_run_passes and checked for:
 *   - its rewrite count (the return value of a direct call, same graph either way) and
 *     the BatchNormalization / Pad nodes left, with the -v reason of each that stays;
 *   - outputs: the FP32 executor on the same pseudo-random input before and after.
 *     bn-conv: max|after - before| <= 1e-6 * max|before| per output. The BN kernel and
 *     the depthwise conv both compute x * s + t with s and t the same floats (rounded
 *     once from double), one rounding each for the product and the sum, or one for a
 *     fused multiply-add where a kernel uses it: at most an ulp or two of the larger
 *     term apart, ~2.4e-7 relative; the bound is 4x that. fold-pad: the same bound:
 *     the folded reader sums the same products (the Pad's zeros add exactly nothing)
 *     but a conv with other padding may take another kernel path and associate the
 *     sum differently. Measured (printed): bn-conv at most 1.3e-7, fold-pad 0;
 *   - what the rewrite wrote: a BN's conv has group C, kernel 1x1 and W[c], B[c] the
 *     float of gamma / sqrt(var + eps) and beta - mean * W computed here in double from
 *     the model's constants; a folded reader has the pads and count_include_pad derived
 *     by hand in the expectations below from the model's definition;
 *   - a second run rewrites nothing and leaves the dump as it is.
 * After the whole pipeline no BatchNormalization and no Relu remain in bn_concat (the
 * Relu after the second BN is fused into its conv). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pass_testutil.h"

#define TOL 1e-6

/* One model and what the passes must do to it. */
typedef struct Case {
    const char *path;    /* model file, relative to the repository root */
    int bn_conv;         /* BNs bn-conv rewrites */
    int bn_left;         /* BatchNormalization nodes after bn-conv */
    int pad_fold;        /* Pads fold-pad folds into their reader */
    int pad_removed;     /* Pads fold-pad removes as padding nothing */
    int pad_left;        /* Pad nodes after fold-pad */
    const char *why[8];  /* each expected in a -v line (NULL-terminated) */
} Case;

static const Case cases[] = {
    {"models/tiny/pass_bn_concat.onnx", 2, 0, 0, 0, 0, {NULL}},
    {"models/tiny/pass_neg_bn_rank2.onnx", 0, 1, 0, 0, 0,
     {"'BatchNormalization_0' (BatchNormalization) stays: its input 'x' is not a 4-D float "
      "tensor (f32 2x6)", NULL}},
    {"models/tiny/batchnorm_basic.onnx", 1, 0, 0, 0, 0, {NULL}},
    {"models/tiny/pass_pad_avgpool.onnx", 0, 0, 2, 1, 0, {NULL}},
    {"models/tiny/pass_pad_conv.onnx", 0, 0, 2, 0, 0, {NULL}},
    {"models/tiny/pass_pad_opset10.onnx", 0, 0, 2, 0, 0, {NULL}},
    {"models/tiny/pass_neg_pad1.onnx", 0, 0, 0, 0, 4,
     {"'Pad_1' (Pad) stays: MaxPool 'MaxPool_2' reads it and its input 'x' is not provably "
      "non-negative",
      "'Pad_3' (Pad) stays: a window of MaxPool 'MaxPool_4' would see only the Pad's zeros",
      "'Pad_5' (Pad) stays: its output 'pad5' has 2 readers",
      "'Pad_9' (Pad) stays: it pads with the constant 0.5, not 0", NULL}},
    {"models/tiny/pass_neg_pad2.onnx", 0, 0, 0, 0, 4,
     {"'Pad_1' (Pad) stays: it pads in mode 'reflect'",
      "'Pad_3' (Pad) stays: it pads the batch or channel axis",
      "'Pad_5' (Pad) stays: AveragePool 'AveragePool_6' has pads of its own and "
      "count_include_pad 0",
      "'Pad_7' (Pad) stays: folded, AveragePool 'AveragePool_8' would have other output "
      "extents (ceil_mode)", NULL}},
};

/* ------------------------------------------------------------------ helpers */

static int count_op(const OqcGraph *g, OqcOp op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

static int node_named(const OqcGraph *g, const char *name) {
    for (int i = 0; i < g->nnodes; i++)
        if (!strcmp(g->nodes[i].name, name))
            return i;
    return -1;
}

/* One pass on g (directly) and g2 (through the driver): the expected count of rewrites
 * and of nodes removed, the same dump and log both ways, the outputs within TOL of ref;
 * the -v lines appended to *all. Returns the relative difference. */
static double stage(const Case *c, OqcGraph *g, OqcGraph *g2, const char *pass, int expect,
                    int removed, const Outs *ref, char **all) {
    char *log = NULL, *log2 = NULL;
    int r = run_pass(g, pass, 0, &log);
    CU_ASSERT_EQUAL(run_pass(g2, pass, 1, &log2), removed);
    CU_ASSERT_EQUAL(r, expect);
    if (r != expect)
        printf("\n  %s: %s made %d rewrites, expected %d\n%s", c->path, pass, r, expect, log);
    CU_ASSERT_STRING_EQUAL(log, log2);
    char *a = dump(g), *b = dump(g2);
    CU_ASSERT_STRING_EQUAL(a, b);
    Outs after;
    CU_ASSERT_EQUAL_FATAL(run(g, &after), 0);
    double diff = rel_diff(ref, &after);
    CU_ASSERT(diff <= TOL);
    /* a second run finds nothing to do */
    char *log3 = NULL;
    CU_ASSERT_EQUAL(run_pass(g, pass, 0, &log3), 0);
    char *a2 = dump(g);
    CU_ASSERT_STRING_EQUAL(a, a2);
    size_t old = *all ? strlen(*all) : 0;
    *all = realloc(*all, old + strlen(log) + 1);
    strcpy(*all + old, log);
    outs_free(&after);
    free(a);
    free(a2);
    free(b);
    free(log);
    free(log2);
    free(log3);
    return diff;
}

/* ------------------------------------------------------------------ tests */

static void test_models(void) {
    for (size_t m = 0; m < sizeof cases / sizeof cases[0]; m++) {
        const Case *c = &cases[m];
        OqcGraph *g = load(c->path), *g2 = load(c->path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g2);
        Outs ref;
        CU_ASSERT_EQUAL_FATAL(run(g, &ref), 0);
        char *log = NULL;
        double d1 = stage(c, g, g2, "bn-conv", c->bn_conv, 0, &ref, &log);
        CU_ASSERT_EQUAL(count_op(g, OQC_OP_BatchNormalization), c->bn_left);
        int pads0 = count_op(g, OQC_OP_Pad);
        double d2 = stage(c, g, g2, "fold-pad", c->pad_fold + c->pad_removed,
                          c->pad_fold + c->pad_removed, &ref, &log);
        CU_ASSERT_EQUAL(count_op(g, OQC_OP_Pad), c->pad_left);
        CU_ASSERT_EQUAL(pads0 - c->pad_fold - c->pad_removed, c->pad_left);
        char stat[128];
        snprintf(stat, sizeof stat, "fold-pad: folded %d of %d Pad", c->pad_fold, pads0);
        CU_ASSERT_PTR_NOT_NULL(strstr(log, stat));
        snprintf(stat, sizeof stat, "removed %d that pad nothing", c->pad_removed);
        CU_ASSERT_PTR_NOT_NULL(strstr(log, stat));
        for (int k = 0; k < 8 && c->why[k]; k++)
            if (!strstr(log, c->why[k])) {
                printf("\n  %s: no -v line says '%s':\n%s", c->path, c->why[k], log);
                CU_FAIL("the reason for not applying is missing");
            }
        printf("\n  %-40s bn-conv %d (max|diff|/max|ref| %.2g), fold-pad %d (%.2g)",
               c->path, c->bn_conv, d1, c->pad_fold + c->pad_removed, d2);
        free(log);
        outs_free(&ref);
        oqc_graph_free(g);
        oqc_graph_free(g2);
    }
}

/* The depthwise conv bn-conv writes: group C, 1x1, float(gamma / sqrt(var + eps)) and
 * float(beta - mean * that) from the BN's own constants; the node keeps its name and
 * output, and the executor takes it as depthwise (group == C == K). */
static void test_bn_conv_weights(void) {
    OqcGraph *g = load("models/tiny/pass_bn_concat.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bn = node_named(g, "BatchNormalization_4");
    CU_ASSERT_FATAL(bn >= 0 && g->nodes[bn].nin == 5);
    int out = g->nodes[bn].out[0], nch = 9;
    const float *par[4];
    for (int k = 0; k < 4; k++)
        par[k] = g->tensors[g->nodes[bn].in[k + 1]].data;
    double eps = oqc_attr_float(&g->nodes[bn], "epsilon", 0);
    CU_ASSERT_DOUBLE_EQUAL(eps, 1e-3, 1e-9);
    char *log;
    CU_ASSERT_EQUAL(run_pass(g, "bn-conv", 1, &log), 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(log, "bn-conv: rewrote 2 of 2 BatchNormalization left after fold-bn"));
    bn = node_named(g, "BatchNormalization_4");
    CU_ASSERT_FATAL(bn >= 0);
    const OqcNode *n = &g->nodes[bn];
    CU_ASSERT_EQUAL(n->op, OQC_OP_Conv);
    CU_ASSERT_EQUAL(n->out[0], out);
    CU_ASSERT_EQUAL(oqc_attr_int(n, "group", 0), nch);
    const int64_t *ks;
    CU_ASSERT(oqc_attr_ints(n, "kernel_shape", &ks) == 2 && ks[0] == 1 && ks[1] == 1);
    CU_ASSERT_EQUAL_FATAL(n->nin, 3);
    const OqcTensor *w = &g->tensors[n->in[1]], *b = &g->tensors[n->in[2]];
    CU_ASSERT(w->shape.rank == 4 && w->shape.d[0] == nch && w->shape.d[1] == 1 &&
              w->shape.d[2] == 1 && w->shape.d[3] == 1);
    CU_ASSERT(b->shape.rank == 1 && b->shape.d[0] == nch);
    CU_ASSERT_EQUAL(g->tensors[n->in[0]].shape.d[1], nch); /* group == C == K */
    for (int c = 0; c < nch; c++) {
        double s = (double)par[0][c] / sqrt((double)par[3][c] + (double)1e-3f);
        CU_ASSERT_EQUAL(((const float *)w->data)[c], (float)s);
        CU_ASSERT_EQUAL(((const float *)b->data)[c],
                        (float)((double)par[1][c] - (double)par[2][c] * s));
    }
    free(log);
    oqc_graph_free(g);

    /* the whole pipeline: no BN, and the Relu after the second is fused into its conv */
    g = load("models/tiny/pass_bn_concat.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL_FATAL(oqc_run_passes(g, NULL, NULL, NULL, NULL, &d), 0);
    oqc_diag_free(&d);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_BatchNormalization), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Relu), 0);
    bn = node_named(g, "BatchNormalization_4");
    CU_ASSERT_FATAL(bn >= 0);
    CU_ASSERT_EQUAL(g->nodes[bn].act.kind, OQCF_ACT_RELU);
    oqc_graph_free(g);
}

/* A folded reader's attributes: pads = its own resolved pads + the Pad's, auto_pad gone,
 * count_include_pad 1 for AveragePool; a Pad of zeros just disappears. */
static void test_folded_attributes(void) {
    static const struct {
        const char *path, *node;
        int64_t pads[4];   /* H begin, W begin, H end, W end */
        int cip;           /* count_include_pad after (-1: not an AveragePool) */
    } want[] = {
        /* Pad(1, 1) -> AveragePool(k3): pads 1, counting them (Inception) */
        {"models/tiny/pass_pad_avgpool.onnx", "AveragePool_3", {1, 1, 1, 1}, 1},
        /* Pad(H begin 2) -> AveragePool(pads W 1, count_include_pad 1) */
        {"models/tiny/pass_pad_avgpool.onnx", "AveragePool_5", {2, 1, 0, 1}, 1},
        /* Pad of zeros removed: the pool keeps pads 1 and count_include_pad 0 */
        {"models/tiny/pass_pad_avgpool.onnx", "AveragePool_7", {1, 1, 1, 1}, 0},
        /* Pad(axes [2, 3]: H 1 + 1, W 2 + 0) -> Conv(pads 1) */
        {"models/tiny/pass_pad_conv.onnx", "Conv_1", {2, 3, 2, 1}, -1},
        /* Pad(W begin 1, H end 1) -> Conv(SAME_UPPER, stride 2) on 11x11: 1 + 1 each */
        {"models/tiny/pass_pad_conv.onnx", "Conv_4", {1, 2, 2, 1}, -1},
        /* opset 10 attributes: Pad(1) -> MaxPool(k3) after Relu */
        {"models/tiny/pass_pad_opset10.onnx", "MaxPool_3", {1, 1, 1, 1}, -1},
        /* Pad(W begin 2, H end 1, value 0) -> Conv(pads H 1) */
        {"models/tiny/pass_pad_opset10.onnx", "Conv_5", {1, 2, 2, 0}, -1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        OqcGraph *g = load(want[i].path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        char *log;
        CU_ASSERT(run_pass(g, "fold-pad", 1, &log) >= 2); /* nodes removed */
        int n = node_named(g, want[i].node);
        CU_ASSERT_FATAL(n >= 0);
        const int64_t *p;
        int np = oqc_attr_ints(&g->nodes[n], "pads", &p);
        CU_ASSERT_EQUAL_FATAL(np, 4);
        for (int k = 0; k < 4; k++)
            CU_ASSERT_EQUAL(p[k], want[i].pads[k]);
        CU_ASSERT_PTR_NULL(oqc_attr_find(&g->nodes[n], "auto_pad"));
        if (want[i].cip >= 0)
            CU_ASSERT_EQUAL(oqc_attr_int(&g->nodes[n], "count_include_pad", 0), want[i].cip);
        /* it reads the Pad's input directly */
        int x = g->nodes[n].in[0];
        CU_ASSERT(g->tensors[x].producer < 0 ||
                  g->nodes[g->tensors[x].producer].op != OQC_OP_Pad);
        free(log);
        oqc_graph_free(g);
    }
}

OQC_TEST_MAIN("pass-bn-pad", OQC_TEST(test_models), OQC_TEST(test_bn_conv_weights),
              OQC_TEST(test_folded_attributes))
