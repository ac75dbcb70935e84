#!/bin/sh
# bench/run.sh - oqc's benchmark suite (`make bench`): FP32 latency against ONNX Runtime,
# then model load time and peak memory.  Benchmarks print numbers; they never fail on
# timing.  The script exits non-zero only when oqc cannot be built or fails to load or
# run a model (after printing everything else).
#
#   sh bench/run.sh                 everything (~3-6 minutes on a 2-core machine)
#   BENCH_MODELS="a.onnx b.onnx" sh bench/run.sh    other models for the latency table
#   BENCH_SKIP_ORT=1 / BENCH_SKIP_LOAD=1 / BENCH_SKIP_PROFILE=1   leave a part out
#   BENCH_PROFILE=all               per-node profile of every model, not only slow ones
#
# Everything it makes goes to $BUILD/bench (default build/bench): the latency program,
# onnxruntime-node (npm, only for the comparison; never a build dependency), the
# synthetic 100 MB model, raw logs and results.md.  See bench/README.md for what each
# number means.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
OUT=$BUILD/bench
CC=${CC:-cc}
PY=/usr/bin/python3
ORT_VERSION=${ORT_VERSION:-1.30.0}     # pinned so comparisons over time are like for like
THREADS=1,2
RUNS=20                                 # timed runs per round, at least
mkdir -p "$OUT"
RESULTS=$OUT/results.md
: >"$RESULTS"

STATUS=0                                # 1 when oqc failed on a model (not on timing)

note() { printf 'bench: %s\n' "$*"; }
# Prints a line to the terminal and to results.md.
out() { printf '%s\n' "$*"; printf '%s\n' "$*" >>"$RESULTS"; }

note "$(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
note "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (latencies are noisy when this is above ~0.5)"

# ---------------------------------------------------------------- oqc and the bench program
if [ ! -f "$BUILD/liboqc.a" ] || [ ! -x "$BUILD/oqc" ]; then
    note "building oqc"
    ${MAKE:-make} --no-print-directory "$BUILD/oqc" "$BUILD/liboqc.a" || exit 1
fi
# The Makefile's flags (CSTD, OPT, INCLUDES, -pthread); no -Werror: a warning from a
# header someone is editing should not stop the benchmarks.
if ! $CC -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -g -Wall -Wextra \
        -Icompiler -Ipasses -Iruntime -I"$BUILD/proto" -pthread \
        bench/fp32_latency.c "$BUILD/liboqc.a" -lprotobuf-c -lxml2 -lm -pthread \
        -o "$OUT/fp32_latency"; then
    note "cannot build bench/fp32_latency.c against $BUILD/liboqc.a"
    exit 1
fi

# ---------------------------------------------------------------- models
# squeezenet1_1 is committed; resnet18, mobilenet_v2 and googlenet come from
# `make models`, which needs torch.  Only the missing ones are generated (the same
# script `make models` runs, restricted with --models) so the committed squeezenet1_1
# files are never rewritten by a benchmark run.
TV="resnet18 mobilenet_v2 squeezenet1_1 googlenet"
if [ -z "${BENCH_MODELS:-}" ]; then
    missing=
    for m in $TV; do
        [ -f "models/tv/$m.onnx" ] || missing="$missing${missing:+,}$m"
    done
    if [ -n "$missing" ]; then
        if "$PY" -c 'import torch, torchvision' 2>/dev/null; then
            note "generating $missing (make models; a few minutes, only the first time)"
            "$PY" models/tv/make_torchvision.py --out models/tv --models "$missing" ||
                note "model generation failed; the missing models are skipped"
        else
            note "$PY cannot import torch: skipping $missing (run \`make models\` where torch is installed)"
        fi
    fi
    BENCH_MODELS=
    for m in $TV; do
        [ -f "models/tv/$m.onnx" ] && BENCH_MODELS="$BENCH_MODELS models/tv/$m.onnx"
    done
    BENCH_MODELS="$BENCH_MODELS models/fashion/fashion_cnn.onnx"
fi

# ---------------------------------------------------------------- ONNX Runtime
# onnxruntime-node ships its CPU binding (bin/napi-v6/linux/x64/onnxruntime_binding.node
# and libonnxruntime.so.1) inside the npm package; its postinstall script only fetches
# the optional CUDA provider, so --ignore-scripts loses nothing for CPU.
ORT_DIR=$(pwd)/$OUT/ort     # absolute: node resolves require() paths from the script
ORT_OK=0
if [ -n "${BENCH_SKIP_ORT:-}" ]; then
    note "BENCH_SKIP_ORT set: no ONNX Runtime comparison"
