#!/bin/sh
# compare-builds.sh - do two oqc binaries behave the same?  (docs/testing.md, "Comparing
# two builds"; `make compare-base BASE=REV` builds REV's oqc and runs this against the
# current tree's.)
#
#   scripts/compare-builds.sh [--strict-runtime] [--jobs N] [--models LIST] A_OQC B_OQC [OUTDIR]
#
# Both binaries run the same commands on every model oqc ships (tests/cli/lib.sh's
# bundled_models: models/tiny, fashion, tv/squeezenet1_1, devset; plus the other
# committed models/**/*.onnx outside models/tv, and the bad-input models tests/bad/*.onnx):
#   - check (also --json); dump as text, after all passes (the golden files' two
#     forms), DOT and XML (with its .data);
#   - compile --precision fp32 --main;
#   - where the model takes data (reproducible.sh's choice: the Fashion CNN and the devset
#     networks their own data and tables, any other model with one float input 4
#     samples of its shape cut from squeezenet's image data and the table each binary
#     calibrates from them): calibrate (a TensorRT table), compile (INT8) --main,
#     export-qdq and eval --limit 20 --save-int8 --save-fp32;
#   - the Fashion CNN compiled with --preprocess (NAME_run_u8, oqc_image), as run_u8.sh;
#   - once: --version, help and help COMMAND for every command.
# Every command's standard output, standard error and exit status are kept with the
# files it writes, and each binary runs in its own folder with the same relative paths,
# so the messages of the two can be compared too (calibrate's measured time masked).
# Every file must be byte-identical, except the runtime copies `compile` writes next to
# a model (first line "... copy of runtime/..."): they are counted apart ("runtime
# copies differ: N"), since the runtime's own source may change without changing what
# oqc does; --strict-runtime makes them failures too.
#
# Prints a summary (models, files compared, the files that differ with their first
# differing line, up to 20) and exits 1 on any difference, 2 on bad usage.  OUTDIR (a new
# or empty folder) keeps the outputs of the models that differ, as OUTDIR/a/MODEL and
# OUTDIR/b/MODEL; without it they go to a temporary folder that is removed.  Models run
# in --jobs N processes (default 2, the machine's cores).  --models LIST: only the models
# (paths under the repository's root, one a line) of file LIST.
set -u
usage() {
    echo "usage: scripts/compare-builds.sh [--strict-runtime] [--jobs N] [--models LIST] A_OQC B_OQC [OUTDIR]" >&2
    exit 2
}

