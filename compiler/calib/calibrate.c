/* calibrate.c - running the FP32 graph over a dataset to calibrate activation
 * thresholds (see ir.h, banner calibrate.c; the math is calib.c).
 *
 * Two streaming passes over the data, as docs/calibration.md specifies: the first finds
 * each tensor's amax, the second fills its |x| histogram over [0, amax]. Nothing but
 * one histogram per tensor is kept, so memory does not grow with the sample count, and
 * because every sample's values land in the same bins whatever the batch size, the
 * result does not depend on --batch. Calibration runs on the graph after the passes:
 * thresholds belong to the tensors the INT8 code will hold (fused conv outputs, merged
 * conv ranges, concat buffers). A tensor written in place into a concat buffer (a view)
 * contributes to its base's histogram and shares its threshold.
 *
 * The two passes can also run apart, on shards of the data on different machines
 * (OqcCalibStats, calib_stats.c): pass 1 alone saves each shard's amax; merged by
 * maximum they are the amax one run would find; pass 2 alone bins a shard over that
 * merged amax; summed, the shards' counts are the histograms one run fills, and the
 * thresholds are chosen from them as from a run's own. */
#include "calib.h"

#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* State shared by the executors' hooks. */
typedef struct Calib {
    int pass;             /* 1: amax, 2: histograms */
    OqcHist *hists;       /* per calibrated root tensor */
    const char **names;   /* per histogram: its root tensor's name */
    int nhists;           /* number of histograms */
    const char *nan_name; /* first tensor seen holding NaN, or NULL */
    float *seen;          /* pass 2 over a given range: per histogram, the largest |x|
                             binned (must not exceed the range), else NULL */
} Calib;

/* One executor's view of the histograms (the batch-1 and the batch-b graphs have the
 * same tensors, matched by name). */
typedef struct Hook {
    Calib *c;             /* shared state */
    int *slot;            /* per tensor of this graph: histogram index, -1 if none */
    int64_t batch;        /* samples per run of this graph */
} Hook;

/* Which tensors are calibrated: float activations (graph inputs, node outputs, and
 * buffers written through views), views counting toward their base. */
static int calibrated(const OqcGraph *g, const unsigned char *is_base, int t) {
    const OqcTensor *tt = &g->tensors[t];
    return tt->dtype == OQCF_FLOAT && !tt->is_const && !tt->has_value &&
           (tt->is_input || tt->producer >= 0 || tt->view_base >= 0 || is_base[t]);
}

/* Adds n contiguous values to histogram h (pass 1: amax; pass 2: bins). */
static void accumulate(Calib *c, OqcHist *h, const float *x, int64_t n, const char *name) {
    if (c->pass == 1) {
        float m = h->amax;
        int nan = 0;
        for (int64_t i = 0; i < n; i++) {
            float a = fabsf(x[i]);
            m = a > m ? a : m; /* NaN never wins */
            nan |= a != a;
        }
        h->amax = m;
        if (nan && !c->nan_name)
            c->nan_name = name;
    } else {
        if (c->seen) {
            float m = c->seen[h - c->hists];
            for (int64_t i = 0; i < n; i++)
                m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
            c->seen[h - c->hists] = m;
        }
        oqc_hist_add(h, x, n);
    }
}

/* Pass 1 of a channel scale candidate, in place of accumulate's: each channel's largest
 * |x| over the batch x [batch, nch, inner], and the tensor's, their maximum (NaN never
 * wins; the first tensor holding one is noted, as accumulate does). */
static void channel_amax(Calib *c, OqcHist *h, const float *x, int64_t batch, int64_t inner,
                         const char *name) {
    int nan = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int32_t ch = 0; ch < h->nch; ch++) {
            const float *p = x + (b * h->nch + ch) * inner;
            float m = h->ch_amax[ch];
            for (int64_t i = 0; i < inner; i++) {
                float a = fabsf(p[i]);
                m = a > m ? a : m;
                nan |= a != a;
            }
            h->ch_amax[ch] = m;
            h->amax = m > h->amax ? m : h->amax;
        }
    if (nan && !c->nan_name)
        c->nan_name = name;
}

