#!/bin/sh
# cc_cached.sh - a C compiler command with an object cache, for the tests that build
# emitted code (tests/cli/lib.sh's cc_cached; and as $CC for `oqc bench`).
#   sh tests/tools/cc_cached.sh CC ARG...
# does what `CC ARG...` does for a compile-and-link of C sources (`gcc $FLAGS -I d a.c
# b.c -lm -o prog`), but compiles each .c on its own and keeps its object in
# $OQC_OBJCACHE (default build/objcache of the repository, shared by the three
# configurations of make check) under the hash of:
#   - the compiler and its version;
#   - the flags but -I, -D and -U (in C their whole effect is on the preprocessed text:
#     the same runtime file compiled for models of other names is one object);
#   - the source's preprocessed text, with the folders taken out of its line markers and
#     $OQC_CC_TMP (the test's temporary folder, when set) replaced: both differ per model
#     and per run, while file names, line numbers and contents stay in.
# The runtime copies emitted next to every model are the same files, so they compile
# once per make check instead of once per model and configuration (about 10 s of
# gcc -O2 each time).  A hit is the object this compiler makes from the same
# preprocessed text with the same flags (only folder names in debug information can
# differ); the compiler's messages are kept with it and printed again; a failed compile
# is not kept.  Arguments must hold no blanks.  Objects are stored under a unique name
# and then renamed, so several configurations may fill the cache at once.
# With -c (one source, -o OBJECT) it compiles only, as `CC -c`: the object is the cached
# one, the same whether a test asked for the object or for a program built from it.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=${OQC_OBJCACHE:-$here/build/objcache}
tmpd=${OQC_CC_TMP:-}
cc=$1
shift
fl="" kfl="" src="" lk="" out=a.out conly=0
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=$2; shift ;;
        -c) conly=1 ;;
        -I) fl="$fl -I $2"; shift ;;
        -I* | -D* | -U*) fl="$fl $1" ;;
        *.c) src="$src $1" ;;
        *.o | -l* | -L* | -Wl,*) lk="$lk $1" ;;
        *) fl="$fl $1"; kfl="$kfl $1" ;;
    esac
    shift
done
case $conly$src in 1" "*" "*) echo "cc_cached.sh: -c takes one source" >&2; exit 2 ;; esac
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache" || exit 1
# the temporary folder's name, or a string that never occurs
[ -n "$tmpd" ] || tmpd=/nonexistent/cc_cached/$$
ver=$($cc --version 2>/dev/null | head -n 1)
objs="" i=0
for c in $src; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    key=$( { echo "$cc $ver"; echo "$kfl" | sed "s|$tmpd|@TMP@|g"
             $cc $fl -E "$c" 2>/dev/null |
                 sed -e 's|^\(# [0-9]* "\)[^"]*/|\1|' -e "s|$tmpd|@TMP@|g"; } |
           sha256sum | cut -c1-64)
    o=$cache/$key.o
    if [ -e "$o" ]; then
        cat "$cache/$key.msg" >&2 2>/dev/null
    else
        # shellcheck disable=SC2086
        if ! $cc $fl -c "$c" -o "$work/new.o" 2>"$work/msg"; then
            cat "$work/msg" >&2
            exit 1
        fi
        cat "$work/msg" >&2
        cp "$work/msg" "$cache/$key.msg.$$" && mv -f "$cache/$key.msg.$$" "$cache/$key.msg" &&
            cp "$work/new.o" "$cache/$key.o.$$" && mv -f "$cache/$key.o.$$" "$o" || exit 1
    fi
    if [ $conly = 1 ]; then
        cp "$o" "$out.$$" && mv -f "$out.$$" "$out"
        exit
    fi
    cp "$o" "$work/$i.o" && objs="$objs $work/$i.o"
done
# shellcheck disable=SC2086
$cc $fl $objs $lk -o "$out"
