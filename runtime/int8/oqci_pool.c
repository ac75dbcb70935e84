/* oqci_pool.c - INT8 max and average pooling (NCHW, batch included), portable C99,
 * AVX2 and (stride-2 max pools) AVX-512 kernels giving the same bits (see "AVX2
 * kernels" and "AVX-512" below).
 *
 * Design.  One direct loop per output element over its window, bounds-checked tap by
 * tap (so padding is never read and never counted); no scratch.
 *   - max: the largest input in the window; padding never wins.  A window that holds
 *     no input element at all (possible only with dilation or pads >= the kernel) gives
 *     lo, the smallest value the output may take.  With requant the max is requantized
 *     with entry 0 of rq, otherwise it is copied and clamped to [lo, hi].
 *   - average: the exact int32 sum of the window's inputs, requantized with entry
 *     `count` of rq (count = inputs inside the image, or k_h * k_w with
 *     count_include_pad).  The sum is bounded by k_h * k_w * 255, so windows of more
 *     than INT32_MAX / 255 elements are rejected (OQCI_EINVAL).  A window with no input
 *     (count 0) gives 0 clamped to [lo, hi].  With accumulator outputs (out_type
 *     OQCI_S32, average pooling only) the sum itself, clamped to [lo, hi], is stored as
 *     an int32: no division, rq not read.
 * Dilations apply to both.  The output is channels [out_coff, out_coff + C) of a buffer
 * with out_ctotal channels per image.
 *
 * Only integer arithmetic here, except the float branch of oqci_requant, which
 * OQCI_NO_FLOAT removes (see oqci.h). */
/* AVX2 (x86-64, GNU C): compile-time with __AVX2__, run-time with OQCI_DISPATCH; HAVE_AVX2,
 * T_AVX2 and oqci_use_avx2() come from oqci.h, and so do HAVE_AVX512, T_AVX512 and
 * oqci_use_avx512() (AVX-512 BW) */
#define OQCI_AVX2_SELECT
#include "oqci.h"

#if HAVE_AVX2
#include <string.h>
#define LDU256(ptr) _mm256_loadu_si256((const __m256i *)(const void *)(ptr))
#define LDU128(ptr) _mm_loadu_si128((const __m128i *)(const void *)(ptr))
#endif

/* Geometry, types and pointers consistent (rq is checked by each kernel). */
static int pool_ok(const OqciPool *p, const void *x, const void *y) {
    if (!p || !x || !y)
        return 0;
    if (p->batch < 0 || p->channels < 1 || p->in_h < 1 || p->in_w < 1 || p->out_h < 1 ||
        p->out_w < 1 || p->k_h < 1 || p->k_w < 1 || p->s_h < 1 || p->s_w < 1 ||
        p->d_h < 1 || p->d_w < 1 || p->p_t < 0 || p->p_l < 0)
        return 0;
    if (p->out_coff < 0 || p->out_ctotal < 1 || p->out_coff > p->out_ctotal - p->channels)
        return 0;
    return (p->in_type == OQCI_S8 || p->in_type == OQCI_U8) &&
           oqci_range_ok(p->out_type, p->lo, p->hi);
}

/* An average pool's output from its window's sum and count: requantized with entry
 * count, or for accumulator outputs the sum itself; clamped to [lo, hi]. */
static int32_t avg_out(const OqciPool *p, int32_t sum, int32_t count) {
    if (p->out_type == OQCI_S32)
        return sum < p->lo ? p->lo : sum > p->hi ? p->hi : sum;
    return count ? oqci_requant(sum, &p->rq, count, p->lo, p->hi)
                 : (p->lo > 0 ? p->lo : p->hi < 0 ? p->hi : 0);
}

/* The taps t in [0, k) of a window starting at input position start (dilation d) that
 * land inside [0, n): [*t0, *t1), empty when none does.  Computed, not searched: a
 * window may be millions of taps wide (a fuzzed AveragePool of kernel 35 x 4194303 took
 * seconds per output when every tap was visited). */
static void tap_range(int64_t start, int32_t d, int32_t n, int32_t k, int32_t *t0, int32_t *t1) {
    int64_t lo = start < 0 ? (-start + d - 1) / d : 0;   /* first tap at or past 0 */
    int64_t hi = n - 1 - start < 0 ? 0 : (n - 1 - start) / d + 1;   /* past the last < n */
    lo = lo > k ? k : lo;
    hi = hi > k ? k : hi;
    *t0 = (int32_t)lo;
    *t1 = (int32_t)(hi < lo ? lo : hi);
}

/* Output (oh, ow) of plane xoff (the two pools share it; avg selects the reduction). */
static int32_t pool_one(const OqciPool *p, const void *x, int64_t xoff, int32_t oh, int32_t ow,
                        int avg) {
    int64_t ih0 = (int64_t)oh * p->s_h - p->p_t;
    int64_t iw0 = (int64_t)ow * p->s_w - p->p_l;
    int32_t best = INT32_MIN, sum = 0, count = 0, i, j;   /* count: avg only */
    int32_t i0, i1, j0, j1;   /* the taps inside the input: [i0, i1) x [j0, j1) */
    int found = 0;                                        /* max: any input */
    tap_range(ih0, p->d_h, p->in_h, p->k_h, &i0, &i1);
    tap_range(iw0, p->d_w, p->in_w, p->k_w, &j0, &j1);
    for (i = i0; i < i1; i++) {
        int64_t ih = ih0 + (int64_t)i * p->d_h;
        for (j = j0; j < j1; j++) {
            int64_t iw = iw0 + (int64_t)j * p->d_w;
            int32_t v;
            v = oqci_load_q(x, p->in_type, xoff + ih * p->in_w + iw);
            if (avg) {   /* bounded: oqci_avgpool checked the window */
                sum += v;
                count++;
            } else {
                best = v > best ? v : best;
                found = 1;
            }
        }
    }
    if (avg)
        return avg_out(p, sum, p->count_include_pad ? p->k_h * p->k_w : count);
    if (!found)
        return p->lo;
    if (p->requant)
        return oqci_requant(best, &p->rq, 0, p->lo, p->hi);
    return best < p->lo ? p->lo : best > p->hi ? p->hi : best;
}

