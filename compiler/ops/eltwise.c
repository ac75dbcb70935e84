/* eltwise.c - the op family element-wise: unary functions, Clip, binary ops, Sum,
 * Softmax: shape rules (oqc_rule_*), FP32 preparation (oqc_prep_*), the run functions
 * the executor calls and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* Per op: its oqcf_unary op plus 1 (0: not one), from ops.def's OQC_UNARY rows. */
static const unsigned char unary_ops[OQC_OP_COUNT] = {
#define OQC_OP(name, flags)
#define OQC_UNARY(name, un, flags) [OQC_OP_##name] = OQCF_UN_##un + 1,
#include "ops.def"
#undef OQC_UNARY
#undef OQC_OP
};

int oqc_unary_of(const OqcNode *n, OqcfUnaryOp *op, float *alpha, float *beta) {
    if ((unsigned)n->op >= OQC_OP_COUNT || !unary_ops[n->op])
        return 0;
    *op = (OqcfUnaryOp)(unary_ops[n->op] - 1);
    /* ONNX's defaults; Selu's are float32 roundings of its exact constants */
    *alpha = oqc_attr_float(n, "alpha", n->op == OQC_OP_Selu ? 1.67326319217681884765625f
                                                             : 1.0f);
    *beta = n->op == OQC_OP_Selu ? oqc_attr_float(n, "gamma", 1.05070102214813232421875f)
          : n->op == OQC_OP_Gelu ? !strcmp(oqc_attr_string(n, "approximate", "none"), "tanh")
                                 : 0.0f;   /* Gelu: 1 for its tanh approximation */
    return 1;
}

/* ------------------------------------------------------------------ shape */

int oqc_rule_broadcast(Ctx *c) {
    OqcShape s = IN(c, 0)->shape;
    OqcfDType dt = IN(c, 0)->dtype;
    if (c->n->op != OQC_OP_Sum && c->n->nin != 2)
        return ERR("needs two inputs; it has %d", c->n->nin);
    if (same_type(c, c->n->nin) < 0)
        return -1;
    for (int k = 1; k < c->n->nin; k++) {
        const OqcTensor *x = IN(c, k);
        if (!x)
            return ERR("input %d is empty", k);
        OqcShape r;
        if (oqcf_broadcast_shape(&s, &x->shape, &r) != OQCF_OK)
            return ERR("shapes %s and %s ('%s') do not broadcast", sstr(&s), sstr(&x->shape),
                       x->name);
        s = r;
    }
    set_out(c, 0, dt, &s);
    return 0;
}

/* PRelu: the slope broadcasts to X (unidirectionally; per channel before opset 7); the
 * output is X's shape. */
int oqc_rule_prelu(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *sl = IN(c, 1);
    if (!sl)
        return ERR("needs a slope input");
    if (same_type(c, 2) < 0)
        return -1;
    OqcShape r, ss = oqc_prelu_slope_shape(c->n, &x->shape, &sl->shape);
    if (oqcf_broadcast_shape(&x->shape, &ss, &r) != OQCF_OK ||
        !oqc_shape_equal(&r, &x->shape))
        return ERR("slope '%s' %s does not broadcast to the input's shape %s", sl->name,
                   sstr(&sl->shape), sstr(&x->shape));
    return shape_same(c);
}

/* Pow: numpy broadcasting; the exponent may have another numeric type (ONNX's T1), the
 * output has the base's. */
