#!/bin/sh
# channel_scales.sh - activations at one scale per channel (docs/calibration.md,
# "Channel scales") on the trained MobileNetV2-CIFAR of models/devset (17 depthwise
# convs, each reading a conv's ReLU6 output):
#   1. calibration writes channel thresholds into the XML table for exactly the tensors
#      that run at channel scales (-v names them), each within [T/4, T];
#   2. the emitted C gives `oqc eval`'s bits in both requantization modes (its residual
#      Adds reading int32 sums too), and a compile from the saved table gives the same
#      C as one that calibrates;
#   3. --act-scales tensor, and a TensorRT table (which has no channel thresholds), run
#      every tensor at one scale (and --act-scales tensor every residual in 8 bits);
#      the outputs of both are as close to FP32 (SQNR);
#   4. calibration split into shards (statistics files carry each channel's amax) gives
#      the same table bytes as one run;
#   5. export-qdq writes per-axis QuantizeLinear/DequantizeLinear for those tensors.
. tests/cli/lib.sh
D=models/devset
M=$D/mobilenetv2_cifar10_fp32.onnx
N=40
[ "${OQC_CONFIG:-default}" = san ] && N=8
mknpy "$N, 3, 32, 32" $D/eval_300.npy "$TMP/x.npy"
mknpy "100, 3, 32, 32" $D/calib_200.npy "$TMP/c.npy"
C=$TMP/c.npy

# 1. Which tensors, and their thresholds.
"$OQC" calibrate $M --data "$C" -o "$TMP/t.xml" -q >"$TMP/cal.txt" 2>&1 ||
    fail "calibrate: $(tail -n 2 "$TMP/cal.txt")"
xmllint --noout --relaxng docs/calib-table.rng "$TMP/t.xml" 2>/dev/null &&
    ok "table with channel thresholds is valid against calib-table.rng" ||
    fail "table not valid against calib-table.rng"
nt=$(grep -c ' channels="' "$TMP/t.xml")
# depthwise convs of the optimised graph (group > 1), from the dump
ndw=$("$OQC" dump $M 2>/dev/null | grep -c ' Conv .*group=[0-9]*[02-9]')
"$OQC" eval $M --data "$TMP/x.npy" --table "$TMP/t.xml" -v >"$TMP/v.txt" 2>&1 ||
    fail "eval --table: $(tail -n 2 "$TMP/v.txt")"
nv=$(grep -c "runs at one scale per channel" "$TMP/v.txt")
[ "$nt" = 17 ] && [ "$ndw" = 17 ] && [ "$nv" = 17 ] &&
    ok "17 depthwise convs: 17 tensors with channel thresholds, 17 at channel scales (-v)" ||
    fail "channel-scaled tensors: $nt in the table, $ndw depthwise convs, $nv at channel scales"
# each channel threshold in [T/4, T] (float32 T/4 is exact), some below T
awk '/ channels="/ {
        match($0, / threshold="[^"]*"/); T = substr($0, RSTART + 12, RLENGTH - 13) + 0
        match($0, / channels="[^"]*"/); n = split(substr($0, RSTART + 11, RLENGTH - 12), v, " ")
        for (i = 1; i <= n; i++) { if (v[i] + 0 > T || v[i] + 0 < T / 4 * (1 - 1e-7)) bad++
                                   if (v[i] + 0 < T) below++ }
     }
     END { exit !(bad == 0 && below > 0) }' "$TMP/t.xml" &&
    ok "every channel threshold within [T/4, T], some below T" ||
    fail "channel thresholds outside [T/4, T]"

# 2. Emitted C = oqc eval, bit for bit; table = calibration.
for r in float fixed; do
    emitted_is_eval mb_$r $M "$TMP/x.npy" --table "$TMP/t.xml" --requant $r &&
        ok "emitted C at channel scales ($r requantization) = oqc eval, bit for bit" ||
        fail "emitted C at channel scales ($r): $(head -n 3 "$TMP/cc.log")"
done
"$OQC" compile $M -o "$TMP/e_cal" --name mb_float --calib "$C" -q >/dev/null 2>&1 &&
    diff -r "$TMP/e_cal" "$TMP/c_mb_float" >/dev/null &&
    ok "compile --calib = compile --table of its table: identical C" ||
    fail "compile --calib and --table of the same thresholds differ"

# 3. One scale per tensor: --act-scales tensor, or a TensorRT table.
"$OQC" eval $M --data "$TMP/x.npy" --table "$TMP/t.xml" --act-scales tensor -v \
    >"$TMP/vt.txt" 2>&1 || fail "eval --act-scales tensor: $(tail -n 2 "$TMP/vt.txt")"
"$OQC" calibrate $M --data "$C" -o "$TMP/t.trt" -q >/dev/null 2>&1 &&
    "$OQC" eval $M --data "$TMP/x.npy" --table "$TMP/t.trt" -v >"$TMP/vtrt.txt" 2>&1 ||
    fail "TensorRT table: $(tail -n 2 "$TMP/vtrt.txt")"
