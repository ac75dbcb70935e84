/* oqcf_pooling.c - MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (oqcf_nn.h).
 *
 * Design: as in oqcf_conv.c, geometries are normalised to three spatial axes (D, H, W)
 * with extent-1 leading axes, and the work is split over (n, c) planes with the pool.
 * The taps inside the input are found per axis as ranges, never by a per-tap bounds
 * test, so padding and ceil_mode overhang cost nothing.  Without Indices a whole output
 * row is computed tap by tap (for each kernel tap, one vectorisable pass over the
 * outputs that read inside the input, as in the depthwise conv); MaxPool with Indices
 * goes output by output to keep ONNX's tie order.  Semantics follow ONNX (and ONNX
 * Runtime):
 *   - MaxPool takes the max over taps inside the input (pads never win); the first
 *     maximum in row-major window order is kept.  Its index is
 *     (n * C + c) * in_plane + spatial offset, the spatial offset row-major
 *     (storage_order 0) or column-major (1).  A window with no tap inside the input
 *     (only possible with odd caller pads) yields -FLT_MAX and index -1.
 *   - AveragePool divides the sum over taps inside the input by their count
 *     (count_include_pad 0) or by the number of taps inside input + explicit pads
 *     (count_include_pad 1), i.e. a ceil_mode window's part beyond pad_end is not
 *     counted.  An empty window yields 0. */
#include "oqcf_nn.h"

#include <float.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCF_POOL_X86 1
#include <immintrin.h>
#else
#define OQCF_POOL_X86 0
#endif

/* Pooling geometry normalised to three spatial axes. */
typedef struct PGeo {
    int64_t in[3], out[3];     /* input and output extents (D, H, W) */
    int64_t ker[3];            /* window extents */
    int64_t str[3], dil[3];    /* strides, dilations */
    int64_t pb[3], pe[3];      /* padding before and after */
    int64_t in_plane;          /* in[0] * in[1] * in[2] */
    int64_t out_plane;         /* out[0] * out[1] * out[2] */
    int64_t xct, yct;          /* channels of the input and output buffers */
} PGeo;

static int make_pgeo(const OqcfPoolParams *p, PGeo *g) {
    int ns = p->nspatial, off = 3 - ns;
    if (ns < 1 || ns > OQCF_MAX_SPATIAL || p->batch < 0 || p->channels < 0)
        return 0;
    for (int a = 0; a < 3; a++) {
        g->in[a] = g->out[a] = g->ker[a] = g->str[a] = g->dil[a] = 1;
        g->pb[a] = g->pe[a] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int a = off + i;
        if (p->in_size[i] < 1 || p->out_size[i] < 0 || p->kernel[i] < 1 || p->stride[i] < 1 ||
            p->dilation[i] < 1 || p->pad_begin[i] < 0 || p->pad_end[i] < 0)
            return 0;
        g->in[a] = p->in_size[i];
        g->out[a] = p->out_size[i];
        g->ker[a] = p->kernel[i];
        g->str[a] = p->stride[i];
        g->dil[a] = p->dilation[i];
        g->pb[a] = p->pad_begin[i];
        g->pe[a] = p->pad_end[i];
    }
    g->in_plane = g->in[0] * g->in[1] * g->in[2];
    g->out_plane = g->out[0] * g->out[1] * g->out[2];
    g->xct = p->x_ctotal ? p->x_ctotal : p->channels;
    g->yct = p->y_ctotal ? p->y_ctotal : p->channels;
    return p->x_coff >= 0 && p->x_coff + p->channels <= g->xct && p->y_coff >= 0 &&
           p->y_coff + p->channels <= g->yct;
}

static int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Window of output o along axis a: taps [*lo, *hi) inside the input, and the number of
 * taps inside input + explicit pads. */
static void axis_window(const PGeo *g, int a, int64_t o, int64_t *lo, int64_t *hi,
                        int64_t *padded) {
    int64_t start = o * g->str[a] - g->pb[a], d = g->dil[a], k = g->ker[a];
    int64_t l = floor_div(-start + d - 1, d);           /* first tap with pos >= 0 */
    int64_t h = floor_div(g->in[a] - 1 - start, d) + 1; /* past last tap with pos < in */
    int64_t hp = floor_div(g->in[a] + g->pe[a] - 1 - start, d) + 1;
    l = l < 0 ? 0 : l;
    h = h > k ? k : h;
    hp = hp > k ? k : hp;
    *lo = l;
    *hi = h < l ? l : h;
    *padded = hp < 0 ? 0 : hp;
}

