/* test_fp32_tensor.c - tests of runtime/fp32/oqcf_tensor.h (oqcf_eltwise.c, oqcf_layout.c,
 * oqcf_cast.c).
 *
 * Each kernel is checked two ways: against values derived by hand in the comments (ONNX
 * operator examples, IEEE bit patterns), and against a naive reference loop written here
 * that walks every output coordinate (unravel, then compute the input coordinate from
 * the op's definition) on small fixed and random shapes.  The references deliberately
 * share no code with the kernels (no collapsing, no tiling, no closed forms where a loop
 * will do).  Random cases use a fixed-seed xorshift so failures reproduce.
 *
 * Tolerances: integer and data-movement results must match exactly; float Add/Sub/Mul/
 * Div and Cast are single IEEE operations, so they are compared bit-exactly too; the
 * few transcendental results carry their own tolerance comment.
 */
#include "harness.h"
#include "oqcf_tensor.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE(r, ...) ((OqcfShape){ (r), { __VA_ARGS__ } })
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64: deterministic pseudo-random numbers. */
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Uniform integer in [lo, hi]. */
static int64_t rnd_in(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* A float with two decimals in [-10, 10]. */
static float rnd_f(void) {
    return (float)rnd_in(-1000, 1000) / 100.0f;
}

static void fill_rand(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        x[i] = rnd_f();
}

/* Coordinates of flat index i in shape s. */
static void unravel(int64_t i, const OqcfShape *s, int64_t *c) {
    for (int k = s->rank - 1; k >= 0; k--) {
        c[k] = i % s->d[k];
        i /= s->d[k];
    }
}

/* Flat index of coordinates c in shape s. */
static int64_t ravel(const int64_t *c, const OqcfShape *s) {
    int64_t i = 0;
    for (int k = 0; k < s->rank; k++)
        i = i * s->d[k] + c[k];
    return i;
}

/* Flat index in `in` read by output coordinates c of rank r under numpy broadcasting. */
static int64_t bcast_index(const int64_t *c, int r, const OqcfShape *in) {
    int64_t i = 0;
    for (int k = 0; k < in->rank; k++)
        i = i * in->d[k] + (in->d[k] == 1 ? 0 : c[k + r - in->rank]);
    return i;
}

static int shape_eq(const OqcfShape *a, const OqcfShape *b) {
    if (a->rank != b->rank)
        return 0;
    for (int k = 0; k < a->rank; k++)
        if (a->d[k] != b->d[k])
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- unary */

static void test_unary_hand(void) {
    float x[6] = { -2.0f, -0.5f, 0.0f, 0.5f, 3.0f, NAN }, y[6];
    CU_ASSERT_EQUAL(oqcf_relu(x, y, 6), OQCF_OK);
    CU_ASSERT(y[0] == 0.0f && y[1] == 0.0f && y[3] == 0.5f && y[4] == 3.0f && isnan(y[5]));
    CU_ASSERT_EQUAL(oqcf_clip(x, y, 6, -1.0f, 1.0f), OQCF_OK);
    CU_ASSERT(y[0] == -1.0f && y[1] == -0.5f && y[4] == 1.0f && isnan(y[5]));
    oqcf_clip(x, y, 5, 2.0f, 1.0f);                 /* lo > hi: everything is hi */
    CU_ASSERT(y[0] == 1.0f && y[2] == 1.0f && y[4] == 1.0f);
    oqcf_leaky_relu(x, y, 5, 0.1f);
    CU_ASSERT(y[0] == -2.0f * 0.1f && y[1] == -0.5f * 0.1f && y[4] == 3.0f);
    oqcf_hard_sigmoid(x, y, 5, 0.2f, 0.5f);         /* 0.2x+0.5: 0.1, 0.4, 0.5, 0.6, 1 */
    CU_ASSERT(y[0] == 0.2f * -2.0f + 0.5f && y[2] == 0.5f && y[4] == 1.0f);
    float big[6] = { -1000.0f, -100.0f, 0.0f, 100.0f, 1000.0f, -INFINITY };
    CU_ASSERT_EQUAL(oqcf_sigmoid(big, y, 6), OQCF_OK);
    /* exactly representable results: e^-1000 underflows to 0, 1+e^-100 rounds to 1 */
    CU_ASSERT(y[0] == 0.0f && y[2] == 0.5f && y[3] == 1.0f && y[4] == 1.0f && y[5] == 0.0f);
    CU_ASSERT(y[1] > 0.0f && y[1] < 1e-40f);        /* e^-100 = 3.7e-44, a subnormal */
    oqcf_tanh(big, y, 5);
    CU_ASSERT(y[0] == -1.0f && y[2] == 0.0f && y[4] == 1.0f);
    CU_ASSERT_EQUAL(oqcf_relu(NULL, y, 1), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_relu(NULL, NULL, 0), OQCF_OK);
}

static void test_unary_reference(void) {
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) / 20.0f;          /* [-25, 25) */
    /* sigmoid and tanh against double formulas: expf/tanhf are within a few ulp and the
     * results lie in [-1, 1], so an absolute 1e-6 (~8 ulp at 1.0) bounds the error */
    oqcf_sigmoid(x, y, N);
    for (int i = 0; i < N; i++)
        CU_ASSERT(fabs(y[i] - 1.0 / (1.0 + exp(-(double)x[i]))) < 1e-6);
    oqcf_tanh(x, y, N);
    for (int i = 0; i < N; i++)
        CU_ASSERT(fabs(y[i] - tanh((double)x[i])) < 1e-6);
    /* the piecewise-linear ops are single roundings: exact */
    memcpy(y, x, sizeof x);
    oqcf_leaky_relu(y, y, N, 0.01f);                /* in place */
    for (int i = 0; i < N; i++)
        CU_ASSERT(y[i] == (x[i] < 0 ? 0.01f * x[i] : x[i]));
    memcpy(y, x, sizeof x);
    oqcf_hard_sigmoid(y, y, N, 0.2f, 0.5f);
    for (int i = 0; i < N; i++) {
        float v = 0.2f * x[i] + 0.5f;
        CU_ASSERT(y[i] == (v < 0 ? 0 : v > 1 ? 1 : v));
    }
}

/* The piecewise-linear ops run in blocks of 8 plus a scalar tail: every length 0..19,
 * in place and not, with NaN, +-0 and +-inf at every position, bit-exact against the
 * formulas (NaN passes through, relu(-0) is -0). */
static int same_float(float a, float b) {
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* oqcf_erff, oqcf_tanhf, oqcf_expm1f and oqcf_log1pf (computed in double from exact
 * operations, so that every host gives the same bits) against libm's double functions
 * rounded to float, over every 997th float pattern below 8 (below 88 for expm1) and its
 * negation: equal, or 1 ulp apart where the double value lies within the functions'
 * error (about 2e-15 relative) of a float rounding tie, so only a handful; the special
 * values exact. */
static void test_exact_transcendentals(void) {
    long off = 0, ulp2 = 0;
    for (uint32_t u = 0; u < 0x42b00000u; u += 997) {
        float x;
        memcpy(&x, &u, sizeof x);
        for (int s = 0; s < 2; s++) {
            float v = s ? -x : x;
            int small = u < 0x41000000u;   /* |v| < 8 */
            float got[4] = { oqcf_expm1f(v), small ? oqcf_erff(v) : 0,
                             small ? oqcf_tanhf(v) : 0, small && v > -1 ? oqcf_log1pf(v) : 0 };
            float want[4] = { (float)expm1((double)v), small ? (float)erf((double)v) : 0,
                              small ? (float)tanh((double)v) : 0,
                              small && v > -1 ? (float)log1p((double)v) : 0 };
            for (int f = 0; f < 4; f++) {
                if (got[f] == want[f])
                    continue;
                off++;
                if (nextafterf(got[f], want[f]) != want[f])
                    ulp2++;
            }
        }
    }
    CU_ASSERT_EQUAL(ulp2, 0);
    CU_ASSERT(off <= 8);
    CU_ASSERT(oqcf_erff(0.0f) == 0.0f && oqcf_tanhf(0.0f) == 0.0f);
    CU_ASSERT(signbit(oqcf_erff(-0.0f)) && signbit(oqcf_tanhf(-0.0f)));
    CU_ASSERT(signbit(oqcf_expm1f(-0.0f)) && signbit(oqcf_log1pf(-0.0f)));
    CU_ASSERT(oqcf_erff(INFINITY) == 1.0f && oqcf_erff(-INFINITY) == -1.0f);
    CU_ASSERT(oqcf_tanhf(INFINITY) == 1.0f && oqcf_tanhf(-40.0f) == -1.0f);
    CU_ASSERT(oqcf_expm1f(-INFINITY) == -1.0f && oqcf_expm1f(100.0f) == INFINITY);
    CU_ASSERT(oqcf_log1pf(-1.0f) == -INFINITY && isnan(oqcf_log1pf(-2.0f)));
    CU_ASSERT(oqcf_log1pf(INFINITY) == INFINITY && oqcf_log1pf(0x1p100f) == (float)log1p(0x1p100));
    CU_ASSERT(isnan(oqcf_erff(NAN)) && isnan(oqcf_tanhf(NAN)) && isnan(oqcf_expm1f(NAN)) &&
              isnan(oqcf_log1pf(NAN)));
}

static void test_unary_blocks(void) {
    const float sp[] = { NAN, -0.0f, 0.0f, INFINITY, -INFINITY, -3.5f, 0.25f };
    enum { L = 19 };
    float x[L], y[L], z[L];
    int bad = 0;
    for (int n = 0; n <= L; n++)
        for (int pos = 0; pos < n; pos++)
            for (int k = 0; k < 7; k++) {
                for (int i = 0; i < n; i++)
                    x[i] = (float)((i * 7) % 11 - 5) / 4.0f;
                x[pos] = sp[k];
                for (int op = 0; op < 4; op++) {
                    memcpy(z, x, sizeof x);
                    float *out = op % 2 ? z : y;   /* odd ops in place */
                    if (op == 0)
                        oqcf_relu(x, out, n);
                    else if (op == 1)
                        oqcf_clip(z, out, n, -1.0f, 0.5f);
                    else if (op == 2)
                        oqcf_leaky_relu(x, out, n, 0.125f);
                    else
                        oqcf_hard_sigmoid(z, out, n, 0.2f, 0.5f);
                    for (int i = 0; i < n; i++) {
                        float v = x[i], want;
                        if (op == 0)
                            want = v < 0 ? 0.0f : v;
                        else if (op == 1)
                            want = v < -1.0f ? -1.0f : (v > 0.5f ? 0.5f : v);
                        else if (op == 2)
                            want = v < 0 ? 0.125f * v : v;
                        else {
                            float h = 0.2f * v + 0.5f;
                            want = h < 0 ? 0.0f : (h > 1 ? 1.0f : h);
                        }
                        bad += !same_float(out[i], want);
                    }
                }
            }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_clip_typed(void) {
    int8_t x8[256], y8[256], lo8 = -5, hi8 = 7;
    for (int i = 0; i < 256; i++)
        x8[i] = (int8_t)(i - 128);
    CU_ASSERT_EQUAL(oqcf_clip_typed(OQCF_INT8, x8, y8, 256, &lo8, &hi8), OQCF_OK);
    for (int i = 0; i < 256; i++)
        CU_ASSERT_EQUAL(y8[i], i - 128 < -5 ? -5 : i - 128 > 7 ? 7 : i - 128);
    CU_ASSERT_EQUAL(oqcf_clip_typed(OQCF_INT8, x8, x8, 256, NULL, &hi8), OQCF_OK);
    CU_ASSERT(x8[0] == -128 && x8[255] == 7);       /* in place, no lower bound */
    uint8_t u[4] = { 0, 9, 200, 255 }, ulo = 10;
    oqcf_clip_typed(OQCF_UINT8, u, u, 4, &ulo, NULL);
    CU_ASSERT(u[0] == 10 && u[1] == 10 && u[2] == 200 && u[3] == 255);
    int64_t x64[3] = { INT64_MIN, 0, INT64_MAX }, y64[3], lo64 = -1, hi64 = 1;
    oqcf_clip_typed(OQCF_INT64, x64, y64, 3, &lo64, &hi64);
    CU_ASSERT(y64[0] == -1 && y64[1] == 0 && y64[2] == 1);
    uint32_t x32[2] = { 5, UINT32_MAX }, y32[2], hi32 = 1000;
    oqcf_clip_typed(OQCF_UINT32, x32, y32, 2, NULL, &hi32);
    CU_ASSERT(y32[0] == 5 && y32[1] == 1000);
    int16_t x16[2] = { -30000, 30000 }, y16[2], lo16 = -100, hi16 = 100;
    oqcf_clip_typed(OQCF_INT16, x16, y16, 2, &lo16, &hi16);
    CU_ASSERT(y16[0] == -100 && y16[1] == 100);
    double xd[3] = { -1e300, 0.25, NAN }, yd[3], lod = -1.0;
    oqcf_clip_typed(OQCF_DOUBLE, xd, yd, 3, &lod, NULL);
    CU_ASSERT(yd[0] == -1.0 && yd[1] == 0.25 && isnan(yd[2]));
    uint16_t h[1] = { 0 };
    CU_ASSERT_EQUAL(oqcf_clip_typed(OQCF_FLOAT16, h, h, 1, NULL, NULL), OQCF_EDTYPE);
}

/* ---------------------------------------------------------------- broadcasting */

static void test_broadcast_shape(void) {
    struct {
        OqcfShape a, b;     /* the two input shapes */
        OqcfShape want;     /* expected broadcast shape when ok */
        int ok;             /* 1 when the shapes are compatible */
    } c[] = {
        { SHAPE(4, 2, 3, 4, 5), SHAPE(0), SHAPE(4, 2, 3, 4, 5), 1 },   /* ONNX doc examples */
        { SHAPE(4, 2, 3, 4, 5), SHAPE(1, 5), SHAPE(4, 2, 3, 4, 5), 1 },
        { SHAPE(2, 4, 5), SHAPE(4, 2, 3, 4, 5), SHAPE(4, 2, 3, 4, 5), 1 },
        { SHAPE(3, 1, 4, 5), SHAPE(4, 2, 3, 1, 1), SHAPE(4, 2, 3, 4, 5), 1 },
        { SHAPE(3, 3, 4, 5), SHAPE(4, 2, 1, 1, 1), SHAPE(4, 2, 3, 4, 5), 1 },
        { SHAPE(0), SHAPE(0), SHAPE(0), 1 },
        { SHAPE(1, 0), SHAPE(1, 1), SHAPE(1, 0), 1 },                /* 1 broadcasts to 0 */
        { SHAPE(2, 2, 3), SHAPE(2, 3, 2), SHAPE(0), 0 },
        { SHAPE(1, 0), SHAPE(1, 3), SHAPE(0), 0 },
        { SHAPE(8, 1, 2, 1, 2, 1, 1, 1, 2), SHAPE(3, 3, 1, 1),
          SHAPE(8, 1, 2, 1, 2, 1, 3, 1, 2), 1 },
    };
    for (int i = 0; i < NELEM(c); i++) {
        OqcfShape out;
        OqcfStatus st = oqcf_broadcast_shape(&c[i].a, &c[i].b, &out);
        CU_ASSERT_EQUAL(st, c[i].ok ? OQCF_OK : OQCF_EINVAL);
        if (c[i].ok)
            CU_ASSERT(shape_eq(&out, &c[i].want));
    }
    OqcfShape bad = SHAPE(9), ok = SHAPE(1, 2), out;
    CU_ASSERT_EQUAL(oqcf_broadcast_shape(&bad, &ok, &out), OQCF_EINVAL);
}

/* Reference of one float op, the same single IEEE operation as the kernel's. */
static float ref_f32(OqcfBinaryOp op, float u, float v) {
    switch (op) {
    case OQCF_ADD: return u + v;
    case OQCF_SUB: return u - v;
    case OQCF_MUL: return u * v;
    default: return u / v;
    }
}

/* Random shapes of ranks ra and rb that broadcast; returns the expected output shape
 * (dims in [1, maxd] or 1). */
static OqcfShape rand_bcast_pair(int ra, int rb, int maxd, OqcfShape *a, OqcfShape *b) {
    OqcfShape o;
    o.rank = ra > rb ? ra : rb;
    a->rank = ra;
    b->rank = rb;
    for (int k = 0; k < o.rank; k++) {
        int64_t v = rnd_in(1, maxd), da = 1, db = 1;
        int ka = k - (o.rank - ra), kb = k - (o.rank - rb);
        if (ka >= 0)
            da = a->d[ka] = rnd() % 3 ? v : 1;
        if (kb >= 0)
            db = b->d[kb] = rnd() % 3 ? v : 1;
        o.d[k] = da > db ? da : db;
    }
    return o;
}

static void test_binary_random_ranks(void) {
    static float a[512], b[512], y[512], want[512];
    int checked = 0;
    for (int ra = 0; ra <= OQCF_MAX_RANK; ra++)
        for (int rb = 0; rb <= OQCF_MAX_RANK; rb++)
            for (int trial = 0; trial < 3; trial++) {
                OqcfShape as, bs, os;
                OqcfShape want_s = rand_bcast_pair(ra, rb, ra > 5 || rb > 5 ? 2 : 3, &as, &bs);
                CU_ASSERT_EQUAL_FATAL(oqcf_broadcast_shape(&as, &bs, &os), OQCF_OK);
                CU_ASSERT_FATAL(shape_eq(&os, &want_s));
                fill_rand(a, oqcf_numel(&as));
                fill_rand(b, oqcf_numel(&bs));
                for (int64_t i = 0; i < oqcf_numel(&bs); i++)
                    b[i] = b[i] == 0.0f ? 0.5f : b[i];
                for (int op = OQCF_ADD; op <= OQCF_DIV; op++) {
                    int64_t c[OQCF_MAX_RANK], n = oqcf_numel(&os);
                    for (int64_t i = 0; i < n; i++) {
                        unravel(i, &os, c);
                        want[i] = ref_f32(op, a[bcast_index(c, os.rank, &as)],
                                          b[bcast_index(c, os.rank, &bs)]);
                    }
                    CU_ASSERT_EQUAL(oqcf_binary(op, OQCF_FLOAT, a, &as, b, &bs, y), OQCF_OK);
                    int same = memcmp(y, want, (size_t)n * sizeof(float)) == 0;
                    CU_ASSERT(same);    /* bit-exact: one IEEE operation per element */
                    checked += same;
                }
            }
    CU_ASSERT_EQUAL(checked, 9 * 9 * 3 * 4);
}

/* The shapes the planner special-cases, in place, and errors. */
static void test_binary_fast_paths(void) {
    static float a[2 * 3 * 4 * 5], b[2 * 3 * 4 * 5], y[2 * 3 * 4 * 5];
    fill_rand(a, 120);
    fill_rand(b, 120);
    OqcfShape x4 = SHAPE(4, 2, 3, 4, 5), ch = SHAPE(3, 3, 1, 1), sc = SHAPE(0);
    oqcf_binary(OQCF_SUB, OQCF_FLOAT, a, &x4, b, &ch, y);       /* per-channel NCHW */
    for (int i = 0; i < 120; i++)
        CU_ASSERT(y[i] == a[i] - b[(i / 20) % 3]);
    oqcf_binary(OQCF_MUL, OQCF_FLOAT, b, &sc, a, &x4, y);       /* scalar * tensor */
    for (int i = 0; i < 120; i++)
        CU_ASSERT(y[i] == b[0] * a[i]);
    OqcfShape mk = SHAPE(2, 6, 7), k = SHAPE(1, 7), m1 = SHAPE(2, 5, 1), one_n = SHAPE(2, 1, 4);
    oqcf_binary(OQCF_ADD, OQCF_FLOAT, a, &mk, b, &k, y);        /* inner-dim broadcast */
    for (int i = 0; i < 42; i++)
        CU_ASSERT(y[i] == a[i] + b[i % 7]);
    oqcf_binary(OQCF_DIV, OQCF_FLOAT, a, &m1, b, &one_n, y);    /* outer product */
    for (int i = 0; i < 20; i++)
        CU_ASSERT(y[i] == a[i / 4] / b[i % 4]);
    float acopy[120];
    memcpy(acopy, a, sizeof acopy);
    oqcf_binary(OQCF_ADD, OQCF_FLOAT, a, &x4, b, &x4, a);       /* y == a, same shape */
    for (int i = 0; i < 120; i++)
        CU_ASSERT(a[i] == acopy[i] + b[i]);
    memcpy(y, b, sizeof y);
    oqcf_binary(OQCF_SUB, OQCF_FLOAT, acopy, &ch, y, &x4, y);   /* y == b, b full shape */
    for (int i = 0; i < 120; i++)
        CU_ASSERT(y[i] == acopy[(i / 20) % 3] - b[i]);
    OqcfShape e = SHAPE(2, 0, 3), e1 = SHAPE(1, 3);
    CU_ASSERT_EQUAL(oqcf_binary(OQCF_ADD, OQCF_FLOAT, NULL, &e, b, &e1, NULL), OQCF_OK);
    OqcfShape bad = SHAPE(1, 4);
    CU_ASSERT_EQUAL(oqcf_binary(OQCF_ADD, OQCF_FLOAT, a, &mk, b, &bad, y), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_binary(OQCF_ADD, OQCF_FLOAT16, a, &k, b, &k, y), OQCF_EDTYPE);
    CU_ASSERT_EQUAL(oqcf_binary((OqcfBinaryOp)7, OQCF_FLOAT, a, &k, b, &k, y), OQCF_EINVAL);
    float q[2] = { 1.0f, -1.0f }, z[1] = { 0.0f }, r[2];         /* IEEE: x/0 = +-inf */
    OqcfShape two = SHAPE(1, 2);
    oqcf_binary(OQCF_DIV, OQCF_FLOAT, q, &two, z, &sc, r);
    CU_ASSERT(isinf(r[0]) && r[0] > 0 && isinf(r[1]) && r[1] < 0);
}

/* Integer helpers for the typed tests: values travel as int64 (all test values fit). */
static const OqcfDType int_types[] = { OQCF_INT8, OQCF_INT16, OQCF_INT32, OQCF_INT64,
                                       OQCF_UINT8, OQCF_UINT16, OQCF_UINT32, OQCF_UINT64 };

static int is_signed(OqcfDType t) {
    return t == OQCF_INT8 || t == OQCF_INT16 || t == OQCF_INT32 || t == OQCF_INT64;
}

static void put_int(OqcfDType t, void *p, int64_t i, int64_t v) {
    switch (t) {
    case OQCF_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case OQCF_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case OQCF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case OQCF_INT64: ((int64_t *)p)[i] = v; break;
    case OQCF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case OQCF_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case OQCF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = (uint64_t)v; break;
    }
}

static int64_t get_int(OqcfDType t, const void *p, int64_t i) {
    switch (t) {
    case OQCF_INT8: return ((const int8_t *)p)[i];
    case OQCF_INT16: return ((const int16_t *)p)[i];
    case OQCF_INT32: return ((const int32_t *)p)[i];
    case OQCF_INT64: return ((const int64_t *)p)[i];
    case OQCF_UINT8: return ((const uint8_t *)p)[i];
    case OQCF_UINT16: return ((const uint16_t *)p)[i];
    case OQCF_UINT32: return ((const uint32_t *)p)[i];
    default: return (int64_t)((const uint64_t *)p)[i];
    }
}

/* v reduced into type t's range modulo 2^bits (8/16/32-bit types; exact arithmetic). */
static int64_t wrap_int(OqcfDType t, int64_t v) {
    int bits = 8 * (int)oqcf_dtype_size(t);
    if (bits == 64)
        return v;
    int64_t m = (int64_t)1 << bits, lo = is_signed(t) ? -(m / 2) : 0;
    int64_t r = (v - lo) % m;
    return (r < 0 ? r + m : r) + lo;
}

/* Random Add/Sub/Mul/Div per integer dtype (tensor op tensor and tensor op scalar)
 * against exact int64 arithmetic reduced modulo 2^bits; divisors include zeros. */
static void test_binary_int_dtypes(void) {
    enum { N = 61 };
    static uint64_t a[N], b[N], y[N];     /* uint64_t storage: aligned for any type */
    for (int ti = 0; ti < NELEM(int_types); ti++) {
        OqcfDType t = int_types[ti];
        int sz = (int)oqcf_dtype_size(t), sg = is_signed(t);
        int64_t lo = sz <= 2 ? (sg ? -(1 << (8 * sz - 1)) : 0) : (sg ? -(1 << 20) : 0);
        int64_t hi = sz <= 2 ? (sg ? (1 << (8 * sz - 1)) - 1 : (1 << 8 * sz) - 1) : 1 << 20;
        int64_t av[N], bv[N];
        for (int i = 0; i < N; i++) {
            av[i] = i == 0 ? lo : rnd_in(lo, hi);
            bv[i] = i % 7 == 0 ? 0 : i == 1 && sg ? -1 : rnd_in(lo, hi);
            put_int(t, a, i, av[i]);
            put_int(t, b, i, bv[i]);
        }
        OqcfShape vs = SHAPE(1, N), ss = SHAPE(0);
        for (int op = OQCF_ADD; op <= OQCF_DIV; op++)
            for (int scalar = 0; scalar < 2; scalar++) {
                CU_ASSERT_EQUAL(oqcf_binary(op, t, a, &vs, scalar ? (void *)((char *)b + sz)
                                                                  : (void *)b,
                                            scalar ? &ss : &vs, y), OQCF_OK);
                for (int i = 0; i < N; i++) {
                    int64_t u = av[i], v = bv[scalar ? 1 : i], e;
                    if (op == OQCF_ADD) e = u + v;
                    else if (op == OQCF_SUB) e = u - v;
                    else if (op == OQCF_MUL) e = u * v;
                    else e = v == 0 ? 0 : u / v;    /* C truncation; x/0 defined as 0 */
                    CU_ASSERT_EQUAL(get_int(t, y, i), wrap_int(t, e));
                }
            }
    }
}

/* Hand-derived overflow and division corner cases of every integer width. */
static void test_binary_int_corners(void) {
    OqcfShape s = SHAPE(1, 3);
    int8_t a8[3] = { 127, -128, 100 }, b8[3] = { 1, -1, 3 }, y8[3];
    oqcf_binary(OQCF_ADD, OQCF_INT8, a8, &s, b8, &s, y8);
    CU_ASSERT(y8[0] == -128 && y8[1] == 127 && y8[2] == 103);   /* 127+1 wraps */
    oqcf_binary(OQCF_MUL, OQCF_INT8, a8, &s, b8, &s, y8);
    CU_ASSERT(y8[2] == 44);                                     /* 300 - 256 */
    oqcf_binary(OQCF_DIV, OQCF_INT8, a8, &s, b8, &s, y8);
    CU_ASSERT(y8[0] == 127 && y8[1] == -128 && y8[2] == 33);    /* MIN / -1 = MIN */
    uint16_t a16[3] = { 65535, 7, 0 }, b16[3] = { 65535, 0, 1 }, y16[3];
    oqcf_binary(OQCF_MUL, OQCF_UINT16, a16, &s, b16, &s, y16);
    CU_ASSERT(y16[0] == 1 && y16[1] == 0);          /* 0xFFFE0001 mod 2^16 */
    oqcf_binary(OQCF_SUB, OQCF_UINT16, a16 + 2, &(OqcfShape){ 0 }, b16, &s, y16);
    CU_ASSERT(y16[0] == 1 && y16[1] == 0 && y16[2] == 65535);   /* 0 - 1 wraps */
    int32_t a32[3] = { INT32_MIN, -7, 7 }, b32[3] = { -1, 2, -2 }, y32[3];
    oqcf_binary(OQCF_DIV, OQCF_INT32, a32, &s, b32, &s, y32);
    CU_ASSERT(y32[0] == INT32_MIN && y32[1] == -3 && y32[2] == -3);  /* toward zero */
    oqcf_binary(OQCF_MUL, OQCF_INT32, a32, &s, b32, &s, y32);
    CU_ASSERT(y32[0] == INT32_MIN && y32[1] == -14);
    int64_t a64[3] = { INT64_MAX, INT64_MIN, 5 }, b64[3] = { 1, -1, 0 }, y64[3];
    oqcf_binary(OQCF_ADD, OQCF_INT64, a64, &s, b64, &s, y64);
    CU_ASSERT(y64[0] == INT64_MIN && y64[1] == INT64_MAX && y64[2] == 5);
    oqcf_binary(OQCF_DIV, OQCF_INT64, a64, &s, b64, &s, y64);
    CU_ASSERT(y64[0] == INT64_MAX && y64[1] == INT64_MIN && y64[2] == 0);
    oqcf_binary(OQCF_MUL, OQCF_INT64, a64, &s, a64, &s, y64);
    CU_ASSERT(y64[0] == 1 && y64[1] == 0 && y64[2] == 25);      /* (2^63-1)^2 mod 2^64 */
    uint64_t u64[3] = { UINT64_MAX, 10, 10 }, v64[3] = { 2, 0, 3 }, w64[3];
    oqcf_binary(OQCF_ADD, OQCF_UINT64, u64, &s, v64, &s, w64);
    CU_ASSERT(w64[0] == 1 && w64[1] == 10 && w64[2] == 13);
    oqcf_binary(OQCF_DIV, OQCF_UINT64, u64, &s, v64, &s, w64);
    CU_ASSERT(w64[0] == UINT64_MAX / 2 && w64[1] == 0 && w64[2] == 3);
    uint32_t u32[3] = { 0, 1, UINT32_MAX }, v32[3] = { 1, 1, 2 }, w32[3];
    oqcf_binary(OQCF_SUB, OQCF_UINT32, u32, &s, v32, &s, w32);
    CU_ASSERT(w32[0] == UINT32_MAX && w32[1] == 0 && w32[2] == UINT32_MAX - 2);
    double ad[3] = { 1.0, -3.0, 1e308 }, bd[3] = { 3.0, 0.0, 10.0 }, yd[3];
    oqcf_binary(OQCF_DIV, OQCF_DOUBLE, ad, &s, bd, &s, yd);
    CU_ASSERT(yd[0] == 1.0 / 3.0 && isinf(yd[1]) && yd[1] < 0 && yd[2] == 1e307);
    oqcf_binary(OQCF_MUL, OQCF_DOUBLE, ad, &s, bd, &s, yd);
    CU_ASSERT(yd[0] == 3.0 && isinf(yd[2]));
}

static void test_sum(void) {
    static float x0[60], x1[60], x2[60], x3[60], y[60], want[60];
    OqcfShape s[4] = { SHAPE(3, 3, 4, 5), SHAPE(1, 5), SHAPE(2, 4, 1), SHAPE(0) };
    const float *xs[4] = { x0, x1, x2, x3 };
    fill_rand(x0, 60); fill_rand(x1, 5); fill_rand(x2, 4); fill_rand(x3, 1);
    for (int n = 1; n <= 4; n++) {
        for (int i = 0; i < 60; i++) {      /* left to right, like the kernel: exact */
            int64_t c[3];
            unravel(i, &s[0], c);
            float v = x0[i];
            if (n > 1) v += x1[c[2]];
            if (n > 2) v += x2[c[1]];
            if (n > 3) v += x3[0];
            want[i] = v;
        }
        CU_ASSERT_EQUAL(oqcf_sum(xs, s, n, y), OQCF_OK);
        CU_ASSERT(memcmp(y, want, sizeof want) == 0);
    }
    memcpy(y, x0, sizeof y);                /* y == x[0], which has the output shape */
    const float *ys[3] = { y, x1, x2 };
    oqcf_sum(ys, s, 3, y);
    for (int i = 0; i < 60; i++)
        CU_ASSERT(y[i] == x0[i] + x1[i % 5] + x2[(i / 5) % 4]);
    OqcfShape ba[2] = { SHAPE(1, 3), SHAPE(2, 1, 3) };     /* out is broader than x0 */
    const float *bx[2] = { x1, x2 };
    oqcf_sum(bx, ba, 2, y);
    for (int i = 0; i < 3; i++)
        CU_ASSERT(y[i] == x1[i] + x2[i]);
    OqcfShape inc[2] = { SHAPE(1, 3), SHAPE(1, 4) };
    CU_ASSERT_EQUAL(oqcf_sum(bx, inc, 2, y), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_sum(bx, inc, 0, y), OQCF_EINVAL);
}

/* Softmax reference in double over the (outer, len, inner) layout. */
static void softmax_ref(const float *x, double *y, int64_t outer, int64_t len, int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < len; k++)
                m = fmax(m, x[(o * len + k) * inner + j]);
            for (int64_t k = 0; k < len; k++)
                s += exp(x[(o * len + k) * inner + j] - m);
            for (int64_t k = 0; k < len; k++)
                y[(o * len + k) * inner + j] = exp(x[(o * len + k) * inner + j] - m) / s;
        }
}

static void test_softmax(void) {
    /* softmax([1,2,3]) = e^k / (e+e^2+e^3) = 0.09003057, 0.24472847, 0.66524096; adding
     * 1000 must not change it (a naive exp(1003) overflows to inf). Tolerance 1e-6:
     * expf is within ~1 ulp and the results are <= 1. */
    float x[6] = { 1, 2, 3, 1001, 1002, 1003 }, y[6];
    const double want[3] = { 0.0900305731703805, 0.2447284710547976, 0.6652409557748219 };
    CU_ASSERT_EQUAL(oqcf_softmax(x, y, 2, 3, 1), OQCF_OK);
    for (int i = 0; i < 6; i++)
        CU_ASSERT(fabs(y[i] - want[i % 3]) < 1e-6);
    float neg[3] = { -1e30f, -1e30f, 0 }, yn[3];    /* huge negatives underflow to 0 */
    oqcf_softmax(neg, yn, 1, 3, 1);
    CU_ASSERT(yn[0] == 0 && yn[1] == 0 && yn[2] == 1);
    static float r[2 * 7 * 5];
    static double ref[2 * 7 * 5];
    fill_rand(r, 70);
    for (int i = 0; i < 70; i++)
        r[i] *= 30.0f;                              /* [-300, 300]: overflows if unshifted */
    softmax_ref(r, ref, 2, 7, 5);
    oqcf_softmax(r, r, 2, 7, 5);                    /* in place, inner > 1 */
    for (int i = 0; i < 70; i++)
        CU_ASSERT(fabs(r[i] - ref[i]) < 1e-6);
    for (int o = 0; o < 2; o++)
        for (int j = 0; j < 5; j++) {
            double s = 0;                           /* 7 terms, each within 1e-6 */
            for (int k = 0; k < 7; k++)
                s += r[(o * 7 + k) * 5 + j];
            CU_ASSERT(fabs(s - 1.0) < 1e-5);
        }
    CU_ASSERT_EQUAL(oqcf_softmax(NULL, NULL, 0, 3, 1), OQCF_OK);
    CU_ASSERT_EQUAL(oqcf_softmax(x, y, -1, 3, 1), OQCF_EINVAL);
}

/* ---------------------------------------------------------------- layout */

/* Element sizes exercised by the data-movement tests (3 takes the generic memcpy path). */
static const size_t esizes[] = { 1, 2, 4, 8, 3 };

/* Fills n elements of es bytes with distinct-ish random bytes. */
static void fill_bytes(unsigned char *p, int64_t n, size_t es) {
    for (int64_t i = 0; i < n * (int64_t)es; i++)
        p[i] = (unsigned char)rnd();
}

static OqcfShape rand_shape(int rank, int maxd) {
    OqcfShape s;
    s.rank = rank;
    for (int k = 0; k < rank; k++)
        s.d[k] = rnd_in(1, maxd);
    return s;
}

static void test_concat_split(void) {
    static unsigned char in[4][8192], out[32768], want[32768], back[4][8192];
    for (int trial = 0; trial < 60; trial++) {
        size_t es = esizes[trial % NELEM(esizes)];
        int r = (int)rnd_in(1, 5), n = (int)rnd_in(1, 4), ax = (int)rnd_in(0, r - 1);
        OqcfShape base = rand_shape(r, 4), s[4], os = base;
        const void *xs[4];
        void *ys[4];
        int64_t sizes[4];
        os.d[ax] = 0;
        for (int i = 0; i < n; i++) {
            s[i] = base;
            s[i].d[ax] = sizes[i] = rnd_in(0, 3);     /* empty parts included */
            os.d[ax] += sizes[i];
            fill_bytes(in[i], oqcf_numel(&s[i]), es);
            xs[i] = in[i];
            ys[i] = back[i];
        }
        /* reference: output coordinate c along ax falls into the part whose range holds it */
        int64_t c[OQCF_MAX_RANK], total = oqcf_numel(&os);
        for (int64_t f = 0; f < total; f++) {
            unravel(f, &os, c);
            int i = 0;
            while (c[ax] >= sizes[i])
                c[ax] -= sizes[i++];
            memcpy(want + f * es, in[i] + ravel(c, &s[i]) * es, es);
        }
        int neg_axis = (int)rnd() % 2 ? ax - r : ax;
        CU_ASSERT_EQUAL(oqcf_concat(xs, s, n, neg_axis, es, out), OQCF_OK);
        CU_ASSERT(memcmp(out, want, (size_t)total * es) == 0);
        CU_ASSERT_EQUAL(oqcf_split(out, &os, neg_axis, sizes, n, es, ys), OQCF_OK);
        for (int i = 0; i < n; i++)             /* Split inverts Concat */
            CU_ASSERT(memcmp(back[i], in[i], (size_t)oqcf_numel(&s[i]) * es) == 0);
    }
    /* hand: [[1,2],[3,4]] ++ [[5],[6]] on axis 1 = [[1,2,5],[3,4,6]] */
    float a[4] = { 1, 2, 3, 4 }, b[2] = { 5, 6 }, y[6];
    OqcfShape sh[2] = { SHAPE(2, 2, 2), SHAPE(2, 2, 1) }, bad[2] = { SHAPE(2, 2, 2),
                                                                   SHAPE(2, 3, 1) };
    const void *ab[2] = { a, b };
    oqcf_concat(ab, sh, 2, 1, 4, y);
    CU_ASSERT(y[0] == 1 && y[1] == 2 && y[2] == 5 && y[3] == 3 && y[4] == 4 && y[5] == 6);
    CU_ASSERT_EQUAL(oqcf_concat(ab, bad, 2, 1, 4, y), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_concat(ab, sh, 2, 2, 4, y), OQCF_EINVAL);
    int64_t wrong[2] = { 1, 1 };
    void *outs[2] = { a, b };
    OqcfShape ys = SHAPE(2, 2, 3);
    CU_ASSERT_EQUAL(oqcf_split(y, &ys, 1, wrong, 2, 4, outs), OQCF_EINVAL);
}

/* One slice case: input shape, ONNX inputs, expected output shape and index lists. */
typedef struct SliceCase {
    OqcfShape in;       /* input shape */
    int n;              /* entries in starts/ends (and axes/steps when given) */
    int64_t starts[4], ends[4], axes[4], steps[4];
    int has_axes;       /* axes given */
    int has_steps;      /* steps given */
    OqcfShape want;     /* expected output shape */
} SliceCase;

static void test_slice_resolve_onnx(void) {
    const int64_t MX = INT64_MAX, MN = INT64_MIN;
    SliceCase c[] = {
        /* ONNX Slice examples and node tests on a (20, 10, 5) input */
        { SHAPE(3, 20, 10, 5), 2, { 0, 0 }, { 3, 10 }, { 0, 1 }, { 1, 1 }, 1, 1,
          SHAPE(3, 3, 10, 5) },                                       /* test_slice */
        { SHAPE(3, 20, 10, 5), 3, { 0, 0, 3 }, { 20, 10, 4 }, { 0 }, { 0 }, 0, 0,
          SHAPE(3, 20, 10, 1) },                                      /* default axes */
        { SHAPE(3, 20, 10, 5), 1, { 1 }, { 1000 }, { 1 }, { 1 }, 1, 1,
          SHAPE(3, 20, 9, 5) },                                       /* end out of bounds */
        { SHAPE(3, 20, 10, 5), 1, { 1000 }, { 1000 }, { 1 }, { 1 }, 1, 1,
          SHAPE(3, 20, 0, 5) },                                       /* start out of bounds */
        { SHAPE(3, 20, 10, 5), 1, { 0 }, { -1 }, { 1 }, { 1 }, 1, 1,
          SHAPE(3, 20, 9, 5) },                                       /* test_slice_neg */
        { SHAPE(3, 20, 10, 5), 3, { 20, 10, 4 }, { 0, 0, 1 }, { 0, 1, 2 }, { -1, -3, -2 },
          1, 1, SHAPE(3, 19, 3, 2) },                                 /* negative steps */
        { SHAPE(3, 20, 10, 5), 3, { 0, 0, 3 }, { 20, 10, 4 }, { 0, -2, -1 }, { 0 }, 1, 0,
          SHAPE(3, 20, 10, 1) },                                      /* negative axes */
        { SHAPE(3, 20, 10, 5), 1, { 1 }, { MX }, { 1 }, { 1 }, 1, 1,
          SHAPE(3, 20, 9, 5) },                                       /* INT64_MAX end */
        { SHAPE(3, 20, 10, 5), 1, { -1 }, { MN }, { 1 }, { -1 }, 1, 1,
          SHAPE(3, 20, 10, 5) },                                      /* reverse, INT64_MIN */
        { SHAPE(3, 20, 10, 5), 1, { MX }, { MN }, { 2 }, { MN }, 1, 1,
          SHAPE(3, 20, 10, 1) },                                      /* step INT64_MIN */
        { SHAPE(3, 20, 10, 5), 1, { MN }, { MX }, { 0 }, { MX }, 1, 1,
          SHAPE(3, 1, 10, 5) },                                       /* step INT64_MAX */
        /* documented examples on [[1,2,3,4],[5,6,7,8]] */
        { SHAPE(2, 2, 4), 2, { 1, 0 }, { 2, 3 }, { 0, 1 }, { 1, 2 }, 1, 1, SHAPE(2, 1, 2) },
        { SHAPE(2, 2, 4), 2, { 0, 1 }, { -1, 1000 }, { 0 }, { 0 }, 0, 0, SHAPE(2, 1, 3) },
        /* spec clamping, not Python's: start -20 on dim 10 with step -1 becomes 0 (clamp
         * to [0, dim-1]), end -30 becomes -1, so index 0 is kept (numpy would give 0) */
        { SHAPE(1, 10), 1, { -20 }, { -30 }, { 0 }, { -1 }, 1, 1, SHAPE(1, 1) },
        { SHAPE(1, 0), 1, { 0 }, { 5 }, { 0 }, { -1 }, 1, 1, SHAPE(1, 0) },  /* empty dim */
    };
    for (int i = 0; i < NELEM(c); i++) {
        OqcfSlice s;
        CU_ASSERT_EQUAL_FATAL(oqcf_slice_resolve(&c[i].in, c[i].starts, c[i].ends, c[i].n,
                                                 c[i].has_axes ? c[i].axes : NULL,
                                                 c[i].has_steps ? c[i].steps : NULL, &s),
                              OQCF_OK);
        CU_ASSERT(shape_eq(&s.out, &c[i].want));
    }
    /* the negative-step example reads x[19:0:-1, 9:0:-3, 4:1:-2] */
    OqcfShape x = SHAPE(3, 20, 10, 5);
    int64_t st[3] = { 20, 10, 4 }, en[3] = { 0, 0, 1 }, sp[3] = { -1, -3, -2 };
    OqcfSlice s;
    oqcf_slice_resolve(&x, st, en, 3, NULL, sp, &s);
    CU_ASSERT(s.start[0] == 19 && s.start[1] == 9 && s.start[2] == 4);
    CU_ASSERT(s.step[0] == -1 && s.step[1] == -3 && s.step[2] == -2);
    /* the documented example's data: rows 1..1, columns 0 and 2 -> [[5, 7]] */
    float d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[2];
    OqcfShape ds = SHAPE(2, 2, 4);
    int64_t s1[2] = { 1, 0 }, e1[2] = { 2, 3 }, a1[2] = { 0, 1 }, p1[2] = { 1, 2 };
    oqcf_slice_resolve(&ds, s1, e1, 2, a1, p1, &s);
    CU_ASSERT_EQUAL(oqcf_slice(d, &ds, &s, 4, y), OQCF_OK);
    CU_ASSERT(y[0] == 5 && y[1] == 7);
    int64_t zero[1] = { 0 }, dup[2] = { 0, -2 }, ax3[1] = { 3 };
    CU_ASSERT_EQUAL(oqcf_slice_resolve(&ds, s1, e1, 1, NULL, zero, &s), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_slice_resolve(&ds, s1, e1, 2, dup, NULL, &s), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_slice_resolve(&ds, s1, e1, 1, ax3, NULL, &s), OQCF_EINVAL);
    s.start[0] = 5;                                   /* a hand-made slice out of bounds */
    CU_ASSERT_EQUAL(oqcf_slice(d, &ds, &s, 4, y), OQCF_EINVAL);
}

/* The input indices one ONNX slice dim reads, enumerated by stepping (spec clamping). */
static int64_t slice_ref_dim(int64_t dim, int64_t st, int64_t en, int64_t step, int64_t *idx) {
    st += st < 0 ? dim : 0;
    en += en < 0 ? dim : 0;
    int64_t slo = 0, shi = step > 0 ? dim : dim - 1, elo = step > 0 ? 0 : -1;
    st = st < slo ? slo : st > shi ? shi : st;
    en = en < elo ? elo : en > shi ? shi : en;
    int64_t n = 0;
    for (int64_t i = st; step > 0 ? i < en : i > en; i += step)
        idx[n++] = i;
    return n;
}

static void test_slice_random(void) {
    static unsigned char x[65536], y[65536], want[65536];
    for (int trial = 0; trial < 200; trial++) {
        size_t es = esizes[trial % NELEM(esizes)];
        int r = (int)rnd_in(1, 5);
        OqcfShape xs = rand_shape(r, 6);
        fill_bytes(x, oqcf_numel(&xs), es);
        int n = (int)rnd_in(0, r);
        int64_t st[8], en[8], ax[8], sp[8], idx[8][16], cnt[8];
        int perm[8];
        for (int k = 0; k < r; k++)
            perm[k] = k;
        for (int k = r - 1; k > 0; k--) {              /* random distinct axes */
            int j = (int)rnd_in(0, k), t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        for (int k = 0; k < r; k++)
            cnt[k] = slice_ref_dim(xs.d[k], 0, xs.d[k], 1, idx[k]);
        for (int i = 0; i < n; i++) {
            int a = perm[i];
            int64_t dim = xs.d[a];
            ax[i] = rnd() % 2 ? a - r : a;
            st[i] = rnd() % 8 ? rnd_in(-dim - 3, dim + 3) : (rnd() % 2 ? INT64_MAX : INT64_MIN);
            en[i] = rnd() % 8 ? rnd_in(-dim - 3, dim + 3) : (rnd() % 2 ? INT64_MAX : INT64_MIN);
            sp[i] = rnd_in(1, 3) * (rnd() % 2 ? 1 : -1);
            cnt[a] = slice_ref_dim(dim, st[i], en[i], sp[i], idx[a]);
        }
        OqcfSlice s;
        CU_ASSERT_EQUAL_FATAL(oqcf_slice_resolve(&xs, st, en, n, ax, sp, &s), OQCF_OK);
        OqcfShape ws = xs;                      /* the reference output shape */
        for (int k = 0; k < r; k++)
            ws.d[k] = cnt[k];
        CU_ASSERT_FATAL(shape_eq(&s.out, &ws));
        int64_t total = oqcf_numel(&ws), c[8], ic[8];
        for (int64_t f = 0; f < total; f++) {
            unravel(f, &ws, c);
            for (int k = 0; k < r; k++)
                ic[k] = idx[k][c[k]];
            memcpy(want + f * es, x + ravel(ic, &xs) * es, es);
        }
        CU_ASSERT_EQUAL(oqcf_slice(x, &xs, &s, es, y), OQCF_OK);
        CU_ASSERT(memcmp(y, want, (size_t)total * es) == 0);
    }
}

static void test_transpose(void) {
    static unsigned char x[65536], y[65536], want[65536];
    for (int trial = 0; trial < 300; trial++) {
        size_t es = esizes[trial % NELEM(esizes)];
        int r = (int)rnd_in(0, 6), p[8];
        OqcfShape xs = rand_shape(r, r <= 2 ? 70 : r == 3 ? 16 : 4), ys;  /* <= 8192 elems */
        if (r == 3 && trial % 3 == 0)
            xs.d[0] = 1;                            /* a size-1 dim to drop */
        for (int k = 0; k < r; k++)
            p[k] = k;
        for (int k = r - 1; k > 0; k--) {
            int j = (int)rnd_in(0, k), t = p[k];
            p[k] = p[j];
            p[j] = t;
        }
        ys.rank = r;
        for (int j = 0; j < r; j++)
            ys.d[j] = xs.d[p[j]];
        int64_t n = oqcf_numel(&xs), oc[8], ic[8];
        fill_bytes(x, n, es);
        for (int64_t f = 0; f < n; f++) {           /* output j reads input dim p[j] */
            unravel(f, &ys, oc);
            for (int j = 0; j < r; j++)
                ic[p[j]] = oc[j];
            memcpy(want + f * es, x + ravel(ic, &xs) * es, es);
        }
        CU_ASSERT_EQUAL(oqcf_transpose(x, &xs, p, es, y), OQCF_OK);
        CU_ASSERT(memcmp(y, want, (size_t)n * es) == 0);
    }
    /* NCHW (1,2,2,3) -> NHWC: y[h][w][c] = x[c][h][w] */
    float nchw[12], nhwc[12];
    for (int i = 0; i < 12; i++)
        nchw[i] = (float)i;
    OqcfShape s = SHAPE(4, 1, 2, 2, 3);
    int to_nhwc[4] = { 0, 2, 3, 1 }, bad[4] = { 0, 2, 2, 1 };
    oqcf_transpose(nchw, &s, to_nhwc, 4, nhwc);
    const float w[12] = { 0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11 };
    CU_ASSERT(memcmp(nhwc, w, sizeof w) == 0);
    OqcfShape m = SHAPE(2, 2, 3);                   /* default perm reverses: 2-D transpose */
    oqcf_transpose(nchw, &m, NULL, 4, nhwc);
    CU_ASSERT(nhwc[0] == 0 && nhwc[1] == 3 && nhwc[2] == 1 && nhwc[5] == 5);
    CU_ASSERT_EQUAL(oqcf_transpose(nchw, &s, bad, 4, nhwc), OQCF_EINVAL);
}

/* Input index of a reflect or edge pad, found by bouncing (no modulo) off the ends. */
static int64_t pad_ref_index(int64_t j, int64_t n, OqcfPadMode mode) {
    if (mode == OQCF_PAD_EDGE || n == 1)
        return j < 0 ? 0 : j >= n ? n - 1 : j;
    while (j < 0 || j >= n)
        j = j < 0 ? -j : 2 * (n - 1) - j;
    return j;
}

static void test_pad_onnx(void) {
    /* the ONNX Pad examples: data [[1.0,1.2],[2.3,3.4],[4.5,5.7]], pads [0,2,0,0] */
    float x[6] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f }, y[12], v = 0.0f;
    OqcfShape s = SHAPE(2, 3, 2), os;
    int64_t pads[4] = { 0, 2, 0, 0 };
    CU_ASSERT_EQUAL(oqcf_pad_shape(&s, pads, &os), OQCF_OK);
    CU_ASSERT(os.rank == 2 && os.d[0] == 3 && os.d[1] == 4);
    const float wc[12] = { 0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f };
    const float wr[12] = { 1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f,
                           5.7f };
    const float we[12] = { 1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f,
                           5.7f };
    oqcf_pad(x, &s, pads, OQCF_PAD_CONSTANT, &v, 4, y);
    CU_ASSERT(memcmp(y, wc, sizeof wc) == 0);
    oqcf_pad(x, &s, pads, OQCF_PAD_REFLECT, NULL, 4, y);
    CU_ASSERT(memcmp(y, wr, sizeof wr) == 0);
    oqcf_pad(x, &s, pads, OQCF_PAD_EDGE, NULL, 4, y);
    CU_ASSERT(memcmp(y, we, sizeof we) == 0);
    /* negative pads crop: [-1, 1, 0, -1] keeps rows 1..2, column 0, then pads a column
     * on the left with 9.5 -> [[9.5, 2.3], [9.5, 4.5]] */
    int64_t crop[4] = { -1, 1, 0, -1 };
    float nine = 9.5f;
    CU_ASSERT_EQUAL(oqcf_pad(x, &s, crop, OQCF_PAD_CONSTANT, &nine, 4, y), OQCF_OK);
    CU_ASSERT(y[0] == 9.5f && y[1] == 2.3f && y[2] == 9.5f && y[3] == 4.5f);
    /* reflect [1,2,3,4,5] by 2 before, 1 after: indices -2,-1 mirror to 2,1 and 5 to 3
     * (the edge is not repeated) -> [3,2,1,2,3,4,5,4] */
    int32_t r5[5] = { 1, 2, 3, 4, 5 }, ry[9], i42 = 42;
    OqcfShape s5 = SHAPE(1, 5);
    int64_t pr[2] = { 2, 1 };
    oqcf_pad(r5, &s5, pr, OQCF_PAD_REFLECT, NULL, 4, ry);
    const int32_t wr5[8] = { 3, 2, 1, 2, 3, 4, 5, 4 };
    CU_ASSERT(memcmp(ry, wr5, sizeof wr5) == 0);
    /* crop one in front, then reflect the cropped [2,3,4,5] by 4 after: indices 4..7
     * mirror to 2, 1, 0 and (7 -> -1 -> 1) -> [2,3,4,5,4,3,2,3], more than the dim */
    int64_t pc[2] = { -1, 4 };
    oqcf_pad(r5, &s5, pc, OQCF_PAD_REFLECT, NULL, 4, ry);
    const int32_t wrc[8] = { 2, 3, 4, 5, 4, 3, 2, 3 };
    CU_ASSERT(memcmp(ry, wrc, sizeof wrc) == 0);
    int64_t over[2] = { -3, -3 }, big[2] = { 1, 0 };
    CU_ASSERT_EQUAL(oqcf_pad_shape(&s5, over, &os), OQCF_EINVAL);
    OqcfShape e = SHAPE(1, 0);                      /* nothing to repeat in an empty dim */
    CU_ASSERT_EQUAL(oqcf_pad(r5, &e, big, OQCF_PAD_EDGE, NULL, 4, ry), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_pad(r5, &e, big, OQCF_PAD_CONSTANT, &i42, 4, ry), OQCF_OK);
    CU_ASSERT_EQUAL(ry[0], 42);
    OqcfShape sc = { 0 };
    CU_ASSERT_EQUAL(oqcf_pad(r5, &sc, NULL, OQCF_PAD_EDGE, NULL, 4, ry), OQCF_OK);
    CU_ASSERT_EQUAL(ry[0], 1);
}

static void test_pad_random(void) {
    static unsigned char x[4096], y[65536], want[65536];
    for (int trial = 0; trial < 300; trial++) {
        size_t es = esizes[trial % NELEM(esizes)];
        OqcfPadMode mode = (OqcfPadMode)(trial % 3);
        int r = (int)rnd_in(1, 4), maxpad = r == 4 ? 2 : 5;    /* output <= 6561 elems */
        OqcfShape xs = rand_shape(r, 5), os;
        int64_t pads[8], cb[4], ext[4], lb[4];
        for (int k = 0; k < r; k++) {
            pads[k] = rnd_in(-1, maxpad);
            pads[r + k] = rnd_in(-1, maxpad);
            if (xs.d[k] + (pads[k] < 0 ? pads[k] : 0) + (pads[r + k] < 0 ? pads[r + k] : 0) <= 0)
                pads[k] = pads[r + k] = 0;          /* keep something to reflect */
            cb[k] = pads[k] < 0 ? -pads[k] : 0;
            lb[k] = pads[k] > 0 ? pads[k] : 0;
            ext[k] = xs.d[k] - cb[k] - (pads[r + k] < 0 ? -pads[r + k] : 0);
        }
        unsigned char val[8];
        fill_bytes(val, 1, es);
        fill_bytes(x, oqcf_numel(&xs), es);
        OqcfShape ws = xs;                      /* the reference output shape */
        for (int k = 0; k < r; k++)
            ws.d[k] = xs.d[k] + pads[k] + pads[r + k];
        CU_ASSERT_EQUAL_FATAL(oqcf_pad_shape(&xs, pads, &os), OQCF_OK);
        CU_ASSERT_FATAL(shape_eq(&os, &ws));
        int64_t n = oqcf_numel(&os), oc[4], ic[4];
        for (int64_t f = 0; f < n; f++) {
            unravel(f, &os, oc);
            int outside = 0;
            for (int k = 0; k < r; k++) {
                int64_t j = oc[k] - lb[k];
                outside |= j < 0 || j >= ext[k];
                ic[k] = cb[k] + pad_ref_index(j, ext[k], mode);
            }
            if (outside && mode == OQCF_PAD_CONSTANT)
                memcpy(want + f * es, val, es);
            else
                memcpy(want + f * es, x + ravel(ic, &xs) * es, es);
        }
        CU_ASSERT_EQUAL(oqcf_pad(x, &xs, pads, mode, val, es, y), OQCF_OK);
        CU_ASSERT(memcmp(y, want, (size_t)n * es) == 0);
    }
}

static void test_gather(void) {
    /* ONNX example, axis 0: data [[1,1.2],[2.3,3.4],[4.5,5.7]], indices [[0,1],[1,2]] */
    float d[6] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f }, y[12];
    OqcfShape ds = SHAPE(2, 3, 2), is = SHAPE(2, 2, 2), os;
    int64_t i64[4] = { 0, 1, 1, 2 };
    CU_ASSERT_EQUAL(oqcf_gather_shape(&ds, &is, 0, &os), OQCF_OK);
    CU_ASSERT(os.rank == 3 && os.d[0] == 2 && os.d[1] == 2 && os.d[2] == 2);
    CU_ASSERT_EQUAL(oqcf_gather(d, &ds, 0, i64, OQCF_INT64, 4, 4, y), OQCF_OK);
    const float w0[8] = { 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f };
    CU_ASSERT(memcmp(y, w0, sizeof w0) == 0);
    /* axis 1 example: [[1,1.2,1.9],[2.3,3.4,3.9],[4.5,5.7,5.9]], indices [[0,2]] */
    float d1[9] = { 1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f };
    OqcfShape s1 = SHAPE(2, 3, 3), i1 = SHAPE(2, 1, 2);
    int32_t i32[2] = { 0, -1 };                     /* -1 wraps to 2 */
    oqcf_gather_shape(&s1, &i1, -1, &os);
    CU_ASSERT(os.rank == 3 && os.d[0] == 3 && os.d[1] == 1 && os.d[2] == 2);
    CU_ASSERT_EQUAL(oqcf_gather(d1, &s1, -1, i32, OQCF_INT32, 2, 4, y), OQCF_OK);
    const float w1[6] = { 1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f };
    CU_ASSERT(memcmp(y, w1, sizeof w1) == 0);
    OqcfShape scalar = { 0 };                       /* scalar index: rank r-1 */
    oqcf_gather_shape(&s1, &scalar, 0, &os);
    CU_ASSERT(os.rank == 1 && os.d[0] == 3);
    int64_t two = -1;
    oqcf_gather(d1, &s1, 0, &two, OQCF_INT64, 1, 4, y);
    CU_ASSERT(y[0] == 4.5f && y[2] == 5.9f);
    for (int i = 0; i < 12; i++)
        y[i] = -7.0f;
    int64_t oob[3] = { 0, 3, 1 }, neg[1] = { -4 };
    CU_ASSERT_EQUAL(oqcf_gather(d1, &s1, 0, oob, OQCF_INT64, 3, 4, y), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_gather(d1, &s1, 1, neg, OQCF_INT64, 1, 4, y), OQCF_EINVAL);
    CU_ASSERT(y[0] == -7.0f && y[11] == -7.0f);     /* nothing written on error */
    CU_ASSERT_EQUAL(oqcf_gather(d1, &s1, 0, oob, OQCF_FLOAT, 1, 4, y), OQCF_EDTYPE);
    OqcfShape big = SHAPE(8, 1, 1, 1, 1, 1, 1, 1, 1), i2 = SHAPE(2, 1, 1);
    CU_ASSERT_EQUAL(oqcf_gather_shape(&big, &i2, 0, &os), OQCF_EINVAL);
    /* random: every axis of a rank-4 tensor against a coordinate loop */
    static unsigned char x[8192], g[32768], want[32768];
    for (int trial = 0; trial < 40; trial++) {
        size_t es = esizes[trial % NELEM(esizes)];
        OqcfShape xs = rand_shape(4, 5), ix = rand_shape((int)rnd_in(0, 2), 3);
        int ax = (int)rnd_in(0, 3);
        int64_t ni = oqcf_numel(&ix), idx[9], oc[8], ic[4];
        int32_t idx32[9];
        for (int64_t i = 0; i < ni; i++)
            idx32[i] = (int32_t)(idx[i] = rnd_in(-xs.d[ax], xs.d[ax] - 1));
        fill_bytes(x, oqcf_numel(&xs), es);
        OqcfShape ws = { 0 };                   /* the reference output shape */
        for (int k = 0; k < 4; k++)
            if (k == ax)
                for (int q = 0; q < ix.rank; q++)
                    ws.d[ws.rank++] = ix.d[q];
            else
                ws.d[ws.rank++] = xs.d[k];
        CU_ASSERT_EQUAL_FATAL(oqcf_gather_shape(&xs, &ix, ax, &os), OQCF_OK);
        CU_ASSERT_FATAL(shape_eq(&os, &ws));
        for (int64_t f = 0; f < oqcf_numel(&os); f++) {
            unravel(f, &os, oc);
            for (int k = 0; k < ax; k++)
                ic[k] = oc[k];
            int64_t v = idx[ravel(oc + ax, &ix)];
            ic[ax] = v < 0 ? v + xs.d[ax] : v;
            for (int k = ax + 1; k < 4; k++)
                ic[k] = oc[k - 1 + ix.rank];
            memcpy(want + f * es, x + ravel(ic, &xs) * es, es);
        }
        int use32 = trial % 2;
        CU_ASSERT_EQUAL(oqcf_gather(x, &xs, ax, use32 ? (void *)idx32 : (void *)idx,
                                    use32 ? OQCF_INT32 : OQCF_INT64, ni, es, g), OQCF_OK);
        CU_ASSERT(memcmp(g, want, (size_t)oqcf_numel(&os) * es) == 0);
    }
}

