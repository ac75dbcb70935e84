#!/bin/sh
# hardening_files.sh - the files oqc reads and writes (issue 31, items 5, 6 and 9):
#   - an output that is one of the command's inputs (the same name, another name through
#     a symbolic or hard link, or the side data a model names) is refused for every
#     command and output option, and the input is left unchanged;
#   - external data and XML side data must resolve (symbolic links followed) inside the
#     model's directory;
#   - a FIFO, a device or a directory given where oqc reads a file is refused at once
#     (never a hang: every command runs under `timeout`), for every path oqc reads.
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

m0=models/tiny/conv_basic.onnx
cd_tmp=$TMP/w
mkdir -p "$cd_tmp"
cp "$m0" "$cd_tmp/m.onnx"
npy_f32 "2, 3, 8, 8" "$cd_tmp/c.npy"
printf 'TRT-8601-EntropyCalibration\nx: 3c010204\ny: 3c010204\n' >"$cd_tmp/t.cache"
"$OQC" calibrate "$cd_tmp/m.onnx" --data "$cd_tmp/c.npy" --format xml -o "$cd_tmp/t.xml" -q
"$OQC" dump "$cd_tmp/m.onnx" --format xml -o "$cd_tmp/m.xml"
head -c 128 /dev/zero >"$TMP/lab"; i64s 0 1 >>"$TMP/lab"
h="{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }"
{ printf '\223NUMPY\001\000v\000%s' "$h"; printf '%*s\n' $((118 - ${#h} - 1)) ""; i64s 0 1; } >"$cd_tmp/l.npy"
cp -r "$cd_tmp" "$TMP/orig"
ln -s m.onnx "$cd_tmp/link.onnx"
ln "$cd_tmp/c.npy" "$cd_tmp/hard.npy"

# refused OUT CMD ARGS...: exit 1 naming OUT as an input, every input file unchanged
refused() {
    what=$1
    shift
    out=$(cd "$cd_tmp" && timeout 60 "$OLDPWD/$OQC" "$@" 2>&1); st=$?
    if [ $st = 1 ] && echo "$out" | grep -q "refusing to overwrite it"; then
        ok "$what: refused"
    else
        fail "$what: exit $st: $out"
    fi
    for f in m.onnx c.npy t.cache t.xml m.xml m.xml.data l.npy; do
        cmp -s "$cd_tmp/$f" "$TMP/orig/$f" || fail "$what: $f changed"
    done
    [ -z "$(ls -a "$cd_tmp" | grep 'tmp[0-9]')" ] || fail "$what: temporaries left: $(ls -a "$cd_tmp")"
}
OQC_ABS=$OQC
case "$OQC" in /*) OQC=${OQC#/}; cd /; OLDPWD=/; cd - >/dev/null ;; esac
refused "dump -o MODEL" dump m.onnx -o m.onnx
refused "dump -o LINK-TO-MODEL" dump m.onnx -o link.onnx
refused "dump --format xml -o MODEL" dump m.onnx --format xml -o m.onnx
refused "dump --format dot -o MODEL" dump m.onnx --format dot -o m.onnx
refused "dump XML -o itself" dump m.xml --format xml -o m.xml
refused "dump XML: its side data as output" dump m.xml --format text -o m.xml.data
ln -s m.xml.data "$cd_tmp/other.xml.data"
refused "dump XML: new dump whose side data is the input's" dump m.xml --format xml -o other.xml
refused "calibrate -o MODEL" calibrate m.onnx --data c.npy -o m.onnx
refused "calibrate -o DATA" calibrate m.onnx --data c.npy -o c.npy
refused "calibrate -o HARDLINK-TO-DATA" calibrate m.onnx --data hard.npy -o c.npy
refused "calibrate -o TABLE" calibrate m.onnx --data c.npy --table t.cache -o t.cache
refused "calibrate --report MODEL" calibrate m.onnx --data c.npy -o new.cache --report m.onnx
refused "calibrate --report DATA" calibrate m.onnx --data c.npy -o new.cache --report c.npy
[ -e "$cd_tmp/new.cache" ] && fail "calibrate with a refused --report still wrote its table" ||
    ok "calibrate with a refused --report writes no table"
refused "run -o INPUT" run m.onnx --input c.npy -o c.npy
refused "run -o MODEL" run m.onnx --input c.npy -o m.onnx
refused "eval --save-int8 MODEL" eval m.onnx --data c.npy --calib c.npy --save-int8 m.onnx
refused "eval --save-fp32 DATA" eval m.onnx --data c.npy --calib c.npy --save-fp32 c.npy
mkdir -p "$cd_tmp/d"; cp "$cd_tmp/m.onnx" "$cd_tmp/d/m.c"; cp "$cd_tmp/d/m.c" "$TMP/orig/dmc"
refused "compile d/m.c -o d --name m" compile d/m.c -o d --name m --precision fp32
cmp -s "$cd_tmp/d/m.c" "$TMP/orig/dmc" && ok "d/m.c unchanged" || fail "d/m.c changed"
cp "$cd_tmp/t.cache" "$cd_tmp/d/README.md"; cp "$cd_tmp/t.cache" "$TMP/orig/readme"
refused "compile: README.md is the table" compile m.onnx --table d/README.md -o d --name q
cmp -s "$cd_tmp/d/README.md" "$TMP/orig/readme" && ok "d/README.md unchanged" || fail "README changed"
refused "export-qdq -o MODEL" export-qdq m.onnx --calib c.npy -o m.onnx
refused "export-qdq -o CALIB" export-qdq m.onnx --calib c.npy -o c.npy
refused "export-qdq -o TABLE" export-qdq m.onnx --table t.xml -o t.xml
OQC=$OQC_ABS

# External data and side data through symbolic links
mkdir -p "$TMP/ext" "$TMP/outside"
cp tests/bad/ext_short.onnx "$TMP/ext/m.onnx"
zeros 512 >"$TMP/ext/real.bin"
zeros 512 >"$TMP/outside/w.bin"
cp "$TMP/ext/real.bin" "$TMP/ext/ext_short.bin"
out=$("$OQC" check "$TMP/ext/m.onnx" 2>&1)
check "external data inside the folder: check exits 0 ($out)" [ $? = 0 ]
ln -sf real.bin "$TMP/ext/ext_short.bin"
out=$("$OQC" check "$TMP/ext/m.onnx" 2>&1)
check "external data: a link inside the folder is followed ($out)" [ $? = 0 ]
for target in "$TMP/outside/w.bin" ../outside/w.bin /etc/passwd; do
    ln -sf "$target" "$TMP/ext/ext_short.bin"
    out=$("$OQC" check "$TMP/ext/m.onnx" 2>&1); st=$?
    [ $st = 1 ] && echo "$out" | grep -q "outside the model's directory" &&
        ok "external data linked to $target refused" || fail "external data -> $target: $st $out"
done
rm "$TMP/ext/ext_short.bin"
ln -s ../outside "$TMP/ext/sub"
xm_begin side; xm_input x f32 1x4; xm_const b f32 1x4 f32s 1 2 1 2; xm_node Add x,b y; xm_end y
mkdir -p "$TMP/sd"; cp "$TMP/side.xml" "$TMP/side.xml.data" "$TMP/sd/"
out=$("$OQC" check "$TMP/sd/side.xml" 2>&1)
check "XML side data inside the folder: check exits 0 ($out)" [ $? = 0 ]
mv "$TMP/sd/side.xml.data" "$TMP/outside/side.xml.data"
ln -s ../outside/side.xml.data "$TMP/sd/side.xml.data"
out=$("$OQC" check "$TMP/sd/side.xml" 2>&1); st=$?
[ $st = 1 ] && echo "$out" | grep -q "outside the model's directory" &&
    ok "XML side data linked outside refused" || fail "XML side data outside: $st $out"
rm "$TMP/sd/side.xml.data"; ln -s /etc/passwd "$TMP/sd/side.xml.data"
out=$("$OQC" check "$TMP/sd/side.xml" 2>&1); st=$?
[ $st = 1 ] && echo "$out" | grep -q "outside the model's directory" &&
    ok "XML side data linked to /etc/passwd refused" || fail "XML side data passwd: $st $out"

# FIFOs, devices and directories wherever oqc reads a file
mkfifo "$TMP/fifo" "$TMP/fifo.npy" "$TMP/fifo.pb" "$TMP/fifo.xml" "$TMP/fifo.onnx"
mkdir -p "$TMP/dir.npy" "$TMP/dir.onnx"
# not_file KIND CMD ARGS...: exits 1 within the timeout with an error saying what it is
not_file() {
    kind=$1
    shift
    out=$(timeout 20 "$OQC" "$@" 2>&1); st=$?
    if [ $st = 1 ] && echo "$out" | grep -q "is $kind"; then
        ok "$*: refused ($kind)"
    else
        fail "$*: exit $st (124: hung): $out"
    fi
}
m=$cd_tmp/m.onnx c=$cd_tmp/c.npy
for p in "$TMP/fifo.onnx:a FIFO" "/dev/null:a character device" "$TMP/dir.onnx:a directory" \
         "$TMP/fifo.xml:a FIFO"; do
    f=${p%%:*} k=${p#*:}
    not_file "$k" check "$f"
    not_file "$k" dump "$f"
done
for p in "$TMP/fifo.npy:a FIFO" "$TMP/fifo.pb:a FIFO" "$TMP/fifo:a FIFO" "/dev/zero:a character device"; do
    f=${p%%:*} k=${p#*:}
    not_file "$k" run "$m" --input "$f"
done
# run --input DIR reads the tensor or image files in it (docs/images.md): an empty one
# is an error saying so, and one holding a FIFO is refused without waiting on it.
out=$(timeout 20 "$OQC" run "$m" --input "$TMP/dir.npy" 2>&1); st=$?
[ $st = 1 ] && echo "$out" | grep -q "no .npy, .pb, .jpg, .jpeg or .png files" &&
    ok "run --input EMPTYDIR: $out" || fail "run --input EMPTYDIR: exit $st: $out"
out=$(timeout 20 "$OQC" run "$m" --input "$TMP" 2>&1); st=$?
[ $st = 1 ] && echo "$out" | grep -q "fifo" && ok "run --input DIR with a FIFO: refused ($out)" ||
    fail "run --input DIR with a FIFO: exit $st (124: hung): $out"
# image data (docs/images.md): an image, a list file or a labels list that is a FIFO
mkdir -p "$TMP/imgs"; mkfifo "$TMP/imgs/a.jpg" "$TMP/list.txt"
pp="--preprocess raw,resize=8x8"  # (m takes 1x3x8x8)
not_file "a FIFO" run "$m" --input "$TMP/imgs" $pp
not_file "a FIFO" run "$m" --input "$TMP/imgs/a.jpg" $pp
not_file "a FIFO" run "$m" --input "$TMP/list.txt" $pp
not_file "a FIFO" run "$m" --input models/images/gray.png $pp --labels "$TMP/list.txt"
not_file "a FIFO" calibrate "$m" --data "$TMP/imgs" $pp -o "$TMP/t1.cache"
for p in "$TMP/fifo.npy:a FIFO" "/dev/null:a character device" "$TMP/dir.npy/:a directory"; do
    f=${p%%:*} k=${p#*:}
    case $f in */) f=$TMP/dir.onnx ;; esac
    not_file "$k" eval "$m" --data "$c" --table "$cd_tmp/t.cache" --labels "$f"
    not_file "$k" run "$m" --input "$c" --labels "$f"
    [ "$f" = "$TMP/dir.onnx" ] && continue
    not_file "$k" calibrate "$m" --data "$f" -o "$TMP/t1.cache"
    not_file "$k" compile "$m" --calib "$f" -o "$TMP/o1"
    not_file "$k" eval "$m" --data "$f" --table "$cd_tmp/t.cache"
done
# a directory of calibration data is a set of .npy/.pb (or image) files: an empty one is an error
for cmd in calibrate compile; do
    out=$("$OQC" $cmd "$m" $([ $cmd = calibrate ] && echo --data || echo --calib) "$TMP/dir.npy" -o "$TMP/o3" 2>&1)
    [ $? = 1 ] && echo "$out" | grep -q "no .npy, .pb, .jpg, .jpeg or .png files" && ok "$cmd: empty data directory refused" ||
        fail "$cmd: empty data directory: $out"
done
for p in "$TMP/fifo:a FIFO" "$TMP/fifo.xml:a FIFO" "/dev/null:a character device" "$TMP/dir.npy:a directory"; do
    f=${p%%:*} k=${p#*:}
    not_file "$k" compile "$m" --table "$f" -o "$TMP/o2"
    not_file "$k" calibrate "$m" --data "$c" --table "$f" -o "$TMP/t2.cache"
done
cp tests/bad/ext_short.onnx "$TMP/ext/m2.onnx"
rm -f "$TMP/ext/ext_short.bin"; mkfifo "$TMP/ext/ext_short.bin"
not_file "a FIFO" check "$TMP/ext/m2.onnx"
rm "$TMP/sd/side.xml.data"; mkfifo "$TMP/sd/side.xml.data"
not_file "a FIFO" check "$TMP/sd/side.xml"
[ -e "$TMP/t1.cache" ] || [ -e "$TMP/o1" ] || [ -e "$TMP/o2" ] || [ -e "$TMP/t2.cache" ] &&
    fail "an output was written by a refused command" || ok "no output written by refused commands"
finish
