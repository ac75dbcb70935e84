/* oqci.h - oqc's INT8 kernel library: the kernels the quantized model calls.
 *
 * This header and the oqci_*.c files are copied verbatim into every INT8 output of
 * `oqc compile`, and the compiler's own reference path (oqc eval, calibration of the
 * quantized graph) calls the very same functions with the very same parameter structs,
 * so the emitted C and the compiler agree bit for bit.  Therefore the files are plain
 * C99 (they build with -std=c99 -pedantic -Wall -Wextra -Werror), never allocate,
 * hold no mutable global, and need nothing beyond <stdint.h>/<stddef.h>/<string.h>
 * (and the compiler's own intrinsics headers, for the SIMD kernels of oqci_conv*.c).
 *
 * Numbers (see docs/int8.md and the calibration contract):
 *   - symmetric, scale-only quantization: x = scale * q, no zero point;
 *   - activations are s8 (q in [-127, 127]) or u8 (q in [0, 255]); weights s8 in
 *     [-127, 127], per output channel;
 *   - every rounding is half away from zero (oqci_round_clamp, oqci_mul_shift);
 *   - the core primitive is oqci_dp4a_*: four 8-bit products summed into an int32
 *     accumulator, the per-lane semantics of DP4A, x86 vpdpbusd and ARM sdot/udot;
 *     weights are packed with the reduction depth padded to a multiple of 4 with zeros.
 *
 * Layout: activations NCHW, batch included.  A conv/pool output may be a channel view
 * of a larger buffer (a Concat removed by the passes): channels [out_coff, out_coff +
 * K) of a buffer with out_ctotal channels per image. */
#ifndef OQCI_H
#define OQCI_H

#include <stddef.h>
#include <stdint.h>

/* Run-time kernel selection is the default for x86-64 with GNU C (gcc, clang) when the
 * flags enable no SIMD extension beyond the x86-64 baseline: a plain `cc -O2` build of
 * the emitted code then compiles every x86 family with target attributes and runs the
 * CPU's best (as -DOQCI_DISPATCH).  Likewise on AArch64 Linux with gcc 10 or later and
 * no dot-product flag: the NEON dot-product family is compiled with a target attribute
 * and used when the kernel reports the CPU has it (HWCAP_ASIMDDP).  Flags that enable AVX2 or more (-mavx2, -march=native,
 * oqc compile --target avx2 and up) select the families at compile time, for that CPU;
 * -DOQCI_NO_DISPATCH (--target portable) keeps the portable kernels only.  Every family
 * gives the same bits.  Must come before anything that tests OQCI_DISPATCH. */
#if !defined(OQCI_DISPATCH) && !defined(OQCI_NO_DISPATCH) &&                              \
    ((defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__)) ||                   \
     (defined(__aarch64__) && defined(__linux__) && defined(__GNUC__) &&                   \
      !defined(__clang__) && __GNUC__ >= 10 && !defined(__ARM_FEATURE_DOTPROD)))
#define OQCI_DISPATCH 1
#endif

/* Status codes (0 = success), as the FP32 library's. */
#define OQCI_OK 0
#define OQCI_EINVAL 1   /* parameters inconsistent (a compiler bug, never data) */

/* Storage type of an activation tensor. */
#define OQCI_S8 0   /* int8_t, q in [-127, 127] */
#define OQCI_U8 1   /* uint8_t, q in [0, 255] */
#define OQCI_S32 2  /* int32_t: raw accumulators, not requantized (an output type of
                       oqci_conv and oqci_avgpool only; see "Accumulator outputs") */

/* Requantization modes. */
#define OQCI_REQ_FLOAT 0   /* y = round(float(acc) * mult[i]) in float32 */
#define OQCI_REQ_FIXED 1   /* the same y in integers: oqci_mul_shift(acc, m[i], shift[i]) */

/* Largest reduction depth whose int32 sum cannot overflow with u8 x s8 operands:
 * 65536 * 255 * 127 = 2 122 383 360 < 2^31.  Deeper reductions are summed in chunks
 * of this depth into an int64 and saturated to int32 (see OqciConv). */
#define OQCI_KCHUNK 65536

/* A requantization: one multiplier, or one per index (output channel for convs,
 * window element count for average pools).  Float mode uses mult, fixed mode m and
 * shift; the other pointers may be NULL. */
typedef struct OqciRequant {
    int32_t mode;            /* OQCI_REQ_FLOAT or OQCI_REQ_FIXED */
    int32_t per_index;       /* 0: element 0 for every index; 1: element i for index i */
    const float *mult;       /* float mode: M (float32) */
    const int32_t *m;        /* fixed mode: multiplier, 0 or in [2^30, 2^31), low 7 bits 0 */
    const int8_t *shift;     /* fixed mode: right shift, in [1, 62] */
} OqciRequant;

/* ---- scalar primitives (inline: every kernel and the compiler use exactly these) --- */

/* round(t) half away from zero, clamped to [lo, hi]; NaN gives lo.  Exact: no float
 * addition is involved, so no FMA contraction or excess precision can change it. */
static inline int32_t oqci_round_clamp(float t, int32_t lo, int32_t hi) {
    int32_t i;
    float f;
    if (!(t > (float)lo))
        return lo;
    if (t >= (float)hi)
        return hi;
    i = (int32_t)t;      /* toward zero; |t| < 2^31 here */
    f = t - (float)i;    /* exact (Sterbenz) */
    if (f >= 0.5f)
        i++;
    else if (f <= -0.5f)
        i--;
    return i;
}

/* v (< 2^63) rounded to 24 significant bits, ties to even: the rounding of float32
 * arithmetic (round to nearest even) applied to an integer.  Integers only. */
