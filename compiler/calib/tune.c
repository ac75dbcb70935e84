/* tune.c - the default method (`--method auto`): percentile thresholds whose percentile,
 * one for the signed tensors and one for the unsigned ones, is chosen on calibration
 * samples by the INT8 network's output SQNR.
 *
 * Why per signedness and per network (docs/calibration.md, "The default method"): on the
 * development set the best percentile of the signed tensors (linear bottleneck outputs,
 * residual sums) runs from 99.95 (ImageNet MobileNetV2) to 99.995 (CIFAR-10 MobileNetV2),
 * and one network's choice costs the other 1-3 dB; the output SQNR on the calibration
 * data ranks the settings as the held-out data does.  The search changes thresholds
 * only: the same histograms, no second calibration pass. */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double LADDER[] = OQC_TUNE_LADDER;
#define NSTEPS ((int)(sizeof LADDER / sizeof LADDER[0]))

/* Whether the search sets entry e's threshold: calibrated here (a histogram) and not
 * imported from a table (those keep the user's scale, bit for bit). */
static int tunable(const OqcCalibEntry *e) {
    return e->hist && e->hist->bins && !(e->method && !strcmp(e->method, "table"));
}

typedef struct Tune {
    OqcCalibEntry *es;
    int n;
    OqcArena *a;                 /* method names and channel thresholds (es's lifetime) */
    float **ch;                  /* [n] writable channel thresholds (NULL: none) */
    const char *names[NSTEPS];   /* "percentile:P" */
} Tune;

/* Every tunable entry at percentile LADDER[ks] (signed) or LADDER[ku] (unsigned). */
static int apply(Tune *t, int ks, int ku, OqcDiag *d) {
    for (int i = 0; i < t->n; i++) {
        OqcCalibEntry *e = &t->es[i];
        if (!tunable(e))
            continue;
        int k = e->is_unsigned ? ku : ks;
        if (oqc_calib_threshold(e->hist, OQC_CALIB_PERCENTILE, LADDER[k], 128, e, NULL) < 0)
            return oqc_err(d, "cannot choose a threshold for '%s'", e->name);
        e->scale = e->threshold / (e->is_unsigned ? 255.0f : 127.0f);
        e->method = t->names[k];
        if (t->ch[i]) {
            oqc_channel_thresholds(e->threshold, e->hist->ch_amax, e->nch, t->ch[i]);
            e->ch_threshold = t->ch[i];
        }
    }
    return 0;
}

/* The SQNR of setting (ks, ku), measured once and remembered in sq. */
static int at(Tune *t, OqcMix *m, double sq[NSTEPS][NSTEPS], int ks, int ku, int *measured,
              double *out, OqcDiag *d) {
    if (isnan(sq[ks][ku])) {
        OqcMetrics r;
        if (apply(t, ks, ku, d) < 0 || oqc_mix_measure(m, &r, d) < 0)
            return -1;
        sq[ks][ku] = isnan(r.sqnr) ? -INFINITY : r.sqnr;
        ++*measured;
        oqc_info(d, "  tuning: signed percentile %g, unsigned %g: output SQNR %.2f dB",
                 LADDER[ks], LADDER[ku], r.sqnr);
    }
    *out = sq[ks][ku];
    return 0;
}

