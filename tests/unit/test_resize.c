/* test_resize.c - the Resize and ConvTranspose kernels: runtime/fp32/oqcf_resize.c (float and
 * byte passes), runtime/int8/oqci_resize.c (linear Resize of 8-bit codes),
 * runtime/fp32/oqcf_deconv.c and runtime/int8/oqci_deconv.c (INT8), against hand-worked examples and against references written
 * another way here (the resize as a direct per-output sum over all tap combinations;
 * ConvTranspose as a gather: each output sums the inputs whose taps reach it). The
 * compile-time part (coordinate modes, rounding, cubic weights) is checked by the ONNX
 * node tests.
 *
 * Tolerances.  Integer results (oqci_resize, byte moves) are compared EXACTLY: the
 * reference computes the four-corner sum in double (exact: integers below 2^31) and
 * rounds half away from zero.  Float results: oqcf_resize against the direct sum within
 * 1e-6 of the sum of the terms' magnitudes + 1e-7 (three passes of float sums of at
 * most 4 terms, each adding at most about 5 * 2^-24 of those magnitudes; the weights
 * here may be negative, so the sum itself can be much smaller); oqcf_conv_transpose against the gather
 * in double within 1e-5 relative + 1e-5 absolute (float sums of at most C*k^3 = 100
 * products in another order). */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oqcf_nn.h"
#include "oqcf_tensor.h"
#include "oqci.h"

static unsigned rs = 12345;
static int rnd(int n) {   /* 0 .. n-1 */
    rs = rs * 1103515245u + 12345u;
    return (int)((rs >> 16) % (unsigned)n);
}

/* ---- oqcf_resize ---- */

