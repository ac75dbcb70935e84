#!/bin/sh
# reproducible.sh - oqc's outputs are byte-identical however often, with however many
# threads and with whatever calibration batch size they are made (docs/testing.md,
# "Reproducible bytes"), on every bundled model (models/: tiny, fashion, squeezenet,
# devset):
#   - compile --precision fp32, twice: the same files, the same bytes;
#   - INT8 with a table (devset: their committed tables; the others: a table calibrated
#     here on 4 samples of their input shape cut from squeezenet's image data, the
#     Fashion CNN on its own data): compile twice, identical;
#   - calibrate (the TensorRT and the XML table) with --threads 1 and --threads 2, and
#     compile --calib --threads 2 (the output's thread count), with --batch 1 and
#     --batch 3 (a short last batch): identical (the histograms are integer counts, amax
#     a maximum: docs/calibration.md); models with Resize refuse --batch 3;
#   - export-qdq twice, and with --threads 2: identical;
#   - dump --format xml -o FILE (with its .data) twice: identical.
# A model oqc refuses (documented limits: compile_all.sh checks the refusals) is left out
# of what it refuses.  One configuration (clang's): the other builds run the same code,
# whose output compile_int8.sh and friends compare across configurations; `make check`
# runs the three configurations side by side and clang's is the shortest.
. tests/cli/lib.sh
only_config clang

# one MODEL: status lines (SAME what, BAD why) on stdout.
one() {
    mf=$1
    m=$(basename "$mf" .onnx)
    # shellcheck disable=SC2046
    set -- $(shape_args "$m")
    d=$TMP/m$W
    rm -rf "$d"
    mkdir -p "$d"
    if "$OQC" compile "$mf" "$@" --precision fp32 -o "$d/f1" --name t -q 2>/dev/null; then
        "$OQC" compile "$mf" "$@" --precision fp32 -o "$d/f2" --name t -q && same "$m fp32 compile" "$d/f1" "$d/f2"
    fi
    mkdir "$d/x1" "$d/x2"   # the same name: the XML names its .data file
    if "$OQC" dump "$mf" "$@" --format xml -o "$d/x1/m.xml" 2>/dev/null; then
        "$OQC" dump "$mf" "$@" --format xml -o "$d/x2/m.xml"
        same "$m xml dump" "$d/x1" "$d/x2"
    fi
    # INT8: a table (its own, or calibrated here), data of the input's shape
    case "$m" in
        fashion_cnn) data=models/fashion/calib_500.npy ;;
        resnet32_cifar10) data=models/devset/calib_200.npy; table=models/devset/resnet32.table ;;
        mobilenetv2_cifar10_fp32) data=models/devset/calib_200.npy; table=models/devset/mobilenetv2.table ;;
        *)
            [ -e "$d/f1" ] && sample_data "$d/f1/t.h" "$d/in.npy" || return
            data=$d/in.npy ;;
    esac
    case "$m" in resnet32_cifar10|mobilenetv2_cifar10_fp32) ;; *) table=$d/t1.trt ;; esac
    # calibrate: threads and batch sizes (models that fix their batch size refuse
    # --batch 3, as documented: threads only for them)
    "$OQC" calibrate "$mf" "$@" --data "$data" -o "$d/t1.trt" --threads 1 -q 2>/dev/null || return
    b=3
    if ! "$OQC" calibrate "$mf" "$@" --data "$data" -o "$d/t2.trt" --threads 2 --batch 3 -q \
            2>"$d/err"; then
        grep -q "use --batch 1\|--batch needs inputs whose first dimension is 1" "$d/err" || echo "BAD $m calibrate --batch 3: $(head -n 1 "$d/err")"
        b=1
        "$OQC" calibrate "$mf" "$@" --data "$data" -o "$d/t2.trt" --threads 2 -q
    fi
    same "$m calibrate (threads 1 and 2, batch 1 and $b)" "$d/t1.trt" "$d/t2.trt"
    "$OQC" calibrate "$mf" "$@" --data "$data" -o "$d/t1.xml" --format xml --threads 2 -q
    "$OQC" calibrate "$mf" "$@" --data "$data" -o "$d/t2.xml" --format xml --threads 1 --batch $b -q
    same "$m calibrate xml (threads 2 and 1, batch 1 and $b)" "$d/t1.xml" "$d/t2.xml"
    if "$OQC" compile "$mf" "$@" --table "$table" -o "$d/q1" -q 2>/dev/null; then
        "$OQC" compile "$mf" "$@" --table "$table" -o "$d/q2" -q
        same "$m int8 compile with its table" "$d/q1" "$d/q2"
        # (compile --threads N is also the emitted code's thread count, so both compiles
        # use 2: calibration's own threads are compared by the tables above)
        "$OQC" compile "$mf" "$@" --calib "$data" --threads 2 -o "$d/c1" -q
        "$OQC" compile "$mf" "$@" --calib "$data" --threads 2 --batch $b -o "$d/c2" -q
        same "$m int8 compile --calib --threads 2 (batch 1 and $b)" "$d/c1" "$d/c2"
    fi
    mkdir "$d/e1" "$d/e2" "$d/e3"
    if "$OQC" export-qdq "$mf" "$@" --table "$table" -o "$d/e1/m.onnx" -q 2>/dev/null; then
        "$OQC" export-qdq "$mf" "$@" --table "$table" -o "$d/e2/m.onnx" -q
        same "$m export-qdq" "$d/e1" "$d/e2"
        "$OQC" export-qdq "$mf" "$@" --calib "$data" --threads 1 -o "$d/e1/c.onnx" -q
        "$OQC" export-qdq "$mf" "$@" --calib "$data" --threads 2 --batch $b -o "$d/e3/c.onnx" -q
        same "$m export-qdq --calib (threads 1 and 2, batch 1 and $b)" "$d/e1/c.onnx" "$d/e3/c.onnx"
    fi
    rm -rf "$d"
}

