/* test_int8_kernels.c - the INT8 kernel library (runtime/int8/oqci.h): the scalar primitives
 * and conv against direct scalar references written independently here, on seeded
 * random small odd shapes (pooling and the element-wise kernels: test_int8_pool.c;
 * shared helpers: int8_testutil.h).
 *
 * Tolerances.  Everything integer is compared EXACTLY: the kernels' sums are exact
 * (int32 chunks into int64), so any summation order gives the same accumulator, and
 * the references requantize that accumulator with the very primitives of oqci.h
 * (oqci_requant), whose own rounding is checked separately against formulas computed
 * another way (long double, the hardware's float rounding); float and fixed requant
 * give the same bits (test_requant_float_vs_fixed).  The only non-exact comparison is
 * dequantization's round trip (half a step), stated at its check.
 *
 * Kernel families.  oqci_conv has a portable family and SIMD ones (oqci.h: AVX2,
 * AVX-VNNI, AVX-512 VNNI, Arm dot product); liboqc is built with OQCI_DISPATCH and
 * OQCI_TEST_HOOKS, so every conv case below runs once per family this CPU has
 * (oqci_force_isa) and each is compared exactly with the reference; test_conv_isas
 * prints how many cases each family ran (on an AVX2 machine: portable and avx2; the
 * Arm family runs under qemu, and the VNNI ones with vpdpbusd emulated, in
 * tests/cli/int8_simd_arm.sh).
 * test_conv_simd_paths draws shapes aimed at each SIMD code path (panel K blocks,
 * depthwise planes, the few-pixel path, gathers at row edges, saturating sums).
 * Accumulator outputs (OQCI_S32: the saturated sums, clamped, as int32) run the same
 * shapes (test_conv_s32_random, test_conv_s32_paths, test_conv_deep,
 * and test_int8_pool.c's test_avgpool_s32_isas) with an rq of null pointers, which no
 * kernel may read.
 *
 * To add a kernel test: write the direct reference next to the others (plain loops
 * over the unpacked tensors, explicit bounds checks), a test drawing shapes with
 * rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include <float.h>
#include <math.h>

#include "harness.h"
#include "int8_testutil.h"
#include "nn_testutil.h"
#include "oqci.h"

/* ---- helpers ------------------------------------------------------------------------ */

static int32_t sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* ---- scalar primitives -------------------------------------------------------------- */