elif ! command -v node >/dev/null 2>&1; then
    note "node is not installed: no ONNX Runtime comparison"
else
    if [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
        if command -v npm >/dev/null 2>&1; then
            note "installing onnxruntime-node@$ORT_VERSION into $ORT_DIR (npm, --ignore-scripts)"
            mkdir -p "$ORT_DIR"
            [ -f "$ORT_DIR/package.json" ] || echo '{"private": true}' >"$ORT_DIR/package.json"
            if ! (cd "$ORT_DIR" && timeout 300 npm install --ignore-scripts --no-audit --no-fund \
                    "onnxruntime-node@$ORT_VERSION") >"$OUT/npm.log" 2>&1; then
                note "npm install failed (registry unreachable?); see $OUT/npm.log"
                tail -n 5 "$OUT/npm.log"
            fi
        else
            note "npm is not installed: no ONNX Runtime comparison"
        fi
    fi
    if [ -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
        if ver=$(ORT_NODE_MODULES=$ORT_DIR/node_modules node -e \
                'console.log(require(process.env.ORT_NODE_MODULES + "/onnxruntime-node").env.versions.node)' \
                2>"$OUT/ort-load.log"); then
            ORT_OK=1
            note "onnxruntime-node $ver (native binding loads)"
        else
            note "onnxruntime-node is installed but its native binding does not load; see $OUT/ort-load.log"
        fi
    fi
fi

# ---------------------------------------------------------------- FP32 latency
# oqc and ORT alternate in ROUNDS rounds (per round: oqc 1T+2T on the graph as loaded,
# oqc 1T+2T after the pass pipeline, ORT 1T+2T), each timing >= RUNS runs and >= 0.5 s.  A model's number is the median of its best round
# (lowest median): on a shared machine a burst of someone else's work spoils a round,
# and alternating gives both engines the same chances of a quiet one.  The min in
# parentheses is the fastest single run of all rounds.
ROUNDS=${BENCH_ROUNDS:-5}
# Prints the smallest value of KEY= over the RESULT lines of FILE for THREADS and
# PASSES (0: the graph as loaded, 1: after the pass pipeline; ORT lines count as 0).
field() { # FILE THREADS KEY [PASSES]
    awk -v t="threads=$2" -v k="$3=" -v ps="passes=${4:-0}" '$1 == "RESULT" {
        hit = 0; p = "passes=0"
        for (i = 2; i <= NF; i++) { if ($i == t) hit = 1; if ($i ~ /^passes=/) p = $i }
        if (p != ps) hit = 0
        if (hit) for (i = 2; i <= NF; i++) if (index($i, k) == 1) {
            v = substr($i, length(k) + 1) + 0; if (best == "" || v < best) best = v } }
        END { if (best == "") exit
              if (k !~ /_ms=$/) { print best; exit }
              printf (best >= 100 ? "%.1f\n" : best >= 1 ? "%.2f\n" : "%.3f\n"), best }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 <= 0) print "-"; else printf "%.2f", a / b }'; }
cell() { if [ -n "$1" ]; then echo "$1 ($2)"; else echo "-"; fi; }
rcell() { if [ "$1" != - ]; then echo "$1 ($2)"; else echo "-"; fi; }

