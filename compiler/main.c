/* main.c - the oqc command-line driver.
 *
 *   oqc dump MODEL [--format text|xml|dot] [-o FILE] [--input-shape NAME=DIMS]...
 *   oqc check MODEL [--input-shape NAME=DIMS]...
 *   oqc run MODEL --input [NAME=]FILE... [-o OUT] [--input-shape NAME=DIMS]... [--threads N]
 *   oqc compile MODEL -o OUTDIR [--name NAME] [--precision int8|fp32] ...
 *   oqc help [COMMAND] | oqc --version
 *
 * Each command is a function taking its arguments and an OqcDiag; user errors come
 * back as -1 with messages in the diag, which main prints before exiting 1. Output
 * files are written to a temporary name beside the target and renamed only when
 * complete, so a failed command never leaves a partial file that looks finished. */
#include "ir.h"
#include "passes.h"
#include "usage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OQC_VERSION "0.1.0" /* keep equal to oqc_version() in api.c */

/* Options shared by the commands. */
typedef struct Opts {
    const char *model;            /* MODEL argument */
    const char *out;              /* -o FILE (NULL: stdout) */
    const char *format;           /* --format */
    OqcInputShape shapes[16];     /* --input-shape, in order */
    int nshapes;                  /* number of --input-shape */
    int verbose;                  /* -v count */
    int quiet;                    /* -q */
    const char *inputs[16];       /* --input [NAME=]FILE, in order */
    int ninputs;                  /* number of --input */
    int threads;                  /* --threads (0: default) */
    const char *labels;           /* --labels FILE (.npy of int64/int32 class ids) */
    const char *after;            /* dump --after PASS|all */
    const char *passes;           /* --passes LIST */
    const char *disable;          /* --disable-pass LIST (repeatable: joined) */
    int no_opt;                   /* --no-opt */
    const char *data[64];         /* calibrate --data PATH (repeatable) */
    int ndata;                    /* number of --data */
    const char *method;           /* calibrate --method */
    int bins;                     /* calibrate --bins */
    const char *report;           /* calibrate --report FILE.html */
    const char *table;            /* --table FILE (imported thresholds) */
    int batch;                    /* calibrate --batch N */
    const char *calib[64];        /* compile/eval --calib PATH (repeatable) */
    int ncalib;                   /* number of --calib */
    const char *requant;          /* --requant float|fixed */
    int weight_bits;              /* --weight-bits N (2..8; 0: not given, 8) */
    const char *fp32_nodes;       /* --fp32-nodes NAME,... */
    const char *target;           /* compile --target FAMILY */
    const char *save_int8;        /* eval --save-int8 FILE.npy */
    const char *save_fp32;        /* eval --save-fp32 FILE.npy */
    long long limit;              /* eval --limit N (0: every sample) */
    const char *precision;        /* compile --precision int8|fp32 */
    const char *name;             /* compile --name NAME */
    char disable_buf[512];        /* storage for joined --disable-pass values */
} Opts;

/* An output file being written (oqc_out_open), or standard output. */
typedef struct OutFile {
    FILE *f;            /* stream to write */
    OqcOutFile file;    /* the file, when not stdout */
} OutFile;

static int out_open(OutFile *o, const char *path, OqcDiag *d) {
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    if (oqc_out_open(&o->file, path, d) < 0)
        return -1;
    o->f = o->file.f;
    return 0;
}

/* Finishes the output: in place when ok, else nothing left behind. */
static int out_close(OutFile *o, int ok, OqcDiag *d) {
    if (o->f == stdout) {
        if (fflush(stdout) != 0 && ok)
            return oqc_err(d, "error writing standard output: %s", strerror(errno));
        return ok ? 0 : -1;
    }
    if (!o->f)
        return -1;
    return oqc_out_commit(&o->file, ok, d);
}

