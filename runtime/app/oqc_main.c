/* oqc_main.c - a command-line driver for a model emitted by oqc: `oqc compile --main`
 * writes it next to the model as main.c (with main_hooks.h and a Makefile), and
 * `oqc bench` builds and runs it.  Not part of liboqc, nor of the model's NAME.mk.
 *
 * Built with the model (its header and prefix given as macros; the Makefile does it):
 *   cc -std=c99 -O2 -ffp-contract=off -DOQC_MODEL_HEADER='"NAME.h"' -DOQC_MODEL_PREFIX=NAME
 *      -DOQC_LAYER_HOOKS='"main_hooks.h"' -I. main.c NAME.c ... -lm -o NAME_main
 * Built with -DOQC_MAIN_IMAGES and oqc_image.c (a model compiled with --preprocess; the
 * Makefile does it, linking -ljpeg -lpng), it also takes images.
 * Usage:
 *   NAME_main [-o OUT.npy] [FILE...]
 *                                  runs every sample of each FILE (float32 .npy, or raw
 *                                  float32: whole samples of the first input; with
 *                                  images, a JPEG/PNG file or a folder of them, read at
 *                                  every depth in sorted name order and preprocessed as
 *                                  NAME_PREPROCESS says) and prints the first output of
 *                                  each (the top 5 of a classifier) and the time of each
 *                                  run; -o also writes the first outputs of all samples
 *                                  as float32 .npy [S, size]
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
#include <sys/stat.h>
#ifdef OQC_MAIN_IMAGES
#include <dirent.h>

#include "oqc_image.h"
#endif

#define OQC_MAIN_CAT_(a, b) a##b
#define OQC_MAIN_CAT(a, b) OQC_MAIN_CAT_(a, b)
#define M(x) OQC_MAIN_CAT(OQC_MODEL_PREFIX, x) /* M(_run) -> NAME_run */
/* The threads the layers run on: NAME_THREADS of a model compiled with --threads N (an
 * undefined NAME_THREADS is 0 in #if). */
#if M(_THREADS) > 1
#define RUN_THREADS M(_THREADS)
#else
#define RUN_THREADS 1
#endif
#define OQC_MAIN_STR_(x) #x
#define OQC_MAIN_STR(x) OQC_MAIN_STR_(x)

#define MAX_LAYERS 4096
#ifdef OQC_MAIN_IMAGES
#define USAGE                                                                              \
    "usage: %s [--bench N [--warmup W] [--times FILE]] [-o OUT.npy] "                     \
    "[FILE.npy|FILE.raw|IMAGE|DIR...]\n"
#else
#define USAGE "usage: %s [--bench N [--warmup W] [--times FILE]] [-o OUT.npy] [FILE.npy|FILE.raw...]\n"
#endif

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

#ifdef OQC_MAIN_IMAGES
/* ------------------------------------------------------------------------- images */

/* The image at path as the model's float input x (NAME_PREPROCESS: the pixels of
 * oqc_image.c, then ToTensor and Normalize as oqc computes them); 0, or 1 with a message. */
static int read_image(const char *path, float *x) {
    static const OqcImgSpec spec = {M(_PP_RESIZE), M(_PP_RESIZE_H), M(_PP_RESIZE_W),
                                    M(_PP_CROP_H), M(_PP_CROP_W), M(_PP_COLOR), M(_PP_NHWC)};
    static const float mean[3] = M(_PP_MEAN), std[3] = M(_PP_STD);
    size_t n = in_size[0], plane = (size_t)M(_PP_HEIGHT) * M(_PP_WIDTH), i;
    unsigned char *px = malloc(n);
    char err[512];
    if (!px || oqc_img_pixels(path, &spec, M(_PP_CHANNELS), M(_PP_HEIGHT), M(_PP_WIDTH), px,
                              err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", path, px ? err : "out of memory");
        free(px);
        return 1;
    }
    for (i = 0; i < n; i++) {
        size_t c = M(_PP_NHWC) ? i % M(_PP_CHANNELS) : i / plane;
        x[i] = oqc_img_value(px[i], M(_PP_MUL), M(_PP_DIV), mean[c], std[c]);
    }
    free(px);
    return 0;
}

/* A growing list of paths. */
typedef struct Paths {
    char **v;      /* malloc'd paths */
    size_t n, cap; /* used, allocated */
} Paths;

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_path(Paths *l, char *p) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return 1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = p;
    return 0;
}

