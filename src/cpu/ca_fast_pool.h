/* ca_fast_pool.h: a fixed set of worker threads for the fast CPU engine. A job runs on every
 * thread at once (the caller's thread is thread 0) and may meet at a barrier; the work split
 * is the job's, so results never depend on which thread ran first. */
#ifndef DLCA_CA_FAST_POOL_H
#define DLCA_CA_FAST_POOL_H

typedef void (*ca_fast_job)(void *ctx, int thread, int threads);

typedef struct ca_fast_pool ca_fast_pool;

/* Starts threads - 1 workers (none for 1 thread). */
int ca_fast_pool_create(ca_fast_pool **pool, int threads);

/* Stops and joins the workers; NULL is allowed. */
void ca_fast_pool_destroy(ca_fast_pool *pool);

/* Runs job(ctx, thread, threads) on every thread and returns when all have finished. */
void ca_fast_pool_run(ca_fast_pool *pool, ca_fast_job job, void *ctx);

/* Inside a job: waits until every thread has reached the barrier. */
void ca_fast_pool_barrier(ca_fast_pool *pool);

/* Threads for the engine when none are asked for: the cores this process may run on (its CPU
 * affinity; the online cores where that is unknown), at most POOL_MAX_THREADS. */
int ca_fast_default_threads(void);

#endif
