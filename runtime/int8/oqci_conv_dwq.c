/* oqci_conv_dwq.c - the avx512vbmi and AMX families' depthwise kernel of the INT8 conv,
 * oqcik_conv_dw3q__avx512vbmi: 3x3 depthwise at stride 1 or 2 on byte planes with vpermb
 * (AVX-512 VBMI, which every AMX CPU has) and vpdpbusd.  The other x86 depthwise kernels,
 * on float planes, are oqci_conv_dwx86.c's; integer-only builds (OQCI_NO_FLOAT) have
 * neither (their depthwise convs go through the GEMM). */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(dwq) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

/* conv_dw3q's zero-padded byte plane: the image at (p_t, p_l), rows of *bs bytes (64
 * bytes readable from every vector's first column), *rows rows (every output row's
 * three).  Its bytes, 0 unless a 3x3 kernel at stride 1 or 2.  In every build (the
 * scratch size, oqci_conv.c's dw_scratch, needs it); a function, not a static inline of
 * oqci_conv_int.h, so that it does not change the compiler's layout of the kernel's
 * loops. */
int64_t oqcik_dw3q_geo(const OqciConv *p, int32_t *bs, int32_t *rows) {
    int64_t cols, r;
    if (p->k_h != 3 || p->k_w != 3 || p->s_h != p->s_w || p->s_w > 2 || p->d_h != 1 ||
        p->d_w != 1 || p->p_t > 2 || p->p_l > 2 || p->in_w > 4096 || p->out_w > 4096)
        return 0;
    cols = (int64_t)p->in_w + p->p_l;
    r = (int64_t)(round_up(p->out_w, 16) - 16) * p->s_w + 64;
    *bs = (int32_t)round_up(cols > r ? cols : r, 64);
    r = (int64_t)(p->out_h - 1) * p->s_h + 3;
    *rows = (int32_t)((int64_t)p->in_h + p->p_t > r ? (int64_t)p->in_h + p->p_t : r);
    return (int64_t)*bs * *rows;
}

#if HAVE_VBMI && !defined(OQCI_NO_FLOAT)
/* Each input channel is copied once into a zero-padded byte plane (oqcik_dw3q_geo; s8
 * inputs as x + 128 with padding 128, and -128 sum w joins the bias: the sums are those of
 * u8 x s8 pairs, exact).  Output row oh, columns ow .. ow + 15: per kernel row i one
 * 64-byte load of plane row oh s + i at column ow s, vpermb (AVX-512 VBMI, which every
 * AMX CPU has) gathers lane l's quad (columns (ow + l) s + j, j = 0 .. 2, and a zero),
 * and vpdpbusd adds its dot product with (w[i][0], w[i][1], w[i][2], 0): 3 loads, 3
 * vpermb and 3 vpdpbusd per 16 outputs instead of the float planes' 9 loads and 9 FMAs,
 * on a plane a quarter of their size.  Two output rows share the vpermb of the rows
 * they both read at stride 1 (4 input rows for 2 output rows).  The sums start from
 * bias + correction; the fused float requantization (rq16, as the GEMM's) on int32 sums
 * below 2^24 (dw_all_fused) gives oqci_requant's bits.  The plane's padding is written
 * once per call, each channel its interior rows. */

/* Whether channel k's sums (|sum| <= 9 x 255 x 128 + |bias| + 128 x 9 x 128: the dot
 * product, the bias, the s8 inputs' correction) meet the int16 epilogue's condition
 * (rq_i16_chan, rq_mode's RQ_I16). */
static int dw3q_i16_ok(const OqciConv *p, int32_t k) {
    int64_t b = p->bias ? p->bias[k] : 0;
    return rq_i16_chan(9.0 * 32640.0 + (double)(b < 0 ? -b : b) + 147456.0,
                       rq_mult2(p->rq.mult[p->rq.per_index ? k : 0]));
}

/* Channel k of oqcik_conv_dw3q__avx512vbmi with its epilogue in int16 lanes (rq64, as
 * the GEMM's RQ_I16 mode: dw3q_i16_ok): four output rows at a time, 16 columns per step,
 * the four rows' sums requantized together (22 vector operations for 64 outputs where
 * four rq16 and narrow16 take 40), each row's 16 bytes stored from its 128-bit lane
 * (the last, partial vector of a row by a masked store).  Consecutive rows share the
 * vpermb of the input rows they both read (6 for 4 output rows at stride 1, 9 at stride 2); in the last group the rows
 * past out_h are computed from input rows clamped to the last one the plane has (not
 * stored).  S: the stride, a constant once inlined (so the row vectors stay in
 * registers). */
