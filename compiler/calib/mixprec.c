/* mixprec.c - which layers hurt INT8 accuracy (sensitivity analysis, `oqc eval
 * --sensitivity`) and automatic mixed precision (`--min-sqnr`, `--max-drop`): keep the
 * fewest layers in float until a target holds on validation data.
 * User guide: docs/calibration.md, "Sensitivity and mixed precision".
 *
 * A "layer" is a node of the optimised graph that the quantize pass runs in INT8 as a
 * compute kernel (Conv/Gemm/MatMul with its fused activation, Add, pooling); names are
 * those --fp32-nodes takes.  Every measurement builds the INT8 lowering with some
 * layers kept float (the caller's builder: the same thresholds each time, so only the
 * float set differs) and runs it over the validation samples against the float graph's
 * outputs, computed once.  A target counts as met when it holds on all validation
 * samples and on each half of them (meets_split).
 *
 * The search ranks layers by the harm each does alone (output SQNR when only that
 * layer is INT8), then finds the smallest k such that keeping the k most harmful
 * layers float meets the target, by bisection on k: keeping more layers float can
 * only remove quantization noise, so the target is taken as monotone in k (a k that
 * meets it is verified, never assumed). */
#include "calib.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The float reference and the samples every measurement runs. */
typedef struct OqcMix {
    OqcGraph *gf;
    OqcInt8Builder build;
    void *ctx;
    const OqcMixOptions *o;
    int64_t S;            /* samples used */
    int64_t osz, cls;     /* first output's elements, classes */
    float *yf;            /* float outputs [S][osz] */
    float *yq;            /* scratch for INT8 outputs */
    const int64_t *lab;   /* labels or NULL */
    int nlayers;
    char **names;         /* layer names (malloc'd) */
    const char **ops;     /* their op types (malloc'd copies in names' block) */
} Mix;

/* One share of run_over: samples [k0, k1) on an executor of its own (one thread; made
 * before the threads start: making one prepares the graph's kernels). */
typedef struct Share {
    const Mix *m;
    OqcGraph *g;
    OqcExec *e;
    int64_t k0, k1;
    float *y;
    int rc;
    OqcDiag diag;
} Share;

static void *run_share(void *arg) {
    Share *w = arg;
    const Mix *m = w->m;
    OqcGraph *g = w->g;
    OqcExec *e = w->e;
    const OqcTensor *in = &g->tensors[g->inputs[0]];
    size_t sample_bytes = (size_t)oqc_shape_numel(&in->shape) * sizeof(float);
    int no = g->noutputs;
    void **outs = calloc((size_t)no, sizeof *outs);
    float **extra = calloc((size_t)no, sizeof *extra);
    if (!outs || !extra)
        w->rc = oqc_err(&w->diag, "out of memory");
    for (int k = 1; w->rc == 0 && k < no; k++) {
        extra[k] = malloc((size_t)oqc_shape_numel(&g->tensors[g->outputs[k]].shape) *
                              sizeof(float) + 1);
        if (!extra[k])
            w->rc = oqc_err(&w->diag, "out of memory");
        outs[k] = extra[k];
    }
    for (int64_t s = w->k0; w->rc == 0 && s < w->k1; s++) {
        const void *x = (const char *)m->o->data->data + (size_t)s * sample_bytes;
        outs[0] = w->y + s * m->osz;
        w->rc = oqc_exec_run(e, &x, outs, &w->diag);
    }
    for (int k = 1; extra && k < no; k++)
        free(extra[k]);
    free(extra);
    free(outs);
    return NULL;
}

#define MAX_SHARES 16

/* Runs graph g over the first S samples, first output into y: the samples split into
 * contiguous shares, one per thread (each sample's outputs do not depend on the split,
 * and whole samples per thread beat splitting each layer of a small model). */
