/* test_xml.c - the XML form of the IR (compiler/ir/dump_xml.c, docs/oqc-ir.rng).
 *
 * What is checked:
 *   - round trip: for every model under models/{fashion,tiny,tv} and for a hand-built
 *     graph using every IR feature (odd bytes in names and strings, every attribute
 *     type, quant params, dim_params, omitted inputs/outputs, unknown ranks, string and
 *     data-less constants), dump_xml(load_xml(dump_xml(g))) is byte-identical to
 *     dump_xml(g) (XML and side data, written with the same data name in two
 *     directories), the reloaded graph is field-by-field equal to the original, and
 *     its text dump is identical; the same without a side data file (constants keep
 *     their summaries);
 *   - every dump validates against docs/oqc-ir.rng (xmllint, Debian libxml2-utils);
 *   - malformed files (bad XML, wrong root, unknown dtype, unknown tensor, short or
 *     missing side file, bad numbers, DOCTYPE, ...) give NULL and a message naming the
 *     file and, where there is one, the line.
 * Run from the repository root (tests/run.sh does). */
#include "harness.h"
#include "backend.h"

#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA "docs/oqc-ir.rng"

/* ------------------------------------------------------------------ helpers */

/* Path of name in the scratch directory (oqc_test_tmp), which gets the subdirectories
 * a, b and bad on first use; valid for the next 31 calls. */
static const char *tmp_path(const char *name) {
    static int made;
    if (!made) {
        static const char *const sub[] = {"a", "b", "bad"};
        for (int i = 0; i < 3; i++)
            if (mkdir(oqc_test_tmp(sub[i]), 0700) != 0)
                abort();
        made = 1;
    }
    return oqc_test_tmp(name);
}

/* The text dump as a malloc'd string. */
static char *text_dump(const OqcGraph *g) {
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    if (!f)
        return NULL;
    int rc = oqc_dump_text(g, f);
    fclose(f);
    if (rc < 0) {
        free(p);
        return NULL;
    }
    return p;
}

static int dump_xml_file(OqcGraph *g, const char *xml, const char *data, const char *ref) {
    OqcDiag d;
    oqc_diag_init(&d);
    FILE *f = fopen(xml, "wb");
    int rc = f ? oqc_dump_xml(g, f, data, ref, &d) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        printf("\n  dump %s failed: %s", xml, d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc;
}

static OqcGraph *load_xml_ok(const char *xml) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_load_xml(xml, &d);
    if (!g)
        printf("\n  reload %s failed: %s", xml, d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return g;
}

/* xmllint --relaxng; prints its complaint on failure. */
static int validates(const char *xml) {
    char cmd[768];
    const char *log = tmp_path("xmllint.log");
    snprintf(cmd, sizeof cmd, "xmllint --noout --relaxng %s '%s' >'%s' 2>&1", SCHEMA, xml, log);
    if (system(cmd) == 0)
        return 1;
    char *msg = oqc_test_read_file(log, NULL);
    printf("\n  %s does not validate against %s:\n%.2000s", xml, SCHEMA, msg ? msg : "");
    free(msg);
    return 0;
}

/* ---------------------------------------------------- graph equality, exact */

static int same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_value(const OqcValue *a, const OqcValue *b) {
    if (a->dtype != b->dtype || !oqc_shape_equal(&a->shape, &b->shape) ||
        a->nbytes != b->nbytes)
        return 0;
    if (a->dtype != OQCF_STRING)
        return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
    for (int64_t i = 0; i < oqc_shape_numel(&a->shape); i++)
        if (strcmp(((char **)a->data)[i], ((char **)b->data)[i]) != 0)
            return 0;
    return 1;
}

static int same_attr(const OqcAttr *a, const OqcAttr *b) {
    if (strcmp(a->name, b->name) != 0 || a->type != b->type)
        return 0;
    switch (a->type) {
    case OQC_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case OQC_ATTR_INT: return a->i == b->i;
    case OQC_ATTR_STRING:
        return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0 && b->s[b->slen] == 0;
    case OQC_ATTR_FLOATS:
        return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, (size_t)a->n * 4) == 0);
    case OQC_ATTR_INTS:
        return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, (size_t)a->n * 8) == 0);
    case OQC_ATTR_STRINGS:
        if (a->n != b->n)
            return 0;
        for (int i = 0; i < a->n; i++)
            if (strcmp(a->strings[i], b->strings[i]) != 0)
                return 0;
        return 1;
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS:
        if (a->n != b->n)
            return 0;
        for (int i = 0; i < a->n; i++)
            if (!same_value(&a->tensors[i], &b->tensors[i]))
                return 0;
        return 1;
    default: return same_str(a->opaque, b->opaque);
    }
}

