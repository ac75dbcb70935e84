/* exec_q.c - the executor's INT8 part: nodes the quantize pass lowered (OqcNode.q) run
 * the runtime/int8/oqci.h kernels with the parameter structs the pass built.
 *
 * One run function per OqcQKind (ir.h), in the enum's order; the C emitter
 * (backend/emit_q.c) has one function per kind in the same order that writes the same
 * structs and the same calls, so `oqc eval` and the emitted code give the same bits. */
#include "exec_int.h"

/* Where output k is written: conv and pool kernels take the concat buffer itself and
 * add out_coff; element-wise kernels the tensor (a view is contiguous at batch 1). */
static void *q_out(OqcExec *e, int node, int k) {
    const OqcTensor *t = T(e, N(e, node)->out[k]);
    return (void *)(t->view_base >= 0 ? e->ptr[t->view_base] : e->ptr[N(e, node)->out[k]]);
}

/* The thread arguments of the _par kernels (oqci.h): e->pool's threads and parallel-for;
 * e->pool NULL: one thread, the plain kernel. */
#define PAR_ARGS(e) oqcf_pool_threads((e)->pool), (e)->pool ? (e)->pool->run : NULL, \
                    (e)->pool ? (e)->pool->ctx : NULL

/* OQC_Q_CONV: one oqci_conv per output (split over e->pool's threads when it has one). */
static int run_conv(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    for (int k = 0; k < q->nconv; k++)
        CHECK(oqci_conv_par(&q->conv[k], XIN(e, node, 0), q_out(e, node, k), e->scratch,
                            PAR_ARGS(e)));
    return 0;
}

static int run_deconv(OqcExec *e, int node) {
    CHECK(oqci_deconv(&N(e, node)->q->deconv, XIN(e, node, 0), YOUT(e, node, 0), e->scratch));
    return 0;
}

/* Pools and sums: split over e->pool's threads as convs are (oqci.h, "Threads for
 * pooling and sums"). */
static int run_maxpool(OqcExec *e, int node) {
    CHECK(oqci_maxpool_par(&N(e, node)->q->pool, XIN(e, node, 0), q_out(e, node, 0),
                           PAR_ARGS(e)));
    return 0;
}

static int run_avgpool(OqcExec *e, int node) {
    CHECK(oqci_avgpool_par(&N(e, node)->q->pool, XIN(e, node, 0), q_out(e, node, 0),
                           PAR_ARGS(e)));
    return 0;
}

static int run_add(OqcExec *e, int node) {
    const void *xs[OQCI_ADD_MAX];
    for (int k = 0; k < N(e, node)->nin; k++)
        xs[k] = XIN(e, node, k);
    CHECK(oqci_add_par(&N(e, node)->q->add, xs, YOUT(e, node, 0), PAR_ARGS(e)));
    return 0;
}

static int run_mul(OqcExec *e, int node) {
    CHECK(oqci_mul_par(&N(e, node)->q->mul, XIN(e, node, 0), XIN(e, node, 1), YOUT(e, node, 0),
                       PAR_ARGS(e)));
    return 0;
}

static int run_layernorm(OqcExec *e, int node) {
    CHECK(oqci_layernorm(&N(e, node)->q->ln, XIN(e, node, 0), YOUT(e, node, 0)));
    return 0;
}

static int run_clamp(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    CHECK(oqci_clamp(XIN(e, node, 0), q->in_type, YOUT(e, node, 0), q->out_type, q->count,
                     q->lo, q->hi));
    return 0;
}

static int run_lut(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    CHECK(oqci_lut_par(XIN(e, node, 0), YOUT(e, node, 0), q->count, q->table, PAR_ARGS(e)));
    return 0;
}

/* OQC_Q_RESIZE: linear runs oqci_resize; nearest moves the codes as bytes with the
 * float kernel's tables. */
static int run_resize(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    if (q->resize.naxes)
        CHECK(oqci_resize(&q->resize, XIN(e, node, 0), YOUT(e, node, 0)));
    else
        CHECK(oqcf_resize(XIN(e, node, 0), SH(e, node, 0), q->rs->axes, q->rs->naxes, 0.0f, 1,
                          YOUT(e, node, 0), e->scratch, e->scratch_bytes));
    return 0;
}

/* OQC_Q_TRANSPOSE: the codes moved as one-byte elements. */
static int run_transpose(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    CHECK(oqcf_transpose(XIN(e, node, 0), q->view.rank ? &q->view : SH(e, node, 0), q->perm, 1,
                         YOUT(e, node, 0)));
    return 0;
}