static inline uint64_t oqci_round24(uint64_t v) {
    uint64_t t = v >> 24, low, half;   /* t < 2^39 */
    int n = 0;                         /* the bit length of t: of v, minus 24 */
    if (t >> 16) {
        t >>= 16;
        n = 16;
    }
    if (t >> 16) {
        t >>= 16;
        n += 16;
    }
    if (t >> 8) {
        t >>= 8;
        n += 8;
    }
    if (t >> 4) {
        t >>= 4;
        n += 4;
    }
    if (t >> 2) {
        t >>= 2;
        n += 2;
    }
    if (t >> 1) {
        t >>= 1;
        n++;
    }
    n += (int)t;
    if (n == 0)
        return v;
    half = (uint64_t)1 << (n - 1);
    low = v & ((half << 1) - 1);
    v -= low;
    if (low > half || (low == half && ((v >> n) & 1)))
        v += half << 1;
    return v;
}

/* Fixed-point requantization, integers only: round(float32(float32(x) * M)) half away
 * from zero, saturated to int32, for M = m * 2^-shift, m < 2^31, shift in [1, 62].
 * With m of at most 24 significant bits (oqci_fixed_multiplier's, so that M is a
 * float32 exactly) this is bit for bit what float requantization computes with that M,
 * (float)x * M rounded by oqci_round_clamp: float32(x) is x rounded to 24 bits, the
 * float32 product (of magnitude in [2^-32, 2^61]: always a normal float) is the exact
 * product |x'| m rounded to 24 bits, both ties to even, and rounding to nearest even
 * is symmetric, so magnitudes suffice.  Integer-only builds (OQCI_NO_FLOAT) thus give
 * the float build's bits. */
static inline int32_t oqci_mul_shift(int32_t x, int32_t m, int shift) {
    uint64_t a = x < 0 ? (uint64_t)0 - (uint64_t)(int64_t)x : (uint64_t)x;   /* <= 2^31 */
    uint64_t p = oqci_round24(oqci_round24(a) * (uint64_t)m);                  /* <= 2^62 */
    uint64_t r = (p + ((uint64_t)1 << (shift - 1))) >> shift;
    if (r > (uint64_t)INT32_MAX)
        return x < 0 ? INT32_MIN : INT32_MAX;
    return x < 0 ? -(int32_t)r : (int32_t)r;
}

/* Element i of an s8 or u8 tensor x (storage type t). */
static inline int32_t oqci_load_q(const void *x, int32_t t, int64_t i) {
    return t == OQCI_U8 ? (int32_t)((const uint8_t *)x)[i] : (int32_t)((const int8_t *)x)[i];
}

/* Stores q (already inside type t's range) as element i of y: a byte, or an int32 for
 * accumulator outputs (OQCI_S32). */
static inline void oqci_store_q(void *y, int32_t t, int64_t i, int32_t q) {
    if (t == OQCI_U8)
        ((uint8_t *)y)[i] = (uint8_t)q;
    else if (t == OQCI_S32)
        ((int32_t *)y)[i] = q;
    else
        ((int8_t *)y)[i] = (int8_t)q;
}

/* Parameter checks every kernel makes (returning OQCI_EINVAL when they fail). */

/* r usable for entries first..last: pointers present, shifts in [1, 62] (any other
 * shift is undefined behaviour in oqci_mul_shift), fixed multipliers m >= 0 with their
 * low 7 bits zero (oqci_fixed_multiplier's: a float32 M, which the x86 epilogues
 * compute with in float; another m would give other bits there than oqci_requant);
 * float mode refused with OQCI_NO_FLOAT. */
static inline int oqci_requant_ok(const OqciRequant *r, int64_t first, int64_t last) {
    int64_t i;
    if (r->mode == OQCI_REQ_FLOAT) {
#ifdef OQCI_NO_FLOAT
        return 0;
#else
        return r->mult != NULL;
#endif
    }
    if (r->mode != OQCI_REQ_FIXED || !r->m || !r->shift)
        return 0;
    if (!r->per_index)
        first = last = 0;
    for (i = first; i <= last; i++)   /* (m: a float32's 24 significant bits, or 0) */
        if (r->shift[i] < 1 || r->shift[i] > 62 || r->m[i] < 0 || (r->m[i] & 127) != 0)
            return 0;
    return 1;
}

/* [lo, hi] non-empty and storable in type t. */
static inline int oqci_range_ok(int32_t t, int32_t lo, int32_t hi) {
    if (t == OQCI_S8)
        return lo <= hi && lo >= -128 && hi <= 127;
    if (t == OQCI_U8)
        return lo <= hi && lo >= 0 && hi <= 255;
    if (t == OQCI_S32)
        return lo <= hi;
    return 0;
}

/* Requantizes accumulator acc with entry i of r, clamped to [lo, hi].
 * Integer-only targets (no FPU; e.g. Cortex-M0) define OQCI_NO_FLOAT: the float branch
 * is then not compiled, so the conv objects (oqci_conv*.o) and oqci_pool.o need no
 * soft-float routine, and the kernels reject OQCI_REQ_FLOAT with OQCI_EINVAL. */
static inline int32_t oqci_requant(int32_t acc, const OqciRequant *r, int64_t i, int32_t lo,
                                   int32_t hi) {
    int64_t k = r->per_index ? i : 0;
#ifndef OQCI_NO_FLOAT
    if (r->mode == OQCI_REQ_FLOAT)
        return oqci_round_clamp((float)acc * r->mult[k], lo, hi);
#endif
    {
        int32_t v = oqci_mul_shift(acc, r->m[k], r->shift[k]);
        return v < lo ? lo : v > hi ? hi : v;
    }
}

