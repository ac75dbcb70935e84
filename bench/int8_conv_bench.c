/* int8_conv_bench.c - speed of oqci_conv (runtime/int8/oqci_conv*.c) per kernel family on
 * ResNet-18-like layers and a MobileNet depthwise layer, single-threaded, next to the
 * FP32 oqcf_conv on the same shape, and the peak of the AVX2 microkernel's instruction
 * mix measured in registers (what "GMAC/s against peak" is relative to).
 *
 * Build and run (after `make`, which builds build/liboqc.a with OQCI_TEST_HOOKS, so
 * oqci_force_isa() can pick each family):
 *
 *     cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iruntime/fp32 -Iruntime/int8 bench/int8_conv_bench.c \
 *        build/liboqc.a -lprotobuf-c -lxml2 -lm -pthread -o build/int8_conv_bench
 *     build/int8_conv_bench [--min-ms N] [--isa NAME] [--layer SUBSTRING] [--no-fp32]
 *                           [--weight-bits N] [--s32]
 *     build/int8_conv_bench --peak
 *     build/int8_conv_bench --amx-overlap
 *
 * --s32 times accumulator outputs (out_type OQCI_S32, no clamp: what a network's last
 * layer stores) instead of u8 outputs with a fused ReLU.
 *
 * --peak prints only the single-core peaks, one line "PEAK name=GMAC/s ...": madd_add
 * (12 independent vpmaddwd + vpaddd: the ceiling of exact AVX2 INT8), avx2_mix (the
 * q8conv_2x28c4__avx2 inner loop), maddubs_inexact (vpmaddubsw + vpmaddwd + vpaddd, the
 * saturating sequence), and vpdpbusd_ymm / vpdpbusd_zmm where the CPU has AVX-VNNI /
 * AVX512-VNNI.
 *
 * --amx-overlap times the step of the thin AMX kernel (oqci_conv_amxt.c) at reductions
 * 16-64: its tile work alone, its vector epilogue alone and both interleaved (the reason
 * reductions of 16 stay with AVX-512 VNNI: on this project's Xeon both take about their
 * sum).
 *
 * A benchmark, not a test: it prints numbers and fails only when a kernel returns an
 * error.  Numbers are noisy on a loaded machine (see the load average it prints).
 * GMAC/s counts batch * out_c * out_h * out_w * kdim multiply-adds per call. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include "oqci.h"
#include "oqcf_nn.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint32_t rng = 12345;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* One benchmark layer: NCHW, square kernel, symmetric padding. */
typedef struct Layer {
    const char *name;
    int c, h, w, k, ksize, stride, pad, group;
} Layer;

