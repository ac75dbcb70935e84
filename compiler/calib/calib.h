/* calib.h - calibration (histograms, thresholds, tables, reports), evaluation
 * of INT8 against FP32, and the mixed-precision search.
 */
#ifndef OQC_CALIB_H
#define OQC_CALIB_H

#include "exec.h"
#include "frontend.h"

/* ===================================================================== calib.c */

/* Calibration (contract: docs/calibration.md): per quantized tensor, a histogram of |x|
 * over [0, amax] with nbins equal bins, summed over every sample; a method picks the
 * saturation threshold T from it. */
typedef enum OqcCalibMethod {
    OQC_CALIB_ENTROPY,     /* TensorRT's KL-divergence search */
    OQC_CALIB_MAX,         /* T = amax */
    OQC_CALIB_PERCENTILE,  /* T = upper edge of the bin where the CDF reaches P% */
    OQC_CALIB_MSE,         /* T minimising expected squared quantization error */
} OqcCalibMethod;

/* Histogram of |x| for one tensor. */
typedef struct OqcHist {
    float amax;            /* largest |x| over the whole calibration set */
    int nbins;             /* N (2048 by default) */
    uint64_t *bins;        /* counts; a value equal to amax falls in the last bin */
    uint64_t count;        /* values added */
    int32_t nch;           /* channel scale candidates (oqc_channel_scaled): channels, */
    float *ch_amax;        /* and each one's largest |x| (pass 1); else 0 and NULL */
} OqcHist;

/* The calibration result of one tensor. */
typedef struct OqcCalibEntry {
    const char *name;      /* tensor name */
    float amax;            /* largest |x| */
    float threshold;       /* chosen T */
    float scale;           /* T / 127, or T / 255 for an unsigned tensor */
    int is_unsigned;       /* provably non-negative: stored as u8 */
    const char *method;    /* "entropy", "max", "percentile:P", "mse" or "table" */
    double clipped;        /* share of values above T */
    double kl;             /* KL divergence at T (entropy only; else NaN) */
    const OqcHist *hist;   /* its histogram (NULL for imported entries) */
    double *divergence;    /* entropy: divergence per candidate bin index i (nbins
                              entries, NaN where not evaluated), else NULL */
    const char *op;        /* op type of the producer ("input" for graph inputs) */
    OqcShape shape;        /* tensor shape */
    int32_t nch;           /* per-channel thresholds (docs/calibration.md, "Channel */
    const float *ch_threshold; /* scales"): count and values; 0 and NULL for none */
} OqcCalibEntry;

/* The base of the default method `auto` (tune.c): percentile:99.99, chosen on the real
 * networks of the development set (docs/calibration.md, "The default method"). */
#define OQC_CALIB_DEFAULT "percentile:99.99"
#define OQC_CALIB_DEFAULT_PERCENTILE 99.99
/* Parses "entropy", "max", "percentile:P" (0 < P <= 100) or "mse". */
int oqc_calib_method_parse(const char *s, OqcCalibMethod *m, double *param, OqcDiag *d);
/* Adds n values' |x| to h (amax and nbins already set; |x| > amax is an error of the
 * caller: the amax pass saw every value). Vectorisable. */
void oqc_hist_add(OqcHist *h, const float *x, int64_t n);
/* The entropy method's Q expansion (exposed for tests): the i bins of p are split into
 * `levels` groups of i / levels bins (the last group takes the remainder); each group's
 * total is spread evenly over the group's bins that are non-zero in p. */
void oqc_entropy_expand(const double *p, int i, int levels, double *q);
/* Picks T for h; param: P for percentile; for entropy 0 leaves bin 0 out of the search
 * (the default, see docs/calibration.md), non-zero keeps it (the contract's literal
 * steps); levels = 128 (signed) or 255 (unsigned entropy option; any levels >= 1 is
 * accepted); mse models the rounding step the tensor will have, T / 255 when
 * e->is_unsigned (or levels == 255), else T / 127; for entropy fills divergence
 * (nbins entries, NaN where not evaluated; may be NULL). Sets e->threshold, amax,
 * clipped, kl (NaN unless entropy) and scale (T / 127, or T / 255 when e->is_unsigned,
 * which the caller sets first). Returns 0, or -1 when amax is not finite (the data held
 * non-finite values: the caller reports it). */
