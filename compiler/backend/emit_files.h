/* emit_files.h - internal to the C emitter (compiler/backend/emit_*.c): the set of
 * output files being written and the writers of the files around the kernel calls, one
 * file each: emit_c.c (NAME.c, the runtime copies, the whole emission), emit_header.c
 * (NAME.h), emit_weights.c (NAME_weights.h/.c), emit_make.c (NAME.mk, README.md), and
 * emit_out.c (the set of files, renamed into place together). */
#ifndef OQC_EMIT_FILES_H
#define OQC_EMIT_FILES_H

#include "emit_int.h"

/* Files being written: temporary names renamed together at the end. */
typedef struct OutSet {
    const char *dir;        /* output directory */
    const char *tmp[80];    /* temporary paths */
    const char *final[80];  /* final paths */
    int n;                  /* count */
} OutSet;

/* emit_out.c: opens a temporary file for o->dir/name, renamed into place with the set
 * (oqc_em_commit); NULL with an error. */
FILE *oqc_em_out_file(OutSet *o, OqcArena *a, const char *name, OqcDiag *d);
/* emit_out.c: closes f; -1 with an error naming what when writing failed. */
int oqc_em_out_close(FILE *f, const char *what, OqcDiag *d);
/* emit_out.c: creates dir and its missing parents; made[0..*nmade) receives those it
 * made (at most 16), removed again by oqc_em_commit on failure. */
int oqc_em_make_dirs(OqcArena *a, const char *dir, const char **made, int *nmade, OqcDiag *d);
/* emit_out.c: renames the files of o into place when rc is 0 (NAME.c last); else
 * removes this run's files and the directories made[0..nmade).  rc, or -1. */
int oqc_em_commit(const OutSet *o, const char *const *made, int nmade, int rc, OqcDiag *d);

/* The INT8 parts of the output: the integer-I/O entry point's tensors and the
 * boundary calls, and the INT8 constants. */
typedef struct IntIO {
    int qin, qout;        /* the quantized input and output tensors, -1: no integer I/O */
    const char *pre;      /* calls quantizing the float input (run_multi only) */
    const char *post;     /* calls dequantizing the float output (run_multi only) */
    const char *qh, *qc;  /* INT8 constants: declarations, definitions */
    const OqcPreprocess *pp; /* the declared preprocessing (--preprocess), or NULL */
    int pp_c, pp_h, pp_w; /* the input's channels, height and width (with pp) */
    int u8;               /* 1: NAME_run_u8 (pixels through u8_table into qin) */
    uint8_t u8_table[3][256]; /* per model channel: pixel -> quantized input (s8 or u8 bits) */
} IntIO;

/* emit_weights.c: writes the constants: NAME_weights.h (declarations) and NAME_weights.c;
 * model names the source model in their first comment. */
int oqc_em_write_weights(Em *m, OutSet *o, const char *model, const IntIO *io, OqcDiag *d);
/* emit_header.c: writes NAME.h for arena_total bytes of working memory. */
int oqc_em_write_header(Em *m, OutSet *o, const char *model, const char *precision,
                        size_t arena_total, const IntIO *io, OqcDiag *d);
/* emit_make.c: writes NAME.mk (the sources: NAME.c, NAME_weights.c when nconst, the .c
 * files of all; the flags of target) and README.md (preprocess: the spec or NULL; u8:
 * NAME_run_u8 exists). */
int oqc_em_write_make(Em *m, OutSet *o, const char *model, const FileSet *all, int nconst,
                      const char *target, const char *preprocess, int u8, OqcDiag *d);

#endif
