/* fp32_latency.c - FP32 inference latency of oqc's executor on one model.
 *
 * Loads MODEL with oqc_prepare (strict: every op must be supported), with --passes runs
 * the pass pipeline (oqc_run_passes: BN folding, activation fusion, ...), and for each
 * thread count builds an executor, feeds one fixed pseudo-random image-like input,
 * does warm-up runs, then times oqc_exec_run at least --runs times (and for at least
 * --min-ms of wall time, up to 10x --runs).  Prints the median and the minimum in ms.
 * A benchmark, not a test: it never fails on timing, only when the model cannot run.
 *
 * With --per-node it also attributes time to nodes: the executor's tensor hook is
 * called after each node, so the time between consecutive hook calls belongs to the
 * node that produced the tensor.  It reports the median over the timed runs per node,
 * aggregated by op type and the slowest nodes with their shapes, and the GFLOP/s of
 * Conv, Gemm and MatMul (2 x outputs x weight elements per output channel / time).  The hook itself
 * costs a clock read per output tensor (tens of ns), negligible against the kernels.
 *
 * Build (bench/run.sh does this; flags as the Makefile's):
 *
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $OQC_INC \
 *      -Ibuild/proto bench/fp32_latency.c build/liboqc.a \
 *      -lprotobuf-c -lxml2 -lm -pthread -o build/bench/fp32_latency
 *
 * Usage: fp32_latency MODEL [--threads 1,2] [--runs 20] [--warmup 3] [--min-ms 1000]
 *                           [--passes] [--per-node [TOP]]
 *
 * Output: human-readable lines, plus one machine-readable line per thread count:
 *   RESULT model=PATH passes=0|1 threads=T nodes=N runs=R median_ms=X min_ms=Y
 */
#include "backend.h"
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREAD_COUNTS 8

/* Command-line options. */
typedef struct Opts {
    const char *model;               /* model path */
    int threads[MAX_THREAD_COUNTS];  /* thread counts to measure */
    int nthreads;                    /* how many of them */
    int runs;                        /* minimum number of timed runs */
    int warmup;                      /* untimed runs before timing */
    double min_ms;                   /* minimum total timed wall time */
    int per_node;                    /* 0: off; else how many slowest nodes to list */
    int passes;                      /* run the pass pipeline before executing */
} Opts;

/* Per-node timing state shared with the hook. */
typedef struct NodeTimer {
    double last;      /* time of the previous hook call (or of the run start) */
    int last_node;    /* node that produced the previous hooked tensor, -1 at start */
    double *cur;      /* per node: seconds in the current run */
    double *samples;  /* per run r, node i: samples[r * nnodes + i] */
    int nnodes;       /* number of nodes */
} NodeTimer;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The hook: time since the previous call is the producing node's. A node with several
 * outputs gets its time at its first output; the others add ~0. */
static void node_hook(void *ctx, const OqcGraph *g, int tensor, const void *data) {
    (void)data;
    NodeTimer *t = ctx;
    double now = now_s();
    int node = g->tensors[tensor].producer;
    if (node >= 0)
        t->cur[node] += now - t->last;
    t->last = now;
    t->last_node = node;
}

/* Fills a float tensor with a deterministic image-like pattern: a smooth gradient per
 * channel plus LCG noise, roughly in the range of ImageNet-normalised pixels. Other
 * dtypes are zero-filled (no current benchmark model has them). */
static void fill_input(const OqcTensor *t, void *buf, uint32_t seed) {
    int64_t n = oqc_shape_numel(&t->shape);
    size_t esz = oqcf_dtype_size(t->dtype);
    memset(buf, 0, (size_t)n * esz);
    if (t->dtype != OQCF_FLOAT)
        return;
    int64_t w = t->shape.rank >= 1 ? t->shape.d[t->shape.rank - 1] : 1;
    int64_t h = t->shape.rank >= 2 ? t->shape.d[t->shape.rank - 2] : 1;
    float *f = buf;
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = i % (w ? w : 1), y = (i / (w ? w : 1)) % (h ? h : 1);
        int64_t c = i / ((w ? w : 1) * (h ? h : 1));
        s = s * 1664525u + 1013904223u;
        float noise = (float)(s >> 8) / 16777216.0f - 0.5f;   /* [-0.5, 0.5) */
        float grad = (float)(x + y + 17 * c) / (float)(w + h + 1) - 0.5f;
        f[i] = 1.6f * grad + 0.6f * noise;
    }
}

