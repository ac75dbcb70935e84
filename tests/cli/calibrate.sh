#!/bin/sh
# calibrate.sh - `oqc calibrate` end to end on the bundled Fashion-MNIST model: a table
# with a line per activation tensor of the optimised graph, both table formats, the
# HTML report, importing a table, and clear errors for bad data.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx

# A small calibration set (the first 64 of the 500 images) keeps the test fast; the
# full set is measured by `make bench`.
mkdir -p "$TMP/data"
"$OQC" calibrate "$M" --data models/fashion/calib_500.npy -o "$TMP/full.trt" -q &&
    ok "calibrate on 500 images" || fail "calibrate on 500 images"
head -n 1 "$TMP/full.trt" | grep -q '^TRT-[0-9]*-EntropyCalibration$' &&
    ok "TRT header" || fail "TRT header: $(head -n 1 "$TMP/full.trt")"
lines=$(tail -n +2 "$TMP/full.trt" | wc -l)
bad=$(tail -n +2 "$TMP/full.trt" | grep -cv ': [0-9a-f]\{8\}$')
[ "$bad" = 0 ] && ok "every line is 'name: 8 hex digits'" || fail "$bad malformed lines"
# One line per float activation of the optimised graph: the input, every node output
# of float type, and the concat buffer written through views.
want=$("$OQC" dump "$M" --after all | awk '
    /^input / {n++}
    /^node / {sub(/.*-> \(/, ""); c = gsub(/ f32\[/, "&"); n += c}
    END {print n + 1}')
[ "$lines" = "$want" ] && ok "$lines tensors calibrated (as the optimised graph holds)" ||
    fail "$lines tensors in the table, expected $want"
grep -q '^logits: ' "$TMP/full.trt" && ok "graph output calibrated" || fail "no logits line"

"$OQC" calibrate "$M" --data models/fashion/calib_500.npy --format xml -o "$TMP/t.xml" \
    --report "$TMP/r.html" -q && ok "xml table and report" || fail "xml table and report"
xmllint --noout --relaxng docs/calib-table.rng "$TMP/t.xml" 2>/dev/null &&
    ok "xml table validates" || fail "xml table does not validate"
grep -q "<svg" "$TMP/r.html" && ! grep -q "<script" "$TMP/r.html" &&
    ok "report has plots and no script" || fail "report content"

for m in max percentile:99.99 mse; do
    "$OQC" calibrate "$M" --data models/fashion/calib_500.npy --method "$m" -o "$TMP/$m.trt" -q &&
        ok "method $m" || fail "method $m"
done
# max: every threshold is the tensor's amax; entropy: at most amax.
cmp -s "$TMP/max.trt" "$TMP/full.trt" && fail "max and entropy tables are identical" ||
    ok "entropy differs from max"

# The table does not depend on the batch size: --batch 1 and --batch 7 give the same
# bytes, in both formats (the XML one also records amax and the sample count).  On the
# first 64 images (64 = 9*7 + 1: the short last batch is covered too).
mknpy "64, 1, 28, 28" models/fashion/calib_500.npy "$TMP/c64.npy"
for b in 1 7; do
    "$OQC" calibrate "$M" --data "$TMP/c64.npy" --batch $b -o "$TMP/b$b.trt" -q
    "$OQC" calibrate "$M" --data "$TMP/c64.npy" --batch $b --format xml -o "$TMP/b$b.xml" -q
done
cmp -s "$TMP/b1.trt" "$TMP/b7.trt" && ok "--batch 1 and --batch 7: same TRT table" ||
    fail "TRT tables differ between --batch 1 and 7: $(diff "$TMP/b1.trt" "$TMP/b7.trt" | head -4)"
cmp -s "$TMP/b1.xml" "$TMP/b7.xml" && ok "--batch 1 and --batch 7: same XML table" ||
    fail "XML tables differ between --batch 1 and 7"
grep -q 'samples="64"' "$TMP/b7.xml" && ok "64 samples counted" || fail "sample count"
# Nor on the thread count: --threads N runs N workers on disjoint samples and merges
# their integer counts.
for t in 1 3; do
    "$OQC" calibrate "$M" --data "$TMP/c64.npy" --threads $t --batch 2 --format xml -o "$TMP/t$t.xml" -q
done
cmp -s "$TMP/t1.xml" "$TMP/b1.xml" && cmp -s "$TMP/t3.xml" "$TMP/b1.xml" &&
    ok "--threads 1 and --threads 3 (with --batch 2): the same table" ||
    fail "tables differ with the thread count"

# Importing a table: the tensors it names keep its scale.
printf 'TRT-8601-EntropyCalibration\ninput: 3c88edfc\n' > "$TMP/user.trt"
"$OQC" calibrate "$M" --data models/fashion/calib_500.npy --table "$TMP/user.trt" -o "$TMP/imp.trt" -q
grep -q '^input: 3c88edfc$' "$TMP/imp.trt" && ok "imported scale kept" || fail "imported scale lost"

# Writing to something that is not a regular file (a FIFO here, /dev/null in scripts)
# writes it directly and leaves it what it was (no temporary renamed over it).
mkfifo "$TMP/fifo"
cat "$TMP/fifo" > "$TMP/fifo.out" &
"$OQC" calibrate "$M" --data "$TMP/c64.npy" -o "$TMP/fifo" -q
wait
[ -p "$TMP/fifo" ] && grep -q '^TRT-' "$TMP/fifo.out" && ok "table written through a FIFO, FIFO kept" ||
    fail "FIFO output: $(ls -l "$TMP/fifo")"
cat "$TMP/fifo" > /dev/null &
"$OQC" dump "$M" -o "$TMP/fifo"
wait
[ -p "$TMP/fifo" ] && ok "dump through a FIFO, FIFO kept" || fail "dump FIFO output"

# Bad data.
printf 'not numpy' > "$TMP/data/bad.npy"
"$OQC" calibrate "$M" --data "$TMP/data" -o "$TMP/x.trt" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "bad.npy" "$TMP/err" && ok "bad .npy named" || fail "bad npy: $st $(cat "$TMP/err")"
[ ! -e "$TMP/x.trt" ] && ok "no table left behind" || fail "a table was written"
"$OQC" calibrate "$M" --data models/fashion/test_labels_1000.npy -o "$TMP/x.trt" 2>"$TMP/err"; st=$?
[ "$st" = 1 ] && grep -q "test_labels_1000.npy" "$TMP/err" && ok "wrong shape named" ||
    fail "wrong-shape data: $st $(cat "$TMP/err")"
"$OQC" calibrate "$M" --data /nonexistent -o "$TMP/x.trt" 2>/dev/null; st=$?
[ "$st" = 1 ] && ok "missing data dir" || fail "missing data dir exit $st"
"$OQC" calibrate "$M" --data models/fashion/calib_500.npy --method kl -o "$TMP/x.trt" 2>/dev/null; st=$?
[ "$st" = 1 ] && ok "unknown method" || fail "unknown method exit $st"
finish
