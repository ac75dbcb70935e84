/* oqci_conv_neon.c - the Arm dot-product family of the INT8 conv (AArch64 with
 * __ARM_FEATURE_DOTPROD): oqcik_family_neondot for the SIMD GEMM (oqci_conv_gemm.c), with
 * plain-C transposes, strided copies and epilogue, and the depthwise kernels on
 * zero-padded int16 planes split by stride phase (oqcik_conv_dw__neondot: conv_dw with
 * q8dw_1xN__c, the plain-C loop over taps; 8-bit outputs only: depthwise convs with
 * accumulator outputs go through the GEMM, whose epilogue store_tile__c writes both).
 *   - Arm dot product (q8conv_4x16c4__neondot): sdot takes s8 x s8: s8 inputs as they
 *     are, u8 inputs x packed as x - 128 (xor 0x80) and 128 * sum_k w[k] added back.
 *     The corrections are computed once per call per channel (out_c x kpad additions)
 *     and added modulo 2^32 (exact: the corrected sum fits int32), or in int64 for
 *     reductions deeper than OQCI_KCHUNK. */
#include "oqci_conv_int.h"

const char OQCIK_CFG(neon) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_NEONDOT

static void gather__c(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                      uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r, t;
    for (r = 0; r < rows; r++, src += sstep, dst += dstep)
        for (t = 0; t < n; t++)
            dst[t] = src[(int64_t)t * stride];
}

/* Byte transposes in plain C: u8 / s8 unchanged, or with the top bit flipped (x ^ 0x80:
 * u8 x -> s8 x - 128, s8 x -> u8 x + 128). */
static void tr4_b__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                     const uint8_t *r3, int32_t len, void *dst, uint8_t flip) {
    uint8_t *d = (uint8_t *)dst;
    int32_t t;
    for (t = 0; t < len; t++) {
        d[4 * t] = (uint8_t)(r0[t] ^ flip);
        d[4 * t + 1] = (uint8_t)(r1[t] ^ flip);
        d[4 * t + 2] = (uint8_t)(r2[t] ^ flip);
        d[4 * t + 3] = (uint8_t)(r3[t] ^ flip);
    }
}

static void store_tile__c(const OqciConv *p, const int32_t *t, int32_t ldt, int32_t k0,
                          int32_t nk, const int32_t *corr, int bias_done, const Seg *segs,
                          int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int32_t r;
    for (r = 0; r < nk; r++) {
        int32_t k = k0 + r;
        int64_t b = !bias_done && p->bias ? p->bias[k] : 0;
        int si;
        for (si = 0; si < nseg; si++) {
            const Seg *s = &segs[si];
            int64_t o = (s->n * p->out_ctotal + p->out_coff + k) * pix + s->pix0;
            int32_t e;
            for (e = 0; e < s->len; e++) {
                int64_t v = (int32_t)((uint32_t)t[(size_t)r * ldt + s->off + e] +
                                      (uint32_t)(corr ? corr[r] : 0));   /* exact mod 2^32 */
                put_q(p, y, o + e, rq1(p, sat32(v + b), k));
            }
        }
    }
}

/* ---- depthwise: zero-padded 16-bit planes split by stride phase -------------------- */

/* One phase row of width elements: row[e] = x (int16) at src[(e - e0) * stride] for e in
 * [e0, e1), 0 elsewhere. */
typedef void (*DwFillFn)(const uint8_t *src, int32_t stride, int32_t e0, int32_t e1,
                         int32_t width, int u8, int16_t *row);

/* Fills the plane of input channel xc: element (ph, r, e) = x[r - p_t][e * s_w + ph -
 * p_l], 0 outside the input. */
static void dw_fill(const OqciConv *p, const DwGeo *d, const uint8_t *xc, int16_t *plane,
                    DwFillFn fill) {
    int32_t ph, r, u8 = p->in_type == OQCI_U8;
    for (ph = 0; ph < d->phases; ph++) {
        /* e is inside the input for iw = e * s_w + ph - p_l in [0, in_w) */
        int32_t e0 = cdiv(p->p_l - ph, p->s_w), e1 = cdiv(p->in_w + p->p_l - ph, p->s_w);
        e0 = e0 < 0 ? 0 : e0 > d->width ? d->width : e0;
        e1 = e1 < e0 ? e0 : e1 > d->width ? d->width : e1;
        for (r = 0; r < d->rows; r++) {
            int16_t *row = plane + ((int64_t)ph * d->rows + r) * d->width;
            int32_t ih = r - p->p_t;
            if (ih < 0 || ih >= p->in_h)
                fill(xc, 1, 0, 0, d->width, u8, row);
            else
                fill(xc + (int64_t)ih * p->in_w + (int64_t)e0 * p->s_w + ph - p->p_l, p->s_w,
                     e0, e1, d->width, u8, row);
        }
    }
}

