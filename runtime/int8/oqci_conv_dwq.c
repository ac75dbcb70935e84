/* oqci_conv_dwq.c - the avx512vbmi and AMX families' depthwise kernels of the INT8 conv,
 * on byte planes with vpermb / vpermt2b (AVX-512 VBMI, which every AMX CPU has) and
 * vpdpbusd: oqcik_conv_dw3q__avx512vbmi (3x3 at stride 1 or 2) and
 * oqcik_conv_dwkq__avx512vbmi (5x5 and 7x7 at stride 1 or 2).  The other x86 depthwise kernels,
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

/* ---- oqcik_conv_dwkq__avx512vbmi: 5x5 and 7x7 depthwise at stride 1 or 2 on byte planes ---
 * The float flat kernels do one tap of 16 outputs per FMA, and this CPU class runs about
 * one 512-bit FMA per cycle: 25 cycles per vector of a 5x5 kernel.  Here vpdpbusd does
 * four kernel rows of one column per lane and instruction, from "quad planes" whose
 * dwords already hold those four rows' bytes, so that no shuffle is needed per output:
 * for each group of kernel rows 4 g .. 4 g + 3 (rows past K: weight 0) and column j,
 * one 64-byte load and one vpdpbusd per 16 outputs, 10 for a 5x5 kernel, 14 for a 7x7.
 * s8 inputs are summed as x + 128 (padding 128), and -128 sum w joins the bias (as
 * conv_dw3q).  The sums are exact in int32 and below 2^24 (dw_all_fused), requantized
 * by rqf16 from their float value: the float kernels' bits.
 *   - Stride 1, output plane = input plane: one flat quad plane over the channel's H W
 *     outputs (dwkqf_run, below).
 *   - Stride 2: two quad planes Q[b][r][e] (b the column phase) whose dword holds input
 *     rows 2 r + t - p_t, t = 0 .. 3, at column 2 e + b - p_l, rows S = OW + (K - 1) / 2
 *     apart; output o = oh S + ow (the columns ow >= OW junk) reads group g, column j at
 *     Q[j % 2][oh + 2 g][ow + j / 2]; the valid lanes are compressed and stored as
 *     oqcik_conv_dws2flat__avx512vnni's (dw_store_valid).  The quad planes are made from
 *     a padded copy of the channel, 32 bytes of four rows and two vpermt2b per 16
 *     columns.
 * Both make a channel's planes in a pipeline (copy channel it + 2, quad planes of it +
 * 1, sums of it): the masked loads of a plane made straight from the input, or loads of
 * bytes just stored (the store does not forward: the load waits for it), cost about 30
 * cycles per 64 bytes. */
#define DWKQ_MAXO 16384   /* OH S outputs at most (valid-lane masks: 2 KB of stack) */

/* Stride 2 (5x5 or 7x7 at dilation 1, pads before in [0, K), sizes within the bounds):
 * rows S = OW + (K - 1) / 2, quad-plane rows *rq = OH + 2 (G - 1) (G = (K + 3) / 4 row
 * groups), the bytes *ql of a channel's two quad planes (each with 32 entries of slack),
 * the padded copy's rows *wx bytes apart (2 S rounded up to 32) and bytes *xl (2 *rq + 2
 * rows); returns the scratch bytes, two quad-plane pairs and two copies (0: not such a
 * conv).  In every build (dw_scratch needs it). */
static int64_t dwkq_geo(const OqciConv *p, int32_t *sr, int32_t *rq, int64_t *ql, int32_t *wx,
                        int64_t *xl) {
    int32_t k = p->k_h;
    if ((k != 5 && k != 7) || p->k_w != k || p->s_h != 2 || p->s_w != 2 || p->d_h != 1 ||
        p->d_w != 1 || p->p_t < 0 || p->p_t >= k || p->p_l < 0 || p->p_l >= k ||
        p->out_w > DWKQ_MAXO || p->out_h > DWKQ_MAXO)
        return 0;
    *sr = p->out_w + (k - 1) / 2;
    if ((int64_t)p->out_h * *sr > DWKQ_MAXO)
        return 0;
    *rq = p->out_h + 2 * ((k + 3) / 4 - 1);
    *ql = round_up(((int64_t)*rq * *sr + 32) * 4, 64);
    *wx = (int32_t)round_up(2 * (int64_t)*sr, 32);
    *xl = round_up((2 * (int64_t)*rq + 2) * *wx + 64, 64);
    return 4 * *ql + 2 * *xl;
}

