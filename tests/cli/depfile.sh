#!/bin/sh
# depfile.sh - `-MD [-MF FILE]` on calibrate, compile and export-qdq: the dependency file
# names every output as a target and every file read (model, external data, table,
# calibration data: tensors, image folders and list files) as a prerequisite, escapes
# names as Make reads them, is written only on success and is read correctly by GNU
# Make itself (an input touched makes the outputs out of date; a deleted input too,
# without "No rule to make target").  The build systems' side (CMake, Ninja) is
# examples.sh.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
D=models/fashion/calib_500.npy

# has FILE LINE: the depfile holds the line exactly
has() { grep -qxF -- "$2" "$1"; }

# calibrate: default name (the table + .d), targets the table and the report
"$OQC" calibrate $M --data $D -o "$TMP/t.xml" --format xml --report "$TMP/r.html" -MD -q &&
    has "$TMP/t.xml.d" "$TMP/t.xml \\" && has "$TMP/t.xml.d" "$TMP/r.html: \\" &&
    has "$TMP/t.xml.d" "  $M \\" && has "$TMP/t.xml.d" "  $D" && has "$TMP/t.xml.d" "$D:" &&
    ok "calibrate -MD: TABLE.d, targets table and report, model and data prerequisites" ||
    { fail "calibrate -MD"; cat "$TMP/t.xml.d"; }

# compile: default OUTDIR/NAME.d; every emitted file a target, NAME.c first (Ninja checks
# the first target against the first output of its edge), model and table prerequisites
"$OQC" compile $M --table "$TMP/t.xml" -o "$TMP/out" -MD -q &&
    n=$(ls "$TMP/out" | grep -vc '\.d$') &&
    [ "$(grep -c "^$TMP/out/" "$TMP/out/fashion_cnn.d")" = "$n" ] &&
    [ "$(head -n 1 "$TMP/out/fashion_cnn.d")" = "$TMP/out/fashion_cnn.c \\" ] &&
    has "$TMP/out/fashion_cnn.d" "  $M \\" && has "$TMP/out/fashion_cnn.d" "  $TMP/t.xml" &&
    ok "compile -MD: OUTDIR/NAME.d, all $n emitted files targets, model and table prerequisites" ||
    { fail "compile -MD"; cat "$TMP/out/fashion_cnn.d"; }

