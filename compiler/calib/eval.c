/* eval.c - `oqc eval`: the float graph and its INT8 lowering side by side over a data
 * set: top-1 agreement, accuracy of both against labels, output SQNR, and a per-layer
 * SQNR table that shows where the error comes from.
 *
 * The INT8 numbers are those of the INT8 graph run by the executor, whose INT8 nodes
 * call runtime/int8/oqci.h with the parameter structs the emitted C holds: the same bits as
 * the emitted code (tests/cli/compile_int8.sh checks it).
 *
 * SQNR = 10 log10(signal power / error power), error = INT8 (dequantized) - float.
 * Output SQNR is measured on centered outputs: the float output's per-element mean over
 * the evaluation inputs is subtracted from both first, so an input-independent part of
 * the logits cannot inflate it (any bias of the INT8 output stays in the error).  The
 * per-layer SQNR compares every INT8 tensor with the float tensor of the same name,
 * uncentered, summed over all samples. */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Per-tensor accumulators of the INT8 graph. */
typedef struct Layer {
    int ft;              /* the float graph's tensor of the same name, -1 if none */
    double sig, err;     /* sum f^2, sum (dequantized - f)^2 */
} Layer;

typedef struct EvalCtx {
    const OqcGraph *gf;  /* float graph */
    float **fval;        /* per float tensor: its values for the current sample */
    Layer *layers;       /* per INT8-graph tensor */
} EvalCtx;

static void hook_float(void *ctx, const OqcGraph *g, int t, const void *data) {
    EvalCtx *c = ctx;
    const OqcTensor *x = &g->tensors[t];
    if (!c->fval[t] || x->dtype != OQCF_FLOAT)
        return;
    memcpy(c->fval[t], data, (size_t)oqc_shape_numel(&x->shape) * sizeof(float));
}

/* An INT8-graph tensor the table covers: s8/u8, or accumulators (int32 with acc). */
static int is_qtensor(const OqcTensor *x) {
    return x->dtype == OQCF_INT8 || x->dtype == OQCF_UINT8 || (x->dtype == OQCF_INT32 && x->acc);
}

static void hook_int8(void *ctx, const OqcGraph *g, int t, const void *data) {
    EvalCtx *c = ctx;
    const OqcTensor *x = &g->tensors[t];
    Layer *l = &c->layers[t];
    if (l->ft < 0 || !is_qtensor(x))
        return;
    const float *f = c->fval[l->ft];
    int64_t n = oqc_shape_numel(&x->shape);
    const OqcAcc *a = x->acc;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (a)   /* the value its Dequantize gives: one float product */
            v = (float)((const int32_t *)data)[i] *
                a->scale[a->per_channel ? (i / a->inner) % a->channels : 0];
        else   /* a channel-scaled tensor: its channel's scale (NCHW) */
            v = (x->dtype == OQCF_INT8 ? ((const int8_t *)data)[i] : ((const uint8_t *)data)[i]) *
                (double)(x->quant.ch_scale
                             ? x->quant.ch_scale[(i / (x->shape.d[2] * x->shape.d[3])) %
                                                 x->quant.nch]
                             : x->quant.scale);
        double e = v - f[i];
        l->sig += (double)f[i] * f[i];
        l->err += e * e;
    }
}

static double sqnr_db(double sig, double err) {
    if (err == 0)
        return INFINITY;
    return 10.0 * log10(sig / err);
}

static int64_t argmax(const float *p, int64_t n) {
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (p[i] > p[b])
            b = i;
    return b;
}

/* The float graph's tensor an INT8-graph tensor mirrors (NAME or NAME.q8). */
static int mirror(const OqcGraph *gf, const char *name) {
    int t = oqc_tensor_find(gf, name);
    size_t n = strlen(name);
    if (t < 0 && n > 3 && !strcmp(name + n - 3, ".q8")) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(n - 3), name);
        t = oqc_tensor_find(gf, buf);
    }
    return t;
}

int oqc_labels_i64(const OqcValue *v, const char *path, OqcArena *a, const int64_t **lab,
                   int64_t *n, OqcDiag *d) {
    *n = oqc_shape_numel(&v->shape);
    if (v->dtype == OQCF_INT64) {
        *lab = v->data;
        return 0;
    }
    if (v->dtype != OQCF_INT32)
        return oqc_err(d, "%s: labels must be int64 or int32, not %s", path,
                       oqc_dtype_name(v->dtype));
    int64_t *l = oqc_arena_alloc(a, (size_t)*n * sizeof *l + 1);
    for (int64_t i = 0; i < *n; i++)
        l[i] = ((const int32_t *)v->data)[i];
    *lab = l;
    return 0;
}

