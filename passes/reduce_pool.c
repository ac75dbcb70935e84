/* reduce_pool.c - pass "reduce-pool": a ReduceMean over all spatial axes becomes a
 * GlobalAveragePool (followed by a Flatten when keepdims = 0).
 *
 * Exporters write global average pooling as ReduceMean(axes = [2, 3]) (PyTorch's
 * x.mean((2, 3)), squeeze-excitation blocks) or as a chain of ReduceMean(axes = [-1],
 * keepdims = 0), one per spatial axis (the MLPerf Tiny ResNet-8). Both compute, per
 * image and channel, the mean over the spatial axes, which is what GlobalAveragePool
 * does: the rewrite gives such graphs the pooling kernels, and in INT8 the integer
 * global average pool instead of a float island.
 *
 * A chain of ReduceMean nodes (each output read only by the next, not a graph output,
 * all with the same keepdims) is combined first: the axes of each node are mapped back
 * to the axes of the chain's input. The mean of means over equal-size groups is the
 * mean, so the result is the same up to float rounding (a few ulps). The rewrite
 * applies when the combined axes are exactly 2 .. rank - 1 of a float input of rank 3
 * or more with a known shape; keepdims = 1 gives [N, C, 1, ...] (GlobalAveragePool's
 * own output), keepdims = 0 gives [N, C] (GlobalAveragePool then Flatten, axis 1). The
 * last node of the chain becomes the GlobalAveragePool and keeps its name; the others
 * are removed. */
#include "passes.h"

#include <string.h>

/* The chain of ReduceMean nodes ending at node `last`, walked back from it: sets *src
 * (the chain's input), *mask (its reduced axes in src's coordinates), *keep and
 * marks the earlier nodes in chain[]; 1 when the chain is well formed, else 0. */
static int chain_of(const OqcGraph *g, int last, int *src, unsigned *mask, int *keep,
                    unsigned char *chain) {
    OqcDiag quiet;
    oqc_diag_init(&quiet);
    int node = last, ok = 1, first = 1;
    unsigned m = 0;   /* reduced axes in the coordinates of the current node's output */
    for (;;) {
        const OqcNode *n = &g->nodes[node];
        const OqcTensor *x = &g->tensors[n->in[0]];
        unsigned mn;
        int kn;
        if (oqc_reduce_axes(g, node, x->shape.rank, &mn, &kn, &quiet) < 0 ||
            (!first && kn != *keep)) {
            ok = first ? 0 : ok;
            break;
        }
        /* m is in this node's output coordinates: map it to its input's */
        unsigned in_m = mn;
        for (int i = 0, j = 0; i < x->shape.rank; i++) {
            if ((mn >> i) & 1) {
                if (kn)
                    j++;
                continue;
            }
            if ((m >> j) & 1)
                in_m |= 1u << i;
            j++;
        }
        if (first)
            *keep = kn;
        m = in_m;
        *src = n->in[0];
        if (!first)
            chain[node] = 1;
        first = 0;
        int p = x->producer;
        if (p < 0 || g->nodes[p].op != OQC_OP_ReduceMean || x->nconsumers != 1 ||
            x->is_output || g->nodes[p].nout != 1)
            break;
        node = p;   /* its keepdims must match: checked at the top */
    }
    oqc_diag_free(&quiet);
    *mask = m;
    return ok;
}

int pass_reduce_pool(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    int nn = g->nnodes, nred = 0, nabs = 0, nrew = 0, nflat = 0;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    unsigned char *chain = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].op != OQC_OP_ReduceMean || dead[i])
            continue;
        nred++;
        /* only the last node of a chain starts a rewrite */
        const OqcTensor *y = &g->tensors[g->nodes[i].out[0]];
        if (y->nconsumers == 1 && !y->is_output &&
            g->nodes[y->consumers[0]].op == OQC_OP_ReduceMean)
            continue;
        int src = -1, keep = 1;
        unsigned mask = 0;
        memset(chain, 0, (size_t)nn);
        if (!chain_of(g, i, &src, &mask, &keep, chain))
            continue;
        const OqcTensor *s = &g->tensors[src];
        int r = s->shape.rank;
        if (r < 3 || s->dtype != OQCF_FLOAT || !oqc_shape_known(&s->shape) ||
            mask != (((1u << r) - 1) & ~3u)) {
            oqc_info(d, "reduce-pool: '%s' not rewritten: it does not average a float "
                        "tensor over exactly its spatial axes 2..rank-1",
                     g->nodes[i].name);
            continue;
        }
        for (int j = 0; j < nn; j++)
            if (chain[j]) {
                dead[j] = 1;
                nabs++;
            }
        nabs++;
        int yid = g->nodes[i].out[0], gap_out = yid;
        if (!keep) {
            /* GlobalAveragePool into a new [N, C, 1, ...] tensor, then Flatten */
            gap_out = oqc_tensor_add(g, oqc_arena_printf(g->arena, "%s.pool",
                                                         g->tensors[yid].name));
            OqcTensor *gt = &g->tensors[gap_out];
            gt->dtype = OQCF_FLOAT;
            gt->shape = g->tensors[src].shape;
            for (int k = 2; k < r; k++)
                gt->shape.d[k] = 1;
            oqc_node_add(g, OQC_OP_Flatten, NULL,
                         oqc_arena_printf(g->arena, "%s.flatten", g->nodes[i].name), 1,
                         &gap_out, 1, &yid);
            nflat++;
        }
        OqcNode *n = &g->nodes[i];
        n->op = OQC_OP_GlobalAveragePool;
        n->op_type = oqc_op_name(OQC_OP_GlobalAveragePool);
        n->nin = 1;
        n->in[0] = src;
        n->out[0] = gap_out;
        n->nattr = 0;
        n->attr = NULL;
        nrew++;
    }
    oqc_info(d, "reduce-pool: %d of %d ReduceMean became %d GlobalAveragePool (%d with a "
             "Flatten)", nabs, nred, nrew, nflat);
    if (nrew) {
        unsigned char *dead_all = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
        memcpy(dead_all, dead, (size_t)nn);
        oqc_graph_remove_nodes(g, dead_all);
    }
    return nrew;
}
