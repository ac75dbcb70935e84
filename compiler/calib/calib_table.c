/* calib_table.c - calibration tables: TensorRT's calibration cache and oqc's XML form,
 * written and read (see ir.h; user documentation docs/calibration.md, XML schema
 * docs/calib-table.rng; the three change together; tests in tests/unit/test_calib.c).
 *
 * TensorRT cache (text):
 *     TRT-8601-EntropyCalibration
 *     conv1: 3c88edfc
 * The first line names the TensorRT version (oqc writes 8601, i.e. 8.6.1, and reads any)
 * and the calibrator kind (any [A-Za-z0-9]*Calibration, optionally followed by digits
 * as in TensorRT's EntropyCalibration2). Each further line is a tensor name, ": ", and
 * the IEEE-754 bits of scale = T / 127 as 8 hex digits (written lowercase, read in
 * either case). The value never contains ':', so a line is split at its LAST ": " and
 * names may hold ':' and spaces (TensorRT's own "(Unnamed Layer* 3) [Scale]_output").
 * A name with a newline cannot be written. On reading, a trailing \r is dropped (files
 * edited on Windows), empty lines are skipped, and anything else that is not
 * "NAME: HHHHHHHH" is an error naming file and line. The cache keeps only the scale:
 * a read entry has threshold = scale * 127, amax = threshold, signed, method "table".
 * An unsigned tensor is written as T / 127 too, as TensorRT expects; a signed entry's
 * own scale field is written (not T / 127 recomputed), so a cache read and written
 * again is byte-identical.
 *
 * XML (docs/calib-table.rng): <oqc-calib version="1" samples="..."> with one
 * <tensor name method unsigned amax threshold scale/> per entry; floats "%.9g" (exact
 * for float32 through strtof), names escaped as in the IR's XML form (a backslash as
 * \\, bytes XML cannot carry as \xHH). The reader checks the structure, every value and
 * that scale matches threshold and signedness, with errors naming file and line.
 *
 * Both writers write a temporary file beside the target and rename it into place. */
#include "calib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>

#define TRT_VERSION "8601" /* the TensorRT version written in cache headers (8.6.1) */

/* ================================================================== common */

/* 1 when s is a valid scale for threshold t with divisor div (127 or 255): either
 * computed from T (s = T / div) or T computed from it (T = s * div, a TRT import). */
static int scale_matches(float t, float s, float div) {
    return s == t / div || s * div == t;
}

/* A finite float that is not negative (nor -0). */
static int nonneg_finite(float v) { return isfinite(v) && !signbit(v); }

/* name for messages: at most 200 bytes, with newlines and control bytes as \xHH. */
static const char *shown(const char *name, char *buf, size_t size) {
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && k + 5 < size; p++) {
        if (*p < 0x20 || *p == 0x7f)
            k += (size_t)snprintf(buf + k, size - k, "\\x%02x", *p);
        else
            buf[k++] = (char)*p;
    }
    buf[k] = 0;
    return buf;
}

/* Checks what both forms require of an entry before writing it. */
static int check_entry(const char *path, const OqcCalibEntry *e, int need_method,
                       OqcDiag *d) {
    char nb[256];
    if (!e->name || !e->name[0])
        return oqc_err(d, "%s: a calibration entry has no tensor name", path);
    if (!nonneg_finite(e->threshold) || !nonneg_finite(e->scale))
        return oqc_err(d, "%s: tensor '%s': threshold %g and scale %g must be finite and "
                          "not negative", path, shown(e->name, nb, sizeof nb),
                       (double)e->threshold, (double)e->scale);
    if (!scale_matches(e->threshold, e->scale, e->is_unsigned ? 255.0f : 127.0f))
        return oqc_err(d, "%s: tensor '%s': scale %.9g is not threshold %.9g / %d", path,
                       shown(e->name, nb, sizeof nb), (double)e->scale,
                       (double)e->threshold, e->is_unsigned ? 255 : 127);
    if (need_method && (!e->method || !nonneg_finite(e->amax)))
        return oqc_err(d, "%s: tensor '%s': %s", path, shown(e->name, nb, sizeof nb),
                       e->method ? "amax must be finite and not negative" : "no method");
    for (int32_t c = 0; c < e->nch; c++)
        if (!nonneg_finite(e->ch_threshold[c]))
            return oqc_err(d, "%s: tensor '%s': channel %d's threshold %g must be finite "
                              "and not negative", path, shown(e->name, nb, sizeof nb), (int)c,
                           (double)e->ch_threshold[c]);
    return 0;
}

