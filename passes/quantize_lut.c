/* quantize_lut.c - pass "quantize": element-wise functions of one tensor as 256-entry
 * tables (OQC_Q_LUT, runtime oqci_lut).
 *
 * An 8-bit tensor has 256 codes, so any element-wise function of it is a table from
 * input byte to output byte. A "cluster" is a connected set of float element-wise
 * nodes that together compute y = f(x) of one tensor x: Sigmoid(x), x * Sigmoid(x)
 * (SiLU), x * HardSigmoid(x) (HardSwish), the Erf form of GELU x * 0.5 * (1 +
 * Erf(x / sqrt 2)), Tanh, Elu, ... Its nodes are unary activations and math (Relu,
 * Clip with constant bounds, LeakyRelu, Sigmoid, HardSigmoid, Tanh and every op of
 * oqcf_unary) and Add/Sub/Mul/Div/Pow whose operands are x, other cluster values or
 * float scalar constants; every value it computes has x's shape, and only the last
 * node's output ("root") is read outside it.
 *
 * The table is the float graph evaluated on the 256 dequantized codes (code * s_x,
 * as oqci_dequantize computes them) with the FP32 executor's own kernels, quantized as
 * oqci_quantize does (round half away from zero, clamp to the output type): the
 * INT8 result is exactly what dequantize -> float nodes -> quantize would give, without
 * the intermediate quantizations of a float island and in one byte lookup. A table
 * with a NaN entry (e.g. Log or Sqrt of the negative codes of a signed tensor) is not
 * sound: the cluster stays float and -v says why; so do the step functions (Floor,
 * Ceil, Sign, ThresholdedRelu), whose output an input rounding can move by a whole
 * jump. A cluster of Relu/Clip nodes alone stays the cheaper clamp (oqci_clamp). */
#include "quantize_int.h"

#include <stdlib.h>
#include <string.h>

#include "exec_int.h"

#define LUT_MAX_BARRIERS 8 /* retries with a shared value made a source */

/* Whether node i's op can be part of a table. Not the step functions (Floor, Ceil,
 * Sign, ThresholdedRelu): there half an input step of rounding can move the output by
 * a whole jump, so they stay float. */
static int lut_op(const OqcNode *n) {
    OqcfUnaryOp u;
    float a, b;
    switch (n->op) {
    case OQC_OP_Floor: case OQC_OP_Ceil: case OQC_OP_Sign: case OQC_OP_ThresholdedRelu:
        return 0;
    case OQC_OP_Relu: case OQC_OP_Clip: case OQC_OP_LeakyRelu: case OQC_OP_Sigmoid:
    case OQC_OP_HardSigmoid: case OQC_OP_Tanh: case OQC_OP_Add: case OQC_OP_Sub:
    case OQC_OP_Mul: case OQC_OP_Div: case OQC_OP_Pow:
        return n->nout == 1 && !n->act_per_channel && n->act.kind == OQCF_ACT_NONE;
    default:
        return oqc_unary_of(n, &u, &a, &b) && n->nout == 1;
    }
}

/* Inputs of node n that carry data (Clip's bounds are parameters). */
static int data_inputs(const OqcNode *n) {
    return n->op == OQC_OP_Clip ? 1 : n->nin;
}

/* A float constant with one element: its value in *v. */
static int scalar_const(const Q *q, int t, float *v) {
    const float *p = const_f32(q, t);
    if (!p || oqc_shape_numel(&TT(q, t)->shape) != 1)
        return 0;
    *v = p[0];
    return 1;
}

typedef struct Cluster {
    int nodes[OQC_LUT_MAX_NODES];   /* member node ids (the root included) */
    int n;
    int src;                    /* the one tensor it reads (-1: none yet) */
    int barrier[LUT_MAX_BARRIERS]; /* tensors treated as sources (read outside) */
    int nbar;
} Cluster;

static int in_cluster(const Cluster *c, int node) {
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i] == node)
            return 1;
    return 0;
}

/* Walks back from tensor t (read by a member): a scalar constant, the source, or the
 * output of another member. 1, or 0 with why. */
