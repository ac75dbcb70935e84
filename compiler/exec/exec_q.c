/* exec_q.c - the executor's INT8 part: nodes the quantize pass lowered (OqcNode.q) run
 * the runtime/int8/oqci.h kernels with the parameter structs the pass built.  The C emitter
 * writes the same structs and the same calls, so `oqc eval` and the emitted code give
 * the same bits. */
#include "exec_int.h"

/* Where output k is written: conv and pool kernels take the concat buffer itself and
 * add out_coff; element-wise kernels the tensor (a view is contiguous at batch 1). */
static void *q_out(OqcExec *e, int node, int k) {
    const OqcTensor *t = T(e, N(e, node)->out[k]);
    return (void *)(t->view_base >= 0 ? e->ptr[t->view_base] : e->ptr[N(e, node)->out[k]]);
}

static int run_q(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const OqcQNode *q = n->q;
    switch (q->kind) {
    case OQC_Q_CONV:
        for (int k = 0; k < q->nconv; k++)   /* (e->pool NULL: one thread, oqci_conv) */
            CHECK(oqci_conv_par(&q->conv[k], XIN(e, node, 0), q_out(e, node, k), e->scratch,
                                oqcf_pool_threads(e->pool), e->pool ? e->pool->run : NULL,
                                e->pool ? e->pool->ctx : NULL));
        return 0;
    case OQC_Q_DECONV:
        CHECK(oqci_deconv(&q->deconv, XIN(e, node, 0), YOUT(e, node, 0), e->scratch));
        return 0;
    case OQC_Q_MAXPOOL:
        CHECK(oqci_maxpool(&q->pool, XIN(e, node, 0), q_out(e, node, 0)));
        return 0;
    case OQC_Q_AVGPOOL:
        CHECK(oqci_avgpool(&q->pool, XIN(e, node, 0), q_out(e, node, 0)));
        return 0;
    case OQC_Q_ADD: {
        const void *xs[OQCI_ADD_MAX];
        for (int k = 0; k < n->nin; k++)
            xs[k] = XIN(e, node, k);
        CHECK(oqci_add(&q->add, xs, YOUT(e, node, 0)));
        return 0;
    }
    case OQC_Q_CLAMP:
        CHECK(oqci_clamp(XIN(e, node, 0), q->in_type, YOUT(e, node, 0), q->out_type, q->count,
                         q->lo, q->hi));
        return 0;
    case OQC_Q_MUL:
        CHECK(oqci_mul(&q->mul, XIN(e, node, 0), XIN(e, node, 1), YOUT(e, node, 0)));
        return 0;
    case OQC_Q_LUT:
        CHECK(oqci_lut(XIN(e, node, 0), YOUT(e, node, 0), q->count, q->table));
        return 0;
    case OQC_Q_QUANTIZE:
        CHECK(oqci_quantize(XIN(e, node, 0), YOUT(e, node, 0), q->out_type, q->count,
                            q->scale));
        return 0;
    case OQC_Q_DEQUANTIZE:
        if (q->acc)
            CHECK(oqci_dequantize_s32(XIN(e, node, 0), YOUT(e, node, 0), q->acc->outer,
                                      q->acc->channels, q->acc->inner, q->acc->scale,
                                      q->acc->per_channel));
        else
            CHECK(oqci_dequantize(XIN(e, node, 0), q->in_type, YOUT(e, node, 0), q->count,
                                  q->scale));
        return 0;
    case OQC_Q_RESIZE:
        if (q->resize.naxes)
            CHECK(oqci_resize(&q->resize, XIN(e, node, 0), YOUT(e, node, 0)));
        else   /* nearest: codes moved as bytes */
            CHECK(oqcf_resize(XIN(e, node, 0), SH(e, node, 0), q->rs->axes, q->rs->naxes, 0.0f,
                              1, YOUT(e, node, 0), e->scratch, e->scratch_bytes));
        return 0;
    case OQC_Q_VIEW:
        return 0;
    }
    return oqc_err_node(e->d, e->g, node, "internal: unknown INT8 kernel %d", (int)q->kind);
}

int oqc_exec_prepare_q(OqcExec *e, int node, OqcDiag *d) {
    const OqcQNode *q = N(e, node)->q;
    ExecNode *x = EN(e, node);
    (void)d;
    x->run = q->kind == OQC_Q_VIEW ? NULL : run_q;
    x->kind = q->kind == OQC_Q_VIEW ? EXEC_NONE : EXEC_Q;
    x->scratch = x->scratch_noamx = 0;
    if (q->kind == OQC_Q_DECONV)
        x->scratch = x->scratch_noamx = oqci_deconv_scratch(&q->deconv);
    if (q->kind == OQC_Q_RESIZE && !q->resize.naxes)
        x->scratch = x->scratch_noamx =
            oqcf_resize_scratch_size(SH(e, node, 0), q->rs->axes, q->rs->naxes, 1);
    for (int k = 0; q->kind == OQC_Q_CONV && k < q->nconv; k++) {
        int nt = oqcf_pool_threads(e->pool);
        size_t s = oqci_conv_par_scratch(&q->conv[k], nt);
        size_t sn = oqci_conv_par_scratch_noamx(&q->conv[k], nt);
        if (s > x->scratch)
            x->scratch = s;
        if (sn > x->scratch_noamx)
            x->scratch_noamx = sn;
    }
    return 0;
}