# The residual Adds read their projection convs' int32 sums (docs/int8.md): the 10
# block Adds of the dump; the 11th Add is the classifier's bias (a constant input).
nadd=$("$OQC" dump $M --after all 2>/dev/null | grep '^node   Add ' | grep -vc '(%projector')
nfused=$(grep -c "adds the int32 sums of '/features/features\.[0-9]*/conv/conv\.2/Conv'" "$TMP/v.txt")
[ "$nadd" = 10 ] && [ "$nfused" = 10 ] && ! grep -q "adds the int32 sums" "$TMP/vt.txt" &&
    ok "the 10 residual Adds read their projections' int32 sums (none with --act-scales tensor)" ||
    fail "residual Adds: $nadd in the dump, $nfused reading int32 sums"
! grep -q "one scale per channel" "$TMP/vt.txt" "$TMP/vtrt.txt" &&
    ok "--act-scales tensor and a TensorRT table: no tensor at channel scales" ||
    fail "channel scales with --act-scales tensor or a TensorRT table"
# Output SQNR against FP32 on the $N images.  Measured (40 images, 100 calibration
# images): 26.55 dB at channel scales, 26.86 dB at one scale; on 300 images with 200
# calibration images 29.25 and 29.36 dB: on this network they are level (on the
# ImageNet MobileNetV2 channel scales gain 1.1 dB, docs/calibration.md; on
# test_quantize's conv_then_depthwise 4.3 dB).  Bound: channel scales at most 1.5 dB
# below one scale; a wrong scale for one channel anywhere drops the output below 15 dB.
sq() { sed -n "s/^output .*: SQNR \([-0-9.]*\) dB centered.*/\1/p" "$1"; }
s_ch=$(sq "$TMP/v.txt")
s_t=$(sq "$TMP/vt.txt")
awk -v a="$s_ch" -v b="$s_t" 'BEGIN { exit !(a != "" && b != "" && a >= b - 1.5) }' &&
    ok "output SQNR: channel scales $s_ch dB, one scale $s_t dB (at most 1.5 dB apart)" ||
    fail "output SQNR: channel scales '$s_ch' dB, more than 1.5 dB below one scale '$s_t' dB"

# 4. Shards: the channel amax merges by maximum, like amax (the default method chooses
#    its percentiles on --val: the same 100 samples).
S=$TMP/sh
mkdir "$S"
mknpy "60, 3, 32, 32" "$C" "$S/a.npy"
tail -c +$((129 + 60 * 12288)) "$C" >"$S/rest"
{ npy_header '<f4' "40, 3, 32, 32"; cat "$S/rest"; } >"$S/b.npy"
"$OQC" calibrate $M --data "$S/a.npy" --save-stats "$S/a.amax" -q &&
    "$OQC" calibrate $M --data "$S/b.npy" --save-stats "$S/b.amax" -q &&
    "$OQC" calibrate $M --merge-stats "$S/a.amax" "$S/b.amax" --save-stats "$S/range" -q &&
    "$OQC" calibrate $M --data "$S/a.npy" --range "$S/range" --save-stats "$S/a.hist" -q &&
    "$OQC" calibrate $M --data "$S/b.npy" --range "$S/range" --save-stats "$S/b.hist" -q &&
    "$OQC" calibrate $M --merge-stats "$S/a.hist" "$S/b.hist" --val "$C" -o "$S/t.xml" -q ||
    fail "calibration in shards"
grep -q '^c 96 ' "$S/a.amax" && cmp -s "$S/t.xml" "$TMP/t.xml" &&
    ok "2 shards (60 + 40 samples): statistics carry channel amax, the same table bytes" ||
    fail "shards: $(cmp "$S/t.xml" "$TMP/t.xml" 2>&1)"
# a statistics file whose channel line is cut short is an error naming it
sed 's/^\(c 96 [^ ]* [^ ]*\).*/\1/' "$S/a.amax" >"$S/bad.amax"
"$OQC" calibrate $M --merge-stats "$S/bad.amax" "$S/b.amax" --save-stats "$S/r2" \
    >"$TMP/bad.txt" 2>&1
grep -q "bad.amax: line [0-9]*: fewer channel amax values than N" "$TMP/bad.txt" &&
    [ ! -e "$S/r2" ] && ok "error: a cut channel amax line, nothing written" ||
    fail "cut channel amax line: $(head -n 2 "$TMP/bad.txt")"

# 5. QDQ export (the dumps: test_quantize's test_channel_scales).
"$OQC" export-qdq $M --table "$TMP/t.xml" -o "$TMP/q.onnx" -q >"$TMP/q.txt" 2>&1 ||
    fail "export-qdq: $(tail -n 2 "$TMP/q.txt")"
"$OQC" dump "$TMP/q.onnx" >"$TMP/qd.txt" 2>&1
nq=$(grep -c '^node   QuantizeLinear .*axis=1$' "$TMP/qd.txt")
ndq=$(grep -c '^node   DequantizeLinear .*_QuantizeLinear_Output u8.*axis=1$' "$TMP/qd.txt")
[ "$nq" = 17 ] && [ "$ndq" = 17 ] &&
    ok "export-qdq: 17 per-axis QuantizeLinear -> DequantizeLinear pairs (axis 1)" ||
    fail "export-qdq: $nq per-axis QuantizeLinear, $ndq DequantizeLinear (want 17 each)"
finish
