/* test_quantize.c - pass "quantize" (passes/quantize.c) and the INT8 executor path.
 *
 * 1. Hand check: on models/tiny/conv_basic.onnx with chosen thresholds, every number
 *    of the kernel parameters is recomputed here from the contract (weight scales,
 *    rounded weights, padded depth, int32 bias, float and fixed multipliers, clamps).
 * 2. Coverage: every single-input float model in models/tiny plus the Fashion model is
 *    lowered with max thresholds measured here on 16 pseudo-random inputs (passed as an
 *    imported table, so the table path is exercised), run in INT8 and in float on the
 *    same inputs, in both requantization modes.  It must run, and its outputs must be
 *    close: SQNR >= 25 dB.  Why 25: with max thresholds a single op's input, weights and
 *    output are each rounded to 8 bits (noise about 48 dB below full scale each; our
 *    uniform [-1, 1] inputs keep signals within ~10 dB of full scale), so a correct
 *    lowering measures 30-45 dB, while a wrong layout, scale or clamp gives < 15 dB.
 *    Float and fixed requantization outputs are identical (fixed mode computes float
 *    mode's function with integers, runtime/int8/oqci.h).
 * 3. Accumulator outputs: which layers keep their int32 accumulators and the scales
 *    their Dequantize applies, on models where the answer is known by construction. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "backend.h"
#include "passes.h"

#define SAMPLES 16

static uint64_t rng = 88172645463325252ull;
static float urand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* Per-tensor amax over the float runs. */
typedef struct Amax {
    float *v;   /* per tensor id */
} Amax;

static void amax_hook(void *ctx, const OqcGraph *g, int t, const void *data) {
    Amax *a = ctx;
    const OqcTensor *x = &g->tensors[t];
    if (x->dtype != OQCF_FLOAT)
        return;
    int64_t n = oqc_shape_numel(&x->shape);
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(((const float *)data)[i]);
        if (v > a->v[t])
            a->v[t] = v;
    }
}

