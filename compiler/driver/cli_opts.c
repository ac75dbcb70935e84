/* cli_opts.c - the oqc driver's command-line options: parsing a command's arguments
 * into an Opts (cli_int.h) and the settings the options select for every command: the
 * passes that run (--passes, --disable-pass, --after, --no-opt) and the default thread
 * count.  Separate from main.c so that main.c shows what the commands do, not how
 * their arguments are read.  Part of build/oqc only (it prints oqc_usage, usage.c). */
#include "cli_int.h"
#include "passes.h"
#include "usage.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names of the pipeline's passes, comma-separated, into buf. */
static const char *pass_names(char *buf, size_t size) {
    int n;
    const OqcPass *list = oqc_pipeline(&n);
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        strncat(buf, i ? ", " : "", size - strlen(buf) - 1);
        strncat(buf, list[i].name, size - strlen(buf) - 1);
    }
    return buf;
}

/* The first name of the comma list *p into one (size bytes); *p moves past it (NULL at
 * the end of the list). */
static const char *next_name(const char **p, char *one, size_t size) {
    const char *comma = strchr(*p, ',');
    snprintf(one, size, "%.*s", comma ? (int)(comma - *p) : (int)strlen(*p), *p);
    *p = comma ? comma + 1 : NULL;
    return one;
}

/* How an option is stored in Opts. */
typedef enum OptKind {
    OPT_FLAG,    /* an int set to 1, no value */
    OPT_COUNT,   /* an int counting the times given (-v), no value */
    OPT_STR,     /* a string: the value, the last one given */
    OPT_LIST,    /* a repeatable string: the values in order, with their count */
    OPT_INT,     /* an int in [min, max] */
    OPT_OTHER    /* checked and stored by other_option (or, --merge-stats, merge_stats) */
} OptKind;

/* One option of the table below. */
typedef struct OptSpec {
    const char *name;   /* as written on the command line */
    OptKind kind;       /* how it is stored */
    size_t field;       /* offsetof the Opts field (not OPT_OTHER) */
    size_t count;       /* OPT_LIST: offsetof the count field */
    int cap;            /* OPT_LIST: the array's capacity */
    int min, max;       /* OPT_INT: the accepted range */
} OptSpec;

#define FLAG(n, f) {.name = n, .kind = OPT_FLAG, .field = offsetof(Opts, f)}
#define STR(n, f) {.name = n, .kind = OPT_STR, .field = offsetof(Opts, f)}
#define LIST(n, f, nf)                                                                     \
    {.name = n, .kind = OPT_LIST, .field = offsetof(Opts, f), .count = offsetof(Opts, nf), \
     .cap = (int)(sizeof((Opts *)0)->f / sizeof((Opts *)0)->f[0])}
#define INT(n, f, lo, hi) \
    {.name = n, .kind = OPT_INT, .field = offsetof(Opts, f), .min = lo, .max = hi}
#define OTHER(n) {.name = n, .kind = OPT_OTHER}

/* Every option of every command (which command accepts which: its allowed list). */
static const OptSpec options[] = {
    {.name = "-v", .kind = OPT_COUNT, .field = offsetof(Opts, verbose)},
    FLAG("-q", quiet),
    FLAG("--sensitivity", sensitivity),
    FLAG("--no-opt", no_opt),
    FLAG("--main", main_driver),
    FLAG("-MD", md),
    FLAG("--json", json_fd), /* started at the end, once the options are known to be good */
    OTHER("--portable-fp32"),
    STR("-o", out),
    STR("--save-stats", save_stats),
    STR("--range", range),
    OTHER("--merge-stats"),
    STR("-MF", mf),
    LIST("-MT", mt, nmt),
    STR("--format", format),
    LIST("--data", data, ndata),
    STR("--method", method),
    /* at most 65536: the entropy search grows with the square of the bins */
    INT("--bins", bins, 128, 65536),
    INT("--batch", batch, 1, 4096),
    STR("--report", report),
    LIST("--calib", calib, ncalib),
    OTHER("--requant"),
    OTHER("--act-scales"),
    INT("--weight-bits", weight_bits, 2, 8),
    STR("--precision", precision),
    STR("--name", name),
    OTHER("--target"),
    STR("--fp32-nodes", fp32_nodes),
    OTHER("--min-sqnr"),
    OTHER("--max-drop"),
    STR("--val", val),
    STR("--val-labels", val_labels),
    STR("--save-table", save_table),
    STR("--save-int8", save_int8),
    STR("--save-fp32", save_fp32),
    OTHER("--limit"),
    STR("--table", table),
    STR("--after", after),
    STR("--passes", passes),
    OTHER("--disable-pass"),
    STR("--labels", labels),
    LIST("--input", inputs, ninputs),
    INT("--threads", threads, 1, 64),
    OTHER("--runs"),
    OTHER("--warmup"),
    OTHER("--preprocess"),
    OTHER("--input-shape"),
};

