/* pool.h: a few threads for the calls that block (PostgreSQL, synchronous
 * Redis): admin calls, item and order reads, readiness. Each thread owns a
 * context made by a factory (its own connections), so jobs share nothing. */
#ifndef SECKILL_POOL_H
#define SECKILL_POOL_H

#include "http_server.h"

typedef struct pool pool;

/* Makes and frees a thread's context; make may return NULL (the jobs then
 * see NULL and answer "unavailable"). */
typedef void *(*pool_ctx_make)(void *factory_arg);
typedef void (*pool_ctx_free)(void *thread_ctx);

/* Runs on a pool thread with that thread's context. */
typedef void (*pool_job_fn)(void *thread_ctx, void *arg);

/* Starts nthreads threads. Returns NULL on failure. */
pool *pool_create(int nthreads, pool_ctx_make make, pool_ctx_free free_ctx, void *factory_arg);

/* Queues fn(thread_ctx, arg). Returns 0, or -1 when stopping. */
int pool_submit(pool *p, pool_job_fn fn, void *arg);

/* Hands a request to the pool: defers ex, then queues fn(thread_ctx, job),
 * which must answer ex and free job. When the pool is stopping, frees job
 * (free()) and answers 503 backend_down "the server is stopping" instead.
 * On the handler's thread. Returns 0, or -1 when it answered. */
int pool_submit_exchange(pool *p, http_exchange *ex, pool_job_fn fn, void *job);

/* Runs the jobs still queued, then stops the threads. NULL is a no-op. */
void pool_free(pool *p);

#endif
