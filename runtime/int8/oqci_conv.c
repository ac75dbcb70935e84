/* oqci_conv.c - INT8 2-D convolution (also Gemm/MatMul as a 1x1 conv): a portable C99
 * reference and SIMD kernel families (x86 AVX2, AVX-VNNI, AVX-512 VNNI; Arm dot
 * product), all giving exactly the same bits.
 *
 * Exactness.  Every product x*w and every partial sum is an exact integer: the int32
 * sums of at most OQCI_KCHUNK terms cannot overflow (see oqci.h), so any summation
 * order, any split into lanes and any grouping of the reduction gives the same
 * accumulator; it is then offset by the bias in int64, saturated to int32 and
 * requantized exactly as oqci_requant does (the vector requantizations of
 * oqci_conv_x86_int.h repeat its float and fixed-point steps operation for operation,
 * and are tested against it).
 *
 * Portable family (conv_portable, the reference and the microcontroller path).  For
 * each image and group the input is unfolded (im2col) into the scratch, CONV_ROWS
 * output pixels at a time: one row of kpad bytes per pixel, the group's channels c,
 * kernel rows i and columns j at c * k_h * k_w + i * k_w + j (the order of the packed
 * weight rows), zero for padding taps and for the kpad - kdim tail (0 is the value 0
 * for both s8 and u8: there is no zero point).  Every weight row is dotted with every
 * unfolded row by the DP4A primitive of oqci.h, four output channels per pass
 * (dot_*_1x4c4__c); depths above OQCI_KCHUNK are summed chunk by chunk into an int64.
 *
 * Accumulator outputs (out_type OQCI_S32, see oqci.h): the same saturated accumulator,
 * clamped to [lo, hi] and stored as an int32 instead of requantized; rq is not read.
 * Every family gives them through its plain epilogue: the portable and few-pixel paths
 * through rq1 and put_q (oqci_conv_int.h), the SIMD GEMM (AMX tiles included) through
 * its families' tile store (oqcik_store_tile__avx2, Arm's store_tile__c), never through
 * the fused requantizing microkernels.  Depthwise convs with such outputs do not take
 * the depthwise kernels (is_dw) but the GEMM or the few-pixel path: the compiler asks
 * for accumulator outputs on a network's last layers (Gemm, 1x1 convs, see
 * oqci_dequantize_s32), not on depthwise ones.
 *
 * Files: this one has the overview, the portable family, validation, scratch sizing,
 * family selection and the public entry points; the SIMD families have one file each,
 * as XNNPACK has one per microkernel family, each with the part of this comment that
 * concerns it:
 *   oqci_conv_gemm.c      the SIMD families' GEMM over packed pixel panels (plain C);
 *   oqci_conv_avx2.c      AVX2 (16-bit panels; vpmaddubsw for narrow weights), the x86
 *                         tile epilogue, few-pixel dot products;
 *   oqci_conv_avx512.c    AVX-512 VNNI (with or without VBMI), the AMX-INT8 tiles built
 *                         on it, AVX-VNNI;
 *   oqci_conv_avx512_ukr.c  the AVX-512 VNNI microkernels and their fused epilogues;
 *   oqci_conv_dwx86.c     x86 depthwise on float planes (AVX2 and AVX-512);
 *   oqci_conv_dwq.c       the VBMI and AMX families' 3x3 depthwise on byte planes (vpermb,
 *                         vpdpbusd);
 *   oqci_conv_amxt.c      the AMX family's thin 1x1 convs (reductions up to 64);
 *   oqci_conv_neon.c      Arm dot product, and Arm depthwise on int16 planes;
 *   oqci_conv_cfg_int.h   internal header: the families a build has (configuration);
 *   oqci_conv_int.h       internal header: sizes, scratch layout, shared types and
 *                         helpers, what each file exports (prefix oqcik_) and the order
 *                         in which the files call each other;
 *   oqci_conv_x86_int.h   the x86 vector requantization (RqV, rq8, ...).
 * All of them must be compiled with the same flags: a file compiled with other -m flags
 * makes the link fail (OQCIK_CFG in oqci_conv_cfg_int.h).
 *
 * Family selection: compile-time macros decide which families a build has (AVX2 with
 * __AVX2__, AVX-VNNI with __AVXVNNI__, AVX-512 VNNI with __AVX512VNNI__ and
 * __AVX512BW__, NEON dot with __ARM_FEATURE_DOTPROD on AArch64); a build without them
 * (e.g. the emitted C compiled with no -m flag, or a Cortex-M0) has only the portable
 * one, and a build with one of them uses it unconditionally (it was compiled for such a
 * CPU).  With OQCI_DISPATCH (oqc's own library, and the default of oqci.h for an
 * x86-64 GNU C build without -mavx2 or more, e.g. the emitted C built with plain
 * `cc -O2`), every x86 family is compiled with target attributes and chosen per call
 * with __builtin_cpu_supports, which reads what the compiler's runtime found once
 * (AVX-VNNI with gcc only: see OQCI_CC_AVXVNNI); -DOQCI_NO_DISPATCH turns that off.  OQCI_TEST_HOOKS adds
 * oqci_force_isa(), the only mutable global, for tests and benchmarks.
 *
 * Scratch: oqci_conv_scratch() is the largest need of all families (not only of the
 * ones compiled in: the compiler sizes the arena of the emitted code with its own
 * build): the portable path's 16 bytes per reduction element; the GEMM's panel block
 * (56 bytes per element up to KBLOCK, 32 up to KBLOCK_Z: 36 KB at most), the band (at
 * most BAND_MAX) and its offsets (4 bytes per reduction element), 12 bytes per output
 * channel (correction, fused epilogue constants), with several K blocks 128 bytes per
 * channel of the group, and a weight row pointer per channel of the group; the
 * depthwise float planes.  For example 24 KB for the Fashion model's 32x14x14 3x3 conv (4.6 KB
 * portable), 76 KB for a ResNet 64x56x56 3x3 -> 64, 169 KB for 512x7x7 3x3 -> 512
 * (74 KB portable), 15 KB for a 144x56x56 depthwise 3x3.
 *
 * Only integer arithmetic here, except the float branch of the requantization, which
 * OQCI_NO_FLOAT removes (see oqci.h). */
