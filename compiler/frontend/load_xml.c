/* load_xml.c - oqc_load_xml: reads the XML form of the IR back into a graph (see ir.h;
 * the format is written by dump_xml.c, whose header explains why the round trip is
 * exact; schema docs/oqc-ir.rng; the three change together).
 *
 * The reader trusts nothing. It first checks the document's structure against
 * xml_spec (elements, their order, attributes, text), then reads it; numbers, names and
 * sizes are checked before anything is allocated, and errors name the file and line.
 * It never uses the network, rejects DTDs (so no entities beyond the predefined ones),
 * and reads side files only below the XML file's directory. */
#include "frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>

#define XML_DATA_ALIGN 64 /* alignment of every constant in the side file */

/* State of one oqc_load_xml call. */
typedef struct Reader {
    OqcGraph *g;             /* graph being built */
    OqcDiag *d;              /* where errors go */
    const char *path;        /* the XML file (messages) */
    const char *dir;         /* its directory: side files are relative to it */
    long *node_line;         /* XML line of each node, by id before sorting */
    const char **view_of;    /* per tensor id: the view_of name, resolved at the end */
    long *view_line;         /* per tensor id: XML line of that tensor */
} Reader;

#define WS " \t\r\n" /* XML white space */

/* The structure of the format (ir_xml.def): per element its attributes and its
 * children. */
static const struct XmlSpec {
    const char *el;        /* element name */
    const char *attrs;     /* allowed attributes, space-separated */
    const char *children;  /* allowed children in order */
} xml_spec[] = {
#define OQC_XML_EL(el, attrs, children) {el, attrs, children},
#include "ir_xml.def"
#undef OQC_XML_EL
};

/* Error about element n: "FILE:LINE: <elem>: message". */
static int rerr(Reader *R, xmlNodePtr n, const char *fmt, ...) OQC_PRINTF(3, 4);
static int rerr(Reader *R, xmlNodePtr n, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oqc_err(R->d, "%s:%ld: <%s>: %s", R->path, xmlGetLineNo(n),
                   n->name ? (const char *)n->name : "?", msg);
}

/* The word of the space-separated list that is name (followed by a quantifier * or ?
 * in xml_spec's children), or NULL. */
static const char *find_word(const char *list, const xmlChar *name) {
    size_t l = strlen((const char *)name);
    for (const char *p = list; *p; p += strcspn(p, " "), p += *p == ' ')
        if (strcspn(p, "*? ") == l && !strncmp(p, (const char *)name, l))
            return p;
    return NULL;
}

/* Rejects any attribute of n not in the space-separated list allowed. */
static int check_attrs(Reader *R, xmlNodePtr n, const char *allowed) {
    for (xmlAttrPtr a = n->properties; a; a = a->next)
        if (!find_word(allowed, a->name) || a->ns)
            return rerr(R, n, "unknown attribute '%s' (allowed: %s)", (const char *)a->name,
                        allowed[0] ? allowed : "none");
    return 0;
}

/* Checks n and everything below it against xml_spec. */
static int check_structure(Reader *R, xmlNodePtr n) {
    size_t i = 0, nspec = sizeof xml_spec / sizeof xml_spec[0];
    while (i < nspec && !xmlStrEqual(n->name, BAD_CAST xml_spec[i].el))
        i++;
    if (i == nspec || n->ns)
        return rerr(R, n, "unknown element");
    const struct XmlSpec *sp = &xml_spec[i];
    const char *pos = sp->children; /* current child kind */
    int seen = 0;                   /* elements of that kind so far */
    if (check_attrs(R, n, sp->attrs) < 0)
        return -1;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        const char *t = (const char *)c->content;
        if (c->type == XML_COMMENT_NODE || c->type == XML_PI_NODE ||
            ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) &&
             (!strcmp(sp->children, "#text") || (t && strspn(t, WS) == strlen(t)))))
            continue;
        if (c->type != XML_ELEMENT_NODE)
            return rerr(R, n, "unexpected text or node inside the element");
        const char *p = find_word(pos, c->name);
        if (!p)
            return rerr(R, c, "%s element inside <%s> (allowed, in this order: %s)",
                        find_word(sp->children, c->name) ? "misplaced" : "unknown",
                        (const char *)n->name, sp->children[0] ? sp->children : "nothing");
        seen = p == pos ? seen + 1 : 1;
        pos = p;
        if (p[strcspn(p, "*?")] == '?' && seen > 1)
            return rerr(R, c, "at most one <%s> is allowed here", (const char *)c->name);
        if (check_structure(R, c) < 0)
            return -1;
    }
    return 0;
}

/* Element children of n named el, in order (the structure is checked already). */
#define FOR_EACH_EL(c, n, el)                                                  \
    for (xmlNodePtr c = (n)->children; c; c = c->next)                         \
        if (c->type == XML_ELEMENT_NODE && xmlStrEqual(c->name, BAD_CAST(el)))

