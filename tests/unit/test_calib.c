/* test_calib.c - calibration: histograms, the four threshold methods and the two table
 * forms (compiler/calib/calib.c, compiler/calib/calib_table.c; docs/calibration.md, whose formulas
 * the hand computations below follow; docs/calib-table.rng).
 *
 * What is checked:
 *   - the Q expansion against the seeds' worked example, a remainder group, levels > i;
 *   - --method parsing, good and bad;
 *   - oqc_hist_add: where values land (0, amax, bin edges, NaN, amax == 0), and that
 *     adding the same values in one call or in chunks of any size gives identical bins;
 *   - every method on small histograms whose thresholds are derived by hand in the
 *     comments (entropy: the divergence of each candidate too), plus clipped and kl;
 *   - the entropy search equals a direct transcription of the contract (build P and Q,
 *     smooth, normalise, sum) on random histograms of many shapes, and at N = 2048 on
 *     histograms chosen to strain its prefix-sum evaluation;
 *   - the behaviour on real-looking data: uniform (T near amax), a Gaussian with a few
 *     huge outliers (entropy and mse clip them, max does not), percentile on a known CDF;
 *   - the TensorRT cache: the published line "conv1: 3c88edfc", bit-exact round trips,
 *     names with ':' and spaces, upper-case hex and CRLF on input, unsigned tensors,
 *     names with a newline refused, malformed files reported with file:line;
 *   - the XML table: bit-exact round trip, validation with xmllint against
 *     docs/calib-table.rng, odd bytes in names, malformed files reported with file:line;
 *   - the time of one entropy search at N = 2048 (printed; the bound asserted is loose,
 *     tests must not depend on the machine's speed).
 * Run from the repository root (tests/run.sh does). */
#include "harness.h"
#include "backend.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA "docs/calib-table.rng"

/* ------------------------------------------------------------------ helpers */

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* splitmix64: a reproducible generator, independent of the C library. */
static uint64_t rng_state;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static double rng_uniform(void) { return (double)(rng_next() >> 11) * 0x1p-53; } /* [0,1) */
static double rng_gauss(void) { /* Box-Muller */
    double u = rng_uniform(), v = rng_uniform();
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* A histogram of nb bins over [0, amax] holding the given counts (owned by the test). */
static OqcHist make_hist(float amax, int nb, const uint64_t *counts) {
    OqcHist h = {amax, nb, calloc((size_t)nb, sizeof(uint64_t)), 0};
    for (int k = 0; k < nb && counts; k++) {
        h.bins[k] = counts[k];
        h.count += counts[k];
    }
    return h;
}

/* The histogram of x (amax found first, as the calibration's first pass does). */
static OqcHist hist_of(const float *x, int64_t n, int nb) {
    float amax = 0;
    for (int64_t i = 0; i < n; i++)
        amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    OqcHist h = make_hist(amax, nb, NULL);
    oqc_hist_add(&h, x, n);
    return h;
}

/* T for h with method m (param, levels); e gets the rest. */
static float threshold(const OqcHist *h, OqcCalibMethod m, double param, int levels,
                       OqcCalibEntry *e, double *div) {
    memset(e, 0, sizeof *e);
    CU_ASSERT_EQUAL(oqc_calib_threshold(h, m, param, levels, e, div), 0);
    return e->threshold;
}

#define CLOSE(a, b, tol) CU_ASSERT(fabs((double)(a) - (double)(b)) <= (tol))

/* ------------------------------------------------------------------ expansion */

static void test_expand_worked_example(void) {
    /* The seeds' example: 8 bins into 2 levels, 4 bins per group.
     * Group 0 = [1,0,2,3]: total 6 over its 3 non-zero bins -> 2, 0, 2, 2.
     * Group 1 = [5,3,1,7]: total 16 over 4 bins -> 4 each. */
    const double p[8] = {1, 0, 2, 3, 5, 3, 1, 7}, want[8] = {2, 0, 2, 2, 4, 4, 4, 4};
    double q[8];
    oqc_entropy_expand(p, 8, 2, q);
    for (int k = 0; k < 8; k++)
        CU_ASSERT_EQUAL(q[k], want[k]);
    /* 7 bins into 2 levels: groups of 7 / 2 = 3, the last takes the remainder.
     * Group 0 = [1,0,2]: 3 over 2 bins -> 1.5, 0, 1.5.
     * Group 1 = [3,5,3,1]: 12 over 4 bins -> 3 each. */
    const double want7[7] = {1.5, 0, 1.5, 3, 3, 3, 3};
    oqc_entropy_expand(p, 7, 2, q);
    for (int k = 0; k < 7; k++)
        CU_ASSERT_EQUAL(q[k], want7[k]);
    /* More levels than bins: every bin is its own group, Q = P. */
    oqc_entropy_expand(p, 4, 128, q);
    for (int k = 0; k < 4; k++)
        CU_ASSERT_EQUAL(q[k], p[k]);
    /* One level: the whole total over the 7 non-zero bins: 22 / 7. */
    oqc_entropy_expand(p, 8, 1, q);
    for (int k = 0; k < 8; k++)
        CU_ASSERT_EQUAL(q[k], p[k] ? 22.0 / 7 : 0);
}

/* ------------------------------------------------------------------ method parsing */

static void test_method_parse(void) {
    OqcDiag d;
    OqcCalibMethod m;
    double p;
    oqc_diag_init(&d);
    CU_ASSERT(oqc_calib_method_parse("entropy", &m, &p, &d) == 0 && m == OQC_CALIB_ENTROPY);
    CU_ASSERT(oqc_calib_method_parse("max", &m, &p, &d) == 0 && m == OQC_CALIB_MAX);
    CU_ASSERT(oqc_calib_method_parse("mse", &m, &p, &d) == 0 && m == OQC_CALIB_MSE);
    CU_ASSERT(oqc_calib_method_parse("percentile:99.99", &m, &p, &d) == 0 &&
              m == OQC_CALIB_PERCENTILE && p == 99.99);
    CU_ASSERT(oqc_calib_method_parse("percentile:100", &m, &p, &d) == 0 && p == 100);
    CU_ASSERT_EQUAL(d.nerrors, 0);
    static const char *const bad[] = {"", "Entropy", "minmax", "percentile", "percentile:",
                                      "percentile:0", "percentile:100.5", "percentile:-5",
                                      "percentile:abc", "percentile:99x", "percentile: 99",
                                      "percentile:nan", "percentile:inf", "percentile:0x10",
                                      "mse ", NULL};
    for (int i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(oqc_calib_method_parse(bad[i], &m, &p, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "'minmax'") && strstr(d.buf, "percentile:P"));
    oqc_diag_free(&d);
}

/* ------------------------------------------------------------------ histogram */

static void test_hist_placement(void) {
    /* 4 bins over [0, 2]: width 0.5, index = min((int)(|x| * 2), 3). */
    OqcHist h = make_hist(2, 4, NULL);
    const float x[] = {0, -0.0f, 0.49f, -0.5f, 0.99f, 1.0f, -1.7f, 2.0f, -2.0f, NAN};
    oqc_hist_add(&h, x, 10);
    /* 0, -0, 0.49 -> bin 0; +-0.5, 0.99 -> bin 1; 1.0 -> bin 2; 1.7 -> bin 3; amax -> the
     * last bin, not bin 4; NaN is clamped into the last bin as well. */
    CU_ASSERT_EQUAL(h.bins[0], 3);
    CU_ASSERT_EQUAL(h.bins[1], 2);
    CU_ASSERT_EQUAL(h.bins[2], 1);
    CU_ASSERT_EQUAL(h.bins[3], 4);
    CU_ASSERT_EQUAL(h.count, 10);
    free(h.bins);
    /* amax == 0: every value is in bin 0. */
    OqcHist z = make_hist(0, 8, NULL);
    const float zeros[5] = {0};
    oqc_hist_add(&z, zeros, 5);
    CU_ASSERT(z.bins[0] == 5 && z.count == 5);
    free(z.bins);
    /* A subnormal amax (N / amax overflows a float) still puts amax in the last bin. */
    float tiny = bits_float(1); /* 1.4e-45 */
    OqcHist t = make_hist(tiny, 16, NULL);
    const float tx[3] = {0, tiny, -tiny};
    oqc_hist_add(&t, tx, 3);
    CU_ASSERT(t.bins[0] == 1 && t.bins[15] == 2);
    free(t.bins);
}

static void test_hist_batch_invariance(void) {
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x);
    rng_state = 7;
    for (int i = 0; i < N; i++)
        x[i] = (float)(rng_gauss() * 3);
    OqcHist one = hist_of(x, N, 2048);
    OqcHist chunked = make_hist(one.amax, 2048, NULL);
    for (int64_t s = 0, step = 1; s < N; s += step, step = step * 3 % 1021 + 1)
        oqc_hist_add(&chunked, x + s, s + step <= N ? step : N - s);
    CU_ASSERT_EQUAL(chunked.count, (uint64_t)N);
    CU_ASSERT(memcmp(one.bins, chunked.bins, 2048 * sizeof(uint64_t)) == 0);
    uint64_t sum = 0;
    for (int k = 0; k < 2048; k++)
        sum += one.bins[k];
    CU_ASSERT_EQUAL(sum, (uint64_t)N);
    CU_ASSERT(one.bins[2047] >= 1); /* the value equal to amax */
    free(one.bins);
    free(chunked.bins);
    free(x);
}

/* ------------------------------------------------------------------ entropy by hand */

static void test_entropy_hand_smoothing(void) {
    /* bins [2,0,1,1], amax 4 (width 1), L = 2 levels; candidates i = 2, 3.
     *
     * i = 2: P = [2, 0+1+1] = [2,2] (bins 2, 3 are outliers, added to P[1]).
     *   Q from bins [2,0] in groups of 1: group {0} -> 2; group {1}: total 0 spread over
     *   its bins non-zero in P (bin 1) -> 0. Q = [2,0].
     *   Smoothing: P has no zero. Q has one zero: it gets 1e-4, bin 0 loses 1e-4:
     *   Q = [1.9999, 0.0001]. Normalised: P = [.5,.5], Q = [.99995, .00005].
     *   KL = .5 ln(.5/.99995) + .5 ln(.5/.00005) = .5(-0.693097) + .5(9.210340) = 4.258622.
     * i = 3: P = [2,0,1+1] = [2,0,2]. Groups of 3/2 = 1: {0} -> 2; the last {1,2}: total
     *   0+1 = 1 over its one bin non-zero in P (bin 2) -> Q = [2,0,1].
     *   Smoothing: one zero of three in each: zero bin 1e-4, the others lose 5e-5.
     *   P = [1.99995,.0001,1.99995]/4, Q = [1.99995,.0001,.99995]/3.
     *   KL = .4999875 ln(3/4) + .000025 ln(3/4) + .4999875 ln(1.99995*3/(4*.99995))
     *      = -.143838 - .0000072 + .4999875 * .405490 = .058895.
     * The minimum is at m = 3: T = 3.5 * 4/4 = 3.5. Clipped: half of bin 3 (1 count)
     * of 4 counts = .125. */
    const uint64_t b[4] = {2, 0, 1, 1};
    OqcHist h = make_hist(4, 4, b);
    OqcCalibEntry e;
    double div[4];
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_ENTROPY, 1, 2, &e, div), 3.5f);
    CU_ASSERT(isnan(div[0]) && isnan(div[1]));
    CLOSE(div[2], 4.258622, 1e-6);
    CLOSE(div[3], 0.058895, 1e-6);
    CU_ASSERT_EQUAL(e.kl, div[3]);
    CU_ASSERT_EQUAL(e.amax, 4);
    CLOSE(e.clipped, 0.125, 1e-15);
    CU_ASSERT_EQUAL(e.scale, 3.5f / 127);
    free(h.bins);
}