/* Stride 1 (output plane = input plane, at most DWFLAT_MASKS / K vectors): the dwords of
 * the flat quad plane *nq (16 nv + 4 (G - 1) W + K - 1, rounded up to 16), the bytes *xl
 * of a padded channel copy (K W + 64 before the channel, as many after the plane's
 * reach); returns the scratch bytes: two quad planes, two copies and the lanes' column
 * classes (16 nv bytes) (0: not such a conv). */
static int64_t dwkqf_geo(const OqciConv *p, int64_t *nq, int64_t *xl) {
    int32_t k = p->k_h;
    int64_t hw = (int64_t)p->in_h * p->in_w, nv = (hw + 15) / 16;
    if ((k != 5 && k != 7) || p->k_w != k || p->s_h != 1 || p->s_w != 1 || p->d_h != 1 ||
        p->d_w != 1 || p->p_t < 0 || p->p_t >= k || p->p_l < 0 || p->p_l >= k ||
        p->out_h != p->in_h || p->out_w != p->in_w || nv * k > DWFLAT_MASKS)
        return 0;
    *nq = round_up(16 * nv + 4 * ((k + 3) / 4 - 1) * (int64_t)p->in_w + k - 1, 16);
    *xl = round_up(2 * (k * (int64_t)p->in_w + 64) + *nq, 64);
    return 2 * (*nq * 4 + 64) + 2 * *xl + 16 * nv;
}

int64_t oqcik_dwkq_bytes(const OqciConv *p) {
    int32_t sr, rq, wx;
    int64_t ql, nq, xl;
    return p->s_h == 1 ? dwkqf_geo(p, &nq, &xl) : dwkq_geo(p, &sr, &rq, &ql, &wx, &xl);
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
                       rq_mult2(oqci_rq_mult(&p->rq, k)));
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
    const __m512 m2 = _mm512_set1_ps(rq_mult2(oqci_rq_mult(&p->rq, k)));
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

/* (The 5x5 and 7x7 ones here rather than on the float flat planes: see above.) */
int oqcik_dwkq_ok(const OqciConv *p) {
    return oqcik_dwkq_bytes(p) > 0 && dw_all_fused(p);
}

/* The weight quads of a K x K kernel (K = 5, 7) as vpermb index *wi and zeroing mask *wz
 * of the channel's weights: quad i (row group g = i / K, column j = i % K) holds the
 * weights of rows 4 g + t (0 past K) of column j at byte 4 i + t. */
T_VBMI static inline void dwkq_wquads(int32_t K, __m512i *wi, __mmask64 *wz) {
    uint8_t ib[64];
    int32_t l;
    *wz = 0;
    for (l = 0; l < 64; l++) {
        int32_t g = l / 4 / K, j = l / 4 % K, r = 4 * g + l % 4;
        ib[l] = (uint8_t)(l < 8 * K && r < K ? r * K + j : 0);
        *wz |= (__mmask64)(l < 8 * K && r < K) << l;
    }
    *wi = _mm512_loadu_si512((const void *)ib);
}

/* The sums of the 16 outputs at byte offset o of a channel's quad planes qp: acc plus,
 * for each quad i (2 K of them, K = 5, 7), vpdpbusd of its dwords at qp + qo[i] + o with
 * its weights wq[i], lanes masked by m[i % K] (m null: none masked), in two chains. */
