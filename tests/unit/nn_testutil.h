/* nn_testutil.h - helpers shared by the FP32 NN kernel tests (test_fp32_nn.c,
 * test_fp32_nn_conv.c): a seeded generator, the reference activation, and the
 * tolerance check.  Header-only (static inline), so it links into nothing else.
 *
 * Tolerances.  A float dot product of n terms computed in any order is within
 * n * FLT_EPSILON * sum|terms| of the exact value (the classical bound gamma_n for
 * recursive summation, FMA or not), and the double references are exact to far better
 * than that.  So SGEMM, Conv, Gemm and MatMul are checked with
 *     |got - ref| <= (n + 4) * FLT_EPSILON * (sum|a*b| + |beta*c| + |bias|) + 1e-30
 * (n = depth of the sum; +4 for alpha, beta, bias and activation roundings; the
 * activations used are 1-Lipschitz).  This bound cannot be tripped by a different
 * summation order, but a wrong term (wrong index, missed tap, padding read as data) is
 * of the order of one |a*b| and fails it.  Max pooling, indices and data movement are
 * exact.  Average pooling, BN and LRN use the same kind of bound, stated at each
 * check. */
#ifndef OQC_NN_TESTUTIL_H
#define OQC_NN_TESTUTIL_H

#include "oqcf_nn.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline void rnd_seed(uint64_t s) {
    rng_state = s * 0x9E3779B97F4A7C15ull + 1;
}

static inline uint32_t rnd_u32(void) {   /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* Uniform integer in [lo, hi]. */
static inline int64_t rnd_int(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd_u32() % (uint32_t)(hi - lo + 1));
}

/* Uniform float in [-1, 1). */
static inline float rnd_f(void) {
    return (float)rnd_u32() / 2147483648.0f - 1.0f;
}

static inline float *rnd_buf(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd_f();
    return p;
}

static inline double ref_act(const OqcfAct *a, double v) {
    switch (a->kind) {
    case OQCF_ACT_RELU: return v < 0 ? 0 : v;   /* NaN stays NaN, as in the kernels */
    case OQCF_ACT_CLIP: return v < a->p0 ? a->p0 : (v > a->p1 ? a->p1 : v);
    case OQCF_ACT_LEAKY: return v >= 0 ? v : a->p0 * v;
    default: return v;
    }
}

static inline OqcfAct rnd_act(void) {
    OqcfAct a = {(OqcfActKind)rnd_int(0, 3), 0.0f, 0.0f};
    if (a.kind == OQCF_ACT_CLIP) {
        a.p0 = -0.3f + 0.1f * rnd_f();
        a.p1 = 0.4f + 0.1f * rnd_f();
    } else if (a.kind == OQCF_ACT_LEAKY) {
        a.p0 = 0.1f + 0.05f * rnd_f();
    }
    return a;
}

/* Counts elements outside |got - ref| <= tol[i]; prints the first few. */
static inline int64_t mismatches(const char *what, const float *got, const double *ref,
                          const double *tol, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= tol[i])) {
            if (bad < 3)
                printf("\n  %s: [%lld] got %.9g want %.9g (tol %.3g)", what, (long long)i,
                       got[i], ref[i], tol[i]);
            bad++;
        }
    }
    return bad;
}

static inline void *scratch_alloc(size_t n) {
    return malloc(n ? n : 1);
}

/* The tests' 2-thread pool.  Kernels run problems smaller than OQCF_PAR_MIN_WORK per
 * thread on the caller alone; the tests' shapes are small, so the minimum is dropped
 * (process-wide) to reach the threaded paths. */
static inline OqcfPool *test_pool2(void) {
    oqcf_pool_set_min_work(0);
    return oqcf_pool_create(2);
}

#endif