static int64_t count_children(xmlNodePtr n, const char *el) {
    int64_t k = 0;
    FOR_EACH_EL(c, n, el)
        k++;
    return k;
}

/* A whole string as an int64 (f == NULL) or a float (strtof: exact for "%.9g"). */
static int parse_num(const char *s, int64_t *i, float *f) {
    char *end;
    if (strchr(WS, s[0])) /* "" too: strchr finds the terminator */
        return -1;
    errno = 0;
    if (f)
        *f = strtof(s, &end); /* ERANGE (subnormals, overflow) is fine: the nearest float */
    else
        *i = strtoll(s, &end, 10);
    return *end || (!f && errno) ? -1 : 0;
}

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Attribute name of n as written (an arena copy) in *v; NULL when absent, an error if
 * it is required. */
static int raw_attr(Reader *R, xmlNodePtr n, const char *name, int required, const char **v) {
    xmlChar *x = xmlGetNoNsProp(n, BAD_CAST name);
    *v = x ? oqc_arena_strdup(R->g->arena, (const char *)x) : NULL;
    xmlFree(x);
    return *v || !required ? 0 : rerr(R, n, "missing attribute '%s'", name);
}

/* Undoes the writer's escape into the arena (*len gets the length; NUL bytes are
 * allowed only when nul_ok). */
