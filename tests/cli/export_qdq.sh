#!/bin/sh
# export_qdq.sh - `oqc export-qdq` on the bundled Fashion-MNIST model: the exported ONNX
# loads back (oqc check, oqc dump), holds int8 per-channel weights, int32 biases and
# uint8 activations with zero points 0 / 128 as docs/export-qdq.md specifies, runs
# (`oqc run`, ONNX semantics: round half to even) close to oqc's own INT8 code, and bad
# usage fails cleanly.  Uses oqc and python3-onnx's checker (scripts/install-deps.sh
# installs it; without it the check is a skip, which fails make check).
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
D=models/fashion

"$OQC" calibrate "$M" --data $D/calib_500.npy -o "$TMP/f.trt" -q ||
    fail "calibrate"
"$OQC" calibrate "$M" --data $D/calib_500.npy --format xml -o "$TMP/f.xml" -q ||
    fail "calibrate --format xml"

# 1. Export with a TensorRT table; the summary line counts what was written.
"$OQC" export-qdq "$M" --table "$TMP/f.trt" -o "$TMP/q.onnx" >"$TMP/out" 2>&1 &&
    [ -s "$TMP/q.onnx" ] && ok "export-qdq --table writes a model" ||
    fail "export-qdq: $(cat "$TMP/out")"
grep -q 'wrote .*: 15 activation tensors with QuantizeLinear/DequantizeLinear (14 uint8 zero point 0, 1 uint8 zero point 128), 10 int8 weights, 10 int32 biases' "$TMP/out" &&
    ok "summary: 15 Q/DQ pairs (14 u8, 1 s8 as zp 128), 10 weights, 10 biases" ||
    fail "summary: $(cat "$TMP/out")"

# 2. It loads back.
"$OQC" check "$TMP/q.onnx" >"$TMP/out" 2>&1 && ok "oqc check on the export" ||
    fail "check: $(cat "$TMP/out")"
"$OQC" dump "$TMP/q.onnx" >"$TMP/dump" 2>"$TMP/err" && ok "oqc dump on the export" ||
    fail "dump: $(cat "$TMP/err")"
head -n 1 "$TMP/dump" | grep -q 'opsets ai.onnx:13' && ok "opset 13" ||
    fail "opset: $(head -n 1 "$TMP/dump")"
if /usr/bin/python3 -c 'import onnx.checker' 2>/dev/null; then
    /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' \
        "$TMP/q.onnx" 2>"$TMP/err" && ok "onnx.checker (full_check) accepts it" ||
        fail "onnx.checker: $(tail -n 3 "$TMP/err")"
else
    skip "onnx.checker (python3-onnx not installed)"
fi

# 3. What the dump shows.  Weights: one int8 constant per Conv (9) and the Gemm, each
#    with a channel at +-127 (per-channel max|W|/127) and never -128; biases int32;
#    every weight/bias DequantizeLinear has axis=0 (Conv output channels, Gemm transB=1).
n=$(grep -c '^const  %.*_quantized i8\[' "$TMP/dump")
[ "$n" = 10 ] && ok "10 int8 weight constants" || fail "$n int8 weight constants"
bad=$(grep '^const  %.*_quantized i8\[' "$TMP/dump" | grep -v 'min=-127 \|max=127$' | wc -l)
[ "$bad" = 0 ] && ok "every int8 weight reaches +-127 (scale max|W|/127)" || fail "$bad weights not at +-127"
grep -q '^const  %.*_quantized i8\[.*min=-128' "$TMP/dump" && fail "an int8 weight is -128" ||
    ok "no int8 weight is -128"
