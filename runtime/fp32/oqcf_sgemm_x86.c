/* oqcf_sgemm_x86.c - the x86-64 microkernels of the FP32 matrix product (driven by
 * oqcf_sgemm.c, which picks a family at run time; see its design comment):
 * `ukr_6x16__avx2` (AVX2 + FMA: 12 ymm accumulators; edge `ukr_6x8__avx2`, in-place rows
 * `ukr_6x16r__avx2`, masked edge-tile store `edge__avx2`) and `ukr_12x32__avx512`
 * (AVX-512F: 24 zmm accumulators, edge `ukr_12x16__avx512`).  Each writes its tile
 * through the epilogue Ukp.  Target attributes, so no -m flags; elsewhere the file is
 * empty. */
#include "oqcf_sgemm_int.h"

#if OQCF_SGEMM_X86
#define AVX512 __attribute__((target("avx512f,fma")))


/* Stores row i (16 floats) of a tile through the epilogue. */
AVX2 static inline void row16__avx2(float *c, __m256 v0, __m256 v1, int i, const Ukp *e) {
    __m256 al = _mm256_set1_ps(e->alpha);
    v0 = _mm256_mul_ps(v0, al);
    v1 = _mm256_mul_ps(v1, al);
    if (e->beta != 0.0f) {
        __m256 be = _mm256_set1_ps(e->beta);
        v0 = _mm256_fmadd_ps(be, _mm256_loadu_ps(c), v0);
        v1 = _mm256_fmadd_ps(be, _mm256_loadu_ps(c + 8), v1);
    }
    if (e->bias_per == OQCF_PER_COL) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(e->bias));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(e->bias + 8));
    } else if (e->bias_per != OQCF_PER_NONE) {
        __m256 bb = _mm256_set1_ps(e->bias[e->bias_per == OQCF_PER_ROW ? i : 0]);
        v0 = _mm256_add_ps(v0, bb);
        v1 = _mm256_add_ps(v1, bb);
    }
    const OqcfAct *act = ukp_act(e, i);
    if (act) {
        v0 = act8(v0, act);
        v1 = act8(v1, act);
    }
    _mm256_storeu_ps(c, v0);
    _mm256_storeu_ps(c + 8, v1);
}

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define DECL6(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps();
#define AROW(i) const float *a##i = a + (i) * rsa;
#define STEP6(i)                                        \
    {                                                   \
        __m256 ai = _mm256_broadcast_ss(a##i + o);      \
        c##i##a = _mm256_fmadd_ps(ai, b0, c##i##a);     \
        c##i##b = _mm256_fmadd_ps(ai, b1, c##i##b);     \
    }
#define STORE6(i) row16__avx2(c + (i) * ldc, c##i##a, c##i##b, i, e);

AVX2 static void ukr_6x16__avx2(int64_t kc, const float *restrict a, int64_t rsa, int64_t csa,
                                const float *restrict b, float *restrict c, int64_t ldc,
                                const Ukp *e) {
    ROWS6(DECL6)
    ROWS6(AROW)
    int64_t o = 0, k = 0;
    for (; k + 2 <= kc; k += 2) {   /* unrolled twice (fewer loop branches per FMA) */
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        ROWS6(STEP6)
        o += csa;
        b0 = _mm256_load_ps(b + 16);
        b1 = _mm256_load_ps(b + 24);
        ROWS6(STEP6)
        o += csa;
        b += 32;
    }
    for (; k < kc; k++, o += csa, b += 16) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        ROWS6(STEP6)
    }
    ROWS6(STORE6)
}

/* ukr_6x16__avx2 with op(B) read in place: row k of the panel at b + koff[k]. */
AVX2 static void ukr_6x16r__avx2(int64_t kc, const float *restrict a, int64_t rsa,
                                 int64_t csa, const float *restrict b, const int64_t *koff,
                                 float *restrict c, int64_t ldc, const Ukp *e) {
    ROWS6(DECL6)
    ROWS6(AROW)
    int64_t o = 0, k = 0;
    for (; k + 2 <= kc; k += 2) {
        const float *r0 = b + koff[k], *r1 = b + koff[k + 1];
        __m256 b0 = _mm256_loadu_ps(r0), b1 = _mm256_loadu_ps(r0 + 8);
        ROWS6(STEP6)
        o += csa;
        b0 = _mm256_loadu_ps(r1);
        b1 = _mm256_loadu_ps(r1 + 8);
        ROWS6(STEP6)
        o += csa;
    }
    for (; k < kc; k++, o += csa) {
        const float *r0 = b + koff[k];
        __m256 b0 = _mm256_loadu_ps(r0), b1 = _mm256_loadu_ps(r0 + 8);
        ROWS6(STEP6)
    }
    ROWS6(STORE6)
}

#define DECL6H(i) __m256 c##i##a = _mm256_setzero_ps();
#define STEP6H(i) c##i##a = _mm256_fmadd_ps(_mm256_broadcast_ss(a##i + o), b0, c##i##a);
#define STORE6H(i) _mm256_storeu_ps(tile + (i) * 16, c##i##a);

AVX2 static void ukr_6x8__avx2(int64_t kc, const float *restrict a, int64_t rsa, int64_t csa,
                               const float *restrict b, float *restrict tile) {
    ROWS6(DECL6H)
    ROWS6(AROW)
    int64_t o = 0;
    for (int64_t k = 0; k < kc; k++, o += csa, b += 16) {
        __m256 b0 = _mm256_load_ps(b);
        ROWS6(STEP6H)
    }
    ROWS6(STORE6H)
}

/* Edge tiles (cut by the edge of C, or half-width): each row in 8-wide pieces, the last
 * partial piece with masked loads and stores. */
AVX2 static void edge__avx2(const float *tile, int64_t ldt, float *c, int64_t ldc, int64_t m,
                            int64_t n, const Ukp *e) {
    const __m256 al = _mm256_set1_ps(e->alpha), be = _mm256_set1_ps(e->beta);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t i = 0; i < m; i++) {
        const OqcfAct *act = ukp_act(e, i);
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < n; j += 8) {
            __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j)), lane);
            int full = n - j >= 8;
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(tile + i * ldt + j), al);
            if (e->beta != 0.0f)
                v = _mm256_fmadd_ps(be, full ? _mm256_loadu_ps(ci + j)
                                             : _mm256_maskload_ps(ci + j, mask), v);
            if (e->bias_per == OQCF_PER_COL)
                v = _mm256_add_ps(v, full ? _mm256_loadu_ps(e->bias + j)
                                          : _mm256_maskload_ps(e->bias + j, mask));
            else if (e->bias_per != OQCF_PER_NONE)
                v = _mm256_add_ps(
                    v, _mm256_set1_ps(e->bias[e->bias_per == OQCF_PER_ROW ? i : 0]));
            if (act)
                v = act8(v, act);
            if (full)
                _mm256_storeu_ps(ci + j, v);
            else
                _mm256_maskstore_ps(ci + j, mask, v);
        }
    }
}

