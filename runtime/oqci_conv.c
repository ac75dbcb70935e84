/* oqci_conv.c - INT8 2-D convolution (also Gemm/MatMul as a 1x1 conv): a portable C99
 * reference and SIMD kernel families (x86 AVX2, AVX-VNNI, AVX-512 VNNI; Arm dot
 * product), all giving exactly the same bits.
 *
 * Exactness.  Every product x*w and every partial sum is an exact integer: the int32
 * sums of at most OQCI_KCHUNK terms cannot overflow (see oqci.h), so any summation
 * order, any split into lanes and any grouping of the reduction gives the same
 * accumulator; it is then offset by the bias in int64, saturated to int32 and
 * requantized exactly as oqci_requant does (the vector requantizations below repeat its
 * float and fixed-point steps operation for operation, and are tested against it).
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
 * SIMD families: a GEMM over packed pixel panels (conv_gemm).  The weights stay in
 * their oqci.h layout (out_c rows of kpad bytes, so nothing is repacked, at compile
 * time or per call): a microkernel broadcasts four consecutive weight bytes of one
 * channel (a "c4" quad, the DP4A unit) against vectors of pixels.  The pixels of a
 * panel (NR output pixels, consecutive over image, row and column, so Gemm rows and
 * small images fill whole panels) are unfolded into the scratch as
 *     panel[q][px][0..3] = the four inputs of reduction quad q (k = 4q .. 4q+3) of px,
 * one K block (blocks of equal size, each at most the panel bytes of KBLOCK reductions
 * of the AVX2 int16 panel: 28 KB, so 512 reductions there and 1194 in a 24-pixel byte
 * panel; AVX-512's 32-pixel panels take KBLOCK_Z = 1152, 36 KB, for the L1 of the CPUs
 * that have it) at a time, so a block stays in L1 while every channel tile of the group
 * runs over it.  A tile of MR
 * channels x NR pixels is held in registers (acc[channel][pixel vector]: one output
 * channel's pixels per vector, the NCHW order of y, so the requantization and the
 * stores are vector operations).  With several K blocks the microkernel adds its tile
 * to an int32 buffer of the group's channels (int64 above OQCI_KCHUNK).  Packing walks
 * the kernel row by row: a row of the unfolded matrix is a pointer into x when its
 * pixels' inputs lie inside one input row at stride 1, else a copy (the part inside
 * gathered, zeros around it), and every four rows are transposed into one quad.  A
 * 1x1 / stride 1 / unpadded conv is "flat": its panels are plain 4-channel transposes
 * of the input planes, no im2col.
 *   - AVX2 (q8conv_2x28c4__avx2): vpmaddubsw would saturate (255 * 127 * 2 > 32767), so
 *     the panel holds the inputs widened to 16 bits (zero- or sign-extended) and the
 *     weight quad is sign-extended with one vpmovsxbw per channel and quad; vpmaddwd
 *     (16-bit pairs into int32, exact) then sums px's k0 k1 and k2 k3 in two lanes,
 *     added together once per tile.  Measured on Zen 3, this mix runs at ~61 GMAC/s
 *     against ~95 for the inexact vpmaddubsw sequence, and beats the exact split of u8
 *     inputs into low 7 bits and top bit (two vpmaddubsw + two vpmaddwd per 32 MACs).
 *     s8 and u8 inputs need no offset: both widen exactly.
 *   - AVX2 with weights whose pairs fit int16 (p->wpair16, see oqci_conv_wpair16: 7-bit
 *     weights always do; oqc compile --weight-bits 7): q8conv_3x24c4n__avx2 on the VNNI
 *     panel (below), vpmaddubsw (exact for those weights) then vpmaddwd by ones, ~95
 *     GMAC/s on Zen 3; partial last panels (7x7 planes) run 8- or 16-pixel bodies.
 *   - AVX-512 VNNI (q8conv_8x32c4__avx512vnni) and AVX-VNNI (q8conv_4x24c4__avxvnni):
 *     vpdpbusd takes u8 x s8: u8 inputs are used as they are, s8 inputs x are packed as
 *     x + 128 (xor 0x80) and 128 * sum_k w[k] is subtracted from the channel's sum.
 *     The AVX-512 kernel has an 8x16 body for panels of at most 16 pixels and, like
 *     the narrow AVX2 one, an epilogue in registers (16 lanes: rq16).
 *   - Arm dot product (q8conv_4x16c4__neondot): sdot takes s8 x s8: s8 inputs as they
 *     are, u8 inputs x packed as x - 128 (xor 0x80) and 128 * sum_k w[k] added back.
 *     The corrections are computed once per call per channel (out_c x kpad additions)
 *     and added modulo 2^32 (exact: the corrected sum fits int32), or in int64 for
 *     reductions deeper than OQCI_KCHUNK.
 *   - Epilogue: per tile row, the channel's constants (RqV: correction, bias, whether
 *     the bias addition can overflow, the multiplier), then the AVX2 requantization
 *     (rq8) reproduces oqci_requant's float and fixed-point results exactly, 8 lanes at
 *     a time, and packs 32 outputs into bytes.
 *   - Few output pixels (Gemm or MatMul with a handful of rows: npix < GEMV_MAX_PIX): a
 *     panel would be mostly empty, so each pixel row is dotted with the weight rows
 *     (q8gemv_4x16__avx2: vpmaddwd on 16-bit copies, horizontal sums at the end).
 *   - Depthwise (one input channel per group, any multiplier, at most DW_MAX_TAPS
 *     taps): direct kernels on a copy of the channel's plane in the scratch, zero-padded
 *     and split by stride phase so every tap of a run of outputs is a contiguous run of
 *     it.  On x86 the plane holds floats: the products and partial sums of a window are
 *     integers below 2^21, so float multiply-adds are exact and one FMA does a tap of 8
 *     outputs; 3x3 kernels at vertical stride 1 do four output rows per pass, each
 *     loaded vector serving every row whose window holds it (q8dw_4x8x9f__avx2), other
 *     rows and kernels one row (q8dw_16x9f__avx2, q8dw_16xNf__avx2); with AVX-512, 3x3
 *     kernels take 16 outputs per vector (q8dw_4x16x9f__avx512vnni, q8dw_16x9f__avx512vnni)
 *     and 3x3 / stride 1 / pad 1 ones on planes up to 128x128 run on the whole plane as a
 *     flat array (conv_dw3flat__avx512vnni), 3x3 / stride 2 / pad 1 ones on four phase
 *     planes (conv_dw3s2flat__avx512vnni).  With float
 *     requantization and a bias small enough to keep the sums below 2^24, the sums
 *     start from the bias and are requantized in float directly.  On Arm the plane holds
 *     int16 and q8dw_1xN__c is the plain-C loop over taps.  Whole output rows are
 *     computed into a buffer and stored together, except on planes 4 to 8 wide
 *     (3x3, stride 1, fused), which go in blocks of 4 rows straight to the output bytes
 *     (q8dw_plane4x9f__avx2): there the buffer and the per-row calls cost more than the
 *     sums.
 *
 * Family selection: compile-time macros decide which families a build has (AVX2 with
 * __AVX2__, AVX-VNNI with __AVXVNNI__, AVX-512 VNNI with __AVX512VNNI__ and
 * __AVX512BW__, NEON dot with __ARM_FEATURE_DOTPROD on AArch64); a build without them
 * (e.g. the emitted C compiled with no -m flag, or a Cortex-M0) has only the portable
 * one, and a build with one of them uses it unconditionally (it was compiled for such a
 * CPU).  oqc's own library defines OQCI_DISPATCH: every x86 family is then compiled
 * with target attributes and chosen per call with __builtin_cpu_supports, which reads
 * what the compiler's runtime found once (AVX-VNNI with gcc only: see OQCI_CC_AVXVNNI).
 * The emitted C gets the same with -DOQCI_DISPATCH.  OQCI_TEST_HOOKS adds
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
 * amx_permit), on top of the AVX-512 VNNI family, whose packers and epilogue it uses:
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
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
#define HAVE_NEONDOT 1
#else
#define HAVE_NEONDOT 0
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

/* AVX-512 VBMI (vpermb), which every AMX CPU has: kernels only the AMX family uses. */
#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define T_VBMI
#else
#define T_VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512vnni,avx512vbmi")))
#endif

/* ---- sizes --------------------------------------------------------------------------- */

#define CONV_ROWS 16        /* portable: output pixels unfolded per scratch fill */
#define KBLOCK 512          /* SIMD GEMM: reduction elements per packed panel block */
#define TILE_MR 8           /* largest microkernel tile: channels */
#define TILE_NR 32          /* largest microkernel tile: pixels (tile row stride) */
#define PANEL_BYTES_PER_K 56   /* largest nr * element size (AVX2: 28 x int16) */
#define KBLOCK_Z 1152       /* AVX-512 (32-pixel byte panels): reduction elements per block
                             * (36 KB: 3x3 convs of 128 channels in one block, fused) */
/* A family's quads per K block: as many as fill the panel bytes of KBLOCK int16 x 28 */
#define KBQ(nr, esize) (KBLOCK * PANEL_BYTES_PER_K / (4 * (nr) * (esize)))
#define GEMV_MAX_PIX 8      /* fewer pixels per group than this: dot-product path */
#define DW_MAX_TAPS 64      /* larger depthwise kernels go through the GEMM */
#define DW_VEC 16           /* outputs per depthwise step (the plane's column rounding) */
#define DW_BUF 1024         /* depthwise: sums of output rows computed per store */
#define ALIGN 64
#define BAND_MAX 65536      /* SIMD GEMM: largest band of padded input rows (bytes) */
#define BAND_EXTRA 6        /* SIMD GEMM: output rows a band holds beyond one panel's */
#define BAND_MAX_KW 64      /* SIMD GEMM: widest kernel a band serves (pack_band) */

static int32_t sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static int64_t round_up(int64_t a, int64_t b) {
    return (a + b - 1) / b * b;
}

#if HAVE_AVX2 || HAVE_NEONDOT
static int32_t load32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint8_t *align_up(void *p) {
    uintptr_t a = (uintptr_t)p;
    return (uint8_t *)p + ((ALIGN - a % ALIGN) % ALIGN);
}

/* Zeros for padding rows of a panel (never written). */
static const uint8_t zero_row[32];

/* ceil(a / b) for b > 0 and any sign of a. */
static int64_t cdiv(int64_t a, int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -(-a / b);
}
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

/* Unfolds output pixels p0 .. p0 + nr - 1 of one group (xg: its first input channel)
 * into nr rows of kpad bytes at s. */
static void im2col(const OqciConv *p, const uint8_t *xg, int64_t p0, int64_t nr, uint8_t *s) {
    int64_t plane = (int64_t)p->in_h * p->in_w, r;
    int32_t cg = p->in_c / p->group;
    int32_t oh = (int32_t)(p0 / p->out_w), ow = (int32_t)(p0 % p->out_w);
    for (r = 0; r < nr; r++) {
        uint8_t *row = s + r * p->kpad;
        int64_t ih0 = (int64_t)oh * p->s_h - p->p_t, iw0 = (int64_t)ow * p->s_w - p->p_l;
        int32_t t = 0, c, i, j;
        for (c = 0; c < cg; c++) {
            const uint8_t *xc = xg + c * plane;
            for (i = 0; i < p->k_h; i++) {
                int64_t ih = ih0 + (int64_t)i * p->d_h;
                const uint8_t *xr;
                if (ih < 0 || ih >= p->in_h) {
                    for (j = 0; j < p->k_w; j++)
                        row[t++] = 0;
                    continue;
                }
                xr = xc + ih * p->in_w;
                for (j = 0; j < p->k_w; j++) {
                    int64_t iw = iw0 + (int64_t)j * p->d_w;
                    row[t++] = iw >= 0 && iw < p->in_w ? xr[iw] : 0;
                }
            }
        }
        while (t < p->kpad)
            row[t++] = 0;
        if (++ow == p->out_w) {
            ow = 0;
            oh++;
        }
    }
}

/* Stores one requantized output: y element o (out_type). */
static void put_q(const OqciConv *p, void *y, int64_t o, int32_t q) {
    if (p->out_type == OQCI_U8)
        ((uint8_t *)y)[o] = (uint8_t)q;
    else
        ((int8_t *)y)[o] = (int8_t)q;
}

static void conv_portable(const OqciConv *p, const void *x, void *y, void *scratch) {
    int64_t pix = (int64_t)p->out_h * p->out_w, plane = (int64_t)p->in_h * p->in_w, n, p0;
    int32_t cg = p->in_c / p->group, kg = p->out_c / p->group, g;
    int32_t rows = pix < CONV_ROWS ? (int32_t)pix : CONV_ROWS;
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = (const uint8_t *)x + (n * p->in_c + (int64_t)g * cg) * plane;
            for (p0 = 0; p0 < pix; p0 += rows) {
                int64_t nr = pix - p0 < rows ? pix - p0 : rows, r;
                int32_t kk;
                im2col(p, xg, p0, nr, (uint8_t *)scratch);
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
                            int32_t q = oqci_requant(sat32(v), &p->rq, k + j, p->lo, p->hi);
                            put_q(p, y, (n * p->out_ctotal + p->out_coff + k + j) * pix + p0 + r,
                                  q);
                        }
                    }
                }
            }
        }
}

/* ---- scratch of the SIMD paths (needed by every build: see oqci_conv_scratch) ---- */

/* 1x1 / stride 1 / unpadded: the input planes are the unfolded matrix's rows. */
static int is_flat(const OqciConv *p) {
    return p->k_h == 1 && p->k_w == 1 && p->s_h == 1 && p->s_w == 1 && p->p_t == 0 &&
           p->p_l == 0 && p->out_h == p->in_h && p->out_w == p->in_w &&
           (int64_t)p->in_h * p->in_w <= INT32_MAX;
}

/* The band of zero-padded input rows a panel reads (conv_gemm, convs that are not
 * flat): at most `rows` rows of `cols` columns per input channel of the group (rows:
 * the output rows a run of TILE_NR pixels can touch, widened by the kernel; cols: the
 * padded columns any output reads).  Bytes, or 0 when above BAND_MAX (the panels are
 * then unfolded from x directly). */
static int grid_ok(const OqciConv *p);
static size_t band_dims(const OqciConv *p, int64_t *rows, int64_t *cols) {
    int64_t need = (TILE_NR - 1) / p->out_w + 2, extra, bytes = 0;
    *cols = (int64_t)(p->out_w - 1) * p->s_w + (int64_t)(p->k_w - 1) * p->d_w + 1;
    /* BAND_EXTRA more output rows when they fit: a band filled once then serves the
     * panels of several output rows (conv_gemm refills it only when a panel needs rows
     * outside it) */
    for (extra = BAND_EXTRA;; extra = 0) {
        int64_t spanned = need + extra < p->out_h ? need + extra : p->out_h;
        *rows = (spanned - 1) * p->s_h + (int64_t)(p->k_h - 1) * p->d_h + 1;
        bytes = (int64_t)(p->in_c / p->group) * *rows * *cols;
        if (bytes <= BAND_MAX || extra == 0)
            break;
    }
    if (is_flat(p) || bytes > BAND_MAX || p->k_w > BAND_MAX_KW)
        return 0;
    if (grid_ok(p))   /* (grid panels: a last row's dropped positions read this far on) */
        bytes += (int64_t)(p->k_w - 1) * p->d_w;
    return (size_t)round_up(bytes, ALIGN);
}

/* Grid panels (conv_gemm) for stride-1 convs with padding columns and short rows: the
 * band holds each channel's rows row-major, cols bytes apart, so the positions oh cols
 * + ow of the "grid" (ow < cols) read the band at one offset per reduction element, and
 * TILE_NR consecutive positions make a panel that one transpose per quad packs whatever
 * rows it spans (a panel of outputs packs one run per output row).  Positions with ow >=
 * out_w are computed and dropped: (cols - out_w) / cols more work, against out_w wide
 * runs that leave vectors partly empty.  Applies with a band (band_dims) to rows narrower
 * than GRID_MAX_W. */
#define GRID_MAX_W 64
static int grid_ok(const OqciConv *p) {
    int64_t drop = (int64_t)(p->k_w - 1) * p->d_w;   /* (per row: < TILE_NR / 2, so
                                                       * every panel has outputs) */
    return p->s_h == 1 && p->s_w == 1 && p->out_w < GRID_MAX_W && p->k_w <= BAND_MAX_KW &&
           drop > 0 && drop < TILE_NR / 2 && 2 * drop <= p->out_w && !is_flat(p);
}

/* A flat conv whose panels the band packer reads straight from the input (Band.data):
 * one band row per input channel, the image's plane (its offsets fit int32). */
static int flat_table(const OqciConv *p) {
    return is_flat(p) && (int64_t)p->kpad * p->in_h * p->in_w <= INT32_MAX;
}

/* The AMX path (conv_amx) may run this conv, on some build and CPU: groups of at least
 * AMX_MIN_KG channels (every tile row a real channel), sums that fit int32, reductions
 * deeper than 32 (at most 32 of a chunk's 64 would be real: the AVX-512 VNNI kernels
 * are faster there, measured on MobileNet-v2's K 16-28 layers). */
#define AMX_MIN_KG 16
#define AMX_SUMS_BYTES (32 * TILE_NR * 4)   /* one panel's tile sums: 32 channels */
#define AMX_SUMS_SLOTS 2                    /* (tiles__amx alternates between them) */
#define AMX_BATCH_BYTES 65536               /* panels packed before a burst of tile work */
#define AMX_BATCH_MAX 8
/* amx_work's region: the sums slots (and TILE_MR rows the epilogue may read past the
 * last), then the batch's panels after the first, then the weight tails */
#define AMX_PANELS_OFF (AMX_SUMS_SLOTS * AMX_SUMS_BYTES + TILE_MR * TILE_NR * 4)
static int amx_fits(const OqciConv *p) {
    return p->out_c / p->group >= AMX_MIN_KG && p->kpad > 32 && p->kpad <= OQCI_KCHUNK;
}

/* Bytes of one AMX panel (the whole reduction, rows of 32 pixels) and how many panels
 * conv_gemm packs before it runs the tiles over them: the tile unit of Sapphire Rapids
 * runs a short burst several times slower after the core has spent a microsecond or so
 * on other work (measured: a 32 x 32 x 144 step costs 240 TSC ticks back to back and
 * 1500 between packings), so panels go to it in batches of up to AMX_BATCH_MAX, within
 * AMX_BATCH_BYTES. */
static size_t amx_panel_bytes(const OqciConv *p) {
    return (size_t)round_up(p->kpad, 64) * 32;
}
static int amx_batch(const OqciConv *p) {
    size_t n = AMX_BATCH_BYTES / amx_panel_bytes(p);
    return n < 1 ? 1 : n > AMX_BATCH_MAX ? AMX_BATCH_MAX : (int)n;
}

/* conv_amx's region after conv_gemm's: alignment, the tile sums (AMX_SUMS_SLOTS of
 * AMX_SUMS_BYTES, and TILE_MR rows more that the epilogue may read past the last),
 * the batch's panels after the first (which is conv_gemm's) and, when kpad is not a
 * multiple of 64, every channel's last kpad % 64 weight bytes zero-padded to 64 (the
 * last chunk's A tiles). */
static size_t amx_work_bytes(const OqciConv *p, int amx) {
    int nb;
    if (!amx || !amx_fits(p))
        return 0;
    nb = amx_batch(p);
    return ALIGN + AMX_PANELS_OFF + (size_t)(nb - 1) * amx_panel_bytes(p) +
           (p->kpad % 64 ? (size_t)p->out_c * 64 : 0);
}

/* Scratch of conv_gemm: aligned panel block, the deep-K tile buffer (int32 per K block
 * sum, int64 above OQCI_KCHUNK), the band and its row offsets (Band.koff: int32 per
 * reduction element), the per-channel corrections (int32) and fused epilogue constants
 * (RqPre), the weight row pointers of a group's channels (conv_gemm's wtab), conv_amx's
 * region.  amx: with the AMX family's needs (HAVE_AMX where the layout is used). */
static size_t gemm_scratch(const OqciConv *p, int amx, size_t *panel, size_t *cbuf,
                           size_t *band) {
    int64_t kb = p->kpad < KBLOCK ? p->kpad : KBLOCK, rows, cols;
    int64_t kz = p->kpad < KBLOCK_Z ? p->kpad : KBLOCK_Z;
    int64_t kg = p->out_c / p->group;
    *panel = (size_t)round_up(kb * PANEL_BYTES_PER_K > kz * 32 ? kb * PANEL_BYTES_PER_K : kz * 32,
                              ALIGN);
    *cbuf = p->kpad > KBLOCK ? (size_t)(round_up(kg, TILE_MR) * TILE_NR *
                                        (p->kpad > OQCI_KCHUNK ? 8 : 4))
                             : 0;
    if (amx && amx_fits(p) && amx_panel_bytes(p) > *panel)
        *panel = amx_panel_bytes(p);   /* (the whole reduction) */
    *band = band_dims(p, &rows, &cols);
    if (*band || flat_table(p))
        *band += (size_t)round_up((int64_t)p->kpad * 4, ALIGN);
    return ALIGN + *panel + *cbuf + *band + (size_t)p->out_c * 12 +
           (size_t)(kg + TILE_MR) * sizeof(const int8_t *) + 8 + amx_work_bytes(p, amx);
}

/* Plane geometry of a depthwise conv: rows (padded input rows read), phase row width
 * (outputs rounded up to DW_VEC plus the largest tap shift), phases (s_w). */
typedef struct DwGeo {
    int32_t rows, width, phases;
    int32_t taps;                  /* k_h * k_w */
} DwGeo;

#if HAVE_AVX2 && !defined(OQCI_NO_FLOAT)   /* (the float-plane kernels) */
/* A depthwise channel whose sums, bias included, stay below 2^24 in magnitude (|x w| <=
 * 255 * 128 per tap): float sums are exact, and start from the bias. */
static inline int dw_bias_fits(int64_t bias, int32_t taps) {
    return (bias < 0 ? -bias : bias) + (int64_t)taps * 32640 < 16777216;
}
#endif

static void dw_geo(const OqciConv *p, DwGeo *d) {
    d->rows = (p->out_h - 1) * p->s_h + (p->k_h - 1) * p->d_h + 1;
    d->width = (int32_t)round_up(p->out_w, DW_VEC) + (p->k_w - 1) * p->d_w / p->s_w;
    d->phases = p->s_w;
    d->taps = p->k_h * p->k_w;
}

/* AVX-512's stride-2 phase planes (conv_dw3s2flat__avx512vnni): four of (OH + 1) rows
 * of S = OW + 1, a row and a vector of slack. */
static int64_t dw3s2_floats(const OqciConv *p) {
    int64_t sr = (int64_t)p->out_w + 1;
    return 4 * ((int64_t)p->out_h + 1) * sr + sr + 32;
}

/* conv_dw3q's zero-padded byte plane: the image at (p_t, p_l), rows of *bs bytes (64
 * bytes readable from every vector's first column), *rows rows (every output row's
 * three).  Its bytes, 0 unless a 3x3 kernel at stride 1 or 2. */
static int64_t dw3q_geo(const OqciConv *p, int32_t *bs, int32_t *rows) {
    int64_t cols, r;
    if (p->k_h != 3 || p->k_w != 3 || p->s_h != p->s_w || p->s_w > 2 || p->d_h != 1 ||
        p->d_w != 1 || p->p_t > 2 || p->p_l > 2 || p->in_w > 4096 || p->out_w > 4096)
        return 0;
    cols = (int64_t)p->in_w + p->p_l;
    r = (int64_t)(round_up(p->out_w, 16) - 16) * p->s_w + 64;
    *bs = (int32_t)round_up(cols > r ? cols : r, 64);
    r = (int64_t)(p->out_h - 1) * p->s_h + 3;
    *rows = (int32_t)((int64_t)p->in_h + p->p_t > r ? (int64_t)p->in_h + p->p_t : r);
    return (int64_t)*bs * *rows;
}

