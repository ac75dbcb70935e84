/* oqcf_norm.c - inference BatchNormalization and LRN (see oqcf_nn.h).
 *
 * Design: both work on dense N x C x inner tensors (inner = product of the spatial
 * extents), parallel over (n, c) planes.
 *
 * BatchNormalization folds each channel into y = x * a + b, a = scale / sqrt(var + eps),
 * b = bias - mean * a (computed in double, then rounded once), so the plane loop is one
 * multiply-add per element and vectorises.
 *
 * LRN (ONNX): square_sum[n,c,i] = sum of x[n,c',i]^2 over
 * c' in [max(0, c - floor((size-1)/2)), min(C-1, c + ceil((size-1)/2))],
 * y = x / (bias + alpha / size * square_sum)^beta.  The square sums of a plane are
 * accumulated in y itself (hence y must not overlap x), then turned into the result. */
#include "oqcf_nn.h"

#include <math.h>

/* BatchNormalization job. */
typedef struct BnJob {
    const float *x;                            /* input */
    const float *scale, *bias, *mean, *var;    /* per-channel parameters */
    float eps;                                 /* variance epsilon */
    float *y;                                  /* output (may be x) */
    int64_t channels, inner;                   /* C and plane size */
} BnJob;

static void bn_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const BnJob *J = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t c = t % J->channels;
        double ad = (double)J->scale[c] / sqrt((double)J->var[c] + (double)J->eps);
        float a = (float)ad, b = (float)((double)J->bias[c] - (double)J->mean[c] * ad);
        const float *xp = J->x + t * J->inner;
        float *yp = J->y + t * J->inner;
        for (int64_t i = 0; i < J->inner; i++)
            yp[i] = xp[i] * a + b;
    }
}

int oqcf_batchnorm(OqcfPool *pool, int64_t batch, int64_t channels, int64_t inner,
                   const float *x, const float *scale, const float *bias, const float *mean,
                   const float *var, float eps, float *y) {
    if (batch < 0 || channels < 0 || inner < 0)
        return OQCF_EINVAL;
    if (batch == 0 || channels == 0 || inner == 0)
        return OQCF_OK;
    if (!x || !scale || !bias || !mean || !var || !y)
        return OQCF_EINVAL;
    BnJob J = {x, scale, bias, mean, var, eps, y, channels, inner};
    oqcf_parallel_for(pool, batch * channels, bn_fn, &J);
    return OQCF_OK;
}

/* LRN job: one (n, c) plane per index. */
typedef struct LrnJob {
    const float *x;              /* input */
    float *y;                    /* output, not overlapping x */
    int64_t channels, inner;     /* C and plane size */
    int64_t below, above;        /* window: channels [c - below, c + above] */
    float alpha_n, beta, bias;   /* alpha / size, beta, bias */
} LrnJob;

static void lrn_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const LrnJob *J = ctx;
    (void)tid;
    const int64_t C = J->channels, S = J->inner;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / C, c = t % C;
        const float *xn = J->x + n * C * S;
        float *yp = J->y + t * S;
        int64_t lo = c - J->below < 0 ? 0 : c - J->below;
        int64_t hi = c + J->above > C - 1 ? C - 1 : c + J->above;
        for (int64_t i = 0; i < S; i++)
            yp[i] = 0.0f;
        for (int64_t cc = lo; cc <= hi; cc++) {
            const float *xp = xn + cc * S;
            for (int64_t i = 0; i < S; i++)
                yp[i] += xp[i] * xp[i];
        }
        const float *xp = xn + c * S;
        for (int64_t i = 0; i < S; i++)
            yp[i] = xp[i] / powf(J->bias + J->alpha_n * yp[i], J->beta);
    }
}

int oqcf_lrn(OqcfPool *pool, int64_t batch, int64_t channels, int64_t inner, const float *x,
             int64_t size, float alpha, float beta, float bias, float *y) {
    if (batch < 0 || channels < 0 || inner < 0 || size < 1)
        return OQCF_EINVAL;
    if (batch == 0 || channels == 0 || inner == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    int64_t total = batch * channels * inner;
    uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y, bytes = (uintptr_t)total * sizeof(float);
    if (ya < xa + bytes && xa < ya + bytes)   /* the square sums are accumulated in y */
        return OQCF_EINVAL;
    LrnJob J = {x, y, channels, inner, (size - 1) / 2, size / 2, alpha / (float)size, beta,
                bias};
    oqcf_parallel_for(pool, batch * channels, lrn_fn, &J);
    return OQCF_OK;
}