/* A set of names (open addressing) for finding duplicates; malloc'd. */
typedef struct NameSet {
    const char **slot;   /* names, NULL for free slots */
    long *line;          /* line of each name */
    size_t cap;          /* slots (power of two) */
    size_t n;            /* names held */
} NameSet;

static uint64_t hash_str(const char *s) {
    uint64_t h = 14695981039346656037u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* Adds name (kept by pointer) seen at line; returns 0, or the line it was seen at
 * before. */
static long nameset_add(NameSet *S, const char *name, long line) {
    if (2 * (S->n + 1) > S->cap) { /* keep it at most half full: rehash into twice the size */
        size_t cap = S->cap ? 2 * S->cap : 64;
        NameSet T = {.slot = calloc(cap, sizeof *T.slot), .line = calloc(cap, sizeof *T.line),
                     .cap = cap, .n = 0};
        if (!T.slot || !T.line)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        for (size_t i = 0; i < S->cap; i++)
            if (S->slot[i])
                nameset_add(&T, S->slot[i], S->line[i]);
        free(S->slot);
        free(S->line);
        *S = T;
    }
    size_t i = (size_t)hash_str(name) & (S->cap - 1);
    for (; S->slot[i]; i = (i + 1) & (S->cap - 1))
        if (!strcmp(S->slot[i], name))
            return S->line[i];
    S->slot[i] = name;
    S->line[i] = line;
    S->n++;
    return 0;
}

static void nameset_free(NameSet *S) {
    free(S->slot);
    free(S->line);
}

/* An entry as imported from a table: no histogram, no divergence, shape unknown. */
static void imported_entry(OqcCalibEntry *e) {
    memset(e, 0, sizeof *e);
    e->clipped = NAN;
    e->kl = NAN;
    e->shape.rank = -1;
}

/* Appends a zeroed entry to the arena array *e of *n entries (capacity doubling). */
static OqcCalibEntry *push_entry(OqcArena *a, OqcCalibEntry **e, int *n) {
    if ((*n & (*n - 1)) == 0) /* n is 0 or a power of two: the array is full */
        *e = oqc_arena_grow(a, *e, (size_t)*n, *n ? 2 * (size_t)*n : 1, sizeof **e);
    OqcCalibEntry *x = &(*e)[(*n)++];
    imported_entry(x);
    return x;
}

/* check_entry for each of the n entries, and no name twice. */
static int check_entries(const char *path, const OqcCalibEntry *e, int n, int need_method,
                         OqcDiag *d) {
    NameSet seen = {0};
    char nb[256];
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = check_entry(path, &e[i], need_method, d);
        if (rc == 0 && nameset_add(&seen, e[i].name, i + 1))
            rc = oqc_err(d, "%s: tensor '%s' has two entries", path,
                         shown(e[i].name, nb, sizeof nb));
    }
    nameset_free(&seen);
    return rc;
}

/* ================================================================== TensorRT cache */

/* 1 when k is [A-Za-z0-9]*Calibration[0-9]* (e.g. EntropyCalibration2). */
static int trt_kind_ok(const char *k, size_t len) {
    size_t end = len;
    while (end > 0 && k[end - 1] >= '0' && k[end - 1] <= '9')
        end--;
    if (end < 11 || memcmp(k + end - 11, "Calibration", 11) != 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
              (k[i] >= '0' && k[i] <= '9')))
            return 0;
    return 1;
}

