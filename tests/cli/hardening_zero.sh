#!/bin/sh
# hardening_zero.sh - zero-size dimensions in every operator shape inference knows
# (issue 31, items 1 and 4): each generated model either checks, runs and compiles
# (a node whose outputs are empty computes nothing) or is refused by `check` with an
# error naming the node, when empty inputs would have to make a non-empty output (a
# Conv or MatMul over 0 input channels, a pooling over 0x0, an edge/reflect Pad of an
# empty axis, a Gather from an empty axis).  Never a crash (exit status above 1).
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

# ok_case NAME NPY-SHAPE: check, run (input zeros of that shape), compile --precision fp32
ok_case() {
    npy_f32 "$2" "$TMP/$1.npy"
    out=$("$OQC" check "$TMP/$1.xml" 2>&1); st=$?
    [ $st = 0 ] && ok "$1: check" || fail "$1: check exits $st: $out"
    out=$("$OQC" run "$TMP/$1.xml" --input "$TMP/$1.npy" -o "$TMP/$1.out.npy" 2>&1); st=$?
    [ $st = 0 ] && [ -s "$TMP/$1.out.npy" ] && ok "$1: run" || fail "$1: run exits $st: $out"
    out=$("$OQC" compile "$TMP/$1.xml" --precision fp32 -o "$TMP/$1.c" -q 2>&1); st=$?
    [ $st = 0 ] && [ -s "$TMP/$1.c/$1.c" ] && ok "$1: compile" ||
        fail "$1: compile exits $st: $out"
}
# err_case NAME PATTERN: check, run and compile all exit 1 with an error matching PATTERN
err_case() {
    for cmd in check run compile; do
        case $cmd in
        run) set -- "$1" "$2" --input "$TMP/none.npy" ;;
        compile) set -- "$1" "$2" --precision fp32 -o "$TMP/$1.c" ;;
        *) set -- "$1" "$2" ;;
        esac
        n=$1 pat=$2
        shift 2
        out=$("$OQC" $cmd "$TMP/$n.xml" "$@" 2>&1); st=$?
        if [ $st = 1 ] && echo "$out" | grep -q -- "$pat"; then
            ok "$n: $cmd refuses ($pat)"
        else
            fail "$n: $cmd exits $st, expected 1 and '$pat': $out"
        fi
        set -- "$n" "$pat"
    done
}
npy_f32 "1" "$TMP/none.npy"

# one-input ops that keep the shape (or a permutation/reshape of it)
for op in Relu Sigmoid Tanh LeakyRelu HardSigmoid Identity Clip Dropout; do
    xm_begin "z_$op"; xm_input x f32 1x0x4x4; xm_node "$op" x y; xm_end y
    ok_case "z_$op" "1, 0, 4, 4"
done
xm_begin z_Softmax; xm_input x f32 2x0; xm_node Softmax x y '<attr name="axis" type="INT" value="1"/>'; xm_end y
ok_case z_Softmax "2, 0"
xm_begin z_Softmax0; xm_input x f32 0x5; xm_node Softmax x y; xm_end y
ok_case z_Softmax0 "0, 5"
xm_begin z_Cast; xm_input x f32 1x0x4; xm_node Cast x y '<attr name="to" type="INT" value="1"/>'; xm_end y
ok_case z_Cast "1, 0, 4"
xm_begin z_Flatten; xm_input x f32 1x0x4x4; xm_node Flatten x y; xm_end y
ok_case z_Flatten "1, 0, 4, 4"
xm_begin z_Transpose; xm_input x f32 1x0x4x3; xm_node Transpose x y '<attr name="perm" type="INTS" value="0 3 1 2"/>'; xm_end y
ok_case z_Transpose "1, 0, 4, 3"
xm_begin z_Reshape; xm_input x f32 1x0x4x4; xm_const s i64 3 i64s 1 0 16; xm_node Reshape x,s y; xm_end y
ok_case z_Reshape "1, 0, 4, 4"
xm_begin z_Unsqueeze; xm_input x f32 0x4; xm_const a i64 1 i64s 0; xm_node Unsqueeze x,a y; xm_end y
ok_case z_Unsqueeze "0, 4"
xm_begin z_Squeeze; xm_input x f32 1x0x4; xm_const a i64 1 i64s 0; xm_node Squeeze x,a y; xm_end y
ok_case z_Squeeze "1, 0, 4"
# elementwise with two (or more) inputs, broadcast or not
for op in Add Sub Mul Div Sum; do
    xm_begin "z_$op"; xm_input x f32 1x0x4x4; xm_const b f32 1x1x1x4 f32s 1 1 1 1; xm_node "$op" x,b y; xm_end y
    ok_case "z_$op" "1, 0, 4, 4"
