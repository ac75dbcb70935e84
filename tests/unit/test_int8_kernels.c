/* test_int8_kernels.c - the INT8 kernel library (runtime/oqci.h): the scalar primitives,
 * conv, max/average pooling and the element-wise kernels against direct scalar
 * references written independently here, on seeded random small odd shapes.
 *
 * Tolerances.  Everything integer is compared EXACTLY: the kernels' sums are exact
 * (int32 chunks into int64), so any summation order gives the same accumulator, and
 * the references requantize that accumulator with the very primitives of oqci.h
 * (oqci_requant), whose own rounding is checked separately against formulas computed
 * another way (__int128, double).  The only non-exact comparisons are float requant
 * vs fixed requant (within 1, see test_requant_float_vs_fixed), the fixed multiplier
 * (relative error < 2^-30) and dequantization's round trip (half a step), each stated
 * at its check.
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
 * test_avgpool_s32_isas) with an rq of null pointers, which no kernel may read.
 *
 * To add a kernel test: write the direct reference next to the others (plain loops
 * over the unpacked tensors, explicit bounds checks), a test drawing shapes with
 * rnd_int(), and add it to OQC_TEST_MAIN at the end. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include "harness.h"
#include "nn_testutil.h"
#include "oqci.h"

__extension__ typedef __int128 i128;

/* ---- helpers ------------------------------------------------------------------------ */

/* Element i of an s8/u8 buffer (stored as bytes). */
static int32_t qget(const uint8_t *b, int type, int64_t i) {
    return type == OQCI_U8 ? (int32_t)b[i] : (int32_t)(int8_t)b[i];
}

/* Bytes of one output element of type t (accumulator outputs: int32). */
static size_t osize(int t) {
    return t == OQCI_S32 ? 4 : 1;
}

/* Element i of an output buffer of type t (s8, u8 or OQCI_S32). */
static int32_t yget(const void *y, int t, int64_t i) {
    if (t == OQCI_S32) {
        int32_t v;
        memcpy(&v, (const uint8_t *)y + 4 * i, 4);
        return v;
    }
    return qget((const uint8_t *)y, t, i);
}

/* An element of type t all of whose bytes are b (what memset(y, b, ...) leaves). */
static int32_t fill_value(int t, uint8_t b) {
    uint8_t bytes[4] = {b, b, b, b};
    return yget(bytes, t, 0);
}