void oqc_metrics(const float *yf, const float *yq, int64_t S, int64_t n, int64_t cls,
                 const int64_t *lab, OqcMetrics *m) {
    memset(m, 0, sizeof *m);
    m->agree = m->top1_f = m->top1_q = NAN;
    if (cls >= 2 && n % cls == 0) {
        int64_t cf = 0, cq = 0;
        m->rows = S * (n / cls);
        for (int64_t r = 0; r < m->rows; r++) {
            int64_t af = argmax(yf + r * cls, cls), aq = argmax(yq + r * cls, cls);
            m->nagree += af == aq;
            if (lab) {
                cf += af == lab[r];
                cq += aq == lab[r];
            }
        }
        m->agree = (double)m->nagree / (double)m->rows;
        if (lab) {
            m->top1_f = (double)cf / (double)m->rows;
            m->top1_q = (double)cq / (double)m->rows;
        }
    }
    double sig = 0, err = 0, rsig = 0;
    for (int64_t j = 0; j < n; j++) {
        double mean = 0;
        for (int64_t s = 0; s < S; s++)
            mean += yf[s * n + j];
        mean /= (double)S;
        for (int64_t s = 0; s < S; s++) {
            double f = yf[s * n + j], q = yq[s * n + j];
            sig += (f - mean) * (f - mean);
            rsig += f * f;
            err += (q - f) * (q - f);
        }
    }
    m->sqnr = sqnr_db(sig, err);
    m->sqnr_raw = sqnr_db(rsig, err);
}

void oqc_metrics_json(OqcJson *j, const OqcMetrics *m) {
    oqc_json_object(j);
    oqc_json_kint(j, "rows", m->rows);
    oqc_json_kint(j, "agree", m->nagree);
    oqc_json_knum(j, "agreement", m->agree);
    oqc_json_knum(j, "top1_fp32", m->top1_f);
    oqc_json_knum(j, "top1_int8", m->top1_q);
    oqc_json_knum(j, "sqnr_db", m->sqnr);
    oqc_json_knum(j, "sqnr_uncentered_db", m->sqnr_raw);
    oqc_json_end(j);
}

/* One evaluation: the two graphs, the options and the outputs of every sample. */
typedef struct Eval {
    OqcGraph *gf, *gq;           /* the float graph and its INT8 lowering */
    const OqcEvalOptions *o;     /* the options */
    int64_t S;                   /* samples evaluated */
    int no;                      /* outputs per sample */
    float **yf, **yq;            /* per output: its S float / INT8 values, sample-major */
    int64_t *osz;                /* per output: elements per sample */
    EvalCtx c;                   /* the executors' hooks' state (per-layer SQNR) */
    FILE *out;                   /* the report stream */
} Eval;

/* Pairs every INT8 tensor with the float tensor it mirrors (same shape, float) and
 * gives that float tensor a buffer for the hook to fill. */
static void pair_layers(Eval *v) {
    const OqcGraph *gf = v->gf, *gq = v->gq;
    OqcArena *a = gq->arena;
    v->c = (EvalCtx){.gf = gf};
    v->c.fval = oqc_arena_alloc(a, (size_t)(gf->ntensors + 1) * sizeof *v->c.fval);
    v->c.layers = oqc_arena_alloc(a, (size_t)(gq->ntensors + 1) * sizeof *v->c.layers);
    for (int t = 0; t < gq->ntensors; t++) {
        const OqcTensor *x = &gq->tensors[t];
        v->c.layers[t].ft = -1;
        if (!is_qtensor(x))
            continue;
        int ft = mirror(gf, x->name);
        if (ft < 0 || !oqc_shape_equal(&gf->tensors[ft].shape, &x->shape) ||
            gf->tensors[ft].dtype != OQCF_FLOAT)
            continue;
        v->c.layers[t].ft = ft;
        if (!v->c.fval[ft])
            v->c.fval[ft] = oqc_arena_alloc_raw(
                a, (size_t)oqc_shape_numel(&x->shape) * sizeof(float) + 1);
    }
}

/* The buffers of every output for S samples; an error when an output is not float. */
static int output_buffers(Eval *v, OqcDiag *d) {
    const OqcGraph *gf = v->gf;
    OqcArena *a = v->gq->arena;
    int no = v->no = gf->noutputs;
    v->yf = oqc_arena_alloc(a, (size_t)no * sizeof *v->yf);
    v->yq = oqc_arena_alloc(a, (size_t)no * sizeof *v->yq);
    v->osz = oqc_arena_alloc(a, (size_t)no * sizeof *v->osz);
    for (int k = 0; k < no; k++) {
        const OqcTensor *y = &gf->tensors[gf->outputs[k]];
        if (y->dtype != OQCF_FLOAT || v->gq->tensors[v->gq->outputs[k]].dtype != OQCF_FLOAT)
            return oqc_err(d, "%s: output '%s' is not float", gf->path, y->name);
        v->osz[k] = oqc_shape_numel(&y->shape);
        v->yf[k] = oqc_arena_alloc_raw(a, (size_t)(v->S * v->osz[k]) * sizeof(float) + 1);
        v->yq[k] = oqc_arena_alloc_raw(a, (size_t)(v->S * v->osz[k]) * sizeof(float) + 1);
    }
    return 0;
}

