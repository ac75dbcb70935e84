/* dump_xml.c - the XML form of the IR: oqc_dump_xml writes it (oqc_load_xml in
 * load_xml.c reads it back) (see ir.h; schema docs/oqc-ir.rng, user documentation docs/ir-xml.md; the three
 * change together).
 *
 * The XML describes a graph completely and exactly: dump -> load -> dump gives the same
 * bytes, and the reloaded graph's text dump equals the original's. What makes that hold:
 *   - every string (names, attribute strings, summaries) goes through one escape:
 *     a backslash is written "\\" and any byte XML cannot carry verbatim (controls,
 *     0x7f, bytes outside well-formed UTF-8) as "\xHH", so arbitrary ONNX bytes survive;
 *   - floats are written "%.9g" and read with strtof, which round-trips every float32;
 *   - shapes are exact: no `shape` attribute means even the rank is unknown, "?" is one
 *     unknown extent (so rank 1 with an unknown extent is not confused with rank -1);
 *   - constants' bytes go to a side file at 64-byte aligned offsets, never into the
 *     XML; without a side file a constant keeps only its summary text
 *     (OqcTensor.summary), so the reloaded graph still dumps identically;
 *   - tensors are written in id order and nodes in graph order, so the reloaded graph
 *     has the same relative ids and oqc_graph_toposort keeps the node order.
 * Not written: producer/consumer lists (derived, relinked on load) and has_value data
 * (derived by shape inference, which recomputes it).
 *
 * The reader is load_xml.c. */
#include "ir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>

#define XML_DATA_ALIGN 64 /* alignment of every constant in the side file */

/* Length of the well-formed UTF-8 sequence at p (n bytes left) that encodes a character
 * XML carries verbatim; 0 when the byte at p must be escaped. The caller escapes
 * backslashes. */
size_t oqc_xml_char_len(const unsigned char *p, size_t n) {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned c = p[0];
    if (c >= 0x20 && c < 0x7f)
        return 1;
    if (c < 0xc2 || c > 0xf4)
        return 0;
    size_t len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
        cp == 0xfffe || cp == 0xffff)
        return 0;
    return len;
}

/* ================================================================== writer */

/* State of one oqc_dump_xml call. */
typedef struct Writer {
    OqcGraph *g;              /* graph being written */
    OqcDiag *d;               /* where errors go */
    xmlTextWriterPtr w;       /* libxml2 writer on the output FILE */
    FILE *data;               /* side data file, NULL when constants' bytes are not written */
    OqcOutFile dataf;         /* the side data file being written (temporary, renamed) */
    const char *data_ref;     /* the side file's name as written in the XML */
    uint64_t data_off;        /* bytes written to the side file so far */
    char *buf;                /* scratch text: escaped strings, number lists, hex */
    size_t len;               /* bytes used in buf */
    size_t cap;               /* bytes allocated for buf */
    int failed;               /* a libxml2 call failed (the output FILE's error) */
    int bad;                  /* a constant's size does not match its type (reported) */
} Writer;

static void buf_add(Writer *W, const char *s, size_t n) {
    if (W->len + n + 1 > W->cap) {
        size_t cap = W->cap ? W->cap : 256;
        while (cap < W->len + n + 1)
            cap *= 2;
        char *b = realloc(W->buf, cap);
        if (!b)
            oqc_panic(__FILE__, __LINE__, "out of memory writing XML");
        W->buf = b;
        W->cap = cap;
    }
    memcpy(W->buf + W->len, s, n);
    W->len += n;
    W->buf[W->len] = 0;
}

static void buf_printf(Writer *W, const char *fmt, ...) OQC_PRINTF(2, 3);
static void buf_printf(Writer *W, const char *fmt, ...) {
    char tmp[64]; /* numbers only */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    OQC_ASSERT(n >= 0 && (size_t)n < sizeof tmp);
    buf_add(W, tmp, (size_t)n);
}

static void buf_clear(Writer *W) {
    W->len = 0;
    buf_add(W, "", 0);
}

/* s (n bytes, may hold NULs; NULL is "") escaped for the XML, in W->buf. */
static const char *buf_escaped(Writer *W, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    buf_clear(W);
    for (size_t i = 0, k; s && i < n; i += k) {
        k = p[i] == '\\' ? 0 : oqc_xml_char_len(p + i, n - i);
        if (k)
            buf_add(W, s + i, k);
        else if (p[i] == '\\')
            buf_add(W, "\\\\", 2);
        else
            buf_printf(W, "\\x%02x", p[i]);
        k = k ? k : 1;
    }
    return W->buf;
}