int oqc_calib_threshold(const OqcHist *h, OqcCalibMethod m, double param, int levels,
                        OqcCalibEntry *e, double *divergence);

/* TensorRT calibration cache: "TRT-<version>-<Kind>Calibration" then one line per
 * tensor "NAME: HHHHHHHH" (the float32 bits of T/127, 8 lowercase hex digits: a signed
 * entry's own scale, so a cache read and written again is byte-identical). kind is
 * "Entropy", "MinMax", ... ("Calibration" is appended) or a whole kind such as
 * "EntropyCalibration2"; NULL means "Entropy". */
int oqc_table_write_trt(const char *path, const char *kind, const OqcCalibEntry *e, int n,
                        OqcDiag *d);
/* Reads a cache into entries allocated in a (threshold = scale * 127, amax = threshold,
 * signed, method "table", clipped and kl NaN). */
int oqc_table_read_trt(const char *path, OqcArena *a, OqcCalibEntry **e, int *n, OqcDiag *d);
/* XML form (schema docs/calib-table.rng): name, method, amax, threshold, scale,
 * signedness, samples per tensor. */
int oqc_table_write_xml(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                        OqcDiag *d);
int oqc_table_read_xml(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                       int64_t *samples, OqcDiag *d);
/* What an XML table carries besides the thresholds (docs/calibration.md). */
typedef struct OqcTableExtra {
    const char *float_layers;  /* the layers mixed precision keeps float (<float-layer>
                                  elements): a comma list, NULL for none */
    const char *preprocess;    /* the --preprocess spec images were calibrated with (root
                                  attribute "preprocess"), NULL for none */
} OqcTableExtra;
/* The same with the extras x (NULL: none); on reading, *x receives them (NULL fields
 * when absent; strings in arena a). */
int oqc_table_write_xml_ex(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                           const OqcTableExtra *x, OqcDiag *d);
int oqc_table_read_xml_ex(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                          int64_t *samples, OqcTableExtra *x, OqcDiag *d);

/* ================================================================= calibrate.c */

/* The streaming statistics of a calibration, for calibration split across machines
 * (docs/calibration.md, "Calibration split across machines"): stage 1 holds each
 * histogram's amax over some samples; stage 2 the histograms themselves, binned over
 * the agreed (merged stage-1) amax.  Stage-1 statistics merge by maximum, stage-2 ones
 * by summing counts, so merging the shards' statistics gives exactly what one run over
 * all of them holds. */
typedef struct OqcCalibStats {
    const char *path;        /* the file read or written (for messages), or NULL */
    int stage;               /* 1: amax only; 2: histograms */
    int nhists;              /* histograms: one per calibrated root tensor */
    int bins;                /* bins per histogram */
    const char **names;      /* [nhists] the root tensors' names, in the model's order */
    OqcHist *hists;          /* [nhists] amax (and, stage 2, count and bins) */
    int64_t samples;         /* samples these statistics cover */
    int64_t range_samples;   /* stage 2: the samples its amax was measured over */
    const char *preprocess;  /* the --preprocess spec of image data, or NULL */
} OqcCalibStats;

/* What to calibrate and how. */
typedef struct OqcCalibOptions {
    const char *const *data;     /* data paths: directories of .npy/.pb, or files */
    int ndata;                   /* number of paths */
    OqcCalibMethod method;       /* threshold method */
    double param;                /* percentile P */
    const char *method_name;     /* as given, recorded in the table */
    int bins;                    /* histogram bins (2048) */
    int threads;                 /* executor threads */
    int progress;                /* draw a progress bar on stderr */
    const OqcCalibEntry *table;  /* imported thresholds that override calibration */
    int ntable;                  /* their count */
    const OqcPreprocess *pre;    /* how image files become inputs, or NULL */
    const OqcCalibStats *range;  /* stage-1 statistics: run pass 2 only, over their amax */
    const OqcCalibStats *merged; /* stage-2 statistics: no data, thresholds from these */
    OqcCalibStats *save;         /* receives the statistics (stage 1, or 2 with range)
                                    instead of thresholds (*nentries 0) */
    int tune;                    /* the default method (`auto`): oqc_calibrate picks
                                    percentile:99.99 and the caller then runs
                                    oqc_tune_percentiles (not oqc_calibrate's business) */
} OqcCalibOptions;

