/* shape_ops.c - shape inference's per-op rules: for each op oqc knows, a function that
 * checks the node's inputs and attributes and sets its outputs' dtype and shape (or
 * returns an error naming the node, its op and what does not fit), and the table
 * oqc_shape_fns indexing them by OqcOp.  Separate from shape.c, the generic machinery
 * (the visit in topological order, readiness, size limits, value propagation), which
 * knows no op's rule: adding an op means a rule and a table entry here.  The per-node
 * context both files share (Ctx, IN, OUT, int_list, ...) is shape_int.h. */
#include "ops_shape.h"

#include <math.h>
#include <inttypes.h>
#include <string.h>

#include "oqcf_tensor.h"

static void set_out(Ctx *c, int k, OqcfDType dt, const OqcShape *s) {
    OqcTensor *t = OUT(c, k);
    if (t && !t->is_const) {
        t->dtype = dt;
        t->shape = *s;
    }
}
static char *sstr(const OqcShape *s) {
    static char bufs[4][128];
    static int i;
    i = (i + 1) & 3;
    return oqc_shape_str(s, bufs[i], sizeof bufs[i]);
}

static int norm_axis(Ctx *c, int64_t axis, int rank, const char *what) {
    if (axis < -rank || axis >= rank)
        return ERR("%s %" PRId64 " is out of range for rank %d", what, axis, rank);
    return (int)(axis < 0 ? axis + rank : axis);
}

/* ------------------------------------------------------------- element-wise */

static int shape_same(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    set_out(c, 0, x->dtype, &x->shape);
    return 0;
}

/* Inputs 1 .. nin - 1 that are present have input 0's element type (the operator's one
 * type T in ONNX; the kernels read them all as that type). */
static int same_type(Ctx *c, int nin) {
    const OqcTensor *x0 = IN(c, 0);
    for (int k = 1; k < nin && k < c->n->nin; k++) {
        const OqcTensor *x = IN(c, k);
        if (x && x->dtype != x0->dtype)
            return ERR("input %d '%s' is %s but input 0 '%s' is %s (oqc's %s kernels take one "
                       "element type)",
                       k, x->name, oqc_dtype_name(x->dtype), x0->name,
                       oqc_dtype_name(x0->dtype), c->n->op_type);
    }
    return 0;
}

static int shape_broadcast(Ctx *c) {
    OqcShape s = IN(c, 0)->shape;
    OqcfDType dt = IN(c, 0)->dtype;
    if (c->n->op != OQC_OP_Sum && c->n->nin != 2)
        return ERR("needs two inputs; it has %d", c->n->nin);
    if (same_type(c, c->n->nin) < 0)
        return -1;
    for (int k = 1; k < c->n->nin; k++) {
        const OqcTensor *x = IN(c, k);
        if (!x)
            return ERR("input %d is empty", k);
        OqcShape r;
        if (oqcf_broadcast_shape(&s, &x->shape, &r) != OQCF_OK)
            return ERR("shapes %s and %s ('%s') do not broadcast", sstr(&s), sstr(&x->shape),
                       x->name);
        s = r;
    }
    set_out(c, 0, dt, &s);
    return 0;
}

/* PRelu: the slope broadcasts to X (unidirectionally; per channel before opset 7); the
 * output is X's shape. */
static int shape_prelu(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *sl = IN(c, 1);
    if (!sl)
        return ERR("needs a slope input");
    if (same_type(c, 2) < 0)
        return -1;
    OqcShape r, ss = oqc_prelu_slope_shape(c->n, &x->shape, &sl->shape);
    if (oqcf_broadcast_shape(&x->shape, &ss, &r) != OQCF_OK ||
        !oqc_shape_equal(&r, &x->shape))
        return ERR("slope '%s' %s does not broadcast to the input's shape %s", sl->name,
                   sstr(&sl->shape), sstr(&x->shape));
    return shape_same(c);
}