done
# one_w NAME EXPECT OP XSHAPE WSHAPE: the model OP(x, W) with W zeros of WSHAPE; EXPECT
# is ok (ok_case) or the error pattern (err_case)
one_w() {
    xm_begin "$1"; xm_input x f32 "$4"
    xm_const W f32 "$5" zeros $(($(echo "$5" | sed 's/x/ * /g') * 4))
    xm_node "$3" x,W y; xm_end y
    if [ "$2" = ok ]; then ok_case "$1" "$(echo "$4" | sed 's/x/, /g')"; else err_case "$1" "$2"; fi
}
# Conv: no output channels (the SIGFPE of issue 31), batch 0, an empty spatial axis
one_w z_conv_cout0 ok Conv 1x3x8x8 0x3x3x3
xm_begin z_conv_cout0_bias; xm_input x f32 1x3x8x8; xm_const W f32 0x3x3x3 zeros 0; xm_const B f32 0 zeros 0
xm_node Conv x,W,B y '<attr name="pads" type="INTS" value="1 1 1 1"/>'; xm_end y
ok_case z_conv_cout0_bias "1, 3, 8, 8"
one_w z_conv_batch0 ok Conv 0x3x8x8 2x3x3x3
one_w z_conv_h0 "larger than the padded input" Conv 1x3x0x8 2x3x1x1
one_w z_conv_cin0 "has no elements" Conv 1x0x8x8 2x0x3x3
xm_begin z_conv_dw0; xm_input x f32 1x0x8x8; xm_const W f32 0x1x3x3 zeros 0; xm_node Conv x,W y '<attr name="group" type="INT" value="0"/>'; xm_end y
"$OQC" check "$TMP/z_conv_dw0.xml" >/dev/null 2>&1; st=$?
[ $st -le 1 ] && ok "z_conv_dw0: group 0 is answered (exit $st)" || fail "z_conv_dw0: exit $st"
# pooling
for op in MaxPool AveragePool; do
    xm_begin "z_$op"; xm_input x f32 1x0x8x8; xm_node "$op" x y '<attr name="kernel_shape" type="INTS" value="2 2"/>'; xm_end y
    ok_case "z_$op" "1, 0, 8, 8"
done
for op in GlobalAveragePool GlobalMaxPool; do
    xm_begin "z_$op"; xm_input x f32 1x0x8x8; xm_node "$op" x y; xm_end y
    ok_case "z_$op" "1, 0, 8, 8"
    xm_begin "z_${op}_0x0"; xm_input x f32 1x3x0x0; xm_node "$op" x y; xm_end y
    err_case "z_${op}_0x0" "has no elements"