static const Layer layers[] = {
    {"conv1 3x224x224 7x7/2 -> 64", 3, 224, 224, 64, 7, 2, 3, 1},
    {"res2 64x56x56 3x3 -> 64", 64, 56, 56, 64, 3, 1, 1, 1},
    {"res3 128x28x28 3x3 -> 128", 128, 28, 28, 128, 3, 1, 1, 1},
    {"res3 64x56x56 3x3/2 -> 128", 64, 56, 56, 128, 3, 2, 1, 1},
    {"res4 256x14x14 3x3 -> 256", 256, 14, 14, 256, 3, 1, 1, 1},
    {"res5 512x7x7 3x3 -> 512", 512, 7, 7, 512, 3, 1, 1, 1},
    {"1x1 64x56x56 -> 256", 64, 56, 56, 256, 1, 1, 0, 1},
    {"mbv2 1x1 16x112x112 -> 96", 16, 112, 112, 96, 1, 1, 0, 1},
    {"mbv2 1x1 24x56x56 -> 144", 24, 56, 56, 144, 1, 1, 0, 1},
    {"mbv2 1x1 144x56x56 -> 24", 144, 56, 56, 24, 1, 1, 0, 1},
    {"mbv2 conv0 3x224x224 3x3/2 -> 32", 3, 224, 224, 32, 3, 2, 1, 1},
    {"mbv2 dw 960x7x7 3x3/1", 960, 7, 7, 960, 3, 1, 1, 960},
    {"1x1 256x14x14 -> 1024", 256, 14, 14, 1024, 1, 1, 0, 1},
    {"mbv2 1x1 320x7x7 -> 1280", 320, 7, 7, 1280, 1, 1, 0, 1},
    {"mbv2 1x1 96x14x14 -> 576", 96, 14, 14, 576, 1, 1, 0, 1},
    {"mbv2 1x1 64x14x14 -> 384", 64, 14, 14, 384, 1, 1, 0, 1},
    {"sq 1x1 64x13x13 -> 256", 64, 13, 13, 256, 1, 1, 0, 1},
    {"1x1/2 256x28x28 -> 512", 256, 28, 28, 512, 1, 2, 0, 1},
    {"dw 144x56x56 3x3/1", 144, 56, 56, 144, 3, 1, 1, 144},
    {"dw 144x56x56 3x3/2", 144, 56, 56, 144, 3, 2, 1, 144},
    {"dw 512x14x14 3x3/1", 512, 14, 14, 512, 3, 1, 1, 512},
    {"fc 512 -> 1000 (batch 1)", 512, 1, 1, 1000, 1, 1, 0, 1},
    {"fc 1280 -> 1000 (batch 1)", 1280, 1, 1, 1000, 1, 1, 0, 1},
    {"fashion 1x28x28 3x3 -> 16", 1, 28, 28, 16, 3, 1, 1, 1},
    {"fashion 32x14x14 3x3 -> 32", 32, 14, 14, 32, 3, 1, 1, 1},
    {"fashion 16x28x28 3x3 -> 32", 16, 28, 28, 32, 3, 1, 1, 1},
    {"fashion 48x7x7 3x3 -> 64", 48, 7, 7, 64, 3, 1, 1, 1},
    {"rn18 1x1/2 64x56x56 -> 128", 64, 56, 56, 128, 1, 2, 0, 1},
    {"rn18 1x1/2 256x14x14 -> 512", 256, 14, 14, 512, 1, 2, 0, 1},
    {"mbv2 1x1 32x28x28 -> 192", 32, 28, 28, 192, 1, 1, 0, 1},
    {"sq 1x1 16x55x55 -> 64", 16, 55, 55, 64, 1, 1, 0, 1},
    {"sq 1x1 32x27x27 -> 128", 32, 27, 27, 128, 1, 1, 0, 1},
    {"sq 1x1 48x13x13 -> 192", 48, 13, 13, 192, 1, 1, 0, 1},
    {"sq conv1 3x224x224 3x3/2 -> 64", 3, 224, 224, 64, 3, 2, 0, 1},
    {"gn conv2 1x1 64x56x56 -> 64", 64, 56, 56, 64, 1, 1, 0, 1},
    {"gn 5a 3x3 32x7x7 -> 128", 32, 7, 7, 128, 3, 1, 1, 1},
    {"gn 4a 1x1 480x14x14 -> 304", 480, 14, 14, 304, 1, 1, 0, 1},
    {"gn 3b 1x1 256x28x28 -> 288", 256, 28, 28, 288, 1, 1, 0, 1},
    {"mbv2 dw 32x112x112 3x3/1", 32, 112, 112, 32, 3, 1, 1, 32},
    {"mbv2 dw 96x112x112 3x3/2", 96, 112, 112, 96, 3, 2, 1, 96},
    {"mbv2 dw 192x28x28 3x3/1", 192, 28, 28, 192, 3, 1, 1, 192},
    {"mbv2 dw 192x28x28 3x3/2", 192, 28, 28, 192, 3, 2, 1, 192},
    {"mbv2 dw 384x14x14 3x3/1", 384, 14, 14, 384, 3, 1, 1, 384},
    {"gn 4a 3x3 16x14x14 -> 48", 16, 14, 14, 48, 3, 1, 1, 1},
};