/* Runs both graphs (ef, eq) over every sample (tensor data, or images decoded one at a
 * time), keeping their outputs. */
static int run_both(Eval *v, OqcExec *ef, OqcExec *eq, OqcDiag *d) {
    const OqcEvalOptions *o = v->o;
    OqcArena *a = v->gq->arena;
    const OqcTensor *in = &v->gf->tensors[v->gf->inputs[0]];
    size_t sample_bytes = (size_t)oqc_shape_numel(&in->shape) * sizeof(float);
    void **of = oqc_arena_alloc(a, (size_t)v->no * sizeof *of);
    void **oq = oqc_arena_alloc(a, (size_t)v->no * sizeof *oq);
    float *img = o->images ? oqc_arena_alloc_raw(a, sample_bytes + 1) : NULL;
    float *fin = v->c.fval[v->gf->inputs[0]];
    for (int64_t s = 0; s < v->S; s++) {
        const void *x = img ? (const void *)img
                            : (const char *)o->data->data + (size_t)s * sample_bytes;
        if (img && oqc_image_load(o->images[s], o->pre, &in->shape, img, d) < 0)
            return -1;
        for (int k = 0; k < v->no; k++) {
            of[k] = v->yf[k] + s * v->osz[k];
            oq[k] = v->yq[k] + s * v->osz[k];
        }
        if (fin) /* graph inputs are no node's output */
            memcpy(fin, x, sample_bytes);
        if (oqc_exec_run(ef, &x, of, d) < 0 || oqc_exec_run(eq, &x, oq, d) < 0)
            return -1;
    }
    return 0;
}

/* Prints (and with --json records) each output's metrics: top-1 agreement and accuracy
 * (first output: classes cls, labels lab or NULL), SQNR. */
static void report_outputs(const Eval *v, int64_t cls, const int64_t *lab) {
    OqcJson *j = v->o->json;
    const OqcGraph *gf = v->gf;
    for (int k = 0; k < v->no; k++) {
        OqcMetrics m;
        oqc_metrics(v->yf[k], v->yq[k], v->S, v->osz[k], k == 0 ? cls : 1, k == 0 ? lab : NULL,
                    &m);
        if (j) { /* top-1 figures are those of the first output only, as printed */
            oqc_json_object(j);
            oqc_json_kstr(j, "name", gf->tensors[gf->outputs[k]].name);
            oqc_json_key(j, "metrics");
            oqc_metrics_json(j, &m);
            oqc_json_end(j);
        }
        if (k == 0 && m.rows) {
            fprintf(v->out, "top-1 agreement FP32 vs INT8: %.4f (%lld of %lld)\n", m.agree,
                    (long long)m.nagree, (long long)m.rows);
            if (lab)
                fprintf(v->out, "top-1 accuracy: FP32 %.4f, INT8 %.4f (%+.2f points)\n",
                        m.top1_f, m.top1_q, 100.0 * (m.top1_q - m.top1_f));
        }
        fprintf(v->out, "output '%s': SQNR %.2f dB centered (%.2f dB uncentered)\n",
                gf->tensors[gf->outputs[k]].name, m.sqnr, m.sqnr_raw);
        if (v->o->sqnr)
            v->o->sqnr[k] = m.sqnr;
    }
}

/* The per-layer SQNR table: every quantized node output with a float mirror. */
static void report_layers(const Eval *v) {
    OqcJson *j = v->o->json;
    const OqcGraph *gq = v->gq;
    fprintf(v->out, "\nper-layer SQNR (INT8 tensor vs FP32, all samples):\n");
    fprintf(v->out, "  %-40s %-18s %-4s %-12s %8s\n", "tensor", "producer", "type", "scale",
            "SQNR dB");
    for (int i = 0; i < gq->nnodes; i++) {
        const OqcNode *n = &gq->nodes[i];
        for (int k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0 || v->c.layers[t].ft < 0 || !n->q || n->q->kind == OQC_Q_VIEW)
                continue;
            const OqcTensor *x = &gq->tensors[t];
            const char *type = x->acc ? "s32" : x->dtype == OQCF_UINT8 ? "u8" : "s8";
            double scale = x->acc              ? x->acc->scale[0]
                           : x->quant.ch_scale ? x->quant.ch_scale[0]
                                               : x->quant.scale;
            double db = sqnr_db(v->c.layers[t].sig, v->c.layers[t].err);
            fprintf(v->out, "  %-40s %-18s %-4s %-12.6g %8.2f\n", x->name, n->op_type, type,
                    scale, db);
            if (j) {
                oqc_json_object(j);
                oqc_json_kstr(j, "tensor", x->name);
                oqc_json_kstr(j, "producer", n->op_type);
                oqc_json_kstr(j, "type", type);
                oqc_json_knum(j, "scale", scale);
                oqc_json_knum(j, "sqnr_db", db);
                oqc_json_end(j);
            }
        }
    }
}

