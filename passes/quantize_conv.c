/* quantize_conv.c - pass "quantize", the convolution kinds: OQC_Q_CONV (Conv, Gemm,
 * MatMul: oqci_conv) and OQC_Q_DECONV (ConvTranspose: oqci_deconv).  For each, whether a
 * node can run in INT8 (step 1), its kernel parameters (step 3) and, for CONV, its int32
 * accumulator output (step 3b); see quantize.c for the pass.
 *
 * Parameters: per output channel weight scales max|W[k]| / 127 (no saturation; /63 and
 * so on with fewer weight bits), int8 weights packed with the depth padded to a multiple
 * of 4, int32 biases at scale s_in * s_w[k], one requantization multiplier per channel
 * and the output clamp holding the fused activation.
 *
 * Overflow: an int32 accumulator holds at most kdim * 255 * 127 plus the bias; the
 * conv kernels sum depths above OQCI_KCHUNK in int64 and saturate to int32 before
 * requantizing.  Saturation is exact when the requantized result would be clamped
 * anyway, i.e. when 2^31 * M >= 255 for every channel; a node where neither holds stays
 * float (-v says so).  The deconv kernel sums in int32: its products per output must
 * fit. */
#include "quantize_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ step 1: can it */

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

/* Conv: 2-D, constant weights and bias. */
static int can_conv2d(const Q *q, const OqcNode *n, const OqcShape *xs, char *why) {
    const OqcTensor *w = n->nin > 1 && n->in[1] >= 0 ? TT(q, n->in[1]) : NULL;
    if (xs->rank != 4)
        return WHY("only 2-D convolutions run in INT8 (input rank %d)", xs->rank);
    if (!w || !const_f32(q, n->in[1]))
        return WHY("its weights are not a float constant");
    if (n->nin > 2 && n->in[2] >= 0 && !const_f32(q, n->in[2]))
        return WHY("its bias is not a float constant");
    return act_ok(n, why);
}

