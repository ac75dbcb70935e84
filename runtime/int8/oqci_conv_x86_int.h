/* oqci_conv_x86_int.h - internal header of the x86 conv files (oqci_conv_avx2.c,
 * oqci_conv_dwx86.c, oqci_conv_avx512.c; not API): unaligned vector loads and stores,
 * and the vector requantization every x86 epilogue uses, exactly oqci_requant: RqV (one
 * channel's constants, broadcast; rqv_make), rq8 (8 lanes, float or fixed point),
 * pack32 and rq32 (32 outputs as bytes), and with AVX-512 RqFZ, rqf16 (16 lanes, float)
 * and narrow16.  All static inline, most always_inline: they are the inner steps of the
 * microkernels' epilogues, which inline them; rqv_make and rq32 are static and stay
 * out of line (NOINLINE: inlined into a caller, the RqV fields a build leaves unset
 * make gcc 12 warn them maybe uninitialized).  Fixed requantization gives
 * float requantization's bits by definition (oqci_mul_shift), so with a float unit rq8
 * takes the float steps in both modes. */
#ifndef OQCI_CONV_X86_INT_H
#define OQCI_CONV_X86_INT_H

#include "oqci_conv_int.h"

#if HAVE_AVX2

/* (unused: not every x86 file calls them) */
#define NOINLINE __attribute__((noinline, unused))

/* Unaligned vector loads and stores (any pointer type). */
#define LDU256(ptr) _mm256_loadu_si256((const __m256i *)(const void *)(ptr))
#define LDU128(ptr) _mm_loadu_si128((const __m128i *)(const void *)(ptr))
#define STU256(ptr, v) _mm256_storeu_si256((__m256i *)(void *)(ptr), (v))
#define STU128(ptr, v) _mm_storeu_si128((__m128i *)(void *)(ptr), (v))

/* ---- vector requantization (exactly oqci_requant) ---------------------------------- */

/* One output channel's epilogue constants (see bias_may_overflow), broadcast. */
typedef struct RqV {
    int sat;              /* the bias addition may overflow int32: saturate it */
    __m256i add;          /* sat: the correction; else correction + bias (mod 2^32) */
    __m256i bias;         /* sat: the bias */
    __m256 mult2;         /* 2 M (see rq8); fixed mode too, M = m 2^-shift (a float32) */
    __m256 lo2, hi2;      /* 2 lo, 2 hi */
    int32_t m;            /* integer-only builds (fixed mode only): multiplier, */
    int32_t shift, lo, hi; /* shift and clamp (oqci_mul_shift lane by lane) */
} RqV;

/* Channel k's constants: correction corr (mod 2^32), its bias unless bias_done. */
T_AVX2 static NOINLINE void rqv_make(const OqciConv *p, int32_t k, int32_t corr, int bias_done,
                                     RqV *v) {
    const OqciRequant *r = &p->rq;
    int32_t i = r->per_index ? k : 0;
    int64_t b = !bias_done && p->bias ? p->bias[k] : 0;
    v->sat = bias_may_overflow(p, b);
    v->add = _mm256_set1_epi32(v->sat ? corr : (int32_t)((uint32_t)corr + (uint32_t)b));
    v->bias = _mm256_set1_epi32((int32_t)b);
#ifndef OQCI_NO_FLOAT
    v->mult2 = _mm256_set1_ps(rq_mult2(oqci_rq_mult(r, i)));   /* (fixed mode too) */
    v->lo2 = _mm256_set1_ps(2.0f * (float)p->lo);
    v->hi2 = _mm256_set1_ps(2.0f * (float)p->hi);
#else
    v->m = r->m[i];   /* (fixed mode: float mode is refused without float) */
    v->shift = r->shift[i];
    v->lo = p->lo;
    v->hi = p->hi;
#endif
}