/* The depthwise planes: int16 (Arm) or float (x86) elements, or conv_dw3q's bytes. */
static size_t dw_scratch(const OqciConv *p) {
    DwGeo d;
    int32_t qbs, qrows;
    int64_t q = dw3q_geo(p, &qbs, &qrows);
    /* AVX-512's flat 3x3 planes: W + 1 zeros, the plane, W + 33 zeros */
    int64_t flat = 2 * (int64_t)p->in_w + 34 + (int64_t)p->in_h * p->in_w, planes;
    int64_t s2 = p->s_h == 2 && p->s_w == 2 ? dw3s2_floats(p) : 0;
    dw_geo(p, &d);
    planes = (int64_t)d.phases * d.rows * d.width;
    planes = planes > flat ? planes : flat;
    planes = planes > s2 ? planes : s2;
    return ALIGN + (size_t)(planes * 4 > q ? planes * 4 : q);
}

#define HAVE_SIMD (HAVE_AVX2 || HAVE_NEONDOT)
#if HAVE_SIMD

/* ======================================================================================
 * SIMD families: shared pieces (plain C).
 * ==================================================================================== */

/* A run of consecutive panel pixels inside one output row of one image (or, for flat
 * convs, inside one image's plane: see Geo). */
typedef struct Seg {
    int64_t n;      /* image */
    int32_t oh;     /* output row (geometry of Geo) */
    int32_t ow;     /* first output column (Geo) */
    int32_t len;    /* pixels */
    int32_t off;    /* first panel column */
    int64_t pix0;   /* output pixel index in the image's plane (y addressing) */
} Seg;

/* The geometry the panel packer sees.  A 1x1 / stride 1 / unpadded conv is "flat": its
 * planes are seen as single rows (in_h = out_h = 1, in_w = out_w = plane), so a panel's
 * pixels make one run per image whatever the image width. */
typedef struct Geo {
    int32_t in_h, in_w, out_w;   /* input rows and columns, output columns */
    int64_t plane;               /* input elements per channel */
    int64_t pix;                 /* output pixels per image */
    int32_t cg;                  /* input channels per group */
    int32_t gcols;               /* positions per row: the band's cols (grid panels), else out_w */
    int64_t gpix;                /* positions per image: up to the last output */
    int grid;                    /* grid panels (use_grid) */
} Geo;

/* Grid panels for this conv: grid_ok and a band. */
static int use_grid(const OqciConv *p) {
    int64_t rows, cols;
    return grid_ok(p) && band_dims(p, &rows, &cols) != 0;
}

static void make_geo(const OqciConv *p, Geo *g) {
    int flat = is_flat(p);
    g->plane = (int64_t)p->in_h * p->in_w;
    g->pix = (int64_t)p->out_h * p->out_w;
    g->cg = p->in_c / p->group;
    g->in_h = flat ? 1 : p->in_h;
    g->in_w = flat ? (int32_t)g->plane : p->in_w;
    g->out_w = flat ? (int32_t)g->pix : p->out_w;
    g->grid = use_grid(p);
    g->gcols = g->grid ? p->out_w + (p->k_w - 1) * p->d_w : g->out_w;
    g->gpix = g->grid ? (int64_t)(p->out_h - 1) * g->gcols + p->out_w : g->pix;
}

/* Pixels of the panel at position P0 (n gpix + index): at most TILE_NR-wide nr, the
 * positions left, and with grid panels those left in the image. */
static int32_t panel_np(const Geo *g, int64_t P0, int64_t total, int32_t nr) {
    int64_t left = total - P0;
    if (g->grid && g->gpix - P0 % g->gpix < left)
        left = g->gpix - P0 % g->gpix;
    return left < nr ? (int32_t)left : nr;
}

/* Cuts the np positions starting at P0 (n * gpix + index) into runs of outputs (grid
 * panels: skipping the dropped positions, so runs may leave gaps in the panel). */
static int make_segs(const Geo *g, int64_t P0, int32_t np, Seg *s) {
    int ns = 0;
    int32_t off = 0, len;
    int64_t n = P0 / g->gpix, q = P0 % g->gpix;
    int32_t oh = (int32_t)(q / g->gcols), ow = (int32_t)(q % g->gcols);
    while (off < np) {   /* (walking the rows: no division per run) */
        if (q == g->gpix) {   /* the next image */
            n++;
            q = oh = ow = 0;
        }
        if (ow >= g->out_w) {   /* a grid row's dropped positions */
            len = g->gcols - ow;
            off += len;
            q += len;
            oh++;
            ow = 0;
            continue;
        }
        len = g->out_w - ow < np - off ? g->out_w - ow : np - off;
        s[ns].n = n;
        s[ns].oh = oh;
        s[ns].ow = ow;
        s[ns].len = len;
        s[ns].off = off;
        s[ns].pix0 = (int64_t)oh * g->out_w + ow;
        ns++;
        off += len;
        q += len;
        ow += len;
        if (ow == g->gcols) {
            oh++;
            ow = 0;
        }
    }
    return ns;
}

/* Transposes four rows of len input bytes into len panel pixels of 4 elements. */
typedef void (*Tr4Fn)(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                      const uint8_t *r3, int32_t len, void *dst);

/* dst[r dstep + t] = src[r sstep + t stride] for t < n, r < rows: a strided run inside
 * an input row, for rows rows (the same run in consecutive channels: one call per band
 * row and phase, not per channel). */
typedef void (*GatherFn)(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                         uint8_t *dst, int64_t dstep, int32_t rows);

#if HAVE_NEONDOT
static void gather__c(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                      uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r, t;
    for (r = 0; r < rows; r++, src += sstep, dst += dstep)
        for (t = 0; t < n; t++)
            dst[t] = src[(int64_t)t * stride];
}
#endif

/* Packs reduction quads q0 .. q0 + nq - 1 of the pixels of segs (group g) into panel
 * (nr pixels per quad, esize bytes per element).  The reduction index k walks the
 * group's channels c, kernel rows i and columns j; each (c, i) row of the kernel is
 * checked once against the input's rows and columns, then its k_w rows of the unfolded
 * matrix are pointers into x (a run inside the input row, stride 1) or copies: the part
 * inside the row gathered, zeros around it.  Every four rows make one quad (tr4). */
static void pack_panel(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                       const Seg *segs, int nseg, int32_t q0, int32_t nq, uint8_t *panel,
                       int32_t nr, int esize, Tr4Fn tr4, GatherFn gather) {
    int32_t taps = p->k_h * p->k_w;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *xg = x + (s->n * p->in_c + (int64_t)g * ge->cg) * ge->plane;
        int32_t k = 4 * q0, kend = 4 * (q0 + nq), nrow = 0, q = 0;
        int32_t c = k ? k / taps : 0, i = k ? k % taps / p->k_w : 0, j = k ? k % p->k_w : 0;
        int64_t ih0 = (int64_t)s->oh * p->s_h - p->p_t;
        int64_t iw0 = (int64_t)s->ow * p->s_w - p->p_l;
        int64_t span = (int64_t)(s->len - 1) * p->s_w;
        /* j = 0 .. k_w - 1 all inside the row (stride 1): plain pointers */
        int inside = p->s_w == 1 && iw0 >= 0 && iw0 + (int64_t)(p->k_w - 1) * p->d_w + span <
                                                  ge->in_w;
        uint8_t tmp[4][TILE_NR];
        const uint8_t *r[4];
        while (k < kend) {
            int64_t ih = ih0 + (int64_t)i * p->d_h;
            const uint8_t *xr = xg + c * ge->plane + ih * ge->in_w;
            int zero = k >= p->kdim || ih < 0 || ih >= ge->in_h;
            for (; j < p->k_w && k < kend; j++, k++) {
                if (zero || k >= p->kdim) {
                    r[nrow] = zero_row;
                } else if (inside) {
                    r[nrow] = xr + iw0 + (int64_t)j * p->d_w;
                } else {
                    int64_t iw = iw0 + (int64_t)j * p->d_w;
                    if (p->s_w == 1 && iw >= 0 && iw + span < ge->in_w) {
                        r[nrow] = xr + iw;
                    } else {   /* t in [t0, t1) inside the row */
                        int64_t t0 = iw >= 0 ? 0 : p->s_w == 1 ? -iw : cdiv(-iw, p->s_w);
                        int64_t t1 = iw >= ge->in_w ? 0
                                     : p->s_w == 1 ? ge->in_w - iw
                                                   : cdiv(ge->in_w - iw, p->s_w);
                        uint8_t *d = tmp[nrow];
                        t1 = t1 > s->len ? s->len : t1;
                        t0 = t0 > t1 ? t1 : t0;
                        memset(d, 0, (size_t)t0);
                        if (t1 > t0)
                            gather(xr + iw + t0 * p->s_w, 0, p->s_w, (int32_t)(t1 - t0),
                                   d + t0, 0, 1);
                        memset(d + t1, 0, (size_t)(s->len - t1));
                        r[nrow] = d;
                    }
                }
                if (++nrow == 4) {
                    tr4(r[0], r[1], r[2], r[3], s->len,
                        panel + ((size_t)q * nr + s->off) * 4 * esize);
                    nrow = 0;
                    q++;
                }
            }
            j = 0;
            if (++i == p->k_h) {
                i = 0;
                c++;
            }
        }
    }
}

/* The band's layout, worked out once per conv_gemm call.  A band row of cols columns
 * is stored split by column stride phase: phase ph (band columns ph, ph + s_w, ...) is
 * contiguous, so the s_w-strided columns a tap reads are a plain run (s_w = 1: the row as
 * it is).  Only the phases some tap reads are filled (k_w <= BAND_MAX_KW). */
typedef struct Band {
    uint8_t *buf;                 /* rows x cols bytes per input channel of the group */
    const uint8_t *data;          /* what the packer reads: buf, or (flat) the input */
    int64_t rows, cols;
    int32_t nph;                  /* phases some tap reads */
    int32_t ph[BAND_MAX_KW];      /* those phases; per phase: */
    int32_t at[BAND_MAX_KW];      /* its first byte in a row, */
    int32_t len[BAND_MAX_KW];     /* its elements, */
    int32_t e0[BAND_MAX_KW], e1[BAND_MAX_KW];   /* those inside the input, [e0, e1), */
    int32_t src[BAND_MAX_KW];     /* and the input column of element e0 */
    int32_t tap[BAND_MAX_KW];     /* kernel column j: its first element's byte in a row */
    int32_t *koff;                /* per reduction element k < kdim: its unfolded row's
                                   * byte in the band from the panel row's first byte */
} Band;

/* Byte of phase ph in a band row (phases before it hold cols / s_w or one more). */
static int64_t band_phase(int64_t cols, int32_t s_w, int32_t ph) {
    int64_t r = cols % s_w;
    return ph * (cols / s_w) + (ph < r ? ph : r);
}

/* b's layout for p (band_dims gave rows and cols). */
static void band_setup(const OqciConv *p, Band *b) {
    int32_t j, t;
    b->nph = 0;
    for (j = 0; j < p->k_w; j++) {
        int64_t u = (int64_t)j * p->d_w;
        int32_t ph = (int32_t)(u % p->s_w);
        b->tap[j] = (int32_t)(band_phase(b->cols, p->s_w, ph) + u / p->s_w);
        for (t = 0; t < b->nph && b->ph[t] != ph; t++)
            ;
        if (t == b->nph) {   /* element e is band column ph + e s_w, input column - p_l */
            int64_t n = band_phase(b->cols, p->s_w, ph + 1) - band_phase(b->cols, p->s_w, ph);
            int64_t e0 = cdiv((int64_t)p->p_l - ph, p->s_w);
            int64_t e1 = cdiv((int64_t)p->in_w + p->p_l - ph, p->s_w);
            e0 = e0 < 0 ? 0 : e0 > n ? n : e0;
            e1 = e1 < e0 ? e0 : e1 > n ? n : e1;
            b->ph[t] = ph;
            b->at[t] = (int32_t)band_phase(b->cols, p->s_w, ph);
            b->len[t] = (int32_t)n;
            b->e0[t] = (int32_t)e0;
            b->e1[t] = (int32_t)e1;
            b->src[t] = (int32_t)(e0 * p->s_w + ph - p->p_l);
            b->nph++;
        }
    }
    {   /* k = (c, i, j): channel c's band row i d_h, tap j */
        int32_t k = 0, c, i;
        for (c = 0; k < p->kdim; c++)
            for (i = 0; i < p->k_h; i++)
                for (j = 0; j < p->k_w; j++, k++)
                    b->koff[k] = (int32_t)((c * b->rows + (int64_t)i * p->d_h) * b->cols) +
                                 b->tap[j];
    }
}

/* Fills the band for input rows r0 .. r0 + rows - 1 of the group's channels (xg: the
 * image's first channel of the group): channel c, row r at buf + (c * rows + r - r0) *
 * cols, input column iw at band column p_l + iw (in its phase), zeros outside the
 * input.  The padding columns are zero from conv_gemm's clearing of the band and are
 * never written: only rows outside the input (zeroed whole) and the input's part of the
 * others are.  Rows no kernel row reads (k_h d_h below s_h: 1x1 / 2) are skipped (r0 is
 * an output row's first input row, so band row r is read iff r = i d_h mod s_h).  One
 * gather call copies one phase of a channel's rows of one class (step s_h when sparse):
 * 1x1/2 from 64x56x56 made 1792 calls of 28 bytes per band, now 64 (+10% on the layer,
 * with gather__avx512vbmi +9% more). */
static void fill_band(const OqciConv *p, const Geo *ge, const Band *b, const uint8_t *xg,
                      int64_t r0, GatherFn gather) {
    int64_t c, r;
    int32_t t, i;
    int sparse = (int64_t)(p->k_h - 1) * p->d_h + 1 < p->s_h;
    /* the rows read: all (step 1), or when sparse the classes r = i d_h mod s_h */
    int32_t nclass = sparse ? p->k_h : 1, step = sparse ? p->s_h : 1;
    for (i = 0; i < nclass; i++) {
        int64_t rho = (int64_t)i * p->d_h % step;
        /* the class's rows inside the input: lo, lo + step, ... (n of them) */
        int64_t lo = -r0 > rho ? rho + cdiv(-r0 - rho, step) * step : rho;
        int64_t hi = p->in_h - r0 < b->rows ? p->in_h - r0 : b->rows;
        int64_t n = hi > lo ? cdiv(hi - lo, step) : 0;
        for (r = rho; r < b->rows; r += step)
            if (r < lo || r >= lo + n * step)
                for (c = 0; c < ge->cg; c++)
                    memset(b->buf + (c * b->rows + r) * b->cols, 0, (size_t)b->cols);
        if (n == 0)
            continue;
        /* channel by channel, each one's rows in input order (the hardware prefetcher
         * follows one plane; rows outer would jump between cg planes per row) */
        for (c = 0; c < ge->cg; c++)
            for (t = 0; t < b->nph; t++)
                if (b->e1[t] > b->e0[t])
                    gather(xg + c * ge->plane + (r0 + lo) * p->in_w + b->src[t],
                           (int64_t)step * p->in_w, p->s_w, b->e1[t] - b->e0[t],
                           b->buf + (c * b->rows + lo) * b->cols + b->at[t] + b->e0[t],
                           (int64_t)step * b->cols, (int32_t)n);
    }
}

/* pack_panel from a band holding input rows from r0: every row of the unfolded matrix
 * is a pointer into it (its tap's phase of the band row).  Inlined where tr4 is a
 * constant (a family's own packer, BandPackFn), called through the pointer otherwise. */
static inline __attribute__((always_inline)) void
pack_band_body(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs, int nseg,
               int32_t q0, int32_t nq, uint8_t *panel, int32_t nr, int esize, Tr4Fn tr4) {
    /* quads before qz hold no padding element of the reduction (k >= kdim) */
    int32_t qz = p->kdim / 4 < q0 + nq ? p->kdim / 4 : q0 + nq;
    size_t qstep = (size_t)nr * 4 * esize;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *base =
            b->data + ((int64_t)s->oh * p->s_h - p->p_t - r0) * b->cols + s->ow;
        uint8_t *d = panel + (size_t)s->off * 4 * esize;
        const int32_t *o = b->koff + 4 * q0;
        int32_t q = q0, e;
        for (; q < qz; q++, o += 4, d += qstep)
            tr4(base + o[0], base + o[1], base + o[2], base + o[3], s->len, d);
        for (; q < q0 + nq; q++, o += 4, d += qstep) {
            const uint8_t *r[4];
            for (e = 0; e < 4; e++)
                r[e] = 4 * q + e >= p->kdim ? zero_row : base + o[e];
            tr4(r[0], r[1], r[2], r[3], s->len, d);
        }
    }
}

static void pack_band(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs,
                      int nseg, int32_t q0, int32_t nq, uint8_t *panel, int32_t nr, int esize,
                      Tr4Fn tr4) {
    pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, nr, esize, tr4);
}

/* A family's pack_band for one input type (s8, u8), its transpose inlined. */
typedef void (*BandPackFn)(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs,
                           int nseg, int32_t q0, int32_t nq, uint8_t *panel);

/* Zeroes panel columns np .. nr - 1 of nq quads (a last, partial panel). */
static void pack_tail(uint8_t *panel, int32_t nq, int32_t np, int32_t nr, int esize) {
    int32_t q;
    if (np >= nr)
        return;
    for (q = 0; q < nq; q++)
        memset(panel + ((size_t)q * nr + np) * 4 * esize, 0, (size_t)(nr - np) * 4 * esize);
}

/* Byte transposes in plain C: u8 / s8 unchanged, or with the top bit flipped (x ^ 0x80:
 * u8 x -> s8 x - 128, s8 x -> u8 x + 128). */
#if HAVE_NEONDOT
static void tr4_b__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                     const uint8_t *r3, int32_t len, void *dst, uint8_t flip) {
    uint8_t *d = (uint8_t *)dst;
    int32_t t;
    for (t = 0; t < len; t++) {
        d[4 * t] = (uint8_t)(r0[t] ^ flip);
        d[4 * t + 1] = (uint8_t)(r1[t] ^ flip);
        d[4 * t + 2] = (uint8_t)(r2[t] ^ flip);
        d[4 * t + 3] = (uint8_t)(r3[t] ^ flip);
    }
}
#endif

/* Channel k's output bytes q (one per panel column) stored through the panel's runs. */
static void store_runs(const OqciConv *p, const uint8_t *q, int32_t k, const Seg *segs,
                       int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        uint8_t *dst = (uint8_t *)y + (s->n * p->out_ctotal + p->out_coff + k) * pix + s->pix0;
        const uint8_t *src = q + s->off;
        int32_t e = 0;
        if (s->len == 28)   /* whole AVX2 panels: fixed-size copies, inlined */
            memcpy(dst, src, 28);
        else if (s->len == 24)
            memcpy(dst, src, 24);
        else {   /* (short runs: inlined 8-byte copies, no call) */
            for (; e + 8 <= s->len; e += 8)
                memcpy(dst + e, src + e, 8);
            for (; e < s->len; e++)
                dst[e] = src[e];
        }
    }
}

/* The epilogue of channel k's raw sums s: v = saturate((s + corr mod 2^32) + bias), then
 * oqci_requant(v).  corr (the VNNI / sdot offset correction) is exact modulo 2^32 since
 * the corrected sum fits int32; the bias addition can only overflow when
 * kpad * 255 * 128 + |bias| exceeds INT32_MAX (|x * w| <= 255 * 128). */
static inline int bias_may_overflow(const OqciConv *p, int64_t bias) {
    return (int64_t)p->kpad * 32640 + (bias < 0 ? -bias : bias) > INT32_MAX;
}

/* Requantizes oqci_requant(v) of channel k (scalar epilogue). */
static int32_t rq1(const OqciConv *p, int32_t v, int32_t k) {
    return oqci_requant(v, &p->rq, k, p->lo, p->hi);
}

/* Epilogue of a tile: nk rows of t (row stride ldt, one per output channel k0 + r, the
 * channel's raw sums over the panel's pixels) become outputs, stored through segs;
 * corr[r]: row r's correction (or NULL: none); bias_done: the sums hold the bias. */
typedef void (*StoreFn)(const OqciConv *p, const int32_t *t, int32_t ldt, int32_t k0,
                        int32_t nk, const int32_t *corr, int bias_done, const Seg *segs,
                        int nseg, void *y);

#if HAVE_NEONDOT
static void store_tile__c(const OqciConv *p, const int32_t *t, int32_t ldt, int32_t k0,
                          int32_t nk, const int32_t *corr, int bias_done, const Seg *segs,
                          int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int32_t r;
    for (r = 0; r < nk; r++) {
        int32_t k = k0 + r;
        int64_t b = !bias_done && p->bias ? p->bias[k] : 0;
        int si;
        for (si = 0; si < nseg; si++) {
            const Seg *s = &segs[si];
            int64_t o = (s->n * p->out_ctotal + p->out_coff + k) * pix + s->pix0;
            int32_t e;
            for (e = 0; e < s->len; e++) {
                int64_t v = (int32_t)((uint32_t)t[(size_t)r * ldt + s->off + e] +
                                      (uint32_t)(corr ? corr[r] : 0));   /* exact mod 2^32 */
                put_q(p, y, o + e, rq1(p, sat32(v + b), k));
            }
        }
    }
}
#endif

/* 2 M, the multiplier rq8 uses in float mode.  2 M overflowing (M finite): then |t| >=
 * M > hi for every acc != 0, which the largest float reproduces, and acc = 0 still
 * gives 0. */
static inline float rq_mult2(float mult) {
#ifndef OQCI_NO_FLOAT
    float m2 = 2.0f * mult;
    if (m2 - m2 != 0.0f && mult - mult == 0.0f)
        m2 = mult > 0.0f ? 3.40282347e38f : -3.40282347e38f;
    return m2;
#else
    return mult;
#endif
}

/* A fused epilogue's per-channel constants, worked out once per conv_gemm call: the
 * correction plus the bias (mod 2^32: the fused condition excludes overflow) and 2 M. */
typedef struct RqPre {
    int32_t add;
    float m2;
} RqPre;

/* Computes sums over nq quads of an nr-pixel panel for mr weight rows (w[r] at the
 * block's first reduction element; rows beyond the group's channels repeat a valid one)
 * into rows of t (stride TILE_NR), or adds them to t (acc: the next K block).  Only the
 * first nk rows are stored (t may hold no more: conv_gemm's K-block buffer has
 * round_up(kg, TILE_MR) rows, which an mr of 3 does not divide); np: the panel's
 * meaningful pixels (a microkernel may skip vectors holding none). */
typedef void (*UkrFn)(int32_t nq, const void *panel, const int8_t *const *w, int32_t *t,
                      int acc, int32_t np, int32_t nk);

/* A SIMD GEMM family. */
typedef struct Family {
    int isa;          /* OQCI_ISA_* */
    int mr, nr;       /* tile: channels x pixels */
    int esize;        /* panel element bytes: 2 (int16) or 1 */
    int32_t kbq;      /* quads per K block (a block of panel stays in L1) */
    int flip;         /* the input type packed as x ^ 0x80 (see weight_corr), or -1 */
    UkrFn ukr;        /* microkernel */
    Tr4Fn tr4[2];     /* panel transposes for s8 and u8 inputs */
    GatherFn gather;  /* strided copies of input runs */
    StoreFn store;    /* epilogue */
    /* or NULL: the microkernel with the epilogue in registers (whole reduction in one
     * block, float requantization, no bias that may overflow): nk channels (constants
     * pre[0 .. nk - 1]) requantized, channel r's bytes stored at out + r * ostride:
     * exactly nr bytes (np meaningful; a partial panel's body may store fewer, at least
     * np) */
    void (*ukr_rq)(int32_t nq, const void *panel, const int8_t *const *w, const OqciConv *p,
                   int32_t nk, const RqPre *pre, uint8_t *out, int64_t ostride,
                   int32_t np);
    BandPackFn band_pack[2];   /* pack_band with tr4[] inlined (s8, u8 inputs), or NULL */
    /* or NULL: ukr_rq for the last of several K blocks, the sums so far (rows of t,
     * stride TILE_NR, TILE_MR of them readable) added first */
    void (*ukr_rq_acc)(int32_t nq, const void *panel, const int8_t *const *w, const int32_t *t,
                       const OqciConv *p, int32_t nk, const RqPre *pre, uint8_t *out,
                       int64_t ostride, int32_t np);
    /* or NULL: every channel of group g over nb panels of the whole reduction (nq quads,
     * one K block; AMX tiles, see conv_amx): panel[i] holds the np[i] positions from
     * P0[i] (Geo) of the group, requantized (pre: fused constants, or NULL for f->store)
     * and stored; work: amx_work's region */
    void (*tiles)(const OqciConv *p, const struct Family *f, const Geo *ge,
                  uint8_t *const *panel, const int64_t *P0, const int32_t *np, int nb,
                  int32_t nq, int32_t g, const RqPre *pre, uint8_t *work, void *y);
    /* or NULL (store_runs): the fused epilogue's store of a buffered panel row */
    void (*runs)(const OqciConv *p, const uint8_t *q, int32_t k, const Seg *segs, int nseg,
                 void *y);
    /* or NULL: packs quads q0 .. q0 + nq - 1 of segs (group g) straight from the input x
     * for a 1x1 conv of column stride 2 without padding (s2_direct), no band */
    void (*pack_s2)(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                    const Seg *segs, int nseg, int32_t q0, int32_t nq, uint8_t *panel);
} Family;

