/* calib_stats.c - calibration statistics files: the state of calibrate.c's two passes
 * saved from a shard of the data, read back, validated and merged (see ir.h, banner
 * calibrate.c; the protocol is docs/calibration.md, "Calibration split across
 * machines").
 *
 * The file is text, one record per line:
 *
 *   oqc-calib-stats 1            magic and format version
 *   stage 1|2                    1: amax only; 2: histograms over a given amax
 *   bins N                       bins per histogram
 *   samples N                    samples these statistics cover
 *   range-samples N              stage 2: samples the amax was measured over
 *   preprocess SPEC              only for image data: the --preprocess spec
 *   histograms K
 *   t AMAX COUNT NAME            K times: amax as a C99 hexadecimal float (exact), the
 *   c N A1 ... AN                values added (0 in stage 1), the root tensor's name
 *   b I:C I:C ...                (to the end of the line); for a channel scale
 *                                candidate, its N channels' amax (hexadecimal floats);
 *                                stage 2: the non-zero bins
 *   end
 *
 * Every number is checked on reading (amax finite and non-negative, bin indices
 * increasing and below N, counts summing to COUNT, K histograms, the end line), so a
 * truncated or edited file is an error naming the file and line, never a wrong table. */
#include "calib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STATS_MAGIC "oqc-calib-stats"
#define STATS_VERSION 1

int oqc_calib_stats_write(const char *path, const OqcCalibStats *st, OqcDiag *d) {
    for (int i = 0; i < st->nhists; i++)
        if (strpbrk(st->names[i], "\n\r"))
            return oqc_err(d, "%s: tensor name '%s' holds a line break: it cannot be saved "
                              "in a statistics file", path, st->names[i]);
    if (st->preprocess && strpbrk(st->preprocess, "\n\r"))
        return oqc_err(d, "%s: the --preprocess spec holds a line break", path);
    OqcOutFile of;
    if (oqc_out_open(&of, path, d) < 0)
        return -1;
    FILE *f = of.f;
    fprintf(f, "%s %d\nstage %d\nbins %d\nsamples %" PRId64 "\n", STATS_MAGIC, STATS_VERSION,
            st->stage, st->bins, st->samples);
    if (st->stage == 2)
        fprintf(f, "range-samples %" PRId64 "\n", st->range_samples);
    if (st->preprocess)
        fprintf(f, "preprocess %s\n", st->preprocess);
    fprintf(f, "histograms %d\n", st->nhists);
    for (int i = 0; i < st->nhists; i++) {
        const OqcHist *h = &st->hists[i];
        fprintf(f, "t %a %" PRIu64 " %s\n", (double)h->amax, st->stage == 2 ? h->count : 0,
                st->names[i]);
        if (h->nch) {
            fprintf(f, "c %d", (int)h->nch);
            for (int32_t c = 0; c < h->nch; c++)
                fprintf(f, " %a", (double)h->ch_amax[c]);
            fputc('\n', f);
        }
        if (st->stage != 2)
            continue;
        fputc('b', f);
        for (int k = 0; k < h->nbins; k++)
            if (h->bins[k])
                fprintf(f, " %d:%" PRIu64, k, h->bins[k]);
        fputc('\n', f);
    }
    fputs("end\n", f);
    return oqc_out_commit(&of, 1, d);
}

/* The reader's state: the file, its current line (malloc'd) and its number. */
typedef struct Reader {
    FILE *f;             /* the statistics file */
    const char *path;    /* its name, for messages */
    char *line;          /* the current line (malloc'd) */
    size_t cap;          /* line's capacity */
    int lineno;          /* its number, from 1 */
    int held;            /* 1: next_line gives the current line again */
    OqcDiag *d;          /* errors */
} Reader;

