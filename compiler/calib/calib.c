/* calib.c - calibration: histograms of |x| and the four ways of picking the saturation
 * threshold T from one (see ir.h; user documentation and the exact definitions in
 * docs/calibration.md; the two change together; tests in tests/unit/test_calib.c).
 *
 * Histogram: N equal bins over [0, amax]; |x| goes to bin min((int)(|x| * (N / amax)),
 * N - 1), with N / amax computed once as a float, so the loop is one multiply, one min
 * and one conversion per value (vectorised) followed by the increments. Counts are
 * integers, so adding values in any number of calls gives the same bins.
 *
 * Methods (w = amax / N is the bin width, C the total count):
 *   max        T = amax.
 *   percentile T = (t + 1) w for the first bin t whose cumulative count reaches P% of C.
 *   mse        T = (t + 1) w minimising, with values at bin centres c_k = (k + 0.5) w and
 *              s = T / Lq (Lq = 255 for a u8 tensor or levels == 255, else 127),
 *                  E(t) = sum_{k <= t} b_k s^2 / 12  +  sum_{k > t} b_k (c_k - T)^2;
 *              the clipping sum is kept for every t by a recurrence of non-negative terms
 *              (no cancellation), so the whole search is O(N).
 *   entropy    TensorRT's search (GTC 2017 s7310) with the choices docs/calibration.md
 *              fixes; see entropy_divergence for how one candidate is evaluated in
 *              O(levels): sums over a group's bins are differences of prefix sums
 *              tabulated once, and one log per group (smoothing enters as a short
 *              series in the smoothing mass), so the search is O(N levels), not O(N^2).
 * In every method the first (smallest) T wins a tie. An empty histogram, amax == 0,
 * and an entropy search in which no candidate could be evaluated all give T = amax. */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ENTROPY_EPS 1e-4 /* mass given to each zero bin when smoothing (MXNet, ncnn) */
#define HIST_CHUNK 256   /* values whose bin indices are computed in one vector loop */

int oqc_calib_method_parse(const char *s, OqcCalibMethod *m, double *param, OqcDiag *d) {
    *param = 0;
    if (!strcmp(s, "entropy"))
        *m = OQC_CALIB_ENTROPY;
    else if (!strcmp(s, "max"))
        *m = OQC_CALIB_MAX;
    else if (!strcmp(s, "mse"))
        *m = OQC_CALIB_MSE;
    else if (!strncmp(s, "percentile:", 11)) {
        const char *p = s + 11;
        char *end = NULL;
        /* a plain decimal number: no sign, space, hex, inf or nan */
        int plain = (*p >= '0' && *p <= '9') || *p == '.';
        double v = plain && strspn(p, "0123456789.eE+-") == strlen(p) ? strtod(p, &end) : 0;
        if (!end || *end || !(v > 0 && v <= 100))
            return oqc_err(d, "calibration method '%s': the percentile must be a number with "
                              "0 < P <= 100 (e.g. percentile:99.99)", s);
        *m = OQC_CALIB_PERCENTILE;
        *param = v;
    } else {
        return oqc_err(d, "unknown calibration method '%s' (expected entropy, max, "
                          "percentile:P with 0 < P <= 100, or mse)", s);
    }
    return 0;
}

/* Bin index of each of x[0..m-1] for scale k = N / amax, top = N - 1. v < top ? v : top
 * is minps: NaN and |x| > amax (a caller bug) land in the last bin instead of
 * overflowing the conversion. */
static inline void bin_indices(const float *x, int m, float k, float top, int32_t *idx) {
    for (int j = 0; j < m; j++) {
        float v = fabsf(x[j]) * k;
        idx[j] = (int32_t)(v < top ? v : top);
    }
}