/* Pow: numpy broadcasting; the exponent may have another numeric type (ONNX's T1), the
 * output has the base's. */
static int shape_pow(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *p = IN(c, 1);
    if (!p || c->n->nin != 2)
        return ERR("needs two inputs");
    for (int k = 0; k < 2; k++) {
        OqcfDType dt = IN(c, k)->dtype;
        if (dt == OQCF_STRING || dt == OQCF_BOOL || oqcf_dtype_size(dt) == 0)
            return ERR("input %d '%s' is %s, not a number", k, IN(c, k)->name,
                       oqc_dtype_name(dt));
    }
    OqcShape s;
    if (oqcf_broadcast_shape(&x->shape, &p->shape, &s) != OQCF_OK)
        return ERR("shapes %s and %s ('%s') do not broadcast", sstr(&x->shape),
                   sstr(&p->shape), p->name);
    set_out(c, 0, x->dtype, &s);
    return 0;
}

static int shape_clip(Ctx *c) {
    if (same_type(c, 3) < 0)
        return -1;
    for (int k = 1; k < c->n->nin && k < 3; k++)
        if (IN(c, k) && oqc_shape_numel(&IN(c, k)->shape) != 1)
            return ERR("min/max input '%s' must be a scalar", IN(c, k)->name);
    return shape_same(c);
}

/* ---------------------------------------------------------- conv / pooling */

static int shape_conv(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1);
    if (!w)
        return ERR("needs a weight input");
    if (same_type(c, 3) < 0)
        return -1;
    OqcWindow win;
    if (oqc_conv_geometry(c->g, c->node, &x->shape, &w->shape, &win, c->d) < 0)
        return -1;
    const OqcTensor *b = IN(c, 2);
    if (b && (b->shape.rank != 1 || b->shape.d[0] != win.out_channels))
        return ERR("bias '%s' has shape %s; expected [%" PRId64 "]", b->name,
                   sstr(&b->shape), win.out_channels);
    OqcShape s = {.rank = x->shape.rank};
    s.d[0] = x->shape.d[0];
    s.d[1] = win.out_channels;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    if (!c->n->out_channels) {
        set_out(c, 0, x->dtype, &s);
        return 0;
    }
    /* A merged conv: output k holds the next out_channels[k] channels. */
    int64_t total = 0;
    for (int k = 0; k < c->n->nout; k++) {
        s.d[1] = c->n->out_channels[k];
        total += s.d[1];
        set_out(c, k, x->dtype, &s);
    }
    if (total != win.out_channels)
        return ERR("output channel ranges add up to %" PRId64 " but the weight has %" PRId64,
                   total, win.out_channels);
    return 0;
}

static int shape_conv_transpose(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1);
    if (!w)
        return ERR("needs a weight input");
    if (same_type(c, 3) < 0)
        return -1;
    OqcWindow win;
    if (oqc_conv_transpose_geometry(c->g, c->node, &x->shape, &w->shape, &win, c->d) < 0)
        return -1;
    OqcShape s = {.rank = x->shape.rank};
    s.d[0] = x->shape.d[0];
    s.d[1] = win.out_channels;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    set_out(c, 0, x->dtype, &s);
    return 0;
}

static int shape_pool(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    OqcWindow win;
    if (oqc_pool_geometry(c->g, c->node, &x->shape, &win, c->d) < 0)
        return -1;
    OqcShape s = x->shape;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    set_out(c, 0, x->dtype, &s);
    set_out(c, 1, OQCF_INT64, &s); /* MaxPool's optional Indices */
    return 0;
}

static int shape_global_pool(Ctx *c) {
    OqcShape s = IN(c, 0)->shape;
    if (s.rank < 3)
        return ERR("input '%s' has rank %d; needs N x C x spatial...", IN(c, 0)->name, s.rank);
    for (int i = 2; i < s.rank; i++)
        s.d[i] = 1;
    set_out(c, 0, IN(c, 0)->dtype, &s);
    return 0;
}