/* --save-int8, --save-fp32: the first output as an [S, elements] float32 .npy file. */
static int save_outputs(const Eval *v, OqcDiag *d) {
    for (int w = 0; w < 2; w++) {
        const char *path = w ? v->o->save_fp32 : v->o->save_int8;
        if (!path)
            continue;
        OqcValue val = {.dtype = OQCF_FLOAT,
                        .shape = {.rank = 2, .d = {v->S, v->osz[0]}},
                        .data = w ? v->yf[0] : v->yq[0],
                        .nbytes = (size_t)(v->S * v->osz[0]) * sizeof(float)};
        if (oqc_npy_write(path, &val, d) < 0)
            return -1;
    }
    return 0;
}

/* The report: the settings, each output's metrics, the per-layer table, the saved
 * outputs (and the same as --json members). */
static int report(const Eval *v, const int64_t *lab, int64_t cls, OqcDiag *d) {
    const OqcEvalOptions *o = v->o;
    OqcJson *j = o->json;
    fprintf(v->out, "samples: %lld   INT8 requantization: %s   weights: %d bits\n",
            (long long)v->S, o->requant_name ? o->requant_name : "float",
            oqc_weight_bits(v->gq->qcfg));
    if (j) {
        oqc_json_kint(j, "samples", v->S);
        oqc_json_kstr(j, "requant", o->requant_name ? o->requant_name : "float");
        oqc_json_kint(j, "weight_bits", oqc_weight_bits(v->gq->qcfg));
        oqc_json_key(j, "outputs");
        oqc_json_array(j);
    }
    report_outputs(v, cls, lab);
    if (j) {
        oqc_json_end(j);
        oqc_json_key(j, "layers");
        oqc_json_array(j);
    }
    if (o->per_layer)
        report_layers(v);
    if (j)
        oqc_json_end(j);
    if (save_outputs(v, d) < 0)
        return -1;
    if (j) {
        oqc_json_kstr(j, "saved_int8", o->save_int8);
        oqc_json_kstr(j, "saved_fp32", o->save_fp32);
    }
    return 0;
}

int oqc_eval(OqcGraph *gf, OqcGraph *gq, const OqcEvalOptions *o, OqcDiag *d) {
    if (gf->ninputs != 1 || gq->ninputs != 1)
        return oqc_err(d, "%s: oqc eval supports models with one input (this one has %d)",
                       gf->path, gf->ninputs);
    Eval v = {.gf = gf, .gq = gq, .o = o, .S = o->nimages, .out = o->out ? o->out : stdout};
    const OqcTensor *in = &gf->tensors[gf->inputs[0]];
    if (!o->images && oqc_samples_of(o->data_path, o->data, &in->shape, &v.S, d) < 0)
        return -1;
    if (v.S == 0)
        return oqc_err(d, "%s: no samples", o->data_path);
    if (o->limit > 0 && o->limit < v.S)
        v.S = o->limit;
    OqcExec *ef = oqc_exec_new(gf, o->threads, d);
    OqcExec *eq = ef ? oqc_exec_new(gq, o->threads, d) : NULL;
    if (!eq) {
        oqc_exec_free(ef);
        return -1;
    }
    pair_layers(&v);
    oqc_exec_set_hook(ef, hook_float, &v.c);
    oqc_exec_set_hook(eq, hook_int8, &v.c);
    int rc = output_buffers(&v, d);
    if (rc == 0)
        rc = run_both(&v, ef, eq, d);
    oqc_exec_free(ef);
    oqc_exec_free(eq);
    if (rc < 0)
        return -1;
    const int64_t *lab = NULL;
    int64_t nlab = 0;
    if (o->labels && oqc_labels_i64(o->labels, o->labels_path, gq->arena, &lab, &nlab, d) < 0)
        return -1;
    /* Top-1 (first output, classes on its last axis). */
    const OqcShape *ys = &gf->tensors[gf->outputs[0]].shape;
    int64_t cls = ys->rank > 0 ? ys->d[ys->rank - 1] : 1;
    int64_t rows = v.osz[0] / (cls ? cls : 1);
    if (lab && nlab < v.S * rows)
        return oqc_err(d, "%s: %lld labels for %lld samples of %lld rows each", o->labels_path,
                       (long long)nlab, (long long)v.S, (long long)rows);
    return report(&v, lab, cls, d);
}