static void pool_run(const OqciPool *p, const void *x, void *y, int avg) {
    int64_t plane = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w, n;
    int32_t c, oh, ow;
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            int64_t xoff = (n * p->channels + c) * plane;
            int64_t yoff = (n * p->out_ctotal + p->out_coff + c) * opix;
            for (oh = 0; oh < p->out_h; oh++)
                for (ow = 0; ow < p->out_w; ow++)
                    oqci_store_q(y, p->out_type, yoff + (int64_t)oh * p->out_w + ow,
                          pool_one(p, x, xoff, oh, ow, avg));
        }
}


#if HAVE_AVX2
/* ---- AVX2 kernels (exactly pool_one's results) --------------------------------------
 * Max pooling with d_w 1 and k_w 2 or 3 at s_w 2, or k_w <= 32 at s_w 1 (any k_h, s_h,
 * d_h, padding): per output row, the window's valid input rows are reduced column by
 * column into a byte row (s8 inputs biased by 128 so that the order is the unsigned one;
 * horizontal padding is the bias, the smallest value, so it never wins against an
 * input), then every output takes the max of its columns (maxpool_avx2).  Without
 * requant the max is clamped in
 * vectors; with requant it is mapped through a 256-entry table of oqci_requant of every
 * possible max, built per call.  Windows holding no input (pads >= the kernel) are
 * recomputed by pool_one.  Global average pooling sums each plane with vpsadbw. */

#define MP_CH 256   /* outputs of an output row per chunk */

/* The input rows (of plane xp) inside output row oh's window, in order; their count. */
static inline int32_t window_rows(const OqciPool *p, const uint8_t *xp, int32_t oh,
                           const uint8_t **rows) {
    int64_t ih0 = (int64_t)oh * p->s_h - p->p_t;
    int32_t i, nr = 0;
    for (i = 0; i < p->k_h; i++) {
        int64_t ih = ih0 + (int64_t)i * p->d_h;
        if (ih >= 0 && ih < p->in_h)
            rows[nr++] = xp + ih * p->in_w;
    }
    return nr;
}

/* buf[t] = the max over the nr rows of column a + t, biased, for t in [t0, t1): 32-,
 * 16- and 8-byte vectors, the last one overlapping the previous (same values), so only
 * runs narrower than 8 columns are scalar. */
T_AVX2 static inline void vmax_rows(const uint8_t *const *rows, int32_t nr, int64_t a, int64_t t0,
                             int64_t t1, int s8, uint8_t *buf) {
    const __m256i flip = _mm256_set1_epi8(s8 ? (char)0x80 : 0);
    int64_t n = t1 - t0, t;
    int32_t i;
    if (n >= 16) {
        int w = n >= 32 ? 32 : 16;
        for (t = t0;; t += w) {
            if (t + w > t1)
                t = t1 - w;
            if (w == 32) {
                __m256i v = LDU256(rows[0] + a + t);
                for (i = 1; i < nr; i++)
                    v = s8 ? _mm256_max_epi8(v, LDU256(rows[i] + a + t))
                           : _mm256_max_epu8(v, LDU256(rows[i] + a + t));
                _mm256_storeu_si256((__m256i *)(void *)(buf + t), _mm256_xor_si256(v, flip));
            } else {
                __m128i v = LDU128(rows[0] + a + t);
                for (i = 1; i < nr; i++)
                    v = s8 ? _mm_max_epi8(v, LDU128(rows[i] + a + t))
                           : _mm_max_epu8(v, LDU128(rows[i] + a + t));
                _mm_storeu_si128((__m128i *)(void *)(buf + t),
                                 _mm_xor_si128(v, _mm256_castsi256_si128(flip)));
            }
            if (t + w >= t1)
                break;
        }
    } else if (n >= 8) {
        for (t = t0;; t += 8) {
            __m128i v;
            if (t + 8 > t1)
                t = t1 - 8;
            v = _mm_loadl_epi64((const __m128i *)(const void *)(rows[0] + a + t));
            for (i = 1; i < nr; i++) {
                __m128i w = _mm_loadl_epi64((const __m128i *)(const void *)(rows[i] + a + t));
                v = s8 ? _mm_max_epi8(v, w) : _mm_max_epu8(v, w);
            }
            _mm_storel_epi64((__m128i *)(void *)(buf + t),
                             _mm_xor_si128(v, _mm256_castsi256_si128(flip)));
            if (t + 8 >= t1)
                break;
        }
    } else {
        for (t = t0; t < t1; t++) {
            int32_t v = oqci_load_q(rows[0], s8 ? OQCI_S8 : OQCI_U8, a + t), w;
            for (i = 1; i < nr; i++) {
                w = oqci_load_q(rows[i], s8 ? OQCI_S8 : OQCI_U8, a + t);
                v = w > v ? w : v;
            }
            buf[t] = (uint8_t)(v + (s8 ? 128 : 0));
        }
    }
}

