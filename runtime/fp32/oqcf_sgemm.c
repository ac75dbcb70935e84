/* oqcf_sgemm.c - the one FP32 matrix product of oqc's kernels (see oqcf_nn.h).
 *
 * Design (GotoBLAS / BLIS):
 *
 *   for jc over N in steps of NC          (per thread: its own column range)
 *     for pc over K in steps of KC
 *       for ic over M in steps of MC                         (A block: L2)
 *         [A stored K x M: pack op(A)[ic.., pc..] into MR-row panels]
 *         for jr over the block's NR-column panels of op(B)  (B panel: L1)
 *           [first ic only: pack the next B_CHUNK panels of op(B)[pc.., jc..]]
 *           for ir over the block's MR-row panels
 *             microkernel: MR x NR tile += A panel * B panel (registers)
 *
 * Deviations from the textbook, for conv-shaped problems:
 *   - A stored M x K (the usual case: Conv weights, Gemm without transA) is not packed:
 *     the microkernel broadcasts straight from its MR rows (rows lda apart, like
 *     MLAS).  Only a last partial MR panel is packed (with zero rows) so nothing past
 *     row M is read.  (Packing A would be a large share of the time when N is small, as
 *     in 7x7 convs.)
 *   - B panels are packed B_CHUNK at a time right before the first A block uses them,
 *     so they are still in cache; later A blocks reuse the packed block.
 *   - A product with M == 1 or N == 1 (oqcf_sgemm only) skips packing altogether: it
 *     is memory-bound, and runs as dot products or row updates (gemv_fn).
 *   - A last B panel with at most NR/2 valid columns uses a half-width kernel
 *     (N = 49 for a 7x7 output: 3 full panels + 1 column).
 *   - op(B) given as rows (OqcfSgemmB.rows, koff: Conv's 1x1 and flat-offset paths) is
 *     read in place by `ukr_6x16r__avx2` when a thread's block has at most ROWS_MAX_M
 *     rows: a packed panel would then serve too few microkernel calls to pay for its
 *     packing (from ~128 rows up packing wins: its panels are aligned and contiguous).  A last panel cut by column N is still packed.
 *
 * The microkernel applies the epilogue when it writes its tile: alpha, beta (on the
 * first K block only; later blocks accumulate), and on the last K block the bias and
 * the activation.  Tiles cut by the edge of C go through a tile buffer and an edge
 * store (`edge__avx2`: masked vectors, for the AVX2 and AVX-512 families; the scalar
 * epilogue_scalar for the portable one and for activations indexed per column).
 *
 * Microkernels: `ukr_4x16__c` (portable, left to the compiler's vectoriser) here, and in
 * oqcf_sgemm_x86.c `ukr_6x16__avx2` (AVX2 + FMA: 12 ymm accumulators, edge `ukr_6x8__avx2`) and
 * `ukr_12x32__avx512` (AVX-512F: 24 zmm accumulators, edge `ukr_12x16__avx512`).  The
 * x86 ones use target attributes, so the file needs no -m flags, and are chosen at run
 * time with __builtin_cpu_supports; oqcf_sgemm_force_isa() overrides the choice in
 * builds with OQCF_TEST_HOOKS defined (the library's; see below).
 *
 * Threads: the M x N result is cut into a tm x tn grid of tile-aligned blocks, one per
 * thread, chosen to minimise the largest block's compute plus its packing; each thread
 * runs the loops above on its block with its own pack buffers.
 *
 * op(B) comes from a packer callback (OqcfSgemmB) so Conv can pack straight from the
 * image, or as rows; oqcf_sgemm() wraps a dense matrix in the packer pack_dense_b(). */
#include "oqcf_nn.h"
#include "oqcf_sgemm_int.h"   /* (Ukp, Kernel, the x86 families) */

#include <string.h>

/* The forced-ISA override (oqcf_sgemm_force_isa) is the file's only mutable state, so
 * it exists only in builds defining OQCF_TEST_HOOKS (liboqc, for its tests and
 * benchmarks; that build is C11).  The copy emitted next to a model is C99 and has no
 * mutable global: there oqcf_sgemm_force_isa accepts only OQCF_ISA_AUTO. */
#ifdef OQCF_TEST_HOOKS
#include <stdatomic.h>
#endif


#define MR_MAX 12    /* largest microkernel tile, for tile buffers */
#define NR_MAX 32
#define ALIGN 64     /* pack buffers start on a cache line */
#define B_CHUNK 16   /* B panels packed per packer call (just before their first use) */
#define ROWS_MAX_M 120   /* rows of a block above which rows-mode B is packed anyway */

