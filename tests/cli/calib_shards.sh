#!/bin/sh
# calib_shards.sh - calibration split across machines (docs/calibration.md): the Fashion
# model's 500 calibration samples in 4 shards of unequal size, each pass run per shard
# by GNU parallel, the statistics merged; the table must be byte-identical to one run
# over all 500 samples, for every method and both table formats (exact by construction:
# amax merges by maximum, histograms are integer counts; no tolerance).  Then the
# statistics files' validation: each bad or mismatched file is an error naming it.
. tests/cli/lib.sh
M=models/fashion/fashion_cnn.onnx
D=models/fashion/calib_500.npy
if ! parallel --version 2>/dev/null | grep -q "GNU parallel"; then
    skip "GNU parallel not installed (scripts/install-deps.sh installs it)"
    finish
    exit $?
fi

# slice FROM COUNT OUT: samples [FROM, FROM + COUNT) of $D (v1 header of 128 bytes,
# 1x28x28 float32 samples of 3136 bytes) as a .npy
slice() {
    { npy_header '<f4' "$2, 1, 28, 28"
      tail -c +$((129 + $1 * 3136)) $D | head -c $(($2 * 3136)); } >"$3"
}
mkdir "$TMP/shards"
slice 0 130 "$TMP/shards/s1.npy"
slice 130 120 "$TMP/shards/s2.npy"
slice 250 125 "$TMP/shards/s3.npy"
slice 375 125 "$TMP/shards/s4.npy"
cat "$TMP/shards/"s*.npy | wc -c >"$TMP/n"
[ "$(cat "$TMP/n")" = $((4 * 128 + 500 * 3136)) ] && ok "4 shards of 130+120+125+125 samples" ||
    fail "shards: $(cat "$TMP/n") bytes"

# pass 1 per shard, merge the amax, pass 2 per shard over the merged range (one shard
# with other --threads/--batch: the statistics do not depend on them)
S=$TMP/shards
parallel --will-cite -j2 "$OQC" calibrate $M --data {} --save-stats {.}.amax -q ::: "$S"/s*.npy &&
    "$OQC" calibrate $M --merge-stats "$S"/s*.amax --save-stats "$S/range" -q &&
    parallel --will-cite -j2 "$OQC" calibrate $M --data {} --range "$S/range" \
        --save-stats {.}.hist -q ::: "$S"/s[123].npy &&
    "$OQC" calibrate $M --data "$S/s4.npy" --range "$S/range" --save-stats "$S/s4.hist" \
        --threads 2 --batch 7 -q &&
    ok "pass 1, merge, pass 2 under GNU parallel" || fail "sharded passes"

# The default method chooses its percentiles on inputs: the merging step has none of its
# own and takes them from --val (here all 500 samples, the inputs the single run tunes on).
for method in default entropy max percentile:99.9 mse; do
    m=""
    v=""
    [ $method = default ] && v="--val $D" || m="--method $method"
    for fmt in trt xml; do
        "$OQC" calibrate $M --data $D $m --format $fmt -o "$TMP/one.$method.$fmt" -q &&
            "$OQC" calibrate $M --merge-stats "$S"/s*.hist $m $v --format $fmt -o "$TMP/sh.$fmt" -q &&
            cmp -s "$TMP/one.$method.$fmt" "$TMP/sh.$fmt" &&
            ok "$method, $fmt: sharded table = single run, byte for byte" ||
            fail "$method, $fmt: sharded table differs"
    done
done
# merged in two levels (statistics of shards merged, then merged again): the same
"$OQC" calibrate $M --merge-stats "$S/s1.hist" "$S/s2.hist" --save-stats "$S/s12.hist" -q &&
    "$OQC" calibrate $M --merge-stats "$S/s12.hist" "$S/s3.hist" "$S/s4.hist" --val $D \
        -o "$TMP/two.trt" -q &&
    cmp -s "$TMP/one.default.trt" "$TMP/two.trt" && ok "hierarchical merge: the same table" ||
    fail "hierarchical merge"
# Without --val the default method says it cannot choose and stays at percentile:99.99.
"$OQC" calibrate $M --merge-stats "$S"/s[1234].hist --format xml -o "$TMP/noval.xml" \
    >"$TMP/noval.txt" 2>&1 && grep -q 'note: without calibration inputs' "$TMP/noval.txt" &&
    "$OQC" calibrate $M --data $D --method percentile:99.99 --format xml -o "$TMP/p.xml" -q &&
    cmp -s "$TMP/noval.xml" "$TMP/p.xml" &&
    ok "merged, no --val: a note, and the table of percentile:99.99" ||
    fail "merged without --val: $(head -n 3 "$TMP/noval.txt")"

