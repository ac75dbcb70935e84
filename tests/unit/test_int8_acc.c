/* test_int8_acc.c - accumulator outputs leaving the INT8 domain (runtime/int8/oqci.h):
 * oqci_dequantize_s32 and oqci_requantize_s32 against direct formulas, and the
 * property the compiler relies on: a conv or average pool that stores its int32
 * accumulators (out_type OQCI_S32) and oqci_requantize_s32 give exactly the bytes the
 * same layer stores with an 8-bit out_type, on every kernel family this CPU has.
 *
 * Tolerances: none.  Dequantization is one float product per element, compared with
 * the same product computed here; everything else is integer and compared exactly. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include "harness.h"
#include "nn_testutil.h"
#include "oqci.h"

/* Int32 accumulators: mostly moderate, some at the int32 extremes. */
static void rnd_acc(int32_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int k = (int)rnd_int(0, 19);
        x[i] = k == 0 ? INT32_MIN : k == 1 ? INT32_MAX : k == 2 ? 0
                                                              : (int32_t)rnd_int(-400000, 400000);
    }
}

static void test_dequantize_s32(void) {
    rnd_seed(71);
    for (int t = 0; t < 60; t++) {
        int64_t outer = rnd_int(0, 3), inner = t % 3 == 0 ? 1 : rnd_int(1, 20);
        int32_t ch = (int32_t)rnd_int(1, 40), pc = t % 4 != 0;
        int64_t n = outer * ch * inner;
        int32_t *x = malloc(sizeof(int32_t) * (size_t)(n + 1));
        float *y = malloc(sizeof(float) * (size_t)(n + 1)), *s = malloc(sizeof(float) * (size_t)ch);
        rnd_acc(x, n);
        for (int32_t c = 0; c < ch; c++)
            s[c] = (float)ldexp(1.0 + rnd_f() * 0.9, (int)rnd_int(-30, -5));
        y[n] = 7.0f;
        CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, outer, ch, inner, s, pc), OQCI_OK);
        int64_t bad = y[n] != 7.0f;   /* nothing written past the end */
        for (int64_t i = 0; i < n; i++) {
            volatile float want = (float)x[i] * s[pc ? (i / inner) % ch : 0];
            bad += y[i] != want;
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(x);
        free(y);
        free(s);
    }
    int32_t x[4] = {1, -2, 3, 4};
    float y[4], s[2] = {0.5f, 0.25f};
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, 2, 2, 1, s, 1), OQCI_OK);
    CU_ASSERT(y[0] == 0.5f && y[1] == -0.5f && y[2] == 1.5f && y[3] == 1.0f);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(NULL, y, 1, 2, 1, s, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, NULL, 1, 2, 1, s, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, 1, 2, 1, NULL, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, 1, 0, 1, s, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, -1, 2, 1, s, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, 1, 2, -1, s, 1), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_dequantize_s32(x, y, 1, 2, 1, s, 2), OQCI_EINVAL);
}

/* Multipliers of both modes for n channels (the fixed ones from the float ones). */
typedef struct Mults {
    float f[64];
    int32_t m[64];
    int8_t sh[64];
} Mults;

static OqciRequant rq_of(Mults *u, int n, int mode, int per_index) {
    for (int i = 0; i < n; i++) {
        u->f[i] = (float)ldexp(1.0 + rnd_f() * 0.9, (int)rnd_int(-18, -8));
        CU_ASSERT_EQUAL_FATAL(oqci_fixed_multiplier(u->f[i], &u->m[i], &u->sh[i]), OQCI_OK);
    }
    OqciRequant r = {mode, per_index, mode == OQCI_REQ_FLOAT ? u->f : NULL,
                     mode == OQCI_REQ_FIXED ? u->m : NULL, mode == OQCI_REQ_FIXED ? u->sh : NULL};
    return r;
}

static void test_requantize_s32(void) {
    rnd_seed(72);
    Mults u;
    for (int t = 0; t < 80; t++) {
        int64_t outer = rnd_int(0, 3), inner = t % 3 == 0 ? 1 : rnd_int(1, 20);
        int32_t ch = (int32_t)rnd_int(1, 64), type = t % 2;
        OqciRequant r = rq_of(&u, ch, t % 4 < 2 ? OQCI_REQ_FLOAT : OQCI_REQ_FIXED, t % 8 < 6);
        int32_t lo = type == OQCI_U8 ? 0 : -127, hi = type == OQCI_U8 ? 255 : 127;
        if (t % 5 == 0)
            hi = lo + (int32_t)rnd_int(1, 100);   /* a fused clip */
        int64_t n = outer * ch * inner;
        int32_t *x = malloc(sizeof(int32_t) * (size_t)(n + 1));
        uint8_t *y = malloc((size_t)(n + 1));
        rnd_acc(x, n);
        y[n] = 0xA5;
        CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, type, outer, ch, inner, &r, lo, hi), OQCI_OK);
        int64_t bad = y[n] != 0xA5;
        for (int64_t i = 0; i < n; i++) {
            int64_t c = r.per_index ? (i / inner) % ch : 0;
            int32_t want = oqci_requant(x[i], &r, c, lo, hi);
            bad += (type == OQCI_U8 ? (int32_t)y[i] : (int32_t)(int8_t)y[i]) != want;
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(x);
        free(y);
    }
    int32_t x[2] = {3, -3};
    int8_t y[2];
    OqciRequant r = rq_of(&u, 2, OQCI_REQ_FLOAT, 1), bad = r;
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S8, 1, 2, 1, &r, -127, 127), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S32, 1, 2, 1, &r, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S8, 1, 2, 1, &r, -128, 200), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S8, 1, 2, 1, NULL, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_requantize_s32(NULL, y, OQCI_S8, 1, 2, 1, &r, -127, 127), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S8, 1, 0, 1, &r, -127, 127), OQCI_EINVAL);
    bad.mult = NULL;
    CU_ASSERT_EQUAL(oqci_requantize_s32(x, y, OQCI_S8, 1, 2, 1, &bad, -127, 127), OQCI_EINVAL);
}

