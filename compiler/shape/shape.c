/* shape.c - shape and dtype inference over the IR (see ir.h).
 *
 * One function per op, dispatched through a table indexed by OqcOp. Nodes are visited
 * in topological order; a node whose inputs are not known (downstream of an op oqc
 * does not know) leaves its outputs unknown. Errors name the node, its op and what
 * does not fit. Shape rules that the FP32 kernels also need (broadcasting, Slice
 * clamping, Pad, Gather) come from the runtime library so there is one copy of each.
 *
 * Small int64 tensors computed from shapes (PyTorch's Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape chains) get their values derived here too (has_value), so the
 * Reshape at the end of such a chain has a static shape.
 *
 * This file is the machinery: the visit, which nodes are ready, the size limit, value
 * propagation.  The rule of each op is in its family's file in compiler/ops/, found
 * through oqc_shape_fns (the per-node context both share: ops_shape.h). */
#include "shape_int.h"

#include <inttypes.h>
#include <string.h>

#include "oqcf_tensor.h"

/* ------------------------------------------------------- value propagation */

/* Derives the values of a small integer output from inputs whose values are known,
 * by running the same runtime kernel the executor uses. */
static void propagate_values(Ctx *c) {
    OqcNode *n = c->n;
    OqcTensor *y = OUT(c, 0);
    if (!y || y->is_const || (y->dtype != OQCF_INT64 && y->dtype != OQCF_INT32) ||
        n->nout != 1 || !oqc_shape_known(&y->shape))
        return;
    int64_t numel = oqc_shape_numel(&y->shape);
    if (numel > MAX_VALUES)
        return;
    int ndata = n->nin;
    switch (n->op) {
    case OQC_OP_Identity: case OQC_OP_Reshape: case OQC_OP_Flatten: case OQC_OP_Squeeze:
    case OQC_OP_Unsqueeze: case OQC_OP_Slice: case OQC_OP_Cast:
        ndata = 1;
        break;
    case OQC_OP_Gather: case OQC_OP_Add: case OQC_OP_Sub: case OQC_OP_Mul: case OQC_OP_Div:
    case OQC_OP_Concat: case OQC_OP_Neg:
        break;
    case OQC_OP_ConstantOfShape: /* its input is the shape (known: numel above), not data */
        ndata = 0;
        break;
    default:
        return;
    }
    for (int k = 0; k < ndata; k++)
        if (!known_values(IN(c, k)) || oqc_shape_numel(&IN(c, k)->shape) > MAX_VALUES)
            return;
    size_t es = oqcf_dtype_size(y->dtype);
    void *out = oqc_arena_alloc(c->g->arena, (size_t)numel * es + 8);
    const OqcTensor *x = IN(c, 0);
    OqcfStatus st = OQCF_EINVAL;
    switch (n->op) {
    case OQC_OP_Cast:
        st = oqcf_cast(x->data, x->dtype, out, y->dtype, numel);
        break;
    case OQC_OP_Neg: /* of integers: the ONNX function bodies' shape arithmetic */
        for (int64_t i = 0; i < numel; i++) {
            int64_t v = y->dtype == OQCF_INT64 ? ((const int64_t *)x->data)[i]
                                               : ((const int32_t *)x->data)[i];
            if (v == (y->dtype == OQCF_INT64 ? INT64_MIN : INT32_MIN))
                return; /* -v overflows: left unknown */
            if (y->dtype == OQCF_INT64)
                ((int64_t *)out)[i] = -v;
            else
                ((int32_t *)out)[i] = (int32_t)-v;
        }
        st = OQCF_OK;
        break;
    case OQC_OP_ConstantOfShape: { /* the value attribute (a one-element tensor) repeated */
        const OqcAttr *va = oqc_attr_find(n, "value");
        if (!va || va->tensors[0].dtype != y->dtype || !va->tensors[0].data ||
            va->tensors[0].nbytes < es)
            return;
        for (int64_t i = 0; i < numel; i++)
            memcpy((char *)out + i * es, va->tensors[0].data, es);
        st = OQCF_OK;
        break;
    }
    case OQC_OP_Slice: {
        int64_t sv[4][OQC_MAX_RANK];
        int cnt[4];
        for (int k = 0; k < 4; k++)
            cnt[k] = IN(c, k + 1) ? int_list(c, k + 1, sv[k], OQC_MAX_RANK) : -1;
        OqcfSlice sl;
        if (n->opset >= 10 && cnt[0] >= 0 &&
            oqcf_slice_resolve(&x->shape, sv[0], sv[1], cnt[0], cnt[2] >= 0 ? sv[2] : NULL,
                               cnt[3] >= 0 ? sv[3] : NULL, &sl) == OQCF_OK)
            st = oqcf_slice(x->data, &x->shape, &sl, es, out);
        break;
    }
    case OQC_OP_Gather: {
        int axis = (int)oqc_attr_int(n, "axis", 0);
        if (axis < 0)
            axis += x->shape.rank;
        st = oqcf_gather(x->data, &x->shape, axis, IN(c, 1)->data, IN(c, 1)->dtype,
                         oqc_shape_numel(&IN(c, 1)->shape), es, out);
        break;
    }
    case OQC_OP_Add: case OQC_OP_Sub: case OQC_OP_Mul: case OQC_OP_Div: {
        OqcfBinaryOp bop = n->op == OQC_OP_Add ? OQCF_ADD : n->op == OQC_OP_Sub ? OQCF_SUB
                         : n->op == OQC_OP_Mul ? OQCF_MUL : OQCF_DIV;
        st = oqcf_binary(bop, y->dtype, x->data, &x->shape, IN(c, 1)->data, &IN(c, 1)->shape,
                         out);
        break;
    }
    case OQC_OP_Concat: {
        const void *ptrs[MAX_VALUES];
        OqcfShape shapes[MAX_VALUES];
        if (n->nin > MAX_VALUES)
            return;
        for (int k = 0; k < n->nin; k++) {
            ptrs[k] = IN(c, k)->data;
            shapes[k] = IN(c, k)->shape;
        }
        int axis = (int)oqc_attr_int(n, "axis", 0);
        if (axis < 0)
            axis += y->shape.rank;
        st = oqcf_concat(ptrs, shapes, n->nin, axis, es, out);
        break;
    }
    default: /* reshapes keep the values in order */
        st = oqcf_copy(x->data, out, numel, es);
        break;
    }
    if (st == OQCF_OK) {
        y->data = out;
        y->nbytes = (size_t)numel * es;
        y->has_value = 1;
    }
}