static OqcGraph *optimised(const char *path, OqcDiag *d) {
    OqcGraph *g = oqc_prepare(path, NULL, 0, 1, d);
    if (g && oqc_run_passes(g, NULL, NULL, NULL, NULL, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

/* Max thresholds of every float activation of g over the inputs (a table). */
static OqcCalibEntry *max_table(OqcGraph *g, const float *in, int *n) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcExec *e = oqc_exec_new(g, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    Amax a = {calloc((size_t)g->ntensors + 1, sizeof(float))};
    oqc_exec_set_hook(e, amax_hook, &a);
    const OqcTensor *x = &g->tensors[g->inputs[0]];
    int64_t isz = oqc_shape_numel(&x->shape);
    int no = g->noutputs;
    void **outs = calloc((size_t)(no > 0 ? no : 1), sizeof *outs);
    for (int k = 0; k < no; k++)
        outs[k] = malloc((size_t)oqc_shape_numel(&g->tensors[g->outputs[k]].shape) * 8 + 8);
    for (int s = 0; s < SAMPLES; s++) {
        const void *p = in + s * isz;
        amax_hook(&a, g, g->inputs[0], p);
        CU_ASSERT_EQUAL(oqc_exec_run(e, &p, outs, &d), 0);
    }
    for (int t = 0; t < g->ntensors; t++)   /* a concat buffer: the max of its views */
        if (g->tensors[t].view_base >= 0 && a.v[t] > a.v[g->tensors[t].view_base])
            a.v[g->tensors[t].view_base] = a.v[t];
    OqcCalibEntry *es = calloc((size_t)g->ntensors + 1, sizeof *es);
    *n = 0;
    for (int t = 0; t < g->ntensors; t++) {
        if (a.v[t] > 0 && isfinite(a.v[t])) {
            OqcCalibEntry *en = &es[(*n)++];
            en->name = g->tensors[t].name;
            en->amax = en->threshold = a.v[t];
            en->scale = a.v[t] / 127.0f;
            en->method = "max";
        }
    }
    for (int k = 0; k < no; k++)
        free(outs[k]);
    free(outs);
    free(a.v);
    oqc_exec_free(e);
    oqc_diag_free(&d);
    return es;
}

/* Elements per sample of g's float outputs together (the others are not compared). */
static int64_t float_out_size(const OqcGraph *g) {
    int64_t n = 0;
    for (int k = 0; k < g->noutputs; k++)
        if (g->tensors[g->outputs[k]].dtype == OQCF_FLOAT)
            n += oqc_shape_numel(&g->tensors[g->outputs[k]].shape);
    return n;
}

/* Runs g on the inputs; returns every float output of every sample: per sample, the
 * float outputs one after the other in graph order (*osz elements), stacked over the
 * samples.  All of them: INT8 nodes may feed any output, not only the first
 * (cleanup_dropout_mask's feed output 1). */
static float *run_all(OqcGraph *g, const float *in, int64_t *osz) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcExec *e = oqc_exec_new(g, 1, &d);
    if (!e) {
        printf("\n  %s: %s", g->path, d.buf);
        CU_FAIL("executor");
        oqc_diag_free(&d);
        return NULL;
    }
    int64_t isz = oqc_shape_numel(&g->tensors[g->inputs[0]].shape);
    int no = g->noutputs;
    *osz = float_out_size(g);
    float *y = malloc((size_t)(*osz * SAMPLES + 1) * sizeof *y);
    void **outs = calloc((size_t)(no > 0 ? no : 1), sizeof *outs);
    for (int k = 0; k < no; k++)
        outs[k] = malloc((size_t)oqc_shape_numel(&g->tensors[g->outputs[k]].shape) * 8 + 8);
    for (int s = 0; s < SAMPLES; s++) {
        const void *p = in + s * isz;
        if (oqc_exec_run(e, &p, outs, &d) < 0) {
            printf("\n  %s: %s", g->path, d.buf);
            CU_FAIL("run");
            break;
        }
        float *ys = y + s * *osz;
        for (int k = 0; k < no; k++) {
            const OqcTensor *t = &g->tensors[g->outputs[k]];
            if (t->dtype != OQCF_FLOAT)
                continue;
            memcpy(ys, outs[k], (size_t)oqc_shape_numel(&t->shape) * sizeof *ys);
            ys += oqc_shape_numel(&t->shape);
        }
    }
    for (int k = 0; k < no; k++)
        free(outs[k]);
    free(outs);
    oqc_exec_free(e);
    oqc_diag_free(&d);
    return y;
}

static int int8_nodes(const OqcGraph *g) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += g->nodes[i].q && g->nodes[i].q->kind != OQC_Q_QUANTIZE &&
             g->nodes[i].q->kind != OQC_Q_DEQUANTIZE;
    return n;
}

/* Lowers path with the table and returns its INT8 outputs (NULL if it cannot). */
static float *int8_outputs(const char *path, const OqcCalibEntry *es, int n, int requant,
                           const float *in, int64_t *osz, int *nint8, OqcGraph **keep) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = optimised(path, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    OqcCalibOptions co = {.table = es, .ntable = n};
    OqcQuantConfig cfg = {requant, NULL};
    if (oqc_lower_int8(g, NULL, 1, &co, &cfg, NULL, NULL, &d) < 0) {
        printf("\n  %s: %s", path, d.buf);
        CU_FAIL("lowering");
        oqc_graph_free(g);
        oqc_diag_free(&d);
        return NULL;
    }
    *nint8 = int8_nodes(g);
    float *y = run_all(g, in, osz);
    if (keep)
        *keep = g;
    else
        oqc_graph_free(g);
    oqc_diag_free(&d);
    return y;
}

/* ------------------------------------------------------------------ hand check */

/* The node of op `op` in g (the last one). */
static const OqcNode *node_of(const OqcGraph *g, OqcOp op) {
    const OqcNode *n = NULL;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == op)
            n = &g->nodes[i];
    return n;
}


static double round_ha(double x) { return x < 0 ? -floor(-x + 0.5) : floor(x + 0.5); }