n=$(grep -c '^const  %.*_quantized i32\[' "$TMP/dump")
[ "$n" = 10 ] && ok "10 int32 bias constants" || fail "$n int32 bias constants"
n=$(grep '^node   DequantizeLinear .*_quantized_DequantizeLinear' "$TMP/dump" | grep -c ' axis=0$')
[ "$n" = 20 ] && ok "20 weight/bias DequantizeLinear with axis=0" || fail "$n per-axis DequantizeLinear"
n=$(grep -c '^const  %.*_zero_point i8\[.*min=0 max=0\|^const  %.*_zero_point i8\[.*values=\[0[,0]*\]' "$TMP/dump")
[ "$n" = 10 ] && ok "weight zero points: int8 0" || fail "$n int8 zero-point tensors of zeros"
# Activations: 15 uint8 scalar zero points, 14 of 0 (u8) and 1 of 128 (s8: the input).
# The residual conv without Relu gets none: its Add reads its int32 sums (docs/int8.md,
# "Residual Adds"), so the export's conv writes float into the Add.  Nor do the
# logits: the Gemm keeps its int32 accumulators, so the export's Gemm writes float.
n0=$(grep -c '^const  %.*_zero_point u8\[scalar\] values=\[0\]' "$TMP/dump")
n128=$(grep -c '^const  %.*_zero_point u8\[scalar\] values=\[128\]' "$TMP/dump")
[ "$n0" = 14 ] && [ "$n128" = 1 ] && ok "activation zero points: 14 x 0, 1 x 128" ||
    fail "activation zero points: $n0 x 0, $n128 x 128"
grep -q "^const  %input_zero_point u8\[scalar\] values=\[128\]" "$TMP/dump" &&
    ok "signed tensor input: zero point 128" || fail "zero point of input"
grep -q '^const  %/res/bn/BatchNormalization_output_0_zero_point' "$TMP/dump" &&
    fail "the residual conv's output got a Q/DQ pair" ||
    ok "no Q/DQ on the residual conv's output (its Add reads the int32 sums)"
grep -q '^const  %logits_zero_point' "$TMP/dump" && fail "the logits got a Q/DQ pair" ||
    ok "no Q/DQ on the logits (the Gemm's accumulators leave as float)"
grep -q '^node   Gemm .*-> (%logits f32' "$TMP/dump" && ok "the Gemm writes the logits" ||
    fail "logits: $(grep 'logits' "$TMP/dump" | head -n 3)"
nq=$(grep -c '^node   QuantizeLinear ' "$TMP/dump")
ndq=$(grep -c '^node   DequantizeLinear ' "$TMP/dump")
[ "$nq" = 15 ] && [ "$ndq" = 35 ] && ok "15 QuantizeLinear, 35 DequantizeLinear" ||
    fail "$nq QuantizeLinear, $ndq DequantizeLinear"
# Scales: the u8 ones are T/255 where the table holds T/127: the Relu output of the first
# conv, 3c... in the table, is written as that scale * 127/255.
tab=$(awk -F': ' '$1 == "/stem/stem.0/stem.0.2/Relu_output_0" { print $2 }' "$TMP/f.trt")
got=$(sed -n 's|^const  %/stem/stem.0/stem.0.2/Relu_output_0_scale f32\[scalar\] min=\([^ ]*\) .*|\1|p' "$TMP/dump")
awk -v h="$tab" -v g="$got" 'BEGIN {
    # the float32 bits of the table entry, as a number
    v = 0; for (i = 1; i <= 8; i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    e = int(v / 8388608) % 256; m = v % 8388608
    s = (1 + m / 8388608) * 2 ^ (e - 127)
    want = s * 127 / 255
    exit !(g > 0 && (g - want) / want < 1e-5 && (want - g) / want < 1e-5) }' &&
    ok "u8 scale = table scale * 127/255 (T/255)" || fail "u8 scale $got from table $tab"
# The Add output oqc folds its Relu into stays float: no Q/DQ on it, one on the Relu.
grep -q '^const  %/res/Add_output_0_scale' "$TMP/dump" && fail "the Add output got a Q/DQ" ||
    ok "no Q/DQ between Add and its Relu (oqc folds the Relu into the Add)"

