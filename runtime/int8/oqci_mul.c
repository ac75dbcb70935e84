/* oqci_mul.c - INT8 Mul (the squeeze-excitation product a[o][i] * b[o], requantized
 * once) and table lookup (every INT8 activation function: y[j] = table[x[j]]), portable
 * C99, with AVX2 and AVX-512 kernels giving the same bits: a Mul block 8 (AVX2) or 16
 * (AVX-512, the tail under a mask) products at a time with float requantization, and on
 * AVX-512 VBMI a long block through a 256-entry table of its outputs looked up 64 bytes
 * per vpermt2b (lut_avx512vbmi, which oqci_lut uses too; lut_avx2: 32 per sixteen
 * vpshufb).  Every kernel allows y to be its (first) input. */
/* AVX2 and AVX-512 (GNU C on x86-64): compile-time, or run-time with OQCI_DISPATCH */
#define OQCI_AVX2_SELECT
#include "oqci.h"

#define MUL_TABLE_MIN 512   /* oqci_mul's blocks by table from this length on */

#if HAVE_AVX2
/* Elements [0, n) of one block of oqci_mul (b's value g), 8 at a time (returns how
 * many): acc = a * g exactly in int32 lanes, then the float requantization as add_avx2
 * does it: u = trunc(acc * 2M) (m2 = 2M: the doubled product, exact), rounded half away
 * from zero by oqci_half8, clamped: the bits of oqci_requant while |acc * 2M| < 2^30
 * (oqci_mul checks the bound). */
T_AVX2 static int64_t mul_block_avx2(const OqciMul *p, const uint8_t *a, int32_t g,
                                     uint8_t *y, int64_t n, float m2) {
    const __m256i gv = _mm256_set1_epi32(g);
    const __m256i lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
    const __m256 mv = _mm256_set1_ps(m2);
    int64_t j;
    for (j = 0; j + 8 <= n; j += 8) {
        __m128i aa = _mm_loadl_epi64((const __m128i *)(const void *)(a + j)), w;
        __m256i q = p->a_type == OQCI_S8 ? _mm256_cvtepi8_epi32(aa) : _mm256_cvtepu8_epi32(aa);
        q = _mm256_mullo_epi32(q, gv);
        q = oqci_half8(_mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(q), mv)));
        q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
        w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        w = p->out_type == OQCI_U8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
        _mm_storel_epi64((__m128i *)(void *)(y + j), w);
    }
    return j;
}
#endif

#if HAVE_AVX512
/* mul_block_avx2's steps 16 elements at a time, the block's last (n mod 16) under a
 * mask, so the whole block (returns n): the same bits while |a * g * 2M| < 2^30.  The
 * short blocks of squeeze-excitation on 14x14 and 7x7 maps (196, 49 elements) are
 * below MUL_TABLE_MIN, where a table does not pay. */
T_AVX512 static int64_t mul_block_avx512(const OqciMul *p, const uint8_t *a, int32_t g,
                                         uint8_t *y, int64_t n, float m2) {
    const __m512i gv = _mm512_set1_epi32(g);
    const __m512i lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
    const __m512 mv = _mm512_set1_ps(m2);
    const int s8 = p->a_type == OQCI_S8, u8out = p->out_type == OQCI_U8;
    int64_t j;
    for (j = 0; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m128i aa = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64)k, a + j));
        __m512i q = s8 ? _mm512_cvtepi8_epi32(aa) : _mm512_cvtepu8_epi32(aa);
        q = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(q, gv)), mv));
        q = oqci_half16(q);
        q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
        if (u8out)
            _mm512_mask_cvtusepi32_storeu_epi8(y + j, k, q);
        else
            _mm512_mask_cvtsepi32_storeu_epi8(y + j, k, q);
    }
    return n;
}
#endif