/* ---------------------------------------------------------------- cast */

/* float16 bit patterns derived by hand: sign | (exp+15) << 10 | round(frac * 1024). */
static void test_f16_bits(void) {
    struct {
        float f;        /* input */
        uint16_t h;     /* expected binary16 bits */
    } c[] = {
        { 1.0f, 0x3c00 }, { -2.0f, 0xc000 }, { 0.0f, 0x0000 }, { -0.0f, 0x8000 },
        { 65504.0f, 0x7bff },                       /* largest finite */
        { 65519.0f, 0x7bff },                       /* below the tie: rounds down */
        { 65520.0f, 0x7c00 },                       /* tie 65504|65536: even -> inf */
        { 1e5f, 0x7c00 }, { INFINITY, 0x7c00 }, { -INFINITY, 0xfc00 },
        { 0x1p-14f, 0x0400 },                       /* smallest normal */
        { 0x1p-14f - 0x1p-25f, 0x0400 },            /* tie 0x3ff|0x400: even, carries */
        { 0x1p-24f, 0x0001 },                       /* smallest subnormal */
        { 1e-7f, 0x0002 },                          /* 1e-7 / 2^-24 = 1.68 -> 2 */
        { 0x1p-25f, 0x0000 },                       /* half the smallest: tie -> 0 */
        { 0x1.8p-25f, 0x0001 },                     /* 0.75 ulp -> 1 */
        { 0.1f, 0x2e66 },                           /* 1.6 * 2^-4: 614.4 -> 614 */
        { 1.0f / 3.0f, 0x3555 },                    /* 1.333 * 2^-2: 341.3 -> 341 */
        { 1.0f + 0x1p-11f, 0x3c00 },                /* tie: even mantissa 0 */
        { 1.0f + 0x1.8p-10f, 0x3c02 },              /* tie 1|2: even 2 */
        { 255.0f, 0x5bf8 },
    };
    for (int i = 0; i < NELEM(c); i++)
        CU_ASSERT_EQUAL(oqcf_f32_to_f16(c[i].f), c[i].h);
    CU_ASSERT(oqcf_f16_to_f32(0x0001) == 0x1p-24f && oqcf_f16_to_f32(0x3555) == 0.333251953125f);
    CU_ASSERT(oqcf_f16_to_f32(0x8001) == -0x1p-24f && oqcf_f16_to_f32(0x7bff) == 65504.0f);
    uint16_t n = oqcf_f32_to_f16(NAN);
    CU_ASSERT((n & 0x7c00) == 0x7c00 && (n & 0x03ff) != 0);
    /* every binary16 value widens exactly and narrows back to itself (NaN stays NaN) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = oqcf_f16_to_f32((uint16_t)h);
        int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        bad += nan ? !isnan(f) : oqcf_f32_to_f16(f) != h;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* bfloat16 is the top half of a float, rounded to nearest even */
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(1.0f), 0x3f80);
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(-2.0f), 0xc000);
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(3.14159265f), 0x4049);     /* 0.5708*128 = 73.06 */
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);  /* tie -> even */
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(1.0f + 0x1.8p-7f), 0x3f82);
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(FLT_MAX), 0x7f80);         /* rounds past max: inf */
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(1e-40f), 0x0001);          /* float subnormal */
    CU_ASSERT_EQUAL(oqcf_f32_to_bf16(NAN) & 0x7fc0, 0x7fc0);
    CU_ASSERT(oqcf_bf16_to_f32(0x4049) == 3.140625f);
}

