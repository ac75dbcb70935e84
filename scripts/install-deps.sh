#!/bin/sh
# install-deps.sh - make sure the Debian packages oqc builds and tests with are present.
# Installs the missing ones with apt-get when run as root; otherwise names them and fails.
# Usage: scripts/install-deps.sh [extra-package ...]
#        scripts/install-deps.sh --arm64
# --arm64 (run by `make check` only): the arm64 builds of the libraries oqc links, which
# tests/cli/reproducible_aarch64.sh cross-builds an aarch64 oqc against (run under
# qemu-user).  It adds arm64 to dpkg's foreign architectures (Debian multiarch) when it
# is not there yet, which is why no other target asks for it.
set -u
if [ "${1:-}" = --arm64 ]; then
    arm="libprotobuf-c-dev:arm64 libxml2-dev:arm64 libjpeg62-turbo-dev:arm64 libpng-dev:arm64"
    missing=""
    for p in $arm; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && exit 0
    if [ "$(id -u)" != 0 ]; then
        echo "oqc: missing Debian packages (arm64 multiarch):$missing" >&2
        echo "oqc: install them with: sudo dpkg --add-architecture arm64 && sudo apt-get update && sudo apt-get install$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        echo "oqc: adding arm64 to dpkg's foreign architectures (for the aarch64 test build)" >&2
        dpkg --add-architecture arm64 || { echo "oqc: dpkg --add-architecture arm64 failed" >&2; exit 1; }
    fi
    echo "oqc: installing missing Debian packages:$missing" >&2
    apt-get update -q >&2 || { echo "oqc: apt-get update failed" >&2; exit 1; }
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >&2 ||
        { echo "oqc: apt-get install$missing failed" >&2; exit 1; }
    exit 0
fi
# chromium renders the calibration report (tests/cli/report_render.sh), python3-onnx
# runs onnx.checker on export-qdq output (tests/cli/export_qdq.sh): both must run in CI;
# libjpeg-turbo and libpng decode image data (compiler/frontend/image_io.c); cmake, ninja-build
# and parallel run the build-pipeline tests (tests/cli/examples.sh, calib_shards.sh);
# python3-jsonschema validates --json documents against docs/oqc-json.schema.json
# (tests/cli/json_output.sh).
pkgs="protobuf-c-compiler libprotobuf-c-dev libonnx-dev libxml2-dev libxml2-utils
libcunit1-dev libonnx-testdata graphviz clang gcc-arm-none-eabi libnewlib-arm-none-eabi
gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user chromium python3-onnx libjpeg62-turbo-dev
libpng-dev cmake ninja-build parallel python3-jsonschema $*"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "oqc: missing Debian packages:$missing" >&2
    echo "oqc: install them with: sudo apt-get install$missing" >&2
    exit 1
fi
echo "oqc: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2 || { echo "oqc: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >&2 ||
    { echo "oqc: apt-get install$missing failed" >&2; exit 1; }
