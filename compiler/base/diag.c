/* diag.c - error collection and fatal internal errors (see ir.h).
 *
 * User errors accumulate as lines in a growable buffer so one command can report
 * several problems at once (e.g. every unsupported op); the CLI prints the buffer.
 * oqc_panic is for broken invariants only: it names the source location and aborts. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

void oqc_diag_init(OqcDiag *d) { memset(d, 0, sizeof *d); }

void oqc_diag_free(OqcDiag *d) {
    free(d->buf);
    memset(d, 0, sizeof *d);
}

int oqc_diag_len(const OqcDiag *d) {
    return (int)(d->len && d->buf[d->len - 1] == '\n' ? d->len - 1 : d->len);
}

int oqc_err_forward(OqcDiag *d, const OqcDiag *from, const char *fallback) {
    return oqc_err(d, "%.*s", from->buf ? oqc_diag_len(from) : (int)strlen(fallback),
                   from->buf ? from->buf : fallback);
}

static void diag_append(OqcDiag *d, const char *s, size_t n) {
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 256;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *b = realloc(d->buf, cap);
        if (!b)
            oqc_panic(__FILE__, __LINE__, "out of memory recording an error");
        d->buf = b;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, s, n);
    d->len += n;
    d->buf[d->len] = 0;
}

/* Appends message text with the control characters that names from a model or file
 * may carry (ESC, BEL, CR, ...) written as \xHH, so an error message cannot drive the
 * terminal; newlines and tabs (the messages' own layout) stay. */
static void diag_append_text(OqcDiag *d, const char *s, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t')
            continue;
        char esc[5];
        diag_append(d, s + start, i - start);
        snprintf(esc, sizeof esc, "\\x%02x", c);
        diag_append(d, esc, 4);
        start = i + 1;
    }
    diag_append(d, s + start, n - start);
}

/* Formats into a malloc'd string (*s); its length. */
static int vasprintf_like(char **s, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        n = 0;
    *s = malloc((size_t)n + 1);
    if (!*s)
        oqc_panic(__FILE__, __LINE__, "out of memory recording a message");
    vsnprintf(*s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return n;
}

int oqc_verr(OqcDiag *d, const char *fmt, va_list ap) {
    char *s;
    int n = vasprintf_like(&s, fmt, ap);
    diag_append_text(d, s, (size_t)n);
    free(s);
    if (d->len == 0 || d->buf[d->len - 1] != '\n')
        diag_append(d, "\n", 1);
    d->nerrors++;
    return -1;
}

int oqc_err(OqcDiag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    oqc_verr(d, fmt, ap);
    va_end(ap);
    return -1;
}

int oqc_verr_prefixed(OqcDiag *d, const char *prefix, const char *fmt, va_list ap) {
    diag_append_text(d, prefix, strlen(prefix));
    d->nerrors--; /* oqc_verr counts this message once */
    return oqc_verr(d, fmt, ap);
}

void oqc_info(OqcDiag *d, const char *fmt, ...) {
    if (d->verbose <= 0)
        return;
    FILE *f = d->log ? d->log : stderr;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf_like(&s, fmt, ap);
    va_end(ap);
    for (int i = 0; i < n; i++) { /* control characters as in error messages */
        unsigned char c = (unsigned char)s[i];
        if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t')
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
    free(s);
    fputc('\n', f);
}

_Noreturn void oqc_panic(const char *file, int line, const char *what) {
    fflush(stdout);
    fprintf(stderr, "%s:%d: oqc internal error: %s\n", file, line, what);
    abort();
}