/* Alignment of a local buffer to a cache line: C99 has no _Alignas, GNU C's attribute
 * does the same (the buffer is only read and written with unaligned vector accesses, so
 * a compiler with neither merely loses the cache-line alignment). */
#if defined(__GNUC__)
#define OQCF_ALIGNED(n) __attribute__((aligned(n)))
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define OQCF_ALIGNED(n) _Alignas(n)
#else
#define OQCF_ALIGNED(n)
#endif

/* ---- scalar epilogue (edges, per-column activations, portable kernel) ---------- */

/* Full epilogue indexing, for the scalar path: offsets of the tile inside C. */
typedef struct EpiFull {
    float alpha, beta;              /* as in Ukp */
    const OqcfSgemmEpilogue *epi;   /* user epilogue (may be NULL) */
    int final;                      /* last K block: apply bias and activation */
    int fused;                      /* beta * C fused into the sum (the x86 families) */
} EpiFull;

#if OQCF_SGEMM_X86

/* beta * c + v rounded once, as the vector epilogues' fmadd. */
AVX2 static float fused_beta(float beta, float c, float v) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(beta), _mm_set_ss(c), _mm_set_ss(v)));
}
#endif

static void epilogue_scalar(const float *t, int64_t ldt, float *c, int64_t ldc, int64_t i0,
                            int64_t j0, int64_t m, int64_t n, const EpiFull *f) {
    const OqcfSgemmEpilogue *u = f->final ? f->epi : NULL;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            float v = f->alpha * t[i * ldt + j];
            if (f->beta != 0.0f) {
#if OQCF_SGEMM_X86
                if (f->fused)
                    v = fused_beta(f->beta, c[i * ldc + j], v);
                else
#endif
                    v += f->beta * c[i * ldc + j];
            }
            if (u) {
                switch (u->bias_per) {
                case OQCF_PER_ALL: v += u->bias[0]; break;
                case OQCF_PER_ROW: v += u->bias[i0 + i]; break;
                case OQCF_PER_COL: v += u->bias[j0 + j]; break;
                default: break;
                }
                switch (u->act_per) {
                case OQCF_PER_ALL: v = oqcf_act_apply(&u->act[0], v); break;
                case OQCF_PER_ROW: v = oqcf_act_apply(&u->act[i0 + i], v); break;
                case OQCF_PER_COL: v = oqcf_act_apply(&u->act[j0 + j], v); break;
                default: break;
                }
            }
            c[i * ldc + j] = v;
        }
    }
}

/* ---- portable microkernel ----------------------------------------------------------- */

static void ukr_4x16__c(int64_t kc, const float *restrict a, int64_t rsa, int64_t csa,
                        const float *restrict b, float *restrict c, int64_t ldc, const Ukp *e) {
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int64_t k = 0; k < kc; k++, a += csa, b += 16)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 16; j++)
                acc[i][j] += a[i * rsa] * b[j];
    for (int i = 0; i < 4; i++) {
        const OqcfAct *act = ukp_act(e, i);
        for (int j = 0; j < 16; j++) {
            float v = e->alpha * acc[i][j];
            if (e->beta != 0.0f)
                v += e->beta * c[i * ldc + j];
            if (e->bias_per == OQCF_PER_ALL)
                v += e->bias[0];
            else if (e->bias_per == OQCF_PER_ROW)
                v += e->bias[i];
            else if (e->bias_per == OQCF_PER_COL)
                v += e->bias[j];
            c[i * ldc + j] = act ? oqcf_act_apply(act, v) : v;
        }
    }
}
/* ---- kernel table and selection -------------------------------------------------- */

static const Kernel kernel_c = {OQCF_SGEMM_GEOM_C, .ukr = ukr_4x16__c};
#if OQCF_SGEMM_X86
static const Kernel *const all_kernels[] = {&kernel_c, &oqcfk_sgemm_avx2, &oqcfk_sgemm_avx512};
#else
static const Kernel *const all_kernels[] = {&kernel_c};
#endif
#define NKERNELS ((int)(sizeof all_kernels / sizeof all_kernels[0]))

#ifdef OQCF_TEST_HOOKS
static atomic_int forced_isa;   /* OQCF_ISA_AUTO until oqcf_sgemm_force_isa() */
#endif

int oqcf_sgemm_isa_supported(OqcfIsa isa) {
    switch (isa) {
    case OQCF_ISA_AUTO:
    case OQCF_ISA_PORTABLE:
        return 1;
#if OQCF_SGEMM_X86
    case OQCF_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case OQCF_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") != 0;
#endif
    default:
        return 0;
    }
}

