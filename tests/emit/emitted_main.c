/* emitted_main.c - a generic driver for a model emitted by `oqc compile` (test program).
 *
 * Compiled together with an emitted model, whose header and prefix are given as macros:
 *   cc -std=c99 -I OUTDIR -DOQC_MODEL_HEADER='"fashion.h"' -DOQC_MODEL_PREFIX=fashion \
 *      tests/emit/emitted_main.c OUTDIR/NAME*.c OUTDIR/oqcf_*.c -lm -o run_fashion
 *   run_fashion IN.npy OUT [MAX_SAMPLES]
 * IN.npy: float32 (little-endian, C order) holding S samples of PREFIX_INPUT_SIZE
 * values; each is run and the outputs are written stacked, as `oqc run -o OUT` does:
 * OUT is the .npy file of a single-output model, else a directory receiving NAME.npy per
 * output (shape [S, PREFIX_OUTPUT<i>_SIZE]: compare the data, not the header).
 * Sample 0 runs with the internal arena (arena NULL), the others in an arena of exactly
 * PREFIX_ARENA_BYTES bytes from posix_memalign (so ASan sees any overrun), and sample 0
 * runs again there: both runs must agree bit for bit.
 *
 * With -DOQC_TEST_PARALLEL (a model compiled with --threads N > 1), the runs go through
 * PREFIX_set_parallel with a parallel-for that runs the tasks on the calling thread in
 * reverse order, and "parallel-for: C calls, at most T tasks" goes to stderr at the end.
 *
 * Built with -DOQC_TEST_U8 (a model compiled with --preprocess, which has PREFIX_run_u8):
 *   run_fashion IN.npy OUT PIXELS.npy OUT_U8.npy
 * PIXELS.npy holds the same samples as 8-bit pixels (float32 values 0..255, e.g. the
 * same images through --preprocess with scale 1, mean 0, std 1); each sample's
 * PREFIX_run_u8 output must equal, byte for byte, PREFIX_run_int8's on IN quantized by
 * oqci_quantize at PREFIX_INPUT_SCALE (what PREFIX_run does first), else exit 1;
 * OUT_U8.npy receives those outputs dequantized (q * PREFIX_OUTPUT_SCALE).
 *
 * Not in tests/tools/ (which the Makefile links with liboqc): it needs a model. */
#define _POSIX_C_SOURCE 200112L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include OQC_MODEL_HEADER
#ifdef OQC_TEST_U8
#include "oqci.h"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define M(x) CAT(OQC_MODEL_PREFIX, x)   /* M(_run) -> fashion_run */

static int fail(const char *what, const char *path) {
    fprintf(stderr, "emitted_main: %s: %s\n", path, what);
    return 1;
}

/* Reads a float32 .npy file: *n receives the element count. */
static float *read_npy(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char pre[12];
    if (!f)
        return NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return NULL;
    }
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (pre[6] >= 2) { /* version 2 and 3: 4-byte header length */
        if (fread(pre + 10, 1, 2, f) != 2) {
            fclose(f);
            return NULL;
        }
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    }
    char *h = malloc(hlen + 1);
    if (!h || fread(h, 1, hlen, f) != hlen) {
        free(h);
        fclose(f);
        return NULL;
    }
    h[hlen] = 0;
    const char *shape = strstr(h, "'shape':");
    if (!strstr(h, "'descr': '<f4'") || !strstr(h, "'fortran_order': False") || !shape) {
        free(h);
        fclose(f);
        return NULL;
    }
    size_t count = 1;
    for (const char *p = strchr(shape, '(') + 1; *p && *p != ')'; p++)
        if (*p >= '0' && *p <= '9') {
            char *end;
            count *= (size_t)strtoull(p, &end, 10);
            p = end - 1;
        }
    free(h);
    float *x = malloc(count ? count * sizeof *x : 1);
    if (!x || fread(x, sizeof *x, count, f) != count) {
        free(x);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *n = count;
    return x;
}

