#!/bin/sh
# bad_models.sh - every model of the bad-input corpus (tests/bad/) is rejected with
# exit status 1 and a message naming the file and the problem (tests/bad/expect.tsv);
# a valid model truncated at every 1/16 of its length is rejected too; a failed
# `dump -o` leaves no output file. Runs under SAN=1 with the sanitizer build.
. tests/cli/lib.sh

while IFS="$(printf '\t')" read -r file cmd want; do
    case "$file" in ''|'#'*) continue ;; esac
    "$OQC" "$cmd" "tests/bad/$file" >"$TMP/out" 2>"$TMP/err"
    st=$?
    if [ "$st" = 1 ] && grep -qF -- "$want" "$TMP/err" && grep -qF "tests/bad/$file" "$TMP/err"; then
        ok "$file: $cmd exits 1 with '$want'"
    else
        fail "$file: $cmd exited $st, stderr: $(head -c 400 "$TMP/err")"
    fi
done < tests/bad/expect.tsv

# Help: `oqc COMMAND --help` and `oqc help COMMAND` print that command's usage and exit
# 0 for every command (eval --help used to crash on a missing usage text), and the
# general text lists every command.
"$OQC" help >"$TMP/help" 2>&1
for c in dump check run calibrate compile export-qdq eval; do
    "$OQC" "$c" --help >"$TMP/out" 2>&1; st=$?
    "$OQC" help "$c" >"$TMP/out2" 2>&1; st2=$?
    if [ "$st" = 0 ] && [ "$st2" = 0 ] && head -n 1 "$TMP/out" | grep -q "^usage: oqc $c " &&
            cmp -s "$TMP/out" "$TMP/out2" && grep -q "^  $c " "$TMP/help"; then
        ok "$c: --help and help $c print its usage; oqc help lists it"
    else
        fail "$c: --help exited $st, help $c $st2: $(head -n 1 "$TMP/out")"
    fi
done

# Every corpus model also fails `check` (the strict path) with status 1.
for f in tests/bad/*.onnx; do
    case "$f" in */valid_small.onnx) continue ;; esac
    "$OQC" check "$f" >/dev/null 2>"$TMP/err"; st=$?
    [ "$st" = 1 ] && ok "check $(basename "$f") exits 1" ||
        fail "check $(basename "$f") exited $st: $(head -c 300 "$TMP/err")"
done

# Truncations of a valid model at k/16 of its length, k = 0..15.
size=$(wc -c < tests/bad/valid_small.onnx)
k=0
while [ $k -lt 16 ]; do
    n=$((size * k / 16))
    head -c "$n" tests/bad/valid_small.onnx > "$TMP/trunc.onnx"
    "$OQC" dump "$TMP/trunc.onnx" >/dev/null 2>"$TMP/err"; st=$?
    if [ "$st" = 1 ] && grep -q "trunc.onnx" "$TMP/err"; then
        ok "truncated at $k/16 ($n of $size bytes) exits 1"
    else
        fail "truncated at $k/16 ($n bytes) exited $st: $(head -c 300 "$TMP/err")"
    fi
    k=$((k + 1))
done
check "the untruncated model dumps" "$OQC" dump tests/bad/valid_small.onnx -o "$TMP/ok.txt"

# A failing command leaves no output behind, not even a temporary file.
"$OQC" dump tests/bad/cycle.onnx -o "$TMP/none.txt" 2>/dev/null
if [ ! -e "$TMP/none.txt" ] && [ -z "$(ls "$TMP" | grep none.txt)" ]; then
    ok "failed dump -o leaves no file"
else
    fail "failed dump -o left $(ls "$TMP")"
fi

# Bad flags and arguments.
for args in "dump" "dump models/tiny/conv_basic.onnx --format pdf" \
            "dump models/tiny/conv_basic.onnx --bogus" "frobnicate" \
            "dump models/tiny/conv_basic.onnx --input-shape x=1xAx3" \
            "dump models/tiny/dynamic_batch.onnx" \
            "dump models/tiny/dynamic_batch.onnx --input-shape y=1x3x8x8" \
            "dump models/tiny/dynamic_batch.onnx --input-shape x=1x4x8x8" \
            "dump /nonexistent/model.onnx"; do
    # shellcheck disable=SC2086
    "$OQC" $args >/dev/null 2>"$TMP/err"; st=$?
    [ "$st" = 1 ] && [ -s "$TMP/err" ] && ok "oqc $args: exit 1 ($(head -n 1 "$TMP/err" | cut -c1-100))" ||
        fail "oqc $args: exit $st"
done
"$OQC" dump models/tiny/dynamic_batch.onnx 2>"$TMP/err"
check "dynamic input error shows the flag" grep -q -- "--input-shape x=1x3x8x8" "$TMP/err"
check "dynamic input fixed with --input-shape" "$OQC" dump models/tiny/dynamic_batch.onnx --input-shape x=2x3x8x8 -o "$TMP/dyn.txt"
check "fixed batch shows in the dump" grep -q "2x3x8x8" "$TMP/dyn.txt"
finish
