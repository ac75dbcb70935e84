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
 *      at most two axes), Transpose whose input is INT8 (a move of the codes), Concat
 *      (each input copied or requantized to the output's scale), Slice and Split
 *      whose input is INT8 (moves of the codes).
 *      Everything else, nodes named in --fp32-nodes and nodes whose tensors lack a
 *      calibration stay float, with a -v line saying why;
 *   2. gives every INT8 tensor its storage type and scale: s8 (T/127) or u8 (T/255) as
 *      calibrated; max pooling, clamps, views, Resize, Transpose, Slice and Split keep
 *      their input's scale (they only move, clamp or average values); the producers
 *      writing into one concat buffer all use the buffer's scale, so the concat stays
 *      free (a max pool writing there requantizes); a Concat that stays a node
 *      requantizes the inputs not at its output's scale;
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
 * This file decides and rewrites (steps 1, 2 and 4, and the walk of step 3) through two
 * tables: which ops lower to which INT8 kind (ops[]), and each kind's hooks (kinds[]):
 * its test, its parameters and its int32 output, in the kind family's file
 * (quantize_conv.c, quantize_pool.c, quantize_eltwise.c; tables: quantize_lut.c;
 * shared state and the hooks' contract: quantize_int.h). */
#include "quantize_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How each op lowers: its INT8 kind (.lowers set) and whether its kernel can write a
 * channel range of a concat buffer (out_ctotal, out_coff).  The ops flagged OQC_OPF_INT8
 * in ops.def are the candidates of step 1; the others with a kind that has a test (Mul)
 * are tried after the tables (step 1c); those of the kinds without one follow their
 * input into INT8 (step 3).  Dropout, a view too, stays float (cleanup removes it). */
typedef struct QOp {
    unsigned char lowers;        /* 1: the op has an INT8 kind */
    unsigned char channel_view;  /* its kernel writes a concat buffer's channel range */
    OqcQKind kind;               /* that kind */
} QOp;
static const QOp ops[OQC_OP_COUNT] = {
    [OQC_OP_Conv] = {.lowers = 1, .kind = OQC_Q_CONV, .channel_view = 1},
    [OQC_OP_Gemm] = {.lowers = 1, .kind = OQC_Q_CONV},
    [OQC_OP_MatMul] = {.lowers = 1, .kind = OQC_Q_CONV},
    [OQC_OP_ConvTranspose] = {.lowers = 1, .kind = OQC_Q_DECONV},
    [OQC_OP_MaxPool] = {.lowers = 1, .kind = OQC_Q_MAXPOOL, .channel_view = 1},
    [OQC_OP_AveragePool] = {.lowers = 1, .kind = OQC_Q_AVGPOOL, .channel_view = 1},
    [OQC_OP_GlobalAveragePool] = {.lowers = 1, .kind = OQC_Q_AVGPOOL, .channel_view = 1},
    [OQC_OP_Add] = {.lowers = 1, .kind = OQC_Q_ADD},
    [OQC_OP_Sum] = {.lowers = 1, .kind = OQC_Q_ADD},
    [OQC_OP_Mul] = {.lowers = 1, .kind = OQC_Q_MUL},
    [OQC_OP_LayerNormalization] = {.lowers = 1, .kind = OQC_Q_LAYERNORM},
    [OQC_OP_Relu] = {.lowers = 1, .kind = OQC_Q_CLAMP},
    [OQC_OP_Clip] = {.lowers = 1, .kind = OQC_Q_CLAMP},
    [OQC_OP_Resize] = {.lowers = 1, .kind = OQC_Q_RESIZE},
    [OQC_OP_Upsample] = {.lowers = 1, .kind = OQC_Q_RESIZE},
    [OQC_OP_Transpose] = {.lowers = 1, .kind = OQC_Q_TRANSPOSE},
    [OQC_OP_DepthToSpace] = {.lowers = 1, .kind = OQC_Q_TRANSPOSE},
    [OQC_OP_SpaceToDepth] = {.lowers = 1, .kind = OQC_Q_TRANSPOSE},
    [OQC_OP_Concat] = {.lowers = 1, .kind = OQC_Q_CONCAT},
    [OQC_OP_Slice] = {.lowers = 1, .kind = OQC_Q_MOVE},
    [OQC_OP_Split] = {.lowers = 1, .kind = OQC_Q_MOVE},
    [OQC_OP_Flatten] = {.lowers = 1, .kind = OQC_Q_VIEW},
    [OQC_OP_Reshape] = {.lowers = 1, .kind = OQC_Q_VIEW},
    [OQC_OP_Squeeze] = {.lowers = 1, .kind = OQC_Q_VIEW},
    [OQC_OP_Unsqueeze] = {.lowers = 1, .kind = OQC_Q_VIEW},
    [OQC_OP_Identity] = {.lowers = 1, .kind = OQC_Q_VIEW},
};

/* Each kind's hooks (quantize_int.h).  LUT is quantize_lut.c's (clusters of nodes, not
 * one op); QUANTIZE and DEQUANTIZE are inserted by step 4. */
static const QKind kinds[OQC_Q_KIND_COUNT] = {
    [OQC_Q_CONV] = {.can = oqc_quant_can_conv, .build = oqc_quant_build_conv,
                    .widen = oqc_quant_widen_conv},
    [OQC_Q_DECONV] = {.can = oqc_quant_can_deconv, .build = oqc_quant_build_deconv},
    [OQC_Q_MAXPOOL] = {.can = oqc_quant_can_maxpool, .build = oqc_quant_build_maxpool},
    [OQC_Q_AVGPOOL] = {.can = oqc_quant_can_avgpool, .build = oqc_quant_build_avgpool,
                       .widen = oqc_quant_widen_avgpool},
    [OQC_Q_ADD] = {.can = oqc_quant_can_add, .build = oqc_quant_build_add},
    [OQC_Q_MUL] = {.can = oqc_quant_can_mul, .build = oqc_quant_build_mul},
    [OQC_Q_LAYERNORM] = {.can = oqc_quant_can_layernorm, .build = oqc_quant_build_layernorm},
    [OQC_Q_CLAMP] = {.build = oqc_quant_build_clamp},
    [OQC_Q_RESIZE] = {.build = oqc_quant_build_resize},
    [OQC_Q_TRANSPOSE] = {.build = oqc_quant_build_transpose},
    [OQC_Q_CONCAT] = {.can = oqc_quant_can_concat, .build = oqc_quant_build_concat},
    [OQC_Q_MOVE] = {.build = oqc_quant_build_move},
    [OQC_Q_VIEW] = {.build = oqc_quant_build_view},
};

/* The kind op lowers to, or NULL. */
static const QKind *kind_of(OqcOp op) {
    return ops[op].lowers ? &kinds[ops[op].kind] : NULL;
}

/* Whether op's kind follows its input into INT8 (CLAMP, RESIZE, VIEW). */
static int follows(OqcOp op) {
    return kind_of(op) && !kind_of(op)->can;
}

/* The pass's decisions per node (steps 1 and 2) and its counts. */
typedef struct Plan {
    int nn;                    /* nodes before the pass (the ones it decides) */
    unsigned char *dead;       /* removed: folded into an Add, or part of a table */
    unsigned char *compute;    /* a candidate for its own INT8 kernel (steps 1, 1c) */
    unsigned char *told;       /* -v said why it stays float */
    const char **reason;       /* why it stays float, when known before step 3 */
    int *lut_root;             /* the last node of the table node i is part of, or -1 */
    int **lut_mem, *lut_n;     /* at a table's last node: its nodes and their count */
    int *lut_src;              /* and the tensor it reads */
    int nint8, nfloat, nlut, nlut_nodes, nquant, ndequant;
} Plan;

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

/* reason[i] extended by "; " and the reason in why (an arena string). */
static void add_reason(const Q *q, Plan *P, int i, const char *prefix, const char *why) {
    const char *r = P->reason[i];
    P->reason[i] = oqc_arena_printf(q->g->arena, "%s%s%s%s", r ? r : "", r ? "; " : "", prefix,
                                    why);
}

/* ---------------------------------------------------------- step 1: can it be INT8 */

/* Whether node i (of an op whose kind has a test) can run in INT8: its input f32, its
 * outputs calibrated and its kind's op-local conditions; 1, or 0 with why. */
static int can_compute(const Q *q, int i, char *why) {
    const OqcNode *n = &q->g->nodes[i];
    if (n->nin < 1 || n->in[0] < 0 || TT(q, n->in[0])->dtype != OQCF_FLOAT)
        return WHY("its input is not f32");
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0 || TT(q, n->out[k])->dtype != OQCF_FLOAT || !cal(q, n->out[k]))
            return WHY("output %d has no calibration", k);
    const QKind *kind = kind_of(n->op);
    if (!kind || !kind->can)
        return WHY("%s has no INT8 kernel", n->op_type);
    return kind->can(q, i, why);
}

/* Why node i, which is no INT8 candidate of step 1, stays float (for -v). */
static const char *float_reason(const Q *q, int i) {
    const OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    if (in_list(q->cfg->fp32_nodes, n->name))
        return "named in --fp32-nodes";
    if (n->op == OQC_OP_InstanceNormalization)
        return "the INT8 backend has no kernel for this op (per-channel mean and variance, "
               "computed in float between a Dequantize and a Quantize; docs/int8.md)";
    if (!follows(n->op))
        return "the INT8 backend has no kernel for this op";
    if (n->in[0] < 0 || !q->qdom[n->in[0]])
        return "its input is not INT8";
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0)
            return "an output is omitted";
        else if (g->tensors[n->out[k]].view_base >= 0)
            return "it writes into a concat buffer";
    return "its bounds are not constants";
}

