#!/bin/sh
# bench/accuracy/run.sh - oqc's INT8 accuracy on real trained networks (`make accuracy`).
# A benchmark, not a test: it prints and tabulates numbers and never fails on them.
#
# For the bundled Fashion model and every network of the devset (../shared/devset by
# default; only Fashion when it is absent), it runs
#   - ONNX Runtime on the FP32 model (the reference; cached) and on the devset's own
#     INT8 original *_ort_int8.onnx where there is one (cached),
#   - `oqc eval MODEL --data EVAL --calib CALIB OPTIONS --requant float|fixed
#     --save-int8 OUT.npy` for every variant of bench/accuracy/variants.txt
#     (`LABEL<TAB>OPTIONS` per line) and both requantization modes (always rerun),
# then bench/accuracy/metrics.py turns the .npy files into results.md, results.json and
# accuracy.png.  Everything goes to $BUILD/accuracy (default build/accuracy).  An oqc run
# that fails (or a model oqc refuses) is a row with oqc's message, not an error.  See
# docs/accuracy.md.
#
#   ACCURACY_DEVSET=DIR        the devset (default ../shared/devset)
#   ACCURACY_VARIANTS=FILE     the variant list (default bench/accuracy/variants.txt)
#   ACCURACY_NETS="a b"        only these networks (names as in the tables)
#   ACCURACY_REQUANT="float"   only these requantization modes (default "float fixed")
#   ACCURACY_CIFAR_N=N         CIFAR-10 eval images, 1..5000 (default 2000)
#   ACCURACY_THREADS=N         oqc --threads (default: the number of CPUs)
#   ORT_NODE_MODULES=DIR       a node_modules holding onnxruntime-node (default: installed
#                              with npm into $BUILD/accuracy/ort when missing)
#
# Exit status: 0 when the tables were written (whatever the numbers), 1 when oqc cannot
# be built or the data cannot be made.
set -u
cd "$(dirname "$0")/../.." || exit 1

BUILD=${BUILD:-build}
OUT=$BUILD/accuracy
OQC=$BUILD/oqc
PY=/usr/bin/python3
DEVSET=${ACCURACY_DEVSET:-../shared/devset}
VARIANTS=${ACCURACY_VARIANTS:-bench/accuracy/variants.txt}
REQUANT=${ACCURACY_REQUANT:-float fixed}
CIFAR_N=${ACCURACY_CIFAR_N:-2000}
THREADS=${ACCURACY_THREADS:-$(nproc)}
ORT_VERSION=${ORT_VERSION:-1.30.0}     # as bench/run.sh: like for like over time

note() { printf 'accuracy: %s\n' "$*"; }
start=$(date +%s)
mkdir -p "$OUT"

if [ ! -x "$OQC" ]; then
    note "building oqc"
    ${MAKE:-make} --no-print-directory "$OQC" || exit 1
fi
if [ ! -f "$VARIANTS" ]; then
    note "$VARIANTS: no such file"
    exit 1
fi
if [ ! -d "$DEVSET/models" ]; then
    note "$DEVSET is absent (set ACCURACY_DEVSET): only the Fashion model is measured"
fi

# ---------------------------------------------------------------- data
note "data (photo crops and Fashion-MNIST arrays are made once, into $OUT/data)"
nice "$PY" bench/accuracy/prepare.py "$OUT" --devset "$DEVSET" --cifar-n "$CIFAR_N" || exit 1

# ---------------------------------------------------------------- ONNX Runtime
# As bench/run.sh: onnxruntime-node's CPU binding is inside the npm package, its
# postinstall only fetches the CUDA provider, so --ignore-scripts loses nothing.
ORT_DIR=$(pwd)/$OUT/ort
if [ -z "${ORT_NODE_MODULES:-}" ]; then
    ORT_NODE_MODULES=$ORT_DIR/node_modules
    if [ -d "$(pwd)/$BUILD/bench/ort/node_modules/onnxruntime-node" ]; then
        ORT_NODE_MODULES=$(pwd)/$BUILD/bench/ort/node_modules      # make bench's copy
    elif [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ] && command -v npm >/dev/null 2>&1; then
        note "installing onnxruntime-node@$ORT_VERSION into $ORT_DIR (npm, --ignore-scripts)"
        mkdir -p "$ORT_DIR"
        [ -f "$ORT_DIR/package.json" ] || echo '{"private": true}' >"$ORT_DIR/package.json"
        (cd "$ORT_DIR" && timeout 300 npm install --ignore-scripts --no-audit --no-fund \
            "onnxruntime-node@$ORT_VERSION") >"$OUT/npm.log" 2>&1 ||
            note "npm install failed (registry unreachable?); see $OUT/npm.log"
    fi
fi
export ORT_NODE_MODULES
ORT_OK=0
if ! command -v node >/dev/null 2>&1; then
    ORT_WHY="node is not installed"
