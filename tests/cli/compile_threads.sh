#!/bin/sh
# compile_threads.sh - `oqc compile --threads N`: the emitted code runs its layers as N
# tasks of a parallel-for with the bits of one thread.
#   - Fashion-MNIST (100 test images) INT8 and FP32, and squeezenet1_1 (one image) INT8
#     and FP32, compiled with --threads 1, 2 and 3 and built with gcc -std=c11 -pedantic
#     -Werror -pthread: the outputs of 2 and 3 threads are byte-identical with 1 thread's,
#     on the default pthread pool; squeezenet1_1's INT8 C also with the portable INT8
#     kernel family and the best this CPU runs (AVX-512 VBMI, VNNI or AVX2); Fashion FP32 and
#     squeezenet1_1 INT8 through an application's parallel-for (NAME_set_parallel; tasks
#     in reverse order, and the layers really split into N tasks; Fashion's INT8 convs are
#     below the INT8 split's minimum work, OQCI_PAR_MIN_MACS; squeezenet's INT8 max pools
#     split too, OQCI_PAR_MIN_BYTES; the split itself: test_int8_pool's test_par_split);
#     models/tiny se_block and lut_cnn INT8 (squeeze-excitation Muls, tables) likewise,
#     built with the split minimums at 64 so their small tensors split;
#   - the one-thread output holds no thread code: no source mentions pthread, and the
#     objects of a -DOQCI_NO_DISPATCH build (a microcontroller's) reference no pthread
#     symbol, where the two-thread ones do;
#   - under the sanitizer configuration, Fashion FP32 and squeezenet1_1 INT8 at 3 threads
#     built with -fsanitize=address,undefined and with -fsanitize=thread (races between
#     tasks);
#   - --threads 0 is refused, nothing written.
# The emitted files do not depend on how oqc was built: the full set runs in the default
# configuration, the sanitizer builds in the san one.
. tests/cli/lib.sh
FLAGS="-std=c11 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off -pthread"
DRIVER=tests/emit/emitted_main.c
M=models/fashion/fashion_cnn.onnx
D=models/fashion
S=models/tv/squeezenet1_1
mknpy "100, 1, 28, 28" $D/test_1000.npy "$TMP/in.npy"

