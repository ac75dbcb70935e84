/* oqci_conv_dwx86.c - the x86 depthwise kernels of the INT8 conv (one input channel per
 * group, oqci_conv chooses among them): float planes with AVX2 FMA or AVX-512 rows
 * (oqcik_conv_dwf__avx2) and whole small planes of 3x3, 5x5 and 7x7 kernels with AVX-512
 * (oqcik_conv_dwflat__avx512vnni at stride 1, oqcik_conv_dws2flat__avx512vnni at stride
 * 2); the byte-plane kernels of the avx512vbmi and AMX families (3x3, and 5x5 and 7x7 at
 * strides 1 and 2, which those CPUs run there instead) are oqci_conv_dwq.c's.
 * Integer-only builds (OQCI_NO_FLOAT) have none: their depthwise convs go through the
 * GEMM, as do those with accumulator outputs (OQCI_S32) in every build: 8-bit outputs
 * only here.
 *   - Depthwise (one input channel per group, any multiplier, at most DW_MAX_TAPS
 *     taps): direct kernels on a copy of the channel's plane in the scratch, zero-padded
 *     and split by stride phase so every tap of a run of outputs is a contiguous run of
 *     it.  On x86 the plane holds floats: the products and partial sums of a window are
 *     integers below 2^21, so float multiply-adds are exact and one FMA does a tap of 8
 *     outputs; 3x3 kernels at vertical stride 1 do four output rows per pass, each
 *     loaded vector serving every row whose window holds it (q8dw_4x8x9f__avx2), other
 *     rows and kernels one row (q8dw_16x9f__avx2, q8dw_16xNf__avx2); with AVX-512, 3x3
 *     kernels take 16 outputs per vector (q8dw_4x16x9f__avx512vnni, q8dw_16x9f__avx512vnni)
 *     and K x K ones (K = 3, 5, 7, dilation 1) at stride 1 with "same" output size on
 *     small planes (3x3 up to 128x128) run on the whole plane as a flat array
 *     (oqcik_conv_dwflat__avx512vnni), at stride 2 on four phase planes
 *     (oqcik_conv_dws2flat__avx512vnni): one always_inline body of K each.  With float
 *     requantization and a bias small enough to keep the sums below 2^24, the sums
 *     start from the bias and are requantized in float directly.  On Arm the plane holds
 *     int16 and q8dw_1xN__c is the plain-C loop over taps.  Whole output rows are
 *     computed into a buffer and stored together, except on planes 4 to 8 wide
 *     (3x3, stride 1, fused), which go in blocks of 4 rows straight to the output bytes
 *     (q8dw_plane4x9f__avx2): there the buffer and the per-row calls cost more than the
 *     sums. */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(dwx86) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_AVX2 && !defined(OQCI_NO_FLOAT)   /* (integer-only: depthwise through the GEMM) */
/* ---- depthwise on float planes: q8dw_16x9f__avx2 (9 taps), q8dw_16xNf__avx2 -------------
 * Every product |x * w| <= 255 * 128 and a window holds at most DW_MAX_TAPS of them, so
 * every partial sum is an integer below 2^21: float multiply-adds, fused or not, are
 * exact, and FMA does a tap of 8 outputs in one instruction (vpmaddwd needs an unpack
 * and an add for two).  The input channel's plane is copied once into the scratch as
 * floats, zero-padded and split by stride phase (DwGeo).  When the requantization is
 * float and |bias| + taps * 32640 < 2^24, the sums start from the bias and are
 * requantized in float directly (the steps of rq8 after its conversion: the same t);
 * otherwise they are converted to int32 (exact) and go through rq8. */

#if defined(__AVX2__) && !defined(__FMA__)
#define T_AVX2F T_AVX2
#define FMADD(a, b, c) _mm256_add_ps(_mm256_mul_ps(a, b), c)
#else
#if defined(__AVX2__)
#define T_AVX2F
#else
#define T_AVX2F __attribute__((target("avx2,fma")))
#endif
#define FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#endif

/* 8 bytes (u8 or s8) as 8 floats. */
T_AVX2F static inline __m256 cvt8f(__m128i b, int u8) {
    return _mm256_cvtepi32_ps(u8 ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b));
}

/* The part of each phase's plane row that lies inside the input: e in [e0, e1) for
 * iw = e * s_w + ph - p_l in [0, in_w).  e0 = ceil((p_l - ph) / s_w) and e1 =
 * ceil((in_w + p_l - ph) / s_w) are q + (ph < r) for the quotient and remainder of
 * p_l and in_w + p_l by s_w: four divisions per call, none per channel. */
typedef struct DwfSpan {
    int32_t ql, rl, qr, rr;
} DwfSpan;

static void dwf_span_make(const OqciConv *p, DwfSpan *s) {
    s->ql = p->p_l / p->s_w;
    s->rl = p->p_l % p->s_w;
    s->qr = (p->in_w + p->p_l) / p->s_w;
    s->rr = (p->in_w + p->p_l) % p->s_w;
}

/* 8 bytes (s_w 1) or 16 (s_w 2) from src when they all lie before lim (the end of the
 * input tensor), else the ones before lim and zeros: the conversions never read past
 * the input tensor. */
T_AVX2F static inline __m128i dwf_load(const uint8_t *src, const uint8_t *lim, int32_t bytes) {
    if (lim - src >= bytes)
        return bytes == 16 ? LDU128(src) : _mm_loadl_epi64((const __m128i *)(const void *)src);
    {
        uint8_t t[16] = {0};
        memcpy(t, src, (size_t)(lim - src));
        return LDU128(t);
    }
}

/* Fills the float plane of input channel xc: element (ph, r, e) = x[r - p_t][e * s_w +
 * ph - p_l].  Only the elements inside the input are written: the padding is zeroed
 * once per call (it is the same for every channel).  Strides 1 and 2 convert 8 bytes
 * per step (a row shorter than 8 with a masked store, a longer one's last 8 overlapping
 * the ones before); larger strides go one byte at a time. */
