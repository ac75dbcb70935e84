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
 * X_col (the im2col matrix) is never built: conv_pack_b() is the SGEMM's B packer and
 * writes the packed panels straight from the image, row k of X_col at a time, as runs
 * of output columns that share an output row (contiguous input for stride 1), with
 * zeros for the padding.
 * A 1x1 / stride-1 / unpadded conv's X_col is the input itself, so it is handed to
 * oqcf_sgemm as a dense matrix.  Depthwise conv (group == C == K) is a direct kernel,
 * parallel over planes: 1-D and 2-D planes are copied into a zero-padded scratch plane
 * and each 8-output chunk is accumulated over all taps in a register (AVX2 or portable
 * C); 3-D, or a call without scratch, accumulates whole output rows tap by tap.
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
static void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *lo,
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

/* Each plane is first copied into a zero-padded scratch plane (one per thread), so no
 * tap needs a bounds test; then every 8 outputs of a row are computed in one register
 * over all taps and stored once.  The padded row is long enough for the last chunk to
 * run past the row end (those outputs are computed and dropped). */

/* Padded-plane geometry. */
typedef struct DwPad {
    int64_t hp, wp;     /* padded plane: rows and row length */
    int64_t chunks;     /* 8-output chunks per output row */
    int64_t floats;     /* floats per thread buffer (rounded to a cache line) */
} DwPad;

static int dw_fast_geo(const Geo *g, DwPad *d) {
    if (g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1)   /* 3-D: row path */
        return 0;
    d->chunks = (g->out[2] + 7) / 8;
    d->hp = (g->out[1] - 1) * g->str[1] + (g->ker[1] - 1) * g->dil[1] + 1;
    d->wp = d->chunks * 8 * g->str[2] + (g->ker[2] - 1) * g->dil[2] + 16;
    d->floats = (d->hp * d->wp + 15) / 16 * 16;
    return 1;
}

/* Fills the padded plane from input plane xp. */
static void dw_pad_plane(const Geo *g, const DwPad *d, const float *xp, float *xpad) {
    const int64_t H = g->in[1], W = g->in[2], ph = g->pad[1], pw = g->pad[2];
    for (int64_t r = 0; r < d->hp; r++) {
        float *o = xpad + r * d->wp;
        int64_t ih = r - ph;
        int64_t c0 = pw < d->wp ? pw : d->wp;                 /* first data column */
        int64_t c1 = pw + W < d->wp ? pw + W : d->wp;         /* past the last */
        if (ih < 0 || ih >= H)
            c0 = c1 = 0;
        for (int64_t c = 0; c < c0; c++)
            o[c] = 0.0f;
        if (c1 > c0)
            memcpy(o + c0, xp + ih * W, (size_t)(c1 - c0) * sizeof(float));
        for (int64_t c = c1 > c0 ? c1 : c0; c < d->wp; c++)
            o[c] = 0.0f;
    }
}

/* All output rows of one plane from its padded copy: portable version. */
static void dw_rows__c(const Geo *g, const DwPad *d, const float *xpad, const float *wc,
                       float b0, const OqcfAct *act, float *yp) {
    const int64_t OW = g->out[2], sh = g->str[1], sw = g->str[2];
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
        for (int64_t ch = 0; ch < d->chunks; ch++) {
            float acc[8];
            for (int l = 0; l < 8; l++)
                acc[l] = b0;
            for (int64_t kh = 0; kh < g->ker[1]; kh++) {
                const float *xr = xpad + (oh * sh + kh * g->dil[1]) * d->wp + ch * 8 * sw;
                for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                    const float *xs = xr + kw * g->dil[2];
                    float wv = wc[kh * g->ker[2] + kw];
                    for (int l = 0; l < 8; l++)
                        acc[l] += wv * xs[l * sw];
                }
            }
            int64_t n = OW - ch * 8 < 8 ? OW - ch * 8 : 8;
            for (int64_t l = 0; l < n; l++)
                yp[oh * OW + ch * 8 + l] = oqcf_act_apply(act, acc[l]);
        }
    }
}