static int parse_threads(const char *s, Opts *o) {
    o->nthreads = 0;
    while (*s && o->nthreads < MAX_THREAD_COUNTS) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 256)
            return -1;
        o->threads[o->nthreads++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return o->nthreads > 0 ? 0 : -1;
}

static void usage(void) {
    fprintf(stderr, "usage: fp32_latency MODEL [--threads 1,2] [--runs N] [--warmup N] "
                    "[--min-ms MS] [--passes] [--per-node [TOP]]\n");
}

static int parse_args(int argc, char **argv, Opts *o) {
    *o = (Opts){.threads = {1, 2}, .nthreads = 2, .runs = 20, .warmup = 3, .min_ms = 1000};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") && v) {
            if (parse_threads(v, o) < 0)
                return -1;
            i++;
        } else if (!strcmp(a, "--runs") && v) {
            o->runs = atoi(v), i++;
        } else if (!strcmp(a, "--warmup") && v) {
            o->warmup = atoi(v), i++;
        } else if (!strcmp(a, "--min-ms") && v) {
            o->min_ms = atof(v), i++;
        } else if (!strcmp(a, "--passes")) {
            o->passes = 1;
        } else if (!strcmp(a, "--per-node")) {
            o->per_node = 25;
            if (v && v[0] >= '0' && v[0] <= '9')
                o->per_node = atoi(v), i++;
        } else if (a[0] != '-' && !o->model) {
            o->model = a;
        } else {
            return -1;
        }
    }
    if (!o->model || o->runs < 1 || o->warmup < 0)
        return -1;
    return 0;
}

/* One row of the per-op-type summary. */
typedef struct OpRow {
    const char *op;   /* op type */
    int count;        /* nodes of that type */
    double ms;        /* summed per-node medians */
    double flops;     /* summed node_flops */
} OpRow;

static int cmp_oprow(const void *a, const void *b) {
    double x = ((const OpRow *)a)->ms, y = ((const OpRow *)b)->ms;
    return x > y ? -1 : x < y;
}

/* Node index sorted by its median time (descending), for the slowest-nodes list. */
static const double *g_node_ms;
static int cmp_node(const void *a, const void *b) {
    double x = g_node_ms[*(const int *)a], y = g_node_ms[*(const int *)b];
    return x > y ? -1 : x < y;
}

/* Floating-point operations of a Conv, Gemm or MatMul node with a constant weight:
 * 2 x its multiply-adds (oqc_node_macs); 0 for other nodes. */
static double node_flops(const OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    if (n->nin < 2 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0 ||
        !g->tensors[n->in[1]].is_const || g->tensors[n->out[0]].shape.rank < 2)
        return 0;
    return 2.0 * (double)oqc_node_macs(g, i);
}

/* Describes a node's main shapes: "in 1x64x56x56 w 64x64x3x3 -> 1x64x56x56 k3 s1 g1". */
static void node_shapes(const OqcGraph *g, int i, char *buf, size_t size) {
    const OqcNode *n = &g->nodes[i];
    char a[96] = "-", w[96] = "", y[96] = "-";
    if (n->nin > 0 && n->in[0] >= 0)
        oqc_shape_str(&g->tensors[n->in[0]].shape, a, sizeof a);
    if (n->nin > 1 && n->in[1] >= 0 && g->tensors[n->in[1]].is_const)
        oqc_shape_str(&g->tensors[n->in[1]].shape, w, sizeof w);
    if (n->nout > 0 && n->out[0] >= 0)
        oqc_shape_str(&g->tensors[n->out[0]].shape, y, sizeof y);
    int k = snprintf(buf, size, "%s%s%s -> %s", a, w[0] ? " w " : "", w, y);
    if (n->op == OQC_OP_Conv && k > 0 && (size_t)k < size) {
        const int64_t *st = NULL;
        int ns = oqc_attr_ints(n, "strides", &st);
        snprintf(buf + k, size - (size_t)k, " s%lld g%lld",
                 (long long)(ns > 0 ? st[0] : 1), (long long)oqc_attr_int(n, "group", 1));
    }
}

/* Row label of a node in the per-op-type table: the op type, with Conv split by kind
 * (depthwise, 1x1, KxK) because each kind has its own kernel path. */
