/* emit_node.c - `oqc compile`: one node of the prepared executor as C (emit_c.c writes
 * the files around it; emit_int.h has what the two share).
 *
 * oqc_em_node is the one switch over what a node does (ExecNode.kind, set by
 * exec_ops.c with the run function; the two must change together). Each case prints
 * parameter constants into NAME.c's declarations and one kernel call into its body:
 * loops belong in runtime/, never in emitted code. Pointers are symbolic (Loc:
 * oqc_em_plan_locs repeats oqc_exec_run's computation), constants exact (C99 hex
 * floats). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* The parameter structs are printed field by field: a field added at the end of one
 * of them must be printed too (these fail when the last field changes). */
#define LAST_FIELD(T, f)                                                                  \
    _Static_assert(offsetof(T, f) + sizeof(((T *)0)->f) + _Alignof(T) > sizeof(T),       \
                   #T "." #f " is no longer its last field: emit_node.c must print the new ones")
LAST_FIELD(OqcfConvParams, act_per_channel);
LAST_FIELD(OqcfPoolParams, y_coff);
LAST_FIELD(OqcfGemmParams, act);
LAST_FIELD(OqcfSlice, out);
LAST_FIELD(OqcfAct, p1);

/* decl, after a comment naming the node being emitted the first time it is used. */
static FILE *decl(Em *m) {
    if (!m->headed) {
        const OqcNode *n = &m->g->nodes[m->node];
        fprintf(m->decl, "\n/* %d: %s '", m->node, n->op_type);
        oqc_em_comment(m->decl, n->name);
        fputs("' */\n", m->decl);
        m->headed = 1;
    }
    return m->decl;
}

const char *oqc_em_ctype(OqcfDType t) {
    switch (t) {
    case OQCF_FLOAT: return "float";
    case OQCF_DOUBLE: return "double";
    case OQCF_INT8: return "int8_t";
    case OQCF_INT16: return "int16_t";
    case OQCF_INT32: return "int32_t";
    case OQCF_INT64: return "int64_t";
    case OQCF_UINT8: case OQCF_BOOL: return "uint8_t";
    case OQCF_UINT16: case OQCF_FLOAT16: case OQCF_BFLOAT16: return "uint16_t";
    case OQCF_UINT32: return "uint32_t";
    case OQCF_UINT64: return "uint64_t";
    default: return NULL;
    }
}

static const char *dtype_enum(OqcfDType t) {
    static const char *const names[] = {
        [OQCF_UNDEFINED] = "OQCF_UNDEFINED", [OQCF_FLOAT] = "OQCF_FLOAT",
        [OQCF_UINT8] = "OQCF_UINT8", [OQCF_INT8] = "OQCF_INT8", [OQCF_UINT16] = "OQCF_UINT16",
        [OQCF_INT16] = "OQCF_INT16", [OQCF_INT32] = "OQCF_INT32", [OQCF_INT64] = "OQCF_INT64",
        [OQCF_STRING] = "OQCF_STRING", [OQCF_BOOL] = "OQCF_BOOL",
        [OQCF_FLOAT16] = "OQCF_FLOAT16", [OQCF_DOUBLE] = "OQCF_DOUBLE",
        [OQCF_UINT32] = "OQCF_UINT32", [OQCF_UINT64] = "OQCF_UINT64",
        [OQCF_COMPLEX64] = "OQCF_COMPLEX64", [OQCF_COMPLEX128] = "OQCF_COMPLEX128",
        [OQCF_BFLOAT16] = "OQCF_BFLOAT16"};
    OQC_ASSERT((unsigned)t < sizeof names / sizeof names[0] && names[t]);
    return names[t];
}

static const char *act_enum(OqcfActKind k) {
    switch (k) {
    case OQCF_ACT_NONE: return "OQCF_ACT_NONE";
    case OQCF_ACT_RELU: return "OQCF_ACT_RELU";
    case OQCF_ACT_CLIP: return "OQCF_ACT_CLIP";
    case OQCF_ACT_LEAKY: return "OQCF_ACT_LEAKY";
    }
    oqc_panic(__FILE__, __LINE__, "unknown activation kind");
}

/* An exact C literal of a float: a hex float with an f suffix, or INFINITY / NAN
 * (<math.h>; a NaN's payload is not kept). */
const char *oqc_em_flit(char *buf, size_t size, float f) {
    if (isnan(f))
        return "NAN";
    if (isinf(f))
        return f > 0 ? "INFINITY" : "-INFINITY";
    snprintf(buf, size, "%af", (double)f);
    return buf;
}

static void put_f(FILE *f, float v) {
    char b[48];
    fputs(oqc_em_flit(b, sizeof b, v), f);
}

void oqc_em_i64(FILE *f, int64_t v) {
    if (v == INT64_MIN)
        fputs("(-9223372036854775807 - 1)", f);
    else
        fprintf(f, "%" PRId64, v);
}

static void put_i64s(FILE *f, const int64_t *v, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        oqc_em_i64(f, v[i]);
    }
    if (!n)
        fputc('0', f);
    fputc('}', f);
}

static void put_shape(FILE *f, const OqcfShape *s) {
    fprintf(f, "{.rank = %d, .d = ", s->rank);
    put_i64s(f, s->d, s->rank);
    fputc('}', f);
}

static void put_act(FILE *f, const OqcfAct *a) {
    fprintf(f, "{.kind = %s, .p0 = ", act_enum(a->kind));
    put_f(f, a->p0);
    fputs(", .p1 = ", f);
    put_f(f, a->p1);
    fputc('}', f);
}

/* Writes s into a C comment: printable ASCII only, no comment delimiters, no
 * trigraph-looking pairs. */
void oqc_em_comment(FILE *f, const char *s) {
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c < 0x20 || c > 0x7e)
            c = '?';
        if ((c == '*' && p[1] == '/') || (c == '/' && p[1] == '*') || (c == '?' && p[1] == '?'))
            fputc(c, f), c = ' ';
        fputc(c, f);
    }
}

/* Writes s as a C string literal. */
void oqc_em_string_lit(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '?')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e)
            fprintf(f, "\\%03o", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* A C expression for tensor t's data as a pointer to its element type (arena
 * allocated). Marks constants as used. */
