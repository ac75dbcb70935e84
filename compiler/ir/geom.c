/* geom.c - sliding-window geometry of Conv, ConvTranspose and pooling, and the axes of
 * reductions (see ir.h).
 *
 * Resolves kernel, strides, dilations and padding (explicit or auto_pad) into explicit
 * per-axis numbers and the output extents, validating every attribute; resolves a
 * Reduce* node's axes (attribute or input) into a mask. Shape inference, the passes and
 * the executor call the same functions. */
#include "ir.h"

#include <inttypes.h>
#include <string.h>

#define ERR(...) oqc_err_node(d, g, node, __VA_ARGS__)

/* Reads an INTS attribute of nsp entries (or 2*nsp for pads) into out, with default. */
/* Largest stride, dilation, pad or kernel_shape value accepted. */
#define GEOM_MAX ((int64_t)1 << 30)

static int read_axes(const OqcGraph *g, int node, const char *name, int count, int64_t dflt,
                     int64_t minv, int64_t *out, OqcDiag *d) {
    const int64_t *v;
    int n = oqc_attr_ints(&g->nodes[node], name, &v);
    for (int i = 0; i < count; i++)
        out[i] = dflt;
    if (n < 0)
        return 0;
    if (n != count)
        return ERR("attribute '%s' has %d values; expected %d", name, n, count);
    for (int i = 0; i < count; i++) {
        if (v[i] < minv)
            return ERR("attribute '%s' value %" PRId64 " must be >= %" PRId64, name, v[i],
                       minv);
        /* (kernel - 1) * dilation, (out - 1) * stride and the padded extent then stay far
         * from int64 overflow (extents are at most OQC_MAX_ELEMENTS) */
        if (v[i] > GEOM_MAX)
            return ERR("attribute '%s' value %" PRId64 " is absurd (more than %" PRId64 ")",
                       name, v[i], (int64_t)GEOM_MAX);
        out[i] = v[i];
    }
    return 0;
}

typedef enum AutoPad { PAD_NOTSET, PAD_VALID, PAD_SAME_UPPER, PAD_SAME_LOWER } AutoPad;

static int read_auto_pad(const OqcGraph *g, int node, AutoPad *ap, OqcDiag *d) {
    const char *s = oqc_attr_string(&g->nodes[node], "auto_pad", "NOTSET");
    if (!strcmp(s, "NOTSET") || !s[0])
        *ap = PAD_NOTSET;
    else if (!strcmp(s, "VALID"))
        *ap = PAD_VALID;
    else if (!strcmp(s, "SAME_UPPER"))
        *ap = PAD_SAME_UPPER;
    else if (!strcmp(s, "SAME_LOWER"))
        *ap = PAD_SAME_LOWER;
    else
        return ERR("attribute 'auto_pad' is '%s'; expected NOTSET, VALID, SAME_UPPER or "
                   "SAME_LOWER", s);
    return 0;
}

/* Common part: spatial extents, strides, dilations, pads, output sizes. */
static int window(const OqcGraph *g, int node, const OqcShape *x, int ceil_mode,
                  OqcWindow *w, OqcDiag *d) {
    int nsp = w->nsp;
    int64_t pads[2 * OQC_MAX_RANK];
    AutoPad ap;
    if (read_axes(g, node, "strides", nsp, 1, 1, w->stride, d) < 0 ||
        read_axes(g, node, "dilations", nsp, 1, 1, w->dilation, d) < 0 ||
        read_axes(g, node, "pads", 2 * nsp, 0, 0, pads, d) < 0 ||
        read_auto_pad(g, node, &ap, d) < 0)
        return -1;
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->d[2 + i], k = w->kernel[i], s = w->stride[i];
        int64_t eff = (k - 1) * w->dilation[i] + 1;
        w->in[i] = in;
        if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
            int64_t out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + eff - in;
            if (total < 0)
                total = 0;
            w->pad_begin[i] = ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
            w->out[i] = out;
            continue;
        }
        w->pad_begin[i] = ap == PAD_VALID ? 0 : pads[i];
        w->pad_end[i] = ap == PAD_VALID ? 0 : pads[nsp + i];
        int64_t span = in + w->pad_begin[i] + w->pad_end[i] - eff;
        if (span < 0)
            return ERR("the window (extent %" PRId64 " with dilation) is larger than the "
                       "padded input (%" PRId64 ") on spatial axis %d", eff,
                       in + w->pad_begin[i] + w->pad_end[i], i);
        int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        /* The last window must start inside the input or its begin padding
         * (PyTorch's and ONNX Runtime's rule for ceil_mode). */
        if (ceil_mode && (out - 1) * s >= in + w->pad_begin[i])
            out--;
        w->out[i] = out;
    }
    return 0;
}

