/* emit_util.c - `oqc compile`'s printing helpers shared by the op families' emission
 * functions and the INT8 emitter (backend/emit_node.c): exact literals, parameter
 * structs as designated initialisers, symbolic pointers (Loc, see oqc_em_plan_locs),
 * the kernel files a model uses. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

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

const char *oqc_em_dtype_enum(OqcfDType t) {
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

void oqc_em_f(FILE *f, float v) {
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

void oqc_em_shape(FILE *f, const OqcfShape *s) {
    fprintf(f, "{.rank = %d, .d = ", s->rank);
    oqc_em_i64s(f, s->d, s->rank);
    fputc('}', f);
}

void oqc_em_act(FILE *f, const OqcfAct *a) {
    fprintf(f, "{.kind = %s, .p0 = ", act_enum(a->kind));
    oqc_em_f(f, a->p0);
    fputs(", .p1 = ", f);
    oqc_em_f(f, a->p1);
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
const char *oqc_em_pool_arg(const Em *m) {
    return m->threads > 1 ? "pool" : "NULL";
}

void oqc_em_use_kernel(Em *m, const char *file) {
    for (int i = 0; i < m->kernels.n; i++)
        if (!strcmp(m->kernels.name[i], file))
            return;
    OQC_ASSERT(m->kernels.n < 64);
    m->kernels.name[m->kernels.n++] = file;
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
        oqc_em_shape(oqc_em_decl(m), &s);
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
            oqc_em_f(f, a->w[i]);
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