static int shape_batchnorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    if (x->shape.rank < 2)
        return ERR("input '%s' has rank %d; needs at least N x C", x->name, x->shape.rank);
    int64_t ch = x->shape.d[1];
    if (same_type(c, 5) < 0)
        return -1;
    for (int k = 1; k < 5; k++) {
        const OqcTensor *p = IN(c, k);
        if (!p)
            return ERR("needs 5 inputs (X, scale, B, mean, var)");
        if (p->shape.rank != 1 || p->shape.d[0] != ch)
            return ERR("input '%s' has shape %s; expected [%" PRId64 "] (one per channel)",
                       p->name, sstr(&p->shape), ch);
    }
    set_out(c, 0, x->dtype, &x->shape);
    OqcShape cs = {.rank = 1, .d = {ch}};
    for (int k = 1; k < c->n->nout; k++)
        set_out(c, k, x->dtype, &cs);
    return 0;
}

/* LayerNormalization: Y like X; Mean and InvStdDev (optional outputs) keep the dims
 * before axis and have 1 from axis on. Scale and bias hold one entry per normalised
 * element. */
static int shape_layernorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1), *b = IN(c, 2);
    int r = x->shape.rank;
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", -1), r, "axis");
    if (axis < 0)
        return -1;
    if (!w)
        return ERR("needs a scale input");
    if (same_type(c, 3) < 0)
        return -1;
    int64_t inner = 1;
    for (int i = axis; i < r; i++)
        inner *= x->shape.d[i];
    for (int k = 1; k < 3; k++) {
        const OqcTensor *t = k == 1 ? w : b;
        if (t && oqc_shape_numel(&t->shape) != inner)
            return ERR("%s '%s' %s must have the %" PRId64 " elements of the normalised dims",
                       k == 1 ? "scale" : "bias", t->name, sstr(&t->shape), inner);
    }
    OqcShape s = x->shape;
    for (int i = axis; i < r; i++)
        s.d[i] = 1;
    set_out(c, 0, x->dtype, &x->shape);
    set_out(c, 1, OQCF_FLOAT, &s);
    set_out(c, 2, OQCF_FLOAT, &s);
    return 0;
}

/* InstanceNormalization: NCHW-like input, scale and bias of C entries. */
static int shape_instancenorm(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    if (x->shape.rank < 3)
        return ERR("needs an input of rank 3 or more, not %s", sstr(&x->shape));
    if (same_type(c, 3) < 0)
        return -1;
    for (int k = 1; k < 3; k++) {
        const OqcTensor *t = IN(c, k);
        if (!t || t->shape.rank != 1 || t->shape.d[0] != x->shape.d[1])
            return ERR("input %d must have shape [%" PRId64 "]", k, x->shape.d[1]);
    }
    return shape_same(c);
}

static int shape_lrn(Ctx *c) {
    if (IN(c, 0)->shape.rank < 3)
        return ERR("input has rank %d; LRN needs N x C x spatial...", IN(c, 0)->shape.rank);
    if (oqc_attr_int(c->n, "size", 0) <= 0)
        return ERR("attribute 'size' must be a positive integer");
    return shape_same(c);
}

/* ------------------------------------------------------------------ linear */

static int shape_gemm(Ctx *c) {
    const OqcTensor *a = IN(c, 0), *b = IN(c, 1), *cc = IN(c, 2);
    if (!b)
        return ERR("needs inputs A and B");
    if (same_type(c, 3) < 0)
        return -1;
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return ERR("A '%s' %s and B '%s' %s must both be 2-D", a->name, sstr(&a->shape),
                   b->name, sstr(&b->shape));
    int ta = oqc_attr_int(c->n, "transA", 0) != 0, tb = oqc_attr_int(c->n, "transB", 0) != 0;
    int64_t m = a->shape.d[ta], k = a->shape.d[!ta], kb = b->shape.d[tb], n = b->shape.d[!tb];
    if (k != kb)
        return ERR("inner dimensions differ: A%s is %s, B%s is %s", ta ? "^T" : "",
                   sstr(&a->shape), tb ? "^T" : "", sstr(&b->shape));
    OqcShape s = {.rank = 2, .d = {m, n}}, r;
    if (cc && (oqcf_broadcast_shape(&cc->shape, &s, &r) != OQCF_OK || !oqc_shape_equal(&r, &s)))
        return ERR("C '%s' %s does not broadcast to %s", cc->name, sstr(&cc->shape), sstr(&s));
    set_out(c, 0, a->dtype, &s);
    return 0;
}