void oqc_hist_add(OqcHist *h, const float *x, int64_t n) {
    OQC_ASSERT(h->nbins >= 1 && h->bins && n >= 0);
    uint64_t *bins = h->bins;
    h->count += (uint64_t)n;
    if (!(h->amax > 0)) { /* amax == 0: every value is 0 and goes to bin 0 */
        bins[0] += (uint64_t)n;
        return;
    }
    const float k = (float)h->nbins / h->amax, top = (float)(h->nbins - 1);
    if (!isfinite(k)) { /* amax subnormal: N / amax overflows a float; rare, so scalar */
        for (int64_t i = 0; i < n; i++) {
            double v = fabs((double)x[i]) * h->nbins / h->amax;
            bins[(int)(v < top ? v : top)]++;
        }
        return;
    }
    int32_t idx[HIST_CHUNK];
    int64_t s = 0;
    for (; s + HIST_CHUNK <= n; s += HIST_CHUNK) { /* a constant count: gcc -O2 vectorises */
        bin_indices(x + s, HIST_CHUNK, k, top, idx);
        for (int j = 0; j < HIST_CHUNK; j++)
            bins[idx[j]]++;
    }
    bin_indices(x + s, (int)(n - s), k, top, idx);
    for (int j = 0; j < n - s; j++)
        bins[idx[j]]++;
}

void oqc_entropy_expand(const double *p, int i, int levels, double *q) {
    OQC_ASSERT(i >= 1 && levels >= 1);
    int L = levels < i ? levels : i; /* more levels than bins: one bin per group */
    int g = i / L;
    for (int j = 0; j < L; j++) {
        int lo = j * g, hi = j == L - 1 ? i : lo + g, nz = 0;
        double sum = 0;
        for (int k = lo; k < hi; k++) {
            sum += p[k];
            nz += p[k] != 0;
        }
        for (int k = lo; k < hi; k++)
            q[k] = p[k] != 0 ? sum / nz : 0;
    }
}

/* ============================================================== entropy */

/* An unevaluated sum hi + lo (double-double): added to with Knuth's two-sum, so a sum
 * of many terms, or the difference of two such sums, keeps ~1e-32 of their size. */
typedef struct DSum {
    double hi, lo;   /* the sum is hi + lo: lo gathers what rounding hi dropped */
} DSum;

static inline void dsum_add(DSum *s, double v) {
    double t = s->hi + v, bb = t - s->hi;
    s->lo += (s->hi - (t - bb)) + (v - bb);
    s->hi = t;
}

/* What every entropy candidate reads.  Computed once per histogram: arrays of N + 1
 * prefixes (entry k covers bins [0, k); the sums are over non-zero bins only).
 * Computed once per group size g (the L candidates i in [gL, gL + L) share it, and
 * with it the groups 0 .. L-2; only the last group changes): those groups' Q values and
 * the sums over them that entropy_divergence combines. */
typedef struct Entropy {
    int n;                /* N, the number of bins */
    const uint64_t *b;    /* the counts */
    double *bd;           /* b[k] as a double */
    double *lb;           /* log(b[k]), 0 for empty bins */
    uint64_t *cum;        /* cum[k]: sum of b[0..k-1] */
    int *nzc;             /* nzc[k]: number of non-zero bins among b[0..k-1] */
    uint64_t *minnz;      /* minnz[k]: smallest non-zero count in b[0..k-1] (or max) */
    int *nzi;             /* the non-zero bins in order: those in [lo, hi) are
                             nzi[nzc[lo] .. nzc[hi] - 1] */
    int *run;             /* run[p]: the first q <= p with nzi[q..p] all of one count */
    double *blb_hi, *blb_lo; /* sum of b log b, as a DSum per prefix */
    double *slb;          /* sum of log b */
    double *inv[4];       /* inv[m]: sum of 1 / b^(m+1) */
    /* the groups 0 .. L-2 of group size g */
    int g;                /* (0: none yet) */
    int *grp, ngrp;       /* those holding a non-zero bin, in order */
    int *geq, ngeq;       /* those whose non-zero counts are all equal, in order */
    double *gq, *glog, *ginv; /* per group: Q's value s / nz (count total over non-zero
                                 bins), its log and 1 / it */
    double minq;          /* the smallest Q value */
    double maxinv;        /* the largest 1 / Q value of the unequal groups */
    /* sums over the unequal groups (s: a group's count total, nz: its non-zero bins,
     * q = s / nz, sums over its non-zero bins inside) */
    DSum sb, a1;          /* sum of b log b; sum of s log q */
    double ss, snz, sslb; /* sum of s, of nz, of log b */
    double si[4];         /* sum of 1 / b^(m+1) */
    double a2;            /* sum of nz log q */
    double bq[4];         /* sum of nz / q^(m+1) */
} Entropy;

