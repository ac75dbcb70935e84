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
 * Depthwise conv (group == C == K) is a direct kernel, parallel over planes: 1-D and
 * 2-D planes are copied into a zero-padded, phase-split scratch plane and each 8-output
 * chunk is accumulated over all taps in a register (AVX2 kernels unrolled for 3x3, four
 * output rows at a time for stride 1; portable C); 3-D, or a call without scratch,
 * accumulates whole output rows tap by tap.
 *
 * Bias and activation (one for all channels or one per channel) are applied in the
 * SGEMM epilogue, or at the end of each output row for depthwise.  Channel views only
 * change the base pointers: image n's channel c of the view is at plane
 * n * ctotal + coff + c of the buffer. */
#include "oqcf_nn.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCF_CONV_X86 1
#include <immintrin.h>
#else
#define OQCF_CONV_X86 0
#endif

/* A convolution normalised to three spatial axes. */
typedef struct Geo {
    int64_t in[3], out[3];     /* input and output extents (D, H, W) */
    int64_t ker[3];            /* kernel extents */
    int64_t str[3], dil[3];    /* strides, dilations */
    int64_t pad[3];            /* padding before each axis */
    int64_t in_plane;          /* in[0] * in[1] * in[2] */
    int64_t out_plane;         /* out[0] * out[1] * out[2] */
    int64_t taps;              /* ker[0] * ker[1] * ker[2] */
} Geo;

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

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Output positions o with 0 <= o * s + off < n, as [*lo, *hi), clamped to [0, out). */
static inline void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *lo,
                               int64_t *hi) {
    int64_t l = floor_div(-off + s - 1, s);       /* ceil(-off / s) */
    int64_t h = floor_div(n - 1 - off, s) + 1;
    *lo = l < 0 ? 0 : (l > out ? out : l);
    *hi = h < *lo ? *lo : (h > out ? out : h);
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

/* Copies n <= 32 floats with fixed-size copies the compiler inlines (a plain loop
 * would become a call to memmove, slow for these short runs). */
static inline void copy_run(float *restrict d, const float *restrict s, int64_t n) {
    int64_t j = 0;
    if (n - j >= 16) {
        memcpy(d + j, s + j, 16 * sizeof(float));
        j += 16;
    }
    if (n - j >= 16) {
        memcpy(d + j, s + j, 16 * sizeof(float));
        j += 16;
    }
    if (n - j >= 8) {
        memcpy(d + j, s + j, 8 * sizeof(float));
        j += 8;
    }
    if (n - j >= 4) {
        memcpy(d + j, s + j, 4 * sizeof(float));
        j += 4;
    }
    if (n - j >= 2) {
        memcpy(d + j, s + j, 2 * sizeof(float));
        j += 2;
    }
    if (n - j >= 1)
        d[j] = s[j];
}

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

/* ---- depthwise ------------------------------------------------------------------- */

/* y[i] += w * x[i * sx] for i < n: one kernel tap over a run of an output row.  gcc -O2
 * does not vectorise loops of unknown length, so there are AVX2 versions for input
 * strides 1 and 2 (chosen when the SGEMM family is not forced to portable). */
static void dw_axpy__c(float *restrict y, const float *restrict x, float w, int64_t n,
                       int64_t sx) {
    for (int64_t i = 0; i < n; i++)
        y[i] += w * x[i * sx];
}

#if OQCF_CONV_X86
__attribute__((target("avx2,fma"))) static void dw_axpy__avx2(float *restrict y,
                                                             const float *restrict x,
                                                             float w, int64_t n, int64_t sx) {
    __m256 wv = _mm256_set1_ps(w);
    int64_t i = 0;
    if (sx == 1) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i),
                                                    _mm256_loadu_ps(y + i)));
    } else if (sx == 2) {
        /* x[2i .. 2i+15] holds the 8 inputs at its even positions; the last vector
         * must not read past x[2(n-1)], hence i + 9 <= n. */
        for (; i + 9 <= n; i += 8) {
            __m256 a = _mm256_loadu_ps(x + 2 * i), b = _mm256_loadu_ps(x + 2 * i + 8);
            __m256 ev = _mm256_shuffle_ps(a, b, 0x88);   /* x0 x2 x8 x10 | x4 x6 x12 x14 */
            ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
            _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, ev, _mm256_loadu_ps(y + i)));
        }
    }
    for (; i < n; i++)
        y[i] += w * x[i * sx];
}
#endif

