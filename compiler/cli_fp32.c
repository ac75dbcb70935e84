/* cli_fp32.c - the oqc commands on the float graph, which never lower it to INT8:
 *   oqc dump MODEL    the IR as text, XML or Graphviz (as loaded, or --after a pass)
 *   oqc check MODEL   whether oqc supports every op and shape
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

int oqc_cli_check(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--input-shape", "--passes", "--disable-pass",
                                          "--no-opt", "--json", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "check", allowed, &o, d);
    OqcExec *e = NULL;
    OqcGraph *g = rc == 0 ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (g && oqc_cli_optimize(g, &o, d) < 0) {
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
        if (o.json) {
            oqc_json_kbool(o.json, "supported", 1);
            oqc_json_kint(o.json, "nodes", g->nnodes);
            oqc_json_key(o.json, "ops");
            oqc_cli_json_ops(o.json, g);
            oqc_cli_json_tensors(o.json, "inputs", g, g->inputs, g->ninputs);
            oqc_cli_json_tensors(o.json, "outputs", g, g->outputs, g->noutputs);
        }
        oqc_graph_free(g);
    } else {
        rc = -1;
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

int oqc_cli_run(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--input", "--input-shape", "--threads",
                                          "--labels", "--preprocess", "--passes", "--disable-pass",
                                          "--no-opt", "-v", "-q", NULL};
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
    OqcArena *a = g->arena;
    if (o.ninputs != g->ninputs)
        rc = oqc_err(d, "%s: the model has %d input(s) but %d --input given", o.model,
                     g->ninputs, o.ninputs);
    OqcValue *vals = oqc_arena_alloc(a, (size_t)(g->ninputs + 1) * sizeof *vals);
    int64_t samples = -1;
    OqcValue labels;     /* of image --input data, when --labels is given */
    int have_labels = 0;
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
        const char **images;
        int nimages;
        if (oqc_cli_images(arg, &o, a, &images, &nimages, i == 0 ? o.labels : NULL, &labels,
                           d) < 0) {
            rc = -1;
            break;
        }
        if (images && i == 0 && o.labels)
            have_labels = 1;
        if (images ? oqc_images_read(images, nimages, &o.pre, &in->shape, a, &vals[slot], d) < 0
                   : oqc_tensor_read(arg, &in->shape, a, &vals[slot], d) < 0 ||
                         oqc_samples_of(arg, &vals[slot], &in->shape, &s, d) < 0) {
            rc = -1;
            break;
        }
        if (images)
            s = nimages;
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
        e = oqc_exec_new(g, o.threads ? o.threads : oqc_cli_default_threads(), d);
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
        rc = print_accuracy(o.labels, &outs[0], have_labels ? &labels : NULL, a, d);
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
    oqc_cli_free_opts(&o);
    return rc;
}
