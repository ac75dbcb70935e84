/* oqci_conv_avx2.c - the AVX2 family of the INT8 conv (oqcik_family_avx2 on 16-bit
 * panels, oqcik_family_avx2n for weights whose pairs fit int16), the few-pixel dot
 * products (oqcik_conv_gemv_avx2), and the pieces the other x86 families reuse: byte
 * transposes, strided copies (gather), the tile epilogue (oqcik_store_tile__avx2) and the
 * weight sums of the VNNI corrections.  The SIMD GEMM that drives the family is
 * oqci_conv_gemm.c's, the requantization oqci_conv_x86_int.h's.
 *   - AVX2 (q8conv_2x28c4__avx2): vpmaddubsw would saturate (255 * 127 * 2 > 32767), so
 *     the panel holds the inputs widened to 16 bits (zero- or sign-extended) and the
 *     weight quad is sign-extended with one vpmovsxbw per channel and quad; vpmaddwd
 *     (16-bit pairs into int32, exact) then sums px's k0 k1 and k2 k3 in two lanes,
 *     added together once per tile.  It is exact for every 8-bit weight, and cheaper
 *     than the other exact form, u8 inputs split into their low 7 bits and top bit (two
 *     vpmaddubsw + two vpmaddwd per 32 MACs).
 *     s8 and u8 inputs need no offset: both widen exactly.
 *   - AVX2 with weights whose pairs fit int16 (p->wpair16, see oqci_conv_wpair16: 7-bit
 *     weights always do; oqc compile --weight-bits 7): q8conv_3x24c4n__avx2 on the VNNI
 *     panel (below), vpmaddubsw (exact for those weights) then vpmaddwd by ones, half
 *     the operations of the 16-bit form; partial last panels (7x7 planes) run 8- or
 *     16-pixel bodies.
 *   - Epilogue: per tile row, the channel's constants (RqV: correction, bias, whether
 *     the bias addition can overflow, the multiplier), then the AVX2 requantization
 *     (rq8) reproduces oqci_requant's float and fixed-point results exactly, 8 lanes at
 *     a time, and packs 32 outputs into bytes.  Accumulator outputs (OQCI_S32): the
 *     corrected sums plus the bias, saturated and clamped, stored as int32.  With float
 *     requantization both families' microkernels requantize in registers (Family.ukr_rq,
 *     for the last of several K blocks too: ukr_rq_acc, and all of a thin layer's
 *     channels in one call: ukr_rq_wide), in int16 lanes where rq_mode allows (rq32_i16).
 *   - Packing from the band of input rows: pack_band_body with each family's transposes
 *     inlined (BAND_PACKERS).
 *   - Few output pixels (Gemm or MatMul with a handful of rows: npix < GEMV_MAX_PIX): a
 *     panel would be mostly empty, so each pixel row is dotted with the weight rows
 *     (q8gemv_4x16__avx2: vpmaddwd on 16-bit copies, horizontal sums at the end). */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(avx2) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_AVX2

/* Sum of n weights: vpsadbw of the bytes + 128 (as u8), less 128 n. */
T_AVX2 int64_t oqcik_wsum__avx2(const int8_t *w, int32_t n) {
    const __m256i flip = _mm256_set1_epi8((char)0x80), z = _mm256_setzero_si256();
    __m256i acc = z;
    __m128i h;
    int64_t s;
    int32_t t = 0;
    for (; t + 32 <= n; t += 32) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(w + t));
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(b, flip), z));
    }
    h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1) - 128 * (int64_t)t;
    for (; t < n; t++)
        s += w[t];
    return s;
}

/* u8 / s8 bytes widened to int16 and transposed, 8 pixels per step. */
T_AVX2 static inline __attribute__((always_inline)) void
tr4_s16(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, int32_t len,
        int16_t *d, int u8) {
    int32_t t = 0;
    for (; t + 8 <= len; t += 8) {
        __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(r0 + t));
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(r1 + t));
        __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)(r2 + t));
        __m128i e = _mm_loadl_epi64((const __m128i *)(const void *)(r3 + t));
        __m128i ab = _mm_unpacklo_epi8(a, b), ce = _mm_unpacklo_epi8(c, e);
        __m128i lo = _mm_unpacklo_epi16(ab, ce), hi = _mm_unpackhi_epi16(ab, ce);
        if (u8) {
            STU256(d + 4 * t, _mm256_cvtepu8_epi16(lo));
            STU256(d + 4 * t + 16, _mm256_cvtepu8_epi16(hi));
        } else {
            STU256(d + 4 * t, _mm256_cvtepi8_epi16(lo));
            STU256(d + 4 * t + 16, _mm256_cvtepi8_epi16(hi));
        }
    }
    if (t + 4 <= len) {   /* four pixels: 4-byte loads */
        __m128i a = _mm_cvtsi32_si128(load32((const int8_t *)(r0 + t)));
        __m128i b = _mm_cvtsi32_si128(load32((const int8_t *)(r1 + t)));
        __m128i c = _mm_cvtsi32_si128(load32((const int8_t *)(r2 + t)));
        __m128i e = _mm_cvtsi32_si128(load32((const int8_t *)(r3 + t)));
        __m128i lo = _mm_unpacklo_epi16(_mm_unpacklo_epi8(a, b), _mm_unpacklo_epi8(c, e));
        STU256(d + 4 * t, u8 ? _mm256_cvtepu8_epi16(lo) : _mm256_cvtepi8_epi16(lo));
        t += 4;
    }
    for (; t < len; t++) {
        d[4 * t] = u8 ? (int16_t)r0[t] : (int16_t)(int8_t)r0[t];
        d[4 * t + 1] = u8 ? (int16_t)r1[t] : (int16_t)(int8_t)r1[t];
        d[4 * t + 2] = u8 ? (int16_t)r2[t] : (int16_t)(int8_t)r2[t];
        d[4 * t + 3] = u8 ? (int16_t)r3[t] : (int16_t)(int8_t)r3[t];
    }
}