/* a + b saturated to int32 (exactly sat32((int64)a + b)). */
T_AVX2 static inline __m256i add_sat32(__m256i a, __m256i b) {
    __m256i s = _mm256_add_epi32(a, b);
    __m256i ovf = _mm256_and_si256(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s));
    __m256i sat = _mm256_xor_si256(_mm256_srai_epi32(a, 31), _mm256_set1_epi32(INT32_MAX));
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(s),
                                                _mm256_castsi256_ps(sat),
                                                _mm256_castsi256_ps(ovf)));
}

/* The epilogue of eight raw sums: int32 results in [lo, hi], exactly oqci_requant of
 * the saturated accumulator. */
T_AVX2 static inline __attribute__((always_inline)) __m256i rq8(__m256i acc, const RqV *v) {
    acc = _mm256_add_epi32(acc, v->add);
    if (v->sat)
        acc = add_sat32(acc, v->bias);
#ifndef OQCI_NO_FLOAT
    {
        /* oqci_round_clamp((float)acc * M, lo, hi), from u = 2 t computed as acc * (2 M):
         * scaling by 2 commutes with the product's rounding (both results are then
         * clamped or round to 0 where it may not: overflow, subnormals).  c = u clamped
         * to [2 lo, 2 hi] (NaN: maxps returns its second operand, 2 lo) is 2 clamp(t), so
         * with m = trunc(c) (|c| <= 510, exact) round-half-away(clamp(t)) is
         * (m + 1) >> 1 for m >= 0 and m >> 1 for m < 0 (arithmetic shifts).  Fixed mode
         * defines the same bits (oqci_mul_shift), so it takes these steps too. */
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), v->mult2);
        __m256i m = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(u, v->lo2), v->hi2));
        __m256i ge0 = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(-1));
        return _mm256_srai_epi32(_mm256_sub_epi32(m, ge0), 1);
    }
#else
    {   /* integer-only builds: oqci_mul_shift lane by lane (a chip without an FPU has no
         * AVX2; this serves the x86 build of such code, as its tests run it) */
        int32_t a[8];
        int j;
        STU256(a, acc);
        for (j = 0; j < 8; j++) {
            int32_t q = oqci_mul_shift(a[j], v->m, v->shift);
            a[j] = q < v->lo ? v->lo : q > v->hi ? v->hi : q;
        }
        return LDU256(a);
    }
#endif
}

/* Four vectors of 8 int32 results in [lo, hi] as 32 out_type bytes in order (r0's 8,
 * then r1's, r2's, r3's).  The values are inside the output type: packing saturates
 * nothing. */
T_AVX2 static inline __attribute__((always_inline)) __m256i pack32(int u8, __m256i r0, __m256i r1,
                                                                   __m256i r2, __m256i r3) {
    __m256i w01 = _mm256_packs_epi32(r0, r1), w23 = _mm256_packs_epi32(r2, r3);
    __m256i b = u8 ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The first n bytes of v (n: 8, 16, 24 or 28, a constant once inlined) to d. */
T_AVX2 static inline __attribute__((always_inline)) void store_bytes(uint8_t *d, __m256i v,
                                                                       int n) {
    __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    if (n == 8) {
        _mm_storel_epi64((__m128i *)(void *)d, lo);
        return;
    }
    STU128(d, lo);
    if (n >= 24)
        _mm_storel_epi64((__m128i *)(void *)(d + 16), hi);
    if (n == 28) {
        int32_t last = _mm_extract_epi32(hi, 2);
        memcpy(d + 24, &last, 4);
    }
}

#ifndef OQCI_NO_FLOAT
/* pack32 of rq8 of four vectors of raw sums a0 .. a3 (one channel's float constants v,
 * as rqv_float sets them: no saturating bias), with the clamp and the rounding step in
 * int16 lanes, 16 per operation: 26 operations for 32 outputs where four rq8 and
 * pack32 take 40 (the AVX2 fused epilogues' RQ_I16 mode).  Exact where rq_mode allows
 * RQ_I16, by rq64's argument (AVX-512, below): |u| < 2^31, so cvttps2dq(u) is trunc(u);
 * the pack to 16 bits saturates monotonically inside a range that holds [2 lo, 2 hi]
 * (u8: [0, 65535], lo >= 0), so the int16 clamp gives clamp(trunc(u), 2 lo, 2 hi) =
 * trunc(clamp(u, 2 lo, 2 hi)), rq8's m; the rounding step is rq8's ((m + 1) >> 1 for
 * m >= 0, as vpavgw(m, 0) for u8; m >> 1 below).  lo2w, hi2w: 2 lo, 2 hi in every
 * 16-bit lane. */
T_AVX2 static inline __attribute__((always_inline)) __m256i
rq32_i16(int u8, __m256i a0, __m256i a1, __m256i a2, __m256i a3, const RqV *v,
         __m256i lo2w, __m256i hi2w) {
#define RQ32_U(a)                                                                      \
    _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, v->add)), v->mult2))
    __m256i t0 = RQ32_U(a0), t1 = RQ32_U(a1), t2 = RQ32_U(a2), t3 = RQ32_U(a3);
