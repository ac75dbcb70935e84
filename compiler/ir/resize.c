/* resize.c - what a Resize or Upsample node computes, resolved at compile time (see
 * ir.h): the output shape, and per resampled axis the runtime's table of input indices
 * and weights (OqcfResizeAxis), from the opset's inputs and attributes:
 *   Upsample-7 (scales attribute), Upsample-9 and Resize-10 (scales input): modes
 *     nearest and linear, output extent floor(in * scale), coordinates x / scale
 *     (asymmetric) and nearest rounding as ONNX Runtime's: floor when the axis grows,
 *     ceil when it shrinks;
 *   Resize-11/13/18/19 (roi, scales or sizes; axes, keep_aspect_ratio_policy from 18):
 *     modes nearest (nearest_mode round_prefer_floor, round_prefer_ceil, floor, ceil),
 *     linear and cubic (cubic_coeff_a, exclude_outside); every
 *     coordinate_transformation_mode (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
 *     align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with roi and
 *     extrapolation_value). antialias = 1 is refused.
 * Coordinates are computed in double from the float32 scales (or from sizes / in), as
 * ONNX's reference does. Shape inference and the executor call the same function, so
 * they cannot disagree. */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define ERR(...) oqc_err_node(d, g, node, __VA_ARGS__)

/* Largest output extent accepted on one axis. */
#define RESIZE_MAX ((int64_t)1 << 30)

/* Input k when present and not empty (Resize's optional inputs may be '' or 0 long). */
static const OqcTensor *opt_input(const OqcGraph *g, const OqcNode *n, int k) {
    if (k >= n->nin || n->in[k] < 0)
        return NULL;
    const OqcTensor *t = &g->tensors[n->in[k]];
    return oqc_shape_numel(&t->shape) == 0 ? NULL : t;
}

/* The float values of constant input t (at most max of them) into v; their count or -1. */
static int float_values(const OqcTensor *t, double *v, int max) {
    if (!t->data || !(t->is_const || t->has_value) || t->shape.rank != 1 ||
        t->shape.d[0] > max)
        return -1;
    int cnt = (int)t->shape.d[0];
    for (int i = 0; i < cnt; i++) {
        if (t->dtype == OQCF_FLOAT)
            v[i] = ((const float *)t->data)[i];
        else if (t->dtype == OQCF_DOUBLE)
            v[i] = ((const double *)t->data)[i];
        else if (t->dtype == OQCF_FLOAT16)
            v[i] = oqcf_f16_to_f32(((const uint16_t *)t->data)[i]);
        else
            return -1;
    }
    return cnt;
}

static int int_values(const OqcTensor *t, int64_t *v, int max) {
    if (!t->data || !(t->is_const || t->has_value) || t->shape.rank != 1 ||
        t->shape.d[0] > max || (t->dtype != OQCF_INT64 && t->dtype != OQCF_INT32))
        return -1;
    int cnt = (int)t->shape.d[0];
    for (int i = 0; i < cnt; i++)
        v[i] = t->dtype == OQCF_INT64 ? ((const int64_t *)t->data)[i]
                                      : ((const int32_t *)t->data)[i];
    return cnt;
}

/* The index of `name` in the NULL-terminated list, or -1. */
static int pick(const char *name, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(name, list[i]))
            return i;
    return -1;
}

enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYMMETRIC, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS,
       CT_ASYMMETRIC, CT_TF_HALF_PIXEL_FOR_NN, CT_TF_CROP_AND_RESIZE };
static const char *const coord_names[] = {"half_pixel", "half_pixel_symmetric",
                                          "pytorch_half_pixel", "align_corners", "asymmetric",
                                          "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL};
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil",
                                            "floor", "ceil", NULL};
static const char *const mode_names[] = {"nearest", "linear", "cubic", NULL};

