/* cli_calib.c - `oqc calibrate`: thresholds from calibration data (or from shards'
 * statistics, docs/calibration.md) written as a TensorRT cache or an XML table, with
 * the optional HTML report, mixed-precision search and sensitivity analysis.  The
 * command runs as phases over one Calib record: check the request, load the model, read
 * the inputs (table, statistics), calibrate, write the outputs, summarise. */
#include "cli_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* calibrate's outputs (the table and the report) are written to temporaries beside
 * them and renamed into place together, only when both were written: a failed command
 * leaves neither, and never overwrites the previous table.  A device or pipe that
 * exists (e.g. /dev/null) is written directly. */
typedef struct Staged {
    const char *path;    /* the final name, NULL when the output is not asked for */
    char *tmp;           /* the name it is written to (malloc'd), or NULL: path itself */
} Staged;

static const char *stage(Staged *s, const char *path, OqcDiag *d, int *rc) {
    struct stat st;
    s->path = path;
    s->tmp = NULL;
    if (!path || *rc < 0)
        return path;
    if (oqc_out_refuse_input(path, d) < 0) {
        *rc = -1;
        return path;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return path;
    size_t n = strlen(path) + 32;
    if (!(s->tmp = malloc(n)))
        oqc_panic(__FILE__, __LINE__, "out of memory");
    snprintf(s->tmp, n, "%s.part%ld", path, (long)getpid());
    oqc_tmp_add(s->tmp);
    return s->tmp;
}

/* Renames the staged outputs into place when rc is 0, else removes them; rc or -1. */
static int unstage(Staged *s, int n, int rc, OqcDiag *d) {
    for (int i = 0; i < n; i++) {
        if (!s[i].tmp)
            continue;
        if (rc == 0 && rename(s[i].tmp, s[i].path) != 0)
            rc = oqc_err(d, "%s: cannot rename the finished file into place: %s", s[i].path,
                         strerror(errno));
        if (rc == 0)
            oqc_out_moved(s[i].tmp, s[i].path);
        if (rc < 0)
            remove(s[i].tmp);
        oqc_tmp_forget(s[i].tmp);
        free(s[i].tmp);
        s[i].tmp = NULL;
    }
    return rc;
}

/* Calibration split across machines (docs/calibration.md): checks how --save-stats,
 * --range and --merge-stats combine with the other options, then reads the statistics
 * given into *range (--range: stage 1) or *merged (--merge-stats, merged: stage 1 or
 * 2), taking their bins and image preprocessing into co and o. */
static int stats_options(Opts *o, OqcArena *a, OqcCalibOptions *co, OqcCalibStats *range,
                         OqcCalibStats *merged, OqcDiag *d) {
    if (o->nmerge && o->ndata)
        return oqc_err(d, "oqc calibrate: --merge-stats reads statistics in place of data: "
                          "give --data (a shard's passes) or --merge-stats, not both");
    if (o->save_stats && o->ndata && (o->out || o->report || o->table || oqc_cli_wants_mixprec(o) ||
                                      o->sensitivity))
        return oqc_err(d, "oqc calibrate: a shard's --save-stats writes statistics, not a "
                          "table: -o, --report, --table, --min-sqnr, --max-drop and "
                          "--sensitivity apply when merging (--merge-stats ... -o TABLE)");
    if (o->range && !(o->ndata && o->save_stats))
        return oqc_err(d, "oqc calibrate: --range FILE bins one shard's data over the merged "
                          "amax (pass 2): give it with --data SHARD and --save-stats FILE");
    const char *spec = NULL, *from = NULL;
    if (o->range) {
        if (oqc_calib_stats_read(o->range, a, range, d) < 0)
            return -1;
        if (range->stage != 1)
            return oqc_err(d, "%s: holds histograms (stage 2); --range takes the merged "
                              "amax statistics of pass 1 (stage 1)", o->range);
        co->range = range;
        spec = range->preprocess;
        from = o->range;
        co->bins = o->bins ? o->bins : range->bins;
    }
    if (o->nmerge) {
        OqcCalibStats *in = oqc_arena_alloc(a, (size_t)o->nmerge * sizeof *in);
        for (int i = 0; i < o->nmerge; i++)
            if (oqc_calib_stats_read(o->merge[i], a, &in[i], d) < 0)
                return -1;
        if (oqc_calib_stats_merge(in, o->nmerge, a, merged, d) < 0)
            return -1;
        merged->path = o->merge[0];
        if (merged->stage == 1 && (!o->save_stats || o->out || o->report))
            return oqc_err(d, "%s: amax statistics (pass 1) give no table: merge them with "
                              "--save-stats FILE, run pass 2 of every shard with --range FILE, "
                              "then merge those with -o TABLE", o->merge[0]);
        if (merged->stage == 2 && o->out && merged->samples != merged->range_samples)
            return oqc_err(d, "%s%s: the histograms cover %lld samples but their range was "
                              "measured over %lld: a shard is missing or given twice",
                           o->merge[0], o->nmerge > 1 ? " and the others" : "",
                           (long long)merged->samples, (long long)merged->range_samples);
        if (merged->stage == 2)
            co->merged = merged;
        spec = merged->preprocess;
        from = o->merge[0];
        co->bins = o->bins ? o->bins : merged->bins;
    }
    if (from && !spec && o->pre.given)
        return oqc_err(d, "%s: statistics of tensor data, not of images: --preprocess does "
                          "not apply", from);
    if (spec && !o->pre.given)
        return oqc_preprocess_parse(spec, &o->pre, d);
    if (spec && strcmp(spec, o->pre.spec))
        return oqc_err(d, "%s: statistics of images preprocessed with --preprocess %s, not %s",
                       from, spec, o->pre.spec);
    return 0;
}

/* One calibrate command: its options and what each phase hands the next. */
typedef struct Calib {
    Opts o;                       /* the parsed options */
    OqcCalibOptions co;           /* the calibration's settings */
    int xml;                      /* -o is an XML table (else a TensorRT cache) */
    OqcGraph *g;                  /* the optimised model */
    OqcGraph *gb;                 /* the same re-batched for --batch N, or NULL */
    OqcCalibStats range;          /* --range: the merged amax statistics (stage 1) */
    OqcCalibStats merged;         /* --merge-stats: the shards' statistics merged */
    OqcCalibStats saved;          /* --save-stats: what is written */
    int amax_merge;               /* merging amax statistics: nothing to calibrate */
    OqcCalibEntry *es;            /* the thresholds */
    int n;                        /* their count */
    int64_t samples;              /* the samples they were measured over */
    double seconds;               /* the time calibration took */
    const char *float_layers;     /* the layers kept float (comma list, NULL: none) */
    OqcQuantConfig cfg;           /* the lowering the mixed-precision measurements use */
    Builder b;                    /* ... and what they lower from */
    OqcSensitivity sens;          /* --sensitivity: the report's section */
} Calib;

/* Checks what calibrate is asked for before anything is read: data (or statistics) and
 * an output, the table's format (c->xml), the method (c->co). */
static int check_request(Calib *c, OqcDiag *d) {
    Opts *o = &c->o;
    if (o->ndata == 0 && o->nmerge == 0)
        return oqc_err(d, "oqc calibrate: give the calibration data with --data PATH (or "
                          "shards' statistics with --merge-stats FILE...)");
    if (!o->out && !o->save_stats)
        return oqc_err(d, "oqc calibrate: give the output table with -o TABLE");
    if (o->format && strcmp(o->format, "trt") && strcmp(o->format, "xml"))
        return oqc_err(d, "oqc calibrate: unknown --format '%s' (trt or xml)", o->format);
    /* Every reader takes a table named *.xml as XML and anything else as a TensorRT
     * cache, so the format follows the name unless --format says otherwise, and a
     * --format the readers would misread is refused. */
    if (o->out) {
        size_t len = strlen(o->out);
        int named_xml = len > 4 && !strcmp(o->out + len - 4, ".xml");
        c->xml = o->format ? !strcmp(o->format, "xml") : named_xml;
        if (o->format && c->xml != named_xml)
            return oqc_err(d,
                           "oqc calibrate: -o %s: tables are read as XML exactly when their "
                           "name ends in .xml; name %s table %s",
                           o->out, c->xml ? "an XML" : "a TensorRT",
                           c->xml ? "*.xml" : "otherwise");
    }
    return oqc_cli_calib_options(o, o->data, o->ndata, &c->co, d);
}

/* The model optimised as the options say (c->g) and, for --batch N, re-batched (c->gb);
 * -1 with an error and neither kept. */
static int load_model(Calib *c, OqcDiag *d) {
    c->g = oqc_prepare(c->o.model, c->o.shapes, c->o.nshapes, 1, d);
    if (c->g && oqc_cli_optimize(c->g, &c->o, d) < 0) {
        oqc_graph_free(c->g);
        c->g = NULL;
    }
    if (c->g && c->o.batch > 1 && !(c->gb = oqc_cli_rebatched(&c->o, 0, d))) {
        oqc_graph_free(c->g);
        c->g = NULL;
    }
    return c->g ? 0 : -1;
}

/* Reads what calibration starts from besides the data: --table's thresholds and float
 * layers, the statistics of --range or --merge-stats; then checks the options that
 * depend on them. */
static int read_inputs(Calib *c, OqcDiag *d) {
    Opts *o = &c->o;
    OqcCalibEntry *table = NULL;
    int ntable = 0;
    OqcTableExtra tx;
    if (oqc_cli_load_table(o, c->g->arena, &table, &ntable, &tx, d) < 0)
        return -1;
    c->float_layers = tx.float_layers;
    c->co.table = table;
    c->co.ntable = ntable;
    if (stats_options(o, c->g->arena, &c->co, &c->range, &c->merged, d) < 0)
        return -1;
    c->co.save = o->save_stats && o->ndata ? &c->saved : NULL;
    /* merging amax statistics (pass 1) is all there is to do: no calibration */
    c->amax_merge = o->nmerge && c->merged.stage == 1;
    if (o->sensitivity && !o->report)
        return oqc_err(d, "oqc calibrate: --sensitivity adds a section to the --report "
                          "FILE.html: give --report (and the validation data with --val "
                          "X.npy)");
    if ((oqc_cli_wants_mixprec(o) || c->float_layers) && !c->xml)
        return oqc_err(d, "oqc calibrate: the layers mixed precision keeps float are stored "
                          "in the XML table only: add --format xml");
    return 0;
}

/* Calibrates (timed; nothing when merging amax statistics), then with --min-sqnr or
 * --max-drop searches the layers to keep float on the validation data. */
static int calibrate(Calib *c, OqcDiag *d) {
    Opts *o = &c->o;
    struct timespec t0, t1;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!c->amax_merge)
        rc = oqc_calibrate(c->g, c->gb, o->batch, &c->co, &c->es, &c->n, &c->samples, d);
    if (rc < 0)
        return -1;
    if (o->save_stats && o->nmerge)
        c->saved = c->merged;
    c->float_layers = oqc_cli_join_list(c->g->arena, o->fp32_nodes, c->float_layers);
    c->cfg = oqc_cli_quant_config(o);
    c->cfg.fp32_nodes = c->float_layers;
    c->b = (Builder){.o = o, .cfg = &c->cfg, .es = c->es, .n = c->n};
    if (c->co.tune && c->n > 0 && !o->save_stats &&
        oqc_cli_tune(o, &c->b, &c->co, c->es, c->n, c->samples, c->g->arena, d) < 0)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);   /* the default method's search included */
    c->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (oqc_cli_wants_mixprec(o) &&
        oqc_cli_on_validation(o, &c->b, o->val, o->val_labels, c->g->arena, &c->float_layers,
                              NULL, d) < 0)
        return -1;
    c->cfg.fp32_nodes = c->float_layers;
    return 0;
}

