#!/bin/sh
# int8_simd_arm.sh - oqci_conv's SIMD kernel families in the builds the emitted C gets
# (runtime/int8/oqci_conv*.c copied verbatim, no liboqc): each family is
# compared bit for bit with the portable one by tests/emit/int8_simd_check.c, a
# standalone program built with the runtime files (OQCI_TEST_HOOKS for oqci_force_isa).
#   1. x86, compile-time selection: built with -mavx2, and with -mavx2 -mfma (gcc and
#      clang, strict C99) the program must choose the AVX2 family by itself and match
#      the portable one; built with no -m flag and -DOQCI_NO_DISPATCH it must choose the
#      portable family, and with no flag at all (run-time selection, oqci.h's default)
#      the CPU's best.
#   2. x86 VNNI: this CPU may lack AVX-512 VNNI, VBMI, AVX-VNNI and AMX, so the files
#      are compiled (strict C99, gcc and clang; with OQCI_TEST_HOOKS, which keeps every
#      compiled family reachable) once with all their flags, -mavx512f -mavx512bw
#      -mavx512vnni -mavx512vbmi -mavxvnni -mamx-tile -mamx-int8 (a Sapphire Rapids),
#      and those objects must hold each family's instructions: vpdpbusd on zmm (AVX-512)
#      and VEX-encoded on ymm (AVX-VNNI), vpermt2b (VBMI), tdpbssd, tdpbsud, tileloadd
#      (AMX); also with -mavxvnni alone (AVX-VNNI without AVX-512), and the
#      no-flag build of part 1 (OQCI_DISPATCH, as oqci.h defines it there: liboqc's
#      build) must hold the AVX2 and AVX-512 VNNI kernels, AMX, and AVX-VNNI with gcc.
#      Their logic (u8 panels, s8 inputs packed + 128 and corrected, their tiles) runs
#      here with OQCI_TEST_EMULATE_VNNI: vpdpbusd ymm emulated exactly with AVX2, a
#      plain-C stand-in for the AVX-512 microkernel.  When the CPU has them, the real
#      programs are also built with each family's own flags and run.
#   3. Arm dot product: with aarch64-linux-gnu-gcc and qemu-aarch64 (Debian packages
#      gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user; skipped when absent),
#      built -static with -march=armv8.2-a+dotprod (strict C99; the objects hold sdot)
#      and run under qemu-aarch64 -cpu max: the neondot family must match the portable
#      one; built for plain armv8-a with -DOQCI_NO_DISPATCH it must choose the portable
#      family, and with no flag at all (run-time selection by HWCAP) neondot under
#      -cpu max and portable under -cpu cortex-a53.
# Each program run takes well under a second natively, a few seconds under qemu; the
# whole script ~80 s alone on one core of the CI machine, almost all of it compiling the
# conv files (18 times: each compile is one configuration of families no other one has).
. tests/cli/lib.sh
# These compile the runtime sources with the system's compilers: the same whichever
# configuration `make check` is testing, so they run in one only, the sanitizer one
# (`make check` runs the three side by side; this evens out their lengths).
only_config san
C99="-std=c99 -pedantic -O2 -Wall -Wextra -Werror"
# the conv library is one file per kernel family: all of them, always together
CONV=$(echo runtime/int8/oqci_conv*.c)
SRC="tests/emit/int8_simd_check.c $CONV"
# (a small OQCI_PAR_MIN_MACS: the small random convs split into oqci_conv_par's parts)
HOOKS="-DOQCI_TEST_HOOKS -DOQCI_PAR_MIN_MACS=64 $RT_INC"

# conv_objs NAME CC FLAGS...: compiles every conv file to $TMP/NAME.*.o ($objs: their
# list, for has_insn); fails on the first file that does not compile (error in $TMP/err).
conv_objs() {
    name=$1
    shift
    objs=""
    for c in $CONV; do
        o="$TMP/$name.$(basename "$c" .c).o"
        "$@" $RT_INC -c "$c" -o "$o" 2>"$TMP/err" || return 1
        objs="$objs $o"
    done
}

# check_run LABEL FAMILY CASES PROGRAM...: the program chose FAMILY and every family
# matched the portable one, also in parts (some cases split: the check is live).
check_run() {
    label=$1 fam=$2 n=$3
    shift 3
    if "$@" "$fam" "$n" >"$TMP/out" 2>&1 &&
        grep -q '^int8_simd_check: [1-9][0-9]* cases run in 2 or 3 parts' "$TMP/out"; then
        ok "$label ($(sed 's/int8_simd_check: *//' "$TMP/out" | tr -s ' ' | head -n 4 | tr '\n' ';' | sed 's/;$//'))"
    else
        fail "$label: $(head -n 8 "$TMP/out")"
    fi
}

