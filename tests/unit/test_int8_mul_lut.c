/* test_int8_mul_lut.c - the INT8 Mul kernel (runtime/int8/oqci.h: oqci_mul, the squeeze-
 * excitation product a[o][i] * b[o]) and the table lookup (oqci_lut: every INT8
 * activation function) against direct scalar references written here, on seeded random
 * data, once per kernel family this CPU runs (oqci_force_isa: the portable loops, the
 * AVX2 paths - Mul's for float requantization in blocks of 8 or more, the lookup's for
 * 32 or more elements - and the lookup's AVX-512 VBMI path, 64 or more, which Mul's
 * float blocks of 512 or more take through a table per block).
 *
 * Tolerance: none.  The reference rounds (float)(a * g) * M half away from zero and
 * clamps (float mode), or takes the integer multiply-shift oqci_mul_shift (fixed mode,
 * which test_int8_kernels.c checks against a formula computed another way); the kernel
 * must give those bits, in every family.  Many cases use M = k / 2^j with small products,
 * so that exact halves (ties) occur. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include <inttypes.h>

#include "harness.h"
#include "int8_testutil.h"
#include "nn_testutil.h"

/* The reference: element j of y for a's element j in block o (b's element o). */
static int32_t ref_mul1(const OqciMul *p, const Rq *r, const uint8_t *a, const uint8_t *b,
                        int64_t j) {
    int32_t acc = qget(a, p->a_type, j) * qget(b, p->b_type, j / p->inner);
    if (p->rq.mode == OQCI_REQ_FIXED) {
        int32_t v = oqci_mul_shift(acc, r->m[0], r->shift[0]);
        return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
    }
    float t = (float)acc * r->mult[0];
    if (!(t > (float)p->lo))
        return p->lo;
    if (t >= (float)p->hi)
        return p->hi;
    /* half away from zero: t = i + f with |f| < 1, both exact */
    int32_t i = (int32_t)t;
    float f = t - (float)i;
    return f >= 0.5f ? i + 1 : f <= -0.5f ? i - 1 : i;
}

/* One random case in the current family: bad counts the cases with any wrong element. */
static void mul_case(int t, int64_t *bad, int64_t *vec_cases, int64_t *long_cases) {
    OqciMul p;
    memset(&p, 0, sizeof p);
    p.outer = rnd_int(1, 12);
    /* short blocks, the vector blocks, and blocks long enough for the table (512+) */
    p.inner = t % 4 == 0 ? rnd_int(0, 9) : t % 4 == 1 ? rnd_int(500, 1100) : rnd_int(8, 300);
    p.a_type = (int32_t)rnd_int(0, 1);
    p.b_type = (int32_t)rnd_int(0, 1);
    p.out_type = (int32_t)rnd_int(0, 1);
    rnd_clamp(p.out_type, &p.lo, &p.hi);
    int mode = t % 3 == 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT;
    /* M: a typical s_a s_b / s_y, or k / 2^j (exact halves), or large (saturating) */
    double M = t % 5 == 1 ? (double)rnd_int(1, 7) / (double)(1 << rnd_int(1, 9))
             : t % 7 == 3 ? 0.5 + 4.0 * (rnd_f() + 1)
                          : 0.0005 + 0.02 * (rnd_f() + 1);
    Rq r = rq_make(mode, 0, 1, &M);
    p.rq = r.rq;
    int64_t n = p.outer * p.inner;
    uint8_t *a = rnd_q(n, p.a_type), *b = rnd_q(p.outer, p.b_type);
    int inplace = t % 6 == 5 && p.a_type == p.out_type;
    uint8_t *y = inplace ? a : malloc((size_t)(n ? n : 1));
    int32_t *ref = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int64_t j = 0; j < n; j++)
        ref[j] = ref_mul1(&p, &r, a, b, j);
    CU_ASSERT_EQUAL(oqci_mul(&p, a, b, y), OQCI_OK);
    int64_t wrong = 0;
    for (int64_t j = 0; j < n; j++)
        wrong += qget(y, p.out_type, j) != ref[j];
    *bad += wrong != 0;
    *vec_cases += mode == OQCI_REQ_FLOAT && p.inner >= 8;
    *long_cases += mode == OQCI_REQ_FLOAT && p.inner >= 512;
    if (!inplace)
        free(y);
    free(a);
    free(b);
    free(ref);
    rq_free(&r);
}

