/* export_qdq.c - `oqc export-qdq`: the model as ONNX with QuantizeLinear/DequantizeLinear
 * nodes that carry oqc's own INT8 quantization (see ir.h, banner export_qdq.c; user
 * guide docs/export-qdq.md).
 *
 * Two graphs of the same model come in:
 *   g   the graph to write: after the passes cleanup and fold-bn only, so Conv, Relu,
 *       Clip, Add and Concat are still plain ONNX nodes that ONNX Runtime's QDQ fusion
 *       recognises;
 *   gq  the same model after oqc's whole pipeline and pass "quantize": what oqc's INT8
 *       code computes.  Every decision is read from it, so the export cannot drift from
 *       oqc: which tensors are 8-bit (and at which scale and signedness: max pooling,
 *       clamps and views keep their input's scale, concat inputs take the buffer's
 *       scale, an Add whose Relu oqc folds has no 8-bit output of its own) and which
 *       Conv/Gemm/MatMul nodes run in INT8 (those get int8 weights).
 *
 * What is written, per 8-bit tensor X of gq that g also has:
 *     X -> QuantizeLinear(scale, zp) -> DequantizeLinear(scale, zp) -> readers of X
 *   uint8 always (ONNX Runtime's x86 QLinear kernels want u8 activations): zero point 0
 *   and scale T/255 for oqc's u8 tensors, zero point 128 and scale T/127 for its s8
 *   ones (q = x/scale + 128 lies in [1, 255]: oqc's s8 grid shifted by 128).
 * Per INT8 Conv/Gemm/MatMul:
 *   weights int8, per output channel, scale max|W[k]|/127 (1 for an all-zero channel;
 *   max|W[k]|/(2^(b-1) - 1) with --weight-bits b),
 *   rounded half away from zero, exactly as oqc_quant_build_conv (passes/quantize_conv.c),
 *   behind a DequantizeLinear with axis = the output-channel axis and int8 zero points 0;
 *   bias int32 = round(b[k] / (s_in * s_w[k])) (the very integers oqc adds to its
 *   accumulators) behind a DequantizeLinear at scale s_in * s_w[k]: ONNX Runtime fuses
 *   DQ -> Conv -> Q into QLinearConv only when every input of the Conv, the bias
 *   included, comes from a DequantizeLinear, and the bias one must read int32 (a float
 *   bias leaves the Conv in float).  Gemm's alpha and beta are folded in (as oqc does)
 *   and written as 1.
 *
 * The model is written with protobuf-c (structs in g's arena, raw_data pointing at the
 * IR's bytes, no copy) through a buffer that streams to a temporary file renamed into
 * place at the end; any error leaves no file.  Opset: at least 13 (per-axis
 * DequantizeLinear); a model at opset 11 or 12 is raised to 13 when its operators mean
 * the same there (Squeeze/Unsqueeze axes become inputs), otherwise an error. */
#include "backend.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "qdq_weights.h"

/* The export's state. */
typedef struct X {
    OqcGraph *g;              /* graph written (gains generated names as tensors) */
    const OqcGraph *gq;       /* the INT8 lowering: quantization decisions */
    OqcDiag *d;               /* errors */
    OqcArena *a;              /* g's arena: every proto struct lives there */
    int nt;                   /* g's tensor count before generated names */
    const OqcQuant **aq;      /* per tensor of g: its 8-bit quant in gq, or NULL */
    const char **rd;          /* per tensor: the name its readers use (DQ output) */
    const char **wr;          /* per tensor: the name its producer writes */
    unsigned char *used;      /* per tensor: a constant some written node reads */
    int64_t opset;            /* default-domain opset written */
    int bump;                 /* 1: raised from 11/12 to 13 (convert Squeeze/Unsqueeze) */
    Onnx__NodeProto **nodes;  /* nodes written, in order */
    size_t nnodes, capnodes;
    Onnx__TensorProto **inits; /* initializers written */
    size_t ninits, capinits;
    int wu8;                  /* weights as uint8 with zero point 128 (else int8, 0) */
    OqcQdqStats *st;          /* statistics */
} X;

/* ------------------------------------------------------------------ small helpers */

static void *grow(X *x, void *p, size_t *cap, size_t n, size_t el) {
    if (n < *cap)
        return p;
    size_t nc = *cap ? 2 * *cap : 64;
    p = oqc_arena_grow(x->a, p, *cap, nc, el);
    *cap = nc;
    return p;
}

/* A tensor name not used in g yet, reserved by adding it (base, base_1, base_2, ...). */
static const char *fresh(X *x, const char *base) {
    const char *nm = base;
    for (int i = 1; oqc_tensor_find(x->g, nm) >= 0; i++)
        nm = oqc_arena_printf(x->a, "%s_%d", base, i);
    oqc_tensor_add(x->g, nm);
    return x->g->tensors[oqc_tensor_find(x->g, nm)].name;
}

