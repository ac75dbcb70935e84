/* oqcf_pool.c - the FP32 kernels' parallel loops over a pool's parallel-for (see
 * oqcf_nn.h).
 *
 * A loop over [0, n) becomes min(n, nthreads) contiguous chunks, chunk t running as
 * fn(ctx, begin, end, t) in task t of the pool's parallel-for, so a kernel's tid (its
 * scratch slot) is a task index below nthreads whichever thread runs it.  No threads,
 * no allocation here: the parallel-for is oqcf_threads.c's pthread pool (the executor,
 * and the default of emitted code built with `oqc compile --threads N`) or whatever the
 * application supplied. */
#include "oqcf_nn.h"

int oqcf_pool_threads(const OqcfPool *p) {
    return p && p->run && p->nthreads > 1 ? p->nthreads : 1;
}

static double min_work = OQCF_PAR_MIN_WORK;   /* per thread, see oqcf_pool_set_min_work */

OqcfPool *oqcf_pool_for_work(OqcfPool *p, double work) {
    return work < min_work * oqcf_pool_threads(p) ? NULL : p;
}

double oqcf_pool_set_min_work(double work) {
    double old = min_work;
    min_work = work < 0 ? 0 : work;
    return old;
}

/* One parallel loop: its body and its split. */
typedef struct Chunks {
    OqcfRangeFn fn;
    void *ctx;
    int64_t n;
    int chunks;
} Chunks;

static void chunk_task(void *arg, int t) {
    const Chunks *c = arg;
    int64_t b = c->n * t / c->chunks, e = c->n * (t + 1) / c->chunks;
    if (b < e)
        c->fn(c->ctx, b, e, t);
}

void oqcf_parallel_for(OqcfPool *p, int64_t n, OqcfRangeFn fn, void *ctx) {
    if (n <= 0)
        return;
    int T = oqcf_pool_threads(p);
    if (T == 1 || n == 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    Chunks c = {fn, ctx, n, n < T ? (int)n : T};
    p->run(p->ctx, chunk_task, &c, c.chunks);
}
