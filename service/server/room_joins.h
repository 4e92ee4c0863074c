/* room_joins.h: group commit of the waiting room's joins (issue 27). A
 * join does not take a pool thread of its own: it waits in a queue, and a
 * few drainers on the pool take what gathered while their last batch was
 * on its way, up to ROOM_JOINS_BATCH at a time, and settle it with one
 * script call an item (lua/room_join.lua). Under light load a batch is one
 * join and waits for nothing; under heavy load the pool hop and Redis's
 * script call are paid once a batch instead of once a join.
 *
 * The queue knows nothing of the joins: its user (room.c) hands a batch to
 * run on a pool thread, in the order the joins came. Any thread may add. */
#ifndef SECKILL_ROOM_JOINS_H
#define SECKILL_ROOM_JOINS_H

#include "pool.h"

/* The most joins one batch holds. */
#define ROOM_JOINS_BATCH 64

typedef struct room_joins room_joins;

/* Settles jobs[0..n) (n >= 1) on a pool thread with its context (NULL:
 * none: every job still gets its answer). */
typedef void (*room_joins_run)(void *thread_ctx, void **jobs, int n);

/* A queue whose batches run fn on pool p (both outlive it). NULL when out
 * of memory. */
room_joins *room_joins_create(pool *p, room_joins_run fn);

/* Queues job. Returns 0, or -1 when the pool is stopping or out of memory
 * (job not taken). */
int room_joins_add(room_joins *q, void *job);

/* Frees q, after the pool ran its jobs (pool_free): none is left. NULL is a
 * no-op. */
void room_joins_free(room_joins *q);

#endif
