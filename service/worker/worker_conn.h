/* worker_conn.h: the worker's connections and their life: Redis (every
 * master's connection named and its scripts loaded, the worker id taken by
 * the heartbeat) and PostgreSQL opened and dropped, and the naps between retries, cut short
 * by a stop request. Each call works on w's own connection of the moment
 * (worker_state.h); none retries by itself. */
#ifndef SECKILL_WORKER_CONN_H
#define SECKILL_WORKER_CONN_H

#include <stdint.h>

#include "worker_state.h"

/* Whether a stop was requested (*w->stop non-zero). */
int worker_conn_stop_requested(const worker *w);

/* Sleeps ms in short naps, returning early when a stop is requested. */
void worker_conn_nap(const worker *w, int64_t ms);

/* Makes w->redis and connects it to every master (closing it again on any
 * failure), names each connection and loads the scripts there, and takes
 * the worker id with worker_conn_heartbeat(w, 1); forgets the claims of the
 * last connections. Returns 0, -1 on a failure or a stop request
 * (logged), -2 when another live worker holds the id (w->id_taken set). */
int worker_conn_redis_connect(worker *w);

/* Closes w->redis, every connection of it; without one, a no-op. */
void worker_conn_redis_drop(worker *w);

/* Refreshes the heartbeat, which also takes the id for this run. Another
 * token's heartbeat is a live worker's or a crashed run's: with wait set,
 * waits out its remaining TTL once (a crashed run's expires, a live one's is
 * refreshed meanwhile). Returns 0, -1 on a Redis error or a stop request,
 * -2 when another live worker holds the id (w->id_taken set, logged). */
int worker_conn_heartbeat(worker *w, int wait);

/* Connects w->pg (worker_pg_connect). Returns 0, or -1 (logged). */
int worker_conn_pg_connect(worker *w);

/* Closes w->pg; without one, a no-op. */
void worker_conn_pg_drop(worker *w);

#endif
