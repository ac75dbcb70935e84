/* cleanup.c - the `cleanup` pass: pass-through removal, constant folding, dead nodes.
 *
 * Rounds of three sweeps over the nodes in topological order, repeated until a round
 * changes nothing (each change removes a node, so this terminates):
 *
 *   1. dead nodes: a node none of whose outputs is read or a graph output goes; one
 *      sweep from the back suffices (consumers come after producers);
 *   2. pass-throughs: Identity, inference Dropout (mask unused, training_mode absent or
 *      a constant false) and reshapes whose output shape equals the input's; readers
 *      of the output read the input instead. When the output is a graph output its
 *      name must survive, so the input's producer writes the output tensor instead
 *      (readers of the input follow) - impossible when the input is a graph input or
 *      another graph output (the node stays, with a -v note), and left to folding when
 *      the input is a constant (the output becomes a constant under its own name);
 *   3. constant folding: a node whose inputs are all constants and whose outputs have
 *      static shapes is evaluated by the FP32 executor (oqc_exec_fold_node), so it
 *      computes exactly what the executor would at run time; Shape of a tensor with a
 *      static shape becomes its int64 constant directly. Folds that would create more
 *      than FOLD_MAX_ELEMENTS elements out of fewer are skipped unless a weight input
 *      reads the result.
 *
 * Removed nodes' constants are simply no longer referenced (the dumps skip them).
 * After a round that folded something, shapes are re-inferred: a shape that depended
 * on a value only folding computes may now be static (and its node foldable).
 * -v notes (one per place the pass could not apply) come from the last round, which
 * changed nothing, so each place is reported once. */
#include "passes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Largest fold result (elements) made from smaller inputs: bigger ones stay nodes. */
#define FOLD_MAX_ELEMENTS ((int64_t)1 << 24)

/* State of one pass invocation. */
typedef struct Cleanup {
    OqcGraph *g;          /* the graph being cleaned */
    OqcDiag *d;           /* errors and -v output */
    int nidentity;        /* Identity nodes removed */
    int ndropout;         /* Dropout nodes removed */
    int nreshape;         /* no-op Reshape/Flatten/Squeeze/Unsqueeze removed */
    int nfolded;          /* nodes folded into constants */
    int ndead;            /* dead nodes removed */
    const char **notes;   /* -v notes of the current round (arena strings) */
    int nnotes;           /* number of notes */
    int cap_notes;        /* capacity of notes */
} Cleanup;

static void note(Cleanup *c, int node, const char *what, const char *fmt, ...)
    OQC_PRINTF(4, 5);

/* Records "cleanup: 'NAME' (Op) WHAT: REASON" for the -v output. */
static void note(Cleanup *c, int node, const char *what, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (c->nnotes == c->cap_notes) {
        int cap = c->cap_notes ? 2 * c->cap_notes : 16;
        c->notes = oqc_arena_grow(c->g->arena, c->notes, (size_t)c->nnotes, (size_t)cap,
                                  sizeof *c->notes);
        c->cap_notes = cap;
    }
    const OqcNode *n = &c->g->nodes[node];
    c->notes[c->nnotes++] = oqc_arena_printf(c->g->arena, "cleanup: '%s' (%s) %s: %s",
                                             n->name, n->op_type, what, why);
}

static const char *tname(const OqcGraph *g, int t) { return g->tensors[t].name; }

/* ------------------------------------------------------------------ dead nodes */

/* Removes nodes whose outputs nobody reads; returns how many. */
static int remove_dead(Cleanup *c) {
    OqcGraph *g = c->g;
    int *uses = oqc_arena_alloc(g->arena, (size_t)(g->ntensors + 1) * sizeof *uses);
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    for (int t = 0; t < g->ntensors; t++)
        uses[t] = g->tensors[t].nconsumers + g->tensors[t].is_output;
    int ndead = 0;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        const OqcNode *n = &g->nodes[i];
        int live = 0;
        for (int k = 0; k < n->nout && !live; k++)
            live = n->out[k] >= 0 && uses[n->out[k]] > 0;
        if (live)
            continue;
        dead[i] = 1;
        ndead++;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                uses[n->in[k]]--;
    }
    if (ndead)
        oqc_graph_remove_nodes(g, dead);
    c->ndead += ndead;
    return ndead;
}

