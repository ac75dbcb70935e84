#!/bin/sh
# int8_eval.sh - `oqc eval` and the quantize pass on the bundled Fashion-MNIST model:
# what runs in INT8, the accuracy of both requantization modes with the default
# (entropy) calibration and with max, importing a table instead of calibrating, and
# clear errors.  Under the sanitizers (OQC_CONFIG=san, ~10x slower) the accuracy runs
# use the first 100 images and skip the accuracy bounds: that run is about memory.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
D=models/fashion
LIMIT=""
[ "${OQC_CONFIG:-default}" = san ] && LIMIT="--limit 100"
EV="--data $D/test_1000.npy --labels $D/test_labels_1000.npy $LIMIT"

# delta FILE: the "(+0.50 points)" figure of an eval report
delta() { sed -n 's/.*INT8 [0-9.]* (\([-+0-9.]*\) points).*/\1/p' "$1"; }
# at_least D BOUND: D >= -BOUND (a loss of at most BOUND points; any gain passes)
at_least() { awk -v d="$1" -v b="$2" 'BEGIN { exit !(d != "" && d >= -b) }'; }

# 1. entropy (default), float requantization, -v: the pass's decisions.  Every node of
#    the optimised graph runs in INT8 (Flatten as a view) and only the model's float
#    interface needs a Quantize and a Dequantize.
"$OQC" eval "$M" $EV --calib $D/calib_500.npy $NAMED -v --save-int8 "$TMP/cal.npy" >"$TMP/e_float.txt" 2>&1 ||
    fail "eval: $(tail -n 3 "$TMP/e_float.txt")"
grep -q 'quantize: 13 nodes INT8 (Conv 7, Gemm 1, MatMul 0, MaxPool 2, AveragePool 0, GlobalAveragePool 1, Add 1, Sum 0, Mul 0, Relu 0, Clip 0, Resize 0, Transpose 0, ConvTranspose 0, LayerNormalization 0, tables 0 of 0 nodes, views 1), 0 float; 1 Quantize and 1 Dequantize inserted' "$TMP/e_float.txt" &&
    ok "fashion: every node INT8, one Quantize, one Dequantize" ||
    fail "quantize statistics: $(grep 'quantize: [0-9]' "$TMP/e_float.txt")"
grep -q '^per-layer SQNR' "$TMP/e_float.txt" && grep -q '^  logits.q8 *Gemm *s32' "$TMP/e_float.txt" &&
    ok "per-layer table down to the logits" || fail "per-layer table"

# 2. Accuracy against the float model on the 1000 test images (FP32: 0.9240).  The
#    issue asks for INT8 within 0.3 points.  Measured (the Gemm keeping its accumulators
#    since the logits leave the INT8 domain): entropy 0.9290 (+0.5: 16 of 1000
#    predictions flip, net +5 right), max 0.9260 (+0.2).  Bound, one-sided: INT8 at
#    most 0.3 points below FP32 for both methods and both requantization modes; a gain
#    (entropy's +0.5 today) never fails, a loss of more than 3 of 1000 images does.
"$OQC" eval "$M" $EV --calib $D/calib_500.npy $NAMED --requant fixed -q >"$TMP/e_fixed.txt" 2>&1 ||
    fail "eval --requant fixed: $(tail -n 3 "$TMP/e_fixed.txt")"
"$OQC" eval "$M" $EV --calib $D/calib_500.npy --method max -q >"$TMP/max.txt" 2>&1 ||
    fail "eval --method max: $(tail -n 3 "$TMP/max.txt")"
if [ -z "$LIMIT" ]; then
    for r in float fixed; do
        d=$(delta "$TMP/e_$r.txt")
        at_least "$d" 0.3 && ok "entropy, requant $r: accuracy delta $d points (>= -0.3)" ||
            fail "entropy, requant $r: accuracy delta '$d' points"
    done
    d=$(delta "$TMP/max.txt")
    at_least "$d" 0.3 && ok "max: accuracy delta $d points (>= -0.3)" || fail "max: accuracy delta '$d' points"
    s=$(sed -n "s/^output 'logits': SQNR \([0-9.]*\) dB centered.*/\1/p" "$TMP/max.txt")
    awk -v s="$s" 'BEGIN { exit !(s != "" && s >= 30) }' && ok "max: logits SQNR $s dB >= 30" ||
        fail "max: logits SQNR '$s'"
fi

# 3. A table instead of data: the XML table calibrate writes gives the INT8 outputs of
#    calibrating inside eval, bit for bit (same thresholds, same parameters).
"$OQC" calibrate "$M" --data $D/calib_500.npy $NAMED --format xml -o "$TMP/t.xml" -q
"$OQC" eval "$M" $EV --table "$TMP/t.xml" --save-int8 "$TMP/tab.npy" -q >/dev/null &&
    cmp -s "$TMP/tab.npy" "$TMP/cal.npy" && ok "--table (XML) gives the bits of --calib" ||
    fail "--table and --calib outputs differ"

# 4. --fp32-nodes keeps a node in float: the head conv, with a Dequantize before it and
#    a Quantize after it.
H=/head/head.0/Conv
"$OQC" eval "$M" --data $D/test_1000.npy --limit 20 --calib $D/calib_500.npy $NAMED --fp32-nodes "$H" -v -q \
    >"$TMP/f.txt" 2>&1
grep -q "'$H' (Conv) stays float: named in --fp32-nodes" "$TMP/f.txt" &&
    grep -q 'quantize: 12 nodes INT8.*1 float; 2 Quantize and 2 Dequantize' "$TMP/f.txt" &&
    ok "--fp32-nodes keeps the head conv in float" ||
    fail "--fp32-nodes: $(grep 'quantize: [0-9]' "$TMP/f.txt" | head -3)"

# 5. Errors.
"$OQC" eval "$M" --data $D/test_1000.npy 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q -- "--calib" "$TMP/err" && ok "no thresholds: error names --calib/--table" ||
    fail "no thresholds: exit $st $(cat "$TMP/err")"
"$OQC" eval "$M" --data $D/test_1000.npy --calib $D/calib_500.npy $NAMED --fp32-nodes nosuch 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "nosuch" "$TMP/err" && ok "unknown --fp32-nodes name" ||
    fail "unknown --fp32-nodes: exit $st $(cat "$TMP/err")"
"$OQC" eval "$M" --data $D/test_1000.npy --calib $D/calib_500.npy $NAMED --requant half 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "half" "$TMP/err" && ok "bad --requant" || fail "bad --requant: $st"
printf 'TRT-8601-EntropyCalibration\nnosuch: 3c88edfc\n' >"$TMP/bad.trt"
"$OQC" eval "$M" --data $D/test_1000.npy --table "$TMP/bad.trt" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "nosuch" "$TMP/err" && ok "table naming an unknown tensor" ||
    fail "bad table: exit $st $(cat "$TMP/err")"
finish
