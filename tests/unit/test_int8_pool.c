/* test_int8_pool.c - the INT8 kernel library's pooling and element-wise kernels
 * (runtime/int8/oqci.h: oqci_maxpool, oqci_avgpool, oqci_add, oqci_clamp, oqci_quantize)
 * against direct scalar references written independently here, on seeded random small
 * odd shapes, then once per kernel family this CPU has (oqci_force_isa) on shapes aimed
 * at the vector paths.  The conv kernels and the scalar primitives are
 * test_int8_kernels.c's.
 *
 * Tolerances.  Everything integer is compared EXACTLY: the references requantize with
 * the very primitives of oqci.h (oqci_requant), which test_int8_kernels.c checks against
 * formulas computed another way.  Quantization's float inputs are compared with
 * oqci_round_clamp of x / scale, exactly too.
 *
 * To add a test: write the direct reference next to the others, a test drawing shapes
 * with rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include "harness.h"
#include "int8_testutil.h"
#include "nn_testutil.h"
#include "oqci.h"

/* Kernel families this CPU runs (portable first). */
static int isas[OQCI_ISA_COUNT], nisas;

static void find_isas(void) {
    if (!nisas)
        nisas = int8_isas(isas);
}

/* ---- pooling -------------------------------------------------------------------------- */

/* Direct max/average pooling: yref dense N x C x out_h x out_w.  Max: padding is skipped
 * (never wins); an empty window gives lo.  Average: count = inside elements or k_h*k_w;
 * count 0 gives 0 clamped; accumulator outputs (OQCI_S32): the sum clamped. */
static void ref_pool(const OqciPool *p, const uint8_t *x, int avg, int32_t *yref) {
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < p->channels; c++)
            for (int64_t oh = 0; oh < p->out_h; oh++)
                for (int64_t ow = 0; ow < p->out_w; ow++) {
                    int64_t sum = 0, count = 0;
                    int32_t mx = -1000;
                    for (int64_t i = 0; i < p->k_h; i++)
                        for (int64_t j = 0; j < p->k_w; j++) {
                            int64_t ih = oh * p->s_h - p->p_t + i * p->d_h;
                            int64_t iw = ow * p->s_w - p->p_l + j * p->d_w;
                            if (ih < 0 || ih >= p->in_h || iw < 0 || iw >= p->in_w)
                                continue;
                            int32_t v =
                                qget(x, p->in_type, ((n * p->channels + c) * p->in_h + ih) * p->in_w + iw);
                            sum += v;
                            count++;
                            if (v > mx)
                                mx = v;
                        }
                    int32_t q;
                    if (avg && p->out_type == OQCI_S32) {
                        q = sum < p->lo ? p->lo : sum > p->hi ? p->hi : (int32_t)sum;
                    } else if (avg) {
                        if (p->count_include_pad)
                            count = p->k_h * p->k_w;
                        q = count ? oqci_requant((int32_t)sum, &p->rq, count, p->lo, p->hi)
                                  : (0 < p->lo ? p->lo : 0 > p->hi ? p->hi : 0);
                    } else if (!count) {
                        q = p->lo;
                    } else if (p->requant) {
                        q = oqci_requant(mx, &p->rq, 0, p->lo, p->hi);
                    } else {
                        q = mx < p->lo ? p->lo : mx > p->hi ? p->hi : mx;
                    }
                    yref[((n * p->channels + c) * p->out_h + oh) * p->out_w + ow] = q;
                }
}

/* Runs the pool and compares exactly (and the view's outside channels untouched). */
static int64_t pool_run(const OqciPool *p, const uint8_t *x, int avg) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int64_t ny = p->batch * p->out_ctotal * pix;
    size_t ybytes = (size_t)ny * osize(p->out_type);
    uint8_t *y = malloc(ybytes);
    int32_t *ref = malloc(sizeof(int32_t) * (size_t)(p->batch * p->channels * pix));
    memset(y, 0x5A, ybytes);
    int st = avg ? oqci_avgpool(p, x, y) : oqci_maxpool(p, x, y);
    CU_ASSERT_EQUAL(st, OQCI_OK);
    ref_pool(p, x, avg, ref);
    int64_t bad = 0;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t c = 0; c < p->out_ctotal; c++)
            for (int64_t i = 0; i < pix; i++) {
                int in_view = c >= p->out_coff && c < p->out_coff + p->channels;
                int32_t want = in_view ? ref[(n * p->channels + c - p->out_coff) * pix + i]
                                       : fill_value(p->out_type, 0x5A);
                int32_t got = yget(y, p->out_type, (n * p->out_ctotal + c) * pix + i);
                if (got != want && bad++ < 3)
                    printf("\n  %s n=%lld c=%lld pix=%lld: got %d want %d", avg ? "avg" : "max",
                           (long long)n, (long long)c, (long long)i, got, want);
            }
    free(y);
    free(ref);
    return bad;
}

/* Random geometry (pads may exceed half the window: some windows hold padding only). */
static void rnd_pool(OqciPool *p, int avg) {
    memset(p, 0, sizeof *p);
    p->batch = (int32_t)rnd_int(1, 3);
    p->channels = (int32_t)rnd_int(1, 6);
    int32_t *kk[2] = {&p->k_h, &p->k_w}, *ss[2] = {&p->s_h, &p->s_w}, *dd[2] = {&p->d_h, &p->d_w};
    int32_t *pb[2] = {&p->p_t, &p->p_l}, *in[2] = {&p->in_h, &p->in_w};
    int32_t *out[2] = {&p->out_h, &p->out_w};
    for (int a = 0; a < 2; a++) {
        *kk[a] = (int32_t)rnd_int(1, 4);
        *ss[a] = (int32_t)rnd_int(1, 3);
        *dd[a] = avg && rnd_int(0, 1) ? 1 : (int32_t)rnd_int(1, 2);
        *pb[a] = (int32_t)rnd_int(0, 2);
        int32_t pe = (int32_t)rnd_int(0, 2), span = *dd[a] * (*kk[a] - 1) + 1;
        int32_t lo = span - *pb[a] - pe;
        if (lo < 1)
            lo = 1;
        *in[a] = (int32_t)rnd_int(lo, lo + 6);
        *out[a] = (*in[a] + *pb[a] + pe - span) / *ss[a] + 1;
    }
    p->out_coff = rnd_int(0, 1) ? (int32_t)rnd_int(0, 2) : 0;
    p->out_ctotal = p->out_coff + p->channels + (int32_t)rnd_int(0, 2);
    p->in_type = (int32_t)rnd_int(0, 1);
    p->out_type = (int32_t)rnd_int(0, 1);
    rnd_clamp(p->out_type, &p->lo, &p->hi);
}

