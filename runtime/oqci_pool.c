/* oqci_pool.c - INT8 max and average pooling (NCHW, batch included), portable C99.
 *
 * Design.  One direct loop per output element over its window, bounds-checked tap by
 * tap (so padding is never read and never counted); no scratch.
 *   - max: the largest input in the window; padding never wins.  A window that holds
 *     no input element at all (possible only with dilation or pads >= the kernel) gives
 *     lo, the smallest value the output may take.  With requant the max is requantized
 *     with entry 0 of rq, otherwise it is copied and clamped to [lo, hi].
 *   - average: the exact int32 sum of the window's inputs, requantized with entry
 *     `count` of rq (count = inputs inside the image, or k_h * k_w with
 *     count_include_pad).  The sum is bounded by k_h * k_w * 255, so windows of more
 *     than INT32_MAX / 255 elements are rejected (OQCI_EINVAL).  A window with no input
 *     (count 0) gives 0 clamped to [lo, hi].
 * Dilations apply to both.  The output is channels [out_coff, out_coff + C) of a buffer
 * with out_ctotal channels per image.
 *
 * Only integer arithmetic here, except the float branch of oqci_requant, which
 * OQCI_NO_FLOAT removes (see oqci.h). */
#include "oqci.h"

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

/* Geometry, types and pointers consistent (rq is checked by each kernel). */
static int pool_ok(const OqciPool *p, const void *x, const void *y) {
    if (!p || !x || !y)
        return 0;
    if (p->batch < 0 || p->channels < 1 || p->in_h < 1 || p->in_w < 1 || p->out_h < 1 ||
        p->out_w < 1 || p->k_h < 1 || p->k_w < 1 || p->s_h < 1 || p->s_w < 1 ||
        p->d_h < 1 || p->d_w < 1 || p->p_t < 0 || p->p_l < 0)
        return 0;
    if (p->out_coff < 0 || p->out_ctotal < 1 || p->out_coff > p->out_ctotal - p->channels)
        return 0;
    return (p->in_type == OQCI_S8 || p->in_type == OQCI_U8) &&
           range_ok(p->out_type, p->lo, p->hi);
}

/* Element i of an s8 or u8 tensor. */
static int32_t load(const void *x, int32_t type, int64_t i) {
    return type == OQCI_U8 ? (int32_t)((const uint8_t *)x)[i] : (int32_t)((const int8_t *)x)[i];
}

/* Stores q (already within the output's range) as element i. */
static void store(void *y, int32_t type, int64_t i, int32_t q) {
    if (type == OQCI_U8)
        ((uint8_t *)y)[i] = (uint8_t)q;
    else
        ((int8_t *)y)[i] = (int8_t)q;
}

/* The two pools share the loop; avg selects the reduction. */
static void pool_run(const OqciPool *p, const void *x, void *y, int avg) {
    int64_t plane = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w, n;
    int32_t c, oh, ow, i, j;
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            int64_t xoff = (n * p->channels + c) * plane;
            int64_t yoff = (n * p->out_ctotal + p->out_coff + c) * opix;
            for (oh = 0; oh < p->out_h; oh++)
                for (ow = 0; ow < p->out_w; ow++) {
                    int64_t ih0 = (int64_t)oh * p->s_h - p->p_t;
                    int64_t iw0 = (int64_t)ow * p->s_w - p->p_l;
                    int32_t best = INT32_MIN, sum = 0, count = 0, q;   /* count: avg only */
                    int found = 0;                                     /* max: any input */
                    for (i = 0; i < p->k_h; i++) {
                        int64_t ih = ih0 + (int64_t)i * p->d_h;
                        if (ih < 0 || ih >= p->in_h)
                            continue;
                        for (j = 0; j < p->k_w; j++) {
                            int64_t iw = iw0 + (int64_t)j * p->d_w;
                            int32_t v;
                            if (iw < 0 || iw >= p->in_w)
                                continue;
                            v = load(x, p->in_type, xoff + ih * p->in_w + iw);
                            if (avg) {   /* bounded: oqci_avgpool checked the window */
                                sum += v;
                                count++;
                            } else {
                                best = v > best ? v : best;
                                found = 1;
                            }
                        }
                    }
                    if (avg) {
                        if (p->count_include_pad)
                            count = p->k_h * p->k_w;
                        q = count ? oqci_requant(sum, &p->rq, count, p->lo, p->hi)
                                  : (p->lo > 0 ? p->lo : p->hi < 0 ? p->hi : 0);
                    } else if (!found) {
                        q = p->lo;
                    } else if (p->requant) {
                        q = oqci_requant(best, &p->rq, 0, p->lo, p->hi);
                    } else {
                        q = best < p->lo ? p->lo : best > p->hi ? p->hi : best;
                    }
                    store(y, p->out_type, yoff + (int64_t)oh * p->out_w + ow, q);
                }
        }
}

int oqci_maxpool(const OqciPool *p, const void *x, void *y) {
    if (!pool_ok(p, x, y) || (p->requant && !rq_ok(&p->rq, 0, 0)))
        return OQCI_EINVAL;
    pool_run(p, x, y, 0);
    return OQCI_OK;
}

int oqci_avgpool(const OqciPool *p, const void *x, void *y) {
    int64_t taps;
    if (!pool_ok(p, x, y))
        return OQCI_EINVAL;
    taps = (int64_t)p->k_h * p->k_w;
    if (taps > INT32_MAX / 255)
        return OQCI_EINVAL;
    /* entries that can be used: k_h * k_w alone with count_include_pad, else 1..k_h*k_w */
    if (!rq_ok(&p->rq, p->count_include_pad ? taps : 1, taps))
        return OQCI_EINVAL;
    pool_run(p, x, y, 1);
    return OQCI_OK;
}