static void hook(void *ctx, const OqcGraph *g, int tensor, const void *data) {
    Hook *k = ctx;
    const OqcTensor *t = &g->tensors[tensor];
    int s = k->slot[t->view_base >= 0 ? t->view_base : tensor];
    if (s < 0)
        return;
    OqcHist *h = &k->c->hists[s];
    int64_t n = oqc_shape_numel(&t->shape);
    if (k->c->pass == 1 && h->ch_amax && t->view_base < 0 && t->shape.rank == 4 &&
        t->shape.d[1] == h->nch) {
        channel_amax(k->c, h, data, t->shape.d[0], t->shape.d[2] * t->shape.d[3], t->name);
        return;
    }
    if (t->view_base < 0 || t->shape.d[0] == 1) {
        accumulate(k->c, h, data, n, t->name);
        return;
    }
    /* A view holds channels [coff, coff + C) of each sample of its base: strided. */
    int64_t per = n / t->shape.d[0];
    int64_t stride = oqc_shape_numel(&g->tensors[t->view_base].shape) / t->shape.d[0];
    for (int64_t b = 0; b < t->shape.d[0]; b++)
        accumulate(k->c, h, (const float *)data + b * stride, per, t->name);
}

/* Graph inputs are not produced by a node, so the hook does not see them: feed them. */
static void feed_inputs(Hook *k, const OqcGraph *g, const void *const *inputs) {
    for (int i = 0; i < g->ninputs; i++)
        hook(k, g, g->inputs[i], inputs[i]);
}

/* Provably non-negative tensors (u8 storage): outputs of Relu, Clip with min >= 0,
 * Sigmoid/HardSigmoid, convs/Gemms with such a fused activation, and max/average
 * pooling, reshapes and concats of non-negative tensors. */
void oqc_find_unsigned(const OqcGraph *g, unsigned char *nonneg) {
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        int in0 = n->nin > 0 && n->in[0] >= 0 ? nonneg[n->in[0]] : 0;
        int all_in = n->nin > 0;
        for (int k = 0; k < n->nin; k++)
            all_in &= n->in[k] >= 0 && nonneg[n->in[k]];
        int act_nonneg = n->act.kind == OQCF_ACT_RELU ||
                         (n->act.kind == OQCF_ACT_CLIP && n->act.p0 >= 0);
        for (int k = 0; k < n->nout; k++) {
            if (n->out[k] < 0)
                continue;
            int v = 0;
            unsigned fl = oqc_op_flags(n->op);
            if (fl & OQC_OPF_NONNEG)
                v = 1;
            else if (n->op == OQC_OP_Clip) {
                float lo = n->opset >= 11 ? -INFINITY : oqc_attr_float(n, "min", -INFINITY);
                if (n->opset >= 11 && n->nin > 1 && n->in[1] >= 0) {
                    const OqcTensor *m = &g->tensors[n->in[1]];
                    if (m->is_const && m->data && m->dtype == OQCF_FLOAT)
                        lo = *(const float *)m->data;
                }
                v = lo >= 0 || in0;
            } else if (n->op == OQC_OP_Conv || n->op == OQC_OP_Gemm) {
                v = act_nonneg;
                if (n->act_per_channel && n->out_channels) {
                    int64_t off = 0;
                    for (int j = 0; j < k; j++)
                        off += n->out_channels[j];
                    v = 1;
                    for (int64_t ch = 0; ch < n->out_channels[k]; ch++) {
                        const OqcfAct *a = &n->act_per_channel[off + ch];
                        v &= a->kind == OQCF_ACT_RELU || (a->kind == OQCF_ACT_CLIP && a->p0 >= 0);
                    }
                }
            } else if (fl & OQC_OPF_SIGN_OF_X) /* output 0 (MaxPool's 1 is indices) */
                v = k == 0 || n->op == OQC_OP_Split ? in0 : 0;
            else if (fl & OQC_OPF_SIGN_OF_ALL)
                v = all_in;
            nonneg[n->out[k]] = (unsigned char)v;
        }
    }
    /* A concat buffer written through views is non-negative when all its views are
     * (marked 3 when it already was, 2 when it was not yet). */
    int again = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].view_base >= 0 && g->tensors[t].producer >= 0)
            nonneg[g->tensors[t].view_base] = nonneg[g->tensors[t].view_base] & 1 ? 3 : 2;
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].view_base >= 0 && !nonneg[t])
            nonneg[g->tensors[t].view_base] = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (nonneg[t] >= 2) {
            again |= nonneg[t] == 2; /* newly non-negative */
            nonneg[t] = 1;
        }
    /* The nodes reading a buffer (a MaxPool after an eliminated Concat) were visited
     * before it was known: walk again until no buffer changes (buffers only turn
     * non-negative, so this ends). */
    if (again)
        oqc_find_unsigned(g, nonneg);
}