int oqc_tune_percentiles(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                         OqcCalibEntry *es, int n, OqcArena *a, OqcTuneResult *res,
                         OqcDiag *d) {
    memset(res, 0, sizeof *res);
    Tune t = {.es = es, .n = n, .a = a};
    int active[2] = {0, 0};   /* [0] signed, [1] unsigned */
    t.ch = oqc_arena_alloc(t.a, (size_t)(n + 1) * sizeof *t.ch);
    for (int k = 0; k < NSTEPS; k++)
        t.names[k] = oqc_arena_printf(t.a, "percentile:%g", LADDER[k]);
    for (int i = 0; i < n; i++) {
        if (!tunable(&es[i]))
            continue;
        active[es[i].is_unsigned ? 1 : 0] = 1;
        if (es[i].nch > 0 && es[i].hist->nch == es[i].nch && es[i].hist->ch_amax)
            t.ch[i] = oqc_arena_alloc(t.a, (size_t)es[i].nch * sizeof(float));
    }
    if (!active[0] && !active[1])
        return 0;
    OqcMix *m;
    if (oqc_mix_open(&m, gf, build, ctx, o, d) < 0)
        return -1;   /* (nothing changed yet) */
    double sq[NSTEPS][NSTEPS];
    for (int i = 0; i < NSTEPS; i++)
        for (int j = 0; j < NSTEPS; j++)
            sq[i][j] = NAN;
    int cur[2] = {OQC_TUNE_START, OQC_TUNE_START};
    double best;
    int rc = at(&t, m, sq, cur[0], cur[1], &res->measured, &best, d);
    res->sqnr_start = best;
    /* Coordinate search: per kind, step up (less clipping) while that gains more than the
     * margin, else down; rounds until neither kind moves. */
    for (int moved = 1; rc == 0 && moved;) {
        moved = 0;
        for (int k = 0; rc == 0 && k < 2; k++) {
            if (!active[k])
                continue;
            for (int dir = 1, steps = 0; rc == 0 && dir >= -1 && steps == 0; dir -= 2) {
                for (;;) {
                    int nx[2] = {cur[0], cur[1]};
                    nx[k] += dir;
                    double v;
                    if (nx[k] < 0 || nx[k] >= NSTEPS ||
                        (rc = at(&t, m, sq, nx[0], nx[1], &res->measured, &v, d)) < 0 ||
                        !(v > best + OQC_TUNE_MARGIN))
                        break;
                    cur[k] = nx[k];
                    best = v;
                    steps++;
                    moved = 1;
                }
            }
        }
    }
    res->samples = oqc_mix_samples(m);
    oqc_mix_close(m);
    if (rc < 0) {   /* back to where calibration left them */
        apply(&t, OQC_TUNE_START, OQC_TUNE_START, d);
        return -1;
    }
    if (apply(&t, cur[0], cur[1], d) < 0)
        return -1;
    res->p_signed = active[0] ? LADDER[cur[0]] : 0;
    res->p_unsigned = active[1] ? LADDER[cur[1]] : 0;
    res->sqnr = best;
    return 0;
}

/* Copies sample k of value v (samples of `bytes` each) to dst if it is one of the picks
 * (every `stride`-th global sample, up to want); global index *g advances. */
static void pick(const OqcValue *v, int64_t s, size_t bytes, int64_t stride, int64_t want,
                 int64_t *g, char *dst, int64_t *got) {
    for (int64_t k = 0; k < s; k++, ++*g)
        if (*g % stride == 0 && *got < want) {
            memcpy(dst + (size_t)*got * bytes, (const char *)v->data + (size_t)k * bytes, bytes);
            ++*got;
        }
}

int oqc_tune_samples(const char *const *paths, int npaths, const OqcPreprocess *pre,
                     const OqcShape *in, int64_t total, int64_t want, OqcArena *a,
                     OqcValue *v, OqcDiag *d) {
    const char **files;
    int nf;
    if (oqc_data_files(a, paths, npaths, &files, &nf, d) < 0)
        return -1;
    size_t bytes = (size_t)oqc_shape_numel(in) * sizeof(float);
    for (int pass = total > 0 ? 1 : 0; pass < 2; pass++) {
        /* pass 0 counts the samples (total unknown), pass 1 copies the picks */
        int64_t stride = pass == 0 || total <= want ? 1 : (total + want - 1) / want;
        int64_t g = 0, got = 0, s;
        char *dst = NULL;
        if (pass == 1) {
            int64_t cap = total < want ? total : want;
            dst = oqc_arena_alloc_raw(a, (size_t)cap * bytes + 1);
            *v = (OqcValue){.dtype = OQCF_FLOAT, .data = dst, .nbytes = (size_t)cap * bytes};
            v->shape.rank = in->rank + 1;
            v->shape.d[0] = cap;
            for (int r = 0; r < in->rank; r++)
                v->shape.d[r + 1] = in->d[r];
        }
        for (int f = 0; f < nf; f++) {
            OqcArena *fa = oqc_arena_new();
            OqcValue x;
            int rc = 0;
            if (oqc_is_image_path(files[f])) {
                s = 1;
                if (pass == 1 && g % stride == 0 && got < want)
                    rc = oqc_images_read(files + f, 1, pre, in, fa, &x, d);
                else
                    x.data = NULL;
            } else {
                rc = oqc_tensor_read(files[f], in, fa, &x, d);
                if (rc == 0)
                    rc = oqc_samples_of(files[f], &x, in, &s, d);
                if (rc == 0 && x.dtype != OQCF_FLOAT)
                    rc = oqc_err(d, "%s: holds %s data; the model's input is f32", files[f],
                                 oqc_dtype_name(x.dtype));
            }
            if (rc == 0 && pass == 1 && x.data)
                pick(&x, s, bytes, stride, want, &g, dst, &got);
            else
                g += s;
            oqc_arena_free(fa);
            if (rc < 0)
                return -1;
        }
        if (pass == 0)
            total = g;
        else
            v->shape.d[0] = got;
        if (total == 0)
            return oqc_err(d, "%s: no samples", paths[0]);
    }
    v->nbytes = (size_t)v->shape.d[0] * bytes;
    return 0;
}