# -MT: the given targets only (for Ninja), the prerequisites unchanged
"$OQC" compile $M --table "$TMP/t.xml" -o "$TMP/out2" -MD -MT "$TMP/out2/fashion_cnn.c" -MT x.h -q &&
    [ "$(head -n 2 "$TMP/out2/fashion_cnn.d")" = "$TMP/out2/fashion_cnn.c \\
x.h: \\" ] && has "$TMP/out2/fashion_cnn.d" "  $TMP/t.xml" &&
    ok "-MT: only the named targets" || { fail "-MT"; cat "$TMP/out2/fashion_cnn.d"; }

# export-qdq with -MF; a model with external data lists its data file (by its real
# path: oqc resolves it to check it stays inside the model's directory)
mknpy "8, 3, 6, 6" $D "$TMP/x.npy"
"$OQC" export-qdq models/tiny/extdata_conv.onnx --calib "$TMP/x.npy" -o "$TMP/q.onnx" -q \
    -MD -MF "$TMP/q.dep" && has "$TMP/q.dep" "$TMP/q.onnx: \\" &&
    has "$TMP/q.dep" "  $(cd models/tiny && pwd -P)/ext_weights.bin \\" && has "$TMP/q.dep" "  $TMP/x.npy" &&
    ok "export-qdq -MD -MF: the external data file is a prerequisite" ||
    { fail "export-qdq -MD -MF"; cat "$TMP/q.dep"; }

# a failed command writes no depfile (and -MF without -MD is an error)
rm -f "$TMP/bad.xml.d"
"$OQC" calibrate $M --data "$TMP/missing.npy" -o "$TMP/bad.xml" -MD -q 2>/dev/null
[ $? = 1 ] && [ ! -e "$TMP/bad.xml.d" ] && [ ! -e "$TMP/bad.xml" ] &&
    ok "failed command: exit 1, no depfile, no table" || fail "failed command left a depfile"
"$OQC" calibrate $M --data $D -o "$TMP/t2.xml" -MF "$TMP/t2.d" -q 2>"$TMP/err"
[ $? = 1 ] && grep -q -- "-MF FILE and -MT TARGET shape the dependency file of -MD" "$TMP/err" &&
    [ ! -e "$TMP/t2.xml" ] && ok "-MF without -MD: error" || fail "-MF without -MD"

# Image data: the folder (and its sub-folder), every image and the list file are
# prerequisites; names with a space, '$' and '#' escaped as Make reads them.
S="$TMP/my set\$1#a"
mkdir -p "$S/a_cls/sub"
cp models/images/photo.jpg "$S/a_cls/"
cp models/images/gray.png "$S/a_cls/sub/"
P='resize=28x28,scale=1/255,mean=0.2860,std=0.3530,color=gray'
"$OQC" calibrate $M --data "$S" --preprocess "$P" -o "$TMP/img.trt" -MD -q &&
    has "$TMP/img.trt.d" "  $TMP/my\\ set\$\$1\\#a \\" &&
    has "$TMP/img.trt.d" "  $TMP/my\\ set\$\$1\\#a/a_cls/photo.jpg \\" &&
    has "$TMP/img.trt.d" "  $TMP/my\\ set\$\$1\\#a/a_cls/sub \\" &&
    has "$TMP/img.trt.d" "  $TMP/my\\ set\$\$1\\#a/a_cls/sub/gray.png" &&
    ok "image folder: folders and images prerequisites, space/\$/# escaped" ||
    { fail "image folder depfile"; cat "$TMP/img.trt.d"; }
printf 'a_cls/photo.jpg\n' >"$S/list.txt"
"$OQC" calibrate $M --data "$S/list.txt" --preprocess "$P" -o "$TMP/lst.trt" -MD -q &&
    has "$TMP/lst.trt.d" "  $TMP/my\\ set\$\$1\\#a/list.txt \\" &&
    has "$TMP/lst.trt.d" "  $TMP/my\\ set\$\$1\\#a/a_cls/photo.jpg" &&
    ! grep -q gray.png "$TMP/lst.trt.d" &&
    ok "list file: the list and the images it names (only those)" ||
    { fail "list file depfile"; cat "$TMP/lst.trt.d"; }

# GNU Make reads it: up to date after the build; a touched image or a deleted one
# (the empty rules) makes the table out of date.  (Calibrated again first: list.txt,
# written since, changed the folder, which is a prerequisite.)
"$OQC" calibrate $M --data "$S" --preprocess "$P" -o "$TMP/img.trt" -MD -q
cat >"$TMP/Makefile" <<EOF
$TMP/img.trt:
	@echo rebuilt
-include $TMP/img.trt.d
EOF
q=$(make -s -q -f "$TMP/Makefile" "$TMP/img.trt"; echo $?)
sleep 1 # (file times of one second on some file systems)
touch "$S/a_cls/sub/gray.png"
t=$(make -s -q -f "$TMP/Makefile" "$TMP/img.trt"; echo $?)
"$OQC" calibrate $M --data "$S" --preprocess "$P" -o "$TMP/img.trt" -MD -q
rm "$S/a_cls/sub/gray.png"
r=$(make -s -f "$TMP/Makefile" "$TMP/img.trt" 2>&1)
[ "$q" = 0 ] && [ "$t" = 1 ] && [ "$r" = rebuilt ] &&
    ok "make: up to date, then out of date after touch and after deleting an input" ||
    fail "make with the depfile: up-to-date $q, after touch $t, after delete '$r'"
finish