static void w_start(Writer *W, const char *el) {
    W->failed |= xmlTextWriterStartElement(W->w, BAD_CAST el) < 0;
}

static void w_end(Writer *W) { W->failed |= xmlTextWriterEndElement(W->w) < 0; }

/* Attribute whose value needs no escaping (numbers, keywords). */
static void w_attr(Writer *W, const char *name, const char *v) {
    W->failed |= xmlTextWriterWriteAttribute(W->w, BAD_CAST name, BAD_CAST v) < 0;
}

static void w_fmt(Writer *W, const char *name, const char *fmt, ...) OQC_PRINTF(3, 4);
static void w_fmt(Writer *W, const char *name, const char *fmt, ...) {
    char b[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    w_attr(W, name, b);
}

/* Attribute holding a string (escaped). */
static void w_str(Writer *W, const char *name, const char *s) {
    w_attr(W, name, buf_escaped(W, s, s ? strlen(s) : 0));
}

/* <s>escaped text</s> */
static void w_string_el(Writer *W, const char *s) {
    W->failed |= xmlTextWriterWriteElement(W->w, BAD_CAST "s",
                                           BAD_CAST buf_escaped(W, s, s ? strlen(s) : 0)) < 0;
}

/* shape="1x3x?x224" / "scalar"; nothing when the rank is unknown. */
static void w_shape(Writer *W, const OqcShape *s) {
    if (s->rank < 0)
        return;
    buf_clear(W);
    if (s->rank == 0)
        buf_add(W, "scalar", 6);
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] < 0)
            buf_add(W, i ? "x?" : "?", i ? 2 : 1);
        else
            buf_printf(W, "%s%" PRId64, i ? "x" : "", s->d[i]);
    }
    w_attr(W, "shape", W->buf);
}

/* An attribute's tensor: dtype, shape and its data inline (hex, or <s> per string). */
static void w_value(Writer *W, const OqcValue *v) {
    w_start(W, "value");
    w_attr(W, "dtype", oqc_dtype_name(v->dtype));
    w_shape(W, &v->shape);
    if (v->dtype != OQCF_STRING && v->data) {
        buf_clear(W);
        for (size_t i = 0; i < v->nbytes; i++)
            buf_printf(W, "%02x", ((const unsigned char *)v->data)[i]);
        w_attr(W, "hex", W->buf);
    }
    for (int64_t i = 0; v->dtype == OQCF_STRING && v->data && i < oqc_shape_numel(&v->shape);
         i++)
        w_string_el(W, ((const char *const *)v->data)[i]);
    w_end(W);
}

static void w_attribute(Writer *W, const OqcAttr *a) {
    w_start(W, "attr");
    w_str(W, "name", a->name);
    w_attr(W, "type", oqc_attr_type_name(a->type));
    switch (a->type) {
    case OQC_ATTR_FLOAT: w_fmt(W, "value", "%.9g", (double)a->f); break;
    case OQC_ATTR_INT: w_fmt(W, "value", "%" PRId64, a->i); break;
    case OQC_ATTR_STRING: w_attr(W, "value", buf_escaped(W, a->s, a->slen)); break;
    case OQC_ATTR_FLOATS:
    case OQC_ATTR_INTS:
        buf_clear(W);
        for (int i = 0; i < a->n; i++) {
            if (a->type == OQC_ATTR_INTS)
                buf_printf(W, "%s%" PRId64, i ? " " : "", a->ints[i]);
            else
                buf_printf(W, "%s%.9g", i ? " " : "", (double)a->floats[i]);
        }
        w_attr(W, "value", W->buf);
        break;
    case OQC_ATTR_STRINGS:
        for (int i = 0; i < a->n; i++)
            w_string_el(W, a->strings[i]);
        break;
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS:
        for (int i = 0; i < a->n; i++)
            w_value(W, &a->tensors[i]);
        break;
    default:
        if (a->opaque)
            w_str(W, "summary", a->opaque);
        break;
    }
    w_end(W);
}

