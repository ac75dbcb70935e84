/* main.c - the examples' program: runs the Fashion-MNIST CNN that oqc compiled to INT8 C
 * (fashion.h, generated into the build directory) over test images and prints how many
 * it classifies correctly.
 *
 *   fashion_demo X.npy Y.npy     X: float32 [N, 1, 28, 28], Y: int64 [N] class ids */
#include "fashion.h"
#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s X.npy Y.npy\n", argv[0]);
        return 2;
    }
    void *xv, *yv;
    size_t nx, ny;
    if (npy_read(argv[1], "<f4", sizeof(float), &xv, &nx) < 0 ||
        npy_read(argv[2], "<i8", sizeof(int64_t), &yv, &ny) < 0)
        return 1;
    const float *x = xv;
    const int64_t *y = yv;
    size_t n = nx / fashion_INPUT_SIZE;
    if (n != ny || n * fashion_INPUT_SIZE != nx) {
        fprintf(stderr, "%s: %zu values are not %zu samples of %d\n", argv[1], nx, ny,
                fashion_INPUT_SIZE);
        return 1;
    }
    size_t correct = 0;
    for (size_t i = 0; i < n; i++) {
        float logits[fashion_OUTPUT_SIZE];
        if (fashion_run(x + i * fashion_INPUT_SIZE, logits, NULL) != 0) {
            fprintf(stderr, "sample %zu: the model failed\n", i);
            return 1;
        }
        int best = 0;
        for (int k = 1; k < fashion_OUTPUT_SIZE; k++)
            best = logits[k] > logits[best] ? k : best;
        correct += best == y[i];
    }
    printf("correct: %zu of %zu\n", correct, n);
    free(xv);
    free(yv);
    return 0;
}
