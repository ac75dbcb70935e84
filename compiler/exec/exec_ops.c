/* exec_ops.c - the FP32 executor's per-op part: how each operator is prepared (kernel
 * parameters from attributes and shapes, scratch size, dtype checks) and which runtime
 * kernel it calls (see exec_int.h; exec.c plans memory and runs the nodes). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"

/* ------------------------------------------------------------------ kernels */

/* Where a kernel writes output k: the view's base buffer (the kernel adds y_coff), or
 * the tensor itself. */
static float *out_base(OqcExec *e, int node, int k) {
    const OqcTensor *t = T(e, N(e, node)->out[k]);
    return (float *)(t->view_base >= 0 ? e->ptr[t->view_base] : e->ptr[N(e, node)->out[k]]);
}

static int run_conv(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    ExecNode *x = EN(e, node);
    const float *b = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    if (!x->convs) {
        CHECK(oqcf_conv(e->pool, &x->conv, XIN(e, node, 0), XIN(e, node, 1), b,
                        out_base(e, node, 0), e->scratch, e->scratch_bytes));
        return 0;
    }
    /* A merged conv: one call per output range of weight rows. */
    const float *w = XIN(e, node, 1);
    int64_t row = oqc_shape_numel(SH(e, node, 1)) / SH(e, node, 1)->d[0];
    for (int k = 0; k < n->nout; k++)
        CHECK(oqcf_conv(e->pool, &x->convs[k], XIN(e, node, 0), w + x->koff[k] * row,
                        b ? b + x->koff[k] : NULL, out_base(e, node, k), e->scratch,
                        e->scratch_bytes));
    return 0;
}

static int run_conv_transpose(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const float *b = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    CHECK(oqcf_conv_transpose(&EN(e, node)->conv, XIN(e, node, 0), XIN(e, node, 1), b,
                              YOUT(e, node, 0)));
    return 0;
}

static int run_maxpool(OqcExec *e, int node) {
    int64_t *idx = N(e, node)->nout > 1 && N(e, node)->out[1] >= 0 ? YOUT(e, node, 1) : NULL;
    const OqcTensor *x = T(e, N(e, node)->in[0]);
    if (x->dtype == OQCF_FLOAT) {
        CHECK(oqcf_maxpool(e->pool, &EN(e, node)->pool, XIN(e, node, 0), out_base(e, node, 0),
                       idx));
        return 0;
    }
    /* 8-bit inputs: max commutes with the exact conversion to float and back. */
    int64_t nx = oqc_shape_numel(&x->shape), ny = numel_out(e, node, 0);
    if (nx == 0 || ny == 0)   /* nothing to do, and no scratch was planned */
        return 0;
    float *fx = e->scratch, *fy = fx + nx;
    CHECK(oqcf_cast(XIN(e, node, 0), x->dtype, fx, OQCF_FLOAT, nx));
    CHECK(oqcf_maxpool(e->pool, &EN(e, node)->pool, fx, fy, idx));
    CHECK(oqcf_cast(fy, OQCF_FLOAT, YOUT(e, node, 0), x->dtype, ny));
    return 0;
}

static int run_avgpool(OqcExec *e, int node) {
    CHECK(oqcf_avgpool(e->pool, &EN(e, node)->pool, XIN(e, node, 0), out_base(e, node, 0)));
    return 0;
}

