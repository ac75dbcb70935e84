/* data.c - the op family Cast, Shape, Size, ConstantOfShape, Quantize/DequantizeLinear,
 * Reduce*, ArgMax/ArgMin: shape rules (oqc_rule_*), FP32 preparation (oqc_prep_*), the
 * run functions the executor calls and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* The runtime's reduction of a Reduce* op. */
OqcfReduceOp oqc_reduce_op(OqcOp op) {
    return op == OQC_OP_ReduceSum ? OQCF_REDUCE_SUM
         : op == OQC_OP_ReduceMean ? OQCF_REDUCE_MEAN
         : op == OQC_OP_ReduceMin ? OQCF_REDUCE_MIN : OQCF_REDUCE_MAX;
}

/* ------------------------------------------------------------------ shape */

/* ReduceMean/ReduceMax/ReduceMin/ReduceSum: reduced axes become 1 (keepdims) or disappear. */
int oqc_rule_reduce(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    unsigned mask;
    int keep;
    if (oqc_reduce_axes(c->g, c->node, x->shape.rank, &mask, &keep, c->d) < 0)
        return -1;
    OqcShape s = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++)
        if (!(mask & (1u << i)))
            s.d[s.rank++] = x->shape.d[i];
        else if (keep)
            s.d[s.rank++] = 1;
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* ArgMax/ArgMin: int64 indices; the axis becomes 1 (keepdims) or disappears. */
int oqc_rule_argmax(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int r = x->shape.rank;
    if (r == 0)
        return ERR("needs an input of rank 1 or more");
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", 0), r, "axis");
    if (axis < 0)
        return -1;
    if (x->shape.d[axis] == 0)
        return ERR("axis %d of %s is empty: no index to return", axis, sstr(&x->shape));
    OqcShape s = x->shape;
    if (oqc_attr_int(c->n, "keepdims", 1)) {
        s.d[axis] = 1;
    } else {
        for (int i = axis; i + 1 < r; i++)
            s.d[i] = s.d[i + 1];
        s.rank--;
    }
    set_out(c, 0, OQCF_INT64, &s);
    return 0;
}

int oqc_rule_shape(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int r = x->shape.rank;
    int64_t start = oqc_attr_int(c->n, "start", 0), end = oqc_attr_int(c->n, "end", r);
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    OqcShape s = {.rank = 1, .d = {n}};
    set_out(c, 0, OQCF_INT64, &s);
    OqcTensor *y = OUT(c, 0);
    if (y && oqc_shape_known(&x->shape)) {
        int64_t *v = oqc_arena_alloc(c->g->arena, (size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = x->shape.d[start + i];
        y->data = v;
        y->nbytes = (size_t)n * sizeof *v;
        y->has_value = 1;
    }
    return 0;
}

/* Size: the element count of a static shape, an int64 scalar computed here (as Shape's
 * values; pass cleanup folds both into constants). */
int oqc_rule_size(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    OqcShape s = {.rank = 0};
    set_out(c, 0, OQCF_INT64, &s);
    OqcTensor *y = OUT(c, 0);
    if (y && oqc_shape_known(&x->shape)) {
        int64_t *v = oqc_arena_alloc(c->g->arena, sizeof *v);
        *v = oqc_shape_numel(&x->shape);
        y->data = v;
        y->nbytes = sizeof *v;
        y->has_value = 1;
    }
    return 0;
}

int oqc_rule_cast(Ctx *c) {
    const OqcAttr *to = oqc_attr_find(c->n, "to");
    if (!to)
        return ERR("attribute 'to' is required");
    OqcfDType dt = (OqcfDType)to->i;
    if (to->i <= 0 || to->i > OQCF_BFLOAT16 || (oqcf_dtype_size(dt) == 0 && dt != OQCF_STRING))
        return ERR("attribute 'to' = %" PRId64 " is not a valid element type", to->i);
    set_out(c, 0, dt, &IN(c, 0)->shape);
    return 0;
}

int oqc_rule_constant_of_shape(Ctx *c) {
    int64_t v[OQC_MAX_RANK + 1];
    int n = int_list(c, 0, v, OQC_MAX_RANK + 1);
    if (n < -1)
        return -1;
    if (n < 0)
        return ERR("shape input '%s' must be a constant oqc can compute", IN(c, 0)->name);
    if (n > OQC_MAX_RANK)
        return ERR("rank %d exceeds %d", n, OQC_MAX_RANK);
    OqcShape s = {.rank = n};
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return ERR("negative dimension %" PRId64, v[i]);
        s.d[i] = v[i];
    }
    const OqcAttr *va = oqc_attr_find(c->n, "value");
    set_out(c, 0, va ? va->tensors[0].dtype : OQCF_FLOAT, &s);
    return 0;
}

/* A constant scale of QuantizeLinear (x / scale) or DequantizeLinear (q * scale) must
 * be finite, and not 0 for QuantizeLinear: the kernel refuses anything else on every
 * run, so the model is refused here, naming the value. */
static int check_qdq_scale(Ctx *c, int nonzero) {
    const OqcTensor *s = IN(c, 1);
    if (!s)
        return ERR("needs a scale input");
    const float *v = s->dtype == OQCF_FLOAT ? known_values(s) : NULL;
    int64_t n = v ? oqc_shape_numel(&s->shape) : 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (nonzero && v[i] == 0))
            return ERR("scale '%s' element %" PRId64 " is %g: a scale must be finite%s",
                       s->name, i, (double)v[i], nonzero ? " and not 0" : "");
    return 0;
}