/* Signature of dw_axpy__c / dw_axpy__avx2. */
typedef void (*DwAxpyFn)(float *restrict y, const float *restrict x, float w, int64_t n,
                         int64_t sx);

/* Depthwise job: planes (n, c) in [0, batch * C). */
typedef struct DwJob {
    const OqcfConvParams *p;   /* parameters */
    const Geo *g;              /* geometry */
    const float *x, *w, *bias; /* input, weights (C x taps), bias or NULL */
    float *y;                  /* output */
    int64_t xct, yct;          /* channels of the input and output buffers */
    DwAxpyFn axpy;             /* row update of the row-by-row path */
} DwJob;

static void dw_plane(const DwJob *J, int64_t n, int64_t c) {
    const Geo *g = J->g;
    const float *xp = J->x + (n * J->xct + J->p->x_coff + c) * g->in_plane;
    float *yp = J->y + (n * J->yct + J->p->y_coff + c) * g->out_plane;
    const float *wc = J->w + c * g->taps;
    const OqcfAct *act = J->p->act_per_channel ? &J->p->act_per_channel[c] : &J->p->act;
    float b0 = J->bias ? J->bias[c] : 0.0f;
    const int64_t OW = g->out[2], W = g->in[2], sw = g->str[2];
    for (int64_t od = 0; od < g->out[0]; od++) {
        for (int64_t oh = 0; oh < g->out[1]; oh++) {
            float *row = yp + (od * g->out[1] + oh) * OW;
            for (int64_t ow = 0; ow < OW; ow++)
                row[ow] = b0;
            for (int64_t kd = 0; kd < g->ker[0]; kd++) {
                int64_t id = od * g->str[0] - g->pad[0] + kd * g->dil[0];
                if (id < 0 || id >= g->in[0])
                    continue;
                for (int64_t kh = 0; kh < g->ker[1]; kh++) {
                    int64_t ih = oh * g->str[1] - g->pad[1] + kh * g->dil[1];
                    if (ih < 0 || ih >= g->in[1])
                        continue;
                    const float *xr = xp + (id * g->in[1] + ih) * W;
                    const float *wr = wc + (kd * g->ker[1] + kh) * g->ker[2];
                    for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                        int64_t off = kw * g->dil[2] - g->pad[2], lo, hi;
                        float wv = wr[kw];
                        valid_range(off, sw, W, OW, &lo, &hi);
                        if (lo < hi)
                            J->axpy(row + lo, xr + lo * sw + off, wv, hi - lo, sw);
                    }
                }
            }
            if (act->kind != OQCF_ACT_NONE)
                for (int64_t ow = 0; ow < OW; ow++)
                    row[ow] = oqcf_act_apply(act, row[ow]);
        }
    }
}

static void dw_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const DwJob *J = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++)
        dw_plane(J, t / J->p->channels, t % J->p->channels);
}

/* ---- depthwise, fast path (1-D and 2-D) --------------------------------------------- */

/* Each input plane is first copied into a zero-padded scratch plane (one per thread),
 * so no tap needs a bounds test.  The columns of each padded row are stored split by
 * phase modulo the stride: phase r holds padded columns r, r + sw, r + 2 sw, ...  Then
 * for any stride and dilation, tap (kh, kw) of outputs ow .. ow + 7 reads 8 consecutive
 * floats at a fixed offset from the output row's base, so every tap is one unaligned
 * vector load and one FMA (stride 2 costs one de-interleaving copy of the input instead
 * of a shuffle per tap).  A row is computed 8 outputs at a time (16 when possible, two
 * accumulator chains per chunk); a last partial chunk is recomputed overlapping its
 * predecessor, and a row shorter than 8 goes through a small buffer. */

