/* oqci_conv_avx512_ukr.c - the AVX-512 VNNI microkernels of the INT8 conv GEMM
 * (oqci_conv_gemm.c): 8 output channels x up to 32 pixels per tile with vpdpbusd, their
 * sums stored (oqcik_q8conv_8x32c4__avx512vnni, Family.ukr) or requantized in registers
 * (the fused epilogues: oqcik_q8conv_8x32c4_rq / _rqt / _rqw__avx512vnni, Family.ukr_rq,
 * ukr_rq_acc, ukr_rq_wide), and the few-pixel dot products of oqcik_conv_gemv_avx2
 * (oqcik_gemv4__avx512vnni).  The families that use them (AVX-512 VNNI, with VBMI, and
 * the AMX family's epilogue) and their packers are oqci_conv_avx512.c's. */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(avx512_ukr) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
/* ---- q8conv_8x32c4__avx512vnni: 8 channels x 32 pixels, u8 panel -------------------
 * Two zmm of 16 pixels per channel; a panel whose pixels fill only the first 16 (the
 * last panel of a 14x14 plane holds 4 of 32) runs an 8x16 body.  With float
 * requantization in one K block, the epilogue runs in registers: 64 sums at a time with
 * the clamp and rounding in int16 lanes (rq64) where rq_mode says that is exact (it
 * takes fewer uops, which thin layers, 16 to 32 input channels, are bound by; u8
 * outputs of ReLU layers take its biased forms, 16 uops instead of 22:
 * the accumulators start from pre[r].add, which then holds RQ_BIAS too), else 16 lanes
 * at a time (rq16: rq8's float steps) and vpmovsdb / vpmovusdb narrow the results
 * (already inside the output type: nothing saturates). */
#define ZROWS(F, V) F(0, V) F(1, V) F(2, V) F(3, V) F(4, V) F(5, V) F(6, V) F(7, V)
#define ZV1(F, r) F(r, 0)
#define ZV2(F, r) F(r, 0) F(r, 1)
#define ZDECL(r, v) __m512i a##r##v = _mm512_setzero_si512();
#define ZDECLR(r, V) V(ZDECL, r)
#define ZLOAD(r, v) __m512i p##v = _mm512_loadu_si512((const void *)(pp + 64 * v));
#define ZDOT(r, v) a##r##v = _mm512_dpbusd_epi32(a##r##v, p##v, wb);
#define ZSTEP(r, V) { __m512i wb = _mm512_set1_epi32(load32(w[r] + 4 * q)); V(ZDOT, r) }
#define ZSUMS(V)                                                                        \
    const uint8_t *pp = (const uint8_t *)panel;                                         \
    int32_t q;                                                                          \
    ZROWS(ZDECLR, V)                                                                    \
    for (q = 0; q < nq; q++, pp += 128) {                                               \
        V(ZLOAD, 0)                                                                     \
        ZROWS(ZSTEP, V)                                                                 \
    }
