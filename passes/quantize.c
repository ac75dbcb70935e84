/* quantize.c - pass "quantize": lowers a calibrated graph to INT8 (contract:
 * docs/calibration.md; user guide: docs/int8.md).
 *
 * Runs only when the driver set g->qcfg and the tensors' quant from a calibration or a
 * table (oqc_quant_apply); otherwise it changes nothing.  It
 *   1. decides per node INT8 or float: Conv (2-D, constant weights, fused Relu/Clip),
 *      Gemm/MatMul with constant weights, MaxPool, AveragePool, GlobalAveragePool,
 *      Add/Sum of same-shape inputs, Relu/Clip, and view ops (Flatten, Reshape, ...)
 *      whose input is INT8.  Everything else, nodes named in --fp32-nodes and nodes
 *      whose tensors lack a calibration stay float, with a -v line saying why;
 *   2. gives every INT8 tensor its storage type and scale: s8 (T/127) or u8 (T/255) as
 *      calibrated; max pooling, clamps and views keep their input's scale (they only
 *      move or clamp values); the producers writing into one concat buffer all use the
 *      buffer's scale, so the concat stays free (a max pool writing there requantizes);
 *   3. computes each INT8 node's kernel parameters (runtime/oqci.h): per output channel
 *      weight scales max|W[k]|/127 (no saturation; an all-zero channel gets scale 1;
 *      /63 and so on with cfg->weight_bits 7 or fewer, then every conv has wpair16),
 *      int8 weights packed with the depth padded to a multiple of 4, int32 biases at
 *      scale s_in*s_w[k], requantization multipliers (float32 M, or int32 m and shift
 *      in fixed mode), and output clamps that hold the fused activation;
 *   4. inserts QuantizeLinear/DequantizeLinear nodes (with OqcNode.q set: oqc's own
 *      symmetric round-half-away kernels, not ONNX's) where INT8 and float meet, and at
 *      graph inputs and outputs: the model keeps its float interface.
 * A Relu/Clip that follows an INT8 Add is folded into the Add's clamp first.
 *
 * Overflow: an int32 accumulator holds at most kdim * 255 * 127 plus the bias; the
 * kernels sum depths above OQCI_KCHUNK in int64 and saturate to int32 before
 * requantizing.  Saturation is exact when the requantized result would be clamped
 * anyway, i.e. when 2^31 * M >= 255 for every channel; a node where neither holds stays
 * float (-v says so). */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The reason a node stays float, into why (OQC_WHY_SIZE bytes); as 0 or -1. */
#define WHY(...) (snprintf(why, OQC_WHY_SIZE, __VA_ARGS__), 0)
#define FAIL(...) (snprintf(why, OQC_WHY_SIZE, __VA_ARGS__), -1)

/* The pass's state. */
typedef struct Q {
    OqcGraph *g;            /* the graph */
    OqcDiag *d;             /* messages */
    const OqcQuantConfig *cfg;
    unsigned char *int8;    /* per node: runs in INT8 */
    unsigned char *qdom;    /* per tensor: holds s8/u8 (INT8 domain) */
    int nq[OQC_OP_COUNT];   /* INT8 nodes per op, for the statistics line */
} Q;

static int32_t type_lo(int32_t t) { return t == OQCI_U8 ? 0 : -127; }
static int32_t type_hi(int32_t t) { return t == OQCI_U8 ? 255 : 127; }
static int32_t qtype(const OqcQuant *q) { return q->is_unsigned ? OQCI_U8 : OQCI_S8; }

/* The tensor holding t's storage: a concat buffer for a channel view, else t. */
static int base_of(const OqcGraph *g, int t) {
    return g->tensors[t].view_base >= 0 ? g->tensors[t].view_base : t;
}

static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int is_view_op(OqcOp op) {
    return op == OQC_OP_Flatten || op == OQC_OP_Reshape || op == OQC_OP_Squeeze ||
           op == OQC_OP_Unsqueeze || op == OQC_OP_Identity;
}

static const OqcTensor *TT(const Q *q, int t) { return &q->g->tensors[t]; }

/* A float constant of at most `rank` dims; NULL otherwise. */
static const float *const_f32(const Q *q, int t) {
    if (t < 0)
        return NULL;
    const OqcTensor *x = TT(q, t);
    return x->is_const && x->data && x->dtype == OQCF_FLOAT ? x->data : NULL;
}

/* Calibrated quant of the storage of t (its concat buffer for a view). */
static const OqcQuant *cal(const Q *q, int t) {
    const OqcQuant *x = &TT(q, base_of(q->g, t))->quant;
    return x->valid && x->scale > 0 && isfinite(x->scale) ? x : NULL;
}

/* ---------------------------------------------------------- step 1: can it be INT8 */

/* Whether the activation of node n maps to an output clamp (Relu, Clip, none). */
static int act_ok(const OqcNode *n, char *why) {
    if (n->act_per_channel) {
        for (int64_t c = 0, k = 0; k < n->nout; k++) {
            int64_t cnt = n->out_channels ? n->out_channels[k] : 0;
            for (int64_t j = 1; j < cnt; j++)
                if (memcmp(&n->act_per_channel[c + j], &n->act_per_channel[c],
                           sizeof(OqcfAct)))
                    return WHY("its fused activations differ inside one output");
            if (cnt && n->act_per_channel[c].kind == OQCF_ACT_LEAKY)
                return WHY("LeakyRelu is not an INT8 clamp");
            c += cnt;
        }
        return 1;
    }
    if (n->act.kind == OQCF_ACT_LEAKY)
        return WHY("LeakyRelu is not an INT8 clamp");
    return 1;
}

