#!/bin/sh
# hardening_dtypes.sh - every .npy dtype on every data path (issue 31, item 3): data
# whose element type is not the model input's is refused by run --input, calibrate
# --data, compile/eval/export-qdq --calib and eval --data alike (eval read float64 and
# uint8 bytes as float32 and reported an agreement of 0.1); labels must be integers.
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

m=models/tiny/conv_basic.onnx
# npy DESCR ITEMSIZE OUT: a .npy of shape (2, 3, 8, 8) and zeros of that dtype
npy() {
    h="{'descr': '$1', 'fortran_order': False, 'shape': (2, 3, 8, 8), }"
    { printf '\223NUMPY\001\000v\000%s' "$h"; printf '%*s\n' $((118 - ${#h} - 1)) ""
      zeros $((384 * $2)); } >"$3"
}
npy '<f4' 4 "$TMP/f4.npy"
out=$("$OQC" eval "$m" --data "$TMP/f4.npy" --calib "$TMP/f4.npy" -q 2>&1)
check "float32 data: eval exits 0" [ $? = 0 ]
for t in '<f8:8:f64' '<f2:2:f16' '|u1:1:u8' '|i1:1:i8' '<i2:2:i16' '<u2:2:u16' '<i4:4:i32' \
         '<u4:4:u32' '<i8:8:i64' '<u8:8:u64' '|b1:1:bool'; do
    descr=${t%%:*} rest=${t#*:}
    size=${rest%%:*} name=${rest#*:}
    f=$TMP/$name.npy
    npy "$descr" "$size" "$f"
    for cmd in "run $m --input $f" "calibrate $m --data $f -o $TMP/t.cache" \
               "eval $m --data $f --calib $TMP/f4.npy" "eval $m --data $TMP/f4.npy --calib $f" \
               "compile $m --calib $f -o $TMP/o" "export-qdq $m --calib $f -o $TMP/q.onnx"; do
        out=$($OQC $cmd 2>&1); st=$?
        if [ $st = 1 ] && echo "$out" | grep -q "holds $name data.* input 'x' is f32"; then
            ok "$name: ${cmd%% *} refuses"
        else
            fail "$name: $cmd: exit $st: $out"
        fi
    done
done
[ -e "$TMP/t.cache" ] || [ -e "$TMP/o" ] || [ -e "$TMP/q.onnx" ] && fail "an output was written" ||
    ok "no output written"
# labels: integers only
npy '<f4' 4 "$TMP/lab.npy"
out=$("$OQC" eval "$m" --data "$TMP/f4.npy" --calib "$TMP/f4.npy" --labels "$TMP/lab.npy" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "labels must be int64 or int32" && ok "float labels refused" ||
    fail "float labels: $out"
finish
