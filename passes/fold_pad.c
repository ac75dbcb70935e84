/* fold_pad.c - pass "fold-pad": a Pad of zeros folded into the Conv or pooling that
 * reads it, and a Pad that pads nothing removed.
 *
 * Exporters write a padded pooling PyTorch has and ONNX lacks as Pad -> pooling:
 * avg_pool2d(kernel 3, stride 1, padding 1) with count_include_pad (PyTorch's default)
 * becomes Pad(1) -> AveragePool(pads 0), and DenseNet's transitions carry a Pad of all
 * zeros. In INT8 a Pad is a float island with a Quantize and a Dequantize around it.
 *
 * A Pad is read as ONNX defines it across opsets: pads an attribute before opset 11 and
 * input 1 from 11 on ([x1_begin, x2_begin, ..., x1_end, ...]), the value an attribute
 * (default 0) before 11 and the optional input 2 from 11 on, the optional axes input 3
 * (opset 18) naming the axes pads covers; mode 'constant' by default. A Pad whose pads
 * are all 0 is the identity in every mode: its readers read its input instead. Else it
 * folds when it is in constant mode with value 0 (pads given as constants), pads only
 * the spatial axes 2.. (N and C pads 0) by non-negative amounts, and its output is
 * read only by one node, as that node's input 0 (not a graph output). With P the
 * reader's own resolved pads (explicit or from auto_pad on the padded shape) and p the
 * Pad's, the reader gets explicit pads P + p (auto_pad dropped), which leaves every
 * window where it was; it folds only where that computes the same:
 *   - Conv: its pads are zeros too: always the same sums;
 *   - AveragePool: the window sums are the same (the Pad's zeros add nothing), and the
 *     divisor must be too. With count_include_pad 1 it counts the taps inside input +
 *     P, the Pad's zeros included, which is count_include_pad 1 over input + P + p.
 *     With count_include_pad 0 it counts the taps inside the padded input, the Pad's
 *     zeros but not P: count_include_pad 1 over input + p when P is 0, and no pooling
 *     at all when P is not (folded only then). The result has count_include_pad 1;
 *   - MaxPool: its pads never win, the Pad's zeros do over negative inputs. Folded only
 *     when the input is provably non-negative (oqc_find_unsigned: Relu, a fused Relu,
 *     Clip with min >= 0, ...) and every window that reaches the padded input has a tap
 *     inside the unpadded one (whose value >= 0 then wins over or equals the zeros),
 *     and the Indices output is unused (its offsets would be of another tensor).
 * The folded reader's output extents must not change (ceil_mode's rule that the last
 * window starts inside the input or its begin padding can drop one where the Pad's end
 * padding becomes the reader's): it is checked after the rewrite, which is undone when
 * it fails. Everywhere else an -v line says why the Pad stays. */
#include "passes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The int64/int32 values of constant 1-D input k of node into v (at most max): their
 * count, or -1 when the input is absent, not such a constant, or longer. */
static int const_ints(const OqcGraph *g, const OqcNode *n, int k, int64_t *v, int max) {
    if (k >= n->nin || n->in[k] < 0)
        return -1;
    const OqcTensor *t = &g->tensors[n->in[k]];
    if (!t->data || !(t->is_const || t->has_value) || t->shape.rank != 1 ||
        t->shape.d[0] > max || (t->dtype != OQCF_INT64 && t->dtype != OQCF_INT32))
        return -1;
    for (int64_t i = 0; i < t->shape.d[0]; i++)
        v[i] = t->dtype == OQCF_INT64 ? ((const int64_t *)t->data)[i]
                                       : ((const int32_t *)t->data)[i];
    return (int)t->shape.d[0];
}

/* Pad node n on an input of rank r: its pads into pads[2r] (begin of each axis, then
 * end) and whether it pads with the constant 0 into *zero. 1, or 0 with why. */
static int pad_amounts(const OqcGraph *g, const OqcNode *n, int r, int64_t *pads, int *zero,
                       char *why) {
    memset(pads, 0, 2 * (size_t)r * sizeof *pads);
    float value = 0;
    if (n->opset < 11) {
        const int64_t *v;
        if (oqc_attr_ints(n, "pads", &v) != 2 * r)
            return oqc_pass_why(why, "it has no attribute 'pads' of %d values", 2 * r);
        memcpy(pads, v, 2 * (size_t)r * sizeof *pads);
        value = oqc_attr_float(n, "value", 0.0f);
    } else {
        int64_t raw[2 * OQC_MAX_RANK], ax[OQC_MAX_RANK];
        int np = const_ints(g, n, 1, raw, 2 * OQC_MAX_RANK);
        int has_axes = n->nin > 3 && n->in[3] >= 0;
        int na = has_axes ? const_ints(g, n, 3, ax, OQC_MAX_RANK) : r;
        if (np < 0 || na < 0 || np != 2 * na)
            return oqc_pass_why(why, "its pads%s are not constants", has_axes ? " or axes" : "");
        for (int i = 0; i < na; i++) {
            int64_t a = has_axes ? (ax[i] < 0 ? ax[i] + r : ax[i]) : i;
            if (a < 0 || a >= r)
                return oqc_pass_why(why, "its axis %" PRId64 " is out of range", ax[i]);
            pads[a] = raw[i];
            pads[r + a] = raw[na + i];
        }
        if (n->nin > 2 && n->in[2] >= 0) {
            const float *cv = oqc_pass_const_f32(g, n->in[2]);
            if (!cv)
                return oqc_pass_why(why, "its constant_value '%s' is not a float constant",
                                    g->tensors[n->in[2]].name);
            value = cv[0];
        }
    }
    const char *mode = oqc_attr_string(n, "mode", "constant");
    *zero = !strcmp(mode, "constant") && value == 0.0f;
    if (strcmp(mode, "constant"))
        oqc_pass_why(why, "it pads in mode '%s'", mode);
    else if (!*zero)
        oqc_pass_why(why, "it pads with the constant %g, not 0", (double)value);
    return 1;
}