/* Exact: random max pools, with and without requant (both modes). */
static void test_maxpool_random(void) {
    rnd_seed(31);
    int64_t bad = 0;
    for (int t = 0; t < 400; t++) {
        OqciPool p;
        rnd_pool(&p, 0);
        double M = 0.4 + (rnd_f() + 1);
        Rq r = rq_make(t % 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 0, 1, &M);
        p.requant = t % 3 != 0;
        p.rq = r.rq;
        uint8_t *x = rnd_q((int64_t)p.batch * p.channels * p.in_h * p.in_w, p.in_type);
        bad += pool_run(&p, x, 0) != 0;
        free(x);
        rq_free(&r);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact: random average pools, count_include_pad on and off, per-count table M / count
 * (both modes), and a single multiplier when every count is k_h * k_w. */
static void test_avgpool_random(void) {
    rnd_seed(32);
    int64_t bad = 0;
    for (int t = 0; t < 400; t++) {
        OqciPool p;
        rnd_pool(&p, 1);
        p.count_include_pad = t % 2;
        int32_t taps = p.k_h * p.k_w;
        double Ms[17], M0 = 0.5 + (rnd_f() + 1);
        for (int32_t c = 0; c <= taps; c++)
            Ms[c] = c ? M0 / c : 0.0;
        Rq r = rq_make(t % 4 < 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 1, taps + 1, Ms);
        p.rq = r.rq;
        if (t % 8 == 7) {   /* one multiplier: entry 0 = M / k_h k_w, include_pad */
            p.count_include_pad = 1;
            p.rq.per_index = 0;
            r.mult[0] = (float)(M0 / taps);
            CU_ASSERT_EQUAL(oqci_fixed_multiplier(M0 / taps, &r.m[0], &r.shift[0]), OQCI_OK);
        }
        uint8_t *x = rnd_q((int64_t)p.batch * p.channels * p.in_h * p.in_w, p.in_type);
        bad += pool_run(&p, x, 1) != 0;
        free(x);
        rq_free(&r);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Hand-checked examples, exact.
 * avg 3x3, stride 1, pad 1 on a 3x3 image of 90s (u8), float M / count:
 *   count excludes pad: every output 90;
 *   count_include_pad: corner 4 * 90 / 9 = 40, edge 6 * 90 / 9 = 60, centre 90.
 * max of an all-negative s8 image with padding: the max is the largest input (-3), not
 * the padding's 0; with requant M = 2 it becomes -6; clamped by a ReLU it is 0.
 * max with k 2, dilation 3, pad 1 on a 1x2 row: the single window (-1, 2) holds no
 * input and gives lo.  Global average pool = window of the whole image. */
static void test_pool_examples(void) {
    uint8_t x[9], y[9];
    float mults[10];
    for (int i = 0; i < 9; i++)
        x[i] = 90;
    for (int c = 1; c <= 9; c++)
        mults[c] = 1.0f / (float)c;
    mults[0] = 0;
    OqciPool p;
    memset(&p, 0, sizeof p);
    p.batch = p.channels = 1;
    p.in_h = p.in_w = p.out_h = p.out_w = 3;
    p.k_h = p.k_w = 3;
    p.s_h = p.s_w = p.d_h = p.d_w = 1;
    p.p_t = p.p_l = 1;
    p.out_ctotal = 1;
    p.in_type = p.out_type = OQCI_U8;
    p.lo = 0;
    p.hi = 255;
    p.rq.mode = OQCI_REQ_FLOAT;
    p.rq.per_index = 1;
    p.rq.mult = mults;
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_OK);
    for (int i = 0; i < 9; i++)
        CU_ASSERT_EQUAL(y[i], 90);
    p.count_include_pad = 1;
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_OK);
    static const uint8_t want_inc[9] = {40, 60, 40, 60, 90, 60, 40, 60, 40};
    CU_ASSERT_EQUAL(memcmp(y, want_inc, 9), 0);
    /* global average pool of 1..9 (u8): 45 / 9 = 5 */
    for (int i = 0; i < 9; i++)
        x[i] = (uint8_t)(i + 1);
    p.count_include_pad = 0;
    p.p_t = p.p_l = 0;
    p.out_h = p.out_w = 1;
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_OK);
    CU_ASSERT_EQUAL(y[0], 5);
    /* the same with accumulator outputs: the sum 45, no division; clamped to [0, 40];
     * and 3x3 windows with pad 1 (count_include_pad changes nothing): corner 1 2 4 5 */
    {
        OqciPool q = p;
        int32_t y32[9];
        q.out_type = OQCI_S32;
        q.lo = INT32_MIN;
        q.hi = INT32_MAX;
        q.rq = unread_rq(0);
        CU_ASSERT_EQUAL(oqci_avgpool(&q, x, y32), OQCI_OK);
        CU_ASSERT_EQUAL(y32[0], 45);
        q.lo = 0;
        q.hi = 40;
        CU_ASSERT_EQUAL(oqci_avgpool(&q, x, y32), OQCI_OK);
        CU_ASSERT_EQUAL(y32[0], 40);
        q.hi = INT32_MAX;
        q.p_t = q.p_l = 1;
        q.out_h = q.out_w = 3;
        q.count_include_pad = 1;
        static const int32_t want32[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
        CU_ASSERT_EQUAL(oqci_avgpool(&q, x, y32), OQCI_OK);
        CU_ASSERT_EQUAL(memcmp(y32, want32, sizeof want32), 0);
    }

    /* max: all-negative s8 with padding */
    int8_t xs[9] = {-9, -8, -7, -6, -5, -4, -3, -10, -20};
    int32_t m;
    int8_t sh;
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(2.0, &m, &sh), OQCI_OK);
    memset(&p, 0, sizeof p);
    p.batch = p.channels = 1;
    p.in_h = p.in_w = 3;
    p.out_h = p.out_w = 1;
    p.k_h = p.k_w = 3;
    p.s_h = p.s_w = p.d_h = p.d_w = 1;
    p.p_t = p.p_l = 1;   /* window rows -1..1, cols -1..1: inputs -9 -8 -6 -5 */
    p.out_ctotal = 1;
    p.in_type = p.out_type = OQCI_S8;
    p.lo = -127;
    p.hi = 127;
    int8_t ys[2];
    CU_ASSERT_EQUAL(oqci_maxpool(&p, xs, ys), OQCI_OK);
    CU_ASSERT_EQUAL(ys[0], -5);
    p.p_t = p.p_l = 0;   /* whole image */
    CU_ASSERT_EQUAL(oqci_maxpool(&p, xs, ys), OQCI_OK);
    CU_ASSERT_EQUAL(ys[0], -3);
    p.requant = 1;
    p.rq.mode = OQCI_REQ_FIXED;
    p.rq.m = &m;
    p.rq.shift = &sh;
    CU_ASSERT_EQUAL(oqci_maxpool(&p, xs, ys), OQCI_OK);
    CU_ASSERT_EQUAL(ys[0], -6);
    p.lo = 0;   /* fused ReLU */
    CU_ASSERT_EQUAL(oqci_maxpool(&p, xs, ys), OQCI_OK);
    CU_ASSERT_EQUAL(ys[0], 0);
    /* empty window */
    p.requant = 0;
    p.lo = -100;
    p.in_h = 1;
    p.in_w = 2;
    p.k_h = 1;
    p.k_w = 2;
    p.d_w = 3;
    p.p_l = 1;
    CU_ASSERT_EQUAL(oqci_maxpool(&p, xs, ys), OQCI_OK);
    CU_ASSERT_EQUAL(ys[0], -100);
}

static void test_pool_einval(void) {
    uint8_t x[4] = {0}, y[4];
    int32_t m = 1 << 30;
    int8_t sh = 3, bad_sh[5] = {0, 1, 63, 1, 1};
    OqciPool ok;
    memset(&ok, 0, sizeof ok);
    ok.batch = ok.channels = 1;
    ok.in_h = ok.in_w = 2;
    ok.out_h = ok.out_w = 1;
    ok.k_h = ok.k_w = ok.s_h = ok.s_w = 2;
    ok.d_h = ok.d_w = 1;
    ok.out_ctotal = 1;
    ok.lo = -127;
    ok.hi = 127;
    ok.rq.mode = OQCI_REQ_FIXED;
    ok.rq.m = &m;
    ok.rq.shift = &sh;
    CU_ASSERT_EQUAL(oqci_maxpool(&ok, x, y), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_avgpool(&ok, x, y), OQCI_OK);
    OqciPool p;
#define BAD(stmt)                                                                   \
    do {                                                                            \
        p = ok;                                                                     \
        stmt;                                                                       \
        CU_ASSERT_EQUAL(oqci_maxpool(&p, x, y) == OQCI_EINVAL &&                    \
                            oqci_avgpool(&p, x, y) == OQCI_EINVAL, 1);              \
    } while (0)
    BAD(p.out_coff = 1);
    BAD(p.channels = 0);
    BAD(p.k_w = 0);
    BAD(p.s_h = 0);
    BAD(p.in_type = 3);
    BAD(p.out_type = 3);
    BAD((p.lo = 3, p.hi = 2));
    BAD((p.out_type = OQCI_U8, p.lo = -1));
    BAD((p.requant = 1, p.rq.m = NULL));
    BAD((p.requant = 1, p.rq.mode = OQCI_REQ_FLOAT));
    BAD((p.out_type = OQCI_S32, p.lo = 1, p.hi = 0));   /* empty clamp */
    BAD(p.in_type = OQCI_S32);                         /* (an output type only) */
#undef BAD
    /* max pooling has no accumulator outputs; average pooling's do not read rq */
    p = ok;
    p.out_type = OQCI_S32;
    p.lo = INT32_MIN;
    p.hi = INT32_MAX;
    CU_ASSERT_EQUAL(oqci_maxpool(&p, x, y), OQCI_EINVAL);
    p.requant = 1;
    CU_ASSERT_EQUAL(oqci_maxpool(&p, x, y), OQCI_EINVAL);
    p.requant = 0;
    p.rq = unread_rq(1);
    CU_ASSERT_EQUAL(oqci_maxpool(&p, x, y), OQCI_EINVAL);
    {
        uint8_t x4[4] = {250, 251, 252, 253};
        int32_t y32 = 0;
        p.in_type = OQCI_U8;
        CU_ASSERT_EQUAL(oqci_avgpool(&p, x4, &y32), OQCI_OK);
        CU_ASSERT_EQUAL(y32, 1006);
    }
    CU_ASSERT_EQUAL(oqci_maxpool(NULL, x, y), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_maxpool(&ok, NULL, y), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_avgpool(&ok, x, NULL), OQCI_EINVAL);
    int32_t ms[5] = {0, 1 << 30, 1 << 30, 1 << 30, 1 << 30};
    p = ok;   /* avg: a per-count table with a bad shift at count 2 (used) */
    p.rq.per_index = 1;
    p.rq.m = ms;
    p.rq.shift = bad_sh;
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_EINVAL);
    p.k_h = 1;   /* counts 1..2: entry 2 = 63 */
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_EINVAL);
    p.k_w = 1;   /* count 1 only: fine */
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_OK);
    p = ok;   /* a window whose u8 sum could overflow int32 */
    p.k_h = p.k_w = 3000;
    CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y), OQCI_EINVAL);
}