#include "oqci.h"   /* (the API this file implements; NAME.c of the emitted code includes it) */
#include "oqci_conv_int.h"
#if OQCI_ARM_DISPATCH
#include <sys/auxv.h>
#endif

/* ======================================================================================
 * Portable family: im2col rows and DP4A dot products.
 * ==================================================================================== */

/* Dot products of one chunk (len bytes, a multiple of 4, at most OQCI_KCHUNK, so exact
 * in int32) of unfolded pixel row a with weight row w (1x1) or with the four weight
 * rows w, w + ws, w + 2 ws, w + 3 ws (1x4, sums added to acc[0..3]). */
#define DEFINE_DOT(SUF, AT, DP4A)                                                      \
    static int32_t dot_##SUF##_1x1c4__c(const AT *a, const int8_t *w, int32_t len) {   \
        int32_t acc = 0, t;                                                            \
        for (t = 0; t < len; t += 4)                                                   \
            acc = DP4A(acc, a + t, w + t);                                             \
        return acc;                                                                    \
    }                                                                                  \
    static void dot_##SUF##_1x4c4__c(const AT *a, const int8_t *w, size_t ws,          \
                                     int32_t len, int64_t acc[4]) {                    \
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, t;                                     \
        const int8_t *w0 = w, *w1 = w + ws, *w2 = w + 2 * ws, *w3 = w + 3 * ws;        \
        for (t = 0; t < len; t += 4) {                                                 \
            a0 = DP4A(a0, a + t, w0 + t);                                              \
            a1 = DP4A(a1, a + t, w1 + t);                                              \
            a2 = DP4A(a2, a + t, w2 + t);                                              \
            a3 = DP4A(a3, a + t, w3 + t);                                              \
        }                                                                              \
        acc[0] += a0;                                                                  \
        acc[1] += a1;                                                                  \
        acc[2] += a2;                                                                  \
        acc[3] += a3;                                                                  \
    }
DEFINE_DOT(u8s8, uint8_t, oqci_dp4a_u8s8)
DEFINE_DOT(s8s8, int8_t, oqci_dp4a_s8s8)

/* Exact full-depth (kpad) dot products of pixel row a with nk (1..4) consecutive weight
 * rows starting at w, in OQCI_KCHUNK chunks; acc[0..nk-1] receive the sums. */
static void dot_rows(const uint8_t *a, int32_t in_type, const int8_t *w, int32_t kpad,
                     int nk, int64_t acc[4]) {
    int32_t off = 0;
    int j;
    for (j = 0; j < 4; j++)
        acc[j] = 0;
    while (off < kpad) {
        int32_t len = kpad - off < OQCI_KCHUNK ? kpad - off : OQCI_KCHUNK;
        if (nk == 4) {
            if (in_type == OQCI_U8)
                dot_u8s8_1x4c4__c(a + off, w + off, (size_t)kpad, len, acc);
            else
                dot_s8s8_1x4c4__c((const int8_t *)a + off, w + off, (size_t)kpad, len, acc);
        } else {
            for (j = 0; j < nk; j++) {
                const int8_t *wj = w + (size_t)j * (size_t)kpad + off;
                acc[j] += in_type == OQCI_U8
                              ? dot_u8s8_1x1c4__c(a + off, wj, len)
                              : dot_s8s8_1x1c4__c((const int8_t *)a + off, wj, len);
            }
        }
        off += len;
    }
}