static int shape_matmul(Ctx *c) {
    const OqcTensor *a = IN(c, 0), *b = IN(c, 1);
    if (!b)
        return ERR("needs two inputs");
    if (same_type(c, 2) < 0)
        return -1;
    OqcShape as = a->shape, bs = b->shape;
    if (as.rank == 0 || bs.rank == 0)
        return ERR("MatMul inputs must have rank >= 1 (got %s and %s)", sstr(&as), sstr(&bs));
    int a1 = as.rank == 1, b1 = bs.rank == 1;
    if (a1) { as.rank = 2; as.d[1] = as.d[0]; as.d[0] = 1; }
    if (b1) { bs.rank = 2; bs.d[1] = 1; }
    if (as.d[as.rank - 1] != bs.d[bs.rank - 2])
        return ERR("inner dimensions differ: %s x %s", sstr(&a->shape), sstr(&b->shape));
    OqcShape ab = as, bb = bs, batch;
    ab.rank -= 2;
    bb.rank -= 2;
    if (oqcf_broadcast_shape(&ab, &bb, &batch) != OQCF_OK)
        return ERR("batch dimensions of %s and %s do not broadcast", sstr(&a->shape),
                   sstr(&b->shape));
    OqcShape s = batch;
    if (!a1)
        s.d[s.rank++] = as.d[as.rank - 2];
    if (!b1)
        s.d[s.rank++] = bs.d[bs.rank - 1];
    set_out(c, 0, a->dtype, &s);
    return 0;
}

/* ------------------------------------------------------------ data movement */