/* Prints the first difference; with_data: constants' bytes must be there and equal,
 * otherwise they must be absent with the original's summary. */
static int same_graph(OqcGraph *a, OqcGraph *b, int with_data) {
#define DIFF(...) do { printf("\n  differs: "); printf(__VA_ARGS__); return 0; } while (0)
    if (strcmp(a->name, b->name) || a->ir_version != b->ir_version ||
        strcmp(a->producer, b->producer) || a->nopsets != b->nopsets)
        DIFF("graph header");
    for (int i = 0; i < a->nopsets; i++)
        if (strcmp(a->opsets[i].domain, b->opsets[i].domain) ||
            a->opsets[i].version != b->opsets[i].version)
            DIFF("opset %d", i);
    for (int j = 0; j < b->ntensors; j++) {
        const OqcTensor *tb = &b->tensors[j];
        int i = oqc_tensor_find(a, tb->name);
        if (i < 0)
            DIFF("tensor '%s' is new", tb->name);
        const OqcTensor *ta = &a->tensors[i];
        if (ta->dtype != tb->dtype || !oqc_shape_equal(&ta->shape, &tb->shape) ||
            ta->is_input != tb->is_input || ta->is_output != tb->is_output ||
            ta->is_const != tb->is_const)
            DIFF("tensor '%s' type or flags", tb->name);
        if (ta->quant.valid != tb->quant.valid ||
            (ta->quant.valid && (ta->quant.is_unsigned != tb->quant.is_unsigned ||
                                 memcmp(&ta->quant.amax, &tb->quant.amax, 4) ||
                                 memcmp(&ta->quant.threshold, &tb->quant.threshold, 4) ||
                                 memcmp(&ta->quant.scale, &tb->quant.scale, 4) ||
                                 !same_str(ta->quant.method, tb->quant.method))))
            DIFF("tensor '%s' quant", tb->name);
        for (int k = 0; k < ta->shape.rank; k++)
            if (!same_str(ta->dim_param ? ta->dim_param[k] : NULL,
                          tb->dim_param ? tb->dim_param[k] : NULL))
                DIFF("tensor '%s' dim_param %d", tb->name, k);
        if (!ta->is_const)
            continue;
        if (with_data && ta->data) {
            OqcValue va = {ta->dtype, ta->shape, ta->data, ta->nbytes};
            OqcValue vb = {tb->dtype, tb->shape, tb->data, tb->nbytes};
            if (!tb->data || !same_value(&va, &vb) || tb->summary)
                DIFF("constant '%s' data", tb->name);
        } else if (tb->data && ta->dtype != OQCF_STRING) {
            DIFF("constant '%s' has data", tb->name);
        } else if (strcmp(oqc_const_summary(a, i), oqc_const_summary(b, j)) != 0) {
            DIFF("constant '%s' summary", tb->name);
        }
    }
    if (a->nnodes != b->nnodes || a->ninputs != b->ninputs || a->noutputs != b->noutputs)
        DIFF("node or input/output counts");
    for (int i = 0; i < a->ninputs + a->noutputs; i++) {
        int ta = i < a->ninputs ? a->inputs[i] : a->outputs[i - a->ninputs];
        int tb = i < a->ninputs ? b->inputs[i] : b->outputs[i - a->ninputs];
        if (strcmp(a->tensors[ta].name, b->tensors[tb].name))
            DIFF("graph input/output %d", i);
    }
    for (int i = 0; i < a->nnodes; i++) {
        const OqcNode *na = &a->nodes[i], *nb = &b->nodes[i];
        if (na->op != nb->op || strcmp(na->op_type, nb->op_type) ||
            strcmp(na->domain, nb->domain) || strcmp(na->name, nb->name) ||
            na->opset != nb->opset || na->nin != nb->nin || na->nout != nb->nout ||
            na->nattr != nb->nattr)
            DIFF("node %d '%s'", i, na->name);
        for (int k = 0; k < na->nin + na->nout; k++) {
            int ta = k < na->nin ? na->in[k] : na->out[k - na->nin];
            int tb = k < na->nin ? nb->in[k] : nb->out[k - na->nin];
            if ((ta < 0) != (tb < 0) ||
                (ta >= 0 && strcmp(a->tensors[ta].name, b->tensors[tb].name)))
                DIFF("node '%s' input/output %d", na->name, k);
        }
        for (int k = 0; k < na->nattr; k++)
            if (!same_attr(&na->attr[k], &nb->attr[k]))
                DIFF("node '%s' attribute '%s'", na->name, na->attr[k].name);
    }
    return 1;
#undef DIFF
}

