/* test_pass_fold_fuse.c - the fold-bn and fuse-cbr passes, alone and in sequence.
 *
 * For every model of the table below, fold-bn and then fuse-cbr are run two ways: by
 * calling pass_NAME directly (then re-sorting and re-inferring as the driver does) and
 * through oqc_run_passes(g, "NAME", ...); both must give the same IR dump. Checked:
 *   - rewrite counts: the pass's return value, the node count it removed, and the
 *     expected number for the model (models/tiny/make_pass_models.py documents them);
 *   - op counts: after fold-bn no BatchNormalization (nor Mul/Add by a constant) reads
 *     a Conv/Gemm output, after fuse-cbr no Relu/Clip/LeakyRelu does, except where the
 *     model is built so that the pass must not apply;
 *   - a pass that rewrites nothing leaves the dump byte-identical, says why in a -v
 *     line, and a second run of both passes changes nothing;
 *   - outputs: the FP32 executor on the same pseudo-random input before and after.
 *     fold-bn: max|after - before| <= 1e-5 * max|before| per output, because folding
 *     reassociates float products ((x * w) * s becomes x * (w * s), and the bias is
 *     rounded once instead of after each of the BN's operations), which moves results
 *     by a few ulps of the largest values. fuse-cbr: bit-exact, since the kernels apply
 *     the same activation to the same sums, only earlier.
 * models/tv/{resnet18,mobilenet_v2,googlenet}.onnx come from `make models` and are
 * checked by `make check-models` (a failure there when absent), not by `make check`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pass_testutil.h"

/* One model and what the passes must do to it. */
typedef struct Case {
    const char *path;       /* model file, relative to the repository root */
    int optional;           /* made by `make models`: checked by make check-models */
    int folds;              /* rewrites by fold-bn (BN + Mul + Add folded) */
    int bn_left;            /* BatchNormalization still reading a Conv/Gemm after it */
    int muladd_left;        /* Mul/Add by a constant still reading a Conv/Gemm */
    int fusions;            /* rewrites by fuse-cbr (after fold-bn) */
    int act_left;           /* Relu/Clip/LeakyRelu still reading a Conv/Gemm */
    const char *why;        /* expected in a -v line of a pass that cannot apply */
} Case;

static const Case cases[] = {
    {"models/fashion/fashion_cnn.onnx", 0, 9, 0, 0, 8, 0, NULL},
    {"models/tv/squeezenet1_1.onnx", 0, 0, 0, 0, 26, 0, NULL},
    {"models/tv/resnet18.onnx", 1, 20, 0, 0, 9, 0, NULL},
    {"models/tv/mobilenet_v2.onnx", 1, 52, 0, 0, 35, 0, NULL},
    {"models/tv/googlenet.onnx", 1, 57, 0, 0, 57, 0, NULL},
    {"models/tiny/batchnorm_after_conv.onnx", 0, 1, 0, 0, 0, 0, NULL},
    {"models/tiny/batchnorm_basic.onnx", 0, 0, 0, 0, 0, 0, "is a graph input"},
    {"models/tiny/mixed_small_cnn.onnx", 0, 1, 0, 0, 1, 0, NULL},
    {"models/tiny/pass_caffe2_muladd.onnx", 0, 6, 0, 0, 2, 0, NULL},
    {"models/tiny/pass_gemm_bn.onnx", 0, 4, 0, 0, 2, 0, NULL},
    {"models/tiny/pass_relu6_opset6.onnx", 0, 0, 0, 0, 2, 0, NULL},
    {"models/tiny/pass_relu6_opset12.onnx", 0, 0, 0, 0, 3, 0, NULL},
    {"models/tiny/pass_leaky.onnx", 0, 0, 0, 0, 2, 0, NULL},
    {"models/tiny/pass_shared_weight_bn.onnx", 0, 2, 0, 0, 0, 0, NULL},
    {"models/tiny/pass_neg_bn_two_consumers.onnx", 0, 0, 1, 0, 0, 1, "has 2 consumers"},
    {"models/tiny/pass_neg_relu_graph_output.onnx", 0, 0, 0, 0, 0, 1, "is a graph output"},
    {"models/tiny/pass_neg_clip_nonconst.onnx", 0, 0, 0, 0, 0, 1,
     "its min 'lo' is not a constant"},
    {"models/tiny/pass_neg_mul_not_per_channel.onnx", 0, 0, 0, 2, 0, 0, "not per-channel"},
};

