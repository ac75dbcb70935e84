#!/bin/sh
# bench/run.sh - oqc's benchmark suite (`make bench`): FP32 latency against ONNX Runtime;
# INT8 latency (oqc's emitted INT8 and FP32 C, ONNX Runtime FP32 and ONNX Runtime INT8 on
# `oqc export-qdq`) with the kernels ONNX Runtime fuses the export into; then model load
# time and peak memory.  Benchmarks print numbers; they never fail on timing.  The script
# exits non-zero only when oqc cannot be built or fails to load, run, calibrate, export
# or compile a model (after printing everything else).
#
#   sh bench/run.sh                 everything (~10 minutes on a 2-core machine; the first
#                                   run also builds the emitted C, a few minutes more)
#   BENCH_MODELS="a.onnx b.onnx" sh bench/run.sh    other models for the latency tables
#   BENCH_SKIP_ORT=1 / BENCH_SKIP_LOAD=1 / BENCH_SKIP_PROFILE=1   leave a part out
#   BENCH_SKIP_FP32=1 / BENCH_SKIP_INT8=1   no FP32 table / no INT8 tables
#   BENCH_PROFILE=all               per-node profile of every model, not only slow ones
#   BENCH_INT8_ROUNDS=N             rounds of the INT8 table (default 3)
#   BENCH_SKIP_LAYERS=1             no per-layer INT8 / FP32 tables
#
# Everything it makes goes to $BUILD/bench (default build/bench): the latency program,
# onnxruntime-node (npm, only for the comparison; never a build dependency), the
# synthetic 100 MB model, int8/ (tables, exports, emitted C, logs), raw logs,
# results.md and latency.svg.  See bench/README.md for what each number means.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
OUT=$BUILD/bench
CC=${CC:-cc}
# oqc's header folders (compiler/*/, passes/, runtime/*/) as -I flags.
OQC_INC=$(for d in compiler/*/ passes/ runtime/*/; do printf -- '-I%s ' "${d%/}"; done)
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
# The machine, at the head of results.md: every figure depends on it.
CPU_MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
[ -n "$CPU_MODEL" ] || CPU_MODEL=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
CPU_FLAGS=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
out "# oqc benchmarks"
out ""
out "CPU: ${CPU_MODEL:-unknown} ($(uname -m), $(nproc) CPUs online)."
out "SIMD: $(printf '%s\n' $CPU_FLAGS | grep -E '^(avx2|fma|avx_vnni|avx512(f|bw|vl|_vnni|vbmi|_bf16|_fp16)|amx_(tile|int8|bf16)|asimddp)$' | tr '\n' ' ')"
out ""
out "Flags (/proc/cpuinfo): $CPU_FLAGS"
out ""
out "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."

# ---------------------------------------------------------------- oqc and the bench program
if [ ! -f "$BUILD/liboqc.a" ] || [ ! -x "$BUILD/oqc" ]; then
    note "building oqc"
    ${MAKE:-make} --no-print-directory "$BUILD/oqc" "$BUILD/liboqc.a" || exit 1
fi
# The Makefile's flags (CSTD, OPT, INCLUDES, -pthread); no -Werror: a warning from a
# header someone is editing should not stop the benchmarks.
if ! $CC -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -g -Wall -Wextra \
        $OQC_INC -I"$BUILD/proto" -pthread \
        bench/fp32_latency.c "$BUILD/liboqc.a" -lprotobuf-c -lxml2 -ljpeg -lpng -lm -pthread \
        -o "$OUT/fp32_latency"; then
    note "cannot build bench/fp32_latency.c against $BUILD/liboqc.a"
    exit 1
fi

