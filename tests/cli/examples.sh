#!/bin/sh
# examples.sh - examples/make and examples/cmake, built as a user would: GNU Make,
# CMake with Make, CMake with Ninja.  Each builds the program (oqc compile -MD as a
# build step) and runs it on the 1000 Fashion test images: its correct count must be
# oqc eval's INT8 count (the emitted code's bits; kernel families are bit-exact, so
# --target portable gives the same).  Then a second build with nothing changed
# rebuilds nothing, and after `touch` of the table (which the build names only through
# oqc's depfile) oqc runs again and everything built from its output is rebuilt, but
# not npy.o, which does not depend on the model.  Not about how oqc was compiled: runs
# in the default configuration only.
. tests/cli/lib.sh
only_config default
OQC_ABS=$(cd "$(dirname "$OQC")" && pwd)/$(basename "$OQC")
SRC=$TMP/src
mkdir "$SRC"
cp models/fashion/fashion_cnn.onnx models/fashion/fashion_cnn.table "$SRC/"
X=models/fashion/test_1000.npy
Y=models/fashion/test_labels_1000.npy

want=$("$OQC" eval "$SRC/fashion_cnn.onnx" --table "$SRC/fashion_cnn.table" --data $X \
       --labels $Y | sed -n 's/^top-1 accuracy: FP32 [0-9.]*, INT8 \([0-9.]*\) .*/\1/p')
want=$(awk -v a="$want" 'BEGIN { printf "%d", a * 1000 + 0.5 }')
[ "$want" -gt 800 ] && ok "oqc eval: INT8 classifies $want of 1000 correctly" ||
    fail "oqc eval's INT8 accuracy: '$want'"

# built FILE...: the build products among FILE... (objects, the program, oqc's output),
# one per line, sorted
products() { find "$1" -type f \( -name '*.o' -o -name fashion_demo -o -path '*/gen/*' \) \
                  ! -name '*.d' -newer "$2" | sed "s|^$1/||" | sort; }

# example NAME BUILD-DIR BUILD-COMMAND...: build, run, rebuild checks
example() {
    n=$1 b=$2
    shift 2
    if ! "$@" >"$TMP/build.log" 2>&1; then
        fail "$n: build: $(tail -n 5 "$TMP/build.log")"
        return
    fi
    got=$("$b/fashion_demo" $X $Y)
    [ "$got" = "correct: $want of 1000" ] && ok "$n: builds and runs: $got" ||
        fail "$n: program says '$got', oqc eval $want"
    touch "$TMP/stamp"
    sleep 1 # (file times of one second on some file systems)
    "$@" >"$TMP/build2.log" 2>&1
    again=$(products "$b" "$TMP/stamp")
    [ -z "$again" ] && ok "$n: a second build rebuilds nothing" ||
        fail "$n: a second build rebuilt: $(echo $again)"
    touch "$SRC/fashion_cnn.table"
    "$@" >"$TMP/build3.log" 2>&1
    rebuilt=$(products "$b" "$SRC/fashion_cnn.table")
    all=$(find "$b" -type f \( -name '*.o' -o -name fashion_demo -o -path '*/gen/*' \) \
              ! -name '*.d' | sed "s|^$b/||" | sort)
    kept=$(echo "$all" | grep -vxF "$rebuilt")
    case "$kept" in
    *npy.c.o|*npy.o) [ "$(echo "$kept" | wc -l)" = 1 ] &&
                     echo "$rebuilt" | grep -q 'main\.\(c\.\)\?o$' &&
                     echo "$rebuilt" | grep -qx 'fashion_demo' &&
        ok "$n: after touch of the table: oqc's output and all built from it rebuilt ($(echo "$rebuilt" | wc -l) files), npy.o not" ||
        fail "$n: after touch: kept '$kept', rebuilt $(echo $rebuilt)" ;;
    *) fail "$n: after touch: kept '$(echo $kept)' (expected npy.o only)" ;;
    esac
}

example "make" "$TMP/mk" make -j2 -C examples/make OQC="$OQC_ABS" B="$TMP/mk" \
    MODEL="$SRC/fashion_cnn.onnx" TABLE="$SRC/fashion_cnn.table"
for gen in "Unix Makefiles" Ninja; do
    tag=$(echo "$gen" | cut -c1-5 | tr 'A-Z ' 'a-z_')
    if ! command -v cmake >/dev/null || { [ "$gen" = Ninja ] && ! command -v ninja >/dev/null; }; then
        skip "cmake+$gen: not installed (scripts/install-deps.sh installs cmake and ninja-build)"
        continue
    fi
    cmake -G "$gen" -S examples/cmake -B "$TMP/cm_$tag" -DOQC="$OQC_ABS" \
        -DMODEL="$SRC/fashion_cnn.onnx" -DTABLE="$SRC/fashion_cnn.table" >"$TMP/cmake.log" 2>&1 ||
        { fail "cmake -G $gen: $(tail -n 5 "$TMP/cmake.log")"; continue; }
    example "cmake+$gen" "$TMP/cm_$tag" cmake --build "$TMP/cm_$tag" -j 2
done
finish
