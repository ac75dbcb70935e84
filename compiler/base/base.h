/* base.h - the lowest layer of the compiler: arena, diagnostics, input
 * and output files, the JSON writer, the version.  It knows nothing of models.
 *
 * Each banner lists what one source file of compiler/base/ exports (chibicc style).
 */
#ifndef OQC_BASE_H
#define OQC_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define OQC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OQC_PRINTF(f, a)
#endif

/* ===================================================================== arena.c */

/* A bump allocator. Everything a model needs lives in its arena and is released by
 * oqc_arena_free at once. Running out of memory is fatal (oqc_panic): user data sizes
 * are validated against OQC_MAX_ELEMENTS before anything that large is allocated. */
typedef struct OqcArena OqcArena;

OqcArena *oqc_arena_new(void);
void oqc_arena_free(OqcArena *a);
void *oqc_arena_alloc(OqcArena *a, size_t n);        /* zeroed, 16-byte aligned */
void *oqc_arena_alloc_raw(OqcArena *a, size_t n);    /* not zeroed, 64-byte aligned */
void *oqc_arena_dup(OqcArena *a, const void *p, size_t n);
char *oqc_arena_strdup(OqcArena *a, const char *s);
char *oqc_arena_strndup(OqcArena *a, const char *s, size_t n);
char *oqc_arena_printf(OqcArena *a, const char *fmt, ...) OQC_PRINTF(2, 3);
/* Grows an array p of old_n elements of size el to new_n elements (copying); p's
 * storage may be freed, so no pointer into the old array may be used afterwards. */
void *oqc_arena_grow(OqcArena *a, void *p, size_t old_n, size_t new_n, size_t el);
size_t oqc_arena_used(const OqcArena *a);            /* bytes handed out so far */

/* ====================================================================== diag.c */

/* User errors are collected in an OqcDiag and returned up as -1; the CLI prints them
 * and exits 1. Broken invariants (bugs in oqc) call oqc_panic, which aborts with
 * file:line. Library code never calls exit(). */
typedef struct OqcDiag {
    char *buf;        /* accumulated error text, one message per line (malloc'd) */
    size_t len;       /* bytes used in buf */
    size_t cap;       /* bytes allocated for buf */
    int nerrors;      /* number of errors reported */
    int verbose;      /* > 0: oqc_info messages are printed */
    FILE *log;        /* where oqc_info writes (stderr when NULL) */
} OqcDiag;

void oqc_diag_init(OqcDiag *d);
void oqc_diag_free(OqcDiag *d);
/* The length of d's text without its final newline (a worker's messages, forwarded). */
int oqc_diag_len(const OqcDiag *d);
/* Records the text of `from` (e.g. a worker thread's own diag) as one error of d, or
 * fallback when it has none; returns -1. */
int oqc_err_forward(OqcDiag *d, const OqcDiag *from, const char *fallback);
/* Records an error; always returns -1 so callers can `return oqc_err(...)`. */
int oqc_err(OqcDiag *d, const char *fmt, ...) OQC_PRINTF(2, 3);
int oqc_verr(OqcDiag *d, const char *fmt, va_list ap);
/* The same as one message starting with prefix (e.g. oqc_err_node's "FILE: node ..."). */
int oqc_verr_prefixed(OqcDiag *d, const char *prefix, const char *fmt, va_list ap);
/* Informational line (pass statistics) shown with -v. */
void oqc_info(OqcDiag *d, const char *fmt, ...) OQC_PRINTF(2, 3);
_Noreturn void oqc_panic(const char *file, int line, const char *what);
#define OQC_ASSERT(c) ((c) ? (void)0 : oqc_panic(__FILE__, __LINE__, #c))

/* ==================================================================== infile.c */

struct stat;
/* Opens path for reading (a descriptor, O_CLOEXEC): only a regular file; a FIFO,
 * device, socket or directory is refused without blocking, with an error naming it
 * (what: e.g. "external data file" for messages, or NULL).  The file is remembered as
 * an input of this process (see oqc_in_was_read); st (or NULL) receives its stat. */
int oqc_in_open(const char *path, const char *what, struct stat *st, OqcDiag *d);
/* The same as a stdio stream, or NULL with an error. */
FILE *oqc_in_fopen(const char *path, OqcDiag *d);
/* oqc_in_open for a file a model names (file = dir/name): its real path (symbolic
 * links resolved) must be inside dir's real path, else an error. */
