#!/bin/sh
# compile_all.sh - every committed model through `oqc compile` (issue: "emitted code for
# every committed model compiles with gcc and clang -std=c99 -O2 -Wall -Wextra -Werror
# -pedantic and runs clean under -fsanitize=address,undefined"):
#   - models with one float32 input: INT8, calibrated on 8 pseudo-random samples of their
#     input shape (squeezenet's image data, reshaped); the others (several inputs: oqc
#     calibrates single-input models only) in FP32;
#   - models oqc cannot compile (integer graph inputs or outputs, a Dropout mask
#     output, ...) must be refused with exit status 1, a message naming the
#     model, and no output directory;
#   - each output's own files (NAME.c, NAME_weights.c) compile with gcc -O2 -Werror
#     -pedantic and pass clang's front end with the same flags (-fsyntax-only: clang's
#     warnings are its front end's; full clang builds: compile_int8.sh, compile_fp32.sh;
#     the runtime files: int8_runtime_c99.sh, fp32_runtime_c99.sh);
#     with one input the model is built with ASan + UBSan (gcc) and run on its samples
#     (the driver also reruns sample 0 in the caller's arena: same bits): clean.
# Dynamic-shape models get --input-shape.  One configuration only, clang's (the emitted
# code does not depend on how oqc was built; `make check` runs the three configurations
# side by side and this evens out their lengths).  The runtime copies are verbatim
# (checked), so the instrumented runtime is built once and linked.
. tests/cli/lib.sh
only_config clang
FLAGS="-std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off"
SANF="-std=c99 -O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -ffp-contract=off"
DRIVER=tests/emit/emitted_main.c
DATA=models/tv/squeezenet1_1_in4.npy
CLANG=clang
command -v clang >/dev/null || { skip "no clang (scripts/install-deps.sh installs it)"; CLANG=""; }

# The runtime, once per build flavour (oqcf_pool.c and oqcf_threads.c are the threaded
# executor's: single-threaded emitted code gets oqcf_serial.c's functions instead).
# (the runtime with gcc and clang -Werror -pedantic: int8_runtime_c99.sh and
# fp32_runtime_c99.sh; here the instrumented objects the runs link)
mkdir -p "$TMP/rt_san"
for c in runtime/int8/oqci_*.c runtime/fp32/oqcf_*.c; do
    case "$c" in */oqcf_pool.c | */oqcf_threads.c) continue ;; esac
    gcc $SANF $RT_INC -c "$c" -o "$TMP/rt_san/$(basename "$c" .c).o" || fail "runtime $c does not build"
done

