/* image_io.c - images as model inputs: the declared preprocessing (--preprocess), images
 * made into float tensors, and the lists of files that calibration and evaluation data
 * expand to (see ir.h; user documentation docs/images.md).
 *
 * The pipeline is torchvision's for PIL images, step for step, so that a model trained
 * with `transforms.Compose([Resize(R), CenterCrop(C), ToTensor(), Normalize(m, s)])` sees
 * the tensors it was trained on: decoding, color conversion, PIL's bilinear resize and
 * the centre crop to 8-bit pixels are runtime/app/oqc_image.c's (shared with the driver
 * `oqc compile --main` writes, so both make the same pixels); then x = u8 * mul / div and
 * (x - mean) / std in float32 (ToTensor divides by 255, Normalize subtracts then
 * divides), written NCHW or NHWC.  Decoded pixels live only while one image is
 * converted, so a folder of any size streams. */
#include "frontend.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oqc_image.h"

/* ============================================================ preprocessing spec */

static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
static const float imagenet_std[3] = {0.229f, 0.224f, 0.225f};
static const float cifar_mean[3] = {0.4914f, 0.4822f, 0.4465f};
static const float cifar_std[3] = {0.2023f, 0.1994f, 0.2010f};

static void pp_defaults(OqcPreprocess *p) {
    memset(p, 0, sizeof *p);
    p->mul = 1;
    p->div = 1;
    for (int c = 0; c < 3; c++)
        p->std[c] = 1;
}

/* The shortest "%g" text that reads back as the same float. */
static void fmt_float(char *buf, size_t n, float v) {
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

/* Fills p->spec with every key, so the text alone says what the model expects. */
static void pp_canonical(OqcPreprocess *p) {
    char m[3][32], s[3][32], mul[32], div[32], size[64] = "", crop[64] = "";
    for (int c = 0; c < 3; c++) {
        fmt_float(m[c], sizeof m[c], p->mean[c]);
        fmt_float(s[c], sizeof s[c], p->std[c]);
    }
    fmt_float(mul, sizeof mul, p->mul);
    fmt_float(div, sizeof div, p->div);
    if (p->resize_h)
        snprintf(size, sizeof size, "resize=%dx%d,", p->resize_h, p->resize_w);
    else if (p->resize)
        snprintf(size, sizeof size, "resize=%d,", p->resize);
    if (p->crop_h)
        snprintf(crop, sizeof crop, "crop=%dx%d,", p->crop_h, p->crop_w);
    snprintf(p->spec, sizeof p->spec, "%s%sscale=%s%s%s,mean=%s:%s:%s,std=%s:%s:%s,color=%s,"
             "layout=%s", size, crop, p->div != 1 ? "" : mul, p->div != 1 ? "1/" : "",
             p->div != 1 ? div : "", m[0], m[1], m[2], s[0], s[1], s[2],
             p->color == OQC_COLOR_BGR ? "bgr" : p->color == OQC_COLOR_GRAY ? "gray" : "rgb",
             p->nhwc ? "nhwc" : "nchw");
}

/* "N" or "HxW", each 1..65535. */
static int parse_size(const char *v, int *h, int *w) {
    char *end;
    long a = strtol(v, &end, 10), b = a;
    if (end == v || a < 1 || a > 65535)
        return -1;
    if (*end == 'x' || *end == 'X') {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        if (end == q || b < 1 || b > 65535)
            return -1;
    }
    if (*end)
        return -1;
    *h = (int)a;
    *w = (int)b;
    return 0;
}

/* One finite float, all of v. */
static int parse_float(const char *v, float *f) {
    char *end;
    *f = strtof(v, &end);
    return end != v && !*end && isfinite(*f) ? 0 : -1;
}

/* "a:b:c" (three channels) or "a" (every channel). */
static int parse_triple(const char *v, float out[3], int positive) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    int n = 0;
    for (char *tok = buf, *next; tok && n <= 3; tok = next) {
        next = strchr(tok, ':');
        if (next)
            *next++ = 0;
        if (n == 3 || parse_float(tok, &out[n]) < 0 || (positive && !(out[n] > 0)))
            return -1;
        n++;
    }
    if (n == 1)
        out[1] = out[2] = out[0];
    return n == 1 || n == 3 ? 0 : -1;
}