/* ------------------------------------------------------------------ helpers */

static int is_conv_or_gemm(const OqcGraph *g, int t) {
    int p = t >= 0 ? g->tensors[t].producer : -1;
    return p >= 0 && (g->nodes[p].op == OQC_OP_Conv || g->nodes[p].op == OQC_OP_Gemm);
}

/* Nodes of the given op whose first input is a Conv/Gemm output; for Mul/Add, those
 * with one input a Conv/Gemm output and the other a constant. */
static int count_after_conv(const OqcGraph *g, OqcOp op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *nd = &g->nodes[i];
        if (nd->op != op || nd->nin < 1)
            continue;
        if (op == OQC_OP_Mul || op == OQC_OP_Add) {
            for (int k = 0; nd->nin == 2 && k < 2; k++)
                n += is_conv_or_gemm(g, nd->in[k]) && nd->in[1 - k] >= 0 &&
                     g->tensors[nd->in[1 - k]].is_const;
        } else {
            n += is_conv_or_gemm(g, nd->in[0]);
        }
    }
    return n;
}

static int acts_after_conv(const OqcGraph *g) {
    return count_after_conv(g, OQC_OP_Relu) + count_after_conv(g, OQC_OP_Clip) +
           count_after_conv(g, OQC_OP_LeakyRelu);
}