int oqc_rule_quantize(Ctx *c) {
    if (check_qdq_scale(c, 1) < 0)
        return -1;
    const OqcTensor *zp = IN(c, 2);
    set_out(c, 0, zp ? zp->dtype : OQCF_UINT8, &IN(c, 0)->shape);
    return 0;
}

int oqc_rule_dequantize(Ctx *c) {
    if (check_qdq_scale(c, 0) < 0)
        return -1;
    set_out(c, 0, OQCF_FLOAT, &IN(c, 0)->shape);
    return 0;
}

/* ------------------------------------------------------------------ run */

static int run_cast(OqcExec *e, int node) {
    CHECK(oqcf_cast(XIN(e, node, 0), T(e, N(e, node)->in[0])->dtype, YOUT(e, node, 0),
                    T(e, N(e, node)->out[0])->dtype, numel_out(e, node, 0)));
    return 0;
}

static int run_qdq(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    ExecNode *x = EN(e, node);
    const void *zp = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    if (n->op == OQC_OP_QuantizeLinear)
        CHECK(oqcf_quantize_linear(XIN(e, node, 0), YOUT(e, node, 0), T(e, n->out[0])->dtype,
                                   XIN(e, node, 1), zp, x->a, x->b, x->c));
    else
        CHECK(oqcf_dequantize_linear(XIN(e, node, 0), T(e, n->in[0])->dtype, YOUT(e, node, 0),
                                     XIN(e, node, 1), zp, x->a, x->b, x->c));
    return 0;
}

static int run_shape(OqcExec *e, int node) {
    const OqcTensor *y = T(e, N(e, node)->out[0]);
    memcpy(YOUT(e, node, 0), y->data, y->nbytes); /* derived by shape inference */
    return 0;
}

static int run_constant_of_shape(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const OqcTensor *y = T(e, n->out[0]);
    const OqcAttr *va = oqc_attr_find(n, "value");
    size_t es = esize_of(y);
    float zero = 0;
    const void *fill = va ? va->tensors[0].data : &zero;
    unsigned char *p = YOUT(e, node, 0);
    for (int64_t i = 0, cnt = oqc_shape_numel(&y->shape); i < cnt; i++)
        memcpy(p + (size_t)i * es, fill, es);
    return 0;
}

static int run_reduce(OqcExec *e, int node) {
    CHECK(oqcf_reduce(oqc_reduce_op(N(e, node)->op), XIN(e, node, 0), SH(e, node, 0),
                      EN(e, node)->mask, YOUT(e, node, 0)));
    return 0;
}

static int run_argmax(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_argmax(XIN(e, node, 0), x->a, x->b, x->c, N(e, node)->op == OQC_OP_ArgMin,
                      x->axis, YOUT(e, node, 0)));
    return 0;
}

/* ------------------------------------------------------------------ prepare */

/* ReduceMax, ReduceMean, ReduceMin, ReduceSum */
int oqc_prep_reduce_max(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int keep;
    if (!is_float(in0))
        return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                    oqc_dtype_name(in0->dtype));
    if (oqc_reduce_axes(g, node, in0->shape.rank, &x->mask, &keep, d) < 0)
        return -1;
    x->run = run_reduce;
    x->kind = EXEC_REDUCE;
    return 0;
}