/* The next line without its newline, or NULL (an error) at the end of the file. */
static char *next_line(Reader *r, const char *expect) {
    if (r->held) {
        r->held = 0;
        return r->line;
    }
    ssize_t n = getline(&r->line, &r->cap, r->f);
    r->lineno++;
    if (n < 0) {
        oqc_err(r->d, "%s: ends early, before the %s line (a truncated statistics file?)",
                r->path, expect);
        return NULL;
    }
    if (n > 0 && r->line[n - 1] == '\n')
        r->line[n - 1] = 0;
    return r->line;
}

static int bad(Reader *r, const char *what) {
    return oqc_err(r->d, "%s: line %d: %s", r->path, r->lineno, what);
}

/* Reads "KEY NUMBER" into *v (lo <= v <= hi). */
static int keyed(Reader *r, const char *key, int64_t lo, int64_t hi, int64_t *v) {
    char *l = next_line(r, key);
    if (!l)
        return -1;
    size_t k = strlen(key);
    char *end;
    errno = 0;
    long long x = strncmp(l, key, k) || l[k] != ' ' ? 0 : strtoll(l + k + 1, &end, 10);
    if (strncmp(l, key, k) || l[k] != ' ' || errno || *end || end == l + k + 1 || x < lo ||
        x > hi)
        return oqc_err(r->d, "%s: line %d: expected '%s N' with N from %lld to %lld, found "
                             "'%.60s'", r->path, r->lineno, key, (long long)lo, (long long)hi, l);
    *v = x;
    return 0;
}

/* A "c N A1 ... AN" line l into h's channel amax. */
static int read_channels(Reader *r, OqcArena *a, const char *l, OqcHist *h) {
    char *end;
    errno = 0;
    long n = strtol(l + 2, &end, 10);
    if (end == l + 2 || errno || n < 1 || n > INT32_MAX)
        return bad(r, "expected 'c N' with N channels from 1 on");
    h->nch = (int32_t)n;
    h->ch_amax = oqc_arena_alloc(a, (size_t)n * sizeof *h->ch_amax);
    const char *p = end;
    for (long c = 0; c < n; c++) {
        if (*p != ' ')
            return bad(r, "fewer channel amax values than N");
        float v = strtof(p + 1, &end);
        if (end == p + 1 || !isfinite(v) || !(v >= 0))
            return bad(r, "a channel amax is not a finite non-negative number");
        h->ch_amax[c] = v;
        p = end;
    }
    return *p ? bad(r, "more channel amax values than N") : 0;
}

/* One histogram's "t" line, its "c" line if any and, in stage 2, its "b" line. */
static int read_hist(Reader *r, OqcArena *a, const OqcCalibStats *st, OqcHist *h,
                     const char **name) {
    char *l = next_line(r, "histogram (t)");
    if (!l)
        return -1;
    char *p, *end;
    if (strncmp(l, "t ", 2))
        return bad(r, "expected a histogram line 't AMAX COUNT NAME'");
    h->amax = strtof(l + 2, &end);
    if (end == l + 2 || *end != ' ' || !isfinite(h->amax) || !(h->amax >= 0))
        return bad(r, "the amax is not a finite non-negative number");
    p = end + 1;
    errno = 0;
    unsigned long long c = strtoull(p, &end, 10);
    if (end == p || *end != ' ' || errno || *p == '-' || !end[1])
        return bad(r, "expected the value count and the tensor name after the amax");
    h->count = c;
    *name = oqc_arena_strdup(a, end + 1);
    h->nbins = st->bins;
    h->bins = oqc_arena_alloc(a, (size_t)st->bins * sizeof *h->bins);
    if (st->stage == 1 && c != 0)
        return bad(r, "a stage-1 histogram holds no values (count 0)");
    if (!(l = next_line(r, st->stage == 2 ? "bins (b)" : "end")))
        return -1;
    if (!strncmp(l, "c ", 2)) {
        if (read_channels(r, a, l, h) < 0 || (st->stage == 2 && !(l = next_line(r, "bins (b)"))))
            return -1;
    } else if (st->stage == 1) {
        r->held = 1;
    }
    if (st->stage == 1)
        return 0;
    if (l[0] != 'b' || (l[1] && l[1] != ' '))
        return bad(r, "expected the bins line 'b I:C ...'");
    uint64_t sum = 0;
    long prev = -1;
    for (p = l + 1; *p;) {
        if (*p++ != ' ')
            return bad(r, "bins are separated by one space");
        errno = 0;
        long i = strtol(p, &end, 10);
        if (end == p || *end != ':' || i <= prev || i >= st->bins)
            return bad(r, "a bin index is not a number above the previous one and below bins");
        p = end + 1;
        unsigned long long n = strtoull(p, &end, 10);
        if (end == p || *p == '-' || errno || n == 0 || (*end && *end != ' '))
            return bad(r, "a bin count is not a positive number");
        h->bins[i] = n;
        if (sum + n < sum)
            return bad(r, "the bin counts overflow");
        sum += n;
        prev = i;
        p = end;
    }
    if (sum != h->count)
        return bad(r, "the bin counts do not add up to the histogram's value count");
    return 0;
}

