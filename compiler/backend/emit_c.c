/* emit_c.c - `oqc compile`: a prepared executor written out as self-contained C.
 *
 * The emitted code is a serialisation of an OqcExec built for one thread (no pool), or
 * for --threads N (a pool of N: the scratch sized for N chunks, and NAME.c passes the
 * run's pool, the application's parallel-for or oqcf_threads.c's, to the kernels):
 *   - the same memory plan: one arena holding the activations at the offsets
 *     oqc_memplan gave them, then the kernel scratch; graph inputs are read in place
 *     from the caller, views (Reshape, Flatten, channel ranges of a concat buffer) are
 *     pointers computed exactly as oqc_exec_run computes them (Loc, emit_int.h);
 *   - the same kernel calls in executor order, each with the parameter struct
 *     exec_ops.c prepared, written as a `static const` initializer;
 *   - the same constants, written exactly (C99 hex float literals).
 * It calls the same runtime functions with the same arguments, so its outputs are
 * bit-identical to `oqc run --threads 1` built with the same compiler and flags.
 *
 * One node's constants and call are emit_node.c's (oqc_em_node: the one switch over
 * what a node does); this file writes the files around them.
 *
 * Files (docs/compile.md): NAME.h (the API), NAME.c (the run functions), NAME_weights.h
 * and NAME_weights.c (the constants), copies of the runtime files the calls need (their
 * text is embedded in oqc at build time, see the Makefile; $OQC_RUNTIME_DIR overrides
 * it), NAME.mk and README.md. Every file is first written to a temporary name and the
 * set is renamed into place only when all are complete; a failure removes them. The
 * output depends on the model and the options only (no dates, no paths). */