/* log(v - e) for the smoothed value v - e of a bin (v > e >= 0), given logv = log(v)
 * and inv = 1 / v.  For e <= 1e-3 v (nearly always: e = 1e-4 z/(i - z) and v >= 1 for
 * P) it is log v + log(1 - x), x = e / v, with the series -x - x^2/2 - x^3/3 - x^4/4,
 * whose truncation error x^5/5 <= 2e-16 is below the rounding of log v itself;
 * otherwise a log.  P's bins and Q's groups both go through this, so a bin of P equal
 * to its Q (same count, same e) gives exactly log P - log Q = 0. */
static inline double log_smoothed(double v, double logv, double inv, double e) {
    double x = e * inv;
    if (x > 1e-3)
        return log(v - e);
    return logv - x * (1 + x * (0.5 + x * (1.0 / 3 + x * 0.25)));
}

/* sum over bins k in [lo, hi) non-zero in P of pp (log pp + c), pp = b - e, where
 * e / b <= 1e-3 for every bin, in O(1).  With log pp = log b - S, S = x + x^2/2 + x^3/3
 * + x^4/4, x = e / b (log_smoothed's series), each bin's term expands exactly to
 *     b log b + c (b - e) - e log b - e + e^2/(2b) + e^3/(6b^2) + e^4/(12b^3) + e^5/(4b^4),
 * so the sum is made of the prefix sums of b log b, log b and 1/b^m, the count total
 * and the number of non-zero bins. */
static double group_sum(const Entropy *E, int lo, int hi, double e, double c) {
    int nz = E->nzc[hi] - E->nzc[lo];
    double s = (double)(E->cum[hi] - E->cum[lo]);
    double blb = (E->blb_hi[hi] - E->blb_hi[lo]) + (E->blb_lo[hi] - E->blb_lo[lo]);
    if (e == 0)
        return blb + c * s;
    double i1 = E->inv[0][hi] - E->inv[0][lo], i2 = E->inv[1][hi] - E->inv[1][lo];
    double i3 = E->inv[2][hi] - E->inv[2][lo], i4 = E->inv[3][hi] - E->inv[3][lo];
    double ser = e * e * (i1 * 0.5 + e * (i2 * (1.0 / 6) + e * (i3 * (1.0 / 12) + e * (i4 * 0.25))));
    return blb + c * (s - nz * e) - e * ((E->slb[hi] - E->slb[lo]) + nz) + ser;
}

/* One group's share of C * divergence: the sum over its bins [lo, hi) non-zero in P of
 * pp (log pp + c).  From the prefix sums (group_sum) when smoothing is small against
 * every count (series); bin by bin otherwise (exact logs), and when the group's counts
 * are all equal (eq: then P is Q there, and each bin adds the same single term, so
 * P == Q everywhere with no outliers gives exactly 0 and ties stay ties). */
static double group_term(const Entropy *E, int lo, int hi, int eq, double c, double e,
                         int series) {
    int p0 = E->nzc[lo], p1 = E->nzc[hi];
    if (p1 == p0)
        return 0;
    if (series && !eq)
        return group_sum(E, lo, hi, e, c);
    double acc = 0;
    for (int p = p0; p < p1; p++) {
        double bk = E->bd[E->nzi[p]];
        double t = (bk - e) * (log_smoothed(bk, E->lb[E->nzi[p]], 1 / bk, e) + c);
        if (series)
            return (p1 - p0) * t;
        acc += t;
    }
    return acc;
}

/* 1 when the non-zero counts of bins [lo, hi) are all equal (and there is one). */
static int all_equal(const Entropy *E, int lo, int hi) {
    int p0 = E->nzc[lo], p1 = E->nzc[hi];
    return p1 > p0 && E->run[p1 - 1] <= p0;
}

