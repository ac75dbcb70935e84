/* layout.c - the op family data movement: views, Concat, Split, Slice, Transpose, Pad,
 * Gather: shape rules (oqc_rule_*), FP32 preparation (oqc_prep_*), the run functions the
 * executor calls and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* ------------------------------------------------------------------ shape */

/* ------------------------------------------------------------ data movement */

int oqc_rule_concat(Ctx *c) {
    const OqcTensor *x0 = IN(c, 0);
    if (!oqc_attr_find(c->n, "axis"))
        return ERR("attribute 'axis' is required");
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", 0), x0->shape.rank, "axis");
    if (axis < 0)
        return -1;
    OqcShape s = x0->shape;
    for (int k = 1; k < c->n->nin; k++) {
        const OqcTensor *x = IN(c, k);
        if (!x)
            continue;
        if (x->dtype != x0->dtype || x->shape.rank != s.rank)
            return ERR("input '%s' (%s %s) does not match '%s' (%s %s)", x->name,
                       oqc_dtype_name(x->dtype), sstr(&x->shape), x0->name,
                       oqc_dtype_name(x0->dtype), sstr(&x0->shape));
        for (int i = 0; i < s.rank; i++)
            if (i != axis && x->shape.d[i] != s.d[i])
                return ERR("input '%s' %s differs from %s outside axis %d", x->name,
                           sstr(&x->shape), sstr(&x0->shape), axis);
        s.d[axis] += x->shape.d[axis];
    }
    set_out(c, 0, x0->dtype, &s);
    return 0;
}

int oqc_rule_split(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", 0), x->shape.rank, "axis");
    if (axis < 0)
        return -1;
    int64_t sizes[MAX_VALUES];
    int nout = c->n->nout, ns = -1;
    const int64_t *av;
    if (IN(c, 1)) {
        ns = int_list(c, 1, sizes, MAX_VALUES);
        if (ns < -1)
            return -1;
        if (ns < 0)
            return ERR("split sizes '%s' must be a constant", IN(c, 1)->name);
    } else if ((ns = oqc_attr_ints(c->n, "split", &av)) >= 0) {
        if (ns > MAX_VALUES)
            return ERR("too many split sizes");
        memcpy(sizes, av, (size_t)ns * sizeof *sizes);
    }
    int64_t dim = x->shape.d[axis];
    if (ns < 0) { /* equal parts; the last may be smaller (opset 18) */
        if (nout > MAX_VALUES || nout <= 0)
            return ERR("bad number of outputs %d", nout);
        int64_t part = (dim + nout - 1) / nout;
        if (oqc_attr_find(c->n, "num_outputs") == NULL && dim % nout)
            return ERR("axis %d of size %" PRId64 " does not split into %d equal parts", axis,
                       dim, nout);
        for (int i = 0; i < nout; i++)
            sizes[i] = i < nout - 1 ? part : dim - part * (nout - 1);
        ns = nout;
    }
    if (ns != nout)
        return ERR("%d split sizes for %d outputs", ns, nout);
    int64_t total = 0;
    for (int i = 0; i < ns; i++) {   /* (each compared before it is added: no overflow) */
        if (sizes[i] < 0)
            return ERR("negative split size %" PRId64, sizes[i]);
        if (sizes[i] > dim - total)
            return ERR("split sizes add up to more than axis %d's size %" PRId64 " (split %d: %" PRId64
                       ")", axis, dim, i, sizes[i]);
        total += sizes[i];
    }
    if (total != dim)
        return ERR("split sizes add up to %" PRId64 " but axis %d has size %" PRId64, total,
                   axis, dim);
    for (int i = 0; i < nout; i++) {
        OqcShape s = x->shape;
        s.d[axis] = sizes[i];
        set_out(c, i, x->dtype, &s);
    }
    return 0;
}