int oqc_table_write_trt(const char *path, const char *kind, const OqcCalibEntry *e, int n,
                        OqcDiag *d) {
    char header[128], nb[256];
    kind = kind ? kind : "Entropy";
    size_t kl = strlen(kind);
    if (kl == 0 || kl > 63 ||
        strspn(kind, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != kl)
        return oqc_err(d, "%s: calibrator kind '%s' must be 1 to 63 letters or digits "
                          "(e.g. Entropy, MinMax, EntropyCalibration2)", path, kind);
    /* "EntropyCalibration2" is used as is, "Entropy" gets the suffix. */
    snprintf(header, sizeof header, "TRT-" TRT_VERSION "-%s%s", kind,
             trt_kind_ok(kind, kl) ? "" : "Calibration");
    if (check_entries(path, e, n, 0, d) < 0)
        return -1;
    uint32_t *bits = malloc(((size_t)n + 1) * sizeof *bits);
    if (!bits)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < n; i++) {
        if (strchr(e[i].name, '\n')) {
            free(bits);
            return oqc_err(d, "%s: tensor '%s': a name containing a newline cannot be "
                              "written to a TensorRT calibration cache (use the XML form)",
                           path, shown(e[i].name, nb, sizeof nb));
        }
        /* Signed: the entry's scale, exactly (it is T / 127 or T was made from it).
         * Unsigned: TensorRT still wants T / 127. */
        float s = e[i].is_unsigned ? e[i].threshold / 127.0f : e[i].scale;
        memcpy(&bits[i], &s, sizeof s);
    }
    OqcOutFile of;
    if (oqc_out_open(&of, path, d) < 0) {
        free(bits);
        return -1;
    }
    int ok = fprintf(of.f, "%s\n", header) > 0;
    for (int i = 0; ok && i < n; i++)
        ok = fprintf(of.f, "%s: %08" PRIx32 "\n", e[i].name, bits[i]) > 0;
    free(bits);
    if (!ok)
        oqc_err(d, "%s: error writing the file", path);
    return oqc_out_commit(&of, ok, d);
}

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One "NAME: HHHHHHHH" line (len bytes, \n and a trailing \r removed) into e. */
static int trt_line(const char *path, long ln, char *line, size_t len, OqcArena *a,
                    OqcCalibEntry *e, OqcDiag *d) {
    char *sep = NULL;
    for (char *p = line; (p = strstr(p, ": ")) != NULL; p++)
        sep = p;
    if (!sep || sep == line)
        return oqc_err(d, "%s:%ld: expected 'TENSOR_NAME: HHHHHHHH' (a name, \": \" and 8 hex "
                          "digits)", path, ln);
    const char *hx = sep + 2;
    char nb[256];
    int good = len - (size_t)(hx - line) == 8;
    uint32_t v = 0;
    for (size_t k = 0; good && k < 8; k++) {
        good = hexval(hx[k]) >= 0;
        v = v << 4 | (uint32_t)(good ? hexval(hx[k]) : 0);
    }
    if (!good)
        return oqc_err(d, "%s:%ld: the value '%s' is not 8 hex digits (the float32 bits of "
                          "the scale, e.g. 3c88edfc)", path, ln, shown(hx, nb, sizeof nb));
    float s;
    memcpy(&s, &v, sizeof s);
    *sep = 0;
    if (!nonneg_finite(s))
        return oqc_err(d, "%s:%ld: tensor '%s': scale %s is %s", path, ln,
                       shown(line, nb, sizeof nb), hx,
                       isfinite(s) ? "negative" : "not a finite number");
    e->name = oqc_arena_strndup(a, line, (size_t)(sep - line));
    e->scale = s;
    e->threshold = s * 127.0f;
    e->amax = e->threshold;
    e->method = "table";
    return 0;
}