static void test_entropy_hand_ties(void) {
    /* bins [4,4,4,4,0,0,0,0], amax 8 (width 1), L = 2.
     * i = 2: P = [4, 4+8] = [.25,.75], Q = [4,4] = [.5,.5]:
     *   KL = .25 ln .5 + .75 ln 1.5 = -.173287 + .304099 = .130812.
     * i = 3: P = [4,4,8]/16, Q (groups {0},{1,2}: 4; 8 over 2) = [4,4,4]/12:
     *   KL = .25 ln(.75) + .25 ln(.75) + .5 ln(1.5) = -.143841 + .202733 = .058892.
     * i = 4..7: no outliers; P = [4,4,4,4,0...] and Q expands each group's total over
     *   the same non-zero bins: Q == P, so after the same smoothing KL = 0 exactly.
     * Four candidates tie at 0: the first one wins, m = 4, T = 4.5. Nothing above T. */
    const uint64_t b[8] = {4, 4, 4, 4, 0, 0, 0, 0};
    OqcHist h = make_hist(8, 8, b);
    OqcCalibEntry e;
    double div[8];
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_ENTROPY, 1, 2, &e, div), 4.5f);
    CLOSE(div[2], 0.130812, 1e-6);
    CLOSE(div[3], 0.058892, 1e-6);
    for (int i = 4; i < 8; i++)
        CU_ASSERT_EQUAL(div[i], 0);
    CU_ASSERT_EQUAL(e.kl, 0);
    CU_ASSERT_EQUAL(e.clipped, 0);
    free(h.bins);
}

static void test_entropy_hand_seed_histogram(void) {
    /* The seeds' bins [1,0,2,3,5,3,1,7] as a histogram, amax 8 (width 1), L = 2.
     * i = 7: P = [1,0,2,3,5,3,1+7] (total 22); groups of 3: [1,0,2] -> 3 over bins 0, 2;
     *   [3,5,3,1] -> 12 over 4: Q = [1.5,0,1.5,3,3,3,3] (total 15). Bin 1 is zero in both
     *   (eps term: (1e-4/22) ln(15/22) = -2e-6):
     *   KL = 1/22 ln((1/22)/.1) + 2/22 ln((2/22)/.1) + 2 * 3/22 ln((3/22)/.2)
     *        + 5/22 ln((5/22)/.2) + 8/22 ln((8/22)/.2) - 2e-6
     *      = -.035839 - .008665 - .104452 + .029053 + .217395 - .000002 = .097491;
     *   smoothing also takes 1e-4/6 off each non-zero bin of P and Q, which moves the
     *   sum by a few 1e-6 (the code, and the reference below, give .097493).
     * i = 6: P = [1,0,2,3,5,3+1+7]; Q = [1.5,0,1.5,11/3,11/3,11/3] (total 14):
     *   KL = -.038975 - .014937 - .088999 - .032234 + .323314 = .148169.
     * i = 3 (.2521), 4 (.4320), 5 (.3869) are larger, i = 2 (8.61) by far: m = 7,
     * T = 7.5; clipped: half of bin 7 (7 counts) of 22 = .159091. */
    const uint64_t b[8] = {1, 0, 2, 3, 5, 3, 1, 7};
    OqcHist h = make_hist(8, 8, b);
    OqcCalibEntry e;
    double div[8];
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_ENTROPY, 1, 2, &e, div), 7.5f);
    CLOSE(div[7], 0.097491, 1e-5);
    CLOSE(div[6], 0.148169, 1e-5);
    for (int i = 2; i < 7; i++)
        CU_ASSERT(div[i] > div[7]);
    CLOSE(e.clipped, 3.5 / 22, 1e-15);
    free(h.bins);
}

/* The default entropy search leaves bin 0 out (docs/calibration.md): a spike of exact
 * zeros, as after a ReLU, cannot move T.  Exact: the search sees the same counts. */
static void test_entropy_ignores_bin0(void) {
    uint64_t b[512];
    for (int k = 0; k < 512; k++)   /* a decaying tail with a few far outliers */
        b[k] = (uint64_t)(2e5 * exp(-k / 60.0)) + (k % 97 == 0);
    OqcCalibEntry e1, e2, e3;
    OqcHist h = make_hist(4, 512, b);
    float t_none, t_spike, t_literal;
    h.bins[0] = 0;
    t_none = threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e1, NULL);
    h.bins[0] = 50000000;   /* 50M exact zeros: over 90% of all values */
    t_spike = threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e2, NULL);
    CU_ASSERT_EQUAL(t_none, t_spike);
    /* The literal steps (bin 0 kept) let the spike pull T far down (here to about half
     * of the default's): the failure the default avoids. */
    t_literal = threshold(&h, OQC_CALIB_ENTROPY, 1, 128, &e3, NULL);
    CU_ASSERT(t_literal < 0.6f * t_spike);
    /* the clipped share still counts bin 0's values */
    CU_ASSERT(e2.clipped < e1.clipped);
    free(h.bins);
}

