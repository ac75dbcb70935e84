/* test_int8_concat.c - the INT8 Concat kernel (runtime/int8/oqci.h: oqci_concat): the
 * placement of each input's rows in the output, plain copies, requantization of inputs
 * at other scales and types (rounding half away from zero, saturation, s8 <-> u8), in
 * float and fixed requantization, the table path (inputs of 256 codes or more) against
 * the direct one, and the parameter checks.
 *
 * Tolerances: none, everything is integer.  The examples' expected codes are worked
 * out by hand in the comments (multipliers that are powers of two, exact in float and
 * in fixed point); the random cases compare with a reference written here from the
 * definition (float: roundf of the float32 product, which rounds half away from zero;
 * fixed: the int64 product with the rounding bit added to its magnitude and shifted),
 * not with oqci_requant. */
#include <math.h>

#include "harness.h"
#include "int8_testutil.h"
#include "oqci.h"

/* One part: size codes per row of type t, copied (M 0) or requantized with M in mode. */
static OqciConcatPart part(int64_t size, int32_t t, const Rq *r) {
    OqciConcatPart p = {.size = size, .in_type = t, .requant = r != NULL};
    if (r)
        p.rq = r->rq;
    return p;
}

/* Two inputs along the second of three axes: rows are placed one after the other per
 * outer index; a copy keeps the codes, a requantized part follows M = 0.5. */
static void test_layout_and_copy(void) {
    /* x0: outer 2 x 3 codes (u8, copied); x1: outer 2 x 2 codes (s8 -> u8, M 0.5) */
    const uint8_t x0[6] = {1, 2, 3, 4, 5, 255};
    const int8_t x1[4] = {7, -7, 3, 100};
    for (int mode = 0; mode < 2; mode++) {
        double M = 0.5;
        Rq r = rq_make(mode, 0, 1, &M);
        OqciConcatPart parts[2] = {part(3, OQCI_U8, NULL), part(2, OQCI_S8, &r)};
        OqciConcat p = {.outer = 2, .ninputs = 2, .out_type = OQCI_U8, .lo = 0, .hi = 255,
                        .part = parts};
        const void *x[2] = {x0, x1};
        uint8_t y[10];
        CU_ASSERT_EQUAL(oqci_concat(&p, x, y), OQCI_OK);
        /* 7 * 0.5 = 3.5 -> 4; -7 * 0.5 = -3.5 -> -4 -> clamped to 0 (u8);
         * 3 * 0.5 = 1.5 -> 2; 100 * 0.5 = 50 */
        const uint8_t want[10] = {1, 2, 3, 4, 0, 4, 5, 255, 2, 50};
        CU_ASSERT(memcmp(y, want, sizeof want) == 0);
        rq_free(&r);
    }
}

/* Rounding and saturation of one s8 or u8 input into an s8 or u8 output, worked out
 * by hand for M = 0.5, 2 and 1, in both modes. */
static void test_requant_examples(void) {
    static const struct {
        int32_t in_type, out_type;
        double M;
        int32_t in[6], want[6];
    } cases[] = {
        /* M 0.5: halves round away from zero (0.5 -> 1, 1.5 -> 2, 127.5 -> 128) */
        {OQCI_U8, OQCI_U8, 0.5, {0, 1, 2, 3, 5, 255}, {0, 1, 1, 2, 3, 128}},
        /* s8, M 0.5: -0.5 -> -1, -1.5 -> -2, -63.5 -> -64 */
        {OQCI_S8, OQCI_S8, 0.5, {-1, -3, -127, 1, 3, 127}, {-1, -2, -64, 1, 2, 64}},
        /* M 2: 200 * 2 saturates at 255 (u8) and at 127 (s8); -100 * 2 at -127 */
        {OQCI_U8, OQCI_U8, 2.0, {0, 1, 127, 128, 200, 255}, {0, 2, 254, 255, 255, 255}},
        {OQCI_S8, OQCI_S8, 2.0, {-100, -64, -63, 63, 64, 0}, {-127, -127, -126, 126, 127, 0}},
        /* u8 -> s8 at the same scale: codes above 127 saturate */
        {OQCI_U8, OQCI_S8, 1.0, {0, 1, 126, 127, 128, 255}, {0, 1, 126, 127, 127, 127}},
        /* s8 -> u8 at the same scale: negative codes clamp to 0 */
        {OQCI_S8, OQCI_U8, 1.0, {-127, -1, 0, 1, 100, 127}, {0, 0, 0, 1, 100, 127}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = 0; mode < 2; mode++) {
            Rq r = rq_make(mode, 0, 1, &cases[c].M);
            uint8_t x[6], y[6];
            for (int i = 0; i < 6; i++)
                x[i] = (uint8_t)cases[c].in[i];
            OqciConcatPart pt = part(6, cases[c].in_type, &r);
            int32_t hi = cases[c].out_type == OQCI_U8 ? 255 : 127;
            OqciConcat p = {.outer = 1, .ninputs = 1, .out_type = cases[c].out_type,
                            .lo = cases[c].out_type == OQCI_U8 ? 0 : -127, .hi = hi,
                            .part = &pt};
            const void *xs[1] = {x};
            CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_OK);
            for (int i = 0; i < 6; i++)
                if (qget(y, cases[c].out_type, i) != cases[c].want[i]) {
                    CU_FAIL("requantized code differs");
                    fprintf(stderr, "case %zu mode %d: in %d -> %d, want %d\n", c, mode,
                            cases[c].in[i], qget(y, cases[c].out_type, i), cases[c].want[i]);
                }
            rq_free(&r);
        }
}

