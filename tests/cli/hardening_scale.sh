#!/bin/sh
# hardening_scale.sh - zero, denormal, NaN and infinite scales and thresholds wherever
# oqc makes or reads one (issue 31, item 2).  A threshold of 0 is a calibration fact (a
# tensor that was 0 on every calibration sample, e.g. a dead channel's ReLU output): the
# tensor gets scale 1 (docs/calibration.md, "Zero thresholds") and compile, eval and
# export-qdq succeed.  A table scale that is 0 or denormal gets the same treatment; NaN,
# infinite or negative ones are refused with an error naming the file and tensor.
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

# runs_int8 NAME MODEL ARGS...: compile, eval (on $TMP/data.npy) and export-qdq succeed
runs_int8() {
    n=$1 m=$2
    shift 2
    out=$("$OQC" compile "$m" "$@" -o "$TMP/$n.c" -q 2>&1); st=$?
    [ $st = 0 ] && [ -s "$TMP/$n.c/$(basename "${m%.*}").c" ] && ok "$n: compile" ||
        fail "$n: compile exits $st: $out"
    out=$("$OQC" eval "$m" "$@" --data "$TMP/data.npy" 2>&1); st=$?
    if [ $st = 0 ] && echo "$out" | grep -q "top-1 agreement FP32 vs INT8: 1.0000" &&
       ! echo "$out" | grep -qi "nan"; then
        ok "$n: eval agrees with FP32"
    else
        fail "$n: eval exits $st: $out"
    fi
    out=$("$OQC" export-qdq "$m" "$@" -o "$TMP/$n.q.onnx" -q 2>&1); st=$?
    [ $st = 0 ] && [ -s "$TMP/$n.q.onnx" ] && ok "$n: export-qdq" ||
        fail "$n: export-qdq exits $st: $out"
}
npy_f32 "4, 3, 8, 8" "$TMP/data.npy"

# 1. all-zero calibration data: every activation's threshold is 0
m=models/tiny/conv_basic.onnx
"$OQC" calibrate "$m" --data "$TMP/data.npy" -o "$TMP/zero.cache" -q
check "zero data: calibrate exits 0" [ $? = 0 ]
check "zero data: x has threshold (scale) 0 in the table" grep -q '^x: 00000000$' "$TMP/zero.cache"
runs_int8 zero_table "$m" --table "$TMP/zero.cache"
runs_int8 zero_calib "$m" --calib "$TMP/data.npy"
for meth in max entropy percentile:99.9 mse; do
    out=$("$OQC" compile "$m" --calib "$TMP/data.npy" --method "$meth" -o "$TMP/m_$meth" -q 2>&1)
    check "zero data, --method $meth: compile exits 0 ($out)" [ $? = 0 ]
done
out=$("$OQC" calibrate "$m" --data "$TMP/data.npy" --format xml -o "$TMP/zero.xml" -q 2>&1)
check "zero data: xml table written ($out)" [ -s "$TMP/zero.xml" ]
runs_int8 zero_xml "$m" --table "$TMP/zero.xml"

# 2. a dead channel inside the network: Conv (zero weights, bias -1) -> Relu is 0 for
# every input, and the next Conv and Add read it
xm_begin dead; xm_input x f32 1x3x8x8
xm_const W1 f32 2x3x3x3 zeros 216; xm_const B1 f32 2 f32s -1 -1
xm_const W2 f32 2x2x1x1 f32s 1 2 -1 1; xm_const B2 f32 2 f32s 1 2
xm_node Conv x,W1,B1 c1 '<attr name="pads" type="INTS" value="1 1 1 1"/>'
xm_node Relu c1 r1; xm_node Conv r1,W2,B2 c2; xm_node Add c2,r1 y; xm_end y
head -c 128 /dev/zero >"$TMP/ones"
for i in $(seq 1 768); do f32s 1; done >>"$TMP/ones"
mknpy "4, 3, 8, 8" "$TMP/ones" "$TMP/ones.npy"
"$OQC" calibrate "$TMP/dead.xml" --data "$TMP/ones.npy" -o "$TMP/dead.cache" -q
check "dead channel: calibrate exits 0" [ $? = 0 ]
check "dead channel: r1 has threshold 0" grep -q '^r1: 00000000$' "$TMP/dead.cache"
cp "$TMP/ones.npy" "$TMP/data.npy"
runs_int8 dead "$TMP/dead.xml" --table "$TMP/dead.cache"
out=$("$OQC" eval "$TMP/dead.xml" --calib "$TMP/ones.npy" --requant fixed --data "$TMP/ones.npy" 2>&1)
check "dead channel, --requant fixed: eval exits 0 ($out)" [ $? = 0 ]