int oqc_table_read_trt(const char *path, OqcArena *a, OqcCalibEntry **e, int *n, OqcDiag *d) {
    *e = NULL;
    *n = 0;
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    char *line = NULL, nb[256];
    size_t cap = 0;
    ssize_t got;
    long ln = 0;
    int rc = 0;
    NameSet seen = {0};
    OqcCalibEntry *es = NULL;
    int ne = 0;
    while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
        size_t len = (size_t)got;
        ln++;
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
        if (strlen(line) != len) {
            rc = oqc_err(d, "%s:%ld: the line contains a NUL byte: not a calibration cache",
                         path, ln);
        } else if (ln == 1) {
            const char *v = line + 4, *dash = strchr(v, '-');
            if (strncmp(line, "TRT-", 4) != 0 || !dash || dash == v ||
                !trt_kind_ok(dash + 1, strlen(dash + 1)))
                rc = oqc_err(d, "%s:1: not a TensorRT calibration cache: the first line must "
                                "be TRT-<version>-<Kind>Calibration (e.g. "
                                "TRT-8601-EntropyCalibration2), not '%s'",
                             path, shown(line, nb, sizeof nb));
        } else if (len > 0) {
            OqcCalibEntry *x = push_entry(a, &es, &ne);
            if (trt_line(path, ln, line, len, a, x, d) < 0) {
                rc = -1;
            } else {
                long first = nameset_add(&seen, x->name, ln);
                if (first)
                    rc = oqc_err(d, "%s:%ld: tensor '%s' is listed twice (first on line %ld)",
                                 path, ln, shown(x->name, nb, sizeof nb), first);
            }
        }
    }
    if (rc == 0 && ferror(f))
        rc = oqc_err(d, "%s: error reading: %s", path, strerror(errno));
    else if (rc == 0 && ln == 0)
        rc = oqc_err(d, "%s:1: empty file: not a TensorRT calibration cache (the first line "
                        "must be TRT-<version>-<Kind>Calibration)", path);
    free(line);
    nameset_free(&seen);
    fclose(f);
    if (rc < 0)
        return -1;
    *e = es;
    *n = ne;
    return 0;
}

/* ================================================================== XML */


/* s escaped (\\ and \xHH) into a malloc'd string. */
static char *xml_escape(const char *s) {
    size_t n = strlen(s), k = 0;
    char *o = malloc(4 * n + 1);
    if (!o)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t c = p[i] == '\\' ? 0 : oqc_xml_char_len(p + i, n - i);
        if (c) {
            memcpy(o + k, s + i, c);
            k += c;
            i += c;
        } else {
            k += (size_t)(p[i] == '\\' ? snprintf(o + k, 3, "\\\\")
                                       : snprintf(o + k, 5, "\\x%02x", p[i]));
            i++;
        }
    }
    o[k] = 0;
    return o;
}

/* e's channel thresholds as "%.9g" numbers separated by one space; malloc'd. */
static char *channel_list(const OqcCalibEntry *e) {
    size_t cap = (size_t)e->nch * 17 + 1, k = 0;
    char *o = malloc(cap);
    if (!o)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    o[0] = 0;
    for (int32_t c = 0; c < e->nch; c++)
        k += (size_t)snprintf(o + k, cap - k, c ? " %.9g" : "%.9g", (double)e->ch_threshold[c]);
    return o;
}

int oqc_table_write_xml(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                        OqcDiag *d) {
    return oqc_table_write_xml_ex(path, e, n, samples, NULL, d);
}

