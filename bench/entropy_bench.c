/* entropy_bench.c - time per tensor of the entropy threshold search (oqc_calib_threshold
 * with --method entropy, 128 levels) on histograms shaped like activations, at 2048 bins
 * (the default) and a few other --bins values.  Prints, per histogram, the best and the
 * median CPU time of the search alone (the histogram is built once, outside the timing)
 * over R runs, and the threshold found, so two builds can be compared.  Not a test:
 * nothing is asserted.  Build and run (from the repository root, after `make`):
 *
 *   gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L $(OQC_INC, see bench/run.sh) bench/entropy_bench.c \
 *       build/liboqc.a -lprotobuf-c -lxml2 -ljpeg -lpng -lm -pthread -o build/entropy_bench
 *   build/entropy_bench [RUNS]          # RUNS per histogram, default 20
 *
 * Histograms (1e6 values each, a fixed random sequence): ReLU of a Gaussian (half the
 * values in bin 0, a thinning tail with empty bins), Laplace (dense, heavy tail),
 * uniform (dense to the end), a Gaussian with ten outliers at 100 sigma (nearly all
 * bins empty), and a 4-value tensor (the small tensors of a long chain). */
#include "backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state = 7;
static double uniform(void) { /* [0, 1): xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1p-53;
}
static double gauss(void) {
    double u = uniform(), v = uniform();
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

static double cpu_ms(void) { /* CPU time of this process: the machine may be busy */
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fills x[0..n) with values of the given kind. */
static void make_values(const char *kind, float *x, int n) {
    for (int i = 0; i < n; i++) {
        double g = gauss(), u = uniform(), v;
        if (!strcmp(kind, "relu(gauss)"))
            v = g > 0 ? g : 0;
        else if (!strcmp(kind, "laplace"))
            v = (u < 0.5 ? 1 : -1) * -log(1 - uniform());
        else if (!strcmp(kind, "uniform"))
            v = 2 * u - 1;
        else if (!strcmp(kind, "gauss+outliers"))
            v = i < 10 ? 100.0 : g;
        else
            v = g;
        x[i] = (float)v;
    }
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 20;
    if (runs < 1)
        runs = 1;
    static const char *kinds[] = {"relu(gauss)", "laplace", "uniform", "gauss+outliers",
                                  "4 values"};
    static const int bins[] = {2048, 512, 8192};
    enum { N = 1000000 };
    float *x = malloc(N * sizeof *x);
    double *t = malloc((size_t)runs * sizeof *t);
    if (!x || !t)
        return 1;
    printf("%-15s %6s %11s %11s %7s %10s\n", "histogram", "bins", "best ms", "median ms",
           "empty", "T/amax");
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            int n = strcmp(kinds[k], "4 values") ? N : 4;
            make_values(kinds[k], x, n);
            float amax = 0;
            for (int i = 0; i < n; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            OqcHist h = {amax, bins[b], calloc((size_t)bins[b], sizeof(uint64_t)), 0};
            if (!h.bins)
                return 1;
            oqc_hist_add(&h, x, n);
            int empty = 0;
            for (int i = 0; i < h.nbins; i++)
                empty += h.bins[i] == 0;
            OqcCalibEntry e;
            for (int r = 0; r < runs; r++) {
                memset(&e, 0, sizeof e);
                double t0 = cpu_ms();
                oqc_calib_threshold(&h, OQC_CALIB_ENTROPY, 0, 128, &e, NULL);
                t[r] = cpu_ms() - t0;
            }
            qsort(t, (size_t)runs, sizeof *t, by_value);
            printf("%-15s %6d %11.3f %11.3f %7d %10.6f\n", kinds[k], bins[b], t[0],
                   t[runs / 2], empty, e.threshold / amax);
            free(h.bins);
        }
    free(t);
    free(x);
    return 0;
}
