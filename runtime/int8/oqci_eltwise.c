/* oqci_eltwise.c - INT8 element-wise kernels (Add/Sum, Relu/Clip, quantize, dequantize,
 * LayerNormalization's rows, the conversions of accumulator outputs to float or to
 * s8/u8) and the compile-time fixed-point multiplier helper, portable C99; Add/Sum and
 * quantize also have AVX2 and AVX-512 kernels giving the same bits (add_avx2,
 * add_acc_avx2, quantize__avx2, add_avx512, add_acc_avx512, quantize__avx512).  Mul and
 * table lookup: oqci_mul.c.
 *
 * Design.  Plain loops over `count` elements; every kernel allows y to be one of its
 * inputs (element j is read before it is written).
 *   - oqci_add: each input is requantized to the output scale with 8 extra fractional
 *     bits, t_i = oqci_requant(q_i, &rq[i], 0, -INT32_MAX, INT32_MAX), i.e. with no
 *     clamp beyond int32 (symmetric, so negation never overflows); the t_i are summed in
 *     int64 (at most 8 * (2^31 - 1): no overflow) and y = clamp(round(sum / 256), lo,
 *     hi) with the division rounded half away from zero in integers.  The result is
 *     exact unless some |q_i * M_i| >= 2^23, far outside any 8-bit output range.
 *   - oqci_quantize gives the bits of dividing by the scale and rounding with
 *     oqci_round_clamp, as the compiler quantizes (its AVX-512 kernel multiplies by the
 *     reciprocal only where that provably rounds to the same integer, see
 *     quantize__avx512, and divides elsewhere).
 *   - oqci_fixed_multiplier uses only exact double operations (doublings, a
 *     truncation and a subtraction), no <math.h>.
 *   - oqci_layernorm: integers only (exact row sums, a 64-bit integer square root and one
 *     division per row, fixed-point products per element; see oqci.h).
 * Float operations appear only in oqci_add's and oqci_requantize_s32's float modes, the
 * quantize/dequantize functions (oqci_dequantize_s32 included) and oqci_fixed_multiplier. */
/* AVX2 (x86-64, GNU C): compile-time with __AVX2__, run-time with OQCI_DISPATCH; HAVE_AVX2,
 * T_AVX2 and oqci_use_avx2() come from oqci.h */
#define OQCI_AVX2_SELECT
#include "oqci.h"

/* The sum of the t_i of the 8-bit inputs [from, ninputs) of an Add at element j. */
static int64_t add_sum8(const OqciAdd *p, const void *const *x, int64_t j, int32_t from) {
    int64_t s = 0;
    int32_t i;
    for (i = from; i < p->ninputs; i++)
        s += oqci_requant(oqci_load_q(x[i], p->in_type[i], j), &p->rq[i], 0, -INT32_MAX,
                          INT32_MAX);
    return s;
}

/* Every oqci_add path's last step: element j of y from the sum s of its t_i,
 * round(s / 256) half away from zero, clamped to [lo, hi]. */
static void add_put(const OqciAdd *p, void *y, int64_t j, int64_t s) {
    int64_t r = s >= 0 ? (s + 128) >> 8 : -((-s + 128) >> 8);
    oqci_store_q(y, p->out_type, j, (int32_t)(r < p->lo ? p->lo : r > p->hi ? p->hi : r));
}

#if HAVE_AVX2
/* Add with tables: t_i depends only on the byte q_i, so lut[i][b] = t_i of byte b (s8:
 * b = q + 128), computed by oqci_requant exactly as the portable loop does; the tables'
 * largest |t_i| bound the sum, which is done in int32 lanes (vpgatherdd from the
 * tables, the rounded division by 256 on magnitudes) when it cannot overflow, else in
 * int64 by the scalar tail loop.  With float requantization and every |t_i| below 2^30,
 * the t_i are computed instead of gathered (m2: 2 M_i per input): u = q_i * 2 M_i is
 * exactly twice the float product oqci_requant rounds, |u| < 2^31, and round-half-away
 * of u / 2 is (trunc(u) + 1) >> 1 for trunc(u) >= 0, trunc(u) >> 1 below (arithmetic
 * shifts), as rq8 does. */
#define ADD_MIN_COUNT 256   /* below: the 256 requantizations per input do not pay */

/* 8 sums s of t_i stored at y as p's output type: round(s / 256) half away from zero
 * (|s| <= INT32_MAX - 128), clamped to [lo, hi]. */