static int is_q8(OqcfDType t) { return t == OQCF_INT8 || t == OQCF_UINT8; }

/* An 8-bit tensor of gq, or (acc) also an accumulator tensor (int32: see docs/int8.md). */
static int in_int8(const OqcTensor *t, int acc) {
    return is_q8(t->dtype) || (acc && t->acc);
}

/* The INT8-domain tensor of gq standing for g's tensor `name`: NAME itself, or NAME.q8 (a
 * float tensor quantized for INT8 readers, or a graph output renamed by the quantize
 * pass); 8-bit only, or with acc also accumulators; -1 when oqc keeps it float. */
static int gq_find(const OqcGraph *gq, const char *name, int acc) {
    int t = oqc_tensor_find(gq, name);
    if (t >= 0 && in_int8(&gq->tensors[t], acc))
        return t;
    size_t n = strlen(name);
    char *nm = malloc(n + 4);
    if (!nm)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    memcpy(nm, name, n);
    memcpy(nm + n, ".q8", 4);
    t = oqc_tensor_find(gq, nm);
    free(nm);
    return t >= 0 && in_int8(&gq->tensors[t], acc) ? t : -1;
}

/* The 8-bit tensor of gq for `name` (those get a Q/DQ pair), or -1. */
static int gq_q8(const OqcGraph *gq, const char *name) {
    return gq_find(gq, name, 0);
}

static const OqcQuant *quant_ok(const OqcQuant *q) {
    return q->valid && q->scale > 0 && isfinite(q->scale) ? q : NULL;
}

/* --------------------------------------------------------------- proto builders */

static Onnx__TensorProto *tensor_proto(X *x, const char *name, OqcfDType dt,
                                       const OqcShape *s, const void *data, size_t nbytes) {
    Onnx__TensorProto *tp = oqc_arena_alloc(x->a, sizeof *tp);
    onnx__tensor_proto__init(tp);
    tp->name = (char *)name;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)dt;
    tp->n_dims = (size_t)s->rank;
    tp->dims = oqc_arena_alloc(x->a, (size_t)(s->rank + 1) * sizeof *tp->dims);
    for (int i = 0; i < s->rank; i++)
        tp->dims[i] = s->d[i];
    if (dt == OQCF_STRING) {
        int64_t n = oqc_shape_numel(s);
        char *const *str = data;
        tp->n_string_data = (size_t)n;
        tp->string_data = oqc_arena_alloc(x->a, (size_t)(n + 1) * sizeof *tp->string_data);
        for (int64_t i = 0; i < n; i++) {
            tp->string_data[i].data = (uint8_t *)str[i];
            tp->string_data[i].len = str[i] ? strlen(str[i]) : 0;
        }
        return tp;
    }
    tp->has_raw_data = 1;
    tp->raw_data.data = (uint8_t *)data;
    tp->raw_data.len = nbytes;
    return tp;
}

static void add_init(X *x, Onnx__TensorProto *tp) {
    x->inits = grow(x, x->inits, &x->capinits, x->ninits, sizeof *x->inits);
    x->inits[x->ninits++] = tp;
}

/* A new initializer of n elements of dt (1-D [n], or a scalar when n < 0). */
static const char *new_init(X *x, const char *base, OqcfDType dt, int64_t n, const void *data) {
    OqcShape s;
    memset(&s, 0, sizeof s);
    s.rank = n < 0 ? 0 : 1;
    s.d[0] = n;
    size_t nb = (size_t)(n < 0 ? 1 : n) * oqcf_dtype_size(dt);
    const char *nm = fresh(x, base);
    add_init(x, tensor_proto(x, nm, dt, &s, data, nb));
    return nm;
}

static Onnx__AttributeProto *attr_int(X *x, const char *name, int64_t v) {
    Onnx__AttributeProto *p = oqc_arena_alloc(x->a, sizeof *p);
    onnx__attribute_proto__init(p);
    p->name = (char *)name;
    p->has_type = 1;
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    p->has_i = 1;
    p->i = v;
    return p;
}

static Onnx__AttributeProto *attr_float(X *x, const char *name, float v) {
    Onnx__AttributeProto *p = oqc_arena_alloc(x->a, sizeof *p);
    onnx__attribute_proto__init(p);
    p->name = (char *)name;
    p->has_type = 1;
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    p->has_f = 1;
    p->f = v;
    return p;
}

/* An IR attribute as a proto; NULL with an error for the kinds oqc keeps only as a
 * summary (graphs, sparse tensors, type protos). */