int oqc_rule_pow(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *p = IN(c, 1);
    if (!p || c->n->nin != 2)
        return ERR("needs two inputs");
    for (int k = 0; k < 2; k++) {
        OqcfDType dt = IN(c, k)->dtype;
        if (dt == OQCF_STRING || dt == OQCF_BOOL || oqcf_dtype_size(dt) == 0)
            return ERR("input %d '%s' is %s, not a number", k, IN(c, k)->name,
                       oqc_dtype_name(dt));
    }
    OqcShape s;
    if (oqcf_broadcast_shape(&x->shape, &p->shape, &s) != OQCF_OK)
        return ERR("shapes %s and %s ('%s') do not broadcast", sstr(&x->shape),
                   sstr(&p->shape), p->name);
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_clip(Ctx *c) {
    if (same_type(c, 3) < 0)
        return -1;
    for (int k = 1; k < c->n->nin && k < 3; k++)
        if (IN(c, k) && oqc_shape_numel(&IN(c, k)->shape) != 1)
            return ERR("min/max input '%s' must be a scalar", IN(c, k)->name);
    return shape_same(c);
}

int oqc_rule_softmax(Ctx *c) {
    int r = IN(c, 0)->shape.rank;
    int64_t axis = oqc_attr_int(c->n, "axis", c->n->opset >= 13 ? -1 : 1);
    if (r > 0 && norm_axis(c, axis, r, "axis") < 0)
        return -1;
    return shape_same(c);
}

/* ------------------------------------------------------------------ run */

static int run_unary(OqcExec *e, int node) {
    const float *x = XIN(e, node, 0);
    float *y = YOUT(e, node, 0);
    int64_t n = numel_out(e, node, 0);
    ExecNode *p = EN(e, node);
    switch (N(e, node)->op) {
    case OQC_OP_Relu: CHECK(oqcf_relu(x, y, n)); break;
    case OQC_OP_Sigmoid: CHECK(oqcf_sigmoid(x, y, n)); break;
    case OQC_OP_Tanh: CHECK(oqcf_tanh(x, y, n)); break;
    case OQC_OP_LeakyRelu: CHECK(oqcf_leaky_relu(x, y, n, p->f0)); break;
    case OQC_OP_HardSigmoid: CHECK(oqcf_hard_sigmoid(x, y, n, p->f0, p->f1)); break;
    default: CHECK(oqcf_unary(p->uop, x, y, n, p->f0, p->f1)); break;
    }
    return 0;
}

static int run_clip(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const OqcTensor *x = T(e, n->in[0]);
    const void *lo = NULL, *hi = NULL;
    if (n->opset >= 11) {
        lo = n->nin > 1 && n->in[1] >= 0 ? XIN(e, node, 1) : NULL;
        hi = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    } else {
        lo = &EN(e, node)->f0;
        hi = &EN(e, node)->f1;
    }
    CHECK(oqcf_clip_typed(x->dtype, XIN(e, node, 0), YOUT(e, node, 0), numel_out(e, node, 0),
                          lo, hi));
    return 0;
}

static int run_binary(OqcExec *e, int node) {
    static const OqcfBinaryOp ops[OQC_OP_COUNT] = {
        [OQC_OP_Add] = OQCF_ADD, [OQC_OP_Sub] = OQCF_SUB, [OQC_OP_Mul] = OQCF_MUL,
        [OQC_OP_Div] = OQCF_DIV, [OQC_OP_Pow] = OQCF_POW, [OQC_OP_PRelu] = OQCF_PRELU};
    OqcShape bs = *SH(e, node, 1);
    if (N(e, node)->op == OQC_OP_PRelu)
        bs = oqc_prelu_slope_shape(N(e, node), SH(e, node, 0), &bs);
    CHECK(oqcf_binary(ops[N(e, node)->op], T(e, N(e, node)->out[0])->dtype, XIN(e, node, 0),
                      SH(e, node, 0), XIN(e, node, 1), &bs, YOUT(e, node, 0)));
    return 0;
}

/* Pow of other types: both inputs cast to double (scratch), pow, the result cast to the
 * base's type (float -> integer truncates toward zero, see oqcf_cast). */
static int run_pow_cast(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    int64_t na = oqc_shape_numel(SH(e, node, 0)), nb = oqc_shape_numel(SH(e, node, 1));
    int64_t ny = numel_out(e, node, 0);
    double *a = e->scratch, *b = a + na, *y = b + nb;
    CHECK(oqcf_cast(XIN(e, node, 0), T(e, n->in[0])->dtype, a, OQCF_DOUBLE, na));
    CHECK(oqcf_cast(XIN(e, node, 1), T(e, n->in[1])->dtype, b, OQCF_DOUBLE, nb));
    CHECK(oqcf_binary(OQCF_POW, OQCF_DOUBLE, a, SH(e, node, 0), b, SH(e, node, 1), y));
    CHECK(oqcf_cast(y, OQCF_DOUBLE, YOUT(e, node, 0), T(e, n->out[0])->dtype, ny));
    return 0;
}

static int run_sum(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const float *xs[64];
    OqcfShape shapes[64];
    for (int k = 0; k < n->nin; k++) {
        xs[k] = XIN(e, node, k);
        shapes[k] = *SH(e, node, k);
    }
    CHECK(oqcf_sum(xs, shapes, n->nin, YOUT(e, node, 0)));
    return 0;
}

static int run_softmax(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_softmax(XIN(e, node, 0), YOUT(e, node, 0), x->a, x->b, x->c));
    return 0;
}

/* ------------------------------------------------------------------ prepare */

/* Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid */
int oqc_prep_relu(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                    oqc_dtype_name(in0->dtype));
    x->f0 = n->op == OQC_OP_LeakyRelu ? oqc_attr_float(n, "alpha", 0.01f)
                                      : oqc_attr_float(n, "alpha", 0.2f);
    x->f1 = oqc_attr_float(n, "beta", 0.5f);
    x->run = run_unary;
    x->kind = EXEC_UNARY;
    return 0;
}