AVX512 static inline __m512 act16(__m512 v, const OqcfAct *a) {
    switch (a->kind) {
    case OQCF_ACT_RELU:   /* NaN stays NaN, as in oqcf_act_apply */
        return _mm512_max_ps(_mm512_setzero_ps(), v);
    case OQCF_ACT_CLIP:
        return _mm512_min_ps(_mm512_set1_ps(a->p1), _mm512_max_ps(_mm512_set1_ps(a->p0), v));
    case OQCF_ACT_LEAKY: {
        __mmask16 lt = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(v, lt, v, _mm512_set1_ps(a->p0));
    }
    default:
        return v;
    }
}

/* Stores row i (32 floats) of a tile through the epilogue. */
AVX512 static inline void row32__avx512(float *c, __m512 v0, __m512 v1, int i, const Ukp *e) {
    __m512 al = _mm512_set1_ps(e->alpha);
    v0 = _mm512_mul_ps(v0, al);
    v1 = _mm512_mul_ps(v1, al);
    if (e->beta != 0.0f) {
        __m512 be = _mm512_set1_ps(e->beta);
        v0 = _mm512_fmadd_ps(be, _mm512_loadu_ps(c), v0);
        v1 = _mm512_fmadd_ps(be, _mm512_loadu_ps(c + 16), v1);
    }
    if (e->bias_per == OQCF_PER_COL) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(e->bias));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(e->bias + 16));
    } else if (e->bias_per != OQCF_PER_NONE) {
        __m512 bb = _mm512_set1_ps(e->bias[e->bias_per == OQCF_PER_ROW ? i : 0]);
        v0 = _mm512_add_ps(v0, bb);
        v1 = _mm512_add_ps(v1, bb);
    }
    const OqcfAct *act = ukp_act(e, i);
    if (act) {
        v0 = act16(v0, act);
        v1 = act16(v1, act);
    }
    _mm512_storeu_ps(c, v0);
    _mm512_storeu_ps(c + 16, v1);
}

