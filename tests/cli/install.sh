#!/bin/sh
# install.sh - `make install` and `make uninstall` into a staging directory, as a
# distribution package or a build pipeline would use them: the binary, liboqc (static,
# and shared with its soname), oqc.h, oqc.pc, the man page and the docs; a program built
# against the staged library with pkg-config alone; every command-line option described
# in the man page; uninstall removing every installed file.  Not about how oqc was
# compiled: runs in the default configuration only (it builds the position-independent
# liboqc in build/pic once).
. tests/cli/lib.sh
only_config default
STAGE=$TMP/stage
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)

make --no-print-directory install DESTDIR="$STAGE" PREFIX=/usr >"$TMP/install.log" 2>&1 &&
    ok "make install DESTDIR=... PREFIX=/usr" || fail "make install: $(tail -n 5 "$TMP/install.log")"
for f in bin/oqc lib/liboqc.a "lib/liboqc.so.$VERSION" include/oqc.h lib/pkgconfig/oqc.pc \
         share/man/man1/oqc.1 share/doc/oqc/README.md share/doc/oqc/cli.md; do
    [ -f "$STAGE/usr/$f" ] && ok "installed $f" || fail "missing $f"
done
soname=$(readelf -d "$STAGE/usr/lib/liboqc.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = liboqc.so.0 ] && [ "$(readlink "$STAGE/usr/lib/liboqc.so.0")" = "liboqc.so.$VERSION" ] &&
    [ "$(readlink "$STAGE/usr/lib/liboqc.so")" = liboqc.so.0 ] &&
    ok "shared library: soname liboqc.so.0, links liboqc.so -> liboqc.so.0 -> liboqc.so.$VERSION" ||
    fail "soname '$soname'"
v=$("$STAGE/usr/bin/oqc" --version)
[ "$v" = "oqc $VERSION" ] && ok "oqc --version: $v (the Makefile's VERSION)" || fail "--version: '$v'"

# A program built with nothing but pkg-config's flags, against the staged library.
cat >"$TMP/prog.c" <<'EOF'
#include <oqc.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    char *err = NULL;
    OqcModel *m = oqc_model_load(argv[1], NULL, 0, &err);
    if (!m) {
        fprintf(stderr, "%s", err);
        free(err);
        return 1;
    }
    printf("%s %d\n", oqc_version(), argc);
    oqc_model_free(m);
    return 0;
}
EOF
# The stage as sysroot; the system .pc files (libxml-2.0, libprotobuf-c) stay found.
export PKG_CONFIG_SYSROOT_DIR="$STAGE" PKG_CONFIG_PATH="$STAGE/usr/lib/pkgconfig"
flags=$(pkg-config --cflags --libs oqc) && ok "pkg-config --cflags --libs oqc: $flags" ||
    fail "pkg-config"
# shellcheck disable=SC2086 # pkg-config's flags are words
cc -std=c99 -Wall -Werror "$TMP/prog.c" $flags -o "$TMP/prog_shared" 2>"$TMP/cc.log" &&
    out=$(LD_LIBRARY_PATH="$STAGE/usr/lib" "$TMP/prog_shared" models/fashion/fashion_cnn.onnx) &&
    [ "$out" = "$VERSION 2" ] && ok "a program linked with the shared liboqc loads a model" ||
    fail "shared link/run: $(head -n 3 "$TMP/cc.log") '$out'"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror "$TMP/prog.c" $(pkg-config --cflags oqc) "$STAGE/usr/lib/liboqc.a" \
    $(pkg-config --libs-only-other --libs-only-l --static oqc | sed 's/-loqc//') \
    -o "$TMP/prog_static" 2>"$TMP/cc.log" &&
    out=$("$TMP/prog_static" models/fashion/fashion_cnn.onnx) && [ "$out" = "$VERSION 2" ] &&
    ok "a program linked with the static liboqc (pkg-config --static)" ||
    fail "static link/run: $(head -n 3 "$TMP/cc.log") '$out'"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# The man page renders, and describes every option the commands accept.
MANWIDTH=80 man -l "$STAGE/usr/share/man/man1/oqc.1" >"$TMP/man.txt" 2>"$TMP/man.err" &&
    grep -q 'oqc - ONNX quantization compiler' "$TMP/man.txt" && ok "man -l renders oqc(1)" ||
    fail "man: $(head -n 3 "$TMP/man.err")"
missing=""
for opt in $(grep -ho '"--[a-z0-9][a-z0-9-]*"' compiler/driver/main.c compiler/cli_*.c | tr -d '"' | sort -u); do
    grep -q -- "$opt" "$TMP/man.txt" || missing="$missing $opt"
done
[ -z "$missing" ] && ok "every option of compiler/driver/main.c and cli_*.c is in oqc(1)" ||
    fail "options missing from docs/oqc.1:$missing"

make --no-print-directory uninstall DESTDIR="$STAGE" PREFIX=/usr >"$TMP/uninstall.log" 2>&1 ||
    fail "make uninstall: $(tail -n 3 "$TMP/uninstall.log")"
left=$(find "$STAGE" ! -type d | sed "s|$STAGE||")
[ -z "$left" ] && ok "make uninstall removes every installed file" || fail "left behind: $left"
finish