/* buf[0 .. n) = 0: two 32-byte stores up to 64 bytes (buf has room for them), else
 * memset (a call per output row costs more than the row's maxima). */
T_AVX2 static inline void zero_small(uint8_t *buf, int64_t n) {
    if (n <= 0)
        return;
    if (n > 64) {
        memset(buf, 0, (size_t)n);
        return;
    }
    _mm256_storeu_si256((__m256i *)(void *)buf, _mm256_setzero_si256());
    if (n > 32)
        _mm256_storeu_si256((__m256i *)(void *)(buf + 32), _mm256_setzero_si256());
}

/* n output bytes from ob (16-byte blocks, n rounded up) to dst: 16-byte stores, the last
 * one ending at n (overlapping the one before: same bytes); a copy below 16. */
T_AVX2 static inline void store_row(uint8_t *dst, const uint8_t *ob, int32_t n) {
    int32_t j;
    if (n < 16) {
        memcpy(dst, ob, (size_t)n);
        return;
    }
    for (j = 0; j + 16 < n; j += 16)
        _mm_storeu_si128((__m128i *)(void *)(dst + j), LDU128(ob + j));
    _mm_storeu_si128((__m128i *)(void *)(dst + n - 16), LDU128(ob + n - 16));
}

/* Max pooling with d_w 1 and either s_w 2, k_w 2 or 3, or s_w 1, k_w <= 32 (GoogLeNet's
 * 3x3 / 1 branch pools); any k_h <= 64, s_h, d_h and padding.  Per output row the
 * window's valid rows are reduced into a biased byte row (vmax_rows), then:
 *   s_w 2: every output takes the max of its 2 or 3 columns as 16-bit lanes;
 *   s_w 1: every output takes the max of its k_w columns by byte max of shifted loads
 *          (32 outputs per step), then the biased maxima are widened to 16-bit lanes.
 * The 16-bit maxima are unbiased and clamped, or mapped through the table lut. */
T_AVX2 static void maxpool_avx2(const OqciPool *p, const void *x, void *y, const uint8_t *lut) {
    int64_t plane = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w, n;
    int s8 = p->in_type == OQCI_S8, k3 = p->k_w == 3, s1 = p->s_w == 1;
    const __m256i lowb = _mm256_set1_epi16(0x00FF);
    const __m256i bias = _mm256_set1_epi16(s8 ? 128 : 0);
    const __m256i lo = _mm256_set1_epi16((short)p->lo), hi = _mm256_set1_epi16((short)p->hi);
    uint8_t buf[2 * MP_CH + 96], ob[MP_CH + 32];   /* (buf: zero_small's 64 past t1) */
    const uint8_t *rows[64];
    int32_t c, oh;
    /* some output column's window lies in the padding (pads >= the kernel) */
    const int hempty = p->p_l >= p->k_w || (int64_t)(p->out_w - 1) * p->s_w - p->p_l >= p->in_w;
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            int64_t xoff = (n * p->channels + c) * plane;
            int64_t yoff = (n * p->out_ctotal + p->out_coff + c) * opix;
            const uint8_t *xp = (const uint8_t *)x + xoff;
            for (oh = 0; oh < p->out_h; oh++) {
                int32_t nr = window_rows(p, xp, oh, rows), ow0;
                for (ow0 = 0; ow0 < p->out_w; ow0 += MP_CH) {
                    int32_t nout = p->out_w - ow0 < MP_CH ? p->out_w - ow0 : MP_CH, j, b, t;
                    int64_t a = (int64_t)ow0 * p->s_w - p->p_l, t0, t1;
                    /* columns the outputs read, and the end of what the vectors read */
                    int64_t span = s1 ? (int64_t)nout + p->k_w - 1 : 2 * (int64_t)nout + 2;
                    int64_t end = s1 ? (int64_t)(nout + 31) / 32 * 32 + p->k_w - 1
                                     : 32 * (int64_t)((nout + 15) / 16) + 34;
                    if (nr == 0) {   /* every window empty */
                        for (j = 0; j < nout; j++)
                            ob[j] = (uint8_t)pool_one(p, x, xoff, oh, ow0 + j, 0);
                        memcpy((uint8_t *)y + yoff + (int64_t)oh * p->out_w + ow0, ob,
                               (size_t)nout);
                        continue;
                    }
                    t0 = a < 0 ? (-a < span ? -a : span) : 0;
                    t1 = p->in_w - a < span ? p->in_w - a : span;
                    if (t1 < t0)
                        t1 = t0;
                    zero_small(buf, t0);
                    zero_small(buf + t1, end - t1);
                    vmax_rows(rows, nr, a, t0, t1, s8, buf);
                    if (s1)   /* biased maxima of the k_w columns, 32 at a time */
                        for (j = 0; j < nout; j += 32) {
                            __m256i m = LDU256(buf + j);
                            for (t = 1; t < p->k_w; t++)
                                m = _mm256_max_epu8(m, LDU256(buf + j + t));
                            _mm256_storeu_si256((__m256i *)(void *)(ob + j), m);
                        }
                    for (b = 0; 16 * b < nout; b++) {
                        __m256i m, pk;
                        if (s1) {
                            m = _mm256_cvtepu8_epi16(LDU128(ob + 16 * b));
                        } else {
                            __m256i v0 = LDU256(buf + 32 * b);
                            m = _mm256_max_epi16(_mm256_and_si256(v0, lowb), _mm256_srli_epi16(v0, 8));
                            if (k3)
                                m = _mm256_max_epi16(m, _mm256_and_si256(LDU256(buf + 32 * b + 2), lowb));
                        }
                        if (lut) {
                            pk = _mm256_packus_epi16(m, m);
                        } else {
                            m = _mm256_sub_epi16(m, bias);
                            m = _mm256_min_epi16(_mm256_max_epi16(m, lo), hi);
                            pk = p->out_type == OQCI_U8 ? _mm256_packus_epi16(m, m)
                                                        : _mm256_packs_epi16(m, m);
                        }
                        _mm_storeu_si128((__m128i *)(void *)(ob + 16 * b),
                                         _mm256_castsi256_si128(_mm256_permute4x64_epi64(pk, 0x08)));
                    }
                    if (lut)
                        for (j = 0; j < nout; j++)
                            ob[j] = lut[ob[j]];
                    if (hempty) {   /* windows holding no input: iw0 = a + s_w j with
                                     * iw0 + k_w <= 0 (j < jl) or iw0 >= in_w (j >= jh) */
                        int64_t jl = -a - p->k_w >= 0 ? (-a - p->k_w) / p->s_w + 1 : 0;
                        int64_t jh = p->in_w - a > 0 ? (p->in_w - a + p->s_w - 1) / p->s_w : 0;
                        for (j = 0; j < nout && j < jl; j++)
                            ob[j] = (uint8_t)pool_one(p, x, xoff, oh, ow0 + j, 0);
                        for (j = jh > jl ? (int32_t)(jh < nout ? jh : nout) : j; j < nout; j++)
                            ob[j] = (uint8_t)pool_one(p, x, xoff, oh, ow0 + j, 0);
                    }
                    store_row((uint8_t *)y + yoff + (int64_t)oh * p->out_w + ow0, ob, nout);
                }
            }
        }
}