/* Writes the outputs asked for (statistics, table, report with its sensitivity
 * section), all or none (Staged). */
static int write_outputs(Calib *c, OqcDiag *d) {
    Opts *o = &c->o;
    int rc = 0;
    Staged st[3];
    const char *out = stage(&st[0], o->out, d, &rc);
    const char *report = stage(&st[1], o->report, d, &rc);
    const char *stats = stage(&st[2], o->save_stats, d, &rc);
    if (rc == 0 && stats)
        rc = oqc_calib_stats_write(stats, &c->saved, d);
    OqcTableExtra wx = {.float_layers = c->float_layers,
                        .preprocess = o->pre.given ? o->pre.spec : NULL};
    if (rc == 0 && out)
        rc = c->xml ? oqc_table_write_xml_ex(out, c->es, c->n, c->samples, &wx, d)
                    : oqc_table_write_trt(out,
                                          c->co.method == OQC_CALIB_MAX ? "MinMax" : "Entropy",
                                          c->es, c->n, d);
    if (rc == 0 && o->sensitivity && /* the report's "Sensitivity" section */
        oqc_cli_on_validation(o, &c->b, o->val, o->val_labels, c->g->arena, NULL, &c->sens,
                              d) < 0)
        rc = -1;
    if (rc == 0 && o->report)
        rc = oqc_calib_report_ex(report, o->model, c->es, c->n, c->samples,
                                 o->sensitivity ? &c->sens : NULL, d);
    return unstage(st, 3, rc, d);
}

