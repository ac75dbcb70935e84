/* cli_fp32.c - the oqc commands on the float graph, which never lower it to INT8:
 *   oqc dump MODEL    the IR as text, XML or Graphviz (as loaded, or --after a pass)
 *   oqc check MODEL   whether run, compile --precision fp32 and int8 accept the model
 *   oqc run MODEL     the FP32 reference executor over input files (top-5, accuracy)
 * with their output helpers (the temporary-then-rename output file, the top-5 and
 * accuracy lines).  Separate from main.c, which keeps the INT8 pipeline's commands.
 * Part of build/oqc only. */
#include "cli_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int oqc_cli_dump(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--format", "--input-shape", "--after",
                                          "--passes", "--disable-pass", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "dump", allowed, &o, d);
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
    if (g && o.after && oqc_cli_optimize(g, &o, d) < 0) {
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
    oqc_cli_free_opts(&o);
    return rc;
}

/* `oqc check`'s answer comes from the code the commands run, never from a list of its
 * own: for each command asked for (--for), the model goes through what that command
 * does up to the point where it would read data or write files - the executor's plan
 * (run), the C emitter's refusal checks (compile --precision fp32), the INT8 lowering
 * with a placeholder table of threshold 1 then the same checks (compile --precision
 * int8; thresholds change scales, not what is accepted), the calibration's input
 * conditions (calibrate) - and each refusal is listed once with the commands it
 * stops. */
enum { FOR_RUN, FOR_FP32, FOR_INT8, FOR_CALIB, NFOR };
static const char *const for_names[NFOR] = {"run", "fp32", "int8", "calibrate"};
static const char *const for_what[NFOR] = {"run", "compile --precision fp32",
                                           "compile --precision int8", "calibrate"};

/* The model as command k would lower it (optimised; INT8 with placeholder thresholds),
 * or NULL with the refusal in d. */