int oqcf_sgemm_force_isa(OqcfIsa isa) {
#ifdef OQCF_TEST_HOOKS
    if (!oqcf_sgemm_isa_supported(isa))
        return OQCF_EINVAL;
    atomic_store(&forced_isa, (int)isa);
    return OQCF_OK;
#else
    return isa == OQCF_ISA_AUTO ? OQCF_OK : OQCF_EINVAL;
#endif
}

/* The FP32 families of the ISA table (oqc_isa.h), in ascending preference (-1: a row
 * without one). */
#define FP32_ROW(name, int8, fp32, x86, flags, files) fp32,
static const int fp32_rows[] = {OQC_ISA_TABLE(FP32_ROW)};
#undef FP32_ROW

/* The kernel of family isa this build has, or NULL. */
static const Kernel *kernel_of(int isa) {
    for (int i = 0; i < NKERNELS; i++)
        if ((int)all_kernels[i]->isa == isa)
            return all_kernels[i];
    return NULL;
}

/* The forced family, else the most preferred one this build has and the CPU runs. */
static const Kernel *pick_kernel(void) {
#ifdef OQCF_TEST_HOOKS
    int f = atomic_load(&forced_isa);
#else
    const int f = OQCF_ISA_AUTO;
#endif
    for (int i = (int)(sizeof fp32_rows / sizeof fp32_rows[0]) - 1; i >= 0; i--) {
        int isa = fp32_rows[i];
        const Kernel *k = isa > OQCF_ISA_AUTO ? kernel_of(isa) : NULL;
        if (k && (f == OQCF_ISA_AUTO ? oqcf_sgemm_isa_supported(k->isa) : isa == f))
            return k;
    }
    return &kernel_c;
}

OqcfIsa oqcf_sgemm_isa(void) {
    return pick_kernel()->isa;
}

/* ---- blocking and scratch --------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

static int64_t round_up(int64_t a, int64_t b) {
    return ceil_div(a, b) * b;
}

/* Depth of the K blocks: at most kc, balanced so the last block is not tiny. */
static int64_t block_k(const Kernel *kr, int64_t K) {
    int64_t nb = ceil_div(K, kr->kc);
    return nb ? ceil_div(K, nb) : 0;
}

/* Floats of one thread's pack buffers for a block of at most m x n. */
static void pack_floats(const Kernel *kr, int64_t m, int64_t n, int64_t K, int64_t *fa,
                        int64_t *fb) {
    int64_t kc = block_k(kr, K);
    int64_t mc = m < kr->mc ? round_up(m, kr->mr) : kr->mc;
    int64_t nc = n < kr->nc ? round_up(n, kr->nr) : kr->nc;
    *fa = round_up(mc * kc, ALIGN / 4);
    *fb = round_up(kc * nc, ALIGN / 4);
}

/* One thread's pack buffers: the most any family needs, on x86-64 or not (the families
 * this build lacks count too: oqc's arena sizes must not depend on its host). */
static size_t per_thread_bytes(int64_t M, int64_t N, int64_t K) {
    static const Kernel geoms[] = {
        {OQCF_SGEMM_GEOM_C}, {OQCF_SGEMM_GEOM_AVX2}, {OQCF_SGEMM_GEOM_AVX512}};
    size_t best = 0;
    for (int i = 0; i < (int)(sizeof geoms / sizeof geoms[0]); i++) {
        int64_t fa, fb;
        pack_floats(&geoms[i], M, N, K, &fa, &fb);
        size_t s = (size_t)(fa + fb) * sizeof(float);
        if (s > best)
            best = s;
    }
    return best;
}

size_t oqcf_sgemm_scratch_size(int64_t M, int64_t N, int64_t K, int nthreads) {
    if (M <= 0 || N <= 0 || K <= 0)
        return 0;
    if (nthreads < 1)
        nthreads = 1;
    return (size_t)nthreads * per_thread_bytes(M, N, K) + ALIGN;
}

/* ---- packing -------------------------------------------------------------------- */

/* Packs rows [i0, i0+m) x columns [k0, k0+kc) of op(A) as MR-row panels. */
static void pack_a(int mr, int trans, const float *A, int64_t lda, int64_t i0, int64_t m,
                   int64_t k0, int64_t kc, float *dst) {
    for (int64_t ip = 0; ip < m; ip += mr, dst += mr * kc) {
        int64_t rows = m - ip < mr ? m - ip : mr;
        if (!trans) {
            for (int64_t i = 0; i < rows; i++) {
                const float *src = A + (i0 + ip + i) * lda + k0;
                for (int64_t k = 0; k < kc; k++)
                    dst[k * mr + i] = src[k];
            }
        } else {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = A + (k0 + k) * lda + i0 + ip;
                for (int64_t i = 0; i < rows; i++)
                    dst[k * mr + i] = src[i];
            }
        }
        for (int64_t i = rows; i < mr; i++)
            for (int64_t k = 0; k < kc; k++)
                dst[k * mr + i] = 0.0f;
    }
}

