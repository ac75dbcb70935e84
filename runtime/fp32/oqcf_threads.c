/* oqcf_threads.c - a tiny persistent thread pool: the parallel-for behind oqc's pools
 * (see oqcf_nn.h), for the executor and, with `oqc compile --threads N`, the emitted
 * code's default.
 *
 * Design: nthreads - 1 workers are started once, by oqcf_threads_create(), and wait for
 * jobs.  A job is published by bumping `gen`; a worker spins on it for 50 us (so
 * back-to-back kernels start in about a microsecond) and afterwards sleeps on a
 * condition variable.  A job is n tasks: thread t (0 = the caller) runs tasks t,
 * t + nthreads, ...; the caller runs its share itself and waits for `pending` to drop to
 * zero with the same spin-then-sleep scheme.  Nothing is allocated per call.
 *
 * Lost wake-ups are avoided with sequentially consistent atomics: a sleeper increments
 * its `*_sleepers` counter under the mutex and re-checks the condition before waiting;
 * a waker changes the condition first and takes the mutex to broadcast only when it
 * sees a sleeper.  Either the waker sees the sleeper, or the sleeper sees the change.
 *
 * One job runs at a time: a call made while the pool is busy (nested inside a job, or
 * from a second thread) runs its tasks on its caller.
 *
 * C11 (<stdatomic.h>) and POSIX (pthreads, clock_gettime): the one runtime file that is
 * not C99, built only where threads are wanted. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "oqcf_nn.h"

#include <pthread.h>
#include <stddef.h>
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
    OqcfThreads *pool;   /* owning pool */
    int tid;             /* 1..nthreads-1 */
    pthread_t thread;    /* the thread */
} OqcfWorker;

struct OqcfThreads {
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
    OqcfTaskFn task;                /* current job: task(arg, i) for i in [0, n) */
    void *arg;
    int n;
};

/* Thread t's tasks of the current job. */
static void run_share(OqcfThreads *p, int t) {
    for (int i = t; i < p->n; i += p->nthreads)
        p->task(p->arg, i);
}

static void *worker_main(void *arg) {
    OqcfWorker *w = arg;
    OqcfThreads *p = w->pool;
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
        run_share(p, w->tid);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->done_sleepers)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* Publishes the job fields already stored in p (gen's seq_cst bump orders them). */
static void wake_workers(OqcfThreads *p) {
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->work_sleepers)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static void wait_workers(OqcfThreads *p) {
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

OqcfThreads *oqcf_threads_create(int nthreads) {
    if (nthreads < 1)
        return NULL;
    OqcfThreads *p = calloc(1, sizeof *p);
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
            oqcf_threads_destroy(p);
            return NULL;
        }
    }
    return p;
}

void oqcf_threads_destroy(OqcfThreads *p) {
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

void oqcf_threads_run(void *threads, OqcfTaskFn task, void *arg, int n) {
    OqcfThreads *p = threads;
    if (n <= 0)
        return;
    if (!p || p->nthreads == 1 || n == 1 || atomic_flag_test_and_set(&p->busy)) {
        for (int i = 0; i < n; i++)
            task(arg, i);
        return;
    }
    p->task = task;
    p->arg = arg;
    p->n = n;
    atomic_store(&p->pending, p->nthreads - 1);
    wake_workers(p);
    run_share(p, 0);
    wait_workers(p);
    atomic_flag_clear(&p->busy);
}

/* The shared pools, one per thread count asked for (a process asks for one or two). */
#define SHARED_MAX 16
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static OqcfThreads *shared[SHARED_MAX];

OqcfThreads *oqcf_threads_shared(int nthreads) {
    OqcfThreads *t = NULL;
    int i;
    pthread_mutex_lock(&shared_mu);
    for (i = 0; i < SHARED_MAX && shared[i]; i++)
        if (shared[i]->nthreads == nthreads)
            break;
    if (i < SHARED_MAX && shared[i])
        t = shared[i];
    else if (i < SHARED_MAX)
        t = shared[i] = oqcf_threads_create(nthreads);
    pthread_mutex_unlock(&shared_mu);
    return t;
}

OqcfPool *oqcf_pool_create(int nthreads) {
    OqcfPool *p = nthreads >= 1 ? malloc(sizeof *p) : NULL;
    if (!p)
        return NULL;
    p->run = oqcf_threads_run;
    p->nthreads = nthreads;
    if (!(p->ctx = oqcf_threads_create(nthreads))) {
        free(p);
        return NULL;
    }
    return p;
}

void oqcf_pool_destroy(OqcfPool *pool) {
    if (!pool)
        return;
    oqcf_threads_destroy(pool->ctx);
    free(pool);
}
