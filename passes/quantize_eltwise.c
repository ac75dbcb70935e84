/* quantize_eltwise.c - pass "quantize", the element-wise and data-movement kinds:
 * OQC_Q_ADD (Add, Sum with a fused Relu/Clip: oqci_add), OQC_Q_MUL (Mul of two
 * activations: oqci_mul), and the kinds that follow their input into INT8 at its scale:
 * OQC_Q_CLAMP (Relu, Clip: oqci_clamp), OQC_Q_RESIZE (Resize, Upsample), OQC_Q_TRANSPOSE,
 * OQC_Q_VIEW (Flatten, Reshape, ...) and OQC_Q_MOVE (Slice, Split); and OQC_Q_CONCAT
 * (Concat: oqci_concat, the inputs at their own scales).  For each, whether a node can
 * run in INT8 (step 1, ADD, MUL and CONCAT) and its kernel parameters (step 3); see
 * quantize.c for the pass.
 * Element-wise functions of one tensor are tables (quantize_lut.c). */
#include "quantize_int.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ step 1: can it */

int oqc_quant_can_add(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    if (n->nin < 2 || n->nin > OQCI_ADD_MAX)
        return WHY("%d inputs (INT8 adds take 2 to %d)", n->nin, OQCI_ADD_MAX);
    for (int k = 0; k < n->nin; k++) {
        const OqcTensor *x = n->in[k] >= 0 ? TT(q, n->in[k]) : NULL;
        if (!x || x->is_const || !oqc_shape_equal(&x->shape, &TT(q, n->out[0])->shape))
            return WHY("its inputs are not same-shape activations (no broadcast)");
    }
    return 1;
}

/* A full activation times one that is the same or constant over its trailing dims (a
 * squeeze-excitation gate): oqci_mul's (outer, inner) blocks. */
int oqc_quant_can_mul(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape, *ys = &TT(q, n->out[0])->shape;
    if (n->nin != 2 || n->in[1] < 0 || TT(q, n->in[0])->is_const ||
        TT(q, n->in[1])->is_const || TT(q, n->in[1])->dtype != OQCF_FLOAT)
        return WHY("INT8 Mul takes two activations (not a constant)");
    if (TT(q, n->out[0])->view_base >= 0)
        return WHY("it writes into a concat buffer");
    int full = oqc_shape_equal(xs, ys) ? 0 : 1;
    const OqcShape *bs = &TT(q, n->in[1 - full])->shape;
    if (!oqc_shape_equal(&TT(q, n->in[full])->shape, ys))
        return WHY("neither input has the output's shape");
    int off = ys->rank - bs->rank, k = ys->rank;
    while (k > 0 && (k - 1 < off || bs->d[k - 1 - off] == 1))
        k--;   /* the trailing dims where the other input is 1 */
    for (int j = 0; j < k; j++)
        if (j < off || bs->d[j - off] != ys->d[j])
            return WHY("its broadcast is not one value per block of trailing elements");
    return 1;
}

/* ------------------------------------------------------------- step 3: parameters */

/* Each input requantized to the output's scale with 8 fraction bits (M_k = 256 s_k /
 * s_y), summed, clamped to the fused activation. */
int oqc_quant_build_add(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciAdd *p = &qn->add;
    qn->kind = OQC_Q_ADD;
    *p = (OqciAdd){.ninputs = n->nin, .count = oqc_shape_numel(&TT(q, n->out[0])->shape),
                   .out_type = qtype(qy)};
    oqc_quant_clamp_of(&n->act, p->out_type, qy->scale, &p->lo, &p->hi);
    for (int k = 0; k < n->nin; k++) {
        const OqcQuant *qx = &TT(q, base_of(g, n->in[k]))->quant;
        double M = 256.0 * qx->scale / qy->scale;
        p->in_type[k] = qtype(qx);
        if (oqc_quant_requant(q, &M, 1, 0, &p->rq[k], why) < 0)
            return -1;
    }
    return 0;
}

