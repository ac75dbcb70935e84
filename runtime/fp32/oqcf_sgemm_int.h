/* oqcf_sgemm_int.h - private to the FP32 matrix product, what its two files share: the
 * driver (oqcf_sgemm.c: blocking, packing, threads, the portable microkernel, the
 * kernel table) and the x86 microkernels (oqcf_sgemm_x86.c).  That is a microkernel
 * call's epilogue (Ukp), the microkernel signatures and a family's blocking (Kernel):
 * a change to any of them changes both files. */
#ifndef OQCF_SGEMM_INT_H
#define OQCF_SGEMM_INT_H

#include "oqcf_nn.h"
#include "oqcf_x86_int.h"   /* (AVX2, act8) */
#include "oqc_isa.h"       /* (the families in preference order: OQC_ISA_TABLE) */

#if defined(__x86_64__) && defined(__GNUC__)
#define OQCF_SGEMM_X86 1
#else
#define OQCF_SGEMM_X86 0
#endif

/* Epilogue of one microkernel call; bias and act are already offset to the tile. */
typedef struct Ukp {
    float alpha;          /* product scale */
    float beta;           /* scale of the old C (0: C not read) */
    OqcfPer bias_per;     /* NONE, ALL, ROW (bias[i]) or COL (bias[j]) */
    const float *bias;    /* bias at the tile origin */
    OqcfPer act_per;      /* NONE, ALL or ROW only (COL goes through the tile buffer) */
    const OqcfAct *act;   /* activations at the tile origin */
} Ukp;

/* One microkernel: c[MR x NR] = epilogue(sum over kc of a panel x b panel).  Element
 * (i, k) of the A panel is a[i * rsa + k * csa]: a packed panel has rsa 1, csa MR; a
 * row-major A read in place has rsa lda, csa 1. */
typedef void (*UkrFn)(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                      float *c, int64_t ldc, const Ukp *e);

/* Edge microkernel for a last B panel with at most NR/2 valid columns: writes the raw
 * MR x NR/2 sums (no epilogue) to tile, row stride NR; b is still an NR-wide panel. */
typedef void (*UkrHalfFn)(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                          const float *b, float *tile);

/* A microkernel reading op(B) in place: row k of the NR-column panel is at b + koff[k]
 * (rows mode of OqcfSgemmB); otherwise as UkrFn. */
typedef void (*UkrRowsFn)(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                          const float *b, const int64_t *koff, float *c, int64_t ldc,
                          const Ukp *e);

/* Stores an m x n tile (raw sums, row stride ldt) to C through the epilogue e (bias and
 * act at the tile origin, act not per column): the edge tiles of a vector family. */
typedef void (*EdgeFn)(const float *tile, int64_t ldt, float *c, int64_t ldc, int64_t m,
                       int64_t n, const Ukp *e);

/* A microkernel family with its blocking. */
typedef struct Kernel {
    OqcfIsa isa;      /* family */
    int mr, nr;       /* register tile */
    int64_t mc;       /* rows of an A block (multiple of mr) */
    int64_t kc;       /* depth of a block */
    int64_t nc;       /* columns of a B block (multiple of nr) */
    UkrFn ukr;        /* the microkernel */
    UkrHalfFn half;   /* half-width edge kernel, or NULL */
    EdgeFn edge;      /* vector edge-tile store, or NULL (scalar epilogue) */
    UkrRowsFn rows;   /* in-place op(B) kernel, or NULL (rows are packed) */
} Kernel;

/* The activations of tile row i: all rows', row i's, or NULL (none, or per column: those
 * tiles go through the scalar epilogue). */
static inline const OqcfAct *ukp_act(const Ukp *e, int64_t i) {
    if (e->act_per == OQCF_PER_ALL)
        return e->act;
    if (e->act_per == OQCF_PER_ROW)
        return e->act + i;
    return NULL;
}

/* The block geometry of every family (isa, mr, nr, mc, kc, nc, as designated
 * initialisers of Kernel), defined once: the
 * kernels use them, and the scratch size is the largest any family needs on any
 * platform, so that oqc computes the same arena on every host (docs/testing.md) and
 * the emitted code gets it wherever it runs. */
#define OQCF_SGEMM_GEOM_C                                                                  \
    .isa = OQCF_ISA_PORTABLE, .mr = 4, .nr = 16, .mc = 128, .kc = 256, .nc = 2048
#define OQCF_SGEMM_GEOM_AVX2                                                               \
    .isa = OQCF_ISA_AVX2, .mr = 6, .nr = 16, .mc = 144, .kc = 256, .nc = 2048
#define OQCF_SGEMM_GEOM_AVX512                                                             \
    .isa = OQCF_ISA_AVX512, .mr = 12, .nr = 32, .mc = 144, .kc = 384, .nc = 2048

#if OQCF_SGEMM_X86
/* The AVX2 + FMA family (6x16) and the AVX-512F family (12x32), oqcf_sgemm_x86.c. */
extern const Kernel oqcfk_sgemm_avx2, oqcfk_sgemm_avx512;
#endif

#endif /* OQCF_SGEMM_INT_H */
