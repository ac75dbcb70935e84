/* test_fp32_nn.c - the FP32 NN kernels (runtime/oqcf_nn.h) against naive references.
 *
 * Every kernel is compared with a direct transcription of the ONNX formula written
 * here, accumulating in double, on small odd shapes and on seeded random shapes.
 *
 * Tolerances.  A float dot product of n terms computed in any order is within
 * n * FLT_EPSILON * sum|terms| of the exact value (the classical bound gamma_n for
 * recursive summation, FMA or not), and the double reference is exact to far better
 * than that.  So SGEMM, Conv, Gemm and MatMul are checked with
 *     |got - ref| <= (n + 4) * FLT_EPSILON * (sum|a*b| + |beta*c| + |bias|) + 1e-30
 * (n = depth of the sum; +4 for alpha, beta, bias and activation roundings; the
 * activations used are 1-Lipschitz).  This bound cannot be tripped by a different
 * summation order but a wrong term (wrong index, missed tap, padding read as data) is
 * of the order of one |a*b| and fails it.  Max pooling, indices, and data movement
 * are exact.  Average pooling, BN and LRN use the same kind of bound, stated at each
 * check.
 *
 * Microkernel families: test_sgemm_isa_* run the SGEMM suite with each family forced
 * (oqcf_sgemm_force_isa); a family the CPU lacks is reported as skipped on stdout.
 * The families are also compared with each other on the same problems.
 *
 * To add a kernel test: write a reference in double next to the others, a test that
 * draws shapes with rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#include "harness.h"
#include "oqcf_nn.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static void rnd_seed(uint64_t s) {
    rng_state = s * 0x9E3779B97F4A7C15ull + 1;
}

static uint32_t rnd_u32(void) {   /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* Uniform integer in [lo, hi]. */
static int64_t rnd_int(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd_u32() % (uint32_t)(hi - lo + 1));
}

/* Uniform float in [-1, 1). */
static float rnd_f(void) {
    return (float)rnd_u32() / 2147483648.0f - 1.0f;
}

static float *rnd_buf(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd_f();
    return p;
}

static double ref_act(const OqcfAct *a, double v) {
    switch (a->kind) {
    case OQCF_ACT_RELU: return v > 0 ? v : 0;
    case OQCF_ACT_CLIP: return v < a->p0 ? a->p0 : (v > a->p1 ? a->p1 : v);
    case OQCF_ACT_LEAKY: return v >= 0 ? v : a->p0 * v;
    default: return v;
    }
}

static OqcfAct rnd_act(void) {
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
static int64_t mismatches(const char *what, const float *got, const double *ref,
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

static void *scratch_alloc(size_t n) {
    return malloc(n ? n : 1);
}

/* ---- thread pool ---------------------------------------------------------------- */

/* Context of the coverage test: every index must be visited exactly once. */
typedef struct CoverCtx {
    int *hits;          /* visits per index */
    int bad_tid;        /* set if a tid outside [0, nthreads) shows up */
    int nthreads;       /* pool size */
    OqcfPool *pool;     /* for the nested call */
    int nested_runs;    /* indices visited by nested calls */
} CoverCtx;

static void cover_fn(void *ctx, int64_t b, int64_t e, int tid) {
    CoverCtx *c = ctx;
    if (tid < 0 || tid >= c->nthreads || b >= e)
        __atomic_store_n(&c->bad_tid, 1, __ATOMIC_SEQ_CST);
    for (int64_t i = b; i < e; i++)
        __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_SEQ_CST);
}

static void nested_inner(void *ctx, int64_t b, int64_t e, int tid) {
    CoverCtx *c = ctx;
    (void)tid;
    __atomic_fetch_add(&c->nested_runs, (int)(e - b), __ATOMIC_SEQ_CST);
}

static void nested_outer(void *ctx, int64_t b, int64_t e, int tid) {
    CoverCtx *c = ctx;
    (void)b;
    (void)e;
    (void)tid;
    oqcf_parallel_for(c->pool, 10, nested_inner, c);   /* must run inline, not deadlock */
}

static void test_pool(void) {
    CU_ASSERT_EQUAL(oqcf_pool_create(0), NULL);
    CU_ASSERT_EQUAL(oqcf_pool_threads(NULL), 1);
    for (int nt = 1; nt <= 3; nt++) {
        OqcfPool *pool = oqcf_pool_create(nt);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
        CU_ASSERT_EQUAL(oqcf_pool_threads(pool), nt);
        int hits[100];
        CoverCtx c = {hits, 0, nt, pool, 0};
        const int64_t sizes[] = {0, 1, 2, 3, 7, 100};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            memset(hits, 0, sizeof hits);
            oqcf_parallel_for(pool, sizes[s], cover_fn, &c);
            for (int64_t i = 0; i < 100; i++)
                CU_ASSERT_EQUAL(hits[i], i < sizes[s] ? 1 : 0);
        }
        /* Many back-to-back jobs: a lost wake-up would hang here. */
        memset(hits, 0, sizeof hits);
        for (int r = 0; r < 20000; r++)
            oqcf_parallel_for(pool, 2 + r % 5, cover_fn, &c);
        CU_ASSERT_EQUAL(c.bad_tid, 0);
        c.nested_runs = 0;
        oqcf_parallel_for(pool, nt, nested_outer, &c);
        CU_ASSERT_EQUAL(c.nested_runs, 10 * nt);
        oqcf_pool_destroy(pool);
    }
    oqcf_pool_destroy(NULL);
}

/* ---- SGEMM ------------------------------------------------------------------------ */

/* One random SGEMM problem. */
typedef struct GemmCase {
    int ta, tb;                 /* transposes */
    int64_t M, N, K;            /* sizes */
    int64_t lda, ldb, ldc;      /* leading dimensions (>= minimum) */
    float alpha, beta;          /* scales */
    OqcfSgemmEpilogue epi;      /* epilogue (bias/act point into the arrays below) */
    float *A, *B, *C0, *bias;   /* inputs; C0 = C before the call */
    OqcfAct *acts;              /* activations */
} GemmCase;