T_AVX2F static void dwf_fill(const OqciConv *p, const DwGeo *d, const DwfSpan *s,
                             const uint8_t *xc, const uint8_t *lim, float *plane) {
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    int32_t ph, r, u8 = p->in_type == OQCI_U8, sw = p->s_w;
    int32_t r0 = p->p_t, r1 = p->p_t + p->in_h < d->rows ? p->p_t + p->in_h : d->rows;
    for (ph = 0; ph < d->phases; ph++) {
        int32_t e0 = s->ql + (ph < s->rl), e1 = s->qr + (ph < s->rr), n;
        __m256i mask;
        e0 = e0 < 0 ? 0 : e0 > d->width ? d->width : e0;
        e1 = e1 < e0 ? e0 : e1 > d->width ? d->width : e1;
        n = e1 - e0;
        mask = _mm256_loadu_si256((const __m256i *)(const void *)(ones_then_zeros + 8 - (n < 8 ? n : 8)));
        for (r = r0; r < r1; r++) {
            float *dst = plane + ((int64_t)ph * d->rows + r) * d->width + e0;
            const uint8_t *src = xc + (int64_t)(r - p->p_t) * p->in_w + (int64_t)e0 * sw +
                                 ph - p->p_l;
            int32_t t = 0;
#define CVT8(at, U8)                                                                    \
    _mm256_storeu_ps(dst + (at), cvt8f(_mm_loadl_epi64((const __m128i *)(const void *)(src + (at))), U8))
#define CVT_RUN(U8)   /* 16 per step, then the last 8 (overlapping the ones before) */  \
    for (; t + 16 <= n; t += 16) {                                                      \
        CVT8(t, U8);                                                                    \
        CVT8(t + 8, U8);                                                                \
    }                                                                                   \
    if (t < n) {                                                                        \
        if (t + 8 < n)                                                                  \
            CVT8(t, U8);                                                                \
        CVT8(n - 8, U8);                                                                \
    }
            if (sw == 1 && n >= 8 && u8) {
                CVT_RUN(1)
            } else if (sw == 1 && n >= 8) {
                CVT_RUN(0)
            } else if (sw == 2 && n >= 8) {
                /* bytes 2t .. 2t + 15: inside the row while t + 8 < n; the last 8
                 * (overlapping) may reach one byte past it */
                for (; t + 8 < n; t += 8)
                    _mm256_storeu_ps(dst + t, cvt8f(_mm_shuffle_epi8(LDU128(src + 2 * t), even), u8));
                _mm256_storeu_ps(dst + n - 8,
                                 cvt8f(_mm_shuffle_epi8(dwf_load(src + 2 * (n - 8), lim, 16), even), u8));
            } else if (sw <= 2 && n > 0) {   /* fewer than 8: masked */
                __m128i b = sw == 1 ? dwf_load(src, lim, 8)
                                    : _mm_shuffle_epi8(dwf_load(src, lim, 16), even);
                _mm256_maskstore_ps(dst, mask, cvt8f(b, u8));
            } else {
                for (; t < n; t++) {
                    uint8_t b = src[(int64_t)t * sw];
                    dst[t] = u8 ? (float)b : (float)(int8_t)b;
                }
            }
#undef CVT_RUN
#undef CVT8
        }
    }
}

/* Float sums s of 8 outputs (bias included) requantized: rq8's float steps on t2 = 2 t. */
T_AVX2F static inline __m256i rqf8(__m256 s, const RqV *v) {
    __m256 u = _mm256_mul_ps(s, v->mult2);
    __m256i m = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(u, v->lo2), v->hi2));
    __m256i ge0 = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(-1));
    return _mm256_srai_epi32(_mm256_sub_epi32(m, ge0), 1);
}

/* The 8 outputs of sums s: requantized (fused) or the exact int32 sums. */
#define DWF_OUT(ptr, s) STU256(ptr, fused ? rqf8(s, v) : _mm256_cvttps_epi32(s))

/* n outputs (a multiple of 8) of one row, 9 taps at base + off[t], weights w, sums
 * from b; three partial sums (taps 0-2, 3-5, 6-8) per vector of 8, two vectors per
 * step and a last single one. */
T_AVX2F static void q8dw_16x9f__avx2(const float *base, const int64_t *off, const float *w,
                                     int32_t taps, float b, int32_t n, const RqV *v,
                                     int fused, int32_t *out) {
    const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[1]), w2 = _mm256_set1_ps(w[2]);
    const __m256 w3 = _mm256_set1_ps(w[3]), w4 = _mm256_set1_ps(w[4]), w5 = _mm256_set1_ps(w[5]);
    const __m256 w6 = _mm256_set1_ps(w[6]), w7 = _mm256_set1_ps(w[7]), w8 = _mm256_set1_ps(w[8]);
    const float *o0 = base + off[0], *o1 = base + off[1], *o2 = base + off[2];
    const float *o3 = base + off[3], *o4 = base + off[4], *o5 = base + off[5];
    const float *o6 = base + off[6], *o7 = base + off[7], *o8 = base + off[8];
    const __m256 bv = _mm256_set1_ps(b);
    int32_t e;
    (void)taps;
#define L(ptr, at) _mm256_loadu_ps((ptr) + (at))
#define SUM9(at)                                                                        \
    _mm256_add_ps(_mm256_add_ps(FMADD(L(o2, at), w2, FMADD(L(o1, at), w1, FMADD(L(o0, at), w0, bv))), \
                                FMADD(L(o5, at), w5, FMADD(L(o4, at), w4, _mm256_mul_ps(L(o3, at), w3)))), \
                  FMADD(L(o8, at), w8, FMADD(L(o7, at), w7, _mm256_mul_ps(L(o6, at), w6))))
    for (e = 0; e + 16 <= n; e += 16) {
        __m256 a = SUM9(e), c = SUM9(e + 8);
        DWF_OUT(out + e, a);
        DWF_OUT(out + e + 8, c);
    }
    if (e < n)
        DWF_OUT(out + e, SUM9(e));
#undef SUM9
#undef L
}