static void conv_portable(const OqciConv *p, const void *x, void *y, void *scratch, int64_t q0,
                          int64_t q1) {
    int64_t pix = (int64_t)p->out_h * p->out_w, plane = (int64_t)p->in_h * p->in_w, n, p0;
    int32_t cg = p->in_c / p->group, kg = p->out_c / p->group, g;
    int32_t rows = pix < CONV_ROWS ? (int32_t)pix : CONV_ROWS;
    for (n = q0 / pix; n < p->batch && n * pix < q1; n++)   /* (pixels [q0, q1) of all) */
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = (const uint8_t *)x + (n * p->in_c + (int64_t)g * cg) * plane;
            int64_t end = q1 - n * pix < pix ? q1 - n * pix : pix;
            for (p0 = q0 > n * pix ? q0 - n * pix : 0; p0 < end; p0 += rows) {
                int64_t nr = end - p0 < rows ? end - p0 : rows, r;
                int32_t kk;
                oqcik_im2col(p, xg, p0, nr, (uint8_t *)scratch);
                for (kk = 0; kk < kg; kk += 4) {
                    int nk = kg - kk < 4 ? kg - kk : 4, j;
                    int32_t k = g * kg + kk;   /* first output channel of this block */
                    const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                    for (r = 0; r < nr; r++) {
                        int64_t acc[4];
                        dot_rows((const uint8_t *)scratch + r * p->kpad, p->in_type, w,
                                 p->kpad, nk, acc);
                        for (j = 0; j < nk; j++) {
                            int64_t v = acc[j] + (p->bias ? p->bias[k + j] : 0);
                            put_q(p, y, (n * p->out_ctotal + p->out_coff + k + j) * pix + p0 + r,
                                  rq1(p, sat32(v), k + j));
                        }
                    }
                }
            }
        }
}

/* The depthwise planes: int16 (Arm) or float (x86) elements, or conv_dw3q's bytes. */
static size_t dw_scratch(const OqciConv *p) {
    DwGeo d;
    int32_t qbs, qrows;
    int64_t q = oqcik_dw3q_geo(p, &qbs, &qrows);
    /* AVX-512's flat K x K planes: the plane and (K - 1) (W + 1) + 32 zeros */
    int64_t flat = ((int64_t)p->k_h - 1) * (p->in_w + 1) + 32 + (int64_t)p->in_h * p->in_w, planes;
    int64_t s2 = p->s_h == 2 && p->s_w == 2 ? dws2_floats(p) : 0;
    dw_geo(p, &d);
    planes = (int64_t)d.phases * d.rows * d.width;
    planes = planes > flat ? planes : flat;
    planes = planes > s2 ? planes : s2;
    q = q > oqcik_dwkq_bytes(p) ? q : oqcik_dwkq_bytes(p);   /* (VBMI's 5x5, 7x7) */
    return ALIGN + (size_t)(planes * 4 > q ? planes * 4 : q);
}
/* ======================================================================================
 * Selection, validation, entry points.
 * ==================================================================================== */

#if defined(OQCI_TEST_HOOKS)
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
static atomic_int forced_isa;   /* OQCI_ISA_AUTO until oqci_force_isa() */
#define FORCED() atomic_load(&forced_isa)
#define FORCE(v) atomic_store(&forced_isa, (v))
#else
static volatile int forced_isa;
#define FORCED() forced_isa
#define FORCE(v) (forced_isa = (v))
#endif
#endif

/* The CPU runs family isa (compiled in or not). */
static int cpu_has(int isa) {
    switch (isa) {
    case OQCI_ISA_AUTO:
    case OQCI_ISA_PORTABLE:
        return 1;
#if HAVE_AVX2
    case OQCI_ISA_AVX2:
#if defined(__AVX2__)
        return 1;
#else   /* (the depthwise kernels use FMA: every AVX2 CPU in use has it) */
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#endif
#if HAVE_AVXVNNI
    case OQCI_ISA_AVXVNNI:
#if defined(__AVXVNNI__) || OQCI_EMU_VNNI
        return 1;
#else
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
#endif
#endif
#if HAVE_AVX512VNNI
    case OQCI_ISA_AVX512VNNI:
#if (defined(__AVX512VNNI__) && defined(__AVX512BW__)) || OQCI_EMU_VNNI
        return 1;
#else
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
#endif
#endif
#if HAVE_VBMI
    case OQCI_ISA_AVX512VBMI:
#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
        return 1;
#else
        __builtin_cpu_init();
        return cpu_has(OQCI_ISA_AVX512VNNI) && __builtin_cpu_supports("avx512vbmi");
#endif
#endif
#if HAVE_AMX
    case OQCI_ISA_AMX:   /* (the kernel's grant says the CPU has the tiles; all have VBMI) */
        return cpu_has(OQCI_ISA_AVX512VNNI) && oqcik_amx_permit();
#endif
#if HAVE_NEONDOT
    case OQCI_ISA_NEONDOT:
#if OQCI_ARM_DISPATCH   /* the kernel's HWCAP_ASIMDDP (bit 20 of AT_HWCAP) */
        return (getauxval(AT_HWCAP) >> 20) & 1;
#else
        return 1;
#endif
#endif
    default:
        return 0;
    }
}