# one MODEL.onnx: status lines (INT8, FP32, REFUSED, RAN, BAD message) on stdout.
one() {
    mf=$1
    m=$(basename "$mf" .onnx)
    case "$m" in
        dynamic_batch) args="--input-shape x=1x3x8x8" ;;
        merge_inception) args="--input-shape x=1x6x5x5" ;;
        *) args="" ;;
    esac
    O="$TMP/o_$m"
    # shellcheck disable=SC2086
    "$OQC" compile "$mf" $args --precision fp32 -o "$TMP/s_$m" --name t -q 2>"$TMP/err$W"
    st=$?
    if [ "$st" != 0 ]; then
        if [ "$st" = 1 ] && grep -q "$m" "$TMP/err$W" && [ ! -e "$TMP/s_$m" ]; then
            echo "REFUSED $(head -n 1 "$TMP/err$W" | cut -c1-160)"
        else
            echo "BAD $m: compile failed without a clean refusal (status $st): $(head -n 2 "$TMP/err$W")"
        fi
        return
    fi
    ni=$(grep -c "^/\* input [0-9]* '" "$TMP/s_$m/t.h")
    sh=$(sed -n "s/^\/\* input 0 '.*': f32\[\(.*\)\] \*\/$/\1/p" "$TMP/s_$m/t.h" | sed 's/x/, /g')
    if [ "$ni" = 1 ] && [ -n "$sh" ]; then
        # as many samples (up to 8) as the data holds (squeezenet: its 4 images)
        el=1
        for dim in $(echo "$sh" | tr ',' ' '); do el=$((el * dim)); done
        ns=$((602112 / el)); [ $ns -gt 8 ] && ns=8
        mknpy "$ns, $sh" $DATA "$TMP/in_$m.npy"
        # shellcheck disable=SC2086
        if ! "$OQC" compile "$mf" $args -o "$O" --name t --calib "$TMP/in_$m.npy" -q 2>"$TMP/err$W"; then
            echo "BAD $m: INT8 compile: $(head -n 2 "$TMP/err$W")"
            return
        fi
        echo INT8
    else
        mv "$TMP/s_$m" "$O"
        echo FP32
    fi
    rm -rf "$TMP/s_$m"
    for f in "$O"/oqc*.c; do
        [ -e "$f" ] || continue
        tail -n +2 "$f" | cmp -s - "$(rt_src "$f")" || {
            echo "BAD $m: $(basename "$f") is not a copy of runtime/"; }
    done
    objs=""
    for f in "$O"/oqc*.c; do [ -e "$f" ] && objs="$objs $(basename "$f" .c).o"; done
    own=$(ls "$O"/t*.c)
    ok1=1
    for c in $own; do   # the model's own files (the runtime is built above)
        gcc $FLAGS -I "$O" -c "$c" -o "$TMP/gcc.o$W" 2>>"$TMP/cc_$m.log" || ok1=0
        [ -z "$CLANG" ] || clang $FLAGS -I "$O" -fsyntax-only "$c" 2>>"$TMP/cc_$m.log" || ok1=0
    done
    if [ "$ni" = 1 ] && [ -n "$sh" ]; then
        (cd "$TMP/rt_san" && gcc $SANF -I "$O" -DOQC_MODEL_HEADER='"t.h"' -DOQC_MODEL_PREFIX=t \
            "$OLDPWD/$DRIVER" $own $objs -lm -o "$TMP/run_san$W") 2>>"$TMP/cc_$m.log" || ok1=0
        if [ $ok1 = 1 ]; then
            rm -rf "$TMP/y_san$W"
            if "$TMP/run_san$W" "$TMP/in_$m.npy" "$TMP/y_san$W" >/dev/null 2>"$TMP/san.err$W"; then
                echo RAN
            else
                echo "BAD $m: run under ASan+UBSan: $(head -n 3 "$TMP/san.err$W" | tr '\n' ' ')"
            fi
        fi
    else   # several inputs: compiled with the sanitizers too, not run (one-input driver)
        for c in $own; do
            gcc $SANF -I "$O" -c "$c" -o "$TMP/san.o$W" 2>>"$TMP/cc_$m.log" || ok1=0
        done
    fi
    [ $ok1 = 1 ] || echo "BAD $m: does not build: $(head -n 3 "$TMP/cc_$m.log" | tr '\n' ' ')"
    rm -rf "$O" "$TMP/in_$m.npy"
}

# Two workers over the models (the machine's two cores), then the counts.
ls models/tiny/*.onnx models/fashion/*.onnx models/tv/squeezenet1_1.onnx >"$TMP/models"
for W in 0 1; do
    awk -v w=$W 'NR % 2 == w' "$TMP/models" | while read -r mf; do one "$mf"; done >"$TMP/res$W" &
done
wait
cat "$TMP/res0" "$TMP/res1" >"$TMP/res"
grep '^REFUSED' "$TMP/res" | sed 's/^REFUSED /refused: /'
grep '^BAD' "$TMP/res" >"$TMP/bad"
while read -r _ msg; do fail "$msg"; done <"$TMP/bad"
n8=$(grep -c '^INT8' "$TMP/res"); n32=$(grep -c '^FP32' "$TMP/res")
nref=$(grep -c '^REFUSED' "$TMP/res"); nrun=$(grep -c '^RAN' "$TMP/res"); bad=$(grep -c '^BAD' "$TMP/res")
total=$((n8 + n32 + nref))
[ "$total" -ge 170 ] && ok "$total committed models: $n8 compiled in INT8, $n32 in FP32 (several inputs), $nref refused cleanly" ||
    fail "only $total models seen"
[ "$bad" = 0 ] && ok "every output builds with gcc -O2${CLANG:+ and passes clang} -Werror -pedantic; $nrun with one input run under ASan+UBSan: clean" ||
    fail "$bad models failed (above)"
# every refusal is one of the documented limits (docs/compile.md)
other=$(grep '^REFUSED' "$TMP/res" | grep -cvE "is (i64|i8|u8); oqc compile supports float32|Dropout's mask|\(ConstantOfShape\): the C emitter")
[ "$other" = 0 ] && ok "refusals: $nref, each a documented limit (integer graph I/O, Dropout masks, ConstantOfShape)" ||
    fail "$other refusals for other reasons: $(grep '^REFUSED' "$TMP/res" | grep -vE "is (i64|i8|u8)|Dropout|ConstantOfShape" | head -n 3)"
finish
