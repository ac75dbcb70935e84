/* norm.c - the op family of normalisations: BatchNormalization, LRN,
 * LayerNormalization, InstanceNormalization. Shape rules (oqc_rule_*), FP32
 * preparation (oqc_prep_*), the run functions and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

int oqc_rule_batchnorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    if (x->shape.rank < 2)
        return ERR("input '%s' has rank %d; needs at least N x C", x->name, x->shape.rank);
    int64_t ch = x->shape.d[1];
    if (same_type(c, 5) < 0)
        return -1;
    for (int k = 1; k < 5; k++) {
        const OqcTensor *p = IN(c, k);
        if (!p)
            return ERR("needs 5 inputs (X, scale, B, mean, var)");
        if (p->shape.rank != 1 || p->shape.d[0] != ch)
            return ERR("input '%s' has shape %s; expected [%" PRId64 "] (one per channel)",
                       p->name, sstr(&p->shape), ch);
    }
    set_out(c, 0, x->dtype, &x->shape);
    OqcShape cs = {.rank = 1, .d = {ch}};
    for (int k = 1; k < c->n->nout; k++)
        set_out(c, k, x->dtype, &cs);
    return 0;
}

/* LayerNormalization: Y like X; Mean and InvStdDev (optional outputs) keep the dims
 * before axis and have 1 from axis on. Scale and bias hold one entry per normalised
 * element. */
int oqc_rule_layernorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1), *b = IN(c, 2);
    int r = x->shape.rank;
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", -1), r, "axis");
    if (axis < 0)
        return -1;
    if (!w)
        return ERR("needs a scale input");
    if (same_type(c, 3) < 0)
        return -1;
    int64_t inner = 1;
    for (int i = axis; i < r; i++)
        inner *= x->shape.d[i];
    for (int k = 1; k < 3; k++) {
        const OqcTensor *t = k == 1 ? w : b;
        if (t && oqc_shape_numel(&t->shape) != inner)
            return ERR("%s '%s' %s must have the %" PRId64 " elements of the normalised dims",
                       k == 1 ? "scale" : "bias", t->name, sstr(&t->shape), inner);
    }
    OqcShape s = x->shape;
    for (int i = axis; i < r; i++)
        s.d[i] = 1;
    set_out(c, 0, x->dtype, &x->shape);
    set_out(c, 1, OQCF_FLOAT, &s);
    set_out(c, 2, OQCF_FLOAT, &s);
    return 0;
}

/* InstanceNormalization: NCHW-like input, scale and bias of C entries. */
int oqc_rule_instancenorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    if (x->shape.rank < 3)
        return ERR("needs an input of rank 3 or more, not %s", sstr(&x->shape));
    if (same_type(c, 3) < 0)
        return -1;
    for (int k = 1; k < 3; k++) {
        const OqcTensor *t = IN(c, k);
        if (!t || t->shape.rank != 1 || t->shape.d[0] != x->shape.d[1])
            return ERR("input %d must have shape [%" PRId64 "]", k, x->shape.d[1]);
    }
    return shape_same(c);
}

int oqc_rule_lrn(Ctx *c) {
    if (IN(c, 0)->shape.rank < 3)
        return ERR("input has rank %d; LRN needs N x C x spatial...", IN(c, 0)->shape.rank);
    if (oqc_attr_int(c->n, "size", 0) <= 0)
        return ERR("attribute 'size' must be a positive integer");
    return shape_same(c);
}

static int run_batchnorm(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_batchnorm(e->pool, x->a, x->b, x->c, XIN(e, node, 0), XIN(e, node, 1),
                         XIN(e, node, 2), XIN(e, node, 3), XIN(e, node, 4), x->f0,
                         YOUT(e, node, 0)));
    return 0;
}

static int run_lrn(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    const OqcNode *n = N(e, node);
    CHECK(oqcf_lrn(e->pool, x->a, x->b, x->c, XIN(e, node, 0), oqc_attr_int(n, "size", 1),
                   oqc_attr_float(n, "alpha", 1e-4f), oqc_attr_float(n, "beta", 0.75f),
                   oqc_attr_float(n, "bias", 1.0f), YOUT(e, node, 0)));
    return 0;
}

static int run_layernorm(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_layernorm(x->a, x->b, XIN(e, node, 0), XIN(e, node, 1), opt_in(e, node, 2),
                         x->f0, YOUT(e, node, 0), opt_out(e, node, 1), opt_out(e, node, 2)));
    return 0;
}