/* Times fn(ctx) repeatedly for at least min_ms; returns seconds per call (best of 3
 * batches). */
static double time_it(int (*fn)(void *), void *ctx, double min_ms) {
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        int n = 0;
        double t0 = now(), t;
        do {
            if (fn(ctx) != 0) {
                fprintf(stderr, "int8_conv_bench: kernel failed\n");
                exit(1);
            }
            n++;
            t = now() - t0;
        } while (t < min_ms / 3000.0);
        if (t / n < best)
            best = t / n;
    }
    return best;
}

typedef struct Q8 {
    OqciConv p;
    const void *x;
    void *y;
    void *scratch;
} Q8;

static int run_q8(void *c) {
    Q8 *q = c;
    return oqci_conv(&q->p, q->x, q->y, q->scratch);
}

typedef struct F32 {
    OqcfConvParams p;
    const float *x, *w, *b;
    float *y;
    void *scratch;
    size_t ss;
} F32;

static int run_f32(void *c) {
    F32 *f = c;
    return oqcf_conv(NULL, &f->p, f->x, f->w, f->b, f->y, f->scratch, f->ss);
}

/* ---- peak of the AVX2 microkernel's mix (q8conv_2x28c4__avx2's inner loop) -------- */
#if defined(__x86_64__) && defined(__GNUC__)
/* One quad of the 2x28 kernel: per channel a dword broadcast + vpmovsxbw, then 7 x
 * (vpmaddwd with a panel vector from L1 + vpaddd) into 14 accumulators. */
#define PK_W(c) "vpbroadcastd " #c "*4(%1), %%xmm14\n vpmovsxbw %%xmm14, %%ymm14\n"
#define PK_M(a, v) "vpmaddwd " #v "*32(%2), %%ymm14, %%ymm15\n vpaddd %%ymm15, %%ymm" #a ", %%ymm" #a "\n"
static double peak_avx2(long iters) {
    static int8_t wb[64] __attribute__((aligned(64)));
    static int16_t pb[256] __attribute__((aligned(64)));
    long n = iters;
    double t = now();
    __asm__ volatile("1:\n" PK_W(0) PK_M(0, 0) PK_M(1, 1) PK_M(2, 2) PK_M(3, 3) PK_M(4, 4)
                         PK_M(5, 5) PK_M(12, 6) PK_W(1) PK_M(6, 0) PK_M(7, 1) PK_M(8, 2)
                             PK_M(9, 3) PK_M(10, 4) PK_M(11, 5) PK_M(13, 6) "dec %0\n jnz 1b\n"
                     : "+r"(n)
                     : "r"(wb), "r"(pb)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
                       "memory");
    t = now() - t;
    return (double)iters * 2 * 28 * 4 / t / 1e9;   /* 2 channels x 28 pixels x 4 k */
}
/* The inexact vpmaddubsw sequence (u8 x s8 pairs saturate) for comparison. */
#define PU_W(c) "vpbroadcastd " #c "*4(%1), %%ymm14\n"
#define PU_M(a, v) "vpmaddubsw " #v "*32(%2), %%ymm14, %%ymm15\n vpmaddwd %%ymm13, %%ymm15, %%ymm15\n vpaddd %%ymm15, %%ymm" #a ", %%ymm" #a "\n"
static double peak_maddubs(long iters) {
    static int8_t wb[64] __attribute__((aligned(64)));
    static uint8_t pb[512] __attribute__((aligned(64)));
    long n = iters;
    double t = now();
    __asm__ volatile("1:\n" PU_W(0) PU_M(0, 0) PU_M(1, 1) PU_M(2, 2) PU_W(1) PU_M(3, 0)
                         PU_M(4, 1) PU_M(5, 2) PU_W(2) PU_M(6, 0) PU_M(7, 1) PU_M(8, 2) PU_W(3)
                             PU_M(9, 0) PU_M(10, 1) PU_M(11, 2) "dec %0\n jnz 1b\n"
                     : "+r"(n)
                     : "r"(wb), "r"(pb)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
                       "memory");
    t = now() - t;
    return (double)iters * 4 * 24 * 4 / t / 1e9;   /* 4 channels x 24 pixels x 4 k */
}
/* The exact 16-bit ceiling: 12 independent vpmaddwd + vpaddd pairs (16 MACs each),
 * operands in registers: what any exact AVX2 INT8 kernel can reach. */