static void test_conv_params_by_hand(void) {
    const char *path = "models/tiny/conv_basic.onnx";
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *f = optimised(path, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int conv = -1;
    for (int i = 0; i < f->nnodes; i++)
        if (f->nodes[i].op == OQC_OP_Conv)
            conv = i;
    CU_ASSERT_FATAL(conv >= 0);
    const OqcNode *n = &f->nodes[conv];
    const char *xname = f->tensors[n->in[0]].name, *yname = f->tensors[n->out[0]].name;
    const OqcTensor *W = &f->tensors[n->in[1]], *B = &f->tensors[n->in[2]];
    const int K = (int)W->shape.d[0];
    const int kdim = (int)(W->shape.d[1] * W->shape.d[2] * W->shape.d[3]);
    /* chosen thresholds: input 2.5 (s8), output 7 (s8: no activation) */
    OqcCalibEntry es[2] = {{.name = xname, .amax = 3, .threshold = 2.5f, .scale = 2.5f / 127},
                           {.name = yname, .amax = 9, .threshold = 7, .scale = 7.0f / 127}};
    /* mode 0: float requantization, 1: fixed, 2: float with 7-bit weights */
    for (int mode = 0; mode < 3; mode++) {
        OqcGraph *g = optimised(path, &d);
        OqcCalibOptions co = {.table = es, .ntable = 2};
        int wmax = mode == 2 ? 63 : 127;
        OqcQuantConfig cfg = {mode == 1 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, NULL,
                              mode == 2 ? 7 : 8};
        CU_ASSERT_EQUAL_FATAL(oqc_lower_int8(g, NULL, 1, &co, &cfg, NULL, NULL, &d), 0);
        const OqcNode *cn = node_of(g, OQC_OP_Conv);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cn);
        const OqcQNode *q = cn->q;
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT_EQUAL(q->kind, OQC_Q_CONV);
        CU_ASSERT_EQUAL(q->nconv, 1);
        const OqciConv *p = &q->conv[0];
        CU_ASSERT_EQUAL(p->kdim, kdim);
        CU_ASSERT_EQUAL(p->kpad, (kdim + 3) / 4 * 4);
        CU_ASSERT_EQUAL(p->in_type, OQCI_S8);
        /* it writes the graph output: it keeps its accumulators (test_accumulator_outputs)
         * and the s8 requantization it would apply is its OqcAcc's */
        CU_ASSERT_EQUAL(p->out_type, OQCI_S32);
        const OqcAcc *a = g->tensors[cn->out[0]].acc;
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->type, OQCI_S8);
        CU_ASSERT_EQUAL(a->lo, -127);
        CU_ASSERT_EQUAL(a->hi, 127);
        const OqciRequant *rq = &a->rq;
        const float *w = W->data, *b = B->data;
        float si = 2.5f / 127, so = 7.0f / 127;
        int bad = 0;
        for (int k = 0; k < K; k++) {
            float m = 0;
            for (int j = 0; j < kdim; j++)
                m = fabsf(w[k * kdim + j]) > m ? fabsf(w[k * kdim + j]) : m;
            float sw = m > 0 ? m / (float)wmax : 1.0f;
            for (int j = 0; j < p->kpad; j++) {
                int want = j < kdim ? (int)round_ha((double)(w[k * kdim + j] / sw)) : 0;
                bad += p->w[k * p->kpad + j] != want;
            }
            bad += p->bias[k] != (int32_t)round_ha((double)b[k] / ((double)si * sw));
            double M = (double)si * sw / so;
            bad += a->scale[k] != (float)((double)si * sw);
            if (mode != 1) {
                bad += rq->mult[k] != (float)M;
            } else { /* m in [2^30, 2^31), m 2^-shift exactly float mode's (float)M */
                bad += rq->m[k] < (1 << 30) || rq->shift[k] < 1 || rq->shift[k] > 62;
                bad += ldexp(rq->m[k], -rq->shift[k]) != (double)(float)M;
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* 7-bit weights always qualify for vpmaddubsw; 8-bit ones as the check says */
        CU_ASSERT_EQUAL(p->wpair16, mode == 2 ? 1 : oqci_conv_wpair16(p));
        oqc_graph_free(g);
    }
    oqc_graph_free(f);
    oqc_diag_free(&d);
}

/* ------------------------------------------------------------------ coverage */

static int single_float_input(const char *path) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare(path, NULL, 0, 1, &d);
    int ok = g && g->ninputs == 1 && g->noutputs >= 1 &&
             g->tensors[g->inputs[0]].dtype == OQCF_FLOAT &&
             g->tensors[g->outputs[0]].dtype == OQCF_FLOAT &&
             oqc_shape_numel(&g->tensors[g->inputs[0]].shape) <= (1 << 20);
    oqc_graph_free(g);
    oqc_diag_free(&d);
    return ok;
}

static double sqnr(const float *ref, const float *y, int64_t n) {
    double s = 0, e = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)ref[i] * ref[i];
        e += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
    }
    return e == 0 ? INFINITY : 10 * log10(s / e);
}

