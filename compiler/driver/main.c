/* main.c - the oqc command-line driver.
 *
 *   oqc dump MODEL [--format text|xml|dot] [-o FILE] [--input-shape NAME=DIMS]...
 *   oqc check MODEL [--input-shape NAME=DIMS]...
 *   oqc run MODEL --input [NAME=]FILE... [-o OUT] [--input-shape NAME=DIMS]... [--threads N]
 *   oqc compile MODEL -o OUTDIR [--name NAME] [--precision int8|fp32] ...
 *   oqc help [COMMAND] | oqc --version
 *
 * Each command is a function taking its arguments and an OqcDiag; user errors come
 * back as -1 with messages in the diag, which main prints before exiting 1. Output
 * files are written to a temporary name beside the target and renamed only when
 * complete, so a failed command never leaves a partial file that looks finished.
 *
 * This file holds the command table, main() and the commands eval, compile, bench and
 * export-qdq, so the pipeline reads as the calls they make: load, optimise, calibrate,
 * quantize, emit.  What they share with calibrate (cli_calib.c) is cli_lower.c; parsing
 * the options is cli_opts.c; the commands on the float graph (dump, check, run) are
 * cli_fp32.c (see cli_int.h). */
#include "cli_int.h"
#include "passes.h"
#include "usage.h"

#include <stdlib.h>
#include <string.h>

static int cmd_eval(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--data", "--labels", "--calib", "--table",
                                          "--preprocess",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--sensitivity", "--min-sqnr", "--max-drop", "--val",
                                          "--val-labels", "--save-table",
                                          "--weight-bits", "--act-scales", "--fp32-nodes",
                                          "--save-int8", "--save-fp32",
                                          "--limit", "--input-shape", "--threads",
                                          "--portable-fp32", "--passes", "--disable-pass",
                                          "--no-opt", "--json", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "eval", allowed, &o, d);
    if (rc == 0 && !o.model)
        rc = oqc_err(d, "oqc eval: give the model: oqc eval MODEL.onnx --data X.npy ...");
    if (rc == 0 && o.ndata != 1)
        rc = oqc_err(d, "oqc eval: give the evaluation inputs with one --data X.npy (or a "
                        "folder, list or file of images)");
    OqcQuantConfig cfg;
    Builder keep;
    OqcGraph *gq = rc == 0 ? oqc_cli_build_int8("eval", &o, &cfg, o.sensitivity ? &keep : NULL, d) : NULL;
    OqcGraph *gf = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    if (gf && oqc_cli_reoptimize(gf, &o, 1, 0, d) < 0) {
        oqc_graph_free(gf);
        gf = NULL;
    }
    OqcValue data, labels;
    const char **images = NULL;
    int nimages = 0;
    if (gf && oqc_cli_images(o.data[0], &o, gf->arena, &images, &nimages, o.labels, &labels, d) < 0)
        rc = -1;
    if (gf && rc == 0 && !images && oqc_npy_read(o.data[0], gf->arena, &data, d) < 0)
        rc = -1;
    /* the bytes are read as the input's element type: they must be that type */
    if (gf && rc == 0 && !images && gf->ninputs > 0 &&
        data.dtype != gf->tensors[gf->inputs[0]].dtype)
        rc = oqc_err(d, "%s: holds %s data but input '%s' is %s", o.data[0],
                     oqc_dtype_name(data.dtype), gf->tensors[gf->inputs[0]].name,
                     oqc_dtype_name(gf->tensors[gf->inputs[0]].dtype));
    if (gf && rc == 0 && !images && o.labels &&
        oqc_npy_read(o.labels, gf->arena, &labels, d) < 0)
        rc = -1;
    if (!gf)
        rc = -1;
    if (rc == 0) {
        OqcEvalOptions eo = {.data = images ? NULL : &data,
                             .data_path = o.data[0],
                             .labels = o.labels ? &labels : NULL,
                             .labels_path = o.labels,
                             .threads = o.threads ? o.threads : oqc_cli_default_threads(),
                             .per_layer = 1,
                             .requant_name = o.requant ? o.requant : "float",
                             .save_int8 = o.save_int8,
                             .save_fp32 = o.save_fp32,
                             .sqnr = NULL,
                             .out = stdout,
                             .limit = o.limit,
                             .images = images,
                             .nimages = nimages,
                             .pre = &o.pre,
                             .json = o.json};
        rc = oqc_eval(gf, gq, &eo, d);
    }
    if (rc == 0 && o.sensitivity) {
        OqcSensitivity sens;
        rc = oqc_cli_on_validation(&o, &keep, o.data[0], o.labels, gf->arena, NULL, &sens, d);
        if (rc == 0) {
            oqc_sensitivity_print(stdout, &sens);
            if (o.json)
                oqc_cli_json_sensitivity(o.json, &sens);
            oqc_sensitivity_free(&sens);
        }
    }
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_graph_free(gf);
    oqc_graph_free(gq);
    oqc_cli_free_opts(&o);
    return rc;
}

