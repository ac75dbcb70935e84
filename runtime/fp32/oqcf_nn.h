/* oqcf_nn.h - oqc's FP32 neural-network kernels: thread pool, SGEMM, Conv, pooling,
 * normalisation, Gemm and MatMul (prefix oqcf_; common rules in oqcf.h).
 *
 * Design:
 *   - One SGEMM (oqcf_sgemm.c) does all the heavy arithmetic.  It is GotoBLAS/BLIS
 *     shaped: op(B) is packed in KC-deep NR-column panels, op(A) is blocked MC x KC
 *     (and read in place when stored M x K), and a microkernel multiplies an MR-row
 *     panel of A by an NR-column panel of B held in registers.  Microkernels exist for
 *     AVX-512F, AVX2+FMA and portable C; the best the CPU supports is chosen at run
 *     time.  An epilogue adds a per-row, per-column or scalar bias and applies an
 *     activation while the tile is still in registers.
 *   - Conv never materialises an im2col matrix.  oqcf_sgemm_ex() takes op(B) as a
 *     "packer" callback or as rows anywhere in memory (row k at rows + koff[k]).  A
 *     1-D/2-D conv copies its input once into zero-padded planes split by stride phase,
 *     where every im2col row is one contiguous run (rows mode); a 1x1, stride-1,
 *     unpadded conv's rows are the input's channels; 3-D convs pack straight from the
 *     image.  Depthwise conv (group == C == K) has its own direct kernels.
 *   - Kernels never allocate.  Work memory comes from the caller, sized by the
 *     matching *_scratch_size() for the same parameters and thread count.
 *   - Parallelism comes from an optional OqcfPool; every kernel taking a pool accepts
 *     NULL (run on the calling thread).  The pool is created once, at set-up.
 *
 * Channel views: Conv and pooling can read their input from channels
 * [x_coff, x_coff + C) of an N x C... buffer that has x_ctotal channels, and write their
 * output to channels [y_coff, y_coff + K) of a buffer with y_ctotal channels, so a
 * concat can be assembled in place.  A ctotal of 0 means "the tensor is dense". */
#ifndef OQCF_NN_H
#define OQCF_NN_H

#include "oqcf.h"

/* ------------------------------------------------------------------------------------
 * Thread pool: a parallel-for and the number of chunks a loop is split into
 * (oqcf_pool.c, no threads of its own; oqcf_threads.c, a persistent pthread pool behind
 * it; oqcf_serial.c is the same API without threads, for single-threaded emitted code:
 * no pool is ever created, and every loop runs on its caller)
 * ---------------------------------------------------------------------------------- */

/* Body of a parallel loop: handles [begin, end) on thread tid (0 = the caller). */
typedef void (*OqcfRangeFn)(void *ctx, int64_t begin, int64_t end, int tid);

/* One task of a parallel-for: task i of the loop (0 <= i < n). */
typedef void (*OqcfTaskFn)(void *arg, int i);
/* A parallel-for: calls task(arg, i) exactly once for every i in [0, n), in any order,
 * on any threads (the caller's included), and returns when every call has returned.
 * Tasks of one call write disjoint memory; each i owns the scratch of chunk i. */
typedef void (*OqcfParallelFor)(void *ctx, OqcfTaskFn task, void *arg, int n);

/* A pool: a parallel-for with its context, and the number of chunks (tids) a loop is
 * split into, which the scratch is sized for.  Public, so that a pool can wrap any
 * parallel-for (an application's, OpenMP's, an RTOS's) without allocating: the
 * emitted code's NAME_set_parallel does.  run NULL or nthreads 1: every loop runs on
 * its caller. */
typedef struct OqcfPool {
    OqcfParallelFor run;   /* the parallel-for, or NULL */
    void *ctx;             /* its first argument */
    int nthreads;          /* chunks per loop at most (>= 1) */
} OqcfPool;

/* Threads of the pool counting the caller (nthreads); 1 for a NULL pool or one
 * without a parallel-for. */
int oqcf_pool_threads(const OqcfPool *pool);
/* Splits [0, n) into at most oqcf_pool_threads() contiguous chunks, runs chunk t as
 * fn(ctx, begin, end, t) through the pool's parallel-for and returns when all are done.
 * A NULL pool or n <= 1 runs fn(ctx, 0, n, 0) inline.  fn is called at most once per
 * tid per call, never with an empty range. */
