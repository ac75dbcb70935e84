#!/bin/sh
# int8_lut.sh - INT8 tables (OQC_Q_LUT, oqci_lut) for element-wise functions of one
# tensor, on models/tiny/lut_cnn.onnx (SiLU as x * Sigmoid(x), HardSwish as the op and
# as x * HardSigmoid(x), GELU from Erf, Elu, Tanh, Sigmoid between convs):
#   - every activation becomes one table and no node stays float (-v statistics);
#   - a table gives exactly the bits of the float island it replaces (dequantize ->
#     float op -> quantize): `--fp32-nodes` on a single-op table whose input is 8-bit in
#     both forms (a MaxPool's output) leaves eval's outputs unchanged;
#   - the emitted C (gcc and clang -std=c99 -pedantic -Werror, float and fixed
#     requantization) gives `oqc eval`'s INT8 bits;
#   - a function that is NaN on some input codes (Sqrt of a signed tensor,
#     models/tiny/lut_unsound.onnx) stays float and -v says why;
#   - Mul of two activations (models/tiny/se_block.onnx: a squeeze-excitation gate
#     broadcast per channel, and a same-shape product) runs in INT8 (oqci_mul) with an
#     output SQNR of at least 25 dB (test_quantize's floor for INT8 against float; the
#     float-island form, --fp32-nodes, is printed too: its convs keep their int32
#     accumulators, so it is slightly better), and the emitted C gives eval's bits;
#   - Sin (models/tiny/lut_sin.onnx), an op added as one OQC_UNARY row of ops.def and
#     one OQCF_UNARY_OPS entry with no code in passes/, is a table too: nothing stays
#     float, output SQNR at least 25 dB (the floor above), emitted C gives eval's bits.
. tests/cli/lib.sh
only_config default
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
M=models/tiny/lut_cnn.onnx
mknpy "32, 1, 3, 8, 8" models/tv/squeezenet1_1_in1.npy "$TMP/in.npy"

"$OQC" eval $M --data "$TMP/in.npy" --calib "$TMP/in.npy" --save-int8 "$TMP/e.npy" -v \
    > "$TMP/v.txt" 2>&1 || fail "eval"
grep -q "tables 7 of 8 nodes, views 1), 0 float" "$TMP/v.txt" &&
    ok "7 tables replace the 8 activation nodes (x * HardSigmoid(x) is one HardSwish, GELU from Erf one Gelu after fold-patterns); nothing stays float" ||
    fail "statistics: $(grep 'nodes INT8' "$TMP/v.txt")"
grep -q "'Mul_14' (Gelu): a 256-entry table of 'c4' replaces 1 node(s)" "$TMP/v.txt" &&
    ok "GELU's five nodes (Div, Erf, Add, Mul, Mul) are one Gelu, one table" || fail "GELU not one table"
grep -q "'Mul_2' (Mul): a 256-entry table of 'c1' replaces 2 node(s)" "$TMP/v.txt" &&
    ok "SiLU (x * Sigmoid(x)) is one table" || fail "SiLU not one table"

for nd in HardSwish_5 Sigmoid_21; do
    "$OQC" eval $M --data "$TMP/in.npy" --calib "$TMP/in.npy" --save-int8 "$TMP/f.npy" \
        --fp32-nodes $nd -q > /dev/null || fail "eval --fp32-nodes $nd"
    same_data "$TMP/f.npy" "$TMP/e.npy" &&
        ok "$nd: the table's bits equal the float island's" || fail "$nd: table != float island"
done