int oqci_isa_available(int isa) {
    return isa >= 0 && isa < OQCI_ISA_COUNT && cpu_has(isa);
}

/* The INT8 conv families of the ISA table (oqc_isa.h) with their names, in ascending
 * preference (-1: a row without an INT8 family). */
#define ISA_ROW(name, int8, fp32, x86, flags, files) {int8, name},
static const struct {
    int isa;
    const char *name;
} isa_rows[] = {OQC_ISA_TABLE(ISA_ROW)};
#undef ISA_ROW
#define ISA_ROWS (sizeof isa_rows / sizeof isa_rows[0])

int oqci_conv_isa(void) {
    size_t i;
#if defined(OQCI_TEST_HOOKS)
    int f = FORCED();
    if (f != OQCI_ISA_AUTO)
        return f;
#endif
    for (i = ISA_ROWS; i-- > 0;)   /* the most preferred family this CPU runs */
        if (isa_rows[i].isa > OQCI_ISA_AUTO && cpu_has(isa_rows[i].isa))
            return isa_rows[i].isa;
    return OQCI_ISA_PORTABLE;
}

#if defined(OQCI_TEST_HOOKS)
int oqci_force_isa(int isa) {
    if (!oqci_isa_available(isa))
        return OQCI_EINVAL;
    FORCE(isa);
    return OQCI_OK;
}
#endif

const char *oqci_isa_name(int isa) {
    size_t i;
    for (i = 0; i < ISA_ROWS && isa >= 0 && isa < OQCI_ISA_COUNT; i++)
        if (isa_rows[i].isa == isa)
            return isa_rows[i].name;
    return "?";
}

/* Every field consistent (the pointers x, y and scratch are checked by the caller). */
static int conv_ok(const OqciConv *p) {
    int64_t kdim;
    if (!p || !p->w)
        return 0;
    if (p->batch < 0 || p->in_c < 1 || p->in_h < 1 || p->in_w < 1 || p->out_c < 1 ||
        p->out_h < 1 || p->out_w < 1 || p->k_h < 1 || p->k_w < 1 || p->s_h < 1 ||
        p->s_w < 1 || p->d_h < 1 || p->d_w < 1 || p->p_t < 0 || p->p_l < 0 || p->group < 1)
        return 0;
    if (p->in_c % p->group || p->out_c % p->group)
        return 0;
    kdim = (int64_t)(p->in_c / p->group) * p->k_h * p->k_w;
    if (kdim != p->kdim || p->kpad < p->kdim || p->kpad % 4)
        return 0;
    if (p->out_coff < 0 || p->out_ctotal < 1 || p->out_coff > p->out_ctotal - p->out_c)
        return 0;
    if (p->wpair16 != 0 && p->wpair16 != 1)
        return 0;
    if ((p->in_type != OQCI_S8 && p->in_type != OQCI_U8) ||
        !oqci_range_ok(p->out_type, p->lo, p->hi))
        return 0;
    /* (accumulator outputs do not read rq) */
    return p->out_type == OQCI_S32 || oqci_requant_ok(&p->rq, 0, p->out_c - 1);
}

int oqci_conv_wpair16(const OqciConv *p) {
    size_t n, i;
    if (!p || !p->w || p->out_c < 1 || p->kpad < 1)
        return 0;
    n = (size_t)p->out_c * (size_t)p->kpad;
    for (i = 0; i + 1 < n; i += 2) {
        int32_t a = p->w[i], b = p->w[i + 1];
        int32_t pos = (a > 0 ? a : 0) + (b > 0 ? b : 0), neg = (a < 0 ? -a : 0) + (b < 0 ? -b : 0);
        if (pos > 128 || neg > 128)   /* 255 * 129 > 32767; 255 * 128 = 32640 */
            return 0;
    }
    return 1;
}

/* Direct depthwise kernel applies: one input channel per group, few taps, 8-bit outputs
 * (accumulator outputs go through the GEMM, see "Accumulator outputs" above). */
static int is_dw(const OqciConv *p) {
    return p->in_c == p->group && p->k_h * p->k_w <= DW_MAX_TAPS && p->out_type != OQCI_S32;
}

