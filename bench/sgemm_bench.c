/* sgemm_bench.c - GFLOP/s of oqcf_sgemm (and optionally OpenBLAS) on conv-shaped problems.
 *
 * The shapes are resnet18's convolutions seen as GEMMs (M = output channels,
 * N = output pixels, K = input channels x kernel area) plus a square one.  Each is timed
 * as the best of 10 runs of ~0.03 s at 1 and 2 threads; 1-thread runs are timed in the
 * calling thread's CPU time, 2-thread runs in wall time (see now()).  Build (from the
 * repository root):
 *
 *   gcc -O2 -std=c11 -D_DEFAULT_SOURCE -pthread -Iruntime/fp32 -Iruntime/int8 bench/sgemm_bench.c \
 *       runtime/fp32/oqcf_pool.c runtime/fp32/oqcf_threads.c runtime/fp32/oqcf_sgemm.c \
 *       runtime/fp32/oqcf_sgemm_x86.c -lm \
 *       -o /tmp/sgemm_bench
 *
 * add -DOQC_BENCH_OPENBLAS ... -lopenblas to compare with cblas_sgemm (Debian's
 * libopenblas-dev; not a dependency of oqc).  `sgemm_bench ISA` forces a microkernel
 * family: portable, avx2 or avx512. */
#include "oqcf_nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef OQC_BENCH_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int);
#endif

/* One benchmark problem. */
typedef struct Shape {
    const char *what;   /* where the shape comes from */
    int64_t M, N, K;    /* C is M x N, K deep */
} Shape;

static const Shape shapes[] = {
    {"conv1 7x7/2 (3->64, 112x112)", 64, 12544, 147},
    {"layer1 3x3 (64->64, 56x56)", 64, 3136, 576},
    {"layer2 3x3 (128->128, 28x28)", 128, 784, 1152},
    {"layer3 3x3 (256->256, 14x14)", 256, 196, 2304},
    {"layer4 3x3 (512->512, 7x7)", 512, 49, 4608},
    {"brief: 256 x 3136 x 1152", 256, 3136, 1152},
    {"square 1024", 1024, 1024, 1024},
};

/* Clock of the current measurement: the calling thread's CPU time for 1-thread runs
 * (so time spent descheduled by other load is not counted; a busy sibling hyperthread
 * still slows it down), wall time for 2-thread runs. */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec t;
    clock_gettime(clock_id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best GFLOP/s over 10 runs of ~0.03 s each (best-of filters out other load). */
#define TIME_GFLOPS(flops, call)                              \
    do {                                                      \
        call;                                                 \
        best = 0.0;                                           \
        for (int rep = 0; rep < 10; rep++) {                   \
            int it = 0;                                       \
            double t0 = now(), t;                             \
            do {                                              \
                call;                                         \
                it++;                                         \
            } while ((t = now() - t0) < 0.03);                 \
            double g = (flops) * it / t * 1e-9;               \
            if (g > best)                                     \
                best = g;                                     \
        }                                                     \
    } while (0)

int main(int argc, char **argv) {
    if (argc > 1) {
        OqcfIsa isa = !strcmp(argv[1], "portable") ? OQCF_ISA_PORTABLE
                      : !strcmp(argv[1], "avx2")   ? OQCF_ISA_AVX2
                      : !strcmp(argv[1], "avx512") ? OQCF_ISA_AVX512
                                                   : OQCF_ISA_AUTO;
        if (oqcf_sgemm_force_isa(isa) != OQCF_OK) {
            fprintf(stderr, "sgemm_bench: %s not supported here\n", argv[1]);
            return 1;
        }
    }
    const char *isa_name[] = {"auto", "portable", "avx2", "avx512"};
    printf("microkernel: %s\n", isa_name[oqcf_sgemm_isa()]);
    printf("%-32s %5s %6s %5s %9s %9s", "shape", "M", "N", "K", "oqc 1T", "oqc 2T");
#ifdef OQC_BENCH_OPENBLAS
    printf(" %9s %9s", "oblas 1T", "oblas 2T");
#endif
    printf("   (GFLOP/s)\n");
    OqcfPool *pool2 = oqcf_pool_create(2);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        int64_t M = sh->M, N = sh->N, K = sh->K;
        float *A = malloc(sizeof(float) * (size_t)(M * K));
        float *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C = malloc(sizeof(float) * (size_t)(M * N));
        size_t ss = oqcf_sgemm_scratch_size(M, N, K, 2);
        void *scratch = malloc(ss);
        if (!A || !B || !C || !scratch || !pool2)
            return 1;
        for (int64_t i = 0; i < M * K; i++)
            A[i] = (float)rand() / RAND_MAX - 0.5f;
        for (int64_t i = 0; i < K * N; i++)
            B[i] = (float)rand() / RAND_MAX - 0.5f;
        double flops = 2.0 * (double)M * (double)N * (double)K, best, g1, g2;
        clock_id = CLOCK_THREAD_CPUTIME_ID;
        TIME_GFLOPS(flops, oqcf_sgemm(NULL, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, NULL,
                                      scratch, ss));
        g1 = best;
        clock_id = CLOCK_MONOTONIC;
        TIME_GFLOPS(flops, oqcf_sgemm(pool2, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, NULL,
                                      scratch, ss));
        g2 = best;
        printf("%-32s %5lld %6lld %5lld %9.1f %9.1f", sh->what, (long long)M, (long long)N,
               (long long)K, g1, g2);
#ifdef OQC_BENCH_OPENBLAS
        for (int th = 1; th <= 2; th++) {
            openblas_set_num_threads(th);
            clock_id = th == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
            TIME_GFLOPS(flops, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M,
                                           (int)N, (int)K, 1.0f, A, (int)K, B, (int)N, 0.0f, C,
                                           (int)N));
            printf(" %9.1f", best);
        }
#endif
        printf("\n");
        fflush(stdout);
        free(A);
        free(B);
        free(C);
        free(scratch);
    }
    oqcf_pool_destroy(pool2);
    return 0;
}