/* Depthwise rows: for r < nrows, out[r * ostride + e] (e < n, a multiple of DW_VEC) =
 * sum over taps t of base[r * bstride + off[t] + e] * w[t].  Rows are written in order
 * and each may write up to DW_VEC - 1 sums past n, which a next row overwrites. */
typedef void (*DwRowFn)(const int16_t *base, int64_t bstride, const int64_t *off,
                        const int8_t *w, int32_t taps, int32_t nrows, int32_t n, int32_t *out,
                        int32_t ostride);

/* Requantizes n consecutive sums t of channel k (bias added here) into y at dst. */
typedef void (*DwStoreFn)(const OqciConv *p, const int32_t *t, int32_t n, int32_t k,
                          void *dst);

static void dw_fill__c(const uint8_t *src, int32_t stride, int32_t e0, int32_t e1,
                       int32_t width, int u8, int16_t *row) {
    int32_t e;
    for (e = 0; e < e0; e++)
        row[e] = 0;
    for (e = e0; e < e1; e++) {
        uint8_t b = src[(int64_t)(e - e0) * stride];
        row[e] = u8 ? (int16_t)b : (int16_t)(int8_t)b;
    }
    for (e = e1; e < width; e++)
        row[e] = 0;
}

static void q8dw_1xN__c(const int16_t *base, int64_t bstride, const int64_t *off, const int8_t *w,
                    int32_t taps, int32_t nrows, int32_t n, int32_t *out, int32_t ostride) {
    int32_t r, e, t;
    for (r = 0; r < nrows; r++, base += bstride, out += ostride) {
        for (e = 0; e < n; e++)
            out[e] = 0;
        for (t = 0; t < taps; t++) {
            const int16_t *src = base + off[t];
            int32_t wt = w[t];
            for (e = 0; e < n; e++)
                out[e] += src[e] * wt;
        }
    }
}

static void dw_store__c(const OqciConv *p, const int32_t *t, int32_t n, int32_t k, void *dst) {
    int64_t b = p->bias ? p->bias[k] : 0;
    int32_t e;
    for (e = 0; e < n; e++)
        put_q(p, dst, e, rq1(p, sat32(t[e] + b), k));
}

/* One input channel per group: out_c / group outputs per input plane.  Whole output
 * rows are computed into buf back to back, as many as it holds, then requantized and
 * stored with one call (rows wider than buf go in pieces). */
static void conv_dw(const OqciConv *p, const void *x, void *y, void *scratch, DwFillFn fill,
                    DwRowFn rowk, DwStoreFn store) {
    DwGeo d;
    int16_t *plane = (int16_t *)align_up(scratch);
    int64_t off[DW_MAX_TAPS], n, plane_in = (int64_t)p->in_h * p->in_w;
    int64_t pix = (int64_t)p->out_h * p->out_w, bstride;
    int32_t kg = p->out_c / p->group, g, i, j;
    int32_t wr = (int32_t)round_up(p->out_w, DW_VEC);
    int32_t buf[DW_BUF + TILE_NR];   /* + TILE_NR: the epilogue reads whole vectors */
    /* rows per call (whole rows) or, for rows wider than buf, outputs per piece */
    int32_t rows = wr <= DW_BUF ? (DW_BUF - wr) / p->out_w + 1 : 0;
    dw_geo(p, &d);
    bstride = (int64_t)p->s_h * d.width;
    for (i = 0; i < p->k_h; i++)
        for (j = 0; j < p->k_w; j++)
            off[i * p->k_w + j] = dw_tap_off(p, &d, i, j);
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            int32_t kk;
            dw_fill(p, &d, (const uint8_t *)x + (n * p->in_c + g) * plane_in, plane, fill);
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, ow;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * pix;
                if (rows) {
                    for (oh = 0; oh < p->out_h; oh += rows) {
                        int32_t nr = p->out_h - oh < rows ? p->out_h - oh : rows;
                        rowk(plane + oh * bstride, bstride, off, w, d.taps, nr, wr, buf,
                             p->out_w);
                        store(p, buf, nr * p->out_w, k, yk + (int64_t)oh * p->out_w);
                    }
                    continue;
                }
                for (oh = 0; oh < p->out_h; oh++)
                    for (ow = 0; ow < p->out_w; ow += DW_BUF) {
                        int32_t len = p->out_w - ow < DW_BUF ? p->out_w - ow : DW_BUF;
                        rowk(plane + oh * bstride + ow, bstride, off, w, d.taps, 1,
                             (int32_t)round_up(len, DW_VEC), buf, 0);
                        store(p, buf, len, k, yk + (int64_t)oh * p->out_w + ow);
                    }
            }
        }
}