/* Step 1: the nodes of the ops flagged OQC_OPF_INT8 that can run in INT8 on their own;
 * the others keep their reason for step 3 (unless a table takes them, step 1b). */
static void find_candidates(Q *q, Plan *P) {
    char why[OQC_WHY_SIZE];
    for (int i = 0; i < P->nn; i++) {
        const OqcNode *n = &q->g->nodes[i];
        if (!(oqc_op_flags(n->op) & OQC_OPF_INT8))
            continue;
        P->told[i] = 1;   /* a float candidate says why here */
        if (in_list(q->cfg->fp32_nodes, n->name)) {
            oqc_info(q->d, "quantize: '%s' (%s) stays float: named in --fp32-nodes", n->name,
                     n->op_type);
            continue;
        }
        if (!can_compute(q, i, why)) {
            /* said in step 3 if the node is not part of a table (step 1b) either */
            P->reason[i] = oqc_arena_strdup(q->g->arena, why);
            P->told[i] = 0;
            continue;
        }
        P->compute[i] = 1;
    }
}

/* Step 2: a concat buffer is INT8 only if every writer is (conv/pool writers, or
 * element-wise ones at batch 1 where a view is contiguous). */
static void check_concat_writers(Q *q, Plan *P) {
    const OqcGraph *g = q->g;
    for (int i = 0; i < P->nn; i++) {
        const OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0 || g->tensors[t].view_base < 0 || (P->compute[i] && ops[n->op].channel_view))
                continue;
            int b = g->tensors[t].view_base;
            for (int j = 0; j < P->nn; j++)
                for (int m = 0; m < g->nodes[j].nout; m++)
                    if (g->nodes[j].out[m] >= 0 &&
                        g->tensors[g->nodes[j].out[m]].view_base == b && P->compute[j]) {
                        P->compute[j] = 0;
                        oqc_info(q->d, "quantize: '%s' (%s) stays float: it writes into "
                                       "concat buffer '%s' with a float writer ('%s')",
                                 g->nodes[j].name, g->nodes[j].op_type, g->tensors[b].name,
                                 n->name);
                    }
        }
    }
}