static void gemm_case_make(GemmCase *g, int64_t M, int64_t N, int64_t K) {
    g->ta = (int)rnd_int(0, 1);
    g->tb = (int)rnd_int(0, 1);
    g->M = M;
    g->N = N;
    g->K = K;
    g->lda = (g->ta ? M : K) + rnd_int(0, 3);
    g->ldb = (g->tb ? K : N) + rnd_int(0, 3);
    g->ldc = N + rnd_int(0, 3);
    const float alphas[] = {1.0f, -0.5f, 2.0f};
    const float betas[] = {0.0f, 1.0f, 0.75f};
    g->alpha = alphas[rnd_int(0, 2)];
    g->beta = betas[rnd_int(0, 2)];
    g->A = rnd_buf((g->ta ? K : M) * g->lda);
    g->B = rnd_buf((g->tb ? N : K) * g->ldb);
    g->C0 = rnd_buf(M * g->ldc);
    if (g->beta == 0.0f)   /* beta == 0 must not read C: NaN would show */
        for (int64_t i = 0; i < M * g->ldc; i++)
            g->C0[i] = NAN;
    int64_t mn = M > N ? M : N;
    g->bias = rnd_buf(mn);
    g->acts = malloc(sizeof(OqcfAct) * (size_t)(mn > 0 ? mn : 1));
    for (int64_t i = 0; i < mn; i++)
        g->acts[i] = rnd_act();
    OqcfPer bias_per = (OqcfPer)rnd_int(0, 3);   /* separate statements: fixed draw order */
    OqcfPer act_per = (OqcfPer)rnd_int(0, 3);
    g->epi = (OqcfSgemmEpilogue){bias_per, g->bias, act_per, g->acts};
}

static void gemm_case_free(GemmCase *g) {
    free(g->A);
    free(g->B);
    free(g->C0);
    free(g->bias);
    free(g->acts);
}

/* Runs the case with the current microkernel family; returns C (M x ldc) or NULL. */
static float *gemm_case_run(const GemmCase *g, OqcfPool *pool, int *status) {
    float *C = malloc(sizeof(float) * (size_t)(g->M * g->ldc > 0 ? g->M * g->ldc : 1));
    memcpy(C, g->C0, sizeof(float) * (size_t)(g->M * g->ldc));
    size_t ss = oqcf_sgemm_scratch_size(g->M, g->N, g->K, oqcf_pool_threads(pool));
    void *scratch = scratch_alloc(ss);
    *status = oqcf_sgemm(pool, g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B,
                         g->ldb, g->beta, C, g->ldc, &g->epi, scratch, ss);
    free(scratch);
    return C;
}

/* Checks C against the double reference; returns the number of bad elements. */
static int64_t gemm_case_check(const GemmCase *g, const float *C) {
    int64_t bad = 0;
    for (int64_t i = 0; i < g->M; i++) {
        for (int64_t j = 0; j < g->N; j++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < g->K; k++) {
                double a = g->ta ? g->A[k * g->lda + i] : g->A[i * g->lda + k];
                double b = g->tb ? g->B[j * g->ldb + k] : g->B[k * g->ldb + j];
                s += a * b;
                mag += fabs(a * b);
            }
            double v = g->alpha * s;
            mag *= fabs(g->alpha);
            if (g->beta != 0.0f) {
                v += g->beta * (double)g->C0[i * g->ldc + j];
                mag += fabs(g->beta * (double)g->C0[i * g->ldc + j]);
            }
            const OqcfSgemmEpilogue *e = &g->epi;
            int64_t bi = e->bias_per == OQCF_PER_ROW ? i : e->bias_per == OQCF_PER_COL ? j : 0;
            if (e->bias_per != OQCF_PER_NONE) {
                v += e->bias[bi];
                mag += fabs(e->bias[bi]);
            }
            int64_t ai = e->act_per == OQCF_PER_ROW ? i : e->act_per == OQCF_PER_COL ? j : 0;
            if (e->act_per != OQCF_PER_NONE)
                v = ref_act(&e->act[ai], v);
            double tol = (double)(g->K + 4) * FLT_EPSILON * mag + 1e-30;
            bad += mismatches("sgemm", &C[i * g->ldc + j], &v, &tol, 1);
        }
        for (int64_t j = g->N; j < g->ldc; j++)   /* padding columns untouched */
            if (memcmp(&C[i * g->ldc + j], &g->C0[i * g->ldc + j], sizeof(float)))
                bad++;
    }
    return bad;
}

/* Random SGEMMs with the current family, 1 and 2 threads. */
static void sgemm_suite(uint64_t seed) {
    OqcfPool *pool2 = oqcf_pool_create(2);
    rnd_seed(seed);
    /* Odd small sizes, then sizes crossing the MC (144), KC (256 / 384) and NC (2048)
     * blocks of every family. */
    static const int64_t big[][3] = {{150, 70, 300}, {13, 2100, 33}, {290, 37, 400},
                                     {7, 300, 770}};
    for (int t = 0; t < 44; t++) {
        int64_t M, N, K;
        if (t < 40) {
            M = rnd_int(1, 40);
            N = rnd_int(1, 70);
            K = rnd_int(1, 50);
        } else {
            M = big[t - 40][0];
            N = big[t - 40][1];
            K = big[t - 40][2];
        }
        GemmCase g;
        gemm_case_make(&g, M, N, K);
        for (int th = 0; th < 2; th++) {
            int st;
            float *C = gemm_case_run(&g, th ? pool2 : NULL, &st);
            CU_ASSERT_EQUAL(st, OQCF_OK);
            int64_t bad = gemm_case_check(&g, C);
            if (bad)
                printf("\n  case %d: M=%lld N=%lld K=%lld ta=%d tb=%d threads=%d", t,
                       (long long)M, (long long)N, (long long)K, g.ta, g.tb, th + 1);
            CU_ASSERT_EQUAL(bad, 0);
            free(C);
        }
        gemm_case_free(&g);
    }
    oqcf_pool_destroy(pool2);
}

static void isa_suite(OqcfIsa isa, const char *name) {
    if (oqcf_sgemm_force_isa(isa) != OQCF_OK) {
        printf("\n  [%s microkernel not supported by this CPU: skipped] ", name);
        return;
    }
    CU_ASSERT_EQUAL(oqcf_sgemm_isa(), isa);
    sgemm_suite(1000 + (uint64_t)isa);
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
}