#include "backend.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit_files.h"
#include "emit_int.h"
#include "oqc_image.h"

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
        for (const char *p = text; (p = oqc_em_next_include(text, p, &inc, &len)) != NULL;) {
            const char *h = oqc_arena_strndup(m->a, inc, len);
            if (!is_internal_header(h) && !oqc_em_set_has(hdrs, h)) {
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

/* The end of the integer entry points: the INT8 layers, then their output as 8 bits. */
static void put_int_out(Em *m, FILE *c, const IntIO *io) {
    const OqcGraph *g = m->g;
    const OqcTensor *qo = &g->tensors[io->qout];
    fprintf(c, "    TRY(%s_core(a%s));\n", m->name, m->threads > 1 ? ", pool" : "");
    if (qo->acc) {   /* accumulators: requantized as the layer would have */
        const OqcAcc *ac = qo->acc;
        fprintf(c, "    TRY(oqci_requantize_s32(%s, out, %s, %" PRId64 ", %d, %" PRId64
                   ", &q%d_rq, %d, %d));\n    return 0;\n}\n",
                oqc_em_ptr(m, io->qout), oqc_em_qtype_name(ac->type), ac->outer, ac->channels,
                ac->inner, g->tensors[g->outputs[0]].producer, ac->lo, ac->hi);
    } else {
        fprintf(c, "    memcpy(out, %s, %zu);\n    return 0;\n}\n", oqc_em_ptr(m, io->qout),
                (size_t)oqc_shape_numel(&qo->shape));
    }
}

/* NAME_run_u8: each pixel through its channel's table into the quantized input (the
 * same bytes the input's QuantizeLinear makes of the pixel's float value), then the
 * INT8 layers as NAME_run_int8 runs them.  Integer-only. */
static void put_run_u8(Em *m, FILE *c, const IntIO *io, const char *arena_prelude) {
    const OqcTensor *qi = &m->g->tensors[io->qin];
    const char *ct = qi->dtype == OQCF_UINT8 ? "uint8_t" : "int8_t";
    int nch = io->pp_c;
    size_t plane = (size_t)io->pp_h * (size_t)io->pp_w;
    fprintf(c, "\n/* Pixel -> quantized input, per model channel: the input quantization of\n"
               " * ((float)p * %s_PP_MUL / %s_PP_DIV - %s_PP_MEAN[c]) / %s_PP_STD[c]. */\n"
               "static const %s u8_table[%d][256] = {", m->name, m->name, m->name, m->name,
            ct, nch);
    for (int ch = 0; ch < nch; ch++) {
        fputs(ch ? ",\n    {" : "\n    {", c);
        for (int p = 0; p < 256; p++)
            fprintf(c, "%s%d", p == 0 ? "" : p % 16 ? ", " : ",\n     ",
                    qi->dtype == OQCF_UINT8 ? (int)io->u8_table[ch][p]
                                            : (int)(int8_t)io->u8_table[ch][p]);
        fputs("}", c);
    }
    fprintf(c, "};\n\nint %s_run_u8(const uint8_t *pixels, void *out, void *arena) {\n",
            m->name);
    fputs(arena_prelude, c);
    fprintf(c, "    %s *q = %s;\n    size_t i;\n", ct, oqc_em_ptr(m, io->qin));
    if (nch == 1)
        fprintf(c, "    for (i = 0; i < %zu; i++)\n        q[i] = u8_table[0][pixels[i]];\n",
                plane);
    else if (io->pp->nhwc)
        fprintf(c, "    for (i = 0; i < %zu; i += 3) {\n"
                   "        q[i] = u8_table[0][pixels[i]];\n"
                   "        q[i + 1] = u8_table[1][pixels[i + 1]];\n"
                   "        q[i + 2] = u8_table[2][pixels[i + 2]];\n    }\n", 3 * plane);
    else
        fprintf(c, "    for (i = 0; i < %zu; i++) {\n"
                   "        q[i] = u8_table[0][pixels[i]];\n"
                   "        q[%zu + i] = u8_table[1][pixels[%zu + i]];\n"
                   "        q[%zu + i] = u8_table[2][pixels[%zu + i]];\n    }\n",
                plane, plane, plane, 2 * plane, 2 * plane);
    put_int_out(m, c, io);
}

static int write_source(Em *m, OutSet *o, const char *model, const char *precision,
                        const FileSet *all, size_t act_end, int nconst,
                        const char *decl, const char *body, const IntIO *io, OqcDiag *d) {
    const OqcGraph *g = m->g;
    const char *nm = m->name;
    FILE *c = oqc_em_out_file(o, m->a, oqc_arena_printf(m->a, "%s.c", nm), d);
    if (!c)
        return -1;
    fputs("/* Generated by oqc compile from ", c);
    oqc_em_comment(c, model);
    fputs("; do not edit. */\n", c);
    fprintf(c, "/* %s.c - ", nm);
    oqc_em_comment(c, model);
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
    fprintf(c, "\n/* Used when the caller passes no arena; the only mutable object%s. */\n"
               "static unsigned char static_arena[%s_ARENA_BYTES + 64];\n\n",
            m->threads > 1 ? " but the parallel-for below" : "", nm);
    if (m->threads > 1)
        fprintf(c, "/* The application's parallel-for, once %s_set_parallel was called. */\n"
                   "static OqcfPool app_pool;\nstatic int app_pool_set;\n\n"
                   "void %s_set_parallel(oqc_parallel_for_fn fn, void *ctx) {\n"
                   "    app_pool.run = fn;\n    app_pool.ctx = ctx;\n"
                   "    app_pool.nthreads = %s_THREADS;\n    app_pool_set = 1;\n}\n\n"
                   "/* The pool a run uses: the application's, or the shared default threads (in\n"
                   " * *dflt; when they cannot be started, the tasks run on the caller). */\n"
                   "static OqcfPool *run_pool(OqcfPool *dflt) {\n"
                   "    if (app_pool_set)\n        return &app_pool;\n"
                   "    dflt->run = oqcf_threads_run;\n"
                   "    dflt->ctx = oqcf_threads_shared(%s_THREADS);\n"
                   "    dflt->nthreads = %s_THREADS;\n    return dflt;\n}\n\n", nm, nm, nm, nm, nm);
    const char *arena_prelude = oqc_arena_printf(m->a,
        "    unsigned char *a = (unsigned char *)arena;\n%s"
        "    if (!a)\n"
        "        a = static_arena + (64 - (uintptr_t)static_arena %% 64) %% 64;\n"
        "    else if ((uintptr_t)a %% 64 != 0)\n"
        "        return -1;\n",
        m->threads > 1 ? "    OqcfPool pool_d, *pool = run_pool(&pool_d);\n    (void)pool;\n"
                       : "");
    /* (the pool the kernel calls take: `pool` in each function that runs layers) */
    const char *pool_param = m->threads > 1 ? ", OqcfPool *pool" : "";
    const char *pool_pass = m->threads > 1 ? ", pool" : "";
    if (io->qin >= 0) {   /* the INT8 layers once, shared by both entry points */
        fprintf(c, "/* The layers between the quantized input and the quantized output. */\n"
                   "static int %s_core(unsigned char *a%s) {\n", nm, pool_param);
        fputs(body, c);
        fputs("    (void)a;\n    return 0;\n}\n\n", c);
    }
    fprintf(c, "int %s_run_multi(const float *const *in, float *const *out, void *arena) {\n", nm);
    fputs(arena_prelude, c);
    /* (a graph without inputs, or whose nodes all have empty outputs, reads none) */
    fputs("    (void)in;\n", c);
    if (io->qin >= 0) {
        fputs(io->pre, c);
        fprintf(c, "    TRY(%s_core(a%s));\n", nm, pool_pass);
        fputs(io->post, c);
    } else {
        fputs(body, c);
    }
    fputs("    /* Graph outputs. */\n", c);
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        fprintf(c, "    memcpy(out[%d], %s, %zu);\n", i, oqc_em_ptr(m, g->outputs[i]),
                (size_t)oqc_shape_numel(&t->shape) * esize_of(t));
    }
    fputs("    (void)a;\n    return 0;\n}\n", c);
    if (g->ninputs == 1 && g->noutputs == 1)
        fprintf(c, "\nint %s_run(const float *in, float *out, void *arena) {\n"
                   "    return %s_run_multi(&in, &out, arena);\n}\n", nm, nm);
    if (io->qin >= 0) {
        const OqcTensor *qi = &g->tensors[io->qin];
        fprintf(c, "\nint %s_run_int8(const void *in, void *out, void *arena) {\n", nm);
        fputs(arena_prelude, c);
        fprintf(c, "    memcpy(%s, in, %zu);\n", oqc_em_ptr(m, io->qin),
                (size_t)oqc_shape_numel(&qi->shape));
        put_int_out(m, c, io);
    }
    if (io->u8)
        put_run_u8(m, c, io, arena_prelude);
    return oqc_em_out_close(c, nm, d);
}

static int write_runtime(Em *m, OutSet *o, const FileSet *all, OqcDiag *d) {
    for (int i = 0; i < all->n; i++) {
        FILE *f = oqc_em_out_file(o, m->a, all->name[i], d);
        if (!f)
            return -1;
        fprintf(f, "/* Generated by oqc compile: copy of runtime/%s; do not edit. */\n",
                all->name[i]);
        fputs(all->text[i], f);
        if (oqc_em_out_close(f, all->name[i], d) < 0)
            return -1;
    }
    return 0;
}


int oqc_emit_check(OqcExec *e, int max_nodes, OqcDiag *d) {
    OqcGraph *g = e->g;
    int bad = 0;
    Em m = {.e = e, .g = g, .a = g->arena, .d = d, .threads = oqcf_pool_threads(e->pool)};
    for (int i = 0; i < g->nnodes; i++) {
        const char *why = oqc_em_unsupported(&m, i);
        if (why && bad++ < max_nodes)
            oqc_err(d, "%s: node '%s' (%s): %s", g->path, g->nodes[i].name, g->nodes[i].op_type,
                    why);
    }
    if (bad > max_nodes)
        oqc_err(d, "%s: ... and %d more node(s) the C emitter does not support", g->path,
                bad - max_nodes);

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
            (!tt->data || !oqc_em_ctype(tt->dtype)))
            bad += oqc_err(d, "%s: constant '%s' has no %s; oqc compile needs every constant's "
                              "values", g->path, tt->name, tt->data ? "numeric type" : "data") < 0;
    }
    return bad;
}