/* ---- element-wise --------------------------------------------------------------------- */

/* Direct Add/Sum: t_i with the int32-only clamp, the int64 sum, then the division by
 * 256 rounded half away from zero in double (exact: |sum| < 2^35). */
static int32_t ref_add1(const OqciAdd *p, const uint8_t *const *x, int64_t j) {
    int64_t s = 0;
    for (int i = 0; i < p->ninputs; i++)
        s += oqci_requant(qget(x[i], p->in_type[i], j), &p->rq[i], 0, -INT32_MAX, INT32_MAX);
    double r = floor(fabs((double)s / 256.0) + 0.5);
    int64_t v = (int64_t)(s < 0 ? -r : r);
    return (int32_t)(v < p->lo ? p->lo : v > p->hi ? p->hi : v);
}

/* Exact: an Add whose input 0 is a conv's int32 sums (OqciAdd's acc_* fields, a
 * residual block fused into its Add): per element its channel c = (acc_first + j) /
 * inner % channels, the sum clamped to [acc_lo[c], acc_hi[c]] (or not), requantized
 * with multiplier c, plus the 8-bit input, the int64 sum divided by 256 as ref_add1
 * does.  Both modes, random shapes and offsets (the thread split's acc_first), and the
 * split itself (oqci_add_par over a reverse-order parallel-for) gives the same bytes;
 * in every kernel family this CPU runs (the AVX2 runs of 8, the AVX-512 masked runs). */
static void test_add_acc(void) {
    find_isas();
    for (int k = 0; k < nisas; k++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[k]), OQCI_OK);
        rnd_seed(43);
        int64_t bad = 0, badpar = 0, clamped = 0, split = 0;
        for (int t = 0; t < 200; t++) {
            OqciAdd p;
            memset(&p, 0, sizeof p);
            p.ninputs = 2;
            p.acc_channels = (int32_t)rnd_int(1, 9);
            p.acc_inner = rnd_int(1, 40);
            p.acc_first = t % 3 ? 0 : rnd_int(0, 200);
            p.count = rnd_int(0, 3) * p.acc_channels * p.acc_inner + rnd_int(0, 50);
            if (t % 40 == 7)   /* big enough for oqci_add_par to split it */
                p.count = 2 * (int64_t)OQCI_PAR_MIN_BYTES + rnd_int(0, 999);
            p.out_type = (int32_t)rnd_int(0, 1);
            rnd_clamp(p.out_type, &p.lo, &p.hi);
            int mode = (int)rnd_int(0, 1);
            double M0[9], M1 = 256.0 * (0.05 + (rnd_f() + 1) / 2);
            int32_t lo[9], hi[9];
            for (int c = 0; c < p.acc_channels; c++) {
                M0[c] = 256.0 * (0.001 + 0.01 * (rnd_f() + 1));
                lo[c] = t % 2 ? -(int32_t)rnd_int(0, 3000) : 0;
                hi[c] = (int32_t)rnd_int(0, 4000);
            }
            Rq r0 = rq_make(mode, 1, p.acc_channels, M0), r1 = rq_make(mode, 0, 1, &M1);
            p.in_type[0] = OQCI_S32;
            p.in_type[1] = (int32_t)rnd_int(0, 1);
            p.rq[0] = r0.rq;
            p.rq[1] = r1.rq;
            if (t % 4) {
                p.acc_lo = lo;
                p.acc_hi = hi;
            }
            int64_t n = p.count ? p.count : 1;
            int32_t *acc = malloc((size_t)n * sizeof *acc);
            for (int64_t j = 0; j < p.count; j++)
                acc[j] = (int32_t)rnd_int(-6000, 6000);
            uint8_t *x1 = rnd_q(p.count, p.in_type[1]);
            uint8_t *y = malloc((size_t)n), *y2 = malloc((size_t)n);
            const void *xs[2] = {acc, x1};
            CU_ASSERT_EQUAL(oqci_add(&p, xs, y), OQCI_OK);
            int64_t b = 0;
            for (int64_t j = 0; j < p.count; j++) {
                int32_t c = (int32_t)((p.acc_first + j) / p.acc_inner % p.acc_channels), v = acc[j];
                if (p.acc_lo && (v < lo[c] || v > hi[c])) {
                    v = v < lo[c] ? lo[c] : hi[c];
                    clamped++;
                }
                int64_t s = (int64_t)oqci_requant(v, &p.rq[0], c, -INT32_MAX, INT32_MAX) +
                            oqci_requant(qget(x1, p.in_type[1], j), &p.rq[1], 0, -INT32_MAX,
                                         INT32_MAX);
                double rr = floor(fabs((double)s / 256.0) + 0.5);
                int64_t want = s < 0 ? -(int64_t)rr : (int64_t)rr;
                want = want < p.lo ? p.lo : want > p.hi ? p.hi : want;
                b += qget(y, p.out_type, j) != want;
            }
            bad += b != 0;
            CU_ASSERT_EQUAL(oqci_add_par(&p, xs, y2, 3, reverse_for, NULL), OQCI_OK);
            split += p.count >= 2 * (int64_t)OQCI_PAR_MIN_BYTES;
            badpar += p.count && memcmp(y, y2, (size_t)p.count) != 0;
            free(acc);
            free(x1);
            free(y);
            free(y2);
            rq_free(&r0);
            rq_free(&r1);
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(badpar, 0);
        CU_ASSERT(clamped > 100);   /* the clamps were exercised */
        CU_ASSERT(split >= 5);      /* and the split, with its acc_first offsets */
        printf("\n  oqci_add with int32 sums, %s: 200 cases, %lld wrong",
               oqci_isa_name(isas[k]), (long long)bad);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    /* bad parameters: S32 on input 1, no channels, one of the two clamps */
    OqciAdd e;
    memset(&e, 0, sizeof e);
    int32_t a0[4] = {0}, one = 1;
    uint8_t b0[4] = {0}, yb[4];
    double m = 256.0;
    Rq r = rq_make(OQCI_REQ_FLOAT, 0, 1, &m);
    e.ninputs = 2;
    e.count = 4;
    e.out_type = OQCI_S8;
    e.lo = -127;
    e.hi = 127;
    e.rq[0] = e.rq[1] = r.rq;
    e.in_type[0] = OQCI_S32;
    e.in_type[1] = OQCI_S8;
    const void *xe[2] = {a0, b0};
    CU_ASSERT_EQUAL(oqci_add(&e, xe, yb), OQCI_EINVAL);   /* acc_channels 0 */
    e.acc_channels = 1;
    e.acc_inner = 4;
    CU_ASSERT_EQUAL(oqci_add(&e, xe, yb), OQCI_OK);
    e.acc_lo = &one;
    CU_ASSERT_EQUAL(oqci_add(&e, xe, yb), OQCI_EINVAL);   /* acc_hi missing */
    e.acc_lo = NULL;
    e.in_type[1] = OQCI_S32;
    CU_ASSERT_EQUAL(oqci_add(&e, xe, yb), OQCI_EINVAL);   /* only input 0 may be sums */
    rq_free(&r);
}

