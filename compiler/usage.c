/* usage.c - the text of `oqc help` and `oqc help COMMAND` / `oqc COMMAND --help` (the CLI
 * driver's, main.c and cli_opts.c; not part of liboqc).  docs/cli.md describes the same
 * options at length. */
#include "usage.h"

#include <string.h>

const char *const oqc_usage_text =
    "usage: oqc COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  dump MODEL   print the IR (--format text|xml|dot, -o FILE)\n"
    "  check MODEL  check that oqc supports every op and shape of MODEL\n"
    "  run MODEL    run the model in FP32 (--input [NAME=]FILE, -o OUT)\n"
    "  calibrate MODEL  choose INT8 thresholds from data (--data DIR, -o TABLE)\n"
    "  compile MODEL    emit the model as self-contained C (-o OUTDIR, --precision fp32)\n"
    "  export-qdq MODEL write ONNX with QuantizeLinear/DequantizeLinear (--table|--calib, -o)\n"
    "  eval MODEL       FP32 against INT8: accuracy, SQNR, per-layer SQNR (--data X.npy)\n"
    "  bench MODEL      build the emitted C with cc and time it, per-layer profile\n"
    "  help         this text (oqc help COMMAND for one command)\n"
    "\n"
    "common options:\n"
    "  --input-shape NAME=D1xD2x...  fix a dynamic input's shape (repeatable)\n"
    "  -o FILE                       write the output to FILE instead of stdout\n"
    "  -v                            verbose (pass statistics)\n"
    "  --passes LIST                 run only these passes (comma-separated)\n"
    "  --disable-pass NAME           skip a pass (repeatable or comma-separated)\n"
    "  --no-opt                      run/check the graph as loaded, without passes\n"
    "  -q                            quiet\n"
    "  --portable-fp32               calibrate with the portable FP32 kernels: the same\n"
    "                                tables on every host (docs/testing.md)\n"
    "  --json                        check, compile, calibrate, eval, bench: the facts as\n"
    "                                one JSON document on stdout, the text on stderr\n"
    "                                (docs/json.md)\n"
    "  --preprocess SPEC             images as input: imagenet|cifar|raw and/or keys\n"
    "                                resize=,crop=,scale=,mean=,std=,color=,layout=\n"
    "                                (docs/images.md); data may be JPEG/PNG files,\n"
    "                                folders or list files\n"
    "\n"
    "MODEL is an ONNX file or an XML dump written by `oqc dump --format xml`.\n"
    "Exit status: 0 success, 1 error (the message names the file, node and problem).\n";