static int run_global_pool(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    if (N(e, node)->op == OQC_OP_GlobalAveragePool)
        CHECK(oqcf_global_avgpool(e->pool, x->a, x->b, x->c, XIN(e, node, 0), YOUT(e, node, 0)));
    else
        CHECK(oqcf_global_maxpool(e->pool, x->a, x->b, x->c, XIN(e, node, 0), YOUT(e, node, 0)));
    return 0;
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

/* Optional input or output k of node, NULL when absent. */
static void *opt_in(OqcExec *e, int node, int k) {
    return N(e, node)->nin > k && N(e, node)->in[k] >= 0 ? (void *)XIN(e, node, k) : NULL;
}
static void *opt_out(OqcExec *e, int node, int k) {
    return N(e, node)->nout > k && N(e, node)->out[k] >= 0 ? YOUT(e, node, k) : NULL;
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

static int run_gemm(OqcExec *e, int node) {
    const float *c = EN(e, node)->gemm.has_c ? XIN(e, node, 2) : NULL;
    CHECK(oqcf_gemm(e->pool, &EN(e, node)->gemm, XIN(e, node, 0), XIN(e, node, 1), c,
                    YOUT(e, node, 0), e->scratch, e->scratch_bytes));
    return 0;
}

static int run_matmul(OqcExec *e, int node) {
    CHECK(oqcf_matmul(e->pool, SH(e, node, 0), XIN(e, node, 0), SH(e, node, 1),
                      XIN(e, node, 1), YOUT(e, node, 0), e->scratch, e->scratch_bytes));
    return 0;
}

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
                                 : 0.0f;
    return 1;
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


static int run_concat(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *xs[256];
    OqcfShape shapes[256];
    for (int k = 0; k < n->nin; k++) {
        xs[k] = XIN(e, node, k);
        shapes[k] = *SH(e, node, k);
    }
    CHECK(oqcf_concat(xs, shapes, n->nin, EN(e, node)->axis, esize_of(T(e, n->out[0])),
                      YOUT(e, node, 0)));
    return 0;
}

static int run_split(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    int64_t sizes[256];
    void *ys[256];
    for (int k = 0; k < n->nout; k++) {
        sizes[k] = T(e, n->out[k])->shape.d[EN(e, node)->axis];
        ys[k] = YOUT(e, node, k);
    }
    CHECK(oqcf_split(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, sizes, n->nout,
                     esize_of(T(e, n->in[0])), ys));
    return 0;
}

static int run_slice(OqcExec *e, int node) {
    CHECK(oqcf_slice(XIN(e, node, 0), SH(e, node, 0), &EN(e, node)->slice,
                     esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_transpose(OqcExec *e, int node) {
    CHECK(oqcf_transpose(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->perm,
                         esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_pad(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *value = NULL;
    if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0)
        value = XIN(e, node, 2);
    else if (n->opset < 11)
        value = &EN(e, node)->f0; /* float attribute 'value' */
    CHECK(oqcf_pad(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->pads, EN(e, node)->pad_mode,
                   value, esize_of(T(e, n->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_gather(OqcExec *e, int node) {
    const OqcTensor *ix = T(e, N(e, node)->in[1]);
    CHECK(oqcf_gather(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, XIN(e, node, 1),
                      ix->dtype, oqc_shape_numel(&ix->shape), esize_of(T(e, N(e, node)->in[0])),
                      YOUT(e, node, 0)));
    return 0;
}

static int run_cast(OqcExec *e, int node) {
    CHECK(oqcf_cast(XIN(e, node, 0), T(e, N(e, node)->in[0])->dtype, YOUT(e, node, 0),
                    T(e, N(e, node)->out[0])->dtype, numel_out(e, node, 0)));
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

static int run_dropout_mask(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    if (n->nout > 1 && n->out[1] >= 0)
        memset(YOUT(e, node, 1), 1, (size_t)numel_out(e, node, 1)); /* inference: keep all */
    return 0;
}

/* The runtime's reduction of a Reduce* op. */
OqcfReduceOp oqc_reduce_op(OqcOp op) {
    return op == OQC_OP_ReduceSum ? OQCF_REDUCE_SUM
         : op == OQC_OP_ReduceMean ? OQCF_REDUCE_MEAN
         : op == OQC_OP_ReduceMin ? OQCF_REDUCE_MIN : OQCF_REDUCE_MAX;
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

static int run_tile(OqcExec *e, int node) {
    const OqcTensor *y = T(e, N(e, node)->out[0]);
    CHECK(oqcf_tile(XIN(e, node, 0), SH(e, node, 0), &y->shape, esize_of(y), YOUT(e, node, 0)));
    return 0;
}

static int run_space_depth(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_transpose(XIN(e, node, 0), &x->view, x->perm, esize_of(T(e, N(e, node)->in[0])),
                         YOUT(e, node, 0)));
    return 0;
}

/* DepthToSpace / SpaceToDepth of NCHW x as a transpose of a 6-D view of x (ONNX's
 * definitions): DCR [N, b, b, C', H, W] -> [N, C', H, b, W, b]; CRD [N, C', b, b, H, W]
 * -> the same order; SpaceToDepth [N, C, H', b, W', b] -> [N, b, b, C, H', W']. */
static void space_depth_view(const OqcNode *n, const OqcShape *xs, OqcShape *view, int *perm) {
    int64_t b = oqc_attr_int(n, "blocksize", 1), N = xs->d[0], C = xs->d[1], H = xs->d[2],
            W = xs->d[3];
    static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3},
                     s2d[6] = {0, 3, 5, 1, 2, 4};
    const int *p;
    *view = (OqcShape){.rank = 6};
    if (n->op == OQC_OP_SpaceToDepth) {
        int64_t d[6] = {N, C, H / b, b, W / b, b};
        memcpy(view->d, d, sizeof d);
        p = s2d;
    } else if (!strcmp(oqc_attr_string(n, "mode", "DCR"), "CRD")) {
        int64_t d[6] = {N, C / (b * b), b, b, H, W};
        memcpy(view->d, d, sizeof d);
        p = crd;
    } else {
        int64_t d[6] = {N, b, b, C / (b * b), H, W};
        memcpy(view->d, d, sizeof d);
        p = dcr;
    }
    for (int i = 0; i < OQC_MAX_RANK; i++)
        perm[i] = i < 6 ? p[i] : i;
}

static int run_resize(OqcExec *e, int node) {
    const OqcResize *r = EN(e, node)->resize;
    CHECK(oqcf_resize(XIN(e, node, 0), SH(e, node, 0), r->axes, r->naxes, r->extrapolation,
                      esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0), e->scratch,
                      e->scratch_bytes));
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

/* ------------------------------------------------------------ preparation */

#define PERR(...) oqc_err_node(d, g, node, __VA_ARGS__)

static int64_t prod(const OqcShape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->d[i];
    return p;
}

/* Reads input k's known values (constant or derived) as int64. */
static int values_of(const OqcGraph *g, int node, int k, int64_t *v, int max) {
    const OqcNode *n = &g->nodes[node];
    if (k >= n->nin || n->in[k] < 0)
        return -2;
    const OqcTensor *t = &g->tensors[n->in[k]];
    if (!t->data || !(t->is_const || t->has_value) || t->shape.rank > 1)
        return -1;
    int64_t cnt = oqc_shape_numel(&t->shape);
    if (cnt > max || (t->dtype != OQCF_INT64 && t->dtype != OQCF_INT32))
        return -1;
    for (int64_t i = 0; i < cnt; i++)
        v[i] = t->dtype == OQCF_INT64 ? ((const int64_t *)t->data)[i]
                                      : ((const int32_t *)t->data)[i];
    return (int)cnt;
}

static int fill_window(const OqcWindow *w, int64_t *in, int64_t *out, int64_t *kernel,
                       int64_t *stride, int64_t *dil, int64_t *pb, int64_t *pe) {
    if (w->nsp > OQCF_MAX_SPATIAL)
        return -1;
    for (int i = 0; i < w->nsp; i++) {
        in[i] = w->in[i];
        out[i] = w->out[i];
        kernel[i] = w->kernel[i];
        stride[i] = w->stride[i];
        dil[i] = w->dilation[i];
        pb[i] = w->pad_begin[i];
        pe[i] = w->pad_end[i];
    }
    return 0;
}

static int is_float(const OqcTensor *t) { return t->dtype == OQCF_FLOAT; }

/* The N x C x inner view of an NCHW-like shape (a, b, c) of per-plane kernels. */
static void nc_inner(ExecNode *x, const OqcShape *s) {
    x->a = s->d[0];
    x->b = s->d[1];
    x->c = prod(s, 2, s->rank);
}

/* When output tensor t is a view (a channel range of another tensor's buffer), sets
 * the kernel's output channel total and offset. */
static int set_out_view(const OqcGraph *g, int t, int64_t *ctotal, int64_t *coff, OqcDiag *d,
                        int node) {
    const OqcTensor *tt = &g->tensors[t];
    if (tt->view_base < 0)
        return 0;
    const OqcTensor *b = &g->tensors[tt->view_base];
    if (b->shape.rank != tt->shape.rank || tt->view_coff + tt->shape.d[1] > b->shape.d[1])
        return PERR("internal: view '%s' does not fit in '%s'", tt->name, b->name);
    *ctotal = b->shape.d[1];
    *coff = tt->view_coff;
    return 0;
}

/* Prepares node `node`: run function, parameters, scratch; dtype checks. */
int oqc_exec_prepare(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
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
    const OqcTensor *in0 = n->nin > 0 && n->in[0] >= 0 ? &g->tensors[n->in[0]] : NULL;
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &g->tensors[n->out[0]] : NULL;
    int nthreads = oqcf_pool_threads(e->pool);
    if (!in0 && n->op != OQC_OP_ConstantOfShape)
        return PERR("has no first input");
    switch (n->op) {
    case OQC_OP_Conv: {
        OqcWindow w;
        if (oqc_conv_geometry(g, node, &in0->shape, SH(e, node, 1), &w, d) < 0)
            return -1;
        if (!is_float(in0))
            return PERR("Conv on %s tensors is not supported (f32 only)", oqc_dtype_name(in0->dtype));
        OqcfConvParams *p = &x->conv;
        memset(p, 0, sizeof *p);
        p->nspatial = w.nsp;
        if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                        p->pad_begin, p->pad_end) < 0)
            return PERR("Conv with %d spatial axes is not supported (at most %d)", w.nsp,
                        OQCF_MAX_SPATIAL);
        p->batch = in0->shape.d[0];
        p->channels = w.in_channels;
        p->out_channels = w.out_channels;
        p->group = w.group;
        p->act = n->act;
        p->act_per_channel = n->act_per_channel;
        if (n->out_channels) {
            if (w.group != 1)
                return PERR("a merged Conv must have group 1");
            x->convs = oqc_arena_alloc(g->arena, (size_t)n->nout * sizeof *x->convs);
            x->koff = oqc_arena_alloc(g->arena, (size_t)n->nout * sizeof *x->koff);
            int64_t off = 0;
            for (int k = 0; k < n->nout; k++) {
                x->convs[k] = *p;
                x->convs[k].out_channels = n->out_channels[k];
                if (n->act_per_channel)
                    x->convs[k].act_per_channel = n->act_per_channel + off;
                x->koff[k] = off;
                off += n->out_channels[k];
                if (set_out_view(g, n->out[k], &x->convs[k].y_ctotal, &x->convs[k].y_coff, d, node) < 0)
                    return -1;
                size_t sc = oqcf_conv_scratch_size(&x->convs[k], nthreads);
                x->scratch = sc > x->scratch ? sc : x->scratch;
            }
        } else if (set_out_view(g, n->out[0], &p->y_ctotal, &p->y_coff, d, node) < 0) {
            return -1;
        }
        if (!n->out_channels)
            x->scratch = oqcf_conv_scratch_size(p, nthreads);
        x->run = run_conv;
        x->kind = EXEC_CONV;
        return 0;
    }
    case OQC_OP_ConvTranspose: {
        OqcWindow w;
        if (oqc_conv_transpose_geometry(g, node, &in0->shape, SH(e, node, 1), &w, d) < 0)
            return -1;
        if (!is_float(in0))
            return PERR("ConvTranspose on %s tensors is not supported (f32 only)",
                        oqc_dtype_name(in0->dtype));
        OqcfConvParams *p = &x->conv;
        memset(p, 0, sizeof *p);
        p->nspatial = w.nsp;
        if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                        p->pad_begin, p->pad_end) < 0)
            return PERR("ConvTranspose with %d spatial axes is not supported (at most %d)",
                        w.nsp, OQCF_MAX_SPATIAL);
        p->batch = in0->shape.d[0];
        p->channels = w.in_channels;
        p->out_channels = w.out_channels;
        p->group = w.group;
        x->run = run_conv_transpose;
        x->kind = EXEC_CONV_TRANSPOSE;
        return 0;
    }
    case OQC_OP_MaxPool:
    case OQC_OP_AveragePool: {
        OqcWindow w;
        if (oqc_pool_geometry(g, node, &in0->shape, &w, d) < 0)
            return -1;
        int byte_max = n->op == OQC_OP_MaxPool &&
                       (in0->dtype == OQCF_UINT8 || in0->dtype == OQCF_INT8);
        if (!is_float(in0) && !byte_max)
            return PERR("%s on %s tensors is not supported", n->op_type,
                        oqc_dtype_name(in0->dtype));
        if (byte_max)
            x->scratch = (size_t)(oqc_shape_numel(&in0->shape) + oqc_shape_numel(&out0->shape)) *
                         sizeof(float);
        OqcfPoolParams *p = &x->pool;
        memset(p, 0, sizeof *p);
        p->nspatial = w.nsp;
        if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                        p->pad_begin, p->pad_end) < 0)
            return PERR("pooling with %d spatial axes is not supported", w.nsp);
        p->batch = in0->shape.d[0];
        p->channels = in0->shape.d[1];
        if (set_out_view(g, n->out[0], &p->y_ctotal, &p->y_coff, d, node) < 0)
            return -1;
        p->count_include_pad = (int)oqc_attr_int(n, "count_include_pad", 0);
        p->storage_order = (int)oqc_attr_int(n, "storage_order", 0);
        x->run = n->op == OQC_OP_MaxPool ? run_maxpool : run_avgpool;
        x->kind = n->op == OQC_OP_MaxPool ? EXEC_MAXPOOL : EXEC_AVGPOOL;
        return 0;
    }
    case OQC_OP_GlobalAveragePool:
    case OQC_OP_GlobalMaxPool:
        if (!is_float(in0))
            return PERR("only f32 is supported");
        nc_inner(x, &in0->shape);
        x->run = run_global_pool;
        x->kind = EXEC_GLOBAL_POOL;
        return 0;
    case OQC_OP_BatchNormalization:
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
    case OQC_OP_LRN:
        if (!is_float(in0))
            return PERR("only f32 is supported");
        nc_inner(x, &in0->shape);
        x->run = run_lrn;
        x->kind = EXEC_LRN;
        return 0;
    case OQC_OP_LayerNormalization: {
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
    case OQC_OP_InstanceNormalization:
        if (!is_float(in0))
            return PERR("only f32 is supported");
        nc_inner(x, &in0->shape);
        x->f0 = oqc_attr_float(n, "epsilon", 1e-5f);
        x->run = run_instancenorm;
        x->kind = EXEC_INSTANCENORM;
        return 0;
    case OQC_OP_Gemm: {
        OqcfGemmParams *p = &x->gemm;
        memset(p, 0, sizeof *p);
        if (!is_float(in0))
            return PERR("only f32 is supported");
        p->trans_a = oqc_attr_int(n, "transA", 0) != 0;
        p->trans_b = oqc_attr_int(n, "transB", 0) != 0;
        p->M = out0->shape.d[0];
        p->N = out0->shape.d[1];
        p->K = in0->shape.d[p->trans_a ? 0 : 1];
        p->alpha = oqc_attr_float(n, "alpha", 1.0f);
        p->beta = oqc_attr_float(n, "beta", 1.0f);
        p->has_c = n->nin > 2 && n->in[2] >= 0;
        if (p->has_c)
            p->c_shape = *SH(e, node, 2);
        p->act = n->act;
        x->scratch = oqcf_gemm_scratch_size(p, nthreads);
        x->run = run_gemm;
        x->kind = EXEC_GEMM;
        return 0;
    }
    case OQC_OP_MatMul:
        if (!is_float(in0))
            return PERR("only f32 is supported");
        x->scratch = oqcf_matmul_scratch_size(SH(e, node, 0), SH(e, node, 1), nthreads);
        x->run = run_matmul;
        x->kind = EXEC_MATMUL;
        return 0;
    case OQC_OP_Relu: case OQC_OP_Sigmoid: case OQC_OP_Tanh: case OQC_OP_LeakyRelu:
    case OQC_OP_HardSigmoid:
        if (!is_float(in0))
            return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                        oqc_dtype_name(in0->dtype));
        x->f0 = n->op == OQC_OP_LeakyRelu ? oqc_attr_float(n, "alpha", 0.01f)
                                          : oqc_attr_float(n, "alpha", 0.2f);
        x->f1 = oqc_attr_float(n, "beta", 0.5f);
        x->run = run_unary;
        x->kind = EXEC_UNARY;
        return 0;
    case OQC_OP_Clip:
        if (n->opset < 11 && !is_float(in0))
            return PERR("only f32 is supported");
        x->f0 = oqc_attr_float(n, "min", -INFINITY);
        x->f1 = oqc_attr_float(n, "max", INFINITY);
        x->run = run_clip;
        x->kind = EXEC_CLIP;
        return 0;
    case OQC_OP_PRelu:
        if (in0->dtype != OQCF_FLOAT && in0->dtype != OQCF_DOUBLE)
            return PERR("PRelu on %s tensors is not supported (f32, f64)",
                        oqc_dtype_name(in0->dtype));
        x->run = run_binary;
        x->kind = EXEC_BINARY;
        return 0;
    case OQC_OP_Pow: {
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
    case OQC_OP_Add: case OQC_OP_Sub: case OQC_OP_Mul: case OQC_OP_Div:
        x->run = run_binary;
        x->kind = EXEC_BINARY;
        return 0;
    case OQC_OP_Sum:
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
    case OQC_OP_Softmax: {
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
    case OQC_OP_ReduceMax: case OQC_OP_ReduceMean: case OQC_OP_ReduceMin:
    case OQC_OP_ReduceSum: {
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
    case OQC_OP_ArgMax: case OQC_OP_ArgMin: {
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
    case OQC_OP_Tile: case OQC_OP_Expand:
        x->run = run_tile;
        x->kind = EXEC_TILE;
        return 0;
    case OQC_OP_DepthToSpace: case OQC_OP_SpaceToDepth:
        space_depth_view(n, &in0->shape, &x->view, x->perm);
        x->run = run_space_depth;
        x->kind = EXEC_SPACE_DEPTH;
        return 0;
    case OQC_OP_Resize: case OQC_OP_Upsample: {
        OqcResize *r = oqc_arena_alloc(g->arena, sizeof *r);
        if (oqc_resize_plan(g, node, &in0->shape, r, g->arena, d) < 0)
            return -1;
        int weighted = 0;
        for (int k = 0; k < r->naxes; k++)
            weighted |= r->axes[k].w != NULL;
        if ((weighted || r->extrapolates) && !is_float(in0))
            return PERR("%s %s on %s tensors is not supported (f32 only; nearest moves any "
                        "type)", n->op_type, r->mode == OQC_RESIZE_NEAREST ? "extrapolating"
                        : "interpolation", oqc_dtype_name(in0->dtype));
        x->resize = r;
        x->scratch = oqcf_resize_scratch_size(&in0->shape, r->axes, r->naxes, esize_of(in0));
        x->run = run_resize;
        x->kind = EXEC_RESIZE;
        return 0;
    }
    case OQC_OP_Concat:
        if (n->nin > 256)
            return PERR("more than 256 inputs");
        x->axis = (int)oqc_attr_int(n, "axis", 0);
        if (x->axis < 0)
            x->axis += out0->shape.rank;
        x->run = run_concat;
        x->kind = EXEC_CONCAT;
        return 0;
    case OQC_OP_Split:
        if (n->nout > 256)
            return PERR("more than 256 outputs");
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] < 0)
                return PERR("output %d is omitted", k);
        x->axis = (int)oqc_attr_int(n, "axis", 0);
        if (x->axis < 0)
            x->axis += in0->shape.rank;
        x->run = run_split;
        x->kind = EXEC_SPLIT;
        return 0;
    case OQC_OP_Slice: {
        int64_t v[4][OQC_MAX_RANK];
        int cnt[4];
        if (n->opset < 10) {
            const int64_t *p;
            for (int k = 0; k < 3; k++) {
                static const char *const names[] = {"starts", "ends", "axes"};
                cnt[k] = oqc_attr_ints(n, names[k], &p);
                if (cnt[k] > OQC_MAX_RANK)
                    return PERR("too many slice entries");
                if (cnt[k] > 0)
                    memcpy(v[k], p, (size_t)cnt[k] * sizeof *p);
            }
            cnt[3] = -1;
        } else {
            for (int k = 0; k < 4; k++)
                cnt[k] = values_of(g, node, k + 1, v[k], OQC_MAX_RANK);
            if (cnt[0] < 0 || cnt[1] < 0 || cnt[2] == -1 || cnt[3] == -1)
                return PERR("starts/ends/axes/steps must be constants");
        }
        if (oqcf_slice_resolve(&in0->shape, v[0], v[1], cnt[0], cnt[2] >= 0 ? v[2] : NULL,
                               cnt[3] >= 0 ? v[3] : NULL, &x->slice) != OQCF_OK)
            return PERR("invalid slice");
        x->run = run_slice;
        x->kind = EXEC_SLICE;
        return 0;
    }
    case OQC_OP_Transpose: {
        const int64_t *perm;
        int np = oqc_attr_ints(n, "perm", &perm);
        for (int i = 0; i < in0->shape.rank; i++)
            x->perm[i] = np >= 0 ? (int)perm[i] : in0->shape.rank - 1 - i;
        x->run = run_transpose;
        x->kind = EXEC_TRANSPOSE;
        return 0;
    }
    case OQC_OP_Pad: {
        int r = in0->shape.rank;
        memset(x->pads, 0, sizeof x->pads);
        if (n->opset < 11) {
            const int64_t *p;
            if (oqc_attr_ints(n, "pads", &p) != 2 * r)
                return PERR("bad pads");
            memcpy(x->pads, p, (size_t)(2 * r) * sizeof *p);
            x->f0 = oqc_attr_float(n, "value", 0.0f);
            if (!is_float(in0))
                return PERR("only f32 is supported for opset < 11 Pad");
        } else {
            int64_t raw[2 * OQC_MAX_RANK], ax[OQC_MAX_RANK];
            int np = values_of(g, node, 1, raw, 2 * OQC_MAX_RANK);
            int na = values_of(g, node, 3, ax, OQC_MAX_RANK);
            if (np < 0 || na == -1)
                return PERR("pads and axes must be constants");
            int nax = na >= 0 ? na : r;
            for (int i = 0; i < nax; i++) {
                int a = na >= 0 ? (int)(ax[i] < 0 ? ax[i] + r : ax[i]) : i;
                x->pads[a] = raw[i];
                x->pads[r + a] = raw[nax + i];
            }
        }
        const char *mode = oqc_attr_string(n, "mode", "constant");
        x->pad_mode = !strcmp(mode, "reflect") ? OQCF_PAD_REFLECT
                    : !strcmp(mode, "edge") ? OQCF_PAD_EDGE : OQCF_PAD_CONSTANT;
        x->run = run_pad;
        x->kind = EXEC_PAD;
        return 0;
    }
    case OQC_OP_Gather:
        x->axis = (int)oqc_attr_int(n, "axis", 0);
        if (x->axis < 0)
            x->axis += in0->shape.rank;
        x->run = run_gather;
        x->kind = EXEC_GATHER;
        return 0;
    case OQC_OP_Cast:
        if (in0->dtype == OQCF_STRING || out0->dtype == OQCF_STRING)
            return PERR("Cast from or to string is not supported");
        x->run = run_cast;
        x->kind = EXEC_CAST;
        return 0;
    case OQC_OP_Shape:
        if (!out0->has_value)
            return PERR("the input's shape is not static");
        x->run = run_shape;
        x->kind = EXEC_SHAPE;
        return 0;
    case OQC_OP_ConstantOfShape:
        x->run = run_constant_of_shape;
        x->kind = EXEC_CONSTANT_OF_SHAPE;
        return 0;
    case OQC_OP_Dropout: {
        int64_t tm[1];
        if (n->nin > 2 && n->in[2] >= 0) {
            const OqcTensor *t = &g->tensors[n->in[2]];
            if (!t->is_const || t->dtype != OQCF_BOOL || !t->data)
                return PERR("training_mode must be a constant");
            if (*(const unsigned char *)t->data)
                return PERR("training-mode Dropout is not supported (inference only)");
        }
        (void)tm;
        if (oqc_attr_int(n, "is_test", 1) == 0 && n->opset < 7)
            return PERR("training-mode Dropout is not supported (inference only)");
        x->run = run_dropout_mask; /* output 0 is a view */
        x->kind = EXEC_DROPOUT;
        return 0;
    }
    case OQC_OP_Identity: case OQC_OP_Reshape: case OQC_OP_Flatten: case OQC_OP_Squeeze:
    case OQC_OP_Unsqueeze:
        x->run = NULL; /* views: no work */
        x->kind = EXEC_NONE;
        return 0;
    case OQC_OP_QuantizeLinear:
    case OQC_OP_DequantizeLinear: {
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
    default:
        if (oqc_unary_of(n, &x->uop, &x->f0, &x->f1)) {   /* an OQC_UNARY row of ops.def */
            if (!is_float(in0))
                return PERR("%s on %s tensors is not supported (f32 only)", n->op_type,
                            oqc_dtype_name(in0->dtype));
            x->run = run_unary;
            x->kind = EXEC_UNARY;
            return 0;
        }
        return PERR("the FP32 executor cannot run this op");
    }
}

/* 1 for ops whose first output is a view of their first input. */
int oqc_exec_is_view_op(const OqcNode *n) { return !!(oqc_op_flags(n->op) & OQC_OPF_VIEW); }