/* Reads the node's parameters into r (everything but the tables). */
static int read_params(const OqcGraph *g, int node, const OqcShape *xs, OqcResize *r,
                       double *scale, double *len, double *roi, OqcDiag *d) {
    const OqcNode *n = &g->nodes[node];
    int rank = xs->rank, legacy = n->op == OQC_OP_Upsample || n->opset < 11;
    if (rank < 1)
        return ERR("needs an input of rank >= 1");
    const char *mode = oqc_attr_string(n, "mode", "nearest");
    if ((r->mode = pick(mode, mode_names)) < 0 || (legacy && r->mode == OQC_RESIZE_CUBIC))
        return ERR("mode '%s' is not one of nearest, linear%s", mode, legacy ? "" : ", cubic");
    r->coord = legacy ? CT_ASYMMETRIC : -1;
    r->nearest = legacy ? NM_SIMPLE : -1;
    r->cubic_a = oqc_attr_float(n, "cubic_coeff_a", -0.75f);
    r->exclude_outside = (int)oqc_attr_int(n, "exclude_outside", 0);
    r->extrapolation = oqc_attr_float(n, "extrapolation_value", 0.0f);
    if (!legacy) {
        const char *ct = oqc_attr_string(n, "coordinate_transformation_mode", "half_pixel");
        const char *nm = oqc_attr_string(n, "nearest_mode", "round_prefer_floor");
        if ((r->coord = pick(ct, coord_names)) < 0 ||
            (r->coord == CT_HALF_PIXEL_SYMMETRIC && n->opset < 19))
            return ERR("coordinate_transformation_mode '%s' is not one ONNX defines for "
                       "opset %d", ct, (int)n->opset);
        if ((r->nearest = pick(nm, nearest_names)) < 0)
            return ERR("nearest_mode '%s' is not one of round_prefer_floor, "
                       "round_prefer_ceil, floor, ceil", nm);
        if (oqc_attr_int(n, "antialias", 0) != 0)
            return ERR("antialias = 1 is not supported (resample without it, or with "
                       "a pooling before)");
    }
    /* the axes the scales / sizes / roi entries refer to (Resize-18's axes) */
    int axes[OQC_MAX_RANK], naxes = rank;
    const int64_t *av;
    int na = n->opset >= 18 && n->op == OQC_OP_Resize ? oqc_attr_ints(n, "axes", &av) : -1;
    if (na > rank)
        return ERR("axes has %d entries for an input of rank %d", na, rank);
    if (na >= 0) {
        naxes = na;
        unsigned seen = 0;
        for (int i = 0; i < na; i++) {
            int64_t a = av[i] < 0 ? av[i] + rank : av[i];
            if (a < 0 || a >= rank || (seen >> a & 1))
                return ERR("axes entry %" PRId64 " is out of range or repeated", av[i]);
            seen |= 1u << a;
            axes[i] = (int)a;
        }
    } else {
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    for (int i = 0; i < rank; i++) {
        scale[i] = 1;
        len[i] = (double)xs->d[i];
        roi[i] = 0;
        roi[rank + i] = 1;
        r->out.d[i] = xs->d[i];
    }
    r->out.rank = rank;
    double v[2 * OQC_MAX_RANK];
    int64_t sz[OQC_MAX_RANK];
    if (n->op == OQC_OP_Upsample && n->opset < 9) {
        const OqcAttr *a = oqc_attr_find(n, "scales");
        if (!a || a->type != OQC_ATTR_FLOATS || a->n != rank)
            return ERR("needs attribute 'scales' with %d floats", rank);
        for (int i = 0; i < rank; i++)
            v[i] = a->floats[i];
    } else {
        int ks = legacy ? 1 : 2;   /* the scales input */
        const OqcTensor *st = opt_input(g, n, ks), *zt = legacy ? NULL : opt_input(g, n, 3);
        const OqcTensor *rt = legacy ? NULL : opt_input(g, n, 1);
        if (!st == !zt)
            return ERR("needs exactly one of 'scales' and 'sizes'");
        if (rt && r->coord == CT_TF_CROP_AND_RESIZE) {
            if (float_values(rt, v, 2 * OQC_MAX_RANK) != 2 * naxes)
                return ERR("roi '%s' must be a constant of %d floats", rt->name, 2 * naxes);
            for (int i = 0; i < naxes; i++) {
                roi[axes[i]] = v[i];
                roi[rank + axes[i]] = v[naxes + i];
            }
        }
        if (zt) {
            if (int_values(zt, sz, OQC_MAX_RANK) != naxes)
                return ERR("sizes '%s' must be a constant of %d integers", zt->name, naxes);
            const char *pol = oqc_attr_string(n, "keep_aspect_ratio_policy", "stretch");
            int keep = strcmp(pol, "stretch") != 0;
            if (keep && strcmp(pol, "not_larger") && strcmp(pol, "not_smaller"))
                return ERR("keep_aspect_ratio_policy '%s' is not stretch, not_larger or "
                           "not_smaller", pol);
            double common = 0;
            for (int i = 0; i < naxes; i++) {
                if (sz[i] < 0 || sz[i] > RESIZE_MAX || (xs->d[axes[i]] == 0 && sz[i] > 0))
                    return ERR("size %" PRId64 " of axis %d is negative, absurd, or from an "
                               "empty axis", sz[i], axes[i]);
                double s = xs->d[axes[i]] ? (double)sz[i] / (double)xs->d[axes[i]] : 1;
                if (i == 0 || (!strcmp(pol, "not_larger") ? s < common : s > common))
                    common = s;
            }
            for (int i = 0; i < naxes; i++) {
                int a = axes[i];
                r->out.d[a] = keep ? (int64_t)floor(common * (double)xs->d[a] + 0.5) : sz[i];
                scale[a] = xs->d[a] ? (double)r->out.d[a] / (double)xs->d[a] : 1;
                len[a] = (double)r->out.d[a];
            }
            return 0;
        }
        if (float_values(st, v, OQC_MAX_RANK) != naxes)
            return ERR("scales '%s' must be a constant of %d floats (oqc compiles ahead of "
                       "time)", st->name, naxes);
    }
    for (int i = 0; i < naxes; i++) {
        int a = axes[i];
        double ext = (double)xs->d[a] * v[i];
        if (r->coord == CT_TF_CROP_AND_RESIZE)
            ext *= roi[rank + a] - roi[a];
        if (!(v[i] > 0) || !(ext <= (double)RESIZE_MAX))
            return ERR("scale %g of axis %d is not positive or absurd", v[i], a);
        scale[a] = v[i];
        len[a] = ext;
        r->out.d[a] = (int64_t)floor(ext);
    }
    return 0;
}

/* The input coordinate of output position j along an axis (in -> out positions; len:
 * the unrounded output length, in * scale when scales are given, as ONNX's reference
 * uses it in align_corners, half_pixel_symmetric and tf_crop_and_resize). */
static double source_coord(const OqcResize *r, int64_t j, int64_t in, int64_t out,
                           double scale, double len, double start, double end) {
    double x = (double)j;
    switch (r->coord) {
    case CT_HALF_PIXEL:
        return (x + 0.5) / scale - 0.5;
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out / len, center = (double)in / 2;
        return center * (1 - adj) + (x + 0.5) / scale - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL:
        return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case CT_ALIGN_CORNERS:
        return out == 1 ? 0 : x * (double)(in - 1) / (len - 1);
    case CT_TF_HALF_PIXEL_FOR_NN:
        return (x + 0.5) / scale;
    case CT_TF_CROP_AND_RESIZE:
        return out > 1 ? start * (double)(in - 1) +
                             x * (end - start) * (double)(in - 1) / (len - 1)
                       : 0.5 * (start + end) * (double)(in - 1);
    default: /* asymmetric */
        return x / scale;
    }
}

static int32_t clampi(int64_t i, int64_t in) {
    return (int32_t)(i < 0 ? 0 : i >= in ? in - 1 : i);
}

/* The nearest input index of coordinate x. */
static int64_t nearest_index(const OqcResize *r, double x, double scale) {
    switch (r->nearest) {
    case NM_ROUND_PREFER_CEIL:
        return x == floor(x) + 0.5 ? (int64_t)ceil(x) : (int64_t)floor(x + 0.5);
    case NM_FLOOR:
        return (int64_t)floor(x);
    case NM_CEIL:
        return (int64_t)ceil(x);
    case NM_SIMPLE:
        return scale < 1 ? (int64_t)ceil(x) : (int64_t)floor(x);
    default: /* round_prefer_floor */
        return x == floor(x) + 0.5 ? (int64_t)floor(x) : (int64_t)floor(x + 0.5);
    }
}

/* Fills axis a's table; 1 when it is the identity (every output is its own input). */
static int fill_axis(const OqcResize *r, OqcfResizeAxis *ax, int64_t in, double scale,
                     double len, double start, double end, int32_t *idx, float *w) {
    int taps = ax->taps, identity = ax->out_len == in;
    for (int64_t j = 0; j < ax->out_len; j++) {
        double x = source_coord(r, j, in, ax->out_len, scale, len, start, end);
        int32_t *ij = idx + j * taps;
        float *wj = w ? w + j * taps : NULL;
        if (r->coord == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1))) {
            for (int t = 0; t < taps; t++) {
                ij[t] = -1;
                if (wj)
                    wj[t] = 0;
            }
            identity = 0;
            continue;
        }
        if (r->mode == OQC_RESIZE_NEAREST) {
            ij[0] = clampi(nearest_index(r, x, scale), in);
            identity &= ij[0] == j;
            continue;
        }
        double f = floor(x), t = x - f, c[4];
        int64_t first = (int64_t)f - (taps == 4);
        if (taps == 2) {
            c[0] = 1 - t;
            c[1] = t;
        } else { /* cubic convolution with a = cubic_coeff_a (Keys) */
            double A = r->cubic_a, u = t + 1, v = 1 - t, s = 2 - t;
            c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
            c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
            c[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
            c[3] = ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
        }
        if (r->exclude_outside && taps == 4) {
            double sum = 0;
            for (int k = 0; k < 4; k++) {
                if (first + k < 0 || first + k >= in)
                    c[k] = 0;
                sum += c[k];
            }
            for (int k = 0; k < 4 && sum != 0; k++)
                c[k] /= sum;
        }
        int own = 0;
        for (int k = 0; k < taps; k++) {
            ij[k] = clampi(first + k, in);
            wj[k] = (float)c[k];
            own += ij[k] == j && wj[k] == 1.0f;
            identity &= wj[k] == 0.0f || (ij[k] == j && wj[k] == 1.0f);
        }
        identity &= own == 1;
    }
    return identity;
}

