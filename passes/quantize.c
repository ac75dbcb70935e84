/* quantize.c - pass "quantize": lowers a calibrated graph to INT8 (contract:
 * docs/calibration.md; user guide: docs/int8.md).
 *
 * Runs only when the driver set g->qcfg and the tensors' quant from a calibration or a
 * table (oqc_quant_apply); otherwise it changes nothing.  It
 *   1. decides per node INT8 or float: Conv (2-D, constant weights, fused Relu/Clip),
 *      ConvTranspose (2-D, constant weights),
 *      Gemm/MatMul with constant weights, MaxPool, AveragePool, GlobalAveragePool,
 *      Add/Sum of same-shape inputs, Mul of two activations (one may be broadcast per
 *      block, as a squeeze-excitation gate), Relu/Clip, and view ops (Flatten, Reshape, ...)
 *      whose input is INT8, Resize/Upsample whose input is INT8 (nearest, or linear over
 *      at most two axes).  Everything else, nodes named in --fp32-nodes and nodes
 *      whose tensors lack a calibration stay float, with a -v line saying why;
 *   2. gives every INT8 tensor its storage type and scale: s8 (T/127) or u8 (T/255) as
 *      calibrated; max pooling, clamps, views and Resize keep their input's scale (they
 *      only move, clamp or average values); the producers writing into one concat buffer all use the
 *      buffer's scale, so the concat stays free (a max pool writing there requantizes);
 *   3. computes each INT8 node's kernel parameters (runtime/int8/oqci.h): per output channel
 *      weight scales max|W[k]|/127 (no saturation; an all-zero channel gets scale 1;
 *      /63 and so on with cfg->weight_bits 7 or fewer, then every conv has wpair16),
 *      int8 weights packed with the depth padded to a multiple of 4, int32 biases at
 *      scale s_in*s_w[k], requantization multipliers (float32 M, or int32 m and shift
 *      in fixed mode), and output clamps that hold the fused activation;
 *   4. inserts QuantizeLinear/DequantizeLinear nodes (with OqcNode.q set: oqc's own
 *      symmetric round-half-away kernels, not ONNX's) where INT8 and float meet, and at
 *      graph inputs and outputs: the model keeps its float interface.
 * A Relu/Clip that follows an INT8 Add is folded into the Add's clamp first. Element-wise
 * nodes computing a function of one tensor (Sigmoid, SiLU, HardSwish, Tanh, ...) become
 * one 256-entry table (quantize_lut.c).
 *
 * This file decides and rewrites (steps 1, 2 and 4, and the walk of step 3); each INT8
 * node's kernel parameters, and the overflow rule they obey, are quantize_params.c
 * (shared state: quantize_int.h). */
#include "quantize_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    case OQC_OP_ConvTranspose:
        if (xs->rank != 4)
            return WHY("only 2-D transposed convolutions run in INT8 (input rank %d)",
                       xs->rank);
        if (n->nin < 2 || !const_f32(q, n->in[1]))
            return WHY("its weights are not a float constant");
        if (n->nin > 2 && n->in[2] >= 0 && !const_f32(q, n->in[2]))
            return WHY("its bias is not a float constant");
        if (TT(q, n->out[0])->view_base >= 0)
            return WHY("it writes into a concat buffer");
        return act_ok(n, why);
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
    case OQC_OP_Mul: {
        /* a full activation times one that is the same or constant over its trailing
         * dims (a squeeze-excitation gate): oqci_mul's (outer, inner) blocks */
        const OqcShape *ys = &TT(q, n->out[0])->shape;
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
    default:
        return WHY("%s has no INT8 kernel", n->op_type);
    }
}

