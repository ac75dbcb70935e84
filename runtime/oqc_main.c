/* oqc_main.c - a command-line driver for a model emitted by oqc: `oqc compile --main`
 * writes it next to the model as main.c (with main_hooks.h and a Makefile), and
 * `oqc bench` builds and runs it.  Not part of liboqc, nor of the model's NAME.mk.
 *
 * Built with the model (its header and prefix given as macros; the Makefile does it):
 *   cc -std=c99 -O2 -ffp-contract=off -DOQC_MODEL_HEADER='"NAME.h"' -DOQC_MODEL_PREFIX=NAME
 *      -DOQC_LAYER_HOOKS='"main_hooks.h"' -I. main.c NAME.c ... -lm -o NAME_main
 * Usage:
 *   NAME_main [-o OUT.npy] [FILE...]
 *                                  runs every sample of each FILE (float32 .npy, or raw
 *                                  float32: whole samples of the first input) and prints
 *                                  the first output of each (the top 5 of a classifier)
 *                                  and the time of each run; -o also writes the first
 *                                  outputs of all samples as float32 .npy [S, size]
 *   NAME_main --bench N [--warmup W] [FILE]
 *                                  W untimed runs, then N timed runs of one sample (the
 *                                  file's first, else a fixed pseudo-random input in
 *                                  [-1, 1]): median and minimum latency, and, when built
 *                                  with the hooks, a per-layer profile of N more runs.
 *   NAME_main --bench N --times FILE ...
 *                                  also writes the figures to FILE for programs (oqc
 *                                  bench --json), one record a line, numbers with 17
 *                                  significant digits:
 *                                    latency RUNS WARMUP MEDIAN_MS MIN_MS MAX_MS
 *                                    layer INDEX MACS MEAN_MS PERCENT OP NAME
 *                                  (NAME is the rest of the line).
 * Single-threaded; the model runs in one arena of NAME_ARENA_BYTES from posix_memalign.
 * Exit status 0, or 1 with a message on stderr. */
#define _POSIX_C_SOURCE 200112L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include OQC_MODEL_HEADER

#define OQC_MAIN_CAT_(a, b) a##b
#define OQC_MAIN_CAT(a, b) OQC_MAIN_CAT_(a, b)
#define M(x) OQC_MAIN_CAT(OQC_MODEL_PREFIX, x) /* M(_run) -> NAME_run */
#define OQC_MAIN_STR_(x) #x
#define OQC_MAIN_STR(x) OQC_MAIN_STR_(x)

#define MAX_LAYERS 4096

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------ per-layer profile */

/* One layer's accumulated time (the hooks of NAME.c, when built with main_hooks.h). */
typedef struct Layer {
    const char *name, *op;   /* node name and op type */
    long long macs;          /* multiply-adds per run */
    double ms;               /* total time over the profiled runs */
} Layer;

static Layer layers[MAX_LAYERS];
static int profiling;        /* the hooks record only while set */
static FILE *times;          /* --times FILE, or NULL */
static double layer_t0;      /* start of the current layer */

void oqc_main_layer_begin(int index) {
    (void)index;
    if (profiling)
        layer_t0 = now_ms();
}

void oqc_main_layer_end(int index, const char *name, const char *op, long long macs) {
    if (!profiling || index < 0 || index >= MAX_LAYERS)
        return;
    layers[index].ms += now_ms() - layer_t0;
    layers[index].name = name;
    layers[index].op = op;
    layers[index].macs = macs;
}

/* ------------------------------------------------------------------ input files */

static size_t in_size[M(_NUM_INPUTS)];
static size_t out_size[M(_NUM_OUTPUTS)];

static void sizes(void) {
    static const size_t is[] = M(_INPUT_SIZES), os[] = M(_OUTPUT_SIZES);
    memcpy(in_size, is, sizeof is);
    memcpy(out_size, os, sizeof os);
}

/* The float32 values of path (.npy version 1-3, little-endian '<f4', C order; any other
 * name: raw float32); *n receives their count, NULL (with a message) on error. */