static void test_entropy_edge_cases(void) {
    OqcCalibEntry e;
    double div[8];
    /* Empty histogram, amax 0: T = amax, no divergence. */
    OqcHist empty = make_hist(3, 8, NULL);
    CU_ASSERT_EQUAL(threshold(&empty, OQC_CALIB_ENTROPY, 0, 2, &e, div), 3.0f);
    CU_ASSERT(isnan(e.kl) && e.clipped == 0);
    for (int i = 0; i < 8; i++)
        CU_ASSERT(isnan(div[i]));
    free(empty.bins);
    const uint64_t b[8] = {5, 1, 1, 1, 1, 1, 1, 1};
    OqcHist zero = make_hist(0, 8, b);
    CU_ASSERT_EQUAL(threshold(&zero, OQC_CALIB_ENTROPY, 0, 2, &e, div), 0.0f);
    CU_ASSERT_EQUAL(threshold(&zero, OQC_CALIB_MSE, 0, 128, &e, NULL), 0.0f);
    free(zero.bins);
    /* No candidate (N <= L): T = amax. */
    OqcHist few = make_hist(2, 8, b);
    CU_ASSERT_EQUAL(threshold(&few, OQC_CALIB_ENTROPY, 0, 128, &e, div), 2.0f);
    CU_ASSERT(isnan(e.kl));
    /* Every count in the last bin: Q is all zero for every candidate (bins [0, i) are
     * empty), so no candidate can be evaluated: T = amax. */
    const uint64_t top[8] = {0, 0, 0, 0, 0, 0, 0, 9};
    OqcHist t = make_hist(2, 8, top);
    CU_ASSERT_EQUAL(threshold(&t, OQC_CALIB_ENTROPY, 0, 2, &e, div), 2.0f);
    for (int i = 0; i < 8; i++)
        CU_ASSERT(isnan(div[i]));
    free(t.bins);
    /* Non-finite amax: -1 (the caller reports the data). */
    few.amax = INFINITY;
    CU_ASSERT_EQUAL(oqc_calib_threshold(&few, OQC_CALIB_MAX, 0, 128, &e, NULL), -1);
    free(few.bins);
}

/* ------------------------------------------------------------------ entropy reference */

/* The contract transcribed directly: divergence of candidate i, NaN if not evaluable. */
static double ref_divergence(const uint64_t *b, int n, int i, int L) {
    double *P = calloc((size_t)i, sizeof *P), *Q = calloc((size_t)i, sizeof *Q);
    double sp = 0, sq = 0, kl = 0;
    for (int k = 0; k < n; k++)
        sp += (double)b[k];
    for (int k = 0; k < i; k++)
        P[k] = (double)b[k];
    for (int k = i; k < n; k++)
        P[i - 1] += (double)b[k];
    int g = i / L;
    for (int j = 0; j < L; j++) {
        int lo = j * g, hi = j == L - 1 ? i : lo + g, nz = 0;
        double s = 0;
        for (int k = lo; k < hi; k++) {
            s += (double)b[k];
            nz += P[k] != 0;
        }
        for (int k = lo; k < hi; k++)
            Q[k] = P[k] != 0 ? s / nz : 0;
    }
    for (int k = 0; k < i; k++)
        sq += Q[k];
    double *d[2] = {P, Q};
    for (int t = 0; t < 2; t++) { /* smoothing */
        int z = 0;
        for (int k = 0; k < i; k++)
            z += d[t][k] == 0;
        if (z == i)
            kl = NAN;
        for (int k = 0; k < i && z < i; k++) {
            d[t][k] = d[t][k] == 0 ? 1e-4 : d[t][k] - 1e-4 * z / (i - z);
            if (d[t][k] <= 0)
                kl = NAN;
        }
    }
    for (int k = 0; k < i && !isnan(kl); k++)
        kl += P[k] / sp * log((P[k] / sp) / (Q[k] / sq));
    free(P);
    free(Q);
    return kl;
}

static void test_entropy_matches_reference(void) {
    static const int sizes[][2] = {{8, 1}, {8, 2}, {8, 3}, {9, 4}, {64, 2}, {64, 16},
                                   {64, 64}, {300, 7}, {300, 128}, {515, 128}};
    rng_state = 42;
    int checked = 0, worst_rel_ok = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s][0], L = sizes[s][1];
        for (int shape = 0; shape < 6; shape++) {
            uint64_t *b = calloc((size_t)n, sizeof *b);
            for (int k = 0; k < n; k++) {
                double u = rng_uniform();
                switch (shape) {
                case 0: b[k] = rng_next() % 100; break;                   /* noisy */
                case 1: b[k] = u < 0.7 ? 0 : rng_next() % 5; break;       /* sparse */
                case 2: b[k] = (uint64_t)(1e6 * exp(-0.05 * k)); break;   /* decaying */
                case 3: b[k] = k < n / 3 ? 1000 + rng_next() % 10 : u < 0.05; break;
                case 4: b[k] = u < 0.02 ? 1 : 0; break;                   /* almost empty */
                default: b[k] = (uint64_t)(5e5 * exp(-0.5 * pow(k / (n / 8.0), 2))) +
                                (k == n - 1); break;                      /* an outlier */
                }
            }
            OqcHist h = make_hist(1, n, b);
            double *div = malloc((size_t)n * sizeof *div);
            OqcCalibEntry e;
            threshold(&h, OQC_CALIB_ENTROPY, 1, L, &e, div);
            int mref = -1;
            for (int i = L; i < n; i++) {
                double r = ref_divergence(b, n, i, L);
                CU_ASSERT_EQUAL(isnan(r), isnan(div[i]));
                if (!isnan(r) && !isnan(div[i]) &&
                    !(fabs(r - div[i]) <= 1e-9 * fabs(r) + 1e-13)) {
                    worst_rel_ok = 0;
                    printf("\n  n=%d L=%d shape %d i=%d: %.17g vs reference %.17g", n, L,
                           shape, i, div[i], r);
                }
                if (!isnan(r) && (mref < 0 || r < ref_divergence(b, n, mref, L)))
                    mref = i;
                checked++;
            }
            /* same choice, unless the two are a rounding-level tie */
            if (mref >= 0) {
                float tref = (float)((mref + 0.5) * 1.0 / n);
                CU_ASSERT(e.threshold == tref ||
                          fabs(div[mref] - e.kl) <= 1e-12 * fabs(e.kl) + 1e-15);
            } else {
                CU_ASSERT_EQUAL(e.threshold, 1.0f);
            }
            free(div);
            free(h.bins);
            free(b);
        }
    }
    CU_ASSERT(worst_rel_ok);
    CU_ASSERT(checked > 5000);
}

/* The search at the default size (N = 2048, 128 levels; also 255 levels and an N that
 * is no multiple of them) against ref_divergence, an O(N) transcription per candidate,
 * so O(N^2) per histogram, on histograms chosen to strain the prefix-sum evaluation
 * (compiler/calib/calib.c, entropy_divergence): counts near 1e12 (the sums of b log b are
 * ~1e16, their group differences small), counts 1 and 1e9 side by side (1/b sums and
 * b log b sums of very different sizes), all counts equal and periodic patterns (groups
 * with P == Q, summed bin by bin), empty-bin ratios either side of where smoothing
 * stops being a short series (one non-zero bin in 10, 11, 12), two spikes, a ReLU-like
 * tail, and equal counts under empty top bins (P == Q: exact ties at 0), in both the
 * contract's literal form (param 1) and the default that leaves bin 0 out.
 *
 * Tolerance: |div - ref| <= 1e-10 |ref| + 1e-12.  Measured worst: ~4e-14 (absolute,
 * on the ReLU-like tail near the top candidates, where div ~ 1e-4), the same for the
 * O(N)-per-candidate search this one replaced: the reference's own rounding, as it
 * sums normalised terms of size up to ~1 into results near 1e-4.  The bound is 25 times
 * that, while a wrong term (a missed smoothing correction is ~1e-5, a wrong group
 * ~1e-3) is far outside it.  The chosen candidate must be the reference's, or one
 * whose reference divergence is within that
 * tolerance of the reference's minimum (a rounding-level tie). */