const char *oqc_em_ptr(Em *m, int t) {
    const OqcTensor *tt = &m->g->tensors[t];
    Loc l = m->loc[t];
    const char *ct = oqc_em_ctype(tt->dtype);
    size_t es = oqcf_dtype_size(tt->dtype);
    OQC_ASSERT(ct && es);
    switch (l.kind) {
    case LOC_ARENA:
        return oqc_arena_printf(m->a, "(%s *)(a + %zu)", ct, l.off);
    case LOC_INPUT:
        OQC_ASSERT(l.off % es == 0);
        return l.off ? oqc_arena_printf(m->a, "(in[%d] + %zu)", l.idx, l.off / es)
                     : oqc_arena_printf(m->a, "in[%d]", l.idx);
    case LOC_CONST: {
        const OqcTensor *c = &m->g->tensors[l.idx];
        size_t ces = oqcf_dtype_size(c->dtype);
        m->used[l.idx] = 1;
        if (c->dtype != tt->dtype) /* a view with another element type */
            return oqc_arena_printf(m->a, "(const %s *)(const void *)((const unsigned char *)"
                                          "%s_w%d + %zu)", ct, m->name, l.idx, l.off);
        OQC_ASSERT(l.off % ces == 0);
        return l.off ? oqc_arena_printf(m->a, "(%s_w%d + %zu)", m->name, l.idx, l.off / ces)
                     : oqc_arena_printf(m->a, "%s_w%d", m->name, l.idx);
    }
    case LOC_NONE:
        break;
    }
    oqc_panic(__FILE__, __LINE__, "tensor used by a kernel call has no storage");
}

#define X(k) oqc_em_ptr(m, n->in[k])                 /* XIN */
#define Y(k) oqc_em_ptr(m, n->out[k])                /* YOUT */

/* Where a kernel writes output k: the view's base buffer (the kernel adds y_coff). */
static const char *out_base(Em *m, int node, int k) {
    const OqcTensor *t = &m->g->tensors[m->g->nodes[node].out[k]];
    return oqc_em_ptr(m, t->view_base >= 0 ? t->view_base : m->g->nodes[node].out[k]);
}

/* The scratch arguments every scratch-taking call gets: the executor's shared buffer. */
static const char *scratch_args(Em *m) {
    return m->e->scratch_bytes ? "SCRATCH, SCRATCH_BYTES" : "NULL, 0";
}

/* The pool argument of FP32 kernels: none, or the run's (`pool`, see write_source). */
static const char *pool_arg(const Em *m) {
    return m->threads > 1 ? "pool" : "NULL";
}

static void use_kernel(Em *m, const char *file) {
    if (oqc_em_set_has(&m->kernels, file))
        return;
    OQC_ASSERT(m->kernels.n < 64);
    m->kernels.name[m->kernels.n++] = file;
}

/* The geometry arrays conv and pool parameters share, one line each. */
static void put_geometry(FILE *f, const int64_t *in_size, const int64_t *out_size,
                         const int64_t *kernel, const int64_t *stride, const int64_t *dilation,
                         const int64_t *pad_begin, const int64_t *pad_end) {
    static const char *const geo[] = {"in_size", "out_size", "kernel", "stride", "dilation",
                                      "pad_begin", "pad_end"};
    const int64_t *v[] = {in_size, out_size, kernel, stride, dilation, pad_begin, pad_end};
    for (int i = 0; i < 7; i++) {
        fprintf(f, "    .%s = ", geo[i]);
        put_i64s(f, v[i], OQCF_MAX_SPATIAL);
        fputs(",\n", f);
    }
}

/* The channel views conv and pool parameters share, then `end`. */
static void put_views(FILE *f, int64_t x_ctotal, int64_t x_coff, int64_t y_ctotal,
                      int64_t y_coff, const char *end) {
    fprintf(f, "    .x_ctotal = %" PRId64 ", .x_coff = %" PRId64 ", .y_ctotal = %" PRId64
               ", .y_coff = %" PRId64 "%s", x_ctotal, x_coff, y_ctotal, y_coff, end);
}

static void conv_params(Em *m, const char *pname, const OqcfConvParams *p, int node) {
    FILE *f = decl(m);
    const OqcNode *n = &m->g->nodes[node];
    fprintf(f, "static const OqcfConvParams %s = {\n", pname);
    fprintf(f, "    .nspatial = %d, .batch = %" PRId64 ", .channels = %" PRId64
               ", .out_channels = %" PRId64 ", .group = %" PRId64 ",\n",
            p->nspatial, p->batch, p->channels, p->out_channels, p->group);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    put_views(f, p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff, ",\n    .act = ");
    put_act(f, &p->act);
    if (p->act_per_channel) {
        OQC_ASSERT(n->act_per_channel && p->act_per_channel >= n->act_per_channel);
        fprintf(f, ",\n    .act_per_channel = &act%d[%td]};\n", node,
                p->act_per_channel - n->act_per_channel);
    } else {
        fputs(",\n    .act_per_channel = NULL};\n", f);
    }
}

static void pool_params(Em *m, int node, const OqcfPoolParams *p) {
    FILE *f = decl(m);
    fprintf(f, "static const OqcfPoolParams p%d = {\n", node);
    fprintf(f, "    .nspatial = %d, .batch = %" PRId64 ", .channels = %" PRId64 ",\n",
            p->nspatial, p->batch, p->channels);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    fprintf(f, "    .count_include_pad = %d, .storage_order = %d,\n", p->count_include_pad,
            p->storage_order);
    put_views(f, p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff, "};\n");
}

/* static const OqcfShape s<node>[] = {shapes of inputs 0..nin-1}. */
static void in_shapes(Em *m, int node, int nin) {
    const OqcNode *n = &m->g->nodes[node];
    fprintf(decl(m), "static const OqcfShape s%d[%d] = {", node, nin);
    for (int k = 0; k < nin; k++) {
        fputs(k ? ",\n    " : "\n    ", decl(m));
        OqcShape s = m->g->tensors[n->in[k]].shape;
        if (n->op == OQC_OP_PRelu && k == 1)   /* as run_binary broadcasts it */
            s = oqc_prelu_slope_shape(n, &m->g->tensors[n->in[0]].shape, &s);
        put_shape(decl(m), &s);
    }
    fputs("};\n", decl(m));
}

/* The tables of Resize plan r as constants: rzi<node>_<k> (indices), rzw<node>_<k>
 * (weights) and rz<node>, the OqcfResizeAxis array of its passes. */