/* 3x3 / stride 1 / pad 1 max pooling without requant, output type = input type, on
 * planes of 32 to MPS_MAX elements (GoogLeNet's branch pools: 7x7 to 28x28 planes, where
 * maxpool_avx2's per-row work costs more than the maxima).  Whole planes at a time, as
 * flat byte arrays in the unsigned order (s8 biased by 128; 0 is the smallest value):
 * xp = a row of 0s, the plane, a row of 0s; v = the max of three rows of xp (the
 * vertical window, padding never winning); the output the max of each element of v and
 * its left and right neighbours, a neighbour across a row edge masked to 0 (el, er: one
 * byte per element, built once per call); then clamped and unbiased.  The last vector of
 * a pass overlaps the one before (the same values again). */
#define MPS_MAX 4096

static int maxpool_same3_ok(const OqciPool *p) {
    int64_t hw = (int64_t)p->in_h * p->in_w;
    return p->k_h == 3 && p->k_w == 3 && p->s_h == 1 && p->s_w == 1 && p->d_h == 1 &&
           p->d_w == 1 && p->p_t == 1 && p->p_l == 1 && p->out_h == p->in_h &&
           p->out_w == p->in_w && !p->requant && p->in_type == p->out_type && hw >= 32 &&
           hw <= MPS_MAX && 2 * (int64_t)p->in_w <= MPS_MAX;
}

T_AVX2 static void maxpool_same3_avx2(const OqciPool *p, const void *x, void *y) {
    int32_t w = p->in_w, hw = p->in_h * p->in_w, i, t, c;
    int s8 = p->in_type == OQCI_S8;
    const __m256i flip = _mm256_set1_epi8(s8 ? (char)0x80 : 0);
    const __m256i lo = _mm256_set1_epi8((char)(uint8_t)(p->lo + (s8 ? 128 : 0)));
    const __m256i hi = _mm256_set1_epi8((char)(uint8_t)(p->hi + (s8 ? 128 : 0)));
    uint8_t xp[2 * MPS_MAX + 32], vb[MPS_MAX + 64], el[MPS_MAX], er[MPS_MAX];
    uint8_t *v = vb + 32;
    int64_t n;
    for (i = 0; i < hw; i++) {
        el[i] = i % w == 0 ? 0 : 0xFF;
        er[i] = i % w == w - 1 ? 0 : 0xFF;
    }
    memset(xp, 0, (size_t)w);
    memset(xp + w + hw, 0, (size_t)w);
    memset(vb, 0, 32);
    memset(v + hw, 0, 32);
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            const uint8_t *xc = (const uint8_t *)x + (n * p->channels + c) * (int64_t)hw;
            uint8_t *yc = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + c) * (int64_t)hw;
            for (t = 0;; t += 32) {   /* biased copy */
                if (t + 32 > hw)
                    t = hw - 32;
                _mm256_storeu_si256((__m256i *)(void *)(xp + w + t),
                                    _mm256_xor_si256(LDU256(xc + t), flip));
                if (t + 32 >= hw)
                    break;
            }
            for (t = 0;; t += 32) {   /* vertical */
                if (t + 32 > hw)
                    t = hw - 32;
                _mm256_storeu_si256((__m256i *)(void *)(v + t),
                                    _mm256_max_epu8(_mm256_max_epu8(LDU256(xp + t), LDU256(xp + w + t)),
                                                    LDU256(xp + 2 * w + t)));
                if (t + 32 >= hw)
                    break;
            }
            for (t = 0;; t += 32) {   /* horizontal, clamp, unbias */
                __m256i m;
                if (t + 32 > hw)
                    t = hw - 32;
                m = _mm256_max_epu8(LDU256(v + t),
                                    _mm256_max_epu8(_mm256_and_si256(LDU256(v + t - 1), LDU256(el + t)),
                                                    _mm256_and_si256(LDU256(v + t + 1), LDU256(er + t))));
                m = _mm256_min_epu8(_mm256_max_epu8(m, lo), hi);
                _mm256_storeu_si256((__m256i *)(void *)(yc + t), _mm256_xor_si256(m, flip));
                if (t + 32 >= hw)
                    break;
            }
        }
}