/* Op-local conditions of a compute node (its calibration, shapes, constants). */
static int can_compute(const Q *q, int i, char *why) {
    const OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    if (n->nin < 1 || n->in[0] < 0 || TT(q, n->in[0])->dtype != OQCF_FLOAT)
        return WHY("its input is not f32");
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0 || TT(q, n->out[k])->dtype != OQCF_FLOAT || !cal(q, n->out[k]))
            return WHY("output %d has no calibration", k);
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    switch (n->op) {
    case OQC_OP_Conv: {
        const OqcTensor *w = n->nin > 1 && n->in[1] >= 0 ? TT(q, n->in[1]) : NULL;
        if (xs->rank != 4)
            return WHY("only 2-D convolutions run in INT8 (input rank %d)", xs->rank);
        if (!w || !const_f32(q, n->in[1]))
            return WHY("its weights are not a float constant");
        if (n->nin > 2 && n->in[2] >= 0 && !const_f32(q, n->in[2]))
            return WHY("its bias is not a float constant");
        return act_ok(n, why);
    }
    case OQC_OP_Gemm: {
        if (xs->rank != 2 || oqc_attr_int(n, "transA", 0))
            return WHY("Gemm runs in INT8 only with a 2-D, untransposed A");
        if (!const_f32(q, n->in[1]))
            return WHY("its B is not a float constant");
        if (n->nin > 2 && n->in[2] >= 0) {
            const OqcTensor *c = TT(q, n->in[2]);
            int64_t N = TT(q, n->out[0])->shape.d[1], cn = oqc_shape_numel(&c->shape);
            if (!const_f32(q, n->in[2]) || (cn != 1 && cn != N) ||
                (c->shape.rank == 2 && c->shape.d[0] != 1))
                return WHY("its C is not a constant per output column");
        }
        return act_ok(n, why);
    }
    case OQC_OP_MatMul: {
        const OqcTensor *b = n->nin > 1 ? TT(q, n->in[1]) : NULL;
        if (!b || !const_f32(q, n->in[1]) || b->shape.rank != 2 || xs->rank < 2)
            return WHY("MatMul runs in INT8 only with a constant 2-D B");
        return 1;
    }
    case OQC_OP_MaxPool:
        if (xs->rank != 4)
            return WHY("only 2-D pooling runs in INT8");
        if (n->nout > 1 && n->out[1] >= 0)
            return WHY("its indices output is used");
        if (oqc_attr_int(n, "storage_order", 0))
            return WHY("storage_order 1");
        return 1;
    case OQC_OP_AveragePool: {
        if (xs->rank != 4)
            return WHY("only 2-D pooling runs in INT8");
        OqcWindow w;
        OqcDiag quiet = {0};
        if (oqc_pool_geometry(g, i, xs, &w, &quiet) < 0)
            return WHY("its geometry is not static");
        if (oqc_attr_int(n, "count_include_pad", 0))
            for (int a = 0; a < 2; a++)
                if ((w.out[a] - 1) * w.stride[a] + w.kernel[a] >
                    w.in[a] + w.pad_begin[a] + w.pad_end[a])
                    return WHY("count_include_pad with windows past the padding");
        return 1;
    }
    case OQC_OP_GlobalAveragePool:
        if (xs->rank != 4)
            return WHY("only 2-D pooling runs in INT8");
        return 1;
    case OQC_OP_Add:
    case OQC_OP_Sum: {
        if (n->nin < 2 || n->nin > OQCI_ADD_MAX)
            return WHY("%d inputs (INT8 adds take 2 to %d)", n->nin, OQCI_ADD_MAX);
        for (int k = 0; k < n->nin; k++) {
            const OqcTensor *x = n->in[k] >= 0 ? TT(q, n->in[k]) : NULL;
            if (!x || x->is_const || !oqc_shape_equal(&x->shape, &TT(q, n->out[0])->shape))
                return WHY("its inputs are not same-shape activations (no broadcast)");
        }
        return 1;
    }
    default:
        return WHY("%s has no INT8 kernel", n->op_type);
    }
}

/* ------------------------------------------------------ step 3: kernel parameters */

/* round(x) half away from zero, as a double (weights and biases at compile time). */
static double round_ha(double x) {
    return x < 0 ? -floor(-x + 0.5) : floor(x + 0.5);
}

/* Fills rq with n multipliers M[i] in the configured mode; 0, or -1 (why) when one is
 * out of the representable range. */
static int make_requant(Q *q, const double *M, int n, int per_index, OqciRequant *rq,
                        char *why) {
    OqcArena *a = q->g->arena;
    memset(rq, 0, sizeof *rq);
    rq->mode = q->cfg->requant;
    rq->per_index = per_index;
    if (rq->mode == OQCI_REQ_FLOAT) {
        float *m = oqc_arena_alloc(a, (size_t)n * sizeof *m);
        for (int i = 0; i < n; i++) {
            if (!(M[i] >= 0) || M[i] >= 1e30)
                return FAIL("requantization multiplier %g out of range", M[i]);
            m[i] = (float)M[i];
        }
        rq->mult = m;
        return 0;
    }
    int32_t *m = oqc_arena_alloc(a, (size_t)n * sizeof *m);
    int8_t *s = oqc_arena_alloc(a, (size_t)n * sizeof *s);
    for (int i = 0; i < n; i++)
        if (oqci_fixed_multiplier(M[i], &m[i], &s[i]) != OQCI_OK)
            return FAIL("requantization multiplier %g has no fixed-point form", M[i]);
    rq->m = m;
    rq->shift = s;
    return 0;
}

