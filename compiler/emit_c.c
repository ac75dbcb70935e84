/* emit_c.c - `oqc compile`: a prepared executor written out as self-contained C.
 *
 * The emitted code is a serialisation of an OqcExec built for one thread (no pool):
 *   - the same memory plan: one arena holding the activations at the offsets
 *     oqc_memplan gave them, then the kernel scratch; graph inputs are read in place
 *     from the caller, views (Reshape, Flatten, channel ranges of a concat buffer) are
 *     pointers computed exactly as oqc_exec_run computes them (Loc below);
 *   - the same kernel calls in executor order, each with the parameter struct
 *     exec_ops.c prepared, written as a `static const` initializer;
 *   - the same constants, written exactly (C99 hex float literals).
 * It calls the same runtime functions with the same arguments, so its outputs are
 * bit-identical to `oqc run --threads 1` built with the same compiler and flags.
 *
 * emit_node is the one switch over what a node does (ExecNode.kind, set by exec_ops.c
 * with the run function; the two must change together). Each case prints parameter
 * constants and one kernel call: loops belong in runtime/, never in emitted code.
 *
 * Files (docs/compile.md): NAME.h (the API), NAME.c (the run functions), NAME_weights.h
 * and NAME_weights.c (the constants), copies of the runtime files the calls need (their
 * text is embedded in oqc at build time, see the Makefile; $OQC_RUNTIME_DIR overrides
 * it), NAME.mk and README.md. Every file is first written to a temporary name and the
 * set is renamed into place only when all are complete; a failure removes them. The
 * output depends on the model and the options only (no dates, no paths). */
#include "ir.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec_int.h"

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

/* ------------------------------------------------------------------ names */

static int is_keyword(const char *s) {
    static const char *const kw[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
        "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
        "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
        "switch", "typedef", "union", "unsigned", "void", "volatile", "while", NULL};
    for (int i = 0; kw[i]; i++)
        if (!strcmp(s, kw[i]))
            return 1;
    return 0;
}

#define NAME_MAX_LEN 48

int oqc_c_name_check(const char *name, OqcDiag *d) {
    const char *why = NULL;
    size_t len = strlen(name);
    if (!len)
        why = "is empty";
    else if (len > NAME_MAX_LEN)
        why = "is longer than 48 characters";
    else if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z') ||
               (name[0] >= 'A' && name[0] <= 'Z')))
        why = "must start with a letter";
    else if (name[0] == '_')
        why = "must not start with '_' (reserved in C)";
    else if (is_keyword(name))
        why = "is a C keyword";
    else if (!strncmp(name, "oqcf", 4) || !strncmp(name, "oqci", 4))
        why = "starts with oqcf/oqci, the runtime's prefixes (its files would clash)";
    for (size_t i = 0; !why && i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            why = "may hold only letters, digits and '_'";
    }
    if (why)
        return oqc_err(d, "oqc compile: --name '%s' %s: NAME must be a C identifier (it "
                          "prefixes every emitted symbol and file)", name, why);
    return 0;
}

const char *oqc_c_name_from_path(OqcArena *a, const char *path) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        len = (size_t)(dot - base);
    if (len > NAME_MAX_LEN - 2)
        len = NAME_MAX_LEN - 2;
    char buf[NAME_MAX_LEN + 8];
    size_t n = 0;
    if (!len || !((base[0] >= 'a' && base[0] <= 'z') || (base[0] >= 'A' && base[0] <= 'Z')) ||
        !strncmp(base, "oqcf", 4) || !strncmp(base, "oqci", 4))
        buf[n++] = 'm', buf[n++] = '_';
    for (size_t i = 0; i < len; i++) {
        char c = base[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        buf[n++] = ok ? c : '_';
    }
    buf[n] = 0;
    if (is_keyword(buf))
        return oqc_arena_printf(a, "%s_model", buf);
    return oqc_arena_strdup(a, buf);
}

/* ---------------------------------------------------------- runtime files */

/* Source files a runtime file needs besides the headers it includes (found by scanning
 * its #include lines): a file, then up to RUNTIME_NEEDS - 1 others (NULL after the last).
 * The thread pool API is runtime/oqcf_serial.c in emitted code; the INT8 conv is one file
 * per kernel family, all of them needed (oqci_conv.c chooses among them and refers to
 * each one's configuration object, see runtime/oqci_conv_int.h). */
#define RUNTIME_NEEDS 7
static const char *const runtime_needs[][RUNTIME_NEEDS] = {
    {"oqcf_conv.c", "oqcf_sgemm.c", "oqcf_serial.c"},
    {"oqcf_gemm.c", "oqcf_sgemm.c", "oqcf_serial.c"},
    {"oqcf_norm.c", "oqcf_sgemm.c", "oqcf_serial.c"},    /* oqcf_sgemm_isa() picks paths */
    {"oqcf_pooling.c", "oqcf_sgemm.c", "oqcf_serial.c"}, /* likewise */
    {"oqcf_sgemm.c", "oqcf_serial.c", NULL},
    {"oqci_conv.c", "oqci_conv_gemm.c", "oqci_conv_avx2.c", "oqci_conv_avx512.c",
     "oqci_conv_dwx86.c", "oqci_conv_neon.c"},
};

/* The text of runtime file `name`: from $OQC_RUNTIME_DIR when set, else the copy
 * embedded at build time. NULL (with an error) when there is none. */
static const char *runtime_text(OqcArena *a, const char *name, OqcDiag *d) {
    const char *dir = getenv("OQC_RUNTIME_DIR");
    if (dir && *dir) {
        const char *path = oqc_arena_printf(a, "%s/%s", dir, name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            oqc_err(d, "%s: cannot read runtime file (OQC_RUNTIME_DIR): %s", path,
                    strerror(errno));
            return NULL;
        }
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        size_t got;
        while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
            len += got;
            if (len + 1 == cap) {
                char *nb = realloc(buf, cap *= 2);
                if (!nb)
                    free(buf);
                buf = nb;
            }
        }
        fclose(f);
        if (!buf)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        buf[len] = 0;
        char *r = oqc_arena_strdup(a, buf);
        free(buf);
        return r;
    }
    for (const OqcRuntimeFile *r = oqc_runtime_files; r->name; r++)
        if (!strcmp(r->name, name))
            return (const char *)r->text;
    oqc_err(d, "oqc compile: runtime file '%s' is not part of this oqc build", name);
    return NULL;
}

/* The next `#include "NAME"` line of text at or after p: *name and *len receive NAME;
 * NULL when there is none. Only lines that start with it count (not comments). */
static const char *next_include(const char *text, const char *p, const char **name,
                                size_t *len) {
    for (; (p = strstr(p, "#include \"")) != NULL; p += 10) {
        const char *q = strchr(p + 10, '"');
        if ((p != text && p[-1] != '\n') || !q || memchr(p, '\n', (size_t)(q - p)))
            continue;
        *name = p + 10;
        *len = (size_t)(q - p - 10);
        return q;
    }
    return NULL;
}

/* The runtime files to copy, a sorted set of names. */
typedef struct FileSet {
    const char *name[64];   /* file names, sorted */
    const char *text[64];   /* their text */
    int n;                  /* count */
} FileSet;

static int set_has(const FileSet *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name))
            return 1;
    return 0;
}

