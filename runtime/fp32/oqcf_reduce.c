/* oqcf_reduce.c - ReduceSum, ReduceMean, ReduceMax and ReduceMin over any set of axes, and
 * ArgMax/ArgMin (see oqcf_tensor.h).
 *
 * The input is walked once in memory order with an odometer over its dims; each
 * element lands in the output element that has the same index on every kept dim (a
 * reduced dim has output stride 0). Dims of extent 1 are dropped and adjacent dims that
 * are both reduced or both kept are merged first, so the common cases (the trailing
 * spatial axes of NCHW, one channel axis) are two or three loops with a contiguous
 * inner one. Sums accumulate in float in input order, the mean divides the sum by the
 * number of reduced elements (NaN for none: 0/0), the max of no element is -inf and
 * the min +inf. Min is computed as the max of the negated values, negated back (exact). */
#include "oqcf_tensor.h"

#include <math.h>

OqcfStatus oqcf_reduce(OqcfReduceOp op, const float *x, const OqcfShape *xs, unsigned mask,
                       float *y) {
    if (!xs || xs->rank < 0 || xs->rank > OQCF_MAX_RANK ||
        (op != OQCF_REDUCE_SUM && op != OQCF_REDUCE_MEAN && op != OQCF_REDUCE_MAX &&
         op != OQCF_REDUCE_MIN))
        return OQCF_EINVAL;
    int64_t ext[OQCF_MAX_RANK], ostride[OQCF_MAX_RANK];
    int red[OQCF_MAX_RANK], r = 0;
    int64_t nx = 1, ny = 1;
    for (int i = 0; i < xs->rank; i++) {
        int ri = (mask >> i) & 1;
        if (xs->d[i] < 0)
            return OQCF_EINVAL;
        nx *= xs->d[i];
        if (!ri)
            ny *= xs->d[i];
        if (xs->d[i] == 1)
            continue;
        if (r > 0 && red[r - 1] == ri) {
            ext[r - 1] *= xs->d[i];
        } else {
            ext[r] = xs->d[i];
            red[r++] = ri;
        }
    }
    if (ny > 0 && !y)
        return OQCF_EINVAL;
    if (nx > 0 && !x)
        return OQCF_EINVAL;
    int ext_op = op == OQCF_REDUCE_MAX || op == OQCF_REDUCE_MIN;   /* max or min */
    float sign = op == OQCF_REDUCE_MIN ? -1.0f : 1.0f;              /* min: max of -x */
    float init = ext_op ? -INFINITY : 0.0f;
    for (int64_t i = 0; i < ny; i++)
        y[i] = init;
    int64_t count = ny ? nx / ny : 0;
    if (nx > 0) {
        /* output strides of the merged dims (0 where reduced) */
        int64_t st = 1;
        for (int k = r - 1; k >= 0; k--) {
            ostride[k] = red[k] ? 0 : st;
            if (!red[k])
                st *= ext[k];
        }
        int64_t inner = r ? ext[r - 1] : 1, istr = r ? ostride[r - 1] : 0;
        int64_t idx[OQCF_MAX_RANK] = {0}, o = 0;
        for (int64_t i = 0; i < nx; i += inner) {
            const float *xr = x + i;
            if (istr == 0) {   /* the inner dim is reduced: one output element */
                float a = y[o];
                if (ext_op) {
                    for (int64_t j = 0; j < inner; j++) {
                        float v = sign * xr[j];
                        a = v > a || v != v ? v : a;   /* NaN sticks */
                    }
                } else {
                    for (int64_t j = 0; j < inner; j++)
                        a += xr[j];
                }
                y[o] = a;
            } else {           /* the inner dim is kept: a row of outputs */
                float *yr = y + o;
                if (ext_op) {
                    for (int64_t j = 0; j < inner; j++) {
                        float v = sign * xr[j];
                        yr[j] = v > yr[j] || v != v ? v : yr[j];
                    }
                } else {
                    for (int64_t j = 0; j < inner; j++)
                        yr[j] += xr[j];
                }
            }
            /* next index of the outer dims */
            for (int k = r - 2; k >= 0; k--) {
                o += ostride[k];
                if (++idx[k] < ext[k])
                    break;
                o -= ostride[k] * ext[k];
                idx[k] = 0;
            }
        }
    }
    if (op == OQCF_REDUCE_MEAN)
        for (int64_t i = 0; i < ny; i++)
            y[i] = y[i] / (float)count;
    if (op == OQCF_REDUCE_MIN)
        for (int64_t i = 0; i < ny; i++)
            y[i] = -y[i];
    return OQCF_OK;
}

OqcfStatus oqcf_argmax(const float *x, int64_t outer, int64_t len, int64_t inner, int is_min,
                       int select_last, int64_t *y) {
    if (outer < 0 || len < 1 || inner < 0)
        return OQCF_EINVAL;
    if (outer == 0 || inner == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    float sign = is_min ? -1.0f : 1.0f;   /* argmin: the argmax of -x */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xp = x + o * len * inner + i;
            float best = sign * xp[0];
            int64_t at = 0;
            for (int64_t j = 1; j < len; j++) {
                float v = sign * xp[j * inner];
                if (v > best || (select_last && v == best)) {
                    best = v;
                    at = j;
                }
            }
            y[o * inner + i] = at;
        }
    return OQCF_OK;
}