T_AVX2 static inline __attribute__((always_inline)) void
tr4_s16_u8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                 int32_t len, void *dst) {
    tr4_s16(r0, r1, r2, r3, len, (int16_t *)dst, 1);
}
T_AVX2 static inline __attribute__((always_inline)) void
tr4_s16_s8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                 int32_t len, void *dst) {
    tr4_s16(r0, r1, r2, r3, len, (int16_t *)dst, 0);
}

/* Bytes transposed, optionally with the top bit flipped (VNNI and pair16 panels). */
T_AVX2 static inline __attribute__((always_inline)) void
tr4_b(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, int32_t len,
      uint8_t *d, uint8_t flip) {
    __m128i fv = _mm_set1_epi8((char)flip);
    int32_t t = 0;
    for (; t + 8 <= len; t += 8) {
        __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(r0 + t));
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(r1 + t));
        __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)(r2 + t));
        __m128i e = _mm_loadl_epi64((const __m128i *)(const void *)(r3 + t));
        __m128i ab = _mm_unpacklo_epi8(a, b), ce = _mm_unpacklo_epi8(c, e);
        STU128(d + 4 * t, _mm_xor_si128(_mm_unpacklo_epi16(ab, ce), fv));
        STU128(d + 4 * t + 16, _mm_xor_si128(_mm_unpackhi_epi16(ab, ce), fv));
    }
    if (t + 4 <= len) {   /* four pixels: 4-byte loads */
        __m128i a = _mm_cvtsi32_si128(load32((const int8_t *)(r0 + t)));
        __m128i b = _mm_cvtsi32_si128(load32((const int8_t *)(r1 + t)));
        __m128i c = _mm_cvtsi32_si128(load32((const int8_t *)(r2 + t)));
        __m128i e = _mm_cvtsi32_si128(load32((const int8_t *)(r3 + t)));
        STU128(d + 4 * t, _mm_xor_si128(_mm_unpacklo_epi16(_mm_unpacklo_epi8(a, b),
                                                          _mm_unpacklo_epi8(c, e)), fv));
        t += 4;
    }
    for (; t < len; t++) {
        d[4 * t] = (uint8_t)(r0[t] ^ flip);
        d[4 * t + 1] = (uint8_t)(r1[t] ^ flip);
        d[4 * t + 2] = (uint8_t)(r2[t] ^ flip);
        d[4 * t + 3] = (uint8_t)(r3[t] ^ flip);
    }
}

/* The VNNI and pair16 panels' transposes: s8 inputs + 128, u8 inputs as they are. */
T_AVX2 static inline __attribute__((always_inline)) void tr4_bs8__avx2(
    const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, int32_t len,
    void *dst) {
    tr4_b(r0, r1, r2, r3, len, (uint8_t *)dst, 0x80);
}
T_AVX2 static inline __attribute__((always_inline)) void tr4_bu8__avx2(
    const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, int32_t len,
    void *dst) {
    tr4_b(r0, r1, r2, r3, len, (uint8_t *)dst, 0);
}

/* A family's Family.band_pack pair, pack_band_s8__SUF and pack_band_u8__SUF:
 * pack_band_body for panels of NR pixels of ESIZE-byte elements with the transposes
 * TS8 (s8 inputs) and TU8 (u8 inputs) inlined. */
#define BAND_PACKERS(SUF, NR, ESIZE, TS8, TU8)                                          \
    T_AVX2 static void pack_band_s8__##SUF(const OqciConv *p, const Band *b, int64_t r0, \
                                           const Seg *segs, int nseg, int32_t q0,       \
                                           int32_t nq, uint8_t *panel) {                \
        pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, NR, ESIZE, TS8);            \
    }                                                                                   \
    T_AVX2 static void pack_band_u8__##SUF(const OqciConv *p, const Band *b, int64_t r0, \
                                           const Seg *segs, int nseg, int32_t q0,       \
                                           int32_t nq, uint8_t *panel) {                \
        pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, NR, ESIZE, TU8);            \
    }