static float *read_floats(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char pre[12];
    long start = 0, end;
    size_t len = strlen(path), count;
    float *x;
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return NULL;
    }
    if (len > 4 && !strcmp(path + len - 4, ".npy")) {
        size_t hlen;
        char *h;
        if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
            goto bad;
        hlen = pre[8] | (size_t)pre[9] << 8;
        start = 10;
        if (pre[6] >= 2) {
            if (fread(pre + 10, 1, 2, f) != 2)
                goto bad;
            hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
            start = 12;
        }
        h = malloc(hlen + 1);
        if (!h || fread(h, 1, hlen, f) != hlen) {
            free(h);
            goto bad;
        }
        h[hlen] = 0;
        if (!strstr(h, "'descr': '<f4'") || !strstr(h, "'fortran_order': False")) {
            free(h);
            fprintf(stderr, "%s: not a C-order float32 .npy\n", path);
            fclose(f);
            return NULL;
        }
        free(h);
        start += (long)hlen;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < start || fseek(f, start, SEEK_SET) != 0)
        goto bad;
    count = (size_t)(end - start) / sizeof(float);
    x = malloc(count ? count * sizeof *x : 1);
    if (!x || fread(x, sizeof *x, count, f) != count) {
        free(x);
        goto bad;
    }
    fclose(f);
    *n = count;
    return x;
bad:
    fprintf(stderr, "%s: unreadable or truncated\n", path);
    fclose(f);
    return NULL;
}

/* ----------------------------------------------------------------------- running */

static void *arena;
static float *ins[M(_NUM_INPUTS)], *outs[M(_NUM_OUTPUTS)];

static int run(void) {
    int st = M(_run_multi)((const float *const *)ins, outs, arena);
    if (st != 0)
        fprintf(stderr, "%s_run_multi failed with status %d\n", OQC_MAIN_STR(OQC_MODEL_PREFIX), st);
    return st;
}

static void print_output(size_t sample) {
    const float *y = outs[0];
    size_t n = out_size[0], i, k;
    printf("sample %lu: %s:", (unsigned long)sample, M(_OUTPUT0_NAME));
    if (n <= 16) {
        for (i = 0; i < n; i++)
            printf(" %.6g", (double)y[i]);
    } else { /* the top 5 */
        int best[5] = {-1, -1, -1, -1, -1};
        for (k = 0; k < 5 && k < n; k++) {
            for (i = 0; i < n; i++) {
                size_t j;
                int taken = 0;
                for (j = 0; j < k; j++)
                    taken |= best[j] == (int)i;
                if (!taken && (best[k] < 0 || y[i] > y[best[k]]))
                    best[k] = (int)i;
            }
            printf(" [%d] %.6g", best[k], (double)y[best[k]]);
        }
    }
    printf("\n");
}

/* Appends the first output to the .npy being written (header patched at the end). */
static FILE *out_npy;
static unsigned long out_rows;

