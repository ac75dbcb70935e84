/* fold_bn.c - pass "fold-bn": BatchNormalization, and Mul/Add by per-channel
 * constants, folded into the Conv or Gemm that produces their input.
 *
 * Inference BatchNormalization is, per channel c (axis 1), the affine map
 *     y = x * s[c] + t[c],   s = gamma / sqrt(var + eps),   t = beta - mean * s,
 * and so are a Mul and an Add by a constant that varies along axis 1 only (caffe2-era
 * exporters emit Conv -> Mul -> Add instead of BatchNormalization). Such a map after a
 * Conv or Gemm whose output nothing else reads is absorbed by that node: each weight of
 * output channel c is multiplied by s[c] and the bias becomes b[c] * s[c] + t[c], i.e.
 * (b - mean) * s + beta for BN. Channel c is row c of Conv's weight [K, C/group, k...]
 * and column c of Gemm's op(B) (row c of B when transB). A Conv without bias gets one;
 * Gemm's C becomes beta * C * s + t and beta becomes 1. The producer then writes the
 * folded node's output, and the folded node is removed (its old input tensor is left
 * unreferenced; the cleanup pass and dumps ignore it).
 *
 * Arithmetic is in double, rounded once to float. Folded weights and biases are new
 * constant tensors ("<node>.weight_folded", "<node>.bias_folded"): the model's own
 * constants are never rewritten, since another node may read them. A tensor this run
 * created belongs to exactly one node, so a second map folding into the same node
 * (Conv -> Mul -> Add) updates it in place.
 *
 * The same maps along the last axis after a MatMul (bias and layer scale of transformer
 * blocks) are folded by fold_matmul.c, run at the end of this pass.
 *
 * Where a BatchNormalization (or a Mul/Add by a constant right after a Conv/Gemm)
 * cannot be folded, an -v line says why and that part of the graph is left as it was.
 * Validation is complete before anything is changed, so a pass that folds nothing
 * leaves the graph byte-for-byte as it found it. */
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One per-channel affine map y[c] = x[c] * scale[c] + shift[c]. */
typedef struct Affine {
    int64_t nch;         /* channels (extent of axis 1) */
    double *scale;       /* nch factors; NULL means all 1 */
    double *shift;       /* nch offsets; NULL means all 0 */
} Affine;

/* State of one run of the pass. */
typedef struct Fold {
    OqcGraph *g;          /* the graph being rewritten */
    int first_new;        /* tensors with id >= first_new were created by this run */
    unsigned char *dead;  /* per node: folded away, removed at the end */
    int nbn;              /* BatchNormalization folded */
    int nmul;             /* Mul folded */
    int nadd;             /* Add folded */
} Fold;

const float *oqc_pass_const_f32(const OqcGraph *g, int t) {
    if (t < 0)
        return NULL;
    const OqcTensor *tt = &g->tensors[t];
    if (!tt->is_const || tt->dtype != OQCF_FLOAT || !tt->data ||
        !oqc_shape_known(&tt->shape))
        return NULL;
    return tt->data;
}

static int is_conv_or_gemm(const OqcNode *n) {
    return n->op == OQC_OP_Conv || n->op == OQC_OP_Gemm;
}

/* Checks that producer p of tensor x, a Conv or Gemm, can absorb a per-channel map over
 * nch channels: x is read only by the node being folded, is not a graph output, p has no
 * fused activation, and its weight (and bias) are float constants of matching shape.
 * 1 when it can, else 0 with the reason in why. */
