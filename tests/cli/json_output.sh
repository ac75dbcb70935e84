#!/bin/sh
# json_output.sh - `--json` (docs/json.md): every command that takes it, on every bundled
# model, writes one document that validates against docs/oqc-json.schema.json, or fails
# cleanly (exit 1, the message on stderr, nothing on stdout):
#   - check and compile --precision fp32 on every model of models/ (tiny, fashion,
#     squeezenet, devset); for the models with one float32 input also calibrate, compile
#     (INT8) and eval, on 4 samples of their input shape cut from squeezenet's image data
#     (the devset networks on their own data and tables, the Fashion CNN on its own);
#   - bench builds and runs the emitted code (seconds per model): on the Fashion CNN
#     (INT8 and FP32), two tiny models and resnet32 with its table (every bundled model:
#     json_bench.sh);
#   - the document holds the same facts as the text (Fashion CNN: nodes, arena, files,
#     tensors, samples, agreement, accuracy, latency compared with the text lines);
#   - with --json the text goes to standard error; with -q nothing does;
#   - the validator is not vacuous: broken documents are refused.
# Validation uses Debian's python3-jsonschema (/usr/bin/python3; scripts/install-deps.sh
# installs it): without it the schema checks are skipped, with the reason.  The sweep
# over every model runs in the default configuration; the others (clang, ASan+UBSan)
# run the Fashion CNN's commands only.
. tests/cli/lib.sh
PY=/usr/bin/python3
SCHEMA=docs/oqc-json.schema.json
VALIDATE="tests/tools/validate_json.py $SCHEMA"
SRC=models/tv/squeezenet1_1_in4.npy
FM=models/fashion/fashion_cnn.onnx
FC=models/fashion/calib_500.npy
mkdir -p "$TMP/docs"
have_schema=1
"$PY" -c 'import jsonschema' 2>/dev/null || have_schema=0

# run NAME CMD ARGS...: runs `oqc CMD ARGS... --json`; the document goes to
# docs/NAME.CMD.json when it succeeds; prints OK, REFUSED or "BAD why".
run() {
    name=$1
    cmd=$2
    shift 2
    out="$TMP/docs/$name.$cmd.json"
    "$OQC" "$cmd" "$@" --json >"$out" 2>"$TMP/err$W"
    st=$?
    if [ "$st" = 0 ]; then
        [ -s "$out" ] && echo OK || echo "BAD $name $cmd: exit 0 but no document"
    elif [ "$st" = 1 ] && [ ! -s "$out" ] && [ -s "$TMP/err$W" ]; then
        rm -f "$out"
        echo "REFUSED $cmd"
    else
        echo "BAD $name $cmd: status $st, $(wc -c <"$out") bytes on stdout: $(head -n 2 "$TMP/err$W")"
        rm -f "$out"
    fi
}

# one MODEL: its commands (status lines on stdout).
one() {
    mf=$1
    m=$(basename "$mf" .onnx)
    # shellcheck disable=SC2046
    set -- $(shape_args "$m")
    run "$m" check "$mf" "$@"
    run "$m-fp32" compile "$mf" "$@" --precision fp32 -o "$TMP/fp_$m" --name t
    rm -rf "$TMP/fp_$m"
    [ -s "$TMP/docs/$m.check.json" ] || return
    # one float32 input: data of its shape, then the INT8 commands
    sh=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
i = d["inputs"]
if len(i) == 1 and i[0]["dtype"] == "f32" and all(x > 0 for x in i[0]["shape"]):
    print(", ".join(str(x) for x in i[0]["shape"]))' "$TMP/docs/$m.check.json")
    [ -n "$sh" ] || return
    case "$m" in
        fashion_cnn) data=$FC; evd=models/fashion/test_1000.npy ;;
        resnet32_cifar10|mobilenetv2_cifar10_fp32)
            data=models/devset/calib_200.npy; evd=models/devset/eval_300.npy ;;
        *)
            el=1
            for dim in $(echo "$sh" | tr ',' ' '); do el=$((el * dim)); done
            [ $((4 * el)) -le 602112 ] || return
            mknpy "4, $sh" $SRC "$TMP/in_$m.npy"
            data=$TMP/in_$m.npy; evd=$data ;;
    esac
    run "$m" calibrate "$mf" "$@" --data "$data" -o "$TMP/$m.xml" --format xml
    run "$m-int8" compile "$mf" "$@" --calib "$data" -o "$TMP/q_$m" --name t
    if [ -e "$TMP/$m.xml" ]; then
        run "$m" eval "$mf" "$@" --data "$evd" --table "$TMP/$m.xml" --limit 20
    fi
    rm -rf "$TMP/q_$m" "$TMP/$m.xml" "$TMP/in_$m.npy"
}

if [ "${OQC_CONFIG:-default}" = default ]; then
    bundled_models >"$TMP/models"
else
    echo "$FM" >"$TMP/models"