/* u8 inputs as they are, s8 inputs + 128: the u8 operand of vpdpbusd. */
T_AVX2 void oqcik_tr4_u8_u8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                  const uint8_t *r3, int32_t len, void *dst) {
    tr4_bu8__avx2(r0, r1, r2, r3, len, dst);
}
T_AVX2 void oqcik_tr4_u8_s8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                  const uint8_t *r3, int32_t len, void *dst) {
    tr4_bs8__avx2(r0, r1, r2, r3, len, dst);
}

/* Strided copy of an input run: stride 1 is a copy; stride 2 takes the even bytes of
 * 32 at a time, then of 16, and ends with the 8 outputs before n from the odd bytes of
 * the 16 ending at src[2n - 2] (overlapping outputs already stored, with the same
 * values).  No read leaves src[0 .. 2n - 2]; runs shorter than 9 go byte by byte. */
T_AVX2 static inline __attribute__((always_inline)) void
gather1__avx2(const uint8_t *src, int32_t stride, int32_t n, uint8_t *dst) {
    int32_t t = 0;
    if (stride == 1 && n >= 4 && n <= 32) {   /* short rows: two overlapping copies */
        if (n >= 16) {
            __m128i a = LDU128(src), b = LDU128(src + n - 16);
            STU128(dst, a);
            STU128(dst + n - 16, b);
        } else if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, src, 8);
            memcpy(&b, src + n - 8, 8);
            memcpy(dst, &a, 8);
            memcpy(dst + n - 8, &b, 8);
        } else {
            uint32_t a, b;
            memcpy(&a, src, 4);
            memcpy(&b, src + n - 4, 4);
            memcpy(dst, &a, 4);
            memcpy(dst + n - 4, &b, 4);
        }
        return;
    }
    if (stride == 1) {
        memcpy(dst, src, (size_t)n);
        return;
    }
    if (stride == 2 && n >= 9) {
        const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1,
                                           -1, -1);
        const __m128i odd = _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, -1, -1, -1, -1, -1, -1,
                                          -1, -1);
        for (; 2 * t + 31 <= 2 * n - 2; t += 16) {
            __m128i a = LDU128(src + 2 * t);
            __m128i b = LDU128(src + 2 * t + 16);
            STU128(dst + t,
                   _mm_unpacklo_epi64(_mm_shuffle_epi8(a, even), _mm_shuffle_epi8(b, even)));
        }
        if (2 * t + 15 <= 2 * n - 2) {
            _mm_storel_epi64((__m128i *)(void *)(dst + t),
                             _mm_shuffle_epi8(LDU128(src + 2 * t), even));
            t += 8;
        }
        if (t < n)
            _mm_storel_epi64((__m128i *)(void *)(dst + n - 8),
                             _mm_shuffle_epi8(LDU128(src + 2 * n - 17), odd));
        return;
    }
    for (; t < n; t++)
        dst[t] = src[(int64_t)t * stride];
}

T_AVX2 void oqcik_gather__avx2(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                               uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r;
    for (r = 0; r < rows; r++, src += sstep, dst += dstep)
        gather1__avx2(src, stride, n, dst);
}

/* Accumulator outputs (OQCI_S32) of a tile, straight to y run by run, 8 lanes at a time
 * (a run's last, partial vector masked, for loads as for stores): the sums plus the
 * correction and bias (mod 2^32, exact where bias_may_overflow says so; else the bias
 * added with saturation, add_sat32: exactly sat32 of the int64 sum), clamped to
 * [lo, hi]. */
T_AVX2 static void store_tile_s32__avx2(const OqciConv *p, const int32_t *t, int32_t ldt,
                                        int32_t k0, int32_t nk, const int32_t *corr,
                                        int bias_done, const Seg *segs, int nseg, void *y) {
    const __m256i lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int32_t r;
    for (r = 0; r < nk; r++) {
        int32_t k = k0 + r, c = corr ? corr[r] : 0;
        int64_t b = !bias_done && p->bias ? p->bias[k] : 0;
        int sat = bias_may_overflow(p, b);
        __m256i add = _mm256_set1_epi32(sat ? c : (int32_t)((uint32_t)c + (uint32_t)b));
        __m256i bv = _mm256_set1_epi32((int32_t)b);
        const int32_t *tr = t + (size_t)r * ldt;
        int si;
        for (si = 0; si < nseg; si++) {
            const Seg *s = &segs[si];
            const int32_t *src = tr + s->off;
            int32_t *dst =
                (int32_t *)y + (s->n * p->out_ctotal + p->out_coff + k) * pix + s->pix0;
            int32_t e;
            for (e = 0; e < s->len; e += 8) {
                int full = s->len - e >= 8;
                __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(s->len - e), lane);
                __m256i a = full ? LDU256(src + e) : _mm256_maskload_epi32(src + e, m);
                a = _mm256_add_epi32(a, add);
                if (sat)
                    a = add_sat32(a, bv);
                a = _mm256_min_epi32(_mm256_max_epi32(a, lo), hi);
                if (full)
                    STU256(dst + e, a);
                else
                    _mm256_maskstore_epi32(dst + e, m, a);
            }
        }
    }
}