/* Lowers o->model as compile's options say (INT8 or --precision fp32) and emits it as C
 * into outdir under the name *name (o->name or the model's); the summary line unless -q. */
static int compile_model(const char *cmd, Opts *o, const char *outdir, OqcEmitStats *st,
                         char *name, size_t name_cap, OqcDiag *d) {
    const char *prec = o->precision ? o->precision : "int8";
    int rc = 0;
    if (strcmp(prec, "int8") && strcmp(prec, "fp32"))
        rc = oqc_err(d, "oqc %s: unknown --precision '%s' (int8 or fp32)", cmd, prec);
    int int8 = !strcmp(prec, "int8");
    if (rc == 0 && !int8 &&
        (o->ncalib || o->table || o->method || o->requant || o->fp32_nodes || o->weight_bits ||
         o->act_scales ||
         oqc_cli_wants_mixprec(o) || o->save_table))
        rc = oqc_err(d, "oqc %s: --calib, --table, --method, --requant, --weight-bits, "
                        "--act-scales, "
                        "--fp32-nodes, --min-sqnr, --max-drop and --save-table apply to "
                        "--precision int8 only", cmd);
    if (rc == 0 && o->name)
        rc = oqc_c_name_check(o->name, d);
    OqcQuantConfig cfg;
    OqcGraph *g = NULL;
    if (rc == 0 && int8) {
        g = oqc_cli_build_int8(cmd, o, &cfg, NULL, d);
    } else if (rc == 0) {
        g = oqc_prepare(o->model, o->shapes, o->nshapes, 1, d);
        if (g && oqc_cli_optimize(g, o, d) < 0) {
            oqc_graph_free(g);
            g = NULL;
        }
    }
    /* The emitted code's plan: its scratch is sized for --threads (1 unless given) */
    OqcExec *e = g ? oqc_exec_new(g, o->threads ? o->threads : 1, d) : NULL;
    if (!e) {
        oqc_graph_free(g);
        return -1;
    }
    const char *precision =
        !int8 ? prec
              : oqc_arena_printf(g->arena, "int8, %s requantization%s",
                                 o->requant && !strcmp(o->requant, "fixed") ? "fixed-point" : "float",
                                 oqc_weight_bits(&cfg) != 8
                                     ? oqc_arena_printf(g->arena, ", %d-bit weights",
                                                        oqc_weight_bits(&cfg))
                                     : "");
    OqcEmitOptions eo = {.outdir = outdir, .precision = precision, .stats = st,
                         .target = o->target, .preprocess = o->pre.given ? o->pre.spec : NULL,
                         .name = o->name ? o->name : oqc_c_name_from_path(g->arena, o->model)};
    rc = oqc_emit_c(e, &eo, d);
    snprintf(name, name_cap, "%s", eo.name);
    if (rc == 0 && !o->quiet) {
        char other[64] = "";
        if (st->arena_bytes_noamx != st->arena_bytes)
            snprintf(other, sizeof other, "; %zu off x86-64 Linux", st->arena_bytes_noamx);
        printf("%s: compiled to %s/%s.c (%s): %d nodes, arena %zu bytes%s (activations %zu "
               "planned, %zu if none shared, largest live set %zu), %d constants (%zu bytes), "
               "%d files (%d runtime)\n", o->model, outdir, eo.name, precision, g->nnodes,
               st->arena_bytes, other, oqc_exec_arena_bytes(e), oqc_exec_total_bytes(e),
               oqc_exec_peak_live(e), st->nconst, st->weight_bytes, st->nfiles, st->nruntime);
    }
    if (rc == 0 && o->json) /* bench's files are its scratch: not listed */
        oqc_cli_json_compiled(o->json, strcmp(cmd, "bench") ? outdir : NULL, eo.name, precision,
                              o->target ? o->target : oqc_default_target(), g, e, st);
    oqc_exec_free(e);
    oqc_graph_free(g);
    return rc;
}