/* Lines of log starting with prefix. */
static int count_lines(const char *log, const char *prefix) {
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = log; p && *p;) {
        n += strncmp(p, prefix, len) == 0;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

/* ------------------------------------------------------------------ tests */

/* One pass on both graphs (g directly, g2 through the driver): rewrite count, one
 * statistics line, identical results, the dump unchanged when nothing was rewritten.
 * *text holds the dump before and receives the dump after; the -v lines are appended
 * to *why_log. Returns the rewrites. */
static int stage(const Case *c, OqcGraph *g, OqcGraph *g2, const char *pass, int expect,
                 char **text, char **why_log) {
    char *log = NULL, *log2 = NULL;
    int r = run_pass(g, pass, 0, &log);
    int r2 = run_pass(g2, pass, 1, &log2);
    CU_ASSERT_EQUAL(r, expect);
    CU_ASSERT_EQUAL(r2, expect);
    if (r != expect)
        printf("\n  %s: %s made %d rewrites, expected %d\n%s", c->path, pass, r, expect,
               log);
    /* exactly one statistics line, e.g. "fold-bn: folded 9 of 9 ..." */
    char stat[64];
    snprintf(stat, sizeof stat, "%s: %s ", pass,
             strcmp(pass, "fold-bn") ? "fused" : "folded");
    CU_ASSERT_EQUAL(count_lines(log, stat), 1);
    CU_ASSERT_EQUAL(count_lines(log2, stat), 1);
    CU_ASSERT_STRING_EQUAL(log, log2);
    char *after = dump(g), *after2 = dump(g2);
    CU_ASSERT_STRING_EQUAL(after, after2);
    if (r == 0)
        CU_ASSERT_STRING_EQUAL(*text, after);
    free(*text);
    *text = after;
    size_t old = *why_log ? strlen(*why_log) : 0;
    *why_log = realloc(*why_log, old + strlen(log) + 1);
    strcpy(*why_log + old, log);
    free(after2);
    free(log);
    free(log2);
    return r;
}

/* Every model of the table: fold-bn, then fuse-cbr, then both again. */
static void test_models(void) {
    for (size_t m = 0; m < sizeof cases / sizeof cases[0]; m++) {
        const Case *c = &cases[m];
        if (c->optional && !oqc_test_made_model(c->path))
            continue;
        OqcGraph *g = load(c->path), *g2 = load(c->path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g2);
        Outs ref = {0}, folded = {0}, fused = {0};
        CU_ASSERT_EQUAL_FATAL(run(g, &ref), 0);
        char *text = dump(g), *log = NULL;
        int n0 = g->nnodes;

        int folds = stage(c, g, g2, "fold-bn", c->folds, &text, &log);
        CU_ASSERT_EQUAL(count_after_conv(g, OQC_OP_BatchNormalization), c->bn_left);
        CU_ASSERT_EQUAL(count_after_conv(g, OQC_OP_Mul) + count_after_conv(g, OQC_OP_Add),
                        c->muladd_left);
        CU_ASSERT_EQUAL_FATAL(run(g, &folded), 0);
        double fold_diff = rel_diff(&ref, &folded);
        /* Measured: at most 2.3e-7 (pass_gemm_bn; float products reassociated); the
         * bound is 10x that.  Dropping epsilon moves batchnorm_after_conv by 7.5e-6. */
        CU_ASSERT(fold_diff <= 2.5e-6);

        int fusions = stage(c, g, g2, "fuse-cbr", c->fusions, &text, &log);
        CU_ASSERT_EQUAL(acts_after_conv(g), c->act_left);
        CU_ASSERT_EQUAL_FATAL(run(g, &fused), 0);
        CU_ASSERT(bitwise_equal(&folded, &fused));
        if (c->why && !strstr(log, c->why)) {
            printf("\n  %s: no -v line says '%s':\n%s", c->path, c->why, log);
            CU_FAIL("the reason for not applying is missing");
        }

        /* A second run finds nothing more to do and changes nothing. */
        char *log2 = NULL;
        CU_ASSERT_EQUAL(stage(c, g, g2, "fold-bn", 0, &text, &log2), 0);
        CU_ASSERT_EQUAL(stage(c, g, g2, "fuse-cbr", 0, &text, &log2), 0);

        printf("\n  %-46s nodes %3d -> %3d: fold-bn %2d, fuse-cbr %2d, "
               "max|diff|/max|ref| %.2g",
               c->path, n0, g->nnodes, folds, fusions, fold_diff);
        free(text);
        free(log);
        free(log2);
        outs_free(&ref);
        outs_free(&folded);
        outs_free(&fused);
        oqc_graph_free(g);
        oqc_graph_free(g2);
    }
}

/* Node by name, or -1. */
static int node_named(const OqcGraph *g, const char *name) {
    for (int i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* A Conv that already carries an activation cannot absorb a BN after it (the BN would
 * apply after the activation); the graph stays as it was, with a -v line. */
static void test_conv_with_activation_not_folded(void) {
    OqcGraph *g = load("models/tiny/batchnorm_after_conv.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int conv = node_named(g, "Conv_0");
    CU_ASSERT_FATAL(conv >= 0);
    g->nodes[conv].act = (OqcfAct){.kind = OQCF_ACT_RELU};
    Outs ref, after;
    CU_ASSERT_EQUAL_FATAL(run(g, &ref), 0);
    char *before = dump(g), *log;
    CU_ASSERT_EQUAL(run_pass(g, "fold-bn", 0, &log), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "'Conv_0' already has a fused activation"));
    char *text = dump(g);
    CU_ASSERT_STRING_EQUAL(before, text);
    CU_ASSERT_EQUAL_FATAL(run(g, &after), 0);
    CU_ASSERT(bitwise_equal(&ref, &after));
    free(before);
    free(text);
    free(log);
    outs_free(&ref);
    outs_free(&after);
    oqc_graph_free(g);
}

/* A training-mode BatchNormalization normalises with batch statistics: not folded.
 * Built here (training_mode=1 added to a loaded model) because the executor cannot run
 * it, and every model under models/tiny must run (tests/unit/test_passes.c). */
static void test_training_bn_not_folded(void) {
    OqcGraph *g = load("models/tiny/batchnorm_after_conv.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bn = node_named(g, "BatchNormalization_1");
    CU_ASSERT_FATAL(bn >= 0);
    OqcNode *n = &g->nodes[bn];
    OqcAttr *at = oqc_arena_alloc(g->arena, (size_t)(n->nattr + 1) * sizeof *at);
    memcpy(at, n->attr, (size_t)n->nattr * sizeof *at);
    at[n->nattr++] = (OqcAttr){.name = "training_mode", .type = OQC_ATTR_INT, .i = 1};
    n->attr = at;
    char *before = dump(g), *log;
    CU_ASSERT_EQUAL(run_pass(g, "fold-bn", 0, &log), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "'BatchNormalization_1' (BatchNormalization) not "
                                       "folded: it is in training mode"));
    char *text = dump(g);
    CU_ASSERT_STRING_EQUAL(before, text);
    free(before);
    free(text);
    free(log);
    oqc_graph_free(g);
}

/* Folded weights are new tensors with unique names; constants other nodes read (and
 * the originals in general) keep their bytes. */
static void test_new_tensors_shared_weights_untouched(void) {
    OqcGraph *g = load("models/tiny/pass_shared_weight_bn.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int w = oqc_tensor_find(g, "W"), b = oqc_tensor_find(g, "B");
    CU_ASSERT_FATAL(w >= 0 && b >= 0);
    void *w0 = malloc(g->tensors[w].nbytes), *b0 = malloc(g->tensors[b].nbytes);
    memcpy(w0, g->tensors[w].data, g->tensors[w].nbytes);
    memcpy(b0, g->tensors[b].data, g->tensors[b].nbytes);
    /* A name the pass would pick is taken: it must choose another. */
    int taken = oqc_tensor_add(g, "Conv_0.weight_folded");
    char *log;
    CU_ASSERT_EQUAL(run_pass(g, "fold-bn", 0, &log), 2);
    CU_ASSERT_EQUAL(memcmp(w0, g->tensors[w].data, g->tensors[w].nbytes), 0);
    CU_ASSERT_EQUAL(memcmp(b0, g->tensors[b].data, g->tensors[b].nbytes), 0);
    int c0 = node_named(g, "Conv_0"), c3 = node_named(g, "Conv_3");
    int c5 = node_named(g, "Conv_5");
    CU_ASSERT_FATAL(c0 >= 0 && c3 >= 0 && c5 >= 0);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[c0].in[1]].name, "Conv_0.weight_folded.1");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[c0].in[2]].name, "Conv_0.bias_folded");
    CU_ASSERT_NOT_EQUAL(g->nodes[c0].in[1], taken);
    /* the Conv without BN still reads the originals */
    CU_ASSERT_EQUAL(g->nodes[c3].in[1], w);
    CU_ASSERT_EQUAL(g->nodes[c3].in[2], b);
    /* the Conv without bias got one */
    CU_ASSERT_EQUAL_FATAL(g->nodes[c5].nin, 3);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[c5].in[1]].name, "Conv_5.weight_folded");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[c5].in[2]].name, "Conv_5.bias_folded");
    CU_ASSERT_EQUAL(g->tensors[g->nodes[c5].in[2]].shape.rank, 1);
    CU_ASSERT_EQUAL(g->tensors[g->nodes[c5].in[2]].shape.d[0], 4);
    /* the Convs now write what the BNs wrote */
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[c0].out[0]].name, "bn1");
    free(w0);
    free(b0);
    free(log);
    oqc_graph_free(g);
}