#define ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL12(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
#define STEP12(i)                                       \
    {                                                   \
        __m512 ai = _mm512_set1_ps(a##i[o]);            \
        c##i##a = _mm512_fmadd_ps(ai, b0, c##i##a);     \
        c##i##b = _mm512_fmadd_ps(ai, b1, c##i##b);     \
    }
#define STORE12(i) row32__avx512(c + (i) * ldc, c##i##a, c##i##b, i, e);

AVX512 static void ukr_12x32__avx512(int64_t kc, const float *restrict a, int64_t rsa,
                                     int64_t csa, const float *restrict b, float *restrict c,
                                     int64_t ldc, const Ukp *e) {
    ROWS12(DECL12)
    ROWS12(AROW)
    int64_t o = 0;
    for (int64_t k = 0; k < kc; k++, o += csa, b += 32) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        ROWS12(STEP12)
    }
    ROWS12(STORE12)
}

#define DECL12H(i) __m512 c##i##a = _mm512_setzero_ps();
#define STEP12H(i) c##i##a = _mm512_fmadd_ps(_mm512_set1_ps(a##i[o]), b0, c##i##a);
#define STORE12H(i) _mm512_storeu_ps(tile + (i) * 32, c##i##a);

AVX512 static void ukr_12x16__avx512(int64_t kc, const float *restrict a, int64_t rsa,
                                     int64_t csa, const float *restrict b,
                                     float *restrict tile) {
    ROWS12(DECL12H)
    ROWS12(AROW)
    int64_t o = 0;
    for (int64_t k = 0; k < kc; k++, o += csa, b += 32) {
        __m512 b0 = _mm512_load_ps(b);
        ROWS12(STEP12H)
    }
    ROWS12(STORE12H)
}

const Kernel oqcfk_sgemm_avx2 = {OQCF_SGEMM_GEOM_AVX2, .ukr = ukr_6x16__avx2,
                                 .half = ukr_6x8__avx2, .edge = edge__avx2,
                                 .rows = ukr_6x16r__avx2};
/* (edge tiles through the AVX2 edge store: the same steps as epilogue_scalar, 8 lanes at
 * a time, on any tile stride; a model whose M is below 12 rows has only edge tiles) */
const Kernel oqcfk_sgemm_avx512 = {OQCF_SGEMM_GEOM_AVX512, .ukr = ukr_12x32__avx512,
                                   .half = ukr_12x16__avx512, .edge = edge__avx2};
#else
typedef int oqcf_sgemm_x86_empty;   /* (ISO C: a translation unit declares something) */
#endif /* OQCF_SGEMM_X86 */
