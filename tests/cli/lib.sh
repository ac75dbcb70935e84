# lib.sh - helpers for the CLI test scripts in tests/cli/ (sourced, not run).
# Each script calls ok/fail/skip per check and ends with `finish`, which prints the
# "RESULT name passed failed skipped" line tests/run.sh reads.
T_PASS=0
T_FAIL=0
T_SKIP=0
T_NAME=$(basename "$0" .sh)
OQC=${OQC:-build/oqc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ok()   { T_PASS=$((T_PASS + 1)); echo "ok   $*"; }
fail() { T_FAIL=$((T_FAIL + 1)); echo "FAIL $*"; }
# check NAME COMMAND...: passes when the command exits 0
check() { n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
# skip REASON: a check that cannot run here (a tool not installed, an instruction set
# the CPU lacks: begin the reason with "CPU lacks"); counted and listed by tests/run.sh,
# never a pass, and a failure in the scripts tests/expected-to-run.txt names.
skip() { T_SKIP=$((T_SKIP + 1)); echo "skip $*"; }
finish() { echo "RESULT $T_NAME $T_PASS $T_FAIL $T_SKIP"; [ "$T_FAIL" = 0 ]; }
# only_config CONFIG: the script runs only in that configuration of `make check`
# (default, clang or san: tests/run.sh's OQC_CONFIG) and ends here, passing, in the
# others: for checks that do not depend on how oqc was built.
only_config() {
    if [ "${OQC_CONFIG:-default}" != "$1" ]; then
        echo "runs in the $1 configuration of make check only (not a skip: it runs there)"
        finish
        exit $?
    fi
}

# .npy helpers for comparing emitted programs' outputs with oqc's.
# mknpy SHAPE SRC OUT: OUT is a float32 .npy of SHAPE ("2, 3, 4") holding the first
# values of SRC's data (SRC: a v1 .npy with a 128-byte header, or raw floats).
mknpy() {
    n=1
    for dim in $(echo "$1" | tr ',' ' '); do n=$((n * dim)); done
    { npy_header '<f4' "$1"; tail -c +129 "$2" | head -c $((4 * n)); } > "$3"
}

# npy_header DESCR SHAPE: prints a version 1 .npy header for dtype DESCR ('<f4', '<i8',
# ...) and SHAPE ("2, 3, 4"; "" for a scalar), padded to a multiple of 64 bytes.
npy_header() {
    case "$2" in *,*|"") shape=$2 ;; *) shape="$2," ;; esac
    h="{'descr': '$1', 'fortran_order': False, 'shape': ($shape), }"
    pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
    hl=$(( ${#h} + pad + 1 ))
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((hl % 256)))\\$(printf %03o $((hl / 256)))"
    printf '%s%*s\n' "$h" "$pad" ""
}

# data_of NPY: the data part of a .npy file (header skipped: the driver and oqc may
# write different shapes for the same values).
data_of() {
    hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((10 + hl + 1)) "$1"
}

# same_data A B [BYTES]: the data parts are equal (the first BYTES of them).
same_data() {
    data_of "$1" | head -c "${3:-999999999}" > "$TMP/a.bin"
    data_of "$2" | head -c "${3:-999999999}" > "$TMP/b.bin"
    [ -s "$TMP/a.bin" ] && cmp -s "$TMP/a.bin" "$TMP/b.bin"
}

# image_set DIR: a folder of the bundled test images in two class sub-folders, one image
# nested deeper and a file that is no image (skipped); read in sorted path order it holds
# a_cls/photo.png, a_cls/sub/palette.png, b_cls/gray.png, b_cls/photo.jpg.
image_set() {
    mkdir -p "$1/b_cls" "$1/a_cls/sub"
    cp models/images/photo.jpg models/images/gray.png "$1/b_cls/"
    cp models/images/photo.png "$1/a_cls/"
    cp models/images/palette.png "$1/a_cls/sub/"
    echo "ignored" > "$1/a_cls/notes.txt"
}