static void check_model(const char *path, int *models, int *lowered, double *worst) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *f = optimised(path, &d);
    if (!f) {
        oqc_diag_free(&d);
        return;
    }
    int64_t isz = oqc_shape_numel(&f->tensors[f->inputs[0]].shape), osz = 0, o1 = -1, o2 = -1;
    float *in = malloc((size_t)(isz * SAMPLES) * sizeof *in);
    for (int64_t i = 0; i < isz * SAMPLES; i++)
        in[i] = urand();
    int n = 0, n8a = 0, n8b = 0;
    OqcCalibEntry *es = max_table(f, in, &n);
    float *yf = run_all(f, in, &osz);
    OqcGraph *gq = NULL;
    float *ya = int8_outputs(path, es, n, OQCI_REQ_FLOAT, in, &o1, &n8a, &gq);
    float *yb = int8_outputs(path, es, n, OQCI_REQ_FIXED, in, &o2, &n8b, NULL);
    (*models)++;
    if (yf && ya && yb && o1 == osz && o2 == osz) {
        *lowered += n8a > 0;
        CU_ASSERT_EQUAL(n8a, n8b);
        double s1 = sqnr(yf, ya, osz * SAMPLES), s2 = sqnr(yf, yb, osz * SAMPLES);
        if (n8a > 0 && (s1 < 25 || s2 < 25)) {
            printf("\n  %s: SQNR %.1f dB (float), %.1f dB (fixed) < 25", path, s1, s2);
            CU_FAIL("INT8 output too far from float");
        }
        if (n8a > 0 && s1 < *worst)
            *worst = s1;
        /* float vs fixed: the same bits (fixed mode is float mode's arithmetic in
         * integers), so the same dequantized outputs */
        int64_t far = 0;
        for (int64_t i = 0; i < osz * SAMPLES; i++)
            far += memcmp(&ya[i], &yb[i], sizeof *ya) != 0;
        if (far && n8a > 0)
            printf("\n  %s: %lld outputs differ between float and fixed requantization", path,
                   (long long)far);
        CU_ASSERT(n8a == 0 || far == 0);
    } else {
        /* every model here runs in float and lowers: a missing run or outputs of
         * another size is a failure, not a model left out */
        CU_ASSERT(yf && ya && yb);
        CU_ASSERT_EQUAL(o1, osz);
        CU_ASSERT_EQUAL(o2, osz);
        printf("\n  %s: did not run, or INT8 outputs of %lld/%lld values for %lld", path,
               (long long)o1, (long long)o2, (long long)osz);
    }
    free(in);
    free(es);
    free(yf);
    free(ya);
    free(yb);
    oqc_graph_free(gq);
    oqc_graph_free(f);
    oqc_diag_free(&d);
}

static void test_models_close_to_float(void) {
    DIR *dir = opendir("models/tiny");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *names[512];
    int nn = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && nn < 512) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".onnx"))
            names[nn++] = strdup(de->d_name);
    }
    closedir(dir);
    int models = 0, lowered = 0;
    double worst = INFINITY;
    for (int i = 0; i < nn; i++) {
        char path[600];
        snprintf(path, sizeof path, "models/tiny/%s", names[i]);
        if (single_float_input(path))
            check_model(path, &models, &lowered, &worst);
        free(names[i]);
    }
    check_model("models/fashion/fashion_cnn.onnx", &models, &lowered, &worst);
    printf("\n  %d models, %d with INT8 nodes; worst SQNR %.1f dB ", models, lowered, worst);
    CU_ASSERT(lowered >= 30);
}

/* ------------------------------------------------------------------ accumulators */

/* A layer whose output only leaves the INT8 domain stores its int32 accumulators
 * (OQCI_S32) and its Dequantize scales them by s_in * s_w[k] (or s_in / window); the
 * s8/u8 requantization the layer had is kept for the integer API.  A layer some INT8
 * node reads keeps its 8-bit output, but for a conv only an Add reads (wide 2): the Add
 * reads its sums as input 0, at multipliers s_in * s_w[k] * 256 / s_y, clamped to
 * |acc| <= 2^28 / M (passes/quantize_eltwise.c). */
