/* fuse_cbr.c - pass "fuse-cbr": Relu, Clip and LeakyRelu fused into the Conv or Gemm
 * that produces their input (Conv-BN-ReLU once fold-bn has removed the BN).
 *
 * The activation becomes the producer's OqcNode.act (OqcfAct: RELU; CLIP with lo/hi;
 * LEAKY with alpha), which the FP32 executor and the kernels apply to each result while
 * it is still in registers; the producer then writes the activation's output tensor and
 * the activation node is removed (the producer's old output is left unreferenced).
 *
 * Clip's bounds: attributes min/max before opset 11, constant scalar inputs from
 * opset 11 on; an absent bound is -inf/+inf, as in the executor, so ReLU6 is
 * CLIP(0, 6). A Clip whose bound is computed at run time cannot be fused.
 *
 * Only when the producer's output has no other reader, is not a graph output, and the
 * producer has no activation yet; otherwise an -v line says why and nothing changes.
 * Activations after other ops (e.g. Relu after a residual Add) are counted in the
 * statistics line but are not places this pass could apply. */
#include "passes.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One bound of an opset >= 11 Clip from input slot k: absent gives dflt. 1 when it is
 * known (in *v), else 0 with the reason in why. */
static int clip_bound(const OqcGraph *g, const OqcNode *n, int k, float dflt, float *v,
                      char *why) {
    const char *what = k == 1 ? "min" : "max";
    int t = n->nin > k ? n->in[k] : -1;
    *v = dflt;
    if (t < 0)
        return 1;
    const OqcTensor *tt = &g->tensors[t];
    if (!tt->is_const || !tt->data)
        return oqc_pass_why(why, "its %s '%s' is not a constant", what, tt->name);
    if (tt->dtype != OQCF_FLOAT || oqc_shape_numel(&tt->shape) != 1)
        return oqc_pass_why(why, "its %s '%s' is not a float scalar", what, tt->name);
    *v = *(const float *)tt->data;
    return 1;
}

int oqc_pass_why(char *why, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, OQC_WHY_SIZE, fmt, ap);
    va_end(ap);
    return 0;
}

int oqc_pass_act_of(const OqcGraph *g, int node, OqcfAct *act, char *why) {
    const OqcNode *n = &g->nodes[node];
    memset(act, 0, sizeof *act);
    switch (n->op) {
    case OQC_OP_Relu:
        act->kind = OQCF_ACT_RELU;
        return 1;
    case OQC_OP_LeakyRelu:
        act->kind = OQCF_ACT_LEAKY;
        act->p0 = oqc_attr_float(n, "alpha", 0.01f);
        return 1;
    case OQC_OP_Clip:
        act->kind = OQCF_ACT_CLIP;
        if (n->opset < 11) {
            act->p0 = oqc_attr_float(n, "min", -INFINITY);
            act->p1 = oqc_attr_float(n, "max", INFINITY);
            return 1;
        }
        return clip_bound(g, n, 1, -INFINITY, &act->p0, why) &&
               clip_bound(g, n, 2, INFINITY, &act->p1, why);
    default:
        return oqc_pass_why(why, "%s is not an activation oqc fuses", n->op_type);
    }
}

/* Whether producer p can take activation node `node` reading its output x: 1, or 0 with
 * the reason in why. */
static int can_fuse(const OqcGraph *g, int p, int x, char *why) {
    const OqcNode *pn = &g->nodes[p];
    const OqcTensor *xt = &g->tensors[x];
    if (xt->nconsumers != 1)
        return oqc_pass_why(why, "its input '%s' has %d consumers", xt->name, xt->nconsumers);
    if (xt->is_output)
        return oqc_pass_why(why, "its input '%s' is a graph output", xt->name);
    if (pn->act.kind != OQCF_ACT_NONE || pn->act_per_channel)
        return oqc_pass_why(why, "%s '%s' already has a fused activation", pn->op_type,
                            pn->name);
    if (pn->out[0] != x)
        return oqc_pass_why(why, "'%s' is not the first output of '%s'", xt->name, pn->name);
    if (xt->dtype != OQCF_FLOAT)
        return oqc_pass_why(why, "its input '%s' is %s, not f32", xt->name,
                            oqc_dtype_name(xt->dtype));
    return 1;
}

int pass_fuse_cbr(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    int fused[OQC_OP_COUNT] = {0}, ncand = 0, nother = 0, nfused = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (n->op != OQC_OP_Relu && n->op != OQC_OP_Clip && n->op != OQC_OP_LeakyRelu)
            continue;
        int x = n->nin > 0 ? n->in[0] : -1;
        int p = x >= 0 ? g->tensors[x].producer : -1;
        if (p < 0 || (g->nodes[p].op != OQC_OP_Conv && g->nodes[p].op != OQC_OP_Gemm)) {
            nother++;
            continue;
        }
        ncand++;
        char why[OQC_WHY_SIZE];
        OqcfAct act;
        if (!can_fuse(g, p, x, why) || !oqc_pass_act_of(g, i, &act, why)) {
            oqc_info(d, "fuse-cbr: '%s' (%s) not fused into %s '%s': %s", n->name,
                     n->op_type, g->nodes[p].op_type, g->nodes[p].name, why);
            continue;
        }
        int y = n->out[0];
        g->nodes[p].act = act;
        g->nodes[p].out[0] = y;
        /* Keep producer and consumer counts right for the rest of the scan (the graph
         * is relinked at the end). */
        g->tensors[y].producer = p;
        g->tensors[x].producer = -1;
        g->tensors[x].nconsumers = 0;
        dead[i] = 1;
        fused[n->op]++;
        nfused++;
    }
    oqc_info(d, "fuse-cbr: fused %d of %d activations that follow a Conv/Gemm (Relu %d, "
             "Clip %d, LeakyRelu %d); %d follow other ops", nfused, ncand,
             fused[OQC_OP_Relu], fused[OQC_OP_Clip], fused[OQC_OP_LeakyRelu], nother);
    if (nfused)
        oqc_graph_remove_nodes(g, dead);
    return nfused;
}