/* 1x1, column stride 2, no padding: every output reads input column 2 ow of row oh s_h,
 * inside the input (Family.pack_s2). */
static int s2_direct(const OqciConv *p) {
    return p->k_h == 1 && p->k_w == 1 && p->s_w == 2 && !p->p_t && !p->p_l &&
           2 * (int64_t)(p->out_w - 1) < p->in_w && (int64_t)(p->out_h - 1) * p->s_h < p->in_h;
}

#if HAVE_AVX2
/* Sum of n weights: vpsadbw of the bytes + 128 (as u8), less 128 n. */
T_AVX2 static int64_t wsum__avx2(const int8_t *w, int32_t n) {
    const __m256i flip = _mm256_set1_epi8((char)0x80), z = _mm256_setzero_si256();
    __m256i acc = z;
    __m128i h;
    int64_t s;
    int32_t t = 0;
    for (; t + 32 <= n; t += 32) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(w + t));
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(b, flip), z));
    }
    h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1) - 128 * (int64_t)t;
    for (; t < n; t++)
        s += w[t];
    return s;
}
#endif

/* The exact correction of channel k's sums for flipped inputs: -128 sum w for s8 inputs
 * packed as x + 128 (VNNI), +128 sum w for u8 inputs packed as x - 128 (sdot).  (Once
 * per call and channel: a pass over the weights, vectorized on x86, where every family
 * has AVX2.) */
static int64_t weight_corr(const OqciConv *p, int32_t k) {
    const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
    int64_t s = 0;
#if HAVE_AVX2
    s = wsum__avx2(w, p->kpad);
#else
    int32_t t;
    for (t = 0; t < p->kpad; t++)
        s += w[t];
#endif
    return p->in_type == OQCI_S8 ? -128 * s : 128 * s;
}

/* conv_gemm's weight row pointers (wtab) in its scratch: after the aligned panel block,
 * the K-block buffer and the band (bytes as gemm_scratch gives them) and the per-channel
 * constants. */
static const int8_t **gemm_wtab(const OqciConv *p, void *scratch, size_t panel, size_t cbuf,
                                size_t band) {
    return (const int8_t **)(void *)(align_up(scratch) + panel + cbuf + band +
                                     (size_t)round_up((int64_t)p->out_c * 12, 8));
}

/* The fused epilogue of channels k .. k + nk - 1 of a panel (constants pre[k ..]): the
 * sums over nq quads of the panel (weight rows w) plus, when t, the sums so far in t,
 * requantized (f->ukr_rq_acc, else f->ukr_rq) and stored.  A whole panel in one image
 * goes straight to y (its outputs are consecutive in y's planes, whatever rows its runs
 * start), any other through a buffer and store_runs. */
static void fused_rq(const OqciConv *p, const Family *f, int32_t nq, const uint8_t *panel,
                     const int8_t *const *w, const int32_t *t, int32_t k, int32_t nk,
                     const RqPre *pre, const Seg *segs, int nseg, int32_t np, void *y) {
    uint8_t q[TILE_MR * TILE_NR], *out = q;
    int64_t ostride = TILE_NR, pix = (int64_t)p->out_h * p->out_w;
    const Seg *l = &segs[nseg - 1];   /* (and no dropped positions: grid panels) */
    int direct = np == f->nr && segs[0].n == l->n && segs[0].off == 0 && l->off + l->len == np &&
                 l->pix0 - segs[0].pix0 == l->off;
    int32_t r;
    if (direct) {
        out = (uint8_t *)y + (segs[0].n * p->out_ctotal + p->out_coff + k) * pix + segs[0].pix0;
        ostride = pix;
    }
    if (t)
        f->ukr_rq_acc(nq, panel, w, t, p, nk, pre + k, out, ostride, np);
    else
        f->ukr_rq(nq, panel, w, p, nk, pre + k, out, ostride, np);
    for (r = 0; !direct && r < nk; r++)
        (f->runs ? f->runs : store_runs)(p, q + r * TILE_NR, k + r, segs, nseg, y);
}

static void conv_gemm(const OqciConv *p, const Family *f, const void *x, void *y,
                      void *scratch) {
    Geo ge;
    size_t panel_bytes, cbuf_bytes, band_bytes;
    uint8_t *panel = align_up(scratch);
    Band band;
    int64_t band_n = -1, band_r0 = 0, band_r1 = 0, band_g = -1;
    int32_t *c32;
    int64_t *c64;
    int32_t *corr = NULL;
    RqPre *pre = NULL;
    const int8_t **wtab;
    uint8_t *work;
    int32_t kg = p->out_c / p->group, nq = p->kpad / 4, g, k;
    int32_t nblk = (nq + f->kbq - 1) / f->kbq, bsize;
    int deep = p->kpad > OQCI_KCHUNK, fused = 0, flat = 0;
    int64_t total, P0;
    int32_t tile[TILE_MR * TILE_NR];
    uint8_t *bpanel[AMX_BATCH_MAX];   /* f->tiles: the batch's panels, */
    int64_t bP0[AMX_BATCH_MAX];       /* their first positions */
    int32_t bnp[AMX_BATCH_MAX], np;   /* and pixels */
    int nbatch = 1, nb = 0;
    Tr4Fn tr4 = f->tr4[p->in_type == OQCI_U8];
    BandPackFn band_pack = f->band_pack[p->in_type == OQCI_U8];
    make_geo(p, &ge);
    gemm_scratch(p, HAVE_AMX, &panel_bytes, &cbuf_bytes, &band_bytes);
    c32 = (int32_t *)(void *)(panel + panel_bytes);
    c64 = (int64_t *)(void *)c32;
    band.buf = panel + panel_bytes + cbuf_bytes;
    if (band_bytes) {
        size_t bb = band_dims(p, &band.rows, &band.cols);
        band.koff = (int32_t *)(void *)(band.buf + bb);
        band.data = band.buf;
        if (bb) {
            band_setup(p, &band);
            memset(band.buf, 0, bb);   /* the padding columns, once (see fill_band) */
        } else {   /* flat: element k is input channel k's plane */
            flat = 1;
            band.rows = 1;
            band.cols = ge.plane;
            for (k = 0; k < p->kdim; k++)
                band.koff[k] = (int32_t)(k * ge.plane);
        }
    }
    if (p->in_type == f->flip) {   /* modulo 2^32 (exact, see bias_may_overflow) */
        corr = (int32_t *)(void *)(panel + panel_bytes + cbuf_bytes + band_bytes);
        for (k = 0; k < p->out_c; k++)
            corr[k] = (int32_t)(uint32_t)(uint64_t)weight_corr(p, k);
    }
    /* the epilogue in the microkernel: float requantization, no bias whose addition
     * may overflow (bias_may_overflow: checked here for all channels), and one block or
     * (ukr_rq_acc) the last of several whose int32 sums are exact */
    if (f->ukr_rq && (nblk == 1 || (f->ukr_rq_acc && !deep)) &&
        p->rq.mode == OQCI_REQ_FLOAT) {
        fused = 1;
        for (k = 0; k < p->out_c && fused; k++)
            fused = !bias_may_overflow(p, p->bias ? p->bias[k] : 0);
    }
    if (fused) {
        pre = (RqPre *)(void *)(panel + panel_bytes + cbuf_bytes + band_bytes +
                                (size_t)p->out_c * 4);
        for (k = 0; k < p->out_c; k++) {
            pre[k].add = (int32_t)((uint32_t)(corr ? corr[k] : 0) +
                                   (uint32_t)(p->bias ? p->bias[k] : 0));
            pre[k].m2 = rq_mult2(p->rq.mult[p->rq.per_index ? k : 0]);
        }
    }
    /* row k of the group's weights at the block's first quad, rows past kg repeating
     * the last (a tile's rows past nk): built per group, or per block with several */
    wtab = gemm_wtab(p, scratch, panel_bytes, cbuf_bytes, band_bytes);
    work = f->tiles ? align_up((void *)(wtab + kg + TILE_MR)) : NULL;   /* (amx_work) */
    if (f->tiles) {   /* the batch's panels: conv_gemm's, then those in amx_work's region */
        size_t apb = amx_panel_bytes(p);
        nbatch = amx_batch(p);
        for (k = 0; k < nbatch; k++)
            bpanel[k] = k ? work + AMX_PANELS_OFF + (size_t)(k - 1) * apb : panel;
    }
    bsize = (nq + nblk - 1) / nblk;   /* balanced blocks */
    total = (int64_t)p->batch * ge.gpix;
    for (g = 0; g < p->group; g++)
        for (P0 = 0; P0 < total; P0 += np) {
            Seg segs[TILE_NR], gseg, *ps = segs;
            int32_t q0, kk;
            int nseg, npk;
            np = panel_np(&ge, P0, total, f->nr);
            nseg = make_segs(&ge, P0, np, segs);
            npk = nseg;
            /* the band: the input rows of the panel (one image), kept while they serve */
            int s2 = f->pack_s2 && s2_direct(p);   /* (no band: packed from x) */
            int use_band = band_bytes && !s2 && segs[0].n == segs[nseg - 1].n;
            if (use_band && flat)
                band.data = (const uint8_t *)x +
                            (segs[0].n * p->in_c + (int64_t)g * ge.cg) * ge.plane;
            int64_t r0 = (int64_t)segs[0].oh * p->s_h - p->p_t;
            int64_t r1 = (int64_t)segs[nseg - 1].oh * p->s_h - p->p_t +
                         (int64_t)(p->k_h - 1) * p->d_h + 1;
            if (ge.grid) {   /* packed as one run of np positions (from row oh, column ow) */
                int64_t q = P0 % ge.gpix;
                gseg = segs[0];
                gseg.oh = (int32_t)(q / ge.gcols);
                gseg.ow = (int32_t)(q % ge.gcols);
                gseg.len = np;
                gseg.off = 0;
                ps = &gseg;
                npk = 1;
                r0 = (int64_t)gseg.oh - p->p_t;
                r1 = (q + np - 1) / ge.gcols - p->p_t + (int64_t)(p->k_h - 1) * p->d_h + 1;
            }
            if (use_band && !flat &&
                (segs[0].n != band_n || g != band_g || r0 < band_r0 || r1 > band_r1)) {
                /* every row the band holds from r0 (rows past the input are zeros) */
                fill_band(p, &ge, &band,
                          (const uint8_t *)x + (segs[0].n * p->in_c + (int64_t)g * ge.cg) * ge.plane,
                          r0, f->gather);
                band_n = segs[0].n;
                band_g = g;
                band_r0 = r0;
                band_r1 = r0 + band.rows;
            }
            for (q0 = 0; q0 < nq; q0 += bsize) {
                int32_t bq = nq - q0 < bsize ? nq - q0 : bsize;
                if (nblk > 1 || P0 == 0)
                    for (k = 0; k < kg + TILE_MR; k++)   /* (any tile's mr rows) */
                        wtab[k] = p->w +
                                  (size_t)(g * kg + (k < kg ? k : kg - 1)) * (size_t)p->kpad +
                                  (size_t)q0 * 4;
                uint8_t *pd = f->tiles ? bpanel[nb] : panel;
                if (s2)
                    f->pack_s2(p, &ge, (const uint8_t *)x, g, segs, nseg, q0, bq, pd);
                else if (use_band && band_pack)
                    band_pack(p, &band, band_r0, ps, npk, q0, bq, pd);
                else if (use_band)
                    pack_band(p, &band, band_r0, ps, npk, q0, bq, pd, f->nr, f->esize,
                              tr4);
                else
                    pack_panel(p, &ge, (const uint8_t *)x, g, segs, nseg, q0, bq, pd, f->nr,
                               f->esize, tr4, f->gather);
                pack_tail(pd, bq, np, f->nr, f->esize);
                if (f->tiles) {   /* (one block) the batch, when full or at the group's end */
                    bP0[nb] = P0;
                    bnp[nb++] = np;
                    if (nb == nbatch || P0 + np >= total) {
                        f->tiles(p, f, &ge, bpanel, bP0, bnp, nb, bq, g, fused ? pre : NULL,
                                 work, y);
                        nb = 0;
                    }
                    continue;
                }
                for (kk = 0; kk < kg; kk += f->mr) {
                    const int8_t *const *w = wtab + kk;
                    int32_t nk = kg - kk < f->mr ? kg - kk : f->mr, r, e;
                    if (fused && q0 + bq >= nq) {   /* (the last block's sums so far in c32) */
                        fused_rq(p, f, bq, panel, w, nblk > 1 ? c32 + (size_t)kk * TILE_NR : NULL,
                                 g * kg + kk, nk, pre, segs, nseg, np, y);
                    } else if (nblk == 1) {
                        f->ukr(bq, panel, w, tile, 0, np, nk);
                        f->store(p, tile, TILE_NR, g * kg + kk, nk, corr ? corr + g * kg + kk : NULL,
                                 0, segs, nseg, y);
                    } else if (!deep) {   /* exact: the whole sum fits int32 */
                        f->ukr(bq, panel, w, c32 + (size_t)kk * TILE_NR, q0 > 0, np, nk);
                    } else {
                        f->ukr(bq, panel, w, tile, 0, np, nk);
                        for (r = 0; r < nk; r++)
                            for (e = 0; e < np; e++) {
                                size_t ci = (size_t)(kk + r) * TILE_NR + e;
                                c64[ci] = (q0 ? c64[ci] : 0) + tile[r * TILE_NR + e];
                            }
                    }
                }
            }
            if (nblk == 1 || fused)
                continue;
            for (kk = 0; kk < kg; kk += TILE_MR) {
                int32_t nk = kg - kk < TILE_MR ? kg - kk : TILE_MR, r, e;
                int32_t k0 = g * kg + kk;
                if (!deep) {
                    f->store(p, c32 + (size_t)kk * TILE_NR, TILE_NR, k0, nk,
                             corr ? corr + k0 : NULL, 0, segs, nseg, y);
                    continue;
                }
                for (r = 0; r < nk; r++) {   /* correction and bias added here, in int64 */
                    int64_t cr = corr ? weight_corr(p, k0 + r) : 0;
                    int64_t b = p->bias ? p->bias[k0 + r] : 0;
                    for (e = 0; e < np; e++)
                        tile[r * TILE_NR + e] = sat32(c64[(size_t)(kk + r) * TILE_NR + e] + cr + b);
                }
                f->store(p, tile, TILE_NR, k0, nk, NULL, 1, segs, nseg, y);
            }
        }
}

/* ---- depthwise: zero-padded 16-bit planes split by stride phase -------------------- */

#if HAVE_NEONDOT || !defined(OQCI_NO_FLOAT)
/* Element offset of tap (i, j) in the plane (output (0, 0)); output (oh, ow) adds
 * oh * s_h * width + ow. */
static int64_t dw_tap_off(const OqciConv *p, const DwGeo *d, int32_t i, int32_t j) {
    int32_t u = j * p->d_w;
    return ((int64_t)(u % p->s_w) * d->rows + (int64_t)i * p->d_h) * d->width + u / p->s_w;
}
#endif

#if HAVE_NEONDOT   /* (x86 uses float planes: conv_dwf__avx2) */
/* One phase row of width elements: row[e] = x (int16) at src[(e - e0) * stride] for e in
 * [e0, e1), 0 elsewhere. */
typedef void (*DwFillFn)(const uint8_t *src, int32_t stride, int32_t e0, int32_t e1,
                         int32_t width, int u8, int16_t *row);


/* Fills the plane of input channel xc: element (ph, r, e) = x[r - p_t][e * s_w + ph -
 * p_l], 0 outside the input. */
static void dw_fill(const OqciConv *p, const DwGeo *d, const uint8_t *xc, int16_t *plane,
                    DwFillFn fill) {
    int32_t ph, r, u8 = p->in_type == OQCI_U8;
    for (ph = 0; ph < d->phases; ph++) {
        /* e is inside the input for iw = e * s_w + ph - p_l in [0, in_w) */
        int32_t e0 = cdiv(p->p_l - ph, p->s_w), e1 = cdiv(p->in_w + p->p_l - ph, p->s_w);
        e0 = e0 < 0 ? 0 : e0 > d->width ? d->width : e0;
        e1 = e1 < e0 ? e0 : e1 > d->width ? d->width : e1;
        for (r = 0; r < d->rows; r++) {
            int16_t *row = plane + ((int64_t)ph * d->rows + r) * d->width;
            int32_t ih = r - p->p_t;
            if (ih < 0 || ih >= p->in_h)
                fill(xc, 1, 0, 0, d->width, u8, row);
            else
                fill(xc + (int64_t)ih * p->in_w + (int64_t)e0 * p->s_w + ph - p->p_l, p->s_w,
                     e0, e1, d->width, u8, row);
        }
    }
}

/* Depthwise rows: for r < nrows, out[r * ostride + e] (e < n, a multiple of DW_VEC) =
 * sum over taps t of base[r * bstride + off[t] + e] * w[t].  Rows are written in order
 * and each may write up to DW_VEC - 1 sums past n, which a next row overwrites. */
typedef void (*DwRowFn)(const int16_t *base, int64_t bstride, const int64_t *off,
                        const int8_t *w, int32_t taps, int32_t nrows, int32_t n, int32_t *out,
                        int32_t ostride);

/* Requantizes n consecutive sums t of channel k (bias added here) into y at dst. */
typedef void (*DwStoreFn)(const OqciConv *p, const int32_t *t, int32_t n, int32_t k,
                          void *dst);

#if HAVE_NEONDOT
static void dw_fill__c(const uint8_t *src, int32_t stride, int32_t e0, int32_t e1,
                       int32_t width, int u8, int16_t *row) {
    int32_t e;
    for (e = 0; e < e0; e++)
        row[e] = 0;
    for (e = e0; e < e1; e++) {
        uint8_t b = src[(int64_t)(e - e0) * stride];
        row[e] = u8 ? (int16_t)b : (int16_t)(int8_t)b;
    }
    for (e = e1; e < width; e++)
        row[e] = 0;
}

static void q8dw_1xN__c(const int16_t *base, int64_t bstride, const int64_t *off, const int8_t *w,
                    int32_t taps, int32_t nrows, int32_t n, int32_t *out, int32_t ostride) {
    int32_t r, e, t;
    for (r = 0; r < nrows; r++, base += bstride, out += ostride) {
        for (e = 0; e < n; e++)
            out[e] = 0;
        for (t = 0; t < taps; t++) {
            const int16_t *src = base + off[t];
            int32_t wt = w[t];
            for (e = 0; e < n; e++)
                out[e] += src[e] * wt;
        }
    }
}

static void dw_store__c(const OqciConv *p, const int32_t *t, int32_t n, int32_t k, void *dst) {
    int64_t b = p->bias ? p->bias[k] : 0;
    int32_t e;
    for (e = 0; e < n; e++)
        put_q(p, dst, e, rq1(p, sat32(t[e] + b), k));
}
#endif

/* One input channel per group: out_c / group outputs per input plane.  Whole output
 * rows are computed into buf back to back, as many as it holds, then requantized and
 * stored with one call (rows wider than buf go in pieces). */
static void conv_dw(const OqciConv *p, const void *x, void *y, void *scratch, DwFillFn fill,
                    DwRowFn rowk, DwStoreFn store) {
    DwGeo d;
    int16_t *plane = (int16_t *)align_up(scratch);
    int64_t off[DW_MAX_TAPS], n, plane_in = (int64_t)p->in_h * p->in_w;
    int64_t pix = (int64_t)p->out_h * p->out_w, bstride;
    int32_t kg = p->out_c / p->group, g, i, j;
    int32_t wr = (int32_t)round_up(p->out_w, DW_VEC);
    int32_t buf[DW_BUF + TILE_NR];   /* + TILE_NR: the epilogue reads whole vectors */
    /* rows per call (whole rows) or, for rows wider than buf, outputs per piece */
    int32_t rows = wr <= DW_BUF ? (DW_BUF - wr) / p->out_w + 1 : 0;
    dw_geo(p, &d);
    bstride = (int64_t)p->s_h * d.width;
    for (i = 0; i < p->k_h; i++)
        for (j = 0; j < p->k_w; j++)
            off[i * p->k_w + j] = dw_tap_off(p, &d, i, j);
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            int32_t kk;
            dw_fill(p, &d, (const uint8_t *)x + (n * p->in_c + g) * plane_in, plane, fill);
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, ow;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * pix;
                if (rows) {
                    for (oh = 0; oh < p->out_h; oh += rows) {
                        int32_t nr = p->out_h - oh < rows ? p->out_h - oh : rows;
                        rowk(plane + oh * bstride, bstride, off, w, d.taps, nr, wr, buf,
                             p->out_w);
                        store(p, buf, nr * p->out_w, k, yk + (int64_t)oh * p->out_w);
                    }
                    continue;
                }
                for (oh = 0; oh < p->out_h; oh++)
                    for (ow = 0; ow < p->out_w; ow += DW_BUF) {
                        int32_t len = p->out_w - ow < DW_BUF ? p->out_w - ow : DW_BUF;
                        rowk(plane + oh * bstride + ow, bstride, off, w, d.taps, 1,
                             (int32_t)round_up(len, DW_VEC), buf, 0);
                        store(p, buf, len, k, yk + (int64_t)oh * p->out_w + ow);
                    }
            }
        }
}
#endif

#endif /* HAVE_SIMD */

/* ======================================================================================
 * x86 kernels.
 * ==================================================================================== */
#if HAVE_AVX2

/* Unaligned vector loads and stores (any pointer type). */
#define LDU256(ptr) _mm256_loadu_si256((const __m256i *)(const void *)(ptr))
#define LDU128(ptr) _mm_loadu_si128((const __m128i *)(const void *)(ptr))
#define STU256(ptr, v) _mm256_storeu_si256((__m256i *)(void *)(ptr), (v))
#define STU128(ptr, v) _mm_storeu_si128((__m128i *)(void *)(ptr), (v))