/* The clamp of a channel's sums at scale s with multiplier M (s * 256 / s_y) for the
 * conv's activation act: the sums whose value s * acc lies in [p0, p1] (Clip), >= 0
 * (Relu), and in any case |acc| * M <= 2^28.  Beyond that bound the Add's output
 * saturates whatever the other input (|t_1| < 2^27, checked by the caller), so the
 * bound changes no result, and it keeps every t_0 well below 2^30 (also with M rounded
 * to float), where the kernel's AVX2 steps are exact. */
static void acc_clamp(const OqcfAct *act, double s, double M, int32_t *lo, int32_t *hi) {
    double a = floor(268435456.0 / M);
    double l = act->kind == OQCF_ACT_RELU ? 0.0
             : act->kind == OQCF_ACT_CLIP ? ceil((double)act->p0 / s)
                                          : -INFINITY;
    double h = act->kind == OQCF_ACT_CLIP ? floor((double)act->p1 / s) : INFINITY;
    l = l < -a ? -a : l;
    h = h > a ? a : h;
    *lo = l <= INT32_MIN ? INT32_MIN : l >= INT32_MAX ? INT32_MAX : (int32_t)l;
    *hi = h <= INT32_MIN ? INT32_MIN : h >= INT32_MAX ? INT32_MAX : (int32_t)h;
    if (*hi < *lo)
        *hi = *lo;
}

int oqc_quant_fuse_residual(Q *q, int i) {
    OqcGraph *g = q->g;
    OqcNode *n = &g->nodes[i];
    OqciAdd *p = &n->q->add;
    if (n->q->kind != OQC_Q_ADD || p->ninputs != 2 || p->in_type[0] == OQCI_S32)
        return 0;
    for (int k = 0; k < 2; k++) {
        int t = n->in[k];
        OqcTensor *x = &g->tensors[t];
        if (x->producer < 0 || !q->int8[x->producer] || x->nconsumers != 1 || x->is_output ||
            x->view_base >= 0 || x->acc || x->quant.ch_scale || n->in[1 - k] == t)
            continue;
        const OqcNode *cn = &g->nodes[x->producer];
        OqciConv *cp = cn->q->kind == OQC_Q_CONV && cn->q->nconv == 1 && cn->nout == 1
                           ? &cn->q->conv[0] : NULL;
        if (!cp || cn->op != OQC_OP_Conv || cn->act_per_channel || cp->out_type == OQCI_S32 ||
            cp->out_ctotal != cp->out_c || cp->out_coff != 0 ||
            (cn->act.kind != OQCF_ACT_NONE && cn->act.kind != OQCF_ACT_RELU &&
             cn->act.kind != OQCF_ACT_CLIP))
            continue;
        const OqcQuant *qx = &TT(q, base_of(g, cn->in[0]))->quant, *qy = cal(q, n->out[0]);
        const OqcQuant *qr = &TT(q, n->in[1 - k])->quant;   /* the other input */
        if (!(255.0 * 256.0 * qr->scale / qy->scale < 134217728.0))
            continue;
        int32_t K = cp->out_c;
        double *M = oqc_arena_alloc(g->arena, (size_t)K * sizeof *M);
        int32_t *lo = oqc_arena_alloc(g->arena, (size_t)K * sizeof *lo);
        int32_t *hi = oqc_arena_alloc(g->arena, (size_t)K * sizeof *hi);
        for (int32_t c = 0; c < K; c++) {
            double s = (double)(qx->ch_scale ? qx->ch_scale[c] : qx->scale) *
                       cn->q->w_scale[0][c];
            M[c] = 256.0 * s / qy->scale;
            acc_clamp(&cn->act, s, M[c], &lo[c], &hi[c]);
        }
        OqciRequant rq;
        char why[OQC_WHY_SIZE];
        if (oqc_quant_requant(q, M, K, 1, &rq, why) < 0)
            continue;
        if (k == 1) {   /* the sums become input 0 */
            n->in[1] = n->in[0];
            n->in[0] = t;
            p->in_type[1] = p->in_type[0];
            p->rq[1] = p->rq[0];
        }
        p->in_type[0] = OQCI_S32;
        p->rq[0] = rq;
        p->acc_channels = K;
        p->acc_inner = (int64_t)cp->out_h * cp->out_w;
        p->acc_lo = lo;
        p->acc_hi = hi;
        /* the conv writes its sums; the tensor's OqcAcc describes them (storage type,
         * per-layer SQNR, export-qdq: no 8-bit pair between the conv and the Add) */
        OqcAcc acc;
        oqc_quant_conv_sums(q, x->producer, &acc);
        x->acc = oqc_arena_dup(g->arena, &acc, sizeof acc);
        oqc_info(q->d, "quantize: '%s' (%s) adds the int32 sums of '%s' (%s): no 8-bit "
                       "rounding between them", n->name, n->op_type, cn->name, cn->op_type);
        return 1;
    }
    return 0;
}