fi
over_models one "$TMP/models"
mv "$TMP/res" "$TMP/resm"
# bench: builds and runs the code (seconds each): a few models.  It builds with $CC:
# here through the object cache (tests/tools/cc_cached.sh, as json_bench.sh), so the
# runtime copies the benched models share compile once (the documents, not the
# figures measured, are what this checks).
CC="sh $(pwd)/tests/tools/cc_cached.sh ${CC:-cc}"
export CC OQC_CC_TMP="$TMP"
W=b
{
    run fashion_int8 bench "$FM" --calib "$FC" --runs 3 --warmup 1
    if [ "${OQC_CONFIG:-default}" = default ]; then
        run fashion_fp32 bench "$FM" --precision fp32 --runs 3 --warmup 1
        run conv_basic bench models/tiny/conv_basic.onnx --precision fp32 --runs 3 --warmup 1
        run gemm_basic bench models/tiny/gemm_basic.onnx --precision fp32 --runs 3 --warmup 1
        run resnet32 bench models/devset/resnet32_cifar10.onnx --table models/devset/resnet32.table \
            --runs 3 --warmup 1
    fi
} >"$TMP/resb"
cat "$TMP/resm" "$TMP/resb" >"$TMP/res"
bad_lines "OK\|REFUSED"
[ "$BAD" = 0 ] && [ "$OTHER" = 0 ] && ok "every --json command either wrote a document or failed cleanly (exit 1, message on stderr, empty stdout)" ||
    fail "$BAD commands did neither, $OTHER unexpected lines (above)"
for c in check compile calibrate eval bench; do
    n=$(ls "$TMP/docs" | grep -c "\.$c\.json$")
    echo "  $c: $n documents, $(grep -c "^REFUSED $c\$" "$TMP/res") refusals"
done
nmod=$(wc -l <"$TMP/models")
nchk=$(ls "$TMP/docs" | grep -c '\.check\.json$')
if [ "${OQC_CONFIG:-default}" = default ]; then
    [ "$nmod" -ge 180 ] && [ "$nchk" -ge 170 ] &&
        [ "$(ls "$TMP/docs" | grep -c '\.eval\.json$')" -ge 100 ] &&
        [ "$(ls "$TMP/docs" | grep -c '\.bench\.json$')" = 5 ] &&
        ok "$nmod models: $nchk check documents, every command represented" ||
        fail "too few documents: $nmod models, $nchk check documents"
fi

if [ $have_schema = 0 ]; then
    skip "python3-jsonschema not installed (Debian package; scripts/install-deps.sh installs it): $(ls "$TMP/docs" | wc -l) documents not validated"