#ifndef OQCI_NO_FLOAT
/* Entry i's multiplier M as a float32, in either mode: fixed mode's m 2^-shift is one
 * exactly (oqci_requant_ok: 24 significant bits), and the float steps give both modes'
 * bits, so the kernels' float fast paths serve fixed mode too.  (float)m is exact;
 * 2^-shift (shift in [1, 62]) is built from exact float halvings. */
static inline float oqci_rq_mult(const OqciRequant *r, int64_t i) {
    int64_t k = r->per_index ? i : 0;
    float pw = 1.0f;
    int s;
    if (r->mode == OQCI_REQ_FLOAT)
        return r->mult[k];
    for (s = r->shift[k]; s >= 30; s -= 30)
        pw *= 1.0f / 1073741824.0f;
    return (float)r->m[k] * (pw / (float)((int32_t)1 << s));
}
#endif

/* The DP4A primitive: acc + a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3], activations
 * a (u8 or s8) times weights b (s8), exact in int32 (the caller bounds the depth). */
static inline int32_t oqci_dp4a_u8s8(int32_t acc, const uint8_t *a, const int8_t *b) {
    return acc + (int32_t)a[0] * b[0] + (int32_t)a[1] * b[1] + (int32_t)a[2] * b[2] +
           (int32_t)a[3] * b[3];
}
static inline int32_t oqci_dp4a_s8s8(int32_t acc, const int8_t *a, const int8_t *b) {
    return acc + (int32_t)a[0] * b[0] + (int32_t)a[1] * b[1] + (int32_t)a[2] * b[2] +
           (int32_t)a[3] * b[3];
}

/* ---- convolution and matrix products (oqci_conv*.c) --------------------------------
 * 2-D convolution (1-D as H = 1; Gemm/MatMul with constant weights as a 1x1 conv on
 * a 1x1 image with batch = rows).  Weights: out_channels rows of kpad int8 each, the
 * row of output channel k holding W[k][c][i][j] at c * kh * kw + i * kw + j for the
 * channels c of its group, then zeros up to kpad (a multiple of 4).  Output:
 *   acc  = bias[k] + sum over the window of x * w          (int64, saturated to int32)
 *   y    = requant(acc, rq, k) clamped to [lo, hi]
 * with out_type's range and the fused activation folded into [lo, hi].
 * Accumulator outputs: with out_type OQCI_S32, y = acc clamped to [lo, hi] (any int32
 * bounds: INT32_MIN, INT32_MAX for none, 0 for a fused Relu), stored as int32_t; rq is
 * not read.  The compiler uses them for layers whose outputs leave the INT8 domain
 * (oqci_dequantize_s32, oqci_requantize_s32). */
typedef struct OqciConv {
    int32_t batch;                 /* N */
    int32_t in_c, in_h, in_w;      /* input C, H, W */
    int32_t out_c, out_h, out_w;   /* output K (of this call), H, W */
    int32_t k_h, k_w;              /* kernel */
    int32_t s_h, s_w;              /* strides */
    int32_t d_h, d_w;              /* dilations */
    int32_t p_t, p_l;              /* padding before (top, left); after follows from out */
    int32_t group;                 /* groups: divides in_c and out_c */
    int32_t kdim;                  /* in_c / group * k_h * k_w */
    int32_t kpad;                  /* kdim rounded up to a multiple of 4 */
    int32_t out_ctotal;            /* channels per image of the output buffer */
    int32_t out_coff;              /* first channel of this output in it */
    int32_t in_type, out_type;     /* OQCI_S8 / OQCI_U8 (out_type also OQCI_S32) */
    int32_t lo, hi;                /* output clamp */
    int32_t wpair16;               /* oqci_conv_wpair16(this) (1), or 0: not known */
    const int8_t *w;               /* out_c x kpad packed weights */
    const int32_t *bias;           /* out_c int32 biases at scale s_in * s_w[k], or NULL */
    OqciRequant rq;                /* per output channel (per_index) or one */
} OqciConv;

/* 1 when every pair of weights w[2i], w[2i+1] of p's out_c x kpad weights has a sum of
 * positive parts and a sum of magnitudes of negative parts both at most 128: then any
 * two u8 inputs times such a pair sum to a value inside int16, so the AVX2 family may use
 * vpmaddubsw (which saturates to int16) exactly.  Weights of at most 7 bits (|w| <= 64)
 * always qualify; 8-bit ones rarely do.  The compiler sets wpair16 from it (an OqciConv
 * with wpair16 1 whose weights do not qualify gives wrong results on AVX2). */
int oqci_conv_wpair16(const OqciConv *p);

/* 1 when oqci_conv*.c, built with the flags in effect where this is expanded, include
 * the AMX-INT8 family (Linux on x86-64, with -mamx-tile -mamx-int8 and AVX-512 VNNI/BW,
 * or OQCI_DISPATCH with gcc 11 / clang 13 or later), whose panels need more scratch. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) &&                      \
    ((((defined(__AMX_INT8__) && defined(__AMX_TILE__)) ||                                  \
       (defined(__AMXINT8__) && defined(__AMXTILE__))) &&                                   \
      defined(__AVX512VNNI__) && defined(__AVX512BW__)) ||                                  \
     (defined(OQCI_DISPATCH) &&                                                             \
      ((defined(__clang__) && __clang_major__ >= 13) ||                                     \
       (!defined(__clang__) && __GNUC__ >= 11))))
#define OQCI_AMX_BUILD 1
#else
#define OQCI_AMX_BUILD 0
#endif

/* Scratch bytes oqci_conv needs.  The same number in every build and on every CPU (the
 * largest need of all the kernel families below), so an arena sized by the compiler on
 * one machine serves the emitted code on any other.  oqci_conv_scratch_noamx: enough for
 * builds without the AMX family (OQCI_AMX_BUILD 0), which need less on convs the tiles
 * would run (the emitted NAME.h sizes its arena with one or the other). */