#undef RQ32_U
    __m256i w01, w23, b;
    if (u8) {
        const __m256i z = _mm256_setzero_si256();
        w01 = _mm256_min_epu16(_mm256_max_epu16(_mm256_packus_epi32(t0, t1), lo2w), hi2w);
        w23 = _mm256_min_epu16(_mm256_max_epu16(_mm256_packus_epi32(t2, t3), lo2w), hi2w);
        b = _mm256_packus_epi16(_mm256_avg_epu16(w01, z), _mm256_avg_epu16(w23, z));
    } else {
        const __m256i m1s = _mm256_set1_epi16(-1);
        w01 = _mm256_min_epi16(_mm256_max_epi16(_mm256_packs_epi32(t0, t1), lo2w), hi2w);
        w23 = _mm256_min_epi16(_mm256_max_epi16(_mm256_packs_epi32(t2, t3), lo2w), hi2w);
        w01 = _mm256_srai_epi16(_mm256_sub_epi16(w01, _mm256_cmpgt_epi16(w01, m1s)), 1);
        w23 = _mm256_srai_epi16(_mm256_sub_epi16(w23, _mm256_cmpgt_epi16(w23, m1s)), 1);
        b = _mm256_packs_epi16(w01, w23);
    }
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
#endif

/* The outputs of 32 consecutive sums t as out_type bytes, in order (t must have 32
 * readable entries; only the caller's first n outputs are meaningful). */
T_AVX2 static NOINLINE __m256i rq32(const OqciConv *p, const int32_t *t, const RqV *v) {
    return pack32(p->out_type == OQCI_U8, rq8(LDU256(t), v), rq8(LDU256(t + 8), v),
                  rq8(LDU256(t + 16), v), rq8(LDU256(t + 24), v));
}

/* ---- depthwise (oqci_conv_dwx86.c, oqci_conv_dwq.c) ---------------------------------- */

/* A depthwise channel whose sums, bias included, stay below 2^24 in magnitude (|x w| <=
 * 255 * 128 per tap): float sums are exact, and start from the bias. */
static inline int dw_bias_fits(int64_t bias, int32_t taps) {
    return (bias < 0 ? -bias : bias) + (int64_t)taps * 32640 < 16777216;
}

/* The whole-plane kernels' condition on the requantization: float, and every channel's
 * sums of k_h k_w taps exact from its bias (conv_dwf's fused condition for all of them). */
static inline int dw_all_fused(const OqciConv *p) {
    int32_t k;
    if (!RQ_FLOAT_OK)
        return 0;
    for (k = 0; k < p->out_c; k++)
        if (!dw_bias_fits(p->bias ? p->bias[k] : 0, p->k_h * p->k_w))
            return 0;
    return 1;
}

/* ---- AVX-512 float requantization (depthwise kernels, AVX-512 epilogue) ------------- */

#if HAVE_DWZ
/* RqV's float constants, 16 lanes. */
typedef struct RqFZ {
    __m512 mult2, lo2, hi2;
} RqFZ;