/* Clip */
int oqc_prep_clip(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (n->opset < 11 && !is_float(in0))
        return PERR("only f32 is supported");
    x->f0 = oqc_attr_float(n, "min", -INFINITY);
    x->f1 = oqc_attr_float(n, "max", INFINITY);
    x->run = run_clip;
    x->kind = EXEC_CLIP;
    return 0;
}

/* PRelu */
int oqc_prep_p_relu(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (in0->dtype != OQCF_FLOAT && in0->dtype != OQCF_DOUBLE)
        return PERR("PRelu on %s tensors is not supported (f32, f64)",
                    oqc_dtype_name(in0->dtype));
    x->run = run_binary;
    x->kind = EXEC_BINARY;
    return 0;
}

/* Pow */
int oqc_prep_pow(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    OqcfDType t1 = g->tensors[n->in[1]].dtype;
    if ((in0->dtype == OQCF_FLOAT || in0->dtype == OQCF_DOUBLE) && t1 == in0->dtype) {
        x->run = run_binary;
        x->kind = EXEC_BINARY;
        return 0;
    }
    if (in0->dtype == OQCF_FLOAT16 || in0->dtype == OQCF_BFLOAT16 ||
        t1 == OQCF_FLOAT16 || t1 == OQCF_BFLOAT16)
        return PERR("Pow on 16-bit floats is not supported");
    x->scratch = (size_t)(oqc_shape_numel(&in0->shape) + oqc_shape_numel(SH(e, node, 1)) +
                          oqc_shape_numel(&out0->shape)) * sizeof(double);
    x->run = run_pow_cast;
    x->kind = EXEC_POW_CAST;
    return 0;
}

/* Add, Sub, Mul, Div */
int oqc_prep_add(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    x->run = run_binary;
    x->kind = EXEC_BINARY;
    return 0;
}

/* Sum */
int oqc_prep_sum(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    if (n->nin > 64)
        return PERR("more than 64 inputs");
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] < 0)
            return PERR("input %d is empty", k);
    x->run = run_sum;
    x->kind = EXEC_SUM;
    return 0;
}

/* Softmax */
int oqc_prep_softmax(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    int r = in0->shape.rank;
    int64_t axis = oqc_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += r;
    if (r == 0) {
        x->a = x->b = x->c = 1;
    } else if (n->opset >= 13) {
        x->a = prod(&in0->shape, 0, (int)axis);
        x->b = in0->shape.d[axis];
        x->c = prod(&in0->shape, (int)axis + 1, r);
    } else {
        x->a = prod(&in0->shape, 0, (int)axis);
        x->b = prod(&in0->shape, (int)axis, r);
        x->c = 1;
    }
    x->run = run_softmax;
    x->kind = EXEC_SOFTMAX;
    return 0;
}

/* The OQC_UNARY rows of ops.def: oqcf_unary's op and attributes (oqc_unary_of). */
int oqc_prep_unary(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &g->tensors[n->in[0]];
    OQC_ASSERT(oqc_unary_of(n, &x->uop, &x->f0, &x->f1));
    if (!is_float(in0))
        return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                    oqc_dtype_name(in0->dtype));
    const char *approx = oqc_attr_string(n, "approximate", "none");
    if (n->op == OQC_OP_Gelu && strcmp(approx, "none") && strcmp(approx, "tanh"))
        return PERR("approximate '%s' is not 'none' or 'tanh'", approx);
    x->run = run_unary;
    x->kind = EXEC_UNARY;
    return 0;
}

/* ------------------------------------------------------------------ emit */

/* The call of EXEC_UNARY (run_unary). */
void oqc_em_unary(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    int64_t cnt = numel_out(m->e, node, 0);
    OqcfUnaryOp uop;
    float alpha, beta;
    if (oqc_unary_of(n, &uop, &alpha, &beta)) {
        static const char *const names[OQCF_UN_COUNT] = {
#define UNARY_NAME(name, value) [OQCF_UN_##name] = #name,
            OQCF_UNARY_OPS(UNARY_NAME)
#undef UNARY_NAME
        };
        fprintf(b, "    TRY(oqcf_unary(OQCF_UN_%s, %s, %s, %" PRId64 ", ", names[x->uop],
                X(0), Y(0), cnt);
        oqc_em_f(b, x->f0);
        fputs(", ", b);
        oqc_em_f(b, x->f1);
        fputs("));\n", b);
        return;
    }
    const char *fn = n->op == OQC_OP_Relu ? "relu" : n->op == OQC_OP_Sigmoid ? "sigmoid"
                   : n->op == OQC_OP_Tanh ? "tanh" : n->op == OQC_OP_LeakyRelu ? "leaky_relu"
                   : n->op == OQC_OP_HardSigmoid ? "hard_sigmoid" : NULL;
    OQC_ASSERT(fn);
    fprintf(b, "    TRY(oqcf_%s(%s, %s, %" PRId64, fn, X(0), Y(0), cnt);
    if (n->op == OQC_OP_LeakyRelu || n->op == OQC_OP_HardSigmoid) {
        fputs(", ", b);
        oqc_em_f(b, x->f0);
    }
    if (n->op == OQC_OP_HardSigmoid) {
        fputs(", ", b);
        oqc_em_f(b, x->f1);
    }
    fputs("));\n", b);
}