typedef struct MpGeo MpGeo;           /* MaxPool fast path (below) */

/* Job over planes (n, c) in [0, batch * channels). */
typedef struct PoolJob {
    const OqcfPoolParams *p;   /* parameters */
    const PGeo *g;             /* geometry */
    const float *x;            /* input buffer */
    float *y;                  /* output buffer */
    int64_t *ind;              /* MaxPool indices or NULL */
    int is_max;                /* MaxPool (else AveragePool) */
    const MpGeo *mg;           /* MaxPool fast-path geometry, or NULL */
    void (*mp)(const PGeo *, const MpGeo *, const float *, float *, float *);
                               /* its plane function: mp_plane__c or mp_plane__avx2 */
} PoolJob;

#define WTABLE 512   /* output widths whose windows are tabulated once per plane */

/* One axis window: taps [lo, hi) inside the input, n taps inside input + pads. */
typedef struct Win {
    int64_t lo, hi, n;   /* as axis_window() returns them */
} Win;

/* Output positions o with 0 <= o * s + off < n, as [*lo, *hi) within [0, out). */
static void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *lo,
                        int64_t *hi) {
    int64_t l = floor_div(-off + s - 1, s), h = floor_div(n - 1 - off, s) + 1;
    *lo = l < 0 ? 0 : (l > out ? out : l);
    *hi = h < *lo ? *lo : (h > out ? out : h);
}

/* ---- MaxPool without Indices, 1-D and 2-D: separable fast path ------------------------ */

/* A max over a KH x KW window is a max over KH row maxima.  Each input row is copied once
 * into a padded row (padding -FLT_MAX, which never wins over the -FLT_MAX start value,
 * so the result is exactly the reference's), its columns split by phase modulo the
 * stride as in the depthwise conv, so tap kw of outputs ow .. ow + 7 is one vector load
 * at a fixed offset.  The row maxima (`hm` rows) are kept in a small ring of the last
 * (KH-1)*dh + 1 input rows, so each is computed once; each output row is then the max of
 * its window's hm rows.  NaN inputs never win, as in the reference: maxps returns its
 * second operand (the running max) when the first is NaN.
 *
 * The work memory is a fixed stack buffer (the pooling API takes no scratch); shapes
 * that do not fit (very wide rows or tall windows) take the general path. */

#define MP_STACK 2048      /* floats of stack work memory per plane */
#define MP_MAX_KW 16       /* widest window of the fast path */
#define MP_MAX_STRIDE 4    /* largest stride along W */
#define MP_MAX_RING 16     /* tallest window span ((KH-1)*dh + 1) */

/* Geometry of the fast path for one call (its typedef is above: C99 allows only one). */
struct MpGeo {
    int64_t owp;                  /* outputs per hm row: OW rounded up to 8 */
    int64_t wq;                   /* columns of one phase of the padded row */
    int64_t rs;                   /* floats of the padded row (sw phases), multiple of 8 */
    int64_t ring;                 /* hm rows kept: (KH-1)*dh + 1 rounded up to 2^k */
    int64_t off[MP_MAX_KW];       /* tap kw reads the padded row at off[kw] + ow */
    int64_t lo[MP_MAX_STRIDE];    /* per phase: columns [lo, hi) hold input data */
    int64_t hi[MP_MAX_STRIDE];
};

static int mp_geo(const PGeo *g, MpGeo *m) {
    const int64_t sw = g->str[2], dw = g->dil[2], KW = g->ker[2];
    if (g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1 || KW > MP_MAX_KW ||
        sw > MP_MAX_STRIDE || g->out[2] < 1)
        return 0;
    int64_t span = (g->ker[1] - 1) * g->dil[1] + 1;
    for (m->ring = 1; m->ring < span; m->ring *= 2)   /* a power of two: slot = ih & mask */
        ;
    if (m->ring > MP_MAX_RING)
        return 0;
    m->owp = (g->out[2] + 7) / 8 * 8;
    m->wq = m->owp + (KW - 1) * dw / sw;
    m->rs = (sw * m->wq + 7) / 8 * 8;
    if (m->rs + m->ring * m->owp > MP_STACK)
        return 0;
    for (int64_t kw = 0; kw < KW; kw++)
        m->off[kw] = (kw * dw) % sw * m->wq + (kw * dw) / sw;
    for (int64_t ph = 0; ph < sw; ph++)
        valid_range(ph - g->pb[2], sw, g->in[2], m->wq, &m->lo[ph], &m->hi[ph]);
    return 1;
}