T_VBMI static inline __attribute__((always_inline)) __m512i
dwkq_dot(const uint8_t *qp, const int64_t *qo, const uint32_t *wq, const __mmask16 *m,
         int64_t o, __m512i acc, const int32_t K) {
    __m512i acc0 = acc, acc1 = _mm512_setzero_si512();
#define DWKQ_T(a, i)                                                                    \
    a = _mm512_mask_dpbusd_epi32(a, m ? m[(i) % K] : (__mmask16)0xFFFF,                  \
                                 _mm512_loadu_si512((const void *)(qp + qo[i] + o)),    \
                                 _mm512_set1_epi32((int32_t)wq[i]));
    DWKQ_T(acc0, 0) DWKQ_T(acc1, 1) DWKQ_T(acc0, 2) DWKQ_T(acc1, 3)
    DWKQ_T(acc0, 4) DWKQ_T(acc1, 5) DWKQ_T(acc0, 6) DWKQ_T(acc1, 7)
    DWKQ_T(acc0, 8) DWKQ_T(acc1, 9)
    if (K == 7) {
        DWKQ_T(acc0, 10) DWKQ_T(acc1, 11) DWKQ_T(acc0, 12) DWKQ_T(acc1, 13)
    }
#undef DWKQ_T
    return _mm512_add_epi32(acc0, acc1);
}

/* Stride 2: channel xs into its padded copy xc (input row ih at row ih + p_t, column iw
 * at iw + p_l; x ^ 0x80 for s8), the padding written once per call. */
T_VBMI static inline __attribute__((always_inline)) void
dwkq_copy(const OqciConv *p, const uint8_t *xs, int32_t wx, int32_t rows, __m512i flip,
          uint8_t *xc) {
    const int32_t len = p->in_w < wx - p->p_l ? p->in_w : wx - p->p_l;
    int32_t ih, t;
    for (ih = 0; ih < p->in_h && ih + p->p_t < rows; ih++) {
        const uint8_t *src = xs + (int64_t)ih * p->in_w;
        uint8_t *dst = xc + (int64_t)(ih + p->p_t) * wx + p->p_l;
        for (t = 0; t < len; t += 64) {
            __mmask64 m = len - t >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (len - t)) - 1;
            _mm512_mask_storeu_epi8(dst + t, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + t), flip));
        }
    }
}

/* Stride 2: the two quad planes of a channel from its copy xc, Q[b][r][e] byte t = xc
 * row 2 r + t, column 2 e + b: per 16 columns of row r, 32 bytes of each of the four
 * rows (rows t and t + 1 in one register), vpermt2b per phase.  A row's last 64 bytes
 * past S are rewritten by the next row's first. */
T_VBMI static inline __attribute__((always_inline)) void
dwkq_fill(const uint8_t *xc, int32_t wx, int32_t sr, int32_t rq, int64_t ql, __m512i i0,
          __m512i i1, uint8_t *q) {
    int32_t r, c;
    for (r = 0; r < rq; r++) {
        const uint8_t *r0 = xc + (int64_t)2 * r * wx, *r1 = r0 + wx, *r2 = r1 + wx, *r3 = r2 + wx;
        uint8_t *qr = q + (int64_t)r * sr * 4;
        for (c = 0; c < sr; c += 16, qr += 64) {
            __m512i lo = _mm512_inserti64x4(_mm512_castsi256_si512(LDU256(r0 + 2 * c)), LDU256(r1 + 2 * c), 1);
            __m512i hi = _mm512_inserti64x4(_mm512_castsi256_si512(LDU256(r2 + 2 * c)), LDU256(r3 + 2 * c), 1);
            _mm512_storeu_si512((void *)qr, _mm512_permutex2var_epi8(lo, i0, hi));
            _mm512_storeu_si512((void *)(qr + ql), _mm512_permutex2var_epi8(lo, i1, hi));
        }
    }
}