/* The whole round-trip check for one graph; returns 1 when everything holds. */
static int round_trip(OqcGraph *g, const char *label) {
    int ok = 1;
    char *text = text_dump(g);
    for (int with_data = 1; with_data >= 0; with_data--) {
        const char *xa = tmp_path(with_data ? "a/m.xml" : "a/n.xml");
        const char *xb = tmp_path(with_data ? "b/m.xml" : "b/n.xml");
        const char *da = with_data ? tmp_path("a/m.data") : NULL;
        const char *db = with_data ? tmp_path("b/m.data") : NULL;
        const char *ref = with_data ? "m.data" : NULL;
        OqcGraph *g2 = NULL;
        char *text2 = NULL;
        if (dump_xml_file(g, xa, da, ref) < 0 || !validates(xa) || !(g2 = load_xml_ok(xa)) ||
            dump_xml_file(g2, xb, db, ref) < 0) {
            ok = 0;
        } else {
            if (!oqc_test_same_file(xa, xb)) {
                printf("\n  %s: XML differs after a round trip (%s vs %s)", label, xa, xb);
                ok = 0;
            }
            if (with_data && !oqc_test_same_file(da, db)) {
                printf("\n  %s: side data differs after a round trip", label);
                ok = 0;
            }
            text2 = text_dump(g2);
            if (!text || !text2 || strcmp(text, text2) != 0) {
                printf("\n  %s: text dump differs after reload%s\n--- original\n%.3000s"
                       "--- reloaded\n%.3000s", label, with_data ? "" : " (no side data)",
                       text ? text : "", text2 ? text2 : "");
                ok = 0;
            }
            if (!same_graph(g, g2, with_data)) {
                printf(" (%s%s)", label, with_data ? "" : ", no side data");
                ok = 0;
            }
        }
        free(text2);
        oqc_graph_free(g2);
    }
    free(text);
    return ok;
}

static int xmllint_present(void) {
    if (system("command -v xmllint >/dev/null 2>&1") == 0)
        return 1;
    printf("\n  xmllint not found: install Debian libxml2-utils (scripts/install-deps.sh)");
    return 0;
}

/* ------------------------------------------------------------ every model */

/* Loads a model for the test: dynamic inputs get 1 for every unknown extent. Falls back
 * to the unprepared graph when shape inference fails (the XML must carry any graph). */
static OqcGraph *load_model(const char *path) {
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *raw = oqc_load_onnx(path, &d), *g = NULL;
    if (raw) {
        OqcInputShape shapes[16];
        int n = 0;
        for (int i = 0; i < raw->ninputs && n < 16; i++) {
            const OqcTensor *t = &raw->tensors[raw->inputs[i]];
            if (t->shape.rank < 0 || oqc_shape_known(&t->shape))
                continue;
            shapes[n].name = t->name;
            shapes[n].shape = t->shape;
            for (int k = 0; k < t->shape.rank; k++)
                shapes[n].shape.d[k] = t->shape.d[k] < 0 ? 1 : t->shape.d[k];
            n++;
        }
        g = oqc_prepare(path, shapes, n, 0, &d);
        if (!g) {
            printf("\n  note: %s: shape inference failed, testing the unprepared graph", path);
            g = raw;
            raw = NULL;
        }
    }
    if (!g)
        printf("\n  note: %s does not load, skipped: %s", path, d.buf ? d.buf : "");
    oqc_graph_free(raw);
    oqc_diag_free(&d);
    return g;
}

static void test_models_round_trip(void) {
    if (!xmllint_present()) {
        CU_FAIL("xmllint is needed to validate against " SCHEMA);
        return;
    }
    static const char *const pats[] = {"models/fashion/*.onnx", "models/tiny/*.onnx",
                                       "models/tv/*.onnx"};
    int tested = 0, failed = 0, found = 0;
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        glob_t gl;
        if (glob(pats[p], 0, NULL, &gl) != 0)
            continue; /* no models there (yet) */
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            found++;
            OqcGraph *g = load_model(gl.gl_pathv[i]);
            if (!g)
                continue;
            tested++;
            if (!round_trip(g, gl.gl_pathv[i])) {
                printf("\n  FAILED: %s", gl.gl_pathv[i]);
                failed++;
            }
            oqc_graph_free(g);
        }
        globfree(&gl);
    }
    printf("\n  %d of %d model(s) round-tripped, %d failed ", tested, found, failed);
    /* Every committed model loads today (178 of 178 when this was written): one that
     * stops loading is a failure, not a model left out.  The floor guards against an
     * empty glob (the suite run from the wrong directory). */
    CU_ASSERT_EQUAL(tested, found);
    CU_ASSERT(found >= 150);
    CU_ASSERT_EQUAL(failed, 0);
}

