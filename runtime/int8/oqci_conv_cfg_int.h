/* oqci_conv_cfg_int.h - internal header of the INT8 conv library (oqci_conv*.c, through
 * oqci_conv_int.h): the configuration of a build, i.e. which kernel families it has
 * (HAVE_*: from the compiler's feature macros, OQCI_DISPATCH, the compiler's version),
 * their target attributes (T_*), the system headers they need, and the objects that
 * make the link fail when the conv files were compiled in different configurations
 * (OQCIK_CFG). */
#ifndef OQCI_CONV_CFG_INT_H
#define OQCI_CONV_CFG_INT_H

#include "oqci.h"

/* ---- families this build has ------------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCI_X86 1
#else
#define OQCI_X86 0
#endif
#if OQCI_X86 && defined(OQCI_DISPATCH)
#define OQCI_X86_DISPATCH 1
#else
#define OQCI_X86_DISPATCH 0
#endif
/* Compiler support for the VNNI families when they are only used through target
 * attributes and chosen at run time (AVX-512 VNNI: gcc 8, clang 6; AVX-VNNI: gcc 11,
 * whose __builtin_cpu_supports knows "avxvnni" -- clang 14's does not, and CPUID on
 * every call would be slow, in a VM very slow, so clang builds get AVX-VNNI only from
 * -mavxvnni). */
#if defined(__clang__)
#define OQCI_CC_AVXVNNI 0
#define OQCI_CC_AVX512VNNI (__clang_major__ >= 6)
#elif defined(__GNUC__)
#define OQCI_CC_AVXVNNI (__GNUC__ >= 11)
#define OQCI_CC_AVX512VNNI (__GNUC__ >= 8)
#else
#define OQCI_CC_AVXVNNI 0
#define OQCI_CC_AVX512VNNI 0
#endif
/* AMX-INT8 through target attributes: gcc 11, clang 13. */
#if defined(__clang__)
#define OQCI_CC_AMX (__clang_major__ >= 13)
#elif defined(__GNUC__)
#define OQCI_CC_AMX (__GNUC__ >= 11)
#else
#define OQCI_CC_AMX 0
#endif

#if OQCI_X86 && (defined(__AVX2__) || OQCI_X86_DISPATCH)
#define HAVE_AVX2 1
#else
#define HAVE_AVX2 0
#endif
#if OQCI_X86 && (defined(__AVXVNNI__) || (OQCI_X86_DISPATCH && OQCI_CC_AVXVNNI))
#define HAVE_AVXVNNI 1
#else
#define HAVE_AVXVNNI 0
#endif
#if OQCI_X86 && ((defined(__AVX512VNNI__) && defined(__AVX512BW__)) ||                   \
                 (OQCI_X86_DISPATCH && OQCI_CC_AVX512VNNI))
#define HAVE_AVX512VNNI 1
#else
#define HAVE_AVX512VNNI 0
#endif
/* AMX-INT8 tiles (Linux only: the process asks the kernel for the tile state, see
 * oqcik_amx_permit), on top of the AVX-512 VNNI family, whose packers and epilogue it uses:
 * oqci.h's OQCI_AMX_BUILD (which the emitted NAME.h sizes its arena by), that is Linux
 * and either the flags (gcc says __AMX_INT8__, clang __AMXINT8__) with AVX-512 VNNI/BW or
 * OQCI_DISPATCH with OQCI_CC_AMX. */