/* Output clamp for a tensor of type t at scale s with activation act. */
static void clamp_of(const OqcfAct *act, int32_t t, float s, int32_t *lo, int32_t *hi) {
    *lo = type_lo(t);
    *hi = type_hi(t);
    if (!act || act->kind == OQCF_ACT_NONE)
        return;
    if (act->kind == OQCF_ACT_RELU) {
        if (*lo < 0)
            *lo = 0;
        return;
    }
    if (act->kind == OQCF_ACT_CLIP) {   /* round is monotone: clamp commutes with it */
        int32_t a = oqci_round_clamp(act->p0 / s, *lo, *hi);
        int32_t b = oqci_round_clamp(act->p1 / s, *lo, *hi);
        *lo = a;
        *hi = b < a ? a : b;
    }
}

/* Output view of tensor t: channels per image of its buffer and its first channel. */
static void view_of(const Q *q, int t, int32_t *ctotal, int32_t *coff) {
    const OqcTensor *x = TT(q, t);
    if (x->view_base >= 0) {
        *ctotal = (int32_t)TT(q, x->view_base)->shape.d[1];
        *coff = (int32_t)x->view_coff;
    } else {
        *ctotal = (int32_t)(x->shape.rank >= 2 ? x->shape.d[1] : 1);
        *coff = 0;
    }
}

/* Conv/Gemm/MatMul parameters: one OqciConv per output. 0, or -1 with why. */
static int build_conv(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    OqcArena *a = g->arena;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qx = cal(q, n->in[0]);
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    const float *W = const_f32(q, n->in[1]);
    const float *B = n->nin > 2 ? const_f32(q, n->in[2]) : NULL;
    int64_t K, kdim, C, group = 1, batch, H = 1, Wd = 1;
    OqciConv base;
    memset(&base, 0, sizeof base);
    base.k_h = base.k_w = base.s_h = base.s_w = base.d_h = base.d_w = 1;
    /* The weights as [K][kdim] floats, transposed/scaled for Gemm and MatMul. */
    float *wk;
    float bscale = 1.0f;
    int64_t nb = 0;   /* bias elements (1: broadcast) */
    if (n->op == OQC_OP_Conv) {
        OqcWindow w;
        OqcDiag quiet = {0};
        if (oqc_conv_geometry(g, i, xs, &TT(q, n->in[1])->shape, &w, &quiet) < 0)
            return FAIL("its geometry is not static");
        K = w.out_channels;
        C = w.in_channels;
        group = w.group;
        kdim = C / group * w.kernel[0] * w.kernel[1];
        batch = xs->d[0];
        H = xs->d[2];
        Wd = xs->d[3];
        base.k_h = (int32_t)w.kernel[0];
        base.k_w = (int32_t)w.kernel[1];
        base.s_h = (int32_t)w.stride[0];
        base.s_w = (int32_t)w.stride[1];
        base.d_h = (int32_t)w.dilation[0];
        base.d_w = (int32_t)w.dilation[1];
        base.p_t = (int32_t)w.pad_begin[0];
        base.p_l = (int32_t)w.pad_begin[1];
        base.out_h = (int32_t)w.out[0];
        base.out_w = (int32_t)w.out[1];
        wk = (float *)W;
        nb = B ? K : 0;
    } else if (n->op == OQC_OP_Gemm) {
        const OqcShape *bs = &TT(q, n->in[1])->shape;
        int tb = (int)oqc_attr_int(n, "transB", 0);
        float alpha = oqc_attr_float(n, "alpha", 1.0f);
        C = xs->d[1];
        K = tb ? bs->d[0] : bs->d[1];
        kdim = C;
        batch = xs->d[0];
        wk = oqc_arena_alloc(a, (size_t)(K * C) * sizeof *wk);
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++)
                wk[k * C + c] = alpha * (tb ? W[k * C + c] : W[c * K + k]);
        if (B) {
            nb = oqc_shape_numel(&TT(q, n->in[2])->shape);
            bscale = oqc_attr_float(n, "beta", 1.0f);
        }
        base.out_h = base.out_w = 1;
    } else {   /* MatMul: A [..., M, C] x B [C, K] */
        const OqcShape *bs = &TT(q, n->in[1])->shape;
        C = bs->d[0];
        K = bs->d[1];
        kdim = C;
        batch = oqc_shape_numel(xs) / C;
        wk = oqc_arena_alloc(a, (size_t)(K * C) * sizeof *wk);
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++)
                wk[k * C + c] = W[c * K + k];
        base.out_h = base.out_w = 1;
    }
    if (K > INT32_MAX / 4 || kdim > INT32_MAX / 4 || batch > INT32_MAX || C > INT32_MAX)
        return FAIL("too large for 32-bit kernel parameters");
    int64_t kpad = (kdim + 3) / 4 * 4;
    base.batch = (int32_t)batch;
    base.in_c = (int32_t)C;
    base.in_h = (int32_t)H;
    base.in_w = (int32_t)Wd;
    base.group = (int32_t)group;
    base.kdim = (int32_t)kdim;
    base.kpad = (int32_t)kpad;
    base.in_type = qtype(qx);
    /* Weights: per output channel scale, rounded, packed. */
    int32_t wmax = oqc_weight_qmax(q->cfg);
    int8_t *wq = oqc_arena_alloc(a, (size_t)(K * kpad) + 1);
    float *sw = oqc_arena_alloc(a, (size_t)K * sizeof *sw);
    int32_t *bias = nb ? oqc_arena_alloc(a, (size_t)K * sizeof *bias) : NULL;
    double *M = oqc_arena_alloc(a, (size_t)K * sizeof *M);
    for (int64_t k = 0; k < K; k++) {
        const float *row = wk + k * kdim;
        float m = 0;
        for (int64_t j = 0; j < kdim; j++)
            m = fmaxf(m, fabsf(row[j]));
        if (!isfinite(m))
            return FAIL("its weights are not finite");
        sw[k] = m > 0 ? m / (float)wmax : 1.0f;
        for (int64_t j = 0; j < kdim; j++)
            wq[k * kpad + j] = (int8_t)oqci_round_clamp(row[j] / sw[k], -wmax, wmax);
        double sacc = (double)qx->scale * sw[k];
        if (bias) {
            double bv = (double)B[nb == 1 ? 0 : k] * bscale / sacc;
            double r = round_ha(bv);
            if (!(fabs(r) < 2147483647.0))
                return FAIL("bias of channel %lld does not fit int32 at scale %g",
                           (long long)k, sacc);
            bias[k] = (int32_t)r;
        }
    }
    /* One parameter set per output (merged convs: consecutive channel ranges). */
    qn->kind = OQC_Q_CONV;
    qn->nconv = n->nout;
    qn->conv = oqc_arena_alloc(a, (size_t)n->nout * sizeof *qn->conv);
    qn->w_scale = oqc_arena_alloc(a, (size_t)n->nout * sizeof *qn->w_scale);
    int64_t k0 = 0;
    for (int o = 0; o < n->nout; o++) {
        int64_t cnt = n->out_channels ? n->out_channels[o] : K;
        const OqcQuant *qy = cal(q, n->out[o]);
        OqciConv *p = &qn->conv[o];
        *p = base;
        p->out_c = (int32_t)cnt;
        p->out_type = qtype(qy);
        if (n->op == OQC_OP_Conv) {
            view_of(q, n->out[o], &p->out_ctotal, &p->out_coff);
        } else {   /* Gemm/MatMul rows: [..., K] is batch x K channels of 1x1 */
            p->out_ctotal = (int32_t)K;
            p->out_coff = 0;
        }
        const OqcfAct *act = n->act_per_channel ? &n->act_per_channel[k0] : &n->act;
        clamp_of(act, p->out_type, qy->scale, &p->lo, &p->hi);
        p->w = wq + k0 * kpad;
        p->wpair16 = oqci_conv_wpair16(p);
        p->bias = bias ? bias + k0 : NULL;
        qn->w_scale[o] = sw + k0;
        int64_t maxb = 0;
        for (int64_t k = k0; k < k0 + cnt; k++) {
            M[k] = (double)qx->scale * sw[k] / qy->scale;
            if (bias && llabs((long long)bias[k]) > maxb)
                maxb = llabs((long long)bias[k]);
        }
        /* Overflow: see the file comment. */
        double worst = (double)kdim * 255.0 * 127.0 + (double)maxb;
        if (worst >= 2147483647.0)
            for (int64_t k = k0; k < k0 + cnt; k++)
                if (M[k] * 2147483648.0 < 255.0)
                    return FAIL("its accumulators could overflow int32 (depth %lld) and "
                               "saturating would not be exact", (long long)kdim);
        if (make_requant(q, M + k0, (int)cnt, 1, &p->rq, why) < 0)
            return -1;
        k0 += cnt;
    }
    return 0;
}

