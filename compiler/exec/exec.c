/* exec.c - the FP32 executor: runs a shape-inferred graph with the runtime kernels.
 *
 * oqc_exec_new prepares every node once (kernel parameters, scratch size, dtype
 * checks) and plans memory: each tensor gets a storage root (reshape-like ops are
 * views of their input), roots get lifetimes in node steps, and oqc_memplan packs
 * them into one arena so dead tensors' memory is reused. oqc_exec_run then only calls
 * kernels; nothing is allocated per run. Graph inputs are read in place from the
 * caller's buffers; graph outputs are copied out at the end.
 *
 * A hook sees every tensor a node produces (calibration builds histograms with it). */
#include "exec.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"


/* Prepares node `node`: nothing for a node whose outputs are all empty, an INT8 node
 * through exec_q.c, any other through its op family (compiler/ops/). */
static int prepare(OqcExec *e, int node, OqcDiag *d) {
    const OqcGraph *g = e->g;
    const OqcNode *n = &g->nodes[node];
    ExecNode *x = &e->nodes[node];
    /* A node whose outputs all have no elements computes nothing: no kernel is prepared
     * (its geometry may divide by a zero extent) and none runs (EXEC_NONE, which the C
     * emitter skips too).  Shape inference has refused the cases where empty inputs
     * would have to make a non-empty output. */
    int empty = n->nout > 0;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && oqc_shape_numel(&g->tensors[n->out[k]].shape) != 0)
            empty = 0;
    if (empty) {
        x->run = NULL;
        x->kind = EXEC_NONE;
        return 0;
    }
    if (n->q)   /* an INT8 node: exec_q.c */
        return oqc_exec_prepare_q(e, node, d);
    return oqc_op_prepare(e, node, d);
}

OqcExec *oqc_exec_new(OqcGraph *g, int nthreads, OqcDiag *d) {
    if (oqc_check_supported(g, d) < 0)
        return NULL;
    OqcArena *a = g->arena;
    OqcExec *e = oqc_arena_alloc(a, sizeof *e);
    e->g = g;
    e->nodes = oqc_arena_alloc(a, (size_t)(g->nnodes + 1) * sizeof *e->nodes);
    e->root = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *e->root);
    e->offset = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *e->offset);
    e->ptr = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *e->ptr);
    if (nthreads > 1 && !(e->pool = oqcf_pool_create(nthreads))) {
        oqc_err(d, "cannot start %d threads", nthreads);
        return NULL;
    }
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        e->root[t] = tt->view_base >= 0 ? tt->view_base : t;
        if ((tt->nconsumers || tt->is_output || tt->producer >= 0) && !tt->is_const &&
            (tt->dtype == OQCF_UNDEFINED || tt->dtype == OQCF_STRING ||
             !oqc_shape_known(&tt->shape))) {
            oqc_err(d, "%s: tensor '%s' has no static numeric type and shape", g->path,
                    tt->name);
            oqc_exec_free(e);
            return NULL;
        }
    }
    int rc = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (prepare(e, i, d) < 0) {
            rc = -1;
            continue;
        }
        if (e->nodes[i].scratch > e->scratch_bytes)
            e->scratch_bytes = e->nodes[i].scratch;
        size_t sn = e->nodes[i].kind == EXEC_Q ? e->nodes[i].scratch_noamx : e->nodes[i].scratch;
        if (sn > e->scratch_noamx_bytes)
            e->scratch_noamx_bytes = sn;
        const OqcNode *n = &g->nodes[i];
        if (oqc_exec_is_view_op(n) && n->out[0] >= 0)
            e->root[n->out[0]] = e->root[n->in[0]];
    }
    if (rc < 0) {
        oqc_exec_free(e);
        return NULL;
    }
    /* Lifetimes of storage roots that live in the arena (not inputs or constants). */
    int *first = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *first);
    int *last = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *last);
    for (int t = 0; t < g->ntensors; t++)
        first[t] = last[t] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) {
                int r = e->root[n->out[k]];
                if (first[r] < 0)
                    first[r] = i;
                if (last[r] < i)
                    last[r] = i;
            }
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && last[e->root[n->in[k]]] < i)
                last[e->root[n->in[k]]] = i;
    }
    for (int i = 0; i < g->noutputs; i++)
        last[e->root[g->outputs[i]]] = g->nnodes;
    OqcLive *live = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *live);
    int *which = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *which);
    int nlive = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        e->offset[t] = SIZE_MAX;
        if (e->root[t] != t || tt->is_const || tt->is_input || first[t] < 0)
            continue;
        live[nlive] = (OqcLive){.size = (size_t)oqc_shape_numel(&tt->shape) * esize_of(tt),
                                .first = first[t], .last = last[t]};
        e->total_bytes += live[nlive].size;
        which[nlive++] = t;
    }
    e->arena_bytes = oqc_memplan(live, nlive, 64);
    /* The largest live set, step by step: each buffer adds its size at its first step
     * and takes it off after its last (a running sum, linear in the graph; the
     * unsigned sums wrap in between but every prefix is the true total). */
    size_t *delta = oqc_arena_alloc(a, (size_t)(g->nnodes + 2) * sizeof *delta);
    for (int k = 0; k < nlive; k++) {
        delta[live[k].first] += live[k].size;
        delta[live[k].last + 1] -= live[k].size;
    }
    size_t sum = 0;
    for (int i = 0; i <= g->nnodes; i++) {
        sum += delta[i];
        if (sum > e->peak_live)
            e->peak_live = sum;
    }
    for (int i = 0; i < nlive; i++)
        e->offset[which[i]] = live[i].offset;
    e->arena = oqc_arena_alloc_raw(a, e->arena_bytes + 64);
    e->scratch = e->scratch_bytes ? oqc_arena_alloc_raw(a, e->scratch_bytes) : NULL;
    return e;
}