/* Appends a constant's bytes to the side file and writes data/offset/nbytes. */
static void w_data(Writer *W, const OqcTensor *t) {
    static const unsigned char zeros[XML_DATA_ALIGN];
    int64_t numel = oqc_shape_numel(&t->shape);
    if (numel < 0 || (uint64_t)numel * oqcf_dtype_size(t->dtype) != t->nbytes) {
        W->bad = oqc_err(W->d, "%s: constant '%s' holds %zu bytes, which does not match "
                               "dtype %s and its shape: cannot write it as XML",
                         W->g->path, t->name, t->nbytes, oqc_dtype_name(t->dtype));
        return;
    }
    size_t pad = (size_t)((XML_DATA_ALIGN - W->data_off % XML_DATA_ALIGN) % XML_DATA_ALIGN);
    fwrite(zeros, 1, pad, W->data); /* errors: ferror at the end */
    if (t->nbytes)
        fwrite(t->data, 1, t->nbytes, W->data);
    w_str(W, "data", W->data_ref);
    w_fmt(W, "offset", "%" PRIu64, W->data_off + pad);
    w_fmt(W, "nbytes", "%zu", t->nbytes);
    W->data_off += pad + t->nbytes;
}

static void w_tensor(Writer *W, int id) {
    const OqcTensor *t = &W->g->tensors[id];
    w_start(W, "tensor");
    w_str(W, "name", t->name);
    w_attr(W, "dtype", oqc_dtype_name(t->dtype));
    w_shape(W, &t->shape);
    if (t->is_input || t->is_output || t->is_const) {
        buf_clear(W);
        buf_add(W, " input", t->is_input ? 6 : 0);
        buf_add(W, " output", t->is_output ? 7 : 0);
        buf_add(W, " const", t->is_const ? 6 : 0);
        w_attr(W, "flags", W->buf + 1);
    }
    if (t->view_base >= 0) {
        w_str(W, "view_of", W->g->tensors[t->view_base].name);
        w_fmt(W, "view_coff", "%" PRId64, t->view_coff);
    }
    if (t->is_const) {
        w_str(W, "summary", oqc_const_summary(W->g, id));
        if (t->data && W->data && oqcf_dtype_size(t->dtype) > 0)
            w_data(W, t);
    }
    for (int k = 0; t->dim_param && k < t->shape.rank; k++) {
        if (!t->dim_param[k])
            continue;
        w_start(W, "dim");
        w_fmt(W, "axis", "%d", k);
        w_str(W, "param", t->dim_param[k]);
        w_end(W);
    }
    if (t->quant.valid) {
        w_start(W, "quant");
        w_attr(W, "unsigned", t->quant.is_unsigned ? "1" : "0");
        w_fmt(W, "amax", "%.9g", (double)t->quant.amax);
        w_fmt(W, "threshold", "%.9g", (double)t->quant.threshold);
        w_fmt(W, "scale", "%.9g", (double)t->quant.scale);
        if (t->quant.method)
            w_str(W, "method", t->quant.method);
        if (t->quant.ch_scale) {   /* "%.9g" each, one space apart, as FLOATS */
            buf_clear(W);
            for (int32_t c = 0; c < t->quant.nch; c++)
                buf_printf(W, "%s%.9g", c ? " " : "", (double)t->quant.ch_scale[c]);
            w_attr(W, "channel-scales", W->buf);
        }
        w_end(W);
    }
    if (t->is_const && t->dtype == OQCF_STRING && t->data) {
        w_start(W, "strings");
        for (int64_t i = 0; i < oqc_shape_numel(&t->shape); i++)
            w_string_el(W, ((const char *const *)t->data)[i]);
        w_end(W);
    }
    w_end(W);
}

static void w_node(Writer *W, const OqcNode *n) {
    w_start(W, "node");
    w_str(W, "op_type", n->op_type);
    w_str(W, "domain", n->domain);
    w_str(W, "name", n->name);
    w_fmt(W, "opset", "%" PRId64, n->opset);
    switch (n->act.kind) {
    case OQCF_ACT_RELU: w_attr(W, "act", "relu"); break;
    case OQCF_ACT_CLIP: w_fmt(W, "act", "clip %.9g %.9g", n->act.p0, n->act.p1); break;
    case OQCF_ACT_LEAKY: w_fmt(W, "act", "leaky %.9g", n->act.p0); break;
    default: break;
    }
    if (n->out_channels) { /* a merged conv: channels per output, and per-channel acts */
        buf_clear(W);
        for (int k = 0; k < n->nout; k++)
            buf_printf(W, "%s%" PRId64, k ? " " : "", n->out_channels[k]);
        w_attr(W, "out_channels", W->buf);
    }
    if (n->act_per_channel && n->out_channels) {
        int64_t total = 0;
        for (int k = 0; k < n->nout; k++)
            total += n->out_channels[k];
        buf_clear(W);
        for (int64_t c = 0; c < total;) { /* runs: COUNT:relu, COUNT:clip:LO:HI, ... */
            const OqcfAct *a = &n->act_per_channel[c];
            int64_t run = 1;
            while (c + run < total && !memcmp(&n->act_per_channel[c + run], a, sizeof *a))
                run++;
            buf_printf(W, "%s%" PRId64 ":", c ? " " : "", run);
            if (a->kind == OQCF_ACT_RELU)
                buf_printf(W, "relu");
            else if (a->kind == OQCF_ACT_CLIP)
                buf_printf(W, "clip:%.9g:%.9g", a->p0, a->p1);
            else if (a->kind == OQCF_ACT_LEAKY)
                buf_printf(W, "leaky:%.9g", a->p0);
            else
                buf_printf(W, "none");
            c += run;
        }
        w_attr(W, "acts", W->buf);
    }
    for (int k = 0; k < n->nin + n->nout; k++) {
        int t = k < n->nin ? n->in[k] : n->out[k - n->nin];
        w_start(W, k < n->nin ? "in" : "out");
        if (t >= 0)
            w_str(W, "name", W->g->tensors[t].name);
        w_end(W);
    }
    for (int k = 0; k < n->nattr; k++)
        w_attribute(W, &n->attr[k]);
    w_end(W);
}

