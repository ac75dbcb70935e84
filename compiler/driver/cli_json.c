/* cli_json.c - the oqc driver's `--json` (docs/json.md): starting a command's document,
 * writing it out, and the parts several commands share (op counts, tensors, the
 * compile summary).  The writer itself is json.c (liboqc).  Part of build/oqc only. */
#include "cli_int.h"
#include "oqc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --json: the document begins ({"command", "version", "model", ...}: docs/json.md) and
 * standard output becomes standard error, so every line of human text (this process's
 * and its children's, e.g. bench's program) goes there; the document is written to the
 * original standard output, kept as o->json_fd, by oqc_cli_json_finish. */
int oqc_cli_json_start(Opts *o, const char *cmd, OqcDiag *d) {
    fflush(stdout);
    o->json_fd = fcntl(1, F_DUPFD_CLOEXEC, 3); /* not inherited by bench's program */
    if (o->json_fd < 0 || dup2(2, 1) < 0)
        return oqc_err(d, "oqc %s: --json: cannot set up standard output: %s", cmd,
                       strerror(errno));
    o->json = malloc(sizeof *o->json);
    if (!o->json)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    oqc_json_init(o->json);
    oqc_json_object(o->json);
    oqc_json_kstr(o->json, "command", cmd);
    oqc_json_kstr(o->json, "version", oqc_version());
    oqc_json_kstr(o->json, "model", o->model);
    return 0;
}

int oqc_cli_json_finish(Opts *o, int rc, OqcDiag *d) {
    if (!o->json)
        return rc;
    fflush(stdout); /* the human text, on standard error */
    if (rc < 0)
        return rc;
    oqc_json_end(o->json);
    const char *t = oqc_json_text(o->json);
    size_t n = strlen(t), done = 0;
    while (done < n) {
        ssize_t w = write(o->json_fd, t + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return oqc_err(d, "error writing the JSON document to standard output: %s",
                           strerror(errno));
        done += (size_t)w;
    }
    return rc;
}

static int by_op(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void oqc_cli_json_ops(OqcJson *j, const OqcGraph *g) {
    const char **ops = malloc((size_t)(g->nnodes + 1) * sizeof *ops);
    if (!ops)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < g->nnodes; i++)
        ops[i] = g->nodes[i].op_type;
    qsort(ops, (size_t)g->nnodes, sizeof *ops, by_op);
    oqc_json_array(j);
    for (int i = 0, k; i < g->nnodes; i = k) {
        for (k = i + 1; k < g->nnodes && !strcmp(ops[k], ops[i]); k++)
            ;
        oqc_json_object(j);
        oqc_json_kstr(j, "op", ops[i]);
        oqc_json_kint(j, "count", k - i);
        oqc_json_end(j);
    }
    oqc_json_end(j);
    free(ops);
}

/* "shape": [d0, d1, ...]. */
static void json_shape(OqcJson *j, const OqcShape *sh) {
    oqc_json_key(j, "shape");
    oqc_json_array(j);
    for (int k = 0; k < sh->rank; k++)
        oqc_json_int(j, sh->d[k]);
    oqc_json_end(j);
}

void oqc_cli_json_tensors(OqcJson *j, const char *key, const OqcGraph *g, const int *ids,
                          int n) {
    oqc_json_key(j, key);
    oqc_json_array(j);
    for (int i = 0; i < n; i++) {
        const OqcTensor *t = &g->tensors[ids[i]];
        oqc_json_object(j);
        oqc_json_kstr(j, "name", t->name);
        oqc_json_kstr(j, "dtype", oqc_dtype_name(t->dtype));
        json_shape(j, &t->shape);
        oqc_json_end(j);
    }
    oqc_json_end(j);
}

void oqc_cli_json_compiled(OqcJson *j, const char *outdir, const char *name,
                           const char *precision, const char *target, const OqcGraph *g,
                           const OqcExec *e, const OqcEmitStats *st) {
    oqc_json_key(j, "compiled");
    oqc_json_object(j);
    if (outdir)
        oqc_json_kstr(j, "outdir", outdir);
    oqc_json_kstr(j, "name", name);
    oqc_json_kstr(j, "precision", precision);
    oqc_json_kstr(j, "target", target);
    oqc_json_kint(j, "nodes", g->nnodes);
    oqc_json_key(j, "ops");
    oqc_cli_json_ops(j, g);
    oqc_cli_json_tensors(j, "inputs", g, g->inputs, g->ninputs);
    oqc_cli_json_tensors(j, "outputs", g, g->outputs, g->noutputs);
    oqc_json_key(j, "memory");
    oqc_json_object(j);
    oqc_json_kint(j, "arena_bytes", (long long)st->arena_bytes);
    oqc_json_kint(j, "arena_bytes_other_os", (long long)st->arena_bytes_noamx);
    oqc_json_kint(j, "activations_planned", (long long)oqc_exec_arena_bytes(e));
    oqc_json_kint(j, "activations_unshared", (long long)oqc_exec_total_bytes(e));
    oqc_json_kint(j, "peak_live", (long long)oqc_exec_peak_live(e));
    oqc_json_end(j);
    oqc_json_kint(j, "constants", st->nconst);
    oqc_json_kint(j, "weight_bytes", (long long)st->weight_bytes);
    oqc_json_kint(j, "runtime_files", st->nruntime);
    if (outdir) {
        oqc_json_key(j, "files");
        oqc_json_array(j);
        for (int i = 0; i < st->nfiles; i++)
            oqc_json_str(j, st->files[i]);
        oqc_json_end(j);
    }
    oqc_json_end(j);
}

/* "float_layers": the comma list as an array ([] for none). */
static void json_list(OqcJson *j, const char *key, const char *list) {
    oqc_json_key(j, key);
    oqc_json_array(j);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char *one = malloc(n + 1);
        if (!one)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        memcpy(one, p, n);
        one[n] = 0;
        oqc_json_str(j, one);
        free(one);
        p = comma ? comma + 1 : NULL;
    }
    oqc_json_end(j);
}

