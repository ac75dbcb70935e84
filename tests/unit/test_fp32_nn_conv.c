/* test_fp32_nn_conv.c - Conv (groups, depthwise, dilation, strides, asymmetric pads,
 * 1-D/2-D/3-D, channel views, activations, batch > 1, 2 threads), MaxPool (Indices,
 * storage orders, ceil_mode-shaped outputs), AveragePool (count_include_pad), global
 * pools, BatchNormalization and LRN (runtime/fp32/oqcf_nn.h) against naive references
 * written here in double.  Tolerances: see nn_testutil.h.
 *
 * To add a kernel test: write a reference in double next to the others, a test that
 * draws shapes with rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#include "harness.h"
#include "nn_testutil.h"

/* ---- Conv ------------------------------------------------------------------------ */

/* Naive N-d conv in double; y is dense N x K x out (the view is applied by the caller). */
static void ref_conv(const OqcfConvParams *p, const float *x, const float *w, const float *b,
                     double *y, double *tol) {
    int ns = p->nspatial;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1},
            dl[3] = {1, 1, 1}, pd[3] = {0, 0, 0};
    for (int i = 0; i < ns; i++) {
        int a = 3 - ns + i;
        in[a] = p->in_size[i];
        out[a] = p->out_size[i];
        ker[a] = p->kernel[i];
        st[a] = p->stride[i];
        dl[a] = p->dilation[i];
        pd[a] = p->pad_begin[i];
    }
    int64_t Cg = p->channels / p->group, Kg = p->out_channels / p->group;
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t inpl = in[0] * in[1] * in[2], outpl = out[0] * out[1] * out[2];
    int64_t taps = ker[0] * ker[1] * ker[2];
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t k = 0; k < p->out_channels; k++) {
            int64_t g = k / Kg;
            for (int64_t o = 0; o < outpl; o++) {
                int64_t od = o / (out[1] * out[2]), oh = o / out[2] % out[1], ow = o % out[2];
                double s = b ? b[k] : 0, mag = b ? fabs(b[k]) : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t t = 0; t < taps; t++) {
                        int64_t kd = t / (ker[1] * ker[2]), kh = t / ker[2] % ker[1];
                        int64_t kw = t % ker[2];
                        int64_t id = od * st[0] - pd[0] + kd * dl[0];
                        int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                        int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                        if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 ||
                            iw >= in[2])
                            continue;
                        double xv = x[(n * xct + p->x_coff + g * Cg + c) * inpl +
                                      (id * in[1] + ih) * in[2] + iw];
                        double wv = w[(k * Cg + c) * taps + t];
                        s += xv * wv;
                        mag += fabs(xv * wv);
                    }
                const OqcfAct *a = p->act_per_channel ? &p->act_per_channel[k] : &p->act;
                int64_t idx = (n * p->out_channels + k) * outpl + o;
                y[idx] = ref_act(a, s);
                tol[idx] = (double)(Cg * taps + 4) * FLT_EPSILON * mag + 1e-30;
            }
        }
}

static int conv_no_scratch;   /* conv_check passes no scratch (depthwise fallback path) */

/* Runs one conv case (views applied here) and checks it; returns bad elements. */
static int64_t conv_check(OqcfPool *pool, const OqcfConvParams *p, int with_bias) {
    int64_t inpl = 1, outpl = 1, taps = 1;
    for (int i = 0; i < p->nspatial; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
        taps *= p->kernel[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t yct = p->y_ctotal ? p->y_ctotal : p->out_channels;
    float *x = rnd_buf(p->batch * xct * inpl);
    float *w = rnd_buf(p->out_channels * (p->channels / p->group) * taps);
    float *b = with_bias ? rnd_buf(p->out_channels) : NULL;
    int64_t ny = p->batch * yct * outpl, nref = p->batch * p->out_channels * outpl;
    float *y = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++)
        y[i] = -777.0f;   /* channels outside the view must keep this */
    double *ref = malloc(sizeof(double) * (size_t)nref);
    double *tol = malloc(sizeof(double) * (size_t)nref);
    ref_conv(p, x, w, b, ref, tol);
    size_t ss = conv_no_scratch ? 0 : oqcf_conv_scratch_size(p, oqcf_pool_threads(pool));
    void *s = conv_no_scratch ? NULL : scratch_alloc(ss);
    int st = oqcf_conv(pool, p, x, w, b, y, s, ss);
    CU_ASSERT_EQUAL(st, OQCF_OK);
    int64_t bad = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < yct; c++) {
            const float *yp = y + (n * yct + c) * outpl;
            int in_view = c >= p->y_coff && c < p->y_coff + p->out_channels;
            if (in_view) {
                int64_t r = (n * p->out_channels + c - p->y_coff) * outpl;
                bad += mismatches("conv", yp, ref + r, tol + r, outpl);
            } else {
                for (int64_t i = 0; i < outpl; i++)
                    bad += yp[i] != -777.0f;
            }
        }
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
    free(tol);
    free(s);
    return bad;
}

