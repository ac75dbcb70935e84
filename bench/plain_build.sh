#!/bin/sh
# bench/plain_build.sh - "fast by default" and `oqc bench`'s own figure (docs/compile.md,
# "Building"; docs/cli.md, "bench"), measured side by side in interleaved rounds:
#   1. the Fashion CNN's INT8 C built as docs/compile.md says, with no -march flag
#      (`cc -std=c99 -O2 -ffp-contract=off`: kernels chosen at run time), against the
#      same code built with -march=native;
#   2. `oqc bench` on squeezenet1_1 (INT8, a table from its 4 committed images) against
#      bench/emitted_latency.c timing the same emitted code built as bench/run.sh does.
# Prints every round and the ratios of the best medians.  A benchmark, not a test: it
# never fails on timing.  Usage: sh bench/plain_build.sh [ROUNDS]   (default 5; ~2 min)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
OQC=$BUILD/oqc
CC=${CC:-cc}
ROUNDS=${1:-5}
W=$BUILD/bench/plain_build
rm -rf "$W" && mkdir -p "$W" || exit 1
[ -x "$OQC" ] || { echo "plain_build: $OQC missing (make first)" >&2; exit 1; }
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); SIMD: $(grep -m1 '^flags' /proc/cpuinfo |
    tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx_vnni|amx_int8|asimddp)$' | tr '\n' ' ')"
F=models/fashion
S=models/tv/squeezenet1_1
"$OQC" compile $F/fashion_cnn.onnx --calib $F/calib_500.npy -o "$W/fq" --name fashion -q &&
    "$OQC" calibrate $S.onnx --data ${S}_in4.npy -o "$W/sq.table" -q &&
    "$OQC" compile $S.onnx --table "$W/sq.table" -o "$W/sqc" --name sq -q || exit 1
L=bench/emitted_latency.c
$CC -std=c99 -O2 -ffp-contract=off -I "$W/fq" -DOQC_MODEL_HEADER='"fashion.h"' \
    -DOQC_MODEL_PREFIX=fashion $L "$W"/fq/*.c -lm -o "$W/f_plain" &&
    $CC -std=c99 -O2 -march=native -ffp-contract=off -I "$W/fq" -DOQC_MODEL_HEADER='"fashion.h"' \
        -DOQC_MODEL_PREFIX=fashion $L "$W"/fq/*.c -lm -o "$W/f_native" &&
    $CC -std=c99 -O2 -march=native -ffp-contract=off -I "$W/sqc" -DOQC_MODEL_HEADER='"sq.h"' \
        -DOQC_MODEL_PREFIX=sq $L "$W"/sqc/*.c -lm -o "$W/sq_lat" || exit 1
med() { sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p'; }
r=1
while [ $r -le "$ROUNDS" ]; do
    a=$("$W/f_plain" --runs 2000 --warmup 200 --min-ms 1000 | grep RESULT | med)
    b=$("$W/f_native" --runs 2000 --warmup 200 --min-ms 1000 | grep RESULT | med)
    c=$("$W/sq_lat" --runs 200 --warmup 20 --min-ms 1000 | grep RESULT | med)
    d=$(CC=$CC "$OQC" bench $S.onnx --table "$W/sq.table" --runs 200 --warmup 20 2>&1 |
        sed -n 's/.*single thread: median \([0-9.]*\) ms.*/\1/p')
    echo "round $r: fashion plain $a ms, -march=native $b ms; squeezenet oqc bench $d ms, bench/ $c ms"
    echo "$a $b $d $c" >>"$W/rounds"
    r=$((r + 1))
done
awk 'NR == 1 {a = $1; b = $2; d = $3; c = $4}
     {if ($1 < a) a = $1; if ($2 < b) b = $2; if ($3 < d) d = $3; if ($4 < c) c = $4}
     END {printf "best medians: fashion plain %.4f / native %.4f ms = %.3f; " \
                 "squeezenet oqc bench %.4f / bench/ %.4f ms = %.3f\n", a, b, a / b, d, c, d / c}' "$W/rounds"