T_VBMI static inline __attribute__((always_inline)) void
dwkq_run(const OqciConv *p, const void *x, void *y, void *scratch, const int32_t K) {
    const int32_t s = 2;
    const int32_t oh_n = p->out_h, ow_n = p->out_w, kg = p->out_c / p->group;
    const int64_t plane_in = (int64_t)p->in_h * p->in_w, opix = (int64_t)oh_n * ow_n;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const __m512i flip = _mm512_set1_epi8(u8in ? 0 : (char)0x80);
    uint8_t *qb = align_up(scratch), *xb;   /* two channels' quad planes (s ql bytes), copies */
    __mmask16 mv[DWKQ_MAXO / 16];
    uint8_t ib[64];
    __m512i i0, i1, wi;
    __mmask64 wz;
    int64_t ql, xl, rs4, it, nit = (int64_t)p->batch * p->group, qo[16];
    int32_t sr, rq, wx, no, nv, v, l, i;
    dwkq_geo(p, &sr, &rq, &ql, &wx, &xl);
    xb = qb + 2 * s * ql;
    memset(xb, u8in ? 0 : 0x80, (size_t)(2 * xl));   /* the copies' padding, once */
    no = oh_n * sr;
    nv = (no + 15) / 16;
    rs4 = 4 * (int64_t)sr;   /* Q's row stride in bytes */
    for (v = 0; v < nv; v++) {
        mv[v] = 0;
        for (l = 0; l < 16; l++)
            if (16 * v + l < no && (16 * v + l) % sr < ow_n)
                mv[v] = (__mmask16)(mv[v] | 1u << l);
    }
    for (l = 0; l < 64; l++)   /* byte t of dword e: byte 2 e (+ 1: i1) of row t (32 bytes
                                * each, lo then hi) */
        ib[l] = (uint8_t)(32 * (l % 4) + 2 * (l / 4));
    i0 = _mm512_loadu_si512((const void *)ib);
    i1 = _mm512_add_epi8(i0, _mm512_set1_epi8(1));
    dwkq_wquads(K, &wi, &wz);
    for (i = 0; i < 2 * K; i++)   /* quad (g, j): at Q[j % s] + (4 g / s) rows + j / s */
        qo[i] = (i % K % s) * ql + (4 * (i / K) / s) * rs4 + 4 * (i % K / s);
    /* the pipeline of dwkqf_run: copy it + 2, planes it + 1, sums it */
#define DWKQ_X(i) ((const uint8_t *)x + ((i) / p->group * p->in_c + (i) % p->group) * plane_in)
    dwkq_copy(p, DWKQ_X(0), wx, 2 * rq + 2, flip, xb);
    dwkq_fill(xb, wx, sr, rq, ql, i0, i1, qb);
    if (nit > 1)
        dwkq_copy(p, DWKQ_X(1), wx, 2 * rq + 2, flip, xb + xl);
    for (it = 0; it < nit; it++) {
        const int64_t n = it / p->group, g = it % p->group;
        uint8_t *qp = qb + (it & 1) * s * ql;
        int32_t kk;
        if (it + 2 < nit)
            dwkq_copy(p, DWKQ_X(it + 2), wx, 2 * rq + 2, flip, xb + (it & 1) * xl);
        if (it + 1 < nit)
            dwkq_fill(xb + ((it + 1) & 1) * xl, wx, sr, rq, ql, i0, i1, qb + ((it + 1) & 1) * s * ql);
        for (kk = 0; kk < kg; kk++) {
            int32_t k = (int32_t)g * kg + kk;
            const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
            uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * opix;
            int64_t at = 0;
            __m512i wall = _mm512_maskz_permutexvar_epi8(
                wz, wi, _mm512_maskz_loadu_epi8(((__mmask64)1 << (K * K)) - 1, w));
            uint32_t wq[16];
            int32_t init = p->bias ? p->bias[k] : 0;
            RqFZ vz;
            _mm512_storeu_si512((void *)wq, wall);
            if (!u8in)   /* - 128 sum w: the flip's share */
                init -= 128 * _mm512_reduce_add_epi32(
                                  _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), wall));
            rqfz_channel(p, k, &vz);
            for (v = 0; v < nv; v++) {
                __m512i q = dwkq_dot(qp, qo, wq, NULL, 64 * (int64_t)v, _mm512_set1_epi32(init), K);
                dw_store_valid(rqf16(_mm512_cvtepi32_ps(q), &vz), mv[v], u8out, yk, &at, opix);
            }
        }
    }
#undef DWKQ_X
}