/* The tile epilogue of the x86 families: 8-bit outputs requantized (rqv_make, rq32) and
 * stored as bytes through the runs; accumulator outputs by store_tile_s32__avx2. */
T_AVX2 void oqcik_store_tile__avx2(const OqciConv *p, const int32_t *t, int32_t ldt,
                                   int32_t k0, int32_t nk, const int32_t *corr, int bias_done,
                                   const Seg *segs, int nseg, void *y) {
    int32_t r;
    uint8_t q[32];
    if (p->out_type == OQCI_S32) {
        store_tile_s32__avx2(p, t, ldt, k0, nk, corr, bias_done, segs, nseg, y);
        return;
    }
    for (r = 0; r < nk; r++) {
        int32_t k = k0 + r;
        RqV v;
        rqv_make(p, k, corr ? corr[r] : 0, bias_done, &v);
        STU256(q, rq32(p, t + (size_t)r * ldt, &v));
        oqcik_store_runs(p, q, k, segs, nseg, y);
    }
}

/* ---- q8conv_2x28c4__avx2: 2 channels x 28 pixels, int16 panel ---------------------- */

#define AVX2_NR 28
#define ACC7(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6)

/* pixels 0-3 | 4-7 of two accumulators (lanes 2p, 2p+1 of pixel p) summed in order */
T_AVX2 static __m256i hsum_pairs(__m256i a, __m256i b) {
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8);
}

/* The 2 x 28 sums: 14 accumulators a<r><v> (channel r, pixels 4v .. 4v + 3, each as two
 * lanes of pair sums).  Written so gcc keeps them in registers: the panel pointer
 * advances at the end of the body and the sums leave the loop only through plain
 * stores or register operations (a reduction right after the loop made gcc 12 spill
 * half of them). */
#define Q8CONV_2X28_SUMS                                                                \
    const int16_t *pp = (const int16_t *)panel;                                         \
    const int8_t *w0 = w[0], *w1 = w[1];                                                \
    int32_t q;                                                                          \
    ACC7(DECL)                                                                          \
    for (q = 0; q < nq; q++) {                                                          \
        /* words w0 w1 w2 w3 repeated: dword lanes alternate (w0, w1) and (w2, w3) */   \
        __m256i wv = _mm256_cvtepi8_epi16(_mm_set1_epi32(load32(w0 + 4 * q)));         \
        ACC7(STEP0)                                                                     \
        wv = _mm256_cvtepi8_epi16(_mm_set1_epi32(load32(w1 + 4 * q)));                  \
        ACC7(STEP1)                                                                     \
        pp += 4 * AVX2_NR;                                                              \
    }
#define DECL(v) __m256i a0##v = _mm256_setzero_si256(), a1##v = _mm256_setzero_si256();
#define STEP(r, v) a##r##v = _mm256_add_epi32(a##r##v, _mm256_madd_epi16(LDU256(pp + 16 * v), wv));
#define STEP0(v) STEP(0, v)
#define STEP1(v) STEP(1, v)
/* the raw sums out: channel 0's 7 vectors, then channel 1's */
#define STORE(v) STU256(raw + 8 * v, a0##v); STU256(raw + 56 + 8 * v, a1##v);

T_AVX2 static void q8conv_2x28c4__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                       int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    int32_t raw[14 * 8];
    Q8CONV_2X28_SUMS
    ACC7(STORE)
    {
        int r, v;
        for (r = 0; r < nk; r++)
            for (v = 0; v < 4; v++) {
                const int32_t *s = raw + 56 * r + 16 * v;
                __m256i *d = (__m256i *)(void *)(t + r * TILE_NR + 8 * v);
                __m256i lo = LDU256(s);
                __m256i hi = v < 3 ? LDU256(s + 8)
                                   : _mm256_setzero_si256();
                __m256i sum = hsum_pairs(lo, hi);
                _mm256_storeu_si256(d, acc ? _mm256_add_epi32(_mm256_loadu_si256(d), sum) : sum);
            }
    }
}

#ifndef OQCI_NO_FLOAT
/* A channel's float epilogue constants (the fields rq8 reads when the requantization is
 * float and the bias addition cannot overflow), as rqv_make sets them, from c. */
T_AVX2 static inline __attribute__((always_inline)) void rqv_float(const OqciConv *p,
                                                                     const RqPre *c, RqV *v) {
    v->sat = 0;
    v->add = _mm256_set1_epi32(c->add);
    v->mult2 = _mm256_set1_ps(c->m2);
    v->lo2 = _mm256_set1_ps(2.0f * (float)p->lo);
    v->hi2 = _mm256_set1_ps(2.0f * (float)p->hi);
}

