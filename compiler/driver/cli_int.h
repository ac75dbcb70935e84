/* cli_int.h - internal to the oqc command-line driver (build/oqc only, not liboqc),
 * whose files share the parsed options (Opts) and a few helpers (prefix oqc_cli_):
 *   - main.c: the command table, main(), and the commands eval, compile, bench and
 *     export-qdq, so the pipeline reads top to bottom;
 *   - cli_calib.c: the calibrate command;
 *   - cli_lower.c: what the commands that lower to INT8 share (table, calibration
 *     settings, mixed precision, the INT8 lowering itself);
 *   - cli_opts.c: parsing a command's arguments into an Opts and the settings the
 *     options select (which passes run, how many threads);
 *   - cli_fp32.c: the commands on the float graph (dump, check, run);
 *   - cli_bench.c, cli_depfile.c, cli_json.c: bench's build and run, -MD dependency
 *     files, the --json document. */
#ifndef OQC_CLI_INT_H
#define OQC_CLI_INT_H

#include "backend.h"

/* Options shared by the commands. */
typedef struct Opts {
    const char *model;            /* MODEL argument */
    const char *out;              /* -o FILE (NULL: stdout) */
    const char *format;           /* --format */
    OqcInputShape shapes[16];     /* --input-shape, in order */
    int nshapes;                  /* number of --input-shape */
    int verbose;                  /* -v count */
    int quiet;                    /* -q */
    const char *inputs[16];       /* --input [NAME=]FILE, in order */
    int ninputs;                  /* number of --input */
    int threads;                  /* --threads (0: default) */
    const char *labels;           /* --labels FILE (.npy of int64/int32 class ids) */
    const char *after;            /* dump --after PASS|all */
    const char *passes;           /* --passes LIST */
    const char *disable;          /* --disable-pass LIST (repeatable: joined) */
    int no_opt;                   /* --no-opt */
    const char *data[64];         /* calibrate --data PATH (repeatable) */
    int ndata;                    /* number of --data */
    const char *method;           /* calibrate --method */
    int bins;                     /* calibrate --bins */
    const char *report;           /* calibrate --report FILE.html */
    const char *table;            /* --table FILE (imported thresholds) */
    int batch;                    /* calibrate --batch N */
    const char *calib[64];        /* compile/eval --calib PATH (repeatable) */
    int ncalib;                   /* number of --calib */
    const char *requant;          /* --requant float|fixed */
    const char *act_scales;       /* --act-scales channel|tensor */
    int weight_bits;              /* --weight-bits N (2..8; 0: not given, 8) */
    const char *fp32_nodes;       /* --fp32-nodes NAME,... */
    const char *target;           /* compile --target FAMILY */
    const char *save_int8;        /* eval --save-int8 FILE.npy */
    const char *save_fp32;        /* eval --save-fp32 FILE.npy */
    long long limit;              /* eval --limit N (0: every sample) */
    const char *precision;        /* compile --precision int8|fp32 */
    const char *name;             /* compile --name NAME */
    int sensitivity;              /* eval --sensitivity */
    double min_sqnr;              /* --min-sqnr DB (NaN: not given) */
    double max_drop;              /* --max-drop POINTS (NaN: not given) */
    const char *val;              /* --val X.npy (mixed-precision validation inputs) */
    const char *val_labels;       /* --val-labels Y.npy */
    const char *save_table;       /* --save-table FILE.xml (thresholds + float layers) */
    char disable_buf[512];        /* storage for joined --disable-pass values */
    OqcPreprocess pre;            /* --preprocess SPEC (pre.given: 0 when not given) */
    int main_driver;              /* compile --main */
    long runs, warmup;            /* bench --runs N, --warmup N (-1: not given) */
    const char *save_stats;       /* calibrate --save-stats FILE */
    const char *range;            /* calibrate --range FILE (merged stage-1 statistics) */
    const char **merge;           /* calibrate --merge-stats FILE... (malloc'd) */
    int nmerge;                   /* their count */
    int md;                       /* -MD: write a dependency file */
    const char *mf;               /* -MF FILE: its name (NULL: the default, see -MD) */
    const char *mt[16];           /* -MT TARGET (repeatable): the depfile's targets */
    int nmt;                      /* their count (0: every file written) */
    OqcJson *json;                /* --json: the document being built (NULL: not given) */
    int json_fd;                  /* --json: the descriptor of the real standard output */
} Opts;

/* cli_opts.c: parses argv (argc words after the command word) for command cmd, which
 * accepts the options listed in allowed (NULL-terminated); 0, or -1 with an error. */