#if OQCF_CONV_X86
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256 dw_act8(__m256 v, const OqcfAct *a) {
    switch (a->kind) {
    case OQCF_ACT_RELU:
        return _mm256_max_ps(v, _mm256_setzero_ps());
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

/* Eight inputs x[0], x[sw], ..., x[7 sw]. */
AVX2 static inline __m256 dw_load8(const float *x, int64_t sw) {
    if (sw == 1)
        return _mm256_loadu_ps(x);
    if (sw == 2) {
        __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), 0x88);
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
    }
    return _mm256_set_ps(x[7 * sw], x[6 * sw], x[5 * sw], x[4 * sw], x[3 * sw], x[2 * sw],
                         x[sw], x[0]);
}

/* Stores 8 results at o, of which only the first n (<= 8) are kept. */
AVX2 static inline void dw_store8(float *o, __m256 v, int64_t n) {
    if (n >= 8) {
        _mm256_storeu_ps(o, v);
    } else {
        float t[8];
        _mm256_storeu_ps(t, v);
        for (int64_t l = 0; l < n; l++)
            o[l] = t[l];
    }
}

/* All output rows of one plane from its padded copy: AVX2 version.  Four chunks (32
 * outputs) are accumulated together, so four FMA chains hide the FMA latency. */
AVX2 static void dw_rows__avx2(const Geo *g, const DwPad *d, const float *xpad,
                               const float *wc, float b0, const OqcfAct *act, float *yp) {
    const int64_t OW = g->out[2], sh = g->str[1], sw = g->str[2], dw = g->dil[2];
    const int64_t KH = g->ker[1], KW = g->ker[2], step = 8 * sw;
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
        float *yr = yp + oh * OW;
        int64_t ch = 0;
        for (; ch + 4 <= d->chunks; ch += 4) {
            __m256 a0 = _mm256_set1_ps(b0), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t kh = 0; kh < KH; kh++) {
                const float *xr = xpad + (oh * sh + kh * g->dil[1]) * d->wp + ch * step;
                for (int64_t kw = 0; kw < KW; kw++) {
                    __m256 wv = _mm256_set1_ps(wc[kh * KW + kw]);
                    const float *xs = xr + kw * dw;
                    a0 = _mm256_fmadd_ps(wv, dw_load8(xs, sw), a0);
                    a1 = _mm256_fmadd_ps(wv, dw_load8(xs + step, sw), a1);
                    a2 = _mm256_fmadd_ps(wv, dw_load8(xs + 2 * step, sw), a2);
                    a3 = _mm256_fmadd_ps(wv, dw_load8(xs + 3 * step, sw), a3);
                }
            }
            dw_store8(yr + ch * 8, dw_act8(a0, act), OW - ch * 8);
            dw_store8(yr + ch * 8 + 8, dw_act8(a1, act), OW - ch * 8 - 8);
            dw_store8(yr + ch * 8 + 16, dw_act8(a2, act), OW - ch * 8 - 16);
            dw_store8(yr + ch * 8 + 24, dw_act8(a3, act), OW - ch * 8 - 24);
        }
        for (; ch < d->chunks; ch++) {   /* taps alternate between two chains */
            __m256 a0 = _mm256_set1_ps(b0), a1 = _mm256_setzero_ps();
            for (int64_t kh = 0; kh < KH; kh++) {
                const float *xr = xpad + (oh * sh + kh * g->dil[1]) * d->wp + ch * step;
                const float *wr = wc + kh * KW;
                int64_t kw = 0;
                for (; kw + 2 <= KW; kw += 2) {
                    a0 = _mm256_fmadd_ps(_mm256_set1_ps(wr[kw]), dw_load8(xr + kw * dw, sw),
                                         a0);
                    a1 = _mm256_fmadd_ps(_mm256_set1_ps(wr[kw + 1]),
                                         dw_load8(xr + (kw + 1) * dw, sw), a1);
                }
                if (kw < KW)
                    a0 = _mm256_fmadd_ps(_mm256_set1_ps(wr[kw]), dw_load8(xr + kw * dw, sw),
                                         a0);
            }
            __m256 v = _mm256_add_ps(a0, a1);
            dw_store8(yr + ch * 8, dw_act8(v, act), OW - ch * 8);
        }
    }
}
#endif

/* Fast depthwise job: planes (n, c), one padded buffer per thread. */
typedef struct DwFast {
    const DwJob *J;     /* the plain job (parameters, tensors) */
    DwPad d;            /* padded geometry */
    float *bufs;        /* aligned per-thread padded planes */
    void (*rows)(const Geo *, const DwPad *, const float *, const float *, float,
                 const OqcfAct *, float *);   /* dw_rows__c or dw_rows__avx2 */
} DwFast;

