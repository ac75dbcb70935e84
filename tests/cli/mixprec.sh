#!/bin/sh
# mixprec.sh - sensitivity analysis (`oqc eval --sensitivity`) and automatic mixed
# precision (--min-sqnr / --max-drop with --val) on the bundled Fashion-MNIST model:
# the report's shape and order, the search meeting its target on the validation data,
# the choice stored in the XML table (valid against docs/calib-table.rng) and
# reproduced bit for bit by a later --table, and clear errors.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
D=models/fashion
N=300
[ "${OQC_CONFIG:-default}" = san ] && N=60
# Validation inputs: the first N test images (float32) and their labels (int64), cut
# from the committed arrays (v1 .npy files with 128-byte headers).
mknpy "$N, 1, 28, 28" $D/test_1000.npy "$TMP/val.npy"
{ h="{'descr': '<i8', 'fortran_order': False, 'shape': ($N,), }"
  printf '\223NUMPY\001\000v\000%-117s\n' "$h"
  tail -c +129 $D/test_labels_1000.npy | head -c $((8 * N)); } >"$TMP/val_labels.npy"
VAL="--val $TMP/val.npy --val-labels $TMP/val_labels.npy"
# sqnr FILE: the centered output SQNR of an eval report
sqnr() { sed -n "s/^output 'logits': SQNR \([-0-9.a-z]*\) dB centered.*/\1/p" "$1"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'; }

# 1. Sensitivity: one row per INT8 layer (the model has 12: Conv 7, Gemm 1, MaxPool 2,
#    GlobalAveragePool 1, Add 1), sorted by the output SQNR with only that layer INT8,
#    lowest (most harmful) first.
"$OQC" eval $M --data "$TMP/val.npy" --labels "$TMP/val_labels.npy" --calib $D/calib_500.npy \
    --sensitivity -q >"$TMP/sens.txt" 2>&1 || fail "eval --sensitivity: $(tail -n 3 "$TMP/sens.txt")"
grep -q "^sensitivity over $N samples (12 INT8 layers)" "$TMP/sens.txt" &&
    ok "sensitivity: 12 layers over $N samples" || fail "sensitivity header: $(grep '^sensitivity' "$TMP/sens.txt")"
sed -n '/^  layer /,$p' "$TMP/sens.txt" | tail -n +2 >"$TMP/rows.txt"
[ "$(wc -l <"$TMP/rows.txt")" = 12 ] && ok "sensitivity: 12 rows" || fail "sensitivity rows: $(wc -l <"$TMP/rows.txt")"
awk '{ v = ($3 == "inf") ? 1e9 : $3 + 0; if (NR > 1 && v < prev) bad = 1; prev = v } END { exit bad }' \
    "$TMP/rows.txt" && ok "sensitivity: sorted most harmful first" || fail "sensitivity order"
# The first row's "only FP32" SQNR is the every-layer-INT8 figure plus that layer's
# share: keeping the most harmful layer float must not lower the output SQNR below
# every layer INT8 (same thresholds; only noise is removed).
all=$(sed -n 's/.*every layer INT8: SQNR \([0-9.]*\) dB.*/\1/p' "$TMP/sens.txt")
first_f=$(awk 'NR == 1 { print $6 }' "$TMP/rows.txt")
ge "$first_f" "$all" && ok "sensitivity: keeping the worst layer float helps ($all -> $first_f dB)" ||
    fail "sensitivity: worst layer float gives $first_f dB, all INT8 $all dB"

# The modern networks' element-wise layers are layers too: ConvNeXt's blocks
# (models/tiny/convnext_block.onnx: 3 depthwise Conv, 6 Gemm, 3 LayerNormalization, 3
# Gelu tables, 3 Add) on 4 inputs cut from squeezenet's image data; a layer
# --fp32-nodes can keep float is one the search can choose.
mknpy "4, 1, 8, 6, 6" models/tv/squeezenet1_1_in4.npy "$TMP/cx.npy"
"$OQC" eval models/tiny/convnext_block.onnx --data "$TMP/cx.npy" --calib "$TMP/cx.npy" $NAMED \
    --sensitivity -q >"$TMP/sensx.txt" 2>&1 || fail "convnext eval --sensitivity: $(tail -n 3 "$TMP/sensx.txt")"
sed -n '/^  layer /,$p' "$TMP/sensx.txt" | tail -n +2 | awk '{ print $2 }' | sort | uniq -c |
    awk '{ printf "%s %s ", $2, $1 }' >"$TMP/opsx.txt"
grep -q "^sensitivity over 4 samples (18 INT8 layers)" "$TMP/sensx.txt" &&
    [ "$(cat "$TMP/opsx.txt")" = "Add 3 Conv 3 Gelu 3 Gemm 6 LayerNormalization 3 " ] &&
    ok "sensitivity: ConvNeXt's LayerNormalization and Gelu are layers ($(cat "$TMP/opsx.txt"))" ||
    fail "convnext sensitivity: $(grep '^sensitivity' "$TMP/sensx.txt"); $(cat "$TMP/opsx.txt")"

# The same table in the calibration report (calibrate --report --sensitivity --val).
"$OQC" calibrate $M --data $D/calib_500.npy -o "$TMP/r.trt" --report "$TMP/r.html" --sensitivity \
    $VAL -q >"$TMP/rep.txt" 2>&1 || fail "calibrate --report --sensitivity: $(tail -n 3 "$TMP/rep.txt")"
rows=$(sed -n '/<section id="sensitivity">/,/<\/section>/p' "$TMP/r.html" | grep -c '^<tr><td class="num">')
[ "$rows" = 12 ] && ok "report: Sensitivity section with 12 layers" || fail "report sensitivity rows: $rows"
first_r=$(sed -n '/<section id="sensitivity">/,/<\/section>/p' "$TMP/r.html" |
    sed -n 's/^<tr><td class="num">1<\/td><td class="name">\([^<]*\)<.*/\1/p')
first_e=$(awk 'NR == 1 { print $1 }' "$TMP/rows.txt")
[ -n "$first_r" ] && [ "$first_r" = "$first_e" ] && ok "report and eval agree on the most harmful layer ($first_r)" ||
    fail "report first layer '$first_r', eval '$first_e'"

# 2. Search with a target every layer INT8 misses: all INT8 + 3 dB.
target=$(awk -v a="$all" 'BEGIN { printf "%.2f", a + 3 }')
"$OQC" calibrate $M --data $D/calib_500.npy --format xml -o "$TMP/mp.xml" --min-sqnr "$target" \
    $VAL >"$TMP/search.txt" 2>&1 || fail "calibrate --min-sqnr: $(tail -n 3 "$TMP/search.txt")"
k=$(sed -n 's/.*keeping \([0-9]*\) of 12 layers float.*/\1/p' "$TMP/search.txt")
[ -n "$k" ] && [ "$k" -ge 1 ] && [ "$k" -lt 12 ] && ok "search keeps $k of 12 layers float for $target dB" ||
    fail "search result: $(grep 'keeping' "$TMP/search.txt")"
[ "$(grep -c '<float-layer ' "$TMP/mp.xml")" = "$k" ] && ok "table lists the $k float layers" ||
    fail "float-layer elements: $(grep -c '<float-layer ' "$TMP/mp.xml")"
xmllint --noout --relaxng docs/calib-table.rng "$TMP/mp.xml" 2>/dev/null &&
    ok "table with float layers is valid against calib-table.rng" || fail "schema validation"
# The target holds on the validation data with the table alone (no search).
"$OQC" eval $M --data "$TMP/val.npy" --table "$TMP/mp.xml" --save-int8 "$TMP/tab.npy" >"$TMP/ev.txt" 2>&1 ||
    fail "eval --table: $(tail -n 3 "$TMP/ev.txt")"
s=$(sqnr "$TMP/ev.txt")
ge "$s" "$target" && ok "--table reproduces the target: $s >= $target dB" || fail "--table SQNR $s < $target"
# The same bits as naming the layers with --fp32-nodes on the same thresholds.
list=$(sed -n 's/.*<float-layer name="\([^"]*\)".*/\1/p' "$TMP/mp.xml" | paste -sd, -)
sed '/<float-layer /d' "$TMP/mp.xml" >"$TMP/plain.xml"
"$OQC" eval $M --data "$TMP/val.npy" --table "$TMP/plain.xml" --fp32-nodes "$list" \
    --save-int8 "$TMP/named.npy" -q >/dev/null 2>&1 &&
    cmp -s "$TMP/tab.npy" "$TMP/named.npy" && ok "table's float layers = --fp32-nodes, bit for bit" ||
    fail "table float layers and --fp32-nodes differ"
# compile with the search and --save-table, then compile from that table: same C.
"$OQC" compile $M -o "$TMP/c1" --calib $D/calib_500.npy --min-sqnr "$target" $VAL \
    --save-table "$TMP/saved.xml" -q >/dev/null 2>&1 || fail "compile --min-sqnr --save-table"
"$OQC" compile $M -o "$TMP/c2" --table "$TMP/saved.xml" -q >/dev/null 2>&1 || fail "compile --table saved"
diff -r "$TMP/c1" "$TMP/c2" >/dev/null && ok "compile --table of the saved choice: identical C" ||
    fail "compile from the saved table differs"

# The emitted C of the mixed-precision model (float layers between INT8 ones) gives
# the bits of `oqc eval` with the same table, in both requantization modes.
for r in float fixed; do
    emitted_is_eval fmix_$r $M "$TMP/val.npy" --table "$TMP/mp.xml" --requant $r &&
        ok "emitted C with float layers ($r requantization) = oqc eval, bit for bit" ||
        fail "emitted C with float layers ($r): $(head -n 3 "$TMP/cc.log")"
done

# 3. A target every layer INT8 meets keeps everything INT8.
"$OQC" eval $M --data "$TMP/val.npy" --calib $D/calib_500.npy --min-sqnr 1 $VAL \
    >"$TMP/easy.txt" 2>&1; st=$?
[ $st = 0 ] && grep -q 'every layer INT8 meets the target' "$TMP/easy.txt" &&
    ok "an easy target keeps every layer INT8" || fail "easy target: $(head -n 2 "$TMP/easy.txt")"
# --max-drop with labels: the drop on the validation data stays within it.
"$OQC" calibrate $M --data $D/calib_500.npy --format xml -o "$TMP/md.xml" --max-drop 0 $VAL \
    >"$TMP/md.txt" 2>&1 || fail "calibrate --max-drop: $(tail -n 3 "$TMP/md.txt")"
"$OQC" eval $M --data "$TMP/val.npy" --labels "$TMP/val_labels.npy" --table "$TMP/md.xml" -q \
    >"$TMP/mdev.txt" 2>&1
dp=$(sed -n 's/.*INT8 [0-9.]* (\([-+0-9.]*\) points).*/\1/p' "$TMP/mdev.txt")
ge "$dp" 0 && ok "--max-drop 0: top-1 change $dp points on the validation data" ||
    fail "--max-drop 0: change '$dp'"

# 4. Errors: exit 1 with a message naming the problem, no table written.
err() { # NAME PATTERN ARGS...
    n=$1; p=$2; shift 2
    "$OQC" "$@" >"$TMP/err.txt" 2>&1; st=$?
    [ $st = 1 ] && grep -q -- "$p" "$TMP/err.txt" && ok "error: $n" || fail "error $n: exit $st: $(cat "$TMP/err.txt")"
}
err "--max-drop without labels" "needs labels" calibrate $M --data $D/calib_500.npy --format xml \
    -o "$TMP/x.xml" --max-drop 1 --val "$TMP/val.npy"
err "target with a TensorRT table" "XML table only" calibrate $M --data $D/calib_500.npy \
    -o "$TMP/x.trt" --min-sqnr 30 $VAL
err "--sensitivity without --report" "give --report" calibrate $M --data $D/calib_500.npy \
    -o "$TMP/x.trt" --sensitivity $VAL
err "bad --min-sqnr" "must be a number" eval $M --data "$TMP/val.npy" --calib $D/calib_500.npy --min-sqnr abc $VAL
err "--min-sqnr without --val" "validation" compile $M -o "$TMP/c3" --calib $D/calib_500.npy --min-sqnr 30
[ ! -e "$TMP/x.xml" ] && [ ! -e "$TMP/x.trt" ] && [ ! -e "$TMP/c3" ] && ok "errors wrote nothing" ||
    fail "an error left output behind"
printf '<?xml version="1.0"?>\n<oqc-calib version="1" samples="0">\n  <float-layer name="a,b"/>\n</oqc-calib>\n' >"$TMP/bad.xml"
err "float-layer name with a comma" "no comma" eval $M --data "$TMP/val.npy" --table "$TMP/bad.xml"
finish