/* Exact: random Add (2 inputs) and Sum (3..8 inputs) of mixed types, both modes, fused
 * ReLU/ReLU6 clamps, in place (y = x[0]) sometimes. */
static void test_add_random(void) {
    rnd_seed(41);
    int64_t bad = 0;
    for (int t = 0; t < 300; t++) {
        OqciAdd p;
        memset(&p, 0, sizeof p);
        p.ninputs = t % 3 == 0 ? (int32_t)rnd_int(3, OQCI_ADD_MAX) : 2;
        p.count = rnd_int(0, 300);
        p.out_type = (int32_t)rnd_int(0, 1);
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        uint8_t *xs[OQCI_ADD_MAX];
        Rq r[OQCI_ADD_MAX];
        int mode = (int)rnd_int(0, 1);
        if (t % 17 == 3 && t % 2) {   /* ties (M = 128, below) just under lo = 0, vectors */
            p.out_type = OQCI_S8;
            p.lo = -(int32_t)rnd_int(1, 3);
            p.hi = (int32_t)rnd_int(p.lo, 127);
            p.count = rnd_int(256, 1000);
            mode = OQCI_REQ_FLOAT;
        }
        for (int i = 0; i < p.ninputs; i++) {
            p.in_type[i] = (int32_t)rnd_int(0, 1);
            xs[i] = rnd_q(p.count, p.in_type[i]);
            double M = 256.0 * (0.05 + 1.5 * (rnd_f() + 1) / 2);
            if (t % 17 == 3)
                M = 256.0 * 0.5;   /* many exact halves */
            r[i] = rq_make(mode, 0, 1, &M);
            p.rq[i] = r[i].rq;
        }
        int inplace = t % 5 == 1 && p.in_type[0] == p.out_type;
        uint8_t *y = inplace ? xs[0] : malloc((size_t)(p.count ? p.count : 1));
        int32_t *ref = malloc(sizeof(int32_t) * (size_t)(p.count ? p.count : 1));
        for (int64_t j = 0; j < p.count; j++)
            ref[j] = ref_add1(&p, (const uint8_t *const *)xs, j);
        CU_ASSERT_EQUAL(oqci_add(&p, (const void *const *)xs, y), OQCI_OK);
        int64_t b = 0;
        for (int64_t j = 0; j < p.count; j++)
            b += qget(y, p.out_type, j) != ref[j];
        bad += b != 0;
        if (!inplace)
            free(y);
        free(ref);
        for (int i = 0; i < p.ninputs; i++) {
            free(xs[i]);
            rq_free(&r[i]);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Hand-checked, exact: two inputs with M = 0.5 (t = 128 q): q1 + q2 = 1 -> 0.5 -> 1,
 * -1 -> -1, 3 -> 2 (1.5), -3 -> -2; three inputs s8, u8, s8 with M = 1, 0.25, 2:
 * 10 + 200/4 - 2*7 = 46, then a fused ReLU6-like [0, 40] clamp -> 40. */
static void test_add_examples(void) {
    int32_t m128, m256, m64, m512;
    int8_t s128, s256, s64, s512;
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(128.0, &m128, &s128), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(256.0, &m256, &s256), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(64.0, &m64, &s64), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(512.0, &m512, &s512), OQCI_OK);
    int8_t a[5] = {1, 0, 2, -3, 0}, b[5] = {0, -1, 1, 0, 0}, y[5];
    OqciAdd p;
    memset(&p, 0, sizeof p);
    p.ninputs = 2;
    p.count = 5;
    p.lo = -127;
    p.hi = 127;
    p.rq[0].mode = p.rq[1].mode = OQCI_REQ_FIXED;
    p.rq[0].m = p.rq[1].m = &m128;
    p.rq[0].shift = p.rq[1].shift = &s128;
    const void *xs[3] = {a, b, NULL};
    CU_ASSERT_EQUAL(oqci_add(&p, xs, y), OQCI_OK);
    static const int8_t want[5] = {1, -1, 2, -2, 0};
    CU_ASSERT_EQUAL(memcmp(y, want, 5), 0);
    int8_t c0[1] = {10}, c2[1] = {-7};
    uint8_t c1[1] = {200};
    const void *xs3[3] = {c0, c1, c2};
    p.ninputs = 3;
    p.count = 1;
    p.in_type[1] = OQCI_U8;
    p.rq[0].m = &m256;
    p.rq[0].shift = &s256;
    p.rq[1].m = &m64;
    p.rq[1].shift = &s64;
    p.rq[2].mode = OQCI_REQ_FIXED;
    p.rq[2].m = &m512;
    p.rq[2].shift = &s512;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, y), OQCI_OK);
    CU_ASSERT_EQUAL(y[0], 46);
    p.out_type = OQCI_U8;
    p.lo = 0;
    p.hi = 40;
    uint8_t yu[1];
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_OK);
    CU_ASSERT_EQUAL(yu[0], 40);
    /* EINVAL */
    p.ninputs = 1;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    p.ninputs = OQCI_ADD_MAX + 1;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    p.ninputs = 3;
    xs3[2] = NULL;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    xs3[2] = c2;
    p.rq[2].shift = NULL;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    p.rq[2].shift = &s512;
    p.in_type[2] = 9;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    p.in_type[2] = OQCI_S8;
    p.count = -1;
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_EINVAL);
    p.count = 1;
    CU_ASSERT_EQUAL(oqci_add(NULL, xs3, yu), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_add(&p, NULL, yu), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, NULL), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_add(&p, xs3, yu), OQCI_OK);
}

/* Exact: every s8/u8 value through every type combination and clamp. */
static void test_clamp(void) {
    uint8_t x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = (uint8_t)i;
    for (int it = 0; it < 2; it++)
        for (int ot = 0; ot < 2; ot++)
            for (int c = 0; c < 3; c++) {
                int32_t lo = ot == OQCI_U8 ? 0 : c ? 0 : -128, hi = c == 2 ? 37 : ot ? 255 : 127;
                CU_ASSERT_EQUAL(oqci_clamp(x, it, y, ot, 256, lo, hi), OQCI_OK);
                int bad = 0;
                for (int i = 0; i < 256; i++) {
                    int32_t v = qget(x, it, i), w = v < lo ? lo : v > hi ? hi : v;
                    bad += qget(y, ot, i) != w;
                }
                CU_ASSERT_EQUAL(bad, 0);
            }
    memcpy(y, x, 256);   /* in place, s8 -> u8 (a Relu that also changes the type) */
    CU_ASSERT_EQUAL(oqci_clamp(y, OQCI_S8, y, OQCI_U8, 256, 0, 255), OQCI_OK);
    CU_ASSERT(y[5] == 5 && y[127] == 127 && y[128] == 0 && y[255] == 0);
    CU_ASSERT_EQUAL(oqci_clamp(NULL, 0, y, 0, 1, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 0, NULL, 0, 1, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 2, y, 0, 1, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 0, y, 0, -1, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 0, y, 0, 1, 5, 4), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 0, y, OQCI_U8, 1, -1, 4), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_clamp(x, 0, y, OQCI_S8, 1, 0, 200), OQCI_EINVAL);
}

/* Quantize: exactly round-half-away(x / scale) computed here from the float quotient
 * in double, clamped to [-127, 127] / [0, 255].  Dequantize: exactly (float)q * scale.
 * Round trip: |dequant(quant(x)) - x| <= scale / 2 + 2 FLT_EPSILON (|x| + scale) for x
 * inside the range (half a step, plus half an ulp for the float quotient x / scale and
 * half an ulp for the product q * scale); quant(dequant(q)) == q for every q (q * s / s is within an
 * ulp or two of q, far from a half). */