T_AVX2 static inline __attribute__((always_inline)) void add_store8(const OqciAdd *p, __m256i s,
                                                                     __m256i lo, __m256i hi,
                                                                     uint8_t *y) {
    __m256i sg = _mm256_srai_epi32(s, 31), q;
    __m128i w;
    q = _mm256_srli_epi32(_mm256_add_epi32(_mm256_sub_epi32(_mm256_xor_si256(s, sg), sg),
                                           _mm256_set1_epi32(128)), 8);
    q = _mm256_sub_epi32(_mm256_xor_si256(q, sg), sg);
    q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
    w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    w = p->out_type == OQCI_U8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    _mm_storel_epi64((__m128i *)(void *)y, w);
}

T_AVX2 static void add_avx2(const OqciAdd *p, const void *const *x, void *y,
                            const int32_t (*lut)[256], int wide, const float *m2) {
    const __m256i z = _mm256_setzero_si256();
    const __m256i lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
    const __m128i flip = _mm_set1_epi8((char)0x80);
    int64_t j = 0;
    int32_t i;
    if (!wide)
        for (; j + 8 <= p->count; j += 8) {
            __m256i s = z;
            for (i = 0; i < p->ninputs; i++) {
                __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)((const uint8_t *)x[i] + j));
                if (m2) {   /* t_i computed: the steps of oqci_conv.c's rq8 */
                    __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(p->in_type[i] == OQCI_S8
                                                                    ? _mm256_cvtepi8_epi32(b)
                                                                    : _mm256_cvtepu8_epi32(b)),
                                             _mm256_set1_ps(m2[i]));
                    s = _mm256_add_epi32(s, oqci_half8(_mm256_cvttps_epi32(u)));
                    continue;
                }
                if (p->in_type[i] == OQCI_S8)
                    b = _mm_xor_si128(b, flip);
                s = _mm256_add_epi32(s, _mm256_i32gather_epi32((const int *)lut[i],
                                                                _mm256_cvtepu8_epi32(b), 4));
            }
            add_store8(p, s, lo, hi, (uint8_t *)y + j);
        }
    for (; j < p->count; j++) {   /* (lut NULL: computed tables, the tail as portable) */
        int64_t s = 0;
        if (!lut)
            s = add_sum8(p, x, j, 0);
        else
            for (i = 0; i < p->ninputs; i++)
                s += lut[i][((const uint8_t *)x[i])[j] ^ (p->in_type[i] == OQCI_S8 ? 0x80 : 0)];
        add_put(p, y, j, s);
    }
}
#endif

#if HAVE_AVX512
/* add_avx2's computed path (float requantization, every |t_i| < 2^30, an int32 sum)
 * 16 elements per step; the tail by add_avx2.  Two shortcuts, both exact: a u8 input
 * with 2 M_i >= 0 has trunc(u) >= 0, so its rounding step is (trunc(u) + 1) >> 1 with
 * no sign test; and with lo >= 0 (a fused Relu, or u8 outputs) the division's rounding
 * needs no sign either: for s >= 0, (s + 128) >> 8 is round(s / 256), and for s < 0 both
 * it (an arithmetic shift: at most 0) and round(s / 256) (at most 0) clamp to lo.
 * add_t16: one input's t_i on 16 bytes b (u8: the input type; pos: u8 with
 * 2 M_i = m2 >= 0); add_q16: the clamped round(s / 256) of the sums. */
T_AVX512 static inline __attribute__((always_inline)) __m512i add_t16(__m128i b, int u8, int pos,
                                                                       __m512 m2) {
    __m512i m = _mm512_cvttps_epi32(
        _mm512_mul_ps(_mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b)), m2));
    return pos ? _mm512_srai_epi32(_mm512_add_epi32(m, _mm512_set1_epi32(1)), 1) : oqci_half16(m);
}

/* 16 bytes at src */
#define LOAD16(src) _mm_loadu_si128((const __m128i *)(const void *)(src))

T_AVX512 static inline __attribute__((always_inline)) __m512i add_q16(__m512i s, int nonneg,
                                                                       __m512i lo, __m512i hi) {
    const __m512i r128 = _mm512_set1_epi32(128);
    __m512i q, sg;
    if (nonneg) {
        q = _mm512_srai_epi32(_mm512_add_epi32(s, r128), 8);
    } else {   /* round(s / 256) half away from zero on |s| <= INT32_MAX - 128 */
        sg = _mm512_srai_epi32(s, 31);
        q = _mm512_srli_epi32(_mm512_add_epi32(_mm512_sub_epi32(_mm512_xor_si512(s, sg), sg), r128), 8);
        q = _mm512_sub_epi32(_mm512_xor_si512(q, sg), sg);
    }
    return _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
}