/* Stride 1: one flat quad plane over the channel's H W outputs (no junk columns), Q[u]
 * byte t = x[u - p_l + (t - p_t) W] as a flat index into the channel (pad outside [0, H
 * W)), so tap (4 g + t, j) of output f is byte t of Q[f + 4 g W + j]; where the column
 * wraps (ow + j - p_l outside [0, W)) the lane's vpdpbusd is masked off (the four bytes
 * share the column), and for s8 inputs the lane adds the flip's share of that column's
 * taps instead (128 colsum j, which -128 sum w took off): its sums start from entry
 * cls[f] of a per-channel table, the bias less 128 sum w plus the shares of the columns
 * wrapped at each class of output columns (the column itself on planes up to 16 wide,
 * else interior, or one of the K - 1 edge columns), one vpermd per vector.  The channel
 * is first copied
 * (x ^ 0x80 for s8) into a buffer padded once per call, then per 16 dwords of Q: four
 * loads of 16 bytes of it, vpermb.  In a pipeline, so that no load reads bytes just
 * stored (the store would not forward: the load waits for it): channel it + 2's copy,
 * channel it + 1's quad plane, channel it's sums. */
T_VBMI static inline __attribute__((always_inline)) void
dwkqf_copy(const uint8_t *xs, int32_t hw, __m512i flip, uint8_t *xc) {
    int32_t t;
    for (t = 0; t < hw; t += 64) {
        __mmask64 m = hw - t >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (hw - t)) - 1;
        _mm512_mask_storeu_epi8(xc + t, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, xs + t), flip));
    }
}

T_VBMI static inline __attribute__((always_inline)) void
dwkqf_fill(const uint8_t *xc, int32_t w_, int32_t p_t, int32_t p_l, int64_t nq, __m512i tr,
           uint8_t *q) {
    const uint8_t *r0 = xc - p_l - (int64_t)p_t * w_, *r1 = r0 + w_, *r2 = r1 + w_, *r3 = r2 + w_;
    int64_t u;
    for (u = 0; u < nq; u += 16) {
        __m512i v = _mm512_castsi128_si512(LDU128(r0 + u));
        v = _mm512_inserti32x4(v, LDU128(r1 + u), 1);
        v = _mm512_inserti32x4(v, LDU128(r2 + u), 2);
        v = _mm512_inserti32x4(v, LDU128(r3 + u), 3);
        _mm512_storeu_si512((void *)(q + 4 * u), _mm512_permutexvar_epi8(tr, v));
    }
}