# build [-F BASE] OUT DIR [FLAGS...]: the driver linked with the emitted model `m` in DIR,
# compiled with BASE (default $FLAGS) and FLAGS.
build() {
    bf=$FLAGS
    [ "$1" = -F ] && { bf=$2; shift 2; }
    out=$1 dir=$2
    shift 2
    # shellcheck disable=SC2086
    cc_cached gcc $bf "$@" -I "$dir" -DOQC_MODEL_HEADER='"m.h"' -DOQC_MODEL_PREFIX=m \
        $DRIVER "$dir"/*.c -lm -o "$out" 2>"$TMP/cc.log"
}

# compile NAME MODEL THREADS [ARGS...]: compiles into $TMP/NAME (name m).
compile() {
    o=$1 mf=$2 t=$3
    shift 3
    "$OQC" compile "$mf" -o "$TMP/$o" --name m --threads "$t" -q "$@" 2>"$TMP/err"
}

# par_check WHAT RUN IN REF: RUN, a -DOQC_TEST_PARALLEL build of a --threads 3 output,
# gives REF's data on IN and split its layers into 3 tasks on the driver's parallel-for.
par_check() {
    if "$2" "$3" "$TMP/out_par.npy" >/dev/null 2>"$TMP/par" &&
        grep -q '^parallel-for: [1-9][0-9]* calls, at most 3 tasks$' "$TMP/par" &&
        cmp -s "$4" "$TMP/out_par.npy"; then
        ok "$1: m_set_parallel: $(cat "$TMP/par"), outputs as one thread's"
    else
        fail "$1: m_set_parallel: $(cat "$TMP/par")"
    fi
}

if [ "${OQC_CONFIG:-default}" = default ]; then
    for prec in int8 fp32; do
        for t in 1 2 3; do
            if [ $prec = int8 ]; then
                compile "f_${prec}_$t" $M $t --calib $D/calib_500.npy
            else
                compile "f_${prec}_$t" $M $t --precision fp32
            fi || { fail "fashion $prec --threads $t: $(cat "$TMP/err")"; continue; }
            build "$TMP/run_f_${prec}_$t" "$TMP/f_${prec}_$t" &&
                "$TMP/run_f_${prec}_$t" "$TMP/in.npy" "$TMP/out_f_${prec}_$t.npy" >/dev/null ||
                fail "fashion $prec --threads $t: build or run: $(head -n 5 "$TMP/cc.log")"
        done
        for t in 2 3; do
            cmp -s "$TMP/out_f_${prec}_1.npy" "$TMP/out_f_${prec}_$t.npy" &&
                ok "fashion $prec: 100 outputs with --threads $t byte-identical with --threads 1" ||
                fail "fashion $prec: --threads $t differs from --threads 1"
        done
        grep -q '^#define m_THREADS 3$' "$TMP/f_${prec}_3/m.h" &&
            grep -q 'void m_set_parallel(oqc_parallel_for_fn fn, void \*ctx);' \
                "$TMP/f_${prec}_3/m.h" && ! grep -q 'm_THREADS\|set_parallel' "$TMP/f_${prec}_1/m.h" &&
            ok "fashion $prec: m_THREADS and m_set_parallel in m.h with --threads 3 only" ||
            fail "fashion $prec: the threads API in m.h"
        # An application's parallel-for: tasks in reverse order on the caller.
        if [ $prec = fp32 ]; then
            build "$TMP/run_fp_$prec" "$TMP/f_${prec}_3" -DOQC_TEST_PARALLEL ||
                fail "fashion $prec: -DOQC_TEST_PARALLEL build: $(head -n 5 "$TMP/cc.log")"
            par_check "fashion $prec" "$TMP/run_fp_$prec" "$TMP/in.npy" "$TMP/out_f_${prec}_1.npy"
        fi
    done

    # squeezenet1_1: one image, INT8 and FP32.  The constants do not depend on the
    # threads: m_weights.c (5 MB) is compiled once, from the one-thread output.
    # sbuild DIR DIR1 [FLAGS...]: $TMP/run from DIR, with DIR1's weights object (data
    # only: the kernel families' flags do not concern it).
    sbuild() {
        d=$1 d1=$2
        shift 2
        cmp -s "$d/m_weights.c" "$d1/m_weights.c" || { echo "m_weights.c differs" >"$TMP/cc.log"; return 1; }
        [ -e "$d1/w.o" ] || gcc $FLAGS -c "$d1/m_weights.c" -o "$d1/w.o" 2>"$TMP/cc.log" || return 1
        cc_cached gcc $FLAGS "$@" -I "$d" -DOQC_MODEL_HEADER='"m.h"' -DOQC_MODEL_PREFIX=m $DRIVER \
            $(ls "$d"/*.c | grep -v m_weights.c) "$d1/w.o" -lm -o "$TMP/run" 2>"$TMP/cc.log"
    }
    for prec in int8 fp32; do
        for t in 1 2 3; do
            if [ $prec = int8 ]; then
                compile "s_${prec}_$t" $S.onnx $t --calib ${S}_in4.npy
            else
                compile "s_${prec}_$t" $S.onnx $t --precision fp32
            fi && sbuild "$TMP/s_${prec}_$t" "$TMP/s_${prec}_1" &&
                "$TMP/run" ${S}_in1.npy "$TMP/out_s_${prec}_$t.npy" >/dev/null ||
                fail "squeezenet1_1 $prec --threads $t: $(cat "$TMP/err") $(head -n 5 "$TMP/cc.log")"
        done
        for t in 2 3; do
            cmp -s "$TMP/out_s_${prec}_1.npy" "$TMP/out_s_${prec}_$t.npy" &&
                ok "squeezenet1_1 $prec: --threads $t byte-identical with --threads 1" ||
                fail "squeezenet1_1 $prec: --threads $t differs from --threads 1"
        done
    done

    # squeezenet1_1 INT8, 3 threads: an application's parallel-for (tasks in reverse
    # order), and every INT8 kernel family (flags as oqc compile --target writes them).
    sbuild "$TMP/s_int8_3" "$TMP/s_int8_1" -DOQC_TEST_PARALLEL ||
        fail "squeezenet1_1 int8: -DOQC_TEST_PARALLEL build: $(head -n 5 "$TMP/cc.log")"
    par_check "squeezenet1_1 int8" "$TMP/run" ${S}_in1.npy "$TMP/out_s_int8_1.npy"
    fams="portable:-DOQCI_NO_DISPATCH"
    grep -qw avx2 /proc/cpuinfo && fams="$fams avx2:-mavx2+-mfma"
    grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
        fams="$fams avx512vnni:-mavx512f+-mavx512bw+-mavx512vnni+-mfma"
    grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512vbmi /proc/cpuinfo &&
        fams="$fams avx512vbmi:-mavx512f+-mavx512bw+-mavx512vnni+-mavx512vbmi+-mfma"
    # the portable family and the CPU's best (each a whole runtime build; the families
    # between them split the same way: test_int8_kernels checks oqci_conv_par's splits
    # on every family)
    best=$(echo "$fams" | tr ' ' '\n' | tail -n 1)
    [ "$best" = "${fams%% *}" ] || fams="${fams%% *} $best"
    for fa in $fams; do
        name=${fa%%:*}
        fl=$(echo "${fa#*:}" | tr + ' ')
        # shellcheck disable=SC2086
        sbuild "$TMP/s_int8_3" "$TMP/s_int8_1" $fl &&
            "$TMP/run" ${S}_in1.npy "$TMP/out_fam_$name.npy" >/dev/null &&
            cmp -s "$TMP/out_s_int8_1.npy" "$TMP/out_fam_$name.npy" &&
            ok "squeezenet1_1 int8, family $name, 3 threads: outputs as one thread's" ||
            fail "squeezenet1_1 int8, family $name, 3 threads: $(head -n 3 "$TMP/cc.log")"
    done

    # Squeeze-excitation Muls and table lookups (models/tiny se_block, lut_cnn: SiLU,
    # HardSwish, GELU, Elu, Tanh), 3 threads: oqci_mul_par and oqci_lut_par in the
    # emitted code, and with the split minimums at 64 (-DOQCI_PAR_MIN_BYTES=64, so these
    # small tensors split too) on the driver's reverse-order parallel-for, the outputs of
    # one thread.
    for tm in se_block:6 lut_cnn:8; do
        mdl=${tm%%:*} hw=${tm#*:}
        mknpy "16, 3, $hw, $hw" $D/test_1000.npy "$TMP/in_$mdl.npy"
        compile "${mdl}_1" models/tiny/$mdl.onnx 1 --calib "$TMP/in_$mdl.npy" &&
            compile "${mdl}_3" models/tiny/$mdl.onnx 3 --calib "$TMP/in_$mdl.npy" ||
            { fail "$mdl compile: $(cat "$TMP/err")"; continue; }
        build "$TMP/run_${mdl}_1" "$TMP/${mdl}_1" &&
            "$TMP/run_${mdl}_1" "$TMP/in_$mdl.npy" "$TMP/out_${mdl}_1.npy" >/dev/null &&
            build "$TMP/run_${mdl}_3" "$TMP/${mdl}_3" -DOQC_TEST_PARALLEL -DOQCI_PAR_MIN_BYTES=64 \
                -DOQCI_PAR_MIN_MACS=64 ||
            { fail "$mdl: build or run: $(head -n 5 "$TMP/cc.log")"; continue; }
        want="oqci_mul_par("
        [ $mdl = lut_cnn ] && want="oqci_lut_par("
        grep -qF "$want" "$TMP/${mdl}_3/m.c" && ! grep -qF "$want" "$TMP/${mdl}_1/m.c" ||
            fail "$mdl: no $want in the 3-thread output (or one in the 1-thread one)"
        par_check "$mdl int8" "$TMP/run_${mdl}_3" "$TMP/in_$mdl.npy" "$TMP/out_${mdl}_1.npy"
    done

    # One thread: no thread code at all (a microcontroller's build); two: pthreads.
    # (through the object cache: the runtime copies the two outputs share, and those
    # the portable family's build above compiled, compile once)
    for prec in int8 fp32; do
        for t in 1 2; do
            mkdir -p "$TMP/obj_${prec}_$t"
            for c in "$TMP/f_${prec}_$t"/*.c; do
                cc_cached gcc $FLAGS -DOQCI_NO_DISPATCH -c "$c" -o "$TMP/obj_${prec}_$t/$(basename "$c" .c).o" ||
                    fail "fashion $prec --threads $t: $c does not build"
            done
        done
        ! grep -lE 'pthread[._]' "$TMP/f_${prec}_1"/* >/dev/null &&
            ! nm "$TMP/obj_${prec}_1"/*.o | grep -q pthread &&
            nm "$TMP/obj_${prec}_2"/*.o | grep -q ' U pthread_create' &&
            ok "fashion $prec: --threads 1 sources and objects reference no pthread (--threads 2 do)" ||
            fail "fashion $prec: pthread in the one-thread output: $(grep -lE 'pthread[._]' "$TMP/f_${prec}_1"/*)"
    done

    "$OQC" compile $M -o "$TMP/none" --precision fp32 --threads 0 2>"$TMP/err"; st=$?
    [ "$st" = 1 ] && grep -q -- "--threads '0' must be a number from 1 to 64" "$TMP/err" &&
        [ ! -e "$TMP/none" ] && ok "--threads 0: error, nothing written" ||
        fail "--threads 0: $st $(cat "$TMP/err")"
fi

if [ "${OQC_CONFIG:-default}" = san ]; then
    # Fashion FP32 (10 images) and squeezenet1_1 INT8 (one image), 3 threads, under
    # AddressSanitizer + UndefinedBehaviorSanitizer and ThreadSanitizer (tasks writing
    # the same bytes would race); the weights object is not instrumented (data only).
    mknpy "10, 1, 28, 28" $D/test_1000.npy "$TMP/in10.npy"
    for mdl in fashion squeezenet; do
        if [ $mdl = fashion ]; then
            mf=$M; in=$TMP/in10.npy; args="--precision fp32"
        else
            mf=$S.onnx; in=${S}_in1.npy; args="--calib ${S}_in4.npy"
        fi
        # shellcheck disable=SC2086
        compile "${mdl}1" "$mf" 1 $args && compile "${mdl}3" "$mf" 3 $args ||
            { fail "$mdl compile: $(cat "$TMP/err")"; continue; }
        for t in 1 3; do
            [ ! -f "$TMP/$mdl$t/m_weights.c" ] ||
                gcc $FLAGS -c "$TMP/$mdl$t/m_weights.c" -o "$TMP/$mdl$t/w.o" 2>"$TMP/cc.log" ||
                fail "$mdl: weights: $(head -n 3 "$TMP/cc.log")"
            mv "$TMP/$mdl$t/m_weights.c" "$TMP/$mdl$t/m_weights.c.off" 2>/dev/null
        done
        wo() { [ -f "$1/w.o" ] && echo "$1/w.o"; }
        build "$TMP/run1" "$TMP/${mdl}1" $(wo "$TMP/${mdl}1") &&
            "$TMP/run1" "$in" "$TMP/out1.npy" >/dev/null ||
            fail "$mdl, 1 thread: $(head -n 5 "$TMP/cc.log")"
        for san in address,undefined thread; do
            # (ASan + UBSan: lib.sh's SAN_CFLAGS, whose runtime objects compile_int8.sh
            # and run_u8.sh share through the object cache)
            sfl=$SAN_CFLAGS
            [ $san = thread ] && sfl="$FLAGS -O1 -g -fsanitize=thread -fno-sanitize-recover=all"
            # shellcheck disable=SC2046
            build -F "$sfl" "$TMP/run_$san" "$TMP/${mdl}3" $(wo "$TMP/${mdl}3") &&
                "$TMP/run_$san" "$in" "$TMP/out_$san.npy" >/dev/null 2>"$TMP/san.log" &&
                cmp -s "$TMP/out1.npy" "$TMP/out_$san.npy" &&
                ok "$mdl $args, 3 threads, -fsanitize=$san: clean, outputs as one thread's" ||
                fail "$mdl, 3 threads, -fsanitize=$san: $(head -n 8 "$TMP/san.log" "$TMP/cc.log")"
        done
    done
fi
finish