/* Sum of n s8 or u8 values (exact: the caller bounds n * 255). */
T_AVX2 static int32_t sum_bytes_avx2(const uint8_t *s, int64_t n, int s8) {
    const __m256i flip = _mm256_set1_epi8(s8 ? (char)0x80 : 0), z = _mm256_setzero_si256();
    __m256i acc = z;
    __m128i h;
    int64_t t = 0, tot;
    for (; t + 32 <= n; t += 32)
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(LDU256(s + t), flip), z));
    h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    if (t + 16 <= n) {
        __m128i v = _mm_xor_si128(LDU128(s + t), _mm256_castsi256_si128(flip));
        h = _mm_add_epi64(h, _mm_sad_epu8(v, _mm_setzero_si128()));
        t += 16;
    }
    tot = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
    for (; t < n; t++)
        tot += s[t] ^ (s8 ? 0x80 : 0);
    return (int32_t)(tot - (s8 ? 128 * n : 0));
}

/* Global average pooling: every plane is one window, all inside the image. */
static void gavgpool_avx2(const OqciPool *p, const void *x, void *y) {
    int64_t plane = (int64_t)p->in_h * p->in_w, n;
    int32_t c;
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            int32_t s = sum_bytes_avx2((const uint8_t *)x + (n * p->channels + c) * plane, plane,
                                       p->in_type == OQCI_S8);
            oqci_store_q(y, p->out_type, n * p->out_ctotal + p->out_coff + c,
                  avg_out(p, s, (int32_t)plane));
        }
}
#endif

#if HAVE_AVX512
/* ---- AVX-512: max pools of width 2 or 3 at horizontal stride 2 ----------------------
 * (d_w 1, any k_h <= 64, s_h, d_h; no requant; every window holding input.)  Per output
 * row and chunk of MPZ_OUT outputs (width 3: 31, so that each output's third column is
 * inside the chunk's 64 bytes): the window's valid input rows are loaded with a byte
 * mask that keeps the columns inside the row (the others get the type's smallest value,
 * so padding never wins) and reduced by byte max; in 16-bit lanes, lane j holds output
 * j's columns 0 (low byte) and 1 (high), and lane j + 1's low byte is its column 2 (one
 * vpermw moves it down); the max is clamped to [lo, hi] in 16 bits where [lo, hi] does
 * not hold the whole type, and narrowed (vpmovwb) into a masked store.  No buffer, no
 * per-row call: on small planes the row kernel's set-up cost more than the maxima. */
#define MPZ_CHUNKS 64   /* chunks per row at most (rows up to 1984 outputs, 2048 at width 2) */
#define MPZ_OUT(k3) ((k3) ? 31 : 32)

/* Whether every window's rows include an input row: the last window starts inside the
 * input, and each window starting above it (ih0 < 0) reaches a row in [0, in_h) (with
 * dilation the rows it reads may all be padding, though its span covers the input). */
static int mp_rows_hold_input(const OqciPool *p) {
    int32_t oh;
    if ((int64_t)(p->out_h - 1) * p->s_h - p->p_t >= p->in_h)
        return 0;
    for (oh = 0; oh < p->out_h; oh++) {
        int64_t ih0 = (int64_t)oh * p->s_h - p->p_t;
        int32_t i0, i1;
        if (ih0 >= 0)
            break;
        tap_range(ih0, p->d_h, p->in_h, p->k_h, &i0, &i1);
        if (i0 == i1)
            return 0;
    }
    return 1;
}

static int maxpool_s2z_ok(const OqciPool *p) {
    return !p->requant && p->s_w == 2 && (p->k_w == 2 || p->k_w == 3) && p->d_w == 1 &&
           p->k_h <= 64 && p->out_w <= MPZ_OUT(p->k_w == 3) * MPZ_CHUNKS &&
           /* every window holds input: rows (see above), the first and last column */
           mp_rows_hold_input(p) && p->p_l <= p->k_w - 1 &&
           (int64_t)(p->out_w - 1) * 2 - p->p_l < p->in_w;
}

/* Whether a max pool's clamp does something: [lo, hi] leaves out a value of the input
 * type (the AVX-512 pools skip it otherwise). */
static int mp_clamps(const OqciPool *p) {
    return p->in_type == OQCI_S8 ? p->lo > -128 || p->hi < 127 : p->lo > 0 || p->hi < 255;
}

