/* oqcf_pooling.c - MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (oqcf_nn.h).
 *
 * Design: as in oqcf_conv.c, geometries are normalised to three spatial axes (D, H, W)
 * with extent-1 leading axes, and the work is split over (n, c) planes with the pool.
 * For each output position the window's taps inside the input are found per axis as a
 * range [lo, hi) of kernel indices (no per-tap bounds test), so padding and ceil_mode
 * overhang cost nothing.  Semantics follow ONNX (and ONNX Runtime):
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

static void pool_plane(const PoolJob *J, int64_t n, int64_t c) {
    const PGeo *g = J->g;
    const OqcfPoolParams *p = J->p;
    const float *xp = J->x + (n * g->xct + p->x_coff + c) * g->in_plane;
    float *yp = J->y + (n * g->yct + p->y_coff + c) * g->out_plane;
    int64_t *ip = J->ind ? J->ind + (n * p->channels + c) * g->out_plane : NULL;
    int64_t ibase = (n * p->channels + c) * g->in_plane;
    const int64_t H = g->in[1], W = g->in[2];
    int64_t o = 0;
    for (int64_t od = 0; od < g->out[0]; od++) {
        int64_t dlo, dhi, dn;
        axis_window(g, 0, od, &dlo, &dhi, &dn);
        int64_t d0 = od * g->str[0] - g->pb[0];
        for (int64_t oh = 0; oh < g->out[1]; oh++) {
            int64_t hlo, hhi, hn;
            axis_window(g, 1, oh, &hlo, &hhi, &hn);
            int64_t h0 = oh * g->str[1] - g->pb[1];
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++) {
                int64_t wlo, whi, wn;
                axis_window(g, 2, ow, &wlo, &whi, &wn);
                int64_t w0 = ow * g->str[2] - g->pb[2];
                float best = -FLT_MAX, sum = 0.0f;
                int64_t at = -1;
                for (int64_t kd = dlo; kd < dhi; kd++) {
                    int64_t id = d0 + kd * g->dil[0];
                    for (int64_t kh = hlo; kh < hhi; kh++) {
                        int64_t ih = h0 + kh * g->dil[1];
                        const float *xr = xp + (id * H + ih) * W;
                        for (int64_t kw = wlo; kw < whi; kw++) {
                            int64_t iw = w0 + kw * g->dil[2];
                            float v = xr[iw];
                            if (!J->is_max) {
                                sum += v;
                            } else if (v > best || (at < 0 && v == best)) {   /* NaN never wins */
                                best = v;
                                at = (id * H + ih) * W + iw;
                                if (p->storage_order)
                                    at = id + ih * g->in[0] + iw * g->in[0] * H;
                            }
                        }
                    }
                }
                if (J->is_max) {
                    yp[o] = best;
                    if (ip)
                        ip[o] = at < 0 ? -1 : ibase + at;
                } else {
                    int64_t cnt = p->count_include_pad
                                      ? dn * hn * wn
                                      : (dhi - dlo) * (hhi - hlo) * (whi - wlo);
                    yp[o] = cnt > 0 ? sum / (float)cnt : 0.0f;
                }
            }
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