int32_t oqc_channel_scaled(const OqcGraph *g, int t) {
    if (t < 0 || t >= g->ntensors)
        return 0;
    const OqcTensor *x = &g->tensors[t];
    if (x->dtype != OQCF_FLOAT || x->shape.rank != 4 || x->view_base >= 0 || x->is_output ||
        x->is_input || x->is_const || x->producer < 0 || x->nconsumers < 1 ||
        x->shape.d[1] < 1 || x->shape.d[1] > INT32_MAX)
        return 0;
    const OqcNode *p = &g->nodes[x->producer];
    if (p->op != OQC_OP_Conv || p->nout != 1)
        return 0;
    int64_t C = x->shape.d[1];
    for (int c = 0; c < x->nconsumers; c++) {
        const OqcNode *n = &g->nodes[x->consumers[c]];
        if (n->op != OQC_OP_Conv || n->nin < 2 || n->in[0] != t || n->in[1] < 0 ||
            oqc_attr_int(n, "group", 1) != C)
            return 0;
        for (int k = 1; k < n->nin; k++)
            if (n->in[k] == t)
                return 0;
        const OqcShape *ws = &g->tensors[n->in[1]].shape;
        if (ws->rank != 4 || ws->d[0] != C || ws->d[1] != 1)
            return 0;
    }
    for (int u = 0; u < g->ntensors; u++)   /* (last: the one check over every tensor) */
        if (g->tensors[u].view_base == t)
            return 0;
    return (int32_t)C;
}

void oqc_channel_thresholds(float T, const float *ch_amax, int32_t nch, float *out) {
    float lo = OQC_CHANNEL_FLOOR * T;
    for (int32_t c = 0; c < nch; c++)
        out[c] = ch_amax[c] < lo ? lo : ch_amax[c] > T ? T : ch_amax[c];
}

/* ------------------------------------------------------------------- data */

/* ---------------------------------------------------------------- progress */