/* u8 / s8 bytes widened to int16 and transposed, 8 pixels per step. */
T_AVX2 static void tr4_s16(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                           const uint8_t *r3, int32_t len, int16_t *d, int u8) {
    int32_t t = 0;
    for (; t + 8 <= len; t += 8) {
        __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(r0 + t));
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(r1 + t));
        __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)(r2 + t));
        __m128i e = _mm_loadl_epi64((const __m128i *)(const void *)(r3 + t));
        __m128i ab = _mm_unpacklo_epi8(a, b), ce = _mm_unpacklo_epi8(c, e);
        __m128i lo = _mm_unpacklo_epi16(ab, ce), hi = _mm_unpackhi_epi16(ab, ce);
        if (u8) {
            STU256(d + 4 * t, _mm256_cvtepu8_epi16(lo));
            STU256(d + 4 * t + 16, _mm256_cvtepu8_epi16(hi));
        } else {
            STU256(d + 4 * t, _mm256_cvtepi8_epi16(lo));
            STU256(d + 4 * t + 16, _mm256_cvtepi8_epi16(hi));
        }
    }
    if (t + 4 <= len) {   /* four pixels: 4-byte loads */
        __m128i a = _mm_cvtsi32_si128(load32((const int8_t *)(r0 + t)));
        __m128i b = _mm_cvtsi32_si128(load32((const int8_t *)(r1 + t)));
        __m128i c = _mm_cvtsi32_si128(load32((const int8_t *)(r2 + t)));
        __m128i e = _mm_cvtsi32_si128(load32((const int8_t *)(r3 + t)));
        __m128i lo = _mm_unpacklo_epi16(_mm_unpacklo_epi8(a, b), _mm_unpacklo_epi8(c, e));
        STU256(d + 4 * t, u8 ? _mm256_cvtepu8_epi16(lo) : _mm256_cvtepi8_epi16(lo));
        t += 4;
    }
    for (; t < len; t++) {
        d[4 * t] = u8 ? (int16_t)r0[t] : (int16_t)(int8_t)r0[t];
        d[4 * t + 1] = u8 ? (int16_t)r1[t] : (int16_t)(int8_t)r1[t];
        d[4 * t + 2] = u8 ? (int16_t)r2[t] : (int16_t)(int8_t)r2[t];
        d[4 * t + 3] = u8 ? (int16_t)r3[t] : (int16_t)(int8_t)r3[t];
    }
}

T_AVX2 static void tr4_s16_u8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                    const uint8_t *r3, int32_t len, void *dst) {
    tr4_s16(r0, r1, r2, r3, len, (int16_t *)dst, 1);
}
T_AVX2 static void tr4_s16_s8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                    const uint8_t *r3, int32_t len, void *dst) {
    tr4_s16(r0, r1, r2, r3, len, (int16_t *)dst, 0);
}

/* Bytes transposed, optionally with the top bit flipped (VNNI and pair16 panels). */
T_AVX2 static void tr4_b(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                         const uint8_t *r3, int32_t len, uint8_t *d, uint8_t flip) {
    __m128i fv = _mm_set1_epi8((char)flip);
    int32_t t = 0;
    for (; t + 8 <= len; t += 8) {
        __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(r0 + t));
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(r1 + t));
        __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)(r2 + t));
        __m128i e = _mm_loadl_epi64((const __m128i *)(const void *)(r3 + t));
        __m128i ab = _mm_unpacklo_epi8(a, b), ce = _mm_unpacklo_epi8(c, e);
        STU128(d + 4 * t, _mm_xor_si128(_mm_unpacklo_epi16(ab, ce), fv));
        STU128(d + 4 * t + 16, _mm_xor_si128(_mm_unpackhi_epi16(ab, ce), fv));
    }
    if (t + 4 <= len) {   /* four pixels: 4-byte loads */
        __m128i a = _mm_cvtsi32_si128(load32((const int8_t *)(r0 + t)));
        __m128i b = _mm_cvtsi32_si128(load32((const int8_t *)(r1 + t)));
        __m128i c = _mm_cvtsi32_si128(load32((const int8_t *)(r2 + t)));
        __m128i e = _mm_cvtsi32_si128(load32((const int8_t *)(r3 + t)));
        STU128(d + 4 * t, _mm_xor_si128(_mm_unpacklo_epi16(_mm_unpacklo_epi8(a, b),
                                                          _mm_unpacklo_epi8(c, e)), fv));
        t += 4;
    }
    for (; t < len; t++) {
        d[4 * t] = (uint8_t)(r0[t] ^ flip);
        d[4 * t + 1] = (uint8_t)(r1[t] ^ flip);
        d[4 * t + 2] = (uint8_t)(r2[t] ^ flip);
        d[4 * t + 3] = (uint8_t)(r3[t] ^ flip);
    }
}

/* u8 inputs as they are, s8 inputs + 128: the u8 operand of vpdpbusd. */
T_AVX2 static void tr4_u8_u8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                   const uint8_t *r3, int32_t len, void *dst) {
    tr4_b(r0, r1, r2, r3, len, (uint8_t *)dst, 0);
}
T_AVX2 static void tr4_u8_s8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                                   const uint8_t *r3, int32_t len, void *dst) {
    tr4_b(r0, r1, r2, r3, len, (uint8_t *)dst, 0x80);
}

/* Strided copy of an input run: stride 1 is a copy; stride 2 takes the even bytes of
 * 32 at a time, then of 16, and ends with the 8 outputs before n from the odd bytes of
 * the 16 ending at src[2n - 2] (overlapping outputs already stored, with the same
 * values).  No read leaves src[0 .. 2n - 2]; runs shorter than 9 go byte by byte. */
T_AVX2 static inline __attribute__((always_inline)) void
gather1__avx2(const uint8_t *src, int32_t stride, int32_t n, uint8_t *dst) {
    int32_t t = 0;
    if (stride == 1 && n >= 4 && n <= 32) {   /* short rows: two overlapping copies */
        if (n >= 16) {
            __m128i a = LDU128(src), b = LDU128(src + n - 16);
            STU128(dst, a);
            STU128(dst + n - 16, b);
        } else if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, src, 8);
            memcpy(&b, src + n - 8, 8);
            memcpy(dst, &a, 8);
            memcpy(dst + n - 8, &b, 8);
        } else {
            uint32_t a, b;
            memcpy(&a, src, 4);
            memcpy(&b, src + n - 4, 4);
            memcpy(dst, &a, 4);
            memcpy(dst + n - 4, &b, 4);
        }
        return;
    }
    if (stride == 1) {
        memcpy(dst, src, (size_t)n);
        return;
    }
    if (stride == 2 && n >= 9) {
        const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1,
                                           -1, -1);
        const __m128i odd = _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, -1, -1, -1, -1, -1, -1,
                                          -1, -1);
        for (; 2 * t + 31 <= 2 * n - 2; t += 16) {
            __m128i a = LDU128(src + 2 * t);
            __m128i b = LDU128(src + 2 * t + 16);
            STU128(dst + t,
                   _mm_unpacklo_epi64(_mm_shuffle_epi8(a, even), _mm_shuffle_epi8(b, even)));
        }
        if (2 * t + 15 <= 2 * n - 2) {
            _mm_storel_epi64((__m128i *)(void *)(dst + t),
                             _mm_shuffle_epi8(LDU128(src + 2 * t), even));
            t += 8;
        }
        if (t < n)
            _mm_storel_epi64((__m128i *)(void *)(dst + n - 8),
                             _mm_shuffle_epi8(LDU128(src + 2 * n - 17), odd));
        return;
    }
    for (; t < n; t++)
        dst[t] = src[(int64_t)t * stride];
}

T_AVX2 static void gather__avx2(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                                uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r;
    for (r = 0; r < rows; r++, src += sstep, dst += dstep)
        gather1__avx2(src, stride, n, dst);
}

/* ---- vector requantization (exactly oqci_requant) ---------------------------------- */

/* One output channel's epilogue constants (see bias_may_overflow), broadcast. */
typedef struct RqV {
    int fixed;            /* OQCI_REQ_FIXED */
    int sat;              /* the bias addition may overflow int32: saturate it */
    __m256i add;          /* sat: the correction; else correction + bias (mod 2^32) */
    __m256i bias;         /* sat: the bias */
    __m256 mult2;         /* float: 2 M (see rq8) */
    __m256 lo2, hi2;      /* float: 2 lo, 2 hi */
    __m256i m;            /* fixed: multiplier (low 32 bits of each 64-bit lane) */
    __m256i half;         /* fixed: 2^(shift - 1) per 64-bit lane */
    __m128i shift;        /* fixed: shift count */
    __m256i lo64, hi64;   /* fixed: lo, hi per 64-bit lane */
} RqV;

/* Channel k's constants: correction corr (mod 2^32), its bias unless bias_done. */
T_AVX2 static void rqv_make(const OqciConv *p, int32_t k, int32_t corr, int bias_done, RqV *v) {
    const OqciRequant *r = &p->rq;
    int32_t i = r->per_index ? k : 0;
    int64_t b = !bias_done && p->bias ? p->bias[k] : 0;
    v->fixed = r->mode == OQCI_REQ_FIXED;
    v->sat = bias_may_overflow(p, b);
    v->add = _mm256_set1_epi32(v->sat ? corr : (int32_t)((uint32_t)corr + (uint32_t)b));
    v->bias = _mm256_set1_epi32((int32_t)b);
#ifndef OQCI_NO_FLOAT
    if (!v->fixed) {
        v->mult2 = _mm256_set1_ps(rq_mult2(r->mult[i]));
        v->lo2 = _mm256_set1_ps(2.0f * (float)p->lo);
        v->hi2 = _mm256_set1_ps(2.0f * (float)p->hi);
        return;
    }
#endif
    v->m = _mm256_set1_epi64x(r->m[i]);
    v->half = _mm256_set1_epi64x((int64_t)1 << (r->shift[i] - 1));
    v->shift = _mm_cvtsi32_si128(r->shift[i]);
    v->lo64 = _mm256_set1_epi64x(p->lo);
    v->hi64 = _mm256_set1_epi64x(p->hi);
}

/* round(p * 2^-shift) half away from zero on four int64 products, clamped to [lo, hi]
 * (saturating to int32 first changes nothing: lo and hi are int32). */
T_AVX2 static inline __m256i mul_shift64(__m256i prod, const RqV *v) {
    __m256i s = _mm256_cmpgt_epi64(_mm256_setzero_si256(), prod);
    __m256i a = _mm256_sub_epi64(_mm256_xor_si256(prod, s), s);
    __m256i q = _mm256_srl_epi64(_mm256_add_epi64(a, v->half), v->shift);
    __m256i r = _mm256_sub_epi64(_mm256_xor_si256(q, s), s);
    r = _mm256_blendv_epi8(r, v->hi64, _mm256_cmpgt_epi64(r, v->hi64));
    return _mm256_blendv_epi8(r, v->lo64, _mm256_cmpgt_epi64(v->lo64, r));
}

/* a + b saturated to int32 (exactly sat32((int64)a + b)). */
T_AVX2 static inline __m256i add_sat32(__m256i a, __m256i b) {
    __m256i s = _mm256_add_epi32(a, b);
    __m256i ovf = _mm256_and_si256(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s));
    __m256i sat = _mm256_xor_si256(_mm256_srai_epi32(a, 31), _mm256_set1_epi32(INT32_MAX));
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(s),
                                                _mm256_castsi256_ps(sat),
                                                _mm256_castsi256_ps(ovf)));
}

/* The epilogue of eight raw sums: int32 results in [lo, hi], exactly oqci_requant of
 * the saturated accumulator. */
T_AVX2 static inline __attribute__((always_inline)) __m256i rq8(__m256i acc, const RqV *v) {
    acc = _mm256_add_epi32(acc, v->add);
    if (v->sat)
        acc = add_sat32(acc, v->bias);
#ifndef OQCI_NO_FLOAT
    if (!v->fixed) {
        /* oqci_round_clamp((float)acc * M, lo, hi), from u = 2 t computed as acc * (2 M):
         * scaling by 2 commutes with the product's rounding (both results are then
         * clamped or round to 0 where it may not: overflow, subnormals).  c = u clamped
         * to [2 lo, 2 hi] (NaN: maxps returns its second operand, 2 lo) is 2 clamp(t), so
         * with m = trunc(c) (|c| <= 510, exact) round-half-away(clamp(t)) is
         * (m + 1) >> 1 for m >= 0 and m >> 1 for m < 0 (arithmetic shifts). */
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), v->mult2);
        __m256i m = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(u, v->lo2), v->hi2));
        __m256i ge0 = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(-1));
        return _mm256_srai_epi32(_mm256_sub_epi32(m, ge0), 1);
    }
#endif
    {
        __m256i ev = mul_shift64(_mm256_mul_epi32(acc, v->m), v);
        __m256i od = mul_shift64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), v->m), v);
        return _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
    }
}

/* Four vectors of 8 int32 results in [lo, hi] as 32 out_type bytes in order (r0's 8,
 * then r1's, r2's, r3's).  The values are inside the output type: packing saturates
 * nothing. */
T_AVX2 static inline __attribute__((always_inline)) __m256i pack32(int u8, __m256i r0, __m256i r1,
                                                                   __m256i r2, __m256i r3) {
    __m256i w01 = _mm256_packs_epi32(r0, r1), w23 = _mm256_packs_epi32(r2, r3);
    __m256i b = u8 ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The first n bytes of v (n: 8, 16, 24 or 28, a constant once inlined) to d. */
T_AVX2 static inline __attribute__((always_inline)) void store_bytes(uint8_t *d, __m256i v,
                                                                       int n) {
    __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    if (n == 8) {
        _mm_storel_epi64((__m128i *)(void *)d, lo);
        return;
    }
    STU128(d, lo);
    if (n >= 24)
        _mm_storel_epi64((__m128i *)(void *)(d + 16), hi);
    if (n == 28) {
        int32_t last = _mm_extract_epi32(hi, 2);
        memcpy(d + 24, &last, 4);
    }
}

/* The outputs of 32 consecutive sums t as out_type bytes, in order (t must have 32
 * readable entries; only the caller's first n outputs are meaningful). */
T_AVX2 static __m256i rq32(const OqciConv *p, const int32_t *t, const RqV *v) {
    return pack32(p->out_type == OQCI_U8, rq8(LDU256(t), v), rq8(LDU256(t + 8), v),
                  rq8(LDU256(t + 16), v), rq8(LDU256(t + 24), v));
}

T_AVX2 static void store_tile__avx2(const OqciConv *p, const int32_t *t, int32_t ldt,
                                    int32_t k0, int32_t nk, const int32_t *corr, int bias_done,
                                    const Seg *segs, int nseg, void *y) {
    int32_t r;
    uint8_t q[32];
    for (r = 0; r < nk; r++) {
        int32_t k = k0 + r;
        RqV v;
        rqv_make(p, k, corr ? corr[r] : 0, bias_done, &v);
        STU256(q, rq32(p, t + (size_t)r * ldt, &v));
        store_runs(p, q, k, segs, nseg, y);
    }
}

/* ---- q8conv_2x28c4__avx2: 2 channels x 28 pixels, int16 panel ---------------------- */

#define AVX2_NR 28
#define ACC7(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6)

/* pixels 0-3 | 4-7 of two accumulators (lanes 2p, 2p+1 of pixel p) summed in order */
T_AVX2 static __m256i hsum_pairs(__m256i a, __m256i b) {
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8);
}

/* The 2 x 28 sums: 14 accumulators a<r><v> (channel r, pixels 4v .. 4v + 3, each as two
 * lanes of pair sums).  Written so gcc keeps them in registers: the panel pointer
 * advances at the end of the body and the sums leave the loop only through plain
 * stores or register operations (a reduction right after the loop made gcc 12 spill
 * half of them). */
#define Q8CONV_2X28_SUMS                                                                \
    const int16_t *pp = (const int16_t *)panel;                                         \
    const int8_t *w0 = w[0], *w1 = w[1];                                                \
    int32_t q;                                                                          \
    ACC7(DECL)                                                                          \
    for (q = 0; q < nq; q++) {                                                          \
        /* words w0 w1 w2 w3 repeated: dword lanes alternate (w0, w1) and (w2, w3) */   \
        __m256i wv = _mm256_cvtepi8_epi16(_mm_set1_epi32(load32(w0 + 4 * q)));         \
        ACC7(STEP0)                                                                     \
        wv = _mm256_cvtepi8_epi16(_mm_set1_epi32(load32(w1 + 4 * q)));                  \
        ACC7(STEP1)                                                                     \
        pp += 4 * AVX2_NR;                                                              \
    }
#define DECL(v) __m256i a0##v = _mm256_setzero_si256(), a1##v = _mm256_setzero_si256();
#define STEP(r, v) a##r##v = _mm256_add_epi32(a##r##v, _mm256_madd_epi16(LDU256(pp + 16 * v), wv));
#define STEP0(v) STEP(0, v)
#define STEP1(v) STEP(1, v)
/* the raw sums out: channel 0's 7 vectors, then channel 1's */
#define STORE(v) STU256(raw + 8 * v, a0##v); STU256(raw + 56 + 8 * v, a1##v);

T_AVX2 static void q8conv_2x28c4__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                       int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    int32_t raw[14 * 8];
    Q8CONV_2X28_SUMS
    ACC7(STORE)
    {
        int r, v;
        for (r = 0; r < nk; r++)
            for (v = 0; v < 4; v++) {
                const int32_t *s = raw + 56 * r + 16 * v;
                __m256i *d = (__m256i *)(void *)(t + r * TILE_NR + 8 * v);
                __m256i lo = LDU256(s);
                __m256i hi = v < 3 ? LDU256(s + 8)
                                   : _mm256_setzero_si256();
                __m256i sum = hsum_pairs(lo, hi);
                _mm256_storeu_si256(d, acc ? _mm256_add_epi32(_mm256_loadu_si256(d), sum) : sum);
            }
    }
}

#ifndef OQCI_NO_FLOAT
/* A channel's float epilogue constants (the fields rq8 reads when the requantization is
 * float and the bias addition cannot overflow), as rqv_make sets them, from c. */
T_AVX2 static inline __attribute__((always_inline)) void rqv_float(const OqciConv *p,
                                                                     const RqPre *c, RqV *v) {
    v->fixed = 0;
    v->sat = 0;
    v->add = _mm256_set1_epi32(c->add);
    v->mult2 = _mm256_set1_ps(c->m2);
    v->lo2 = _mm256_set1_ps(2.0f * (float)p->lo);
    v->hi2 = _mm256_set1_ps(2.0f * (float)p->hi);
}

/* q8conv_2x28c4__avx2 with its epilogue: the raw sums leave the registers as in
 * q8conv_2x28c4__avx2 (so gcc keeps the loop's accumulators in registers), then the
 * pair sums are added up (hsum_pairs) and requantized (rq8), 28 bytes per channel into
 * out, without the int32 tile and the separate store pass. */
T_AVX2 static void q8conv_2x28c4_rq__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                          const OqciConv *p, int32_t nk,
                                          const RqPre *pre, uint8_t *out, int64_t ostride,
                                          int32_t np) {
    (void)np;   /* (computes whole panels) */
    int32_t raw[14 * 8];
    Q8CONV_2X28_SUMS
    ACC7(STORE)
    {
        int u8 = p->out_type == OQCI_U8, r;
        for (r = 0; r < nk; r++) {
            const int32_t *s = raw + 56 * r;
            RqV v;
            rqv_float(p, pre + r, &v);
            store_bytes(out + r * ostride,
                        pack32(u8, rq8(hsum_pairs(LDU256(s), LDU256(s + 8)), &v),
                               rq8(hsum_pairs(LDU256(s + 16), LDU256(s + 24)), &v),
                               rq8(hsum_pairs(LDU256(s + 32), LDU256(s + 40)), &v),
                               rq8(hsum_pairs(LDU256(s + 48), _mm256_setzero_si256()), &v)),
                        AVX2_NR);
        }
    }
}
#define UKR_RQ_AVX2 q8conv_2x28c4_rq__avx2
#else
#define UKR_RQ_AVX2 NULL   /* (integer-only builds: fixed requantization only) */
#endif
#undef STORE
#undef STEP0
#undef STEP1
#undef STEP
#undef DECL
#undef Q8CONV_2X28_SUMS

static const Family family_avx2 = {OQCI_ISA_AVX2, 2, AVX2_NR, 2, KBQ(AVX2_NR, 2), -1, q8conv_2x28c4__avx2,
                                   {tr4_s16_s8__avx2, tr4_s16_u8__avx2}, gather__avx2,
                                   store_tile__avx2, UKR_RQ_AVX2, {NULL, NULL}, NULL, NULL, NULL};

/* ---- q8conv_3x24c4n__avx2: 3 channels x 24 pixels, u8 panel, narrow weights --------
 * For weights whose pairs fit (p->wpair16, see oqci_conv_wpair16): vpmaddubsw's int16
 * sums of two u8 x s8 products are exact, so one vpmaddubsw (32 products) and one
 * vpmaddwd by ones (the two pair sums of each quad into int32) do what vpdpbusd does.
 * The panel is the VNNI one: u8 inputs as they are, s8 inputs + 128 with the -128 sum w
 * correction.  A panel whose pixels fill only one or two of the three 8-pixel vectors
 * (the last panel of a 7x7 plane holds 1 of 24) runs a 3x8 or 3x16 body. */
#define N_NR 24
#define NROWS(F, V) F(0, V) F(1, V) F(2, V)
#define NV1(F, r) F(r, 0)
#define NV2(F, r) F(r, 0) F(r, 1)
#define NV3(F, r) F(r, 0) F(r, 1) F(r, 2)
#define NDECL(r, v) __m256i a##r##v = _mm256_setzero_si256();
#define NDECLR(r, V) V(NDECL, r)
#define NLOAD(r, v) __m256i p##v = LDU256(pp + 32 * v);
#define NDOT(r, v)                                                                      \
    a##r##v = _mm256_add_epi32(a##r##v, _mm256_madd_epi16(_mm256_maddubs_epi16(p##v, wb), ones));
#define NSTEP(r, V) { __m256i wb = _mm256_set1_epi32(load32(w[r] + 4 * q)); V(NDOT, r) }
#define NSUMS(V)                                                                        \
    const uint8_t *pp = (const uint8_t *)panel;                                         \
    const __m256i ones = _mm256_set1_epi16(1);                                          \
    int32_t q;                                                                          \
    NROWS(NDECLR, V)                                                                    \
    for (q = 0; q < nq; q++, pp += 4 * N_NR) {                                          \
        V(NLOAD, 0)                                                                     \
        NROWS(NSTEP, V)                                                                 \
    }