int oqc_table_write_xml_ex(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                           const OqcTableExtra *x, OqcDiag *d) {
    const char *float_layers = x ? x->float_layers : NULL;
    const char *preprocess = x ? x->preprocess : NULL;
    if (check_entries(path, e, n, 1, d) < 0)
        return -1;
    if (samples < 0)
        return oqc_err(d, "%s: negative sample count %" PRId64, path, samples);
    OqcOutFile of;
    if (oqc_out_open(&of, path, d) < 0)
        return -1;
    xmlInitParser();
    xmlOutputBufferPtr ob = xmlOutputBufferCreateFile(of.f, NULL);
    xmlTextWriterPtr w = ob ? xmlNewTextWriter(ob) : NULL; /* owns ob from here on */
    if (!w) {
        if (ob)
            xmlOutputBufferClose(ob);
        oqc_err(d, "%s: cannot start writing XML", path);
        return oqc_out_commit(&of, 0, d);
    }
    char num[64];
    int bad = xmlTextWriterSetIndent(w, 1) < 0 ||
              xmlTextWriterSetIndentString(w, BAD_CAST "  ") < 0 ||
              xmlTextWriterStartDocument(w, NULL, "UTF-8", NULL) < 0 ||
              xmlTextWriterStartElement(w, BAD_CAST "oqc-calib") < 0 ||
              xmlTextWriterWriteAttribute(w, BAD_CAST "version", BAD_CAST "1") < 0;
    snprintf(num, sizeof num, "%" PRId64, samples);
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "samples", BAD_CAST num) < 0;
    if (preprocess) /* a canonical spec: plain ASCII, no escape needed */
        bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "preprocess", BAD_CAST preprocess) < 0;
    for (int i = 0; i < n && !bad; i++) {
        char *name = xml_escape(e[i].name), *method = xml_escape(e[i].method);
        const struct { const char *attr; float v; } fl[] = {
            {.attr = "amax", .v = e[i].amax},
            {.attr = "threshold", .v = e[i].threshold},
            {.attr = "scale", .v = e[i].scale}};
        bad |= xmlTextWriterStartElement(w, BAD_CAST "tensor") < 0 ||
               xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST name) < 0 ||
               xmlTextWriterWriteAttribute(w, BAD_CAST "method", BAD_CAST method) < 0 ||
               xmlTextWriterWriteAttribute(w, BAD_CAST "unsigned",
                                           BAD_CAST(e[i].is_unsigned ? "1" : "0")) < 0;
        for (int k = 0; k < 3; k++) {
            snprintf(num, sizeof num, "%.9g", (double)fl[k].v);
            bad |= xmlTextWriterWriteAttribute(w, BAD_CAST fl[k].attr, BAD_CAST num) < 0;
        }
        if (e[i].nch) {
            char *list = channel_list(&e[i]);
            bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "channels", BAD_CAST list) < 0;
            free(list);
        }
        bad |= xmlTextWriterEndElement(w) < 0;
        free(name);
        free(method);
    }
    /* The layers mixed precision keeps float: one <float-layer> per name of the list. */
    for (const char *p = float_layers; p && *p && !bad;) {
        size_t len = strcspn(p, ",");
        char *one = malloc(len + 1), *name = NULL;
        if (!one)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        memcpy(one, p, len);
        one[len] = 0;
        name = xml_escape(one);
        bad |= xmlTextWriterStartElement(w, BAD_CAST "float-layer") < 0 ||
               xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST name) < 0 ||
               xmlTextWriterEndElement(w) < 0;
        free(name);
        free(one);
        p += len + (p[len] == ',');
    }
    bad |= xmlTextWriterEndElement(w) < 0 || xmlTextWriterEndDocument(w) < 0;
    xmlFreeTextWriter(w); /* flushes and frees ob; leaves the file open */
    if (bad)
        oqc_err(d, "%s: error writing the file", path);
    return oqc_out_commit(&of, !bad, d);
}

/* State of one oqc_table_read_xml call. */
typedef struct XReader {
    const char *path;    /* the file (messages) */
    OqcArena *a;         /* receives names and entries */
    OqcDiag *d;          /* errors */
} XReader;

/* "FILE:LINE: <elem>: message". */
static int xerr(XReader *R, xmlNodePtr n, const char *fmt, ...) OQC_PRINTF(3, 4);
static int xerr(XReader *R, xmlNodePtr n, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oqc_err(R->d, "%s:%ld: <%s>: %s", R->path, xmlGetLineNo(n), (const char *)n->name,
                   msg);
}

