/* oqcf_gemm.c - ONNX Gemm and MatMul on top of oqcf_sgemm (see oqcf_nn.h).
 *
 * Design:
 *   Gemm: C's broadcast is classified once.  A scalar C becomes an epilogue bias
 *   (beta * c); a row or column vector becomes a per-row / per-column epilogue bias
 *   when beta == 1 (the usual fully-connected layer), otherwise it is broadcast into Y
 *   and the SGEMM accumulates onto Y with beta.  A full M x N C is copied into Y (unless
 *   Y is C) and accumulated the same way.
 *   MatMul: numpy rules.  A 1-D A is a 1 x K row, a 1-D B a K x 1 column, and the added
 *   axis is dropped from Y.  Leading axes broadcast; each output matrix is one SGEMM
 *   whose A and B are located through broadcast strides (0 along size-1 axes).  When B
 *   has no batch (a weight matrix), A's batch is folded into M: one SGEMM in all. */
#include "oqcf_nn.h"

#include <string.h>

/* ---- Gemm ------------------------------------------------------------------------ */

/* How Gemm's C is broadcast to M x N. */
typedef enum CKind { C_NONE, C_SCALAR, C_ROW, C_COL, C_FULL, C_BAD } CKind;

static CKind classify_c(const OqcfGemmParams *p) {
    if (!p->has_c || p->beta == 0.0f)
        return C_NONE;
    const OqcfShape *s = &p->c_shape;
    if (s->rank < 0 || s->rank > 2)
        return C_BAD;
    int64_t rows = s->rank == 2 ? s->d[0] : 1, cols = s->rank >= 1 ? s->d[s->rank - 1] : 1;
    if (rows == 1 && cols == 1)
        return C_SCALAR;
    if (rows == 1 && cols == p->N)
        return C_COL;
    if (rows == p->M && cols == 1)
        return C_ROW;
    if (rows == p->M && cols == p->N)
        return C_FULL;
    return C_BAD;
}

size_t oqcf_gemm_scratch_size(const OqcfGemmParams *p, int nthreads) {
    return p ? oqcf_sgemm_scratch_size(p->M, p->N, p->K, nthreads) : 0;
}

int oqcf_gemm(OqcfPool *pool, const OqcfGemmParams *p, const float *A, const float *B,
              const float *C, float *Y, void *scratch, size_t scratch_size) {
    if (!p || p->M < 0 || p->N < 0 || p->K < 0)
        return OQCF_EINVAL;
    CKind ck = classify_c(p);
    if (ck == C_BAD || (ck != C_NONE && !C))
        return OQCF_EINVAL;
    const int64_t M = p->M, N = p->N, K = p->K;
    if (M == 0 || N == 0)
        return OQCF_OK;
    if (!Y)
        return OQCF_EINVAL;
    OqcfSgemmEpilogue epi = {OQCF_PER_NONE, NULL, OQCF_PER_NONE, NULL};
    if (p->act.kind != OQCF_ACT_NONE) {
        epi.act_per = OQCF_PER_ALL;
        epi.act = &p->act;
    }
    float beta = 0.0f, cbias = 0.0f;
    switch (ck) {
    case C_SCALAR:
        cbias = p->beta * C[0];
        epi.bias_per = OQCF_PER_ALL;
        epi.bias = &cbias;
        break;
    case C_ROW:
    case C_COL:
        if (p->beta == 1.0f) {
            epi.bias_per = ck == C_ROW ? OQCF_PER_ROW : OQCF_PER_COL;
            epi.bias = C;
        } else {
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    Y[i * N + j] = C[ck == C_ROW ? i : j];
            beta = p->beta;
        }
        break;
    case C_FULL:
        if (Y != C)
            memmove(Y, C, (size_t)(M * N) * sizeof(float));
        beta = p->beta;
        break;
    default:
        break;
    }
    return oqcf_sgemm(pool, p->trans_a, p->trans_b, M, N, K, p->alpha, A, p->trans_a ? M : K,
                      B, p->trans_b ? K : N, beta, Y, N, &epi, scratch, scratch_size);
}

/* ---- MatMul ---------------------------------------------------------------------- */