static void test_entropy_prefix_vs_reference(void) {
    static const int shapes[][2] = {{2048, 128}, {2048, 255}, {2000, 128}};
    rng_state = 7;
    double worst = 0;
    int checked = 0, bad = 0, choice_bad = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        int n = shapes[sh][0], L = shapes[sh][1];
        for (int kind = 0; kind < 11; kind++) {
            uint64_t *b = calloc((size_t)n, sizeof *b);
            for (int k = 0; k < n; k++) {
                double u = rng_uniform();
                switch (kind) {
                case 0: b[k] = 1000000000000ull + rng_next() % 1000000; break; /* ~1e12 */
                case 1: b[k] = u < 0.5 ? 1 : 1000000000; break;       /* 1 and 1e9 */
                case 2: b[k] = 7; break;                              /* all equal */
                case 3: b[k] = k % 3 == 0 ? 5 : 0; break;             /* periodic */
                case 4: b[k] = k % 10 == 0 ? 1 + rng_next() % 3 : 0; break; /* 1 in 10 */
                case 5: b[k] = k % 11 == 0 ? 1 + rng_next() % 3 : 0; break; /* 1 in 11 */
                case 6: b[k] = k % 12 == 0 ? 1 : 0; break;            /* 1 in 12 */
                case 7: b[k] = k == 5 ? 1000000 : k == n - 1 ? 3 : 0; break; /* spikes */
                case 8: b[k] = (uint64_t)(4e6 * exp(-k / 150.0)) + (k == n - 1); break;
                case 9: b[k] = k < n / 2 ? 7 : 0; break; /* top half empty: P == Q */
                default: b[k] = rng_next() % 50 < 3 ? rng_next() % 100000 : rng_next() % 4;
                }
            }
            for (int param = 0; param < 2; param++) {
                /* the default leaves bin 0 out: the reference sees it as empty */
                uint64_t b0 = b[0];
                if (param == 0)
                    b[0] = 0;
                double *div = malloc((size_t)n * sizeof *div);
                OqcHist h = make_hist(1, n, b);
                if (param == 0)
                    h.bins[0] = b0; /* what the search itself drops */
                OqcCalibEntry e;
                threshold(&h, OQC_CALIB_ENTROPY, param, L, &e, div);
                int mref = -1;
                double rmin = 0, *ref = malloc((size_t)n * sizeof *ref);
                for (int i = L; i < n; i++) {
                    ref[i] = ref_divergence(b, n, i, L);
                    CU_ASSERT_EQUAL(isnan(ref[i]), isnan(div[i]));
                    if (isnan(ref[i]) || isnan(div[i]))
                        continue;
                    double err = fabs(ref[i] - div[i]);
                    worst = err > worst ? err : worst;
                    if (!(err <= 1e-10 * fabs(ref[i]) + 1e-12) && bad++ < 5)
                        printf("\n  n=%d L=%d kind %d param %d i=%d: %.17g vs reference %.17g",
                               n, L, kind, param, i, div[i], ref[i]);
                    /* all equal, no outliers: P == Q, exactly 0 (a tie the first wins) */
                    if (kind == 9 && i >= n / 2)
                        CU_ASSERT_EQUAL(div[i], 0);
                    if (mref < 0 || ref[i] < rmin) {
                        mref = i;
                        rmin = ref[i];
                    }
                    checked++;
                }
                int m = (int)lround(e.threshold * n - 0.5); /* T = (m + 0.5) / n */
                if (mref < 0) {
                    CU_ASSERT_EQUAL(e.threshold, 1.0f);
                } else if (m != mref &&
                           !(m >= L && m < n && fabs(ref[m] - rmin) <= 1e-10 * fabs(rmin) + 1e-12)) {
                    choice_bad++;
                    printf("\n  n=%d L=%d kind %d param %d: chose %d, reference %d", n, L, kind,
                           param, m, mref);
                }
                b[0] = b0;
                free(ref);
                free(div);
                free(h.bins);
            }
            free(b);
        }
    }
    printf("\n  %d candidates, worst |div - reference| %.3g", checked, worst);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(choice_bad, 0);
    CU_ASSERT(checked > 100000);
}

/* ------------------------------------------------------------------ realistic data */

static void test_entropy_uniform_near_amax(void) {
    /* Uniform |x| on [0, 1): every candidate below N leaves outliers piled into P's last
     * bin, which Q (spread evenly) cannot match, so the divergence falls towards the
     * last candidates and T ends near amax. */
    enum { N = 1000000 };
    float *x = malloc(N * sizeof *x);
    rng_state = 1;
    for (int i = 0; i < N; i++)
        x[i] = (float)(2 * rng_uniform() - 1);
    OqcHist h = hist_of(x, N, 2048);
    OqcCalibEntry e;
    float t = threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e, NULL);
    printf("\n  uniform: entropy T = %.4f amax (KL %.3g)", t / h.amax, e.kl);
    CU_ASSERT(t >= 0.9f * h.amax && t <= h.amax);
    CU_ASSERT(e.clipped < 0.1);
    free(h.bins);
    free(x);
}

/* 1e6 samples of N(0,1) and 10 values at 100. */
static float *gauss_with_outliers(int64_t *n) {
    *n = 1000000 + 10;
    float *x = malloc((size_t)*n * sizeof *x);
    rng_state = 2;
    for (int64_t i = 0; i < *n; i++)
        x[i] = i < 1000000 ? (float)rng_gauss() : (i % 2 ? 100.0f : -100.0f);
    return x;
}

static void test_gaussian_outliers(void) {
    int64_t n;
    float *x = gauss_with_outliers(&n);
    OqcHist h = hist_of(x, n, 2048);
    OqcCalibEntry e;
    CU_ASSERT_EQUAL(h.amax, 100.0f);
    float te = threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e, NULL);
    printf("\n  gaussian + outliers (amax 100): entropy T = %.3f, clipped %.2g", te,
           e.clipped);
    CU_ASSERT(te < 0.2f * h.amax);
    CU_ASSERT(te > 3.0f); /* the bulk of the Gaussian is kept */
    CU_ASSERT(e.clipped >= 10.0 / n && e.clipped < 0.01);
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_MAX, 0, 128, &e, NULL), h.amax);
    CU_ASSERT_EQUAL(e.clipped, 0);
    CU_ASSERT(isnan(e.kl));
    /* mse clips the outliers too, but squared error weighs them heavily: with the
     * whole Gaussian below T, E(T) = 1e6 (T/127)^2/12 + 10 (100 - T)^2 (+ a negligible
     * Gaussian tail), minimal where 2e6 T / 193548 = 20 (100 - T), i.e.
     * T = 2000 / (20 + 10.3334) = 65.93; T is a bin edge (width 100/2048 = .049). */
    float tm = threshold(&h, OQC_CALIB_MSE, 0, 128, &e, NULL);
    printf(", mse T = %.3f", tm);
    CLOSE(tm, 65.934, 0.05);
    CU_ASSERT(e.clipped > 0 && e.clipped <= 10.0 / n);
    free(h.bins);
    free(x);
}

static void test_percentile(void) {
    /* 10000 bins with one count each (amax 10000: bin k holds [k, k+1)). 99.99% of
     * 10000 counts = 9999, first reached at bin 9998, whose upper edge is 9999. */
    uint64_t *ones = malloc(10000 * sizeof *ones);
    for (int k = 0; k < 10000; k++)
        ones[k] = 1;
    OqcHist h = make_hist(10000, 10000, ones);
    OqcCalibEntry e;
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_PERCENTILE, 99.99, 128, &e, NULL), 9999.0f);
    CLOSE(e.clipped, 1e-4, 1e-15);
    CU_ASSERT(isnan(e.kl));
    /* 50%: 5000 counts reached at bin 4999, edge 5000; 100%: amax; a tiny P: bin 0. */
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_PERCENTILE, 50, 128, &e, NULL), 5000.0f);
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_PERCENTILE, 100, 128, &e, NULL), 10000.0f);
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_PERCENTILE, 1e-9, 128, &e, NULL), 1.0f);
    free(h.bins);
    free(ones);
    /* From samples of a known CDF: |x| = (k + 0.5) / 1e6 for k < 1e6, uniform on [0, 1)
     * with amax = 1 - 5e-7. 99.99% of the counts are reached with the value 0.9999, so
     * T is the upper edge of the bin holding 0.9999: between 0.9999 and one bin width
     * (amax / 2048) above it (here the last bin: T = amax). 90%: the bin holding 0.9,
     * and about 10% of the counts (to within one bin's share, 1/2048) lie above T. */
    enum { S = 1000000 };
    float *x = malloc(S * sizeof *x);
    for (int k = 0; k < S; k++)
        x[k] = (float)((k + 0.5) / S) * (k % 2 ? 1 : -1);
    OqcHist u = hist_of(x, S, 2048);
    float t = threshold(&u, OQC_CALIB_PERCENTILE, 99.99, 128, &e, NULL);
    CU_ASSERT(t >= 0.9999f && t <= 0.9999f + u.amax / 2048);
    t = threshold(&u, OQC_CALIB_PERCENTILE, 90, 128, &e, NULL);
    CU_ASSERT(t >= 0.9f && t <= 0.9f + u.amax / 2048 + 1e-6f);
    CLOSE(e.clipped, 0.1, 1.0 / 2048);
    free(u.bins);
    free(x);
}