# ---------------------------------------------------------------- models
# squeezenet1_1 is committed; resnet18, mobilenet_v2 and googlenet come from
# `make models`, which needs torch.  Only the missing ones are generated (the same
# script `make models` runs, restricted with --models) so the committed squeezenet1_1
# files are never rewritten by a benchmark run.
# mobilenet_v3_large and efficientnet_b0 (models/tv/make_modern.py, also `make models`):
# the modern networks whose speed issue #26 measures, generated the same way.
TV="resnet18 mobilenet_v2 squeezenet1_1 googlenet"
TV_MODERN="mobilenet_v3_large efficientnet_b0"
if [ -z "${BENCH_MODELS:-}" ]; then
    missing=
    for m in $TV; do
        [ -f "models/tv/$m.onnx" ] || missing="$missing${missing:+,}$m"
    done
    missing_modern=
    for m in $TV_MODERN; do
        [ -f "models/tv/$m.onnx" ] || missing_modern="$missing_modern${missing_modern:+,}$m"
    done
    if [ -n "$missing$missing_modern" ]; then
        if "$PY" -c 'import torch, torchvision' 2>/dev/null; then
            note "generating $missing${missing:+${missing_modern:+,}}$missing_modern (make models; a few minutes, only the first time)"
            [ -z "$missing" ] || "$PY" models/tv/make_torchvision.py --out models/tv --models "$missing" ||
                note "model generation failed; the missing models are skipped"
            [ -z "$missing_modern" ] ||
                "$PY" models/tv/make_modern.py --out models/tv --models "$missing_modern" ||
                note "model generation failed; the missing models are skipped"
        else
            note "$PY cannot import torch: skipping $missing${missing:+${missing_modern:+,}}$missing_modern (run \`make models\` where torch is installed)"
        fi
    fi
    BENCH_MODELS=
    for m in $TV $TV_MODERN; do
        [ -f "models/tv/$m.onnx" ] && BENCH_MODELS="$BENCH_MODELS models/tv/$m.onnx"
    done
    BENCH_MODELS="$BENCH_MODELS models/fashion/fashion_cnn.onnx"
else
    # Models the user named must exist: a typo (or a models/tv network not yet made)
    # would otherwise give empty tables and a zero exit.
    for m in $BENCH_MODELS; do
        if [ ! -f "$m" ]; then
            note "BENCH_MODELS names $m, which does not exist (models/tv/*: \`make models\` makes them)"
            exit 1
        fi
    done
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
# the smaller of two numbers, either of which may be empty
lesser() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 <= b + 0) print a; else print b }'; }
# ort_best_log T: the latency log of model $name's faster ORT INT8 run at T threads, the
# exact export ($ORT_REF) or the 8-bit-residual one
ort_best_log() {
    a=$I8/${name}_lat_$ORT_REF.log b=$I8/${name}_lat_ort_qdq_t.log
    mb=$(field "$b" "$1" median_ms)
    if [ -n "$mb" ] && [ "$(lesser "$(field "$a" "$1" median_ms)" "$mb")" = "$mb" ]; then
        echo "$b"
    else
        echo "$a"
    fi
}
rcell() { if [ "$1" != - ]; then echo "$1 ($2)"; else echo "-"; fi; }

slow=
if [ -n "${BENCH_SKIP_FP32:-}" ]; then
    note "BENCH_SKIP_FP32 set: no FP32 latency table"
else
    out ""
    out "## FP32 latency, batch 1: ms, median of the best of $ROUNDS round(s) of >= $RUNS runs (min in parentheses)"
    out ""
    out "| model | nodes | oqc 1T | oqc 2T | nodes +passes | oqc+passes 1T | oqc+passes 2T | ORT 1T | ORT 2T | oqc/ORT 1T | oqc+passes/ORT 1T |"
    out "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
fi

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

# ---------------------------------------------------------------- INT8 latency
# Per model: thresholds (oqc calibrate: the Fashion model on its 500 calibration images,
# the torchvision models on 64 image-like inputs cut from photographs,
# models/tv/make_photo_patches.py), then four engines, single thread, batch 1:
#   oqc INT8 C   `oqc compile --table` built with $CC -O2 -march=native -ffp-contract=off
#                and timed by bench/emitted_latency.c (whatever runtime/int8/oqci* kernels
#                $BUILD/oqc embeds);
#   oqc FP32 C   `oqc compile --precision fp32`, built and timed the same way;
#   ORT FP32     onnxruntime-node on the model (bench/ort_latency.js --threads 1);
#   ORT INT8     onnxruntime-node on `oqc export-qdq` of the same table, twice: int8
#                weights (the default export) and --weight-type uint8 (the same values
#                + 128: ORT's x86 u8u8 kernels are exact where its u8s8 ones, without
#                AVX-VNNI, sum pairs of products in saturating int16);
#   7-bit        the same table with --weight-bits 7 (docs/int8.md): oqc's INT8 C and ORT
#                on that export with int8 weights, both exact with vpmaddubsw;
#   ORT INT8, 8-bit residuals: the export with --act-scales tensor (and the weight type
#                of the exact export): every tensor 8-bit at one scale, which ONNX Runtime
#                fuses entirely, where the default export's int32 residual sums and
#                channel scales leave it float Convs and Adds (resnet18: 27 against 10 ms
#                on a Zen 4).  The ratios against ORT INT8 take the faster of the two.
# bench/ort_check_fused.js shows which kernels ORT runs for each export (optimized model
# saved and counted) and compares its outputs with the emitted INT8 C's (oqc's bits) on
# a few inputs.  Engines alternate in INT8_ROUNDS rounds, best round's median reported.
if [ -n "${BENCH_SKIP_INT8:-}" ]; then
    note "BENCH_SKIP_INT8 set: no INT8 latency table"