/* Exact: integer results of exactly representable inputs. */
static void test_round_clamp(void) {
    CU_ASSERT_EQUAL(oqci_round_clamp(0.5f, -127, 127), 1);
    CU_ASSERT_EQUAL(oqci_round_clamp(-0.5f, -127, 127), -1);
    CU_ASSERT_EQUAL(oqci_round_clamp(1.5f, -127, 127), 2);
    CU_ASSERT_EQUAL(oqci_round_clamp(2.5f, -127, 127), 3);
    CU_ASSERT_EQUAL(oqci_round_clamp(-2.5f, -127, 127), -3);
    CU_ASSERT_EQUAL(oqci_round_clamp(0.49999997f, -127, 127), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(-0.49999997f, -127, 127), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(2.4999998f, -127, 127), 2);
    CU_ASSERT_EQUAL(oqci_round_clamp(1e-45f, -127, 127), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(-0.0f, -127, 127), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(NAN, -127, 127), -127);
    CU_ASSERT_EQUAL(oqci_round_clamp(NAN, 0, 255), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(INFINITY, -127, 127), 127);
    CU_ASSERT_EQUAL(oqci_round_clamp(-INFINITY, 0, 255), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(126.5f, -127, 127), 127);
    CU_ASSERT_EQUAL(oqci_round_clamp(127.49f, -127, 127), 127);
    CU_ASSERT_EQUAL(oqci_round_clamp(300.0f, -127, 127), 127);
    CU_ASSERT_EQUAL(oqci_round_clamp(-300.0f, -127, 127), -127);
    CU_ASSERT_EQUAL(oqci_round_clamp(-127.5f, -127, 127), -127);
    CU_ASSERT_EQUAL(oqci_round_clamp(-0.7f, 0, 255), 0);
    CU_ASSERT_EQUAL(oqci_round_clamp(254.5f, 0, 255), 255);
    CU_ASSERT_EQUAL(oqci_round_clamp(8388607.5f, INT32_MIN, INT32_MAX), 8388608);
    CU_ASSERT_EQUAL(oqci_round_clamp(-8388607.5f, INT32_MIN, INT32_MAX), -8388608);
    CU_ASSERT_EQUAL(oqci_round_clamp(3e9f, -INT32_MAX, INT32_MAX), INT32_MAX);
    CU_ASSERT_EQUAL(oqci_round_clamp(-3e9f, -INT32_MAX, INT32_MAX), -INT32_MAX);
    CU_ASSERT_EQUAL(oqci_round_clamp(2147483520.0f, -INT32_MAX, INT32_MAX), 2147483520);
    /* Random floats against rounding computed in double: |t| + 0.5 is exact in double
     * for |t| < 2^29, so floor gives round-half-away exactly. */
    rnd_seed(11);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float t = rnd_f() * (float)(1 << rnd_int(0, 10));
        if (i % 7 == 0)   /* exact halves */
            t = (float)rnd_int(-600, 600) + 0.5f;
        double r = floor(fabs((double)t) + 0.5);
        int32_t want = (int32_t)(t < 0 ? -r : r);
        want = want < -127 ? -127 : want > 255 ? 255 : want;
        bad += oqci_round_clamp(t, -127, 255) != want;
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* oqci_mul_shift's definition computed with the hardware's float rounding instead of
 * oqci_round24: x to float32, the exact product with m in long double (62 bits; x86's
 * and AArch64's long double hold 64 or more), that rounded once to float32, scaled by
 * 2^-s and rounded half away from zero (exact in long double), saturated. */
static int32_t ref_mul_shift(int32_t x, int32_t m, int s) {
    float xf = (float)x;
    float pf = (float)((long double)xf * m);
    long double t = ldexpl((long double)pf, -s);
    long double r = floorl(fabsl(t) + 0.5L);
    if (t < 0)
        r = -r;
    return r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : (int32_t)r;
}

/* Exact against ref_mul_shift and against hand-derived values. */
static void test_mul_shift(void) {
    const int32_t two30 = 1 << 30;
    CU_ASSERT_FATAL(LDBL_MANT_DIG >= 64);   /* (ref_mul_shift's exact product) */
    /* halves exactly: x * 2^30 / 2^31 = x / 2 */
    CU_ASSERT_EQUAL(oqci_mul_shift(1, two30, 31), 1);
    CU_ASSERT_EQUAL(oqci_mul_shift(-1, two30, 31), -1);
    CU_ASSERT_EQUAL(oqci_mul_shift(3, two30, 31), 2);
    CU_ASSERT_EQUAL(oqci_mul_shift(-3, two30, 31), -2);
    CU_ASSERT_EQUAL(oqci_mul_shift(5, two30, 32), 1);    /* 1.25 */
    CU_ASSERT_EQUAL(oqci_mul_shift(-7, two30, 32), -2);  /* -1.75 */
    CU_ASSERT_EQUAL(oqci_mul_shift(0, INT32_MAX, 1), 0);
    CU_ASSERT_EQUAL(oqci_mul_shift(123, 0, 1), 0);
    /* shift 1: saturation both ways */
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MAX, INT32_MAX, 1), INT32_MAX);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, INT32_MAX, 1), INT32_MIN);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, two30, 31), -two30);
    CU_ASSERT_EQUAL(oqci_mul_shift(3, two30, 1), 1610612736);   /* 3 * 2^29 */
    /* x rounds to 24 bits, ties to even: 2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4,
     * 2^24 + 5 -> 2^24 + 4 (times 2^30 / 2^30) */
    CU_ASSERT_EQUAL(oqci_mul_shift(16777217, two30, 30), 16777216);
    CU_ASSERT_EQUAL(oqci_mul_shift(16777219, two30, 30), 16777220);
    CU_ASSERT_EQUAL(oqci_mul_shift(-16777221, two30, 30), -16777220);
    /* the product rounds to 24 bits: 3 (2^30 + 2^7) = 3 2^30 + 3 2^7 has 32 bits, its
     * low 8 (0x80) are a tie, 0xC00001 is odd: up to 3 2^30 + 2^9; times 2^-9 that is
     * 3 2^21 + 1 where the exact product would give 3 2^21 + 0.75 -> + 1 as well, so
     * take 2^-10: 3 2^20 + 0.5 -> 3 2^20 + 1 (exact: 3 2^20 + 0.375 -> 3 2^20) */
    CU_ASSERT_EQUAL(oqci_mul_shift(3, two30 + 128, 10), 3 * (1 << 20) + 1);
    /* shift 62: (2^31 - 1) rounds to 2^31, its product with 2^31 - 1 to 2^62: 1;
     * -2^31 (2^31 - 1) -> -2^62: -1; 2^30 * 2^31 / 2^62 = 0.5 -> 1, -0.5 -> -1 */
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MAX, INT32_MAX, 62), 1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, INT32_MAX, 62), -1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, two30, 62), -1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN + 1, two30, 62), -1);   /* x rounds to -2^31 */
    CU_ASSERT_EQUAL(oqci_mul_shift(-16777215, two30, 62), 0);        /* tiny */
    rnd_seed(12);
    int bad = 0;
    for (int i = 0; i < 300000; i++) {
        int32_t x = (int32_t)rnd_u32();
        if (i % 3 == 0)
            x >>= rnd_int(0, 30);
        if (i % 97 == 0)
            x = i % 2 ? INT32_MIN : INT32_MAX;
        int32_t m = i % 101 == 0 ? 0 : (int32_t)(two30 + (int32_t)(rnd_u32() >> 2));
        if (i % 2)   /* 24 significant bits, as oqci_fixed_multiplier's */
            m &= ~127;
        int s = (int)rnd_int(1, 62);
        if (i % 5 == 0) {   /* a product that is an exact half: x odd, m = 2^30, s = 31 */
            m = two30;
            s = 31;
            x |= 1;
        }
        if (i % 7 == 0)   /* x near 2^24, where its rounding starts */
            x = (int32_t)rnd_int(16777200, 16777300) * (i % 2 ? -1 : 1);
        int32_t got = oqci_mul_shift(x, m, s), want = ref_mul_shift(x, m, s);
        if (got != want && bad++ < 3)
            printf("\n  mul_shift(%d, %d, %d) = %d, want %d", x, m, s, got, want);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* m * 2^-shift is exactly (float)M, with m in [2^30, 2^31) (low 7 bits zero) and shift
 * in [1, 62]. */
static void test_fixed_multiplier(void) {
    int32_t m;
    int8_t s;
    rnd_seed(13);
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        double M = ldexp(1.0 + rnd_u32() / 4294967296.0, (int)rnd_int(-32, 28));
        if (oqci_fixed_multiplier(M, &m, &s) != OQCI_OK || m < (1 << 30) || s < 1 || s > 62) {
            bad++;
            continue;
        }
        bad += ldexp((double)m, -s) != (double)(float)M || (m & 127) != 0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* bounds */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 30);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(1.0, -32), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 62);
    /* just below 2^-32 as a double is 2^-32 as a float; the float below it gives 0 */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(nextafter(ldexp(1.0, -32), 0.0), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 62);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier((double)nextafterf(ldexpf(1.0f, -32), 0.0f), &m, &s),
                    OQCI_OK);
    CU_ASSERT(m == 0 && s == 1);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == 0 && s == 1);
    /* the largest float below 2^30 (2^30 - 64) */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741760.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == 2147483520 && s == 1);
    /* rounding to float32: (2^30 + 0.5) 2^-40 -> 2^-10 (m = 2^30, shift 40); (2^31 - 0.5)
     * 2^-40 -> 2^-9 (shift 39); 1.5 + 2^-24 -> 1.5 (m = 3 2^29) */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(1073741824.5, -40), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 40);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(2147483647.5, -40), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 39);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1.5 + ldexp(1.0, -24), &m, &s), OQCI_OK);
    CU_ASSERT(m == 3 * (1 << 29) && s == 30);
    /* errors: >= 2^30 as a float (2^30 - 1/8 rounds to 2^30), negative, NaN, inf */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741824.0, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741823.875, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1e300, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(-1e-3, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(NAN, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(INFINITY, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(-INFINITY, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.5, NULL, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.5, &m, NULL), OQCI_EINVAL);
}

/* Float and fixed requantization of the same M give the same bits: fixed mode is float
 * mode's arithmetic in integers (oqci_mul_shift).  Accumulators over the whole int32
 * range, near 2^24 (where float32(acc) starts rounding) and small ones with dyadic M
 * (exact ties); clamps of both output types and the int32 range Add uses. */
static void test_requant_float_vs_fixed(void) {
    rnd_seed(14);
    int bad = 0, ties = 0;
    for (int i = 0; i < 400000; i++) {
        int32_t acc = (int32_t)rnd_u32() >> rnd_int(0, 31);
        double M = ldexp(1.0 + rnd_f(), (int)-rnd_int(0, 30));
        if (i % 3 == 0)
            M = ldexp((double)rnd_int(1, 255), -(int)rnd_int(1, 12));   /* dyadic: ties */
        if (i % 5 == 0)
            acc = (int32_t)rnd_int(16777000, 16778000) * (i % 2 ? -1 : 1);
        if (i % 11 == 0)
            M = ldexp(1.0 + rnd_f(), (int)rnd_int(-33, 29));   /* the whole range */
        int32_t lo = i % 3 == 0 ? 0 : i % 3 == 1 ? -127 : -INT32_MAX;
        int32_t hi = i % 3 == 0 ? 255 : i % 3 == 1 ? 127 : INT32_MAX;
        Rq a = rq_make(OQCI_REQ_FLOAT, 0, 1, &M), b = rq_make(OQCI_REQ_FIXED, 0, 1, &M);
        int32_t qf = oqci_requant(acc, &a.rq, 5, lo, hi), qx = oqci_requant(acc, &b.rq, 5, lo, hi);
        if (qf != qx && bad++ < 3)
            printf("\n  acc %d M %.17g [%d, %d]: float %d, fixed %d", acc, M, lo, hi, qf, qx);
        float t = (float)acc * a.mult[0];
        ties += t - floorf(t) == 0.5f;
        rq_free(&a);
        rq_free(&b);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(ties > 1000);   /* (the ties were drawn: the check is live) */
}

/* ---- conv ----------------------------------------------------------------------------- */

/* The direct definition: six nested loops over the unpacked W[k][c][i][j] (c within the
 * group), explicit padding checks, int64 sum, bias, saturation, requant (accumulator
 * outputs, OQCI_S32: the saturated sum clamped to [lo, hi]).  yref is dense
 * N x K x out_h x out_w. */
static void ref_conv(const OqciConv *p, const uint8_t *x, const int8_t *W, int32_t *yref) {
    int64_t cg = p->in_c / p->group, kg = p->out_c / p->group;
    for (int64_t n = 0; n < p->batch; n++)
        for (int64_t k = 0; k < p->out_c; k++)
            for (int64_t oh = 0; oh < p->out_h; oh++)
                for (int64_t ow = 0; ow < p->out_w; ow++) {
                    int64_t s = p->bias ? p->bias[k] : 0;
                    int64_t g = k / kg;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < p->k_h; i++)
                            for (int64_t j = 0; j < p->k_w; j++) {
                                int64_t ih = oh * p->s_h - p->p_t + i * p->d_h;
                                int64_t iw = ow * p->s_w - p->p_l + j * p->d_w;
                                if (ih < 0 || ih >= p->in_h || iw < 0 || iw >= p->in_w)
                                    continue;
                                int64_t xi = ((n * p->in_c + g * cg + c) * p->in_h + ih) *
                                                 p->in_w + iw;
                                int64_t wi = ((k * cg + c) * p->k_h + i) * p->k_w + j;
                                s += (int64_t)qget(x, p->in_type, xi) * W[wi];
                            }
                    int32_t v = sat32(s);
                    yref[((n * p->out_c + k) * p->out_h + oh) * p->out_w + ow] =
                        p->out_type != OQCI_S32 ? oqci_requant(v, &p->rq, k, p->lo, p->hi)
                        : v < p->lo             ? p->lo
                        : v > p->hi             ? p->hi
                                                : v;
                }
}

/* Packs W[k][c][i][j] into out_c rows of kpad bytes (zeros after kdim). */
static int8_t *pack_w(const OqciConv *p, const int8_t *W) {
    int8_t *w = calloc((size_t)p->out_c * (size_t)p->kpad, 1);
    for (int64_t k = 0; k < p->out_c; k++)
        memcpy(w + k * p->kpad, W + k * p->kdim, (size_t)p->kdim);
    return w;
}

/* Kernel families this CPU runs (portable first) and the conv cases each ran; cases
 * whose weights qualify for vpmaddubsw (oqci_conv_wpair16). */
static int isas[OQCI_ISA_COUNT], nisas;
static int64_t isa_cases[OQCI_ISA_COUNT], wpair16_cases;

static void find_isas(void) {
    if (!nisas)
        nisas = int8_isas(isas);
}

/* conv_run's threads: 0 runs oqci_conv; 2 or more, oqci_conv_par for that many threads
 * through par_for(par_ctx, ...), with its own scratch size. */
static int conv_threads;
static OqciParallelFor par_for;
static void *par_ctx;

/* Runs conv p (geometry, types, clamp and view set; w filled here; bias and rq as set)
 * on x and W once per kernel family, each into a fresh buffer with a scratch of exactly
 * oqci_conv_scratch(p) bytes, or oqci_conv_scratch_noamx(p) in a build without the AMX
 * family (ASan catches any overrun; the aarch64 and emulated-VNNI builds of
 * int8_simd_arm.sh run this too), compares with ref_conv exactly
 * and checks the channels outside the view are untouched.  Returns the number of bad
 * elements over all families. */
static int64_t conv_run(OqciConv *p, const uint8_t *x, const int8_t *W) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int64_t ny = p->batch * p->out_ctotal * pix, nref = p->batch * p->out_c * pix;
    size_t ybytes = (size_t)ny * osize(p->out_type);
    int8_t *w = pack_w(p, W);
    uint8_t *y = malloc(ybytes ? ybytes : 1);
    int32_t *ref = malloc(sizeof(int32_t) * (size_t)(nref > 0 ? nref : 1));
    p->w = w;
    p->wpair16 = oqci_conv_wpair16(p);   /* as the compiler sets it */
    wpair16_cases += p->wpair16;
    size_t ss = oqci_conv_scratch(p), sn = oqci_conv_scratch_noamx(p);
    CU_ASSERT(ss >= (size_t)p->kpad && sn >= (size_t)p->kpad && sn <= ss);
    if (conv_threads) {   /* (enough for the whole conv too) */
        size_t ps = oqci_conv_par_scratch(p, conv_threads);
        size_t pn = oqci_conv_par_scratch_noamx(p, conv_threads);
        CU_ASSERT(ps >= ss && pn >= sn && pn <= ps);
        ss = ps;
        sn = pn;
    }
    void *scratch = NULL;   /* (oqci_conv_par: 64-byte aligned) */
    CU_ASSERT_EQUAL_FATAL(posix_memalign(&scratch, 64, oqci_conv_amx_build() ? ss : sn), 0);
    ref_conv(p, x, W, ref);
    find_isas();
    int64_t bad = 0;
    for (int ii = 0; ii < nisas; ii++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
        CU_ASSERT_EQUAL(conv_threads ? oqci_conv_par_scratch(p, conv_threads)
                                     : oqci_conv_scratch(p), ss);   /* the same for every family */
        memset(y, 0xA5, ybytes);
        int st = conv_threads ? oqci_conv_par(p, x, y, scratch, conv_threads, par_for, par_ctx)
                              : oqci_conv(p, x, y, scratch);
        CU_ASSERT_EQUAL(st, OQCI_OK);
        isa_cases[isas[ii]]++;
        for (int64_t n = 0; n < p->batch; n++)
            for (int64_t c = 0; c < p->out_ctotal; c++)
                for (int64_t i = 0; i < pix; i++) {
                    int64_t o = (n * p->out_ctotal + c) * pix + i;
                    int in_view = c >= p->out_coff && c < p->out_coff + p->out_c;
                    int32_t want = in_view ? ref[(n * p->out_c + c - p->out_coff) * pix + i]
                                           : fill_value(p->out_type, 0xA5);
                    int32_t got = yget(y, p->out_type, o);
                    if (got != want && bad++ < 3)
                        printf("\n  conv [%s] n=%lld c=%lld pix=%lld: got %d want %d",
                               oqci_isa_name(isas[ii]), (long long)n, (long long)c,
                               (long long)i, got, want);
                }
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    free(w);
    free(y);
    free(ref);
    free(scratch);
    p->w = NULL;
    return bad;
}

/* A random multiplier per channel putting typical outputs in the 8-bit range; scale > 1
 * pushes many of them into the clamp. */
static void conv_mults(const OqciConv *p, double *M, double scale) {
    double xs = p->in_type == OQCI_U8 ? 147.0 : 73.0;   /* rms of uniform inputs */
    double typ = sqrt((double)p->kdim) * 73.0 * xs;
    for (int64_t k = 0; k < p->out_c; k++)
        M[k] = scale * (0.3 + 1.5 * (rnd_f() + 1) / 2) * 60.0 / typ;
}

/* One random case of the given shape class, with 8-bit outputs or (s32) accumulator
 * outputs (clamp kind t % 3, an rq never to be read); returns bad elements. */
static int64_t conv_random_case(int t, int s32) {
    OqciConv p;
    memset(&p, 0, sizeof p);
    int depthwise = t % 6 == 1, gemm = t % 11 == 4, conv1d = t % 9 == 2;
    p.batch = (int32_t)rnd_int(1, 3);
    p.group = (int32_t)(depthwise ? rnd_int(1, 9) : rnd_int(1, 3));
    p.in_c = depthwise ? p.group : p.group * (int32_t)rnd_int(1, 6);
    p.out_c = p.group * (int32_t)(depthwise ? rnd_int(1, 2) : rnd_int(1, 9));
    if (gemm) {   /* Gemm as a 1x1 conv on a 1x1 image, batch = rows */
        p.group = 1;
        p.in_c = (int32_t)rnd_int(1, 40);
        p.out_c = (int32_t)rnd_int(1, 13);
        p.in_h = p.in_w = p.out_h = p.out_w = 1;
        p.k_h = p.k_w = p.s_h = p.s_w = p.d_h = p.d_w = 1;
    } else {
        int32_t *kk[2] = {&p.k_h, &p.k_w}, *ss[2] = {&p.s_h, &p.s_w}, *dd[2] = {&p.d_h, &p.d_w};
        int32_t *pb[2] = {&p.p_t, &p.p_l}, *in[2] = {&p.in_h, &p.in_w};
        int32_t *out[2] = {&p.out_h, &p.out_w};
        for (int a = 0; a < 2; a++) {
            int flat = conv1d && a == 0;
            *kk[a] = flat ? 1 : (int32_t)rnd_int(1, 4);
            *ss[a] = flat ? 1 : (int32_t)rnd_int(1, 3);
            *dd[a] = flat ? 1 : (int32_t)rnd_int(1, 2);
            *pb[a] = flat ? 0 : (int32_t)rnd_int(0, 2);
            int32_t pe = flat ? 0 : (int32_t)rnd_int(0, 2);
            int32_t span = *dd[a] * (*kk[a] - 1) + 1, lo = span - *pb[a] - pe;
            if (lo < 1)
                lo = 1;
            *in[a] = flat ? 1 : (int32_t)rnd_int(lo, lo + 7);
            *out[a] = (*in[a] + *pb[a] + pe - span) / *ss[a] + 1;
        }
    }
    p.kdim = p.in_c / p.group * p.k_h * p.k_w;
    p.kpad = (p.kdim + 3) / 4 * 4;
    p.out_coff = t % 3 == 0 ? (int32_t)rnd_int(0, 3) : 0;
    p.out_ctotal = p.out_coff + p.out_c + (t % 3 == 0 ? (int32_t)rnd_int(0, 3) : 0);
    p.in_type = (int32_t)rnd_int(0, 1);
    p.out_type = (int32_t)rnd_int(0, 1);
    rnd_clamp(p.out_type, &p.lo, &p.hi);

    int64_t nx = (int64_t)p.batch * p.in_c * p.in_h * p.in_w;
    int64_t nw = (int64_t)p.out_c * p.kdim;
    uint8_t *x = rnd_q(nx, p.in_type);
    int8_t *W = malloc((size_t)nw);
    int extreme = t % 13 == 5;   /* all weights +-127, inputs at the ends of their range */
    int narrow = t % 8 == 7;     /* 7-bit weights (--weight-bits 7): vpmaddubsw on AVX2 */
    /* ties: small sums and M = 1/2 or 1/4, so that many sums times M are exact halves
     * (the epilogues' round-half-away-from-zero) */
    int ties = t % 17 == 9 && !extreme;
    for (int64_t i = 0; i < nw; i++)
        W[i] = (int8_t)(extreme  ? (rnd_int(0, 1) ? 127 : -127)
                        : ties   ? rnd_int(-2, 2)
                        : narrow ? rnd_int(-63, 63)
                                 : rnd_int(-127, 127));
    if (ties)
        for (int64_t i = 0; i < nx; i++)
            x[i] = p.in_type == OQCI_U8 ? (uint8_t)rnd_int(0, 6) : (uint8_t)(int8_t)rnd_int(-3, 3);
    if (extreme)
        for (int64_t i = 0; i < nx; i++)
            x[i] = p.in_type == OQCI_U8 ? (uint8_t)(rnd_int(0, 1) ? 255 : 0)
                                        : (uint8_t)(int8_t)(rnd_int(0, 1) ? 127 : -127);
    int32_t *bias = NULL;
    if (t % 5 != 2) {
        bias = malloc(sizeof(int32_t) * (size_t)p.out_c);
        for (int64_t k = 0; k < p.out_c; k++)
            bias[k] = (int32_t)(ties ? rnd_int(-5, 5) : rnd_int(-20000, 20000));
    }
    p.bias = bias;
    double *M = malloc(sizeof(double) * (size_t)p.out_c);
    conv_mults(&p, M, t % 4 == 3 ? 6.0 : 1.0);
    for (int64_t k = 0; ties && k < p.out_c; k++)
        M[k] = k % 2 ? 0.25 : 0.5;
    Rq r = rq_make((int)rnd_int(0, 1), t % 7 != 6, p.out_c, M);
    p.rq = r.rq;
    if (s32) {
        p.out_type = OQCI_S32;
        s32_clamp(t % 3, 60000, &p.lo, &p.hi);
        p.rq = unread_rq(t / 3 % 3);
    }
    int64_t bad = conv_run(&p, x, W);
    if (bad)
        printf("\n  conv case %d: N=%d C=%d K=%d g=%d %dx%d -> %dx%d k=%dx%d s=%d,%d d=%d,%d "
               "p=%d,%d types %d->%d mode %d [%d,%d]",
               t, p.batch, p.in_c, p.out_c, p.group, p.in_h, p.in_w, p.out_h, p.out_w, p.k_h,
               p.k_w, p.s_h, p.s_w, p.d_h, p.d_w, p.p_t, p.p_l, p.in_type, p.out_type,
               p.rq.mode, p.lo, p.hi);
    rq_free(&r);
    free(M);
    free(bias);
    free(W);
    free(x);
    return bad;
}

/* Exact: random odd shapes (K not a multiple of 4, channels not multiples of any tile,
 * strides 1-3, asymmetric pads, dilation, groups, depthwise with multipliers 1 and 2,
 * 1-D, Gemm-as-conv, batch 1-3, output views, both types in and out, both requant
 * modes, per-channel or single multiplier, ReLU/ReLU6 clamps, extreme values). */
static void test_conv_random(void) {
    rnd_seed(21);
    int64_t bad = 0;
    for (int t = 0; t < 600; t++)
        bad += conv_random_case(t, 0) != 0;
    CU_ASSERT_EQUAL(bad, 0);
}

/* Exact, every family: accumulator outputs (OQCI_S32) on test_conv_random's shapes
 * (depthwise ones included: they leave the depthwise kernels for the GEMM), with no
 * clamp, a ReLU or a narrow clamp, and an rq whose pointers are null (any read of it
 * crashes). */
static void test_conv_s32_random(void) {
    rnd_seed(25);
    int64_t bad = 0;
    for (int t = 0; t < 600; t++)
        bad += conv_random_case(t, 1) != 0;
    CU_ASSERT_EQUAL(bad, 0);
}

/* Larger pixel counts than one scratch fill, and a depthwise 3x3/2 with padding:
 * exact. */
static void test_conv_shapes(void) {
    static const int32_t shapes[][12] = {
        /* N, C, K, g, H, W, k, s, d, pt, pl, pb(=pr) */
        {2, 3, 8, 1, 17, 13, 3, 1, 1, 1, 1, 1},
        {1, 12, 12, 12, 15, 16, 3, 2, 1, 1, 0, 1},
        {3, 5, 7, 1, 9, 9, 1, 1, 1, 0, 0, 0},
        {1, 6, 10, 2, 11, 7, 5, 2, 2, 2, 2, 2},
        {2, 16, 4, 4, 6, 5, 2, 1, 1, 0, 1, 1},
    };
    rnd_seed(22);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = 0; mode < 2; mode++)
            for (int it = 0; it < 2; it++) {
                const int32_t *v = shapes[s];
                OqciConv p;
                memset(&p, 0, sizeof p);
                p.batch = v[0];
                p.in_c = v[1];
                p.out_c = v[2];
                p.group = v[3];
                p.in_h = v[4];
                p.in_w = v[5];
                p.k_h = p.k_w = v[6];
                p.s_h = p.s_w = v[7];
                p.d_h = p.d_w = v[8];
                p.p_t = v[9];
                p.p_l = v[10];
                int32_t span = v[8] * (v[6] - 1) + 1;
                p.out_h = (v[4] + v[9] + v[11] - span) / v[7] + 1;
                p.out_w = (v[5] + v[10] + v[11] - span) / v[7] + 1;
                p.kdim = p.in_c / p.group * p.k_h * p.k_w;
                p.kpad = (p.kdim + 3) / 4 * 4;
                p.out_coff = it;
                p.out_ctotal = p.out_c + 2 * it;
                p.in_type = it;
                p.out_type = mode;
                rnd_clamp(p.out_type, &p.lo, &p.hi);
                uint8_t *x = rnd_q((int64_t)p.batch * p.in_c * p.in_h * p.in_w, p.in_type);
                int8_t *W = malloc((size_t)(p.out_c * p.kdim));
                for (int64_t i = 0; i < p.out_c * p.kdim; i++)
                    W[i] = (int8_t)rnd_int(-127, 127);
                double M[16];
                conv_mults(&p, M, 1.0);
                Rq r = rq_make(mode, 1, p.out_c, M);
                p.rq = r.rq;
                CU_ASSERT_EQUAL(conv_run(&p, x, W), 0);
                rq_free(&r);
                free(W);
                free(x);
            }
}