/* --------------------------------------------------------------- pass-throughs */

typedef enum Through { NOT_THROUGH, THROUGH_IDENTITY, THROUGH_DROPOUT, THROUGH_RESHAPE } Through;

/* Whether node i passes its first input through unchanged (before checking Dropout's
 * mode and mask). */
static Through through_kind(const OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
        return NOT_THROUGH;
    const OqcTensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
    switch (n->op) {
    case OQC_OP_Identity:
        return n->nout == 1 ? THROUGH_IDENTITY : NOT_THROUGH;
    case OQC_OP_Dropout:
        return THROUGH_DROPOUT;
    case OQC_OP_Reshape: case OQC_OP_Flatten: case OQC_OP_Squeeze: case OQC_OP_Unsqueeze:
        return n->nout == 1 && x->dtype == y->dtype && oqc_shape_known(&x->shape) &&
                       oqc_shape_equal(&x->shape, &y->shape)
                   ? THROUGH_RESHAPE : NOT_THROUGH;
    default:
        return NOT_THROUGH;
    }
}

/* Why Dropout node i is not an inference no-op (an arena string), or NULL when it is. */
static const char *dropout_blocked(OqcGraph *g, int i) {
    const OqcNode *n = &g->nodes[i];
    if (n->nout > 1 && n->out[1] >= 0) {
        const OqcTensor *m = &g->tensors[n->out[1]];
        if (m->is_output)
            return oqc_arena_printf(g->arena, "its mask output '%s' is a graph output",
                                    m->name);
        if (m->nconsumers)
            return oqc_arena_printf(g->arena, "its mask output '%s' is read by %d node(s)",
                                    m->name, m->nconsumers);
    }
    if (n->nin > 2 && n->in[2] >= 0) {
        const OqcTensor *t = &g->tensors[n->in[2]];
        if (!t->is_const || !t->data || oqc_shape_numel(&t->shape) != 1)
            return oqc_arena_printf(g->arena, "training_mode '%s' is not a constant", t->name);
        if (*(const unsigned char *)t->data)
            return oqc_arena_printf(g->arena, "training_mode '%s' is true", t->name);
    }
    /* Opset < 7: is_test=0 means training; absent counts as inference, as in exec.c. */
    if (n->opset < 7 && oqc_attr_int(n, "is_test", 1) == 0)
        return "is_test=0 (training mode)";
    return NULL;
}

/* Follows the replacement chain of tensor t. */
static int resolve(const int *repl, int t) {
    while (t >= 0 && repl[t] >= 0)
        t = repl[t];
    return t;
}

/* Removes pass-through nodes; returns how many. */
static int remove_through(Cleanup *c) {
    OqcGraph *g = c->g;
    int *repl = oqc_arena_alloc(g->arena, (size_t)(g->ntensors + 1) * sizeof *repl);
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    memset(repl, 0xff, (size_t)(g->ntensors + 1) * sizeof *repl);
    int nremoved = 0;
    for (int i = 0; i < g->nnodes; i++) {
        OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            n->in[k] = resolve(repl, n->in[k]);
        Through kind = through_kind(g, i);
        if (kind == NOT_THROUGH)
            continue;
        const char *why = kind == THROUGH_DROPOUT ? dropout_blocked(g, i) : NULL;
        if (why) {
            note(c, i, "kept", "%s", why);
            continue;
        }
        int x = n->in[0], y = n->out[0];
        OqcTensor *tx = &g->tensors[x];
        if (!g->tensors[y].is_output) {
            repl[y] = x; /* readers of y read x */
        } else if (tx->is_const) {
            continue; /* folding turns y into a constant under its own name */
        } else if (tx->is_input || tx->is_output) {
            note(c, i, "kept", "its output '%s' is a graph output and its input '%s' is a "
                 "graph %s (both names must stay)", tname(g, y), tname(g, x),
                 tx->is_input ? "input" : "output too");
            continue;
        } else {
            /* The graph output keeps its name: x's producer writes y and x's other
             * readers read y. Producer fields are kept current within this sweep. */
            int p = tx->producer;
            OQC_ASSERT(p >= 0 && p < i);
            OqcNode *pn = &g->nodes[p];
            int k = 0;
            while (k < pn->nout && pn->out[k] != x)
                k++;
            OQC_ASSERT(k < pn->nout);
            pn->out[k] = y;
            g->tensors[y].producer = p;
            tx->producer = -1;
            repl[x] = y;
        }
        dead[i] = 1;
        nremoved++;
        if (kind == THROUGH_IDENTITY)
            c->nidentity++;
        else if (kind == THROUGH_DROPOUT)
            c->ndropout++;
        else
            c->nreshape++;
    }
    if (!nremoved)
        return 0;
    /* Readers visited before a later rename (x -> y) are updated here. */
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            g->nodes[i].in[k] = resolve(repl, g->nodes[i].in[k]);
    oqc_graph_remove_nodes(g, dead);
    return nremoved;
}