/* Folds a Relu/Clip that is the only reader of INT8 Add/Sum node i's output into the
 * Add (its act; the Add then writes the activation's output). */
static void fold_add_act(Q *q, Plan *P, int i) {
    OqcGraph *g = q->g;
    int y = g->nodes[i].out[0];
    const OqcTensor *yt = TT(q, y);
    if (yt->nconsumers != 1 || yt->is_output || yt->view_base >= 0)
        return;
    int c = yt->consumers[0];
    const OqcNode *cn = &g->nodes[c];
    if (!ops[cn->op].lowers || ops[cn->op].kind != OQC_Q_CLAMP ||
        in_list(q->cfg->fp32_nodes, cn->name))
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
    P->dead[c] = 1;
}

/* Step 1b: element-wise clusters computing a function of one tensor become tables
 * (quantize_lut.c), each found from its last node, so from the graph's end back. */
static void find_tables(Q *q, Plan *P, unsigned char *taken) {
    OqcGraph *g = q->g;
    char why[OQC_WHY_SIZE];
    for (int i = 0; i < P->nn; i++) {
        P->lut_root[i] = -1;
        taken[i] = P->dead[i] || P->compute[i] || in_list(q->cfg->fp32_nodes, g->nodes[i].name);
    }
    for (int i = P->nn - 1; i >= 0; i--) {
        int mem[OQC_LUT_MAX_NODES], nm, src;
        if (taken[i])
            continue;
        int r = oqc_quant_lut_cluster(q, i, taken, mem, &nm, &src, why);
        if (r == -2)
            continue;
        if (r < 0) {
            add_reason(q, P, i, "no table: ", why);
            continue;
        }
        for (int k = 0; k < nm; k++) {
            P->lut_root[mem[k]] = i;
            taken[mem[k]] = 1;
        }
        P->lut_mem[i] = oqc_arena_dup(g->arena, mem, (size_t)nm * sizeof *mem);
        P->lut_n[i] = nm;
        P->lut_src[i] = src;
    }
}