# has_insn LABEL OBJDUMP OBJECTS PATTERN: the disassembly of the (space-separated)
# objects matches PATTERN.
has_insn() {
    # shellcheck disable=SC2086
    if "$2" -d $3 | grep -Eq "$4"; then
        ok "$1"
    else
        fail "$1: no instruction matching '$4'"
    fi
}

# best_x86 CC: the family a dispatch build made with CC chooses on this CPU (oqci_conv.c's
# preference order; AVX-VNNI is dispatched by gcc only, AMX also needs the kernel's grant,
# which this does not ask for: a CPU with AMX is expected to get it).
best_x86() {
    f() { grep -qw "$1" /proc/cpuinfo; }
    if f amx_int8 && f amx_tile && f avx512_vnni && f avx512bw; then echo amx
    elif f avx512vbmi && f avx512_vnni && f avx512bw; then echo avx512vbmi
    elif f avx512_vnni && f avx512bw; then echo avx512vnni
    elif [ "$1" = gcc ] && f avx_vnni && f avx2; then echo avxvnni
    elif f avx2 && f fma; then echo avx2
    else echo portable; fi
}

# ---- 1. x86 AVX2 by compile-time selection -------------------------------------------
case $(uname -m) in x86_64) X86=1 ;; *) X86=0 ;; esac
if [ "$X86" = 1 ]; then
    for cc in gcc clang; do
        if ! command -v "$cc" >/dev/null 2>&1; then
            skip "$cc not installed"
            continue
        fi
        if $cc $C99 -mavx2 $HOOKS $SRC -o "$TMP/avx2.$cc" 2>"$TMP/err"; then
            ok "$cc -mavx2: int8_simd_check builds (strict C99)"
            # the 16-bit family and the vpmaddubsw one (weights with wpair16)
            has_insn "$cc -mavx2: vpmaddwd and vpmaddubsw in the program" objdump "$TMP/avx2.$cc" \
                'vpmaddubsw.*ymm' && has_insn "$cc -mavx2: vpmaddwd" objdump "$TMP/avx2.$cc" 'vpmaddwd.*ymm'
            if grep -qw avx2 /proc/cpuinfo; then
                check_run "$cc -mavx2: AVX2 chosen at compile time, bit-exact with portable" \
                    avx2 500 "$TMP/avx2.$cc"
            else
                skip "CPU lacks AVX2 (the -mavx2 program is not run)"
            fi
        else
            fail "$cc -mavx2 build: $(head -n 5 "$TMP/err")"
        fi
        # with FMA too (-march=haswell and later): the depthwise kernels' fused form
        if [ "$cc" = clang ]; then
            :   # (gcc's build is enough for this variant)
        elif $cc $C99 -mavx2 -mfma $HOOKS $SRC -o "$TMP/fma.$cc" 2>"$TMP/err"; then
            if grep -qw fma /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo; then
                check_run "$cc -mavx2 -mfma: AVX2 with FMA, bit-exact with portable" avx2 300 \
                    "$TMP/fma.$cc"
            fi
        else
            fail "$cc -mavx2 -mfma build: $(head -n 5 "$TMP/err")"
        fi
        if $cc $C99 -DOQCI_NO_DISPATCH $HOOKS $SRC -o "$TMP/plain.$cc" 2>"$TMP/err"; then
            check_run "$cc -DOQCI_NO_DISPATCH, no -m flag: the portable family" portable 20 \
                "$TMP/plain.$cc"
        else
            fail "$cc portable build: $(head -n 5 "$TMP/err")"
        fi
        # no flag at all (the emitted code built with plain cc -O2): run-time selection by
        # default (oqci.h), so the CPU's best family, bit-exact with portable
        if $cc $C99 $HOOKS $SRC -o "$TMP/dflt.$cc" 2>"$TMP/err"; then
            has_insn "$cc, no flag: a dispatch build (AVX-512 VNNI kernel in it)" objdump \
                "$TMP/dflt.$cc" 'vpdpbusd.*zmm'
            check_run "$cc, no flag: the CPU's best family chosen at run time" \
                "$(best_x86 $cc)" 300 "$TMP/dflt.$cc"
            eval "dflt_$cc=\"\$TMP/dflt.\$cc\""
        else
            fail "$cc plain build: $(head -n 5 "$TMP/err")"
        fi
    done

    # ---- 2. x86 VNNI: compile checks (and runs on a CPU that has it) -------------------
    # every flag of the VNNI, VBMI and AMX families at once: one compile (a Sapphire
    # Rapids'), checked for each family's instructions
    ALLX86="-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi -mavxvnni -mamx-tile -mamx-int8"
    for cc in gcc clang; do
        command -v "$cc" >/dev/null 2>&1 || continue
        # with the hooks every compiled family stays reachable (oqci_force_isa)
        if conv_objs "all.$cc" $cc $C99 $ALLX86 -DOQCI_TEST_HOOKS; then
            ok "$cc $ALLX86: oqci_conv*.c compile (strict C99)"
            has_insn "$cc: AVX-512 VNNI kernel (vpdpbusd zmm)" objdump "$objs" \
                'vpdpbusd.*zmm'
            has_insn "$cc: AVX-VNNI kernel ({vex} vpdpbusd ymm)" objdump "$objs" \
                'vex.*vpdpbusd.*ymm'
            has_insn "$cc: VBMI packers (vpermt2b)" objdump "$objs" 'vpermt2b.*zmm'
            for pat in tdpbssd tdpbsud tileloadd; do
                has_insn "$cc: AMX kernels ($pat)" objdump "$objs" "$pat"
            done
        else
            fail "$cc $ALLX86: $(head -n 5 "$TMP/err")"
        fi
        if conv_objs "avxvnni.$cc" $cc $C99 -mavxvnni; then
            has_insn "$cc -mavxvnni: oqci_conv*.c compile, AVX-VNNI kernel" objdump \
                "$objs" 'vex.*vpdpbusd.*ymm'
        else
            fail "$cc -mavxvnni: $(head -n 5 "$TMP/err")"
        fi
        # The no-flag program of part 1 is a dispatch build: oqci.h defines
        # OQCI_DISPATCH there (GNU C on x86-64 without -mavx2), so its conv code is
        # liboqc's -DOQCI_DISPATCH build (the same preprocessed text, but for the hooks'
        # OQCI_PAR_MIN_MACS): its families are checked on it.
        eval "objs=\"\${dflt_$cc:-}\""
        if [ -n "$objs" ] && $cc $C99 $HOOKS -dM -E runtime/int8/oqci_conv.c 2>"$TMP/err" |
            grep -q '^#define OQCI_DISPATCH 1$'; then
            ok "$cc, no -m flag: OQCI_DISPATCH (as -DOQCI_DISPATCH), oqci_conv*.c compile (strict C99)"
            pats="vpmaddwd.*ymm vpdpbusd.*zmm tdpbsud"
            # AVX-VNNI is chosen at run time only by gcc (see OQCI_CC_AVXVNNI)
            [ "$cc" = gcc ] && pats="$pats vex.*vpdpbusd.*ymm"
            for pat in $pats; do
                has_insn "$cc dispatch build: $pat" objdump "$objs" "$pat"
            done
        else
            fail "$cc, no -m flag: no dispatch build ($(head -n 3 "$TMP/err"))"
        fi
    done
    # Their logic on this CPU: OQCI_TEST_EMULATE_VNNI emulates vpdpbusd ymm with AVX2 (the
    # AVX-VNNI kernel runs as written) and stands in plain C for the AVX-512 kernel.
    if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
        for cc in gcc; do
            command -v "$cc" >/dev/null 2>&1 || continue
            if $cc $C99 -mavx2 -mfma -DOQCI_TEST_EMULATE_VNNI $HOOKS $SRC -o "$TMP/emu.$cc" \
                2>"$TMP/err"; then
                check_run "$cc: VNNI families, vpdpbusd emulated, bit-exact with portable" \
                    avx512vnni 600 "$TMP/emu.$cc"
            else
                fail "$cc VNNI emulation build: $(head -n 5 "$TMP/err")"
            fi
        done
    fi
    if grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
        gcc $C99 -mavx512f -mavx512bw -mavx512vnni $HOOKS $SRC -o "$TMP/avx512" 2>/dev/null; then
        check_run "gcc AVX-512 VNNI, bit-exact with portable" avx512vnni 600 "$TMP/avx512"
    else
        skip "CPU lacks AVX-512 VNNI (compile-checked only)"
    fi
    # AVX-512 VBMI from the flags (Ice Lake, Zen 4): the avx512vbmi family chosen at
    # compile time, run where the CPU has it (its byte permutes: the objects above)
    VBMI="-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi"
    if grep -qw avx512vbmi /proc/cpuinfo && grep -qw avx512_vnni /proc/cpuinfo &&
        gcc $C99 $VBMI $HOOKS $SRC -o "$TMP/vbmi" 2>/dev/null; then
        check_run "gcc AVX-512 VBMI (and VNNI), bit-exact with portable" avx512vbmi 600 "$TMP/vbmi"
    else
        skip "CPU lacks AVX-512 VBMI (compile-checked only)"
    fi
    # AMX: run where the CPU has it (compiled above)
    AMX="-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi -mamx-tile -mamx-int8"
    if grep -qw amx_int8 /proc/cpuinfo && grep -qw amx_tile /proc/cpuinfo &&
        grep -qw avx512_vnni /proc/cpuinfo &&
        gcc $C99 $AMX $HOOKS $SRC -o "$TMP/amx" 2>/dev/null; then
        check_run "gcc AMX (and AVX-512 VNNI), bit-exact with portable" amx 600 "$TMP/amx"
        if clang $C99 $AMX $HOOKS $SRC -o "$TMP/amx.clang" 2>/dev/null; then
            check_run "clang AMX (and AVX-512 VNNI), bit-exact with portable" amx 600 \
                "$TMP/amx.clang"
        fi
    else
        skip "CPU lacks AMX-INT8 (compile-checked only)"
    fi
    if grep -qw avx_vnni /proc/cpuinfo &&
        gcc $C99 -mavx2 -mavxvnni $HOOKS $SRC -o "$TMP/avxvnni" 2>/dev/null; then
        check_run "gcc AVX-VNNI, bit-exact with portable" avxvnni 600 "$TMP/avxvnni"
    else
        skip "CPU lacks AVX-VNNI (compile-checked only)"
    fi