static const char *op_label(const OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    if (n->op != OQC_OP_Conv || n->nin < 2 || n->in[1] < 0)
        return n->op_type;
    const OqcShape *w = &g->tensors[n->in[1]].shape;
    int64_t group = oqc_attr_int(n, "group", 1);
    if (group > 1 && w->rank >= 2 && w->d[1] == 1)
        return "Conv depthwise";
    if (group > 1)
        return "Conv grouped";
    int64_t taps = 1;
    for (int k = 2; k < w->rank; k++)
        taps *= w->d[k];
    return taps == 1 ? "Conv 1x1" : "Conv KxK";
}

static void report_per_node(const OqcGraph *g, NodeTimer *t, int runs, int top,
                            double run_median_ms) {
    int nn = g->nnodes;
    double *node_ms = calloc((size_t)nn, sizeof *node_ms);
    double *col = malloc((size_t)runs * sizeof *col);
    OpRow *rows = calloc((size_t)nn + 1, sizeof *rows);
    int *order = malloc((size_t)nn * sizeof *order);
    if (!node_ms || !col || !rows || !order) {
        fprintf(stderr, "fp32_latency: out of memory\n");
        exit(1);
    }
    double sum = 0;
    for (int i = 0; i < nn; i++) {
        for (int r = 0; r < runs; r++)
            col[r] = t->samples[(size_t)r * (size_t)nn + (size_t)i] * 1e3;
        node_ms[i] = median(col, runs);
        sum += node_ms[i];
    }
    int nrows = 0;
    for (int i = 0; i < nn; i++) {
        const char *op = op_label(g, i);
        int r = 0;
        while (r < nrows && strcmp(rows[r].op, op))
            r++;
        if (r == nrows)
            rows[nrows++] = (OpRow){.op = op};
        rows[r].count++;
        rows[r].ms += node_ms[i];
        rows[r].flops += node_flops(g, i);
    }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_oprow);
    printf("  per op type (sum of per-node medians %.2f ms; whole-run median %.2f ms):\n",
           sum, run_median_ms);
    printf("    %-22s %5s %10s %6s %8s\n", "op", "nodes", "ms", "%", "GFLOP/s");
    for (int r = 0; r < nrows; r++) {
        char gf[32] = "";
        if (rows[r].flops > 0 && rows[r].ms > 0)
            snprintf(gf, sizeof gf, "%8.1f", rows[r].flops / (rows[r].ms * 1e6));
        printf("    %-22s %5d %10.3f %5.1f%% %s\n", rows[r].op, rows[r].count, rows[r].ms,
               sum > 0 ? 100 * rows[r].ms / sum : 0, gf);
    }
    for (int i = 0; i < nn; i++)
        order[i] = i;
    g_node_ms = node_ms;
    qsort(order, (size_t)nn, sizeof *order, cmp_node);
    if (top > nn)
        top = nn;
    printf("  slowest %d nodes:\n", top);
    printf("    %8s %6s %8s  %-14s %-28s %s\n", "ms", "%", "GFLOP/s", "op", "node",
           "shapes");
    for (int k = 0; k < top; k++) {
        int i = order[k];
        char shp[400], gf[32] = "       -";
        node_shapes(g, i, shp, sizeof shp);
        double fl = node_flops(g, i);
        if (fl > 0 && node_ms[i] > 0)
            snprintf(gf, sizeof gf, "%8.1f", fl / (node_ms[i] * 1e6));
        printf("    %8.3f %5.1f%% %s  %-14s %-28s %s\n", node_ms[i],
               sum > 0 ? 100 * node_ms[i] / sum : 0, gf, g->nodes[i].op_type,
               g->nodes[i].name, shp);
    }
    free(node_ms);
    free(col);
    free(rows);
    free(order);
}