#define DW_MAX_TAPS 64     /* larger 2-D kernels (rare) take the row path, */
#define DW_MAX_STRIDE 8    /* and so do larger strides along W */

/* Padded-plane geometry and the per-tap offsets into it. */
typedef struct DwPad {
    int64_t hp;                 /* padded rows */
    int64_t wq;                 /* columns of one phase */
    int64_t rs;                 /* floats per padded row: str[2] phases of wq */
    int64_t owv;                /* outputs computed per row: max(OW, 8) */
    int64_t floats;             /* floats per thread buffer (rounded to a cache line) */
    int ntaps;                  /* kernel taps (kh-major) */
    int64_t off[DW_MAX_TAPS];   /* tap t reads the output row base + off[t] + ow */
    int64_t lo[DW_MAX_STRIDE];  /* per phase: columns [lo, hi) hold input data */
    int64_t hi[DW_MAX_STRIDE];
} DwPad;

static int dw_fast_geo(const Geo *g, DwPad *d) {
    if (g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1 ||   /* 3-D: row path */
        g->taps > DW_MAX_TAPS || g->str[2] > DW_MAX_STRIDE)
        return 0;
    const int64_t sw = g->str[2], dw = g->dil[2];
    d->owv = g->out[2] < 8 ? 8 : g->out[2];
    d->hp = (g->out[1] - 1) * g->str[1] + (g->ker[1] - 1) * g->dil[1] + 1;
    d->wq = d->owv + (g->ker[2] - 1) * dw / sw;
    d->rs = sw * d->wq;
    d->floats = (d->hp * d->rs + 15) / 16 * 16;
    d->ntaps = (int)g->taps;
    for (int64_t ph = 0; ph < sw; ph++)
        valid_range(ph - g->pad[2], sw, g->in[2], d->wq, &d->lo[ph], &d->hi[ph]);
    for (int64_t kh = 0; kh < g->ker[1]; kh++)
        for (int64_t kw = 0; kw < g->ker[2]; kw++)
            d->off[kh * g->ker[2] + kw] =
                kh * g->dil[1] * d->rs + (kw * dw) % sw * d->wq + (kw * dw) / sw;
    return 1;
}

/* dst[i] = src[2 i] for i < n (the stride-2 phase split of a padded row). */
static void gather2__c(float *restrict dst, const float *restrict src, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[2 * i];
}

#if OQCF_CONV_X86
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static void gather2__avx2(float *restrict dst, const float *restrict src, int64_t n) {
    int64_t i = 0;
    /* src[2i .. 2i+15] holds 8 outputs at its even positions; the last vector must not
     * read past src[2(n-1)], hence i + 9 <= n. */
    for (; i + 9 <= n; i += 8) {
        __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(src + 2 * i),
                                      _mm256_loadu_ps(src + 2 * i + 8), 0x88);
        ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
        _mm256_storeu_ps(dst + i, ev);
    }
    for (; i < n; i++)
        dst[i] = src[2 * i];
}
#endif

/* Signature of gather2__c / gather2__avx2. */
typedef void (*Gather2Fn)(float *restrict dst, const float *restrict src, int64_t n);

/* Copies the input plane xp into the data positions of the padded, phase-split plane.
 * The padding positions are the same for every plane: dw_fast_fn zeroes each thread's
 * buffer once per call and no plane writes them. */
