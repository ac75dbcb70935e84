/* emitted_latency.c - latency of a model emitted by `oqc compile` (INT8 or FP32), one
 * thread, batch 1; a benchmark helper for bench/run.sh, not a test.  Built together
 * with the emitted files, whose header and prefix are given as macros:
 *   cc -std=c99 -O2 -march=native -ffp-contract=off -I OUTDIR \
 *      -DOQC_MODEL_HEADER='"resnet18.h"' -DOQC_MODEL_PREFIX=resnet18 \
 *      bench/emitted_latency.c OUTDIR/NAME.c (and every other .c of OUTDIR) -lm -o lat
 *   lat [--data X.npy] [--save OUT.npy] [--limit N] [--runs 20] [--warmup 3] [--min-ms 1000]
 *
 * --data X.npy: float32 samples of PREFIX_INPUT_SIZE values (samples on the first axis;
 * the header is parsed for its length only); the first sample is the timed input.
 * Without it the input is a deterministic pattern (a gradient plus LCG noise, roughly
 * ImageNet-normalised: the INT8 and FP32 kernels' speed does not depend on the values).
 * --save OUT.npy: runs the first N samples (--limit, default all) and writes the first
 * output of each as a float32 [S, PREFIX_OUTPUT_SIZE] .npy: these are oqc's own INT8 (or
 * FP32) bits, the reference bench/ort_check_fused.js compares ONNX Runtime with.
 * Timing: --warmup untimed runs, then at least --runs timed runs and at least --min-ms
 * of them (at most 10 x --runs), each the wall time of one PREFIX_run with a caller
 * arena of PREFIX_ARENA_BYTES (64-byte aligned).  Prints
 *   RESULT model=PREFIX threads=T runs=R median_ms=X min_ms=Y
 * which bench/run.sh reads like the other benchmark programs' lines.  T is PREFIX_THREADS
 * for a model compiled with `oqc compile --threads N` (built with -std=c11 -pthread; its
 * layers run on the emitted code's default pool of N threads), else 1.
 *
 * Per-layer times: built with -DOQC_LAYER_HOOKS='"layer_hooks.h"' -I bench (the emitted
 * .c files too), every timed run also times each layer through the emitted code's
 * OQC_LAYER_BEGIN/END hooks, and --layers N prints the N slowest layers plus one line per
 * layer that has multiply-adds (Conv, Gemm, MatMul):
 *   LAYER index=I op=OP macs=M median_ms=X min_ms=Y name=NAME
 * (the hooks' own cost, two clock reads per layer, is included in the totals). */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include OQC_MODEL_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define M(x) CAT(OQC_MODEL_PREFIX, x)
#if M(_THREADS) > 1   /* (an undefined PREFIX_THREADS is 0 here) */
#define OQC_THREADS M(_THREADS)
#else
#define OQC_THREADS 1
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

#ifdef OQC_LAYER_HOOKS
#include "layer_hooks.h"
#define MAX_LAYERS 8192
static struct {
    const char *name, *op;
    long long macs;
    double t0, *ms;   /* ms[run] */
} layer[MAX_LAYERS];
static long layer_run = -1, layer_cap;   /* the timed run in progress (-1: none) */

void oqc_bench_layer_begin(int index) {
    if (index >= 0 && index < MAX_LAYERS)
        layer[index].t0 = now_ms();
}

void oqc_bench_layer_end(int index, const char *name, const char *op, long long macs) {
    double t = now_ms();
    if (index < 0 || index >= MAX_LAYERS || layer_run < 0)
        return;
    if (!layer[index].ms) {
        layer[index].ms = calloc((size_t)layer_cap, sizeof(double));
        if (!layer[index].ms) {
            fprintf(stderr, "emitted_latency: out of memory\n");
            exit(1);
        }
        layer[index].name = name;
        layer[index].op = op;
        layer[index].macs = macs;
    }
    layer[index].ms[layer_run] += t - layer[index].t0;
}
#endif

/* The data part of a .npy file (malloc'd), *n its bytes; NULL on error. */
static void *npy_data(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char h[12];
    long end;
    void *p = NULL;
    if (!f)
        return NULL;
    if (fread(h, 1, 12, f) == 12 && !memcmp(h, "\x93NUMPY", 6) && !fseek(f, 0, SEEK_END) &&
        (end = ftell(f)) > 0) {
        size_t hl = h[6] >= 2 ? 12 + (size_t)(h[8] | h[9] << 8 | (size_t)h[10] << 16 |
                                             (size_t)h[11] << 24)
                              : 10 + (size_t)(h[8] | h[9] << 8);
        *n = (size_t)end - hl;
        p = malloc(*n ? *n : 1);
        if (p && (fseek(f, (long)hl, SEEK_SET) || fread(p, 1, *n, f) != *n)) {
            free(p);
            p = NULL;
        }
    }
    fclose(f);
    return p;
}