int oqc_preprocess_parse(const char *spec, OqcPreprocess *p, OqcDiag *d) {
    pp_defaults(p);
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return oqc_err(d, "--preprocess: the spec is too long");
    snprintf(buf, sizeof buf, "%s", spec);
    int first = 1;
    for (char *tok = buf, *next; tok; tok = next, first = 0) {
        next = strchr(tok, ',');
        if (next)
            *next++ = 0;
        char *eq = strchr(tok, '=');
        if (!eq) {
            if (!first)
                return oqc_err(d, "--preprocess '%s': a preset (%s) may only come first",
                               spec, tok);
            if (!strcmp(tok, "imagenet")) {
                p->resize = 256;
                p->crop_h = p->crop_w = 224;
                p->div = 255;
                memcpy(p->mean, imagenet_mean, sizeof p->mean);
                memcpy(p->std, imagenet_std, sizeof p->std);
            } else if (!strcmp(tok, "cifar")) {
                p->div = 255;
                memcpy(p->mean, cifar_mean, sizeof p->mean);
                memcpy(p->std, cifar_std, sizeof p->std);
            } else if (strcmp(tok, "raw") != 0) {
                return oqc_err(d, "--preprocess '%s': unknown preset '%s' (imagenet, cifar, "
                                  "raw, or keys resize=,crop=,scale=,mean=,std=,color=,"
                                  "layout=)", spec, tok);
            }
            continue;
        }
        *eq = 0;
        const char *key = tok, *v = eq + 1;
        int bad = 0;
        if (!strcmp(key, "resize")) {
            int h, w;
            bad = parse_size(v, &h, &w) < 0;
            if (!bad && strchr(v, 'x') == NULL && strchr(v, 'X') == NULL) {
                p->resize = h;
                p->resize_h = p->resize_w = 0;
            } else if (!bad) {
                p->resize = 0;
                p->resize_h = h;
                p->resize_w = w;
            }
        } else if (!strcmp(key, "crop")) {
            bad = parse_size(v, &p->crop_h, &p->crop_w) < 0;
        } else if (!strcmp(key, "scale")) {
            /* "1/N" divides (as ToTensor's /255: the same float bits), a number multiplies */
            if (!strncmp(v, "1/", 2)) {
                bad = parse_float(v + 2, &p->div) < 0 || !(p->div > 0);
                p->mul = 1;
            } else {
                bad = parse_float(v, &p->mul) < 0 || !(p->mul > 0);
                p->div = 1;
            }
        } else if (!strcmp(key, "mean")) {
            bad = parse_triple(v, p->mean, 0) < 0;
        } else if (!strcmp(key, "std")) {
            bad = parse_triple(v, p->std, 1) < 0;
        } else if (!strcmp(key, "color")) {
            p->color = !strcmp(v, "rgb") ? OQC_COLOR_RGB : !strcmp(v, "bgr") ? OQC_COLOR_BGR
                     : !strcmp(v, "gray") ? OQC_COLOR_GRAY : -1;
            bad = (int)p->color < 0;
        } else if (!strcmp(key, "layout")) {
            bad = strcmp(v, "nchw") && strcmp(v, "nhwc");
            p->nhwc = !strcmp(v, "nhwc");
        } else {
            return oqc_err(d, "--preprocess '%s': unknown key '%s' (resize, crop, scale, mean, "
                              "std, color, layout)", spec, key);
        }
        if (bad)
            return oqc_err(d, "--preprocess '%s': bad value '%s' for %s (resize=N|HxW, "
                              "crop=N|HxW, scale=X|1/N, mean=a:b:c, std=a:b:c (> 0), "
                              "color=rgb|bgr|gray, layout=nchw|nhwc)", spec, v, key);
    }
    p->given = 1;
    pp_canonical(p);
    return 0;
}

/* ================================================================== decoding */

