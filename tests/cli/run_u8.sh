#!/bin/sh
# run_u8.sh - NAME_run_u8, the model on 8-bit pixels (docs/compile.md, "Camera bytes"):
# for a model compiled with --preprocess, the emitted C's NAME_run_u8 on an image's
# pixels gives, byte for byte, NAME_run_int8's output on the float input NAME_run would
# quantize (the same image through --preprocess), and where the last layer writes 8 bits
# its output dequantized equals NAME_run's bit for bit; for gray NCHW (the Fashion CNN:
# convs with zero padding), RGB and BGR NCHW and RGB NHWC (small models with padded
# convs, written here as XML), in both requantization modes.  It is integer-only: a
# Cortex-M0 image (--requant fixed, -DOQCI_NO_FLOAT) linked from NAME_run_u8 has no
# soft-float routine.  Tolerance: none (the tables are the input quantization of each
# pixel's float value, computed by the same code as the float path's).
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc
I=models/images
IT=${BUILD:-build}/tests/tools/image_tensor
IMGS="$I/photo.jpg $I/photo.png $I/gray.png $I/palette.png"
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
mkdir "$TMP/imgs" && cp $IMGS "$TMP/imgs/"

# u8_case LABEL MODEL SHAPE SPEC GEOMETRY EIGHT_BIT [compile options...]: compiles MODEL with
# --preprocess SPEC (calibrated on the images), makes the float tensors (SPEC) and the
# pixels (GEOMETRY: SPEC's resize, crop, color and layout, no normalisation) of the
# images, and runs tests/emit/emitted_main.c's run_u8 check.  EIGHT_BIT=1: the output
# is 8-bit, so run_u8's dequantized output must also equal NAME_run's.
u8_case() {
    label=$1 model=$2 shape=$3 spec=$4 geom=$5 eight=$6
    shift 6
    d="$TMP/$label"
    if ! "$OQC" compile "$model" --calib "$TMP/imgs" --preprocess "$spec" -o "$d" --name m -q "$@" \
            2>"$TMP/err"; then
        fail "$label: compile: $(cat "$TMP/err")"; return
    fi
    grep -q 'int m_run_u8(const uint8_t \*pixels, void \*out, void \*arena);' "$d/m.h" ||
        { fail "$label: no m_run_u8 in m.h"; return; }
    "$IT" "$spec" "$shape" "$d/x.npy" $IMGS && "$IT" "$geom" "$shape" "$d/px.npy" $IMGS ||
        { fail "$label: image_tensor"; return; }
    if ! cc_cached gcc $FLAGS -DOQC_TEST_U8 -I "$d" -DOQC_MODEL_HEADER='"m.h"' -DOQC_MODEL_PREFIX=m \
            tests/emit/emitted_main.c "$d"/*.c -lm -o "$d/run" 2>"$TMP/cc.log"; then
        fail "$label: build: $(head -n 5 "$TMP/cc.log")"; return
    fi
    if "$d/run" "$d/x.npy" "$d/out.npy" "$d/px.npy" "$d/out_u8.npy" >/dev/null 2>"$TMP/err"; then
        ok "$label: run_u8 = run_int8 on the quantized float input (4 images)"
    else
        fail "$label: $(cat "$TMP/err")"; return
    fi
    if [ "$eight" = 1 ]; then
        same_data "$d/out_u8.npy" "$d/out.npy" && ok "$label: run_u8 dequantized = run (8-bit output)" ||
            fail "$label: run_u8 dequantized differs from run"
    fi
}

# Gray, NCHW: the Fashion CNN (its first conv pads with zeros; its Gemm output keeps
# accumulators, so only the int8 outputs are compared)
u8_case gray models/fashion/fashion_cnn.onnx 1x1x28x28 \
    'resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray' 'resize=28x28,color=gray' 0

# pattern N: N float32 weights cycling through 1, -1, 2, 0, -1
pattern() {
    _i=0
    while [ $_i -lt "$1" ]; do
        case $((_i % 5)) in 0) f32s 1 ;; 1|4) f32s -1 ;; 2) f32s 2 ;; 3) f32s 0 ;; esac
        _i=$((_i + 1))
    done
}
# 3-channel NCHW: 3x3 conv with zero padding, Relu, 2x2 max pool (an 8-bit output)
xm_begin rgb
xm_input x f32 1x3x8x8
xm_const W f32 4x3x3x3 pattern 108
xm_const B f32 4 zeros 16
xm_node Conv x,W,B c '<attr name="pads" type="INTS" value="1 1 1 1"/>'
xm_node Relu c r
xm_node MaxPool r y '<attr name="kernel_shape" type="INTS" value="2 2"/><attr name="strides" type="INTS" value="2 2"/>'
xm_end y
for color in rgb bgr; do
    u8_case "$color-nchw" "$TMP/rgb.xml" 1x3x8x8 \
        "resize=8,crop=8,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,color=$color" \
        "resize=8,crop=8,color=$color" 1
done
# NHWC: [1, 8, 8, 3] read by a conv as 8 channels of 8x3
xm_begin nhwc
xm_input x f32 1x8x8x3
xm_const W f32 4x8x3x3 pattern 288
xm_const B f32 4 zeros 16
xm_node Conv x,W,B c '<attr name="pads" type="INTS" value="1 1 1 1"/>'
xm_node Relu c r
xm_node MaxPool r y '<attr name="kernel_shape" type="INTS" value="2 1"/><attr name="strides" type="INTS" value="2 1"/>'
xm_end y
u8_case rgb-nhwc "$TMP/nhwc.xml" 1x8x8x3 \
    'resize=8,crop=8,scale=1/255,mean=0.5:0.4:0.3,std=0.25:0.2:0.3,layout=nhwc' \
    'resize=8,crop=8,layout=nhwc' 1
# NHWC into a Transpose to NCHW (a TensorFlow export's first node): the Transpose moves
# the input's codes in INT8, so the input is integer and m_run_u8 exists; no float node
xm_begin nhwct
xm_input x f32 1x8x8x3
xm_const W f32 4x3x3x3 pattern 108
xm_const B f32 4 zeros 16
xm_node Transpose x t '<attr name="perm" type="INTS" value="0 3 1 2"/>'
xm_node Conv t,W,B c '<attr name="pads" type="INTS" value="1 1 1 1"/>'
xm_node Relu c r
xm_node MaxPool r y '<attr name="kernel_shape" type="INTS" value="2 2"/><attr name="strides" type="INTS" value="2 2"/>'
xm_end y
for rq in float fixed; do
    u8_case "nhwc-transpose-$rq" "$TMP/nhwct.xml" 1x8x8x3 \
        'resize=8,crop=8,scale=1/255,mean=0.5:0.4:0.3,std=0.25:0.2:0.3,layout=nhwc' \
        'resize=8,crop=8,layout=nhwc' 1 --requant $rq
done
"$OQC" compile "$TMP/nhwct.xml" --calib "$TMP/imgs" -q -v -o "$TMP/nhwct_v" --name m \
    --preprocess 'resize=8,crop=8,scale=1/255,mean=0.5:0.4:0.3,std=0.25:0.2:0.3,layout=nhwc' \
    >"$TMP/nhwct.log" 2>&1
grep -q 'Transpose 1, ConvTranspose 0, .*), 0 float; 1 Quantize and 1 Dequantize' "$TMP/nhwct.log" &&
    ok "NHWC Transpose first: INT8 (a move of the input's codes), no float node" ||
    fail "NHWC Transpose first: $(grep 'quantize:' "$TMP/nhwct.log")"

# integer requantization too
u8_case rgb-fixed "$TMP/rgb.xml" 1x3x8x8 'resize=8,crop=8,scale=1/255,mean=0.5,std=0.25' \
    'resize=8,crop=8' 1 --requant fixed

# Under AddressSanitizer + UBSan (the arena of exactly m_ARENA_BYTES): no overrun
d="$TMP/rgb-nhwc"
if cc_cached gcc $SAN_CFLAGS -DOQC_TEST_U8 -I "$d" \
        -DOQC_MODEL_HEADER='"m.h"' -DOQC_MODEL_PREFIX=m tests/emit/emitted_main.c "$d"/*.c -lm \
        -o "$d/run_san" 2>"$TMP/cc.log"; then
    "$d/run_san" "$d/x.npy" "$d/out.npy" "$d/px.npy" "$d/out_u8.npy" >/dev/null 2>"$TMP/err" &&
        ok "rgb-nhwc under ASan+UBSan" || fail "ASan: $(head -n 5 "$TMP/err")"
else
    skip "no sanitizer build here: $(head -n 2 "$TMP/cc.log")"
fi

# The check can fail: a table made for another mean differs from the float path.
d="$TMP/gray"
"$OQC" compile models/fashion/fashion_cnn.onnx --calib "$TMP/imgs" -o "$TMP/off" --name m -q \
    --preprocess 'resize=28x28,scale=1/255,mean=0.2861,std=0.3530,color=gray' &&
    cc_cached gcc $FLAGS -DOQC_TEST_U8 -I "$TMP/off" -DOQC_MODEL_HEADER='"m.h"' -DOQC_MODEL_PREFIX=m \
        tests/emit/emitted_main.c "$TMP/off"/*.c -lm -o "$TMP/off/run" &&
    if "$TMP/off/run" "$d/x.npy" "$d/out.npy" "$d/px.npy" "$d/out_u8.npy" >/dev/null 2>&1; then
        fail "run_u8 with mean 0.2861 passed against mean 0.2860 (the check is dead)"
    else
        ok "run_u8 check is live (mean 0.2861 against 0.2860 fails)"
    fi

# The spec recorded in an XML table is the compile's
"$OQC" calibrate models/fashion/fashion_cnn.onnx --data "$TMP/imgs" --format xml -o "$TMP/t.xml" -q \
    --preprocess 'resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray' &&
    "$OQC" compile models/fashion/fashion_cnn.onnx --table "$TMP/t.xml" -o "$TMP/tab" --name m -q &&
    grep -q 'm_run_u8' "$TMP/tab/m.h" && grep -q '#define m_PP_RESIZE_H 28' "$TMP/tab/m.h" &&
    ok "compile --table with a recorded spec: run_u8 and the macros" || fail "spec from the XML table"

# Not emitted without --preprocess, nor when the input feeds a float node (no integer I/O);
# the preprocessing macros are there in that case
"$OQC" compile models/fashion/fashion_cnn.onnx --calib models/fashion/calib_500.npy $NAMED -o "$TMP/nopp2" -q &&
    ! grep -q run_u8 "$TMP/nopp2/fashion_cnn.h" && ! grep -q _PREPROCESS "$TMP/nopp2/fashion_cnn.h" &&
    ok "no --preprocess: no run_u8, no PREPROCESS macros" || fail "run_u8 without --preprocess"
first=$("$OQC" dump models/fashion/fashion_cnn.onnx --after all | sed -n 's/^node   Conv "\([^"]*\)".*/\1/p' | head -n 1)
"$OQC" compile models/fashion/fashion_cnn.onnx --calib models/fashion/calib_500.npy $NAMED -o "$TMP/fl" -q \
    --preprocess 'scale=1/255,color=gray' --fp32-nodes "$first" &&
    ! grep -q run_u8 "$TMP/fl/fashion_cnn.h" && grep -q 'fashion_cnn_PP_DIV 0x1.fep+7f' "$TMP/fl/fashion_cnn.h" &&
    ok "first conv float ($first): no run_u8, PREPROCESS macros kept" || fail "float first node"
# A spec that does not fit the input is refused, nothing written
"$OQC" compile models/fashion/fashion_cnn.onnx --calib models/fashion/calib_500.npy $NAMED -o "$TMP/bad" \
    --preprocess imagenet 2>"$TMP/err" && fail "3 channels for a 1-channel input accepted" ||
    { grep -q "gives 3 channels" "$TMP/err" && [ ! -e "$TMP/bad/fashion_cnn.c" ] &&
        ok "a spec that does not fit the input: $(cat "$TMP/err")" || fail "bad spec: $(cat "$TMP/err")"; }

# Cortex-M0: --requant fixed, -DOQCI_NO_FLOAT, linked with unused sections dropped from
# m_run_u8: no __aeabi_f*/__aeabi_d* symbol at all
if command -v arm-none-eabi-gcc >/dev/null; then
    O="$TMP/m0"
    "$OQC" compile models/fashion/fashion_cnn.onnx --calib models/fashion/calib_500.npy $NAMED -o "$O" \
        --name m --requant fixed --target portable -q \
        --preprocess 'scale=1/255,mean=0.2860,std=0.3530,color=gray'
    A="arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -O2 -std=c99 -ffreestanding -DOQCI_NO_FLOAT -ffunction-sections -fdata-sections"
    objs="" okc=1
    for c in "$O"/*.c; do
        b=$(basename "$c" .c)
        $A -Wall -Wextra -Werror -c -I "$O" "$c" -o "$O/$b.o" 2>>"$TMP/m0.log" || okc=0
        objs="$objs $O/$b.o"
    done
    if [ $okc = 1 ] && arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -nostartfiles -Wl,--gc-sections \
            -Wl,-e,m_run_u8 -Wl,--undefined=m_run_u8 --specs=nosys.specs $objs -o "$O/u8.elf" \
            2>>"$TMP/m0.log"; then
        sf=$(arm-none-eabi-nm "$O/u8.elf" | grep -cE '__aeabi_[fd]')
        arm-none-eabi-nm "$O/u8.elf" | grep -q ' m_run_u8$' && [ "$sf" = 0 ] &&
            ok "Cortex-M0 image from m_run_u8: no soft-float routine" ||
            fail "Cortex-M0 image from m_run_u8 has $sf soft-float symbols"
    else
        fail "Cortex-M0 build: $(head -n 5 "$TMP/m0.log")"
    fi
else
    skip "arm-none-eabi-gcc not installed (scripts/install-deps.sh installs it)"
fi
finish