/* Fills E's per-group-size part for groups of g bins (see Entropy). */
static void entropy_groups(Entropy *E, int g, int L) {
    E->g = g;
    E->ngrp = E->ngeq = 0;
    E->minq = INFINITY;
    E->maxinv = 0;
    E->sb = E->a1 = (DSum){.hi = 0, .lo = 0};
    E->ss = E->snz = E->sslb = E->a2 = 0;
    for (int m = 0; m < 4; m++)
        E->si[m] = E->bq[m] = 0;
    int end = E->nzc[(L - 1) * g]; /* non-zero bins below the last group */
    for (int p = 0; p < end;) {
        int j = E->nzi[p] / g, lo = j * g, hi = lo + g;
        uint64_t s = E->cum[hi] - E->cum[lo];
        int nz = E->nzc[hi] - E->nzc[lo];
        double q = (double)s / nz, lq = log(q), inv = 1 / q;
        E->grp[E->ngrp++] = j;
        E->gq[j] = q;
        E->glog[j] = lq;
        E->ginv[j] = inv;
        E->minq = q < E->minq ? q : E->minq;
        if (all_equal(E, lo, hi)) {
            E->geq[E->ngeq++] = j;
        } else {
            E->maxinv = inv > E->maxinv ? inv : E->maxinv;
            dsum_add(&E->sb, E->blb_hi[hi] - E->blb_hi[lo]);
            dsum_add(&E->sb, E->blb_lo[hi] - E->blb_lo[lo]);
            dsum_add(&E->a1, (double)s * lq);
            E->ss += (double)s;
            E->snz += nz;
            E->sslb += E->slb[hi] - E->slb[lo];
            E->a2 += nz * lq;
            double pw = inv;
            for (int m = 0; m < 4; m++, pw *= inv) {
                E->si[m] += E->inv[m][hi] - E->inv[m][lo];
                E->bq[m] += nz * pw;
            }
        }
        p = E->nzc[hi];
    }
}

/* The divergence of candidate i (levels L <= i), or NaN when it cannot be evaluated:
 * Q would be all zero (every count is an outlier), or smoothing would take a bin of P
 * or Q to zero or below.
 *
 * With raw counts p_k (P) and q_k (Q), totals C = sum P (every count) and Sq = sum Q
 * (the counts below bin i), smoothing with z zero bins out of i gives zero bins eps and
 * non-zero bins p_k - e1 with e1 = eps z / (i - z), keeping the total. After
 * normalising, a bin contributes P log(P/Q) = (pp/C) log((pp/C) / (qq/Sq)), so
 *     C * divergence = sum_k pp_k (log pp_k - log qq_k + log(Sq/C)).
 * Bins zero in P are zero in Q too (pp = qq = eps): each adds eps log(Sq/C).  Q is
 * constant over the non-zero bins of a group, qq = q - f (f = e1 of Q), and P's
 * pp = b - e (e = e1 of P).  A group's sum is then group_sum's expansion with
 * c = log(Sq/C) - log(q - f), and log(q - f) = log q - S(f / q) by the same series; so
 * summed over the groups 0 .. L-2 whose counts are not all equal it is
 *     Sb - A1 + [f Snz + f^2/2 B1 + f^3/3 B2 + f^4/4 B3] + lr (Ss - e Snz)
 *     + e (A2 - [f B1 + f^2/2 B2 + f^3/3 B3 + f^4/4 B4]) - e (Sslb + Snz)
 *     + e^2 (Si1/2 + e (Si2/6 + e (Si3/12 + e Si4/4)))
 * with lr = log(Sq/C) and the sums of Entropy (Sb = sb, Bm = bq[m-1], Sim = si[m-1]),
 * which depend on g alone: O(1) per candidate.  The groups whose counts are all equal
 * and the last one (it holds bin i - 1, which holds the outliers in P) are added one
 * by one (group_term).  When smoothing takes more than 1e-3 of some count of P or Q
 * value (over ten empty bins per non-zero one) every group is (O(L), exact logs for the
 * small counts).  A group whose Q total is 0 while P is not (only the last one can be:
 * bin i - 1 empty but outliers present) has Q smoothed to eps there. */