static int ends_with_ci(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int oqc_is_image_path(const char *path) {
    return oqc_img_is_image_path(path);
}

/* ============================================================== preprocessing */

int oqc_image_geometry(const OqcPreprocess *p, const OqcShape *in, int *c, int *h, int *w,
                       OqcDiag *d) {
    char buf[128];
    int r = in->rank, b = r == 4 ? 1 : 0;
    if ((r != 3 && r != 4) || (r == 4 && in->d[0] != 1))
        return oqc_err(d, "image input needs a model input of shape [1,C,H,W], [C,H,W] (or "
                          "NHWC with layout=nhwc), not %s", oqc_shape_str(in, buf, sizeof buf));
    *c = (int)in->d[p->nhwc ? b + 2 : b];
    *h = (int)in->d[p->nhwc ? b : b + 1];
    *w = (int)in->d[p->nhwc ? b + 1 : b + 2];
    int want = p->color == OQC_COLOR_GRAY ? 1 : 3;
    if (*c != want)
        return oqc_err(d, "--preprocess %s gives %d channel%s but the model input %s has %d "
                          "in layout %s (use color=%s%s)", p->spec, want, want == 1 ? "" : "s",
                       oqc_shape_str(in, buf, sizeof buf), *c, p->nhwc ? "nhwc" : "nchw",
                       *c == 1 ? "gray" : "rgb", *c == want ? "" : " or the other layout");
    return 0;
}

int oqc_image_load(const char *path, const OqcPreprocess *p, const OqcShape *in, float *out,
                   OqcDiag *d) {
    int C, H, W;
    if (oqc_image_geometry(p, in, &C, &H, &W, d) < 0)
        return -1;
    OqcImgSpec s = {.resize = p->resize, .resize_h = p->resize_h, .resize_w = p->resize_w,
                    .crop_h = p->crop_h, .crop_w = p->crop_w, .nhwc = p->nhwc,
                    .color = p->color == OQC_COLOR_BGR ? OQC_IMG_BGR
                           : p->color == OQC_COLOR_GRAY ? OQC_IMG_GRAY : OQC_IMG_RGB};
    size_t n = (size_t)C * (size_t)H * (size_t)W, plane = (size_t)H * (size_t)W;
    unsigned char *px = malloc(n);
    char err[512];
    if (!px)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    /* oqc_in_fopen: a FIFO or a device is refused, not waited on, and the file is
     * recorded as read (depfiles) */
    FILE *f = oqc_in_fopen(path, d);
    if (!f) {
        free(px);
        return -1;
    }
    int rc = oqc_img_pixels_file(f, &s, C, H, W, px, err, sizeof err);
    fclose(f);
    if (rc < 0)
        oqc_err(d, "%s: %s%s%s", path, err, strncmp(err, "image is", 8) ? "" : "; --preprocess ",
                strncmp(err, "image is", 8) ? "" : p->spec);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int c = (int)(p->nhwc ? i % (size_t)C : i / plane);
        out[i] = oqc_img_value(px[i], p->mul, p->div, p->mean[c], p->std[c]);
    }
    free(px);
    return rc;
}

int oqc_images_read(const char *const *files, int64_t n, const OqcPreprocess *p,
                    const OqcShape *in, OqcArena *a, OqcValue *v, OqcDiag *d) {
    memset(v, 0, sizeof *v);
    int64_t per = oqc_shape_numel(in);
    v->dtype = OQCF_FLOAT;
    v->shape = *in;
    if (in->rank == 4) { /* [n, C, H, W]: n samples stacked on the batch axis */
        v->shape.d[0] = n;
    } else {             /* [n, C, H, W] from [C, H, W]: a leading sample axis */
        for (int i = in->rank; i > 0; i--)
            v->shape.d[i] = v->shape.d[i - 1];
        v->shape.d[0] = n;
        v->shape.rank++;
    }
    v->nbytes = (size_t)(per * n) * sizeof(float);
    v->data = oqc_arena_alloc_raw(a, v->nbytes + 1);
    for (int64_t i = 0; i < n; i++)
        if (oqc_image_load(files[i], p, in, (float *)v->data + i * per, d) < 0)
            return -1;
    return 0;
}

/* ============================================================ data file lists */

/* A growing array of paths in an arena. */
typedef struct PathList {
    OqcArena *a;          /* owner */
    const char **v;       /* paths */
    int n, cap;           /* used, allocated */
} PathList;

