/* dump.c - text and Graphviz dumps of the IR (see ir.h; format in docs/ir-dump.md).
 *
 * The text dump is for people and for golden tests: one line per graph input,
 * constant, node and graph output, in topological order, byte-identical for the same
 * graph. Constants are summarised (dtype, shape, min, max), never printed whole.
 * Tensors carrying quantization parameters show them in braces after their type. */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oqcf_tensor.h"

/* Writes s as a double-quoted string with C escapes. */
static void put_quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Tensor names print bare when they are plain identifiers, quoted otherwise. */
static void put_name(FILE *f, const char *s) {
    int plain = s[0] != 0;
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("_.:/-[]", *p);
    fputc('%', f);
    if (plain)
        fputs(s, f);
    else
        put_quoted(f, s);
}

static void put_type(FILE *f, const OqcGraph *g, const OqcTensor *t) {
    char buf[128];
    fprintf(f, " %s[%s]", oqc_dtype_name(t->dtype), oqc_shape_str(&t->shape, buf, sizeof buf));
    if (t->view_base >= 0) { /* written in place into channels of another tensor */
        fprintf(f, "@");
        put_name(f, g->tensors[t->view_base].name);
        fprintf(f, "+%" PRId64, t->view_coff);
    }
    if (t->quant.valid && t->quant.ch_scale) {   /* the range of its channel scales */
        float mn = t->quant.ch_scale[0], mx = mn;
        for (int32_t c = 1; c < t->quant.nch; c++)
            mn = fminf(mn, t->quant.ch_scale[c]), mx = fmaxf(mx, t->quant.ch_scale[c]);
        fprintf(f, "{%s channel-scales=%d:%.9g..%.9g T=%.9g amax=%.9g%s%s}",
                t->quant.is_unsigned ? "u8" : "s8", (int)t->quant.nch, mn, mx,
                t->quant.threshold, t->quant.amax, t->quant.method ? " method=" : "",
                t->quant.method ? t->quant.method : "");
    } else if (t->quant.valid)
        fprintf(f, "{%s scale=%.9g T=%.9g amax=%.9g%s%s}", t->quant.is_unsigned ? "u8" : "s8",
                t->quant.scale, t->quant.threshold, t->quant.amax,
                t->quant.method ? " method=" : "", t->quant.method ? t->quant.method : "");
}

