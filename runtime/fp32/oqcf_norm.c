/* oqcf_norm.c - inference BatchNormalization, LRN, LayerNormalization and
 * InstanceNormalization (see oqcf_nn.h).
 *
 * Design: both work on dense N x C x inner tensors (inner = product of the spatial
 * extents), parallel over (n, c) planes.
 *
 * BatchNormalization folds each channel into y = x * a + b, a = scale / sqrt(var + eps),
 * b = bias - mean * a (computed in double, then rounded once), so the plane loop is one
 * multiply-add per element (with an AVX2 version).
 *
 * LRN (ONNX): square_sum[n,c,i] = sum of x[n,c',i]^2 over
 * c' in [max(0, c - floor((size-1)/2)), min(C-1, c + ceil((size-1)/2))],
 * y = x / (bias + alpha / size * square_sum)^beta.  The square sums of a plane are
 * accumulated in y itself (hence y must not overlap x), then turned into the result. */
#include "oqcf_nn.h"

#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCF_NORM_X86 1
#include <immintrin.h>
#else
#define OQCF_NORM_X86 0
#endif

/* BatchNormalization job. */
typedef struct BnJob {
    const float *x;                            /* input */
    const float *scale, *bias, *mean, *var;    /* per-channel parameters */
    float eps;                                 /* variance epsilon */
    float *y;                                  /* output (may be x) */
    int64_t channels, inner;                   /* C and plane size */
    void (*fn)(float *, const float *, float, float, int64_t);   /* scale_shift__* */
} BnJob;

/* y[i] = x[i] * a + b (y may be x).  gcc -O2 leaves loops of unknown length scalar,
 * hence the AVX2 version, used when the CPU has it and SGEMM is not forced portable. */
static void scale_shift__c(float *y, const float *x, float a, float b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * a + b;
}

#if OQCF_NORM_X86
__attribute__((target("avx2,fma"))) static void scale_shift__avx2(float *y, const float *x,
                                                                 float a, float b,
                                                                 int64_t n) {
    __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), av, bv));
    for (; i < n; i++)
        y[i] = x[i] * a + b;
}
#endif

static void bn_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const BnJob *J = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t c = t % J->channels;
        double ad = (double)J->scale[c] / sqrt((double)J->var[c] + (double)J->eps);
        float a = (float)ad, b = (float)((double)J->bias[c] - (double)J->mean[c] * ad);
        J->fn(J->y + t * J->inner, J->x + t * J->inner, a, b, J->inner);
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
    BnJob J = {x, scale, bias, mean, var, eps, y, channels, inner, scale_shift__c};
#if OQCF_NORM_X86
    if (oqcf_sgemm_isa() != OQCF_ISA_PORTABLE)   /* AVX2 or AVX-512 CPU */
        J.fn = scale_shift__avx2;
#endif
    oqcf_parallel_for(oqcf_pool_for_work(pool, (double)batch * channels * inner),
                      batch * channels, bn_fn, &J);
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
    oqcf_parallel_for(oqcf_pool_for_work(pool, (double)batch * channels * inner * size),
                      batch * channels, lrn_fn, &J);
    return OQCF_OK;
}

/* Mean and 1 / sqrt(variance + eps) of n floats, accumulated in double (two passes: the
 * variance of the centred values, never E[x^2] - E[x]^2). */
static void norm_stats(const float *x, int64_t n, float eps, float *mean, float *invstd) {
    double s = 0, v = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    double m = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++)
        v += ((double)x[i] - m) * ((double)x[i] - m);
    *mean = (float)m;
    *invstd = (float)(1.0 / sqrt((n ? v / (double)n : 0) + (double)eps));
}

int oqcf_layernorm(int64_t outer, int64_t inner, const float *x, const float *scale,
                   const float *bias, float eps, float *y, float *mean, float *invstd) {
    if (outer < 0 || inner < 0 || (outer * inner > 0 && (!x || !scale || !y)))
        return OQCF_EINVAL;
    for (int64_t o = 0; o < outer; o++) {
        const float *xr = x + o * inner;
        float *yr = y + o * inner, m, r;
        norm_stats(xr, inner, eps, &m, &r);
        for (int64_t i = 0; i < inner; i++)
            yr[i] = (xr[i] - m) * r * scale[i] + (bias ? bias[i] : 0.0f);
        if (mean)
            mean[o] = m;
        if (invstd)
            invstd[o] = r;
    }
    return OQCF_OK;
}

int oqcf_instancenorm(int64_t batch, int64_t channels, int64_t inner, const float *x,
                      const float *scale, const float *bias, float eps, float *y) {
    if (batch < 0 || channels < 0 || inner < 0 ||
        (batch * channels * inner > 0 && (!x || !scale || !bias || !y)))
        return OQCF_EINVAL;
    for (int64_t n = 0; n < batch; n++)
        for (int64_t c = 0; c < channels; c++) {
            const float *xr = x + (n * channels + c) * inner;
            float *yr = y + (n * channels + c) * inner, m, r;
            norm_stats(xr, inner, eps, &m, &r);
            for (int64_t i = 0; i < inner; i++)
                yr[i] = (xr[i] - m) * r * scale[c] + bias[c];
        }
    return OQCF_OK;
}