/* Runs the (optimised) graph over the data twice (amax, then histograms) and picks a
 * threshold for every float activation tensor; entries live in g1's arena. g1 runs one
 * sample at a time; gb (may be NULL) is the same model re-batched to b samples
 * (oqc_rebatch), used for every full batch. The result does not depend on b. */
int oqc_calibrate(OqcGraph *g1, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                  OqcCalibEntry **entries, int *nentries, int64_t *nsamples, OqcDiag *d);
/* calib_stats.c: writes st as a statistics file (docs/calibration.md), completely or
 * not at all. */
int oqc_calib_stats_write(const char *path, const OqcCalibStats *st, OqcDiag *d);
/* Reads and validates a statistics file into *st (in arena a); errors name the file. */
int oqc_calib_stats_read(const char *path, OqcArena *a, OqcCalibStats *st, OqcDiag *d);
/* Merges n statistics of one stage (maximum of amax; stage 2: sums of counts, every
 * file binned over the same amax) into *out, in arena a; an error names the first file
 * that does not agree with the first one. */
int oqc_calib_stats_merge(const OqcCalibStats *in, int n, OqcArena *a, OqcCalibStats *out,
                          OqcDiag *d);

/* The graph-level conditions of calibration (one float input): 0, or -1 with an error. */
int oqc_calib_check_input(const OqcGraph *g, OqcDiag *d);
/* A table with threshold 1 for every tensor calibration gives one (in arena a): the
 * tensors a table-driven INT8 lowering sees, for `oqc check`. */
void oqc_calib_placeholder(const OqcGraph *g, OqcArena *a, OqcCalibEntry **e, int *n);

/* Marks provably non-negative tensors (u8 storage) in nonneg (ntensors entries):
 * outputs of Relu, Clip with min >= 0, Sigmoid, convs with such a fused activation,
 * pooling/reshapes/concats/sums of non-negative tensors. */
void oqc_find_unsigned(const OqcGraph *g, unsigned char *nonneg);
/* Whether activation t may carry one scale per channel: a 4-D tensor written by a Conv
 * (its own buffer, not a graph output) and read only as the input of depthwise Convs
 * (one input channel per group, one output per channel), whose requantization is per
 * channel anyway (docs/calibration.md, "Channel scales").  Returns its channel count,
 * else 0. */
int32_t oqc_channel_scaled(const OqcGraph *g, int t);
/* The channel thresholds of a tensor with threshold T from its channels' amax: each
 * channel's amax, but at least OQC_CHANNEL_FLOOR * T (a channel barely active on the
 * calibration data must not get a range its first large value would clip) and at most T
 * (no channel is coarser than the tensor's one scale, and the method's clipping of rare
 * outliers holds in every channel). */
#define OQC_CHANNEL_FLOOR 0.25f
void oqc_channel_thresholds(float T, const float *ch_amax, int32_t nch, float *out);

/* ============================================================== calib_report.c */

/* Writes a self-contained HTML report (inline SVG and CSS, no script): a summary table
 * and, per tensor, the |x| histogram on a log axis with amax and T marked and the
 * divergence curve. */
int oqc_calib_report(const char *path, const char *model, const OqcCalibEntry *e, int n,
                     int64_t samples, OqcDiag *d);
/* The same with a section "Sensitivity" (sens may be NULL: none). */
struct OqcSensitivity;
int oqc_calib_report_ex(const char *path, const char *model, const OqcCalibEntry *e, int n,
                        int64_t samples, const struct OqcSensitivity *sens, OqcDiag *d);

/* ==================================================================== eval.c */