/* The full input becomes input 0 (the kernel's a; the inputs are swapped when the
 * broadcast one came first); M = s_a s_b / s_y. */
int oqc_quant_build_mul(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    OqcNode *n = &g->nodes[i];
    const OqcTensor *y = TT(q, n->out[0]);
    if (oqc_shape_numel(&TT(q, n->in[0])->shape) != oqc_shape_numel(&y->shape)) {
        int t = n->in[0];
        n->in[0] = n->in[1];
        n->in[1] = t;
    }
    const OqcQuant *qa = &TT(q, base_of(g, n->in[0]))->quant,
                   *qb = &TT(q, base_of(g, n->in[1]))->quant,
                   *qy = &TT(q, base_of(g, n->out[0]))->quant;
    OqciMul *p = &qn->mul;
    qn->kind = OQC_Q_MUL;
    int64_t outer = oqc_shape_numel(&TT(q, n->in[1])->shape);
    *p = (OqciMul){.outer = outer, .inner = outer ? oqc_shape_numel(&y->shape) / outer : 0,
                   .a_type = qtype(qa), .b_type = qtype(qb), .out_type = qtype(qy)};
    oqc_quant_clamp_of(NULL, p->out_type, qy->scale, &p->lo, &p->hi);
    double M = (double)qa->scale * qb->scale / qy->scale;
    return oqc_quant_requant(q, &M, 1, 0, &p->rq, why);
}

/* LayerNormalization node i: its rows (elements before its axis) and n (from it on). */
static void ln_rows(const Q *q, int i, int64_t *rows, int64_t *n) {
    const OqcNode *nd = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, nd->in[0])->shape;
    int64_t axis = oqc_attr_int(nd, "axis", -1);
    if (axis < 0)
        axis += xs->rank;
    *n = 1;
    for (int k = (int)axis; k < xs->rank; k++)
        *n *= xs->d[k];
    *rows = *n ? oqc_shape_numel(xs) / *n : 0;
}

int oqc_quant_can_layernorm(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    int64_t rows, cnt;
    for (int k = 1; k < n->nout; k++)
        if (n->out[k] >= 0 && (TT(q, n->out[k])->nconsumers || TT(q, n->out[k])->is_output))
            return WHY("its Mean or InvStdDev output is read");
    if (!oqc_shape_known(&TT(q, n->in[0])->shape) || !cal(q, n->in[0]))
        return WHY("its input has no static shape or no calibration");
    ln_rows(q, i, &rows, &cnt);
    if (cnt < 1 || cnt > OQCI_LN_MAX)
        return WHY("its rows have %lld elements (1 to %d in INT8)", (long long)cnt, OQCI_LN_MAX);
    if (!const_f32(q, n->in[1]) || (n->nin > 2 && n->in[2] >= 0 && !const_f32(q, n->in[2])))
        return WHY("its scale or bias is not a float constant");
    return 1;
}

/* oqci_layernorm's integers (oqci.h): eps in the units of the codes' V, gamma / s_y and
 * beta / s_y in 2^-8 output steps, gamma with as many more fraction bits as int32 holds
 * (a bit to spare). */
