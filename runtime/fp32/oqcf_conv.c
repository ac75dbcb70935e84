/* oqcf_conv.c - ONNX Conv on NC<spatial> FP32 tensors (see oqcf_nn.h).
 *
 * Design: every geometry is normalised to three spatial axes (D, H, W), missing leading
 * axes having extent 1, so 1-D, 2-D and 3-D share one code path.  Then, per image and
 * group, the convolution is one SGEMM:
 *
 *     Y[k][p] = act(sum_q W[k][q] * X_col[q][p] + bias[k])
 *     k: output channel of the group (M = K/group), p: output position (N = OD*OH*OW),
 *     q = (c, kd, kh, kw): input channel of the group and kernel tap (K = C/group * taps)
 *
 * X_col (the im2col matrix) is never built.  1-D and 2-D convs take the flat-offset
 * path (see "flat-offset conv" below): the input is copied once into zero-padded
 * planes split by stride phase, where each row of X_col is one contiguous run that the
 * SGEMM reads in place (OqcfSgemmB rows), computing a band of output rows padded to
 * the planes' row pitch, whose real columns are then copied out.  A 1x1 / stride-1 /
 * unpadded conv's X_col is the input itself (rows: the input channels).  3-D convs
 * (and 2-D ones given only the SGEMM's scratch) use conv_pack_b(), a B packer that
 * writes the packed panels straight from the image, row k of X_col at a time, as runs
 * of output columns that share an output row, with zeros for the padding.
 * Depthwise conv (group == C == K) is a direct kernel: oqcf_conv_dw.c.
 *
 * Bias and activation (one for all channels or one per channel) are applied in the
 * SGEMM epilogue, or at the end of each output row for depthwise.  Channel views only
 * change the base pointers: image n's channel c of the view is at plane
 * n * ctotal + coff + c of the buffer. */
#include "oqcf_nn.h"   /* (the API this file implements; NAME.c of the emitted code includes it) */
#include "oqcf_conv_int.h"

#include <string.h>

/* Fills g from p; 0 if the geometry is inconsistent. */
static int make_geo(const OqcfConvParams *p, Geo *g) {
    int ns = p->nspatial, off = 3 - ns;
    if (ns < 1 || ns > OQCF_MAX_SPATIAL)
        return 0;
    for (int a = 0; a < 3; a++) {
        g->in[a] = g->out[a] = g->ker[a] = g->str[a] = g->dil[a] = 1;
        g->pad[a] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int a = off + i;
        g->in[a] = p->in_size[i];
        g->out[a] = p->out_size[i];
        g->ker[a] = p->kernel[i];
        g->str[a] = p->stride[i];
        g->dil[a] = p->dilation[i];
        g->pad[a] = p->pad_begin[i];
        if (p->in_size[i] < 1 || p->kernel[i] < 1 || p->stride[i] < 1 || p->dilation[i] < 1 ||
            p->pad_begin[i] < 0 || p->pad_end[i] < 0)
            return 0;
        int64_t span = p->in_size[i] + p->pad_begin[i] + p->pad_end[i] -
                       p->dilation[i] * (p->kernel[i] - 1) - 1;
        if (span < 0 || p->out_size[i] != span / p->stride[i] + 1)
            return 0;
    }
    g->in_plane = g->in[0] * g->in[1] * g->in[2];
    g->out_plane = g->out[0] * g->out[1] * g->out[2];
    g->taps = g->ker[0] * g->ker[1] * g->ker[2];
    return 1;
}

/* ---- implicit im2col packer ---------------------------------------------------------- */

#define KW_TABLE 16   /* kernel widths whose column ranges are precomputed */

/* B packer context: one image, one group. */
typedef struct ConvB {
    const Geo *g;               /* geometry */
    const float *x;             /* the group's first input channel */
    int64_t cstride;            /* floats between input channels (= in_plane) */
    int64_t wlo[KW_TABLE];      /* per kernel column kw < KW_TABLE: output columns */
    int64_t whi[KW_TABLE];      /*   [wlo, whi) read inside the input row */
} ConvB;

/* Write position in one packed row k: column q of panel d (panels pstride apart). */
typedef struct Cursor {
    float *d;          /* row k of the current panel */
    int q;             /* column within the panel */
    int nr;            /* panel width */
    int64_t pstride;   /* floats from one panel to the next (kc * nr) */
} Cursor;

