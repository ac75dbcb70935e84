#!/bin/sh
# accuracy_harness.sh - the pieces of `make accuracy` (bench/accuracy/, docs/accuracy.md)
# that can be checked without the devset or ONNX Runtime:
#   1. metrics.py on hand-made outputs whose top-1, delta, agreement and centered SQNR
#      are worked out below, a failed oqc run and a missing ONNX Runtime row;
#   2. make_photos.py: shapes, the preprocessing's value range, the same bytes on a
#      second run (seeded), no evaluation crop equal to a calibration crop, held-out
#      photos only in the evaluation set.
# Python only (no oqc), so it runs in the default configuration only; skipped when
# python3-numpy (or, for part 2, Debian's photos) is missing.
. tests/cli/lib.sh
only_config default
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "skip: python3-numpy is not installed"
    finish
    exit $?
fi

# 1. metrics.  f = [[1,0],[0,1]]: per-output means m = [0.5,0.5], centered signal
#    4 * 0.25 = 1.  q1 = [[1,0.1],[0.2,1]]: same argmax as f (agreement 100), error
#    0.01 + 0.04 = 0.05, SQNR 10 log10(1/0.05) = 13.0103 dB.  q2 = [[0,1],[0,1]]: argmax
#    [1,1] (agreement 50), error 1 + 1 = 2, SQNR 10 log10(0.5) = -3.0103 dB.  Labels
#    [0,0]: FP32 top-1 50 (argmax f = [0,1]), q1 50 (delta 0), q2 0 (delta -50).
O=$TMP/acc
mkdir -p "$O/net"
"$PY" - "$O" <<'EOF'
import sys, numpy as np
o = sys.argv[1]
np.save(o + "/net/fp32.npy", np.array([[1, 0], [0, 1]], np.float32))
np.save(o + "/net/q1.npy", np.array([[1, 0.1], [0.2, 1]], np.float32))
np.save(o + "/net/q2.npy", np.array([[0, 1], [0, 1]], np.float32))
np.save(o + "/labels.npy", np.array([0, 0], np.int64))
EOF
printf 'net\tm.onnx\tc.npy\te.npy\t%s\tort.onnx\ttwo samples\n' "$O/labels.npy" >"$O/networks.tsv"
{ printf 'one\tfloat\tok\t1\t%s\n' "$O/net/q1.npy"
  printf 'one\tfixed\tok\t1\t%s\n' "$O/net/q2.npy"
  printf 'two\tfloat\tfailed\t0\tm.onnx: 2 node(s) use operators oqc does not support: ReduceMean x2\n'
} >"$O/net/runs.tsv"
echo "node is not installed" >"$O/net/ort_int8.err"
printf 'one\t--method max\ntwo\t\n' >"$O/variants.txt"
if "$PY" bench/accuracy/metrics.py "$O" --variants "$O/variants.txt" >"$TMP/md" 2>"$TMP/err"; then
    ok "metrics.py runs"
else
    fail "metrics.py: $(tail -n 3 "$TMP/err")"
fi
"$PY" - "$O/results.json" >"$TMP/m" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))[0]
print("fp32", round(r["fp32_top1"], 4))
for row in r["rows"]:
    if "error" in row:
        print(row["variant"], row["requant"], "error", row["error"])
    else:
        print(row["variant"], row["requant"], round(row["top1"], 4), round(row["delta"], 4),
              round(row["agreement"], 4), round(row["sqnr_db"], 4))
EOF
# Tolerance: SQNR to 4 decimals (float32 inputs, float64 sums: exact well beyond that).
for want in "fp32 50.0" "one float 50.0 0.0 100.0 13.0103" "one fixed 0.0 -50.0 50.0 -3.0103" \
            "two float error m.onnx: 2 node(s) use operators oqc does not support: ReduceMean x2" \
            "ONNX Runtime INT8 - error node is not installed"; do
    grep -qxF "$want" "$TMP/m" && ok "metrics: $want" || fail "metrics: no '$want' in: $(cat "$TMP/m")"
done
grep -q '^| two | float | refused: m.onnx: 2 node(s) use operators' "$TMP/md" &&
    ok "results.md: a refused model is a row with oqc's message" ||
    fail "results.md refused row: $(grep '^| two' "$TMP/md")"
grep -q '^| one (`--method max`) | float | 50.00 | +0.00 | 100.00 | 13.01 |' "$TMP/md" &&
    ok "results.md: a measured row" || fail "results.md row: $(grep '^| one' "$TMP/md")"
[ -f "$O/results.md" ] && [ -f "$O/results.json" ] && ok "results.md and results.json written" ||
    fail "results files missing"

# 2. make_photos.py, small: 6 calibration and 8 evaluation inputs.
if ! "$PY" -c 'import PIL' 2>/dev/null ||
        [ ! -f /usr/lib/python3/dist-packages/skimage/data/astronaut.png ]; then
    echo "skip make_photos (python3-pil or python3-skimage not installed)"
    finish
    exit $?
fi
for k in a b; do
    "$PY" bench/accuracy/make_photos.py "$TMP/p$k" --calib 26 --eval 8 >/dev/null 2>"$TMP/err" ||
        fail "make_photos.py ($k): $(tail -n 3 "$TMP/err")"
done
cmp -s "$TMP/pa/imagenet_calib.npy" "$TMP/pb/imagenet_calib.npy" &&
    cmp -s "$TMP/pa/imagenet_eval.npy" "$TMP/pb/imagenet_eval.npy" &&
    ok "make_photos: the same bytes twice (seeded)" || fail "make_photos differs between runs"
"$PY" - "$TMP/pa" >"$TMP/p" 2>&1 <<'EOF'
import sys, numpy as np
d = sys.argv[1]
c, e = np.load(d + "/imagenet_calib.npy"), np.load(d + "/imagenet_eval.npy")
print("shapes", c.shape, e.shape, c.dtype, e.dtype)
# The preprocessing maps [0,1] to [(0 - mean)/std, (1 - mean)/std] per channel: the
# extremes are (0 - 0.485)/0.229 = -2.1179 and (1 - 0.406)/0.225 = 2.64.
print("range", bool(c.min() >= -2.1180 and c.max() <= 2.6401 and e.min() >= -2.1180
                    and e.max() <= 2.6401))
rows = [l.rstrip("\n").split("\t") for l in open(d + "/imagenet_photos.txt") if not l.startswith("#")]
calib = {(r[2], r[3], r[4]) for r in rows if r[0] == "calib"}
evals = [(r[2], r[3], r[4]) for r in rows if r[0].startswith("eval")]
print("disjoint", not calib & set(evals), len(calib), len(evals))
held = {r[2] for r in rows if r[0] == "eval-heldout"}
print("heldout", len(held), not held & {r[2] for r in rows if r[0] == "calib"})
EOF
for want in "shapes (26, 3, 224, 224) (8, 3, 224, 224) float32 float32" "range True" \
            "disjoint True 26 8" "heldout 4 True"; do
    grep -qxF "$want" "$TMP/p" && ok "make_photos: $want" || fail "make_photos: no '$want' in: $(cat "$TMP/p")"
done
finish