else
I8=$OUT/int8
mkdir -p "$I8"
INT8_ROUNDS=${BENCH_INT8_ROUNDS:-3}
EMIT_CFLAGS="-std=c99 -O2 -march=native -ffp-contract=off"
# outputs of oqc compile --threads 2 (oqcf_threads.c: C11 and pthreads)
EMIT_CFLAGS_T="-std=c11 -O2 -march=native -ffp-contract=off -pthread"
PHOTO_CAL=$I8/photo_calib64.npy
PHOTO_EVAL=$I8/photo_eval16.npy
if [ ! -f "$PHOTO_CAL" ] || [ ! -f "$PHOTO_EVAL" ]; then
    if "$PY" -c 'import numpy, PIL' 2>/dev/null &&
            "$PY" models/tv/make_photo_patches.py "$PHOTO_CAL" 64 1 &&
            "$PY" models/tv/make_photo_patches.py "$PHOTO_EVAL" 16 2; then
        :
    else
        rm -f "$PHOTO_CAL" "$PHOTO_EVAL"
        note "$PY cannot make photo patches (numpy, PIL and Debian's sample photos): INT8 only for the Fashion model"
    fi
fi
TSV=$I8/latency.tsv
: >"$TSV"
# kv FILE PREFIX KEY: the value of KEY= on the line of FILE starting with PREFIX
kv() { awk -v p="$2" -v k="$3=" '$1 == p { for (i = 2; i <= NF; i++) if (index($i, k) == 1) v = substr($i, length(k) + 1) } END { print v }' "$1"; }
# sumkv FILE PREFIX REGEX: the sum of the values of the keys matching REGEX on that line
sumkv() { awk -v p="$2" -v re="$3" '$1 == p { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] ~ re) s += a[2] } } END { print s + 0 }' "$1"; }
i8rows=
throws=
fuserows=
# ORT's exact 8-bit INT8 figure: int8 weights where the CPU has VNNI (vpdpbusd, exact),
# uint8 weights on AVX2 without it (its int8-weight vpmaddubsw sums saturate)
if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo 2>/dev/null; then
    ORT_REF=ort_qdq; ORT_REF_NAME="ORT INT8 (int8 w)"
else
    ORT_REF=ort_qdq_u8w; ORT_REF_NAME="ORT INT8 (uint8 w)"