/* OQC_Q_CONCAT: oqci_concat on the inputs' codes. */
static int run_concat(OqcExec *e, int node) {
    const void *xs[OQC_CONCAT_MAX_IN];
    for (int k = 0; k < N(e, node)->nin; k++)
        xs[k] = XIN(e, node, k);
    CHECK(oqci_concat(&N(e, node)->q->concat, xs, YOUT(e, node, 0)));
    return 0;
}

static int run_quantize(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    CHECK(oqci_quantize(XIN(e, node, 0), YOUT(e, node, 0), q->out_type, q->count, q->scale));
    return 0;
}

/* OQC_Q_DEQUANTIZE: of s8/u8 codes, or of an accumulator tensor (per channel scales). */
static int run_dequantize(OqcExec *e, int node) {
    const OqcQNode *q = N(e, node)->q;
    if (q->acc) {
        const OqcAcc *a = q->acc;
        CHECK(oqci_dequantize_s32(XIN(e, node, 0), YOUT(e, node, 0), a->outer, a->channels,
                                  a->inner, a->scale, a->per_channel));
        if (a->act.kind == OQCF_ACT_CLIP)
            CHECK(oqcf_clip(YOUT(e, node, 0), YOUT(e, node, 0),
                            a->outer * a->channels * a->inner, a->act.p0, a->act.p1));
    } else
        CHECK(oqci_dequantize(XIN(e, node, 0), q->in_type, YOUT(e, node, 0), q->count,
                              q->scale));
    return 0;
}

/* The run function per kind; NULL: nothing runs (OQC_Q_VIEW, a view of its input). */
static int (*const run_kind[OQC_Q_KIND_COUNT])(OqcExec *e, int node) = {
    [OQC_Q_CONV] = run_conv,
    [OQC_Q_DECONV] = run_deconv,
    [OQC_Q_MAXPOOL] = run_maxpool,
    [OQC_Q_AVGPOOL] = run_avgpool,
    [OQC_Q_ADD] = run_add,
    [OQC_Q_MUL] = run_mul,
    [OQC_Q_CLAMP] = run_clamp,
    [OQC_Q_LUT] = run_lut,
    [OQC_Q_VIEW] = NULL,
    [OQC_Q_RESIZE] = run_resize,
    [OQC_Q_TRANSPOSE] = run_transpose,
    [OQC_Q_CONCAT] = run_concat,
    [OQC_Q_MOVE] = NULL,   /* prepared as the FP32 op (oqc_exec_prepare_q) */
    [OQC_Q_QUANTIZE] = run_quantize,
    [OQC_Q_DEQUANTIZE] = run_dequantize,
    [OQC_Q_LAYERNORM] = run_layernorm,
};

/* The scratch bytes node's kernels need with and without AMX tiles (largest of its
 * calls). */
static void q_scratch(OqcExec *e, int node, size_t *s, size_t *s_noamx) {
    const OqcQNode *q = N(e, node)->q;
    *s = *s_noamx = 0;
    switch (q->kind) {
    case OQC_Q_CONV:
        for (int k = 0; k < q->nconv; k++) {
            int nt = oqcf_pool_threads(e->pool);
            size_t a = oqci_conv_par_scratch(&q->conv[k], nt);
            size_t b = oqci_conv_par_scratch_noamx(&q->conv[k], nt);
            *s = a > *s ? a : *s;
            *s_noamx = b > *s_noamx ? b : *s_noamx;
        }
        return;
    case OQC_Q_DECONV:
        *s = *s_noamx = oqci_deconv_scratch(&q->deconv);
        return;
    case OQC_Q_RESIZE:
        if (!q->resize.naxes)
            *s = *s_noamx =
                oqcf_resize_scratch_size(SH(e, node, 0), q->rs->axes, q->rs->naxes, 1);
        return;
    default:
        return;
    }
}

int oqc_exec_prepare_q(OqcExec *e, int node, OqcDiag *d) {
    OqcQKind kind = N(e, node)->q->kind;
    ExecNode *x = EN(e, node);
    if ((unsigned)kind >= OQC_Q_KIND_COUNT)
        return oqc_err_node(d, e->g, node, "internal: unknown INT8 kernel %d", (int)kind);
    /* Slice, Split: the float op's preparation and run function, whose kernels move
     * elements of the tensors' size (one byte here); the emitter writes the same call */
    if (kind == OQC_Q_MOVE)
        return oqc_op_prepare(e, node, d);
    x->run = run_kind[kind];
    x->kind = x->run ? EXEC_Q : EXEC_NONE;
    q_scratch(e, node, &x->scratch, &x->scratch_noamx);
    return 0;
}
