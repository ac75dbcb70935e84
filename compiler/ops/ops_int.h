/* ops_int.h - private to compiler/ops/: the helpers the op families share and the
 * hooks each family file defines (ops.c's tables dispatch to them). */
#ifndef OQC_OPS_INT_H
#define OQC_OPS_INT_H

#include <inttypes.h>
#include <string.h>

#include "ops_emit.h"
#include "ops_shape.h"

/* ------------------------------------------------------------------ kernels */

/* Where a kernel writes output k: the view's base buffer (the kernel adds y_coff), or
 * the tensor itself. */
static inline float *out_base(OqcExec *e, int node, int k) {
    const OqcTensor *t = T(e, N(e, node)->out[k]);
    return (float *)(t->view_base >= 0 ? e->ptr[t->view_base] : e->ptr[N(e, node)->out[k]]);
}

/* Optional input or output k of node, NULL when absent. */
static inline void *opt_in(OqcExec *e, int node, int k) {
    return N(e, node)->nin > k && N(e, node)->in[k] >= 0 ? (void *)XIN(e, node, k) : NULL;
}

static inline void *opt_out(OqcExec *e, int node, int k) {
    return N(e, node)->nout > k && N(e, node)->out[k] >= 0 ? YOUT(e, node, k) : NULL;
}

/* ------------------------------------------------------------ preparation */

#define PERR(...) oqc_err_node(d, g, node, __VA_ARGS__)

static inline int64_t prod(const OqcShape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->d[i];
    return p;
}

