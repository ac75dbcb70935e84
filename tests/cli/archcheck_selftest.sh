#!/bin/sh
# archcheck_selftest.sh - tests/tools/archcheck.py (docs/testing.md, "Structure checks")
# on small trees written here, each with one defect, and on a clean one:
#   - a file of 801 lines is reported, one of 800 is not;
#   - a function of 121 lines (from its signature's first line to its closing brace) is
#     reported with its name and first line, one of 120 is not, whatever braces its
#     strings, characters and comments hold; struct, enum and array initialisers of
#     200 lines are no functions;
#   - two files calling each other (compiled with cc -c, read with nm) are a circle
#     naming both files and a symbol of each edge;
#   - an include of a higher layer's header and a call into a higher layer's file are
#     reported with both files (and the line, the symbol); a file in no layer is;
#   - the clean tree passes (exit 0), a violation exits 1, bad usage 2; --only runs
#     one criterion.
. tests/cli/lib.sh
only_config default
PY=/usr/bin/python3
AC="$PY $(pwd)/tests/tools/archcheck.py"

# tree DIR: a clean tree in DIR (two layers: runtime/fp32 below compiler/base), objects
# in DIR/build/obj; each case copies it and adds its defect.
tree() {
    mkdir -p "$1/runtime/fp32" "$1/compiler/base" "$1/passes" "$1/tests/tools"
    printf 'fp32: runtime/fp32\nbase: compiler/base passes\n' >"$1/tests/tools/layers.txt"
    printf '#ifndef K_H\n#define K_H\nint k_add(int a, int b);\n#endif\n' >"$1/runtime/fp32/k.h"
    printf '#include "k.h"\nint k_add(int a, int b) { return a + b; }\n' >"$1/runtime/fp32/k.c"
    printf '#include "k.h"\nint base_twice(int a);\n' >"$1/compiler/base/b.h"
    printf '#include "b.h"\n#include <stdio.h>\nint base_twice(int a) { return k_add(a, a); }\n' \
        >"$1/compiler/base/b.c"
    printf '#include "b.h"\nint pass_one(int a) { return base_twice(a); }\n' >"$1/passes/p.c"
}
# objects DIR: DIR/build/obj/X.o for every DIR/X.c
objects() {
    (cd "$1" && find compiler passes runtime -name '*.c') | while read -r f; do
        mkdir -p "$1/build/obj/$(dirname "$f")"
        cc -c -I"$1/runtime/fp32" -I"$1/compiler/base" "$1/$f" -o "$1/build/obj/${f%.c}.o" || echo "cc failed: $f"
    done
}
# lines N: N lines of a function body (statements), to stdout
lines() {
    i=0
    while [ $i -lt "$1" ]; do echo "    s += $i;"; i=$((i + 1)); done
}
# run DIR ARGS...: archcheck.py in DIR; output in $TMP/out, status in $st
run() {
    d=$1
    shift
    (cd "$d" && $AC "$@") >"$TMP/out" 2>"$TMP/err"
    st=$?
}

tree "$TMP/clean"
objects "$TMP/clean"
run "$TMP/clean"
[ $st = 0 ] && [ "$(grep -c '^summary .*: 0 ' "$TMP/out")" = 4 ] && [ "$(wc -l <"$TMP/out")" = 4 ] &&
    ok "a clean tree passes: four summaries, no violation" ||
    fail "clean tree: status $st: $(cat "$TMP/out" "$TMP/err")"

# file lengths: 801 lines fail, 800 pass
cp -r "$TMP/clean" "$TMP/big"
{ echo "/* 801 lines */"; i=1; while [ $i -le 800 ]; do echo "int v$i;"; i=$((i + 1)); done; } \
    >"$TMP/big/compiler/base/big.c"
{ echo "/* 800 lines */"; i=1; while [ $i -le 799 ]; do echo "int w$i;"; i=$((i + 1)); done; } \
    >"$TMP/big/compiler/base/edge.h"
run "$TMP/big" --only file-lines
[ $st = 1 ] && grep -qx 'file-lines: compiler/base/big.c: 801 lines (limit 800)' "$TMP/out" &&
    ! grep -q edge.h "$TMP/out" &&
    grep -qx 'summary file-lines: 1 files over 800 lines; worst: compiler/base/big.c (801 lines)' "$TMP/out" &&
    ok "a file of 801 lines fails, one of 800 passes" || fail "file lengths: status $st: $(cat "$TMP/out")"

# function lengths: 121 lines fail, 120 pass; braces in strings, chars and comments,
# multi-line signatures, static inline in a header, initialisers
cp -r "$TMP/clean" "$TMP/fn"
{
    echo "/* long_one: a multi-line signature (line 2), 121 lines to its brace */"
    echo "static int"
    echo "long_one(int a,"
    echo "         int b)"
    echo "{"
    echo "    int s = a + b; const char *t = \"}}}\"; char c = '}'; /* } */ // }"
    lines 114
    echo "    return s + t[0] + c;"
    echo "}"
    echo "int edge_one(int a) {   /* 120 lines, K&R brace */"
    echo "    int s = a; const char *t = \"{{\"; char c = '{'; /* { */"
    lines 116
    echo "    return s + t[0] + c;"
    echo "}"
    echo "struct big { int a; };"
    echo "static const int table[] = {"
    lines 200 | sed 's/.*/    1,/'
    echo "};"
    echo "enum e {"
    lines 200 | awk '{print "    E" NR ","}'
    echo "};"
} >"$TMP/fn/compiler/base/fns.c"
{
    echo "#ifndef H_H"
    echo "#define H_H"
    echo "static inline int in_header(int a) {"
    echo "    int s = a;"
    lines 116
    echo "    return s;"
    echo "}"
    echo "#endif"
} >"$TMP/fn/compiler/base/h.h"
run "$TMP/fn" --only function-lines
[ $st = 1 ] && grep -qx 'function-lines: compiler/base/fns.c:2: long_one: 121 lines (limit 120)' "$TMP/out" &&
    [ "$(grep -c '^function-lines: ' "$TMP/out")" = 1 ] &&
    ok "a 121-line function fails (from its signature's first line); 120 lines, initialisers pass" ||
    fail "function lengths: status $st: $(cat "$TMP/out")"
