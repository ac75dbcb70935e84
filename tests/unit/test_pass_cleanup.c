/* test_pass_cleanup.c - the cleanup pass (passes/cleanup.c): op counts after the pass,
 * its statistics and -v notes, and output preservation.
 *
 * Every model goes through clean(): it runs the FP32 executor on a pseudo-random input
 * before the pass, runs pass_cleanup directly, and requires the outputs afterwards to be
 * bit-identical (folding uses the executor's own kernels, bypassing copies nothing: no
 * arithmetic changes) under unchanged graph output names, dtypes and shapes. It then
 * runs the pass again through oqc_run_passes(g, "cleanup", ...) on a fresh load and
 * requires the same outputs and the same text dump. A second cleanup must find nothing.
 *
 * Models: models/tiny/cleanup_*.onnx (made by models/tiny/make_cleanup_models.py; the
 * comment above each builder there says what must remain) and a few models of
 * make_tiny.py (pytorch_style_flatten, identity_basic, dropout_*, constantofshape_*,
 * cast_*). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "passes.h"

#define MAX_OUTS 8

/* Outputs of one executor run. */
typedef struct Outs {
    int n;                          /* number of graph outputs */
    const char *name[MAX_OUTS];     /* their names */
    OqcfDType dtype[MAX_OUTS];      /* their element types */
    OqcShape shape[MAX_OUTS];       /* their shapes */
    size_t nbytes[MAX_OUTS];        /* bytes of data[i] */
    void *data[MAX_OUTS];           /* values (malloc'd) */
} Outs;

/* A model after cleanup, with what the pass said. */
typedef struct Cleaned {
    OqcGraph *g;      /* the cleaned graph (shape-inferred, runnable) */
    int rc;           /* pass_cleanup's return value */
    char *log;        /* its -v output (malloc'd) */
    char *before;     /* text dump before the pass (malloc'd) */
    char *after;      /* text dump after it (malloc'd) */
} Cleaned;

static char *dump_text(const OqcGraph *g) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(oqc_dump_text(g, f), 0);
    fclose(f);
    return buf;
}

/* Fills every graph input with the same pseudo-random values for a given graph shape. */
static void **make_inputs(const OqcGraph *g) {
    void **in = calloc((size_t)g->ninputs + 1, sizeof *in);
    uint32_t s = 12345;
    for (int i = 0; i < g->ninputs; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        int64_t n = oqc_shape_numel(&t->shape);
        size_t es = oqcf_dtype_size(t->dtype);
        unsigned char *p = malloc((size_t)n * es + 1);
        for (int64_t j = 0; j < n; j++) {
            s = s * 1664525u + 1013904223u;
            int v = (int)(s >> 16) % 2001 - 1000;
            if (t->dtype == OQCF_FLOAT)
                ((float *)p)[j] = (float)v / 250.0f;
            else if (t->dtype == OQCF_INT64)
                ((int64_t *)p)[j] = v % 6;
            else
                for (size_t b = 0; b < es; b++)
                    p[(size_t)j * es + b] = (unsigned char)(s >> (8 * (b % 4)));
        }
        in[i] = p;
    }
    return in;
}

static void free_inputs(const OqcGraph *g, void **in) {
    for (int i = 0; i < g->ninputs; i++)
        free(in[i]);
    free(in);
}

/* Runs the graph once (one thread) into o; 0 on success. */
static int run(OqcGraph *g, Outs *o) {
    OqcDiag d;
    oqc_diag_init(&d);
    memset(o, 0, sizeof *o);
    CU_ASSERT_FATAL(g->noutputs <= MAX_OUTS);
    OqcExec *e = oqc_exec_new(g, 1, &d);
    if (!e) {
        fprintf(stderr, "%s", d.buf ? d.buf : "exec_new failed\n");
        oqc_diag_free(&d);
        return -1;
    }
    void **in = make_inputs(g);
    void *outp[MAX_OUTS];
    o->n = g->noutputs;
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        o->name[i] = t->name;
        o->dtype[i] = t->dtype;
        o->shape[i] = t->shape;
        o->nbytes[i] = (size_t)oqc_shape_numel(&t->shape) * oqcf_dtype_size(t->dtype);
        o->data[i] = outp[i] = malloc(o->nbytes[i] + 1);
    }
    int rc = oqc_exec_run(e, (const void *const *)in, outp, &d);
    if (rc < 0)
        fprintf(stderr, "%s", d.buf ? d.buf : "exec_run failed\n");
    oqc_exec_free(e);
    free_inputs(g, in);
    oqc_diag_free(&d);
    return rc;
}