static void push(PathList *l, const char *path) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        l->v = oqc_arena_grow(l->a, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
        l->cap = cap;
    }
    l->v[l->n++] = path;
}

static int by_name(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The names in dir (no . or ..), sorted by bytes as Python's sorted(); -1 on error. */
static int list_dir(OqcArena *a, const char *dir, char ***names) {
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0, cap = 16;
    char **v = oqc_arena_alloc(a, (size_t)cap * sizeof *v);
    for (struct dirent *e; (e = readdir(dp));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            v = oqc_arena_grow(a, v, (size_t)n, (size_t)cap * 2, sizeof *v);
            cap *= 2;
        }
        v[n++] = oqc_arena_strdup(a, e->d_name);
    }
    closedir(dp);
    qsort(v, (size_t)n, sizeof *v, by_name);
    *names = v;
    return n;
}

static int is_tensor_path(const char *p) {
    return ends_with_ci(p, ".npy") || ends_with_ci(p, ".pb");
}

/* Directory dir: its data files at every depth, each level in name order (as
 * torchvision's ImageFolder walks), hidden entries skipped. */
static int walk(PathList *l, const char *dir, int depth, OqcDiag *d) {
    char **names;
    int n = list_dir(l->a, dir, &names);
    if (n < 0)
        return oqc_err(d, "%s: cannot list the directory: %s", dir, strerror(errno));
    if (depth > 32)
        return oqc_err(d, "%s: directories nested too deep", dir);
    oqc_in_note_dir(dir);
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '.')
            continue;
        char *p = oqc_arena_printf(l->a, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(p, &st) != 0)
            continue; /* a dangling link */
        if (S_ISDIR(st.st_mode)) {
            if (walk(l, p, depth + 1, d) < 0)
                return -1;
        } else if (oqc_is_image_path(p) || is_tensor_path(p)) {
            push(l, p);
        }
    }
    return 0;
}

int oqc_is_list_path(const char *path) {
    return ends_with_ci(path, ".txt") || ends_with_ci(path, ".lst");
}

/* One line of a list file split into its path and optional trailing class number
 * ("PATH" or "PATH CLASS"); 0 for a blank or # comment line. */
static int split_line(char *line, char **path, long long *cls, int *has_cls) {
    size_t len = strlen(line);
    while (len && isspace((unsigned char)line[len - 1]))
        line[--len] = 0;
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s || *s == '#')
        return 0;
    *has_cls = 0;
    char *sp = s + strlen(s);
    while (sp > s && !isspace((unsigned char)sp[-1]))
        sp--;
    if (sp > s) {
        char *end;
        errno = 0;
        long long v = strtoll(sp, &end, 10);
        if (end != sp && !*end && !errno) {
            *cls = v;
            *has_cls = 1;
            while (sp > s && isspace((unsigned char)sp[-1]))
                sp--;
            *sp = 0;
        }
    }
    *path = s;
    return 1;
}

/* Reads list file path: each entry's path (relative ones resolved against the list's
 * directory) and class (-1 when the line has none). */
static int read_list(OqcArena *a, const char *path, const char ***paths, long long **cls,
                     int *n, OqcDiag *d) {
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    const char *slash = strrchr(path, '/');
    char *base = slash ? oqc_arena_strndup(a, path, (size_t)(slash - path)) : NULL;
    PathList l = {.a = a};
    long long *c = NULL;
    int cap = 0, rc = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) >= 0) {
        char *p;
        long long k = -1;
        int has;
        if (!split_line(line, &p, &k, &has))
            continue;
        push(&l, p[0] == '/' || !base ? oqc_arena_strdup(a, p)
                                      : oqc_arena_printf(a, "%s/%s", base, p));
        if (l.cap != cap) {
            c = oqc_arena_grow(a, c, (size_t)cap, (size_t)l.cap, sizeof *c);
            cap = l.cap;
        }
        c[l.n - 1] = has ? k : -1;
    }
    free(line);
    if (rc == 0 && ferror(f))
        rc = oqc_err(d, "%s: read error", path);
    fclose(f);
    *paths = l.v;
    *cls = c;
    *n = l.n;
    return rc;
}