static int check_producer(const Fold *f, int p, int x, int64_t nch, char *why) {
    const OqcGraph *g = f->g;
    const OqcNode *pn = &g->nodes[p];
    const OqcTensor *xt = &g->tensors[x];
    if (xt->nconsumers != 1)
        return oqc_pass_why(why, "its input '%s' has %d consumers", xt->name,
                            xt->nconsumers);
    if (xt->is_output)
        return oqc_pass_why(why, "its input '%s' is a graph output", xt->name);
    if (pn->act.kind != OQCF_ACT_NONE || pn->act_per_channel)
        return oqc_pass_why(why, "%s '%s' already has a fused activation",
                            pn->op_type, pn->name);
    if (pn->out[0] != x)
        return oqc_pass_why(why, "'%s' is not the first output of '%s'", xt->name,
                            pn->name);
    if (xt->dtype != OQCF_FLOAT || xt->shape.rank < 2 || xt->shape.d[1] != nch)
        return oqc_pass_why(why, "its input '%s' is not a float tensor with %lld "
                            "channels", xt->name, (long long)nch);
    int w = pn->nin > 1 ? pn->in[1] : -1;
    if (!oqc_pass_const_f32(g, w))
        return oqc_pass_why(why, "the weight of %s '%s' is not a float constant",
                            pn->op_type, pn->name);
    const OqcShape *ws = &g->tensors[w].shape;
    int64_t wch = pn->op == OQC_OP_Conv ? (ws->rank >= 1 ? ws->d[0] : -1)
                  : ws->rank == 2 ? ws->d[oqc_attr_int(pn, "transB", 0) ? 0 : 1] : -1;
    if (wch != nch)
        return oqc_pass_why(why, "the weight of '%s' does not have %lld output "
                            "channels", pn->name, (long long)nch);
    int b = pn->nin > 2 ? pn->in[2] : -1;
    if (b >= 0 && !oqc_pass_const_f32(g, b))
        return oqc_pass_why(why, "the %s of %s '%s' is not a float constant",
                            pn->op == OQC_OP_Conv ? "bias" : "C", pn->op_type, pn->name);
    return 1;
}

const char *oqc_pass_unique_name(OqcGraph *g, const char *base, const char *suffix) {
    const char *name = oqc_arena_printf(g->arena, "%s%s", base, suffix);
    for (int i = 1; oqc_tensor_find(g, name) >= 0; i++)
        name = oqc_arena_printf(g->arena, "%s%s.%d", base, suffix, i);
    return name;
}

int oqc_pass_new_const(OqcGraph *g, const char *name, const OqcShape *shape) {
    int t = oqc_tensor_add(g, name); /* may move g->tensors: take pointers after */
    OqcTensor *tt = &g->tensors[t];
    size_t n = (size_t)oqc_shape_numel(shape);
    tt->dtype = OQCF_FLOAT;
    tt->shape = *shape;
    tt->is_const = 1;
    tt->nbytes = n * sizeof(float);
    tt->data = oqc_arena_alloc_raw(g->arena, tt->nbytes ? tt->nbytes : 1);
    return t;
}

/* Sets input slot `slot` of node to tensor t, growing the input list if needed. */
static void set_input(OqcGraph *g, int node, int slot, int t) {
    OqcNode *n = &g->nodes[node];
    if (slot >= n->nin) {
        int *in = oqc_arena_alloc(g->arena, (size_t)(slot + 1) * sizeof *in);
        memcpy(in, n->in, (size_t)n->nin * sizeof *in);
        for (int k = n->nin; k < slot; k++)
            in[k] = -1;
        n->in = in;
        n->nin = slot + 1;
    }
    n->in[slot] = t;
}

/* Writable data for input `slot` of node: the tensor itself when this run created it,
 * else a new copy (named "<node><suffix>") that the node reads from now on. */
static float *writable_input(Fold *f, int node, int slot, const char *suffix) {
    OqcGraph *g = f->g;
    int t = g->nodes[node].in[slot];
    if (t >= f->first_new)
        return g->tensors[t].data;
    OqcShape shape = g->tensors[t].shape;
    int c = oqc_pass_new_const(g, oqc_pass_unique_name(g, g->nodes[node].name, suffix),
                               &shape);
    memcpy(g->tensors[c].data, g->tensors[t].data, g->tensors[c].nbytes);
    set_input(g, node, slot, c);
    return g->tensors[c].data;
}

/* Conv: weight row k times scale[k]; bias b*scale + shift (created when missing). */
static void fold_into_conv(Fold *f, int conv, const Affine *a) {
    OqcGraph *g = f->g;
    if (a->scale) {
        int64_t per = oqc_shape_numel(&g->tensors[g->nodes[conv].in[1]].shape) / a->nch;
        float *w = writable_input(f, conv, 1, ".weight_folded");
        for (int64_t k = 0; k < a->nch; k++)
            for (int64_t i = 0; i < per; i++)
                w[k * per + i] = (float)((double)w[k * per + i] * a->scale[k]);
    }
    int has_b = g->nodes[conv].nin > 2 && g->nodes[conv].in[2] >= 0;
    if (!has_b && !a->shift)
        return; /* a Mul on a conv without bias: nothing to add */
    float *b;
    if (has_b) {
        b = writable_input(f, conv, 2, ".bias_folded");
    } else {
        OqcShape s = {.rank = 1, .d = {a->nch}};
        const char *name = oqc_pass_unique_name(g, g->nodes[conv].name, ".bias_folded");
        int t = oqc_pass_new_const(g, name, &s);
        b = g->tensors[t].data;
        memset(b, 0, g->tensors[t].nbytes);
        set_input(g, conv, 2, t);
    }
    for (int64_t k = 0; k < a->nch; k++)
        b[k] = (float)((double)b[k] * (a->scale ? a->scale[k] : 1.0) +
                       (a->shift ? a->shift[k] : 0.0));
}