/* Every family this CPU has (oqci_conv's, which oqci_avgpool's selection follows). */
static int isas[OQCI_ISA_COUNT], nisas;

static void find_isas(void) {
    nisas = 0;
    for (int i = OQCI_ISA_PORTABLE; i < OQCI_ISA_COUNT; i++)
        if (oqci_isa_available(i))
            isas[nisas++] = i;
}

/* Conv geometry with random sizes: depthwise, grouped or dense, 1x1 or 3x3, stride 1/2. */
static void rnd_conv(OqciConv *p, int kind) {
    memset(p, 0, sizeof *p);
    p->batch = (int32_t)rnd_int(1, 2);
    p->group = 1;
    if (kind == 0) {   /* depthwise 3x3 */
        p->in_c = p->out_c = p->group = (int32_t)rnd_int(1, 40);
    } else if (kind == 1) {   /* grouped */
        p->group = (int32_t)rnd_int(2, 3);
        p->in_c = p->group * (int32_t)rnd_int(1, 5);
        p->out_c = p->group * (int32_t)rnd_int(1, 9);
    } else {   /* dense; kind 3: a Gemm's rows (1x1 on 1x1 images) */
        p->in_c = (int32_t)rnd_int(1, 70);
        p->out_c = (int32_t)rnd_int(1, 80);
    }
    int k = kind == 3 || (kind == 2 && rnd_int(0, 1)) ? 1 : 3;
    p->k_h = p->k_w = k;
    p->s_h = p->s_w = (int32_t)rnd_int(1, 2);
    p->d_h = p->d_w = 1;
    p->p_t = p->p_l = k == 3 ? (int32_t)rnd_int(0, 1) : 0;
    p->in_h = kind == 3 ? 1 : (int32_t)rnd_int(3, 17);
    p->in_w = kind == 3 ? 1 : (int32_t)rnd_int(3, 40);
    if (kind == 3)
        p->batch = (int32_t)rnd_int(1, 9);
    p->out_h = (p->in_h + 2 * p->p_t - k) / p->s_h + 1;
    p->out_w = (p->in_w + 2 * p->p_l - k) / p->s_w + 1;
    p->kdim = p->in_c / p->group * k * k;
    p->kpad = (p->kdim + 3) / 4 * 4;
    p->out_ctotal = p->out_c;
    p->in_type = (int32_t)rnd_int(0, 1);
}

