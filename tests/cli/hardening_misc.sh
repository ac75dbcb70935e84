#!/bin/sh
# hardening_misc.sh - small hardening items of issue 31:
#   10. export-qdq of models without weights (UBSan: memcpy from NULL), every one of
#       the bundled weightless tiny models (this script runs in the san configuration too)
#   12. error messages show control characters from names (ESC, BEL, CR) as \xHH
#   13. run --input DIR, a .npy 'fortran_order' that is neither True nor False, and
#       unknown pass names or help topics are errors (exit 1)
#   15. the calibration table and report show what INT8 runs for a MaxPool reading an
#       eliminated Concat's buffer (u8 at the buffer's scale), and the buffer's op
#   16. eval/compile/calibrate -v show each pass's statistics once, and never the
#       "no calibration given" of a quantize pass run before calibration
#   17. the README.md emitted with a model names the runtime files it comes with; the
#       Makefile's demo comment and the node-test summary name what they refer to
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

# 10
for m in relu_basic sigmoid_basic tanh_basic maxpool_basic globalavgpool_basic transpose_perm \
         softmax_2d; do
    f=models/tiny/$m.onnx
    "$OQC" dump "$f" | grep -q "const" && { fail "$m has constants: not a weightless model"; continue; }
    shape=$("$OQC" dump "$f" | sed -n 's/^input .*\[\(.*\)\].*/\1/p' | head -1)
    npy_f32 "$(echo "$shape" | sed 's/x/, /g')" "$TMP/$m.npy"
    out=$("$OQC" export-qdq "$f" --calib "$TMP/$m.npy" -o "$TMP/$m.q.onnx" -q 2>&1); st=$?
    [ $st = 0 ] && [ -s "$TMP/$m.q.onnx" ] && ok "export-qdq $m" || fail "export-qdq $m: exit $st: $out"
done

# 12: a hostile tensor name in an error from the XML loader, shape inference and a table
name='a\x1b[31m\x07\x0dz'
xm_begin ctl; xm_input "$name" f32 3x4; xm_const i i64 1 i64s 5; xm_node Gather "$name",i y; xm_end y
out=$("$OQC" check "$TMP/ctl.xml" 2>&1)
st=$?
raw=$(printf '%s' "$out" | tr -d '\033\007\015')
[ $st = 1 ] && [ "$raw" = "$out" ] && echo "$out" | grep -q 'a\\x1b\[31m\\x07\\x0dz' &&
    ok "control characters escaped in a shape error: $out" || fail "shape error: $st: $(printf '%s' "$out" | od -c | head -3)"
printf 'TRT-8601-EntropyCalibration\nbad\033]0;title\007name: 7fc00000\n' >"$TMP/ctl.cache"
out=$("$OQC" compile models/tiny/relu_basic.onnx --table "$TMP/ctl.cache" -o "$TMP/o" 2>&1)
raw=$(printf '%s' "$out" | tr -d '\033\007')
[ "$raw" = "$out" ] && echo "$out" | grep -q 'bad\\x1b' && ok "control characters escaped in a table error" ||
    fail "table error: $(printf '%s' "$out" | od -c | head -3)"
out=$("$OQC" check "$TMP/$(printf 'x\033[2J')" 2>&1)
raw=$(printf '%s' "$out" | tr -d '\033')
[ "$raw" = "$out" ] && ok "control characters escaped in a file name" || fail "file name: $out"