/* Gemm: 2-D untransposed A, constant B, C constant per output column. */
static int can_gemm(const Q *q, const OqcNode *n, const OqcShape *xs, char *why) {
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

int oqc_quant_can_conv(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    if (n->op == OQC_OP_Conv)
        return can_conv2d(q, n, xs, why);
    if (n->op == OQC_OP_Gemm)
        return can_gemm(q, n, xs, why);
    /* MatMul */
    const OqcTensor *b = n->nin > 1 ? TT(q, n->in[1]) : NULL;
    if (!b || !const_f32(q, n->in[1]) || b->shape.rank != 2 || xs->rank < 2)
        return WHY("MatMul runs in INT8 only with a constant 2-D B");
    return 1;
}

int oqc_quant_can_deconv(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    if (xs->rank != 4)
        return WHY("only 2-D transposed convolutions run in INT8 (input rank %d)", xs->rank);
    if (n->nin < 2 || !const_f32(q, n->in[1]))
        return WHY("its weights are not a float constant");
    if (n->nin > 2 && n->in[2] >= 0 && !const_f32(q, n->in[2]))
        return WHY("its bias is not a float constant");
    if (TT(q, n->out[0])->view_base >= 0)
        return WHY("it writes into a concat buffer");
    return act_ok(n, why);
}

/* ------------------------------------------------------------- step 3: parameters */

/* A Conv/Gemm/MatMul node as a convolution: the fields of its OqciConv that all its
 * outputs share, its weights as K rows of kdim floats, its bias. */
typedef struct ConvShape {
    OqciConv base;      /* geometry (input, kernel, strides, pads, output), group */
    int64_t K, C, kdim, batch;
    const float *wk;    /* K x kdim weights (transposed and scaled for Gemm, MatMul) */
    const float *B;     /* bias, or NULL */
    int64_t nb;         /* bias elements (1: one for all channels; 0: no bias) */
    float bscale;       /* bias factor (Gemm's beta) */
} ConvShape;

/* Conv: its geometry; 0, or -1 with why. */
static int conv_shape(const Q *q, int i, ConvShape *s, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    OqcWindow w;
    OqcDiag quiet = {0};
    if (oqc_conv_geometry(q->g, i, xs, &TT(q, n->in[1])->shape, &w, &quiet) < 0)
        return FAIL("its geometry is not static");
    s->K = w.out_channels;
    s->C = w.in_channels;
    s->kdim = s->C / w.group * w.kernel[0] * w.kernel[1];
    s->batch = xs->d[0];
    s->base = (OqciConv){
        .in_h = (int32_t)xs->d[2], .in_w = (int32_t)xs->d[3],
        .out_h = (int32_t)w.out[0], .out_w = (int32_t)w.out[1],
        .k_h = (int32_t)w.kernel[0], .k_w = (int32_t)w.kernel[1],
        .s_h = (int32_t)w.stride[0], .s_w = (int32_t)w.stride[1],
        .d_h = (int32_t)w.dilation[0], .d_w = (int32_t)w.dilation[1],
        .p_t = (int32_t)w.pad_begin[0], .p_l = (int32_t)w.pad_begin[1],
        .group = (int32_t)w.group,
    };
    s->wk = const_f32(q, n->in[1]);
    s->nb = s->B ? s->K : 0;
    return 0;
}

/* Gemm (A [batch, C] x op(B), op(B) [C, K]) and MatMul (A [..., C] x B [C, K]): a 1x1
 * convolution of the rows of A, its weights the transposed B (times Gemm's alpha). */
static void fc_shape(const Q *q, int i, ConvShape *s) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape, *bs = &TT(q, n->in[1])->shape;
    const float *W = const_f32(q, n->in[1]);
    int tb = 0;
    float alpha = 1.0f;
    if (n->op == OQC_OP_Gemm) {
        tb = (int)oqc_attr_int(n, "transB", 0);
        alpha = oqc_attr_float(n, "alpha", 1.0f);
        s->C = xs->d[1];
        s->K = tb ? bs->d[0] : bs->d[1];
        s->batch = xs->d[0];
        if (s->B) {
            s->nb = oqc_shape_numel(&TT(q, n->in[2])->shape);
            s->bscale = oqc_attr_float(n, "beta", 1.0f);
        }
    } else {
        s->C = bs->d[0];
        s->K = bs->d[1];
        s->batch = oqc_shape_numel(xs) / s->C;
    }
    s->kdim = s->C;
    float *wk = oqc_arena_alloc(q->g->arena, (size_t)(s->K * s->C) * sizeof *wk);
    for (int64_t k = 0; k < s->K; k++)
        for (int64_t c = 0; c < s->C; c++)
            wk[k * s->C + c] = n->op == OQC_OP_Gemm
                                   ? alpha * (tb ? W[k * s->C + c] : W[c * s->K + k])
                                   : W[c * s->K + k];
    s->wk = wk;
    /* the output rows [..., K]: batch x K channels of 1x1 */
    s->base = (OqciConv){.in_h = 1, .in_w = 1, .out_h = 1, .out_w = 1, .k_h = 1, .k_w = 1,
                         .s_h = 1, .s_w = 1, .d_h = 1, .d_w = 1, .group = 1,
                         .out_ctotal = (int32_t)s->K, .out_coff = 0};
}

/* The weights of s quantized per output channel k: scale sw[k], codes wq[k][0..kdim)
 * (rows of kpad), int32 biases at scale s_in[k] * sw[k] (NULL without a bias); 0, or -1
 * with why.  s_in[k]: the scale of the input output channel k reads (one per channel
 * for a depthwise conv of a channel-scaled tensor, else the tensor's for every k). */
static int conv_weights(const Q *q, const ConvShape *s, const float *s_in, int64_t kpad,
                        int8_t **wq, float **sw, int32_t **bias, char *why) {
    OqcArena *a = q->g->arena;
    int32_t wmax = oqc_weight_qmax(q->cfg);
    *wq = oqc_arena_alloc(a, (size_t)(s->K * kpad) + 1);
    *sw = oqc_arena_alloc(a, (size_t)s->K * sizeof **sw);
    *bias = s->nb ? oqc_arena_alloc(a, (size_t)s->K * sizeof **bias) : NULL;
    for (int64_t k = 0; k < s->K; k++) {
        const float *row = s->wk + k * s->kdim;
        float m = 0;
        for (int64_t j = 0; j < s->kdim; j++)
            m = fmaxf(m, fabsf(row[j]));
        if (!isfinite(m))
            return FAIL("its weights are not finite");
        (*sw)[k] = m > 0 ? m / (float)wmax : OQC_ZERO_RANGE_SCALE;
        for (int64_t j = 0; j < s->kdim; j++)
            (*wq)[k * kpad + j] = (int8_t)oqci_round_clamp(row[j] / (*sw)[k], -wmax, wmax);
        if (*bias && oqc_quant_bias((double)s->B[s->nb == 1 ? 0 : k] * s->bscale,
                                    (double)s_in[k] * (*sw)[k], k, &(*bias)[k], why) < 0)
            return -1;
    }
    return 0;
}