#define NST(r, v)                                                                       \
    STU256(t + r * TILE_NR + 8 * v,                                                     \
           acc ? _mm256_add_epi32(LDU256(t + r * TILE_NR + 8 * v), a##r##v) : a##r##v);
#define NSTR(r, V) if (r < nk) { V(NST, r) }
#define NBODY(NAME, V)                                                                  \
    T_AVX2 static void NAME(int32_t nq, const void *panel, const int8_t *const *w,      \
                            int32_t *t, int acc, int32_t nk) {                          \
        NSUMS(V)                                                                        \
        NROWS(NSTR, V)                                                                  \
    }
NBODY(q8conv_3x8c4n__avx2, NV1)
NBODY(q8conv_3x16c4n__avx2, NV2)
NBODY(q8conv_3x24c4n_full__avx2, NV3)
#undef NBODY

T_AVX2 static void q8conv_3x24c4n__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                        int32_t *t, int acc, int32_t np, int32_t nk) {
    if (np <= 8)
        q8conv_3x8c4n__avx2(nq, panel, w, t, acc, nk);
    else if (np <= 16)
        q8conv_3x16c4n__avx2(nq, panel, w, t, acc, nk);
    else
        q8conv_3x24c4n_full__avx2(nq, panel, w, t, acc, nk);
}

#ifndef OQCI_NO_FLOAT
/* The same with the epilogue in registers (np bytes per channel are meaningful). */
#define NRQ1(r) pack32(u8, rq8(a##r##0, &v), z, z, z)
#define NRQ2(r) pack32(u8, rq8(a##r##0, &v), rq8(a##r##1, &v), z, z)
#define NRQ3(r) pack32(u8, rq8(a##r##0, &v), rq8(a##r##1, &v), rq8(a##r##2, &v), z)
#define NRQ(r, PACK)                                                                    \
    if (r < nk) {                                                                       \
        RqV v;                                                                          \
        rqv_float(p, pre + r, &v);                                                      \
        store_bytes(out + r * ostride, PACK(r), nbytes);                                \
    }
#define NBODY(NAME, V, PACK, NBYTES)                                                    \
    T_AVX2 static void NAME(int32_t nq, const void *panel, const int8_t *const *w,      \
                            const OqciConv *p, int32_t nk, const RqPre *pre,            \
                            uint8_t *out, int64_t ostride) {                            \
        const int u8 = p->out_type == OQCI_U8, nbytes = NBYTES;                         \
        const __m256i z = _mm256_setzero_si256();                                       \
        NSUMS(V)                                                                        \
        NROWS(NRQ, PACK)                                                                \
    }
NBODY(q8conv_3x8c4n_rq__avx2, NV1, NRQ1, 8)
NBODY(q8conv_3x16c4n_rq__avx2, NV2, NRQ2, 16)
NBODY(q8conv_3x24c4n_rq_full__avx2, NV3, NRQ3, 24)
#undef NBODY
#undef NRQ
#undef NRQ1
#undef NRQ2
#undef NRQ3

T_AVX2 static void q8conv_3x24c4n_rq__avx2(int32_t nq, const void *panel, const int8_t *const *w,
                                           const OqciConv *p, int32_t nk,
                                           const RqPre *pre, uint8_t *out, int64_t ostride,
                                           int32_t np) {
    if (np <= 8)
        q8conv_3x8c4n_rq__avx2(nq, panel, w, p, nk, pre, out, ostride);
    else if (np <= 16)
        q8conv_3x16c4n_rq__avx2(nq, panel, w, p, nk, pre, out, ostride);
    else
        q8conv_3x24c4n_rq_full__avx2(nq, panel, w, p, nk, pre, out, ostride);
}
#define UKR_RQ_AVX2N q8conv_3x24c4n_rq__avx2
#else
#define UKR_RQ_AVX2N NULL
#endif
#undef NSTR
#undef NST
#undef NSUMS
#undef NSTEP
#undef NDOT
#undef NLOAD
#undef NDECLR
#undef NDECL
#undef NV3
#undef NV2
#undef NV1
#undef NROWS

static const Family family_avx2n = {OQCI_ISA_AVX2, 3, N_NR, 1, KBQ(N_NR, 1), OQCI_S8, q8conv_3x24c4n__avx2,
                                    {tr4_u8_s8__avx2, tr4_u8_u8__avx2}, gather__avx2,
                                    store_tile__avx2, UKR_RQ_AVX2N, {NULL, NULL}, NULL, NULL, NULL};

/* ---- q8gemv_4x16__avx2: few pixels, dot products on 16-bit copies ------------------ */

T_AVX2 static int32_t hsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* acc[r] = sum over len (a multiple of 4, <= OQCI_KCHUNK) of a * w[r], r < 4. */
T_AVX2 static void q8gemv_4x16__avx2(const uint8_t *a, int u8, const int8_t *const *w,
                                     int32_t len, int32_t acc[4]) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    int32_t t = 0, r;
    for (; t + 16 <= len; t += 16) {
        __m128i ab = LDU128(a + t);
        __m256i av = u8 ? _mm256_cvtepu8_epi16(ab) : _mm256_cvtepi8_epi16(ab);
#define G(r)                                                                            \
    s##r = _mm256_add_epi32(                                                            \
        s##r, _mm256_madd_epi16(av, _mm256_cvtepi8_epi16(_mm_loadu_si128(               \
                                        (const __m128i *)(const void *)(w[r] + t)))));
        G(0) G(1) G(2) G(3)
#undef G
    }
    acc[0] = hsum8(s0);
    acc[1] = hsum8(s1);
    acc[2] = hsum8(s2);
    acc[3] = hsum8(s3);
    for (; t < len; t += 4)
        for (r = 0; r < 4; r++)
            acc[r] = u8 ? oqci_dp4a_u8s8(acc[r], a + t, w[r] + t)
                        : oqci_dp4a_s8s8(acc[r], (const int8_t *)a + t, w[r] + t);
}

/* Each output pixel's im2col row (scratch) against 4 weight rows at a time. */
static void conv_gemv_avx2(const OqciConv *p, const void *x, void *y, void *scratch) {
    int64_t pix = (int64_t)p->out_h * p->out_w, plane = (int64_t)p->in_h * p->in_w, n, q;
    int32_t cg = p->in_c / p->group, kg = p->out_c / p->group, g;
    uint8_t *row = (uint8_t *)scratch;
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = (const uint8_t *)x + (n * p->in_c + (int64_t)g * cg) * plane;
            for (q = 0; q < pix; q++) {
                int32_t kk;
                im2col(p, xg, q, 1, row);
                for (kk = 0; kk < kg; kk += 4) {
                    int32_t nk = kg - kk < 4 ? kg - kk : 4, r, off;
                    int32_t k = g * kg + kk;
                    int64_t acc[4] = {0, 0, 0, 0};
                    const int8_t *w[4];
                    for (off = 0; off < p->kpad; off += OQCI_KCHUNK) {
                        int32_t len = p->kpad - off < OQCI_KCHUNK ? p->kpad - off : OQCI_KCHUNK;
                        int32_t s[4];
                        for (r = 0; r < 4; r++)
                            w[r] = p->w + (size_t)(k + (r < nk ? r : nk - 1)) * (size_t)p->kpad +
                                   off;
                        q8gemv_4x16__avx2(row + off, p->in_type == OQCI_U8, w, len, s);
                        for (r = 0; r < 4; r++)
                            acc[r] += s[r];
                    }
                    for (r = 0; r < nk; r++) {
                        int64_t v = acc[r] + (p->bias ? p->bias[k + r] : 0);
                        put_q(p, y, (n * p->out_ctotal + p->out_coff + k + r) * pix + q,
                              rq1(p, sat32(v), k + r));
                    }
                }
            }
        }
}

#ifndef OQCI_NO_FLOAT   /* (integer-only builds: depthwise goes through the GEMM) */
/* ---- depthwise on float planes: q8dw_16x9f__avx2 (9 taps), q8dw_16xNf__avx2 -------------
 * Every product |x * w| <= 255 * 128 and a window holds at most DW_MAX_TAPS of them, so
 * every partial sum is an integer below 2^21: float multiply-adds, fused or not, are
 * exact, and FMA does a tap of 8 outputs in one instruction (vpmaddwd needs an unpack
 * and an add for two).  The input channel's plane is copied once into the scratch as
 * floats, zero-padded and split by stride phase (DwGeo).  When the requantization is
 * float and |bias| + taps * 32640 < 2^24, the sums start from the bias and are
 * requantized in float directly (the steps of rq8 after its conversion: the same t);
 * otherwise they are converted to int32 (exact) and go through rq8. */

#if defined(__AVX2__) && !defined(__FMA__)
#define T_AVX2F T_AVX2
#define FMADD(a, b, c) _mm256_add_ps(_mm256_mul_ps(a, b), c)
#else
#if defined(__AVX2__)
#define T_AVX2F
#else
#define T_AVX2F __attribute__((target("avx2,fma")))
#endif
#define FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#endif

/* 8 bytes (u8 or s8) as 8 floats. */
T_AVX2F static inline __m256 cvt8f(__m128i b, int u8) {
    return _mm256_cvtepi32_ps(u8 ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b));
}

/* The part of each phase's plane row that lies inside the input: e in [e0, e1) for
 * iw = e * s_w + ph - p_l in [0, in_w).  e0 = ceil((p_l - ph) / s_w) and e1 =
 * ceil((in_w + p_l - ph) / s_w) are q + (ph < r) for the quotient and remainder of
 * p_l and in_w + p_l by s_w: four divisions per call, none per channel. */
typedef struct DwfSpan {
    int32_t ql, rl, qr, rr;
} DwfSpan;

static void dwf_span_make(const OqciConv *p, DwfSpan *s) {
    s->ql = p->p_l / p->s_w;
    s->rl = p->p_l % p->s_w;
    s->qr = (p->in_w + p->p_l) / p->s_w;
    s->rr = (p->in_w + p->p_l) % p->s_w;
}

/* 8 bytes (s_w 1) or 16 (s_w 2) from src when they all lie before lim (the end of the
 * input tensor), else the ones before lim and zeros: the conversions never read past
 * the input tensor. */
T_AVX2F static inline __m128i dwf_load(const uint8_t *src, const uint8_t *lim, int32_t bytes) {
    if (lim - src >= bytes)
        return bytes == 16 ? LDU128(src) : _mm_loadl_epi64((const __m128i *)(const void *)src);
    {
        uint8_t t[16] = {0};
        memcpy(t, src, (size_t)(lim - src));
        return LDU128(t);
    }
}

/* Fills the float plane of input channel xc: element (ph, r, e) = x[r - p_t][e * s_w +
 * ph - p_l].  Only the elements inside the input are written: the padding is zeroed
 * once per call (it is the same for every channel).  Strides 1 and 2 convert 8 bytes
 * per step (a row shorter than 8 with a masked store, a longer one's last 8 overlapping
 * the ones before); larger strides go one byte at a time. */
T_AVX2F static void dwf_fill(const OqciConv *p, const DwGeo *d, const DwfSpan *s,
                             const uint8_t *xc, const uint8_t *lim, float *plane) {
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    int32_t ph, r, u8 = p->in_type == OQCI_U8, sw = p->s_w;
    int32_t r0 = p->p_t, r1 = p->p_t + p->in_h < d->rows ? p->p_t + p->in_h : d->rows;
    for (ph = 0; ph < d->phases; ph++) {
        int32_t e0 = s->ql + (ph < s->rl), e1 = s->qr + (ph < s->rr), n;
        __m256i mask;
        e0 = e0 < 0 ? 0 : e0 > d->width ? d->width : e0;
        e1 = e1 < e0 ? e0 : e1 > d->width ? d->width : e1;
        n = e1 - e0;
        mask = _mm256_loadu_si256((const __m256i *)(const void *)(ones_then_zeros + 8 - (n < 8 ? n : 8)));
        for (r = r0; r < r1; r++) {
            float *dst = plane + ((int64_t)ph * d->rows + r) * d->width + e0;
            const uint8_t *src = xc + (int64_t)(r - p->p_t) * p->in_w + (int64_t)e0 * sw +
                                 ph - p->p_l;
            int32_t t = 0;
#define CVT8(at, U8)                                                                    \
    _mm256_storeu_ps(dst + (at), cvt8f(_mm_loadl_epi64((const __m128i *)(const void *)(src + (at))), U8))
#define CVT_RUN(U8)   /* 16 per step, then the last 8 (overlapping the ones before) */  \
    for (; t + 16 <= n; t += 16) {                                                      \
        CVT8(t, U8);                                                                    \
        CVT8(t + 8, U8);                                                                \
    }                                                                                   \
    if (t < n) {                                                                        \
        if (t + 8 < n)                                                                  \
            CVT8(t, U8);                                                                \
        CVT8(n - 8, U8);                                                                \
    }
            if (sw == 1 && n >= 8 && u8) {
                CVT_RUN(1)
            } else if (sw == 1 && n >= 8) {
                CVT_RUN(0)
            } else if (sw == 2 && n >= 8) {
                /* bytes 2t .. 2t + 15: inside the row while t + 8 < n; the last 8
                 * (overlapping) may reach one byte past it */
                for (; t + 8 < n; t += 8)
                    _mm256_storeu_ps(dst + t, cvt8f(_mm_shuffle_epi8(LDU128(src + 2 * t), even), u8));
                _mm256_storeu_ps(dst + n - 8,
                                 cvt8f(_mm_shuffle_epi8(dwf_load(src + 2 * (n - 8), lim, 16), even), u8));
            } else if (sw <= 2 && n > 0) {   /* fewer than 8: masked */
                __m128i b = sw == 1 ? dwf_load(src, lim, 8)
                                    : _mm_shuffle_epi8(dwf_load(src, lim, 16), even);
                _mm256_maskstore_ps(dst, mask, cvt8f(b, u8));
            } else {
                for (; t < n; t++) {
                    uint8_t b = src[(int64_t)t * sw];
                    dst[t] = u8 ? (float)b : (float)(int8_t)b;
                }
            }
#undef CVT_RUN
#undef CVT8
        }
    }
}

/* Float sums s of 8 outputs (bias included) requantized: rq8's float steps on t2 = 2 t. */
T_AVX2F static inline __m256i rqf8(__m256 s, const RqV *v) {
    __m256 u = _mm256_mul_ps(s, v->mult2);
    __m256i m = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(u, v->lo2), v->hi2));
    __m256i ge0 = _mm256_cmpgt_epi32(m, _mm256_set1_epi32(-1));
    return _mm256_srai_epi32(_mm256_sub_epi32(m, ge0), 1);
}

/* The 8 outputs of sums s: requantized (fused) or the exact int32 sums. */
#define DWF_OUT(ptr, s) STU256(ptr, fused ? rqf8(s, v) : _mm256_cvttps_epi32(s))

/* n outputs (a multiple of 8) of one row, 9 taps at base + off[t], weights w, sums
 * from b; three partial sums (taps 0-2, 3-5, 6-8) per vector of 8, two vectors per
 * step and a last single one. */
T_AVX2F static void q8dw_16x9f__avx2(const float *base, const int64_t *off, const float *w,
                                     int32_t taps, float b, int32_t n, const RqV *v,
                                     int fused, int32_t *out) {
    const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[1]), w2 = _mm256_set1_ps(w[2]);
    const __m256 w3 = _mm256_set1_ps(w[3]), w4 = _mm256_set1_ps(w[4]), w5 = _mm256_set1_ps(w[5]);
    const __m256 w6 = _mm256_set1_ps(w[6]), w7 = _mm256_set1_ps(w[7]), w8 = _mm256_set1_ps(w[8]);
    const float *o0 = base + off[0], *o1 = base + off[1], *o2 = base + off[2];
    const float *o3 = base + off[3], *o4 = base + off[4], *o5 = base + off[5];
    const float *o6 = base + off[6], *o7 = base + off[7], *o8 = base + off[8];
    const __m256 bv = _mm256_set1_ps(b);
    int32_t e;
    (void)taps;
#define L(ptr, at) _mm256_loadu_ps((ptr) + (at))
#define SUM9(at)                                                                        \
    _mm256_add_ps(_mm256_add_ps(FMADD(L(o2, at), w2, FMADD(L(o1, at), w1, FMADD(L(o0, at), w0, bv))), \
                                FMADD(L(o5, at), w5, FMADD(L(o4, at), w4, _mm256_mul_ps(L(o3, at), w3)))), \
                  FMADD(L(o8, at), w8, FMADD(L(o7, at), w7, _mm256_mul_ps(L(o6, at), w6))))
    for (e = 0; e + 16 <= n; e += 16) {
        __m256 a = SUM9(e), c = SUM9(e + 8);
        DWF_OUT(out + e, a);
        DWF_OUT(out + e + 8, c);
    }
    if (e < n)
        DWF_OUT(out + e, SUM9(e));
#undef SUM9
#undef L
}

/* Four output rows of a 3x3 kernel at vertical stride and dilation 1, 8 columns at e,
 * into a0 .. a3 (rows oh .. oh + 3 read padded rows oh .. oh + 5, rstride apart): each
 * loaded vector of an input row serves every output row it is in the window of, so 6 x
 * 3 loads feed 36 multiply-adds.  c0, c1, c2: the three kernel columns' bases (phase
 * and shift); weights w00 .. w22 and the start bv are the caller's locals (a macro, not
 * a function taking an array: gcc 12 then kept the weights on the stack, 30% slower). */
#define DW_W9(w)                                                                        \
    const __m256 w00 = _mm256_set1_ps((w)[0]), w01 = _mm256_set1_ps((w)[1]);            \
    const __m256 w02 = _mm256_set1_ps((w)[2]), w10 = _mm256_set1_ps((w)[3]);            \
    const __m256 w11 = _mm256_set1_ps((w)[4]), w12 = _mm256_set1_ps((w)[5]);            \
    const __m256 w20 = _mm256_set1_ps((w)[6]), w21 = _mm256_set1_ps((w)[7]);            \
    const __m256 w22 = _mm256_set1_ps((w)[8])
#define LX(j, r) t = _mm256_loadu_ps(c##j + (r) * rstride + e)
#define DWFMA FMADD
#define DW_4X8                                                                          \
    a0 = bv, a1 = bv, a2 = bv, a3 = bv;                                                 \
    /* input row 0: out 0 (kernel row 0) */                                             \
    LX(0, 0); a0 = DWFMA(t, w00, a0);                                                   \
    LX(1, 0); a0 = DWFMA(t, w01, a0);                                                   \
    LX(2, 0); a0 = DWFMA(t, w02, a0);                                                   \
    /* row 1: out 0 (k1), out 1 (k0) */                                                 \
    LX(0, 1); a0 = DWFMA(t, w10, a0); a1 = DWFMA(t, w00, a1);                           \
    LX(1, 1); a0 = DWFMA(t, w11, a0); a1 = DWFMA(t, w01, a1);                           \
    LX(2, 1); a0 = DWFMA(t, w12, a0); a1 = DWFMA(t, w02, a1);                           \
    /* row 2: out 0 (k2), 1 (k1), 2 (k0) */                                             \
    LX(0, 2); a0 = DWFMA(t, w20, a0); a1 = DWFMA(t, w10, a1); a2 = DWFMA(t, w00, a2);   \
    LX(1, 2); a0 = DWFMA(t, w21, a0); a1 = DWFMA(t, w11, a1); a2 = DWFMA(t, w01, a2);   \
    LX(2, 2); a0 = DWFMA(t, w22, a0); a1 = DWFMA(t, w12, a1); a2 = DWFMA(t, w02, a2);   \
    /* row 3: out 1 (k2), 2 (k1), 3 (k0) */                                             \
    LX(0, 3); a1 = DWFMA(t, w20, a1); a2 = DWFMA(t, w10, a2); a3 = DWFMA(t, w00, a3);   \
    LX(1, 3); a1 = DWFMA(t, w21, a1); a2 = DWFMA(t, w11, a2); a3 = DWFMA(t, w01, a3);   \
    LX(2, 3); a1 = DWFMA(t, w22, a1); a2 = DWFMA(t, w12, a2); a3 = DWFMA(t, w02, a3);   \
    /* row 4: out 2 (k2), 3 (k1) */                                                     \
    LX(0, 4); a2 = DWFMA(t, w20, a2); a3 = DWFMA(t, w10, a3);                           \
    LX(1, 4); a2 = DWFMA(t, w21, a2); a3 = DWFMA(t, w11, a3);                           \
    LX(2, 4); a2 = DWFMA(t, w22, a2); a3 = DWFMA(t, w12, a3);                           \
    /* row 5: out 3 (k2) */                                                             \
    LX(0, 5); a3 = DWFMA(t, w20, a3);                                                   \
    LX(1, 5); a3 = DWFMA(t, w21, a3);                                                   \
    LX(2, 5); a3 = DWFMA(t, w22, a3)

/* Four output rows into out (ostride apart) as int32: requantized (fused) or the exact
 * sums.  n columns, rounded up to 8; the last columns first, so sums past a row's end
 * land on the next row's first columns, which come later. */
T_AVX2F static void q8dw_4x8x9f__avx2(const float *base, int64_t rstride, const int64_t *colo,
                                      const float *w, float b, int32_t n, const RqV *v,
                                      int fused, int32_t *out, int32_t ostride) {
    DW_W9(w);
    const __m256 bv = _mm256_set1_ps(b);
    const float *c0 = base + colo[0], *c1 = base + colo[1], *c2 = base + colo[2];
    int32_t e;
    for (e = (int32_t)round_up(n, 8) - 8; e >= 0; e -= 8) {
        __m256 a0, a1, a2, a3, t;
        DW_4X8;
        STU256(out + e, fused ? rqf8(a0, v) : _mm256_cvttps_epi32(a0));
        STU256(out + ostride + e, fused ? rqf8(a1, v) : _mm256_cvttps_epi32(a1));
        STU256(out + 2 * ostride + e, fused ? rqf8(a2, v) : _mm256_cvttps_epi32(a2));
        STU256(out + 3 * ostride + e, fused ? rqf8(a3, v) : _mm256_cvttps_epi32(a3));
    }
}

/* A whole output plane at most 8 wide of a 3x3 kernel at vertical stride and dilation
 * 1 with fused float requantization, straight to the out_type bytes at y: blocks of 4
 * rows, the last one overlapping the one before when out_h is not a multiple of 4.  The
 * rows are stored 8 bytes at a time, in order, so each row's extra bytes are
 * overwritten by the next row's; the plane's last row goes through a copy.  (On planes
 * this small the int32 row buffer and the row kernel's calls cost more than the sums.)
 * Needs out_h >= 4. */
T_AVX2F static void q8dw_plane4x9f__avx2(const OqciConv *p, const float *plane,
                                         int64_t rstride, const int64_t *colo, const float *w,
                                         float b, const RqV *v, uint8_t *y) {
    const int32_t oh_n = p->out_h, ow_n = p->out_w, u8 = p->out_type == OQCI_U8, e = 0;
    DW_W9(w);
    const __m256 bv = _mm256_set1_ps(b);
    int32_t oh;
    for (oh = 0; oh < oh_n; oh += 4) {
        const float *c0, *c1, *c2;
        uint8_t *dst, tmp[16];
        __m256 a0, a1, a2, a3, t;
        __m256i bytes;
        __m128i lo, hi;
        if (oh + 4 > oh_n)
            oh = oh_n - 4;
        c0 = plane + oh * rstride + colo[0];
        c1 = plane + oh * rstride + colo[1];
        c2 = plane + oh * rstride + colo[2];
        dst = y + (int64_t)oh * ow_n;
        DW_4X8;
        bytes = pack32(u8, rqf8(a0, v), rqf8(a1, v), rqf8(a2, v), rqf8(a3, v));   /* rows 0-3 */
        lo = _mm256_castsi256_si128(bytes);
        hi = _mm256_extracti128_si256(bytes, 1);
        _mm_storel_epi64((__m128i *)(void *)dst, lo);
        _mm_storel_epi64((__m128i *)(void *)(dst + ow_n), _mm_unpackhi_epi64(lo, lo));
        _mm_storel_epi64((__m128i *)(void *)(dst + 2 * ow_n), hi);
        if (oh + 4 < oh_n) {
            _mm_storel_epi64((__m128i *)(void *)(dst + 3 * ow_n), _mm_unpackhi_epi64(hi, hi));
        } else {   /* the plane's last row */
            _mm_storeu_si128((__m128i *)(void *)tmp, hi);
            memcpy(dst + 3 * ow_n, tmp + 8, (size_t)ow_n);
        }
    }
}

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
/* ---- AVX-512 depthwise rows: q8dw_4x16x9f__avx512vnni, q8dw_16x9f__avx512vnni ------
 * The AVX2 kernels' sums 16 outputs per zmm (the plane rows are DW_VEC = 16 aligned, so
 * a vector never reads past its row; the outputs past n land where the AVX2 kernels'
 * contract allows: on later rows, or in the buffer's slack), requantized by rqf16 (rqf8's
 * steps). */
#undef LX
#undef DWFMA
#define LX(j, r) t = _mm512_loadu_ps(c##j + (r) * rstride + e)
#define DWFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define DW_W9Z(w)                                                                       \
    const __m512 w00 = _mm512_set1_ps((w)[0]), w01 = _mm512_set1_ps((w)[1]);            \
    const __m512 w02 = _mm512_set1_ps((w)[2]), w10 = _mm512_set1_ps((w)[3]);            \
    const __m512 w11 = _mm512_set1_ps((w)[4]), w12 = _mm512_set1_ps((w)[5]);            \
    const __m512 w20 = _mm512_set1_ps((w)[6]), w21 = _mm512_set1_ps((w)[7]);            \
    const __m512 w22 = _mm512_set1_ps((w)[8])

/* RqV's float constants, 16 lanes. */
typedef struct RqFZ {
    __m512 mult2, lo2, hi2;
} RqFZ;

T_AVX512VNNI static inline __attribute__((always_inline)) void rqfz_make(const RqV *v, RqFZ *z) {
    z->mult2 = _mm512_set1_ps(_mm256_cvtss_f32(v->mult2));
    z->lo2 = _mm512_set1_ps(_mm256_cvtss_f32(v->lo2));
    z->hi2 = _mm512_set1_ps(_mm256_cvtss_f32(v->hi2));
}

T_AVX512VNNI static inline __attribute__((always_inline)) __m512i rqf16(__m512 s, const RqFZ *v) {
    __m512 u = _mm512_mul_ps(s, v->mult2);
    __m512i m = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(u, v->lo2), v->hi2));
    m = _mm512_mask_add_epi32(m, _mm512_cmpgt_epi32_mask(m, _mm512_set1_epi32(-1)), m,
                              _mm512_set1_epi32(1));
    return _mm512_srai_epi32(m, 1);
}