T_AVX512VNNI static inline __attribute__((always_inline)) __m512i rqf16(__m512 s, const RqFZ *v) {
    __m512 u = _mm512_mul_ps(s, v->mult2);
    __m512i m = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(u, v->lo2), v->hi2));
    m = _mm512_mask_add_epi32(m, _mm512_cmpgt_epi32_mask(m, _mm512_set1_epi32(-1)), m,
                              _mm512_set1_epi32(1));
    return _mm512_srai_epi32(m, 1);
}

/* Channel k's float requantization constants (rqfz_make's, from p). */
T_AVX512VNNI static inline __attribute__((always_inline)) void rqfz_channel(const OqciConv *p,
                                                                              int32_t k, RqFZ *z) {
    z->mult2 = _mm512_set1_ps(rq_mult2(oqci_rq_mult(&p->rq, k)));
    z->lo2 = _mm512_set1_ps(2.0f * (float)p->lo);
    z->hi2 = _mm512_set1_ps(2.0f * (float)p->hi);
}

/* 16 int32 results inside the output type as its bytes (nothing saturates). */
T_AVX512VNNI static inline __attribute__((always_inline)) __m128i narrow16(__m512i q, int u8) {
    return u8 ? _mm512_cvtusepi32_epi8(q) : _mm512_cvtsepi32_epi8(q);
}

/* The column-wrap masks of a flat stride-1 K x K depthwise plane W wide: mk[v K + j], bit
 * l set when output 16 v + l's tap column j reads column ow + j - p_l inside [0, W). */
T_AVX512VNNI static inline __attribute__((always_inline)) void
dw_wrap_masks(int32_t w_, int32_t p_l, int32_t K, int32_t nv, __mmask16 *mk) {
    const __m512i step = _mm512_set1_epi32(16 % w_), wv = _mm512_set1_epi32(w_);
    __m512i col;   /* each lane's output column */
    int32_t c[16], v, l;
    for (l = 0; l < 16; l++)
        c[l] = l % w_;
    col = _mm512_loadu_si512((const void *)c);
    for (v = 0; v < nv; v++) {
        for (l = 0; l < K; l++)
            mk[v * K + l] = _mm512_cmplt_epu32_mask(
                _mm512_add_epi32(col, _mm512_set1_epi32(l - p_l)), wv);
        col = _mm512_add_epi32(col, step);
        col = _mm512_mask_sub_epi32(col, _mm512_cmpge_epi32_mask(col, wv), col, wv);
    }
}

/* The lanes of q (16 int32 results inside the output type) whose bits are set in m, as
 * out_type bytes at yk + *at, in order (*at advanced past them): 16 bytes stored where
 * they end inside the opix bytes of the plane (those past the valid ones rewritten by
 * the next call), else only the valid ones (a masked store). */
T_AVX512VNNI static inline __attribute__((always_inline)) void
dw_store_valid(__m512i q, __mmask16 m, int u8, uint8_t *yk, int64_t *at, int64_t opix) {
    __m128i o8 = narrow16(_mm512_maskz_compress_epi32(m, q), u8);
    int l = __builtin_popcount(m);
    if (*at + 16 <= opix)
        _mm_storeu_si128((__m128i *)(void *)(yk + *at), o8);
    else
        _mm512_mask_storeu_epi8(yk + *at, ((__mmask64)1 << l) - 1, _mm512_castsi128_si512(o8));
    *at += l;
}