/* Columns [c0, c0 + 64) of a row: the bits of those inside [0, in_w). */
static __mmask64 mpz_mask(int64_t c0, int32_t in_w) {
    int64_t a = c0 < 0 ? -c0 : 0, b = in_w - c0;   /* bits [a, b) */
    __mmask64 hi, lo;
    if (b > 64)
        b = 64;
    if (b <= a)
        return 0;
    hi = b >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << b) - 1;
    lo = ((__mmask64)1 << a) - 1;
    return hi & ~lo;
}

/* The pool for one input type (s8), window width (k3) and clamp, all constants once
 * inlined: each of maxpool_s2z's calls compiles to its own loop nest. */
T_AVX512 static inline __attribute__((always_inline)) void
mpz_body(const OqciPool *p, const void *x, void *y, const __mmask64 *m0, const __mmask64 *ms,
         int32_t nch, int s8, int k3, int clamp) {
    const int64_t plane = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w;
    const int nout = MPZ_OUT(k3);
    const __m512i fill = _mm512_set1_epi8(s8 ? (char)-128 : 0);
    const __m512i lo16 = _mm512_set1_epi16((short)p->lo), hi16 = _mm512_set1_epi16((short)p->hi);
    const __m512i next = _mm512_setr_epi32(0x00020001, 0x00040003, 0x00060005, 0x00080007,
                                           0x000A0009, 0x000C000B, 0x000E000D, 0x0010000F,
                                           0x00120011, 0x00140013, 0x00160015, 0x00180017,
                                           0x001A0019, 0x001C001B, 0x001E001D, 0x001F001F);
    int64_t n;
    int32_t c, oh, ch;
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            const uint8_t *xc = (const uint8_t *)x + (n * p->channels + c) * plane;
            uint8_t *yc = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + c) * opix;
            for (oh = 0; oh < p->out_h; oh++, yc += p->out_w) {
                /* the window's valid rows: r0, r0 + rstep, ... (nr of them) */
                int64_t ih0 = (int64_t)oh * p->s_h - p->p_t, rstep = (int64_t)p->d_h * p->in_w;
                int32_t i, nr = p->k_h;
                const uint8_t *r0 = xc + ih0 * p->in_w;
                if (ih0 < 0 || ih0 + (int64_t)(p->k_h - 1) * p->d_h >= p->in_h) {
                    const uint8_t *rows[64];   /* (at an edge: window_rows; they are spaced
                                                * rstep apart all the same) */
                    nr = window_rows(p, xc, oh, rows);
                    r0 = rows[0];
                }
                for (ch = 0; ch < nch; ch++) {
                    const uint8_t *rc = r0 + 2 * (int64_t)nout * ch - p->p_l;
                    __m512i v = _mm512_mask_loadu_epi8(fill, m0[ch], rc), e, m;
                    for (i = 1; i < nr; i++) {
                        __m512i a = _mm512_mask_loadu_epi8(fill, m0[ch], rc + i * rstep);
                        v = s8 ? _mm512_max_epi8(v, a) : _mm512_max_epu8(v, a);
                    }
                    /* 16-bit lanes: output j's column 0 (e), 1 (the high byte), 2 (e of j + 1) */
                    if (s8) {
                        e = _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
                        m = _mm512_max_epi16(e, _mm512_srai_epi16(v, 8));
                    } else {
                        e = _mm512_and_si512(v, _mm512_set1_epi16(0x00FF));
                        m = _mm512_max_epi16(e, _mm512_srli_epi16(v, 8));
                    }
                    if (k3)
                        m = _mm512_max_epi16(m, _mm512_permutexvar_epi16(next, e));
                    if (clamp)
                        m = _mm512_min_epi16(_mm512_max_epi16(m, lo16), hi16);
                    _mm512_mask_storeu_epi8(yc + nout * ch, ms[ch],
                                            _mm512_castsi256_si512(_mm512_cvtepi16_epi8(m)));
                }
            }
        }
}

/* Narrow planes (out_w <= 15 at width 3, 16 at width 2: every window column inside 32
 * bytes from the first output's): mpz_body's steps on 256-bit vectors, AVX-512 VL.  Its
 * 64-byte loads cross a cache line wherever they start, and cost about twice these.
 * Wider rows stay with mpz_body (two such chunks per row gain nothing).  Its own
 * function: VL is not among T_AVX512's features, nor -mavx512bw's. */
#define MPZ_NARROW(k3) ((k3) ? 15 : 16)
#define T_AVX512VL __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))