ccs=gcc
command -v clang > /dev/null && ccs="gcc clang"
for r in float fixed; do
    "$OQC" eval $M --data "$TMP/in.npy" --calib "$TMP/in.npy" --requant $r \
        --save-int8 "$TMP/e_$r.npy" -q > /dev/null || fail "eval ($r)"
    "$OQC" compile $M -o "$TMP/c_$r" --name lut --calib "$TMP/in.npy" --requant $r -q ||
        fail "compile ($r)"
    grep -q "oqci_lut(" "$TMP/c_$r/lut.c" && ok "$r: the emitted code calls oqci_lut" ||
        fail "$r: no oqci_lut call"
    for cc in $ccs; do
        cc_cached $cc $FLAGS -I "$TMP/c_$r" -DOQC_MODEL_HEADER='"lut.h"' -DOQC_MODEL_PREFIX=lut \
            tests/emit/emitted_main.c "$TMP/c_$r"/*.c -lm -o "$TMP/run" 2> "$TMP/cc.log" ||
            { fail "$cc, $r: build: $(head -3 "$TMP/cc.log")"; continue; }
        "$TMP/run" "$TMP/in.npy" "$TMP/o.npy" > /dev/null &&
            same_data "$TMP/o.npy" "$TMP/e_$r.npy" &&
            ok "$cc, $r: 32 outputs bit-identical with oqc eval" ||
            fail "$cc, $r: emitted C differs from oqc eval"
    done
done

mknpy "16, 1, 3, 6, 6" models/tv/squeezenet1_1_in1.npy "$TMP/in6.npy"
"$OQC" eval models/tiny/lut_unsound.onnx --data "$TMP/in6.npy" --calib "$TMP/in6.npy" \
    --method max -v 2>&1 | grep -q "'Sqrt_1' (Sqrt) stays float: its function is NaN at input" &&
    ok "Sqrt of a signed tensor stays float, -v says why" || fail "no NaN reason for Sqrt"

S=models/tiny/se_block.onnx
mknpy "32, 1, 3, 6, 6" models/tv/squeezenet1_1_in1.npy "$TMP/se.npy"
"$OQC" eval $S --data "$TMP/se.npy" --calib "$TMP/se.npy" --method max -v --save-int8 "$TMP/se_e.npy" \
    > "$TMP/se_v.txt" 2>&1 || fail "se_block: eval"
grep -q "Mul 2, Relu 0, Clip 0, Resize 0, Transpose 0, ConvTranspose 0, LayerNormalization 0, tables 1 of 1 nodes, views 0), 0 float" "$TMP/se_v.txt" &&
    ok "se_block: both Muls and the HardSigmoid gate in INT8, nothing float" ||
    fail "se_block: $(grep 'nodes INT8' "$TMP/se_v.txt")"
"$OQC" eval $S --data "$TMP/se.npy" --calib "$TMP/se.npy" --method max --fp32-nodes Mul_7,Mul_10 \
    > "$TMP/se_f.txt" 2>&1 || fail "se_block: eval --fp32-nodes"
s8=$(sed -n "s/^output 'y': SQNR \([-0-9.]*\) dB.*/\1/p" "$TMP/se_v.txt")
sf=$(sed -n "s/^output 'y': SQNR \([-0-9.]*\) dB.*/\1/p" "$TMP/se_f.txt")
awk -v a="$s8" 'BEGIN { exit !(a != "" && a >= 25) }' &&
    ok "se_block: INT8 Mul output SQNR $s8 dB >= 25 (float-island Mul: $sf dB)" ||
    fail "se_block: INT8 Mul SQNR $s8 dB < 25 (float island $sf dB)"
for r in float fixed; do
    "$OQC" eval $S --data "$TMP/se.npy" --calib "$TMP/se.npy" --method max --requant $r \
        --save-int8 "$TMP/se_$r.npy" -q > /dev/null || fail "se_block: eval ($r)"
    "$OQC" compile $S -o "$TMP/s_$r" --name se --calib "$TMP/se.npy" --method max --requant $r -q ||
        fail "se_block: compile ($r)"
    cc_cached gcc $FLAGS -I "$TMP/s_$r" -DOQC_MODEL_HEADER='"se.h"' -DOQC_MODEL_PREFIX=se \
        tests/emit/emitted_main.c "$TMP/s_$r"/*.c -lm -o "$TMP/run_se" 2> "$TMP/cc.log" &&
        "$TMP/run_se" "$TMP/se.npy" "$TMP/se_o.npy" > /dev/null &&
        same_data "$TMP/se_o.npy" "$TMP/se_$r.npy" &&
        ok "se_block, $r: emitted C (gcc -pedantic) bit-identical with oqc eval" ||
        fail "se_block, $r: $(head -3 "$TMP/cc.log")"
done

L=models/tiny/lut_sin.onnx
"$OQC" eval $L --data "$TMP/in6.npy" --calib "$TMP/in6.npy" -v --save-int8 "$TMP/sin_e.npy" \
    > "$TMP/sin_v.txt" 2>&1 || fail "lut_sin: eval"
grep -q "'Sin_1' (Sin): a 256-entry table of 'c' replaces 1 node(s)" "$TMP/sin_v.txt" &&
    grep -q "tables 1 of 1 nodes, views 0), 0 float" "$TMP/sin_v.txt" &&
    ok "Sin is an INT8 table, nothing stays float" ||
    fail "lut_sin: $(grep 'nodes INT8' "$TMP/sin_v.txt")"
s8=$(sed -n "s/^output 'y': SQNR \([-0-9.]*\) dB.*/\1/p" "$TMP/sin_v.txt")
awk -v a="$s8" 'BEGIN { exit !(a != "" && a >= 25) }' &&
    ok "lut_sin: INT8 output SQNR $s8 dB >= 25" || fail "lut_sin: INT8 SQNR $s8 dB < 25"
"$OQC" compile $L -o "$TMP/sin_c" --name sn --calib "$TMP/in6.npy" -q || fail "lut_sin: compile"
grep -q "oqci_lut(" "$TMP/sin_c/sn.c" && cc_cached gcc $FLAGS -I "$TMP/sin_c" -DOQC_MODEL_HEADER='"sn.h"' \
    -DOQC_MODEL_PREFIX=sn tests/emit/emitted_main.c "$TMP/sin_c"/*.c -lm -o "$TMP/run_sn" \
    2> "$TMP/cc.log" && "$TMP/run_sn" "$TMP/in6.npy" "$TMP/sin_o.npy" > /dev/null &&
    same_data "$TMP/sin_o.npy" "$TMP/sin_e.npy" &&
    ok "lut_sin: emitted C calls oqci_lut and is bit-identical with oqc eval" ||
    fail "lut_sin: emitted C: $(head -3 "$TMP/cc.log")"
finish
