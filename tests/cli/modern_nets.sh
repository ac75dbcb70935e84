#!/bin/sh
# modern_nets.sh - the networks of models/tv/make_modern.py (written by `make models`;
# `make check-models` only), each as issue #26 asks of "the models people bring":
#   - FP32: the emitted C (gcc) on the reference input is within 1e-4 relative (max
#     |difference| / max |reference|) of PyTorch's output computed in float64.  Float32
#     kernels that sum in another order differ by a few units of the last place per
#     layer, and these untrained networks amplify that over 50-300 layers: fcn_resnet50
#     the most, where PyTorch's own float32 output is 7.4e-5 from its float64 one and
#     oqc's 7.7e-5 (against PyTorch's float32 output oqc was 1.2e-4 away, ONNX Runtime
#     1.1e-4); inception_v3 next, 2.6e-5.  1e-4 is the issue's bound.
#   - INT8: every node is INT8 except the ops listed in FLOAT_OK below, each documented
#     in docs/int8.md with the reason; the `-v` float list is printed.
#   - INT8: the emitted C builds with gcc and clang -std=c99 -pedantic -Werror and gives
#     the bits of `oqc eval`'s INT8 path on two calibration inputs.
# Thresholds: `--method percentile:99.99` ($NAMED: the subject is coverage, not the method)
# on the 16 calibration inputs make_modern.py writes.
. tests/cli/lib.sh
if [ -z "${OQC_TEST_MODELS:-}" ]; then
    echo "the networks of \`make models\`: make check-models only (not a skip: it runs there)"
    finish
    exit $?
fi
D=models/tv
CMP=${BUILD:-build}/tests/tools/npy_cmp
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
NETS="mobilenet_v3_small mobilenet_v3_large efficientnet_b0 shufflenet_v2_x1_0 regnet_y_400mf
      mnasnet1_0 convnext_tiny densenet121 inception_v3 resnet50 fcn_resnet50
      lraspp_mobilenet_v3_large espcn dscnn"
# Ops that may stay float, with the reason in docs/int8.md ("What stays float").
FLOAT_OK=""

calib_of() { # NET: its calibration file
    case $1 in
        inception_v3) echo $D/calib_3x299x299.npy ;;
        espcn) echo $D/calib_1x224x224.npy ;;
        dscnn) echo $D/calib_1x49x10.npy ;;
        *) echo $D/calib_3x224x224.npy ;;
    esac
}

for m in $NETS; do
    if [ ! -e $D/$m.onnx ] || [ ! -e $D/${m}_out1.npy ]; then
        fail "$D/$m.onnx missing: \`make check-models\` needs \`make models\` first"
        continue
    fi
    C=$(calib_of $m)
    # FP32 C against PyTorch
    if "$OQC" compile $D/$m.onnx --precision fp32 -o "$TMP/f_$m" --name $m -q 2>"$TMP/cc.log" &&
        cc_cached gcc $FLAGS -I "$TMP/f_$m" -DOQC_MODEL_HEADER="\"$m.h\"" -DOQC_MODEL_PREFIX="$m" \
            tests/emit/emitted_main.c "$TMP/f_$m"/*.c -lm -o "$TMP/f_$m.exe" 2>>"$TMP/cc.log" &&
        "$TMP/f_$m.exe" $D/${m}_in1.npy "$TMP/f_$m.npy" >/dev/null 2>>"$TMP/cc.log"; then
        line=$("$CMP" "$TMP/f_$m.npy" $D/${m}_out1.npy)
        rel=$(echo "$line" | sed 's/.* rel=\([^ ]*\).*/\1/')
        awk -v r="$rel" 'BEGIN { exit !(r + 0 <= 1e-4) }' &&
            ok "$m FP32 C: within 1e-4 of PyTorch (rel $rel)" || fail "$m FP32 C: $line"
    else
        fail "$m FP32: $(head -n 3 "$TMP/cc.log")"
    fi
    # INT8: what stays float
    "$OQC" compile $D/$m.onnx --calib "$C" $NAMED -o "$TMP/q_$m" --name $m -v >"$TMP/v_$m" 2>&1 ||
        { fail "$m INT8 compile: $(grep -i error "$TMP/v_$m" | head -n 3)"; continue; }
    grep "^quantize: .* nodes INT8" "$TMP/v_$m" | sed "s/^/  $m: /"
    bad=$(sed -n "s/^quantize: '.*' (\([A-Za-z]*\)) stays float: .*/\1/p" "$TMP/v_$m" |
        grep -vxF "$(printf '%s\n' $FLOAT_OK _)" | sort | uniq -c | tr -s ' \n' ' ')
    [ -z "$bad" ] && ok "$m INT8: every node INT8 but the documented float ops" ||
        { fail "$m INT8: float nodes:$bad"; grep 'stays float' "$TMP/v_$m" | head -n 3; }
    # INT8 C (gcc, clang) against oqc eval
    mknpy "2, $(sed -n "s/^\/\* input 0 '.*': f32\[\(.*\)\] \*\/$/\1/p" "$TMP/q_$m/$m.h" |
        sed 's/^1x//; s/x/, /g')" "$C" "$TMP/x_$m.npy"
    "$OQC" eval $D/$m.onnx --data "$TMP/x_$m.npy" --calib "$C" $NAMED --save-int8 "$TMP/e_$m.npy" \
        -q >/dev/null 2>"$TMP/cc.log" || { fail "$m eval: $(head -n 3 "$TMP/cc.log")"; continue; }
    for cc in gcc clang; do
        if cc_cached $cc $FLAGS -I "$TMP/q_$m" -DOQC_MODEL_HEADER="\"$m.h\"" -DOQC_MODEL_PREFIX="$m" \
            tests/emit/emitted_main.c "$TMP/q_$m"/*.c -lm -o "$TMP/q_$m.$cc" 2>"$TMP/cc.log" &&
            "$TMP/q_$m.$cc" "$TMP/x_$m.npy" "$TMP/q_$m.$cc.npy" >/dev/null 2>>"$TMP/cc.log" &&
            same_data "$TMP/q_$m.$cc.npy" "$TMP/e_$m.npy"; then
            ok "$m INT8 C ($cc -pedantic -Werror): bit-identical with oqc eval"
        else
            fail "$m INT8 C ($cc): $(head -n 3 "$TMP/cc.log")"
        fi
    done
done
finish