int oqc_quant_build_layernorm(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant,
                   *qy = &TT(q, base_of(g, n->out[0]))->quant;
    const float *gm = const_f32(q, n->in[1]);
    const float *bt = n->nin > 2 && n->in[2] >= 0 ? const_f32(q, n->in[2]) : NULL;
    int64_t rows, cnt;
    ln_rows(q, i, &rows, &cnt);
    double eps = oqc_attr_float(n, "epsilon", 1e-5f), unit = 256.0 / qy->scale, gmax = 0;
    double e = eps * (double)cnt * (double)cnt / ((double)qx->scale * qx->scale) *
               (1 << OQCI_LN_EPS_BITS);
    if (!(e >= 0) || e > 0x1p60)
        return FAIL("its epsilon (%g) is negative or outweighs its input's range", eps);
    for (int64_t j = 0; j < cnt; j++)
        gmax = fmax(gmax, fabs(gm[j] * unit));
    int shift = gmax > 0 ? (int)floor(log2(0x1p30 / gmax)) : 46;
    if (!isfinite(gmax) || shift < 0)
        return FAIL("its scale is too large for its output scale %g", (double)qy->scale);
    shift = shift > 46 ? 46 : shift;
    int32_t *gq = oqc_arena_alloc(g->arena, (size_t)cnt * sizeof *gq);
    int32_t *bq = oqc_arena_alloc(g->arena, (size_t)cnt * sizeof *bq);
    for (int64_t j = 0; j < cnt; j++) {
        double bj = bt ? round(bt[j] * unit) : 0.0;
        if (!(fabs(bj) <= 0x1p30))
            return FAIL("its bias is out of range at output scale %g", (double)qy->scale);
        gq[j] = (int32_t)round(gm[j] * unit * ldexp(1.0, shift));
        bq[j] = (int32_t)bj;
    }
    qn->kind = OQC_Q_LAYERNORM;
    qn->ln = (OqciLayerNorm){.rows = rows, .n = cnt, .in_type = qtype(qx),
                             .out_type = qtype(qy), .eps_q = (int64_t)round(e),
                             .gamma_shift = shift, .gamma = gq, .beta = bq};
    oqc_quant_clamp_of(NULL, qn->ln.out_type, qy->scale, &qn->ln.lo, &qn->ln.hi);
    return 0;
}

/* The kinds below follow their input (INT8 when it is) and keep its scale. */

/* Relu/Clip: a clamp to the activation's bounds at the input's scale. */
int oqc_quant_build_clamp(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    OqcfAct act;
    if (!oqc_pass_act_of(g, i, &act, why))
        return FAIL("its bounds are not constants");
    const OqcQuant *qx = &g->tensors[base_of(g, n->in[0])].quant;
    qn->kind = OQC_Q_CLAMP;
    qn->in_type = qn->out_type = qtype(qx);
    qn->count = oqc_shape_numel(&g->tensors[n->out[0]].shape);
    oqc_quant_clamp_of(&act, qn->out_type, qx->scale, &qn->lo, &qn->hi);
    g->tensors[n->out[0]].quant = *qx;
    return 0;
}

/* Resize / Upsample: nearest (any axes) moves codes; linear over at most two axes is
 * oqci_resize, each output the weighted sum of two inputs per axis (weights in
 * 2^-OQCI_RESIZE_BITS). Cubic overshoots its inputs' range: it stays float. */
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
    *p = (OqciResize){.type = qn->in_type, .rank = x->shape.rank, .naxes = r->naxes};
    for (int k = 0; k < p->rank; k++)
        p->in[k] = x->shape.d[k];
    for (int k = 0; k < r->naxes; k++) {
        const OqcfResizeAxis *a = &r->axes[k];
        int16_t *w = oqc_arena_alloc(g->arena, (size_t)(2 * a->out_len) * sizeof *w);
        for (int64_t j = 0; j < a->out_len; j++) {
            /* the second tap's weight to the nearest 2^-BITS, the first the rest */
            double t = floor((double)a->w[2 * j + 1] * (1 << OQCI_RESIZE_BITS) + 0.5);
            w[2 * j + 1] = (int16_t)t;
            w[2 * j] = (int16_t)((1 << OQCI_RESIZE_BITS) - t);
        }
        p->ax[k] = (OqciResizeAxis){.axis = a->axis, .out_len = a->out_len, .idx = a->idx,
                                    .w = w};
    }
    return 0;
}

/* Flatten, Reshape, ...: nothing runs; the output is the input's bytes and scale. */
int oqc_quant_build_view(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    (void)why;
    qn->kind = OQC_Q_VIEW;
    g->tensors[n->out[0]].quant = g->tensors[base_of(g, n->in[0])].quant;
    return 0;
}

