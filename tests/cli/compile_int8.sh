#!/bin/sh
# compile_int8.sh - `oqc compile` (INT8, the default precision) end to end:
#   - the emitted C builds with gcc and clang -std=c99 -O2 -Wall -Wextra -Werror
#     -pedantic, and under -fsanitize=address,undefined;
#   - it gives the bits of `oqc eval`'s INT8 path (--save-int8) on the same inputs, in
#     both requantization modes, through NAME_run, and NAME_run_int8 gives the nearest
#     8-bit steps of NAME_run's outputs (the Gemm at the end keeps its accumulators);
#   - it is deterministic, calls no allocator and has one writable object (the arena);
#   - --requant fixed cross-compiles for a Cortex-M0 and the layer code needs no
#     soft-float routine (only the float I/O boundary does; none at all through the
#     integer I/O entry point);
#   - bad usage fails cleanly and writes nothing.
# Models: Fashion-MNIST (100 test images; 10 under the sanitizers) and squeezenet1_1
# (one image, gcc only: the portable INT8 kernels take ~0.3 s per image).
# The emitted files do not depend on how oqc was built, so outside the default
# configuration (clang, sanitizers) only what does is checked: oqc compile and eval
# themselves, and the emitted code (one gcc build per mode) against that oqc's eval;
# the --target builds run in the clang configuration only (below).
. tests/cli/lib.sh
FULL=0
[ "${OQC_CONFIG:-default}" = default ] && FULL=1
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
DRIVER=tests/emit/emitted_main.c
M=models/fashion/fashion_cnn.onnx
D=models/fashion
N=100
[ "${OQC_CONFIG:-default}" = san ] && N=10
mknpy "$N, 1, 28, 28" $D/test_1000.npy "$TMP/in.npy"

