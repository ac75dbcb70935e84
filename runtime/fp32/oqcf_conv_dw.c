/* oqcf_conv_dw.c - depthwise ONNX Conv (group == C == K) on NC<spatial> FP32 tensors,
 * for oqcf_conv (oqcf_conv.c; shared geometry: oqcf_conv_int.h).
 *
 * A direct kernel, parallel over planes: 1-D and 2-D planes are copied into a
 * zero-padded, phase-split scratch plane and each 8-output chunk is accumulated over
 * all taps in a register (AVX2 kernels unrolled for 3x3, four output rows at a time for
 * stride 1; portable C); 3-D, or a call without scratch, accumulates whole output rows
 * tap by tap.  Bias and activation are applied at the end of each output row.
 * The stride-2 row gather of the phase split (oqcfk_gather2__*) is here too; the flat
 * path of oqcf_conv.c, which sits above this file, uses it as well. */
#include "oqcf_conv_int.h"

#include <string.h>

/* ---- stride-2 gather (the depthwise and flat paths' phase split) --------------------- */

/* dst[i] = src[2 i] for i < n (the stride-2 phase split of a padded row). */
void oqcfk_gather2__c(float *restrict dst, const float *restrict src, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[2 * i];
}

#if OQCF_CONV_X86
AVX2 void oqcfk_gather2__avx2(float *restrict dst, const float *restrict src, int64_t n) {
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
            copy_strided(o, s, n, sw, gather2);
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
        _mm256_storeu_ps(yr + ow, act8(dw_chunk__avx2(base, off, wc, T, bias, ow), act));
    if (ow < OW)
        _mm256_storeu_ps(yr + OW - 8,
                         act8(dw_chunk__avx2(base, off, wc, T, bias, OW - 8), act));
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
    return act8(_mm256_add_ps(_mm256_add_ps(r0, r1), r2), act);
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
        q[0] = act8(a0, &av);                                                            \
        q[1] = act8(a1, &av);                                                            \
        q[2] = act8(a2, &av);                                                            \
        q[3] = act8(a3, &av);                                                            \
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
                act8(dw_chunk__avx2(base, d->off, wc, d->ntaps, bias, 0), act));
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
    Gather2Fn gather2;  /* oqcfk_gather2__c or oqcfk_gather2__avx2 */
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

/* ---- entry points (oqcf_conv_int.h) -------------------------------------------------- */

size_t oqcfk_dw_scratch(const Geo *g, int nthreads) {
    DwPad d;
    return dw_fast_geo(g, &d) ? (size_t)(nthreads < 1 ? 1 : nthreads) * (size_t)d.floats *
                                        sizeof(float) + 64
                              : 0;
}

void oqcfk_dw(OqcfPool *pool, const OqcfConvParams *p, const Geo *g, const float *x,
              const float *w, const float *bias, float *y, int64_t xct, int64_t yct,
              void *scratch, size_t scratch_size) {
    DwJob J = {p, g, x, w, bias, y, xct, yct, dw_axpy__c};
    double work = (double)p->batch * p->channels * g->out_plane * g->taps;
#if OQCF_CONV_X86
    const int vec = oqcf_sgemm_isa() != OQCF_ISA_PORTABLE;   /* AVX2 or AVX-512 CPU */
    if (vec)
        J.axpy = dw_axpy__avx2;
#endif
    /* The padded fast path needs one scratch plane per thread; with less scratch
     * it runs on fewer threads, with none it falls back to the row path. */
    DwFast F = {&J, {0}, NULL, oqcfk_gather2__c, dw_rows__c};
    uintptr_t base = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
    size_t usable = 0;
    if (scratch && scratch_size >= 64)
        usable = scratch_size - (base - (uintptr_t)scratch);
    if (dw_fast_geo(g, &F.d) && usable >= (size_t)F.d.floats * sizeof(float)) {
        F.bufs = (float *)base;
#if OQCF_CONV_X86
        if (vec) {
            F.gather2 = oqcfk_gather2__avx2;
            F.rows = dw_rows__avx2;
        }
#endif
        size_t nbuf = usable / ((size_t)F.d.floats * sizeof(float));
        OqcfPool *use = (size_t)oqcf_pool_threads(pool) <= nbuf ? pool : NULL;
        oqcf_parallel_for(oqcf_pool_for_work(use, work), p->batch * p->channels,
                          dw_fast_fn, &F);
        return;
    }
    oqcf_parallel_for(oqcf_pool_for_work(pool, work), p->batch * p->channels, dw_fn, &J);
}