/* Any number of inputs (n2 0), or two whose kinds u8 and pos are the constants u0, u1
 * (n2 1: the choices out of the loop; a ResNet-18 add of 64x56x56 took 14 cycles per 16
 * outputs with them inside it, 11 so). */
T_AVX512 static inline __attribute__((always_inline)) int64_t
add_avx512_body(const OqciAdd *p, const void *const *x, void *y, const float *m2, int nonneg,
                int n2, int u0, int u1) {
    /* (p's fields in locals: the byte stores may alias *p) */
    const __m512i lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
    const __m512 ma = _mm512_set1_ps(m2[0]), mb = _mm512_set1_ps(m2[1]);
    const uint8_t *a = (const uint8_t *)x[0], *b = (const uint8_t *)x[1];
    const int64_t count = p->count;
    const int32_t ninputs = p->ninputs;
    const int u8out = p->out_type == OQCI_U8;
    int pos[OQCI_ADD_MAX], u8[OQCI_ADD_MAX];   /* u8 input (and 2 M_i >= 0) */
    int64_t j = 0;
    int32_t i;
    for (i = 0; i < ninputs; i++) {
        u8[i] = p->in_type[i] == OQCI_U8;
        pos[i] = u8[i] && m2[i] >= 0.0f;
    }
    for (; j + 16 <= count; j += 16) {
        __m512i s = _mm512_setzero_si512(), q;
        if (n2) {
            s = _mm512_add_epi32(add_t16(LOAD16(a + j), u0, u0, ma),
                                 add_t16(LOAD16(b + j), u1, u1, mb));
        } else {
            for (i = 0; i < ninputs; i++)
                s = _mm512_add_epi32(s, add_t16(LOAD16((const uint8_t *)x[i] + j), u8[i], pos[i],
                                                _mm512_set1_ps(m2[i])));
        }
        q = add_q16(s, nonneg, lo, hi);
        _mm_storeu_si128((__m128i *)(void *)((uint8_t *)y + j),
                         u8out ? _mm512_cvtusepi32_epi8(q) : _mm512_cvtsepi32_epi8(q));
    }
    return j;
}

T_AVX512 static int64_t add_avx512(const OqciAdd *p, const void *const *x, void *y,
                                   const float *m2) {
    int nonneg = p->lo >= 0, i, kind[2] = {-1, -1};   /* (two inputs: 1 u8 and pos, 0 s8) */
    for (i = 0; i < 2 && p->ninputs == 2; i++)
        kind[i] = p->in_type[i] == OQCI_S8 ? 0 : m2[i] >= 0.0f ? 1 : -1;
#define ADD(N2, U0, U1) (nonneg ? add_avx512_body(p, x, y, m2, 1, N2, U0, U1)              \
                                : add_avx512_body(p, x, y, m2, 0, N2, U0, U1))
    if (kind[0] < 0 || kind[1] < 0)
        return ADD(0, 0, 0);
    return kind[0] ? (kind[1] ? ADD(1, 1, 1) : ADD(1, 1, 0)) : (kind[1] ? ADD(1, 0, 1) : ADD(1, 0, 0));
#undef ADD
}
#endif

#if HAVE_AVX2
/* Elements [j, j + n) of add_acc, all of channel c, 8 at a time (returns how many): the
 * computed t_i of add_avx2 on the clamped sums (m0 = 2 * M_0[c]) and the 8-bit input
 * (m1 = 2 * M_1), exact when every |t_i| < 2^30 (add_acc checks the bounds). */
T_AVX2 static int64_t add_acc_avx2(const OqciAdd *p, const int32_t *a, const uint8_t *b,
                                   void *y, int64_t n, float m0, float m1, int32_t alo,
                                   int32_t ahi) {
    const __m256i lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
    const __m256i clo = _mm256_set1_epi32(alo), chi = _mm256_set1_epi32(ahi);
    const __m256 v0 = _mm256_set1_ps(m0), v1 = _mm256_set1_ps(m1);
    int64_t j;
    for (j = 0; j + 8 <= n; j += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(a + j));
        __m128i bb = _mm_loadl_epi64((const __m128i *)(const void *)(b + j));
        __m256i t1 = p->in_type[1] == OQCI_S8 ? _mm256_cvtepi8_epi32(bb) : _mm256_cvtepu8_epi32(bb);
        v = _mm256_min_epi32(_mm256_max_epi32(v, clo), chi);
        add_store8(p,
                   _mm256_add_epi32(
                       oqci_half8(_mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(v), v0))),
                       oqci_half8(_mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(t1), v1)))),
                   lo, hi, (uint8_t *)y + j);
    }
    return j;
}
#endif