#define DWZ_OUT(ptr, s)                                                                 \
    _mm512_storeu_si512((void *)(ptr), fused ? rqf16(s, &vz) : _mm512_cvttps_epi32(s))

T_AVX512VNNI static void q8dw_4x16x9f__avx512vnni(const float *base, int64_t rstride,
                                                  const int64_t *colo, const float *w, float b,
                                                  int32_t n, const RqV *v, int fused,
                                                  int32_t *out, int32_t ostride) {
    DW_W9Z(w);
    const __m512 bv = _mm512_set1_ps(b);
    const float *c0 = base + colo[0], *c1 = base + colo[1], *c2 = base + colo[2];
    int32_t e;
    RqFZ vz;
    rqfz_make(v, &vz);
    for (e = (int32_t)round_up(n, 16) - 16; e >= 0; e -= 16) {
        __m512 a0, a1, a2, a3, t;
        DW_4X8;
        DWZ_OUT(out + e, a0);
        DWZ_OUT(out + ostride + e, a1);
        DWZ_OUT(out + 2 * ostride + e, a2);
        DWZ_OUT(out + 3 * ostride + e, a3);
    }
}

T_AVX512VNNI static void q8dw_16x9f__avx512vnni(const float *base, const int64_t *off,
                                                const float *w, int32_t taps, float b, int32_t n,
                                                const RqV *v, int fused, int32_t *out) {
    DW_W9Z(w);
    const float *o0 = base + off[0], *o1 = base + off[1], *o2 = base + off[2];
    const float *o3 = base + off[3], *o4 = base + off[4], *o5 = base + off[5];
    const float *o6 = base + off[6], *o7 = base + off[7], *o8 = base + off[8];
    const __m512 bv = _mm512_set1_ps(b);
    int32_t e;
    RqFZ vz;
    (void)taps;
    rqfz_make(v, &vz);
#define L(ptr) _mm512_loadu_ps((ptr) + e)
    for (e = 0; e < n; e += 16) {
        __m512 s0 = DWFMA(L(o2), w02, DWFMA(L(o1), w01, DWFMA(L(o0), w00, bv)));
        __m512 s1 = DWFMA(L(o5), w12, DWFMA(L(o4), w11, _mm512_mul_ps(L(o3), w10)));
        __m512 s2 = DWFMA(L(o8), w22, DWFMA(L(o7), w21, _mm512_mul_ps(L(o6), w20)));
        DWZ_OUT(out + e, _mm512_add_ps(_mm512_add_ps(s0, s1), s2));
    }
#undef L
}
#undef DWZ_OUT
#define HAVE_DWZ 1   /* (DW_W9Z kept for the flat kernels below) */
#else
#define HAVE_DWZ 0
#endif
#undef DW_4X8
#undef LX
#undef DWFMA
#undef DW_W9

/* Any number of taps: two partial sums (even and odd taps) per vector of 8; n a
 * multiple of 8. */
T_AVX2F static void q8dw_16xNf__avx2(const float *base, const int64_t *off, const float *w,
                                     int32_t taps, float b, int32_t n, const RqV *v,
                                     int fused, int32_t *out) {
    int32_t e, t;
    for (e = 0; e < n; e += 16) {
        int two = e + 16 <= n;   /* else the last 8 */
        __m256 a0 = _mm256_set1_ps(b), a1 = _mm256_setzero_ps();
        __m256 c0 = a0, c1 = a1;
        for (t = 0; t + 1 < taps; t += 2) {
            const float *s0 = base + off[t] + e, *s1 = base + off[t + 1] + e;
            __m256 u = _mm256_set1_ps(w[t]), z = _mm256_set1_ps(w[t + 1]);
            a0 = FMADD(_mm256_loadu_ps(s0), u, a0);
            a1 = FMADD(_mm256_loadu_ps(s1), z, a1);
            if (two) {
                c0 = FMADD(_mm256_loadu_ps(s0 + 8), u, c0);
                c1 = FMADD(_mm256_loadu_ps(s1 + 8), z, c1);
            }
        }
        if (t < taps) {
            const float *s0 = base + off[t] + e;
            __m256 u = _mm256_set1_ps(w[t]);
            a0 = FMADD(_mm256_loadu_ps(s0), u, a0);
            if (two)
                c0 = FMADD(_mm256_loadu_ps(s0 + 8), u, c0);
        }
        DWF_OUT(out + e, _mm256_add_ps(a0, a1));
        if (two)
            DWF_OUT(out + e + 8, _mm256_add_ps(c0, c1));
    }
}
#undef DWF_OUT

/* Requantized outputs q (int32 in [lo, hi]) stored as n out_type bytes at dst. */
T_AVX2 static void dw_pack_store(const OqciConv *p, const int32_t *q, int32_t n, void *dst) {
    int32_t e;
    for (e = 0; e < n; e += 32) {
        __m256i b = pack32(p->out_type == OQCI_U8, LDU256(q + e), LDU256(q + e + 8),
                           LDU256(q + e + 16), LDU256(q + e + 24));
        if (n - e >= 32) {
            STU256((uint8_t *)dst + e, b);
        } else {
            uint8_t t[32];
            STU256(t, b);
            memcpy((uint8_t *)dst + e, t, (size_t)(n - e));
        }
    }
}

T_AVX2 static void dw_store__avx2(const OqciConv *p, const int32_t *t, int32_t n, int32_t k,
                                  void *dst) {
    RqV v;
    int32_t e;
    rqv_make(p, k, 0, 0, &v);
    for (e = 0; e + 32 <= n; e += 32)
        STU256((uint8_t *)dst + e, rq32(p, t + e, &v));
    if (e < n) {
        uint8_t q[32];
        STU256(q, rq32(p, t + e, &v));
        memcpy((uint8_t *)dst + e, q, (size_t)(n - e));
    }
}



#if HAVE_DWZ
/* ---- conv_dw3flat__avx512vnni: 3x3 / stride 1 / pad 1 depthwise on small planes -------
 * On planes of at most DWFLAT_MAX outputs (all of MobileNet-v2's stride-1 ones: on 7x7
 * and 14x14 planes the row kernels' per-row set-up costs more than the sums, and on
 * larger ones this is still ~25% faster).  The output plane equals the
 * input plane here, so it is computed as one flat array: the input channel as floats
 * after W + 1 zeros (the row above the image and the left pad of its first row) and
 * before as many plus a vector's; output i sums tap (di, dj) from flat index
 * i + di W + dj, which is the right input or a zero of the padding rows, except where the
 * column wraps (dj = -1 at column 0, +1 at column W - 1): there the load is masked to 0
 * (per-vector masks built once per call).  Sums start from the bias and are exact
 * (conv_dwf's fused condition, checked for every channel by the caller), requantized by
 * rqf16 and narrowed with vpmovsdb / vpmovusdb, 16 outputs per store (the last one
 * masked). */
#define DWFLAT_MAX 16384   /* (the masks: 4 KB of stack) */

/* The flat kernels' condition on the requantization: float, and every channel's sums
 * exact from its bias (conv_dwf's fused condition for all of them). */
static int dw3_all_fused(const OqciConv *p) {
    int32_t k;
    if (p->rq.mode != OQCI_REQ_FLOAT)
        return 0;
    for (k = 0; k < p->out_c; k++)
        if (!dw_bias_fits(p->bias ? p->bias[k] : 0, 9))
            return 0;
    return 1;
}

static int dw3flat_ok(const OqciConv *p) {
    return p->k_h == 3 && p->k_w == 3 && p->s_h == 1 && p->s_w == 1 && p->d_h == 1 &&
           p->d_w == 1 && p->p_t == 1 && p->p_l == 1 && p->out_h == p->in_h &&
           p->out_w == p->in_w && (int64_t)p->in_h * p->in_w >= 16 &&
           (int64_t)p->in_h * p->in_w <= DWFLAT_MAX && dw3_all_fused(p);
}

/* Channel k's float requantization constants (rqfz_make's, from p). */
T_AVX512VNNI static inline __attribute__((always_inline)) void rqfz_channel(const OqciConv *p,
                                                                              int32_t k, RqFZ *z) {
    z->mult2 = _mm512_set1_ps(rq_mult2(p->rq.mult[p->rq.per_index ? k : 0]));
    z->lo2 = _mm512_set1_ps(2.0f * (float)p->lo);
    z->hi2 = _mm512_set1_ps(2.0f * (float)p->hi);
}

/* 16 int32 results inside the output type as its bytes (nothing saturates). */
T_AVX512VNNI static inline __attribute__((always_inline)) __m128i narrow16(__m512i q, int u8) {
    return u8 ? _mm512_cvtusepi32_epi8(q) : _mm512_cvtsepi32_epi8(q);
}

T_AVX512VNNI static void conv_dw3flat__avx512vnni(const OqciConv *p, const void *x, void *y,
                                                  void *scratch) {
    const int32_t w_ = p->in_w, hw = p->in_h * p->in_w, nv = (hw + 15) / 16;
    const int32_t pre = w_ + 1, kg = p->out_c / p->group;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    float *xp = (float *)(void *)align_up(scratch), *xc = xp + pre;
    __mmask16 ml[DWFLAT_MAX / 16], mr[DWFLAT_MAX / 16];
    int64_t n;
    int32_t v, l, g;
    for (v = 0; v < nv; v++) {
        ml[v] = mr[v] = 0;
        for (l = 0; l < 16; l++) {
            int32_t ow = (16 * v + l) % w_;
            ml[v] = (__mmask16)(ml[v] | (ow != 0) << l);
            mr[v] = (__mmask16)(mr[v] | (ow != w_ - 1) << l);
        }
    }
    memset(xp, 0, (size_t)pre * sizeof(float));
    memset(xc + hw, 0, (size_t)(pre + 32) * sizeof(float));
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * (int64_t)hw;
            int32_t kk, t;
            for (t = 0;; t += 16) {   /* the channel as floats (the last 16 overlapping) */
                __m128i b;
                if (t + 16 > hw)
                    t = hw - 16;
                b = _mm_loadu_si128((const __m128i *)(const void *)(xs + t));
                _mm512_storeu_ps(xc + t, _mm512_cvtepi32_ps(u8in ? _mm512_cvtepu8_epi32(b)
                                                                  : _mm512_cvtepi8_epi32(b)));
                if (t + 16 >= hw)
                    break;
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * (int64_t)hw;
                DW_W9Z(w);
                const __m512 bv = _mm512_set1_ps((float)(p->bias ? p->bias[k] : 0));
                RqFZ vz;
                rqfz_channel(p, k, &vz);
                for (v = 0; v < nv; v++) {
                    const float *c = xc + 16 * v;
                    __m512 s0 = bv, s1, s2;
                    __m512i q;
                    __m128i o;
                    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(ml[v], c - w_ - 1), w00, s0);
                    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(c - w_), w01, s0);
                    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mr[v], c - w_ + 1), w02, s0);
                    s1 = _mm512_mul_ps(_mm512_maskz_loadu_ps(ml[v], c - 1), w10);
                    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(c), w11, s1);
                    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mr[v], c + 1), w12, s1);
                    s2 = _mm512_mul_ps(_mm512_maskz_loadu_ps(ml[v], c + w_ - 1), w20);
                    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(c + w_), w21, s2);
                    s2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mr[v], c + w_ + 1), w22, s2);
                    q = rqf16(_mm512_add_ps(_mm512_add_ps(s0, s1), s2), &vz);
                    o = narrow16(q, u8out);
                    if (16 * v + 16 <= hw)
                        _mm_storeu_si128((__m128i *)(void *)(yk + 16 * v), o);
                    else
                        _mm512_mask_cvtepi32_storeu_epi8(yk + 16 * v,
                                                         (__mmask16)((1u << (hw - 16 * v)) - 1), q);
                }
            }
        }
}

/* ---- conv_dw3s2flat__avx512vnni: 3x3 / stride 2 / pad 1 depthwise -------------------
 * The row kernels spend most of a stride-2 depthwise conv on per-row set-up (14x14 ->
 * 7x7: ~500 cycles per channel for 49 outputs).  Here the input channel is split once
 * into four phase planes, P[a][b][r][c] = x[2 r + a - 1][2 c + b - 1] (0 outside the
 * input), r in [0, OH], c in [0, OW], rows S = OW + 1 apart; output (oh, ow) is then
 * sum over taps (i, j) of w[i][j] P[i & 1][j & 1][oh + i / 2][ow + j / 2], i.e. with
 * o = oh S + ow, flat offset (i / 2) S + j / 2 in plane (i & 1, j & 1): whole planes as
 * flat arrays with no masks, one junk output per row (ow = OW, never stored).  The
 * valid lanes of each vector are compressed (vpcompressd) and stored contiguously (16
 * bytes, the ones past the valid lanes rewritten by the next vector; the plane's end
 * through a copy).
 * The planes' padding is zeroed once per call; each channel writes only the input's
 * part (deinterleaved by vpermt2ps).  Same exactness and fused condition as the
 * stride-1 flat kernel. */
#define DWS2_MAX 16384   /* OH S outputs at most (the masks: 2 KB of stack) */
#define DWS2_MAXW 2048   /* input columns at most (chunk masks: 1 KB) */

static int dw3s2flat_ok(const OqciConv *p) {
    return p->k_h == 3 && p->k_w == 3 && p->s_h == 2 && p->s_w == 2 && p->d_h == 1 &&
           p->d_w == 1 && p->p_t == 1 && p->p_l == 1 && p->in_w <= DWS2_MAXW &&
           (int64_t)p->out_h * (p->out_w + 1) <= DWS2_MAX && dw3_all_fused(p);
}

/* A 32-input chunk of an input row: its load mask and the store masks of its evens
 * (ev[c + e] = x[t + 2 e]) and odds (od[c + e + 1] = x[t + 2 e + 1]) inside the
 * rows (c + e < S, c + e + 1 < S); the same for every row, made once per call. */
typedef struct Dws2Chunk {
    __mmask64 ld;
    __mmask16 ev, od;
} Dws2Chunk;

static void dw3s2_chunks(int32_t in_w, int32_t sr, Dws2Chunk *ch) {
    int32_t t;
    for (t = 0; t < in_w; t += 32) {
        int32_t n = in_w - t < 32 ? in_w - t : 32, c = t / 2;
        int32_t ne = (n + 1) / 2, no = n / 2;
        Dws2Chunk *k = &ch[t / 32];
        ne = ne > sr - c ? sr - c : ne;
        no = no > sr - c - 1 ? sr - c - 1 : no;
        k->ld = n >= 32 ? (__mmask64)0xFFFFFFFFu : ((__mmask64)1 << n) - 1;
        k->ev = (__mmask16)(ne > 0 ? (1u << ne) - 1 : 0);
        k->od = (__mmask16)(no > 0 ? (1u << no) - 1 : 0);
    }
}

/* Input row xr into phase rows ev (b = 1) and od (b = 0), chunk by chunk: two float
 * vectors of 16 inputs, deinterleaved by vpermt2ps. */
T_AVX512VNNI static inline __attribute__((always_inline)) void
dw3s2_row(const uint8_t *xr, int32_t in_w, const Dws2Chunk *ch, int u8, float *ev, float *od) {
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    int32_t t;
    for (t = 0; t < in_w; t += 32, ch++) {
        __m512i b = _mm512_maskz_loadu_epi8(ch->ld, xr + t);
        __m128i b0 = _mm512_castsi512_si128(b), b1 = _mm512_extracti32x4_epi32(b, 1);
        __m512 f0 = _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b0) : _mm512_cvtepi8_epi32(b0));
        __m512 f1 = _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b1) : _mm512_cvtepi8_epi32(b1));
        _mm512_mask_storeu_ps(ev + t / 2, ch->ev, _mm512_permutex2var_ps(f0, ie, f1));
        _mm512_mask_storeu_ps(od + t / 2 + 1, ch->od, _mm512_permutex2var_ps(f0, io, f1));
    }
}

T_AVX512VNNI static void conv_dw3s2flat__avx512vnni(const OqciConv *p, const void *x, void *y,
                                                    void *scratch) {
    const int32_t oh_n = p->out_h, ow_n = p->out_w, sr = ow_n + 1, kg = p->out_c / p->group;
    const int32_t no = oh_n * sr, nv = (no + 15) / 16;
    const int64_t pl = ((int64_t)oh_n + 1) * sr, plane_in = (int64_t)p->in_h * p->in_w;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const int64_t opix = (int64_t)oh_n * ow_n;
    float *ph = (float *)(void *)align_up(scratch);   /* P[a][b] at ph + (2 a + b) pl */
    __mmask16 mv[DWS2_MAX / 16];
    Dws2Chunk ch[DWS2_MAXW / 32];
    int64_t n;
    int32_t v, l, g, ih;
    for (v = 0; v < nv; v++) {
        mv[v] = 0;
        for (l = 0; l < 16; l++)
            if (16 * v + l < no && (16 * v + l) % sr < ow_n)
                mv[v] = (__mmask16)(mv[v] | 1u << l);
    }
    dw3s2_chunks(p->in_w, sr, ch);
    memset(ph, 0, (size_t)dw3s2_floats(p) * sizeof(float));   /* (dw_scratch has it) */
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * plane_in;
            int32_t kk;
            for (ih = 0; ih < p->in_h; ih++) {   /* input row ih = 2 r + a - 1 */
                int32_t a = (ih + 1) & 1, r = (ih + 1) >> 1;
                if (r > oh_n)
                    break;
                dw3s2_row(xs + (int64_t)ih * p->in_w, p->in_w, ch, u8in,
                          ph + (2 * a + 1) * pl + (int64_t)r * sr,
                          ph + (2 * a) * pl + (int64_t)r * sr);
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * opix;
                DW_W9Z(w);
                const __m512 bv = _mm512_set1_ps((float)(p->bias ? p->bias[k] : 0));
                /* tap (i, j) reads plane (i & 1, j & 1) at (i / 2) S + j / 2 */
                const float *p00 = ph, *p01 = ph + pl, *p10 = ph + 2 * pl, *p11 = ph + 3 * pl;
                int64_t at = 0;
                RqFZ vz;
                rqfz_channel(p, k, &vz);
                for (v = 0; v < nv; v++) {
                    const int32_t o = 16 * v;
                    __m512 s0, s1, s2;
                    __m512i q;
                    __m128i o8;
                    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(p00 + o), w00, bv);            /* 0,0 */
                    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(p01 + o), w01, s0);            /* 0,1 */
                    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(p00 + o + 1), w02, s0);        /* 0,2 */
                    s1 = _mm512_mul_ps(_mm512_loadu_ps(p10 + o), w10);                  /* 1,0 */
                    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(p11 + o), w11, s1);            /* 1,1 */
                    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(p10 + o + 1), w12, s1);        /* 1,2 */
                    s2 = _mm512_mul_ps(_mm512_loadu_ps(p00 + o + sr), w20);             /* 2,0 */
                    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(p01 + o + sr), w21, s2);       /* 2,1 */
                    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(p00 + o + sr + 1), w22, s2);   /* 2,2 */
                    q = rqf16(_mm512_add_ps(_mm512_add_ps(s0, s1), s2), &vz);
                    q = _mm512_maskz_compress_epi32(mv[v], q);
                    l = __builtin_popcount(mv[v]);
                    o8 = narrow16(q, u8out);
                    if (at + 16 <= opix) {   /* bytes past l: overwritten by the next vector */
                        _mm_storeu_si128((__m128i *)(void *)(yk + at), o8);
                    } else {
                        uint8_t tb[16];
                        _mm_storeu_si128((__m128i *)(void *)tb, o8);
                        memcpy(yk + at, tb, (size_t)l);
                    }
                    at += l;
                }
            }
        }
}
#undef DW_W9Z
#endif

/* One input channel per group (any multiplier), float planes: whole output rows into
 * buf, as many as it holds, then stored (rows wider than buf go in pieces).  z: the
 * AVX-512 row kernels for 3x3 (the CPU has them: the AVX-512 VNNI family was chosen). */
T_AVX2F static void conv_dwf__avx2(const OqciConv *p, const void *x, void *y, void *scratch,
                                   int z) {
    DwGeo d;
    float *plane = (float *)(void *)align_up(scratch), wf[DW_MAX_TAPS];
    int64_t off[DW_MAX_TAPS], n, plane_in = (int64_t)p->in_h * p->in_w;
    int64_t pix = (int64_t)p->out_h * p->out_w, bstride;
    int32_t kg = p->out_c / p->group, g, i, j, t;
    int32_t wr = (int32_t)round_up(p->out_w, 8);
    int32_t buf[DW_BUF + TILE_NR];   /* + TILE_NR: whole vectors past the last row */
    int32_t rows = wr <= DW_BUF ? (DW_BUF - wr) / p->out_w + 1 : 0;
    void (*rowk)(const float *, const int64_t *, const float *, int32_t, float, int32_t,
                 const RqV *, int, int32_t *);
    void (*fourk)(const float *, int64_t, const int64_t *, const float *, float, int32_t,
                  const RqV *, int, int32_t *, int32_t) = q8dw_4x8x9f__avx2;
    int four = p->k_h == 3 && p->k_w == 3 && p->s_h == 1 && p->d_h == 1;
    int64_t colo[3];
    DwfSpan span;
    const uint8_t *xend = (const uint8_t *)x + (int64_t)p->batch * p->in_c * plane_in;
    if (four && rows > 4)   /* whole blocks of the 4-row kernel (buf is not refilled less) */
        rows -= rows % 4;
    dw_geo(p, &d);
    dwf_span_make(p, &span);
    rowk = d.taps == 9 ? q8dw_16x9f__avx2 : q8dw_16xNf__avx2;
#if HAVE_DWZ
    if (z && d.taps == 9) {
        rowk = q8dw_16x9f__avx512vnni;
        fourk = q8dw_4x16x9f__avx512vnni;
    }
#else
    (void)z;
#endif
    for (j = 0; j < 3; j++)
        colo[j] = dw_tap_off(p, &d, 0, j);
    memset(plane, 0, (size_t)d.phases * (size_t)d.rows * (size_t)d.width * sizeof(float));
    bstride = (int64_t)p->s_h * d.width;
    for (i = 0; i < p->k_h; i++)
        for (j = 0; j < p->k_w; j++)
            off[i * p->k_w + j] = dw_tap_off(p, &d, i, j);
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            int32_t kk;
            dwf_fill(p, &d, &span, (const uint8_t *)x + (n * p->in_c + g) * plane_in, xend, plane);
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, ow;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * pix;
                int64_t bias = p->bias ? p->bias[k] : 0;
                RqV v;
                int fused;
                rqv_make(p, k, 0, 0, &v);
                fused = !v.fixed && dw_bias_fits(bias, d.taps);
                for (t = 0; t + 8 <= d.taps; t += 8)
                    _mm256_storeu_ps(wf + t, cvt8f(_mm_loadl_epi64((const __m128i *)(const void *)(w + t)), 0));
                for (; t < d.taps; t++)
                    wf[t] = (float)w[t];
                /* (4 to 8 wide: row r's 8-byte store ends inside rows r + 1 .. 3, or
                 * inside the next block's rows, never past the plane) */
                if (four && fused && p->out_h >= 4 && p->out_w >= 4 && p->out_w <= 8) {
                    q8dw_plane4x9f__avx2(p, plane, d.width, colo, wf, (float)bias, &v, yk);
                    continue;
                }
                if (rows) {
                    for (oh = 0; oh < p->out_h; oh += rows) {
                        int32_t nr = p->out_h - oh < rows ? p->out_h - oh : rows, r = 0;
                        /* rows are written in order: each row's sums past out_w are
                         * overwritten by the next row's (the 4-row kernel goes from the
                         * last columns to the first) */
                        if (four)
                            for (; r + 4 <= nr; r += 4)
                                fourk(plane + (oh + r) * bstride, d.width, colo, wf,
                                      fused ? (float)bias : 0.0f, p->out_w, &v, fused,
                                      buf + r * p->out_w, p->out_w);
                        for (; r < nr; r++)
                            rowk(plane + (oh + r) * bstride, off, wf, d.taps,
                                 fused ? (float)bias : 0.0f, wr, &v, fused, buf + r * p->out_w);
                        if (fused)
                            dw_pack_store(p, buf, nr * p->out_w, yk + (int64_t)oh * p->out_w);
                        else
                            dw_store__avx2(p, buf, nr * p->out_w, k, yk + (int64_t)oh * p->out_w);
                    }
                    continue;
                }
                for (oh = 0; oh < p->out_h; oh++)
                    for (ow = 0; ow < p->out_w; ow += DW_BUF) {
                        int32_t len = p->out_w - ow < DW_BUF ? p->out_w - ow : DW_BUF;
                        uint8_t *dst = yk + (int64_t)oh * p->out_w + ow;
                        rowk(plane + oh * bstride + ow, off, wf, d.taps,
                             fused ? (float)bias : 0.0f, (int32_t)round_up(len, 8), &v, fused,
                             buf);
                        if (fused)
                            dw_pack_store(p, buf, len, dst);
                        else
                            dw_store__avx2(p, buf, len, k, dst);
                    }
            }
        }
}

