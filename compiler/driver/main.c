/* main.c - the oqc command-line driver.
 *
 *   oqc dump MODEL [--format text|xml|dot] [-o FILE] [--input-shape NAME=DIMS]...
 *   oqc check MODEL [--input-shape NAME=DIMS]...
 *   oqc run MODEL --input [NAME=]FILE... [-o OUT] [--input-shape NAME=DIMS]... [--threads N]
 *   oqc compile MODEL -o OUTDIR [--name NAME] [--precision int8|fp32] ...
 *   oqc help [COMMAND] | oqc --version
 *
 * Each command is a function taking its arguments and an OqcDiag; user errors come
 * back as -1 with messages in the diag, which main prints before exiting 1. Output
 * files are written to a temporary name beside the target and renamed only when
 * complete, so a failed command never leaves a partial file that looks finished.
 *
 * This file holds the command table, main() and the commands that lower a model to
 * INT8 (calibrate, eval, compile, export-qdq), so the pipeline reads as the calls they
 * make: load, optimise, calibrate, quantize, emit.  Parsing the options is cli_opts.c;
 * the commands on the float graph (dump, check, run) are cli_fp32.c (see cli_int.h). */
#include "cli_int.h"
#include "passes.h"
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>



/* Reads a table by extension: .xml is the XML form, anything else a TRT cache. *x
 * receives what an XML table carries besides thresholds (float layers, preprocessing). */
static int read_table(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                      OqcTableExtra *x, OqcDiag *d) {
    size_t len = strlen(path);
    int64_t samples;
    x->float_layers = x->preprocess = NULL;
    if (len > 4 && !strcmp(path + len - 4, ".xml"))
        return oqc_table_read_xml_ex(path, a, e, n, &samples, x, d);
    return oqc_table_read_trt(path, a, e, n, d);
}

/* The image preprocessing: --preprocess, else the one an XML --table was calibrated
 * with (spec, or NULL); both given and different is an error. */
static int adopt_preprocess(Opts *o, const char *spec, OqcDiag *d) {
    if (!spec)
        return 0;
    if (!o->pre.given)
        return oqc_preprocess_parse(spec, &o->pre, d);
    if (strcmp(spec, o->pre.spec) != 0)
        return oqc_err(d, "%s: the table was calibrated with --preprocess %s, not %s", o->table,
                       spec, o->pre.spec);
    return 0;
}

static int optimize(OqcGraph *g, const Opts *o, int shown, int no_quantize, OqcDiag *d);

/* a and b joined with a comma (either may be NULL or empty), in arena ar. */
static const char *join_list(OqcArena *ar, const char *a, const char *b) {
    if (!a || !*a)
        return b && *b ? b : NULL;
    if (!b || !*b)
        return a;
    return oqc_arena_printf(ar, "%s,%s", a, b);
}

/* Whether the options ask for automatic mixed precision. */
static int wants_mixprec(const Opts *o) {
    return !isnan(o->min_sqnr) || !isnan(o->max_drop);
}

/* What every mixed-precision measurement lowers from: the same options and thresholds,
 * only the float layers differ (OqcInt8Builder). */
typedef struct Builder {
    const Opts *o;
    const OqcQuantConfig *cfg;   /* requantization and weight bits */
    const OqcCalibEntry *es;     /* thresholds */
    int n;
} Builder;