size_t oqci_conv_scratch(const OqciConv *p);
size_t oqci_conv_scratch_noamx(const OqciConv *p);
/* OQCI_AMX_BUILD as oqci_conv.c was built (another translation unit's flags may differ). */
int oqci_conv_amx_build(void);
/* y (out_type elements, NCHW view) = conv(x (in_type, NCHW)).  scratch: at least
 * oqci_conv_scratch(p) bytes, any alignment. */
int oqci_conv(const OqciConv *p, const void *x, void *y, void *scratch);

/* Threads (oqci_conv.c).  A conv is split into parts that compute disjoint outputs
 * with exactly the arithmetic of one call, so the bits do not depend on the split:
 * runs of 8 output channels (of a conv with one group), output rows (of a conv with one
 * group, a kernel wider than 1x1 or fewer than OQCI_PAR_ROW_MAXC output channels, over
 * at least 4 rows per thread and 8 columns), whole groups (grouped and depthwise convs
 * of one image) or whole images (grouped convs of several), at most nthreads parts and
 * none of fewer than OQCI_PAR_MIN_MACS multiply-adds (depthwise convs:
 * OQCI_PAR_MIN_MACS / OQCI_PAR_DW_DIV, counting OQCI_PAR_DW_CH_MACS a channel; convs of
 * fewer than 8 pixels: OQCI_PAR_MIN_MACS / OQCI_PAR_GEMV_DIV; about 5 to 25
 * us of work on one core, against about a microsecond to hand a task to a waiting
 * thread).  Each part is an oqci_conv call of its own, on its own slice of the scratch
 * (so each repeats the packing of the input panels it reads).  The scratch is sized for
 * every part count up to nthreads, so OQCI_PAR_MIN_MACS may differ between the build
 * that sized the arena and the one that runs it.  The parallel-for calls task(arg, i) exactly
 * once for every i in [0, n), in any order and on any threads, and returns when all
 * have returned (the same type as oqcf_nn.h's OqcfParallelFor). */
typedef void (*OqciParallelFor)(void *ctx, void (*task)(void *arg, int i), void *arg, int n);
#ifndef OQCI_PAR_MIN_MACS
#define OQCI_PAR_MIN_MACS 1048576
#endif
/* Depthwise convs split from OQCI_PAR_MIN_MACS / OQCI_PAR_DW_DIV multiply-adds on (they
 * read their producer's channel parts; see par_split in oqci_conv.c). */
#ifndef OQCI_PAR_DW_DIV
#define OQCI_PAR_DW_DIV 8
#endif
/* Convs of fewer than 8 pixels (the dot-product path) split from OQCI_PAR_MIN_MACS /
 * OQCI_PAR_GEMV_DIV multiply-adds on (each weight byte serves a few of them). */
#ifndef OQCI_PAR_GEMV_DIV
#define OQCI_PAR_GEMV_DIV 16
#endif
/* What a depthwise channel costs besides its multiply-adds, in multiply-adds, when
 * par_split weighs a depthwise conv against OQCI_PAR_MIN_MACS / OQCI_PAR_DW_DIV. */
#ifndef OQCI_PAR_DW_CH_MACS
#define OQCI_PAR_DW_CH_MACS 1024
#endif
/* 1x1 convs of one group with fewer output channels than this split by output rows
 * (see par_split). */
#ifndef OQCI_PAR_ROW_MAXC
#define OQCI_PAR_ROW_MAXC 128
#endif
/* Parts oqci_conv_par makes of p for nthreads threads (1: it runs oqci_conv). */
int oqci_conv_parts(const OqciConv *p, int nthreads);
/* Scratch bytes oqci_conv_par needs for nthreads: enough for the whole conv in one call
 * and for any number of parts up to nthreads (as oqci_conv_scratch and
 * oqci_conv_scratch_noamx). */
size_t oqci_conv_par_scratch(const OqciConv *p, int nthreads);
size_t oqci_conv_par_scratch_noamx(const OqciConv *p, int nthreads);
/* oqci_conv split for nthreads threads and run through run(ctx, ...); run NULL or one
 * part: oqci_conv on the calling thread.  scratch: oqci_conv_par_scratch(p, nthreads)
 * bytes, 64-byte aligned.  The same result as oqci_conv, bit for bit. */
int oqci_conv_par(const OqciConv *p, const void *x, void *y, void *scratch, int nthreads,
                  OqciParallelFor run, void *ctx);

/* Kernel families of oqci_conv (instruction sets).  Every family computes exactly the
 * bits of the portable one (integer sums are exact; requantization is oqci_requant's).
 * Which families a build has is fixed at compile time (see oqci_conv.c): __AVX2__,
 * __AVXVNNI__, __AVX512VNNI__ + __AVX512BW__, __ARM_FEATURE_DOTPROD, or, with
 * OQCI_DISPATCH (oqc's own library, and by default a build with no -m flag on x86-64
 * with GNU C, see above), every x86 family chosen at run time.  -DOQCI_NO_DISPATCH
 * without -m flags gives the portable family alone. */
#define OQCI_ISA_AUTO 0         /* the best family this build has and this CPU runs */
#define OQCI_ISA_PORTABLE 1     /* plain C99 around oqci_dp4a_* (the reference) */
#define OQCI_ISA_AVX2 2         /* x86 AVX2 (with FMA, for depthwise): 16-bit vpmaddwd, or
                                   vpmaddubsw for weights with wpair16 */