static void test_cast_float_int(void) {
    float f[8] = { -2.7f, 2.7f, -0.5f, 1e10f, -1e10f, NAN, INFINITY, -INFINITY };
    int32_t i32[8];
    CU_ASSERT_EQUAL(oqcf_cast(f, OQCF_FLOAT, i32, OQCF_INT32, 8), OQCF_OK);
    const int32_t wi[8] = { -2, 2, 0, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN };
    CU_ASSERT(memcmp(i32, wi, sizeof wi) == 0);     /* truncate, saturate, NaN -> 0 */
    float g[6] = { -1.0f, 255.9f, 256.0f, 3.99f, NAN, -0.9f };
    uint8_t u8[6];
    oqcf_cast(g, OQCF_FLOAT, u8, OQCF_UINT8, 6);
    CU_ASSERT(u8[0] == 0 && u8[1] == 255 && u8[2] == 255 && u8[3] == 3 && u8[4] == 0 &&
              u8[5] == 0);
    int8_t i8[6];
    oqcf_cast(g, OQCF_FLOAT, i8, OQCF_INT8, 6);
    CU_ASSERT(i8[0] == -1 && i8[1] == 127 && i8[3] == 3 && i8[4] == 0 && i8[5] == 0);
    double d[4] = { 9.3e18, -9.3e18, 0x1p62, -0x1p63 };  /* around the int64 limits */
    int64_t i64[4];
    oqcf_cast(d, OQCF_DOUBLE, i64, OQCF_INT64, 4);
    CU_ASSERT(i64[0] == INT64_MAX && i64[1] == INT64_MIN && i64[2] == (int64_t)1 << 62 &&
              i64[3] == INT64_MIN);
    float h[3] = { 0x1p63f, 2e19f, -5.0f };
    uint64_t u64[3];
    oqcf_cast(h, OQCF_FLOAT, u64, OQCF_UINT64, 3);
    CU_ASSERT(u64[0] == (uint64_t)1 << 63 && u64[1] == UINT64_MAX && u64[2] == 0);
    /* integer -> integer wraps modulo 2^bits */
    int32_t w[4] = { 300, -1, 128, -129 };
    oqcf_cast(w, OQCF_INT32, u8, OQCF_UINT8, 4);
    CU_ASSERT(u8[0] == 44 && u8[1] == 255 && u8[2] == 128 && u8[3] == 127);
    oqcf_cast(w, OQCF_INT32, i8, OQCF_INT8, 4);
    CU_ASSERT(i8[0] == 44 && i8[1] == -1 && i8[2] == -128 && i8[3] == 127);
    uint64_t um[1] = { UINT64_MAX };
    int16_t i16[1];
    double dm[1];
    oqcf_cast(um, OQCF_UINT64, i16, OQCF_INT16, 1);
    oqcf_cast(um, OQCF_UINT64, dm, OQCF_DOUBLE, 1);
    CU_ASSERT(i16[0] == -1 && dm[0] == 0x1p64);
    int64_t m1[1] = { -1 };
    oqcf_cast(m1, OQCF_INT64, um, OQCF_UINT64, 1);
    CU_ASSERT(um[0] == UINT64_MAX);
    /* bool: nonzero (NaN too) -> 1; bool bytes other than 0/1 read as true */
    float bf[5] = { 0.0f, -0.0f, 0.5f, NAN, -3.0f };
    uint8_t b[5], braw[3] = { 0, 1, 2 };
    oqcf_cast(bf, OQCF_FLOAT, b, OQCF_BOOL, 5);
    CU_ASSERT(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 1 && b[4] == 1);
    oqcf_cast(braw, OQCF_BOOL, i32, OQCF_INT32, 3);
    CU_ASSERT(i32[0] == 0 && i32[1] == 1 && i32[2] == 1);
    oqcf_cast(w, OQCF_INT32, b, OQCF_BOOL, 4);
    CU_ASSERT(b[0] == 1 && b[1] == 1);
    /* in place between same-size types */
    int32_t ip[3] = { 1, -2, 16777217 };
    CU_ASSERT_EQUAL(oqcf_cast(ip, OQCF_INT32, ip, OQCF_FLOAT, 3), OQCF_OK);
    float fp[3];
    memcpy(fp, ip, sizeof fp);
    CU_ASSERT(fp[0] == 1.0f && fp[1] == -2.0f && fp[2] == 16777216.0f);  /* 2^24+1: even */
    CU_ASSERT_EQUAL(oqcf_cast(ip, OQCF_STRING, fp, OQCF_FLOAT, 1), OQCF_EDTYPE);
    CU_ASSERT_EQUAL(oqcf_cast(ip, OQCF_INT32, fp, OQCF_FLOAT, -1), OQCF_EINVAL);
}

