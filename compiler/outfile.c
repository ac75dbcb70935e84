/* outfile.c - output files written completely or not at all (see ir.h).
 *
 * A regular file (or a new one) is written to "PATH.tmpPID" and renamed over PATH only
 * when everything was written, so a failure never leaves a truncated file that looks
 * finished.  Anything else that already exists at PATH (/dev/null, a pipe, a terminal)
 * is written directly: renaming onto it would replace the device with a regular file. */
#include "ir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int oqc_out_open(OqcOutFile *o, const char *path, OqcDiag *d) {
    struct stat sb;
    memset(o, 0, sizeof *o);
    o->path = path;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (S_ISDIR(sb.st_mode))
            return oqc_err(d, "%s: is a directory, not a file", path);
        o->f = fopen(path, "wb");
        if (!o->f)
            return oqc_err(d, "%s: cannot write: %s", path, strerror(errno));
        return 0;
    }
    size_t n = strlen(path) + 32;
    o->tmp = malloc(n);
    if (!o->tmp)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    snprintf(o->tmp, n, "%s.tmp%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "wb");
    if (!o->f) {
        int rc = oqc_err(d, "%s: cannot write: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return rc;
    }
    return 0;
}

int oqc_out_commit(OqcOutFile *o, int ok, OqcDiag *d) {
    if (!o->f)
        return -1;
    int err = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        err = errno ? errno : EIO;
    if (fclose(o->f) != 0 && !err)
        err = errno ? errno : EIO;
    o->f = NULL;
    int rc = ok ? 0 : -1;
    if (ok && err)
        rc = oqc_err(d, "%s: error writing: %s", o->path, strerror(err));
    if (o->tmp) {
        if (rc == 0 && rename(o->tmp, o->path) != 0)
            rc = oqc_err(d, "%s: cannot rename the finished file into place: %s", o->path,
                         strerror(errno));
        if (rc < 0)
            remove(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}
