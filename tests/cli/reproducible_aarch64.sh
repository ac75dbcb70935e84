#!/bin/sh
# reproducible_aarch64.sh - the aarch64 oqc, run under qemu-user, writes the same bytes
# as the x86-64 one (docs/testing.md, "Reproducible bytes"), on every bundled model:
#   - compile --precision fp32;
#   - calibrate (TensorRT table) on 4 samples of the input's shape cut from squeezenet's
#     image data: the aarch64 oqc's default against the x86-64 oqc with --portable-fp32
#     (its FP32 kernels sum as the portable ones; without it an AVX2 or AVX-512 host's
#     thresholds may differ in the last bit, docs/calibration.md);
#   - compile (INT8) and export-qdq with that table, and the devset networks with their
#     committed tables.
# Needs the cross compiler, qemu-aarch64 and the arm64 libraries oqc links (Debian
# multiarch: dpkg --add-architecture arm64; apt-get install gcc-aarch64-linux-gnu
# qemu-user libprotobuf-c-dev:arm64 libxml2-dev:arm64 libjpeg62-turbo-dev:arm64
# libpng-dev:arm64); without them it is skipped with the reason.  It builds the
# aarch64 oqc into $BUILD/aarch64 (about a minute on two cores, then incremental).
# The bigger models (squeezenet, the devset networks, the Fashion CNN) are compiled but
# not calibrated: under qemu their calibration takes minutes.  One configuration only,
# clang's (what it compares is the aarch64 build, the same in every configuration; clang's
# is the shortest of the three `make check` runs side by side).
. tests/cli/lib.sh
only_config clang
ACC=aarch64-linux-gnu-gcc
ML=/usr/lib/aarch64-linux-gnu
missing=""
command -v $ACC >/dev/null 2>&1 || missing="$missing $ACC"
command -v qemu-aarch64 >/dev/null 2>&1 || missing="$missing qemu-aarch64"
for l in libprotobuf-c libxml2 libjpeg libpng; do
    [ -e "$ML/$l.so" ] || missing="$missing $ML/$l.so"
done
if [ -n "$missing" ]; then
    skip "no aarch64 cross build (missing:$missing; see this script's header for the Debian packages)"
    finish
    exit $?
fi
ABUILD=${BUILD:-build}/aarch64
if ! make -s CC=$ACC BUILD="$ABUILD" "$ABUILD/oqc" >"$TMP/build.log" 2>&1; then
    fail "building the aarch64 oqc: $(tail -n 5 "$TMP/build.log")"
    finish
    exit $?
fi
AOQC="qemu-aarch64 $ABUILD/oqc"
file "$ABUILD/oqc" | grep -q "ARM aarch64" && $AOQC --version >/dev/null &&
    ok "the aarch64 oqc runs under qemu-aarch64" || fail "the aarch64 oqc does not run"

one() {
    mf=$1
    m=$(basename "$mf" .onnx)
    # shellcheck disable=SC2046
    set -- $(shape_args "$m")
    d=$TMP/m$W
    rm -rf "$d"
    mkdir -p "$d/x" "$d/a"
    if "$OQC" compile "$mf" "$@" --precision fp32 -o "$d/x/f" --name t -q 2>/dev/null; then
        $AOQC compile "$mf" "$@" --precision fp32 -o "$d/a/f" --name t -q
        same "$m fp32 compile" "$d/x/f" "$d/a/f"
    else
        return
    fi
    case "$m" in
        resnet32_cifar10) table=models/devset/resnet32.table ;;
        mobilenetv2_cifar10_fp32) table=models/devset/mobilenetv2.table ;;
        fashion_cnn|squeezenet1_1|avgpool_ties) return ;;
        *)
            sample_data "$d/x/f/t.h" "$d/in.npy" || return
            "$OQC" calibrate "$mf" "$@" --data "$d/in.npy" -o "$d/x/t.trt" --portable-fp32 -q \
                2>/dev/null || return
            $AOQC calibrate "$mf" "$@" --data "$d/in.npy" -o "$d/a/t.trt" -q
            same "$m calibrate" "$d/x/t.trt" "$d/a/t.trt"
            table=$d/x/t.trt ;;
    esac
    if "$OQC" compile "$mf" "$@" --table "$table" -o "$d/x/q" --name t -q 2>/dev/null; then
        $AOQC compile "$mf" "$@" --table "$table" -o "$d/a/q" --name t -q
        same "$m int8 compile" "$d/x/q" "$d/a/q"
    fi
    if "$OQC" export-qdq "$mf" "$@" --table "$table" -o "$d/x/e.onnx" -q 2>/dev/null; then
        $AOQC export-qdq "$mf" "$@" --table "$table" -o "$d/a/e.onnx" -q
        same "$m export-qdq" "$d/x/e.onnx" "$d/a/e.onnx"
    fi
    rm -rf "$d"
}

bundled_models >"$TMP/models"
over_models one "$TMP/models"
bad_lines SAME
n32=$(grep -c '^SAME .* fp32 compile$' "$TMP/res")
nc=$(grep -c '^SAME .* calibrate$' "$TMP/res")
n8=$(grep -c '^SAME .* int8 compile$' "$TMP/res")
nq=$(grep -c '^SAME .* export-qdq$' "$TMP/res")
[ "$BAD" = 0 ] && [ "$OTHER" = 0 ] &&
    ok "aarch64 (qemu) and x86-64 write the same bytes: $n32 FP32 compiles, $nc tables, $n8 INT8 compiles, $nq QDQ exports" ||
    fail "$BAD outputs differ, $OTHER unexpected lines (above)"
[ "$n32" -ge 180 ] && [ "$nc" -ge 150 ] && [ "$n8" -ge 150 ] && [ "$nq" -ge 100 ] &&
    ok "enough models compared" || fail "too few comparisons: $n32 FP32, $nc tables, $n8 INT8, $nq QDQ"
finish
