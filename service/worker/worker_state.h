/* worker_state.h: the worker's state, private to service/worker: the struct
 * that worker.c (the protocol and loop), worker_conn.c (the connections) and
 * worker_chores.c (the periodic chores) share. Nothing outside the worker's
 * files includes it; worker.h keeps the type opaque. */
#ifndef SECKILL_WORKER_STATE_H
#define SECKILL_WORKER_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include <sys/time.h>

#include <libpq-fe.h>

#include "config.h"
#include "redis_nodes.h"
#include "scripts.h"
#include "sweep.h"
#include "waitlist.h"
#include "worker_batch.h"
#include "worker_items.h"
#include "worker_queue.h"

/* How long one BLMOVE blocks on an empty queue: the worst delay before the
 * worker notices a stop request. */
#define WORKER_BLOCK_MS 1000

/* What the worker did: logged when it stops, read by its /metrics thread
 * (hence atomic; written by the worker's thread alone). */
typedef struct worker_stats {
    _Atomic int64_t batches;  /* batches committed and acknowledged */
    _Atomic int64_t inserted; /* rows the inserts added */
    _Atomic int64_t
        skipped; /* decoded orders not inserted: repeats, units already held, unknown items */
    _Atomic int64_t dead;         /* payloads moved to the dead-letter list */
    _Atomic int64_t last_batch;   /* orders in the last acknowledged batch */
    _Atomic int64_t lag_ms;       /* its oldest order's age when it was acknowledged */
    _Atomic int64_t pg_errors;    /* failed inserts and connects */
    _Atomic int64_t redis_errors; /* Redis failures that made it reconnect */
    _Atomic int64_t sweeps;       /* sweeps this worker was elected to run */
    _Atomic int64_t swept_lists;  /* dead workers' lists it moved onto the queue */
    _Atomic int64_t swept_orders; /* orders in them */
    _Atomic int64_t expiries;     /* expiry passes this worker was elected to run */
    _Atomic int64_t expired;      /* unpaid orders it expired */
    _Atomic int64_t returned;     /* units it gave back (expired, and owed returns finished) */
    _Atomic int64_t drawn_served; /* waitlisted entrants of drawn items it served (waitlist.h) */
    _Atomic int64_t drawn_units;  /* their units */
} worker_stats;

/* The same typedef as worker.h's (C11 allows the repeat), so that the
 * worker's own modules need not include the public header. */
typedef struct worker worker;

struct worker {
    const config *cfg;
    char block_arg[32]; /* BLMOVE's timeout argument, in seconds */
    char poll_arg[32];  /* the same with several queues: WORKER_POLL_MS */
    struct timeval
        queue_timeout;           /* the queue's connection's: a BLMOVE's reply may take its block */
    char token[SWEEP_TOKEN_MAX]; /* this run's: the heartbeat's and the sweep lock's value */
    int64_t beat_ms;             /* heartbeat refresh period; its TTL is 3 of them */
    int64_t next_beat;           /* monotonic ms of the next refresh */
    int64_t next_sweep;          /* monotonic ms of the next try for the sweep lock */
    int64_t next_expiry;         /* monotonic ms of the next try for the expiry lock */
    int64_t next_waitlist;       /* monotonic ms of the next draw chore (waitlist.h) */
    waitlist wl;                 /* the draw chore's order ids */
    int id_taken;                /* another live worker holds the id: stop */
    scripts sc;                  /* digests learnt at each connect (SCRIPT LOAD) */
    redis_nodes *redis;          /* made at each connect, every master set up (worker_conn.h) */
    PGconn *pg;
    const atomic_int *stop;
    worker_batch batches[2];
    worker_batch *hand;  /* the batch being persisted and acknowledged */
    worker_batch *spare; /* the next one, moved while PostgreSQL inserts */
    worker_queue q;      /* the Redis side of the batch (worker_queue.h) */
    worker_items items;  /* the queues to drain (worker_items.h) */
    int64_t turn_ends;   /* monotonic ms when the queue drained now yields */
    worker_stats stats;
};

#endif
