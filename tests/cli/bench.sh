#!/bin/sh
# bench.sh - `oqc compile --main` (a driver and Makefile next to the emitted model) and
# `oqc bench` (compile, build with the system compiler, time, per-layer profile) on the
# Fashion model.  Functional checks only (the numbers depend on the machine): the
# driver builds with make, runs .npy and raw samples giving oqc eval's INT8 outputs
# (printed with 6 significant digits), and bench prints the latency line and one
# profile row per layer of the emitted code; failures are clean.
. tests/cli/lib.sh
# builds C with the system compiler: the same in every configuration, run in one
only_config default
M=models/fashion/fashion_cnn.onnx
D=models/fashion
mknpy "3, 1, 28, 28" $D/test_1000.npy "$TMP/in.npy"

"$OQC" compile $M --calib $D/calib_500.npy -o "$TMP/m" --name fashion --main -q &&
    [ -f "$TMP/m/main.c" ] && [ -f "$TMP/m/main_hooks.h" ] && [ -f "$TMP/m/Makefile" ] &&
    ok "compile --main writes main.c, main_hooks.h, Makefile" || fail "compile --main"
make -s -C "$TMP/m" >"$TMP/make.log" 2>&1 && [ -x "$TMP/m/fashion_main" ] &&
    ok "make builds fashion_main" || fail "make: $(head -n 5 "$TMP/make.log")"
"$TMP/m/fashion_main" "$TMP/in.npy" >"$TMP/run.txt" &&
    [ "$(grep -c '^(.* ms) sample [0-2]: logits:' "$TMP/run.txt")" = 3 ] &&
    ok "driver runs 3 samples of a .npy" || fail "driver: $(cat "$TMP/run.txt")"
# the same values as oqc eval's INT8 path, bit for bit (-o OUT.npy)
"$OQC" eval $M --calib $D/calib_500.npy --data "$TMP/in.npy" --save-int8 "$TMP/e.npy" -q >/dev/null
"$TMP/m/fashion_main" -o "$TMP/d.npy" "$TMP/in.npy" >/dev/null && same_data "$TMP/d.npy" "$TMP/e.npy" &&
    ok "driver -o: outputs = oqc eval's INT8 outputs" || fail "driver outputs differ from eval"
sed -n 's/^.*logits://p' "$TMP/run.txt" >"$TMP/got.txt"
data_of "$TMP/in.npy" >"$TMP/in.raw"
"$TMP/m/fashion_main" "$TMP/in.raw" | sed -n 's/^.*logits://p' | cmp -s - "$TMP/got.txt" &&
    ok "driver reads raw float32" || fail "driver raw input"
head -c 1000 "$TMP/in.raw" >"$TMP/part.raw"
"$TMP/m/fashion_main" "$TMP/part.raw" >/dev/null 2>"$TMP/err" && fail "partial sample accepted" ||
    { grep -q "not whole samples" "$TMP/err" && ok "partial sample refused" || fail "$(cat "$TMP/err")"; }
"$TMP/m/fashion_main" --bench 3 --warmup 1 >"$TMP/b.txt" &&
    grep -q "latency over 3 runs" "$TMP/b.txt" && grep -q "/res/Add .*Add" "$TMP/b.txt" &&
    ok "driver --bench: latency and per-layer profile" || fail "driver --bench: $(cat "$TMP/b.txt")"

# oqc bench: one row per layer of the emitted code (its OQC_LAYER_END calls)
"$OQC" bench $M --calib $D/calib_500.npy --runs 5 --warmup 1 >"$TMP/bench.txt" 2>"$TMP/err" &&
    grep -q "arena [0-9]* bytes, weights [0-9]* bytes" "$TMP/bench.txt" &&
    grep -q "latency over 5 runs (after 1 warm-up), single thread: median" "$TMP/bench.txt" &&
    ok "bench prints sizes and latency" || fail "bench: $(cat "$TMP/bench.txt" "$TMP/err")"
rows=$(sed -n '/per-layer profile/,$p' "$TMP/bench.txt" | grep -c '^ *[0-9]')
want=$(grep -o "^ *OQC_LAYER_END([0-9]*" "$TMP/m/fashion.c" | sort -u | wc -l)
[ "$rows" = "$want" ] && ok "bench profile: $rows layers" || fail "bench profile: $rows rows, $want layers"
TMPDIR="$TMP/t" && mkdir -p "$TMPDIR" && export TMPDIR
CC=false "$OQC" bench $M --calib $D/calib_500.npy --runs 2 >/dev/null 2>"$TMP/err" &&
    fail "bench with a failing compiler" ||
    { grep -q "building the emitted code failed" "$TMP/err" && [ -z "$(ls "$TMPDIR")" ] &&
        ok "failing build reported, scratch removed" || fail "bad CC: $(cat "$TMP/err"; ls "$TMPDIR")"; }
"$OQC" bench $M --runs 2 >/dev/null 2>"$TMP/err" && fail "bench without thresholds" ||
    { grep -q "needs thresholds" "$TMP/err" && [ -z "$(ls "$TMPDIR")" ] && ok "bench without --calib refused" ||
        fail "$(cat "$TMP/err")"; }
"$OQC" bench $M --precision fp32 --runs 0 2>"$TMP/err" && fail "--runs 0" ||
    { grep -q "\-\-runs '0'" "$TMP/err" && ok "--runs 0 refused" || fail "$(cat "$TMP/err")"; }
finish