# 4. Numbers: `oqc run` on the export (ONNX semantics: QuantizeLinear rounds half to
#    even, float convs on dequantized int8 weights, float requantization) against oqc's
#    INT8 code (`oqc eval --save-int8`: round half away from zero, integer accumulation,
#    float multiplier) on the first 100 test images.  Not bit-exact, by design; measured
#    on this model: argmax agreement 1.00, max |diff| 0.031, 0.28% of max |logit| (both
#    compute the logits in float from the Gemm's accumulators).  Bounds: agreement >= 0.97, max |diff| <= 3% of max |logit|.
mknpy "100, 1, 1, 28, 28" $D/test_1000.npy "$TMP/x100.npy"
"$OQC" eval "$M" --data $D/test_1000.npy --limit 100 --table "$TMP/f.trt" \
    --save-int8 "$TMP/int8.npy" -q >/dev/null 2>"$TMP/err" || fail "eval: $(cat "$TMP/err")"
"$OQC" run "$TMP/q.onnx" --input "$TMP/x100.npy" -o "$TMP/run.npy" -q 2>"$TMP/err" ||
    fail "run on the export: $(cat "$TMP/err")"
# compare A.npy B.npy COLS: "agreement max_abs_diff rel_max_diff" of two float32 [S, COLS]
compare() {
    data_of "$1" | od -An -v -tf4 | tr -s ' ' '\n' | grep -v '^$' > "$TMP/a.txt"
    data_of "$2" | od -An -v -tf4 | tr -s ' ' '\n' | grep -v '^$' > "$TMP/b.txt"
    paste "$TMP/a.txt" "$TMP/b.txt" | awk -v c="$3" '
        { i = (NR - 1) % c; a = $1 + 0; b = $2 + 0
          if (i == 0 || a > ba) { ba = a; ia = i }
          if (i == 0 || b > bb) { bb = b; ib = i }
          d = a > b ? a - b : b - a; if (d > md) md = d
          m = b < 0 ? -b : b; if (m > mb) mb = m
          if (i == c - 1) { n++; agree += ia == ib } }
        END { printf "%.4f %.6g %.6g\n", n ? agree / n : 0, md, mb ? md / mb : 0 }'
}
set -- $(compare "$TMP/run.npy" "$TMP/int8.npy" 10)
echo "     oqc run on the export vs oqc INT8: argmax agreement $1, max |diff| $2, relative $3"
awk -v a="$1" -v r="$3" 'BEGIN { exit !(a >= 0.97 && r <= 0.03) }' &&
    ok "close to oqc's INT8 (agreement $1 >= 0.97, relative max error $3 <= 0.03)" ||
    fail "export vs INT8: agreement $1, relative max error $3"

# 5. --weight-type uint8: the same integers + 128 with zero point 128, so the same
#    dequantized weights and the same outputs bit for bit.
"$OQC" export-qdq "$M" --table "$TMP/f.trt" --weight-type uint8 -o "$TMP/u.onnx" -q ||
    fail "export --weight-type uint8"
"$OQC" dump "$TMP/u.onnx" >"$TMP/udump" 2>/dev/null
n=$(grep -c '^const  %.*_quantized u8\[.*min=1 \|^const  %.*_quantized u8\[.*max=255$' "$TMP/udump")
n128=$(grep -c '^const  %.*weight[^ ]*_zero_point u8\[.*min=128 max=128\|^const  %.*_zero_point u8\[[0-9]*\] values=\[128[,128]*\]' "$TMP/udump")
[ "$n" = 10 ] && [ "$n128" = 10 ] && ok "uint8 weights (in [1, 255]) with zero point 128" ||
    fail "uint8 weights: $n weights, $n128 zero points of 128"
"$OQC" run "$TMP/u.onnx" --input "$TMP/x100.npy" -o "$TMP/urun.npy" -q 2>/dev/null
same_data "$TMP/run.npy" "$TMP/urun.npy" && ok "uint8 weights: the same outputs bit for bit" ||
    fail "uint8 and int8 weights give different outputs"

# 5b. --weight-bits 7: every weight constant reaches +-63 and stays inside (the grid of
#     oqc compile --weight-bits 7).
"$OQC" export-qdq "$M" --table "$TMP/f.trt" --weight-bits 7 -o "$TMP/w7.onnx" -q ||
    fail "export --weight-bits 7"
