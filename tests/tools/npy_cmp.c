/* npy_cmp.c - compares two stacks of model outputs (float32 .npy) for the CLI tests,
 * which have no numpy: tests/cli/devset_*.sh compare oqc's outputs with the committed
 * ONNX Runtime references of models/devset/ with it.
 *
 *   npy_cmp A.npy B.npy [--labels Y.npy] [--limit N]
 *
 * A and B hold S samples each (axis 0) of n float32 values (the product of the other
 * axes; the shapes may differ otherwise, e.g. [S, 10] and [S, 1, 10]).  A 1-D A whose
 * length is a multiple of B's values per sample is read as samples of B's size (oqc run
 * stacks the outputs [10] of a model without batch axis as [S * 10]).  With --limit N
 * only the first N samples of each are compared (both must have at least N); without
 * it both must hold the same number of samples.  B is the reference.  Prints one line
 *
 *   samples=S n=n max_abs=E max_ref=R rel=E/R sqnr=Q ndiff=D agree=K [top1_a=CA top1_b=CB]
 *
 * max_abs: max |a - b|; max_ref: max |b|; sqnr: 10 log10(sum b^2 / sum (a - b)^2) in dB
 * (inf when a equals b); ndiff: how many values differ at all; agree:
 * samples whose argmax (first largest value) is the same; top1_a, top1_b: samples whose
 * argmax equals the label (int64 or int32 labels, one per sample).  Exit 0 when the
 * line is printed, 2 (and a message naming the file) on bad input: the thresholds are
 * the calling test's, with its reasons. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A .npy file read whole: its samples (axis 0) and values per sample. */
typedef struct Npy {
    char descr[8];   /* '<f4', '<i8' or '<i4' */
    int64_t samples; /* length of axis 0 */
    int64_t per;     /* product of the other axes (1 for a 1-D array) */
    void *data;      /* samples * per elements of descr's type */
} Npy;

static int npy_fail(const char *path, const char *why) {
    fprintf(stderr, "npy_cmp: %s: %s\n", path, why);
    return 0;
}

/* Reads path (format 1.0 or 2.0, C order, little-endian float32/int64/int32). */
static int npy_read(const char *path, Npy *v) {
    unsigned char head[12];
    char *hdr = NULL, *p;
    size_t hl, esize, n;
    int64_t dims[8], nd = 0, total = 1;
    int ok = 0;
    FILE *f = fopen(path, "rb");
    memset(v, 0, sizeof *v);
    if (!f)
        return npy_fail(path, "cannot open it");
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
        npy_fail(path, "not a .npy file");
        goto out;
    }
    if (head[6] == 1) {
        hl = (size_t)head[8] | (size_t)head[9] << 8;
    } else if (head[6] == 2 && fread(head + 10, 1, 2, f) == 2) {
        hl = (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
    } else {
        npy_fail(path, "unknown .npy version");
        goto out;
    }
    hdr = malloc(hl + 1);
    if (!hdr || fread(hdr, 1, hl, f) != hl) {
        npy_fail(path, "truncated header");
        goto out;
    }
    hdr[hl] = 0;
    if (strstr(hdr, "'fortran_order': True")) {
        npy_fail(path, "Fortran order is not supported");
        goto out;
    }
    p = strstr(hdr, "'descr': '");
    if (!p || sscanf(p + 10, "%7[^']", v->descr) != 1 ||
        (strcmp(v->descr, "<f4") && strcmp(v->descr, "<i8") && strcmp(v->descr, "<i4"))) {
        npy_fail(path, "expected dtype <f4, <i8 or <i4");
        goto out;
    }
    esize = v->descr[2] == '8' ? 8 : 4;
    p = strstr(hdr, "'shape': (");
    if (!p) {
        npy_fail(path, "no shape in the header");
        goto out;
    }
    for (p += 10; *p && *p != ')';) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (d < 0 || nd == 8) {
            npy_fail(path, "bad shape");
            goto out;
        }
        dims[nd++] = d;
        total *= d;
        p = end;
    }
    if (nd == 0 || total <= 0) {
        npy_fail(path, "expected a non-empty array with a sample axis");
        goto out;
    }
    v->samples = dims[0];
    v->per = total / dims[0];
    n = (size_t)total;
    v->data = malloc(n * esize);
    if (!v->data || fread(v->data, esize, n, f) != n) {
        npy_fail(path, "truncated data");
        goto out;
    }
    ok = 1;
out:
    free(hdr);
    fclose(f);
    if (!ok) {
        free(v->data);
        v->data = NULL;
    }
    return ok;
}