T_VBMI static inline __attribute__((always_inline)) void
dw3q_rows4(const OqciConv *p, const uint8_t *b, int32_t bs, int32_t S, int32_t nvec,
           __mmask16 tmask, __m512i idx, const __m512i *wq, __m512i addv, int32_t k, int u8out,
           uint8_t *yk) {
    const __mmask64 qm = (__mmask64)0x7777777777777777ull;
    const __m512 m2 = _mm512_set1_ps(rq_mult2(p->rq.mult[p->rq.per_index ? k : 0]));
    const __m512 zf = _mm512_setzero_ps();
    const __m512i lo2w = _mm512_set1_epi16((short)(2 * p->lo));
    const __m512i hi2w = _mm512_set1_epi16((short)(2 * p->hi));
    const int64_t last = (int64_t)(p->out_h - 1) * S + 2;   /* the plane's last row read */
    int32_t oh, v, i;
    for (oh = 0; oh < p->out_h; oh += 4) {
        int32_t nr = p->out_h - oh < 4 ? p->out_h - oh : 4;
        const uint8_t *in[9] = {0};
        for (i = 0; i < 3 + 3 * S; i++)
            in[i] = b + ((int64_t)oh * S + i < last ? (int64_t)oh * S + i : last) * bs;
        for (v = 0; v < nvec; v++) {
            int32_t c = 16 * v * S;
            __m512i a0, a1, a2, a3, r;
            uint8_t *yo = yk + (int64_t)oh * p->out_w + 16 * v;
#define DWQ(i) _mm512_maskz_permutexvar_epi8(qm, idx, _mm512_loadu_si512((const void *)(in[i] + c)))
#define DOT3(qa, qb, qc)                                                                 \
    _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(addv, qa, wq[0]), qb, wq[1]), \
                        qc, wq[2])
            if (S == 1) {
                __m512i q0 = DWQ(0), q1 = DWQ(1), q2 = DWQ(2), q3 = DWQ(3), q4 = DWQ(4),
                        q5 = DWQ(5);
                a0 = DOT3(q0, q1, q2);
                a1 = DOT3(q1, q2, q3);
                a2 = DOT3(q2, q3, q4);
                a3 = DOT3(q3, q4, q5);
            } else {
                __m512i q0 = DWQ(0), q1 = DWQ(1), q2 = DWQ(2), q3 = DWQ(3), q4 = DWQ(4),
                        q5 = DWQ(5), q6 = DWQ(6), q7 = DWQ(7), q8 = DWQ(8);
                a0 = DOT3(q0, q1, q2);
                a1 = DOT3(q2, q3, q4);
                a2 = DOT3(q4, q5, q6);
                a3 = DOT3(q6, q7, q8);
            }
#undef DOT3
#undef DWQ
            r = rq64(a0, a1, a2, a3, m2, m2, m2, m2, zf, zf, zf, zf, lo2w, hi2w, u8out, 0, 0);
            /* row oh + j's 16 bytes from lane j (the last vector: its tail bytes) */
#define DWQ_LANE(j)                                                                     \
    if (j < nr) {                                                                       \
        __m128i l_ = _mm512_extracti32x4_epi32(r, j);                                   \
        if (v < nvec - 1)                                                               \
            _mm_storeu_si128((__m128i *)(void *)(yo + j * p->out_w), l_);               \
        else                                                                            \
            _mm512_mask_storeu_epi8(yo + j * p->out_w, (__mmask64)tmask,                \
                                    _mm512_castsi128_si512(l_));                        \
    }
            DWQ_LANE(0)
            DWQ_LANE(1)
            DWQ_LANE(2)
            DWQ_LANE(3)
#undef DWQ_LANE
        }
    }
}

/* (Rows narrower than 12 outputs leave most of each 16-lane vector idle: the flat float
 * kernels, which run a small plane as one array, fill their vectors there.) */
int oqcik_dw3q_ok(const OqciConv *p) {
    int32_t bs, rows;
    return p->out_w >= 12 && oqcik_dw3q_geo(p, &bs, &rows) > 0 && dw_all_fused(p);
}