/* ---------------------------------------------------- every feature by hand */

static void *gdup(OqcGraph *g, const void *p, size_t n) { return oqc_arena_dup(g->arena, p, n); }

static OqcShape shape_of(int rank, int64_t d0, int64_t d1, int64_t d2) {
    OqcShape s = {.rank = rank, .d = {d0, d1, d2}};
    return s;
}

/* A graph exercising everything the XML must carry exactly. */
static OqcGraph *build_synthetic(void) {
    OqcGraph *g = oqc_graph_new("synthetic");
    OqcArena *a = g->arena;
    g->name = "g\\name\x01 \xc3\xa9 <&>\"'";
    g->ir_version = 9;
    g->producer = "oqc-test 1.0\n\ttab \xff";
    g->nopsets = 2;
    g->opsets = oqc_arena_alloc(a, 2 * sizeof *g->opsets);
    g->opsets[0] = (OqcOpset){"", 13};
    g->opsets[1] = (OqcOpset){"com.example", 1};

    int x = oqc_tensor_add(g, "x");
    g->tensors[x].is_input = 1;
    g->tensors[x].dtype = OQCF_FLOAT;
    g->tensors[x].shape = shape_of(3, 1, -1, 4);
    g->tensors[x].dim_param = oqc_arena_alloc(a, OQC_MAX_RANK * sizeof(char *));
    g->tensors[x].dim_param[1] = "batch \\ size";

    int w = oqc_tensor_add(g, "w \\x41 <weight> & \"q\"");
    float wv[8] = {1.5f, -0.0f, 1e-45f, 3.4028235e38f, -2.25f, 0.1f, 1.0f / 3, 7};
    g->tensors[w] = (OqcTensor){.name = g->tensors[w].name, .view_base = -1, .dtype = OQCF_FLOAT,
                                .shape = shape_of(2, 2, 4, 0), .producer = -1, .is_const = 1,
                                .data = gdup(g, wv, sizeof wv), .nbytes = sizeof wv};

    int s = oqc_tensor_add(g, "strings");
    const char *sv[3] = {"a", "", "\xff\xfe bad utf8 \\ \x7f \xf0\x9f\x98\x80"};
    g->tensors[s] = (OqcTensor){.name = g->tensors[s].name, .view_base = -1, .dtype = OQCF_STRING,
                                .shape = shape_of(1, 3, 0, 0), .producer = -1, .is_const = 1,
                                .data = gdup(g, sv, sizeof sv), .nbytes = sizeof sv};

    int nd = oqc_tensor_add(g, "nodata");
    g->tensors[nd] = (OqcTensor){.name = g->tensors[nd].name, .view_base = -1, .dtype = OQCF_FLOAT,
                                 .shape = shape_of(1, 3, 0, 0), .producer = -1, .is_const = 1,
                                 .summary = "min=1 max=2"};

    int e = oqc_tensor_add(g, "empty");
    g->tensors[e] = (OqcTensor){.name = g->tensors[e].name, .view_base = -1, .dtype = OQCF_INT64,
                                .shape = shape_of(2, 0, 5, 0), .producer = -1, .is_const = 1,
                                .data = oqc_arena_alloc(a, 1), .nbytes = 0};

    int sc = oqc_tensor_add(g, "scalar");
    int64_t scv = INT64_MIN;
    g->tensors[sc] = (OqcTensor){.name = g->tensors[sc].name, .view_base = -1, .dtype = OQCF_INT64,
                                 .shape = shape_of(0, 0, 0, 0), .producer = -1, .is_const = 1,
                                 .data = gdup(g, &scv, 8), .nbytes = 8};

    int dead = oqc_tensor_add(g, "dead initializer");
    uint8_t dv[3] = {1, 2, 255};
    g->tensors[dead] = (OqcTensor){.name = g->tensors[dead].name, .view_base = -1, .dtype = OQCF_UINT8,
                                   .shape = shape_of(1, 3, 0, 0), .producer = -1,
                                   .is_const = 1, .data = gdup(g, dv, 3), .nbytes = 3};

    oqc_tensor_add(g, "unused, not written"); /* a tensor no node uses */

    int y = oqc_tensor_add(g, "y\ttab\nnl");
    g->tensors[y].dtype = OQCF_FLOAT;
    g->tensors[y].shape = shape_of(3, 1, -1, 4);
    g->tensors[y].quant = (OqcQuant){1, 1, 1000.00006f, 3.25f, 3.25f / 255, "entropy"};

    int z = oqc_tensor_add(g, "z"); /* dtype and rank unknown */
    int r1 = oqc_tensor_add(g, "r1");
    g->tensors[r1].dtype = OQCF_FLOAT;
    g->tensors[r1].shape = shape_of(1, -1, 0, 0); /* rank 1, extent unknown */
    g->tensors[r1].quant = (OqcQuant){1, 0, NAN, INFINITY, 1e-45f, NULL};
    int u = oqc_tensor_add(g, "\xf0\x9f\x98\x80 out");
    g->tensors[u].dtype = OQCF_FLOAT;

    int in0[2] = {x, w}, out0[1] = {y};
    int add = oqc_node_add(g, OQC_OP_Add, "Add", "add \\ 0", 2, in0, 1, out0);
    g->nodes[add].opset = 13;

    int in1[6] = {y, -1, s, nd, e, sc}, out1[3] = {z, -1, r1};
    int cu = oqc_node_add(g, OQC_OP_UNKNOWN, "Custom", "custom", 6, in1, 3, out1);
    OqcNode *n = &g->nodes[cu];
    n->domain = "com.example";
    n->opset = 1;
    OqcAttr *at = oqc_arena_alloc(a, 16 * sizeof *at);
    int k = 0;
    at[k++] = (OqcAttr){.name = "f", .type = OQC_ATTR_FLOAT, .f = 1000.00024f};
    at[k++] = (OqcAttr){.name = "fmin", .type = OQC_ATTR_FLOAT, .f = 1e-45f};
    at[k++] = (OqcAttr){.name = "fnan", .type = OQC_ATTR_FLOAT, .f = -NAN};
    at[k++] = (OqcAttr){.name = "i", .type = OQC_ATTR_INT, .i = INT64_MIN};
    at[k++] = (OqcAttr){.name = "s", .type = OQC_ATTR_STRING, .s = gdup(g, "a\0b\\c\n\x80", 8),
                        .slen = 7};
    at[k++] = (OqcAttr){.name = "s empty", .type = OQC_ATTR_STRING, .s = "", .slen = 0};
    /* 1000.00006f needs all 9 digits of "%.9g" to read back exactly */
    float fl[6] = {0.1f, -0.0f, INFINITY, -INFINITY, 16777217.0f, 1000.00006f};
    at[k++] = (OqcAttr){.name = "fl", .type = OQC_ATTR_FLOATS, .n = 6, .floats = gdup(g, fl, sizeof fl)};
    at[k++] = (OqcAttr){.name = "fl empty", .type = OQC_ATTR_FLOATS, .n = 0};
    int64_t il[3] = {INT64_MAX, -1, 0};
    at[k++] = (OqcAttr){.name = "il", .type = OQC_ATTR_INTS, .n = 3, .ints = gdup(g, il, sizeof il)};
    const char *sl[4] = {" ", "", "x y", "<\x01>"};
    at[k++] = (OqcAttr){.name = "sl", .type = OQC_ATTR_STRINGS, .n = 4, .strings = gdup(g, sl, sizeof sl)};
    OqcValue *tv = oqc_arena_alloc(a, 3 * sizeof *tv);
    int16_t hv[4] = {-1, 2, -32768, 32767};
    tv[0] = (OqcValue){OQCF_INT16, shape_of(2, 2, 2, 0), gdup(g, hv, 8), 8};
    tv[1] = (OqcValue){OQCF_STRING, shape_of(1, 2, 0, 0), gdup(g, sl, 2 * sizeof(char *)),
                       2 * sizeof(char *)};
    tv[2] = (OqcValue){OQCF_BOOL, shape_of(0, 0, 0, 0), gdup(g, "\1", 1), 1};
    at[k++] = (OqcAttr){.name = "t", .type = OQC_ATTR_TENSOR, .n = 1, .tensors = tv};
    at[k++] = (OqcAttr){.name = "ts", .type = OQC_ATTR_TENSORS, .n = 3, .tensors = tv};
    at[k++] = (OqcAttr){.name = "body", .type = OQC_ATTR_GRAPH, .opaque = "graph 'b' (3 nodes)"};
    at[k++] = (OqcAttr){.name = "sp", .type = OQC_ATTR_SPARSE_TENSOR};
    n->attr = at;
    n->nattr = k;

    int in2[1] = {z}, out2[1] = {u};
    int re = oqc_node_add(g, OQC_OP_Relu, "Relu", "", 1, in2, 1, out2);
    g->nodes[re].opset = 13;
    g->inputs = oqc_arena_alloc(a, sizeof(int));
    g->inputs[g->ninputs++] = x;
    g->outputs = oqc_arena_alloc(a, 2 * sizeof(int));
    g->outputs[g->noutputs++] = u;
    g->outputs[g->noutputs++] = r1;
    g->tensors[u].is_output = 1;
    g->tensors[r1].is_output = 1;
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_graph_toposort(g, &d);
    oqc_diag_free(&d);
    OQC_ASSERT(rc == 0);
    return g;
}

