/* passes.h - oqc's graph passes: one file per pass, one signature, one pipeline.
 *
 * Every pass is `int pass_NAME(OqcGraph *g, OqcDiag *d)`: it rewrites g in place and
 * returns the number of rewrites it made (0: the graph is unchanged) or -1 on a user
 * error. It prints exactly one statistics line with oqc_info (shown with -v), e.g.
 * "fold-bn: folded 20 of 20 BatchNormalization", and when it cannot apply somewhere,
 * says why on further -v lines ("fold-bn: 'bn3' not folded: its input has 2 consumers").
 * A pass must preserve the FP32 outputs (tests/unit/test_passes.c runs every model
 * before and after each pass alone and the whole pipeline).
 *
 * Passes may leave dead nodes and tensors behind; the pipeline relinks, re-sorts and
 * re-infers shapes after every pass (oqc_run_passes), and `cleanup` removes the dead.
 *
 * Adding a pass: write passes/NAME.c with pass_NAME, declare it here, add it to the
 * table in pipeline.c, document it in docs/passes.md, and add op-count tests. */
#ifndef OQC_PASSES_H
#define OQC_PASSES_H

#include "calib.h"

typedef int (*OqcPassFn)(OqcGraph *g, OqcDiag *d);

/* A pass in the pipeline. */
typedef struct OqcPass {
    const char *name;     /* as used by --passes, --disable-pass, --after */
    OqcPassFn fn;         /* the pass */
    const char *summary;  /* one line for `oqc help` and docs */
    int reinfer;          /* re-infer shapes after it (0: the pass sets types itself) */
} OqcPass;

int pass_cleanup(OqcGraph *g, OqcDiag *d);
int pass_fold_patterns(OqcGraph *g, OqcDiag *d);
int pass_reduce_pool(OqcGraph *g, OqcDiag *d);
int pass_fold_bn(OqcGraph *g, OqcDiag *d);
int pass_bn_conv(OqcGraph *g, OqcDiag *d);
int pass_fold_pad(OqcGraph *g, OqcDiag *d);
int pass_fuse_cbr(OqcGraph *g, OqcDiag *d);
int pass_merge_1x1(OqcGraph *g, OqcDiag *d);
int pass_concat_elim(OqcGraph *g, OqcDiag *d);
int pass_quantize(OqcGraph *g, OqcDiag *d);

/* fuse_cbr.c: the OqcfAct equivalent to activation node `node` (Relu, Clip with constant
 * bounds, LeakyRelu): 1, or 0 with the reason in why (OQC_WHY_SIZE bytes). */
#define OQC_WHY_SIZE 256
int oqc_pass_act_of(const OqcGraph *g, int node, OqcfAct *act, char *why);
/* fuse_cbr.c: writes why a pass does not apply into why (OQC_WHY_SIZE bytes); returns 0,
 * so checks can `return oqc_pass_why(why, ...)`. */
int oqc_pass_why(char *why, const char *fmt, ...) OQC_PRINTF(2, 3);

/* fold_bn.c: helpers of the passes that make constants and read BatchNormalization.
 * The float data of constant tensor t, or NULL when t is absent, not a float constant,
 * or held without its values (a summary-only XML constant). */
const float *oqc_pass_const_f32(const OqcGraph *g, int t);
/* A tensor name not yet in the graph: "<base><suffix>", or with ".1", ".2"... appended. */
const char *oqc_pass_unique_name(OqcGraph *g, const char *base, const char *suffix);
/* Adds a float constant of the given shape (values uninitialised); returns its id. */
int oqc_pass_new_const(OqcGraph *g, const char *name, const OqcShape *shape);
/* The per-channel map y = x * scale[c] + shift[c] of inference BatchNormalization
 * `node` (scale = gamma / sqrt(var + eps), shift = beta - mean * scale, in double, in
 * the arena; *nch channels): 1, or 0 with the reason in why (OQC_WHY_SIZE bytes) when
 * it is in training mode, per-activation, uses its training outputs, has an unknown
 * channel count, non-constant parameters or var + eps <= 0. */
int oqc_pass_bn_affine(OqcGraph *g, int node, int64_t *nch, double **scale,
                       double **shift, char *why);

/* fold_matmul.c (part of pass_fold_bn): Add/Mul by per-column constants folded into the
 * MatMul before them, on a linked graph. st: MatMuls rewritten, Mul and Add folded,
 * MatMuls made Gemm; returns st[0]. */
int oqc_fold_matmul(OqcGraph *g, int st[4]);

/* The pipeline, in order; n receives the count. */
const OqcPass *oqc_pipeline(int *n);
/* Looks up a pass by name; NULL if unknown. */
const OqcPass *oqc_pass_find(const char *name);

/* Called after each pass that ran (for --after PASS dumps). */
typedef int (*OqcAfterPassFn)(void *ctx, const char *pass, OqcGraph *g);

/* Runs the pipeline on a shape-inferred graph. only: comma-separated pass names to
 * run (NULL: all), in pipeline order; disable: comma-separated names to skip. After
 * each pass the graph is relinked, sorted and re-inferred, then after() is called.
 * Unknown pass names are an error listing the known ones. */
int oqc_run_passes(OqcGraph *g, const char *only, const char *disable, OqcAfterPassFn after,
                   void *ctx, OqcDiag *d);

/* Sets the quant of every tensor named in e (the calibration result or an imported
 * table) in g; a name g does not have is an error naming it. */
int oqc_quant_apply(OqcGraph *g, const OqcCalibEntry *e, int n, OqcDiag *d);

#endif