static void test_sgemm_isa_portable(void) {
    isa_suite(OQCF_ISA_PORTABLE, "portable");
}

static void test_sgemm_isa_avx2(void) {
    isa_suite(OQCF_ISA_AVX2, "AVX2");
}

static void test_sgemm_isa_avx512(void) {
    isa_suite(OQCF_ISA_AVX512, "AVX-512");
}

/* Every supported family gives the same result as the portable one, to the bound. */
static void test_sgemm_isa_agree(void) {
    const OqcfIsa isas[] = {OQCF_ISA_AVX2, OQCF_ISA_AVX512};
    rnd_seed(77);
    int compared = 0;
    for (int t = 0; t < 12; t++) {
        GemmCase g;
        int64_t M = rnd_int(1, 60), N = rnd_int(1, 90), K = rnd_int(1, 300);
        gemm_case_make(&g, M, N, K);
        g.epi.act_per = OQCF_PER_NONE;   /* compare the linear part */
        oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        int st;
        float *ref = gemm_case_run(&g, NULL, &st);
        for (int i = 0; i < 2; i++) {
            if (oqcf_sgemm_force_isa(isas[i]) != OQCF_OK)
                continue;
            float *C = gemm_case_run(&g, NULL, &st);
            for (int64_t r = 0; r < g.M; r++) {
                for (int64_t c = 0; c < g.N; c++) {
                    double mag = 0;
                    for (int64_t k = 0; k < g.K; k++) {
                        double a = g.ta ? g.A[k * g.lda + r] : g.A[r * g.lda + k];
                        double b = g.tb ? g.B[c * g.ldb + k] : g.B[k * g.ldb + c];
                        mag += fabs(a * b);
                    }
                    mag = mag * fabs(g.alpha) + 2.0;   /* + |beta C| + |bias| <= 2 */
                    double want = ref[r * g.ldc + c];
                    /* both are within the bound of the exact value: twice the bound */
                    double tol = 2.0 * (double)(g.K + 4) * FLT_EPSILON * mag;
                    CU_ASSERT_EQUAL(mismatches("isa-agree", &C[r * g.ldc + c], &want, &tol, 1),
                                    0);
                }
            }
            compared++;
            free(C);
        }
        free(ref);
        gemm_case_free(&g);
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    if (!compared)
        printf("\n  [no vector microkernel on this CPU: nothing to compare] ");
}

static void test_sgemm_edges(void) {
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4] = {1, 1, 1, 1};
    float bias[2] = {10, 20};
    OqcfAct relu = {OQCF_ACT_RELU, 0, 0};
    OqcfSgemmEpilogue epi = {OQCF_PER_ROW, bias, OQCF_PER_ALL, &relu};
    /* K == 0: C = act(beta * C + bias), no scratch needed. */
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 2, 2, 0, 1.0f, NULL, 0, NULL, 0, -2.0f, C, 2, &epi,
                               NULL, 0), OQCF_OK);
    CU_ASSERT_EQUAL(C[0], 8.0f);
    CU_ASSERT_EQUAL(C[3], 18.0f);
    /* Hand example: [1 2 3; 4 5 6] x [1 0; 0 1; 1 1] = [4 5; 10 11]. */
    size_t ss = oqcf_sgemm_scratch_size(2, 2, 3, 1);
    void *s = scratch_alloc(ss);
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, s, ss),
                    OQCF_OK);
    CU_ASSERT(C[0] == 4.0f && C[1] == 5.0f && C[2] == 10.0f && C[3] == 11.0f);
    /* Errors. */
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, s, 8),
                    OQCF_ESCRATCH);
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, NULL, 0),
                    OQCF_ESCRATCH);
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 2, 2, 3, 1.0f, A, 2, B, 2, 0.0f, C, 2, NULL, s, ss),
                    OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, -1, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, s, ss),
                    OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 0, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, s, ss),
                    OQCF_OK);
    /* Scratch sized for one thread with a 2-thread pool: runs on fewer threads. */
    OqcfPool *pool = oqcf_pool_create(2);
    CU_ASSERT_EQUAL(oqcf_sgemm(pool, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, NULL, s, ss),
                    OQCF_OK);
    CU_ASSERT(C[0] == 4.0f && C[3] == 11.0f);
    oqcf_pool_destroy(pool);
    free(s);
    CU_ASSERT(oqcf_sgemm_isa_supported(OQCF_ISA_PORTABLE));
    CU_ASSERT_EQUAL(oqcf_sgemm_force_isa((OqcfIsa)99), OQCF_EINVAL);
}

/* ---- Conv ------------------------------------------------------------------------ */

/* Naive N-d conv in double; y is dense N x K x out (the view is applied by the caller). */
static void ref_conv(const OqcfConvParams *p, const float *x, const float *w, const float *b,
                     double *y, double *tol) {
    int ns = p->nspatial;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1},
            dl[3] = {1, 1, 1}, pd[3] = {0, 0, 0};
    for (int i = 0; i < ns; i++) {
        int a = 3 - ns + i;
        in[a] = p->in_size[i];
        out[a] = p->out_size[i];
        ker[a] = p->kernel[i];
        st[a] = p->stride[i];
        dl[a] = p->dilation[i];
        pd[a] = p->pad_begin[i];
    }
    int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t inpl = in[0] * in[1] * in[2], outpl = out[0] * out[1] * out[2];
    int64_t taps = ker[0] * ker[1] * ker[2];
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t k = 0; k < p->out_channels; k++) {
            int64_t g = k / Kg;
            for (int64_t o = 0; o < outpl; o++) {
                int64_t od = o / (out[1] * out[2]), oh = o / out[2] % out[1], ow = o % out[2];
                double s = b ? b[k] : 0, mag = b ? fabs(b[k]) : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t t = 0; t < taps; t++) {
                        int64_t kd = t / (ker[1] * ker[2]), kh = t / ker[2] % ker[1];
                        int64_t kw = t % ker[2];
                        int64_t id = od * st[0] - pd[0] + kd * dl[0];
                        int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                        int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                        if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 ||
                            iw >= in[2])
                            continue;
                        double xv = x[(n * xct + p->x_coff + g * Cg + c) * inpl +
                                      (id * in[1] + ih) * in[2] + iw];
                        double wv = w[(k * Cg + c) * taps + t];
                        s += xv * wv;
                        mag += fabs(xv * wv);
                    }
                const OqcfAct *a = p->act_per_channel ? &p->act_per_channel[k] : &p->act;
                int64_t idx = (n * p->out_channels + k) * outpl + o;
                y[idx] = ref_act(a, s);
                tol[idx] = (double)(Cg * taps + 4) * FLT_EPSILON * mag + 1e-30;
            }
        }
}