static void test_cast_rounding(void) {
    /* each cast rounds once: these values would differ if rounded twice */
    double d[3] = { 1.0 + 0x1p-11 + 0x1p-40, 0x1.ffffffp127, 0x1.fffffep127 + 0x1p102 };
    uint16_t h[3];
    float f[3];
    oqcf_cast(d, OQCF_DOUBLE, h, OQCF_FLOAT16, 1);   /* via float: exact tie -> 0x3c00 */
    CU_ASSERT_EQUAL(h[0], 0x3c01);
    oqcf_cast(d + 1, OQCF_DOUBLE, f, OQCF_FLOAT, 2); /* FLT_MAX + half ulp: tie -> inf */
    CU_ASSERT(isinf(f[0]) && f[1] == FLT_MAX);
    double ov[3] = { 1e300, -1e300, 1e-50 };
    oqcf_cast(ov, OQCF_DOUBLE, f, OQCF_FLOAT, 3);
    CU_ASSERT(isinf(f[0]) && f[0] > 0 && isinf(f[1]) && f[1] < 0 && f[2] == 0.0f);
    /* 2^62 + 2^54 + 1 to bfloat16 (ulp 2^55): just above the tie -> 2^62 + 2^55 = 0x5e81;
     * through a plain double it would be the exact tie 2^62 + 2^54 and round to 0x5e80 */
    int64_t big[2] = { ((int64_t)1 << 62) + ((int64_t)1 << 54) + 1,
                       ((int64_t)1 << 62) + ((int64_t)1 << 54) };
    uint16_t bb[2];
    oqcf_cast(big, OQCF_INT64, bb, OQCF_BFLOAT16, 2);
    CU_ASSERT(bb[0] == 0x5e81 && bb[1] == 0x5e80);
    uint64_t ubig[1] = { ((uint64_t)1 << 63) + ((uint64_t)1 << 55) + 1 };
    oqcf_cast(ubig, OQCF_UINT64, bb, OQCF_BFLOAT16, 1);
    CU_ASSERT_EQUAL(bb[0], 0x5f01);                  /* 2^63 + 2^56 */
    int64_t ifl[1] = { ((int64_t)1 << 62) + ((int64_t)1 << 38) + 1 };
    oqcf_cast(ifl, OQCF_INT64, f, OQCF_FLOAT, 1);
    CU_ASSERT(f[0] == 0x1p62f + 0x1p39f);
    int32_t ih[4] = { 65504, 65520, -3, 255 };
    uint16_t hh[4];
    oqcf_cast(ih, OQCF_INT32, hh, OQCF_FLOAT16, 4);
    CU_ASSERT(hh[0] == 0x7bff && hh[1] == 0x7c00 && hh[2] == 0xc200 && hh[3] == 0x5bf8);
    int8_t back[4];
    uint16_t hn[4] = { 0x5bf8, 0xc200, 0x7e00, 0xfc00 };
    oqcf_cast(hn, OQCF_FLOAT16, back, OQCF_INT8, 4);
    CU_ASSERT(back[0] == 127 && back[1] == -3 && back[2] == 0 && back[3] == -128);
    /* a long array crosses the kernel's chunks; compare with the scalar helpers */
    enum { N = 1000 };
    static float x[N], y[N];
    static uint16_t hx[N], bx[N];
    fill_rand(x, N);
    for (int i = 0; i < N; i++)
        x[i] *= (float)(i + 1);
    oqcf_cast(x, OQCF_FLOAT, hx, OQCF_FLOAT16, N);
    oqcf_cast(x, OQCF_FLOAT, bx, OQCF_BFLOAT16, N);
    oqcf_cast(hx, OQCF_FLOAT16, y, OQCF_FLOAT, N);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hx[i] != oqcf_f32_to_f16(x[i]) || bx[i] != oqcf_f32_to_bf16(x[i]) ||
               y[i] != oqcf_f16_to_f32(hx[i]);
    CU_ASSERT_EQUAL(bad, 0);
}