static int run_over(const Mix *m, OqcGraph *g, int64_t S, float *y, OqcDiag *d) {
    int nt = m->o->threads > 1 ? m->o->threads : 1;
    if (nt > MAX_SHARES)
        nt = MAX_SHARES;
    if (nt > S)
        nt = (int)S;
    Share w[MAX_SHARES];
    pthread_t tid[MAX_SHARES];
    int started[MAX_SHARES] = {0};
    for (int i = 0; i < nt; i++) {
        w[i] = (Share){.m = m, .g = g, .k0 = S * i / nt, .k1 = S * (i + 1) / nt, .y = y};
        oqc_diag_init(&w[i].diag);
        w[i].diag.verbose = 0;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < nt; i++)
        if (!(w[i].e = oqc_exec_new(g, 1, d)))
            rc = -1;
    for (int i = 0; rc < 0 && i < nt; i++) {
        oqc_exec_free(w[i].e);
        oqc_diag_free(&w[i].diag);
    }
    if (rc < 0)
        return -1;
    for (int i = 1; i < nt; i++)
        started[i] = pthread_create(&tid[i], NULL, run_share, &w[i]) == 0;
    run_share(&w[0]);
    for (int i = 1; i < nt; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_share(&w[i]);   /* no thread: run its share here */
    }
    for (int i = 0; i < nt; i++) {
        if (rc == 0 && w[i].rc < 0)
            rc = oqc_err_forward(d, &w[i].diag, "a validation run failed");
        oqc_exec_free(w[i].e);
        oqc_diag_free(&w[i].diag);
    }
    return rc;
}

/* The lowering with the float set `fp32`, built without -v output: the quantize
 * pass's lines once per build would drown the report. */
static OqcGraph *build_quiet(const Mix *m, const char *fp32, OqcDiag *d) {
    int verbose = d->verbose;
    d->verbose = 0;
    OqcGraph *g = m->build(m->ctx, fp32, d);
    d->verbose = verbose;
    return g;
}

/* Builds the lowering with the float set `fp32` and measures it on S samples. */
static int measure(Mix *m, const char *fp32, int64_t S, OqcMetrics *r, OqcDiag *d) {
    OqcGraph *g = build_quiet(m, fp32, d);
    if (!g)
        return -1;
    int rc = run_over(m, g, S, m->yq, d);
    oqc_graph_free(g);
    if (rc == 0)
        oqc_metrics(m->yf, m->yq, S, m->osz, m->cls, m->lab, r);
    return rc;
}

static int is_layer(const OqcNode *n) {
    if (!n->q)
        return 0;
    switch (n->q->kind) {
    case OQC_Q_CONV: case OQC_Q_DECONV: case OQC_Q_ADD: case OQC_Q_AVGPOOL: case OQC_Q_MAXPOOL:
    /* the modern networks' element-wise arithmetic: each rounds its output to 8 bits */
    case OQC_Q_MUL: case OQC_Q_LUT: case OQC_Q_LAYERNORM:
        return 1;
    default:   /* views, moves and clamps of codes (Concat and Resize at most requantize
                * them once), and the Quantize/Dequantize at the float boundaries */
        return 0;
    }
}