/* Runs one conv case (views applied here) and checks it; returns bad elements. */
static int64_t conv_check(OqcfPool *pool, const OqcfConvParams *p, int with_bias) {
    int64_t inpl = 1, outpl = 1, taps = 1;
    for (int i = 0; i < p->nspatial; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
        taps *= p->kernel[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t yct = p->y_ctotal ? p->y_ctotal : p->out_channels;
    float *x = rnd_buf(p->batch * xct * inpl);
    float *w = rnd_buf(p->out_channels * (p->channels / p->group) * taps);
    float *b = with_bias ? rnd_buf(p->out_channels) : NULL;
    int64_t ny = p->batch * yct * outpl, nref = p->batch * p->out_channels * outpl;
    float *y = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++)
        y[i] = -777.0f;   /* channels outside the view must keep this */
    double *ref = malloc(sizeof(double) * (size_t)nref), *tol = malloc(sizeof(double) * (size_t)nref);
    ref_conv(p, x, w, b, ref, tol);
    size_t ss = oqcf_conv_scratch_size(p, oqcf_pool_threads(pool));
    void *s = scratch_alloc(ss);
    int st = oqcf_conv(pool, p, x, w, b, y, s, ss);
    CU_ASSERT_EQUAL(st, OQCF_OK);
    int64_t bad = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < yct; c++) {
            const float *yp = y + (n * yct + c) * outpl;
            int in_view = c >= p->y_coff && c < p->y_coff + p->out_channels;
            if (in_view) {
                int64_t r = (n * p->out_channels + c - p->y_coff) * outpl;
                bad += mismatches("conv", yp, ref + r, tol + r, outpl);
            } else {
                for (int64_t i = 0; i < outpl; i++)
                    bad += yp[i] != -777.0f;
            }
        }
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
    free(tol);
    free(s);
    return bad;
}

/* Fills geometry fields with random kernel/stride/dilation/pads and the out sizes. */
static void rnd_geometry(OqcfConvParams *p, int ns, int64_t maxin) {
    p->nspatial = ns;
    for (int i = 0; i < ns; i++) {
        p->kernel[i] = rnd_int(1, 3 + (ns < 3));
        p->stride[i] = rnd_int(1, 3);
        p->dilation[i] = rnd_int(1, 2);
        p->pad_begin[i] = rnd_int(0, 2);
        p->pad_end[i] = rnd_int(0, 2);
        int64_t span = p->dilation[i] * (p->kernel[i] - 1) + 1;
        int64_t lo = span - p->pad_begin[i] - p->pad_end[i];
        p->in_size[i] = rnd_int(lo < 1 ? 1 : lo, (lo < 1 ? 1 : lo) + maxin);
        p->out_size[i] =
            (p->in_size[i] + p->pad_begin[i] + p->pad_end[i] - span) / p->stride[i] + 1;
    }
}

static void test_conv_random(void) {
    OqcfPool *pool2 = oqcf_pool_create(2);
    rnd_seed(5);
    for (int t = 0; t < 120; t++) {
        OqcfConvParams p = {0};
        int ns = t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 3;
        rnd_geometry(&p, ns, ns == 3 ? 5 : ns == 2 ? 11 : 30);
        p.batch = rnd_int(1, 2);
        int64_t g = rnd_int(1, 3);
        int depthwise = t % 7 == 3;
        p.group = depthwise ? rnd_int(1, 9) : g;
        p.channels = depthwise ? p.group : g * rnd_int(1, 5);
        p.out_channels = depthwise ? p.group : g * rnd_int(1, 9);
        if (t % 4 == 1) {   /* channel views on both sides */
            p.x_coff = rnd_int(0, 3);
            p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 3);
            p.y_coff = rnd_int(0, 3);
            p.y_ctotal = p.y_coff + p.out_channels + rnd_int(0, 3);
        }
        p.act = rnd_act();
        OqcfAct acts[64];
        if (t % 5 == 2) {
            for (int64_t k = 0; k < p.out_channels; k++)
                acts[k] = rnd_act();
            p.act_per_channel = acts;
        }
        int64_t bad = conv_check(t % 2 ? pool2 : NULL, &p, t % 6 != 5);
        if (bad)
            printf("\n  conv case %d (ns=%d g=%lld C=%lld K=%lld)", t, ns, (long long)p.group,
                   (long long)p.channels, (long long)p.out_channels);
        CU_ASSERT_EQUAL(bad, 0);
    }
    oqcf_pool_destroy(pool2);
}

/* Specific shapes: 1x1 fast path (with views, batch 2), resnet-like 3x3 and 7x7/2,
 * depthwise with stride and dilation, and the same under the portable microkernel. */
