#!/bin/sh
# images.sh - JPEG/PNG inputs and --preprocess (docs/images.md): oqc's tensors against
# torchvision's PIL pipeline, the documented conversions, clear errors for bad files,
# and image folders / list files / --labels through calibrate, eval, run, compile and
# export-qdq, each giving the same result as the same samples as a .npy.
#
# Tolerance against PIL: none.  The references (models/images/ref_*.npy, made once by
# models/images/make_refs.py with Debian's python3-pil) were measured bit-identical:
# the same libjpeg decodes both, the resize is Pillow's integer arithmetic, and the
# normalisation the same float32 operations in the same order.
. tests/cli/lib.sh
I=models/images
IT=${BUILD:-build}/tests/tools/image_tensor
M=models/fashion/fashion_cnn.onnx

# --- oqc's tensors equal PIL's (4 images per spec: JPEG, RGB PNG, gray PNG, palette PNG)
set -- shrink 1x3x20x20 'resize=24,crop=20,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225' \
       grow 1x1x64x64 'resize=72,crop=64,scale=1/255,color=gray' \
       bgr 1x30x40x3 'resize=30x40,scale=1/255,color=bgr,layout=nhwc'
while [ $# -ge 3 ]; do
    "$IT" "$3" "$2" "$TMP/$1.npy" $I/photo.jpg $I/photo.png $I/gray.png $I/palette.png &&
        same_data "$TMP/$1.npy" "$I/ref_$1.npy" && ok "PIL reference $1 (bit-exact)" ||
        fail "PIL reference $1 ($3)"
    shift 3
done
# presets are their keys
"$IT" imagenet 1x3x224x224 "$TMP/p1.npy" $I/photo.jpg &&
    "$IT" resize=256,crop=224,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225 \
        1x3x224x224 "$TMP/p2.npy" $I/photo.jpg && cmp -s "$TMP/p1.npy" "$TMP/p2.npy" &&
    ok "imagenet preset" || fail "imagenet preset"

# --- documented conversions: each equals its 8-bit twin
"$IT" raw 1x3x10x12 "$TMP/rgb8.npy" $I/rgb8.png || fail "rgb8.png"
for f in rgb16 rgba; do
    "$IT" raw 1x3x10x12 "$TMP/$f.npy" $I/$f.png && cmp -s "$TMP/$f.npy" "$TMP/rgb8.npy" &&
        ok "$f.png converts to its 8-bit RGB twin" || fail "$f.png conversion"
done
"$IT" raw,color=gray 1x1x10x12 "$TMP/g8.npy" $I/gray8.png &&
    "$IT" raw,color=gray 1x1x10x12 "$TMP/la.npy" $I/la.png && cmp -s "$TMP/la.npy" "$TMP/g8.npy" &&
    ok "la.png (gray + alpha) drops alpha" || fail "la.png conversion"
"$IT" raw 1x3x10x12 "$TMP/g3.npy" $I/gray8.png && [ "$(wc -c <"$TMP/g3.npy")" = $((128 + 3 * 480)) ] &&
    ok "gray replicated to RGB" || fail "gray to RGB"
"$IT" raw,color=gray 1x1x10x12 "$TMP/g16.npy" $I/gray16.png && cmp -s "$TMP/g16.npy" "$TMP/g8.npy" &&
    ok "gray16.png (16-bit gray) converts to its 8-bit twin (the high byte)" || fail "gray16.png conversion"
# a grayscale JPEG: PIL's L pixels (bit-exact), replicated to R = G = B for color=rgb
"$IT" raw,color=gray 1x1x16x20 "$TMP/gj.npy" $I/grayj.jpg && same_data "$TMP/gj.npy" $I/ref_grayj.npy &&
    ok "grayj.jpg (grayscale JPEG) decodes to PIL's pixels" || fail "grayscale JPEG vs PIL"
"$IT" raw 1x3x16x20 "$TMP/gj3.npy" $I/grayj.jpg && data_of "$TMP/gj.npy" >"$TMP/gj.bin" &&
    cat "$TMP/gj.bin" "$TMP/gj.bin" "$TMP/gj.bin" >"$TMP/gj3.bin" && data_of "$TMP/gj3.npy" | cmp -s - "$TMP/gj3.bin" &&
    ok "grayscale JPEG replicated to RGB" || fail "grayscale JPEG to RGB"

# --- bad files: a clear error naming the file, exit 1
head -c 2000 $I/photo.jpg > "$TMP/trunc.jpg"
head -c 3000 $I/photo.png > "$TMP/trunc.png"
echo "not an image" > "$TMP/text.jpg"
: > "$TMP/empty.png"
# a PNG whose pixel data is damaged (a byte of IDAT flipped: its CRC fails)
cp $I/photo.png "$TMP/crc.png"
printf '\377' | dd of="$TMP/crc.png" bs=1 seek=3000 conv=notrunc 2>/dev/null
# a JPEG damaged inside its scan data (a bogus marker 0xff05): libjpeg's warning
cp $I/photo.jpg "$TMP/corrupt.jpg"
printf '\377\005' | dd of="$TMP/corrupt.jpg" bs=1 seek=1500 conv=notrunc 2>/dev/null
for c in "trunc.jpg:truncated JPEG" "trunc.png:truncated PNG" "text.jpg:not a JPEG or PNG" \
         "corrupt.jpg:Corrupt JPEG data" \
         "empty.png:not a JPEG or PNG" "crc.png:corrupt or truncated PNG" "cmyk.jpg:CMYK" \
         "big.png:too large"; do
    f=${c%%:*} want=${c#*:}
    p="$TMP/$f"; [ -e "$p" ] || p=$I/$f
    if "$IT" raw 1x3x8x8 "$TMP/o.npy" "$p" 2>"$TMP/err"; then
        fail "$f accepted"
    else
        grep -q "$p" "$TMP/err" && grep -qi "${want%% *}" "$TMP/err" && ok "$f: $(cat "$TMP/err")" ||
            fail "$f: $(cat "$TMP/err")"
    fi
done

# --- --preprocess errors
"$OQC" run $M --input $I/gray.png --preprocess resize=0 2>"$TMP/err" && fail "resize=0" ||
    { grep -q "bad value '0' for resize" "$TMP/err" && ok "resize=0 refused" || fail "resize=0: $(cat "$TMP/err")"; }
"$OQC" run $M --input $I/gray.png --preprocess fancy 2>"$TMP/err" && fail "unknown preset" ||
    { grep -q "unknown preset 'fancy'" "$TMP/err" && ok "unknown preset refused" || fail "preset: $(cat "$TMP/err")"; }
"$OQC" run $M --input $I/gray.png 2>"$TMP/err" && fail "images without --preprocess" ||
    { grep -q "needs --preprocess" "$TMP/err" && ok "images need --preprocess" || fail "$(cat "$TMP/err")"; }
"$OQC" run $M --input $I/gray.png --preprocess imagenet 2>"$TMP/err" && fail "3 channels into 1" ||
    { grep -q "gives 3 channels" "$TMP/err" && ok "channel mismatch named" || fail "$(cat "$TMP/err")"; }
"$OQC" run $M --input $I/gray.png --preprocess raw,color=gray 2>"$TMP/err" && fail "size mismatch" ||
    { grep -q "gray.png: image is 40x50" "$TMP/err" && ok "size mismatch named" || fail "$(cat "$TMP/err")"; }

# --- folders, lists and labels through the commands (the Fashion model: 1x28x28 gray)
P='resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray'
image_set "$TMP/set"
# sorted path order, recursively: a_cls/photo.png, a_cls/sub/palette.png, b_cls/gray.png, b_cls/photo.jpg
"$IT" "$P" 1x1x28x28 "$TMP/set.npy" "$TMP/set/a_cls/photo.png" "$TMP/set/a_cls/sub/palette.png" \
    "$TMP/set/b_cls/gray.png" "$TMP/set/b_cls/photo.jpg"
"$OQC" run $M --input "$TMP/set" --preprocess "$P" -o "$TMP/run_img.npy" -q &&
    "$OQC" run $M --input "$TMP/set.npy" -o "$TMP/run_npy.npy" -q &&
    cmp -s "$TMP/run_img.npy" "$TMP/run_npy.npy" && ok "run: folder = the same tensors as .npy" ||
    fail "run: folder vs .npy"
printf 'a_cls/photo.png 0\n# a comment\n\na_cls/sub/palette.png 0\nb_cls/gray.png 1\n%s 1\n' \
    "$TMP/set/b_cls/photo.jpg" > "$TMP/set/list.txt"
"$OQC" run $M --input "$TMP/set/list.txt" --preprocess "$P" -o "$TMP/run_list.npy" -q &&
    cmp -s "$TMP/run_list.npy" "$TMP/run_npy.npy" && ok "run: list file (relative and absolute paths)" ||
    fail "run: list file"
"$OQC" run $M --input "$TMP/set" --preprocess "$P" --labels folders >"$TMP/acc1" &&
    "$OQC" run $M --input "$TMP/set" --preprocess "$P" --labels "$TMP/set/list.txt" >"$TMP/acc2" &&
    grep -q "top-1 accuracy: .* of 4)" "$TMP/acc1" && cmp -s "$TMP/acc1" "$TMP/acc2" &&
    ok "labels: folders = list file" || fail "labels folders vs list"
# calibration: the image folder gives the table of the same samples as a .npy, and the
# XML table records the preprocessing
"$OQC" calibrate $M --data "$TMP/set" --preprocess "$P" -o "$TMP/img.trt" -q &&
    "$OQC" calibrate $M --data "$TMP/set.npy" -o "$TMP/npy.trt" -q && cmp -s "$TMP/img.trt" "$TMP/npy.trt" &&
    ok "calibrate: folder = .npy" || fail "calibrate: folder vs .npy"
"$OQC" calibrate $M --data "$TMP/set" --preprocess "$P" --format xml -o "$TMP/img.xml" -q &&
    grep -q 'preprocess="resize=28x28,scale=1/255,mean=0.286:0.286:0.286,std=0.353:0.353:0.353,color=gray,layout=nchw"' "$TMP/img.xml" &&
    xmllint --noout --relaxng docs/calib-table.rng "$TMP/img.xml" 2>/dev/null &&
    ok "XML table stores the spec and validates" || fail "XML table spec"
# eval takes the spec from the table; labels from folders match the .npy labels
"$OQC" eval $M --table "$TMP/img.xml" --data "$TMP/set" --labels folders >"$TMP/ev1" &&
    grep -q "samples: 4" "$TMP/ev1" && grep -q "top-1 accuracy" "$TMP/ev1" &&
    ok "eval: folder, labels folders, spec from the table" || fail "eval on images: $(cat "$TMP/ev1")"
"$OQC" eval $M --table "$TMP/img.xml" --data "$TMP/set.npy" >"$TMP/ev2" &&
    [ "$(sed -n 2p "$TMP/ev1")" = "$(sed -n 2p "$TMP/ev2")" ] &&
    ok "eval: folder agrees with .npy" || fail "eval folder vs npy"
"$OQC" eval $M --table "$TMP/img.xml" --data "$TMP/set" --preprocess raw,color=gray 2>"$TMP/err" &&
    fail "conflicting spec accepted" ||
    { grep -q "calibrated with --preprocess" "$TMP/err" && ok "spec conflict with the table named" ||
        fail "conflict: $(cat "$TMP/err")"; }
"$OQC" compile $M --calib "$TMP/set" --preprocess "$P" -o "$TMP/c" -q &&
    grep -q "resize=28x28" "$TMP/c/README.md" && ok "compile --calib images; README has the spec" ||
    fail "compile with images"
"$OQC" export-qdq $M --calib "$TMP/set" --preprocess "$P" -o "$TMP/q.onnx" -q &&
    ok "export-qdq --calib images" || fail "export-qdq with images"
# a bad image in a folder: the command fails naming it and writes nothing
cp "$TMP/trunc.jpg" "$TMP/set/b_cls/zz.jpg"
"$OQC" calibrate $M --data "$TMP/set" --preprocess "$P" -o "$TMP/bad.trt" -q 2>"$TMP/err" &&
    fail "truncated image in a folder accepted" ||
    { grep -q "zz.jpg: corrupt or truncated JPEG" "$TMP/err" && [ ! -e "$TMP/bad.trt" ] &&
        ok "bad image in a folder: named, no table" || fail "bad image: $(cat "$TMP/err")"; }
for c in "run $M --input $TMP/set -o $TMP/bad_out.npy" \
         "eval $M --table $TMP/img.xml --data $TMP/set --save-int8 $TMP/bad_out.npy" \
         "compile $M --calib $TMP/set -o $TMP/bad_out" "export-qdq $M --calib $TMP/set -o $TMP/bad_out.onnx"; do
    # shellcheck disable=SC2086 # (the words of the command)
    "$OQC" $c --preprocess "$P" -q 2>"$TMP/err" && fail "${c%% *}: truncated image accepted" ||
        { grep -q "zz.jpg: corrupt or truncated JPEG" "$TMP/err" && [ -z "$(ls -d "$TMP"/bad_out* 2>/dev/null)" ] &&
            ok "${c%% *}: bad image named, nothing written" || fail "${c%% *}: $(cat "$TMP/err"; ls -d "$TMP"/bad_out*)"; }
done
rm "$TMP/set/b_cls/zz.jpg"
mkdir "$TMP/set/c_cls"; cp $I/photo.jpg "$TMP/set/loose.jpg"
"$OQC" eval $M --table "$TMP/img.xml" --data "$TMP/set" --labels folders 2>"$TMP/err" &&
    fail "image outside a class folder accepted" ||
    { grep -q "loose.jpg is not inside a class sub-folder" "$TMP/err" && ok "image outside class folders named" ||
        fail "loose: $(cat "$TMP/err")"; }
finish
