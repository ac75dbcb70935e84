/* emit_out.c - the set of files `oqc compile` writes (OutSet, emit_files.h): each is
 * written to a temporary name beside its final one and the set is renamed into place
 * only when every file is complete; on failure the temporaries, any file already
 * renamed and the directories this run made are removed. */
#include "backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit_files.h"

/* Opens a temporary file for dir/name (emit_files.h). */
FILE *oqc_em_out_file(OutSet *o, OqcArena *a, const char *name, OqcDiag *d) {
    OQC_ASSERT(o->n < 80);
    const char *final = oqc_arena_printf(a, "%s/%s", o->dir, name);
    const char *tmp = oqc_arena_printf(a, "%s/.%s.tmp%ld", o->dir, name, (long)getpid());
    if (oqc_out_refuse_input(final, d) < 0)
        return NULL;
    oqc_tmp_add(tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        oqc_tmp_forget(tmp);
        oqc_err(d, "%s: cannot write: %s", final, strerror(errno));
        return NULL;
    }
    o->tmp[o->n] = tmp;
    o->final[o->n++] = final;
    return f;
}

/* Closes f; -1 with an error naming what when writing failed. */
int oqc_em_out_close(FILE *f, const char *what, OqcDiag *d) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oqc_err(d, "%s: error writing: %s", what, strerror(errno));
    return 0;
}

/* Creates dir and its missing parents; made[0..*nmade) receives those it made. */
int oqc_em_make_dirs(OqcArena *a, const char *dir, const char **made, int *nmade, OqcDiag *d) {
    char *p = oqc_arena_strdup(a, dir);
    *nmade = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) == 0) {
            if (*nmade < 16) {
                oqc_tmp_add_dir(p);
                made[(*nmade)++] = oqc_arena_strdup(a, p);
            }
        } else if (errno != EEXIST) {
            oqc_err(d, "%s: cannot create directory: %s", p, strerror(errno));
            return -1;
        }
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return oqc_err(d, "%s: not a directory", dir);
    return 0;
}

/* Renames the files of o into place when rc is 0 (NAME.c last); else removes this run's
 * files (temporaries, and any already renamed) and the directories made[0..nmade), but
 * nothing an earlier compile left.  rc, or -1. */
int oqc_em_commit(const OutSet *o, const char *const *made, int nmade, int rc, OqcDiag *d) {
    int renamed = 0;
    for (; rc == 0 && renamed < o->n; renamed++)
        if (rename(o->tmp[renamed], o->final[renamed]) != 0)
            rc = oqc_err(d, "%s: cannot rename the finished file into place: %s",
                         o->final[renamed], strerror(errno));
    for (int i = 0; i < o->n; i++)
        oqc_tmp_forget(o->tmp[i]);
    for (int i = nmade - 1; i >= 0; i--)
        oqc_tmp_forget(made[i]);
    if (rc < 0) {
        for (int i = 0; i < o->n; i++)
            remove(i < renamed - 1 ? o->final[i] : o->tmp[i]);
        for (int i = nmade - 1; i >= 0; i--)
            rmdir(made[i]);
        return -1;
    }
    for (int i = 0; i < o->n; i++)
        oqc_out_done(o->final[i]);
    return 0;
}
