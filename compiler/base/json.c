/* json.c - a small JSON writer for oqc's machine-readable output (`--json`,
 * docs/json.md): a document built in memory, member by member, and written out whole,
 * so a command that fails prints no partial document.
 *
 * What it guarantees about the text (RFC 8259):
 *   - strings: '"' and '\' escaped, control characters (< 0x20) as \n, \t, \r, \b, \f
 *     or \u00XX; the output is pure ASCII: every valid UTF-8 sequence becomes \uXXXX
 *     (a surrogate pair above U+FFFF), and every byte that is not part of one (a
 *     truncated, overlong or surrogate sequence, a byte 0xF8-0xFF) becomes \u00XX, its
 *     Latin-1 reading, so any byte string (a file name, an ONNX name) gives valid JSON;
 *   - numbers: whole numbers below 1e17 as integers, other finite values in the
 *     shortest %g form that reads back as the same double (up to 17 significant
 *     digits); NaN and +-Inf, which JSON cannot hold, are null;
 *   - commas and nesting are the writer's job: a caller opens and closes containers and
 *     names members (oqc_json_key) in objects; misuse (a value without its key in an
 *     object, unbalanced ends) is a bug in oqc and aborts with file:line. */
#include "base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put(OqcJson *j, const char *s, size_t n) {
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}

static void puts_(OqcJson *j, const char *s) { put(j, s, strlen(s)); }

void oqc_json_init(OqcJson *j) { memset(j, 0, sizeof *j); }

void oqc_json_free(OqcJson *j) {
    free(j->buf);
    memset(j, 0, sizeof *j);
}

/* Before any value: the comma that separates it from the previous member, and the
 * check that a member of an object was named. */
static void before_value(OqcJson *j) {
    if (j->depth == 0) {
        OQC_ASSERT(j->len == 0); /* one document */
        return;
    }
    if (j->kind[j->depth - 1] == '{') {
        OQC_ASSERT(j->keyed);     /* an object member needs oqc_json_key first */
        j->keyed = 0;
        return;
    }
    if (j->count[j->depth - 1]++)
        puts_(j, ",");
}

/* \uXXXX for code unit u. */
static void put_u(OqcJson *j, unsigned u) {
    char e[8];
    snprintf(e, sizeof e, "\\u%04x", u & 0xffffu);
    puts_(j, e);
}

/* The length of the valid UTF-8 sequence at s (1-4) and its code point, or 0 when the
 * byte at s does not start one (RFC 3629: no overlongs, surrogates or > U+10FFFF). */
static int utf8_seq(const unsigned char *s, unsigned *cp) {
    unsigned c = s[0];
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (c >= 0xf5 || c == 0xc0 || c == 0xc1 || !n)
        return 0;
    unsigned v = c & (0x7fu >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

static void put_string(OqcJson *j, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    puts_(j, "\"");
    while (*s) {
        size_t run = 0; /* plain ASCII copied as it is */
        while (s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        put(j, (const char *)s, run);
        s += run;
        unsigned c = *s, cp;
        if (!c)
            break;
        static const char *const esc[] = {['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n",
                                          ['\t'] = "\\t", ['\r'] = "\\r", ['\b'] = "\\b",
                                          ['\f'] = "\\f"};
        int n;
        if (c < sizeof esc / sizeof esc[0] && esc[c]) {
            puts_(j, esc[c]);
            s++;
        } else if (c < 0x20) {
            put_u(j, c);
            s++;
        } else if ((n = utf8_seq(s, &cp)) > 0) {
            if (cp > 0xffff) {
                put_u(j, 0xd800 + ((cp - 0x10000) >> 10));
                put_u(j, 0xdc00 + ((cp - 0x10000) & 0x3ff));
            } else {
                put_u(j, cp);
            }
            s += n;
        } else {
            put_u(j, c); /* not UTF-8: the byte's Latin-1 reading */
            s++;
        }
    }
    puts_(j, "\"");
}

void oqc_json_key(OqcJson *j, const char *key) {
    OQC_ASSERT(j->depth > 0 && j->kind[j->depth - 1] == '{' && !j->keyed);
    if (j->count[j->depth - 1]++)
        puts_(j, ",");
    put_string(j, key);
    puts_(j, ":");
    j->keyed = 1;
}

static void open_container(OqcJson *j, char kind) {
    before_value(j);
    OQC_ASSERT(j->depth < (int)sizeof j->kind);
    j->kind[j->depth] = kind;
    j->count[j->depth++] = 0;
    put(j, &kind, 1);
}

void oqc_json_object(OqcJson *j) { open_container(j, '{'); }
void oqc_json_array(OqcJson *j) { open_container(j, '['); }

void oqc_json_end(OqcJson *j) {
    OQC_ASSERT(j->depth > 0 && !j->keyed);
    puts_(j, j->kind[--j->depth] == '{' ? "}" : "]");
    if (j->depth == 0)
        puts_(j, "\n");
}

void oqc_json_str(OqcJson *j, const char *s) {
    before_value(j);
    if (s)
        put_string(j, s);
    else
        puts_(j, "null");
}

void oqc_json_num(OqcJson *j, double v) {
    before_value(j);
    if (!isfinite(v)) {
        puts_(j, "null");
        return;
    }
    char b[40];
    if (v == floor(v) && fabs(v) < 1e17) { /* whole numbers as integers: 100, not 1e+02 */
        snprintf(b, sizeof b, "%.0f", v);
        puts_(j, b);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) { /* the shortest that reads back */
        snprintf(b, sizeof b, "%.*g", digits, v);
        if (strtod(b, NULL) == v)
            break;
    }
    puts_(j, b);
}

void oqc_json_int(OqcJson *j, long long v) {
    before_value(j);
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    puts_(j, b);
}

void oqc_json_bool(OqcJson *j, int v) {
    before_value(j);
    puts_(j, v ? "true" : "false");
}

void oqc_json_null(OqcJson *j) {
    before_value(j);
    puts_(j, "null");
}

void oqc_json_kstr(OqcJson *j, const char *key, const char *s) {
    oqc_json_key(j, key);
    oqc_json_str(j, s);
}

void oqc_json_knum(OqcJson *j, const char *key, double v) {
    oqc_json_key(j, key);
    oqc_json_num(j, v);
}

void oqc_json_kint(OqcJson *j, const char *key, long long v) {
    oqc_json_key(j, key);
    oqc_json_int(j, v);
}

void oqc_json_kbool(OqcJson *j, const char *key, int v) {
    oqc_json_key(j, key);
    oqc_json_bool(j, v);
}

const char *oqc_json_text(const OqcJson *j) {
    OQC_ASSERT(j->depth == 0);
    return j->buf ? j->buf : "";
}