static int build_pool(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    const OqcQuant *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciPool *p = &qn->pool;
    memset(p, 0, sizeof *p);
    p->batch = (int32_t)xs->d[0];
    p->channels = (int32_t)xs->d[1];
    p->in_h = (int32_t)xs->d[2];
    p->in_w = (int32_t)xs->d[3];
    p->d_h = p->d_w = 1;
    p->s_h = p->s_w = 1;
    if (n->op == OQC_OP_GlobalAveragePool) {
        p->k_h = p->in_h;
        p->k_w = p->in_w;
        p->out_h = p->out_w = 1;
    } else {
        OqcWindow w;
        OqcDiag quiet = {0};
        if (oqc_pool_geometry(g, i, xs, &w, &quiet) < 0)
            return FAIL("its geometry is not static");
        p->k_h = (int32_t)w.kernel[0];
        p->k_w = (int32_t)w.kernel[1];
        p->s_h = (int32_t)w.stride[0];
        p->s_w = (int32_t)w.stride[1];
        p->d_h = (int32_t)w.dilation[0];
        p->d_w = (int32_t)w.dilation[1];
        p->p_t = (int32_t)w.pad_begin[0];
        p->p_l = (int32_t)w.pad_begin[1];
        p->out_h = (int32_t)w.out[0];
        p->out_w = (int32_t)w.out[1];
        p->count_include_pad = (int32_t)oqc_attr_int(n, "count_include_pad", 0);
    }
    p->in_type = qtype(qx);
    p->out_type = qtype(qy);
    view_of(q, n->out[0], &p->out_ctotal, &p->out_coff);
    p->lo = type_lo(p->out_type);
    p->hi = type_hi(p->out_type);
    if (n->op == OQC_OP_MaxPool) {
        qn->kind = OQC_Q_MAXPOOL;
        p->requant = qx->scale != qy->scale || p->in_type != p->out_type;
        if (p->requant) {
            double M = (double)qx->scale / qy->scale;
            return make_requant(q, &M, 1, 0, &p->rq, why);
        }
        return 0;
    }
    qn->kind = OQC_Q_AVGPOOL;
    int64_t window = (int64_t)p->k_h * p->k_w;
    if (window > 1 << 20)
        return FAIL("window of %lld elements", (long long)window);
    double base = (double)qx->scale / qy->scale;
    if (n->op == OQC_OP_GlobalAveragePool || p->count_include_pad ||
        (p->p_t == 0 && p->p_l == 0 && (int64_t)(p->out_h - 1) * p->s_h + p->k_h <= p->in_h &&
         (int64_t)(p->out_w - 1) * p->s_w + p->k_w <= p->in_w)) {
        /* every window counts k_h * k_w elements: one multiplier */
        double M = base / (double)window;
        p->count_include_pad = 1;
        return make_requant(q, &M, 1, 0, &p->rq, why);
    }
    double *M = oqc_arena_alloc(g->arena, (size_t)(window + 1) * sizeof *M);
    for (int64_t c = 1; c <= window; c++)
        M[c] = base / (double)c;
    return make_requant(q, M, (int)window + 1, 1, &p->rq, why);
}