/* Step 1c: the ops with a kind of their own that are not OQC_OPF_INT8 (Mul of two
 * activations), unless they are part of a table (x * Sigmoid(x)). */
static void find_late_candidates(Q *q, Plan *P, const unsigned char *taken) {
    char why[OQC_WHY_SIZE];
    for (int i = 0; i < P->nn; i++) {
        OqcOp op = q->g->nodes[i].op;
        if (!kind_of(op) || !kind_of(op)->can || (oqc_op_flags(op) & OQC_OPF_INT8) || taken[i])
            continue;
        if (!can_compute(q, i, why)) {
            add_reason(q, P, i, "", why);
            continue;
        }
        P->compute[i] = 1;
    }
}

/* Step 2b, channel scales (docs/calibration.md, "Channel scales"): a tensor with channel
 * thresholds whose producer and readers are all INT8 candidates, the readers depthwise
 * convs (oqc_channel_scaled).  Its producer's build settles it (quantize_conv.c). */
static void find_channel_scaled(Q *q, const Plan *P) {
    OqcGraph *g = q->g;
    if (q->cfg->tensor_scales)
        return;
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *x = &g->tensors[t];
        if (!x->quant.valid || !x->quant.nch || oqc_channel_scaled(g, t) != x->quant.nch)
            continue;
        int ok = P->compute[x->producer] && !P->dead[x->producer] &&
                 P->lut_root[x->producer] < 0;
        for (int c = 0; c < x->nconsumers && ok; c++)
            ok = P->compute[x->consumers[c]] && !P->dead[x->consumers[c]] &&
                 P->lut_root[x->consumers[c]] < 0;
        q->chan[t] = (unsigned char)ok;
    }
}

/* ----------------------------------------------------- step 3: INT8 nodes, scales */

/* Table node i (the last of its cluster): the table replaces the cluster, reading its
 * source; NULL (said why) when the table is unsound. */
static OqcQNode *lower_table(Q *q, Plan *P, int i) {
    OqcGraph *g = q->g;
    OqcNode *n = &g->nodes[i];
    char why[OQC_WHY_SIZE];
    OqcQNode *qn = oqc_arena_alloc(g->arena, sizeof *qn);
    if (oqc_quant_build_lut(q, i, P->lut_mem[i], P->lut_n[i], P->lut_src[i], qn, why) < 0) {
        oqc_info(q->d, "quantize: '%s' (%s) stays float%s: %s", n->name, n->op_type,
                 P->lut_n[i] > 1 ? oqc_arena_printf(g->arena, " with the %d element-wise "
                                                   "nodes before it", P->lut_n[i] - 1) : "",
                 why);
        P->told[i] = 1;
        P->nfloat += P->lut_n[i] - 1;
        return NULL;
    }
    for (int k = 0; k < P->lut_n[i]; k++)
        if (P->lut_mem[i][k] != i)
            P->dead[P->lut_mem[i][k]] = 1;
    n->in[0] = P->lut_src[i];
    n->nin = 1;
    /* the source's readers in the table are now the table (step 3b reads them) */
    OqcTensor *st = &g->tensors[P->lut_src[i]];
    for (int c = 0; c < st->nconsumers; c++)
        if (P->lut_root[st->consumers[c]] == i)
            st->consumers[c] = i;
    P->nlut++;
    P->nlut_nodes += P->lut_n[i];
    oqc_info(q->d, "quantize: '%s' (%s): a 256-entry table of '%s' replaces %d node(s)",
             n->name, n->op_type, g->tensors[P->lut_src[i]].name, P->lut_n[i]);
    return qn;
}