/* Four output rows of a 3x3 kernel at vertical stride and dilation 1, 8 columns at e,
 * into a0 .. a3 (rows oh .. oh + 3 read padded rows oh .. oh + 5, rstride apart): each
 * loaded vector of an input row serves every output row it is in the window of, so 6 x
 * 3 loads feed 36 multiply-adds.  c0, c1, c2: the three kernel columns' bases (phase
 * and shift); weights w00 .. w22 and the start bv are the caller's locals (a macro, not
 * a function taking an array, which compilers may keep on the stack instead of in
 * registers). */
#define DW_W9(w)                                                                        \
    const __m256 w00 = _mm256_set1_ps((w)[0]), w01 = _mm256_set1_ps((w)[1]);            \
    const __m256 w02 = _mm256_set1_ps((w)[2]), w10 = _mm256_set1_ps((w)[3]);            \
    const __m256 w11 = _mm256_set1_ps((w)[4]), w12 = _mm256_set1_ps((w)[5]);            \
    const __m256 w20 = _mm256_set1_ps((w)[6]), w21 = _mm256_set1_ps((w)[7]);            \
    const __m256 w22 = _mm256_set1_ps((w)[8])
#define LX(j, r) t = _mm256_loadu_ps(c##j + (r) * rstride + e)
#define DWFMA FMADD
#define DW_4X8                                                                          \
    a0 = bv, a1 = bv, a2 = bv, a3 = bv;                                                 \
    /* input row 0: out 0 (kernel row 0) */                                             \
    LX(0, 0); a0 = DWFMA(t, w00, a0);                                                   \
    LX(1, 0); a0 = DWFMA(t, w01, a0);                                                   \
    LX(2, 0); a0 = DWFMA(t, w02, a0);                                                   \
    /* row 1: out 0 (k1), out 1 (k0) */                                                 \
    LX(0, 1); a0 = DWFMA(t, w10, a0); a1 = DWFMA(t, w00, a1);                           \
    LX(1, 1); a0 = DWFMA(t, w11, a0); a1 = DWFMA(t, w01, a1);                           \
    LX(2, 1); a0 = DWFMA(t, w12, a0); a1 = DWFMA(t, w02, a1);                           \
    /* row 2: out 0 (k2), 1 (k1), 2 (k0) */                                             \
    LX(0, 2); a0 = DWFMA(t, w20, a0); a1 = DWFMA(t, w10, a1); a2 = DWFMA(t, w00, a2);   \
    LX(1, 2); a0 = DWFMA(t, w21, a0); a1 = DWFMA(t, w11, a1); a2 = DWFMA(t, w01, a2);   \
    LX(2, 2); a0 = DWFMA(t, w22, a0); a1 = DWFMA(t, w12, a1); a2 = DWFMA(t, w02, a2);   \
    /* row 3: out 1 (k2), 2 (k1), 3 (k0) */                                             \
    LX(0, 3); a1 = DWFMA(t, w20, a1); a2 = DWFMA(t, w10, a2); a3 = DWFMA(t, w00, a3);   \
    LX(1, 3); a1 = DWFMA(t, w21, a1); a2 = DWFMA(t, w11, a2); a3 = DWFMA(t, w01, a3);   \
    LX(2, 3); a1 = DWFMA(t, w22, a1); a2 = DWFMA(t, w12, a2); a3 = DWFMA(t, w02, a3);   \
    /* row 4: out 2 (k2), 3 (k1) */                                                     \
    LX(0, 4); a2 = DWFMA(t, w20, a2); a3 = DWFMA(t, w10, a3);                           \
    LX(1, 4); a2 = DWFMA(t, w21, a2); a3 = DWFMA(t, w11, a3);                           \
    LX(2, 4); a2 = DWFMA(t, w22, a2); a3 = DWFMA(t, w12, a3);                           \
    /* row 5: out 3 (k2) */                                                             \
    LX(0, 5); a3 = DWFMA(t, w20, a3);                                                   \
    LX(1, 5); a3 = DWFMA(t, w21, a3);                                                   \
    LX(2, 5); a3 = DWFMA(t, w22, a3)

/* Four output rows into out (ostride apart) as int32: requantized (fused) or the exact
 * sums.  n columns, rounded up to 8; the last columns first, so sums past a row's end
 * land on the next row's first columns, which come later. */
T_AVX2F static void q8dw_4x8x9f__avx2(const float *base, int64_t rstride, const int64_t *colo,
                                      const float *w, float b, int32_t n, const RqV *v,
                                      int fused, int32_t *out, int32_t ostride) {
    DW_W9(w);
    const __m256 bv = _mm256_set1_ps(b);
    const float *c0 = base + colo[0], *c1 = base + colo[1], *c2 = base + colo[2];
    int32_t e;
    for (e = (int32_t)round_up(n, 8) - 8; e >= 0; e -= 8) {
        __m256 a0, a1, a2, a3, t;
        DW_4X8;
        STU256(out + e, fused ? rqf8(a0, v) : _mm256_cvttps_epi32(a0));
        STU256(out + ostride + e, fused ? rqf8(a1, v) : _mm256_cvttps_epi32(a1));
        STU256(out + 2 * ostride + e, fused ? rqf8(a2, v) : _mm256_cvttps_epi32(a2));
        STU256(out + 3 * ostride + e, fused ? rqf8(a3, v) : _mm256_cvttps_epi32(a3));
    }
}

/* A whole output plane at most 8 wide of a 3x3 kernel at vertical stride and dilation
 * 1 with fused float requantization, straight to the out_type bytes at y: blocks of 4
 * rows, the last one overlapping the one before when out_h is not a multiple of 4.  The
 * rows are stored 8 bytes at a time, in order, so each row's extra bytes are
 * overwritten by the next row's; the plane's last row goes through a copy.  (On planes
 * this small the int32 row buffer and the row kernel's calls cost more than the sums.)
 * Needs out_h >= 4. */
