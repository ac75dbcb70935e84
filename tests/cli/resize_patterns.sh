#!/bin/sh
# resize_patterns.sh - pass "fold-patterns" and Resize/Upsample in INT8:
#   - x * HardSigmoid(x) (alpha 1/6) becomes HardSwish, a Mul by a default HardSigmoid
#     does not; both decomposed LayerNorms (last axis with gamma and beta, last two axes
#     without) become LayerNormalization, a mean over channels does not; -v counts them
#     (output preservation: test_passes);
#   - in INT8 a nearest Upsample moves codes: its output has its input's scale and
#     exactly its input's SQNR (oqc eval's per-layer table); linear Resizes run in INT8,
#     a cubic one stays float and -v says why;
#   - a ConvTranspose runs in INT8 (oqci_deconv) with an output SQNR of at least 25 dB
#     (test_quantize's floor for INT8 against float), in float and fixed requantization.
#   - Resize's opset 18/19 forms (axes, keep_aspect_ratio_policy, half_pixel_symmetric;
#     not in the node-test data) match ONNX Runtime's committed outputs
#     (models/resize18/make_resize18.py): nearest exactly, linear and cubic within 1e-5
#     of the largest value (oqc computes the weights in double, ONNX Runtime in float:
#     a few float ulps apart).
# Emitted C == oqc eval: compile_int8.sh.
. tests/cli/lib.sh
only_config default
T=models/tiny

# ops_after MODEL PASS: the op types of the IR after PASS, sorted, one line.
ops_after() {
    "$OQC" dump "$1" --after "$2" | sed -n 's/^node *\([A-Za-z]*\) .*/\1/p' | sort | tr '\n' ' '
}
o=$(ops_after $T/pattern_hardswish.onnx fold-patterns)
[ "$o" = "Add Conv HardSigmoid HardSwish Mul " ] &&
    ok "x * HardSigmoid(x, 1/6) -> HardSwish; x * HardSigmoid(x, 0.2) kept" || fail "hardswish: got '$o'"
o=$(ops_after $T/pattern_layernorm.onnx fold-patterns | tr ' ' '\n' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
[ "$o" = " 3 Add; 1 Div; 2 LayerNormalization; 1 Pow; 2 ReduceMean; 1 Sqrt; 1 Sub;" ] &&
    ok "two decomposed LayerNorms -> LayerNormalization; the channel mean's chain kept" ||
    fail "layernorm: got '$o'"
"$OQC" dump $T/pattern_layernorm.onnx --after fold-patterns -v 2>&1 >/dev/null |
    grep -q "fold-patterns: 0 HardSwish (x \* HardSigmoid(x)), 2 LayerNormalization" &&
    ok "-v counts the folds" || fail "no -v statistics"
"$OQC" dump $T/pattern_hardswish.onnx --after all --disable-pass fold-patterns |
    grep -c "^node *HardSigmoid" | grep -qx 2 && ok "--disable-pass fold-patterns keeps both HardSigmoids" ||
    fail "--disable-pass fold-patterns"

# INT8: 8 samples of squeezenet's image data
mknpy "8, 1, 3, 6, 6" models/tv/squeezenet1_1_in1.npy "$TMP/u.npy"
"$OQC" eval $T/upsample_nearest_cnn.onnx --data "$TMP/u.npy" --calib "$TMP/u.npy" -v \
    > "$TMP/u.txt" 2>&1 || fail "eval upsample_nearest_cnn"
r=$(awk '$1 == "r" {print $3, $4, $5}' "$TMP/u.txt")
u=$(awk '$1 == "u" && $2 == "Upsample" {print $3, $4, $5}' "$TMP/u.txt")
[ -n "$r" ] && [ "$r" = "$u" ] &&
    ok "nearest Upsample in INT8: type, scale and SQNR of its input ($u)" ||
    fail "Upsample '$u' vs its input '$r'"
mknpy "8, 1, 3, 6, 7" models/tv/squeezenet1_1_in1.npy "$TMP/l.npy"
"$OQC" eval $T/resize_linear_cnn.onnx --data "$TMP/l.npy" --calib "$TMP/l.npy" -v \
    > "$TMP/l.txt" 2>&1 || fail "eval resize_linear_cnn"
grep -q "Resize 2, Transpose 0, ConvTranspose 0, LayerNormalization 0, tables 0 of 0 nodes, views 0), 1 float" "$TMP/l.txt" &&
    ok "both linear Resizes in INT8" || fail "linear: $(grep 'nodes INT8' "$TMP/l.txt")"
grep -q "'Resize_4' (Resize) stays float: cubic resampling overshoots" "$TMP/l.txt" &&
    ok "-v says why the cubic Resize stays float" || fail "no -v reason for the cubic Resize"
R=models/resize18
for m in axes_sizes axes_scales keep_larger hps_linear hps_nearest; do
    "$OQC" run $R/$m.onnx --input $R/x.npy -o "$TMP/$m.npy" -q || { fail "$m: run"; continue; }
    line=$("${BUILD:-build}/tests/tools/npy_cmp" "$TMP/$m.npy" $R/${m}_ort.npy)
    rel=$(echo "$line" | sed -n 's/.* rel=\([^ ]*\) .*/\1/p')
    lim=1e-5
    case $m in *nearest|keep_larger) lim=0 ;; esac
    awk -v r="${rel:-1}" -v l=$lim 'BEGIN { exit !(r <= l) }' &&
        ok "$m (opset 18/19 form) matches ONNX Runtime (rel $rel <= $lim)" || fail "$m: $line"
done

mknpy "8, 4, 4, 4" models/tv/squeezenet1_1_in1.npy "$TMP/c.npy"
for r in float fixed; do
    "$OQC" eval $T/convtranspose_group.onnx --data "$TMP/c.npy" --calib "$TMP/c.npy" \
        --requant $r -v > "$TMP/c_$r.txt" 2>&1 || fail "eval convtranspose_group ($r)"
    db=$(sed -n "s/^output 'y': SQNR \([0-9.-]*\) dB centered.*/\1/p" "$TMP/c_$r.txt")
    grep -q "ConvTranspose 1, LayerNormalization 0, tables" "$TMP/c_$r.txt" &&
        awk -v v="${db:-0}" 'BEGIN { exit !(v >= 25) }' &&
        ok "ConvTranspose in INT8 ($r requantization): output SQNR $db dB >= 25" ||
        fail "ConvTranspose INT8 ($r): $(grep 'nodes INT8' "$TMP/c_$r.txt"), SQNR '$db'"
done
finish