/* Fills geometry fields with random kernel/stride/dilation/pads and the out sizes. */
static void rnd_geometry(OqcfConvParams *p, int ns, int64_t maxin) {
    p->nspatial = ns;
    for (int i = 0; i < ns; i++) {
        p->kernel[i] = rnd_int(1, 3 + (ns < 3));
        p->stride[i] = rnd_int(1, 3);
        p->dilation[i] = rnd_int(1, 2);
        p->pad_begin[i] = rnd_int(0, 2);
        p->pad_end[i] = rnd_int(0, 2);
        int64_t span = p->dilation[i] * (p->kernel[i] - 1) + 1;
        int64_t lo = span - p->pad_begin[i] - p->pad_end[i];
        p->in_size[i] = rnd_int(lo < 1 ? 1 : lo, (lo < 1 ? 1 : lo) + maxin);
        p->out_size[i] =
            (p->in_size[i] + p->pad_begin[i] + p->pad_end[i] - span) / p->stride[i] + 1;
    }
}

static void test_conv_random(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(5);
    for (int t = 0; t < 120; t++) {
        OqcfConvParams p = {0};
        int ns = t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 3;
        rnd_geometry(&p, ns, ns == 3 ? 5 : ns == 2 ? 11 : 30);
        p.batch = rnd_int(1, 2);
        int64_t g = rnd_int(1, 3);
        int depthwise = t % 7 == 3;
        p.group = depthwise ? rnd_int(1, 9) : g;
        p.channels = depthwise ? p.group : g * rnd_int(1, 5);
        p.out_channels = depthwise ? p.group : g * rnd_int(1, 9);
        if (t % 4 == 1) {   /* channel views on both sides */
            p.x_coff = rnd_int(0, 3);
            p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 3);
            p.y_coff = rnd_int(0, 3);
            p.y_ctotal = p.y_coff + p.out_channels + rnd_int(0, 3);
        }
        p.act = rnd_act();
        OqcfAct acts[64];
        if (t % 5 == 2) {
            for (int64_t k = 0; k < p.out_channels; k++)
                acts[k] = rnd_act();
            p.act_per_channel = acts;
        }
        int64_t bad = conv_check(t % 2 ? pool2 : NULL, &p, t % 6 != 5);
        if (bad)
            printf("\n  conv case %d (ns=%d g=%lld C=%lld K=%lld)", t, ns, (long long)p.group,
                   (long long)p.channels, (long long)p.out_channels);
        CU_ASSERT_EQUAL(bad, 0);
    }
    oqcf_pool_destroy(pool2);
}

/* Specific shapes: 1x1 fast path (with views, batch 2), resnet-like 3x3 and 7x7/2,
 * depthwise with stride and dilation, and the same under the portable microkernel. */
static void test_conv_shapes(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(9);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        OqcfConvParams pw = {2, 2, 24, 40, 1, {9, 7}, {9, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0},
                             {0, 0}, 30, 5, 50, 7, {OQCF_ACT_RELU, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(pool2, &pw, 1), 0);
        OqcfConvParams c33 = {2, 1, 16, 20, 1, {14, 14}, {14, 14}, {3, 3}, {1, 1}, {1, 1},
                              {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_CLIP, 0.0f, 0.5f}, NULL};
        CU_ASSERT_EQUAL(conv_check(pool2, &c33, 1), 0);
        OqcfConvParams c77 = {2, 1, 3, 8, 1, {37, 37}, {19, 19}, {7, 7}, {2, 2}, {1, 1},
                              {3, 3}, {3, 3}, 0, 0, 0, 0, {OQCF_ACT_NONE, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(NULL, &c77, 1), 0);
        OqcfConvParams dw = {2, 2, 12, 12, 12, {17, 16}, {8, 8}, {3, 3}, {2, 2}, {2, 1},
                             {1, 0}, {2, 1}, 0, 0, 0, 0, {OQCF_ACT_LEAKY, 0.1f, 0}, NULL};
        dw.out_size[0] = (17 + 1 + 2 - 2 * 2 - 1) / 2 + 1;
        dw.out_size[1] = (16 + 0 + 1 - 1 * 2 - 1) / 2 + 1;
        CU_ASSERT_EQUAL(conv_check(pool2, &dw, 1), 0);
        /* Long depthwise rows, strides 1 and 2: the vector row updates and their tails
         * (the stride-2 one must stop before reading past the input row). */
        OqcfConvParams dw1 = {2, 1, 5, 5, 5, {9, 45}, {9, 45}, {3, 3}, {1, 1}, {1, 1},
                              {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_RELU, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(NULL, &dw1, 1), 0);
        OqcfConvParams dw2 = {2, 1, 5, 5, 5, {9, 45}, {5, 23}, {3, 3}, {2, 2}, {1, 1},
                              {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_NONE, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(NULL, &dw2, 1), 0);
        OqcfConvParams dw3 = {2, 1, 3, 3, 3, {4, 48}, {4, 24}, {1, 3}, {1, 2}, {1, 1},
                              {0, 0}, {0, 1}, 0, 0, 0, 0, {OQCF_ACT_NONE, 0, 0}, NULL};
        CU_ASSERT_EQUAL(conv_check(NULL, &dw3, 0), 0);   /* 24 outputs read x[W-1] last */
        conv_no_scratch = 1;   /* depthwise without scratch: the row-by-row path */
        CU_ASSERT_EQUAL(conv_check(pool2, &dw, 1), 0);
        CU_ASSERT_EQUAL(conv_check(NULL, &dw2, 1), 0);
        CU_ASSERT_EQUAL(conv_check(NULL, &dw3, 0), 0);
        conv_no_scratch = 0;
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    /* Inconsistent output size and bad views are rejected. */
    OqcfConvParams bad = {1, 1, 2, 2, 1, {5}, {4}, {3}, {1}, {1}, {0}, {0}};
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &bad, NULL, NULL, NULL, NULL, NULL, 0), OQCF_EINVAL);
    bad.out_size[0] = 3;
    bad.x_ctotal = 3;
    bad.x_coff = 2;
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &bad, NULL, NULL, NULL, NULL, NULL, 0), OQCF_EINVAL);
    oqcf_pool_destroy(pool2);
}