typedef struct Progress {
    int on;             /* drawing at all */
    struct timespec t0; /* start of the current pass */
    int64_t total;      /* samples per pass */
} Progress;

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void progress(Progress *p, int pass, int64_t done) {
    if (!p->on)
        return;
    double dt = since(&p->t0), rate = dt > 0 ? (double)done / dt : 0;
    int width = 30, fill = p->total ? (int)(width * done / p->total) : width;
    double eta = rate > 0 ? (double)(p->total - done) / rate : 0;
    if (p->total <= 0) /* the first pass learns the sample count (pass 2 alone: unknown) */
        fprintf(stderr, "\rcalibrating: pass %d/2%s %" PRId64 " samples %.1f/s ", pass,
                pass == 1 ? " (amax)" : "", done, rate);
    else
        fprintf(stderr, "\rcalibrating: pass %d/2 [%.*s%*s] %" PRId64 "/%" PRId64
                        " samples %.1f/s ETA %.0fs ", pass, fill,
                "##############################", width - fill, "", done, p->total, rate, eta);
    if (p->total > 0 && done == p->total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* -------------------------------------------------------------- the driver */

/* Histogram slots of graph g: one per calibrated root tensor, matched by name with
 * the reference graph (whose slots are numbered first). */
static int *make_slots(OqcGraph *g, const OqcGraph *ref, const int *ref_slot, Calib *c,
                       int bins) {
    OqcArena *a = g->arena;
    int *slot = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *slot);
    unsigned char *is_base = oqc_arena_alloc(a, (size_t)g->ntensors + 1);
    for (int t = 0; t < g->ntensors; t++) {
        slot[t] = -1;
        if (g->tensors[t].view_base >= 0)
            is_base[g->tensors[t].view_base] = 1;
    }
    for (int t = 0; t < g->ntensors; t++) {
        if (!calibrated(g, is_base, t) || g->tensors[t].view_base >= 0)
            continue;
        if (ref) {
            int r = oqc_tensor_find(ref, g->tensors[t].name);
            slot[t] = r >= 0 ? ref_slot[r] : -1;
            continue;
        }
        slot[t] = c->nhists;
        c->names[c->nhists] = g->tensors[t].name;
        OqcHist *h = &c->hists[c->nhists];
        h->nbins = bins;
        h->bins = oqc_arena_alloc(a, (size_t)bins * sizeof(uint64_t));
        h->nch = oqc_channel_scaled(g, t);
        h->ch_amax = h->nch ? oqc_arena_alloc(a, (size_t)h->nch * sizeof(float)) : NULL;
        c->nhists++;
    }
    return slot;
}

/* One calibration worker: its executors (one thread each), its own accumulators (same
 * histogram slots as every worker's) and the samples it runs.  With --threads N, N
 * workers run disjoint samples of a file at once: histograms are integer counts and
 * amax a maximum, so merging them gives exactly the single-worker result. */
typedef struct Worker {
    Calib c;              /* this worker's amax / histograms */
    Hook h1, hb;          /* hooks of its batch-1 and batch-b executors */
    OqcExec *e, *eb;      /* its executors (eb NULL when b == 1) */
    void **outs;          /* output buffers, big enough for either graph */
    float *batch;         /* one batch of samples */
    OqcGraph *g, *gb;     /* the graphs */
    int64_t b;            /* samples per batched run */
    size_t sample_bytes;  /* bytes of one sample */
    const char *data;     /* the current file's samples */
    int64_t k0, k1;       /* this worker's samples [k0, k1) of it */
    int rc;               /* 0, or -1 with the error in diag */
    OqcDiag diag;         /* this worker's errors */
    int64_t *done;        /* samples done by all workers (worker 0 reads it) */
    Progress *pr;         /* drawn by worker 0 only */
    int id;               /* worker index */
    int pass;             /* current pass */
} Worker;

static void *worker_run(void *arg) {
    Worker *w = arg;
    int64_t queued = 0;
    for (int64_t k = w->k0; w->rc == 0 && k < w->k1; k++) {
        memcpy((char *)w->batch + (size_t)queued * w->sample_bytes,
               w->data + (size_t)k * w->sample_bytes, w->sample_bytes);
        if (++queued == w->b) { /* a full batch */
            const void *in = w->batch;
            feed_inputs(w->b > 1 ? &w->hb : &w->h1, w->b > 1 ? w->gb : w->g, &in);
            w->rc = oqc_exec_run(w->b > 1 ? w->eb : w->e, &in, w->outs, &w->diag);
            __atomic_add_fetch(w->done, queued, __ATOMIC_RELAXED);
            queued = 0;
            if (w->id == 0)
                progress(w->pr, w->pass, __atomic_load_n(w->done, __ATOMIC_RELAXED));
        }
    }
    for (int64_t k = 0; w->rc == 0 && k < queued; k++) { /* a short last batch */
        const void *in = w->batch + (size_t)k * (w->sample_bytes / sizeof(float));
        feed_inputs(&w->h1, w->g, &in);
        w->rc = oqc_exec_run(w->e, &in, w->outs, &w->diag);
        __atomic_add_fetch(w->done, 1, __ATOMIC_RELAXED);
        if (w->id == 0)
            progress(w->pr, w->pass, __atomic_load_n(w->done, __ATOMIC_RELAXED));
    }
    return NULL;
}

#define MAX_WORKERS 16

/* Whether statistics st belong to this calibration: the same histograms (the root
 * tensors of the model after the same passes, in order) with the same bins. */
static int stats_match(const OqcGraph *g, const Calib *c, int bins, const OqcCalibStats *st,
                       OqcDiag *d) {
    const char *f = st->path ? st->path : "statistics";
    if (st->bins != bins)
        return oqc_err(d, "%s: has %d bins per histogram; this calibration uses %d (--bins)",
                       f, st->bins, bins);
    if (st->nhists != c->nhists)
        return oqc_err(d, "%s: holds %d histograms but %s (after its passes) calibrates %d "
                          "tensors: statistics of another model or other passes", f,
                       st->nhists, g->path, c->nhists);
    for (int i = 0; i < c->nhists; i++)
        if (strcmp(st->names[i], c->names[i]))
            return oqc_err(d, "%s: histogram %d is of tensor '%s' but %s calibrates '%s' "
                              "there: statistics of another model or other passes", f, i + 1,
                           st->names[i], g->path, c->names[i]);
    return 0;
}

int oqc_calib_check_input(const OqcGraph *g, OqcDiag *d) {
    if (g->ninputs != 1)
        return oqc_err(d, "%s: calibration supports models with one input; this one has %d",
                       g->path, g->ninputs);
    const OqcTensor *x = &g->tensors[g->inputs[0]];
    if (x->dtype != OQCF_FLOAT)
        return oqc_err(d, "%s: input '%s' is %s; calibration needs a float input", g->path,
                       x->name, oqc_dtype_name(x->dtype));
    return 0;
}

void oqc_calib_placeholder(const OqcGraph *g, OqcArena *a, OqcCalibEntry **e, int *n) {
    unsigned char *is_base = oqc_arena_alloc(a, (size_t)g->ntensors + 1);
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].view_base >= 0)
            is_base[g->tensors[t].view_base] = 1;
    *e = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof **e);
    *n = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (calibrated(g, is_base, t))
            (*e)[(*n)++] = (OqcCalibEntry){.name = g->tensors[t].name, .amax = 1,
                                           .threshold = 1, .method = "table"};
}