static void test_mse_hand(void) {
    /* bins [1e6, 0,0,0,0,0,0, 1], amax 8 (width 1, centres k + 0.5), s = T/127.
     * E(t) = (counts at or below bin t) s^2/12 + sum over bins above t of b (c - T)^2:
     *   T = 1: 1e6 (1/127)^2/12 + (7.5 - 1)^2 = 5.167 + 42.25 = 47.42
     *   T = 2: 1e6 (2/127)^2/12 + (7.5 - 2)^2 = 20.67 + 30.25 = 50.92
     *   T = 3: 46.50 + 20.25 = 66.75 ... growing (the rounding term grows as T^2)
     *   T = 8: (1e6 + 1) (8/127)^2/12 = 330.7
     * so mse clips the outlier: T = 1, clipped = 1 / (1e6 + 1).
     * Unsigned (levels 255, s = T/255, rounding 4x cheaper): T = 1: 1.28 + 42.25 =
     * 43.53; T = 2: 5.13 + 30.25 = 35.38; T = 3: 11.53 + 20.25 = 31.78; T = 4: 20.50 +
     * 12.25 = 32.75; T = 5: 32.03 + 6.25 = 38.28; ... T = 8: 82.02: T = 3. */
    uint64_t b[8] = {1000000, 0, 0, 0, 0, 0, 0, 1};
    OqcHist h = make_hist(8, 8, b);
    OqcCalibEntry e;
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_MSE, 0, 128, &e, NULL), 1.0f);
    CLOSE(e.clipped, 1.0 / 1000001, 1e-18);
    CU_ASSERT(isnan(e.kl));
    CU_ASSERT_EQUAL(threshold(&h, OQC_CALIB_MSE, 0, 255, &e, NULL), 3.0f);
    /* A tensor stored as u8 is rounded with s = T/255 whatever the entropy levels: mse
     * models that step (with T/127 it would overstate the rounding error 4x, T = 1). */
    memset(&e, 0, sizeof e);
    e.is_unsigned = 1;
    CU_ASSERT(oqc_calib_threshold(&h, OQC_CALIB_MSE, 0, 128, &e, NULL) == 0);
    CU_ASSERT(e.threshold == 3.0f && e.scale == 3.0f / 255);
    /* bins [100,0,0,1], amax 4: T = 1: 100 (1/127)^2/12 + 2.5^2 = 6.2505;
     * T = 2: .0021 + 2.25; T = 3: .00465 + .25 = .2547; T = 4: 101 (4/127)^2/12 = .00835:
     * too few values for rounding to matter: T = amax, nothing clipped. */
    uint64_t c[4] = {100, 0, 0, 1};
    OqcHist g = make_hist(4, 4, c);
    CU_ASSERT_EQUAL(threshold(&g, OQC_CALIB_MSE, 0, 128, &e, NULL), 4.0f);
    CU_ASSERT_EQUAL(e.clipped, 0);
    /* 1e5 in bin 0: T = 1: 1e5 (1/127)^2/12 + 2.5^2 = .52 + 6.25 = 6.77; T = 2:
     * 2.07 + 2.25 = 4.32; T = 3: 4.65 + .25 = 4.90; T = 4: (1e5 + 1) (4/127)^2/12 = 8.27:
     * the optimum is T = 2 (clipping 1 of 100001). */
    c[0] = 100000;
    free(g.bins);
    g = make_hist(4, 4, c);
    CU_ASSERT_EQUAL(threshold(&g, OQC_CALIB_MSE, 0, 128, &e, NULL), 2.0f);
    free(g.bins);
    free(h.bins);
}

static void test_max_and_scale(void) {
    uint64_t b[4] = {3, 2, 1, 1};
    OqcHist h = make_hist(2.5f, 4, b);
    OqcCalibEntry e;
    memset(&e, 0, sizeof e);
    e.is_unsigned = 1;
    CU_ASSERT_EQUAL(oqc_calib_threshold(&h, OQC_CALIB_MAX, 0, 128, &e, NULL), 0);
    CU_ASSERT_EQUAL(e.threshold, 2.5f);
    CU_ASSERT_EQUAL(e.scale, 2.5f / 255);
    CU_ASSERT(e.clipped == 0 && isnan(e.kl) && e.amax == 2.5f);
    free(h.bins);
}

/* ------------------------------------------------------------------ timing */

static double cpu_ms(void) { /* CPU time: the machine may be busy */
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_entropy_time(void) {
    /* Two activation-like tensors, 1e6 values each: ReLU of a Gaussian (half the
     * values in bin 0, a tail thinning into empty bins) and a heavy-tailed Laplace. */
    enum { N = 1000000 };
    float *x = malloc(N * sizeof *x);
    double *div = malloc(2048 * sizeof *div);
    rng_state = 3;
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < N; i++) {
            double g = rng_gauss(), u = rng_uniform(), v = rng_uniform();
            x[i] = (float)(kind == 0 ? (g > 0 ? g : 0) : (u < 0.5 ? 1 : -1) * -log(1 - v));
        }
        double t0 = cpu_ms();
        OqcHist h = hist_of(x, N, 2048);
        double t1 = cpu_ms();
        OqcCalibEntry e;
        float t = threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e, div);
        double t2 = cpu_ms();
        int zeros = 0;
        for (int k = 0; k < 2048; k++)
            zeros += h.bins[k] == 0;
        printf("\n  %s: histogram of 1e6 values %.2f ms, entropy search %.2f ms (CPU) "
               "(%d empty bins; T = %.3f of amax %.3f)", kind ? "laplace" : "relu(gauss)",
               t1 - t0, t2 - t1, zeros, t, h.amax);
        CU_ASSERT(t2 - t1 < 500);
        CU_ASSERT(t > 0 && t < h.amax);
        free(h.bins);
    }
    free(div);
    free(x);
}

/* ------------------------------------------------------------------ TensorRT cache */

/* Reads a cache, expecting success; prints the error otherwise. */
static int read_trt(const char *path, OqcArena *a, OqcCalibEntry **e, int *n) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_table_read_trt(path, a, e, n, &d);
    if (rc < 0)
        printf("\n  %s", d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc;
}

static int write_trt(const char *path, const char *kind, const OqcCalibEntry *e, int n) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_table_write_trt(path, kind, e, n, &d);
    if (rc < 0)
        printf("\n  %s", d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc;
}

static void test_trt_published_example(void) {
    /* The line from the contract. 0x3c88edfc: sign 0, exponent 0x79 = 121 (2^-6),
     * mantissa 0x08edfc: scale = (1 + 0x08edfc / 2^23) * 2^-6 = 0.016715...,
     * T = 127 * scale = 2.1228... */
    const char *text = "TRT-8601-EntropyCalibration\nconv1: 3c88edfc\n";
    const char *in = oqc_test_tmp("example.cache"), *out = oqc_test_tmp("example.out");
    CU_ASSERT_EQUAL(oqc_test_write_file(in, text, strlen(text)), 0);
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e;
    int n;
    CU_ASSERT_FATAL(read_trt(in, a, &e, &n) == 0 && n == 1);
    CU_ASSERT_STRING_EQUAL(e[0].name, "conv1");
    CU_ASSERT_EQUAL(float_bits(e[0].scale), 0x3c88edfcu);
    CLOSE(e[0].scale, (1 + 0x08edfc / 8388608.0) / 64, 1e-12);
    CU_ASSERT_EQUAL(e[0].threshold, e[0].scale * 127.0f);
    CU_ASSERT_EQUAL(e[0].amax, e[0].threshold);
    CU_ASSERT(!e[0].is_unsigned && !strcmp(e[0].method, "table"));
    CU_ASSERT(isnan(e[0].kl) && isnan(e[0].clipped) && !e[0].hist && e[0].shape.rank == -1);
    CU_ASSERT_EQUAL(write_trt(out, "Entropy", e, n), 0);
    CU_ASSERT(oqc_test_same_file(in, out));
    /* Upper-case hex and CRLF line ends are read; the cache is written canonically. */
    const char *crlf = "TRT-7000-EntropyCalibration2\r\nconv1: 3C88EDFC\r\n";
    CU_ASSERT_EQUAL(oqc_test_write_file(in, crlf, strlen(crlf)), 0);
    CU_ASSERT_FATAL(read_trt(in, a, &e, &n) == 0 && n == 1);
    CU_ASSERT_EQUAL(float_bits(e[0].scale), 0x3c88edfcu);
    CU_ASSERT_EQUAL(write_trt(out, "EntropyCalibration2", e, n), 0);
    char *got = oqc_test_read_file(out, NULL);
    CU_ASSERT(got && !strcmp(got, "TRT-8601-EntropyCalibration2\nconv1: 3c88edfc\n"));
    free(got);
    oqc_arena_free(a);
}

