#!/bin/sh
# sqnr.sh - INT8 accuracy of the `make models` networks: oqc eval's centered output SQNR
# (each output element's mean over the evaluation inputs subtracted first, so the
# input-independent part of the logits cannot inflate it) for every calibration method,
# on two sets of image-like inputs, and how much the FP32 network itself amplifies the
# rounding of an 8-bit input (bench/noise_gain.py: a ceiling no 8-bit scheme beats).
#
#     make sqnr          (or: sh bench/sqnr.sh; BUILD=dir as for make bench)
#
# Inputs (256 for calibration, 64 for evaluation, never the same images):
#   fashion  Fashion-MNIST at 224x224, as the networks were trained on it
#            (models/tv/make_fashion224.py: training images for calibration, test images
#            for evaluation)
#   photo    crops of the photographs Debian ships (models/tv/make_photo_patches.py,
#            seeds 1 and 2), images the networks never saw
# (With 64 calibration images the entropy method chose T = 2.5 of amax 31 for
# squeezenet's logits, 640 non-zero values spread over 2048 bins: -9 dB; with 256, T = 29.)
# Writes build/bench/sqnr/results.md (and prints it).  Needs build/oqc and the networks
# of `make models`; /usr/bin/python3 with numpy, PIL and torch, the photos of Debian's
# python3-sklearn and python3-matplotlib, and dataset-fashion-mnist (`make sqnr`
# installs the packages).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OQC=$BUILD/oqc
OUT=$BUILD/bench/sqnr
PY=/usr/bin/python3
NETS="resnet18 mobilenet_v2 squeezenet1_1 googlenet"
METHODS="entropy max percentile:99.99 mse"
mkdir -p "$OUT"
[ -x "$OQC" ] || { echo "sqnr: $OQC missing (run make)" >&2; exit 1; }
for n in $NETS; do
    [ -f models/tv/$n.onnx ] || { echo "sqnr: models/tv/$n.onnx missing (run make models)" >&2; exit 1; }
done
for spec in "photo_calib 256 1" "photo_eval 64 2"; do
    set -- $spec
    [ -f "$OUT/$1.npy" ] || "$PY" models/tv/make_photo_patches.py "$OUT/$1.npy" "$2" "$3" ||
        { echo "sqnr: cannot make photo patches" >&2; exit 1; }
done
for spec in "fashion_calib 256 1 train" "fashion_eval 64 2 test"; do
    set -- $spec
    [ -f "$OUT/$1.npy" ] || "$PY" models/tv/make_fashion224.py "$OUT/$1.npy" "$2" "$3" "$4" ||
        { echo "sqnr: cannot make the Fashion-MNIST sets (dataset-fashion-mnist?)" >&2; exit 1; }
done

# sqnr NET CALIB EVAL METHOD: the centered SQNR oqc eval prints for the first output
sqnr() {
    "$OQC" eval "models/tv/$1.onnx" --data "$3" --calib "$2" --method "$4" >"$OUT/eval.log" 2>&1 ||
        { echo "error"; return; }
    sed -n "s/^output '[^']*': SQNR \([-0-9.]*\) dB centered.*/\1/p" "$OUT/eval.log" | head -n 1
}

res=$OUT/results.md
{
    echo "## INT8 accuracy of the make-models networks: centered output SQNR (dB)"
    echo
    echo "oqc eval, 8-bit weights, float requantization; calibration 256 images, evaluation 64."
    echo "Noise gain: the FP32 network's own centered output SQNR when only its input is"
    echo "rounded to 8 bits (bench/noise_gain.py)."
    echo
    echo "| network | inputs | entropy | max | percentile:99.99 | mse | noise gain |"
    echo "|---|---|---:|---:|---:|---:|---:|"
} >"$res"
for n in $NETS; do
    for set in fashion photo; do
        cal=$OUT/${set}_calib.npy ev=$OUT/${set}_eval.npy
        row="| $n | $set |"
        for m in $METHODS; do
            row="$row $(sqnr $n $cal $ev $m) |"
        done
        ng=$("$PY" bench/noise_gain.py "$OQC" "$ev" "models/tv/$n.onnx" 2>/dev/null |
            sed -n 's/^| [^|]* | \([-0-9.]*\) |.*/\1/p' | head -n 1)
        echo "$row ${ng:-?} |" >>"$res"
    done
done
cat "$res"