/* The images under dir (at every depth, each level in name order as oqc reads a folder;
 * names starting with '.' skipped), appended to *out; 0, or 1 with a message. */
static int list_images(const char *dir, Paths *out, int depth) {
    Paths names = {NULL, 0, 0};
    DIR *dp = opendir(dir);
    struct dirent *e;
    size_t i;
    int rc = 0;
    if (!dp || depth > 32) {
        fprintf(stderr, "%s: %s\n", dir, dp ? "folders nested too deep" : "cannot list the folder");
        if (dp)
            closedir(dp);
        return 1;
    }
    while (rc == 0 && (e = readdir(dp)) != NULL) {
        char *p;
        if (e->d_name[0] == '.')
            continue;
        p = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!p || push_path(&names, p)) {
            fprintf(stderr, "%s: out of memory\n", dir);
            free(p);
            rc = 1;
            break;
        }
        sprintf(p, "%s/%s", dir, e->d_name);
    }
    closedir(dp);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_name);
    for (i = 0; i < names.n; i++) {
        struct stat st;
        if (rc == 0 && stat(names.v[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = list_images(names.v[i], out, depth + 1);
        } else if (rc == 0 && oqc_img_is_image_path(names.v[i])) {
            rc = push_path(out, names.v[i]);
            if (rc == 0)
                continue;
            fprintf(stderr, "%s: out of memory\n", dir);
        }
        free(names.v[i]);
    }
    free(names.v);
    return rc;
}
#endif

/* ----------------------------------------------------------------------- running */

static void *arena;
static float *ins[M(_NUM_INPUTS)], *outs[M(_NUM_OUTPUTS)];

static int run(void) {
    int st = M(_run_multi)((const float *const *)ins, outs, arena);
    if (st != 0)
        fprintf(stderr, "%s_run_multi failed with status %d\n", OQC_MAIN_STR(OQC_MODEL_PREFIX), st);
    return st;
}

static void print_output(size_t sample, const char *path) {
    const float *y = outs[0];
    size_t n = out_size[0], i, k;
    printf("sample %lu%s%s%s: %s:", (unsigned long)sample, path ? " (" : "", path ? path : "",
           path ? ")" : "", M(_OUTPUT0_NAME));
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
static const char *out_path;
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

/* Runs the model on x (in_size[0] floats, sample `index` of a file, or the image at
 * path), prints the first output with the time and appends it to -o; with --bench
 * (runs > 0) x only becomes the timed input, the first such sample. */
static int sample(const float *x, size_t index, const char *path, long runs) {
    static int bench_input;
    double t0;
    int rc;
    if (runs > 0) {
        if (!bench_input)
            memcpy(ins[0], x, in_size[0] * sizeof *x);
        bench_input = 1;
        return 0;
    }
    memcpy(ins[0], x, in_size[0] * sizeof *x);
    t0 = now_ms();
    rc = run();
    if (rc == 0) {
        printf("(%.4f ms) ", now_ms() - t0);
        print_output(index, path);
        if (out_npy && fwrite(outs[0], sizeof(float), out_size[0], out_npy) != out_size[0])
            rc = 1;
        out_rows++;
    }
    return rc;
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
    if (RUN_THREADS == 1)
        printf("latency over %ld runs (after %ld warm-up), single thread: ", runs, warmup);
    else
        printf("latency over %ld runs (after %ld warm-up), %d threads: ", runs, warmup,
               RUN_THREADS);
    printf("median %.4f ms, min %.4f ms, max %.4f ms\n", median, t[0], t[runs - 1]);
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

/* Reads the options (-o, --times, --bench, --warmup): the index of the first file
 * argument, or -1 after an error message. */
static int parse_args(int argc, char **argv, long *runs, long *warmup) {
    int a;
    for (a = 1; a < argc && argv[a][0] == '-'; a += 2) {
        char *end;
        if (!strcmp(argv[a], "-o") && a + 1 < argc) {
            out_path = argv[a + 1];
            out_npy = fopen(out_path, "wb");
            if (!out_npy || npy_header(out_npy, 0) != 0) {
                fprintf(stderr, "%s: cannot write\n", argv[a + 1]);
                return -1;
            }
            continue;
        }
        if (!strcmp(argv[a], "--times") && a + 1 < argc) {
            times = fopen(argv[a + 1], "w");
            if (!times) {
                fprintf(stderr, "%s: cannot write\n", argv[a + 1]);
                return -1;
            }
            continue;
        }
        long v = a + 1 < argc ? strtol(argv[a + 1], &end, 10) : -1;
        if (a + 1 >= argc || *end || v < 0 || (strcmp(argv[a], "--bench") && strcmp(argv[a], "--warmup"))) {
            fprintf(stderr, USAGE, argv[0]);
            return -1;
        }
        if (!strcmp(argv[a], "--bench"))
            *runs = v;
        else
            *warmup = v;
    }
    return a;
}

/* The arena, the fixed pseudo-random inputs and the outputs: 0, or 1 when out of
 * memory. */
static int alloc_io(void) {
    int k;
    size_t i;
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
    return 0;
}

/* Runs the model on every sample of file argument arg (a .npy or raw float file; with
 * OQC_MAIN_IMAGES an image or a folder of them): 0, or 1 after an error message. */
static int run_arg(char *arg, long runs) {
    size_t n, s;
    float *x;
    int rc = 0;
#ifdef OQC_MAIN_IMAGES
    struct stat st;
    Paths l = {NULL, 0, 0};
    int dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
    if (dir) {
        rc = list_images(arg, &l, 0);
        if (rc == 0 && l.n == 0) {
            fprintf(stderr, "%s: no JPEG or PNG image in the folder\n", arg);
            rc = 1;
        }
    } else if (oqc_img_is_image_path(arg)) {
        rc = push_path(&l, arg);
    }
    if (dir || l.v) { /* images: one sample each */
        float *img = malloc(in_size[0] * sizeof *img + 1);
        if (!img)
            rc = 1;
        for (s = 0; s < l.n; s++) {
            if (rc == 0 && (rc = read_image(l.v[s], img)) == 0)
                rc = sample(img, s, l.v[s], runs);
            if (l.v[s] != arg)
                free(l.v[s]);
        }
        free(l.v);
        free(img);
        return rc;
    }
#else
    {
        struct stat st;
        unsigned char magic[8] = {0};
        FILE *f = fopen(arg, "rb");
        int dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
        size_t got = f && !dir ? fread(magic, 1, sizeof magic, f) : 0;
        if (f)
            fclose(f);
        if (dir || (got >= 3 && !memcmp(magic, "\xff\xd8\xff", 3)) ||
            (got == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8))) {
            fprintf(stderr, "%s: %s: this driver reads images only for a model compiled "
                            "with --preprocess, built with IMAGES=1\n", arg,
                    dir ? "a folder" : "an image");
            return 1;
        }
    }
#endif
    x = read_floats(arg, &n);
    if (!x)
        return 1;
    if (n == 0 || n % in_size[0]) {
        fprintf(stderr, "%s: %lu values are not whole samples of %lu\n", arg,
                (unsigned long)n, (unsigned long)in_size[0]);
        free(x);
        return 1;
    }
    for (s = 0; s < n / in_size[0] && rc == 0; s++)
        rc = sample(x + s * in_size[0], s, NULL, runs);
    free(x);
    return rc;
}

int main(int argc, char **argv) {
    long runs = 0, warmup = 10;
    int a, rc = 0;
    sizes();
    a = parse_args(argc, argv, &runs, &warmup);
    if (a < 0 || alloc_io() != 0)
        return 1;
    if (a == argc && runs == 0) {
        fprintf(stderr, USAGE, argv[0]);
        return 1;
    }
    printf("%s: arena %lu bytes, %d input(s), %d output(s)\n", OQC_MAIN_STR(OQC_MODEL_PREFIX),
           (unsigned long)M(_ARENA_BYTES), M(_NUM_INPUTS), M(_NUM_OUTPUTS));
    for (; a < argc && rc == 0; a++)
        rc = run_arg(argv[a], runs);
    if (out_npy && rc != 0) { /* no partial -o file */
        fclose(out_npy);
        remove(out_path);
    } else if (out_npy && (npy_header(out_npy, out_rows) != 0 || fclose(out_npy) != 0)) {
        fprintf(stderr, "%s: error writing\n", out_path);
        remove(out_path);
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