static double entropy_divergence(Entropy *E, int i, int L) {
    const uint64_t *b = E->b;
    uint64_t C = E->cum[E->n], Sq = E->cum[i];
    uint64_t last = b[i - 1] + (C - Sq); /* P[i-1]: the bin plus the outliers */
    if (Sq == 0)
        return NAN;
    int nzp = E->nzc[i - 1] + (last != 0), zp = i - nzp;
    double e = zp ? ENTROPY_EPS * zp / nzp : 0;
    uint64_t minp = E->minnz[i - 1] < last || !last ? E->minnz[i - 1] : last;
    if (zp && (double)minp - e <= 0)
        return NAN;
    int g = i / L, lastlo = (L - 1) * g;
    if (E->g != g)
        entropy_groups(E, g, L);
    /* Q's zero bins: P's, and bin i - 1 when the last group's Q total is 0 (every
     * other group holding a count of P holds one of Q) */
    uint64_t slast = E->cum[i] - E->cum[lastlo];
    int zq = zp + (slast == 0 && last != 0);
    double f = zq ? ENTROPY_EPS * zq / (i - zq) : 0;
    double lr = log((double)Sq / (double)C), minq = E->minq;
    double acc = zp * ENTROPY_EPS * lr;
    int series = e * (1 / (double)minp) <= 1e-3; /* for every bin of P below i - 1 */
    int fast = series && f * E->maxinv <= 1e-3;
    if (fast) {
        const double *B = E->bq, *Si = E->si;
        double sqs = f * (E->snz + f * (0.5 * B[0] + f * ((1.0 / 3) * B[1] + f * 0.25 * B[2])));
        double sqn = f * (B[0] + f * (0.5 * B[1] + f * ((1.0 / 3) * B[2] + f * 0.25 * B[3])));
        double d = (E->sb.hi - E->a1.hi) + (E->sb.lo - E->a1.lo);
        acc += d + sqs + lr * (E->ss - e * E->snz) + e * (E->a2 - sqn) - e * (E->sslb + E->snz) +
               e * e * (Si[0] * 0.5 + e * (Si[1] * (1.0 / 6) + e * (Si[2] * (1.0 / 12) + e * Si[3] * 0.25)));
    }
    int n = fast ? E->ngeq : E->ngrp;
    const int *js = fast ? E->geq : E->grp;
    for (int w = 0; w < n; w++) {
        int j = js[w], lo = j * g, hi = lo + g;
        double c = lr - (f != 0 ? log_smoothed(E->gq[j], E->glog[j], E->ginv[j], f) : E->glog[j]);
        acc += group_term(E, lo, hi, all_equal(E, lo, hi), c, e, series);
    }
    /* the last group: bins [lastlo, i - 1), then bin i - 1 with the outliers */
    double c = lr - log(ENTROPY_EPS);
    if (slast != 0) {
        int nz = E->nzc[i - 1] - E->nzc[lastlo] + (last != 0);
        double q = (double)slast / nz, lq = log(q);
        minq = q < minq ? q : minq;
        c = lr - (f != 0 ? log_smoothed(q, lq, 1 / q, f) : lq);
    }
    acc += group_term(E, lastlo, i - 1, all_equal(E, lastlo, i - 1), c, e, series);
    if (last) {
        double v = (double)last;
        acc += (v - e) * (log_smoothed(v, log(v), 1 / v, e) + c);
    }
    if (minq - f <= 0)
        return NAN;
    return acc / (double)C;
}

/* The entropy search over i in [L, N); fills div (N entries, NaN where not evaluated)
 * and returns the first minimum m, or -1 when no candidate could be evaluated. */