static Onnx__AttributeProto *attr_proto(X *x, int node, const OqcAttr *at) {
    Onnx__AttributeProto *p = oqc_arena_alloc(x->a, sizeof *p);
    onnx__attribute_proto__init(p);
    p->name = (char *)at->name;
    p->has_type = 1;
    p->type = (Onnx__AttributeProto__AttributeType)at->type;
    switch (at->type) {
    case OQC_ATTR_FLOAT:
        p->has_f = 1;
        p->f = at->f;
        return p;
    case OQC_ATTR_INT:
        p->has_i = 1;
        p->i = at->i;
        return p;
    case OQC_ATTR_STRING:
        p->has_s = 1;
        p->s.data = (uint8_t *)at->s;
        p->s.len = at->slen;
        return p;
    case OQC_ATTR_FLOATS:
        p->n_floats = (size_t)at->n;
        p->floats = at->floats;
        return p;
    case OQC_ATTR_INTS:
        p->n_ints = (size_t)at->n;
        p->ints = at->ints;
        return p;
    case OQC_ATTR_STRINGS:
        p->n_strings = (size_t)at->n;
        p->strings = oqc_arena_alloc(x->a, (size_t)(at->n + 1) * sizeof *p->strings);
        for (int i = 0; i < at->n; i++) {
            p->strings[i].data = (uint8_t *)at->strings[i];
            p->strings[i].len = strlen(at->strings[i]);
        }
        return p;
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS: {
        Onnx__TensorProto **ts = oqc_arena_alloc(x->a, (size_t)(at->n + 1) * sizeof *ts);
        for (int i = 0; i < at->n; i++)
            ts[i] = tensor_proto(x, NULL, at->tensors[i].dtype, &at->tensors[i].shape,
                                 at->tensors[i].data, at->tensors[i].nbytes);
        if (at->type == OQC_ATTR_TENSOR) {
            p->t = at->n > 0 ? ts[0] : NULL;
        } else {
            p->n_tensors = (size_t)at->n;
            p->tensors = ts;
        }
        return p;
    }
    default:
        oqc_err_node(x->d, x->g, node, "attribute '%s' of type %s cannot be exported "
                                       "(oqc keeps only a summary of it)",
                     at->name, oqc_attr_type_name(at->type));
        return NULL;
    }
}

static Onnx__NodeProto *node_proto(X *x, const char *op, const char *domain, const char *name,
                                   int nin, const char *const *in, int nout,
                                   const char *const *out) {
    Onnx__NodeProto *p = oqc_arena_alloc(x->a, sizeof *p);
    onnx__node_proto__init(p);
    p->op_type = (char *)op;
    p->domain = domain && *domain ? (char *)domain : NULL;
    p->name = (char *)name;
    p->n_input = (size_t)nin;
    p->input = oqc_arena_alloc(x->a, (size_t)(nin + 1) * sizeof *p->input);
    for (int i = 0; i < nin; i++)
        p->input[i] = (char *)in[i];
    p->n_output = (size_t)nout;
    p->output = oqc_arena_alloc(x->a, (size_t)(nout + 1) * sizeof *p->output);
    for (int i = 0; i < nout; i++)
        p->output[i] = (char *)out[i];
    x->nodes = grow(x, x->nodes, &x->capnodes, x->nnodes, sizeof *x->nodes);
    x->nodes[x->nnodes++] = p;
    return p;
}

static void node_attrs(Onnx__NodeProto *p, Onnx__AttributeProto **at, int n) {
    p->n_attribute = (size_t)n;
    p->attribute = at;
}

static Onnx__ValueInfoProto *value_info(X *x, int t) {
    const OqcTensor *tt = &x->g->tensors[t];
    Onnx__TensorShapeProto *sh = oqc_arena_alloc(x->a, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)(tt->shape.rank > 0 ? tt->shape.rank : 0);
    sh->dim = oqc_arena_alloc(x->a, (sh->n_dim + 1) * sizeof *sh->dim);
    for (size_t i = 0; i < sh->n_dim; i++) {
        Onnx__TensorShapeProto__Dimension *dm = oqc_arena_alloc(x->a, sizeof *dm);
        onnx__tensor_shape_proto__dimension__init(dm);
        if (tt->shape.d[i] >= 0) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = tt->shape.d[i];
        }
        sh->dim[i] = dm;
    }
    Onnx__TypeProto__Tensor *tt_ = oqc_arena_alloc(x->a, sizeof *tt_);
    onnx__type_proto__tensor__init(tt_);
    tt_->has_elem_type = 1;
    tt_->elem_type = (int32_t)tt->dtype;
    tt_->shape = tt->shape.rank >= 0 ? sh : NULL;
    Onnx__TypeProto *ty = oqc_arena_alloc(x->a, sizeof *ty);
    onnx__type_proto__init(ty);
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt_;
    Onnx__ValueInfoProto *v = oqc_arena_alloc(x->a, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)tt->name;
    v->type = ty;
    return v;
}

/* ---------------------------------------------------------------- quantization */