/* kdim = 70000 > OQCI_KCHUNK: a 1x1 conv, 1 pixel, u8 inputs all 255.  Channel sums
 * (exact, then saturated to int32):
 *   k0: w = 127 everywhere   -> 70000 * 32385 = 2 266 950 000 -> INT32_MAX
 *   k1: w = -127 everywhere  -> INT32_MIN
 *   k2: +127 for c < 65536, -127 after -> 61072 * 32385 = 1 977 816 720 (fits)
 *   k3: +127 for c < 66000, 0 after, bias +20 000 000 -> 2 157 410 000 -> INT32_MAX
 *   k4: as k3 with bias -20 000 000 -> 2 117 410 000 (fits)
 * With M = 100 / 2^31 (fixed: m = 1.5625 * 2^30, shift 55, exact) the outputs are round(sum * 100 / 2^31): 100, -100, 92, 100, 99 -- without chunking an
 * int32 accumulator would wrap and give a negative value for k0.  Exact.  The same
 * with out_c = 2 (the 1-channel path), with s8 inputs, and (variants 3, 4) with 9
 * identical rows, enough pixels for the SIMD panel path's int64 K-block sums (u8 and
 * s8: the s8 inputs' offset correction is then added in int64).  Variants 5-9: the same
 * with accumulator outputs (OQCI_S32, no clamp): the saturated sums themselves. */
static void test_conv_deep(void) {
    const int32_t C = 70000;
    for (int vs = 0; vs < 10; vs++) {
        int variant = vs % 5, s32 = vs >= 5;
        OqciConv p;
        memset(&p, 0, sizeof p);
        p.batch = variant >= 3 ? 9 : 1;
        p.in_c = C;
        p.in_h = p.in_w = p.out_h = p.out_w = 1;
        p.out_c = variant == 1 ? 2 : 5;
        p.k_h = p.k_w = p.s_h = p.s_w = p.d_h = p.d_w = 1;
        p.group = 1;
        p.kdim = C;
        p.kpad = C;
        p.out_ctotal = p.out_c;
        p.in_type = variant == 2 || variant == 4 ? OQCI_S8 : OQCI_U8;
        p.out_type = OQCI_S8;
        p.lo = -127;
        p.hi = 127;
        uint8_t *x = malloc((size_t)C * p.batch);
        memset(x, p.in_type == OQCI_S8 ? 0x81 : 0xFF, (size_t)C * p.batch);   /* -127 or 255 */
        int8_t *W = malloc((size_t)(5 * C));
        int32_t bias[5] = {0, 0, 0, 20000000, -20000000};
        for (int32_t c = 0; c < C; c++) {
            W[c] = 127;
            W[C + c] = -127;
            W[2 * C + c] = c < 65536 ? 127 : -127;
            W[3 * C + c] = W[4 * C + c] = c < 66000 ? 127 : 0;
        }
        p.bias = bias;
        double M = 100.0 / 2147483648.0;
        Rq r = rq_make(OQCI_REQ_FIXED, 0, 1, &M);
        p.rq = r.rq;
        if (s32) {
            p.out_type = OQCI_S32;
            p.lo = INT32_MIN;
            p.hi = INT32_MAX;
            p.rq = unread_rq(variant % 3);
        }
        CU_ASSERT_EQUAL(conv_run(&p, x, W), 0);   /* against the direct reference */
        /* and against the hand-computed values (row 0) */
        int8_t y[9 * 5], *w = pack_w(&p, W);
        int32_t y32[9 * 5];
        void *scratch = malloc(oqci_conv_scratch(&p));
        p.w = w;
        CU_ASSERT_EQUAL(oqci_conv(&p, x, s32 ? (void *)y32 : (void *)y, scratch), OQCI_OK);
        if (s32 && p.in_type == OQCI_S8) {
            CU_ASSERT_EQUAL(y32[0], -127 * 127 * C);   /* -1 129 030 000 */
            CU_ASSERT_EQUAL(y32[1], 127 * 127 * C);
        } else if (s32) {
            CU_ASSERT_EQUAL(y32[0], INT32_MAX);
            CU_ASSERT_EQUAL(y32[1], INT32_MIN);
            if (variant == 0 || variant == 3) {
                CU_ASSERT_EQUAL(y32[2], 1977816720);
                CU_ASSERT_EQUAL(y32[3], INT32_MAX);
                CU_ASSERT_EQUAL(y32[4], 2117410000);
            }
        } else if (p.in_type == OQCI_S8) {   /* s8: sums are -127 * w, no saturation */
            CU_ASSERT_EQUAL(y[0], oqci_mul_shift(-127 * 127 * C, r.m[0], r.shift[0]));
            CU_ASSERT_EQUAL(y[0], -53);   /* -1 129 030 000 * 100 / 2^31 = -52.6 */
            CU_ASSERT_EQUAL(y[1], 53);
        } else {
            CU_ASSERT_EQUAL(y[0], 100);
            CU_ASSERT_EQUAL(y[1], -100);
            if (variant == 0 || variant == 3) {
                CU_ASSERT_EQUAL(y[2], 92);
                CU_ASSERT_EQUAL(y[3], 100);
                CU_ASSERT_EQUAL(y[4], 99);
            }
        }
        free(scratch);
        free(w);
        rq_free(&r);
        free(W);
        free(x);
    }
}