/* --preprocess: parsed into *pp, with the model input's channels, height and width
 * (*ch, *hh, *ww); an error for a model without exactly one image-shaped input. */
static int check_preprocess(const OqcGraph *g, const char *spec, OqcPreprocess *pp, int *ch,
                            int *hh, int *ww, OqcDiag *d) {
    if (oqc_preprocess_parse(spec, pp, d) < 0)
        return -1;
    if (g->ninputs != 1)
        return oqc_err(d, "%s: --preprocess: the model has %d inputs; image preprocessing "
                          "is for models with one", g->path, g->ninputs);
    return oqc_image_geometry(pp, &g->tensors[g->inputs[0]].shape, ch, hh, ww, d);
}

/* The text emit_node.c writes into m's streams: declarations, the layers, the INT8
 * constants (declarations, definitions) and, with integer I/O, the calls around the
 * INT8 layers; each malloc'd. */
typedef struct Texts {
    char *decl, *body, *qh, *qc, *pre, *post;
    size_t decl_len, body_len, qh_len, qc_len, pre_len, post_len;
} Texts;

/* Emits every node of m's graph into the texts t; *qin, *qout receive the quantized
 * input and output of the integer-I/O entry point, -1 when it has none. */
static void emit_calls(Em *m, Texts *t, int *qin, int *qout) {
    const OqcGraph *g = m->g;
    m->decl = open_memstream(&t->decl, &t->decl_len);
    m->body = open_memstream(&t->body, &t->body_len);
    m->qh = open_memstream(&t->qh, &t->qh_len);
    m->qc = open_memstream(&t->qc, &t->qc_len);
    if (!m->decl || !m->body || !m->qh || !m->qc)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    /* An INT8 model whose one input only feeds its Quantize and whose one output comes
     * from its Dequantize also gets the integer-I/O entry point. */
    *qin = *qout = -1;
    if (g->ninputs == 1 && g->noutputs == 1) {
        const OqcTensor *it = &g->tensors[g->inputs[0]], *ot = &g->tensors[g->outputs[0]];
        if (it->nconsumers == 1 && oqc_em_q_boundary(m, it->consumers[0]) && ot->producer >= 0 &&
            oqc_em_q_boundary(m, ot->producer)) {
            *qin = g->nodes[it->consumers[0]].out[0];
            *qout = g->nodes[ot->producer].in[0];
            m->pre = open_memstream(&t->pre, &t->pre_len);
            m->post = open_memstream(&t->post, &t->post_len);
            if (!m->pre || !m->post)
                oqc_panic(__FILE__, __LINE__, "out of memory");
        }
    }
    for (int i = 0; i < g->nnodes; i++)
        oqc_em_node(m, i);
    for (int i = 0; i < g->noutputs; i++)
        oqc_em_ptr(m, g->outputs[i]); /* marks constant outputs as used */
    static const char *const pool_files[] = {"oqcf_pool.c", "oqcf_threads.c"};
    for (int i = 0; m->threads > 1 && i < 2; i++)   /* NAME.c's pool (write_source) */
        if (!oqc_em_set_has(&m->kernels, pool_files[i]))
            m->kernels.name[m->kernels.n++] = pool_files[i];
    fclose(m->decl);
    fclose(m->body);
    fclose(m->qh);
    fclose(m->qc);
    if (m->pre) {
        fclose(m->pre);
        fclose(m->post);
    }
}

