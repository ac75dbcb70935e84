/* fuzz_model.c - libFuzzer target: any bytes as a file oqc reads.  The input's first
 * bytes pick the reader, as oqc's own readers go by content where a format has a
 * signature and by the harness's prefix where it has none:
 *   "\x93NUMPY"                    the .npy reader;
 *   "TRT-"                         the TensorRT calibration cache reader;
 *   "<oqc-calib" in the first 200 bytes   the XML calibration table reader;
 *   "OQCPB" + TensorProto          the .pb tensor reader (a .pb has no signature);
 *   FF D8 FF (JPEG), 89 "PNG" 0D 0A 1A 0A   the image loader, under one of the fixed
 *                                  --preprocess specs of image_specs (the last byte picks
 *                                  it and the model input's rank);
 *   "OQCPP" SPEC "\n" IMAGE        the --preprocess parser on SPEC, then, when it parses,
 *                                  the image loader under that spec;
 *   "OQCLIST" TEXT                 the list-file reader (--data LIST.txt) and the labels
 *                                  reader (--labels LIST.txt) on TEXT;
 *   anything else                  a model (ONNX protobuf, or oqc's XML IR by its
 *                                  "<?xml"/"<oqc-ir" start; for XML the bytes after the
 *                                  first NUL, if any, are its side data file "data.bin").
 * A model goes through everything oqc does with a model short of reading calibration
 * data, as far as each step succeeds:
 *   1. oqc_prepare: ONNX protobuf or XML dump -> IR, shape inference, strict op check;
 *   2. the text and XML dumps (to /dev/null; the XML one with its data file);
 *   3. every pass of the pipeline;
 *   4. the FP32 executor planned and run once on zeros, if the model is small
 *      (at most FUZZ_MAX_ELEMS elements per tensor and FUZZ_MAX_MACS multiply-adds,
 *      so a mutated 10^9-element shape is a refusal to run, not a timeout);
 *   5. the INT8 lowering with one threshold (1, 1e-3, 1e3 or 0) for every float activation
 *      and float or fixed-point requantization (the input's last byte picks), its
 *      executor run the same way, and the emitted C written to a scratch directory.
 * Errors are the expected outcome for most inputs; the target only looks for crashes,
 * sanitizer reports, leaks and hangs.  Each process works in its own scratch directory
 * ($OQC_FUZZ_TMP or /tmp, oqc_fuzz_PID/).  Built and run by `make fuzz`
 * (tests/fuzz/run.sh; docs/testing.md). */
#include "backend.h"
#include "passes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_MAX_ELEMS 100000
#define FUZZ_MAX_MACS 20000000
#define FUZZ_MAX_IMAGE_FLOATS (1 << 22) /* model input of an image spec from the input */

/* the scratch directory's files: the input, the XML IR's side data, a list file, and
 * the folder the emitter writes to */
static char model_path[160], side_path[160], list_path[160], out_dir[160];

/* Frees d, first printing its errors to stderr when $OQC_FUZZ_VERBOSE is set (to see
 * how far a seed or a finding gets: tests/tools/fuzz_replay FILE). */
static void diag_end(OqcDiag *d) {
    if (getenv("OQC_FUZZ_VERBOSE") && d->len)
        fprintf(stderr, "%.*s", (int)d->len, d->buf);
    oqc_diag_free(d);
}

/* Small enough to run: every tensor's shape known and bounded, few multiply-adds. */
static int small_graph(const OqcGraph *g) {
    int64_t macs = 0;
    for (int t = 0; t < g->ntensors; t++) {
        int64_t n = oqc_shape_numel(&g->tensors[t].shape);
        if (n < 0 || n > FUZZ_MAX_ELEMS)
            return 0;
    }
    for (int i = 0; i < g->nnodes; i++) {
        macs += oqc_node_macs(g, i);
        if (macs > FUZZ_MAX_MACS)
            return 0;
    }
    return 1;
}

