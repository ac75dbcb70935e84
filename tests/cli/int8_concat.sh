#!/bin/sh
# int8_concat.sh - data movement in INT8 (docs/int8.md): Concats that concat-elim keeps
# (oqci_concat, each input at its own scale), Slice, Split and ShuffleNet's channel
# shuffle, on the models of models/move/make_move_models.py:
#   - FP32: `oqc run` matches the script's numpy reference within 1e-5 of the largest
#     output (float32 sums of at most 108 products against float64 ones: a few float32
#     ulps of the largest partial sum, ~1e-6 relative);
#   - INT8 (--method max): no node stays float (one Quantize, one Dequantize), the -v
#     summary counts the Concats, Slices and Split; the INT8 output against the numpy
#     reference has an SQNR of at least 25 dB (test_quantize's floor for INT8 against
#     float; these models give 30-35 dB, a misplaced slice or a wrong scale gives < 10);
#   - dense_block's emitted C has both a copied part (.requant = 0: an input at the
#     output's scale) and requantized ones;
#   - the emitted C (gcc, and clang in the default configuration, -std=c99 -pedantic
#     -Werror) gives oqc eval's bits, in float and fixed requantization;
#   - --fp32-nodes keeps a Concat float, and so does a float input (concat_input: the
#     graph input), and -v says why.
. tests/cli/lib.sh
FULL=0
[ "${OQC_CONFIG:-default}" = default ] && FULL=1
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
DRIVER=tests/emit/emitted_main.c
CMP=${BUILD:-build}/tests/tools/npy_cmp
D=models/move

# field KEY LINE: the value of KEY=value in an npy_cmp line
field() { echo "$2" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

for m in dense_block shuffle_unit slice_steps; do
    X=$D/${m}_x.npy R=$D/${m}_ref.npy
    "$OQC" run $D/$m.onnx --input $X -o "$TMP/f_$m.npy" -q || fail "$m: run"
    line=$("$CMP" "$TMP/f_$m.npy" $R)
    rel=$(field rel "$line")
    awk -v r="${rel:-1}" 'BEGIN { exit !(r <= 1e-5) }' &&
        ok "$m: FP32 matches the numpy reference (rel $rel <= 1e-5)" || fail "$m FP32: $line"

    case $m in
        dense_block) counts="views 0" moves="Concat 4, Slice 0, Split 0" ;;
        shuffle_unit) counts="Transpose 2, .*views 4" moves="Concat 2, Slice 2, Split 1" ;;
        slice_steps) counts="views 0" moves="Concat 0, Slice 1, Split 0" ;;
    esac
    for r in float fixed; do
        "$OQC" eval $D/$m.onnx --data $X --calib $X --method max --requant $r -v \
            --save-int8 "$TMP/e_${m}_$r.npy" >"$TMP/e_${m}_$r.txt" 2>&1 ||
            { fail "$m: eval ($r): $(tail -n 2 "$TMP/e_${m}_$r.txt")"; continue; }
        want="$counts), 0 float; 1 Quantize and 1 Dequantize inserted"
        want="$want; requant $r; data movement: $moves"
        grep -q "$want\$" "$TMP/e_${m}_$r.txt" &&
            ok "$m ($r): every node INT8 ($moves)" ||
            fail "$m ($r): $(grep -E 'nodes INT8|stays float' "$TMP/e_${m}_$r.txt" | head -n 3)"
        line=$("$CMP" "$TMP/e_${m}_$r.npy" $R)
        db=$(field sqnr "$line")
        awk -v v="${db:-0}" 'BEGIN { exit !(v >= 25) }' &&
            ok "$m ($r): INT8 output SQNR $db dB >= 25 against the reference" ||
            fail "$m ($r) INT8: $line"

        O="$TMP/c_${m}_$r"
        "$OQC" compile $D/$m.onnx -o "$O" --name t --calib $X --method max --requant $r -q ||
            { fail "$m: compile ($r)"; continue; }
        if [ $m = dense_block ] && [ $r = float ]; then
            grep -q "[.]requant = 0," "$O/t.c" && grep -q "[.]requant = 1," "$O/t.c" &&
                ok "dense_block: copied and requantized Concat inputs" ||
                fail "dense_block: not both kinds of part in $(grep -c requant "$O/t.c") parts"
        fi
        ccs=gcc
        [ $FULL = 1 ] && ccs="gcc clang"
        for cc in $ccs; do
            command -v $cc >/dev/null || { skip "no $cc"; continue; }
            cc_cached $cc $FLAGS -I "$O" -DOQC_MODEL_HEADER='"t.h"' -DOQC_MODEL_PREFIX=t \
                $DRIVER "$O"/*.c -lm -o "$TMP/run" 2>"$TMP/cc.log" ||
                { fail "$m: $cc: $(head -n 5 "$TMP/cc.log")"; continue; }
            "$TMP/run" $X "$TMP/o.npy" >/dev/null && same_data "$TMP/o.npy" "$TMP/e_${m}_$r.npy" &&
                ok "$m ($r): $cc -pedantic -Werror build, bit-identical with oqc eval" ||
                fail "$m ($r): $cc: emitted output differs from oqc eval"
        done
    done
done

"$OQC" eval $D/dense_block.onnx --data $D/dense_block_x.npy --calib $D/dense_block_x.npy \
    --fp32-nodes Concat_3 -v >"$TMP/fp.txt" 2>&1 || fail "eval --fp32-nodes Concat_3"
grep -q "'Concat_3' (Concat) stays float: named in --fp32-nodes" "$TMP/fp.txt" &&
    grep -q "), 1 float; .*data movement: Concat 3, Slice 0, Split 0" "$TMP/fp.txt" &&
    ok "--fp32-nodes keeps a Concat float, -v says why" ||
    fail "--fp32-nodes Concat_3: $(grep -E 'Concat_3|nodes INT8' "$TMP/fp.txt")"
X=$D/concat_input_x.npy
"$OQC" run $D/concat_input.onnx --input $X -o "$TMP/f.npy" -q || fail "concat_input: run"
line=$("$CMP" "$TMP/f.npy" $D/concat_input_ref.npy)
rel=$(field rel "$line")
awk -v r="${rel:-1}" 'BEGIN { exit !(r <= 1e-5) }' &&
    ok "concat_input: FP32 matches the numpy reference (rel $rel <= 1e-5)" ||
    fail "concat_input FP32: $line"
"$OQC" eval $D/concat_input.onnx --data $X --calib $X -v >"$TMP/ci.txt" 2>&1 ||
    fail "eval concat_input"
grep -q "'Concat_2' (Concat) stays float: input 'x' is not INT8" "$TMP/ci.txt" &&
    grep -q "), 1 float; .*data movement: Concat 0, Slice 0, Split 0" "$TMP/ci.txt" &&
    ok "a Concat reading a float tensor stays float, -v says why" ||
    fail "concat_input: $(grep -E 'Concat_2|nodes INT8' "$TMP/ci.txt")"
finish