static int run_instancenorm(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_instancenorm(x->a, x->b, x->c, XIN(e, node, 0), XIN(e, node, 1),
                            XIN(e, node, 2), x->f0, YOUT(e, node, 0)));
    return 0;
}

/* BatchNormalization */
int oqc_prep_batch_normalization(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (oqc_attr_int(n, "training_mode", 0) != 0 || (n->opset < 7 && oqc_attr_int(n, "is_test", 1) == 0))
        return PERR("training-mode BatchNormalization is not supported (inference only)");
    if (oqc_attr_int(n, "spatial", 1) == 0)
        return PERR("BatchNormalization with spatial=0 is not supported");
    for (int k = 1; k < n->nout; k++)
        if (n->out[k] >= 0)
            return PERR("BatchNormalization with training outputs is not supported");
    if (!is_float(in0))
        return PERR("only f32 is supported");
    nc_inner(x, &in0->shape);
    x->f0 = oqc_attr_float(n, "epsilon", 1e-5f);
    x->run = run_batchnorm;
    x->kind = EXEC_BATCHNORM;
    return 0;
}

/* LRN */
int oqc_prep_lrn(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    nc_inner(x, &in0->shape);
    x->run = run_lrn;
    x->kind = EXEC_LRN;
    return 0;
}

/* LayerNormalization */
int oqc_prep_layer_normalization(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    int r = in0->shape.rank;
    int64_t axis = oqc_attr_int(n, "axis", -1);
    if (axis < 0)
        axis += r;
    x->a = prod(&in0->shape, 0, (int)axis);
    x->b = prod(&in0->shape, (int)axis, r);
    x->f0 = oqc_attr_float(n, "epsilon", 1e-5f);
    x->run = run_layernorm;
    x->kind = EXEC_LAYERNORM;
    return 0;
}

/* InstanceNormalization */
int oqc_prep_instance_normalization(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    nc_inner(x, &in0->shape);
    x->f0 = oqc_attr_float(n, "epsilon", 1e-5f);
    x->run = run_instancenorm;
    x->kind = EXEC_INSTANCENORM;
    return 0;
}

/* The call of EXEC_BATCHNORM (run_batchnorm). */
void oqc_em_batchnorm(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_norm.c");
    fprintf(b, "    TRY(oqcf_batchnorm(%s, %" PRId64 ", %" PRId64 ", %" PRId64
               ", %s, %s, %s, %s, %s, ", oqc_em_pool_arg(m), x->a, x->b, x->c, X(0), X(1), X(2), X(3),
            X(4));
    oqc_em_f(b, x->f0);
    fprintf(b, ", %s));\n", Y(0));
}

/* The call of EXEC_LRN (run_lrn). */
void oqc_em_lrn(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_norm.c");
    fprintf(b, "    TRY(oqcf_lrn(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %" PRId64
               ", ", oqc_em_pool_arg(m), x->a, x->b, x->c, X(0), oqc_attr_int(n, "size", 1));
    oqc_em_f(b, oqc_attr_float(n, "alpha", 1e-4f));
    fputs(", ", b);
    oqc_em_f(b, oqc_attr_float(n, "beta", 0.75f));
    fputs(", ", b);
    oqc_em_f(b, oqc_attr_float(n, "bias", 1.0f));
    fprintf(b, ", %s));\n", Y(0));
}

/* The call of EXEC_LAYERNORM (run_layernorm). */
void oqc_em_layernorm(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_norm.c");
    fprintf(b, "    TRY(oqcf_layernorm(%" PRId64 ", %" PRId64 ", %s, %s, %s, ", x->a, x->b, X(0),
            X(1), n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL");
    oqc_em_f(b, x->f0);
    fprintf(b, ", %s, %s, %s));\n", Y(0), n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL",
            n->nout > 2 && n->out[2] >= 0 ? Y(2) : "NULL");
}

/* The call of EXEC_INSTANCENORM (run_instancenorm). */
void oqc_em_instancenorm(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_norm.c");
    fprintf(b, "    TRY(oqcf_instancenorm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, ",
            x->a, x->b, x->c, X(0), X(1), X(2));
    oqc_em_f(b, x->f0);
    fprintf(b, ", %s));\n", Y(0));
}