/* A zeroed buffer of exactly t's bytes (one byte when empty), so that ASan sees any
 * read or write past it. */
static void *exact_buffer(const OqcTensor *t) {
    size_t bytes = (size_t)oqc_shape_numel(&t->shape) * oqcf_dtype_size(t->dtype);
    return calloc(bytes ? bytes : 1, 1);
}

/* Plans g's executor and runs it once with all-zero inputs. */
static void run_zeros(OqcGraph *g, OqcDiag *d) {
    void *in[64], *out[64];
    int ok = g->ninputs <= 64 && g->noutputs <= 64;
    OqcExec *e = ok ? oqc_exec_new(g, 1, d) : NULL;
    if (!e)
        return;
    for (int i = 0; i < g->ninputs; i++)
        in[i] = exact_buffer(&g->tensors[g->inputs[i]]);
    for (int i = 0; i < g->noutputs; i++)
        out[i] = exact_buffer(&g->tensors[g->outputs[i]]);
    oqc_exec_run(e, (const void *const *)in, out, d);
    for (int i = 0; i < g->ninputs; i++)
        free(in[i]);
    for (int i = 0; i < g->noutputs; i++)
        free(out[i]);
    oqc_exec_free(e);
}

/* INT8: one threshold for every float tensor that is not a constant, then the quantize
 * pass, the INT8 executor and the emitter.  The input's last byte picks the threshold
 * (1, 1e-3 or 1e3: multipliers far from 1 both ways; 0: a tensor that was zero during
 * calibration, which gets the documented scale 1), the requantization mode and the
 * weight bits (8, or 7: the AVX2 vpmaddubsw family). */
static void int8_path(OqcGraph *g, uint8_t knob, OqcDiag *d) {
    static const float thresholds[4] = {1.0f, 1e-3f, 1e3f, 0.0f};
    float th = thresholds[(knob >> 1) % 4];
    OqcCalibEntry *tab = calloc((size_t)g->ntensors + 1, sizeof *tab);
    int n = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *x = &g->tensors[t];
        if (x->is_const || x->dtype != OQCF_FLOAT)
            continue;
        tab[n].name = x->name;
        tab[n].amax = tab[n].threshold = th;
        tab[n].scale = th / 127.0f;
        tab[n].method = "table";
        tab[n].op = "table";
        n++;
    }
    OqcCalibOptions co = {.method = OQC_CALIB_ENTROPY, .method_name = "entropy", .bins = 2048,
                          .threads = 1, .table = tab, .ntable = n};
    OqcQuantConfig cfg = {.requant = knob & 1 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT,
                          .fp32_nodes = NULL, .weight_bits = knob & 8 ? 7 : 8};
    if (oqc_lower_int8(g, NULL, 1, &co, &cfg, NULL, NULL, d) == 0) {
        run_zeros(g, d);
        OqcExec *e = oqc_exec_new(g, 1, d);
        if (e) {
            OqcEmitOptions eo = {.outdir = out_dir, .name = "fuzz"};
            oqc_emit_c(e, &eo, d);
            oqc_exec_free(e);
        }
    }
    free(tab);
}