/* n random values of the type's range into a byte buffer. */
static uint8_t *rnd_q(int64_t n, int type) {
    uint8_t *b = malloc((size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        b[i] = type == OQCI_U8 ? (uint8_t)rnd_int(0, 255) : (uint8_t)(int8_t)rnd_int(-127, 127);
    return b;
}

/* Requantization storage: one multiplier per index, both modes filled from the same M. */
typedef struct Rq {
    float *mult;      /* float mode multipliers */
    int32_t *m;       /* fixed mode multipliers */
    int8_t *shift;    /* fixed mode shifts */
    OqciRequant rq;   /* the view passed to the kernels */
} Rq;

static Rq rq_make(int mode, int per_index, int64_t n, const double *M) {
    Rq r;
    r.mult = malloc(sizeof(float) * (size_t)n);
    r.m = malloc(sizeof(int32_t) * (size_t)n);
    r.shift = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        r.mult[i] = (float)M[i];
        CU_ASSERT_EQUAL_FATAL(oqci_fixed_multiplier(M[i], &r.m[i], &r.shift[i]), OQCI_OK);
    }
    r.rq.mode = mode;
    r.rq.per_index = per_index;
    r.rq.mult = mode == OQCI_REQ_FLOAT ? r.mult : NULL;
    r.rq.m = mode == OQCI_REQ_FIXED ? r.m : NULL;
    r.rq.shift = mode == OQCI_REQ_FIXED ? r.shift : NULL;
    return r;
}

static void rq_free(Rq *r) {
    free(r->mult);
    free(r->m);
    free(r->shift);
}

/* A random output clamp for type t: the full range, a fused ReLU or a fused ReLU6. */
static void rnd_clamp(int t, int32_t *lo, int32_t *hi) {
    int kind = (int)rnd_int(0, 2);
    *lo = t == OQCI_U8 ? 0 : kind ? 0 : -127;
    *hi = t == OQCI_U8 ? (kind == 2 ? (int32_t)rnd_int(40, 254) : 255)
                       : (kind == 2 ? (int32_t)rnd_int(20, 126) : 127);
}

static int32_t sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* A requantization that must not be read (accumulator outputs): null pointers, and by
 * kind a float (0), fixed (1) or invalid (2) mode. */
static OqciRequant unread_rq(int kind) {
    OqciRequant r;
    memset(&r, 0, sizeof r);
    r.mode = kind == 0 ? OQCI_REQ_FLOAT : kind == 1 ? OQCI_REQ_FIXED : 77;
    r.per_index = kind != 1;
    return r;
}

/* An accumulator clamp (OQCI_S32 outputs) by kind: 0 none (INT32_MIN, INT32_MAX), 1 a
 * fused ReLU (0, INT32_MAX), 2 a narrow [lo, hi] around 0 of at most 2 * span that clips
 * many sums (lo = hi one time in 8). */
static void s32_clamp(int kind, int32_t span, int32_t *lo, int32_t *hi) {
    *lo = kind == 0 ? INT32_MIN : kind == 1 ? 0 : -(int32_t)rnd_int(0, span);
    *hi = kind < 2         ? INT32_MAX
          : rnd_int(0, 7) ? *lo + (int32_t)rnd_int(0, 2 * (int64_t)span)
                          : *lo;
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

/* round(x * m / 2^s) half away from zero, saturated, in 128-bit integers by division
 * (not by the shift-and-add of oqci.h). */
static int32_t ref_mul_shift(int32_t x, int32_t m, int s) {
    i128 p = (i128)x * m;
    i128 a = p < 0 ? -p : p, d = (i128)1 << s;
    i128 q = a / d, r = a % d;
    if (2 * r >= d)
        q++;
    if (p < 0)
        q = -q;
    return q > INT32_MAX ? INT32_MAX : q < INT32_MIN ? INT32_MIN : (int32_t)q;
}

/* Exact against ref_mul_shift. */
static void test_mul_shift(void) {
    const int32_t two30 = 1 << 30;
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
    /* shift 62: (2^31 - 1)^2 / 2^62 = 0.99999... -> 1; -2^31 (2^31 - 1) / 2^62 -> -1;
     * 2^30 * 2^31 / 2^62 = 0.5 -> 1 but it is 2^61, x = 2^31 needs INT32_MIN: -0.5 -> -1 */
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MAX, INT32_MAX, 62), 1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, INT32_MAX, 62), -1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN, two30, 62), -1);
    CU_ASSERT_EQUAL(oqci_mul_shift(INT32_MIN + 1, two30, 62), 0);   /* -0.4999999998 */
    rnd_seed(12);
    int bad = 0;
    for (int i = 0; i < 300000; i++) {
        int32_t x = (int32_t)rnd_u32();
        if (i % 3 == 0)
            x >>= rnd_int(0, 30);
        if (i % 97 == 0)
            x = i % 2 ? INT32_MIN : INT32_MAX;
        int32_t m = i % 101 == 0 ? 0 : (int32_t)(two30 + (int32_t)(rnd_u32() >> 2));
        int s = (int)rnd_int(1, 62);
        if (i % 5 == 0) {   /* a product that is an exact half: x odd, m = 2^30, s = 31 */
            m = two30;
            s = 31;
            x |= 1;
        }
        int32_t got = oqci_mul_shift(x, m, s), want = ref_mul_shift(x, m, s);
        if (got != want && bad++ < 3)
            printf("\n  mul_shift(%d, %d, %d) = %d, want %d", x, m, s, got, want);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* m * 2^-shift within relative 2^-30 of M (the bound is 2^-31: half a unit of a 31-bit
 * m >= 2^30), and m exactly round-half-away(M * 2^shift) computed with ldexp (exact). */
static void test_fixed_multiplier(void) {
    int32_t m;
    int8_t s;
    rnd_seed(13);
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        double M = ldexp(1.0 + rnd_u32() / 4294967296.0, (int)rnd_int(-32, 29));
        if (oqci_fixed_multiplier(M, &m, &s) != OQCI_OK || m < (1 << 30) || s < 1 || s > 62) {
            bad++;
            continue;
        }
        double v = ldexp(M, s), r = floor(v + 0.5);   /* v < 2^31: v + 0.5 exact */
        double back = ldexp((double)m, -s);
        int ok = fabs(back - M) / M < ldexp(1.0, -30);
        if (r == 2147483648.0)   /* rounded up to 2^31: renormalised one shift down */
            ok = ok && m == (1 << 30);
        else
            ok = ok && (double)m == r;
        bad += !ok;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* bounds */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 30);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(1.0, -32), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 62);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(nextafter(ldexp(1.0, -32), 0.0), &m, &s), OQCI_OK);
    CU_ASSERT(m == 0 && s == 1);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == 0 && s == 1);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741823.0, &m, &s), OQCI_OK);
    CU_ASSERT(m == 2147483646 && s == 1);
    /* halves: (2^30 + 0.5) 2^-40 -> m = 2^30 + 1; (2^31 - 0.5) 2^-40 -> 2^31 -> 2^30, 39 */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(1073741824.5, -40), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) + 1 && s == 40);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(2147483647.5, -40), &m, &s), OQCI_OK);
    CU_ASSERT(m == (1 << 30) && s == 39);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(ldexp(2147483647.25, -40), &m, &s), OQCI_OK);
    CU_ASSERT(m == INT32_MAX && s == 40);
    /* errors: >= 2^30, within 1/4 below 2^30 (would need shift 0), negative, NaN, inf */
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741824.0, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(1073741823.875, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(-1e-3, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(NAN, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(INFINITY, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(-INFINITY, &m, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.5, NULL, &s), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_fixed_multiplier(0.5, &m, NULL), OQCI_EINVAL);
}

/* Float and fixed requantization of the same M agree within 1.  Why 1: both approximate
 * the real acc * M; float mode rounds acc, M and their product to float32 (relative
 * error below 3 * 2^-24), fixed mode has m * 2^-shift within 2^-31 relative of M and
 * rounds once.  In the clamped range (|acc * M| < 2^9 matters, beyond it both clamp)
 * the two real values differ by less than 2^-13 < 1/2, and two values that close round
 * to integers at most 1 apart (they differ only when a half lies between them). */
static void test_requant_float_vs_fixed(void) {
    rnd_seed(14);
    int bad = 0, differ = 0;
    for (int i = 0; i < 200000; i++) {
        int32_t acc = (int32_t)rnd_u32() >> rnd_int(0, 31);
        double M = (double)(float)ldexp(1.0 + rnd_f(), (int)-rnd_int(0, 30));
        int32_t lo = i % 2 ? 0 : -127, hi = i % 2 ? 255 : 127;
        Rq a = rq_make(OQCI_REQ_FLOAT, 0, 1, &M), b = rq_make(OQCI_REQ_FIXED, 0, 1, &M);
        int32_t qf = oqci_requant(acc, &a.rq, 5, lo, hi), qx = oqci_requant(acc, &b.rq, 5, lo, hi);
        bad += abs(qf - qx) > 1 || qf < lo || qf > hi || qx < lo || qx > hi;
        differ += qf != qx;
        rq_free(&a);
        rq_free(&b);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(differ < 200);   /* a half between them is rare (observed: a handful) */
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
    if (nisas)
        return;
    for (int i = OQCI_ISA_PORTABLE; i < OQCI_ISA_COUNT; i++)
        if (oqci_isa_available(i))
            isas[nisas++] = i;
}

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
    void *scratch = malloc(oqci_conv_amx_build() ? ss : sn);
    ref_conv(p, x, W, ref);
    find_isas();
    int64_t bad = 0;
    for (int ii = 0; ii < nisas; ii++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
        CU_ASSERT_EQUAL(oqci_conv_scratch(p), ss);   /* the same for every family */
        memset(y, 0xA5, ybytes);
        int st = oqci_conv(p, x, y, scratch);
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

/* Shapes aimed at each SIMD path (runtime/oqci_conv*.c); the comment of each row names
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
    {1, 7, 13, 1, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      /* GEMM, one K block */
    {1, 7, 13, 1, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       /* 40 pixels: 24 + 16 */
    {1, 9, 8, 1, 1, 41, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},       /* 41 pixels: 24 + 17 */
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
 * (halves), shift 1 (saturating), shift 62, m = 0.  Channel 3's bias saturates; from
 * channel 4 on the bias is 0, and the zero input rows 0-2 give acc = 0 there (0 * 2e38
 * must stay 0, not become 0 * inf).  Compared with ref_conv (oqci_requant) exactly. */
static void test_conv_requant_edges(void) {
    static const float fm[] = {0.5f, 0.25f, 1.0f / 3.0f, 3.0f, 0.0f, 1e-40f, 2e38f,
                               3.40282347e38f, INFINITY, NAN, -0.5f};
    static const int32_t xm[] = {1 << 30, 1 << 30, 1 << 30, 0, 1518500250};
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
 * rq_i16_ok holds: (kpad * 32640 + |bias|) * 2 M <= 2^30 for every channel) and its
 * fallback, the float clamp.  1x1 convs (C 16 and 24: the VNNI microkernel; C 48: AMX
 * tiles) over 7x7 pixels (panels of 32 and 17) and 4x4 (16: the 16-pixel bodies), K odd
 * (row pairs and fours cut short), two thirds of the inputs at the top of their range
 * against all +127 or all -127 weights per channel, so sums reach +-kpad * 32640;
 * multipliers: odd channels at 0.9 of the bound (u = acc * 2 M nears 2^30, outputs
 * clamped hard), even ones putting u near +-200 .. 560 (rounding and clamping there),
 * and in half the cases channel 5's 3 times over the bound: u then leaves int32 and
 * cvttps2dq gives 0x80000000, which an int16 clamp would send to lo, so the whole call
 * must fall back.  u8 and s8 outputs; clamps full, ReLU-like, ReLU6-like (hi < 255)
 * and lo = hi. */
static void test_conv_i16_epilogue(void) {
    static const int chans[] = {16, 24, 48}, sides[] = {7, 4};
    static const int32_t clamps[][2][2] = {   /* [kind][u8, s8] {lo, hi} */
        {{0, 255}, {-128, 127}}, {{0, 255}, {0, 127}}, {{0, 150}, {-20, 90}},
        {{37, 37}, {-5, -5}}};
    rnd_seed(25);
    int64_t bad = 0;
    for (int ci = 0; ci < 3; ci++)
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
 * (RQ_I16); 16 and 24 run the AVX-512 VNNI microkernel, 48 the AMX tiles' epilogue. */
static void test_conv_biased_epilogue(void) {
    static const int chans[] = {16, 24, 48, 260}, sides[] = {7, 8}, outs[] = {19, 40};
    rnd_seed(26);
    int64_t bad = 0;
    for (int ci = 0; ci < 4; ci++)
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
            printf(" %s (not on this CPU/build)", oqci_isa_name(i));
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

static void test_conv_einval(void) {
    int8_t w[8] = {1, 2, 3, 0, 4, 5, 6, 0};
    int32_t m = 1 << 30;
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

/* Exact, every family: 3x3 / stride 1 / pad 1 max pools (the whole-plane AVX2 path:
 * no requant, one type, 32 to 4096 elements per plane), planes around those bounds and
 * rows from 1 to 300 wide, clamps, views, extreme data; a few with requant or two types
 * (the other paths). */
static void test_maxpool_same3_isas(void) {
    rnd_seed(53);
    int64_t bad = 0;
    static const int32_t dims[][2] = {{7, 7}, {14, 14}, {28, 28}, {4, 8}, {1, 32}, {32, 1},
                                      {5, 6}, {64, 64}, {65, 63}, {2, 300}, {3, 11}, {13, 300}};
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
        float scale = t % 5 == 0 ? 1.0f : (float)ldexp(1.0 + rnd_f() * 0.9, (int)rnd_int(-12, 2));
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

OQC_TEST_MAIN("int8-kernels", OQC_TEST(test_round_clamp), OQC_TEST(test_mul_shift),
              OQC_TEST(test_fixed_multiplier), OQC_TEST(test_requant_float_vs_fixed),
              OQC_TEST(test_conv_random), OQC_TEST(test_conv_shapes), OQC_TEST(test_conv_deep),
              OQC_TEST(test_conv_simd_paths), OQC_TEST(test_conv_s32_random),
              OQC_TEST(test_conv_s32_paths), OQC_TEST(test_conv_wpair16),
              OQC_TEST(test_conv_requant_edges),
              OQC_TEST(test_conv_i16_epilogue), OQC_TEST(test_conv_biased_epilogue),
              OQC_TEST(test_conv_isas), OQC_TEST(test_conv_scratch_size),
              OQC_TEST(test_conv_einval), OQC_TEST(test_maxpool_random),
              OQC_TEST(test_avgpool_random), OQC_TEST(test_pool_examples),
              OQC_TEST(test_pool_einval), OQC_TEST(test_add_random),
              OQC_TEST(test_add_examples), OQC_TEST(test_clamp), OQC_TEST(test_quantize),
              OQC_TEST(test_maxpool_isas), OQC_TEST(test_maxpool_same3_isas), OQC_TEST(test_avgpool_isas),
              OQC_TEST(test_avgpool_s32_isas),
              OQC_TEST(test_add_isas), OQC_TEST(test_quantize_isas))
