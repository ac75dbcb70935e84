/* fuzz_model.c - libFuzzer target: any bytes as a file oqc reads.  Inputs that start
 * like a .npy file go to the .npy reader, like a TensorRT calibration cache ("TRT-") or
 * an XML calibration table (an "<oqc-calib" element in the first 200 bytes) to the table
 * readers, "OQCPB" and a TensorProto to the .pb reader; everything else is a model,
 * taken through everything oqc does with a model short of reading calibration data.
 *
 * Each input is written to a file (the readers take paths) and then, as far as each
 * step succeeds:
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
 * sanitizer reports, leaks and hangs.  Built and run by `make fuzz` (tests/fuzz/run.sh;
 * docs/testing.md). */
#include "ir.h"
#include "passes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_MAX_ELEMS 100000
#define FUZZ_MAX_MACS 20000000

static char model_path[128], out_dir[128];

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

/* The data readers: .npy, TensorRT cache, XML table, and ONNX TensorProto (.pb, the
 * calibration directories' other format), which has no magic of its own: the harness
 * takes inputs starting with "OQCPB" as one (the bytes after the prefix; the file
 * written was the whole input, so it is written again). */
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
    if (kind == 4) {
        FILE *f = fopen(model_path, "wb");
        if (!f)
            return 1;
        fwrite(data + 5, 1, size - 5, f);
        fclose(f);
    }
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
    oqc_diag_free(&d);
    oqc_arena_free(a);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!model_path[0]) {
        const char *tmp = getenv("OQC_FUZZ_TMP") ? getenv("OQC_FUZZ_TMP") : "/tmp";
        snprintf(model_path, sizeof model_path, "%s/oqc_fuzz_%d.onnx", tmp, (int)getpid());
        snprintf(out_dir, sizeof out_dir, "%s/oqc_fuzz_%d_out", tmp, (int)getpid());
    }
    FILE *f = fopen(model_path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    if (data_file(data, size))
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
    oqc_diag_free(&d);
    return 0;
}