static void test_conv_shapes(void) {
    OqcfPool *pool2 = oqcf_pool_create(2);
    rnd_seed(9);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        OqcfConvParams pw = {2, 2, 24, 40, 1, {9, 7}, {9, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0},
                             {0, 0}, 30, 5, 50, 7, {OQCF_ACT_RELU, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(pool2, &pw, 1), 0);
        OqcfConvParams c33 = {2, 1, 16, 20, 1, {14, 14}, {14, 14}, {3, 3}, {1, 1}, {1, 1},
                              {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_CLIP, 0.0f, 0.5f}, NULL};
        CU_ASSERT_EQUAL(conv_check(pool2, &c33, 1), 0);
        OqcfConvParams c77 = {2, 1, 3, 8, 1, {37, 37}, {19, 19}, {7, 7}, {2, 2}, {1, 1},
                              {3, 3}, {3, 3}, 0, 0, 0, 0, {OQCF_ACT_NONE, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(NULL, &c77, 1), 0);
        OqcfConvParams dw = {2, 2, 12, 12, 12, {17, 16}, {8, 8}, {3, 3}, {2, 2}, {2, 1},
                             {1, 0}, {2, 1}, 0, 0, 0, 0, {OQCF_ACT_LEAKY, 0.1f, 0}, NULL};
        dw.out_size[0] = (17 + 1 + 2 - 2 * 2 - 1) / 2 + 1;
        dw.out_size[1] = (16 + 0 + 1 - 1 * 2 - 1) / 2 + 1;
        CU_ASSERT_EQUAL(conv_check(pool2, &dw, 1), 0);
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    /* Inconsistent output size and bad views are rejected. */
    OqcfConvParams bad = {1, 1, 2, 2, 1, {5}, {4}, {3}, {1}, {1}, {0}, {0}};
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &bad, NULL, NULL, NULL, NULL, NULL, 0), OQCF_EINVAL);
    bad.out_size[0] = 3;
    bad.x_ctotal = 3;
    bad.x_coff = 2;
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &bad, NULL, NULL, NULL, NULL, NULL, 0), OQCF_EINVAL);
    oqcf_pool_destroy(pool2);
}

/* ---- pooling -------------------------------------------------------------------- */

/* Naive pooling straight from the ONNX definition: every tap of every window is
 * visited; taps outside the input are skipped (max, avg count) or counted when inside
 * input + explicit pads (avg, count_include_pad). */
static void ref_pool(const OqcfPoolParams *p, const float *x, int is_max, double *y,
                     int64_t *ind, double *tol) {
    int ns = p->nspatial;
    int64_t inpl = 1, outpl = 1, taps = 1;
    for (int i = 0; i < ns; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
        taps *= p->kernel[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < p->channels; c++)
            for (int64_t o = 0; o < outpl; o++) {
                int64_t oi[3], rem = o;
                for (int i = ns - 1; i >= 0; i--) {
                    oi[i] = rem % p->out_size[i];
                    rem /= p->out_size[i];
                }
                double best = -FLT_MAX, sum = 0, mag = 0;
                int64_t at = -1, cnt = 0, cntp = 0;
                for (int64_t t = 0; t < taps; t++) {
                    int64_t ki[3], pos[3], r2 = t, inside = 1, inpad = 1;
                    for (int i = ns - 1; i >= 0; i--) {
                        ki[i] = r2 % p->kernel[i];
                        r2 /= p->kernel[i];
                    }
                    for (int i = 0; i < ns; i++) {
                        pos[i] = oi[i] * p->stride[i] - p->pad_begin[i] + ki[i] * p->dilation[i];
                        inside &= pos[i] >= 0 && pos[i] < p->in_size[i];
                        inpad &= pos[i] < p->in_size[i] + p->pad_end[i];
                    }
                    cntp += inpad;
                    if (!inside)
                        continue;
                    int64_t off = 0, offc = 0, mul = 1;
                    for (int i = 0; i < ns; i++)
                        off = off * p->in_size[i] + pos[i];
                    for (int i = 0; i < ns; i++) {   /* column-major: first axis fastest */
                        offc += pos[i] * mul;
                        mul *= p->in_size[i];
                    }
                    double v = x[(n * xct + p->x_coff + c) * inpl + off];
                    cnt++;
                    sum += v;
                    mag += fabs(v);
                    if (v > best || at < 0) {
                        best = v;
                        at = (n * p->channels + c) * inpl + (p->storage_order ? offc : off);
                    }
                }
                int64_t idx = (n * p->channels + c) * outpl + o;
                if (is_max) {
                    y[idx] = best;
                    ind[idx] = at;
                    tol[idx] = 0;
                } else {
                    int64_t d = p->count_include_pad ? cntp : cnt;
                    y[idx] = d ? sum / (double)d : 0;
                    /* sum of cnt floats, then one division */
                    tol[idx] = d ? ((double)cnt + 2) * FLT_EPSILON * mag / (double)d : 0;
                }
            }
}

static int64_t pool_check(OqcfPool *pool, const OqcfPoolParams *p, int is_max) {
    int64_t inpl = 1, outpl = 1;
    for (int i = 0; i < p->nspatial; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t yct = p->y_ctotal ? p->y_ctotal : p->channels;
    int64_t nref = p->batch * p->channels * outpl, ny = p->batch * yct * outpl;
    float *x = rnd_buf(p->batch * xct * inpl);
    float *y = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++)
        y[i] = -777.0f;
    int64_t *ind = malloc(sizeof(int64_t) * (size_t)nref), *rind = malloc(sizeof(int64_t) * (size_t)nref);
    double *ref = malloc(sizeof(double) * (size_t)nref), *tol = malloc(sizeof(double) * (size_t)nref);
    ref_pool(p, x, is_max, ref, rind, tol);
    int st = is_max ? oqcf_maxpool(pool, p, x, y, ind) : oqcf_avgpool(pool, p, x, y);
    CU_ASSERT_EQUAL(st, OQCF_OK);
    int64_t bad = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < yct; c++) {
            const float *yp = y + (n * yct + c) * outpl;
            if (c >= p->y_coff && c < p->y_coff + p->channels) {
                int64_t r = (n * p->channels + c - p->y_coff) * outpl;
                bad += mismatches(is_max ? "maxpool" : "avgpool", yp, ref + r, tol + r, outpl);
            } else {
                for (int64_t i = 0; i < outpl; i++)
                    bad += yp[i] != -777.0f;
            }
        }
    if (is_max)
        for (int64_t i = 0; i < nref; i++)
            bad += ind[i] != rind[i];
    free(x);
    free(y);
    free(ind);
    free(rind);
    free(ref);
    free(tol);
    return bad;
}