#define OQCI_ISA_AVXVNNI 3      /* x86 AVX-VNNI: vpdpbusd ymm (VEX) */
#define OQCI_ISA_AVX512VNNI 4   /* x86 AVX-512 VNNI: vpdpbusd zmm */
#define OQCI_ISA_NEONDOT 5      /* Arm NEON dot product: sdot */
#define OQCI_ISA_AMX 6          /* x86 AMX-INT8 tiles (tdpbssd/tdpbsud; Linux), with AVX-512
                                   VNNI and VBMI for everything else */
#define OQCI_ISA_AVX512VBMI 7   /* x86 AVX-512 VNNI with VBMI's byte permutes (vpermb,
                                   vpermt2b) packing the panels and for 3x3 depthwise (Ice
                                   Lake, Zen 4 and later) */
#define OQCI_ISA_COUNT 8
/* The families' names, preference, x86 kernel levels and --target flags are rows of
 * the one ISA table, OQC_ISA_TABLE (oqc_isa.h, macros only). */
#include "oqc_isa.h"
/* The x86 kernel level (OQC_X86_*) family isa's kernels use (the table's x86 column):
 * which of the AVX2, AVX-512 and VBMI paths of the conv, pool and eltwise it may take. */
#define OQCI_ISA_X86_OF(name, int8, fp32, x86, flags, files) isa == (int8) ? (x86) :
static inline int oqci_isa_x86(int isa) {
    return OQC_ISA_TABLE(OQCI_ISA_X86_OF) OQC_X86_NONE;
}
#undef OQCI_ISA_X86_OF
/* 1 when this build has family isa and this CPU can run it (AUTO and PORTABLE: 1). */
int oqci_isa_available(int isa);
/* The family oqci_conv uses now (never OQCI_ISA_AUTO). */
int oqci_conv_isa(void);
/* "portable", "avx2", "avxvnni", "avx512vnni", "neondot", "amx", "avx512vbmi"; "auto"; "?"
 * otherwise. */
const char *oqci_isa_name(int isa);
#ifdef OQCI_TEST_HOOKS
/* Tests and benchmarks only (builds defining OQCI_TEST_HOOKS; oqc's library does, the
 * copies emitted next to a model do not, so they hold no mutable global): makes
 * oqci_conv use family isa (OQCI_ISA_AUTO: the default choice again).  OQCI_EINVAL
 * when oqci_isa_available(isa) is 0. */
int oqci_force_isa(int isa);
#endif

/* ---- pooling (oqci_pool.c) ---------------------------------------------------------
 * Max pooling: the max of the window (padding never wins), then requant when in and out
 * scales differ (requant 1; identity otherwise: the max is copied, clamped to [lo, hi]).
 * Average pooling: the int32 sum of the window's elements, requantized with entry
 * `count` of rq (rq.per_index 1: M / count precomputed for every count 1..k_h*k_w,
 * entry 0 unused), count = window elements inside the image, or k_h*k_w with
 * count_include_pad.  With out_type OQCI_S32 (accumulator outputs, average pooling
 * only: oqci_maxpool refuses them) the sum itself, clamped to [lo, hi], is stored as
 * int32_t; rq is not read.  Global average pooling is an average pool with the whole
 * image as window (k = in, stride 1, no padding). */
typedef struct OqciPool {
    int32_t batch, channels;       /* N, C */
    int32_t in_h, in_w;            /* input H, W */
    int32_t out_h, out_w;          /* output H, W */
    int32_t k_h, k_w;              /* window */
    int32_t s_h, s_w;              /* strides */
    int32_t d_h, d_w;              /* dilations (max pooling) */
    int32_t p_t, p_l;              /* padding before */
    int32_t count_include_pad;     /* average: divide by k_h * k_w always */
    int32_t out_ctotal, out_coff;  /* output channel view */
    int32_t in_type, out_type;     /* OQCI_S8 / OQCI_U8 (out_type also OQCI_S32) */
    int32_t lo, hi;                /* output clamp */
    int32_t requant;               /* max pooling: 1 to requantize with rq */
    OqciRequant rq;                /* see above */
} OqciPool;

int oqci_maxpool(const OqciPool *p, const void *x, void *y);
int oqci_avgpool(const OqciPool *p, const void *x, void *y);

/* ---- element-wise (oqci_eltwise.c; Mul and table lookup: oqci_mul.c) ------------------ */

/* Sum of n same-shape inputs, each requantized to the output scale with 8 extra
 * fractional bits: t_i = round(q_i * M_i * 256) (rq[i], one multiplier each), then
 * y = clamp(round(sum t_i / 256), lo, hi) (half away from zero).  Add of two inputs,
 * Sum of more; a fused Relu/Clip is in [lo, hi]. */
#define OQCI_ADD_MAX 8
typedef struct OqciAdd {
    int32_t ninputs;                     /* 2..OQCI_ADD_MAX */
    int64_t count;                       /* elements of each input and of the output */
    int32_t in_type[OQCI_ADD_MAX];       /* OQCI_S8 / OQCI_U8 per input */
    int32_t out_type;                    /* output type */
    int32_t lo, hi;                      /* output clamp */
    OqciRequant rq[OQCI_ADD_MAX];        /* per input: M_i * 256 */
    /* Input 0 may instead be a conv's int32 sums (in_type[0] OQCI_S32: a residual
     * block's last conv fused into its Add, no 8-bit rounding between them): element j
     * is of channel (acc_first + j) / acc_inner % acc_channels, rq[0] holds one
     * multiplier per channel (s_acc[c] * 256 / s_y) and, with acc_lo, each sum is first
     * clamped to [acc_lo[c], acc_hi[c]] (the conv's Relu or Clip). */
    int32_t acc_channels;
    int64_t acc_inner, acc_first;
    const int32_t *acc_lo, *acc_hi;
} OqciAdd;
int oqci_add(const OqciAdd *p, const void *const *x, void *y);