/* The float outputs over the samples. */
static int mix_init(Mix *m, OqcGraph *gf, OqcInt8Builder build, void *ctx,
                    const OqcMixOptions *o, OqcDiag *d) {
    memset(m, 0, sizeof *m);
    m->gf = gf;
    m->build = build;
    m->ctx = ctx;
    m->o = o;
    if (gf->ninputs != 1)
        return oqc_err(d, "%s: mixed precision supports models with one input (this one has "
                          "%d)", gf->path, gf->ninputs);
    const OqcTensor *in = &gf->tensors[gf->inputs[0]];
    if (oqc_samples_of(o->data_path, o->data, &in->shape, &m->S, d) < 0)
        return -1;
    if (o->data->dtype != OQCF_FLOAT)
        return oqc_err(d, "%s: validation data must be float32, not %s", o->data_path,
                       oqc_dtype_name(o->data->dtype));
    if (o->limit > 0 && o->limit < m->S)
        m->S = o->limit;
    if (m->S == 0)
        return oqc_err(d, "%s: no samples", o->data_path);
    const OqcTensor *y = &gf->tensors[gf->outputs[0]];
    if (y->dtype != OQCF_FLOAT)
        return oqc_err(d, "%s: output '%s' is not float", gf->path, y->name);
    m->osz = oqc_shape_numel(&y->shape);
    m->cls = y->shape.rank > 0 ? y->shape.d[y->shape.rank - 1] : 1;
    if (o->labels) {
        int64_t nlab;
        if (oqc_labels_i64(o->labels, o->labels_path, gf->arena, &m->lab, &nlab, d) < 0)
            return -1;
        int64_t rows = m->cls >= 2 ? m->S * (m->osz / m->cls) : 0;
        if (rows == 0 || nlab < rows)
            return oqc_err(d, "%s: %lld labels for %lld samples of %lld rows each",
                           o->labels_path, (long long)nlab, (long long)m->S,
                           (long long)(m->cls >= 2 ? m->osz / m->cls : 0));
    }
    m->yf = malloc((size_t)(m->S * m->osz) * sizeof(float) + 1);
    m->yq = malloc((size_t)(m->S * m->osz) * sizeof(float) + 1);
    if (!m->yf || !m->yq)
        return oqc_err(d, "out of memory for %lld outputs", (long long)(m->S * m->osz));
    return run_over(m, gf, m->S, m->yf, d);
}

/* The layer list (names, ops, nlayers) from a full INT8 build: what sensitivity analysis
 * and the mixed-precision search choose among (oqc_mix_measure needs none). */
static int mix_layers(Mix *m, OqcDiag *d) {
    OqcGraph *g = build_quiet(m, m->o->fp32_nodes, d);
    if (!g)
        return -1;
    m->names = calloc((size_t)g->nnodes + 1, sizeof *m->names);
    m->ops = calloc((size_t)g->nnodes + 1, sizeof *m->ops);
    for (int i = 0; m->names && m->ops && i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (!is_layer(n))
            continue;
        size_t ln = strlen(n->name), lo = strlen(n->op_type);
        char *s = malloc(ln + lo + 2);
        if (!s)
            break;
        memcpy(s, n->name, ln + 1);
        memcpy(s + ln + 1, n->op_type, lo + 1);
        m->names[m->nlayers] = s;
        m->ops[m->nlayers++] = s + ln + 1;
    }
    oqc_graph_free(g);
    if (!m->names || !m->ops)
        return oqc_err(d, "out of memory");
    return 0;
}

static void mix_free(Mix *m) {
    for (int i = 0; m->names && i < m->nlayers; i++)
        free(m->names[i]);
    free(m->names);
    free(m->ops);
    free(m->yf);
    free(m->yq);
}

/* A comma list: base (may be NULL) plus the layers whose index is selected by `pick`
 * (pick[i] != 0), or, with invert, every layer not picked.  malloc'd. */
static char *layer_list(const Mix *m, const char *base, const unsigned char *pick, int invert) {
    size_t len = base ? strlen(base) + 1 : 1;
    for (int i = 0; i < m->nlayers; i++)
        len += strlen(m->names[i]) + 1;
    char *s = malloc(len + 1), *p = s;
    if (!s)
        return NULL;
    *p = 0;
    if (base && *base)
        p += sprintf(p, "%s", base);
    for (int i = 0; i < m->nlayers; i++)
        if ((pick[i] != 0) != (invert != 0))
            p += sprintf(p, "%s%s", p == s ? "" : ",", m->names[i]);
    return s;
}

/* Whether r meets the target of o (with the float top-1 of the same samples). */
static int meets(const OqcMixOptions *o, const OqcMetrics *r) {
    if (!isnan(o->min_sqnr) && !(r->sqnr >= o->min_sqnr))
        return 0;
    if (!isnan(o->max_drop) && !(100.0 * (r->top1_f - r->top1_q) <= o->max_drop + 1e-9))
        return 0;
    return 1;
}

/* Whether the last measurement (m->yq over S samples, whole figures r) meets the
 * target on all S samples and on each half of them: a choice that meets it on two
 * independent halves is far less likely to have met it by the luck of these samples,
 * so it holds on other data of the same kind (the search's generalization margin). */