static void test_pool_random(void) {
    OqcfPool *pool2 = oqcf_pool_create(2);
    rnd_seed(11);
    for (int t = 0; t < 160; t++) {
        OqcfPoolParams p = {0};
        int ns = 1 + t % 3;
        p.nspatial = ns;
        p.batch = rnd_int(1, 2);
        p.channels = rnd_int(1, 4);
        int ceil_mode = (t / 3) % 2;
        for (int i = 0; i < ns; i++) {
            p.kernel[i] = rnd_int(1, 3);
            p.stride[i] = rnd_int(1, 3);
            p.dilation[i] = rnd_int(1, 2);
            p.pad_begin[i] = rnd_int(0, p.kernel[i] - 1);   /* ONNX: pads < kernel */
            p.pad_end[i] = rnd_int(0, p.kernel[i] - 1);
            int64_t span = p.dilation[i] * (p.kernel[i] - 1) + 1;
            int64_t lo = span - p.pad_begin[i] - p.pad_end[i];
            p.in_size[i] = rnd_int(lo < 1 ? 1 : lo, (lo < 1 ? 1 : lo) + (ns == 3 ? 5 : 12));
            int64_t num = p.in_size[i] + p.pad_begin[i] + p.pad_end[i] - span;
            p.out_size[i] = (ceil_mode ? (num + p.stride[i] - 1) / p.stride[i] : num / p.stride[i]) + 1;
            /* ONNX ceil_mode: the last window must start inside input or left pad */
            if (ceil_mode && (p.out_size[i] - 1) * p.stride[i] >= p.in_size[i] + p.pad_begin[i])
                p.out_size[i]--;
        }
        p.count_include_pad = (t / 2) % 2;
        p.storage_order = (t / 5) % 2;
        if (t % 4 == 3) {
            p.x_coff = rnd_int(0, 2);
            p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 2);
            p.y_coff = rnd_int(0, 2);
            p.y_ctotal = p.y_coff + p.channels + rnd_int(0, 2);
        }
        int64_t bad = pool_check(t % 2 ? pool2 : NULL, &p, t % 2);
        if (bad)
            printf("\n  pool case %d (ns=%d ceil=%d)", t, ns, ceil_mode);
        CU_ASSERT_EQUAL(bad, 0);
    }
    oqcf_pool_destroy(pool2);
}

/* Hand-worked ONNX examples (independent of ref_pool). */
static void test_pool_examples(void) {
    /* 1-D x = [1 2 3 4 5], kernel 2, stride 2, ceil_mode: 3 outputs, the last window
     * [5, past-the-end]. */
    float x[5] = {1, 2, 3, 4, 5}, y[3];
    int64_t ind[3];
    OqcfPoolParams p = {1, 1, 1, {5}, {3}, {2}, {2}, {1}, {0}, {0}};
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &p, x, y, ind), OQCF_OK);
    CU_ASSERT(y[0] == 2 && y[1] == 4 && y[2] == 5);
    CU_ASSERT(ind[0] == 1 && ind[1] == 3 && ind[2] == 4);
    p.count_include_pad = 1;   /* no explicit pads: the overhang is not counted */
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &p, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.5f && y[1] == 3.5f && y[2] == 5.0f);
    /* pads (1, 1), kernel 3, stride 2: windows [-1..1], [1..3], [3..5]. */
    OqcfPoolParams q = {1, 1, 1, {5}, {3}, {3}, {2}, {1}, {1}, {1}, 1};
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &q, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.0f && y[1] == 3.0f && y[2] == 3.0f);   /* 3/3, 9/3, 9/3 */
    q.count_include_pad = 0;
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &q, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.5f && y[1] == 3.0f && y[2] == 4.5f);
    /* 2-D storage_order 1: x is 2 x 3 = [[1 9 2] [3 4 8]], global 2x3 window: max 9 at
     * (0, 1): row-major 1, column-major 0 + 1 * 2 = 2; batch 1 channel 1 adds 6. */
    float x2[12] = {0, 0, 0, 0, 0, 0, 1, 9, 2, 3, 4, 8}, y2[2];
    int64_t i2[2];
    OqcfPoolParams r = {2, 1, 2, {2, 3}, {1, 1}, {2, 3}, {1, 1}, {1, 1}};
    r.storage_order = 1;
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &r, x2, y2, i2), OQCF_OK);
    CU_ASSERT(y2[1] == 9.0f && i2[0] == 0 && i2[1] == 6 + 2);
    r.storage_order = 0;
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &r, x2, y2, i2), OQCF_OK);
    CU_ASSERT(i2[1] == 6 + 1);
}

static void test_global_pool(void) {
    rnd_seed(13);
    OqcfPool *pool2 = oqcf_pool_create(2);
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 3), C = rnd_int(1, 7), S = rnd_int(1, 200);
        float *x = rnd_buf(N * C * S), *ya = malloc(sizeof(float) * (size_t)(N * C)),
              *ym = malloc(sizeof(float) * (size_t)(N * C));
        CU_ASSERT_EQUAL(oqcf_global_avgpool(t % 2 ? pool2 : NULL, N, C, S, x, ya), OQCF_OK);
        CU_ASSERT_EQUAL(oqcf_global_maxpool(t % 2 ? pool2 : NULL, N, C, S, x, ym), OQCF_OK);
        for (int64_t pl = 0; pl < N * C; pl++) {
            double s = 0, mag = 0, m = -INFINITY;
            for (int64_t i = 0; i < S; i++) {
                s += x[pl * S + i];
                mag += fabs(x[pl * S + i]);
                m = x[pl * S + i] > m ? x[pl * S + i] : m;
            }
            double avg = s / (double)S, tol = ((double)S + 2) * FLT_EPSILON * mag / (double)S;
            CU_ASSERT_EQUAL(mismatches("gavg", &ya[pl], &avg, &tol, 1), 0);
            CU_ASSERT_EQUAL(ym[pl], (float)m);
        }
        free(x);
        free(ya);
        free(ym);
    }
    oqcf_pool_destroy(pool2);
}

/* ---- normalisation ------------------------------------------------------------------ */

