/* fold_matmul.c - part of pass "fold-bn": Add and Mul by constants along the output
 * columns, folded into the MatMul that produces their input.
 *
 * Transformer-style blocks (ConvNeXt, ViT, MLP-Mixer) export a linear layer on a rank-3
 * or rank-4 activation as MatMul(A [..., C], B [C, K]) followed by Add(bias [K]) and
 * often Mul(layer_scale [K]). Such a chain is, per output column k, the affine map
 *     y[..., k] = (A B)[..., k] * s[k] + t[k]
 * (a Mul by c multiplies s and t by c, an Add of c adds c to t), so column k of B is
 * multiplied by s[k] and t becomes a bias. Without an Add the MatMul keeps its form with
 * the scaled B. With one, ONNX MatMul has no bias input, so the node becomes
 *     Reshape(A, [-1, C]) -> Gemm(., B', t) -> Reshape(., [-1, y's other dims])
 * (-1: the batch, inferred; a 2-D A needs no Reshapes). Reshapes are views: the FP32
 * code runs one Gemm, and INT8 one integer Gemm with an int32 bias where it used to run
 * a MatMul and float islands for the Add and the Mul. The chain may pass Transposes,
 * which move the columns to another axis (torchvision's layer scale [C, 1, 1] after the
 * Transpose back to NCHW); they stay, in order, after the product.
 *
 * Eligible: B a float constant of rank 2, A float of known static shape and rank >= 2,
 * each chain value read only by the next node of the chain (not a graph output), each
 * constant a float tensor whose every dimension is 1 but the one on the columns' axis,
 * which is 1 or K, with rank at most that of y (so broadcasting grows nothing).
 * Arithmetic in double, rounded once to float; results equal the unfolded graph's up to
 * float reassociation (a few ulps of the largest value). B and the constants are never
 * rewritten (another node may read them): the folded values are new constants
 * "<node>.weight_folded", "<node>.bias_folded". */
#include "passes.h"

#include <string.h>

#define CHAIN_MAX_TRANSPOSES 4 /* Transposes a chain may pass */

/* The chain after one MatMul: its affine map per output column. */
typedef struct Chain {
    int64_t k;        /* output columns */
    double *scale;    /* k factors */
    double *shift;    /* k offsets */
    int axis;         /* the axis of the chain's current value that holds the columns */
    int has_shift;    /* an Add was folded */
    int nmul, nadd;   /* folded nodes by kind */
    int ntr;          /* Transposes passed (kept, in order, in tr) */
    int tr[CHAIN_MAX_TRANSPOSES];
} Chain;

/* A tensor name not yet in g: "<base><suffix>", or with ".1", ".2"... appended. */
static const char *fresh_name(OqcGraph *g, const char *base, const char *suffix) {
    const char *name = oqc_arena_printf(g->arena, "%s%s", base, suffix);
    for (int i = 1; oqc_tensor_find(g, name) >= 0; i++)
        name = oqc_arena_printf(g->arena, "%s%s.%d", base, suffix, i);
    return name;
}

/* A new constant of type dt and shape s, its bytes uninitialised; its id. */
static int new_const(OqcGraph *g, const char *name, OqcfDType dt, const OqcShape *s) {
    int t = oqc_tensor_add(g, name);   /* may move g->tensors */
    OqcTensor *x = &g->tensors[t];
    x->dtype = dt;
    x->shape = *s;
    x->is_const = 1;
    x->nbytes = (size_t)oqc_shape_numel(s) * oqcf_dtype_size(dt);
    x->data = oqc_arena_alloc_raw(g->arena, x->nbytes ? x->nbytes : 1);
    return t;
}

/* The float values of constant t when, broadcast against y (shape ys), it varies along
 * axis `axis` of y only: every dim 1 but that one, which is 1 or k; *n its count. */
static const float *column_const(const OqcGraph *g, int t, const OqcShape *ys, int axis,
                                 int64_t k, int64_t *n) {
    const OqcTensor *c = &g->tensors[t];
    if (!c->is_const || c->dtype != OQCF_FLOAT || !c->data || !oqc_shape_known(&c->shape) ||
        c->shape.rank > ys->rank)
        return NULL;
    for (int i = 0; i < c->shape.rank; i++)
        if (c->shape.d[i] != 1 && (ys->rank - c->shape.rank + i != axis || c->shape.d[i] != k))
            return NULL;
    *n = oqc_shape_numel(&c->shape);
    return c->data;
}

