# lib.sh - helpers for the CLI test scripts in tests/cli/ (sourced, not run).
# Each script calls ok/fail per check and ends with `finish`, which prints the
# "RESULT name passed failed" line tests/run.sh reads.
T_PASS=0
T_FAIL=0
T_NAME=$(basename "$0" .sh)
OQC=${OQC:-build/oqc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ok()   { T_PASS=$((T_PASS + 1)); echo "ok   $*"; }
fail() { T_FAIL=$((T_FAIL + 1)); echo "FAIL $*"; }
# check NAME COMMAND...: passes when the command exits 0
check() { n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
finish() { echo "RESULT $T_NAME $T_PASS $T_FAIL"; [ "$T_FAIL" = 0 ]; }