static void test_synthetic_round_trip(void) {
    if (!xmllint_present()) {
        CU_FAIL("xmllint is needed to validate against " SCHEMA);
        return;
    }
    OqcGraph *g = build_synthetic();
    CU_ASSERT(round_trip(g, "synthetic graph"));
    /* Deterministic: the same graph dumps to the same bytes twice. */
    CU_ASSERT_EQUAL(dump_xml_file(g, tmp_path("a/1.xml"), tmp_path("a/1.data"), NULL), 0);
    CU_ASSERT_EQUAL(dump_xml_file(g, tmp_path("a/2.xml"), tmp_path("a/2.data"), "1.data"), 0);
    CU_ASSERT(oqc_test_same_file(tmp_path("a/1.data"), tmp_path("a/2.data")));
    size_t n;
    char *x = oqc_test_read_file(tmp_path("a/1.xml"), &n);
    CU_ASSERT_PTR_NOT_NULL(x);
    if (x) {
        CU_ASSERT(oqc_test_same_file(tmp_path("a/1.xml"), tmp_path("a/2.xml"))); /* data ref from the path */
        CU_ASSERT_PTR_NULL(strstr(x, "unused, not written"));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "w \\\\x41 &lt;weight&gt; &amp; &quot;q&quot;"));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "value=\"a\\x00b\\\\c\\x0a\\x80\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "name=\"r1\" dtype=\"f32\" shape=\"?\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "name=\"z\" dtype=\"undef\"/>"));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "<in/>"));
        CU_ASSERT_PTR_NOT_NULL(strstr(x, "offset=\"64\""));
    }
    free(x);
    oqc_graph_free(g);
}