bundled_models >"$TMP/models"
over_models one "$TMP/models"
bad_lines SAME
for k in "fp32 compile" "xml dump" "calibrate (" "calibrate xml" "int8 compile with" "int8 compile --calib" "export-qdq$" "export-qdq --calib"; do
    echo "  $k: $(grep -c "^SAME .* $k" "$TMP/res") models"
done
n32=$(grep -c '^SAME .* fp32 compile$' "$TMP/res")
n8=$(grep -c '^SAME .* int8 compile with its table$' "$TMP/res")
nq=$(grep -c '^SAME .* export-qdq$' "$TMP/res")
[ "$BAD" = 0 ] && [ "$OTHER" = 0 ] && ok "every output of every model is the same bytes twice, with 1 or 2 threads, batch 1 or 3" ||
    fail "$BAD outputs differ, $OTHER unexpected lines (above)"
# --portable-fp32 (the tables of every host, reproducible_aarch64.sh): the same bytes
# with 1 or 2 threads and batch 1 or 4 too
FM=models/fashion/fashion_cnn.onnx
"$OQC" calibrate $FM --data models/fashion/calib_500.npy --portable-fp32 --threads 1 -o "$TMP/p1.trt" -q &&
    "$OQC" calibrate $FM --data models/fashion/calib_500.npy --portable-fp32 --threads 2 --batch 4 \
        -o "$TMP/p2.trt" -q && cmp "$TMP/p1.trt" "$TMP/p2.trt" &&
    ok "calibrate --portable-fp32: the same table with 1 or 2 threads, batch 1 or 4" ||
    fail "calibrate --portable-fp32 depends on threads or batch"
# enough models went through each comparison (compile_all.sh: 185 compile, most in INT8)
[ "$n32" -ge 180 ] && [ "$n8" -ge 150 ] && [ "$nq" -ge 100 ] &&
    ok "compared: $n32 FP32 compiles, $n8 INT8 compiles with a table, $nq QDQ exports" ||
    fail "too few comparisons: $n32 FP32, $n8 INT8, $nq QDQ"
finish