static size_t conv_scratch(const OqciConv *p, int amx) {
    int64_t pix;
    size_t s, a, b;
    if (!p || p->out_h < 1 || p->out_w < 1 || p->kpad < 1 || p->out_c < 1 || p->group < 1 ||
        p->s_w < 1 || p->s_h < 1 || p->d_h < 1 || p->d_w < 1 || p->k_h < 1 || p->k_w < 1)
        return 0;
    pix = (int64_t)p->out_h * p->out_w;
    s = (size_t)(pix < CONV_ROWS ? pix : CONV_ROWS) * (size_t)p->kpad;   /* portable */
    {   /* SIMD GEMM */
        size_t c;
        a = gemm_scratch(p, amx, &a, &b, &c);
    }
    if (a > s)
        s = a;
    if (amx && amxt_fits(p) && amxt_scratch(p) > s)
        s = amxt_scratch(p);
    if ((size_t)p->kpad > s)   /* few-pixel path: one im2col row */
        s = (size_t)p->kpad;
    if (is_dw(p) && dw_scratch(p) > s)
        s = dw_scratch(p);
    return s;
}

size_t oqci_conv_scratch(const OqciConv *p) {
    return conv_scratch(p, 1);
}

size_t oqci_conv_scratch_noamx(const OqciConv *p) {
    return conv_scratch(p, 0);
}

int oqci_conv_amx_build(void) {
    return HAVE_AMX;
}

/* The conv files' configuration objects, as this file was compiled (OQCIK_CFG in
 * oqci_conv_int.h: a file compiled with other flags defines another name and the link
 * fails).  Read on oqci_conv's error path (each is 0), so that the references stay in
 * the program even where the linker removes unused sections (-Wl,--gc-sections), at no
 * cost to a valid call. */
static int cfg_check(void) {
    return OQCIK_CFG(gemm) | OQCIK_CFG(avx2) | OQCIK_CFG(dwx86) | OQCIK_CFG(dwq) |
           OQCIK_CFG(amxt) | OQCIK_CFG(avx512) | OQCIK_CFG(avx512_ukr) | OQCIK_CFG(neon);
}

#if HAVE_AVX2
/* The GEMM family oqci_conv runs a conv of more than a few pixels with at x86 level
 * `level` (those AMX's tiles do not take first). */
static const Family *x86_family(const OqciConv *p, int isa, int level) {
    const Family *f = p->wpair16 ? &oqcik_family_avx2n : &oqcik_family_avx2;
#if HAVE_AVXVNNI
    if (isa == OQCI_ISA_AVXVNNI)
        f = &oqcik_family_avxvnni;
#endif
#if HAVE_AVX512VNNI
    if (level >= OQC_X86_AVX512)
        f = &oqcik_family_avx512vnni;
#endif
#if HAVE_VBMI
    if (level >= OQC_X86_VBMI)   /* (the AMX CPUs have it) */
        f = &oqcik_family_avx512vbmi;
#endif
    (void)isa;
    (void)level;
    return f;
}
#endif

int oqci_conv(const OqciConv *p, const void *x, void *y, void *scratch) {
    int isa;
    if (!conv_ok(p) || !x || !y || !scratch)
        return OQCI_EINVAL + cfg_check();
    isa = oqci_conv_isa();
    (void)isa;
#if HAVE_AVX2
    int level = oqci_isa_x86(isa);   /* the table's x86 column, looked up once */
    if (level >= OQC_X86_AVX2) {
        int64_t npix = (int64_t)p->batch * p->out_h * p->out_w;
        /* AVX-512 kernels; with VBMI (the AMX CPUs have it) */
        int z = level >= OQC_X86_AVX512;
        int vb = level >= OQC_X86_VBMI;
#ifndef OQCI_NO_FLOAT   /* (integer-only builds: depthwise goes through the GEMM) */
        if (is_dw(p)) {
#if HAVE_VBMI
            if (vb && oqcik_dw3q_ok(p)) {
                oqcik_conv_dw3q__avx512vbmi(p, x, y, scratch);
                return OQCI_OK;
            }
            if (vb && oqcik_dwkq_ok(p)) {
                oqcik_conv_dwkq__avx512vbmi(p, x, y, scratch);
                return OQCI_OK;
            }
#endif
#if HAVE_DWZ
            if (z && oqcik_dwflat_ok(p)) {
                oqcik_conv_dwflat__avx512vnni(p, x, y, scratch);
                return OQCI_OK;
            }
            if (z && oqcik_dws2flat_ok(p)) {
                oqcik_conv_dws2flat__avx512vnni(p, x, y, scratch);
                return OQCI_OK;
            }
#endif
            oqcik_conv_dwf__avx2(p, x, y, scratch, z);
            return OQCI_OK;
        }
#endif
        if (npix < GEMV_MAX_PIX) {
            oqcik_conv_gemv_avx2(p, x, y, scratch, z);
            return OQCI_OK;
        }
#if HAVE_AMX && HAVE_DWZ
        if (isa == OQCI_ISA_AMX && amxt_fits(p) && oqcik_conv_amxt(p, x, y, scratch))
            return OQCI_OK;
#endif
#if HAVE_AMX
        if (isa == OQCI_ISA_AMX && amx_fits(p)) {
            oqcik_conv_amx(p, x, y, scratch);
            return OQCI_OK;
        }
#endif
        (void)vb;
        (void)z;
        oqcik_conv_gemm(p, x86_family(p, isa, level), x, y, scratch);
        return OQCI_OK;
    }
#endif
#if HAVE_NEONDOT
    if (isa == OQCI_ISA_NEONDOT) {
        if (is_dw(p))
            oqcik_conv_dw__neondot(p, x, y, scratch);
        else
            oqcik_conv_gemm(p, &oqcik_family_neondot, x, y, scratch);
        return OQCI_OK;
    }
#endif
    conv_portable(p, x, y, scratch, 0, (int64_t)p->batch * p->out_h * p->out_w);
    return OQCI_OK;
}