/* ---------------------------------------------------------- malformed input */

static const char base_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<oqc-ir version=\"1\" name=\"t\" ir_version=\"8\" producer=\"test\">\n"
    "  <opset domain=\"\" version=\"13\"/>\n"
    "  <tensor name=\"x\" dtype=\"f32\" shape=\"1x4\" flags=\"input\"/>\n"
    "  <tensor name=\"b\" dtype=\"f32\" shape=\"4\" flags=\"const\" summary=\"min=1 max=4\" "
    "data=\"m.data\" offset=\"0\" nbytes=\"16\"/>\n"
    "  <tensor name=\"y\" dtype=\"f32\" shape=\"1x4\" flags=\"output\"/>\n"
    "  <input name=\"x\"/>\n"
    "  <node op_type=\"Add\" domain=\"\" name=\"add\" opset=\"13\">\n"
    "    <in name=\"x\"/>\n"
    "    <in name=\"b\"/>\n"
    "    <out name=\"y\"/>\n"
    "  </node>\n"
    "  <output name=\"y\"/>\n"
    "</oqc-ir>\n";

enum { ANY_LINE = -1, NO_LINE = -2 };

/* Writes base_xml with `from` replaced by `to` (the whole document is `to` when from is
 * NULL) and a side file of data_len bytes (none when negative), then loads it: the load
 * must fail with a message containing `want` and naming the file with the line: `line`
 * when positive, the line of `from` when 0, some line for ANY_LINE, none for NO_LINE. */