static void test_mul_random_isas(void) {
    int isas[OQCI_ISA_COUNT], nisas = int8_isas(isas);
    for (int k = 0; k < nisas; k++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[k]), OQCI_OK);
        rnd_seed(57);
        int64_t bad = 0, vec = 0, lng = 0;
        for (int t = 0; t < 400; t++)
            mul_case(t, &bad, &vec, &lng);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(vec > 100 && lng > 30);   /* the vector and table paths' shapes were drawn */
        printf("\n  oqci_mul, %s: 400 cases (%" PRId64 " with float blocks of 8 or more, %"
               PRId64 " of 512 or more), %" PRId64 " wrong", oqci_isa_name(isas[k]), vec, lng,
               bad);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
}

/* Hand-checked: M = 0.5, a u8 200 times b u8 3 = 600 -> 300 -> clamped to 255 (u8);
 * a s8 -5 times b s8 1 = -5 -> -2.5 -> -3 (half away); a 5 * 1 -> 2.5 -> 3; a 3 * 1 ->
 * 1.5 -> 2, in a block of 9 (the vector path and its scalar tail, float mode). */
static void test_mul_examples(void) {
    float half = 0.5f;
    OqciMul p = {.outer = 1, .inner = 9, .a_type = OQCI_S8, .b_type = OQCI_S8,
                 .out_type = OQCI_S8, .lo = -127, .hi = 127,
                 .rq = {.mode = OQCI_REQ_FLOAT, .per_index = 0, .mult = &half}};
    int8_t a[9] = {-5, 5, 3, -3, 0, 1, -1, 100, -5}, b[1] = {1};
    int8_t y[9];
    static const int8_t want[9] = {-3, 3, 2, -2, 0, 1, -1, 50, -3};
    for (int k = 0; k < 2; k++) {
        oqci_force_isa(k ? OQCI_ISA_AUTO : OQCI_ISA_PORTABLE);
        CU_ASSERT_EQUAL(oqci_mul(&p, a, b, y), OQCI_OK);
        CU_ASSERT_EQUAL(memcmp(y, want, sizeof want), 0);
    }
    uint8_t au[8] = {200, 200, 200, 200, 200, 200, 200, 1}, bu[1] = {3}, yu[8];
    p = (OqciMul){.outer = 1, .inner = 8, .a_type = OQCI_U8, .b_type = OQCI_U8,
                  .out_type = OQCI_U8, .lo = 0, .hi = 255,
                  .rq = {.mode = OQCI_REQ_FLOAT, .per_index = 0, .mult = &half}};
    CU_ASSERT_EQUAL(oqci_mul(&p, au, bu, yu), OQCI_OK);
    CU_ASSERT(yu[0] == 255 && yu[6] == 255 && yu[7] == 2);   /* 1.5 -> 2 */
    p.a_type = 5;
    CU_ASSERT_EQUAL(oqci_mul(&p, au, bu, yu), OQCI_EINVAL);
    oqci_force_isa(OQCI_ISA_AUTO);
}

/* oqci_lut on random tables and bytes, every length 0..200 and in place, per family:
 * y[j] = table[x[j]] exactly. */
static void test_lut_isas(void) {
    int isas[OQCI_ISA_COUNT], nisas = int8_isas(isas);
    uint8_t table[256], x[200], y[200];
    for (int k = 0; k < nisas; k++) {
        CU_ASSERT_EQUAL_FATAL(oqci_force_isa(isas[k]), OQCI_OK);
        rnd_seed(58);
        int64_t bad = 0;
        for (int n = 0; n <= 200; n++) {
            for (int b = 0; b < 256; b++)
                table[b] = (uint8_t)rnd_int(0, 255);
            for (int j = 0; j < n; j++)
                x[j] = (uint8_t)(j < 2 ? 255 * j : rnd_int(0, 255));   /* both ends too */
            int inplace = n % 3 == 0;
            uint8_t *out = inplace ? x : y, want[200];
            for (int j = 0; j < n; j++)
                want[j] = table[x[j]];
            CU_ASSERT_EQUAL(oqci_lut(x, out, n, table), OQCI_OK);
            bad += n > 0 && memcmp(out, want, (size_t)n) != 0;
        }
        CU_ASSERT_EQUAL(bad, 0);
        printf("\n  oqci_lut, %s: 201 lengths, %" PRId64 " wrong", oqci_isa_name(isas[k]), bad);
    }
    oqci_force_isa(OQCI_ISA_AUTO);
    CU_ASSERT_EQUAL(oqci_lut(x, y, -1, table), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_lut(x, y, 4, NULL), OQCI_EINVAL);
}