# 3. TensorRT cache lines: 0 and denormal get scale 1; NaN, infinities and negative
# scales (-0 too) are refused naming the line
for bits in 00000000 00000001 007fffff; do
    printf 'TRT-8601-EntropyCalibration\nx: %s\ny: 3c010204\n' "$bits" >"$TMP/t.cache"
    runs_int8 "trt_$bits" "$m" --table "$TMP/t.cache"
done
for bits in 7fc00000 7f800000 ff800000 bf800000 ffffffff 80000000; do
    printf 'TRT-8601-EntropyCalibration\nx: %s\ny: 3c010204\n' "$bits" >"$TMP/t.cache"
    out=$("$OQC" compile "$m" --table "$TMP/t.cache" -o "$TMP/bad_$bits" 2>&1); st=$?
    if [ $st = 1 ] && echo "$out" | grep -q "t.cache:2: tensor 'x'"; then
        ok "trt scale $bits refused: $out"
    else
        fail "trt scale $bits: exit $st: $out"
    fi
    [ -e "$TMP/bad_$bits" ] && fail "trt scale $bits: output left behind"
done

# 4. XML tables: threshold and scale 0 (and a denormal pair) work; NaN or Inf refused
xt() {
    printf '<?xml version="1.0"?>\n<oqc-calib version="1" samples="1">\n' >"$TMP/t.xml"
    printf '  <tensor name="x" method="entropy" unsigned="0" amax="%s" threshold="%s" scale="%s"/>\n' "$1" "$2" "$3" >>"$TMP/t.xml"
    printf '  <tensor name="y" method="entropy" unsigned="0" amax="1" threshold="1" scale="%s"/>\n' 0.00787401572 >>"$TMP/t.xml"
    printf '</oqc-calib>\n' >>"$TMP/t.xml"
}
xt 0 0 0
runs_int8 xml_zero "$m" --table "$TMP/t.xml"
xt 0 1.27e-43 1e-45
runs_int8 xml_denormal "$m" --table "$TMP/t.xml"
for v in nan inf -1; do
    xt 1 "$v" 0.00787401572
    out=$("$OQC" compile "$m" --table "$TMP/t.xml" -o "$TMP/badx" 2>&1); st=$?
    [ $st = 1 ] && echo "$out" | grep -q "t.xml" && ok "xml threshold $v refused: $out" ||
        fail "xml threshold $v: exit $st: $out"
done

# 5. zero-size tensors on the INT8 path: a Conv with no output channels and a chain
xm_begin empty; xm_input x f32 1x3x8x8; xm_const W f32 0x3x3x3 zeros 0
xm_node Conv x,W c; xm_node Relu c y; xm_end y
npy_f32 "1, 3, 8, 8" "$TMP/x1.npy"
out=$("$OQC" calibrate "$TMP/empty.xml" --data "$TMP/x1.npy" -o "$TMP/empty.cache" 2>&1)
check "empty tensors: calibrate exits 0 ($out)" [ $? = 0 ]
out=$("$OQC" compile "$TMP/empty.xml" --calib "$TMP/x1.npy" -o "$TMP/empty.c" -q 2>&1)
check "empty tensors: compile INT8 exits 0 ($out)" [ $? = 0 ]
out=$("$OQC" export-qdq "$TMP/empty.xml" --calib "$TMP/x1.npy" -o "$TMP/empty.q.onnx" -q 2>&1)
check "empty tensors: export-qdq exits 0 ($out)" [ $? = 0 ]
finish