static int unescape(Reader *R, xmlNodePtr n, const char *what, const char *s, int nul_ok,
                    const char **out, size_t *len) {
    size_t sl = strlen(s), k = 0;
    char *o = oqc_arena_alloc(R->g->arena, sl + 1);
    for (size_t i = 0; i < sl; i++) {
        if (s[i] != '\\') {
            o[k++] = s[i];
        } else if (s[i + 1] == '\\') {
            o[k++] = s[i++];
        } else if (s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
            o[k++] = (char)(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
            i += 3;
        } else {
            return rerr(R, n, "%s: bad escape at byte %zu (only \\\\ and \\xHH are allowed)",
                        what, i);
        }
    }
    if (!nul_ok && memchr(o, 0, k))
        return rerr(R, n, "%s contains a NUL byte (\\x00), not allowed here", what);
    *out = o;
    if (len)
        *len = k;
    return 0;
}

enum { OPTIONAL = 0, REQUIRED = 1, NUL_OK = 2 };

/* String attribute, unescaped; *out is NULL when it is absent and optional. */
static int get_str(Reader *R, xmlNodePtr n, const char *name, int flags, const char **out,
                   size_t *len) {
    const char *v;
    char what[64];
    *out = NULL;
    if (raw_attr(R, n, name, flags & REQUIRED, &v) < 0)
        return -1;
    if (!v)
        return 0;
    snprintf(what, sizeof what, "attribute '%s'", name);
    return unescape(R, n, what, v, flags & NUL_OK, out, len);
}

/* Required number attribute: an int64 into *i, or a float into *f when f is given. */
static int get_num(Reader *R, xmlNodePtr n, const char *name, int64_t *i, float *f) {
    const char *v;
    if (raw_attr(R, n, name, REQUIRED, &v) < 0)
        return -1;
    return parse_num(v, i, f) < 0 ? rerr(R, n, "attribute '%s': bad number '%s' (expected %s)",
                                         name, v, f ? "a float" : "a 64-bit integer") : 0;
}

static int get_dtype(Reader *R, xmlNodePtr n, OqcfDType *dt) {
    const char *v;
    if (raw_attr(R, n, "dtype", REQUIRED, &v) < 0)
        return -1;
    *dt = oqc_dtype_lookup(v);
    if (*dt == OQCF_UNDEFINED && strcmp(v, oqc_dtype_name(OQCF_UNDEFINED)) != 0)
        return rerr(R, n, "unknown dtype '%s' (f32, i64, u8, ... or undef)", v);
    return 0;
}

/* Attribute 'shape' ("1x3x?x224", "scalar"; rank -1 when absent and optional);
 * checks rank and element count. */
static int get_shape(Reader *R, xmlNodePtr n, int required, OqcShape *sh) {
    const char *s, *p;
    int64_t numel = 1, zero = 0;
    sh->rank = -1;
    if (raw_attr(R, n, "shape", required, &s) < 0)
        return -1;
    if (!s)
        return 0;
    p = s;
    sh->rank = 0;
    while (strcmp(s, "scalar") != 0) {
        if (sh->rank == OQC_MAX_RANK)
            return rerr(R, n, "shape '%s' has more than %d dimensions", s, OQC_MAX_RANK);
        char *end = (char *)p + 1;
        errno = 0;
        long long v = *p == '?' ? -1 : *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -2;
        if (v < -1 || errno || (*end && *end != 'x') || (*end == 'x' && !end[1]))
            return rerr(R, n, "bad shape '%s' (expected e.g. 1x3x224x224, 1x?, scalar)", s);
        sh->d[sh->rank++] = v;
        zero |= v == 0;
        if (v > 0)
            numel = v > OQC_MAX_ELEMENTS / numel ? OQC_MAX_ELEMENTS + 1 : numel * v;
        if (!*end)
            break;
        p = end + 1;
    }
    if (!zero && numel > OQC_MAX_ELEMENTS)
        return rerr(R, n, "shape '%s' has more than %" PRId64 " elements: absurd", s,
                    OQC_MAX_ELEMENTS);
    return 0;
}

/* The strings of n's <s> children, which must number exactly want. */
static int read_strings(Reader *R, xmlNodePtr n, int64_t want, const char ***out) {
    int64_t have = count_children(n, "s"), k = 0;
    if (have != want)
        return rerr(R, n, "has %" PRId64 " <s> strings, but %" PRId64 " are expected", have,
                    want);
    const char **v = oqc_arena_alloc(R->g->arena, (size_t)(want + 1) * sizeof *v);
    FOR_EACH_EL(c, n, "s") {
        xmlChar *text = xmlNodeGetContent(c);
        const char *s = oqc_arena_strdup(R->g->arena, text ? (const char *)text : "");
        xmlFree(text);
        if (unescape(R, c, "string", s, 0, &v[k++], NULL) < 0)
            return -1;
    }
    *out = v;
    return 0;
}

/* <value dtype shape hex>: an attribute's tensor, data inline. */
static int read_value(Reader *R, xmlNodePtr n, OqcValue *v) {
    const char *hx;
    if (get_dtype(R, n, &v->dtype) < 0 || get_shape(R, n, 1, &v->shape) < 0)
        return -1;
    int64_t numel = oqc_shape_numel(&v->shape);
    size_t el = oqcf_dtype_size(v->dtype), need = (size_t)numel * el;
    if (numel < 0)
        return rerr(R, n, "an attribute tensor needs a fully known shape");
    if (v->dtype == OQCF_STRING) {
        v->nbytes = (size_t)numel * sizeof(char *);
        return xmlHasProp(n, BAD_CAST "hex")
                   ? rerr(R, n, "a string tensor has <s> children, not 'hex'")
                   : read_strings(R, n, numel, (const char ***)&v->data);
    }
    if (el == 0 || count_children(n, "s"))
        return rerr(R, n, "a %s tensor cannot have <s> strings", oqc_dtype_name(v->dtype));
    if (raw_attr(R, n, "hex", REQUIRED, &hx) < 0)
        return -1;
    if (strlen(hx) != 2 * need)
        return rerr(R, n, "'hex' has %zu digits, but dtype %s x shape needs %zu bytes",
                    strlen(hx), oqc_dtype_name(v->dtype), need);
    unsigned char *p = oqc_arena_alloc(R->g->arena, need ? need : 1);
    for (size_t i = 0; i < need; i++) {
        int hi = hexval(hx[2 * i]), lo = hexval(hx[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return rerr(R, n, "'hex' has a non-hex digit at position %zu", 2 * i);
        p[i] = (unsigned char)(hi * 16 + lo);
    }
    v->data = p;
    v->nbytes = need;
    return 0;
}

/* The space-separated numbers of attribute `name` (INTS or FLOATS; a->n 0 when it is
 * absent and optional). */
static int read_list(Reader *R, xmlNodePtr n, const char *name, int required, OqcAttr *a) {
    const char *v, *p;
    if (raw_attr(R, n, name, required, &v) < 0)
        return -1;
    if (!v)
        return a->n = 0;
    int cnt = 0, ints = a->type == OQC_ATTR_INTS;
    for (p = v + strspn(v, WS); *p; p += strspn(p, WS), cnt++)
        p += strcspn(p, WS);
    a->n = cnt;
    if (ints)
        a->ints = oqc_arena_alloc(R->g->arena, (size_t)(cnt + 1) * sizeof *a->ints);
    else
        a->floats = oqc_arena_alloc(R->g->arena, (size_t)(cnt + 1) * sizeof *a->floats);
    p = v + strspn(v, WS);
    for (int i = 0; i < cnt; i++, p += strspn(p, WS)) {
        char tok[48];
        size_t l = strcspn(p, WS);
        snprintf(tok, sizeof tok, "%.*s", (int)l, p);
        if (l >= sizeof tok || parse_num(tok, ints ? &a->ints[i] : NULL, ints ? NULL : &a->floats[i]))
            return rerr(R, n, "attribute '%s': bad number '%.*s' in the %s list", name, (int)l,
                        p, oqc_attr_type_name(a->type));
        p += l;
    }
    return 0;
}

/* <attr name type ...> of a node of op: what it carries depends on its type. */
static int read_attr(Reader *R, xmlNodePtr n, OqcOp op, OqcAttr *a) {
    const char *ty;
    int t = 0;
    if (raw_attr(R, n, "type", REQUIRED, &ty) < 0)
        return -1;
    while (t <= OQC_ATTR_TYPE_PROTOS && strcmp(oqc_attr_type_name((OqcAttrType)t), ty) != 0)
        t++;
    if (t > OQC_ATTR_TYPE_PROTOS)
        return rerr(R, n, "unknown attribute type '%s' (INT, FLOAT, STRING, INTS, ...)", ty);
    if (get_str(R, n, "name", REQUIRED, &a->name, NULL) < 0)
        return -1;
    a->type = (OqcAttrType)t;
    OqcAttrType want = oqc_attr_expected(op, a->name);
    if (want != OQC_ATTR_UNDEFINED && want != a->type)
        return rerr(R, n, "attribute '%s' of %s must be %s, not %s", a->name, oqc_op_name(op),
                    oqc_attr_type_name(want), oqc_attr_type_name(a->type));
    int scalar = t == OQC_ATTR_FLOAT || t == OQC_ATTR_INT || t == OQC_ATTR_STRING ||
                 t == OQC_ATTR_FLOATS || t == OQC_ATTR_INTS;
    int64_t ns = count_children(n, "s"), nv = count_children(n, "value");
    if (check_attrs(R, n, scalar ? "name type value" : t == OQC_ATTR_STRINGS ||
                    t == OQC_ATTR_TENSOR || t == OQC_ATTR_TENSORS ? "name type"
                                                                  : "name type summary") < 0)
        return -1;
    if ((ns && t != OQC_ATTR_STRINGS) || (nv && t != OQC_ATTR_TENSOR && t != OQC_ATTR_TENSORS))
        return rerr(R, n, "a %s attribute cannot have <%s> children", ty, ns ? "s" : "value");
    switch (a->type) {
    case OQC_ATTR_FLOAT: return get_num(R, n, "value", NULL, &a->f);
    case OQC_ATTR_INT: return get_num(R, n, "value", &a->i, NULL);
    case OQC_ATTR_STRING: return get_str(R, n, "value", REQUIRED | NUL_OK, &a->s, &a->slen);
    case OQC_ATTR_FLOATS:
    case OQC_ATTR_INTS: return read_list(R, n, "value", REQUIRED, a);
    case OQC_ATTR_STRINGS: a->n = (int)ns; return read_strings(R, n, ns, &a->strings);
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS:
        if (a->type == OQC_ATTR_TENSOR && nv != 1)
            return rerr(R, n, "a TENSOR attribute needs exactly one <value>, found %" PRId64,
                        nv);
        a->tensors = oqc_arena_alloc(R->g->arena, (size_t)(nv + 1) * sizeof *a->tensors);
        FOR_EACH_EL(c, n, "value")
            if (read_value(R, c, &a->tensors[a->n++]) < 0)
                return -1;
        return 0;
    default: return get_str(R, n, "summary", OPTIONAL, &a->opaque, NULL);
    }
}

/* A constant's bytes from side file ref (relative to the XML's directory). */
static int read_data(Reader *R, xmlNodePtr n, OqcTensor *t, const char *ref) {
    int64_t off, nbytes, numel = oqc_shape_numel(&t->shape);
    size_t el = oqcf_dtype_size(t->dtype);
    if (get_num(R, n, "offset", &off, NULL) < 0 || get_num(R, n, "nbytes", &nbytes, NULL) < 0)
        return -1;
    if (el == 0)
        return rerr(R, n, "a %s constant cannot have side data", oqc_dtype_name(t->dtype));
    if (numel < 0)
        return rerr(R, n, "a constant with data needs a fully known shape");
    if (off < 0)
        return rerr(R, n, "offset %" PRId64 " is negative", off);
    if (nbytes < 0 || (uint64_t)nbytes != (uint64_t)numel * el)
        return rerr(R, n, "nbytes %" PRId64 ", but dtype %s x %" PRId64 " elements needs %"
                          PRIu64 " bytes", nbytes, oqc_dtype_name(t->dtype), numel,
                    (uint64_t)numel * el);
    if (!ref[0] || ref[0] == '/' || strstr(ref, ".."))
        return rerr(R, n, "side data file '%s' must be a relative path inside the XML "
                          "file's directory", ref);
    const char *file = oqc_arena_printf(R->g->arena, "%s/%s", R->dir, ref);
    struct stat st;
    int fd = oqc_in_open_inside(R->dir, file, "side data file", &st, R->d), rc = 0;
    if (fd < 0)
        return rerr(R, n, "cannot use side data file '%s'", file);
    if ((uint64_t)off > (uint64_t)st.st_size ||
             (uint64_t)nbytes > (uint64_t)st.st_size - (uint64_t)off)
        rc = rerr(R, n, "side data file '%s' is %lld bytes, too short for offset %" PRId64
                        " + nbytes %" PRId64, file, (long long)st.st_size, off, nbytes);
    unsigned char *p = rc ? NULL : oqc_arena_alloc_raw(R->g->arena, nbytes ? (size_t)nbytes : 1);
    for (size_t done = 0; !rc && done < (size_t)nbytes;) {
        ssize_t got = pread(fd, p + done, (size_t)nbytes - done, (off_t)(off + (int64_t)done));
        if (got <= 0)
            rc = rerr(R, n, "error reading side data file '%s'", file);
        done += got > 0 ? (size_t)got : 0;
    }
    close(fd);
    t->data = p;
    t->nbytes = (size_t)nbytes;
    return rc;
}

static int read_tensor(Reader *R, xmlNodePtr n) {
    OqcGraph *g = R->g;
    const char *name, *flags, *summary, *ref;
    OqcfDType dt;
    OqcShape shape;
    if (get_str(R, n, "name", REQUIRED, &name, NULL) < 0 || get_dtype(R, n, &dt) < 0 ||
        get_shape(R, n, 0, &shape) < 0 || get_str(R, n, "flags", OPTIONAL, &flags, NULL) < 0 ||
        get_str(R, n, "summary", OPTIONAL, &summary, NULL) < 0 ||
        get_str(R, n, "data", OPTIONAL, &ref, NULL) < 0)
        return -1;
    if (oqc_tensor_find(g, name) >= 0)
        return rerr(R, n, "tensor '%s' is declared twice", name);
    int id = oqc_tensor_add(g, name); /* may move g->tensors */
    OqcTensor *t = &g->tensors[id];
    t->dtype = dt;
    t->shape = shape;
    const char *view_of;
    int64_t coff = 0;
    if (get_str(R, n, "view_of", OPTIONAL, &view_of, NULL) < 0)
        return -1;
    if (view_of && get_num(R, n, "view_coff", &coff, NULL) < 0)
        return -1;
    if (id % 64 == 0) {
        R->view_of = oqc_arena_grow(g->arena, R->view_of, (size_t)id, (size_t)id + 64,
                                    sizeof *R->view_of);
        R->view_line = oqc_arena_grow(g->arena, R->view_line, (size_t)id, (size_t)id + 64,
                                      sizeof *R->view_line);
    }
    R->view_of[id] = view_of;
    R->view_line[id] = xmlGetLineNo(n);
    t = &g->tensors[id];
    t->view_coff = coff;
    for (const char *p = flags ? flags + strspn(flags, WS) : ""; *p; p += strspn(p, WS)) {
        size_t l = strcspn(p, WS);
        if (l == 5 && !strncmp(p, "input", 5))
            t->is_input = 1;
        else if (l == 6 && !strncmp(p, "output", 6))
            t->is_output = 1;
        else if (l == 5 && !strncmp(p, "const", 5))
            t->is_const = 1;
        else
            return rerr(R, n, "tensor '%s': unknown flag '%.*s' (input, output, const)", name,
                        (int)l, p);
        p += l;
    }
    if (!t->is_const && (summary || ref))
        return rerr(R, n, "tensor '%s': only constants have 'summary' and 'data'", name);
    if (ref ? read_data(R, n, t, ref) < 0
            : xmlHasProp(n, BAD_CAST "offset") || xmlHasProp(n, BAD_CAST "nbytes")
                  ? rerr(R, n, "tensor '%s': 'offset' and 'nbytes' need 'data'", name) : 0)
        return -1;
    FOR_EACH_EL(c, n, "dim") {
        int64_t axis;
        const char *param;
        if (get_num(R, c, "axis", &axis, NULL) < 0 || get_str(R, c, "param", REQUIRED, &param, NULL) < 0)
            return -1;
        if (axis < 0 || axis >= t->shape.rank)
            return rerr(R, c, "axis %" PRId64 " is outside the tensor's rank %d", axis,
                        t->shape.rank);
        if (!t->dim_param)
            t->dim_param = oqc_arena_alloc(g->arena, OQC_MAX_RANK * sizeof *t->dim_param);
        if (t->dim_param[axis])
            return rerr(R, c, "axis %" PRId64 " is named twice", axis);
        t->dim_param[axis] = param;
    }
    FOR_EACH_EL(c, n, "quant") {
        OqcQuant *q = &t->quant;
        int64_t u;
        if (get_num(R, c, "unsigned", &u, NULL) < 0 || get_num(R, c, "amax", NULL, &q->amax) < 0 ||
            get_num(R, c, "threshold", NULL, &q->threshold) < 0 || get_num(R, c, "scale", NULL, &q->scale) < 0 ||
            get_str(R, c, "method", OPTIONAL, &q->method, NULL) < 0)
            return -1;
        if (u != 0 && u != 1)
            return rerr(R, c, "attribute 'unsigned' must be 0 or 1");
        q->is_unsigned = (int)u;
        q->valid = 1;
        OqcAttr cs = {.type = OQC_ATTR_FLOATS};   /* one scale per channel, or none */
        if (read_list(R, c, "channel-scales", OPTIONAL, &cs) < 0)
            return -1;
        for (int k = 0; k < cs.n; k++)
            if (!(cs.floats[k] > 0) || !isfinite(cs.floats[k]) || t->shape.rank != 4 ||
                cs.n != t->shape.d[1])
                return rerr(R, c, "attribute 'channel-scales': expected one positive float "
                                  "per channel of a 4-D tensor");
        q->nch = cs.n;
        q->ch_scale = cs.n ? cs.floats : NULL;
    }
    FOR_EACH_EL(c, n, "strings") {
        int64_t numel = oqc_shape_numel(&t->shape);
        if (!t->is_const || t->dtype != OQCF_STRING || numel < 0)
            return rerr(R, c, "only string constants of known shape have <strings>");
        if (read_strings(R, c, numel, (const char ***)&t->data) < 0)
            return -1;
        t->nbytes = (size_t)numel * sizeof(char *);
    }
    if (t->is_const && !t->data && !(t->summary = summary))
        return rerr(R, n, "constant '%s' has neither data nor a summary", name);
    return 0;
}

/* <input name>/<output name>: appends the tensor to the list. */
static int read_io(Reader *R, xmlNodePtr n, int *list, int *count) {
    const char *name;
    if (get_str(R, n, "name", REQUIRED, &name, NULL) < 0)
        return -1;
    int id = oqc_tensor_find(R->g, name);
    if (id < 0)
        return rerr(R, n, "unknown tensor '%s'", name);
    const OqcTensor *t = &R->g->tensors[id];
    if (n->name[0] == 'i' ? !t->is_input : !t->is_output)
        return rerr(R, n, "tensor '%s' is listed here but lacks the flag '%s'", name,
                    (const char *)n->name);
    list[(*count)++] = id;
    return 0;
}

/* A merged conv's out_channels="4 5 3" and acts="4:relu 5:none 3:clip:0:6". */
static int read_ranges(Reader *R, xmlNodePtr n, OqcNode *nd, const char *name) {
    OqcGraph *g = R->g;
    const char *oc, *acts;
    if (get_str(R, n, "out_channels", OPTIONAL, &oc, NULL) < 0 ||
        get_str(R, n, "acts", OPTIONAL, &acts, NULL) < 0)
        return -1;
    if (!oc)
        return acts ? rerr(R, n, "node '%s': acts without out_channels", name) : 0;
    nd->out_channels = oqc_arena_alloc(g->arena, (size_t)(nd->nout + 1) * sizeof(int64_t));
    int64_t total = 0;
    const char *p = oc;
    for (int k = 0; k < nd->nout; k++) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || v > OQC_MAX_ELEMENTS)
            return rerr(R, n, "node '%s': out_channels '%s' must list %d positive counts", name,
                        oc, nd->nout);
        nd->out_channels[k] = v;
        total += v;
        p = end;
    }
    if (p[strspn(p, WS)])
        return rerr(R, n, "node '%s': out_channels '%s' has more than %d counts", name, oc,
                    nd->nout);
    if (!acts)
        return 0;
    nd->act_per_channel = oqc_arena_alloc(g->arena, (size_t)total * sizeof(OqcfAct));
    int64_t c = 0;
    for (p = acts + strspn(acts, WS); *p; p += strspn(p, WS)) {
        char kind[16];
        long long run;
        float p0 = 0, p1 = 0;
        int used = 0;
        if (sscanf(p, "%lld:%15[a-z]%n", &run, kind, &used) != 2 || run <= 0 || run > total - c)
            return rerr(R, n, "node '%s': bad acts '%s'", name, acts);
        OqcfAct a = {.kind = OQCF_ACT_NONE};
        p += used;
        if (!strcmp(kind, "relu")) {
            a.kind = OQCF_ACT_RELU;
        } else if (!strcmp(kind, "clip") && sscanf(p, ":%f:%f%n", &p0, &p1, &used) == 2) {
            a = (OqcfAct){.kind = OQCF_ACT_CLIP, .p0 = p0, .p1 = p1};
            p += used;
        } else if (!strcmp(kind, "leaky") && sscanf(p, ":%f%n", &p0, &used) == 1) {
            a = (OqcfAct){.kind = OQCF_ACT_LEAKY, .p0 = p0};
            p += used;
        } else if (strcmp(kind, "none")) {
            return rerr(R, n, "node '%s': bad acts '%s'", name, acts);
        }
        for (long long i = 0; i < run; i++)
            nd->act_per_channel[c++] = a;
    }
    if (c != total)
        return rerr(R, n, "node '%s': acts cover %lld of %lld channels", name, (long long)c,
                    (long long)total);
    return 0;
}

static int read_node(Reader *R, xmlNodePtr n) {
    OqcGraph *g = R->g;
    const char *op_type, *domain, *name;
    int64_t opset, nin = count_children(n, "in"), nout = count_children(n, "out");
    int64_t nattr = count_children(n, "attr"), k = 0;
    if (get_str(R, n, "op_type", REQUIRED, &op_type, NULL) < 0 ||
        get_str(R, n, "domain", REQUIRED, &domain, NULL) < 0 ||
        get_str(R, n, "name", REQUIRED, &name, NULL) < 0 || get_num(R, n, "opset", &opset, NULL) < 0)
        return -1;
    const char *act;
    OqcfAct fused = {.kind = OQCF_ACT_NONE};
    if (get_str(R, n, "act", OPTIONAL, &act, NULL) < 0)
        return -1;
    if (act) {
        char word[16], extra;
        float p0 = 0, p1 = 0;
        int got = sscanf(act, "%15s %f %f %c", word, &p0, &p1, &extra);
        if (got == 1 && !strcmp(word, "relu"))
            fused = (OqcfAct){.kind = OQCF_ACT_RELU};
        else if (got == 3 && !strcmp(word, "clip"))
            fused = (OqcfAct){.kind = OQCF_ACT_CLIP, .p0 = p0, .p1 = p1};
        else if (got == 2 && !strcmp(word, "leaky"))
            fused = (OqcfAct){.kind = OQCF_ACT_LEAKY, .p0 = p0};
        else
            return rerr(R, n, "node '%s': act '%s' is not \"relu\", \"clip LO HI\" or "
                              "\"leaky ALPHA\"", name, act);
    }
    int *io = oqc_arena_alloc(g->arena, (size_t)(nin + nout + 1) * sizeof *io);
    OqcAttr *attr = oqc_arena_alloc(g->arena, (size_t)(nattr + 1) * sizeof *attr);
    OqcOp op = oqc_op_lookup(domain, op_type);
    for (xmlNodePtr c = n->children; c; c = c->next) { /* <in>*, then <out>* */
        const char *tn;
        if (c->type != XML_ELEMENT_NODE || xmlStrEqual(c->name, BAD_CAST "attr"))
            continue;
        if (get_str(R, c, "name", OPTIONAL, &tn, NULL) < 0)
            return -1;
        int id = tn ? oqc_tensor_find(g, tn) : -1; /* no name: an omitted optional one */
        if (tn && id < 0)
            return rerr(R, c, "node '%s': unknown tensor '%s' (every tensor needs a <tensor> "
                              "declaration)", name, tn);
        io[k++] = id;
    }
    k = 0;
    FOR_EACH_EL(c, n, "attr")
        if (read_attr(R, c, op, &attr[k++]) < 0)
            return -1;
    int id = oqc_node_add(g, op, op_type, name, (int)nin, io, (int)nout, io + nin);
    OqcNode *nd = &g->nodes[id];
    nd->domain = domain;
    nd->opset = opset;
    nd->act = fused;
    if (read_ranges(R, n, nd, name) < 0)
        return -1;
    nd->nattr = (int)nattr;
    nd->attr = attr;
    if (id % 64 == 0)
        R->node_line = oqc_arena_grow(g->arena, R->node_line, (size_t)id, (size_t)id + 64,
                                      sizeof *R->node_line);
    R->node_line[id] = xmlGetLineNo(n);
    return 0;
}

/* Whole-graph checks once every element is read: flags match the <input>/<output>
 * lists and every tensor read comes from somewhere; then links and orders the nodes. */
static int finish_graph(Reader *R) {
    OqcGraph *g = R->g;
    int rc = 0;
    for (int t = 0; t < g->ntensors; t++) { /* views name tensors declared later */
        const char *base = R->view_of ? R->view_of[t] : NULL;
        if (!base)
            continue;
        int b = oqc_tensor_find(g, base);
        OqcTensor *tt = &g->tensors[t];
        if (b < 0 || b == t || g->tensors[b].view_base >= 0 || tt->view_coff < 0 ||
            tt->shape.rank < 2 || g->tensors[b].shape.rank != tt->shape.rank ||
            tt->view_coff + tt->shape.d[1] > g->tensors[b].shape.d[1])
            return oqc_err(R->d, "%s:%ld: <tensor>: '%s' is not a valid view of '%s'", R->path,
                           R->view_line[t], tt->name, base);
        tt->view_base = b;
    }
    unsigned char *listed = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    for (int i = 0; i < g->ninputs; i++) {
        if (listed[g->inputs[i]] & 1)
            rc = oqc_err(R->d, "%s: graph input '%s' is listed twice", R->path,
                         g->tensors[g->inputs[i]].name);
        listed[g->inputs[i]] |= 1;
    }
    for (int i = 0; i < g->noutputs; i++)
        listed[g->outputs[i]] |= 2;
    for (int i = 0; i < g->ntensors; i++) {
        const OqcTensor *t = &g->tensors[i];
        const char *miss = t->is_input && !(listed[i] & 1) ? "input"
                         : t->is_output && !(listed[i] & 2) ? "output" : NULL;
        if (miss)
            rc = oqc_err(R->d, "%s: tensor '%s' has the flag %s but no <%s> element lists it",
                         R->path, t->name, miss, miss);
    }
    if (rc < 0 || oqc_graph_link(g, R->d) < 0)
        return -1;
    /* A tensor written through views (concat-elim) is produced by its views' writers. */
    unsigned char *has_views = oqc_arena_alloc(g->arena, (size_t)g->ntensors + 1);
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].view_base >= 0 && g->tensors[t].producer >= 0)
            has_views[g->tensors[t].view_base] = 1;
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++) {
            const OqcTensor *t = g->nodes[i].in[k] >= 0 ? &g->tensors[g->nodes[i].in[k]] : NULL;
            if (t && t->producer < 0 && !t->is_input && !t->is_const &&
                !has_views[g->nodes[i].in[k]])
                rc = oqc_err(R->d, "%s:%ld: <node>: node '%s': input '%s' is produced by no "
                                   "node and is neither a graph input nor a constant",
                             R->path, R->node_line[i], g->nodes[i].name, t->name);
        }
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *t = &g->tensors[g->outputs[i]];
        if (t->producer < 0 && !t->is_input && !t->is_const && !has_views[g->outputs[i]])
            rc = oqc_err(R->d, "%s: graph output '%s' is produced by no node and is neither "
                               "a graph input nor a constant", R->path, t->name);
    }
    return rc < 0 ? -1 : oqc_graph_toposort(g, R->d);
}