static int collect(const Q *q, Cluster *c, int t, const OqcShape *shape,
                   const unsigned char *skip, char *why) {
    const OqcGraph *g = q->g;
    const OqcTensor *x = TT(q, t);
    float v;
    if (x->is_const)
        return scalar_const(q, t, &v) ? 1
               : WHY("operand '%s' is not a float scalar constant", x->name);
    int p = x->producer, barrier = 0;
    for (int i = 0; i < c->nbar; i++)
        barrier |= c->barrier[i] == t;
    if (barrier || p < 0 || skip[p] || !lut_op(&g->nodes[p]) || x->is_output ||
        x->view_base >= 0 || x->dtype != OQCF_FLOAT || !oqc_shape_equal(&x->shape, shape)) {
        if (c->src >= 0 && c->src != t)
            return WHY("it reads two tensors ('%s' and '%s')", TT(q, c->src)->name, x->name);
        c->src = t;
        return 1;
    }
    if (in_cluster(c, p))
        return 1;
    if (c->n == OQC_LUT_MAX_NODES)
        return WHY("more than %d nodes", OQC_LUT_MAX_NODES);
    c->nodes[c->n++] = p;
    const OqcNode *pn = &g->nodes[p];
    for (int k = 0; k < data_inputs(pn); k++)
        if (pn->in[k] < 0 || !collect(q, c, pn->in[k], shape, skip, why))
            return pn->in[k] < 0 ? WHY("'%s' has an empty input", pn->name) : 0;
    return 1;
}

int oqc_quant_lut_cluster(Q *q, int root, const unsigned char *skip, int *members, int *nmem,
                          int *src, char *why) {
    const OqcGraph *g = q->g;
    const OqcNode *rn = &g->nodes[root];
    if (!lut_op(rn) || rn->out[0] < 0 || TT(q, rn->out[0])->view_base >= 0)
        return -2;
    const OqcShape *shape = &TT(q, rn->out[0])->shape;
    Cluster c = {.n = 0, .src = -1, .nbar = 0};
    for (;;) {
        c.n = 1;
        c.nodes[0] = root;
        c.src = -1;
        for (int k = 0; k < data_inputs(rn); k++)
            if (rn->in[k] < 0 || !collect(q, &c, rn->in[k], shape, skip, why))
                return rn->in[k] < 0 ? FAIL("an input is empty") : -1;
        /* a member whose value is also read outside: make it a source and retry */
        int shared = -1;
        for (int i = 1; i < c.n && shared < 0; i++) {
            const OqcTensor *y = TT(q, g->nodes[c.nodes[i]].out[0]);
            for (int k = 0; k < y->nconsumers && shared < 0; k++)
                if (!in_cluster(&c, y->consumers[k]))
                    shared = g->nodes[c.nodes[i]].out[0];
        }
        if (shared < 0)
            break;
        if (c.nbar == LUT_MAX_BARRIERS)
            return FAIL("its values are read by too many other nodes");
        c.barrier[c.nbar++] = shared;
    }
    if (c.src < 0)
        return FAIL("it reads no tensor (constant folding's job)");
    int clamp_only = 1;
    for (int i = 0; i < c.n; i++)
        clamp_only &= g->nodes[c.nodes[i]].op == OQC_OP_Relu ||
                      g->nodes[c.nodes[i]].op == OQC_OP_Clip;
    if (clamp_only)
        return -2;
    if (TT(q, c.src)->dtype != OQCF_FLOAT || !cal(q, c.src))
        return FAIL("its input '%s' has no calibration", TT(q, c.src)->name);
    if (!cal(q, rn->out[0]))
        return FAIL("its output has no calibration");
    memcpy(members, c.nodes, (size_t)c.n * sizeof *members);
    *nmem = c.n;
    *src = c.src;
    return 0;
}