static void dw_pad_plane(const Geo *g, const DwPad *d, const float *xp, float *xpad,
                         Gather2Fn gather2) {
    const int64_t W = g->in[2], sw = g->str[2];
    int64_t r0 = g->pad[1], r1 = g->pad[1] + g->in[1];   /* padded rows holding data */
    r1 = r1 < d->hp ? r1 : d->hp;
    for (int64_t r = r0; r < r1; r++) {
        const float *src = xp + (r - g->pad[1]) * W;
        for (int64_t ph = 0; ph < sw; ph++) {
            int64_t lo = d->lo[ph], n = d->hi[ph] - lo;
            float *o = xpad + r * d->rs + ph * d->wq + lo;
            const float *s = src + lo * sw + ph - g->pad[2];
            if (n <= 0)
                continue;
            if (sw == 1) {
                if (n <= 32)
                    copy_run(o, s, n);
                else
                    memcpy(o, s, (size_t)n * sizeof(float));
            } else if (sw == 2) {
                gather2(o, s, n);
            } else {
                for (int64_t i = 0; i < n; i++)
                    o[i] = s[i * sw];
            }
        }
    }
}

/* All output rows of one plane from its padded copy: portable version. */
static void dw_rows__c(const Geo *g, const DwPad *d, const float *xpad, const float *wc,
                       float b0, const OqcfAct *act, float *yp) {
    const int64_t OW = g->out[2], sh = g->str[1];
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
        const float *base = xpad + oh * sh * d->rs;
        for (int64_t ow0 = 0; ow0 < OW; ow0 += 8) {
            int n = OW - ow0 < 8 ? (int)(OW - ow0) : 8;
            float acc[8];
            for (int l = 0; l < 8; l++)
                acc[l] = b0;
            for (int t = 0; t < d->ntaps; t++) {
                const float *xs = base + d->off[t] + ow0;
                float wv = wc[t];
                for (int l = 0; l < n; l++)
                    acc[l] += wv * xs[l];
            }
            for (int l = 0; l < n; l++)
                yp[oh * OW + ow0 + l] = oqcf_act_apply(act, acc[l]);
        }
    }
}

#if OQCF_CONV_X86
AVX2 static inline __m256 dw_act8(__m256 v, const OqcfAct *a) {
    switch (a->kind) {
    case OQCF_ACT_RELU:   /* maxps returns its second operand for NaN: NaN stays NaN */
        return _mm256_max_ps(_mm256_setzero_ps(), v);
    case OQCF_ACT_CLIP:
        return _mm256_min_ps(_mm256_set1_ps(a->p1), _mm256_max_ps(_mm256_set1_ps(a->p0), v));
    case OQCF_ACT_LEAKY: {
        __m256 ge = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
        return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(a->p0)), v, ge);
    }
    default:
        return v;
    }
}

/* Eight outputs at column ow of the row whose base is given, for any tap count (two
 * accumulator chains). */
AVX2 static inline __m256 dw_chunk__avx2(const float *base, const int64_t *off,
                                         const float *wc, int T, __m256 bias, int64_t ow) {
    __m256 a0 = bias, a1 = _mm256_setzero_ps();
    int t = 0;
    for (; t + 2 <= T; t += 2) {
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wc + t), _mm256_loadu_ps(base + off[t] + ow),
                             a0);
        a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(wc + t + 1),
                             _mm256_loadu_ps(base + off[t + 1] + ow), a1);
    }
    if (t < T)
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(wc + t), _mm256_loadu_ps(base + off[t] + ow),
                             a0);
    return _mm256_add_ps(a0, a1);
}

/* One output row (OW >= 8 outputs) from its base in the padded plane, any tap count.
 * A last partial chunk of 8 is moved back to end at OW: it recomputes a few outputs
 * of the previous chunk, which stores the same values. */
AVX2 static void dw_row__avx2(const float *base, const int64_t *off, const float *wc, int T,
                              __m256 bias, const OqcfAct *act, float *yr, int64_t OW) {
    int64_t ow = 0;
    for (; ow + 8 <= OW; ow += 8)
        _mm256_storeu_ps(yr + ow, dw_act8(dw_chunk__avx2(base, off, wc, T, bias, ow), act));
    if (ow < OW)
        _mm256_storeu_ps(yr + OW - 8,
                         dw_act8(dw_chunk__avx2(base, off, wc, T, bias, OW - 8), act));
}