/* The 1-D/2-D flat-offset path: strides along H and W up to 4 (phase-split planes, some
 * phases unused, e.g. 1x1 stride 2), 8 (the largest it takes) and 9 (the implicit
 * packer), dilations, 1xK and Kx1 kernels, several output bands (Kg * R large) with a
 * short last one, groups with views and batch 2; and the implicit packer when the
 * scratch holds only what the SGEMM needs, which must agree with the flat path. */
static void test_conv_flat(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(29);
    for (int t = 0; t < 60; t++) {
        OqcfConvParams p = {0};
        p.nspatial = t % 5 == 4 ? 1 : 2;
        p.batch = rnd_int(1, 2);
        p.group = rnd_int(1, 2);
        p.channels = p.group * rnd_int(1, 4);
        p.out_channels = p.group * rnd_int(1, 6);
        for (int i = 0; i < p.nspatial; i++) {
            p.kernel[i] = rnd_int(1, 4);
            p.stride[i] = t % 10 == 3 ? 8 + i : rnd_int(1, 4);
            p.dilation[i] = rnd_int(1, 3);
            p.pad_begin[i] = rnd_int(0, 2);
            p.pad_end[i] = rnd_int(0, 2);
            int64_t span = p.dilation[i] * (p.kernel[i] - 1) + 1;
            int64_t lo = span - p.pad_begin[i] - p.pad_end[i];
            lo = lo < 1 ? 1 : lo;
            p.in_size[i] = rnd_int(lo, lo + 12 * p.stride[i]);
            p.out_size[i] = (p.in_size[i] + p.pad_begin[i] + p.pad_end[i] - span) /
                                p.stride[i] + 1;
        }
        if (t % 3 == 2) {
            p.x_coff = rnd_int(0, 2);
            p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 2);
            p.y_coff = rnd_int(0, 2);
            p.y_ctotal = p.y_coff + p.out_channels + rnd_int(0, 2);
        }
        p.act = rnd_act();
        int64_t bad = conv_check(t % 2 ? pool2 : NULL, &p, t % 4 != 1);
        if (bad)
            printf("\n  flat conv case %d", t);
        CU_ASSERT_EQUAL(bad, 0);
    }
    /* Bands: Kg * R = 40 * 602 floats, two rows per band, 5 rows; and one row per band
     * (Kg * R > FLAT_BAND_FLOATS) with two threads. */
    OqcfConvParams b1 = {2, 1, 2, 40, 1, {7, 600}, {5, 600}, {3, 3}, {1, 1}, {1, 1},
                         {0, 1}, {0, 1}, 0, 0, 0, 0, {OQCF_ACT_RELU, 0, 0}, NULL};
    CU_ASSERT_EQUAL(conv_check(NULL, &b1, 1), 0);
    OqcfConvParams b2 = {2, 1, 3, 140, 1, {4, 500}, {2, 250}, {3, 3}, {2, 2}, {1, 1},
                         {1, 1}, {0, 1}, 0, 0, 0, 0, {OQCF_ACT_NONE, 0, 0}, NULL};
    CU_ASSERT_EQUAL(conv_check(pool2, &b2, 0), 0);
    /* Scratch for the implicit packer only: same result as the flat path (the same
     * sums in the same order: both feed the same SGEMM). */
    OqcfConvParams q = {2, 2, 6, 10, 2, {13, 17}, {7, 9}, {3, 3}, {2, 2}, {1, 1},
                        {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_LEAKY, 0.1f, 0}, NULL};
    int64_t nx = 2 * 6 * 13 * 17, ny = 2 * 10 * 7 * 9;
    float *x = rnd_buf(nx), *w = rnd_buf(10 * 3 * 9), *b = rnd_buf(10);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    size_t full = oqcf_conv_scratch_size(&q, 1);
    size_t small = oqcf_sgemm_scratch_size(5, 63, 27, 1);
    CU_ASSERT(small < full);
    void *s = scratch_alloc(full);
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &q, x, w, b, y1, s, full), OQCF_OK);
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &q, x, w, b, y2, s, small), OQCF_OK);
    CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof(float) * (size_t)ny), 0);
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &q, x, w, b, y2, s, small / 2), OQCF_ESCRATCH);
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
    free(s);
    oqcf_pool_destroy(pool2);
}