#if HAVE_AVX512
/* add_acc_avx2's steps 16 elements at a time, the run's last (n mod 16) ones under a
 * mask, so the whole run [j, j + n) of channel c (returns n).  The same bits: t_0 from
 * the clamped sums rounded by oqci_half16, t_1 by add_t16 on the masked bytes, the sum
 * by add_q16. */
T_AVX512 static int64_t add_acc_avx512(const OqciAdd *p, const int32_t *a, const uint8_t *b,
                                       void *y, int64_t n, float m0, float m1, int32_t alo,
                                       int32_t ahi) {
    const __m512i lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
    const __m512i clo = _mm512_set1_epi32(alo), chi = _mm512_set1_epi32(ahi);
    const __m512 v0 = _mm512_set1_ps(m0), v1 = _mm512_set1_ps(m1);
    const int u1 = p->in_type[1] == OQCI_U8, pos1 = u1 && m1 >= 0.0f;
    const int nonneg = p->lo >= 0, u8out = p->out_type == OQCI_U8;
    int64_t j;
    for (j = 0; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512i v = _mm512_maskz_loadu_epi32(k, a + j);
        __m128i bb = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64)k, b + j));
        __m512i t0, q;
        v = _mm512_min_epi32(_mm512_max_epi32(v, clo), chi);
        t0 = oqci_half16(_mm512_cvttps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(v), v0)));
        q = add_q16(_mm512_add_epi32(t0, add_t16(bb, u1, pos1, v1)), nonneg, lo, hi);
        if (u8out)
            _mm512_mask_cvtusepi32_storeu_epi8((uint8_t *)y + j, k, q);
        else
            _mm512_mask_cvtsepi32_storeu_epi8((uint8_t *)y + j, k, q);
    }
    return n;
}
#endif

#if HAVE_AVX2
/* 2 M of entry i of r for add_acc's vector steps (either mode: oqci_rq_mult); without
 * float they never run (add_acc_fast is 0), so nothing is computed. */
#ifndef OQCI_NO_FLOAT
#define ACC_M2(r, i) (2.0f * oqci_rq_mult((r), (i)))
#else
#define ACC_M2(r, i) 0.0f
#endif

/* Whether add_acc's AVX2 steps are exact for p: a float unit (either mode), two inputs, the
 * sums clamped (acc_lo) to bounds whose |t_0| stays below 2^30 in every channel, the
 * 8-bit input's |t_1| too (then every int32 sum of the two is exact). */
static int add_acc_fast(const OqciAdd *p) {
#ifndef OQCI_NO_FLOAT
    int32_t c;
    double b1;
    if (p->ninputs != 2 || !p->rq[0].per_index || !p->acc_lo)
        return 0;
    b1 = 2.0 * 255.0 * oqci_rq_mult(&p->rq[1], 0);   /* (either mode: oqci_rq_mult) */
    if (!(b1 < 1073741824.0 && b1 > -1073741824.0))
        return 0;
    for (c = 0; c < p->acc_channels; c++) {
        double m = 2.0 * oqci_rq_mult(&p->rq[0], c);
        double l = (double)p->acc_lo[c] * m, h = (double)p->acc_hi[c] * m;
        if (!(l < 1073741824.0 && l > -1073741824.0 && h < 1073741824.0 && h > -1073741824.0))
            return 0;
    }
    return 1;
#else
    (void)p;
    return 0;
#endif
}
#endif

