/* oqcf_serial.c - the thread-pool API of oqcf_nn.h without threads (single-threaded).
 *
 * A drop-in replacement for oqcf_pool.c and oqcf_threads.c in single-threaded emitted
 * code: C99, no pthreads, no allocation, no mutable global.  There is never a pool:
 * oqcf_pool_create() returns NULL, which every kernel accepts as "run on the calling
 * thread", and oqcf_parallel_for() runs the whole range on its caller as tid 0.  The
 * kernels' results do not depend on the thread count, so they match liboqc's bit for
 * bit.
 *
 * Not part of liboqc (the Makefile leaves it out): liboqc links oqcf_pool.c and
 * oqcf_threads.c, which define the same functions. */
#include "oqcf_nn.h"

OqcfPool *oqcf_pool_create(int nthreads) {
    (void)nthreads;
    return NULL;
}

void oqcf_pool_destroy(OqcfPool *pool) {
    (void)pool;
}

int oqcf_pool_threads(const OqcfPool *pool) {
    (void)pool;
    return 1;
}

void oqcf_parallel_for(OqcfPool *pool, int64_t n, OqcfRangeFn fn, void *ctx) {
    (void)pool;
    if (n > 0)
        fn(ctx, 0, n, 0);
}

OqcfPool *oqcf_pool_for_work(OqcfPool *pool, double work) {
    (void)pool;
    (void)work;
    return NULL;
}

/* Nothing to set: with one thread there is no share to weigh.  Returns the default, as
 * oqcf_pool.c would before any call. */
double oqcf_pool_set_min_work(double work) {
    (void)work;
    return OQCF_PAR_MIN_WORK;
}