else
    # the validator is strict: a valid document passes, broken ones do not
    f=$TMP/docs/fashion_cnn-int8.compile.json
    sed 's/"compiled"/"compiledx"/' "$f" >"$TMP/bad1.json"
    sed 's/"nodes":[0-9]*/"nodes":-1/' "$f" >"$TMP/bad2.json"
    sed 's/"arena_bytes":[0-9]*/"arena_bytes":NaN/' "$f" >"$TMP/bad3.json"
    sed 's/}$/,"extra":1}/' "$TMP/docs/fashion_cnn.check.json" >"$TMP/bad4.json"
    sed 's/"compile"/"link"/' "$f" >"$TMP/bad5.json"
    "$PY" $VALIDATE "$TMP"/bad?.json >"$TMP/bad.out"
    [ "$(grep -c '^invalid' "$TMP/bad.out")" = 5 ] && "$PY" $VALIDATE "$f" &&
        ok "the validator refuses documents with a member missing, out of range, NaN, unknown or of another command" ||
        fail "the validator accepts broken documents: $(cat "$TMP/bad.out")"
    if "$PY" $VALIDATE "$TMP"/docs/*.json >"$TMP/val.out"; then
        ok "$(ls "$TMP/docs" | wc -l) documents validate against $SCHEMA"
    else
        fail "documents do not validate: $(head -n 5 "$TMP/val.out")"
    fi
fi

# The same facts as the text: the Fashion CNN's text lines against its documents.
"$OQC" check "$FM" >"$TMP/t.check" 2>&1
"$OQC" compile "$FM" --calib "$FC" -o "$TMP/fq" >"$TMP/t.compile" 2>&1
"$OQC" calibrate "$FM" --data "$FC" -o "$TMP/f.trt" >"$TMP/t.calibrate" 2>&1
"$OQC" eval "$FM" --data models/fashion/test_1000.npy --labels models/fashion/test_labels_1000.npy \
    --calib "$FC" --limit 200 >"$TMP/t.eval" 2>&1
"$OQC" eval "$FM" --data models/fashion/test_1000.npy --labels models/fashion/test_labels_1000.npy \
    --calib "$FC" --limit 200 --json >"$TMP/j.eval" 2>"$TMP/j.eval.err"
"$OQC" compile "$FM" --calib "$FC" -o "$TMP/fq" --json >"$TMP/j.compile" 2>"$TMP/j.compile.err"
if "$PY" - "$TMP" <<'EOF'; then
import json, re, sys
t = sys.argv[1]
def doc(n): return json.load(open(t + "/docs/fashion_cnn." + n + ".json"))
def text(n): return open(t + "/t." + n).read()
bad = []
c = doc("check")
if not re.search(r": ok: %d nodes, %d inputs, %d outputs" % (c["nodes"], len(c["inputs"]),
                 len(c["outputs"])), text("check")):
    bad.append("check")
j = json.load(open(t + "/j.compile"))["compiled"]
m = re.search(r"\): (\d+) nodes, arena (\d+) bytes.*activations (\d+) planned, (\d+) if none "
              r"shared, largest live set (\d+)\), (\d+) constants \((\d+) bytes\), (\d+) files "
              r"\((\d+) runtime\)", text("compile"))
mem = j["memory"]
if not m or [int(x) for x in m.groups()] != [j["nodes"], mem["arena_bytes"],
        mem["activations_planned"], mem["activations_unshared"], mem["peak_live"],
        j["constants"], j["weight_bytes"], len(j["files"]), j["runtime_files"]]:
    bad.append("compile")
import os
if not all(os.path.isfile(f) for f in j["files"]):
    bad.append("compile files")
c = doc("calibrate")
m = re.search(r"calibrated (\d+) tensors over (\d+) samples", text("calibrate"))
if not m or [int(x) for x in m.groups()] != [len(c["tensors"]), c["samples"]]:
    bad.append("calibrate")
e = json.load(open(t + "/j.eval"))
mt = e["outputs"][0]["metrics"]
te = text("eval")
want = ["samples: %d " % e["samples"],
        "top-1 agreement FP32 vs INT8: %.4f (%d of %d)" % (mt["agreement"], mt["agree"], mt["rows"]),
        "top-1 accuracy: FP32 %.4f, INT8 %.4f" % (mt["top1_fp32"], mt["top1_int8"]),
        "SQNR %.2f dB centered (%.2f dB uncentered)" % (mt["sqnr_db"], mt["sqnr_uncentered_db"])]
want += ["  %-40s %-18s %-4s %-12.6g %8.2f" % (l["tensor"], l["producer"], l["type"], l["scale"],
                                              l["sqnr_db"]) for l in e["layers"]]
bad += ["eval: " + w for w in want if w not in te]
if len(e["layers"]) < 10:
    bad.append("eval: %d layers" % len(e["layers"]))
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
    ok "the documents hold the text's figures (check, compile, calibrate, eval)"
else
    fail "documents and text disagree (above)"
fi
# bench: the text's latency line and the document's median
"$OQC" bench "$FM" --calib "$FC" --runs 3 --warmup 1 --json >"$TMP/j.bench" 2>"$TMP/t.bench"
med=$("$PY" -c 'import json, sys; print("%.4f" % json.load(open(sys.argv[1]))["latency"]["median_ms"])' "$TMP/j.bench")
grep -q "latency over 3 runs (after 1 warm-up), single thread: median $med ms" "$TMP/t.bench" &&
    ok "bench: the document's median ($med ms) is the text's, and the text went to stderr" ||
    fail "bench: median $med not in the text: $(grep latency "$TMP/t.bench")"
# the text of --json goes to stderr unchanged; -q silences it, the document stays
grep -q "compiled to $TMP/fq/fashion_cnn.c" "$TMP/j.compile.err" &&
    grep -q "^top-1 agreement" "$TMP/j.eval.err" &&
    ok "with --json the human text is on standard error" || fail "text missing from stderr"
"$OQC" check "$FM" --json -q >"$TMP/q.out" 2>"$TMP/q.err"
[ -s "$TMP/q.out" ] && [ ! -s "$TMP/q.err" ] && ok "--json -q: the document and no text" ||
    fail "--json -q: $(wc -c <"$TMP/q.out") bytes out, stderr: $(head -c 200 "$TMP/q.err")"
# commands without --json refuse it; a command that fails writes no document
"$OQC" dump "$FM" --json >"$TMP/d.out" 2>"$TMP/d.err"
[ $? = 1 ] && [ ! -s "$TMP/d.out" ] && grep -q "unknown option '--json'" "$TMP/d.err" &&
    ok "dump --json: unknown option" || fail "dump --json accepted"
"$OQC" compile models/tiny/cleanup_fold_limit.onnx --precision fp32 -o "$TMP/nf" --json \
    >"$TMP/f.out" 2>"$TMP/f.err"
[ $? = 1 ] && [ ! -s "$TMP/f.out" ] && grep -q "ConstantOfShape" "$TMP/f.err" && [ ! -e "$TMP/nf" ] &&
    ok "a failing compile --json: exit 1, the reason on stderr, no document, no output" ||
    fail "a failing compile --json: $(cat "$TMP/f.out" "$TMP/f.err" | head -c 300)"
finish