/* Rejects attributes of n other than the space-separated list allowed, and children
 * other than elements named child (NULL: none) or white space and comments. */
/* Whether name is one of the space-separated words of list. */
static int x_word(const char *list, const char *name) {
    size_t l = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)); p += l)
        if ((p == list || p[-1] == ' ') && (!p[l] || p[l] == ' '))
            return 1;
    return 0;
}

/* Checks n's attributes against allowed and its children against child (both lists of
 * space-separated names; child NULL: no element children). */
static int x_check(XReader *R, xmlNodePtr n, const char *allowed, const char *child) {
    for (xmlAttrPtr at = n->properties; at; at = at->next) {
        const char *nm = (const char *)at->name;
        if (at->ns || !x_word(allowed, nm))
            return xerr(R, n, "unknown attribute '%s' (allowed: %s)", nm, allowed);
    }
    for (xmlNodePtr c = n->children; c; c = c->next) {
        const char *t = (const char *)c->content;
        if (c->type == XML_COMMENT_NODE || c->type == XML_PI_NODE ||
            (c->type == XML_TEXT_NODE && t && strspn(t, " \t\r\n") == strlen(t)))
            continue;
        if (c->type != XML_ELEMENT_NODE || !child || c->ns ||
            !x_word(child, (const char *)c->name))
            return xerr(R, c->type == XML_ELEMENT_NODE ? c : n,
                        "unexpected %s inside <%s>%s%s%s",
                        c->type == XML_ELEMENT_NODE ? "element" : "text or node",
                        (const char *)n->name, child ? " (only <" : "", child ? child : "",
                        child ? "> elements)" : "");
    }
    return 0;
}

/* Required attribute name of n, copied into the arena. */
static int x_attr(XReader *R, xmlNodePtr n, const char *name, const char **v) {
    xmlChar *x = xmlGetNoNsProp(n, BAD_CAST name);
    *v = x ? oqc_arena_strdup(R->a, (const char *)x) : NULL;
    xmlFree(x);
    return *v ? 0 : xerr(R, n, "missing attribute '%s'", name);
}

/* Undoes xml_escape in place. */
static int x_unescape(XReader *R, xmlNodePtr n, const char *what, char *s) {
    size_t k = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] != '\\') {
            s[k++] = s[i];
        } else if (s[i + 1] == '\\') {
            s[k++] = s[i++];
        } else if (s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0 &&
                   (hexval(s[i + 2]) | hexval(s[i + 3]))) {
            s[k++] = (char)(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
            i += 3;
        } else {
            return xerr(R, n, "%s: bad escape at byte %zu (only \\\\ and \\xHH, not \\x00, "
                              "are allowed)", what, i);
        }
    }
    s[k] = 0;
    return 0;
}

/* A float attribute: finite, not negative, as written by "%.9g". */
static int x_float(XReader *R, xmlNodePtr n, const char *name, float *f) {
    const char *v;
    char *end;
    if (x_attr(R, n, name, &v) < 0)
        return -1;
    *f = v[0] >= '0' && v[0] <= '9' ? strtof(v, &end) : NAN; /* no sign, space, hex */
    if ((v[0] >= '0' && v[0] <= '9' && *end) || strpbrk(v, "xX") || !nonneg_finite(*f))
        return xerr(R, n, "attribute '%s': '%s' is not a finite number >= 0", name, v);
    return 0;
}

/* The optional attribute "channels": one threshold per channel, each as x_float takes
 * it, separated by one space. */