/* Adds `name` and everything it needs (runtime_needs, #include "..." lines). */
static int set_add(FileSet *s, OqcArena *a, const char *name, OqcDiag *d) {
    if (set_has(s, name))
        return 0;
    OQC_ASSERT(s->n < 64);
    const char *text = runtime_text(a, name, d);
    if (!text)
        return -1;
    int at = s->n++;
    while (at > 0 && strcmp(s->name[at - 1], name) > 0) {
        s->name[at] = s->name[at - 1];
        s->text[at] = s->text[at - 1];
        at--;
    }
    s->name[at] = oqc_arena_strdup(a, name);
    s->text[at] = text;
    for (size_t i = 0; i < sizeof runtime_needs / sizeof runtime_needs[0]; i++)
        if (!strcmp(runtime_needs[i][0], name))
            for (int k = 1; k < RUNTIME_NEEDS && runtime_needs[i][k]; k++)
                if (set_add(s, a, runtime_needs[i][k], d) < 0)
                    return -1;
    const char *inc;
    size_t len;
    for (const char *p = text; (p = next_include(text, p, &inc, &len)) != NULL;)
        if (set_add(s, a, oqc_arena_strndup(a, inc, len), d) < 0)
            return -1;
    return 0;
}

/* ---------------------------------------------------------- the emitter */

/* Where a tensor's data is during a run (the symbolic form of oqc_exec_run's ptr[]). */
typedef enum LocKind {
    LOC_NONE,    /* nowhere (not used by any call) */
    LOC_ARENA,   /* arena + off */
    LOC_INPUT,   /* graph input idx (the caller's in[idx]) + off */
    LOC_CONST,   /* constant tensor idx (its NAME_w<idx> array) + off */
} LocKind;

typedef struct Loc {
    LocKind kind;   /* base */
    int idx;        /* input slot or constant tensor id */
    size_t off;     /* byte offset from the base */
} Loc;

static void put_comment_text(FILE *f, const char *s);

/* Emission state. */
typedef struct Em {
    OqcExec *e;              /* the prepared executor */
    OqcGraph *g;             /* its graph */
    OqcArena *a;             /* the graph's arena (strings) */
    OqcDiag *d;              /* errors */
    const char *name;        /* NAME */
    FILE *decl;              /* NAME.c: parameter constants */
    FILE *body;              /* NAME.c: the calls */
    Loc *loc;                /* per tensor */
    unsigned char *used;     /* per tensor: a constant NAME.c refers to */
    FileSet kernels;         /* runtime .c files the calls use (without dependencies) */
    int node;                /* the node being emitted */
    int headed;              /* its comment is in decl already */
    FILE *qh;                /* INT8 constants: declarations for NAME_weights.h */
    FILE *qc;                /* INT8 constants: definitions for NAME_weights.c */
    size_t qbytes;           /* their size in bytes */
    FILE *pre, *post;        /* the INT8 model's float boundary: quantizing the graph
                                input, dequantizing the graph output (NULL: in body) */
} Em;

/* decl, after a comment naming the node being emitted the first time it is used. */
static FILE *decl(Em *m) {
    if (!m->headed) {
        const OqcNode *n = &m->g->nodes[m->node];
        fprintf(m->decl, "\n/* %d: %s '", m->node, n->op_type);
        put_comment_text(m->decl, n->name);
        fputs("' */\n", m->decl);
        m->headed = 1;
    }
    return m->decl;
}

static const char *ctype_of(OqcfDType t) {
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
static const char *flit(char *buf, size_t size, float f) {
    if (isnan(f))
        return "NAN";
    if (isinf(f))
        return f > 0 ? "INFINITY" : "-INFINITY";
    snprintf(buf, size, "%af", (double)f);
    return buf;
}

static void put_f(FILE *f, float v) {
    char b[48];
    fputs(flit(b, sizeof b, v), f);
}

static void put_i64(FILE *f, int64_t v) {
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
        put_i64(f, v[i]);
    }
    if (!n)
        fputc('0', f);
    fputc('}', f);
}

static void put_shape(FILE *f, const OqcfShape *s) {
    fprintf(f, "{%d, ", s->rank);
    put_i64s(f, s->d, s->rank);
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
static void put_comment_text(FILE *f, const char *s) {
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
static void put_string_lit(FILE *f, const char *s) {
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
static const char *ptr_expr(Em *m, int t) {
    const OqcTensor *tt = &m->g->tensors[t];
    Loc l = m->loc[t];
    const char *ct = ctype_of(tt->dtype);
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

#define X(k) ptr_expr(m, n->in[k])                 /* XIN */
#define Y(k) ptr_expr(m, n->out[k])                /* YOUT */

/* Where a kernel writes output k: the view's base buffer (the kernel adds y_coff). */
static const char *out_base(Em *m, int node, int k) {
    const OqcTensor *t = &m->g->tensors[m->g->nodes[node].out[k]];
    return ptr_expr(m, t->view_base >= 0 ? t->view_base : m->g->nodes[node].out[k]);
}

/* The scratch arguments every scratch-taking call gets: the executor's shared buffer. */
static const char *scratch_args(Em *m) {
    return m->e->scratch_bytes ? "SCRATCH, SCRATCH_BYTES" : "NULL, 0";
}

static void use_kernel(Em *m, const char *file) {
    if (set_has(&m->kernels, file))
        return;
    OQC_ASSERT(m->kernels.n < 64);
    m->kernels.name[m->kernels.n++] = file;
}

static void conv_params(Em *m, const char *pname, const OqcfConvParams *p, int node) {
    FILE *f = decl(m);
    const OqcNode *n = &m->g->nodes[node];
    fprintf(f, "static const OqcfConvParams %s = {\n", pname);
    fprintf(f, "    %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
               ", /* nspatial, batch, channels, out_channels, group */\n",
            p->nspatial, p->batch, p->channels, p->out_channels, p->group);
    static const char *const geo[] = {"in_size", "out_size", "kernel", "stride", "dilation",
                                      "pad_begin", "pad_end"};
    const int64_t *v[] = {p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                          p->pad_begin, p->pad_end};
    for (int i = 0; i < 7; i++) {
        fputs("    ", f);
        put_i64s(f, v[i], OQCF_MAX_SPATIAL);
        fprintf(f, ", /* %s */\n", geo[i]);
    }
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
    FILE *f = decl(m);
    fprintf(f, "static const OqcfPoolParams p%d = {\n", node);
    fprintf(f, "    %d, %" PRId64 ", %" PRId64 ", /* nspatial, batch, channels */\n",
            p->nspatial, p->batch, p->channels);
    static const char *const geo[] = {"in_size", "out_size", "kernel", "stride", "dilation",
                                      "pad_begin", "pad_end"};
    const int64_t *v[] = {p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                          p->pad_begin, p->pad_end};
    for (int i = 0; i < 7; i++) {
        fputs("    ", f);
        put_i64s(f, v[i], OQCF_MAX_SPATIAL);
        fprintf(f, ", /* %s */\n", geo[i]);
    }
    fprintf(f, "    %d, %d, /* count_include_pad, storage_order */\n", p->count_include_pad,
            p->storage_order);
    fprintf(f, "    %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
               "}; /* x_ctotal, x_coff, y_ctotal, y_coff */\n",
            p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff);
}

/* static const OqcfShape s<node>[] = {shapes of inputs 0..nin-1}. */
static void in_shapes(Em *m, int node, int nin) {
    const OqcNode *n = &m->g->nodes[node];
    fprintf(decl(m), "static const OqcfShape s%d[%d] = {", node, nin);
    for (int k = 0; k < nin; k++) {
        fputs(k ? ",\n    " : "\n    ", decl(m));
        put_shape(decl(m), &m->g->tensors[n->in[k]].shape);
    }
    fputs("};\n", decl(m));
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
        else if (!strcmp(ctype, "int32_t"))
            fprintf(m->qc, ((const int32_t *)v)[i] == INT32_MIN ? "(-2147483647 - 1)" : "%" PRId32,
                    ((const int32_t *)v)[i]);
        else
            fputs(flit(b, sizeof b, ((const float *)v)[i]), m->qc);
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

static const char *qtype_name(int32_t t) {
    return t == OQCI_U8 ? "OQCI_U8" : t == OQCI_S32 ? "OQCI_S32" : "OQCI_S8";
}

/* An int32 bound as a C expression (INT32_MIN has no literal). */
static const char *i32_lit(Em *m, int32_t v) {
    return v == INT32_MIN ? "(-2147483647 - 1)" : oqc_arena_printf(m->a, "%" PRId32, v);
}

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
static int q_boundary(const Em *m, int node) {
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
                    p->kdim, p->kpad, p->out_ctotal, p->out_coff, qtype_name(p->in_type),
                    qtype_name(p->out_type), i32_lit(m, p->lo), i32_lit(m, p->hi), p->wpair16,
                    w, p->w - p0->w,
                    bias ? bias : "NULL",
                    bias ? oqc_arena_printf(m->a, " + %td", p->bias - p0->bias) : "", "", rq);
            fprintf(b, "    TRY(oqci_conv(&q%d_%d, %s, %s, %s));\n", node, k, X(0),
                    out_base(m, node, k), m->e->scratch_bytes ? "SCRATCH" : "NULL");
        }
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
                p->out_ctotal, p->out_coff, qtype_name(p->in_type), qtype_name(p->out_type),
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
            fprintf(f, "%s%s", k ? ", " : "", k < p->ninputs ? qtype_name(p->in_type[k]) : "0");
        fprintf(f, "},\n    %s, %d, %d, {", qtype_name(p->out_type), p->lo, p->hi);
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
                qtype_name(q->in_type), Y(0), qtype_name(q->out_type), q->count, q->lo, q->hi);
        break;
    case OQC_Q_QUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        fprintf(b, "    TRY(oqci_quantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0), Y(0),
                qtype_name(q->out_type), q->count, flit(sb, sizeof sb, q->scale));
        break;
    }
    case OQC_Q_DEQUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        const OqcAcc *a = q->acc;
        if (!a) {
            fprintf(b, "    TRY(oqci_dequantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0),
                    qtype_name(q->in_type), Y(0), q->count, flit(sb, sizeof sb, q->scale));
            break;
        }
        const char *sc = q_array(m, "_s", "float", a->scale, a->per_channel ? a->channels : 1, 4);
        fprintf(b, "    TRY(oqci_dequantize_s32(%s, %s, %" PRId64 ", %d, %" PRId64 ", %s, %d));\n",
                X(0), Y(0), a->outer, a->channels, a->inner, sc, a->per_channel);
        if (m->pre && q_boundary(m, node))   /* the integer API's output: see write_source */
            fprintf(decl(m), "static const OqciRequant q%d_rq = %s;\n", node,
                    q_requant(m, "_rq", &a->rq, a->channels));
        break;
    }
    case OQC_Q_VIEW:
        break;
    }
}