/* Parses the options a command accepts (allowed: string of option letters/names). */
static int parse_opts(int argc, char **argv, const char *cmd, const char *const *allowed,
                      Opts *o, OqcDiag *d) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (a[0] != '-' || !a[1]) {
            if (o->model)
                return oqc_err(d, "oqc %s: unexpected argument '%s' (the model is already "
                                  "'%s')", cmd, a, o->model);
            o->model = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        int ok = 0;
        for (const char *const *p = allowed; *p; p++)
            ok |= !strcmp(*p, name);
        if (!ok)
            return oqc_err(d, "oqc %s: unknown option '%s' (see `oqc help %s`)", cmd, name,
                           cmd);
        if (!strcmp(name, "-v")) {
            o->verbose++;
            continue;
        }
        if (!strcmp(name, "-q")) {
            o->quiet = 1;
            continue;
        }
        if (!strcmp(name, "--no-opt")) {
            o->no_opt = 1;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return oqc_err(d, "oqc %s: option '%s' needs a value", cmd, name);
            val = argv[++i];
        }
        if (!strcmp(name, "-o")) {
            o->out = val;
        } else if (!strcmp(name, "--format")) {
            o->format = val;
        } else if (!strcmp(name, "--data")) {
            if (o->ndata == (int)(sizeof o->data / sizeof o->data[0]))
                return oqc_err(d, "oqc %s: too many --data options", cmd);
            o->data[o->ndata++] = val;
        } else if (!strcmp(name, "--method")) {
            o->method = val;
        } else if (!strcmp(name, "--bins")) {
            char *end;
            long b = strtol(val, &end, 10);
            if (*end || b < 128 || b > (1 << 20))
                return oqc_err(d, "oqc %s: --bins '%s' must be a number from 128 to 1048576",
                               cmd, val);
            o->bins = (int)b;
        } else if (!strcmp(name, "--batch")) {
            char *end;
            long b = strtol(val, &end, 10);
            if (*end || b < 1 || b > 4096)
                return oqc_err(d, "oqc %s: --batch '%s' must be a number from 1 to 4096", cmd,
                               val);
            o->batch = (int)b;
        } else if (!strcmp(name, "--report")) {
            o->report = val;
        } else if (!strcmp(name, "--calib")) {
            if (o->ncalib == (int)(sizeof o->calib / sizeof o->calib[0]))
                return oqc_err(d, "oqc %s: too many --calib options", cmd);
            o->calib[o->ncalib++] = val;
        } else if (!strcmp(name, "--requant")) {
            if (strcmp(val, "float") && strcmp(val, "fixed"))
                return oqc_err(d, "oqc %s: --requant '%s': expected float or fixed", cmd, val);
            o->requant = val;
        } else if (!strcmp(name, "--weight-bits")) {
            char *end;
            long b = strtol(val, &end, 10);
            if (*end || end == val || b < 2 || b > 8)
                return oqc_err(d, "oqc %s: --weight-bits '%s' must be a number from 2 to 8",
                               cmd, val);
            o->weight_bits = (int)b;
        } else if (!strcmp(name, "--precision")) {
            o->precision = val;
        } else if (!strcmp(name, "--name")) {
            o->name = val;
        } else if (!strcmp(name, "--target")) {
            if (!oqc_target_flags(val))
                return oqc_err(d, "oqc %s: unknown --target '%s' (native, portable, avx2, "
                                  "avxvnni, avx512vnni, amx, neondot or dispatch)", cmd, val);
            o->target = val;
        } else if (!strcmp(name, "--fp32-nodes")) {
            o->fp32_nodes = val;
        } else if (!strcmp(name, "--save-int8")) {
            o->save_int8 = val;
        } else if (!strcmp(name, "--save-fp32")) {
            o->save_fp32 = val;
        } else if (!strcmp(name, "--limit")) {
            char *end;
            long long v = strtoll(val, &end, 10);
            if (*end || v < 1)
                return oqc_err(d, "oqc %s: --limit '%s' must be a positive number", cmd, val);
            o->limit = v;
        } else if (!strcmp(name, "--table")) {
            o->table = val;
        } else if (!strcmp(name, "--after")) {
            o->after = val;
        } else if (!strcmp(name, "--passes")) {
            o->passes = val;
        } else if (!strcmp(name, "--disable-pass")) {
            size_t used = strlen(o->disable_buf);
            if (used + strlen(val) + 2 > sizeof o->disable_buf)
                return oqc_err(d, "oqc %s: --disable-pass lists are too long", cmd);
            snprintf(o->disable_buf + used, sizeof o->disable_buf - used, "%s%s",
                     used ? "," : "", val);
            o->disable = o->disable_buf;
        } else if (!strcmp(name, "--labels")) {
            o->labels = val;
        } else if (!strcmp(name, "--input")) {
            if (o->ninputs == (int)(sizeof o->inputs / sizeof o->inputs[0]))
                return oqc_err(d, "oqc %s: too many --input options", cmd);
            o->inputs[o->ninputs++] = val;
        } else if (!strcmp(name, "--threads")) {
            char *end;
            long t = strtol(val, &end, 10);
            if (*end || t < 1 || t > 64)
                return oqc_err(d, "oqc %s: --threads '%s' must be a number from 1 to 64", cmd,
                               val);
            o->threads = (int)t;
        } else if (!strcmp(name, "--input-shape")) {
            if (o->nshapes == (int)(sizeof o->shapes / sizeof o->shapes[0]))
                return oqc_err(d, "oqc %s: too many --input-shape options", cmd);
            if (oqc_parse_input_shape(val, &o->shapes[o->nshapes], d) < 0)
                return -1;
            o->nshapes++;
        }
    }
    if (!o->model)
        return oqc_err(d, "oqc %s: missing MODEL argument\n%s", cmd, oqc_usage(cmd));
    return 0;
}

