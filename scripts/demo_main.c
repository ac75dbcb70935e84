/* demo_main.c - the main job's runner (`make demo`): a model emitted by `oqc compile`
 * on a labelled test set.  Built together with the emitted files:
 *   cc -O2 -I OUTDIR -DOQC_MODEL_HEADER='"fashion.h"' -DOQC_MODEL_PREFIX=fashion \
 *      scripts/demo_main.c OUTDIR/*.c -lm -o demo
 *   demo X.npy Y.npy
 *   demo --idx IMAGES LABELS
 * X.npy: float32 samples of PREFIX_INPUT_SIZE values each (the .npy header is parsed
 * for its length only); Y.npy: int64 class ids.  --idx: MNIST-format files (as
 * gunzipped from Debian's dataset-fashion-mnist) of 8-bit images of PREFIX_INPUT_SIZE
 * pixels and their labels, normalised as models/fashion/make_fashion.py does, in float:
 * (x / 255 - 0.2860) / 0.3530.  Prints the top-1 accuracy of the first output, the arena
 * size and the median per-inference latency over 5 passes of the set (one pass with
 * --idx; one thread, the caller's arena), one line each, for scripts/demo.sh to
 * tabulate. */
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

/* The data of a .npy file: *n bytes after the header (malloc'd), NULL on error. */
static void *npy_data(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char h[10];
    long end;
    void *p = NULL;
    if (!f)
        return NULL;
    if (fread(h, 1, 10, f) == 10 && !memcmp(h, "\x93NUMPY", 6) && !fseek(f, 0, SEEK_END) &&
        (end = ftell(f)) > 0) {
        size_t hl = 10 + (size_t)(h[8] | h[9] << 8);
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

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* An MNIST-format file (idx: magic 0x0801 labels / 0x0803 images, big-endian dims) read
 * whole: its n items of `item` bytes each, after the header; NULL on any mismatch. */
static unsigned char *idx_data(const char *path, uint32_t magic, size_t item, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char h[16], *p = NULL;
    size_t hl = magic == 0x0803 ? 16 : 8;
    if (!f)
        return NULL;
    if (fread(h, 1, hl, f) == hl && be32(h) == magic &&
        (magic != 0x0803 || (size_t)be32(h + 8) * be32(h + 12) == item)) {
        *n = be32(h + 4);
        p = malloc(*n * item ? *n * item : 1);
        if (p && fread(p, 1, *n * item, f) != *n * item) {
            free(p);
            p = NULL;
        }
    }
    fclose(f);
    return p;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t nx = 0, ny = 0;
    int idx = argc == 4 && !strcmp(argv[1], "--idx"), passes = idx ? 1 : 5;
    float *x = NULL;
    int64_t *y = NULL;
    if (argc != 3 && !idx) {
        fprintf(stderr, "usage: %s X.npy Y.npy | --idx IMAGES LABELS\n", argv[0]);
        return 2;
    }
    if (idx) {   /* 8-bit images and labels, to float32 and int64 */
        size_t ni = 0, nl = 0, i;
        unsigned char *im = idx_data(argv[2], 0x0803, M(_INPUT_SIZE), &ni);
        unsigned char *lb = idx_data(argv[3], 0x0801, 1, &nl);
        if (im && lb && ni == nl && (x = malloc(sizeof(float) * ni * M(_INPUT_SIZE) + 1)) &&
            (y = malloc(sizeof(int64_t) * nl + 1))) {
            for (i = 0; i < ni * M(_INPUT_SIZE); i++)
                x[i] = ((float)im[i] / 255.0f - 0.2860f) / 0.3530f;
            for (i = 0; i < nl; i++)
                y[i] = lb[i];
            nx = sizeof(float) * ni * M(_INPUT_SIZE);
            ny = sizeof(int64_t) * nl;
        }
        free(im);
        free(lb);
    } else {
        x = npy_data(argv[1], &nx);
        y = npy_data(argv[2], &ny);
    }
    if (!x || !y || nx % (sizeof(float) * M(_INPUT_SIZE)) ||
        ny / sizeof(int64_t) != nx / (sizeof(float) * M(_INPUT_SIZE))) {
        fprintf(stderr, "%s: cannot read %s / %s (or sizes do not match)\n", argv[0],
                argv[argc - 2], argv[argc - 1]);
        return 1;
    }
    size_t S = ny / sizeof(int64_t), correct = 0;
    static float out[M(_OUTPUT_SIZE)];
    void *arena = NULL;
    if (posix_memalign(&arena, 64, M(_ARENA_BYTES) ? M(_ARENA_BYTES) : 64))
        return 1;
    double t[5];
    for (int pass = 0; pass < passes; pass++) {
        double t0 = now();
        for (size_t s = 0; s < S; s++) {
            if (M(_run)(x + s * M(_INPUT_SIZE), out, arena)) {
                fprintf(stderr, "%s: the model failed on sample %zu\n", argv[0], s);
                return 1;
            }
            if (pass == 0) {
                size_t best = 0;
                for (size_t c = 1; c < M(_OUTPUT_SIZE); c++)
                    if (out[c] > out[best])
                        best = c;
                correct += (int64_t)best == y[s];
            }
        }
        t[pass] = (now() - t0) / (double)S;
    }
    qsort(t, (size_t)passes, sizeof t[0], cmp_double);
    printf("accuracy %.4f %zu %zu\n", (double)correct / (double)S, correct, S);
    printf("arena %lu\n", (unsigned long)M(_ARENA_BYTES));
    printf("latency_ms %.4f\n", 1e3 * t[passes / 2]);
    free(arena);
    free(x);
    free(y);
    return 0;
}