/* q8conv_2x28c4__avx2 with its epilogue: the raw sums leave the registers as in
 * q8conv_2x28c4__avx2 (so gcc keeps the loop's accumulators in registers), then the
 * pair sums are added up (hsum_pairs), plus when t the sums of the earlier K blocks (rows
 * of t, stride TILE_NR), and requantized (rq8, or with i16 rq32_i16: mode RQ_I16), 28
 * bytes per channel into out, without the int32 tile and the separate store pass. */
T_AVX2 static inline __attribute__((always_inline)) void
q8conv_2x28c4_rqt_body(int32_t nq, const void *panel, const int8_t *const *w, const int32_t *t,
                       const OqciConv *p, int32_t nk, const RqPre *pre, uint8_t *out,
                       int64_t ostride, int i16) {
    int32_t raw[14 * 8];
    Q8CONV_2X28_SUMS
    ACC7(STORE)
    {
        const __m256i z = _mm256_setzero_si256();
        const __m256i lo2w = _mm256_set1_epi16((short)(2 * p->lo));
        const __m256i hi2w = _mm256_set1_epi16((short)(2 * p->hi));
        int u8 = p->out_type == OQCI_U8, r, v;
        for (r = 0; r < nk; r++) {
            const int32_t *s = raw + 56 * r;
            __m256i sum[4];
            RqV rv;
            for (v = 0; v < 4; v++) {
                sum[v] = hsum_pairs(LDU256(s + 16 * v), v < 3 ? LDU256(s + 16 * v + 8) : z);
                if (t)   /* (lanes 28-31 of the last: t's padding, never stored) */
                    sum[v] = _mm256_add_epi32(sum[v], LDU256(t + r * TILE_NR + 8 * v));
            }
            rqv_float(p, pre + r, &rv);
            store_bytes(out + r * ostride,
                        i16 ? rq32_i16(u8, sum[0], sum[1], sum[2], sum[3], &rv, lo2w, hi2w)
                            : pack32(u8, rq8(sum[0], &rv), rq8(sum[1], &rv), rq8(sum[2], &rv),
                                     rq8(sum[3], &rv)),
                        AVX2_NR);
        }
    }
}
/* Family.ukr_rq_acc: the last of several K blocks (see q8conv_2x28c4_rqt_body); with t
 * NULL, Family.ukr_rq. */
T_AVX2 static void q8conv_2x28c4_rqt__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                           const int32_t *t, const OqciConv *p, int32_t nk,
                                           const RqPre *pre, uint8_t *out, int64_t ostride,
                                           int32_t np, int i16) {
    (void)np;   /* (computes whole panels) */
    q8conv_2x28c4_rqt_body(nq, panel, w, t, p, nk, pre, out, ostride, i16 == RQ_I16);
}
T_AVX2 static void q8conv_2x28c4_rq__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                          const OqciConv *p, int32_t nk,
                                          const RqPre *pre, uint8_t *out, int64_t ostride,
                                          int32_t np, int i16) {
    q8conv_2x28c4_rqt__avx2(nq, panel, w, NULL, p, nk, pre, out, ostride, np, i16);
}
/* Family.ukr_rq_wide: all nk channels, two at a time. */
T_AVX2 static void q8conv_2x28c4_rqw__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                           const int32_t *t, const OqciConv *p, int32_t nk,
                                           const RqPre *pre, uint8_t *out, int64_t ostride,
                                           int32_t np, int i16) {
    int32_t kk;
    (void)np;
    for (kk = 0; kk < nk; kk += 2)
        q8conv_2x28c4_rqt_body(nq, panel, w + kk, t ? t + (size_t)kk * TILE_NR : NULL, p,
                               nk - kk < 2 ? nk - kk : 2, pre + kk, out + kk * ostride, ostride,
                               i16 == RQ_I16);
}
#define UKR_RQ_AVX2 q8conv_2x28c4_rq__avx2
#define UKR_RQ_ACC_AVX2 q8conv_2x28c4_rqt__avx2
#define UKR_RQ_WIDE_AVX2 q8conv_2x28c4_rqw__avx2
#else
#define UKR_RQ_AVX2 NULL   /* (integer-only builds: fixed requantization only) */
#define UKR_RQ_ACC_AVX2 NULL
#define UKR_RQ_WIDE_AVX2 NULL
#endif
#undef STORE
#undef STEP0
#undef STEP1
#undef STEP
#undef DECL
#undef Q8CONV_2X28_SUMS

/* Family.band_pack: pack_band_body with the int16 transposes inlined (through
 * Family.tr4, every quad of every panel would be a call). */
BAND_PACKERS(avx2, AVX2_NR, 2, tr4_s16_s8__avx2, tr4_s16_u8__avx2)
const Family oqcik_family_avx2 = {
    .isa = OQCI_ISA_AVX2,
    .mr = 2,
    .nr = AVX2_NR,
    .esize = 2,
    .kbq = KBQ(AVX2_NR, 2),
    .flip = -1,
    .ukr = q8conv_2x28c4__avx2,
    .tr4 = {tr4_s16_s8__avx2, tr4_s16_u8__avx2},
    .gather = oqcik_gather__avx2,
    .store = oqcik_store_tile__avx2,
    .ukr_rq = UKR_RQ_AVX2,
    .band_pack = {pack_band_s8__avx2, pack_band_u8__avx2},
    .ukr_rq_acc = UKR_RQ_ACC_AVX2,
    .ukr_rq_wide = UKR_RQ_WIDE_AVX2,
    .tail_whole = 1,
    .grid = GRID_BY_WORK,
    .wsum = oqcik_wsum__avx2,
};