static int64_t label_of(const Npy *y, int64_t s) {
    return !strcmp(y->descr, "<i8") ? ((const int64_t *)y->data)[s] : ((const int32_t *)y->data)[s];
}

/* Compares A (fa) with the reference B (fb), labels fy (or NULL), the first `limit`
 * samples (-1: all); prints the line.  The arrays are read into a, b, y (the caller
 * frees their data whatever happens).  Returns the exit status. */
static int compare(const char *fa, const char *fb, const char *fy, long long limit, Npy *a,
                   Npy *b, Npy *y) {
    int64_t s, i, S, ndiff = 0, agree = 0, top_a = 0, top_b = 0;
    double max_abs = 0, max_ref = 0, sig = 0, noise = 0;
    if (!npy_read(fa, a) || !npy_read(fb, b) || (fy && !npy_read(fy, y)))
        return 2;
    if (strcmp(a->descr, "<f4") || strcmp(b->descr, "<f4"))
        return npy_fail(strcmp(a->descr, "<f4") ? fa : fb, "expected float32 outputs"), 2;
    if (a->per == 1 && b->per > 1 && a->samples % b->per == 0) {
        a->samples /= b->per;   /* oqc run's [S * 10] of a model whose output is [10] */
        a->per = b->per;
    }
    if (a->per != b->per) {
        fprintf(stderr, "npy_cmp: %s has %lld values per sample, %s %lld\n", fa,
                (long long)a->per, fb, (long long)b->per);
        return 2;
    }
    S = limit > 0 ? limit : a->samples;
    if (a->samples < S || b->samples < S || (limit < 0 && a->samples != b->samples)) {
        fprintf(stderr, "npy_cmp: %s has %lld samples, %s %lld (compared: %lld)\n", fa,
                (long long)a->samples, fb, (long long)b->samples, (long long)S);
        return 2;
    }
    if (fy && (y->per != 1 || !strcmp(y->descr, "<f4") || y->samples < S)) {
        fprintf(stderr, "npy_cmp: %s: expected at least %lld int64/int32 labels\n", fy, (long long)S);
        return 2;
    }
    for (s = 0; s < S; s++) {
        const float *pa = (const float *)a->data + s * a->per, *pb = (const float *)b->data + s * b->per;
        int64_t ia = 0, ib = 0;   /* the argmaxes: first largest value */
        for (i = 0; i < a->per; i++) {
            ia = pa[i] > pa[ia] ? i : ia;
            ib = pb[i] > pb[ib] ? i : ib;
            double d = fabs((double)pa[i] - (double)pb[i]);
            if (!(d <= max_abs))   /* NaN counts as the largest difference */
                max_abs = isnan(d) ? INFINITY : d;
            if (fabs((double)pb[i]) > max_ref)
                max_ref = fabs((double)pb[i]);
            ndiff += pa[i] != pb[i];
            sig += (double)pb[i] * pb[i];
            noise += d * d;
        }
        agree += ia == ib;
        if (fy) {
            top_a += ia == label_of(y, s);
            top_b += ib == label_of(y, s);
        }
    }
    printf("samples=%lld n=%lld max_abs=%.6g max_ref=%.6g rel=%.6g sqnr=%.2f ndiff=%lld agree=%lld",
           (long long)S, (long long)a->per, max_abs, max_ref, max_ref > 0 ? max_abs / max_ref : max_abs,
           noise > 0 ? 10 * log10(sig / noise) : INFINITY, (long long)ndiff, (long long)agree);
    if (fy)
        printf(" top1_a=%lld top1_b=%lld", (long long)top_a, (long long)top_b);
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    const char *fa = NULL, *fb = NULL, *fy = NULL;
    long long limit = -1;
    Npy a = {{0}, 0, 0, NULL}, b = a, y = a;
    int rc, extra = 0;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--labels") && k + 1 < argc)
            fy = argv[++k];
        else if (!strcmp(argv[k], "--limit") && k + 1 < argc)
            limit = atoll(argv[++k]);
        else if (!fa)
            fa = argv[k];
        else if (!fb)
            fb = argv[k];
        else
            extra = 1;
    }
    if (!fa || !fb || extra || limit == 0 || limit < -1) {
        fprintf(stderr, "usage: npy_cmp A.npy B.npy [--labels Y.npy] [--limit N]\n");
        return 2;
    }
    rc = compare(fa, fb, fy, limit, &a, &b, &y);
    free(a.data);
    free(b.data);
    free(y.data);
    return rc;
}