/* Appends n zeros, or n input values src[0], src[sw], ... if src is not NULL. */
static inline void put(Cursor *cu, const float *src, int64_t sw, int64_t n) {
    while (n > 0) {
        int m = cu->nr - cu->q;
        if (m > n)
            m = (int)n;
        float *d = cu->d + cu->q;
        if (!src) {
            for (int j = 0; j < m; j++)
                d[j] = 0.0f;
        } else if (sw == 1) {
            copy_run(d, src, m);
            src += m;
        } else {
            for (int j = 0; j < m; j++)
                d[j] = src[j * sw];
            src += m * sw;
        }
        n -= m;
        cu->q += m;
        if (cu->q == cu->nr) {
            cu->q = 0;
            cu->d += cu->pstride;
        }
    }
}

/* Packs the block row by row of X_col: for each k = (c, kd, kh, kw), the block's
 * columns are walked output row by output row, each row one contiguous (stride 1) or
 * strided read of the input with zeros for the padding, split at panel boundaries.
 * Input rows are read sequentially, and the tap logic runs once per output row. */
static void conv_pack_b(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                        int nr, float *dst) {
    const ConvB *cb = ctx;
    const Geo *g = cb->g;
    const int64_t OW = g->out[2], OH = g->out[1], W = g->in[2], H = g->in[1];
    const int64_t sw = g->str[2], npanel = (nc + nr - 1) / nr;
    const int64_t ow0 = j0 % OW, oh0 = (j0 / OW) % OH, od0 = j0 / (OW * OH);
    int64_t kw = k0 % g->ker[2], kh = (k0 / g->ker[2]) % g->ker[1];
    int64_t kd = (k0 / (g->ker[2] * g->ker[1])) % g->ker[0], c = k0 / g->taps;
    for (int64_t k = 0; k < kc; k++) {
        Cursor cu = {dst + k * nr, 0, nr, kc * nr};
        const float *xc = cb->x + c * cb->cstride;
        int64_t woff = kw * g->dil[2] - g->pad[2], wlo, whi;
        if (kw < KW_TABLE) {
            wlo = cb->wlo[kw];
            whi = cb->whi[kw];
        } else {
            valid_range(woff, sw, W, OW, &wlo, &whi);
        }
        int64_t od = od0, oh = oh0, ow = ow0;
        for (int64_t left = nc; left > 0;) {
            int64_t len = OW - ow < left ? OW - ow : left;
            int64_t id = od * g->str[0] - g->pad[0] + kd * g->dil[0];
            int64_t ih = oh * g->str[1] - g->pad[1] + kh * g->dil[1];
            int64_t a = wlo - ow, b = whi - ow;   /* columns of the run inside the input */
            a = a < 0 ? 0 : (a > len ? len : a);
            b = b < a ? a : (b > len ? len : b);
            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= H)
                a = b = len;
            put(&cu, NULL, 0, a);
            if (b > a)
                put(&cu, xc + (id * H + ih) * W + (ow + a) * sw + woff, sw, b - a);
            put(&cu, NULL, 0, len - b);
            left -= len;
            ow = 0;
            if (++oh == OH) {
                oh = 0;
                od++;
            }
        }
        put(&cu, NULL, 0, npanel * nr - nc);
        if (++kw == g->ker[2]) {
            kw = 0;
            if (++kh == g->ker[1]) {
                kh = 0;
                if (++kd == g->ker[0]) {
                    kd = 0;
                    c++;
                }
            }
        }
    }
}

/* ---- flat-offset conv (1-D and 2-D) ------------------------------------------------ */

/* The input of one group is copied once into zero-padded planes split by phase modulo
 * the strides: plane (rh, rw) of channel c holds padded pixel (rh + sh i, rw + sw j) at
 * row i, column j, rows R floats apart.  An output pixel (oh, ow) then reads tap
 * (kh, kw) at a fixed offset from the flat index p = oh * R + ow:
 *
 *     X_col[(c, kh, kw)][p] = Xs[off(c, kh, kw) + p],
 *     off = c * cstride + plane(kh dh % sh, kw dw % sw) + (kh dh / sh) R + kw dw / sw,
 *
 * so every row of X_col is one contiguous run, which the SGEMM reads in place (its
 * rows mode: no packing).
 * The columns p = oh * R + ow with ow >= OW are junk (they read past the row's data),
 * so the product is computed into a band of padded output rows (Kg x rows x R) and the
 * OW real columns of each row are copied out.  The junk costs R / OW - 1 more columns
 * (3.5% at 56 wide, 14% at 14, 29% at 7 - where the unpadded N = 49 is no better off:
 * it rounds up to 64 columns of 16-wide panels).  Bands keep the padded output about
 * L2-sized; each band is one oqcf_sgemm_ex call. */