/* Writes rows x cols float32 values as a version 1.0 .npy file. */
static int write_npy(const char *path, const float *x, size_t rows, size_t cols) {
    char h[128];
    int len = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lu, %lu), }",
                       (unsigned long)rows, (unsigned long)cols);
    while ((10 + len + 1) % 64)
        h[len++] = ' ';
    h[len++] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 255),
                             (unsigned char)(len >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)len, f) == (size_t)len &&
             fwrite(x, sizeof *x, rows * cols, f) == rows * cols;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#ifdef OQC_TEST_PARALLEL
static int par_calls, par_max;

/* A parallel-for as an application may write one, for tests: any order must do. */
static void reverse_parallel_for(void *ctx, void (*task)(void *, int), void *arg, int n) {
    (void)ctx;
    par_calls++;
    if (n > par_max)
        par_max = n;
    for (int i = n - 1; i >= 0; i--)
        task(arg, i);
}
#endif

#ifdef OQC_TEST_U8
/* PREFIX_run_u8 on the pixels against PREFIX_run_int8 on x quantized (see the top). */
static int u8_check(const char *pixels_path, const char *out_path, const float *x,
                    size_t samples, void *arena) {
    size_t n, size = M(_INPUT_SIZE), osize = M(_OUTPUT_SIZE);
    float *pix = read_npy(pixels_path, &n);
    uint8_t *px = malloc(size), *q = malloc(size), *o1 = malloc(osize), *o2 = malloc(osize);
    float *y = malloc(samples * osize * sizeof *y);
    if (!pix || n != samples * size)
        return fail("not a float32 .npy of as many samples as IN", pixels_path);
    if (!px || !q || !o1 || !o2 || !y)
        return fail("out of memory", pixels_path);
    for (size_t s = 0; s < samples; s++) {
        for (size_t i = 0; i < size; i++) {
            float v = pix[s * size + i];
            if (!(v >= 0 && v <= 255) || v != (float)(int)v)
                return fail("a value is not a pixel (an integer 0..255)", pixels_path);
            px[i] = (uint8_t)v;
        }
        if (M(_run_u8)(px, o1, arena) != 0 ||
            oqci_quantize(x + s * size, q, M(_INPUT_UNSIGNED) ? OQCI_U8 : OQCI_S8,
                          (int64_t)size, M(_INPUT_SCALE)) != 0 ||
            M(_run_int8)(q, o2, arena) != 0)
            return fail("a run failed", pixels_path);
        if (memcmp(o1, o2, osize) != 0) {
            fprintf(stderr, "emitted_main: sample %lu: run_u8 differs from run_int8 on the "
                            "quantized float input\n", (unsigned long)s);
            return 1;
        }
        for (size_t i = 0; i < osize; i++)
            y[s * osize + i] = (float)(M(_OUTPUT_UNSIGNED) ? (int)o1[i] : (int)(int8_t)o1[i]) *
                               M(_OUTPUT_SCALE);
    }
    if (write_npy(out_path, y, samples, osize) != 0)
        return fail("cannot write", out_path);
    free(pix);
    free(px);
    free(q);
    free(o1);
    free(o2);
    free(y);
    return 0;
}
#endif

int main(int argc, char **argv) {
#ifdef OQC_TEST_PARALLEL
    M(_set_parallel)(reverse_parallel_for, NULL);
#endif
    static const size_t out_size[] = {
        M(_OUTPUT0_SIZE),
#if M(_NUM_OUTPUTS) > 1
        M(_OUTPUT1_SIZE),
#endif
#if M(_NUM_OUTPUTS) > 2
        M(_OUTPUT2_SIZE),
#endif
#if M(_NUM_OUTPUTS) > 3
        M(_OUTPUT3_SIZE),
#endif
    };
    static const char *const out_name[] = {
        M(_OUTPUT0_NAME),
#if M(_NUM_OUTPUTS) > 1
        M(_OUTPUT1_NAME),
#endif
#if M(_NUM_OUTPUTS) > 2
        M(_OUTPUT2_NAME),
#endif
#if M(_NUM_OUTPUTS) > 3
        M(_OUTPUT3_NAME),
#endif
    };
#if M(_NUM_INPUTS) != 1 || M(_NUM_OUTPUTS) > 4
#error "emitted_main handles models with one input and at most four outputs"
#endif
#ifdef OQC_TEST_U8
    if (argc != 5) {
        fprintf(stderr, "usage: %s IN.npy OUT PIXELS.npy OUT_U8.npy\n", argv[0]);
        return 2;
    }
#else
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s IN.npy OUT [MAX_SAMPLES]\n", argv[0]);
        return 2;
    }