int oqc_resize_plan(const OqcGraph *g, int node, const OqcShape *xs, OqcResize *r,
                    OqcArena *tables, OqcDiag *d) {
    memset(r, 0, sizeof *r);
    double scale[OQC_MAX_RANK], len[OQC_MAX_RANK], roi[2 * OQC_MAX_RANK];
    if (read_params(g, node, xs, r, scale, len, roi, d) < 0)
        return -1;
    if (!tables)
        return 0;
    int taps = r->mode == OQC_RESIZE_NEAREST ? 1 : r->mode == OQC_RESIZE_LINEAR ? 2 : 4;
    for (int a = 0; a < xs->rank; a++) {
        OqcfResizeAxis *ax = &r->axes[r->naxes];
        int64_t in = xs->d[a];
        ax->axis = a;
        ax->taps = taps;
        ax->out_len = r->out.d[a];
        if (in == 0 || ax->out_len == 0)
            continue;   /* nothing to resample: an empty output, or an empty axis kept */
        int32_t *idx = oqc_arena_alloc(tables, (size_t)(ax->out_len * taps) * sizeof *idx);
        float *w = taps > 1 ? oqc_arena_alloc(tables, (size_t)(ax->out_len * taps) * sizeof *w)
                            : NULL;
        if (fill_axis(r, ax, in, scale[a], len[a], roi[a], roi[xs->rank + a], idx, w))
            continue;   /* the identity: no pass */
        for (int64_t j = 0; j < ax->out_len; j++)
            r->extrapolates |= idx[j * taps] < 0;
        ax->idx = idx;
        ax->w = w;
        r->naxes++;
    }
    return 0;
}
