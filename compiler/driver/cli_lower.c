/* cli_lower.c - what the commands that lower a model to INT8 (calibrate, eval, compile,
 * export-qdq) share: reading a threshold table, the calibration and quantization settings
 * of the options, the float graph optimised again for a second use, the mixed-precision
 * search and sensitivity analysis on validation data, and the whole INT8 lowering
 * (oqc_cli_build_int8).  See cli_int.h. */
#include "cli_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
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

/* --table read into *e, *n (nothing when not given) with what an XML table carries besides
 * thresholds in *x, its preprocessing adopted (adopt_preprocess); 0, or -1 with an error. */
int oqc_cli_load_table(Opts *o, OqcArena *a, OqcCalibEntry **e, int *n, OqcTableExtra *x,
                       OqcDiag *d) {
    x->float_layers = x->preprocess = NULL;
    if (o->table && (read_table(o->table, a, e, n, x, d) < 0 ||
                     adopt_preprocess(o, x->preprocess, d) < 0))
        return -1;
    return 0;
}

/* a and b joined with a comma (either may be NULL or empty), in arena ar. */
const char *oqc_cli_join_list(OqcArena *ar, const char *a, const char *b) {
    if (!a || !*a)
        return b && *b ? b : NULL;
    if (!b || !*b)
        return a;
    return oqc_arena_printf(ar, "%s,%s", a, b);
}

/* Whether the options ask for automatic mixed precision. */
int oqc_cli_wants_mixprec(const Opts *o) {
    return !isnan(o->min_sqnr) || !isnan(o->max_drop);
}

/* The OqcInt8Builder of the mixed-precision search: the model lowered from the
 * thresholds of ctx (a Builder) with the layers fp32_nodes kept float. */