T_AVX2F static void q8dw_plane4x9f__avx2(const OqciConv *p, const float *plane,
                                         int64_t rstride, const int64_t *colo, const float *w,
                                         float b, const RqV *v, uint8_t *y) {
    const int32_t oh_n = p->out_h, ow_n = p->out_w, u8 = p->out_type == OQCI_U8, e = 0;
    DW_W9(w);
    const __m256 bv = _mm256_set1_ps(b);
    int32_t oh;
    for (oh = 0; oh < oh_n; oh += 4) {
        const float *c0, *c1, *c2;
        uint8_t *dst, tmp[16];
        __m256 a0, a1, a2, a3, t;
        __m256i bytes;
        __m128i lo, hi;
        if (oh + 4 > oh_n)
            oh = oh_n - 4;
        c0 = plane + oh * rstride + colo[0];
        c1 = plane + oh * rstride + colo[1];
        c2 = plane + oh * rstride + colo[2];
        dst = y + (int64_t)oh * ow_n;
        DW_4X8;
        bytes = pack32(u8, rqf8(a0, v), rqf8(a1, v), rqf8(a2, v), rqf8(a3, v));   /* rows 0-3 */
        lo = _mm256_castsi256_si128(bytes);
        hi = _mm256_extracti128_si256(bytes, 1);
        _mm_storel_epi64((__m128i *)(void *)dst, lo);
        _mm_storel_epi64((__m128i *)(void *)(dst + ow_n), _mm_unpackhi_epi64(lo, lo));
        _mm_storel_epi64((__m128i *)(void *)(dst + 2 * ow_n), hi);
        if (oh + 4 < oh_n) {
            _mm_storel_epi64((__m128i *)(void *)(dst + 3 * ow_n), _mm_unpackhi_epi64(hi, hi));
        } else {   /* the plane's last row */
            _mm_storeu_si128((__m128i *)(void *)tmp, hi);
            memcpy(dst + 3 * ow_n, tmp + 8, (size_t)ow_n);
        }
    }
}

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
/* ---- AVX-512 depthwise rows: q8dw_4x16x9f__avx512vnni, q8dw_16x9f__avx512vnni ------
 * The AVX2 kernels' sums 16 outputs per zmm (the plane rows are DW_VEC = 16 aligned, so
 * a vector never reads past its row; the outputs past n land where the AVX2 kernels'
 * contract allows: on later rows, or in the buffer's slack), requantized by rqf16 (rqf8's
 * steps). */
#undef LX
#undef DWFMA
#define LX(j, r) t = _mm512_loadu_ps(c##j + (r) * rstride + e)
#define DWFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define DW_W9Z(w)                                                                       \
    const __m512 w00 = _mm512_set1_ps((w)[0]), w01 = _mm512_set1_ps((w)[1]);            \
    const __m512 w02 = _mm512_set1_ps((w)[2]), w10 = _mm512_set1_ps((w)[3]);            \
    const __m512 w11 = _mm512_set1_ps((w)[4]), w12 = _mm512_set1_ps((w)[5]);            \
    const __m512 w20 = _mm512_set1_ps((w)[6]), w21 = _mm512_set1_ps((w)[7]);            \
    const __m512 w22 = _mm512_set1_ps((w)[8])

T_AVX512VNNI static inline __attribute__((always_inline)) void rqfz_make(const RqV *v, RqFZ *z) {
    z->mult2 = _mm512_set1_ps(_mm256_cvtss_f32(v->mult2));
    z->lo2 = _mm512_set1_ps(_mm256_cvtss_f32(v->lo2));
    z->hi2 = _mm512_set1_ps(_mm256_cvtss_f32(v->hi2));
}

#define DWZ_OUT(ptr, s)                                                                 \
    _mm512_storeu_si512((void *)(ptr), fused ? rqf16(s, &vz) : _mm512_cvttps_epi32(s))

T_AVX512VNNI static void q8dw_4x16x9f__avx512vnni(const float *base, int64_t rstride,
                                                  const int64_t *colo, const float *w, float b,
                                                  int32_t n, const RqV *v, int fused,
                                                  int32_t *out, int32_t ostride) {
    DW_W9Z(w);
    const __m512 bv = _mm512_set1_ps(b);
    const float *c0 = base + colo[0], *c1 = base + colo[1], *c2 = base + colo[2];
    int32_t e;
    RqFZ vz;
    rqfz_make(v, &vz);
    for (e = (int32_t)round_up(n, 16) - 16; e >= 0; e -= 16) {
        __m512 a0, a1, a2, a3, t;
        DW_4X8;
        DWZ_OUT(out + e, a0);
        DWZ_OUT(out + ostride + e, a1);
        DWZ_OUT(out + 2 * ostride + e, a2);
        DWZ_OUT(out + 3 * ostride + e, a3);
    }
}

T_AVX512VNNI static void q8dw_16x9f__avx512vnni(const float *base, const int64_t *off,
                                                const float *w, int32_t taps, float b, int32_t n,
                                                const RqV *v, int fused, int32_t *out) {
    DW_W9Z(w);
    const float *o0 = base + off[0], *o1 = base + off[1], *o2 = base + off[2];
    const float *o3 = base + off[3], *o4 = base + off[4], *o5 = base + off[5];
    const float *o6 = base + off[6], *o7 = base + off[7], *o8 = base + off[8];
    const __m512 bv = _mm512_set1_ps(b);
    int32_t e;
    RqFZ vz;
    (void)taps;
    rqfz_make(v, &vz);
#define L(ptr) _mm512_loadu_ps((ptr) + e)
    for (e = 0; e < n; e += 16) {
        __m512 s0 = DWFMA(L(o2), w02, DWFMA(L(o1), w01, DWFMA(L(o0), w00, bv)));
        __m512 s1 = DWFMA(L(o5), w12, DWFMA(L(o4), w11, _mm512_mul_ps(L(o3), w10)));
        __m512 s2 = DWFMA(L(o8), w22, DWFMA(L(o7), w21, _mm512_mul_ps(L(o6), w20)));
        DWZ_OUT(out + e, _mm512_add_ps(_mm512_add_ps(s0, s1), s2));
    }
#undef L
}
#undef DWZ_OUT
#undef DW_W9Z
#endif
#undef DW_4X8
#undef LX
#undef DWFMA
#undef DW_W9

