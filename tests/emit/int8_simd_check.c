/* int8_simd_check.c - oqci_conv's kernel families against its portable one, bit for bit,
 * in a program built from runtime/int8/oqci_conv*.c alone (no liboqc), so it can be
 * cross-compiled and run elsewhere: tests/cli/int8_simd_arm.sh builds it for AArch64
 * with the dot-product extension and runs it under qemu-aarch64, and for x86 with
 * -mavx2 (the compile-time selection of the AVX2 family, no OQCI_DISPATCH).
 *
 *     cc -std=c99 -O2 [-march=... | -mavx2] -DOQCI_TEST_HOOKS -Iruntime \
 *        tests/emit/int8_simd_check.c runtime/int8/oqci_conv*.c -o check
 *     ./check FAMILY [CASES]
 *
 * FAMILY names the family the build must choose by itself (oqci_conv_isa() with nothing
 * forced, e.g. "neondot", "avx2", "portable"); every available family then runs the same
 * randomized convolutions as the portable one (odd channel counts and depths, strides,
 * pads, dilations, groups (some of 16-70 channels), depthwise, 1x1, Gemm rows, batches,
 * output views, u8 and s8
 * inputs, both requantization modes, values at the ends of their ranges, a reduction
 * deeper than OQCI_KCHUNK; one case in five with accumulator outputs, OQCI_S32, whose
 * rq holds null pointers) and the outputs are compared byte for byte; the odd cases run
 * in the non-portable families as oqci_conv_par's parts for 3 threads.  Prints one line
 * per family and exits 1 on any difference, 2 on a usage or family error. */
#ifndef OQCI_TEST_HOOKS
#define OQCI_TEST_HOOKS 1   /* oqci_force_isa() (liboqc defines it too) */
#endif
#include "oqci.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void) {   /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

static int32_t rnd_int(int32_t lo, int32_t hi) {
    return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1));
}

/* One convolution with its data. */
typedef struct Case {
    OqciConv p;        /* parameters (w, bias, rq point into the arrays below) */
    uint8_t *x;        /* input */
    int8_t *w;         /* packed weights */
    int32_t *bias;     /* biases or NULL */
    float *mult;       /* float multipliers */
    int32_t *m;        /* fixed multipliers */
    int8_t *shift;     /* fixed shifts */
    size_t ny;         /* output bytes (int32 elements for accumulator outputs) */
} Case;

/* Geometry: N, C, K, group, H, W, kernel, stride, dilation, pads before / after. */
static void geo(OqciConv *p, int N, int C, int K, int g, int H, int W, int kh, int kw, int s,
                int d, int pt, int pl, int pb, int pr) {
    memset(p, 0, sizeof *p);
    p->batch = N;
    p->in_c = C;
    p->out_c = K;
    p->group = g;
    p->in_h = H;
    p->in_w = W;
    p->k_h = kh;
    p->k_w = kw;
    p->s_h = p->s_w = s;
    p->d_h = p->d_w = d;
    p->p_t = pt;
    p->p_l = pl;
    p->out_h = (H + pt + pb - d * (kh - 1) - 1) / s + 1;
    p->out_w = (W + pl + pr - d * (kw - 1) - 1) / s + 1;
    p->kdim = C / g * kh * kw;
    p->kpad = (p->kdim + 3) / 4 * 4;
    p->out_ctotal = K;
}