/* op(B) as a dense matrix, for oqcf_sgemm. */
typedef struct DenseB {
    const float *B;   /* matrix as stored */
    int64_t ldb;      /* its leading dimension */
    int trans;        /* B is stored N x K */
} DenseB;

/* Copies one panel row of n floats; fixed sizes for the kernels' widths (the compiler
 * inlines those; a variable-size memcpy is a library call costing more than the copy). */
static inline void copy_panel_row(float *restrict d, const float *restrict s, int n) {
    if (n == 16)
        memcpy(d, s, 16 * sizeof(float));
    else if (n == 32)
        memcpy(d, s, 32 * sizeof(float));
    else
        for (int j = 0; j < n; j++)
            d[j] = s[j];
}

static void pack_dense_b(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                         int nr, float *dst) {
    const DenseB *d = ctx;
    if (!d->trans) {
        /* Row by row of B: each row is read sequentially (prefetch-friendly) and
         * scattered to the panels; panel-by-panel reading would touch a new cache
         * line, often a new page, for every k. */
        int64_t full = nc / nr, rest = nc % nr;
        for (int64_t k = 0; k < kc; k++) {
            const float *src = d->B + (k0 + k) * d->ldb + j0;
            float *o = dst + k * nr;
            for (int64_t p = 0; p < full; p++, src += nr, o += kc * nr)
                copy_panel_row(o, src, nr);
            if (rest) {
                for (int64_t j = 0; j < rest; j++)
                    o[j] = src[j];
                for (int64_t j = rest; j < nr; j++)
                    o[j] = 0.0f;
            }
        }
        return;
    }
    for (int64_t jp = 0; jp < nc; jp += nr, dst += nr * kc) {
        int64_t cols = nc - jp < nr ? nc - jp : nr;
        for (int64_t j = 0; j < cols; j++) {
            const float *src = d->B + (j0 + jp + j) * d->ldb + k0;
            for (int64_t k = 0; k < kc; k++)
                dst[k * nr + j] = src[k];
        }
        for (int64_t j = cols; j < nr; j++)
            for (int64_t k = 0; k < kc; k++)
                dst[k * nr + j] = 0.0f;
    }
}

/* Packer of op(B) given as rows (ctx: the OqcfSgemmB): row by row, as pack_dense_b.
 * The vector kernels only use it for a last panel cut by column N; other families
 * for everything. */
static void pack_rows_b(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                        int nr, float *dst) {
    const OqcfSgemmB *b = ctx;
    int64_t full = nc / nr, rest = nc % nr;
    for (int64_t k = 0; k < kc; k++) {
        const float *src = b->rows + b->koff[k0 + k] + j0;
        float *o = dst + k * nr;
        for (int64_t p = 0; p < full; p++, src += nr, o += kc * nr)
            copy_panel_row(o, src, nr);
        if (rest) {
            for (int64_t j = 0; j < rest; j++)
                o[j] = src[j];
            for (int64_t j = rest; j < nr; j++)
                o[j] = 0.0f;
        }
    }
}

/* ---- the blocked product on one thread's block ------------------------------------- */

/* Everything a thread needs; shared read-only by all threads. */
typedef struct Job {
    const Kernel *kr;               /* microkernel family */
    int trans_a;                    /* A stored K x M */
    int64_t M, N, K;                /* problem */
    float alpha, beta;              /* scales */
    const float *A;                 /* op(A) source */
    int64_t lda;                    /* its leading dimension */
    const OqcfSgemmB *B;            /* op(B) packer (rows mode: pack_rows_b) */
    const OqcfSgemmB *rows;         /* rows mode, read in place by kr->rows; or NULL */
    float *C;                       /* result */
    int64_t ldc;                    /* its leading dimension */
    const OqcfSgemmEpilogue *epi;   /* user epilogue, NULL if none */
    int tm, tn;                     /* thread grid */
    int64_t mtiles, ntiles;         /* MR tiles and NR tiles of the problem */
    float *bufs;                    /* aligned pack buffers, per block */
    int64_t fa, fb;                 /* floats of one block's A and B buffers */
} Job;

/* The microkernel epilogue of the tile at (i, j): alpha, beta, and on the last K block
 * the user's bias and activation offset to the tile (activations not per column). */
static Ukp tile_epi(const EpiFull *f, int64_t i, int64_t j) {
    Ukp e = {f->alpha, f->beta, OQCF_PER_NONE, NULL, OQCF_PER_NONE, NULL};
    const OqcfSgemmEpilogue *u = f->epi;
    if (f->final && u) {
        e.bias_per = u->bias_per;
        e.bias = u->bias_per == OQCF_PER_ROW   ? u->bias + i
                 : u->bias_per == OQCF_PER_COL ? u->bias + j
                                               : u->bias;
        e.act_per = u->act_per;
        e.act = u->act_per == OQCF_PER_ROW ? u->act + i : u->act;
    }
    return e;
}

