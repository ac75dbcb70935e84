/* cli_depfile.c - `-MD [-MF FILE]`: a Make-format dependency file for the build system
 * that runs oqc (Make, CMake's add_custom_command(DEPFILE), Ninja's depfile=), like
 * gcc -MD -MP.  Its targets are every file the command wrote (outfile.c records them),
 * its prerequisites every file it read: the model, external data or XML side data, the
 * table, calibration and validation data (tensor files, images, list files) and the
 * directories whose listing chose the data files (infile.c records them).  Each input
 * also gets an empty rule of its own, so a deleted input makes the outputs out of date
 * instead of stopping Make ("No rule to make target").
 *
 * Names are escaped as Make reads them: a space or tab as backslash-space (with the
 * backslashes before it doubled), '#' as \#, '$' as $$; a name holding a newline cannot
 * be written and is an error. */
#include "cli_int.h"

#include <string.h>

/* Writes path to f escaped for a Make rule; -1 when it cannot be (a newline). */
static int put_name(FILE *f, const char *path) {
    for (const char *p = path; *p; p++) {
        if (*p == '\n' || *p == '\r')
            return -1;
        if (*p == ' ' || *p == '\t') {
            for (const char *b = p; b > path && b[-1] == '\\'; b--)
                fputc('\\', f); /* the backslashes before it, doubled */
            fputc('\\', f);
        } else if (*p == '#') {
            fputc('\\', f);
        } else if (*p == '$') {
            fputc('$', f);
        }
        fputc(*p, f);
    }
    return 0;
}

int oqc_cli_write_depfile(const Opts *o, const char *primary, OqcDiag *d) {
    if (!o->md)
        return 0;
    size_t nout = oqc_out_count(), nin = oqc_in_count();
    OqcArena *a = oqc_arena_new();
    const char *path = o->mf ? o->mf : oqc_arena_printf(a, "%s.d", primary);
    const char *bad = NULL;
    for (size_t i = 0; i < nout + nin && !bad; i++) {
        const char *p = i < nout ? oqc_out_path(i) : oqc_in_path(i - nout);
        if (strchr(p, '\n') || strchr(p, '\r'))
            bad = p;
    }
    int rc = 0;
    if (bad)
        rc = oqc_err(d, "%s: -MD: a file name holds a newline, which a Make dependency file "
                        "cannot express: '%s'", path, bad);
    else if (nout == 0)
        rc = oqc_err(d, "%s: -MD: the command wrote no file to name as a target", path);
    OqcOutFile of;
    if (rc == 0 && oqc_out_open(&of, path, d) < 0)
        rc = -1;
    if (rc == 0) {
        for (size_t i = 0; i < nout; i++) {
            put_name(of.f, oqc_out_path(i));
            fputs(i + 1 < nout ? " \\\n" : ":", of.f);
        }
        for (size_t i = 0; i < nin; i++) {
            fputs(" \\\n  ", of.f);
            put_name(of.f, oqc_in_path(i));
        }
        fputc('\n', of.f);
        for (size_t i = 0; i < nin; i++) {
            fputc('\n', of.f);
            put_name(of.f, oqc_in_path(i));
            fputs(":\n", of.f);
        }
        rc = oqc_out_commit(&of, 1, d);
    }
    oqc_arena_free(a);
    return rc;
}