/* The axis of Transpose node n's output that its input's axis `axis` becomes, or -1. */
static int transposed_axis(const OqcNode *n, int rank, int axis) {
    const int64_t *perm;
    int np = oqc_attr_ints(n, "perm", &perm);
    if (np < 0)   /* default: the axes reversed */
        return rank - 1 - axis;
    for (int j = 0; j < np; j++)
        if (perm[j] == axis)
            return np == rank ? j : -1;
    return -1;
}

/* Extends chain ch by the reader of tensor y: an Add or Mul by a constant along the
 * column axis (folded), or a Transpose (passed, the columns moving with it). That node,
 * or -1 when y's reader is neither. */
static int chain_step(const OqcGraph *g, int y, Chain *ch) {
    const OqcTensor *yt = &g->tensors[y];
    if (yt->is_output || yt->nconsumers != 1)
        return -1;
    int c = yt->consumers[0];
    const OqcNode *n = &g->nodes[c];
    if (n->nout != 1 || n->out[0] < 0 || n->act.kind != OQCF_ACT_NONE)
        return -1;
    if (n->op == OQC_OP_Transpose && ch->ntr < CHAIN_MAX_TRANSPOSES) {
        int a = transposed_axis(n, yt->shape.rank, ch->axis);
        if (a < 0)
            return -1;
        ch->axis = a;
        ch->tr[ch->ntr++] = c;
        return c;
    }
    if ((n->op != OQC_OP_Add && n->op != OQC_OP_Mul) || n->nin != 2 ||
        oqc_attr_find(n, "broadcast") || n->in[0] < 0 || n->in[1] < 0 || n->in[0] == n->in[1])
        return -1;
    int other = n->in[0] == y ? n->in[1] : n->in[0];
    int64_t nv;
    const float *v = column_const(g, other, &yt->shape, ch->axis, ch->k, &nv);
    if (!v || !oqc_shape_equal(&g->tensors[n->out[0]].shape, &yt->shape))
        return -1;
    for (int64_t k = 0; k < ch->k; k++) {
        double c_k = v[nv == 1 ? 0 : k];
        if (n->op == OQC_OP_Mul) {
            ch->scale[k] *= c_k;
            ch->shift[k] *= c_k;
        } else {
            ch->shift[k] += c_k;
        }
    }
    ch->has_shift |= n->op == OQC_OP_Add;
    ch->nmul += n->op == OQC_OP_Mul;
    ch->nadd += n->op == OQC_OP_Add;
    return c;
}

/* Whether MatMul node m can absorb a chain: constant float B [C, K], float A of known
 * static shape and rank >= 2. */
static int foldable_matmul(const OqcGraph *g, const OqcNode *m) {
    if (m->nin != 2 || m->nout != 1 || m->in[0] < 0 || m->in[1] < 0 || m->out[0] < 0 ||
        m->act.kind != OQCF_ACT_NONE)
        return 0;
    const OqcTensor *a = &g->tensors[m->in[0]], *b = &g->tensors[m->in[1]];
    return b->is_const && b->dtype == OQCF_FLOAT && b->data && b->shape.rank == 2 &&
           a->dtype == OQCF_FLOAT && oqc_shape_known(&a->shape) && a->shape.rank >= 2 &&
           a->shape.d[a->shape.rank - 1] == b->shape.d[0];
}

/* Reshape(x -> y, or a new tensor when y < 0) to shape s, a node named after `base`
 * at opset `opset`; the output tensor. */
static int add_reshape(OqcGraph *g, const char *base, const char *suffix, int x, int y,
                       const OqcShape *s, int64_t opset) {
    OqcShape ss = {.rank = 1, .d = {s->rank}};
    int st = new_const(g, fresh_name(g, base, oqc_arena_printf(g->arena, "%s.shape",
                                                                suffix)), OQCF_INT64, &ss);
    int64_t *dims = g->tensors[st].data;
    memcpy(dims, s->d, (size_t)s->rank * sizeof *dims);
    dims[0] = -1;   /* the batch, inferred (the others are the model's) */
    if (y < 0) {
        y = oqc_tensor_add(g, fresh_name(g, base, suffix));
        g->tensors[y].dtype = OQCF_FLOAT;
        g->tensors[y].shape = *s;
    }
    int in[2] = {x, st};
    int r = oqc_node_add(g, OQC_OP_Reshape, NULL,
                         oqc_arena_printf(g->arena, "%s%s", base, suffix), 2, in, 1, &y);
    g->nodes[r].opset = opset;
    return y;
}

/* Rewrites MatMul node i for chain ch: its product, scaled per column, then writes x
 * (through a Gemm with the chain's offsets as bias when it has any). */