#define FLAT_MAX_STRIDE 8         /* larger strides take the implicit packer */
#define FLAT_BAND_FLOATS 65536    /* target size of the padded output band */

/* Flat-offset geometry of one conv call. */
typedef struct Flat {
    int64_t R;         /* row pitch of the phase planes and of the output band */
    int64_t Hq;        /* rows of one phase plane */
    int64_t plane;     /* floats of one phase plane (Hq * R) */
    int64_t cstride;   /* floats per input channel (str[1] * str[2] planes) */
    int64_t xs;        /* floats of the split input of one group, slack included */
    int64_t band;      /* output rows per band */
    int64_t yb;        /* floats of the output band buffer (Kg * band * R) */
} Flat;

static int flat_geo(const Geo *g, int64_t Cg, int64_t Kg, Flat *f) {
    const int64_t sh = g->str[1], sw = g->str[2];
    if (g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1 || sh > FLAT_MAX_STRIDE ||
        sw > FLAT_MAX_STRIDE)
        return 0;   /* 3-D: the implicit packer */
    f->R = g->out[2] + (g->ker[2] - 1) * g->dil[2] / sw;
    f->Hq = g->out[1] + (g->ker[1] - 1) * g->dil[1] / sh;
    f->plane = f->Hq * f->R;
    f->cstride = sh * sw * f->plane;
    /* The junk columns of the last output rows read up to R - OW floats past the last
     * plane of the last channel: a zeroed slack of R. */
    f->xs = (Cg * f->cstride + f->R + 15) / 16 * 16;
    f->band = FLAT_BAND_FLOATS / (Kg * f->R);
    f->band = f->band < 1 ? 1 : (f->band > g->out[1] ? g->out[1] : f->band);
    f->yb = (Kg * f->band * f->R + 15) / 16 * 16;
    return 1;
}

/* Byte offsets of the flat path's scratch parts (each 64-byte aligned from the aligned
 * base): the row offsets of X_col (Kdim int64), the split input, the output band, the
 * SGEMM's scratch; *total is the bytes needed, alignment slack of the base included. */
static void flat_layout(const Flat *f, int64_t kdim, size_t sgemm, size_t *o_xs,
                        size_t *o_yb, size_t *o_gemm, size_t *total) {
    *o_xs = ((size_t)kdim * sizeof(int64_t) + 63) / 64 * 64;
    *o_yb = *o_xs + (size_t)f->xs * sizeof(float);
    *o_gemm = *o_yb + (size_t)f->yb * sizeof(float);
    *total = *o_gemm + sgemm + 64;
}

/* Copying one group's input into the split planes, in parallel over channels. */
typedef struct FlatSplit {
    const Geo *g;                        /* geometry */
    const Flat *f;                       /* flat geometry */
    const float *xg;                     /* the group's first input channel */
    float *xs;                           /* the split planes */
    Gather2Fn gather2;                   /* stride-2 column gather */
    int usedh[FLAT_MAX_STRIDE];          /* row phases some tap reads */
    int usedw[FLAT_MAX_STRIDE];          /* column phases some tap reads */
    int64_t lo[FLAT_MAX_STRIDE];         /* per column phase: data columns [lo, hi) */
    int64_t hi[FLAT_MAX_STRIDE];
} FlatSplit;

static void flat_split_init(FlatSplit *S, const Geo *g, const Flat *f, float *xs,
                            Gather2Fn gather2) {
    const int64_t sh = g->str[1], sw = g->str[2];
    S->g = g;
    S->f = f;
    S->xg = NULL;
    S->xs = xs;
    S->gather2 = gather2;
    for (int r = 0; r < FLAT_MAX_STRIDE; r++)
        S->usedh[r] = S->usedw[r] = 0;
    for (int64_t kh = 0; kh < g->ker[1]; kh++)
        S->usedh[kh * g->dil[1] % sh] = 1;
    for (int64_t kw = 0; kw < g->ker[2]; kw++)
        S->usedw[kw * g->dil[2] % sw] = 1;
    for (int64_t rw = 0; rw < sw; rw++)
        valid_range(rw - g->pad[2], sw, g->in[2], f->R, &S->lo[rw], &S->hi[rw]);
}