static void run_block(const Job *J, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                      float *abuf, float *bbuf) {
    const Kernel *kr = J->kr;
    const int mr = kr->mr, nr = kr->nr;
    const OqcfSgemmEpilogue *u = J->epi;
    int per_col_act = u && u->act_per == OQCF_PER_COL;
    /* Rows read in place when this block has few rows: a packed panel would serve at
     * most ROWS_MAX_M / mr microkernel calls, too few to pay for its packing (a packed
     * panel is read faster: aligned and contiguous). */
    const OqcfSgemmB *rows = i1 - i0 <= ROWS_MAX_M ? J->rows : NULL;
    int64_t kcb = block_k(kr, J->K);
    OQCF_ALIGNED(ALIGN) float tile[MR_MAX * NR_MAX];
    for (int64_t jc = j0; jc < j1; jc += kr->nc) {
        int64_t nc = j1 - jc < kr->nc ? j1 - jc : kr->nc;
        for (int64_t pc = 0; pc < J->K; pc += kcb) {
            int64_t kc = J->K - pc < kcb ? J->K - pc : kcb;
            int first = pc == 0, final = pc + kc == J->K;
            EpiFull ef = {J->alpha, first ? J->beta : 1.0f, u, final,
                          kr->isa != OQCF_ISA_PORTABLE};
            for (int64_t ic = i0; ic < i1; ic += kr->mc) {
                int64_t mc = i1 - ic < kr->mc ? i1 - ic : kr->mc;
                /* A stored M x K is read in place (rows lda apart) except for a last
                 * partial panel, packed with zero rows so the kernel reads no further. */
                int64_t mfull = mc - mc % mr;
                if (J->trans_a)
                    pack_a(mr, 1, J->A, J->lda, ic, mc, pc, kc, abuf);
                else if (mfull < mc)
                    pack_a(mr, 0, J->A, J->lda, ic + mfull, mc - mfull, pc, kc, abuf);
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int64_t n = nc - jr < nr ? nc - jr : nr;
                    int64_t j = jc + jr;
                    const float *bp = bbuf + jr * kc;
                    /* B is packed a few panels at a time just before its first use (by
                     * the first A block), so those panels are still in L1/L2 when the
                     * kernel reads them (GotoBLAS); later A blocks reuse them.  In rows
                     * mode only a last panel cut by column N is packed. */
                    int in_place = rows && n == nr;
                    if (rows) {
                        if (!in_place && ic == i0)
                            J->B->pack(J->B->ctx, pc, kc, j, n, nr, bbuf + jr * kc);
                    } else if (ic == i0 && jr % (B_CHUNK * nr) == 0) {
                        int64_t cn = nc - jr < B_CHUNK * nr ? nc - jr : B_CHUNK * nr;
                        J->B->pack(J->B->ctx, pc, kc, j, cn, nr, bbuf + jr * kc);
                    }
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        int64_t m = mc - ir < mr ? mc - ir : mr;
                        int64_t i = ic + ir;
                        const float *ap = abuf + ir * kc;
                        int64_t rsa = 1, csa = mr;
                        if (!J->trans_a && m == mr) {
                            ap = J->A + i * J->lda + pc;
                            rsa = J->lda;
                            csa = 1;
                        } else if (!J->trans_a) {
                            ap = abuf;
                        }
                        float *c = J->C + i * J->ldc + j;
                        if (m == mr && n == nr && !(final && per_col_act)) {
                            Ukp e = tile_epi(&ef, i, j);
                            if (in_place)
                                kr->rows(kc, ap, rsa, csa, rows->rows + j, rows->koff + pc, c,
                                         J->ldc, &e);
                            else
                                kr->ukr(kc, ap, rsa, csa, bp, c, J->ldc, &e);
                        } else {
                            Ukp raw = {1.0f, 0.0f, OQCF_PER_NONE, NULL, OQCF_PER_NONE, NULL};
                            if (in_place)
                                kr->rows(kc, ap, rsa, csa, rows->rows + j, rows->koff + pc,
                                         tile, nr, &raw);
                            else if (kr->half && n <= nr / 2)
                                kr->half(kc, ap, rsa, csa, bp, tile);
                            else
                                kr->ukr(kc, ap, rsa, csa, bp, tile, nr, &raw);
                            if (kr->edge && !(final && per_col_act)) {
                                Ukp e = tile_epi(&ef, i, j);
                                kr->edge(tile, nr, c, J->ldc, m, n, &e);
                            } else {
                                epilogue_scalar(tile, nr, c, J->ldc, i, j, m, n, &ef);
                            }
                        }
                    }
                }
            }
        }
    }
}

