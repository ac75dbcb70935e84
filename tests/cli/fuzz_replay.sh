#!/bin/sh
# fuzz_replay.sh - the fuzz target (tests/fuzz/fuzz_model.c: load, dumps, passes, FP32
# and INT8 executors, C emission) on every input that once crashed it or tripped a
# sanitizer (tests/fuzz/regress/), on the data seeds (tests/fuzz/seeds/) and on the
# bad-input corpus: each must run to its end.  Under SAN=1 the sanitizers check each run.
. tests/cli/lib.sh

replay=$BUILD/tests/tools/fuzz_replay
mkdir -p "$TMP/fuzz"
for f in tests/fuzz/regress/* tests/fuzz/seeds/* tests/bad/*.onnx; do
    if OQC_FUZZ_TMP=$TMP/fuzz "$replay" "$f" >"$TMP/out" 2>"$TMP/err"; then
        ok "fuzz target runs $(basename "$f") to its end"
    else
        fail "fuzz target on $f: exit $?: $(tail -c 600 "$TMP/err")"
    fi
done
finish