/* oqci_add with input 0 a conv's int32 sums (see OqciAdd); p checked but for them. */
static int add_acc(const OqciAdd *p, const void *const *x, void *y) {
    const int32_t *a = (const int32_t *)x[0];
    int64_t j, run;
    int32_t c;
#if HAVE_AVX2
    int fast;
    float m1;   /* 2 M of the 8-bit input, for the vector steps */
#endif
#if HAVE_AVX512
    int fast512;
#endif
    if (p->acc_channels < 1 || p->acc_inner < 1 || p->acc_first < 0 ||
        !oqci_requant_ok(&p->rq[0], 0, p->acc_channels - 1) ||
        (p->acc_lo == NULL) != (p->acc_hi == NULL))
        return OQCI_EINVAL;
#if HAVE_AVX2
    fast = add_acc_fast(p) && oqci_use_avx2();
    m1 = fast ? ACC_M2(&p->rq[1], 0) : 0.0f;
#endif
#if HAVE_AVX512
    fast512 = fast && oqci_use_avx512();
#endif
    /* element j's channel: c, for `run` more elements from j on */
    c = (int32_t)((p->acc_first / p->acc_inner) % p->acc_channels);
    run = p->acc_inner - p->acc_first % p->acc_inner;
    for (j = 0; j < p->count;) {
        int64_t d = 0;
#if HAVE_AVX512
        if (fast512)   /* the rest of this channel's run */
            d = add_acc_avx512(p, a + j, (const uint8_t *)x[1] + j, (uint8_t *)y + j,
                               run < p->count - j ? run : p->count - j,
                               ACC_M2(&p->rq[0], c), m1, p->acc_lo[c], p->acc_hi[c]);
        else
#endif
#if HAVE_AVX2
        if (fast && run >= 8)   /* this channel's run, 8 at a time */
            d = add_acc_avx2(p, a + j, (const uint8_t *)x[1] + j, (uint8_t *)y + j,
                             run < p->count - j ? run : p->count - j,
                             ACC_M2(&p->rq[0], c), m1, p->acc_lo[c], p->acc_hi[c]);
#endif
        if (d == 0) {   /* one element */
            int32_t v = a[j];
            if (p->acc_lo)
                v = v < p->acc_lo[c] ? p->acc_lo[c] : v > p->acc_hi[c] ? p->acc_hi[c] : v;
            add_put(p, y, j,
                    oqci_requant(v, &p->rq[0], c, -INT32_MAX, INT32_MAX) + add_sum8(p, x, j, 1));
            d = 1;
        }
        j += d;
        run -= d;
        if (run == 0) {
            run = p->acc_inner;
            c = c + 1 == p->acc_channels ? 0 : c + 1;
        }
    }
    return OQCI_OK;
}

int oqci_add(const OqciAdd *p, const void *const *x, void *y) {
    int64_t j;
    int32_t i;
    if (!p || !x || !y || p->ninputs < 2 || p->ninputs > OQCI_ADD_MAX || p->count < 0 ||
        !oqci_range_ok(p->out_type, p->lo, p->hi))
        return OQCI_EINVAL;
    for (i = 0; i < p->ninputs; i++)
        if (!x[i] || ((p->in_type[i] != OQCI_S8 && p->in_type[i] != OQCI_U8) &&
                      (i > 0 || p->in_type[i] != OQCI_S32)) ||
            !oqci_requant_ok(&p->rq[i], 0, 0))
            return OQCI_EINVAL;
    if (p->in_type[0] == OQCI_S32)
        return add_acc(p, x, y);
#if HAVE_AVX2
    if (p->count >= ADD_MIN_COUNT && oqci_use_avx2()) {
        int32_t lut[OQCI_ADD_MAX][256];
        int64_t bound = 128;   /* of |sum t_i| + 128 */
        float m2[OQCI_ADD_MAX] = {0}; /* (zeroed: gcc cannot see that only calc reads it) */
        int calc = 1;
        for (i = 0; i < p->ninputs; i++) {
            /* the largest |t_i|: at a byte range end (t_i is monotone in the byte) */
            int32_t bq = p->in_type[i] == OQCI_S8 ? 128 : 0;
            int32_t t0 = oqci_requant(-bq, &p->rq[i], 0, -INT32_MAX, INT32_MAX);
            int32_t t1 = oqci_requant(255 - bq, &p->rq[i], 0, -INT32_MAX, INT32_MAX);
            int32_t big = t0 < 0 ? -t0 : t0;
            big = (t1 < 0 ? -t1 : t1) > big ? (t1 < 0 ? -t1 : t1) : big;
            bound += big;
#ifndef OQCI_NO_FLOAT
            calc = calc && big < (1 << 30);   /* (either mode: oqci_rq_mult) */
            m2[i] = calc ? 2.0f * oqci_rq_mult(&p->rq[i], 0) : 0.0f;
#else
            calc = 0;
#endif
        }
        if (!calc || bound > INT32_MAX) {   /* the tables (gathered, or the int64 tail) */
            int32_t b;
            for (i = 0; i < p->ninputs; i++)
                for (b = 0; b < 256; b++)
                    lut[i][b] = oqci_requant(b - (p->in_type[i] == OQCI_S8 ? 128 : 0), &p->rq[i],
                                             0, -INT32_MAX, INT32_MAX);
        }
#if HAVE_AVX512
        if (calc && bound <= INT32_MAX && oqci_use_avx512()) {
            /* (the elements before j done; the rest by add_avx2, which starts at 0:
             * shifted views of the same arrays) */
            int64_t done = add_avx512(p, x, y, m2);
            if (done < p->count) {
                OqciAdd rest = *p;
                const void *xr[OQCI_ADD_MAX];
                for (i = 0; i < p->ninputs; i++)
                    xr[i] = (const uint8_t *)x[i] + done;
                rest.count = p->count - done;
                add_avx2(&rest, xr, (uint8_t *)y + done, NULL, 0, m2);
            }
            return OQCI_OK;
        }
#endif
        add_avx2(p, x, y, calc && bound <= INT32_MAX ? NULL : (const int32_t(*)[256])lut,
                 bound > INT32_MAX, calc ? m2 : NULL);
        return OQCI_OK;
    }
#endif
    for (j = 0; j < p->count; j++)
        add_put(p, y, j, add_sum8(p, x, j, 0));
    return OQCI_OK;
}