int oqci_mul(const OqciMul *p, const void *a, const void *b, void *y) {
    int64_t o, i;
#if HAVE_AVX2
    float m2 = 0.0f;
    int fast = 0;
#endif
#if HAVE_AVX512
    int use512;
#endif
    if (!p || !a || !b || !y || p->outer < 0 || p->inner < 0 ||
        (p->a_type != OQCI_S8 && p->a_type != OQCI_U8) ||
        (p->b_type != OQCI_S8 && p->b_type != OQCI_U8) || !oqci_range_ok(p->out_type, p->lo, p->hi) ||
        !oqci_requant_ok(&p->rq, 0, 0))
        return OQCI_EINVAL;
#if HAVE_AVX2 && !defined(OQCI_NO_FLOAT)
    /* the vector steps are exact while |a * g * 2M| < 2^30; |a * g| <= 255 * 255 */
    if (p->inner >= 8 && oqci_use_avx2()) {   /* (either mode: oqci_rq_mult) */
        m2 = 2.0f * oqci_rq_mult(&p->rq, 0);
        fast = (double)m2 * 65025.0 < 1073741824.0 && (double)m2 * 65025.0 > -1073741824.0;
    }
#endif
#if HAVE_AVX2 && HAVE_AVX512
    /* Long blocks on an AVX-512 VBMI CPU: a block's outputs are a function of its 8-bit
     * input alone (b's value g is fixed), so mul_block_avx2 computes it once for each of
     * the 256 byte values (the same bits) and oqci_lut looks the block up 64 bytes per
     * vpermt2b; one table costs about as much as 256 elements the direct way. */
    if (fast && p->inner >= MUL_TABLE_MIN && oqci_use_avx512vbmi()) {
        uint8_t bytes[256], table[256];
        for (i = 0; i < 256; i++)
            bytes[i] = (uint8_t)i;
        for (o = 0; o < p->outer; o++) {
            mul_block_avx2(p, bytes, oqci_load_q(b, p->b_type, o), table, 256, m2);
            oqci_lut((const uint8_t *)a + o * p->inner, (uint8_t *)y + o * p->inner,
                     p->inner, table);
        }
        return OQCI_OK;
    }
#endif
#if HAVE_AVX512
    use512 = fast && oqci_use_avx512();
#endif
    for (o = 0; o < p->outer; o++) {
        int32_t g = oqci_load_q(b, p->b_type, o);
        i = 0;
#if HAVE_AVX512
        if (fast && use512)
            i = mul_block_avx512(p, (const uint8_t *)a + o * p->inner, g,
                                 (uint8_t *)y + o * p->inner, p->inner, m2);
        else
#endif
#if HAVE_AVX2
        if (fast)
            i = mul_block_avx2(p, (const uint8_t *)a + o * p->inner, g,
                               (uint8_t *)y + o * p->inner, p->inner, m2);
#endif
        for (; i < p->inner; i++) {
            int64_t j = o * p->inner + i;
            oqci_store_q(y, p->out_type, j,
                         oqci_requant(oqci_load_q(a, p->a_type, j) * g, &p->rq, 0, p->lo, p->hi));
        }
    }
    return OQCI_OK;
}

#if HAVE_AVX2
/* Elements [0, count rounded down to 32) of oqci_lut: the table as 16 rows of 16 bytes,
 * each looked up with vpshufb by the low nibble and kept where the high nibble is the
 * row's number. */
T_AVX2 static int64_t lut_avx2(const uint8_t *x, uint8_t *y, int64_t count,
                               const uint8_t *table) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i rows[16];
    int64_t j;
    int k;
    for (k = 0; k < 16; k++)
        rows[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(table + 16 * k)));
    for (j = 0; j + 32 <= count; j += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + j));
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        __m256i r = _mm256_setzero_si256();
        for (k = 0; k < 16; k++)
            r = _mm256_or_si256(r, _mm256_and_si256(_mm256_shuffle_epi8(rows[k], lo),
                                                    _mm256_cmpeq_epi8(hi, _mm256_set1_epi8((char)k))));
        _mm256_storeu_si256((__m256i *)(void *)(y + j), r);
    }
    return j;
}
#endif

#if HAVE_AVX512
/* The same, 64 elements at a time with AVX-512 VBMI: vpermt2b looks a byte's low 7 bits
 * up in a 128-byte half of the table; its top bit picks the half. */
T_AVX512VBMI static int64_t lut_avx512vbmi(const uint8_t *x, uint8_t *y, int64_t count,
                                           const uint8_t *table) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    int64_t j;
    for (j = 0; j + 64 <= count; j += 64) {
        __m512i v = _mm512_loadu_si512(x + j);
        __m512i a = _mm512_permutex2var_epi8(t0, v, t1), b = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_storeu_si512(y + j, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), a, b));
    }
    return j;
}
#endif

int oqci_lut(const void *x, void *y, int64_t count, const uint8_t *table) {
    const uint8_t *xp = x;
    uint8_t *yp = y;
    int64_t j = 0;
    if (!x || !y || !table || count < 0)
        return OQCI_EINVAL;
#if HAVE_AVX512
    if (count >= 64 && oqci_use_avx512vbmi())
        j = lut_avx512vbmi(xp, yp, count, table);
#endif
#if HAVE_AVX2
    if (j == 0 && count >= 32 && oqci_use_avx2())
        j = lut_avx2(xp, yp, count, table);
#endif
    for (; j < count; j++)
        yp[j] = table[xp[j]];
    return OQCI_OK;
}