int oqc_in_open_inside(const char *dir, const char *file, const char *what, struct stat *st,
                       OqcDiag *d);
/* The name an input of this process was read by when path is the same file (device
 * and inode: also through links or other names), else NULL.  Inputs are remembered
 * only after oqc_in_remember(1): the oqc command line runs one command per process and
 * turns it on; a program using the library may read and rewrite a file on purpose. */
const char *oqc_in_was_read(const char *path);
void oqc_in_remember(int on);
/* Remembers directory path as an input (its listing chose the data files: a file added
 * or removed changes what is read); nothing for anything else. */
void oqc_in_note_dir(const char *path);
/* The inputs remembered so far, in the order first read, by the name first used. */
size_t oqc_in_count(void);
const char *oqc_in_path(size_t i);

/* =================================================================== outfile.c */

/* An output file written completely or not at all: a temporary renamed into place when
 * finished (a device or pipe that exists is written directly). */
typedef struct OqcOutFile {
    FILE *f;             /* the stream to write */
    const char *path;    /* the final path */
    char *tmp;           /* the temporary's path (malloc'd), NULL when writing directly */
} OqcOutFile;

/* Opens path for writing; -1 with an error naming it. */
int oqc_out_open(OqcOutFile *o, const char *path, OqcDiag *d);
/* Closes the file; when ok and everything was written, puts it in place (0), else
 * removes the temporary (-1, with an error when the writing itself failed). */
int oqc_out_commit(OqcOutFile *o, int ok, OqcDiag *d);
/* -1 with an error when path is a file this process read as an input (infile.c). */
int oqc_out_refuse_input(const char *path, OqcDiag *d);
/* Records path as a finished output of this process (a regular file renamed into
 * place; oqc_out_commit does it), listed in order by oqc_out_count/oqc_out_path. */
void oqc_out_done(const char *path);
/* The output recorded as from was renamed to `to` (recorded in its place). */
void oqc_out_moved(const char *from, const char *to);
size_t oqc_out_count(void);
const char *oqc_out_path(size_t i);
/* Registers a temporary file (or a directory a command created) to be removed if a
 * signal interrupts the command; oqc_tmp_forget when it is renamed or removed. */
void oqc_tmp_add(const char *path);
void oqc_tmp_add_dir(const char *path);
void oqc_tmp_forget(const char *path);
/* Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT that remove the registered
 * temporaries and directories, then die of the signal (the CLI calls it). */
void oqc_tmp_remove_on_signals(void);

/* ====================================================================== json.c */

/* A JSON document being written (docs/json.md): containers are opened and closed, object
 * members named with oqc_json_key (or the oqc_json_k* shorthands); commas, escaping and
 * number forms are the writer's (see json.c).  Misuse aborts (a bug in oqc). */
typedef struct OqcJson {
    char *buf;                /* the text so far (malloc'd, NUL-terminated) */
    size_t len, cap;          /* bytes used and allocated */
    int depth;                /* open containers */
    char kind[32];            /* per open container: '{' or '[' */
    int count[32];            /* per open container: members written */
    int keyed;                /* a key was written; its value comes next */
} OqcJson;
void oqc_json_init(OqcJson *j);
void oqc_json_free(OqcJson *j);
void oqc_json_object(OqcJson *j);   /* opens {  */
void oqc_json_array(OqcJson *j);    /* opens [  */
void oqc_json_end(OqcJson *j);      /* closes the innermost; a newline after the document */
void oqc_json_key(OqcJson *j, const char *key);
void oqc_json_str(OqcJson *j, const char *s);   /* NULL: null */
void oqc_json_num(OqcJson *j, double v);        /* NaN, +-Inf: null */
void oqc_json_int(OqcJson *j, long long v);
void oqc_json_bool(OqcJson *j, int v);
void oqc_json_null(OqcJson *j);
void oqc_json_kstr(OqcJson *j, const char *key, const char *s);
void oqc_json_knum(OqcJson *j, const char *key, double v);
void oqc_json_kint(OqcJson *j, const char *key, long long v);
void oqc_json_kbool(OqcJson *j, const char *key, int v);
/* The finished document (every container closed). */
const char *oqc_json_text(const OqcJson *j);


/* ==================================================================== version.c */

/* The version the Makefile defines (also in oqc.h, the public API). */
const char *oqc_version(void);

#endif