static int shape_concat(Ctx *c) {
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

static int shape_split(Ctx *c) {
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

static int shape_slice(Ctx *c) {
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

static int shape_flatten(Ctx *c) {
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

static int shape_reshape(Ctx *c) {
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

static int shape_transpose(Ctx *c) {
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

/* Axes of Squeeze/Unsqueeze: the input (opset >= 13) or the attribute. */
static int axes_arg(Ctx *c, int64_t *ax, int max) {
    if (c->n->opset >= 13) {
        if (!IN(c, 1))
            return -2; /* absent */
        int n = int_list(c, 1, ax, max);
        if (n == -1)
            return ERR("axes input '%s' must be a constant", IN(c, 1)->name);
        return n;
    }
    const int64_t *v;
    int n = oqc_attr_ints(c->n, "axes", &v);
    if (n < 0)
        return -2;
    if (n > max)
        return ERR("too many axes");
    memcpy(ax, v, (size_t)n * sizeof *ax);
    return n;
}

static int shape_squeeze(Ctx *c) {
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

static int shape_unsqueeze(Ctx *c) {
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

static int shape_softmax(Ctx *c) {
    int r = IN(c, 0)->shape.rank;
    int64_t axis = oqc_attr_int(c->n, "axis", c->n->opset >= 13 ? -1 : 1);
    if (r > 0 && norm_axis(c, axis, r, "axis") < 0)
        return -1;
    return shape_same(c);
}

/* ReduceMean/ReduceMax/ReduceMin/ReduceSum: reduced axes become 1 (keepdims) or disappear. */
static int shape_reduce(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    unsigned mask;
    int keep;
    if (oqc_reduce_axes(c->g, c->node, x->shape.rank, &mask, &keep, c->d) < 0)
        return -1;
    OqcShape s = {.rank = 0};
    for (int i = 0; i < x->shape.rank; i++)
        if (!(mask & (1u << i)))
            s.d[s.rank++] = x->shape.d[i];
        else if (keep)
            s.d[s.rank++] = 1;
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* ArgMax/ArgMin: int64 indices; the axis becomes 1 (keepdims) or disappears. */
static int shape_argmax(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int r = x->shape.rank;
    if (r == 0)
        return ERR("needs an input of rank 1 or more");
    int axis = norm_axis(c, oqc_attr_int(c->n, "axis", 0), r, "axis");
    if (axis < 0)
        return -1;
    if (x->shape.d[axis] == 0)
        return ERR("axis %d of %s is empty: no index to return", axis, sstr(&x->shape));
    OqcShape s = x->shape;
    if (oqc_attr_int(c->n, "keepdims", 1)) {
        s.d[axis] = 1;
    } else {
        for (int i = axis; i + 1 < r; i++)
            s.d[i] = s.d[i + 1];
        s.rank--;
    }
    set_out(c, 0, OQCF_INT64, &s);
    return 0;
}

/* Input 1 of Tile/Expand, a constant list of at most OQC_MAX_RANK integers, into v:
 * its length, or -1 after an error naming it `what`. */
static int const_list_1(Ctx *c, int64_t *v, const char *what) {
    int n = IN(c, 1) ? int_list(c, 1, v, OQC_MAX_RANK) : -1;
    if (n < -1)
        return -1;
    if (n < 0)
        return ERR("%s must be a constant int64 input", what);
    return n;
}

/* Tile: each dim times its repeat (input 1, a constant of rank-many entries). */
static int shape_tile(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t rep[OQC_MAX_RANK];
    int n = const_list_1(c, rep, "repeats");
    if (n < 0)
        return -1;
    if (n != x->shape.rank)
        return ERR("repeats has %d entries for an input of rank %d", n, x->shape.rank);
    OqcShape s = x->shape;
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0 || (rep[i] > 0 && s.d[i] > OQC_MAX_ELEMENTS / rep[i]))
            return ERR("repeat %" PRId64 " of axis %d is negative or absurd", rep[i], i);
        s.d[i] *= rep[i];
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* Expand: numpy broadcast of the input with the shape given as input 1 (a constant). */
static int shape_expand(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t v[OQC_MAX_RANK];
    int n = const_list_1(c, v, "shape");
    if (n < 0)
        return -1;
    OqcShape want = {.rank = n}, s;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] > OQC_MAX_ELEMENTS)
            return ERR("dimension %" PRId64 " is negative or absurd", v[i]);
        want.d[i] = v[i];
    }
    if (oqcf_broadcast_shape(&x->shape, &want, &s) != OQCF_OK)
        return ERR("shape %s does not broadcast with the input's %s", sstr(&want),
                   sstr(&x->shape));
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* DepthToSpace / SpaceToDepth on NCHW: blocksize b moves C/(b*b) <-> H*b, W*b. */
static int shape_space_depth(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t bs = oqc_attr_int(c->n, "blocksize", 0);
    if (x->shape.rank != 4)
        return ERR("needs a 4-D NCHW input, not %s", sstr(&x->shape));
    if (bs < 1 || bs > 4096)
        return ERR("blocksize %" PRId64 " must be in 1..4096", bs);
    OqcShape s = x->shape;
    if (c->n->op == OQC_OP_DepthToSpace) {
        const char *mode = oqc_attr_string(c->n, "mode", "DCR");
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            return ERR("mode '%s' is neither DCR nor CRD", mode);
        if (s.d[1] % (bs * bs))
            return ERR("%" PRId64 " channels are not a multiple of blocksize^2 = %" PRId64,
                       s.d[1], bs * bs);
        s.d[1] /= bs * bs;
        s.d[2] *= bs;
        s.d[3] *= bs;
    } else {
        if (s.d[2] % bs || s.d[3] % bs)
            return ERR("height %" PRId64 " and width %" PRId64 " must be multiples of the "
                       "blocksize %" PRId64, s.d[2], s.d[3], bs);
        s.d[1] *= bs * bs;
        s.d[2] /= bs;
        s.d[3] /= bs;
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* Resize / Upsample: the output extents resize.c derives (constant scales or sizes). */
static int shape_resize(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    OqcResize r;
    if (oqc_resize_plan(c->g, c->node, &x->shape, &r, NULL, c->d) < 0)
        return -1;
    set_out(c, 0, x->dtype, &r.out);
    return 0;
}

static int shape_dropout(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    set_out(c, 0, x->dtype, &x->shape);
    set_out(c, 1, OQCF_BOOL, &x->shape);
    return 0;
}

static int shape_pad(Ctx *c) {
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

static int shape_shape(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int r = x->shape.rank;
    int64_t start = oqc_attr_int(c->n, "start", 0), end = oqc_attr_int(c->n, "end", r);
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    OqcShape s = {.rank = 1, .d = {n}};
    set_out(c, 0, OQCF_INT64, &s);
    OqcTensor *y = OUT(c, 0);
    if (y && oqc_shape_known(&x->shape)) {
        int64_t *v = oqc_arena_alloc(c->g->arena, (size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = x->shape.d[start + i];
        y->data = v;
        y->nbytes = (size_t)n * sizeof *v;
        y->has_value = 1;
    }
    return 0;
}

static int shape_gather(Ctx *c) {
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

static int shape_cast(Ctx *c) {
    const OqcAttr *to = oqc_attr_find(c->n, "to");
    if (!to)
        return ERR("attribute 'to' is required");
    OqcfDType dt = (OqcfDType)to->i;
    if (to->i <= 0 || to->i > OQCF_BFLOAT16 || (oqcf_dtype_size(dt) == 0 && dt != OQCF_STRING))
        return ERR("attribute 'to' = %" PRId64 " is not a valid element type", to->i);
    set_out(c, 0, dt, &IN(c, 0)->shape);
    return 0;
}

static int shape_constant_of_shape(Ctx *c) {
    int64_t v[OQC_MAX_RANK + 1];
    int n = int_list(c, 0, v, OQC_MAX_RANK + 1);
    if (n < -1)
        return -1;
    if (n < 0)
        return ERR("shape input '%s' must be a constant oqc can compute", IN(c, 0)->name);
    if (n > OQC_MAX_RANK)
        return ERR("rank %d exceeds %d", n, OQC_MAX_RANK);
    OqcShape s = {.rank = n};
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return ERR("negative dimension %" PRId64, v[i]);
        s.d[i] = v[i];
    }
    const OqcAttr *va = oqc_attr_find(c->n, "value");
    set_out(c, 0, va ? va->tensors[0].dtype : OQCF_FLOAT, &s);
    return 0;
}

/* A constant scale of QuantizeLinear (x / scale) or DequantizeLinear (q * scale) must
 * be finite, and not 0 for QuantizeLinear: the kernel refuses anything else on every
 * run, so the model is refused here, naming the value. */
static int check_qdq_scale(Ctx *c, int nonzero) {
    const OqcTensor *s = IN(c, 1);
    if (!s)
        return ERR("needs a scale input");
    const float *v = s->dtype == OQCF_FLOAT ? known_values(s) : NULL;
    int64_t n = v ? oqc_shape_numel(&s->shape) : 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (nonzero && v[i] == 0))
            return ERR("scale '%s' element %" PRId64 " is %g: a scale must be finite%s",
                       s->name, i, (double)v[i], nonzero ? " and not 0" : "");
    return 0;
}

static int shape_quantize(Ctx *c) {
    if (check_qdq_scale(c, 1) < 0)
        return -1;
    const OqcTensor *zp = IN(c, 2);
    set_out(c, 0, zp ? zp->dtype : OQCF_UINT8, &IN(c, 0)->shape);
    return 0;
}

static int shape_dequantize(Ctx *c) {
    if (check_qdq_scale(c, 0) < 0)
        return -1;
    set_out(c, 0, OQCF_FLOAT, &IN(c, 0)->shape);
    return 0;
}

const ShapeFn oqc_shape_fns[OQC_OP_COUNT] = {
    /* ops.def's OQC_UNARY rows: one output of the input's shape */
#define OQC_OP(name, flags)
#define OQC_UNARY(name, un, flags) [OQC_OP_##name] = shape_same,
#include "ops.def"
#undef OQC_UNARY
#undef OQC_OP
    [OQC_OP_Add] = shape_broadcast,
    [OQC_OP_ArgMax] = shape_argmax,
    [OQC_OP_ArgMin] = shape_argmax,
    [OQC_OP_AveragePool] = shape_pool,
    [OQC_OP_BatchNormalization] = shape_batchnorm,
    [OQC_OP_Cast] = shape_cast,
    [OQC_OP_Clip] = shape_clip,
    [OQC_OP_Concat] = shape_concat,
    [OQC_OP_ConstantOfShape] = shape_constant_of_shape,
    [OQC_OP_Conv] = shape_conv,
    [OQC_OP_ConvTranspose] = shape_conv_transpose,
    [OQC_OP_DepthToSpace] = shape_space_depth,
    [OQC_OP_DequantizeLinear] = shape_dequantize,
    [OQC_OP_Div] = shape_broadcast,
    [OQC_OP_Dropout] = shape_dropout,
    [OQC_OP_Expand] = shape_expand,
    [OQC_OP_Flatten] = shape_flatten,
    [OQC_OP_Gather] = shape_gather,
    [OQC_OP_Gemm] = shape_gemm,
    [OQC_OP_GlobalAveragePool] = shape_global_pool,
    [OQC_OP_GlobalMaxPool] = shape_global_pool,
    [OQC_OP_HardSigmoid] = shape_same,
    [OQC_OP_Identity] = shape_same,
    [OQC_OP_InstanceNormalization] = shape_instancenorm,
    [OQC_OP_LRN] = shape_lrn,
    [OQC_OP_LayerNormalization] = shape_layernorm,
    [OQC_OP_LeakyRelu] = shape_same,
    [OQC_OP_MatMul] = shape_matmul,
    [OQC_OP_MaxPool] = shape_pool,
    [OQC_OP_Mul] = shape_broadcast,
    [OQC_OP_PRelu] = shape_prelu,
    [OQC_OP_Pad] = shape_pad,
    [OQC_OP_Pow] = shape_pow,
    [OQC_OP_QuantizeLinear] = shape_quantize,
    [OQC_OP_ReduceMax] = shape_reduce,
    [OQC_OP_ReduceMean] = shape_reduce,
    [OQC_OP_ReduceMin] = shape_reduce,
    [OQC_OP_ReduceSum] = shape_reduce,
    [OQC_OP_Relu] = shape_same,
    [OQC_OP_Reshape] = shape_reshape,
    [OQC_OP_Resize] = shape_resize,
    [OQC_OP_Shape] = shape_shape,
    [OQC_OP_Sigmoid] = shape_same,
    [OQC_OP_Slice] = shape_slice,
    [OQC_OP_Softmax] = shape_softmax,
    [OQC_OP_SpaceToDepth] = shape_space_depth,
    [OQC_OP_Split] = shape_split,
    [OQC_OP_Squeeze] = shape_squeeze,
    [OQC_OP_Sub] = shape_broadcast,
    [OQC_OP_Sum] = shape_broadcast,
    [OQC_OP_Tanh] = shape_same,
    [OQC_OP_Tile] = shape_tile,
    [OQC_OP_Transpose] = shape_transpose,
    [OQC_OP_Unsqueeze] = shape_unsqueeze,
    [OQC_OP_Upsample] = shape_resize,
};
