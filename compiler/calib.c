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
 *              fixes; see entropy_divergence for how one candidate is evaluated in O(i)
 *              multiply-adds and one log per group (logs of the raw counts are
 *              tabulated once; smoothing corrects them by a short series).
 * In every method the first (smallest) T wins a tie. An empty histogram, amax == 0,
 * and an entropy search in which no candidate could be evaluated all give T = amax. */
#include "ir.h"

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

/* What every entropy candidate reads, computed once per histogram (arrays of N + 1
 * prefixes: entry k covers bins [0, k)). */
typedef struct Entropy {
    int n;                /* N, the number of bins */
    const uint64_t *b;    /* the counts */
    double *bd;           /* b[k] as a double */
    double *lb;           /* log(b[k]), 0 for empty bins */
    double *ib;           /* 1 / b[k], 0 for empty bins */
    double *nzm;          /* 1 for non-zero bins, 0 for empty ones */
    uint64_t *cum;        /* cum[k]: sum of b[0..k-1] */
    int *nzc;             /* nzc[k]: number of non-zero bins among b[0..k-1] */
    uint64_t *minnz;      /* minnz[k]: smallest non-zero count in b[0..k-1] (or max) */
    int *nzi;             /* the non-zero bins in order: those in [lo, hi) are
                             nzi[nzc[lo] .. nzc[hi] - 1] */
    double *qv;           /* scratch, one per visited group: Q's value, -1 if zero */
    int *gj;              /* scratch: the groups a candidate visits, in order */
    /* Q's value s / nz of group j and its log as last computed, with that s and nz
     * (s = UINT64_MAX: none yet): consecutive candidates share most groups, so most of
     * their divisions and logs are looked up (the same operands, the same bits) */
    uint64_t *logs_s;
    int *logs_nz;
    double *qvs, *logs;
} Entropy;

/* log(v - e) for the smoothed value v - e of a bin (v > e >= 0), given logv = log(v).
 * For e <= 1e-3 v (nearly always: e = 1e-4 z/(i - z) and v >= 1 for P) it is
 * log v + log(1 - x), x = e / v, with the series -x - x^2/2 - x^3/3 - x^4/4, whose
 * truncation error x^5/5 <= 2e-16 is below the rounding of log v itself; otherwise a
 * log. P's bins and Q's groups both go through this, so a bin of P equal to its Q
 * (same count, same e) gives exactly log P - log Q = 0, and ties stay ties. */
static inline double log_smoothed(double v, double logv, double e) {
    double x = e * (1 / v); /* the same rounding as e * E->ib[k] in group_sum */
    if (x > 1e-3)
        return log(v - e);
    return logv - x * (1 + x * (0.5 + x * (1.0 / 3 + x * 0.25)));
}

/* sum over bins k in [lo, hi) non-zero in P of pp (log pp + c), pp = b[k] - e, where
 * e * (1 / b[k]) <= 1e-3 for every bin (so log_smoothed's series applies to all):
 * branch-free, empty bins adding 0 * (0 + c), four partial sums to keep the adds from
 * waiting on each other. */