/* Copies the data of input channels [c0, c1) (channel c at xg + c * in_plane) into the
 * split planes; the padding is already zero (xs is cleared once per call). */
static void flat_split_fn(void *ctx, int64_t c0, int64_t c1, int tid) {
    const FlatSplit *S = ctx;
    const Geo *g = S->g;
    const Flat *f = S->f;
    const int64_t sh = g->str[1], sw = g->str[2], H = g->in[1], W = g->in[2];
    const int64_t *lo = S->lo, *hi = S->hi;
    float *xs = S->xs;
    (void)tid;
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = S->xg + c * g->in_plane;
        for (int64_t rh = 0; rh < sh; rh++) {
            if (!S->usedh[rh])
                continue;
            int64_t ilo, ihi;   /* plane rows holding input rows */
            valid_range(rh - g->pad[1], sh, H, f->Hq, &ilo, &ihi);
            for (int64_t rw = 0; rw < sw; rw++) {
                int64_t n = hi[rw] - lo[rw];
                if (!S->usedw[rw] || n <= 0)
                    continue;
                float *pl = xs + c * f->cstride + (rh * sw + rw) * f->plane + lo[rw];
                for (int64_t i = ilo; i < ihi; i++) {
                    const float *s = xc + (rh + sh * i - g->pad[1]) * W + lo[rw] * sw + rw -
                                     g->pad[2];
                    float *o = pl + i * f->R;
                    copy_strided(o, s, n, sw, S->gather2);
                }
            }
        }
    }
}

/* Copying the OW real columns of each padded row of an output band to y, in parallel
 * over output channels. */
typedef struct FlatOut {
    const float *yb;    /* the band: Kg rows of N floats */
    float *yg;          /* the group's first output channel */
    int64_t N;          /* floats per channel in the band (rows * R) */
    int64_t R;          /* row pitch of the band */
    int64_t OW;         /* real columns per row */
    int64_t rows;       /* rows in the band */
    int64_t oh0;        /* the band's first output row */
    int64_t plane;      /* floats per output channel of y */
} FlatOut;

static void flat_out_fn(void *ctx, int64_t k0, int64_t k1, int tid) {
    const FlatOut *O = ctx;
    (void)tid;
    for (int64_t k = k0; k < k1; k++)
        for (int64_t r = 0; r < O->rows; r++) {
            const float *s = O->yb + k * O->N + r * O->R;
            float *o = O->yg + k * O->plane + (O->oh0 + r) * O->OW;
            if (O->OW <= 32)
                copy_run(o, s, O->OW);
            else
                memcpy(o, s, (size_t)O->OW * sizeof(float));
        }
}

/* ---- driver ---------------------------------------------------------------------- */

static int is_depthwise(const OqcfConvParams *p) {
    return p->group == p->channels && p->group == p->out_channels;
}

static int is_pointwise(const Geo *g) {
    for (int a = 0; a < 3; a++)
        if (g->ker[a] != 1 || g->str[a] != 1 || g->pad[a] != 0 || g->in[a] != g->out[a])
            return 0;
    return 1;
}

/* Epilogue of group gi: bias and activation per output channel of the group. */
static OqcfSgemmEpilogue group_epi(const OqcfConvParams *p, const float *bias, int64_t gi,
                                   int64_t Kg) {
    OqcfSgemmEpilogue epi = {OQCF_PER_NONE, NULL, OQCF_PER_NONE, NULL};
    if (bias) {
        epi.bias_per = OQCF_PER_ROW;
        epi.bias = bias + gi * Kg;
    }
    if (p->act_per_channel) {
        epi.act_per = OQCF_PER_ROW;
        epi.act = p->act_per_channel + gi * Kg;
    } else if (p->act.kind != OQCF_ACT_NONE) {
        epi.act_per = OQCF_PER_ALL;
        epi.act = &p->act;
    }
    return epi;
}

/* The flat-offset path (see above).  scratch is laid out by flat_layout(); gsz is what
 * is left for the SGEMM at o_gemm. */
