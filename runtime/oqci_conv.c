/* oqci_conv.c - INT8 2-D convolution (also Gemm/MatMul as a 1x1 conv), portable C99.
 *
 * Design.  For each image and group the input is unfolded (im2col) into the scratch,
 * CONV_ROWS output pixels at a time: one row of kpad bytes per pixel, the group's
 * channels c, kernel rows i and columns j at c * k_h * k_w + i * k_w + j (the order of
 * the packed weight rows), zero for padding taps and for the kpad - kdim tail (0 is
 * the value 0 for both s8 and u8: there is no zero point).  Then every weight row of
 * the group is dotted with every unfolded pixel row by the DP4A primitive of oqci.h,
 * four output channels per pass over a pixel row (dot_*_1x4c4__c) so each activation
 * quadruple is loaded once for four products.  A dot product deeper than OQCI_KCHUNK
 * is summed chunk by chunk (each chunk exact in int32) into an int64; the bias is
 * added in int64, the result saturated to int32 and requantized by oqci_requant.
 * Every sum is exact, so the result is saturate32(bias + sum x*w) whatever the order.
 *
 * Scratch: oqci_conv_scratch() = min(out_h * out_w, CONV_ROWS) * kpad bytes, small
 * enough for a microcontroller's static arena.  Depthwise convolutions go through the
 * same path (kdim = k_h * k_w, one weight row per group).
 *
 * Only integer arithmetic here, except the float branch of oqci_requant, which
 * OQCI_NO_FLOAT removes (see oqci.h). */
#include "oqci.h"

/* Output pixels unfolded per scratch fill: weight rows are re-read once per fill. */
#define CONV_ROWS 16

/* Dot products of one chunk (len bytes, a multiple of 4, at most OQCI_KCHUNK, so exact
 * in int32) of unfolded pixel row a with weight row w (1x1) or with the four weight
 * rows w, w + ws, w + 2 ws, w + 3 ws (1x4, sums added to acc[0..3]). */
#define DEFINE_DOT(SUF, AT, DP4A)                                                      \
    static int32_t dot_##SUF##_1x1c4__c(const AT *a, const int8_t *w, int32_t len) {   \
        int32_t acc = 0, t;                                                            \
        for (t = 0; t < len; t += 4)                                                   \
            acc = DP4A(acc, a + t, w + t);                                             \
        return acc;                                                                    \
    }                                                                                  \
    static void dot_##SUF##_1x4c4__c(const AT *a, const int8_t *w, size_t ws,          \
                                     int32_t len, int64_t acc[4]) {                    \
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, t;                                     \
        const int8_t *w0 = w, *w1 = w + ws, *w2 = w + 2 * ws, *w3 = w + 3 * ws;        \
        for (t = 0; t < len; t += 4) {                                                 \
            a0 = DP4A(a0, a + t, w0 + t);                                              \
            a1 = DP4A(a1, a + t, w1 + t);                                              \
            a2 = DP4A(a2, a + t, w2 + t);                                              \
            a3 = DP4A(a3, a + t, w3 + t);                                              \
        }                                                                              \
        acc[0] += a0;                                                                  \
        acc[1] += a1;                                                                  \
        acc[2] += a2;                                                                  \
        acc[3] += a3;                                                                  \
    }
DEFINE_DOT(u8s8, uint8_t, oqci_dp4a_u8s8)
DEFINE_DOT(s8s8, int8_t, oqci_dp4a_s8s8)

/* Exact full-depth (kpad) dot products of pixel row a with nk (1..4) consecutive weight
 * rows starting at w, in OQCI_KCHUNK chunks; acc[0..nk-1] receive the sums. */
static void dot_rows(const uint8_t *a, int32_t in_type, const int8_t *w, int32_t kpad,
                     int nk, int64_t acc[4]) {
    int32_t off = 0;
    int j;
    for (j = 0; j < 4; j++)
        acc[j] = 0;
    while (off < kpad) {
        int32_t len = kpad - off < OQCI_KCHUNK ? kpad - off : OQCI_KCHUNK;
        if (nk == 4) {
            if (in_type == OQCI_U8)
                dot_u8s8_1x4c4__c(a + off, w + off, (size_t)kpad, len, acc);
            else
                dot_s8s8_1x4c4__c((const int8_t *)a + off, w + off, (size_t)kpad, len, acc);
        } else {
            for (j = 0; j < nk; j++) {
                const int8_t *wj = w + (size_t)j * (size_t)kpad + off;
                acc[j] += in_type == OQCI_U8
                              ? dot_u8s8_1x1c4__c(a + off, wj, len)
                              : dot_s8s8_1x1c4__c((const int8_t *)a + off, wj, len);
            }
        }
        off += len;
    }
}

/* A requantization usable for entries first..last: pointers present, shifts in [1, 62]
 * (any other shift is undefined behaviour in oqci_mul_shift). */
static int rq_ok(const OqciRequant *r, int64_t first, int64_t last) {
    int64_t i;
    if (r->mode == OQCI_REQ_FLOAT) {
#ifdef OQCI_NO_FLOAT
        return 0;
#else
        return r->mult != NULL;
#endif
    }
    if (r->mode != OQCI_REQ_FIXED || !r->m || !r->shift)
        return 0;
    if (!r->per_index)
        first = last = 0;
    for (i = first; i <= last; i++)
        if (r->shift[i] < 1 || r->shift[i] > 62)
            return 0;
    return 1;
}