/* ---- q8conv_3x24c4n__avx2: 3 channels x 24 pixels, u8 panel, narrow weights --------
 * For weights whose pairs fit (p->wpair16, see oqci_conv_wpair16): vpmaddubsw's int16
 * sums of two u8 x s8 products are exact, so one vpmaddubsw (32 products) and one
 * vpmaddwd by ones (the two pair sums of each quad into int32) do what vpdpbusd does.
 * The panel is the VNNI one: u8 inputs as they are, s8 inputs + 128 with the -128 sum w
 * correction.  A panel whose pixels fill only one or two of the three 8-pixel vectors
 * (the last panel of a 7x7 plane holds 1 of 24) runs a 3x8 or 3x16 body. */
#define N_NR 24
#define NROWS(F, V) F(0, V) F(1, V) F(2, V)
#define NV1(F, r) F(r, 0)
#define NV2(F, r) F(r, 0) F(r, 1)
#define NV3(F, r) F(r, 0) F(r, 1) F(r, 2)
#define NDECL(r, v) __m256i a##r##v = _mm256_setzero_si256();
#define NDECLR(r, V) V(NDECL, r)
#define NLOAD(r, v) __m256i p##v = LDU256(pp + 32 * v);
#define NDOT(r, v)                                                                      \
    a##r##v = _mm256_add_epi32(a##r##v, _mm256_madd_epi16(_mm256_maddubs_epi16(p##v, wb), ones));
#define NSTEP(r, V) { __m256i wb = _mm256_set1_epi32(load32(w[r] + 4 * q)); V(NDOT, r) }
#define NSUMS(V)                                                                        \
    const uint8_t *pp = (const uint8_t *)panel;                                         \
    const __m256i ones = _mm256_set1_epi16(1);                                          \
    int32_t q;                                                                          \
    NROWS(NDECLR, V)                                                                    \
    for (q = 0; q < nq; q++, pp += 4 * N_NR) {                                          \
        V(NLOAD, 0)                                                                     \
        NROWS(NSTEP, V)                                                                 \
    }