/* Why the emitter cannot compile node `node`, or NULL when it can. */
static const char *unsupported(Em *m, int node) {
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
static void emit_node(Em *m, int node) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    FILE *b = m->body;
    if (x->kind == EXEC_NONE || x->kind == EXEC_DROPOUT)
        return; /* views: the pointer plan already points the output at the input */
    if (x->kind == EXEC_Q && m->pre && q_boundary(m, node))
        b = n->q->kind == OQC_Q_QUANTIZE ? m->pre : m->post;
    m->node = node;
    m->headed = 0;
    fprintf(b, "    /* %d: %s '", node, n->op_type);
    put_comment_text(b, n->name);
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
                fputs(c % 4 ? ", " : c ? ",\n    " : "\n    ", decl(m));
                put_act(decl(m), &n->act_per_channel[c]);
            }
            fputs("};\n", decl(m));
        }
        if (!x->convs) {
            conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
            fprintf(b, "    TRY(oqcf_conv(NULL, &p%d, %s, %s, %s, %s, %s));\n", node, X(0), X(1),
                    bias ? bias : "NULL", out_base(m, node, 0), scratch_args(m));
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
            fprintf(b, "    TRY(oqcf_conv(NULL, &%s, %s, %s, %s, %s, %s));\n", pn, X(0), w, bk,
                    out_base(m, node, k), scratch_args(m));
        }
        break;
    }
    case EXEC_MAXPOOL: {
        use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        const char *idx = n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL";
        if (in0->dtype == OQCF_FLOAT) {
            fprintf(b, "    TRY(oqcf_maxpool(NULL, &p%d, %s, %s, %s));\n", node, X(0),
                    out_base(m, node, 0), idx);
            break;
        }
        /* 8-bit inputs: max commutes with the exact conversion to float and back. */
        use_kernel(m, "oqcf_cast.c");
        int64_t nx = oqc_shape_numel(&in0->shape), ny = numel_out(m->e, node, 0);
        fprintf(b, "    TRY(oqcf_cast(%s, %s, SCRATCH, OQCF_FLOAT, %" PRId64 "));\n", X(0),
                dtype_enum(in0->dtype), nx);
        fprintf(b, "    TRY(oqcf_maxpool(NULL, &p%d, (float *)SCRATCH, (float *)SCRATCH + %" PRId64
                   ", %s));\n", node, nx, idx);
        fprintf(b, "    TRY(oqcf_cast((float *)SCRATCH + %" PRId64 ", OQCF_FLOAT, %s, %s, %" PRId64
                   "));\n", nx, Y(0), dtype_enum(in0->dtype), ny);
        break;
    }
    case EXEC_AVGPOOL:
        use_kernel(m, "oqcf_pooling.c");
        pool_params(m, node, &x->pool);
        fprintf(b, "    TRY(oqcf_avgpool(NULL, &p%d, %s, %s));\n", node, X(0), out_base(m, node, 0));
        break;
    case EXEC_GLOBAL_POOL:
        use_kernel(m, "oqcf_pooling.c");
        fprintf(b, "    TRY(oqcf_global_%s(NULL, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s));\n",
                n->op == OQC_OP_GlobalAveragePool ? "avgpool" : "maxpool", x->a, x->b, x->c, X(0),
                Y(0));
        break;
    case EXEC_BATCHNORM:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_batchnorm(NULL, %" PRId64 ", %" PRId64 ", %" PRId64
                   ", %s, %s, %s, %s, %s, ", x->a, x->b, x->c, X(0), X(1), X(2), X(3), X(4));
        put_f(b, x->f0);
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_LRN:
        use_kernel(m, "oqcf_norm.c");
        fprintf(b, "    TRY(oqcf_lrn(NULL, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %" PRId64
                   ", ", x->a, x->b, x->c, X(0), oqc_attr_int(n, "size", 1));
        put_f(b, oqc_attr_float(n, "alpha", 1e-4f));
        fputs(", ", b);
        put_f(b, oqc_attr_float(n, "beta", 0.75f));
        fputs(", ", b);
        put_f(b, oqc_attr_float(n, "bias", 1.0f));
        fprintf(b, ", %s));\n", Y(0));
        break;
    case EXEC_GEMM: {
        use_kernel(m, "oqcf_gemm.c");
        const OqcfGemmParams *p = &x->gemm;
        fprintf(decl(m), "static const OqcfGemmParams p%d = {\n    %" PRId64 ", %" PRId64 ", %" PRId64
                     ", %d, %d, /* M, N, K, trans_a, trans_b */\n    ",
                node, p->M, p->N, p->K, p->trans_a, p->trans_b);
        put_f(decl(m), p->alpha);
        fputs(", ", decl(m));
        put_f(decl(m), p->beta);
        fprintf(decl(m), ", %d, /* alpha, beta, has_c */\n    ", p->has_c);
        put_shape(decl(m), &p->c_shape);
        fputs(", ", decl(m));
        put_act(decl(m), &p->act);
        fputs("}; /* c_shape, act */\n", decl(m));
        fprintf(b, "    TRY(oqcf_gemm(NULL, &p%d, %s, %s, %s, %s, %s));\n", node, X(0), X(1),
                p->has_c ? X(2) : "NULL", Y(0), scratch_args(m));
        break;
    }
    case EXEC_MATMUL:
        use_kernel(m, "oqcf_gemm.c");
        in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_matmul(NULL, &s%d[0], %s, &s%d[1], %s, %s, %s));\n", node, X(0),
                node, X(1), Y(0), scratch_args(m));
        break;
    case EXEC_UNARY: {
        use_kernel(m, "oqcf_eltwise.c");
        int64_t cnt = numel_out(m->e, node, 0);
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
                       : n->op == OQC_OP_Mul ? "OQCF_MUL" : n->op == OQC_OP_Div ? "OQCF_DIV" : NULL;
        OQC_ASSERT(op);
        in_shapes(m, node, 2);
        fprintf(b, "    TRY(oqcf_binary(%s, %s, %s, &s%d[0], %s, &s%d[1], %s));\n", op,
                dtype_enum(g->tensors[n->out[0]].dtype), X(0), node, X(1), node, Y(0));
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
        fprintf(decl(m), "static const OqcfSlice p%d = {\n    ", node);
        put_i64s(decl(m), x->slice.start, OQCF_MAX_RANK);
        fputs(", /* start */\n    ", decl(m));
        put_i64s(decl(m), x->slice.step, OQCF_MAX_RANK);
        fputs(", /* step */\n    ", decl(m));
        put_shape(decl(m), &x->slice.out);
        fputs("}; /* out */\n", decl(m));
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
        oqc_panic(__FILE__, __LINE__, "node kind rejected by unsupported() reached emit_node");
    }
    fprintf(b, "    OQC_LAYER_END(%d, ", node);
    put_string_lit(b, n->name);
    fputs(", ", b);
    put_string_lit(b, n->op_type);
    fprintf(b, ", %" PRId64 ");\n", oqc_node_macs(g, node));
}