int oqc_rule_slice(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t st[OQC_MAX_RANK], en[OQC_MAX_RANK], ax[OQC_MAX_RANK], sp[OQC_MAX_RANK];
    int n, na = -1, nsp = -1;
    if (c->n->opset < 10) {
        const int64_t *v;
        n = oqc_attr_ints(c->n, "starts", &v);
        if (n < 0 || n > OQC_MAX_RANK || oqc_attr_ints(c->n, "ends", &v) != n)
            return ERR("attributes 'starts' and 'ends' must have the same length <= rank");
        oqc_attr_ints(c->n, "starts", &v);
        memcpy(st, v, (size_t)n * sizeof *st);
        oqc_attr_ints(c->n, "ends", &v);
        memcpy(en, v, (size_t)n * sizeof *en);
        if ((na = oqc_attr_ints(c->n, "axes", &v)) >= 0) {
            if (na != n)
                return ERR("'axes' has %d entries, 'starts' %d", na, n);
            memcpy(ax, v, (size_t)na * sizeof *ax);
        }
    } else {
        if (!IN(c, 1) || !IN(c, 2))
            return ERR("needs inputs starts and ends");
        n = int_list(c, 1, st, OQC_MAX_RANK);
        int ne = int_list(c, 2, en, OQC_MAX_RANK);
        na = IN(c, 3) ? int_list(c, 3, ax, OQC_MAX_RANK) : -1;
        nsp = IN(c, 4) ? int_list(c, 4, sp, OQC_MAX_RANK) : -1;
        if (n < -1 || ne < -1 || na < -1 || nsp < -1)
            return -1;
        if (n < 0 || ne < 0 || (IN(c, 3) && na < 0) || (IN(c, 4) && nsp < 0))
            return ERR("starts, ends, axes and steps must be constants");
        if (ne != n || (na >= 0 && na != n) || (nsp >= 0 && nsp != n))
            return ERR("starts, ends, axes and steps must have the same length");
    }
    OqcfSlice sl;
    if (oqcf_slice_resolve(&x->shape, st, en, n, na >= 0 ? ax : NULL, nsp >= 0 ? sp : NULL,
                           &sl) != OQCF_OK)
        return ERR("invalid slice of %s (axis out of range, repeated axis or zero step)",
                   sstr(&x->shape));
    set_out(c, 0, x->dtype, &sl.out);
    return 0;
}

