#!/bin/sh
# run.sh - runs every oqc test and adds up the results (called by `make check`).
#   1. each unit-test binary in $BUILD/tests/ (CUnit; prints "RESULT suite passed failed");
#   2. each tests/cli/*.sh script (CLI behaviour; prints "RESULT name passed failed").
# Each item's time follows its log ("-- name: N s").
# Ends with the line "check: N passed, M failed" and exits non-zero on any failure.
# A filter argument (TESTS=substring in the environment) runs only matching files.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
# The configuration, for tests that need not run in all three (e.g. checks of the
# runtime sources or of the emitted code with the system compilers run in one of them;
# heavy numeric checks use fewer samples under the sanitizers).
case "$BUILD" in *san*) OQC_CONFIG=san ;; *clang*) OQC_CONFIG=clang ;; *) OQC_CONFIG=default ;; esac
export BUILD OQC="$BUILD/oqc" OQC_CONFIG
passed=0
failed=0
broken=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

account() { # name status
    r=$(grep '^RESULT ' "$log" | tail -n 1)
    if [ -z "$r" ]; then
        failed=$((failed + 1)); broken="$broken $1(no result, exit $2)"; return
    fi
    set -- "$1" "$2" $r
    passed=$((passed + $5)); failed=$((failed + $6))
    if [ "$2" != 0 ] && [ "$6" = 0 ]; then
        failed=$((failed + 1)); broken="$broken $1(exit $2)"
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *"${TESTS:-}"*) ;; *) continue ;; esac
    echo "== $t"
    t0=$(date +%s)
    "$t" >"$log" 2>&1; st=$?
    cat "$log"
    echo "-- $(basename "$t"): $(($(date +%s) - t0)) s"
    account "$(basename "$t")" "$st"
done
# 3. the official ONNX backend node tests (Debian libonnx-testdata)
NODE_DATA=${NODE_DATA:-/usr/share/libonnx-testdata/data}
if [ -x "$BUILD/tests/tools/onnx_node_tests" ]; then
    case onnx_node_tests in *"${TESTS:-}"*)
        echo "== onnx node tests ($NODE_DATA/node, $NODE_DATA/pytorch-converted)"
        t0=$(date +%s)
        "$BUILD/tests/tools/onnx_node_tests" "$NODE_DATA/node" "$NODE_DATA/pytorch-converted" >"$log" 2>&1; st=$?
        echo "-- onnx_node_tests: $(($(date +%s) - t0)) s"
        grep -v '^skip ' "$log"
        echo "(skipped tests: $(grep -c '^skip ' "$log"); their reasons: $BUILD/tests/tools/onnx_node_tests $NODE_DATA/node $NODE_DATA/pytorch-converted | grep '^skip ')"
        account onnx_node_tests "$st" ;;
    esac
fi
for s in tests/cli/*.sh; do
    case "$s" in */lib.sh) continue ;; esac
    [ -f "$s" ] || continue
    case "$s" in *"${TESTS:-}"*) ;; *) continue ;; esac
    echo "== $s"
    t0=$(date +%s)
    sh "$s" >"$log" 2>&1; st=$?
    cat "$log"
    echo "-- $(basename "$s"): $(($(date +%s) - t0)) s"
    account "$(basename "$s")" "$st"
done
[ -n "$broken" ] && echo "broken:$broken"
echo "check ($BUILD): $passed passed, $failed failed"
[ -n "${TOTALS:-}" ] && echo "$BUILD $passed $failed" >> "$TOTALS"
[ "$failed" = 0 ]
