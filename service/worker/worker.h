/* worker.h: the order worker: moves orders from the Redis queue into
 * PostgreSQL in batches, each order exactly once, surviving crashes of itself,
 * of Redis and of PostgreSQL (see worker.c for the protocol). */
#ifndef SECKILL_WORKER_H
#define SECKILL_WORKER_H

#include <stdatomic.h>
#include <stddef.h>

#include "config.h"
#include "metrics.h"

typedef struct worker worker;

/* Makes a worker for cfg, which must outlive it (worker_id, batch size and
 * time, retry ceiling, Redis and PostgreSQL settings are read from it).
 * Connects to nothing yet. Returns NULL with err set when out of memory.
 * Free with worker_free(). */
worker *worker_create(const config *cfg, char *err, size_t errlen);

/* Frees w and closes its connections; NULL is a no-op. An unfinished batch
 * stays in the worker's processing list, where the next run finds it. */
void worker_free(worker *w);

/* Runs until *stop becomes non-zero (set it from a signal handler or
 * another thread). First takes the worker id (its heartbeat; a crashed
 * run's heartbeat is waited out) and persists whatever the processing list
 * still holds from a previous run, then moves orders from the queue; keeps
 * the heartbeat and, every cfg->worker_sweep_ms, runs the recovery sweep
 * when elected (sweep.h). Waits and retries, with backoff, while Redis or
 * PostgreSQL is down (or memory is short): nothing makes it drop an order.
 * Returns 0 within about a second of the stop request, or once the batch in
 * hand is committed; -1 at once when another live worker holds the id
 * (logged; the processing list is left to that worker). */
int worker_run(worker *w, const atomic_int *stop);

/* The worker's id (cfg->worker_id). */
const char *worker_id_of(const worker *w);

/* What the worker did so far (for its /metrics); any thread may ask. */
void worker_read_metrics(const worker *w, metrics_worker *out);

#endif