# the header's function grows from 120 to 122 lines
sed -i '3a\    a++;\n    a++;' "$TMP/fn/compiler/base/h.h"
run "$TMP/fn" --only function-lines
grep -qx 'function-lines: compiler/base/h.h:3: in_header: 122 lines (limit 120)' "$TMP/out" &&
    ok "a static inline function in a header is measured" || fail "header function: $(cat "$TMP/out")"

# a circle of two files (cc -c, nm)
cp -r "$TMP/clean" "$TMP/cyc"
printf 'int cyc_g(int);\nint cyc_f(int a) { return a ? cyc_g(a - 1) : 0; }\n' >"$TMP/cyc/compiler/base/c1.c"
printf 'int cyc_f(int);\nint cyc_g(int a) { return cyc_f(a); }\n' >"$TMP/cyc/compiler/base/c2.c"
objects "$TMP/cyc"
run "$TMP/cyc" --only cycles
[ $st = 1 ] && grep -q '^cycles: 2 files call each other (2 edges): compiler/base/c1.c compiler/base/c2.c; a circle: compiler/base/c1.c -> compiler/base/c2.c \[cyc_g\], compiler/base/c2.c -> compiler/base/c1.c \[cyc_f\]$' "$TMP/out" &&
    ok "two files calling each other are a circle, with the symbols that close it" ||
    fail "cycle: status $st: $(cat "$TMP/out")"

# upward include and call, a file in no layer
cp -r "$TMP/clean" "$TMP/up"
printf '#include "k.h"\n#include "b.h"\nint k_up(int a) { return base_twice(a); }\n' >"$TMP/up/runtime/fp32/up.c"
mkdir -p "$TMP/up/runtime/other"
printf 'int stray(void) { return 0; }\n' >"$TMP/up/runtime/other/stray.c"
objects "$TMP/up"
run "$TMP/up" --only layering
[ $st = 1 ] && grep -qx 'layering: runtime/fp32/up.c:2: includes compiler/base/b.h (layer base) from layer fp32' "$TMP/out" &&
    grep -qx 'layering: runtime/fp32/up.c: uses base_twice of compiler/base/b.c (layer base) from layer fp32' "$TMP/out" &&
    grep -qx 'layering: runtime/other/stray.c: file runtime/other/stray.c is in no layer' "$TMP/out" &&
    [ "$(grep -c '^layering: ' "$TMP/out")" = 3 ] &&
    grep -q '^summary layering: 3 violations (1 files in no layer, 1 upward includes, 1 upward references between files); worst: runtime/fp32/up.c (2)$' "$TMP/out" &&
    ok "an upward include and call and a file in no layer are named" ||
    fail "layering: status $st: $(cat "$TMP/out")"
# the same tree with the layers the other way round: compiler/base's downward uses of
# runtime/fp32 become upward ones (the call graph is read, not assumed)
printf 'base: compiler/base passes\nfp32: runtime/fp32 runtime/other\n' >"$TMP/rev.txt"
run "$TMP/up" --only layering --layers "$TMP/rev.txt"
grep -qx 'layering: compiler/base/b.c: uses k_add of runtime/fp32/k.c (layer fp32) from layer base' "$TMP/out" &&
    grep -qx 'layering: compiler/base/b.h:1: includes runtime/fp32/k.h (layer fp32) from layer base' "$TMP/out" &&
    ok "--layers: another order gives other violations" || fail "--layers: $(cat "$TMP/out")"

# --only, bad usage
run "$TMP/up" --only file-lines,function-lines
[ $st = 0 ] && [ "$(wc -l <"$TMP/out")" = 2 ] && ok "--only: just the criteria asked for" ||
    fail "--only: status $st: $(cat "$TMP/out")"
for args in "--only nosuch" "--obj $TMP/none" "--layers $TMP/none.txt"; do
    # shellcheck disable=SC2086
    run "$TMP/up" $args
    [ $st = 2 ] && [ -s "$TMP/err" ] && [ ! -s "$TMP/out" ] && ok "usage error ($args): $(head -n 1 "$TMP/err")" ||
        fail "usage error ($args): status $st: $(cat "$TMP/out" "$TMP/err")"
done
printf 'fp32 runtime/fp32\n' >"$TMP/badlayers.txt"
run "$TMP/up" --only layering --layers "$TMP/badlayers.txt"
[ $st = 2 ] && grep -q 'badlayers.txt:1: want' "$TMP/err" && ok "a malformed layer line is named" ||
    fail "malformed layers: status $st: $(cat "$TMP/err")"
finish
