/* emit_runtime.c - the runtime files `oqc compile` copies next to a model, and the
 * --target flags: both from the runtime's one ISA table (OQC_ISA_TABLE, oqc_isa.h).
 * A runtime file brings what it includes (its #include "..." lines) and the sources it
 * calls into (runtime_needs; the INT8 conv, oqci_conv.c, the files of every family in
 * the table's files column: it chooses among them at run time and refers to each one's
 * configuration object, see runtime/int8/oqci_conv_cfg_int.h). */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* Source files a runtime file needs besides the headers it includes and the INT8 conv
 * files (add_conv_files): a file, then up to RUNTIME_NEEDS - 1 others (NULL after the
 * last).  The thread pool API is runtime/fp32/oqcf_serial.c in emitted code. */
#define RUNTIME_NEEDS 4
static const char *const runtime_needs[][RUNTIME_NEEDS] = {
    {"oqcf_conv.c", "oqcf_conv_dw.c", "oqcf_sgemm.c", "oqcf_serial.c"},
    {"oqcf_gemm.c", "oqcf_sgemm.c", "oqcf_serial.c"},
    {"oqcf_norm.c", "oqcf_sgemm.c", "oqcf_serial.c"},    /* oqcf_sgemm_isa() picks paths */
    {"oqcf_pooling.c", "oqcf_sgemm.c", "oqcf_serial.c"}, /* likewise */
    {"oqcf_sgemm.c", "oqcf_sgemm_x86.c", "oqcf_serial.c"},
    {"oqci_par.c", "oqci_pool.c", "oqci_eltwise.c", "oqci_mul.c"}, /* splits their calls */
};

/* The ISA table's rows: name, --target flags (NULL: no target), INT8 conv files. */
#define ISA_ROW(name, int8, fp32, x86, flags, files) {name, flags, files},
static const struct {
    const char *name, *flags, *files;
} isa_rows[] = {OQC_ISA_TABLE(ISA_ROW)};
#undef ISA_ROW
#define ISA_ROWS (sizeof isa_rows / sizeof isa_rows[0])

/* The text of runtime file `name`: from $OQC_RUNTIME_DIR when set, else the copy
 * embedded at build time. NULL (with an error) when there is none. */
static const char *runtime_text(OqcArena *a, const char *name, OqcDiag *d) {
    const char *dir = getenv("OQC_RUNTIME_DIR");
    if (dir && *dir) {
        const char *path = oqc_arena_printf(a, "%s/%s", dir, name);
        FILE *f = oqc_in_fopen(path, d);
        if (!f) {
            oqc_err(d, "%s: cannot read runtime file (OQC_RUNTIME_DIR)", path);
            return NULL;
        }
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        size_t got;
        while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
            len += got;
            if (len + 1 == cap) {
                char *nb = realloc(buf, cap *= 2);
                if (!nb)
                    free(buf);
                buf = nb;
            }
        }
        fclose(f);
        if (!buf)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        buf[len] = 0;
        char *r = oqc_arena_strdup(a, buf);
        free(buf);
        return r;
    }
    for (const OqcRuntimeFile *r = oqc_runtime_files; r->name; r++)
        if (!strcmp(r->name, name))
            return (const char *)r->text;
    oqc_err(d, "oqc compile: runtime file '%s' is not part of this oqc build", name);
    return NULL;
}

/* The next `#include "NAME"` line of text at or after p: *name and *len receive NAME;
 * NULL when there is none. Only lines that start with it count (not comments). */
const char *oqc_em_next_include(const char *text, const char *p, const char **name,
                                size_t *len) {
    for (; (p = strstr(p, "#include \"")) != NULL; p += 10) {
        const char *q = strchr(p + 10, '"');
        if ((p != text && p[-1] != '\n') || !q || memchr(p, '\n', (size_t)(q - p)))
            continue;
        *name = p + 10;
        *len = (size_t)(q - p - 10);
        return q;
    }
    return NULL;
}

int oqc_em_set_has(const FileSet *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name))
            return 1;
    return 0;
}

/* Adds the INT8 conv files of every family (the table's files column) to s. */
static int add_conv_files(FileSet *s, OqcArena *a, int threads, OqcDiag *d) {
    for (size_t i = 0; i < ISA_ROWS; i++)
        for (const char *p = isa_rows[i].files; *p;) {
            size_t n = strcspn(p, " ");
            if (n && oqc_em_set_add(s, a, oqc_arena_strndup(a, p, n), threads, d) < 0)
                return -1;
            p += n + (p[n] == ' ');
        }
    return 0;
}

/* Adds `name` and everything it needs (runtime_needs, the conv files of oqci_conv.c,
 * #include "..." lines); for an output with threads, the pool API is oqcf_pool.c and
 * oqcf_threads.c instead of the single-threaded oqcf_serial.c. */
int oqc_em_set_add(FileSet *s, OqcArena *a, const char *name, int threads, OqcDiag *d) {
    if (threads > 1 && !strcmp(name, "oqcf_serial.c"))
        return oqc_em_set_add(s, a, "oqcf_pool.c", threads, d) < 0
                   ? -1
                   : oqc_em_set_add(s, a, "oqcf_threads.c", threads, d);
    if (oqc_em_set_has(s, name))
        return 0;
    OQC_ASSERT(s->n < 64);
    const char *text = runtime_text(a, name, d);
    if (!text)
        return -1;
    int at = s->n++;
    while (at > 0 && strcmp(s->name[at - 1], name) > 0) {
        s->name[at] = s->name[at - 1];
        s->text[at] = s->text[at - 1];
        at--;
    }
    s->name[at] = oqc_arena_strdup(a, name);
    s->text[at] = text;
    for (size_t i = 0; i < sizeof runtime_needs / sizeof runtime_needs[0]; i++)
        if (!strcmp(runtime_needs[i][0], name))
            for (int k = 1; k < RUNTIME_NEEDS && runtime_needs[i][k]; k++)
                if (oqc_em_set_add(s, a, runtime_needs[i][k], threads, d) < 0)
                    return -1;
    if (!strcmp(name, "oqci_conv.c") && add_conv_files(s, a, threads, d) < 0)
        return -1;
    const char *inc;
    size_t len;
    for (const char *p = text; (p = oqc_em_next_include(text, p, &inc, &len)) != NULL;)
        if (oqc_em_set_add(s, a, oqc_arena_strndup(a, inc, len), threads, d) < 0)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- --target */

const char *oqc_default_target(void) {
#if defined(__x86_64__) || (defined(__aarch64__) && defined(__linux__))
    return "dispatch";
#else
    return "native";
#endif
}

/* --target: the compiler flags that select the kernel family (the emitted code guards
 * each path with the compiler's feature macros and falls back to portable C). */
const char *oqc_target_flags(const char *target) {
    const char *t = target ? target : oqc_default_target();
    for (size_t i = 0; i < ISA_ROWS; i++)
        if (isa_rows[i].flags && !strcmp(isa_rows[i].name, t))
            return isa_rows[i].flags;
    return NULL;
}

void oqc_target_names(char *buf, size_t size) {
    size_t len = 0, left = 0;
    for (size_t i = 0; i < ISA_ROWS; i++)
        left += isa_rows[i].flags != NULL;
    buf[0] = 0;
    for (size_t i = 0; i < ISA_ROWS && len < size; i++)
        if (isa_rows[i].flags) {
            left--;
            len += (size_t)snprintf(buf + len, size - len, "%s%s", isa_rows[i].name,
                                    left > 1 ? ", " : left == 1 ? " or " : "");
        }
}