/* One calibration: what its phases share. */
typedef struct Run {
    OqcGraph *g;                  /* the batch-1 graph */
    const OqcCalibOptions *o;     /* the options */
    const OqcTensor *x;           /* the graph's input */
    const char **files;           /* the data files */
    int nfiles;                   /* their count */
    Worker *ws;                   /* the workers */
    int nw;                       /* their count */
    int64_t b;                    /* samples per batched run */
    Progress pr;                  /* the progress bar */
    int64_t done;                 /* samples done in the current pass by all workers */
    int64_t total;                /* samples per pass */
} Run;

/* Sets up r's workers over g and gb: executors with the histogram hooks, output and
 * batch buffers; -1 with an error when an executor cannot be built. */
static int start_workers(Run *r, OqcGraph *gb, OqcDiag *d) {
    OqcGraph *g = r->g;
    OqcArena *a = g->arena;
    int64_t b = r->b;
    size_t sample_bytes = (size_t)oqc_shape_numel(&r->x->shape) * sizeof(float);
    for (int i = 0; i < r->nw; i++) {
        Worker *w = &r->ws[i];
        w->g = g;
        w->gb = gb;
        w->b = b;
        w->sample_bytes = sample_bytes;
        w->done = &r->done;
        w->pr = &r->pr;
        w->id = i;
        oqc_diag_init(&w->diag);
        w->e = oqc_exec_new(g, 1, d);
        w->eb = w->e && b > 1 ? oqc_exec_new(gb, 1, d) : NULL;
        if (!w->e || (b > 1 && !w->eb))
            return -1;
        w->c.hists = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *w->c.hists);
        w->c.names = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *w->c.names);
        w->h1 = (Hook){.c = &w->c, .slot = make_slots(g, NULL, NULL, &w->c, r->o->bins),
                       .batch = 1};
        w->hb = (Hook){.c = &w->c,
                       .slot = b > 1 ? make_slots(gb, g, w->h1.slot, &w->c, r->o->bins) : NULL,
                       .batch = b};
        oqc_exec_set_hook(w->e, hook, &w->h1);
        if (w->eb)
            oqc_exec_set_hook(w->eb, hook, &w->hb);
        w->outs = oqc_arena_alloc(a, (size_t)(g->noutputs + 1) * sizeof *w->outs);
        for (int k = 0; k < g->noutputs; k++) { /* big enough for either graph */
            const OqcTensor *t = &g->tensors[g->outputs[k]];
            w->outs[k] = oqc_arena_alloc_raw(a, (size_t)(oqc_shape_numel(&t->shape) * b) *
                                                    oqcf_dtype_size(t->dtype) + 1);
        }
        w->batch = oqc_arena_alloc_raw(a, sample_bytes * (size_t)b + 1);
    }
    return 0;
}

/* Reads the data file files[*f] (or a run of up to `chunk` images from it on, *f then
 * moving to the last) into arena fa: the samples *v, their count *s. */
static int read_chunk(Run *r, int *f, OqcArena *fa, OqcValue *v, int64_t *s, OqcDiag *d) {
    const char **files = r->files;
    int64_t chunk = 4 * (int64_t)r->nw * r->b < 16 ? 16 : 4 * (int64_t)r->nw * r->b, nimg = 0;
    while (*f + nimg < r->nfiles && nimg < chunk && oqc_is_image_path(files[*f + nimg]))
        nimg++;
    if (nimg > 0) {
        *s = nimg;
        int rc = oqc_images_read(files + *f, nimg, r->o->pre, &r->x->shape, fa, v, d);
        *f += (int)nimg - 1;
        return rc;
    }
    if (oqc_tensor_read(files[*f], &r->x->shape, fa, v, d) < 0 ||
        oqc_samples_of(files[*f], v, &r->x->shape, s, d) < 0)
        return -1;
    if (v->dtype != OQCF_FLOAT)
        return oqc_err(d, "%s: holds %s data; the input '%s' is f32", files[*f],
                       oqc_dtype_name(v->dtype), r->x->name);
    return 0;
}

/* Runs the s samples at data on the workers, each a contiguous share (whole batches
 * where possible) on its own thread; the first worker's error, if any. */
static int run_chunk(Run *r, const char *data, int64_t s, OqcDiag *d) {
    int64_t b = r->b;
    int used = r->nw;
    while (used > 1 && s < (int64_t)used * b)
        used--;
    pthread_t tid[MAX_WORKERS];
    int started[MAX_WORKERS] = {0};
    for (int i = 0; i < used; i++) {
        Worker *w = &r->ws[i];
        int64_t nb = (s + b - 1) / b; /* batches, the last maybe short */
        w->data = data;
        w->k0 = nb * i / used * b;
        w->k1 = i + 1 == used ? s : nb * (i + 1) / used * b;
        w->rc = 0;
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, worker_run, w) == 0;
        if (i > 0 && !started[i])
            worker_run(w); /* no thread: run it here */
    }
    worker_run(&r->ws[0]);
    for (int i = 1; i < used; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
    for (int i = 0; i < used; i++) {
        const OqcDiag *wd = &r->ws[i].diag;
        if (r->ws[i].rc < 0)
            return oqc_err_forward(d, wd, "calibration failed");
    }
    return 0;
}