static void test_trt_round_trip(void) {
    /* Calibrated entries (scale = T / 127), an unsigned one (written as T / 127, read
     * back as a signed entry), odd names (':' and spaces, TensorRT's unnamed layers,
     * a name ending in ": " that only a last-": " split gets right), extreme floats. */
    const char *names[] = {"input", "a: b:c d", "(Unnamed Layer* 3) [Scale]_output",
                           "ends with: ", "x", "/stage1/conv/Relu_output_0", "uns"};
    const float ts[] = {2.1228f, 0.5f, 1e-30f, 7.0f, 3.4e38f, 0.0f, 2.55f};
    OqcCalibEntry in[7];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 7; i++) {
        in[i].name = names[i];
        in[i].threshold = ts[i];
        in[i].is_unsigned = i == 6;
        in[i].scale = ts[i] / (in[i].is_unsigned ? 255.0f : 127.0f);
        in[i].amax = ts[i];
        in[i].method = "entropy";
    }
    const char *p1 = oqc_test_tmp("rt1.cache"), *p2 = oqc_test_tmp("rt2.cache");
    CU_ASSERT_EQUAL(write_trt(p1, "MinMax", in, 7), 0);
    char *text = oqc_test_read_file(p1, NULL);
    CU_ASSERT(text && !strncmp(text, "TRT-8601-MinMaxCalibration\ninput: ", 34));
    CU_ASSERT(text && strstr(text, "\na: b:c d: 3b810204\n")); /* 0.5f / 127 */
    free(text);
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e;
    int n;
    CU_ASSERT_FATAL(read_trt(p1, a, &e, &n) == 0 && n == 7);
    for (int i = 0; i < 7; i++) {
        CU_ASSERT_STRING_EQUAL(e[i].name, names[i]);
        float want = i == 6 ? ts[i] / 127.0f : in[i].scale;
        CU_ASSERT_EQUAL(float_bits(e[i].scale), float_bits(want));
        CU_ASSERT_EQUAL(e[i].threshold, want * 127.0f);
        CU_ASSERT_EQUAL(e[i].is_unsigned, 0);
    }
    CU_ASSERT_EQUAL(write_trt(p2, "MinMax", e, n), 0);
    CU_ASSERT(oqc_test_same_file(p1, p2));
    /* A scale whose threshold does not give it back as T / 127 (0x00810240: T = s * 127
     * rounds so that T / 127 != s) still round-trips: the entry's scale is written. */
    const char *odd = "TRT-8601-EntropyCalibration\nt: 00810240\n";
    CU_ASSERT_EQUAL(oqc_test_write_file(p1, odd, strlen(odd)), 0);
    CU_ASSERT_FATAL(read_trt(p1, a, &e, &n) == 0 && n == 1);
    CU_ASSERT(e[0].threshold / 127.0f != e[0].scale);
    CU_ASSERT_EQUAL(write_trt(p2, "Entropy", e, n), 0);
    CU_ASSERT(oqc_test_same_file(p1, p2));
    /* Empty lines are skipped; a header alone is an empty table. */
    const char *blank = "TRT-1-LegacyCalibration\n\nt: 3c88edfc\n\n";
    CU_ASSERT_EQUAL(oqc_test_write_file(p1, blank, strlen(blank)), 0);
    CU_ASSERT(read_trt(p1, a, &e, &n) == 0 && n == 1);
    CU_ASSERT_EQUAL(oqc_test_write_file(p1, "TRT-8601-EntropyCalibration", 27), 0);
    CU_ASSERT(read_trt(p1, a, &e, &n) == 0 && n == 0);
    oqc_arena_free(a);
}