int oqc_cli_parse_opts(int argc, char **argv, const char *cmd, const char *const *allowed,
                       Opts *o, OqcDiag *d);
/* cli_opts.c: frees what oqc_cli_parse_opts allocated (the --input-shape names, the
 * --merge-stats list). */
void oqc_cli_free_opts(Opts *o);
/* cli_json.c: with --json, begins o's document and sends standard output to standard
 * error; 0, or -1 with an error. */
int oqc_cli_json_start(Opts *o, const char *cmd, OqcDiag *d);
/* cli_json.c: with --json, the command's document is finished and written to the real
 * standard output when rc is 0 (nothing when the command failed); rc, or -1 when
 * writing fails.  Called once by each command that takes --json, before
 * oqc_cli_free_opts.  (While --json is given, standard output is standard error: the
 * human text goes there; docs/json.md.) */
int oqc_cli_json_finish(Opts *o, int rc, OqcDiag *d);
/* cli_json.c: the op types of g's nodes with their counts, as a JSON array of
 * {"op", "count"} sorted by op type (check and compile). */
void oqc_cli_json_ops(OqcJson *j, const OqcGraph *g);
/* cli_json.c: "key": [{"name", "dtype", "shape"}] for tensors ids[0..n) of g. */
void oqc_cli_json_tensors(OqcJson *j, const char *key, const OqcGraph *g, const int *ids,
                          int n);
/* cli_json.c: "compiled": what compile emitted from executor e (its graph, memory
 * plan, constants) and, when outdir is given, the files written (st->files). */
void oqc_cli_json_compiled(OqcJson *j, const char *outdir, const char *name,
                           const char *precision, const char *target, const OqcGraph *g,
                           const OqcExec *e, const OqcEmitStats *st);
/* cli_json.c: calibrate's facts: method, samples, time, outputs, the float layers and
 * every tensor's statistics and threshold (es[0..n)); sens (or NULL) as
 * oqc_cli_json_sensitivity. */
void oqc_cli_json_calibrated(OqcJson *j, const OqcCalibOptions *co, const OqcCalibEntry *es,
                             int n, int64_t samples, double seconds, const char *table,
                             const char *format, const char *report, const char *float_layers,
                             const OqcSensitivity *sens);
/* cli_json.c: "sensitivity": the table `--sensitivity` prints. */
void oqc_cli_json_sensitivity(OqcJson *j, const OqcSensitivity *s);
/* cli_opts.c: runs the pass pipeline on g as --passes, --disable-pass, --after and
 * --no-opt say. */
int oqc_cli_optimize(OqcGraph *g, const Opts *o, OqcDiag *d);
/* cli_opts.c: when path is image data (a folder, a list file or an image), its image
 * files (*files, *n; an error unless --preprocess was given) and, with labels (a .npy,
 * "folders" or a PATH CLASS list), their labels in *lab; *files NULL for tensor data. */
int oqc_cli_images(const char *path, const Opts *o, OqcArena *a, const char ***files, int *n,
                   const char *labels, OqcValue *lab, OqcDiag *d);
/* cli_bench.c: writes the driver of `oqc compile --main` into outdir (main.c,
 * main_hooks.h, a Makefile building NAME_main with NAME.mk's flags); images: the model
 * has a preprocessing spec, so the driver also reads images (oqc_image.c, .h); json (or
 * NULL) receives "driver_files", their paths. */
int oqc_cli_write_driver(const char *outdir, const char *name, int images, OqcJson *json,
                         OqcDiag *d);
/* cli_bench.c: builds the model emitted as `name` in outdir with its driver (the system
 * compiler, $CC or cc, with cflags; C11 and -pthread when it was compiled for threads > 1)
 * and runs it: warmup runs, then runs timed runs and the per-layer profile; input: a
 * .npy/raw file for the sample (or an image, with images: the driver built with its
 * image reader), or NULL; json (or NULL) receives "latency" and "layers" (docs/json.md). */
int oqc_cli_bench_run(const char *outdir, const char *name, const char *cflags, int threads,
                      int images, long runs, long warmup, const char *input, OqcJson *json,
                      OqcDiag *d);
/* cli_bench.c: removes directory dir and the files in it (oqc bench's scratch). */
void oqc_cli_remove_dir(const char *dir);
/* cli_depfile.c: with -MD, writes the Make dependency file (-MF FILE, else dflt): every
 * output written so far (main, the command's main output, first) depends on every
 * input read; 0, or -1 with an error. */