void oqcf_parallel_for(OqcfPool *pool, int64_t n, OqcfRangeFn fn, void *ctx);

/* The persistent pthread pool (oqcf_threads.c): nthreads threads counting the caller
 * (nthreads - 1 workers, started once; 1 starts none).  oqcf_threads_run is its
 * parallel-for (ctx: the OqcfThreads); a call made while the threads are busy (nested
 * in a task, or from another thread) runs its tasks one after the other on its caller.
 * Nothing is allocated per call. */
typedef struct OqcfThreads OqcfThreads;
OqcfThreads *oqcf_threads_create(int nthreads);   /* NULL if < 1 or a thread fails */
void oqcf_threads_destroy(OqcfThreads *threads);
void oqcf_threads_run(void *threads, OqcfTaskFn task, void *arg, int n);
/* A pool of nthreads threads shared by every caller asking for that count in this
 * process: started by the first call (thread-safe), never stopped.  NULL if the
 * threads cannot be started. */
OqcfThreads *oqcf_threads_shared(int nthreads);

/* A pool over a new OqcfThreads (oqcf_threads.c; allocates).  NULL if nthreads < 1 or
 * a thread cannot be started.  oqcf_pool_destroy stops the threads and frees it (only
 * for pools made by oqcf_pool_create; NULL is a no-op). */
OqcfPool *oqcf_pool_create(int nthreads);
void oqcf_pool_destroy(OqcfPool *pool);

/* Default work per thread (multiply-adds, or elements visited) below which a kernel
 * runs on the calling thread alone: waking a worker and waiting for it costs a few
 * microseconds, more than so small a share saves, and on a busy machine a worker that
 * is not running stalls the whole call. */
#define OQCF_PAR_MIN_WORK 65536.0

/* The pool a kernel should use for `work` units in total: pool itself, or NULL when a
 * thread's share would be below the minimum.  Every kernel taking a pool calls this
 * before oqcf_parallel_for (the SGEMM caps its thread count with it). */
OqcfPool *oqcf_pool_for_work(OqcfPool *pool, double work);
/* Sets the minimum work per thread (process-wide; 0 parallelises everything, which
 * the tests use to reach the threaded paths with small shapes) and returns the previous
 * one.  Not synchronised: call it while no kernel runs. */
double oqcf_pool_set_min_work(double work);

/* ------------------------------------------------------------------------------------
 * Activations and epilogues
 * ---------------------------------------------------------------------------------- */

typedef enum OqcfActKind {
    OQCF_ACT_NONE = 0,   /* identity */
    OQCF_ACT_RELU,       /* max(x, 0); NaN stays NaN */
    OQCF_ACT_CLIP,       /* min(max(x, lo), hi) */
    OQCF_ACT_LEAKY,      /* x >= 0 ? x : alpha * x */
} OqcfActKind;

/* One activation with its parameters. */
typedef struct OqcfAct {
    OqcfActKind kind;   /* which function */
    float p0;           /* CLIP: lo; LEAKY: alpha; unused otherwise */
    float p1;           /* CLIP: hi; unused otherwise */
} OqcfAct;

/* How an epilogue vector (bias or activation) is indexed over the M x N result. */
typedef enum OqcfPer {
    OQCF_PER_NONE = 0,   /* absent */
    OQCF_PER_ALL,        /* one value, element 0, for the whole result */
    OQCF_PER_ROW,        /* element i for row i (M entries) */
    OQCF_PER_COL,        /* element j for column j (N entries) */
} OqcfPer;

/* Applies one activation to one value (also the reference for the vector epilogues).
 * NaN propagates through every activation, as in the standalone oqcf_relu, oqcf_clip
 * and oqcf_leaky_relu (oqcf_tensor.h), so fusing one into a Conv or Gemm changes no
 * result; RELU keeps the sign of -0 as they do. */
static inline float oqcf_act_apply(const OqcfAct *a, float v) {
    switch (a->kind) {
    case OQCF_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case OQCF_ACT_CLIP: return v < a->p0 ? a->p0 : (v > a->p1 ? a->p1 : v);
    case OQCF_ACT_LEAKY: return v >= 0.0f ? v : a->p0 * v;
    default: return v;
    }
}

/* What SGEMM does to each result element after the product:
 *   C[i][j] = act(alpha * sum_k op(A)[i][k] op(B)[k][j] + beta * C[i][j] + bias) */
