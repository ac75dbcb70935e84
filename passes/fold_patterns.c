/* fold_patterns.c - pass "fold-patterns": exporters' decompositions of single
 * operators, folded back into the operator oqc has a kernel for.
 *
 *   HardSwish   Mul(x, HardSigmoid(x)) with HardSigmoid's alpha = 1/6 (as float) and
 *               beta = 0.5 (PyTorch's hardswish below opset 14) -> HardSwish(x);
 *   LayerNorm   m = ReduceMean(x), d = Sub(x, m), Pow(d, 2) or Mul(d, d), v =
 *               ReduceMean(that), Div(d, Sqrt(Add(v, eps))), optionally then Mul by a
 *               constant gamma and Add of a constant beta (PyTorch's layer_norm below
 *               opset 17, TensorFlow's) -> LayerNormalization(x, gamma, beta) with
 *               axis the first reduced axis and epsilon eps. Both means must reduce the
 *               same trailing axes axis .. rank - 1 with keepdims = 1, eps, the
 *               exponent 2, gamma and beta must be float constants (gamma and beta with
 *               as many elements as the normalised dims), and every intermediate value
 *               must be read only inside the pattern. Without gamma the scale is a new
 *               constant of ones.
 *   Gelu        x * 0.5 * (1 + Erf(x / sqrt 2)) as exporters spell it: Div by sqrt 2 or
 *               Mul by 1 / sqrt 2 (constants within 1e-6 relative), Add of 1, and the
 *               0.5 multiplying x, the sum or the product, operands in either order
 *               -> Gelu(x) (ONNX opset 20, approximate "none"; oqc runs it at any
 *               opset, as an oqcf_unary op and in INT8 as a table).
 * The folded node is the pattern's last one (it keeps its name and output); the others
 * are removed. The results equal the decomposed graph's up to float rounding (a few
 * ulps: HardSwish divides by 6 where HardSigmoid multiplies by float(1/6); the
 * normalisation's kernel sums in another order; Gelu multiplies by 1 / sqrt 2). SiLU
 * (x * Sigmoid(x)) has no ONNX operator: it stays decomposed in float and becomes one
 * 256-entry table in INT8 (quantize_lut.c). Channel shuffle
 * (Reshape, Transpose, Reshape) is already one data movement: the Reshapes are views
 * and the Transpose is one kernel call. */
#include "passes.h"

#include <math.h>
#include <string.h>

/* The producer of tensor t when it is a node of op `op`, else -1. */
static int producer_op(const OqcGraph *g, int t, OqcOp op) {
    if (t < 0)
        return -1;
    int p = g->tensors[t].producer;
    return p >= 0 && g->nodes[p].op == op ? p : -1;
}

/* 1 when tensor t is not a graph output and only nodes a and b (b may be -1) read it. */
static int read_only_by(const OqcGraph *g, int t, int a, int b) {
    const OqcTensor *x = &g->tensors[t];
    if (x->is_output || x->nconsumers == 0)
        return 0;
    for (int c = 0; c < x->nconsumers; c++)
        if (x->consumers[c] != a && x->consumers[c] != b)
            return 0;
    return 1;
}

/* The value of t when it is a float constant of one element. */
static int const_scalar(const OqcGraph *g, int t, float *v) {
    const OqcTensor *x = t >= 0 ? &g->tensors[t] : NULL;
    if (!x || !x->is_const || x->dtype != OQCF_FLOAT || !x->data ||
        oqc_shape_numel(&x->shape) != 1)
        return 0;
    *v = *(const float *)x->data;
    return 1;
}

/* 1 when t is a float constant of exactly n elements. */
static int const_of(const OqcGraph *g, int t, int64_t n) {
    const OqcTensor *x = t >= 0 ? &g->tensors[t] : NULL;
    return x && x->is_const && x->dtype == OQCF_FLOAT && x->data &&
           oqc_shape_numel(&x->shape) == n;
}

/* Turns node i into op `op` with inputs in[0 .. nin - 1] and attributes a (kept in the
 * arena), its output unchanged. */
static void rewrite(OqcGraph *g, int i, OqcOp op, const int *in, int nin, OqcAttr *a,
                    int na) {
    OqcNode *n = &g->nodes[i];
    n->op = op;
    n->op_type = oqc_op_name(op);
    n->domain = "";
    int *ins = oqc_arena_alloc(g->arena, (size_t)nin * sizeof *ins);
    memcpy(ins, in, (size_t)nin * sizeof *ins);
    n->in = ins;
    n->nin = nin;
    n->attr = a;
    n->nattr = na;
}