int oqci_clamp(const void *x, int32_t in_type, void *y, int32_t out_type, int64_t count,
               int32_t lo, int32_t hi) {
    int64_t j;
    if (!x || !y || count < 0 || (in_type != OQCI_S8 && in_type != OQCI_U8) ||
        !oqci_range_ok(out_type, lo, hi))
        return OQCI_EINVAL;
    for (j = 0; j < count; j++) {
        int32_t v = oqci_load_q(x, in_type, j);
        oqci_store_q(y, out_type, j, v < lo ? lo : v > hi ? hi : v);
    }
    return OQCI_OK;
}

#if HAVE_AVX2
/* Elements [0, count rounded down to 8) of oqci_quantize, exactly: the same IEEE
 * division; then c = min(max(t, lo), hi) (maxps gives its second operand, lo, for a NaN
 * t, as oqci_round_clamp does), which oqci_round_clamp's steps leave at lo and hi and
 * round inside: i = trunc(c), f = c - i exact, i + 1 for f >= 0.5, i - 1 for f <= -0.5. */
T_AVX2 static int64_t quantize__avx2(const float *x, void *y, int32_t out_type, int64_t count,
                                     float scale, int32_t lo, int32_t hi) {
    const __m256 s = _mm256_set1_ps(scale), lov = _mm256_set1_ps((float)lo);
    const __m256 hiv = _mm256_set1_ps((float)hi), half = _mm256_set1_ps(0.5f);
    const __m256 mhalf = _mm256_set1_ps(-0.5f);
    int64_t j;
    for (j = 0; j + 8 <= count; j += 8) {
        __m256 t = _mm256_div_ps(_mm256_loadu_ps(x + j), s);
        __m256 c = _mm256_min_ps(_mm256_max_ps(t, lov), hiv);
        __m256i i = _mm256_cvttps_epi32(c);
        __m256 f = _mm256_sub_ps(c, _mm256_cvtepi32_ps(i));
        __m256i up = _mm256_castps_si256(_mm256_cmp_ps(f, half, _CMP_GE_OQ));
        __m256i dn = _mm256_castps_si256(_mm256_cmp_ps(f, mhalf, _CMP_LE_OQ));
        __m128i w, b;
        i = _mm256_add_epi32(_mm256_sub_epi32(i, up), dn);   /* masks are -1 */
        w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
        b = out_type == OQCI_U8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
        _mm_storel_epi64((__m128i *)(void *)((uint8_t *)y + j), b);
    }
    return j;
}
#endif

#if HAVE_AVX512
/* Elements [0, count rounded down to 16) of oqci_quantize, the same bits, without
 * dividing where the result cannot depend on it (vdivps would bound the loop).  With r = fl(1 / s) (s in [2^-125, 2^125]: r normal) and
 * y = fl(x r), t = fl(x / s) (what oqci_round_clamp rounds), |y - t| <= (3 u + u^2) |x / s|
 * with u = 2^-24 (three roundings), so below 2^-12 wherever |y| <= 1024; values and
 * results that are subnormal err by at most 2^-149, and are nowhere near +-0.5.  The
 * rounded and clamped integer, round_clamp(t), changes only where t crosses a
 * half-integer; so where y is farther than 2^-12 from every half-integer (d = |y -
 * floor(y) - 0.5| > 2^-12, exact for |y| < 2^23, 0.5 above) both give the same integer,
 * which rounding y to nearest gives too (no tie).  Where |y| > 1024, y and t both lie
 * beyond [lo - 0.5, hi + 0.5] on the same side: the clamp.  A vector with any element
 * failing the test (NaN and infinities fail it) is done by oqci_round_clamp(x / s). */