#undef X
#undef Y

/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
static void plan_locs(Em *m) {
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

/* ---------------------------------------------------------------- output files */

/* Files being written: temporary names renamed together at the end. */
typedef struct OutSet {
    const char *dir;        /* output directory */
    const char *tmp[80];    /* temporary paths */
    const char *final[80];  /* final paths */
    int n;                  /* count */
} OutSet;

/* Opens a temporary file for dir/name. */
static FILE *out_file(OutSet *o, OqcArena *a, const char *name, OqcDiag *d) {
    OQC_ASSERT(o->n < 80);
    const char *final = oqc_arena_printf(a, "%s/%s", o->dir, name);
    const char *tmp = oqc_arena_printf(a, "%s/.%s.tmp%ld", o->dir, name, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        oqc_err(d, "%s: cannot write: %s", final, strerror(errno));
        return NULL;
    }
    o->tmp[o->n] = tmp;
    o->final[o->n++] = final;
    return f;
}

static int out_close(FILE *f, const char *what, OqcDiag *d) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oqc_err(d, "%s: error writing: %s", what, strerror(errno));
    return 0;
}

/* Creates dir and its missing parents; *created receives how many were made. */
static int make_dirs(OqcArena *a, const char *dir, const char **made, int *nmade, OqcDiag *d) {
    char *p = oqc_arena_strdup(a, dir);
    *nmade = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) == 0) {
            if (*nmade < 16)
                made[(*nmade)++] = oqc_arena_strdup(a, p);
        } else if (errno != EEXIST) {
            oqc_err(d, "%s: cannot create directory: %s", p, strerror(errno));
            return -1;
        }
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return oqc_err(d, "%s: not a directory", dir);
    return 0;
}

/* The INT8 parts of the output: the integer-I/O entry point's tensors and the
 * boundary calls, and the INT8 constants. */
typedef struct IntIO {
    int qin, qout;        /* the quantized input and output tensors, -1: no integer I/O */
    const char *pre;      /* calls quantizing the float input (run_multi only) */
    const char *post;     /* calls dequantizing the float output (run_multi only) */
    const char *qh, *qc;  /* INT8 constants: declarations, definitions */
} IntIO;