/* Node i's output tensor t at one scale per channel (ch_threshold[k] / 127 or 255):
 * the scales, with the output clamp [*lo, *hi], when every channel's clamp is the same
 * and every reader builds with them (each is tried); else NULL, and t keeps one scale. */
static const float *channel_scales(Q *q, int i, int t, int32_t type, int32_t *lo,
                                   int32_t *hi) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    OqcQuant *qy = &g->tensors[t].quant;
    float *sc = oqc_arena_alloc(g->arena, (size_t)qy->nch * sizeof *sc);
    for (int32_t k = 0; k < qy->nch; k++) {
        int32_t l, h;
        float s = qy->ch_threshold[k] / (type == OQCI_U8 ? 255.0f : 127.0f);
        sc[k] = s >= FLT_MIN && isfinite(s) ? s : OQC_ZERO_RANGE_SCALE;
        oqc_quant_clamp_of(n->act_per_channel ? &n->act_per_channel[k] : &n->act, type,
                           sc[k], &l, &h);
        if (k == 0)
            *lo = l, *hi = h;
        else if (l != *lo || h != *hi)
            return NULL;
    }
    qy->ch_scale = sc;
    char why[OQC_WHY_SIZE];
    for (int c = 0; c < g->tensors[t].nconsumers; c++) {
        OqcQNode trial;
        if (oqc_quant_build_conv(q, g->tensors[t].consumers[c], &trial, why) < 0) {
            qy->ch_scale = NULL;
            return NULL;
        }
    }
    float mn = sc[0], mx = sc[0];
    for (int32_t k = 1; k < qy->nch; k++)
        mn = fminf(mn, sc[k]), mx = fmaxf(mx, sc[k]);
    oqc_info(q->d, "quantize: '%s' runs at one scale per channel (%d channels, scales %g to "
                   "%g; one scale would be %g)", g->tensors[t].name, (int)qy->nch,
             (double)mn, (double)mx, (double)qy->scale);
    return sc;
}

/* Output o of node n (node i; channels [k0, k0 + p->out_c) of the layer): its type,
 * view, clamp and requantization (M[k] = s_in[k] * s_w[k] / s_y[k], s_y one scale or
 * one per channel); 0, or -1 with why. */
static int conv_output(Q *q, int i, int o, int64_t k0, const float *s_in, const float *sw,
                       OqciConv *p, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcQuant *qy = cal(q, n->out[o]);
    p->out_type = qtype(qy);
    if (n->op == OQC_OP_Conv)   /* (Gemm/MatMul: fc_shape's) */
        oqc_quant_view_of(q, n->out[o], &p->out_ctotal, &p->out_coff);
    const OqcfAct *act = n->act_per_channel ? &n->act_per_channel[k0] : &n->act;
    const float *sy = n->nout == 1 && q->chan[n->out[0]] && qy->nch == p->out_c
                          ? channel_scales(q, i, n->out[0], p->out_type, &p->lo, &p->hi)
                          : NULL;
    if (!sy)
        oqc_quant_clamp_of(act, p->out_type, qy->scale, &p->lo, &p->hi);
    p->wpair16 = oqci_conv_wpair16(p);
    double *M = oqc_arena_alloc(q->g->arena, (size_t)p->out_c * sizeof *M);
    int64_t maxb = 0;
    for (int64_t k = 0; k < p->out_c; k++) {
        M[k] = (double)s_in[k] * sw[k] / (sy ? sy[k] : qy->scale);
        if (p->bias && llabs((long long)p->bias[k]) > maxb)
            maxb = llabs((long long)p->bias[k]);
    }
    /* Overflow: see the file comment. */
    double worst = (double)p->kdim * 255.0 * 127.0 + (double)maxb;
    if (worst >= 2147483647.0)
        for (int64_t k = 0; k < p->out_c; k++)
            if (M[k] * 2147483648.0 < 255.0)
                return FAIL("its accumulators could overflow int32 (depth %lld) and "
                            "saturating would not be exact", (long long)p->kdim);
    return oqc_quant_requant(q, M, p->out_c, 1, &p->rq, why);
}

