/* quantize_params.c - pass "quantize", step 3: the kernel parameters of one INT8 node
 * (runtime/int8/oqci.h): per output channel weight scales and int8 weights packed with the
 * depth padded to a multiple of 4, int32 biases, requantization multipliers (float32,
 * or int32 and shift in fixed mode) and output clamps.  The arithmetic of INT8 lives
 * here, apart from quantize.c, which decides which nodes run in INT8 and rewrites the
 * graph around them (see its comment for the whole pass; shared state: quantize_int.h).
 *
 * Overflow: an int32 accumulator holds at most kdim * 255 * 127 plus the bias; the
 * kernels sum depths above OQCI_KCHUNK in int64 and saturate to int32 before
 * requantizing.  Saturation is exact when the requantized result would be clamped
 * anyway, i.e. when 2^31 * M >= 255 for every channel; a node where neither holds stays
 * float (-v says so). */
#include "quantize_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The range of storage type t (OQCI_U8 or OQCI_S8). */
static int32_t type_lo(int32_t t) { return t == OQCI_U8 ? 0 : -127; }
static int32_t type_hi(int32_t t) { return t == OQCI_U8 ? 255 : 127; }

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
void oqc_quant_clamp_of(const OqcfAct *act, int32_t t, float s, int32_t *lo, int32_t *hi) {
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
int oqc_quant_build_conv(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    OqcArena *a = g->arena;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qx = cal(q, n->in[0]);
    if (!qx)
        return FAIL("its input has no calibration");
    for (int o = 0; o < n->nout; o++)
        if (!cal(q, n->out[o]))
            return FAIL("its output '%s' has no calibration", TT(q, n->out[o])->name);
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
        sw[k] = m > 0 ? m / (float)wmax : OQC_ZERO_RANGE_SCALE;
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
        oqc_quant_clamp_of(act, p->out_type, qy->scale, &p->lo, &p->hi);
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

int oqc_quant_build_pool(Q *q, int i, OqcQNode *qn, char *why) {
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

int oqc_quant_build_mul(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    OqcNode *n = &g->nodes[i];
    const OqcTensor *y = TT(q, n->out[0]);
    if (oqc_shape_numel(&TT(q, n->in[0])->shape) != oqc_shape_numel(&y->shape)) {
        int t = n->in[0];   /* input 0 is the full one (kernel's a) */
        n->in[0] = n->in[1];
        n->in[1] = t;
    }
    const OqcQuant *qa = &TT(q, base_of(g, n->in[0]))->quant,
                   *qb = &TT(q, base_of(g, n->in[1]))->quant, *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciMul *p = &qn->mul;
    memset(p, 0, sizeof *p);
    qn->kind = OQC_Q_MUL;
    p->outer = oqc_shape_numel(&TT(q, n->in[1])->shape);
    p->inner = p->outer ? oqc_shape_numel(&y->shape) / p->outer : 0;
    p->a_type = qtype(qa);
    p->b_type = qtype(qb);
    p->out_type = qtype(qy);
    oqc_quant_clamp_of(NULL, p->out_type, qy->scale, &p->lo, &p->hi);
    double M = (double)qa->scale * qb->scale / qy->scale;
    return make_requant(q, &M, 1, 0, &p->rq, why);
}

int oqc_quant_build_add(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciAdd *p = &qn->add;
    memset(p, 0, sizeof *p);
    qn->kind = OQC_Q_ADD;
    p->ninputs = n->nin;
    p->count = oqc_shape_numel(&TT(q, n->out[0])->shape);
    p->out_type = qtype(qy);
    oqc_quant_clamp_of(&n->act, p->out_type, qy->scale, &p->lo, &p->hi);
    for (int k = 0; k < n->nin; k++) {
        const OqcQuant *qx = &TT(q, base_of(g, n->in[k]))->quant;
        double M = 256.0 * qx->scale / qy->scale;
        p->in_type[k] = qtype(qx);
        if (make_requant(q, &M, 1, 0, &p->rq[k], why) < 0)
            return -1;
    }
    return 0;
}

int oqc_quant_build_resize(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcTensor *x = TT(q, n->in[0]);
    OqcResize *r = oqc_arena_alloc(g->arena, sizeof *r);
    OqcDiag quiet = {0};
    if (oqc_resize_plan(g, i, &x->shape, r, g->arena, &quiet) < 0) {
        oqc_diag_free(&quiet);
        return FAIL("its parameters are not static");
    }
    if (r->mode == OQC_RESIZE_CUBIC)
        return FAIL("cubic resampling overshoots its inputs' range (INT8 Resize: nearest "
                    "and linear)");
    if (r->extrapolates)
        return FAIL("tf_crop_and_resize extrapolates with a float value");
    if (x->shape.rank > OQCI_RESIZE_MAX_RANK)
        return FAIL("rank %d (INT8 Resize: at most %d)", x->shape.rank, OQCI_RESIZE_MAX_RANK);
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    g->tensors[n->out[0]].quant = *qx;   /* moves or averages codes: the same scale */
    qn->kind = OQC_Q_RESIZE;
    qn->rs = r;
    qn->in_type = qn->out_type = qtype(qx);
    int weighted = 0;
    for (int k = 0; k < r->naxes; k++)
        weighted += r->axes[k].w != NULL;
    if (!weighted)
        return 0;
    if (r->naxes > 2)
        return FAIL("linear over %d axes (INT8 Resize: at most two)", r->naxes);
    OqciResize *p = &qn->resize;
    memset(p, 0, sizeof *p);
    p->type = qn->in_type;
    p->rank = x->shape.rank;
    for (int k = 0; k < p->rank; k++)
        p->in[k] = x->shape.d[k];
    p->naxes = r->naxes;
    for (int k = 0; k < r->naxes; k++) {
        const OqcfResizeAxis *a = &r->axes[k];
        int16_t *w = oqc_arena_alloc(g->arena, (size_t)(2 * a->out_len) * sizeof *w);
        for (int64_t j = 0; j < a->out_len; j++) {
            /* the second tap's weight to the nearest 2^-BITS, the first the rest */
            double t = floor((double)a->w[2 * j + 1] * (1 << OQCI_RESIZE_BITS) + 0.5);
            w[2 * j + 1] = (int16_t)t;
            w[2 * j] = (int16_t)((1 << OQCI_RESIZE_BITS) - t);
        }
        p->ax[k] = (OqciResizeAxis){a->axis, a->out_len, a->idx, w};
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
    memset(p, 0, sizeof *p);
    qn->kind = OQC_Q_DECONV;
    *p = (OqciDeconv){(int32_t)xs->d[0], (int32_t)C, (int32_t)xs->d[2], (int32_t)xs->d[3],
                      (int32_t)K, (int32_t)w.out[0], (int32_t)w.out[1],
                      (int32_t)w.kernel[0], (int32_t)w.kernel[1], (int32_t)w.stride[0],
                      (int32_t)w.stride[1], (int32_t)w.dilation[0], (int32_t)w.dilation[1],
                      (int32_t)w.pad_begin[0], (int32_t)w.pad_begin[1], (int32_t)G,
                      qtype(qx), qtype(qy), 0, 0, NULL, NULL, {0}};
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
            double r = round_ha((double)B[k] / sacc);
            if (!(fabs(r) < 2147483647.0))
                return FAIL("bias of channel %lld does not fit int32 at scale %g",
                            (long long)k, sacc);
            bias[k] = (int32_t)r;
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
    return make_requant(q, M, (int)K, 1, &p->rq, why);
}