/* Lanes [0, n) of a store mask (n < 8: rows shorter than one chunk). */
AVX2 static inline __m256i dw_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Eight outputs of a 3x3 kernel at column o: tap t reads p[t] + o; three accumulator
 * chains (one per kernel row). */
AVX2 static inline __m256 dw_sum9(const float *const *p, const __m256 *w, __m256 bias,
                                  int64_t o, const OqcfAct *act) {
    __m256 r0 = _mm256_fmadd_ps(w[0], _mm256_loadu_ps(p[0] + o), bias);
    __m256 r1 = _mm256_mul_ps(w[3], _mm256_loadu_ps(p[3] + o));
    __m256 r2 = _mm256_mul_ps(w[6], _mm256_loadu_ps(p[6] + o));
    r0 = _mm256_fmadd_ps(w[1], _mm256_loadu_ps(p[1] + o), r0);
    r1 = _mm256_fmadd_ps(w[4], _mm256_loadu_ps(p[4] + o), r1);
    r2 = _mm256_fmadd_ps(w[7], _mm256_loadu_ps(p[7] + o), r2);
    r0 = _mm256_fmadd_ps(w[2], _mm256_loadu_ps(p[2] + o), r0);
    r1 = _mm256_fmadd_ps(w[5], _mm256_loadu_ps(p[5] + o), r1);
    r2 = _mm256_fmadd_ps(w[8], _mm256_loadu_ps(p[8] + o), r2);
    return dw_act8(_mm256_add_ps(_mm256_add_ps(r0, r1), r2), act);
}

/* A whole plane of a 3x3 kernel, any stride and dilation, row by row. */
AVX2 static void dw_plane3x3__avx2(const Geo *g, const DwPad *d, const float *xpad,
                                   const float *wc, float b0, const OqcfAct *act,
                                   float *yp) {
    const int64_t OW = g->out[2], OH = g->out[1], step = g->str[1] * d->rs;
    const __m256 bias = _mm256_set1_ps(b0);
    const __m256i mask = dw_mask(OW);
    const OqcfAct av = *act;   /* a local copy: the stores to y cannot change it */
    __m256 w[9];
    const float *p[9];
    for (int t = 0; t < 9; t++)
        w[t] = _mm256_broadcast_ss(wc + t);
    for (int64_t oh = 0; oh < OH; oh++) {
        float *yr = yp + oh * OW;
        for (int t = 0; t < 9; t++)
            p[t] = xpad + oh * step + d->off[t];
        if (OW < 8) {
            _mm256_maskstore_ps(yr, mask, dw_sum9(p, w, bias, 0, &av));
            continue;
        }
        for (int64_t ow = 0; ow < OW; ow += 8) {
            if (ow + 8 > OW)
                ow = OW - 8;   /* the last chunk overlaps the previous one */
            _mm256_storeu_ps(yr + ow, dw_sum9(p, w, bias, ow, &av));
        }
    }
}

/* Four output rows of a 3x3, stride-1, undilated kernel at once, eight columns at o:
 * each of the 6 input rows is loaded once per kernel column (18 loads) and feeds every
 * output row it belongs to (36 FMAs), where row-by-row would load 36 times.  DW_KEEP
 * keeps a loaded vector in a register (the compiler would otherwise fold the load into
 * each FMA, loading it again). */
#define DW_KEEP(v) __asm__("" : "+x"(v))
#define DW_WI(kh, kw) ((kh) < 0 || (kh) > 2 ? 0 : (kh) * 3 + (kw))
#define DW_QTAP(j, kw)                                                                  \
    v = _mm256_loadu_ps(x_ + (j) * rs + (kw));                                           \
    DW_KEEP(v);                                                                          \
    if ((j) < 3)                                                                         \
        a0 = _mm256_fmadd_ps(w[DW_WI((j), kw)], v, a0);                                  \
    if ((j) >= 1 && (j) < 4)                                                             \
        a1 = _mm256_fmadd_ps(w[DW_WI((j) - 1, kw)], v, a1);                              \
    if ((j) >= 2 && (j) < 5)                                                             \
        a2 = _mm256_fmadd_ps(w[DW_WI((j) - 2, kw)], v, a2);                              \
    if ((j) >= 3)                                                                        \
        a3 = _mm256_fmadd_ps(w[DW_WI((j) - 3, kw)], v, a3);