/* Activation Q -> DQ pair for tensor t (its producer writes x->wr[t]); one scale and
 * zero point per channel (axis 1) when oqc runs t at channel scales. */
static void emit_qdq(X *x, int t) {
    const OqcQuant *q = x->aq[t];
    const char *nm = x->g->tensors[t].name;
    int64_t n = q->ch_scale ? q->nch : 1;
    uint8_t *zp = oqc_arena_alloc(x->a, (size_t)n);
    float *sc = oqc_arena_alloc(x->a, (size_t)n * sizeof *sc);
    memset(zp, q->is_unsigned ? 0 : 128, (size_t)n);
    for (int64_t c = 0; c < n; c++)
        sc[c] = q->ch_scale ? q->ch_scale[c] : q->scale;
    const char *s = new_init(x, oqc_arena_printf(x->a, "%s_scale", nm), OQCF_FLOAT,
                             q->ch_scale ? n : -1, sc);
    const char *z = new_init(x, oqc_arena_printf(x->a, "%s_zero_point", nm), OQCF_UINT8,
                             q->ch_scale ? n : -1, zp);
    const char *qo = fresh(x, oqc_arena_printf(x->a, "%s_QuantizeLinear_Output", nm));
    const char *qin[3] = {x->wr[t], s, z};
    Onnx__NodeProto *qp = node_proto(x, "QuantizeLinear", "",
                                     oqc_arena_printf(x->a, "%s_QuantizeLinear", nm), 3, qin, 1,
                                     &qo);
    const char *dqin[3] = {qo, s, z};
    Onnx__NodeProto *dp = node_proto(x, "DequantizeLinear", "",
                                     oqc_arena_printf(x->a, "%s_DequantizeLinear", nm), 3, dqin,
                                     1, &x->rd[t]);
    if (q->ch_scale) {
        Onnx__AttributeProto **at = oqc_arena_alloc(x->a, 2 * sizeof *at);
        at[0] = attr_int(x, "axis", 1);
        at[1] = attr_int(x, "axis", 1);
        node_attrs(qp, at, 1);
        node_attrs(dp, at + 1, 1);
    }
    x->st->nact++;
    x->st->nact_zp0 += q->is_unsigned;
}

/* The float constant of input k of node n, or NULL. */
static const OqcTensor *const_f32(const X *x, const OqcNode *n, int k) {
    if (k >= n->nin || n->in[k] < 0)
        return NULL;
    const OqcTensor *t = &x->g->tensors[n->in[k]];
    return t->is_const && t->data && t->dtype == OQCF_FLOAT ? t : NULL;
}

/* Whether oqc runs Conv/Gemm/MatMul `node` of g in INT8: the gq node that writes its
 * output (8-bit, or its accumulators; or, when fuse-cbr absorbed the Relu/Clip that is
 * its only reader, the activation's output) is an INT8 conv of the same op. */
static int runs_int8(const X *x, int node) {
    const OqcGraph *g = x->g, *gq = x->gq;
    const OqcNode *n = &g->nodes[node];
    int y = n->out[0];
    if (y < 0 || n->nout != 1)
        return 0;
    int t = gq_find(gq, g->tensors[y].name, 1);
    if (t < 0 && g->tensors[y].nconsumers == 1 && !g->tensors[y].is_output) {
        const OqcNode *c = &g->nodes[g->tensors[y].consumers[0]];
        if ((c->op == OQC_OP_Relu || c->op == OQC_OP_Clip) && c->nout >= 1 && c->out[0] >= 0)
            t = gq_find(gq, g->tensors[c->out[0]].name, 1);
    }
    if (t < 0 || gq->tensors[t].producer < 0)
        return 0;
    const OqcNode *p = &gq->nodes[gq->tensors[t].producer];
    return p->q && p->q->kind == OQC_Q_CONV && p->op == n->op;
}

/* A DequantizeLinear of the initializers qn, sn, zn along axis; the name of its output. */
static const char *dq_node(X *x, const char *qn, const char *sn, const char *zn, int64_t axis) {
    const char *out = fresh(x, oqc_arena_printf(x->a, "%s_DequantizeLinear_Output", qn));
    const char *in[3] = {qn, sn, zn};
    Onnx__NodeProto *p = node_proto(x, "DequantizeLinear", "",
                                    oqc_arena_printf(x->a, "%s_DequantizeLinear", qn), 3, in,
                                    1, &out);
    Onnx__AttributeProto **at = oqc_arena_alloc(x->a, sizeof *at);
    at[0] = attr_int(x, "axis", axis);
    node_attrs(p, at, 1);
    return out;
}

/* int8 weights and int32 bias of an INT8 Conv/Gemm/MatMul behind DequantizeLinear nodes;
 * in[1] and in[2] receive the names the node reads.  Gemm: alpha is folded into the
 * weights and beta into the bias, and *folded is set (write them as 1).  0, or -1 with
 * an error; 1 when the weights stay float after all (-v says why). */
