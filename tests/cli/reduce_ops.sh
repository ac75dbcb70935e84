#!/bin/sh
# reduce_ops.sh - ReduceMean/ReduceMax/ReduceMin/ReduceSum and pass "reduce-pool":
#   - the pass turns a spatial ReduceMean (one node, or the ResNet-8 chain of two
#     ReduceMean(axes=[-1], keepdims=0)) into GlobalAveragePool (+ Flatten), and leaves a
#     mean over channels alone;
#   - opset 18's axes input gives the bits of the opset 13 attribute form;
#   - in INT8 the rewritten head runs as the integer global average pool (-v counts it),
#     and without the pass the ReduceMean nodes stay float with their -v reason; either
#     way the emitted C (gcc -std=c99 -pedantic -Werror) gives `oqc eval`'s INT8 bits.
# The FP32 emitted code of the reductions is checked by compile_fp32.sh, their values
# by the ONNX node tests, and the pass's output preservation by test_passes.
. tests/cli/lib.sh
only_config default
T=models/tiny
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"

# ops_after MODEL PASS: the op types of the IR after PASS, sorted, one line.
ops_after() {
    "$OQC" dump "$1" --after "$2" | sed -n 's/^node *\([A-Za-z]*\) .*/\1/p' | sort | tr '\n' ' '
}
o=$(ops_after $T/reduce_mean_chain.onnx reduce-pool)
[ "$o" = "Flatten GlobalAveragePool " ] && ok "chain of two ReduceMean -> GlobalAveragePool + Flatten" ||
    fail "chain: got '$o'"
o=$(ops_after $T/reduce_mean_spatial_keepdims.onnx reduce-pool)
[ "$o" = "GlobalAveragePool " ] && ok "ReduceMean(axes 2,3, keepdims) -> GlobalAveragePool" ||
    fail "spatial keepdims: got '$o'"
o=$(ops_after $T/reduce_mean_opset18.onnx reduce-pool)
[ "$o" = "GlobalAveragePool " ] && ok "opset 18 ReduceMean (axes input) -> GlobalAveragePool" ||
    fail "opset 18: got '$o'"
o=$(ops_after $T/reduce_mean_axis1.onnx reduce-pool)
[ "$o" = "ReduceMean " ] && ok "a mean over channels stays ReduceMean" || fail "axis 1: got '$o'"
"$OQC" dump $T/reduce_mean_axis1.onnx --after reduce-pool -v 2>&1 >/dev/null |
    grep -q "not rewritten: it does not average a float tensor over exactly its spatial" &&
    ok "-v says why the channel mean is not rewritten" || fail "no -v reason"

# opset 18 (axes input [-2, -1]) and opset 13 (attribute [2, 3]) on the same input
mknpy "2, 3, 5, 7" models/tv/squeezenet1_1_in1.npy "$TMP/x.npy"
for m in reduce_mean_opset18 reduce_mean_spatial_keepdims; do
    "$OQC" run $T/$m.onnx --input "$TMP/x.npy" -o "$TMP/$m.npy" --no-opt -q ||
        fail "$m: run"
done
same_data "$TMP/reduce_mean_opset18.npy" "$TMP/reduce_mean_spatial_keepdims.npy" &&
    ok "opset 18 axes input == opset 13 axes attribute (same bits, without passes)" ||
    fail "opset 18 and 13 differ"

# INT8: Conv, Relu, ReduceMean x2, MatMul, Add (fold-bn: one Gemm); 16 samples of squeezenet's image
mknpy "16, 1, 3, 8, 8" models/tv/squeezenet1_1_in1.npy "$TMP/in.npy"
M=$T/reduce_cnn_tail.onnx
for mode in pass nopass; do
    extra=""
    [ $mode = nopass ] && extra="--disable-pass reduce-pool"
    "$OQC" eval $M --data "$TMP/in.npy" --calib "$TMP/in.npy" --save-int8 "$TMP/e_$mode.npy" \
        -v $extra > "$TMP/v_$mode.txt" 2>&1 || { fail "$mode: eval"; cat "$TMP/v_$mode.txt"; }
    "$OQC" compile $M -o "$TMP/c_$mode" --name tail --calib "$TMP/in.npy" -q $extra ||
        fail "$mode: compile"
    gcc $FLAGS -I "$TMP/c_$mode" -DOQC_MODEL_HEADER='"tail.h"' -DOQC_MODEL_PREFIX=tail \
        tests/emit/emitted_main.c "$TMP/c_$mode"/*.c -lm -o "$TMP/run_$mode" 2> "$TMP/cc.log" &&
        ok "$mode: gcc builds the INT8 model ($FLAGS)" || fail "$mode: build: $(head -3 "$TMP/cc.log")"
    "$TMP/run_$mode" "$TMP/in.npy" "$TMP/o_$mode.npy" > /dev/null &&
        same_data "$TMP/o_$mode.npy" "$TMP/e_$mode.npy" &&
        ok "$mode: 16 outputs bit-identical with oqc eval's INT8 path" ||
        fail "$mode: emitted C differs from oqc eval"
done
grep -q "Gemm 1, MatMul 0, .*GlobalAveragePool 1, .*views 1), 0 float" "$TMP/v_pass.txt" &&
    ok "with reduce-pool: the global mean runs as INT8 GlobalAveragePool (MatMul + Add: one Gemm)" ||
    fail "with reduce-pool: $(grep 'nodes INT8' "$TMP/v_pass.txt")"
grep -q "'ReduceMean_3' (ReduceMean) stays float: the INT8 backend has no kernel" "$TMP/v_nopass.txt" &&
    ok "without it: -v names the ReduceMean float island and why" ||
    fail "without it: no -v reason for ReduceMean"
finish