/* The dependency file, the summary lines (unless -q) and the --json document. */
static int summarise(Calib *c, OqcDiag *d) {
    Opts *o = &c->o;
    const char *main_out = o->out ? o->out : o->save_stats;
    char dflt[4096];
    snprintf(dflt, sizeof dflt, "%s.d", main_out ? main_out : "");
    if (oqc_cli_write_depfile(o, main_out, dflt, d) < 0)
        return -1;
    if (!o->quiet && o->save_stats)
        printf("%s: %s statistics of %d tensors over %lld samples%s\n", o->save_stats,
               c->saved.stage == 1 ? "amax (pass 1)" : "histogram (pass 2)", c->saved.nhists,
               (long long)c->saved.samples, o->nmerge ? " (merged)" : "");
    if (!o->quiet && o->out)
        printf("calibrated %d tensors over %lld samples (%s) in %.2f s; table: %s%s%s\n", c->n,
               (long long)c->samples, c->co.method_name, c->seconds, o->out,
               o->report ? "; report: " : "", o->report ? o->report : "");
    if (o->json)
        oqc_cli_json_calibrated(o->json, &c->co, c->es, c->n, c->samples, c->seconds, o->out,
                                c->xml ? "xml" : "trt", o->report, c->float_layers,
                                o->sensitivity ? &c->sens : NULL);
    return 0;
}

