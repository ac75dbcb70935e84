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
    if (oqc_out_refuse_input(final, d) < 0)
        return NULL;
    oqc_tmp_add(tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        oqc_tmp_forget(tmp);
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
            if (*nmade < 16) {
                oqc_tmp_add_dir(p);
                made[(*nmade)++] = oqc_arena_strdup(a, p);
            }
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
    const OqcPreprocess *pp; /* the declared preprocessing (--preprocess), or NULL */
    int pp_c, pp_h, pp_w; /* the input's channels, height and width (with pp) */
    int u8;               /* 1: NAME_run_u8 (pixels through u8_table into qin) */
    uint8_t u8_table[3][256]; /* per model channel: pixel -> quantized input (s8 or u8 bits) */
} IntIO;

/* Writes the constants: NAME_weights.h (declarations) and NAME_weights.c. */
static int write_weights(Em *m, OutSet *o, const char *model, const IntIO *io, OqcDiag *d) {
    const OqcGraph *g = m->g;
    const char *nm = m->name;
    FILE *h = out_file(o, m->a, oqc_arena_printf(m->a, "%s_weights.h", nm), d);
    if (!h)
        return -1;
    fprintf(h, "/* Generated by oqc compile from ");
    oqc_em_comment(h, model);
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
        fprintf(h, "extern const %s %s_w%d[%" PRId64 "]; /* '", oqc_em_ctype(tt->dtype), nm, t,
                cnt ? cnt : 1);
        oqc_em_comment(h, tt->name);
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
    oqc_em_comment(c, model);
    fprintf(c, "; do not edit. */\n"
               "/* %s_weights.c - the constants of %s.c, written exactly (C99 hexadecimal\n"
               " * floating literals). */\n"
               "#include \"%s_weights.h\"\n\n#include <math.h>\n", nm, nm, nm);
    for (int t = 0; t < g->ntensors; t++) {
        if (!m->used[t])
            continue;
        const OqcTensor *tt = &g->tensors[t];
        int64_t cnt = oqc_shape_numel(&tt->shape);
        fprintf(c, "\nconst %s %s_w%d[%" PRId64 "] = {", oqc_em_ctype(tt->dtype), nm, t,
                cnt ? cnt : 1);
        if (!cnt)
            fputs("0", c);
        int per = tt->dtype == OQCF_FLOAT || tt->dtype == OQCF_DOUBLE ? 6 : 12;
        for (int64_t i = 0; i < cnt; i++) {
            fputs(i % per ? ", " : i ? ",\n    " : "\n    ", c);
            const void *p = tt->data;
            char buf[48];
            switch (tt->dtype) {
            case OQCF_FLOAT: fputs(oqc_em_flit(buf, sizeof buf, ((const float *)p)[i]), c); break;
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
            case OQCF_INT64: oqc_em_i64(c, ((const int64_t *)p)[i]); break;
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
    oqc_em_comment(h, tt->name);
    fprintf(h, "': f32[%s] */\n", oqc_shape_str(&tt->shape, sh, sizeof sh));
    fprintf(h, "#define %s_%s%d_SIZE %" PRId64 "\n", nm, kind, i, oqc_shape_numel(&tt->shape));
    fprintf(h, "#define %s_%s%d_NAME ", nm, kind, i);
    oqc_em_string_lit(h, tt->name);
    fputc('\n', h);
}

/* The declared preprocessing as macros (what a driver needs to make the input of an
 * image file, see runtime/app/oqc_main.c), and NAME_run_u8's documentation. */
static void put_preprocess(FILE *h, const char *nm, const IntIO *io) {
    const OqcPreprocess *p = io->pp;
    char b[9][48];
    fprintf(h, "/* The input is an image preprocessed as (oqc compile --preprocess; oqc's\n"
               " * docs/images.md): decoded to 8-bit pixels, resized (PIL bilinear) and centre\n"
               " * cropped, color %s, layout %s; pixel p of model channel c is then the\n"
               " * float ((float)p * %s_PP_MUL / %s_PP_DIV - %s_PP_MEAN[c]) / %s_PP_STD[c]. */\n"
               "#define %s_PREPROCESS \"%s\"\n"
               "#define %s_PP_RESIZE %d    /* shorter side to this (0: none) */\n"
               "#define %s_PP_RESIZE_H %d  /* or exactly H x W (0: none) */\n"
               "#define %s_PP_RESIZE_W %d\n"
               "#define %s_PP_CROP_H %d    /* centre crop (0: none) */\n"
               "#define %s_PP_CROP_W %d\n"
               "#define %s_PP_COLOR %d     /* 0 RGB, 1 BGR, 2 gray */\n"
               "#define %s_PP_NHWC %d      /* 0 planar [C][H][W], 1 interleaved [H][W][C] */\n"
               "#define %s_PP_MUL %s\n#define %s_PP_DIV %s\n"
               "#define %s_PP_MEAN {%s, %s, %s}\n#define %s_PP_STD {%s, %s, %s}\n"
               "#define %s_PP_CHANNELS %d  /* the model input's channels, height, width */\n"
               "#define %s_PP_HEIGHT %d\n#define %s_PP_WIDTH %d\n\n",
            p->color == OQC_COLOR_BGR ? "BGR" : p->color == OQC_COLOR_GRAY ? "gray" : "RGB",
            p->nhwc ? "NHWC" : "NCHW", nm, nm, nm, nm, nm, p->spec, nm, p->resize, nm,
            p->resize_h, nm, p->resize_w, nm, p->crop_h, nm, p->crop_w, nm,
            p->color == OQC_COLOR_BGR ? 1 : p->color == OQC_COLOR_GRAY ? 2 : 0, nm, p->nhwc, nm,
            oqc_em_flit(b[0], sizeof b[0], p->mul), nm, oqc_em_flit(b[1], sizeof b[1], p->div),
            nm, oqc_em_flit(b[2], sizeof b[2], p->mean[0]),
            oqc_em_flit(b[3], sizeof b[3], p->mean[1]), oqc_em_flit(b[4], sizeof b[4], p->mean[2]),
            nm, oqc_em_flit(b[5], sizeof b[5], p->std[0]),
            oqc_em_flit(b[6], sizeof b[6], p->std[1]), oqc_em_flit(b[7], sizeof b[7], p->std[2]),
            nm, io->pp_c, nm, io->pp_h, nm, io->pp_w);
    if (io->u8)
        fprintf(h, "/* int %s_run_u8(const uint8_t *pixels, void *out, void *arena);\n"
                   " *     The model on camera bytes, integer-only: `pixels` holds the resized and\n"
                   " *     cropped image, %s_INPUT_SIZE 8-bit values in the model's channel order\n"
                   " *     and layout (those of the float input); each becomes the quantized input\n"
                   " *     %s_run would make of its float value, through a 256-entry table per\n"
                   " *     channel computed by oqc (the scale, mean and std folded in), so the\n"
                   " *     result is %s_run_int8's on those inputs, bit for bit. `out` as for\n"
                   " *     %s_run_int8. */\n", nm, nm, nm, nm, nm);
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
    oqc_em_comment(h, model);
    fputs("; do not edit. */\n", h);
    fprintf(h, "/* %s.h - the model ", nm);
    oqc_em_comment(h, model);
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
    if (io->u8)
        fputs("#include <stdint.h>\n\n", h);
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
               "#define %s_INPUT_SIZE %s_INPUT0_SIZE\n#define %s_OUTPUT_SIZE %s_OUTPUT0_SIZE\n",
            nm, nm, nm, nm);
    for (int k = 0; k < 2; k++) { /* every size, as an array initializer */
        fprintf(h, "#define %s_%s_SIZES {", nm, k ? "OUTPUT" : "INPUT");
        for (int i = 0; i < (k ? g->noutputs : g->ninputs); i++)
            fprintf(h, "%s%s_%s%d_SIZE", i ? ", " : "", nm, k ? "OUTPUT" : "INPUT", i);
        fprintf(h, "}\n");
    }
    fputc('\n', h);
    if (io->qin >= 0) {
        const OqcTensor *qi = &m->g->tensors[io->qin], *qo = &m->g->tensors[io->qout];
        char b1[48], b2[48];
        fprintf(h, "/* Integer I/O (%s_run_int8): storage type and scale of the quantized input\n"
                   " * and output. */\n"
                   "#define %s_INPUT_UNSIGNED %d\n#define %s_INPUT_SCALE %s\n"
                   "#define %s_OUTPUT_UNSIGNED %d\n#define %s_OUTPUT_SCALE %s\n\n",
                nm, nm, qi->dtype == OQCF_UINT8, nm,
                oqc_em_flit(b1, sizeof b1, qi->quant.scale), nm,
                qo->acc ? qo->acc->type == OQCI_U8 : qo->dtype == OQCF_UINT8, nm,
                oqc_em_flit(b2, sizeof b2, qo->quant.scale));
    }
    if (io->pp)
        put_preprocess(h, nm, io);
    if (single)
        fprintf(h, "int %s_run(const float *in, float *out, void *arena);\n", nm);
    fprintf(h, "int %s_run_multi(const float *const *in, float *const *out, void *arena);\n", nm);
    if (io->qin >= 0)
        fprintf(h, "int %s_run_int8(const void *in, void *out, void *arena);\n", nm);
    if (m->threads > 1)
        fprintf(h, "\n/* Threads (oqc compile --threads %d): every conv and gemm, and the loops of\n"
                   " * the other parallel kernels, run as up to %s_THREADS tasks that compute\n"
                   " * disjoint outputs with the arithmetic of one thread (the same bits), each on\n"
                   " * its own slice of the arena's scratch.  By default the tasks run on a pthread\n"
                   " * pool of %s_THREADS threads counting the caller: the workers are started by\n"
                   " * the first run and kept, shared by every model compiled for as many threads.\n"
                   " */\n"
                   "#define %s_THREADS %d\n"
                   "#ifndef OQC_PARALLEL_FOR_FN_DEFINED\n#define OQC_PARALLEL_FOR_FN_DEFINED\n"
                   "/* A parallel-for: calls task(arg, i) exactly once for every i in [0, n), in\n"
                   " * any order, on any threads (the caller's included), and returns when every\n"
                   " * call has returned. */\n"
                   "typedef void (*oqc_parallel_for_fn)(void *ctx,\n"
                   "                                    void (*task)(void *arg, int i),\n"
                   "                                    void *arg, int n);\n#endif\n"
                   "/* Runs the tasks on fn(ctx, ...) (an application's thread pool, OpenMP, ...)\n"
                   " * instead of the default threads; fn NULL: on the calling thread.  Set it\n"
                   " * before the runs, never while one runs. */\n"
                   "void %s_set_parallel(oqc_parallel_for_fn fn, void *ctx);\n",
                m->threads, nm, nm, nm, m->threads, nm);
    if (io->u8)
        fprintf(h, "int %s_run_u8(const uint8_t *pixels, void *out, void *arena);\n", nm);
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
    FILE *c = out_file(o, m->a, oqc_arena_printf(m->a, "%s.c", nm), d);
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

static int write_make(Em *m, OutSet *o, const char *model, const FileSet *all, int nconst,
                      const char *target, const char *preprocess, int u8, OqcDiag *d) {
    const char *nm = m->name;
    char srcs[4096];
    size_t len = (size_t)snprintf(srcs, sizeof srcs, "%s.c%s%s", nm, nconst ? " " : "",
                                  nconst ? oqc_arena_printf(m->a, "%s_weights.c", nm) : "");
    for (int i = 0; i < all->n && len < sizeof srcs; i++)
        if (strlen(all->name[i]) > 2 && !strcmp(all->name[i] + strlen(all->name[i]) - 2, ".c"))
            len += (size_t)snprintf(srcs + len, sizeof srcs - len, " %s", all->name[i]);
    OQC_ASSERT(len < sizeof srcs);
    const char *tflags = oqc_target_flags(target);
    /* (threads: oqcf_threads.c is C11 with pthreads) */
    const char *flags = oqc_arena_printf(m->a, "-std=%s -O2 -ffp-contract=off%s%s%s",
                                         m->threads > 1 ? "c11" : "c99",
                                         m->threads > 1 ? " -pthread" : "",
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
               "# bits; without flags, x86-64 gcc/clang builds choose the CPU's best at run time\n"
               "# and other compilers and CPUs build the portable C.  Compile every\n"
               "# source with the same flags: the files of one kernel library (the INT8 conv's\n"
               "# oqci_conv*.c) must agree on the instruction sets compiled in, or the link fails.\n"
               "%s_CFLAGS := %s\n"
               "%s_SRCS := %s\n", nm, nm, nm, flags, srcs, target ? target : oqc_default_target(),
            tflags && *tflags ? tflags : "no flags", nm, flags, nm, srcs);
    if (out_close(f, "NAME.mk", d) < 0)
        return -1;
    FILE *r = out_file(o, m->a, "README.md", d);
    if (!r)
        return -1;
    /* the runtime families this output holds: oqcf_ (FP32 kernels, the thread-pool
     * stand-in), oqci_ (INT8 kernels) */
    int has_f = 0, has_i = 0;
    for (int i = 0; i < all->n; i++) {
        has_f |= !strncmp(all->name[i], "oqcf_", 5) || !strcmp(all->name[i], "oqcf.h");
        has_i |= !strncmp(all->name[i], "oqci_", 5) || !strcmp(all->name[i], "oqci.h");
    }
    const char *runtime = has_f && has_i ? "`oqcf_*` (FP32) and `oqci_*` (INT8)"
                        : has_i          ? "`oqci_*` (INT8)"
                                         : "`oqcf_*` (FP32)";
    fputs("<!-- Generated by oqc compile from ", r);
    for (const char *p = model; *p; p++)
        fputc(*p == '\n' || *p == '>' ? ' ' : *p, r);
    fprintf(r, "; do not edit. -->\n"
               "# %s: %s compiled to C\n\n"
               "%s"
               "- `%s.h`: the API (`%s_run`, `%s_run_multi`, `%s_ARENA_BYTES`, input and\n"
               "  output sizes); read its comments.\n"
               "- `%s.c`: the kernel calls; `%s_weights.c`: the constants (if any);\n"
               "  %s: copies of oqc's runtime kernels.\n"
               "- `%s.mk`: the source list as a Makefile fragment (`%s_SRCS`).\n\n"
               "Build with any %s compiler, e.g.\n\n"
               "    cc %s -I. main.c %s -lm -o app\n\n"
               "with the same flags for every source (the files of one kernel library, such as\n"
               "the INT8 conv's `oqci_conv*.c`, one per instruction set, must agree on the\n"
               "instruction sets compiled in: a mismatch fails at link time, on an undefined\n"
               "`oqcik_cfg_...` symbol), and call it:\n\n"
               "    #include \"%s.h\"\n"
               "    static float in[%s_INPUT_SIZE], out[%s_OUTPUT_SIZE];\n"
               "    int status = %s_run%s(%s, NULL); /* NULL: internal arena */\n\n"
               "See oqc's docs/compile.md for the details.\n",
            nm, model,
            m->threads > 1
                ? oqc_arena_printf(m->a,
                      "Self-contained C code generated by `oqc compile --threads %d`: no\n"
                      "allocation in a run, no dependency beyond the C standard library, libm and\n"
                      "pthreads (`oqcf_threads.c`: C11, started by the first run; "
                      "`%s_set_parallel`\n"
                      "in `%s.h` runs the layers on a parallel-for of your own instead).\n\n",
                      m->threads, nm, nm)
                : "Self-contained C99 code generated by `oqc compile`: no allocation, no threads,\n"
                  "no dependency beyond the C standard library and libm.\n\n",
            nm, nm, nm, nm, nm, nm, runtime, nm, nm, m->threads > 1 ? "C11" : "C99", flags, srcs,
            nm, nm, nm, nm, m->g->ninputs == 1 && m->g->noutputs == 1 ? "" : "_multi",
            m->g->ninputs == 1 && m->g->noutputs == 1 ? "in, out" : "ins, outs");
    if (preprocess)
        fprintf(r, "\n## Input preprocessing\n\n"
                   "The model takes images preprocessed as (oqc's docs/images.md):\n\n"
                   "    %s\n\n"
                   "Decode to 8-bit pixels, resize (PIL bilinear) and centre-crop as given, then\n"
                   "x = pixel * scale, (x - mean) / std per channel, in the layout given.\n"
                   "`%s.h` has the spec as macros (`%s_PREPROCESS`, `%s_PP_*`)%s.\n",
                preprocess, nm, nm, nm, u8 ? oqc_arena_printf(m->a, ";\n`%s_run_u8` takes the "
                "cropped image as 8-bit pixels in the model's channel order and\nlayout (no "
                "float arithmetic: the normalisation is folded into its input quantization)", nm)
                   : "");
    return out_close(r, "README.md", d);
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
    int bad = 0;
    OqcPreprocess pp;
    int ch = 0, hh = 0, ww = 0;
    if (opt->preprocess) {
        if (oqc_preprocess_parse(opt->preprocess, &pp, d) < 0)
            return -1;
        if (g->ninputs != 1)
            bad += oqc_err(d, "%s: --preprocess: the model has %d inputs; image preprocessing "
                              "is for models with one", g->path, g->ninputs) < 0;
        else if (oqc_image_geometry(&pp, &g->tensors[g->inputs[0]].shape, &ch, &hh, &ww, d) < 0)
            bad++;
    }
    if (bad)
        return -1;

    m.loc = oqc_arena_alloc(a, (size_t)(g->ntensors + 1) * sizeof *m.loc);
    m.used = oqc_arena_alloc(a, (size_t)(g->ntensors + 1));
    oqc_em_plan_locs(&m);
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
        if (it->nconsumers == 1 && oqc_em_q_boundary(&m, it->consumers[0]) && ot->producer >= 0 &&
            oqc_em_q_boundary(&m, ot->producer)) {
            qin = g->nodes[it->consumers[0]].out[0];
            qout = g->nodes[ot->producer].in[0];
            m.pre = open_memstream(&pre, &pre_len);
            m.post = open_memstream(&post, &post_len);
            if (!m.pre || !m.post)
                oqc_panic(__FILE__, __LINE__, "out of memory");
        }
    }
    for (int i = 0; i < g->nnodes; i++)
        oqc_em_node(&m, i);
    for (int i = 0; i < g->noutputs; i++)
        oqc_em_ptr(&m, g->outputs[i]); /* marks constant outputs as used */
    static const char *const pool_files[] = {"oqcf_pool.c", "oqcf_threads.c"};
    for (int i = 0; m.threads > 1 && i < 2; i++)   /* NAME.c's pool (write_source) */
        if (!oqc_em_set_has(&m.kernels, pool_files[i]))
            m.kernels.name[m.kernels.n++] = pool_files[i];
    fclose(m.decl);
    fclose(m.body);
    fclose(m.qh);
    fclose(m.qc);
    if (m.pre) {
        fclose(m.pre);
        fclose(m.post);
    }
    IntIO io = {qin, qout, pre, post, qh, qc, opt->preprocess ? &pp : NULL, ch, hh, ww, 0,
                {{0}}};
    if (io.pp && qin >= 0) {   /* NAME_run_u8: the tables, with the input's own quantization */
        const OqcQNode *q = g->nodes[g->tensors[g->inputs[0]].consumers[0]].q;
        io.u8 = 1;
        for (int c = 0; c < ch; c++) {
            float v[256];
            for (int p = 0; p < 256; p++)
                v[p] = oqc_img_value((unsigned char)p, pp.mul, pp.div, pp.mean[c], pp.std[c]);
            OQC_ASSERT(oqci_quantize(v, io.u8_table[c], q->out_type, 256, q->scale) == 0);
        }
    }
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
        rc = make_dirs(a, opt->outdir, made, &nmade, d);
    if (rc == 0)
        rc = write_runtime(&m, &o, &all, d);
    if (rc == 0 && nconst)
        rc = write_weights(&m, &o, model, &io, d);
    if (rc == 0)
        rc = write_make(&m, &o, model, &all, nconst, opt->target, opt->preprocess, io.u8, d);
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
    for (int i = 0; i < o.n; i++)
        oqc_tmp_forget(o.tmp[i]);
    for (int i = nmade - 1; i >= 0; i--)
        oqc_tmp_forget(made[i]);
    if (rc < 0) {
        for (int i = 0; i < o.n; i++)
            remove(i < renamed - 1 ? o.final[i] : o.tmp[i]);
        for (int i = nmade - 1; i >= 0; i--)
            rmdir(made[i]);
        return -1;
    }
    for (int i = 0; i < o.n; i++)
        oqc_out_done(o.final[i]);
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
        const char **files = oqc_arena_alloc(a, (size_t)(o.n + 1) * sizeof *files);
        memcpy(files, o.final, (size_t)o.n * sizeof *files);
        opt->stats->files = files;
        opt->stats->nruntime = all.n;
    }
    return 0;
}