int oqc_cli_write_depfile(const Opts *o, const char *main, const char *dflt, OqcDiag *d);
/* cli_opts.c: the thread count when --threads is not given (the online CPUs, 1 to 8). */
int oqc_cli_default_threads(void);

/* What every mixed-precision measurement lowers from: the same options and thresholds,
 * only the float layers differ (OqcInt8Builder). */
typedef struct Builder {
    const Opts *o;               /* the options (model, passes, shapes) */
    const OqcQuantConfig *cfg;   /* requantization and weight bits */
    const OqcCalibEntry *es;     /* thresholds */
    int n;                       /* their count */
} Builder;

/* cli_lower.c: --table (nothing when not given) read into *e, *n, with an XML table's
 * float layers and preprocessing in *x (NULL fields when absent); its preprocessing
 * becomes o->pre unless --preprocess differs (an error). */
int oqc_cli_load_table(Opts *o, OqcArena *a, OqcCalibEntry **e, int *n, OqcTableExtra *x,
                       OqcDiag *d);
/* cli_lower.c: a and b joined with a comma (either may be NULL or empty), in arena ar. */
const char *oqc_cli_join_list(OqcArena *ar, const char *a, const char *b);
/* cli_lower.c: whether the options ask for automatic mixed precision. */
int oqc_cli_wants_mixprec(const Opts *o);
/* cli_lower.c: the requantization and weight settings of the options (no float layers). */
OqcQuantConfig oqc_cli_quant_config(const Opts *o);
/* cli_lower.c: the calibration settings of the options over data[0..ndata); 0, or -1
 * for an unknown --method. */
int oqc_cli_calib_options(Opts *o, const char *const *data, int ndata, OqcCalibOptions *co,
                          OqcDiag *d);
/* cli_lower.c: the default method's choice of percentiles (tune.c) for the entries
 * es[0..n) that b lowers from, on up to OQC_TUNE_SAMPLES of the calibration data
 * co->data (total samples; or --val's when co has none, e.g. from merged statistics:
 * without either, a note and nothing changes); co->method_name then says what was chosen
 * (in arena a).  A search that cannot run (e.g. a model whose output is not float) leaves
 * the thresholds as they are with a note: 0 then too. */
int oqc_cli_tune(const Opts *o, Builder *b, OqcCalibOptions *co, OqcCalibEntry *es, int n,
                 int64_t total, OqcArena *a, OqcDiag *d);
/* cli_lower.c: the passes run on g as o says, with -v statistics only when shown is 0
 * and without pass quantize when no_quantize (a second copy of the model). */
int oqc_cli_reoptimize(OqcGraph *g, const Opts *o, int shown, int no_quantize, OqcDiag *d);
/* cli_lower.c: o->model prepared again, re-batched for --batch N and optimised
 * (oqc_cli_reoptimize, shown); NULL with an error. */
OqcGraph *oqc_cli_rebatched(const Opts *o, int no_quantize, OqcDiag *d);
/* cli_lower.c: on validation inputs data (labels may be NULL), against the float model:
 * the mixed-precision search when chosen is given (*chosen: the layers to keep float, in
 * arena a, NULL for none), else the sensitivity analysis into *sens. */
int oqc_cli_on_validation(const Opts *o, Builder *b, const char *data, const char *labels,
                          OqcArena *a, const char **chosen, OqcSensitivity *sens, OqcDiag *d);
/* cli_lower.c: the INT8 lowering of o->model (calibrated over --calib and/or --table,
 * quantized); keep (or NULL) receives what the sensitivity analysis lowers from; cfg must
 * outlive the graph.  NULL with an error. */
OqcGraph *oqc_cli_build_int8(const char *cmd, Opts *o, OqcQuantConfig *cfg, Builder *keep,
                             OqcDiag *d);

/* cli_calib.c: `oqc calibrate`, given the words after its command word; 0, or -1 with
 * the errors in d. */
int oqc_cli_calibrate(int argc, char **argv, OqcDiag *d);

/* cli_fp32.c: the commands, each given the words after its command word and returning
 * 0, or -1 with the errors in d.  `oqc dump`: the IR as text, XML or Graphviz. */
int oqc_cli_dump(int argc, char **argv, OqcDiag *d);
/* `oqc check`: whether oqc can execute and compile the model. */
int oqc_cli_check(int argc, char **argv, OqcDiag *d);
/* `oqc run`: the model in FP32 over input files, outputs printed or written. */
int oqc_cli_run(int argc, char **argv, OqcDiag *d);

#endif