static void resize_tables(Em *m, int node, const OqcResize *r) {
    FILE *f = decl(m);
    for (int k = 0; k < r->naxes; k++) {
        const OqcfResizeAxis *a = &r->axes[k];
        int64_t cnt = a->out_len * a->taps;
        fprintf(f, "static const int32_t rzi%d_%d[%" PRId64 "] = {", node, k, cnt);
        for (int64_t i = 0; i < cnt; i++)
            fprintf(f, "%s%" PRId32, i % 16 ? ", " : i ? ",\n    " : "\n    ", a->idx[i]);
        fputs("};\n", f);
        if (!a->w)
            continue;
        fprintf(f, "static const float rzw%d_%d[%" PRId64 "] = {", node, k, cnt);
        for (int64_t i = 0; i < cnt; i++) {
            fputs(i % 6 ? ", " : i ? ",\n    " : "\n    ", f);
            put_f(f, a->w[i]);
        }
        fputs("};\n", f);
    }
    fprintf(f, "static const OqcfResizeAxis rz%d[%d] = {", node, r->naxes ? r->naxes : 1);
    for (int k = 0; k < r->naxes; k++) {
        const OqcfResizeAxis *a = &r->axes[k];
        fprintf(f, "%s\n    {.axis = %d, .taps = %d, .out_len = %" PRId64 ", .idx = rzi%d_%d, ",
                k ? "," : "", a->axis, a->taps, a->out_len, node, k);
        if (a->w)
            fprintf(f, ".w = rzw%d_%d}", node, k);
        else
            fputs(".w = NULL}", f);
    }
    fputs(r->naxes ? "};\n" : "{.axis = 0, .taps = 1, .out_len = 0, .idx = NULL, .w = NULL}};\n", f);
}

/* ------------------------------------------------------------------ INT8 nodes */

/* An INT8 constant array NAME_q<node><suffix> in NAME_weights.c; returns its name. */
static const char *q_array(Em *m, const char *suffix, const char *ctype, const void *v,
                           int64_t n, size_t esize) {
    const char *name = oqc_arena_printf(m->a, "%s_q%d%s", m->name, m->node, suffix);
    fprintf(m->qh, "extern const %s %s[%" PRId64 "];\n", ctype, name, n);
    fprintf(m->qc, "\nconst %s %s[%" PRId64 "] = {", ctype, name, n);
    int per = esize == 1 ? 24 : esize == 4 && !strcmp(ctype, "float") ? 6 : 10;
    for (int64_t i = 0; i < n; i++) {
        fputs(i % per ? ", " : i ? ",\n    " : "\n    ", m->qc);
        char b[48];
        if (!strcmp(ctype, "int8_t"))
            fprintf(m->qc, "%d", ((const int8_t *)v)[i]);
        else if (!strcmp(ctype, "uint8_t"))
            fprintf(m->qc, "%u", (unsigned)((const uint8_t *)v)[i]);
        else if (!strcmp(ctype, "int32_t"))
            fprintf(m->qc, ((const int32_t *)v)[i] == INT32_MIN ? "(-2147483647 - 1)" : "%" PRId32,
                    ((const int32_t *)v)[i]);
        else
            fputs(oqc_em_flit(b, sizeof b, ((const float *)v)[i]), m->qc);
    }
    fputs("};\n", m->qc);
    m->qbytes += (size_t)n * esize;
    return name;
}

/* The initializer of requantization r with n entries (arrays in NAME_weights.c). */
static const char *q_requant(Em *m, const char *suffix, const OqciRequant *r, int64_t n) {
    if (!r->per_index)
        n = 1;
    const char *mult = "NULL", *mm = "NULL", *sh = "NULL";
    if (r->mode == OQCI_REQ_FLOAT) {
        mult = q_array(m, oqc_arena_printf(m->a, "%s_mult", suffix), "float", r->mult, n, 4);
    } else {
        mm = q_array(m, oqc_arena_printf(m->a, "%s_m", suffix), "int32_t", r->m, n, 4);
        sh = q_array(m, oqc_arena_printf(m->a, "%s_shift", suffix), "int8_t", r->shift, n, 1);
    }
    return oqc_arena_printf(m->a, "{%s, %d, %s, %s, %s}",
                            r->mode == OQCI_REQ_FLOAT ? "OQCI_REQ_FLOAT" : "OQCI_REQ_FIXED",
                            (int)r->per_index, mult, mm, sh);
}

const char *oqc_em_qtype_name(int32_t t) {
    return t == OQCI_U8 ? "OQCI_U8" : t == OQCI_S32 ? "OQCI_S32" : "OQCI_S8";
}

/* An int32 bound as a C expression (INT32_MIN has no literal). */
static const char *i32_lit(Em *m, int32_t v) {
    return v == INT32_MIN ? "(-2147483647 - 1)" : oqc_arena_printf(m->a, "%" PRId32, v);
}

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
int oqc_em_q_boundary(const Em *m, int node) {
    const OqcGraph *g = m->g;
    const OqcNode *n = &g->nodes[node];
    if (!n->q || g->ninputs != 1 || g->noutputs != 1)
        return 0;
    if (n->q->kind == OQC_Q_QUANTIZE)
        return n->in[0] == g->inputs[0];
    if (n->q->kind == OQC_Q_DEQUANTIZE)
        return n->out[0] == g->outputs[0];
    return 0;
}

/* The parameter constants and kernel call of INT8 node `node` (mirrors run_q in
 * exec_q.c: the same structs, so the same bits). */