#define PM(a) "vpmaddwd %%ymm12, %%ymm13, %%ymm14\n vpaddd %%ymm14, %%ymm" #a ", %%ymm" #a "\n"
static double peak_madd(long iters) {
    long n = iters;
    double t = now();
    __asm__ volatile("vpxor %%xmm12, %%xmm12, %%xmm12\n vpxor %%xmm13, %%xmm13, %%xmm13\n"
                     "1:\n" PM(0) PM(1) PM(2) PM(3) PM(4) PM(5) PM(6) PM(7) PM(8) PM(9) PM(10)
                         PM(11) "dec %0\n jnz 1b\n"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14");
    t = now() - t;
    return (double)iters * 12 * 16 / t / 1e9;
}
/* vpdpbusd throughput (the DP4A instruction the peak refers to): 12 independent
 * accumulators, 32 (ymm, AVX-VNNI) or 64 (zmm, AVX512-VNNI) MACs each; run only where
 * the CPU has it. */
#define PD(a, R) "%{vex%} vpdpbusd %%" R "12, %%" R "13, %%" R #a "\n"
__attribute__((target("avxvnni"))) static double peak_dpbusd_ymm(long iters) {
    long n = iters;
    double t = now();
    __asm__ volatile("vpxor %%xmm12, %%xmm12, %%xmm12\n vpxor %%xmm13, %%xmm13, %%xmm13\n"
                     "1:\n" PD(0, "ymm") PD(1, "ymm") PD(2, "ymm") PD(3, "ymm") PD(4, "ymm")
                         PD(5, "ymm") PD(6, "ymm") PD(7, "ymm") PD(8, "ymm") PD(9, "ymm")
                             PD(10, "ymm") PD(11, "ymm") "dec %0\n jnz 1b\n"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");
    t = now() - t;
    return (double)iters * 12 * 32 / t / 1e9;
}
#define PZ(a) "vpdpbusd %%zmm12, %%zmm13, %%zmm" #a "\n"
__attribute__((target("avx512f,avx512vnni"))) static double peak_dpbusd_zmm(long iters) {
    long n = iters;
    double t = now();
    __asm__ volatile("vpxord %%zmm12, %%zmm12, %%zmm12\n vpxord %%zmm13, %%zmm13, %%zmm13\n"
                     "1:\n" PZ(0) PZ(1) PZ(2) PZ(3) PZ(4) PZ(5) PZ(6) PZ(7) PZ(8) PZ(9) PZ(10)
                         PZ(11) "dec %0\n jnz 1b\n"
                     : "+r"(n)
                     :
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                       "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");
    t = now() - t;
    return (double)iters * 12 * 64 / t / 1e9;
}

/* AMX tdpbusd throughput: four independent 16x16 int32 tiles from two A and two B tiles
 * (16 x 64 bytes each), 16384 MACs an instruction; 0 where the kernel does not grant the
 * tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): no AMX). */
__attribute__((target("amx-tile,amx-int8"))) static double peak_amx(long iters) {
    static unsigned char cfg[64], tile[1024];
    long n = iters, r;
    double t;
    __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    if (r != 0)
        return 0;
    cfg[0] = 1;
    for (int i = 0; i < 8; i++) {
        cfg[16 + 2 * i] = 64;
        cfg[48 + i] = 16;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
    t = now();
    __asm__ volatile("tilezero %%tmm0\n tilezero %%tmm1\n tilezero %%tmm2\n tilezero %%tmm3\n"
                     "tileloadd (%1,%2,1), %%tmm4\n tileloadd (%1,%2,1), %%tmm5\n"
                     "tileloadd (%1,%2,1), %%tmm6\n tileloadd (%1,%2,1), %%tmm7\n"
                     "1:\n tdpbusd %%tmm6, %%tmm4, %%tmm0\n tdpbusd %%tmm7, %%tmm4, %%tmm1\n"
                     "tdpbusd %%tmm6, %%tmm5, %%tmm2\n tdpbusd %%tmm7, %%tmm5, %%tmm3\n"
                     "dec %0\n jnz 1b\n tilerelease\n"
                     : "+r"(n)
                     : "r"(tile), "r"(64L)
                     : "memory");
    t = now() - t;
    return (double)iters * 4 * 16384 / t / 1e9;
}

/* --amx-overlap: whether the tile unit and the vector epilogue run at the same time, per
 * step of oqci_conv_amxt.c's kernel (32 channels x 32 pixels, reduction K: C tiles loaded
 * from a row table, four tdpbusd, four tile stores) and of its epilogue (16 rq64-like
 * sequences of 14 vector operations on a 4 KB slot, 32-byte stores), each alone and
 * interleaved as the kernel does (dot products, the previous step's epilogue, tile
 * stores).  ns per step, and the GMAC/s K makes of the interleaved time. */
#define OV_F() __asm__ volatile("" : : : "memory")
__attribute__((target("avx512f,avx512bw,amx-tile,amx-int8"), noinline)) static void
ov_epi(const int32_t *s, uint8_t *y) {
    const __m512i ord = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512 m = _mm512_set1_ps(0.01f), c = _mm512_set1_ps(-83886.08f);
    for (int r = 0; r < 32; r += 2) {
        const int32_t *t = s + r * 32;
        __m512i t0 = _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_loadu_si512(t)), m, c));
        __m512i t1 = _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_loadu_si512(t + 16)), m, c));
        __m512i t2 = _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_loadu_si512(t + 32)), m, c));
        __m512i t3 = _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_loadu_si512(t + 48)), m, c));
        __m512i w01 = _mm512_avg_epu16(_mm512_packus_epi32(t0, t1), _mm512_setzero_si512());
        __m512i w23 = _mm512_avg_epu16(_mm512_packus_epi32(t2, t3), _mm512_setzero_si512());
        __m512i b = _mm512_permutexvar_epi32(ord, _mm512_packus_epi16(w01, w23));
        _mm256_storeu_si256((__m256i *)(void *)(y + r * 128), _mm512_castsi512_si256(b));
        _mm256_storeu_si256((__m256i *)(void *)(y + r * 128 + 128), _mm512_extracti64x4_epi64(b, 1));
    }
}
__attribute__((target("avx512f,avx512bw,amx-tile,amx-int8"))) static double
ov_run(int k, int mode, long n) {   /* mode: 1 tiles, 2 epilogue, 3 both */
    static int8_t a[32 * 64] __attribute__((aligned(64)));
    static uint8_t b[16 * 128] __attribute__((aligned(64))), y[32 * 128];
    static int32_t rows[32 * 16] __attribute__((aligned(64))), slot[2][32 * 32] __attribute__((aligned(64)));
    unsigned char cfg[64] = {1};
    double t;
    for (int i = 0; i < 8; i++) {
        cfg[16 + 2 * i] = (unsigned char)(i == 4 || i == 5 ? k : 64);
        cfg[48 + i] = (unsigned char)(i >= 6 ? k / 4 : 16);
    }
    for (int i = 0; i < 32 * 16; i++)
        rows[i] = 0x4B000000;
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 64, 128);
    t = now();
    for (long i = 0; i < n; i++) {
        if (mode & 1) {
            OV_F();
            _tile_loadd(0, rows, 64);
            _tile_loadd(1, rows, 64);
            _tile_loadd(4, a, k);
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(1, 4, 7);
            _tile_loadd(2, rows + 256, 64);
            _tile_loadd(3, rows + 256, 64);
            _tile_loadd(5, a + 16 * k, k);
            _tile_dpbusd(2, 5, 6);
            _tile_dpbusd(3, 5, 7);
            OV_F();
        }
        if (mode & 2)
            ov_epi(slot[(i & 1) ^ 1], y);
        if (mode & 1) {
            OV_F();
            _tile_stored(0, slot[i & 1], 128);
            _tile_stored(1, slot[i & 1] + 16, 128);
            _tile_stored(2, slot[i & 1] + 512, 128);
            _tile_stored(3, slot[i & 1] + 528, 128);
            OV_F();
        }
    }
    t = now() - t;
    __asm__ volatile("tilerelease" : : : "memory");
    return t / (double)n * 1e9;
}
static void amx_overlap(void) {
    long r;
    __builtin_cpu_init();
    __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    if (!__builtin_cpu_supports("avx512vnni") || r != 0) {
        printf("AMX none\n");
        return;
    }
    for (int k = 16; k <= 64; k += 16)   /* (warm-up: the clock rises over the first ms) */
        ov_run(k, 3, 200000);
    printf("per 32x32 step, ns (best of 3): tiles alone, epilogue alone, both; GMAC/s of both\n");
    for (int k = 16; k <= 64; k += 16) {
        double v[4] = {0, 1e9, 1e9, 1e9};
        for (int mode = 1; mode <= 3; mode++)
            for (int rep = 0; rep < 3; rep++) {
                double ns = ov_run(k, mode, 200000);
                v[mode] = ns < v[mode] ? ns : v[mode];
            }
        printf("AMX_OVERLAP K=%d tiles=%.1f epilogue=%.1f both=%.1f gmacs=%.0f\n", k, v[1], v[2],
               v[3], 1024.0 * k / v[3]);
    }
}
#undef OV_F