# ------------------------------------------------------------------ one model (a job)
# Runs in the repository's root with CB_A, CB_B (absolute paths of the binaries) and
# CB_OUT (the work folder) in the environment; prints one line per finding:
#   FILES MODEL N          N files compared (on the union of both sides' files)
#   OK KIND                a command of KIND succeeded on side A (counted for the summary)
#   DIFF MODEL PATH: WHY   a file that differs or exists on one side only
#   RTDIFF MODEL PATH      the same for a runtime copy
if [ "${1:-}" = --job ]; then
    . tests/cli/lib.sh
    ROOT=$(pwd)
    mf=$2
    m=$(echo "$mf" | sed 's|/|__|g; s|\.onnx$||')
    name=$(basename "$mf" .onnx)
    mp=$ROOT/$mf
    # shellcheck disable=SC2046
    set -- $(shape_args "$name")
    data_dir=$CB_OUT/data/$m
    mkdir -p "$CB_OUT/a/$m" "$CB_OUT/b/$m" "$data_dir"

    # run NAME CMD...: CMD's stdout and stderr to NAME.out and NAME.err, its status to
    # status.txt (in the current folder, a side's).  The one measured time oqc prints
    # (calibrate's "in 1.17 s") is masked as "in T s".  A command running for over 10
    # minutes (a hang: the slowest takes seconds) is stopped, status 124.
    run() {
        n=$1
        shift
        timeout -k 10 600 "$@" >"$n.out" 2>"$n.err"
        st=$?
        sed -i 's/ in [0-9][0-9]*\.[0-9]* s\b/ in T s/g' "$n.out" "$n.err"
        echo "$n $st" >>status.txt
        return $st
    }
    # fp32_part BIN: the commands that need no data.
    fp32_part() {
        b=$1
        shift
        run check "$b" check "$mp" "$@" && echo "OK check"
        run check-json "$b" check "$mp" "$@" --json
        run dump "$b" dump "$mp" "$@" -o dump.txt && echo "OK dump"
        run dump-after "$b" dump "$mp" "$@" --after all -o after-all.txt
        run dot "$b" dump "$mp" "$@" --format dot -o graph.dot
        mkdir xml
        run xml "$b" dump "$mp" "$@" --format xml -o xml/m.xml
        run fp32 "$b" compile "$mp" "$@" --precision fp32 --main -o fp32 --name t && echo "OK fp32"
    }
    # int8_part BIN: the commands that need data ($data, $evd, $table).
    int8_part() {
        b=$1
        shift
        run calibrate "$b" calibrate "$mp" "$@" --data "$data" -o t.trt
        run int8 "$b" compile "$mp" "$@" --table "$table" --main -o int8 --name t && echo "OK int8"
        mkdir qdq
        run qdq "$b" export-qdq "$mp" "$@" --table "$table" -o qdq/m.onnx
        run eval "$b" eval "$mp" "$@" --data "$evd" --table "$table" --limit 20 \
            --save-int8 int8_out.npy --save-fp32 fp32_out.npy && echo "OK eval"
        if [ "$name" = fashion_cnn ]; then
            run u8 "$b" compile "$mp" --calib "$data_dir/images" --main -o u8 --name t \
                --preprocess 'resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray'
        fi
    }

    # model_data: $data (calibration data, "" when the model takes none), $evd (eval's
    # data) and $table (the table compile, export-qdq and eval use)
    model_data() {
        table=t.trt
        case "$name" in
            fashion_cnn)
                data=$ROOT/models/fashion/calib_500.npy
                evd=$ROOT/models/fashion/test_1000.npy
                image_set "$data_dir/images" ;;
            resnet32_cifar10|mobilenetv2_cifar10_fp32)
                data=$ROOT/models/devset/calib_200.npy
                evd=$ROOT/models/devset/eval_300.npy
                table=$ROOT/models/devset/$(echo "$name" | sed 's/_cifar10.*//').table ;;
            *)
                # data of the input's shape (sample_data reads either side's FP32 header)
                h=$CB_OUT/a/$m/fp32/t.h
                [ -e "$h" ] || h=$CB_OUT/b/$m/fp32/t.h
                data=$data_dir/in.npy
                evd=$data
                [ -e "$h" ] && sample_data "$h" "$data" || data="" ;;
        esac
    }
    # help_part BIN: the texts that depend on no model: --version, help, help COMMAND
    help_part() {
        run version "$1" --version
        run help "$1" help
        for c in dump check run calibrate compile export-qdq eval bench help; do
            run "help-$c" "$1" help "$c"
        done
    }

    if [ "$mf" = @help ]; then
        (cd "$CB_OUT/a/$m" && help_part "$CB_A")
        (cd "$CB_OUT/b/$m" && help_part "$CB_B")
        data=""
    else
        (cd "$CB_OUT/a/$m" && fp32_part "$CB_A" "$@" | grep '^OK')
        (cd "$CB_OUT/b/$m" && fp32_part "$CB_B" "$@" >/dev/null)
        model_data
    fi
    if [ -n "$data" ]; then
        (cd "$CB_OUT/a/$m" && int8_part "$CB_A" "$@" | grep '^OK')
        (cd "$CB_OUT/b/$m" && int8_part "$CB_B" "$@" >/dev/null)
    fi

    # the comparison, on the union of both sides' files
    (cd "$CB_OUT/a/$m" && find . -type f) >"$TMP/la"
    (cd "$CB_OUT/b/$m" && find . -type f) >"$TMP/lb"
    sort -u "$TMP/la" "$TMP/lb" >"$TMP/all"
    echo "FILES $m $(wc -l <"$TMP/all")"
    bad=0
    while read -r f; do
        fa=$CB_OUT/a/$m/$f
        fb=$CB_OUT/b/$m/$f
        f=${f#./}
        if [ -e "$fa" ] && [ -e "$fb" ] && cmp -s "$fa" "$fb"; then
            continue
        fi
        bad=1
        # a runtime copy says so in its first line (on the side that has it)
        if head -n 1 "$fa" "$fb" 2>/dev/null | grep -q 'copy of runtime/'; then
            echo "RTDIFF $m $f"
            continue
        fi
        if [ ! -e "$fb" ]; then
            echo "DIFF $m $f: only in A"
        elif [ ! -e "$fa" ]; then
            echo "DIFF $m $f: only in B"
        elif grep -qI '' "$fa" && grep -qI '' "$fb"; then
            # text: the first line that differs, as each side has it
            ln=$(cmp "$fa" "$fb" 2>&1 | sed -n 's/.* line \([0-9]*\).*/\1/p')
            [ -n "$ln" ] || ln=$(($(wc -l <"$fa") + 1))
            la=$(sed -n "${ln}p" "$fa" | cut -c 1-100)
            lb=$(sed -n "${ln}p" "$fb" | cut -c 1-100)
            echo "DIFF $m $f: line $ln: A '$la' B '$lb'"
        else
            echo "DIFF $m $f: $(cmp "$fa" "$fb" 2>&1 | sed 's/^.* differ: //')"
        fi
    done <"$TMP/all"
    # identical outputs are not kept (a model's are up to a few MB per side)
    [ $bad = 0 ] && rm -rf "${CB_OUT:?}/a/$m" "${CB_OUT:?}/b/$m"
    rm -rf "$data_dir"
    exit 0
fi

# ------------------------------------------------------------------ the driver
strict=0
jobs=2
list=""
while [ $# -gt 0 ]; do
    case "$1" in
        --strict-runtime) strict=1; shift ;;
        --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
        --models) [ $# -ge 2 ] || usage; list=$(readlink -f "$2"); shift 2
            [ -f "$list" ] || { echo "compare-builds.sh: --models $2: no such file" >&2; exit 2; } ;;
        -h|--help) usage ;;
        -*) echo "compare-builds.sh: unknown option '$1'" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] && [ $# -le 3 ] || usage
case "$jobs" in ''|*[!0-9]*|0) echo "compare-builds.sh: --jobs wants a positive number, not '$jobs'" >&2; exit 2 ;; esac
for b in "$1" "$2"; do
    [ -f "$b" ] && [ -x "$b" ] || { echo "compare-builds.sh: $b: not an executable file" >&2; exit 2; }
