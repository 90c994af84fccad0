/* ca_fast_pool.c: pthread workers woken per job by a generation counter, joined with a
 * condition variable; an in-job pthread barrier for the step-to-step dependencies. */
#define _GNU_SOURCE /* sched_getaffinity: the cores this process may run on */
#include "ca_fast_pool.h"

#include "error.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

enum { POOL_MAX_THREADS = 256 };

typedef struct {
    ca_fast_pool *pool;
    int index;
} pool_worker;

struct ca_fast_pool {
    int threads, started;
    pthread_t *ids;
    pool_worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    unsigned long generation; /* bumped once per job, so a worker never runs a job twice */
    int busy, quit;
    ca_fast_job job;
    void *ctx;
    pthread_barrier_t barrier;
};

static void *worker_main(void *arg)
{
    pool_worker *w = arg;
    ca_fast_pool *p = w->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen && !p->quit) pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit) break;
        seen = p->generation;
        ca_fast_job job = p->job;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->lock);
        job(ctx, w->index, p->threads);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int ca_fast_pool_create(ca_fast_pool **out, int threads)
{
    *out = NULL;
    if (threads < 1 || threads > POOL_MAX_THREADS) return err_set(DLCA_ERR, "thread count %d out of range 1..%d", threads, POOL_MAX_THREADS);
    ca_fast_pool *p = calloc(1, sizeof *p);
    if (!p) return err_set(DLCA_ERR_NOMEM, "out of memory for the thread pool");
    p->threads = threads;
    *out = p;
    if (threads == 1) return DLCA_OK;
    p->ids = calloc((size_t)threads, sizeof *p->ids);
    p->workers = calloc((size_t)threads, sizeof *p->workers);
    if (!p->ids || !p->workers) {
        ca_fast_pool_destroy(p), *out = NULL;
        return err_set(DLCA_ERR_NOMEM, "out of memory for the thread pool");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    pthread_barrier_init(&p->barrier, NULL, (unsigned)threads);
    p->started = 1; /* thread 0 is the caller */
    for (int i = 1; i < threads; i++) {
        p->workers[i] = (pool_worker){p, i};
        if (pthread_create(&p->ids[i], NULL, worker_main, &p->workers[i]) != 0) {
            ca_fast_pool_destroy(p), *out = NULL;
            return err_set(DLCA_ERR, "could not start worker thread %d of %d", i, threads);
        }
        p->started++;
    }
    return DLCA_OK;
}

void ca_fast_pool_destroy(ca_fast_pool *p)
{
    if (!p) return;
    if (p->started > 0) {
        pthread_mutex_lock(&p->lock);
        p->quit = 1;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 1; i < p->started; i++) pthread_join(p->ids[i], NULL);
        pthread_barrier_destroy(&p->barrier);
        pthread_cond_destroy(&p->idle), pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
    }
    free(p->ids), free(p->workers), free(p);
}

void ca_fast_pool_run(ca_fast_pool *p, ca_fast_job job, void *ctx)
{
    if (p->threads == 1) {
        job(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->job = job, p->ctx = ctx, p->busy = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    job(ctx, 0, p->threads);
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void ca_fast_pool_barrier(ca_fast_pool *p)
{
    if (p->threads > 1) pthread_barrier_wait(&p->barrier);
}

int ca_fast_default_threads(void)
{
    /* The cores this process may run on (taskset, a container's CPU set), not every online one:
     * more threads than those only take turns. */
    cpu_set_t allowed;
    long cores = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed)
                                                                     : sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)cores;
}