int oqc_rule_flatten(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t axis = oqc_attr_int(c->n, "axis", 1);
    int r = x->shape.rank;
    if (axis < -r || axis > r)
        return ERR("axis %" PRId64 " is out of range for rank %d", axis, r);
    if (axis < 0)
        axis += r;
    OqcShape s = {.rank = 2, .d = {1, 1}};
    for (int i = 0; i < r; i++)
        s.d[i >= axis] = oqc_mul_sat(s.d[i >= axis], x->shape.d[i]);
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_reshape(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t v[OQC_MAX_RANK + 1];
    int n;
    if (c->n->opset < 5) {
        const int64_t *a;
        n = oqc_attr_ints(c->n, "shape", &a);
        if (n < 0 || n > OQC_MAX_RANK)
            return ERR("attribute 'shape' is missing or too long");
        memcpy(v, a, (size_t)n * sizeof *v);
    } else {
        if (!IN(c, 1))
            return ERR("needs a shape input");
        n = int_list(c, 1, v, OQC_MAX_RANK + 1);
        if (n < -1)
            return -1;
        if (n < 0)
            return ERR("shape input '%s' is not a constant oqc can compute", IN(c, 1)->name);
        if (n > OQC_MAX_RANK)
            return ERR("target rank %d exceeds %d", n, OQC_MAX_RANK);
    }
    int allowzero = (int)oqc_attr_int(c->n, "allowzero", 0);
    OqcShape s = {.rank = n};
    int64_t known = 1, total = oqc_shape_numel(&x->shape);
    int minus = -1;
    for (int i = 0; i < n; i++) {
        if (v[i] == -1) {
            if (minus >= 0)
                return ERR("shape has more than one -1");
            minus = i;
            continue;
        }
        if (v[i] < -1)
            return ERR("shape entry %" PRId64 " is invalid", v[i]);
        s.d[i] = v[i] == 0 && !allowzero ? (i < x->shape.rank ? x->shape.d[i] : -2) : v[i];
        if (s.d[i] == -2)
            return ERR("shape entry 0 at axis %d copies a dimension the input (rank %d) "
                       "does not have", i, x->shape.rank);
        known = oqc_mul_sat(known, s.d[i]);
    }
    if (minus >= 0) {
        if (known == 0 || total % known)
            return ERR("cannot reshape %s into %d dims with -1 (%" PRId64
                       " elements do not divide by %" PRId64 ")", sstr(&x->shape), n, total,
                       known);
        s.d[minus] = total / known;
    } else if (known != total) {
        return ERR("cannot reshape %s (%" PRId64 " elements) into %s", sstr(&x->shape), total,
                   sstr(&s));
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_transpose(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int r = x->shape.rank;
    const int64_t *perm;
    int np = oqc_attr_ints(c->n, "perm", &perm);
    OqcShape s = {.rank = r};
    int seen[OQC_MAX_RANK] = {0};
    if (np >= 0 && np != r)
        return ERR("perm has %d entries for rank %d", np, r);
    for (int i = 0; i < r; i++) {
        int64_t p = np >= 0 ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p]++)
            return ERR("perm is not a permutation of 0..%d", r - 1);
        s.d[i] = x->shape.d[p];
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_squeeze(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t ax[OQC_MAX_RANK];
    int na = axes_arg(c, ax, OQC_MAX_RANK);
    if (na == -1 || na < -2)
        return -1;
    int drop[OQC_MAX_RANK] = {0};
    if (na == -2) {
        for (int i = 0; i < x->shape.rank; i++)
            drop[i] = x->shape.d[i] == 1;
    } else {
        for (int i = 0; i < na; i++) {
            int a = norm_axis(c, ax[i], x->shape.rank, "axis");
            if (a < 0)
                return -1;
            if (x->shape.d[a] != 1)
                return ERR("cannot squeeze axis %d of %s: its size is not 1", a,
                           sstr(&x->shape));
            drop[a] = 1;
        }
    }
    OqcShape s = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++)
        if (!drop[i])
            s.d[s.rank++] = x->shape.d[i];
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_unsqueeze(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t ax[OQC_MAX_RANK];
    int na = axes_arg(c, ax, OQC_MAX_RANK);
    if (na == -2)
        return ERR("axes are required");
    if (na < 0)
        return -1;
    int r = x->shape.rank + na;
    if (r > OQC_MAX_RANK)
        return ERR("output rank %d exceeds %d", r, OQC_MAX_RANK);
    int ins[OQC_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int a = norm_axis(c, ax[i], r, "axis");
        if (a < 0)
            return -1;
        if (ins[a]++)
            return ERR("axis %d is repeated", a);
    }
    OqcShape s = {.rank = r};
    for (int i = 0, j = 0; i < r; i++)
        s.d[i] = ins[i] ? 1 : x->shape.d[j++];
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_dropout(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    set_out(c, 0, x->dtype, &x->shape);
    set_out(c, 1, OQCF_BOOL, &x->shape);
    return 0;
}

int oqc_rule_pad(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *cv = c->n->nin > 2 ? IN(c, 2) : NULL;
    int r = x->shape.rank;
    if (cv && (cv->dtype != x->dtype || oqc_shape_numel(&cv->shape) != 1))
        return ERR("constant_value '%s' must be one %s element (it is %s %s)", cv->name,
                   oqc_dtype_name(x->dtype), oqc_dtype_name(cv->dtype), sstr(&cv->shape));
    int64_t pads[2 * OQC_MAX_RANK] = {0}, raw[2 * OQC_MAX_RANK], ax[OQC_MAX_RANK];
    int np;
    if (c->n->opset < 11) {
        const int64_t *v;
        np = oqc_attr_ints(c->n, "pads", &v);
        if (np != 2 * r)
            return ERR("attribute 'pads' must have %d entries", 2 * r);
        memcpy(pads, v, (size_t)np * sizeof *pads);
    } else {
        if (!IN(c, 1))
            return ERR("needs a pads input");
        np = int_list(c, 1, raw, 2 * OQC_MAX_RANK);
        if (np < -1)
            return -1;
        if (np < 0)
            return ERR("pads input '%s' must be a constant", IN(c, 1)->name);
        int na = IN(c, 3) ? int_list(c, 3, ax, OQC_MAX_RANK) : -1;
        if (IN(c, 3) && na < 0)
            return ERR("axes input must be a constant");
        int nax = na >= 0 ? na : r;
        if (np != 2 * nax)
            return ERR("pads has %d entries; expected %d", np, 2 * nax);
        for (int i = 0; i < nax; i++) {
            int a = na >= 0 ? norm_axis(c, ax[i], r, "axis") : i;
            if (a < 0)
                return -1;
            pads[a] = raw[i];
            pads[r + a] = raw[nax + i];
        }
    }
    const char *mode = oqc_attr_string(c->n, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
        return ERR("pad mode '%s' is not supported (constant, reflect, edge)", mode);
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] > OQC_MAX_ELEMENTS || pads[i] < -OQC_MAX_ELEMENTS)
            return ERR("pad %" PRId64 " is absurd (magnitude above %" PRId64 ")", pads[i],
                       OQC_MAX_ELEMENTS);
    OqcShape s;
    if (oqcf_pad_shape(&x->shape, pads, &s) != OQCF_OK)
        return ERR("pads make a dimension of %s negative", sstr(&x->shape));
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_gather(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *ix = IN(c, 1);
    if (!ix)
        return ERR("needs an indices input");
    if (ix->dtype != OQCF_INT64 && ix->dtype != OQCF_INT32)
        return ERR("indices '%s' must be int32 or int64, not %s", ix->name,
                   oqc_dtype_name(ix->dtype));
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", 0), x->shape.rank, "axis");
    if (axis < 0)
        return -1;
    OqcShape s;
    if (oqcf_gather_shape(&x->shape, &ix->shape, axis, &s) != OQCF_OK)
        return ERR("output rank would exceed %d", OQC_MAX_RANK);
    /* constant indices are checked now: the kernel would fail on every run */
    const void *iv = known_values(ix);
    int64_t dim = x->shape.d[axis], nidx = iv ? oqc_shape_numel(&ix->shape) : 0;
    for (int64_t i = 0; i < nidx; i++) {
        int64_t k = ix->dtype == OQCF_INT64 ? ((const int64_t *)iv)[i]
                                             : ((const int32_t *)iv)[i];
        if (k < -dim || k >= dim)
            return ERR("index %" PRId64 " (element %" PRId64 " of '%s') is out of range for "
                       "axis %d of '%s', which has %" PRId64 " entries", k, i, ix->name, axis,
                       x->name, dim);
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* ------------------------------------------------------------------ run */

static int run_concat(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *xs[256];
    OqcfShape shapes[256];
    for (int k = 0; k < n->nin; k++) {
        xs[k] = XIN(e, node, k);
        shapes[k] = *SH(e, node, k);
    }
    CHECK(oqcf_concat(xs, shapes, n->nin, EN(e, node)->axis, esize_of(T(e, n->out[0])),
                      YOUT(e, node, 0)));
    return 0;
}

static int run_split(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    int64_t sizes[256];
    void *ys[256];
    for (int k = 0; k < n->nout; k++) {
        sizes[k] = T(e, n->out[k])->shape.d[EN(e, node)->axis];
        ys[k] = YOUT(e, node, k);
    }
    CHECK(oqcf_split(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, sizes, n->nout,
                     esize_of(T(e, n->in[0])), ys));
    return 0;
}

static int run_slice(OqcExec *e, int node) {
    CHECK(oqcf_slice(XIN(e, node, 0), SH(e, node, 0), &EN(e, node)->slice,
                     esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_transpose(OqcExec *e, int node) {
    CHECK(oqcf_transpose(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->perm,
                         esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_pad(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *value = NULL;
    if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0)
        value = XIN(e, node, 2);
    else if (n->opset < 11)
        value = &EN(e, node)->f0; /* float attribute 'value' */
    CHECK(oqcf_pad(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->pads, EN(e, node)->pad_mode,
                   value, esize_of(T(e, n->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_gather(OqcExec *e, int node) {
    const OqcTensor *ix = T(e, N(e, node)->in[1]);
    CHECK(oqcf_gather(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, XIN(e, node, 1),
                      ix->dtype, oqc_shape_numel(&ix->shape), esize_of(T(e, N(e, node)->in[0])),
                      YOUT(e, node, 0)));
    return 0;
}

static int run_dropout_mask(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    if (n->nout > 1 && n->out[1] >= 0)
        memset(YOUT(e, node, 1), 1, (size_t)numel_out(e, node, 1)); /* inference: keep all */
    return 0;
}

/* Concat */
int oqc_prep_concat(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    if (n->nin > 256)
        return PERR("more than 256 inputs");
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += out0->shape.rank;
    x->run = run_concat;
    x->kind = EXEC_CONCAT;
    return 0;
}

/* Split */
int oqc_prep_split(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (n->nout > 256)
        return PERR("more than 256 outputs");
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0)
            return PERR("output %d is omitted", k);
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += in0->shape.rank;
    x->run = run_split;
    x->kind = EXEC_SPLIT;
    return 0;
}

/* Slice */
int oqc_prep_slice(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int64_t v[4][OQC_MAX_RANK];
    int cnt[4];
    if (n->opset < 10) {
        const int64_t *p;
        for (int k = 0; k < 3; k++) {
            static const char *const names[] = {"starts", "ends", "axes"};
            cnt[k] = oqc_attr_ints(n, names[k], &p);
            if (cnt[k] > OQC_MAX_RANK)
                return PERR("too many slice entries");
            if (cnt[k] > 0)
                memcpy(v[k], p, (size_t)cnt[k] * sizeof *p);
        }
        cnt[3] = -1;
    } else {
        for (int k = 0; k < 4; k++)
            cnt[k] = values_of(g, node, k + 1, v[k], OQC_MAX_RANK);
        if (cnt[0] < 0 || cnt[1] < 0 || cnt[2] == -1 || cnt[3] == -1)
            return PERR("starts/ends/axes/steps must be constants");
    }
    if (oqcf_slice_resolve(&in0->shape, v[0], v[1], cnt[0], cnt[2] >= 0 ? v[2] : NULL,
                           cnt[3] >= 0 ? v[3] : NULL, &x->slice) != OQCF_OK)
        return PERR("invalid slice");
    x->run = run_slice;
    x->kind = EXEC_SLICE;
    return 0;
}

/* Transpose (the INT8 kind moves codes with the same permutation and call:
 * passes/quantize_eltwise.c, backend/emit_q.c) */
void oqc_transpose_perm(const OqcNode *n, int rank, int *perm) {
    const int64_t *p;
    int np = oqc_attr_ints(n, "perm", &p);
    for (int i = 0; i < OQC_MAX_RANK; i++)
        perm[i] = i >= rank ? 0 : np >= 0 ? (int)p[i] : rank - 1 - i;
}

int oqc_prep_transpose(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    (void)d;
    oqc_transpose_perm(n, e->g->tensors[n->in[0]].shape.rank, x->perm);
    x->run = run_transpose;
    x->kind = EXEC_TRANSPOSE;
    return 0;
}

/* Pad */
int oqc_prep_pad(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int r = in0->shape.rank;
    memset(x->pads, 0, sizeof x->pads);
    if (n->opset < 11) {
        const int64_t *p;
        if (oqc_attr_ints(n, "pads", &p) != 2 * r)
            return PERR("bad pads");
        memcpy(x->pads, p, (size_t)(2 * r) * sizeof *p);
        x->f0 = oqc_attr_float(n, "value", 0.0f);
        if (!is_float(in0))
            return PERR("only f32 is supported for opset < 11 Pad");
    } else {
        int64_t raw[2 * OQC_MAX_RANK], ax[OQC_MAX_RANK];
        int np = values_of(g, node, 1, raw, 2 * OQC_MAX_RANK);
        int na = values_of(g, node, 3, ax, OQC_MAX_RANK);
        if (np < 0 || na == -1)
            return PERR("pads and axes must be constants");
        int nax = na >= 0 ? na : r;
        for (int i = 0; i < nax; i++) {
            int a = na >= 0 ? (int)(ax[i] < 0 ? ax[i] + r : ax[i]) : i;
            x->pads[a] = raw[i];
            x->pads[r + a] = raw[nax + i];
        }
    }
    const char *mode = oqc_attr_string(n, "mode", "constant");
    x->pad_mode = !strcmp(mode, "reflect") ? OQCF_PAD_REFLECT
                : !strcmp(mode, "edge") ? OQCF_PAD_EDGE : OQCF_PAD_CONSTANT;
    x->run = run_pad;
    x->kind = EXEC_PAD;
    return 0;
}

/* Gather */
int oqc_prep_gather(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    (void)d;
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += in0->shape.rank;
    x->run = run_gather;
    x->kind = EXEC_GATHER;
    return 0;
}

/* Dropout */
int oqc_prep_dropout(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    int64_t tm[1];
    if (n->nin > 2 && n->in[2] >= 0) {
        const OqcTensor *t = &g->tensors[n->in[2]];
        if (!t->is_const || t->dtype != OQCF_BOOL || !t->data)
            return PERR("training_mode must be a constant");
        if (*(const unsigned char *)t->data)
            return PERR("training-mode Dropout is not supported (inference only)");
    }
    (void)tm;
    if (oqc_attr_int(n, "is_test", 1) == 0 && n->opset < 7)
        return PERR("training-mode Dropout is not supported (inference only)");
    x->run = run_dropout_mask; /* output 0 is a view */
    x->kind = EXEC_DROPOUT;
    return 0;
}

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze */
int oqc_prep_identity(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    x->run = NULL; /* views: no work */
    x->kind = EXEC_NONE;
    return 0;
}

/* ------------------------------------------------------------------ emit */

/* The call of EXEC_CONCAT (run_concat). */
void oqc_em_concat(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, n->nin);
    fputs("    {\n        const void *const x[] = {", b);
    for (int k = 0; k < n->nin; k++)
        fprintf(b, "%s%s", k ? ", " : "", X(k));
    fprintf(b, "};\n        TRY(oqcf_concat(x, s%d, %d, %d, %zu, %s));\n    }\n", node, n->nin,
            x->axis, oqcf_dtype_size(g->tensors[n->out[0]].dtype), Y(0));
}

/* The call of EXEC_SPLIT (run_split). */
void oqc_em_split(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    int64_t sizes[256];
    for (int k = 0; k < n->nout; k++)
        sizes[k] = g->tensors[n->out[k]].shape.d[x->axis];
    fprintf(oqc_em_decl(m), "static const int64_t sz%d[%d] = ", node, n->nout);
    oqc_em_i64s(oqc_em_decl(m), sizes, n->nout);
    fputs(";\n", oqc_em_decl(m));
    fputs("    {\n        void *const y[] = {", b);
    for (int k = 0; k < n->nout; k++)
        fprintf(b, "%s%s", k ? ", " : "", Y(k));
    fprintf(b, "};\n        TRY(oqcf_split(%s, &s%d[0], %d, sz%d, %d, %zu, y));\n    }\n", X(0),
            node, x->axis, node, n->nout, oqcf_dtype_size(in0->dtype));
}

/* The call of EXEC_SLICE (run_slice). */
void oqc_em_slice(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const OqcfSlice p%d = {\n    .start = ", node);
    oqc_em_i64s(oqc_em_decl(m), x->slice.start, OQCF_MAX_RANK);
    fputs(",\n    .step = ", oqc_em_decl(m));
    oqc_em_i64s(oqc_em_decl(m), x->slice.step, OQCF_MAX_RANK);
    fputs(",\n    .out = ", oqc_em_decl(m));
    oqc_em_shape(oqc_em_decl(m), &x->slice.out);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_slice(%s, &s%d[0], &p%d, %zu, %s));\n", X(0), node, node,
            oqcf_dtype_size(in0->dtype), Y(0));
}

void oqc_em_transpose_call(Em *m, int node, const int *perm, size_t esize, const char *x,
                           const char *y, FILE *b) {
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const int perm%d[%d] = {", node, OQC_MAX_RANK);
    for (int i = 0; i < OQC_MAX_RANK; i++)
        fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", perm[i]);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_transpose(%s, &s%d[0], perm%d, %zu, %s));\n", x, node, node, esize,
            y);
}

/* The call of EXEC_TRANSPOSE (run_transpose). */
void oqc_em_transpose(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    oqc_em_transpose_call(m, node, m->e->nodes[node].perm,
                          oqcf_dtype_size(m->g->tensors[n->in[0]].dtype), X(0), Y(0), b);
}

/* The call of EXEC_PAD (run_pad). */
void oqc_em_pad(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const int64_t pads%d[%d] = ", node, 2 * OQC_MAX_RANK);
    oqc_em_i64s(oqc_em_decl(m), x->pads, 2 * OQC_MAX_RANK);
    fputs(";\n", oqc_em_decl(m));
    const char *value = "NULL";
    if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0) {
        value = X(2);
    } else if (n->opset < 11) {
        fprintf(oqc_em_decl(m), "static const float v%d = ", node);
        oqc_em_f(oqc_em_decl(m), x->f0);
        fputs("; /* value */\n", oqc_em_decl(m));
        value = oqc_arena_printf(m->a, "&v%d", node);
    }
    static const char *const modes[] = {[OQCF_PAD_CONSTANT] = "OQCF_PAD_CONSTANT",
                                        [OQCF_PAD_REFLECT] = "OQCF_PAD_REFLECT",
                                        [OQCF_PAD_EDGE] = "OQCF_PAD_EDGE"};
    fprintf(b, "    TRY(oqcf_pad(%s, &s%d[0], pads%d, %s, %s, %zu, %s));\n", X(0), node, node,
            modes[x->pad_mode], value, oqcf_dtype_size(in0->dtype), Y(0));
}

/* The call of EXEC_GATHER (run_gather). */
void oqc_em_gather(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    const OqcTensor *ix = &g->tensors[n->in[1]];
    fprintf(b, "    TRY(oqcf_gather(%s, &s%d[0], %d, %s, %s, %" PRId64 ", %zu, %s));\n", X(0),
            node, x->axis, X(1), oqc_em_dtype_enum(ix->dtype), oqc_shape_numel(&ix->shape),
            oqcf_dtype_size(in0->dtype), Y(0));
}