static void expect_error(const char *from, const char *to, long data_len, int line,
                         const char *want) {
    char xml[256], data[256];
    snprintf(xml, sizeof xml, "%s", tmp_path("bad/m.xml"));
    snprintf(data, sizeof data, "%s", tmp_path("bad/m.data"));
    const char *at = from ? strstr(base_xml, from) : NULL;
    CU_ASSERT_FATAL(!from || at);
    size_t pre = from ? (size_t)(at - base_xml) : 0;
    char *text = malloc(sizeof base_xml + strlen(to) + 1);
    memcpy(text, base_xml, pre);
    strcpy(text + pre, to);
    if (from)
        strcat(text, at + strlen(from));
    if (line == 0) {
        line = 1;
        for (const char *p = base_xml; p < at; p++)
            line += *p == '\n';
    }
    CU_ASSERT_EQUAL(oqc_test_write_file(xml, text, strlen(text)), 0);
    free(text);
    static const float values[4] = {1, 2, 3, 4};
    unlink(data);
    if (data_len >= 0)
        CU_ASSERT_EQUAL(oqc_test_write_file(data, values, (size_t)data_len), 0);
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_load_xml(xml, &d);
    CU_ASSERT_PTR_NULL(g);
    oqc_graph_free(g);
    const char *msg = d.buf ? d.buf : "";
    char loc[300];
    snprintf(loc, sizeof loc, line > 0 ? "%s:%d: " : "%s:", xml, line);
    const char *m = strstr(msg, loc);
    int ok = m && strstr(msg, want);
    if (ok && line == ANY_LINE) { /* "FILE:DIGITS:" */
        const char *p = m + strlen(loc);
        ok = *p >= '0' && *p <= '9';
        p += strspn(p, "0123456789");
        ok = ok && *p == ':';
    }
    if (ok && line == NO_LINE)
        ok = !(m[strlen(loc)] >= '0' && m[strlen(loc)] <= '9');
    if (getenv("OQC_TEST_VERBOSE"))
        printf("\n  %s", msg);
    if (!ok)
        printf("\n  change '%s' -> '%s': the message should contain '%s' (line %d) and "
               "'%s', but is: %s", from ? from : "(document)", to, loc, line, want, msg);
    CU_ASSERT(ok);
    oqc_diag_free(&d);
}

