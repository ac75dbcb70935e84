/* oqcf_resize.c - Resize / Upsample (see oqcf_tensor.h) as separable resampling: one
 * pass per resampled axis, each a [outer, in_len, inner] -> [outer, out_len, inner]
 * map whose output row j is a weighted sum of `taps` input rows (linear: 2, cubic: 4)
 * or a copy of one (nearest). The compiler turns the coordinate transformation, the
 * nearest rounding, cubic coefficients and exclude_outside into the per-axis tables,
 * so this file knows none of ONNX's modes.
 *
 * Passes run from the innermost listed axis outward, each reading the previous pass's
 * output: ONNX's reference interpolates recursively with the outermost axis last, and
 * an extrapolated (tf_crop_and_resize) row then enters the outer passes' sums as it
 * does there. Rows are whole runs of `inner` elements, so each weighted pass is a few
 * axpy loops over contiguous memory.
 */
#include "oqcf_tensor.h"

#include <string.h>

/* The tensor after pass p (shape cur with axes[p]'s extent replaced). */
static int64_t numel_after(OqcfShape *cur, const OqcfResizeAxis *a) {
    cur->d[a->axis] = a->out_len;
    return oqcf_numel(cur);
}

size_t oqcf_resize_scratch_size(const OqcfShape *xs, const OqcfResizeAxis *axes, int naxes,
                                size_t esize) {
    if (!xs || naxes < 2)
        return 0;
    OqcfShape cur = *xs;
    int64_t big = 0;
    for (int p = naxes - 1; p > 0; p--) {   /* every pass but the last writes scratch */
        int64_t n = numel_after(&cur, &axes[p]);
        big = n > big ? n : big;
    }
    size_t one = ((size_t)big * esize + 63) & ~(size_t)63;
    return naxes == 2 ? one : 2 * one;
}

/* One pass: x viewed as [outer, in_len, inner] into y [outer, a->out_len, inner]. */
static OqcfStatus pass(const unsigned char *x, int64_t outer, int64_t in_len, int64_t inner,
                       const OqcfResizeAxis *a, float extrapolation, size_t esize,
                       unsigned char *y) {
    size_t row = (size_t)inner * esize;
    for (int64_t j = 0; j < a->out_len * a->taps; j++)
        if (a->idx[j] < -1 || a->idx[j] >= in_len)
            return OQCF_EINVAL;
    for (int64_t o = 0; o < outer; o++) {
        const unsigned char *xo = x + (size_t)(o * in_len) * row;
        for (int64_t j = 0; j < a->out_len; j++) {
            unsigned char *yr = y + (size_t)(o * a->out_len + j) * row;
            const int32_t *ix = a->idx + j * a->taps;
            if (ix[0] < 0) {   /* outside the input: the extrapolation value */
                for (int64_t i = 0; i < inner; i++)
                    memcpy(yr + (size_t)i * 4, &extrapolation, 4);
                continue;
            }
            if (!a->w) {
                memcpy(yr, xo + (size_t)ix[0] * row, row);
                continue;
            }
            const float *wj = a->w + j * a->taps;
            float *yf = (float *)(void *)yr;
            const float *x0 = (const float *)(const void *)(xo + (size_t)ix[0] * row);
            for (int64_t i = 0; i < inner; i++)
                yf[i] = wj[0] * x0[i];
            for (int t = 1; t < a->taps; t++) {
                const float *xt = (const float *)(const void *)(xo + (size_t)ix[t] * row);
                float wt = wj[t];
                for (int64_t i = 0; i < inner; i++)
                    yf[i] += wt * xt[i];
            }
        }
    }
    return OQCF_OK;
}

OqcfStatus oqcf_resize(const void *x, const OqcfShape *xs, const OqcfResizeAxis *axes,
                       int naxes, float extrapolation, size_t esize, void *y, void *scratch,
                       size_t scratch_size) {
    if (!xs || xs->rank < 1 || xs->rank > OQCF_MAX_RANK || naxes < 0 || esize == 0 ||
        (naxes && !axes))
        return OQCF_EINVAL;
    OqcfShape cur = *xs, out = *xs;
    for (int p = 0; p < naxes; p++) {
        const OqcfResizeAxis *a = &axes[p];
        if (a->axis < 0 || a->axis >= xs->rank || (p && a->axis <= axes[p - 1].axis) ||
            a->out_len < 0 || a->taps < 1 || !a->idx || (a->w && esize != 4) ||
            (a->taps > 1 && !a->w))
            return OQCF_EINVAL;
        for (int64_t j = 0; j < a->out_len; j++)
            if (a->idx[j * a->taps] < 0 && esize != 4)
                return OQCF_EINVAL;   /* the extrapolation value is a float */
        out.d[a->axis] = a->out_len;
    }
    if (oqcf_numel(&out) == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    if (scratch_size < oqcf_resize_scratch_size(xs, axes, naxes, esize))
        return OQCF_ESCRATCH;
    if (naxes == 0) {
        memcpy(y, x, (size_t)oqcf_numel(xs) * esize);
        return OQCF_OK;
    }
    size_t half = naxes == 2 ? scratch_size : scratch_size / 2;
    half &= ~(size_t)63;
    const unsigned char *src = x;
    for (int p = naxes - 1, k = 0; p >= 0; p--, k++) {
        const OqcfResizeAxis *a = &axes[p];
        int ax = a->axis;
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < ax; i++)
            outer *= cur.d[i];
        for (int i = ax + 1; i < cur.rank; i++)
            inner *= cur.d[i];
        unsigned char *dst = p == 0 ? y : (unsigned char *)scratch + (k & 1) * half;
        OqcfStatus st = pass(src, outer, cur.d[ax], inner, a, extrapolation, esize, dst);
        if (st != OQCF_OK)
            return st;
        cur.d[ax] = a->out_len;
        src = dst;
    }
    return OQCF_OK;
}
