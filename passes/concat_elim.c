/* concat_elim.c - concat elimination: the producers of a channel Concat's inputs write
 * straight into their slice of the Concat's output, and the Concat node disappears.
 *
 * Applies to a Concat along axis 1 (channels) whose every input is produced by a node
 * that can write into a channel range of a larger buffer (Conv, including merged
 * convs, MaxPool, AveragePool), is read by nothing but this Concat, is not a graph
 * input, output or constant, and appears once. Each input becomes a view of the
 * output (OqcTensor.view_base / view_coff); the executor then points the producers at
 * the output buffer with a channel offset, so nothing is copied. Nodes reading the
 * output depend on all the views' producers (graph.c orders them so). */
#include <inttypes.h>

#include "passes.h"

/* Why the Concat at node i cannot be eliminated, or NULL. */
static const char *blocker(const OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    const OqcTensor *y = &g->tensors[n->out[0]];
    if (y->shape.rank < 2)
        return "its output has rank < 2";
    int64_t axis = oqc_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += y->shape.rank;
    if (axis != 1)
        return "it does not concatenate channels (axis 1)";
    if (y->view_base >= 0)
        return "its output is itself a view";
    for (int k = 0; k < n->nin; k++) {
        int t = n->in[k];
        if (t < 0)
            return "an input is empty";
        const OqcTensor *x = &g->tensors[t];
        for (int j = 0; j < k; j++)
            if (n->in[j] == t)
                return "an input appears twice";
        if (x->is_input || x->is_output || x->is_const || x->producer < 0)
            return "an input is a graph input, output or constant";
        if (x->nconsumers != 1)
            return "an input is also read by another node";
        if (x->view_base >= 0)
            return "an input is already a view";
        OqcOp op = g->nodes[x->producer].op;
        if (op != OQC_OP_Conv && op != OQC_OP_MaxPool && op != OQC_OP_AveragePool)
            return "an input is produced by an op that cannot write into a slice "
                   "(only Conv, MaxPool, AveragePool can)";
        if (op == OQC_OP_MaxPool && g->nodes[x->producer].nout > 1 &&
            g->nodes[x->producer].out[1] >= 0)
            return "an input comes from a MaxPool with Indices";
    }
    return NULL;
}

int pass_concat_elim(OqcGraph *g, OqcDiag *d) {
    int total = 0, done = 0;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    for (int i = 0; i < g->nnodes; i++) {
        OqcNode *n = &g->nodes[i];
        if (n->op != OQC_OP_Concat || n->nout != 1 || n->out[0] < 0)
            continue;
        total++;
        const char *why = blocker(g, i);
        if (why) {
            oqc_info(d, "concat-elim: '%s' kept: %s", n->name, why);
            continue;
        }
        int64_t off = 0;
        for (int k = 0; k < n->nin; k++) {
            OqcTensor *x = &g->tensors[n->in[k]];
            x->view_base = n->out[0];
            x->view_coff = off;
            off += x->shape.d[1];
        }
        dead[i] = 1;
        done++;
    }
    if (done)
        oqc_graph_remove_nodes(g, dead);
    oqc_info(d, "concat-elim: eliminated %d of %d Concat (inputs written in place)", done, total);
    return done;
}
