/* pipeline.c - the one ordered list of passes and the driver that runs them (see
 * passes.h). The order matters: cleanup first (removing Identity and folding constants
 * exposes Conv -> BN -> Relu chains, and makes the constants fold-patterns matches;
 * fold-patterns before reduce-pool, whose means it may absorb; reduce-pool turns global
 * means into pooling before anything looks for pools), BN folding before fusion (the
 * fused node must carry the folded bias; bn-conv only takes the BNs fold-bn could not
 * fold, and makes convs fuse-cbr then fuses with their Relu), fold-pad before fusion and
 * merging (they then see the convs and pools with their final pads), fusion before
 * merging (the merged conv carries each branch's activation), merging before concat
 * elimination (a merged conv's outputs can then be written straight into the concat
 * buffer), and quantize last: it
 * lowers the final float graph, calibrated after all the others (it does nothing without
 * a calibration, so `oqc compile` runs the list up to concat-elim, calibrates, then runs
 * quantize).
 * Each pass removes the nodes it absorbs itself, so no second cleanup is needed. */
#include "passes.h"

#include <string.h>

static const OqcPass pipeline[] = {
    {.name = "cleanup",
     .fn = pass_cleanup,
     .summary = "remove Identity/Dropout, fold constant subgraphs, drop dead nodes",
     .reinfer = 1},
    {.name = "fold-patterns",
     .fn = pass_fold_patterns,
     .summary = "fold x * HardSigmoid(x) into HardSwish, the ReduceMean form of LayerNorm "
                "into LayerNormalization, the Erf form of GELU into Gelu",
     .reinfer = 1},
    {.name = "reduce-pool",
     .fn = pass_reduce_pool,
     .summary = "turn ReduceMean over all spatial axes (or a chain of them) into "
                "GlobalAveragePool",
     .reinfer = 1},
    {.name = "fold-bn",
     .fn = pass_fold_bn,
     .summary = "fold BatchNormalization (and per-channel Mul/Add) into the preceding Conv/Gemm, "
                "and a MatMul's bias Add and scale Mul into it (as a Gemm)",
     .reinfer = 1},
    {.name = "bn-conv",
     .fn = pass_bn_conv,
     .summary = "rewrite a BatchNormalization fold-bn left as a depthwise 1x1 Conv",
     .reinfer = 1},
    {.name = "fold-pad",
     .fn = pass_fold_pad,
     .summary = "fold a zero Pad of the spatial axes into the Conv/AveragePool/MaxPool "
                "reading it; drop a Pad that pads nothing",
     .reinfer = 1},
    {.name = "fuse-cbr",
     .fn = pass_fuse_cbr,
     .summary = "fuse Relu/Clip/LeakyRelu into the preceding Conv/Gemm",
     .reinfer = 1},
    {.name = "merge-1x1",
     .fn = pass_merge_1x1,
     .summary = "merge sibling 1x1 convs that read the same tensor into one conv",
     .reinfer = 1},
    {.name = "concat-elim",
     .fn = pass_concat_elim,
     .summary = "make a channel Concat's producers write into its output; drop the Concat",
     .reinfer = 1},
    {.name = "quantize",
     .fn = pass_quantize,
     .summary = "lower to INT8 with the calibration (compile and eval only; else a no-op)",
     .reinfer = 0},
};

const OqcPass *oqc_pipeline(int *n) {
    *n = (int)(sizeof pipeline / sizeof pipeline[0]);
    return pipeline;
}

const OqcPass *oqc_pass_find(const char *name) {
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++)
        if (strcmp(pipeline[i].name, name) == 0)
            return &pipeline[i];
    return NULL;
}

/* Whether name is in the comma-separated list. */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Every name of the list must be a pass. */
static int check_list(const char *list, const char *flag, OqcDiag *d) {
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int known = 0;
        for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++)
            known |= strlen(pipeline[i].name) == len && !strncmp(pipeline[i].name, p, len);
        if (!known) {
            char names[256] = "";
            for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++) {
                strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, pipeline[i].name, sizeof names - strlen(names) - 1);
            }
            return oqc_err(d, "%s: unknown pass '%.*s' (passes: %s)", flag, (int)len, p, names);
        }
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

int oqc_run_passes(OqcGraph *g, const char *only, const char *disable, OqcAfterPassFn after,
                   void *ctx, OqcDiag *d) {
    if (check_list(only, "--passes", d) < 0 || check_list(disable, "--disable-pass", d) < 0)
        return -1;
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++) {
        const OqcPass *p = &pipeline[i];
        if ((only && !in_list(only, p->name)) || in_list(disable, p->name))
            continue;
        if (p->fn(g, d) < 0)
            return -1;
        if (oqc_graph_toposort(g, d) < 0 || (p->reinfer && oqc_infer_shapes(g, 1, d) < 0))
            return oqc_err(d, "%s: internal: the graph is inconsistent after pass '%s'",
                           g->path, p->name);
        if (after && after(ctx, p->name, g) < 0)
            return -1;
    }
    return 0;
}