typedef struct OqcfSgemmEpilogue {
    OqcfPer bias_per;      /* how bias is indexed (NONE: no bias) */
    const float *bias;     /* bias values, per bias_per */
    OqcfPer act_per;       /* how act is indexed (NONE: identity) */
    const OqcfAct *act;    /* activations, per act_per */
} OqcfSgemmEpilogue;

/* ------------------------------------------------------------------------------------
 * SGEMM (oqcf_sgemm.c)
 * ---------------------------------------------------------------------------------- */

/* Microkernel families; oqcf_sgemm_force_isa() exists for tests and benchmarks. */
typedef enum OqcfIsa {
    OQCF_ISA_AUTO = 0,     /* best the CPU supports */
    OQCF_ISA_PORTABLE,     /* plain C, 4x16 tile */
    OQCF_ISA_AVX2,         /* AVX2 + FMA, 6x16 tile */
    OQCF_ISA_AVX512,       /* AVX-512F, 12x32 tile */
} OqcfIsa;

/* Selects the microkernel family for all later calls (process-wide, not thread-safe
 * against concurrent SGEMMs).  OQCF_EINVAL if the CPU or build lacks it.  The override
 * is a mutable global, so it exists only when oqcf_sgemm.c is compiled with
 * OQCF_TEST_HOOKS defined (liboqc is; emitted code is not): without it every family but
 * OQCF_ISA_AUTO is OQCF_EINVAL and the best the CPU supports is always used. */
int oqcf_sgemm_force_isa(OqcfIsa isa);
/* The family in use (never OQCF_ISA_AUTO). */
OqcfIsa oqcf_sgemm_isa(void);
/* Whether this CPU and build can run a family. */
int oqcf_sgemm_isa_supported(OqcfIsa isa);

/* Scratch bytes for an M x N x K SGEMM on nthreads threads (valid for any family). */
size_t oqcf_sgemm_scratch_size(int64_t M, int64_t N, int64_t K, int nthreads);

/* C = act(alpha * op(A) op(B) + beta * C + bias), row-major with leading dimensions
 * lda, ldb, ldc; op(A) is M x K, op(B) is K x N.  trans_a: A is stored K x M;
 * trans_b: B is stored N x K.  beta == 0 does not read C.  epi may be NULL.  Scratch
 * sized for fewer threads than the pool has runs on fewer threads; less than one
 * thread's worth is OQCF_ESCRATCH (none is needed when K == 0, M == 1 or N == 1). */
int oqcf_sgemm(OqcfPool *pool, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc, const OqcfSgemmEpilogue *epi,
               void *scratch, size_t scratch_size);

/* Fills dst with columns [j0, j0 + nc) of rows [k0, k0 + kc) of op(B), as
 * ceil(nc / nr) panels one after the other; panel p holds kc rows of nr floats:
 * dst[p*kc*nr + k*nr + j] = op(B)[k0 + k][j0 + p*nr + j], 0 past column j0 + nc. */
typedef void (*OqcfPackBFn)(const void *ctx, int64_t k0, int64_t kc, int64_t j0,
                            int64_t nc, int nr, float *dst);

/* op(B) given as a packer instead of a matrix (used by Conv's implicit im2col), or as
 * rows anywhere in memory: B[k][j] = rows[koff[k] + j] (Conv's flat-offset and 1x1
 * paths).  Rows are read in place by the vector microkernels, 16 or 32 columns at a
 * time, with no packing; only the last panel cut by column N is packed, so nothing
 * past column N - 1 of any row is read. */
typedef struct OqcfSgemmB {
    OqcfPackBFn pack;       /* fills packed panels; called concurrently from all threads */
    const void *ctx;        /* passed to pack, read-only */
    const float *rows;      /* instead of pack (which must then be NULL): B's rows */
    const int64_t *koff;    /* with rows: offset of each of the K rows */
} OqcfSgemmB;

/* oqcf_sgemm with op(B) produced by a packer or given as rows (scratch always needed
 * when K > 0). */
int oqcf_sgemm_ex(OqcfPool *pool, int trans_a, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const OqcfSgemmB *B,
                  float beta, float *C, int64_t ldc, const OqcfSgemmEpilogue *epi,
                  void *scratch, size_t scratch_size);

/* ------------------------------------------------------------------------------------
 * Conv (oqcf_conv.c)
 * ---------------------------------------------------------------------------------- */

#define OQCF_MAX_SPATIAL 3