/* Mul node i as x * HardSigmoid(x): the HardSigmoid node, else -1. */
static int hard_swish_of(const OqcGraph *g, int i, int *x) {
    const OqcNode *n = &g->nodes[i];
    if (n->nin != 2)
        return -1;
    for (int k = 0; k < 2; k++) {
        int h = producer_op(g, n->in[k], OQC_OP_HardSigmoid);
        if (h < 0 || g->nodes[h].in[0] != n->in[1 - k] ||
            oqc_attr_float(&g->nodes[h], "alpha", 0.2f) != 1.0f / 6.0f ||
            oqc_attr_float(&g->nodes[h], "beta", 0.5f) != 0.5f ||
            !read_only_by(g, n->in[k], i, -1))
            continue;
        *x = n->in[1 - k];
        return h;
    }
    return -1;
}

/* 1 when t is a float scalar constant within 1e-6 relative of v (exporters write sqrt 2
 * and its inverse as float32 roundings, some with fewer digits of double ones). */
static int const_near(const OqcGraph *g, int t, double v) {
    float c;
    return const_scalar(g, t, &c) && fabs((double)c - v) <= 1e-6 * fabs(v);
}

/* Binary node i (op `op`) reading tensor t and a scalar constant near v: 1. */
static int op_with_const(const OqcGraph *g, int i, OqcOp op, int t, double v) {
    const OqcNode *n = &g->nodes[i];
    return n->op == op && n->nin == 2 &&
           ((n->in[0] == t && const_near(g, n->in[1], v)) ||
            (op != OQC_OP_Div && n->in[1] == t && const_near(g, n->in[0], v)));
}

/* The only reader of tensor t (not a graph output), or -1 (also for no tensor). */
static int sole_reader(const OqcGraph *g, int t) {
    const OqcTensor *x = t >= 0 ? &g->tensors[t] : NULL;
    return x && !x->is_output && x->nconsumers == 1 ? x->consumers[0] : -1;
}

/* The GELU pattern x * 0.5 * (1 + Erf(x / sqrt 2)) around Erf node e: its nodes into
 * mem (the root, which computes the result, last), x; the count of nodes, or 0. The
 * scaling is Div by sqrt 2 or Mul by 1 / sqrt 2; the 0.5 multiplies x, the sum or the
 * product (torch: (x * s) * 0.5; keras: (0.5 * x) * s; (s * 0.5) * x), operands in
 * either order. */
static int gelu_of(const OqcGraph *g, int e, int *mem, int *x) {
    const OqcNode *en = &g->nodes[e];
    int u = en->in[0], sc = u >= 0 ? g->tensors[u].producer : -1;
    if (sc < 0 || g->nodes[sc].nin != 2 || sole_reader(g, u) != e)
        return 0;
    *x = g->nodes[sc].in[0];
    if (!op_with_const(g, sc, OQC_OP_Div, *x, 1.4142135623730951) &&
        !op_with_const(g, sc, OQC_OP_Mul, *x, 0.70710678118654752)) {
        *x = g->nodes[sc].in[1];
        if (!op_with_const(g, sc, OQC_OP_Mul, *x, 0.70710678118654752))
            return 0;
    }
    if (*x < 0 || g->tensors[*x].dtype != OQCF_FLOAT)
        return 0;
    int ad = sole_reader(g, en->out[0]);
    if (ad < 0 || !op_with_const(g, ad, OQC_OP_Add, en->out[0], 1.0))
        return 0;
    int s = g->nodes[ad].out[0], p = sole_reader(g, s);
    if (p < 0 || g->nodes[p].op != OQC_OP_Mul || g->nodes[p].nin != 2)
        return 0;
    int other = g->nodes[p].in[0] == s ? g->nodes[p].in[1] : g->nodes[p].in[0];
    int q = sole_reader(g, g->nodes[p].out[0]), h = other >= 0 ? g->tensors[other].producer : -1;
    int v[] = {sc, e, ad, p, q};
    if (op_with_const(g, p, OQC_OP_Mul, s, 0.5)) {   /* (s * 0.5) * x */
        if (q < 0 || g->nodes[q].op != OQC_OP_Mul || g->nodes[q].nin != 2 ||
            !((g->nodes[q].in[0] == *x && g->nodes[q].in[1] == g->nodes[p].out[0]) ||
              (g->nodes[q].in[1] == *x && g->nodes[q].in[0] == g->nodes[p].out[0])))
            return 0;
    } else if (other == *x) {                        /* (x * s) * 0.5 */
        if (q < 0 || !op_with_const(g, q, OQC_OP_Mul, g->nodes[p].out[0], 0.5))
            return 0;
    } else if (h >= 0 && op_with_const(g, h, OQC_OP_Mul, *x, 0.5) &&
               sole_reader(g, other) == p) {         /* (0.5 * x) * s */
        v[3] = h;
        v[4] = p;
    } else {
        return 0;
    }
    memcpy(mem, v, sizeof v);
    return 5;
}