static void test_float_examples(void) {
    /* 1 x 2 -> 1 x 3 linear along axis 1: [10, 15, 20] */
    float x[2] = {10, 20}, y[3];
    int32_t idx[6] = {0, 0, 0, 1, 1, 1};
    float w[6] = {1, 0, 0.5f, 0.5f, 1, 0};
    OqcfShape xs = {2, {1, 2}};
    OqcfResizeAxis a = {1, 2, 3, idx, w};
    CU_ASSERT_EQUAL(oqcf_resize(x, &xs, &a, 1, 0, 4, y, NULL, 0), OQCF_OK);
    CU_ASSERT(y[0] == 10 && y[1] == 15 && y[2] == 20);
    /* extrapolation: index -1 gives the value */
    int32_t ex[3] = {-1, 1, -1};
    OqcfResizeAxis e = {1, 1, 3, ex, NULL};
    CU_ASSERT_EQUAL(oqcf_resize(x, &xs, &e, 1, -7.5f, 4, y, NULL, 0), OQCF_OK);
    CU_ASSERT(y[0] == -7.5f && y[1] == 20 && y[2] == -7.5f);
    /* bytes: nearest over two axes, 2 x 2 -> 3 x 4 (needs one scratch buffer) */
    uint8_t bx[4] = {1, 2, 3, 4}, by[12];
    int32_t i0[3] = {0, 1, 1}, i1[4] = {0, 0, 1, 1};
    OqcfResizeAxis ab[2] = {{0, 1, 3, i0, NULL}, {1, 1, 4, i1, NULL}};
    OqcfShape bs = {2, {2, 2}};
    unsigned char scratch[256];
    size_t need = oqcf_resize_scratch_size(&bs, ab, 2, 1);
    CU_ASSERT(need >= 8 && need <= sizeof scratch);
    CU_ASSERT_EQUAL(oqcf_resize(bx, &bs, ab, 2, 0, 1, by, scratch, need - 1), OQCF_ESCRATCH);
    CU_ASSERT_EQUAL(oqcf_resize(bx, &bs, ab, 2, 0, 1, by, scratch, need), OQCF_OK);
    static const uint8_t want[12] = {1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    CU_ASSERT(memcmp(by, want, 12) == 0);
    /* refused: weights on bytes, an index past the input, axes out of order */
    CU_ASSERT_EQUAL(oqcf_resize(bx, &bs, &a, 1, 0, 1, by, NULL, 0), OQCF_EINVAL);
    int32_t bad[3] = {0, 2, 1};
    OqcfResizeAxis ob = {1, 1, 3, bad, NULL};
    CU_ASSERT_EQUAL(oqcf_resize(x, &xs, &ob, 1, 0, 4, y, NULL, 0), OQCF_EINVAL);
    OqcfResizeAxis rev[2] = {ab[1], ab[0]};
    CU_ASSERT_EQUAL(oqcf_resize(bx, &bs, rev, 2, 0, 1, by, scratch, sizeof scratch),
                    OQCF_EINVAL);
}

/* Random 3-D float resamples of all three axes (taps 1, 2 or 4 per axis) against the
 * direct sum over every combination of taps. */
static void test_float_random(void) {
    int bad = 0;
    for (int iter = 0; iter < 200; iter++) {
        OqcfShape xs = {3, {1 + rnd(4), 1 + rnd(5), 1 + rnd(6)}};
        OqcfResizeAxis ax[3];
        int32_t *idx[3];
        float *w[3];
        int64_t out[3];
        for (int a = 0; a < 3; a++) {
            int taps = (int[]){1, 2, 4}[rnd(3)];
            out[a] = 1 + rnd(7);
            idx[a] = malloc(sizeof(int32_t) * (size_t)(out[a] * taps));
            w[a] = malloc(sizeof(float) * (size_t)(out[a] * taps));
            for (int64_t j = 0; j < out[a] * taps; j++) {
                idx[a][j] = rnd((int)xs.d[a]);
                w[a][j] = (float)(rnd(2001) - 1000) / 1000.0f;
            }
            ax[a] = (OqcfResizeAxis){a, taps, out[a], idx[a], taps == 1 ? NULL : w[a]};
        }
        int64_t nx = oqcf_numel(&xs), ny = out[0] * out[1] * out[2];
        float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++)
            x[i] = (float)(rnd(2001) - 1000) / 100.0f;
        size_t sc = oqcf_resize_scratch_size(&xs, ax, 3, 4);
        void *scratch = malloc(sc + 1);
        CU_ASSERT_EQUAL(oqcf_resize(x, &xs, ax, 3, 0, 4, y, scratch, sc), OQCF_OK);
        for (int64_t j0 = 0; j0 < out[0]; j0++)
            for (int64_t j1 = 0; j1 < out[1]; j1++)
                for (int64_t j2 = 0; j2 < out[2]; j2++) {
                    double s = 0, mag = 0;
                    for (int t0 = 0; t0 < ax[0].taps; t0++)
                        for (int t1 = 0; t1 < ax[1].taps; t1++)
                            for (int t2 = 0; t2 < ax[2].taps; t2++) {
                                int64_t k0 = j0 * ax[0].taps + t0, k1 = j1 * ax[1].taps + t1,
                                        k2 = j2 * ax[2].taps + t2;
                                double wt = (ax[0].w ? ax[0].w[k0] : 1.0) *
                                            (ax[1].w ? ax[1].w[k1] : 1.0) *
                                            (ax[2].w ? ax[2].w[k2] : 1.0);
                                double v = x[(idx[0][k0] * xs.d[1] + idx[1][k1]) * xs.d[2] +
                                             idx[2][k2]];
                                s += wt * v;
                                mag += fabs(wt * v);
                            }
                    float got = y[(j0 * out[1] + j1) * out[2] + j2];
                    bad += !(fabs(got - s) <= 1e-7 + 1e-6 * mag);
                }
        for (int a = 0; a < 3; a++) {
            free(idx[a]);
            free(w[a]);
        }
        free(x);
        free(y);
        free(scratch);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- oqci_resize ---- */

static int32_t round_away(double v) {
    return (int32_t)(v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5));
}

static void test_int8_examples(void) {
    /* s8 [10, 20] -> [10, 15, 20]; [-3, 0] at the midpoint: -1.5 -> -2 (away from 0) */
    int8_t x[2] = {10, 20}, y[3];
    int32_t idx[6] = {0, 0, 0, 1, 1, 1};
    int16_t w[6] = {2048, 0, 1024, 1024, 0, 2048};
    OqciResize p = {OQCI_S8, 2, {1, 2}, 1, {{1, 3, idx, w}, {0, 0, NULL, NULL}}};
    CU_ASSERT_EQUAL(oqci_resize(&p, x, y), OQCI_OK);
    CU_ASSERT(y[0] == 10 && y[1] == 15 && y[2] == 20);
    x[0] = -3;
    x[1] = 0;
    CU_ASSERT_EQUAL(oqci_resize(&p, x, y), OQCI_OK);
    CU_ASSERT(y[0] == -3 && y[1] == -2 && y[2] == 0);
    x[0] = 3;
    CU_ASSERT_EQUAL(oqci_resize(&p, x, y), OQCI_OK);
    CU_ASSERT(y[1] == 2);
    /* u8 2 x 2 -> centre of [[0, 10], [20, 31]]: 61 / 4 = 15.25 -> 15 */
    uint8_t u[4] = {0, 10, 20, 31}, v[1];
    int32_t c[2] = {0, 1};
    int16_t h[2] = {1024, 1024};
    OqciResize q = {OQCI_U8, 2, {2, 2}, 2, {{0, 1, c, h}, {1, 1, c, h}}};
    CU_ASSERT_EQUAL(oqci_resize(&q, u, v), OQCI_OK);
    CU_ASSERT_EQUAL(v[0], 15);
    /* refused: weights not summing to 2^11, an index past the input, axes out of order */
    int16_t wb[2] = {1024, 1023};
    q.ax[0].w = wb;
    CU_ASSERT_EQUAL(oqci_resize(&q, u, v), OQCI_EINVAL);
    q.ax[0].w = h;
    int32_t cb[2] = {0, 2};
    q.ax[1].idx = cb;
    CU_ASSERT_EQUAL(oqci_resize(&q, u, v), OQCI_EINVAL);
    q.ax[1].idx = c;
    q.ax[1].axis = 0;
    CU_ASSERT_EQUAL(oqci_resize(&q, u, v), OQCI_EINVAL);
}

/* Random 4-D two-axis (and one-axis) resizes of s8 and u8 codes against the direct
 * four-corner sum in double, rounded half away from zero: exact. */
static void test_int8_random(void) {
    int bad = 0;
    for (int iter = 0; iter < 300; iter++) {
        int rank = 4, type = rnd(2) ? OQCI_U8 : OQCI_S8, two = rnd(3) != 0;
        int64_t in[4] = {1 + rnd(2), 1 + rnd(3), 1 + rnd(5), 1 + rnd(6)};
        int a0 = two ? rnd(3) : rnd(4), a1 = two ? a0 + 1 + rnd(3 - a0) : 4;
        OqciResize p = {type, rank, {in[0], in[1], in[2], in[3]}, two ? 2 : 1, {{0}}};
        int32_t *ix[2] = {NULL, NULL};
        int16_t *ww[2] = {NULL, NULL};
        int64_t out[5] = {in[0], in[1], in[2], in[3], 1};
        int axes[2] = {a0, a1};
        for (int k = 0; k < p.naxes; k++) {
            int64_t n = 1 + rnd(7);
            ix[k] = malloc(sizeof(int32_t) * (size_t)(2 * n));
            ww[k] = malloc(sizeof(int16_t) * (size_t)(2 * n));
            for (int64_t j = 0; j < n; j++) {
                ix[k][2 * j] = rnd((int)in[axes[k]]);
                ix[k][2 * j + 1] = rnd((int)in[axes[k]]);
                ww[k][2 * j + 1] = (int16_t)rnd(2049);
                ww[k][2 * j] = (int16_t)(2048 - ww[k][2 * j + 1]);
            }
            p.ax[k] = (OqciResizeAxis){axes[k], n, ix[k], ww[k]};
            out[axes[k]] = n;
        }
        int64_t nx = in[0] * in[1] * in[2] * in[3], ny = out[0] * out[1] * out[2] * out[3];
        uint8_t *x = malloc((size_t)nx), *y = malloc((size_t)ny + 1);
        for (int64_t i = 0; i < nx; i++)
            x[i] = (uint8_t)(type == OQCI_S8 ? (uint8_t)(int8_t)(rnd(255) - 127) : rnd(256));
        y[ny] = 0x5A;
        CU_ASSERT_EQUAL(oqci_resize(&p, x, y), OQCI_OK);
        bad += y[ny] != 0x5A;
        int64_t o[4];
        for (o[0] = 0; o[0] < out[0]; o[0]++)
            for (o[1] = 0; o[1] < out[1]; o[1]++)
                for (o[2] = 0; o[2] < out[2]; o[2]++)
                    for (o[3] = 0; o[3] < out[3]; o[3]++) {
                        double s = 0;
                        for (int t = 0; t < 4; t++) {
                            int64_t pos[4] = {o[0], o[1], o[2], o[3]};
                            double wt = 1;
                            for (int k = 0; k < p.naxes; k++) {
                                int tap = k == 0 ? t >> 1 : t & 1;
                                pos[axes[k]] = ix[k][2 * o[axes[k]] + tap];
                                wt *= ww[k][2 * o[axes[k]] + tap];
                            }
                            if (p.naxes == 1 && (t & 1))
                                continue;   /* one axis: two taps */
                            int64_t xi = ((pos[0] * in[1] + pos[1]) * in[2] + pos[2]) * in[3] + pos[3];
                            s += wt * (type == OQCI_S8 ? (double)(int8_t)x[xi] : (double)x[xi]);
                        }
                        int32_t want = round_away(s / (p.naxes == 2 ? 4194304.0 : 2048.0));
                        int64_t yi = ((o[0] * out[1] + o[1]) * out[2] + o[2]) * out[3] + o[3];
                        int32_t got = type == OQCI_S8 ? (int8_t)y[yi] : y[yi];
                        bad += got != want;
                    }
        for (int k = 0; k < 2; k++) {
            free(ix[k]);
            free(ww[k]);
        }
        free(x);
        free(y);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- oqcf_conv_transpose ---- */

/* Random 1-3-D ConvTransposes (groups, strides, dilations, pads, larger outputs) against
 * the gather form: y[n][k][o] = b[k] + sum over c, t with (o + pad - t*dil) divisible by
 * the stride and the quotient an input position. */
static void test_conv_transpose_random(void) {
    int bad = 0;
    for (int iter = 0; iter < 150; iter++) {
        OqcfConvParams p;
        memset(&p, 0, sizeof p);
        p.nspatial = 1 + rnd(3);
        int64_t G = 1 + rnd(2);
        p.group = G;
        p.batch = 1 + rnd(2);
        p.channels = G * (1 + rnd(3));
        p.out_channels = G * (1 + rnd(3));
        int64_t isz = 1, osz = 1, tsz = 1;
        for (int i = 0; i < p.nspatial; i++) {
            p.in_size[i] = 1 + rnd(4);
            p.kernel[i] = 1 + rnd(3);
            p.stride[i] = 1 + rnd(3);
            p.dilation[i] = 1 + rnd(2);
            p.pad_begin[i] = rnd(2);
            int64_t full = (p.in_size[i] - 1) * p.stride[i] + (p.kernel[i] - 1) * p.dilation[i] + 1;
            p.out_size[i] = full - p.pad_begin[i] + rnd(3) - 1;
            if (p.out_size[i] < 1)
                p.out_size[i] = 1;
            isz *= p.in_size[i];
            osz *= p.out_size[i];
            tsz *= p.kernel[i];
        }
        int64_t C = p.channels, K = p.out_channels, Kg = K / G, Cg = C / G;
        int64_t nx = p.batch * C * isz, nw = C * Kg * tsz, ny = p.batch * K * osz;
        float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
        float *b = malloc(sizeof(float) * (size_t)K), *y = malloc(sizeof(float) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++)
            x[i] = (float)(rnd(2001) - 1000) / 500.0f;
        for (int64_t i = 0; i < nw; i++)
            w[i] = (float)(rnd(2001) - 1000) / 500.0f;
        for (int64_t i = 0; i < K; i++)
            b[i] = (float)(rnd(2001) - 1000) / 500.0f;
        CU_ASSERT_EQUAL(oqcf_conv_transpose(&p, x, w, b, y), OQCF_OK);
        for (int64_t n = 0; n < p.batch; n++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t op = 0; op < osz; op++) {
                    int64_t oc[3], rem = op;
                    for (int i = p.nspatial - 1; i >= 0; i--) {
                        oc[i] = rem % p.out_size[i];
                        rem /= p.out_size[i];
                    }
                    double s = b[k];
                    int64_t g = k / Kg;
                    for (int64_t c = g * Cg; c < (g + 1) * Cg; c++)
                        for (int64_t tp = 0; tp < tsz; tp++) {
                            int64_t tc[3], r2 = tp, ii = 0, okp = 1;
                            for (int i = p.nspatial - 1; i >= 0; i--) {
                                tc[i] = r2 % p.kernel[i];
                                r2 /= p.kernel[i];
                            }
                            for (int i = 0; i < p.nspatial && okp; i++) {
                                int64_t num = oc[i] + p.pad_begin[i] - tc[i] * p.dilation[i];
                                okp = num >= 0 && num % p.stride[i] == 0 &&
                                      num / p.stride[i] < p.in_size[i];
                                ii = ii * p.in_size[i] + (okp ? num / p.stride[i] : 0);
                            }
                            if (okp)
                                s += (double)x[(n * C + c) * isz + ii] *
                                     w[(c * Kg + k % Kg) * tsz + tp];
                        }
                    float got = y[(n * K + k) * osz + op];
                    bad += !(fabs(got - s) <= 1e-5 + 1e-5 * fabs(s));
                }
        free(x);
        free(w);
        free(b);
        free(y);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* refused: a fused activation, groups that do not divide the channels */
    OqcfConvParams q;
    memset(&q, 0, sizeof q);
    q.nspatial = 1;
    q.batch = q.channels = q.out_channels = q.group = 1;
    q.in_size[0] = q.out_size[0] = q.kernel[0] = q.stride[0] = q.dilation[0] = 1;
    float one = 1, out = 0;
    CU_ASSERT_EQUAL(oqcf_conv_transpose(&q, &one, &one, NULL, &out), OQCF_OK);
    CU_ASSERT_EQUAL(out, 1.0f);
    q.act.kind = OQCF_ACT_RELU;
    CU_ASSERT_EQUAL(oqcf_conv_transpose(&q, &one, &one, NULL, &out), OQCF_EINVAL);
    q.act.kind = OQCF_ACT_NONE;
    q.group = 2;
    CU_ASSERT_EQUAL(oqcf_conv_transpose(&q, &one, &one, NULL, &out), OQCF_EINVAL);
}

/* ---- oqci_deconv ---- */

/* Random 2-D INT8 ConvTransposes against oqcf_conv_transpose (checked above) run on the
 * same integer values as floats: every partial sum is an integer below 2^24 in
 * magnitude (at most 3 * 9 products of 255 * 127, plus a bias below 2^16), so the float
 * accumulators are exact, and requantizing them with oqci_requant must give the
 * kernel's codes EXACTLY. */
static void test_int8_deconv_random(void) {
    int bad = 0;
    for (int iter = 0; iter < 200; iter++) {
        int32_t G = 1 + rnd(2), Cg = 1 + rnd(3), Kg = 1 + rnd(3);
        OqciDeconv p;
        memset(&p, 0, sizeof p);
        p.batch = 1 + rnd(2);
        p.in_c = G * Cg;
        p.out_c = G * Kg;
        p.group = G;
        p.in_h = 1 + rnd(4);
        p.in_w = 1 + rnd(4);
        p.k_h = 1 + rnd(3);
        p.k_w = 1 + rnd(3);
        p.s_h = 1 + rnd(3);
        p.s_w = 1 + rnd(3);
        p.d_h = 1 + rnd(2);
        p.d_w = 1 + rnd(2);
        p.p_t = rnd(2);
        p.p_l = rnd(2);
        p.out_h = (p.in_h - 1) * p.s_h + (p.k_h - 1) * p.d_h + 1 - p.p_t + rnd(2);
        p.out_w = (p.in_w - 1) * p.s_w + (p.k_w - 1) * p.d_w + 1 - p.p_l + rnd(2);
        p.in_type = rnd(2) ? OQCI_U8 : OQCI_S8;
        p.out_type = rnd(2) ? OQCI_U8 : OQCI_S8;
        p.lo = p.out_type == OQCI_U8 ? 0 : -127;
        p.hi = p.out_type == OQCI_U8 ? 255 : 127;
        int64_t nx = (int64_t)p.batch * p.in_c * p.in_h * p.in_w;
        int64_t nw = (int64_t)p.in_c * Kg * p.k_h * p.k_w;
        int64_t ny = (int64_t)p.batch * p.out_c * p.out_h * p.out_w;
        uint8_t *x = malloc((size_t)nx), *y = malloc((size_t)ny);
        int8_t *w = malloc((size_t)nw);
        int32_t *bias = malloc(sizeof(int32_t) * (size_t)p.out_c);
        float *mult = malloc(sizeof(float) * (size_t)p.out_c);
        float *fx = malloc(sizeof(float) * (size_t)nx), *fw = malloc(sizeof(float) * (size_t)nw);
        float *fb = malloc(sizeof(float) * (size_t)p.out_c), *fy = malloc(sizeof(float) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++) {
            int v = p.in_type == OQCI_U8 ? rnd(256) : rnd(255) - 127;
            x[i] = (uint8_t)v;
            fx[i] = (float)v;
        }
        for (int64_t i = 0; i < nw; i++) {
            w[i] = (int8_t)(rnd(255) - 127);
            fw[i] = w[i];
        }
        for (int32_t k = 0; k < p.out_c; k++) {
            bias[k] = rnd(60001) - 30000;
            fb[k] = (float)bias[k];
            mult[k] = 1.0f / (float)(64 + rnd(4000));
        }
        p.w = w;
        p.bias = bias;
        p.rq = (OqciRequant){OQCI_REQ_FLOAT, 1, mult, NULL, NULL};
        int32_t *scratch = malloc(oqci_deconv_scratch(&p) + 4);
        CU_ASSERT_EQUAL(oqci_deconv(&p, x, y, scratch), OQCI_OK);
        OqcfConvParams f;
        memset(&f, 0, sizeof f);
        f.nspatial = 2;
        f.batch = p.batch;
        f.channels = p.in_c;
        f.out_channels = p.out_c;
        f.group = G;
        int64_t geo[7][2] = {{p.in_h, p.in_w}, {p.out_h, p.out_w}, {p.k_h, p.k_w},
                             {p.s_h, p.s_w}, {p.d_h, p.d_w}, {p.p_t, p.p_l}, {0, 0}};
        memcpy(f.in_size, geo[0], sizeof geo[0]);
        memcpy(f.out_size, geo[1], sizeof geo[1]);
        memcpy(f.kernel, geo[2], sizeof geo[2]);
        memcpy(f.stride, geo[3], sizeof geo[3]);
        memcpy(f.dilation, geo[4], sizeof geo[4]);
        memcpy(f.pad_begin, geo[5], sizeof geo[5]);
        CU_ASSERT_EQUAL(oqcf_conv_transpose(&f, fx, fw, fb, fy), OQCF_OK);
        int64_t osz = (int64_t)p.out_h * p.out_w;
        for (int64_t i = 0; i < ny; i++) {
            int64_t k = i / osz % p.out_c;
            int32_t want = oqci_requant((int32_t)fy[i], &p.rq, k, p.lo, p.hi);
            int32_t got = p.out_type == OQCI_S8 ? (int8_t)y[i] : y[i];
            bad += got != want;
        }
        free(x);
        free(y);
        free(w);
        free(bias);
        free(mult);
        free(fx);
        free(fw);
        free(fb);
        free(fy);
        free(scratch);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

OQC_TEST_MAIN("resize", OQC_TEST(test_float_examples), OQC_TEST(test_float_random),
              OQC_TEST(test_int8_examples), OQC_TEST(test_int8_random),
              OQC_TEST(test_conv_transpose_random), OQC_TEST(test_int8_deconv_random))