void oqc_exec_free(OqcExec *e) {
    if (e && e->pool) {
        oqcf_pool_destroy(e->pool);
        e->pool = NULL;
    }
}

void oqc_exec_set_hook(OqcExec *e, OqcTensorHook fn, void *ctx) {
    e->hook = fn;
    e->hook_ctx = ctx;
}

size_t oqc_exec_arena_bytes(const OqcExec *e) { return e->arena_bytes; }
size_t oqc_exec_total_bytes(const OqcExec *e) { return e->total_bytes; }
size_t oqc_exec_peak_live(const OqcExec *e) { return e->peak_live; }

int oqc_exec_run(OqcExec *e, const void *const *inputs, void *const *outputs, OqcDiag *d) {
    OqcGraph *g = e->g;
    e->d = d;
    for (int i = 0; i < g->ninputs; i++)
        e->ptr[g->inputs[i]] = inputs[i];
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        int r = e->root[t];
        if (tt->is_const)
            e->ptr[t] = tt->data;
        else if (e->offset[r] != SIZE_MAX)
            e->ptr[t] = e->arena + e->offset[r];
    }
    /* Views of inputs and constants point at their root's data; channel views at
     * their first element in the base (contiguous for batch 1). */
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (e->root[t] != t && e->offset[e->root[t]] == SIZE_MAX)
            e->ptr[t] = e->ptr[e->root[t]];
        if (tt->view_base >= 0)
            e->ptr[t] = (const char *)e->ptr[e->root[t]] +
                        (size_t)(tt->view_coff * oqc_shape_numel(&tt->shape) / tt->shape.d[1] /
                                 tt->shape.d[0]) * esize_of(tt);
    }
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (e->nodes[i].run && e->nodes[i].run(e, i) < 0)
            return -1;
        if (e->hook)
            for (int k = 0; k < n->nout; k++)
                if (n->out[k] >= 0)
                    e->hook(e->hook_ctx, g, n->out[k], e->ptr[n->out[k]]);
    }
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *tt = &g->tensors[g->outputs[i]];
        size_t nb = (size_t)oqc_shape_numel(&tt->shape) * esize_of(tt);
        if (nb) /* an empty output's pointers may be NULL */
            memcpy(outputs[i], e->ptr[g->outputs[i]], nb);
    }
    return 0;
}

int oqc_exec_fold_node(OqcGraph *g, int node, OqcDiag *d) {
    const OqcNode *n = &g->nodes[node];
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !g->tensors[n->in[k]].is_const)
            return oqc_err_node(d, g, node, "internal: folding a node with a non-constant input");
    for (int k = 0; k < n->nout; k++) {
        const OqcTensor *t = n->out[k] >= 0 ? &g->tensors[n->out[k]] : NULL;
        if (t && (!oqc_shape_known(&t->shape) || !oqcf_dtype_size(t->dtype)))
            return oqc_err_node(d, g, node, "cannot fold: output '%s' has no static type",
                                t->name);
    }
    OqcExec e = {.g = g};
    e.nodes = calloc((size_t)g->nnodes, sizeof *e.nodes);
    e.ptr = calloc((size_t)g->ntensors, sizeof *e.ptr);
    if (!e.nodes || !e.ptr)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    int rc = prepare(&e, node, d);
    if (rc == 0 && e.nodes[node].scratch && !(e.scratch = malloc(e.nodes[node].scratch)))
        oqc_panic(__FILE__, __LINE__, "out of memory");
    e.scratch_bytes = e.nodes[node].scratch;
    for (int k = 0; rc == 0 && k < n->nin; k++)
        if (n->in[k] >= 0)
            e.ptr[n->in[k]] = g->tensors[n->in[k]].data;
    for (int k = 0; rc == 0 && k < n->nout; k++) {
        if (n->out[k] < 0)
            continue;
        OqcTensor *t = &g->tensors[n->out[k]];
        size_t nb = (size_t)oqc_shape_numel(&t->shape) * esize_of(t);
        if (k == 0 && oqc_exec_is_view_op(n)) {
            e.ptr[n->out[k]] = e.ptr[n->in[0]]; /* views share the constant's bytes */
        } else {
            e.ptr[n->out[k]] = oqc_arena_alloc_raw(g->arena, nb ? nb : 1);
        }
    }
    e.d = d;
    if (rc == 0 && e.nodes[node].run)
        rc = e.nodes[node].run(&e, node);
    for (int k = 0; rc == 0 && k < n->nout; k++) {
        if (n->out[k] < 0)
            continue;
        OqcTensor *t = &g->tensors[n->out[k]];
        t->is_const = 1;
        t->has_value = 0;
        t->data = (void *)e.ptr[n->out[k]];
        t->nbytes = (size_t)oqc_shape_numel(&t->shape) * esize_of(t);
    }
    free(e.scratch);
    free(e.nodes);
    free(e.ptr);
    return rc;
}