static int x_channels(XReader *R, xmlNodePtr n, OqcCalibEntry *e) {
    xmlChar *x = xmlGetNoNsProp(n, BAD_CAST "channels");
    if (!x)
        return 0;
    const char *v = (const char *)x;
    int32_t cnt = 1;
    for (const char *p = v; *p; p++)
        cnt += *p == ' ';
    float *t = oqc_arena_alloc(R->a, (size_t)cnt * sizeof *t);
    const char *p = v;
    int rc = 0;
    for (int32_t c = 0; c < cnt && rc == 0; c++) {
        char *end;
        t[c] = *p >= '0' && *p <= '9' ? strtof(p, &end) : NAN;
        if (!(*p >= '0' && *p <= '9') || (*end && *end != ' ') || !nonneg_finite(t[c]) ||
            (*end == ' ' && c + 1 == cnt))
            rc = xerr(R, n, "attribute 'channels': value %d is not a finite number >= 0 "
                            "(the values are separated by one space)", (int)c + 1);
        else
            p = *end ? end + 1 : end;
    }
    xmlFree(x);
    e->nch = cnt;
    e->ch_threshold = t;
    return rc;
}

static int x_tensor(XReader *R, xmlNodePtr n, OqcCalibEntry *e) {
    const char *name, *method, *uns;
    if (x_check(R, n, "name method unsigned amax threshold scale channels", NULL) < 0 ||
        x_attr(R, n, "name", &name) < 0 || x_attr(R, n, "method", &method) < 0 ||
        x_attr(R, n, "unsigned", &uns) < 0 || x_unescape(R, n, "name", (char *)name) < 0 ||
        x_unescape(R, n, "method", (char *)method) < 0 ||
        x_float(R, n, "amax", &e->amax) < 0 || x_float(R, n, "threshold", &e->threshold) < 0 ||
        x_float(R, n, "scale", &e->scale) < 0 || x_channels(R, n, e) < 0)
        return -1;
    if (!name[0])
        return xerr(R, n, "empty tensor name");
    OqcDiag scratch;
    OqcCalibMethod m;
    double param;
    oqc_diag_init(&scratch);
    int known = !strcmp(method, "table") ||
                oqc_calib_method_parse(method, &m, &param, &scratch) == 0;
    oqc_diag_free(&scratch);
    if (!known)
        return xerr(R, n, "tensor '%s': unknown method '%s' (entropy, max, percentile:P, mse "
                          "or table)", name, method);
    if (strcmp(uns, "0") != 0 && strcmp(uns, "1") != 0)
        return xerr(R, n, "tensor '%s': attribute 'unsigned' is '%s', not 0 or 1", name, uns);
    e->name = name;
    e->method = method;
    e->is_unsigned = uns[0] == '1';
    if (!scale_matches(e->threshold, e->scale, e->is_unsigned ? 255.0f : 127.0f))
        return xerr(R, n, "tensor '%s': scale %.9g does not match threshold %.9g / %d", name,
                    (double)e->scale, (double)e->threshold, e->is_unsigned ? 255 : 127);
    return 0;
}

/* A <float-layer name="..."/>: appended to the comma list *layers (arena). */
static int x_float_layer(XReader *R, xmlNodePtr n, const char **layers) {
    const char *v;
    if (x_check(R, n, "name", NULL) < 0 || x_attr(R, n, "name", &v) < 0)
        return -1;
    char *name = oqc_arena_strdup(R->a, v);
    if (x_unescape(R, n, "name", name) < 0)
        return -1;
    if (!*name || strchr(name, ','))
        return xerr(R, n, "a layer name must be non-empty and hold no comma");
    *layers = *layers ? oqc_arena_printf(R->a, "%s,%s", *layers, name) : name;
    return 0;
}

