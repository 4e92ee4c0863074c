/* worker_items.h: the queues a worker drains, one item's at a time: the
 * registry's items (registry.h), read afresh about once a second, which
 * queue (or processing list) holds orders, and this connection's claims on
 * its processing lists (sweep_claim). */
#ifndef SECKILL_WORKER_ITEMS_H
#define SECKILL_WORKER_ITEMS_H

#include <stddef.h>
#include <stdint.h>

#include "redis_nodes.h"

/* How often the registry is read again. */
#define WORKER_ITEMS_REFRESH_MS 1000

typedef struct worker_items {
    const char *worker_id;
    const char *token; /* this run's: the claims' value */
    int64_t *ids;      /* the registry as last read, sorted */
    size_t n;
    size_t at;         /* index in ids of the queue drained last */
    int64_t next_read; /* monotonic ms of the next registry read */
    int64_t *claimed;  /* items whose list this connection claimed, sorted */
    size_t nclaimed;
    size_t claimed_cap;
} worker_items;

/* Nothing read yet; worker_id and token must outlive it. */
void worker_items_init(worker_items *it, const char *worker_id, const char *token);
void worker_items_close(worker_items *it);

/* A new connection: every list is claimed again before it is touched. */
void worker_items_forget_claims(worker_items *it);

/* Reads the registry when WORKER_ITEMS_REFRESH_MS passed since the last
 * read, or now with force. Returns 0, or -1 on a Redis error (logged; the
 * last view stays). */
int worker_items_refresh(worker_items *it, redis_nodes *rn, int force);

/* Claims this worker's processing list of item, once per connection.
 * Returns 0, or -1 on a Redis error. */
int worker_items_claim(worker_items *it, redis_nodes *rn, int64_t item);

/* Finds, in one round trip per node (a pipelined LLEN per item), the first
 * item from index from on (round robin) whose queue (lists = 0) or this
 * worker's processing list (lists = 1) holds anything: *at gets its index.
 * Returns 1 when found, 0 when every one is empty (or there are none), -1
 * on a Redis error (logged). */
int worker_items_find(worker_items *it, redis_nodes *rn, int lists, size_t from, size_t *at);

#endif