/* Depthwise 2-D sweep over the fast path's kernels: the unrolled 3x3 (stride 1 in four-
 * row blocks, and any stride/dilation row by row), other kernel sizes, strides 1-3 along
 * W (phase-split padded planes), output rows shorter than, equal to and longer than one
 * 8-wide chunk (masked stores, overlapping last chunk), fewer rows than a block, views
 * and per-channel activations; under the AVX2 and the portable kernels, 1 and 2 threads,
 * and once with scratch for a single thread. */
static void test_conv_depthwise_sweep(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(17);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        for (int t = 0; t < 160; t++) {
            OqcfConvParams p = {0};
            p.nspatial = 2;
            p.batch = rnd_int(1, 2);
            p.group = p.channels = p.out_channels = rnd_int(1, 5);
            int kind = t % 4;   /* 0: 3x3/1, 1: 3x3 strided or dilated, 2-3: any */
            for (int i = 0; i < 2; i++) {
                p.kernel[i] = kind < 2 ? 3 : rnd_int(1, 5);
                p.stride[i] = kind == 0 ? 1 : rnd_int(1, 3);
                p.dilation[i] = kind == 0 ? 1 : rnd_int(1, 2);
                p.pad_begin[i] = rnd_int(0, 2);
                p.pad_end[i] = rnd_int(0, 2);
                int64_t span = p.dilation[i] * (p.kernel[i] - 1) + 1;
                int64_t lo = span - p.pad_begin[i] - p.pad_end[i];
                lo = lo < 1 ? 1 : lo;
                /* output widths 1 .. ~25 (rows of 1-3 chunks); heights 1 .. ~10 */
                p.in_size[i] = rnd_int(lo, lo + (i == 1 ? 25 : 10) * p.stride[i]);
                p.out_size[i] = (p.in_size[i] + p.pad_begin[i] + p.pad_end[i] - span) /
                                    p.stride[i] + 1;
            }
            if (t % 5 == 1) {
                p.x_coff = rnd_int(0, 2);
                p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 2);
                p.y_coff = rnd_int(0, 2);
                p.y_ctotal = p.y_coff + p.out_channels + rnd_int(0, 2);
            }
            p.act = rnd_act();
            OqcfAct acts[8];
            if (t % 7 == 3) {
                for (int64_t k = 0; k < p.out_channels; k++)
                    acts[k] = rnd_act();
                p.act_per_channel = acts;
            }
            int64_t bad = conv_check(t % 3 == 1 ? pool2 : NULL, &p, t % 6 != 5);
            if (bad)
                printf("\n  depthwise case %d.%d (k %lldx%lld s %lldx%lld d %lldx%lld "
                       "out %lldx%lld)", pass, t, (long long)p.kernel[0],
                       (long long)p.kernel[1], (long long)p.stride[0], (long long)p.stride[1],
                       (long long)p.dilation[0], (long long)p.dilation[1],
                       (long long)p.out_size[0], (long long)p.out_size[1]);
            CU_ASSERT_EQUAL(bad, 0);
        }
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    /* Scratch for one thread with a 2-thread pool: the fast path runs on one thread. */
    OqcfConvParams dw = {2, 1, 6, 6, 6, {30, 30}, {30, 30}, {3, 3}, {1, 1}, {1, 1},
                         {1, 1}, {1, 1}, 0, 0, 0, 0, {OQCF_ACT_RELU, 0, 0}, NULL};
    size_t ss = oqcf_conv_scratch_size(&dw, 1);
    float *x = rnd_buf(6 * 900), *w = rnd_buf(6 * 9), *y1 = malloc(sizeof(float) * 6 * 900),
          *y2 = malloc(sizeof(float) * 6 * 900);
    void *s1 = scratch_alloc(ss);
    CU_ASSERT_EQUAL(oqcf_conv(NULL, &dw, x, w, NULL, y1, s1, ss), OQCF_OK);
    CU_ASSERT_EQUAL(oqcf_conv(pool2, &dw, x, w, NULL, y2, s1, ss), OQCF_OK);
    CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof(float) * 6 * 900), 0);
    free(x);
    free(w);
    free(y1);
    free(y2);
    free(s1);
    oqcf_pool_destroy(pool2);
}

/* ---- pooling -------------------------------------------------------------------- */

/* Naive pooling straight from the ONNX definition: every tap of every window is
 * visited; taps outside the input are skipped (max, avg count) or counted when inside
 * input + explicit pads (avg, count_include_pad). */