/* Element (i, j) of Gemm's C of shape s broadcast to M x N. */
static double gemm_c_at(const OqcShape *s, const float *c, int64_t i, int64_t j) {
    if (s->rank == 0)
        return c[0];
    if (s->rank == 1)
        return c[s->d[0] == 1 ? 0 : j];
    return c[(s->d[0] == 1 ? 0 : i) * s->d[1] + (s->d[1] == 1 ? 0 : j)];
}

/* Gemm (Y = alpha A op(B) + beta C): column j of op(B) times scale[j];
 * C' = beta * C * scale + shift, of shape [N], or [M, N] when C varies along rows;
 * beta becomes 1. */
static void fold_into_gemm(Fold *f, int gemm, const Affine *a) {
    OqcGraph *g = f->g;
    OqcNode *n = &g->nodes[gemm];
    int64_t nn = a->nch;
    if (a->scale) {
        const OqcShape *bs = &g->tensors[n->in[1]].shape;
        int tb = oqc_attr_int(n, "transB", 0) != 0;
        int64_t kk = bs->d[tb ? 1 : 0];
        float *w = writable_input(f, gemm, 1, ".weight_folded");
        for (int64_t k = 0; k < kk; k++)
            for (int64_t j = 0; j < nn; j++) {
                float *p = tb ? &w[j * kk + k] : &w[k * nn + j];
                *p = (float)((double)*p * a->scale[j]);
            }
    }
    int c = n->nin > 2 ? n->in[2] : -1;
    if (c < 0 && !a->shift)
        return;
    double beta = oqc_attr_float(n, "beta", 1.0f);
    int64_t m = g->tensors[n->out[0]].shape.d[0];
    OqcShape cs = c >= 0 ? g->tensors[c].shape : (OqcShape){.rank = 0};
    int rows = cs.rank == 2 && cs.d[0] != 1;
    OqcShape ns = {.rank = 1, .d = {nn}};
    if (rows)
        ns = (OqcShape){.rank = 2, .d = {m, nn}};
    /* C' may differ from C in shape; a C this run made with the same shape is reused. */
    int t = c >= f->first_new && oqc_shape_equal(&cs, &ns)
                ? c
                : oqc_pass_new_const(g, oqc_pass_unique_name(g, n->name, ".bias_folded"),
                                     &ns);
    const float *src = c >= 0 ? g->tensors[c].data : NULL;
    float *dst = g->tensors[t].data;
    for (int64_t i = 0; i < (rows ? m : 1); i++) /* dst may be src: same index */
        for (int64_t j = 0; j < nn; j++) {
            double v = src ? beta * gemm_c_at(&cs, src, i, j) : 0.0;
            dst[i * nn + j] = (float)(v * (a->scale ? a->scale[j] : 1.0) +
                                      (a->shift ? a->shift[j] : 0.0));
        }
    set_input(g, gemm, 2, t);
    for (int k = 0; k < n->nattr; k++)
        if (!strcmp(n->attr[k].name, "beta") && n->attr[k].f != 1.0f) {
            /* the node's own attribute array, copied so no other node can see it */
            OqcAttr *at = oqc_arena_dup(g->arena, n->attr, (size_t)n->nattr * sizeof *at);
            at[k].f = 1.0f;
            n->attr = at;
        }
}