static void job_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const Job *J = ctx;
    (void)tid;
    for (int64_t t = begin; t < end; t++) {
        int64_t ti = t / J->tn, tj = t % J->tn;
        int64_t i0 = J->mtiles * ti / J->tm * J->kr->mr;
        int64_t i1 = J->mtiles * (ti + 1) / J->tm * J->kr->mr;
        int64_t j0 = J->ntiles * tj / J->tn * J->kr->nr;
        int64_t j1 = J->ntiles * (tj + 1) / J->tn * J->kr->nr;
        if (i1 > J->M)
            i1 = J->M;
        if (j1 > J->N)
            j1 = J->N;
        if (i0 >= i1 || j0 >= j1)
            continue;
        float *abuf = J->bufs + t * (J->fa + J->fb);
        run_block(J, i0, i1, j0, j1, abuf, abuf + J->fa);
    }
}

/* Chooses the thread grid tm x tn (tm * tn <= T) minimising the largest block's work:
 * its multiply-adds plus (weighted) the elements it packs. */
static void choose_grid(const Job *J, int T, int *tm_out, int *tn_out) {
    const double pack_cost = 8.0;   /* a packed element costs about 8 multiply-adds */
    double best = -1.0;
    for (int tm = 1; tm <= T; tm++) {
        int tn = T / tm;
        if (tm > J->mtiles || tn > J->ntiles)
            continue;
        double m = (double)ceil_div(J->mtiles, tm) * J->kr->mr;
        double n = (double)ceil_div(J->ntiles, tn) * J->kr->nr;
        double cost = m * n * (double)J->K + pack_cost * (double)J->K * (m + n);
        if (best < 0 || cost < best) {
            best = cost;
            *tm_out = tm;
            *tn_out = tn;
        }
    }
    if (best < 0) {
        *tm_out = 1;
        *tn_out = 1;
    }
}

/* K == 0: C = act(beta * C + bias). */
static void scale_only(int64_t M, int64_t N, float beta, float *C, int64_t ldc,
                       const OqcfSgemmEpilogue *epi) {
    float zero = 0.0f;
    EpiFull ef = {1.0f, beta, epi, 1, 0};
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            epilogue_scalar(&zero, 0, C + i * ldc + j, ldc, i, j, 1, 1, &ef);
}

static int check_epi(const OqcfSgemmEpilogue *e) {
    if (!e)
        return 1;
    if ((unsigned)e->bias_per > OQCF_PER_COL || (unsigned)e->act_per > OQCF_PER_COL)
        return 0;
    return (e->bias_per == OQCF_PER_NONE || e->bias) && (e->act_per == OQCF_PER_NONE || e->act);
}

