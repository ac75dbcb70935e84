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
# missing_of PKG...: the packages of the list dpkg does not have installed ($missing).
missing_of() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
}
# install_missing WHAT SUDO_FIRST: $missing through apt-get (root), or a message naming
# them and the command to run (others; SUDO_FIRST is what that command does first).
install_missing() {
    if [ "$(id -u)" != 0 ]; then
        echo "oqc: missing Debian packages$1:$missing" >&2
        echo "oqc: install them with: $2sudo apt-get install$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    [ -z "$2" ] || "$3"
    echo "oqc: installing missing Debian packages:$missing" >&2
    apt-get update -q >&2 || { echo "oqc: apt-get update failed" >&2; exit 1; }
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >&2 ||
        { echo "oqc: apt-get install$missing failed" >&2; exit 1; }
}
# Debian multiarch: arm64 among dpkg's foreign architectures.
add_arm64() {
    dpkg --print-foreign-architectures | grep -qx arm64 && return 0
    echo "oqc: adding arm64 to dpkg's foreign architectures (for the aarch64 test build)" >&2
    dpkg --add-architecture arm64 || { echo "oqc: dpkg --add-architecture arm64 failed" >&2; exit 1; }
}
if [ "${1:-}" = --arm64 ]; then
    missing_of libprotobuf-c-dev:arm64 libxml2-dev:arm64 libjpeg62-turbo-dev:arm64 libpng-dev:arm64
    [ -z "$missing" ] && exit 0
    install_missing " (arm64 multiarch)" \
        "sudo dpkg --add-architecture arm64 && sudo apt-get update && " add_arm64
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
# shellcheck disable=SC2086
missing_of $pkgs
[ -z "$missing" ] && exit 0
install_missing "" "" :
