/* oqcf_pool.c - a tiny persistent thread pool for the FP32 kernels (see oqcf_nn.h).
 *
 * Design: nthreads - 1 workers are started once, by oqcf_pool_create(), and wait for
 * jobs.  A job is published by bumping `gen`; a worker spins on it for 50 us (so
 * back-to-back kernels start in about a microsecond) and afterwards sleeps on a
 * condition variable.  The caller runs chunk 0 itself and waits for `pending` to drop
 * to zero with the same spin-then-sleep scheme.  Nothing is allocated per call.
 *
 * Lost wake-ups are avoided with sequentially consistent atomics: a sleeper increments
 * its `*_sleepers` counter under the mutex and re-checks the condition before waiting;
 * a waker changes the condition first and takes the mutex to broadcast only when it
 * sees a sleeper.  Either the waker sees the sleeper, or the sleeper sees the change.
 *
 * One job runs at a time: a call made while the pool is busy (nested inside a job, or
 * from a second thread) runs inline on its caller. */
#include "oqcf_nn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OQCF_PAUSE() _mm_pause()
#else
#define OQCF_PAUSE() ((void)0)
#endif

/* How long a waiting thread spins before it sleeps.  Measured in time, not in pause
 * instructions, whose cost varies from ~10 to ~150 cycles between CPUs. */
#define OQCF_SPIN_NS 50000

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins until *v != v0, or OQCF_SPIN_NS pass. */
static void spin_gen(atomic_uint_fast64_t *v, uint_fast64_t v0) {
    int64_t end = now_ns() + OQCF_SPIN_NS;
    for (int i = 1; atomic_load(v) == v0; i++) {
        OQCF_PAUSE();
        if (i % 32 == 0 && now_ns() > end)
            return;
    }
}

/* Spins until *v == 0, or OQCF_SPIN_NS pass. */
static void spin_zero(atomic_int *v) {
    int64_t end = now_ns() + OQCF_SPIN_NS;
    for (int i = 1; atomic_load(v) != 0; i++) {
        OQCF_PAUSE();
        if (i % 32 == 0 && now_ns() > end)
            return;
    }
}

typedef struct OqcfWorker {
    OqcfPool *pool;      /* owning pool */
    int tid;             /* 1..nthreads-1 */
    pthread_t thread;    /* the thread */
} OqcfWorker;

struct OqcfPool {
    int nthreads;                   /* threads counting the caller */
    OqcfWorker *workers;            /* nthreads - 1 workers */
    pthread_mutex_t mu;             /* guards sleeping and waking */
    pthread_cond_t work_cv;         /* workers sleep here for a new gen */
    pthread_cond_t done_cv;         /* the caller sleeps here for pending == 0 */
    atomic_uint_fast64_t gen;       /* job generation, bumped to publish a job */
    atomic_int pending;             /* workers that have not finished the current job */
    atomic_int work_sleepers;       /* workers asleep (or about to be) on work_cv */
    atomic_int done_sleepers;       /* 1 while the caller sleeps on done_cv */
    atomic_flag busy;               /* set while a job runs */
    int stop;                       /* set (with a gen bump) to make workers exit */
    OqcfRangeFn fn;                 /* current job body */
    void *ctx;                      /* current job context */
    int64_t n;                      /* current job range [0, n) */
    int chunks;                     /* chunks of the current job (<= nthreads) */
};

static void chunk_bounds(int64_t n, int chunks, int t, int64_t *b, int64_t *e) {
    *b = n * t / chunks;
    *e = n * (t + 1) / chunks;
}

static void *worker_main(void *arg) {
    OqcfWorker *w = arg;
    OqcfPool *p = w->pool;
    uint_fast64_t seen = 0;   /* gen at creation: a job may be published before we run */
    for (;;) {
        spin_gen(&p->gen, seen);
        if (atomic_load(&p->gen) == seen) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->work_sleepers, 1);
            while (atomic_load(&p->gen) == seen)
                pthread_cond_wait(&p->work_cv, &p->mu);
            atomic_fetch_sub(&p->work_sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        seen = atomic_load(&p->gen);
        if (p->stop)
            return NULL;
        if (w->tid < p->chunks) {
            int64_t b, e;
            chunk_bounds(p->n, p->chunks, w->tid, &b, &e);
            if (b < e)
                p->fn(p->ctx, b, e, w->tid);
        }
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->done_sleepers)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* Publishes the job fields already stored in p (gen's seq_cst bump orders them). */
static void wake_workers(OqcfPool *p) {
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->work_sleepers)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static void wait_workers(OqcfPool *p) {
    spin_zero(&p->pending);
    if (atomic_load(&p->pending)) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->done_sleepers, 1);
        while (atomic_load(&p->pending))
            pthread_cond_wait(&p->done_cv, &p->mu);
        atomic_store(&p->done_sleepers, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

OqcfPool *oqcf_pool_create(int nthreads) {
    if (nthreads < 1)
        return NULL;
    OqcfPool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->nthreads = nthreads;
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->work_sleepers, 0);
    atomic_init(&p->done_sleepers, 0);
    atomic_flag_clear(&p->busy);
    if (nthreads == 1)
        return p;
    p->workers = calloc((size_t)nthreads - 1, sizeof *p->workers);
    if (!p->workers) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int t = 1; t < nthreads; t++) {
        OqcfWorker *w = &p->workers[t - 1];
        w->pool = p;
        w->tid = t;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            p->nthreads = t;   /* destroy joins the t - 1 started workers */
            oqcf_pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

void oqcf_pool_destroy(OqcfPool *p) {
    if (!p)
        return;
    if (p->nthreads > 1) {
        p->stop = 1;
        wake_workers(p);
        pthread_mutex_lock(&p->mu);   /* a worker may be between its check and its wait */
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
        for (int t = 1; t < p->nthreads; t++)
            pthread_join(p->workers[t - 1].thread, NULL);
        pthread_cond_destroy(&p->done_cv);
        pthread_cond_destroy(&p->work_cv);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->workers);
    free(p);
}

int oqcf_pool_threads(const OqcfPool *p) {
    return p ? p->nthreads : 1;
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

void oqcf_parallel_for(OqcfPool *p, int64_t n, OqcfRangeFn fn, void *ctx) {
    if (n <= 0)
        return;
    if (!p || p->nthreads == 1 || n == 1 || atomic_flag_test_and_set(&p->busy)) {
        fn(ctx, 0, n, 0);
        return;
    }
    int chunks = n < p->nthreads ? (int)n : p->nthreads;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunks = chunks;
    atomic_store(&p->pending, p->nthreads - 1);
    wake_workers(p);
    int64_t b, e;
    chunk_bounds(n, chunks, 0, &b, &e);
    fn(ctx, b, e, 0);
    wait_workers(p);
    atomic_flag_clear(&p->busy);
}