/* Whether pads[2r] is all zeros. */
static int pads_nothing(const int64_t *pads, int r) {
    for (int i = 0; i < 2 * r; i++)
        if (pads[i])
            return 0;
    return 1;
}

/* MaxPool geometry w over the unpadded input, the Pad's begin/end pads pb/pe: whether
 * every window with a tap inside the padded input has a tap inside the unpadded one, on
 * each axis (so in the window too). Spatial axis a has its taps at
 * o * stride - pad_begin + j * dilation, the unpadded input at [0, in). */
static int windows_reach_input(const OqcWindow *w, const int64_t *pb, const int64_t *pe) {
    for (int a = 0; a < w->nsp; a++)
        for (int64_t o = 0; o < w->out[a]; o++) {
            int padded = 0, inside = 0;
            for (int64_t j = 0; j < w->kernel[a]; j++) {
                int64_t t = o * w->stride[a] - w->pad_begin[a] + j * w->dilation[a];
                padded |= t >= -pb[a] && t < w->in[a] + pe[a];
                inside |= t >= 0 && t < w->in[a];
            }
            if (padded && !inside)
                return 0;
        }
    return 1;
}

/* Geometry of reader node `node` on input shape xs (Conv: with its weight). */
static int reader_geometry(const OqcGraph *g, int node, const OqcShape *xs, OqcWindow *w) {
    OqcDiag quiet = {0};
    const OqcNode *n = &g->nodes[node];
    if (n->op == OQC_OP_Conv)
        return n->nin > 1 && n->in[1] >= 0
                   ? oqc_conv_geometry(g, node, xs, &g->tensors[n->in[1]].shape, w, &quiet)
                   : -1;
    return oqc_pool_geometry(g, node, xs, w, &quiet);
}

/* Sets the reader's attributes for explicit pads newp (2 * nsp values): its own but
 * pads and auto_pad (and count_include_pad, which becomes 1, for AveragePool). */
static void set_pads(OqcGraph *g, int node, const int64_t *newp, int nsp) {
    OqcNode *n = &g->nodes[node];
    OqcAttr *at = oqc_arena_alloc(g->arena, (size_t)(n->nattr + 2) * sizeof *at);
    int na = 0, avg = n->op == OQC_OP_AveragePool;
    for (int k = 0; k < n->nattr; k++) {
        const char *name = n->attr[k].name;
        if (strcmp(name, "pads") && strcmp(name, "auto_pad") &&
            (!avg || strcmp(name, "count_include_pad")))
            at[na++] = n->attr[k];
    }
    int64_t *p = oqc_arena_dup(g->arena, newp, 2 * (size_t)nsp * sizeof *p);
    at[na++] = (OqcAttr){.name = "pads", .type = OQC_ATTR_INTS, .n = 2 * nsp, .ints = p};
    if (n->op == OQC_OP_AveragePool)
        at[na++] = (OqcAttr){.name = "count_include_pad", .type = OQC_ATTR_INT, .i = 1};
    n->attr = at;
    n->nattr = na;
}

/* Folds Pad `pad` (pads[2r], of zeros) into its one reader: 1, or 0 with why (the graph
 * unchanged). nonneg marks provably non-negative tensors. */