/* A random shape (t selects the class), or a fixed one. */
static void random_geo(OqciConv *p, int t) {
    int cls = t % 8;
    if (cls == 0) {   /* depthwise 3x3, stride 1 or 2 */
        int c = rnd_int(1, 9), s = rnd_int(1, 2);
        geo(p, rnd_int(1, 2), c, c * rnd_int(1, 2), c, rnd_int(1, 17), rnd_int(1, 40), 3, 3, s,
            1, rnd_int(0, 1), rnd_int(0, 1), rnd_int(0, 1), rnd_int(0, 1));
    } else if (cls == 1) {   /* depthwise, other kernels and dilations */
        int c = rnd_int(1, 5), k = rnd_int(1, 5), d = rnd_int(1, 2);
        int span = d * (k - 1) + 1;
        geo(p, 1, c, c, c, span + rnd_int(0, 9), span + rnd_int(0, 20), k, k, rnd_int(1, 3), d,
            rnd_int(0, 2), rnd_int(0, 2), rnd_int(0, 2), rnd_int(0, 2));
    } else if (cls == 2) {   /* Gemm rows: 1x1 on 1x1 images */
        geo(p, rnd_int(1, 40), rnd_int(1, 300), rnd_int(1, 21), 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);
    } else if (cls == 3) {   /* 1x1, flat or strided */
        geo(p, rnd_int(1, 3), rnd_int(1, 40), rnd_int(1, 30), 1, rnd_int(1, 12), rnd_int(1, 20), 1,
            1, rnd_int(1, 2), 1, 0, 0, 0, 0);
    } else if (cls == 4) {   /* deeper reductions: several K blocks */
        geo(p, 1, rnd_int(60, 200), rnd_int(1, 9), 1, rnd_int(3, 7), rnd_int(3, 9), 3, 3, 1, 1, 1,
            1, 1, 1);
    } else if (cls == 7) {   /* wide groups: 16 to 70 channels (the AMX family's units) */
        int g = rnd_int(1, 2), k = rnd_int(1, 3), s = rnd_int(1, 2);
        geo(p, rnd_int(1, 2), g * rnd_int(1, 40), g * rnd_int(16, 70), g, k + rnd_int(0, 12),
            k + rnd_int(0, 20), k, k, s, 1, rnd_int(0, 1), rnd_int(0, 1), rnd_int(0, 1),
            rnd_int(0, 1));
    } else {   /* general: groups, strides, dilations, pads */
        int g = rnd_int(1, 3), k = rnd_int(1, 4), d = rnd_int(1, 2), s = rnd_int(1, 3);
        int span = d * (k - 1) + 1;
        geo(p, rnd_int(1, 3), g * rnd_int(1, 6), g * rnd_int(1, 9), g, span + rnd_int(0, 9),
            span + rnd_int(0, 30), k, k, s, d, rnd_int(0, 2), rnd_int(0, 2), rnd_int(0, 2),
            rnd_int(0, 2));
    }
}

/* Fills the data: kind 0 random; 1 inputs at the top of the range and weights all +-127
 * (sums that would saturate 16-bit pairs); 2 inputs at both ends (s8: -128 too); 3
 * 7-bit weights (+-63, so wpair16: AVX2's vpmaddubsw family) against inputs mostly at
 * the top of the range.  wpair16 is set as the compiler sets it (oqci_conv_wpair16).
 * s32: accumulator outputs (OQCI_S32) with no clamp, a ReLU or a narrow clamp, and an
 * rq that must not be read (null pointers, mode requantization mode or invalid). */