done
xm_begin z_BatchNormalization; xm_input x f32 1x0x4x4
for p in s b m v; do xm_const $p f32 0 zeros 0; done
xm_node BatchNormalization x,s,b,m,v y; xm_end y
ok_case z_BatchNormalization "1, 0, 4, 4"
xm_begin z_LRN; xm_input x f32 1x0x4x4; xm_node LRN x y '<attr name="size" type="INT" value="3"/>'; xm_end y
ok_case z_LRN "1, 0, 4, 4"
# Gemm and MatMul: empty rows are fine, an empty reduction axis is not
one_w z_gemm_m0 ok Gemm 0x4 4x3
one_w z_gemm_n0 ok Gemm 2x4 4x0
one_w z_gemm_k0 "has no elements" Gemm 2x0 0x3
one_w z_matmul_m0 ok MatMul 0x4 4x3
one_w z_matmul_k0 "has no elements" MatMul 2x0 0x3
# Concat, Split, Slice
xm_begin z_concat; xm_input x f32 1x0x4; xm_const c f32 1x2x4 f32s 1 1 1 1 2 2 2 2
xm_node Concat x,c y '<attr name="axis" type="INT" value="1"/>'; xm_end y
ok_case z_concat "1, 0, 4"
xm_begin z_concat_all; xm_input x f32 1x0x4; xm_node Concat x,x y '<attr name="axis" type="INT" value="1"/>'; xm_end y
ok_case z_concat_all "1, 0, 4"
xm_begin z_split; xm_input x f32 1x0x4; xm_node Split x y1,y2 '<attr name="axis" type="INT" value="2"/>'; xm_end y1 y2
ok_case z_split "1, 0, 4"
xm_begin z_slice; xm_input x f32 1x3x4; xm_const st i64 1 i64s 1; xm_const en i64 1 i64s 1; xm_const ax i64 1 i64s 1
xm_node Slice x,st,en,ax y; xm_end y
ok_case z_slice "1, 3, 4"
# Pad: a constant pad of an empty axis is the constant; edge and reflect have nothing
xm_begin z_pad_const; xm_input x f32 1x0x4; xm_const p i64 6 i64s 0 1 0 0 1 0; xm_node Pad x,p y; xm_end y
ok_case z_pad_const "1, 0, 4"
for mode in edge reflect; do
    xm_begin "z_pad_$mode"; xm_input x f32 1x0x4; xm_const p i64 6 i64s 0 1 0 0 1 0
    xm_node Pad x,p y "<attr name=\"mode\" type=\"STRING\" value=\"$mode\"/>"; xm_end y
    err_case "z_pad_$mode" "has no elements"
done
# Gather: empty indices give an empty output; an empty axis cannot be indexed
xm_begin z_gather_noidx; xm_input x f32 3x4; xm_const i i64 0 zeros 0; xm_node Gather x,i y; xm_end y
ok_case z_gather_noidx "3, 4"
xm_begin z_gather_empty; xm_input x f32 0x4; xm_const i i64 1 i64s 0; xm_node Gather x,i y; xm_end y
err_case z_gather_empty "out of range\|has no elements"
# Models that cannot run on any input are refused by check (item 4): out-of-range
# constant Gather indices, QuantizeLinear with a scale of 0, NaN or infinity
for idx in "3" "-4" "0 7" "-100"; do
    xm_begin g_oob; xm_input x f32 3x4; xm_const i i64 "$(echo $idx | wc -w)" i64s $idx; xm_node Gather x,i y; xm_end y
    err_case g_oob "is out of range for axis 0"
done
xm_begin g_in; xm_input x f32 3x4; xm_const i i64 4 i64s -3 -1 0 2; xm_node Gather x,i y; xm_end y
ok_case g_in "3, 4"
for v in 0 nan inf; do
    xm_begin "q_$v"; xm_input x f32 1x4; xm_const s f32 scalar f32s "$v"; xm_node QuantizeLinear x,s y; xm_end y
    err_case "q_$v" "a scale must be finite and not 0"
done
for v in nan inf; do
    xm_begin "dq_$v"; xm_input x f32 1x4; xm_const s f32 scalar f32s 1; xm_const s2 f32 scalar f32s "$v"
    xm_node QuantizeLinear x,s q; xm_node DequantizeLinear q,s2 y; xm_end y
    err_case "dq_$v" "a scale must be finite"
done
xm_begin q_ok; xm_input x f32 1x4; xm_const s f32 scalar f32s 2; xm_node QuantizeLinear x,s q; xm_node DequantizeLinear q,s y; xm_end y
ok_case q_ok "1, 4"

# a chain: an empty tensor flows through several nodes to the output
xm_begin z_chain; xm_input x f32 1x3x8x8; xm_const W f32 0x3x3x3 zeros 0
xm_node Conv x,W c; xm_node Relu c r; xm_node MaxPool r y '<attr name="kernel_shape" type="INTS" value="2 2"/>'; xm_end y
ok_case z_chain "1, 3, 8, 8"
finish