# err NAME PATTERN CMD...: exit 1, stderr matching PATTERN, and no table left
err() {
    n=$1 p=$2
    shift 2
    rm -f "$TMP/bad.trt"
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc = 1 ] && grep -q -- "$p" "$TMP/err" && [ ! -e "$TMP/bad.trt" ]; then
        ok "$n"
    else
        fail "$n: exit $rc, $(head -c 300 "$TMP/err")"
    fi
}
err "a shard missing: error" "cover 375 samples but their range was measured over 500" \
    "$OQC" calibrate $M --merge-stats "$S"/s[123].hist -o "$TMP/bad.trt"
err "amax statistics give no table" "amax statistics (pass 1) give no table" \
    "$OQC" calibrate $M --merge-stats "$S"/s*.amax -o "$TMP/bad.trt"
err "stages mixed: error naming the file" "$S/s2.hist: stage-2 statistics" \
    "$OQC" calibrate $M --merge-stats "$S/s1.amax" "$S/s2.hist" --save-stats "$TMP/bad.trt"
"$OQC" calibrate $M --data "$S/s1.npy" --range "$S/s1.amax" --save-stats "$S/other.hist" -q
err "shards binned over ranges of other samples: error naming the file" \
    "$S/other.hist: binned over an amax measured on 130 samples, but $S/s1.hist over one of 500" \
    "$OQC" calibrate $M --merge-stats "$S/s1.hist" "$S/other.hist" -o "$TMP/bad.trt"
# the same sample count, another amax (the input's 8 instead of 2.02)
awk 'NR == 6 { $2 = "0x1p+3" } { print }' "$S/range" >"$S/range2"
"$OQC" calibrate $M --data "$S/s2.npy" --range "$S/range2" --save-stats "$S/other2.hist" -q
err "shards binned over different amax: error naming the file and tensor" \
    "$S/other2.hist: tensor 'input' was binned over amax 0x1p+3, but in $S/s1.hist over" \
    "$OQC" calibrate $M --merge-stats "$S/s1.hist" "$S/other2.hist" -o "$TMP/bad.trt"
err "--range of histograms: error" "--range takes the merged amax statistics" \
    "$OQC" calibrate $M --data "$S/s1.npy" --range "$S/s1.hist" --save-stats "$TMP/bad.trt"
err "--bins disagreeing with the statistics" "$S/range: has 2048 bins per histogram; this calibration uses 1024" \
    "$OQC" calibrate $M --data "$S/s1.npy" --range "$S/range" --bins 1024 --save-stats "$TMP/bad.trt"
err "statistics of another model" "$S/s1.hist: holds 15 histograms but models/tiny/conv_basic.onnx" \
    "$OQC" calibrate models/tiny/conv_basic.onnx --merge-stats "$S"/s[1234].hist -o "$TMP/bad.trt"
err "a range not covering the shard: error" "beyond the range .* of $S/s1.amax: the range must merge" \
    "$OQC" calibrate $M --data "$S/s2.npy" --range "$S/s1.amax" --save-stats "$TMP/bad.trt"
err "a shard's --save-stats with -o: error" "a shard's --save-stats writes statistics, not a table" \
    "$OQC" calibrate $M --data "$S/s1.npy" --save-stats "$TMP/x.st" -o "$TMP/bad.trt"
err "--merge-stats with --data: error" "give --data (a shard's passes) or --merge-stats, not both" \
    "$OQC" calibrate $M --data "$S/s1.npy" --merge-stats "$S/s1.hist" -o "$TMP/bad.trt"
printf 'not statistics\n' >"$TMP/junk.st"
err "not a statistics file" "$TMP/junk.st: not an oqc calibration statistics file" \
    "$OQC" calibrate $M --merge-stats "$TMP/junk.st" -o "$TMP/bad.trt"
sed 's/^oqc-calib-stats 1$/oqc-calib-stats 9/' "$S/s1.hist" >"$TMP/v9.st"
err "another format version" "$TMP/v9.st: statistics format '9'; this oqc reads version 1" \
    "$OQC" calibrate $M --merge-stats "$TMP/v9.st" -o "$TMP/bad.trt"
head -n 12 "$S/s1.hist" >"$TMP/trunc.st"
err "a truncated file" "$TMP/trunc.st: ends early" \
    "$OQC" calibrate $M --merge-stats "$TMP/trunc.st" -o "$TMP/bad.trt"
sed '8s/ 10:\([0-9]*\)/ 10:1\1/' "$S/s1.hist" >"$TMP/sum.st"
err "counts not adding up" "$TMP/sum.st: line 8: the bin counts do not add up" \
    "$OQC" calibrate $M --merge-stats "$TMP/sum.st" -o "$TMP/bad.trt"
sed '7s/^t [^ ]*/t inf/' "$S/s1.hist" >"$TMP/inf.st"
err "a non-finite amax" "$TMP/inf.st: line 7: the amax is not a finite non-negative number" \
    "$OQC" calibrate $M --merge-stats "$TMP/inf.st" -o "$TMP/bad.trt"
finish
