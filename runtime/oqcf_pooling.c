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

/* Job over planes (n, c) in [0, batch * channels). */
typedef struct PoolJob {
    const OqcfPoolParams *p;   /* parameters */
    const PGeo *g;             /* geometry */
    const float *x;            /* input buffer */
    float *y;                  /* output buffer */
    int64_t *ind;              /* MaxPool indices or NULL */
    int is_max;                /* MaxPool (else AveragePool) */
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
    for (int64_t ow = 0; ow < OW; ow++)
        yr[ow] = J->is_max ? -FLT_MAX : 0.0f;
    for (int64_t kd = wd.lo; kd < wd.hi; kd++)
        for (int64_t kh = wh.lo; kh < wh.hi; kh++) {
            const float *xr = xp + ((d0 + kd * g->dil[0]) * H + h0 + kh * g->dil[1]) * W;
            for (int64_t kw = 0; kw < g->ker[2]; kw++) {
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
    PoolJob J = {p, &g, x, y, ind, is_max};
    oqcf_parallel_for(pool, p->batch * p->channels, pool_fn, &J);
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
    oqcf_parallel_for(pool, batch * channels, global_fn, &J);
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