#endif /* !OQCI_NO_FLOAT */

#endif /* HAVE_AVX2 */

#if HAVE_AMX && !defined(OQCI_NO_FLOAT)
/* ---- conv_dw3q__avx512vbmi: 3x3 depthwise at stride 1 or 2 on bytes (AMX family) ----
 * Each input channel is copied once into a zero-padded byte plane (dw3q_geo; s8 inputs
 * as x + 128 with padding 128, and -128 sum w joins the bias: the sums are those of
 * u8 x s8 pairs, exact).  Output row oh, columns ow .. ow + 15: per kernel row i one
 * 64-byte load of plane row oh s + i at column ow s, vpermb (AVX-512 VBMI, which every
 * AMX CPU has) gathers lane l's quad (columns (ow + l) s + j, j = 0 .. 2, and a zero),
 * and vpdpbusd adds its dot product with (w[i][0], w[i][1], w[i][2], 0): 3 loads, 3
 * vpermb and 3 vpdpbusd per 16 outputs instead of the float planes' 9 loads and 9 FMAs,
 * on a plane a quarter of their size.  Two output rows share the vpermb of the rows
 * they both read at stride 1 (4 input rows for 2 output rows).  The sums start from
 * bias + correction; the fused float requantization (rq16, as the GEMM's) on int32 sums
 * below 2^24 (dw3_all_fused) gives oqci_requant's bits.  The plane's padding is written
 * once per call, each channel its interior rows. */

/* (Rows narrower than 12 outputs leave most of each 16-lane vector idle: the flat float
 * kernels, which run a small plane as one array, are faster there.) */
static int dw3q_ok(const OqciConv *p) {
    int32_t bs, rows;
    return p->out_w >= 12 && dw3q_geo(p, &bs, &rows) > 0 && dw3_all_fused(p);
}

T_VBMI static void conv_dw3q__avx512vbmi(const OqciConv *p, const void *x, void *y,
                                       void *scratch) {
    int32_t bs, rows, r, v, s = p->s_w, kg = p->out_c / p->group;
    const int64_t hw = (int64_t)p->in_h * p->in_w, opix = (int64_t)p->out_h * p->out_w;
    const int u8in = p->in_type == OQCI_U8, u8out = p->out_type == OQCI_U8;
    const int32_t nvec = (p->out_w + 15) / 16, tail = p->out_w - 16 * (nvec - 1);
    const __mmask16 tmask = (__mmask16)((1u << tail) - 1);
    const __mmask64 qm = (__mmask64)0x7777777777777777ull, inm = ((__mmask64)1 << (p->in_w % 64)) - 1;
    const __m512i flip = _mm512_set1_epi8(u8in ? 0 : (char)0x80);
    uint8_t *b = align_up(scratch);
    uint8_t idxb[64];
    __m512i idx;
    int64_t n;
    int32_t g;
    dw3q_geo(p, &bs, &rows);
    for (v = 0; v < 64; v++)   /* lane l = v / 4, byte j = v % 4: column l s + j */
        idxb[v] = (uint8_t)(v % 4 < 3 ? (v / 4) * s + v % 4 : 0);
    idx = _mm512_loadu_si512((const void *)idxb);
    memset(b, u8in ? 0 : 0x80, (size_t)bs * (size_t)rows);   /* the padding, once */
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xs = (const uint8_t *)x + (n * p->in_c + g) * hw;
            int32_t kk;
            for (r = 0; r < p->in_h; r++) {   /* the interior rows (x ^ 0x80 for s8) */
                const uint8_t *src = xs + (int64_t)r * p->in_w;
                uint8_t *dst = b + (int64_t)(r + p->p_t) * bs + p->p_l;
                int32_t c = 0;
                for (; c + 64 <= p->in_w; c += 64)
                    _mm512_storeu_si512((void *)(dst + c),
                                        _mm512_xor_si512(_mm512_loadu_si512((const void *)(src + c)), flip));
                if (c < p->in_w)
                    _mm512_mask_storeu_epi8(dst + c, inm,
                                            _mm512_xor_si512(_mm512_maskz_loadu_epi8(inm, src + c), flip));
            }
            for (kk = 0; kk < kg; kk++) {
                int32_t k = g * kg + kk, oh, i;
                const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
                uint8_t *yk = (uint8_t *)y + (n * p->out_ctotal + p->out_coff + k) * opix;
                __m512i wq[3], addv;
                RqFZ z;
                int64_t add = p->bias ? p->bias[k] : 0, sw = 0;
                for (i = 0; i < 3; i++) {
                    wq[i] = _mm512_set1_epi32((int32_t)((uint32_t)(uint8_t)w[3 * i] |
                                                        (uint32_t)(uint8_t)w[3 * i + 1] << 8 |
                                                        (uint32_t)(uint8_t)w[3 * i + 2] << 16));
                    sw += w[3 * i] + w[3 * i + 1] + w[3 * i + 2];
                }
                addv = _mm512_set1_epi32((int32_t)(add - (u8in ? 0 : 128 * sw)));
                rqfz_channel(p, k, &z);
#define DWQ_ROW(rp, c) _mm512_maskz_permutexvar_epi8(qm, idx, _mm512_loadu_si512((const void *)((rp) + (c))))
#define DWQ_STORE(dst, acc, last)                                                       \
    {                                                                                   \
        __m512i q_ = rqf16(_mm512_cvtepi32_ps(acc), &z);                                \
        if (last)                                                                       \
            _mm512_mask_storeu_epi8(dst, (__mmask64)tmask, _mm512_castsi128_si512(narrow16(q_, u8out))); \
        else                                                                            \
            _mm_storeu_si128((__m128i *)(void *)(dst), narrow16(q_, u8out));            \
    }
                for (oh = 0; oh < p->out_h; oh++) {
                    const uint8_t *r0 = b + (int64_t)oh * s * bs;
                    uint8_t *yo = yk + (int64_t)oh * p->out_w;
                    if (s == 1 && oh + 1 < p->out_h) {   /* two output rows, four input rows */
                        for (v = 0; v < nvec; v++) {
                            int32_t c = 16 * v;
                            __m512i q0 = DWQ_ROW(r0, c), q1 = DWQ_ROW(r0 + bs, c);
                            __m512i q2 = DWQ_ROW(r0 + 2 * bs, c), q3 = DWQ_ROW(r0 + 3 * bs, c);
                            __m512i a = _mm512_dpbusd_epi32(addv, q0, wq[0]);
                            __m512i e = _mm512_dpbusd_epi32(addv, q1, wq[0]);
                            a = _mm512_dpbusd_epi32(a, q1, wq[1]);
                            e = _mm512_dpbusd_epi32(e, q2, wq[1]);
                            a = _mm512_dpbusd_epi32(a, q2, wq[2]);
                            e = _mm512_dpbusd_epi32(e, q3, wq[2]);
                            DWQ_STORE(yo + c, a, v == nvec - 1)
                            DWQ_STORE(yo + p->out_w + c, e, v == nvec - 1)
                        }
                        oh++;
                        continue;
                    }
                    for (v = 0; v < nvec; v++) {
                        int32_t c = 16 * v * s;
                        __m512i a = _mm512_dpbusd_epi32(addv, DWQ_ROW(r0, c), wq[0]);
                        a = _mm512_dpbusd_epi32(a, DWQ_ROW(r0 + bs, c), wq[1]);
                        a = _mm512_dpbusd_epi32(a, DWQ_ROW(r0 + 2 * bs, c), wq[2]);
                        DWQ_STORE(yo + 16 * v, a, v == nvec - 1)
                    }
                }
#undef DWQ_STORE
#undef DWQ_ROW
            }
        }
}
#endif

#if HAVE_AVX512VNNI && OQCI_EMU_VNNI
/* ---- q8conv_8x32c4__emu: the AVX-512 VNNI kernel's sums in plain C (tests only) ---- */

static void q8conv_8x32c4__emu(int32_t nq, const void *panel, const int8_t *const *w,
                               int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const uint8_t *pp = (const uint8_t *)panel;
    int32_t r, px, q, e;
    for (r = 0; r < nk; r++)
        for (px = 0; px < 32; px++) {
            int32_t sum = 0;
            for (q = 0; q < nq; q++)
                for (e = 0; e < 4; e++)
                    sum += (int32_t)pp[((size_t)q * 32 + px) * 4 + e] * w[r][4 * q + e];
            t[r * TILE_NR + px] = acc ? t[r * TILE_NR + px] + sum : sum;
        }
}

static const Family family_avx512vnni = {OQCI_ISA_AVX512VNNI, 8, 32, 1, KBLOCK_Z / 4, OQCI_S8,
                                         q8conv_8x32c4__emu,
                                         {tr4_u8_s8__avx2, tr4_u8_u8__avx2}, gather__avx2,
                                         store_tile__avx2, NULL, {NULL, NULL}, NULL, NULL, NULL};
#elif HAVE_AVX512VNNI
/* ---- q8conv_8x32c4__avx512vnni: 8 channels x 32 pixels, u8 panel -------------------
 * Two zmm of 16 pixels per channel; a panel whose pixels fill only the first 16 (the
 * last panel of a 14x14 plane holds 4 of 32) runs an 8x16 body.  With float
 * requantization in one K block, the epilogue runs in registers 16 lanes at a time
 * (rq16: rq8's float steps) and vpmovsdb / vpmovusdb narrow the results (already inside
 * the output type: nothing saturates). */
#define ZROWS(F, V) F(0, V) F(1, V) F(2, V) F(3, V) F(4, V) F(5, V) F(6, V) F(7, V)
#define ZV1(F, r) F(r, 0)
#define ZV2(F, r) F(r, 0) F(r, 1)
#define ZDECL(r, v) __m512i a##r##v = _mm512_setzero_si512();
#define ZDECLR(r, V) V(ZDECL, r)
#define ZLOAD(r, v) __m512i p##v = _mm512_loadu_si512((const void *)(pp + 64 * v));
#define ZDOT(r, v) a##r##v = _mm512_dpbusd_epi32(a##r##v, p##v, wb);
#define ZSTEP(r, V) { __m512i wb = _mm512_set1_epi32(load32(w[r] + 4 * q)); V(ZDOT, r) }
#define ZSUMS(V)                                                                        \
    const uint8_t *pp = (const uint8_t *)panel;                                         \
    int32_t q;                                                                          \
    ZROWS(ZDECLR, V)                                                                    \
    for (q = 0; q < nq; q++, pp += 128) {                                               \
        V(ZLOAD, 0)                                                                     \
        ZROWS(ZSTEP, V)                                                                 \
    }
#define ZST(r, v)                                                                       \
    {                                                                                   \
        void *d_ = t + r * TILE_NR + 16 * v;                                            \
        _mm512_storeu_si512(d_, acc ? _mm512_add_epi32(_mm512_loadu_si512(d_), a##r##v)  \
                                    : a##r##v);                                         \
    }
#define ZSTR(r, V) if (r < nk) { V(ZST, r) }
#define ZBODY(NAME, V)                                                                  \
    T_AVX512VNNI static void NAME(int32_t nq, const void *panel, const int8_t *const *w, \
                                  int32_t *t, int acc, int32_t nk) {                    \
        ZSUMS(V)                                                                        \
        ZROWS(ZSTR, V)                                                                  \
    }
ZBODY(q8conv_8x16c4__avx512vnni, ZV1)
ZBODY(q8conv_8x32c4_full__avx512vnni, ZV2)
#undef ZBODY

T_AVX512VNNI static void q8conv_8x32c4__avx512vnni(int32_t nq, const void *panel,
                                                   const int8_t *const *w, int32_t *t, int acc,
                                                   int32_t np, int32_t nk) {
    if (np <= 16)
        q8conv_8x16c4__avx512vnni(nq, panel, w, t, acc, nk);
    else
        q8conv_8x32c4_full__avx512vnni(nq, panel, w, t, acc, nk);
}

#ifndef OQCI_NO_FLOAT
/* rq8's float steps (rqf16, the depthwise kernels' on float sums) on 16 sums that hold
 * the correction and bias already (no bias saturation: the fused condition; the
 * accumulators start from pre[r].add, which is the same sum mod 2^32, as vpdpbusd
 * wraps), narrowed to out_type bytes. */
T_AVX512VNNI static inline __attribute__((always_inline)) __m128i rq16(__m512i acc,
                                                                        const RqFZ *z, int u8) {
    return narrow16(rqf16(_mm512_cvtepi32_ps(acc), z), u8);
}

/* Bodies per pixel count (V) and output type (U8); the sums start from the correction
 * and bias (rows past nk repeat row 0's), plus, for the last of several K blocks, the
 * sums so far in t (else NULL). */
#undef ZDECL
#define ZADD(r) _mm512_set1_epi32(pre[r < nk ? r : 0].add)
#define ZT(r, v) _mm512_loadu_si512((const void *)(t + r * TILE_NR + 16 * v))
#define ZDECL(r, v) __m512i a##r##v = t ? _mm512_add_epi32(ZT(r, v), ZADD(r)) : ZADD(r);
#define ZOUT(r, v) STU128(out + r * ostride + 16 * v, rq16(a##r##v, &z_, U8_));
#define ZRQ(r, V)                                                                       \
    if (r < nk) {                                                                       \
        const RqFZ z_ = {_mm512_set1_ps(pre[r].m2), lo2, hi2};                          \
        V(ZOUT, r)                                                                      \
    }
#define ZBODY(NAME, V, U8)                                                              \
    T_AVX512VNNI static void NAME(int32_t nq, const void *panel, const int8_t *const *w, \
                                  const int32_t *t, int32_t nk, const RqPre *pre,       \
                                  uint8_t *out, int64_t ostride, __m512 lo2, __m512 hi2) { \
        enum { U8_ = U8 };                                                              \
        ZSUMS(V)                                                                        \
        ZROWS(ZRQ, V)                                                                   \
    }
ZBODY(q8conv_8x16c4_rq_s8__avx512vnni, ZV1, 0)
ZBODY(q8conv_8x16c4_rq_u8__avx512vnni, ZV1, 1)
ZBODY(q8conv_8x32c4_rq_s8__avx512vnni, ZV2, 0)
ZBODY(q8conv_8x32c4_rq_u8__avx512vnni, ZV2, 1)
#undef ZBODY
#undef ZDECL
#define ZDECL(r, v) __m512i a##r##v = _mm512_setzero_si512();
#undef ZRQ
#undef ZOUT
#undef ZADD
#undef ZT

T_AVX512VNNI static void q8conv_8x32c4_rqt__avx512vnni(int32_t nq, const void *panel,
                                                       const int8_t *const *w, const int32_t *t,
                                                       const OqciConv *p, int32_t nk,
                                                       const RqPre *pre, uint8_t *out,
                                                       int64_t ostride, int32_t np) {
    const __m512 lo2 = _mm512_set1_ps(2.0f * (float)p->lo);
    const __m512 hi2 = _mm512_set1_ps(2.0f * (float)p->hi);
    int u8 = p->out_type == OQCI_U8;
    if (np <= 16 && u8)
        q8conv_8x16c4_rq_u8__avx512vnni(nq, panel, w, t, nk, pre, out, ostride, lo2, hi2);
    else if (np <= 16)
        q8conv_8x16c4_rq_s8__avx512vnni(nq, panel, w, t, nk, pre, out, ostride, lo2, hi2);
    else if (u8)
        q8conv_8x32c4_rq_u8__avx512vnni(nq, panel, w, t, nk, pre, out, ostride, lo2, hi2);
    else
        q8conv_8x32c4_rq_s8__avx512vnni(nq, panel, w, t, nk, pre, out, ostride, lo2, hi2);
}

T_AVX512VNNI static void q8conv_8x32c4_rq__avx512vnni(int32_t nq, const void *panel,
                                                      const int8_t *const *w, const OqciConv *p,
                                                      int32_t nk, const RqPre *pre, uint8_t *out,
                                                      int64_t ostride, int32_t np) {
    q8conv_8x32c4_rqt__avx512vnni(nq, panel, w, NULL, p, nk, pre, out, ostride, np);
}
#define UKR_RQ_AVX512VNNI q8conv_8x32c4_rq__avx512vnni
#define UKR_RQ_ACC_AVX512VNNI q8conv_8x32c4_rqt__avx512vnni
#else
#define UKR_RQ_AVX512VNNI NULL
#define UKR_RQ_ACC_AVX512VNNI NULL
#endif
#undef ZSTR
#undef ZST
#undef ZSUMS
#undef ZSTEP
#undef ZDOT
#undef ZLOAD
#undef ZDECLR
#undef ZDECL
#undef ZV2
#undef ZV1
#undef ZROWS

/* Four rows of len <= 32 bytes as len panel pixels of 4 bytes, the top bit flipped
 * (flip: s8 inputs + 128) or not: masked loads (nothing read past len), byte then word
 * interleaves inside 128-bit lanes (lane 0: pixels 0-15, lane 1: 16-31), the lanes put
 * in pixel order, masked stores of exactly 4 len bytes. */
T_AVX512VNNI static inline __attribute__((always_inline)) void
tr4_v32z(__m512i a, __m512i b, __m512i c, __m512i e, int32_t len, uint8_t *d, int flip) {
    __m512i ab0 = _mm512_unpacklo_epi8(a, b), ab1 = _mm512_unpackhi_epi8(a, b);
    __m512i ce0 = _mm512_unpacklo_epi8(c, e), ce1 = _mm512_unpackhi_epi8(c, e);
    /* q0: pixels 0-3 | 16-19, q1: 4-7 | 20-23, q2: 8-11 | 24-27, q3: 12-15 | 28-31 */
    __m512i q0 = _mm512_unpacklo_epi16(ab0, ce0), q1 = _mm512_unpackhi_epi16(ab0, ce0);
    __m512i q2 = _mm512_unpacklo_epi16(ab1, ce1), q3 = _mm512_unpackhi_epi16(ab1, ce1);
    __m512i t01 = _mm512_shuffle_i64x2(q0, q1, 0x44), t23 = _mm512_shuffle_i64x2(q2, q3, 0x44);
    __m512i lo = _mm512_shuffle_i64x2(t01, t23, 0x88), hi = _mm512_shuffle_i64x2(t01, t23, 0xDD);
    if (flip) {
        lo = _mm512_xor_si512(lo, _mm512_set1_epi8((char)0x80));
        hi = _mm512_xor_si512(hi, _mm512_set1_epi8((char)0x80));
    }
    if (len >= 32) {
        _mm512_storeu_si512((void *)d, lo);
        _mm512_storeu_si512((void *)(d + 64), hi);
    } else if (len >= 16) {
        _mm512_storeu_si512((void *)d, lo);
        _mm512_mask_storeu_epi8(d + 64, ((__mmask64)1 << (4 * (len - 16))) - 1, hi);
    } else {
        _mm512_mask_storeu_epi8(d, ((__mmask64)1 << (4 * len)) - 1, lo);
    }
}

T_AVX512VNNI static inline __attribute__((always_inline)) void
tr4_b32z(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
         int32_t len, uint8_t *d, int flip) {
    __mmask64 m = len >= 32 ? (__mmask64)0xFFFFFFFFu : ((__mmask64)1 << len) - 1;
    tr4_v32z(_mm512_maskz_loadu_epi8(m, r0), _mm512_maskz_loadu_epi8(m, r1),
             _mm512_maskz_loadu_epi8(m, r2), _mm512_maskz_loadu_epi8(m, r3), len, d, flip);
}

T_AVX512VNNI static inline __attribute__((always_inline)) void
tr4_u8_s8__avx512vnni(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                      const uint8_t *r3, int32_t len, void *dst) {
    tr4_b32z(r0, r1, r2, r3, len, (uint8_t *)dst, 1);
}
T_AVX512VNNI static inline __attribute__((always_inline)) void
tr4_u8_u8__avx512vnni(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                      const uint8_t *r3, int32_t len, void *dst) {
    tr4_b32z(r0, r1, r2, r3, len, (uint8_t *)dst, 0);
}

T_AVX512VNNI static void pack_band_s8__avx512vnni(const OqciConv *p, const Band *b, int64_t r0,
                                                  const Seg *segs, int nseg, int32_t q0,
                                                  int32_t nq, uint8_t *panel) {
    pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, 32, 1, tr4_u8_s8__avx512vnni);
}
T_AVX512VNNI static void pack_band_u8__avx512vnni(const OqciConv *p, const Band *b, int64_t r0,
                                                  const Seg *segs, int nseg, int32_t q0,
                                                  int32_t nq, uint8_t *panel) {
    pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, 32, 1, tr4_u8_u8__avx512vnni);
}

/* store_runs with one masked copy per run (runs of at most TILE_NR < 64 bytes). */
T_AVX512VNNI static void store_runs__avx512vnni(const OqciConv *p, const uint8_t *q, int32_t k,
                                                const Seg *segs, int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        __mmask64 m = ((__mmask64)1 << s->len) - 1;
        _mm512_mask_storeu_epi8((uint8_t *)y + (s->n * p->out_ctotal + p->out_coff + k) * pix +
                                    s->pix0,
                                m, _mm512_maskz_loadu_epi8(m, q + s->off));
    }
}

static const Family family_avx512vnni = {OQCI_ISA_AVX512VNNI, 8, 32, 1, KBLOCK_Z / 4, OQCI_S8,
                                         q8conv_8x32c4__avx512vnni,
                                         {tr4_u8_s8__avx512vnni, tr4_u8_u8__avx512vnni},
                                         gather__avx2, store_tile__avx2, UKR_RQ_AVX512VNNI,
                                         {pack_band_s8__avx512vnni, pack_band_u8__avx512vnni},
                                         UKR_RQ_ACC_AVX512VNNI, NULL, store_runs__avx512vnni};
#endif

#if HAVE_AMX
/* ---- AMX-INT8 tiles: 32 channels x 32 pixels per step (conv_amx) --------------------
 * The tile unit of Sapphire Rapids and later: tdpbssd / tdpbsud add to each int32 of a
 * 16 x 16 tile C the DP4A sums of a row of tile A (16 quads of one output channel's s8
 * weights: a weight row as oqci.h lays it out, tiles loaded with stride kpad) and a
 * column of tile B (16 quads of one pixel: 64 bytes of the byte panel, whose rows are
 * 128 bytes, so pixels 0-15 and 16-31 are two B tiles), over the 16 quads: the DP4A
 * primitive, 1024 of them per instruction.  Signed weights against s8 inputs (tdpbssd)
 * or u8 inputs (tdpbsud): no offset, no correction (Family.flip -1).  Tiles 0-3 hold the
 * sums of two 16-channel units x two pixel halves, 4-5 the units' weights, 6-7 the
 * panel.  The whole reduction is one K block (its panel: round_up(kpad, 64) x 32 bytes,
 * in L2 for the deepest convs); the last, partial chunk of 16 quads of each weight row
 * is read from a copy zero-padded to 64 bytes, made once per call (amx_work's region),
 * so no tile load reads past the weights and the panel's bytes past its nq quads (left
 * as they are in the scratch, inside the panel's round_up(kpad, 64) x 32 bytes) only
 * ever meet zero weights.  A group's channels go in 16-row units, the last unit ending
 * at the group's last channel (overlapping the unit before it: those rows are computed
 * twice and stored once), so every tile row is a real channel: groups of at least
 * AMX_MIN_KG channels.  The sums leave the tiles through AMX_SUMS_BYTES of scratch for
 * the AVX-512 family's epilogue (fused_rq with no quads: the fused float
 * requantization) or its store.  Exact: the int32 sums of at
 * most OQCI_KCHUNK products (amx_fits). */