static int entropy_search(const OqcHist *h, int L, double *div) {
    int n = h->nbins;
    Entropy E = {.n = n, .b = h->bins};
    double **darr[] = {&E.bd, &E.lb, &E.blb_hi, &E.blb_lo, &E.slb, &E.inv[0], &E.inv[1],
                       &E.inv[2], &E.inv[3], &E.gq, &E.glog, &E.ginv};
    int **iarr[] = {&E.nzc, &E.nzi, &E.run, &E.grp, &E.geq};
    int fail = 0;
    for (size_t a = 0; a < sizeof darr / sizeof darr[0]; a++)
        fail |= !(*darr[a] = malloc((size_t)(n + 1) * sizeof **darr[a]));
    for (size_t a = 0; a < sizeof iarr / sizeof iarr[0]; a++)
        fail |= !(*iarr[a] = malloc((size_t)(n + 1) * sizeof **iarr[a]));
    E.cum = malloc((size_t)(n + 1) * sizeof *E.cum);
    E.minnz = malloc((size_t)(n + 1) * sizeof *E.minnz);
    if (fail || !E.cum || !E.minnz)
        oqc_panic(__FILE__, __LINE__, "out of memory in the entropy calibration");
    E.cum[0] = 0;
    E.nzc[0] = 0;
    E.minnz[0] = UINT64_MAX;
    E.blb_hi[0] = E.blb_lo[0] = E.slb[0] = 0;
    for (int m = 0; m < 4; m++)
        E.inv[m][0] = 0;
    for (int k = 0; k < n; k++) {
        uint64_t v = h->bins[k];
        double bd = (double)v, lb = v ? log(bd) : 0, r = v ? 1 / bd : 0;
        E.bd[k] = bd;
        E.lb[k] = lb;
        E.cum[k + 1] = E.cum[k] + v;
        E.nzc[k + 1] = E.nzc[k] + (v != 0);
        E.minnz[k + 1] = v && v < E.minnz[k] ? v : E.minnz[k];
        if (v) {
            int p = E.nzc[k];
            E.nzi[p] = k;
            E.run[p] = p > 0 && h->bins[E.nzi[p - 1]] == v ? E.run[p - 1] : p;
        }
        DSum blb = {.hi = E.blb_hi[k], .lo = E.blb_lo[k]};
        dsum_add(&blb, bd * lb);
        E.blb_hi[k + 1] = blb.hi;
        E.blb_lo[k + 1] = blb.lo;
        E.slb[k + 1] = E.slb[k] + lb;
        double pw[4] = {r, r * r, r * r * r, r * r * r * r};
        for (int m = 0; m < 4; m++)
            E.inv[m][k + 1] = E.inv[m][k] + pw[m];
    }
    int m = -1;
    for (int i = L; i < n; i++) {
        div[i] = entropy_divergence(&E, i, L);
        if (!isnan(div[i]) && (m < 0 || div[i] < div[m]))
            m = i;
    }
    for (size_t a = 0; a < sizeof darr / sizeof darr[0]; a++)
        free(*darr[a]);
    for (size_t a = 0; a < sizeof iarr / sizeof iarr[0]; a++)
        free(*iarr[a]);
    free(E.cum);
    free(E.minnz);
    return m;
}

/* ============================================================== mse */

/* The first t minimising E(t) (see the file comment), in units of w^2:
 *     E(t) / w^2 = cum[t+1] ((t + 1) / Lq)^2 / 12 + A(t),
 *     A(t) = sum_{k > t} b_k (k - t - 1/2)^2.
 * Going down from t = N - 1 (A = 0), with u = k - t - 1/2:
 *     A(t-1) = A(t) + 2 B(t) + S(t) + b_t / 4,   B(t) = sum_{k > t} b_k u,
 *     B(t-1) = B(t) + S(t) + b_t / 2,            S(t) = sum_{k > t} b_k. */
static int mse_search(const OqcHist *h, double lq) {
    int n = h->nbins, best = n - 1;
    double *clip = malloc((size_t)n * sizeof *clip);
    if (!clip)
        oqc_panic(__FILE__, __LINE__, "out of memory in the mse calibration");
    double A = 0, B = 0, S = 0;
    for (int t = n - 1; t >= 0; t--) {
        clip[t] = A;
        double bt = (double)h->bins[t];
        A += 2 * B + S + bt / 4;
        B += S + bt / 2;
        S += bt;
    }
    double below = 0, best_e = INFINITY; /* below: counts in bins 0..t */
    for (int t = 0; t < n; t++) {
        below += (double)h->bins[t];
        double r = (t + 1) / lq;
        double e = below * r * r / 12 + clip[t];
        if (e < best_e) {
            best_e = e;
            best = t;
        }
    }
    free(clip);
    return best;
}