fi
for m in $BENCH_MODELS; do
    name=$(basename "$m" .onnx)
    [ -f "$m" ] || continue
    case "$m" in
        models/fashion/*) cal=models/fashion/calib_500.npy; ev=models/fashion/test_1000.npy; lim=200 ;;
        *) cal=$PHOTO_CAL; ev=$PHOTO_EVAL; lim=16 ;;
    esac
    if [ ! -f "$cal" ]; then
        note "no calibration data for $m: INT8 skipped"
        continue
    fi
    cname=$(echo "$name" | sed 's/[^A-Za-z0-9_]/_/g; s/^[^A-Za-z]/m&/')
    table=$I8/$name.trt
    log=$I8/$name.log
    : >"$log"
    if [ ! -f "$table" ] || [ "$BUILD/oqc" -nt "$table" ] || [ "$m" -nt "$table" ]; then
        note "calibrating $name on $cal"
        "$BUILD/oqc" calibrate "$m" --data "$cal" -o "$table" --threads 2 -q >>"$log" 2>&1 || {
            note "oqc calibrate $m failed:"; tail -n 5 "$log" | sed 's/^/  /'; rm -f "$table"; STATUS=1; continue; }
    fi
    ok=1
    "$BUILD/oqc" export-qdq "$m" --table "$table" -o "$I8/${name}_qdq.onnx" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" export-qdq "$m" --table "$table" --weight-type uint8 -o "$I8/${name}_qdq_u8w.onnx" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" export-qdq "$m" --table "$table" --weight-bits 7 -o "$I8/${name}_qdq_w7.onnx" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" export-qdq "$m" --table "$table" --act-scales tensor $([ "$ORT_REF" = ort_qdq_u8w ] && echo --weight-type uint8) \
        -o "$I8/${name}_qdq_t.onnx" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" compile "$m" --table "$table" --name "$cname" -o "$I8/${name}_c_int8" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" compile "$m" --table "$table" --weight-bits 7 --name "$cname" -o "$I8/${name}_c_int8w7" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" compile "$m" --precision fp32 --name "$cname" -o "$I8/${name}_c_fp32" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" compile "$m" --table "$table" --threads 2 --name "$cname" -o "$I8/${name}_c_int8t2" -q >>"$log" 2>&1 &&
    "$BUILD/oqc" compile "$m" --precision fp32 --threads 2 --name "$cname" -o "$I8/${name}_c_fp32t2" -q >>"$log" 2>&1 || ok=0
    if [ "$ok" = 0 ]; then
        note "oqc export-qdq/compile $m failed:"; tail -n 5 "$log" | sed 's/^/  /'; STATUS=1; continue
    fi
    # Build the emitted code unless these very sources were built already (the emitted
    # files are rewritten on every compile; resnet18's FP32 weights take ~1 min of gcc).
    for p in int8 int8w7 fp32 int8t2 fp32t2; do
        dir=$I8/${name}_c_$p
        fl=$EMIT_CFLAGS
        case $p in *t2) fl=$EMIT_CFLAGS_T ;; esac
        stamp=$( { echo "$CC $fl"; cat bench/emitted_latency.c "$dir"/*.c "$dir"/*.h; } | cksum)
        if [ ! -x "$I8/lat_${name}_$p" ] || [ "$(cat "$I8/lat_${name}_$p.stamp" 2>/dev/null)" != "$stamp" ]; then
            note "building $dir ($CC $fl)"
            if ! $CC $fl -I "$dir" -DOQC_MODEL_HEADER="\"$cname.h\"" -DOQC_MODEL_PREFIX="$cname" \
                    bench/emitted_latency.c "$dir"/*.c -lm -o "$I8/lat_${name}_$p" >>"$log" 2>&1; then
                note "cannot build $dir:"; tail -n 5 "$log" | sed 's/^/  /'; STATUS=1; ok=0; break
            fi
            echo "$stamp" >"$I8/lat_${name}_$p.stamp"
        fi
    done
    [ "$ok" = 1 ] || continue
    # oqc's INT8 outputs on the evaluation inputs (the emitted code: oqc eval's bits), then
    # what ORT runs for each export and how close its outputs are.
    for p in int8 int8w7 int8t2; do
        "$I8/lat_${name}_$p" --data "$ev" --save "$I8/${name}_${p}_ref.npy" --limit $lim \
            --runs 1 --warmup 0 --min-ms 0 >>"$log" 2>&1 || { note "INT8 C failed on $ev"; STATUS=1; ok=0; }
    done
    [ "$ok" = 1 ] || continue
    # (two threads give one thread's bits: docs/compile.md; a difference is a bug)
    if ! cmp -s "$I8/${name}_int8_ref.npy" "$I8/${name}_int8t2_ref.npy"; then
        note "$name: the INT8 C on 2 threads does not give the bits of 1 thread"; STATUS=1
    fi
    if [ "$ORT_OK" = 1 ]; then
        for v in qdq qdq_u8w qdq_w7; do
            ref=$I8/${name}_int8_ref.npy; [ "$v" = qdq_w7 ] && ref=$I8/${name}_int8w7_ref.npy
            ORT_NODE_MODULES=$ORT_DIR/node_modules node bench/ort_check_fused.js "$I8/${name}_$v.onnx" \
                --save "$I8/${name}_${v}_ort_optimized.onnx" --data "$ev" --ref "$ref" \
                --limit $lim 2>"$I8/${name}_${v}_check.err" | sed "s/^\([A-Z]*\) model=[^ ]*/\1/" >"$I8/${name}_$v.check" ||
                note "ort_check_fused.js failed on ${name}_$v.onnx: $(tail -n 1 "$I8/${name}_${v}_check.err")"
        done
    fi
    for e in c_int8 c_int8w7 c_fp32 c_int8t2 c_fp32t2 ort_fp32 ort_qdq ort_qdq_u8w ort_qdq_w7 ort_qdq_t; do
        : >"$I8/${name}_lat_$e.log"
    done
    r=0
    while [ "$r" -lt "$INT8_ROUNDS" ]; do
        r=$((r + 1))
        for p in int8 int8w7 fp32 int8t2 fp32t2; do
            "$I8/lat_${name}_$p" --data "$ev" --runs $RUNS --min-ms 300 >>"$I8/${name}_lat_c_$p.log" 2>&1 ||
                note "lat_${name}_$p failed"
        done
        if [ "$ORT_OK" = 1 ]; then
            for v in fp32 qdq qdq_u8w qdq_w7 qdq_t; do
                mm=$m; [ "$v" = fp32 ] || mm=$I8/${name}_$v.onnx
                # 1 and 2 intra-op threads for FP32 and the exact INT8 exports (the threads table)
                th=1; [ "$v" = fp32 ] || [ "$v" = qdq_t ] || [ "ort_$v" = "$ORT_REF" ] && th=1,2
                ORT_NODE_MODULES=$ORT_DIR/node_modules node bench/ort_latency.js "$mm" --threads $th \
                    --runs $RUNS --min-ms 300 >>"$I8/${name}_lat_ort_$v.log" 2>&1 ||
                    note "ORT cannot run $mm: $(tail -n 1 "$I8/${name}_lat_ort_$v.log")"
            done
        fi
    done
    row="| $name"
    for e in c_int8 c_fp32 ort_fp32 ort_qdq ort_qdq_u8w ort_qdq_t c_int8w7 ort_qdq_w7; do
        md=$(field "$I8/${name}_lat_$e.log" 1 median_ms); mn=$(field "$I8/${name}_lat_$e.log" 1 min_ms)
        row="$row | $(cell "$md" "$mn")"
        eval "md_$e=\$md"
        [ -n "$md" ] && printf '%s\t%s\t%s\t%s\n' "$name" "$e" "$md" "$mn" >>"$TSV"
    done
    eval "md_ref=\$md_$ORT_REF"
    md_ref=$(lesser "$md_ref" "$md_ort_qdq_t")
    row="$row | $(ratio "$md_c_int8" "$md_c_fp32") | $(ratio "$md_ref" "$md_ort_fp32") | $(ratio "$md_c_int8" "$md_ref") | $(ratio "$md_ort_fp32" "$md_c_int8") | $(ratio "$md_c_int8w7" "$md_ort_qdq_w7") |"
    i8rows="$i8rows$row