static void absorb_chain(OqcGraph *g, int i, const Chain *ch, int x) {
    const char *name = g->nodes[i].name;
    int a = g->nodes[i].in[0], b = g->nodes[i].in[1];
    int64_t C = g->tensors[b].shape.d[0], K = ch->k;
    int64_t opset = g->nodes[i].opset < 13 ? 13 : g->nodes[i].opset; /* Reshape's input form,
                                                                       Gemm's broadcast C */
    OqcShape bs = g->tensors[b].shape, ts = {.rank = 1, .d = {K}};
    int w = b;   /* B itself when no Mul scales it */
    if (ch->nmul) {
        w = new_const(g, fresh_name(g, name, ".weight_folded"), OQCF_FLOAT, &bs);
        const float *B = g->tensors[b].data;
        float *W = g->tensors[w].data;
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < K; k++)
                W[c * K + k] = (float)((double)B[c * K + k] * ch->scale[k]);
    }
    if (!ch->has_shift) {
        int in[2] = {a, w};
        g->nodes[i].in = oqc_arena_dup(g->arena, in, sizeof in);
        g->nodes[i].out[0] = x;
        return;
    }
    int t = new_const(g, fresh_name(g, name, ".bias_folded"), OQCF_FLOAT, &ts);
    float *T = g->tensors[t].data;
    for (int64_t k = 0; k < K; k++)
        T[k] = (float)ch->shift[k];
    OqcShape as = g->tensors[a].shape, xs = g->tensors[g->nodes[i].out[0]].shape;
    int rows = a, out = x;
    if (as.rank > 2) {
        OqcShape r2 = {.rank = 2, .d = {oqc_shape_numel(&as) / C, C}};
        OqcShape y2 = {.rank = 2, .d = {r2.d[0], K}};
        rows = add_reshape(g, name, ".rows", a, -1, &r2, opset);
        out = oqc_tensor_add(g, fresh_name(g, name, ".gemm"));
        g->tensors[out].dtype = OQCF_FLOAT;
        g->tensors[out].shape = y2;
        add_reshape(g, name, ".unrows", out, x, &xs, opset);
    }
    OqcNode *n = &g->nodes[i];   /* (oqc_node_add may have moved the nodes) */
    int in[3] = {rows, w, t};
    n->op = OQC_OP_Gemm;
    n->op_type = oqc_op_name(OQC_OP_Gemm);
    n->opset = opset;
    n->in = oqc_arena_dup(g->arena, in, sizeof in);
    n->nin = 3;
    n->out[0] = out;
    n->attr = NULL;
    n->nattr = 0;
}

int oqc_fold_matmul(OqcGraph *g, int st[4]) {
    int nn = g->nnodes, nm = 0, ngemm = 0, nmul = 0, nadd = 0;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)nn + 1);
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].op != OQC_OP_MatMul || !foldable_matmul(g, &g->nodes[i]))
            continue;
        int64_t K = g->tensors[g->nodes[i].in[1]].shape.d[1];
        Chain ch = {.k = K, .axis = g->tensors[g->nodes[i].out[0]].shape.rank - 1};
        ch.scale = oqc_arena_alloc(g->arena, (size_t)K * sizeof *ch.scale);
        ch.shift = oqc_arena_alloc(g->arena, (size_t)K * sizeof *ch.shift);
        for (int64_t k = 0; k < K; k++)
            ch.scale[k] = 1.0;
        /* y walks the chain; last is the output of its last Add/Mul, ntr the Transposes
         * before that one (later ones are left as they are) */
        int y = g->nodes[i].out[0], c, last = -1, ntr = 0;
        while ((c = chain_step(g, y, &ch)) >= 0) {
            y = g->nodes[c].out[0];
            if (g->nodes[c].op != OQC_OP_Transpose) {
                dead[c] = 1;
                last = y;
                ntr = ch.ntr;
            }
        }
        if (last < 0)
            continue;
        /* the kept Transposes run in order from the product to the chain's output */
        for (int j = 1; j < ntr; j++)
            g->nodes[ch.tr[j]].in[0] = g->nodes[ch.tr[j - 1]].out[0];
        if (ntr)
            g->nodes[ch.tr[ntr - 1]].out[0] = last;
        absorb_chain(g, i, &ch, ntr ? g->nodes[ch.tr[0]].in[0] : last);
        ngemm += ch.has_shift;
        nmul += ch.nmul;
        nadd += ch.nadd;
        nm++;
    }
    st[0] = nm, st[1] = nmul, st[2] = nadd, st[3] = ngemm;
    if (nm) {
        unsigned char *dead_all = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
        memcpy(dead_all, dead, (size_t)nn);
        oqc_graph_remove_nodes(g, dead_all);
    }
    return nm;
}