/* ------------------------------------------------------------- constant folding */

/* 1 when a node reads tensor t as a weight: passes after cleanup (BN folding,
 * quantization) need those to be constants, however large. */
static int read_as_weight(const OqcGraph *g, int t) {
    const OqcTensor *tt = &g->tensors[t];
    for (int c = 0; c < tt->nconsumers; c++) {
        const OqcNode *n = &g->nodes[tt->consumers[c]];
        if (n->op != OQC_OP_Conv && n->op != OQC_OP_ConvTranspose && n->op != OQC_OP_Gemm &&
            n->op != OQC_OP_MatMul && n->op != OQC_OP_BatchNormalization)
            continue;
        for (int k = 1; k < n->nin; k++)
            if (n->in[k] == t)
                return 1;
    }
    return 0;
}

/* Shape (or Size) of a tensor with a static shape: its output becomes an int64 constant. */
static void fold_shape(OqcGraph *g, int node) {
    const OqcNode *n = &g->nodes[node];
    const OqcTensor *x = &g->tensors[n->in[0]];
    OqcTensor *y = &g->tensors[n->out[0]];
    int64_t r = x->shape.rank;
    int64_t start = oqc_attr_int(n, "start", 0), end = oqc_attr_int(n, "end", r);
    start = start < 0 ? start + r : start; /* clamped as in shape.c and ONNX */
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t cnt = end > start ? end - start : 0;
    int64_t *v = oqc_arena_alloc(g->arena, (size_t)(cnt ? cnt : 1) * sizeof *v);
    for (int64_t i = 0; i < cnt; i++)
        v[i] = x->shape.d[start + i];
    y->shape = (OqcShape){.rank = 1, .d = {cnt}};
    if (n->op == OQC_OP_Size) { /* one element: the product of the dims */
        v[0] = oqc_shape_numel(&x->shape);
        cnt = 1;
        y->shape = (OqcShape){.rank = 0};
    }
    y->dtype = OQCF_INT64;
    y->is_const = 1;
    y->has_value = 0;
    y->data = v;
    y->nbytes = (size_t)cnt * sizeof *v;
}

/* Folds node i when it can: 1 when folded (the caller removes it), 0 when not (with
 * a note when it was a candidate). */