/* [lo, hi] non-empty and storable in type t. */
static int range_ok(int32_t t, int32_t lo, int32_t hi) {
    if (t == OQCI_S8)
        return lo <= hi && lo >= -128 && hi <= 127;
    if (t == OQCI_U8)
        return lo <= hi && lo >= 0 && hi <= 255;
    return 0;
}

/* Every field consistent (the pointers x, y and scratch are checked by the caller). */
static int conv_ok(const OqciConv *p) {
    int64_t kdim;
    if (!p || !p->w)
        return 0;
    if (p->batch < 0 || p->in_c < 1 || p->in_h < 1 || p->in_w < 1 || p->out_c < 1 ||
        p->out_h < 1 || p->out_w < 1 || p->k_h < 1 || p->k_w < 1 || p->s_h < 1 ||
        p->s_w < 1 || p->d_h < 1 || p->d_w < 1 || p->p_t < 0 || p->p_l < 0 || p->group < 1)
        return 0;
    if (p->in_c % p->group || p->out_c % p->group)
        return 0;
    kdim = (int64_t)(p->in_c / p->group) * p->k_h * p->k_w;
    if (kdim != p->kdim || p->kpad < p->kdim || p->kpad % 4)
        return 0;
    if (p->out_coff < 0 || p->out_ctotal < 1 || p->out_coff > p->out_ctotal - p->out_c)
        return 0;
    if ((p->in_type != OQCI_S8 && p->in_type != OQCI_U8) ||
        !range_ok(p->out_type, p->lo, p->hi))
        return 0;
    return rq_ok(&p->rq, 0, p->out_c - 1);
}

size_t oqci_conv_scratch(const OqciConv *p) {
    int64_t pix;
    if (!p || p->out_h < 1 || p->out_w < 1 || p->kpad < 1)
        return 0;
    pix = (int64_t)p->out_h * p->out_w;
    return (size_t)(pix < CONV_ROWS ? pix : CONV_ROWS) * (size_t)p->kpad;
}

/* Unfolds output pixels p0 .. p0 + nr - 1 of one group (xg: its first input channel)
 * into nr rows of kpad bytes at s. */
static void im2col(const OqciConv *p, const uint8_t *xg, int64_t p0, int64_t nr, uint8_t *s) {
    int64_t plane = (int64_t)p->in_h * p->in_w, r;
    int32_t cg = p->in_c / p->group;
    int32_t oh = (int32_t)(p0 / p->out_w), ow = (int32_t)(p0 % p->out_w);
    for (r = 0; r < nr; r++) {
        uint8_t *row = s + r * p->kpad;
        int64_t ih0 = (int64_t)oh * p->s_h - p->p_t, iw0 = (int64_t)ow * p->s_w - p->p_l;
        int32_t t = 0, c, i, j;
        for (c = 0; c < cg; c++) {
            const uint8_t *xc = xg + c * plane;
            for (i = 0; i < p->k_h; i++) {
                int64_t ih = ih0 + (int64_t)i * p->d_h;
                const uint8_t *xr;
                if (ih < 0 || ih >= p->in_h) {
                    for (j = 0; j < p->k_w; j++)
                        row[t++] = 0;
                    continue;
                }
                xr = xc + ih * p->in_w;
                for (j = 0; j < p->k_w; j++) {
                    int64_t iw = iw0 + (int64_t)j * p->d_w;
                    row[t++] = iw >= 0 && iw < p->in_w ? xr[iw] : 0;
                }
            }
        }
        while (t < p->kpad)
            row[t++] = 0;
        if (++ow == p->out_w) {
            ow = 0;
            oh++;
        }
    }
}

int oqci_conv(const OqciConv *p, const void *x, void *y, void *scratch) {
    int64_t pix, plane, n, p0;
    int32_t cg, kg, g, rows;
    if (!conv_ok(p) || !x || !y || !scratch)
        return OQCI_EINVAL;
    pix = (int64_t)p->out_h * p->out_w;
    plane = (int64_t)p->in_h * p->in_w;
    rows = pix < CONV_ROWS ? (int32_t)pix : CONV_ROWS;
    cg = p->in_c / p->group;
    kg = p->out_c / p->group;
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = (const uint8_t *)x + (n * p->in_c + (int64_t)g * cg) * plane;
            for (p0 = 0; p0 < pix; p0 += rows) {
                int64_t nr = pix - p0 < rows ? pix - p0 : rows, r;
                int32_t kk;
                im2col(p, xg, p0, nr, (uint8_t *)scratch);
                for (kk = 0; kk < kg; kk += 4) {
                    int nk = kg - kk < 4 ? kg - kk : 4, j;
                    int32_t k = g * kg + kk;   /* first output channel of this block */
                    const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                    for (r = 0; r < nr; r++) {
                        int64_t acc[4];
                        dot_rows((const uint8_t *)scratch + r * p->kpad, p->in_type, w,
                                 p->kpad, nk, acc);
                        for (j = 0; j < nk; j++) {
                            int64_t v = acc[j] + (p->bias ? p->bias[k + j] : 0);
                            int32_t a = v > INT32_MAX   ? INT32_MAX
                                        : v < INT32_MIN ? INT32_MIN
                                                        : (int32_t)v;
                            int32_t q = oqci_requant(a, &p->rq, k + j, p->lo, p->hi);
                            int64_t o = (n * p->out_ctotal + p->out_coff + k + j) * pix + p0 + r;
                            if (p->out_type == OQCI_U8)
                                ((uint8_t *)y)[o] = (uint8_t)q;
                            else
                                ((int8_t *)y)[o] = (int8_t)q;
                        }
                    }
                }
            }
        }
    return OQCI_OK;
}
