#!/bin/sh
# check_truth.sh - one truth for "supported": over every bundled model (models/**.onnx),
# `oqc check`'s exit status agrees with what the commands actually do:
#   - check --for run,fp32 exits 0 exactly when `oqc run` (on zero inputs) and
#     `oqc compile --precision fp32` both succeed;
#   - for models calibration can take (one float input), check --for int8 exits 0
#     exactly when `oqc calibrate` (on zero inputs) then `oqc compile --table` succeed;
#   - check (the default: run, fp32 and int8) exits 1 for cleanup_fold_limit.onnx,
#     naming ConstantOfShape and the C emitter.
# A model whose inputs have dynamic dimensions is compared on compile only (run needs
# concrete inputs); the counts are printed.
. tests/cli/lib.sh

# npy_zero DTYPE SHAPE OUT: a .npy of zeros; DTYPE as oqc dump prints it (f32, i64, ...),
# SHAPE "2x3"; 1 when the dtype has no .npy form here
npy_zero() {
    case $1 in
    f32) ds='<f4' sz=4 ;; f64) ds='<f8' sz=8 ;; f16) ds='<f2' sz=2 ;;
    i64) ds='<i8' sz=8 ;; i32) ds='<i4' sz=4 ;; i16) ds='<i2' sz=2 ;; i8) ds='|i1' sz=1 ;;
    u8) ds='|u1' sz=1 ;; u16) ds='<u2' sz=2 ;; bool) ds='|b1' sz=1 ;;
    *) return 1 ;;
    esac
    n=1
    for dim in $(echo "$2" | tr 'x' ' '); do n=$((n * dim)); done
    { npy_header "$ds" "$(echo "$2" | sed 's/x/, /g')"
      head -c $((n * sz)) /dev/zero; } >"$3"
}

nmodels=0 nrun=0 nint8=0 bad=0
for m in $(find models -name '*.onnx' | sort); do
    nmodels=$((nmodels + 1))
    "$OQC" check "$m" --for run,fp32 -q >/dev/null 2>"$TMP/check.err"; c=$?
    "$OQC" compile "$m" --precision fp32 -o "$TMP/c" -q >/dev/null 2>"$TMP/compile.err"; f=$?
    rm -rf "$TMP/c"
    # inputs: zeros of each static input shape
    args="" static=1 i=0
    "$OQC" dump "$m" 2>/dev/null | sed -n 's/^input  *%\([^ ]*\) \([a-z0-9]*\)\[\([^]]*\)\].*/\1 \2 \3/p' >"$TMP/inputs"
    while read -r name dt shp; do
        i=$((i + 1))
        case $shp in *[!0-9x]*) static=0; continue ;; esac
        npy_zero "$dt" "$shp" "$TMP/in$i.npy" || { static=0; continue; }
        args="$args --input $name=$TMP/in$i.npy"
    done <"$TMP/inputs"
    [ -s "$TMP/inputs" ] || static=0
    if [ $static = 1 ]; then
        nrun=$((nrun + 1))
        # shellcheck disable=SC2086
        "$OQC" run "$m" $args -o "$TMP/out" -q >/dev/null 2>"$TMP/run.err"; r=$?
        rm -rf "$TMP/out" # (a file, or a folder of one .npy per output)
        want=$([ $r = 0 ] && [ $f = 0 ] && echo 0 || echo 1)
    else
        r=- want=$f
    fi
    if [ "$c" != "$want" ]; then
        bad=$((bad + 1))
        fail "$m: check --for run,fp32 exits $c, but run $r, compile --precision fp32 $f: $(head -c 300 "$TMP/check.err") / $(head -c 200 "$TMP/compile.err") / $(head -c 200 "$TMP/run.err" 2>/dev/null)"
    fi
    # INT8: models calibration takes (one float input of static shape)
    if [ $static = 1 ] && [ "$(wc -l <"$TMP/inputs")" = 1 ] && grep -q ' f32 ' "$TMP/inputs"; then
        nint8=$((nint8 + 1))
        "$OQC" check "$m" --for int8 -q >/dev/null 2>"$TMP/check8.err"; c8=$?
        "$OQC" calibrate "$m" --data "$TMP/in1.npy" -o "$TMP/t.trt" -q >/dev/null 2>"$TMP/cal.err" &&
            "$OQC" compile "$m" --table "$TMP/t.trt" -o "$TMP/c8" -q >/dev/null 2>"$TMP/c8.err"; q=$?
        rm -rf "$TMP/c8" "$TMP/t.trt"
        if [ "$c8" != "$q" ]; then
            bad=$((bad + 1))
            fail "$m: check --for int8 exits $c8, calibrate + compile int8 $q: $(head -c 300 "$TMP/check8.err") / $(head -c 300 "$TMP/cal.err") $(head -c 300 "$TMP/c8.err" 2>/dev/null)"
        fi
    fi
done
[ $bad = 0 ] && ok "check agrees with run and compile --precision fp32 on all $nmodels models ($nrun also run), with calibrate + compile int8 on $nint8" ||
    fail "$bad disagreements over $nmodels models"

m=models/tiny/cleanup_fold_limit.onnx
"$OQC" check $m >"$TMP/out" 2>"$TMP/err"; st=$?
[ $st = 1 ] && grep -q "node 'ConstantOfShape_2' (ConstantOfShape): the C emitter does not support this operator yet \[refused by: compile --precision fp32, compile --precision int8\]" "$TMP/err" &&
    grep -q "not supported by: compile --precision fp32, compile --precision int8" "$TMP/err" &&
    ok "cleanup_fold_limit.onnx: check exits 1, names the node, the emitter and the commands" ||
    fail "cleanup_fold_limit: exit $st: $(cat "$TMP/out" "$TMP/err")"
"$OQC" check $m --for run -q && ok "cleanup_fold_limit.onnx: check --for run exits 0 (run accepts it)" ||
    fail "check --for run"
"$OQC" check $m --for bogus 2>"$TMP/err"; st=$?
[ $st = 1 ] && grep -q "expected run, fp32, int8 or calibrate" "$TMP/err" && ok "--for bogus: error" ||
    fail "--for bogus: exit $st"
"$OQC" check models/tiny/cast_i2f.onnx --for calibrate 2>"$TMP/err"; st=$?
[ $st = 1 ] && grep -q "input 'x' is i64; calibration needs a float input" "$TMP/err" &&
    ok "--for calibrate: an int64 input refused, as calibrate refuses it" || fail "--for calibrate: exit $st $(cat "$TMP/err")"

# unknown help topics are errors
"$OQC" help bogus >/dev/null 2>"$TMP/err"; st=$?
[ $st = 1 ] && grep -q "unknown command 'bogus'" "$TMP/err" && ok "oqc help bogus: exit 1" ||
    fail "oqc help bogus: exit $st"
finish