/* rqf16 of 64 int32 sums (v0 .. v3 with multipliers 2 M m0 .. m3) narrowed to out_type
 * bytes in order (v0's 16, v1's, v2's, v3's), with the clamp and the rounding step in
 * int16 lanes, 32 per operation: 22 uops on ports 0 and 5 (u8) where four rqf16 and
 * narrow16 take 40.  Exact where rq_mode allows RQ_I16: then |u| < 2^31 and m = cvttps2dq(u)
 * is trunc(u) (no 0x80000000), the pack to 16 bits saturates monotonically inside
 * [-32768, 32767] (u8: [0, 65535]), which hold [2 lo, 2 hi] (u8: lo >= 0), so the int16
 * clamp gives clamp(trunc(u), 2 lo, 2 hi), which is trunc(clamp(u, 2 lo, 2 hi)), rqf16's
 * m (trunc is monotone and keeps the integers 2 lo, 2 hi).  The rounding step is then
 * rqf16's: (m + 1) >> 1 for m >= 0 (u8: every m, as vpavgw(m, 0)), m >> 1 below.  The
 * byte packs saturate nothing (the results are in [lo, hi]); they leave each 128-bit
 * lane i as the dwords (v0, v1, v2, v3) of pixels 4 i .. 4 i + 3, which one vpermd puts
 * in order.  lo2w, hi2w: 2 lo and 2 hi in every 16-bit lane.  biased (modes RQ_I16B,
 * RQ_I16BN of oqci_conv_int.h, u8 with lo = 0): v0 .. v3 are sums that started from
 * RQ_BIAS and u is one FMA with c0 .. c3 (rq_mode says why that is exact), no
 * clamp at lo = 0 (the pack's floor); nomin (RQ_I16BN): no clamp at hi = 255 either (the
 * byte pack's ceiling): 16 uops instead of 22. */
T_AVX512VNNI static inline __attribute__((always_inline)) __m512i
rq64(__m512i v0, __m512i v1, __m512i v2, __m512i v3, __m512 m0, __m512 m1, __m512 m2,
     __m512 m3, __m512 c0, __m512 c1, __m512 c2, __m512 c3, __m512i lo2w, __m512i hi2w,
     int u8, int biased, int nomin) {
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7,
                                            11, 15);
#define RQ64_U(v, m, c)                                                                 \
    _mm512_cvttps_epi32(biased ? _mm512_fmadd_ps(_mm512_castsi512_ps(v), m, c)          \
                               : _mm512_mul_ps(_mm512_cvtepi32_ps(v), m))
    __m512i t0 = RQ64_U(v0, m0, c0), t1 = RQ64_U(v1, m1, c1);
    __m512i t2 = RQ64_U(v2, m2, c2), t3 = RQ64_U(v3, m3, c3);
#undef RQ64_U
    __m512i w01, w23, b;
    if (u8) {
        const __m512i z = _mm512_setzero_si512();
        w01 = _mm512_packus_epi32(t0, t1);
        w23 = _mm512_packus_epi32(t2, t3);
        if (!biased) {   /* (biased: lo = 0, the pack's own floor) */
            w01 = _mm512_max_epu16(w01, lo2w);
            w23 = _mm512_max_epu16(w23, lo2w);
        }
        if (!nomin) {   /* (nomin: hi = 255, the byte pack's own ceiling) */
            w01 = _mm512_min_epu16(w01, hi2w);
            w23 = _mm512_min_epu16(w23, hi2w);
        }
        w01 = _mm512_avg_epu16(w01, z);
        w23 = _mm512_avg_epu16(w23, z);
        b = _mm512_packus_epi16(w01, w23);
    } else {
        const __m512i m1s = _mm512_set1_epi16(-1);
        w01 = _mm512_packs_epi32(t0, t1);
        w23 = _mm512_packs_epi32(t2, t3);
        w01 = _mm512_min_epi16(_mm512_max_epi16(w01, lo2w), hi2w);
        w23 = _mm512_min_epi16(_mm512_max_epi16(w23, lo2w), hi2w);
        w01 = _mm512_srai_epi16(
            _mm512_mask_sub_epi16(w01, _mm512_cmpgt_epi16_mask(w01, m1s), w01, m1s), 1);
        w23 = _mm512_srai_epi16(
            _mm512_mask_sub_epi16(w23, _mm512_cmpgt_epi16_mask(w23, m1s), w23, m1s), 1);
        b = _mm512_packs_epi16(w01, w23);
    }
    return _mm512_permutexvar_epi32(order, b);
}
#endif /* HAVE_DWZ */

/* ---- AVX-512 panel packing pieces (oqci_conv_avx512.c, oqci_conv_amxt.c) ----------- */

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
/* The quads of pixels 0-15 (lo) and 16-31 (hi) of a run of len <= 32 pixels, their top
 * bits flipped (flip: s8 inputs + 128) or not: exactly its 4 len bytes stored at d. */