/* Reads element i of a numeric buffer as double (exact for all but huge int64). */
static double elem_as_double(OqcfDType dt, const void *p, int64_t i) {
    switch (dt) {
    case OQCF_FLOAT: return ((const float *)p)[i];
    case OQCF_DOUBLE: return ((const double *)p)[i];
    case OQCF_FLOAT16: return oqcf_f16_to_f32(((const uint16_t *)p)[i]);
    case OQCF_BFLOAT16: return oqcf_bf16_to_f32(((const uint16_t *)p)[i]);
    case OQCF_INT8: return ((const int8_t *)p)[i];
    case OQCF_UINT8: case OQCF_BOOL: return ((const uint8_t *)p)[i];
    case OQCF_INT16: return ((const int16_t *)p)[i];
    case OQCF_UINT16: return ((const uint16_t *)p)[i];
    case OQCF_INT32: return ((const int32_t *)p)[i];
    case OQCF_UINT32: return ((const uint32_t *)p)[i];
    case OQCF_INT64: return (double)((const int64_t *)p)[i];
    case OQCF_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

static int is_float_type(OqcfDType dt) {
    return dt == OQCF_FLOAT || dt == OQCF_DOUBLE || dt == OQCF_FLOAT16 || dt == OQCF_BFLOAT16;
}

/* Summary text of a value: small integer tensors list their values, others give range. */
static const char *value_summary(OqcArena *a, OqcfDType dt, const OqcShape *s,
                                 const void *data) {
    int64_t n = oqc_shape_numel(s);
    if (!data)
        return "no-data";
    if (n == 0)
        return "empty";
    if (dt == OQCF_STRING)
        return oqc_arena_printf(a, "strings=%" PRId64, n);
    if (oqcf_dtype_size(dt) == 0 || dt == OQCF_COMPLEX64 || dt == OQCF_COMPLEX128)
        return "opaque";
    if (!is_float_type(dt) && n <= 8) { /* shapes, axes, indices: show them */
        char buf[256];
        size_t len = 0;
        for (int64_t i = 0; i < n; i++) {
            int w;
            if (dt == OQCF_INT64)
                w = snprintf(buf + len, sizeof buf - len, "%s%" PRId64, i ? "," : "",
                             ((const int64_t *)data)[i]);
            else if (dt == OQCF_UINT64)
                w = snprintf(buf + len, sizeof buf - len, "%s%" PRIu64, i ? "," : "",
                             ((const uint64_t *)data)[i]);
            else
                w = snprintf(buf + len, sizeof buf - len, "%s%.0f", i ? "," : "",
                             elem_as_double(dt, data, i));
            if (w < 0 || (size_t)w >= sizeof buf - len)
                break;
            len += (size_t)w;
        }
        return oqc_arena_printf(a, "values=[%s]", buf);
    }
    double lo = INFINITY, hi = -INFINITY;
    int64_t nans = 0;
    if (dt == OQCF_FLOAT) { /* the common case, fast */
        const float *f = data;
        float flo = INFINITY, fhi = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            float v = f[i];
            if (v != v) {
                nans++;
                continue;
            }
            flo = v < flo ? v : flo;
            fhi = v > fhi ? v : fhi;
        }
        lo = flo;
        hi = fhi;
    } else {
        for (int64_t i = 0; i < n; i++) {
            double v = elem_as_double(dt, data, i);
            if (v != v) {
                nans++;
                continue;
            }
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    if (nans == n)
        return "all-nan";
    if (nans)
        return oqc_arena_printf(a, "min=%.6g max=%.6g nan=%" PRId64, lo, hi, nans);
    return oqc_arena_printf(a, "min=%.6g max=%.6g", lo, hi);
}

const char *oqc_const_summary(OqcGraph *g, int tensor) {
    const OqcTensor *t = &g->tensors[tensor];
    if (t->summary)
        return t->summary;
    return value_summary(g->arena, t->dtype, &t->shape, t->data);
}

static void put_attr(FILE *f, OqcArena *a, const OqcAttr *at) {
    fprintf(f, " %s=", at->name);
    switch (at->type) {
    case OQC_ATTR_FLOAT: fprintf(f, "%g", at->f); break;
    case OQC_ATTR_INT: fprintf(f, "%" PRId64, at->i); break;
    case OQC_ATTR_STRING: put_quoted(f, at->s); break;
    case OQC_ATTR_FLOATS:
        fputc('[', f);
        for (int i = 0; i < at->n; i++)
            fprintf(f, "%s%g", i ? "," : "", at->floats[i]);
        fputc(']', f);
        break;
    case OQC_ATTR_INTS:
        fputc('[', f);
        for (int i = 0; i < at->n; i++)
            fprintf(f, "%s%" PRId64, i ? "," : "", at->ints[i]);
        fputc(']', f);
        break;
    case OQC_ATTR_STRINGS:
        fputc('[', f);
        for (int i = 0; i < at->n; i++) {
            if (i)
                fputc(',', f);
            put_quoted(f, at->strings[i]);
        }
        fputc(']', f);
        break;
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS:
        fputc('[', f);
        for (int i = 0; i < at->n; i++) {
            char buf[128];
            const OqcValue *v = &at->tensors[i];
            fprintf(f, "%stensor %s[%s] %s", i ? "," : "", oqc_dtype_name(v->dtype),
                    oqc_shape_str(&v->shape, buf, sizeof buf),
                    value_summary(a, v->dtype, &v->shape, v->data));
        }
        fputc(']', f);
        break;
    default:
        fprintf(f, "<%s>", at->opaque ? at->opaque : oqc_attr_type_name(at->type));
        break;
    }
}

int oqc_dump_text(const OqcGraph *cg, FILE *out) {
    OqcGraph *g = (OqcGraph *)cg; /* summaries are cached in the arena only */
    fprintf(out, "oqc-ir 1 graph ");
    put_quoted(out, g->name);
    fprintf(out, " ir_version %" PRId64 " producer ", g->ir_version);
    put_quoted(out, g->producer);
    fprintf(out, " opsets");
    for (int i = 0; i < g->nopsets; i++)
        fprintf(out, " %s:%" PRId64, g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx",
                g->opsets[i].version);
    fputc('\n', out);
    for (int i = 0; i < g->ninputs; i++) {
        fprintf(out, "input  ");
        put_name(out, g->tensors[g->inputs[i]].name);
        put_type(out, g, &g->tensors[g->inputs[i]]);
        fputc('\n', out);
    }
    /* Constants in order of first use, then unused ones in id order. */
    unsigned char *shown = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? g->ntensors : g->nnodes); i++) {
            int nin = pass ? 1 : g->nodes[i].nin;
            for (int k = 0; k < nin; k++) {
                int t = pass ? i : g->nodes[i].in[k];
                if (t < 0 || !g->tensors[t].is_const || shown[t])
                    continue;
                if (pass && g->tensors[t].nconsumers == 0 && !g->tensors[t].is_output)
                    continue; /* dead initializers are not part of the graph */
                shown[t] = 1;
                fprintf(out, "const  ");
                put_name(out, g->tensors[t].name);
                put_type(out, g, &g->tensors[t]);
                fprintf(out, " %s\n", oqc_const_summary(g, t));
            }
        }
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        fprintf(out, "node   %s%s%s ", n->domain, n->domain[0] ? "." : "", n->op_type);
        put_quoted(out, n->name);
        fprintf(out, " (");
        for (int k = 0; k < n->nin; k++) {
            if (k)
                fprintf(out, ", ");
            if (n->in[k] < 0) {
                fprintf(out, "-");
                continue;
            }
            put_name(out, g->tensors[n->in[k]].name);
            put_type(out, g, &g->tensors[n->in[k]]);
        }
        fprintf(out, ") -> (");
        for (int k = 0; k < n->nout; k++) {
            if (k)
                fprintf(out, ", ");
            if (n->out[k] < 0) {
                fprintf(out, "-");
                continue;
            }
            put_name(out, g->tensors[n->out[k]].name);
            put_type(out, g, &g->tensors[n->out[k]]);
        }
        fputc(')', out);
        for (int k = 0; k < n->nattr; k++)
            put_attr(out, g->arena, &n->attr[k]);
        if (n->act.kind == OQCF_ACT_RELU)
            fprintf(out, " +Relu");
        else if (n->act.kind == OQCF_ACT_CLIP)
            fprintf(out, " +Clip(%g,%g)", n->act.p0, n->act.p1);
        else if (n->act.kind == OQCF_ACT_LEAKY)
            fprintf(out, " +LeakyRelu(%g)", n->act.p0);
        if (n->act_per_channel)
            fprintf(out, " +per-channel-activations");
        fputc('\n', out);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fprintf(out, "output ");
        put_name(out, g->tensors[g->outputs[i]].name);
        put_type(out, g, &g->tensors[g->outputs[i]]);
        fputc('\n', out);
    }
    return ferror(out) ? -1 : 0;
}

