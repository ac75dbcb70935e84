#!/bin/sh
# json_bench.sh - `oqc bench --json` on half the bundled models (docs/json.md): INT8 on those
# with one float32 input (calibrated on 4 samples of their input shape cut from
# squeezenet's image data; the Fashion CNN and the devset networks on their own data),
# FP32 on the others and on five more (FP32 and INT8 documents differ in their precision
# and ops only, and each bench costs a build).  Each is either a document that validates
# against docs/oqc-json.schema.json, with a per-layer profile in node order, or a clean
# refusal (exit 1, the message on stderr, nothing on stdout), as json_output.sh checks
# for the other commands.  bench builds the emitted code with $CC: here the object cache
# of tests/tools/cc_cached.sh, so the runtime copies compile once, not once per model
# (the figures measured are not the point: one run, no warm-up).
# Clang configuration only: the documents come from the same code in every build, and
# the clang configuration of make check is the shortest.
. tests/cli/lib.sh
only_config clang
PY=/usr/bin/python3
SCHEMA=docs/oqc-json.schema.json
"$PY" -c 'import jsonschema' 2>/dev/null || {
    skip "python3-jsonschema not installed (scripts/install-deps.sh installs it)"; finish; exit $?; }
CC="sh $(pwd)/tests/tools/cc_cached.sh ${CC:-cc}"
export CC OQC_CC_TMP="$TMP"
mkdir -p "$TMP/docs"

# bench NAME ARGS...: `oqc bench ARGS... --json`; OK, REFUSED or "BAD why".
bench() {
    name=$1
    shift
    out="$TMP/docs/$name.json"
    "$OQC" bench "$@" --runs 1 --warmup 0 --json >"$out" 2>"$TMP/err$W"
    st=$?
    if [ "$st" = 0 ]; then
        [ -s "$out" ] && echo OK || echo "BAD $name: exit 0 but no document"
    elif [ "$st" = 1 ] && [ ! -s "$out" ] && [ -s "$TMP/err$W" ]; then
        rm -f "$out"
        echo "REFUSED $name: $(head -n 1 "$TMP/err$W" | cut -c1-120)"
    else
        echo "BAD $name: status $st, $(wc -c <"$out") bytes on stdout: $(head -n 2 "$TMP/err$W")"
        rm -f "$out"
    fi
}

# one MODEL: bench INT8 when the model has one float32 input, else FP32; FP32 as well
# for the five models of $FP32_TOO
FP32_TOO=" fashion_cnn conv_basic gemm_basic squeezenet1_1 resnet32_cifar10 "
one() {
    mf=$1
    m=$(basename "$mf" .onnx)
    # shellcheck disable=SC2046
    set -- $(shape_args "$m")
    case "$FP32_TOO" in *" $m "*) bench "$m-fp32" "$mf" "$@" --precision fp32 ;; esac
    data=""
    case "$m" in
        fashion_cnn) data=models/fashion/calib_500.npy ;;
        resnet32_cifar10 | mobilenetv2_cifar10_fp32) data=models/devset/calib_200.npy ;;
        *) if "$OQC" compile "$mf" "$@" --precision fp32 -o "$TMP/h$W" --name t -q 2>/dev/null &&
                  sample_data "$TMP/h$W/t.h" "$TMP/in$W.npy"; then
               data=$TMP/in$W.npy
           fi
           rm -rf "$TMP/h$W" ;;
    esac
    if [ -n "$data" ]; then
        bench "$m-int8" "$mf" "$@" --calib "$data"
    else
        case "$FP32_TOO" in *" $m "*) ;; *) bench "$m-fp32" "$mf" "$@" --precision fp32 ;; esac
    fi
}

# Every second bundled model (the list is sorted, so each family of one operator's
# variants keeps about half its members), plus the five of $FP32_TOO: a bench costs a
# build and a run, and the documents of the other half come from the same code.
bundled_models >"$TMP/all"
awk 'NR % 2 == 1 || /\/(fashion_cnn|conv_basic|gemm_basic|squeezenet1_1|resnet32_cifar10)\.onnx$/' \
    "$TMP/all" >"$TMP/models"
over_models one "$TMP/models"
bad_lines "OK\|REFUSED"
nf=$(ls "$TMP/docs" | grep -c -- '-fp32\.json$')
ni=$(ls "$TMP/docs" | grep -c -- '-int8\.json$')
nr=$(grep -c '^REFUSED' "$TMP/res")
nm=$(wc -l <"$TMP/models")
na=$(wc -l <"$TMP/all")
nd=$(ls "$TMP/docs" | sed 's/-\(fp32\|int8\)\.json$//' | sort -u | wc -l)
echo "  $nm of $na models: $nf FP32 and $ni INT8 bench documents ($nd models), $nr refusals"
grep '^REFUSED' "$TMP/res" | sed 's/^/  /' | head -n 20
[ "$BAD" = 0 ] && [ "$OTHER" = 0 ] &&
    ok "bench --json on each of the $nm models either wrote a document or failed cleanly" ||
    fail "$BAD bench commands did neither, $OTHER unexpected lines (above)"
# floors from this tree (225 models, 116 benched: documents for 111, 108 INT8; the 5
# others are refused, as compile refuses them): a change that makes models fail bench
# shows here
[ "$na" -ge 210 ] && [ "$nm" -ge 105 ] && [ "$nd" -ge "$((nm - 5))" ] && [ "$ni" -ge 100 ] &&
    [ "$nf" -ge 8 ] &&
    ok "documents for $nd of $nm models ($ni INT8, $nf FP32)" ||
    fail "too few bench documents: $nd of $nm models, $ni INT8, $nf FP32"
if "$PY" tests/tools/validate_json.py "$SCHEMA" "$TMP"/docs/*.json >"$TMP/val.out"; then
    ok "$(ls "$TMP/docs" | wc -l) bench documents validate against $SCHEMA"
else
    fail "bench documents do not validate: $(head -n 5 "$TMP/val.out")"
fi
# the profile: layers in node order (strictly increasing indices, below the node count),
# their shares adding up to 100% (rounding aside) when there are any (a model of views
# and constants only runs no layer)
if "$PY" - "$TMP/docs" <<'EOF'; then
import json, os, sys
bad = []
for f in sorted(os.listdir(sys.argv[1])):
    d = json.load(open(os.path.join(sys.argv[1], f)))
    lay, n = d["layers"], d["compiled"]["nodes"]
    idx = [l["index"] for l in lay]
    share = sum(l["percent"] for l in lay)
    if idx != sorted(set(idx)) or any(i < 0 or i >= n for i in idx) \
            or (lay and abs(share - 100) > 0.01):
        bad.append("%s: layers %s, %d nodes, %.3f%%" % (f, idx[:8], n, share))
if bad:
    print("\n".join(bad[:5]))
sys.exit(1 if bad else 0)
EOF
    ok "every document's profile lists its layers in node order, shares adding up to 100%"
else
    fail "profiles out of order or not adding up to 100% (above)"
fi
finish