/* Best of 3 of fn(iters). */
static double best3(double (*fn)(long), long iters) {
    double b = 0;
    for (int r = 0; r < 3; r++) {
        double v = fn(iters);
        b = v > b ? v : b;
    }
    return b;
}

/* The PEAK lines bench/run.sh reads (GMAC/s, one core). */
static void print_peaks(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) {
        printf("PEAK none (no AVX2)\n");
        return;
    }
    printf("PEAK madd_add=%.1f avx2_mix=%.1f maddubs_inexact=%.1f", best3(peak_madd, 20000000),
           best3(peak_avx2, 20000000), best3(peak_maddubs, 20000000));
    if (__builtin_cpu_supports("avxvnni"))
        printf(" vpdpbusd_ymm=%.1f", best3(peak_dpbusd_ymm, 20000000));
    if (__builtin_cpu_supports("avx512vnni"))
        printf(" vpdpbusd_zmm=%.1f", best3(peak_dpbusd_zmm, 20000000));
    if (__builtin_cpu_supports("avx512vnni") && peak_amx(1000) > 0)
        printf(" amx_tdpbusd=%.1f", best3(peak_amx, 2000000));
    printf("\n");
}
#endif

int main(int argc, char **argv) {
    double min_ms = 300;
    const char *only_isa = NULL, *only_layer = NULL;
    int fp32 = 1, wbits = 8, s32 = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-ms") && i + 1 < argc)
            min_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc)
            only_isa = argv[++i];
        else if (!strcmp(argv[i], "--layer") && i + 1 < argc)
            only_layer = argv[++i];
        else if (!strcmp(argv[i], "--weight-bits") && i + 1 < argc)
            wbits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-fp32"))
            fp32 = 0;
        else if (!strcmp(argv[i], "--s32"))
            s32 = 1;
        else if (!strcmp(argv[i], "--amx-overlap")) {
#if defined(__x86_64__) && defined(__GNUC__)
            amx_overlap();
#else
            printf("AMX none (x86-64 only)\n");
#endif
            return 0;
        } else if (!strcmp(argv[i], "--peak")) {
#if defined(__x86_64__) && defined(__GNUC__)
            print_peaks();
#else
            printf("PEAK none (x86-64 only)\n");
#endif
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--min-ms N] [--isa NAME] [--layer SUBSTRING] [--no-fp32]"
                            " [--weight-bits N] [--s32] | --peak | --amx-overlap\n", argv[0]);
            return 2;
        }
    }
    FILE *la = fopen("/proc/loadavg", "r");
    char lbuf[64] = "?";
    if (la) {
        if (!fgets(lbuf, sizeof lbuf, la))
            strcpy(lbuf, "?");
        fclose(la);
        lbuf[strcspn(lbuf, "\n")] = 0;
    }
    printf("int8_conv_bench: single thread, load average %s%s\n", lbuf,
           s32 ? "; accumulator outputs (OQCI_S32)" : "");
    int isas[OQCI_ISA_COUNT], nisa = 0;
    for (int isa = OQCI_ISA_PORTABLE; isa < OQCI_ISA_COUNT; isa++)
        if (oqci_isa_available(isa) && (!only_isa || !strcmp(only_isa, oqci_isa_name(isa))))
            isas[nisa++] = isa;
