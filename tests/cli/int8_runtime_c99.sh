#!/bin/sh
# int8_runtime_c99.sh - the INT8 kernel library (runtime/oqci.h, runtime/oqci_*.c) is
# copied verbatim into every INT8 output of `oqc compile`, so it must build on its own:
#   1. each oqci_*.c, copied alone with oqci.h (and the internal headers oqci_*_int.h)
#      into an empty directory, compiles as strict C99 (-std=c99 -pedantic -Wall
#      -Wextra -Werror) with gcc and with clang, as is and with -DOQCI_NO_FLOAT (the
#      integer-only configuration);
#   2. for a Cortex-M0 (arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb, skipped when the
#      cross compiler is absent; also clang --target=thumbv6m-none-eabi when clang has
#      the ARM backend) with -DOQCI_NO_FLOAT, the objects of the conv (every
#      oqci_conv*.c: one file per kernel family) and oqci_pool.o reference no soft-float
#      routine (__aeabi_f*, __aeabi_d*); without the macro oqci_conv.o does, which shows
#      the check can fail.
. tests/cli/lib.sh
# These compile the runtime sources with the system's compilers: the same whichever
# configuration `make check` is testing, so they run in the default one only.
only_config default
C99="-std=c99 -pedantic -O2 -Wall -Wextra -Werror"
mkdir -p "$TMP/rt"
cp runtime/oqci.h runtime/oqci_*_int.h runtime/oqci_*.c "$TMP/rt/"
srcs=$(cd "$TMP/rt" && ls oqci_*.c)
[ -n "$srcs" ] && ok "runtime/oqci_*.c found" || fail "no runtime/oqci_*.c"

for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "skip: $cc not installed"
        continue
    fi
    for f in $srcs; do
        b=${f%.c}
        for def in "" -DOQCI_NO_FLOAT; do
            if $cc $C99 $def -c "$TMP/rt/$f" -o "$TMP/$b.$cc.o" 2>"$TMP/err"; then
                ok "$cc c99 ${def:-(float requant)}: $f"
            else
                fail "$cc c99 ${def:-(float requant)}: $f: $(head -n 5 "$TMP/err")"
            fi
        done
    done
done

# soft_float_check LABEL NM CC FLAGS...: compiles conv and pool for the M0 with and
# without OQCI_NO_FLOAT and checks which soft-float symbols they reference.
soft_float_check() {
    label=$1 nmtool=$2
    shift 2
    for b in $(cd "$TMP/rt" && ls oqci_conv*.c | sed 's/\.c$//') oqci_pool; do
        if "$@" -DOQCI_NO_FLOAT -c "$TMP/rt/$b.c" -o "$TMP/$b.m0.o" 2>"$TMP/err"; then
            ok "$label: $b.c compiles"
        else
            fail "$label: $b.c: $(head -n 5 "$TMP/err")"
            continue
        fi
        sf=$("$nmtool" -u "$TMP/$b.m0.o" | grep '__aeabi_[fd]')
        [ -z "$sf" ] && ok "$label: $b.o needs no soft-float" ||
            fail "$label: $b.o references soft-float:" $sf
    done
    # The float requant branch compiled in: conv must then need soft-float.
    if "$@" -c "$TMP/rt/oqci_conv.c" -o "$TMP/float.m0.o" 2>"$TMP/err" &&
        "$nmtool" -u "$TMP/float.m0.o" | grep -q '__aeabi_f'; then
        ok "$label: without OQCI_NO_FLOAT oqci_conv.o references soft-float (check is live)"
    else
        fail "$label: float build of oqci_conv.c: no soft-float symbol or error $(head -n 3 "$TMP/err")"
    fi
}

M0="-mcpu=cortex-m0 -mthumb -O2 -std=c99 -pedantic -Wall -Wextra -Werror"
if command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    NM=arm-none-eabi-nm
    command -v "$NM" >/dev/null 2>&1 || NM=nm
    soft_float_check "arm-none-eabi-gcc cortex-m0" "$NM" arm-none-eabi-gcc $M0
else
    echo "skip: arm-none-eabi-gcc not installed (Cortex-M0 soft-float check)"
fi
# clang can target the M0 without a cross toolchain (freestanding: stdint.h and
# stddef.h are clang's own); skipped when its ARM backend is missing.
NM=llvm-nm
command -v "$NM" >/dev/null 2>&1 || NM=nm
if command -v clang >/dev/null 2>&1 &&
    echo 'int f(int a) { return a; }' >"$TMP/probe.c" &&
    clang --target=thumbv6m-none-eabi -ffreestanding -c "$TMP/probe.c" -o "$TMP/probe.o" \
        2>/dev/null; then
    soft_float_check "clang thumbv6m cortex-m0" "$NM" clang --target=thumbv6m-none-eabi \
        -ffreestanding $M0
else
    echo "skip: clang without the ARM backend (Cortex-M0 soft-float check)"
fi
finish