/* Reads input k's known values (constant or derived) as int64. */
static inline int values_of(const OqcGraph *g, int node, int k, int64_t *v, int max) {
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

static inline int fill_window(const OqcWindow *w, int64_t *in, int64_t *out, int64_t *kernel,
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

static inline int is_float(const OqcTensor *t) { return t->dtype == OQCF_FLOAT; }

/* The N x C x inner view of an NCHW-like shape (a, b, c) of per-plane kernels. */
static inline void nc_inner(ExecNode *x, const OqcShape *s) {
    x->a = s->d[0];
    x->b = s->d[1];
    x->c = prod(s, 2, s->rank);
}

/* When output tensor t is a view (a channel range of another tensor's buffer), sets
 * the kernel's output channel total and offset. */
static inline int set_out_view(const OqcGraph *g, int t, int64_t *ctotal, int64_t *coff, OqcDiag *d,
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

/* ------------------------------------------------------------------ shape helpers */

static inline void set_out(Ctx *c, int k, OqcfDType dt, const OqcShape *s) {
    OqcTensor *t = OUT(c, k);
    if (t && !t->is_const) {
        t->dtype = dt;
        t->shape = *s;
    }
}

static inline char *sstr(const OqcShape *s) {
    static char bufs[4][128];
    static int i;
    i = (i + 1) & 3;
    return oqc_shape_str(s, bufs[i], sizeof bufs[i]);
}

static inline int norm_axis(Ctx *c, int64_t axis, int rank, const char *what) {
    if (axis < -rank || axis >= rank)
        return ERR("%s %" PRId64 " is out of range for rank %d", what, axis, rank);
    return (int)(axis < 0 ? axis + rank : axis);
}

/* ------------------------------------------------------------- element-wise */

static inline int shape_same(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    set_out(c, 0, x->dtype, &x->shape);
    return 0;
}

/* Inputs 1 .. nin - 1 that are present have input 0's element type (the operator's one
 * type T in ONNX; the kernels read them all as that type). */
static inline int same_type(Ctx *c, int nin) {
    const OqcTensor *x0 = IN(c, 0);
    for (int k = 1; k < nin && k < c->n->nin; k++) {
        const OqcTensor *x = IN(c, k);
        if (x && x->dtype != x0->dtype)
            return ERR("input %d '%s' is %s but input 0 '%s' is %s (oqc's %s kernels take one "
                       "element type)",
                       k, x->name, oqc_dtype_name(x->dtype), x0->name,
                       oqc_dtype_name(x0->dtype), c->n->op_type);
    }
    return 0;
}

/* Axes of Squeeze/Unsqueeze: the input (opset >= 13) or the attribute. */
static inline int axes_arg(Ctx *c, int64_t *ax, int max) {
    if (c->n->opset >= 13) {
        if (!IN(c, 1))
            return -2; /* absent */
        int n = int_list(c, 1, ax, max);
        if (n == -1)
            return ERR("axes input '%s' must be a constant", IN(c, 1)->name);
        return n;
    }
    const int64_t *v;
    int n = oqc_attr_ints(c->n, "axes", &v);
    if (n < 0)
        return -2;
    if (n > max)
        return ERR("too many axes");
    memcpy(ax, v, (size_t)n * sizeof *ax);
    return n;
}

/* Input 1 of Tile/Expand, a constant list of at most OQC_MAX_RANK integers, into v:
 * its length, or -1 after an error naming it `what`. */
static inline int const_list_1(Ctx *c, int64_t *v, const char *what) {
    int n = IN(c, 1) ? int_list(c, 1, v, OQC_MAX_RANK) : -1;
    if (n < -1)
        return -1;
    if (n < 0)
        return ERR("%s must be a constant int64 input", what);
    return n;
}

/* The hooks of the families: oqc_prep_<op> prepares a node of that op (as
 * oqc_op_prepare), oqc_em_<kind> prints the kernel call of a node of that ExecKind
 * into b (as oqc_em_fp32). */
int oqc_prep_conv(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_conv_transpose(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_global_average_pool(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_batch_normalization(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_lrn(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_layer_normalization(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_instance_normalization(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_gemm(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_mat_mul(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_max_pool(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_reduce_max(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_arg_max(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_cast(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_shape(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_constant_of_shape(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_quantize_linear(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_relu(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_unary(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_clip(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_p_relu(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_pow(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_add(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_sum(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_softmax(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_tile(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_depth_to_space(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_resize(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_concat(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_split(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_slice(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_transpose(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_pad(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_gather(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_dropout(OqcExec *e, int node, OqcDiag *d);
int oqc_prep_identity(OqcExec *e, int node, OqcDiag *d);
void oqc_em_conv(Em *m, int node, FILE *b);
void oqc_em_conv_transpose(Em *m, int node, FILE *b);
void oqc_em_maxpool(Em *m, int node, FILE *b);
void oqc_em_avgpool(Em *m, int node, FILE *b);
void oqc_em_global_pool(Em *m, int node, FILE *b);
void oqc_em_batchnorm(Em *m, int node, FILE *b);
void oqc_em_lrn(Em *m, int node, FILE *b);
void oqc_em_layernorm(Em *m, int node, FILE *b);
void oqc_em_instancenorm(Em *m, int node, FILE *b);
void oqc_em_gemm(Em *m, int node, FILE *b);
void oqc_em_matmul(Em *m, int node, FILE *b);
void oqc_em_unary(Em *m, int node, FILE *b);
void oqc_em_clip(Em *m, int node, FILE *b);
void oqc_em_binary(Em *m, int node, FILE *b);
void oqc_em_pow_cast(Em *m, int node, FILE *b);
void oqc_em_sum(Em *m, int node, FILE *b);
void oqc_em_softmax(Em *m, int node, FILE *b);
void oqc_em_concat(Em *m, int node, FILE *b);
void oqc_em_split(Em *m, int node, FILE *b);
void oqc_em_slice(Em *m, int node, FILE *b);
void oqc_em_transpose(Em *m, int node, FILE *b);
void oqc_em_pad(Em *m, int node, FILE *b);
void oqc_em_gather(Em *m, int node, FILE *b);
void oqc_em_tile(Em *m, int node, FILE *b);
void oqc_em_space_depth(Em *m, int node, FILE *b);
void oqc_em_resize(Em *m, int node, FILE *b);
void oqc_em_reduce(Em *m, int node, FILE *b);
void oqc_em_argmax(Em *m, int node, FILE *b);
void oqc_em_cast(Em *m, int node, FILE *b);
void oqc_em_qdq(Em *m, int node, FILE *b);

/* The shape rules of the families (oqc_shape_fns indexes them). */
int oqc_rule_broadcast(Ctx *c);
int oqc_rule_prelu(Ctx *c);
int oqc_rule_pow(Ctx *c);
int oqc_rule_clip(Ctx *c);
int oqc_rule_conv(Ctx *c);
int oqc_rule_conv_transpose(Ctx *c);
int oqc_rule_pool(Ctx *c);
int oqc_rule_global_pool(Ctx *c);
int oqc_rule_batchnorm(Ctx *c);
int oqc_rule_layernorm(Ctx *c);
int oqc_rule_instancenorm(Ctx *c);
int oqc_rule_lrn(Ctx *c);
int oqc_rule_gemm(Ctx *c);
int oqc_rule_matmul(Ctx *c);
int oqc_rule_concat(Ctx *c);
int oqc_rule_split(Ctx *c);
int oqc_rule_slice(Ctx *c);
int oqc_rule_flatten(Ctx *c);
int oqc_rule_reshape(Ctx *c);
int oqc_rule_transpose(Ctx *c);
int oqc_rule_squeeze(Ctx *c);
int oqc_rule_unsqueeze(Ctx *c);
int oqc_rule_softmax(Ctx *c);
int oqc_rule_reduce(Ctx *c);
int oqc_rule_argmax(Ctx *c);
int oqc_rule_tile(Ctx *c);
int oqc_rule_expand(Ctx *c);
int oqc_rule_space_depth(Ctx *c);
int oqc_rule_resize(Ctx *c);
int oqc_rule_dropout(Ctx *c);
int oqc_rule_pad(Ctx *c);
int oqc_rule_shape(Ctx *c);
int oqc_rule_size(Ctx *c);
int oqc_rule_gather(Ctx *c);
int oqc_rule_cast(Ctx *c);
int oqc_rule_constant_of_shape(Ctx *c);
int oqc_rule_quantize(Ctx *c);
int oqc_rule_dequantize(Ctx *c);

#endif /* OQC_OPS_INT_H */