# 13
mkdir -p "$TMP/dir"
out=$("$OQC" run models/tiny/relu_basic.onnx --input "$TMP/dir" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "no .npy, .pb, .jpg, .jpeg or .png files in the directory" &&
    ! echo "$out" | grep -q 9223372036854775807 &&
    ok "run --input DIR: $out" || fail "run --input DIR: $out"
for fo in Maybe 0 "'False'" Falsey; do
    h="{'descr': '<f4', 'fortran_order': $fo, 'shape': (1, 4), }"
    { printf '\223NUMPY\001\000v\000%s' "$h"; printf '%*s\n' $((118 - ${#h} - 1)) ""; zeros 16; } >"$TMP/fo.npy"
    out=$("$OQC" run models/tiny/relu_basic.onnx --input "$TMP/fo.npy" 2>&1)
    [ $? = 1 ] && echo "$out" | grep -q "'fortran_order' must be True or False" &&
        ok "fortran_order $fo: $out" || fail "fortran_order $fo: $out"
done
h="{'descr': '<f4', 'fortran_order': True, 'shape': (1, 4), }"
{ printf '\223NUMPY\001\000v\000%s' "$h"; printf '%*s\n' $((118 - ${#h} - 1)) ""; zeros 16; } >"$TMP/fo.npy"
out=$("$OQC" run models/tiny/relu_basic.onnx --input "$TMP/fo.npy" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "Fortran order is not supported" && ok "fortran_order True: $out" ||
    fail "fortran_order True: $out"
for args in "dump models/tiny/relu_basic.onnx --disable-pass bogus" \
            "dump models/tiny/relu_basic.onnx --passes cleanup,bogus" \
            "check models/tiny/relu_basic.onnx --no-opt --disable-pass bogus" \
            "run models/tiny/relu_basic.onnx --input $TMP/fo.npy --disable-pass fold_bn"; do
    out=$("$OQC" $args 2>&1)
    [ $? = 1 ] && echo "$out" | grep -q "unknown pass" && ok "$args: $out" || fail "$args: $out"
done
out=$("$OQC" check models/tiny/relu_basic.onnx --disable-pass fold-bn,fuse-cbr -q 2>&1)
check "known pass names accepted ($out)" [ $? = 0 ]
out=$("$OQC" help bogus 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "unknown command 'bogus'" && ok "help bogus exits 1" || fail "help bogus: $out"
"$OQC" help run >/dev/null
check "help run exits 0" [ $? = 0 ]

# 16
f=models/fashion/fashion_cnn.onnx
"$OQC" calibrate "$f" --data models/fashion/calib_500.npy -o "$TMP/f.xml" --format xml -q
for args in "eval $f --data models/fashion/test_1000.npy --table $TMP/f.xml --limit 4" \
            "eval $f --data models/fashion/test_1000.npy --calib $TMP/x.npy --batch 2 --limit 4" \
            "compile $f --table $TMP/f.xml -o $TMP/fc" \
            "export-qdq $f --table $TMP/f.xml -o $TMP/fq.onnx" \
            "calibrate $f --data $TMP/x.npy --batch 2 -o $TMP/f2.cache"; do
    case $args in *x.npy*) [ -f "$TMP/x.npy" ] || {
        h="{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1, 28, 28), }"
        { printf '\223NUMPY\001\000v\000%s' "$h"; printf '%*s\n' $((118 - ${#h} - 1)) ""
          tail -c +129 models/fashion/calib_500.npy | head -c 12544; } >"$TMP/x.npy"; } ;; esac
    out=$("$OQC" $args -v 2>&1); st=$?
    bad=
    for p in cleanup fold-bn fuse-cbr concat-elim; do
        [ "$(echo "$out" | grep -c "^$p: ")" = 1 ] || bad="$bad $p x$(echo "$out" | grep -c "^$p: ")"
    done
    case $args in calibrate*) ;; *) echo "$out" | grep -q "no calibration given" && bad="$bad no-calibration-line" ;; esac
    [ $st = 0 ] && [ -z "$bad" ] && ok "${args%% *} -v: each pass once" || fail "$args -v: exit $st,$bad"
done

# 15
"$OQC" calibrate "$f" --data models/fashion/calib_500.npy -o "$TMP/f15.xml" --format xml \
    --report "$TMP/f15.html" -q
attrs() { sed -n "s/.*name=\"$1\" method=\"[^\"]*\" \(unsigned=.*\)\/>/\1/p" "$TMP/f15.xml" | sed 's/amax="[^"]*" //'; }
a=$(attrs '\/pool2\/MaxPool_output_0'); b=$(attrs '\/incep\/Concat_output_0')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "pool2 has the concat buffer's quantization: $a" ||
    fail "pool2: '$a', concat buffer: '$b'"
echo "$a" | grep -q 'unsigned="1"' && ok "pool2 is unsigned" || fail "pool2 signed: $a"
row=$(grep -o '/incep/Concat_output_0</a></td><td>[^<]*' "$TMP/f15.html" | head -1)
case "$row" in *"Concat (in place)") ok "report: the buffer's op ($row)" ;;
               *) fail "report: the buffer's op: $row" ;; esac
out=$("$OQC" eval "$f" --data models/fashion/test_1000.npy --table "$TMP/f15.xml" --limit 4 2>&1)
sc=$(echo "$out" | awk '$1 == "/pool2/MaxPool_output_0" {print $3, $4}')
want=$(echo "$a" | sed 's/.*scale="\([^"]*\)".*/\1/')
echo "$sc" | awk -v w="$want" '{exit !($1 == "u8" && ($2 - w) * ($2 - w) < 1e-12)}' &&
    ok "eval runs pool2 as the table says ($sc, table $want)" || fail "eval pool2: '$sc', table $want"

# 17
for p in int8 fp32; do
    if [ $p = int8 ]; then
        npy_f32 "2, 3, 8, 8" "$TMP/cb.npy"
        "$OQC" compile models/tiny/conv_basic.onnx --calib "$TMP/cb.npy" -o "$TMP/r8" -q
        d=$TMP/r8
    else
        "$OQC" compile models/tiny/conv_basic.onnx --precision fp32 -o "$TMP/r32" -q
        d=$TMP/r32
    fi
    bad=
    for fam in oqcf oqci; do
        named=0; present=0
        grep -q "\`${fam}_\*\`" "$d/README.md" && named=1
        ls "$d" | grep -q "^${fam}_" && present=1
        [ $named = $present ] || bad="$bad $fam(named $named, present $present)"
    done
    [ -z "$bad" ] && ok "$p README names its runtime files" || fail "$p README:$bad: $(grep copies "$d/README.md")"
done
grep -B3 '^demo:' Makefile | grep -q 'scripts/demo.sh' && ok "Makefile demo comment names scripts/demo.sh" ||
    fail "Makefile demo comment: $(grep -B3 '^demo:' Makefile)"
grep "left out: " tests/run.sh | grep -q 'tests/tools/onnx_node_tests' &&
    ok "node-test summary names the tool" || fail "node-test summary: $(grep 'left out: ' tests/run.sh)"
finish