/* NAME_run_u8's tables: per model channel, every pixel value preprocessed as pp says and
 * quantized as the input's Quantize node of g does. */
static void u8_tables(const OqcGraph *g, const OqcPreprocess *pp, IntIO *io) {
    const OqcQNode *q = g->nodes[g->tensors[g->inputs[0]].consumers[0]].q;
    io->u8 = 1;
    for (int c = 0; c < io->pp_c; c++) {
        float v[256];
        for (int p = 0; p < 256; p++)
            v[p] = oqc_img_value((unsigned char)p, pp->mul, pp->div, pp->mean[c], pp->std[c]);
        OQC_ASSERT(oqci_quantize(v, io->u8_table[c], q->out_type, 256, q->scale) == 0);
    }
}

/* What oqc compile reports of the emitted code (OqcEmitStats). */
static void fill_stats(const Em *m, const OutSet *o, const FileSet *all, size_t act_end,
                       size_t arena_total, int nconst, OqcEmitStats *st) {
    const OqcGraph *g = m->g;
    size_t wbytes = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (m->used[t])
            wbytes += g->tensors[t].nbytes;
    st->arena_bytes = arena_total;
    st->arena_bytes_noamx = m->e->scratch_noamx_bytes < m->e->scratch_bytes
                                ? act_end + m->e->scratch_noamx_bytes
                                : arena_total;
    st->weight_bytes = wbytes + m->qbytes;
    st->nconst = nconst;
    st->nfiles = o->n;
    const char **files = oqc_arena_alloc(m->a, (size_t)(o->n + 1) * sizeof *files);
    memcpy(files, o->final, (size_t)o->n * sizeof *files);
    st->files = files;
    st->nruntime = all->n;
}