/* Gemm: op(B) scaled per column for both transB, C made [N] or kept [M, N], beta 1. */
static void test_gemm_folds(void) {
    OqcGraph *g = load("models/tiny/pass_gemm_bn.onnx");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *log;
    CU_ASSERT_EQUAL(run_pass(g, "fold-bn", 0, &log), 4);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(log, "fold-bn: folded 2 of 2 BatchNormalization, 1 Mul and 1 Add"));
    int g0 = node_named(g, "Gemm_0"), g3 = node_named(g, "Gemm_3");
    int g6 = node_named(g, "Gemm_6");
    CU_ASSERT_FATAL(g0 >= 0 && g3 >= 0 && g6 >= 0);
    CU_ASSERT_EQUAL(oqc_attr_float(&g->nodes[g0], "beta", 0), 1.0f);
    CU_ASSERT_EQUAL(oqc_attr_float(&g->nodes[g0], "alpha", 0), 0.5f);
    CU_ASSERT_EQUAL(oqc_attr_float(&g->nodes[g6], "beta", 0), 1.0f);
    CU_ASSERT_EQUAL_FATAL(g->nodes[g3].nin, 3); /* no C before: BN's shift became C */
    const OqcTensor *c3 = &g->tensors[g->nodes[g3].in[2]];
    CU_ASSERT(c3->shape.rank == 1 && c3->shape.d[0] == 6);
    const OqcTensor *c6 = &g->tensors[g->nodes[g6].in[2]];
    CU_ASSERT(c6->shape.rank == 2 && c6->shape.d[0] == 2 && c6->shape.d[1] == 4);
    free(log);
    oqc_graph_free(g);
}