static int meets_split(const Mix *m, int64_t S, const OqcMetrics *r) {
    if (!meets(m->o, r))
        return 0;
    int64_t h = S / 2;
    if (h < 1)
        return 1;
    int64_t rows = m->cls >= 2 ? m->osz / m->cls : 0;
    OqcMetrics a, b;
    oqc_metrics(m->yf, m->yq, h, m->osz, m->cls, m->lab, &a);
    oqc_metrics(m->yf + h * m->osz, m->yq + h * m->osz, S - h, m->osz, m->cls,
                m->lab ? m->lab + h * rows : NULL, &b);
    return meets(m->o, &a) && meets(m->o, &b);
}

/* One measurement per layer: only it INT8 (isolated harm) and, when both is set, only it
 * float.  only_q/only_f receive nlayers results each. */
static int per_layer(Mix *m, int64_t S, OqcMetrics *only_q, OqcMetrics *only_f, OqcDiag *d) {
    unsigned char *pick = calloc((size_t)m->nlayers + 1, 1);
    int rc = pick ? 0 : oqc_err(d, "out of memory");
    for (int i = 0; rc == 0 && i < m->nlayers; i++) {
        pick[i] = 1;
        char *all_but = layer_list(m, m->o->fp32_nodes, pick, 1);
        rc = all_but ? measure(m, all_but, S, &only_q[i], d) : oqc_err(d, "out of memory");
        free(all_but);
        if (rc == 0 && only_f) {
            char *just = layer_list(m, m->o->fp32_nodes, pick, 0);
            rc = just ? measure(m, just, S, &only_f[i], d) : oqc_err(d, "out of memory");
            free(just);
        }
        pick[i] = 0;
        if (m->o->progress)
            fprintf(stderr, "\r  sensitivity: %d/%d layers", i + 1, m->nlayers);
    }
    if (m->o->progress)
        fprintf(stderr, "\n");
    free(pick);
    return rc;
}

static const OqcMetrics *sort_key;
static int by_harm(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    double x = sort_key[i].sqnr, y = sort_key[j].sqnr;
    if (x < y)
        return -1;
    if (x > y)
        return 1;
    return i - j;   /* ties keep graph order */
}

/* Layer indices sorted from most to least harmful (lowest isolated output SQNR first). */
static int *rank_layers(const Mix *m, const OqcMetrics *only_q) {
    int *ord = malloc((size_t)m->nlayers * sizeof *ord + 1);
    if (!ord)
        return NULL;
    for (int i = 0; i < m->nlayers; i++)
        ord[i] = i;
    sort_key = only_q;
    qsort(ord, (size_t)m->nlayers, sizeof *ord, by_harm);
    return ord;
}

static void print_metrics(FILE *out, const OqcMetrics *r, int labels) {
    fprintf(out, " %8.2f %8.2f", r->sqnr, 100.0 * r->agree);
    if (labels)
        fprintf(out, " %+8.2f", 100.0 * (r->top1_q - r->top1_f));
}

void oqc_sensitivity_print(FILE *out, const OqcSensitivity *s) {
    int lab = s->labels;
    fprintf(out, "\nsensitivity over %lld samples (%d INT8 layers); every layer INT8: "
                 "SQNR %.2f dB, agreement %.2f%%", (long long)s->samples, s->nrows, s->all.sqnr,
            100.0 * s->all.agree);
    if (lab)
        fprintf(out, ", top-1 %+.2f points", 100.0 * (s->all.top1_q - s->all.top1_f));
    fprintf(out, "\n  most harmful first: 'only INT8' = this layer alone in INT8, the "
                 "rest float;\n  'only FP32' = this layer alone kept float, the rest "
                 "INT8 (SQNR dB, agreement %%%s)\n", lab ? ", top-1 change in points" : "");
    fprintf(out, "  %-32s %-18s %8s %8s%s %8s %8s%s\n", "layer", "op", "onlyINT8", "agree",
            lab ? "    top-1" : "", "onlyFP32", "agree", lab ? "    top-1" : "");
    for (int r = 0; r < s->nrows; r++) {
        fprintf(out, "  %-32s %-18s", s->rows[r].layer, s->rows[r].op);
        print_metrics(out, &s->rows[r].only_q, lab);
        print_metrics(out, &s->rows[r].only_f, lab);
        fprintf(out, "\n");
    }
}