static void test_batchnorm(void) {
    rnd_seed(17);
    OqcfPool *pool2 = oqcf_pool_create(2);
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 3), C = rnd_int(1, 9), S = t % 4 == 0 ? 1 : rnd_int(1, 50);
        float *x = rnd_buf(N * C * S), *y = malloc(sizeof(float) * (size_t)(N * C * S));
        float *sc = rnd_buf(C), *bi = rnd_buf(C), *mu = rnd_buf(C), *var = rnd_buf(C);
        for (int64_t c = 0; c < C; c++)
            var[c] = fabsf(var[c]) + 0.01f;
        float eps = 1e-5f;
        int in_place = t % 3 == 0;
        if (in_place)
            memcpy(y, x, sizeof(float) * (size_t)(N * C * S));
        CU_ASSERT_EQUAL(oqcf_batchnorm(t % 2 ? pool2 : NULL, N, C, S, in_place ? y : x, sc, bi,
                                       mu, var, eps, y), OQCF_OK);
        for (int64_t i = 0; i < N * C * S; i++) {
            int64_t c = i / S % C;
            double inv = 1.0 / sqrt((double)var[c] + eps);
            double want = ((double)x[i] - mu[c]) * inv * sc[c] + bi[c];
            /* folded into x*a + b: a, b and the product/sum each rounded once */
            double tol = 6 * FLT_EPSILON *
                         (fabs(x[i] * inv * sc[c]) + fabs(mu[c] * inv * sc[c]) + fabs(bi[c]));
            CU_ASSERT_EQUAL(mismatches("bn", &y[i], &want, &tol, 1), 0);
        }
        free(x);
        free(y);
        free(sc);
        free(bi);
        free(mu);
        free(var);
    }
    oqcf_pool_destroy(pool2);
}

static void test_lrn(void) {
    rnd_seed(19);
    OqcfPool *pool2 = oqcf_pool_create(2);
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 12), S = rnd_int(1, 30), size = rnd_int(1, 6);
        float alpha = 1e-2f * (1 + rnd_f()), beta = 0.75f + 0.2f * rnd_f(), bias = 1.0f + rnd_f() * 0.5f;
        float *x = rnd_buf(N * C * S), *y = malloc(sizeof(float) * (size_t)(N * C * S));
        CU_ASSERT_EQUAL(oqcf_lrn(t % 2 ? pool2 : NULL, N, C, S, x, size, alpha, beta, bias, y),
                        OQCF_OK);
        for (int64_t i = 0; i < N * C * S; i++) {
            int64_t n = i / (C * S), c = i / S % C, s = i % S;
            int64_t lo = c - (size - 1) / 2, hi = c + size / 2;   /* floor, ceil of (size-1)/2 */
            double sq = 0;
            for (int64_t cc = lo < 0 ? 0 : lo; cc <= (hi > C - 1 ? C - 1 : hi); cc++) {
                double v = x[(n * C + cc) * S + s];
                sq += v * v;
            }
            double want = x[i] / pow(bias + alpha / size * sq, beta);
            /* size-term float sum of squares, then powf (a few ulp) and a division */
            double tol = ((double)size + 12) * FLT_EPSILON * fabs(want);
            CU_ASSERT_EQUAL(mismatches("lrn", &y[i], &want, &tol, 1), 0);
        }
        CU_ASSERT_EQUAL(oqcf_lrn(NULL, N, C, S, x, size, alpha, beta, bias, x), OQCF_EINVAL);
        free(x);
        free(y);
    }
    oqcf_pool_destroy(pool2);
}

/* ---- Gemm and MatMul ----------------------------------------------------------------- */

static void test_gemm_op(void) {
    rnd_seed(23);
    OqcfPool *pool2 = oqcf_pool_create(2);
    for (int t = 0; t < 80; t++) {
        OqcfGemmParams p = {0};
        p.M = rnd_int(1, 20);
        p.N = rnd_int(1, 25);
        p.K = rnd_int(1, 30);
        p.trans_a = (int)rnd_int(0, 1);
        p.trans_b = (int)rnd_int(0, 1);
        const float alphas[] = {1.0f, 0.5f, -2.0f}, betas[] = {1.0f, 0.0f, 0.25f};
        p.alpha = alphas[rnd_int(0, 2)];
        p.beta = betas[rnd_int(0, 2)];
        int shape = t % 8;   /* none, (), (N), (1,N), (M,1), (M,N), (1,1), (1) */
        p.has_c = shape != 0;
        OqcfShape cs[8] = {{0}, {0}, {1, {p.N}}, {2, {1, p.N}}, {2, {p.M, 1}},
                           {2, {p.M, p.N}}, {2, {1, 1}}, {1, {1}}};
        p.c_shape = cs[shape];
        if (t % 10 == 9)
            p.act = (OqcfAct){OQCF_ACT_RELU, 0, 0};
        float *A = rnd_buf(p.M * p.K), *B = rnd_buf(p.K * p.N), *C = rnd_buf(p.M * p.N);
        float *Y = malloc(sizeof(float) * (size_t)(p.M * p.N));
        int in_place = shape == 5 && t % 3 == 0;
        size_t ss = oqcf_gemm_scratch_size(&p, 2);
        void *s = scratch_alloc(ss);
        float *C0 = malloc(sizeof(float) * (size_t)(p.M * p.N));
        memcpy(C0, C, sizeof(float) * (size_t)(p.M * p.N));
        CU_ASSERT_EQUAL(oqcf_gemm(t % 2 ? pool2 : NULL, &p, A, B, p.has_c ? C : NULL,
                                  in_place ? C : Y, s, ss), OQCF_OK);
        const float *out = in_place ? C : Y;
        for (int64_t i = 0; i < p.M; i++)
            for (int64_t j = 0; j < p.N; j++) {
                double sum = 0, mag = 0;
                for (int64_t k = 0; k < p.K; k++) {
                    double a = p.trans_a ? A[k * p.M + i] : A[i * p.K + k];
                    double b = p.trans_b ? B[j * p.K + k] : B[k * p.N + j];
                    sum += a * b;
                    mag += fabs(a * b);
                }
                double v = p.alpha * sum, cv = 0;
                mag *= fabs(p.alpha);
                if (p.has_c) {
                    int64_t r = p.c_shape.rank == 2 ? p.c_shape.d[0] : 1;
                    int64_t c = p.c_shape.rank >= 1 ? p.c_shape.d[p.c_shape.rank - 1] : 1;
                    cv = C0[(r == 1 ? 0 : i) * c + (c == 1 ? 0 : j)];
                }
                v += p.beta * cv;
                mag += fabs(p.beta * cv);
                v = ref_act(&p.act, v);
                double tol = (double)(p.K + 4) * FLT_EPSILON * mag + 1e-30;
                CU_ASSERT_EQUAL(mismatches("gemm", &out[i * p.N + j], &v, &tol, 1), 0);
            }
        free(A);
        free(B);
        free(C);
        free(C0);
        free(Y);
        free(s);
    }
    OqcfGemmParams bad = {3, 4, 5, 0, 0, 1.0f, 1.0f, 1, {1, {3}}};   /* (3) vs N = 4 */
    CU_ASSERT_EQUAL(oqcf_gemm(NULL, &bad, NULL, NULL, NULL, NULL, NULL, 0), OQCF_EINVAL);
    oqcf_pool_destroy(pool2);
}

