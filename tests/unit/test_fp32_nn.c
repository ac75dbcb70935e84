/* test_fp32_nn.c - thread pool, SGEMM (every microkernel family), Gemm and MatMul
 * (runtime/fp32/oqcf_nn.h) against naive references written here in double, on small odd
 * shapes and seeded random shapes.  Tolerances: see nn_testutil.h.  Conv, pooling and
 * normalisation are in test_fp32_nn_conv.c.
 *
 * Microkernel families: test_sgemm_isa_* run the SGEMM suite with each family forced
 * (oqcf_sgemm_force_isa); a family the CPU or build lacks is reported as skipped on
 * stdout.  The families are also compared with each other on the same problems.
 *
 * To add a kernel test: write a reference in double next to the others, a test that
 * draws shapes with rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#include "harness.h"
#include "nn_testutil.h"

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
        for (int r = 0; r < 3000; r++)
            oqcf_parallel_for(pool, 2 + r % 5, cover_fn, &c);
        CU_ASSERT_EQUAL(c.bad_tid, 0);
        c.nested_runs = 0;
        oqcf_parallel_for(pool, nt, nested_outer, &c);
        CU_ASSERT_EQUAL(c.nested_runs, 10 * nt);
        oqcf_pool_destroy(pool);
    }
    oqcf_pool_destroy(NULL);
    /* Minimum work per thread: below it a kernel keeps to the calling thread. */
    OqcfPool *pool = oqcf_pool_create(2);
    double old = oqcf_pool_set_min_work(OQCF_PAR_MIN_WORK);
    CU_ASSERT_EQUAL(oqcf_pool_for_work(pool, 2 * OQCF_PAR_MIN_WORK - 1), NULL);
    CU_ASSERT_EQUAL(oqcf_pool_for_work(pool, 2 * OQCF_PAR_MIN_WORK), pool);
    CU_ASSERT_EQUAL(oqcf_pool_for_work(NULL, 1e12), NULL);
    CU_ASSERT_EQUAL(oqcf_pool_set_min_work(0), OQCF_PAR_MIN_WORK);
    CU_ASSERT_EQUAL(oqcf_pool_for_work(pool, 1), pool);
    oqcf_pool_set_min_work(old);
    oqcf_pool_destroy(pool);
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
    OqcfPool *pool2 = test_pool2();
    rnd_seed(seed);
    /* Odd small sizes, then sizes crossing the MC (144), KC (256 / 384) and NC (2048)
     * blocks of every family, then matrix-vector products (M or N = 1) past the
     * 256-output blocks of that path. */
    static const int64_t big[][3] = {{150, 70, 300}, {13, 2100, 33}, {290, 37, 400},
                                     {7, 300, 770}, {1, 1000, 300}, {600, 1, 70},
                                     {1, 1, 1000}, {1, 700, 3}};
    for (int t = 0; t < 48; t++) {
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
        oqc_test_skip("CPU lacks the %s SGEMM microkernel (or the build has none)", name);
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
        printf("\n  [no vector microkernel on this CPU or build: nothing to compare] ");
}

/* A row (column) of C computed alone, as an M == 1 (N == 1) product, has the same bits
 * as that row (column) of the whole product: the matrix-vector path sums in the order of
 * the microkernels, so a model's output for one sample does not depend on the batch it
 * runs in (calibration tables do not depend on --batch).  Every family, K over several
 * blocks, all transposes, betas and epilogues. */