const char *oqc_usage(const char *cmd) {
    if (!strcmp(cmd, "dump"))
        return "usage: oqc dump MODEL [--format text|xml|dot] [-o FILE] "
               "[--input-shape NAME=DIMS]...\n"
               "                [--after PASS|all] [--passes LIST] [--disable-pass NAME] [-v]\n"
               "  without --after the IR is shown as loaded; --after PASS runs the pipeline up\n"
               "  to and including PASS (all: the whole pipeline) and shows the result\n"
               "  text: one line per input, constant, node and output (docs/ir-dump.md)\n"
               "  xml:  the whole IR (schema docs/oqc-ir.rng); with -o FILE the constants'\n"
               "        bytes go to FILE.data, so `oqc dump FILE` can load it back\n"
               "  dot:  Graphviz (render with dot -Tsvg)\n";
    if (!strcmp(cmd, "check"))
        return "usage: oqc check MODEL [--input-shape NAME=DIMS]...\n"
               "  loads MODEL, infers every shape and lists unsupported ops; exit 0 when\n"
               "  oqc can execute and compile the model\n";
    if (!strcmp(cmd, "calibrate"))
        return "usage: oqc calibrate MODEL --data PATH... -o TABLE [--method entropy|max|\n"
               "                     percentile:P|mse] [--bins 2048] [--format trt|xml]\n"
               "                     [--report FILE.html] [--table FILE] [--batch N] [--threads N] [-q]\n"
               "  runs the optimised FP32 graph over the data (a directory of .npy/.pb files,\n"
               "  or .npy files whose first axis is the sample axis; --data repeatable) and\n"
               "  writes a threshold per activation tensor: a TensorRT calibration cache (trt)\n"
               "  or XML. --table imports thresholds that override calibration for the\n"
               "  tensors it names. --report writes an HTML report with histograms. --batch N\n"
               "  runs N samples at a time (the table does not depend on it).\n"
               "  --min-sqnr DB | --max-drop POINTS with --val X.npy [--val-labels Y.npy]:\n"
               "  keep the fewest layers float for that target (XML tables only; see below).\n";
    if (!strcmp(cmd, "compile"))
        return "usage: oqc compile MODEL -o OUTDIR [--name NAME] [--precision int8|fp32]\n"
               "                   [--calib PATH...] [--table FILE] [--method M] [--requant float|fixed]\n"
               "                   [--weight-bits N] [--fp32-nodes LIST] [--target FAMILY]\n"
               "                   [--input-shape NAME=DIMS]... [--passes LIST | --disable-pass NAME | --no-opt] [-q]\n"
               "  writes the optimised model as self-contained C into OUTDIR: NAME.h (the API:\n"
               "  NAME_run, NAME_run_multi, NAME_ARENA_BYTES, sizes), NAME.c (kernel calls over\n"
               "  one arena), NAME_weights.c, copies of the runtime kernels it calls, NAME.mk\n"
               "  and README.md (docs/compile.md). NAME defaults to the model's file name.\n"
               "  --precision int8 (the default) needs --calib data or a --table (docs/int8.md);\n"
               "  fp32 emits the float model (bit-identical to `oqc run`). --weight-bits 7\n"
               "  quantizes weights to [-63, 63] so AVX2 CPUs without VNNI run the fast u8 x s8\n"
               "  kernels exactly (docs/int8.md). --main also writes main.c and a Makefile\n"
               "  building NAME_main, which runs .npy/raw samples or --bench N.\n";
    if (!strcmp(cmd, "export-qdq"))
        return "usage: oqc export-qdq MODEL (--table TABLE | --calib PATH...) -o OUT.onnx\n"
               "                      [--weight-type int8|uint8] [--weight-bits N] [--method M] [--bins N]\n"
               "                      [--batch N] [--fp32-nodes LIST] [--input-shape NAME=DIMS]...\n"
               "                      [--threads N] [-v] [-q]\n"
               "  writes MODEL as ONNX (opset >= 13) with QuantizeLinear/DequantizeLinear nodes\n"
               "  carrying oqc's INT8 quantization, for ONNX Runtime's integer kernels: int8\n"
               "  weights per output channel and int32 biases behind DequantizeLinear; every tensor\n"
               "  oqc's INT8 code holds in 8 bits gets a uint8 Q/DQ pair, zero point 0 and scale\n"
               "  T/255 for non-negative tensors, zero point 128 and scale T/127 for signed ones.\n"
               "  --weight-type uint8 writes the weights + 128 as uint8 with zero point 128 (the\n"
               "  same values; exact in ONNX Runtime on x86 without VNNI, whose u8s8 kernels\n"
               "  saturate int16 pair sums).\n"
               "  The graph is MODEL after cleanup and fold-bn (Conv, Relu, Add, Concat stay\n"
               "  ONNX nodes); the table names tensors of the optimised graph, as for compile\n"
               "  (docs/export-qdq.md).\n";
    if (!strcmp(cmd, "eval"))
        return "usage: oqc eval MODEL --data X.npy [--labels Y.npy] (--calib PATH... | --table FILE)\n"
               "                [--method M] [--bins N] [--batch N] [--requant float|fixed]\n"
               "                [--weight-bits N] [--fp32-nodes LIST] [--limit N] [--save-int8 OUT.npy]\n"
               "                [--save-fp32 OUT.npy] [--input-shape NAME=DIMS]... [--threads N] [-v] [-q]\n"
               "  runs MODEL in FP32 and its INT8 lowering (what oqc compile emits, the same\n"
               "  bits) over the samples of X.npy and prints top-1 agreement, accuracy of both\n"
               "  against the labels, output SQNR on centered outputs and a per-layer SQNR\n"
               "  table (docs/int8.md). --save-int8/--save-fp32 write the first output of every\n"
               "  sample as float32 [S, elements]. --sensitivity adds, per INT8 layer and most\n"
               "  harmful first, the output SQNR when only it is INT8 and when only it is float.\n"
               "  --min-sqnr DB | --max-drop POINTS --val X.npy [--val-labels Y.npy]\n"
               "  [--save-table FILE.xml] (also on compile and export-qdq): keep the fewest\n"
               "  layers float for that target on the validation data (docs/calibration.md).\n";
    if (!strcmp(cmd, "bench"))
        return "usage: oqc bench MODEL (--calib PATH... | --table FILE | --precision fp32)\n"
               "                 [--runs 100] [--warmup 10] [--input FILE] [--target T] [-q]\n"
               "                 [compile's options]\n"
               "  compiles MODEL to C in a temporary directory, builds it with its driver\n"
               "  ($CC or cc, NAME.mk's flags), runs --warmup then --runs inferences on one\n"
               "  thread and prints arena and weight bytes, median/min/max latency and a\n"
               "  per-layer profile from the emitted hooks (docs/cli.md).\n";
    if (!strcmp(cmd, "run"))
        return "usage: oqc run MODEL --input [NAME=]FILE... [-o OUT] [--input-shape NAME=DIMS]...\n"
               "               [--threads N] [--labels Y.npy]\n"
               "  runs MODEL in FP32 with oqc's reference executor. FILE is .npy (float32),\n"
               "  ONNX TensorProto .pb, or raw float32 (shape from the model or\n"
               "  --input-shape). A file may hold several samples (a leading sample axis,\n"
               "  or batches stacked on axis 0); each is run and the outputs stacked.\n"
               "  -o OUT: .npy file for a single output, else a directory of NAME.npy.\n"
               "  Prints each output's shape and, for classifier outputs, the top-5;\n"
               "  --labels Y.npy (int64 or int32 class ids, one per sample) adds top-1 accuracy.\n";
    return NULL;
}