/* Geometry of an N-d convolution on NC<spatial> tensors.  Pads are explicit (auto_pad
 * already resolved); out_size[i] must equal
 *   (in_size[i] + pad_begin[i] + pad_end[i] - dilation[i]*(kernel[i]-1) - 1) / stride[i] + 1.
 * The weight is K x (C/group) x kernel..., dense. */
typedef struct OqcfConvParams {
    int nspatial;                         /* spatial dimensions, 1..3 */
    int64_t batch;                        /* N */
    int64_t channels;                     /* C, input channels (of the view) */
    int64_t out_channels;                 /* K, output channels (of the view) */
    int64_t group;                        /* groups; divides C and K */
    int64_t in_size[OQCF_MAX_SPATIAL];    /* input spatial extents */
    int64_t out_size[OQCF_MAX_SPATIAL];   /* output spatial extents */
    int64_t kernel[OQCF_MAX_SPATIAL];     /* kernel extents */
    int64_t stride[OQCF_MAX_SPATIAL];     /* strides, >= 1 */
    int64_t dilation[OQCF_MAX_SPATIAL];   /* dilations, >= 1 */
    int64_t pad_begin[OQCF_MAX_SPATIAL];  /* zero padding before each axis, >= 0 */
    int64_t pad_end[OQCF_MAX_SPATIAL];    /* zero padding after each axis, >= 0 */
    int64_t x_ctotal;                     /* channels of the input buffer (0: = channels) */
    int64_t x_coff;                       /* first input channel of the view */
    int64_t y_ctotal;                     /* channels of the output buffer (0: = K) */
    int64_t y_coff;                       /* first output channel of the view */
    OqcfAct act;                          /* fused activation for all output channels */
    const OqcfAct *act_per_channel;       /* K activations, overriding act; or NULL */
} OqcfConvParams;

/* Scratch bytes for oqcf_conv on nthreads threads.  Depthwise convs also run with less
 * (on fewer threads, or with none on a slower row-by-row path); others need it all. */
size_t oqcf_conv_scratch_size(const OqcfConvParams *p, int nthreads);
/* y = act(conv(x, w) + bias); bias (K floats) may be NULL. */
int oqcf_conv(OqcfPool *pool, const OqcfConvParams *p, const float *x, const float *w,
              const float *bias, float *y, void *scratch, size_t scratch_size);

/* ConvTranspose (oqcf_deconv.c) with the geometry read the other way round: x is
 * N x C x in_size..., the weight C x (K/group) x kernel... (ONNX's layout), y is
 * N x K x out_size...; y[n][k][o] = bias[k] + sum of x[n][c][i] * w[c][k'][t] over the
 * input channels c of k's group, input positions i and taps t with
 * o = i * stride - pad_begin + t * dilation (k' = k mod K/group). Output positions no
 * tap reaches (output_padding, a larger output_shape) hold the bias. pad_end, the
 * channel views and the activation are not used (must be 0 / none). bias may be NULL. */
int oqcf_conv_transpose(const OqcfConvParams *p, const float *x, const float *w,
                        const float *bias, float *y);

/* ------------------------------------------------------------------------------------
 * Pooling (oqcf_pooling.c)
 * ---------------------------------------------------------------------------------- */

/* Geometry of MaxPool / AveragePool.  Output sizes are the caller's (ceil_mode is the
 * caller's choice of out_size), so a window may reach past in_size + pad_end. */
typedef struct OqcfPoolParams {
    int nspatial;                         /* spatial dimensions, 1..3 */
    int64_t batch;                        /* N */
    int64_t channels;                     /* C (of the views) */
    int64_t in_size[OQCF_MAX_SPATIAL];    /* input spatial extents */
    int64_t out_size[OQCF_MAX_SPATIAL];   /* output spatial extents */
    int64_t kernel[OQCF_MAX_SPATIAL];     /* window extents */
    int64_t stride[OQCF_MAX_SPATIAL];     /* strides, >= 1 */
    int64_t dilation[OQCF_MAX_SPATIAL];   /* dilations, >= 1 */
    int64_t pad_begin[OQCF_MAX_SPATIAL];  /* padding before each axis */
    int64_t pad_end[OQCF_MAX_SPATIAL];    /* padding after each axis */
    int count_include_pad;                /* AveragePool: divisor counts explicit pads */
    int storage_order;                    /* MaxPool Indices: 0 row-major, 1 column-major */
    int64_t x_ctotal;                     /* channels of the input buffer (0: = channels) */
    int64_t x_coff;                       /* first input channel of the view */
    int64_t y_ctotal;                     /* channels of the output buffer (0: = channels) */
    int64_t y_coff;                       /* first output channel of the view */
} OqcfPoolParams;