T_AVX512 static int64_t quantize__avx512(const float *x, void *y, int32_t out_type, int64_t count,
                                         float scale, int32_t lo, int32_t hi) {
    const __m512 r = _mm512_set1_ps(1.0f / scale), half = _mm512_set1_ps(0.5f);
    const __m512 tol = _mm512_set1_ps(0x1p-12f);
    const __m512 lov = _mm512_set1_ps((float)lo), hiv = _mm512_set1_ps((float)hi);
    int64_t j;
    int e;
    if (!(scale >= 0x1p-125f && scale <= 0x1p125f))
        return 0;
    for (j = 0; j + 16 <= count; j += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + j), r);
        __m512 f = _mm512_sub_ps(v, _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
        __m512 d = _mm512_abs_ps(_mm512_sub_ps(f, half));
        if (_mm512_cmp_ps_mask(d, tol, _CMP_GT_OQ) != 0xFFFF) {
            for (e = 0; e < 16; e++)
                oqci_store_q(y, out_type, j + e, oqci_round_clamp(x[j + e] / scale, lo, hi));
            continue;
        }
        __m512i i = _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_max_ps(v, lov), hiv),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)((uint8_t *)y + j),
                         out_type == OQCI_U8 ? _mm512_cvtusepi32_epi8(i) : _mm512_cvtsepi32_epi8(i));
    }
    return j;
}
#endif

/* floor(sqrt(v)), bit by bit. */
static uint64_t isqrt64(uint64_t v) {
    uint64_t r = 0, b = (uint64_t)1 << 62;
    while (b > v)
        b >>= 2;
    for (; b; b >>= 2) {
        if (v >= r + b) {
            v -= r + b;
            r = (r >> 1) + b;
        } else {
            r >>= 1;
        }
    }
    return r;
}

/* x / 2^s rounded half away from zero (s in [1, 62]). */
static int64_t shift_round(int64_t x, int s) {
    int64_t half = (int64_t)1 << (s - 1);
    return x >= 0 ? (x + half) >> s : -((-x + half) >> s);
}

int oqci_layernorm(const OqciLayerNorm *p, const void *x, void *y) {
    int64_t r, j;
    if (!p || !x || !y || p->rows < 0 || p->n < 1 || p->n > OQCI_LN_MAX || !p->gamma ||
        !p->beta || (p->in_type != OQCI_S8 && p->in_type != OQCI_U8) ||
        !oqci_range_ok(p->out_type, p->lo, p->hi) || p->eps_q < 0 ||
        p->eps_q > (int64_t)1 << 60 || p->gamma_shift < 0 || p->gamma_shift > 46)
        return OQCI_EINVAL;
    for (r = 0; r < p->rows; r++) {
        int64_t s1 = 0, s2 = 0, o = r * p->n, rcp = 0;
        uint64_t d;
        int k = 0;
        for (j = 0; j < p->n; j++) {
            int64_t q = oqci_load_q(x, p->in_type, o + j);
            s1 += q;
            s2 += q * q;
        }
        d = ((uint64_t)(p->n * s2 - s1 * s1) << OQCI_LN_EPS_BITS) + (uint64_t)p->eps_q;
        if (d) {
            while (d << (2 * k + 2) >> (2 * k + 2) == d && (d << (2 * k + 2)) < (uint64_t)1 << 62)
                k++;
            rcp = (int64_t)(((uint64_t)1 << 61) / isqrt64(d << (2 * k)));
        }
        for (j = 0; j < p->n; j++) {
            int64_t u = rcp ? shift_round((p->n * oqci_load_q(x, p->in_type, o + j) - s1) * rcp,
                                          42 - k)
                            : 0;
            int64_t t = shift_round(u * p->gamma[j], 16 + p->gamma_shift);
            int64_t c = shift_round(t + p->beta[j], 8);
            c = c < p->lo ? p->lo : c > p->hi ? p->hi : c;
            oqci_store_q(y, p->out_type, o + j, (int32_t)c);
        }
    }
    return OQCI_OK;
}