/* The call of EXEC_CLIP (run_clip). */
void oqc_em_clip(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    const char *lo = "NULL", *hi = "NULL";
    if (n->opset >= 11) {
        if (n->nin > 1 && n->in[1] >= 0)
            lo = X(1);
        if (n->nin > 2 && n->in[2] >= 0)
            hi = X(2);
    } else {
        fprintf(oqc_em_decl(m), "static const float v%d[2] = {", node);
        oqc_em_f(oqc_em_decl(m), x->f0);
        fputs(", ", oqc_em_decl(m));
        oqc_em_f(oqc_em_decl(m), x->f1);
        fputs("}; /* min, max */\n", oqc_em_decl(m));
        lo = oqc_arena_printf(m->a, "&v%d[0]", node);
        hi = oqc_arena_printf(m->a, "&v%d[1]", node);
    }
    fprintf(b, "    TRY(oqcf_clip_typed(%s, %s, %s, %" PRId64 ", %s, %s));\n",
            oqc_em_dtype_enum(in0->dtype), X(0), Y(0), numel_out(m->e, node, 0), lo, hi);
}

/* The call of EXEC_BINARY (run_binary). */
void oqc_em_binary(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcGraph *g = m->g;
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    const char *op = n->op == OQC_OP_Add ? "OQCF_ADD" : n->op == OQC_OP_Sub ? "OQCF_SUB"
                   : n->op == OQC_OP_Mul ? "OQCF_MUL" : n->op == OQC_OP_Div ? "OQCF_DIV"
                   : n->op == OQC_OP_Pow ? "OQCF_POW" : n->op == OQC_OP_PRelu ? "OQCF_PRELU"
                   : NULL;
    OQC_ASSERT(op);
    oqc_em_in_shapes(m, node, 2);
    fprintf(b, "    TRY(oqcf_binary(%s, %s, %s, &s%d[0], %s, &s%d[1], %s));\n", op,
            oqc_em_dtype_enum(g->tensors[n->out[0]].dtype), X(0), node, X(1), node, Y(0));
}

/* The call of EXEC_POW_CAST (run_pow_cast). */
void oqc_em_pow_cast(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    oqc_em_use_kernel(m, "oqcf_cast.c");
    oqc_em_in_shapes(m, node, 2);
    int64_t na = oqc_shape_numel(&in0->shape), nb = oqc_shape_numel(&g->tensors[n->in[1]].shape);
    fprintf(b, "    TRY(oqcf_cast(%s, %s, SCRATCH, OQCF_DOUBLE, %" PRId64 "));\n", X(0),
            oqc_em_dtype_enum(in0->dtype), na);
    fprintf(b, "    TRY(oqcf_cast(%s, %s, (double *)SCRATCH + %" PRId64 ", OQCF_DOUBLE, %" PRId64
               "));\n", X(1), oqc_em_dtype_enum(g->tensors[n->in[1]].dtype), na, nb);
    fprintf(b, "    TRY(oqcf_binary(OQCF_POW, OQCF_DOUBLE, SCRATCH, &s%d[0], (double *)SCRATCH + %"
               PRId64 ", &s%d[1], (double *)SCRATCH + %" PRId64 "));\n", node, na, node,
            na + nb);
    fprintf(b, "    TRY(oqcf_cast((double *)SCRATCH + %" PRId64 ", OQCF_DOUBLE, %s, %s, %" PRId64
               "));\n", na + nb, Y(0), oqc_em_dtype_enum(g->tensors[n->out[0]].dtype),
            numel_out(m->e, node, 0));
}

/* The call of EXEC_SUM (run_sum). */
void oqc_em_sum(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    oqc_em_in_shapes(m, node, n->nin);
    fputs("    {\n        const float *const x[] = {", b);
    for (int k = 0; k < n->nin; k++)
        fprintf(b, "%s%s", k ? ", " : "", X(k));
    fprintf(b, "};\n        TRY(oqcf_sum(x, s%d, %d, %s));\n    }\n", node, n->nin, Y(0));
}

/* The call of EXEC_SOFTMAX (run_softmax). */
void oqc_em_softmax(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_eltwise.c");
    fprintf(b, "    TRY(oqcf_softmax(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 "));\n", X(0),
            Y(0), x->a, x->b, x->c);
}