/* The definition of the requantization of code v (reference, independent of oqci.h's
 * helpers): float: roundf((float)v * (float)M); fixed: round(v * m / 2^shift) half away
 * from zero on the magnitude; then clamped to [lo, hi]. */
static int32_t ref_requant(int32_t v, const Rq *r, int32_t lo, int32_t hi) {
    int64_t q;
    if (r->rq.mode == OQCI_REQ_FLOAT) {
        q = (int64_t)roundf((float)v * r->mult[0]);
    } else {
        int64_t mag = (int64_t)(v < 0 ? -v : v) * r->m[0];
        mag = (mag + ((int64_t)1 << (r->shift[0] - 1))) >> r->shift[0];
        q = v < 0 ? -mag : mag;
    }
    return (int32_t)(q < lo ? lo : q > hi ? hi : q);
}

/* Random concats: 1 to 4 inputs of random types, sizes (some of 256 codes or more, so
 * the table path runs, some below, some empty) and multipliers (some copies), along a
 * random split of outer x row; every output code against ref_requant or the copy. */
static void test_random(void) {
    int bad = 0;
    for (int it = 0; it < 300; it++) {
        int mode = it % 2, n = rnd_int(1, 4);
        int32_t out_type = rnd_int(0, 1) ? OQCI_U8 : OQCI_S8;
        int32_t lo = out_type == OQCI_U8 ? 0 : -127, hi = out_type == OQCI_U8 ? 255 : 127;
        int64_t outer = rnd_int(0, 3), row = 0;
        OqciConcatPart parts[4];
        Rq rqs[4];
        uint8_t *xb[4];
        const void *x[4];
        for (int k = 0; k < n; k++) {
            int64_t size = rnd_int(0, 2) == 0 ? rnd_int(0, 5) : rnd_int(90, 400);
            int32_t t = rnd_int(0, 1) ? OQCI_U8 : OQCI_S8;
            int copy = t == out_type && rnd_int(0, 3) == 0;
            double M = ldexp(rnd_int(1, 1 << 20), -20) * (rnd_int(0, 1) ? 3.0 : 0.7);
            rqs[k] = rq_make(mode, 0, 1, &M);
            parts[k] = part(size, t, copy ? NULL : &rqs[k]);
            xb[k] = rnd_q(outer * size, t);
            x[k] = xb[k];
            row += size;
        }
        OqciConcat p = {.outer = outer, .ninputs = n, .out_type = out_type, .lo = lo, .hi = hi,
                        .part = parts};
        uint8_t *y = malloc((size_t)(outer * row + 1));
        CU_ASSERT_EQUAL_FATAL(oqci_concat(&p, x, y), OQCI_OK);
        int64_t off = 0;
        for (int k = 0; k < n; off += parts[k].size, k++)
            for (int64_t o = 0; o < outer; o++)
                for (int64_t j = 0; j < parts[k].size; j++) {
                    int32_t v = qget(xb[k], parts[k].in_type, o * parts[k].size + j);
                    int32_t want = parts[k].requant ? ref_requant(v, &rqs[k], lo, hi) : v;
                    bad += qget(y, out_type, o * row + off + j) != want;
                }
        for (int k = 0; k < n; k++) {
            rq_free(&rqs[k]);
            free(xb[k]);
        }
        free(y);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Inconsistent parameters are refused with OQCI_EINVAL (and nothing is written). */
static void test_invalid(void) {
    double M = 0.5;
    Rq r = rq_make(OQCI_REQ_FLOAT, 0, 1, &M);
    uint8_t x[4] = {1, 2, 3, 4}, y[8] = {0};
    const void *xs[2] = {x, NULL};
    OqciConcatPart pt[2] = {part(4, OQCI_S8, NULL), part(4, OQCI_U8, &r)};
    OqciConcat p = {.outer = 1, .ninputs = 1, .out_type = OQCI_U8, .lo = 0, .hi = 255,
                    .part = pt};
    /* a copy needs the output's type */
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    pt[0].in_type = OQCI_U8;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_OK);
    /* a missing input with codes to read */
    p.ninputs = 2;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    pt[1].size = 0;   /* ...is fine when it has none */
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_OK);
    /* bad clamp, type, count, requantization */
    p.lo = -1;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    p.lo = 0;
    p.out_type = OQCI_S32;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    p.out_type = OQCI_U8;
    p.ninputs = 0;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    p.ninputs = 2;
    pt[1].rq.mult = NULL;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    pt[1].requant = 2;
    CU_ASSERT_EQUAL(oqci_concat(&p, xs, y), OQCI_EINVAL);
    rq_free(&r);
}

OQC_TEST_MAIN("int8_concat", OQC_TEST(test_layout_and_copy), OQC_TEST(test_requant_examples),
              OQC_TEST(test_random), OQC_TEST(test_invalid))