static int npy_header(FILE *f, unsigned long rows) {
    char h[118];
    int len = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lu, %lu), }",
                       rows, (unsigned long)out_size[0]);
    while (len < 117)
        h[len++] = ' ';
    h[len++] = '\n';
    return fseek(f, 0, SEEK_SET) == 0 && fwrite("\x93NUMPY\x01\x00\x76\x00", 1, 10, f) == 10 &&
           fwrite(h, 1, (size_t)len, f) == (size_t)len ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(long runs, long warmup) {
    double *t = malloc((size_t)runs * sizeof *t), total = 0, median;
    long i;
    int k, any = 0;
    if (!t)
        return 1;
    for (i = 0; i < warmup; i++)
        if (run() != 0)
            return 1;
    for (i = 0; i < runs; i++) {
        double t0 = now_ms();
        if (run() != 0)
            return 1;
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    median = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    printf("latency over %ld runs (after %ld warm-up), single thread: median %.4f ms, "
           "min %.4f ms, max %.4f ms\n", runs, warmup, median, t[0], t[runs - 1]);
    if (times)
        fprintf(times, "latency %ld %ld %.17g %.17g %.17g\n", runs, warmup, median, t[0],
                t[runs - 1]);
    free(t);
    profiling = 1;
    for (i = 0; i < runs; i++)
        if (run() != 0)
            return 1;
    profiling = 0;
    for (k = 0; k < MAX_LAYERS; k++)
        total += layers[k].ms;
    for (k = 0; k < MAX_LAYERS; k++) {
        const Layer *l = &layers[k];
        double ms = l->ms / (double)runs;
        if (!l->name)
            continue;
        if (!any)
            printf("per-layer profile (mean of %ld runs):\n  %5s %-32s %-18s %10s %6s %10s\n",
                   runs, "node", "name", "op", "ms", "%", "GMAC/s");
        any = 1;
        printf("  %5d %-32.32s %-18.18s %10.4f %6.2f", k, l->name, l->op, ms,
               total > 0 ? 100.0 * l->ms / total : 0.0);
        if (l->macs > 0 && ms > 0)
            printf(" %10.2f", (double)l->macs / (ms * 1e6));
        printf("\n");
        if (times)
            fprintf(times, "layer %d %lld %.17g %.17g %s %s\n", k, l->macs, ms,
                    total > 0 ? 100.0 * l->ms / total : 0.0, l->op, l->name);
    }
    return 0;
}

int main(int argc, char **argv) {
    long runs = 0, warmup = 10;
    int a, k, rc = 0;
    size_t i;
    sizes();
    for (a = 1; a < argc && argv[a][0] == '-'; a += 2) {
        char *end;
        if (!strcmp(argv[a], "-o") && a + 1 < argc) {
            out_npy = fopen(argv[a + 1], "wb");
            if (!out_npy || npy_header(out_npy, 0) != 0) {
                fprintf(stderr, "%s: cannot write\n", argv[a + 1]);
                return 1;
            }
            continue;
        }
        if (!strcmp(argv[a], "--times") && a + 1 < argc) {
            times = fopen(argv[a + 1], "w");
            if (!times) {
                fprintf(stderr, "%s: cannot write\n", argv[a + 1]);
                return 1;
            }
            continue;
        }
        long v = a + 1 < argc ? strtol(argv[a + 1], &end, 10) : -1;
        if (a + 1 >= argc || *end || v < 0 || (strcmp(argv[a], "--bench") && strcmp(argv[a], "--warmup"))) {
            fprintf(stderr, "usage: %s [--bench N [--warmup W] [--times FILE]] [-o OUT.npy] "
                        "[FILE.npy|FILE.raw...]\n",
                    argv[0]);
            return 1;
        }
        if (!strcmp(argv[a], "--bench"))
            runs = v;
        else
            warmup = v;
    }
    if (posix_memalign(&arena, 64, M(_ARENA_BYTES) ? M(_ARENA_BYTES) : 64) != 0)
        return 1;
    for (k = 0; k < M(_NUM_INPUTS); k++) {
        uint32_t s = 12345u + (uint32_t)k;
        ins[k] = malloc(in_size[k] * sizeof(float) + 1);
        if (!ins[k])
            return 1;
        for (i = 0; i < in_size[k]; i++) { /* a fixed pseudo-random input in [-1, 1] */
            s = s * 1664525u + 1013904223u;
            ins[k][i] = (float)(s >> 8) / 8388608.0f - 1.0f;
        }
    }
    for (k = 0; k < M(_NUM_OUTPUTS); k++)
        if (!(outs[k] = malloc(out_size[k] * sizeof(float) + 1)))
            return 1;
    if (a == argc && runs == 0) {
        fprintf(stderr, "usage: %s [--bench N [--warmup W] [--times FILE]] [-o OUT.npy] "
                        "[FILE.npy|FILE.raw...]\n",
                argv[0]);
        return 1;
    }
    printf("%s: arena %lu bytes, %d input(s), %d output(s)\n", OQC_MAIN_STR(OQC_MODEL_PREFIX),
           (unsigned long)M(_ARENA_BYTES), M(_NUM_INPUTS), M(_NUM_OUTPUTS));
    for (; a < argc && rc == 0; a++) {
        size_t n, s;
        float *x = read_floats(argv[a], &n), *in0 = ins[0];
        if (!x)
            return 1;
        if (n == 0 || n % in_size[0]) {
            fprintf(stderr, "%s: %lu values are not whole samples of %lu\n", argv[a],
                    (unsigned long)n, (unsigned long)in_size[0]);
            free(x);
            return 1;
        }
        for (s = 0; s < n / in_size[0] && rc == 0; s++) {
            double t0;
            ins[0] = x + s * in_size[0];
            if (runs > 0) { /* --bench: the file's first sample */
                memcpy(in0, ins[0], in_size[0] * sizeof(float));
                break;
            }
            t0 = now_ms();
            rc = run();
            if (rc == 0) {
                printf("(%.4f ms) ", now_ms() - t0);
                print_output(s);
                if (out_npy && fwrite(outs[0], sizeof(float), out_size[0], out_npy) != out_size[0])
                    rc = 1;
                out_rows++;
            }
        }
        ins[0] = in0;
        free(x);
    }
    if (out_npy && (npy_header(out_npy, out_rows) != 0 || fclose(out_npy) != 0)) {
        fprintf(stderr, "error writing the -o file\n");
        rc = 1;
    }
    if (rc == 0 && runs > 0)
        rc = bench(runs, warmup);
    if (times && fclose(times) != 0) {
        fprintf(stderr, "error writing the --times file\n");
        rc = 1;
    }
    return rc != 0;
}