/* The trailing axes a ReduceMean node reduces with keepdims = 1: the first of them, or -1
 * when they are not axis .. rank - 1 of its input. */
static int trailing_mean(const OqcGraph *g, int node) {
    OqcDiag quiet;
    oqc_diag_init(&quiet);
    const OqcTensor *x = &g->tensors[g->nodes[node].in[0]];
    unsigned mask;
    int keep, r = x->shape.rank, first = -1;
    if (oqc_reduce_axes(g, node, r, &mask, &keep, &quiet) == 0 && keep && mask) {
        first = r;
        while (first > 0 && (mask >> (first - 1) & 1))
            first--;
        if (mask != (((1u << r) - 1) & ~((1u << first) - 1)))
            first = -1;
    }
    oqc_diag_free(&quiet);
    return first;
}

/* The LayerNorm pattern whose Div is node i: its nodes into mem (the Div last), x, the
 * axis and epsilon; the count of nodes, or 0. */
static int layer_norm_of(const OqcGraph *g, int i, int *mem, int *x, int *axis, float *eps) {
    const OqcNode *dv = &g->nodes[i];
    if (dv->nin != 2)
        return 0;
    int d = dv->in[0];
    int sq = producer_op(g, dv->in[1], OQC_OP_Sqrt);
    int ad = sq >= 0 ? producer_op(g, g->nodes[sq].in[0], OQC_OP_Add) : -1;
    if (ad < 0 || g->nodes[ad].nin != 2)
        return 0;
    int k = const_scalar(g, g->nodes[ad].in[1], eps) ? 0
          : const_scalar(g, g->nodes[ad].in[0], eps) ? 1 : -1;
    int r2 = k >= 0 ? producer_op(g, g->nodes[ad].in[k], OQC_OP_ReduceMean) : -1;
    if (r2 < 0)
        return 0;
    int sb = producer_op(g, d, OQC_OP_Sub);
    int p = g->nodes[r2].in[0], pw = producer_op(g, p, OQC_OP_Pow);
    float two;
    if (pw >= 0 && (g->nodes[pw].in[0] != d || !const_scalar(g, g->nodes[pw].in[1], &two) ||
                    two != 2.0f))
        pw = -1;
    if (pw < 0) {   /* or d * d */
        pw = producer_op(g, p, OQC_OP_Mul);
        if (pw >= 0 && (g->nodes[pw].in[0] != d || g->nodes[pw].in[1] != d))
            pw = -1;
    }
    if (sb < 0 || pw < 0)
        return 0;
    int r1 = producer_op(g, g->nodes[sb].in[1], OQC_OP_ReduceMean);
    if (r1 < 0 || g->nodes[r1].in[0] != g->nodes[sb].in[0])
        return 0;
    *x = g->nodes[sb].in[0];
    const OqcTensor *xt = &g->tensors[*x];
    *axis = trailing_mean(g, r1);
    if (xt->dtype != OQCF_FLOAT || !oqc_shape_known(&xt->shape) || *axis < 0 ||
        trailing_mean(g, r2) != *axis)
        return 0;
    if (!read_only_by(g, g->nodes[r1].out[0], sb, -1) || !read_only_by(g, d, pw, i) ||
        !read_only_by(g, p, r2, -1) || !read_only_by(g, g->nodes[r2].out[0], ad, -1) ||
        !read_only_by(g, g->nodes[ad].out[0], sq, -1) ||
        !read_only_by(g, g->nodes[sq].out[0], i, -1))
        return 0;
    int v[] = {r1, sb, pw, r2, ad, sq, i};
    memcpy(mem, v, sizeof v);
    return 7;
}