/* Any number of taps: two partial sums (even and odd taps) per vector of 8; n a
 * multiple of 8. */
T_AVX2F static void q8dw_16xNf__avx2(const float *base, const int64_t *off, const float *w,
                                     int32_t taps, float b, int32_t n, const RqV *v,
                                     int fused, int32_t *out) {
    int32_t e, t;
    for (e = 0; e < n; e += 16) {
        int two = e + 16 <= n;   /* else the last 8 */
        __m256 a0 = _mm256_set1_ps(b), a1 = _mm256_setzero_ps();
        __m256 c0 = a0, c1 = a1;
        for (t = 0; t + 1 < taps; t += 2) {
            const float *s0 = base + off[t] + e, *s1 = base + off[t + 1] + e;
            __m256 u = _mm256_set1_ps(w[t]), z = _mm256_set1_ps(w[t + 1]);
            a0 = FMADD(_mm256_loadu_ps(s0), u, a0);
            a1 = FMADD(_mm256_loadu_ps(s1), z, a1);
            if (two) {
                c0 = FMADD(_mm256_loadu_ps(s0 + 8), u, c0);
                c1 = FMADD(_mm256_loadu_ps(s1 + 8), z, c1);
            }
        }
        if (t < taps) {
            const float *s0 = base + off[t] + e;
            __m256 u = _mm256_set1_ps(w[t]);
            a0 = FMADD(_mm256_loadu_ps(s0), u, a0);
            if (two)
                c0 = FMADD(_mm256_loadu_ps(s0 + 8), u, c0);
        }
        DWF_OUT(out + e, _mm256_add_ps(a0, a1));
        if (two)
            DWF_OUT(out + e + 8, _mm256_add_ps(c0, c1));
    }
}
#undef DWF_OUT

/* Requantized outputs q (int32 in [lo, hi]) stored as n out_type bytes at dst. */
T_AVX2 static void dw_pack_store(const OqciConv *p, const int32_t *q, int32_t n, void *dst) {
    int32_t e;
    for (e = 0; e < n; e += 32) {
        __m256i b = pack32(p->out_type == OQCI_U8, LDU256(q + e), LDU256(q + e + 8),
                           LDU256(q + e + 16), LDU256(q + e + 24));
        if (n - e >= 32) {
            STU256((uint8_t *)dst + e, b);
        } else {
            uint8_t t[32];
            STU256(t, b);
            memcpy((uint8_t *)dst + e, t, (size_t)(n - e));
        }
    }
}

T_AVX2 static void dw_store__avx2(const OqciConv *p, const int32_t *t, int32_t n, int32_t k,
                                  void *dst) {
    RqV v;
    int32_t e;
    rqv_make(p, k, 0, 0, &v);
    for (e = 0; e + 32 <= n; e += 32)
        STU256((uint8_t *)dst + e, rq32(p, t + e, &v));
    if (e < n) {
        uint8_t q[32];
        STU256(q, rq32(p, t + e, &v));
        memcpy((uint8_t *)dst + e, q, (size_t)(n - e));
    }
}

#if HAVE_DWZ
/* ---- the flat kernels: K x K depthwise (K = 3, 5, 7) on whole small planes -----------
 * On small planes (MobileNet's and EfficientNet's 7x7 to 56x56) the row kernels' per-row
 * set-up costs more than the sums.  These run each channel as whole flat arrays, 16
 * outputs per vector, K K loads and FMAs per vector (the taps unrolled by DWF_EACH, K K
 * weight vectors, in registers up to K = 5), the partial sums of kernel rows i, i + 3,
 * i + 6 in s[i % 3] (sums of integers below 2^24 in any order: exact), requantized by
 * rqf16.  Both need conv_dwf's fused condition for every channel (dw_all_fused); each
 * kernel's body is one always_inline function of K, instantiated for 3, 5 and 7. */

/* T(i, j) for the K K taps (i, j) of the kernel, rows in order; K a constant (the other
 * branches are dropped). */
#define DWF_R3(T, i) T(i, 0) T(i, 1) T(i, 2)
#define DWF_R5(T, i) DWF_R3(T, i) T(i, 3) T(i, 4)
#define DWF_R7(T, i) DWF_R5(T, i) T(i, 5) T(i, 6)
#define DWF_EACH(T)                                                                     \
    if (K == 3) {                                                                       \
        DWF_R3(T, 0) DWF_R3(T, 1) DWF_R3(T, 2)                                          \
    } else if (K == 5) {                                                                \
        DWF_R5(T, 0) DWF_R5(T, 1) DWF_R5(T, 2) DWF_R5(T, 3) DWF_R5(T, 4)                \
    } else {                                                                            \
        DWF_R7(T, 0) DWF_R7(T, 1) DWF_R7(T, 2) DWF_R7(T, 3) DWF_R7(T, 4) DWF_R7(T, 5)   \
        DWF_R7(T, 6)                                                                    \
    }
/* Channel weight (i, j) broadcast into wv; tap (i, j) (its input vector DWF_LD(i, j),
 * defined by each kernel) added to s[i % 3]. */
#define DWF_W(i, j) wv[(i) * K + (j)] = _mm512_set1_ps((float)w[(i) * K + (j)]);
#define DWF_T(i, j) s[(i) % 3] = _mm512_fmadd_ps(DWF_LD(i, j), wv[(i) * K + (j)], s[(i) % 3]);

/* The flat kernels' K: 3, 5 or 7 for a square kernel at dilation 1 with pads before
 * in [0, K), else 0. */
static int32_t dwflat_k(const OqciConv *p) {
    int32_t k = p->k_h;
    return (k == 3 || k == 5 || k == 7) && p->k_w == k && p->d_h == 1 && p->d_w == 1 &&
           p->p_t >= 0 && p->p_t < k && p->p_l >= 0 && p->p_l < k ? k : 0;
}

