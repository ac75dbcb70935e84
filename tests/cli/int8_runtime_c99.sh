#!/bin/sh
# int8_runtime_c99.sh - the INT8 kernel library (runtime/int8/oqci.h, runtime/int8/oqci_*.c) is
# copied verbatim into every INT8 output of `oqc compile`, so it must build on its own:
#   1. each oqci_*.c, copied alone with oqci.h, the ISA table oqc_isa.h it includes
#      (and the internal headers oqci_*_int.h)
#      into an empty directory, compiles as strict C99 (-std=c99 -pedantic -Wall
#      -Wextra -Werror) with gcc and with clang, as is and with -DOQCI_NO_FLOAT (the
#      integer-only configuration);
#   2. for a Cortex-M0 (arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb, skipped when the
#      cross compiler is absent; also clang --target=thumbv6m-none-eabi when clang has
#      the ARM backend) with -DOQCI_NO_FLOAT, the objects of the conv (every
#      oqci_conv*.c: one file per kernel family) and oqci_pool.o reference no soft-float
#      routine (__aeabi_f*, __aeabi_d*); without the macro oqci_conv.o does, which shows
#      the check can fail;
#   3. (x86-64) the conv files must all be compiled with the same flags: with one of
#      them built with -mavx2 among portable ones the link fails on its configuration
#      object (OQCIK_CFG in runtime/int8/oqci_conv_cfg_int.h), unused sections removed or not;
#      built alike, the same objects link and run.
. tests/cli/lib.sh
# These compile the runtime sources with the system's compilers: the same whichever
# configuration `make check` is testing, so they run in one of them (clang's: the default
# configuration is the longest of the three).
only_config clang
C99="-std=c99 -pedantic -O2 -Wall -Wextra -Werror"
mkdir -p "$TMP/rt"
cp runtime/int8/oqci.h runtime/fp32/oqc_isa.h runtime/int8/oqci_*_int.h runtime/int8/oqci_*.c "$TMP/rt/"
srcs=$(cd "$TMP/rt" && ls oqci_*.c)
[ -n "$srcs" ] && ok "runtime/int8/oqci_*.c found" || fail "no runtime/int8/oqci_*.c"

for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        skip "$cc not installed"
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

# 3. mixed flags: oqci_conv_gemm.c with -mavx2 (HAVE_AVX2 1), the others without (0;
# -DOQCI_NO_DISPATCH: a plain x86-64 build would otherwise select at run time, oqci.h)
if [ "$(uname -m)" = x86_64 ] && command -v gcc >/dev/null 2>&1; then
    GC="-ffunction-sections -fdata-sections -DOQCI_NO_DISPATCH"
    printf '#include "oqci.h"\nint main(void) { return oqci_conv(0, 0, 0, 0) == OQCI_EINVAL ? 0 : 1; }\n' \
        >"$TMP/mix_main.c"
    for mix in "" -mavx2; do
        okc=1 objs=""
        for f in $(cd "$TMP/rt" && ls oqci_conv*.c); do
            fl=""
            [ "$f" = oqci_conv_gemm.c ] && fl=$mix
            gcc $C99 $GC $fl -c "$TMP/rt/$f" -o "$TMP/mix.${f%.c}.o" 2>"$TMP/err" || okc=0
            objs="$objs $TMP/mix.${f%.c}.o"
        done
        if [ $okc = 0 ]; then
            fail "conv files for the mixed-flags link: $(head -n 3 "$TMP/err")"
            continue
        fi
        # shellcheck disable=SC2086
        gcc $C99 $GC -I "$TMP/rt" "$TMP/mix_main.c" $objs -Wl,--gc-sections -o "$TMP/mix" \
            2>"$TMP/err"
        st=$?
        if [ -z "$mix" ]; then
            [ $st = 0 ] && "$TMP/mix" && ok "conv files built alike: they link (--gc-sections) and run" ||
                fail "conv files built alike do not link or run: $(head -n 3 "$TMP/err")"
        elif [ $st = 0 ]; then
            fail "oqci_conv_gemm.c built with -mavx2, the others without: the link succeeds"
        elif grep -q 'oqcik_cfg_gemm__avx2_0_' "$TMP/err"; then
            ok "oqci_conv_gemm.c built with -mavx2, the others without: the link fails" \
                "(undefined oqcik_cfg_gemm__avx2_0_...)"
        else
            fail "mixed-flags link failed for another reason: $(head -n 3 "$TMP/err")"
        fi
    done
else
    skip "not x86-64 with gcc (mixed-flags link check)"
fi

M0="-mcpu=cortex-m0 -mthumb -O2 -std=c99 -pedantic -Wall -Wextra -Werror"
if command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    NM=arm-none-eabi-nm
    command -v "$NM" >/dev/null 2>&1 || NM=nm
    soft_float_check "arm-none-eabi-gcc cortex-m0" "$NM" arm-none-eabi-gcc $M0
else
    skip "arm-none-eabi-gcc not installed (Cortex-M0 soft-float check)"
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
    skip "clang without the ARM backend (Cortex-M0 soft-float check)"
fi
finish