#define DW_QROW(j) DW_QTAP(j, 0) DW_QTAP(j, 1) DW_QTAP(j, 2)
#define DW_QUAD(o)                                                                       \
    {                                                                                    \
        const float *x_ = base + (o);                                                    \
        __m256 a0 = bias, a1 = bias, a2 = bias, a3 = bias, v;                            \
        DW_QROW(0) DW_QROW(1) DW_QROW(2) DW_QROW(3) DW_QROW(4) DW_QROW(5)                \
        q[0] = dw_act8(a0, &av);                                                         \
        q[1] = dw_act8(a1, &av);                                                         \
        q[2] = dw_act8(a2, &av);                                                         \
        q[3] = dw_act8(a3, &av);                                                         \
    }

AVX2 static void dw_plane3x3s1__avx2(const Geo *g, const DwPad *d, const float *xpad,
                                     const float *wc, float b0, const OqcfAct *act,
                                     float *yp) {
    const int64_t OW = g->out[2], OH = g->out[1], rs = d->rs;
    const __m256 bias = _mm256_set1_ps(b0);
    const __m256i mask = dw_mask(OW);
    const OqcfAct av = *act;   /* a local copy: the stores to y cannot change it */
    __m256 w[9], q[4];
    for (int t = 0; t < 9; t++)
        w[t] = _mm256_broadcast_ss(wc + t);
    if (OH < 4) {   /* too few rows for a block: the row-by-row kernel */
        dw_plane3x3__avx2(g, d, xpad, wc, b0, act, yp);
        return;
    }
    for (int64_t oh = 0; oh < OH; oh += 4) {
        if (oh + 4 > OH)
            oh = OH - 4;   /* the last block overlaps the previous one */
        const float *base = xpad + oh * rs;
        float *y0 = yp + oh * OW;
        if (OW < 8) {
            DW_QUAD(0)
            for (int r = 0; r < 4; r++)
                _mm256_maskstore_ps(y0 + r * OW, mask, q[r]);
            continue;
        }
        for (int64_t ow = 0; ow < OW; ow += 8) {
            if (ow + 8 > OW)
                ow = OW - 8;   /* the last chunk overlaps the previous one */
            DW_QUAD(ow)
            for (int r = 0; r < 4; r++)
                _mm256_storeu_ps(y0 + r * OW + ow, q[r]);
        }
    }
}

/* All output rows of one plane from its padded copy: AVX2 version. */
AVX2 static void dw_rows__avx2(const Geo *g, const DwPad *d, const float *xpad,
                               const float *wc, float b0, const OqcfAct *act, float *yp) {
    const int64_t OW = g->out[2], OH = g->out[1], step = g->str[1] * d->rs;
    const __m256 bias = _mm256_set1_ps(b0);
    if (d->ntaps == 9 && g->str[1] == 1 && g->str[2] == 1 && g->dil[1] == 1 &&
        g->dil[2] == 1) {
        dw_plane3x3s1__avx2(g, d, xpad, wc, b0, act, yp);
        return;
    }
    if (d->ntaps == 9) {
        dw_plane3x3__avx2(g, d, xpad, wc, b0, act, yp);
        return;
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        const float *base = xpad + oh * step;
        float *yr = yp + oh * OW;
        if (OW < 8)
            _mm256_maskstore_ps(
                yr, dw_mask(OW),
                dw_act8(dw_chunk__avx2(base, d->off, wc, d->ntaps, bias, 0), act));
        else
            dw_row__avx2(base, d->off, wc, d->ntaps, bias, act, yr, OW);
    }
}
#endif