static int x_root(XReader *R, xmlDocPtr doc, OqcCalibEntry **e, int *n, int64_t *samples,
                  OqcTableExtra *extra) {
    xmlNodePtr root = xmlDocGetRootElement(doc);
    const char *ver, *smp;
    char *end, nb[256];
    if (doc->intSubset || doc->extSubset)
        return oqc_err(R->d, "%s: a DOCTYPE is not allowed in a calibration table", R->path);
    if (!root || root->ns || !xmlStrEqual(root->name, BAD_CAST "oqc-calib"))
        return oqc_err(R->d, "%s:%ld: the root element is <%s>, not <oqc-calib>: not an oqc "
                             "calibration table", R->path, root ? xmlGetLineNo(root) : 0L,
                       root ? (const char *)root->name : "");
    if (x_check(R, root, "version samples preprocess", "tensor float-layer") < 0 ||
        x_attr(R, root, "version", &ver) < 0)
        return -1;
    if (strcmp(ver, "1") != 0)
        return xerr(R, root, "version '%s' is not supported (this oqc reads version 1)", ver);
    if (x_attr(R, root, "samples", &smp) < 0)
        return -1;
    errno = 0;
    long long s = smp[0] >= '0' && smp[0] <= '9' ? strtoll(smp, &end, 10) : -1;
    if (s < 0 || errno || *end)
        return xerr(R, root, "attribute 'samples': '%s' is not an integer >= 0", smp);
    *samples = s;
    xmlChar *pp = xmlGetNoNsProp(root, BAD_CAST "preprocess");
    if (pp) {
        OqcPreprocess check;
        OqcDiag scratch;
        oqc_diag_init(&scratch);
        int ok = oqc_preprocess_parse((const char *)pp, &check, &scratch) == 0;
        oqc_diag_free(&scratch);
        extra->preprocess = oqc_arena_strdup(R->a, (const char *)pp);
        if (!ok) {
            int rc = xerr(R, root, "attribute 'preprocess': '%s' is not a valid spec (see "
                                   "docs/images.md)", (const char *)pp);
            xmlFree(pp);
            return rc;
        }
        xmlFree(pp);
    }
    NameSet seen = {0};
    int rc = 0;
    for (xmlNodePtr c = root->children; c && rc == 0; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (xmlStrEqual(c->name, BAD_CAST "float-layer")) {   /* x_check allowed only */
            rc = x_float_layer(R, c, &extra->float_layers);      /* these two elements */
            continue;
        }
        OqcCalibEntry *x = push_entry(R->a, e, n);
        if (x_tensor(R, c, x) < 0) {
            rc = -1;
        } else {
            long first = nameset_add(&seen, x->name, xmlGetLineNo(c));
            if (first)
                rc = xerr(R, c, "tensor '%s' is listed twice (first on line %ld)",
                          shown(x->name, nb, sizeof nb), first);
        }
    }
    nameset_free(&seen);
    return rc;
}

int oqc_table_read_xml(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                       int64_t *samples, OqcDiag *d) {
    return oqc_table_read_xml_ex(path, a, e, n, samples, NULL, d);
}

int oqc_table_read_xml_ex(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                          int64_t *samples, OqcTableExtra *extra, OqcDiag *d) {
    OqcTableExtra x = {.float_layers = NULL, .preprocess = NULL};
    if (extra)
        *extra = x;
    *e = NULL;
    *n = 0;
    *samples = 0;
    int fd = oqc_in_open(path, NULL, NULL, d);
    if (fd < 0)
        return -1;
    xmlInitParser();
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        close(fd);
        return oqc_err(d, "%s: cannot create an XML parser", path);
    }
    /* No network, no DTD (a DOCTYPE is rejected below), big line numbers. */
    xmlDocPtr doc = xmlCtxtReadFd(ctxt, fd, path, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                      XML_PARSE_BIG_LINES);
    close(fd);
    if (!doc) {
        const xmlError *err = xmlCtxtGetLastError(ctxt);
        const char *m = err && err->message ? err->message : "unknown error";
        int rc = oqc_err(d, "%s:%d: not well-formed XML: %.*s", path, err ? err->line : 0,
                         (int)strcspn(m, "\n"), m);
        xmlFreeParserCtxt(ctxt);
        return rc;
    }
    xmlFreeParserCtxt(ctxt);
    XReader R = {.path = path, .a = a, .d = d};
    OqcCalibEntry *es = NULL;
    int ne = 0;
    int rc = x_root(&R, doc, &es, &ne, samples, &x);
    xmlFreeDoc(doc);
    if (rc < 0) {
        *samples = 0;
        return -1;
    }
    *e = es;
    *n = ne;
    if (extra)
        *extra = x;
    return 0;
}
