/* oqcf_conv_int.h - private to the FP32 conv (oqcf_conv.c: the SGEMM paths and the
 * driver; oqcf_conv_dw.c: depthwise): the normalised geometry, its small helpers, and
 * what each file calls in the other (prefix oqcfk_). */
#ifndef OQCF_CONV_INT_H
#define OQCF_CONV_INT_H

#include <string.h>

#include "oqcf_nn.h"
#include "oqcf_x86_int.h"   /* (AVX2, act8) */

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCF_CONV_X86 1
#else
#define OQCF_CONV_X86 0
#endif

/* A convolution normalised to three spatial axes. */
typedef struct Geo {
    int64_t in[3], out[3];     /* input and output extents (D, H, W) */
    int64_t ker[3];            /* kernel extents */
    int64_t str[3], dil[3];    /* strides, dilations */
    int64_t pad[3];            /* padding before each axis */
    int64_t in_plane;          /* in[0] * in[1] * in[2] */
    int64_t out_plane;         /* out[0] * out[1] * out[2] */
    int64_t taps;              /* ker[0] * ker[1] * ker[2] */
} Geo;

/* floor(a / b) for b > 0. */
static inline int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Output positions o with 0 <= o * s + off < n, as [*lo, *hi), clamped to [0, out). */
static inline void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *lo,
                               int64_t *hi) {
    int64_t l = floor_div(-off + s - 1, s);       /* ceil(-off / s) */
    int64_t h = floor_div(n - 1 - off, s) + 1;
    *lo = l < 0 ? 0 : (l > out ? out : l);
    *hi = h < *lo ? *lo : (h > out ? out : h);
}

/* Copies n <= 32 floats with fixed-size copies the compiler inlines (a plain loop
 * would become a call to memmove, slow for these short runs). */
static inline void copy_run(float *restrict d, const float *restrict s, int64_t n) {
    int64_t j = 0;
    if (n - j >= 16) {
        memcpy(d + j, s + j, 16 * sizeof(float));
        j += 16;
    }
    if (n - j >= 16) {
        memcpy(d + j, s + j, 16 * sizeof(float));
        j += 16;
    }
    if (n - j >= 8) {
        memcpy(d + j, s + j, 8 * sizeof(float));
        j += 8;
    }
    if (n - j >= 4) {
        memcpy(d + j, s + j, 4 * sizeof(float));
        j += 4;
    }
    if (n - j >= 2) {
        memcpy(d + j, s + j, 2 * sizeof(float));
        j += 2;
    }
    if (n - j >= 1)
        d[j] = s[j];
}

/* dst[i] = src[2 i] for i < n (the stride-2 phase split of a padded row): portable and
 * AVX2 (oqcf_conv_dw.c). */
typedef void (*Gather2Fn)(float *restrict dst, const float *restrict src, int64_t n);
void oqcfk_gather2__c(float *restrict dst, const float *restrict src, int64_t n);
#if OQCF_CONV_X86
void oqcfk_gather2__avx2(float *restrict dst, const float *restrict src, int64_t n);
#endif

/* o[i] = s[i * sw] for i < n: one input run into a stride-phase plane (the depthwise
 * and flat-offset paths' padded copies), with copy_run / memcpy at stride 1 and
 * gather2 at stride 2. */
static inline void copy_strided(float *restrict o, const float *restrict s, int64_t n,
                                int64_t sw, Gather2Fn gather2) {
    if (sw == 1) {
        if (n <= 32)
            copy_run(o, s, n);
        else
            memcpy(o, s, (size_t)n * sizeof(float));
    } else if (sw == 2) {
        gather2(o, s, n);
    } else {
        for (int64_t i = 0; i < n; i++)
            o[i] = s[i * sw];
    }
}

/* Depthwise (oqcf_conv_dw.c): the scratch its fast path wants (0: none, it runs without),
 * and the conv itself on geometry g (xct, yct: channels of the input and output
 * buffers), which cannot fail once oqcf_conv has checked p. */
size_t oqcfk_dw_scratch(const Geo *g, int nthreads);
void oqcfk_dw(OqcfPool *pool, const OqcfConvParams *p, const Geo *g, const float *x,
              const float *w, const float *bias, float *y, int64_t xct, int64_t yct,
              void *scratch, size_t scratch_size);

#endif /* OQCF_CONV_INT_H */
