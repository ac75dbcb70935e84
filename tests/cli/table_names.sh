#!/bin/sh
# table_names.sh - every reader takes a calibration table named *.xml as XML and any
# other name as a TensorRT cache, so `calibrate -o` writes the format its name says
# (unless --format says otherwise), refuses a --format the readers would misread, and
# `--save-table` (always XML) must be named *.xml; a refused command writes nothing.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
mknpy "16, 1, 28, 28" models/fashion/calib_500.npy "$TMP/c.npy"
C="calibrate $M --data $TMP/c.npy -q"

"$OQC" $C -o "$TMP/a.xml" >/dev/null 2>&1 && head -c 200 "$TMP/a.xml" | grep -q "<oqc-calib" &&
    ok "-o NAME.xml writes XML" || fail "-o NAME.xml writes XML"
"$OQC" $C -o "$TMP/a.cache" >/dev/null 2>&1 && head -n 1 "$TMP/a.cache" | grep -q "^TRT-" &&
    ok "-o NAME.cache writes a TensorRT cache" || fail "-o NAME.cache writes a TensorRT cache"
# each table is read back by eval (the reader picks by name)
for t in a.xml a.cache; do
    "$OQC" eval $M --data "$TMP/c.npy" --table "$TMP/$t" -q >/dev/null 2>&1 &&
        ok "eval --table $t" || fail "eval --table $t"
done
"$OQC" $C --format xml -o "$TMP/b.xml" >/dev/null 2>&1 && cmp -s "$TMP/a.xml" "$TMP/b.xml" &&
    ok "--format xml -o NAME.xml: the same bytes" || fail "--format xml -o NAME.xml"

# misnamed: refused with a message naming the path, nothing written
for c in "--format xml -o $TMP/m1.trt" "--format trt -o $TMP/m2.xml"; do
    out=$("$OQC" $C $c 2>&1); st=$?
    f=${c##* }
    [ $st = 1 ] && printf '%s' "$out" | grep -q "$f: tables are read as XML exactly when" &&
        [ ! -e "$f" ] && ok "refused: $c" || fail "refused: $c (exit $st: $out)"
done
out=$("$OQC" compile $M --calib "$TMP/c.npy" --save-table "$TMP/s.tab" -o "$TMP/out" 2>&1); st=$?
[ $st = 1 ] && printf '%s' "$out" | grep -q "save-table $TMP/s.tab: the table is XML" &&
    [ ! -e "$TMP/s.tab" ] && [ ! -e "$TMP/out" ] && ok "refused: --save-table NAME.tab" ||
    fail "refused: --save-table NAME.tab (exit $st: $out)"
finish