int oqc_conv_geometry(const OqcGraph *g, int node, const OqcShape *x, const OqcShape *wsh,
                      OqcWindow *w, OqcDiag *d) {
    memset(w, 0, sizeof *w);
    const OqcNode *n = &g->nodes[node];
    if (x->rank < 3)
        return ERR("input has shape %s; Conv needs N x C x spatial...", "rank < 3");
    if (wsh->rank != x->rank)
        return ERR("weight has rank %d but the input has rank %d", wsh->rank, x->rank);
    w->nsp = x->rank - 2;
    w->group = oqc_attr_int(n, "group", 1);
    w->in_channels = x->d[1];
    w->out_channels = wsh->d[0];
    if (w->group <= 0 || w->in_channels % w->group || w->out_channels % w->group)
        return ERR("group %" PRId64 " does not divide input channels %" PRId64
                   " and output channels %" PRId64, w->group, w->in_channels,
                   w->out_channels);
    if (wsh->d[1] * w->group != w->in_channels)
        return ERR("weight has %" PRId64 " input channels per group; the input has %" PRId64
                   " channels in %" PRId64 " group(s)", wsh->d[1], w->in_channels, w->group);
    if (read_axes(g, node, "kernel_shape", w->nsp, 0, 1, w->kernel, d) < 0)
        return -1;
    for (int i = 0; i < w->nsp; i++) {
        if (w->kernel[i] && w->kernel[i] != wsh->d[2 + i])
            return ERR("kernel_shape disagrees with the weight's shape at axis %d", i);
        w->kernel[i] = wsh->d[2 + i];
        if (w->kernel[i] <= 0)
            return ERR("weight has an empty kernel axis %d", i);
    }
    return window(g, node, x, 0, w, d);
}

int oqc_conv_transpose_geometry(const OqcGraph *g, int node, const OqcShape *x,
                                const OqcShape *wsh, OqcWindow *w, OqcDiag *d) {
    memset(w, 0, sizeof *w);
    const OqcNode *n = &g->nodes[node];
    if (x->rank < 3 || wsh->rank != x->rank)
        return ERR("input rank %d and weight rank %d must be equal and >= 3", x->rank,
                   wsh->rank);
    int nsp = w->nsp = x->rank - 2;
    w->group = oqc_attr_int(n, "group", 1);
    w->in_channels = x->d[1];
    if (w->group <= 0 || wsh->d[0] != w->in_channels)
        return ERR("weight has %" PRId64 " input channels; the input has %" PRId64,
                   wsh->d[0], w->in_channels);
    w->out_channels = wsh->d[1] * w->group;
    int64_t pads[2 * OQC_MAX_RANK], oshape[OQC_MAX_RANK];
    AutoPad ap;
    if (read_axes(g, node, "strides", nsp, 1, 1, w->stride, d) < 0 ||
        read_axes(g, node, "dilations", nsp, 1, 1, w->dilation, d) < 0 ||
        read_axes(g, node, "pads", 2 * nsp, 0, 0, pads, d) < 0 ||
        read_axes(g, node, "output_padding", nsp, 0, 0, w->out_padding, d) < 0 ||
        read_auto_pad(g, node, &ap, d) < 0)
        return -1;
    const int64_t *os;
    int nos = oqc_attr_ints(n, "output_shape", &os);
    if (nos >= 0 && nos != nsp && nos != x->rank)
        return ERR("output_shape has %d values; expected %d", nos, nsp);
    for (int i = 0; i < nsp; i++)
        oshape[i] = nos < 0 ? -1 : os[nos - nsp + i];
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->d[2 + i], s = w->stride[i];
        w->kernel[i] = wsh->d[2 + i];
        w->in[i] = in;
        int64_t full = s * (in - 1) + w->out_padding[i] + (w->kernel[i] - 1) * w->dilation[i] + 1;
        int64_t out = oshape[i];
        if (out < 0 && (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER))
            out = in * s;
        if (out >= 0) {
            int64_t total = full - out;
            if (total < 0)
                total = 0;
            int upper = ap == PAD_SAME_UPPER;
            w->pad_begin[i] = upper ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
        } else {
            w->pad_begin[i] = ap == PAD_VALID ? 0 : pads[i];
            w->pad_end[i] = ap == PAD_VALID ? 0 : pads[nsp + i];
            out = full - w->pad_begin[i] - w->pad_end[i];
        }
        if (out <= 0)
            return ERR("output extent %" PRId64 " on spatial axis %d is not positive", out, i);
        w->out[i] = out;
    }
    return 0;
}