#endif
    size_t n, no = M(_NUM_OUTPUTS);
    float *x = read_npy(argv[1], &n);
    if (!x)
        return fail("cannot read a float32 .npy file", argv[1]);
    if (n % M(_INPUT_SIZE) != 0 || n == 0)
        return fail("element count is not a whole number of samples", argv[1]);
    size_t samples = n / M(_INPUT_SIZE);
#ifndef OQC_TEST_U8
    if (argc == 4 && (size_t)atol(argv[3]) < samples)
        samples = (size_t)atol(argv[3]);
#endif
    float *y[4], *check[4];
    for (size_t k = 0; k < no; k++) {
        y[k] = malloc(samples * out_size[k] * sizeof(float));
        check[k] = malloc(out_size[k] * sizeof(float));
        if (!y[k] || !check[k])
            return fail("out of memory", argv[0]);
    }
    void *arena = NULL;
    if (posix_memalign(&arena, 64, M(_ARENA_BYTES) ? M(_ARENA_BYTES) : 1) != 0)
        return fail("out of memory", argv[0]);
    for (size_t s = 0; s < samples; s++) {
        const float *in[1];
        float *out[4];
        in[0] = x + s * M(_INPUT_SIZE);
        for (size_t k = 0; k < no; k++)
            out[k] = y[k] + s * out_size[k];
        int st = M(_run_multi)(in, out, s == 0 ? NULL : arena);
        if (st != 0) {
            fprintf(stderr, "emitted_main: sample %lu: status %d\n", (unsigned long)s, st);
            return 1;
        }
    }
    /* Sample 0 again, in the caller's arena: the same bits. */
    {
        const float *in[1];
        in[0] = x;
        if (M(_run_multi)(in, check, arena) != 0)
            return fail("second run of sample 0 failed", argv[1]);
        for (size_t k = 0; k < no; k++)
            if (memcmp(check[k], y[k], out_size[k] * sizeof(float)) != 0)
                return fail("sample 0 differs between the static and the caller's arena",
                            argv[1]);
    }
    /* A misaligned arena is refused. */
    {
        const float *in[1];
        in[0] = x;
        if (M(_run_multi)(in, check, (char *)arena + 4) != -1)
            return fail("a misaligned arena was accepted", argv[0]);
    }
    if (no == 1) {
        if (write_npy(argv[2], y[0], samples, out_size[0]) != 0)
            return fail("cannot write", argv[2]);
    } else {
        mkdir(argv[2], 0777);
        for (size_t k = 0; k < no; k++) {
            char path[4096], name[1024];
            size_t i;
            for (i = 0; out_name[k][i] && i + 1 < sizeof name; i++) {
                char c = out_name[k][i];
                name[i] = c == '/' || c == '\\' || c == ':' ? '_' : c;
            }
            name[i] = 0;
            snprintf(path, sizeof path, "%s/%s.npy", argv[2], name);
            if (write_npy(path, y[k], samples, out_size[k]) != 0)
                return fail("cannot write", path);
        }
    }
#ifdef OQC_TEST_U8
    if (u8_check(argv[3], argv[4], x, samples, arena) != 0)
        return 1;
#endif
    for (size_t k = 0; k < no; k++) {
        free(y[k]);
        free(check[k]);
    }
    free(arena);
    free(x);
    printf("ran %lu sample(s)\n", (unsigned long)samples);
#ifdef OQC_TEST_PARALLEL
    fprintf(stderr, "parallel-for: %d calls, at most %d tasks\n", par_calls, par_max);
#endif
    return 0;
}