/* Candidate node i: its kernel parameters; NULL (said why) when they fail or an input
 * has no calibration (inputs are quantized when float). */
static OqcQNode *lower_compute(Q *q, int i) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    char why[OQC_WHY_SIZE];
    OqcQNode *qn = oqc_arena_alloc(g->arena, sizeof *qn);
    if (kind_of(n->op)->build(q, i, qn, why) < 0) {
        oqc_info(q->d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type, why);
        for (int k = 0; k < n->nout; k++)   /* a float output has one scale */
            if (n->out[k] >= 0)
                g->tensors[n->out[k]].quant.ch_scale = NULL;
        return NULL;
    }
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !g->tensors[n->in[k]].is_const && !cal(q, n->in[k])) {
            oqc_info(q->d, "quantize: '%s' (%s) stays float: input '%s' has no calibration",
                     n->name, n->op_type, g->tensors[n->in[k]].name);
            return NULL;
        }
    return qn;
}

/* Whether Transpose node i reads a calibrated graph input and only INT8 candidates read
 * its output (an NHWC model's first node): it then moves the input's codes, with the
 * Quantize on the graph input, which is exact (quantizing commutes with a permutation,
 * and the two tensors hold the same values, so the same threshold), and the model's
 * input is integer (NAME_run_int8, NAME_run_u8). */
static int transposes_input(const Q *q, const Plan *P, int i) {
    const OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    if (n->op != OQC_OP_Transpose || n->in[0] < 0 || n->out[0] < 0)
        return 0;
    const OqcTensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
    if (!x->is_input || !x->quant.valid || y->is_output || y->nconsumers == 0)
        return 0;
    for (int c = 0; c < y->nconsumers; c++)
        if (!P->compute[y->consumers[c]] || P->dead[y->consumers[c]])
            return 0;
    return 1;
}

/* Node i of a kind that follows its input: INT8 when its input is (or it transposes a
 * graph input for INT8 readers) and it writes no concat buffer; NULL otherwise (when
 * its parameters fail, their reason is kept). */
static OqcQNode *lower_follower(Q *q, Plan *P, int i) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    char why[OQC_WHY_SIZE];
    if (n->in[0] < 0 || (!q->qdom[n->in[0]] && !transposes_input(q, P, i)))
        return NULL;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0 || g->tensors[n->out[k]].view_base >= 0)
            return NULL;
    /* a view runs nothing: --fp32-nodes leaves it a view of its input */
    if (ops[n->op].kind != OQC_Q_VIEW && in_list(q->cfg->fp32_nodes, n->name))
        return NULL;
    OqcQNode *qn = oqc_arena_alloc(g->arena, sizeof *qn);
    if (kind_of(n->op)->build(q, i, qn, why) < 0) {
        if (!P->reason[i])
            P->reason[i] = oqc_arena_strdup(g->arena, why);
        return NULL;
    }
    return qn;
}

/* Step 3 for node i (in topological order): its INT8 kernel, or float (-v says why);
 * its outputs join the INT8 domain. */
static void lower_node(Q *q, Plan *P, int i) {
    OqcGraph *g = q->g;
    OqcNode *n = &g->nodes[i];
    OqcQNode *qn = NULL;
    if (P->lut_root[i] == i)
        qn = lower_table(q, P, i);
    else if (P->compute[i])
        qn = lower_compute(q, i);
    else if (follows(n->op))
        qn = lower_follower(q, P, i);
    if (!qn) {
        if (!P->told[i] && n->op != OQC_OP_QuantizeLinear && n->op != OQC_OP_DequantizeLinear)
            oqc_info(q->d, "quantize: '%s' (%s) stays float: %s", n->name, n->op_type,
                     P->reason[i] ? P->reason[i] : float_reason(q, i));
        P->nfloat++;
        return;
    }
    n->q = qn;
    q->int8[i] = 1;
    q->nq[n->op] += qn->kind != OQC_Q_LUT;   /* tables are counted apart */
    P->nint8++;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0) {
            q->qdom[n->out[k]] = 1;
            q->qdom[base_of(g, n->out[k])] = 1;
        }
}

