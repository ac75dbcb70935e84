/* inputs.c - fixing graph input shapes: parsing --input-shape and applying it (see
 * ir.h, banner of shape.c). oqc compiles ahead of time, so every graph input must end up
 * with a static shape; a dynamic one without --input-shape is an error that shows the
 * exact flag to add. */
#include "shape.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int oqc_parse_input_shape(const char *arg, OqcInputShape *out, OqcDiag *d) {
    memset(out, 0, sizeof *out);
    const char *eq = strrchr(arg, '=');
    const char *dims = eq ? eq + 1 : arg;
    if (eq) {
        size_t len = (size_t)(eq - arg);
        char *name = malloc(len + 1);
        if (!name)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        memcpy(name, arg, len);
        name[len] = 0;
        out->name = name; /* owned by the caller: freed with oqc_input_shapes_free */
    }
    const char *p = dims;
    int r = 0;
    if (!*p)
        goto bad;
    while (*p) {
        if (r == OQC_MAX_RANK)
            return oqc_err(d, "--input-shape '%s': more than %d dimensions", arg, OQC_MAX_RANK);
        char *end;
        if (*p < '0' || *p > '9')
            goto bad;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || v > OQC_MAX_ELEMENTS)
            goto bad;
        out->shape.d[r++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',')
            p++;
        else if (*p)
            goto bad;
        else
            break;
        if (!*p)
            goto bad;
    }
    out->shape.rank = r;
    return 0;
bad:
    free((void *)out->name);
    out->name = NULL;
    return oqc_err(d, "--input-shape '%s': expected NAME=D1xD2x... with positive integers "
                      "(for example input=1x3x224x224)", arg);
}

int oqc_fix_inputs(OqcGraph *g, const OqcInputShape *shapes, int n, OqcDiag *d) {
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int id = -1;
        if (shapes[i].name) {
            id = oqc_tensor_find(g, shapes[i].name);
            if (id < 0 || !g->tensors[id].is_input) {
                char list[512] = "";
                size_t len = 0;
                for (int k = 0; k < g->ninputs && len < sizeof list; k++) {
                    int w = snprintf(list + len, sizeof list - len, "%s'%s'", k ? ", " : "",
                                     g->tensors[g->inputs[k]].name);
                    if (w < 0)
                        break;
                    len += (size_t)w;
                }
                rc = oqc_err(d, "%s: --input-shape names '%s', which is not a graph input "
                                "(inputs: %s)", g->path, shapes[i].name, list);
                continue;
            }
        } else if (g->ninputs == 1) {
            id = g->inputs[0];
        } else {
            rc = oqc_err(d, "%s: the model has %d inputs; write --input-shape NAME=DIMS",
                         g->path, g->ninputs);
            continue;
        }
        OqcTensor *t = &g->tensors[id];
        const OqcShape *s = &shapes[i].shape;
        char a[128], b[128];
        if (t->shape.rank >= 0 && t->shape.rank != s->rank) {
            rc = oqc_err(d, "%s: --input-shape gives '%s' rank %d (%s) but the model declares "
                            "rank %d (%s)", g->path, t->name, s->rank,
                         oqc_shape_str(s, a, sizeof a), t->shape.rank,
                         oqc_shape_str(&t->shape, b, sizeof b));
            continue;
        }
        for (int k = 0; k < t->shape.rank; k++)
            if (t->shape.d[k] >= 0 && t->shape.d[k] != s->d[k]) {
                rc = oqc_err(d, "%s: --input-shape gives '%s' shape %s but the model fixes "
                                "dimension %d to %" PRId64, g->path, t->name,
                             oqc_shape_str(s, a, sizeof a), k, t->shape.d[k]);
                break;
            }
        int64_t numel = oqc_shape_numel(s);
        if (numel > OQC_MAX_ELEMENTS) {
            rc = oqc_err(d, "%s: --input-shape %s for '%s' is absurdly large", g->path,
                         oqc_shape_str(s, a, sizeof a), t->name);
            continue;
        }
        t->shape = *s;
    }
    if (rc < 0)
        return rc;
    for (int i = 0; i < g->ninputs; i++) {
        OqcTensor *t = &g->tensors[g->inputs[i]];
        if (oqc_shape_known(&t->shape) || t->dtype == OQCF_UNDEFINED)
            continue; /* non-tensor inputs are reported by oqc_check_supported */
        char shape[256] = "", ex[128] = "";
        size_t len = 0, elen = 0;
        for (int k = 0; t->shape.rank >= 0 && k < t->shape.rank; k++) {
            const char *p = t->dim_param && t->dim_param[k] ? t->dim_param[k] : "?";
            int w = t->shape.d[k] >= 0
                        ? snprintf(shape + len, sizeof shape - len, "%s%" PRId64, k ? "x" : "",
                                   t->shape.d[k])
                        : snprintf(shape + len, sizeof shape - len, "%s%s", k ? "x" : "", p);
            int we = snprintf(ex + elen, sizeof ex - elen, "%s%" PRId64, k ? "x" : "",
                              t->shape.d[k] >= 0 ? t->shape.d[k] : 1);
            if (w < 0 || we < 0 || (size_t)w >= sizeof shape - len ||
                (size_t)we >= sizeof ex - elen)
                break;
            len += (size_t)w;
            elen += (size_t)we;
        }
        if (t->shape.rank < 0)
            rc = oqc_err(d, "%s: graph input '%s' has no declared shape; give it with "
                            "--input-shape %s=D1xD2x...", g->path, t->name, t->name);
        else
            rc = oqc_err(d, "%s: graph input '%s' has dynamic shape %s; fix it with "
                            "--input-shape %s=%s", g->path, t->name, shape, t->name, ex);
    }
    return rc;
}