static OqcGraph *build_from_entries(void *ctx, const char *fp32_nodes, OqcDiag *d) {
    const Builder *b = ctx;
    int verbose = d->verbose; /* oqc_cli_reoptimize restores the options' -v: keep the caller's */
    OqcGraph *g = oqc_prepare(b->o->model, b->o->shapes, b->o->nshapes, 1, d);
    int rc = g ? oqc_cli_reoptimize(g, b->o, 1, 1, d) : -1;
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
OqcQuantConfig oqc_cli_quant_config(const Opts *o) {
    OqcQuantConfig cfg = {.requant = o->requant && !strcmp(o->requant, "fixed") ? OQCI_REQ_FIXED
                                                                                : OQCI_REQ_FLOAT,
                          .weight_bits = o->weight_bits,
                          .tensor_scales = o->act_scales && !strcmp(o->act_scales, "tensor")};
    return cfg;
}

/* The float model the validation runs compare against: o->model prepared again and
 * optimised (without -v statistics: shown for the first copy); NULL with an error. */
static OqcGraph *float_reference(const Opts *o, OqcDiag *d) {
    OqcGraph *gf = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (gf && oqc_cli_reoptimize(gf, o, 1, 0, d) < 0) {
        oqc_graph_free(gf);
        return NULL;
    }
    return gf;
}

/* On the validation inputs `data` (labels may be NULL), against the float model loaded
 * here: the mixed-precision search when chosen is given (*chosen: the layers to keep
 * float, in arena a, NULL for none), else the sensitivity analysis into *sens.  The
 * layers b->cfg keeps float stay float in every measurement. */
int oqc_cli_on_validation(const Opts *o, Builder *b, const char *data, const char *labels,
                         OqcArena *a, const char **chosen, OqcSensitivity *sens, OqcDiag *d) {
    OqcValue xv, yv;
    OqcMixOptions mo;
    char *list = NULL;
    int rc = 0;
    OqcGraph *gf = float_reference(o, d);
    if (!gf || mix_options(o, data, labels, gf->arena, &xv, &yv, b->cfg->fp32_nodes, &mo, d) < 0)
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

int oqc_cli_tune(const Opts *o, Builder *b, OqcCalibOptions *co, OqcCalibEntry *es, int n,
                 int64_t total, OqcArena *a, OqcDiag *d) {
    const char *const *paths = co->data;
    int npaths = co->ndata;
    if (npaths == 0 && o->val) {   /* merged statistics: no calibration data here */
        paths = &o->val;
        npaths = 1;
        total = 0;
    }
    if (npaths == 0) {
        if (!o->quiet)
            fprintf(stderr, "oqc: note: without calibration inputs the default method cannot "
                            "choose its percentiles: percentile:99.99 for every tensor (give "
                            "inputs with --val X.npy, or name a --method)\n");
        return 0;
    }
    /* The search only improves on thresholds calibration has already chosen: when it
     * cannot run (a model whose output is not float, an INT8 build that fails and will
     * fail again with its own message), the thresholds stay at 99.99 with a note. */
    OqcDiag td;
    oqc_diag_init(&td);
    td.verbose = d->verbose;
    td.log = d->log;
    OqcGraph *gf = float_reference(o, &td);
    int rc = gf ? 0 : -1;
    td.verbose = d->verbose;   /* (oqc_cli_reoptimize leaves the options' -v on it) */
    OqcValue xv;
    OqcMixOptions mo = {.data = &xv, .data_path = paths[0], .fp32_nodes = b->cfg->fp32_nodes,
                        .threads = o->threads ? o->threads : oqc_cli_default_threads(),
                        .quiet = 1};
    OqcTuneResult r = {0};
    if (rc == 0)
        rc = oqc_tune_samples(paths, npaths, co->pre, &gf->tensors[gf->inputs[0]].shape,
                              total, OQC_TUNE_SAMPLES, gf->arena, &xv, &td);
    if (rc == 0)
        rc = oqc_tune_percentiles(gf, build_from_entries, b, &mo, es, n, a, &r, &td);
    oqc_graph_free(gf);
    if (rc < 0 && !o->quiet)
        fprintf(stderr, "oqc: note: the default method cannot choose its percentiles here "
                        "(%.*s): percentile:99.99 for every tensor\n",
                oqc_diag_len(&td), td.buf ? td.buf : "");
    oqc_diag_free(&td);
    if (rc < 0 || r.measured == 0)
        return 0;
    char ps[32] = "", pu[32] = "";
    if (r.p_signed > 0)
        snprintf(ps, sizeof ps, "signed %g", r.p_signed);
    if (r.p_unsigned > 0)
        snprintf(pu, sizeof pu, "%sunsigned %g", *ps ? ", " : "", r.p_unsigned);
    co->method_name = oqc_arena_printf(a, "auto: percentile %s%s", ps, pu);
    oqc_info(d, "calibration: the default method chose percentile %s%s: output SQNR %.2f dB "
                "on %lld calibration samples (99.99 for every tensor: %.2f dB; %d settings "
                "measured)", ps, pu, r.sqnr, (long long)r.samples, r.sqnr_start, r.measured);
    return 0;
}

/* Runs the passes on g as o says, with -v statistics only when shown is 0 (a second
 * copy of the model: the float reference of eval, the re-batched calibration graph;
 * its statistics were shown for the first) and without pass quantize when no_quantize
 * (the INT8 lowering runs it after calibration: before, it could only say that the
 * graph stays float). */
int oqc_cli_reoptimize(OqcGraph *g, const Opts *o, int shown, int no_quantize, OqcDiag *d) {
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

/* The calibration settings of the options (--method, --bins, --threads, progress on a
 * terminal, --preprocess) over data[0..ndata); 0, or -1 for an unknown --method. */
int oqc_cli_calib_options(Opts *o, const char *const *data, int ndata, OqcCalibOptions *co,
                          OqcDiag *d) {
    *co = (OqcCalibOptions){.method = OQC_CALIB_PERCENTILE,
                            .param = OQC_CALIB_DEFAULT_PERCENTILE,
                            .method_name = OQC_CALIB_DEFAULT,
                            .bins = o->bins ? o->bins : 2048,
                            .data = data,
                            .ndata = ndata,
                            .threads = o->threads ? o->threads : oqc_cli_default_threads(),
                            .progress = !o->quiet && isatty(2),
                            .pre = &o->pre,
                            .tune = !o->method || !strcmp(o->method, "auto")};
    if (co->tune)
        return 0;
    co->method_name = o->method;
    return oqc_calib_method_parse(o->method, &co->method, &co->param, d);
}

/* o->model prepared again, re-batched for --batch N and optimised without -v statistics
 * (they were shown for the first copy) and, when no_quantize, without pass quantize;
 * NULL with an error. */
OqcGraph *oqc_cli_rebatched(const Opts *o, int no_quantize, OqcDiag *d) {
    OqcGraph *gb = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (!gb || oqc_rebatch(gb, o->batch, d) < 0 ||
        oqc_cli_reoptimize(gb, o, 1, no_quantize, d) < 0) {
        oqc_graph_free(gb);
        return NULL;
    }
    return gb;
}

/* The thresholds oqc_cli_build_int8 lowers g with, into co: --table's and --calib's.  When the
 * options search mixed precision, save the table or keep what the sensitivity analysis
 * needs (keep), calibration runs first and co then carries its thresholds as a table;
 * cfg->fp32_nodes receives the layers kept float. */
static int int8_thresholds(Opts *o, OqcGraph *g, OqcGraph *gb, OqcCalibOptions *co,
                           OqcQuantConfig *cfg, Builder *keep, OqcDiag *d) {
    OqcCalibEntry *table = NULL, *es = NULL;
    OqcTableExtra tx;
    int ntable = 0, n = 0, rc = oqc_cli_load_table(o, g->arena, &table, &ntable, &tx, d);
    co->table = table;
    co->ntable = ntable;
    /* Layers kept float: --fp32-nodes and those a table's mixed precision chose. */
    cfg->fp32_nodes = oqc_cli_join_list(g->arena, o->fp32_nodes, tx.float_layers);
    if (rc == 0 && o->save_table &&
        (strlen(o->save_table) <= 4 ||
         strcmp(o->save_table + strlen(o->save_table) - 4, ".xml") != 0))
        rc = oqc_err(d, "--save-table %s: the table is XML, and tables are read as XML "
                        "exactly when their name ends in .xml",
                     o->save_table);
    int tune = co->tune && co->ndata > 0;
    if (rc < 0 || !(oqc_cli_wants_mixprec(o) || o->save_table || keep || tune))
        return rc;
    /* Thresholds first; the search then lowers from them as often as it needs. */
    int64_t samples = 0;
    if (co->ndata > 0)
        rc = oqc_calibrate(g, gb, o->batch, co, &es, &n, &samples, d);
    else {
        es = table;
        n = ntable;
    }
    Builder b = {.o = o, .cfg = cfg, .es = es, .n = n};
    if (rc == 0 && tune && oqc_cli_tune(o, &b, co, es, n, samples, g->arena, d) < 0)
        rc = -1;
    if (rc == 0 && oqc_cli_wants_mixprec(o) &&
        oqc_cli_on_validation(o, &b, o->val, o->val_labels, g->arena, &cfg->fp32_nodes, NULL,
                              d) < 0)
        rc = -1;
    OqcTableExtra wx = {.float_layers = cfg->fp32_nodes,
                        .preprocess = o->pre.given ? o->pre.spec : NULL};
    if (rc == 0 && o->save_table)
        rc = oqc_table_write_xml_ex(o->save_table, es, n, samples, &wx, d);
    co->table = es;
    co->ntable = n;
    co->ndata = 0;
    if (keep)
        *keep = b;
    return rc;
}

/* The INT8 lowering of o->model: optimised, calibrated over --calib data and/or a
 * --table, quantized with --requant/--fp32-nodes (see lower.c).  cfg must outlive
 * the graph. */
OqcGraph *oqc_cli_build_int8(const char *cmd, Opts *o, OqcQuantConfig *cfg, Builder *keep,
                             OqcDiag *d) {
    OqcCalibOptions co;
    if (o->ncalib == 0 && !o->table) {
        oqc_err(d, "oqc %s: INT8 needs thresholds: give calibration data with --calib PATH "
                   "or a table with --table FILE", cmd);
        return NULL;
    }
    if (oqc_cli_calib_options(o, o->calib, o->ncalib, &co, d) < 0)
        return NULL;
    *cfg = oqc_cli_quant_config(o);
    cfg->fp32_nodes = o->fp32_nodes;
    OqcGraph *g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (g && oqc_cli_reoptimize(g, o, 0, 1, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    if (!g)
        return NULL;
    int rebatch = o->batch > 1 && o->ncalib > 0;
    OqcGraph *gb = rebatch ? oqc_cli_rebatched(o, 1, d) : NULL;
    if (rebatch && !gb) {
        oqc_graph_free(g);
        return NULL;
    }
    int rc = int8_thresholds(o, g, gb, &co, cfg, keep, d);
    if (rc == 0)
        rc = oqc_lower_int8(g, gb, o->batch, &co, cfg, NULL, NULL, d);
    oqc_graph_free(gb);
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}