/* Writes the constants: NAME_weights.h (declarations) and NAME_weights.c. */
static int write_weights(Em *m, OutSet *o, const char *model, const IntIO *io, OqcDiag *d) {
    const OqcGraph *g = m->g;
    const char *nm = m->name;
    FILE *h = out_file(o, m->a, oqc_arena_printf(m->a, "%s_weights.h", nm), d);
    if (!h)
        return -1;
    fprintf(h, "/* Generated by oqc compile from ");
    put_comment_text(h, model);
    fprintf(h, "; do not edit. */\n"
               "/* %s_weights.h - the constants %s.c uses (defined in %s_weights.c): weights\n"
               " * and other initializers of the optimised graph, one array per tensor. */\n"
               "#ifndef %s_WEIGHTS_H_INCLUDED\n#define %s_WEIGHTS_H_INCLUDED\n\n"
               "#include <stdint.h>\n\n", nm, nm, nm, nm, nm);
    for (int t = 0; t < g->ntensors; t++) {
        if (!m->used[t])
            continue;
        const OqcTensor *tt = &g->tensors[t];
        int64_t cnt = oqc_shape_numel(&tt->shape);
        char sh[128];
        fprintf(h, "extern const %s %s_w%d[%" PRId64 "]; /* '", ctype_of(tt->dtype), nm, t,
                cnt ? cnt : 1);
        put_comment_text(h, tt->name);
        fprintf(h, "' %s[%s] */\n", oqc_dtype_name(tt->dtype), oqc_shape_str(&tt->shape, sh, sizeof sh));
    }
    fputs(io->qh, h);
    fputs("\n#endif\n", h);
    if (out_close(h, nm, d) < 0)
        return -1;

    FILE *c = out_file(o, m->a, oqc_arena_printf(m->a, "%s_weights.c", nm), d);
    if (!c)
        return -1;
    fprintf(c, "/* Generated by oqc compile from ");
    put_comment_text(c, model);
    fprintf(c, "; do not edit. */\n"
               "/* %s_weights.c - the constants of %s.c, written exactly (C99 hexadecimal\n"
               " * floating literals). */\n"
               "#include \"%s_weights.h\"\n\n#include <math.h>\n", nm, nm, nm);
    for (int t = 0; t < g->ntensors; t++) {
        if (!m->used[t])
            continue;
        const OqcTensor *tt = &g->tensors[t];
        int64_t cnt = oqc_shape_numel(&tt->shape);
        fprintf(c, "\nconst %s %s_w%d[%" PRId64 "] = {", ctype_of(tt->dtype), nm, t, cnt ? cnt : 1);
        if (!cnt)
            fputs("0", c);
        int per = tt->dtype == OQCF_FLOAT || tt->dtype == OQCF_DOUBLE ? 6 : 12;
        for (int64_t i = 0; i < cnt; i++) {
            fputs(i % per ? ", " : i ? ",\n    " : "\n    ", c);
            const void *p = tt->data;
            char buf[48];
            switch (tt->dtype) {
            case OQCF_FLOAT: fputs(flit(buf, sizeof buf, ((const float *)p)[i]), c); break;
            case OQCF_DOUBLE: {
                double v = ((const double *)p)[i];
                if (isnan(v))
                    fputs("NAN", c);
                else if (isinf(v))
                    fputs(v > 0 ? "INFINITY" : "-INFINITY", c);
                else
                    fprintf(c, "%a", v);
                break;
            }
            case OQCF_INT8: fprintf(c, "%d", ((const int8_t *)p)[i]); break;
            case OQCF_INT16: fprintf(c, "%d", ((const int16_t *)p)[i]); break;
            case OQCF_INT32:
                if (((const int32_t *)p)[i] == INT32_MIN)
                    fputs("(-2147483647 - 1)", c);
                else
                    fprintf(c, "%" PRId32, ((const int32_t *)p)[i]);
                break;
            case OQCF_INT64: put_i64(c, ((const int64_t *)p)[i]); break;
            case OQCF_UINT8: case OQCF_BOOL: fprintf(c, "%u", ((const uint8_t *)p)[i]); break;
            case OQCF_UINT16: case OQCF_FLOAT16: case OQCF_BFLOAT16:
                fprintf(c, "%u", ((const uint16_t *)p)[i]);
                break;
            case OQCF_UINT32: fprintf(c, "%" PRIu32 "u", ((const uint32_t *)p)[i]); break;
            case OQCF_UINT64: fprintf(c, "%" PRIu64 "u", ((const uint64_t *)p)[i]); break;
            default: OQC_ASSERT(0);
            }
        }
        fputs("};\n", c);
    }
    fputs(io->qc, c);
    return out_close(c, nm, d);
}

/* Element count, comment and name macros of one graph input or output. */
static void put_io(FILE *h, const OqcGraph *g, const char *nm, const char *kind, int i, int t) {
    const OqcTensor *tt = &g->tensors[t];
    char sh[128];
    fprintf(h, "/* %s %d '", kind[0] == 'I' ? "input" : "output", i);
    put_comment_text(h, tt->name);
    fprintf(h, "': f32[%s] */\n", oqc_shape_str(&tt->shape, sh, sizeof sh));
    fprintf(h, "#define %s_%s%d_SIZE %" PRId64 "\n", nm, kind, i, oqc_shape_numel(&tt->shape));
    fprintf(h, "#define %s_%s%d_NAME ", nm, kind, i);
    put_string_lit(h, tt->name);
    fputc('\n', h);
}

static int write_header(Em *m, OutSet *o, const char *model, const char *precision,
                        size_t arena_total, const IntIO *io, OqcDiag *d) {
    const OqcGraph *g = m->g;
    const char *nm = m->name;
    int single = g->ninputs == 1 && g->noutputs == 1;
    FILE *h = out_file(o, m->a, oqc_arena_printf(m->a, "%s.h", nm), d);
    if (!h)
        return -1;
    fputs("/* Generated by oqc compile from ", h);
    put_comment_text(h, model);
    fputs("; do not edit. */\n", h);
    fprintf(h, "/* %s.h - the model ", nm);
    put_comment_text(h, model);
    fprintf(h, " compiled to C by oqc (precision %s).\n *\n", precision);
    if (single)
        fprintf(h, " *   int %s_run(const float *in, float *out, void *arena);\n"
                   " *       Runs the model once: `in` holds %s_INPUT_SIZE floats, `out` receives\n"
                   " *       %s_OUTPUT_SIZE floats.\n", nm, nm, nm);
    fprintf(h, " *   int %s_run_multi(const float *const *in, float *const *out, void *arena);\n"
               " *       %s: in[i] holds %s_INPUT<i>_SIZE floats,\n"
               " *       out[i] receives %s_OUTPUT<i>_SIZE floats.\n"
               " *\n"
               " * Tensors are dense float32 in C order (NCHW for images), shapes as noted\n"
               " * below. `arena` is the working memory: NULL uses an internal static arena\n"
               " * (calls must then not overlap), else caller memory of %s_ARENA_BYTES bytes\n"
               " * aligned to 64 bytes (one per concurrent call; its contents need no\n"
               " * initialisation). Nothing is allocated. Returns 0, or the nonzero (negative)\n"
               " * status of the kernel that failed; -1 also for an arena not aligned to 64.%s\n",
            nm, single ? "The same with arrays of inputs and outputs" : "Runs the model once",
            nm, nm, nm, io->qin >= 0 ? "\n *" : " */");
    if (io->qin >= 0)
        fprintf(h, " *   int %s_run_int8(const void *in, void *out, void *arena);\n"
                   " *       The integer I/O variant: `in` holds %s_INPUT_SIZE quantized values\n"
                   " *       (uint8_t when %s_INPUT_UNSIGNED, else int8_t) with\n"
                   " *       x = q * %s_INPUT_SCALE, `out` receives %s_OUTPUT_SIZE quantized\n"
                   " *       values likewise (%s_OUTPUT_UNSIGNED, %s_OUTPUT_SCALE); no float\n"
                   " *       arithmetic at all with --requant fixed. To quantize a float x\n"
                   " *       yourself: q = round-half-away(x / SCALE) clamped to [-127, 127]\n"
                   " *       (or [0, 255] when unsigned), as %s_run does.%s */\n",
                nm, nm, nm, nm, nm, nm, nm, nm,
                m->g->tensors[io->qout].acc
                    ? "\n *       The last layer's int32 accumulators are requantized to that scale\n"
                      " *       here, while the float entry points convert them to float\n"
                      " *       directly (more precise than q * OUTPUT_SCALE)."
                    : "");
    fprintf(h, "#ifndef %s_H_INCLUDED\n#define %s_H_INCLUDED\n\n", nm, nm);
    fputs("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", h);
    if (m->e->scratch_noamx_bytes < m->e->scratch_bytes) {
        size_t act_end = arena_total - m->e->scratch_bytes;
        fprintf(h, "/* Working memory of one call: activations (%zu bytes) and kernel scratch\n"
                   " * (%zu bytes; %zu off x86-64 Linux, where the INT8 runtime never has the AMX\n"
                   " * family, whose panels need more: oqci.h's OQCI_AMX_BUILD). */\n"
                   "#if defined(__x86_64__) && defined(__linux__)\n#define %s_ARENA_BYTES %zu\n"
                   "#else\n#define %s_ARENA_BYTES %zu\n#endif\n",
                m->e->arena_bytes, m->e->scratch_bytes, m->e->scratch_noamx_bytes, nm,
                arena_total, nm, act_end + m->e->scratch_noamx_bytes);
    } else {
        fprintf(h, "/* Working memory of one call: activations (%zu bytes) and kernel scratch\n"
                   " * (%zu bytes). */\n#define %s_ARENA_BYTES %zu\n",
                m->e->arena_bytes, m->e->scratch_bytes, nm, arena_total);
    }
    fprintf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n", nm, g->ninputs, nm,
            g->noutputs);
    for (int i = 0; i < g->ninputs; i++)
        put_io(h, g, nm, "INPUT", i, g->inputs[i]);
    for (int i = 0; i < g->noutputs; i++)
        put_io(h, g, nm, "OUTPUT", i, g->outputs[i]);
    fprintf(h, "/* Element counts of the first input and output. */\n"
               "#define %s_INPUT_SIZE %s_INPUT0_SIZE\n#define %s_OUTPUT_SIZE %s_OUTPUT0_SIZE\n\n",
            nm, nm, nm, nm);
    if (io->qin >= 0) {
        const OqcTensor *qi = &m->g->tensors[io->qin], *qo = &m->g->tensors[io->qout];
        char b1[48], b2[48];
        fprintf(h, "/* Integer I/O (%s_run_int8): storage type and scale of the quantized input\n"
                   " * and output. */\n"
                   "#define %s_INPUT_UNSIGNED %d\n#define %s_INPUT_SCALE %s\n"
                   "#define %s_OUTPUT_UNSIGNED %d\n#define %s_OUTPUT_SCALE %s\n\n",
                nm, nm, qi->dtype == OQCF_UINT8, nm, flit(b1, sizeof b1, qi->quant.scale), nm,
                qo->acc ? qo->acc->type == OQCI_U8 : qo->dtype == OQCF_UINT8, nm,
                flit(b2, sizeof b2, qo->quant.scale));
    }
    if (single)
        fprintf(h, "int %s_run(const float *in, float *out, void *arena);\n", nm);
    fprintf(h, "int %s_run_multi(const float *const *in, float *const *out, void *arena);\n", nm);
    if (io->qin >= 0)
        fprintf(h, "int %s_run_int8(const void *in, void *out, void *arena);\n", nm);
    fputs("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", h);
    return out_close(h, nm, d);
}