/* ---- SIMD code paths ------------------------------------------------------------------ */

/* Sets conv p's geometry: N, C, K, group, input H x W, kernel, strides, dilations, pads
 * before (pt, pl) and after (pb, pr; negative: input columns the conv never reaches,
 * which oqci.h allows since the output size decides); dense output view. */
static void conv_geo(OqciConv *p, int N, int C, int K, int g, int H, int W, int kh, int kw,
                     int sh, int sw, int dh, int dw, int pt, int pl, int pb, int pr) {
    memset(p, 0, sizeof *p);
    p->batch = N;
    p->in_c = C;
    p->out_c = K;
    p->group = g;
    p->in_h = H;
    p->in_w = W;
    p->k_h = kh;
    p->k_w = kw;
    p->s_h = sh;
    p->s_w = sw;
    p->d_h = dh;
    p->d_w = dw;
    p->p_t = pt;
    p->p_l = pl;
    p->out_h = (H + pt + pb - dh * (kh - 1) - 1) / sh + 1;
    p->out_w = (W + pl + pr - dw * (kw - 1) - 1) / sw + 1;
    p->kdim = C / g * kh * kw;
    p->kpad = (p->kdim + 3) / 4 * 4;
    p->out_ctotal = K;
}

/* Data of a case.  kind 0: random in the types' ranges; 1: inputs at the top of their
 * range (u8 255, s8 127) and weights all +127 or all -127 per channel, the sums whose
 * u8 x s8 pairs saturate vpmaddubsw (255 * 127 * 2 > 32767); 2: inputs 0/255 (s8:
 * -128/127, -128 included although outside the calibrated range) against +-127 weights
 * of random signs; 3: weights whose pairs just fit vpmaddubsw (oqci_conv_wpair16: each
 * even-aligned pair sums to +128 or -128, or has opposite signs up to +-127, or is
 * random in [-64, 64]) against inputs at the top of their range or random, so int16
 * pair sums reach 255 * 128 = 32640 without saturating.  bias: 0 none, 1 random, 2 near INT32_MAX / INT32_MIN (the bias
 * addition saturates).  Requant mode mode, per-channel multipliers; out type and clamp
 * random; or with s32 (1 + variant) accumulator outputs, clamp kind variant % 3 (see
 * s32_clamp) and an rq not to be read.  Runs conv_run; returns bad elements (and prints
 * the case when any). */
static int64_t conv_data_run(OqciConv *p, int in_type, int kind, int bias_kind, int mode,
                             int s32) {
    p->in_type = in_type;
    p->out_type = (int32_t)rnd_int(0, 1);
    rnd_clamp(p->out_type, &p->lo, &p->hi);
    int64_t nx = (int64_t)p->batch * p->in_c * p->in_h * p->in_w;
    int64_t nw = (int64_t)p->out_c * p->kdim;
    uint8_t *x = rnd_q(nx, in_type);
    int8_t *W = malloc((size_t)(nw > 0 ? nw : 1));
    for (int64_t k = 0; k < p->out_c; k++) {
        int sign = rnd_int(0, 1) ? 1 : -1;
        for (int64_t j = 0; j < p->kdim; j++)
            W[k * p->kdim + j] = (int8_t)(kind == 0   ? rnd_int(-127, 127)
                                          : kind == 1 ? 127 * sign
                                                      : (rnd_int(0, 1) ? 127 : -127));
        for (int64_t j = 0; kind == 3 && j < p->kdim; j += 2) {   /* (kpad is even) */
            int32_t a, b, how = (int32_t)rnd_int(0, 3);
            if (how == 0) {
                a = (int32_t)rnd_int(1, 127);
                b = 128 - a;
            } else if (how == 1) {
                a = (int32_t)rnd_int(-128, -1);
                b = -128 - a;
            } else if (how == 2) {
                a = (int32_t)rnd_int(1, 127);
                b = -(int32_t)rnd_int(1, 127);
            } else {
                a = (int32_t)rnd_int(-64, 64);
                b = (int32_t)rnd_int(-64, 64);
            }
            W[k * p->kdim + j] = (int8_t)(k % 2 ? a : b);
            if (j + 1 < p->kdim)
                W[k * p->kdim + j + 1] = (int8_t)(k % 2 ? b : a);
        }
    }
    for (int64_t i = 0; i < nx && kind; i++) {
        if (kind == 3 && i % 3 == 0)   /* a third stay random */
            continue;
        if (kind == 1 || kind == 3)
            x[i] = in_type == OQCI_U8 ? 255 : 127;
        else
            x[i] = in_type == OQCI_U8 ? (rnd_int(0, 1) ? 255 : 0)
                                      : (uint8_t)(int8_t)(rnd_int(0, 1) ? 127 : -128);
    }
    int32_t *bias = NULL;
    if (bias_kind) {
        bias = malloc(sizeof(int32_t) * (size_t)p->out_c);
        for (int64_t k = 0; k < p->out_c; k++)
            bias[k] = bias_kind == 1 ? (int32_t)rnd_int(-20000, 20000)
                      : k % 2        ? INT32_MAX - (int32_t)rnd_int(0, 1000)
                                     : INT32_MIN + (int32_t)rnd_int(0, 1000);
    }
    p->bias = bias;
    double *M = malloc(sizeof(double) * (size_t)p->out_c);
    conv_mults(p, M, kind ? 0.05 : 1.0);
    if (bias_kind == 2)   /* make the saturated sums land inside the clamp sometimes */
        for (int64_t k = 0; k < p->out_c; k++)
            M[k] = (k % 3 ? 60.0 : 0.5) / 2147483648.0;
    Rq r = rq_make(mode, 1, p->out_c, M);
    p->rq = r.rq;
    if (s32) {
        p->out_type = OQCI_S32;
        s32_clamp((s32 - 1) % 3, 60000, &p->lo, &p->hi);
        p->rq = unread_rq((s32 - 1) / 3 % 3);
    }
    int64_t bad = conv_run(p, x, W);
    if (bad)
        printf("\n  simd case: N=%d C=%d K=%d g=%d %dx%d -> %dx%d k=%dx%d s=%d,%d d=%d,%d "
               "p=%d,%d types %d->%d [%d,%d] kind %d bias %d mode %d",
               p->batch, p->in_c, p->out_c, p->group, p->in_h, p->in_w, p->out_h, p->out_w,
               p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->in_type,
               p->out_type, p->lo, p->hi, kind, bias_kind, mode);
    rq_free(&r);
    free(M);
    free(bias);
    free(W);
    free(x);
    return bad;
}

/* Shapes aimed at each SIMD path (runtime/int8/oqci_conv*.c); the comment of each row names
 * the path it is for. */