/* oqci_mul_par and oqci_lut_par (threads, oqci_par.c) give the plain calls' bytes for
 * 2 and 3 threads (tasks run in reverse order on the caller), in place too; large
 * tensors really split (into as many parts as threads: each reads at least
 * OQCI_PAR_MIN_BYTES), small ones run as one plain call.  Exact: no tolerance. */
static void test_mul_lut_par(void) {
    rnd_seed(59);
    int64_t bad = 0, split = 0, calls0 = reverse_calls;
    static uint8_t table[256];
    for (int b = 0; b < 256; b++)
        table[b] = (uint8_t)rnd_int(0, 255);
    for (int t = 0; t < 24; t++) {
        int th = 2 + t % 2, big = t % 4 != 3;
        OqciMul p;
        memset(&p, 0, sizeof p);
        p.outer = big ? rnd_int(100, 200) : rnd_int(1, 4);   /* big: >= 3 x 65536 bytes */
        p.inner = big ? (t % 3 ? rnd_int(2000, 4000) : 1) : rnd_int(1, 50);
        if (big && p.inner == 1)
            p.outer = rnd_int(200000, 300000);
        p.a_type = (int32_t)rnd_int(0, 1);
        p.b_type = (int32_t)rnd_int(0, 1);
        p.out_type = p.a_type;
        rnd_clamp(p.out_type, &p.lo, &p.hi);
        double M = 0.0005 + 0.02 * (rnd_f() + 1);
        Rq r = rq_make(t % 5 == 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, 0, 1, &M);
        p.rq = r.rq;
        int64_t n = p.outer * p.inner;
        uint8_t *a = rnd_q(n, p.a_type), *g = rnd_q(p.outer, p.b_type);
        uint8_t *want = malloc((size_t)n), *y = malloc((size_t)n);
        CU_ASSERT_EQUAL(oqci_mul(&p, a, g, want), OQCI_OK);
        int64_t before = reverse_tasks;
        if (t % 6 == 5) {   /* in place */
            memcpy(y, a, (size_t)n);
            CU_ASSERT_EQUAL(oqci_mul_par(&p, y, g, y, th, reverse_for, NULL), OQCI_OK);
        } else {
            CU_ASSERT_EQUAL(oqci_mul_par(&p, a, g, y, th, reverse_for, NULL), OQCI_OK);
        }
        bad += memcmp(y, want, (size_t)n) != 0;
        split += big && reverse_tasks - before == th;
        CU_ASSERT(big || reverse_tasks == before);
        /* the table lookup on the same bytes */
        for (int64_t j = 0; j < n; j++)
            want[j] = table[a[j]];
        before = reverse_tasks;
        CU_ASSERT_EQUAL(oqci_lut_par(a, y, n, table, th, reverse_for, NULL), OQCI_OK);
        bad += memcmp(y, want, (size_t)n) != 0;
        split += big && reverse_tasks - before == th;
        free(a);
        free(g);
        free(want);
        free(y);
        rq_free(&r);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(split, 2 * 18);   /* every big case, Mul and table, in th parts */
    CU_ASSERT(reverse_calls > calls0);
    OqciMul e;
    memset(&e, 0, sizeof e);
    e.outer = -1;
    CU_ASSERT_EQUAL(oqci_mul_par(&e, table, table, table, 2, reverse_for, NULL), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_lut_par(table, table, -1, table, 2, reverse_for, NULL), OQCI_EINVAL);
}

OQC_TEST_MAIN("int8-mul-lut", OQC_TEST(test_mul_random_isas), OQC_TEST(test_mul_examples),
              OQC_TEST(test_lut_isas), OQC_TEST(test_mul_lut_par))