/* The options whose value needs more than a table row: checked and stored into o. */
static int other_option(Opts *o, const char *name, const char *val, const char *cmd,
                        OqcDiag *d) {
    if (!strcmp(name, "--requant")) {
        if (strcmp(val, "float") && strcmp(val, "fixed"))
            return oqc_err(d, "oqc %s: --requant '%s': expected float or fixed", cmd, val);
        o->requant = val;
    } else if (!strcmp(name, "--act-scales")) {
        if (strcmp(val, "channel") && strcmp(val, "tensor"))
            return oqc_err(d, "oqc %s: --act-scales '%s': expected channel or tensor", cmd,
                           val);
        o->act_scales = val;
    } else if (!strcmp(name, "--target")) {
        if (!oqc_target_flags(val)) {
            char names[256];
            oqc_target_names(names, sizeof names);
            return oqc_err(d, "oqc %s: unknown --target '%s' (%s)", cmd, val, names);
        }
        o->target = val;
    } else if (!strcmp(name, "--min-sqnr") || !strcmp(name, "--max-drop")) {
        char *end;
        double v = strtod(val, &end);
        if (*end || end == val || !(v >= 0) || v > 1000)
            return oqc_err(d, "oqc %s: %s '%s' must be a number from 0 to 1000", cmd, name,
                           val);
        *(!strcmp(name, "--min-sqnr") ? &o->min_sqnr : &o->max_drop) = v;
    } else if (!strcmp(name, "--limit")) {
        char *end;
        long long v = strtoll(val, &end, 10);
        if (*end || v < 1)
            return oqc_err(d, "oqc %s: --limit '%s' must be a positive number", cmd, val);
        o->limit = v;
    } else if (!strcmp(name, "--disable-pass")) {
        size_t used = strlen(o->disable_buf);
        if (used + strlen(val) + 2 > sizeof o->disable_buf)
            return oqc_err(d, "oqc %s: --disable-pass lists are too long", cmd);
        snprintf(o->disable_buf + used, sizeof o->disable_buf - used, "%s%s", used ? "," : "",
                 val);
        o->disable = o->disable_buf;
    } else if (!strcmp(name, "--runs") || !strcmp(name, "--warmup")) {
        char *end;
        long v = strtol(val, &end, 10);
        if (*end || end == val || v < (name[2] == 'r') || v > 1000000)
            return oqc_err(d, "oqc %s: %s '%s' must be a number from %d to 1000000", cmd, name,
                           val, name[2] == 'r');
        *(name[2] == 'r' ? &o->runs : &o->warmup) = v;
    } else if (!strcmp(name, "--preprocess")) {
        return oqc_preprocess_parse(val, &o->pre, d);
    } else if (!strcmp(name, "--input-shape")) {
        if (o->nshapes == (int)(sizeof o->shapes / sizeof o->shapes[0]))
            return oqc_err(d, "oqc %s: too many --input-shape options", cmd);
        if (oqc_parse_input_shape(val, &o->shapes[o->nshapes], d) < 0)
            return -1;
        o->nshapes++;
    }
    return 0;
}

/* Stores the value val of option s into o (s->kind is neither a flag nor OPT_OTHER). */
static int table_option(Opts *o, const OptSpec *s, const char *val, const char *cmd,
                        OqcDiag *d) {
    char *field = (char *)o + s->field;
    if (s->kind == OPT_STR) {
        *(const char **)field = val;
    } else if (s->kind == OPT_LIST) {
        int *n = (int *)((char *)o + s->count);
        if (*n == s->cap)
            return oqc_err(d, "oqc %s: too many %s options", cmd, s->name);
        ((const char **)field)[(*n)++] = val;
    } else if (s->kind == OPT_INT) {
        char *end;
        long v = strtol(val, &end, 10);
        if (*end || end == val || v < s->min || v > s->max)
            return oqc_err(d, "oqc %s: %s '%s' must be a number from %d to %d", cmd, s->name,
                           val, s->min, s->max);
        *(int *)field = (int)v;
    }
    return 0;
}