static int cmp_int(const void *a, const void *b) {
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The 256-vector of tensor t during the evaluation (vals[k] of tensor ids[k]). */
static const float *vec(int t, const int *ids, float (*vals)[256], int nv) {
    for (int k = 0; k < nv; k++)
        if (ids[k] == t)
            return vals[k];
    return NULL;
}

/* y = node n applied to its inputs: the float executor's kernels on 256 elements. */
static int eval_node(const Q *q, const OqcNode *n, const int *ids, float (*vals)[256], int nv,
                     float *y, char *why) {
    static const OqcfShape vs = {.rank = 1, .d = {256}}, ss = {.rank = 0};
    const float *a = vec(n->in[0], ids, vals, nv);
    OqcfUnaryOp u;
    float alpha, beta;
    OqcfAct act;
    int st = OQCF_OK;
    switch (n->op) {
    case OQC_OP_Relu: st = oqcf_relu(a, y, 256); break;
    case OQC_OP_Sigmoid: st = oqcf_sigmoid(a, y, 256); break;
    case OQC_OP_Tanh: st = oqcf_tanh(a, y, 256); break;
    case OQC_OP_LeakyRelu: st = oqcf_leaky_relu(a, y, 256, oqc_attr_float(n, "alpha", 0.01f)); break;
    case OQC_OP_HardSigmoid:
        st = oqcf_hard_sigmoid(a, y, 256, oqc_attr_float(n, "alpha", 0.2f),
                               oqc_attr_float(n, "beta", 0.5f));
        break;
    case OQC_OP_Clip:
        if (!oqc_pass_act_of(q->g, (int)(n - q->g->nodes), &act, why))
            return 0;
        st = oqcf_clip(a, y, 256, act.p0, act.p1);
        break;
    case OQC_OP_Add: case OQC_OP_Sub: case OQC_OP_Mul: case OQC_OP_Div: case OQC_OP_Pow: {
        static const OqcfBinaryOp ops[OQC_OP_COUNT] = {
            [OQC_OP_Add] = OQCF_ADD, [OQC_OP_Sub] = OQCF_SUB, [OQC_OP_Mul] = OQCF_MUL,
            [OQC_OP_Div] = OQCF_DIV, [OQC_OP_Pow] = OQCF_POW};
        float ca, cb;
        const float *b = vec(n->in[1], ids, vals, nv);
        int sa = !a && scalar_const(q, n->in[0], &ca), sb = !b && scalar_const(q, n->in[1], &cb);
        if ((!a && !sa) || (!b && !sb))
            return WHY("'%s' has an operand that is not a scalar constant", n->name);
        st = oqcf_binary(ops[n->op], OQCF_FLOAT, a ? a : &ca, a ? &vs : &ss, b ? b : &cb,
                         b ? &vs : &ss, y);
        break;
    }
    default:
        if (!oqc_unary_of(n, &u, &alpha, &beta))
            return WHY("internal: '%s' is no table op", n->name);
        st = oqcf_unary(u, a, y, 256, alpha, beta);
        break;
    }
    return st == OQCF_OK ? 1 : WHY("internal: kernel of '%s' failed", n->name);
}

int oqc_quant_build_lut(Q *q, int root, const int *members, int nmem, int src, OqcQNode *qn,
                        char *why) {
    OqcGraph *g = q->g;
    const OqcQuant *qx = &g->tensors[base_of(g, src)].quant, *qy = cal(q, g->nodes[root].out[0]);
    int32_t tin = qtype(qx), tout = qtype(qy), lo, hi;
    oqc_quant_clamp_of(NULL, tout, 0.0f, &lo, &hi);
    int order[OQC_LUT_MAX_NODES], ids[OQC_LUT_MAX_NODES + 1];
    float(*vals)[256] = malloc((size_t)(nmem + 1) * sizeof *vals);
    memcpy(order, members, (size_t)nmem * sizeof *order);
    qsort(order, (size_t)nmem, sizeof *order, cmp_int);   /* node ids: topological */
    /* entry b: the input code whose byte is b, dequantized as oqci_dequantize does */
    ids[0] = src;
    for (int b = 0; b < 256; b++)
        vals[0][b] = (float)(tin == OQCI_U8 ? b : (int8_t)(uint8_t)b) * qx->scale;
    int nv = 1, ok = 1;
    for (int i = 0; i < nmem && ok; i++) {
        const OqcNode *n = &g->nodes[order[i]];
        ok = eval_node(q, n, ids, vals, nv, vals[nv], why);
        ids[nv++] = n->out[0];
    }
    const float *y = vals[nv - 1];
    for (int b = 0; b < 256 && ok; b++)
        if (y[b] != y[b]) {
            ok = WHY("its function is NaN at input %g (outside its domain)",
                     (double)vals[0][b]);
        }
    if (ok) {
        uint8_t *table = oqc_arena_alloc(g->arena, 256);
        for (int b = 0; b < 256; b++) {
            int32_t code = oqci_round_clamp(y[b] / qy->scale, lo, hi);   /* oqci_quantize */
            table[b] = (uint8_t)(code & 0xff);
        }
        *qn = (OqcQNode){.kind = OQC_Q_LUT, .in_type = tin, .out_type = tout,
                         .count = oqc_shape_numel(&TT(q, g->nodes[root].out[0])->shape),
                         .table = table, .nfused = nmem};
    }
    free(vals);
    return ok ? 0 : -1;
}