static void emit_q(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    switch (q->kind) {
    case OQC_Q_CONV: {
        use_kernel(m, "oqci_conv.c");
        const OqciConv *p0 = &q->conv[0];
        int64_t wn = 0, bn = 0;
        for (int k = 0; k < q->nconv; k++) {
            wn += (int64_t)q->conv[k].out_c * q->conv[k].kpad;
            bn += q->conv[k].out_c;
        }
        const char *w = q_array(m, "_w", "int8_t", p0->w, wn, 1);
        const char *bias = p0->bias ? q_array(m, "_b", "int32_t", p0->bias, bn, 4) : NULL;
        for (int k = 0; k < q->nconv; k++) {
            const OqciConv *p = &q->conv[k];
            const char *rq = p->out_type == OQCI_S32   /* (not read) */
                                 ? "{OQCI_REQ_FLOAT, 0, NULL, NULL, NULL}"
                                 : q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq, p->out_c);
            fprintf(decl(m),
                    "static const OqciConv q%d_%d = {\n"
                    "    %d, %d, %d, %d, /* batch, in_c, in_h, in_w */\n"
                    "    %d, %d, %d, /* out_c, out_h, out_w */\n"
                    "    %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l */\n"
                    "    %d, %d, %d, %d, %d, /* group, kdim, kpad, out_ctotal, out_coff */\n"
                    "    %s, %s, %s, %s, %d, /* in_type, out_type, lo, hi, wpair16 */\n"
                    "    %s + %td, %s%s%s,\n    %s};\n",
                    node, k, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w,
                    p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
                    p->kdim, p->kpad, p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
                    oqc_em_qtype_name(p->out_type), i32_lit(m, p->lo), i32_lit(m, p->hi),
                    p->wpair16,
                    w, p->w - p0->w,
                    bias ? bias : "NULL",
                    bias ? oqc_arena_printf(m->a, " + %td", p->bias - p0->bias) : "", "", rq);
            if (m->threads > 1)
                fprintf(b, "    TRY(oqci_conv_par(&q%d_%d, %s, %s, %s, %s_THREADS, pool->run, "
                           "pool->ctx));\n", node, k, X(0), out_base(m, node, k),
                        m->e->scratch_bytes ? "SCRATCH" : "NULL", m->name);
            else
                fprintf(b, "    TRY(oqci_conv(&q%d_%d, %s, %s, %s));\n", node, k, X(0),
                        out_base(m, node, k), m->e->scratch_bytes ? "SCRATCH" : "NULL");
        }
        break;
    }
    case OQC_Q_DECONV: {
        use_kernel(m, "oqci_deconv.c");
        const OqciDeconv *p = &q->deconv;
        const char *w = q_array(m, "_w", "int8_t", p->w,
                                (int64_t)p->in_c * (p->out_c / p->group) * p->k_h * p->k_w, 1);
        const char *bias = p->bias ? q_array(m, "_b", "int32_t", p->bias, p->out_c, 4) : "NULL";
        const char *rq = q_requant(m, "", &p->rq, p->out_c);
        fprintf(decl(m),
                "static const OqciDeconv q%d = {\n"
                "    %d, %d, %d, %d, %d, %d, %d, /* batch, in_c, in_h, in_w, out_c, out_h, out_w */\n"
                "    %d, %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l, group */\n"
                "    %s, %s, %s, %s, /* in_type, out_type, lo, hi */\n    %s, %s,\n    %s};\n",
                node, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w,
                p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
                oqc_em_qtype_name(p->in_type), oqc_em_qtype_name(p->out_type),
                i32_lit(m, p->lo), i32_lit(m, p->hi), w, bias, rq);
        fprintf(b, "    TRY(oqci_deconv(&q%d, %s, %s, %s));\n", node, X(0), Y(0),
                m->e->scratch_bytes ? "SCRATCH" : "NULL");
        break;
    }
    case OQC_Q_MAXPOOL:
    case OQC_Q_AVGPOOL: {
        use_kernel(m, "oqci_pool.c");
        const OqciPool *p = &q->pool;
        int64_t entries = p->rq.per_index ? (int64_t)p->k_h * p->k_w + 1 : 1;
        const char *rq = (q->kind == OQC_Q_MAXPOOL && !p->requant) || p->out_type == OQCI_S32
                             ? "{OQCI_REQ_FLOAT, 0, NULL, NULL, NULL}"
                             : q_requant(m, "", &p->rq, entries);
        fprintf(decl(m),
                "static const OqciPool q%d = {\n"
                "    %d, %d, %d, %d, %d, %d, /* batch, channels, in_h, in_w, out_h, out_w */\n"
                "    %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l */\n"
                "    %d, %d, %d, /* count_include_pad, out_ctotal, out_coff */\n"
                "    %s, %s, %s, %s, %d, /* in_type, out_type, lo, hi, requant */\n    %s};\n",
                node, p->batch, p->channels, p->in_h, p->in_w, p->out_h, p->out_w, p->k_h,
                p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->count_include_pad,
                p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
                oqc_em_qtype_name(p->out_type),
                i32_lit(m, p->lo), i32_lit(m, p->hi), p->requant, rq);
        fprintf(b, "    TRY(oqci_%s(&q%d, %s, %s));\n",
                q->kind == OQC_Q_MAXPOOL ? "maxpool" : "avgpool", node, X(0), out_base(m, node, 0));
        break;
    }
    case OQC_Q_ADD: {
        use_kernel(m, "oqci_eltwise.c");
        const OqciAdd *p = &q->add;
        FILE *f = decl(m);
        const char *rqs[OQCI_ADD_MAX];
        for (int k = 0; k < p->ninputs; k++)
            rqs[k] = q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq[k], 1);
        fprintf(f, "static const OqciAdd q%d = {%d, %" PRId64 ", {", node, p->ninputs, p->count);
        for (int k = 0; k < OQCI_ADD_MAX; k++)
            fprintf(f, "%s%s", k ? ", " : "",
                    k < p->ninputs ? oqc_em_qtype_name(p->in_type[k]) : "0");
        fprintf(f, "},\n    %s, %d, %d, {", oqc_em_qtype_name(p->out_type), p->lo, p->hi);
        for (int k = 0; k < p->ninputs; k++)
            fprintf(f, "%s\n    %s", k ? "," : "", rqs[k]);
        fputs("}};\n", f);
        fprintf(b, "    {\n        const void *x_[%d];\n", p->ninputs);
        for (int k = 0; k < p->ninputs; k++)
            fprintf(b, "        x_[%d] = %s;\n", k, X(k));
        fprintf(b, "        TRY(oqci_add(&q%d, x_, %s));\n    }\n", node, Y(0));
        break;
    }
    case OQC_Q_CLAMP:
        use_kernel(m, "oqci_eltwise.c");
        fprintf(b, "    TRY(oqci_clamp(%s, %s, %s, %s, %" PRId64 ", %d, %d));\n", X(0),
                oqc_em_qtype_name(q->in_type), Y(0), oqc_em_qtype_name(q->out_type), q->count,
                q->lo, q->hi);
        break;
    case OQC_Q_MUL: {
        use_kernel(m, "oqci_eltwise.c");
        const OqciMul *p = &q->mul;
        const char *rq = q_requant(m, "", &p->rq, 1);
        fprintf(decl(m), "static const OqciMul q%d = {%" PRId64 ", %" PRId64 ", %s, %s, %s, %d, "
                         "%d,\n    %s};\n", node, p->outer, p->inner, oqc_em_qtype_name(p->a_type),
                oqc_em_qtype_name(p->b_type), oqc_em_qtype_name(p->out_type), p->lo, p->hi, rq);
        fprintf(b, "    TRY(oqci_mul(&q%d, %s, %s, %s));\n", node, X(0), X(1), Y(0));
        break;
    }
    case OQC_Q_LUT:
        use_kernel(m, "oqci_eltwise.c");
        fprintf(b, "    TRY(oqci_lut(%s, %s, %" PRId64 ", %s));\n", X(0), Y(0), q->count,
                q_array(m, "_lut", "uint8_t", q->table, 256, 1));
        break;
    case OQC_Q_QUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        fprintf(b, "    TRY(oqci_quantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0), Y(0),
                oqc_em_qtype_name(q->out_type), q->count, oqc_em_flit(sb, sizeof sb, q->scale));
        break;
    }
    case OQC_Q_DEQUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        const OqcAcc *a = q->acc;
        if (!a) {
            fprintf(b, "    TRY(oqci_dequantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0),
                    oqc_em_qtype_name(q->in_type), Y(0), q->count,
                    oqc_em_flit(sb, sizeof sb, q->scale));
            break;
        }
        const char *sc = q_array(m, "_s", "float", a->scale, a->per_channel ? a->channels : 1, 4);
        fprintf(b, "    TRY(oqci_dequantize_s32(%s, %s, %" PRId64 ", %d, %" PRId64 ", %s, %d));\n",
                X(0), Y(0), a->outer, a->channels, a->inner, sc, a->per_channel);
        if (m->pre && oqc_em_q_boundary(m, node))   /* the integer API's output: see write_source */
            fprintf(decl(m), "static const OqciRequant q%d_rq = %s;\n", node,
                    q_requant(m, "_rq", &a->rq, a->channels));
        break;
    }
    case OQC_Q_RESIZE: {
        if (!q->resize.naxes) {   /* nearest: the float kernel's tables, on bytes */
            use_kernel(m, "oqcf_resize.c");
            in_shapes(m, node, 1);
            resize_tables(m, node, q->rs);
            fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, 0.0f, 1, %s, %s));\n", X(0),
                    node, node, q->rs->naxes, Y(0), scratch_args(m));
            break;
        }
        use_kernel(m, "oqci_resize.c");
        const OqciResize *p = &q->resize;
        const char *ax[2] = {"{0, 0, NULL, NULL}", "{0, 0, NULL, NULL}"};
        for (int k = 0; k < p->naxes; k++) {
            const OqciResizeAxis *a = &p->ax[k];
            const char *ix = q_array(m, oqc_arena_printf(m->a, "_i%d", k), "int32_t", a->idx,
                                     2 * a->out_len, 4);
            const char *wn = oqc_arena_printf(m->a, "%s_q%d_w%d", m->name, node, k);
            fprintf(m->qh, "extern const int16_t %s[%" PRId64 "];\n", wn, 2 * a->out_len);
            fprintf(m->qc, "\nconst int16_t %s[%" PRId64 "] = {", wn, 2 * a->out_len);
            for (int64_t i = 0; i < 2 * a->out_len; i++)
                fprintf(m->qc, "%s%d", i % 16 ? ", " : i ? ",\n    " : "\n    ", a->w[i]);
            fputs("};\n", m->qc);
            m->qbytes += (size_t)(2 * a->out_len) * 2;
            ax[k] = oqc_arena_printf(m->a, "{%d, %" PRId64 ", %s, %s}", a->axis, a->out_len, ix,
                                     wn);
        }
        fprintf(decl(m), "static const OqciResize q%d = {%s, %d, ", node,
                oqc_em_qtype_name(p->type), p->rank);
        put_i64s(decl(m), p->in, OQCI_RESIZE_MAX_RANK);
        fprintf(decl(m), ", %d,\n    {%s,\n     %s}}; /* type, rank, in, naxes, ax */\n",
                p->naxes, ax[0], ax[1]);
        fprintf(b, "    TRY(oqci_resize(&q%d, %s, %s));\n", node, X(0), Y(0));
        break;
    }
    case OQC_Q_VIEW:
        break;
    }
}

