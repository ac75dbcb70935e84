/* outfile.c - output files written completely or not at all (see ir.h).
 *
 * A regular file (or a new one) is written to "PATH.tmpPID" and renamed over PATH only
 * when everything was written, so a failure never leaves a truncated file that looks
 * finished.  Anything else that already exists at PATH (/dev/null, a pipe, a terminal)
 * is written directly: renaming onto it would replace the device with a regular file.
 *
 * A file this process read as an input (infile.c) is never an output: writing over the
 * model, its data or a calibration set is refused, whatever name reaches the file.
 *
 * Temporaries (and directories a command created) are registered while they exist, so
 * that an interrupting signal (oqc_tmp_remove_on_signals) removes them before oqc dies:
 * an interrupted command leaves neither temporaries nor a changed output.
 *
 * The outputs renamed into place are recorded (oqc_out_done) for `-MD`, whose depfile
 * names every file the command wrote as a target. */
#include "base.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The registered temporaries and created directories.  Slots are written by the
 * thread writing outputs and read by the signal handler, which only calls unlink and
 * rmdir (async-signal-safe) on the strings; a slot is cleared before its string is
 * freed. */
#define MAX_TEMPS 256
static char *volatile temps[MAX_TEMPS];
static volatile sig_atomic_t temp_is_dir[MAX_TEMPS];

static void tmp_add(const char *path, int is_dir) {
    char *p = strdup(path);
    if (!p)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < MAX_TEMPS; i++)
        if (!temps[i]) {
            temp_is_dir[i] = is_dir;
            temps[i] = p;
            return;
        }
    free(p); /* more at once than any command writes: only not removed on a signal */
}

void oqc_tmp_add(const char *path) { tmp_add(path, 0); }
void oqc_tmp_add_dir(const char *path) { tmp_add(path, 1); }

void oqc_tmp_forget(const char *path) {
    for (int i = 0; i < MAX_TEMPS; i++) {
        char *p = temps[i];
        if (p && !strcmp(p, path)) {
            temps[i] = NULL;
            free(p);
            return;
        }
    }
}

static void on_signal(int sig) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temps[i] && !temp_is_dir[i])
            unlink(temps[i]);
    for (int i = MAX_TEMPS - 1; i >= 0; i--) /* deepest (registered last) first */
        if (temps[i] && temp_is_dir[i])
            rmdir(temps[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

void oqc_tmp_remove_on_signals(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
            sigaddset(&sa.sa_mask, sigs[k]);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* The finished outputs, in order (a single thread writes outputs). */
static char **done;
static size_t ndone, capdone;

void oqc_out_done(const char *path) {
    for (size_t i = 0; i < ndone; i++)
        if (!strcmp(done[i], path))
            return;
    if (ndone == capdone) {
        capdone = capdone ? 2 * capdone : 16;
        char **n = realloc(done, capdone * sizeof *n);
        if (!n)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        done = n;
    }
    if (!(done[ndone] = strdup(path)))
        oqc_panic(__FILE__, __LINE__, "out of memory");
    ndone++;
}

void oqc_out_moved(const char *from, const char *to) {
    for (size_t i = 0; i < ndone; i++)
        if (!strcmp(done[i], from)) {
            char *p = strdup(to);
            if (!p)
                oqc_panic(__FILE__, __LINE__, "out of memory");
            free(done[i]);
            done[i] = p;
            return;
        }
    oqc_out_done(to);
}

size_t oqc_out_count(void) { return ndone; }
const char *oqc_out_path(size_t i) { return i < ndone ? done[i] : NULL; }

int oqc_out_refuse_input(const char *path, OqcDiag *d) {
    const char *in = oqc_in_was_read(path);
    if (!in)
        return 0;
    if (!strcmp(in, path))
        return oqc_err(d, "%s: is an input of this command: refusing to overwrite it", path);
    return oqc_err(d, "%s: is the same file as the input %s: refusing to overwrite it", path,
                   in);
}

int oqc_out_open(OqcOutFile *o, const char *path, OqcDiag *d) {
    struct stat sb;
    memset(o, 0, sizeof *o);
    o->path = path;
    if (oqc_out_refuse_input(path, d) < 0)
        return -1;
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
    oqc_tmp_add(o->tmp);
    o->f = fopen(o->tmp, "wb");
    if (!o->f) {
        oqc_tmp_forget(o->tmp);
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
        if (rc == 0)
            oqc_out_done(o->path);
        if (rc < 0)
            remove(o->tmp);
        oqc_tmp_forget(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}
