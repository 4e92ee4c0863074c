/* worker_batch.h: the batch of orders a worker holds between reading them
 * from its processing list and acknowledging them: the payloads, sorted
 * into orders (the insert's columns, the ids to drop from the pending hash)
 * and undecodable ones (for the dead-letter list). Pure: no I/O, so the unit
 * tests feed it payloads. */
#ifndef SECKILL_WORKER_BATCH_H
#define SECKILL_WORKER_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "order_row.h"
#include "pg_array.h"

/* The insert's parameters (order_row.h: order_insert_values says which):
 * one array each. */
#define WORKER_BATCH_COLUMNS ORDER_INSERT_PARAMS

/* Latest acceptance time PostgreSQL's timestamptz takes from us
 * (9999-12-31T23:59:59.999Z); later ones would fail the whole batch forever. */
#define WORKER_BATCH_MAX_CREATED_MS 253402300799999LL

/* The keys of the queue a batch comes from: one item's, all in its slot, so
 * the move, the acknowledgement's MULTI and the sweep each stay in one
 * Redis Cluster slot. */
typedef struct worker_source {
    int64_t item;
    char queue[KEYS_MAX];
    char processing[KEYS_MAX]; /* this worker's list for the queue */
    char pending[KEYS_MAX];
    char dead[KEYS_MAX];
} worker_source;

/* The keys of item's queue for worker_id. */
void worker_source_init(worker_source *src, int64_t item, const char *worker_id);

/* The orders in hand: copies of the processing list's payloads, the ones
 * that decoded, and the ones bound for the dead-letter list. */
typedef struct worker_batch {
    worker_source src; /* where the orders come from and are acknowledged */
    size_t cap;        /* cfg->worker_batch_size */
    size_t n;          /* payloads in hand */
    char **payload;    /* owned copies */
    size_t *payload_len;
    size_t norders;         /* payloads that decoded to plausible orders */
    const char **dead_argv; /* "LPUSH", src.dead, then the dead payloads */
    size_t *dead_argvlen;
    size_t ndead;
    const char **pending_argv; /* "HDEL", src.pending, then the decoded order ids */
    size_t *pending_argvlen;
    char (*ids)[24]; /* text of the decoded order ids */
    /* The order locks of the decoded orders' buyers (keys_order_lock; none
     * for an anonymous order), each to be freed if it still holds its order
     * id: the nlocks in the source's slot first in locks and lock_ids (the
     * acknowledgement frees them), the nfar of other slots (a segmented
     * item's buyers' homes) last, from locks[cap - 1] down. */
    char (*locks)[KEYS_MAX];
    const char **lock_ids;
    size_t nlocks, nfar;
    const char **lock_keys_args; /* the first nlocks locks, then their ids */
    const char **lock_argv;      /* room for the release's call */
    size_t *lock_argvlen;
    int64_t oldest_ms; /* acceptance time of its oldest decoded order */
    pg_array columns[WORKER_BATCH_COLUMNS];
} worker_batch;

/* Room for cap payloads. Returns 0, or -1 out of memory (nothing left to
 * free). worker_batch_close() frees it. */
int worker_batch_init(worker_batch *b, size_t cap);
void worker_batch_close(worker_batch *b);

/* Drops the payloads in hand; the room and the source stay. */
void worker_batch_clear(worker_batch *b);

/* Sets where the batch's next orders come from (a copy of src): only while
 * it holds none. */
void worker_batch_from(worker_batch *b, const worker_source *src);

/* Adds a copy of a payload; at most cap. Returns 0, or -1 when out of
 * memory or full. */
int worker_batch_add(worker_batch *b, const char *payload, size_t len);

/* Decodes every payload: plausible orders (order_decode(), an acceptance
 * time PostgreSQL takes) go to the columns, in PostgreSQL's array text
 * ("{1,2}"), to the pending ids and, but for an anonymous order's, to the
 * locks; the rest to the dead-letter argv. Sets norders, ndead, nlocks,
 * nfar and oldest_ms. */
void worker_batch_sort(worker_batch *b);

#endif
