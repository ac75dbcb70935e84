/* api.c - the public API (oqc.h) over the internal IR (ir.h).
 *
 * An OqcModel is the graph plus a lazily created executor. Errors collected in an
 * OqcDiag are handed to the caller as one malloc'd string. */
#include "oqc.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"

struct OqcModel {
    OqcGraph *g;      /* the graph (owns its arena) */
    OqcExec *exec;    /* FP32 executor, created by the first oqc_model_run */
    int threads;      /* threads the executor was made for */
};

/* Moves the diag's text to *err (when wanted) and frees the diag. */
static int fail(OqcDiag *d, char **err) {
    if (err) {
        *err = d->buf ? d->buf : strdup("oqc: unknown error\n");
        d->buf = NULL;
    }
    oqc_diag_free(d);
    return -1;
}

OqcModel *oqc_model_load(const char *path, const char *const *input_shapes, int n,
                         char **err) {
    OqcDiag d;
    oqc_diag_init(&d);
    if (n < 0 || n > 64 || (n > 0 && !input_shapes)) {
        oqc_err(&d, "oqc_model_load: bad input_shapes count %d", n);
        fail(&d, err);
        return NULL;
    }
    OqcInputShape shapes[64];
    int k = 0, rc = 0;
    for (; k < n && rc == 0; k++)
        rc = oqc_parse_input_shape(input_shapes[k], &shapes[k], &d);
    if (rc < 0)
        k--;
    OqcGraph *g = rc == 0 ? oqc_prepare(path, shapes, k, 0, &d) : NULL;
    for (int i = 0; i < k; i++)
        free((void *)shapes[i].name);
    if (!g) {
        fail(&d, err);
        return NULL;
    }
    oqc_diag_free(&d);
    OqcModel *m = calloc(1, sizeof *m);
    if (!m)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    m->g = g;
    return m;
}

void oqc_model_free(OqcModel *m) {
    if (!m)
        return;
    oqc_exec_free(m->exec);
    oqc_graph_free(m->g);
    free(m);
}

int oqc_model_num_inputs(const OqcModel *m) { return m->g->ninputs; }
int oqc_model_num_outputs(const OqcModel *m) { return m->g->noutputs; }

static int describe(const OqcGraph *g, int id, const char **name, int *dtype, int64_t *dims) {
    const OqcTensor *t = &g->tensors[id];
    if (name)
        *name = t->name;
    if (dtype)
        *dtype = (int)t->dtype;
    for (int i = 0; dims && i < t->shape.rank; i++)
        dims[i] = t->shape.d[i];
    return t->shape.rank;
}

int oqc_model_input(const OqcModel *m, int i, const char **name, int *dtype, int64_t *dims) {
    if (i < 0 || i >= m->g->ninputs)
        return -1;
    return describe(m->g, m->g->inputs[i], name, dtype, dims);
}

int oqc_model_output(const OqcModel *m, int i, const char **name, int *dtype, int64_t *dims) {
    if (i < 0 || i >= m->g->noutputs)
        return -1;
    return describe(m->g, m->g->outputs[i], name, dtype, dims);
}

int oqc_model_dump(OqcModel *m, FILE *out, const char *format, const char *data_path,
                   char **err) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc;
    if (!format || !strcmp(format, "text")) {
        rc = oqc_dump_text(m->g, out);
    } else if (!strcmp(format, "dot")) {
        rc = oqc_dump_dot(m->g, out);
    } else if (!strcmp(format, "xml")) {
        const char *ref = data_path && strrchr(data_path, '/') ? strrchr(data_path, '/') + 1
                                                               : data_path;
        rc = oqc_dump_xml(m->g, out, data_path, ref, &d);
    } else {
        rc = oqc_err(&d, "oqc_model_dump: unknown format '%s' (text, xml or dot)", format);
    }
    if (rc < 0 && d.nerrors == 0)
        oqc_err(&d, "oqc_model_dump: write error");
    return rc < 0 ? fail(&d, err) : (oqc_diag_free(&d), 0);
}

int oqc_model_run(OqcModel *m, const void *const *inputs, void *const *outputs, int threads,
                  char **err) {
    OqcDiag d;
    oqc_diag_init(&d);
    if (threads < 1)
        threads = 1;
    if (m->exec && m->threads != threads) {
        oqc_exec_free(m->exec);
        m->exec = NULL;
    }
    if (!m->exec) {
        m->exec = oqc_exec_new(m->g, threads, &d);
        m->threads = threads;
        if (!m->exec)
            return fail(&d, err);
    }
    if (oqc_exec_run(m->exec, inputs, outputs, &d) < 0)
        return fail(&d, err);
    oqc_diag_free(&d);
    return 0;
}