/* Writes a string for a DOT double-quoted label. */
static void dot_str(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

/* The edges into node `to` (a DOT id, e.g. "n3") from the writers of tensor t: its
 * producer, or for a buffer written in place (an eliminated Concat's output, which no
 * node produces) the producers of its channel views, or the graph input it is. */
static void dot_edges_from(const OqcGraph *g, FILE *out, int t, const char *to,
                           const int *first_view, const int *next_view) {
    const OqcTensor *tt = &g->tensors[t];
    if (tt->producer >= 0) {
        fprintf(out, "  n%d -> %s;\n", tt->producer, to);
        return;
    }
    if (tt->is_input) {
        fprintf(out, "  t%d -> %s;\n", t, to);
        return;
    }
    for (int v = first_view[t]; v >= 0; v = next_view[v])
        if (g->tensors[v].producer >= 0)
            fprintf(out, "  n%d -> %s [style=bold];\n", g->tensors[v].producer, to);
}

int oqc_dump_dot(const OqcGraph *g, FILE *out) {
    char buf[128], to[32];
    /* the channel views of each buffer, as linked lists (first_view[base], next_view) */
    int *first_view = malloc((size_t)(g->ntensors + 1) * sizeof *first_view);
    int *next_view = malloc((size_t)(g->ntensors + 1) * sizeof *next_view);
    if (!first_view || !next_view)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int t = 0; t < g->ntensors; t++)
        first_view[t] = next_view[t] = -1;
    for (int t = g->ntensors - 1; t >= 0; t--) {
        int b = g->tensors[t].view_base;
        if (b >= 0 && b < g->ntensors) {
            next_view[t] = first_view[b];
            first_view[b] = t;
        }
    }
    fprintf(out, "digraph \"");
    dot_str(out, g->name);
    fprintf(out, "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n");
    for (int i = 0; i < g->ninputs; i++) {
        const OqcTensor *t = &g->tensors[g->inputs[i]];
        fprintf(out, "  t%d [shape=ellipse, label=\"", g->inputs[i]);
        dot_str(out, t->name);
        fprintf(out, "\\n%s\"];\n", oqc_shape_str(&t->shape, buf, sizeof buf));
    }
    for (int i = 0; i < g->nnodes; i++) {
        const OqcNode *n = &g->nodes[i];
        const OqcTensor *y = n->nout > 0 && n->out[0] >= 0 ? &g->tensors[n->out[0]] : NULL;
        fprintf(out, "  n%d [label=\"", i);
        dot_str(out, n->op_type);
        fprintf(out, "\\n%s\"%s];\n", y ? oqc_shape_str(&y->shape, buf, sizeof buf) : "",
                n->op == OQC_OP_UNKNOWN ? ", style=dashed" : "");
        snprintf(to, sizeof to, "n%d", i);
        for (int k = 0; k < n->nin; k++) {
            int t = n->in[k];
            if (t >= 0 && !g->tensors[t].is_const)
                dot_edges_from(g, out, t, to, first_view, next_view);
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        fprintf(out, "  o%d [shape=ellipse, label=\"", i);
        dot_str(out, t->name);
        fprintf(out, "\\n%s\"];\n", oqc_shape_str(&t->shape, buf, sizeof buf));
        snprintf(to, sizeof to, "o%d", i);
        if (!t->is_const)
            dot_edges_from(g, out, g->outputs[i], to, first_view, next_view);
    }
    free(first_view);
    free(next_view);
    fprintf(out, "}\n");
    return ferror(out) ? -1 : 0;
}
