/* cli_opts.c - the oqc driver's command-line options: parsing a command's arguments
 * into an Opts (cli_int.h) and the settings the options select for every command: the
 * passes that run (--passes, --disable-pass, --after, --no-opt) and the default thread
 * count.  Separate from main.c so that main.c shows what the commands do, not how
 * their arguments are read.  Part of build/oqc only (it prints oqc_usage, usage.c). */
#include "cli_int.h"
#include "passes.h"
#include "usage.h"

#include <math.h>
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

/* Appends val to list (*n of cap) of a repeatable option; -1 when it is full. */
static int push(const char **list, int *n, int cap, const char *val, const char *cmd,
                const char *name, OqcDiag *d) {
    if (*n == cap)
        return oqc_err(d, "oqc %s: too many %s options", cmd, name);
    list[(*n)++] = val;
    return 0;
}
#define PUSH(arr, n, val) push(arr, &(n), (int)(sizeof arr / sizeof arr[0]), val, cmd, name, d)

/* Parses the options a command accepts (allowed: string of option letters/names). */
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
        int ok = 0;
        for (const char *const *p = allowed; *p; p++)
            ok |= !strcmp(*p, name);
        if (!ok)
            return oqc_err(d, "oqc %s: unknown option '%s' (see `oqc help %s`)", cmd, name,
                           cmd);
        if (!strcmp(name, "-v")) {
            o->verbose++;
            continue;
        }
        if (!strcmp(name, "-q")) {
            o->quiet = 1;
            continue;
        }
        if (!strcmp(name, "--sensitivity")) {
            o->sensitivity = 1;
            continue;
        }
        if (!strcmp(name, "--no-opt")) {
            o->no_opt = 1;
            continue;
        }
        if (!strcmp(name, "--main")) {
            o->main_driver = 1;
            continue;
        }
        if (!strcmp(name, "-MD")) {
            o->md = 1;
            continue;
        }
        if (!strcmp(name, "--portable-fp32")) {
            /* every FP32 kernel oqc itself runs (calibration, mixed-precision
             * measurements, constant folding) sums as the portable C family does, so the
             * outputs are the same bits on every host (docs/testing.md) */
            if (oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE) != 0)
                return oqc_err(d, "oqc %s: --portable-fp32: cannot select the portable "
                                  "kernels", cmd);
            continue;
        }
        if (!strcmp(name, "--json")) {
            o->json_fd = 1; /* started below, once the options are known to be good */
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return oqc_err(d, "oqc %s: option '%s' needs a value", cmd, name);
            val = argv[++i];
        }
        if (!strcmp(name, "-o")) {
            o->out = val;
        } else if (!strcmp(name, "--save-stats")) {
            o->save_stats = val;
        } else if (!strcmp(name, "--range")) {
            o->range = val;
        } else if (!strcmp(name, "--merge-stats")) {
            /* FILE... : this value and every following word up to the next option */
            int n = 1;
            while (i + n < argc && (argv[i + n][0] != '-' || !argv[i + n][1]))
                n++;
            const char **m = realloc(o->merge, (size_t)(o->nmerge + n) * sizeof *m);
            if (!m)
                oqc_panic(__FILE__, __LINE__, "out of memory");
            o->merge = m;
            o->merge[o->nmerge++] = val;
            for (int k = 1; k < n; k++)
                o->merge[o->nmerge++] = argv[++i];
        } else if (!strcmp(name, "-MF")) {
            o->mf = val;
        } else if (!strcmp(name, "-MT")) {
            if (PUSH(o->mt, o->nmt, val) < 0)
                return -1;
        } else if (!strcmp(name, "--format")) {
            o->format = val;
        } else if (!strcmp(name, "--data")) {
            if (PUSH(o->data, o->ndata, val) < 0)
                return -1;
        } else if (!strcmp(name, "--method")) {
            o->method = val;
        } else if (!strcmp(name, "--bins")) {
            char *end;
            long b = strtol(val, &end, 10);
            /* at most 65536: the entropy search grows with the square of the bins */
            if (*end || end == val || b < 128 || b > 65536)
                return oqc_err(d, "oqc %s: --bins '%s' must be a number from 128 to 65536",
                               cmd, val);
            o->bins = (int)b;
        } else if (!strcmp(name, "--batch")) {
            char *end;
            long b = strtol(val, &end, 10);
            if (*end || b < 1 || b > 4096)
                return oqc_err(d, "oqc %s: --batch '%s' must be a number from 1 to 4096", cmd,
                               val);
            o->batch = (int)b;
        } else if (!strcmp(name, "--report")) {
            o->report = val;
        } else if (!strcmp(name, "--calib")) {
            if (PUSH(o->calib, o->ncalib, val) < 0)
                return -1;
        } else if (!strcmp(name, "--requant")) {
            if (strcmp(val, "float") && strcmp(val, "fixed"))
                return oqc_err(d, "oqc %s: --requant '%s': expected float or fixed", cmd, val);
            o->requant = val;
        } else if (!strcmp(name, "--weight-bits")) {
            char *end;
            long b = strtol(val, &end, 10);
            if (*end || end == val || b < 2 || b > 8)
                return oqc_err(d, "oqc %s: --weight-bits '%s' must be a number from 2 to 8",
                               cmd, val);
            o->weight_bits = (int)b;
        } else if (!strcmp(name, "--precision")) {
            o->precision = val;
        } else if (!strcmp(name, "--name")) {
            o->name = val;
        } else if (!strcmp(name, "--target")) {
            if (!oqc_target_flags(val)) {
                char names[256];
                oqc_target_names(names, sizeof names);
                return oqc_err(d, "oqc %s: unknown --target '%s' (%s)", cmd, val, names);
            }
            o->target = val;
        } else if (!strcmp(name, "--fp32-nodes")) {
            o->fp32_nodes = val;
        } else if (!strcmp(name, "--min-sqnr") || !strcmp(name, "--max-drop")) {
            char *end;
            double v = strtod(val, &end);
            if (*end || end == val || !(v >= 0) || v > 1000)
                return oqc_err(d, "oqc %s: %s '%s' must be a number from 0 to 1000", cmd, name,
                               val);
            *(!strcmp(name, "--min-sqnr") ? &o->min_sqnr : &o->max_drop) = v;
        } else if (!strcmp(name, "--val")) {
            o->val = val;
        } else if (!strcmp(name, "--val-labels")) {
            o->val_labels = val;
        } else if (!strcmp(name, "--save-table")) {
            o->save_table = val;
        } else if (!strcmp(name, "--save-int8")) {
            o->save_int8 = val;
        } else if (!strcmp(name, "--save-fp32")) {
            o->save_fp32 = val;
        } else if (!strcmp(name, "--limit")) {
            char *end;
            long long v = strtoll(val, &end, 10);
            if (*end || v < 1)
                return oqc_err(d, "oqc %s: --limit '%s' must be a positive number", cmd, val);
            o->limit = v;
        } else if (!strcmp(name, "--table")) {
            o->table = val;
        } else if (!strcmp(name, "--after")) {
            o->after = val;
        } else if (!strcmp(name, "--passes")) {
            o->passes = val;
        } else if (!strcmp(name, "--disable-pass")) {
            size_t used = strlen(o->disable_buf);
            if (used + strlen(val) + 2 > sizeof o->disable_buf)
                return oqc_err(d, "oqc %s: --disable-pass lists are too long", cmd);
            snprintf(o->disable_buf + used, sizeof o->disable_buf - used, "%s%s",
                     used ? "," : "", val);
            o->disable = o->disable_buf;
        } else if (!strcmp(name, "--labels")) {
            o->labels = val;
        } else if (!strcmp(name, "--input")) {
            if (PUSH(o->inputs, o->ninputs, val) < 0)
                return -1;
        } else if (!strcmp(name, "--threads")) {
            char *end;
            long t = strtol(val, &end, 10);
            if (*end || t < 1 || t > 64)
                return oqc_err(d, "oqc %s: --threads '%s' must be a number from 1 to 64", cmd,
                               val);
            o->threads = (int)t;
        } else if (!strcmp(name, "--runs") || !strcmp(name, "--warmup")) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || end == val || v < (name[2] == 'r') || v > 1000000)
                return oqc_err(d, "oqc %s: %s '%s' must be a number from %d to 1000000", cmd,
                               name, val, name[2] == 'r');
            *(name[2] == 'r' ? &o->runs : &o->warmup) = v;
        } else if (!strcmp(name, "--preprocess")) {
            if (oqc_preprocess_parse(val, &o->pre, d) < 0)
                return -1;
        } else if (!strcmp(name, "--input-shape")) {
            if (o->nshapes == (int)(sizeof o->shapes / sizeof o->shapes[0]))
                return oqc_err(d, "oqc %s: too many --input-shape options", cmd);
            if (oqc_parse_input_shape(val, &o->shapes[o->nshapes], d) < 0)
                return -1;
            o->nshapes++;
        }
    }
    if (!o->model)
        return oqc_err(d, "oqc %s: missing MODEL argument\n%s", cmd, oqc_usage(cmd));
    if ((o->mf || o->nmt) && !o->md)
        return oqc_err(d, "oqc %s: -MF FILE and -MT TARGET shape the dependency file of "
                          "-MD: add -MD", cmd);
    /* pass names are checked whether or not the passes run (dump without --after,
     * --no-opt): a misspelt name is an error, never silently ignored */
    const char *lists[2][2] = {{o->passes, "--passes"}, {o->disable, "--disable-pass"}};
    for (int k = 0; k < 2; k++)
        for (const char *p = lists[k][0]; p && *p;) {
            const char *comma = strchr(p, ',');
            char one[64];
            snprintf(one, sizeof one, "%.*s", comma ? (int)(comma - p) : (int)strlen(p), p);
            char names[256];
            if (!oqc_pass_find(one))
                return oqc_err(d, "oqc %s: %s: unknown pass '%s' (passes: %s)", cmd,
                               lists[k][1], one, pass_names(names, sizeof names));
            p = comma ? comma + 1 : NULL;
        }
    return o->json_fd ? oqc_cli_json_start(o, cmd, d) : 0;
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
            const char *comma = strchr(p, ',');
            char one[64];
            snprintf(one, sizeof one, "%.*s", comma ? (int)(comma - p) : (int)strlen(p), p);
            if (!oqc_pass_find(one))
                return oqc_err(d, "--passes: unknown pass '%s'", one);
            p = comma ? comma + 1 : NULL;
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
