# lib.sh - helpers for the CLI test scripts in tests/cli/ (sourced, not run).
# Each script calls ok/fail/skip per check and ends with `finish`, which prints the
# "RESULT name passed failed skipped" line tests/run.sh reads.
T_PASS=0
T_FAIL=0
T_SKIP=0
T_NAME=$(basename "$0" .sh)
# The runtime's folders (its two libraries and the driver files) as -I flags, and the
# source under runtime/ of a file emitted next to a model (same name, one folder).
RT_INC="-Iruntime/fp32 -Iruntime/int8 -Iruntime/app"
rt_src() { ls runtime/*/"$(basename "$1")"; }
OQC=${OQC:-build/oqc}
# The builds a test runs (emitted C, the examples, depfile checks) are its own, not part
# of the `make check` that started it: without this they inherit its jobserver and print
# "jobserver unavailable" warnings into the output a test compares.
unset MAKEFLAGS MFLAGS MAKELEVEL
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# cc_cached CC ARG...: `CC ARG...` through the object cache of tests/tools/cc_cached.sh
# (the runtime copies emitted next to every model compile once per make check).
cc_cached() { OQC_CC_TMP=$TMP sh tests/tools/cc_cached.sh "$@"; }
# SAN_CFLAGS: the flags of the emitted code's ASan + UBSan builds (compile_int8.sh,
# run_u8.sh, compile_threads.sh): one set, so that the runtime copies their models share
# (the INT8 conv library above all: ~40 s of instrumented compiling) compile once per
# make check through the object cache.  C11 and -pthread for the threaded outputs' pool
# (strict C99 is what each script's plain builds check); -O1, as ASan advises.
SAN_CFLAGS="-std=c11 -O1 -g -Wall -Wextra -Werror -pedantic -ffp-contract=off -pthread -fsanitize=address,undefined -fno-sanitize-recover=all"
# NAMED: the calibration method of tests whose subject is not the method.  The default
# (auto) measures 5 to 10 INT8 settings on the calibration data (tests/cli/tune.sh and
# devset.sh test it), which over these scripts' many calibrations of the same model adds
# minutes to make check; on the Fashion CNN it chooses 99.99 for both kinds anyway.
NAMED="--method percentile:99.99"
ok()   { T_PASS=$((T_PASS + 1)); echo "ok   $*"; }
fail() { T_FAIL=$((T_FAIL + 1)); echo "FAIL $*"; }
# check NAME COMMAND...: passes when the command exits 0
check() { n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
# skip REASON: a check that cannot run here (a tool not installed, an instruction set
# the CPU lacks: begin the reason with "CPU lacks"); counted and listed by tests/run.sh,
# never a pass, and a failure in the scripts tests/expected-to-run.txt names.
skip() { T_SKIP=$((T_SKIP + 1)); echo "skip $*"; }
finish() { echo "RESULT $T_NAME $T_PASS $T_FAIL $T_SKIP"; [ "$T_FAIL" = 0 ]; }
# only_config CONFIG...: the script runs only in those configurations of `make check`
# (default, clang, san); in the others it says so and stops, passing nothing and
# skipping nothing.
only_config() {
    for c in "$@"; do
        [ "${OQC_CONFIG:-default}" = "$c" ] && return 0
    done
    echo "runs in the $(echo "$@" | sed 's/ / and /g') configuration of make check only (not a skip: it runs there)"
    finish
    exit $?
}

# .npy helpers for comparing emitted programs' outputs with oqc's.
# mknpy SHAPE SRC OUT: OUT is a float32 .npy of SHAPE ("2, 3, 4") holding the first
# values of SRC's data (SRC: a v1 .npy with a 128-byte header, or raw floats).
mknpy() {
    n=1
    for dim in $(echo "$1" | tr ',' ' '); do n=$((n * dim)); done
    { npy_header '<f4' "$1"; tail -c +129 "$2" | head -c $((4 * n)); } > "$3"
}

# npy_header DESCR SHAPE: prints a version 1 .npy header for dtype DESCR ('<f4', '<i8',
# ...) and SHAPE ("2, 3, 4"; "" for a scalar), padded to a multiple of 64 bytes.
npy_header() {
    case "$2" in *,*|"") shape=$2 ;; *) shape="$2," ;; esac
    h="{'descr': '$1', 'fortran_order': False, 'shape': ($shape), }"
    pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
    hl=$(( ${#h} + pad + 1 ))
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((hl % 256)))\\$(printf %03o $((hl / 256)))"
    printf '%s%*s\n' "$h" "$pad" ""
}

# data_of NPY: the data part of a .npy file (header skipped: the driver and oqc may
# write different shapes for the same values).
data_of() {
    hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((10 + hl + 1)) "$1"
}

# same_data A B [BYTES]: the data parts are equal (the first BYTES of them).
same_data() {
    data_of "$1" | head -c "${3:-999999999}" > "$TMP/a.bin"
    data_of "$2" | head -c "${3:-999999999}" > "$TMP/b.bin"
    [ -s "$TMP/a.bin" ] && cmp -s "$TMP/a.bin" "$TMP/b.bin"
}

# image_set DIR: a folder of the bundled test images in two class sub-folders, one image
# nested deeper and a file that is no image (skipped); read in sorted path order it holds
# a_cls/photo.png, a_cls/sub/palette.png, b_cls/gray.png, b_cls/photo.jpg.
image_set() {
    mkdir -p "$1/b_cls" "$1/a_cls/sub"
    cp models/images/photo.jpg models/images/gray.png "$1/b_cls/"
    cp models/images/photo.png "$1/a_cls/"
    cp models/images/palette.png "$1/a_cls/sub/"
    echo "ignored" > "$1/a_cls/notes.txt"
}
# Sweeps over every bundled model (json_output.sh, reproducible.sh, reproducible_aarch64.sh).
# bundled_models: their paths, one a line.
bundled_models() {
    ls models/tiny/*.onnx models/fashion/*.onnx models/tv/squeezenet1_1.onnx models/devset/*.onnx
}
# shape_args NAME: the --input-shape that model NAME (its dynamic input) needs, if any.
shape_args() {
    case "$1" in
        dynamic_batch) echo "--input-shape x=1x3x8x8" ;;
        merge_inception) echo "--input-shape x=1x6x5x5" ;;
    esac
}
# over_models FUNC LIST: FUNC MODEL for every model of file LIST, in two workers (the
# machine's cores; W=0 or 1 tells a worker's scratch files apart); their output,
# worker 0's first, in $TMP/res.
over_models() {
    for W in 0 1; do
        awk -v w=$W 'NR % 2 == w' "$2" | while read -r mf; do "$1" "$mf"; done >"$TMP/res$W" 2>&1 &
    done
    wait
    cat "$TMP/res0" "$TMP/res1" >"$TMP/res"
}
# same NAME A B: the two files or trees hold the same files with the same bytes (a tree:
# at least one); prints "SAME NAME" or "BAD ..." (W tells over_models' workers apart).
same() {
    if [ -d "$2" ]; then
        (cd "$2" && find . -type f | sort) >"$TMP/l1$W"
        (cd "$3" && find . -type f | sort) >"$TMP/l2$W"
        if ! cmp -s "$TMP/l1$W" "$TMP/l2$W"; then
            echo "BAD $1: different files: $(diff "$TMP/l1$W" "$TMP/l2$W" | head -n 4 | tr '\n' ' ')"
            return
        fi
        [ -s "$TMP/l1$W" ] || { echo "BAD $1: no files"; return; }
        while read -r f; do
            cmp -s "$2/$f" "$3/$f" || { echo "BAD $1: $f differs: $(cmp "$2/$f" "$3/$f" 2>&1)"; return; }
        done <"$TMP/l1$W"
    elif [ -e "$2" ] && cmp -s "$2" "$3"; then
        :
    else
        echo "BAD $1: $(cmp "$2" "$3" 2>&1)"
        return
    fi
    echo "SAME $1"
}
# bad_lines GOOD: for the lines of $TMP/res, a FAIL line per "BAD why" line and per
# line (the first 5) that is neither BAD nor starts with GOOD; their counts in $BAD and
# $OTHER.
bad_lines() {
    grep -v "^$1\|^BAD" "$TMP/res" | head -n 5 | while read -r l; do echo "FAIL unexpected output: $l"; done
    grep '^BAD' "$TMP/res" | while read -r _ msg; do echo "FAIL $msg"; done
    BAD=$(grep -c '^BAD' "$TMP/res")
    OTHER=$(grep -vc "^$1\|^BAD" "$TMP/res")
}
# emitted_is_eval NAME MODEL DATA OPTION...: the C `oqc compile MODEL OPTION...` writes
# (as NAME, into $TMP/c_NAME), built with tests/emit/emitted_main.c and run on DATA,
# gives the bits `oqc eval MODEL --data DATA OPTION... --save-int8` writes: status 0
# when it does; messages of the commands in $TMP/cc.log. The compiler: $EMIT_CC, else cc.
emitted_is_eval() {
    n=$1 m=$2 x=$3
    shift 3
    "$OQC" compile "$m" -o "$TMP/c_$n" --name "$n" "$@" -q >"$TMP/cc.log" 2>&1 &&
        "$OQC" eval "$m" --data "$x" "$@" --save-int8 "$TMP/ev_$n.npy" -q >/dev/null 2>>"$TMP/cc.log" &&
        cc_cached "${EMIT_CC:-cc}" -std=c99 -O2 -Wall -Wextra -Werror -pedantic -ffp-contract=off -I "$TMP/c_$n" \
            -DOQC_MODEL_HEADER="\"$n.h\"" -DOQC_MODEL_PREFIX="$n" tests/emit/emitted_main.c \
            "$TMP/c_$n"/*.c -lm -o "$TMP/run_$n" 2>>"$TMP/cc.log" &&
        "$TMP/run_$n" "$x" "$TMP/out_$n.npy" >/dev/null 2>>"$TMP/cc.log" &&
        same_data "$TMP/out_$n.npy" "$TMP/ev_$n.npy"
}
# sample_data HEADER OUT: OUT is a .npy of 4 samples of the one float32 input that the
# emitted header HEADER declares, cut from squeezenet's image data; fails (status 1)
# when the model has another number of inputs, or a non-float or too big one.
sample_data() {
    [ "$(grep -c "^/\* input [0-9]* '" "$1")" = 1 ] || return 1
    sh=$(sed -n "s/^\/\* input 0 '.*': f32\[\(.*\)\] \*\/$/\1/p" "$1" | sed 's/x/, /g')
    [ -n "$sh" ] || return 1
    el=1
    for dim in $(echo "$sh" | tr ',' ' '); do el=$((el * dim)); done
    [ $((4 * el)) -le 602112 ] || return 1
    mknpy "4, $sh" models/tv/squeezenet1_1_in4.npy "$2"
}