/* What `oqc eval` compares and prints. */
typedef struct OqcEvalOptions {
    const OqcValue *data;        /* evaluation inputs (samples on the first axis) */
    const char *data_path;       /* for messages */
    const OqcValue *labels;      /* int64/int32 labels, or NULL */
    const char *labels_path;     /* for messages */
    int threads;                 /* executor threads */
    int per_layer;               /* print the per-layer SQNR table */
    const char *requant_name;    /* "float" or "fixed", for the report */
    const char *save_int8;       /* .npy for the INT8 first output [S, n], or NULL */
    const char *save_fp32;       /* .npy for the float first output, or NULL */
    double *sqnr;                /* receives the centered SQNR per output, or NULL */
    FILE *out;                   /* report stream (stdout when NULL) */
    int64_t limit;               /* evaluate the first `limit` samples only (0: all) */
    const char *const *images;   /* image files, one sample each, decoded one at a time
                                    (data is NULL then), or NULL */
    int64_t nimages;             /* their count */
    const OqcPreprocess *pre;    /* how the images become inputs */
    OqcJson *json;               /* receives the same facts as members of the open object
                                    (docs/json.md), or NULL */
} OqcEvalOptions;

/* How close INT8 outputs are to float ones: S samples of n elements each (the first
 * output), classes on the last axis (cls; < 2: no top-1). */
typedef struct OqcMetrics {
    int64_t rows, nagree;  /* rows compared by top-1, and how many agree */
    double agree;          /* nagree / rows (NaN without classes) */
    double top1_f, top1_q; /* accuracy against labels (NaN without labels) */
    double sqnr;           /* centered output SQNR, dB (see eval.c) */
    double sqnr_raw;       /* uncentered, dB */
} OqcMetrics;
void oqc_metrics(const float *yf, const float *yq, int64_t S, int64_t n, int64_t cls,
                 const int64_t *lab, OqcMetrics *m);
/* m as a JSON object {"rows", "agree", "agreement", "top1_fp32", "top1_int8",
 * "sqnr_db", "sqnr_uncentered_db"} (NaN and infinite figures as null). */
void oqc_metrics_json(OqcJson *j, const OqcMetrics *m);
/* Labels v (int64 or int32) as int64 (a copy in a when converted); error naming path. */
int oqc_labels_i64(const OqcValue *v, const char *path, OqcArena *a, const int64_t **lab,
                   int64_t *n, OqcDiag *d);

/* Runs float graph gf and its INT8 lowering gq (same model, same optimisations) over
 * o->data and prints top-1 agreement, accuracies, output SQNR (centered) and per-layer
 * SQNR. */
int oqc_eval(OqcGraph *gf, OqcGraph *gq, const OqcEvalOptions *o, OqcDiag *d);

/* ================================================================= mixprec.c */

/* Builds the INT8 lowering of the model with the layers named in fp32_nodes (a comma
 * list; NULL or "" for none) kept float, always from the same thresholds; NULL with an
 * error. */
typedef OqcGraph *(*OqcInt8Builder)(void *ctx, const char *fp32_nodes, OqcDiag *d);

/* Sensitivity analysis and the mixed-precision search (docs/calibration.md). */
typedef struct OqcMixOptions {
    const OqcValue *data;        /* validation inputs (float32, samples on axis 0) */
    const char *data_path;       /* for messages */
    const OqcValue *labels;      /* int64/int32 labels of data, or NULL */
    const char *labels_path;     /* for messages */
    const char *fp32_nodes;      /* layers the user keeps float anyway, or NULL */
    double min_sqnr;             /* target: centered output SQNR >= this (dB), or NaN */
    double max_drop;             /* target: top-1 drop <= this (points), or NaN */
    int64_t limit;               /* use the first `limit` samples (0: all) */
    int threads;                 /* executor threads */
    int progress;                /* count layers on stderr */
    int quiet;                   /* the search prints nothing */
    FILE *out;                   /* report stream (stdout when NULL) */
} OqcMixOptions;

/* One layer's sensitivity: the output figures when only it is INT8 (only_q) and when
 * only it stays float (only_f). */