static void free_outs(Outs *o) {
    for (int i = 0; i < o->n; i++)
        free(o->data[i]);
}

/* Same output names, types and bytes. */
static void assert_same_outputs(const Outs *a, const Outs *b) {
    CU_ASSERT_EQUAL_FATAL(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        CU_ASSERT_STRING_EQUAL(a->name[i], b->name[i]);
        CU_ASSERT_EQUAL(a->dtype[i], b->dtype[i]);
        CU_ASSERT(oqc_shape_equal(&a->shape[i], &b->shape[i]));
        CU_ASSERT_EQUAL_FATAL(a->nbytes[i], b->nbytes[i]);
        CU_ASSERT(memcmp(a->data[i], b->data[i], a->nbytes[i]) == 0);
    }
}

/* Loads path, cleans it (see the file comment for everything this checks). */
static Cleaned clean(const char *path) {
    Cleaned c = {0};
    OqcDiag d;
    oqc_diag_init(&d);
    c.g = oqc_prepare(path, NULL, 0, 1, &d);
    if (!c.g)
        fprintf(stderr, "%s", d.buf ? d.buf : "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c.g);
    Outs before, after, piped;
    CU_ASSERT_EQUAL_FATAL(run(c.g, &before), 0);
    c.before = dump_text(c.g);

    size_t loglen = 0;
    d.verbose = 1;
    d.log = open_memstream(&c.log, &loglen);
    c.rc = pass_cleanup(c.g, &d);
    fclose(d.log);
    d.log = NULL;
    CU_ASSERT_EQUAL(d.nerrors, 0);
    if (d.nerrors)
        fprintf(stderr, "%s", d.buf);
    CU_ASSERT_FATAL(c.rc >= 0);
    c.after = dump_text(c.g);
    CU_ASSERT_EQUAL_FATAL(run(c.g, &after), 0);
    assert_same_outputs(&before, &after);

    /* The same through the pipeline driver (which re-sorts and re-infers shapes). */
    OqcGraph *g2 = oqc_prepare(path, NULL, 0, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g2);
    d.verbose = 0;
    CU_ASSERT_EQUAL_FATAL(oqc_run_passes(g2, "cleanup", NULL, NULL, NULL, &d), 0);
    CU_ASSERT_EQUAL_FATAL(run(g2, &piped), 0);
    assert_same_outputs(&before, &piped);
    char *dump2 = dump_text(g2);
    CU_ASSERT_STRING_EQUAL(dump2, c.after);

    /* A second cleanup finds nothing and changes nothing. */
    CU_ASSERT_EQUAL(pass_cleanup(g2, &d), 0);
    char *dump3 = dump_text(g2);
    CU_ASSERT_STRING_EQUAL(dump3, c.after);
    CU_ASSERT_EQUAL(d.nerrors, 0);

    free(dump2);
    free(dump3);
    oqc_graph_free(g2);
    free_outs(&before);
    free_outs(&after);
    free_outs(&piped);
    oqc_diag_free(&d);
    return c;
}

static void cleaned_free(Cleaned *c) {
    oqc_graph_free(c->g);
    free(c->log);
    free(c->before);
    free(c->after);
}

static int count_op(const OqcGraph *g, OqcOp op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

/* The node writing tensor `name`, or -1 (a constant or input, or no such tensor). */
static int producer_of(const OqcGraph *g, const char *name) {
    int t = oqc_tensor_find(g, name);
    return t < 0 ? -1 : g->tensors[t].producer;
}

/* The -v output holds exactly one statistics line, and it is `stats`. */
static void assert_stats(const Cleaned *c, const char *stats) {
    int nstats = 0;
    for (const char *p = c->log; (p = strstr(p, "cleanup: removed ")) != NULL; p++)
        nstats++;
    CU_ASSERT_EQUAL(nstats, 1);
    CU_ASSERT_EQUAL(strncmp(c->log, stats, strlen(stats)), 0);
    CU_ASSERT_EQUAL(c->log[strlen(stats)], '\n');
    if (strncmp(c->log, stats, strlen(stats)) != 0)
        fprintf(stderr, "\nexpected: %s\ngot:      %s", stats, c->log);
}

/* Number of -v note lines (everything after the statistics line). */
static int count_notes(const Cleaned *c) {
    int n = 0;
    for (const char *p = c->log; *p; p++)
        n += *p == '\n';
    return n - 1;
}

/* Reads the int64 constant tensor t into v (up to max values); count or -1. */
static int const_i64(const OqcGraph *g, int t, int64_t *v, int max) {
    const OqcTensor *tt = &g->tensors[t];
    if (!tt->is_const || tt->dtype != OQCF_INT64 || !tt->data)
        return -1;
    int64_t n = oqc_shape_numel(&tt->shape);
    if (n > max)
        return -1;
    memcpy(v, tt->data, (size_t)n * sizeof *v);
    return (int)n;
}

/* ----------------------------------------------------------------------- tests */

static void test_pytorch_style_flatten(void) {
    Cleaned c = clean("models/tiny/pytorch_style_flatten.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 4);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Shape), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Gather), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Unsqueeze), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Concat), 0);
    CU_ASSERT_EQUAL(g->nnodes, 3); /* Conv, Reshape, Gemm */
    int r = producer_of(g, "r");
    CU_ASSERT_FATAL(r >= 0);
    CU_ASSERT_EQUAL(g->nodes[r].op, OQC_OP_Reshape);
    int64_t v[4];
    CU_ASSERT_EQUAL_FATAL(const_i64(g, g->nodes[r].in[1], v, 4), 2);
    CU_ASSERT(v[0] == 1 && v[1] == -1);
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 4 "
                     "constant nodes; removed 0 dead nodes");
    CU_ASSERT_EQUAL(count_notes(&c), 0);
    /* The chain's constants are gone from the dump; the folded shape is listed. */
    CU_ASSERT_PTR_NULL(strstr(c.after, "%zero"));
    CU_ASSERT_PTR_NULL(strstr(c.after, "%uaxes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(c.after, "const  %cat i64[2] values=[1,-1]"));
    cleaned_free(&c);
}

static void test_pytorch_cnn(void) {
    Cleaned c = clean("models/tiny/cleanup_pytorch_cnn.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 9);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Identity), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Dropout), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Shape), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Gather), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Unsqueeze), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Concat), 0);
    CU_ASSERT_EQUAL(g->nnodes, 5); /* Conv, Relu, MaxPool, Reshape, Gemm */
    /* Weights are read straight from the initializers. */
    int conv = producer_of(g, "c"), gemm = producer_of(g, "y"), f = producer_of(g, "f");
    CU_ASSERT_FATAL(conv >= 0 && gemm >= 0 && f >= 0);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[conv].in[1]].name, "conv.weight");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[conv].in[2]].name, "conv.bias");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[gemm].in[1]].name, "fc.weight");
    CU_ASSERT_EQUAL(g->nodes[gemm].in[0], g->nodes[f].out[0]); /* Dropout bypassed */
    CU_ASSERT_EQUAL(g->nodes[producer_of(g, "r")].in[0], g->nodes[conv].out[0]);
    int64_t v[4];
    CU_ASSERT_EQUAL(const_i64(g, g->nodes[f].in[1], v, 4), 2);
    assert_stats(&c, "cleanup: removed 4 Identity, 1 Dropout, 0 no-op reshapes; folded 4 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

static void test_identity_feeding_outputs(void) {
    Cleaned c = clean("models/tiny/cleanup_identity_output.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 3);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Identity), 0);
    CU_ASSERT_EQUAL(g->nnodes, 3);
    /* Output names are stable: the producers write them directly. */
    CU_ASSERT_EQUAL_FATAL(g->noutputs, 3);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->outputs[0]].name, "y");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->outputs[1]].name, "z");
    CU_ASSERT_STRING_EQUAL(g->tensors[g->outputs[2]].name, "t_out");
    int relu = producer_of(g, "y"), sig = producer_of(g, "z"), tanh_ = producer_of(g, "t_out");
    CU_ASSERT_FATAL(relu >= 0 && sig >= 0 && tanh_ >= 0);
    CU_ASSERT_EQUAL(g->nodes[relu].op, OQC_OP_Relu);
    CU_ASSERT_EQUAL(g->nodes[tanh_].op, OQC_OP_Tanh);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[sig].in[0]].name, "y"); /* was r */
    CU_ASSERT_EQUAL(producer_of(g, "r"), -1);
    assert_stats(&c, "cleanup: removed 3 Identity, 0 Dropout, 0 no-op reshapes; folded 0 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

static void test_identity_kept(void) {
    /* identity_basic: graph input -> Identity -> graph output. */
    Cleaned c = clean("models/tiny/identity_basic.onnx");
    CU_ASSERT_EQUAL(c.rc, 0);
    CU_ASSERT_EQUAL(count_op(c.g, OQC_OP_Identity), 1);
    CU_ASSERT_STRING_EQUAL(c.before, c.after);
    CU_ASSERT_EQUAL(count_notes(&c), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "cleanup: 'Identity_0' (Identity) kept: its output "
                                         "'y' is a graph output and its input 'x' is a graph "
                                         "input"));
    cleaned_free(&c);
    /* An Identity of a graph input and one of another graph output. */
    c = clean("models/tiny/cleanup_identity_kept.onnx");
    CU_ASSERT_EQUAL(c.rc, 0);
    CU_ASSERT_EQUAL(count_op(c.g, OQC_OP_Identity), 2);
    CU_ASSERT_STRING_EQUAL(c.before, c.after);
    CU_ASSERT_EQUAL(count_notes(&c), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "'Identity_1' (Identity) kept: its output 'r_copy' "
                                         "is a graph output and its input 'r' is a graph "
                                         "output too"));
    CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "'Identity_2' (Identity) kept"));
    cleaned_free(&c);
}