static void test_malformed(void) {
    /* The base document is valid and loads. */
    const char *xml = tmp_path("bad/m.xml");
    static const float values[4] = {1, 2, 3, 4};
    CU_ASSERT_EQUAL(oqc_test_write_file(xml, base_xml, strlen(base_xml)), 0);
    CU_ASSERT_EQUAL(oqc_test_write_file(tmp_path("bad/m.data"), values, 16), 0);
    CU_ASSERT(!xmllint_present() || validates(xml));
    OqcGraph *g = load_xml_ok(xml);
    CU_ASSERT_PTR_NOT_NULL(g);
    if (g) {
        char *text = text_dump(g);
        CU_ASSERT(text && strstr(text, "const  %b f32[4] min=1 max=4\n"));
        CU_ASSERT(g->tensors[oqc_tensor_find(g, "b")].summary == NULL);
        free(text);
        oqc_graph_free(g);
    }
    OqcDiag d;
    oqc_diag_init(&d);
    CU_ASSERT_PTR_NULL(oqc_load_xml(tmp_path("bad/nonexistent.xml"), &d));
    CU_ASSERT(d.buf && strstr(d.buf, "nonexistent.xml: cannot open"));
    oqc_diag_free(&d);

    /* XML-level problems. */
    expect_error("  <output name=\"y\"/>\n</oqc-ir>\n", "  <output na", 16, ANY_LINE,
                 "not well-formed XML");
    expect_error(NULL, "", 16, ANY_LINE, "not well-formed XML");
    expect_error(NULL, "<?xml version=\"1.0\"?>\n<graph version=\"1\"/>\n", 16, 2,
                 "not <oqc-ir>");
    expect_error(NULL, "<?xml version=\"1.0\"?>\n<!DOCTYPE oqc-ir [<!ENTITY e SYSTEM "
                       "\"/etc/passwd\">]>\n<oqc-ir version=\"1\"><s>&e;</s></oqc-ir>\n",
                 16, NO_LINE, "DOCTYPE is not allowed");
    expect_error("version=\"1\" name", "version=\"2\" name", 16, 0, "version '2'");
    expect_error("<input name=\"x\"/>", "<inptu name=\"x\"/>", 16, 0, "unknown element");
    expect_error("<input name=\"x\"/>", "<input name=\"x\" extra=\"1\"/>", 16, 0,
                 "unknown attribute 'extra'");
    /* Tensors. */
    expect_error("dtype=\"f32\" shape=\"4\"", "dtype=\"f33\" shape=\"4\"", 16, 0,
                 "unknown dtype 'f33'");
    expect_error("shape=\"4\"", "shape=\"4x-1\"", 16, 0, "bad shape '4x-1'");
    expect_error("shape=\"4\"", "shape=\"1x1x1x1x1x1x1x1x4\"", 16, 0, "more than 8");
    expect_error("shape=\"4\"", "shape=\"65536x65536x2\"", 16, 0, "absurd");
    expect_error("flags=\"input\"", "flags=\"inptu\"", 16, 0, "unknown flag 'inptu'");
    expect_error("flags=\"input\"", "", 16, 7, "lacks the flag 'input'");
    expect_error("<tensor name=\"y\"", "<tensor name=\"x\"", 16, 0, "declared twice");
    expect_error("name=\"x\" dtype", "name=\"a\\qb\" dtype", 16, 0, "bad escape");
    expect_error("name=\"x\" dtype", "name=\"a\\x00b\" dtype", 16, 0, "NUL byte");
    /* Side data. */
    expect_error("offset=\"0\"", "offset=\"0\"", 8, 0, "m.data' is 8 bytes, too short");
    expect_error("offset=\"0\"", "offset=\"8\"", 16, 0, "too short for offset 8");
    expect_error("offset=\"0\"", "offset=\"0\"", -1, 0, "cannot open side data file");
    expect_error("offset=\"0\"", "offset=\"zero\"", 16, 0, "bad number 'zero'");
    expect_error("offset=\"0\"", "offset=\"99999999999999999999\"", 16, 0, "bad number");
    expect_error("offset=\"0\"", "offset=\"-64\"", 16, 0, "offset -64");
    expect_error("nbytes=\"16\"", "nbytes=\"12\"", 16, 0, "needs 16 bytes");
    expect_error("data=\"m.data\"", "data=\"../m.data\"", 16, 0, "relative path");
    expect_error(" summary=\"min=1 max=4\" data=\"m.data\" offset=\"0\" nbytes=\"16\"", "",
                 16, 0, "neither data nor a summary");
    /* Nodes and attributes. */
    expect_error("<in name=\"b\"/>", "<in name=\"ghost\"/>", 16, 0, "unknown tensor 'ghost'");
    expect_error("op_type=\"Add\" ", "", 16, 0, "missing attribute 'op_type'");
    expect_error("opset=\"13\">", "opset=\"13.0\">", 16, 0, "bad number '13.0'");
    expect_error("<out name=\"y\"/>", "<out name=\"y\"/><attr name=\"i\" type=\"INT\" "
                 "value=\"1.5\"/>", 16, 0, "bad number '1.5'");
    expect_error("<out name=\"y\"/>", "<out name=\"y\"/><attr name=\"i\" type=\"LONG\" "
                 "value=\"1\"/>", 16, 0, "unknown attribute type 'LONG'");
    expect_error("<out name=\"y\"/>", "<out name=\"y\"/><attr name=\"t\" type=\"TENSOR\">"
                 "<value dtype=\"f32\" shape=\"2\" hex=\"0000\"/></attr>", 16, 0,
                 "needs 8 bytes");
    expect_error("<out name=\"y\"/>", "<attr name=\"i\" type=\"INT\" value=\"1\"/><out "
                 "name=\"y\"/>", 16, 0, "misplaced");
    expect_error("\"Add\" domain=\"\" name=\"add\" opset=\"13\">\n    <in name=\"x\"/>\n"
                 "    <in name=\"b\"/>\n    <out name=\"y\"/>",
                 "\"Conv\" domain=\"\" name=\"add\" opset=\"13\">\n    <in name=\"x\"/>\n"
                 "    <in name=\"b\"/>\n    <out name=\"y\"/>\n"
                 "    <attr name=\"group\" type=\"FLOAT\" value=\"1\"/>",
                 16, 12, "attribute 'group' of Conv must be INT, not FLOAT");
    expect_error("<out name=\"y\"/>", "<out name=\"x\"/>", 16, NO_LINE,
                 "already a graph input");
    expect_error("<in name=\"b\"/>", "<in name=\"y\"/>", 16, NO_LINE, "cycle");
}

OQC_TEST_MAIN("xml", OQC_TEST(test_synthetic_round_trip), OQC_TEST(test_models_round_trip),
              OQC_TEST(test_malformed))