else
    skip "CPU lacks x86-64 (AVX2 and VNNI checks)"
fi

# ---- 3. Arm dot product under qemu -----------------------------------------------------
ACC=aarch64-linux-gnu-gcc
if command -v "$ACC" >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1; then
    ADUMP=aarch64-linux-gnu-objdump
    command -v "$ADUMP" >/dev/null 2>&1 || ADUMP=objdump
    if conv_objs dot $ACC $C99 -march=armv8.2-a+dotprod; then
        ok "$ACC -march=armv8.2-a+dotprod: oqci_conv*.c compile (strict C99)"
        has_insn "neondot kernel (sdot)" "$ADUMP" "$objs" 'sdot'
    else
        fail "$ACC dotprod: $(head -n 5 "$TMP/err")"
    fi
    if $ACC $C99 -march=armv8.2-a+dotprod -static $HOOKS $SRC -o "$TMP/arm.dot" 2>"$TMP/err"
    then
        check_run "qemu-aarch64: neondot chosen at compile time, bit-exact with portable" \
            neondot 600 qemu-aarch64 -cpu max "$TMP/arm.dot"
    else
        fail "$ACC dotprod program: $(head -n 5 "$TMP/err")"
    fi
    if $ACC $C99 -march=armv8-a -DOQCI_NO_DISPATCH -static $HOOKS $SRC -o "$TMP/arm.plain" \
        2>"$TMP/err"; then
        check_run "qemu-aarch64, armv8-a, -DOQCI_NO_DISPATCH: the portable family" portable 20 \
            qemu-aarch64 -cpu max "$TMP/arm.plain"
    else
        fail "$ACC armv8-a program: $(head -n 5 "$TMP/err")"
    fi
    # no flag (oqci.h's default with gcc on Linux): the dot-product kernel is compiled in
    # with a target attribute and chosen by HWCAP_ASIMDDP: neondot on a CPU with it,
    # portable on a Cortex-A53 (which would fault on sdot)
    if $ACC $C99 -static $HOOKS $SRC -o "$TMP/arm.dflt" 2>"$TMP/err"; then
        has_insn "aarch64, no flag: a dispatch build (sdot in it)" "$ADUMP" "$TMP/arm.dflt" sdot
        check_run "qemu-aarch64 -cpu max, no flag: neondot chosen at run time" neondot 300 \
            qemu-aarch64 -cpu max "$TMP/arm.dflt"
        check_run "qemu-aarch64 -cpu cortex-a53, no flag: the portable family" portable 20 \
            qemu-aarch64 -cpu cortex-a53 "$TMP/arm.dflt"
    else
        fail "$ACC program without flags: $(head -n 5 "$TMP/err")"
    fi
else
    skip "aarch64-linux-gnu-gcc or qemu-aarch64 not installed" \
        "(Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
fi
finish
