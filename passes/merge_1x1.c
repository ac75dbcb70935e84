/* merge_1x1.c - horizontal fusion: sibling 1x1 convolutions that read the same tensor
 * become one Conv (TensorRT's "horizontal layer fusion").
 *
 * Siblings qualify when each is a Conv with a 1x1 kernel, group 1, the same strides,
 * pads and dilations (auto_pad resolved to the same explicit pads), and constant
 * weights and bias. Their weights are concatenated along the output channels into one
 * new constant (a missing bias becomes zeros), and the merged node keeps every
 * sibling's output tensor as one of its outputs: output k is the next out_channels[k]
 * channels. Activations fused by fuse-cbr may differ per branch; they become one
 * activation per output channel. Consumers are untouched: they read the same tensors,
 * which the executor writes with one kernel call per range (no copy, no slice op). */
#include <inttypes.h>
#include <string.h>

#include "passes.h"

/* Whether nodes a and b have the same 1x1 conv geometry. */
static int same_geometry(const OqcGraph *g, int a, int b, OqcDiag *d) {
    const OqcTensor *x = &g->tensors[g->nodes[a].in[0]];
    OqcWindow wa, wb;
    if (oqc_conv_geometry(g, a, &x->shape, &g->tensors[g->nodes[a].in[1]].shape, &wa, d) < 0 ||
        oqc_conv_geometry(g, b, &x->shape, &g->tensors[g->nodes[b].in[1]].shape, &wb, d) < 0)
        return 0;
    for (int i = 0; i < wa.nsp; i++)
        if (wa.stride[i] != wb.stride[i] || wa.dilation[i] != wb.dilation[i] ||
            wa.pad_begin[i] != wb.pad_begin[i] || wa.pad_end[i] != wb.pad_end[i])
            return 0;
    return 1;
}

/* Why conv node i cannot take part in a merge, or NULL when it can. */
static const char *unmergeable(const OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    if (n->op != OQC_OP_Conv || n->nin < 2 || n->nout != 1 || n->out_channels)
        return "not a plain Conv";
    const OqcTensor *w = &g->tensors[n->in[1]];
    if (!w->is_const || !w->data || w->dtype != OQCF_FLOAT)
        return "its weight is not a float constant";
    if (n->nin > 2 && n->in[2] >= 0 && (!g->tensors[n->in[2]].is_const || !g->tensors[n->in[2]].data))
        return "its bias is not a constant";
    if (oqc_attr_int(n, "group", 1) != 1)
        return "group is not 1";
    if (w->shape.rank < 3)
        return "bad weight";
    for (int k = 2; k < w->shape.rank; k++)
        if (w->shape.d[k] != 1)
            return "its kernel is not 1x1";
    if (n->act_per_channel)
        return "it already has per-channel activations";
    return NULL;
}

/* The 1x1 convs reading tensor t as their data input that may merge (not yet used),
 * in node order, into cand (at most 256); their count.  -v says why others may not. */
static int candidates(const OqcGraph *g, int t, const unsigned char *used, int *cand,
                      OqcDiag *d) {
    const OqcTensor *x = &g->tensors[t];
    int nc = 0;
    for (int c = 0; c < x->nconsumers && nc < 256; c++) {
        int i = x->consumers[c];
        if (used[i] || g->nodes[i].in[0] != t)
            continue;
        const char *why = g->nodes[i].op == OQC_OP_Conv ? unmergeable(g, i) : "";
        if (why && why[0])
            oqc_info(d, "merge-1x1: '%s' (reads '%s' with %d other nodes) not merged: %s",
                     g->nodes[i].name, x->name, x->nconsumers - 1, why);
        if (!why) {
            int dup = 0;
            for (int k = 0; k < nc; k++)
                dup |= cand[k] == i;
            if (!dup)
                cand[nc++] = i;
        }
    }
    return nc;
}

/* Adds the conv that computes the ng convs group[] reading t at once: their weights and
 * biases concatenated, one output per conv (out_channels), and their activations (one,
 * or per channel when they differ).  Its node index. */
