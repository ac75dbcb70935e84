/* emit_node.c - `oqc compile`: one node of the prepared executor as C (emit_c.c writes
 * the files around it; emit_int.h has what the two share).
 *
 * oqc_em_node prints a node's frame and its call: an INT8 node's by its kind (emit_q.c), an
 * FP32 node's by its op family (compiler/ops/, oqc_em_fp32 dispatching on
 * ExecNode.kind, which the family's preparation set with the run function). Each
 * prints parameter constants into NAME.c's declarations and kernel calls into its
 * body: loops belong in runtime/, never in emitted code. Pointers are symbolic (Loc:
 * oqc_em_plan_locs repeats oqc_exec_run's computation), constants exact (C99 hex
 * floats). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* Prints node `node`'s parameter constants and kernel call, each mirroring the run
 * function the executor calls (exec_q.c's run_q, or the op family's run_*). */
void oqc_em_node(Em *m, int node) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    FILE *b = m->body;
    if (x->kind == EXEC_NONE || x->kind == EXEC_DROPOUT)
        return; /* views: the pointer plan already points the output at the input */
    if (x->kind == EXEC_Q && m->pre && oqc_em_q_boundary(m, node))
        b = n->q->kind == OQC_Q_QUANTIZE ? m->pre : m->post;
    m->node = node;
    m->headed = 0;
    fprintf(b, "    /* %d: %s '", node, n->op_type);
    oqc_em_comment(b, n->name);
    fputs("' */\n", b);
    fprintf(b, "    OQC_LAYER_BEGIN(%d);\n", node);
    if (x->kind == EXEC_Q)
        oqc_em_q(m, node, b);
    else
        oqc_em_fp32(m, node, b);
    fprintf(b, "    OQC_LAYER_END(%d, ", node);
    oqc_em_string_lit(b, n->name);
    fputs(", ", b);
    oqc_em_string_lit(b, n->op_type);
    fprintf(b, ", %" PRId64 ");\n", oqc_node_macs(g, node));
}

/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m) {
    const OqcGraph *g = m->g;
    const OqcExec *e = m->e;
    for (int i = 0; i < g->ninputs; i++)
        m->loc[g->inputs[i]] = (Loc){LOC_INPUT, i, 0};
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        int r = e->root[t];
        if (tt->is_const)
            m->loc[t] = (Loc){LOC_CONST, t, 0};
        else if (e->offset[r] != SIZE_MAX)
            m->loc[t] = (Loc){LOC_ARENA, 0, e->offset[r]};
    }
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (e->root[t] != t && e->offset[e->root[t]] == SIZE_MAX)
            m->loc[t] = m->loc[e->root[t]];
        if (tt->view_base >= 0) {
            m->loc[t] = m->loc[e->root[t]];
            m->loc[t].off += (size_t)(tt->view_coff * oqc_shape_numel(&tt->shape) /
                                      tt->shape.d[1] / tt->shape.d[0]) * esize_of(tt);
        }
    }
}