static void ref_pool(const OqcfPoolParams *p, const float *x, int is_max, double *y,
                     int64_t *ind, double *tol) {
    int ns = p->nspatial;
    int64_t inpl = 1, outpl = 1, taps = 1;
    for (int i = 0; i < ns; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
        taps *= p->kernel[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < p->channels; c++)
            for (int64_t o = 0; o < outpl; o++) {
                int64_t oi[3], rem = o;
                for (int i = ns - 1; i >= 0; i--) {
                    oi[i] = rem % p->out_size[i];
                    rem /= p->out_size[i];
                }
                double best = -FLT_MAX, sum = 0, mag = 0;
                int64_t at = -1, cnt = 0, cntp = 0;
                for (int64_t t = 0; t < taps; t++) {
                    int64_t ki[3], pos[3], r2 = t, inside = 1, inpad = 1;
                    for (int i = ns - 1; i >= 0; i--) {
                        ki[i] = r2 % p->kernel[i];
                        r2 /= p->kernel[i];
                    }
                    for (int i = 0; i < ns; i++) {
                        pos[i] = oi[i] * p->stride[i] - p->pad_begin[i] + ki[i] * p->dilation[i];
                        inside &= pos[i] >= 0 && pos[i] < p->in_size[i];
                        inpad &= pos[i] < p->in_size[i] + p->pad_end[i];
                    }
                    cntp += inpad;
                    if (!inside)
                        continue;
                    int64_t off = 0, offc = 0, mul = 1;
                    for (int i = 0; i < ns; i++)
                        off = off * p->in_size[i] + pos[i];
                    for (int i = 0; i < ns; i++) {   /* column-major: first axis fastest */
                        offc += pos[i] * mul;
                        mul *= p->in_size[i];
                    }
                    double v = x[(n * xct + p->x_coff + c) * inpl + off];
                    cnt++;
                    sum += v;
                    mag += fabs(v);
                    if (v > best || at < 0) {
                        best = v;
                        at = (n * p->channels + c) * inpl + (p->storage_order ? offc : off);
                    }
                }
                int64_t idx = (n * p->channels + c) * outpl + o;
                if (is_max) {
                    y[idx] = best;
                    ind[idx] = at;
                    tol[idx] = 0;
                } else {
                    int64_t d = p->count_include_pad ? cntp : cnt;
                    y[idx] = d ? sum / (double)d : 0;
                    /* sum of cnt floats, then one division */
                    tol[idx] = d ? ((double)cnt + 2) * FLT_EPSILON * mag / (double)d : 0;
                }
            }
}

static int pool_no_indices;   /* pool_check runs MaxPool without Indices (fast path) */

static int64_t pool_check(OqcfPool *pool, const OqcfPoolParams *p, int is_max) {
    int64_t inpl = 1, outpl = 1;
    for (int i = 0; i < p->nspatial; i++) {
        inpl *= p->in_size[i];
        outpl *= p->out_size[i];
    }
    int64_t xct = p->x_ctotal ? p->x_ctotal : p->channels;
    int64_t yct = p->y_ctotal ? p->y_ctotal : p->channels;
    int64_t nref = p->batch * p->channels * outpl, ny = p->batch * yct * outpl;
    float *x = rnd_buf(p->batch * xct * inpl);
    float *y = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++)
        y[i] = -777.0f;
    int64_t *ind = malloc(sizeof(int64_t) * (size_t)nref);
    int64_t *rind = malloc(sizeof(int64_t) * (size_t)nref);
    double *ref = malloc(sizeof(double) * (size_t)nref);
    double *tol = malloc(sizeof(double) * (size_t)nref);
    ref_pool(p, x, is_max, ref, rind, tol);
    int st = is_max ? oqcf_maxpool(pool, p, x, y, pool_no_indices ? NULL : ind)
                    : oqcf_avgpool(pool, p, x, y);
    CU_ASSERT_EQUAL(st, OQCF_OK);
    int64_t bad = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < yct; c++) {
            const float *yp = y + (n * yct + c) * outpl;
            if (c >= p->y_coff && c < p->y_coff + p->channels) {
                int64_t r = (n * p->channels + c - p->y_coff) * outpl;
                bad += mismatches(is_max ? "maxpool" : "avgpool", yp, ref + r, tol + r, outpl);
            } else {
                for (int64_t i = 0; i < outpl; i++)
                    bad += yp[i] != -777.0f;
            }
        }
    if (is_max && !pool_no_indices)
        for (int64_t i = 0; i < nref; i++)
            bad += ind[i] != rind[i];
    free(x);
    free(y);
    free(ind);
    free(rind);
    free(ref);
    free(tol);
    return bad;
}

