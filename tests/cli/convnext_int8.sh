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
#   - INT8: every node, the LayerNormalizations included (oqci_layernorm, integers only:
#     output SQNR no worse than with them as float islands), each Gelu one table, with
#     float and with fixed requantization;
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
grep -q "(Conv 3, Gemm 6, MatMul 0, .* Add 3, Sum 0, Mul 0, .* Transpose 6, ConvTranspose 0, LayerNormalization 3, tables 3 of 3 nodes, views 12), 0 float; 1 Quantize and 1 Dequantize" "$TMP/v.txt" &&
    ok "every node INT8 (LayerNormalizations, Gemms, Gelu tables...): one Quantize, one Dequantize" ||
    fail "statistics: $(grep 'nodes INT8' "$TMP/v.txt")"
[ "$(grep -c "(Gelu): a 256-entry table of .* replaces 1 node(s)" "$TMP/v.txt")" = 3 ] &&
    ok "each GELU spelling (torch, keras, scaled) is one Gelu table" ||
    fail "GELU tables: $(grep 'table of' "$TMP/v.txt")"
# the LayerNormalizations as float islands instead: the INT8 kernel is as good (output
# SQNR within 0.5 dB of the islands', measured 26.21 against 26.25 dB) and at least 25 dB
# (test_quantize's floor for INT8 against float)
"$OQC" eval $C --data "$TMP/in.npy" --calib "$TMP/in.npy" $NAMED --fp32-nodes Add_10,Add_33,Add_56 \
    > "$TMP/f.txt" 2>&1 || fail "eval --fp32-nodes"
s8=$(sed -n "s/^output '[a-z0-9]*': SQNR \([-0-9.]*\) dB.*/\1/p" "$TMP/v.txt")
sf=$(sed -n "s/^output '[a-z0-9]*': SQNR \([-0-9.]*\) dB.*/\1/p" "$TMP/f.txt")
awk -v a="$s8" -v b="$sf" 'BEGIN { exit !(a != "" && b != "" && a >= 25 && a >= b - 0.5) }' &&
    ok "INT8 LayerNormalization: output SQNR $s8 dB (float islands: $sf dB)" ||
    fail "INT8 LayerNormalization: SQNR '$s8' dB, float islands '$sf' dB"
"$OQC" eval $C --data "$TMP/in.npy" --calib "$TMP/in.npy" $NAMED --requant fixed -v \
    > "$TMP/x.txt" 2>&1 || fail "eval --requant fixed"
grep -q "LayerNormalization 3, tables 3 of 3 nodes, views 12), 0 float; .* requant fixed" "$TMP/x.txt" &&
    ok "--requant fixed: every node INT8 too (the LayerNormalization kernel is integer-only)" ||
    fail "fixed: $(grep 'nodes INT8' "$TMP/x.txt")"

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
