#!/bin/sh
# convnext_int8.sh - ConvNeXt-style blocks (models/tiny/make_convnext_models.py: three
# blocks with GELU from Erf spelled three ways, MatMul + bias, layer scale before or
# after the Transpose back; matmul_chains: the MatMul fold's positive and negative
# cases; gelu_opset20: the Gelu operator, both approximations):
#   - FP32: oqc run, with the passes and without (--no-opt), within 1e-6 of the largest
#     value of the script's float64 numpy reference (measured 2.2e-7: float32 rounding
#     over the ~70 nodes; the folds reassociate products, a few ulps);
#   - pass fold-patterns folds each GELU spelling into one Gelu, fold-bn every bias Add
#     and layer-scale Mul into its MatMul (6 Gemms, no MatMul left in the blocks; in
#     matmul_chains 1 Gemm, 1 scaled MatMul, 2 kept); -v counts both;
#   - INT8: every Conv, Gemm, Transpose and residual Add in INT8, each Gelu one table;
#     float only the LayerNormalizations (-v says why) and the Reshape views that read
#     them;
#   - the emitted C (gcc and clang -std=c99 -pedantic -Werror, float and fixed
#     requantization) gives `oqc eval`'s INT8 bits.
. tests/cli/lib.sh
only_config default
T=models/tiny
C=$T/convnext_block.onnx

for m in convnext_block:convnext_x matmul_chains:matmul_x gelu_opset20:gelu_x; do
    n=${m%%:*}
    for opt in "" --no-opt; do
        # shellcheck disable=SC2086
        "$OQC" run $T/$n.onnx --input $T/${m##*:}.npy -o "$TMP/$n.npy" -q $opt ||
            { fail "$n $opt: run"; continue; }
        line=$("${BUILD:-build}/tests/tools/npy_cmp" "$TMP/$n.npy" $T/${n}_ref.npy)
        rel=$(echo "$line" | sed -n 's/.* rel=\([^ ]*\) .*/\1/p')
        awk -v r="${rel:-1}" 'BEGIN { exit !(r <= 1e-6) }' &&
            ok "$n ${opt:-(passes)}: FP32 within 1e-6 of the numpy reference (rel $rel)" ||
            fail "$n $opt: $line"
    done
done

# ops_after MODEL: the op counts of the IR after fold-bn, one line.
ops_after() {
    "$OQC" dump "$1" --after fold-bn | sed -n 's/^node *\([A-Za-z]*\) .*/\1/p' | sort |
        uniq -c | tr -s ' ' | tr '\n' ';'
}
o=$(ops_after $C)
[ "$o" = " 3 Add; 3 Conv; 3 Gelu; 6 Gemm; 3 LayerNormalization; 12 Reshape; 6 Transpose;" ] &&
    ok "convnext_block: 3 GELU spellings -> Gelu; 6 MatMul + bias (+ layer scale) -> Gemm between reshapes" ||
    fail "convnext_block after fold-bn: '$o'"
o=$(ops_after $T/matmul_chains.onnx)
[ "$o" = " 6 Add; 1 Gemm; 3 MatMul; 1 Relu; 2 Reshape;" ] &&
    ok "matmul_chains: Add+Mul -> Gemm, Mul -> scaled MatMul; row-wise Add, two readers kept" ||
    fail "matmul_chains after fold-bn: '$o'"
"$OQC" dump $C --after fold-bn -v 2>&1 >/dev/null |
    grep -q "; 3 Mul and 6 Add by per-column constants into 6 MatMul (6 of them now Gemm)" &&
    ok "-v counts the MatMul folds" || fail "no -v count of the MatMul folds"
"$OQC" dump $C --after fold-patterns -v 2>&1 >/dev/null |
    grep -q "3 LayerNormalization (ReduceMean ... Div), 3 Gelu (x \* 0.5 \* (1 + Erf(x / sqrt 2)))" &&
    ok "-v counts the Gelu folds" || fail "no -v count of the Gelu folds"

mknpy "32, 1, 8, 6, 6" models/tv/squeezenet1_1_in1.npy "$TMP/in.npy"
"$OQC" eval $C --data "$TMP/in.npy" --calib "$TMP/in.npy" $NAMED -v > "$TMP/v.txt" 2>&1 ||
    fail "eval"
grep -q "(Conv 3, Gemm 6, MatMul 0, .* Add 3, Sum 0, Mul 0, .* Transpose 6, ConvTranspose 0, tables 3 of 3 nodes, views 9), 6 float" "$TMP/v.txt" &&
    ok "Convs, Gemms, Transposes, residual Adds INT8; the 3 Gelus tables" ||
    fail "statistics: $(grep 'nodes INT8' "$TMP/v.txt")"
[ "$(grep -c "(Gelu): a 256-entry table of .* replaces 1 node(s)" "$TMP/v.txt")" = 3 ] &&
    ok "each GELU spelling (torch, keras, scaled) is one Gelu table" ||
    fail "GELU tables: $(grep 'table of' "$TMP/v.txt")"
[ "$(grep -c "(LayerNormalization) stays float: the INT8 backend has no kernel for this op (per-row" "$TMP/v.txt")" = 3 ] &&
    [ "$(grep -c "stays float" "$TMP/v.txt")" = 6 ] &&
    [ "$(grep -c "(Reshape) stays float: its input is not INT8" "$TMP/v.txt")" = 3 ] &&
    ok "float: only the 3 LayerNormalizations (-v says why) and the views reading them" ||
    fail "float nodes: $(grep 'stays float' "$TMP/v.txt")"

ccs=gcc
command -v clang > /dev/null && ccs="gcc clang"
for r in float fixed; do
    for cc in $ccs; do
        EMIT_CC=$cc emitted_is_eval cnx_$r $C "$TMP/in.npy" --calib "$TMP/in.npy" $NAMED \
            --requant $r && ok "$cc, $r: 32 outputs bit-identical with oqc eval" ||
            fail "$cc, $r: emitted C differs from oqc eval: $(head -3 "$TMP/cc.log")"
    done
done
finish