static int emit_weights(X *x, int node, const char **in, int *folded) {
    OqcGraph *g = x->g;
    const OqcNode *n = &g->nodes[node];
    const OqcTensor *wt = const_f32(x, n, 1);
    const OqcTensor *bt = const_f32(x, n, 2);
    const OqcQuant *qx = n->in[0] >= 0 ? x->aq[n->in[0]] : NULL;
    if (!wt || !qx || (n->nin > 2 && n->in[2] >= 0 && !bt)) {
        oqc_info(x->d, "export-qdq: '%s' (%s) keeps float weights: %s", n->name, n->op_type,
                 !wt ? "they are not a float constant" : !qx ? "its input is not 8-bit"
                                                         : "its bias is not a float constant");
        return 1;
    }
    const OqcShape *ws = &wt->shape;
    WLayout l = oqc_qdq_weight_layout(n, ws);
    int64_t K = l.K, C = l.C;
    if (ws->rank < 2 || K <= 0) {
        oqc_info(x->d, "export-qdq: '%s' (%s) keeps float weights: unexpected weight shape",
                 n->name, n->op_type);
        return 1;
    }
    int8_t *wq = oqc_arena_alloc(x->a, (size_t)(K * C) + 1);
    float *sw = oqc_arena_alloc(x->a, (size_t)K * sizeof *sw);
    uint8_t *wz = oqc_arena_alloc(x->a, (size_t)K + 1);
    if (oqc_qdq_quantize_weights(g, node, oqc_weight_qmax(x->gq->qcfg), wt->data, &l, wq, sw,
                                 x->d) < 0)
        return -1;
    int32_t *bq = NULL, *bz = NULL;
    float *bs = NULL;
    if (bt) {
        bq = oqc_arena_alloc(x->a, (size_t)K * sizeof *bq);
        bs = oqc_arena_alloc(x->a, (size_t)K * sizeof *bs);
        bz = oqc_arena_alloc(x->a, (size_t)K * sizeof *bz);
        int r = oqc_qdq_quantize_bias(g, node, bt, qx->scale, qx->ch_scale, sw, &l, bq, bs,
                                      x->d);
        if (r != 0)
            return r;
    }
    /* weights: int8 initializer of W's shape, per-channel scale and zero point 0; or the
     * same integers + 128 as uint8 with zero point 128 (--weight-type uint8) */
    OqcfDType wt8 = x->wu8 ? OQCF_UINT8 : OQCF_INT8;
    if (x->wu8) {
        for (int64_t i = 0; i < K * C; i++)
            ((uint8_t *)wq)[i] = (uint8_t)(wq[i] + 128);
        memset(wz, 128, (size_t)K);
    }
    const char *wn = wt->name;
    const char *wqn = fresh(x, oqc_arena_printf(x->a, "%s_quantized", wn));
    add_init(x, tensor_proto(x, wqn, wt8, ws, wq, (size_t)(K * C)));
    const char *wsn = new_init(x, oqc_arena_printf(x->a, "%s_scale", wn), OQCF_FLOAT, K, sw);
    const char *wzn = new_init(x, oqc_arena_printf(x->a, "%s_zero_point", wn), wt8, K, wz);
    in[1] = dq_node(x, wqn, wsn, wzn, l.axis);
    x->st->nweights++;
    if (bt) {
        const char *bn = bt->name;
        const char *bqn = fresh(x, oqc_arena_printf(x->a, "%s_quantized", bn));
        const char *bsn = new_init(x, oqc_arena_printf(x->a, "%s_scale", bqn), OQCF_FLOAT, K, bs);
        const char *bzn = new_init(x, oqc_arena_printf(x->a, "%s_zero_point", bqn), OQCF_INT32,
                                   K, bz);
        add_init(x, tensor_proto(x, bqn, OQCF_INT32,
                                 &(OqcShape){.rank = 1, .d = {K}}, bq, (size_t)K * 4));
        in[2] = dq_node(x, bqn, bsn, bzn, 0);
        x->st->nbias++;
    }
    *folded = n->op == OQC_OP_Gemm;
    return 0;
}

/* --------------------------------------------------------------------- opsets */

/* Operators whose opset-11/12 definition means the same at opset 13 (for the float
 * types oqc handles); Squeeze/Unsqueeze are converted, Softmax-likes checked. */
static int same_at_13(const char *op) {
    static const char *const ok[] = {
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
        "GlobalMaxPool", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Add", "Sub",
        "Mul", "Div", "Sum", "Concat", "Flatten", "Reshape", "Gemm", "MatMul",
        "BatchNormalization", "Transpose", "Identity", "Clip", "Pad", "Gather", "Slice",
        "Cast", "LRN", "Shape", "QuantizeLinear", "DequantizeLinear", "ConstantOfShape",
        "Squeeze", "Unsqueeze", "Softmax", "LogSoftmax", NULL};
    for (int i = 0; ok[i]; i++)
        if (!strcmp(ok[i], op))
            return 1;
    return 0;
}