static int make_case(Case *c, int kind, int in_type, int mode, int s32) {
    OqciConv *p = &c->p;
    int64_t nx = (int64_t)p->batch * p->in_c * p->in_h * p->in_w, i;
    int32_t k, j;
    if (p->out_h < 1 || p->out_w < 1)
        return 0;
    p->in_type = in_type;
    p->out_type = rnd_int(0, 1);
    p->lo = p->out_type == OQCI_U8 ? 0 : rnd_int(0, 1) ? 0 : -127;
    p->hi = p->out_type == OQCI_U8 ? 255 : 127;
    if (s32) {
        int ck = rnd_int(0, 2);
        p->out_type = OQCI_S32;
        p->lo = ck == 0 ? INT32_MIN : ck == 1 ? 0 : -rnd_int(0, 50000);
        p->hi = ck == 2 ? p->lo + rnd_int(0, 100000) : INT32_MAX;
    }
    if (rnd_int(0, 3) == 0) {   /* an output view */
        p->out_coff = rnd_int(0, 2);
        p->out_ctotal = p->out_c + p->out_coff + rnd_int(0, 2);
    }
    c->ny = (size_t)p->batch * (size_t)p->out_ctotal * (size_t)p->out_h * (size_t)p->out_w *
            (s32 ? 4 : 1);
    c->x = malloc((size_t)nx);
    c->w = calloc((size_t)p->out_c * (size_t)p->kpad, 1);
    c->mult = malloc(sizeof(float) * (size_t)p->out_c);
    c->m = malloc(sizeof(int32_t) * (size_t)p->out_c);
    c->shift = malloc((size_t)p->out_c);
    c->bias = rnd_int(0, 3) ? malloc(sizeof(int32_t) * (size_t)p->out_c) : NULL;
    for (i = 0; i < nx; i++) {
        int32_t v = in_type == OQCI_U8 ? rnd_int(0, 255) : rnd_int(-127, 127);
        if (kind == 1 || (kind == 3 && i % 4))
            v = in_type == OQCI_U8 ? 255 : 127;
        else if (kind == 2)
            v = in_type == OQCI_U8 ? (rnd_int(0, 1) ? 255 : 0) : (rnd_int(0, 1) ? 127 : -128);
        c->x[i] = (uint8_t)v;
    }
    for (k = 0; k < p->out_c; k++) {
        int sign = rnd_int(0, 1) ? 1 : -1;
        double typ = 73.0 * (in_type == OQCI_U8 ? 147.0 : 73.0);
        for (j = 0; j < p->kdim; j++)
            c->w[(size_t)k * p->kpad + j] =
                (int8_t)(kind == 0   ? rnd_int(-127, 127)
                         : kind == 1 ? 127 * sign
                         : kind == 3 ? (rnd_int(0, 3) ? 63 * sign : rnd_int(-63, 63))
                                     : (rnd_int(0, 1) ? 127 : -127));
        if (c->bias)
            c->bias[k] = kind == 2 && k % 3 == 0 ? (k % 2 ? INT32_MAX - 7 : INT32_MIN + 7)
                                                  : rnd_int(-20000, 20000);
        /* multipliers putting typical sums in range: about 60 / (sqrt(kdim) * typ) */
        {
            double sq = 1.0;
            while (sq * sq < p->kdim)
                sq += 1.0;
            c->mult[k] = (float)((0.5 + (rnd() % 1000) / 1000.0) * 60.0 / (sq * typ) *
                                 (kind ? 0.05 : 1.0));
        }
        c->m[k] = (int32_t)((0x40000000u + (rnd() >> 2)) & ~127u);   /* (a float32's bits) */
        c->shift[k] = (int8_t)rnd_int(24, 40);
    }
    p->w = c->w;
    p->wpair16 = oqci_conv_wpair16(p);
    p->bias = c->bias;
    p->rq.mode = mode;
    p->rq.per_index = 1;
    p->rq.mult = c->mult;
    p->rq.m = c->m;
    p->rq.shift = c->shift;
    if (s32) {
        p->rq.mode = rnd_int(0, 1) ? mode : 77;
        p->rq.mult = NULL;
        p->rq.m = NULL;
        p->rq.shift = NULL;
    }
    return 1;
}

static void free_case(Case *c) {
    free(c->x);
    free(c->w);
    free(c->bias);
    free(c->mult);
    free(c->m);
    free(c->shift);
}

/* A parallel-for that runs the tasks one after another, last first (any order must give
 * the same bits). */
static void reverse_for(void *ctx, void (*task)(void *arg, int i), void *arg, int n) {
    int i;
    (void)ctx;
    for (i = n - 1; i >= 0; i--)
        task(arg, i);
}

/* Output of family isa (0: AUTO) into a fresh buffer, by oqci_conv or, with threads > 1,
 * by oqci_conv_par's parts (reverse_for); NULL on a kernel error or a write past the
 * scratch this build needs (oqci_conv_par_scratch_noamx without the AMX family, which
 * for one thread is oqci_conv_scratch_noamx: 64 guard bytes after it must stay as they
 * were). */
static uint8_t *run(const Case *c, int isa, int threads) {
    uint8_t *y = malloc(c->ny ? c->ny : 1);
    size_t need = oqci_conv_amx_build() ? oqci_conv_par_scratch(&c->p, threads)
                                        : oqci_conv_par_scratch_noamx(&c->p, threads),
           i;
    unsigned char *s = malloc(need + 64);
    int st;
    memset(y, 0x5A, c->ny);
    memset(s + need, 0xC3, 64);
    if (oqci_force_isa(isa) != OQCI_OK) {
        free(y);
        free(s);
        return NULL;
    }
    st = threads > 1 ? oqci_conv_par(&c->p, c->x, y, s, threads, reverse_for, NULL)
                     : oqci_conv(&c->p, c->x, y, s);
    oqci_force_isa(OQCI_ISA_AUTO);
    for (i = 0; i < 64; i++)
        if (s[need + i] != 0xC3) {
            fprintf(stderr, "int8_simd_check: family %d wrote past its %lu scratch bytes\n",
                    isa, (unsigned long)need);
            st = OQCI_EINVAL;
            break;
        }
    free(s);
    if (st != OQCI_OK) {
        free(y);
        return NULL;
    }
    return y;
}