static void free_opts(Opts *o) {
    for (int i = 0; i < o->nshapes; i++)
        free((void *)o->shapes[i].name);
}

/* Runs the pass pipeline as the options say: everything (or --passes) minus
 * --disable-pass, stopping after --after PASS when given; nothing with --no-opt. */
static int optimize(OqcGraph *g, const Opts *o, OqcDiag *d) {
    if (o->no_opt)
        return 0;
    d->verbose = o->verbose;
    const char *only = o->passes;
    char prefix[512] = "";
    if (o->after && strcmp(o->after, "all") != 0) {
        const OqcPass *stop = oqc_pass_find(o->after);
        int n;
        const OqcPass *list = oqc_pipeline(&n);
        if (!stop) {
            char names[256] = "";
            for (int i = 0; i < n; i++) {
                strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, list[i].name, sizeof names - strlen(names) - 1);
            }
            return oqc_err(d, "--after: unknown pass '%s' (passes: %s, or all)", o->after, names);
        }
        for (const char *p = o->passes; p && *p;) { /* --passes names must exist */
            const char *comma = strchr(p, ',');
            char one[64];
            snprintf(one, sizeof one, "%.*s", comma ? (int)(comma - p) : (int)strlen(p), p);
            if (!oqc_pass_find(one))
                return oqc_err(d, "--passes: unknown pass '%s'", one);
            p = comma ? comma + 1 : NULL;
        }
        for (int i = 0; i < n; i++) {
            int selected = !o->passes;
            for (const char *p = o->passes; p && *p && !selected;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                selected = len == strlen(list[i].name) && !strncmp(p, list[i].name, len);
                p = comma ? comma + 1 : NULL;
            }
            if (selected) {
                strncat(prefix, prefix[0] ? "," : "", sizeof prefix - strlen(prefix) - 1);
                strncat(prefix, list[i].name, sizeof prefix - strlen(prefix) - 1);
            }
            if (&list[i] == stop)
                break;
        }
        if (!prefix[0])
            return oqc_err(d, "--after %s: that pass is not selected by --passes %s", o->after,
                           o->passes);
        only = prefix;
    }
    return oqc_run_passes(g, only, o->disable, NULL, NULL, d);
}