/* An internal header of the runtime (NAME_int.h, e.g. oqci_conv_int.h): copied with the
 * files that include it, but not part of the API NAME.c calls. */
static int is_internal_header(const char *h) {
    size_t n = strlen(h);
    return n >= 6 && !strcmp(h + n - 6, "_int.h");
}

/* Headers the kernel files include directly (what NAME.c must include), internal ones
 * left out: they are the kernel files' own business (and include the API headers). */
static void kernel_headers(Em *m, const FileSet *all, FileSet *hdrs) {
    for (int i = 0; i < m->kernels.n; i++) {
        const char *text = NULL;
        for (int k = 0; k < all->n; k++)
            if (!strcmp(all->name[k], m->kernels.name[i]))
                text = all->text[k];
        OQC_ASSERT(text);
        const char *inc;
        size_t len;
        for (const char *p = text; (p = next_include(text, p, &inc, &len)) != NULL;) {
            const char *h = oqc_arena_strndup(m->a, inc, len);
            if (!is_internal_header(h) && !set_has(hdrs, h)) {
                int at = hdrs->n++;
                while (at > 0 && strcmp(hdrs->name[at - 1], h) > 0) {
                    hdrs->name[at] = hdrs->name[at - 1];
                    at--;
                }
                hdrs->name[at] = h;
            }
        }
    }
}

static int write_source(Em *m, OutSet *o, const char *model, const char *precision,
                        const FileSet *all, size_t act_end, int nconst,
                        const char *decl, const char *body, const IntIO *io, OqcDiag *d) {
    const OqcGraph *g = m->g;
    const char *nm = m->name;
    FILE *c = out_file(o, m->a, oqc_arena_printf(m->a, "%s.c", nm), d);
    if (!c)
        return -1;
    fputs("/* Generated by oqc compile from ", c);
    put_comment_text(c, model);
    fputs("; do not edit. */\n", c);
    fprintf(c, "/* %s.c - ", nm);
    put_comment_text(c, model);
    fprintf(c, " (precision %s): the nodes of the optimised graph in\n"
               " * executor order, each one call to a runtime kernel with its parameters as static\n"
               " * constants, over one arena laid out by oqc's memory planner. */\n", precision);
    fprintf(c, "#include \"%s.h\"\n", nm);
    if (nconst)
        fprintf(c, "#include \"%s_weights.h\"\n", nm);
    FileSet hdrs = {.n = 0};
    kernel_headers(m, all, &hdrs);
    for (int i = 0; i < hdrs.n; i++)
        fprintf(c, "#include \"%s\"\n", hdrs.name[i]);
    fputs("\n#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n", c);
    fprintf(c, "/* The arena: activations in [0, %zu), kernel scratch in [%zu, %s_ARENA_BYTES). */\n",
            m->e->arena_bytes, act_end, nm);
    if (m->e->scratch_bytes)   /* (its size as NAME_ARENA_BYTES has it) */
        fprintf(c, "#define SCRATCH ((void *)(a + %zu))\n#define SCRATCH_BYTES (%s_ARENA_BYTES - %zu)\n",
                act_end, nm, act_end);
    fputs("#define TRY(call) do { int st_ = (call); if (st_ != 0) return st_; } while (0)\n", c);
    fputs("/* Per-layer hooks (profiling): built with -DOQC_LAYER_HOOKS='\"file.h\"', that header\n"
          " * is included and may define OQC_LAYER_BEGIN(index) and OQC_LAYER_END(index, name,\n"
          " * op, macs), which run around every layer (docs/compile.md); else they do nothing. */\n"
          "#ifdef OQC_LAYER_HOOKS\n#include OQC_LAYER_HOOKS\n#endif\n"
          "#ifndef OQC_LAYER_BEGIN\n#define OQC_LAYER_BEGIN(index) ((void)0)\n#endif\n"
          "#ifndef OQC_LAYER_END\n#define OQC_LAYER_END(index, name, op, macs) ((void)0)\n#endif\n",
          c);
    fputs(decl, c);
    fprintf(c, "\n/* Used when the caller passes no arena; the only mutable object. */\n"
               "static unsigned char static_arena[%s_ARENA_BYTES + 64];\n\n", nm);
    static const char *const arena_prelude =
        "    unsigned char *a = (unsigned char *)arena;\n"
        "    if (!a)\n"
        "        a = static_arena + (64 - (uintptr_t)static_arena %% 64) %% 64;\n"
        "    else if ((uintptr_t)a %% 64 != 0)\n"
        "        return -1;\n";
    if (io->qin >= 0) {   /* the INT8 layers once, shared by both entry points */
        fprintf(c, "/* The layers between the quantized input and the quantized output. */\n"
                   "static int %s_core(unsigned char *a) {\n", nm);
        fputs(body, c);
        fputs("    (void)a;\n    return 0;\n}\n\n", c);
    }
    fprintf(c, "int %s_run_multi(const float *const *in, float *const *out, void *arena) {\n", nm);
    fprintf(c, arena_prelude);
    if (!g->ninputs)
        fputs("    (void)in;\n", c);
    if (io->qin >= 0) {
        fputs(io->pre, c);
        fprintf(c, "    TRY(%s_core(a));\n", nm);
        fputs(io->post, c);
    } else {
        fputs(body, c);
    }
    fputs("    /* Graph outputs. */\n", c);
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        fprintf(c, "    memcpy(out[%d], %s, %zu);\n", i, ptr_expr(m, g->outputs[i]),
                (size_t)oqc_shape_numel(&t->shape) * esize_of(t));
    }
    fputs("    (void)a;\n    return 0;\n}\n", c);
    if (g->ninputs == 1 && g->noutputs == 1)
        fprintf(c, "\nint %s_run(const float *in, float *out, void *arena) {\n"
                   "    return %s_run_multi(&in, &out, arena);\n}\n", nm, nm);
    if (io->qin >= 0) {
        const OqcTensor *qi = &g->tensors[io->qin], *qo = &g->tensors[io->qout];
        fprintf(c, "\nint %s_run_int8(const void *in, void *out, void *arena) {\n", nm);
        fprintf(c, arena_prelude);
        fprintf(c, "    memcpy(%s, in, %zu);\n", ptr_expr(m, io->qin),
                (size_t)oqc_shape_numel(&qi->shape));
        fprintf(c, "    TRY(%s_core(a));\n", nm);
        if (qo->acc) {   /* accumulators: requantized as the layer would have */
            const OqcAcc *ac = qo->acc;
            fprintf(c, "    TRY(oqci_requantize_s32(%s, out, %s, %" PRId64 ", %d, %" PRId64
                       ", &q%d_rq, %d, %d));\n    return 0;\n}\n",
                    ptr_expr(m, io->qout), qtype_name(ac->type), ac->outer, ac->channels,
                    ac->inner, g->tensors[g->outputs[0]].producer, ac->lo, ac->hi);
        } else {
            fprintf(c, "    memcpy(out, %s, %zu);\n    return 0;\n}\n", ptr_expr(m, io->qout),
                    (size_t)oqc_shape_numel(&qo->shape));
        }
    }
    return out_close(c, nm, d);
}