/* Expects oqc_table_read_trt/xml on text to fail with a message containing want. */
static void expect_bad(int xml, const char *text, const char *want) {
    const char *path = oqc_test_tmp(xml ? "bad.xml" : "bad.cache");
    CU_ASSERT_EQUAL_FATAL(oqc_test_write_file(path, text, strlen(text)), 0);
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e = (OqcCalibEntry *)1;
    int n = -1;
    int64_t samples = -1;
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = xml ? oqc_table_read_xml(path, a, &e, &n, &samples, &d)
                 : oqc_table_read_trt(path, a, &e, &n, &d);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT(e == NULL && n == 0);
    char loc[300];
    snprintf(loc, sizeof loc, "%s%s", path, want);
    int ok = d.buf && strstr(d.buf, loc) != NULL;
    CU_ASSERT(ok);
    if (!ok)
        printf("\n  expected '%s' in: %s", loc, d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    oqc_arena_free(a);
}

#define HDR "TRT-8601-EntropyCalibration\n"

static void test_trt_malformed(void) {
    static const char *const cases[][2] = { /* file text, expected ":LINE: message" */
        {"", ":1: empty file"},
        {"conv1: 3c88edfc\n", ":1: not a TensorRT calibration cache"},
        {"TRT-8601-Entropy\n", ":1: not a TensorRT"},
        {"TRT--EntropyCalibration\n", ":1: not a TensorRT"},
        {HDR "conv1 3c88edfc\n", ":2: expected 'TENSOR_NAME: HHHHHHHH'"},
        {HDR "a: 3c88edfc\nb:3c88edfc\n", ":3: expected"},
        {HDR ": 3c88edfc\n", ":2: expected"},
        {HDR "conv1: 3c88edf\n", ":2: the value '3c88edf' is not 8 hex digits"},
        {HDR "conv1: 3c88edfc0\n", ":2: the value"},
        {HDR "conv1: 0x88edfc\n", ":2: the value"},
        {HDR "conv1: 3c88edfc \n", ":2: the value"},
        {HDR "conv1: bc88edfc\n", ":2: tensor 'conv1': scale bc88edfc is negative"},
        {HDR "conv1: 7fc00000\n", ":2: tensor 'conv1': scale 7fc00000 is not a finite number"},
        {HDR "conv1: 7f800000\n", ":2: tensor 'conv1'"},
        {HDR "x: 3c88edfc\ny: 3c88edfc\nx: 3c000000\n",
         ":4: tensor 'x' is listed twice (first on line 2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_bad(0, cases[i][0], cases[i][1]);
    const char nul[] = "TRT-8601-EntropyCalibration\na\0b: 3c88edfc\n";
    const char *path = oqc_test_tmp("nul.cache");
    CU_ASSERT_EQUAL(oqc_test_write_file(path, nul, sizeof nul - 1), 0);
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e;
    int n;
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL(oqc_table_read_trt(path, a, &e, &n, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, ":2: the line contains a NUL byte"));
    CU_ASSERT_EQUAL(oqc_table_read_trt(oqc_test_tmp("missing.cache"), a, &e, &n, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "missing.cache: cannot open"));
    oqc_diag_free(&d);
    oqc_arena_free(a);
}

static void test_trt_write_errors(void) {
    OqcCalibEntry e[2];
    memset(e, 0, sizeof e);
    e[0].name = "ok";
    e[0].threshold = 1;
    e[0].scale = 1.0f / 127;
    e[1] = e[0];
    e[1].name = "line\nbreak";
    const char *path = oqc_test_tmp("w.cache");
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy", e, 2, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "tensor 'line\\x0abreak': a name containing a newline"));
    CU_ASSERT(access(path, F_OK) != 0); /* nothing written, no temporary left */
    e[1].name = "";
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy", e, 2, &d), -1);
    e[1].name = "nan";
    e[1].threshold = NAN;
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy", e, 2, &d), -1);
    e[1].threshold = 1;
    e[1].scale = 0.5f; /* not T / 127 */
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy", e, 2, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "tensor 'nan': scale 0.5 is not threshold 1 / 127"));
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy-2", e, 1, &d), -1);
    e[1] = e[0]; /* the same name twice: the cache could not be read back */
    CU_ASSERT_EQUAL(oqc_table_write_trt(path, "Entropy", e, 2, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "tensor 'ok' has two entries"));
    CU_ASSERT_EQUAL(oqc_table_write_trt("/nonexistent-dir/x.cache", "Entropy", e, 1, &d), -1);
    CU_ASSERT(access(path, F_OK) != 0);
    CU_ASSERT_EQUAL(d.nerrors, 7);
    oqc_diag_free(&d);
    /* NULL kind means Entropy. */
    CU_ASSERT_EQUAL(write_trt(path, NULL, e, 1), 0);
    char *text = oqc_test_read_file(path, NULL);
    CU_ASSERT(text && !strcmp(text, "TRT-8601-EntropyCalibration\nok: 3c010204\n"));
    free(text);
}

/* ------------------------------------------------------------------ XML */

/* xmllint --relaxng against the schema; prints its complaint on failure. */
static int xmllint_ok(const char *xml) {
    char cmd[1024];
    const char *log = oqc_test_tmp("xmllint.log");
    snprintf(cmd, sizeof cmd, "xmllint --noout --relaxng %s '%s' >'%s' 2>&1", SCHEMA, xml,
             log);
    int rc = system(cmd);
    if (rc != 0) {
        char *out = oqc_test_read_file(log, NULL);
        printf("\n  xmllint: %s", out ? out : "(no output)");
        free(out);
    }
    return rc == 0;
}

static int read_xml(const char *path, OqcArena *a, OqcCalibEntry **e, int *n, int64_t *s) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_table_read_xml(path, a, e, n, s, &d);
    if (rc < 0)
        printf("\n  %s", d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc;
}

static int write_xml(const char *path, const OqcCalibEntry *e, int n, int64_t s) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_table_write_xml(path, e, n, s, &d);
    if (rc < 0)
        printf("\n  %s", d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc;
}

static void test_xml_round_trip(void) {
    /* Odd names: XML specials, a backslash, control bytes, a byte that is not UTF-8,
     * valid UTF-8; every method; signed and unsigned; floats that need all 9 digits. */
    const char *names[] = {"conv1", "a<b>&\"c'", "back\\slash", "tab\tnew\nline\r",
                           "bad\377byte", "caf\xc3\xa9 \xe2\x86\x92 out", "a: b:c d"};
    const char *methods[] = {"entropy", "max", "percentile:99.99", "mse", "table",
                             "entropy", "percentile:50"};
    OqcCalibEntry in[7];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 7; i++) {
        in[i].name = names[i];
        in[i].method = methods[i];
        in[i].amax = 3.0f + (float)i / 3;
        in[i].threshold = in[i].amax * (0.9f - (float)i / 97);
        in[i].is_unsigned = i % 2;
        in[i].scale = in[i].threshold / (in[i].is_unsigned ? 255.0f : 127.0f);
    }
    in[4].threshold = 0; /* an all-zero tensor */
    in[4].scale = 0;
    in[6].amax = 1e-40f; /* subnormal */
    in[6].threshold = 1e-40f;
    in[6].scale = in[6].threshold / 127.0f;
    /* channel thresholds (a channel-scale candidate): 9 digits, a zero, one channel */
    const float ch1[4] = {0.123456791f, 3.0f, 0.0f, 1e-30f}, ch3[1] = {2.5f};
    in[1].nch = 4;
    in[1].ch_threshold = ch1;
    in[3].nch = 1;
    in[3].ch_threshold = ch3;
    const char *p1 = oqc_test_tmp("t1.xml"), *p2 = oqc_test_tmp("t2.xml");
    CU_ASSERT_FATAL(write_xml(p1, in, 7, 1234) == 0);
    CU_ASSERT(xmllint_ok(p1));
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e;
    int n;
    int64_t s;
    CU_ASSERT_FATAL(read_xml(p1, a, &e, &n, &s) == 0 && n == 7);
    CU_ASSERT_EQUAL(s, 1234);
    for (int i = 0; i < 7; i++) {
        CU_ASSERT_STRING_EQUAL(e[i].name, names[i]);
        CU_ASSERT_STRING_EQUAL(e[i].method, methods[i]);
        CU_ASSERT_EQUAL(e[i].is_unsigned, in[i].is_unsigned);
        CU_ASSERT_EQUAL(float_bits(e[i].amax), float_bits(in[i].amax));
        CU_ASSERT_EQUAL(float_bits(e[i].threshold), float_bits(in[i].threshold));
        CU_ASSERT_EQUAL(float_bits(e[i].scale), float_bits(in[i].scale));
        CU_ASSERT_EQUAL_FATAL(e[i].nch, in[i].nch);
        for (int32_t c = 0; c < e[i].nch; c++)
            CU_ASSERT_EQUAL(float_bits(e[i].ch_threshold[c]), float_bits(in[i].ch_threshold[c]));
        CU_ASSERT(!e[i].hist && !e[i].divergence && isnan(e[i].kl) && e[i].shape.rank == -1);
    }
    CU_ASSERT_FATAL(write_xml(p2, e, n, s) == 0);
    CU_ASSERT(oqc_test_same_file(p1, p2));
    char *text = oqc_test_read_file(p1, NULL);
    CU_ASSERT(text && strstr(text, "name=\"tab\\x09new\\x0aline\\x0d\""));
    CU_ASSERT(text && strstr(text, "name=\"back\\\\slash\""));
    CU_ASSERT(text && strstr(text, "name=\"bad\\xffbyte\""));
    CU_ASSERT(text && strstr(text, " channels=\"0.123456791 3 0 1e-30\""));
    CU_ASSERT(text && strstr(text, "<oqc-calib version=\"1\" samples=\"1234\">"));
    free(text);
    /* An empty table. */
    CU_ASSERT_FATAL(write_xml(p1, NULL, 0, 0) == 0);
    CU_ASSERT(xmllint_ok(p1));
    CU_ASSERT(read_xml(p1, a, &e, &n, &s) == 0 && n == 0 && s == 0);
    /* TRT -> XML -> TRT keeps the scale bits. */
    const char *cache = oqc_test_tmp("x.cache"), *cache2 = oqc_test_tmp("x2.cache");
    const char *ct = "TRT-8601-EntropyCalibration\nconv1: 3c88edfc\nodd: 00810240\n";
    CU_ASSERT_EQUAL(oqc_test_write_file(cache, ct, strlen(ct)), 0);
    CU_ASSERT_FATAL(read_trt(cache, a, &e, &n) == 0);
    CU_ASSERT_FATAL(write_xml(p1, e, n, 0) == 0);
    CU_ASSERT(xmllint_ok(p1));
    CU_ASSERT_FATAL(read_xml(p1, a, &e, &n, &s) == 0);
    CU_ASSERT_EQUAL(write_trt(cache2, "Entropy", e, n), 0);
    CU_ASSERT(oqc_test_same_file(cache, cache2));
    oqc_arena_free(a);
}

#define XHEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define XT(attrs) /* a table with one tensor (on line 3) */                            \
    XHEAD "<oqc-calib version=\"1\" samples=\"3\">\n  <tensor " attrs "/>\n</oqc-calib>\n"
#define GOOD_ATTRS "name=\"a\" method=\"max\" unsigned=\"0\" amax=\"1.27\" threshold=\"1.27\" "

#define TENSOR2 "  <tensor name=\"a\" method=\"max\" unsigned=\"0\" amax=\"1.27\" " \
                "threshold=\"1.27\" scale=\"0.00999999978\"/>\n"

static void test_xml_malformed(void) {
    static const char *const cases[][2] = { /* file text, expected ":LINE: message" */
        {"<oqc-calib", ":1: not well-formed XML"},
        {XHEAD "<calib version=\"1\" samples=\"1\"/>\n", ":2: the root element is <calib>"},
        {XHEAD "<!DOCTYPE oqc-calib>\n<oqc-calib version=\"1\" samples=\"1\"/>\n",
         ": a DOCTYPE is not allowed"},
        {XHEAD "<oqc-calib version=\"2\" samples=\"1\"/>\n", ":2: <oqc-calib>: version '2'"},
        {XHEAD "<oqc-calib version=\"1\"/>\n",
         ":2: <oqc-calib>: missing attribute 'samples'"},
        {XHEAD "<oqc-calib version=\"1\" samples=\"-1\"/>\n",
         ":2: <oqc-calib>: attribute 'samples': '-1' is not an integer >= 0"},
        {XHEAD "<oqc-calib version=\"1\" samples=\"1\" extra=\"\"/>\n",
         ":2: <oqc-calib>: unknown attribute 'extra'"},
        {XHEAD "<oqc-calib version=\"1\" samples=\"1\">\n\n <entry/></oqc-calib>\n",
         ":4: <entry>: unexpected element inside <oqc-calib>"},
        {XHEAD "<oqc-calib version=\"1\" samples=\"1\">text</oqc-calib>\n",
         ":2: <oqc-calib>: unexpected text"},
        {XT(GOOD_ATTRS), ":3: <tensor>: missing attribute 'scale'"},
        {XT(GOOD_ATTRS "scale=\"0.02\""), ":3: <tensor>: tensor 'a': scale 0.0199999996 "
                                           "does not match threshold 1.26999998 / 127"},
        {XT(GOOD_ATTRS "scale=\"nan\""),
         ":3: <tensor>: attribute 'scale': 'nan' is not a finite number"},
        {XT(GOOD_ATTRS "scale=\"-0.01\""), ":3: <tensor>: attribute 'scale'"},
        {XT(GOOD_ATTRS "scale=\"0.01x\""), ":3: <tensor>: attribute 'scale'"},
        {XT(GOOD_ATTRS "scale=\"1e39\""), ":3: <tensor>: attribute 'scale'"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" dtype=\"s8\""),
         ":3: <tensor>: unknown attribute 'dtype'"},
        {XT("name=\"a\" method=\"kl\" unsigned=\"0\" amax=\"1\" threshold=\"1\" scale=\"1\""),
         ":3: <tensor>: tensor 'a': unknown method 'kl'"},
        {XT("name=\"a\" method=\"max\" unsigned=\"yes\" amax=\"1\" threshold=\"1\" "
            "scale=\"1\""), ":3: <tensor>: tensor 'a': attribute 'unsigned' is 'yes'"},
        {XT("name=\"\" method=\"max\" unsigned=\"0\" amax=\"1\" threshold=\"1\" scale=\"1\""),
         ":3: <tensor>: empty tensor name"},
        {XT("name=\"a\\q\" method=\"max\" unsigned=\"0\" amax=\"1\" threshold=\"1\" "
            "scale=\"1\""), ":3: <tensor>: name: bad escape"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" channels=\"1 2 \""),
         ":3: <tensor>: attribute 'channels': value 3 is not a finite number >= 0"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" channels=\"1  2\""),
         ":3: <tensor>: attribute 'channels': value 2 is not a finite number >= 0"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" channels=\"1 -2\""),
         ":3: <tensor>: attribute 'channels': value 2 is not"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" channels=\"\""),
         ":3: <tensor>: attribute 'channels': value 1 is not"},
        {XT(GOOD_ATTRS "scale=\"0.00999999978\" channels=\"1 nan\""),
         ":3: <tensor>: attribute 'channels': value 2 is not"},
        {XHEAD "<oqc-calib version=\"1\" samples=\"1\">\n" TENSOR2 TENSOR2 "</oqc-calib>\n",
         ":4: <tensor>: tensor 'a' is listed twice (first on line 3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_bad(1, cases[i][0], cases[i][1]);
    /* The last one, made valid, is accepted (the bad cases above fail for their reason). */
    const char *good = XT(GOOD_ATTRS "scale=\"0.00999999978\"");
    const char *path = oqc_test_tmp("good.xml");
    CU_ASSERT_EQUAL(oqc_test_write_file(path, good, strlen(good)), 0);
    CU_ASSERT(xmllint_ok(path));
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry *e;
    int n;
    int64_t s;
    CU_ASSERT(read_xml(path, a, &e, &n, &s) == 0 && n == 1 && s == 3);
    oqc_arena_free(a);
}