/* ======================================================================================
 * Threads: parts over disjoint outputs (see oqci.h).
 * ==================================================================================== */

/* Output rows [r0, r1) of batch * out_h of a conv of one group that is not depthwise
 * (par_split's row parts): oqci_conv's outputs there, by the GEMM driver of the family
 * oqci_conv runs p with (on an AMX CPU, the VBMI family instead of the tiles: the same
 * bits), or by the portable loops. */
static void conv_rows(const OqciConv *p, const void *x, void *y, void *scratch, int64_t r0,
                      int64_t r1) {
    int isa = oqci_conv_isa();
    (void)isa;
#if HAVE_AVX2
    if (oqci_isa_x86(isa) >= OQC_X86_AVX2) {
        oqcik_conv_gemm_rows(p, x86_family(p, isa, oqci_isa_x86(isa)), x, y, scratch, r0, r1);
        return;
    }
#endif
#if HAVE_NEONDOT
    if (isa == OQCI_ISA_NEONDOT) {
        oqcik_conv_gemm_rows(p, &oqcik_family_neondot, x, y, scratch, r0, r1);
        return;
    }
#endif
    conv_portable(p, x, y, scratch, r0 * p->out_w, r1 * p->out_w);
}

/* Whether p may be split by output rows for nthreads (par_split's condition but for
 * OQCI_PAR_ROW_MAXC, which the build that sized the scratch may have had otherwise). */
static int row_split_ok(const OqciConv *p, int nthreads) {
    int64_t rows = (int64_t)p->batch * p->out_h;
    return p->group == 1 && !is_dw(p) && rows >= 4 * (int64_t)nthreads && p->out_w >= 8 &&
           rows <= INT32_MAX;
}

/* How p is split for nthreads: into *units units of the kind *by (0: runs of 8 output
 * channels, or single ones where there are fewer than 8 per thread; 1: groups; 2:
 * images; 3: output rows), of which each part takes a contiguous range; returns the
 * number of parts (with min_macs 0: as many as threads and units allow).  The choice
 * depends on p alone, not on the CPU: the compiler sizes the scratch with it. */
static int par_split(const OqciConv *p, int nthreads, int64_t min_macs, int32_t *units,
                     int *by) {
    int64_t macs = (int64_t)p->batch * p->out_c * p->out_h * p->out_w * p->kdim, cap;
    int n = nthreads;
    /* Few output channels over many pixels (a MobileNet's stem and projections): split
     * by channels, every part would pack all of the input's panels for a few tiles of
     * channels (packing is most of a thin conv's work) and the parts would be uneven
     * (24 channels: 8 and 16); rows share nothing but the weights.  Kernels wider than
     * 1x1 too: their packing unfolds every input byte k_h * k_w times (a ResNet's 3x3
     * convs at 2 threads on a 2-core Zen 4: resnet18 5.76 -> 5.55 ms, googlenet 4.76
     * -> 4.63).  1x1 convs of many channels stay split by channels: a MobileNet's
     * wide expansions feed a depthwise conv, whose parts then read the channels their
     * own core wrote (every 1x1 by rows: mobilenet_v2 1.64 -> 1.68 ms; those below 128
     * channels by rows rather than below 64: 0.3-1.1% faster on the six bench
     * networks, the 96-channel expansion at 112x112 0.105 -> 0.087 ms). */
    if (row_split_ok(p, nthreads) &&
        (p->out_c < OQCI_PAR_ROW_MAXC || (int64_t)p->k_h * p->k_w > 1)) {
        *by = 3;
        *units = (int32_t)((int64_t)p->batch * p->out_h);
    } else if (p->group == 1) {
        *by = 0;
        *units = p->out_c >= 8 * nthreads ? (p->out_c + 7) / 8 : p->out_c;
    } else if (p->batch == 1) {
        *by = 1;   /* groups */
        *units = p->group;
    } else {
        *by = 2;   /* images */
        *units = p->batch;
    }
    /* A depthwise conv does a few multiply-adds per byte it moves, and its input was
     * just written by a producer split into runs of output channels - the same
     * channels its group parts read, so each thread reads what it wrote.  Left whole,
     * one thread would fetch the other's half from that core's cache: on a 2-core
     * AMD EPYC (Zen 4) a 28x28x192 3x3 one took 0.09 ms that way, 0.04 ms on one
     * thread alone.  Hence the lower threshold. */
    /* And a depthwise channel costs more than its few multiply-adds (its plane copied
     * into the scratch, its weights and requantization set up): on Zen 4 about 40 ns a
     * channel besides 0.03 ns a multiply-add, so MobileNetV2's 576-channel 7x7 one
     * (0.25 M multiply-adds) takes 45 us and is worth splitting. */
    if (is_dw(p)) {
        min_macs /= OQCI_PAR_DW_DIV;
        macs += (int64_t)p->batch * p->out_c * OQCI_PAR_DW_CH_MACS;
    }
    /* A conv of few pixels (a classifier's Gemm) reads each weight byte for fewer than
     * GEMV_MAX_PIX multiply-adds: it runs at the speed of memory (resnet18's 512 x
     * 1000 one: 0.06 ms on one Zen 4 core, 9 multiply-adds a nanosecond). */
    else if ((int64_t)p->batch * p->out_h * p->out_w < GEMV_MAX_PIX)
        min_macs /= OQCI_PAR_GEMV_DIV;
    cap = min_macs > 0 ? macs / min_macs : nthreads;
    if (n > *units)
        n = *units;
    if (n > cap)
        n = (int)cap;
    return n < 1 ? 1 : n;
}