int oqc_emit_c(OqcExec *e, const OqcEmitOptions *opt, OqcDiag *d) {
    OqcGraph *g = e->g;
    OqcArena *a = g->arena;
    if (oqc_c_name_check(opt->name, d) < 0)
        return -1;
    const char *model = strrchr(g->path, '/') ? strrchr(g->path, '/') + 1 : g->path;
    const char *precision = opt->precision ? opt->precision : "fp32";

    /* Everything that can be refused is checked before anything is written.  The
     * executor's thread count: its scratch is sized for it (oqc_exec_new). */
    Em m = {.e = e, .g = g, .a = a, .d = d, .name = opt->name,
            .threads = oqcf_pool_threads(e->pool)};
    if (oqc_emit_check(e, 8, d) > 0)
        return -1;
    OqcPreprocess pp;
    int ch = 0, hh = 0, ww = 0;
    if (opt->preprocess && check_preprocess(g, opt->preprocess, &pp, &ch, &hh, &ww, d) < 0)
        return -1;

    m.loc = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *m.loc);
    m.used = oqc_arena_alloc(a, (size_t)(g->ntensors + 1));
    oqc_em_plan_locs(&m);
    Texts tx = {0};
    int qin, qout;
    emit_calls(&m, &tx, &qin, &qout);
    IntIO io = {.qin = qin, .qout = qout, .pre = tx.pre, .post = tx.post, .qh = tx.qh,
                .qc = tx.qc, .pp = opt->preprocess ? &pp : NULL, .pp_c = ch, .pp_h = hh,
                .pp_w = ww};
    if (io.pp && qin >= 0)   /* NAME_run_u8: the tables, with the input's own quantization */
        u8_tables(g, &pp, &io);
    int nconst = m.qbytes > 0;
    for (int t = 0; t < g->ntensors; t++)
        nconst += m.used[t];

    /* The runtime files: those the calls use, what they need, and the extras. */
    FileSet all = {.n = 0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < m.kernels.n; i++)
        rc = oqc_em_set_add(&all, a, m.kernels.name[i], m.threads, d);
    for (int i = 0; rc == 0 && i < opt->nextra; i++)
        rc = oqc_em_set_add(&all, a, opt->extra_runtime[i], m.threads, d);
    size_t act_end = (e->arena_bytes + 63) / 64 * 64;
    size_t arena_total = e->scratch_bytes ? act_end + e->scratch_bytes : e->arena_bytes;

    const char *made[16];
    int nmade = 0;
    OutSet o = {.dir = opt->outdir};
    if (rc == 0)
        rc = oqc_em_make_dirs(a, opt->outdir, made, &nmade, d);
    if (rc == 0)
        rc = write_runtime(&m, &o, &all, d);
    if (rc == 0 && nconst)
        rc = oqc_em_write_weights(&m, &o, model, &io, d);
    if (rc == 0)
        rc = oqc_em_write_make(&m, &o, model, &all, nconst, opt->target, opt->preprocess, io.u8, d);
    if (rc == 0)
        rc = oqc_em_write_header(&m, &o, model, precision, arena_total, &io, d);
    if (rc == 0)
        rc = write_source(&m, &o, model, precision, &all, act_end, nconst, tx.decl,
                          tx.body, &io, d);
    free(tx.decl);
    free(tx.body);
    free(tx.qh);
    free(tx.qc);
    free(tx.pre);
    free(tx.post);
    if (oqc_em_commit(&o, made, nmade, rc, d) < 0)
        return -1;
    if (opt->stats)
        fill_stats(&m, &o, &all, act_end, arena_total, nconst, opt->stats);
    return 0;
}