int oqc_quant_build_conv(Q *q, int i, OqcQNode *qn, char *why) {
    OqcArena *a = q->g->arena;
    const OqcNode *n = &q->g->nodes[i];
    const OqcQuant *qx = cal(q, n->in[0]);
    if (!qx)
        return FAIL("its input has no calibration");
    for (int o = 0; o < n->nout; o++)
        if (!cal(q, n->out[o]))
            return FAIL("its output '%s' has no calibration", TT(q, n->out[o])->name);
    ConvShape s = {.B = n->nin > 2 ? const_f32(q, n->in[2]) : NULL, .bscale = 1.0f};
    if (n->op == OQC_OP_Conv) {
        if (conv_shape(q, i, &s, why) < 0)
            return -1;
    } else {
        fc_shape(q, i, &s);
    }
    if (s.K > INT32_MAX / 4 || s.kdim > INT32_MAX / 4 || s.batch > INT32_MAX || s.C > INT32_MAX)
        return FAIL("too large for 32-bit kernel parameters");
    int64_t kpad = (s.kdim + 3) / 4 * 4;
    s.base.batch = (int32_t)s.batch;
    s.base.in_c = (int32_t)s.C;
    s.base.kdim = (int32_t)s.kdim;
    s.base.kpad = (int32_t)kpad;
    s.base.in_type = qtype(qx);
    /* the input scale each output channel's products carry */
    float *s_in = oqc_arena_alloc(a, (size_t)s.K * sizeof *s_in);
    const float *chs = TT(q, n->in[0])->quant.ch_scale;
    OQC_ASSERT(!chs || (s.base.group == s.C && s.K == s.C));
    for (int64_t k = 0; k < s.K; k++)
        s_in[k] = chs ? chs[k] : qx->scale;
    int8_t *wq;
    float *sw;
    int32_t *bias;
    if (conv_weights(q, &s, s_in, kpad, &wq, &sw, &bias, why) < 0)
        return -1;
    /* One parameter set per output (merged convs: consecutive channel ranges). */
    qn->kind = OQC_Q_CONV;
    qn->nconv = n->nout;
    qn->conv = oqc_arena_alloc(a, (size_t)n->nout * sizeof *qn->conv);
    qn->w_scale = oqc_arena_alloc(a, (size_t)n->nout * sizeof *qn->w_scale);
    int64_t k0 = 0;
    for (int o = 0; o < n->nout; o++) {
        OqciConv *p = &qn->conv[o];
        *p = s.base;
        p->out_c = (int32_t)(n->out_channels ? n->out_channels[o] : s.K);
        p->w = wq + k0 * kpad;
        p->bias = bias ? bias + k0 : NULL;
        qn->w_scale[o] = sw + k0;
        if (conv_output(q, i, o, k0, s_in + k0, sw + k0, p, why) < 0)
            return -1;
        k0 += p->out_c;
    }
    return 0;
}