/* ------------------------------------------------------- zero-size tensors */

/* A node whose data input (input 0) has no elements but whose output has some would
 * have to make values out of nothing: a Conv or MatMul summing over 0 input channels,
 * a pooling over a 0x0 window, an edge or reflect Pad of an empty axis, a Gather from
 * an empty axis.  oqc refuses those here (the kernels would divide by zero or read
 * nothing) rather than produce an executor whose every run fails.  The ops for which
 * the output is well defined are kept: Concat (the other inputs), a constant Pad (the
 * constant), Shape, Size and ConstantOfShape (their input is a shape, not data).  A node
 * whose outputs are empty too computes nothing and is fine (the executor skips it). */
static int empty_to_nonempty(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    const OqcTensor *y = OUT(c, 0);
    if (!x || !y || !oqc_shape_known(&x->shape) || !oqc_shape_known(&y->shape) ||
        oqc_shape_numel(&x->shape) != 0 || oqc_shape_numel(&y->shape) == 0)
        return 0;
    switch (c->n->op) {
    case OQC_OP_Concat: case OQC_OP_Shape: case OQC_OP_Size: case OQC_OP_ConstantOfShape:
        return 0;
    case OQC_OP_Pad:
        if (!strcmp(oqc_attr_string(c->n, "mode", "constant"), "constant"))
            return 0;
        break;
    default:
        break;
    }
    char bx[160], by[160];
    return ERR("input '%s' has no elements (shape %s) but output '%s' would have %s: "
               "nothing to compute it from", x->name, oqc_shape_str(&x->shape, bx, sizeof bx),
               y->name, oqc_shape_str(&y->shape, by, sizeof by));
}