static int write_runtime(Em *m, OutSet *o, const FileSet *all, OqcDiag *d) {
    for (int i = 0; i < all->n; i++) {
        FILE *f = out_file(o, m->a, all->name[i], d);
        if (!f)
            return -1;
        fprintf(f, "/* Generated by oqc compile: copy of runtime/%s; do not edit. */\n",
                all->name[i]);
        fputs(all->text[i], f);
        if (out_close(f, all->name[i], d) < 0)
            return -1;
    }
    return 0;
}

/* --target: the compiler flags that select the kernel family (the emitted code guards
 * each path with the compiler's feature macros and falls back to portable C). */
static const char *const targets[][2] = {
    {"native", "-march=native"},
    {"portable", ""},
    {"avx2", "-mavx2 -mfma"},
    {"avxvnni", "-mavx2 -mfma -mavxvnni"},
    {"avx512vnni", "-mavx512f -mavx512bw -mavx512vnni -mfma"},
    {"amx", "-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi -mfma -mamx-tile -mamx-int8"},
    {"neondot", "-march=armv8.2-a+dotprod"},
    {"dispatch", "-DOQCI_DISPATCH"},
};

const char *oqc_target_flags(const char *target) {
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (!strcmp(targets[i][0], target ? target : "native"))
            return targets[i][1];
    return NULL;
}

static int write_make(Em *m, OutSet *o, const char *model, const FileSet *all, int nconst,
                      const char *target, OqcDiag *d) {
    const char *nm = m->name;
    char srcs[4096];
    size_t len = (size_t)snprintf(srcs, sizeof srcs, "%s.c%s%s", nm, nconst ? " " : "",
                                  nconst ? oqc_arena_printf(m->a, "%s_weights.c", nm) : "");
    for (int i = 0; i < all->n && len < sizeof srcs; i++)
        if (strlen(all->name[i]) > 2 && !strcmp(all->name[i] + strlen(all->name[i]) - 2, ".c"))
            len += (size_t)snprintf(srcs + len, sizeof srcs - len, " %s", all->name[i]);
    OQC_ASSERT(len < sizeof srcs);
    const char *tflags = oqc_target_flags(target);
    const char *flags = oqc_arena_printf(m->a, "-std=c99 -O2 -ffp-contract=off%s%s",
                                         tflags && *tflags ? " " : "", tflags ? tflags : "");
    FILE *f = out_file(o, m->a, oqc_arena_printf(m->a, "%s.mk", nm), d);
    if (!f)
        return -1;
    fputs("# Generated by oqc compile from ", f);
    for (const char *p = model; *p; p++)
        fputc(*p == '\n' ? ' ' : *p, f);
    fprintf(f, "; do not edit.\n"
               "# %s.mk - the C sources of model '%s' (paths relative to this directory), for\n"
               "# inclusion in a Makefile. Built by hand, with a main.c calling %s_run():\n"
               "#   cc %s -I. main.c %s -lm -o app\n"
               "# -ffp-contract=off: no fused multiply-add the kernels did not ask for (the\n"
               "# results are then bit-identical to `oqc run` as oqc builds by default).\n"
               "# Target '%s' (oqc compile --target): %s; every kernel family gives the same\n"
               "# bits, and without the flags the code falls back to portable C.  Compile every\n"
               "# source with the same flags: the files of one kernel library (the INT8 conv's\n"
               "# oqci_conv*.c) must agree on the instruction sets compiled in, or the link fails.\n"
               "%s_CFLAGS := %s\n"
               "%s_SRCS := %s\n", nm, nm, nm, flags, srcs, target ? target : "native",
            tflags && *tflags ? tflags : "no flags", nm, flags, nm, srcs);
    if (out_close(f, "NAME.mk", d) < 0)
        return -1;
    FILE *r = out_file(o, m->a, "README.md", d);
    if (!r)
        return -1;
    fputs("<!-- Generated by oqc compile from ", r);
    for (const char *p = model; *p; p++)
        fputc(*p == '\n' || *p == '>' ? ' ' : *p, r);
    fprintf(r, "; do not edit. -->\n"
               "# %s: %s compiled to C\n\n"
               "Self-contained C99 code generated by `oqc compile`: no allocation, no threads,\n"
               "no dependency beyond the C standard library and libm.\n\n"
               "- `%s.h`: the API (`%s_run`, `%s_run_multi`, `%s_ARENA_BYTES`, input and\n"
               "  output sizes); read its comments.\n"
               "- `%s.c`: the kernel calls; `%s_weights.c`: the constants (if any);\n"
               "  `oqcf_*`: copies of oqc's runtime kernels.\n"
               "- `%s.mk`: the source list as a Makefile fragment (`%s_SRCS`).\n\n"
               "Build with any C99 compiler, e.g.\n\n"
               "    cc %s -I. main.c %s -lm -o app\n\n"
               "with the same flags for every source (the files of one kernel library, such as\n"
               "the INT8 conv's `oqci_conv*.c`, one per instruction set, must agree on the\n"
               "instruction sets compiled in: a mismatch fails at link time, on an undefined\n"
               "`oqcik_cfg_...` symbol), and call it:\n\n"
               "    #include \"%s.h\"\n"
               "    static float in[%s_INPUT_SIZE], out[%s_OUTPUT_SIZE];\n"
               "    int status = %s_run%s(%s, NULL); /* NULL: internal arena */\n\n"
               "See oqc's docs/compile.md for the details.\n",
            nm, model, nm, nm, nm, nm, nm, nm, nm, nm, flags, srcs, nm, nm, nm, nm,
            m->g->ninputs == 1 && m->g->noutputs == 1 ? "" : "_multi",
            m->g->ninputs == 1 && m->g->noutputs == 1 ? "in, out" : "ins, outs");
    return out_close(r, "README.md", d);
}