int oqcf_sgemm_ex(OqcfPool *pool, int trans_a, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const OqcfSgemmB *B, float beta, float *C,
                  int64_t ldc, const OqcfSgemmEpilogue *epi, void *scratch,
                  size_t scratch_size) {
    if (M < 0 || N < 0 || K < 0 || !check_epi(epi))
        return OQCF_EINVAL;
    if (M == 0 || N == 0)
        return OQCF_OK;
    if (!C || ldc < N)
        return OQCF_EINVAL;
    if (K == 0) {
        scale_only(M, N, beta, C, ldc, epi);
        return OQCF_OK;
    }
    if (!A || !B || (!B->pack && (!B->rows || !B->koff)) || lda < (trans_a ? M : K))
        return OQCF_EINVAL;
    Job J = {pick_kernel(), trans_a, M, N, K, alpha, beta, A, lda, B, NULL, C, ldc, epi,
             1, 1, 0, 0, NULL, 0, 0};
    OqcfSgemmB rows_packer = {pack_rows_b, B, NULL, NULL};
    if (!B->pack) {   /* rows mode: in place where the family can, packed otherwise */
        J.B = &rows_packer;
        J.rows = J.kr->rows ? B : NULL;
    }
    J.mtiles = ceil_div(M, J.kr->mr);
    J.ntiles = ceil_div(N, J.kr->nr);
    size_t per = per_thread_bytes(M, N, K);
    uintptr_t base = ((uintptr_t)scratch + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
    size_t usable = scratch ? scratch_size - (base - (uintptr_t)scratch) : 0;
    if (!scratch || scratch_size < ALIGN || usable < per)
        return OQCF_ESCRATCH;
    int T = oqcf_pool_threads(pool);
    if ((size_t)T > usable / per)
        T = (int)(usable / per);
    if (!oqcf_pool_for_work(pool, (double)M * N * K))   /* too little work to share */
        T = 1;
    choose_grid(&J, T, &J.tm, &J.tn);
    pack_floats(J.kr, M, N, K, &J.fa, &J.fb);
    J.bufs = (float *)base;
    oqcf_parallel_for(pool, (int64_t)J.tm * J.tn, job_fn, &J);
    return OQCF_OK;
}

/* ---- matrix-vector products (M == 1 or N == 1) -------------------------------------- */

/* A product with one output row or column is memory-bound: packing would only add
 * traffic, so it runs straight from the operands, as L dot products ("dot" form: X's
 * rows run along k) or as K scaled row additions ("axpy" form: X's rows run along the
 * outputs), a block of GEMV_BLOCK outputs at a time.
 *
 * Every output is summed exactly as the microkernel of the same family would sum it
 * (one running sum from zero per K block of block_k(), k in order, fused multiply-add
 * in the x86 families, a product then a sum in the portable one; the blocks combined
 * through the same epilogue arithmetic).  So a row of C does not depend on how many
 * other rows the product has: a model run at batch 1 and at batch 7 gives the same
 * bits per sample, which calibration relies on (tables independent of --batch). */
#define GEMV_BLOCK 256

/* One matrix-vector product. */
typedef struct Gemv {
    int dot;                        /* dot form (else axpy form) */
    const float *X;                 /* the matrix operand */
    int64_t ldx;                    /* dot: between outputs; axpy: between k */
    const float *v;                 /* the vector operand */
    int64_t vs;                     /* its stride */
    int64_t L, K;                   /* outputs, depth */
    float alpha, beta;              /* scales */
    float *C;                       /* first output */
    int64_t cs;                     /* stride between outputs in C */
    int row;                        /* M == 1 (outputs are columns j), else N == 1 */
    const OqcfSgemmEpilogue *epi;   /* user epilogue or NULL */
    const Kernel *kr;               /* the family whose summation order is reproduced */
} Gemv;

/* acc[r] = the sum over k in [k0, k0 + kc) of X(r) * v(k), from zero, k in order:
 * portable family (a product, then a sum; the file is built with -ffp-contract=off). */
static void gemv_block__c(const Gemv *g, int64_t rb, int64_t nb, int64_t k0, int64_t kc,
                          float *restrict acc) {
    for (int64_t r = 0; r < nb; r++)
        acc[r] = 0.0f;
    if (g->dot) {
        for (int64_t r = 0; r < nb; r++) {
            const float *x = g->X + (rb + r) * g->ldx;
            float s = 0.0f;
            for (int64_t k = k0; k < k0 + kc; k++)
                s += x[k] * g->v[k * g->vs];
            acc[r] = s;
        }
    } else {
        for (int64_t k = k0; k < k0 + kc; k++) {
            const float *xr = g->X + k * g->ldx + rb;
            float vk = g->v[k * g->vs];
            for (int64_t r = 0; r < nb; r++)
                acc[r] += vk * xr[r];
        }
    }
}

#if OQCF_SGEMM_X86
/* gemv_block__c with fused multiply-adds, as the AVX2 and AVX-512 microkernels sum.  The
 * dot form runs 8 outputs at once (8 independent chains); the axpy form 8 per vector. */
AVX2 static void gemv_block__fma(const Gemv *g, int64_t rb, int64_t nb, int64_t k0,
                                 int64_t kc, float *restrict acc) {
    int64_t r = 0;
    if (g->dot) {
        for (; r + 8 <= nb; r += 8) {
            const float *x = g->X + (rb + r) * g->ldx;
            const int64_t l = g->ldx;
            __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0,
                   s6 = s0, s7 = s0;
            for (int64_t k = k0; k < k0 + kc; k++) {
                __m128 vk = _mm_set_ss(g->v[k * g->vs]);
                s0 = _mm_fmadd_ss(_mm_set_ss(x[k]), vk, s0);
                s1 = _mm_fmadd_ss(_mm_set_ss(x[l + k]), vk, s1);
                s2 = _mm_fmadd_ss(_mm_set_ss(x[2 * l + k]), vk, s2);
                s3 = _mm_fmadd_ss(_mm_set_ss(x[3 * l + k]), vk, s3);
                s4 = _mm_fmadd_ss(_mm_set_ss(x[4 * l + k]), vk, s4);
                s5 = _mm_fmadd_ss(_mm_set_ss(x[5 * l + k]), vk, s5);
                s6 = _mm_fmadd_ss(_mm_set_ss(x[6 * l + k]), vk, s6);
                s7 = _mm_fmadd_ss(_mm_set_ss(x[7 * l + k]), vk, s7);
            }
            acc[r] = _mm_cvtss_f32(s0);
            acc[r + 1] = _mm_cvtss_f32(s1);
            acc[r + 2] = _mm_cvtss_f32(s2);
            acc[r + 3] = _mm_cvtss_f32(s3);
            acc[r + 4] = _mm_cvtss_f32(s4);
            acc[r + 5] = _mm_cvtss_f32(s5);
            acc[r + 6] = _mm_cvtss_f32(s6);
            acc[r + 7] = _mm_cvtss_f32(s7);
        }
        for (; r < nb; r++) {
            const float *x = g->X + (rb + r) * g->ldx;
            __m128 s = _mm_setzero_ps();
            for (int64_t k = k0; k < k0 + kc; k++)
                s = _mm_fmadd_ss(_mm_set_ss(x[k]), _mm_set_ss(g->v[k * g->vs]), s);
            acc[r] = _mm_cvtss_f32(s);
        }
        return;
    }
    for (; r + 8 <= nb; r += 8) {
        __m256 s = _mm256_setzero_ps();
        for (int64_t k = k0; k < k0 + kc; k++)
            s = _mm256_fmadd_ps(_mm256_set1_ps(g->v[k * g->vs]),
                                _mm256_loadu_ps(g->X + k * g->ldx + rb + r), s);
        _mm256_storeu_ps(acc + r, s);
    }
    for (; r < nb; r++) {
        __m128 s = _mm_setzero_ps();
        for (int64_t k = k0; k < k0 + kc; k++)
            s = _mm_fmadd_ss(_mm_set_ss(g->v[k * g->vs]),
                             _mm_set_ss(g->X[k * g->ldx + rb + r]), s);
        acc[r] = _mm_cvtss_f32(s);
    }
}

#endif

static void gemv_fn(void *ctx, int64_t begin, int64_t end, int tid) {
    const Gemv *g = ctx;
    float acc[GEMV_BLOCK];
    (void)tid;
    const int fused = g->kr->isa != OQCF_ISA_PORTABLE;
    const int64_t kcb = block_k(g->kr, g->K);
    for (int64_t rb = begin; rb < end; rb += GEMV_BLOCK) {
        int64_t nb = end - rb < GEMV_BLOCK ? end - rb : GEMV_BLOCK;
        for (int64_t pc = 0; pc < g->K; pc += kcb) {
            int64_t kc = g->K - pc < kcb ? g->K - pc : kcb;
            int first = pc == 0, final = pc + kc == g->K;
#if OQCF_SGEMM_X86
            if (fused)
                gemv_block__fma(g, rb, nb, pc, kc, acc);
            else
#endif
                gemv_block__c(g, rb, nb, pc, kc, acc);
            /* The microkernels' epilogue: alpha * sum, then beta * C (fused in the
             * vector families), then bias and activation on the last block. */
            EpiFull ef = {g->alpha, first ? g->beta : 1.0f, g->epi, final, fused};
            for (int64_t r = 0; r < nb; r++) {
                int64_t o = rb + r;
                epilogue_scalar(&acc[r], 0, g->C + o * g->cs, 0, g->row ? 0 : o,
                                g->row ? o : 0, 1, 1, &ef);
            }
        }
    }
}

int oqcf_sgemm(OqcfPool *pool, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc, const OqcfSgemmEpilogue *epi, void *scratch,
               size_t scratch_size) {
    if (K > 0 && M > 0 && N > 0 && (!B || ldb < (trans_b ? K : N)))
        return OQCF_EINVAL;
    if (K > 0 && (M == 1 || N == 1) && A && C && ldc >= N && lda >= (trans_a ? M : K) &&
        check_epi(epi)) {
        Gemv g;
        if (M == 1) {   /* C row = op(A) row (a vector along k) times op(B) */
            g = (Gemv){trans_b, B, ldb, A, trans_a ? lda : 1, N, K,
                       alpha, beta, C, 1, 1, epi, pick_kernel()};
        } else {        /* C column = op(A) times op(B) column (a vector along k) */
            g = (Gemv){!trans_a, A, lda, B, trans_b ? 1 : ldb, M, K,
                       alpha, beta, C, ldc, 0, epi, pick_kernel()};
        }
        oqcf_parallel_for(oqcf_pool_for_work(pool, (double)g.L * (double)K), g.L, gemv_fn,
                          &g);
        return OQCF_OK;
    }
    DenseB d = {B, ldb, trans_b};
    OqcfSgemmB src = {pack_dense_b, &d, NULL, NULL};
    return oqcf_sgemm_ex(pool, trans_a, M, N, K, alpha, A, lda, &src, beta, C, ldc, epi,
                         scratch, scratch_size);
}
