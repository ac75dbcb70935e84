/* diag.c - error collection and fatal internal errors (see ir.h).
 *
 * User errors accumulate as lines in a growable buffer so one command can report
 * several problems at once (e.g. every unsupported op); the CLI prints the buffer.
 * oqc_panic is for broken invariants only: it names the source location and aborts. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

void oqc_diag_init(OqcDiag *d) { memset(d, 0, sizeof *d); }

void oqc_diag_free(OqcDiag *d) {
    free(d->buf);
    memset(d, 0, sizeof *d);
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

int oqc_verr(OqcDiag *d, const char *fmt, va_list ap) {
    char tmp[1024];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof tmp) {
        diag_append(d, tmp, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big)
            oqc_panic(__FILE__, __LINE__, "out of memory recording an error");
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        diag_append(d, big, (size_t)n);
        free(big);
    }
    va_end(ap2);
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

int oqc_err_node(OqcDiag *d, const OqcGraph *g, int node, const char *fmt, ...) {
    const OqcNode *n = &g->nodes[node];
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s: node '%s' (%s%s%s): ", g->path, n->name,
             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    diag_append(d, prefix, strlen(prefix));
    d->nerrors--; /* oqc_verr counts this message once */
    va_list ap;
    va_start(ap, fmt);
    oqc_verr(d, fmt, ap);
    va_end(ap);
    return -1;
}

void oqc_info(OqcDiag *d, const char *fmt, ...) {
    if (d->verbose <= 0)
        return;
    FILE *f = d->log ? d->log : stderr;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

_Noreturn void oqc_panic(const char *file, int line, const char *what) {
    fflush(stdout);
    fprintf(stderr, "%s:%d: oqc internal error: %s\n", file, line, what);
    abort();
}