static void test_pool_random(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(11);
    for (int t = 0; t < 160; t++) {
        OqcfPoolParams p = {0};
        int ns = 1 + t % 3;
        p.nspatial = ns;
        p.batch = rnd_int(1, 2);
        p.channels = rnd_int(1, 4);
        int ceil_mode = (t / 3) % 2;
        for (int i = 0; i < ns; i++) {
            p.kernel[i] = rnd_int(1, 3);
            p.stride[i] = rnd_int(1, 3);
            p.dilation[i] = rnd_int(1, 2);
            p.pad_begin[i] = rnd_int(0, p.kernel[i] - 1);   /* ONNX: pads < kernel */
            p.pad_end[i] = rnd_int(0, p.kernel[i] - 1);
            int64_t span = p.dilation[i] * (p.kernel[i] - 1) + 1;
            int64_t lo = span - p.pad_begin[i] - p.pad_end[i];
            p.in_size[i] = rnd_int(lo < 1 ? 1 : lo, (lo < 1 ? 1 : lo) + (ns == 3 ? 5 : 12));
            int64_t num = p.in_size[i] + p.pad_begin[i] + p.pad_end[i] - span;
            int64_t q = ceil_mode ? (num + p.stride[i] - 1) / p.stride[i] : num / p.stride[i];
            p.out_size[i] = q + 1;
            /* ONNX ceil_mode: the last window must start inside input or left pad */
            if (ceil_mode && (p.out_size[i] - 1) * p.stride[i] >= p.in_size[i] + p.pad_begin[i])
                p.out_size[i]--;
        }
        p.count_include_pad = (t / 2) % 2;
        p.storage_order = (t / 5) % 2;
        if (t % 4 == 3) {
            p.x_coff = rnd_int(0, 2);
            p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 2);
            p.y_coff = rnd_int(0, 2);
            p.y_ctotal = p.y_coff + p.channels + rnd_int(0, 2);
        }
        int64_t bad = pool_check(t % 2 ? pool2 : NULL, &p, t % 2);
        if (bad)
            printf("\n  pool case %d (ns=%d ceil=%d)", t, ns, ceil_mode);
        CU_ASSERT_EQUAL(bad, 0);
    }
    oqcf_pool_destroy(pool2);
}

/* Random 1-D/2-D pooling geometry for the MaxPool sweep: windows up to 5 (dilated up to
 * 3), strides up to 5 (the fast path takes up to 4 along W), ceil_mode overhangs, pads
 * up to kernel - 1, output widths 1 .. ~40. */
static void rnd_pool_geometry(OqcfPoolParams *p, int ns) {
    p->nspatial = ns;
    int ceil_mode = (int)rnd_int(0, 1);
    for (int i = 0; i < ns; i++) {
        p->kernel[i] = rnd_int(1, 5);
        p->stride[i] = rnd_int(1, 5);
        p->dilation[i] = rnd_int(1, 3);
        p->pad_begin[i] = rnd_int(0, p->kernel[i] - 1);
        p->pad_end[i] = rnd_int(0, p->kernel[i] - 1);
        int64_t span = p->dilation[i] * (p->kernel[i] - 1) + 1;
        int64_t lo = span - p->pad_begin[i] - p->pad_end[i];
        lo = lo < 1 ? 1 : lo;
        p->in_size[i] = rnd_int(lo, lo + (i == ns - 1 ? 40 : 12) * p->stride[i] / 2 + 1);
        int64_t num = p->in_size[i] + p->pad_begin[i] + p->pad_end[i] - span;
        p->out_size[i] = (ceil_mode ? (num + p->stride[i] - 1) / p->stride[i]
                                    : num / p->stride[i]) + 1;
        if (ceil_mode && (p->out_size[i] - 1) * p->stride[i] >= p->in_size[i] + p->pad_begin[i])
            p->out_size[i]--;
    }
}

/* MaxPool without Indices (the separable fast path for 1-D and 2-D, the general path
 * otherwise) against the naive reference, under the AVX2 and the portable kernels, with
 * views and 2 threads; then bit-exact against MaxPool with Indices (the general
 * output-by-output path) on inputs holding NaN, +-inf and -FLT_MAX, which the
 * reference does not model: NaN never wins, a window of -inf gives -FLT_MAX. */