elif ! node -e 'require(process.env.ORT_NODE_MODULES + "/onnxruntime-node")' 2>"$OUT/ort-load.log"; then
    ORT_WHY="onnxruntime-node does not load from $ORT_NODE_MODULES (see $OUT/ort-load.log)"
else
    ORT_OK=1
fi
[ $ORT_OK = 1 ] || note "$ORT_WHY: FP32 reference from oqc itself, no ONNX Runtime INT8 rows"

# ort OUTNAME MODEL EVAL DIR: ONNX Runtime's outputs, rerun only when missing or older
# than the model or the data.
ort() {
    o=$4/$1.npy
    rm -f "$4/$1.err"
    if [ $ORT_OK = 0 ]; then
        echo "$ORT_WHY" >"$4/$1.err"
        return
    fi
    if [ -f "$o" ] && [ -z "$(find "$2" "$3" -newer "$o")" ]; then
        return
    fi
    note "  ONNX Runtime: $(basename "$2")"
    if ! nice node bench/accuracy/ort_run.js "$2" "$3" "$o" >"$4/$1.log" 2>&1; then
        tail -n 1 "$4/$1.log" >"$4/$1.err"
        note "  ONNX Runtime failed: $(cat "$4/$1.err")"
    fi
}

# ---------------------------------------------------------------- oqc variants
TAB=$(printf '\t')
while IFS="$TAB" read -r net model calib eval _labels ortmodel what; do
    if [ -n "${ACCURACY_NETS:-}" ]; then
        case " $ACCURACY_NETS " in *" $net "*) ;; *) continue ;; esac
    fi
    d=$OUT/$net
    mkdir -p "$d"
    note "$net: $what"
    ort fp32 "$model" "$eval" "$d"
    [ "$ortmodel" = - ] || ort ort_int8 "$ortmodel" "$eval" "$d"
    : >"$d/runs.tsv"
    rm -f "$d/oqc_fp32.npy" "$d"/v_*.npy
    # Labels of the calibration data, for variants that validate on it (@CALIB_LABELS@):
    # the file beside it named STEM_labels.npy (the devset's cifar_calib_labels.npy).
    stem=${calib%.npy}
    clabels=${stem%_norm}_labels.npy
    [ -f "$clabels" ] || clabels=
    first=1
    # The variant list on fd 3, so oqc cannot read it from standard input.
    while IFS= read -r line <&3; do
        case $line in '#'* | '') continue ;; esac
        label=${line%%"$TAB"*}
        opts=
        case $line in *"$TAB"*) opts=${line#*"$TAB"} ;; esac
        file=$(printf '%s' "$label" | tr -c 'A-Za-z0-9._+-' '_')
        case $opts in *@CALIB_LABELS@*)
            if [ -z "$clabels" ]; then
                for rq in $REQUANT; do
                    printf '%s\t%s\tfailed\t0\tn/a: the calibration data has no labels\n' \
                        "$label" "$rq" >>"$d/runs.tsv"
                done
                continue
            fi ;;
        esac
        opts=$(printf '%s' "$opts" | sed "s|@CALIB_LABELS@|$clabels|g; s|@CALIB@|$calib|g")
        for rq in $REQUANT; do
            o=$d/v_$file.$rq.npy
            log=$d/v_$file.$rq.log
            # oqc's own FP32 outputs once per network: the fallback reference, and a
            # check of oqc's float path against ONNX Runtime.
            extra=
            [ $first = 0 ] || extra="--save-fp32 $d/oqc_fp32.npy"
            t0=$(date +%s)
            # shellcheck disable=SC2086 # options are split on blanks on purpose
            nice "$OQC" eval "$model" --data "$eval" --calib "$calib" $opts --requant "$rq" \
                --threads "$THREADS" --save-int8 "$o" $extra -q </dev/null >"$log" 2>&1
            rc=$?
            secs=$(($(date +%s) - t0))
            if [ $rc = 0 ] && [ -f "$o" ]; then
                printf '%s\t%s\tok\t%s\t%s\n' "$label" "$rq" "$secs" "$o" >>"$d/runs.tsv"
                note "  $label $rq: ${secs}s"
                first=0
            else
                msg=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | tr '\t' ' ')
                [ -n "$msg" ] || msg="exit status $rc, no message"
                printf '%s\t%s\tfailed\t%s\t%s\n' "$label" "$rq" "$secs" "$msg" >>"$d/runs.tsv"
                note "  $label $rq: failed: $msg"
            fi
        done
    done 3<"$VARIANTS"
done <"$OUT/networks.tsv"

# ---------------------------------------------------------------- tables and plot
nice "$PY" bench/accuracy/metrics.py "$OUT" --variants "$VARIANTS" --nets "${ACCURACY_NETS:-}" || exit 1
note "wrote $OUT/results.md, $OUT/results.json, $OUT/accuracy.png in $(($(date +%s) - start)) s"