/* Measures one thread count; returns 0, or -1 when the executor fails. */
static int bench_threads(OqcGraph *g, const Opts *o, int nthreads, void **in, void **out) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcExec *e = oqc_exec_new(g, nthreads, &d);
    if (!e) {
        fprintf(stderr, "%s", d.buf ? d.buf : "fp32_latency: oqc_exec_new failed\n");
        oqc_diag_free(&d);
        return -1;
    }
    for (int i = 0; i < o->warmup; i++)
        if (oqc_exec_run(e, (const void *const *)in, out, &d) < 0)
            goto fail;
    int cap = o->runs * 10;
    double *ms = malloc((size_t)cap * sizeof *ms);
    if (!ms)
        goto fail;
    int n = 0;
    double total = 0;
    while (n < o->runs || (total < o->min_ms && n < cap)) {
        double t0 = now_s();
        if (oqc_exec_run(e, (const void *const *)in, out, &d) < 0) {
            free(ms);
            goto fail;
        }
        ms[n] = (now_s() - t0) * 1e3;
        total += ms[n++];
    }
    double med = median(ms, n), mn = ms[0];
    printf("  threads=%d: median %.3f ms, min %.3f ms over %d runs (arena %.1f MB)\n",
           nthreads, med, mn, n, (double)oqc_exec_arena_bytes(e) / 1048576.0);
    printf("RESULT model=%s passes=%d threads=%d nodes=%d runs=%d median_ms=%.3f "
           "min_ms=%.3f\n", o->model, o->passes, nthreads, g->nnodes, n, med, mn);
    free(ms);

    if (o->per_node) {
        NodeTimer t = {.nnodes = g->nnodes};
        int runs = o->runs;
        t.cur = calloc((size_t)g->nnodes, sizeof *t.cur);
        t.samples = calloc((size_t)runs * (size_t)g->nnodes, sizeof *t.samples);
        double *whole = malloc((size_t)runs * sizeof *whole);
        if (!t.cur || !t.samples || !whole)
            goto fail;
        oqc_exec_set_hook(e, node_hook, &t);
        for (int r = 0; r < runs; r++) {
            memset(t.cur, 0, (size_t)g->nnodes * sizeof *t.cur);
            t.last_node = -1;
            t.last = now_s();
            double t0 = t.last;
            if (oqc_exec_run(e, (const void *const *)in, out, &d) < 0)
                goto fail;
            whole[r] = (now_s() - t0) * 1e3;
            memcpy(t.samples + (size_t)r * (size_t)g->nnodes, t.cur,
                   (size_t)g->nnodes * sizeof *t.cur);
        }
        oqc_exec_set_hook(e, NULL, NULL);
        report_per_node(g, &t, runs, o->per_node, median(whole, runs));
        free(t.cur);
        free(t.samples);
        free(whole);
    }
    oqc_exec_free(e);
    oqc_diag_free(&d);
    return 0;
fail:
    fprintf(stderr, "%s", d.buf ? d.buf : "fp32_latency: run failed\n");
    oqc_exec_free(e);
    oqc_diag_free(&d);
    return -1;
}

int main(int argc, char **argv) {
    Opts o;
    if (parse_args(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    OqcDiag d;
    oqc_diag_init(&d);
    double t0 = now_s();
    OqcGraph *g = oqc_prepare(o.model, NULL, 0, 1, &d);
    double load_ms = (now_s() - t0) * 1e3;
    int loaded_nodes = g ? g->nnodes : 0;
    if (g && o.passes && oqc_run_passes(g, NULL, NULL, NULL, NULL, &d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (!g) {
        fprintf(stderr, "%s", d.buf ? d.buf : "fp32_latency: cannot load model\n");
        oqc_diag_free(&d);
        return 1;
    }
    void **in = calloc((size_t)g->ninputs + 1, sizeof *in);
    void **out = calloc((size_t)g->noutputs + 1, sizeof *out);
    if (!in || !out)
        return 1;
    printf("%s: %d nodes", o.model, loaded_nodes);
    if (o.passes)
        printf(", %d after the pass pipeline", g->nnodes);
    printf(", %d input(s), load+shape inference %.1f ms\n", g->ninputs, load_ms);
    for (int i = 0; i < g->ninputs; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        size_t bytes = (size_t)oqc_shape_numel(&t->shape) * oqcf_dtype_size(t->dtype);
        in[i] = aligned_alloc(64, ((bytes ? bytes : 1) + 63) / 64 * 64);
        if (!in[i])
            return 1;
        fill_input(t, in[i], 12345u + (uint32_t)i);
        char s[96];
        printf("  input %s %s[%s]\n", t->name, oqc_dtype_name(t->dtype),
               oqc_shape_str(&t->shape, s, sizeof s));
    }
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        size_t bytes = (size_t)oqc_shape_numel(&t->shape) * oqcf_dtype_size(t->dtype);
        out[i] = malloc(bytes ? bytes : 1);
        if (!out[i])
            return 1;
    }
    int rc = 0;
    for (int k = 0; k < o.nthreads; k++)
        if (bench_threads(g, &o, o.threads[k], in, out) < 0)
            rc = 1;
    for (int i = 0; i < g->ninputs; i++)
        free(in[i]);
    for (int i = 0; i < g->noutputs; i++)
        free(out[i]);
    free(in);
    free(out);
    oqc_graph_free(g);
    oqc_diag_free(&d);
    return rc;
}