int oqci_quantize(const float *x, void *y, int32_t out_type, int64_t count, float scale) {
    int64_t j = 0;
    int32_t lo = out_type == OQCI_U8 ? 0 : -127, hi = out_type == OQCI_U8 ? 255 : 127;
    /* scale - scale is 0 exactly when scale is finite (NaN and inf give NaN) */
    if (!x || !y || count < 0 || (out_type != OQCI_S8 && out_type != OQCI_U8) ||
        !(scale > 0.0f) || scale - scale != 0.0f)
        return OQCI_EINVAL;
#if HAVE_AVX512
    if (oqci_use_avx512())
        j = quantize__avx512(x, y, out_type, count, scale, lo, hi);
#endif
#if HAVE_AVX2
    if (oqci_use_avx2())
        j += quantize__avx2(x + j, (uint8_t *)y + j, out_type, count - j, scale, lo, hi);
#endif
    for (; j < count; j++)
        oqci_store_q(y, out_type, j, oqci_round_clamp(x[j] / scale, lo, hi));
    return OQCI_OK;
}

int oqci_dequantize(const void *x, int32_t in_type, float *y, int64_t count, float scale) {
    int64_t j;
    if (!x || !y || count < 0 || (in_type != OQCI_S8 && in_type != OQCI_U8))
        return OQCI_EINVAL;
    for (j = 0; j < count; j++)
        y[j] = (float)oqci_load_q(x, in_type, j) * scale;
    return OQCI_OK;
}

/* The layout checks of the two accumulator conversions. */
static int s32_ok(const int32_t *x, const void *y, int64_t outer, int32_t channels,
                  int64_t inner) {
    return x && y && outer >= 0 && channels >= 1 && inner >= 0;
}

int oqci_dequantize_s32(const int32_t *x, float *y, int64_t outer, int32_t channels,
                        int64_t inner, const float *scale, int32_t per_channel) {
    int64_t o, j;
    int32_t c;
    if (!s32_ok(x, y, outer, channels, inner) || !scale || (per_channel != 0 && per_channel != 1))
        return OQCI_EINVAL;
    for (o = 0; o < outer; o++)
        for (c = 0; c < channels; c++) {
            float s = scale[per_channel ? c : 0];
            for (j = 0; j < inner; j++, x++)
                *y++ = (float)*x * s;
        }
    return OQCI_OK;
}

int oqci_requantize_s32(const int32_t *x, void *y, int32_t out_type, int64_t outer,
                        int32_t channels, int64_t inner, const OqciRequant *rq,
                        int32_t lo, int32_t hi) {
    int64_t o, j, i = 0;
    int32_t c;
    if (!s32_ok(x, y, outer, channels, inner) || !rq ||
        (out_type != OQCI_S8 && out_type != OQCI_U8) || !oqci_range_ok(out_type, lo, hi) ||
        !oqci_requant_ok(rq, 0, rq->per_index ? channels - 1 : 0))
        return OQCI_EINVAL;
    for (o = 0; o < outer; o++)
        for (c = 0; c < channels; c++)
            for (j = 0; j < inner; j++, i++)
                oqci_store_q(y, out_type, i, oqci_requant(x[i], rq, c, lo, hi));
    return OQCI_OK;
}

/* F = (float)M is scaled by exact doublings into [2^30, 2^31) (shift = number of
 * doublings, at most 62 for F >= 2^-32); F has 24 significant bits, so the result is an
 * integer: m * 2^-shift = F exactly.  Fails for F >= 2^30 (shift would be 0). */
int oqci_fixed_multiplier(double M, int32_t *m, int8_t *shift) {
    const double two30 = 1073741824.0, two_m32 = 1.0 / 4294967296.0;
    double v;
    int64_t i;
    int s = 0;
    if (!m || !shift || !(M >= 0.0) || !(M < 2.0 * two30))   /* negative, NaN, inf, huge */
        return OQCI_EINVAL;
    v = (double)(float)M;   /* exact: a float32 is a double */
    if (!(v < two30))
        return OQCI_EINVAL;
    if (v < two_m32) {
        *m = 0;
        *shift = 1;
        return OQCI_OK;
    }
    while (v < two30) {
        v *= 2.0;
        s++;
    }
    i = (int64_t)v;   /* exact: v is an integer */
    *m = (int32_t)i;
    *shift = (int8_t)s;
    return OQCI_OK;
}
