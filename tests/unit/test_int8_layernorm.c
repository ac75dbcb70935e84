/* test_int8_layernorm.c - oqci_layernorm (runtime/int8/oqci.h) against a direct double
 * reference written here from its definition: per row, the mean and variance of the
 * codes (two passes in double), u_j = (q_j - mean) / sqrt(var + E / n^2) with E =
 * eps_q / 2^OQCI_LN_EPS_BITS (the variance of n codes is V / n^2), then y_j / s_y =
 * u_j * gamma[j] / 2^(8 + gamma_shift) + beta[j] / 2^8, rounded half away from zero and
 * clamped.
 *
 * Tolerance.  The kernel's 1 / sqrt has 30 significant bits, u is rounded to 2^-16 and
 * the product to 2^-8 of an output step before beta is added: on these ranges (|gamma|
 * up to 40 output steps) at most about 0.005 of a step from the exact value.  So a code
 * differs from the reference's by at most 1, and only where the exact value lies within
 * that distance of a rounding boundary: every code within 1, and at most 2% of them off
 * by one (measured 184 of 109396, 0.17%: the count is printed).  Exact cases: a constant
 * row with eps 0 gives round(beta / 2^8); y may be x (the same bytes as a separate
 * output). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "int8_testutil.h"
#include "nn_testutil.h"
#include "oqci.h"

/* The reference code of element j of row r (see the banner). */
static int32_t ref_ln(const OqciLayerNorm *p, const uint8_t *x, int64_t r, int64_t j) {
    double m = 0, v = 0, n = (double)p->n;
    for (int64_t k = 0; k < p->n; k++)
        m += oqci_load_q(x, p->in_type, r * p->n + k);
    m /= n;
    for (int64_t k = 0; k < p->n; k++) {
        double d = oqci_load_q(x, p->in_type, r * p->n + k) - m;
        v += d * d;
    }
    v /= n;
    double den = sqrt(v + (double)p->eps_q / (1 << OQCI_LN_EPS_BITS) / (n * n));
    double u = den > 0 ? (oqci_load_q(x, p->in_type, r * p->n + j) - m) / den : 0.0;
    double t = u * ldexp(p->gamma[j], -(8 + p->gamma_shift)) + p->beta[j] / 256.0;
    double c = t >= 0 ? floor(t + 0.5) : -floor(-t + 0.5);
    return (int32_t)(c < p->lo ? p->lo : c > p->hi ? p->hi : c);
}

static void test_layernorm_random(void) {
    rnd_seed(26);
    int64_t total = 0, off = 0, bad = 0;
    for (int it = 0; it < 200; it++) {
        int64_t rows = rnd_int(1, 5), n = rnd_int(1, 300);
        if (it == 0)
            n = 3000;   /* a long row: the shifts at the other end of their range */
        OqciLayerNorm p = {.rows = rows, .n = n, .in_type = rnd_int(0, 1) ? OQCI_U8 : OQCI_S8,
                           .out_type = rnd_int(0, 1) ? OQCI_U8 : OQCI_S8,
                           .eps_q = rnd_int(0, 3) ? rnd_int(0, 1 << 20) : 0,
                           .gamma_shift = (int32_t)rnd_int(12, 16)};
        p.lo = p.out_type == OQCI_U8 ? 0 : -127;
        p.hi = p.out_type == OQCI_U8 ? 255 : 127;
        int32_t *g = malloc((size_t)n * sizeof *g), *b = malloc((size_t)n * sizeof *b);
        for (int64_t j = 0; j < n; j++) {   /* gamma up to +-40 steps per unit of u */
            g[j] = (int32_t)(rnd_int(-4000, 4000) * ((int64_t)1 << (8 + p.gamma_shift)) / 100);
            b[j] = (int32_t)rnd_int(-30000, 30000);   /* +-117 steps */
        }
        p.gamma = g;
        p.beta = b;
        uint8_t *x = rnd_q(rows * n, p.in_type), *y = malloc((size_t)(rows * n)),
                *y2 = malloc((size_t)(rows * n));
        CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_OK);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < n; j++) {
                int32_t got = oqci_load_q(y, p.out_type, r * n + j), want = ref_ln(&p, x, r, j);
                total++;
                off += got != want;
                if (abs(got - want) > 1 && bad++ < 5)
                    printf("\n  rows %lld n %lld: [%lld][%lld] %d, reference %d", (long long)rows,
                           (long long)n, (long long)r, (long long)j, got, want);
            }
        memcpy(y2, x, (size_t)(rows * n));
        CU_ASSERT_EQUAL(oqci_layernorm(&p, y2, y2), OQCI_OK);   /* in place */
        CU_ASSERT_EQUAL(memcmp(y, y2, (size_t)(rows * n)), 0);
        free(g);
        free(b);
        free(x);
        free(y);
        free(y2);
    }
    printf("\n  %lld of %lld codes one off the double reference", (long long)off,
           (long long)total);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(off * 50 <= total);
}

/* A constant row with eps 0 has no spread: every output is round(beta / 256). */
static void test_layernorm_constant_row(void) {
    int8_t x[4] = {7, 7, 7, 7}, y[4];
    int32_t g[4] = {1 << 30, -(1 << 30), 5 << 20, 0}, b[4] = {128, -128, 2560, -383};
    OqciLayerNorm p = {.rows = 1, .n = 4, .in_type = OQCI_S8, .out_type = OQCI_S8,
                       .lo = -127, .hi = 127, .eps_q = 0, .gamma_shift = 20,
                       .gamma = g, .beta = b};
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_OK);
    CU_ASSERT_EQUAL(y[0], 1);    /* 0.5 rounds away from zero */
    CU_ASSERT_EQUAL(y[1], -1);
    CU_ASSERT_EQUAL(y[2], 10);
    CU_ASSERT_EQUAL(y[3], -1);   /* -1.496 */
}

static void test_layernorm_einval(void) {
    int8_t x[2] = {1, 2}, y[2];
    int32_t g[2] = {1 << 20, 1 << 20}, b[2] = {0, 0};
    OqciLayerNorm ok = {.rows = 1, .n = 2, .in_type = OQCI_S8, .out_type = OQCI_S8,
                        .lo = -127, .hi = 127, .eps_q = 64, .gamma_shift = 12,
                        .gamma = g, .beta = b};
    CU_ASSERT_EQUAL(oqci_layernorm(&ok, x, y), OQCI_OK);
    CU_ASSERT_EQUAL(oqci_layernorm(NULL, x, y), OQCI_EINVAL);
    CU_ASSERT_EQUAL(oqci_layernorm(&ok, NULL, y), OQCI_EINVAL);
    OqciLayerNorm p = ok;
    p.n = 0;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.n = (int64_t)OQCI_LN_MAX + 1;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.in_type = OQCI_S32;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.eps_q = -1;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.eps_q = ((int64_t)1 << 60) + 1;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.gamma_shift = 47;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
    p = ok;
    p.beta = NULL;
    CU_ASSERT_EQUAL(oqci_layernorm(&p, x, y), OQCI_EINVAL);
}

OQC_TEST_MAIN("int8-layernorm", OQC_TEST(test_layernorm_random),
              OQC_TEST(test_layernorm_constant_row), OQC_TEST(test_layernorm_einval))