"
    # 1 and 2 threads side by side: oqc's emitted C against ORT with as many intra-op threads
    t1=$md_c_int8
    t2=$(field "$I8/${name}_lat_c_int8t2.log" 2 median_ms); t2m=$(field "$I8/${name}_lat_c_int8t2.log" 2 min_ms)
    f2=$(field "$I8/${name}_lat_c_fp32t2.log" 2 median_ms); f2m=$(field "$I8/${name}_lat_c_fp32t2.log" 2 min_ms)
    # ORT: the faster of the exact export and the 8-bit-residual one, per thread count
    l1=$(ort_best_log 1); r1=$(field "$l1" 1 median_ms); r1m=$(field "$l1" 1 min_ms)
    l2=$(ort_best_log 2); r2=$(field "$l2" 2 median_ms); r2m=$(field "$l2" 2 min_ms)
    g1=$(field "$I8/${name}_lat_ort_fp32.log" 1 median_ms)
    g2=$(field "$I8/${name}_lat_ort_fp32.log" 2 median_ms); g2m=$(field "$I8/${name}_lat_ort_fp32.log" 2 min_ms)
    throws="$throws| $name | $(cell "$t1" "$(field "$I8/${name}_lat_c_int8.log" 1 min_ms)") | $(cell "$t2" "$t2m") | $(ratio "$t1" "$t2") | $(cell "$r1" "$r1m") | $(cell "$r2" "$r2m") | $(ratio "$r1" "$r2") | $(ratio "$t1" "$r1") | $(ratio "$t2" "$r2") | $(cell "$md_c_fp32" "$(field "$I8/${name}_lat_c_fp32.log" 1 min_ms)") | $(cell "$f2" "$f2m") | $(cell "$g1" "$(field "$I8/${name}_lat_ort_fp32.log" 1 min_ms)") | $(cell "$g2" "$g2m") |