/* The vector parts of the fast path, portable and AVX2. */
typedef struct MpKernels {
    /* dst[i] = src[i * s] for i < n */
    void (*gather)(float *restrict dst, const float *restrict src, int64_t n, int64_t s);
    /* hm[o] = max over kw < KW of row[off[kw] + o], for o < owp (a multiple of 8) */
    void (*hmax)(const float *row, const int64_t *off, int64_t KW, float *hm, int64_t owp);
    /* y[o] = max(-FLT_MAX, rows[r][o] for r < nr), for o < n */
    void (*vmax)(const float *const *rows, int64_t nr, float *y, int64_t n);
} MpKernels;

static void mp_gather__c(float *restrict dst, const float *restrict src, int64_t n,
                         int64_t s) {
    if (s == 1) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[i * s];
}

static void mp_hmax__c(const float *row, const int64_t *off, int64_t KW, float *hm,
                       int64_t owp) {
    for (int64_t o = 0; o < owp; o++)
        hm[o] = -FLT_MAX;
    for (int64_t kw = 0; kw < KW; kw++) {
        const float *r = row + off[kw];
        for (int64_t o = 0; o < owp; o++)
            hm[o] = r[o] > hm[o] ? r[o] : hm[o];   /* NaN never wins */
    }
}

static void mp_vmax__c(const float *const *rows, int64_t nr, float *y, int64_t n) {
    for (int64_t o = 0; o < n; o++)
        y[o] = -FLT_MAX;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t o = 0; o < n; o++)
            y[o] = rows[r][o] > y[o] ? rows[r][o] : y[o];
}

static const MpKernels mp_kernels_c = {
    .gather = mp_gather__c, .hmax = mp_hmax__c, .vmax = mp_vmax__c};

#if OQCF_POOL_X86
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static void mp_gather__avx2(float *restrict dst, const float *restrict src, int64_t n,
                                 int64_t s) {
    int64_t i = 0;
    if (s == 1) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
    } else if (s == 2) {
        /* src[2i .. 2i+15] holds 8 outputs at its even positions; the last vector must
         * not read past src[2(n-1)], hence i + 9 <= n. */
        for (; i + 9 <= n; i += 8) {
            __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(src + 2 * i),
                                          _mm256_loadu_ps(src + 2 * i + 8), 0x88);
            ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
            _mm256_storeu_ps(dst + i, ev);
        }
    }
    for (; i < n; i++)
        dst[i] = src[i * s];
}

AVX2 static void mp_hmax__avx2(const float *row, const int64_t *off, int64_t KW, float *hm,
                               int64_t owp) {
    if (KW == 3) {   /* the common window, unrolled */
        const float *r0 = row + off[0], *r1 = row + off[1], *r2 = row + off[2];
        for (int64_t o = 0; o < owp; o += 8) {
            __m256 m = _mm256_max_ps(_mm256_loadu_ps(r0 + o), _mm256_set1_ps(-FLT_MAX));
            m = _mm256_max_ps(_mm256_loadu_ps(r1 + o), m);
            _mm256_storeu_ps(hm + o, _mm256_max_ps(_mm256_loadu_ps(r2 + o), m));
        }
        return;
    }
    for (int64_t o = 0; o < owp; o += 8) {
        __m256 m = _mm256_set1_ps(-FLT_MAX);
        for (int64_t kw = 0; kw < KW; kw++)   /* maxps(x, m) is m when x is NaN */
            m = _mm256_max_ps(_mm256_loadu_ps(row + off[kw] + o), m);
        _mm256_storeu_ps(hm + o, m);
    }
}

AVX2 static void mp_vmax__avx2(const float *const *rows, int64_t nr, float *y, int64_t n) {
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        __m256 m = _mm256_set1_ps(-FLT_MAX);
        for (int64_t r = 0; r < nr; r++)
            m = _mm256_max_ps(_mm256_loadu_ps(rows[r] + o), m);
        _mm256_storeu_ps(y + o, m);
    }
    if (o < n) {   /* the rows are padded to a multiple of 8: compute 8, store the rest */
        float t[8];
        __m256 m = _mm256_set1_ps(-FLT_MAX);
        for (int64_t r = 0; r < nr; r++)
            m = _mm256_max_ps(_mm256_loadu_ps(rows[r] + o), m);
        _mm256_storeu_ps(t, m);
        for (int64_t i = 0; o + i < n; i++)
            y[o + i] = t[i];
    }
}