/* Folds map a into producer p of the input of `node`, which p's output then replaces. */
static void absorb(Fold *f, int p, int node, const Affine *a) {
    OqcGraph *g = f->g;
    if (g->nodes[p].op == OQC_OP_Conv)
        fold_into_conv(f, p, a);
    else
        fold_into_gemm(f, p, a);
    int x = g->nodes[p].out[0], y = g->nodes[node].out[0];
    g->nodes[p].out[0] = y;
    /* Keep producer and consumer counts right for the rest of the scan (the graph is
     * relinked at the end). */
    g->tensors[y].producer = p;
    g->tensors[x].producer = -1;
    g->tensors[x].nconsumers = 0;
    f->dead[node] = 1;
}

int oqc_pass_bn_affine(OqcGraph *g, int node, int64_t *nch, double **scale,
                       double **shift, char *why) {
    const OqcNode *n = &g->nodes[node];
    int x = n->in[0];
    if (oqc_attr_int(n, "training_mode", 0) != 0 ||
        (n->opset < 7 && oqc_attr_int(n, "is_test", 1) == 0))
        return oqc_pass_why(why, "it is in training mode");
    if (oqc_attr_int(n, "spatial", 1) == 0)
        return oqc_pass_why(why, "spatial=0 (per-activation statistics)");
    for (int k = 1; k < n->nout; k++)
        if (n->out[k] >= 0 &&
            (g->tensors[n->out[k]].nconsumers || g->tensors[n->out[k]].is_output))
            return oqc_pass_why(why, "its training output '%s' is used",
                                g->tensors[n->out[k]].name);
    const OqcShape *xs = &g->tensors[x].shape;
    if (xs->rank < 2 || xs->d[1] < 0)
        return oqc_pass_why(why, "the channel count of '%s' is unknown",
                            g->tensors[x].name);
    int64_t c_n = xs->d[1];
    const float *par[4];
    static const char *const what[4] = {"scale", "B", "mean", "var"};
    for (int k = 0; k < 4; k++) {
        int t = n->nin > k + 1 ? n->in[k + 1] : -1;
        par[k] = oqc_pass_const_f32(g, t);
        if (!par[k] || oqc_shape_numel(&g->tensors[t].shape) != c_n)
            return oqc_pass_why(why, "its %s is not a float constant of %lld values",
                                what[k], (long long)c_n);
    }
    double eps = oqc_attr_float(n, "epsilon", 1e-5f);
    for (int64_t c = 0; c < c_n; c++)
        if (!((double)par[3][c] + eps > 0))
            return oqc_pass_why(why, "var + epsilon is not positive for channel %lld",
                                (long long)c);
    *nch = c_n;
    *scale = oqc_arena_alloc(g->arena, (size_t)c_n * sizeof **scale);
    *shift = oqc_arena_alloc(g->arena, (size_t)c_n * sizeof **shift);
    for (int64_t c = 0; c < c_n; c++) {
        double s = (double)par[0][c] / sqrt((double)par[3][c] + eps);
        (*scale)[c] = s;
        (*shift)[c] = (double)par[1][c] - (double)par[2][c] * s;
    }
    return 1;
}

/* Builds the affine map of BatchNormalization `node` if it can be folded into the Conv
 * or Gemm producing its input; 1 (with *p set), 0 when it cannot (reason in why). */
static int bn_map(Fold *f, int node, int *p, Affine *a, char *why) {
    OqcGraph *g = f->g;
    int x = g->nodes[node].in[0];
    *p = g->tensors[x].producer;
    if (*p < 0)
        return oqc_pass_why(why, "its input '%s' is a graph %s", g->tensors[x].name,
                            g->tensors[x].is_const ? "constant" : "input");
    if (!is_conv_or_gemm(&g->nodes[*p]))
        return oqc_pass_why(why, "its input '%s' is computed by %s '%s', not Conv or Gemm",
                            g->tensors[x].name, g->nodes[*p].op_type, g->nodes[*p].name);
    return oqc_pass_bn_affine(g, node, &a->nch, &a->scale, &a->shift, why) &&
           check_producer(f, *p, x, a->nch, why);
}

/* Builds the map of Mul/Add `node` by a constant after a Conv/Gemm: 1 when it folds,
 * 0 when it cannot (reason in why), -1 when it is not such a node at all (the other
 * operand is not a constant, or the input is not a Conv/Gemm output): no message. */