/* Histogram h's channel amax from statistics' histogram s; statistics without them (of
 * a tensor that is no candidate there) leave h without. */
static void channels_from(OqcHist *h, const OqcHist *s) {
    if (h->nch && s->nch == h->nch && s->ch_amax)
        memcpy(h->ch_amax, s->ch_amax, (size_t)h->nch * sizeof *h->ch_amax);
    else
        h->nch = 0, h->ch_amax = NULL;
}

/* Pass 2 over a given range (--range): sets every histogram's amax to it, and has the
 * hooks record the largest |x| binned, which must not exceed it. */
static void use_range(Run *r) {
    OqcArena *a = r->g->arena;
    for (int i = 0; i < r->nw; i++)
        r->ws[i].c.seen = oqc_arena_alloc(a, (size_t)(r->ws[i].c.nhists + 1) * sizeof(float));
    for (int hi = 0; hi < r->ws[0].c.nhists; hi++)
        for (int i = 0; i < r->nw; i++) {
            r->ws[i].c.hists[hi].amax = r->o->range->hists[hi].amax;
            channels_from(&r->ws[i].c.hists[hi], &r->o->range->hists[hi]);
        }
}

/* After pass 2 over a given range: an error when a tensor took values beyond it. */
static int check_range(const Run *r, OqcDiag *d) {
    const OqcCalibStats *range = r->o->range;
    for (int hi = 0; hi < r->ws[0].c.nhists; hi++)
        for (int i = 0; i < r->nw; i++)
            if (r->ws[i].c.seen[hi] > range->hists[hi].amax)
                return oqc_err(d, "%s: tensor '%s' takes |x| up to %g on this data, beyond "
                                  "the range %g of %s: the range must merge the pass-1 "
                                  "statistics of every shard, this one included",
                               r->g->path, r->ws[0].c.names[hi], (double)r->ws[i].c.seen[hi],
                               (double)range->hists[hi].amax, range->path);
    return 0;
}

/* After pass 1: histogram hi's channel amax of every worker, the maximum of theirs. */
static void share_channel_amax(Run *r, int hi) {
    OqcHist *h0 = &r->ws[0].c.hists[hi];
    for (int32_t ch = 0; ch < h0->nch; ch++) {
        float m = 0;
        for (int i = 0; i < r->nw; i++)
            m = r->ws[i].c.hists[hi].ch_amax[ch] > m ? r->ws[i].c.hists[hi].ch_amax[ch] : m;
        for (int i = 0; i < r->nw; i++)
            r->ws[i].c.hists[hi].ch_amax[ch] = m;
    }
}

/* After pass 1: every worker bins over the global amax (the maximum of theirs); an
 * error when a tensor took NaN or infinite values. */
static int share_amax(Run *r, OqcDiag *d) {
    const char *nan = NULL;
    for (int i = 0; i < r->nw && !nan; i++)
        nan = r->ws[i].c.nan_name;
    if (nan)
        return oqc_err(d, "%s: tensor '%s' takes NaN values on the calibration data",
                       r->g->path, nan);
    for (int hi = 0; hi < r->ws[0].c.nhists; hi++) {
        float m = 0;
        for (int i = 0; i < r->nw; i++)
            m = r->ws[i].c.hists[hi].amax > m ? r->ws[i].c.hists[hi].amax : m;
        for (int i = 0; i < r->nw; i++)
            r->ws[i].c.hists[hi].amax = m;
        share_channel_amax(r, hi);
        if (!isfinite(m))
            return oqc_err(d, "%s: an activation takes infinite values on the "
                              "calibration data", r->g->path);
    }
    return 0;
}

/* One pass (1: amax, 2: histograms) over every data file; pass 1 learns the sample
 * count (r->total). */