/* Every (from, to) pair carries small integers exactly: float -> from -> to -> float. */
static void test_cast_all_pairs(void) {
    const OqcfDType t[] = { OQCF_FLOAT, OQCF_DOUBLE, OQCF_FLOAT16, OQCF_BFLOAT16, OQCF_BOOL,
                            OQCF_INT8, OQCF_INT16, OQCF_INT32, OQCF_INT64, OQCF_UINT8,
                            OQCF_UINT16, OQCF_UINT32, OQCF_UINT64 };
    const float v[5] = { 0, 1, 7, 100, 127 };
    int bad = 0;
    for (int i = 0; i < NELEM(t); i++)
        for (int j = 0; j < NELEM(t); j++) {
            uint64_t a[5], b[5];
            float r[5];
            bad += oqcf_cast(v, OQCF_FLOAT, a, t[i], 5) != OQCF_OK;
            bad += oqcf_cast(a, t[i], b, t[j], 5) != OQCF_OK;
            bad += oqcf_cast(b, t[j], r, OQCF_FLOAT, 5) != OQCF_OK;
            int boolean = t[i] == OQCF_BOOL || t[j] == OQCF_BOOL;
            for (int k = 0; k < 5; k++)
                bad += r[k] != (boolean ? (float)(v[k] != 0) : v[k]);
        }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---------------------------------------------------------------- (de)quantize */

static void test_quantize(void) {
    /* ONNX QuantizeLinear example: scale 2, zero point 128 (x/2: 0, 1, 1.5 -> 2, 500,
     * -127, -500) */
    float x[6] = { 0, 2, 3, 1000, -254, -1000 }, s2 = 2.0f;
    uint8_t zp = 128, y[6];
    CU_ASSERT_EQUAL(oqcf_quantize_linear(x, y, OQCF_UINT8, &s2, &zp, 1, 1, 6), OQCF_OK);
    CU_ASSERT(y[0] == 128 && y[1] == 129 && y[2] == 130 && y[3] == 255 && y[4] == 1 &&
              y[5] == 0);
    /* ties go to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, and mirrored */
    float t[11] = { 0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 2.4999f, 2.5001f, 300, -300 };
    const int8_t wt[11] = { 0, 2, 2, 4, 0, -2, -2, 2, 3, 127, -128 };
    int8_t q[11], zq = -10;
    float one = 1.0f;
    oqcf_quantize_linear(t, q, OQCF_INT8, &one, NULL, 1, 1, 11);
    CU_ASSERT(memcmp(q, wt, sizeof wt) == 0);
    oqcf_quantize_linear(t, q, OQCF_INT8, &one, &zq, 1, 1, 11);
    CU_ASSERT(q[3] == -6 && q[7] == -8 && q[9] == 127 && q[10] == -128);  /* 290 saturates */
    float nan1[1] = { NAN };
    oqcf_quantize_linear(nan1, q, OQCF_INT8, &one, &zq, 1, 1, 1);
    CU_ASSERT_EQUAL(q[0], -10);
    /* per axis: shape (2, 3, 4), axis 1, against rintf (nearest-even in the default
     * rounding mode; the kernel rounds without the FP environment) */
    float px[24], sc[3] = { 1.0f, 0.5f, 0.25f };
    int8_t pz[3] = { 0, 10, -10 }, py[24];
    for (int i = 0; i < 24; i++)
        px[i] = (float)(i - 12) * 0.625f;           /* multiples of 1/8 hit many ties */
    CU_ASSERT_EQUAL(oqcf_quantize_linear(px, py, OQCF_INT8, sc, pz, 2, 3, 4), OQCF_OK);
    for (int i = 0; i < 24; i++) {
        int a = (i / 4) % 3;
        float v = rintf(px[i] / sc[a]) + pz[a];
        CU_ASSERT_EQUAL(py[i], (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v));
    }
    /* random values with 2^-12 and 2^-24 resolution (exact ties and fractions in (-1, 0),
     * where v - floor(v) would be inexact) against rintf, scale 1 so t == x */
    enum { R = 4096 };
    static float rx[R];
    static uint8_t ry[R];
    for (int i = 0; i < R; i++)
        rx[i] = i % 2 ? (float)rnd_in(-(130 << 12), 130 << 12) * 0x1p-12f
                      : (float)rnd_in(-(1 << 24), 1 << 24) * 0x1p-24f;
    uint8_t z100 = 100;
    oqcf_quantize_linear(rx, ry, OQCF_UINT8, &one, &z100, 1, 1, R);
    int bad = 0;
    for (int i = 0; i < R; i++) {
        float v = rintf(rx[i]) + 100.0f;
        bad += ry[i] != (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    CU_ASSERT_EQUAL(bad, 0);
    float zero = 0.0f;
    CU_ASSERT_EQUAL(oqcf_quantize_linear(x, y, OQCF_UINT8, &zero, NULL, 1, 1, 6), OQCF_EINVAL);
    CU_ASSERT_EQUAL(oqcf_quantize_linear(x, y, OQCF_INT16, &one, NULL, 1, 1, 6), OQCF_EDTYPE);
}

static void test_dequantize(void) {
    /* ONNX DequantizeLinear example: x [0, 3, 128, 255], scale 2, zero point 128 */
    uint8_t x[4] = { 0, 3, 128, 255 }, zp = 128;
    float y[12], s2 = 2.0f, one = 1.0f;
    CU_ASSERT_EQUAL(oqcf_dequantize_linear(x, OQCF_UINT8, y, &s2, &zp, 1, 1, 4), OQCF_OK);
    CU_ASSERT(y[0] == -256 && y[1] == -250 && y[2] == 0 && y[3] == 254);
    int32_t xi[2] = { INT32_MIN, INT32_MAX }, zi = -1;
    oqcf_dequantize_linear(xi, OQCF_INT32, y, &one, NULL, 1, 1, 2);
    CU_ASSERT(y[0] == -0x1p31f && y[1] == 0x1p31f);  /* 2^31-1 rounds to 2^31 */
    oqcf_dequantize_linear(xi, OQCF_INT32, y, &one, &zi, 1, 1, 2);
    CU_ASSERT(y[1] == 0x1p31f);                      /* 2^31-1 - (-1): no int32 overflow */
    /* per axis: (1, 3, 2) int8, axis 1: scales [1, 0.5, 2], zero points [0, 1, -1]
     * x = [[-128, 127], [1, 3], [-1, 0]] -> [[-128, 127], [0, 1], [0, 2]] */
    int8_t xa[6] = { -128, 127, 1, 3, -1, 0 }, za[3] = { 0, 1, -1 };
    float sa[3] = { 1.0f, 0.5f, 2.0f };
    oqcf_dequantize_linear(xa, OQCF_INT8, y, sa, za, 1, 3, 2);
    const float wa[6] = { -128, 127, 0, 1, 0, 2 };
    CU_ASSERT(memcmp(y, wa, sizeof wa) == 0);
    /* the same per-axis layout repeated over outer = 2 */
    int8_t xb[12];
    memcpy(xb, xa, 6);
    memcpy(xb + 6, xa, 6);
    oqcf_dequantize_linear(xb, OQCF_INT8, y, sa, za, 2, 3, 2);
    CU_ASSERT(memcmp(y, wa, sizeof wa) == 0 && memcmp(y + 6, wa, sizeof wa) == 0);
    CU_ASSERT_EQUAL(oqcf_dequantize_linear(xa, OQCF_FLOAT, y, sa, NULL, 1, 3, 2), OQCF_EDTYPE);
    CU_ASSERT_EQUAL(oqcf_dequantize_linear(xa, OQCF_INT8, y, NULL, NULL, 1, 3, 2), OQCF_EINVAL);
}

OQC_TEST_MAIN("fp32-tensor",
              OQC_TEST(test_unary_hand), OQC_TEST(test_unary_reference),
              OQC_TEST(test_unary_blocks), OQC_TEST(test_exact_transcendentals),
              OQC_TEST(test_clip_typed), OQC_TEST(test_broadcast_shape),
              OQC_TEST(test_binary_random_ranks), OQC_TEST(test_binary_fast_paths),
              OQC_TEST(test_binary_int_dtypes), OQC_TEST(test_binary_int_corners),
              OQC_TEST(test_sum), OQC_TEST(test_softmax), OQC_TEST(test_concat_split),
              OQC_TEST(test_slice_resolve_onnx), OQC_TEST(test_slice_random),
              OQC_TEST(test_transpose), OQC_TEST(test_pad_onnx), OQC_TEST(test_pad_random),
              OQC_TEST(test_gather), OQC_TEST(test_f16_bits), OQC_TEST(test_cast_float_int),
              OQC_TEST(test_cast_rounding), OQC_TEST(test_cast_all_pairs),
              OQC_TEST(test_quantize), OQC_TEST(test_dequantize))