out ""
out "## FP32 latency, batch 1: ms, median of the best of $ROUNDS round(s) of >= $RUNS runs (min in parentheses)"
out ""
out "| model | nodes | oqc 1T | oqc 2T | nodes +passes | oqc+passes 1T | oqc+passes 2T | ORT 1T | ORT 2T | oqc/ORT 1T | oqc+passes/ORT 1T |"
out "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
slow=
for m in $BENCH_MODELS; do
    name=$(basename "$m" .onnx)
    if [ ! -f "$m" ]; then
        note "$m not found; skipped"
        continue
    fi
    olog=$OUT/oqc_$name.log
    rlog=$OUT/ort_$name.log
    : >"$olog"
    : >"$rlog"
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        r=$((r + 1))
        if ! "$OUT/fp32_latency" "$m" --threads $THREADS --runs $RUNS --min-ms 500 >>"$olog" 2>&1; then
            note "oqc cannot run $m:"
            sed 's/^/  /' "$olog" | tail -n 5
            STATUS=1
            break
        fi
        if ! "$OUT/fp32_latency" "$m" --passes --threads $THREADS --runs $RUNS --min-ms 500 \
                >>"$olog" 2>&1; then
            note "oqc cannot run $m after the pass pipeline:"
            sed 's/^/  /' "$olog" | tail -n 5
            STATUS=1
            break
        fi
        if [ "$ORT_OK" = 1 ] && ! ORT_NODE_MODULES=$ORT_DIR/node_modules node bench/ort_latency.js \
                "$m" --threads $THREADS --runs $RUNS --min-ms 500 >>"$rlog" 2>&1; then
            note "ORT cannot run $m:"
            sed 's/^/  /' "$rlog" | tail -n 5
        fi
    done
    nodes=$(field "$olog" 1 nodes)
    o1=$(field "$olog" 1 median_ms); o1m=$(field "$olog" 1 min_ms)
    o2=$(field "$olog" 2 median_ms); o2m=$(field "$olog" 2 min_ms)
    r1=$(field "$rlog" 1 median_ms); r1m=$(field "$rlog" 1 min_ms)
    r2=$(field "$rlog" 2 median_ms); r2m=$(field "$rlog" 2 min_ms)
    pnodes=$(field "$olog" 1 nodes 1)
    p1=$(field "$olog" 1 median_ms 1); p1m=$(field "$olog" 1 min_ms 1)
    p2=$(field "$olog" 2 median_ms 1); p2m=$(field "$olog" 2 min_ms 1)
    rmed=$(ratio "$o1" "$r1"); rmin=$(ratio "$o1m" "$r1m")
    pmed=$(ratio "$p1" "$r1"); pmin=$(ratio "$p1m" "$r1m")
    out "| $name | ${nodes:--} | $(cell "$o1" "$o1m") | $(cell "$o2" "$o2m") | ${pnodes:--} | $(cell "$p1" "$p1m") | $(cell "$p2" "$p2m") | $(cell "$r1" "$r1m") | $(cell "$r2" "$r2m") | $(rcell "$rmed" "$rmin") | $(rcell "$pmed" "$pmin") |"
    # Profile where oqc (after the passes, as `oqc run` executes it) is beyond the
    # 1.5x target by either measure.
    if [ "${BENCH_PROFILE:-}" = all ] && [ -n "$p1" ]; then
        slow="$slow $m"
    elif awk -v a="$pmed" -v b="$pmin" 'BEGIN { exit !((a != "-" && a > 1.5) || (b != "-" && b > 1.5)) }'; then
        slow="$slow $m"
    fi
done
out ""
out "Ratios: median (min).  Target: oqc/ORT single-thread <= 1.5.  oqc: \`oqc_exec_run\` of the FP32"
out "executor on the graph as loaded, and after the pass pipeline (\`oqc_run_passes\`, what \`oqc run\` executes)."
out "ORT: onnxruntime-node ${ver:-not available}, intra-op threads = T, inter-op 1, sequential, graph optimisation 'all'."
out "Load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (above ~0.5 the numbers are inflated)."

# ---------------------------------------------------------------- per-node profile
# For every model over the target, time per node (single thread) through the executor's
# tensor hook, so the kernel owner sees which ops and layers dominate.
if [ -n "$slow" ] && [ -z "${BENCH_SKIP_PROFILE:-}" ]; then
    out ""
    out "## Where oqc's time goes (after the pass pipeline, single thread, per-node median over $RUNS runs)"
    for m in $slow; do
        out ""
        out '```'
        "$OUT/fp32_latency" "$m" --passes --threads 1 --runs $RUNS --min-ms 0 --per-node 12 2>&1 |
            grep -v '^RESULT' | tee -a "$RESULTS"
        out '```'
    done
fi

# ---------------------------------------------------------------- model load
# `oqc dump MODEL -o /dev/null` loads the model (protobuf decode, constants, shape
# inference) and writes the text dump (a min/max summary per constant) to nowhere.
# Best wall time of 3 runs (the first also warms the page cache), largest peak RSS.
if [ -n "${BENCH_SKIP_LOAD:-}" ]; then
    exit $STATUS
fi
out ""
out "## Model load: \`oqc dump MODEL -o /dev/null\` (best wall of 3 runs, peak RSS)"
out ""
if [ ! -x /usr/bin/time ]; then
    out "/usr/bin/time not installed (Debian package time): load benchmark skipped"
    exit $STATUS