/* Step 3b, accumulator outputs.  An INT8 node of a kind with a widen hook (Conv, Gemm,
 * MatMul with no activation, a Relu, or a Clip, which the Dequantize then applies to the
 * float values; an average pool of one window size) whose
 * output, directly or through views, is read only by float nodes or is a graph output
 * stores its int32 accumulators (OQCI_S32) instead of requantizing them to 8 bits.
 * The Dequantize that follows multiplies them by the accumulator's scale (s_in *
 * s_w[k], or s_in / window), so the float result keeps the accumulator's precision: an
 * 8-bit output scale set by the largest logit no longer rounds (and with a tight
 * threshold clips) every logit.  The tensor's OqcAcc keeps the s8/u8 requantization,
 * which the integer I/O API applies: its output has the same bits as when the layer
 * wrote 8 bits itself. */
static void widen(Q *q, int i, const unsigned char *dead) {
    OqcGraph *g = q->g;
    const OqcNode *n = &g->nodes[i];
    const QKind *kind = &kinds[n->q->kind];
    if (!kind->widen || n->nout != 1 || n->out[0] < 0 || TT(q, n->out[0])->view_base >= 0)
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
    OqcAcc acc;
    if (ok && leaves && kind->widen(q, i, &acc)) {
        const OqcAcc *a = oqc_arena_dup(g->arena, &acc, sizeof acc);
        for (int s = 0; s < ns; s++)
            g->tensors[set[s]].acc = a;
    }
    free(set);
}

/* ----------------------------------------------------------- step 4: boundaries */

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
    *qn = (OqcQNode){.kind = OQC_Q_QUANTIZE, .out_type = qtype(qt),
                     .count = oqc_shape_numel(&xt->shape), .scale = qt->scale};
    g->nodes[node].q = qn;
    q->qdom = realloc(q->qdom, (size_t)g->ntensors + 1);
    q->qdom[y] = 1;
    qof[t] = y;
    return y;
}

/* INT8 nodes read s8/u8: float inputs get a Quantize node (one per tensor). */
static void quantize_inputs(Q *q, Plan *P) {
    OqcGraph *g = q->g;
    int *qof = malloc(((size_t)g->ntensors + 1) * sizeof *qof);
    for (int t = 0; t <= g->ntensors; t++)
        qof[t] = -1;
    for (int i = 0; i < P->nn; i++) {
        if (!q->int8[i] || g->nodes[i].q->kind == OQC_Q_VIEW)
            continue;
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int t = g->nodes[i].in[k];
            if (t < 0 || g->tensors[t].is_const || q->qdom[t] ||
                (k > 0 && g->nodes[i].q->kind == OQC_Q_CONV))
                continue;
            int before = qof[t];
            int y = add_quantize(q, t, qof);
            P->nquant += before < 0;
            g->nodes[i].in[k] = y;
        }
    }
    free(qof);
}

/* INT8 tensor t, read by float nodes or a graph output: a Dequantize node writing its
 * float twin, which takes over the float readers; a graph output moves to the twin and
 * keeps its name (the INT8 tensor becomes NAME.q8). */
static void dequantize_output(Q *q, Plan *P, int t) {
    OqcGraph *g = q->g;
    OqcTensor *x = &g->tensors[t];
    const char *orig = x->name;
    int is_out = x->is_output;
    OQC_ASSERT(!x->quant.ch_scale);   /* its readers are INT8 (quantize_conv.c) */
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
    *qn = (OqcQNode){.kind = OQC_Q_DEQUANTIZE, .in_type = x->acc ? OQCI_S32 : qtype(&x->quant),
                     .count = oqc_shape_numel(&x->shape), .scale = x->quant.scale,
                     .acc = x->acc};
    g->nodes[dq].q = qn;
    for (int i = 0; i < P->nn; i++)
        if (!P->dead[i] && !q->int8[i])
            for (int k = 0; k < g->nodes[i].nin; k++)
                if (g->nodes[i].in[k] == t)
                    g->nodes[i].in[k] = f;
    for (int o = 0; o < g->noutputs; o++)
        if (g->outputs[o] == t) {
            g->outputs[o] = f;
            g->tensors[f].is_output = 1;
            g->tensors[t].is_output = 0;
        }
    P->ndequant++;
}