T_VBMI static inline __attribute__((always_inline)) void
dwkqf_run(const OqciConv *p, const void *x, void *y, void *scratch, const int32_t K) {
    const int32_t w_ = p->in_w, hw = p->in_h * p->in_w, nv = (hw + 15) / 16;
    const int32_t kg = p->out_c / p->group;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const __m512i flip = _mm512_set1_epi8(u8in ? 0 : (char)0x80);
    uint8_t *qb = align_up(scratch), *xb, *cls;   /* two quad planes, two copies, classes */
    __mmask16 mk[DWFLAT_MASKS], cw[DWF_MAXK];   /* cw[j]: the classes whose tap j wraps */
    uint8_t ib[64];
    __m512i tr, wi;
    __mmask64 wz;
    int64_t nq, xl, qbytes, it, nit = (int64_t)p->batch * p->group, qo[16], pre;
    int32_t v, l, i;
    dwkqf_geo(p, &nq, &xl);
    qbytes = nq * 4 + 64;
    xb = qb + 2 * qbytes;
    cls = xb + 2 * xl;
    pre = K * (int64_t)w_ + 64;   /* the channel's offset in its copy */
    memset(xb, u8in ? 0 : 0x80, (size_t)(2 * xl));
    dw_wrap_masks(w_, p->p_l, K, nv, mk);
    for (i = 0; i < K; i++)
        cw[i] = 0;
    for (l = 0; l < 16; l++) {   /* class l's column c: l; or interior (0), c + 1, ... */
        int32_t c = w_ <= 16 ? l : l == 0 ? p->p_l : l <= p->p_l ? l - 1 : w_ - l + p->p_l;
        for (i = 0; i < K && (w_ <= 16 ? l < w_ : l < K); i++)
            cw[i] = (__mmask16)(cw[i] | (c + i - p->p_l < 0 || c + i - p->p_l >= w_) << l);
    }
    for (i = 0; i < 16 * nv; i++) {
        int32_t c = i % w_;
        cls[i] = (uint8_t)(w_ <= 16 ? c : c < p->p_l ? c + 1 : c >= w_ - (K - 1 - p->p_l) ? w_ - c + p->p_l : 0);
    }
    for (l = 0; l < 64; l++)   /* byte t of dword e <- byte e of 128-bit lane t */
        ib[l] = (uint8_t)(16 * (l % 4) + l / 4);
    tr = _mm512_loadu_si512((const void *)ib);
    dwkq_wquads(K, &wi, &wz);
    for (i = 0; i < 2 * K; i++)   /* quad (g, j): at 4 (f + 4 g W + j) */
        qo[i] = 4 * (4 * (int64_t)(i / K) * w_ + i % K);
#define DWKQF_X(i) ((const uint8_t *)x + ((i) / p->group * p->in_c + (i) % p->group) * (int64_t)hw)
    dwkqf_copy(DWKQF_X(0), hw, flip, xb + pre);
    dwkqf_fill(xb + pre, w_, p->p_t, p->p_l, nq, tr, qb);
    if (nit > 1)
        dwkqf_copy(DWKQF_X(1), hw, flip, xb + xl + pre);
    for (it = 0; it < nit; it++) {
        const int64_t n = it / p->group, g = it % p->group;
        const uint8_t *qp = qb + (it & 1) * qbytes;
        int32_t kk;
        if (it + 2 < nit)   /* (copy it + 2 and the plane of it + 1 use the other buffers) */
            dwkqf_copy(DWKQF_X(it + 2), hw, flip, xb + (it & 1) * xl + pre);
        if (it + 1 < nit)
            dwkqf_fill(xb + ((it + 1) & 1) * xl + pre, w_, p->p_t, p->p_l, nq, tr,
                       qb + ((it + 1) & 1) * qbytes);
        for (kk = 0; kk < kg; kk++) {
            int32_t k = (int32_t)g * kg + kk;
            const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
            uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * (int64_t)hw;
            __m512i wall = _mm512_maskz_permutexvar_epi8(
                wz, wi, _mm512_maskz_loadu_epi8(((__mmask64)1 << (K * K)) - 1, w));
            uint32_t wq[16];
            int32_t qs[16], sw = 0;
            __m512i ct = _mm512_set1_epi32(p->bias ? p->bias[k] : 0);   /* per class */
            RqFZ vz;
            _mm512_storeu_si512((void *)wq, wall);
            if (!u8in) {   /* -128 sum w; the wrapped lanes add back 128 colsum j */
                _mm512_storeu_si512((void *)qs, _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                                                  _mm512_set1_epi8(1), wall));
                for (i = 0; i < K; i++) {
                    ct = _mm512_mask_add_epi32(ct, cw[i], ct, _mm512_set1_epi32(128 * (qs[i] + qs[K + i])));
                    sw += qs[i] + qs[K + i];
                }
                ct = _mm512_sub_epi32(ct, _mm512_set1_epi32(128 * sw));
            }
            rqfz_channel(p, k, &vz);
            for (v = 0; v < nv; v++) {
                const __mmask16 *m = mk + v * K;
                __m512i q = dwkq_dot(qp, qo, wq, m, 64 * (int64_t)v,
                                     _mm512_permutexvar_epi32(_mm512_cvtepu8_epi32(LDU128(cls + 16 * v)), ct), K);
                q = rqf16(_mm512_cvtepi32_ps(q), &vz);
                if (16 * v + 16 <= hw)
                    _mm_storeu_si128((__m128i *)(void *)(yk + 16 * v), narrow16(q, u8out));
                else
                    _mm512_mask_cvtepi32_storeu_epi8(yk + 16 * v,
                                                     (__mmask16)((1u << (hw - 16 * v)) - 1), q);
            }
        }
    }
#undef DWKQF_X
}

/* The instantiations: K and the stride constants in each call of the body. */
T_VBMI void oqcik_conv_dwkq__avx512vbmi(const OqciConv *p, const void *x, void *y,
                                        void *scratch) {
    if (p->k_h == 5 && p->s_h == 1)
        dwkqf_run(p, x, y, scratch, 5);
    else if (p->k_h == 5)
        dwkq_run(p, x, y, scratch, 5);
    else if (p->s_h == 1)
        dwkqf_run(p, x, y, scratch, 7);
    else
        dwkq_run(p, x, y, scratch, 7);
}
#endif