/* Product of two 8-bit tensors, the second broadcast along the first's inner elements:
 * a holds outer x inner elements, b outer (one per block of inner: a squeeze-excitation
 * gate [N, C, 1, 1] against [N, C, H, W]; inner 1 for same-shape inputs), and
 * y[o, i] = oqci_requant(a[o, i] * b[o], rq, 0, lo, hi) with M = s_a s_b / s_y: the
 * integer product (|.| <= 255 * 255) requantized once. */
typedef struct OqciMul {
    int64_t outer, inner;       /* a: outer x inner; b: outer */
    int32_t a_type, b_type;     /* OQCI_S8 / OQCI_U8 */
    int32_t out_type;           /* output type */
    int32_t lo, hi;             /* output clamp */
    OqciRequant rq;             /* M = s_a s_b / s_y, one entry */
} OqciMul;
int oqci_mul(const OqciMul *p, const void *a, const void *b, void *y);

/* LayerNormalization of 8-bit codes over rows of n elements, in integers only.  Per row
 * the exact sums S1 = sum q, S2 = sum q^2 give V = n S2 - S1^2 = n^2 var(q), and the
 * normalised value of element j is u_j = (n q_j - S1) / sqrt(V + E), E = eps n^2 / s_x^2
 * (the compiler's eps_q = round(E * 2^OQCI_LN_EPS_BITS)).  1 / sqrt is a 64-bit integer
 * square root of D = V * 2^OQCI_LN_EPS_BITS + eps_q scaled by 4^k into [2^60, 2^62)
 * (31 significant bits) and one division R = 2^61 / isqrt: U_j = round(u_j * 2^16) =
 * round((n q_j - S1) * R / 2^(42 - k)) (|n q_j - S1| <= sqrt(n V), so |u_j| <= sqrt(n)).
 * Then y_j / s_y in units of 2^-8 of an output step is T_j = round(U_j * gamma[j] /
 * 2^(16 + gamma_shift)), gamma[j] = round(gamma_j / s_y * 2^(8 + gamma_shift)), and the
 * code is clamp(round((T_j + beta[j]) / 2^8), lo, hi), beta[j] = round(beta_j / s_y * 2^8).
 * Every rounding is half away from zero; no float arithmetic, so every compiler and
 * requantization mode gives the same bits.  A row with D = 0 (constant, eps 0) has
 * u = 0.  n <= OQCI_LN_MAX and eps_q <= 2^60 keep every product in int64. */
#define OQCI_LN_EPS_BITS 6
#define OQCI_LN_MAX (1 << 20)
typedef struct OqciLayerNorm {
    int64_t rows, n;            /* rows x n elements, each row normalised */
    int32_t in_type, out_type;  /* OQCI_S8 / OQCI_U8 */
    int32_t lo, hi;             /* output clamp */
    int64_t eps_q;              /* round(eps n^2 / s_x^2 * 2^OQCI_LN_EPS_BITS), <= 2^60 */
    int32_t gamma_shift;        /* 0 .. 46 */
    const int32_t *gamma;       /* n: round(gamma_j / s_y * 2^(8 + gamma_shift)) */
    const int32_t *beta;        /* n: round(beta_j / s_y * 2^8) */
} OqciLayerNorm;
int oqci_layernorm(const OqciLayerNorm *p, const void *x, void *y);

/* y = clamp(x, lo, hi) at the same scale (Relu, Clip; also s8 -> u8 when lo >= 0). */
int oqci_clamp(const void *x, int32_t in_type, void *y, int32_t out_type, int64_t count,
               int32_t lo, int32_t hi);

/* Table lookup: y[j] = table[byte of x[j]]: an s8 code c is the byte (uint8_t)c, a u8
 * code its own byte, and the table holds the output codes' bytes the same way.  Any
 * element-wise function of one 8-bit tensor (Sigmoid, Tanh, HardSwish, SiLU, ...) runs
 * this way; the compiler computes the 256 entries. y may equal x. */
int oqci_lut(const void *x, void *y, int64_t count, const uint8_t *table);

/* Threads for pooling, sums, products, tables and quantization (oqci_par.c), as
 * oqci_conv_par: a pool is split into runs of channels (one image) or of images, a sum, a
 * table lookup and a quantization into ranges of elements (multiples of 64), a product
 * into runs of its blocks; at most nthreads parts and none reading fewer than
 * OQCI_PAR_MIN_BYTES input bytes (one or two microseconds of work); run NULL or one
 * part: the plain call on the calling thread.
 * Every output depends on its own channel, block or element only, so the result is the
 * plain call's, bit for bit.  No scratch. */
#ifndef OQCI_PAR_MIN_BYTES
#define OQCI_PAR_MIN_BYTES 16384
#endif
int oqci_maxpool_par(const OqciPool *p, const void *x, void *y, int nthreads,
                     OqciParallelFor run, void *ctx);
int oqci_avgpool_par(const OqciPool *p, const void *x, void *y, int nthreads,
                     OqciParallelFor run, void *ctx);
int oqci_add_par(const OqciAdd *p, const void *const *x, void *y, int nthreads,
                 OqciParallelFor run, void *ctx);
int oqci_mul_par(const OqciMul *p, const void *a, const void *b, void *y, int nthreads,
                 OqciParallelFor run, void *ctx);
int oqci_lut_par(const void *x, void *y, int64_t count, const uint8_t *table, int nthreads,
                 OqciParallelFor run, void *ctx);
/* oqci_quantize by ranges of elements (multiples of 64): a network's input, the first
 * thing a run does, so also where the other threads start (the conv after it found
 * them asleep: 5 to 20 us late on a 2-core Zen 4 VM). */