/* oqci_conv's depthwise path on Arm: conv_dw with the plain-C plane fill, rows and
 * store. */
void oqcik_conv_dw__neondot(const OqciConv *p, const void *x, void *y, void *scratch) {
    conv_dw(p, x, y, scratch, dw_fill__c, q8dw_1xN__c, dw_store__c);
}

/* s8 inputs as they are, u8 inputs - 128: the operands of sdot. */
static void tr4_s8_s8__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                         const uint8_t *r3, int32_t len, void *dst) {
    tr4_b__c(r0, r1, r2, r3, len, dst, 0);
}
static void tr4_s8_u8__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                         const uint8_t *r3, int32_t len, void *dst) {
    tr4_b__c(r0, r1, r2, r3, len, dst, 0x80);
}

#define ACC4N(X) X(0) X(1) X(2) X(3)

/* (a dispatch build compiles the dot-product instructions for this function only) */
#if OQCI_ARM_DISPATCH
__attribute__((target("arch=armv8.2-a+dotprod")))
#endif
static void q8conv_4x16c4__neondot(int32_t nq, const void *panel, const int8_t *const *w,
                                   int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const int8_t *pp = (const int8_t *)panel;
#define DECL(r)                                                                         \
    int32x4_t a##r##0 = vdupq_n_s32(0), a##r##1 = vdupq_n_s32(0), a##r##2 = vdupq_n_s32(0), \
              a##r##3 = vdupq_n_s32(0);
    ACC4N(DECL)
#undef DECL
    int32_t q;
    for (q = 0; q < nq; q++, pp += 64) {
        int8x16_t p0 = vld1q_s8(pp), p1 = vld1q_s8(pp + 16), p2 = vld1q_s8(pp + 32),
                  p3 = vld1q_s8(pp + 48);
#define STEP(r)                                                                         \
    {                                                                                   \
        int8x16_t wb = vreinterpretq_s8_s32(vdupq_n_s32(load32(w[r] + 4 * q)));         \
        a##r##0 = vdotq_s32(a##r##0, p0, wb);                                           \
        a##r##1 = vdotq_s32(a##r##1, p1, wb);                                           \
        a##r##2 = vdotq_s32(a##r##2, p2, wb);                                           \
        a##r##3 = vdotq_s32(a##r##3, p3, wb);                                           \
    }
        ACC4N(STEP)
#undef STEP
    }
#define ST(o, v) vst1q_s32(t + (o), acc ? vaddq_s32(vld1q_s32(t + (o)), v) : v);
#define STORE(r)                                                                        \
    if (r < nk) {                                                                       \
        ST(r * TILE_NR, a##r##0) ST(r * TILE_NR + 4, a##r##1) ST(r * TILE_NR + 8, a##r##2) \
        ST(r * TILE_NR + 12, a##r##3)                                                   \
    }
    ACC4N(STORE)
#undef STORE
#undef ST
}

const Family oqcik_family_neondot = {
    .isa = OQCI_ISA_NEONDOT,
    .mr = 4,
    .nr = 16,
    .esize = 1,
    .kbq = KBQ(16, 1),
    .flip = OQCI_U8,
    .ukr = q8conv_4x16c4__neondot,
    .tr4 = {tr4_s8_s8__c, tr4_s8_u8__c},
    .gather = gather__c,
    .store = store_tile__c,
};
#endif