static void test_maxpool_sweep(void) {
    OqcfPool *pool2 = test_pool2();
    rnd_seed(23);
    pool_no_indices = 1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        for (int t = 0; t < 200; t++) {
            OqcfPoolParams p = {0};
            rnd_pool_geometry(&p, 1 + t % 2);
            p.batch = rnd_int(1, 2);
            p.channels = rnd_int(1, 4);
            if (t % 4 == 3) {
                p.x_coff = rnd_int(0, 2);
                p.x_ctotal = p.x_coff + p.channels + rnd_int(0, 2);
                p.y_coff = rnd_int(0, 2);
                p.y_ctotal = p.y_coff + p.channels + rnd_int(0, 2);
            }
            int64_t bad = pool_check(t % 3 == 1 ? pool2 : NULL, &p, 1);
            if (bad)
                printf("\n  maxpool case %d.%d (ns=%d k %lld s %lld d %lld out %lld)", pass, t,
                       p.nspatial, (long long)p.kernel[p.nspatial - 1],
                       (long long)p.stride[p.nspatial - 1],
                       (long long)p.dilation[p.nspatial - 1],
                       (long long)p.out_size[p.nspatial - 1]);
            CU_ASSERT_EQUAL(bad, 0);
        }
    }
    pool_no_indices = 0;
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    /* A very wide row and a very tall dilated window: the general path. */
    OqcfPoolParams wide = {2, 1, 2, {3, 3000}, {1, 2998}, {3, 3}, {1, 1}, {1, 1}};
    OqcfPoolParams tall = {2, 1, 2, {40, 9}, {4, 9}, {5, 3}, {1, 1}, {9, 1}, {0, 1}, {0, 1}};
    pool_no_indices = 1;
    CU_ASSERT_EQUAL(pool_check(NULL, &wide, 1), 0);
    CU_ASSERT_EQUAL(pool_check(NULL, &tall, 1), 0);
    pool_no_indices = 0;
    /* Special values: fast path == general path, bit for bit. */
    const float specials[] = {NAN, INFINITY, -INFINITY, -FLT_MAX};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE);
        for (int t = 0; t < 60; t++) {
            OqcfPoolParams p = {0};
            rnd_pool_geometry(&p, 1 + t % 2);
            p.batch = 1;
            p.channels = 2;
            int64_t inpl = 1, outpl = 1;
            for (int i = 0; i < p.nspatial; i++) {
                inpl *= p.in_size[i];
                outpl *= p.out_size[i];
            }
            float *x = rnd_buf(2 * inpl);
            for (int64_t i = 0; i < 2 * inpl; i++)
                if (rnd_int(0, 3) == 0)
                    x[i] = specials[rnd_int(0, 3)];
            float *y1 = malloc(sizeof(float) * (size_t)(2 * outpl));
            float *y2 = malloc(sizeof(float) * (size_t)(2 * outpl));
            int64_t *ind = malloc(sizeof(int64_t) * (size_t)(2 * outpl));
            CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &p, x, y1, NULL), OQCF_OK);
            CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &p, x, y2, ind), OQCF_OK);
            CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof(float) * (size_t)(2 * outpl)), 0);
            free(x);
            free(y1);
            free(y2);
            free(ind);
        }
    }
    oqcf_sgemm_force_isa(OQCF_ISA_AUTO);
    oqcf_pool_destroy(pool2);
}

/* Hand-worked ONNX examples (independent of ref_pool). */
static void test_pool_examples(void) {
    /* 1-D x = [1 2 3 4 5], kernel 2, stride 2, ceil_mode: 3 outputs, the last window
     * [5, past-the-end]. */
    float x[5] = {1, 2, 3, 4, 5}, y[3];
    int64_t ind[3];
    OqcfPoolParams p = {1, 1, 1, {5}, {3}, {2}, {2}, {1}, {0}, {0}};
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &p, x, y, ind), OQCF_OK);
    CU_ASSERT(y[0] == 2 && y[1] == 4 && y[2] == 5);
    CU_ASSERT(ind[0] == 1 && ind[1] == 3 && ind[2] == 4);
    p.count_include_pad = 1;   /* no explicit pads: the overhang is not counted */
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &p, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.5f && y[1] == 3.5f && y[2] == 5.0f);
    /* pads (1, 1), kernel 3, stride 2: windows [-1..1], [1..3], [3..5]. */
    OqcfPoolParams q = {1, 1, 1, {5}, {3}, {3}, {2}, {1}, {1}, {1}, 1};
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &q, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.0f && y[1] == 3.0f && y[2] == 3.0f);   /* 3/3, 9/3, 9/3 */
    q.count_include_pad = 0;
    CU_ASSERT_EQUAL(oqcf_avgpool(NULL, &q, x, y), OQCF_OK);
    CU_ASSERT(y[0] == 1.5f && y[1] == 3.0f && y[2] == 4.5f);
    /* 2-D storage_order 1: x is 2 x 3 = [[1 9 2] [3 4 8]], global 2x3 window: max 9 at
     * (0, 1): row-major 1, column-major 0 + 1 * 2 = 2; batch 1 channel 1 adds 6. */
    float x2[12] = {0, 0, 0, 0, 0, 0, 1, 9, 2, 3, 4, 8}, y2[2];
    int64_t i2[2];
    OqcfPoolParams r = {2, 1, 2, {2, 3}, {1, 1}, {2, 3}, {1, 1}, {1, 1}};
    r.storage_order = 1;
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &r, x2, y2, i2), OQCF_OK);
    CU_ASSERT(y2[1] == 9.0f && i2[0] == 0 && i2[1] == 6 + 2);
    r.storage_order = 0;
    CU_ASSERT_EQUAL(oqcf_maxpool(NULL, &r, x2, y2, i2), OQCF_OK);
    CU_ASSERT(i2[1] == 6 + 1);
}