/* The activation each fusion records: ReLU6 as CLIP(0, 6), absent Clip bounds as
 * infinities (attributes before opset 11, inputs after), LeakyRelu's alpha. */
static void test_fused_activations(void) {
    static const struct {
        const char *path, *node;
        OqcfActKind kind;
        float p0, p1;
    } want[] = {
        {"models/tiny/pass_relu6_opset6.onnx", "Conv_0", OQCF_ACT_CLIP, 0, 6},
        {"models/tiny/pass_relu6_opset6.onnx", "Conv_2", OQCF_ACT_CLIP, -0.5f, INFINITY},
        {"models/tiny/pass_relu6_opset12.onnx", "Conv_1", OQCF_ACT_CLIP, 0, 6},
        {"models/tiny/pass_relu6_opset12.onnx", "Conv_3", OQCF_ACT_CLIP, -INFINITY, 6},
        {"models/tiny/pass_relu6_opset12.onnx", "Conv_5", OQCF_ACT_CLIP, -0.5f, INFINITY},
        {"models/tiny/pass_leaky.onnx", "Conv_0", OQCF_ACT_LEAKY, 0.1f},
        {"models/tiny/pass_leaky.onnx", "Conv_2", OQCF_ACT_LEAKY, 0.01f},
        {"models/tiny/pass_gemm_bn.onnx", "Gemm_0", OQCF_ACT_RELU, 0},
        {"models/tiny/pass_gemm_bn.onnx", "Gemm_3", OQCF_ACT_LEAKY, 0.2f},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        OqcGraph *g = load(want[i].path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        OqcDiag d;
        oqc_diag_init(&d);
        CU_ASSERT_EQUAL(oqc_run_passes(g, "fold-bn,fuse-cbr", NULL, NULL, NULL, &d), 0);
        oqc_diag_free(&d);
        int n = node_named(g, want[i].node);
        CU_ASSERT_FATAL(n >= 0);
        const OqcfAct *a = &g->nodes[n].act;
        CU_ASSERT_EQUAL(a->kind, want[i].kind);
        if (want[i].kind == OQCF_ACT_CLIP || want[i].kind == OQCF_ACT_LEAKY)
            CU_ASSERT_EQUAL(a->p0, want[i].p0);
        if (want[i].kind == OQCF_ACT_CLIP)
            CU_ASSERT_EQUAL(a->p1, want[i].p1);
        oqc_graph_free(g);
    }
}

OQC_TEST_MAIN("pass-fold-fuse", OQC_TEST(test_models),
              OQC_TEST(test_conv_with_activation_not_folded),
              OQC_TEST(test_training_bn_not_folded),
              OQC_TEST(test_new_tensors_shared_weights_untouched),
              OQC_TEST(test_gemm_folds),
              OQC_TEST(test_fused_activations))