static int cmd_dump(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--format", "--input-shape", "--after",
                                          "--passes", "--disable-pass", "-v", "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "dump", allowed, &o, d);
    OqcDumpFormat fmt = OQC_DUMP_TEXT;
    if (rc == 0 && o.format) {
        if (!strcmp(o.format, "text"))
            fmt = OQC_DUMP_TEXT;
        else if (!strcmp(o.format, "xml"))
            fmt = OQC_DUMP_XML;
        else if (!strcmp(o.format, "dot"))
            fmt = OQC_DUMP_DOT;
        else
            rc = oqc_err(d, "oqc dump: unknown --format '%s' (text, xml or dot)", o.format);
    }
    OqcGraph *g = rc == 0 ? oqc_prepare(o.model, o.shapes, o.nshapes, o.after != NULL, d) : NULL;
    if (g && o.after && optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (g) {
        OutFile out;
        if (out_open(&out, o.out, d) == 0) {
            int ok;
            if (fmt == OQC_DUMP_XML) {
                char *data_path = NULL;
                const char *ref = NULL;
                if (out.file.path) {
                    size_t n = strlen(out.file.path) + 8;
                    data_path = malloc(n);
                    if (!data_path)
                        oqc_panic(__FILE__, __LINE__, "out of memory");
                    snprintf(data_path, n, "%s.data", out.file.path);
                    ref = strrchr(data_path, '/') ? strrchr(data_path, '/') + 1 : data_path;
                }
                ok = oqc_dump_xml(g, out.f, data_path, ref, d) == 0;
                free(data_path);
            } else if (fmt == OQC_DUMP_DOT) {
                ok = oqc_dump_dot(g, out.f) == 0;
            } else {
                ok = oqc_dump_text(g, out.f) == 0;
            }
            rc = out_close(&out, ok, d);
        } else {
            rc = -1;
        }
        oqc_graph_free(g);
    } else {
        rc = -1;
    }
    free_opts(&o);
    return rc;
}

static int cmd_check(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--input-shape", "--passes", "--disable-pass",
                                          "--no-opt", "-v", "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "check", allowed, &o, d);
    OqcExec *e = NULL;
    OqcGraph *g = rc == 0 ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (g && optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (g && !(e = oqc_exec_new(g, 1, d))) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (g) {
        oqc_exec_free(e);
        if (!o.quiet)
            printf("%s: ok: %d nodes, %d inputs, %d outputs, every op supported\n", o.model,
                   g->nnodes, g->ninputs, g->noutputs);
        oqc_graph_free(g);
    } else {
        rc = -1;
    }
    free_opts(&o);
    return rc;
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* Writes top-5 of each of the first samples of a [S, C] float output. */
static void print_top5(const float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows && r < 4; r++) {
        const float *p = y + r * cols;
        int best[5];
        int nb = 0;
        for (int64_t c = 0; c < cols; c++) {
            int pos = nb < 5 ? nb++ : 5;
            while (pos > 0 && p[c] > p[best[pos - 1]]) {
                if (pos < 5)
                    best[pos] = best[pos - 1];
                pos--;
            }
            if (pos < 5)
                best[pos] = (int)c;
        }
        printf("  sample %lld top-5:", (long long)r);
        for (int i = 0; i < nb; i++)
            printf(" %d (%.6g)", best[i], p[best[i]]);
        printf("\n");
    }
    if (rows > 4)
        printf("  ... (%lld samples)\n", (long long)rows);
}

/* Top-1 accuracy of a [S, C] float output against S class ids. */
static int print_accuracy(const char *path, const OqcValue *y, OqcArena *a, OqcDiag *d) {
    OqcValue lab;
    if (oqc_npy_read(path, a, &lab, d) < 0)
        return -1;
    int64_t n = oqc_shape_numel(&lab.shape);
    int64_t cols = y->shape.rank > 0 ? y->shape.d[y->shape.rank - 1] : 0;
    if (y->dtype != OQCF_FLOAT || cols < 2 || oqc_shape_numel(&y->shape) != n * cols)
        return oqc_err(d, "%s: %lld labels do not match the first output (%lld values of "
                          "%lld classes)", path, (long long)n,
                       (long long)oqc_shape_numel(&y->shape), (long long)cols);
    if (lab.dtype != OQCF_INT64 && lab.dtype != OQCF_INT32)
        return oqc_err(d, "%s: labels must be int64 or int32, not %s", path,
                       oqc_dtype_name(lab.dtype));
    int64_t correct = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *p = (const float *)y->data + i * cols;
        int64_t best = 0;
        for (int64_t c = 1; c < cols; c++)
            if (p[c] > p[best])
                best = c;
        int64_t want = lab.dtype == OQCF_INT64 ? ((const int64_t *)lab.data)[i]
                                               : ((const int32_t *)lab.data)[i];
        correct += best == want;
    }
    printf("top-1 accuracy: %.4f (%lld of %lld)\n", (double)correct / (double)(n ? n : 1),
           (long long)correct, (long long)n);
    return 0;
}

static int cmd_run(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--input", "--input-shape", "--threads",
                                          "--labels", "--passes", "--disable-pass",
                                          "--no-opt", "-v", "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "run", allowed, &o, d);
    OqcGraph *g = NULL;
    OqcExec *e = NULL;
    if (rc == 0 && o.ninputs == 0)
        rc = oqc_err(d, "oqc run: give the input data with --input [NAME=]FILE");
    if (rc == 0)
        g = oqc_prepare(o.model, o.shapes, o.nshapes, 1, d);
    if (g && optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (!g) {
        free_opts(&o);
        return -1;
    }
    OqcArena *a = g->arena;
    if (o.ninputs != g->ninputs)
        rc = oqc_err(d, "%s: the model has %d input(s) but %d --input given", o.model,
                     g->ninputs, o.ninputs);
    OqcValue *vals = oqc_arena_alloc(a, (size_t)(g->ninputs + 1) * sizeof *vals);
    int64_t samples = -1;
    for (int i = 0; rc == 0 && i < o.ninputs; i++) {
        const char *arg = o.inputs[i], *eq = strchr(arg, '=');
        int slot = i;
        if (eq) {
            char *name = oqc_arena_strndup(a, arg, (size_t)(eq - arg));
            int t = oqc_tensor_find(g, name);
            for (slot = 0; slot < g->ninputs && g->inputs[slot] != t; slot++)
                ;
            if (slot == g->ninputs) {
                rc = oqc_err(d, "%s: --input names '%s', which is not a graph input", o.model,
                             name);
                break;
            }
            arg = eq + 1;
        }
        const OqcTensor *in = &g->tensors[g->inputs[slot]];
        int64_t s;
        if (oqc_tensor_read(arg, &in->shape, a, &vals[slot], d) < 0 ||
            oqc_samples_of(arg, &vals[slot], &in->shape, &s, d) < 0) {
            rc = -1;
            break;
        }
        if (vals[slot].dtype != in->dtype) {
            rc = oqc_err(d, "%s: holds %s data but input '%s' is %s", arg,
                         oqc_dtype_name(vals[slot].dtype), in->name, oqc_dtype_name(in->dtype));
            break;
        }
        if (samples >= 0 && s != samples) {
            rc = oqc_err(d, "%s: holds %lld samples but another input holds %lld", arg,
                         (long long)s, (long long)samples);
            break;
        }
        samples = s;
    }
    if (rc == 0)
        e = oqc_exec_new(g, o.threads ? o.threads : default_threads(), d);
    if (rc == 0 && !e)
        rc = -1;
    OqcValue *outs = oqc_arena_alloc(a, (size_t)(g->noutputs + 1) * sizeof *outs);
    for (int i = 0; rc == 0 && i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        outs[i].dtype = t->dtype;
        outs[i].shape = t->shape;
        if (samples > 1) { /* stack on a new leading axis, or on the batch axis */
            int stacked_on_batch = vals[0].shape.rank == g->tensors[g->inputs[0]].shape.rank;
            if (stacked_on_batch && t->shape.rank > 0) {
                outs[i].shape.d[0] *= samples;
            } else {
                for (int k = outs[i].shape.rank; k > 0; k--)
                    outs[i].shape.d[k] = outs[i].shape.d[k - 1];
                outs[i].shape.d[0] = samples;
                outs[i].shape.rank++;
            }
        }
        outs[i].nbytes = (size_t)oqc_shape_numel(&outs[i].shape) * oqcf_dtype_size(t->dtype);
        outs[i].data = oqc_arena_alloc_raw(a, outs[i].nbytes + 1);
    }
    const void **inp = oqc_arena_alloc(a, (size_t)(g->ninputs + 1) * sizeof *inp);
    void **outp = oqc_arena_alloc(a, (size_t)(g->noutputs + 1) * sizeof *outp);
    for (int64_t s = 0; rc == 0 && s < samples; s++) {
        for (int i = 0; i < g->ninputs; i++)
            inp[i] = (const char *)vals[i].data + (size_t)s * (vals[i].nbytes / (size_t)samples);
        for (int i = 0; i < g->noutputs; i++)
            outp[i] = (char *)outs[i].data + (size_t)s * (outs[i].nbytes / (size_t)samples);
        rc = oqc_exec_run(e, inp, outp, d);
    }
    for (int i = 0; rc == 0 && !o.quiet && i < g->noutputs; i++) {
        char buf[128];
        const OqcValue *v = &outs[i];
        printf("output '%s': %s[%s]\n", g->tensors[g->outputs[i]].name, oqc_dtype_name(v->dtype),
               oqc_shape_str(&v->shape, buf, sizeof buf));
        int64_t cols = v->shape.rank > 0 ? v->shape.d[v->shape.rank - 1] : 0;
        if (v->dtype == OQCF_FLOAT && v->shape.rank <= 2 && cols >= 2)
            print_top5(v->data, oqc_shape_numel(&v->shape) / cols, cols);
    }
    if (rc == 0 && o.labels)
        rc = print_accuracy(o.labels, &outs[0], a, d);
    if (rc == 0 && o.out) {
        if (g->noutputs == 1) {
            rc = oqc_npy_write(o.out, &outs[0], d);
        } else {
            if (mkdir(o.out, 0777) != 0 && errno != EEXIST)
                rc = oqc_err(d, "%s: cannot create directory: %s", o.out, strerror(errno));
            for (int i = 0; rc == 0 && i < g->noutputs; i++) {
                char *nm = oqc_arena_strdup(a, g->tensors[g->outputs[i]].name);
                for (char *p = nm; *p; p++)
                    if (*p == '/' || *p == '\\' || *p == ':')
                        *p = '_';
                rc = oqc_npy_write(oqc_arena_printf(a, "%s/%s.npy", o.out, nm), &outs[i], d);
            }
        }
    }
    oqc_exec_free(e);
    oqc_graph_free(g);
    free_opts(&o);
    return rc;
}

/* Reads a table by extension: .xml is the XML form, anything else a TRT cache. */
static int read_table(const char *path, OqcArena *a, OqcCalibEntry **e, int *n, OqcDiag *d) {
    size_t len = strlen(path);
    int64_t samples;
    if (len > 4 && !strcmp(path + len - 4, ".xml"))
        return oqc_table_read_xml(path, a, e, n, &samples, d);
    return oqc_table_read_trt(path, a, e, n, d);
}

static int cmd_calibrate(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--method", "--bins", "-o", "--format",
                                          "--report", "--table", "--input-shape", "--threads",
                                          "--batch",
                                          "--passes", "--disable-pass", "--no-opt", "-v",
                                          "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "calibrate", allowed, &o, d);
    OqcCalibOptions co = {.method = OQC_CALIB_ENTROPY, .method_name = "entropy", .bins = 2048};
    int xml = 0;
    if (rc == 0 && o.ndata == 0)
        rc = oqc_err(d, "oqc calibrate: give the calibration data with --data PATH");
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc calibrate: give the output table with -o TABLE");
    if (rc == 0 && o.format && strcmp(o.format, "trt") && strcmp(o.format, "xml"))
        rc = oqc_err(d, "oqc calibrate: unknown --format '%s' (trt or xml)", o.format);
    xml = o.format && !strcmp(o.format, "xml");
    if (rc == 0 && o.method) {
        rc = oqc_calib_method_parse(o.method, &co.method, &co.param, d);
        co.method_name = o.method;
    }
    OqcGraph *g = rc == 0 ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (g && optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    OqcGraph *gb = NULL; /* the same model re-batched for --batch N */
    if (g && o.batch > 1) {
        gb = oqc_prepare(o.model, o.shapes, o.nshapes, 1, d);
        if (!gb || oqc_rebatch(gb, o.batch, d) < 0 || optimize(gb, &o, d) < 0) {
            oqc_graph_free(gb);
            oqc_graph_free(g);
            g = NULL;
        }
    }
    if (!g) {
        free_opts(&o);
        return -1;
    }
    co.data = o.data;
    co.ndata = o.ndata;
    if (o.bins)
        co.bins = o.bins;
    co.threads = o.threads ? o.threads : default_threads();
    co.progress = !o.quiet && isatty(2);
    OqcCalibEntry *table = NULL, *es = NULL;
    int ntable = 0, n = 0;
    int64_t samples = 0;
    if (o.table && read_table(o.table, g->arena, &table, &ntable, d) < 0)
        rc = -1;
    co.table = table;
    co.ntable = ntable;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rc == 0)
        rc = oqc_calibrate(g, gb, o.batch, &co, &es, &n, &samples, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc == 0)
        rc = xml ? oqc_table_write_xml(o.out, es, n, samples, d)
                 : oqc_table_write_trt(o.out, co.method == OQC_CALIB_MAX ? "MinMax" : "Entropy",
                                       es, n, d);
    if (rc == 0 && o.report)
        rc = oqc_calib_report(o.report, o.model, es, n, samples, d);
    if (rc == 0 && !o.quiet)
        printf("calibrated %d tensors over %lld samples (%s) in %.2f s; table: %s%s%s\n", n,
               (long long)samples, co.method_name,
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
               o.out, o.report ? "; report: " : "", o.report ? o.report : "");
    oqc_graph_free(gb);
    oqc_graph_free(g);
    free_opts(&o);
    return rc;
}

/* The INT8 lowering of o->model: optimised, calibrated over --calib data and/or a
 * --table, quantized with --requant/--fp32-nodes (see lower.c).  cfg must outlive
 * the graph. */
static OqcGraph *build_int8(const char *cmd, const Opts *o, OqcQuantConfig *cfg, OqcDiag *d) {
    if (o->ncalib == 0 && !o->table) {
        oqc_err(d, "oqc %s: INT8 needs thresholds: give calibration data with --calib PATH "
                   "or a table with --table FILE", cmd);
        return NULL;
    }
    OqcCalibOptions co = {.method = OQC_CALIB_ENTROPY, .method_name = "entropy", .bins = 2048};
    if (o->method) {
        if (oqc_calib_method_parse(o->method, &co.method, &co.param, d) < 0)
            return NULL;
        co.method_name = o->method;
    }
    cfg->requant = o->requant && !strcmp(o->requant, "fixed") ? OQCI_REQ_FIXED
                                                              : OQCI_REQ_FLOAT;
    cfg->fp32_nodes = o->fp32_nodes;
    cfg->weight_bits = o->weight_bits;   /* (0: 8, oqc_weight_bits) */
    OqcGraph *g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    if (g && optimize(g, o, d) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    OqcGraph *gb = NULL;
    if (g && o->batch > 1 && o->ncalib > 0) {
        gb = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
        if (!gb || oqc_rebatch(gb, o->batch, d) < 0 || optimize(gb, o, d) < 0) {
            oqc_graph_free(gb);
            oqc_graph_free(g);
            return NULL;
        }
    }
    if (!g)
        return NULL;
    co.data = o->calib;
    co.ndata = o->ncalib;
    if (o->bins)
        co.bins = o->bins;
    co.threads = o->threads ? o->threads : default_threads();
    co.progress = !o->quiet && isatty(2);
    OqcCalibEntry *table = NULL;
    int ntable = 0, rc = 0;
    if (o->table && read_table(o->table, g->arena, &table, &ntable, d) < 0)
        rc = -1;
    co.table = table;
    co.ntable = ntable;
    if (rc == 0)
        rc = oqc_lower_int8(g, gb, o->batch, &co, cfg, NULL, NULL, d);
    oqc_graph_free(gb);
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

static int cmd_eval(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--labels", "--calib", "--table",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--weight-bits", "--fp32-nodes", "--save-int8", "--save-fp32",
                                          "--limit", "--input-shape", "--threads", "--passes",
                                          "--disable-pass", "--no-opt", "-v", "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "eval", allowed, &o, d);
    if (rc == 0 && !o.model)
        rc = oqc_err(d, "oqc eval: give the model: oqc eval MODEL.onnx --data X.npy ...");
    if (rc == 0 && o.ndata != 1)
        rc = oqc_err(d, "oqc eval: give the evaluation inputs with one --data X.npy");
    OqcQuantConfig cfg;
    OqcGraph *gq = rc == 0 ? build_int8("eval", &o, &cfg, d) : NULL;
    OqcGraph *gf = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (gf && optimize(gf, &o, d) < 0) {
        oqc_graph_free(gf);
        gf = NULL;
    }
    OqcValue data, labels;
    if (gf && oqc_npy_read(o.data[0], gf->arena, &data, d) < 0)
        rc = -1;
    if (gf && rc == 0 && o.labels && oqc_npy_read(o.labels, gf->arena, &labels, d) < 0)
        rc = -1;
    if (!gf)
        rc = -1;
    if (rc == 0) {
        OqcEvalOptions eo = {&data, o.data[0], o.labels ? &labels : NULL, o.labels,
                             o.threads ? o.threads : default_threads(), 1,
                             o.requant ? o.requant : "float", o.save_int8, o.save_fp32,
                             NULL, stdout, o.limit};
        rc = oqc_eval(gf, gq, &eo, d);
    }
    oqc_graph_free(gf);
    oqc_graph_free(gq);
    free_opts(&o);
    return rc;
}

/* oqc compile: the optimised model as C (emit_c.c). */
static int cmd_compile(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--name", "--precision", "--calib", "--table",
                                          "--target",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--weight-bits", "--fp32-nodes", "--input-shape",
                                          "--threads",
                                          "--passes", "--disable-pass", "--no-opt", "-v",
                                          "-q", NULL};
    Opts o;
    int rc = parse_opts(argc, argv, "compile", allowed, &o, d);
    const char *prec = o.precision ? o.precision : "int8";
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc compile: give the output directory with -o OUTDIR");
    if (rc == 0 && strcmp(prec, "int8") && strcmp(prec, "fp32"))
        rc = oqc_err(d, "oqc compile: unknown --precision '%s' (int8 or fp32)", prec);
    int int8 = !strcmp(prec, "int8");
    if (rc == 0 && !int8 &&
        (o.ncalib || o.table || o.method || o.requant || o.fp32_nodes || o.weight_bits))
        rc = oqc_err(d, "oqc compile: --calib, --table, --method, --requant, --weight-bits and "
                        "--fp32-nodes apply to --precision int8 only");
    if (rc == 0 && !o.model)
        rc = oqc_err(d, "oqc compile: give the model: oqc compile MODEL.onnx -o OUTDIR ...");
    if (rc == 0 && o.name)
        rc = oqc_c_name_check(o.name, d);
    OqcQuantConfig cfg;
    OqcGraph *g = NULL;
    if (rc == 0 && int8) {
        g = build_int8("compile", &o, &cfg, d);
    } else if (rc == 0) {
        g = oqc_prepare(o.model, o.shapes, o.nshapes, 1, d);
        if (g && optimize(g, &o, d) < 0) {
            oqc_graph_free(g);
            g = NULL;
        }
    }
    OqcExec *e = g ? oqc_exec_new(g, 1, d) : NULL; /* one thread: the emitted code's plan */
    if (!e) {
        oqc_graph_free(g);
        free_opts(&o);
        return -1;
    }
    OqcEmitStats st;
    const char *precision =
        !int8 ? prec
              : oqc_arena_printf(g->arena, "int8, %s requantization%s",
                                 o.requant && !strcmp(o.requant, "fixed") ? "fixed-point" : "float",
                                 oqc_weight_bits(&cfg) != 8
                                     ? oqc_arena_printf(g->arena, ", %d-bit weights",
                                                        oqc_weight_bits(&cfg))
                                     : "");
    OqcEmitOptions eo = {.outdir = o.out, .precision = precision, .stats = &st,
                         .target = o.target,
                         .name = o.name ? o.name : oqc_c_name_from_path(g->arena, o.model)};
    rc = oqc_emit_c(e, &eo, d);
    if (rc == 0 && !o.quiet) {
        char other[64] = "";
        if (st.arena_bytes_noamx != st.arena_bytes)
            snprintf(other, sizeof other, "; %zu off x86-64 Linux", st.arena_bytes_noamx);
        printf("%s: compiled to %s/%s.c (%s): %d nodes, arena %zu bytes%s (activations %zu "
               "planned, %zu if none shared, largest live set %zu), %d constants (%zu bytes), "
               "%d files (%d runtime)\n", o.model, o.out, eo.name, precision, g->nnodes,
               st.arena_bytes, other, oqc_exec_arena_bytes(e), oqc_exec_total_bytes(e),
               oqc_exec_peak_live(e), st.nconst, st.weight_bytes, st.nfiles, st.nruntime);
    }
    oqc_exec_free(e);
    oqc_graph_free(g);
    free_opts(&o);
    return rc;
}

/* oqc export-qdq: the model as ONNX with QuantizeLinear/DequantizeLinear carrying oqc's
 * INT8 quantization (export_qdq.c).  Two graphs: the INT8 lowering (the whole pipeline,
 * thresholds, pass quantize) decides; the graph after cleanup and fold-bn is written. */
static int cmd_export_qdq(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--calib", "--table", "--method", "--bins",
                                          "--batch", "--weight-bits", "--fp32-nodes",
                                          "--input-shape",
                                          "--threads", "-v", "-q", NULL};
    /* --weight-type is this command's own option: taken out before parse_opts */
    OqcQdqOptions xo = {NULL, 0};
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, rc = 0;
    if (!args)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--weight-type")) {
            if (i + 1 >= argc) {
                rc = oqc_err(d, "oqc export-qdq: option '--weight-type' needs a value");
                break;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--weight-type=", 14)) {
            v = argv[i] + 14;
        } else {
            args[nargs++] = argv[i];
            continue;
        }
        if (strcmp(v, "int8") && strcmp(v, "uint8")) {
            rc = oqc_err(d, "oqc export-qdq: --weight-type '%s': expected int8 or uint8", v);
            break;
        }
        xo.weight_uint8 = !strcmp(v, "uint8");
    }
    Opts o;
    if (rc == 0)
        rc = parse_opts(nargs, args, "export-qdq", allowed, &o, d);
    else
        memset(&o, 0, sizeof o);
    free(args);
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc export-qdq: give the output model with -o OUT.onnx");
    xo.path = o.out;
    OqcQuantConfig cfg;
    OqcGraph *gq = rc == 0 ? build_int8("export-qdq", &o, &cfg, d) : NULL;
    OqcGraph *g = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    int verbose = d->verbose;
    d->verbose = 0; /* the pipeline's statistics were shown for gq already */
    if (g && oqc_run_passes(g, "cleanup,fold-bn", NULL, NULL, NULL, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    d->verbose = verbose;
    OqcQdqStats st;
    rc = g ? oqc_export_qdq(g, gq, &xo, &st, d) : -1;
    if (rc == 0 && !o.quiet)
        printf("%s: wrote %s (%lld bytes): %d activation tensors with QuantizeLinear/"
               "DequantizeLinear (%d uint8 zero point 0, %d uint8 zero point 128), %d %s "
               "weights, %d int32 biases\n", o.model, o.out, (long long)st.bytes, st.nact,
               st.nact_zp0, st.nact - st.nact_zp0, st.nweights,
               xo.weight_uint8 ? "uint8 (zero point 128)" : "int8", st.nbias);
    oqc_graph_free(g);
    oqc_graph_free(gq);
    free_opts(&o);
    return rc;
}

typedef struct Command {
    const char *name;                                 /* command word */
    int (*fn)(int argc, char **argv, OqcDiag *d);     /* its implementation */
} Command;

static const Command commands[] = {
    {"dump", cmd_dump},
    {"check", cmd_check},
    {"run", cmd_run},
    {"calibrate", cmd_calibrate},
    {"compile", cmd_compile},
    {"export-qdq", cmd_export_qdq},
    {"eval", cmd_eval},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(oqc_usage_text, stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("oqc %s\n", OQC_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        const char *u = argc > 2 ? oqc_usage(argv[2]) : NULL;
        fputs(u ? u : oqc_usage_text, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, cmd))
            continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                const char *u = oqc_usage(cmd);
                fputs(u ? u : oqc_usage_text, stdout);
                return 0;
            }
        OqcDiag d;
        oqc_diag_init(&d);
        int rc = commands[i].fn(argc - 2, argv + 2, &d);
        if (rc < 0 || d.nerrors) {
            fflush(stdout);
            fputs(d.buf ? d.buf : "oqc: failed\n", stderr);
        }
        oqc_diag_free(&d);
        return rc < 0 ? 1 : 0;
    }
    fprintf(stderr, "oqc: unknown command '%s'\n\n%s", cmd, oqc_usage_text);
    return 1;
}