int oqci_quantize_par(const float *x, void *y, int32_t out_type, int64_t count, float scale,
                      int nthreads, OqciParallelFor run, void *ctx);

/* ---- Concat (oqci_concat.c) ---------------------------------------------------------- */

/* Concat of 8-bit tensors along one axis, each input at its own scale and type.  With
 * the dims before the axis flattened into `outer`, input i is outer rows of size[i]
 * codes (its extent on the axis times the elements after it) and output row o is the
 * inputs' rows o one after the other.  Input i's codes are copied (requant 0: its type
 * is the output's and its scale too) or requantized to the output's scale, y =
 * oqci_requant(q, rq, 0, lo, hi) with M = s_i / s_y (requant 1: any scales, any types;
 * an s8 input into a u8 output clamps its negative codes to lo).  Rounding and
 * saturation are oqci_requant's, so the code of a dequantized value requantized at
 * s_y.  x[i] may be NULL when size[i] or outer is 0. */
typedef struct OqciConcatPart {
    int64_t size;                 /* codes per row: extent on the axis x inner elements */
    int32_t in_type;              /* OQCI_S8 / OQCI_U8 */
    int32_t requant;              /* 0: copy the codes; 1: requantize with rq */
    OqciRequant rq;               /* one entry: s_i / s_y */
} OqciConcatPart;
typedef struct OqciConcat {
    int64_t outer;                /* product of the dims before the axis */
    int32_t ninputs;              /* >= 1 */
    int32_t out_type;             /* OQCI_S8 / OQCI_U8 */
    int32_t lo, hi;               /* clamp of the requantized codes */
    const OqciConcatPart *part;   /* ninputs parts, in the output's order */
} OqciConcat;
int oqci_concat(const OqciConcat *p, const void *const *x, void *y);

/* ---- ConvTranspose (oqci_deconv.c) ---------------------------------------------------- */

/* 2-D ConvTranspose of 8-bit codes with per-output-channel int8 weights: per image,
 * acc[k][o] = bias[k] + sum of x[c][i] * w[c][k'][t] over the input channels c of k's
 * group, input positions i and taps t with o = i * stride - pad + t * dilation
 * (k' = k mod out_c / group), exactly in int32 (the compiler checks that no sum can
 * overflow), then y = oqci_requant(acc, rq, k, lo, hi). The weight keeps ONNX's layout
 * in_c x (out_c / group) x k_h x k_w. scratch: oqci_deconv_scratch() bytes. */
typedef struct OqciDeconv {
    int32_t batch, in_c, in_h, in_w;        /* input */
    int32_t out_c, out_h, out_w;            /* output */
    int32_t k_h, k_w, s_h, s_w, d_h, d_w;   /* kernel, strides, dilations */
    int32_t p_t, p_l;                       /* padding before (the output's crop) */
    int32_t group;                          /* divides in_c and out_c */
    int32_t in_type, out_type;              /* OQCI_S8 / OQCI_U8 */
    int32_t lo, hi;                         /* output clamp */
    const int8_t *w;                        /* weights */
    const int32_t *bias;                    /* out_c biases at scale s_in * s_w[k], or NULL */
    OqciRequant rq;                         /* per output channel: s_in * s_w[k] / s_y */
} OqciDeconv;
size_t oqci_deconv_scratch(const OqciDeconv *p);
int oqci_deconv(const OqciDeconv *p, const void *x, void *y, void *scratch);

/* ---- Resize (oqci_resize.c) ---------------------------------------------------------- */

/* Linear Resize of 8-bit codes at one scale (input and output share it: a weighted
 * average of codes is the code of the weighted average). Along one or two axes, output
 * position j reads input positions idx[2j] and idx[2j + 1] with weights w[2j] and
 * w[2j + 1] in units of 2^-OQCI_RESIZE_BITS, each pair summing to 2^OQCI_RESIZE_BITS;
 * with two axes y = round(sum over the four corners of w_a * w_b * x / 2^(2 * BITS)),
 * with one round(sum of w * x / 2^BITS), half away from zero: exact integers (|sum| <
 * 2^30), one rounding. The compiler rounds the float weights to the nearest multiple
 * of 2^-11 (a position error below 2^-12 of a pixel). */
#define OQCI_RESIZE_BITS 11
#define OQCI_RESIZE_MAX_RANK 8
typedef struct OqciResizeAxis {
    int32_t axis;            /* the resampled axis */
    int64_t out_len;         /* its output extent */
    const int32_t *idx;      /* out_len x 2 input indices */
    const int16_t *w;        /* out_len x 2 weights, each pair summing to 2^BITS */
} OqciResizeAxis;
typedef struct OqciResize {
    int32_t type;                           /* OQCI_S8 / OQCI_U8 (input and output) */
    int32_t rank;                           /* input rank, 1..OQCI_RESIZE_MAX_RANK */
    int64_t in[OQCI_RESIZE_MAX_RANK];       /* input shape */
    int32_t naxes;                          /* 1 or 2 */
    OqciResizeAxis ax[2];                   /* increasing axes */
} OqciResize;
int oqci_resize(const OqciResize *p, const void *x, void *y);

/* q = clamp(round(x / scale), lo, hi): float input to s8/u8 ([-127, 127] or [0, 255]). */
int oqci_quantize(const float *x, void *y, int32_t out_type, int64_t count, float scale);
/* x = q * scale. */
int oqci_dequantize(const void *x, int32_t in_type, float *y, int64_t count, float scale);

/* Accumulators (OQCI_S32 outputs) leaving the INT8 domain.  x holds outer x channels x
 * inner int32 elements (NCHW: N, C, H*W; a Gemm's rows: rows, K, 1); element i belongs
 * to channel c = (i / inner) % channels.
 * Float: y = (float)x * scale[c] (scale[0] for every element when per_channel is 0): one
 * float32 product per element. */