static void test_sgemm_gemv_same_bits(void) {
    const OqcfIsa isas[] = {OQCF_ISA_PORTABLE, OQCF_ISA_AVX2, OQCF_ISA_AVX512};
    rnd_seed(55);
    int64_t compared = 0, differ = 0;
    for (int t = 0; t < 40; t++) {
        int64_t M = rnd_int(2, 13), N = rnd_int(2, 40), K = rnd_int(1, t < 20 ? 60 : 900);
        GemmCase g;
        gemm_case_make(&g, M, N, K);
        for (int f = 0; f < 3; f++) {
            if (oqcf_sgemm_force_isa(isas[f]) != OQCF_OK)
                continue;
            int st;
            float *C = gemm_case_run(&g, NULL, &st);
            /* Each row alone. */
            for (int64_t i = 0; i < M; i++) {
                float *c = malloc(sizeof(float) * (size_t)g.ldc);
                memcpy(c, g.C0 + i * g.ldc, sizeof(float) * (size_t)g.ldc);
                OqcfSgemmEpilogue e = g.epi;
                if (e.bias_per == OQCF_PER_ROW)
                    e.bias += i;
                if (e.act_per == OQCF_PER_ROW)
                    e.act += i;
                const float *a = g.ta ? g.A + i : g.A + i * g.lda;
                CU_ASSERT_EQUAL(oqcf_sgemm(NULL, g.ta, g.tb, 1, N, K, g.alpha, a, g.lda, g.B,
                                           g.ldb, g.beta, c, g.ldc, &e, NULL, 0),
                                OQCF_OK);
                differ += memcmp(c, C + i * g.ldc, sizeof(float) * (size_t)N) != 0;
                compared++;
                free(c);
            }
            /* Each column alone. */
            for (int64_t j = 0; j < N; j++) {
                float *c = malloc(sizeof(float) * (size_t)(M * g.ldc));
                memcpy(c, g.C0, sizeof(float) * (size_t)(M * g.ldc));
                OqcfSgemmEpilogue e = g.epi;
                if (e.bias_per == OQCF_PER_COL)
                    e.bias += j;
                if (e.act_per == OQCF_PER_COL)
                    e.act += j;
                const float *b = g.tb ? g.B + j * g.ldb : g.B + j;
                CU_ASSERT_EQUAL(oqcf_sgemm(NULL, g.ta, g.tb, M, 1, K, g.alpha, g.A, g.lda, b,
                                           g.ldb, g.beta, c + j, g.ldc, &e, NULL, 0),
                                OQCF_OK);
                for (int64_t i = 0; i < M; i++)
                    differ += memcmp(&c[i * g.ldc + j], &C[i * g.ldc + j], sizeof(float)) != 0;
                compared++;
                free(c);
            }
            free(C);
        }
        gemm_case_free(&g);
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    if (differ)
        printf("\n  %lld of %lld single rows/columns differ from the whole product ",
               (long long)differ, (long long)compared);
    CU_ASSERT_EQUAL(differ, 0);
}

/* oqcf_sgemm_ex with op(B) given as rows (rows mode): the rows at shuffled, gapped
 * offsets of a buffer allocated to end exactly at the last row's column N - 1 (an
 * over-read shows under ASan), few (read in place) and many (packed) rows of A, K over
 * several blocks, 1 and 2 threads, every microkernel family. */
static void test_sgemm_rows(void) {
    const OqcfIsa isas[] = {OQCF_ISA_PORTABLE, OQCF_ISA_AVX2, OQCF_ISA_AVX512};
    OqcfPool *pool2 = test_pool2();
    rnd_seed(31);
    for (int t = 0; t < 36; t++) {
        GemmCase g;
        int64_t M = t % 3 == 2 ? rnd_int(121, 260) : rnd_int(1, 120);
        gemm_case_make(&g, M, rnd_int(1, 90), rnd_int(1, 300));
        g.tb = 0;   /* gemm_case_check reads B[k * ldb + j] */
        free(g.B);
        g.ldb = g.N + rnd_int(0, 3);
        g.B = rnd_buf(g.K * g.ldb);
        int64_t *koff = malloc(sizeof(int64_t) * (size_t)g.K);
        int64_t pitch = g.N + rnd_int(0, 5), end = 0;
        for (int64_t k = 0; k < g.K; k++)   /* row k at slot (k * 7) % K (K != 7 * m) */
            koff[k] = ((k * 7) % g.K) * pitch;
        for (int64_t k = 0; k < g.K; k++)
            end = koff[k] + g.N > end ? koff[k] + g.N : end;
        int distinct = g.K % 7 != 0;
        float *rows = malloc(sizeof(float) * (size_t)end);
        for (int64_t k = 0; k < g.K && distinct; k++)
            memcpy(rows + koff[k], g.B + k * g.ldb, sizeof(float) * (size_t)g.N);
        if (!distinct) {   /* rows would collide: lay them out in order instead */
            for (int64_t k = 0; k < g.K; k++)
                koff[k] = k * pitch;
            free(rows);
            end = (g.K - 1) * pitch + g.N;
            rows = malloc(sizeof(float) * (size_t)end);
            for (int64_t k = 0; k < g.K; k++)
                memcpy(rows + koff[k], g.B + k * g.ldb, sizeof(float) * (size_t)g.N);
        }
        OqcfSgemmB src = {NULL, NULL, rows, koff};
        OqcfPool *pool = t % 2 ? pool2 : NULL;
        for (int i = 0; i < 3; i++) {
            if (oqcf_sgemm_force_isa(isas[i]) != OQCF_OK)
                continue;
            float *C = malloc(sizeof(float) * (size_t)(g.M * g.ldc));
            memcpy(C, g.C0, sizeof(float) * (size_t)(g.M * g.ldc));
            size_t ss = oqcf_sgemm_scratch_size(g.M, g.N, g.K, oqcf_pool_threads(pool));
            void *scratch = scratch_alloc(ss);
            CU_ASSERT_EQUAL(oqcf_sgemm_ex(pool, g.ta, g.M, g.N, g.K, g.alpha, g.A, g.lda, &src,
                                          g.beta, C, g.ldc, &g.epi, scratch, ss), OQCF_OK);
            int64_t bad = gemm_case_check(&g, C);
            if (bad)
                printf("\n  rows case %d isa %d: M=%lld N=%lld K=%lld", t, i, (long long)g.M,
                       (long long)g.N, (long long)g.K);
            CU_ASSERT_EQUAL(bad, 0);
            free(scratch);
            free(C);
        }
        oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
        free(rows);
        free(koff);
        gemm_case_free(&g);
    }
    OqcfSgemmB none = {NULL, NULL, NULL, NULL};
    float a = 1, c = 0;
    CU_ASSERT_EQUAL(oqcf_sgemm_ex(NULL, 0, 1, 1, 1, 1.0f, &a, 1, &none, 0.0f, &c, 1, NULL, &c,
                                  sizeof c), OQCF_EINVAL);
    oqcf_pool_destroy(pool2);
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

/* Fused activations propagate NaN (as the standalone oqcf_relu/clip/leaky_relu do), in
 * full tiles, edge tiles and the matrix-vector path, on every microkernel family; and
 * depthwise and implicit-GEMM Conv do the same. */
static void test_act_nan(void) {
    const OqcfIsa isas[] = {OQCF_ISA_PORTABLE, OQCF_ISA_AVX2, OQCF_ISA_AVX512};
    const OqcfAct acts[] = {{OQCF_ACT_RELU, 0, 0}, {OQCF_ACT_CLIP, -0.5f, 0.5f},
                            {OQCF_ACT_LEAKY, 0.1f, 0}};
    const int64_t M = 13, N = 37, K = 5;
    float *A = rnd_buf(M * K), *B = rnd_buf(K * N), *C = malloc(sizeof(float) * M * N);
    for (int64_t k = 0; k < K; k++)
        A[0 * K + k] = A[7 * K + k] = A[12 * K + k] = NAN;   /* rows 0, 7, 12 all NaN */
    size_t ss = oqcf_sgemm_scratch_size(M, N, K, 1);
    void *s = scratch_alloc(ss);
    for (int i = 0; i < 3; i++) {
        if (oqcf_sgemm_force_isa(isas[i]) != OQCF_OK)
            continue;
        for (int a = 0; a < 3; a++) {
            OqcfSgemmEpilogue epi = {OQCF_PER_NONE, NULL, OQCF_PER_ALL, &acts[a]};
            CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, &epi,
                                       s, ss), OQCF_OK);
            int64_t bad = 0;
            for (int64_t r = 0; r < M; r++)
                for (int64_t c = 0; c < N; c++)
                    bad += (r == 0 || r == 7 || r == 12) != (isnan(C[r * N + c]) != 0);
            CU_ASSERT_EQUAL(bad, 0);
            /* M == 1: the matrix-vector path */
            CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, 1, N, K, 1.0f, A, K, B, N, 0.0f, C, N, &epi,
                                       s, ss), OQCF_OK);
            for (int64_t c = 0; c < N; c++)
                CU_ASSERT(isnan(C[c]));
        }
        /* RELU keeps -0 (as oqcf_relu): alpha -1 times a zero product, full tiles and
         * edges */
        float *Z = calloc((size_t)(M * K), sizeof(float));
        OqcfSgemmEpilogue e0 = {OQCF_PER_NONE, NULL, OQCF_PER_ALL, &acts[0]};
        CU_ASSERT_EQUAL(oqcf_sgemm(NULL, 0, 0, M, N, K, -1.0f, Z, K, B, N, 0.0f, C, N, &e0, s,
                                   ss), OQCF_OK);
        int64_t pos = 0;
        for (int64_t r = 0; r < M * N; r++)
            pos += !(C[r] == 0.0f && signbit(C[r]));
        CU_ASSERT_EQUAL(pos, 0);
        free(Z);
    }
    /* Conv: depthwise (its own kernels) and 3x3 (SGEMM), all-NaN input, no padding */
    for (int i = 0; i < 3; i++) {
        if (oqcf_sgemm_force_isa(isas[i]) != OQCF_OK)
            continue;
        for (int dwc = 0; dwc < 2; dwc++) {
            OqcfConvParams p = {2, 1, 4, 4, dwc ? 4 : 1, {10, 12}, {8, 10}, {3, 3}, {1, 1},
                                {1, 1}, {0, 0}, {0, 0}, 0, 0, 0, 0, acts[0], NULL};
            float x[4 * 120], w[4 * 4 * 9], y[4 * 80];
            for (int j = 0; j < 4 * 120; j++)
                x[j] = NAN;
            for (int j = 0; j < 4 * 4 * 9; j++)
                w[j] = 0.5f;
            size_t cs = oqcf_conv_scratch_size(&p, 1);
            void *sc = scratch_alloc(cs);
            CU_ASSERT_EQUAL(oqcf_conv(NULL, &p, x, w, NULL, y, sc, cs), OQCF_OK);
            int64_t bad = 0;
            for (int j = 0; j < 4 * 80; j++)
                bad += !isnan(y[j]);
            CU_ASSERT_EQUAL(bad, 0);
            free(sc);
        }
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    CU_ASSERT(isnan(oqcf_act_apply(&acts[0], NAN)) && isnan(oqcf_act_apply(&acts[1], NAN)) &&
              isnan(oqcf_act_apply(&acts[2], NAN)));
    free(A);
    free(B);
    free(C);
    free(s);
}

/* ---- Gemm and MatMul ----------------------------------------------------------------- */

static void test_gemm_op(void) {
    rnd_seed(23);
    OqcfPool *pool2 = test_pool2();
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
    OqcfPool *pool2 = test_pool2();
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
              OQC_TEST(test_sgemm_isa_agree), OQC_TEST(test_sgemm_gemv_same_bits),
              OQC_TEST(test_sgemm_edges),
              OQC_TEST(test_sgemm_rows), OQC_TEST(test_act_nan),
              OQC_TEST(test_gemm_op), OQC_TEST(test_matmul))
