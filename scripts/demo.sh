#!/bin/sh
# demo.sh - the main job (`make demo`): compile the bundled Fashion-MNIST model to INT8 C
# with its 500 calibration images, and to FP32 C for comparison; build both with the
# system C compiler; run them on the 1000 labelled test images; print accuracy, weight
# bytes, arena bytes and per-inference latency side by side; then the accuracy of both
# on all 10,000 test images of Debian's dataset-fashion-mnist (installed when missing,
# as root; skipped with a note otherwise).  BUILD and CC as for make.
set -eu
BUILD=${BUILD:-build}
CC=${CC:-cc}
OQC=$BUILD/oqc
D=models/fashion
OUT=$BUILD/demo
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== oqc compile (INT8, percentile calibration on $D/calib_500.npy)"
"$OQC" compile $D/fashion_cnn.onnx -o "$OUT/int8" --name fashion --calib $D/calib_500.npy |
    tee "$OUT/int8.log"
echo "== oqc compile --precision fp32"
"$OQC" compile $D/fashion_cnn.onnx -o "$OUT/fp32" --name fashion --precision fp32 |
    tee "$OUT/fp32.log"
for p in int8 fp32; do
    # the flags NAME.mk gives for the default target (native: this machine's kernels)
    flags=$(sed -n 's/^fashion_CFLAGS := //p' "$OUT/$p/fashion.mk")
    echo "== $CC $flags $OUT/$p/*.c"
    $CC $flags -I "$OUT/$p" -DOQC_MODEL_HEADER='"fashion.h"' \
        -DOQC_MODEL_PREFIX=fashion scripts/demo_main.c "$OUT/$p"/*.c -lm -o "$OUT/run_$p"
done
echo "== running both on $D/test_1000.npy (5 passes, median latency, one thread)"
for p in int8 fp32; do
    "$OUT/run_$p" $D/test_1000.npy $D/test_labels_1000.npy > "$OUT/$p.txt"
done
val() { awk -v k="$2" '$1 == k {print $2}' "$OUT/$1.txt"; }
wbytes() { sed -n 's/.*constants (\([0-9]*\) bytes).*/\1/p' "$OUT/$1.log"; }
echo
echo "| Fashion-MNIST, 1000 test images | FP32 C | INT8 C |"
echo "|---|---:|---:|"
echo "| top-1 accuracy | $(val fp32 accuracy) | $(val int8 accuracy) |"
echo "| weight bytes | $(wbytes fp32) | $(wbytes int8) |"
echo "| arena bytes | $(val fp32 arena) | $(val int8 arena) |"
echo "| latency per inference (ms) | $(val fp32 latency_ms) | $(val int8 latency_ms) |"
echo
FM=/usr/share/datasets/fashion-mnist
if [ ! -f $FM/t10k-images-idx3-ubyte.gz ]; then
    sh scripts/install-deps.sh dataset-fashion-mnist >/dev/null 2>&1 || true
fi
if [ -f $FM/t10k-images-idx3-ubyte.gz ] && [ -f $FM/t10k-labels-idx1-ubyte.gz ]; then
    gzip -dc $FM/t10k-images-idx3-ubyte.gz > "$OUT/t10k-images.idx"
    gzip -dc $FM/t10k-labels-idx1-ubyte.gz > "$OUT/t10k-labels.idx"
    for p in int8 fp32; do
        "$OUT/run_$p" --idx "$OUT/t10k-images.idx" "$OUT/t10k-labels.idx" > "$OUT/${p}_10k.txt"
    done
    acc() { awk '$1 == "accuracy" {print $2}' "$OUT/$1_10k.txt"; }
    echo "| Fashion-MNIST, all 10,000 test images ($FM) | FP32 C | INT8 C | INT8 - FP32 |"
    echo "|---|---:|---:|---:|"
    echo "| top-1 accuracy | $(acc fp32) | $(acc int8) |" \
         "$(awk -v a="$(acc int8)" -v b="$(acc fp32)" 'BEGIN {printf "%+.2f points", 100 * (a - b)}') |"
    echo
else
    echo "(dataset-fashion-mnist is not installed: run as root, or apt-get install it, for the"
    echo " accuracy on all 10,000 test images)"
    echo
fi
echo "The emitted sources are in $OUT/int8 and $OUT/fp32 (see their README.md)."