/* Part i of n of p: *sub, and the byte offsets of its input and output; rows [*r0,
 * *r1) of it for row parts (by 3), else *r0 = -1 (all of sub). */
static void part(const OqciConv *p, int by, int32_t units, int n, int i, OqciConv *sub,
                 size_t *xo, size_t *yo, int64_t *r0, int64_t *r1) {
    int32_t u0 = (int32_t)((int64_t)units * i / n), u1 = (int32_t)((int64_t)units * (i + 1) / n);
    int32_t k0, k1;
    size_t plane = (size_t)p->in_h * (size_t)p->in_w;
    *sub = *p;
    *xo = *yo = 0;
    *r0 = *r1 = -1;
    if (by == 3) {   /* the whole conv, rows [u0, u1) */
        *r0 = u0;
        *r1 = u1;
        return;
    }
    if (by == 2) {   /* images [u0, u1) */
        size_t pix = (size_t)p->out_h * (size_t)p->out_w;
        sub->batch = u1 - u0;
        *xo = (size_t)u0 * (size_t)p->in_c * plane;
        *yo = (size_t)u0 * (size_t)p->out_ctotal * pix * (p->out_type == OQCI_S32 ? 4 : 1);
        return;
    }
    if (by == 1) {   /* groups [u0, u1) */
        int32_t cg = p->in_c / p->group, kg = p->out_c / p->group;
        sub->group = u1 - u0;
        sub->in_c = sub->group * cg;
        *xo = (size_t)u0 * (size_t)cg * plane;
        k0 = u0 * kg;
        k1 = u1 * kg;
    } else {   /* channels */
        int32_t len = units < p->out_c ? 8 : 1;
        k0 = u0 * len;
        k1 = u1 * len < p->out_c ? u1 * len : p->out_c;
    }
    sub->out_c = k1 - k0;
    sub->out_coff = p->out_coff + k0;
    sub->w = p->w + (size_t)k0 * (size_t)p->kpad;
    if (p->bias)
        sub->bias = p->bias + k0;
    if (p->rq.per_index) {
        if (p->rq.mult)
            sub->rq.mult = p->rq.mult + k0;
        if (p->rq.m)
            sub->rq.m = p->rq.m + k0;
        if (p->rq.shift)
            sub->rq.shift = p->rq.shift + k0;
    }
}

/* Parts of p for nthreads threads; min_macs as par_split's. */
static int par_parts(const OqciConv *p, int nthreads, int64_t min_macs) {
    int32_t units;
    int by;
    return p && nthreads > 1 && p->batch > 0 ? par_split(p, nthreads, min_macs, &units, &by)
                                             : 1;
}

int oqci_conv_parts(const OqciConv *p, int nthreads) {
    return par_parts(p, nthreads, OQCI_PAR_MIN_MACS);
}

/* The scratch slice of each of n parts of p (a 64-byte multiple). */
static size_t par_stride(const OqciConv *p, int nthreads, int n, int amx) {
    int32_t units;
    int by, i;
    size_t s = 0, xo, yo;
    par_split(p, nthreads, 0, &units, &by);
    for (i = 0; i < n; i++) {
        OqciConv sub;
        size_t si;
        int64_t r0, r1;
        part(p, by, units, n, i, &sub, &xo, &yo, &r0, &r1);
        si = (size_t)round_up((int64_t)conv_scratch(&sub, amx), ALIGN);
        if (si > s)
            s = si;
    }
    return s;
}