/* ============================================================== threshold */

/* Share of the counts above position x (in bins: bins entirely above x, plus the part
 * of the bin containing x above it). */
static double clipped_above(const OqcHist *h, double x, uint64_t total) {
    if (total == 0)
        return 0;
    double c = 0;
    int k0 = (int)floor(x);
    for (int k = k0 < 0 ? 0 : k0; k < h->nbins; k++)
        c += (double)h->bins[k] * (k == k0 ? (k0 + 1) - x : 1);
    return c / (double)total;
}

int oqc_calib_threshold(const OqcHist *h, OqcCalibMethod m, double param, int levels,
                        OqcCalibEntry *e, double *divergence) {
    OQC_ASSERT(h->nbins >= 1 && h->bins && levels >= 1);
    int n = h->nbins;
    uint64_t total = 0;
    for (int k = 0; k < n; k++)
        total += h->bins[k];
    for (int k = 0; divergence && k < n; k++)
        divergence[k] = NAN;
    e->amax = h->amax;
    e->threshold = h->amax;
    e->scale = NAN;
    e->clipped = NAN;
    e->kl = NAN;
    if (!isfinite(h->amax) || h->amax < 0)
        return -1; /* the values were not all finite: the caller reports it */
    double pos = n; /* T in bins: T = pos * amax / N */
    if (total > 0 && h->amax > 0) {
        switch (m) {
        case OQC_CALIB_MAX:
            break;
        case OQC_CALIB_PERCENTILE: {
            OQC_ASSERT(param > 0 && param <= 100);
            uint64_t cum = 0;
            int t = 0;
            for (; t < n - 1; t++) { /* 1e-12: P is decimal, its double slightly off */
                cum += h->bins[t];
                if ((double)cum * 100 >= param * (double)total * (1 - 1e-12))
                    break;
            }
            pos = t + 1;
            break;
        }
        case OQC_CALIB_MSE: /* the step the tensor will have: T / 255 when stored as u8 */
            pos = mse_search(h, e->is_unsigned || levels == 255 ? 255 : 127) + 1;
            break;
        case OQC_CALIB_ENTROPY: {
            double *div = divergence ? divergence : malloc((size_t)n * sizeof *div);
            if (!div)
                oqc_panic(__FILE__, __LINE__, "out of memory in the entropy calibration");
            if (!divergence)
                for (int k = 0; k < n; k++)
                    div[k] = NAN;
            /* Bin 0 is left out of the search (its count taken as 0) unless param
             * is non-zero (the contract's literal steps, for tests): its values
             * quantize to zero at every candidate, and after a ReLU it holds a spike
             * of exact zeros (half the values or more) that otherwise drags every
             * group of Q and pushes T down to the smallest candidate.  The seeds'
             * implementation drops the first bin for the same reason. */
            OqcHist h0 = *h;
            uint64_t *b0 = NULL;
            if (param == 0 && h->bins[0]) {
                b0 = malloc((size_t)n * sizeof *b0);
                if (!b0)
                    oqc_panic(__FILE__, __LINE__, "out of memory in the entropy calibration");
                memcpy(b0, h->bins, (size_t)n * sizeof *b0);
                b0[0] = 0;
                h0.bins = b0;
            }
            int best = entropy_search(&h0, levels, div);
            free(b0);
            if (best >= 0) {
                pos = best + 0.5;
                e->kl = div[best];
            }
            if (!divergence)
                free(div);
            break;
        }
        default:
            OQC_ASSERT(!"unknown calibration method");
        }
    }
    e->threshold = pos == n ? h->amax : (float)(pos * (double)h->amax / n);
    e->scale = e->threshold / (e->is_unsigned ? 255.0f : 127.0f);
    e->clipped = clipped_above(h, pos, total);
    return 0;
}