static int run_pass(Run *r, int pass, OqcDiag *d) {
    int rc = 0;
    for (int i = 0; i < r->nw; i++)
        r->ws[i].c.pass = r->ws[i].pass = pass;
    clock_gettime(CLOCK_MONOTONIC, &r->pr.t0);
    r->done = 0;
    for (int f = 0; f < r->nfiles && rc == 0; f++) {
        /* Each file (or run of up to `chunk` images) is read into a scratch arena:
         * memory stays bounded by one file. */
        OqcArena *fa = oqc_arena_new();
        OqcValue v;
        int64_t s = 0;
        rc = read_chunk(r, &f, fa, &v, &s, d);
        if (rc == 0)
            rc = run_chunk(r, v.data, s, d);
        oqc_arena_free(fa);
    }
    if (pass == 1) {
        r->total = r->done;
        r->pr.total = r->done;
        if (r->pr.on)
            fputc('\n', stderr);
    }
    if (pass == 2 && r->o->range)
        r->total = r->done;
    if (rc == 0 && pass == 2 && r->o->range)
        rc = check_range(r, d);
    if (rc == 0 && r->done == 0)
        rc = oqc_err(d, "no calibration samples in the given data");
    if (rc == 0 && pass == 1)
        rc = share_amax(r, d);
    return rc;
}

/* The workers' accumulators merged into worker 0's (the sum of every worker's counts),
 * or, from merged statistics, theirs. */
static Calib merge_workers(const Run *r) {
    const OqcCalibOptions *o = r->o;
    Calib c = r->ws[0].c;
    for (int hi = 0; hi < c.nhists; hi++)
        for (int i = 1; i < r->nw; i++) {
            OqcHist *h = &c.hists[hi], *o2 = &r->ws[i].c.hists[hi];
            for (int k = 0; k < h->nbins; k++)
                h->bins[k] += o2->bins[k];
            h->count += o2->count;
        }
    for (int hi = 0; o->merged && hi < c.nhists; hi++) {
        OqcHist *h = &c.hists[hi];
        h->amax = o->merged->hists[hi].amax;
        h->count = o->merged->hists[hi].count;
        channels_from(h, &o->merged->hists[hi]);
        memcpy(h->bins, o->merged->hists[hi].bins, (size_t)h->nbins * sizeof *h->bins);
    }
    return c;
}

/* The histogram tensor t is calibrated with: its root's (views share their base's),
 * or, for a MaxPool that writes its own tensor, its input's - it runs at its input's
 * scale (pass quantize), so the table and report show what INT8 runs. */
static int calib_root(const OqcGraph *g, const int *slot, int t) {
    const OqcTensor *tt = &g->tensors[t];
    int root = tt->view_base >= 0 ? tt->view_base : t;
    for (;;) {
        int p = g->tensors[root].producer;
        int in = p >= 0 && g->nodes[p].op == OQC_OP_MaxPool && g->tensors[root].view_base < 0
                     ? g->nodes[p].in[0]
                     : -1;
        int inr = in >= 0 && g->tensors[in].view_base >= 0 ? g->tensors[in].view_base : in;
        if (inr < 0 || slot[inr] < 0)
            break;
        root = inr;
    }
    return root;
}

/* Whether the imported table of o names tensor `name`. */
static int in_table(const OqcCalibOptions *o, const char *name) {
    for (int k = 0; k < o->ntable; k++)
        if (!strcmp(o->table[k].name, name))
            return 1;
    return 0;
}

/* en's threshold and scale: the imported table's when it names the tensor (the user's
 * scale factor wins, bit for bit, and so do its channel thresholds or their absence),
 * else chosen from histogram h by the method. */
static int choose_threshold(const OqcGraph *g, const OqcCalibOptions *o, OqcHist *h,
                            OqcCalibEntry *en, OqcDiag *d) {
    int imported = -1;
    for (int k = 0; k < o->ntable; k++)
        if (!strcmp(o->table[k].name, en->name))
            imported = k;
    if (imported >= 0) {
        en->threshold = o->table[imported].threshold;
        en->scale = o->table[imported].scale;
        en->nch = o->table[imported].nch;   /* its channel thresholds, or none */
        en->ch_threshold = o->table[imported].ch_threshold;
        en->amax = h->amax;
        en->method = "table";
        en->kl = NAN;
    } else {
        en->divergence = o->method == OQC_CALIB_ENTROPY
                             ? oqc_arena_alloc(g->arena, (size_t)o->bins * sizeof(double))
                             : NULL;
        if (oqc_calib_threshold(h, o->method, o->param, 128, en, en->divergence) < 0)
            return oqc_err(d, "%s: cannot choose a threshold for '%s'", g->path, en->name);
        en->method = o->method_name;
    }
    if (imported < 0 || en->is_unsigned)
        en->scale = en->threshold / (en->is_unsigned ? 255.0f : 127.0f);
    return 0;
}

/* The thresholds of every calibrated tensor of g from the merged histograms c (slot:
 * g's tensors' histogram indices) into *entries, *nentries. */