T_AVX512VNNI static inline __attribute__((always_inline)) void
store_quads(__m512i lo, __m512i hi, int32_t len, uint8_t *d, int flip) {
    if (flip) {
        lo = _mm512_xor_si512(lo, _mm512_set1_epi8((char)0x80));
        hi = _mm512_xor_si512(hi, _mm512_set1_epi8((char)0x80));
    }
    if (len >= 32) {
        _mm512_storeu_si512((void *)d, lo);
        _mm512_storeu_si512((void *)(d + 64), hi);
    } else if (len >= 16) {
        _mm512_storeu_si512((void *)d, lo);
        _mm512_mask_storeu_epi8(d + 64, ((__mmask64)1 << (4 * (len - 16))) - 1, hi);
    } else {
        _mm512_mask_storeu_epi8(d, ((__mmask64)1 << (4 * len)) - 1, lo);
    }
}

#endif

#if HAVE_VBMI
/* vpermt2b indices for the VBMI transposes (the avx512vbmi tr4, pack_s2__amx in
 * oqci_conv_avx512.c, the thin kernel's packing in oqci_conv_amxt.c): from two
 * rows a (table bytes 0-63) and b (64-127), with pixel px at byte step * px (step 1: a row of
 * the band; 2: an input row read at stride 2), the pairs (a[step px], b[step px]) as
 * 16-bit words, placed so that unpacking the words of two such vectors gives the quads
 * in pixel order: in 128-bit lane L, words 0-3 hold pixels 4 L .. 4 L + 3 (vpunpcklwd:
 * pixels 0-15), words 4-7 pixels 16 + 4 L .. 16 + 4 L + 3 (vpunpckhwd: pixels 16-31). */
#define PAIR_PX(j) ((j) % 16 / 2 < 4 ? 4 * ((j) / 16) + (j) % 16 / 2 : 12 + 4 * ((j) / 16) + (j) % 16 / 2)
#define PAIR_I(st, j) (unsigned char)(64 * ((j) % 2) + (st) * PAIR_PX(j))
#define PAIR_I8(st, j)                                                                  \
    PAIR_I(st, j), PAIR_I(st, j + 1), PAIR_I(st, j + 2), PAIR_I(st, j + 3),            \
        PAIR_I(st, j + 4), PAIR_I(st, j + 5), PAIR_I(st, j + 6), PAIR_I(st, j + 7)
#define PAIR_ROW(st)                                                                    \
    {PAIR_I8(st, 0), PAIR_I8(st, 8), PAIR_I8(st, 16), PAIR_I8(st, 24), PAIR_I8(st, 32),  \
     PAIR_I8(st, 40), PAIR_I8(st, 48), PAIR_I8(st, 56)}
static const unsigned char pair_idx[2][64] __attribute__((unused)) = {PAIR_ROW(1), PAIR_ROW(2)};
#undef PAIR_ROW
#undef PAIR_I8
#undef PAIR_I
#undef PAIR_PX

/* Quads of 32 pixels from four rows a, b, c, e (pixel px at byte step * px; idx:
 * pair_idx[step - 1]): two vpermt2b and two word unpacks, flipped (s8 inputs + 128) or
 * not, stored as store_quads stores them. */
T_VBMI static inline __attribute__((always_inline)) void
tr4_v32v(__m512i a, __m512i b, __m512i c, __m512i e, __m512i idx, int32_t len, uint8_t *d,
         int flip) {
    __m512i ab = _mm512_permutex2var_epi8(a, idx, b), ce = _mm512_permutex2var_epi8(c, idx, e);
    __m512i lo = _mm512_unpacklo_epi16(ab, ce), hi = _mm512_unpackhi_epi16(ab, ce);
    store_quads(lo, hi, len, d, flip);
}

#endif

#endif /* HAVE_AVX2 */

#endif /* OQCI_CONV_X86_INT_H */