/* A flag (an option without a value) into o. */
static int flag_option(Opts *o, const OptSpec *s, const char *cmd, OqcDiag *d) {
    if (s->kind == OPT_COUNT)
        (*(int *)((char *)o + s->field))++;
    else if (s->kind == OPT_FLAG)
        *(int *)((char *)o + s->field) = 1;
    /* --portable-fp32: every FP32 kernel oqc itself runs (calibration, mixed-precision
     * measurements, constant folding) sums as the portable C family does, so the outputs
     * are the same bits on every host (docs/testing.md) */
    else if (oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE) != 0)
        return oqc_err(d, "oqc %s: --portable-fp32: cannot select the portable kernels", cmd);
    return 0;
}

/* --merge-stats FILE...: val and every following word up to the next option; *i moves to
 * the last word taken. */
static void merge_stats(Opts *o, const char *val, int argc, char **argv, int *i) {
    int n = 1;
    while (*i + n < argc && (argv[*i + n][0] != '-' || !argv[*i + n][1]))
        n++;
    const char **m = realloc(o->merge, (size_t)(o->nmerge + n) * sizeof *m);
    if (!m)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    o->merge = m;
    o->merge[o->nmerge++] = val;
    for (int k = 1; k < n; k++)
        o->merge[o->nmerge++] = argv[++*i];
}

/* The row of option name (which allowed lists), or NULL with an error when the command
 * does not take it. */
static const OptSpec *find_option(const char *name, const char *cmd,
                                  const char *const *allowed, OqcDiag *d) {
    int ok = 0;
    for (const char *const *p = allowed; *p; p++)
        ok |= !strcmp(*p, name);
    for (size_t k = 0; ok && k < sizeof options / sizeof options[0]; k++)
        if (!strcmp(options[k].name, name))
            return &options[k];
    if (ok)
        oqc_panic(__FILE__, __LINE__, "option missing from the options table");
    oqc_err(d, "oqc %s: unknown option '%s' (see `oqc help %s`)", cmd, name, cmd);
    return NULL;
}

/* The checks made once every option is read: the model, -MF/-MT without -MD, the pass
 * names (checked whether or not the passes run - dump without --after, --no-opt - so a
 * misspelt name is an error, never silently ignored); then --json starts. */
static int finish_opts(Opts *o, const char *cmd, OqcDiag *d) {
    if (!o->model)
        return oqc_err(d, "oqc %s: missing MODEL argument\n%s", cmd, oqc_usage(cmd));
    if ((o->mf || o->nmt) && !o->md)
        return oqc_err(d, "oqc %s: -MF FILE and -MT TARGET shape the dependency file of "
                          "-MD: add -MD", cmd);
    const char *lists[2][2] = {{o->passes, "--passes"}, {o->disable, "--disable-pass"}};
    for (int k = 0; k < 2; k++)
        for (const char *p = lists[k][0]; p && *p;) {
            char one[64], names[256];
            if (!oqc_pass_find(next_name(&p, one, sizeof one)))
                return oqc_err(d, "oqc %s: %s: unknown pass '%s' (passes: %s)", cmd,
                               lists[k][1], one, pass_names(names, sizeof names));
        }
    return o->json_fd ? oqc_cli_json_start(o, cmd, d) : 0;
}