T_AVX512VL static inline __attribute__((always_inline)) void
mpz_narrow_body(const OqciPool *p, const void *x, void *y, __mmask32 m0, __mmask16 ms, int s8,
                int k3, int clamp) {
    const int64_t plane = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w;
    const int64_t in_w = p->in_w, rstep = (int64_t)p->d_h * p->in_w;
    const int64_t span = (int64_t)(p->k_h - 1) * p->d_h;
    const int32_t in_h = p->in_h, out_h = p->out_h, out_w = p->out_w, k_h = p->k_h;
    const int32_t channels = p->channels, s_h = p->s_h, p_t = p->p_t, p_l = p->p_l;
    const int64_t batch = p->batch, cstride = p->out_ctotal, coff = p->out_coff;
    const __m256i fill = _mm256_set1_epi8(s8 ? (char)-128 : 0);
    const __m256i next = _mm256_setr_epi16(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15);
    const __m256i lo16 = _mm256_set1_epi16((short)p->lo), hi16 = _mm256_set1_epi16((short)p->hi);
    int64_t n;
    int32_t c, oh, i;
    for (n = 0; n < batch; n++)
        for (c = 0; c < channels; c++) {
            const uint8_t *xc = (const uint8_t *)x + (n * channels + c) * plane;
            uint8_t *yc = (uint8_t *)y + (n * cstride + coff + c) * opix;
            for (oh = 0; oh < out_h; oh++, yc += out_w) {
                int64_t ih0 = (int64_t)oh * s_h - p_t;
                int32_t nr = k_h;
                const uint8_t *rc = xc + ih0 * in_w - p_l;
                __m256i v, e, m;
                if (ih0 < 0 || ih0 + span >= in_h) {   /* the rows inside: i0 .. i1 - 1 */
                    int32_t i0, i1;
                    tap_range(ih0, p->d_h, in_h, k_h, &i0, &i1);
                    nr = i1 - i0;
                    rc += i0 * rstep;
                }
                v = _mm256_mask_loadu_epi8(fill, m0, rc);
                for (i = 1; i < nr; i++) {
                    __m256i a = _mm256_mask_loadu_epi8(fill, m0, rc + i * rstep);
                    v = s8 ? _mm256_max_epi8(v, a) : _mm256_max_epu8(v, a);
                }
                /* 16-bit lanes: output j's column 0 (e), 1 (the high byte), 2 (e of j + 1) */
                if (s8) {
                    e = _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8);
                    m = _mm256_max_epi16(e, _mm256_srai_epi16(v, 8));
                } else {
                    e = _mm256_and_si256(v, _mm256_set1_epi16(0x00FF));
                    m = _mm256_max_epi16(e, _mm256_srli_epi16(v, 8));
                }
                if (k3)
                    m = _mm256_max_epi16(m, _mm256_permutexvar_epi16(next, e));
                if (clamp)
                    m = _mm256_min_epi16(_mm256_max_epi16(m, lo16), hi16);
                _mm_mask_storeu_epi8(yc, ms, _mm256_cvtepi16_epi8(m));
            }
        }
}

/* maxpool_s2z for mpz_narrow. */
T_AVX512VL static void maxpool_s2n(const OqciPool *p, const void *x, void *y) {
    const int s8 = p->in_type == OQCI_S8, k3 = p->k_w == 3, clamp = mp_clamps(p);
    const __mmask32 m0 = (__mmask32)mpz_mask(-(int64_t)p->p_l, p->in_w);
    const __mmask16 ms = (__mmask16)(((uint32_t)1 << p->out_w) - 1);
#define MPN(S8, K3, CL) mpz_narrow_body(p, x, y, m0, ms, S8, K3, CL)
    if (clamp)   /* (s8 outputs: [-127, 127]) */
        s8 ? MPN(1, k3, 1) : MPN(0, k3, 1);
    else if (s8)
        k3 ? MPN(1, 1, 0) : MPN(1, 0, 0);
    else
        k3 ? MPN(0, 1, 0) : MPN(0, 0, 0);
#undef MPN
}

/* Whether maxpool_s2n serves p (maxpool_s2z_ok too): narrow, a CPU with VL (every
 * AVX-512 BW CPU so far has it). */
static int mpz_narrow(const OqciPool *p) {
    if (p->out_w > MPZ_NARROW(p->k_w == 3))
        return 0;
#if defined(__AVX512VL__)
    return 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vl") != 0;
#endif
}

T_AVX512 static void maxpool_s2z(const OqciPool *p, const void *x, void *y) {
    const int s8 = p->in_type == OQCI_S8, k3 = p->k_w == 3, nout = MPZ_OUT(k3);
    const int32_t nch = (p->out_w + nout - 1) / nout;
    const int clamp = mp_clamps(p);
    __mmask64 m0[MPZ_CHUNKS], ms[MPZ_CHUNKS];
    int32_t ch;
    for (ch = 0; ch < nch; ch++) {   /* chunk ch: outputs nout ch .., columns from c0 */
        int64_t c0 = 2 * (int64_t)nout * ch - p->p_l;
        int32_t no = p->out_w - nout * ch < nout ? p->out_w - nout * ch : nout;
        m0[ch] = mpz_mask(c0, p->in_w);
        ms[ch] = ((__mmask64)1 << no) - 1;
    }
#define MPZ(S8, K3, CL) mpz_body(p, x, y, m0, ms, nch, S8, K3, CL)
    if (clamp)   /* (rare: a max pool keeps its input's scale and range) */
        s8 ? MPZ(1, k3, 1) : MPZ(0, k3, 1);
    else if (s8)
        k3 ? MPZ(1, 1, 0) : MPZ(1, 0, 0);
    else
        k3 ? MPZ(0, 1, 0) : MPZ(0, 0, 0);
#undef MPZ
}

/* ---- AVX-512: 3x3 / stride 1 / pad 1 max pools on rows of at most 64 --------------------
 * (maxpool_same3_ok with in_w <= 64: GoogLeNet's branch pools, 28, 14 and 7 wide.)  One
 * vector per row: per output row, the three input rows loaded with a byte mask that keeps
 * the row's columns (the others, and the rows above and below the image, get the type's
 * smallest value: padding never wins), reduced by byte max; then each output's left and
 * right neighbours, the vector moved by one byte across its 128-bit lanes (valignq, then
 * vpalignr: the byte shifted in is the smallest value at column 0, and the masked one
 * past the row at column w - 1), and one masked store. */