static void test_identity_of_constant_as_output(void) {
    Cleaned c = clean("models/tiny/cleanup_identity_const_output.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 1);
    CU_ASSERT_EQUAL(g->nnodes, 1);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Relu), 1);
    CU_ASSERT_EQUAL_FATAL(g->noutputs, 2);
    const OqcTensor *w = &g->tensors[g->outputs[1]];
    CU_ASSERT_STRING_EQUAL(w->name, "w");
    CU_ASSERT(w->is_const && w->is_output && w->producer < 0);
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 1 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

static void test_dead_branch(void) {
    Cleaned c = clean("models/tiny/cleanup_dead_branch.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 3);
    CU_ASSERT_EQUAL(g->nnodes, 3);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Tanh), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Add), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Split), 1); /* one of its outputs is read */
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Sigmoid), 1);
    CU_ASSERT_EQUAL(producer_of(g, "s"), -1);
    CU_ASSERT_PTR_NULL(strstr(c.after, "%c1"));
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 0 "
                     "constant nodes; removed 3 dead nodes");
    cleaned_free(&c);
}

static void test_noop_reshapes(void) {
    Cleaned c = clean("models/tiny/cleanup_noop_reshape.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 4);
    CU_ASSERT_EQUAL(g->nnodes, 4);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Squeeze), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Flatten), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Reshape), 1); /* [2,3] -> [3,2] stays */
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Unsqueeze), 1);
    int relu = producer_of(g, "c"), sg = producer_of(g, "y2");
    CU_ASSERT_FATAL(relu >= 0 && sg >= 0);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->nodes[relu].in[0]].name, "x");
    CU_ASSERT_EQUAL(g->nodes[sg].op, OQC_OP_Sigmoid);
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 4 no-op reshapes; folded 0 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