static void dw_fast_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const DwFast *F = ctx;
    const DwJob *J = F->J;
    const Geo *g = J->g;
    float *xpad = F->bufs + tid * F->d.floats;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / J->p->channels, c = t % J->p->channels;
        const float *xp = J->x + (n * J->xct + J->p->x_coff + c) * g->in_plane;
        float *yp = J->y + (n * J->yct + J->p->y_coff + c) * g->out_plane;
        const OqcfAct *act =
            J->p->act_per_channel ? &J->p->act_per_channel[c] : &J->p->act;
        dw_pad_plane(g, &F->d, xp, xpad);
        F->rows(g, &F->d, xpad, J->w + c * g->taps, J->bias ? J->bias[c] : 0.0f, act, yp);
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

size_t oqcf_conv_scratch_size(const OqcfConvParams *p, int nthreads) {
    Geo g;
    DwPad d;
    if (!p || !make_geo(p, &g) || p->group < 1)
        return 0;
    if (is_depthwise(p))   /* padded planes, one per thread (optional: see oqcf_conv) */
        return dw_fast_geo(&g, &d) ? (size_t)(nthreads < 1 ? 1 : nthreads) *
                                             (size_t)d.floats * sizeof(float) + 64
                                   : 0;
    return oqcf_sgemm_scratch_size(p->out_channels / p->group, g.out_plane,
                                   p->channels / p->group * g.taps, nthreads);
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
        int vec = 0;
#if OQCF_CONV_X86
        vec = oqcf_sgemm_isa() != OQCF_ISA_PORTABLE;   /* AVX2 or AVX-512 CPU */
        if (vec)
            J.axpy = dw_axpy__avx2;
#endif
        /* The padded fast path needs one scratch plane per thread; with less scratch
         * it runs on fewer threads, with none it falls back to the row path. */
        DwFast F = {&J, {0, 0, 0, 0}, NULL, dw_rows__c};
        uintptr_t base = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
        size_t usable = 0;
        if (scratch && scratch_size >= 64)
            usable = scratch_size - (base - (uintptr_t)scratch);
        if (dw_fast_geo(&g, &F.d) && usable >= (size_t)F.d.floats * sizeof(float)) {
            F.bufs = (float *)base;
#if OQCF_CONV_X86
            if (vec)
                F.rows = dw_rows__avx2;
#endif
            size_t nbuf = usable / ((size_t)F.d.floats * sizeof(float));
            OqcfPool *use = (size_t)oqcf_pool_threads(pool) <= nbuf ? pool : NULL;
            oqcf_parallel_for(use, p->batch * p->channels, dw_fast_fn, &F);
            return OQCF_OK;
        }
        oqcf_parallel_for(pool, p->batch * p->channels, dw_fn, &J);
        return OQCF_OK;
    }
    const int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    const int64_t Kdim = Cg * g.taps;
    const int pointwise = is_pointwise(&g);
    for (int64_t n = 0; n < p->batch; n++) {
        for (int64_t gi = 0; gi < p->group; gi++) {
            const float *xg = x + (n * xct + p->x_coff + gi * Cg) * g.in_plane;
            float *yg = y + (n * yct + p->y_coff + gi * Kg) * g.out_plane;
            const float *wg = w + gi * Kg * Kdim;
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
            int st;
            if (pointwise) {
                st = oqcf_sgemm(pool, 0, 0, Kg, g.out_plane, Cg, 1.0f, wg, Cg, xg, g.in_plane,
                                0.0f, yg, g.out_plane, &epi, scratch, scratch_size);
            } else {
                ConvB cb = {&g, xg, g.in_plane, {0}, {0}};
                for (int64_t kw = 0; kw < g.ker[2] && kw < KW_TABLE; kw++)
                    valid_range(kw * g.dil[2] - g.pad[2], g.str[2], g.in[2], g.out[2],
                                &cb.wlo[kw], &cb.whi[kw]);
                OqcfSgemmB src = {conv_pack_b, &cb};
                st = oqcf_sgemm_ex(pool, 0, Kg, g.out_plane, Kdim, 1.0f, wg, Kdim, &src, 0.0f,
                                   yg, g.out_plane, &epi, scratch, scratch_size);
            }
            if (st != OQCF_OK)
                return st;
        }
    }
    return OQCF_OK;
}