void oqc_cli_json_calibrated(OqcJson *j, const OqcCalibOptions *co, const OqcCalibEntry *es,
                             int n, int64_t samples, double seconds, const char *table,
                             const char *format, const char *report, const char *float_layers,
                             const OqcSensitivity *sens) {
    oqc_json_kstr(j, "method", co->method_name);
    oqc_json_kint(j, "bins", co->bins);
    oqc_json_kint(j, "samples", samples);
    oqc_json_knum(j, "seconds", seconds);
    oqc_json_kstr(j, "table", table);
    oqc_json_kstr(j, "format", format);
    oqc_json_kstr(j, "report", report);
    json_list(j, "float_layers", float_layers);
    oqc_json_key(j, "tensors");
    oqc_json_array(j);
    for (int i = 0; i < n; i++) {
        const OqcCalibEntry *e = &es[i];
        oqc_json_object(j);
        oqc_json_kstr(j, "name", e->name);
        oqc_json_kstr(j, "op", e->op);
        json_shape(j, &e->shape);
        oqc_json_kbool(j, "unsigned", e->is_unsigned);
        oqc_json_kstr(j, "method", e->method);
        oqc_json_knum(j, "amax", e->amax);
        oqc_json_knum(j, "threshold", e->threshold);
        oqc_json_knum(j, "scale", e->scale);
        oqc_json_knum(j, "clipped", e->clipped);
        oqc_json_knum(j, "kl", e->kl);
        oqc_json_end(j);
    }
    oqc_json_end(j);
    if (sens)
        oqc_cli_json_sensitivity(j, sens);
}

void oqc_cli_json_sensitivity(OqcJson *j, const OqcSensitivity *s) {
    oqc_json_key(j, "sensitivity");
    oqc_json_object(j);
    oqc_json_kint(j, "samples", s->samples);
    oqc_json_kbool(j, "labels", s->labels);
    oqc_json_key(j, "all_int8");
    oqc_metrics_json(j, &s->all);
    oqc_json_key(j, "layers");
    oqc_json_array(j);
    for (int i = 0; i < s->nrows; i++) {
        oqc_json_object(j);
        oqc_json_kstr(j, "layer", s->rows[i].layer);
        oqc_json_kstr(j, "op", s->rows[i].op);
        oqc_json_key(j, "only_int8");
        oqc_metrics_json(j, &s->rows[i].only_q);
        oqc_json_key(j, "only_fp32");
        oqc_metrics_json(j, &s->rows[i].only_f);
        oqc_json_end(j);
    }
    oqc_json_end(j);
    oqc_json_end(j);
}