/* MaxPool; indices (dense N x C x out..., may be NULL) gets ONNX's flat index of each
 * maximum into the (logical, N x C x in...) input; -1 and -FLT_MAX for empty windows. */
int oqcf_maxpool(OqcfPool *pool, const OqcfPoolParams *p, const float *x, float *y,
                 int64_t *indices);
int oqcf_avgpool(OqcfPool *pool, const OqcfPoolParams *p, const float *x, float *y);
/* Global pools over `spatial` elements per (n, c) plane of a dense N x C x ... tensor. */
int oqcf_global_avgpool(OqcfPool *pool, int64_t batch, int64_t channels, int64_t spatial,
                        const float *x, float *y);
int oqcf_global_maxpool(OqcfPool *pool, int64_t batch, int64_t channels, int64_t spatial,
                        const float *x, float *y);

/* ------------------------------------------------------------------------------------
 * Normalisation (oqcf_norm.c); tensors dense N x C x inner
 * ---------------------------------------------------------------------------------- */

/* Inference BatchNormalization: y = (x - mean) / sqrt(var + eps) * scale + bias. */
int oqcf_batchnorm(OqcfPool *pool, int64_t batch, int64_t channels, int64_t inner,
                   const float *x, const float *scale, const float *bias,
                   const float *mean, const float *var, float eps, float *y);
/* ONNX LRN across channels; y must not overlap x. */
int oqcf_lrn(OqcfPool *pool, int64_t batch, int64_t channels, int64_t inner,
             const float *x, int64_t size, float alpha, float beta, float bias, float *y);
/* LayerNormalization of outer rows of inner elements: y = (x - mean) * invstd * scale +
 * bias (scale, bias: inner entries; bias may be NULL), invstd = 1 / sqrt(var + eps),
 * mean and variance in double. mean and invstd (outer entries each) may be NULL. y may
 * equal x. */
int oqcf_layernorm(int64_t outer, int64_t inner, const float *x, const float *scale,
                   const float *bias, float eps, float *y, float *mean, float *invstd);
/* InstanceNormalization: each (n, c) plane normalised as a LayerNormalization row, then
 * times scale[c] plus bias[c]. y may equal x. */
int oqcf_instancenorm(int64_t batch, int64_t channels, int64_t inner, const float *x,
                      const float *scale, const float *bias, float eps, float *y);

/* ------------------------------------------------------------------------------------
 * Gemm and MatMul (oqcf_gemm.c)
 * ---------------------------------------------------------------------------------- */

/* ONNX Gemm: Y = act(alpha * op(A) op(B) + beta * C), C broadcast to M x N. */
typedef struct OqcfGemmParams {
    int64_t M, N, K;     /* op(A) is M x K, op(B) is K x N, Y is M x N */
    int trans_a;         /* A is stored K x M */
    int trans_b;         /* B is stored N x K */
    float alpha;         /* product scale */
    float beta;          /* C scale */
    int has_c;           /* whether input C is present */
    OqcfShape c_shape;   /* C's shape: (), (N), (1,N), (M,1), (M,N), (1,1) or (1) */
    OqcfAct act;         /* fused activation (OQCF_ACT_NONE for plain Gemm) */
} OqcfGemmParams;

size_t oqcf_gemm_scratch_size(const OqcfGemmParams *p, int nthreads);
/* Y may be C itself when C is M x N. */
int oqcf_gemm(OqcfPool *pool, const OqcfGemmParams *p, const float *A, const float *B,
              const float *C, float *Y, void *scratch, size_t scratch_size);

/* MatMul with numpy semantics: 1-D operands promoted and the added axis removed,
 * leading (batch) axes broadcast.  oqcf_matmul_shape gives Y's shape. */
int oqcf_matmul_shape(const OqcfShape *a, const OqcfShape *b, OqcfShape *y);
size_t oqcf_matmul_scratch_size(const OqcfShape *a, const OqcfShape *b, int nthreads);
int oqcf_matmul(OqcfPool *pool, const OqcfShape *a_shape, const float *A,
                const OqcfShape *b_shape, const float *B, float *Y, void *scratch,
                size_t scratch_size);

#endif