static const MpKernels mp_kernels_avx2 = {
    .gather = mp_gather__avx2, .hmax = mp_hmax__avx2, .vmax = mp_vmax__avx2};
#endif

/* One plane through the fast path; work holds MP_STACK floats, its first m->rs (the
 * padded row) filled with -FLT_MAX once per thread: planes write only data columns.
 * Inlined into mp_plane__c and mp_plane__avx2 with constant kernels (direct calls). */
static inline __attribute__((always_inline)) void
mp_plane(const PGeo *g, const MpGeo *m, const MpKernels *k, const float *xp, float *yp,
         float *work) {
    float *prow = work, *ring = work + m->rs;
    int64_t tag[MP_MAX_RING];   /* input row held by each ring slot, -1: none */
    const float *rows[MP_MAX_RING];
    const int64_t W = g->in[2], H = g->in[1], sw = g->str[2], OW = g->out[2];
    const int64_t KH = g->ker[1], dh = g->dil[1];
    for (int64_t r = 0; r < m->ring; r++)
        tag[r] = -1;
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
        int64_t lo, hi, npad, nr = 0, h0 = oh * g->str[1] - g->pb[1];
        if (dh == 1) {   /* the window's rows inside the input, without divisions */
            lo = h0 < 0 ? -h0 : 0;
            hi = H - h0 < KH ? H - h0 : KH;
        } else {
            axis_window(g, 1, oh, &lo, &hi, &npad);
        }
        for (int64_t kh = lo; kh < hi; kh++) {
            int64_t ih = h0 + kh * dh, slot = ih & (m->ring - 1);
            float *hm = ring + slot * m->owp;
            if (tag[slot] != ih) {   /* first use of input row ih: its row maxima */
                const float *src = xp + ih * W;
                for (int64_t ph = 0; ph < sw; ph++)
                    if (m->hi[ph] > m->lo[ph])
                        k->gather(prow + ph * m->wq + m->lo[ph],
                                  src + m->lo[ph] * sw + ph - g->pb[2], m->hi[ph] - m->lo[ph],
                                  sw);
                k->hmax(prow, m->off, g->ker[2], hm, m->owp);
                tag[slot] = ih;
            }
            rows[nr++] = hm;
        }
        k->vmax(rows, nr, yp + oh * OW, OW);
    }
}

static void mp_plane__c(const PGeo *g, const MpGeo *m, const float *xp, float *yp,
                        float *work) {
    mp_plane(g, m, &mp_kernels_c, xp, yp, work);
}

#if OQCF_POOL_X86
AVX2 static void mp_plane__avx2(const PGeo *g, const MpGeo *m, const float *xp, float *yp,
                                float *work) {
    mp_plane(g, m, &mp_kernels_avx2, xp, yp, work);
}
#endif

/* MaxPool with Indices: per output, the window's taps in row-major order, so the first
 * maximum is kept as ONNX Runtime does. */
static void max_indices_row(const PoolJob *J, const float *xp, int64_t d0, Win wd, int64_t h0,
                            Win wh, float *yr, int64_t *ir, int64_t ibase) {
    const PGeo *g = J->g;
    const int64_t H = g->in[1], W = g->in[2];
    for (int64_t ow = 0; ow < g->out[2]; ow++) {
        Win ww;
        axis_window(g, 2, ow, &ww.lo, &ww.hi, &ww.n);
        int64_t w0 = ow * g->str[2] - g->pb[2];
        float best = -FLT_MAX;
        int64_t at = -1;   /* row-major offset of the max in the plane */
        for (int64_t kd = wd.lo; kd < wd.hi; kd++)
            for (int64_t kh = wh.lo; kh < wh.hi; kh++) {
                int64_t row = ((d0 + kd * g->dil[0]) * H + h0 + kh * g->dil[1]) * W;
                for (int64_t kw = ww.lo; kw < ww.hi; kw++) {
                    int64_t off = row + w0 + kw * g->dil[2];
                    if (xp[off] > best || (at < 0 && xp[off] == best)) {   /* NaN never wins */
                        best = xp[off];
                        at = off;
                    }
                }
            }
        if (at >= 0 && J->p->storage_order) {   /* column-major offset */
            int64_t iw = at % W, ih = at / W % H, id = at / (W * H);
            at = id + ih * g->in[0] + iw * g->in[0] * H;
        }
        yr[ow] = best;
        ir[ow] = at < 0 ? -1 : ibase + at;
    }
}