static int build_add(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciAdd *p = &qn->add;
    memset(p, 0, sizeof *p);
    qn->kind = OQC_Q_ADD;
    p->ninputs = n->nin;
    p->count = oqc_shape_numel(&TT(q, n->out[0])->shape);
    p->out_type = qtype(qy);
    clamp_of(&n->act, p->out_type, qy->scale, &p->lo, &p->hi);
    for (int k = 0; k < n->nin; k++) {
        const OqcQuant *qx = &TT(q, base_of(g, n->in[k]))->quant;
        double M = 256.0 * qx->scale / qy->scale;
        p->in_type[k] = qtype(qx);
        if (make_requant(q, &M, 1, 0, &p->rq[k], why) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ driver */

/* Folds a Relu/Clip that is the only reader of INT8 Add/Sum node i's output into the
 * Add (its act; the Add then writes the activation's output). */
static void fold_add_act(Q *q, int i, unsigned char *dead) {
    OqcGraph *g = q->g;
    int y = g->nodes[i].out[0];
    const OqcTensor *yt = TT(q, y);
    if (yt->nconsumers != 1 || yt->is_output || yt->view_base >= 0)
        return;
    int c = yt->consumers[0];
    const OqcNode *cn = &g->nodes[c];
    if ((cn->op != OQC_OP_Relu && cn->op != OQC_OP_Clip) || in_list(q->cfg->fp32_nodes, cn->name))
        return;
    char why[OQC_WHY_SIZE];
    OqcfAct act;
    if (!oqc_pass_act_of(g, c, &act, why) || !cal(q, cn->out[0]) ||
        TT(q, cn->out[0])->view_base >= 0)
        return;
    g->nodes[i].act = act;
    g->nodes[i].out[0] = cn->out[0];
    g->tensors[cn->out[0]].producer = i;
    g->tensors[y].nconsumers = 0;
    g->tensors[y].producer = -1;
    dead[c] = 1;
}

/* Accumulator outputs.  An INT8 Conv/Gemm/MatMul (one output, no activation or a Relu)
 * or average pool (one window size) whose output, directly or through views, is read
 * only by float nodes or is a graph output stores its int32 accumulators (OQCI_S32)
 * instead of requantizing them to 8 bits.  The Dequantize that follows multiplies them
 * by the accumulator's scale (s_in * s_w[k], or s_in / window), so the float result
 * keeps the accumulator's precision: an 8-bit output scale set by the largest logit
 * no longer rounds (and with a tight threshold clips) every logit.  The tensor's OqcAcc
 * keeps the s8/u8 requantization, which the integer I/O API applies: its output has
 * the same bits as when the layer wrote 8 bits itself. */
static void widen(Q *q, int i, const unsigned char *dead) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    OqcQNode *qn = n->q;
    if ((qn->kind != OQC_Q_CONV && qn->kind != OQC_Q_AVGPOOL) || n->nout != 1 ||
        n->out[0] < 0 || TT(q, n->out[0])->view_base >= 0)
        return;
    if (qn->kind == OQC_Q_CONV && (qn->nconv != 1 || n->act_per_channel ||
                                   (n->act.kind != OQCF_ACT_NONE && n->act.kind != OQCF_ACT_RELU)))
        return;
    if (qn->kind == OQC_Q_AVGPOOL && qn->pool.rq.per_index)
        return;
    /* the output and its views, breadth first: no INT8 reader but views, a float one */
    int cap = g->ntensors, ns = 0, ok = 1, leaves = 0;
    int *set = malloc((size_t)cap * sizeof *set);
    set[ns++] = n->out[0];
    for (int s = 0; s < ns && ok; s++) {
        const OqcTensor *x = TT(q, set[s]);
        leaves |= x->is_output;
        ok = x->view_base < 0;
        for (int c = 0; c < x->nconsumers && ok; c++) {
            const OqcNode *r = &g->nodes[x->consumers[c]];
            if (dead[x->consumers[c]] || !q->int8[x->consumers[c]])
                leaves = 1;
            else if (r->q->kind == OQC_Q_VIEW && r->out[0] >= 0 && ns < cap)
                set[ns++] = r->out[0];
            else
                ok = 0;
        }
    }
    if (ok && leaves) {
        OqcAcc *acc = oqc_arena_alloc(g->arena, sizeof *acc);
        const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
        if (qn->kind == OQC_Q_CONV) {
            OqciConv *p = &qn->conv[0];
            float *sc = oqc_arena_alloc(g->arena, (size_t)p->out_c * sizeof *sc);
            for (int32_t k = 0; k < p->out_c; k++)
                sc[k] = (float)((double)qx->scale * qn->w_scale[0][k]);
            *acc = (OqcAcc){p->batch, (int64_t)p->out_h * p->out_w, p->out_c, 1, sc,
                            p->rq, p->out_type, p->lo, p->hi};
            p->out_type = OQCI_S32;
            p->lo = n->act.kind == OQCF_ACT_RELU ? 0 : INT32_MIN;
            p->hi = INT32_MAX;
        } else {
            OqciPool *p = &qn->pool;
            float *sc = oqc_arena_alloc(g->arena, sizeof *sc);
            sc[0] = (float)((double)qx->scale / ((double)p->k_h * p->k_w));
            *acc = (OqcAcc){p->batch, (int64_t)p->out_h * p->out_w, p->channels, 0, sc,
                            p->rq, p->out_type, p->lo, p->hi};
            p->out_type = OQCI_S32;
            p->lo = INT32_MIN;
            p->hi = INT32_MAX;
        }
        for (int s = 0; s < ns; s++)
            g->tensors[set[s]].acc = acc;
    }
    free(set);
}

/* Quantize node reading float tensor t, writing a new s8/u8 tensor; returns its id. */
static int add_quantize(Q *q, int t, int *qof) {
    if (qof[t] >= 0)
        return qof[t];
    OqcGraph *g = q->g;
    const OqcQuant *qt = cal(q, t);
    char *name = oqc_arena_printf(g->arena, "%s.q8", g->tensors[t].name);
    int y = oqc_tensor_add(g, name);
    OqcTensor *yt = &g->tensors[y], *xt = &g->tensors[t];
    yt->shape = xt->shape;
    yt->quant = *qt;
    yt->dtype = qt->is_unsigned ? OQCF_UINT8 : OQCF_INT8;
    int node = oqc_node_add(g, OQC_OP_QuantizeLinear, NULL,
                            oqc_arena_printf(g->arena, "quantize:%s", xt->name), 1, &t, 1, &y);
    OqcQNode *qn = oqc_arena_alloc(g->arena, sizeof *qn);
    qn->kind = OQC_Q_QUANTIZE;
    qn->out_type = qtype(qt);
    qn->count = oqc_shape_numel(&xt->shape);
    qn->scale = qt->scale;
    g->nodes[node].q = qn;
    q->qdom = realloc(q->qdom, (size_t)g->ntensors + 1);
    q->qdom[y] = 1;
    qof[t] = y;
    return y;
}

int pass_quantize(OqcGraph *g, OqcDiag *d) {
    if (!g->qcfg) {
        oqc_info(d, "quantize: no calibration given: the graph stays float");
        return 0;
    }
    if (oqc_graph_link(g, d) < 0)
        return -1;
    Q q = {g, d, g->qcfg, NULL, NULL, {0}};
    /* --fp32-nodes must name nodes of this graph. */
    for (const char *p = q.cfg->fp32_nodes; p && *p;) {
        const char *comma = strchr(p, ',');
        int len = (int)(comma ? (size_t)(comma - p) : strlen(p)), found = 0;
        for (int i = 0; i < g->nnodes && !found; i++)
            found = (int)strlen(g->nodes[i].name) == len && !strncmp(g->nodes[i].name, p, len);
        if (!found)
            return oqc_err(d, "--fp32-nodes: the optimised graph of %s has no node '%.*s' "
                              "(see `oqc dump --after all`)", g->path, len, p);
        p = comma ? comma + 1 : NULL;
    }
    int nn = g->nnodes;
    q.int8 = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    q.qdom = calloc((size_t)g->ntensors + 1, 1);
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    char why[OQC_WHY_SIZE];
    /* Step 1: compute nodes that can run in INT8 on their own. */
    unsigned char *compute = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    for (int i = 0; i < nn; i++) {
        const OqcNode *n = &g->nodes[i];
        int cand = 0;
        switch (n->op) {
        case OQC_OP_Conv: case OQC_OP_Gemm: case OQC_OP_MatMul: case OQC_OP_MaxPool:
        case OQC_OP_AveragePool: case OQC_OP_GlobalAveragePool: case OQC_OP_Add:
        case OQC_OP_Sum:
            cand = 1;
            break;
        default:
            break;
        }
        if (!cand)
            continue;
        if (in_list(q.cfg->fp32_nodes, n->name)) {
            oqc_info(d, "quantize: '%s' (%s) stays float: named in --fp32-nodes", n->name,
                     n->op_type);
            continue;
        }
        if (!can_compute(&q, i, why)) {
            oqc_info(d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type, why);
            continue;
        }
        compute[i] = 1;
    }
    /* Step 2: a concat buffer is INT8 only if every writer is (conv/pool writers, or
     * element-wise ones at batch 1 where a view is contiguous). */
    for (int i = 0; i < nn; i++) {
        const OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0 || g->tensors[t].view_base < 0)
                continue;
            int ok = compute[i] && (n->op != OQC_OP_Add && n->op != OQC_OP_Sum &&
                                    n->op != OQC_OP_MatMul && n->op != OQC_OP_Gemm);
            if (ok)
                continue;
            int b = g->tensors[t].view_base;
            for (int j = 0; j < nn; j++)
                for (int m = 0; m < g->nodes[j].nout; m++)
                    if (g->nodes[j].out[m] >= 0 &&
                        g->tensors[g->nodes[j].out[m]].view_base == b && compute[j]) {
                        compute[j] = 0;
                        oqc_info(d, "quantize: '%s' (%s) stays float: it writes into "
                                    "concat buffer '%s' with a float writer ('%s')",
                                 g->nodes[j].name, g->nodes[j].op_type, g->tensors[b].name,
                                 n->name);
                    }
        }
    }
    /* Relu/Clip after an INT8 Add: into its clamp. */
    for (int i = 0; i < nn; i++)
        if (compute[i] && (g->nodes[i].op == OQC_OP_Add || g->nodes[i].op == OQC_OP_Sum))
            fold_add_act(&q, i, dead);
    /* Step 3, in topological order: INT8 domains, passthrough scales, parameters. */
    int rc = 0, nint8 = 0, nfloat = 0;
    for (int i = 0; i < nn; i++) {
        OqcNode *n = &g->nodes[i];
        if (dead[i])
            continue;
        OqcQNode *qn = NULL;
        if (compute[i]) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            int r;
            if (n->op == OQC_OP_Conv || n->op == OQC_OP_Gemm || n->op == OQC_OP_MatMul)
                r = build_conv(&q, i, qn, why);
            else if (n->op == OQC_OP_Add || n->op == OQC_OP_Sum)
                r = build_add(&q, i, qn, why);
            else {
                /* max pooling keeps its input's scale unless it writes a concat buffer */
                if (n->op == OQC_OP_MaxPool && g->tensors[n->out[0]].view_base < 0) {
                    const OqcQuant *qx = cal(&q, n->in[0]);
                    if (!qx) {
                        r = -1;
                        snprintf(why, sizeof why, "its input has no calibration");
                    } else {
                        g->tensors[n->out[0]].quant = *qx;
                        r = build_pool(&q, i, qn, why);
                    }
                } else {
                    r = cal(&q, n->in[0]) ? build_pool(&q, i, qn, why)
                                          : (snprintf(why, sizeof why, "its input has no "
                                                                       "calibration"), -1);
                }
            }
            if (r < 0) {
                oqc_info(d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type, why);
                qn = NULL;
            }
            /* inputs must be calibrated too (they are quantized when float) */
            for (int k = 0; qn && k < n->nin; k++)
                if (n->in[k] >= 0 && !g->tensors[n->in[k]].is_const && !cal(&q, n->in[k])) {
                    oqc_info(d, "quantize: '%s' (%s) stays float: input '%s' has no "
                                "calibration", n->name, n->op_type,
                             g->tensors[n->in[k]].name);
                    qn = NULL;
                }
        } else if ((n->op == OQC_OP_Relu || n->op == OQC_OP_Clip) && n->in[0] >= 0 &&
                   q.qdom[n->in[0]] && n->out[0] >= 0 && g->tensors[n->out[0]].view_base < 0 &&
                   !in_list(q.cfg->fp32_nodes, n->name)) {
            OqcfAct act;
            if (oqc_pass_act_of(g, i, &act, why)) {
                const OqcQuant *qx = &g->tensors[base_of(g, n->in[0])].quant;
                qn = oqc_arena_alloc(g->arena, sizeof *qn);
                qn->kind = OQC_Q_CLAMP;
                qn->in_type = qn->out_type = qtype(qx);
                qn->count = oqc_shape_numel(&g->tensors[n->out[0]].shape);
                clamp_of(&act, qn->out_type, qx->scale, &qn->lo, &qn->hi);
                g->tensors[n->out[0]].quant = *qx;
            }
        } else if (is_view_op(n->op) && n->in[0] >= 0 && q.qdom[n->in[0]] && n->out[0] >= 0 &&
                   g->tensors[n->out[0]].view_base < 0) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            qn->kind = OQC_Q_VIEW;
            g->tensors[n->out[0]].quant = g->tensors[base_of(g, n->in[0])].quant;
        }
        if (!qn) {
            nfloat++;
            continue;
        }
        n->q = qn;
        q.int8[i] = 1;
        q.nq[n->op]++;
        nint8++;
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) {
                q.qdom[n->out[k]] = 1;
                q.qdom[base_of(g, n->out[k])] = 1;
            }
    }
    /* Step 3b: layers whose outputs leave the INT8 domain keep their accumulators. */
    for (int i = 0; i < nn; i++)
        if (q.int8[i] && !dead[i])
            widen(&q, i, dead);
    /* Step 4: boundaries.  INT8 nodes read s8/u8: float inputs get a Quantize node (one
     * per tensor).  INT8 tensors read by float nodes or that are graph outputs get a
     * Dequantize node whose float output takes over the readers (graph outputs keep
     * their names: the INT8 tensor is renamed NAME.q8). */
    int *qof = malloc(((size_t)g->ntensors + 1) * sizeof *qof);
    for (int t = 0; t <= g->ntensors; t++)
        qof[t] = -1;
    int nquant = 0, ndequant = 0;
    for (int i = 0; i < nn; i++) {
        if (!q.int8[i] || g->nodes[i].q->kind == OQC_Q_VIEW)
            continue;
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int t = g->nodes[i].in[k];
            if (t < 0 || g->tensors[t].is_const || q.qdom[t] ||
                (k > 0 && g->nodes[i].q->kind == OQC_Q_CONV))
                continue;
            int before = qof[t];
            int y = add_quantize(&q, t, qof);
            nquant += before < 0;
            g->nodes[i].in[k] = y;
        }
    }
    int ntens = g->ntensors;
    for (int t = 0; t < ntens; t++) {
        if (!q.qdom[t])
            continue;
        OqcTensor *x = &g->tensors[t];
        int float_reader = x->is_output;
        for (int c = 0; c < x->nconsumers; c++)
            float_reader |= !dead[x->consumers[c]] && !q.int8[x->consumers[c]];
        if (!float_reader || x->view_base >= 0)
            continue;
        /* The float twin, read by float nodes; a graph output moves to it and keeps
         * its name (the INT8 tensor becomes NAME.q8). */
        const char *orig = x->name;
        int is_out = x->is_output;
        if (is_out)
            oqc_tensor_rename(g, t, oqc_arena_printf(g->arena, "%s.q8", orig));
        int f = oqc_tensor_add(g, is_out ? orig : oqc_arena_printf(g->arena, "%s.f32", orig));
        x = &g->tensors[t];
        OqcTensor *ft = &g->tensors[f];
        ft->shape = x->shape;
        ft->dtype = OQCF_FLOAT;
        ft->quant = x->quant;
        int dq = oqc_node_add(g, OQC_OP_DequantizeLinear, NULL,
                              oqc_arena_printf(g->arena, "dequantize:%s", orig), 1, &t, 1, &f);
        OqcQNode *qn = oqc_arena_alloc(g->arena, sizeof *qn);
        qn->kind = OQC_Q_DEQUANTIZE;
        qn->in_type = x->acc ? OQCI_S32 : qtype(&x->quant);
        qn->count = oqc_shape_numel(&x->shape);
        qn->scale = x->quant.scale;
        qn->acc = x->acc;
        g->nodes[dq].q = qn;
        for (int i = 0; i < nn; i++)
            if (!dead[i] && !q.int8[i])
                for (int k = 0; k < g->nodes[i].nin; k++)
                    if (g->nodes[i].in[k] == t)
                        g->nodes[i].in[k] = f;
        for (int o = 0; o < g->noutputs; o++)
            if (g->outputs[o] == t) {
                g->outputs[o] = f;
                g->tensors[f].is_output = 1;
                g->tensors[t].is_output = 0;
            }
        ndequant++;
    }
    /* Storage types of the INT8 domain. */
    for (int t = 0; t < g->ntensors && t < ntens; t++) {
        if (!q.qdom[t])
            continue;
        OqcTensor *x = &g->tensors[t];
        const OqcQuant *b = &g->tensors[base_of(g, t)].quant;
        x->quant = *b;
        x->dtype = x->acc ? OQCF_INT32 : b->is_unsigned ? OQCF_UINT8 : OQCF_INT8;
    }
    free(qof);
    free(q.qdom);
    unsigned char *dead_all = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    memcpy(dead_all, dead, (size_t)nn);   /* nodes added since are all alive */
    oqc_graph_remove_nodes(g, dead_all);
    if (oqc_graph_toposort(g, d) < 0)
        rc = -1;
    oqc_info(d, "quantize: %d nodes INT8 (Conv %d, Gemm %d, MatMul %d, MaxPool %d, "
             "AveragePool %d, GlobalAveragePool %d, Add %d, Sum %d, Relu %d, Clip %d, "
             "views %d), %d float; %d Quantize and %d Dequantize inserted; requant %s",
             nint8, q.nq[OQC_OP_Conv], q.nq[OQC_OP_Gemm], q.nq[OQC_OP_MatMul],
             q.nq[OQC_OP_MaxPool], q.nq[OQC_OP_AveragePool], q.nq[OQC_OP_GlobalAveragePool],
             q.nq[OQC_OP_Add], q.nq[OQC_OP_Sum], q.nq[OQC_OP_Relu], q.nq[OQC_OP_Clip],
             q.nq[OQC_OP_Flatten] + q.nq[OQC_OP_Reshape] + q.nq[OQC_OP_Squeeze] +
                 q.nq[OQC_OP_Unsqueeze] + q.nq[OQC_OP_Identity],
             nfloat, nquant, ndequant, q.cfg->requant == OQCI_REQ_FIXED ? "fixed" : "float");
    return rc < 0 ? -1 : nint8;
}