# build CC OUT DIR NAME [FLAGS...]: the driver linked with the emitted model in DIR.
build() {
    cc=$1 out=$2 dir=$3 name=$4
    shift 4
    cc_cached $cc $FLAGS "$@" -I "$dir" -DOQC_MODEL_HEADER="\"$name.h\"" -DOQC_MODEL_PREFIX="$name" \
        $DRIVER "$dir"/*.c -lm -o "$out" 2>"$TMP/cc.log"
}

for r in float fixed; do
    O="$TMP/f_$r"
    "$OQC" compile "$M" -o "$O" --name fashion --calib $D/calib_500.npy $NAMED --requant $r -q &&
        ok "compile (requant $r)" || fail "compile (requant $r)"
    "$OQC" eval "$M" --data "$TMP/in.npy" --calib $D/calib_500.npy $NAMED --requant $r \
        --save-int8 "$TMP/eval_$r.npy" -q >/dev/null || fail "eval (requant $r)"
    ccs=gcc
    [ $FULL = 1 ] && ccs="gcc clang"
    for cc in $ccs; do
        command -v $cc >/dev/null || { skip "no $cc"; continue; }
        if build $cc "$TMP/run_$cc" "$O" fashion; then
            ok "$cc builds the $r model (-std=c99 -pedantic -Werror)"
        else
            fail "$cc: $(head -n 5 "$TMP/cc.log")"; continue
        fi
        "$TMP/run_$cc" "$TMP/in.npy" "$TMP/out_$cc.npy" >/dev/null &&
            same_data "$TMP/out_$cc.npy" "$TMP/eval_$r.npy" &&
            ok "$cc, $r: $N outputs bit-identical with oqc eval's INT8 path" ||
            fail "$cc, $r: outputs differ from oqc eval"
        # no -m flag, yet on x86-64 the SIMD families are in (chosen at run time)
        if [ "$(uname -m)" = x86_64 ] && [ $r = float ]; then
            objdump -d "$TMP/run_$cc" | grep -q 'vpmaddwd.*ymm' &&
                objdump -d "$TMP/run_$cc" | grep -q 'vpdpbusd.*zmm' &&
                ok "$cc, no -m flag: AVX2 and AVX-512 VNNI kernels built in (run-time dispatch)" ||
                fail "$cc, no -m flag: no SIMD kernels in the program"
        fi
    done
    [ "$(uname -m)" != x86_64 ] || grep -q "^# Target 'dispatch'" "$O/fashion.mk" &&
        ok "default target: dispatch on x86-64" || fail "default target: $(grep Target "$O/fashion.mk")"
done
cmp -s "$TMP/eval_float.npy" "$TMP/eval_fixed.npy" && echo "(float and fixed happen to agree)"

# --target: NAME.mk's flags select the kernel family (native: the build machine's best);
# the bits are the same as the portable build's and oqc eval's.  avx512vbmi and amx where
# the CPU has them.  These builds (one whole runtime each, emitted files that do not
# depend on how oqc was built) run in the clang configuration: the default one is the
# longest of the three that `make check` runs side by side.
TGT=0
[ "${OQC_CONFIG:-default}" = clang ] && TGT=1
tgs=""
[ $TGT = 1 ] && tgs="native avx2 portable dispatch"
[ $TGT = 1 ] && grep -qw avx512vbmi /proc/cpuinfo 2>/dev/null &&
    grep -qw avx512_vnni /proc/cpuinfo 2>/dev/null && tgs="$tgs avx512vbmi"
[ $TGT = 1 ] && grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && tgs="$tgs amx"
for t in $tgs; do
    "$OQC" compile "$M" -o "$TMP/tg_$t" --name fashion --calib $D/calib_500.npy $NAMED --requant fixed \
        --target $t -q
    tf=$(sed -n 's/^fashion_CFLAGS := //p' "$TMP/tg_$t/fashion.mk")
    cc_cached gcc $tf -Wall -Wextra -Werror -pedantic -I "$TMP/tg_$t" -DOQC_MODEL_HEADER='"fashion.h"' \
        -DOQC_MODEL_PREFIX=fashion $DRIVER "$TMP/tg_$t"/*.c -lm -o "$TMP/run_tg" 2>"$TMP/cc.log" &&
        "$TMP/run_tg" "$TMP/in.npy" "$TMP/out_tg.npy" >/dev/null &&
        same_data "$TMP/out_tg.npy" "$TMP/eval_fixed.npy" &&
        ok "--target $t ($tf): same bits" || fail "--target $t: $(head -n 3 "$TMP/cc.log")"
done
# --weight-bits 7: weights in [-63, 63], every conv flagged for AVX2's vpmaddubsw family
# (wpair16 1); the emitted code built for avx2 and portable gives eval's bits.
"$OQC" eval "$M" --data "$TMP/in.npy" --calib $D/calib_500.npy $NAMED --weight-bits 7 \
    --save-int8 "$TMP/eval_w7.npy" -q >"$TMP/w7.txt" || fail "eval --weight-bits 7"
grep -q "weights: 7 bits" "$TMP/w7.txt" && ok "eval reports 7-bit weights" ||
    fail "eval --weight-bits 7: $(head -n 2 "$TMP/w7.txt")"
cmp -s "$TMP/eval_w7.npy" "$TMP/eval_float.npy" && fail "7-bit weights changed nothing"
tgs=portable
[ $TGT = 1 ] && tgs="portable avx2"
for t in $tgs; do
    "$OQC" compile "$M" -o "$TMP/w7_$t" --name fashion --calib $D/calib_500.npy $NAMED --weight-bits 7 \
        --target $t -q || fail "compile --weight-bits 7 --target $t"
    nconv=$(grep -c "[.]wpair16 = " "$TMP/w7_$t/fashion.c")
    nflag=$(grep -c "[.]wpair16 = 1," "$TMP/w7_$t/fashion.c")
    [ "$nconv" -ge 3 ] && [ "$nflag" = "$nconv" ] && ok "--weight-bits 7: all $nconv convs have wpair16 1" ||
        fail "--weight-bits 7: $nflag of $nconv convs flagged"
    wmax=$(sed -n '/^const int8_t .*_w\[/,/};$/p' "$TMP/w7_$t"/fashion_weights.c | grep -v '^const' |
           tr -c -- '-0123456789' '\n' | awk '$1 != "" { v = $1 < 0 ? -$1 : $1; if (v > m) m = v } END { print m + 0 }')
    [ "$wmax" = 63 ] && ok "--weight-bits 7: weights reach and stay within +-63" ||
        fail "--weight-bits 7: largest |weight| $wmax"
    tf=$(sed -n 's/^fashion_CFLAGS := //p' "$TMP/w7_$t/fashion.mk")
    cc_cached gcc $tf -Wall -Wextra -Werror -pedantic -I "$TMP/w7_$t" -DOQC_MODEL_HEADER='"fashion.h"' \
        -DOQC_MODEL_PREFIX=fashion $DRIVER "$TMP/w7_$t"/*.c -lm -o "$TMP/run_w7" 2>"$TMP/cc.log" &&
        "$TMP/run_w7" "$TMP/in.npy" "$TMP/out_w7.npy" >/dev/null &&
        same_data "$TMP/out_w7.npy" "$TMP/eval_w7.npy" &&
        ok "--weight-bits 7 --target $t: same bits as eval" ||
        fail "--weight-bits 7 --target $t: $(head -n 3 "$TMP/cc.log")"
done
for b in 1 9 x 7x ""; do
    "$OQC" compile "$M" -o "$TMP/none" --calib $D/calib_500.npy $NAMED --weight-bits "$b" 2>"$TMP/err"; st=$?
    [ "$st" = 1 ] && grep -q "weight-bits" "$TMP/err" && [ ! -e "$TMP/none" ] &&
        ok "--weight-bits '$b' refused" || fail "--weight-bits '$b': status $st"
done
"$OQC" compile "$M" -o "$TMP/none" --calib $D/calib_500.npy $NAMED --target sse9 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "sse9" "$TMP/err" && [ ! -e "$TMP/none" ] && ok "unknown --target refused" ||
    fail "bad --target: $st"

if [ $FULL = 1 ]; then
# The integer-I/O entry point agrees with the float one: a program quantizes sample 0
# exactly as fashion_run does and calls fashion_run_int8.  The Fashion model ends with a
# Gemm, which keeps its int32 accumulators (docs/int8.md): fashion_run returns
# acc * s_acc[k] in float, fashion_run_int8 rounds acc * M[k] (M = s_acc / OUTPUT_SCALE) to
# the nearest step.  So each q * SCALE is within half a step of y, up to the float
# roundings of s_acc, M and the products (relative 2^-22 together: 1e-5 of a step is
# far above that and far below any wrong step), or q is at the end of its range with y
# beyond it.  A layer writing 8 bits itself would make them equal bit for bit.
cat >"$TMP/int8io.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "fashion.h"
#include "oqci.h"
int main(void) {
    static float x[fashion_INPUT_SIZE], y[fashion_OUTPUT_SIZE], y2[fashion_OUTPUT_SIZE];
    static unsigned char qx[fashion_INPUT_SIZE], qy[fashion_OUTPUT_SIZE];
    const double S = fashion_OUTPUT_SCALE, top = fashion_OUTPUT_UNSIGNED ? 255 : 127;
    const double bottom = fashion_OUTPUT_UNSIGNED ? 0 : -127;
    int i, bad = 0;
    FILE *f = fopen("in.npy", "rb");
    if (!f || fseek(f, 128, SEEK_SET) || fread(x, sizeof x, 1, f) != 1)
        return 2;
    fclose(f);
    if (fashion_run(x, y, NULL))
        return 3;
    if (oqci_quantize(x, qx, fashion_INPUT_UNSIGNED ? OQCI_U8 : OQCI_S8, fashion_INPUT_SIZE,
                      fashion_INPUT_SCALE) || fashion_run_int8(qx, qy, NULL) ||
        oqci_dequantize(qy, fashion_OUTPUT_UNSIGNED ? OQCI_U8 : OQCI_S8, y2,
                        fashion_OUTPUT_SIZE, fashion_OUTPUT_SCALE))
        return 4;
    for (i = 0; i < fashion_OUTPUT_SIZE; i++) {
        double q = y2[i] / S, t = y[i] / S;
        int clipped = (q == top && t > top) || (q == bottom && t < bottom);
        bad += !clipped && fabs(q - t) > 0.5 + 1e-5;
    }
    printf("%d of %d outputs off\n", bad, fashion_OUTPUT_SIZE);
    return bad != 0;
}
EOF
O="$TMP/f_fixed"
cp "$TMP/in.npy" "$O/../in.npy" 2>/dev/null
cc_cached gcc $FLAGS -I "$O" "$TMP/int8io.c" "$O"/*.c -lm -o "$TMP/int8io" 2>"$TMP/cc.log" &&
    (cd "$TMP" && ./int8io >/dev/null) &&
    ok "fashion_run_int8: the nearest 8-bit step of fashion_run's outputs" ||
    fail "integer I/O: $(head -n 3 "$TMP/cc.log")"

# Sanitizers (one build, the fixed model).
if cc_cached gcc $SAN_CFLAGS -I "$O" \
        -DOQC_MODEL_HEADER='"fashion.h"' -DOQC_MODEL_PREFIX=fashion $DRIVER "$O"/*.c -lm \
        -o "$TMP/run_san" 2>"$TMP/cc.log"; then
    "$TMP/run_san" "$TMP/in.npy" "$TMP/out_san.npy" 10 >/dev/null 2>"$TMP/san.log" &&
        same_data "$TMP/out_san.npy" "$TMP/eval_fixed.npy" 400 &&
        ok "ASan/UBSan: clean, same bits" || fail "sanitizers: $(head -n 5 "$TMP/san.log")"
else
    fail "sanitizer build: $(head -n 3 "$TMP/cc.log")"
fi

# Deterministic, no allocator, one writable object.
"$OQC" compile "$M" -o "$TMP/again" --name fashion --calib $D/calib_500.npy $NAMED --requant fixed -q
diff -r "$TMP/f_fixed" "$TMP/again" >/dev/null && ok "same inputs, byte-identical output" ||
    fail "two compiles differ"
grep -lE '\b(malloc|calloc|realloc|free)[[:space:]]*\(' "$O"/*.c "$O"/*.h >/dev/null &&
    fail "an allocator call in the output" || ok "no malloc/free in the output"
# (const structs holding pointers go to .data.rel.ro, read-only after relocation; the
# objects are those of the gcc build above, from the object cache)
w=""
for c in "$O"/*.c; do
    cc_cached gcc $FLAGS -c -I "$O" "$c" -o "$TMP/w.o" &&
        w="$w$(objdump -t "$TMP/w.o" | grep -E ' O (\.bss|\.data|COMMON)[[:space:]]' |
               awk '{print $NF}' | tr '\n' ' ')"
done
[ "$w" = "static_arena " ] && ok "only writable object: static_arena" ||
    fail "writable objects: '$w'"

# Cortex-M0: --requant fixed with -DOQCI_NO_FLOAT (the float requantization compiled
# out).  Linked with unused sections removed from the integer-I/O entry point, the
# image has no __aeabi_f*/__aeabi_d* at all; from the float entry point only the
# quantize/dequantize boundary functions use them.
if command -v arm-none-eabi-gcc >/dev/null; then
    A="arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -O2 -std=c99 -ffreestanding -DOQCI_NO_FLOAT -ffunction-sections -fdata-sections"
    objs=""
    okc=1
    for c in "$O"/*.c; do
        b=$(basename "$c" .c)
        $A -Wall -Wextra -Werror -c -I "$O" "$c" -o "$TMP/m0_$b.o" 2>>"$TMP/m0.log" || okc=0
        objs="$objs $TMP/m0_$b.o"
    done
    [ $okc = 1 ] && ok "cross-compiles for Cortex-M0 (-mcpu=cortex-m0 -mthumb)" ||
        fail "Cortex-M0 build: $(head -n 5 "$TMP/m0.log")"
    for e in fashion_run_int8 fashion_run; do
        arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -nostartfiles -Wl,--gc-sections \
            -Wl,-e,$e -Wl,--undefined=$e --specs=nosys.specs $objs -o "$TMP/m0_$e.elf" \
            2>>"$TMP/m0.log" || fail "Cortex-M0 link from $e: $(tail -n 3 "$TMP/m0.log")"
    done
    sf=$(arm-none-eabi-nm "$TMP/m0_fashion_run_int8.elf" | grep -cE '__aeabi_[fd]')
    [ "$sf" = 0 ] && ok "M0 integer I/O image: no soft-float routine" ||
        fail "M0 integer I/O image has $sf soft-float symbols"
    # which functions of the float image call soft-float: only the boundary
    callers=$(arm-none-eabi-objdump -d "$TMP/m0_fashion_run.elf" | awk '
        /^[0-9a-f]+ <.*>:$/ { fn = $2 }
        /bl.*<__aeabi_[fd]/ { print fn }' | sort -u | tr '\n' ' ')
    case "$callers" in
        "") fail "M0 float image: no soft-float calls at all (the boundary must convert)" ;;
        *) bad=$(echo "$callers" | tr ' ' '\n' | grep -v -e '^$' -e '<oqci_quantize>:' \
                -e '<oqci_dequantize>:' -e '<oqci_dequantize_s32>:' -e '<__aeabi' -e '<__' | tr '\n' ' ')
           [ -z "$bad" ] && ok "M0 float image: soft-float only in $callers" ||
               fail "M0: soft-float called from $bad" ;;
    esac
else
    skip "arm-none-eabi-gcc not installed (scripts/install-deps.sh installs it)"
fi
fi # FULL

# Per-layer hooks: built with -DOQC_LAYER_HOOKS='"hooks.h"', every layer runs between
# OQC_LAYER_BEGIN(i) and OQC_LAYER_END(i, name, op, macs), once per inference, and the
# multiply-adds reported for Conv/Gemm add up to those of the optimised graph's shapes
# (oqc dump --after all: outputs x weights per output channel), computed here in awk.
if [ $FULL = 1 ]; then
    cat >"$TMP/hooks.h" <<'EOF'
void t_begin(int i);
void t_end(int i, const char *name, const char *op, long long macs);
#define OQC_LAYER_BEGIN(i) t_begin(i)
#define OQC_LAYER_END(i, name, op, macs) t_end(i, name, op, macs)
EOF
    cat >"$TMP/hooks.c" <<'EOF'
#include <stdio.h>
#include "hooks.h"
static int open_ = -1;
void t_begin(int i) {
    if (open_ != -1)
        printf("NESTED %d in %d\n", i, open_);
    open_ = i;
}
void t_end(int i, const char *name, const char *op, long long macs) {
    if (open_ != i)
        printf("UNPAIRED %d (open %d)\n", i, open_);
    open_ = -1;
    printf("L %d %s %lld %s\n", i, op, macs, name);
}
EOF
    O="$TMP/f_fixed"
    mknpy "1, 1, 28, 28" $D/test_1000.npy "$TMP/in1.npy"
    if cc_cached gcc $FLAGS -I "$O" -I "$TMP" -DOQC_LAYER_HOOKS='"hooks.h"' -DOQC_MODEL_HEADER='"fashion.h"' \
            -DOQC_MODEL_PREFIX=fashion $DRIVER "$O"/*.c "$TMP/hooks.c" -lm -o "$TMP/run_hooks" \
            2>"$TMP/cc.log" && "$TMP/run_hooks" "$TMP/in1.npy" "$TMP/out_hooks.npy" >"$TMP/hooks.out"; then
        # (the driver runs sample 0 twice: distinct layers)
        nl=$(awk '$1 == "L" { print $2 }' "$TMP/hooks.out" | sort -u | wc -l)
        nc=$(grep -c 'OQC_LAYER_END([0-9]' "$O/fashion.c")
        got=$(awk '$1 == "L" && ($3 == "Conv" || $3 == "Gemm") && !seen[$2]++ { s += $4 } END { print s + 0 }' "$TMP/hooks.out")
        want=$("$OQC" dump "$M" --after all 2>/dev/null | awk '
            function numel(s,   a, n, i, p) { n = split(s, a, "x"); p = 1; for (i = 1; i <= n; i++) p *= a[i]; return p }
            $2 == "Conv" || $2 == "Gemm" {
                i = index($0, " -> ("); l = substr($0, 1, i); r = substr($0, i)
                k = 0; while (match(l, /f32\[[0-9x]+\]/)) { k++; sh = substr(l, RSTART + 4, RLENGTH - 5)
                    if (k == 2) w = sh; l = substr(l, RSTART + RLENGTH) }
                o = 0; last = 0; while (match(r, /f32\[[0-9x]+\]/)) { sh = substr(r, RSTART + 4, RLENGTH - 5)
                    o += numel(sh); n = split(sh, d, "x"); last = d[n]; r = substr(r, RSTART + RLENGTH) }
                split(w, wd, "x")
                s += o * numel(w) / ($2 == "Conv" ? wd[1] : last) }
            END { print s + 0 }')
        if ! grep -qE 'NESTED|UNPAIRED' "$TMP/hooks.out" && [ "$nl" = "$nc" ] && [ "$nl" -gt 8 ] &&
                [ "$got" = "$want" ] && same_data "$TMP/out_hooks.npy" "$TMP/eval_fixed.npy" 40; then
            ok "layer hooks: $nl layers, paired, $got MACs in Conv/Gemm as the graph's shapes give; same bits"
        else
            fail "layer hooks: $nl of $nc layers, MACs $got vs $want: $(grep -m 3 -E 'NESTED|UNPAIRED' "$TMP/hooks.out")"
        fi
    else
        fail "layer hooks build/run: $(head -n 3 "$TMP/cc.log")"
    fi
fi

# squeezenet1_1 (gcc, one image).
if [ "${OQC_CONFIG:-default}" = default ]; then
    S=models/tv/squeezenet1_1
    "$OQC" compile $S.onnx -o "$TMP/sq" --name sq --calib ${S}_in4.npy -q &&
        "$OQC" eval $S.onnx --data ${S}_in1.npy --calib ${S}_in4.npy --save-int8 "$TMP/sq_eval.npy" \
            -q >/dev/null &&
        build gcc "$TMP/run_sq" "$TMP/sq" sq && "$TMP/run_sq" ${S}_in1.npy "$TMP/sq_out.npy" >/dev/null &&
        same_data "$TMP/sq_out.npy" "$TMP/sq_eval.npy" &&
        ok "squeezenet1_1: emitted INT8 bit-identical with oqc eval" ||
        fail "squeezenet1_1 INT8: $(head -n 3 "$TMP/cc.log")"
fi

# Tiny models (gcc; default configuration): every INT8 kernel form (grouped, depthwise,
# dilated, strided, asymmetric pads, 1x1, Gemm/MatMul shapes, pools with and without
# padding, adds, clamps, merged convs and concat buffers) and float ops between INT8 ones
# (LeakyRelu, Softmax, broadcast adds) in one output.  Calibrated and evaluated on 8
# pseudo-random inputs (squeezenet's image data, reshaped); emitted == oqc eval, bits.
if [ "${OQC_CONFIG:-default}" = default ]; then
    # The runtime copies are verbatim: build them once (checked below), from the Fashion
    # model's copies where it has one (the gcc build above compiled them: the object
    # cache has them), else from runtime/.
    mkdir -p "$TMP/rt"
    for c in runtime/int8/oqci_*.c runtime/fp32/oqcf_*.c; do
        case "$c" in */oqcf_pool.c | */oqcf_threads.c) continue ;; esac
        b=$(basename "$c" .c)
        if [ -e "$TMP/f_float/$b.c" ]; then
            cc_cached gcc $FLAGS -I "$TMP/f_float" -c "$TMP/f_float/$b.c" -o "$TMP/rt/$b.o"
        else
            cc_cached gcc $FLAGS $RT_INC -c "$c" -o "$TMP/rt/$b.o"
        fi || fail "runtime $c"
    done
    nt=0
    nm=0
    for m in conv_basic conv_depthwise conv_depthwise_mult2 conv_dilations conv_group \
             conv_pads_asym conv_rect_kernel conv_strides conv_1x1 conv_nobias \
             conv_autopad_same_upper avgpool_pads_exclude avgpool_pads_include avgpool_ceil \
             avgpool_same_upper_include maxpool_ceil_pads maxpool_dilations maxpool_pads \
             globalavgpool_basic gemm_alpha_beta gemm_bias_col gemm_no_c gemm_transB \
             matmul_2d matmul_bcast_3d_2d sum_three clip_minmax relu_basic \
             pass_gemm_bn mixed_small_cnn pass_leaky pass_relu6_opset12 add_bcast_channel \
             pass_caffe2_muladd resize_linear_cnn upsample_nearest_cnn convtranspose_basic \
             convtranspose_group convtranspose_asym convtranspose_pads_outpad transpose_cnn \
             transpose_nhwc_cnn depth_space_cnn; do
        mf=models/tiny/$m.onnx
        nm=$((nm + 1))
        "$OQC" compile $mf --precision fp32 -o "$TMP/shape_$m" --name t -q 2>/dev/null || {
            fail "$m: fp32 compile (for the shape)"; continue; }
        sh=$(sed -n "s/^\/\* input 0 '.*': f32\[\(.*\)\] \*\/$/\1/p" "$TMP/shape_$m/t.h" | sed 's/x/, /g')
        mknpy "8, $sh" models/tv/squeezenet1_1_in4.npy "$TMP/in_$m.npy"
        "$OQC" compile $mf -o "$TMP/q_$m" --name t --calib "$TMP/in_$m.npy" -q 2>"$TMP/err" &&
            "$OQC" eval $mf --data "$TMP/in_$m.npy" --calib "$TMP/in_$m.npy" \
                --save-int8 "$TMP/ev_$m.npy" -q >/dev/null 2>>"$TMP/err" &&
            for f in "$TMP/q_$m"/oqc*.c; do
                tail -n +2 "$f" | cmp -s - "$(rt_src "$f")" || echo "$f" >>"$TMP/err"
            done &&
            cc_cached gcc $FLAGS -I "$TMP/q_$m" -DOQC_MODEL_HEADER='"t.h"' -DOQC_MODEL_PREFIX=t $DRIVER \
                "$TMP/q_$m"/t*.c "$TMP"/rt/*.o -lm -o "$TMP/run_$m" 2>"$TMP/cc.log" &&
            "$TMP/run_$m" "$TMP/in_$m.npy" "$TMP/out_$m.npy" >/dev/null &&
            same_data "$TMP/out_$m.npy" "$TMP/ev_$m.npy" && nt=$((nt + 1)) ||
            fail "$m: INT8 emitted != oqc eval: $(head -n 3 "$TMP/err" "$TMP/cc.log")"
    done
    [ "$nt" = "$nm" ] && ok "$nt of $nm tiny models: emitted INT8 bit-identical with oqc eval" ||
        fail "only $nt of $nm tiny models: emitted INT8 bit-identical with oqc eval"
fi

# Bad usage: nothing written.
"$OQC" compile "$M" -o "$TMP/none" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q -- "--calib" "$TMP/err" && [ ! -e "$TMP/none" ] &&
    ok "INT8 without thresholds: error, nothing written" || fail "no thresholds: $st $(cat "$TMP/err")"
"$OQC" compile "$M" -o "$TMP/none" --calib /nonexistent.npy 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && [ ! -e "$TMP/none" ] && ok "unreadable calibration data: nothing written" ||
    fail "bad calib: $st"
"$OQC" compile "$M" -o "$TMP/none" --precision fp32 --calib $D/calib_500.npy $NAMED 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && ok "--calib with --precision fp32 refused" || fail "fp32 + calib: $st"
finish