static int read_root(Reader *R, xmlDocPtr doc) {
    OqcGraph *g = R->g;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    const char *ver;
    if (doc->intSubset || doc->extSubset)
        return oqc_err(R->d, "%s: a DOCTYPE is not allowed in an oqc XML dump", R->path);
    if (!root || !xmlStrEqual(root->name, BAD_CAST "oqc-ir") || root->ns)
        return oqc_err(R->d, "%s:%ld: the root element is <%s>, not <oqc-ir>: not an oqc "
                             "XML dump", R->path, root ? xmlGetLineNo(root) : 0L,
                       root ? (const char *)root->name : "");
    if (raw_attr(R, root, "version", REQUIRED, &ver) < 0)
        return -1;
    if (strcmp(ver, "1") != 0)
        return rerr(R, root, "version '%s' is not supported (this oqc reads version 1)", ver);
    if (check_structure(R, root) < 0 || get_str(R, root, "name", REQUIRED, &g->name, NULL) < 0 ||
        get_num(R, root, "ir_version", &g->ir_version, NULL) < 0 ||
        get_str(R, root, "producer", REQUIRED, &g->producer, NULL) < 0)
        return -1;
    g->opsets = oqc_arena_alloc(g->arena, (size_t)(count_children(root, "opset") + 1) *
                                              sizeof *g->opsets);
    g->inputs = oqc_arena_alloc(g->arena, (size_t)(count_children(root, "input") + 1) *
                                              sizeof *g->inputs);
    g->outputs = oqc_arena_alloc(g->arena, (size_t)(count_children(root, "output") + 1) *
                                               sizeof *g->outputs);
    for (xmlNodePtr c = root->children; c; c = c->next) { /* in document order */
        const char *el = (const char *)c->name;
        OqcOpset *o = &g->opsets[g->nopsets];
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (!strcmp(el, "opset") ? get_str(R, c, "domain", REQUIRED, &o->domain, NULL) < 0 ||
                                       get_num(R, c, "version", &o->version, NULL) < 0
            : !strcmp(el, "tensor") ? read_tensor(R, c) < 0
            : !strcmp(el, "input")  ? read_io(R, c, g->inputs, &g->ninputs) < 0
            : !strcmp(el, "node")   ? read_node(R, c) < 0
                                    : read_io(R, c, g->outputs, &g->noutputs) < 0)
            return -1;
        g->nopsets += !strcmp(el, "opset");
    }
    return finish_graph(R);
}