#if (defined(__AMX_INT8__) && defined(__AMX_TILE__)) || (defined(__AMXINT8__) && defined(__AMXTILE__))
#define OQCI_AMX_FLAGS 1
#else
#define OQCI_AMX_FLAGS 0
#endif
#define HAVE_AMX OQCI_AMX_BUILD
#if HAVE_AMX && !(HAVE_AVX512VNNI && (OQCI_AMX_FLAGS || (OQCI_X86_DISPATCH && OQCI_CC_AMX)))
#error "OQCI_AMX_BUILD (oqci.h) disagrees with the families this build has"
#endif
/* NEON dot product: from the flags (-march=armv8.2-a+dotprod and later), or with
 * OQCI_DISPATCH on AArch64 Linux with gcc 10 or later (a target attribute, chosen by
 * HWCAP_ASIMDDP at run time: OQCI_ARM_DISPATCH). */
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
#define HAVE_NEONDOT 1
#define OQCI_ARM_DISPATCH 0
#elif defined(__aarch64__) && defined(__ARM_NEON) && defined(OQCI_DISPATCH) &&             \
    defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define HAVE_NEONDOT 1
#define OQCI_ARM_DISPATCH 1
#else
#define HAVE_NEONDOT 0
#define OQCI_ARM_DISPATCH 0
#endif
/* Tests only (tests/cli/int8_simd_arm.sh): OQCI_TEST_EMULATE_VNNI with -mavx2 builds both
 * VNNI families for an AVX2 CPU, vpdpbusd ymm emulated exactly with AVX2 (so
 * q8conv_4x24c4__avxvnni runs as written) and the AVX-512 microkernel replaced by plain
 * C with its tile and panel (q8conv_8x32c4__emu): everything of the two families but the
 * instructions this CPU lacks runs and is compared with the portable family. */
#if defined(OQCI_TEST_EMULATE_VNNI) && OQCI_X86 && defined(__AVX2__) &&                   \
    !defined(__AVXVNNI__) && !defined(__AVX512VNNI__)
#define OQCI_EMU_VNNI 1
#undef HAVE_AVXVNNI
#define HAVE_AVXVNNI 1
#undef HAVE_AVX512VNNI
#define HAVE_AVX512VNNI 1
#undef HAVE_AMX
#define HAVE_AMX 0
#else
#define OQCI_EMU_VNNI 0
#endif
/* AVX-512 VBMI (vpermb, vpermt2b) on top of AVX-512 VNNI: the avx512vbmi family's
 * packers and 3x3 depthwise kernel (OQCI_ISA_AVX512VBMI), which the AMX family uses
 * too (every AMX CPU has VBMI): from the flags (gcc and clang say __AVX512VBMI__), with
 * AMX, or OQCI_DISPATCH. */
#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI &&                                                   \
    (defined(__AVX512VBMI__) || HAVE_AMX || OQCI_X86_DISPATCH)
#define HAVE_VBMI 1
#else
#define HAVE_VBMI 0
#endif

/* The portable family needs no header beyond oqci.h's (a freestanding Cortex-M0 build
 * has no <string.h>); the SIMD ones are built for hosted targets. */
#if HAVE_AVX2 || HAVE_NEONDOT
#include <string.h>
#endif
#if HAVE_AVX2 || HAVE_AVXVNNI || HAVE_AVX512VNNI
#include <immintrin.h>
#endif
#if HAVE_NEONDOT
#include <arm_neon.h>
#endif

/* Target attributes: needed only when the family's macro is not defined (dispatch). */
#if defined(__AVX2__)
#define T_AVX2
#else
#define T_AVX2 __attribute__((target("avx2")))
#endif
#if defined(__AVXVNNI__) || OQCI_EMU_VNNI
#define T_AVXVNNI
#else
#define T_AVXVNNI __attribute__((target("avx2,avxvnni")))
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define T_AVX512VNNI
#else
#define T_AVX512VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))
#endif
#if OQCI_AMX_FLAGS && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define T_AMX
#else
#define T_AMX __attribute__((target("avx2,avx512f,avx512bw,avx512vnni,amx-tile,amx-int8")))
#endif

/* AVX-512 VBMI (vpermb, vpermt2b; every AMX CPU has it): the avx512vbmi and AMX families'
 * kernels (HAVE_VBMI). */
#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define T_VBMI
#else
#define T_VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512vnni,avx512vbmi")))
#endif