int main(int argc, char **argv) {
    int ncases = argc > 2 ? atoi(argv[2]) : 400, t, isa, fails = 0;
    int64_t cases[OQCI_ISA_COUNT] = {0}, bad[OQCI_ISA_COUNT] = {0}, split = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FAMILY [CASES]\n", argv[0]);
        return 2;
    }
    if (strcmp(oqci_isa_name(oqci_conv_isa()), argv[1]) != 0) {
        fprintf(stderr, "int8_simd_check: this build chose family %s, not %s\n",
                oqci_isa_name(oqci_conv_isa()), argv[1]);
        return 2;
    }
    for (t = 0; t < ncases + 5; t++) {   /* (the last 5: deep reductions) */
        Case c;
        uint8_t *ref;
        int kind = t % 7 == 3 ? 1 : t % 7 == 5 ? 2 : t % 7 == 6 ? 3 : 0;
        int s32 = t < ncases ? t % 5 == 1 : t >= ncases + 3;   /* accumulator outputs */
        memset(&c, 0, sizeof c);
        if (t < ncases) {
            random_geo(&c.p, t);
        } else if (t < ncases + 2 || t == ncases + 3) {   /* deeper than OQCI_KCHUNK, 9 Gemm
                                                           * rows: panels */
            geo(&c.p, 9, 66000, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);
            kind = 0;   /* outputs in range: they show any error in the sums */
        } else {   /* one row (the dot-product path), sums beyond int32 */
            geo(&c.p, 1, 70001, 5, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0);
            kind = 1;
        }
        if (!make_case(&c, kind, t % 2 ? OQCI_U8 : OQCI_S8,
                       (t / 2) % 2 ? OQCI_REQ_FIXED : OQCI_REQ_FLOAT, s32))
            continue;
        ref = run(&c, OQCI_ISA_PORTABLE, 1);
        if (!ref) {
            fprintf(stderr, "int8_simd_check: portable kernel failed on case %d\n", t);
            return 2;
        }
        for (isa = OQCI_ISA_PORTABLE + 1; isa < OQCI_ISA_COUNT; isa++) {
            uint8_t *y;
            if (!oqci_isa_available(isa))
                continue;
            y = run(&c, isa, t % 2 ? 3 : 1);   /* (odd cases: in parts, see below) */
            cases[isa]++;
            if (!y || memcmp(y, ref, c.ny) != 0) {
                if (bad[isa]++ < 5)
                    printf("MISMATCH %s case %d: N=%d C=%d K=%d g=%d %dx%d k=%dx%d s=%d d=%d "
                           "p=%d,%d in %d out %d mode %d\n",
                           oqci_isa_name(isa), t, c.p.batch, c.p.in_c, c.p.out_c, c.p.group,
                           c.p.in_h, c.p.in_w, c.p.k_h, c.p.k_w, c.p.s_h, c.p.d_h, c.p.p_t,
                           c.p.p_l, c.p.in_type, c.p.out_type, c.p.rq.mode);
            }
            free(y);
        }
        cases[OQCI_ISA_PORTABLE]++;
        split += t % 2 && oqci_conv_parts(&c.p, 3) > 1;
        free(ref);
        free_case(&c);
    }
    /* Built with a small OQCI_PAR_MIN_MACS (int8_simd_arm.sh: 64), the odd cases split
     * into parts (by channel runs, rows, groups, images) that the families run in turn. */
    printf("int8_simd_check: %lld cases run in 2 or 3 parts (oqci_conv_par)\n",
           (long long)split);
    for (isa = OQCI_ISA_PORTABLE; isa < OQCI_ISA_COUNT; isa++) {
        if (!oqci_isa_available(isa))
            continue;
        printf("int8_simd_check: %-10s %lld cases, %lld differ from portable%s\n",
               oqci_isa_name(isa), (long long)cases[isa], (long long)bad[isa],
               isa == OQCI_ISA_PORTABLE ? " (the reference)" : "");
        fails += bad[isa] != 0;
    }
    return fails ? 1 : 0;
}