typedef struct OqcSensRow {
    char *layer;           /* node name (as --fp32-nodes takes it) */
    char *op;              /* its op type */
    OqcMetrics only_q, only_f;
} OqcSensRow;
typedef struct OqcSensitivity {
    int64_t samples;       /* validation samples used */
    int labels;            /* top-1 figures are meaningful */
    OqcMetrics all;        /* every layer INT8 */
    int nrows;
    OqcSensRow *rows;      /* most harmful first (lowest only_q SQNR) */
} OqcSensitivity;
/* Measures every INT8 layer of the lowering into *s (free with oqc_sensitivity_free). */
int oqc_sensitivity(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                    OqcSensitivity *s, OqcDiag *d);
/* The table `oqc eval --sensitivity` prints. */
void oqc_sensitivity_print(FILE *out, const OqcSensitivity *s);
void oqc_sensitivity_free(OqcSensitivity *s);
/* Finds the fewest layers to keep float (most harmful first) for the target of o on
 * the validation data; *fp32_nodes receives them, with o->fp32_nodes, as a malloc'd
 * comma list ("" when every layer may stay INT8).  Prints the choice and why. */
int oqc_mixprec_search(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                       char **fp32_nodes, OqcDiag *d);

/* The measurements of the search on their own: the float outputs over o's samples
 * computed once (oqc_mix_open), then the output figures of the INT8 lowering the builder
 * gives with o->fp32_nodes kept float, as often as the caller changes what the builder
 * lowers from (oqc_mix_measure). */
typedef struct OqcMix OqcMix;
int oqc_mix_open(OqcMix **m, OqcGraph *gf, OqcInt8Builder build, void *ctx,
                 const OqcMixOptions *o, OqcDiag *d);
int oqc_mix_measure(OqcMix *m, OqcMetrics *r, OqcDiag *d);
int64_t oqc_mix_samples(const OqcMix *m);
void oqc_mix_close(OqcMix *m);

/* =================================================================== tune.c */

/* The default method (`--method auto`, docs/calibration.md "The default method"):
 * percentile thresholds with one percentile for the signed tensors and one for the
 * unsigned ones, each chosen from OQC_TUNE_LADDER by a coordinate search from 99.99 that
 * moves while the INT8 network's centered output SQNR on the tuning samples grows by more
 * than OQC_TUNE_MARGIN dB. */
#define OQC_TUNE_LADDER {99.9, 99.95, 99.98, 99.99, 99.995, 99.999, 100}
#define OQC_TUNE_START 3           /* 99.99 */
#define OQC_TUNE_MARGIN 0.05       /* dB */
#define OQC_TUNE_SAMPLES 512       /* at most this many calibration samples, evenly spread */

/* What the search found: the percentile of each kind (0 when the model has no such
 * calibrated tensor), the SQNR there and at 99.99 for both, and the settings measured. */
typedef struct OqcTuneResult {
    double p_signed, p_unsigned;
    double sqnr, sqnr_start;
    int measured;
    int64_t samples;
} OqcTuneResult;

/* Up to `want` samples spread evenly over the data files (those calibration reads:
 * oqc_data_files of paths, images through pre) as one float32 value [S, ...in] in arena
 * a; total is their sample count when known, else 0 (then counted first). */
int oqc_tune_samples(const char *const *paths, int npaths, const OqcPreprocess *pre,
                     const OqcShape *in, int64_t total, int64_t want, OqcArena *a,
                     OqcValue *v, OqcDiag *d);
/* Runs the search and leaves es[0..n) (the calibration's entries, which the builder
 * lowers from) at the best setting: entries with a histogram and not imported from a
 * table get the chosen percentile's threshold (and channel thresholds) and method
 * "percentile:P" (strings and channel thresholds in arena a, which must live as long as
 * es).  o carries the tuning samples and gf the float model, as for oqc_mix_open.  On an
 * error the entries are as calibration left them (percentile:99.99). */
int oqc_tune_percentiles(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                         OqcCalibEntry *es, int n, OqcArena *a, OqcTuneResult *r,
                         OqcDiag *d);

#endif