static OqcGraph *build_from_entries(void *ctx, const char *fp32_nodes, OqcDiag *d) {
    const Builder *b = ctx;
    int verbose = d->verbose;   /* optimize() restores the options' -v: keep the caller's */
    OqcGraph *g = oqc_prepare(b->o->model, b->o->shapes, b->o->nshapes, 1, d);
    int rc = g ? optimize(g, b->o, 1, 1, d) : -1;
    d->verbose = verbose;
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    OqcQuantConfig *cfg = oqc_arena_alloc(g->arena, sizeof *cfg);
    *cfg = *b->cfg;
    cfg->fp32_nodes = fp32_nodes && *fp32_nodes ? oqc_arena_strdup(g->arena, fp32_nodes) : NULL;
    OqcCalibOptions co = {.table = b->es, .ntable = b->n};
    if (oqc_lower_int8(g, NULL, 0, &co, cfg, NULL, NULL, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

/* Reads --val and --val-labels (or, for `eval --sensitivity`, data/labels) into mo. */
static int mix_options(const Opts *o, const char *data, const char *labels, OqcArena *a,
                       OqcValue *xv, OqcValue *yv, const char *fp32_nodes, OqcMixOptions *mo,
                       OqcDiag *d) {
    memset(mo, 0, sizeof *mo);
    mo->min_sqnr = o->min_sqnr;
    mo->max_drop = o->max_drop;
    mo->fp32_nodes = fp32_nodes;
    mo->limit = data == o->val ? 0 : o->limit;   /* eval --limit applies to --data */
    mo->threads = o->threads ? o->threads : oqc_cli_default_threads();
    mo->progress = !o->quiet && isatty(2);
    mo->quiet = o->quiet;
    mo->data_path = data;
    mo->labels_path = labels;
    if (!data)
        return oqc_err(d, "oqc: --min-sqnr and --max-drop search on validation data: give it "
                          "with --val X.npy (and --val-labels Y.npy for --max-drop)");
    if (oqc_npy_read(data, a, xv, d) < 0)
        return -1;
    mo->data = xv;
    if (labels) {
        if (oqc_npy_read(labels, a, yv, d) < 0)
            return -1;
        mo->labels = yv;
    }
    return 0;
}

/* The requantization and weight settings of the options (no float layers). */
static OqcQuantConfig quant_config(const Opts *o) {
    OqcQuantConfig cfg = {.requant = o->requant && !strcmp(o->requant, "fixed") ? OQCI_REQ_FIXED
                                                                                : OQCI_REQ_FLOAT,
                          .weight_bits = o->weight_bits};
    return cfg;
}

/* On the validation inputs `data` (labels may be NULL), against the float model loaded
 * here: the mixed-precision search when chosen is given (*chosen: the layers to keep
 * float, in arena a, NULL for none), else the sensitivity analysis into *sens.  The
 * layers b->cfg keeps float stay float in every measurement. */
static int on_validation(const Opts *o, Builder *b, const char *data, const char *labels,
                         OqcArena *a, const char **chosen, OqcSensitivity *sens, OqcDiag *d) {
    OqcValue xv, yv;
    OqcMixOptions mo;
    char *list = NULL;
    int rc = 0;
    OqcGraph *gf = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (!gf || optimize(gf, o, 1, 0, d) < 0 ||
        mix_options(o, data, labels, gf->arena, &xv, &yv, b->cfg->fp32_nodes, &mo, d) < 0)
        rc = -1;
    else if (chosen)
        rc = oqc_mixprec_search(gf, build_from_entries, b, &mo, &list, d);
    else
        rc = oqc_sensitivity(gf, build_from_entries, b, &mo, sens, d);
    if (rc == 0 && chosen)
        *chosen = *list ? oqc_arena_strdup(a, list) : NULL;
    free(list);
    oqc_graph_free(gf);
    return rc;
}

/* Runs the passes on g as o says, with -v statistics only when shown is 0 (a second
 * copy of the model: the float reference of eval, the re-batched calibration graph;
 * its statistics were shown for the first) and without pass quantize when no_quantize
 * (the INT8 lowering runs it after calibration: before, it could only say that the
 * graph stays float). */
static int optimize(OqcGraph *g, const Opts *o, int shown, int no_quantize, OqcDiag *d) {
    Opts q = *o;   /* (shallow: nothing of it is freed) */
    q.verbose = shown ? 0 : o->verbose;
    if (no_quantize) {
        snprintf(q.disable_buf, sizeof q.disable_buf, "%s%squantize",
                 o->disable ? o->disable : "", o->disable ? "," : "");
        q.disable = q.disable_buf;
    } else if (o->disable == o->disable_buf) {
        q.disable = q.disable_buf;
    }
    int rc = oqc_cli_optimize(g, &q, d);
    d->verbose = o->verbose;
    return rc;
}

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
    if (o->save_stats && o->ndata && (o->out || o->report || o->table || wants_mixprec(o) ||
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

static int cmd_calibrate(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--method", "--bins", "-o", "--format",
                                          "--report", "--table", "--input-shape", "--threads",
                                          "--portable-fp32",
                                          "--batch", "--min-sqnr", "--max-drop", "--val",
                                          "--val-labels", "--fp32-nodes", "--requant",
                                          "--weight-bits", "--sensitivity", "--preprocess",
                                          "--passes", "--disable-pass", "--no-opt", "--json",
                                          "-v", "-q", "-MD", "-MF", "-MT", "--save-stats",
                                          "--range", "--merge-stats", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "calibrate", allowed, &o, d);
    OqcCalibOptions co = {.method = OQC_CALIB_PERCENTILE, .param = OQC_CALIB_DEFAULT_PERCENTILE,
                          .method_name = OQC_CALIB_DEFAULT, .bins = 2048};
    int xml = 0;
    if (rc == 0 && o.ndata == 0 && o.nmerge == 0)
        rc = oqc_err(d, "oqc calibrate: give the calibration data with --data PATH (or "
                        "shards' statistics with --merge-stats FILE...)");
    if (rc == 0 && !o.out && !o.save_stats)
        rc = oqc_err(d, "oqc calibrate: give the output table with -o TABLE");
    if (rc == 0 && o.format && strcmp(o.format, "trt") && strcmp(o.format, "xml"))
        rc = oqc_err(d, "oqc calibrate: unknown --format '%s' (trt or xml)", o.format);
    /* Every reader takes a table named *.xml as XML and anything else as a TensorRT
     * cache, so the format follows the name unless --format says otherwise, and a
     * --format the readers would misread is refused. */
    if (rc == 0 && o.out) {
        size_t len = strlen(o.out);
        int named_xml = len > 4 && !strcmp(o.out + len - 4, ".xml");
        xml = o.format ? !strcmp(o.format, "xml") : named_xml;
        if (o.format && xml != named_xml)
            rc = oqc_err(d,
                         "oqc calibrate: -o %s: tables are read as XML exactly when their name "
                         "ends in .xml; name %s table %s",
                         o.out, xml ? "an XML" : "a TensorRT", xml ? "*.xml" : "otherwise");
    }
    if (rc == 0 && o.method) {
        rc = oqc_calib_method_parse(o.method, &co.method, &co.param, d);
        co.method_name = o.method;
    }
    OqcGraph *g = rc == 0 ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (g && oqc_cli_optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    OqcGraph *gb = NULL; /* the same model re-batched for --batch N */
    if (g && o.batch > 1) {
        gb = oqc_prepare(o.model, o.shapes, o.nshapes, 1, d);
        if (!gb || oqc_rebatch(gb, o.batch, d) < 0 || optimize(gb, &o, 1, 0, d) < 0) {
            oqc_graph_free(gb);
            oqc_graph_free(g);
            g = NULL;
        }
    }
    if (!g) {
        oqc_cli_free_opts(&o);
        return -1;
    }
    co.data = o.data;
    co.ndata = o.ndata;
    if (o.bins)
        co.bins = o.bins;
    co.threads = o.threads ? o.threads : oqc_cli_default_threads();
    co.progress = !o.quiet && isatty(2);
    OqcCalibEntry *table = NULL, *es = NULL;
    int ntable = 0, n = 0;
    int64_t samples = 0;
    OqcTableExtra tx;
    if (o.table && (read_table(o.table, g->arena, &table, &ntable, &tx, d) < 0 ||
                    adopt_preprocess(&o, tx.preprocess, d) < 0))
        rc = -1;
    const char *float_layers = o.table ? tx.float_layers : NULL;
    co.table = table;
    co.ntable = ntable;
    co.pre = &o.pre;
    OqcCalibStats range, merged, saved;
    if (rc == 0 && stats_options(&o, g->arena, &co, &range, &merged, d) < 0)
        rc = -1;
    co.save = o.save_stats && o.ndata ? &saved : NULL;
    /* merging amax statistics (pass 1) is all there is to do: no calibration */
    int amax_merge = rc == 0 && o.nmerge && merged.stage == 1;
    if (rc == 0 && o.sensitivity && !o.report)
        rc = oqc_err(d, "oqc calibrate: --sensitivity adds a section to the --report FILE.html: "
                        "give --report (and the validation data with --val X.npy)");
    if (rc == 0 && (wants_mixprec(&o) || float_layers) && !xml)
        rc = oqc_err(d, "oqc calibrate: the layers mixed precision keeps float are stored in "
                        "the XML table only: add --format xml");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rc == 0 && !amax_merge)
        rc = oqc_calibrate(g, gb, o.batch, &co, &es, &n, &samples, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc == 0 && o.save_stats && o.nmerge)
        saved = merged;
    float_layers = join_list(g->arena, o.fp32_nodes, float_layers);
    OqcQuantConfig cfg = quant_config(&o);
    cfg.fp32_nodes = float_layers;
    Builder b = {&o, &cfg, es, n};
    if (rc == 0 && wants_mixprec(&o) &&
        on_validation(&o, &b, o.val, o.val_labels, g->arena, &float_layers, NULL, d) < 0)
        rc = -1;
    cfg.fp32_nodes = float_layers;
    Staged st[3];
    const char *out = stage(&st[0], o.out, d, &rc);
    const char *report = stage(&st[1], o.report, d, &rc);
    const char *stats = stage(&st[2], o.save_stats, d, &rc);
    if (rc == 0 && stats)
        rc = oqc_calib_stats_write(stats, &saved, d);
    OqcTableExtra wx = {float_layers, o.pre.given ? o.pre.spec : NULL};
    if (rc == 0 && out)
        rc = xml ? oqc_table_write_xml_ex(out, es, n, samples, &wx, d)
                 : oqc_table_write_trt(out, co.method == OQC_CALIB_MAX ? "MinMax" : "Entropy",
                                       es, n, d);
    OqcSensitivity sens = {0};
    if (rc == 0 && o.sensitivity &&   /* the report's "Sensitivity" section */
        on_validation(&o, &b, o.val, o.val_labels, g->arena, NULL, &sens, d) < 0)
        rc = -1;
    if (rc == 0 && o.report)
        rc = oqc_calib_report_ex(report, o.model, es, n, samples, o.sensitivity ? &sens : NULL,
                                 d);
    rc = unstage(st, 3, rc, d);
    const char *main_out = o.out ? o.out : o.save_stats;
    char dflt[4096];
    snprintf(dflt, sizeof dflt, "%s.d", main_out ? main_out : "");
    if (rc == 0)
        rc = oqc_cli_write_depfile(&o, main_out, dflt, d);
    if (rc == 0 && !o.quiet && o.save_stats)
        printf("%s: %s statistics of %d tensors over %lld samples%s\n", o.save_stats,
               saved.stage == 1 ? "amax (pass 1)" : "histogram (pass 2)", saved.nhists,
               (long long)saved.samples, o.nmerge ? " (merged)" : "");
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (rc == 0 && !o.quiet && o.out)
        printf("calibrated %d tensors over %lld samples (%s) in %.2f s; table: %s%s%s\n", n,
               (long long)samples, co.method_name, seconds, o.out,
               o.report ? "; report: " : "", o.report ? o.report : "");
    if (rc == 0 && o.json)
        oqc_cli_json_calibrated(o.json, &co, es, n, samples, seconds, o.out, xml ? "xml" : "trt",
                                o.report, float_layers, o.sensitivity ? &sens : NULL);
    oqc_sensitivity_free(&sens);
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_graph_free(gb);
    oqc_graph_free(g);
    oqc_cli_free_opts(&o);
    return rc;
}

/* The INT8 lowering of o->model: optimised, calibrated over --calib data and/or a
 * --table, quantized with --requant/--fp32-nodes (see lower.c).  cfg must outlive
 * the graph. */
static OqcGraph *build_int8(const char *cmd, Opts *o, OqcQuantConfig *cfg, Builder *keep,
                            OqcDiag *d) {
    if (o->ncalib == 0 && !o->table) {
        oqc_err(d, "oqc %s: INT8 needs thresholds: give calibration data with --calib PATH "
                   "or a table with --table FILE", cmd);
        return NULL;
    }
    OqcCalibOptions co = {.method = OQC_CALIB_PERCENTILE, .param = OQC_CALIB_DEFAULT_PERCENTILE,
                          .method_name = OQC_CALIB_DEFAULT, .bins = 2048};
    if (o->method) {
        if (oqc_calib_method_parse(o->method, &co.method, &co.param, d) < 0)
            return NULL;
        co.method_name = o->method;
    }
    *cfg = quant_config(o);
    cfg->fp32_nodes = o->fp32_nodes;
    OqcGraph *g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (g && optimize(g, o, 0, 1, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    OqcGraph *gb = NULL;
    if (g && o->batch > 1 && o->ncalib > 0) {
        gb = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
        if (!gb || oqc_rebatch(gb, o->batch, d) < 0 || optimize(gb, o, 1, 1, d) < 0) {
            oqc_graph_free(gb);
            oqc_graph_free(g);
            return NULL;
        }
    }
    if (!g)
        return NULL;
    co.data = o->calib;
    co.ndata = o->ncalib;
    if (o->bins)
        co.bins = o->bins;
    co.threads = o->threads ? o->threads : oqc_cli_default_threads();
    co.progress = !o->quiet && isatty(2);
    OqcCalibEntry *table = NULL, *es = NULL;
    OqcTableExtra tx = {NULL, NULL};
    int ntable = 0, n = 0, rc = 0;
    if (o->table && (read_table(o->table, g->arena, &table, &ntable, &tx, d) < 0 ||
                     adopt_preprocess(o, tx.preprocess, d) < 0))
        rc = -1;
    co.table = table;
    co.ntable = ntable;
    co.pre = &o->pre;
    /* Layers kept float: --fp32-nodes and those a table's mixed precision chose. */
    cfg->fp32_nodes = join_list(g->arena, o->fp32_nodes, tx.float_layers);
    if (rc == 0 && o->save_table &&
        (strlen(o->save_table) <= 4 ||
         strcmp(o->save_table + strlen(o->save_table) - 4, ".xml") != 0))
        rc = oqc_err(d, "--save-table %s: the table is XML, and tables are read as XML "
                        "exactly when their name ends in .xml",
                     o->save_table);
    if (rc == 0 && (wants_mixprec(o) || o->save_table || keep)) {
        /* Thresholds first; the search then lowers from them as often as it needs. */
        int64_t samples = 0;
        if (co.ndata > 0)
            rc = oqc_calibrate(g, gb, o->batch, &co, &es, &n, &samples, d);
        else {
            es = table;
            n = ntable;
        }
        Builder b = {o, cfg, es, n};
        if (rc == 0 && wants_mixprec(o) &&
            on_validation(o, &b, o->val, o->val_labels, g->arena, &cfg->fp32_nodes, NULL, d) < 0)
            rc = -1;
        OqcTableExtra wx = {cfg->fp32_nodes, o->pre.given ? o->pre.spec : NULL};
        if (rc == 0 && o->save_table)
            rc = oqc_table_write_xml_ex(o->save_table, es, n, samples, &wx, d);
        co.table = es;
        co.ntable = n;
        co.ndata = 0;
        if (keep)
            *keep = b;
    }
    if (rc == 0)
        rc = oqc_lower_int8(g, gb, o->batch, &co, cfg, NULL, NULL, d);
    oqc_graph_free(gb);
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

static int cmd_eval(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--labels", "--calib", "--table",
                                          "--preprocess",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--sensitivity", "--min-sqnr", "--max-drop", "--val",
                                          "--val-labels", "--save-table",
                                          "--weight-bits", "--fp32-nodes", "--save-int8", "--save-fp32",
                                          "--limit", "--input-shape", "--threads",
                                          "--portable-fp32", "--passes", "--disable-pass",
                                          "--no-opt", "--json", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "eval", allowed, &o, d);
    if (rc == 0 && !o.model)
        rc = oqc_err(d, "oqc eval: give the model: oqc eval MODEL.onnx --data X.npy ...");
    if (rc == 0 && o.ndata != 1)
        rc = oqc_err(d, "oqc eval: give the evaluation inputs with one --data X.npy (or a "
                        "folder, list or file of images)");
    OqcQuantConfig cfg;
    Builder keep;
    OqcGraph *gq = rc == 0 ? build_int8("eval", &o, &cfg, o.sensitivity ? &keep : NULL, d) : NULL;
    OqcGraph *gf = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (gf && optimize(gf, &o, 1, 0, d) < 0) {
        oqc_graph_free(gf);
        gf = NULL;
    }
    OqcValue data, labels;
    const char **images = NULL;
    int nimages = 0;
    if (gf && oqc_cli_images(o.data[0], &o, gf->arena, &images, &nimages, o.labels, &labels, d) < 0)
        rc = -1;
    if (gf && rc == 0 && !images && oqc_npy_read(o.data[0], gf->arena, &data, d) < 0)
        rc = -1;
    /* the bytes are read as the input's element type: they must be that type */
    if (gf && rc == 0 && !images && gf->ninputs > 0 &&
        data.dtype != gf->tensors[gf->inputs[0]].dtype)
        rc = oqc_err(d, "%s: holds %s data but input '%s' is %s", o.data[0],
                     oqc_dtype_name(data.dtype), gf->tensors[gf->inputs[0]].name,
                     oqc_dtype_name(gf->tensors[gf->inputs[0]].dtype));
    if (gf && rc == 0 && !images && o.labels &&
        oqc_npy_read(o.labels, gf->arena, &labels, d) < 0)
        rc = -1;
    if (!gf)
        rc = -1;
    if (rc == 0) {
        OqcEvalOptions eo = {images ? NULL : &data, o.data[0], o.labels ? &labels : NULL,
                             o.labels, o.threads ? o.threads : oqc_cli_default_threads(), 1,
                             o.requant ? o.requant : "float", o.save_int8, o.save_fp32,
                             NULL, stdout, o.limit, images, nimages, &o.pre, o.json};
        rc = oqc_eval(gf, gq, &eo, d);
    }
    if (rc == 0 && o.sensitivity) {
        OqcSensitivity sens;
        rc = on_validation(&o, &keep, o.data[0], o.labels, gf->arena, NULL, &sens, d);
        if (rc == 0) {
            oqc_sensitivity_print(stdout, &sens);
            if (o.json)
                oqc_cli_json_sensitivity(o.json, &sens);
            oqc_sensitivity_free(&sens);
        }
    }
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_graph_free(gf);
    oqc_graph_free(gq);
    oqc_cli_free_opts(&o);
    return rc;
}

/* Lowers o->model as compile's options say (INT8 or --precision fp32) and emits it as C
 * into outdir under the name *name (o->name or the model's); the summary line unless -q. */
static int compile_model(const char *cmd, Opts *o, const char *outdir, OqcEmitStats *st,
                         char *name, size_t name_cap, OqcDiag *d) {
    const char *prec = o->precision ? o->precision : "int8";
    int rc = 0;
    if (strcmp(prec, "int8") && strcmp(prec, "fp32"))
        rc = oqc_err(d, "oqc %s: unknown --precision '%s' (int8 or fp32)", cmd, prec);
    int int8 = !strcmp(prec, "int8");
    if (rc == 0 && !int8 &&
        (o->ncalib || o->table || o->method || o->requant || o->fp32_nodes || o->weight_bits ||
         wants_mixprec(o) || o->save_table))
        rc = oqc_err(d, "oqc %s: --calib, --table, --method, --requant, --weight-bits, "
                        "--fp32-nodes, --min-sqnr, --max-drop and --save-table apply to "
                        "--precision int8 only", cmd);
    if (rc == 0 && o->name)
        rc = oqc_c_name_check(o->name, d);
    OqcQuantConfig cfg;
    OqcGraph *g = NULL;
    if (rc == 0 && int8) {
        g = build_int8(cmd, o, &cfg, NULL, d);
    } else if (rc == 0) {
        g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
        if (g && oqc_cli_optimize(g, o, d) < 0) {
            oqc_graph_free(g);
            g = NULL;
        }
    }
    /* The emitted code's plan: its scratch is sized for --threads (1 unless given) */
    OqcExec *e = g ? oqc_exec_new(g, o->threads ? o->threads : 1, d) : NULL;
    if (!e) {
        oqc_graph_free(g);
        return -1;
    }
    const char *precision =
        !int8 ? prec
              : oqc_arena_printf(g->arena, "int8, %s requantization%s",
                                 o->requant && !strcmp(o->requant, "fixed") ? "fixed-point" : "float",
                                 oqc_weight_bits(&cfg) != 8
                                     ? oqc_arena_printf(g->arena, ", %d-bit weights",
                                                        oqc_weight_bits(&cfg))
                                     : "");
    OqcEmitOptions eo = {.outdir = outdir, .precision = precision, .stats = st,
                         .target = o->target, .preprocess = o->pre.given ? o->pre.spec : NULL,
                         .name = o->name ? o->name : oqc_c_name_from_path(g->arena, o->model)};
    rc = oqc_emit_c(e, &eo, d);
    snprintf(name, name_cap, "%s", eo.name);
    if (rc == 0 && !o->quiet) {
        char other[64] = "";
        if (st->arena_bytes_noamx != st->arena_bytes)
            snprintf(other, sizeof other, "; %zu off x86-64 Linux", st->arena_bytes_noamx);
        printf("%s: compiled to %s/%s.c (%s): %d nodes, arena %zu bytes%s (activations %zu "
               "planned, %zu if none shared, largest live set %zu), %d constants (%zu bytes), "
               "%d files (%d runtime)\n", o->model, outdir, eo.name, precision, g->nnodes,
               st->arena_bytes, other, oqc_exec_arena_bytes(e), oqc_exec_total_bytes(e),
               oqc_exec_peak_live(e), st->nconst, st->weight_bytes, st->nfiles, st->nruntime);
    }
    if (rc == 0 && o->json) /* bench's files are its scratch: not listed */
        oqc_cli_json_compiled(o->json, strcmp(cmd, "bench") ? outdir : NULL, eo.name, precision,
                              o->target ? o->target : oqc_default_target(), g, e, st);
    oqc_exec_free(e);
    oqc_graph_free(g);
    return rc;
}

/* oqc compile: the optimised model as C (emit_c.c), with --main a driver to run it. */
static int cmd_compile(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--name", "--precision", "--calib", "--table",
                                          "--target", "--preprocess", "--main",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--weight-bits", "--fp32-nodes", "--input-shape",
                                          "--min-sqnr", "--max-drop", "--val", "--val-labels",
                                          "--save-table", "--threads", "--portable-fp32",
                                          "--passes", "--disable-pass", "--no-opt", "--json",
                                          "-v", "-q", "-MD", "-MF", "-MT", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "compile", allowed, &o, d);
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc compile: give the output directory with -o OUTDIR");
    OqcEmitStats st;
    char name[256];
    if (rc == 0)
        rc = compile_model("compile", &o, o.out, &st, name, sizeof name, d);
    if (rc == 0 && o.main_driver)
        rc = oqc_cli_write_driver(o.out, name, o.pre.given, o.json, d);
    char main_c[4096], dflt[4096];
    snprintf(main_c, sizeof main_c, "%s/%s.c", o.out ? o.out : ".", name);
    snprintf(dflt, sizeof dflt, "%s/%s.d", o.out ? o.out : ".", name);
    if (rc == 0)
        rc = oqc_cli_write_depfile(&o, main_c, dflt, d);
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_cli_free_opts(&o);
    return rc;
}

/* oqc bench: compile into a temporary directory, build with the system compiler and
 * time the emitted code (cli_bench.c), like TensorRT's trtexec. */
static int cmd_bench(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--precision", "--calib", "--table", "--target",
                                          "--preprocess", "--method", "--bins", "--batch",
                                          "--requant", "--weight-bits", "--fp32-nodes",
                                          "--input-shape", "--threads", "--portable-fp32",
                                          "--runs", "--warmup",
                                          "--input", "--passes", "--disable-pass", "--no-opt",
                                          "--json", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "bench", allowed, &o, d);
    if (rc == 0 && o.ninputs > 1)
        rc = oqc_err(d, "oqc bench: give at most one --input FILE (the sample to time)");
    const char *tmp = getenv("TMPDIR");
    char outdir[4096];
    snprintf(outdir, sizeof outdir, "%s/oqc-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (rc == 0 && !mkdtemp(outdir))
        rc = oqc_err(d, "%s: cannot create a temporary directory", outdir);
    int made = rc == 0;
    OqcEmitStats st;
    char name[256];
    int quiet = o.quiet;
    o.quiet = 1;
    if (rc == 0)
        rc = compile_model("bench", &o, outdir, &st, name, sizeof name, d);
    if (rc == 0 && !quiet)
        printf("%s: %s, arena %zu bytes, weights %zu bytes (%d constants); target %s\n",
               o.model, o.precision ? o.precision : "int8", st.arena_bytes, st.weight_bytes,
               st.nconst, o.target ? o.target : oqc_default_target());
    fflush(stdout);
    if (rc == 0)
        rc = oqc_cli_write_driver(outdir, name, o.pre.given, NULL, d);
    if (rc == 0)
        rc = oqc_cli_bench_run(outdir, name, oqc_target_flags(o.target), o.threads,
                               o.pre.given, o.runs < 0 ? 100 : o.runs,
                               o.warmup < 0 ? 10 : o.warmup, o.ninputs ? o.inputs[0] : NULL,
                               o.json, d);
    if (made)
        oqc_cli_remove_dir(outdir);
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_cli_free_opts(&o);
    return rc;
}

/* oqc export-qdq: the model as ONNX with QuantizeLinear/DequantizeLinear carrying oqc's
 * INT8 quantization (export_qdq.c).  Two graphs: the INT8 lowering (the whole pipeline,
 * thresholds, pass quantize) decides; the graph after cleanup and fold-bn is written. */
static int cmd_export_qdq(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--calib", "--table", "--method", "--bins",
                                          "--batch", "--weight-bits", "--fp32-nodes",
                                          "--min-sqnr", "--max-drop", "--val", "--val-labels",
                                          "--save-table", "--preprocess", "--input-shape",
                                          "--threads", "--portable-fp32", "-v", "-q", "-MD",
                                          "-MF", "-MT", NULL};
    /* --weight-type is this command's own option: taken out before parse_opts */
    OqcQdqOptions xo = {NULL, 0};
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, rc = 0;
    if (!args)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--weight-type")) {
            if (i + 1 >= argc) {
                rc = oqc_err(d, "oqc export-qdq: option '--weight-type' needs a value");
                break;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--weight-type=", 14)) {
            v = argv[i] + 14;
        } else {
            args[nargs++] = argv[i];
            continue;
        }
        if (strcmp(v, "int8") && strcmp(v, "uint8")) {
            rc = oqc_err(d, "oqc export-qdq: --weight-type '%s': expected int8 or uint8", v);
            break;
        }
        xo.weight_uint8 = !strcmp(v, "uint8");
    }
    Opts o;
    if (rc == 0)
        rc = oqc_cli_parse_opts(nargs, args, "export-qdq", allowed, &o, d);
    else
        memset(&o, 0, sizeof o);
    free(args);
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc export-qdq: give the output model with -o OUT.onnx");
    xo.path = o.out;
    OqcQuantConfig cfg;
    OqcGraph *gq = rc == 0 ? build_int8("export-qdq", &o, &cfg, NULL, d) : NULL;
    OqcGraph *g = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    int verbose = d->verbose;
    d->verbose = 0; /* the pipeline's statistics were shown for gq already */
    if (g && oqc_run_passes(g, "cleanup,fold-bn", NULL, NULL, NULL, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    d->verbose = verbose;
    OqcQdqStats st;
    rc = g ? oqc_export_qdq(g, gq, &xo, &st, d) : -1;
    char dflt[4096];
    snprintf(dflt, sizeof dflt, "%s.d", o.out ? o.out : "");
    if (rc == 0)
        rc = oqc_cli_write_depfile(&o, o.out, dflt, d);
    if (rc == 0 && !o.quiet)
        printf("%s: wrote %s (%lld bytes): %d activation tensors with QuantizeLinear/"
               "DequantizeLinear (%d uint8 zero point 0, %d uint8 zero point 128), %d %s "
               "weights, %d int32 biases\n", o.model, o.out, (long long)st.bytes, st.nact,
               st.nact_zp0, st.nact - st.nact_zp0, st.nweights,
               xo.weight_uint8 ? "uint8 (zero point 128)" : "int8", st.nbias);
    oqc_graph_free(g);
    oqc_graph_free(gq);
    oqc_cli_free_opts(&o);
    return rc;
}

typedef struct Command {
    const char *name;                                 /* command word */
    int (*fn)(int argc, char **argv, OqcDiag *d);     /* its implementation */
} Command;

static const Command commands[] = {
    {"dump", oqc_cli_dump},
    {"check", oqc_cli_check},
    {"run", oqc_cli_run},
    {"calibrate", cmd_calibrate},
    {"compile", cmd_compile},
    {"export-qdq", cmd_export_qdq},
    {"eval", cmd_eval},
    {"bench", cmd_bench},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(oqc_usage_text, stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("oqc %s\n", OQC_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        const char *u = argc > 2 ? oqc_usage(argv[2]) : NULL;
        if (argc > 2 && !u) {
            fprintf(stderr, "oqc help: unknown command '%s'\n\n%s", argv[2], oqc_usage_text);
            return 1;
        }
        fputs(u ? u : oqc_usage_text, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, cmd))
            continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                const char *u = oqc_usage(cmd);
                fputs(u ? u : oqc_usage_text, stdout);
                return 0;
            }
        OqcDiag d;
        oqc_diag_init(&d);
        oqc_tmp_remove_on_signals(); /* an interrupted command leaves no temporaries */
        oqc_in_remember(1);          /* and never writes over one of its inputs */
        int rc = commands[i].fn(argc - 2, argv + 2, &d);
        if (rc < 0 || d.nerrors) {
            fflush(stdout);
            fputs(d.buf ? d.buf : "oqc: failed\n", stderr);
        }
        oqc_diag_free(&d);
        return rc < 0 ? 1 : 0;
    }
    fprintf(stderr, "oqc: unknown command '%s'\n\n%s", cmd, oqc_usage_text);
    return 1;
}