static const int simd_shapes[][16] = {
    /* N, C, K, g, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr */
    {2, 5, 5, 5, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* dw 3x3 pairs, odd rows */
    {1, 3, 3, 3, 16, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      /* dw 3x3/2 pairs */
    {1, 3, 3, 3, 12, 40, 3, 3, 1, 1, 1, 2, 0, 2, 0, 2},      /* dw pairs, column dilation */
    {1, 2, 2, 2, 12, 23, 3, 3, 1, 3, 1, 1, 1, 1, 1, 1},      /* dw pairs, column stride 3 */
    {2, 3, 3, 3, 12, 13, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1},      /* dw 3x3 row dilation: plane */
    {1, 4, 8, 4, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* dw multiplier 2 */
    {1, 3, 3, 3, 11, 19, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw 5x5: q8dw_16 */
    {1, 3, 3, 3, 7, 30, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},       /* dw 5x5/2: phases */
    {1, 2, 2, 2, 5, 33, 1, 9, 1, 1, 1, 1, 0, 4, 0, 4},       /* dw 1x9: 9 taps, not 3x3 */
    {1, 2, 2, 2, 12, 12, 9, 9, 1, 1, 1, 1, 4, 4, 4, 4},      /* dw 9x9: > 64 taps, GEMM */
    {1, 2, 2, 2, 3, 600, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* dw wide rows (> 512) */
    {1, 2, 2, 2, 5, 300, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* dw rows of 300 */
    {1, 2, 2, 2, 4, 1101, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* dw wide, stride 2 */
    {1, 3, 3, 3, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* dw, one input row */
    {1, 3, 3, 3, 10, 10, 3, 3, 1, 1, 1, 1, 0, 0, -5, -5},    /* dw, unused input */
    {1, 1, 16, 1, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* C = 1: dw multiplier 16 */
    {2, 5, 5, 5, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 7x7: masked fill, plane kernel */
    {1, 4, 4, 4, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      /* dw 14x14/2: masked s2 fill, plane end */
    {1, 3, 3, 3, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 3 rows: row kernel only */
    {1, 3, 3, 3, 6, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* dw 6 rows of 21: 4 + 2 */
    {1, 3, 3, 3, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 8x8: plane kernel, no overlap */
    {1, 3, 3, 3, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 6x3: too narrow for it */
    {2, 2, 2, 2, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 5x2 */
    {1, 3, 3, 3, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* dw 128x128: AVX-512 flat, largest */
    {1, 2, 4, 2, 129, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* dw 129x128: just above it */
    {2, 2, 6, 2, 31, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* dw 31x33: flat, multiplier 3 */
    {1, 3, 9, 3, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 4x4: flat, smallest */
    {1, 2, 2, 2, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* dw 1x16: flat, one row */
    {2, 3, 3, 3, 17, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* dw 17x2: flat, 2 wide */
    {1, 3, 6, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},        /* dw 7x7/2: AVX-512 phase planes */
    {1, 3, 3, 3, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},      /* dw /2, no end pad */
    {2, 2, 2, 2, 1, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},       /* dw /2, one input row */
    {1, 2, 2, 2, 33, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},       /* dw /2, 2 wide */
    {1, 2, 2, 2, 3, 2049, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* dw /2, wider than it takes */
    {1, 3, 3, 3, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* dw 5x4: plane kernel, narrowest */
    {1, 3, 3, 3, 9, 12, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0},       /* dw /2 unpadded: odd last byte */
    /* K x K flat kernels (K = 5, 7): stride 1 (masked column wrap) and 2 (phase planes) */
    {1, 3, 3, 3, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},        /* dw5 7x7: flat, last vector 1 */
    {1, 4, 4, 4, 14, 14, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw5 14x14 */
    {1, 2, 2, 2, 28, 28, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw5 28x28 */
    {2, 3, 6, 3, 4, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},        /* dw5 4x4: flat, smallest, x2 */
    {1, 2, 2, 2, 3, 5, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},        /* dw5 3x5: below a vector */
    {1, 2, 2, 2, 1, 17, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},       /* dw5 1x17: one row */
    {1, 3, 3, 3, 19, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},       /* dw5 19x2: narrower than K */
    {1, 3, 3, 3, 13, 11, 5, 5, 1, 1, 1, 1, 0, 4, 4, 0},      /* dw5 pads 0 / 4 */
    {1, 2, 2, 2, 99, 99, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw5 99x99: flat, largest */
    {1, 2, 2, 2, 100, 100, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},    /* dw5 100x100: just above */
    {1, 3, 3, 3, 14, 14, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4},      /* dw5 dilation 2: row kernel */
    {1, 3, 3, 3, 14, 14, 5, 5, 1, 1, 1, 1, 2, 2, 1, 1},      /* dw5 out 13x13: not flat */
    {1, 3, 3, 3, 7, 7, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},        /* dw7 7x7 (ConvNeXt) */
    {1, 2, 2, 2, 14, 15, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},      /* dw7 14x15 */
    {1, 2, 4, 2, 17, 5, 7, 7, 1, 1, 1, 1, 2, 1, 4, 5},       /* dw7 asymmetric pads */
    {1, 3, 3, 3, 14, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},      /* dw5 14x14/2: phase planes */
    {1, 2, 2, 2, 56, 56, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},      /* dw5 56x56/2 */
    {1, 3, 6, 3, 28, 28, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},      /* dw5 28x28/2, multiplier 2 */
    {1, 3, 3, 3, 7, 7, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},        /* dw5 7x7/2 */
    {2, 2, 2, 2, 1, 1, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},        /* dw5 1x1/2: one output */
    {1, 3, 3, 3, 14, 14, 5, 5, 2, 2, 1, 1, 1, 1, 2, 2},      /* dw5 /2, pads 1 / 2 (SAME) */
    {1, 3, 3, 3, 15, 13, 5, 5, 2, 2, 1, 1, 0, 3, 0, 1},      /* dw5 /2, odd sizes, pads 0 / 3 */
    {1, 2, 2, 2, 5, 70, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},       /* dw5 /2, rows of 3 chunks */
    {1, 3, 3, 3, 14, 14, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},      /* dw7 14x14/2 */
    {1, 2, 2, 2, 9, 10, 7, 7, 2, 2, 1, 1, 6, 5, 0, 1},       /* dw7 /2, pads 6 / 5 */
    {1, 1, 2, 1, 14, 14, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw5, one channel: no pipeline */
    {1, 2, 2, 2, 5, 23, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},       /* dw7, rows wider than 16 */
    {1, 2, 2, 2, 6, 20, 5, 5, 1, 1, 1, 1, 4, 0, 0, 4},       /* dw5 pads 4 / 0, wider than 16 */
    {1, 2, 2, 2, 4, 18, 5, 5, 1, 1, 1, 1, 1, 3, 3, 1},       /* dw5 pads 1 / 3, wider than 16 */
    {2, 1, 1, 1, 9, 9, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},        /* dw5 /2, two images of one */
    {1, 3, 3, 3, 2, 130, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      /* dw5 rows wider than 2 vectors */
    {1, 2, 2, 2, 6, 140, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},      /* dw5 /2, rows past 64 outputs */
    {1, 7, 13, 1, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* GEMM, one K block */
    {1, 7, 13, 1, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* 40 pixels: 24 + 16 */
    {1, 9, 8, 1, 1, 41, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},       /* 41 pixels: 24 + 17 */
    {1, 9, 10, 1, 7, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},       /* 56 = 32 + 24: AVX-512 paired
                                                             * tail, its widest */
    {1, 9, 10, 1, 3, 19, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* 57 = 32 + 25: past the pairs */
    {1, 10, 12, 1, 1, 89, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* 89 = 64 + 25 */
    {1, 1300, 11, 1, 7, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* 49 = 32 + 17, 2 K blocks: pairs
                                                             * after sums so far */
    {1, 1300, 9, 1, 4, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* 36 = 32 + 4, 2 K blocks: pairs
                                                             * of 8 alone */
    {1, 1300, 8, 1, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* flat, 2 K blocks, 8 = 3 + 3 + 2 */
    {1, 140, 7, 1, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* band, K 1260: 2 blocks */
    {1, 70, 11, 1, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* GEMM, 2 K blocks */
    {1, 230, 5, 1, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* GEMM, 5 K blocks */
    {3, 6, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},        /* panels across images */
    {2, 33, 19, 1, 14, 15, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* flat 1x1 */
    {1, 9, 6, 1, 14, 15, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},      /* padded 1x1: not flat */
    {1, 9, 6, 1, 15, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},      /* 1x1/2 */
    {1, 5, 4, 1, 19, 20, 1, 1, 3, 3, 1, 1, 0, 0, 0, 0},      /* 1x1/3: scalar gather */
    {1, 3, 8, 1, 30, 31, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},      /* 7x7/2 stem: edges */
    {1, 5, 6, 1, 57, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      /* 3x3/2, vector gathers */
    {1, 8, 12, 4, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* groups */
    {1, 6, 7, 1, 11, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},      /* dilation 2 */
    {1, 4, 5, 1, 1, 50, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2},       /* 1-D */
    {1, 37, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},       /* Gemm, 1 row: dot path */
    {7, 37, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},       /* Gemm, 7 rows: dot path */
    {8, 37, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},       /* Gemm, 8 rows: panels */
    {3, 2000, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* dot path, 16-k steps */
    {40, 700, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* Gemm rows, K blocks */
    {1, 3, 5, 1, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},        /* 6 pixels: dot path conv */
    {1, 20, 16, 1, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* AMX: one unit, K tail 52 */
    {1, 7, 17, 1, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* AMX: 17 = 16 + shifted unit */
    {2, 37, 40, 1, 7, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* AMX: flat, tail chunk only */
    {1, 64, 48, 2, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* AMX: 2 groups of 24 */
    {1, 130, 35, 1, 11, 13, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},   /* AMX: 1x1/2, 35 = 32 + 3 */
    {2, 67, 20, 1, 13, 17, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* AMX 1x1/2 packed from x: K 67,
                                                             * runs 9 9 9 5, across images */
    {1, 65, 16, 1, 12, 12, 1, 1, 3, 2, 1, 1, 0, 0, -1, 0},   /* ... row stride 3, rows unread */
    {1, 41, 33, 1, 5, 70, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},     /* ... runs of 32 and 3 */
    {1, 66, 16, 1, 9, 9, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1},      /* ... padded: through the band */
    {1, 3, 64, 1, 30, 31, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},     /* AMX: 7x7/2 stem, K 147 */
    {1, 1300, 16, 1, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* AMX: flat, 20 chunks + tail */
    {40, 700, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* AMX: Gemm rows, 16 + 4 */
    {3, 16, 16, 1, 4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* AMX: panels across images */
    {1, 64, 64, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* AMX: 2 x 32 channels */
    {2, 12, 40, 2, 15, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* AMX: batches across images, 2 groups */
    {1, 16, 48, 1, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* AMX: batches of 8 and 5 panels */
    {3, 20, 16, 1, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* amxt: K 20, one unit, 35 = 32 + 3
                                                             * pixels, images */
    {1, 64, 33, 1, 9, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* amxt: K 64 (its largest), units
                                                             * 16 + 16 + shifted 1: a lone unit */
    {1, 17, 24, 1, 32, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* amxt: 17 channels (zero rows in
                                                             * the last quad), 33 panels */
    {2, 96, 64, 2, 6, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* amxt: 2 groups of 48 -> 32 */
    {1, 42, 34, 2, 7, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* amxt: groups of 21 -> 17 */
    {1, 68, 16, 1, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* K 68: past amxt, AMX tiles */
    {1, 3, 64, 1, 23, 25, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0},     /* a 3-channel stem (kept off amxt) */
    {1, 64, 32, 1, 15, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* amxt 1x1/2: K 64, rows of 8 */
    {1, 24, 17, 1, 12, 70, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* ... rows of 35: runs 32 + 3, 29 + 6 */
    {2, 36, 20, 1, 9, 40, 1, 1, 1, 2, 1, 1, 0, 0, 0, 0},     /* ... row stride 1, images */
    {1, 40, 32, 2, 13, 13, 1, 1, 3, 2, 1, 1, 0, 0, 0, 0},    /* ... row stride 3, 2 groups */
    {1, 21, 16, 1, 11, 11, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* ... 21 channels: a part quad */
    {1, 3, 32, 1, 23, 25, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* taps: padded 3x3/2 stem, runs
                                                             * across rows */
    {2, 6, 8, 2, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      /* taps: 2 groups (K 27), images */
    {1, 4, 6, 1, 5, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* taps: stride 1, rows too wide
                                                             * for grid panels */
    {1, 2, 8, 1, 9, 70, 7, 7, 1, 3, 1, 3, 2, 3, 2, 3},       /* taps: the widest window, 15 x 3
                                                             * + 6 x 3 + 1 = 64 bytes */
    {1, 2, 8, 1, 9, 70, 3, 8, 1, 1, 1, 7, 1, 0, 1, 0},       /* 15 + 7 x 7 + 1 = 65 bytes: past
                                                             * taps, the band */
    {1, 28, 20, 1, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* taps: K 252, 63 quads */
    {1, 29, 20, 1, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* taps: K 261, 66 quads */
    {1, 71, 12, 1, 7, 30, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* taps: K 639, 160 quads (all) */
    {1, 72, 12, 1, 7, 30, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     /* K 648: past taps, the band */
    {1, 71, 12, 1, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* band taps: K 639 */
    {1, 214, 8, 1, 3, 40, 1, 3, 2, 2, 1, 1, 0, 1, 0, 1},     /* 1x3/2, K 642: 161 quads, one
                                                             * past taps */
    {1, 214, 8, 1, 3, 30, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},     /* ... stride 1: past band taps */
    {1, 3, 8, 1, 17, 30, 5, 3, 2, 2, 2, 1, 2, 1, 2, 1},      /* taps: 5x3, row dilation 2 */
    {1, 3, 8, 1, 12, 30, 3, 3, 2, 2, 1, 1, 0, 0, -3, -4},    /* taps: rows and columns unread */
    {1, 5, 40, 1, 6, 200, 3, 3, 1, 2, 1, 1, 4, 5, 4, 5},     /* taps: padding wider than the
                                                             * kernel (windows of zeros) */
    /* a panel's last pixel by dot products (gemm_panel: 17 = 16 + 1, K >= 512) */
    {1, 64, 20, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* 3x3, 49 = 32 + 16 + 1: the
                                                             * padded corner */
    {1, 600, 13, 1, 9, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* flat, 81 = 64 + 16 + 1 */
    {1, 130, 10, 1, 15, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* 225 = 7 x 32 + 1: dot alone */
    {3, 520, 6, 1, 3, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* 3 images of 27: 81 */
    {1, 64, 12, 1, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    /* 3x3/2 to 7x7 */
    {1, 60, 8, 1, 7, 7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},       /* dilated 2 */
    {1, 128, 16, 2, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* 2 groups */
};

/* Exact, every family: shapes aimed at each SIMD path (simd_shapes), each with u8 and s8
 * inputs, both requant modes and the four data kinds, a few with an output view and
 * saturating biases. */
static void test_conv_simd_paths(void) {
    rnd_seed(23);
    int64_t bad = 0;
    for (size_t si = 0; si < sizeof simd_shapes / sizeof simd_shapes[0]; si++) {
        const int *v = simd_shapes[si];
        for (int in_type = 0; in_type < 2; in_type++)
            for (int kind = 0; kind < 4; kind++) {
                OqciConv p;
                conv_geo(&p, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                         v[11], v[12], v[13], v[14], v[15]);
                if (kind == 0 && in_type == 1) {   /* an output view */
                    p.out_coff = 2;
                    p.out_ctotal = p.out_c + 3;
                }
                int bias_kind = kind == 2 && si % 3 == 0 ? 2 : (int)rnd_int(0, 1);
                int mode = (int)((si + (size_t)kind + (size_t)in_type) % 2);
                bad += conv_data_run(&p, in_type, kind, bias_kind, mode, 0) != 0;
            }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Shapes of the layers that get accumulator outputs (a network's last ones), beyond
 * simd_shapes. */
static const int s32_shapes[][16] = {
    /* N, C, K, g, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr */
    {1, 1280, 1000, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},   /* classifier, batch 1: dot path */
    {3, 256, 100, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     /* a few rows: dot path */
    {16, 640, 100, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* Gemm rows: panels, AMX */
    {1, 320, 40, 1, 7, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},      /* last 1x1 conv: flat, AMX */
    {2, 96, 21, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* 3x3 head, many pixels */
    {1, 32, 32, 32, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* depthwise: GEMM, not dw */
    {1, 16, 16, 16, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* depthwise, 4 pixels: dot path */
};

/* Exact, every family: accumulator outputs (OQCI_S32) on simd_shapes and s32_shapes,
 * each with u8 and s8 inputs and the four data kinds, the three clamp kinds (none, ReLU,
 * narrow), an rq with null pointers (float, fixed or invalid mode: reading it crashes),
 * output views, saturating biases. */
static void test_conv_s32_paths(void) {
    const size_t n1 = sizeof simd_shapes / sizeof simd_shapes[0];
    const size_t n2 = sizeof s32_shapes / sizeof s32_shapes[0];
    rnd_seed(26);
    int64_t bad = 0;
    for (size_t si = 0; si < n1 + n2; si++) {
        const int *v = si < n1 ? simd_shapes[si] : s32_shapes[si - n1];
        for (int in_type = 0; in_type < 2; in_type++)
            for (int kind = 0; kind < 4; kind++) {
                OqciConv p;
                conv_geo(&p, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                         v[11], v[12], v[13], v[14], v[15]);
                if ((kind == 0 && in_type == 1) || (kind == 3 && in_type == 0)) {   /* views */
                    p.out_coff = kind ? 1 : 2;
                    p.out_ctotal = p.out_c + 3;
                }
                int bias_kind = kind == 2 && si % 3 == 0 ? 2 : (int)rnd_int(0, 1);
                int variant = (int)((si + 4 * (size_t)in_type + (size_t)kind) % 9);
                bad += conv_data_run(&p, in_type, kind, bias_kind, 0, 1 + variant) != 0;
            }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* oqci_conv_wpair16 at its bounds, and AVX2 taking the vpmaddubsw family when it says
 * 1: weights that do not qualify, claimed to (an OqciConv the compiler never makes),
 * saturate there, which shows the flag selects that family; the cases above with
 * qualifying weights (test_conv_random's 7-bit ones, kind 3 of test_conv_simd_paths)
 * ran it and matched the reference. */
static void test_conv_wpair16(void) {
    static const int8_t pairs[][3] = {
        /* w0, w1, qualifies */
        {64, 64, 1}, {127, 1, 1}, {65, 64, 0}, {127, 2, 0}, {-64, -64, 1}, {-128, 0, 1},
        {-128, -1, 0}, {-65, -64, 0}, {127, -127, 1}, {-128, 127, 1}, {0, 0, 1}, {1, 127, 1},
    };
    OqciConv p;
    conv_geo(&p, 1, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);   /* kpad 4 */
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        for (int at = 0; at < 4; at += 2) {   /* the pair at the start or the end of row 1 */
            int8_t w[8] = {63, -63, 5, 5, 0, 0, 0, 0};
            w[4 + at] = pairs[i][0];
            w[5 + at] = pairs[i][1];
            p.w = w;
            CU_ASSERT_EQUAL(oqci_conv_wpair16(&p), pairs[i][2]);
        }
    p.w = NULL;
    CU_ASSERT_EQUAL(oqci_conv_wpair16(&p), 0);
    CU_ASSERT_EQUAL(oqci_conv_wpair16(NULL), 0);
    /* flags other than 0 and 1 are invalid */
    {
        int8_t w[8] = {0};
        uint8_t x[3] = {0}, y[2];
        char scratch[4096];
        p.w = w;
        p.wpair16 = 2;
        p.in_type = p.out_type = OQCI_U8;
        p.hi = 255;
        float one = 1;
        p.rq.mode = OQCI_REQ_FLOAT;
        p.rq.mult = &one;
        CU_ASSERT(oqci_conv_scratch(&p) <= sizeof scratch);
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y, scratch), OQCI_EINVAL);
        p.wpair16 = 1;
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y, scratch), OQCI_OK);
    }
    CU_ASSERT(wpair16_cases >= 100);
    printf("\n  conv cases with vpmaddubsw-safe weights: %lld", (long long)wpair16_cases);
    if (!oqci_isa_available(OQCI_ISA_AVX2))
        return;
    /* 4 channels x 48 pixels: 32 inputs of 255 against weights all 127 (pairs of 255 *
     * 254, above int16: vpmaddubsw saturates each to 32767, 16 per pixel) */
    conv_geo(&p, 1, 32, 4, 1, 6, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);
    int8_t *w = malloc((size_t)p.out_c * p.kpad);
    uint8_t *x = malloc((size_t)p.in_c * 48), *y = malloc((size_t)p.out_c * 48);
    memset(w, 127, (size_t)p.out_c * p.kpad);
    memset(x, 255, (size_t)p.in_c * 48);
    p.w = w;
    p.in_type = OQCI_U8;
    p.out_type = OQCI_U8;
    p.lo = 0;
    p.hi = 255;
    float m = 255.0f / (32.0f * 255 * 127);   /* the exact sum maps to 255 */
    p.rq.mode = OQCI_REQ_FLOAT;
    p.rq.mult = &m;
    void *scratch = malloc(oqci_conv_scratch(&p));
    CU_ASSERT_EQUAL_FATAL(oqci_force_isa(OQCI_ISA_AVX2), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_conv_wpair16(&p), 0);
    CU_ASSERT_EQUAL(oqci_conv(&p, x, y, scratch), OQCI_OK);
    CU_ASSERT_EQUAL(y[0], 255);   /* exact */
    p.wpair16 = 1;   /* the false claim */
    CU_ASSERT_EQUAL(oqci_conv(&p, x, y, scratch), OQCI_OK);
    CU_ASSERT_EQUAL(y[0], oqci_round_clamp((float)(16 * 32767) * m, 0, 255));   /* saturated */
    CU_ASSERT(y[0] < 255);
    oqci_force_isa(OQCI_ISA_AUTO);
    free(scratch);
    free(y);
    free(x);
    free(w);
}

/* Exact, every family: the requantization at its edges.  Outputs of a 1x1 conv over 64
 * pixels (the GEMM path, C = 2) and of a depthwise 3x3 (its own epilogue), one channel
 * per multiplier: float M = 0.5 and 0.25 (accumulators at exact halves: rounding away
 * from zero), 1/3, 3 (clamped), 0, a subnormal, 2e38 (2 M overflows float: see rq8),
 * FLT_MAX, +inf (acc 0 gives NaN, so lo), NaN, -0.5; fixed m = 2^30 with shift 31
 * (halves), shift 1 (saturating), shift 62, m = 0, sqrt(2) 2^30 to 24 significant bits
 * (fixed multipliers are float32s, oqci_requant_ok).  Channel 3's bias saturates; from
 * channel 4 on the bias is 0, and the zero input rows 0-2 give acc = 0 there (0 * 2e38
 * must stay 0, not become 0 * inf).  Compared with ref_conv (oqci_requant) exactly. */
static void test_conv_requant_edges(void) {
    static const float fm[] = {0.5f, 0.25f, 1.0f / 3.0f, 3.0f, 0.0f, 1e-40f, 2e38f,
                               3.40282347e38f, INFINITY, NAN, -0.5f};
    static const int32_t xm[] = {1 << 30, 1 << 30, 1 << 30, 0, 1518500224};
    static const int8_t xs[] = {31, 1, 62, 40, 45};
    const int nf = (int)(sizeof fm / sizeof fm[0]), nx = (int)(sizeof xm / sizeof xm[0]);
    rnd_seed(24);
    int64_t bad = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int mode = 0; mode < 2; mode++)
            for (int in_type = 0; in_type < 2; in_type++) {
                int K = mode == OQCI_REQ_FLOAT ? nf : nx;
                OqciConv p;
                if (layout == 0)
                    conv_geo(&p, 1, 2, K, 1, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);
                else
                    conv_geo(&p, 1, K, K, K, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
                p.in_type = in_type;
                p.out_type = (int32_t)rnd_int(0, 1);
                rnd_clamp(p.out_type, &p.lo, &p.hi);
                int64_t nxs = (int64_t)p.in_c * 64;
                uint8_t *x = rnd_q(nxs, in_type);
                for (int64_t c = 0; c < p.in_c; c++)   /* input rows 0-2 zero: acc = bias */
                    memset(x + c * 64, 0, 24);
                int8_t *W = malloc((size_t)(K * p.kdim));
                for (int64_t i = 0; i < (int64_t)K * p.kdim; i++)
                    W[i] = (int8_t)rnd_int(-3, 3);   /* small sums: many exact halves */
                int32_t *bias = malloc(sizeof(int32_t) * (size_t)K);
                for (int k = 0; k < K; k++)   /* acc = 0 there for M = 0 .. -0.5 */
                    bias[k] = k == 3 ? INT32_MAX - 50 : k >= 4 ? 0 : (int32_t)rnd_int(-300, 300);
                float *mult = malloc(sizeof(float) * (size_t)K);
                int32_t *m = malloc(sizeof(int32_t) * (size_t)K);
                int8_t *sh = malloc((size_t)K);
                for (int k = 0; k < K; k++) {
                    mult[k] = mode == OQCI_REQ_FLOAT ? fm[k] : 0.0f;
                    m[k] = mode == OQCI_REQ_FIXED ? xm[k] : 0;
                    sh[k] = mode == OQCI_REQ_FIXED ? xs[k] : 1;
                }
                p.bias = bias;
                p.rq.mode = mode;
                p.rq.per_index = 1;
                p.rq.mult = mode == OQCI_REQ_FLOAT ? mult : NULL;
                p.rq.m = mode == OQCI_REQ_FIXED ? m : NULL;
                p.rq.shift = mode == OQCI_REQ_FIXED ? sh : NULL;
                int64_t b = conv_run(&p, x, W);
                if (b)
                    printf("\n  requant edges: layout %d mode %d in %d", layout, mode, in_type);
                bad += b;
                free(x);
                free(W);
                free(bias);
                free(mult);
                free(m);
                free(sh);
            }
    CU_ASSERT_EQUAL(bad, 0);
}


/* Exact, every family: 3x3 depthwise convs on rows of 2 to 4 vectors (the AMX family's
 * byte-plane kernel, four rows at a time with the int16 epilogue where every sum times
 * 2 M stays within 2^30) at strides 1 and 2, heights leaving 1 to 4 rows in the last
 * group of four, per-channel float multipliers from tiny to past that bound (3000: 2 M B
 * above 2^30 with the largest sums, so that channel takes the float epilogue) and the
 * edge values, both input and output types, clamps, data at the extremes. */
static void test_conv_dw3q_rows(void) {
    static const float fm[] = {0.5f, 0.25f, 1.0f / 3.0f, 3.0f, 0.0f, 1e-40f, 2e38f,
                               3.40282347e38f, INFINITY, NAN, -0.5f, 3000.0f, 1e-3f, 0.02f};
    const int K = (int)(sizeof fm / sizeof fm[0]);
    rnd_seed(25);
    int64_t bad = 0;
    for (int t = 0; t < 32; t++) {
        int s = 1 + t % 2, H = 9 + t / 2 % 4 * s, W = 28 + t / 8 * 12 * s;
        OqciConv p;
        conv_geo(&p, 1, K, K, K, H, W, 3, 3, s, s, 1, 1, 1, 1, 1, 1);
        p.in_type = t / 4 % 2;
        p.out_type = (int32_t)rnd_int(0, 1);
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        uint8_t *x = rnd_q((int64_t)K * H * W, p.in_type);
        for (int64_t i = 0; t % 3 == 0 && i < (int64_t)K * H * W; i++)   /* extremes */
            x[i] = p.in_type == OQCI_U8 ? 255 : 127;
        int8_t *Wt = malloc((size_t)(K * p.kdim));
        for (int64_t i = 0; i < (int64_t)K * p.kdim; i++)
            Wt[i] = t % 3 == 0 ? (int8_t)(i / p.kdim % 2 ? -128 : 127) : (int8_t)rnd_int(-128, 127);
        int32_t *bias = malloc(sizeof(int32_t) * (size_t)K);
        float *mult = malloc(sizeof(float) * (size_t)K);
        for (int k = 0; k < K; k++) {
            bias[k] = (int32_t)rnd_int(-5000, 5000);
            mult[k] = fm[k];
        }
        p.bias = bias;
        p.rq.mode = OQCI_REQ_FLOAT;
        p.rq.per_index = 1;
        p.rq.mult = mult;
        int64_t b = conv_run(&p, x, Wt);
        if (b)
            printf("\n  dw3q rows: %dx%d stride %d in %d out %d", H, W, s, p.in_type, p.out_type);
        bad += b;
        free(x);
        free(Wt);
        free(bias);
        free(mult);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* conv_run of p with bias and float per-channel multipliers mult (taking x, W, bias and
 * mult, which it frees): the epilogue tests' cases. */
static int64_t conv_run_rq(OqciConv *p, uint8_t *x, int8_t *W, int32_t *bias, float *mult) {
    p->bias = bias;
    p->rq.mode = OQCI_REQ_FLOAT;
    p->rq.per_index = 1;
    p->rq.mult = mult;
    int64_t b = conv_run(p, x, W);
    free(x);
    free(W);
    free(bias);
    free(mult);
    return b;
}
/* Exact, every family: the AVX-512 fused epilogue's int16 clamp (rq64, taken when
 * rq_mode allows RQ_I16: (kpad * 32640 + |bias|) * 2 M <= 2^30 for every channel) and its
 * fallback, the float clamp.  1x1 convs (C 16: the VNNI microkernel; C 24 and 48: the AMX
 * family's thin kernel, oqci_conv_amxt.c; C 80: AMX tiles) over 7x7 pixels (panels of 32
 * and 17) and 4x4 (16: the 16-pixel bodies), K odd
 * (row pairs and fours cut short), two thirds of the inputs at the top of their range
 * against all +127 or all -127 weights per channel, so sums reach +-kpad * 32640;
 * multipliers: odd channels at 0.9 of the bound (u = acc * 2 M nears 2^30, outputs
 * clamped hard), even ones putting u near +-200 .. 560 (rounding and clamping there),
 * and in half the cases channel 5's 3 times over the bound: u then leaves int32 and
 * cvttps2dq gives 0x80000000, which an int16 clamp would send to lo, so the whole call
 * must fall back.  u8 and s8 outputs; clamps full, ReLU-like, ReLU6-like (hi < 255)
 * and lo = hi. */
static void test_conv_i16_epilogue(void) {
    static const int chans[] = {16, 24, 48, 80}, sides[] = {7, 4};
    static const int32_t clamps[][2][2] = {   /* [kind][u8, s8] {lo, hi} */
        {{0, 255}, {-128, 127}}, {{0, 255}, {0, 127}}, {{0, 150}, {-20, 90}},
        {{37, 37}, {-5, -5}}};
    rnd_seed(25);
    int64_t bad = 0;
    for (int ci = 0; ci < 4; ci++)
        for (int si = 0; si < 2; si++)
            for (int over = 0; over < 2; over++)
                for (int ot = 0; ot < 2; ot++)
                    for (int ck = 0; ck < 4; ck++) {
                        int K = 19, in_type = (ci + ck) % 2 ? OQCI_U8 : OQCI_S8;
                        OqciConv p;
                        conv_geo(&p, 1, chans[ci], K, 1, sides[si], sides[si], 1, 1, 1, 1,
                                 1, 1, 0, 0, 0, 0);
                        p.in_type = in_type;
                        p.out_type = ot ? OQCI_S8 : OQCI_U8;
                        p.lo = clamps[ck][ot][0];
                        p.hi = clamps[ck][ot][1];
                        int64_t nxs = (int64_t)p.in_c * sides[si] * sides[si];
                        uint8_t *x = rnd_q(nxs, in_type);
                        for (int64_t i = 0; i < nxs; i++)
                            if (i % 3)
                                x[i] = in_type == OQCI_U8 ? 255 : 127;
                        int8_t *W = malloc((size_t)(K * p.kdim));
                        int32_t *bias = malloc(sizeof(int32_t) * (size_t)K);
                        float *mult = malloc(sizeof(float) * (size_t)K);
                        for (int k = 0; k < K; k++) {
                            int8_t wv = rnd_int(0, 1) ? 127 : -127;
                            for (int j = 0; j < p.kdim; j++)
                                W[k * p.kdim + j] = k % 4 == 3 ? (int8_t)rnd_int(-127, 127) : wv;
                            bias[k] = (int32_t)rnd_int(-100000, 100000);
                            double bound = (double)p.kpad * 32640 + (bias[k] < 0 ? -bias[k] : bias[k]);
                            double f = over && k == 5 ? 3.0 : k % 2 ? 0.9 : (200.0 + 20 * k) / 1073741824.0;
                            mult[k] = (float)(f * 1073741824.0 / (2.0 * bound));
                        }
                        int64_t b = conv_run_rq(&p, x, W, bias, mult);
                        if (b)
                            printf("\n  i16 epilogue: C %d side %d over %d out %d clamp %d",
                                   chans[ci], sides[si], over, ot, ck);
                        bad += b;
                    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The AVX-512 fused epilogue on sums that start from 2^23 (modes RQ_I16B and RQ_I16BN
 * of oqci_conv_int.h: u8 outputs with lo = 0, |acc| < 2^23, 2 M >= 0 on every channel;
 * BN also hi = 255 and |acc| * 2 M < 2^15 - 1), and the cases that must leave it: each
 * family's 1x1 conv against ref_conv, exactly.  Kinds: 0 BN with M = 2^-6 (every acc =
 * 64 n + 32 a tie, rounded up), 1 BN with M up to the bound, so that the largest sums
 * saturate at 255 by the byte pack alone, 2 hi = 255 but one channel's M 4x over that
 * bound (B: the clamp at hi kept; without it, u8 inputs make that channel's u pass
 * 65535), 3 hi = 100 (B), 4 lo = 3 (plain RQ_I16), 5 one channel with M < 0 (RQ_I16);
 * channel 2 has M = 0 in kinds 1 to 3; channels 6 and 7 have weights of 127 (the
 * largest sums).  Inputs are full range, weights of both signs, biases up to +-10^5:
 * sums of both signs, so the negative half (where the biased float holds acc / 2) is
 * reached.  260 input channels put the bound past 2^23
 * (RQ_I16); 16 runs the AVX-512 VNNI microkernel, 24 and 48 the AMX family's thin kernel
 * (oqci_conv_amxt.c), 80 and 260 the AMX tiles' epilogue. */
static void test_conv_biased_epilogue(void) {
    static const int chans[] = {16, 24, 48, 80, 260}, sides[] = {7, 8}, outs[] = {19, 40};
    rnd_seed(26);
    int64_t bad = 0;
    for (int ci = 0; ci < 5; ci++)
        for (int si = 0; si < 2; si++)
            for (int oi = 0; oi < 2; oi++)
                for (int kind = 0; kind < 6; kind++) {
                    int K = outs[oi], in_type = (ci + kind) % 2 ? OQCI_U8 : OQCI_S8;
                    OqciConv p;
                    conv_geo(&p, 1, chans[ci], K, 1, sides[si], sides[si], 1, 1, 1, 1, 1, 1, 0,
                             0, 0, 0);
                    p.in_type = in_type;
                    p.out_type = OQCI_U8;
                    p.lo = kind == 4 ? 3 : 0;
                    p.hi = kind == 3 ? 100 : 255;
                    int64_t nxs = (int64_t)p.in_c * sides[si] * sides[si];
                    uint8_t *x = rnd_q(nxs, in_type);
                    int8_t *W = malloc((size_t)(K * p.kdim));
                    int32_t *bias = malloc(sizeof(int32_t) * (size_t)K);
                    float *mult = malloc(sizeof(float) * (size_t)K);
                    for (int k = 0; k < K; k++) {
                        for (int j = 0; j < p.kdim; j++)
                            W[k * p.kdim + j] = (int8_t)(k == 6 || k == 7 ? 127
                                                         : k % 3 ? rnd_int(-127, 127)
                                                                 : (k % 2 ? 127 : -127));
                        bias[k] = (int32_t)rnd_int(-100000, 100000);
                        double bound = (double)p.kpad * 32640 + (bias[k] < 0 ? -bias[k] : bias[k]);
                        if (kind == 0)
                            mult[k] = 1.0f / 64;
                        else   /* 2 M * bound just under 2^15 - 1, or 1.5x over it */
                            mult[k] = (float)((kind == 2 && k == 6 ? 4.0 : 0.99) * 32767.0 /
                                              (2.0 * bound) * (0.25 + 0.75 * rnd_int(0, 1000) / 1000.0));
                        if (kind == 1 && k == 7)
                            mult[k] = (float)(0.999 * 32767.0 / (2.0 * bound));
                        if (kind >= 1 && kind <= 3 && k == 2)
                            mult[k] = 0.0f;
                        if (kind == 5 && k == 4)
                            mult[k] = -mult[k];
                    }
                    int64_t b = conv_run_rq(&p, x, W, bias, mult);
                    if (b)
                        printf("\n  biased epilogue: C %d side %d K %d kind %d", chans[ci],
                               sides[si], K, kind);
                    bad += b;
                }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The families: names, availability, oqci_force_isa's errors, oqci_conv_isa following
 * the forced family; then the number of conv cases each family ran in this process so
 * far (this test runs after the conv tests) -- every available one ran all of them. */
static void test_conv_isas(void) {
    find_isas();
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_PORTABLE), "portable");
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_AVX2), "avx2");
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_NEONDOT), "neondot");
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_AVX512VBMI), "avx512vbmi");
    CU_ASSERT_STRING_EQUAL(oqci_isa_name(OQCI_ISA_COUNT), "?");
    CU_ASSERT(oqci_isa_available(OQCI_ISA_AUTO) && oqci_isa_available(OQCI_ISA_PORTABLE));
    CU_ASSERT(!oqci_isa_available(-1) && !oqci_isa_available(OQCI_ISA_COUNT));
    CU_ASSERT_EQUAL(oqci_force_isa(OQCI_ISA_COUNT), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_force_isa(-3), OQCI_EINVAL);
#if defined(__x86_64__)
    CU_ASSERT_EQUAL(oqci_force_isa(OQCI_ISA_NEONDOT), OQCI_EINVAL);   /* not on x86 */
    /* liboqc's AVX2 family also uses FMA (its depthwise kernels) */
    CU_ASSERT(oqci_isa_available(OQCI_ISA_AVX2) ==
              (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
#endif
    int best = oqci_conv_isa();
    CU_ASSERT(best != OQCI_ISA_AUTO && oqci_isa_available(best));
    for (int i = 0; i < nisas; i++) {
        CU_ASSERT_EQUAL(oqci_force_isa(isas[i]), OQCI_OK);
        CU_ASSERT_EQUAL(oqci_conv_isa(), isas[i]);
    }
    CU_ASSERT_EQUAL(oqci_force_isa(OQCI_ISA_AUTO), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_conv_isa(), best);
    printf("\n  conv cases per kernel family (auto: %s):", oqci_isa_name(best));
    for (int i = OQCI_ISA_PORTABLE; i < OQCI_ISA_COUNT; i++) {
        if (oqci_isa_available(i))
            printf(" %s %lld", oqci_isa_name(i), (long long)isa_cases[i]);
        else
            oqc_test_skip("CPU lacks INT8 conv family %s (or the build has none): its cases not run",
                          oqci_isa_name(i));
        CU_ASSERT(!oqci_isa_available(i) || isa_cases[i] == isa_cases[OQCI_ISA_PORTABLE]);
    }
    CU_ASSERT(isa_cases[OQCI_ISA_PORTABLE] > 800);
    printf("\n  ");
}

/* oqci_conv_scratch: the same number whichever family runs (checked in conv_run), and
 * small for ordinary layers: at most 5.5x the portable path's 16 * kpad plus 112 bytes
 * per output channel, or 100 KB, whichever is larger, plus the AMX batch (96 KB at
 * most); depthwise planes a few KB. */
static void test_conv_scratch_size(void) {
    static const int layers[][8] = {
        /* C, K, g, H, W, k, s, pad */
        {1, 16, 1, 28, 28, 3, 1, 1},      {32, 32, 1, 14, 14, 3, 1, 1},
        {64, 64, 1, 56, 56, 3, 1, 1},     {256, 256, 1, 14, 14, 3, 1, 1},
        {512, 512, 1, 7, 7, 3, 1, 1},     {256, 1024, 1, 14, 14, 1, 1, 0},
        {144, 144, 144, 56, 56, 3, 1, 1}, {512, 512, 512, 14, 14, 3, 2, 1},
        {3, 64, 1, 224, 224, 7, 2, 3},    {4096, 1000, 1, 1, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        const int *v = layers[i];
        OqciConv p;
        conv_geo(&p, 1, v[0], v[1], v[2], v[3], v[4], v[5], v[5], v[6], v[6], 1, 1, v[7], v[7],
                 v[7], v[7]);
        size_t ss = oqci_conv_scratch(&p), port = (size_t)16 * p.kpad;
        /* (AMX: a panel of the whole reduction, 2 port, and 64 weight bytes per channel;
         * plus its batch: at most 64 KB more of panels and 8 x 4 KB of sums) */
        size_t bound = port * 11 / 2 + (size_t)112 * p.out_c;
        if (bound < 100000)
            bound = 100000;
        bound += 65536 + 8 * 4096;
        if (ss > bound)
            printf("\n  scratch %zu > %zu for layer %zu", ss, bound, i);
        CU_ASSERT(ss >= (size_t)p.kpad && ss <= bound);
    }
}

/* oqci_conv_par: split for 2 threads (tasks run in reverse order on the caller) and for
 * 3 (on oqcf_threads.c's pool), every family gives exactly the reference's bits (conv_run
 * compares every output element, and checks the channels outside a view stay untouched)
 * with a scratch of exactly oqci_conv_par_scratch bytes; and the split is the documented
 * one: every shape below but the last has at least 3 units (runs of 8 channels, single
 * channels, groups, images) and 3 x OQCI_PAR_MIN_MACS multiply-adds (a depthwise conv:
 * 3 x OQCI_PAR_MIN_MACS / OQCI_PAR_DW_DIV counting OQCI_PAR_DW_CH_MACS a channel: the
 * 576-channel one only so, the second-to-last only that; a conv of 1 to 7 pixels: 3 x
 * OQCI_PAR_MIN_MACS / OQCI_PAR_GEMV_DIV, the 512 x 1000 one only that), so it makes as
 * many parts as threads; the last is too small to share. */
static void test_conv_threads(void) {
    static const int shapes[][16] = {
        /* N, C, K, g, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr */
        {1, 64, 160, 1, 30, 30, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* runs of 8 channels */
        {1, 64, 5, 1, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* rows: 5 channels */
        {1, 3, 32, 1, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    /* rows: a stem, /2 */
        {1, 144, 24, 1, 56, 56, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* rows: 1x1 (flat) */
        {2, 64, 16, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* rows over 2 images */
        {1, 64, 64, 64, 80, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* depthwise: groups */
        {1, 64, 128, 64, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, /* depthwise /2, x2 */
        {1, 64, 64, 4, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* 4 groups */
        {3, 32, 64, 2, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* grouped, 3 images */
        {1, 2048, 1600, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},   /* fully connected */
        {4, 1024, 800, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* 4 rows */
        {1, 512, 1000, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* classifier < MIN_MACS */
        {1, 128, 48, 1, 28, 28, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* 1x1 */
        {1, 256, 72, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* 3x3, 7 rows: channels */
        {1, 16, 48, 1, 55, 55, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     /* rows on a grid (a */
        /* part of 3 whose last panel held only a row's dropped positions once stored
         * through runs it did not have: wrong outputs in the row before the next part) */
        {1, 576, 576, 576, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, /* depthwise: its channels */
        {1, 96, 96, 96, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* depthwise, < MIN_MACS */
        {1, 4, 4, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},         /* too small: one part */
    };
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    OqcfThreads *th = oqcf_threads_create(3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(th);
    rnd_seed(31);
    int64_t bad = 0;
    for (size_t si = 0; si < nshapes; si++)
        for (int t = 2; t <= 3; t++) {
            const int *v = shapes[si];
            OqciConv p;
            conv_geo(&p, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                     v[11], v[12], v[13], v[14], v[15]);
            if (si == 0 || si == 2 || si == 4 || si == 5) {   /* output views */
                p.out_coff = 3;
                p.out_ctotal = p.out_c + 5;
            }
            CU_ASSERT_EQUAL(oqci_conv_parts(&p, 1), 1);
            int64_t macs = (int64_t)p.batch * p.out_c * p.out_h * p.out_w * p.kdim;
            int64_t least = v[3] == v[1]                 ? OQCI_PAR_MIN_MACS / OQCI_PAR_DW_DIV
                            : v[0] * v[4] * v[5] < 8 ? OQCI_PAR_MIN_MACS / OQCI_PAR_GEMV_DIV
                                                     : OQCI_PAR_MIN_MACS;
            int64_t work = macs + (v[3] == v[1] ? (int64_t)p.batch * p.out_c * OQCI_PAR_DW_CH_MACS : 0);
            CU_ASSERT(si + 1 == nshapes || work >= 3 * least);
            CU_ASSERT(v[1] != 576 || macs < 2 * least);   /* splits for its channels only */
            CU_ASSERT(v[1] != 512 || macs < OQCI_PAR_MIN_MACS);   /* for its few pixels only */
            CU_ASSERT(si + 2 != nshapes || macs < OQCI_PAR_MIN_MACS);
            CU_ASSERT_EQUAL(oqci_conv_parts(&p, t), si + 1 < nshapes ? t : 1);
            conv_threads = t;
            par_for = t == 2 ? reverse_for : oqcf_threads_run;
            par_ctx = t == 2 ? NULL : th;
            int s32 = si == 10 || si == 9 || si == 3 ? 1 + (int)si % 3 : 0;   /* accumulator outputs */
            bad += conv_data_run(&p, (int)(si + (size_t)t) % 2, 0, 1, (int)si % 2, s32) != 0;
        }
    conv_threads = 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(reverse_tasks >= (int64_t)(nshapes - 1) * 2 * nisas);
    oqcf_threads_destroy(th);
}

static void test_conv_einval(void) {
    int8_t w[8] = {1, 2, 3, 0, 4, 5, 6, 0};
    int32_t m = 1 << 30, m_odd = (1 << 30) + 64, m_neg = -(1 << 30);
    int8_t sh = 40, bad_sh = 0;
    float f = 0.5f;
    uint8_t x[6] = {1, 2, 3, 4, 5, 6}, y[8], s[64];
    OqciConv ok;
    memset(&ok, 0, sizeof ok);
    ok.batch = 1;
    ok.in_c = 3;
    ok.in_h = 1;
    ok.in_w = 2;
    ok.out_c = 2;
    ok.out_h = 1;
    ok.out_w = 2;
    ok.k_h = ok.k_w = ok.s_h = ok.s_w = ok.d_h = ok.d_w = 1;
    ok.group = 1;
    ok.kdim = 3;
    ok.kpad = 4;
    ok.out_ctotal = 2;
    ok.lo = -127;
    ok.hi = 127;
    ok.w = w;
    ok.rq.mode = OQCI_REQ_FIXED;
    ok.rq.m = &m;
    ok.rq.shift = &sh;
    CU_ASSERT_EQUAL(oqci_conv(&ok, x, y, s), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_conv(NULL, x, y, s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_conv(&ok, NULL, y, s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_conv(&ok, x, NULL, s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_conv(&ok, x, y, NULL), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_conv_scratch(NULL), 0);
    OqciConv p;
#define BAD(stmt)                                                                   \
    do {                                                                            \
        p = ok;                                                                     \
        stmt;                                                                       \
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y, s), OQCI_EINVAL);                       \
    } while (0)
    BAD(p.group = 2);                              /* does not divide in_c = 3 */
    BAD(p.group = 0);
    BAD((p.in_c = 2, p.group = 2, p.kdim = 1, p.out_c = 1, p.out_ctotal = 1)); /* out_c */
    BAD(p.kpad = 3);                               /* not a multiple of 4 */
    BAD((p.kdim = 5, p.kpad = 8));                 /* kdim != in_c / group * k_h * k_w */
    BAD((p.k_w = 2, p.kdim = 6, p.kpad = 4));      /* kpad < kdim */
    BAD(p.out_coff = 1);                           /* out_coff + out_c > out_ctotal */
    BAD(p.out_coff = -1);
    BAD(p.w = NULL);
    BAD(p.in_type = 2);                            /* (OQCI_S32: an output type only) */
    BAD(p.out_type = 7);
    BAD((p.lo = 5, p.hi = 4));
    BAD((p.out_type = OQCI_U8, p.lo = -1));
    BAD(p.hi = 128);
    BAD(p.rq.shift = &bad_sh);                     /* shift outside [1, 62] */
    BAD(p.rq.m = &m_odd);                          /* not a float32 M: low 7 bits set */
    BAD(p.rq.m = &m_neg);
    BAD(p.rq.m = NULL);
    BAD(p.rq.mode = 5);
    BAD(p.rq.mode = OQCI_REQ_FLOAT);               /* mult NULL */
    BAD((p.s_h = 0));
    BAD((p.d_w = 0));
    BAD((p.batch = -1));
    BAD((p.p_t = -1));
    /* accumulator outputs: any int32 clamp, but not an empty one */
    BAD((p.out_type = OQCI_S32, p.lo = INT32_MAX, p.hi = INT32_MAX - 1));
    BAD((p.out_type = OQCI_S32, p.lo = 0, p.hi = -1));
#undef BAD
    p = ok;
    p.rq.mode = OQCI_REQ_FLOAT;
    p.rq.mult = &f;
    CU_ASSERT_EQUAL(oqci_conv(&p, x, y, s), OQCI_OK);
    /* Accumulator outputs on every family, rq not read (an invalid mode, null pointers):
     * x is 3 channels of 2 pixels (1 2, 3 4, 5 6), the weight rows 1 2 3 and 4 5 6, so the
     * sums are 22 28 (channel 0) and 49 64 (channel 1); then clamped to [25, 50], to
     * [INT32_MIN, INT32_MIN] (lo = hi), and with a bias near INT32_MAX saturated. */
    find_isas();
    for (int ii = 0; ii < nisas; ii++) {
        int32_t y32[4], bias[2] = {INT32_MAX - 30, -5};
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
        p = ok;
        p.out_type = OQCI_S32;
        p.lo = INT32_MIN;
        p.hi = INT32_MAX;
        p.rq = unread_rq(2);
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y32, s), OQCI_OK);
        CU_ASSERT(y32[0] == 22 && y32[1] == 28 && y32[2] == 49 && y32[3] == 64);
        p.lo = 25;
        p.hi = 50;
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y32, s), OQCI_OK);
        CU_ASSERT(y32[0] == 25 && y32[1] == 28 && y32[2] == 49 && y32[3] == 50);
        p.lo = p.hi = INT32_MIN;
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y32, s), OQCI_OK);
        CU_ASSERT(y32[0] == INT32_MIN && y32[3] == INT32_MIN);
        p.lo = INT32_MIN;
        p.hi = INT32_MAX;
        p.bias = bias;
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y32, s), OQCI_OK);
        CU_ASSERT(y32[0] == INT32_MAX - 8 && y32[1] == INT32_MAX - 2 && y32[2] == 44 &&
                  y32[3] == 59);
        bias[0] = INT32_MAX - 20;   /* 22 and 28 more: saturated */
        CU_ASSERT_EQUAL(oqci_conv(&p, x, y32, s), OQCI_OK);
        CU_ASSERT(y32[0] == INT32_MAX && y32[1] == INT32_MAX);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
}

OQC_TEST_MAIN("int8-kernels", OQC_TEST(test_round_clamp), OQC_TEST(test_mul_shift),
              OQC_TEST(test_fixed_multiplier), OQC_TEST(test_requant_float_vs_fixed),
              OQC_TEST(test_conv_random), OQC_TEST(test_conv_shapes),
              OQC_TEST(test_conv_deep), OQC_TEST(test_conv_simd_paths),
              OQC_TEST(test_conv_s32_random), OQC_TEST(test_conv_s32_paths),
              OQC_TEST(test_conv_wpair16), OQC_TEST(test_conv_requant_edges),
              OQC_TEST(test_conv_dw3q_rows),
              OQC_TEST(test_conv_i16_epilogue), OQC_TEST(test_conv_biased_epilogue),
              OQC_TEST(test_conv_threads),
              OQC_TEST(test_conv_isas), OQC_TEST(test_conv_scratch_size),
              OQC_TEST(test_conv_einval))