static OqcGraph *check_graph(const Opts *o, int k, OqcDiag *d) {
    OqcGraph *g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
    Opts q = *o;   /* shallow: nothing of it is freed */
    if (k == FOR_INT8) {   /* pass quantize runs in the lowering, after the thresholds */
        snprintf(q.disable_buf, sizeof q.disable_buf, "%s%squantize",
                 o->disable ? o->disable : "", o->disable ? "," : "");
        q.disable = q.disable_buf;
    } else if (o->disable == o->disable_buf) {
        q.disable = q.disable_buf;
    }
    q.verbose = 0;
    int rc = g ? oqc_cli_optimize(g, &q, d) : -1;
    OqcQuantConfig *cfg = g ? oqc_arena_alloc(g->arena, sizeof *cfg) : NULL;
    if (rc == 0 && k == FOR_INT8) {
        OqcCalibOptions co = {.method = OQC_CALIB_PERCENTILE};
        OqcCalibEntry *es;
        oqc_calib_placeholder(g, g->arena, &es, &co.ntable);
        co.table = es;
        *cfg = (OqcQuantConfig){.requant = OQCI_REQ_FLOAT};
        rc = co.ntable ? oqc_lower_int8(g, NULL, 0, &co, cfg, NULL, NULL, d)
                       : oqc_err(d, "%s: no float activation to quantize", g->path);
    }
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

/* Whether command k accepts the model: 0 (*shape: its graph's node, input and output
 * counts, when shape[0] < 0), or -1 with every refusal in d. */
static int check_one(const Opts *o, int k, int *shape, OqcDiag *d) {
    OqcGraph *g = check_graph(o, k, d);
    if (!g)
        return -1;
    int bad = 0;
    for (int i = 0; i < g->nnodes; i++)   /* each node (oqc_exec_new gives a summary) */
        if (!oqc_shape_supported(g->nodes[i].op))
            bad += oqc_err_node(d, g, i, "the executor does not support this operator") < 0;
    OqcExec *e = bad ? NULL : oqc_exec_new(g, 1, d);
    if (!e)
        bad++;
    else if (k == FOR_FP32 || k == FOR_INT8)
        bad += oqc_emit_check(e, g->nnodes, d);
    else if (k == FOR_CALIB)
        bad += oqc_calib_check_input(g, d) < 0;
    if (!bad && shape[0] < 0) {
        shape[0] = g->nnodes;
        shape[1] = g->ninputs;
        shape[2] = g->noutputs;
    }
    oqc_exec_free(e);
    oqc_graph_free(g);
    return bad ? -1 : 0;
}

int oqc_cli_check(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--input-shape", "--passes", "--disable-pass",
                                          "--no-opt", "--json", "-v", "-q", NULL};
    /* --for LIST is this command's own option: taken out before parse_opts */
    int want[NFOR] = {1, 1, 1, 0}, rc = 0, nargs = 0;
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < argc && rc == 0; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--for") && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(argv[i], "--for=", 6))
            v = argv[i] + 6;
        else if (!strcmp(argv[i], "--for"))
            rc = oqc_err(d, "oqc check: option '--for' needs a value");
        else {
            args[nargs++] = argv[i];
            continue;
        }
        memset(want, 0, sizeof want);
        for (const char *p = v; rc == 0 && p;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            int k = 0;
            while (k < NFOR && (strlen(for_names[k]) != len || strncmp(p, for_names[k], len)))
                k++;
            if (k == NFOR)
                rc = oqc_err(d, "oqc check: --for '%.*s': expected run, fp32, int8 or calibrate "
                                "(comma-separated)", (int)len, p);
            else
                want[k] = 1;
            p = comma ? comma + 1 : NULL;
        }
    }
    Opts o;
    if (rc == 0)
        rc = oqc_cli_parse_opts(nargs, args, "check", allowed, &o, d);
    else
        memset(&o, 0, sizeof o);
    free(args);
    /* each refusal (a line of a command's diag) once, with the commands it stops */
    OqcDiag sub[NFOR];
    int refused[NFOR] = {0}, nrefused = 0, shape[3] = {-1, 0, 0};
    for (int k = 0; k < NFOR; k++) {
        oqc_diag_init(&sub[k]);
        if (rc == 0 && want[k] && check_one(&o, k, shape, &sub[k]) < 0)
            refused[k] = ++nrefused;
    }
    if (rc == 0 && nrefused == 0 && !o.quiet) {
        printf("%s: ok: %d nodes, %d inputs, %d outputs, every op supported by", o.model,
               shape[0], shape[1], shape[2]);
        for (int k = 0, n = 0; k < NFOR; k++)
            if (want[k])
                printf("%s %s", n++ ? "," : "", for_what[k]);
        printf("\n");
    }
    for (int k = 0; k < NFOR; k++) {
        for (const char *l = sub[k].buf; refused[k] && l && *l;) {
            const char *nl = strchr(l, '\n');
            int len = nl ? (int)(nl - l) : (int)strlen(l);
            int seen = 0;   /* the same line from an earlier command: listed there */
            for (int j = 0; j < k && !seen; j++)
                for (const char *m = sub[j].buf; refused[j] && m && *m && !seen;) {
                    const char *mn = strchr(m, '\n');
                    int ml = mn ? (int)(mn - m) : (int)strlen(m);
                    seen = ml == len && !strncmp(m, l, (size_t)len);
                    m = mn ? mn + 1 : NULL;
                }
            if (!seen) {
                char who[160] = "";
                for (int j = k; j < NFOR; j++) {
                    int has = 0;
                    for (const char *m = sub[j].buf; refused[j] && m && *m && !has;) {
                        const char *mn = strchr(m, '\n');
                        int ml = mn ? (int)(mn - m) : (int)strlen(m);
                        has = ml == len && !strncmp(m, l, (size_t)len);
                        m = mn ? mn + 1 : NULL;
                    }
                    if (has)
                        snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s",
                                 who[0] ? ", " : "", for_what[j]);
                }
                oqc_err(d, "%.*s [refused by: %s]", len, l, who);
            }
            l = nl ? nl + 1 : NULL;
        }
    }
    if (nrefused) {
        char who[160] = "";
        for (int k = 0; k < NFOR; k++)
            if (refused[k])
                snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s",
                         who[0] ? ", " : "", for_what[k]);
        rc = oqc_err(d, "%s: not supported by: %s", o.model, who);
    }
    for (int k = 0; k < NFOR; k++)
        oqc_diag_free(&sub[k]);
    if (rc == 0 && nrefused == 0 && o.json) {   /* the graph of the first command asked */
        int k = 0;
        while (!want[k])
            k++;
        OqcGraph *g = check_graph(&o, k, d);
        if (g) {
            oqc_json_kbool(o.json, "supported", 1);
            oqc_json_kint(o.json, "nodes", g->nnodes);
            oqc_json_key(o.json, "ops");
            oqc_cli_json_ops(o.json, g);
            oqc_cli_json_tensors(o.json, "inputs", g, g->inputs, g->ninputs);
            oqc_cli_json_tensors(o.json, "outputs", g, g->outputs, g->noutputs);
            oqc_graph_free(g);
        } else {
            rc = -1;
        }
    }
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_cli_free_opts(&o);
    return rc;
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
static int print_accuracy(const char *path, const OqcValue *y, const OqcValue *labels,
                          OqcArena *a, OqcDiag *d) {
    OqcValue lab;
    if (labels)
        lab = *labels;
    else if (oqc_npy_read(path, a, &lab, d) < 0)
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

/* Reads run's --input [NAME=]FILE arguments into vals (one slot per graph input) and
 * their common sample count into *samples; image data of the first input with --labels
 * also reads the labels (*labels, *have_labels). */
static int read_run_inputs(const OqcGraph *g, Opts *o, OqcValue *vals, int64_t *samples,
                           OqcValue *labels, int *have_labels, OqcDiag *d) {
    OqcArena *a = g->arena;
    for (int i = 0; i < o->ninputs; i++) {
        const char *arg = o->inputs[i], *eq = strchr(arg, '=');
        int slot = i;
        if (eq) {
            char *name = oqc_arena_strndup(a, arg, (size_t)(eq - arg));
            int t = oqc_tensor_find(g, name);
            for (slot = 0; slot < g->ninputs && g->inputs[slot] != t; slot++)
                ;
            if (slot == g->ninputs)
                return oqc_err(d, "%s: --input names '%s', which is not a graph input",
                               o->model, name);
            arg = eq + 1;
        }
        const OqcTensor *in = &g->tensors[g->inputs[slot]];
        int64_t s;
        const char **images;
        int nimages;
        if (oqc_cli_images(arg, o, a, &images, &nimages, i == 0 ? o->labels : NULL, labels,
                           d) < 0)
            return -1;
        if (images && i == 0 && o->labels)
            *have_labels = 1;
        if (images ? oqc_images_read(images, nimages, &o->pre, &in->shape, a, &vals[slot], d) < 0
                   : oqc_tensor_read(arg, &in->shape, a, &vals[slot], d) < 0 ||
                         oqc_samples_of(arg, &vals[slot], &in->shape, &s, d) < 0)
            return -1;
        if (images)
            s = nimages;
        if (vals[slot].dtype != in->dtype)
            return oqc_err(d, "%s: holds %s data but input '%s' is %s", arg,
                           oqc_dtype_name(vals[slot].dtype), in->name,
                           oqc_dtype_name(in->dtype));
        if (*samples >= 0 && s != *samples)
            return oqc_err(d, "%s: holds %lld samples but another input holds %lld", arg,
                           (long long)s, (long long)*samples);
        *samples = s;
    }
    return 0;
}

/* The output buffers of run for samples samples (stacked on a new leading axis, or on
 * the batch axis when the inputs were), in g's arena. */
static OqcValue *run_outputs(const OqcGraph *g, const OqcValue *vals, int64_t samples) {
    OqcValue *outs = oqc_arena_alloc(g->arena, (size_t)(g->noutputs + 1) * sizeof *outs);
    for (int i = 0; i < g->noutputs; i++) {
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
        outs[i].data = oqc_arena_alloc_raw(g->arena, outs[i].nbytes + 1);
    }
    return outs;
}

/* run -o OUT: the one output as OUT (.npy), or every output as OUT/NAME.npy. */
static int write_run_outputs(const char *out, const OqcGraph *g, const OqcValue *outs,
                             OqcDiag *d) {
    if (g->noutputs == 1)
        return oqc_npy_write(out, &outs[0], d);
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return oqc_err(d, "%s: cannot create directory: %s", out, strerror(errno));
    for (int i = 0; i < g->noutputs; i++) {
        char *nm = oqc_arena_strdup(g->arena, g->tensors[g->outputs[i]].name);
        for (char *p = nm; *p; p++)
            if (*p == '/' || *p == '\\' || *p == ':')
                *p = '_';
        if (oqc_npy_write(oqc_arena_printf(g->arena, "%s/%s.npy", out, nm), &outs[i], d) < 0)
            return -1;
    }
    return 0;
}

/* Runs e over every sample: the inputs vals and outputs outs hold samples of them. */
static int run_samples(OqcExec *e, const OqcGraph *g, const OqcValue *vals, int64_t samples,
                       const OqcValue *outs, OqcDiag *d) {
    const void **inp = oqc_arena_alloc(g->arena, (size_t)(g->ninputs + 1) * sizeof *inp);
    void **outp = oqc_arena_alloc(g->arena, (size_t)(g->noutputs + 1) * sizeof *outp);
    for (int64_t s = 0; s < samples; s++) {
        for (int i = 0; i < g->ninputs; i++)
            inp[i] = (const char *)vals[i].data + (size_t)s * (vals[i].nbytes / (size_t)samples);
        for (int i = 0; i < g->noutputs; i++)
            outp[i] = (char *)outs[i].data + (size_t)s * (outs[i].nbytes / (size_t)samples);
        if (oqc_exec_run(e, inp, outp, d) < 0)
            return -1;
    }
    return 0;
}

int oqc_cli_run(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--input", "--input-shape", "--threads",
                                          "--labels", "--preprocess", "--passes", "--disable-pass",
                                          "--no-opt", "--portable-fp32", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "run", allowed, &o, d);
    OqcGraph *g = NULL;
    OqcExec *e = NULL;
    if (rc == 0 && o.ninputs == 0)
        rc = oqc_err(d, "oqc run: give the input data with --input [NAME=]FILE");
    if (rc == 0)
        g = oqc_prepare(o.model, o.shapes, o.nshapes, 1, d);
    if (g && oqc_cli_optimize(g, &o, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    if (!g) {
        oqc_cli_free_opts(&o);
        return -1;
    }
    if (o.ninputs != g->ninputs)
        rc = oqc_err(d, "%s: the model has %d input(s) but %d --input given", o.model,
                     g->ninputs, o.ninputs);
    OqcValue *vals = oqc_arena_alloc(g->arena, (size_t)(g->ninputs + 1) * sizeof *vals);
    int64_t samples = -1;
    OqcValue labels;     /* of image --input data, when --labels is given */
    int have_labels = 0;
    if (rc == 0)
        rc = read_run_inputs(g, &o, vals, &samples, &labels, &have_labels, d);
    if (rc == 0)
        e = oqc_exec_new(g, o.threads ? o.threads : oqc_cli_default_threads(), d);
    if (rc == 0 && !e)
        rc = -1;
    OqcValue *outs = rc == 0 ? run_outputs(g, vals, samples) : NULL;
    if (rc == 0)
        rc = run_samples(e, g, vals, samples, outs, d);
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
        rc = print_accuracy(o.labels, &outs[0], have_labels ? &labels : NULL, g->arena, d);
    if (rc == 0 && o.out)
        rc = write_run_outputs(o.out, g, outs, d);
    oqc_exec_free(e);
    oqc_graph_free(g);
    oqc_cli_free_opts(&o);
    return rc;
}