/* <input>/<output> naming tensor t. */
static void w_io(Writer *W, const char *el, int t) {
    w_start(W, el);
    w_str(W, "name", W->g->tensors[t].name);
    w_end(W);
}

int oqc_dump_xml(OqcGraph *g, FILE *out, const char *data_path, const char *data_ref,
                 OqcDiag *d) {
    Writer W = {.g = g, .d = d};
    if (data_path) {
        const char *slash = strrchr(data_path, '/');
        W.data_ref = data_ref ? data_ref : slash ? slash + 1 : data_path;
        if (oqc_out_open(&W.dataf, data_path, d) < 0)
            return oqc_err(d, "%s: cannot create the XML side data file", data_path);
        W.data = W.dataf.f;
    }
    xmlInitParser();
    xmlOutputBufferPtr ob = xmlOutputBufferCreateFile(out, NULL);
    W.w = ob ? xmlNewTextWriter(ob) : NULL; /* owns ob from here on */
    if (!W.w) {
        if (ob)
            xmlOutputBufferClose(ob);
        if (W.data)
            oqc_out_commit(&W.dataf, 0, d);
        return oqc_err(d, "%s: cannot start the XML writer", g->path);
    }
    W.failed = xmlTextWriterSetIndent(W.w, 1) < 0 ||
               xmlTextWriterSetIndentString(W.w, BAD_CAST "  ") < 0 ||
               xmlTextWriterStartDocument(W.w, NULL, "UTF-8", NULL) < 0;
    w_start(&W, "oqc-ir");
    w_attr(&W, "version", "1");
    w_str(&W, "name", g->name);
    w_fmt(&W, "ir_version", "%" PRId64, g->ir_version);
    w_str(&W, "producer", g->producer);
    for (int i = 0; i < g->nopsets; i++) {
        w_start(&W, "opset");
        w_str(&W, "domain", g->opsets[i].domain);
        w_fmt(&W, "version", "%" PRId64, g->opsets[i].version);
        w_end(&W);
    }
    /* The tensors that are part of the graph, in id order. */
    unsigned char *used = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin + g->nodes[i].nout; k++) {
            const OqcNode *n = &g->nodes[i];
            int t = k < n->nin ? n->in[k] : n->out[k - n->nin];
            if (t >= 0)
                used[t] = 1;
        }
    for (int i = 0; i < g->ntensors; i++) {
        const OqcTensor *t = &g->tensors[i];
        if (used[i] || t->is_input || t->is_output || t->is_const)
            w_tensor(&W, i);
    }
    for (int i = 0; i < g->ninputs; i++)
        w_io(&W, "input", g->inputs[i]);
    for (int i = 0; i < g->nnodes; i++)
        w_node(&W, &g->nodes[i]);
    for (int i = 0; i < g->noutputs; i++)
        w_io(&W, "output", g->outputs[i]);
    w_end(&W);
    W.failed |= xmlTextWriterEndDocument(W.w) < 0;
    xmlFreeTextWriter(W.w); /* flushes and frees ob; leaves out open */
    free(W.buf);
    int rc = W.bad;
    if (W.failed || fflush(out) != 0 || ferror(out))
        rc = oqc_err(d, "%s: error writing the XML dump", g->path);
    if (W.data && oqc_out_commit(&W.dataf, rc == 0, d) < 0 && rc == 0)
        rc = oqc_err(d, "%s: error writing the XML side data file", data_path);
    return rc;
}