#if defined(__x86_64__) && defined(__GNUC__)
    if (oqci_isa_available(OQCI_ISA_AVX2)) {
        double pk = 0, pu = 0;
        for (int r = 0; r < 3; r++) {
            double a = peak_avx2(20000000), b = peak_maddubs(20000000);
            pk = a > pk ? a : pk;
            pu = b > pu ? b : pu;
        }
        printf("peak of the q8conv_2x28c4__avx2 mix (registers, L1): %.1f GMAC/s"
               "  (inexact vpmaddubsw mix: %.1f)\n", pk, pu);
    }
#endif
    printf("%-30s %8s %8s", "layer", "MMAC", "scrKB");
    for (int i = 0; i < nisa; i++)
        printf(" %11s", oqci_isa_name(isas[i]));
    printf(" %11s  (GMAC/s; fp32: oqcf_conv GFMA/s; scrKB: oqci_conv_scratch)\n", "fp32");
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        const Layer *L = &layers[li];
        if (only_layer && !strstr(L->name, only_layer))
            continue;
        int wmax = (1 << ((wbits >= 2 && wbits <= 8 ? wbits : 8) - 1)) - 1;
        OqciConv p;
        memset(&p, 0, sizeof p);
        p.batch = 1;
        p.in_c = L->c;
        p.in_h = L->h;
        p.in_w = L->w;
        p.out_c = L->k;
        p.k_h = p.k_w = L->ksize;
        p.s_h = p.s_w = L->stride;
        p.d_h = p.d_w = 1;
        p.p_t = p.p_l = L->pad;
        p.out_h = (L->h + 2 * L->pad - L->ksize) / L->stride + 1;
        p.out_w = (L->w + 2 * L->pad - L->ksize) / L->stride + 1;
        p.group = L->group;
        p.kdim = L->c / L->group * L->ksize * L->ksize;
        p.kpad = (p.kdim + 3) / 4 * 4;
        p.out_ctotal = p.out_c;
        p.in_type = OQCI_U8;
        p.out_type = s32 ? OQCI_S32 : OQCI_U8;
        p.lo = s32 ? INT32_MIN : 0;
        p.hi = s32 ? INT32_MAX : 255;
        size_t nx = (size_t)L->c * L->h * L->w, ny = (size_t)p.out_c * p.out_h * p.out_w;
        uint8_t *x = malloc(nx), *y = malloc(ny * (s32 ? 4 : 1));
        int8_t *w = calloc((size_t)p.out_c * p.kpad, 1);
        int32_t *bias = malloc(sizeof(int32_t) * p.out_c);
        float *mult = malloc(sizeof(float) * p.out_c);
        for (size_t i = 0; i < nx; i++)
            x[i] = (uint8_t)(rnd() % 256);
        for (int k = 0; k < p.out_c; k++) {
            for (int j = 0; j < p.kdim; j++)
                w[(size_t)k * p.kpad + j] = (int8_t)((int)(rnd() % (2 * wmax + 1)) - wmax);
            bias[k] = (int32_t)(rnd() % 20001) - 10000;
            mult[k] = 1.0f / (float)(p.kdim * 200);
        }
        p.w = w;
        p.wpair16 = oqci_conv_wpair16(&p);
        p.bias = bias;
        p.rq.mode = OQCI_REQ_FLOAT;
        p.rq.per_index = 1;
        p.rq.mult = mult;
        size_t ss = oqci_conv_scratch(&p);
        void *scratch = malloc(ss);
        Q8 q = {p, x, y, scratch};
        double macs = (double)ny * p.kdim;
        printf("%-30s %8.1f %8.1f", L->name, macs / 1e6, (double)ss / 1024.0);
        fflush(stdout);
        for (int i = 0; i < nisa; i++) {
            oqci_force_isa(isas[i]);
            double t = time_it(run_q8, &q, min_ms);
            printf(" %11.2f", macs / t / 1e9);
            fflush(stdout);
        }
        oqci_force_isa(OQCI_ISA_AUTO);
        /* FP32 on the same shape */
        F32 f;
        memset(&f, 0, sizeof f);
        f.p.nspatial = 2;
        f.p.batch = 1;
        f.p.channels = L->c;
        f.p.out_channels = L->k;
        f.p.group = L->group;
        f.p.in_size[0] = L->h;
        f.p.in_size[1] = L->w;
        f.p.out_size[0] = p.out_h;
        f.p.out_size[1] = p.out_w;
        for (int a = 0; a < 2; a++) {
            f.p.kernel[a] = L->ksize;
            f.p.stride[a] = L->stride;
            f.p.dilation[a] = 1;
            f.p.pad_begin[a] = L->pad;
            f.p.pad_end[a] = (p.out_h - 1) * L->stride + L->ksize - L->h - L->pad;
            if (f.p.pad_end[a] < 0)
                f.p.pad_end[a] = 0;
        }
        f.p.act.kind = OQCF_ACT_RELU;
        float *fx = malloc(sizeof(float) * nx), *fy = malloc(sizeof(float) * ny);
        float *fw = malloc(sizeof(float) * (size_t)p.out_c * p.kdim), *fb = malloc(sizeof(float) * p.out_c);
        for (size_t i = 0; i < nx; i++)
            fx[i] = (float)x[i] / 255.0f;
        for (size_t i = 0; i < (size_t)p.out_c * p.kdim; i++)
            fw[i] = (float)((int)(rnd() % 255) - 127) / 127.0f;
        for (int k = 0; k < p.out_c; k++)
            fb[k] = 0.1f;
        f.x = fx;
        f.w = fw;
        f.b = fb;
        f.y = fy;
        f.ss = oqcf_conv_scratch_size(&f.p, 1);
        f.scratch = malloc(f.ss ? f.ss : 1);
        if (fp32) {
            double tf = time_it(run_f32, &f, min_ms);
            printf(" %11.2f\n", macs / tf / 1e9);
        } else {
            printf(" %11s\n", "-");
        }
        free(fx);
        free(fy);
        free(fw);
        free(fb);
        free(f.scratch);
        free(x);
        free(y);
        free(w);
        free(bias);
        free(mult);
        free(scratch);
    }
    return 0;
}