/* Why node i, which is no INT8 candidate of step 1, stays float (for -v). */
static const char *float_reason(const Q *q, int i) {
    const OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    if (in_list(q->cfg->fp32_nodes, n->name))
        return "named in --fp32-nodes";
    if (n->op != OQC_OP_Relu && n->op != OQC_OP_Clip && n->op != OQC_OP_Resize &&
        n->op != OQC_OP_Upsample && !is_view_op(n->op))
        return "the INT8 backend has no kernel for this op";
    if (n->in[0] < 0 || !q->qdom[n->in[0]])
        return "its input is not INT8";
    if (n->out[0] >= 0 && g->tensors[n->out[0]].view_base >= 0)
        return "it writes into a concat buffer";
    return "its bounds are not constants";
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
    unsigned char *told = oqc_arena_alloc(g->arena, (size_t)nn + 1);   /* -v said why */
    const char **reason = oqc_arena_alloc(g->arena, ((size_t)nn + 1) * sizeof *reason);
    for (int i = 0; i < nn; i++) {
        const OqcNode *n = &g->nodes[i];
        if (!(oqc_op_flags(n->op) & OQC_OPF_INT8))
            continue;
        told[i] = 1;   /* a float candidate says why here */
        if (in_list(q.cfg->fp32_nodes, n->name)) {
            oqc_info(d, "quantize: '%s' (%s) stays float: named in --fp32-nodes", n->name,
                     n->op_type);
            continue;
        }
        if (!can_compute(&q, i, why)) {
            /* said in step 3 if the node is not part of a table (step 1b) either */
            reason[i] = oqc_arena_strdup(g->arena, why);
            told[i] = 0;
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
                                    n->op != OQC_OP_MatMul && n->op != OQC_OP_Gemm &&
                                    n->op != OQC_OP_ConvTranspose);
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
    /* Step 1b: element-wise clusters computing a function of one tensor become tables
     * (quantize_lut.c), each found from its last node, so from the graph's end back. */
    int *lut_root = oqc_arena_alloc(g->arena, ((size_t)nn + 1) * sizeof *lut_root);
    int **lut_mem = oqc_arena_alloc(g->arena, ((size_t)nn + 1) * sizeof *lut_mem);
    int *lut_n = oqc_arena_alloc(g->arena, ((size_t)nn + 1) * sizeof *lut_n);
    int *lut_src = oqc_arena_alloc(g->arena, ((size_t)nn + 1) * sizeof *lut_src);
    unsigned char *taken = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    for (int i = 0; i < nn; i++) {
        lut_root[i] = -1;
        taken[i] = dead[i] || compute[i] || in_list(q.cfg->fp32_nodes, g->nodes[i].name);
    }
    for (int i = nn - 1; i >= 0; i--) {
        int mem[OQC_LUT_MAX_NODES], nm, src;
        if (taken[i])
            continue;
        int r = oqc_quant_lut_cluster(&q, i, taken, mem, &nm, &src, why);
        if (r == -2)
            continue;
        if (r < 0) {
            reason[i] = oqc_arena_printf(g->arena, "%s%sno table: %s",
                                         reason[i] ? reason[i] : "", reason[i] ? "; " : "", why);
            continue;
        }
        for (int k = 0; k < nm; k++) {
            lut_root[mem[k]] = i;
            taken[mem[k]] = 1;
        }
        lut_mem[i] = oqc_arena_dup(g->arena, mem, (size_t)nm * sizeof *mem);
        lut_n[i] = nm;
        lut_src[i] = src;
    }
    /* Step 1c: Mul of two activations, unless it is part of a table (x * Sigmoid(x)). */
    for (int i = 0; i < nn; i++) {
        const OqcNode *n = &g->nodes[i];
        if (n->op != OQC_OP_Mul || taken[i])
            continue;
        if (!can_compute(&q, i, why)) {
            reason[i] = oqc_arena_printf(g->arena, "%s%s%s", reason[i] ? reason[i] : "",
                                         reason[i] ? "; " : "", why);
            continue;
        }
        compute[i] = 1;
    }
    /* Step 3, in topological order: INT8 domains, passthrough scales, parameters. */
    int rc = 0, nint8 = 0, nfloat = 0, nlut = 0, nlut_nodes = 0;
    for (int i = 0; i < nn; i++) {
        OqcNode *n = &g->nodes[i];
        if (dead[i] || (lut_root[i] >= 0 && lut_root[i] != i))
            continue;   /* removed, or part of a table decided at its last node */
        OqcQNode *qn = NULL;
        if (lut_root[i] == i) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            if (oqc_quant_build_lut(&q, i, lut_mem[i], lut_n[i], lut_src[i], qn, why) < 0) {
                oqc_info(d, "quantize: '%s' (%s) stays float%s: %s", n->name, n->op_type,
                         lut_n[i] > 1 ? oqc_arena_printf(g->arena, " with the %d element-wise "
                                                         "nodes before it", lut_n[i] - 1) : "",
                         why);
                told[i] = 1;
                nfloat += lut_n[i] - 1;
                qn = NULL;
            } else {
                for (int k = 0; k < lut_n[i]; k++)
                    if (lut_mem[i][k] != i)
                        dead[lut_mem[i][k]] = 1;
                n->in[0] = lut_src[i];
                n->nin = 1;
                /* the source's readers in the table are now the table (step 3b reads them) */
                OqcTensor *st = &g->tensors[lut_src[i]];
                for (int c = 0; c < st->nconsumers; c++)
                    if (lut_root[st->consumers[c]] == i)
                        st->consumers[c] = i;
                nlut++;
                nlut_nodes += lut_n[i];
                oqc_info(d, "quantize: '%s' (%s): a 256-entry table of '%s' replaces %d node(s)",
                         n->name, n->op_type, g->tensors[lut_src[i]].name, lut_n[i]);
            }
        } else if (compute[i]) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            int r;
            if (n->op == OQC_OP_Conv || n->op == OQC_OP_Gemm || n->op == OQC_OP_MatMul)
                r = oqc_quant_build_conv(&q, i, qn, why);
            else if (n->op == OQC_OP_ConvTranspose)
                r = oqc_quant_build_deconv(&q, i, qn, why);
            else if (n->op == OQC_OP_Add || n->op == OQC_OP_Sum)
                r = oqc_quant_build_add(&q, i, qn, why);
            else if (n->op == OQC_OP_Mul)
                r = oqc_quant_build_mul(&q, i, qn, why);
            else {
                /* max pooling keeps its input's scale unless it writes a concat buffer */
                if (n->op == OQC_OP_MaxPool && g->tensors[n->out[0]].view_base < 0) {
                    const OqcQuant *qx = cal(&q, n->in[0]);
                    if (!qx) {
                        r = -1;
                        snprintf(why, sizeof why, "its input has no calibration");
                    } else {
                        g->tensors[n->out[0]].quant = *qx;
                        r = oqc_quant_build_pool(&q, i, qn, why);
                    }
                } else {
                    r = cal(&q, n->in[0]) ? oqc_quant_build_pool(&q, i, qn, why)
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
                oqc_quant_clamp_of(&act, qn->out_type, qx->scale, &qn->lo, &qn->hi);
                g->tensors[n->out[0]].quant = *qx;
            }
        } else if ((n->op == OQC_OP_Resize || n->op == OQC_OP_Upsample) && n->in[0] >= 0 &&
                   q.qdom[n->in[0]] && n->out[0] >= 0 && g->tensors[n->out[0]].view_base < 0 &&
                   !in_list(q.cfg->fp32_nodes, n->name)) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            if (oqc_quant_build_resize(&q, i, qn, why) < 0) {
                oqc_info(d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type, why);
                told[i] = 1;
                qn = NULL;
            }
        } else if (is_view_op(n->op) && n->in[0] >= 0 && q.qdom[n->in[0]] && n->out[0] >= 0 &&
                   g->tensors[n->out[0]].view_base < 0) {
            qn = oqc_arena_alloc(g->arena, sizeof *qn);
            qn->kind = OQC_Q_VIEW;
            g->tensors[n->out[0]].quant = g->tensors[base_of(g, n->in[0])].quant;
        }
        if (!qn) {
            if (!told[i] && n->op != OQC_OP_QuantizeLinear && n->op != OQC_OP_DequantizeLinear)
                oqc_info(d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type,
                         reason[i] ? reason[i] : float_reason(&q, i));
            nfloat++;
            continue;
        }
        n->q = qn;
        q.int8[i] = 1;
        q.nq[n->op] += qn->kind != OQC_Q_LUT;   /* tables are counted apart */
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
             "AveragePool %d, GlobalAveragePool %d, Add %d, Sum %d, Mul %d, Relu %d, Clip %d, "
             "Resize %d, ConvTranspose %d, tables %d of %d nodes, views %d), %d float; %d Quantize and %d "
             "Dequantize "
             "inserted; requant %s",
             nint8, q.nq[OQC_OP_Conv], q.nq[OQC_OP_Gemm], q.nq[OQC_OP_MatMul],
             q.nq[OQC_OP_MaxPool], q.nq[OQC_OP_AveragePool], q.nq[OQC_OP_GlobalAveragePool],
             q.nq[OQC_OP_Add], q.nq[OQC_OP_Sum], q.nq[OQC_OP_Mul], q.nq[OQC_OP_Relu],
             q.nq[OQC_OP_Clip], q.nq[OQC_OP_Resize] + q.nq[OQC_OP_Upsample],
             q.nq[OQC_OP_ConvTranspose],
             nlut, nlut_nodes,
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
        if (!(e[i].threshold >= 0) || !isfinite(e[i].threshold))
            return oqc_err(d, "calibration table: tensor '%s' has threshold %g; thresholds "
                              "must be finite and not negative", e[i].name,
                           (double)e[i].threshold);
        q->valid = 1;
        q->is_unsigned = nonneg[t];
        q->amax = e[i].amax;
        q->threshold = e[i].threshold;
        /* the entry's own scale when it agrees in signedness (bit-exact imports) */
        q->scale = q->is_unsigned == e[i].is_unsigned && e[i].scale > 0
                       ? e[i].scale
                       : e[i].threshold / (q->is_unsigned ? 255.0f : 127.0f);
        if (!(q->scale >= FLT_MIN)) {
            /* Threshold 0 (the tensor was 0 on every calibration sample, as a dead
             * channel's ReLU output is) or so small its scale is 0 or denormal: no range
             * to quantize to.  It gets the scale an all-zero weight channel gets: 0 stays
             * exact and the requantization multipliers stay finite.
             * docs/calibration.md, "Zero thresholds". */
            oqc_info(d, "calibration table: tensor '%s' has threshold %g (zero during "
                        "calibration): it gets scale %g", e[i].name,
                     (double)e[i].threshold, (double)OQC_ZERO_RANGE_SCALE);
            q->scale = OQC_ZERO_RANGE_SCALE;
        }
        q->method = e[i].method;
    }
    return 0;
}