void oqc_sensitivity_free(OqcSensitivity *s) {
    for (int r = 0; s->rows && r < s->nrows; r++) {
        free(s->rows[r].layer);
        free(s->rows[r].op);
    }
    free(s->rows);
    memset(s, 0, sizeof *s);
}

int oqc_sensitivity(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                    OqcSensitivity *res, OqcDiag *d) {
    memset(res, 0, sizeof *res);
    Mix m;
    int rc = mix_init(&m, gf, build, ctx, o, d);
    if (rc == 0)
        rc = mix_layers(&m, d);
    OqcMetrics *only_q = NULL, *only_f = NULL;
    int *ord = NULL;
    if (rc == 0)
        rc = measure(&m, o->fp32_nodes, m.S, &res->all, d);
    if (rc == 0) {
        only_q = calloc((size_t)m.nlayers + 1, sizeof *only_q);
        only_f = calloc((size_t)m.nlayers + 1, sizeof *only_f);
        rc = only_q && only_f ? per_layer(&m, m.S, only_q, only_f, d)
                              : oqc_err(d, "out of memory");
    }
    if (rc == 0 && !(ord = rank_layers(&m, only_q)))
        rc = oqc_err(d, "out of memory");
    if (rc == 0 && !(res->rows = calloc((size_t)m.nlayers + 1, sizeof *res->rows)))
        rc = oqc_err(d, "out of memory");
    for (int r = 0; rc == 0 && r < m.nlayers; r++) {
        OqcSensRow *w = &res->rows[r];
        w->layer = strdup(m.names[ord[r]]);
        w->op = strdup(m.ops[ord[r]]);
        w->only_q = only_q[ord[r]];
        w->only_f = only_f[ord[r]];
        res->nrows++;
        if (!w->layer || !w->op)
            rc = oqc_err(d, "out of memory");
    }
    res->samples = m.S;
    res->labels = m.lab != NULL;
    if (rc < 0)
        oqc_sensitivity_free(res);
    free(ord);
    free(only_q);
    free(only_f);
    mix_free(&m);
    return rc;
}