/* A MatMul resolved into matrices and batch broadcasting. */
typedef struct MmPlan {
    int64_t M, N, K;                   /* each product: M x K times K x N */
    int nb;                            /* batch axes of Y */
    int64_t bdim[OQCF_MAX_RANK];       /* Y's batch extents */
    int64_t astr[OQCF_MAX_RANK];       /* A's stride (in matrices) per batch axis, 0 = bcast */
    int64_t bstr[OQCF_MAX_RANK];       /* B's stride likewise */
    int64_t batches;                   /* product of bdim */
    int fold;                          /* B has no batch: A's batch folded into M */
    OqcfShape y;                       /* Y's shape */
} MmPlan;

static int mm_plan(const OqcfShape *a, const OqcfShape *b, MmPlan *pl) {
    if (!a || !b || a->rank < 1 || b->rank < 1 || a->rank > OQCF_MAX_RANK ||
        b->rank > OQCF_MAX_RANK)
        return 0;
    int ar = a->rank, br = b->rank;
    pl->M = ar >= 2 ? a->d[ar - 2] : 1;
    pl->K = a->d[ar - 1];
    int64_t kb = br >= 2 ? b->d[br - 2] : b->d[0];
    pl->N = br >= 2 ? b->d[br - 1] : 1;
    if (kb != pl->K)
        return 0;
    int na = ar > 2 ? ar - 2 : 0, nbb = br > 2 ? br - 2 : 0;
    pl->nb = na > nbb ? na : nbb;
    int64_t as = 1, bs = 1;   /* running strides, innermost batch axis first */
    pl->batches = 1;
    int b_has_batch = 0;
    for (int i = pl->nb - 1; i >= 0; i--) {
        int ia = i - (pl->nb - na), ib = i - (pl->nb - nbb);
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        pl->bdim[i] = da == 1 ? db : da;
        pl->astr[i] = da == 1 ? 0 : as;
        pl->bstr[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
        b_has_batch |= db != 1;
        pl->batches *= pl->bdim[i];
    }
    pl->fold = !b_has_batch && pl->M > 0;
    int r = 0;
    for (int i = 0; i < pl->nb; i++)
        pl->y.d[r++] = pl->bdim[i];
    if (ar >= 2)
        pl->y.d[r++] = pl->M;
    if (br >= 2)
        pl->y.d[r++] = pl->N;
    pl->y.rank = r;
    return 1;
}

int oqcf_matmul_shape(const OqcfShape *a, const OqcfShape *b, OqcfShape *y) {
    MmPlan pl;
    if (!y || !mm_plan(a, b, &pl))
        return OQCF_EINVAL;
    *y = pl.y;
    return OQCF_OK;
}

size_t oqcf_matmul_scratch_size(const OqcfShape *a, const OqcfShape *b, int nthreads) {
    MmPlan pl;
    if (!mm_plan(a, b, &pl))
        return 0;
    int64_t m = pl.fold ? pl.M * pl.batches : pl.M;
    return oqcf_sgemm_scratch_size(m, pl.N, pl.K, nthreads);
}

int oqcf_matmul(OqcfPool *pool, const OqcfShape *a_shape, const float *A,
                const OqcfShape *b_shape, const float *B, float *Y, void *scratch,
                size_t scratch_size) {
    MmPlan pl;
    if (!mm_plan(a_shape, b_shape, &pl))
        return OQCF_EINVAL;
    const int64_t M = pl.M, N = pl.N, K = pl.K;
    if (pl.batches == 0 || M == 0 || N == 0)
        return OQCF_OK;
    if (!Y || (K > 0 && (!A || !B)))
        return OQCF_EINVAL;
    if (pl.fold)
        return oqcf_sgemm(pool, 0, 0, M * pl.batches, N, K, 1.0f, A, K, B, N, 0.0f, Y, N, NULL,
                          scratch, scratch_size);
    for (int64_t t = 0; t < pl.batches; t++) {
        int64_t rem = t, ai = 0, bi = 0;
        for (int i = pl.nb - 1; i >= 0; i--) {
            int64_t idx = rem % pl.bdim[i];
            rem /= pl.bdim[i];
            ai += idx * pl.astr[i];
            bi += idx * pl.bstr[i];
        }
        const float *a = K ? A + ai * M * K : A, *b = K ? B + bi * K * N : B;   /* K == 0: unread */
        int st = oqcf_sgemm(pool, 0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, Y + t * M * N, N, NULL,
                            scratch, scratch_size);
        if (st != OQCF_OK)
            return st;
    }
    return OQCF_OK;
}