int oqc_cli_calibrate(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--method", "--bins", "-o", "--format",
                                          "--report", "--table", "--input-shape", "--threads",
                                          "--portable-fp32",
                                          "--batch", "--min-sqnr", "--max-drop", "--val",
                                          "--val-labels", "--fp32-nodes", "--requant",
                                          "--weight-bits", "--act-scales", "--sensitivity",
                                          "--preprocess",
                                          "--passes", "--disable-pass", "--no-opt", "--json",
                                          "-v", "-q", "-MD", "-MF", "-MT", "--save-stats",
                                          "--range", "--merge-stats", NULL};
    Calib c = {0};
    int rc = oqc_cli_parse_opts(argc, argv, "calibrate", allowed, &c.o, d);
    if (rc == 0)
        rc = check_request(&c, d);
    if (rc < 0 || load_model(&c, d) < 0) {
        oqc_cli_free_opts(&c.o);
        return -1;
    }
    rc = read_inputs(&c, d);
    if (rc == 0)
        rc = calibrate(&c, d);
    if (rc == 0)
        rc = write_outputs(&c, d);
    if (rc == 0)
        rc = summarise(&c, d);
    oqc_sensitivity_free(&c.sens);
    rc = oqc_cli_json_finish(&c.o, rc, d);
    oqc_graph_free(c.gb);
    oqc_graph_free(c.g);
    oqc_cli_free_opts(&c.o);
    return rc;
}