static int check_opset(X *x) {
    OqcGraph *g = x->g;
    int64_t v = -1;
    for (int i = 0; i < g->nopsets; i++)
        if (!g->opsets[i].domain[0] || !strcmp(g->opsets[i].domain, "ai.onnx"))
            v = g->opsets[i].version;
    if (v >= 13) {
        x->opset = v;
        return 0;
    }
    if (v >= 0 && v < 11)
        return oqc_err(x->d, "%s: opset %lld: export-qdq writes opset 13 (per-axis "
                             "DequantizeLinear) and converts only from opset 11 or newer; "
                             "export the model again with opset >= 13", g->path, (long long)v);
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
            continue;
        if (!same_at_13(n->op_type))
            return oqc_err_node(x->d, g, i, "the model has opset %lld and this operator "
                                            "changed by opset 13 (which export-qdq writes); "
                                            "export the model again with opset >= 13",
                                (long long)v);
        if (!strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "LogSoftmax")) {
            int r = g->tensors[n->in[0]].shape.rank;
            int64_t ax = oqc_attr_int(n, "axis", 1);
            if (ax < 0)
                ax += r;
            if (ax != r - 1)
                return oqc_err_node(x->d, g, i, "opset %lld %s over axis %lld of a rank-%d "
                                                "input means something else at opset 13; "
                                                "export the model again with opset >= 13",
                                    (long long)v, n->op_type, (long long)ax, r);
        }
    }
    x->opset = 13;
    x->bump = 1;
    return 0;
}

/* ------------------------------------------------------------------- writing */

/* A protobuf-c output buffer that streams into a FILE. */
typedef struct FileBuf {
    ProtobufCBuffer base;
    FILE *f;
    int err;           /* errno of the first failed write, 0 if none */
    int64_t bytes;     /* bytes written */
} FileBuf;

static void filebuf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
    FileBuf *fb = (FileBuf *)b;
    if (fb->err || !len)
        return;
    if (fwrite(data, 1, len, fb->f) != len)
        fb->err = errno ? errno : EIO;
    fb->bytes += (int64_t)len;
}

static int write_model(X *x, const char *path, Onnx__ModelProto *m) {
    OqcOutFile of;   /* completely or not at all; a device is written directly */
    if (oqc_out_open(&of, path, x->d) < 0)
        return -1;
    FileBuf fb = {.base = {.append = filebuf_append}, .f = of.f};
    onnx__model_proto__pack_to_buffer(m, &fb.base);
    if (fb.err)
        oqc_err(x->d, "%s: error writing: %s", path, strerror(fb.err));
    int rc = oqc_out_commit(&of, !fb.err, x->d);
    x->st->bytes = fb.bytes;
    return rc;
}

/* ----------------------------------------------------------------- the export */

/* Which tensors of g get a Q/DQ pair: every tensor oqc's INT8 graph holds in 8 bits
 * (x->aq); errors for a graph export-qdq cannot write. */
static int find_activations(X *x) {
    OqcGraph *g = x->g;
    const OqcGraph *gq = x->gq;
    /* What passes other than cleanup and fold-bn add has no ONNX form. */
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        if (n->act.kind != OQCF_ACT_NONE || n->act_per_channel || n->out_channels || n->q)
            return oqc_err_node(x->d, g, i, "internal: export-qdq needs the graph after "
                                            "cleanup and fold-bn only (this node has a fused "
                                            "activation, merged outputs or INT8 parameters)");
    }
    for (int t = 0; t < x->nt; t++) {
        OqcTensor *tt = &g->tensors[t];
        x->rd[t] = x->wr[t] = tt->name;
        if (tt->view_base >= 0)
            return oqc_err(x->d, "internal: export-qdq: tensor '%s' is a concat view", tt->name);
        if (tt->is_const && !tt->data && tt->dtype != OQCF_UNDEFINED)
            return oqc_err(x->d, "%s: constant '%s' has no data (an XML dump loaded without "
                                 "its .data file?)", g->path, tt->name);
        if (tt->is_const || tt->has_value || tt->dtype != OQCF_FLOAT ||
            (tt->nconsumers == 0 && !tt->is_output))
            continue;
        int q = gq_q8(gq, tt->name);
        if (q >= 0)
            x->aq[t] = quant_ok(&gq->tensors[q].quant);
        if (!x->aq[t]) {
            int f = oqc_tensor_find(gq, tt->name);
            if (f >= 0 && quant_ok(&gq->tensors[f].quant)) {
                x->st->nunused++;
                oqc_info(x->d, "export-qdq: '%s' stays float: oqc's INT8 code does not hold "
                               "it in 8 bits", tt->name);
            }
        }
    }
    /* Names: a quantized graph output keeps its name on the DequantizeLinear output; its
     * producer writes NAME_QuantizeLinear_Input. */
    for (int t = 0; t < x->nt; t++) {
        if (!x->aq[t])
            continue;
        const char *nm = g->tensors[t].name;
        if (g->tensors[t].is_output && !g->tensors[t].is_input)
            x->wr[t] = fresh(x, oqc_arena_printf(x->a, "%s_QuantizeLinear_Input", nm));
        else
            x->rd[t] = fresh(x, oqc_arena_printf(x->a, "%s_DequantizeLinear_Output", nm));
    }
    return 0;
}