/* MaxPool without Indices and AveragePool: a whole output row at a time, tap by tap
 * (vectorisable along the row), as the depthwise conv does. */
static void pool_row(const PoolJob *J, const float *xp, int64_t d0, Win wd, int64_t h0,
                     Win wh, const Win *wt, float *yr) {
    const PGeo *g = J->g;
    const int64_t H = g->in[1], W = g->in[2], OW = g->out[2], sw = g->str[2];
    /* the taps some output of the row reads inside the row: kw dil - pb in
     * [-(OW - 1) sw, W - 1] (the others give empty ranges; a window may be millions of
     * taps wide: a fuzzed AveragePool's kernel 35 x 4194303 took seconds when every
     * tap was visited) */
    const int64_t dw = g->dil[2], pb = g->pb[2];
    int64_t kw0 = floor_div(pb - (OW - 1) * sw + dw - 1, dw), kw1 = floor_div(pb + W - 1, dw) + 1;
    kw0 = kw0 < 0 ? 0 : kw0;
    kw1 = kw1 > g->ker[2] ? g->ker[2] : kw1;
    for (int64_t ow = 0; ow < OW; ow++)
        yr[ow] = J->is_max ? -FLT_MAX : 0.0f;
    for (int64_t kd = wd.lo; kd < wd.hi; kd++)
        for (int64_t kh = wh.lo; kh < wh.hi; kh++) {
            const float *xr = xp + ((d0 + kd * g->dil[0]) * H + h0 + kh * g->dil[1]) * W;
            for (int64_t kw = kw0; kw < kw1; kw++) {
                int64_t off = kw * g->dil[2] - g->pb[2], lo, hi;
                valid_range(off, sw, W, OW, &lo, &hi);
                if (J->is_max && sw == 1)
                    for (int64_t ow = lo; ow < hi; ow++)   /* NaN never wins */
                        yr[ow] = xr[ow + off] > yr[ow] ? xr[ow + off] : yr[ow];
                else if (J->is_max)
                    for (int64_t ow = lo; ow < hi; ow++)
                        yr[ow] = xr[ow * sw + off] > yr[ow] ? xr[ow * sw + off] : yr[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++)
                        yr[ow] += xr[ow * sw + off];
            }
        }
    if (J->is_max)
        return;
    for (int64_t ow = 0; ow < OW; ow++) {
        Win ww;
        if (ow < WTABLE)
            ww = wt[ow];
        else
            axis_window(g, 2, ow, &ww.lo, &ww.hi, &ww.n);
        int64_t cnt = J->p->count_include_pad
                          ? wd.n * wh.n * ww.n
                          : (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
        yr[ow] = cnt > 0 ? yr[ow] / (float)cnt : 0.0f;
    }
}

static void pool_plane(const PoolJob *J, int64_t n, int64_t c) {
    const PGeo *g = J->g;
    const OqcfPoolParams *p = J->p;
    const float *xp = J->x + (n * g->xct + p->x_coff + c) * g->in_plane;
    float *yp = J->y + (n * g->yct + p->y_coff + c) * g->out_plane;
    int64_t *ip = J->ind ? J->ind + (n * p->channels + c) * g->out_plane : NULL;
    int64_t ibase = (n * p->channels + c) * g->in_plane;
    const int64_t OW = g->out[2];

    Win wt[WTABLE];   /* the W windows, the same for every output row */
    if (!J->is_max)
        for (int64_t ow = 0; ow < OW && ow < WTABLE; ow++)
            axis_window(g, 2, ow, &wt[ow].lo, &wt[ow].hi, &wt[ow].n);
    for (int64_t od = 0; od < g->out[0]; od++) {
        Win wd;
        axis_window(g, 0, od, &wd.lo, &wd.hi, &wd.n);
        int64_t d0 = od * g->str[0] - g->pb[0];
        for (int64_t oh = 0; oh < g->out[1]; oh++) {
            Win wh;
            axis_window(g, 1, oh, &wh.lo, &wh.hi, &wh.n);
            int64_t h0 = oh * g->str[1] - g->pb[1], o = (od * g->out[1] + oh) * OW;
            if (J->is_max && ip)
                max_indices_row(J, xp, d0, wd, h0, wh, yp + o, ip + o, ibase);
            else
                pool_row(J, xp, d0, wd, h0, wh, wt, yp + o);
        }
    }
}

static void pool_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const PoolJob *J = ctx;
    (void)tid;
    if (J->mg) {   /* MaxPool fast path */
        const PGeo *g = J->g;
        const OqcfPoolParams *p = J->p;
        float work[MP_STACK];
        for (int64_t i = 0; i < J->mg->rs; i++)
            work[i] = -FLT_MAX;
        for (int64_t t = begin; t < end; t++) {
            int64_t n = t / p->channels, c = t % p->channels;
            J->mp(g, J->mg, J->x + (n * g->xct + p->x_coff + c) * g->in_plane,
                  J->y + (n * g->yct + p->y_coff + c) * g->out_plane, work);
        }
        return;
    }
    for (int64_t t = begin; t < end; t++)
        pool_plane(J, t / J->p->channels, t % J->p->channels);
}