static int muladd_map(Fold *f, int node, int *p, Affine *a, char *why) {
    OqcGraph *g = f->g;
    const OqcNode *n = &g->nodes[node];
    if (n->nin != 2 || n->in[0] < 0 || n->in[1] < 0)
        return -1;
    int side = -1; /* which input is the Conv/Gemm output */
    for (int k = 0; k < 2 && side < 0; k++) {
        int pr = g->tensors[n->in[k]].producer;
        if (pr >= 0 && is_conv_or_gemm(&g->nodes[pr]) && g->tensors[n->in[1 - k]].is_const)
            side = k;
    }
    if (side < 0)
        return -1;
    int x = n->in[side], c = n->in[1 - side];
    *p = g->tensors[x].producer;
    const OqcShape *xs = &g->tensors[x].shape, *cs = &g->tensors[c].shape;
    if (oqc_attr_find(n, "broadcast"))
        return oqc_pass_why(why, "it uses the legacy 'broadcast' attribute");
    if (xs->rank < 2 || !oqc_shape_known(xs))
        return oqc_pass_why(why, "the shape of '%s' is unknown", g->tensors[x].name);
    const float *cv = oqc_pass_const_f32(g, c);
    if (!cv)
        return oqc_pass_why(why, "constant '%s' is not float", g->tensors[c].name);
    /* Per channel: broadcasting does not grow x, and every axis but 1 has extent 1. */
    int64_t nch = xs->d[1];
    int ok = cs->rank <= xs->rank;
    for (int i = 0; ok && i < cs->rank; i++) {
        int axis = xs->rank - cs->rank + i;
        ok = cs->d[i] == 1 || (axis == 1 && cs->d[i] == nch);
    }
    if (!ok) {
        char sb[64], xb[64];
        return oqc_pass_why(why, "constant '%s' of shape %s is not per-channel for "
                            "'%s' of shape %s", g->tensors[c].name,
                            oqc_shape_str(cs, sb, sizeof sb), g->tensors[x].name,
                            oqc_shape_str(xs, xb, sizeof xb));
    }
    if (!check_producer(f, *p, x, nch, why))
        return 0;
    int64_t numel = oqc_shape_numel(cs); /* 1 or nch */
    double *v = oqc_arena_alloc(g->arena, (size_t)nch * sizeof *v);
    for (int64_t ch = 0; ch < nch; ch++)
        v[ch] = cv[numel == 1 ? 0 : ch];
    a->nch = nch;
    a->scale = n->op == OQC_OP_Mul ? v : NULL;
    a->shift = n->op == OQC_OP_Add ? v : NULL;
    return 1;
}

int pass_fold_bn(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    Fold f = {.g = g, .first_new = g->ntensors};
    f.dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    int nbn_total = 0;
    /* Nodes are in topological order, so in Conv -> BN -> Mul the BN folds first and the
     * Mul then sees the Conv as its producer. */
    for (int i = 0; i < g->nnodes; i++) {
        OqcOp op = g->nodes[i].op;
        if (op != OQC_OP_BatchNormalization && op != OQC_OP_Mul && op != OQC_OP_Add)
            continue;
        char why[OQC_WHY_SIZE];
        Affine a = {0};
        int p = -1, r;
        if (op == OQC_OP_BatchNormalization) {
            nbn_total++;
            if (g->nodes[i].nin >= 1 && g->nodes[i].in[0] >= 0)
                r = bn_map(&f, i, &p, &a, why);
            else
                r = oqc_pass_why(why, "it has no input");
        } else {
            r = muladd_map(&f, i, &p, &a, why);
        }
        if (r < 0)
            continue;
        if (r == 0) {
            oqc_info(d, "fold-bn: '%s' (%s) not folded: %s", g->nodes[i].name,
                     g->nodes[i].op_type, why);
            continue;
        }
        absorb(&f, p, i, &a);
        f.nbn += op == OQC_OP_BatchNormalization;
        f.nmul += op == OQC_OP_Mul;
        f.nadd += op == OQC_OP_Add;
    }
    int n = f.nbn + f.nmul + f.nadd;
    if (n)
        oqc_graph_remove_nodes(g, f.dead);
    int mm[4];
    n += oqc_fold_matmul(g, mm);
    oqc_info(d, "fold-bn: folded %d of %d BatchNormalization, %d Mul and %d Add by "
             "per-channel constants into Conv/Gemm; %d Mul and %d Add by per-column "
             "constants into %d MatMul (%d of them now Gemm)", f.nbn, nbn_total, f.nmul,
             f.nadd, mm[1], mm[2], mm[0], mm[3]);
    return n;
}