/* ---- oqcik_conv_dwflat__avx512vnni: stride 1, output plane = input plane --------------
 * The output plane equals the input plane, so it is computed as one flat array: the
 * input channel as floats after p_t W + p_l zeros (the rows above the image and the
 * left pad of its first row) and before (K - 1 - p_t) W + K - 1 - p_l plus two vectors'
 * (the rows below); output i sums tap (i', j) from flat index i + (i' - p_t) W + j - p_l,
 * which is the right input or a zero of the padding rows, except where the column wraps
 * (ow + j - p_l outside [0, W)): there the load is masked to 0 (K masks per vector, made
 * once per call).  16 outputs per store, the last one masked. */
int oqcik_dwflat_ok(const OqciConv *p) {
    int32_t k = dwflat_k(p);
    int64_t hw = (int64_t)p->in_h * p->in_w;
    return k && p->s_h == 1 && p->s_w == 1 && p->out_h == p->in_h && p->out_w == p->in_w &&
           hw >= 16 && (hw + 15) / 16 * k <= DWFLAT_MASKS && dw_all_fused(p);
}

T_AVX512VNNI static inline __attribute__((always_inline)) void
dwflat_run(const OqciConv *p, const void *x, void *y, void *scratch, const int32_t K) {
    const int32_t w_ = p->in_w, hw = p->in_h * p->in_w, nv = (hw + 15) / 16;
    const int32_t pre = p->p_t * w_ + p->p_l, kg = p->out_c / p->group;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    float *xp = (float *)(void *)align_up(scratch), *xc = xp + pre;
    __mmask16 mk[DWFLAT_MASKS];
    int64_t n;
    int32_t v, l, g;
    dw_wrap_masks(w_, p->p_l, K, nv, mk);
    memset(xp, 0, (size_t)pre * sizeof(float));
    memset(xc + hw, 0, (size_t)((K - 1) * (w_ + 1) - pre + 32) * sizeof(float));
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * (int64_t)hw;
            int32_t kk, t;
            for (t = 0;; t += 16) {   /* the channel as floats (the last 16 overlapping) */
                __m128i b;
                if (t + 16 > hw)
                    t = hw - 16;
                b = _mm_loadu_si128((const __m128i *)(const void *)(xs + t));
                _mm512_storeu_ps(xc + t, _mm512_cvtepi32_ps(u8in ? _mm512_cvtepu8_epi32(b)
                                                                  : _mm512_cvtepi8_epi32(b)));
                if (t + 16 >= hw)
                    break;
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * (int64_t)hw;
                const __m512 bv = _mm512_set1_ps((float)(p->bias ? p->bias[k] : 0));
                __m512 wv[DWF_MAXK * DWF_MAXK];
                const float *rp[DWF_MAXK];   /* tap row i of output 0 (the 16 v + j added) */
                RqFZ vz;
                DWF_EACH(DWF_W)
                for (l = 0; l < K; l++)
                    rp[l] = xp + (int64_t)l * w_;
                rqfz_channel(p, k, &vz);
                for (v = 0; v < nv; v++) {
                    const int64_t e = 16 * (int64_t)v;
                    const __mmask16 *m = mk + v * K;
                    __m512 s[3];
                    __m512i q;
                    s[0] = bv;
                    s[1] = s[2] = _mm512_setzero_ps();
#define DWF_LD(i, j) _mm512_maskz_loadu_ps(m[j], rp[i] + e + (j))
                    DWF_EACH(DWF_T)
#undef DWF_LD
                    q = rqf16(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]), &vz);
                    if (16 * v + 16 <= hw)
                        _mm_storeu_si128((__m128i *)(void *)(yk + 16 * v), narrow16(q, u8out));
                    else
                        _mm512_mask_cvtepi32_storeu_epi8(yk + 16 * v,
                                                         (__mmask16)((1u << (hw - 16 * v)) - 1), q);
                }
            }
        }
}

/* ---- oqcik_conv_dws2flat__avx512vnni: stride 2 --------------------------------------------
 * The row kernels spend most of a stride-2 depthwise conv on per-row set-up (14x14 ->
 * 7x7: ~500 cycles per channel for 49 outputs).  Here the input channel is split once
 * into four phase planes, P[a][b][r][c] = x[2 r + a - p_t][2 c + b - p_l] (0 outside the
 * input), r in [0, OH + h), c in [0, S), S = OW + h, h = (K - 1) / 2; output (oh, ow) is
 * then sum over taps (i, j) of w[i][j] P[i & 1][j & 1][oh + i / 2][ow + j / 2], i.e. with
 * o = oh S + ow, flat offset (i / 2) S + j / 2 in plane (i & 1, j & 1): whole planes as
 * flat arrays with no masks, h junk outputs per row (ow >= OW, never stored).  The valid
 * lanes of each vector are compressed (vpcompressd) and stored contiguously (16 bytes,
 * the ones past the valid lanes rewritten by the next vector; the plane's end through a
 * copy).  The planes' padding is zeroed once per call; each channel writes only the
 * input's part (deinterleaved by vpermt2ps). */
#define DWS2_MAX 16384   /* OH S outputs at most (the masks: 2 KB of stack) */
#define DWS2_MAXW 2048   /* input columns at most (chunk masks: 1 KB) */

int oqcik_dws2flat_ok(const OqciConv *p) {
    int32_t k = dwflat_k(p);
    return k && p->s_h == 2 && p->s_w == 2 && p->in_w <= DWS2_MAXW &&
           (int64_t)p->out_h * (p->out_w + (k - 1) / 2) <= DWS2_MAX && dw_all_fused(p);
}

/* A 32-input chunk of an input row: its load mask and the store masks of its evens
 * (x[t + 2 e] at column t / 2 + ce + e of its phase row) and odds (x[t + 2 e + 1] at
 * t / 2 + co + e) inside the rows (columns below S); the same for every row, made once
 * per call. */
typedef struct Dws2Chunk {
    __mmask64 ld;
    __mmask16 ev, od;
} Dws2Chunk;