int oqc_rebatch(OqcGraph *g, int64_t n, OqcDiag *d) {
    char a[128];
    /* Resize and Upsample run with the batch of one sample only: at a batch of 3 the
     * calibration tables of models/tiny/resize_*.onnx came out different from batch 1's
     * (the float kernels do not yet take several images), so --batch is refused for them
     * rather than giving other statistics. */
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == OQC_OP_Resize || g->nodes[i].op == OQC_OP_Upsample)
            return oqc_err(d, "%s: --batch is not supported yet for models with %s (node '%s'); "
                              "use --batch 1", g->path, g->nodes[i].op_type, g->nodes[i].name);
    for (int i = 0; i < g->ninputs; i++) {
        OqcTensor *t = &g->tensors[g->inputs[i]];
        if (t->shape.rank < 1 || t->shape.d[0] != 1)
            return oqc_err(d, "%s: --batch needs inputs whose first dimension is 1; '%s' has "
                              "shape %s", g->path, t->name, oqc_shape_str(&t->shape, a, sizeof a));
        t->shape.d[0] = n;
    }
    OqcShape *before = oqc_arena_alloc(g->arena, (size_t)(g->noutputs + 1) * sizeof *before);
    for (int i = 0; i < g->noutputs; i++)
        before[i] = g->tensors[g->outputs[i]].shape;
    if (oqc_infer_shapes(g, 1, d) < 0)
        return oqc_err(d, "%s: the model's batch dimension cannot be changed to %lld (see "
                          "above); use --batch 1", g->path, (long long)n);
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        int ok = t->shape.rank == before[i].rank && t->shape.rank >= 1 &&
                 before[i].d[0] == 1 && t->shape.d[0] == n;
        for (int k = 1; ok && k < t->shape.rank; k++)
            ok = t->shape.d[k] == before[i].d[k];
        if (!ok)
            return oqc_err(d, "%s: with a batch of %lld, output '%s' has shape %s instead of "
                              "%lld x its batch-1 shape (the model fixes its batch size "
                              "somewhere, e.g. in a Reshape); use --batch 1", g->path,
                           (long long)n, t->name, oqc_shape_str(&t->shape, a, sizeof a),
                           (long long)n);
    }
    return 0;
}