/* Writes n bytes to path; 0 on success. */
static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(data, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

/* The data readers: .npy, TensorRT cache, XML table, and ONNX TensorProto (.pb, the
 * calibration directories' other format), which has no magic of its own: the harness
 * takes inputs starting with "OQCPB" as one (the bytes after the prefix). */
static int data_file(const uint8_t *data, size_t size) {
    static const char npy[] = "\x93NUMPY", trt[] = "TRT-", pb[] = "OQCPB";
    const char *tag = "<oqc-calib";
    size_t head = size < 200 ? size : 200, tl = strlen(tag);
    int xml = 0;
    for (size_t i = 0; i + tl <= head && !xml; i++)
        xml = memcmp(data + i, tag, tl) == 0;
    int kind = size >= 6 && !memcmp(data, npy, 6) ? 1 : size >= 4 && !memcmp(data, trt, 4) ? 2
             : size >= 5 && !memcmp(data, pb, 5) ? 4 : xml ? 3 : 0;
    if (!kind)
        return 0;
    if (kind == 4 && write_file(model_path, data + 5, size - 5) < 0)
        return 1;
    OqcDiag d;
    OqcArena *a = oqc_arena_new();
    OqcValue v;
    OqcCalibEntry *e = NULL;
    int n = 0;
    int64_t samples = 0;
    const char *name = NULL;
    oqc_diag_init(&d);
    if (kind == 1)
        oqc_npy_read(model_path, a, &v, &d);
    else if (kind == 2)
        oqc_table_read_trt(model_path, a, &e, &n, &d);
    else if (kind == 3)
        oqc_table_read_xml(model_path, a, &e, &n, &samples, &d);
    else
        oqc_load_tensor_pb(model_path, a, &v, &name, &d);
    diag_end(&d);
    oqc_arena_free(a);
    return 1;
}

/* The fixed --preprocess specs bare JPEG and PNG inputs are loaded under: no resizing
 * (the image must be 16x16, or at least the crop), exact and shorter-side resizing both
 * ways, gray and BGR conversion, both layouts; each with its model input's H x W. */
static const struct {
    const char *spec;
    int h, w;
} image_specs[] = {
    {"raw", 16, 16},
    {"raw,color=gray", 16, 16},
    {"cifar,crop=8", 8, 8},
    {"raw,resize=12x20,color=bgr,layout=nhwc", 12, 20},
    {"raw,resize=3x2,color=gray", 3, 2},
    {"scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,resize=20,crop=16", 16, 16},
    {"raw,resize=40,crop=24x32", 24, 32},
    {"raw,resize=5,color=gray,layout=nhwc", 5, 5},
};

/* Loads the image at path under p into a model input of rank 4 ([1,C,H,W]) or 3
 * ([C,H,W]), NHWC when p says so: H x W is h x w, C what p's color gives. */
static void load_image(const char *path, const OqcPreprocess *p, int h, int w, int rank4) {
    int c = p->color == OQC_COLOR_GRAY ? 1 : 3, b = rank4 ? 1 : 0;
    if ((int64_t)c * h * w > FUZZ_MAX_IMAGE_FLOATS)
        return;
    OqcShape in = {.rank = 3 + b};
    in.d[0] = 1;
    in.d[b] = p->nhwc ? h : c;
    in.d[b + 1] = p->nhwc ? w : h;
    in.d[b + 2] = p->nhwc ? c : w;
    float *out = malloc((size_t)c * (size_t)h * (size_t)w * sizeof *out);
    OqcDiag d;
    oqc_diag_init(&d);
    if (out)
        oqc_image_load(path, p, &in, out, &d);
    diag_end(&d);
    free(out);
}

/* Images: a bare JPEG or PNG under the fixed spec the last byte picks, or "OQCPP" SPEC
 * "\n" IMAGE under SPEC (the crop, else the exact resize, else 16 x 16 as the input's
 * H x W). */
static int image_file(const uint8_t *data, size_t size) {
    int jpeg = size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff;
    int png = size >= 8 && !memcmp(data, "\x89PNG\r\n\x1a\n", 8);
    int spec = size >= 5 && !memcmp(data, "OQCPP", 5);
    if (!jpeg && !png && !spec)
        return 0;
    uint8_t knob = data[size - 1];
    OqcPreprocess p;
    OqcDiag d;
    oqc_diag_init(&d);
    if (spec) {
        const uint8_t *nl = memchr(data + 5, '\n', size - 5);
        size_t len = nl ? (size_t)(nl - data) - 5 : size - 5;
        char *text = malloc(len + 1);
        if (text) {
            memcpy(text, data + 5, len);
            text[len] = 0;
            const uint8_t *img = nl ? nl + 1 : data + size; /* no newline: no image */
            if (oqc_preprocess_parse(text, &p, &d) == 0 &&
                write_file(model_path, img, size - (size_t)(img - data)) == 0) {
                int h = p.crop_h ? p.crop_h : p.resize_h ? p.resize_h : 16;
                int w = p.crop_h ? p.crop_w : p.resize_h ? p.resize_w : 16;
                load_image(model_path, &p, h, w, knob & 1);
            }
            free(text);
        }
    } else {
        int k = knob % (int)(sizeof image_specs / sizeof image_specs[0]);
        if (oqc_preprocess_parse(image_specs[k].spec, &p, &d) == 0)
            load_image(model_path, &p, image_specs[k].h, image_specs[k].w, knob & 0x80);
    }
    diag_end(&d);
    return 1;
}

/* "OQCLIST" TEXT: TEXT as a list file of data paths and as a labels file (PATH CLASS
 * lines; relative paths name files of the scratch directory).  Only read: no file it
 * names is opened. */
static int list_file(const uint8_t *data, size_t size) {
    if (size < 7 || memcmp(data, "OQCLIST", 7) != 0)
        return 0;
    if (write_file(list_path, data + 7, size - 7) < 0)
        return 1;
    OqcDiag d;
    OqcArena *a = oqc_arena_new();
    const char *const paths[1] = {list_path};
    const char **files;
    int n;
    oqc_diag_init(&d);
    if (oqc_data_files(a, paths, 1, &files, &n, &d) == 0) {
        OqcValue v;
        oqc_data_has_images(files, n);
        oqc_image_labels(a, list_path, files, n, list_path, &v, &d);
    }
    diag_end(&d);
    oqc_arena_free(a);
    return 1;
}

/* The model file: the input itself, except for an XML IR that holds a NUL, whose bytes
 * up to it are the XML and after it the side data file data.bin (seeds are dumps that
 * name it).  data.bin is always rewritten, so no run sees another's. */
static int model_file(const uint8_t *data, size_t size) {
    size_t skip = 0;
    while (skip < size && skip < 64 && memchr(" \t\r\n", data[skip], 4))
        skip++;
    int xml = size - skip >= 5 && (!memcmp(data + skip, "<?xml", 5) ||
                                   (size - skip >= 7 && !memcmp(data + skip, "<oqc-ir", 7)));
    const uint8_t *nul = xml ? memchr(data, 0, size) : NULL;
    size_t cut = nul ? (size_t)(nul - data) : size;
    if (write_file(model_path, data, cut) < 0)
        return -1;
    return write_file(side_path, nul ? nul + 1 : data, nul ? size - cut - 1 : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!model_path[0]) {
        const char *tmp = getenv("OQC_FUZZ_TMP") ? getenv("OQC_FUZZ_TMP") : "/tmp";
        char dir[96];
        snprintf(dir, sizeof dir, "%s/oqc_fuzz_%d", tmp, (int)getpid());
        mkdir(dir, 0777);
        snprintf(model_path, sizeof model_path, "%s/input", dir);
        snprintf(side_path, sizeof side_path, "%s/data.bin", dir);
        snprintf(list_path, sizeof list_path, "%s/list.txt", dir);
        snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    }
    if (write_file(model_path, data, size) < 0)
        return 0;
    if (data_file(data, size) || image_file(data, size) || list_file(data, size) ||
        model_file(data, size) < 0)
        return 0;
    OqcDiag d;
    oqc_diag_init(&d);
    OqcGraph *g = oqc_prepare(model_path, NULL, 0, 1, &d);
    if (g) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            oqc_dump_text(g, null);
            oqc_dump_xml(g, null, "/dev/null", "data.bin", &d);
            fclose(null);
        }
        if (oqc_run_passes(g, NULL, NULL, NULL, NULL, &d) == 0 && small_graph(g)) {
            run_zeros(g, &d);
            int8_path(g, size ? data[size - 1] : 0, &d);
        }
        oqc_graph_free(g);
    }
    diag_end(&d);
    return 0;
}
