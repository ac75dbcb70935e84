/* infile.c - opening the files oqc reads (see ir.h).
 *
 * Every file a command reads (the model, its external data or XML side data, .npy / .pb
 * / raw inputs, calibration tables, labels) is opened here, so that:
 *   - only regular files are read: a FIFO, device, socket or directory is refused
 *     before anything can block on it (the open is non-blocking, the type checked on
 *     the descriptor itself, so nothing can be swapped in between);
 *   - files a model names (external data, side data) stay inside the model's
 *     directory after symlinks are resolved (realpath), not only lexically;
 *   - every file read is remembered (device and inode), so that oqc_out_open refuses
 *     to write over an input of the same command, whatever name reaches it, and so
 *     that `-MD` can list what the command depended on (oqc_in_path), with the
 *     directories whose listing chose the data (oqc_in_note_dir). */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The files read so far by this process. */
typedef struct InFile {
    dev_t dev;    /* the device it is on */
    ino_t ino;    /* its inode there */
    char *path;   /* the name it was first read by (for messages) */
} InFile;

static InFile *inputs;
static size_t ninputs, capinputs;
static int remembering; /* off in the library; the CLI turns it on (one command per process) */
static pthread_mutex_t inputs_lock = PTHREAD_MUTEX_INITIALIZER;

void oqc_in_remember(int on) { remembering = on; }

static void remember(const struct stat *st, const char *path) {
    if (!remembering)
        return;
    pthread_mutex_lock(&inputs_lock);
    size_t i;
    for (i = 0; i < ninputs; i++)
        if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino)
            break;
    if (i == ninputs) {
        if (ninputs == capinputs) {
            capinputs = capinputs ? 2 * capinputs : 16;
            InFile *n = realloc(inputs, capinputs * sizeof *n);
            if (!n)
                oqc_panic(__FILE__, __LINE__, "out of memory");
            inputs = n;
        }
        char *p = strdup(path);
        if (!p)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        inputs[ninputs++] = (InFile){.dev = st->st_dev, .ino = st->st_ino, .path = p};
    }
    pthread_mutex_unlock(&inputs_lock);
}

void oqc_in_note_dir(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        remember(&st, path);
}

size_t oqc_in_count(void) {
    pthread_mutex_lock(&inputs_lock);
    size_t n = ninputs;
    pthread_mutex_unlock(&inputs_lock);
    return n;
}

const char *oqc_in_path(size_t i) {
    pthread_mutex_lock(&inputs_lock);
    const char *p = i < ninputs ? inputs[i].path : NULL;
    pthread_mutex_unlock(&inputs_lock);
    return p;
}

const char *oqc_in_was_read(const char *path) {
    struct stat st;
    const char *hit = NULL;
    if (stat(path, &st) != 0)
        return NULL;
    pthread_mutex_lock(&inputs_lock);
    for (size_t i = 0; i < ninputs && !hit; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino)
            hit = inputs[i].path;
    pthread_mutex_unlock(&inputs_lock);
    return hit;
}

/* What a file that is not regular is, for messages. */
static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO (named pipe)"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int oqc_in_open(const char *path, const char *what, struct stat *stp, OqcDiag *d) {
    const char *w = what ? what : "";
    const char *sep = what ? " " : "";
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
    if (fd < 0)
        return oqc_err(d, "%s: cannot open%s%s: %s", path, sep, w, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return oqc_err(d, "%s: cannot read%s%s: %s", path, sep, w, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return oqc_err(d, "%s: is %s, not a regular file: refusing to read it%s%s", path,
                       kind_of(st.st_mode), what ? " as " : "", w);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    remember(&st, path);
    if (stp)
        *stp = st;
    return fd;
}

FILE *oqc_in_fopen(const char *path, OqcDiag *d) {
    int fd = oqc_in_open(path, NULL, NULL, d);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        oqc_err(d, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int oqc_in_open_inside(const char *dir, const char *file, const char *what, struct stat *st,
                       OqcDiag *d) {
    char rdir[PATH_MAX], rfile[PATH_MAX];
    if (!realpath(dir, rdir))
        return oqc_err(d, "%s: cannot resolve the directory of %s: %s", dir, what,
                       strerror(errno));
    if (!realpath(file, rfile))
        return oqc_err(d, "%s: cannot open %s: %s", file, what, strerror(errno));
    size_t n = strlen(rdir);
    /* the root directory holds everything; otherwise rfile must be rdir + '/' ... */
    if (strcmp(rdir, "/") != 0 && (strncmp(rfile, rdir, n) != 0 || rfile[n] != '/'))
        return oqc_err(d, "%s: %s resolves to %s, outside the model's directory %s (through "
                          "a symbolic link): refusing to read it", file, what, rfile, rdir);
    /* open what was checked: the resolved name, so a link swapped meanwhile is not
     * followed out again */
    return oqc_in_open(rfile, what, st, d);
}