/* The attributes node i is written with into at (*na of them); Gemm with folded
 * alpha/beta writes them as 1; raised from opset 11/12, Squeeze/Unsqueeze axes become
 * the input in[*nin] and Softmax-likes get their axis explicitly.  -1 with an error. */
static int node_attributes(X *x, int i, int folded, const char **in, int *nin,
                           Onnx__AttributeProto **at, int *na) {
    const OqcGraph *g = x->g;
    const OqcNode *n = &g->nodes[i];
    int squeeze_axes = x->bump && (n->op == OQC_OP_Squeeze || n->op == OQC_OP_Unsqueeze) &&
                       (!n->domain[0] || !strcmp(n->domain, "ai.onnx"));
    *na = 0;
    for (int k = 0; k < n->nattr; k++) {
        const OqcAttr *a = &n->attr[k];
        if (folded && (!strcmp(a->name, "alpha") || !strcmp(a->name, "beta")))
            continue;
        if (squeeze_axes && !strcmp(a->name, "axes") && a->type == OQC_ATTR_INTS) {
            /* opset 13: the axes are an int64 input */
            in[(*nin)++] = new_init(x, oqc_arena_printf(x->a, "%s_axes", n->name), OQCF_INT64,
                                    a->n, a->ints);
            continue;
        }
        if (!(at[*na] = attr_proto(x, i, a)))
            return -1;
        (*na)++;
    }
    if (folded) {
        at[(*na)++] = attr_float(x, "alpha", 1.0f);
        at[(*na)++] = attr_float(x, "beta", 1.0f);
    }
    if (x->bump && (!strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "LogSoftmax")) &&
        !oqc_attr_find(n, "axis"))
        at[(*na)++] = attr_int(x, "axis", g->tensors[n->in[0]].shape.rank - 1);
    return 0;
}

/* Writes node i: its quantized weights when oqc runs it in INT8, the node reading the
 * DequantizeLinear outputs, and the Q/DQ pairs of its 8-bit outputs. */
static int write_node(X *x, int i) {
    const OqcGraph *g = x->g;
    const OqcNode *n = &g->nodes[i];
    const char **in = oqc_arena_alloc(x->a, (size_t)(n->nin + 2) * sizeof *in);
    const char **out = oqc_arena_alloc(x->a, (size_t)(n->nout + 1) * sizeof *out);
    int nin = n->nin, folded = 0, wq = 0;
    if ((n->op == OQC_OP_Conv || n->op == OQC_OP_Gemm || n->op == OQC_OP_MatMul) &&
        runs_int8(x, i)) {
        int r = emit_weights(x, i, in, &folded);
        if (r < 0)
            return -1;
        wq = r == 0;
    }
    for (int k = 0; k < n->nin; k++) {
        int t = n->in[k];
        if (wq && (k == 1 || (k == 2 && in[2])))
            continue;
        if (t < 0) {
            in[k] = "";
            continue;
        }
        in[k] = x->rd[t];
        x->used[t] |= g->tensors[t].is_const;
    }
    for (int k = 0; k < n->nout; k++)
        out[k] = n->out[k] >= 0 ? x->wr[n->out[k]] : "";
    int na = 0;
    Onnx__AttributeProto **at = oqc_arena_alloc(x->a, (size_t)(n->nattr + 3) * sizeof *at);
    if (node_attributes(x, i, folded, in, &nin, at, &na) < 0)
        return -1;
    Onnx__NodeProto *p = node_proto(x, n->op_type, n->domain, n->name, nin, in, n->nout, out);
    node_attrs(p, at, na);
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && x->aq[n->out[k]])
            emit_qdq(x, n->out[k]);
    return 0;
}

/* The graph's initializers: the constants what was written reads (and constant graph
 * outputs), then those the export added; *n receives their count. */