"
    if [ "$ORT_OK" = 1 ] && [ -s "$I8/${name}_qdq.check" ]; then
        c=$I8/${name}_qdq.check; u=$I8/${name}_qdq_u8w.check; w7=$I8/${name}_qdq_w7.check
        conv=$(sumkv "$c" OPS '(^|:)QLinearConv$'); gemm=$(sumkv "$c" OPS '(^|:)(QGemm|QLinearMatMul)$')
        add=$(sumkv "$c" OPS '(^|:)QLinearAdd$'); cat_=$(sumkv "$c" OPS '(^|:)QLinearConcat$')
        pool=$(sumkv "$c" OPS '(^|:)(QLinearGlobalAveragePool|QLinearAveragePool|NhwcMaxPool)$')
        fl=$(kv "$c" FUSED float_compute); q=$(kv "$c" FUSED q); dq=$(kv "$c" FUSED dq)
        fu=$(kv "$u" FUSED int8_compute); fi8=$(kv "$c" FUSED int8_compute)
        fuserows="$fuserows| $name | $conv | $gemm | $add | $cat_ | $pool | $fl | $q / $dq | $fi8 / $fu | $(kv "$c" AGREE samples) | $(kv "$c" AGREE argmax_agree) / $(kv "$c" AGREE rel_max_err) | $(kv "$u" AGREE argmax_agree) / $(kv "$u" AGREE rel_max_err) | $(kv "$w7" AGREE argmax_agree) / $(kv "$w7" AGREE rel_max_err) |
"
    fi
done
out ""
out "## INT8 vs FP32, batch 1, one thread: ms, median of the best of $INT8_ROUNDS round(s) of >= $RUNS runs (min in parentheses)"
out ""
out "| model | oqc INT8 C | oqc FP32 C | ORT FP32 | ORT INT8 (QDQ, int8 weights) | ORT INT8 (QDQ, uint8 weights) | ORT INT8 (QDQ, 8-bit residuals) | oqc INT8 C, 7-bit weights | ORT INT8 (QDQ, 7-bit int8 weights) | INT8 C / FP32 C | ORT INT8 (best) / ORT FP32 | oqc INT8 C / ORT INT8 (best) | ORT FP32 / oqc INT8 C | oqc 7-bit / ORT 7-bit |"
out "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s' "$i8rows" | tee -a "$RESULTS"
out ""
out "oqc C: the code \`oqc compile\` emits ($BUILD/oqc, runtime as embedded in it), built with"
out "\`$CC $EMIT_CFLAGS\`, timed by bench/emitted_latency.c (one thread, caller arena)."
out "ORT: onnxruntime-node ${ver:-not available}, 1 intra-op and 1 inter-op thread, graph optimisation 'all';"
out "INT8 = \`oqc export-qdq\` of the same table (docs/export-qdq.md).  7-bit: \`--weight-bits 7\` for both"
out "(docs/int8.md): on AVX2 without VNNI both engines then run vpmaddubsw, exactly; 8-bit int8 weights"
out "make ORT's vpmaddubsw saturate there, so its exact 8-bit figure is the uint8-weight one; with VNNI"
out "(this CPU: $( [ "$ORT_REF" = ort_qdq ] && echo yes || echo no)) int8 weights are exact and the ratios use them.  8-bit residuals:"
out "the export with \`--act-scales tensor\` (the exact weight type), which ONNX Runtime fuses entirely (the default"
out "export's int32 residual sums and channel scales leave it float ops, table below); ORT INT8 (best) = the faster."
out "Load average now: $(cut -d' ' -f1-3 /proc/loadavg)."
out ""
out "## 1 and 2 threads, batch 1: ms, median of the best of $INT8_ROUNDS round(s) of >= $RUNS runs (min in parentheses)"
out ""
out "| model | oqc INT8 C 1T | oqc INT8 C 2T | oqc 1T/2T | ORT INT8 (best) 1T | ORT INT8 (best) 2T | ORT 1T/2T | oqc/ORT INT8 1T | oqc/ORT INT8 2T | oqc FP32 C 1T | oqc FP32 C 2T | ORT FP32 1T | ORT FP32 2T |"
out "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s' "$throws" | tee -a "$RESULTS"
out ""
out "oqc 2T: \`oqc compile --threads 2\` (the same table), built with \`$CC $EMIT_CFLAGS_T\`, its layers"
out "on the emitted code's default pool of 2 threads (docs/compile.md; outputs checked bit-identical"
out "with 1 thread's on the evaluation inputs).  ORT: intra-op threads = T, inter-op 1.  1T/2T: the"
out "speed-up of the second thread.  On a loaded machine the 2T figures mean little."
if [ -n "$fuserows" ]; then
    out ""
    out "## ONNX Runtime on oqc's QDQ export: the kernels it runs and its outputs against oqc's INT8"
    out ""
    out "| model | QLinearConv | QGemm / QLinearMatMul | QLinearAdd | QLinearConcat | int8 pooling | float Conv/Gemm/MatMul/Add | Q / DQ left | int8 ops (int8 w / uint8 w) | inputs | int8 w: argmax agree / rel max err | uint8 w: argmax agree / rel max err | 7-bit w (vs oqc 7-bit): argmax agree / rel max err |"
    out "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s' "$fuserows" | tee -a "$RESULTS"
    out ""
    out "Counted in the graph ORT saves after its optimisations (bench/ort_check_fused.js; int8 pooling:"
    out "QLinear(Global)AveragePool and NhwcMaxPool on uint8).  Agreement: ORT's first output against the"
    out "emitted INT8 C's (= \`oqc eval --save-int8\`) on the Fashion test images / photo patches;"
    out "rel max err = max |ORT - oqc| / max |oqc|.  Not bit-exact by design (ONNX rounds half to even,"
    out "requantizes in its own way); int8 weights on an AVX2 machine without VNNI also saturate."