done
CB_A=$(readlink -f "$1")
CB_B=$(readlink -f "$2")
keep=""
if [ $# = 3 ]; then
    if [ -e "$3" ] && [ -n "$(ls -A "$3" 2>/dev/null)" ]; then
        echo "compare-builds.sh: $3: exists and is not an empty folder (give a new one)" >&2
        exit 2
    fi
    keep=$(readlink -f "$3")
fi
cd "$(dirname "$0")/.." || exit 2
. tests/cli/lib.sh
t0=$(date +%s)

# the models: the bundled ones (lib.sh), the other committed models outside models/tv
# (whose other networks `make models` writes: a minute each to compile) and tests/bad's
if [ -n "$list" ]; then
    grep -v '^$' "$list" >"$TMP/models"
    [ -s "$TMP/models" ] || { echo "compare-builds.sh: --models $list: no models in it" >&2; exit 2; }
    while read -r mf; do
        [ -f "$mf" ] || { echo "compare-builds.sh: $list names $mf: no such model" >&2; exit 2; }
    done <"$TMP/models"
else
    {
        bundled_models
        find models -name '*.onnx' ! -path 'models/tv/*'
        find tests/bad -name '*.onnx'
    } | sort -u >"$TMP/models"
fi
nmodels=$(wc -l <"$TMP/models")
CB_OUT=${keep:-$TMP/out}
mkdir -p "$CB_OUT" || exit 2
export CB_A CB_B CB_OUT
echo "compare-builds: A=$CB_A"
echo "compare-builds: B=$CB_B"
echo "compare-builds: $nmodels models, $jobs jobs"
# (the help texts first: "@help", a job of their own)
{ echo @help; cat "$TMP/models"; } | xargs -P "$jobs" -n 1 sh scripts/compare-builds.sh --job \
    >"$TMP/res" 2>"$TMP/err"
[ -s "$TMP/err" ] && { echo "messages of the jobs (first 10):"; head -n 10 "$TMP/err"; }

files=$(awk '$1 == "FILES" {n += $3} END {print n + 0}' "$TMP/res")
ndone=$(grep -c '^FILES [^@]' "$TMP/res")
ndiff=$(grep -c '^DIFF ' "$TMP/res")
nrt=$(grep -c '^RTDIFF ' "$TMP/res")
mdiff=$(grep '^DIFF ' "$TMP/res" | awk '{print $2}' | sort -u | wc -l)
echo "models: $ndone of $nmodels compared (and the help texts); files compared: $files"
for k in check dump fp32 int8 eval; do
    printf '  %s succeeded on A for %s models\n' "$k" "$(grep -c "^OK $k\$" "$TMP/res")"
done
st=0
if [ "$ndiff" != 0 ]; then
    echo "files differing: $ndiff in $mdiff models (the first 20, with their first differing line):"
    grep '^DIFF ' "$TMP/res" | sort | head -n 20 | sed 's/^DIFF /  /'
    st=1
else
    echo "files differing: 0"
fi
if [ "$nrt" != 0 ]; then
    grep '^RTDIFF ' "$TMP/res" | sed 's|.*/||' | sort -u >"$TMP/rtnames"
    echo "runtime copies differ: $nrt files, $(wc -l <"$TMP/rtnames") names: $(head -n 8 "$TMP/rtnames" | tr '\n' ' ')$([ "$(wc -l <"$TMP/rtnames")" -gt 8 ] && echo ...)"
    if [ $strict = 1 ]; then
        echo "  (--strict-runtime: a failure)"
        st=1
    else
        echo "  (not a failure; --strict-runtime makes it one)"
    fi
else
    echo "runtime copies differ: 0"
fi
# a run in which nothing worked compares nothing: two broken binaries are not "the same"
if [ "$ndone" != "$nmodels" ] || ! grep -q '^FILES @help ' "$TMP/res" ||
        [ "$(grep -c '^OK fp32$' "$TMP/res")" = 0 ]; then
    echo "compare-builds: incomplete: $ndone of $nmodels models finished, $(grep -c '^OK fp32$' "$TMP/res") FP32 compiles succeeded"
    st=1
fi
[ -n "$keep" ] && [ $st != 0 ] && echo "outputs of the models that differ: $keep/a and $keep/b"
[ -n "$keep" ] && rm -rf "$keep/data"
verdict=DIFFERENT
[ $st = 0 ] && verdict=same
[ $st = 0 ] && [ "$nrt" != 0 ] && verdict="same, runtime copies aside"
echo "compare-builds: $verdict ($(($(date +%s) - t0)) s)"
exit $st