/* ArgMax, ArgMin */
int oqc_prep_arg_max(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                    oqc_dtype_name(in0->dtype));
    int r = in0->shape.rank;
    int64_t axis = oqc_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += r;
    x->a = prod(&in0->shape, 0, (int)axis);
    x->b = in0->shape.d[axis];
    x->c = prod(&in0->shape, (int)axis + 1, r);
    x->axis = oqc_attr_int(n, "select_last_index", 0) != 0;
    x->run = run_argmax;
    x->kind = EXEC_ARGMAX;
    return 0;
}

/* Cast */
int oqc_prep_cast(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    if (in0->dtype == OQCF_STRING || out0->dtype == OQCF_STRING)
        return PERR("Cast from or to string is not supported");
    x->run = run_cast;
    x->kind = EXEC_CAST;
    return 0;
}

/* Shape, Size (their values derived by shape inference) */
int oqc_prep_shape(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    if (!out0->has_value)
        return PERR("the input's shape is not static");
    x->run = run_shape;
    x->kind = EXEC_SHAPE;
    return 0;
}

/* ConstantOfShape */
int oqc_prep_constant_of_shape(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    x->run = run_constant_of_shape;
    x->kind = EXEC_CONSTANT_OF_SHAPE;
    return 0;
}

/* QuantizeLinear, DequantizeLinear */
int oqc_prep_quantize_linear(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    const OqcTensor *sc = &g->tensors[n->in[1]];
    if (sc->dtype != OQCF_FLOAT)
        return PERR("scale must be f32");
    if (n->op == OQC_OP_QuantizeLinear && !is_float(in0))
        return PERR("QuantizeLinear input must be f32");
    int64_t ns = oqc_shape_numel(&sc->shape);
    int r = in0->shape.rank;
    if (sc->shape.rank == 0 || ns == 1) {
        x->a = 1;
        x->b = 1;
        x->c = oqc_shape_numel(&in0->shape);
    } else {
        int64_t axis = oqc_attr_int(n, "axis", 1);
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r || in0->shape.d[axis] != ns)
            return PERR("per-axis scale of %" PRId64 " entries does not match axis %" PRId64,
                        ns, axis);
        x->a = prod(&in0->shape, 0, (int)axis);
        x->b = ns;
        x->c = prod(&in0->shape, (int)axis + 1, r);
    }
    x->run = run_qdq;
    x->kind = EXEC_QDQ;
    return 0;
}

/* ------------------------------------------------------------------ emit */

/* The call of EXEC_REDUCE (run_reduce). */
void oqc_em_reduce(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    static const char *const rops[] = {[OQCF_REDUCE_SUM] = "OQCF_REDUCE_SUM",
                                       [OQCF_REDUCE_MEAN] = "OQCF_REDUCE_MEAN",
                                       [OQCF_REDUCE_MAX] = "OQCF_REDUCE_MAX",
                                       [OQCF_REDUCE_MIN] = "OQCF_REDUCE_MIN"};
    oqc_em_use_kernel(m, "oqcf_reduce.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(b, "    TRY(oqcf_reduce(%s, %s, &s%d[0], %uu, %s));\n",
            rops[oqc_reduce_op(n->op)], X(0), node, x->mask, Y(0));
}

/* The call of EXEC_ARGMAX (run_argmax). */
void oqc_em_argmax(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_reduce.c");
    fprintf(b, "    TRY(oqcf_argmax(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, %d, %s));\n",
            X(0), x->a, x->b, x->c, n->op == OQC_OP_ArgMin, x->axis, Y(0));
}

/* The call of EXEC_CAST (run_cast). */
void oqc_em_cast(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_cast.c");
    fprintf(b, "    TRY(oqcf_cast(%s, %s, %s, %s, %" PRId64 "));\n", X(0),
            oqc_em_dtype_enum(in0->dtype), Y(0), oqc_em_dtype_enum(g->tensors[n->out[0]].dtype),
            numel_out(m->e, node, 0));
}

/* The call of EXEC_QDQ (run_qdq). */
void oqc_em_qdq(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_cast.c");
    const char *zp = n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL";
    if (n->op == OQC_OP_QuantizeLinear)
        fprintf(b, "    TRY(oqcf_quantize_linear(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64
                   ", %" PRId64 "));\n", X(0), Y(0), oqc_em_dtype_enum(g->tensors[n->out[0]].dtype),
                X(1), zp, x->a, x->b, x->c);
    else
        fprintf(b, "    TRY(oqcf_dequantize_linear(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64
                   ", %" PRId64 "));\n", X(0), oqc_em_dtype_enum(in0->dtype), Y(0), X(1), zp, x->a,
                x->b, x->c);
}