/* Some SIMD GEMM family (oqci_conv_gemm.c's driver and its shared types). */
#define HAVE_SIMD (HAVE_AVX2 || HAVE_NEONDOT)

/* The AVX-512 depthwise kernels and float epilogue (oqci_conv_dwx86.c, rqf16 in
 * oqci_conv_x86_int.h): float planes, so not in integer-only builds, and not in the
 * tests' VNNI emulation (OQCI_EMU_VNNI), which has no AVX-512. */
#if HAVE_AVX2 && !defined(OQCI_NO_FLOAT) && HAVE_AVX512VNNI && !OQCI_EMU_VNNI
#define HAVE_DWZ 1
#else
#define HAVE_DWZ 0
#endif

/* ---- build consistency ----------------------------------------------------------------
 * The selection and every family must agree on the families compiled in and on the
 * scratch layout, though they are separate translation units.  So each conv file but
 * oqci_conv.c defines the object OQCIK_CFG(file), whose name spells the
 * configuration it was compiled in (the HAVE_* families, the tests' VNNI emulation,
 * OQCI_NO_FLOAT), and oqci_conv.c reads the names of its own configuration (cfg_check):
 * a file compiled with other flags (say -mavx2 for one file only) defines another name,
 * and the link fails on an undefined oqcik_cfg_FILE__avx2_..., instead of the families
 * and the scratch layout silently disagreeing.  The object also keeps a file none of
 * whose families is compiled in from being an empty translation unit, which ISO C
 * forbids. */
#if HAVE_AVX2
#define OQCIK_CFG_AVX2 1
#else
#define OQCIK_CFG_AVX2 0
#endif
#if HAVE_AVXVNNI
#define OQCIK_CFG_AVXVNNI 1
#else
#define OQCIK_CFG_AVXVNNI 0
#endif
#if HAVE_AVX512VNNI
#define OQCIK_CFG_AVX512VNNI 1
#else
#define OQCIK_CFG_AVX512VNNI 0
#endif
#if HAVE_AMX
#define OQCIK_CFG_AMX 1
#else
#define OQCIK_CFG_AMX 0
#endif
#if HAVE_VBMI
#define OQCIK_CFG_VBMI 1
#else
#define OQCIK_CFG_VBMI 0
#endif
#if HAVE_NEONDOT
#define OQCIK_CFG_NEONDOT 1
#else
#define OQCIK_CFG_NEONDOT 0
#endif
#if OQCI_EMU_VNNI
#define OQCIK_CFG_EMU 1
#else
#define OQCIK_CFG_EMU 0
#endif
#if defined(OQCI_NO_FLOAT)
#define OQCIK_CFG_NOFLOAT 1
#else
#define OQCIK_CFG_NOFLOAT 0
#endif
#define OQCIK_CFG_NAME(file, a, v, z, m, b, n, e, f)                                        \
    oqcik_cfg_##file##__avx2_##a##_avxvnni_##v##_avx512vnni_##z##_amx_##m##_vbmi_##b##        \
        _neondot_##n##_emu_##e##_nofloat_##f
#define OQCIK_CFG_X(file, a, v, z, m, b, n, e, f) OQCIK_CFG_NAME(file, a, v, z, m, b, n, e, f)
#define OQCIK_CFG(file)                                                                     \
    OQCIK_CFG_X(file, OQCIK_CFG_AVX2, OQCIK_CFG_AVXVNNI, OQCIK_CFG_AVX512VNNI, OQCIK_CFG_AMX,  \
                OQCIK_CFG_VBMI, OQCIK_CFG_NEONDOT, OQCIK_CFG_EMU, OQCIK_CFG_NOFLOAT)
extern const char OQCIK_CFG(gemm), OQCIK_CFG(avx2), OQCIK_CFG(dwx86), OQCIK_CFG(dwq),
    OQCIK_CFG(amxt), OQCIK_CFG(avx512), OQCIK_CFG(avx512_ukr), OQCIK_CFG(neon);

#endif /* OQCI_CONV_CFG_INT_H */