/* ldtilecfg's 64 bytes: palette 1, then per tile its bytes per row and rows: every tile
 * 16 rows of 64 bytes. */
typedef struct AmxCfg {
    unsigned char b[64];
} AmxCfg;

T_AMX static void amx_begin(void) {
    AmxCfg c;
    int i;
    memset(&c, 0, sizeof c);
    c.b[0] = 1;
    for (i = 0; i < 8; i++) {
        c.b[16 + 2 * i] = 64;   /* (a little-endian uint16) */
        c.b[48 + i] = 16;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
}

T_AMX static void amx_end(void) {
    __asm__ volatile("tilerelease" : : : "memory");
}

/* Asks Linux for the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA)): 0 once granted to the process (a later request returns at once),
 * an error where the CPU or the kernel has no AMX.  A raw system call: no header, no
 * libc function beyond C99's. */
static int amx_permit(void) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    return r == 0;
}

/* One chunk of 16 quads: A tiles from a0 (a1), stride lda; B from b; DP: the signedness. */
#define AMX_STEP(DP, NA, NB, A0, A1, LDA, B)                                             \
    {                                                                                   \
        _tile_loadd(4, A0, LDA);                                                        \
        if (NA > 1)                                                                     \
            _tile_loadd(5, A1, LDA);                                                    \
        _tile_loadd(6, B, 128);                                                         \
        if (NB > 1)                                                                     \
            _tile_loadd(7, (B) + 64, 128);                                              \
        DP(0, 4, 6);                                                                    \
        if (NB > 1)                                                                     \
            DP(1, 4, 7);                                                                \
        if (NA > 1)                                                                     \
            DP(2, 5, 6);                                                                \
        if (NA > 1 && NB > 1)                                                           \
            DP(3, 5, 7);                                                                \
    }
/* NA 16-channel units (weights a0, a1 at the first quad; the last chunk's at t0, t1,
 * stride 64) x NB 16-pixel halves of the panel b: nfull whole chunks of 16 quads and
 * (tail) one more, into c (rows of TILE_NR int32: unit 0's channels in rows 0-15, unit
 * 1's in 16-31; pixel half h at column 16 h).  Not inlined: the tile loads and stores
 * are asm statements that do not tell the compiler which memory they touch, so the
 * panel is written and the sums read across a call. */
#define AMX_KERNEL(NAME, DP, NA, NB)                                                    \
    T_AMX __attribute__((noinline)) static void NAME(                                   \
        int32_t nfull, int tail, const int8_t *a0, const int8_t *a1, int64_t lda,       \
        const int8_t *t0, const int8_t *t1, const uint8_t *b, int32_t *c) {             \
        int32_t q;                                                                      \
        _tile_zero(0);                                                                  \
        if (NB > 1)                                                                     \
            _tile_zero(1);                                                              \
        if (NA > 1)                                                                     \
            _tile_zero(2);                                                              \
        if (NA > 1 && NB > 1)                                                           \
            _tile_zero(3);                                                              \
        for (q = 0; q < nfull; q++, b += 2048)                                          \
            AMX_STEP(DP, NA, NB, a0 + 64 * q, a1 + 64 * q, lda, b)                      \
        if (tail)                                                                       \
            AMX_STEP(DP, NA, NB, t0, t1, 64, b)                                         \
        _tile_stored(0, c, 4 * TILE_NR);                                                \
        if (NB > 1)                                                                     \
            _tile_stored(1, c + 16, 4 * TILE_NR);                                       \
        if (NA > 1)                                                                     \
            _tile_stored(2, c + 16 * TILE_NR, 4 * TILE_NR);                             \
        if (NA > 1 && NB > 1)                                                           \
            _tile_stored(3, c + 16 * TILE_NR + 16, 4 * TILE_NR);                        \
        __asm__ volatile("" : : : "memory");                                            \
    }
#define AMX_SS(c, a, b) _tile_dpbssd(c, a, b)
#define AMX_SU(c, a, b) _tile_dpbsud(c, a, b)
AMX_KERNEL(q8conv_16x16c64_ss__amx, AMX_SS, 1, 1)
AMX_KERNEL(q8conv_16x32c64_ss__amx, AMX_SS, 1, 2)
AMX_KERNEL(q8conv_32x16c64_ss__amx, AMX_SS, 2, 1)
AMX_KERNEL(q8conv_32x32c64_ss__amx, AMX_SS, 2, 2)
AMX_KERNEL(q8conv_16x16c64_su__amx, AMX_SU, 1, 1)
AMX_KERNEL(q8conv_16x32c64_su__amx, AMX_SU, 1, 2)
AMX_KERNEL(q8conv_32x16c64_su__amx, AMX_SU, 2, 1)
AMX_KERNEL(q8conv_32x32c64_su__amx, AMX_SU, 2, 2)
#undef AMX_KERNEL
#undef AMX_STEP

/* Where the weight tails start in amx_work's region (see amx_work_bytes). */
static size_t amx_tail_off(const OqciConv *p) {
    return AMX_PANELS_OFF + (size_t)(amx_batch(p) - 1) * amx_panel_bytes(p);
}

typedef void (*AmxKernel)(int32_t nfull, int tail, const int8_t *a0, const int8_t *a1,
                          int64_t lda, const int8_t *t0, const int8_t *t1, const uint8_t *b,
                          int32_t *c);
/* [u8 inputs][units - 1][pixel halves - 1] */
static const AmxKernel amx_kernels[2][2][2] = {
    {{q8conv_16x16c64_ss__amx, q8conv_16x32c64_ss__amx},
     {q8conv_32x16c64_ss__amx, q8conv_32x32c64_ss__amx}},
    {{q8conv_16x16c64_su__amx, q8conv_16x32c64_su__amx},
     {q8conv_32x16c64_su__amx, q8conv_32x32c64_su__amx}}};

/* Family.tiles of family_amx: per pair of 16-channel units, the tile work of each panel
 * of the batch, each panel's epilogue running after the next panel's tile work was
 * issued (so the tile unit works while the core requantizes; the sums alternate between
 * AMX_SUMS_SLOTS slots of AMX_SUMS_BYTES at work). */
T_AMX static void tiles__amx(const OqciConv *p, const Family *f, const Geo *ge,
                             uint8_t *const *panel, const int64_t *P0, const int32_t *np,
                             int nb, int32_t nq, int32_t g, const RqPre *pre, uint8_t *work,
                             void *y) {
    int32_t kg = p->out_c / p->group, nu = (kg + 15) / 16, j;
    const int8_t *wtail = (const int8_t *)(work + amx_tail_off(p));
    int32_t nsteps = (nu + 1) / 2 * nb, q;
    Seg segs[AMX_BATCH_MAX][TILE_NR];   /* (each panel's runs, for every unit pair) */
    int nseg[AMX_BATCH_MAX], i0;
    for (i0 = 0; i0 < nb; i0++)
        nseg[i0] = make_segs(ge, P0[i0], np[i0], segs[i0]);
    for (q = 0; q <= nsteps; q++) {   /* step q: tiles of item q, epilogue of item q - 1 */
        int32_t e, u, i, na, s[2];
        for (e = 0; e < 2; e++) {
            if (e == 0 ? q == nsteps : q == 0)
                continue;
            u = 2 * ((q - e) / nb);   /* item q - e: unit pair u, panel i */
            i = (q - e) % nb;
            na = u + 1 < nu ? 2 : 1;
            for (j = 0; j < 2; j++) {   /* the units' first channels (the last one shifted) */
                int32_t c0 = 16 * (u + (j < na ? j : 0));
                s[j] = c0 < kg - 16 ? c0 : kg - 16;
            }
            if (e == 0) {
                amx_kernels[p->in_type == OQCI_U8][na - 1][np[i] > 16](
                    nq / 16, nq % 16 != 0, p->w + (size_t)(g * kg + s[0]) * (size_t)p->kpad,
                    p->w + (size_t)(g * kg + s[1]) * (size_t)p->kpad, p->kpad,
                    wtail + (size_t)(g * kg + s[0]) * 64, wtail + (size_t)(g * kg + s[1]) * 64,
                    panel[i],
                    (int32_t *)(void *)(work + (size_t)(q % AMX_SUMS_SLOTS) * AMX_SUMS_BYTES));
            } else {
                const int32_t *c = (const int32_t *)(const void *)(
                    work + (size_t)((q - 1) % AMX_SUMS_SLOTS) * AMX_SUMS_BYTES);
                for (j = 0; j < na; j++) {
                    /* unit j's new channels c0 .. c0 + n - 1, at rows r0 .. of c */
                    int32_t c0 = 16 * (u + j), n = kg - c0 < 16 ? kg - c0 : 16;
                    const int32_t *t = c + (size_t)(16 * j + c0 - s[j]) * TILE_NR;
                    int32_t r;
                    if (!pre) {
                        f->store(p, t, TILE_NR, g * kg + c0, n, NULL, 0, segs[i], nseg[i], y);
                        continue;
                    }
                    for (r = 0; r < n; r += TILE_MR)   /* (no quads: the sums are all in t) */
                        fused_rq(p, f, 0, panel[i], NULL, t + (size_t)r * TILE_NR,
                                 g * kg + c0 + r, n - r < TILE_MR ? n - r : TILE_MR, pre,
                                 segs[i], nseg[i], np[i], y);
                }
            }
        }
    }
}

/* gather for the AMX family: runs of stride 1 or 2 up to 64 bytes long with one masked
 * load (2 n - 1 bytes at stride 2: nothing past the run is read), for stride 2 a vpermb
 * of the even bytes, and one masked store; longer or other runs as gather__avx2. */
T_VBMI static void gather__avx512vbmi(const uint8_t *src, int64_t sstep, int32_t stride,
                                      int32_t n, uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r;
    if (stride <= 2 && n <= 64 / stride && n > 0) {
        const __m512i even = _mm512_set_epi8(
            126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102, 100, 98, 96, 94,
            92, 90, 88, 86, 84, 82, 80, 78, 76, 74, 72, 70, 68, 66, 64, 62, 60, 58, 56, 54, 52,
            50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10,
            8, 6, 4, 2, 0);
        __mmask64 mo = n == 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
        __mmask64 mi = stride == 1 ? mo : ((__mmask64)1 << (2 * n - 1)) - 1;
        for (r = 0; r < rows; r++, src += sstep, dst += dstep) {
            __m512i v = _mm512_maskz_loadu_epi8(mi, src);
            if (stride == 2)
                v = _mm512_permutexvar_epi8(even, v);
            _mm512_mask_storeu_epi8(dst, mo, v);
        }
        return;
    }
    gather__avx2(src, sstep, stride, n, dst, dstep, rows);
}

/* Family.pack_s2 for AMX (u8 panels as they are): per run and quad, four masked loads
 * of the 2 len - 1 bytes the run spans in its channels' rows (none past the run; channels
 * past kdim load nothing: zeros), vpermb of the even bytes, then tr4_v32z. */
T_VBMI static void pack_s2__amx(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                                const Seg *segs, int nseg, int32_t q0, int32_t nq,
                                uint8_t *panel) {
    const __m512i even = _mm512_set_epi8(
        126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102, 100, 98, 96, 94, 92,
        90, 88, 86, 84, 82, 80, 78, 76, 74, 72, 70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50,
        48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6,
        4, 2, 0);
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *base = x + (s->n * p->in_c + (int64_t)g * ge->cg) * ge->plane +
                              (int64_t)s->oh * p->s_h * p->in_w + 2 * (int64_t)s->ow;
        __mmask64 m = ((__mmask64)1 << (2 * s->len - 1)) - 1;   /* (len <= 32) */
        uint8_t *d = panel + (size_t)s->off * 4;
        int32_t q, e;
        for (q = q0; q < q0 + nq; q++, d += 128) {
            __m512i v[4];
            for (e = 0; e < 4; e++) {
                int32_t k = 4 * q + e;
                v[e] = _mm512_permutexvar_epi8(
                    even, _mm512_maskz_loadu_epi8(k < p->kdim ? m : 0,
                                                  base + (k < p->kdim ? k : 0) * ge->plane));
            }
            tr4_v32z(v[0], v[1], v[2], v[3], s->len, d, 0);
        }
    }
}

static const Family family_amx = {OQCI_ISA_AMX, 32, 32, 1, 1 << 20, -1, NULL /* (tiles) */,
                                  {tr4_u8_u8__avx512vnni, tr4_u8_u8__avx512vnni},
                                  gather__avx512vbmi, store_tile__avx2, UKR_RQ_AVX512VNNI,
                                  {pack_band_u8__avx512vnni, pack_band_u8__avx512vnni},
                                  UKR_RQ_ACC_AVX512VNNI, tiles__amx, store_runs__avx512vnni,
                                  pack_s2__amx};

/* Where conv_amx's region starts: after wtab's kg + TILE_MR pointers. */
static uint8_t *amx_work(const OqciConv *p, void *scratch) {
    size_t panel, cbuf, band;
    gemm_scratch(p, HAVE_AMX, &panel, &cbuf, &band);
    return align_up((void *)(gemm_wtab(p, scratch, panel, cbuf, band) + p->out_c / p->group +
                             TILE_MR));
}

/* conv_gemm with family_amx (amx_fits(p), the tile state granted): the weight tails
 * copied, the tiles configured for the call and released after it. */
static void conv_amx(const OqciConv *p, const void *x, void *y, void *scratch) {
    int32_t r = p->kpad % 64, k;
    if (r) {
        int8_t *wt = (int8_t *)(void *)(amx_work(p, scratch) + amx_tail_off(p));
        for (k = 0; k < p->out_c; k++) {
            memcpy(wt + (size_t)k * 64, p->w + (size_t)k * (size_t)p->kpad + (p->kpad - r),
                   (size_t)r);
            memset(wt + (size_t)k * 64 + r, 0, (size_t)(64 - r));
        }
    }
    amx_begin();
    conv_gemm(p, &family_amx, x, y, scratch);
    amx_end();
}
#endif /* HAVE_AMX */

#if HAVE_AVXVNNI
/* ---- q8conv_4x24c4__avxvnni: 4 channels x 24 pixels, u8 panel ---------------------- */

#if OQCI_EMU_VNNI
/* acc + vpdpbusd(a (u8), b (s8)), exactly, in AVX2: 16-bit pairs, then pairs of pairs. */
T_AVX2 static __m256i dpbusd_emu(__m256i acc, __m256i a, __m256i b) {
    __m256i lo = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(a)),
                                   _mm256_cvtepi8_epi16(_mm256_castsi256_si128(b)));
    __m256i hi = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(a, 1)),
                                   _mm256_cvtepi8_epi16(_mm256_extracti128_si256(b, 1)));
    return _mm256_add_epi32(acc, _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8));
}
#define DPBUSD256(acc, a, b) dpbusd_emu(acc, a, b)
#else
#define DPBUSD256(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#endif

#define ACC4(X) X(0) X(1) X(2) X(3)

T_AVXVNNI static void q8conv_4x24c4__avxvnni(int32_t nq, const void *panel,
                                             const int8_t *const *w, int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const uint8_t *pp = (const uint8_t *)panel;
#define DECL(r)                                                                         \
    __m256i a##r##0 = _mm256_setzero_si256(), a##r##1 = _mm256_setzero_si256(),         \
            a##r##2 = _mm256_setzero_si256();
    ACC4(DECL)
#undef DECL
    int32_t q;
    for (q = 0; q < nq; q++, pp += 96) {
        __m256i p0 = LDU256(pp);
        __m256i p1 = LDU256(pp + 32);
        __m256i p2 = LDU256(pp + 64);
#define STEP(r)                                                                         \
    {                                                                                   \
        __m256i wb = _mm256_set1_epi32(load32(w[r] + 4 * q));                           \
        a##r##0 = DPBUSD256(a##r##0, p0, wb);                                           \
        a##r##1 = DPBUSD256(a##r##1, p1, wb);                                           \
        a##r##2 = DPBUSD256(a##r##2, p2, wb);                                           \
    }
        ACC4(STEP)
#undef STEP
    }
#define ST(o, v) STU256(t + (o), acc ? _mm256_add_epi32(LDU256(t + (o)), v) : v);
#define STORE(r)                                                                        \
    if (r < nk) { ST(r * TILE_NR, a##r##0) ST(r * TILE_NR + 8, a##r##1) ST(r * TILE_NR + 16, a##r##2) }
    ACC4(STORE)
#undef STORE
#undef ST
}

static const Family family_avxvnni = {OQCI_ISA_AVXVNNI, 4, 24, 1, KBQ(24, 1), OQCI_S8, q8conv_4x24c4__avxvnni,
                                      {tr4_u8_s8__avx2, tr4_u8_u8__avx2}, gather__avx2,
                                      store_tile__avx2, NULL, {NULL, NULL}, NULL, NULL, NULL};
#endif

/* ======================================================================================
 * Arm dot-product kernels.
 * ==================================================================================== */
#if HAVE_NEONDOT

/* s8 inputs as they are, u8 inputs - 128: the operands of sdot. */
static void tr4_s8_s8__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                         const uint8_t *r3, int32_t len, void *dst) {
    tr4_b__c(r0, r1, r2, r3, len, dst, 0);
}
static void tr4_s8_u8__c(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                         const uint8_t *r3, int32_t len, void *dst) {
    tr4_b__c(r0, r1, r2, r3, len, dst, 0x80);
}

#define ACC4N(X) X(0) X(1) X(2) X(3)

static void q8conv_4x16c4__neondot(int32_t nq, const void *panel, const int8_t *const *w,
                                   int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const int8_t *pp = (const int8_t *)panel;
#define DECL(r)                                                                         \
    int32x4_t a##r##0 = vdupq_n_s32(0), a##r##1 = vdupq_n_s32(0), a##r##2 = vdupq_n_s32(0), \
              a##r##3 = vdupq_n_s32(0);
    ACC4N(DECL)
#undef DECL
    int32_t q;
    for (q = 0; q < nq; q++, pp += 64) {
        int8x16_t p0 = vld1q_s8(pp), p1 = vld1q_s8(pp + 16), p2 = vld1q_s8(pp + 32),
                  p3 = vld1q_s8(pp + 48);
#define STEP(r)                                                                         \
    {                                                                                   \
        int8x16_t wb = vreinterpretq_s8_s32(vdupq_n_s32(load32(w[r] + 4 * q)));         \
        a##r##0 = vdotq_s32(a##r##0, p0, wb);                                           \
        a##r##1 = vdotq_s32(a##r##1, p1, wb);                                           \
        a##r##2 = vdotq_s32(a##r##2, p2, wb);                                           \
        a##r##3 = vdotq_s32(a##r##3, p3, wb);                                           \
    }
        ACC4N(STEP)
#undef STEP
    }
#define ST(o, v) vst1q_s32(t + (o), acc ? vaddq_s32(vld1q_s32(t + (o)), v) : v);
#define STORE(r)                                                                        \
    if (r < nk) {                                                                       \
        ST(r * TILE_NR, a##r##0) ST(r * TILE_NR + 4, a##r##1) ST(r * TILE_NR + 8, a##r##2) \
        ST(r * TILE_NR + 12, a##r##3)                                                   \
    }
    ACC4N(STORE)
#undef STORE
#undef ST
}

static const Family family_neondot = {OQCI_ISA_NEONDOT, 4, 16, 1, KBQ(16, 1), OQCI_U8, q8conv_4x16c4__neondot,
                                      {tr4_s8_s8__c, tr4_s8_u8__c}, gather__c, store_tile__c,
                                      NULL, {NULL, NULL}, NULL, NULL, NULL};
#endif

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
#if HAVE_AMX
    case OQCI_ISA_AMX:   /* (the kernel's grant says the CPU has the tiles) */
        return cpu_has(OQCI_ISA_AVX512VNNI) && amx_permit();
#endif
#if HAVE_NEONDOT
    case OQCI_ISA_NEONDOT:
        return 1;
#endif
    default:
        return 0;
    }
}

int oqci_isa_available(int isa) {
    return isa >= 0 && isa < OQCI_ISA_COUNT && cpu_has(isa);
}

/* Preference order, best first. */
static const int isa_order[] = {OQCI_ISA_AMX, OQCI_ISA_AVX512VNNI, OQCI_ISA_AVXVNNI, OQCI_ISA_AVX2,
                                OQCI_ISA_NEONDOT, OQCI_ISA_PORTABLE};

int oqci_conv_isa(void) {
    size_t i;
#if defined(OQCI_TEST_HOOKS)
    int f = FORCED();
    if (f != OQCI_ISA_AUTO)
        return f;
#endif
    for (i = 0; i < sizeof isa_order / sizeof isa_order[0]; i++)
        if (cpu_has(isa_order[i]))
            return isa_order[i];
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
    static const char *const names[OQCI_ISA_COUNT] = {"auto",       "portable", "avx2",
                                                      "avxvnni",    "avx512vnni", "neondot",
                                                      "amx"};
    return isa >= 0 && isa < OQCI_ISA_COUNT ? names[isa] : "?";
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
    return oqci_requant_ok(&p->rq, 0, p->out_c - 1);
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

/* Direct depthwise kernel applies: one input channel per group, few taps. */
static int is_dw(const OqciConv *p) {
    return p->in_c == p->group && p->k_h * p->k_w <= DW_MAX_TAPS;
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

int oqci_conv(const OqciConv *p, const void *x, void *y, void *scratch) {
    int isa;
    if (!conv_ok(p) || !x || !y || !scratch)
        return OQCI_EINVAL;
    isa = oqci_conv_isa();
    (void)isa;
#if HAVE_AVX2
    if (isa == OQCI_ISA_AVX2 || isa == OQCI_ISA_AVXVNNI || isa == OQCI_ISA_AVX512VNNI ||
        isa == OQCI_ISA_AMX) {
        int64_t npix = (int64_t)p->batch * p->out_h * p->out_w;
        int z = isa == OQCI_ISA_AVX512VNNI || isa == OQCI_ISA_AMX;   /* AVX-512 kernels */
        const Family *f = p->wpair16 ? &family_avx2n : &family_avx2;
#ifndef OQCI_NO_FLOAT   /* (integer-only builds: depthwise goes through the GEMM) */
        if (is_dw(p)) {
#if HAVE_AMX
            if (isa == OQCI_ISA_AMX && dw3q_ok(p)) {
                conv_dw3q__avx512vbmi(p, x, y, scratch);
                return OQCI_OK;
            }
#endif
#if HAVE_DWZ
            if (z && dw3flat_ok(p)) {
                conv_dw3flat__avx512vnni(p, x, y, scratch);
                return OQCI_OK;
            }
            if (z && dw3s2flat_ok(p)) {
                conv_dw3s2flat__avx512vnni(p, x, y, scratch);
                return OQCI_OK;
            }
#endif
            conv_dwf__avx2(p, x, y, scratch, z);
            return OQCI_OK;
        }
#endif
        if (npix < GEMV_MAX_PIX) {
            conv_gemv_avx2(p, x, y, scratch);
            return OQCI_OK;
        }
#if HAVE_AVXVNNI
        if (isa == OQCI_ISA_AVXVNNI)
            f = &family_avxvnni;
#endif
#if HAVE_AMX
        if (isa == OQCI_ISA_AMX && amx_fits(p)) {
            conv_amx(p, x, y, scratch);
            return OQCI_OK;
        }
#endif
#if HAVE_AVX512VNNI
        if (z)
            f = &family_avx512vnni;
#endif
        (void)z;
        conv_gemm(p, f, x, y, scratch);
        return OQCI_OK;
    }
#endif
#if HAVE_NEONDOT
    if (isa == OQCI_ISA_NEONDOT) {
        if (is_dw(p))
            conv_dw(p, x, y, scratch, dw_fill__c, q8dw_1xN__c, dw_store__c);
        else
            conv_gemm(p, &family_neondot, x, y, scratch);
        return OQCI_OK;
    }
#endif
    conv_portable(p, x, y, scratch);
    return OQCI_OK;
}
