#!/bin/sh
# report_render.sh - the HTML calibration report (compiler/calib/calib_report.c) renders in a
# real browser. The unit test binary writes its sample report (8 tensors: entropy with
# divergence curves, max, percentile, mse, an imported entry, an empty histogram, a name
# to escape) to $OQC_REPORT_OUT; headless Chromium (Debian package chromium) screenshots
# it and the PNG must not be blank: a PNG signature, more than 50 KB, and more than 16
# distinct colours (with ImageMagick's identify) or else at least 30% of its pixel rows
# not one flat colour (with python3, standard library only). Without chromium the render
# check is a skip (counted and listed by tests/run.sh; scripts/install-deps.sh installs
# chromium, and tests/expected-to-run.txt makes the skip fail make check).
# OQC_KEEP_SCREENSHOT=FILE keeps a copy of the screenshot.
. tests/cli/lib.sh
BUILD=${BUILD:-build}
BIN=$BUILD/tests/test_calib_report
REPORT=$TMP/report.html

if [ ! -x "$BIN" ]; then
    fail "$BIN missing (make $BIN)"
    finish
    exit
fi
if OQC_REPORT_OUT=$REPORT "$BIN" test_sample_report >"$TMP/unit.log" 2>&1 && [ -s "$REPORT" ]; then
    ok "sample report written ($(wc -c <"$REPORT") bytes)"
else
    fail "sample report: $(tail -n 5 "$TMP/unit.log")"
    finish
    exit
fi

if ! command -v chromium >/dev/null 2>&1; then
    skip "render: chromium not installed (scripts/install-deps.sh installs it)"
    finish
    exit
fi

# No network, no profile of the user's, no GPU; a timeout in case the browser hangs.
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --hide-scrollbars --user-data-dir="$TMP/profile" --screenshot="$TMP/r.png" \
    --window-size=1280,2000 "file://$REPORT" >"$TMP/chromium.log" 2>&1
st=$?
png=$TMP/r.png
if [ "$st" != 0 ] || [ ! -s "$png" ]; then
    fail "chromium exit $st, no screenshot: $(tail -n 3 "$TMP/chromium.log")"
    finish
    exit
fi
[ -n "${OQC_KEEP_SCREENSHOT:-}" ] && cp "$png" "$OQC_KEEP_SCREENSHOT"

sig=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
check "screenshot is a PNG" [ "$sig" = 89504e470d0a1a0a ]
size=$(wc -c <"$png")
# Measured with Debian's Chromium: a page holding one word screenshots to about 12 KB,
# the sample report to about 230 KB.
if [ "$size" -gt 51200 ]; then
    ok "screenshot not blank ($size bytes)"
else
    fail "screenshot only $size bytes: blank page?"
fi
if command -v identify >/dev/null 2>&1; then
    colours=$(identify -format '%k' "$png" 2>/dev/null)
    if [ "${colours:-0}" -gt 16 ]; then
        ok "screenshot has $colours colours"
    else
        fail "screenshot has ${colours:-no} colours: blank page?"
    fi
elif command -v python3 >/dev/null 2>&1; then
    # Python's standard library only: inflate the image data and count the pixel rows
    # that are not one flat colour (after PNG filtering, a flat row is one byte repeated).
    rows=$(python3 -I - "$png" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", d[16:29])
bpp = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype, 0) * depth // 8
idat, i = b"", 8
while i < len(d):
    n, kind = struct.unpack(">I4s", d[i:i + 8])
    if kind == b"IDAT":
        idat += d[i + 8:i + 8 + n]
    i += 12 + n
if not bpp or interlace:
    print(-1)
else:
    raw, stride = zlib.decompress(idat), w * bpp + 1
    busy = sum(1 for y in range(h)
               if raw[y * stride + 1:(y + 1) * stride].count(raw[y * stride + 1]) != stride - 1)
    print(100 * busy // h)
PY
)
    if [ "${rows:--1}" -lt 0 ]; then
        echo "note: PNG colour type or interlacing not handled: only the size was checked"
    elif [ "$rows" -ge 30 ]; then
        ok "screenshot: $rows% of pixel rows hold something"
    else
        fail "screenshot: only $rows% of pixel rows hold something: blank page?"
    fi
else
    echo "note: neither ImageMagick's identify nor python3: only the size was checked"
fi
finish
