#!/bin/sh
# main_images.sh - the driver of `oqc compile --main` on images (docs/cli.md): for a
# model compiled with --preprocess it is built with runtime/app/oqc_image.c (libjpeg,
# libpng) and takes JPEG/PNG files and folders, preprocessed as the model's spec says,
# giving bit for bit oqc's outputs on the same images (INT8: oqc eval --save-int8;
# FP32: oqc run) and its own outputs on the same images as a .npy (oqc's tensors);
# bad images fail naming the file, leaving no -o file; without a spec, or built with
# IMAGES=0, the driver has no image code and refuses images clearly.  Tolerance: none
# (the same decoder, resize and float operations in the same order).
. tests/cli/lib.sh
# builds C with the system compiler: the same in every configuration, run in one (clang's:
# the default configuration is the longest of the three)
only_config clang
M=models/fashion/fashion_cnn.onnx
D=models/fashion
I=models/images
IT=${BUILD:-build}/tests/tools/image_tensor
P='resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray'
STRICT="-Wall -Wextra -Werror -pedantic"
image_set "$TMP/set"
# the folder's images in sorted path order (what oqc and the driver read)
SORTED="$TMP/set/a_cls/photo.png $TMP/set/a_cls/sub/palette.png $TMP/set/b_cls/gray.png $TMP/set/b_cls/photo.jpg"

"$OQC" compile $M --calib $D/calib_500.npy $NAMED --preprocess "$P" -o "$TMP/m" --name fashion --main -q &&
    [ -f "$TMP/m/oqc_image.c" ] && [ -f "$TMP/m/oqc_image.h" ] && grep -q -- '-ljpeg -lpng' "$TMP/m/Makefile" &&
    ok "compile --main --preprocess: oqc_image.c/.h and -ljpeg -lpng in the Makefile" ||
    fail "compile --main with a spec"
for cc in gcc clang; do
    command -v $cc >/dev/null || { skip "no $cc"; continue; }
    rm -f "$TMP/m/fashion_main"
    make -s -C "$TMP/m" CC=$cc CFLAGS="$STRICT" >"$TMP/make.log" 2>&1 && [ -x "$TMP/m/fashion_main" ] &&
        ok "$cc builds the driver with images ($STRICT)" || fail "$cc: $(head -n 5 "$TMP/make.log")"
done

# INT8: the folder gives oqc eval's INT8 outputs on the same folder, bit for bit
"$OQC" eval $M --calib $D/calib_500.npy $NAMED --data "$TMP/set" --preprocess "$P" --save-int8 "$TMP/e.npy" -q >/dev/null
"$TMP/m/fashion_main" -o "$TMP/d.npy" "$TMP/set" >"$TMP/run.txt" && same_data "$TMP/d.npy" "$TMP/e.npy" &&
    ok "folder: outputs = oqc eval --save-int8 on the folder (4 images)" || fail "folder: $(cat "$TMP/run.txt")"
i=0
for f in $SORTED; do
    grep -q "sample $i ($f): logits:" "$TMP/run.txt" || fail "sample $i is not $f"
    i=$((i + 1))
done
[ $i = 4 ] && [ "$(grep -c 'logits:' "$TMP/run.txt")" = 4 ] && ok "sorted path order, notes.txt skipped" ||
    fail "order: $(cat "$TMP/run.txt")"
# the same images as oqc's tensors (.npy) and one by one
"$IT" "$P" 1x1x28x28 "$TMP/set.npy" $SORTED
"$TMP/m/fashion_main" -o "$TMP/n.npy" "$TMP/set.npy" >/dev/null && same_data "$TMP/n.npy" "$TMP/d.npy" &&
    ok "images = oqc's tensors of them as .npy" || fail "images vs .npy"
"$TMP/m/fashion_main" -o "$TMP/one.npy" $SORTED >/dev/null && same_data "$TMP/one.npy" "$TMP/d.npy" &&
    ok "image files one by one = the folder" || fail "files vs folder"