fi
if [ -s "$TSV" ]; then
    if "$PY" bench/plot_latency.py "$TSV" "$OUT/latency.svg" 2>"$I8/plot.err"; then
        out ""
        out "Plot: $OUT/latency.svg (log scale)."
    else
        note "plot failed: $(tail -n 1 "$I8/plot.err")"
    fi
fi
# ---------------------------------------------------------------- INT8 per layer
# The measured single-core peaks (bench/int8_conv_bench.c --peak: vpdpbusd where the CPU
# has VNNI, else the exact AVX2 vpmaddwd + vpaddd ceiling), then per model the emitted
# INT8 and FP32 C timed layer by layer through the emitted code's OQC_LAYER_BEGIN/END
# hooks (bench/layer_hooks.h, emitted_latency.c --layers; docs/compile.md) and tabled by
# bench/layer_table.py: GMAC/s per Conv/Gemm layer against the peak, INT8 next to FP32,
# depthwise convs summed.  Objects are cached by content in $I8/obj.
if [ -z "${BENCH_SKIP_LAYERS:-}" ]; then
    peak=""; peak_name=""
    if $CC -std=c11 -O2 -D_POSIX_C_SOURCE=200809L $OQC_INC bench/int8_conv_bench.c "$BUILD/liboqc.a" \
            -lprotobuf-c -lxml2 -ljpeg -lpng -lm -pthread -o "$OUT/int8_conv_bench" 2>"$I8/conv_bench.err"; then
        pl=$("$OUT/int8_conv_bench" --peak)
        for k in vpdpbusd_zmm vpdpbusd_ymm madd_add; do
            v=$(echo "$pl" | tr ' ' '\n' | sed -n "s/^$k=//p")
            if [ -n "$v" ]; then peak=$v; peak_name=$k; break; fi
        done
    else
        note "cannot build bench/int8_conv_bench.c: $(tail -n 1 "$I8/conv_bench.err")"
    fi
    if [ -n "$peak" ]; then
        out ""
        out "## INT8 per layer: GMAC/s against the measured peak, and INT8 next to FP32"
        out ""
        out "Peaks of one core (bench/int8_conv_bench.c --peak, GMAC/s): $(echo "$pl" | sed 's/^PEAK //')."
        out "Reference: $peak_name = $peak (madd_add: 12 independent vpmaddwd + vpaddd, the ceiling of exact"
        out "INT8 on AVX2 without VNNI; vpdpbusd_*: the DP4A instruction, where the CPU has it); for 7-bit"
        out "weights on AVX2 without VNNI, maddubs_inexact (vpmaddubsw + vpmaddwd + vpaddd, exact for them)."
        out "amx_tdpbusd, where the CPU and kernel have AMX-INT8: the tile unit's peak (four 16x16 tiles),"
        out "which the AMX family runs convs with >= 16 channels per group on; the % column stays against"
        out "$peak_name, the peak the issue defines."
        out "Per layer: median over >= $RUNS runs of the emitted C (\`$CC $EMIT_CFLAGS\`), timed through"
        out "its OQC_LAYER_BEGIN/END hooks (docs/compile.md); shape = out x in/group x kh x kw /stride g<group> -> out HxW."
        mkdir -p "$I8/obj"
        for m in $BENCH_MODELS; do
            name=$(basename "$m" .onnx)
            cname=$(echo "$name" | sed 's/[^A-Za-z0-9_]/_/g; s/^[^A-Za-z]/m&/')
            case "$m" in models/fashion/*) ev=models/fashion/test_1000.npy ;; *) ev=$PHOTO_EVAL ;; esac
            [ -d "$I8/${name}_c_int8" ] && [ -d "$I8/${name}_c_fp32" ] && [ -f "$ev" ] || continue
            okp=1
            for p in int8 int8w7 fp32; do
                dir=$I8/${name}_c_$p objs=""
                for c in "$dir"/*.c bench/emitted_latency.c; do
                    # (the headers too: emitted_latency.c sizes its arena from NAME.h)
                    key=$( { echo "$CC $EMIT_CFLAGS"; cat "$c" "$dir"/*.h; } | cksum | tr ' ' _)
                    o=$I8/obj/$cname-$p-$key.o
                    if [ ! -f "$o" ] && ! $CC $EMIT_CFLAGS -I "$dir" -I bench -DOQC_LAYER_HOOKS='"layer_hooks.h"' \
                            -DOQC_MODEL_HEADER="\"$cname.h\"" -DOQC_MODEL_PREFIX="$cname" -c "$c" -o "$o" \
                            2>>"$I8/${name}_layers_$p.err"; then
                        okp=0; break
                    fi
                    objs="$objs $o"
                done
                [ "$okp" = 1 ] && $CC $objs -lm -o "$I8/prof_${name}_$p" 2>>"$I8/${name}_layers_$p.err" || okp=0
                [ "$okp" = 1 ] && "$I8/prof_${name}_$p" --data "$ev" --runs $RUNS --min-ms 300 --layers 100000 \
                    >"$I8/${name}_layers_$p.log" 2>>"$I8/${name}_layers_$p.err" || okp=0
                [ "$okp" = 1 ] || { note "per-layer $name $p failed: $(tail -n 1 "$I8/${name}_layers_$p.err")"; break; }
            done
            [ "$okp" = 1 ] || continue
            "$BUILD/oqc" dump "$m" --after all >"$I8/${name}_after_all.txt" 2>/dev/null
            out ""
            "$PY" bench/layer_table.py "$name" "$I8/${name}_layers_int8.log" "$I8/${name}_layers_fp32.log" \
                "$I8/${name}_after_all.txt" "$peak" "$peak_name" 2>"$I8/${name}_layers.err" | tee -a "$RESULTS" ||
                note "layer_table.py failed on $name: $(tail -n 1 "$I8/${name}_layers.err")"
            # 7-bit weights: on AVX2 without VNNI the vpmaddubsw family, against its own peak
            p7=$peak; p7n=$peak_name
            v=$(echo "$pl" | tr ' ' '\n' | sed -n "s/^maddubs_inexact=//p")
            [ "$peak_name" = madd_add ] && [ -n "$v" ] && { p7=$v; p7n=maddubs; }
            out ""
            "$PY" bench/layer_table.py "$name, 7-bit weights" "$I8/${name}_layers_int8w7.log" \
                "$I8/${name}_layers_fp32.log" "$I8/${name}_after_all.txt" "$p7" "$p7n" \
                2>"$I8/${name}_layers.err" | tee -a "$RESULTS" ||
                note "layer_table.py failed on $name (7-bit): $(tail -n 1 "$I8/${name}_layers.err")"
        done
        out "Load average now: $(cut -d' ' -f1-3 /proc/loadavg)."
    fi
fi
fi

# ---------------------------------------------------------------- model load
# `oqc dump MODEL >/dev/null` loads the model (protobuf decode, constants, shape
# inference) and writes the text dump (a min/max summary per constant) to nowhere.
# Best wall time of 3 runs (the first also warms the page cache), largest peak RSS.
if [ -n "${BENCH_SKIP_LOAD:-}" ]; then
    exit $STATUS
fi
out ""
out "## Model load: \`oqc dump MODEL >/dev/null\` (best wall of 3 runs, peak RSS)"
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
        # stdout to /dev/null, never `-o /dev/null`: oqc writes -o files to a temporary
        # name renamed into place, which would replace the device with a regular file.
        if ! /usr/bin/time -v -o "$OUT/load.log" "$BUILD/oqc" dump "$m" >/dev/null 2>"$OUT/load.err"; then
            note "oqc dump $m failed:"; sed 's/^/  /' "$OUT/load.err" | head -n 5
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
