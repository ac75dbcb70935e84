#!/bin/sh
# compare_builds.sh - scripts/compare-builds.sh (docs/testing.md, "Comparing two builds")
# finds what differs between two oqc binaries, on two models (--models): oqc against
# itself is "same"; wrappers around oqc that change one byte of what it writes are
# caught: a space added to the emitted model's C (a failure, the file and line named), a
# space added to the runtime copies (counted apart; a failure with --strict-runtime); a
# binary that fails every command is not "the same" as itself; bad usage exits 2 and
# writes nothing.  One configuration: the script's logic does not depend on the build.
. tests/cli/lib.sh
only_config default
REAL=$(readlink -f "$OQC")
CB=scripts/compare-builds.sh
printf 'models/tiny/conv_basic.onnx\nmodels/fashion/fashion_cnn.onnx\n' >"$TMP/two"
echo models/tiny/conv_basic.onnx >"$TMP/one"

# wrapper NAME SCRIPT: an executable $TMP/NAME running oqc, then SCRIPT (sh) with $o the
# -o argument of a compile.
wrapper() {
    { echo '#!/bin/sh'
      echo "\"$REAL\" \"\$@\""
      echo 'st=$?'
      echo 'o=""; c=$1; while [ $# -gt 1 ]; do [ "$1" = -o ] && o=$2; shift; done'
      echo "[ \"\$c\" = compile ] && [ -d \"\$o\" ] && { $2; }"
      echo 'exit $st'; } >"$TMP/$1"
    chmod +x "$TMP/$1"
}

sh $CB --models "$TMP/two" "$OQC" "$OQC" >"$TMP/same.out" 2>&1
st=$?
files=$(sed -n 's/.*files compared: \([0-9]*\)$/\1/p' "$TMP/same.out")
[ $st = 0 ] && grep -q '^compare-builds: same (' "$TMP/same.out" && [ "${files:-0}" -gt 100 ] &&
    grep -q '^  eval succeeded on A for 2 models$' "$TMP/same.out" &&
    ok "oqc against itself: same, $files files compared, eval on both models" ||
    fail "oqc against itself (status $st): $(cat "$TMP/same.out")"

# one space at the end of the emitted model's second line
wrapper space "sed -i '2s/\$/ /' \"\$o/t.c\""
sh $CB --models "$TMP/one" "$OQC" "$TMP/space" "$TMP/kept" >"$TMP/space.out" 2>&1
st=$?
[ $st = 1 ] && grep -q '^files differing: 2 in 1 models' "$TMP/space.out" &&
    grep -q "^  models__tiny__conv_basic fp32/t.c: line 2: A '.*' B '.* '$" "$TMP/space.out" &&
    grep -q '^compare-builds: DIFFERENT' "$TMP/space.out" &&
    ok "a space added to t.c: exit 1, the file and its first differing line named" ||
    fail "a space added to t.c (status $st): $(cat "$TMP/space.out")"
[ -f "$TMP/kept/b/models__tiny__conv_basic/int8/t.c" ] && [ ! -e "$TMP/kept/data" ] &&
    ok "OUTDIR keeps the outputs of the model that differs" || fail "OUTDIR: $(ls -R "$TMP/kept" | head)"

# one space at the end of every runtime copy
wrapper rt "for f in \"\$o\"/oqc[fi]_*.c; do echo ' ' >>\"\$f\"; done"
sh $CB --models "$TMP/one" "$OQC" "$TMP/rt" >"$TMP/rt.out" 2>&1
st=$?
n=$(sed -n 's/^runtime copies differ: \([0-9]*\) files.*/\1/p' "$TMP/rt.out")
[ $st = 0 ] && [ "${n:-0}" -gt 2 ] && grep -q '^files differing: 0$' "$TMP/rt.out" &&
    grep -q '^compare-builds: same, runtime copies aside' "$TMP/rt.out" &&
    ok "runtime copies changed: $n counted apart, exit 0" ||
    fail "runtime copies changed (status $st): $(cat "$TMP/rt.out")"
sh $CB --strict-runtime --models "$TMP/one" "$OQC" "$TMP/rt" >"$TMP/rts.out" 2>&1
st=$?
[ $st = 1 ] && grep -q '(--strict-runtime: a failure)' "$TMP/rts.out" &&
    ok "--strict-runtime: the same change fails" || fail "--strict-runtime (status $st): $(cat "$TMP/rts.out")"

# a binary that fails every command: the same outputs, but nothing was compared
printf '#!/bin/sh\necho "broken" >&2\nexit 1\n' >"$TMP/broken"
chmod +x "$TMP/broken"
sh $CB --models "$TMP/one" "$TMP/broken" "$TMP/broken" >"$TMP/broken.out" 2>&1
st=$?
[ $st = 1 ] && grep -q '^compare-builds: incomplete: 1 of 1 models finished, 0 FP32 compiles' "$TMP/broken.out" &&
    ok "two binaries that fail everything are not 'the same'" ||
    fail "broken binaries (status $st): $(cat "$TMP/broken.out")"

# bad usage: exit 2, a message, no OUTDIR made
echo models/tiny/no_such.onnx >"$TMP/missing"
for args in "$OQC" "$OQC $TMP/nonexistent" "--jobs 0 $OQC $OQC" "--models $TMP/missing $OQC $OQC $TMP/o1" \
        "--bogus $OQC $OQC" "$OQC $OQC $TMP/kept"; do
    # shellcheck disable=SC2086
    sh $CB $args >"$TMP/u.out" 2>"$TMP/u.err"
    st=$?
    [ $st = 2 ] && [ -s "$TMP/u.err" ] && [ ! -e "$TMP/o1" ] && ok "usage error: $args: $(head -n 1 "$TMP/u.err")" ||
        fail "usage error $args: status $st: $(cat "$TMP/u.err")"
done
finish
