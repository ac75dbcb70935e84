/* oqc_isa.h - the one table of the instruction-set families of oqc's runtime and of
 * `oqc compile --target`, an X-macro: OQC_ISA_TABLE(X) expands X once per row,
 *     X(name, int8, fp32, x86, flags, files)
 * name   the family as `--target`, oqci_isa_name() and the docs (docs/compile.md's table
 *        of targets, which tests/unit/test_isa_table.c compares with this one) spell it
 * int8   its INT8 conv family (OQCI_ISA_*, oqci.h), or -1: none
 * fp32   its FP32 matrix-product family (OqcfIsa, oqcf_nn.h), or -1: none
 * x86    the x86 kernel level of its INT8 family (OQC_X86_*): from OQC_X86_AVX2 the
 *        AVX2 kernels of pool, eltwise and the conv's depthwise and few-pixel paths,
 *        from OQC_X86_AVX512 their AVX-512 ones, from OQC_X86_VBMI the VBMI ones
 * flags  the compiler flags `--target name` writes into the emitted NAME.mk, or NULL
 *        where the row is no --target
 * files  the INT8 conv files its kernels are in, space-separated, besides oqci_conv.c
 *        (which chooses among the families): what oqc copies with oqci_conv.c
 * Order: the --target rows in the order the CLI lists them; the rows of each library's
 * families in ascending preference (oqci_conv_isa and the FP32 matrix product take the
 * last row the CPU runs; neondot and the x86 rows never meet on one CPU).
 * Macros only, no includes, no code: the INT8 library includes it in freestanding builds,
 * and both libraries and the compiler include it (runtime/fp32 is the lowest layer).
 * Adding an INT8 family: a row here (its id a new OQCI_ISA_* of oqci.h), its kernel
 * file with its Family table (oqci_conv_int.h) and HAVE_/T_ macros
 * (oqci_conv_cfg_int.h), its CPU test in oqci_conv.c's cpu_has and its branch in
 * oqci_conv(), and its line in docs/compile.md's table of targets (which
 * tests/unit/test_isa_table.c checks). */
#ifndef OQC_ISA_H
#define OQC_ISA_H

#define OQC_X86_NONE 0     /* no x86 kernels (portable C, Arm) */
#define OQC_X86_AVX2 1     /* AVX2 (and FMA) */
#define OQC_X86_AVX512 2   /* AVX2 and AVX-512 F/BW/VNNI */
#define OQC_X86_VBMI 3     /* all of those and AVX-512 VBMI */

/* clang-format off */
#define OQC_ISA_TABLE(X)                                                                    \
    X("auto", OQCI_ISA_AUTO, OQCF_ISA_AUTO, OQC_X86_NONE, NULL, "")                          \
    X("native", -1, -1, OQC_X86_NONE, "-march=native", "")                                   \
    X("portable", OQCI_ISA_PORTABLE, OQCF_ISA_PORTABLE, OQC_X86_NONE, "-DOQCI_NO_DISPATCH", \
      "")                                                                                   \
    X("avx2", OQCI_ISA_AVX2, OQCF_ISA_AVX2, OQC_X86_AVX2, "-mavx2 -mfma",                    \
      "oqci_conv_gemm.c oqci_conv_avx2.c oqci_conv_dwx86.c")                                \
    X("avxvnni", OQCI_ISA_AVXVNNI, -1, OQC_X86_AVX2, "-mavx2 -mfma -mavxvnni",               \
      "oqci_conv_avx512.c")                                                                 \
    X("avx512", -1, OQCF_ISA_AVX512, OQC_X86_NONE, NULL, "")                                 \
    X("avx512vnni", OQCI_ISA_AVX512VNNI, -1, OQC_X86_AVX512,                                 \
      "-mavx512f -mavx512bw -mavx512vnni -mfma", "oqci_conv_avx512.c oqci_conv_avx512_ukr.c") \
    X("avx512vbmi", OQCI_ISA_AVX512VBMI, -1, OQC_X86_VBMI,                                   \
      "-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi -mfma",                               \
      "oqci_conv_avx512.c oqci_conv_dwq.c")                                                 \
    X("amx", OQCI_ISA_AMX, -1, OQC_X86_VBMI,                                                 \
      "-mavx512f -mavx512bw -mavx512vnni -mavx512vbmi -mfma -mamx-tile -mamx-int8",         \
      "oqci_conv_avx512.c oqci_conv_amxt.c")                                                \
    X("neondot", OQCI_ISA_NEONDOT, -1, OQC_X86_NONE, "-march=armv8.2-a+dotprod",             \
      "oqci_conv_gemm.c oqci_conv_neon.c")                                                  \
    X("dispatch", -1, -1, OQC_X86_NONE, "-DOQCI_DISPATCH", "")
/* clang-format on */

#endif /* OQC_ISA_H */