int oqc_calib_stats_read(const char *path, OqcArena *a, OqcCalibStats *st, OqcDiag *d) {
    memset(st, 0, sizeof *st);
    st->path = oqc_arena_strdup(a, path);
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    Reader r = {.f = f, .path = path, .d = d};
    int64_t v;
    int rc = -1;
    char *l = next_line(&r, STATS_MAGIC);
    if (!l)
        goto out;
    char magic[sizeof STATS_MAGIC + 16];
    snprintf(magic, sizeof magic, "%s %d", STATS_MAGIC, STATS_VERSION);
    if (strncmp(l, STATS_MAGIC " ", sizeof STATS_MAGIC)) {
        oqc_err(d, "%s: not an oqc calibration statistics file (written by oqc calibrate "
                   "--save-stats)", path);
        goto out;
    }
    if (strcmp(l, magic)) {
        oqc_err(d, "%s: statistics format '%s'; this oqc reads version %d", path,
                l + sizeof STATS_MAGIC, STATS_VERSION);
        goto out;
    }
    if (keyed(&r, "stage", 1, 2, &v) < 0)
        goto out;
    st->stage = (int)v;
    if (keyed(&r, "bins", 128, 65536, &v) < 0)
        goto out;
    st->bins = (int)v;
    if (keyed(&r, "samples", 1, INT64_MAX, &st->samples) < 0)
        goto out;
    if (st->stage == 2 && keyed(&r, "range-samples", 1, INT64_MAX, &st->range_samples) < 0)
        goto out;
    if (!(l = next_line(&r, "histograms")))
        goto out;
    if (!strncmp(l, "preprocess ", 11)) {
        st->preprocess = oqc_arena_strdup(a, l + 11);
        if (!(l = next_line(&r, "histograms")))
            goto out;
    }
    char *end;
    long k = !strncmp(l, "histograms ", 11) ? strtol(l + 11, &end, 10) : -1;
    if (k < 0 || k > 1000000 || end == l + 11 || *end) {
        bad(&r, "expected 'histograms K'");
        goto out;
    }
    st->nhists = (int)k;
    st->hists = oqc_arena_alloc(a, (size_t)(k + 1) * sizeof *st->hists);
    st->names = oqc_arena_alloc(a, (size_t)(k + 1) * sizeof *st->names);
    for (int i = 0; i < st->nhists; i++)
        if (read_hist(&r, a, st, &st->hists[i], &st->names[i]) < 0)
            goto out;
    if (!(l = next_line(&r, "end")))
        goto out;
    if (strcmp(l, "end")) {
        bad(&r, "expected 'end' after the last histogram");
        goto out;
    }
    if (getline(&r.line, &r.cap, f) >= 0) {
        r.lineno++;
        bad(&r, "text after 'end'");
        goto out;
    }
    rc = 0;
out:
    free(r.line);
    fclose(f);
    return rc;
}