int oqc_pool_geometry(const OqcGraph *g, int node, const OqcShape *x, OqcWindow *w,
                      OqcDiag *d) {
    memset(w, 0, sizeof *w);
    const OqcNode *n = &g->nodes[node];
    if (x->rank < 3)
        return ERR("input has rank %d; pooling needs N x C x spatial...", x->rank);
    w->nsp = x->rank - 2;
    w->group = 1;
    w->in_channels = w->out_channels = x->d[1];
    const int64_t *k;
    if (oqc_attr_ints(n, "kernel_shape", &k) != w->nsp)
        return ERR("attribute 'kernel_shape' must have %d values", w->nsp);
    if (read_axes(g, node, "kernel_shape", w->nsp, 1, 1, w->kernel, d) < 0)
        return -1;
    int64_t ceil_mode = oqc_attr_int(n, "ceil_mode", 0);
    return window(g, node, x, ceil_mode != 0, w, d);
}

/* PRelu before opset 7 applies a 1-D slope of C entries per channel (axis 1, PyTorch's
 * exports); from opset 7 on, slopes broadcast as in numpy. */
OqcShape oqc_prelu_slope_shape(const OqcNode *n, const OqcShape *x, const OqcShape *slope) {
    OqcShape s = *slope;
    if (n->opset < 7 && slope->rank == 1 && x->rank >= 2 && slope->d[0] == x->d[1] &&
        slope->d[0] != 1) {
        s.rank = x->rank - 1;
        for (int i = 1; i < s.rank; i++)
            s.d[i] = 1;
    }
    return s;
}

/* Axes of ReduceMean/ReduceMax/ReduceMin/ReduceSum: the attribute 'axes' before the opset where
 * they became input 1 (13 for ReduceSum, 18 for the others), else that input, which
 * must be a constant (or values shape inference derived). */
int oqc_reduce_axes(const OqcGraph *g, int node, int rank, unsigned *mask, int *keepdims,
                    OqcDiag *d) {
    const OqcNode *n = &g->nodes[node];
    int64_t ax[OQC_MAX_RANK];
    int na = -1;   /* -1: no axes given */
    if (n->opset >= (n->op == OQC_OP_ReduceSum ? 13 : 18)) {
        if (oqc_attr_find(n, "axes"))
            return ERR("opset %" PRId64 " takes the axes as input 1, not as an attribute",
                       n->opset);
        if (n->nin > 1 && n->in[1] >= 0) {
            const OqcTensor *t = &g->tensors[n->in[1]];
            if (t->dtype != OQCF_INT64)
                return ERR("axes '%s' must be int64, not %s", t->name,
                           oqc_dtype_name(t->dtype));
            if (!t->data || !(t->is_const || t->has_value) || t->shape.rank != 1)
                return ERR("axes '%s' must be a 1-D constant", t->name);
            if (t->shape.d[0] > rank)
                return ERR("axes '%s' has %" PRId64 " entries for an input of rank %d",
                           t->name, t->shape.d[0], rank);
            na = (int)t->shape.d[0];
            memcpy(ax, t->data, (size_t)na * sizeof *ax);
        }
    } else {
        const int64_t *v;
        na = oqc_attr_ints(n, "axes", &v);
        if (na > rank)
            return ERR("attribute 'axes' has %d entries for an input of rank %d", na, rank);
        if (na > 0)
            memcpy(ax, v, (size_t)na * sizeof *ax);
    }
    *keepdims = oqc_attr_int(n, "keepdims", 1) != 0;
    *mask = 0;
    if (na <= 0) {   /* none given: all axes, or none with noop_with_empty_axes */
        if (!oqc_attr_int(n, "noop_with_empty_axes", 0))
            *mask = rank ? (1u << rank) - 1 : 0;
        return 0;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (a < 0 || a >= rank)
            return ERR("axis %" PRId64 " is out of range for rank %d", ax[i], rank);
        if (*mask & (1u << a))
            return ERR("axis %" PRId64 " is repeated", ax[i]);
        *mask |= 1u << a;
    }
    return 0;
}