#define NST(r, v)                                                                       \
    STU256(t + r * TILE_NR + 8 * v,                                                     \
           acc ? _mm256_add_epi32(LDU256(t + r * TILE_NR + 8 * v), a##r##v) : a##r##v);
#define NSTR(r, V) if (r < nk) { V(NST, r) }
#define NBODY(NAME, V)                                                                  \
    T_AVX2 static void NAME(int32_t nq, const void *panel, const int8_t *const *w,      \
                            int32_t *t, int acc, int32_t nk) {                          \
        NSUMS(V)                                                                        \
        NROWS(NSTR, V)                                                                  \
    }
NBODY(q8conv_3x8c4n__avx2, NV1)
NBODY(q8conv_3x16c4n__avx2, NV2)
NBODY(q8conv_3x24c4n_full__avx2, NV3)
#undef NBODY

T_AVX2 static void q8conv_3x24c4n__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                        int32_t *t, int acc, int32_t np, int32_t nk) {
    if (np <= 8)
        q8conv_3x8c4n__avx2(nq, panel, w, t, acc, nk);
    else if (np <= 16)
        q8conv_3x16c4n__avx2(nq, panel, w, t, acc, nk);
    else
        q8conv_3x24c4n_full__avx2(nq, panel, w, t, acc, nk);
}

#ifndef OQCI_NO_FLOAT
/* The same with the epilogue in registers (np bytes per channel are meaningful), the
 * sums of the earlier K blocks (rows of t, stride TILE_NR) added first when t. */
#define NRQ1(r) i16 ? rq32_i16(u8, a##r##0, z, z, z, &v, lo2w, hi2w)                \
                    : pack32(u8, rq8(a##r##0, &v), z, z, z)
#define NRQ2(r) i16 ? rq32_i16(u8, a##r##0, a##r##1, z, z, &v, lo2w, hi2w)          \
                    : pack32(u8, rq8(a##r##0, &v), rq8(a##r##1, &v), z, z)
#define NRQ3(r) i16 ? rq32_i16(u8, a##r##0, a##r##1, a##r##2, z, &v, lo2w, hi2w)    \
                    : pack32(u8, rq8(a##r##0, &v), rq8(a##r##1, &v), rq8(a##r##2, &v), z)
#define NRQ(r, PACK)                                                                    \
    if (r < nk) {                                                                       \
        RqV v;                                                                          \
        rqv_float(p, pre + r, &v);                                                      \
        store_bytes(out + r * ostride, PACK(r), nbytes);                                \
    }
#define NADDT(r, v) a##r##v = _mm256_add_epi32(a##r##v, LDU256(t + r * TILE_NR + 8 * v));
#define NADDTR(r, V) if (r < nk) { V(NADDT, r) }
#define NBODY(NAME, V, PACK, NBYTES)                                                    \
    T_AVX2 static inline __attribute__((always_inline)) void NAME(                      \
                            int32_t nq, const void *panel, const int8_t *const *w,      \
                            const int32_t *t, const OqciConv *p, int32_t nk,            \
                            const RqPre *pre, uint8_t *out, int64_t ostride, int i16) { \
        const int u8 = p->out_type == OQCI_U8, nbytes = NBYTES;                         \
        const __m256i z = _mm256_setzero_si256();                                       \
        const __m256i lo2w = _mm256_set1_epi16((short)(2 * p->lo));                     \
        const __m256i hi2w = _mm256_set1_epi16((short)(2 * p->hi));                     \
        NSUMS(V)                                                                        \
        if (t) {                                                                        \
            NROWS(NADDTR, V)                                                            \
        }                                                                               \
        NROWS(NRQ, PACK)                                                                \
    }
NBODY(q8conv_3x8c4n_rq__avx2, NV1, NRQ1, 8)
NBODY(q8conv_3x16c4n_rq__avx2, NV2, NRQ2, 16)
NBODY(q8conv_3x24c4n_rq_full__avx2, NV3, NRQ3, 24)
#undef NBODY
#undef NADDTR
#undef NADDT
#undef NRQ
#undef NRQ1
#undef NRQ2
#undef NRQ3

/* Family.ukr_rq_acc (t: the earlier blocks' sums) and, with t NULL, Family.ukr_rq. */
T_AVX2 static void q8conv_3x24c4n_rqt__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                            const int32_t *t, const OqciConv *p, int32_t nk,
                                            const RqPre *pre, uint8_t *out, int64_t ostride,
                                            int32_t np, int i16) {
    i16 = i16 == RQ_I16;
    if (np <= 8)
        q8conv_3x8c4n_rq__avx2(nq, panel, w, t, p, nk, pre, out, ostride, i16);
    else if (np <= 16)
        q8conv_3x16c4n_rq__avx2(nq, panel, w, t, p, nk, pre, out, ostride, i16);
    else
        q8conv_3x24c4n_rq_full__avx2(nq, panel, w, t, p, nk, pre, out, ostride, i16);
}
/* Family.ukr_rq_wide: all nk channels, three at a time (the body picked once). */
T_AVX2 static void q8conv_3x24c4n_rqw__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                            const int32_t *t, const OqciConv *p, int32_t nk,
                                            const RqPre *pre, uint8_t *out, int64_t ostride,
                                            int32_t np, int i16) {
    int32_t kk;
    i16 = i16 == RQ_I16;
#define NLOOP(BODY)                                                                     \
    for (kk = 0; kk < nk; kk += 3)                                                      \
        BODY(nq, panel, w + kk, t ? t + (size_t)kk * TILE_NR : NULL, p,                 \
             nk - kk < 3 ? nk - kk : 3, pre + kk, out + kk * ostride, ostride, i16);
    if (np <= 8)
        NLOOP(q8conv_3x8c4n_rq__avx2)
    else if (np <= 16)
        NLOOP(q8conv_3x16c4n_rq__avx2)
    else
        NLOOP(q8conv_3x24c4n_rq_full__avx2)
#undef NLOOP
}
T_AVX2 static void q8conv_3x24c4n_rq__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                           const OqciConv *p, int32_t nk,
                                           const RqPre *pre, uint8_t *out, int64_t ostride,
                                           int32_t np, int i16) {
    q8conv_3x24c4n_rqt__avx2(nq, panel, w, NULL, p, nk, pre, out, ostride, np, i16);
}
#define UKR_RQ_AVX2N q8conv_3x24c4n_rq__avx2
#define UKR_RQ_ACC_AVX2N q8conv_3x24c4n_rqt__avx2
#define UKR_RQ_WIDE_AVX2N q8conv_3x24c4n_rqw__avx2
#else
#define UKR_RQ_AVX2N NULL
#define UKR_RQ_ACC_AVX2N NULL
#define UKR_RQ_WIDE_AVX2N NULL
#endif
#undef NSTR
#undef NST
#undef NSUMS
#undef NSTEP
#undef NDOT
#undef NLOAD
#undef NDECLR
#undef NDECL
#undef NV3
#undef NV2
#undef NV1
#undef NROWS

/* Family.band_pack: pack_band_body with the byte transposes inlined. */
BAND_PACKERS(avx2n, N_NR, 1, tr4_bs8__avx2, tr4_bu8__avx2)

const Family oqcik_family_avx2n = {
    .isa = OQCI_ISA_AVX2,
    .mr = 3,
    .nr = N_NR,
    .esize = 1,
    .kbq = KBQ(N_NR, 1),
    .flip = OQCI_S8,
    .ukr = q8conv_3x24c4n__avx2,
    .tr4 = {oqcik_tr4_u8_s8__avx2, oqcik_tr4_u8_u8__avx2},
    .gather = oqcik_gather__avx2,
    .store = oqcik_store_tile__avx2,
    .ukr_rq = UKR_RQ_AVX2N,
    .band_pack = {pack_band_s8__avx2n, pack_band_u8__avx2n},
    .ukr_rq_acc = UKR_RQ_ACC_AVX2N,
    .ukr_rq_wide = UKR_RQ_WIDE_AVX2N,
    .grid = GRID_BY_WORK,
    .wsum = oqcik_wsum__avx2,
};

/* ---- q8gemv_4x16__avx2: few pixels, dot products on 16-bit copies ------------------ */

T_AVX2 static int32_t hsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* acc[r] = sum over len (a multiple of 4, <= OQCI_KCHUNK) of a * w[r], r < 4. */
T_AVX2 static void q8gemv_4x16__avx2(const uint8_t *a, int u8, const int8_t *const *w,
                                     int32_t len, int32_t acc[4]) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    int32_t t = 0, r;
    for (; t + 16 <= len; t += 16) {
        __m128i ab = LDU128(a + t);
        __m256i av = u8 ? _mm256_cvtepu8_epi16(ab) : _mm256_cvtepi8_epi16(ab);
#define G(r)                                                                            \
    s##r = _mm256_add_epi32(                                                            \
        s##r, _mm256_madd_epi16(av, _mm256_cvtepi8_epi16(_mm_loadu_si128(               \
                                        (const __m128i *)(const void *)(w[r] + t)))));
        G(0) G(1) G(2) G(3)
#undef G
    }
    acc[0] = hsum8(s0);
    acc[1] = hsum8(s1);
    acc[2] = hsum8(s2);
    acc[3] = hsum8(s3);
    for (; t < len; t += 4)
        for (r = 0; r < 4; r++)
            acc[r] = u8 ? oqci_dp4a_u8s8(acc[r], a + t, w[r] + t)
                        : oqci_dp4a_s8s8(acc[r], (const int8_t *)a + t, w[r] + t);
}