/* The whole conv's scratch, or n slices for any part count n up to nthreads, whichever
 * is largest. */
static size_t par_scratch(const OqciConv *p, int nthreads, int amx) {
    size_t s = conv_scratch(p, amx);
    int n, most = par_parts(p, nthreads, 0);
    for (n = 2; n <= most; n++)
        if (par_stride(p, nthreads, n, amx) * (size_t)n > s)
            s = par_stride(p, nthreads, n, amx) * (size_t)n;
    /* row parts (each the whole conv's scratch) with any OQCI_PAR_ROW_MAXC */
    if (nthreads > 1 && row_split_ok(p, nthreads)) {
        size_t r = (size_t)round_up((int64_t)conv_scratch(p, amx), ALIGN) * (size_t)nthreads;
        if (r > s)
            s = r;
    }
    return s;
}

size_t oqci_conv_par_scratch(const OqciConv *p, int nthreads) {
    return par_scratch(p, nthreads, 1);
}

size_t oqci_conv_par_scratch_noamx(const OqciConv *p, int nthreads) {
    return par_scratch(p, nthreads, 0);
}

/* Stores once into each cache line of bytes [b, b + len) the byte it holds (the
 * caller's bytes only: other bytes of the two end lines may be another part's). */
static void touch_lines(uint8_t *b, int64_t len) {
    volatile uint8_t *v = b;
    int64_t o;
    for (o = 0; o < len; o += 64 - (int64_t)((uintptr_t)(b + o) % 64))
        v[o] = v[o];
}

/* A depthwise part's output, line by line, before the kernel writes it.  Measured on a
 * 2-core AMD EPYC (Zen 4) in MobileNetV2 at 2 threads: a depthwise part whose output
 * lines the other core had last read (a consumer split by rows reads every channel)
 * ran 1.5x longer than with the same lines its own (0.040 against 0.026 ms for the
 * 192-channel 28x28 ones), as if every vector store stalled on the line's ownership;
 * one scalar store per line first takes the lines over in a few microseconds, with
 * many of them in flight, and the network ran 9% faster (1.90 -> 1.72 ms).  On one
 * thread the same stores only cost (3-6 us a layer), and the GEMM's parts, with more
 * work per output byte, gained nothing: depthwise parts only. */
static void touch_dw_output(const OqciConv *p, uint8_t *y) {
    int64_t opix = (int64_t)p->out_h * p->out_w, es = p->out_type == OQCI_S32 ? 4 : 1, n;
    for (n = 0; n < p->batch; n++)
        touch_lines(y + (n * p->out_ctotal + p->out_coff) * opix * es, p->out_c * opix * es);
}

/* One oqci_conv_par call: part i runs as task i. */
typedef struct ParJob {
    const OqciConv *p;
    const uint8_t *x;
    uint8_t *y, *scratch;
    size_t stride;
    int32_t units;
    int by, n;
} ParJob;

static void par_task(void *arg, int i) {
    const ParJob *j = arg;
    OqciConv sub;
    size_t xo, yo;
    int64_t r0, r1;
    part(j->p, j->by, j->units, j->n, i, &sub, &xo, &yo, &r0, &r1);
    if (r0 >= 0) {
        conv_rows(&sub, j->x, j->y, j->scratch + (size_t)i * j->stride, r0, r1);
        return;
    }
    if (is_dw(&sub))
        touch_dw_output(&sub, j->y + yo);
    (void)oqci_conv(&sub, j->x + xo, j->y + yo, j->scratch + (size_t)i * j->stride);
}

int oqci_conv_par(const OqciConv *p, const void *x, void *y, void *scratch, int nthreads,
                  OqciParallelFor run, void *ctx) {
    ParJob j;
    int i;
    if (!run || oqci_conv_parts(p, nthreads) == 1 || !conv_ok(p) || !x || !y || !scratch)
        return oqci_conv(p, x, y, scratch);
    j.p = p;
    j.x = (const uint8_t *)x;
    j.y = (uint8_t *)y;
    j.scratch = (uint8_t *)scratch;
    j.n = par_split(p, nthreads, OQCI_PAR_MIN_MACS, &j.units, &j.by);
    j.stride = par_stride(p, nthreads, j.n, HAVE_AMX);
    for (i = 0; i < j.n; i++) {   /* (valid by construction; checked, as every call is) */
        OqciConv sub;
        size_t xo, yo;
        int64_t r0, r1;
        part(p, j.by, j.units, j.n, i, &sub, &xo, &yo, &r0, &r1);
        if (!conv_ok(&sub))
            return OQCI_EINVAL;
    }
    run(ctx, par_task, &j, j.n);
    return OQCI_OK;
}