static int fold_into_reader(OqcGraph *g, int pad, const int64_t *pads, int r,
                            const unsigned char *nonneg, char *why) {
    int x = g->nodes[pad].in[0], y = g->nodes[pad].out[0];
    const OqcTensor *yt = &g->tensors[y];
    if (yt->is_output)
        return oqc_pass_why(why, "its output '%s' is a graph output", yt->name);
    if (yt->nconsumers != 1)
        return oqc_pass_why(why, "its output '%s' has %d readers", yt->name, yt->nconsumers);
    int rd = yt->consumers[0];
    OqcNode *n = &g->nodes[rd];
    if (n->op != OQC_OP_Conv && n->op != OQC_OP_AveragePool && n->op != OQC_OP_MaxPool)
        return oqc_pass_why(why, "it is read by %s '%s', not Conv, AveragePool or MaxPool",
                            n->op_type, n->name);
    if (n->in[0] != y)
        return oqc_pass_why(why, "%s '%s' reads it as input other than its data", n->op_type,
                            n->name);
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] < 0 || ((i % r) < 2 && pads[i]))
            return oqc_pass_why(why, "it pads %s",
                                pads[i] < 0 ? "by a negative amount (crops)"
                                            : "the batch or channel axis");
    OqcWindow w0, w1;
    if (reader_geometry(g, rd, &yt->shape, &w0) < 0 || w0.nsp != r - 2)
        return oqc_pass_why(why, "the geometry of %s '%s' is not static", n->op_type, n->name);
    int nsp = w0.nsp;
    int64_t newp[2 * OQC_MAX_RANK];
    int own = 0;
    for (int a = 0; a < nsp; a++) {
        newp[a] = w0.pad_begin[a] + pads[2 + a];
        newp[nsp + a] = w0.pad_end[a] + pads[r + 2 + a];
        own |= w0.pad_begin[a] || w0.pad_end[a];
    }
    if (n->op == OQC_OP_AveragePool && !oqc_attr_int(n, "count_include_pad", 0) && own)
        return oqc_pass_why(why, "AveragePool '%s' has pads of its own and count_include_pad 0 "
                            "(it counts the Pad's zeros but not its own pads)", n->name);
    if (n->op == OQC_OP_MaxPool) {
        if (n->nout > 1 && n->out[1] >= 0 &&
            (g->tensors[n->out[1]].nconsumers || g->tensors[n->out[1]].is_output))
            return oqc_pass_why(why, "MaxPool '%s' has its Indices output used", n->name);
        if (!nonneg[x])
            return oqc_pass_why(why, "MaxPool '%s' reads it and its input '%s' is not provably "
                                "non-negative (the zeros would win over negative values)",
                                n->name, g->tensors[x].name);
    }
    /* Rewrite, then check the folded geometry; undo when it differs. */
    int nattr = n->nattr;
    OqcAttr *attr = n->attr;
    set_pads(g, rd, newp, nsp);
    int ok = reader_geometry(g, rd, &g->tensors[x].shape, &w1) == 0;
    for (int a = 0; ok && a < nsp; a++)
        ok = w1.out[a] == w0.out[a];
    if (ok && n->op == OQC_OP_MaxPool && !windows_reach_input(&w1, pads + 2, pads + r + 2)) {
        n->nattr = nattr;
        n->attr = attr;
        return oqc_pass_why(why, "a window of MaxPool '%s' would see only the Pad's zeros",
                            n->name);
    }
    if (!ok) {
        n->nattr = nattr;
        n->attr = attr;
        return oqc_pass_why(why, "folded, %s '%s' would have other output extents (ceil_mode)",
                            n->op_type, n->name);
    }
    n->in[0] = x;
    return 1;
}

int pass_fold_pad(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    unsigned char *nonneg = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    oqc_find_unsigned(g, nonneg);
    int npad = 0, nnothing = 0, into[OQC_OP_COUNT] = {0}, nfold = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (n->op != OQC_OP_Pad || n->nin < 1 || n->in[0] < 0 || n->nout < 1 ||
            n->out[0] < 0)
            continue;
        npad++;
        int x = n->in[0], y = n->out[0], r = g->tensors[x].shape.rank;
        int64_t pads[2 * OQC_MAX_RANK];
        int zero = 0;
        char why[OQC_WHY_SIZE];
        int ok = r >= 1 && g->tensors[x].dtype == OQCF_FLOAT;
        if (!ok)
            oqc_pass_why(why, "its input '%s' is not a float tensor of known rank",
                         g->tensors[x].name);
        ok = ok && pad_amounts(g, n, r, pads, &zero, why);
        if (ok && pads_nothing(pads, r) && g->tensors[y].is_output) {
            oqc_pass_why(why, "it pads nothing, but its output '%s' is a graph output",
                         g->tensors[y].name);
        } else if (ok && pads_nothing(pads, r)) {
            /* the identity: its readers read x */
            for (int j = 0; j < g->nnodes; j++)
                for (int k = 0; k < g->nodes[j].nin; k++)
                    if (g->nodes[j].in[k] == y)
                        g->nodes[j].in[k] = x;
            dead[i] = 1;
            nnothing++;
            continue;
        } else if (ok && zero) {
            int rd = g->tensors[y].nconsumers == 1 ? g->tensors[y].consumers[0] : -1;
            if (fold_into_reader(g, i, pads, r, nonneg, why)) {
                dead[i] = 1;
                into[g->nodes[rd].op]++;
                nfold++;
                continue;
            }
        }
        oqc_info(d, "fold-pad: '%s' (Pad) stays: %s", n->name, why);
    }
    oqc_info(d, "fold-pad: folded %d of %d Pad into their reader (Conv %d, AveragePool %d, "
             "MaxPool %d); removed %d that pad nothing", nfold, npad, into[OQC_OP_Conv],
             into[OQC_OP_AveragePool], into[OQC_OP_MaxPool], nnothing);
    if (nfold + nnothing)
        oqc_graph_remove_nodes(g, dead);
    return nfold + nnothing;
}