#define ZST(r, v)                                                                       \
    {                                                                                   \
        void *d_ = t + r * TILE_NR + 16 * v;                                            \
        _mm512_storeu_si512(d_, acc ? _mm512_add_epi32(_mm512_loadu_si512(d_), a##r##v)  \
                                    : a##r##v);                                         \
    }
#define ZSTR(r, V) if (r < nk) { V(ZST, r) }
#define ZBODY(NAME, V)                                                                  \
    T_AVX512VNNI static void NAME(int32_t nq, const void *panel, const int8_t *const *w, \
                                  int32_t *t, int acc, int32_t nk) {                    \
        ZSUMS(V)                                                                        \
        ZROWS(ZSTR, V)                                                                  \
    }
ZBODY(q8conv_8x16c4__avx512vnni, ZV1)
ZBODY(q8conv_8x32c4_full__avx512vnni, ZV2)
#undef ZBODY

/* Panels of at most 8 pixels, or of 17 to 24 (LEAD 1: pixels 0-15 as ZV1 does, then 8
 * more): the 8 pixels HJ .. HJ + 7 of two rows share a vector, row 2 i in lanes 0-7 and
 * row 2 i + 1 in lanes 8-15 (hI: rows 2 I and 2 I + 1), the quad's 32 bytes of those
 * pixels loaded into both halves and the two rows' broadcast weights blended: 4
 * vpdpbusd per quad where a 16-pixel vector per row takes 8.  A 7x7 plane's 49 pixels
 * cost 32 + 24 instead of 64, a 14x14 one's 196 cost 192 + 8 instead of 208. */
#define HJ(LEAD) ((LEAD) ? 16 : 0)
#define LEAD_0(...)
#define LEAD_1(...) __VA_ARGS__
#define HPAIRS(F, A) F(0, 0, 1, A) F(1, 2, 3, A) F(2, 4, 5, A) F(3, 6, 7, A)
#define HSTEP(i, r0, r1, LEAD)                                                          \
    {                                                                                   \
        __m512i w0_ = _mm512_set1_epi32(load32(w[r0] + 4 * q));                         \
        __m512i w1_ = _mm512_set1_epi32(load32(w[r1] + 4 * q));                         \
        LEAD_##LEAD(a##r0##0 = _mm512_dpbusd_epi32(a##r0##0, p0, w0_);                  \
                    a##r1##0 = _mm512_dpbusd_epi32(a##r1##0, p0, w1_);)                 \
        h##i = _mm512_dpbusd_epi32(h##i, ph, _mm512_mask_blend_epi32(0xFF00, w0_, w1_)); \
    }
#define HSUMS(LEAD)                                                                     \
    const uint8_t *pp = (const uint8_t *)panel;                                         \
    int32_t q;                                                                          \
    for (q = 0; q < nq; q++, pp += 128) {                                               \
        LEAD_##LEAD(__m512i p0 = _mm512_loadu_si512((const void *)pp);)                 \
        __m512i ph = _mm512_broadcast_i64x4(LDU256(pp + 4 * HJ(LEAD)));                 \
        HPAIRS(HSTEP, LEAD)                                                             \
    }
#define HDECL0(i, r0, r1, LEAD) __m512i h##i = _mm512_setzero_si512();
#define HST1(r, v, LEAD)                                                                \
    if (r < nk) {                                                                       \
        int32_t *d_ = t + r * TILE_NR + HJ(LEAD);                                       \
        STU256(d_, acc ? _mm256_add_epi32(LDU256(d_), v) : v);                          \
    }
#define HST(i, r0, r1, LEAD)                                                            \
    HST1(r0, _mm512_castsi512_si256(h##i), LEAD)                                        \
    HST1(r1, _mm512_extracti64x4_epi64(h##i, 1), LEAD)
#define HBODY(NAME, LEAD)                                                               \
    T_AVX512VNNI static void NAME(int32_t nq, const void *panel, const int8_t *const *w, \
                                  int32_t *t, int acc, int32_t nk) {                    \
        LEAD_##LEAD(ZROWS(ZDECLR, ZV1))                                                 \
        HPAIRS(HDECL0, LEAD)                                                            \
        HSUMS(LEAD)                                                                     \
        LEAD_##LEAD(ZROWS(ZSTR, ZV1))                                                   \
        HPAIRS(HST, LEAD)                                                               \
    }
HBODY(q8conv_8x8c4__avx512vnni, 0)
HBODY(q8conv_8x24c4__avx512vnni, 1)
#undef HBODY
#undef HST
#undef HST1
#undef HDECL0

T_AVX512VNNI void oqcik_q8conv_8x32c4__avx512vnni(int32_t nq, const void *panel,
                                                  const int8_t *const *w, int32_t *t, int acc,
                                                  int32_t np, int32_t nk) {
    if (np <= 8)
        q8conv_8x8c4__avx512vnni(nq, panel, w, t, acc, nk);
    else if (np <= 16)
        q8conv_8x16c4__avx512vnni(nq, panel, w, t, acc, nk);
    else if (np <= 24)
        q8conv_8x24c4__avx512vnni(nq, panel, w, t, acc, nk);
    else
        q8conv_8x32c4_full__avx512vnni(nq, panel, w, t, acc, nk);
}

#ifndef OQCI_NO_FLOAT
/* rq8's float steps (rqf16, the depthwise kernels' on float sums) on 16 sums that hold
 * the correction and bias already (no bias saturation: the fused condition; the
 * accumulators start from pre[r].add, which is the same sum mod 2^32, as vpdpbusd
 * wraps), narrowed to out_type bytes. */
T_AVX512VNNI static inline __attribute__((always_inline)) __m128i rq16(__m512i acc,
                                                                        const RqFZ *z, int u8) {
    return narrow16(rqf16(_mm512_cvtepi32_ps(acc), z), u8);
}

/* Bodies per pixel count (V) and output type (U8); the sums start from the correction
 * and bias (rows past nk repeat row 0's), plus, for the last of several K blocks, the
 * sums so far in t (else NULL). */
#undef ZDECL
#define ZADD(r) _mm512_set1_epi32(pre[r < nk ? r : 0].add)
#define ZT(r, v) _mm512_loadu_si512((const void *)(t + r * TILE_NR + 16 * v))
#define ZDECL(r, v) __m512i a##r##v = t ? _mm512_add_epi32(ZT(r, v), ZADD(r)) : ZADD(r);
#define ZOUT(r, v) STU128(out + r * ostride + 16 * v, rq16(a##r##v, &z_, U8_));
#define ZRQ(r, V)                                                                       \
    if (r < nk) {                                                                       \
        const RqFZ z_ = {_mm512_set1_ps(pre[r].m2), lo2, hi2};                          \
        V(ZOUT, r)                                                                      \
    }
/* i16 (rq64): 32-pixel rows in pairs, 16-pixel rows in fours (rows past nk computed
 * with row 0's multiplier, not stored) */
#define ZM(r) _mm512_set1_ps(pre[r < nk ? r : 0].m2)
#define ZC(r) (B_ ? _mm512_set1_ps(pre[r < nk ? r : 0].c2) : _mm512_setzero_ps())
#define ZRQ64(A, B, C, D, r0, r1, r2, r3)                                               \
    rq64(A, B, C, D, ZM(r0), ZM(r1), ZM(r2), ZM(r3), ZC(r0), ZC(r1), ZC(r2), ZC(r3), lo2w, \
         hi2w, U8_, B_, N_)
#define ZP2(r, s)                                                                       \
    if (r < nk) {                                                                       \
        __m512i b_ = ZRQ64(a##r##0, a##r##1, a##s##0, a##s##1, r, r, s, s);             \
        STU256(out + r * ostride, _mm512_castsi512_si256(b_));                          \
        if (s < nk)                                                                     \
            STU256(out + s * ostride, _mm512_extracti64x4_epi64(b_, 1));                \
    }
#define ZP1(r0, r1, r2, r3)                                                             \
    if (r0 < nk) {                                                                      \
        __m512i b_ = ZRQ64(a##r0##0, a##r1##0, a##r2##0, a##r3##0, r0, r1, r2, r3);     \
        STU128(out + r0 * ostride, _mm512_castsi512_si128(b_));                         \
        if (r1 < nk)                                                                    \
            STU128(out + r1 * ostride, _mm512_extracti32x4_epi32(b_, 1));               \
        if (r2 < nk)                                                                    \
            STU128(out + r2 * ostride, _mm512_extracti32x4_epi32(b_, 2));               \
        if (r3 < nk)                                                                    \
            STU128(out + r3 * ostride, _mm512_extracti32x4_epi32(b_, 3));               \
    }
#define Z64_ZV1 ZP1(0, 1, 2, 3) ZP1(4, 5, 6, 7)
#define Z64_ZV2 ZP2(0, 1) ZP2(2, 3) ZP2(4, 5) ZP2(6, 7)
#define ZBODY(NAME, V, U8)                                                              \
    T_AVX512VNNI static inline __attribute__((always_inline)) void NAME(                \
        int32_t nq, const void *panel, const int8_t *const *w,                          \
                                  const int32_t *t, int32_t nk, const RqPre *pre,       \
                                  uint8_t *out, int64_t ostride, __m512 lo2, __m512 hi2, \
                                  int i16, __m512i lo2w, __m512i hi2w) {                \
        enum { U8_ = U8 };                                                              \
        ZSUMS(V)                                                                        \
        if (U8_ && i16 == RQ_I16BN) {   /* (sums biased by RQ_BIAS, no clamp at hi) */   \
            enum { B_ = 1, N_ = 1 };                                                    \
            Z64_##V                                                                     \
        } else if (U8_ && i16 == RQ_I16B) {                                             \
            enum { B_ = 1, N_ = 0 };                                                    \
            Z64_##V                                                                     \
        } else if (i16) {                                                               \
            enum { B_ = 0, N_ = 0 };                                                    \
            Z64_##V                                                                     \
        } else {                                                                        \
            ZROWS(ZRQ, V)                                                               \
        }                                                                               \
    }
ZBODY(q8conv_8x16c4_rq_s8__avx512vnni, ZV1, 0)
ZBODY(q8conv_8x16c4_rq_u8__avx512vnni, ZV1, 1)
ZBODY(q8conv_8x32c4_rq_s8__avx512vnni, ZV2, 0)
ZBODY(q8conv_8x32c4_rq_u8__avx512vnni, ZV2, 1)
#undef ZBODY
/* The paired bodies (HSUMS) with the epilogue: hI's lanes 0-7 are row 2 I's, 8-15 row
 * 2 I + 1's, so their multipliers and offsets are blended the same way; each row's 8
 * bytes are stored from its half of a 128-bit lane (rq64's order: v0's 16, v1's, ...). */
#define HADD(r0, r1) _mm512_mask_blend_epi32(0xFF00, ZADD(r0), ZADD(r1))
#define HT(r0, r1, LEAD)                                                                \
    _mm512_inserti64x4(_mm512_castsi256_si512(LDU256(t + r0 * TILE_NR + HJ(LEAD))),     \
                       LDU256(t + r1 * TILE_NR + HJ(LEAD)), 1)
#define HDECLR(i, r0, r1, LEAD)                                                         \
    __m512i h##i = t ? _mm512_add_epi32(HT(r0, r1, LEAD), HADD(r0, r1)) : HADD(r0, r1);
#define HM(r0, r1) _mm512_mask_blend_ps(0xFF00, ZM(r0), ZM(r1))
#define HC(r0, r1) _mm512_mask_blend_ps(0xFF00, ZC(r0), ZC(r1))
#define HSTQ(x, r, LEAD)                                                                \
    if (r < nk)                                                                         \
        _mm_storel_epi64((__m128i *)(void *)(out + r * ostride + HJ(LEAD)), x);
#define HPUT(r0, r1, X, LEAD)                                                           \
    {                                                                                   \
        __m128i x_ = X;                                                                 \
        HSTQ(x_, r0, LEAD)                                                              \
        HSTQ(_mm_unpackhi_epi64(x_, x_), r1, LEAD)                                      \
    }
#define H64(LEAD)                                                                       \
    {                                                                                   \
        __m512i b_ = rq64(h0, h1, h2, h3, HM(0, 1), HM(2, 3), HM(4, 5), HM(6, 7), HC(0, 1), \
                          HC(2, 3), HC(4, 5), HC(6, 7), lo2w, hi2w, U8_, B_, N_);       \
        HPUT(0, 1, _mm512_castsi512_si128(b_), LEAD)                                    \
        HPUT(2, 3, _mm512_extracti32x4_epi32(b_, 1), LEAD)                              \
        HPUT(4, 5, _mm512_extracti32x4_epi32(b_, 2), LEAD)                              \
        HPUT(6, 7, _mm512_extracti32x4_epi32(b_, 3), LEAD)                              \
    }
#define HRQ(i, r0, r1, LEAD)                                                            \
    if (r0 < nk) {                                                                      \
        const RqFZ z_ = {_mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(pre[r0].m2),        \
                                              _mm512_set1_ps(pre[r1 < nk ? r1 : r0].m2)), \
                         lo2, hi2};                                                     \
        HPUT(r0, r1, rq16(h##i, &z_, U8_), LEAD)                                        \
    }
#define HBODY(NAME, LEAD, U8)                                                           \
    T_AVX512VNNI static inline __attribute__((always_inline)) void NAME(                \
        int32_t nq, const void *panel, const int8_t *const *w, const int32_t *t,        \
        int32_t nk, const RqPre *pre, uint8_t *out, int64_t ostride, __m512 lo2,         \
        __m512 hi2, int i16, __m512i lo2w, __m512i hi2w) {                              \
        enum { U8_ = U8 };                                                              \
        LEAD_##LEAD(ZROWS(ZDECLR, ZV1))                                                 \
        HPAIRS(HDECLR, LEAD)                                                            \
        HSUMS(LEAD)                                                                     \
        if (U8_ && i16 == RQ_I16BN) {   /* (as ZBODY's modes) */                        \
            enum { B_ = 1, N_ = 1 };                                                    \
            LEAD_##LEAD(Z64_ZV1) H64(LEAD)                                              \
        } else if (U8_ && i16 == RQ_I16B) {                                             \
            enum { B_ = 1, N_ = 0 };                                                    \
            LEAD_##LEAD(Z64_ZV1) H64(LEAD)                                              \
        } else if (i16) {                                                               \
            enum { B_ = 0, N_ = 0 };                                                    \
            LEAD_##LEAD(Z64_ZV1) H64(LEAD)                                              \
        } else {                                                                        \
            LEAD_##LEAD(ZROWS(ZRQ, ZV1))                                                \
            HPAIRS(HRQ, LEAD)                                                           \
        }                                                                               \
    }
HBODY(q8conv_8x8c4_rq_s8__avx512vnni, 0, 0)
HBODY(q8conv_8x8c4_rq_u8__avx512vnni, 0, 1)
HBODY(q8conv_8x24c4_rq_s8__avx512vnni, 1, 0)
HBODY(q8conv_8x24c4_rq_u8__avx512vnni, 1, 1)
#undef HBODY
#undef HRQ
#undef H64
#undef HPUT
#undef HSTQ
#undef HC
#undef HM
#undef HDECLR
#undef HT
#undef HADD
#undef HSUMS
#undef HSTEP
#undef HPAIRS
#undef LEAD_1
#undef LEAD_0
#undef HJ
#undef ZDECL
#define ZDECL(r, v) __m512i a##r##v = _mm512_setzero_si512();
#undef Z64_ZV2
#undef Z64_ZV1
#undef ZP1
#undef ZP2
#undef ZRQ64
#undef ZC
#undef ZM
#undef ZRQ
#undef ZOUT
#undef ZADD
#undef ZT

/* The epilogue's clamp bounds (float, and int16 for rq64) and output type, from p. */
#define ZCONSTS                                                                         \
    const __m512 lo2 = _mm512_set1_ps(2.0f * (float)p->lo);                             \
    const __m512 hi2 = _mm512_set1_ps(2.0f * (float)p->hi);                             \
    const __m512i lo2w = _mm512_set1_epi16((short)(2 * p->lo));                         \
    const __m512i hi2w = _mm512_set1_epi16((short)(2 * p->hi));                         \
    int u8 = p->out_type == OQCI_U8;

T_AVX512VNNI void oqcik_q8conv_8x32c4_rqt__avx512vnni(int32_t nq, const void *panel,
                                                      const int8_t *const *w, const int32_t *t,
                                                      const OqciConv *p, int32_t nk,
                                                      const RqPre *pre, uint8_t *out,
                                                      int64_t ostride, int32_t np, int i16) {
    ZCONSTS
#define ZPICK(CALL)                                                                     \
    if (np <= 8 && u8)                                                                  \
        CALL(q8conv_8x8c4_rq_u8__avx512vnni)                                            \
    else if (np <= 8)                                                                   \
        CALL(q8conv_8x8c4_rq_s8__avx512vnni)                                            \
    else if (np <= 16 && u8)                                                            \
        CALL(q8conv_8x16c4_rq_u8__avx512vnni)                                           \
    else if (np <= 16)                                                                  \
        CALL(q8conv_8x16c4_rq_s8__avx512vnni)                                           \
    else if (np <= 24 && u8)                                                            \
        CALL(q8conv_8x24c4_rq_u8__avx512vnni)                                           \
    else if (np <= 24)                                                                  \
        CALL(q8conv_8x24c4_rq_s8__avx512vnni)                                           \
    else if (u8)                                                                        \
        CALL(q8conv_8x32c4_rq_u8__avx512vnni)                                           \
    else                                                                                \
        CALL(q8conv_8x32c4_rq_s8__avx512vnni)
#define ZONE(KERN) KERN(nq, panel, w, t, nk, pre, out, ostride, lo2, hi2, i16, lo2w, hi2w);
    ZPICK(ZONE)
#undef ZONE
}

/* Family.ukr_rq_wide: any nk, tiles of 8 rows in turn.  Its own function, so that the
 * loop over tiles does not change the compiler's register allocation of the bodies'
 * sums loop in q8conv_8x32c4_rqt__avx512vnni.  The bodies are always_inline: called
 * from two functions, they would otherwise stay out of line, a call per tile. */
T_AVX512VNNI void oqcik_q8conv_8x32c4_rqw__avx512vnni(int32_t nq, const void *panel,
                                                      const int8_t *const *w, const int32_t *t,
                                                      const OqciConv *p, int32_t nk,
                                                      const RqPre *pre, uint8_t *out,
                                                      int64_t ostride, int32_t np, int i16) {
    ZCONSTS
    int32_t kk;
#define ZLOOP(KERN)                                                                     \
    for (kk = 0; kk < nk; kk += 8)                                                      \
        KERN(nq, panel, w ? w + kk : NULL, t ? t + (size_t)kk * TILE_NR : NULL,         \
             nk - kk < 8 ? nk - kk : 8, pre + kk, out + kk * ostride, ostride, lo2, hi2, i16, \
             lo2w, hi2w);
    ZPICK(ZLOOP)
#undef ZLOOP
}
#undef ZPICK
#undef ZCONSTS

T_AVX512VNNI void oqcik_q8conv_8x32c4_rq__avx512vnni(int32_t nq, const void *panel,
                                                     const int8_t *const *w, const OqciConv *p,
                                                     int32_t nk, const RqPre *pre, uint8_t *out,
                                                     int64_t ostride, int32_t np, int i16) {
    oqcik_q8conv_8x32c4_rqt__avx512vnni(nq, panel, w, NULL, p, nk, pre, out, ostride, np, i16);
}
#endif /* OQCI_NO_FLOAT */
#undef ZSTR
#undef ZST
#undef ZSUMS
#undef ZSTEP
#undef ZDOT
#undef ZLOAD
#undef ZDECLR
#undef ZDECL
#undef ZV2
#undef ZV1
#undef ZROWS

/* ---- oqcik_gemv4__avx512vnni: oqcik_conv_gemv_avx2's dot products (few pixels) -------
 * (and so a panel's lone last pixel: oqcik_gemv_pixel__avx512vnni, gemm_panel).
 * The fully connected layers are bound by reading their weights once: 64 weight bytes
 * per row per vpdpbusd (the AVX2 kernel's 16-bit copies take 4 operations per 16), the
 * last partial 64 by masked loads (zero weights: nothing added).  s8 inputs go in as
 * a + 128 (u8) and 128 sum w[r] is subtracted, the sum made by a second vpdpbusd against
 * bytes of 1.  Exact: every partial sum is one of at most len <= OQCI_KCHUNK products of
 * magnitude <= 255 x 128, as in the int32 sums oqci.h allows. */
T_AVX512VNNI static inline __attribute__((always_inline)) void
gemv4_body(const uint8_t *a, int u8, const int8_t *const *w, int32_t len, int32_t acc[4]) {
    const __m512i fl = _mm512_set1_epi8((char)0x80), one = _mm512_set1_epi8(1);
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0, c0 = s0, c1 = s0,
            c2 = s0, c3 = s0;
    int32_t t;
    for (t = 0; t < len; t += 64) {
        __mmask64 m = len - t >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (len - t)) - 1;
        __m512i av = _mm512_maskz_loadu_epi8(m, a + t);
        if (!u8)
            av = _mm512_xor_si512(av, fl);
#define G(r)                                                                            \
    {                                                                                   \
        __m512i wv = _mm512_maskz_loadu_epi8(m, w[r] + t);                              \
        s##r = _mm512_dpbusd_epi32(s##r, av, wv);                                       \
        if (!u8)                                                                        \
            c##r = _mm512_dpbusd_epi32(c##r, one, wv);                                  \
    }
        G(0) G(1) G(2) G(3)
#undef G
    }
#define ACC(r)                                                                          \
    acc[r] = (int32_t)((int64_t)_mm512_reduce_add_epi32(s##r) -                         \
                       128 * (int64_t)_mm512_reduce_add_epi32(c##r));
    ACC(0) ACC(1) ACC(2) ACC(3)
#undef ACC
}

T_AVX512VNNI void oqcik_gemv4__avx512vnni(const uint8_t *a, int u8, const int8_t *const *w,
                                          int32_t len, int32_t acc[4]) {
    if (u8)
        gemv4_body(a, 1, w, len, acc);
    else
        gemv4_body(a, 0, w, len, acc);
}

#endif /* HAVE_AVX512VNNI && !OQCI_EMU_VNNI */