int oqc_quant_apply(OqcGraph *g, const OqcCalibEntry *e, int n, OqcDiag *d) {
    unsigned char *nonneg = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    oqc_find_unsigned(g, nonneg);
    for (int i = 0; i < n; i++) {
        int t = oqc_tensor_find(g, e[i].name);
        if (t < 0)
            return oqc_err(d, "calibration table: tensor '%s' is not in the optimised graph "
                              "of %s (tables name tensors after the passes: see `oqc dump "
                              "--after all`)", e[i].name, g->path);
        OqcQuant *q = &g->tensors[t].quant;
        if (e[i].threshold == 0) {
            /* zero on every calibration sample (or empty): no range to quantize to, so
             * the tensor stays float, as one missing from the table */
            oqc_info(d, "calibration table: tensor '%s' has threshold 0 (all zero during "
                        "calibration): it stays in float", e[i].name);
            continue;
        }
        if (!(e[i].threshold > 0) || !isfinite(e[i].threshold))
            return oqc_err(d, "calibration table: tensor '%s' has threshold %g; thresholds "
                              "must be positive and finite", e[i].name, (double)e[i].threshold);
        q->valid = 1;
        q->is_unsigned = nonneg[t];
        q->amax = e[i].amax;
        q->threshold = e[i].threshold;
        /* the entry's own scale when it agrees in signedness (bit-exact imports) */
        q->scale = q->is_unsigned == e[i].is_unsigned && e[i].scale > 0
                       ? e[i].scale
                       : e[i].threshold / (q->is_unsigned ? 255.0f : 127.0f);
        q->method = e[i].method;
    }
    return 0;
}