int oqc_quant_build_deconv(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    OqcArena *a = g->arena;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qx = cal(q, n->in[0]), *qy = cal(q, n->out[0]);
    if (!qx || !qy)
        return FAIL("its input or output has no calibration");
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    OqcWindow w;
    OqcDiag quiet = {0};
    if (oqc_conv_transpose_geometry(g, i, xs, &TT(q, n->in[1])->shape, &w, &quiet) < 0)
        return FAIL("its geometry is not static");
    const float *W = const_f32(q, n->in[1]);
    const float *B = n->nin > 2 && n->in[2] >= 0 ? const_f32(q, n->in[2]) : NULL;
    int64_t C = w.in_channels, K = w.out_channels, G = w.group, Kg = K / G, Cg = C / G;
    int64_t taps = w.kernel[0] * w.kernel[1];
    if (xs->d[0] > INT32_MAX || C > INT32_MAX || K > INT32_MAX || w.out[0] > INT32_MAX ||
        w.out[1] > INT32_MAX || xs->d[2] > INT32_MAX || xs->d[3] > INT32_MAX)
        return FAIL("too large for 32-bit kernel parameters");
    OqciDeconv *p = &qn->deconv;
    qn->kind = OQC_Q_DECONV;
    *p = (OqciDeconv){
        .batch = (int32_t)xs->d[0], .in_c = (int32_t)C, .in_h = (int32_t)xs->d[2],
        .in_w = (int32_t)xs->d[3], .out_c = (int32_t)K, .out_h = (int32_t)w.out[0],
        .out_w = (int32_t)w.out[1], .k_h = (int32_t)w.kernel[0], .k_w = (int32_t)w.kernel[1],
        .s_h = (int32_t)w.stride[0], .s_w = (int32_t)w.stride[1],
        .d_h = (int32_t)w.dilation[0], .d_w = (int32_t)w.dilation[1],
        .p_t = (int32_t)w.pad_begin[0], .p_l = (int32_t)w.pad_begin[1], .group = (int32_t)G,
        .in_type = qtype(qx), .out_type = qtype(qy),
    };
    oqc_quant_clamp_of(&n->act, p->out_type, qy->scale, &p->lo, &p->hi);
    /* per output channel k: its weights are w[c][k mod Kg][.] for the group's c */
    int32_t wmax = oqc_weight_qmax(q->cfg);
    int8_t *wq = oqc_arena_alloc(a, (size_t)(C * Kg * taps) + 1);
    float *sw = oqc_arena_alloc(a, (size_t)K * sizeof *sw);
    int32_t *bias = B ? oqc_arena_alloc(a, (size_t)K * sizeof *bias) : NULL;
    double *M = oqc_arena_alloc(a, (size_t)K * sizeof *M);
    int64_t maxb = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t gk = k / Kg, kk = k % Kg;
        float m = 0;
        for (int64_t c = gk * Cg; c < (gk + 1) * Cg; c++)
            for (int64_t t = 0; t < taps; t++)
                m = fmaxf(m, fabsf(W[(c * Kg + kk) * taps + t]));
        if (!isfinite(m))
            return FAIL("its weights are not finite");
        sw[k] = m > 0 ? m / (float)wmax : OQC_ZERO_RANGE_SCALE;
        for (int64_t c = gk * Cg; c < (gk + 1) * Cg; c++)
            for (int64_t t = 0; t < taps; t++) {
                int64_t j = (c * Kg + kk) * taps + t;
                wq[j] = (int8_t)oqci_round_clamp(W[j] / sw[k], -wmax, wmax);
            }
        double sacc = (double)qx->scale * sw[k];
        if (bias) {
            if (oqc_quant_bias((double)B[k], sacc, k, &bias[k], why) < 0)
                return -1;
            maxb = llabs((long long)bias[k]) > maxb ? llabs((long long)bias[k]) : maxb;
        }
        M[k] = sacc / qy->scale;
    }
    /* the kernel sums exactly in int32: at most Cg * taps products reach one output */
    if ((double)Cg * (double)taps * 255.0 * 127.0 + (double)maxb >= 2147483647.0)
        return FAIL("its int32 sums could overflow (%lld products per output)",
                    (long long)(Cg * taps));
    p->w = wq;
    p->bias = bias;
    qn->nconv = 1;
    qn->w_scale = oqc_arena_alloc(a, sizeof *qn->w_scale);
    qn->w_scale[0] = sw;
    return oqc_quant_requant(q, M, (int)K, 1, &p->rq, why);
}

/* ------------------------------------------------------- step 3b: int32 outputs */

void oqc_quant_conv_sums(Q *q, int i, OqcAcc *acc) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    OqcQNode *qn = n->q;
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    OqciConv *p = &qn->conv[0];
    float *sc = oqc_arena_alloc(g->arena, (size_t)p->out_c * sizeof *sc);
    for (int32_t k = 0; k < p->out_c; k++)
        sc[k] = (float)((double)(qx->ch_scale ? qx->ch_scale[k] : qx->scale) *
                        qn->w_scale[0][k]);
    *acc = (OqcAcc){.outer = p->batch, .inner = (int64_t)p->out_h * p->out_w,
                    .channels = p->out_c, .per_channel = 1, .scale = sc, .rq = p->rq,
                    .type = p->out_type, .lo = p->lo, .hi = p->hi};
    if (n->act.kind == OQCF_ACT_CLIP)
        acc->act = n->act;
    p->out_type = OQCI_S32;
    p->lo = n->act.kind == OQCF_ACT_RELU ? 0 : INT32_MIN;
    p->hi = INT32_MAX;
}

int oqc_quant_widen_conv(Q *q, int i, OqcAcc *acc) {
    const OqcNode *n = &q->g->nodes[i];
    if (n->q->nconv != 1 || n->act_per_channel ||
        (n->act.kind != OQCF_ACT_NONE && n->act.kind != OQCF_ACT_RELU &&
         n->act.kind != OQCF_ACT_CLIP) ||
        TT(q, n->out[0])->quant.ch_scale)   /* (channel scales: its readers are INT8) */
        return 0;
    oqc_quant_conv_sums(q, i, acc);
    return 1;
}
