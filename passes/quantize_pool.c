/* quantize_pool.c - pass "quantize", the pooling kinds: OQC_Q_MAXPOOL (MaxPool:
 * oqci_maxpool) and OQC_Q_AVGPOOL (AveragePool, GlobalAveragePool: oqci_avgpool).  For
 * each, whether a node can run in INT8 (step 1), its kernel parameters (step 3) and, for
 * AVGPOOL, its int32 accumulator output (step 3b); see quantize.c for the pass.
 *
 * Max pooling only moves values: its output keeps its input's scale and runs without
 * requantizing, unless it writes into a concat buffer, whose scale it must take.  An
 * average divides the window's sum by its element count: one multiplier s_x / (s_y *
 * k_h * k_w) when every window counts them all, else one per possible count. */
#include "quantize_int.h"

#include <string.h>

/* ------------------------------------------------------------------ step 1: can it */

int oqc_quant_can_maxpool(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    if (TT(q, n->in[0])->shape.rank != 4)
        return WHY("only 2-D pooling runs in INT8");
    if (n->nout > 1 && n->out[1] >= 0)
        return WHY("its indices output is used");
    if (oqc_attr_int(n, "storage_order", 0))
        return WHY("storage_order 1");
    return 1;
}

int oqc_quant_can_avgpool(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    if (xs->rank != 4)
        return WHY("only 2-D pooling runs in INT8");
    if (n->op == OQC_OP_GlobalAveragePool)
        return 1;
    OqcWindow w;
    OqcDiag quiet = {0};
    if (oqc_pool_geometry(q->g, i, xs, &w, &quiet) < 0)
        return WHY("its geometry is not static");
    if (oqc_attr_int(n, "count_include_pad", 0))
        for (int a = 0; a < 2; a++)
            if ((w.out[a] - 1) * w.stride[a] + w.kernel[a] >
                w.in[a] + w.pad_begin[a] + w.pad_end[a])
                return WHY("count_include_pad with windows past the padding");
    return 1;
}

/* ------------------------------------------------------------- step 3: parameters */

/* Node i's kind and its OqciPool but the requantization (geometry, types, view,
 * clamp); *qx and *qy the input's and the output's quantization (a max pooling's output,
 * unless it writes a concat buffer, takes its input's); 0, or -1 with why. */
static int pool_params(Q *q, int i, OqcQKind kind, OqcQNode *qn, const OqcQuant **qx,
                       const OqcQuant **qy, char *why) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const OqcShape *xs = &TT(q, n->in[0])->shape;
    if (!(*qx = cal(q, n->in[0])))
        return FAIL("its input has no calibration");
    if (kind == OQC_Q_MAXPOOL && g->tensors[n->out[0]].view_base < 0)
        g->tensors[n->out[0]].quant = **qx;
    *qy = &TT(q, base_of(g, n->out[0]))->quant;
    qn->kind = kind;
    OqciPool *p = &qn->pool;
    *p = (OqciPool){.batch = (int32_t)xs->d[0], .channels = (int32_t)xs->d[1],
                    .in_h = (int32_t)xs->d[2], .in_w = (int32_t)xs->d[3]};
    if (n->op == OQC_OP_GlobalAveragePool) {
        p->k_h = p->in_h;
        p->k_w = p->in_w;
        p->out_h = p->out_w = 1;
        p->s_h = p->s_w = p->d_h = p->d_w = 1;
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
    p->in_type = qtype(*qx);
    p->out_type = qtype(*qy);
    oqc_quant_view_of(q, n->out[0], &p->out_ctotal, &p->out_coff);
    oqc_quant_clamp_of(NULL, p->out_type, 0.0f, &p->lo, &p->hi);
    return 0;
}

int oqc_quant_build_maxpool(Q *q, int i, OqcQNode *qn, char *why) {
    const OqcQuant *qx, *qy;
    if (pool_params(q, i, OQC_Q_MAXPOOL, qn, &qx, &qy, why) < 0)
        return -1;
    OqciPool *p = &qn->pool;
    p->requant = qx->scale != qy->scale || p->in_type != p->out_type;
    if (!p->requant)
        return 0;
    double M = (double)qx->scale / qy->scale;
    return oqc_quant_requant(q, &M, 1, 0, &p->rq, why);
}

int oqc_quant_build_avgpool(Q *q, int i, OqcQNode *qn, char *why) {
    const OqcQuant *qx, *qy;
    if (pool_params(q, i, OQC_Q_AVGPOOL, qn, &qx, &qy, why) < 0)
        return -1;
    OqciPool *p = &qn->pool;
    int64_t window = (int64_t)p->k_h * p->k_w;
    if (window > 1 << 20)
        return FAIL("window of %lld elements", (long long)window);
    double base = (double)qx->scale / qy->scale;
    if (q->g->nodes[i].op == OQC_OP_GlobalAveragePool || p->count_include_pad ||
        (p->p_t == 0 && p->p_l == 0 && (int64_t)(p->out_h - 1) * p->s_h + p->k_h <= p->in_h &&
         (int64_t)(p->out_w - 1) * p->s_w + p->k_w <= p->in_w)) {
        /* every window counts k_h * k_w elements: one multiplier */
        double M = base / (double)window;
        p->count_include_pad = 1;
        return oqc_quant_requant(q, &M, 1, 0, &p->rq, why);
    }
    double *M = oqc_arena_alloc(q->g->arena, (size_t)(window + 1) * sizeof *M);
    for (int64_t c = 1; c <= window; c++)
        M[c] = base / (double)c;
    return oqc_quant_requant(q, M, (int)window + 1, 1, &p->rq, why);
}

/* ------------------------------------------------------- step 3b: int32 outputs */

int oqc_quant_widen_avgpool(Q *q, int i, OqcAcc *acc) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    OqciPool *p = &n->q->pool;
    if (p->rq.per_index)   /* a multiplier per window size: no one accumulator scale */
        return 0;
    const OqcQuant *qx = &TT(q, base_of(g, n->in[0]))->quant;
    float *sc = oqc_arena_alloc(g->arena, sizeof *sc);
    sc[0] = (float)((double)qx->scale / ((double)p->k_h * p->k_w));
    *acc = (OqcAcc){.outer = p->batch, .inner = (int64_t)p->out_h * p->out_w,
                    .channels = p->channels, .per_channel = 0, .scale = sc, .rq = p->rq,
                    .type = p->out_type, .lo = p->lo, .hi = p->hi};
    p->out_type = OQCI_S32;
    p->lo = INT32_MIN;
    p->hi = INT32_MAX;
    return 1;
}