static Onnx__TensorProto **initializers(X *x, size_t *n) {
    const OqcGraph *g = x->g;
    for (int i = 0; i < g->noutputs; i++)
        x->used[g->outputs[i]] |= g->tensors[g->outputs[i]].is_const;
    Onnx__TensorProto **orig = oqc_arena_alloc(x->a, (size_t)(x->nt + 1) * sizeof *orig);
    size_t norig = 0;
    for (int t = 0; t < x->nt; t++)
        if (x->used[t]) {
            const OqcTensor *tt = &g->tensors[t];
            orig[norig++] = tensor_proto(x, tt->name, tt->dtype, &tt->shape, tt->data,
                                         tt->nbytes);
        }
    Onnx__TensorProto **inits = oqc_arena_alloc(x->a, (norig + x->ninits + 1) * sizeof *inits);
    memcpy(inits, orig, norig * sizeof *inits);
    if (x->ninits) /* x->inits is NULL for a model without weights */
        memcpy(inits + norig, x->inits, x->ninits * sizeof *inits);
    *n = norig + x->ninits;
    return inits;
}

/* The graph proto: the nodes written, the initializers, inputs and outputs. */
static Onnx__GraphProto *graph_proto(X *x) {
    const OqcGraph *g = x->g;
    Onnx__GraphProto *gp = oqc_arena_alloc(x->a, sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = (char *)(g->name && g->name[0] ? g->name : "oqc_export_qdq");
    gp->n_node = x->nnodes;
    gp->node = x->nodes;
    gp->initializer = initializers(x, &gp->n_initializer);
    gp->n_input = (size_t)g->ninputs;
    gp->input = oqc_arena_alloc(x->a, (size_t)(g->ninputs + 1) * sizeof *gp->input);
    for (int i = 0; i < g->ninputs; i++)
        gp->input[i] = value_info(x, g->inputs[i]);
    gp->n_output = (size_t)g->noutputs;
    gp->output = oqc_arena_alloc(x->a, (size_t)(g->noutputs + 1) * sizeof *gp->output);
    for (int i = 0; i < g->noutputs; i++)
        gp->output[i] = value_info(x, g->outputs[i]);
    gp->doc_string = "QuantizeLinear/DequantizeLinear written by oqc export-qdq: oqc's INT8 "
                     "quantization (per-channel int8 weights, int32 biases, u8 activations "
                     "with zero point 0 (scale T/255) or 128 (scale T/127))";
    return gp;
}

/* One opset import of m. */
static void add_opset(X *x, Onnx__ModelProto *m, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = oqc_arena_alloc(x->a, sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = (char *)domain;
    o->has_version = 1;
    o->version = version;
    m->opset_import[m->n_opset_import++] = o;
}

/* m's opset imports: the model's, the default domain at x->opset (added when absent). */
static void model_opsets(X *x, Onnx__ModelProto *m) {
    const OqcGraph *g = x->g;
    int nops = g->nopsets;
    m->opset_import = oqc_arena_alloc(x->a, (size_t)(nops + 2) * sizeof *m->opset_import);
    int have_default = 0;
    for (int i = 0; i < nops; i++) {
        int def = !g->opsets[i].domain[0] || !strcmp(g->opsets[i].domain, "ai.onnx");
        add_opset(x, m, g->opsets[i].domain, def ? x->opset : g->opsets[i].version);
        have_default |= def;
    }
    if (!have_default)
        add_opset(x, m, "", 13);
}

int oqc_export_qdq(OqcGraph *g, const OqcGraph *gq, const OqcQdqOptions *opt,
                   OqcQdqStats *st, OqcDiag *d) {
    OqcQdqStats dummy;
    X x;
    memset(&x, 0, sizeof x);
    x.g = g;
    x.gq = gq;
    x.d = d;
    x.a = g->arena;
    x.st = st ? st : &dummy;
    x.wu8 = opt->weight_uint8;
    memset(x.st, 0, sizeof *x.st);
    int nt = x.nt = g->ntensors;
    if (check_opset(&x) < 0)
        return -1;
    x.aq = oqc_arena_alloc(x.a, (size_t)(nt + 1) * sizeof *x.aq);
    x.rd = oqc_arena_alloc(x.a, (size_t)(nt + 1) * sizeof *x.rd);
    x.wr = oqc_arena_alloc(x.a, (size_t)(nt + 1) * sizeof *x.wr);
    x.used = oqc_arena_alloc(x.a, (size_t)nt + 1);
    if (find_activations(&x) < 0)
        return -1;
    for (int i = 0; i < g->ninputs; i++)
        if (x.aq[g->inputs[i]])
            emit_qdq(&x, g->inputs[i]);
    for (int i = 0; i < g->nnodes; i++)
        if (write_node(&x, i) < 0)
            return -1;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = g->ir_version > 7 ? g->ir_version : 7;
    m.producer_name = "oqc";
    m.producer_version = (char *)oqc_version();
    m.graph = graph_proto(&x);
    model_opsets(&x, &m);
    return write_model(&x, opt->path, &m);
}