int oqc_data_files(OqcArena *a, const char *const *paths, int npaths, const char ***out,
                   int *n, OqcDiag *d) {
    PathList l = {.a = a};
    for (int p = 0; p < npaths; p++) {
        struct stat st;
        if (stat(paths[p], &st) != 0)
            return oqc_err(d, "%s: cannot read: %s", paths[p], strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            int before = l.n;
            if (walk(&l, paths[p], 0, d) < 0)
                return -1;
            if (l.n == before)
                return oqc_err(d, "%s: no .npy, .pb, .jpg, .jpeg or .png files in the "
                                  "directory", paths[p]);
        } else if (oqc_is_list_path(paths[p])) {
            const char **v;
            long long *cls;
            int m;
            if (read_list(a, paths[p], &v, &cls, &m, d) < 0)
                return -1;
            if (m == 0)
                return oqc_err(d, "%s: the list names no files", paths[p]);
            for (int i = 0; i < m; i++)
                push(&l, v[i]);
        } else {
            push(&l, paths[p]);
        }
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

int oqc_data_has_images(const char *const *files, int n) {
    for (int i = 0; i < n; i++)
        if (oqc_is_image_path(files[i]))
            return 1;
    return 0;
}

/* ==================================================================== labels */

int oqc_image_labels(OqcArena *a, const char *data, const char *const *files, int n,
                     const char *labels, OqcValue *v, OqcDiag *d) {
    int64_t *lab = oqc_arena_alloc(a, (size_t)n * sizeof *lab + 1);
    if (!strcmp(labels, "folders")) {
        /* ImageFolder: the class of DATA/CLASS/.../file is CLASS's index among the
         * sorted sub-folders of DATA */
        char **names;
        int nn = list_dir(a, data, &names);
        if (nn < 0)
            return oqc_err(d, "--labels folders: %s: not a directory (give --data DIR with "
                              "one sub-folder per class)", data);
        int k = 0;
        for (int i = 0; i < nn; i++) {
            struct stat st;
            if (names[i][0] != '.' &&
                stat(oqc_arena_printf(a, "%s/%s", data, names[i]), &st) == 0 &&
                S_ISDIR(st.st_mode))
                names[k++] = names[i];
        }
        size_t dl = strlen(data);
        for (int i = 0; i < n; i++) {
            const char *rel = files[i] + dl + 1, *sl = strchr(rel, '/');
            lab[i] = -1;
            for (int c = 0; sl && c < k; c++)
                if (strlen(names[c]) == (size_t)(sl - rel) && !strncmp(names[c], rel, (size_t)(sl - rel)))
                    lab[i] = c;
            if (lab[i] < 0)
                return oqc_err(d, "--labels folders: %s is not inside a class sub-folder of %s",
                               files[i], data);
        }
    } else {
        const char **paths;
        long long *cls;
        int m;
        if (read_list(a, labels, &paths, &cls, &m, d) < 0)
            return -1;
        /* matched by the file each names (realpath), whatever way the path is spelt */
        char **real = oqc_arena_alloc(a, (size_t)m * sizeof *real + 1);
        for (int j = 0; j < m; j++) {
            char *r = realpath(paths[j], NULL);
            real[j] = r ? oqc_arena_strdup(a, r) : NULL;
            free(r);
            if (cls[j] < 0)
                return oqc_err(d, "%s: entry %d (%s) has no class number (lines are PATH "
                                  "CLASS)", labels, j + 1, paths[j]);
        }
        for (int i = 0; i < n; i++) {
            char *r = realpath(files[i], NULL);
            lab[i] = -1;
            for (int j = 0; r && j < m && lab[i] < 0; j++)
                if (real[j] && !strcmp(real[j], r))
                    lab[i] = cls[j];
            free(r);
            if (lab[i] < 0)
                return oqc_err(d, "%s: no class for %s", labels, files[i]);
        }
    }
    memset(v, 0, sizeof *v);
    v->dtype = OQCF_INT64;
    v->shape.rank = 1;
    v->shape.d[0] = n;
    v->data = lab;
    v->nbytes = (size_t)n * sizeof *lab;
    return 0;
}