static int thresholds(OqcGraph *g, Calib *c, const int *slot, const OqcCalibOptions *o,
                      OqcCalibEntry **entries, int *nentries, OqcDiag *d) {
    OqcArena *a = g->arena;
    unsigned char *is_base = oqc_arena_alloc(a, (size_t)g->ntensors + 1);
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].view_base >= 0)
            is_base[g->tensors[t].view_base] = 1;
    unsigned char *nonneg = oqc_arena_alloc(a, (size_t)(g->ntensors + 1));
    oqc_find_unsigned(g, nonneg);
    OqcCalibEntry *es = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *es);
    int ne = 0;
    for (int t = 0; t < g->ntensors; t++) {
        if (!calibrated(g, is_base, t))
            continue;
        const OqcTensor *tt = &g->tensors[t];
        int root = calib_root(g, slot, t);
        int s = slot[root];
        if (s < 0)
            continue;
        OqcCalibEntry *en = &es[ne++];
        en->name = tt->name;
        en->shape = tt->shape;
        en->op = tt->producer >= 0 ? g->nodes[tt->producer].op_type
               : is_base[t]        ? "Concat (in place)"   /* an eliminated Concat's buffer */
                                   : "input";
        en->is_unsigned = nonneg[root];
        en->hist = &c->hists[s];
        if (choose_threshold(g, o, &c->hists[s], en, d) < 0)
            return -1;
        const OqcHist *h = &c->hists[s];
        if (root == t && h->nch && !en->nch && !in_table(o, en->name)) {
            float *ct = oqc_arena_alloc(a, (size_t)h->nch * sizeof *ct);
            oqc_channel_thresholds(en->threshold, h->ch_amax, h->nch, ct);
            en->nch = h->nch;
            en->ch_threshold = ct;
        }
    }
    *entries = es;
    *nentries = ne;
    return 0;
}

int oqc_calibrate(OqcGraph *g, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                  OqcCalibEntry **entries, int *nentries, int64_t *nsamples, OqcDiag *d) {
    if (oqc_calib_check_input(g, d) < 0)
        return -1;
    Run r = {.g = g, .o = o, .x = &g->tensors[g->inputs[0]], .pr = {.on = o->progress}};
    if (!o->merged && oqc_data_files(g->arena, o->data, o->ndata, &r.files, &r.nfiles, d) < 0)
        return -1;
    if (oqc_data_has_images(r.files, r.nfiles) && !(o->pre && o->pre->given))
        return oqc_err(d, "%s: image data needs --preprocess (imagenet, cifar, raw or "
                          "keys; see docs/images.md)", o->data[0]);
    r.b = !gb || b < 2 ? 1 : b;
    r.nw = o->threads > 1 && !o->merged ? o->threads : 1;
    if (r.nw > MAX_WORKERS)
        r.nw = MAX_WORKERS;
    r.ws = oqc_arena_alloc(g->arena, (size_t)r.nw * sizeof *r.ws);
    int rc = start_workers(&r, gb, d);
    /* The passes to run: both; pass 1 alone when saving its statistics; pass 2 alone
     * over a given range; none from merged histograms. */
    int first = o->merged ? 3 : o->range ? 2 : 1, last = o->save && !o->range ? 1 : 2;
    const OqcCalibStats *given = o->merged ? o->merged : o->range;
    if (rc == 0 && given && stats_match(g, &r.ws[0].c, o->bins, given, d) < 0)
        rc = -1;
    if (rc == 0 && o->range)
        use_range(&r);
    for (int pass = first; pass <= last && rc == 0; pass++)
        rc = run_pass(&r, pass, d);
    for (int i = 0; i < r.nw; i++) {
        oqc_exec_free(r.ws[i].e);
        oqc_exec_free(r.ws[i].eb);
        oqc_diag_free(&r.ws[i].diag);
    }
    if (rc < 0)
        return -1;
    Calib c = merge_workers(&r);
    if (o->merged)
        r.total = o->merged->samples;
    if (o->save) {
        *o->save = (OqcCalibStats){.stage = o->range ? 2 : 1, .nhists = c.nhists,
                                   .bins = o->bins, .names = c.names, .hists = c.hists,
                                   .samples = r.total,
                                   .range_samples = o->range ? o->range->samples : 0,
                                   .preprocess = o->pre && o->pre->given ? o->pre->spec : NULL};
        *entries = NULL;
        *nentries = 0;
        *nsamples = r.total;
        return 0;
    }
    if (thresholds(g, &c, r.ws[0].h1.slot, o, entries, nentries, d) < 0)
        return -1;
    *nsamples = r.total;
    return 0;
}