static void test_accumulator_outputs(void) {
    static const struct {
        const char *path;
        OqcOp op;
        int wide;
    } cases[] = {
        {"models/tiny/conv_basic.onnx", OQC_OP_Conv, 1},   /* conv -> graph output */
        {"models/tiny/mixed_small_cnn.onnx", OQC_OP_Gemm, 1},   /* classifier */
        {"models/tiny/globalavgpool_basic.onnx", OQC_OP_GlobalAveragePool, 1},
        {"models/tiny/pass_neg_relu_graph_output.onnx", OQC_OP_Conv, 0},   /* Relu reads it */
        {"models/tiny/mixed_small_cnn.onnx", OQC_OP_Conv, 2},   /* only the Add reads it */
        /* MatMul + Add + Clip(-1, 1.5) folded into a Gemm writing the graph output: the
         * Clip goes to the Dequantize (before, the logits of the devset's ImageNet
         * MobileNetV2 were rounded to 8 bits and its top-1 agreement fell 11 points) */
        {"models/tiny/matmul_add_clip_out.onnx", OQC_OP_Gemm, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        OqcDiag d;
        oqc_diag_init(&d);
        OqcGraph *f = optimised(cases[c].path, &d);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        int64_t isz = oqc_shape_numel(&f->tensors[f->inputs[0]].shape), osz;
        float *in = malloc((size_t)(isz * SAMPLES) * sizeof *in);
        for (int64_t i = 0; i < isz * SAMPLES; i++)
            in[i] = urand();
        int n = 0, n8 = 0;
        OqcCalibEntry *es = max_table(f, in, &n);
        OqcGraph *g = NULL;
        float *y = int8_outputs(cases[c].path, es, n, OQCI_REQ_FLOAT, in, &osz, &n8, &g);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        const OqcNode *nd = node_of(g, cases[c].op);
        CU_ASSERT_PTR_NOT_NULL_FATAL(nd);
        CU_ASSERT_PTR_NOT_NULL_FATAL(nd->q);
        const OqcTensor *yt = &g->tensors[nd->out[0]];
        const OqcQuant *qx = &g->tensors[nd->in[0]].quant;
        int32_t type = nd->q->kind == OQC_Q_CONV ? nd->q->conv[0].out_type : nd->q->pool.out_type;
        CU_ASSERT_EQUAL(type == OQCI_S32, cases[c].wide != 0);
        CU_ASSERT_EQUAL(yt->acc != NULL, cases[c].wide != 0);
        CU_ASSERT_EQUAL(yt->dtype == OQCF_INT32, cases[c].wide != 0);
        if (cases[c].wide && yt->acc) {
            const OqcAcc *a = yt->acc;
            CU_ASSERT_EQUAL(a->type, yt->quant.is_unsigned ? OQCI_U8 : OQCI_S8);
            if (nd->q->kind == OQC_Q_CONV) {
                const OqciConv *p = &nd->q->conv[0];
                CU_ASSERT_EQUAL(p->lo, INT32_MIN);
                CU_ASSERT_EQUAL(p->hi, INT32_MAX);
                CU_ASSERT_EQUAL(a->per_channel, 1);
                CU_ASSERT_EQUAL(a->channels, p->out_c);
                int bad = 0;
                for (int32_t k = 0; k < p->out_c; k++) {
                    double sw = nd->q->w_scale[0][k];
                    bad += a->scale[k] != (float)((double)qx->scale * sw);
                    bad += a->rq.mult[k] != (float)((double)qx->scale * sw / yt->quant.scale);
                }
                CU_ASSERT_EQUAL(bad, 0);
                if (nd->act.kind == OQCF_ACT_CLIP) {
                    /* the float Clip after the Dequantize; the 8-bit form (integer API)
                     * clamps to the Clip's codes; the outputs within the Clip's range,
                     * and finer than the 8-bit steps */
                    float s8 = yt->quant.scale;
                    CU_ASSERT(a->act.kind == OQCF_ACT_CLIP && a->act.p0 == -1.0f &&
                              a->act.p1 == 1.5f);
                    CU_ASSERT_EQUAL(a->lo, oqci_round_clamp(-1.0f / s8, -127, 127));
                    CU_ASSERT_EQUAL(a->hi, oqci_round_clamp(1.5f / s8, -127, 127));
                    int inside = 1, fine = 0;
                    for (int64_t j = 0; j < osz; j++) {
                        inside &= y[j] >= -1.0f && y[j] <= 1.5f;
                        fine += y[j] > -1.0f && y[j] < 1.5f &&
                                fabsf(y[j] / s8 - roundf(y[j] / s8)) > 0.01f;
                    }
                    CU_ASSERT(inside && fine > osz / 4);
                } else {
                    CU_ASSERT(a->act.kind == OQCF_ACT_NONE);
                    CU_ASSERT_EQUAL(a->lo, a->type == OQCI_U8 ? 0 : -127);
                    CU_ASSERT_EQUAL(a->hi, a->type == OQCI_U8 ? 255 : 127);
                }
            } else {
                const OqciPool *p = &nd->q->pool;
                CU_ASSERT_EQUAL(a->per_channel, 0);
                CU_ASSERT(a->scale[0] == (float)((double)qx->scale / (p->in_h * p->in_w)));
            }
            /* its Dequantize, or the Add (input 0), reads the accumulators */
            int dq = 0, add = 0;
            for (int i = 0; i < g->nnodes; i++) {
                const OqcNode *r = &g->nodes[i];
                if (!r->q || r->q->kind != OQC_Q_ADD || r->in[0] != nd->out[0])
                    continue;
                const OqciAdd *ap = &r->q->add;
                const OqcQuant *qa = &g->tensors[r->out[0]].quant;
                add = ap->in_type[0] == OQCI_S32 && ap->acc_channels == a->channels &&
                      ap->acc_inner == a->inner && ap->acc_lo && ap->acc_hi;
                for (int32_t k = 0; add && k < a->channels; k++) {
                    /* no activation: the sums are bounded only where |acc| M <= 2^28 */
                    double M = 256.0 * (double)qx->scale * nd->q->w_scale[0][k] / qa->scale;
                    add = ap->rq[0].mult[k] == (float)M &&
                          ap->acc_hi[k] == (int32_t)floor(268435456.0 / M) &&
                          ap->acc_lo[k] == -ap->acc_hi[k];
                }
            }
            CU_ASSERT_EQUAL(add, cases[c].wide == 2);
            for (int i = 0; i < g->nnodes; i++)
                if (g->nodes[i].q && g->nodes[i].q->kind == OQC_Q_DEQUANTIZE &&
                    g->nodes[i].in[0] == nd->out[0])
                    dq += g->nodes[i].q->in_type == OQCI_S32 && g->nodes[i].q->acc == a;
            CU_ASSERT_EQUAL(dq, cases[c].wide == 1);
        }
        free(in);
        free(es);
        free(y);
        oqc_graph_free(g);
        oqc_graph_free(f);
        oqc_diag_free(&d);
    }
}

/* ------------------------------------------------------------ channel scales */

/* Per-channel amax of one NCHW tensor (batch 1) over the float runs. */
typedef struct ChAmax {
    int t;          /* the tensor */
    float v[16];    /* per channel */
} ChAmax;

static void ch_amax_hook(void *ctx, const OqcGraph *g, int t, const void *data) {
    ChAmax *a = ctx;
    if (t != a->t)
        return;
    const OqcShape *s = &g->tensors[t].shape;
    int64_t inner = s->d[2] * s->d[3];
    for (int64_t c = 0; c < s->d[1]; c++)
        for (int64_t i = 0; i < inner; i++)
            a->v[c] = fmaxf(a->v[c], fabsf(((const float *)data)[c * inner + i]));
}

/* The dumps of g's channel-scaled tensor t: the text dump's braces give the count and
 * range of its scales; the XML dump (valid against docs/oqc-ir.rng) carries them all
 * and loads back with the same bits. */
static void check_channel_dumps(OqcGraph *g, int t) {
    const OqcQuant *q = &g->tensors[t].quant;
    float mn = q->ch_scale[0], mx = mn;
    for (int32_t c = 1; c < q->nch; c++)
        mn = fminf(mn, q->ch_scale[c]), mx = fmaxf(mx, q->ch_scale[c]);
    char *text = NULL, want[128];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_EQUAL(oqc_dump_text(g, f), 0);
    fclose(f);
    snprintf(want, sizeof want, "{u8 channel-scales=%d:%.9g..%.9g T=", (int)q->nch, mn, mx);
    CU_ASSERT(text && strstr(text, want));
    free(text);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char xml[4096], data[4200], cmd[9000];
    snprintf(xml, sizeof xml, "%s/oqc_test_chscale_%d.xml", tmp, (int)getpid());
    snprintf(data, sizeof data, "%s.data", xml);
    OqcDiag d;
    oqc_diag_init(&d);
    f = fopen(xml, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(oqc_dump_xml(g, f, data, strrchr(data, '/') + 1, &d), 0);
    fclose(f);
    snprintf(cmd, sizeof cmd, "xmllint --noout --relaxng docs/oqc-ir.rng '%s' 2>/dev/null", xml);
    CU_ASSERT_EQUAL(system(cmd), 0);
    OqcGraph *back = oqc_load_xml(xml, &d);
    if (!back)
        printf("\n  %s", d.buf ? d.buf : "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    int bt = oqc_tensor_find(back, g->tensors[t].name);
    CU_ASSERT_FATAL(bt >= 0);
    const OqcQuant *qb = &back->tensors[bt].quant;
    CU_ASSERT_EQUAL_FATAL(qb->nch, q->nch);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qb->ch_scale);
    CU_ASSERT_EQUAL(memcmp(qb->ch_scale, q->ch_scale, (size_t)q->nch * sizeof(float)), 0);
    oqc_graph_free(back);
    remove(xml);
    remove(data);
    oqc_diag_free(&d);
}

/* models/tiny/conv_then_depthwise.onnx: a 1x1 conv + Relu whose 6 output channels differ
 * in range by up to 200x, read by a depthwise 3x3 (docs/calibration.md, "Channel
 * scales").  Calibration gives the Relu output one threshold per channel, each its
 * channel's amax (measured here with an executor hook) clamped to [T/4, T]; the INT8
 * lowering runs that tensor at scale T_c/255 per channel: the producer's multipliers
 * are s_x * s_w1[k] / s_k, the depthwise conv's biases round(b[k] / (s_k * s_w2[k]))
 * and its accumulator scales s_k * s_w2[k]; the graph input and output keep one scale. */
static void test_channel_scales(void) {
    const char *path = "models/tiny/conv_then_depthwise.onnx";
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *f = optimised(path, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int c1 = -1, c2 = -1;
    for (int i = 0; i < f->nnodes; i++)
        if (f->nodes[i].op == OQC_OP_Conv)
            *(oqc_attr_int(&f->nodes[i], "group", 1) == 1 ? &c1 : &c2) = i;
    CU_ASSERT_FATAL(c1 >= 0 && c2 >= 0 && f->nodes[c2].in[0] == f->nodes[c1].out[0]);
    int r = f->nodes[c1].out[0];
    CU_ASSERT_EQUAL_FATAL(oqc_channel_scaled(f, r), 6);
    CU_ASSERT_EQUAL(oqc_channel_scaled(f, f->inputs[0]), 0);
    CU_ASSERT_EQUAL(oqc_channel_scaled(f, f->outputs[0]), 0);
    /* SAMPLES inputs uniform in [-1, 1) in a .npy; the per-channel amax of r */
    const int isz = 3 * 8 * 8;
    float *in = malloc((size_t)(SAMPLES * isz) * sizeof *in);
    for (int i = 0; i < SAMPLES * isz; i++)
        in[i] = urand();
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char npy[4096];
    snprintf(npy, sizeof npy, "%s/oqc_test_chscale_%d.npy", tmp, (int)getpid());
    OqcValue v = {.dtype = OQCF_FLOAT, .shape = {.rank = 4, .d = {SAMPLES, 3, 8, 8}},
                  .data = in, .nbytes = (size_t)(SAMPLES * isz) * sizeof *in};
    CU_ASSERT_EQUAL_FATAL(oqc_npy_write(npy, &v, &d), 0);
    ChAmax ca = {.t = r};
    OqcExec *e = oqc_exec_new(f, 1, &d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    oqc_exec_set_hook(e, ch_amax_hook, &ca);
    float out[6 * 64];
    for (int s = 0; s < SAMPLES; s++) {
        const void *p = in + s * isz;
        void *o = out;
        CU_ASSERT_EQUAL(oqc_exec_run(e, &p, &o, &d), 0);
    }
    oqc_exec_free(e);
    /* calibrate (the default method) and check r's channel thresholds */
    const char *data[1] = {npy};
    OqcCalibOptions co = {.data = data, .ndata = 1, .method = OQC_CALIB_PERCENTILE,
                          .param = OQC_CALIB_DEFAULT_PERCENTILE,
                          .method_name = OQC_CALIB_DEFAULT, .bins = 2048, .threads = 1};
    OqcCalibEntry *es = NULL;
    int n = 0;
    int64_t ns = 0;
    CU_ASSERT_EQUAL_FATAL(oqc_calibrate(f, NULL, 1, &co, &es, &n, &ns, &d), 0);
    remove(npy);
    const OqcCalibEntry *er = NULL;
    int others = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(es[i].name, f->tensors[r].name))
            er = &es[i];
        else
            others += es[i].nch != 0;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(er);
    CU_ASSERT_EQUAL(others, 0);
    CU_ASSERT_EQUAL_FATAL(er->nch, 6);
    float T = er->threshold, lo = 0.25f * T, spread_lo = T, spread_hi = 0;
    int bad = 0;
    for (int c = 0; c < 6; c++) {
        float want = ca.v[c] < lo ? lo : ca.v[c] > T ? T : ca.v[c];
        bad += er->ch_threshold[c] != want;
        spread_lo = fminf(spread_lo, er->ch_threshold[c]);
        spread_hi = fmaxf(spread_hi, er->ch_threshold[c]);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(spread_hi > 3 * spread_lo);   /* the model's channels do differ */
    /* lowered with that table (the table path), both requantization modes */
    float *yf = run_all(f, in, &(int64_t){0});
    double q_db[2] = {0, 0};
    for (int mode = 0; mode < 3; mode++) {
        OqcGraph *g = optimised(path, &d);
        OqcCalibOptions ct = {.table = es, .ntable = n};
        OqcQuantConfig cfg = {mode == 1 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, NULL, 8, mode == 2};
        CU_ASSERT_EQUAL_FATAL(oqc_lower_int8(g, NULL, 1, &ct, &cfg, NULL, NULL, &d), 0);
        int rt = oqc_tensor_find(g, f->tensors[r].name);
        CU_ASSERT_FATAL(rt >= 0);
        const OqcQuant *qr = &g->tensors[rt].quant;
        const OqcNode *n1 = NULL, *n2 = NULL;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == OQC_OP_Conv)
                *(g->nodes[i].out[0] == rt ? &n1 : &n2) = &g->nodes[i];
        CU_ASSERT_FATAL(n1 && n2 && n1->q && n2->q);
        if (mode == 2) {   /* --act-scales tensor */
            CU_ASSERT_PTR_NULL(qr->ch_scale);
        } else {
            CU_ASSERT_PTR_NOT_NULL_FATAL(qr->ch_scale);
            const OqcQuant *qx = &g->tensors[n1->in[0]].quant;
            const float *b2 = f->tensors[f->nodes[c2].in[2]].data;
            const OqcAcc *acc = g->tensors[n2->out[0]].acc;
            CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
            bad = 0;
            for (int k = 0; k < 6; k++) {
                float sk = er->ch_threshold[k] / 255.0f, sw1 = n1->q->w_scale[0][k],
                      sw2 = n2->q->w_scale[0][k];
                bad += qr->ch_scale[k] != sk;
                double M = (double)qx->scale * sw1 / sk;
                if (mode == 0)
                    bad += n1->q->conv[0].rq.mult[k] != (float)M;
                else   /* exactly float mode's (float)M */
                    bad += ldexp(n1->q->conv[0].rq.m[k], -n1->q->conv[0].rq.shift[k]) !=
                           (double)(float)M;
                bad += n2->q->conv[0].bias[k] != (int32_t)round_ha((double)b2[k] /
                                                                   ((double)sk * sw2));
                bad += acc->scale[k] != (float)((double)sk * sw2);
            }
            CU_ASSERT_EQUAL(bad, 0);
            CU_ASSERT_EQUAL(n1->q->conv[0].lo, 0);
            CU_ASSERT_EQUAL(n1->q->conv[0].hi, 255);
            if (mode == 0)
                check_channel_dumps(g, rt);
        }
        int64_t osz;
        float *yq = run_all(g, in, &osz);
        if (mode != 1)
            q_db[mode == 2] = sqnr(yf, yq, osz * SAMPLES);
        free(yq);
        oqc_graph_free(g);
    }
    /* Measured: 43.6 dB with channel scales, 39.3 dB with one scale (the narrow
     * channels get a few codes each); bound: channel scales at least 2 dB ahead */
    CU_ASSERT(q_db[0] >= q_db[1] + 2.0);
    printf("\n  channel scales %.1f dB, one scale %.1f dB ", q_db[0], q_db[1]);
    free(yf);
    free(in);
    oqc_graph_free(f);
    oqc_diag_free(&d);
}

OQC_TEST_MAIN("quantize", OQC_TEST(test_conv_params_by_hand),
              OQC_TEST(test_models_close_to_float), OQC_TEST(test_accumulator_outputs),
              OQC_TEST(test_channel_scales))