static void test_constant_chain(void) {
    Cleaned c = clean("models/tiny/cleanup_const_chain.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 4);
    CU_ASSERT_EQUAL(g->nnodes, 3);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Cast), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Shape), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_ConstantOfShape), 0);
    int z = oqc_tensor_find(g, "z"), cf = oqc_tensor_find(g, "cf");
    CU_ASSERT_FATAL(z >= 0 && cf >= 0);
    CU_ASSERT(g->tensors[z].is_const && g->tensors[z].dtype == OQCF_FLOAT);
    CU_ASSERT_EQUAL(((const float *)g->tensors[z].data)[5], 0.5f);
    CU_ASSERT(g->tensors[cf].is_const && ((const float *)g->tensors[cf].data)[2] == 3.0f);
    int64_t v[2];
    CU_ASSERT_EQUAL(const_i64(g, g->nodes[producer_of(g, "y")].in[1], v, 2), 2);
    CU_ASSERT(v[0] == 3 && v[1] == 2);
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 4 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

/* Shape arithmetic as ONNX function bodies write it: Size of a shape (the rank), Neg of
 * an int64 axis, ConstantOfShape of a derived count; Size of the data (24) as a factor. */
static void test_shape_arith(void) {
    Cleaned c = clean("models/tiny/cleanup_shape_arith.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 10);
    CU_ASSERT_EQUAL(g->nnodes, 2);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Size), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Neg), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Reshape), 0);
    int nf = oqc_tensor_find(g, "nf");
    CU_ASSERT_FATAL(nf >= 0);
    CU_ASSERT(g->tensors[nf].is_const && g->tensors[nf].shape.rank == 0);
    CU_ASSERT_EQUAL(((const float *)g->tensors[nf].data)[0], 24.0f);
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 1 no-op reshapes; folded 9 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