T_AVX512 static inline __attribute__((always_inline)) void
mps3r_body(const OqciPool *p, const void *x, void *y, int s8, int clamp) {
    const int32_t w = p->in_w, h = p->in_h;
    const int64_t hw = (int64_t)h * w;
    const __mmask64 m = w == 64 ? ~(__mmask64)0 : ((__mmask64)1 << w) - 1;
    const __m512i fill = _mm512_set1_epi8(s8 ? (char)-128 : 0);
    const __m512i lo = _mm512_set1_epi8((char)p->lo), hi = _mm512_set1_epi8((char)p->hi);
    int64_t n;
    int32_t c, r;
#define MPS3_MAX(a, b) (s8 ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b))
    for (n = 0; n < p->batch; n++)
        for (c = 0; c < p->channels; c++) {
            const uint8_t *xc = (const uint8_t *)x + (n * p->channels + c) * hw;
            uint8_t *yc = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + c) * hw;
            __m512i above = fill, cur = _mm512_mask_loadu_epi8(fill, m, xc);
            for (r = 0; r < h; r++) {
                __m512i below = r + 1 < h ? _mm512_mask_loadu_epi8(fill, m, xc + (int64_t)(r + 1) * w)
                                          : fill;
                __m512i v = MPS3_MAX(MPS3_MAX(above, cur), below), l, rr;
                l = _mm512_alignr_epi8(v, _mm512_alignr_epi64(v, fill, 6), 15);
                rr = _mm512_alignr_epi8(_mm512_alignr_epi64(fill, v, 2), v, 1);
                v = MPS3_MAX(MPS3_MAX(v, l), rr);
                if (clamp)
                    v = s8 ? _mm512_min_epi8(_mm512_max_epi8(v, lo), hi)
                           : _mm512_min_epu8(_mm512_max_epu8(v, lo), hi);
                _mm512_mask_storeu_epi8(yc + (int64_t)r * w, m, v);
                above = cur;
                cur = below;
            }
        }
#undef MPS3_MAX
}

T_AVX512 static void maxpool_same3r(const OqciPool *p, const void *x, void *y) {
    const int s8 = p->in_type == OQCI_S8;
    const int clamp = mp_clamps(p);
    if (clamp)
        s8 ? mps3r_body(p, x, y, 1, 1) : mps3r_body(p, x, y, 0, 1);
    else
        s8 ? mps3r_body(p, x, y, 1, 0) : mps3r_body(p, x, y, 0, 0);
}
#endif

int oqci_maxpool(const OqciPool *p, const void *x, void *y) {
    if (!pool_ok(p, x, y) || p->out_type == OQCI_S32 ||
        (p->requant && !oqci_requant_ok(&p->rq, 0, 0)))
        return OQCI_EINVAL;
#if HAVE_AVX512
    if (maxpool_s2z_ok(p) && oqci_use_avx512()) {
        if (mpz_narrow(p))
            maxpool_s2n(p, x, y);
        else
            maxpool_s2z(p, x, y);
        return OQCI_OK;
    }
    if (maxpool_same3_ok(p) && p->in_w <= 64 && oqci_use_avx512()) {
        maxpool_same3r(p, x, y);
        return OQCI_OK;
    }
#endif
#if HAVE_AVX2
    if (maxpool_same3_ok(p) && oqci_use_avx2()) {
        maxpool_same3_avx2(p, x, y);
        return OQCI_OK;
    }
    if ((((p->k_w == 2 || p->k_w == 3) && p->s_w == 2) || (p->k_w <= 32 && p->s_w == 1)) &&
        p->d_w == 1 && p->k_h <= 64 && oqci_use_avx2()) {
        uint8_t lut[256];
        if (p->requant) {   /* every possible max, biased by 128 for s8 inputs */
            int32_t v, b = p->in_type == OQCI_S8 ? 128 : 0;
            for (v = 0; v < 256; v++)
                lut[v] = (uint8_t)oqci_requant(v - b, &p->rq, 0, p->lo, p->hi);
        }
        maxpool_avx2(p, x, y, p->requant ? lut : NULL);
        return OQCI_OK;
    }
#endif
    pool_run(p, x, y, 0);
    return OQCI_OK;
}

int oqci_avgpool(const OqciPool *p, const void *x, void *y) {
    int64_t taps;
    if (!pool_ok(p, x, y))
        return OQCI_EINVAL;
    taps = (int64_t)p->k_h * p->k_w;
    if (taps > INT32_MAX / 255)
        return OQCI_EINVAL;
    /* entries that can be used: k_h * k_w alone with count_include_pad, else 1..k_h*k_w
     * (none with accumulator outputs) */
    if (p->out_type != OQCI_S32 &&
        !oqci_requant_ok(&p->rq, p->count_include_pad ? taps : 1, taps))
        return OQCI_EINVAL;
#if HAVE_AVX2
    if (p->out_h == 1 && p->out_w == 1 && p->k_h == p->in_h && p->k_w == p->in_w &&
        p->p_t == 0 && p->p_l == 0 && p->d_h == 1 && p->d_w == 1 && oqci_use_avx2()) {
        gavgpool_avx2(p, x, y);
        return OQCI_OK;
    }
#endif
    pool_run(p, x, y, 1);
    return OQCI_OK;
}
