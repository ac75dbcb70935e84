#!/bin/sh
# run.sh - a libFuzzer campaign on tests/fuzz/fuzz_model.c (called by `make fuzz`).
#   sh tests/fuzz/run.sh FUZZER [SECONDS]
# Seeds: the committed small models (models/tiny/, tests/bad/, tests/fuzz/regress/), the
# test images (models/images/) and the data files of tests/fuzz/seeds/ (.npy, TensorRT
# cache, XML table, OQCPB + TensorProto, JPEG and PNG, OQCPP spec + image, OQCLIST list,
# XML IR + side data; made by tests/fuzz/make_seeds.py); files up to 64 KB.
# The growing corpus is build/fuzz/corpus/, inputs that crash or trip a sanitizer go to
# build/fuzz/findings/ (libFuzzer stops at the first one and prints how
# to reproduce it).  To keep a finding as a regression test: fix the bug, then copy the
# file to tests/fuzz/regress/ with a name that says what it was.
set -u
cd "$(dirname "$0")/../.." || exit 2
fuzzer=$1
seconds=${2:-300}
out=build/fuzz
mkdir -p "$out/corpus" "$out/findings" "$out/tmp"
find models/tiny models/images tests/bad tests/fuzz/regress tests/fuzz/seeds -type f -size -65k \
    \( -name '*.onnx' -o -name '*.bin' -o -name '*.xml' -o -name '*.npy' -o -name '*.trt' \
       -o -name '*.oqcpb' -o -name '*.jpg' -o -name '*.jpeg' -o -name '*.png' \) \
    -exec cp {} "$out/corpus/" \;
echo "fuzz: $fuzzer for $seconds s, corpus $out/corpus ($(ls "$out/corpus" | wc -l) files)"
OQC_FUZZ_TMP=$out/tmp "$fuzzer" "$out/corpus" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$out/findings/" -print_final_stats=1
st=$?
if [ "$st" = 0 ]; then
    echo "fuzz: no crash in $seconds s"
else
    echo "fuzz: finding(s) in $out/findings/ (exit $st)"
fi
exit $st