/* oqc compile: the optimised model as C (emit_c.c), with --main a driver to run it. */
static int cmd_compile(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--name", "--precision", "--calib", "--table",
                                          "--target", "--preprocess", "--main",
                                          "--method", "--bins", "--batch", "--requant",
                                          "--weight-bits", "--act-scales", "--fp32-nodes",
                                          "--input-shape",
                                          "--min-sqnr", "--max-drop", "--val", "--val-labels",
                                          "--save-table", "--threads", "--portable-fp32",
                                          "--passes", "--disable-pass", "--no-opt", "--json",
                                          "-v", "-q", "-MD", "-MF", "-MT", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "compile", allowed, &o, d);
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc compile: give the output directory with -o OUTDIR");
    OqcEmitStats st;
    char name[256];
    if (rc == 0)
        rc = compile_model("compile", &o, o.out, &st, name, sizeof name, d);
    if (rc == 0 && o.main_driver)
        rc = oqc_cli_write_driver(o.out, name, o.pre.given, o.json, d);
    char main_c[4096], dflt[4096];
    snprintf(main_c, sizeof main_c, "%s/%s.c", o.out ? o.out : ".", name);
    snprintf(dflt, sizeof dflt, "%s/%s.d", o.out ? o.out : ".", name);
    if (rc == 0)
        rc = oqc_cli_write_depfile(&o, main_c, dflt, d);
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_cli_free_opts(&o);
    return rc;
}

/* oqc bench: compile into a temporary directory, build with the system compiler and
 * time the emitted code (cli_bench.c), like TensorRT's trtexec. */
static int cmd_bench(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"--precision", "--calib", "--table", "--target",
                                          "--preprocess", "--method", "--bins", "--batch",
                                          "--requant", "--weight-bits", "--act-scales",
                                          "--fp32-nodes",
                                          "--input-shape", "--threads", "--portable-fp32",
                                          "--runs", "--warmup",
                                          "--input", "--passes", "--disable-pass", "--no-opt",
                                          "--json", "-v", "-q", NULL};
    Opts o;
    int rc = oqc_cli_parse_opts(argc, argv, "bench", allowed, &o, d);
    if (rc == 0 && o.ninputs > 1)
        rc = oqc_err(d, "oqc bench: give at most one --input FILE (the sample to time)");
    const char *tmp = getenv("TMPDIR");
    char outdir[4096];
    snprintf(outdir, sizeof outdir, "%s/oqc-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (rc == 0 && !mkdtemp(outdir))
        rc = oqc_err(d, "%s: cannot create a temporary directory", outdir);
    int made = rc == 0;
    OqcEmitStats st;
    char name[256];
    int quiet = o.quiet;
    o.quiet = 1;
    if (rc == 0)
        rc = compile_model("bench", &o, outdir, &st, name, sizeof name, d);
    if (rc == 0 && !quiet)
        printf("%s: %s, arena %zu bytes, weights %zu bytes (%d constants); target %s\n",
               o.model, o.precision ? o.precision : "int8", st.arena_bytes, st.weight_bytes,
               st.nconst, o.target ? o.target : oqc_default_target());
    fflush(stdout);
    if (rc == 0)
        rc = oqc_cli_write_driver(outdir, name, o.pre.given, NULL, d);
    if (rc == 0)
        rc = oqc_cli_bench_run(outdir, name, oqc_target_flags(o.target), o.threads,
                               o.pre.given, o.runs < 0 ? 100 : o.runs,
                               o.warmup < 0 ? 10 : o.warmup, o.ninputs ? o.inputs[0] : NULL,
                               o.json, d);
    if (made)
        oqc_cli_remove_dir(outdir);
    rc = oqc_cli_json_finish(&o, rc, d);
    oqc_cli_free_opts(&o);
    return rc;
}

/* oqc export-qdq: the model as ONNX with QuantizeLinear/DequantizeLinear carrying oqc's
 * INT8 quantization (export_qdq.c).  Two graphs: the INT8 lowering (the whole pipeline,
 * thresholds, pass quantize) decides; the graph after cleanup and fold-bn is written. */