static int conv_flat(OqcfPool *pool, const OqcfConvParams *p, const Geo *g, const Flat *f,
                     const float *x, const float *w, const float *bias, float *y,
                     void *scratch, size_t gsz, size_t o_xs, size_t o_yb, size_t o_gemm) {
    const int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    const int64_t Kdim = Cg * g->taps, OH = g->out[1], OW = g->out[2], R = f->R;
    const int64_t sh = g->str[1], sw = g->str[2];
    const int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    const int64_t yct = p->y_ctotal ? p->y_ctotal : p->out_channels;
    char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    int64_t *koff = (int64_t *)base;
    float *xs = (float *)(base + o_xs), *yb = (float *)(base + o_yb);
    void *gs = base + o_gemm;
    Gather2Fn gather2 = oqcfk_gather2__c;
#if OQCF_CONV_X86
    if (oqcf_sgemm_isa() != OQCF_ISA_PORTABLE)
        gather2 = oqcfk_gather2__avx2;
#endif
    for (int64_t kh = 0; kh < g->ker[1]; kh++)   /* channel 0's taps, then the others */
        for (int64_t kw = 0; kw < g->ker[2]; kw++) {
            int64_t dh = kh * g->dil[1], dw = kw * g->dil[2];
            koff[kh * g->ker[2] + kw] =
                (dh % sh * sw + dw % sw) * f->plane + dh / sh * R + dw / sw;
        }
    for (int64_t k = g->taps; k < Kdim; k++)
        koff[k] = koff[k - g->taps] + f->cstride;
    memset(xs, 0, (size_t)f->xs * sizeof(float));   /* padding and slack, once */
    FlatSplit S;
    flat_split_init(&S, g, f, xs, gather2);
    OqcfPool *split_pool = oqcf_pool_for_work(pool, (double)Cg * g->in_plane);
    for (int64_t n = 0; n < p->batch; n++) {
        for (int64_t gi = 0; gi < p->group; gi++) {
            const float *xg = x + (n * xct + p->x_coff + gi * Cg) * g->in_plane;
            float *yg = y + (n * yct + p->y_coff + gi * Kg) * g->out_plane;
            OqcfSgemmEpilogue epi = group_epi(p, bias, gi, Kg);
            S.xg = xg;
            oqcf_parallel_for(split_pool, Cg, flat_split_fn, &S);
            for (int64_t oh0 = 0; oh0 < OH; oh0 += f->band) {
                int64_t nb = OH - oh0 < f->band ? OH - oh0 : f->band, N = nb * R;
                OqcfSgemmB src = {NULL, NULL, xs + oh0 * R, koff};
                /* No junk columns (R == OW, e.g. a strided 1x1): straight into y. */
                int direct = R == OW;
                int st = oqcf_sgemm_ex(pool, 0, Kg, N, Kdim, 1.0f, w + gi * Kg * Kdim, Kdim,
                                       &src, 0.0f, direct ? yg + oh0 * OW : yb,
                                       direct ? g->out_plane : N, &epi, gs, gsz);
                if (st != OQCF_OK)
                    return st;
                if (!direct) {   /* the OW real columns of each row */
                    FlatOut O = {yb, yg, N, R, OW, nb, oh0, g->out_plane};
                    oqcf_parallel_for(oqcf_pool_for_work(pool, (double)Kg * nb * OW), Kg,
                                      flat_out_fn, &O);
                }
            }
        }
    }
    return OQCF_OK;
}

/* A 1x1 conv's X_col is the input itself: the SGEMM reads its rows in place (rows mode,
 * row k at xg + k * plane) after koff, Cg offsets at the start of the scratch. */
static size_t pointwise_koff_bytes(int64_t Cg) {
    return ((size_t)Cg * sizeof(int64_t) + 63) / 64 * 64 + 64;
}

size_t oqcf_conv_scratch_size(const OqcfConvParams *p, int nthreads) {
    Geo g;
    if (!p || !make_geo(p, &g) || p->group < 1)
        return 0;
    if (is_depthwise(p))   /* (optional: see oqcf_conv) */
        return oqcfk_dw_scratch(&g, nthreads);
    const int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    Flat f;
    if (!is_pointwise(&g) && flat_geo(&g, Cg, Kg, &f)) {
        size_t o_xs, o_yb, o_gemm, total;
        flat_layout(&f, Cg * g.taps,
                    oqcf_sgemm_scratch_size(Kg, f.band * f.R, Cg * g.taps, nthreads), &o_xs,
                    &o_yb, &o_gemm, &total);
        return total;
    }
    size_t gemm = oqcf_sgemm_scratch_size(Kg, g.out_plane, Cg * g.taps, nthreads);
    if (is_pointwise(&g) && gemm)   /* + the row offsets of the rows mode */
        return pointwise_koff_bytes(Cg) + gemm;
    return gemm;
}

