#!/bin/sh
# int8_bn_pad.sh - passes bn-conv and fold-pad take their nodes into INT8 (issue #26):
#   - on the exporter-style models of models/tiny/make_pass_models.py (a BN on the graph
#     input and one after a Concat; Pads before AveragePool, Conv and MaxPool, in the
#     opset 10, 13 and 18 forms) `oqc eval` with a calibration runs every node in INT8
#     ("0 float" in the -v statistics), while with both passes disabled the BNs and Pads
#     stay float islands (so the check can fail);
#   - the emitted C (gcc, -std=c99 -pedantic -Werror, float and fixed requantization)
#     gives `oqc eval`'s INT8 bits on 8 samples.
# Calibration and evaluation data: squeezenet's image data cut to each input shape.
. tests/cli/lib.sh
only_config default

# (emitted_is_eval sets n, m and x: the loop uses other names)
for mod in bn_concat pad_avgpool pad_conv pad_opset10; do
    M=models/tiny/pass_$mod.onnx
    case $mod in
        bn_concat) shape="3, 6, 6" island=BatchNormalization ;;
        pad_avgpool) shape="4, 8, 8" island=Pad ;;
        *) shape="3, 8, 8" island=Pad ;;
    esac
    X="$TMP/$mod.npy"
    mknpy "8, $shape" models/tv/squeezenet1_1_in1.npy "$X"
    "$OQC" eval $M --data "$X" --calib "$X" -v > "$TMP/v_$mod.txt" 2>&1 ||
        fail "$mod: eval: $(tail -n 2 "$TMP/v_$mod.txt")"
    grep -q "nodes INT8 .*), 0 float; 1 Quantize and 1 Dequantize" "$TMP/v_$mod.txt" &&
        ok "$mod: every node in INT8, one Quantize and one Dequantize" ||
        fail "$mod: $(grep 'nodes INT8\|stays float' "$TMP/v_$mod.txt" | head -n 3)"
    "$OQC" eval $M --data "$X" --calib "$X" -v --disable-pass bn-conv,fold-pad \
        > "$TMP/w_$mod.txt" 2>&1 || fail "$mod: eval without the passes"
    grep -q "($island) stays float: the INT8 backend has no kernel" "$TMP/w_$mod.txt" &&
        ok "$mod: without bn-conv and fold-pad, $island stays float" ||
        fail "$mod: without the passes: $(grep 'nodes INT8' "$TMP/w_$mod.txt")"
    for r in float fixed; do
        emitted_is_eval "${mod}_$r" $M "$X" --calib "$X" --requant $r &&
            ok "$mod, requant $r: the emitted C gives oqc eval's INT8 bits" ||
            fail "$mod, requant $r: $(head -n 3 "$TMP/cc.log")"
    done
done
finish