static int try_fold(Cleanup *c, int i) {
    OqcGraph *g = c->g;
    const OqcNode *n = &g->nodes[i];
    if (n->op == OQC_OP_UNKNOWN || n->nout < 1)
        return 0;
    if (n->op == OQC_OP_Shape || n->op == OQC_OP_Size) {
        if (n->nin < 1 || n->in[0] < 0 || n->out[0] < 0 ||
            !oqc_shape_known(&g->tensors[n->in[0]].shape))
            return 0;
        fold_shape(g, i);
        return 1;
    }
    int64_t in_elems = 0, out_elems = 0;
    int present = 0;
    for (int k = 0; k < n->nin; k++) {
        if (n->in[k] < 0)
            continue;
        const OqcTensor *t = &g->tensors[n->in[k]];
        if (!t->is_const)
            return 0;
        present++;
        in_elems += oqc_shape_numel(&t->shape);
    }
    if (!present)
        return 0;
    for (int k = 0; k < n->nin; k++) {
        const OqcTensor *t = n->in[k] >= 0 ? &g->tensors[n->in[k]] : NULL;
        if (t && !t->data && oqc_shape_numel(&t->shape) != 0) {
            note(c, i, "not folded", "constant '%s' has no data (an XML dump loaded "
                 "without its data file?)", t->name);
            return 0;
        }
        if (t && t->dtype == OQCF_STRING) {
            note(c, i, "not folded", "input '%s' holds strings", t->name);
            return 0;
        }
    }
    int needed = 0;
    for (int k = 0; k < n->nout; k++) {
        if (n->out[k] < 0)
            continue;
        const OqcTensor *t = &g->tensors[n->out[k]];
        if (!oqc_shape_known(&t->shape) || !oqcf_dtype_size(t->dtype)) {
            char buf[128];
            note(c, i, "not folded", "output '%s' has no static numeric type and shape "
                 "(%s[%s])", t->name, oqc_dtype_name(t->dtype),
                 oqc_shape_str(&t->shape, buf, sizeof buf));
            return 0;
        }
        out_elems += oqc_shape_numel(&t->shape);
        needed |= read_as_weight(g, n->out[k]);
    }
    if (out_elems > FOLD_MAX_ELEMENTS && out_elems > in_elems && !needed) {
        note(c, i, "not folded", "it would make %" PRId64 " constant elements (limit %"
             PRId64 ") out of %" PRId64 "; computed at run time instead", out_elems,
             FOLD_MAX_ELEMENTS, in_elems);
        return 0;
    }
    /* Failures here are notes, not errors: the node simply stays for run time. */
    OqcDiag fd;
    oqc_diag_init(&fd);
    int rc = oqc_exec_fold_node(g, i, &fd);
    if (rc < 0) {
        const char *msg = fd.buf ? fd.buf : "the executor failed";
        char prefix[512]; /* strip diag.c's "FILE: node 'NAME' (OP): " */
        snprintf(prefix, sizeof prefix, "%s: node '%s' (%s): ", g->path, n->name, n->op_type);
        if (strncmp(msg, prefix, strlen(prefix)) == 0)
            msg += strlen(prefix);
        size_t len = strcspn(msg, "\n");
        note(c, i, "not folded", "%.*s", (int)len, msg);
    }
    oqc_diag_free(&fd);
    return rc < 0 ? 0 : 1;
}

/* Folds constant nodes in topological order (a folded node's readers see constants
 * in the same sweep); returns how many. */
static int fold_constants(Cleanup *c) {
    OqcGraph *g = c->g;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    int nfolded = 0;
    for (int i = 0; i < g->nnodes; i++) {
        dead[i] = (unsigned char)try_fold(c, i);
        nfolded += dead[i];
    }
    /* Before relinking: a node may not produce a constant. */
    if (nfolded)
        oqc_graph_remove_nodes(g, dead);
    c->nfolded += nfolded;
    return nfolded;
}

/* ------------------------------------------------------------------ the pass */

int pass_cleanup(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_toposort(g, d) < 0)
        return -1;
    Cleanup c = {.g = g, .d = d};
    for (;;) {
        c.nnotes = 0;
        int changed = remove_dead(&c);
        changed += remove_through(&c);
        int folded = fold_constants(&c);
        if (!changed && !folded)
            break;
        if (folded && oqc_infer_shapes(g, 0, d) < 0)
            return oqc_err(d, "%s: internal: shape inference failed after constant folding",
                           g->path);
    }
    oqc_info(d, "cleanup: removed %d Identity, %d Dropout, %d no-op reshapes; folded %d "
             "constant nodes; removed %d dead nodes", c.nidentity, c.ndropout, c.nreshape,
             c.nfolded, c.ndead);
    for (int i = 0; i < c.nnotes; i++)
        oqc_info(d, "%s", c.notes[i]);
    return c.nidentity + c.ndropout + c.nreshape + c.nfolded + c.ndead;
}