static void test_dropout(void) {
    Cleaned c = clean("models/tiny/cleanup_dropout_mask.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 2);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Dropout), 1);
    CU_ASSERT_EQUAL(g->nnodes, 6);
    int drop = producer_of(g, "mask");
    CU_ASSERT_FATAL(drop >= 0);
    CU_ASSERT_EQUAL(g->nodes[drop].op, OQC_OP_Dropout);
    CU_ASSERT_EQUAL(count_notes(&c), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "cleanup: 'Dropout_0' (Dropout) kept: its mask "
                                         "output 'mask' is read by 1 node(s)"));
    assert_stats(&c, "cleanup: removed 0 Identity, 2 Dropout, 0 no-op reshapes; folded 0 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
    /* Graph input -> Dropout -> graph output: nothing can change. */
    static const char *const kept[] = {"models/tiny/dropout_basic.onnx",
                                       "models/tiny/dropout_ratio.onnx"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        c = clean(kept[i]);
        CU_ASSERT_EQUAL(c.rc, 0);
        CU_ASSERT_EQUAL(count_op(c.g, OQC_OP_Dropout), 1);
        CU_ASSERT_STRING_EQUAL(c.before, c.after);
        CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "(Dropout) kept: its output 'y' is a graph "
                                             "output and its input 'x' is a graph input"));
        cleaned_free(&c);
    }
}

static void test_fold_size_limit(void) {
    Cleaned c = clean("models/tiny/cleanup_fold_limit.onnx");
    const OqcGraph *g = c.g;
    CU_ASSERT_EQUAL(c.rc, 2);
    CU_ASSERT_EQUAL(g->nnodes, 3);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Shape), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_Mul), 0);
    CU_ASSERT_EQUAL(count_op(g, OQC_OP_ConstantOfShape), 1);
    CU_ASSERT_EQUAL(count_notes(&c), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.log, "cleanup: 'ConstantOfShape_2' (ConstantOfShape) not "
                                         "folded: it would make 16793600 constant elements "
                                         "(limit 16777216) out of 2"));
    assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 2 "
                     "constant nodes; removed 0 dead nodes");
    cleaned_free(&c);
}

/* Models where nothing applies come out byte-identical in the dump. */
static void test_nothing_applies(void) {
    static const char *const models[] = {
        "models/tiny/cleanup_nothing.onnx",        "models/tiny/conv_basic.onnx",
        "models/tiny/mixed_small_cnn.onnx",        "models/tiny/constantofshape_default.onnx",
        "models/tiny/constantofshape_value.onnx",  "models/tiny/cast_f2i.onnx",
        "models/tiny/cast_i2f.onnx",               "models/tiny/reshape_flat.onnx",
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        Cleaned c = clean(models[i]);
        CU_ASSERT_EQUAL(c.rc, 0);
        CU_ASSERT_STRING_EQUAL(c.before, c.after);
        CU_ASSERT_EQUAL(count_notes(&c), 0);
        assert_stats(&c, "cleanup: removed 0 Identity, 0 Dropout, 0 no-op reshapes; folded 0 "
                         "constant nodes; removed 0 dead nodes");
        if (c.rc != 0 || strcmp(c.before, c.after) != 0)
            fprintf(stderr, "\n%s changed:\n%s", models[i], c.log);
        cleaned_free(&c);
    }
}

/* Without -v the pass prints nothing. */
static void test_quiet_without_verbose(void) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare("models/tiny/cleanup_pytorch_cnn.onnx", NULL, 0, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *buf = NULL;
    size_t len = 0;
    d.log = open_memstream(&buf, &len);
    CU_ASSERT_EQUAL(pass_cleanup(g, &d), 9);
    fclose(d.log);
    CU_ASSERT_EQUAL(len, 0);
    free(buf);
    oqc_graph_free(g);
    oqc_diag_free(&d);
}

OQC_TEST_MAIN("pass-cleanup", OQC_TEST(test_pytorch_style_flatten), OQC_TEST(test_pytorch_cnn),
              OQC_TEST(test_identity_feeding_outputs), OQC_TEST(test_identity_kept),
              OQC_TEST(test_identity_of_constant_as_output), OQC_TEST(test_dead_branch),
              OQC_TEST(test_noop_reshapes), OQC_TEST(test_constant_chain), OQC_TEST(test_shape_arith),
              OQC_TEST(test_dropout), OQC_TEST(test_fold_size_limit),
              OQC_TEST(test_nothing_applies), OQC_TEST(test_quiet_without_verbose))