T_VBMI void oqcik_conv_dw3q__avx512vbmi(const OqciConv *p, const void *x, void *y,
                                        void *scratch) {
    int32_t bs, rows, r, v, s = p->s_w, kg = p->out_c / p->group;
    const int64_t hw = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const int32_t nvec = (p->out_w + 15) / 16, tail = p->out_w - 16 * (nvec - 1);
    const __mmask16 tmask = (__mmask16)((1u << tail) - 1);
    const __mmask64 qm = (__mmask64)0x7777777777777777ull, inm = ((__mmask64)1 << (p->in_w % 64)) - 1;
    const __m512i flip = _mm512_set1_epi8(u8in ? 0 : (char)0x80);
    uint8_t *b = align_up(scratch);
    uint8_t idxb[64];
    __m512i idx;
    int64_t n;
    int32_t g;
    oqcik_dw3q_geo(p, &bs, &rows);
    for (v = 0; v < 64; v++)   /* lane l = v / 4, byte j = v % 4: column l s + j */
        idxb[v] = (uint8_t)(v % 4 < 3 ? (v / 4) * s + v % 4 : 0);
    idx = _mm512_loadu_si512((const void *)idxb);
    memset(b, u8in ? 0 : 0x80, (size_t)bs * (size_t)rows);   /* the padding, once */
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * hw;
            int32_t kk;
            for (r = 0; r < p->in_h; r++) {   /* the interior rows (x ^ 0x80 for s8) */
                const uint8_t *src = xs + (int64_t)r * p->in_w;
                uint8_t *dst = b + (int64_t)(r + p->p_t) * bs + p->p_l;
                int32_t c = 0;
                for (; c + 64 <= p->in_w; c += 64)
                    _mm512_storeu_si512((void *)(dst + c),
                                        _mm512_xor_si512(_mm512_loadu_si512((const void *)(src + c)), flip));
                if (c < p->in_w)
                    _mm512_mask_storeu_epi8(dst + c, inm,
                                            _mm512_xor_si512(_mm512_maskz_loadu_epi8(inm, src + c), flip));
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, i;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * opix;
                __m512i wq[3], addv;
                RqFZ z;
                int64_t add = p->bias ? p->bias[k] : 0, sw = 0;
                for (i = 0; i < 3; i++) {
                    wq[i] = _mm512_set1_epi32((int32_t)((uint32_t)(uint8_t)w[3 * i] |
                                                        (uint32_t)(uint8_t)w[3 * i + 1] << 8 |
                                                        (uint32_t)(uint8_t)w[3 * i + 2] << 16));
                    sw += w[3 * i] + w[3 * i + 1] + w[3 * i + 2];
                }
                addv = _mm512_set1_epi32((int32_t)(add - (u8in ? 0 : 128 * sw)));
                rqfz_channel(p, k, &z);
#define DWQ_ROW(rp, c) _mm512_maskz_permutexvar_epi8(qm, idx, _mm512_loadu_si512((const void *)((rp) + (c))))
#define DWQ_STORE(dst, acc, last)                                                       \
    {                                                                                   \
        __m512i q_ = rqf16(_mm512_cvtepi32_ps(acc), &z);                                \
        if (last)                                                                       \
            _mm512_mask_storeu_epi8(dst, (__mmask64)tmask, _mm512_castsi128_si512(narrow16(q_, u8out))); \
        else                                                                            \
            _mm_storeu_si128((__m128i *)(void *)(dst), narrow16(q_, u8out));            \
    }
                /* rows in fours with the int16 epilogue: where a row has more than one
                 * vector (for narrower rows the groups' set-up and the rows past out_h
                 * count for more than the rows saved) */
                if (nvec > 1 && dw3q_i16_ok(p, k)) {
                    if (s == 1)
                        dw3q_rows4(p, b, bs, 1, nvec, tmask, idx, wq, addv, k, u8out, yk);
                    else
                        dw3q_rows4(p, b, bs, 2, nvec, tmask, idx, wq, addv, k, u8out, yk);
                    continue;
                }
                for (oh = 0; oh < p->out_h; oh++) {
                    const uint8_t *r0 = b + (int64_t)oh * s * bs;
                    uint8_t *yo = yk + (int64_t)oh * p->out_w;
                    if (s == 1 && oh + 1 < p->out_h) {   /* two output rows, four input rows */
                        for (v = 0; v < nvec; v++) {
                            int32_t c = 16 * v;
                            __m512i q0 = DWQ_ROW(r0, c), q1 = DWQ_ROW(r0 + bs, c);
                            __m512i q2 = DWQ_ROW(r0 + 2 * bs, c), q3 = DWQ_ROW(r0 + 3 * bs, c);
                            __m512i a = _mm512_dpbusd_epi32(addv, q0, wq[0]);
                            __m512i e = _mm512_dpbusd_epi32(addv, q1, wq[0]);
                            a = _mm512_dpbusd_epi32(a, q1, wq[1]);
                            e = _mm512_dpbusd_epi32(e, q2, wq[1]);
                            a = _mm512_dpbusd_epi32(a, q2, wq[2]);
                            e = _mm512_dpbusd_epi32(e, q3, wq[2]);
                            DWQ_STORE(yo + c, a, v == nvec - 1)
                            DWQ_STORE(yo + p->out_w + c, e, v == nvec - 1)
                        }
                        oh++;
                        continue;
                    }
                    for (v = 0; v < nvec; v++) {
                        int32_t c = 16 * v * s;
                        __m512i a = _mm512_dpbusd_epi32(addv, DWQ_ROW(r0, c), wq[0]);
                        a = _mm512_dpbusd_epi32(a, DWQ_ROW(r0 + bs, c), wq[1]);
                        a = _mm512_dpbusd_epi32(a, DWQ_ROW(r0 + 2 * bs, c), wq[2]);
                        DWQ_STORE(yo + 16 * v, a, v == nvec - 1)
                    }
                }
#undef DWQ_STORE
#undef DWQ_ROW
            }
        }
}
#endif
