#!/bin/sh
# architecture.sh - the structure criteria of issue 29 on this tree (docs/testing.md,
# "Structure checks"): tests/tools/archcheck.py's four criteria, one check each, with
# the layers of tests/tools/layers.txt and the objects of $BUILD/obj (the build `make
# check` made):
#   - layering: every source file in a layer; no #include of a higher layer's header
#     and no call (nm) into a higher layer's file;
#   - cycles: no circle of files calling each other;
#   - file-lines: no source file over 800 lines;
#   - function-lines: no function over 120 lines.
# Part of `make check` (the default configuration); `make archcheck` runs it alone.
. tests/cli/lib.sh
only_config default
PY=/usr/bin/python3
OBJ=${BUILD:-build}/obj
"$PY" tests/tools/archcheck.py --obj "$OBJ" >"$TMP/out" 2>"$TMP/err"
st=$?
if [ $st = 2 ] || ! grep -q '^summary ' "$TMP/out"; then
    fail "archcheck.py could not run (status $st): $(head -n 3 "$TMP/err")"
    finish
    exit $?
fi
for c in layering cycles file-lines function-lines; do
    s=$(grep "^summary $c: " "$TMP/out" | sed 's/^summary //')
    if grep -q "^$c: " "$TMP/out"; then
        grep "^$c: " "$TMP/out" | head -n 40
        fail "$s"
    else
        ok "$s"
    fi
done
finish
