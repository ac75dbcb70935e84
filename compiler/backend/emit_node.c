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
                   #T "." #f " is no longer its last field: emit_c.c must print the new ones")
LAST_FIELD(OqcfConvParams, act_per_channel);
LAST_FIELD(OqcfPoolParams, y_coff);
LAST_FIELD(OqcfGemmParams, act);
LAST_FIELD(OqcfSlice, out);
LAST_FIELD(OqcfAct, p1);

/* decl, after a comment naming the node being emitted the first time it is used. */
FILE *oqc_em_decl(Em *m) {
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

void oqc_em_i64s(FILE *f, const int64_t *v, int n) {
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
    fprintf(f, "{%d, ", s->rank);
    oqc_em_i64s(f, s->d, s->rank);
    fputc('}', f);
}

static void put_act(FILE *f, const OqcfAct *a) {
    fprintf(f, "{%s, ", act_enum(a->kind));
    put_f(f, a->p0);
    fputs(", ", f);
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
const char *oqc_em_out_base(Em *m, int node, int k) {
    const OqcTensor *t = &m->g->tensors[m->g->nodes[node].out[k]];
    return oqc_em_ptr(m, t->view_base >= 0 ? t->view_base : m->g->nodes[node].out[k]);
}

/* The scratch arguments every scratch-taking call gets: the executor's shared buffer. */
const char *oqc_em_scratch_args(Em *m) {
    return m->e->scratch_bytes ? "SCRATCH, SCRATCH_BYTES" : "NULL, 0";
}

/* The pool argument of FP32 kernels: none, or the run's (`pool`, see write_source). */
static const char *pool_arg(const Em *m) {
    return m->threads > 1 ? "pool" : "NULL";
}

void oqc_em_use_kernel(Em *m, const char *file) {
    if (oqc_em_set_has(&m->kernels, file))
        return;
    OQC_ASSERT(m->kernels.n < 64);
    m->kernels.name[m->kernels.n++] = file;
}

/* The geometry arrays conv and pool parameters share, one commented line each. */
static void put_geometry(FILE *f, const int64_t *in_size, const int64_t *out_size,
                         const int64_t *kernel, const int64_t *stride, const int64_t *dilation,
                         const int64_t *pad_begin, const int64_t *pad_end) {
    static const char *const geo[] = {"in_size", "out_size", "kernel", "stride", "dilation",
                                      "pad_begin", "pad_end"};
    const int64_t *v[] = {in_size, out_size, kernel, stride, dilation, pad_begin, pad_end};
    for (int i = 0; i < 7; i++) {
        fputs("    ", f);
        oqc_em_i64s(f, v[i], OQCF_MAX_SPATIAL);
        fprintf(f, ", /* %s */\n", geo[i]);
    }
}

static void conv_params(Em *m, const char *pname, const OqcfConvParams *p, int node) {
    FILE *f = oqc_em_decl(m);
    const OqcNode *n = &m->g->nodes[node];
    fprintf(f, "static const OqcfConvParams %s = {\n", pname);
    fprintf(f, "    %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
               ", /* nspatial, batch, channels, out_channels, group */\n",
            p->nspatial, p->batch, p->channels, p->out_channels, p->group);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    fprintf(f, "    %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
               ", /* x_ctotal, x_coff, y_ctotal, y_coff */\n    ",
            p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff);
    put_act(f, &p->act);
    if (p->act_per_channel) {
        OQC_ASSERT(n->act_per_channel && p->act_per_channel >= n->act_per_channel);
        fprintf(f, ", &act%d[%td]};\n", node, p->act_per_channel - n->act_per_channel);
    } else {
        fputs(", NULL};\n", f);
    }
}

static void pool_params(Em *m, int node, const OqcfPoolParams *p) {
    FILE *f = oqc_em_decl(m);
    fprintf(f, "static const OqcfPoolParams p%d = {\n", node);
    fprintf(f, "    %d, %" PRId64 ", %" PRId64 ", /* nspatial, batch, channels */\n",
            p->nspatial, p->batch, p->channels);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    fprintf(f, "    %d, %d, /* count_include_pad, storage_order */\n", p->count_include_pad,
            p->storage_order);
    fprintf(f, "    %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
               "}; /* x_ctotal, x_coff, y_ctotal, y_coff */\n",
            p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff);
}

/* static const OqcfShape s<node>[] = {shapes of inputs 0..nin-1}. */
void oqc_em_in_shapes(Em *m, int node, int nin) {
    const OqcNode *n = &m->g->nodes[node];
    fprintf(oqc_em_decl(m), "static const OqcfShape s%d[%d] = {", node, nin);
    for (int k = 0; k < nin; k++) {
        fputs(k ? ",\n    " : "\n    ", oqc_em_decl(m));
        OqcShape s = m->g->tensors[n->in[k]].shape;
        if (n->op == OQC_OP_PRelu && k == 1)   /* as run_binary broadcasts it */
            s = oqc_prelu_slope_shape(n, &m->g->tensors[n->in[0]].shape, &s);
        put_shape(oqc_em_decl(m), &s);
    }
    fputs("};\n", oqc_em_decl(m));
}

/* The tables of Resize plan r as constants: rzi<node>_<k> (indices), rzw<node>_<k>
 * (weights) and rz<node>, the OqcfResizeAxis array of its passes. */
void oqc_em_resize_tables(Em *m, int node, const OqcResize *r) {
    FILE *f = oqc_em_decl(m);
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
        fprintf(f, "%s\n    {%d, %d, %" PRId64 ", rzi%d_%d, ", k ? "," : "", a->axis, a->taps,
                a->out_len, node, k);
        if (a->w)
            fprintf(f, "rzw%d_%d}", node, k);
        else
            fputs("NULL}", f);
    }
    fputs(r->naxes ? "}; /* axis, taps, out_len, idx, w */\n" : "{0, 1, 0, NULL, NULL}};\n", f);
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
        oqc_em_q(m, node, b);
        break;
    case EXEC_CONV: {
        oqc_em_use_kernel(m, "oqcf_conv.c");
        const char *bias = n->nin > 2 && n->in[2] >= 0 ? X(2) : NULL;
        if (n->act_per_channel) {
            int64_t total = 0;
            if (x->convs)
                for (int k = 0; k < n->nout; k++)
                    total += x->convs[k].out_channels;
            else
                total = x->conv.out_channels;
            fprintf(oqc_em_decl(m), "static const OqcfAct act%d[%" PRId64 "] = {", node, total);
            for (int64_t c = 0; c < total; c++) {
                fputs(c % 4 ? ", " : c ? ",\n    " : "\n    ", oqc_em_decl(m));
                put_act(oqc_em_decl(m), &n->act_per_channel[c]);
            }
            fputs("};\n", oqc_em_decl(m));
        }
        if (!x->convs) {
            conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
            fprintf(b, "    TRY(oqcf_conv(%s, &p%d, %s, %s, %s, %s, %s));\n", pool_arg(m), node,
                    X(0), X(1), bias ? bias : "NULL", oqc_em_out_base(m, node, 0), oqc_em_scratch_args(m));
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
                    X(0), w, bk, oqc_em_out_base(m, node, k), oqc_em_scratch_args(m));
        }
        break;
    }
    case EXEC_CONV_TRANSPOSE:
        oqc_em_use_kernel(m, "oqcf_deconv.c");
        conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
        fprintf(b, "    TRY(oqcf_conv_transpose(&p%d, %s, %s, %s, %s));\n", node, X(0), X(1),
                n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL", Y(0));
        break;
    case EXEC_MAXPOOL: {
        oqc_em_use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        const char *idx = n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL";
        if (in0->dtype == OQCF_FLOAT) {
            fprintf(b, "    TRY(oqcf_maxpool(%s, &p%d, %s, %s, %s));\n", pool_arg(m), node, X(0),
                    oqc_em_out_base(m, node, 0), idx);
            break;
        }
        /* 8-bit inputs: max commutes with the exact conversion to float and back. */
        oqc_em_use_kernel(m, "oqcf_cast.c");
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
        oqc_em_use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        fprintf(b, "    TRY(oqcf_avgpool(%s, &p%d, %s, %s));\n", pool_arg(m), node, X(0),
                oqc_em_out_base(m, node, 0));
        break;
    case EXEC_GLOBAL_POOL:
        oqc_em_use_kernel(m, "oqcf_pooling.c");
        fprintf(b, "    TRY(oqcf_global_%s(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s));\n",
                n->op == OQC_OP_GlobalAveragePool ? "avgpool" : "maxpool", pool_arg(m), x->a,
                x->b, x->c, X(0),
                Y(0));
        break;
    case EXEC_BATCHNORM:
        oqc_em_use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_batchnorm(%s, %" PRId64 ", %" PRId64 ", %" PRId64
                   ", %s, %s, %s, %s, %s, ", pool_arg(m), x->a, x->b, x->c, X(0), X(1), X(2), X(3),
                X(4));
        put_f(b, x->f0);
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_LRN:
        oqc_em_use_kernel(m, "oqcf_norm.c");
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
        oqc_em_use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_layernorm(%" PRId64 ", %" PRId64 ", %s, %s, %s, ", x->a, x->b, X(0),
                X(1), n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL");
        put_f(b, x->f0);
        fprintf(b, ", %s, %s, %s));\n", Y(0), n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL",
                n->nout > 2 && n->out[2] >= 0 ? Y(2) : "NULL");
        break;
    case EXEC_INSTANCENORM:
        oqc_em_use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_instancenorm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, ",
                x->a, x->b, x->c, X(0), X(1), X(2));
        put_f(b, x->f0);
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_GEMM: {
        oqc_em_use_kernel(m, "oqcf_gemm.c");
        const OqcfGemmParams *p = &x->gemm;
        fprintf(oqc_em_decl(m), "static const OqcfGemmParams p%d = {\n    %" PRId64 ", %" PRId64 ", %" PRId64
                     ", %d, %d, /* M, N, K, trans_a, trans_b */\n    ",
                node, p->M, p->N, p->K, p->trans_a, p->trans_b);
        put_f(oqc_em_decl(m), p->alpha);
        fputs(", ", oqc_em_decl(m));
        put_f(oqc_em_decl(m), p->beta);
        fprintf(oqc_em_decl(m), ", %d, /* alpha, beta, has_c */\n    ", p->has_c);
        put_shape(oqc_em_decl(m), &p->c_shape);
        fputs(", ", oqc_em_decl(m));
        put_act(oqc_em_decl(m), &p->act);
        fputs("}; /* c_shape, act */\n", oqc_em_decl(m));
        fprintf(b, "    TRY(oqcf_gemm(%s, &p%d, %s, %s, %s, %s, %s));\n", pool_arg(m), node,
                X(0), X(1), p->has_c ? X(2) : "NULL", Y(0), oqc_em_scratch_args(m));
        break;
    }
    case EXEC_MATMUL:
        oqc_em_use_kernel(m, "oqcf_gemm.c");
        oqc_em_in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_matmul(%s, &s%d[0], %s, &s%d[1], %s, %s, %s));\n", pool_arg(m),
                node, X(0), node, X(1), Y(0), oqc_em_scratch_args(m));
        break;
    case EXEC_UNARY: {
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        int64_t cnt = numel_out(m->e, node, 0);
        OqcfUnaryOp uop;
        float alpha, beta;
        if (oqc_unary_of(n, &uop, &alpha, &beta)) {
            static const char *const names[] = {
                [OQCF_UN_ABS] = "ABS", [OQCF_UN_NEG] = "NEG", [OQCF_UN_EXP] = "EXP",
                [OQCF_UN_LOG] = "LOG", [OQCF_UN_SQRT] = "SQRT", [OQCF_UN_ERF] = "ERF",
                [OQCF_UN_RECIPROCAL] = "RECIPROCAL", [OQCF_UN_FLOOR] = "FLOOR",
                [OQCF_UN_CEIL] = "CEIL", [OQCF_UN_SIGN] = "SIGN", [OQCF_UN_SOFTSIGN] = "SOFTSIGN",
                [OQCF_UN_SOFTPLUS] = "SOFTPLUS", [OQCF_UN_ELU] = "ELU", [OQCF_UN_CELU] = "CELU",
                [OQCF_UN_SELU] = "SELU", [OQCF_UN_THRESHOLDED_RELU] = "THRESHOLDED_RELU",
                [OQCF_UN_HARD_SWISH] = "HARD_SWISH"};
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
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        const char *lo = "NULL", *hi = "NULL";
        if (n->opset >= 11) {
            if (n->nin > 1 && n->in[1] >= 0)
                lo = X(1);
            if (n->nin > 2 && n->in[2] >= 0)
                hi = X(2);
        } else {
            fprintf(oqc_em_decl(m), "static const float v%d[2] = {", node);
            put_f(oqc_em_decl(m), x->f0);
            fputs(", ", oqc_em_decl(m));
            put_f(oqc_em_decl(m), x->f1);
            fputs("}; /* min, max */\n", oqc_em_decl(m));
            lo = oqc_arena_printf(m->a, "&v%d[0]", node);
            hi = oqc_arena_printf(m->a, "&v%d[1]", node);
        }
        fprintf(b, "    TRY(oqcf_clip_typed(%s, %s, %s, %" PRId64 ", %s, %s));\n",
                dtype_enum(in0->dtype), X(0), Y(0), numel_out(m->e, node, 0), lo, hi);
        break;
    }
    case EXEC_BINARY: {
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        const char *op = n->op == OQC_OP_Add ? "OQCF_ADD" : n->op == OQC_OP_Sub ? "OQCF_SUB"
                       : n->op == OQC_OP_Mul ? "OQCF_MUL" : n->op == OQC_OP_Div ? "OQCF_DIV"
                       : n->op == OQC_OP_Pow ? "OQCF_POW" : n->op == OQC_OP_PRelu ? "OQCF_PRELU"
                       : NULL;
        OQC_ASSERT(op);
        oqc_em_in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_binary(%s, %s, %s, &s%d[0], %s, &s%d[1], %s));\n", op,
                dtype_enum(g->tensors[n->out[0]].dtype), X(0), node, X(1), node, Y(0));
        break;
    }
    case EXEC_POW_CAST: {   /* run_pow_cast: through double in the scratch */
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        oqc_em_use_kernel(m, "oqcf_cast.c");
        oqc_em_in_shapes(m, node, 2);
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
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        oqc_em_in_shapes(m, node, n->nin);
        fputs("    {\n        const float *const x[] = {", b);
        for (int k = 0; k < n->nin; k++)
            fprintf(b, "%s%s", k ? ", " : "", X(k));
        fprintf(b, "};\n        TRY(oqcf_sum(x, s%d, %d, %s));\n    }\n", node, n->nin, Y(0));
        break;
    case EXEC_SOFTMAX:
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        fprintf(b, "    TRY(oqcf_softmax(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 "));\n", X(0),
                Y(0), x->a, x->b, x->c);
        break;
    case EXEC_CONCAT:
        oqc_em_use_kernel(m, "oqcf_layout.c");
        oqc_em_in_shapes(m, node, n->nin);
        fputs("    {\n        const void *const x[] = {", b);
        for (int k = 0; k < n->nin; k++)
            fprintf(b, "%s%s", k ? ", " : "", X(k));
        fprintf(b, "};\n        TRY(oqcf_concat(x, s%d, %d, %d, %zu, %s));\n    }\n", node, n->nin,
                x->axis, oqcf_dtype_size(g->tensors[n->out[0]].dtype), Y(0));
        break;
    case EXEC_SPLIT: {
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
        break;
    }
    case EXEC_SLICE:
        oqc_em_use_kernel(m, "oqcf_layout.c");
        oqc_em_in_shapes(m, node, 1);
        fprintf(oqc_em_decl(m), "static const OqcfSlice p%d = {\n    ", node);
        oqc_em_i64s(oqc_em_decl(m), x->slice.start, OQCF_MAX_RANK);
        fputs(", /* start */\n    ", oqc_em_decl(m));
        oqc_em_i64s(oqc_em_decl(m), x->slice.step, OQCF_MAX_RANK);
        fputs(", /* step */\n    ", oqc_em_decl(m));
        put_shape(oqc_em_decl(m), &x->slice.out);
        fputs("}; /* out */\n", oqc_em_decl(m));
        fprintf(b, "    TRY(oqcf_slice(%s, &s%d[0], &p%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    case EXEC_TRANSPOSE: {
        oqc_em_use_kernel(m, "oqcf_layout.c");
        oqc_em_in_shapes(m, node, 1);
        fprintf(oqc_em_decl(m), "static const int perm%d[%d] = {", node, OQC_MAX_RANK);
        for (int i = 0; i < OQC_MAX_RANK; i++)
            fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", x->perm[i]);
        fputs("};\n", oqc_em_decl(m));
        fprintf(b, "    TRY(oqcf_transpose(%s, &s%d[0], perm%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    }
    case EXEC_PAD: {
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
            put_f(oqc_em_decl(m), x->f0);
            fputs("; /* value */\n", oqc_em_decl(m));
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
        oqc_em_use_kernel(m, "oqcf_layout.c");
        oqc_em_in_shapes(m, node, 1);
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
        oqc_em_use_kernel(m, "oqcf_reduce.c");
        oqc_em_in_shapes(m, node, 1);
        fprintf(b, "    TRY(oqcf_reduce(%s, %s, &s%d[0], %uu, %s));\n",
                rops[oqc_reduce_op(n->op)], X(0), node, x->mask, Y(0));
        break;
    }
    case EXEC_ARGMAX:
        oqc_em_use_kernel(m, "oqcf_reduce.c");
        fprintf(b, "    TRY(oqcf_argmax(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d, %d, %s));\n",
                X(0), x->a, x->b, x->c, n->op == OQC_OP_ArgMin, x->axis, Y(0));
        break;
    case EXEC_TILE: {
        oqc_em_use_kernel(m, "oqcf_layout.c");
        const OqcTensor *y = &g->tensors[n->out[0]];
        oqc_em_in_shapes(m, node, 1);
        fprintf(oqc_em_decl(m), "static const OqcfShape ys%d = ", node);
        put_shape(oqc_em_decl(m), &y->shape);
        fputs(";\n", oqc_em_decl(m));
        fprintf(b, "    TRY(oqcf_tile(%s, &s%d[0], &ys%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(y->dtype), Y(0));
        break;
    }
    case EXEC_SPACE_DEPTH:
        oqc_em_use_kernel(m, "oqcf_layout.c");
        fprintf(oqc_em_decl(m), "static const OqcfShape v%d = ", node);
        put_shape(oqc_em_decl(m), &x->view);
        fprintf(oqc_em_decl(m), "; /* the 6-D view of the input */\nstatic const int perm%d[%d] = {",
                node, OQC_MAX_RANK);
        for (int i = 0; i < OQC_MAX_RANK; i++)
            fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", x->perm[i]);
        fputs("};\n", oqc_em_decl(m));
        fprintf(b, "    TRY(oqcf_transpose(%s, &v%d, perm%d, %zu, %s));\n", X(0), node, node,
                oqcf_dtype_size(in0->dtype), Y(0));
        break;
    case EXEC_RESIZE:
        oqc_em_use_kernel(m, "oqcf_resize.c");
        oqc_em_in_shapes(m, node, 1);
        oqc_em_resize_tables(m, node, x->resize);
        fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, ", X(0), node, node,
                x->resize->naxes);
        put_f(b, x->resize->extrapolation);
        fprintf(b, ", %zu, %s, %s));\n", oqcf_dtype_size(in0->dtype), Y(0), oqc_em_scratch_args(m));
        break;
    case EXEC_CAST:
        oqc_em_use_kernel(m, "oqcf_cast.c");
        fprintf(b, "    TRY(oqcf_cast(%s, %s, %s, %s, %" PRId64 "));\n", X(0),
                dtype_enum(in0->dtype), Y(0), dtype_enum(g->tensors[n->out[0]].dtype),
                numel_out(m->e, node, 0));
        break;
    case EXEC_QDQ: {
        oqc_em_use_kernel(m, "oqcf_cast.c");
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