/* Parses the options a command accepts (allowed: their names, NULL-terminated). */
int oqc_cli_parse_opts(int argc, char **argv, const char *cmd, const char *const *allowed,
                       Opts *o, OqcDiag *d) {
    memset(o, 0, sizeof *o);
    o->min_sqnr = o->max_drop = NAN;
    o->runs = o->warmup = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (a[0] != '-' || !a[1]) {
            if (o->model)
                return oqc_err(d, "oqc %s: unexpected argument '%s' (the model is already "
                                  "'%s')", cmd, a, o->model);
            o->model = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        const OptSpec *s = find_option(name, cmd, allowed, d);
        if (!s)
            return -1;
        if (s->kind == OPT_FLAG || s->kind == OPT_COUNT || !strcmp(name, "--portable-fp32")) {
            if (flag_option(o, s, cmd, d) < 0)
                return -1;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return oqc_err(d, "oqc %s: option '%s' needs a value", cmd, name);
            val = argv[++i];
        }
        if (!strcmp(name, "--merge-stats"))
            merge_stats(o, val, argc, argv, &i);
        else if ((s->kind == OPT_OTHER ? other_option(o, name, val, cmd, d)
                                       : table_option(o, s, val, cmd, d)) < 0)
            return -1;
    }
    return finish_opts(o, cmd, d);
}

void oqc_cli_free_opts(Opts *o) {
    for (int i = 0; i < o->nshapes; i++)
        free((void *)o->shapes[i].name);
    free(o->merge);
    o->merge = NULL;
    if (o->json) {
        oqc_json_free(o->json);
        free(o->json);
        o->json = NULL;
    }
}

/* Runs the pass pipeline as the options say: everything (or --passes) minus
 * --disable-pass, stopping after --after PASS when given; nothing with --no-opt. */
int oqc_cli_optimize(OqcGraph *g, const Opts *o, OqcDiag *d) {
    if (o->no_opt)
        return 0;
    d->verbose = o->verbose;
    const char *only = o->passes;
    char prefix[512] = "";
    if (o->after && strcmp(o->after, "all") != 0) {
        const OqcPass *stop = oqc_pass_find(o->after);
        int n;
        const OqcPass *list = oqc_pipeline(&n);
        if (!stop) {
            char names[256];
            return oqc_err(d, "--after: unknown pass '%s' (passes: %s, or all)", o->after,
                           pass_names(names, sizeof names));
        }
        for (const char *p = o->passes; p && *p;) { /* --passes names must exist */
            char one[64];
            if (!oqc_pass_find(next_name(&p, one, sizeof one)))
                return oqc_err(d, "--passes: unknown pass '%s'", one);
        }
        for (int i = 0; i < n; i++) {
            int selected = !o->passes;
            for (const char *p = o->passes; p && *p && !selected;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                selected = len == strlen(list[i].name) && !strncmp(p, list[i].name, len);
                p = comma ? comma + 1 : NULL;
            }
            if (selected) {
                strncat(prefix, prefix[0] ? "," : "", sizeof prefix - strlen(prefix) - 1);
                strncat(prefix, list[i].name, sizeof prefix - strlen(prefix) - 1);
            }
            if (&list[i] == stop)
                break;
        }
        if (!prefix[0])
            return oqc_err(d, "--after %s: that pass is not selected by --passes %s", o->after,
                           o->passes);
        only = prefix;
    }
    return oqc_run_passes(g, only, o->disable, NULL, NULL, d);
}

int oqc_cli_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

int oqc_cli_images(const char *path, const Opts *o, OqcArena *a, const char ***files, int *n,
                   const char *labels, OqcValue *lab, OqcDiag *d) {
    struct stat st;
    *files = NULL;
    *n = 0;
    int dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if (!dir && !oqc_is_list_path(path) && !oqc_is_image_path(path))
        return 0; /* tensors */
    const char **v;
    int m;
    if (oqc_data_files(a, &path, 1, &v, &m, d) < 0)
        return -1;
    for (int i = 0; i < m; i++)
        if (!oqc_is_image_path(v[i]))
            return oqc_err(d, "%s: %s is not a .jpg, .jpeg or .png image (image data and "
                              "tensor files cannot be mixed here)", path, v[i]);
    if (!o->pre.given)
        return oqc_err(d, "%s: image data needs --preprocess (imagenet, cifar, raw or keys; "
                          "see docs/images.md)", path);
    size_t ll = labels ? strlen(labels) : 0;
    if (labels && ll > 4 && !strcmp(labels + ll - 4, ".npy")) {
        if (oqc_npy_read(labels, a, lab, d) < 0)
            return -1;
    } else if (labels && oqc_image_labels(a, path, v, m, labels, lab, d) < 0) {
        return -1;
    }
    *files = v;
    *n = m;
    return 0;
}