int oqc_calib_stats_merge(const OqcCalibStats *in, int n, OqcArena *a, OqcCalibStats *out,
                          OqcDiag *d) {
    OQC_ASSERT(n >= 1);
    const OqcCalibStats *s0 = &in[0];
    *out = *s0;
    out->path = NULL;
    out->hists = oqc_arena_alloc(a, (size_t)(s0->nhists + 1) * sizeof *out->hists);
    for (int i = 0; i < s0->nhists; i++) {
        out->hists[i] = s0->hists[i];
        out->hists[i].bins = oqc_arena_alloc(a, (size_t)s0->bins * sizeof(uint64_t));
        memcpy(out->hists[i].bins, s0->hists[i].bins, (size_t)s0->bins * sizeof(uint64_t));
        if (s0->hists[i].nch) {
            out->hists[i].ch_amax = oqc_arena_alloc(a, (size_t)s0->hists[i].nch * sizeof(float));
            memcpy(out->hists[i].ch_amax, s0->hists[i].ch_amax,
                   (size_t)s0->hists[i].nch * sizeof(float));
        }
    }
    for (int k = 1; k < n; k++) {
        const OqcCalibStats *s = &in[k];
        if (s->stage != s0->stage)
            return oqc_err(d, "%s: stage-%d statistics (%s), but %s holds stage %d: merge "
                              "the shards of one pass at a time", s->path, s->stage,
                           s->stage == 1 ? "amax" : "histograms", s0->path, s0->stage);
        if (s->bins != s0->bins)
            return oqc_err(d, "%s: %d bins per histogram, but %s has %d", s->path, s->bins,
                           s0->path, s0->bins);
        if ((s->preprocess == NULL) != (s0->preprocess == NULL) ||
            (s->preprocess && strcmp(s->preprocess, s0->preprocess)))
            return oqc_err(d, "%s: data preprocessed with --preprocess %s, but %s with %s",
                           s->path, s->preprocess ? s->preprocess : "(none: tensors)",
                           s0->path, s0->preprocess ? s0->preprocess : "(none: tensors)");
        if (s->nhists != s0->nhists)
            return oqc_err(d, "%s: %d histograms, but %s has %d: statistics of different "
                              "models or passes", s->path, s->nhists, s0->path, s0->nhists);
        if (s->stage == 2 && s->range_samples != s0->range_samples)
            return oqc_err(d, "%s: binned over an amax measured on %" PRId64 " samples, but "
                              "%s over one of %" PRId64 ": pass 2 of every shard must use "
                              "the same merged --range", s->path, s->range_samples, s0->path,
                           s0->range_samples);
        for (int i = 0; i < s0->nhists; i++) {
            const OqcHist *h = &s->hists[i];
            OqcHist *m = &out->hists[i];
            if (strcmp(s->names[i], s0->names[i]))
                return oqc_err(d, "%s: histogram %d is of tensor '%s', but in %s of '%s': "
                                  "statistics of different models or passes", s->path, i + 1,
                               s->names[i], s0->path, s0->names[i]);
            if (h->nch != m->nch)
                return oqc_err(d, "%s: tensor '%s' has %d channel amax values, but %d in %s: "
                                  "statistics of different oqc versions or models", s->path,
                               s->names[i], (int)h->nch, (int)m->nch, s0->path);
            for (int32_t c = 0; c < m->nch; c++)
                m->ch_amax[c] = h->ch_amax[c] > m->ch_amax[c] ? h->ch_amax[c] : m->ch_amax[c];
            if (s->stage == 1) {
                m->amax = h->amax > m->amax ? h->amax : m->amax;
                continue;
            }
            if (h->amax != m->amax)
                return oqc_err(d, "%s: tensor '%s' was binned over amax %a, but in %s over "
                                  "%a: pass 2 of every shard must use the same merged --range",
                               s->path, s->names[i], (double)h->amax, s0->path,
                               (double)m->amax);
            for (int b = 0; b < m->nbins; b++)
                m->bins[b] += h->bins[b];
            m->count += h->count;
        }
        out->samples += s->samples;
    }
    return 0;
}