static void dws2_chunks(int32_t in_w, int32_t sr, int32_t ce, int32_t co, Dws2Chunk *ch) {
    int32_t t;
    for (t = 0; t < in_w; t += 32) {
        int32_t n = in_w - t < 32 ? in_w - t : 32, c = t / 2;
        int32_t ne = (n + 1) / 2, no = n / 2;
        Dws2Chunk *k = &ch[t / 32];
        ne = ne > sr - c - ce ? sr - c - ce : ne;
        no = no > sr - c - co ? sr - c - co : no;
        k->ld = n >= 32 ? (__mmask64)0xFFFFFFFFu : ((__mmask64)1 << n) - 1;
        k->ev = (__mmask16)(ne > 0 ? (1u << ne) - 1 : 0);
        k->od = (__mmask16)(no > 0 ? (1u << no) - 1 : 0);
    }
}

/* Input row xr into phase rows ev and od (their columns ce and co already added), chunk
 * by chunk: two float vectors of 16 inputs, deinterleaved by vpermt2ps. */
T_AVX512VNNI static inline __attribute__((always_inline)) void
dws2_row(const uint8_t *xr, int32_t in_w, const Dws2Chunk *ch, int u8, float *ev, float *od) {
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    int32_t t;
    for (t = 0; t < in_w; t += 32, ch++) {
        __m512i b = _mm512_maskz_loadu_epi8(ch->ld, xr + t);
        __m128i b0 = _mm512_castsi512_si128(b), b1 = _mm512_extracti32x4_epi32(b, 1);
        __m512 f0 = _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b0) : _mm512_cvtepi8_epi32(b0));
        __m512 f1 = _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b1) : _mm512_cvtepi8_epi32(b1));
        _mm512_mask_storeu_ps(ev + t / 2, ch->ev, _mm512_permutex2var_ps(f0, ie, f1));
        _mm512_mask_storeu_ps(od + t / 2, ch->od, _mm512_permutex2var_ps(f0, io, f1));
    }
}

T_AVX512VNNI static inline __attribute__((always_inline)) void
dws2flat_run(const OqciConv *p, const void *x, void *y, void *scratch, const int32_t K) {
    const int32_t h = (K - 1) / 2, oh_n = p->out_h, ow_n = p->out_w, sr = ow_n + h;
    const int32_t kg = p->out_c / p->group, no = oh_n * sr, nv = (no + 15) / 16;
    const int32_t pt = p->p_t, pl_ = p->p_l;
    const int64_t pl = ((int64_t)oh_n + h) * sr, plane_in = (int64_t)p->in_h * p->in_w;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const int64_t opix = (int64_t)oh_n * ow_n;
    float *ph = (float *)(void *)align_up(scratch);   /* P[a][b] at ph + (2 a + b) pl */
    /* x[., iw] of even iw - t (t even) is at column (iw + p_l) / 2 = t / 2 + e + p_l / 2
     * of phase b = p_l & 1; odd ones at t / 2 + e + (p_l + 1) / 2 of the other phase */
    const int32_t be = pl_ & 1, ce = pl_ >> 1, co = (pl_ + 1) >> 1;
    __mmask16 mv[DWS2_MAX / 16];
    Dws2Chunk ch[DWS2_MAXW / 32];
    int64_t n;
    int32_t v, l, g, ih;
    for (v = 0; v < nv; v++) {
        mv[v] = 0;
        for (l = 0; l < 16; l++)
            if (16 * v + l < no && (16 * v + l) % sr < ow_n)
                mv[v] = (__mmask16)(mv[v] | 1u << l);
    }
    dws2_chunks(p->in_w, sr, ce, co, ch);
    memset(ph, 0, (size_t)dws2_floats(p) * sizeof(float));   /* (dw_scratch has it) */
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * plane_in;
            int32_t kk;
            for (ih = 0; ih < p->in_h; ih++) {   /* input row ih = 2 r + a - p_t */
                int32_t a = (ih + pt) & 1, r = (ih + pt) >> 1;
                float *row = ph + 2 * a * pl + (int64_t)r * sr;
                if (r >= oh_n + h)
                    break;
                dws2_row(xs + (int64_t)ih * p->in_w, p->in_w, ch, u8in, row + be * pl + ce,
                         row + (1 - be) * pl + co);
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * opix;
                const __m512 bv = _mm512_set1_ps((float)(p->bias ? p->bias[k] : 0));
                __m512 wv[DWF_MAXK * DWF_MAXK];
                const float *pp[4] = {ph, ph + pl, ph + 2 * pl, ph + 3 * pl};
                int64_t at = 0;
                RqFZ vz;
                DWF_EACH(DWF_W)
                rqfz_channel(p, k, &vz);
                for (v = 0; v < nv; v++) {
                    const int64_t o = 16 * (int64_t)v;
                    const int64_t oi[(DWF_MAXK + 1) / 2] = {o, o + sr, o + 2 * sr, o + 3 * sr};
                    __m512 s[3];
                    s[0] = bv;
                    s[1] = s[2] = _mm512_setzero_ps();
                    /* tap (i, j): plane (i & 1, j & 1) at (i / 2) S + j / 2 */
#define DWF_LD(i, j) _mm512_loadu_ps(pp[2 * ((i) & 1) + ((j) & 1)] + oi[(i) >> 1] + ((j) >> 1))
                    DWF_EACH(DWF_T)
#undef DWF_LD
                    dw_store_valid(rqf16(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]), &vz),
                                   mv[v], u8out, yk, &at, opix);
                }
            }
        }
}

/* The instantiations: K a constant in each call of the bodies. */
T_AVX512VNNI void oqcik_conv_dwflat__avx512vnni(const OqciConv *p, const void *x, void *y,
                                                void *scratch) {
    p->k_h == 3   ? dwflat_run(p, x, y, scratch, 3)
    : p->k_h == 5 ? dwflat_run(p, x, y, scratch, 5)
                  : dwflat_run(p, x, y, scratch, 7);
}

