/* worker_queue.h: the worker's side of the reliable queue in Redis: orders
 * move from an item's queue into the worker's own processing list for it
 * (atomically, so each is always in exactly one of them), are read back
 * after a crash, and leave it only once PostgreSQL has them (worker.c has
 * the protocol). Every call works on the keys of its batch's source
 * (worker_batch_from), all in one Redis Cluster slot, over the connection
 * to the node that serves them; its replies are judged by redis_nodes_reply,
 * so a node lost is dropped and a MOVED (a slot resharded away) marks the
 * slot map stale: the call fails, and the caller starts again. */
#ifndef SECKILL_WORKER_QUEUE_H
#define SECKILL_WORKER_QUEUE_H

#include <hiredis/hiredis.h>

#include "redis_nodes.h"
#include "scripts.h"
#include "worker_batch.h"

/* What the calls work on; all of it the worker's. */
typedef struct worker_queue {
    redis_nodes *rn;       /* the worker's connections, c among them */
    redisContext *c;       /* redis_nodes_for_key of the batch's queue; NULL: that node is down */
    const scripts *sc;     /* queue_move.lua, order_lock_release.lua */
    int order_locks;       /* order_guard = lock: the acknowledgement frees the order locks */
    const char *block_arg; /* BLMOVE's timeout on an empty queue, in seconds */
    int batch_ms;          /* how long a batch waits to fill after its first order */
    worker_batch *b;       /* where the orders land; its src says from where */
} worker_queue;

/* Moves orders from the queue to the processing list, and copies into the
 * batch, until the batch is full or batch_ms passed since the first one came.
 * A batch that already holds orders (moved by worker_queue_ack) is topped up
 * the same way, without waiting for a first one. Returns how many are in
 * hand (0: none came within the block time), or -1 on a Redis error (logged;
 * what moved stays in the processing list). */
int worker_queue_fill(const worker_queue *q);

/* Moves up to a batch's room of orders into the batch at once, without
 * waiting for any (one script call). Returns how many moved, or -1 on a
 * Redis error (logged; what moved stays in the processing list). */
int worker_queue_move(const worker_queue *q);

/* Reads the oldest orders of the processing list, those a previous run (or
 * this one, before Redis failed) moved but did not acknowledge, at most a
 * batch. Returns how many (0: the list is empty), or -1 on a Redis error. */
int worker_queue_load(const worker_queue *q);

/* Acknowledges the committed batch in one MULTI: its dead letters pushed,
 * its orders out of the pending hash and out of the processing list, and
 * (order_locks) its buyers' order locks freed by compare-and-delete; the
 * locks of other slots (a segmented item's buyers' homes) are freed just
 * after, one call each (one that fails expires). The batch is cleared once
 * that is done. With
 * move_next (only when the processing list holds nothing but this batch),
 * the same round trip moves up to a batch of the next orders: the batch is
 * cleared and holds them on return. Returns how many moved (0 without
 * move_next), -1 when the acknowledgement failed, -2 when it was done but
 * the move failed (the processing list may then hold orders not in hand:
 * read it again). Errors are logged. */
int worker_queue_ack(const worker_queue *q, int move_next);

/* How long worker_queue_replicated waits for the replicas. */
#define WORKER_QUEUE_WAIT_MS 1000

/* Waits until every replica the node has online holds the orders in hand
 * (WAIT after this connection's writes, the move that took them among
 * them): only then may PostgreSQL have them, so that a failover cannot
 * give a persisted order's unit to another buyer (the new master would not
 * know it was sold). A node without replicas answers at once. Returns 0, or
 * -1 when a replica did not confirm within WORKER_QUEUE_WAIT_MS or Redis
 * failed (logged; the orders stay in the processing list). */
int worker_queue_replicated(const worker_queue *q);

#endif
