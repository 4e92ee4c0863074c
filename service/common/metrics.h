/* metrics.h: the server's counters and its latency histogram, rendered in
 * the Prometheus text format (version 0.0.4). Counting is lock-free (relaxed
 * atomics), so the hot path pays a few increments. */
#ifndef SECKILL_METRICS_H
#define SECKILL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "text_buf.h"

typedef struct metrics metrics;

/* Outcomes of the production purchase path, as counted. */
typedef enum metrics_outcome {
    METRICS_QUEUED = 0,
    METRICS_SOLD_OUT,
    METRICS_SOLD_OUT_FLAG, /* answered from the in-memory flag, no Redis */
    METRICS_NOT_STARTED,
    METRICS_NOT_STARTED_MEMORY, /* answered from memory: the start is surely ahead */
    METRICS_ENDED,
    METRICS_ENDED_MEMORY, /* answered from memory: the end surely passed */
    METRICS_LIMIT_REACHED,
    METRICS_INSUFFICIENT_STOCK,
    METRICS_UNKNOWN_ITEM,
    METRICS_QUEUE_FULL,   /* refused: too many orders wait for PostgreSQL */
    METRICS_RATE_LIMITED, /* refused: the buyer's token bucket was empty */
    METRICS_FAILED,
    METRICS_UNCONFIRMED,    /* reserved, not confirmed by reserve_wait_replicas replicas in time */
    METRICS_ARCHIVED,       /* the item is archived (from Redis or from memory) */
    METRICS_BUYER_REQUIRED, /* anonymous, where the limit is below the round's units */
    METRICS_IN_PROGRESS,    /* the buyer's order lock stood: an order still being created */
    METRICS_ADMISSION_REFUSED, /* a room item's purchase without a valid admission */
    METRICS_OUTCOME_COUNT
} metrics_outcome;

typedef enum metrics_backend {
    METRICS_REDIS = 0,
    METRICS_POSTGRESQL,
    METRICS_BACKEND_COUNT
} metrics_backend;

/* names[r] labels route r of the nroutes the server has (router_name()). */
metrics *metrics_create(const char *const *names, int nroutes);
void metrics_free(metrics *m);

/* One answered request: its route index, HTTP status and time taken. */
void metrics_request(metrics *m, int route, int status, double seconds);
void metrics_purchase(metrics *m, metrics_outcome outcome);
void metrics_backend_error(metrics *m, metrics_backend backend);
/* One call of the batch reserve script carrying buyers purchases. */
void metrics_purchase_batch(metrics *m, int buyers);

/* A purchase batch a Redis Cluster redirected (sent again elsewhere). */
typedef enum metrics_redirect {
    METRICS_MOVED = 0, /* the slot has another master for good */
    METRICS_ASK,       /* the slot is being moved: asked at the new master once */
    METRICS_TRYAGAIN,  /* its keys were split by a move: sent again after a pause */
    METRICS_REDIRECT_COUNT
} metrics_redirect;
void metrics_redis_redirect(metrics *m, metrics_redirect kind);

/* What is read at scrape time rather than counted. */
typedef struct metrics_gauges {
    int64_t soldout_flags; /* items flagged sold out on this instance */
    int64_t queue;         /* orders on the items' queues, -1 when unknown */
    int64_t processing;    /* orders in workers' processing lists, -1 when unknown */
    int64_t pending;       /* orders accepted and not yet persisted, -1 when unknown */
    int64_t dead;          /* the items' dead letters, -1 when unknown */
} metrics_gauges;

/* The whole exposition; the caller frees it. NULL when out of memory. */
char *metrics_render(metrics *m, const metrics_gauges *g);

/* The same exposition appended to t (the server's /metrics answer goes
 * on with the waiting rooms' text in the same buffer). */
void metrics_render_into(metrics *m, const metrics_gauges *g, text_buf *t);

/* A worker's counters, as seckill-worker exposes them on its own /metrics. */
typedef struct metrics_worker {
    int64_t batches, inserted, skipped, dead; /* counters */
    int64_t last_batch;                       /* orders in the last acknowledged batch */
    int64_t lag_ms;                           /* its oldest order's age at acknowledgement */
    int64_t pg_errors, redis_errors;          /* counters */
    int64_t expired;                          /* unpaid orders its expiry passes expired */
    int64_t returned;                         /* units its expiry passes gave back on sale */
} metrics_worker;

/* The worker's exposition (labels: worker="<id>"); the caller frees it. */
char *metrics_render_worker(const char *worker_id, const metrics_worker *w);

#endif