/* Runs MatMul on random data and checks it against a reference using numpy rules
 * re-derived here (1-D promotion, right-aligned batch broadcasting). */
static void matmul_case(OqcfPool *pool, const OqcfShape *as, const OqcfShape *bs,
                        const OqcfShape *want_shape) {
    OqcfShape ys;
    CU_ASSERT_EQUAL_FATAL(oqcf_matmul_shape(as, bs, &ys), OQCF_OK);
    CU_ASSERT_EQUAL(ys.rank, want_shape->rank);
    for (int i = 0; i < ys.rank && i < want_shape->rank; i++)
        CU_ASSERT_EQUAL(ys.d[i], want_shape->d[i]);
    float *A = rnd_buf(oqcf_numel(as)), *B = rnd_buf(oqcf_numel(bs));
    int64_t ny = oqcf_numel(&ys);
    float *Y = malloc(sizeof(float) * (size_t)(ny > 0 ? ny : 1));
    size_t ss = oqcf_matmul_scratch_size(as, bs, oqcf_pool_threads(pool));
    void *s = scratch_alloc(ss);
    CU_ASSERT_EQUAL(oqcf_matmul(pool, as, A, bs, B, Y, s, ss), OQCF_OK);
    int ar = as->rank, br = bs->rank;
    int64_t M = ar >= 2 ? as->d[ar - 2] : 1, K = as->d[ar - 1];
    int64_t N = br >= 2 ? bs->d[br - 1] : 1;
    int64_t nbatch = ny / (M * N > 0 ? M * N : 1);
    int nb = ys.rank - (ar >= 2) - (br >= 2);
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t aoff = 0, boff = 0, amul = M * K, bmul = K * N, rem = t;
        for (int i = nb - 1; i >= 0; i--) {   /* batch axis i of Y, right-aligned */
            int64_t idx = rem % ys.d[i];
            rem /= ys.d[i];
            int ia = i - (nb - (ar > 2 ? ar - 2 : 0)), ib = i - (nb - (br > 2 ? br - 2 : 0));
            if (ia >= 0) {
                aoff += (as->d[ia] == 1 ? 0 : idx) * amul;
                amul *= as->d[ia];
            }
            if (ib >= 0) {
                boff += (bs->d[ib] == 1 ? 0 : idx) * bmul;
                bmul *= bs->d[ib];
            }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double sum = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = (double)A[aoff + i * K + k] * B[boff + k * N + j];
                    sum += p;
                    mag += fabs(p);
                }
                double tol = (double)(K + 2) * FLT_EPSILON * mag + 1e-30;
                CU_ASSERT_EQUAL(mismatches("matmul", &Y[t * M * N + i * N + j], &sum, &tol, 1), 0);
            }
    }
    free(A);
    free(B);
    free(Y);
    free(s);
}

static void test_matmul(void) {
    rnd_seed(29);
    OqcfPool *pool2 = oqcf_pool_create(2);
    const struct {
        OqcfShape a, b, y;   /* operands and expected result shape */
    } cases[] = {
        {{1, {7}}, {1, {7}}, {0, {0}}},                                   /* dot: scalar */
        {{1, {5}}, {2, {5, 3}}, {1, {3}}},                                /* vector x matrix */
        {{2, {4, 5}}, {1, {5}}, {1, {4}}},                                /* matrix x vector */
        {{1, {5}}, {3, {2, 5, 3}}, {2, {2, 3}}},                          /* vector x batch */
        {{3, {2, 4, 5}}, {1, {5}}, {2, {2, 4}}},                          /* batch x vector */
        {{2, {9, 17}}, {2, {17, 13}}, {2, {9, 13}}},                      /* plain */
        {{3, {3, 4, 6}}, {2, {6, 5}}, {3, {3, 4, 5}}},                    /* folded into M */
        {{4, {2, 1, 3, 4}}, {3, {3, 4, 2}}, {4, {2, 3, 3, 2}}},           /* batch broadcast */
        {{3, {1, 3, 4}}, {4, {2, 5, 4, 6}}, {4, {2, 5, 3, 6}}},           /* A broadcast */
        {{5, {2, 1, 2, 3, 2}}, {4, {3, 1, 2, 4}}, {5, {2, 3, 2, 3, 4}}},  /* both */
        {{2, {3, 0}}, {2, {0, 4}}, {2, {3, 4}}},                          /* K = 0: zeros */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        matmul_case(i % 2 ? pool2 : NULL, &cases[i].a, &cases[i].b, &cases[i].y);
    OqcfShape a = {2, {3, 4}}, b = {2, {5, 6}}, y;
    CU_ASSERT_EQUAL(oqcf_matmul_shape(&a, &b, &y), OQCF_EINVAL);     /* K mismatch */
    OqcfShape a3 = {3, {2, 3, 4}}, b3 = {3, {3, 4, 6}};
    CU_ASSERT_EQUAL(oqcf_matmul_shape(&a3, &b3, &y), OQCF_EINVAL);   /* batch 2 vs 3 */
    oqcf_pool_destroy(pool2);
}

OQC_TEST_MAIN("fp32-nn", OQC_TEST(test_pool), OQC_TEST(test_sgemm_isa_portable),
              OQC_TEST(test_sgemm_isa_avx2), OQC_TEST(test_sgemm_isa_avx512),
              OQC_TEST(test_sgemm_isa_agree), OQC_TEST(test_sgemm_edges),
              OQC_TEST(test_conv_random), OQC_TEST(test_conv_shapes),
              OQC_TEST(test_pool_random), OQC_TEST(test_pool_examples),
              OQC_TEST(test_global_pool), OQC_TEST(test_batchnorm), OQC_TEST(test_lrn),
              OQC_TEST(test_gemm_op), OQC_TEST(test_matmul))