int oqc_mixprec_search(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                       char **fp32_nodes, OqcDiag *d) {
    *fp32_nodes = NULL;
    if (isnan(o->min_sqnr) && isnan(o->max_drop))
        return oqc_err(d, "mixed precision needs a target: --min-sqnr DB or --max-drop POINTS");
    if (!isnan(o->max_drop) && !o->labels)
        return oqc_err(d, "--max-drop needs labels for the validation data (--val-labels)");
    Mix m;
    int rc = mix_init(&m, gf, build, ctx, o, d);
    if (rc == 0)
        rc = mix_layers(&m, d);
    FILE *out = o->quiet ? NULL : o->out ? o->out : stdout;
    OqcMetrics all, *only_q = NULL, best;
    int *ord = NULL, k = 0;
    unsigned char *pick = NULL;
    if (rc == 0)
        rc = measure(&m, o->fp32_nodes, m.S, &all, d);
    if (rc == 0 && meets_split(&m, m.S, &all)) {
        if (out)
            fprintf(out, "mixed precision: every layer INT8 meets the target on %lld validation "
                     "samples (SQNR %.2f dB)\n", (long long)m.S, all.sqnr);
        *fp32_nodes = strdup(o->fp32_nodes ? o->fp32_nodes : "");
        rc = *fp32_nodes ? 0 : oqc_err(d, "out of memory");
        mix_free(&m);
        return rc;
    }
    /* Ranking on up to 32 samples: the isolated harm of a layer is a large, steady
     * signal (whole-network SQNR over 32 x classes outputs), and these runs are mostly
     * float, the slow part of the search. */
    int64_t Srank = m.S < 32 ? m.S : 32;
    if (rc == 0) {
        only_q = calloc((size_t)m.nlayers + 1, sizeof *only_q);
        pick = calloc((size_t)m.nlayers + 1, 1);
        rc = only_q && pick ? per_layer(&m, Srank, only_q, NULL, d)
                            : oqc_err(d, "out of memory");
    }
    if (rc == 0 && !(ord = rank_layers(&m, only_q)))
        rc = oqc_err(d, "out of memory");
    /* Bisection for the smallest k; hi always meets (all float meets any target). */
    int lo = 0, hi = m.nlayers;
    best = all;
    while (rc == 0 && hi - lo > 1) {
        int mid = (lo + hi) / 2;
        memset(pick, 0, (size_t)m.nlayers);
        for (int r = 0; r < mid; r++)
            pick[ord[r]] = 1;
        char *list = layer_list(&m, o->fp32_nodes, pick, 0);
        OqcMetrics r;
        rc = list ? measure(&m, list, m.S, &r, d) : oqc_err(d, "out of memory");
        free(list);
        if (rc == 0 && meets_split(&m, m.S, &r)) {
            hi = mid;
            best = r;
        } else {
            lo = mid;
        }
    }
    k = hi;
    if (rc == 0) {
        memset(pick, 0, (size_t)m.nlayers);
        for (int r = 0; r < k; r++)
            pick[ord[r]] = 1;
        if (k == m.nlayers) {   /* the bisection never measured it: say what it gives */
            char *list = layer_list(&m, o->fp32_nodes, pick, 0);
            rc = list ? measure(&m, list, m.S, &best, d) : oqc_err(d, "out of memory");
            free(list);
        }
    }
    if (rc == 0) {
        *fp32_nodes = layer_list(&m, o->fp32_nodes, pick, 0);
        if (!*fp32_nodes)
            rc = oqc_err(d, "out of memory");
    }
    if (rc == 0 && out) {
        fprintf(out, "mixed precision: every layer INT8 gives SQNR %.2f dB", all.sqnr);
        if (m.lab)
            fprintf(out, ", top-1 %+.2f points", 100.0 * (all.top1_q - all.top1_f));
        fprintf(out, " on %lld validation samples;\n  keeping %d of %d layers float gives "
                     "SQNR %.2f dB", (long long)m.S, k, m.nlayers, best.sqnr);
        if (m.lab)
            fprintf(out, ", top-1 %+.2f points", 100.0 * (best.top1_q - best.top1_f));
        fprintf(out, " (target:");
        if (!isnan(o->min_sqnr))
            fprintf(out, " SQNR >= %g dB", o->min_sqnr);
        if (!isnan(o->max_drop))
            fprintf(out, " top-1 drop <= %g points", o->max_drop);
        fprintf(out, ")\n  kept float, most harmful first (output SQNR with only that layer "
                     "INT8, %lld samples):\n", (long long)Srank);
        for (int r = 0; r < k; r++)
            fprintf(out, "    %-32s %-18s %8.2f dB\n", m.names[ord[r]], m.ops[ord[r]],
                    only_q[ord[r]].sqnr);
    }
    free(pick);
    free(ord);
    free(only_q);
    mix_free(&m);
    return rc;
}

int oqc_mix_open(OqcMix **out, OqcGraph *gf, OqcInt8Builder build, void *ctx,
                 const OqcMixOptions *o, OqcDiag *d) {
    Mix *m = malloc(sizeof *m);
    *out = NULL;
    if (!m)
        return oqc_err(d, "out of memory");
    if (mix_init(m, gf, build, ctx, o, d) < 0) {
        mix_free(m);
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int oqc_mix_measure(OqcMix *m, OqcMetrics *r, OqcDiag *d) {
    return measure(m, m->o->fp32_nodes, m->S, r, d);
}

int64_t oqc_mix_samples(const OqcMix *m) {
    return m->S;
}

void oqc_mix_close(OqcMix *m) {
    if (m)
        mix_free(m);
    free(m);
}
