/* backend.h - what turns an optimised graph into deliverables: INT8 lowering
 * (calibration + pass "quantize"), the C emitter and the QDQ ONNX export.
 */
#ifndef OQC_BACKEND_H
#define OQC_BACKEND_H

#include "calib.h"
#include "passes.h"

/* =================================================================== lower.c */

/* Lowers the optimised graph g to INT8: thresholds from a calibration over o->data
 * (gb, b as for oqc_calibrate; o->table overrides the tensors it names) or, without
 * data, from o->table alone; then pass "quantize" with cfg.  entries/nentries (may be
 * NULL) receive the thresholds used. */
int oqc_lower_int8(OqcGraph *g, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                   const struct OqcQuantConfig *cfg, OqcCalibEntry **entries, int *nentries,
                   OqcDiag *d);

/* ==================================================================== emit_c.c */

/* What oqc_emit_c reports about the code it wrote. */
typedef struct OqcEmitStats {
    size_t arena_bytes;    /* NAME_ARENA_BYTES: activations + kernel scratch */
    size_t arena_bytes_noamx; /* NAME_ARENA_BYTES off x86-64 Linux (no AMX scratch) */
    size_t weight_bytes;   /* bytes of the constants written */
    int nconst;            /* constant arrays written */
    int nfiles;            /* files written */
    const char *const *files; /* their paths (in the graph's arena) */
    int nruntime;          /* of which copies of runtime files */
} OqcEmitStats;

/* How to emit C (see docs/compile.md). */
typedef struct OqcEmitOptions {
    const char *outdir;                 /* output directory, created when missing */
    const char *name;                   /* NAME: a C identifier prefixing every symbol and
                                           file (checked with oqc_c_name_check) */
    const char *precision;              /* for the generated comments ("fp32") */
    const char *const *extra_runtime;   /* further runtime files to copy ("oqci_conv.c"),
                                           with what they need; may be NULL */
    int nextra;                         /* their count */
    OqcEmitStats *stats;                /* receives statistics, or NULL */
    const char *target;                 /* --target: kernel family the build flags in
                                           NAME.mk select (NULL: "native") */
    const char *preprocess;             /* the --preprocess spec the model's images take
                                           (stated in README.md), or NULL */
} OqcEmitOptions;
/* The compiler flags of --target TARGET (a row of the ISA table, OQC_ISA_TABLE in
 * runtime/fp32/oqc_isa.h, with flags), or NULL for an unknown target (emit_runtime.c). */
const char *oqc_target_flags(const char *target);
/* The --target names, "native, portable, ... or dispatch", into buf (size bytes). */
void oqc_target_names(char *buf, size_t size);
/* The --target used when none is given: dispatch when oqc runs on x86-64 or AArch64
 * Linux (the emitted code chooses its kernels at run time), else native. */
const char *oqc_default_target(void);

/* Writes executor e (built with oqc_exec_new(g, 1, d): one thread) as C into
 * opt->outdir: NAME.h, NAME.c, NAME_weights.h/.c, the runtime files the calls need,
 * NAME.mk and README.md. Nodes the emitter cannot compile are all reported before
 * anything is written; files go to temporary names renamed together at the end. */
int oqc_emit_c(OqcExec *e, const OqcEmitOptions *opt, OqcDiag *d);
/* What oqc_emit_c refuses in e, checked before it writes anything: each node the
 * emitter cannot compile (the first max_nodes listed, then a count), non-float graph
 * inputs or outputs, constants without data; errors in d, returns their number. */
int oqc_emit_check(OqcExec *e, int max_nodes, OqcDiag *d);
/* 0 when name can be NAME (a C identifier of at most 48 characters, not a keyword,
 * not starting with '_' or the runtime's oqcf/oqci prefixes), else an error. */
int oqc_c_name_check(const char *name, OqcDiag *d);
/* A valid NAME made from a model path: its base name without extension, other
 * characters turned into '_' ("models/resnet-18.onnx" -> "resnet_18"). */
const char *oqc_c_name_from_path(OqcArena *a, const char *path);

/* A runtime source file embedded in oqc at build time (the Makefile generates the
 * table from runtime/ into $(BUILD)/gen/oqc_runtime_src.c); oqc compile copies them. */
typedef struct OqcRuntimeFile {
    const char *name;               /* file name in runtime/, e.g. "oqcf_conv.c" */
    const unsigned char *text;      /* its bytes, NUL-terminated */
} OqcRuntimeFile;
/* Every file of runtime/, sorted by name; ends with {NULL, NULL}. */
extern const OqcRuntimeFile oqc_runtime_files[];

/* ================================================================ export_qdq.c */

/* What oqc_export_qdq wrote. */
typedef struct OqcQdqStats {
    int nact;        /* activation tensors given a QuantizeLinear -> DequantizeLinear pair */
    int nact_zp0;    /* of which oqc's u8 (zero point 0, scale T/255); the others are its
                        s8 (uint8 with zero point 128, scale T/127) */
    int nweights;    /* Conv/Gemm/MatMul weights written as int8 per output channel */
    int nbias;       /* biases written as int32 at scale s_in * s_w[k] */
    int nunused;     /* calibrated tensors oqc's INT8 code does not hold in 8 bits (e.g. an
                        Add output whose Relu oqc folds into the Add): left float */
    int64_t bytes;   /* size of the file written */
} OqcQdqStats;

/* How to export. */
typedef struct OqcQdqOptions {
    const char *path;   /* the .onnx to write */
    int weight_uint8;   /* 0: int8 weights, zero point 0 (ONNX's and TensorRT's convention);
                           1: the same integers + 128 as uint8, zero point 128 (ONNX
                           Runtime on x86 without VNNI: its u8s8 kernels sum pairs of
                           products in saturating int16, its u8u8 kernels are exact) */
} OqcQdqOptions;

/* Writes g as an ONNX model (opset >= 13) with oqc's INT8 quantization as
 * QuantizeLinear/DequantizeLinear nodes, atomically to o->path (nothing is left on error).
 * g: the model after the passes cleanup and fold-bn only (plain ONNX nodes); it gains
 * the generated names as unlinked tensors.  gq: the same model lowered to INT8 by oqc
 * (the whole pipeline, a calibration or table, pass "quantize": oqc_lower_int8); its
 * 8-bit tensors (matched by name, NAME or NAME.q8) get a Q/DQ pair of uint8 with zero
 * point 0 (oqc's u8, scale T/255) or 128 (oqc's s8, scale T/127), and the
 * Conv/Gemm/MatMul nodes it runs in INT8 get int8 per-output-channel weights and int32
 * biases behind DequantizeLinear, quantized exactly as pass "quantize" does (see
 * docs/export-qdq.md). st (may be NULL) receives statistics. */
int oqc_export_qdq(OqcGraph *g, const OqcGraph *gq, const OqcQdqOptions *o,
                   OqcQdqStats *st, OqcDiag *d);

#endif