static void test_xml_write_errors(void) {
    OqcCalibEntry e;
    memset(&e, 0, sizeof e);
    e.name = "t";
    e.threshold = 1;
    e.scale = 1.0f / 127;
    e.amax = NAN;
    e.method = "max";
    const char *path = oqc_test_tmp("w.xml");
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL(oqc_table_write_xml(path, &e, 1, 1, &d), -1);
    e.amax = 1;
    e.method = NULL;
    CU_ASSERT_EQUAL(oqc_table_write_xml(path, &e, 1, 1, &d), -1);
    e.method = "max";
    e.is_unsigned = 1; /* scale is T / 127, not T / 255 */
    CU_ASSERT_EQUAL(oqc_table_write_xml(path, &e, 1, 1, &d), -1);
    CU_ASSERT(d.buf && strstr(d.buf, "is not threshold 1 / 255"));
    CU_ASSERT(access(path, F_OK) != 0);
    CU_ASSERT_EQUAL(d.nerrors, 3);
    oqc_diag_free(&d);
}

/* oqc_tune_samples: every ceil(total / want)-th sample across the files, in order, counted
 * first when the total is not given; all of them when want covers them. */
static void write_seq(const char *path, int64_t rows, float first) {
    float x[16];
    for (int i = 0; i < 2 * rows; i++)
        x[i] = first + (float)i;
    OqcValue v = {.dtype = OQCF_FLOAT, .shape = {.rank = 2, .d = {rows, 2}}, .data = x,
                  .nbytes = (size_t)(2 * rows) * sizeof(float)};
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL(oqc_npy_write(path, &v, &d), 0);
    oqc_diag_free(&d);
}

static void test_tune_samples(void) {
    const char *a_npy = oqc_test_tmp("tune_a.npy"), *b_npy = oqc_test_tmp("tune_b.npy");
    write_seq(a_npy, 3, 0);    /* samples 0..2: (2k, 2k + 1) */
    write_seq(b_npy, 4, 6);    /* samples 3..6 */
    const char *paths[] = {a_npy, b_npy};
    OqcShape in = {.rank = 2, .d = {1, 2}};
    for (int known = 0; known < 2; known++) {
        OqcArena *a = oqc_arena_new();
        OqcDiag d;
        oqc_diag_init(&d);
        OqcValue v;
        CU_ASSERT_EQUAL(oqc_tune_samples(paths, 2, NULL, &in, known ? 7 : 0, 3, a, &v, &d), 0);
        CU_ASSERT_EQUAL(v.shape.rank, 3);
        CU_ASSERT_EQUAL(v.shape.d[0], 3);   /* stride 3: samples 0, 3, 6 */
        const float *x = v.data, want[] = {0, 1, 6, 7, 12, 13};
        for (int i = 0; i < 6; i++)
            CU_ASSERT_EQUAL(x[i], want[i]);
        CU_ASSERT_EQUAL(v.nbytes, 6 * sizeof(float));
        CU_ASSERT_EQUAL(oqc_tune_samples(paths, 2, NULL, &in, known ? 7 : 0, 512, a, &v, &d), 0);
        CU_ASSERT_EQUAL(v.shape.d[0], 7);
        CU_ASSERT_EQUAL(((const float *)v.data)[13], 13);
        const char *missing[] = {oqc_test_tmp("tune_missing.npy")};
        CU_ASSERT_EQUAL(oqc_tune_samples(missing, 1, NULL, &in, 0, 3, a, &v, &d), -1);
        CU_ASSERT(d.buf && strstr(d.buf, "tune_missing.npy"));
        oqc_diag_free(&d);
        oqc_arena_free(a);
    }
}

OQC_TEST_MAIN("calib", OQC_TEST(test_expand_worked_example), OQC_TEST(test_method_parse),
              OQC_TEST(test_hist_placement), OQC_TEST(test_hist_batch_invariance),
              OQC_TEST(test_entropy_hand_smoothing), OQC_TEST(test_entropy_hand_ties),
              OQC_TEST(test_entropy_hand_seed_histogram), OQC_TEST(test_entropy_edge_cases),
              OQC_TEST(test_entropy_matches_reference), OQC_TEST(test_entropy_prefix_vs_reference),
              OQC_TEST(test_entropy_ignores_bin0),
              OQC_TEST(test_entropy_uniform_near_amax), OQC_TEST(test_gaussian_outliers),
              OQC_TEST(test_percentile), OQC_TEST(test_mse_hand), OQC_TEST(test_max_and_scale),
              OQC_TEST(test_entropy_time),
              OQC_TEST(test_trt_published_example), OQC_TEST(test_trt_round_trip),
              OQC_TEST(test_trt_malformed), OQC_TEST(test_trt_write_errors),
              OQC_TEST(test_xml_round_trip), OQC_TEST(test_xml_malformed),
              OQC_TEST(test_xml_write_errors), OQC_TEST(test_tune_samples))