static int run_pool(OqcfPool *pool, const OqcfPoolParams *p, const float *x, float *y,
                    int64_t *ind, int is_max) {
    PGeo g;
    if (!p || !make_pgeo(p, &g))
        return OQCF_EINVAL;
    if (p->batch == 0 || p->channels == 0 || g.out_plane == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    PoolJob J = {p, &g, x, y, ind, is_max, NULL, mp_plane__c};
    MpGeo mg;
    if (is_max && !ind && mp_geo(&g, &mg)) {
        J.mg = &mg;
#if OQCF_POOL_X86
        if (oqcf_sgemm_isa() != OQCF_ISA_PORTABLE)   /* an AVX2 (or AVX-512) CPU */
            J.mp = mp_plane__avx2;
#endif
    }
    double work = (double)p->batch * p->channels * g.out_plane * g.ker[0] * g.ker[1] * g.ker[2];
    oqcf_parallel_for(oqcf_pool_for_work(pool, work), p->batch * p->channels, pool_fn, &J);
    return OQCF_OK;
}

int oqcf_maxpool(OqcfPool *pool, const OqcfPoolParams *p, const float *x, float *y,
                 int64_t *indices) {
    return run_pool(pool, p, x, y, indices, 1);
}

int oqcf_avgpool(OqcfPool *pool, const OqcfPoolParams *p, const float *x, float *y) {
    return run_pool(pool, p, x, y, NULL, 0);
}

/* ---- global pools ------------------------------------------------------------------ */

/* Job over planes of a global pool. */
typedef struct GlobalJob {
    const float *x;     /* input, dense planes of `spatial` floats */
    float *y;           /* one float per plane */
    int64_t spatial;    /* elements per plane */
    int is_max;         /* GlobalMaxPool (else GlobalAveragePool) */
} GlobalJob;

static void global_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const GlobalJob *J = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        const float *xp = J->x + t * J->spatial;
        int64_t n = J->spatial, i = 0;
        if (J->is_max) {
            float m = xp[0];
            for (i = 1; i < n; i++)
                m = xp[i] > m ? xp[i] : m;
            J->y[t] = m;
        } else {
            float acc[8] = {0};   /* 8 partial sums: vectorisable, and more accurate */
            for (; i + 8 <= n; i += 8)
                for (int l = 0; l < 8; l++)
                    acc[l] += xp[i + l];
            float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                      ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            for (; i < n; i++)
                s += xp[i];
            J->y[t] = s / (float)n;
        }
    }
}

static int run_global(OqcfPool *pool, int64_t batch, int64_t channels, int64_t spatial,
                      const float *x, float *y, int is_max) {
    if (batch < 0 || channels < 0 || spatial < 1)
        return OQCF_EINVAL;
    if (batch == 0 || channels == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    GlobalJob J = {x, y, spatial, is_max};
    oqcf_parallel_for(oqcf_pool_for_work(pool, (double)batch * channels * spatial),
                      batch * channels, global_fn, &J);
    return OQCF_OK;
}

int oqcf_global_avgpool(OqcfPool *pool, int64_t batch, int64_t channels, int64_t spatial,
                        const float *x, float *y) {
    return run_global(pool, batch, channels, spatial, x, y, 0);
}

int oqcf_global_maxpool(OqcfPool *pool, int64_t batch, int64_t channels, int64_t spatial,
                        const float *x, float *y) {
    return run_global(pool, batch, channels, spatial, x, y, 1);
}