int oqci_dequantize_s32(const int32_t *x, float *y, int64_t outer, int32_t channels,
                        int64_t inner, const float *scale, int32_t per_channel);
/* Integer: y = oqci_requant(x, rq, c, lo, hi) stored as out_type (s8/u8; rq entry c, or
 * 0 when rq is not per_index): exactly what a conv or average pool with that out_type,
 * requantization and clamp would have stored. */
int oqci_requantize_s32(const int32_t *x, void *y, int32_t out_type, int64_t outer,
                        int32_t channels, int64_t inner, const OqciRequant *rq,
                        int32_t lo, int32_t hi);

/* ---- compile-time helpers (oqci_eltwise.c; the emitted code does not call them) ---- */

/* The fixed-point form of multiplier M >= 0: m in [2^30, 2^31) and shift in [1, 62]
 * with m * 2^-shift exactly (float)M, the multiplier float requantization uses (m has
 * at most 24 significant bits, its low 7 are zero), so that oqci_mul_shift gives float
 * requantization's bits; (float)M below 2^-32 gives m = 0, shift 1 (float mode rounds
 * every product to zero then too: |(float)acc| <= 2^31).  Returns OQCI_EINVAL for
 * (float)M >= 2^30, M negative or not finite. */
int oqci_fixed_multiplier(double M, int32_t *m, int8_t *shift);

/* ---- internal: the AVX2 selection of oqci_pool.c, oqci_eltwise.c and oqci_mul.c -----
 * Only for runtime files that define OQCI_AVX2_SELECT before including this header:
 * HAVE_AVX2 (x86-64 GNU C with __AVX2__, or OQCI_DISPATCH for run-time selection),
 * T_AVX2 (the target attribute of AVX2 functions) and oqci_use_avx2(): 1 when the AVX2
 * kernels are to be used.  With OQCI_TEST_HOOKS (liboqc, linked with oqci_conv.c) they
 * follow oqci_conv's family, so oqci_force_isa() selects them or the portable loops for
 * tests; otherwise whenever the CPU runs AVX2 (known at compile time with __AVX2__,
 * else asked of the compiler's runtime). */
#ifdef OQCI_AVX2_SELECT
#if defined(__x86_64__) && defined(__GNUC__) && (defined(__AVX2__) || defined(OQCI_DISPATCH))
#define HAVE_AVX2 1
#include <immintrin.h>
#if defined(__AVX2__)
#define T_AVX2
#else
#define T_AVX2 __attribute__((target("avx2")))
#endif
static int oqci_use_avx2(void) {
#if defined(OQCI_TEST_HOOKS)
    return oqci_isa_x86(oqci_conv_isa()) >= OQC_X86_AVX2;
#elif defined(__AVX2__)
    return 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#endif
}
/* round(u / 2) half away from zero for u = trunc(2 t) (cvttps of the doubled float
 * product): t rounded half away, the steps of oqci_conv.c's rq8; exact for |t| < 2^30.
 * The AVX2 float requantization of oqci_add and oqci_mul. */
T_AVX2 static inline __attribute__((always_inline)) __m256i oqci_half8(__m256i u) {
    return _mm256_srai_epi32(_mm256_sub_epi32(u, _mm256_cmpgt_epi32(u, _mm256_set1_epi32(-1))), 1);
}
#else
#define HAVE_AVX2 0
#endif
/* The same for AVX-512 (BW) kernels: HAVE_AVX512, T_AVX512, oqci_use_avx512() (with
 * OQCI_TEST_HOOKS: when oqci_conv's family is AVX-512 VNNI, VBMI or AMX). */
#if HAVE_AVX2 && (defined(__AVX512BW__) ||                                                 \
                  (defined(OQCI_DISPATCH) && (defined(__clang__) || __GNUC__ >= 8)))
#define HAVE_AVX512 1
#if defined(__AVX512BW__)
#define T_AVX512
#else
#define T_AVX512 __attribute__((target("avx2,avx512f,avx512bw")))
#endif
static inline int oqci_use_avx512(void) {
#if defined(OQCI_TEST_HOOKS)
    return oqci_isa_x86(oqci_conv_isa()) >= OQC_X86_AVX512;
#elif defined(__AVX512BW__)
    return 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
}
/* oqci_half8 on 16 lanes: round(u / 2) half away from zero for u = trunc(2 t). */
T_AVX512 static inline __attribute__((always_inline)) __m512i oqci_half16(__m512i u) {
    const __m512i one = _mm512_set1_epi32(1);
    return _mm512_srai_epi32(
        _mm512_mask_add_epi32(u, _mm512_cmpgt_epi32_mask(u, _mm512_set1_epi32(-1)), u, one), 1);
}
#else
#define HAVE_AVX512 0
#endif
/* And AVX-512 VBMI (vpermt2b: 128-byte tables) kernels: T_AVX512VBMI and
 * oqci_use_avx512vbmi() (with OQCI_TEST_HOOKS: when oqci_conv's family is avx512vbmi or
 * AMX), under HAVE_AVX512. */
#if HAVE_AVX512
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#define T_AVX512VBMI
#else
#define T_AVX512VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512vbmi")))
#endif
static inline int oqci_use_avx512vbmi(void) {
#if defined(OQCI_TEST_HOOKS)
    return oqci_isa_x86(oqci_conv_isa()) >= OQC_X86_VBMI;
#elif defined(__AVX512VBMI__) && defined(__AVX512BW__)
    return 1;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi");
#endif
}
#endif
#endif /* OQCI_AVX2_SELECT */

#endif