/* The constant operand of binary node c (op `op`) applied to t, with n elements. */
static int affine_operand(const OqcGraph *g, int t, OqcOp op, int64_t n, int *node) {
    const OqcTensor *x = &g->tensors[t];
    if (x->is_output || x->nconsumers != 1)
        return -1;
    int c = x->consumers[0];
    const OqcNode *cn = &g->nodes[c];
    if (cn->op != op || cn->nin != 2)
        return -1;
    int k = cn->in[0] == t ? 1 : 0;
    if (cn->in[1 - k] != t || !const_of(g, cn->in[k], n) ||
        !oqc_shape_equal(&g->tensors[cn->out[0]].shape, &x->shape))
        return -1;
    *node = c;
    return cn->in[k];
}

int pass_fold_patterns(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    int nn = g->nnodes, nhs = 0, nln = 0, ngelu = 0;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    for (int i = 0; i < nn; i++) {
        if (dead[i] || g->nodes[i].op != OQC_OP_Mul)
            continue;
        int x, h = hard_swish_of(g, i, &x);
        if (h < 0 || dead[h])
            continue;
        rewrite(g, i, OQC_OP_HardSwish, &x, 1, NULL, 0);
        dead[h] = 1;
        nhs++;
    }
    for (int i = 0; i < nn; i++) {
        if (dead[i] || g->nodes[i].op != OQC_OP_Div)
            continue;
        int mem[8], x, axis;
        float eps;
        int nm = layer_norm_of(g, i, mem, &x, &axis, &eps);
        int ok = nm > 0;
        for (int k = 0; k < nm; k++)
            ok &= !dead[mem[k]];
        if (!ok)
            continue;
        const OqcTensor *xt = &g->tensors[x];
        int64_t inner = 1;
        for (int a = axis; a < xt->shape.rank; a++)
            inner *= xt->shape.d[a];
        int last = i, mu = -1, ab = -1;
        int gamma = affine_operand(g, g->nodes[i].out[0], OQC_OP_Mul, inner, &mu);
        if (gamma >= 0)
            last = mu;
        int beta = affine_operand(g, g->nodes[last].out[0], OQC_OP_Add, inner, &ab);
        if (beta >= 0)
            last = ab;
        if (gamma < 0) {   /* the scale LayerNormalization needs: ones */
            gamma = oqc_tensor_add(g, oqc_arena_printf(g->arena, "%s.ones",
                                                       g->nodes[last].name));
            OqcTensor *t = &g->tensors[gamma];
            t->dtype = OQCF_FLOAT;
            t->shape = (OqcShape){.rank = 1, .d = {inner}};
            t->is_const = 1;
            t->nbytes = (size_t)inner * sizeof(float);
            float *one = oqc_arena_alloc_raw(g->arena, t->nbytes ? t->nbytes : 1);
            for (int64_t k = 0; k < inner; k++)
                one[k] = 1.0f;
            t->data = one;
        }
        OqcAttr *a = oqc_arena_alloc(g->arena, 2 * sizeof *a);
        a[0] = (OqcAttr){.name = "axis", .type = OQC_ATTR_INT, .i = axis};
        a[1] = (OqcAttr){.name = "epsilon", .type = OQC_ATTR_FLOAT, .f = eps};
        int in[3] = {x, gamma, beta};
        for (int k = 0; k < nm; k++)
            dead[mem[k]] = 1;
        if (mu >= 0)
            dead[mu] = 1;
        dead[last] = 0;
        rewrite(g, last, OQC_OP_LayerNormalization, in, beta >= 0 ? 3 : 2, a, 2);
        nln++;
    }
    for (int i = 0; i < nn; i++) {
        if (dead[i] || g->nodes[i].op != OQC_OP_Erf)
            continue;
        int mem[5], x, nm = gelu_of(g, i, mem, &x), ok = nm > 0;
        for (int k = 0; k < nm; k++)
            ok &= !dead[mem[k]];
        if (!ok)
            continue;
        for (int k = 0; k < nm - 1; k++)
            dead[mem[k]] = 1;
        rewrite(g, mem[nm - 1], OQC_OP_Gelu, &x, 1, NULL, 0);
        ngelu++;
    }
    oqc_info(d, "fold-patterns: %d HardSwish (x * HardSigmoid(x)), %d LayerNormalization "
             "(ReduceMean ... Div), %d Gelu (x * 0.5 * (1 + Erf(x / sqrt 2)))", nhs, nln,
             ngelu);
    if (nhs + nln + ngelu) {
        unsigned char *dead_all = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
        memcpy(dead_all, dead, (size_t)nn);
        oqc_graph_remove_nodes(g, dead_all);
    }
    return nhs + nln + ngelu;
}