static int merge_group(OqcGraph *g, int t, const int *group, int ng, OqcDiag *d) {
    const OqcTensor *w0 = &g->tensors[g->nodes[group[0]].in[1]];
    int64_t cin = w0->shape.d[1], ktot = 0;
    for (int k = 0; k < ng; k++)
        ktot += g->tensors[g->nodes[group[k]].in[1]].shape.d[0];
    float *wm = oqc_arena_alloc_raw(g->arena, (size_t)(ktot * cin) * sizeof(float));
    float *bm = oqc_arena_alloc(g->arena, (size_t)ktot * sizeof(float));
    OqcfAct *acts = oqc_arena_alloc(g->arena, (size_t)ktot * sizeof *acts);
    int64_t *outc = oqc_arena_alloc(g->arena, (size_t)ng * sizeof *outc);
    int *outs = oqc_arena_alloc(g->arena, (size_t)ng * sizeof *outs);
    int same_act = 1;
    int64_t off = 0;
    for (int k = 0; k < ng; k++) {
        const OqcNode *n = &g->nodes[group[k]];
        const OqcTensor *w = &g->tensors[n->in[1]];
        int64_t kk = w->shape.d[0];
        memcpy(wm + off * cin, w->data, (size_t)(kk * cin) * sizeof(float));
        if (n->nin > 2 && n->in[2] >= 0)
            memcpy(bm + off, g->tensors[n->in[2]].data, (size_t)kk * sizeof(float));
        for (int64_t c = 0; c < kk; c++)
            acts[off + c] = n->act;
        same_act &= memcmp(&n->act, &g->nodes[group[0]].act, sizeof n->act) == 0;
        outc[k] = kk;
        outs[k] = n->out[0];
        off += kk;
    }
    const OqcNode *first = &g->nodes[group[0]];
    const char *name = oqc_arena_printf(g->arena, "%s+merged%d", first->name, ng);
    int wid = oqc_tensor_add(g, oqc_arena_printf(g->arena, "%s.weight", name));
    int bid = oqc_tensor_add(g, oqc_arena_printf(g->arena, "%s.bias", name));
    OqcTensor *wt = &g->tensors[wid], *bt = &g->tensors[bid]; /* (the array may have moved) */
    wt->is_const = bt->is_const = 1;
    wt->dtype = bt->dtype = OQCF_FLOAT;
    wt->shape = g->tensors[g->nodes[group[0]].in[1]].shape;
    wt->shape.d[0] = ktot;
    wt->data = wm;
    wt->nbytes = (size_t)(ktot * cin) * sizeof(float);
    bt->shape = (OqcShape){.rank = 1, .d = {ktot}};
    bt->data = bm;
    bt->nbytes = (size_t)ktot * sizeof(float);
    int ins[3] = {t, wid, bid};
    int id = oqc_node_add(g, OQC_OP_Conv, "Conv", name, 3, ins, ng, outs);
    OqcNode *m = &g->nodes[id];
    first = &g->nodes[group[0]]; /* nodes may have moved */
    m->domain = first->domain;
    m->opset = first->opset;
    m->attr = first->attr;
    m->nattr = first->nattr;
    m->out_channels = outc;
    if (same_act)
        m->act = first->act;
    else
        m->act_per_channel = acts;
    oqc_info(d, "merge-1x1: merged %d sibling 1x1 convs reading '%s' into '%s' "
                "(%" PRId64 " output channels)", ng, g->tensors[t].name, name, ktot);
    return id;
}

int pass_merge_1x1(OqcGraph *g, OqcDiag *d) {
    int merges = 0, merged_convs = 0;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    unsigned char *used = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    OqcDiag quiet;
    oqc_diag_init(&quiet);
    for (int t = 0; t < g->ntensors; t++) {
        if (g->tensors[t].nconsumers < 2)
            continue;
        int cand[256];
        int nc = candidates(g, t, used, cand, d);
        /* Group the candidates by geometry; merge each group of two or more. */
        for (int a = 0; a < nc; a++) {
            if (used[cand[a]])
                continue;
            int group[256], ng = 0;
            group[ng++] = cand[a];
            for (int b = a + 1; b < nc; b++) {
                if (used[cand[b]])
                    continue;
                if (same_geometry(g, cand[a], cand[b], &quiet))
                    group[ng++] = cand[b];
                else
                    oqc_info(d, "merge-1x1: '%s' not merged with '%s': different strides, pads "
                                "or dilations", g->nodes[cand[b]].name, g->nodes[cand[a]].name);
            }
            if (ng < 2)
                continue;
            int id = merge_group(g, t, group, ng, d);
            /* dead/used are indexed by the old node count: the new node is last. */
            dead = oqc_arena_grow(g->arena, dead, (size_t)g->nnodes - 1, (size_t)g->nnodes + 1, 1);
            used = oqc_arena_grow(g->arena, used, (size_t)g->nnodes - 1, (size_t)g->nnodes + 1, 1);
            used[id] = 1;
            for (int k = 0; k < ng; k++) {
                dead[group[k]] = 1;
                used[group[k]] = 1;
            }
            merges++;
            merged_convs += ng;
        }
    }
    oqc_diag_free(&quiet);
    if (merges) {
        /* Outputs change producer: drop the old nodes, then relink. */
        oqc_graph_remove_nodes(g, dead);
    }
    oqc_info(d, "merge-1x1: merged %d convs into %d", merged_convs, merges);
    return merges;
}