/* Why the emitter cannot compile node `node`, or NULL when it can. */
const char *oqc_em_unsupported(Em *m, int node) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    switch (x->kind) {
    case EXEC_NONE:
        return x->run ? "the C emitter does not support this operator yet" : NULL;
    case EXEC_DROPOUT:
        return n->nout > 1 && n->out[1] >= 0 ? "the C emitter does not support Dropout's "
                                               "mask output yet" : NULL;
    case EXEC_SHAPE: case EXEC_CONSTANT_OF_SHAPE:
        return "the C emitter does not support this operator yet";
    default:
        return NULL;
    }
}

/* Prints node `node`'s parameter constants and kernel call. Each case mirrors the
 * run_* function of exec_ops.c with the same kind. */
void oqc_em_node(Em *m, int node) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    FILE *b = m->body;
    if (x->kind == EXEC_NONE || x->kind == EXEC_DROPOUT)
        return; /* views: the pointer plan already points the output at the input */
    if (x->kind == EXEC_Q && m->pre && oqc_em_q_boundary(m, node))
        b = n->q->kind == OQC_Q_QUANTIZE ? m->pre : m->post;
    m->node = node;
    m->headed = 0;
    fprintf(b, "    /* %d: %s '", node, n->op_type);
    oqc_em_comment(b, n->name);
    fputs("' */\n", b);
    fprintf(b, "    OQC_LAYER_BEGIN(%d);\n", node);
    const OqcTensor *in0 = &g->tensors[n->in[0]];
    switch (x->kind) {
    case EXEC_Q:
        emit_q(m, node, b);
        break;
    case EXEC_CONV: {
        use_kernel(m, "oqcf_conv.c");
        const char *bias = n->nin > 2 && n->in[2] >= 0 ? X(2) : NULL;
        if (n->act_per_channel) {
            int64_t total = 0;
            if (x->convs)
                for (int k = 0; k < n->nout; k++)
                    total += x->convs[k].out_channels;
            else
                total = x->conv.out_channels;
            fprintf(decl(m), "static const OqcfAct act%d[%" PRId64 "] = {", node, total);
            for (int64_t c = 0; c < total; c++) {
                fputs(c % 2 ? ", " : c ? ",\n    " : "\n    ", decl(m));
                put_act(decl(m), &n->act_per_channel[c]);
            }
            fputs("};\n", decl(m));
        }
        if (!x->convs) {
            conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
            fprintf(b, "    TRY(oqcf_conv(%s, &p%d, %s, %s, %s, %s, %s));\n", pool_arg(m), node,
                    X(0), X(1), bias ? bias : "NULL", out_base(m, node, 0), scratch_args(m));
            break;
        }
        /* A merged conv: one call per output range of weight rows. */
        const OqcShape *ws = &g->tensors[n->in[1]].shape;
        int64_t row = oqc_shape_numel(ws) / ws->d[0];
        for (int k = 0; k < n->nout; k++) {
            const char *pn = oqc_arena_printf(m->a, "p%d_%d", node, k);
            conv_params(m, pn, &x->convs[k], node);
            const char *w = X(1), *bk = "NULL";
            if (x->koff[k])
                w = oqc_arena_printf(m->a, "%s + %" PRId64, w, x->koff[k] * row);
            if (bias)
                bk = x->koff[k] ? oqc_arena_printf(m->a, "%s + %" PRId64, bias, x->koff[k]) : bias;
            fprintf(b, "    TRY(oqcf_conv(%s, &%s, %s, %s, %s, %s, %s));\n", pool_arg(m), pn,
                    X(0), w, bk, out_base(m, node, k), scratch_args(m));
        }
        break;
    }
    case EXEC_CONV_TRANSPOSE:
        use_kernel(m, "oqcf_deconv.c");
        conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
        fprintf(b, "    TRY(oqcf_conv_transpose(&p%d, %s, %s, %s, %s));\n", node, X(0), X(1),
                n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL", Y(0));
        break;
    case EXEC_MAXPOOL: {
        use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        const char *idx = n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL";
        if (in0->dtype == OQCF_FLOAT) {
            fprintf(b, "    TRY(oqcf_maxpool(%s, &p%d, %s, %s, %s));\n", pool_arg(m), node, X(0),
                    out_base(m, node, 0), idx);
            break;
        }
        /* 8-bit inputs: max commutes with the exact conversion to float and back. */
        use_kernel(m, "oqcf_cast.c");
        int64_t nx = oqc_shape_numel(&in0->shape), ny = numel_out(m->e, node, 0);
        fprintf(b, "    TRY(oqcf_cast(%s, %s, SCRATCH, OQCF_FLOAT, %" PRId64 "));\n", X(0),
                dtype_enum(in0->dtype), nx);
        fprintf(b, "    TRY(oqcf_maxpool(%s, &p%d, (float *)SCRATCH, (float *)SCRATCH + %" PRId64
                   ", %s));\n", pool_arg(m), node, nx, idx);
        fprintf(b, "    TRY(oqcf_cast((float *)SCRATCH + %" PRId64 ", OQCF_FLOAT, %s, %s, %" PRId64
                   "));\n", nx, Y(0), dtype_enum(in0->dtype), ny);
        break;
    }
    case EXEC_AVGPOOL:
        use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        fprintf(b, "    TRY(oqcf_avgpool(%s, &p%d, %s, %s));\n", pool_arg(m), node, X(0),
                out_base(m, node, 0));
        break;
    case EXEC_GLOBAL_POOL:
        use_kernel(m, "oqcf_pooling.c");
        fprintf(b, "    TRY(oqcf_global_%s(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s));\n",
                n->op == OQC_OP_GlobalAveragePool ? "avgpool" : "maxpool", pool_arg(m), x->a,
                x->b, x->c, X(0),
                Y(0));
        break;
    case EXEC_BATCHNORM:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_batchnorm(%s, %" PRId64 ", %" PRId64 ", %" PRId64
                   ", %s, %s, %s, %s, %s, ", pool_arg(m), x->a, x->b, x->c, X(0), X(1), X(2), X(3),
                X(4));
        put_f(b, x->f0);
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_LRN:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_lrn(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %" PRId64
                   ", ", pool_arg(m), x->a, x->b, x->c, X(0), oqc_attr_int(n, "size", 1));
        put_f(b, oqc_attr_float(n, "alpha", 1e-4f));
        fputs(", ", b);
        put_f(b, oqc_attr_float(n, "beta", 0.75f));
        fputs(", ", b);
        put_f(b, oqc_attr_float(n, "bias", 1.0f));
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_LAYERNORM:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_layernorm(%" PRId64 ", %" PRId64 ", %s, %s, %s, ", x->a, x->b, X(0),
                X(1), n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL");
        put_f(b, x->f0);
        fprintf(b, ", %s, %s, %s));\n", Y(0), n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL",
                n->nout > 2 && n->out[2] >= 0 ? Y(2) : "NULL");
        break;
    case EXEC_INSTANCENORM:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_instancenorm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, ",
                x->a, x->b, x->c, X(0), X(1), X(2));
        put_f(b, x->f0);
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_GEMM: {
        use_kernel(m, "oqcf_gemm.c");
        const OqcfGemmParams *p = &x->gemm;
        fprintf(decl(m), "static const OqcfGemmParams p%d = {\n    .M = %" PRId64 ", .N = %" PRId64
                         ", .K = %" PRId64 ", .trans_a = %d, .trans_b = %d,\n    .alpha = ",
                node, p->M, p->N, p->K, p->trans_a, p->trans_b);
        put_f(decl(m), p->alpha);
        fputs(", .beta = ", decl(m));
        put_f(decl(m), p->beta);
        fprintf(decl(m), ", .has_c = %d,\n    .c_shape = ", p->has_c);
        put_shape(decl(m), &p->c_shape);
        fputs(",\n    .act = ", decl(m));
        put_act(decl(m), &p->act);
        fputs("};\n", decl(m));
        fprintf(b, "    TRY(oqcf_gemm(%s, &p%d, %s, %s, %s, %s, %s));\n", pool_arg(m), node,
                X(0), X(1), p->has_c ? X(2) : "NULL", Y(0), scratch_args(m));
        break;
    }
    case EXEC_MATMUL:
        use_kernel(m, "oqcf_gemm.c");
        in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_matmul(%s, &s%d[0], %s, &s%d[1], %s, %s, %s));\n", pool_arg(m),
                node, X(0), node, X(1), Y(0), scratch_args(m));
        break;
    case EXEC_UNARY: {
        use_kernel(m, "oqcf_eltwise.c");
        int64_t cnt = numel_out(m->e, node, 0);
        OqcfUnaryOp uop;
        float alpha, beta;
        if (oqc_unary_of(n, &uop, &alpha, &beta)) {
            static const char *const names[OQCF_UN_COUNT] = {
#define UNARY_NAME(name, value) [OQCF_UN_##name] = #name,
                OQCF_UNARY_OPS(UNARY_NAME)
#undef UNARY_NAME
            };
            fprintf(b, "    TRY(oqcf_unary(OQCF_UN_%s, %s, %s, %" PRId64 ", ", names[x->uop],
                    X(0), Y(0), cnt);
            put_f(b, x->f0);
            fputs(", ", b);
            put_f(b, x->f1);
            fputs("));\n", b);
            break;
        }
        const char *fn = n->op == OQC_OP_Relu ? "relu" : n->op == OQC_OP_Sigmoid ? "sigmoid"
                       : n->op == OQC_OP_Tanh ? "tanh" : n->op == OQC_OP_LeakyRelu ? "leaky_relu"
                       : n->op == OQC_OP_HardSigmoid ? "hard_sigmoid" : NULL;
        OQC_ASSERT(fn);
        fprintf(b, "    TRY(oqcf_%s(%s, %s, %" PRId64, fn, X(0), Y(0), cnt);
        if (n->op == OQC_OP_LeakyRelu || n->op == OQC_OP_HardSigmoid) {
            fputs(", ", b);
            put_f(b, x->f0);
        }
        if (n->op == OQC_OP_HardSigmoid) {
            fputs(", ", b);
            put_f(b, x->f1);
        }
        fputs("));\n", b);
        break;
    }
    case EXEC_CLIP: {
        use_kernel(m, "oqcf_eltwise.c");
        const char *lo = "NULL", *hi = "NULL";
        if (n->opset >= 11) {
            if (n->nin > 1 && n->in[1] >= 0)
                lo = X(1);
            if (n->nin > 2 && n->in[2] >= 0)
                hi = X(2);
        } else {
            fprintf(decl(m), "static const float v%d[2] = {", node);
            put_f(decl(m), x->f0);
            fputs(", ", decl(m));
            put_f(decl(m), x->f1);
            fputs("}; /* min, max */\n", decl(m));
            lo = oqc_arena_printf(m->a, "&v%d[0]", node);
            hi = oqc_arena_printf(m->a, "&v%d[1]", node);
        }
        fprintf(b, "    TRY(oqcf_clip_typed(%s, %s, %s, %" PRId64 ", %s, %s));\n",
                dtype_enum(in0->dtype), X(0), Y(0), numel_out(m->e, node, 0), lo, hi);
        break;
    }
    case EXEC_BINARY: {
        use_kernel(m, "oqcf_eltwise.c");
        const char *op = n->op == OQC_OP_Add ? "OQCF_ADD" : n->op == OQC_OP_Sub ? "OQCF_SUB"
                       : n->op == OQC_OP_Mul ? "OQCF_MUL" : n->op == OQC_OP_Div ? "OQCF_DIV"
                       : n->op == OQC_OP_Pow ? "OQCF_POW" : n->op == OQC_OP_PRelu ? "OQCF_PRELU"
                       : NULL;
        OQC_ASSERT(op);
        in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_binary(%s, %s, %s, &s%d[0], %s, &s%d[1], %s));\n", op,
                dtype_enum(g->tensors[n->out[0]].dtype), X(0), node, X(1), node, Y(0));
        break;
    }
    case EXEC_POW_CAST: {   /* run_pow_cast: through double in the scratch */
        use_kernel(m, "oqcf_eltwise.c");
        use_kernel(m, "oqcf_cast.c");
        in_shapes(m, node, 2);
        int64_t na = oqc_shape_numel(&in0->shape), nb = oqc_shape_numel(&g->tensors[n->in[1]].shape);
        fprintf(b, "    TRY(oqcf_cast(%s, %s, SCRATCH, OQCF_DOUBLE, %" PRId64 "));\n", X(0),
                dtype_enum(in0->dtype), na);
        fprintf(b, "    TRY(oqcf_cast(%s, %s, (double *)SCRATCH + %" PRId64 ", OQCF_DOUBLE, %" PRId64
                   "));\n", X(1), dtype_enum(g->tensors[n->in[1]].dtype), na, nb);
        fprintf(b, "    TRY(oqcf_binary(OQCF_POW, OQCF_DOUBLE, SCRATCH, &s%d[0], (double *)SCRATCH + %"
                   PRId64 ", &s%d[1], (double *)SCRATCH + %" PRId64 "));\n", node, na, node,
                na + nb);
        fprintf(b, "    TRY(oqcf_cast((double *)SCRATCH + %" PRId64 ", OQCF_DOUBLE, %s, %s, %" PRId64
                   "));\n", na + nb, Y(0), dtype_enum(g->tensors[n->out[0]].dtype),
                numel_out(m->e, node, 0));
        break;
    }
    case EXEC_SUM:
        use_kernel(m, "oqcf_eltwise.c");
        in_shapes(m, node, n->nin);
        fputs("    {\n        const float *const x[] = {", b);
        for (int k = 0; k < n->nin; k++)
            fprintf(b, "%s%s", k ? ", " : "", X(k));
        fprintf(b, "};\n        TRY(oqcf_sum(x, s%d, %d, %s));\n    }\n", node, n->nin, Y(0));
        break;
    case EXEC_SOFTMAX:
        use_kernel(m, "oqcf_eltwise.c");
        fprintf(b, "    TRY(oqcf_softmax(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 "));\n", X(0),
                Y(0), x->a, x->b, x->c);
        break;
    case EXEC_CONCAT:
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, n->nin);
        fputs("    {\n        const void *const x[] = {", b);
        for (int k = 0; k < n->nin; k++)
            fprintf(b, "%s%s", k ? ", " : "", X(k));
        fprintf(b, "};\n        TRY(oqcf_concat(x, s%d, %d, %d, %zu, %s));\n    }\n", node, n->nin,
                x->axis, oqcf_dtype_size(g->tensors[n->out[0]].dtype), Y(0));
        break;
    case EXEC_SPLIT: {
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, 1);
        int64_t sizes[256];
        for (int k = 0; k < n->nout; k++)
            sizes[k] = g->tensors[n->out[k]].shape.d[x->axis];
        fprintf(decl(m), "static const int64_t sz%d[%d] = ", node, n->nout);
        put_i64s(decl(m), sizes, n->nout);
        fputs(";\n", decl(m));
        fputs("    {\n        void *const y[] = {", b);
        for (int k = 0; k < n->nout; k++)
            fprintf(b, "%s%s", k ? ", " : "", Y(k));
        fprintf(b, "};\n        TRY(oqcf_split(%s, &s%d[0], %d, sz%d, %d, %zu, y));\n    }\n", X(0),
                node, x->axis, node, n->nout, oqcf_dtype_size(in0->dtype));
        break;
    }
    case EXEC_SLICE:
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, 1);
        fprintf(decl(m), "static const OqcfSlice p%d = {\n    .start = ", node);
        put_i64s(decl(m), x->slice.start, OQCF_MAX_RANK);
        fputs(",\n    .step = ", decl(m));
        put_i64s(decl(m), x->slice.step, OQCF_MAX_RANK);
        fputs(",\n    .out = ", decl(m));
        put_shape(decl(m), &x->slice.out);
        fputs("};\n", decl(m));
        fprintf(b, "    TRY(oqcf_slice(%s, &s%d[0], &p%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    case EXEC_TRANSPOSE: {
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, 1);
        fprintf(decl(m), "static const int perm%d[%d] = {", node, OQC_MAX_RANK);
        for (int i = 0; i < OQC_MAX_RANK; i++)
            fprintf(decl(m), "%s%d", i ? ", " : "", x->perm[i]);
        fputs("};\n", decl(m));
        fprintf(b, "    TRY(oqcf_transpose(%s, &s%d[0], perm%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    }
    case EXEC_PAD: {
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, 1);
        fprintf(decl(m), "static const int64_t pads%d[%d] = ", node, 2 * OQC_MAX_RANK);
        put_i64s(decl(m), x->pads, 2 * OQC_MAX_RANK);
        fputs(";\n", decl(m));
        const char *value = "NULL";
        if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0) {
            value = X(2);
        } else if (n->opset < 11) {
            fprintf(decl(m), "static const float v%d = ", node);
            put_f(decl(m), x->f0);
            fputs("; /* value */\n", decl(m));
            value = oqc_arena_printf(m->a, "&v%d", node);
        }
        static const char *const modes[] = {[OQCF_PAD_CONSTANT] = "OQCF_PAD_CONSTANT",
                                            [OQCF_PAD_REFLECT] = "OQCF_PAD_REFLECT",
                                            [OQCF_PAD_EDGE] = "OQCF_PAD_EDGE"};
        fprintf(b, "    TRY(oqcf_pad(%s, &s%d[0], pads%d, %s, %s, %zu, %s));\n", X(0), node, node,
                modes[x->pad_mode], value, oqcf_dtype_size(in0->dtype), Y(0));
        break;
    }
    case EXEC_GATHER: {
        use_kernel(m, "oqcf_layout.c");
        in_shapes(m, node, 1);
        const OqcTensor *ix = &g->tensors[n->in[1]];
        fprintf(b, "    TRY(oqcf_gather(%s, &s%d[0], %d, %s, %s, %" PRId64 ", %zu, %s));\n", X(0),
                node, x->axis, X(1), dtype_enum(ix->dtype), oqc_shape_numel(&ix->shape),
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    }
    case EXEC_REDUCE: {
        static const char *const rops[] = {[OQCF_REDUCE_SUM] = "OQCF_REDUCE_SUM",
                                           [OQCF_REDUCE_MEAN] = "OQCF_REDUCE_MEAN",
                                           [OQCF_REDUCE_MAX] = "OQCF_REDUCE_MAX",
                                           [OQCF_REDUCE_MIN] = "OQCF_REDUCE_MIN"};
        use_kernel(m, "oqcf_reduce.c");
        in_shapes(m, node, 1);
        fprintf(b, "    TRY(oqcf_reduce(%s, %s, &s%d[0], %uu, %s));\n",
                rops[oqc_reduce_op(n->op)], X(0), node, x->mask, Y(0));
        break;
    }
    case EXEC_ARGMAX:
        use_kernel(m, "oqcf_reduce.c");
        fprintf(b, "    TRY(oqcf_argmax(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, %d, %s));\n",
                X(0), x->a, x->b, x->c, n->op == OQC_OP_ArgMin, x->axis, Y(0));
        break;
    case EXEC_TILE: {
        use_kernel(m, "oqcf_layout.c");
        const OqcTensor *y = &g->tensors[n->out[0]];
        in_shapes(m, node, 1);
        fprintf(decl(m), "static const OqcfShape ys%d = ", node);
        put_shape(decl(m), &y->shape);
        fputs(";\n", decl(m));
        fprintf(b, "    TRY(oqcf_tile(%s, &s%d[0], &ys%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(y->dtype), Y(0));
        break;
    }
    case EXEC_SPACE_DEPTH:
        use_kernel(m, "oqcf_layout.c");
        fprintf(decl(m), "static const OqcfShape v%d = ", node);
        put_shape(decl(m), &x->view);
        fprintf(decl(m), "; /* the 6-D view of the input */\nstatic const int perm%d[%d] = {",
                node, OQC_MAX_RANK);
        for (int i = 0; i < OQC_MAX_RANK; i++)
            fprintf(decl(m), "%s%d", i ? ", " : "", x->perm[i]);
        fputs("};\n", decl(m));
        fprintf(b, "    TRY(oqcf_transpose(%s, &v%d, perm%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    case EXEC_RESIZE:
        use_kernel(m, "oqcf_resize.c");
        in_shapes(m, node, 1);
        resize_tables(m, node, x->resize);
        fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, ", X(0), node, node,
                x->resize->naxes);
        put_f(b, x->resize->extrapolation);
        fprintf(b, ", %zu, %s, %s));\n", oqcf_dtype_size(in0->dtype), Y(0), scratch_args(m));
        break;
    case EXEC_CAST:
        use_kernel(m, "oqcf_cast.c");
        fprintf(b, "    TRY(oqcf_cast(%s, %s, %s, %s, %" PRId64 "));\n", X(0),
                dtype_enum(in0->dtype), Y(0), dtype_enum(g->tensors[n->out[0]].dtype),
                numel_out(m->e, node, 0));
        break;
    case EXEC_QDQ: {
        use_kernel(m, "oqcf_cast.c");
        const char *zp = n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL";
        if (n->op == OQC_OP_QuantizeLinear)
            fprintf(b, "    TRY(oqcf_quantize_linear(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64
                       ", %" PRId64 "));\n", X(0), Y(0), dtype_enum(g->tensors[n->out[0]].dtype),
                    X(1), zp, x->a, x->b, x->c);
        else
            fprintf(b, "    TRY(oqcf_dequantize_linear(%s, %s, %s, %s, %s, %" PRId64 ", %" PRId64
                       ", %" PRId64 "));\n", X(0), dtype_enum(in0->dtype), Y(0), X(1), zp, x->a,
                    x->b, x->c);
        break;
    }
    case EXEC_NONE: case EXEC_DROPOUT: case EXEC_SHAPE: case EXEC_CONSTANT_OF_SHAPE:
        oqc_panic(__FILE__, __LINE__,
                  "node kind rejected by oqc_em_unsupported() reached oqc_em_node");
    }
    fprintf(b, "    OQC_LAYER_END(%d, ", node);
    oqc_em_string_lit(b, n->name);
    fputs(", ", b);
    oqc_em_string_lit(b, n->op_type);
    fprintf(b, ", %" PRId64 ");\n", oqc_node_macs(g, node));
}

#undef X
#undef Y

/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m) {
    const OqcGraph *g = m->g;
    const OqcExec *e = m->e;
    for (int i = 0; i < g->ninputs; i++)
        m->loc[g->inputs[i]] = (Loc){LOC_INPUT, i, 0};
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        int r = e->root[t];
        if (tt->is_const)
            m->loc[t] = (Loc){LOC_CONST, t, 0};
        else if (e->offset[r] != SIZE_MAX)
            m->loc[t] = (Loc){LOC_ARENA, 0, e->offset[r]};
    }
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (e->root[t] != t && e->offset[e->root[t]] == SIZE_MAX)
            m->loc[t] = m->loc[e->root[t]];
        if (tt->view_base >= 0) {
            m->loc[t] = m->loc[e->root[t]];
            m->loc[t].off += (size_t)(tt->view_coff * oqc_shape_numel(&tt->shape) /
                                      tt->shape.d[1] / tt->shape.d[0]) * esize_of(tt);
        }
    }
}