int oqcf_conv(OqcfPool *pool, const OqcfConvParams *p, const float *x, const float *w,
              const float *bias, float *y, void *scratch, size_t scratch_size) {
    Geo g;
    if (!p || !make_geo(p, &g) || p->batch < 0 || p->channels < 1 || p->out_channels < 1 ||
        p->group < 1 || p->channels % p->group || p->out_channels % p->group)
        return OQCF_EINVAL;
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t yct = p->y_ctotal ? p->y_ctotal : p->out_channels;
    if (p->x_coff < 0 || p->x_coff + p->channels > xct || p->y_coff < 0 ||
        p->y_coff + p->out_channels > yct)
        return OQCF_EINVAL;
    if (p->batch == 0)
        return OQCF_OK;
    if (!x || !w || !y)
        return OQCF_EINVAL;
    if (is_depthwise(p)) {
        oqcfk_dw(pool, p, &g, x, w, bias, y, xct, yct, scratch, scratch_size);
        return OQCF_OK;
    }
    const int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    const int64_t Kdim = Cg * g.taps;
    const int pointwise = is_pointwise(&g);
    Flat f;
    if (!pointwise && flat_geo(&g, Cg, Kg, &f)) {
        /* With scratch for fewer threads than the pool has, the SGEMM runs on fewer;
         * with less than one thread's worth, the implicit packer below needs less. */
        size_t o_xs, o_yb, o_gemm, total;
        flat_layout(&f, Kdim, oqcf_sgemm_scratch_size(Kg, f.band * f.R, Kdim, 1), &o_xs,
                    &o_yb, &o_gemm, &total);
        if (scratch && scratch_size >= total)
            return conv_flat(pool, p, &g, &f, x, w, bias, y, scratch,
                             scratch_size - o_gemm - 64, o_xs, o_yb, o_gemm);
    }
    /* 1x1: rows mode when there is scratch for the offsets (a product with one row or
     * column goes to oqcf_sgemm's matrix-vector path instead). */
    int64_t *koff = NULL;
    void *gs = scratch;
    size_t gsz = scratch_size;
    size_t kb = pointwise_koff_bytes(Cg);
    if (pointwise && Kg > 1 && g.out_plane > 1 && scratch &&
        scratch_size >= kb + oqcf_sgemm_scratch_size(Kg, g.out_plane, Cg, 1)) {
        koff = (int64_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
        gs = (char *)scratch + kb;
        gsz = scratch_size - kb;
        for (int64_t k = 0; k < Cg; k++)
            koff[k] = k * g.in_plane;
    }
    for (int64_t n = 0; n < p->batch; n++) {
        for (int64_t gi = 0; gi < p->group; gi++) {
            const float *xg = x + (n * xct + p->x_coff + gi * Cg) * g.in_plane;
            float *yg = y + (n * yct + p->y_coff + gi * Kg) * g.out_plane;
            const float *wg = w + gi * Kg * Kdim;
            OqcfSgemmEpilogue epi = group_epi(p, bias, gi, Kg);
            int st;
            if (pointwise && koff) {
                OqcfSgemmB src = {NULL, NULL, xg, koff};
                st = oqcf_sgemm_ex(pool, 0, Kg, g.out_plane, Cg, 1.0f, wg, Cg, &src, 0.0f, yg,
                                   g.out_plane, &epi, gs, gsz);
            } else if (pointwise) {
                st = oqcf_sgemm(pool, 0, 0, Kg, g.out_plane, Cg, 1.0f, wg, Cg, xg, g.in_plane,
                                0.0f, yg, g.out_plane, &epi, scratch, scratch_size);
            } else {
                ConvB cb = {&g, xg, g.in_plane, {0}, {0}};
                for (int64_t kw = 0; kw < g.ker[2] && kw < KW_TABLE; kw++)
                    valid_range(kw * g.dil[2] - g.pad[2], g.str[2], g.in[2], g.out[2],
                                &cb.wlo[kw], &cb.whi[kw]);
                OqcfSgemmB src = {conv_pack_b, &cb, NULL, NULL};
                st = oqcf_sgemm_ex(pool, 0, Kg, g.out_plane, Kdim, 1.0f, wg, Kdim, &src, 0.0f,
                                   yg, g.out_plane, &epi, scratch, scratch_size);
            }
            if (st != OQCF_OK)
                return st;
        }
    }
    return OQCF_OK;
}