/* OQC_Q_TRANSPOSE: a move of the codes (oqcf_transpose on one-byte elements), so the
 * output keeps the input's scale and type; the FP32 op's permutation (DepthToSpace and
 * SpaceToDepth: of their 6-D view of the input). */
int oqc_quant_build_transpose(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    (void)why;
    if (n->op == OQC_OP_Transpose)
        oqc_transpose_perm(n, TT(q, n->in[0])->shape.rank, qn->perm);
    else
        oqc_space_depth_view(n, &TT(q, n->in[0])->shape, &qn->view, qn->perm);
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    g->tensors[n->out[0]].quant = *qx;
    qn->kind = OQC_Q_TRANSPOSE;
    qn->in_type = qn->out_type = qtype(qx);
    return 0;
}

/* Concat: activations along one axis; each input's scale and type its own. At most
 * OQC_CONCAT_MAX_IN inputs (the FP32 Concat's limit too). */
int oqc_quant_can_concat(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    if (n->nin > OQC_CONCAT_MAX_IN)
        return WHY("%d inputs (INT8 Concat takes at most %d)", n->nin, OQC_CONCAT_MAX_IN);
    if (n->nout != 1 || TT(q, n->out[0])->view_base >= 0)
        return WHY("it writes into a concat buffer");
    for (int k = 0; k < n->nin; k++) {
        const OqcTensor *x = n->in[k] >= 0 ? TT(q, n->in[k]) : NULL;
        if (!x || x->is_const || x->dtype != OQCF_FLOAT || x->view_base >= 0)
            return WHY("input %d is not a float activation", k);
    }
    return 1;
}

/* Input k: copied when it has the output's scale and type, else requantized with
 * M = s_k / s_y (oqci_requant: float32 M, or fixed point).  Every input must be INT8
 * already (the Concat moves codes; Quantize nodes in front of it would only add
 * rounding to values the float Concat passes on exactly). */
int oqc_quant_build_concat(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcShape *ys = &TT(q, n->out[0])->shape;
    const OqcQuant *qy = cal(q, n->out[0]);
    int axis = (int)oqc_attr_int(n, "axis", 0);
    axis += axis < 0 ? ys->rank : 0;
    if (!qy || axis < 0 || axis >= ys->rank)
        return FAIL("its output has no calibration or axis %d is out of range", axis);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ys->rank; d++)
        if (d < axis)
            outer *= ys->d[d];
        else if (d > axis)
            inner *= ys->d[d];
    OqciConcatPart *part = oqc_arena_alloc(g->arena, (size_t)n->nin * sizeof *part);
    OqciConcat *p = &qn->concat;
    qn->kind = OQC_Q_CONCAT;
    *p = (OqciConcat){.outer = outer, .ninputs = n->nin, .out_type = qtype(qy), .part = part};
    oqc_quant_clamp_of(NULL, p->out_type, qy->scale, &p->lo, &p->hi);
    for (int k = 0; k < n->nin; k++) {
        const OqcQuant *qx = cal(q, n->in[k]);
        /* a float input would be rounded here only: the float Concat keeps its value */
        if (!q->qdom[n->in[k]])
            return FAIL("input '%s' is not INT8", TT(q, n->in[k])->name);
        if (!qx || qx->ch_scale)
            return FAIL("input '%s' has no single calibrated scale", TT(q, n->in[k])->name);
        part[k] = (OqciConcatPart){.size = TT(q, n->in[k])->shape.d[axis] * inner,
                                   .in_type = qtype(qx)};
        if (qx->scale == qy->scale && part[k].in_type == p->out_type)
            continue;   /* the same codes */
        double M = (double)qx->scale / qy->scale;
        part[k].requant = 1;
        if (oqc_quant_requant(q, &M, 1, 0, &part[k].rq, why) < 0)
            return -1;
    }
    return 0;
}

/* Slice, Split: the codes moved by the FP32 op's kernel (one-byte elements); every
 * output keeps the input's scale and type. */
int oqc_quant_build_move(Q *q, int i, OqcQNode *qn, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    (void)why;
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    for (int k = 0; k < n->nout; k++)
        g->tensors[n->out[k]].quant = *qx;
    qn->kind = OQC_Q_MOVE;
    qn->in_type = qn->out_type = qtype(qx);
    return 0;
}