static int cmd_export_qdq(int argc, char **argv, OqcDiag *d) {
    static const char *const allowed[] = {"-o", "--calib", "--table", "--method", "--bins",
                                          "--batch", "--weight-bits", "--act-scales",
                                          "--fp32-nodes",
                                          "--min-sqnr", "--max-drop", "--val", "--val-labels",
                                          "--save-table", "--preprocess", "--input-shape",
                                          "--threads", "--portable-fp32", "-v", "-q", "-MD",
                                          "-MF", "-MT", NULL};
    /* --weight-type is this command's own option: taken out before parse_opts */
    OqcQdqOptions xo = {.path = NULL, .weight_uint8 = 0};
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, rc = 0;
    if (!args)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--weight-type")) {
            if (i + 1 >= argc) {
                rc = oqc_err(d, "oqc export-qdq: option '--weight-type' needs a value");
                break;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--weight-type=", 14)) {
            v = argv[i] + 14;
        } else {
            args[nargs++] = argv[i];
            continue;
        }
        if (strcmp(v, "int8") && strcmp(v, "uint8")) {
            rc = oqc_err(d, "oqc export-qdq: --weight-type '%s': expected int8 or uint8", v);
            break;
        }
        xo.weight_uint8 = !strcmp(v, "uint8");
    }
    Opts o;
    if (rc == 0)
        rc = oqc_cli_parse_opts(nargs, args, "export-qdq", allowed, &o, d);
    else
        memset(&o, 0, sizeof o);
    free(args);
    if (rc == 0 && !o.out)
        rc = oqc_err(d, "oqc export-qdq: give the output model with -o OUT.onnx");
    xo.path = o.out;
    OqcQuantConfig cfg;
    OqcGraph *gq = rc == 0 ? oqc_cli_build_int8("export-qdq", &o, &cfg, NULL, d) : NULL;
    OqcGraph *g = gq ? oqc_prepare(o.model, o.shapes, o.nshapes, 1, d) : NULL;
    int verbose = d->verbose;
    d->verbose = 0; /* the pipeline's statistics were shown for gq already */
    if (g && oqc_run_passes(g, "cleanup,fold-bn", NULL, NULL, NULL, d) < 0) {
        oqc_graph_free(g);
        g = NULL;
    }
    d->verbose = verbose;
    OqcQdqStats st;
    rc = g ? oqc_export_qdq(g, gq, &xo, &st, d) : -1;
    char dflt[4096];
    snprintf(dflt, sizeof dflt, "%s.d", o.out ? o.out : "");
    if (rc == 0)
        rc = oqc_cli_write_depfile(&o, o.out, dflt, d);
    if (rc == 0 && !o.quiet)
        printf("%s: wrote %s (%lld bytes): %d activation tensors with QuantizeLinear/"
               "DequantizeLinear (%d uint8 zero point 0, %d uint8 zero point 128), %d %s "
               "weights, %d int32 biases\n", o.model, o.out, (long long)st.bytes, st.nact,
               st.nact_zp0, st.nact - st.nact_zp0, st.nweights,
               xo.weight_uint8 ? "uint8 (zero point 128)" : "int8", st.nbias);
    oqc_graph_free(g);
    oqc_graph_free(gq);
    oqc_cli_free_opts(&o);
    return rc;
}

typedef struct Command {
    const char *name;                                 /* command word */
    int (*fn)(int argc, char **argv, OqcDiag *d);     /* its implementation */
} Command;

static const Command commands[] = {
    {.name = "dump", .fn = oqc_cli_dump},
    {.name = "check", .fn = oqc_cli_check},
    {.name = "run", .fn = oqc_cli_run},
    {.name = "calibrate", .fn = oqc_cli_calibrate},
    {.name = "compile", .fn = cmd_compile},
    {.name = "export-qdq", .fn = cmd_export_qdq},
    {.name = "eval", .fn = cmd_eval},
    {.name = "bench", .fn = cmd_bench},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(oqc_usage_text, stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("oqc %s\n", OQC_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        const char *u = argc > 2 ? oqc_usage(argv[2]) : NULL;
        if (argc > 2 && !u) {
            fprintf(stderr, "oqc help: unknown command '%s'\n\n%s", argv[2], oqc_usage_text);
            return 1;
        }
        fputs(u ? u : oqc_usage_text, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, cmd))
            continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                const char *u = oqc_usage(cmd);
                fputs(u ? u : oqc_usage_text, stdout);
                return 0;
            }
        OqcDiag d;
        oqc_diag_init(&d);
        oqc_tmp_remove_on_signals(); /* an interrupted command leaves no temporaries */
        oqc_in_remember(1);          /* and never writes over one of its inputs */
        int rc = commands[i].fn(argc - 2, argv + 2, &d);
        if (rc < 0 || d.nerrors) {
            fflush(stdout);
            fputs(d.buf ? d.buf : "oqc: failed\n", stderr);
        }
        oqc_diag_free(&d);
        return rc < 0 ? 1 : 0;
    }
    fprintf(stderr, "oqc: unknown command '%s'\n\n%s", cmd, oqc_usage_text);
    return 1;
}