fi
BIG=$OUT/big_matmul_100mb.onnx
if [ ! -f "$BIG" ]; then
    if "$PY" -c 'import onnx, numpy' 2>/dev/null; then
        note "generating $BIG (6 MatMul layers, 2048x2048 float32 weights)"
        "$PY" bench/make_big_model.py "$BIG" || rm -f "$BIG"
    else
        note "$PY cannot import onnx and numpy: no synthetic 100 MB model"
    fi
fi
largest=$(ls -S models/*/*.onnx 2>/dev/null | head -n 1)
out "| model | file MB | wall s | MB/s | peak RSS MB | RSS / file size |"
out "|---|---:|---:|---:|---:|---:|"
for m in $largest $BIG; do
    [ -f "$m" ] || continue
    size=$(wc -c <"$m")
    best=; rss=0; ok=1
    for i in 1 2 3; do
        t0=$(date +%s%N)
        if ! /usr/bin/time -v "$BUILD/oqc" dump "$m" -o /dev/null >"$OUT/load.log" 2>&1; then
            note "oqc dump $m failed:"; sed 's/^/  /' "$OUT/load.log" | head -n 5
            ok=0; STATUS=1; break
        fi
        t1=$(date +%s%N)
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
        kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/load.log")
        best=$(awk -v a="$best" -v b="$w" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
        [ "${kb:-0}" -gt "$rss" ] && rss=$kb
    done
    [ "$ok" = 1 ] || continue
    awk -v m="$(basename "$m")" -v sz="$size" -v w="$best" -v r="$rss" 'BEGIN {
        mb = sz / 1048576; rmb = r / 1024
        tput = "-"; if (w > 0) tput = sprintf("%.0f", mb / w)
        printf "| %s | %.1f | %.3f | %s | %.1f | %.2f |\n", m, mb, w, tput, rmb, rmb / mb }' | tee -a "$RESULTS"
done
out ""
out "(wall: date around /usr/bin/time; peak RSS: its \"Maximum resident set size\", in MiB)"

# ---------------------------------------------------------------- calibration
# oqc calibrate (entropy, 2048 bins, two streaming passes, 2 threads) on the Fashion
# model with its 500 calibration images and on resnet18 with 500 image-like inputs
# (smooth random images, ImageNet-normalised; made here with numpy). Target: under 60 s
# and under 1 GB on this machine.
out ""
out "## Calibration"
out ""
out "| model | samples | wall s | samples/s | peak RSS MB |"
out "|---|---:|---:|---:|---:|"
R18CAL=$OUT/calib_resnet18_500.npy
if [ -f models/tv/resnet18.onnx ] && [ ! -f "$R18CAL" ]; then
    if "$PY" -c 'import numpy' 2>/dev/null; then
        "$PY" - "$R18CAL" <<'PYEOF'
import sys, numpy as np
rng = np.random.default_rng(0)
n = 500
low = rng.standard_normal((n, 3, 7, 7)).astype(np.float32)
img = np.repeat(np.repeat(low, 32, axis=2), 32, axis=3)           # smooth blobs
img += 0.3 * rng.standard_normal(img.shape).astype(np.float32)    # texture
img = 1 / (1 + np.exp(-img))                                      # into [0, 1]
mean = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
std = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]
np.save(sys.argv[1], ((img - mean) / std).astype(np.float32))
PYEOF
    else
        note "$PY cannot import numpy: no resnet18 calibration set"
    fi
fi
for pair in "models/fashion/fashion_cnn.onnx:models/fashion/calib_500.npy" \
            "models/tv/resnet18.onnx:$R18CAL"; do
    m=${pair%%:*}; data=${pair#*:}
    [ -f "$m" ] && [ -f "$data" ] || continue
    t0=$(date +%s%N)
    if ! /usr/bin/time -v "$BUILD/oqc" calibrate "$m" --data "$data" --threads 2 -q \
            -o "$OUT/$(basename "$m" .onnx).trt" >"$OUT/calib.log" 2>&1; then
        note "oqc calibrate $m failed:"; sed 's/^/  /' "$OUT/calib.log" | head -n 5
        STATUS=1; continue
    fi
    t1=$(date +%s%N)
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/calib.log")
    awk -v m="$(basename "$m")" -v t0="$t0" -v t1="$t1" -v r="$kb" 'BEGIN {
        w = (t1 - t0) / 1e9
        printf "| %s | 500 | %.1f | %.1f | %.0f |\n", m, w, 500 / w, r / 1024 }' | tee -a "$RESULTS"
done
note "results in $RESULTS, raw logs in $OUT/"
exit $STATUS