static double group_sum(const Entropy *E, int lo, int hi, double e, double c) {
    const double *bd = E->bd, *lb = E->lb, *ib = E->ib, *nzm = E->nzm;
    double a[4] = {0, 0, 0, 0};
    int k = lo;
    if (E->nzc[hi] - E->nzc[lo] < (hi - lo) / 4) {
        /* Sparse (a small tensor fills few bins): only the non-zero bins, each added to
         * the partial sum the dense loops below would add it to (an empty bin adds
         * exactly 0 there), so the result is the same bits in O(non-zero bins). */
        int full = lo + (hi - lo) / 4 * 4;
        for (int p = E->nzc[lo]; p < E->nzc[hi]; p++) {
            k = E->nzi[p];
            double lp = lb[k];
            if (e != 0) {
                double x = e * ib[k];
                lp = lb[k] - x * (1 + x * (0.5 + x * (1.0 / 3 + x * 0.25)));
            }
            a[k < full ? (k - lo) % 4 : 0] += (e != 0 ? bd[k] - e * nzm[k] : bd[k]) * (lp + c);
        }
        return (a[0] + a[1]) + (a[2] + a[3]);
    }
    if (e == 0) { /* log_smoothed(b, lb, 0) == lb */
        for (; k + 4 <= hi; k += 4)
            for (int u = 0; u < 4; u++)
                a[u] += bd[k + u] * (lb[k + u] + c);
        for (; k < hi; k++)
            a[0] += bd[k] * (lb[k] + c);
    } else {
        for (; k + 4 <= hi; k += 4)
            for (int u = 0; u < 4; u++) {
                double x = e * ib[k + u];
                double lp = lb[k + u] - x * (1 + x * (0.5 + x * (1.0 / 3 + x * 0.25)));
                a[u] += (bd[k + u] - e * nzm[k + u]) * (lp + c);
            }
        for (; k < hi; k++) {
            double x = e * ib[k];
            double lp = lb[k] - x * (1 + x * (0.5 + x * (1.0 / 3 + x * 0.25)));
            a[0] += (bd[k] - e * nzm[k]) * (lp + c);
        }
    }
    return (a[0] + a[1]) + (a[2] + a[3]);
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
 * Bins zero in P are zero in Q too (pp = qq = eps): each adds eps log(Sq/C). Q is
 * constant over the non-zero bins of a group, so log qq costs one log per group, and
 * log pp is the tabulated log of the count (corrected by log_smoothed when P has zero
 * bins), so the candidate costs O(i) multiply-adds and L logs. Bin i - 1 holds the
 * outliers in P and is done on its own. A group whose Q total is 0 while P is not
 * (only the last one can be: bin i - 1 empty but outliers present) has Q smoothed to
 * eps there. */
static double entropy_divergence(const Entropy *E, int i, int L) {
    const uint64_t *b = E->b;
    uint64_t C = E->cum[E->n], Sq = E->cum[i];
    uint64_t last = b[i - 1] + (C - Sq); /* P[i-1]: the bin plus the outliers */
    if (Sq == 0)
        return NAN;
    int nzp = E->nzc[i - 1] + (last != 0), zp = i - nzp;
    double e1p = zp ? ENTROPY_EPS * zp / nzp : 0;
    uint64_t minp = E->minnz[i - 1] < last || !last ? E->minnz[i - 1] : last;
    if (zp && (double)minp - e1p <= 0)
        return NAN;
    /* Q per group: total over the group's bins spread over those non-zero in P.  Only
     * the groups holding a non-zero bin and the last one (the outliers) are visited:
     * any other has s = nz = 0 and adds nothing below, so a candidate costs time in
     * the number of non-zero bins, not in the levels (a small tensor is cheap). */
    int g = i / L, zq = zp, ng = 0;
    double minq = INFINITY;
    for (int j = -1; j < L - 1;) {
        /* the next group holding a non-zero bin below i, else the last group */
        int p = E->nzc[(j + 1) * g];
        int k = p < E->nzc[i] ? E->nzi[p] : i;
        j = k / g < L - 1 ? k / g : L - 1;
        int lo = j * g, hi = j == L - 1 ? i : lo + g;
        uint64_t s = E->cum[hi] - E->cum[lo];
        int nz = E->nzc[hi] - E->nzc[lo];
        if (j == L - 1)
            nz += (last != 0) - (b[i - 1] != 0);
        E->gj[ng] = j;
        if (s == 0) {
            E->qv[ng++] = -1;
            zq += nz; /* non-zero in P, zero in Q */
        } else {
            if (E->logs_s[j] != s || E->logs_nz[j] != nz) {
                E->logs_s[j] = s;
                E->logs_nz[j] = nz;
                E->qvs[j] = (double)s / nz;
                E->logs[j] = log(E->qvs[j]);
            }
            E->qv[ng] = E->qvs[j];
            minq = E->qv[ng] < minq ? E->qv[ng] : minq;
            ng++;
        }
    }
    double e1q = zq ? ENTROPY_EPS * zq / (i - zq) : 0;
    if (minq - e1q <= 0)
        return NAN;
    double lr = log((double)Sq / (double)C);
    double acc = zp * ENTROPY_EPS * lr;
    int series = e1p * (1 / (double)minp) <= 1e-3; /* for every bin of P below i - 1 */
    for (int w = 0; w < ng; w++) {
        int j = E->gj[w];
        int lo = j * g, hi = j == L - 1 ? i - 1 : lo + g; /* bin i - 1 comes last */
        double qv = E->qv[w];
        double c = lr - (qv > 0 ? log_smoothed(qv, E->logs[j], e1q) : log(ENTROPY_EPS));
        if (series) {
            acc += group_sum(E, lo, hi, e1p, c);
        } else { /* smoothing takes a sizeable part of small counts: exact logs */
            for (int p = E->nzc[lo]; p < E->nzc[hi]; p++) {
                int k = E->nzi[p];
                acc += (E->bd[k] - e1p) * (log_smoothed(E->bd[k], E->lb[k], e1p) + c);
            }
        }
        if (j == L - 1 && last) {
            double v = (double)last;
            acc += (v - e1p) * (log_smoothed(v, log(v), e1p) + c);
        }
    }
    return acc / (double)C;
}

/* The entropy search over i in [L, N); fills div (N entries, NaN where not evaluated)
 * and returns the first minimum m, or -1 when no candidate could be evaluated. */
static int entropy_search(const OqcHist *h, int L, double *div) {
    int n = h->nbins;
    Entropy E = {.n = n, .b = h->bins};
    E.bd = malloc((size_t)n * sizeof *E.bd);
    E.lb = malloc((size_t)n * sizeof *E.lb);
    E.ib = malloc((size_t)n * sizeof *E.ib);
    E.nzm = malloc((size_t)n * sizeof *E.nzm);
    E.cum = malloc((size_t)(n + 1) * sizeof *E.cum);
    E.nzc = malloc((size_t)(n + 1) * sizeof *E.nzc);
    E.minnz = malloc((size_t)(n + 1) * sizeof *E.minnz);
    E.nzi = malloc((size_t)(n + 1) * sizeof *E.nzi);
    E.qv = malloc((size_t)L * sizeof *E.qv);
    E.gj = malloc((size_t)L * sizeof *E.gj);
    E.qvs = malloc((size_t)L * sizeof *E.qvs);
    E.logs_s = malloc((size_t)L * sizeof *E.logs_s);
    E.logs_nz = malloc((size_t)L * sizeof *E.logs_nz);
    E.logs = malloc((size_t)L * sizeof *E.logs);
    if (!E.bd || !E.lb || !E.ib || !E.nzm || !E.cum || !E.nzc || !E.minnz || !E.nzi || !E.qv ||
        !E.gj || !E.qvs || !E.logs_s || !E.logs_nz || !E.logs)
        oqc_panic(__FILE__, __LINE__, "out of memory in the entropy calibration");
    for (int j = 0; j < L; j++)
        E.logs_s[j] = UINT64_MAX;
    E.cum[0] = 0;
    E.nzc[0] = 0;
    E.minnz[0] = UINT64_MAX;
    for (int k = 0; k < n; k++) {
        uint64_t v = h->bins[k];
        E.bd[k] = (double)v;
        E.lb[k] = v ? log((double)v) : 0;
        E.ib[k] = v ? 1 / (double)v : 0;
        E.nzm[k] = v != 0;
        E.cum[k + 1] = E.cum[k] + v;
        E.nzc[k + 1] = E.nzc[k] + (v != 0);
        E.minnz[k + 1] = v && v < E.minnz[k] ? v : E.minnz[k];
        if (v)
            E.nzi[E.nzc[k]] = k;
    }
    int m = -1;
    for (int i = L; i < n; i++) {
        div[i] = entropy_divergence(&E, i, L);
        if (!isnan(div[i]) && (m < 0 || div[i] < div[m]))
            m = i;
    }
    free(E.bd);
    free(E.lb);
    free(E.ib);
    free(E.nzm);
    free(E.cum);
    free(E.nzc);
    free(E.minnz);
    free(E.nzi);
    free(E.qv);
    free(E.gj);
    free(E.qvs);
    free(E.logs_s);
    free(E.logs_nz);
    free(E.logs);
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