T_AVX512VNNI void oqcik_conv_dws2flat__avx512vnni(const OqciConv *p, const void *x, void *y,
                                                  void *scratch) {
    p->k_h == 3   ? dws2flat_run(p, x, y, scratch, 3)
    : p->k_h == 5 ? dws2flat_run(p, x, y, scratch, 5)
                  : dws2flat_run(p, x, y, scratch, 7);
}
#undef DWF_T
#undef DWF_W
#undef DWF_EACH
#undef DWF_R7
#undef DWF_R5
#undef DWF_R3
#endif

/* One input channel per group (any multiplier), float planes: whole output rows into
 * buf, as many as it holds, then stored (rows wider than buf go in pieces).  z: the
 * AVX-512 row kernels for 3x3 (the CPU has them: the AVX-512 VNNI family was chosen). */
T_AVX2F void oqcik_conv_dwf__avx2(const OqciConv *p, const void *x, void *y, void *scratch,
                                  int z) {
    DwGeo d;
    float *plane = (float *)(void *)align_up(scratch), wf[DW_MAX_TAPS];
    int64_t off[DW_MAX_TAPS], n, plane_in = (int64_t)p->in_h * p->in_w;
    int64_t pix = (int64_t)p->out_h * p->out_w, bstride;
    int32_t kg = p->out_c / p->group, g, i, j, t;
    int32_t wr = (int32_t)round_up(p->out_w, 8);
    int32_t buf[DW_BUF + TILE_NR];   /* + TILE_NR: whole vectors past the last row */
    int32_t rows = wr <= DW_BUF ? (DW_BUF - wr) / p->out_w + 1 : 0;
    void (*rowk)(const float *, const int64_t *, const float *, int32_t, float, int32_t,
                 const RqV *, int, int32_t *);
    void (*fourk)(const float *, int64_t, const int64_t *, const float *, float, int32_t,
                  const RqV *, int, int32_t *, int32_t) = q8dw_4x8x9f__avx2;
    int four = p->k_h == 3 && p->k_w == 3 && p->s_h == 1 && p->d_h == 1;
    int64_t colo[3];
    DwfSpan span;
    const uint8_t *xend = (const uint8_t *)x + (int64_t)p->batch * p->in_c * plane_in;
    if (four && rows > 4)   /* whole blocks of the 4-row kernel (buf is not refilled less) */
        rows -= rows % 4;
    dw_geo(p, &d);
    dwf_span_make(p, &span);
    rowk = d.taps == 9 ? q8dw_16x9f__avx2 : q8dw_16xNf__avx2;
#if HAVE_DWZ
    if (z && d.taps == 9) {
        rowk = q8dw_16x9f__avx512vnni;
        fourk = q8dw_4x16x9f__avx512vnni;
    }
#else
    (void)z;
#endif
    for (j = 0; j < 3; j++)
        colo[j] = dw_tap_off(p, &d, 0, j);
    memset(plane, 0, (size_t)d.phases * (size_t)d.rows * (size_t)d.width * sizeof(float));
    bstride = (int64_t)p->s_h * d.width;
    for (i = 0; i < p->k_h; i++)
        for (j = 0; j < p->k_w; j++)
            off[i * p->k_w + j] = dw_tap_off(p, &d, i, j);
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            int32_t kk;
            dwf_fill(p, &d, &span, (const uint8_t *)x + (n * p->in_c + g) * plane_in, xend, plane);
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, ow;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * pix;
                int64_t bias = p->bias ? p->bias[k] : 0;
                RqV v;
                int fused;
                rqv_make(p, k, 0, 0, &v);
                fused = dw_bias_fits(bias, d.taps);   /* (either mode: rqv_make) */
                for (t = 0; t + 8 <= d.taps; t += 8)
                    _mm256_storeu_ps(wf + t, cvt8f(_mm_loadl_epi64((const __m128i *)(const void *)(w + t)), 0));
                for (; t < d.taps; t++)
                    wf[t] = (float)w[t];
                /* (4 to 8 wide: row r's 8-byte store ends inside rows r + 1 .. 3, or
                 * inside the next block's rows, never past the plane) */
                if (four && fused && p->out_h >= 4 && p->out_w >= 4 && p->out_w <= 8) {
                    q8dw_plane4x9f__avx2(p, plane, d.width, colo, wf, (float)bias, &v, yk);
                    continue;
                }
                if (rows) {
                    for (oh = 0; oh < p->out_h; oh += rows) {
                        int32_t nr = p->out_h - oh < rows ? p->out_h - oh : rows, r = 0;
                        /* rows are written in order: each row's sums past out_w are
                         * overwritten by the next row's (the 4-row kernel goes from the
                         * last columns to the first) */
                        if (four)
                            for (; r + 4 <= nr; r += 4)
                                fourk(plane + (oh + r) * bstride, d.width, colo, wf,
                                      fused ? (float)bias : 0.0f, p->out_w, &v, fused,
                                      buf + r * p->out_w, p->out_w);
                        for (; r < nr; r++)
                            rowk(plane + (oh + r) * bstride, off, wf, d.taps,
                                 fused ? (float)bias : 0.0f, wr, &v, fused, buf + r * p->out_w);
                        if (fused)
                            dw_pack_store(p, buf, nr * p->out_w, yk + (int64_t)oh * p->out_w);
                        else
                            dw_store__avx2(p, buf, nr * p->out_w, k, yk + (int64_t)oh * p->out_w);
                    }
                    continue;
                }
                for (oh = 0; oh < p->out_h; oh++)
                    for (ow = 0; ow < p->out_w; ow += DW_BUF) {
                        int32_t len = p->out_w - ow < DW_BUF ? p->out_w - ow : DW_BUF;
                        uint8_t *dst = yk + (int64_t)oh * p->out_w + ow;
                        rowk(plane + oh * bstride + ow, off, wf, d.taps,
                             fused ? (float)bias : 0.0f, (int32_t)round_up(len, 8), &v, fused,
                             buf);
                        if (fused)
                            dw_pack_store(p, buf, len, dst);
                        else
                            dw_store__avx2(p, buf, len, k, dst);
                    }
            }
        }
}

#endif /* HAVE_AVX2 && !OQCI_NO_FLOAT */