/* Fast depthwise job: planes (n, c), one padded buffer per thread. */
typedef struct DwFast {
    const DwJob *J;     /* the plain job (parameters, tensors) */
    DwPad d;            /* padded geometry */
    float *bufs;        /* aligned per-thread padded planes */
    Gather2Fn gather2;  /* gather2__c or gather2__avx2 */
    void (*rows)(const Geo *, const DwPad *, const float *, const float *, float,
                 const OqcfAct *, float *);   /* dw_rows__c or dw_rows__avx2 */
} DwFast;

static void dw_fast_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const DwFast *F = ctx;
    const DwJob *J = F->J;
    const Geo *g = J->g;
    float *xpad = F->bufs + tid * F->d.floats;
    memset(xpad, 0, (size_t)F->d.floats * sizeof(float));   /* the padding, once */
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / J->p->channels, c = t % J->p->channels;
        const float *xp = J->x + (n * J->xct + J->p->x_coff + c) * g->in_plane;
        float *yp = J->y + (n * J->yct + J->p->y_coff + c) * g->out_plane;
        const OqcfAct *act =
            J->p->act_per_channel ? &J->p->act_per_channel[c] : &J->p->act;
        dw_pad_plane(g, &F->d, xp, xpad, F->gather2);
        F->rows(g, &F->d, xpad, J->w + c * g->taps, J->bias ? J->bias[c] : 0.0f, act, yp);
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
                    if (sw == 1) {
                        if (n <= 32)
                            copy_run(o, s, n);
                        else
                            memcpy(o, s, (size_t)n * sizeof(float));
                    } else if (sw == 2) {
                        S->gather2(o, s, n);
                    } else {
                        for (int64_t j = 0; j < n; j++)
                            o[j] = s[j * sw];
                    }
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
    Gather2Fn gather2 = gather2__c;
#if OQCF_CONV_X86
    if (oqcf_sgemm_isa() != OQCF_ISA_PORTABLE)
        gather2 = gather2__avx2;
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
    DwPad d;
    if (!p || !make_geo(p, &g) || p->group < 1)
        return 0;
    if (is_depthwise(p))   /* padded planes, one per thread (optional: see oqcf_conv) */
        return dw_fast_geo(&g, &d) ? (size_t)(nthreads < 1 ? 1 : nthreads) *
                                             (size_t)d.floats * sizeof(float) + 64
                                   : 0;
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
        DwJob J = {p, &g, x, w, bias, y, xct, yct, dw_axpy__c};
        double work = (double)p->batch * p->channels * g.out_plane * g.taps;
#if OQCF_CONV_X86
        const int vec = oqcf_sgemm_isa() != OQCF_ISA_PORTABLE;   /* AVX2 or AVX-512 CPU */
        if (vec)
            J.axpy = dw_axpy__avx2;
#endif
        /* The padded fast path needs one scratch plane per thread; with less scratch
         * it runs on fewer threads, with none it falls back to the row path. */
        DwFast F = {&J, {0}, NULL, gather2__c, dw_rows__c};
        uintptr_t base = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
        size_t usable = 0;
        if (scratch && scratch_size >= 64)
            usable = scratch_size - (base - (uintptr_t)scratch);
        if (dw_fast_geo(&g, &F.d) && usable >= (size_t)F.d.floats * sizeof(float)) {
            F.bufs = (float *)base;
#if OQCF_CONV_X86
            if (vec) {
                F.gather2 = gather2__avx2;
                F.rows = dw_rows__avx2;
            }
#endif
            size_t nbuf = usable / ((size_t)F.d.floats * sizeof(float));
            OqcfPool *use = (size_t)oqcf_pool_threads(pool) <= nbuf ? pool : NULL;
            oqcf_parallel_for(oqcf_pool_for_work(use, work), p->batch * p->channels,
                              dw_fast_fn, &F);
            return OQCF_OK;
        }
        oqcf_parallel_for(oqcf_pool_for_work(pool, work), p->batch * p->channels, dw_fn, &J);
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