/* --------------------------------------------------------------- entry points */

int oqc_infer_shapes(OqcGraph *g, int strict, OqcDiag *d) {
    if (strict && oqc_check_supported(g, d) < 0)
        return -1;
    int rc = 0;
    /* kernels read an input by its element type: one without a known one cannot run (a
     * dump shows it as dtype?) */
    for (int i = 0; strict && i < g->ninputs; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        if (oqcf_dtype_size(t->dtype) == 0)
            rc = oqc_err(d, "%s: graph input '%s' has element type %s (ONNX %d): oqc "
                            "cannot feed that to its kernels", g->path, t->name,
                         oqc_dtype_name(t->dtype), (int)t->dtype);
    }
    if (rc < 0)
        return rc;
    for (int i = 0; i < g->nnodes; i++) {
        Ctx c = {g, d, i, &g->nodes[i]};
        OqcNode *n = c.n;
        ShapeFn fn = oqc_shape_fns[n->op];
        int ready = fn != NULL && n->nin > 0 && IN(&c, 0) != NULL;
        for (int k = 0; ready && k < n->nin; k++) {
            const OqcTensor *t = IN(&c, k);
            if (t && (t->shape.rank < 0 || !oqc_shape_known(&t->shape)))
                ready = 0;
        }
        if (n->op == OQC_OP_ConstantOfShape && fn && IN(&c, 0))
            ready = 1;
        if (!ready) {
            if (fn && n->nin > 0 && !IN(&c, 0))
                rc = oqc_err_node(d, g, i, "its first input is empty");
            continue;
        }
        if (fn(&c) < 0) {
            rc = -1;
            continue;
        }
        if (empty_to_nonempty(&c) < 0) {
            rc = -1;
            continue;
        }
        for (int k = 0; k < n->nout; k++) {
            OqcTensor *t = OUT(&c, k);
            int64_t numel = t ? oqc_shape_numel(&t->shape) : 0;
            if (numel > OQC_MAX_ELEMENTS) {
                char buf[160];
                rc = oqc_err_node(d, g, i, "output '%s' would have shape %s, more than %" PRId64
                                           " elements: absurd, refusing it", t->name,
                                  oqc_shape_str(&t->shape, buf, sizeof buf), OQC_MAX_ELEMENTS);
                t->shape.rank = -1;   /* unknown: the nodes reading it are not inferred */
            }
        }
        propagate_values(&c);
    }
    return rc;
}

int oqc_shape_supported(OqcOp op) { return op > OQC_OP_UNKNOWN && op < OQC_OP_COUNT && oqc_shape_fns[op]; }

int oqc_check_supported(const OqcGraph *g, OqcDiag *d) {
    const char *names[64];
    int counts[64], nnames = 0, total = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (oqc_shape_supported(n->op))
            continue;
        total++;
        const char *nm = n->domain[0] ? oqc_arena_printf(g->arena, "%s.%s", n->domain, n->op_type)
                                      : n->op_type;
        int j;
        for (j = 0; j < nnames && strcmp(names[j], nm); j++)
            ;
        if (j == nnames && nnames < 64) {
            names[nnames] = nm;
            counts[nnames++] = 0;
        }
        if (j < 64)
            counts[j]++;
    }
    if (g->nnontensor)
        oqc_err(d, "%s: %d graph input(s)/output(s) are not tensors (sequence, map or "
                   "optional, e.g. '%s'); oqc supports tensors only", g->path, g->nnontensor,
                g->nontensor);
    if (!total)
        return g->nnontensor ? -1 : 0;
    char list[2048] = "";
    size_t len = 0;
    for (int j = 0; j < nnames && len < sizeof list; j++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s x%d", j ? ", " : "", names[j],
                         counts[j]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return oqc_err(d, "%s: %d node(s) use operators oqc does not support: %s", g->path, total,
                   list);
}