static void test_quantize(void) {
    rnd_seed(51);
    enum { N = 5000 };
    float *x = malloc(sizeof(float) * N), *back = malloc(sizeof(float) * N);
    uint8_t *q = malloc(N), all[256], q2[256];
    for (int t = 0; t < 40; t++) {
        int type = t % 2;
        float scale = (float)(ldexp(1.0 + rnd_f() * 0.9, (int)rnd_int(-12, 2)));
        int32_t lo = type == OQCI_U8 ? 0 : -127, hi = type == OQCI_U8 ? 255 : 127;
        for (int i = 0; i < N; i++) {
            x[i] = rnd_f() * scale * 140.0f + (type == OQCI_U8 ? 130.0f * scale : 0.0f);
            if (i % 10 == 0)   /* exact halves of the step */
                x[i] = ((float)rnd_int(lo, hi - 1) + 0.5f) * (t % 4 < 2 ? 0.25f : scale);
        }
        if (t % 4 < 2)
            scale = 0.25f;   /* a power of two: x / scale is exact, the halves stay halves */
        CU_ASSERT_EQUAL(oqci_quantize(x, q, type, N, scale), OQCI_OK);
        CU_ASSERT_EQUAL(oqci_dequantize(q, type, back, N, scale), OQCI_OK);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            volatile float tq = x[i] / scale;
            double r = floor(fabs((double)tq) + 0.5);
            double v = tq < 0 ? -r : r;
            int32_t want = v < lo ? lo : v > hi ? hi : (int32_t)v;
            int32_t got = qget(q, type, i);
            bad += got != want;
            bad += back[i] != (float)got * scale;
            if (x[i] / scale > lo && x[i] / scale < hi)
                bad += fabs((double)back[i] - x[i]) >
                       0.5 * scale + 2 * FLT_EPSILON * (fabs(x[i]) + scale);
        }
        CU_ASSERT_EQUAL(bad, 0);
        for (int i = 0; i < 256; i++)
            all[i] = (uint8_t)i;
        if (type == OQCI_S8)
            all[128] = 0x81;   /* -128 is outside the s8 range */
        float f[256];
        CU_ASSERT_EQUAL(oqci_dequantize(all, type, f, 256, scale), OQCI_OK);
        CU_ASSERT_EQUAL(oqci_quantize(f, q2, type, 256, scale), OQCI_OK);
        CU_ASSERT_EQUAL(memcmp(all, q2, 256), 0);
    }
    /* halves, clamping, NaN */
    float hx[7] = {0.5f, -0.5f, 2.5f, -2.5f, 1000.0f, -1000.0f, NAN};
    int8_t hq[7];
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, 7, 1.0f), OQCI_OK);
    static const int8_t hw[7] = {1, -1, 3, -3, 127, -127, -127};
    CU_ASSERT_EQUAL(memcmp(hq, hw, 7), 0);
    uint8_t uq[7];
    CU_ASSERT_EQUAL(oqci_quantize(hx, uq, OQCI_U8, 7, 1.0f), OQCI_OK);
    static const uint8_t uw[7] = {1, 0, 3, 0, 255, 0, 0};
    CU_ASSERT_EQUAL(memcmp(uq, uw, 7), 0);
    /* EINVAL */
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, 7, 0.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, 7, -1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, 7, NAN), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, 7, INFINITY), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, 2, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(NULL, hq, OQCI_S8, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, NULL, OQCI_S8, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_quantize(hx, hq, OQCI_S8, -1, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize(hq, 2, hx, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize(NULL, 0, hx, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize(hq, 0, NULL, 7, 1.0f), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize(hq, 0, hx, -1, 1.0f), OQCI_EINVAL);
    free(x);
    free(back);
    free(q);
}

/* ---- pooling and Add per kernel family --------------------------------------------
 * oqci_maxpool, oqci_avgpool and oqci_add have AVX2 kernels (2x2 / 3x3-wide max pools
 * at horizontal stride 2, global average pools, Add/Sum of 256+ elements) chosen like
 * oqci_conv's family: each case below runs once per family this CPU has and is
 * compared exactly with the direct references; shapes aim at the vector paths' edges
 * (rows wider than a 256-output chunk, pads >= the kernel, odd widths, views) and the
 * data at the extremes (s8 bytes -128, 0, 127; u8 0, 255). */

static int64_t pool_isa_cases[OQCI_ISA_COUNT], add_isa_cases[OQCI_ISA_COUNT];

/* n bytes of type t: kind 0 random, 1 all the largest, 2 all the smallest byte, 3
 * random among the extremes (s8: -128, -127, 0, 127; u8: 0, 1, 254, 255). */
static uint8_t *rnd_q_kind(int64_t n, int t, int kind) {
    uint8_t *b = rnd_q(n, t);
    static const int8_t s8x[4] = {-128, -127, 0, 127};
    static const uint8_t u8x[4] = {0, 1, 254, 255};
    for (int64_t i = 0; i < n && kind; i++)
        b[i] = kind == 1   ? (t == OQCI_U8 ? 255 : 127)
               : kind == 2 ? (t == OQCI_U8 ? 0 : (uint8_t)(int8_t)-128)
                           : (t == OQCI_U8 ? u8x[rnd_int(0, 3)] : (uint8_t)s8x[rnd_int(0, 3)]);
    return b;
}

/* pool_run once per family; returns the number of families with a mismatch. */
static int64_t pool_run_isas(const OqciPool *p, const uint8_t *x, int avg) {
    int64_t bad = 0;
    find_isas();
    for (int ii = 0; ii < nisas; ii++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
        int64_t b = pool_run(p, x, avg);
        if (b)
            printf("\n  (family %s)", oqci_isa_name(isas[ii]));
        bad += b != 0;
        pool_isa_cases[isas[ii]]++;
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    return bad;
}

/* One axis: window k, stride s, dilation d, pads up to maxpad (may exceed k), input
 * size from the smallest valid up to + extra. */
static void rnd_axis(int32_t k, int32_t s, int32_t d, int32_t maxpad, int32_t extra,
                     int32_t *in, int32_t *pb, int32_t *out) {
    int32_t pe = (int32_t)rnd_int(0, maxpad), span = d * (k - 1) + 1;
    *pb = (int32_t)rnd_int(0, maxpad);
    int32_t lo = span - *pb - pe;
    if (lo < 1)
        lo = 1;
    *in = (int32_t)rnd_int(lo, lo + extra);
    *out = (*in + *pb + pe - span) / s + 1;
}

/* Case t of a max-pool test on p's geometry and types: multiplier M (fixed or float by
 * t), requant on or off, random or extreme inputs (by t); the families that differ. */
static int64_t maxpool_case(OqciPool *p, int t, double M, int requant) {
    Rq r = rq_make(t % 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 0, 1, &M);
    p->requant = requant;
    p->rq = r.rq;
    uint8_t *x = rnd_q_kind((int64_t)p->batch * p->channels * p->in_h * p->in_w, p->in_type,
                            t % 7 < 3 ? t % 7 + 1 : 0);
    int64_t bad = pool_run_isas(p, x, 0);
    free(x);
    rq_free(&r);
    return bad;
}

/* Exact, every family: max pools of width 2 or 3 at horizontal stride 2 and of width 1
 * to 33 at stride 1 (the AVX2 geometries: any height, vertical stride and dilation), a
 * few others, both types, with and without requant (both modes, multipliers from tiny
 * to saturating), views. */
static void test_maxpool_isas(void) {
    rnd_seed(51);
    int64_t bad = 0;
    for (int t = 0; t < 600; t++) {
        OqciPool p;
        memset(&p, 0, sizeof p);
        p.batch = (int32_t)rnd_int(1, 2);
        p.channels = (int32_t)rnd_int(1, 4);
        int simd = t % 8 != 7, s1 = t % 4 == 2;   /* the stride-2 and stride-1 AVX2 paths */
        p.k_w = s1 ? (int32_t)(t % 40 == 2 ? rnd_int(6, 33) : rnd_int(1, 5))
                   : simd ? (int32_t)rnd_int(2, 3) : (int32_t)rnd_int(1, 4);
        p.s_w = s1 ? 1 : simd ? 2 : (int32_t)rnd_int(1, 3);
        p.d_w = simd ? 1 : (int32_t)rnd_int(1, 2);
        p.k_h = t % 3 == 0 ? p.k_w : (int32_t)rnd_int(1, 4);
        p.s_h = t % 3 == 0 ? p.s_w : (int32_t)rnd_int(1, 3);
        p.d_h = t % 5 == 4 ? 2 : 1;
        int wide = t % 10 == 3;   /* more than one 256-output chunk per row */
        rnd_axis(p.k_h, p.s_h, p.d_h, t % 4 == 1 ? 4 : 1, 9, &p.in_h, &p.p_t, &p.out_h);
        rnd_axis(p.k_w, p.s_w, p.d_w, t % 4 == 1 ? 4 : 1, wide ? 700 : 70, &p.in_w, &p.p_l,
                 &p.out_w);
        p.out_coff = rnd_int(0, 1) ? (int32_t)rnd_int(0, 2) : 0;
        p.out_ctotal = p.out_coff + p.channels + (int32_t)rnd_int(0, 2);
        p.in_type = (int32_t)rnd_int(0, 1);
        p.out_type = (int32_t)rnd_int(0, 1);
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        double M = t % 11 == 5 ? 300.0 : t % 11 == 6 ? 1e-4 : 0.05 + 2.0 * (rnd_f() + 1);
        bad += maxpool_case(&p, t, M, t % 3 != 2);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact, every family: stride-2 max pools of width 2 and 3 on narrow rows, 1 to 17
 * outputs (AVX-512's 256-bit path takes up to 15 at width 3, 16 at width 2; the next
 * widths go back to the 512-bit one), with the padding columns at either end or none,
 * windows through the top and bottom padding (heights 1 to 3, strides and dilations 1
 * and 2), both input types, the 8-bit clamps (s8 outputs always clamp to [-127, 127];
 * u8 ones to [0, 255] or a ReLU6's), views. */
static void test_maxpool_narrow_isas(void) {
    static const int32_t outs[] = {1, 2, 7, 14, 15, 16, 17};
    rnd_seed(57);
    int64_t bad = 0;
    for (int t = 0; t < 280; t++) {
        OqciPool p;
        memset(&p, 0, sizeof p);
        p.batch = (int32_t)rnd_int(1, 2);
        p.channels = (int32_t)rnd_int(1, 5);
        p.k_w = 2 + t % 2;
        p.s_w = 2;
        p.d_w = 1;
        p.out_w = outs[(t / 2) % 7];
        p.p_l = (int32_t)rnd_int(0, p.k_w - 1);
        /* the last window: its first column inside, its others maybe past the row */
        p.in_w = (p.out_w - 1) * 2 - p.p_l + (int32_t)rnd_int(1, p.k_w);
        if (p.in_w < 1)
            p.in_w = 1;
        p.k_h = (int32_t)rnd_int(1, 3);
        p.s_h = (int32_t)rnd_int(1, 2);
        p.d_h = t % 5 == 4 ? 2 : 1;
        rnd_axis(p.k_h, p.s_h, p.d_h, p.k_h - 1, 6, &p.in_h, &p.p_t, &p.out_h);
        p.out_coff = rnd_int(0, 1) ? (int32_t)rnd_int(0, 2) : 0;
        p.out_ctotal = p.out_coff + p.channels + (int32_t)rnd_int(0, 2);
        p.in_type = (int32_t)rnd_int(0, 1);
        p.out_type = p.in_type == OQCI_S8 && t % 4 == 3 ? OQCI_U8 : p.in_type;
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        bad += maxpool_case(&p, t, 1.0, 0);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact, every family: 3x3 / stride 1 / pad 1 max pools (the whole-plane AVX2 path:
 * no requant, one type, 32 to 4096 elements per plane), planes around those bounds and
 * rows from 1 to 300 wide, clamps, views, extreme data; a few with requant or two types
 * (the other paths). */
static void test_maxpool_same3_isas(void) {
    rnd_seed(53);
    int64_t bad = 0;
    static const int32_t dims[][2] = {{7, 7}, {14, 14}, {28, 28}, {4, 8}, {1, 32}, {32, 1},
                                      {5, 6}, {64, 64}, {65, 63}, {2, 300}, {3, 11}, {13, 300},
                                      {9, 64}};
    for (int t = 0; t < 240; t++) {
        OqciPool p;
        memset(&p, 0, sizeof p);
        p.batch = (int32_t)rnd_int(1, 2);
        p.channels = (int32_t)rnd_int(1, 5);
        p.k_h = p.k_w = 3;
        p.s_h = p.s_w = p.d_h = p.d_w = 1;
        p.p_t = p.p_l = 1;
        if (t < 2 * (int)(sizeof dims / sizeof dims[0])) {
            p.in_h = dims[t / 2][0];
            p.in_w = dims[t / 2][1];
        } else {
            p.in_h = (int32_t)rnd_int(1, 40);
            p.in_w = (int32_t)rnd_int(1, 70);
        }
        p.out_h = p.in_h;
        p.out_w = p.in_w;
        p.out_coff = rnd_int(0, 1) ? (int32_t)rnd_int(0, 2) : 0;
        p.out_ctotal = p.out_coff + p.channels + (int32_t)rnd_int(0, 2);
        p.in_type = (int32_t)rnd_int(0, 1);
        p.out_type = t % 9 == 8 ? 1 - p.in_type : p.in_type;
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        double M = 0.05 + 2.0 * (rnd_f() + 1);
        bad += maxpool_case(&p, t, M, t % 10 == 9);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Case t of an average-pool test over the families: one in five an ordinary pool
 * (rnd_pool), the others global ones, on planes up to side x side (one in three) or
 * 9 x 9; output views; types, an 8-bit clamp and count_include_pad random. */
static void avgpool_case_geo(OqciPool *p, int t, int32_t side) {
    if (t % 5 == 4) {
        rnd_pool(p, 1);
        p->count_include_pad = (int32_t)rnd_int(0, 1);
        return;
    }
    memset(p, 0, sizeof *p);
    p->batch = (int32_t)rnd_int(1, 3);
    p->channels = (int32_t)rnd_int(1, 7);
    p->in_h = p->k_h = (int32_t)rnd_int(1, t % 3 ? 9 : side);
    p->in_w = p->k_w = (int32_t)rnd_int(1, t % 3 ? 9 : side);
    p->out_h = p->out_w = 1;
    p->s_h = p->s_w = p->d_h = p->d_w = 1;
    p->out_coff = rnd_int(0, 1) ? (int32_t)rnd_int(0, 2) : 0;
    p->out_ctotal = p->out_coff + p->channels + (int32_t)rnd_int(0, 2);
    p->in_type = (int32_t)rnd_int(0, 1);
    p->out_type = (int32_t)rnd_int(0, 1);
    rnd_clamp(p->out_type, &p->lo, &p->hi);
    p->count_include_pad = (int32_t)rnd_int(0, 1);
}

/* Exact, every family: global average pools (plane sizes around the 16- and 32-byte
 * blocks, per-count table or one multiplier, both modes, count_include_pad either way,
 * extreme data) and, mixed in, ordinary average pools. */
static void test_avgpool_isas(void) {
    rnd_seed(52);
    int64_t bad = 0;
    for (int t = 0; t < 500; t++) {
        OqciPool p;
        avgpool_case_geo(&p, t, 40);
        int32_t taps = p.k_h * p.k_w;
        double *Ms = malloc(sizeof(double) * (size_t)(taps + 1));
        double M0 = t % 13 == 6 ? 400.0 : 0.5 + (rnd_f() + 1);
        for (int32_t c = 0; c <= taps; c++)
            Ms[c] = c ? M0 / c : 0.0;
        Rq r = rq_make(t % 4 < 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 1, taps + 1, Ms);
        p.rq = r.rq;
        if (t % 4 == 3) {   /* one multiplier: entry 0 = M / k_h k_w, include_pad */
            p.count_include_pad = 1;
            p.rq.per_index = 0;
            r.mult[0] = (float)(M0 / taps);
            CU_ASSERT_EQUAL(oqci_fixed_multiplier(M0 / taps, &r.m[0], &r.shift[0]), OQCI_OK);
        }
        uint8_t *x = rnd_q_kind((int64_t)p.batch * p.channels * p.in_h * p.in_w, p.in_type,
                                t % 6 < 3 ? t % 6 + 1 : 0);
        bad += pool_run_isas(&p, x, 1);
        free(x);
        free(Ms);
        rq_free(&r);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact, every family: average pools with accumulator outputs (OQCI_S32: the window's
 * sum, clamped), mostly global ones (planes from 1x1 to 60x60: the vpsadbw path's 16-
 * and 32-byte blocks and tails) and, mixed in, ordinary ones (padding, count_include_pad
 * either way: it changes nothing), no clamp, a ReLU or a narrow clamp, views, extreme
 * data, an rq with null pointers. */
static void test_avgpool_s32_isas(void) {
    rnd_seed(54);
    int64_t bad = 0;
    for (int t = 0; t < 400; t++) {
        OqciPool p;
        avgpool_case_geo(&p, t, 60);
        p.out_type = OQCI_S32;
        s32_clamp(t % 3, 64 * p.k_h * p.k_w, &p.lo, &p.hi);
        p.rq = unread_rq(t / 3 % 3);
        uint8_t *x = rnd_q_kind((int64_t)p.batch * p.channels * p.in_h * p.in_w, p.in_type,
                                t % 6 < 3 ? t % 6 + 1 : 0);
        bad += pool_run_isas(&p, x, 1);
        free(x);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact, every family: Add (2 inputs) and Sum (3..8) of mixed types, both modes, up to
 * 3000 elements (odd tails), in place sometimes, multipliers 0, tiny, ordinary and
 * large enough that the t_i no longer fit int32 sums (up to 2^29: t_i saturated to
 * INT32_MAX), extreme data. */
static void test_add_isas(void) {
    rnd_seed(53);
    int64_t bad = 0;
    find_isas();
    for (int t = 0; t < 300; t++) {
        OqciAdd p;
        memset(&p, 0, sizeof p);
        p.ninputs = t % 3 == 0 ? (int32_t)rnd_int(3, OQCI_ADD_MAX) : 2;
        p.count = t % 4 == 0 ? rnd_int(0, 300) : rnd_int(250, 3000);
        p.out_type = (int32_t)rnd_int(0, 1);
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        uint8_t *xs[OQCI_ADD_MAX];
        Rq r[OQCI_ADD_MAX];
        int mode = (int)rnd_int(0, 1);
        for (int i = 0; i < p.ninputs; i++) {
            p.in_type[i] = (int32_t)rnd_int(0, 1);
            xs[i] = rnd_q_kind(p.count, p.in_type[i], t % 9 < 3 ? t % 9 + 1 : 0);
            double M = 256.0 * (0.05 + 1.5 * (rnd_f() + 1) / 2);
            if (t % 17 == 3)
                M = 256.0 * 0.5;   /* many exact halves */
            else if (t % 17 == 5)
                M = rnd_int(0, 1) ? 0.0 : 1e-3;
            else if (t % 17 == 7)
                M = rnd_int(0, 1) ? 536870912.0 : 4194304.0 * (rnd_f() + 1.5);
            r[i] = rq_make(mode, 0, 1, &M);
            if (t % 17 == 9 && mode == OQCI_REQ_FLOAT && rnd_int(0, 1))
                r[i].mult[0] = -r[i].mult[0];   /* (float mode takes any M: the sign tests) */
            p.rq[i] = r[i].rq;
        }
        int32_t *ref = malloc(sizeof(int32_t) * (size_t)(p.count ? p.count : 1));
        for (int64_t j = 0; j < p.count; j++)
            ref[j] = ref_add1(&p, (const uint8_t *const *)xs, j);
        int inplace = t % 5 == 1 && p.in_type[0] == p.out_type;
        uint8_t *x0 = xs[0];
        for (int ii = 0; ii < nisas; ii++) {
            CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
            uint8_t *y = malloc((size_t)(p.count ? p.count : 1));
            if (inplace) {   /* y = x[0], restored from x0 for each family */
                memcpy(y, x0, (size_t)p.count);
                xs[0] = y;
            }
            CU_ASSERT_EQUAL(oqci_add(&p, (const void *const *)xs, y), OQCI_OK);
            int64_t b = 0;
            for (int64_t j = 0; j < p.count; j++)
                if (qget(y, p.out_type, j) != ref[j] && b++ < 3)
                    printf("\n  add [%s] t=%d j=%lld: got %d want %d", oqci_isa_name(isas[ii]),
                           t, (long long)j, qget(y, p.out_type, j), ref[j]);
            bad += b != 0;
            add_isa_cases[isas[ii]]++;
            xs[0] = x0;
            free(y);
        }
        free(ref);
        for (int i = 0; i < p.ninputs; i++) {
            free(xs[i]);
            rq_free(&r[i]);
        }
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    CU_ASSERT_EQUAL(bad, 0);
    printf("\n  pool/add cases per family:");
    for (int ii = 0; ii < nisas; ii++)
        printf(" %s %lld/%lld", oqci_isa_name(isas[ii]), (long long)pool_isa_cases[isas[ii]],
               (long long)add_isa_cases[isas[ii]]);
}

/* oqci_quantize: every family gives the scalar loop's bytes (the AVX2 one does 8 at a
 * time, the rest in the scalar tail), on random values, exact halves of the step,
 * values at and beyond the range, NaN, infinities, signed zeros and subnormals, for
 * counts that are and are not multiples of 8. */
static void test_quantize_isas(void) {
    rnd_seed(57);
    find_isas();
    int64_t bad = 0, cases = 0;
    const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f,
                             0.5f, -0.5f, 1.5f, -1.5f, 126.5f, -126.5f, 127.5f, -127.5f,
                             254.5f, 255.5f, 3e38f, -3e38f, 0.49999997f, -0.49999997f};
    for (int t = 0; t < 120; t++) {
        int type = t % 2;
        int64_t n = t % 3 == 0 ? rnd_int(0, 40) : rnd_int(100, 1000);
        /* (one in 12 far out, where the AVX-512 kernel's reciprocal is not used) */
        float scale = t % 5 == 0 ? 1.0f
                      : t % 12 == 1 ? (t % 24 == 1 ? 0x1.3p126f : 0x1.9p-127f)
                                    : (float)ldexp(1.0 + rnd_f() * 0.9, (int)rnd_int(-12, 2));
        float *x = malloc(sizeof(float) * (size_t)(n + 1));
        uint8_t *ref = malloc((size_t)(n + 1)), *y = malloc((size_t)(n + 1));
        int32_t lo = type == OQCI_U8 ? 0 : -127, hi = type == OQCI_U8 ? 255 : 127;
        for (int64_t i = 0; i < n; i++) {
            int k = (int)rnd_int(0, 9);
            if (k == 0)
                x[i] = special[rnd_int(0, (int64_t)(sizeof special / sizeof special[0]) - 1)] *
                       (t % 5 == 0 ? 1.0f : scale);
            else if (k == 1)
                x[i] = ((float)rnd_int(lo - 3, hi + 2) + 0.5f) * scale;
            else
                x[i] = rnd_f() * scale * 300.0f;
        }
        for (int64_t i = 0; i < n; i++)
            ref[i] = (uint8_t)oqci_round_clamp(x[i] / scale, lo, hi);
        for (int ii = 0; ii < nisas; ii++) {
            CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
            memset(y, 0xA5, (size_t)(n + 1));
            CU_ASSERT_EQUAL(oqci_quantize(x, y, type, n, scale), OQCI_OK);
            int64_t b = 0;
            for (int64_t i = 0; i < n; i++)
                if (y[i] != ref[i] && b++ < 3)
                    printf("\n  quantize [%s] t=%d i=%lld x=%a: got %d want %d",
                           oqci_isa_name(isas[ii]), t, (long long)i, (double)x[i], y[i], ref[i]);
            b += y[n] != 0xA5;   /* nothing written past count */
            bad += b != 0;
            cases++;
        }
        free(x);
        free(ref);
        free(y);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    CU_ASSERT_EQUAL(bad, 0);
    printf("\n  quantize: %lld cases over %d families", (long long)cases, nisas);
}

/* ---- threads ------------------------------------------------------------------------ */

/* oqci_maxpool_par, oqci_avgpool_par, oqci_add_par, oqci_quantize_par with 2 threads
 * (tasks in reverse on the caller) and 3 (oqcf_threads.c's pool): exactly the plain
 * call's bytes, the channels outside an output view untouched; the split is the
 * documented one: a pool of one image by channels, of several by images, a sum and a
 * quantization by element ranges, each part reading at least OQCI_PAR_MIN_BYTES (the
 * last shapes are too small to share: one call, no task). */
static void test_par_split(void) {
    static const int pools[][9] = {
        /* N, C, H, W, k, s, pad, avg, ctotal-extra (view) */
        {1, 64, 56, 56, 3, 2, 1, 0, 5},    /* max, channels, view */
        {1, 96, 111, 111, 3, 2, 0, 0, 0},  /* squeezenet's first max pool */
        {3, 16, 64, 64, 2, 2, 0, 0, 2},    /* max, images */
        {1, 1024, 14, 14, 14, 1, 0, 1, 0}, /* global average, s32 accumulators */
        {1, 64, 64, 64, 3, 1, 1, 1, 3},    /* average 3x3, view */
        {1, 4, 8, 8, 2, 2, 0, 0, 0},       /* too small */
    };
    OqcfThreads *th = oqcf_threads_create(3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(th);
    rnd_seed(43);
    int64_t bad = 0, want_calls = 0;
    reverse_calls = reverse_tasks = 0;
    for (size_t si = 0; si < sizeof pools / sizeof pools[0]; si++) {
        const int *v = pools[si];
        OqciPool p;
        memset(&p, 0, sizeof p);
        p.batch = v[0];
        p.channels = v[1];
        p.in_h = v[2];
        p.in_w = v[3];
        p.k_h = p.k_w = v[4];
        p.s_h = p.s_w = v[5];
        p.p_t = p.p_l = v[6];
        p.d_h = p.d_w = 1;
        p.out_h = (p.in_h + 2 * p.p_t - p.k_h) / p.s_h + 1;
        p.out_w = (p.in_w + 2 * p.p_l - p.k_w) / p.s_w + 1;
        p.out_coff = v[8] ? 2 : 0;
        p.out_ctotal = p.channels + v[8];
        p.in_type = (int32_t)(si % 2);
        int avg = v[7];
        double Ms[10], M0 = 0.7;
        for (int c = 0; c <= 9; c++)
            Ms[c] = c ? M0 / c : 0.0;
        Rq r = rq_make(OQCI_REQ_FIXED, 1, 10, Ms);
        if (avg && p.k_h == p.in_h) {   /* accumulators */
            p.out_type = OQCI_S32;
            p.lo = INT32_MIN;
            p.hi = INT32_MAX;
            p.rq = unread_rq(0);
        } else {
            p.out_type = p.in_type;
            rnd_clamp(p.out_type, &p.lo, &p.hi);
            p.rq = r.rq;
            if (!avg)
                p.rq.per_index = 0;
        }
        int64_t inbytes = (int64_t)p.batch * p.channels * p.in_h * p.in_w;
        int64_t units = p.batch == 1 ? p.channels : p.batch;
        int share = inbytes >= 2 * (int64_t)OQCI_PAR_MIN_BYTES && units >= 2;
        uint8_t *x = rnd_q(inbytes, p.in_type);
        size_t yb = (size_t)p.batch * (size_t)p.out_ctotal * (size_t)(p.out_h * p.out_w) *
                    osize(p.out_type);
        uint8_t *y1 = malloc(yb), *y2 = malloc(yb);
        memset(y1, 0x5A, yb);
        CU_ASSERT_EQUAL(avg ? oqci_avgpool(&p, x, y1) : oqci_maxpool(&p, x, y1), OQCI_OK);
        for (int t = 2; t <= 3; t++) {
            OqciParallelFor run = t == 2 ? reverse_for : oqcf_threads_run;
            void *ctx = t == 2 ? NULL : th;
            memset(y2, 0x5A, yb);
            int st = avg ? oqci_avgpool_par(&p, x, y2, t, run, ctx)
                         : oqci_maxpool_par(&p, x, y2, t, run, ctx);
            CU_ASSERT_EQUAL(st, OQCI_OK);
            if (memcmp(y1, y2, yb) && bad++ < 3)
                printf("\n  pool shape %zu, %d threads: bytes differ", si, t);
        }
        want_calls += share;   /* the reverse_for run (t = 2) */
        free(x);
        free(y1);
        free(y2);
        rq_free(&r);
    }
    CU_ASSERT_EQUAL(reverse_calls, want_calls);
    /* sums: 2 and 3 inputs, 8-bit outputs; an odd count; too small */
    static const int64_t counts[] = {200003, 3 * 56 * 56 * 64, 1000};
    for (size_t ci = 0; ci < 3; ci++) {
        OqciAdd p;
        memset(&p, 0, sizeof p);
        p.ninputs = ci == 1 ? 3 : 2;
        p.count = counts[ci];
        p.out_type = (int32_t)(ci % 2);
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        uint8_t *xs[3];
        Rq r[3];
        for (int i = 0; i < p.ninputs; i++) {
            p.in_type[i] = (int32_t)((ci + (size_t)i) % 2);
            xs[i] = rnd_q(p.count, p.in_type[i]);
            double M = 256.0 * (0.3 + 0.2 * i);
            r[i] = rq_make(ci % 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 0, 1, &M);
            p.rq[i] = r[i].rq;
        }
        uint8_t *y1 = malloc((size_t)p.count), *y2 = malloc((size_t)p.count);
        CU_ASSERT_EQUAL(oqci_add(&p, (const void *const *)xs, y1), OQCI_OK);
        int64_t before = reverse_calls;
        for (int t = 2; t <= 3; t++) {
            memset(y2, 0x5A, (size_t)p.count);
            CU_ASSERT_EQUAL(oqci_add_par(&p, (const void *const *)xs, y2, t,
                                         t == 2 ? reverse_for : oqcf_threads_run,
                                         t == 2 ? NULL : (void *)th), OQCI_OK);
            if (memcmp(y1, y2, (size_t)p.count) && bad++ < 6)
                printf("\n  add count %lld, %d threads: bytes differ", (long long)p.count, t);
        }
        CU_ASSERT_EQUAL(reverse_calls - before,
                        p.count * p.ninputs >= 2 * (int64_t)OQCI_PAR_MIN_BYTES ? 1 : 0);
        free(y1);
        free(y2);
        for (int i = 0; i < p.ninputs; i++) {
            free(xs[i]);
            rq_free(&r[i]);
        }
    }
    /* quantization: a 224x224 image's 3 planes, an odd count, too small */
    static const int64_t qcounts[] = {3 * 224 * 224, 20011, 1000};
    for (size_t ci = 0; ci < 3; ci++) {
        int64_t n = qcounts[ci];
        int32_t type = (int32_t)(ci % 2);
        float scale = 0.0208f, *x = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            x[i] = (rnd_f() - (type == OQCI_U8 ? 0.0f : 0.5f)) * 6.0f;
        uint8_t *y1 = malloc((size_t)n + 1), *y2 = malloc((size_t)n + 1);
        CU_ASSERT_EQUAL(oqci_quantize(x, y1, type, n, scale), OQCI_OK);
        int64_t before = reverse_calls;
        for (int t = 2; t <= 3; t++) {
            memset(y2, 0x5A, (size_t)n + 1);
            CU_ASSERT_EQUAL(oqci_quantize_par(x, y2, type, n, scale, t,
                                              t == 2 ? reverse_for : oqcf_threads_run,
                                              t == 2 ? NULL : (void *)th), OQCI_OK);
            if ((memcmp(y1, y2, (size_t)n) || y2[n] != 0x5A) && bad++ < 9)
                printf("\n  quantize count %lld, %d threads: bytes differ", (long long)n, t);
        }
        CU_ASSERT_EQUAL(reverse_calls - before,
                        n * 4 >= 2 * (int64_t)OQCI_PAR_MIN_BYTES ? 1 : 0);
        /* a bad scale is refused before any split */
        CU_ASSERT_EQUAL(oqci_quantize_par(x, y2, type, n, 0.0f, 2, reverse_for, NULL),
                        OQCI_EINVAL);
        CU_ASSERT_EQUAL(reverse_calls - before,
                        n * 4 >= 2 * (int64_t)OQCI_PAR_MIN_BYTES ? 1 : 0);
        free(x);
        free(y1);
        free(y2);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(reverse_tasks >= 2 * reverse_calls);
    oqcf_threads_destroy(th);
}

OQC_TEST_MAIN("int8-pool", OQC_TEST(test_maxpool_random), OQC_TEST(test_avgpool_random),
              OQC_TEST(test_pool_examples), OQC_TEST(test_pool_einval),
              OQC_TEST(test_add_random), OQC_TEST(test_add_acc), OQC_TEST(test_add_examples),
              OQC_TEST(test_clamp),
              OQC_TEST(test_quantize), OQC_TEST(test_maxpool_isas),
              OQC_TEST(test_maxpool_narrow_isas), OQC_TEST(test_maxpool_same3_isas),
              OQC_TEST(test_avgpool_isas),
              OQC_TEST(test_avgpool_s32_isas), OQC_TEST(test_add_isas),
              OQC_TEST(test_quantize_isas), OQC_TEST(test_par_split))