/* Output pixel q of image n, every channel of group g, from its im2col row by dot, four
 * channels at a time. */
static void gemv_pixel(const OqciConv *p, Dot4Fn dot, const uint8_t *row, int64_t n, int32_t g,
                       int64_t q, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int32_t kg = p->out_c / p->group, kk;
    for (kk = 0; kk < kg; kk += 4) {
        int32_t nk = kg - kk < 4 ? kg - kk : 4, r, off;
        int32_t k = g * kg + kk;
        int64_t acc[4] = {0, 0, 0, 0};
        const int8_t *w[4];
        for (off = 0; off < p->kpad; off += OQCI_KCHUNK) {
            int32_t len = p->kpad - off < OQCI_KCHUNK ? p->kpad - off : OQCI_KCHUNK;
            int32_t s[4];
            for (r = 0; r < 4; r++)
                w[r] = p->w + (size_t)(k + (r < nk ? r : nk - 1)) * (size_t)p->kpad + off;
            dot(row + off, p->in_type == OQCI_U8, w, len, s);
            for (r = 0; r < 4; r++)
                acc[r] += s[r];
        }
        for (r = 0; r < nk; r++) {
            int64_t v = acc[r] + (p->bias ? p->bias[k + r] : 0);
            put_q(p, y, (n * p->out_ctotal + p->out_coff + k + r) * pix + q,
                  rq1(p, sat32(v), k + r));
        }
    }
}

/* Each output pixel's im2col row (scratch) against 4 weight rows at a time (z: with
 * AVX-512 VNNI's dot products, oqcik_gemv4__avx512vnni). */
void oqcik_conv_gemv_avx2(const OqciConv *p, const void *x, void *y, void *scratch, int z) {
    int64_t pix = (int64_t)p->out_h * p->out_w, plane = (int64_t)p->in_h * p->in_w, n, q;
    int32_t cg = p->in_c / p->group, g;
    uint8_t *row = (uint8_t *)scratch;
    Dot4Fn dot = q8gemv_4x16__avx2;
#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
    if (z)
        dot = oqcik_gemv4__avx512vnni;
#endif
    (void)z;   /* (builds without AVX-512 VNNI) */
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = (const uint8_t *)x + (n * p->in_c + (int64_t)g * cg) * plane;
            for (q = 0; q < pix; q++) {
                oqcik_im2col(p, xg, q, 1, row);
                gemv_pixel(p, dot, row, n, g, q, y);
            }
        }
}

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
/* Family.pixel of the AVX-512 families (gemm_panel's lone last pixel). */
void oqcik_gemv_pixel__avx512vnni(const OqciConv *p, const uint8_t *row, int64_t n, int32_t g,
                                  int64_t q, void *y) {
    gemv_pixel(p, oqcik_gemv4__avx512vnni, row, n, g, q, y);
}
#endif

#endif /* HAVE_AVX2 */