static void test_conv_s32_requantized(void) {
    rnd_seed(73);
    find_isas();
    Mults u;
    int64_t bad = 0, cases = 0;
    for (int t = 0; t < 48; t++) {
        OqciConv p, w;
        rnd_conv(&p, t % 4);
        if (p.out_c > 64)
            p.out_c = 64;
        p.out_ctotal = p.out_c;
        p.out_type = t % 3 == 0 ? OQCI_U8 : OQCI_S8;
        p.lo = p.out_type == OQCI_U8 ? 0 : -127;
        p.hi = p.out_type == OQCI_U8 ? 255 : 127;
        p.rq = rq_of(&u, p.out_c, t % 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 1);
        int64_t wn = (int64_t)p.out_c * p.kpad, xn = (int64_t)p.batch * p.in_c * p.in_h * p.in_w;
        int64_t yn = (int64_t)p.batch * p.out_c * p.out_h * p.out_w;
        int8_t *wt = malloc((size_t)wn);
        int32_t *bias = malloc(sizeof(int32_t) * (size_t)p.out_c);
        uint8_t *x = malloc((size_t)xn), *y8 = malloc((size_t)yn), *yr = malloc((size_t)yn);
        int32_t *y32 = malloc(sizeof(int32_t) * (size_t)yn);
        for (int64_t i = 0; i < wn; i++)
            wt[i] = (i % p.kpad) < p.kdim ? (int8_t)rnd_int(-127, 127) : 0;
        for (int32_t k = 0; k < p.out_c; k++)
            bias[k] = (int32_t)rnd_int(-20000, 20000);
        for (int64_t i = 0; i < xn; i++)
            x[i] = p.in_type == OQCI_U8 ? (uint8_t)rnd_int(0, 255) : (uint8_t)(int8_t)rnd_int(-127, 127);
        p.w = wt;
        p.bias = t % 5 ? bias : NULL;
        p.wpair16 = oqci_conv_wpair16(&p);
        w = p;   /* the same layer storing its accumulators; a fused ReLU stays in the clamp */
        w.out_type = OQCI_S32;
        w.lo = p.out_type == OQCI_U8 ? 0 : INT32_MIN;
        w.hi = INT32_MAX;
        w.rq.mode = -1;   /* not read */
        w.rq.mult = NULL;
        size_t sn = oqci_conv_scratch(&p) > oqci_conv_scratch(&w) ? oqci_conv_scratch(&p)
                                                                 : oqci_conv_scratch(&w);
        void *scratch = malloc(sn + 64);
        for (int ii = 0; ii < nisas; ii++) {
            CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_conv(&p, x, y8, scratch), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_conv(&w, x, y32, scratch), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_requantize_s32(y32, yr, p.out_type, p.batch, p.out_c,
                                                (int64_t)p.out_h * p.out_w, &p.rq, p.lo, p.hi),
                            OQCI_OK);
            int diff = memcmp(y8, yr, (size_t)yn) != 0;
            if (diff)
                printf("\n  conv S32 [%s] case %d differs", oqci_isa_name(isas[ii]), t);
            bad += diff;
            cases++;
        }
        free(scratch);
        free(wt);
        free(bias);
        free(x);
        free(y8);
        free(yr);
        free(y32);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    CU_ASSERT_EQUAL(bad, 0);
    printf("\n  conv S32 + requantize vs 8-bit output: %lld cases over %d families",
           (long long)cases, nisas);
}

static void test_avgpool_s32_requantized(void) {
    rnd_seed(74);
    find_isas();
    Mults u;
    int64_t bad = 0;
    for (int t = 0; t < 40; t++) {
        OqciPool p, w;
        memset(&p, 0, sizeof p);
        p.batch = (int32_t)rnd_int(1, 2);
        p.channels = (int32_t)rnd_int(1, 300);
        p.in_h = (int32_t)rnd_int(1, 15);
        p.in_w = (int32_t)rnd_int(1, 15);
        p.k_h = t % 2 ? p.in_h : 1;   /* global, or 1 x in_w */
        p.k_w = p.in_w;
        p.out_h = p.in_h - p.k_h + 1;
        p.out_w = 1;
        p.s_h = p.s_w = p.d_h = p.d_w = 1;
        p.count_include_pad = 1;
        p.out_ctotal = p.channels;
        p.in_type = (int32_t)rnd_int(0, 1);
        p.out_type = (int32_t)rnd_int(0, 1);
        p.lo = p.out_type == OQCI_U8 ? 0 : -127;
        p.hi = p.out_type == OQCI_U8 ? 255 : 127;
        p.rq = rq_of(&u, 1, t % 4 < 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 0);
        u.f[0] *= 64.0f / (float)(p.k_h * p.k_w);
        CU_ASSERT_EQUAL_FATAL(oqci_fixed_multiplier(u.f[0], &u.m[0], &u.sh[0]), OQCI_OK);
        int64_t xn = (int64_t)p.batch * p.channels * p.in_h * p.in_w;
        int64_t yn = (int64_t)p.batch * p.channels * p.out_h * p.out_w;
        uint8_t *x = malloc((size_t)xn), *y8 = malloc((size_t)yn), *yr = malloc((size_t)yn);
        int32_t *y32 = malloc(sizeof(int32_t) * (size_t)yn);
        for (int64_t i = 0; i < xn; i++)
            x[i] = (uint8_t)rnd_int(0, 255);
        w = p;
        w.out_type = OQCI_S32;
        w.lo = INT32_MIN;
        w.hi = INT32_MAX;
        w.rq.mode = -1;
        for (int ii = 0; ii < nisas; ii++) {
            CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[ii]), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_avgpool(&p, x, y8), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_avgpool(&w, x, y32), OQCI_OK);
            CU_ASSERT_EQUAL(oqci_requantize_s32(y32, yr, p.out_type, p.batch, p.channels,
                                                (int64_t)p.out_h * p.out_w, &p.rq, p.lo, p.hi),
                            OQCI_OK);
            bad += memcmp(y8, yr, (size_t)yn) != 0;
        }
        free(x);
        free(y8);
        free(yr);
        free(y32);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    CU_ASSERT_EQUAL(bad, 0);
}

OQC_TEST_MAIN("int8-acc", OQC_TEST(test_dequantize_s32), OQC_TEST(test_requantize_s32),
              OQC_TEST(test_conv_s32_requantized), OQC_TEST(test_avgpool_s32_requantized))
