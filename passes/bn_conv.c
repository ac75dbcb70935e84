/* bn_conv.c - pass "bn-conv": a BatchNormalization that fold-bn left (one whose input
 * is not a Conv/Gemm output that it reads alone: DenseNet's Concat -> BN -> Relu, a BN
 * on a graph input, a pre-activation ResNet's Add -> BN) becomes a depthwise 1x1 Conv.
 *
 * Inference BatchNormalization is, per channel c, y = x * s[c] + t[c] with
 * s = gamma / sqrt(var + eps) and t = beta - mean * s (fold_bn.c computes both in
 * double). That is exactly a Conv with group = C, kernel 1x1, weight W[c, 0, 0, 0] =
 * s[c] and bias B[c] = t[c], each rounded once to float. The FP32 executor runs it with
 * the depthwise kernel (group == C == K, oqcf_conv_dw.c), one multiply-add per element
 * as the BatchNormalization kernel; in INT8 it becomes an INT8 depthwise conv instead
 * of a float island, and fuse-cbr can then fuse the Relu after it.
 *
 * The node is rewritten in place (its name and output stay: --fp32-nodes and reports
 * still find it); its training outputs, unused, are dropped. Only non-empty 4-D float
 * inputs with a known channel count (the INT8 convs are 2-D); otherwise, and for the cases fold-bn
 * refuses too (training mode, spatial=0, parameters that are not constants), an -v line
 * says why and the node stays. */
#include "passes.h"

#include <stdio.h>
#include <string.h>

/* Whether BatchNormalization `node` can become a depthwise conv: 1 with its map, else
 * 0 with the reason in why. */
static int can_rewrite(OqcGraph *g, int node, int64_t *nch, double **scale,
                       double **shift, char *why) {
    const OqcNode *n = &g->nodes[node];
    if (n->nin < 1 || n->in[0] < 0)
        return oqc_pass_why(why, "it has no input");
    const OqcTensor *x = &g->tensors[n->in[0]];
    char sb[64];
    if (x->dtype != OQCF_FLOAT || x->shape.rank != 4)
        return oqc_pass_why(why, "its input '%s' is not a 4-D float tensor (%s %s)", x->name,
                            oqc_dtype_name(x->dtype), oqc_shape_str(&x->shape, sb, sizeof sb));
    if (oqc_shape_numel(&x->shape) == 0)   /* (a conv of group 0 would be invalid) */
        return oqc_pass_why(why, "its input '%s' is empty (%s)", x->name,
                            oqc_shape_str(&x->shape, sb, sizeof sb));
    return oqc_pass_bn_affine(g, node, nch, scale, shift, why);
}

/* Turns BatchNormalization `node` into the depthwise Conv of the map (scale, shift). */
static void rewrite(OqcGraph *g, int node, int64_t nch, const double *scale,
                    const double *shift) {
    const char *base = g->nodes[node].name;
    OqcShape ws = {.rank = 4, .d = {nch, 1, 1, 1}}, bs = {.rank = 1, .d = {nch}};
    int w = oqc_pass_new_const(g, oqc_pass_unique_name(g, base, ".weight"), &ws);
    int b = oqc_pass_new_const(g, oqc_pass_unique_name(g, base, ".bias"), &bs);
    float *wv = g->tensors[w].data, *bv = g->tensors[b].data;
    for (int64_t c = 0; c < nch; c++) {
        wv[c] = (float)scale[c];
        bv[c] = (float)shift[c];
    }
    OqcNode *n = &g->nodes[node];
    int *in = oqc_arena_alloc(g->arena, 3 * sizeof *in);
    in[0] = n->in[0];
    in[1] = w;
    in[2] = b;
    int64_t *ones = oqc_arena_alloc(g->arena, 2 * sizeof *ones);
    ones[0] = ones[1] = 1;
    OqcAttr *at = oqc_arena_alloc(g->arena, 2 * sizeof *at);
    at[0] = (OqcAttr){.name = "group", .type = OQC_ATTR_INT, .i = nch};
    at[1] = (OqcAttr){.name = "kernel_shape", .type = OQC_ATTR_INTS, .n = 2, .ints = ones};
    n->op = OQC_OP_Conv;
    n->op_type = oqc_op_name(OQC_OP_Conv);
    n->nin = 3;
    n->in = in;
    n->nout = 1;
    n->nattr = 2;
    n->attr = at;
}

int pass_bn_conv(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    int nbn = 0, nconv = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].op != OQC_OP_BatchNormalization)
            continue;
        nbn++;
        char why[OQC_WHY_SIZE];
        int64_t nch;
        double *scale, *shift;
        if (!can_rewrite(g, i, &nch, &scale, &shift, why)) {
            oqc_info(d, "bn-conv: '%s' (BatchNormalization) stays: %s", g->nodes[i].name,
                     why);
            continue;
        }
        rewrite(g, i, nch, scale, shift);
        nconv++;
    }
    oqc_info(d, "bn-conv: rewrote %d of %d BatchNormalization left after fold-bn as "
             "depthwise 1x1 Conv", nconv, nbn);
    return nconv;
}
