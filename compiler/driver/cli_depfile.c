/* cli_depfile.c - `-MD [-MF FILE]`: a Make-format dependency file for the build system
 * that runs oqc (Make, CMake's add_custom_command(DEPFILE), Ninja's depfile=), like
 * gcc -MD -MP.  Its targets are every file the command wrote (outfile.c records them),
 * the command's main output first (Ninja checks that the first target is the first output
 * of its build edge), its prerequisites every file it read: the model, external data or XML side data, the
 * table, calibration and validation data (tensor files, images, list files) and the
 * directories whose listing chose the data files (infile.c records them).  -MT TARGET
 * (repeatable, as gcc's) names the targets instead: Ninja refuses a depfile that names
 * a file its build edge does not declare as an output.  Each input
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

/* Output i of the depfile's targets: main first, then the others in the order written. */
static const char *target(size_t i, size_t nout, const char *main) {
    size_t m = nout;
    for (size_t k = 0; k < nout; k++)
        if (!strcmp(oqc_out_path(k), main))
            m = k;
    if (m == nout)
        return oqc_out_path(i);
    return i == 0 ? oqc_out_path(m) : oqc_out_path(i <= m ? i - 1 : i);
}

int oqc_cli_write_depfile(const Opts *o, const char *main, const char *dflt, OqcDiag *d) {
    if (!o->md)
        return 0;
    size_t nout = oqc_out_count(), nin = oqc_in_count();
    size_t ntarget = o->nmt ? (size_t)o->nmt : nout;
    const char *path = o->mf ? o->mf : dflt;
    const char *bad = NULL;
    for (size_t i = 0; i < ntarget + nin && !bad; i++) {
        const char *p = i >= ntarget ? oqc_in_path(i - ntarget)
                      : o->nmt        ? o->mt[i]
                                      : oqc_out_path(i);
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
        for (size_t i = 0; i < ntarget; i++) {
            put_name(of.f, o->nmt ? o->mt[i] : target(i, nout, main));
            fputs(i + 1 < ntarget ? " \\\n" : ":", of.f);
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
    return rc;
}