static int write_npy(const char *path, const float *y, size_t rows, size_t cols) {
    char h[128];
    int len = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }",
                       rows, cols);
    int pad = (64 - (10 + len + 1) % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    unsigned hl = (unsigned)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(hl & 255), f);
    fputc((int)(hl >> 8), f);
    fwrite(h, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(y, sizeof *y, rows * cols, f);
    return fclose(f);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *data = NULL, *save = NULL;
    long limit = 0, runs = 20, warmup = 3;
    double min_ms = 1000;
    long layers = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "emitted_latency: option %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--save")) save = v;
        else if (!strcmp(a, "--limit")) limit = atol(v);
        else if (!strcmp(a, "--runs")) runs = atol(v);
        else if (!strcmp(a, "--warmup")) warmup = atol(v);
        else if (!strcmp(a, "--min-ms")) min_ms = atof(v);
        else if (!strcmp(a, "--layers")) layers = atol(v);
        else {
            fprintf(stderr, "emitted_latency: unknown option %s\n", a);
            return 2;
        }
    }
    size_t nin = M(_INPUT_SIZE), nout = M(_OUTPUT_SIZE), nbytes = 0, samples = 1;
    float *x = NULL;
    if (data) {
        x = npy_data(data, &nbytes);
        samples = nbytes / (nin * sizeof *x);
        if (!x || samples == 0) {
            fprintf(stderr, "emitted_latency: %s: cannot read %zu float32 values\n", data, nin);
            return 1;
        }
    } else {
        x = malloc(nin * sizeof *x);
        uint32_t s = 12345u;
        for (size_t i = 0; i < nin; i++) {
            s = s * 1664525u + 1013904223u;
            float noise = (float)(s >> 8) / 16777216.0f - 0.5f;
            float grad = (float)(i % 224 + (i / 224) % 224) / 449.0f - 0.5f;
            x[i] = 1.6f * grad + 0.6f * noise;
        }
    }
    void *arena = NULL;
    if (posix_memalign(&arena, 64, M(_ARENA_BYTES) ? M(_ARENA_BYTES) : 64) != 0) {
        fprintf(stderr, "emitted_latency: out of memory\n");
        return 1;
    }
    if (save) {
        size_t n = limit > 0 && (size_t)limit < samples ? (size_t)limit : samples;
        float *y = malloc(n * nout * sizeof *y);
        for (size_t s = 0; s < n; s++)
            if (M(_run)(x + s * nin, y + s * nout, arena) != 0) {
                fprintf(stderr, "emitted_latency: run failed on sample %zu\n", s);
                return 1;
            }
        if (write_npy(save, y, n, nout) != 0) {
            fprintf(stderr, "emitted_latency: cannot write %s\n", save);
            return 1;
        }
        free(y);
    }
    float *out = malloc(nout * sizeof *out);
    for (long i = 0; i < warmup; i++)
        if (M(_run)(x, out, arena) != 0) {
            fprintf(stderr, "emitted_latency: run failed\n");
            return 1;
        }
    long cap = 10 * runs, n = 0;
    double *ms = malloc((size_t)(cap + 1) * sizeof *ms), total = 0;
#ifdef OQC_LAYER_HOOKS
    layer_cap = cap + 1;
#endif
    while (n < runs || (total < min_ms && n < cap)) {
#ifdef OQC_LAYER_HOOKS
        layer_run = n;
#endif
        double t0 = now_ms();
        M(_run)(x, out, arena);
        ms[n] = now_ms() - t0;
        total += ms[n++];
    }
#ifdef OQC_LAYER_HOOKS
    layer_run = -1;
    if (layers > 0) {   /* per layer: median and min over the runs */
        static double med[MAX_LAYERS], mn[MAX_LAYERS];
        static int order[MAX_LAYERS];
        int nl = 0;
        for (int i = 0; i < MAX_LAYERS; i++) {
            if (!layer[i].ms)
                continue;
            qsort(layer[i].ms, (size_t)n, sizeof(double), cmp_double);
            med[i] = n % 2 ? layer[i].ms[n / 2] : 0.5 * (layer[i].ms[n / 2 - 1] + layer[i].ms[n / 2]);
            mn[i] = layer[i].ms[0];
            order[nl++] = i;
        }
        for (int a = 1; a < nl; a++)   /* slowest first (insertion sort, stable) */
            for (int b = a; b > 0 && med[order[b]] > med[order[b - 1]]; b--) {
                int t = order[b];
                order[b] = order[b - 1];
                order[b - 1] = t;
            }
        for (int r = 0; r < nl; r++) {
            int i = order[r];
            if (r >= layers && layer[i].macs <= 0)
                continue;
            printf("LAYER index=%d op=%s macs=%lld median_ms=%.4f min_ms=%.4f name=%s\n", i,
                   layer[i].op, layer[i].macs, med[i], mn[i], layer[i].name);
        }
    }
#else
    if (layers > 0)
        fprintf(stderr, "emitted_latency: --layers needs a build with OQC_LAYER_HOOKS\n");
#endif
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    printf("  %s: median %.3f ms, min %.3f ms over %ld runs\n", STR(OQC_MODEL_PREFIX), med,
           ms[0], n);
    printf("RESULT model=%s threads=%d runs=%ld median_ms=%.3f min_ms=%.3f\n",
           STR(OQC_MODEL_PREFIX), OQC_THREADS, n, med, ms[0]);
    free(ms);
    free(out);
    free(x);
    free(arena);
    return 0;
}