OqcGraph *oqc_load_xml(const char *path, OqcDiag *d) {
    int fd = oqc_in_open(path, NULL, NULL, d);
    if (fd < 0)
        return NULL;
    xmlInitParser();
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        close(fd);
        oqc_err(d, "%s: cannot create an XML parser", path);
        return NULL;
    }
    /* No network, no DTD loading, no entity substitution (and any DOCTYPE is rejected
     * below, so only the predefined entities remain); big line numbers for messages. */
    xmlDocPtr doc = xmlCtxtReadFd(ctxt, fd, path, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                                        XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    close(fd);
    if (!doc) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
        const char *m = e && e->message ? e->message : "unknown error";
        oqc_err(d, "%s:%d: not well-formed XML: %.*s", path, e ? e->line : 0,
                (int)strcspn(m, "\n"), m);
        xmlFreeParserCtxt(ctxt);
        return NULL;
    }
    xmlFreeParserCtxt(ctxt);
    OqcGraph *g = oqc_graph_new(path);
    const char *slash = strrchr(path, '/');
    Reader R = {.g = g, .d = d, .path = g->path,
                .dir = slash ? oqc_arena_strndup(g->arena, path, (size_t)(slash - path)) : "."};
    int rc = read_root(&R, doc);
    xmlFreeDoc(doc);
    if (rc < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}