# bad images: the file named, exit 1, no -o file
head -c 2000 $I/photo.jpg > "$TMP/trunc.jpg"
head -c 3000 $I/photo.png > "$TMP/trunc.png"
echo "not an image" > "$TMP/text.png"
mkdir "$TMP/empty"
for c in "trunc.jpg:corrupt or truncated JPEG" "trunc.png:corrupt or truncated PNG" \
         "text.png:not a JPEG or PNG" "cmyk.jpg:CMYK JPEG is not supported" \
         "big.png:too large" "empty:no JPEG or PNG image in the folder"; do
    f=${c%%:*} want=${c#*:}
    p="$TMP/$f"; [ -e "$p" ] || p=$I/$f
    if "$TMP/m/fashion_main" -o "$TMP/bad.npy" "$TMP/set" "$p" >/dev/null 2>"$TMP/err"; then
        fail "$f accepted"
    else
        grep -q "^$p: .*$want" "$TMP/err" && [ "$(wc -l <"$TMP/err")" = 1 ] && [ ! -e "$TMP/bad.npy" ] && ok "$f: $(cat "$TMP/err"); no -o file" ||
            fail "$f: $(cat "$TMP/err")"
    fi
done
# documented conversions: 16-bit and RGBA PNGs as their 8-bit RGB twin, as oqc does
"$TMP/m/fashion_main" -o "$TMP/c.npy" $I/rgb8.png $I/rgb16.png $I/rgba.png >/dev/null &&
    "$OQC" eval $M --calib $D/calib_500.npy $NAMED --data $I/rgb8.png --preprocess "$P" --save-int8 "$TMP/c8.npy" -q >/dev/null &&
    [ "$(data_of "$TMP/c.npy" | od -An -v -tx1 | tr -d ' \n' | fold -w 80 | sort -u | wc -l)" = 1 ] &&
    same_data "$TMP/c.npy" "$TMP/c8.npy" 40 && ok "16-bit and RGBA PNGs as their 8-bit twin" ||
    fail "16-bit / RGBA conversion"

# --bench takes an image as its input
"$TMP/m/fashion_main" --bench 2 --warmup 1 $I/photo.jpg >"$TMP/b.txt" && grep -q "latency over 2 runs" "$TMP/b.txt" &&
    ok "driver --bench IMAGE" || fail "--bench image: $(cat "$TMP/b.txt")"

# IMAGES=0: no libjpeg/libpng, images refused by name
rm -f "$TMP/m/fashion_main"
make -s -C "$TMP/m" IMAGES=0 CFLAGS="$STRICT" >"$TMP/make.log" 2>&1 &&
    ! nm "$TMP/m/fashion_main" | grep -q jpeg_ && ok "make IMAGES=0: built without libjpeg" ||
    fail "IMAGES=0: $(head -n 5 "$TMP/make.log")"
"$TMP/m/fashion_main" "$TMP/set" >/dev/null 2>"$TMP/err" && fail "IMAGES=0 read a folder" ||
    { grep -q "a folder: this driver reads images only" "$TMP/err" && ok "IMAGES=0: folder refused clearly" ||
        fail "IMAGES=0 folder: $(cat "$TMP/err")"; }
"$TMP/m/fashion_main" $I/photo.png >/dev/null 2>"$TMP/err" && fail "IMAGES=0 read an image" ||
    { grep -q "an image: this driver reads images only" "$TMP/err" && ok "IMAGES=0: image refused clearly" ||
        fail "IMAGES=0 image: $(cat "$TMP/err")"; }

# no spec: no image code at all
"$OQC" compile $M --calib $D/calib_500.npy $NAMED -o "$TMP/plain" --name fashion --main -q &&
    [ ! -e "$TMP/plain/oqc_image.c" ] && ! grep -q jpeg "$TMP/plain/Makefile" &&
    make -s -C "$TMP/plain" >/dev/null 2>&1 && ok "no --preprocess: driver without image code" ||
    fail "driver without a spec"

# FP32: the folder gives oqc run's outputs
"$OQC" compile $M --precision fp32 --preprocess "$P" -o "$TMP/f" --name f --main -q &&
    make -s -C "$TMP/f" >/dev/null 2>&1 && "$TMP/f/f_main" -o "$TMP/fd.npy" "$TMP/set" >/dev/null &&
    "$OQC" run $M --input "$TMP/set" --preprocess "$P" -o "$TMP/fr.npy" -q &&
    same_data "$TMP/fd.npy" "$TMP/fr.npy" && ok "FP32 driver on the folder = oqc run" ||
    fail "FP32 driver vs oqc run"
finish