int oqc_emit_c(OqcExec *e, const OqcEmitOptions *opt, OqcDiag *d) {
    OqcGraph *g = e->g;
    OqcArena *a = g->arena;
    OQC_ASSERT(!e->pool); /* scratch sizes and paths must be the single-thread ones */
    if (oqc_c_name_check(opt->name, d) < 0)
        return -1;
    const char *model = strrchr(g->path, '/') ? strrchr(g->path, '/') + 1 : g->path;
    const char *precision = opt->precision ? opt->precision : "fp32";

    /* Everything that can be refused is checked before anything is written. */
    int bad = 0;
    Em m = {.e = e, .g = g, .a = a, .d = d, .name = opt->name};
    for (int i = 0; i < g->nnodes; i++) {
        const char *why = unsupported(&m, i);
        if (why && bad++ < 8)
            oqc_err(d, "%s: node '%s' (%s): %s", g->path, g->nodes[i].name, g->nodes[i].op_type,
                    why);
    }
    if (bad > 8)
        oqc_err(d, "%s: ... and %d more node(s) the C emitter does not support", g->path, bad - 8);
    if (!g->ninputs)
        bad += oqc_err(d, "%s: the model has no inputs; oqc compile needs at least one", g->path) < 0;
    if (!g->noutputs)
        bad += oqc_err(d, "%s: the model has no outputs", g->path) < 0;
    for (int i = 0; i < g->ninputs; i++)
        if (g->tensors[g->inputs[i]].dtype != OQCF_FLOAT)
            bad += oqc_err(d, "%s: input '%s' is %s; oqc compile supports float32 graph inputs "
                              "only for now", g->path, g->tensors[g->inputs[i]].name,
                           oqc_dtype_name(g->tensors[g->inputs[i]].dtype)) < 0;
    for (int i = 0; i < g->noutputs; i++)
        if (g->tensors[g->outputs[i]].dtype != OQCF_FLOAT)
            bad += oqc_err(d, "%s: output '%s' is %s; oqc compile supports float32 graph "
                              "outputs only for now", g->path, g->tensors[g->outputs[i]].name,
                           oqc_dtype_name(g->tensors[g->outputs[i]].dtype)) < 0;
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (tt->is_const && (tt->nconsumers || tt->is_output) &&
            (!tt->data || !ctype_of(tt->dtype)))
            bad += oqc_err(d, "%s: constant '%s' has no %s; oqc compile needs every constant's "
                              "values", g->path, tt->name, tt->data ? "numeric type" : "data") < 0;
    }
    if (bad)
        return -1;

    m.loc = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *m.loc);
    m.used = oqc_arena_alloc(a, (size_t)(g->ntensors + 1));
    plan_locs(&m);
    char *decl = NULL, *body = NULL;
    size_t decl_len = 0, body_len = 0;
    char *qh = NULL, *qc = NULL, *pre = NULL, *post = NULL;
    size_t qh_len = 0, qc_len = 0, pre_len = 0, post_len = 0;
    m.decl = open_memstream(&decl, &decl_len);
    m.body = open_memstream(&body, &body_len);
    m.qh = open_memstream(&qh, &qh_len);
    m.qc = open_memstream(&qc, &qc_len);
    if (!m.decl || !m.body || !m.qh || !m.qc)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    /* An INT8 model whose one input only feeds its Quantize and whose one output comes
     * from its Dequantize also gets the integer-I/O entry point. */
    int qin = -1, qout = -1;
    if (g->ninputs == 1 && g->noutputs == 1) {
        const OqcTensor *it = &g->tensors[g->inputs[0]], *ot = &g->tensors[g->outputs[0]];
        if (it->nconsumers == 1 && q_boundary(&m, it->consumers[0]) && ot->producer >= 0 &&
            q_boundary(&m, ot->producer)) {
            qin = g->nodes[it->consumers[0]].out[0];
            qout = g->nodes[ot->producer].in[0];
            m.pre = open_memstream(&pre, &pre_len);
            m.post = open_memstream(&post, &post_len);
            if (!m.pre || !m.post)
                oqc_panic(__FILE__, __LINE__, "out of memory");
        }
    }
    for (int i = 0; i < g->nnodes; i++)
        emit_node(&m, i);
    for (int i = 0; i < g->noutputs; i++)
        ptr_expr(&m, g->outputs[i]); /* marks constant outputs as used */
    fclose(m.decl);
    fclose(m.body);
    fclose(m.qh);
    fclose(m.qc);
    if (m.pre) {
        fclose(m.pre);
        fclose(m.post);
    }
    IntIO io = {qin, qout, pre, post, qh, qc};
    int nconst = m.qbytes > 0;
    for (int t = 0; t < g->ntensors; t++)
        nconst += m.used[t];

    /* The runtime files: those the calls use, what they need, and the extras. */
    FileSet all = {.n = 0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < m.kernels.n; i++)
        rc = set_add(&all, a, m.kernels.name[i], d);
    for (int i = 0; rc == 0 && i < opt->nextra; i++)
        rc = set_add(&all, a, opt->extra_runtime[i], d);
    size_t act_end = (e->arena_bytes + 63) / 64 * 64;
    size_t arena_total = e->scratch_bytes ? act_end + e->scratch_bytes : e->arena_bytes;

    const char *made[16];
    int nmade = 0;
    OutSet o = {.dir = opt->outdir};
    if (rc == 0)
        rc = make_dirs(a, opt->outdir, made, &nmade, d);
    if (rc == 0)
        rc = write_runtime(&m, &o, &all, d);
    if (rc == 0 && nconst)
        rc = write_weights(&m, &o, model, &io, d);
    if (rc == 0)
        rc = write_make(&m, &o, model, &all, nconst, opt->target, d);
    if (rc == 0)
        rc = write_header(&m, &o, model, precision, arena_total, &io, d);
    if (rc == 0)
        rc = write_source(&m, &o, model, precision, &all, act_end, nconst, decl,
                          body, &io, d);
    free(decl);
    free(body);
    free(qh);
    free(qc);
    free(pre);
    free(post);
    /* Rename into place (NAME.c last); on failure remove this run's files (temporaries,
     * and any already renamed) but nothing an earlier compile left. */
    int renamed = 0;
    for (; rc == 0 && renamed < o.n; renamed++)
        if (rename(o.tmp[renamed], o.final[renamed]) != 0)
            rc = oqc_err(d, "%s: cannot rename the finished file into place: %s",
                         o.final[renamed], strerror(errno));
    if (rc < 0) {
        for (int i = 0; i < o.n; i++)
            remove(i < renamed - 1 ? o.final[i] : o.tmp[i]);
        for (int i = nmade - 1; i >= 0; i--)
            rmdir(made[i]);
        return -1;
    }
    if (opt->stats) {
        size_t wbytes = 0;
        for (int t = 0; t < g->ntensors; t++)
            if (m.used[t])
                wbytes += g->tensors[t].nbytes;
        opt->stats->arena_bytes = arena_total;
        opt->stats->arena_bytes_noamx =
            e->scratch_noamx_bytes < e->scratch_bytes ? act_end + e->scratch_noamx_bytes
                                                      : arena_total;
        opt->stats->weight_bytes = wbytes + m.qbytes;
        opt->stats->nconst = nconst;
        opt->stats->nfiles = o.n;
        opt->stats->nruntime = all.n;
    }
    return 0;
}