"$OQC" dump "$TMP/w7.onnx" >"$TMP/w7dump" 2>/dev/null
n=$(grep -c '^const  %.*_quantized i8\[' "$TMP/w7dump")
bad=$(grep '^const  %.*_quantized i8\[' "$TMP/w7dump" | grep -v 'min=-63 \|max=63$' | wc -l)
big=$(grep '^const  %.*_quantized i8\[' "$TMP/w7dump" | grep -c 'min=-\(6[4-9]\|[7-9][0-9]\|1[0-9][0-9]\) \|max=\(6[4-9]\|[7-9][0-9]\|1[0-9][0-9]\)$')
[ "$n" = 10 ] && [ "$bad" = 0 ] && [ "$big" = 0 ] && ok "--weight-bits 7: 10 weights, each reaching +-63, none beyond" ||
    fail "--weight-bits 7: $n weights, $bad not at +-63, $big beyond"

# 6. --calib calibrates like compile/eval; with the XML table of the same calibration
#    (which keeps signedness and scales bit-exact) the file is the same, byte for byte;
#    two runs give the same bytes.
"$OQC" export-qdq "$M" --calib $D/calib_500.npy -o "$TMP/c.onnx" -q && ok "export-qdq --calib" ||
    fail "export-qdq --calib"
"$OQC" export-qdq "$M" --table "$TMP/f.xml" -o "$TMP/x.onnx" -q
cmp -s "$TMP/c.onnx" "$TMP/x.onnx" && ok "--calib and its XML table: identical files" ||
    fail "--calib and --table f.xml differ"
"$OQC" export-qdq "$M" --table "$TMP/f.xml" -o "$TMP/x2.onnx" -q
cmp -s "$TMP/x.onnx" "$TMP/x2.onnx" && ok "deterministic" || fail "two exports differ"

# 7. Bad usage: exit 1, a message, no file (and an existing file left alone).
mkdir -p "$TMP/e"
"$OQC" export-qdq "$M" -o "$TMP/e/a.onnx" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q 'INT8 needs thresholds' "$TMP/err" && [ ! -e "$TMP/e/a.onnx" ] &&
    ok "no table: exit 1, message, no file" || fail "no table: $st $(cat "$TMP/err")"
printf 'TRT-8601-EntropyCalibration\ninput: 3c88edfc\nno_such_tensor: 3c88edfc\n' > "$TMP/bad.trt"
"$OQC" export-qdq "$M" --table "$TMP/bad.trt" -o "$TMP/e/a.onnx" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "tensor 'no_such_tensor' is not in the optimised graph" "$TMP/err" &&
    [ ! -e "$TMP/e/a.onnx" ] && ok "unknown tensor in the table: exit 1, named, no file" ||
    fail "unknown tensor: $st $(cat "$TMP/err")"
"$OQC" export-qdq "$M" --table "$TMP/f.trt" -o "$TMP/nodir/a.onnx" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q 'nodir/a.onnx: cannot write' "$TMP/err" && [ ! -e "$TMP/nodir" ] &&
    ok "unwritable output: exit 1, message" || fail "unwritable: $st $(cat "$TMP/err")"
"$OQC" export-qdq "$M" --table "$TMP/f.trt" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q 'give the output model with -o' "$TMP/err" && ok "no -o: exit 1" ||
    fail "no -o: $st $(cat "$TMP/err")"
"$OQC" export-qdq "$M" --table "$TMP/f.trt" --weight-type int4 -o "$TMP/e/a.onnx" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "weight-type 'int4': expected int8 or uint8" "$TMP/err" &&
    [ ! -e "$TMP/e/a.onnx" ] && ok "bad --weight-type: exit 1" || fail "bad --weight-type: $st"
echo keep > "$TMP/e/old.onnx"
"$OQC" export-qdq "$M" --table "$TMP/bad.trt" -o "$TMP/e/old.onnx" 2>/dev/null
[ "$(cat "$TMP/e/old.onnx")" = keep ] && [ "$(ls "$TMP/e")" = old.onnx ] &&
    ok "a failed export leaves the old file and no temporary" || fail "files left: $(ls "$TMP/e")"
finish
