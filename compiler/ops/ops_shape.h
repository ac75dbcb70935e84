/* ops_shape.h - a node as its shape rule sees it. Shape inference is the engine
 * shape/shape.c (visits the nodes in topological order, decides which are ready,
 * refuses absurd sizes, derives the values of small integer tensors, answers
 * oqc_shape_supported) over the rules of compiler/ops/ (the table oqc_shape_fns
 * indexing them by OqcOp). Both see a node through a Ctx and the accessors below. */
#ifndef OQC_OPS_SHAPE_H
#define OQC_OPS_SHAPE_H

#include <inttypes.h>

#include "ops.h"

/* Per-node inference context. */
typedef struct Ctx {
    OqcGraph *g;      /* the graph */
    OqcDiag *d;       /* errors */
    int node;         /* node id */
    OqcNode *n;       /* the node */
} Ctx;

/* A shape rule: sets the dtype and shape of c->n's outputs; 0, or -1 after an ERR. */
typedef int (*ShapeFn)(Ctx *c);

/* An error about the node being inferred (c in scope), naming it and its op; -1. */
#define ERR(...) oqc_err_node(c->d, c->g, c->node, __VA_ARGS__)
#define MAX_VALUES 64 /* largest tensor whose values shape inference derives */

/* Input / output k of the node, or NULL when absent. */
static inline OqcTensor *IN(Ctx *c, int k) {
    return k < c->n->nin && c->n->in[k] >= 0 ? &c->g->tensors[c->n->in[k]] : NULL;
}
static inline OqcTensor *OUT(Ctx *c, int k) {
    return k < c->n->nout && c->n->out[k] >= 0 ? &c->g->tensors[c->n->out[k]] : NULL;
}

/* Values of a small int64 (or int32) tensor known at compile time, else NULL. */
static inline const void *known_values(const OqcTensor *t) {
    if (!t || !(t->is_const || t->has_value) || !t->data)
        return NULL;
    return t->data;
}

/* Reads input k as a 1-D list of integers (constant or derived); -1 when unknown. */
static inline int int_list(Ctx *c, int k, int64_t *v, int max) {
    const OqcTensor *t = IN(c, k);
    const void *p = known_values(t);
    if (!p || (t->dtype != OQCF_INT64 && t->dtype != OQCF_INT32) || t->shape.rank > 1)
        return -1;
    int64_t n = oqc_shape_numel(&t->shape);
    if (n > max)
        return ERR("input '%s' has %" PRId64 " values; at most %d are supported", t->name,
                   n, max) - 1;
    for (int64_t i = 0; i < n; i++)
        v[i] = t->dtype == OQCF_INT64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
    return (int)n;
}

/* The shape rule of each op (NULL: shape inference does not know it). */
extern const ShapeFn oqc_shape_fns[OQC_OP_COUNT];

#endif