static void test_global_pool(void) {
    rnd_seed(13);
    OqcfPool *pool2 = test_pool2();
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 3), C = rnd_int(1, 7), S = rnd_int(1, 200);
        float *x = rnd_buf(N * C * S), *ya = malloc(sizeof(float) * (size_t)(N * C)),
              *ym = malloc(sizeof(float) * (size_t)(N * C));
        CU_ASSERT_EQUAL(oqcf_global_avgpool(t % 2 ? pool2 : NULL, N, C, S, x, ya), OQCF_OK);
        CU_ASSERT_EQUAL(oqcf_global_maxpool(t % 2 ? pool2 : NULL, N, C, S, x, ym), OQCF_OK);
        for (int64_t pl = 0; pl < N * C; pl++) {
            double s = 0, mag = 0, m = -INFINITY;
            for (int64_t i = 0; i < S; i++) {
                s += x[pl * S + i];
                mag += fabs(x[pl * S + i]);
                m = x[pl * S + i] > m ? x[pl * S + i] : m;
            }
            double avg = s / (double)S, tol = ((double)S + 2) * FLT_EPSILON * mag / (double)S;
            CU_ASSERT_EQUAL(mismatches("gavg", &ya[pl], &avg, &tol, 1), 0);
            CU_ASSERT_EQUAL(ym[pl], (float)m);
        }
        free(x);
        free(ya);
        free(ym);
    }
    oqcf_pool_destroy(pool2);
}

/* ---- normalisation ------------------------------------------------------------------ */

static void test_batchnorm(void) {
    rnd_seed(17);
    OqcfPool *pool2 = test_pool2();
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 3), C = rnd_int(1, 9), S = t % 4 == 0 ? 1 : rnd_int(1, 50);
        float *x = rnd_buf(N * C * S), *y = malloc(sizeof(float) * (size_t)(N * C * S));
        float *sc = rnd_buf(C), *bi = rnd_buf(C), *mu = rnd_buf(C), *var = rnd_buf(C);
        for (int64_t c = 0; c < C; c++)
            var[c] = fabsf(var[c]) + 0.01f;
        float eps = 1e-5f;
        int in_place = t % 3 == 0;
        if (in_place)
            memcpy(y, x, sizeof(float) * (size_t)(N * C * S));
        CU_ASSERT_EQUAL(oqcf_batchnorm(t % 2 ? pool2 : NULL, N, C, S, in_place ? y : x, sc, bi,
                                       mu, var, eps, y), OQCF_OK);
        for (int64_t i = 0; i < N * C * S; i++) {
            int64_t c = i / S % C;
            double inv = 1.0 / sqrt((double)var[c] + eps);
            double want = ((double)x[i] - mu[c]) * inv * sc[c] + bi[c];
            /* folded into x*a + b: a, b and the product/sum each rounded once */
            double tol = 6 * FLT_EPSILON *
                         (fabs(x[i] * inv * sc[c]) + fabs(mu[c] * inv * sc[c]) + fabs(bi[c]));
            CU_ASSERT_EQUAL(mismatches("bn", &y[i], &want, &tol, 1), 0);
        }
        free(x);
        free(y);
        free(sc);
        free(bi);
        free(mu);
        free(var);
    }
    oqcf_pool_destroy(pool2);
}

static void test_lrn(void) {
    rnd_seed(19);
    OqcfPool *pool2 = test_pool2();
    for (int t = 0; t < 20; t++) {
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 12), S = rnd_int(1, 30), size = rnd_int(1, 6);
        float alpha = 1e-2f * (1 + rnd_f()), beta = 0.75f + 0.2f * rnd_f();
        float bias = 1.0f + rnd_f() * 0.5f;
        float *x = rnd_buf(N * C * S), *y = malloc(sizeof(float) * (size_t)(N * C * S));
        CU_ASSERT_EQUAL(oqcf_lrn(t % 2 ? pool2 : NULL, N, C, S, x, size, alpha, beta, bias, y),
                        OQCF_OK);
        for (int64_t i = 0; i < N * C * S; i++) {
            int64_t n = i / (C * S), c = i / S % C, s = i % S;
            int64_t lo = c - (size - 1) / 2, hi = c + size / 2;   /* floor, ceil of (size-1)/2 */
            double sq = 0;
            for (int64_t cc = lo < 0 ? 0 : lo; cc <= (hi > C - 1 ? C - 1 : hi); cc++) {
                double v = x[(n * C + cc) * S + s];
                sq += v * v;
            }
            double want = x[i] / pow(bias + alpha / size * sq, beta);
            /* size-term float sum of squares, then powf (a few ulp) and a division */
            double tol = ((double)size + 12) * FLT_EPSILON * fabs(want);
            CU_ASSERT_EQUAL(mismatches("lrn", &y[i], &want, &tol, 1), 0);
        }
        CU_ASSERT_EQUAL(oqcf_lrn(NULL, N, C, S, x, size, alpha, beta, bias, x), OQCF_EINVAL);
        free(x);
        free(y);
    }
    oqcf_pool_destroy(pool2);
}

OQC_TEST_MAIN("fp32-nn-conv", OQC_TEST(test_conv_random), OQC_TEST(test_conv_shapes),
              OQC_TEST(test_conv_flat), OQC_TEST(test_conv_depthwise_sweep),
              OQC_TEST(test_pool_random), OQC_TEST(test_maxpool_sweep),
              OQC_TEST(test_pool_examples),
              OQC_TEST(test_global_pool), OQC_TEST(test_batchnorm), OQC_TEST(test_lrn))
