#!/bin/sh
# make_refs.sh - makes the committed data and references of models/devset/ (run once,
# from the repository root, after `make`; see README.md):
#
#   sh models/devset/make_refs.sh DEVSET_DIR
#
# 1. make_data.py: the preprocessed CIFAR-10 inputs and labels from DEVSET_DIR's uint8
#    images;
# 2. ort_run.js: ONNX Runtime's FP32 outputs of both networks on eval_300.npy (the
#    independent FP32 references);
# 3. oqc calibrate --method entropy on calib_200.npy: the tables *.table (TensorRT
#    cache format), which fix the INT8 quantization the tests compare;
# 4. oqc export-qdq --table --weight-type uint8 (exact in ONNX Runtime's u8 x u8
#    kernels on this x86, docs/export-qdq.md) and ort_run.js on the export: ONNX
#    Runtime's integer kernels (QLinearConv, QGemm, QLinearAdd, ...) on oqc's
#    quantization, the INT8 references that share no code with oqc's runtime.  The
#    ResNet-32 file is opset 10, which export-qdq does not convert: its export is made
#    from an opset-13 conversion (onnx.version_converter; same nodes, same tensor names,
#    `oqc dump` of both differs only in the opset line), written to a temporary file.
set -eu
[ $# = 1 ] || { echo "usage: sh models/devset/make_refs.sh DEVSET_DIR" >&2; exit 2; }
D=models/devset
OQC=${OQC:-build/oqc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 $D/make_data.py "$1"
/usr/bin/python3 -c '
import sys, onnx
from onnx import version_converter
onnx.save(version_converter.convert_version(onnx.load(sys.argv[1]), 13), sys.argv[2])
' $D/resnet32_cifar10.onnx "$TMP/resnet32_op13.onnx"
for m in resnet32:resnet32_cifar10.onnx mobilenetv2:mobilenetv2_cifar10_fp32.onnx; do
    n=${m%%:*}
    f=$D/${m#*:}
    node $D/ort_run.js "$f" $D/eval_300.npy $D/${n}_ort_fp32_300.npy
    "$OQC" calibrate "$f" --data $D/calib_200.npy --method entropy -o $D/$n.table -q
    src=$f
    [ "$n" = resnet32 ] && src=$TMP/resnet32_op13.onnx
    "$OQC" export-qdq "$src" --table $D/$n.table --weight-type uint8 -o "$TMP/${n}_qdq.onnx"
    node $D/ort_run.js "$TMP/${n}_qdq.onnx" $D/eval_300.npy $D/${n}_ort_int8_300.npy
done