/* The INT8 tensors among the first ntens read by a float node or that are graph
 * outputs get a Dequantize; then every INT8 tensor its storage type. */
static void dequantize_outputs(Q *q, Plan *P, int ntens) {
    OqcGraph *g = q->g;
    for (int t = 0; t < ntens; t++) {
        if (!q->qdom[t])
            continue;
        const OqcTensor *x = &g->tensors[t];
        int float_reader = x->is_output;
        for (int c = 0; c < x->nconsumers; c++)
            float_reader |= !P->dead[x->consumers[c]] && !q->int8[x->consumers[c]];
        if (float_reader && x->view_base < 0)
            dequantize_output(q, P, t);
    }
    for (int t = 0; t < g->ntensors && t < ntens; t++) {
        if (!q->qdom[t])
            continue;
        OqcTensor *x = &g->tensors[t];
        const OqcQuant *b = &g->tensors[base_of(g, t)].quant;
        x->quant = *b;
        x->dtype = x->acc ? OQCF_INT32 : b->is_unsigned ? OQCF_UINT8 : OQCF_INT8;
    }
}

/* ------------------------------------------------------------------------ driver */

/* --fp32-nodes must name nodes of this graph: 0, or -1 with an error. */
static int check_fp32_nodes(const OqcGraph *g, const char *list, OqcDiag *d) {
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        int len = (int)(comma ? (size_t)(comma - p) : strlen(p)), found = 0;
        for (int i = 0; i < g->nnodes && !found; i++)
            found = (int)strlen(g->nodes[i].name) == len && !strncmp(g->nodes[i].name, p, len);
        if (!found)
            return oqc_err(d, "--fp32-nodes: the optimised graph of %s has no node '%.*s' "
                              "(see `oqc dump --after all`)", g->path, len, p);
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* The -v summary: INT8 nodes per op, tables, float nodes, boundaries. */
static void report(const Q *q, const Plan *P) {
    const int *nq = q->nq;
    oqc_info(q->d, "quantize: %d nodes INT8 (Conv %d, Gemm %d, MatMul %d, MaxPool %d, "
                   "AveragePool %d, GlobalAveragePool %d, Add %d, Sum %d, Mul %d, Relu %d, "
                   "Clip %d, Resize %d, Transpose %d, ConvTranspose %d, LayerNormalization %d, "
                   "tables %d of %d nodes, "
                   "views %d), "
                   "%d float; %d Quantize and %d Dequantize inserted; requant %s; "
                   "data movement: Concat %d, Slice %d, Split %d",
             P->nint8, nq[OQC_OP_Conv], nq[OQC_OP_Gemm], nq[OQC_OP_MatMul], nq[OQC_OP_MaxPool],
             nq[OQC_OP_AveragePool], nq[OQC_OP_GlobalAveragePool], nq[OQC_OP_Add],
             nq[OQC_OP_Sum], nq[OQC_OP_Mul], nq[OQC_OP_Relu], nq[OQC_OP_Clip],
             nq[OQC_OP_Resize] + nq[OQC_OP_Upsample], nq[OQC_OP_Transpose],
             nq[OQC_OP_ConvTranspose], nq[OQC_OP_LayerNormalization], P->nlut,
             P->nlut_nodes,
             nq[OQC_OP_Flatten] + nq[OQC_OP_Reshape] + nq[OQC_OP_Squeeze] +
                 nq[OQC_OP_Unsqueeze] + nq[OQC_OP_Identity],
             P->nfloat, P->nquant, P->ndequant,
             q->cfg->requant == OQCI_REQ_FIXED ? "fixed" : "float", nq[OQC_OP_Concat],
             nq[OQC_OP_Slice], nq[OQC_OP_Split]);
}

int pass_quantize(OqcGraph *g, OqcDiag *d) {
    if (!g->qcfg) {
        oqc_info(d, "quantize: no calibration given: the graph stays float");
        return 0;
    }
    if (oqc_graph_link(g, d) < 0)
        return -1;
    Q q = {.g = g, .d = d, .cfg = g->qcfg};
    if (check_fp32_nodes(g, q.cfg->fp32_nodes, d) < 0)
        return -1;
    int nn = g->nnodes;
    size_t n1 = (size_t)nn + 1;
    OqcArena *a = g->arena;
    Plan P = {.nn = nn, .dead = oqc_arena_alloc(a, n1), .compute = oqc_arena_alloc(a, n1),
              .told = oqc_arena_alloc(a, n1),
              .reason = oqc_arena_alloc(a, n1 * sizeof(const char *)),
              .lut_root = oqc_arena_alloc(a, n1 * sizeof(int)),
              .lut_mem = oqc_arena_alloc(a, n1 * sizeof(int *)),
              .lut_n = oqc_arena_alloc(a, n1 * sizeof(int)),
              .lut_src = oqc_arena_alloc(a, n1 * sizeof(int))};
    q.int8 = oqc_arena_alloc(a, n1);
    q.qdom = calloc((size_t)g->ntensors + 1, 1);
    find_candidates(&q, &P);
    check_concat_writers(&q, &P);
    /* Relu/Clip after an INT8 Add: into its clamp. */
    for (int i = 0; i < nn; i++)
        if (P.compute[i] && ops[g->nodes[i].op].kind == OQC_Q_ADD)
            fold_add_act(&q, &P, i);
    unsigned char *taken = oqc_arena_alloc(a, n1);
    find_tables(&q, &P, taken);
    find_late_candidates(&q, &P, taken);
    q.chan = oqc_arena_alloc(a, (size_t)g->ntensors + 1);
    for (int t = 0; t < g->ntensors; t++)   /* only the producers below set them */
        g->tensors[t].quant.ch_scale = NULL;
    find_channel_scaled(&q, &P);
    /* Step 3, in topological order: INT8 domains, passthrough scales, parameters. */
    for (int i = 0; i < nn; i++)
        if (!P.dead[i] && (P.lut_root[i] < 0 || P.lut_root[i] == i))
            lower_node(&q, &P, i);   /* (a table's other nodes: decided at its last) */
    /* Step 3b: layers whose outputs leave the INT8 domain keep their accumulators. */
    for (int i = 0; i < nn; i++)
        if (q.int8[i] && !P.dead[i])
            widen(&q, i, P.dead);
    /* Step 3c: a residual Add reads its conv's int32 sums. */
    for (int i = 0; i < nn; i++)
        if (q.int8[i] && !P.dead[i] && !q.cfg->tensor_scales)
            oqc_quant_fuse_residual(&q, i);
    /* Step 4: boundaries (graph outputs keep their names: the INT8 tensor is renamed
     * NAME.q8) and storage types. */
    quantize_inputs(&q, &P);
    dequantize_outputs(&q, &P, g->ntensors);
    free(q.qdom);
    unsigned char *dead_all = oqc_arena_alloc(a, (size_t)g->nnodes + 1);
    memcpy(dead_all, P.dead, (size_t)nn);   /* nodes added since are all alive */
    oqc_graph_remove_nodes(g, dead_all);
    int rc = oqc_graph_toposort(g, d);
    report(&q, &P);
    return rc < 0 ? -1 : P.nint8;
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
        q->nch = 0;
        q->ch_threshold = NULL;
        q->ch_scale = NULL;
        const OqcShape *sh = &g->tensors[t].shape;
        if (e[i].nch && (sh->rank != 4 || sh->d[1] != e[i].nch))
            return oqc_err(d, "calibration table: tensor '%s' has %d channel thresholds, but "
                              "its shape has %lld channels", e[i].name, (int)e[i].nch,
                           sh->rank == 4 ? (long long)sh->d[1] : 0LL);
        if (e[i].nch) {
            q->nch = e[i].nch;
            q->ch_threshold = e[i].ch_threshold;
        }
    }
    return 0;
}
