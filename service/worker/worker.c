/* worker.c: the reliable queue consumer that persists orders.
 *
 * The protocol, and why each order reaches PostgreSQL exactly once:
 *   1. Orders move from an item's queue to this worker's own processing
 *      list for that item, in the queue's slot (BLMOVE for the first, then
 *      one script call for the rest of the batch). A move is atomic in
 *      Redis, so an order is always in exactly one of the two lists: a
 *      crash here loses nothing.
 *   2. The batch is inserted in one statement (order_row.h, worker_pg.c)
 *      whose effect is idempotent: the order id is the primary key, and a
 *      batch that meets a row already there goes again with ON CONFLICT DO
 *      NOTHING, so inserting it twice is harmless and a crash between
 *      commit and step 3 costs a repeat, not a duplicate.
 *   3. Only after the commit are the orders removed from the processing
 *      list. Whoever restarts with the same worker id (or this run, after
 *      losing Redis) first repeats steps 2 and 3 for what the list holds.
 * The processing list is therefore the source of truth about the batch in
 * hand; the copy in memory is thrown away whenever Redis fails, and re-read.
 * While the queue is full, Redis works while PostgreSQL runs step 2 of a
 * batch: step 3 of the previous batch (committed) and step 1 of the next go
 * in one round trip. The list then holds up to three batches, the oldest at
 * the tail, and step 3 removes exactly the oldest one's count from the tail.
 * (Without a PostgreSQL connection to send on, the next batch moves in the
 * same round trip as this one's step 3 instead.) A crash at any point leaves
 * every batch not acknowledged in the list.
 *
 * Every item has its own queue (keys.h: each script stays in one Redis
 * Cluster slot), so the worker drains one queue at a time, as above, for a
 * turn of up to WORKER_TURN_MS (endless while it is the only queue) or until
 * it runs dry, then moves on to the next one that holds orders
 * (worker_items.h: the registry of items, read about once a second, and one
 * pipelined LLEN per item to find it). With several queues and nothing to
 * do it blocks on the last one drained for WORKER_POLL_MS at a time, so an
 * order on any other waits that long at most before its batch starts.
 *
 * A worker that never comes back is covered by the sweep (sweep.c): each
 * worker keeps a heartbeat while it lives, and once per worker_sweep_ms one
 * of them, elected by a Redis lock, moves the lists of workers without a
 * heartbeat back onto the queue. The heartbeat also keeps two live workers
 * from sharing an id: the second refuses to start.
 *
 * This file is the protocol and its loop; the connections, the heartbeat
 * and the naps between retries are worker_conn.c's, the chores done when
 * due (the heartbeat's refresh, the sweep, the expiry) worker_chores.c's,
 * and the state they share is worker_state.h. */
#include "worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "backoff.h"
#include "log.h"
#include "sweep.h"
#include "worker_batch.h"
#include "worker_chores.h"
#include "worker_conn.h"
#include "worker_items.h"
#include "worker_pg.h"
#include "worker_queue.h"
#include "worker_state.h"

#define COMPONENT "worker"

/* With several queues, how long one BLMOVE waits on the last queue drained
 * before the others are looked at again. */
#define WORKER_POLL_MS 50
/* How long the worker keeps draining one queue while it holds orders before
 * it gives the others their turn. */
#define WORKER_TURN_MS 500
/* The heartbeat's refresh period when this worker does not sweep
 * (worker_sweep_ms = 0): others may, and must not take it for dead. */
#define WORKER_HEARTBEAT_DEFAULT_MS 5000
/* Longest payload quoted in a log line. */
#define WORKER_LOG_PAYLOAD 200

/* Says which payloads go to the dead-letter list, and why. */
static void log_dead(const worker_batch *b)
{
    for (size_t i = 0; i < b->ndead; i++)
        log_msg(LOG_WARN, COMPONENT, "not an order, moving it to %s: %.*s", b->src.dead,
                WORKER_LOG_PAYLOAD, b->dead_argv[2 + i]);
}

/* The queue's calls for batch b, on the connection to the node of its
 * item's keys, looked up at each call: any other call may have dropped and
 * remade it meanwhile (redis_nodes.h), and then it is the remade one that
 * needs the longer timeout of a BLMOVE. A node that does not answer leaves
 * q.c NULL, and the call fails (logged). */
static const worker_queue *queue(worker *w, worker_batch *b)
{
    redisContext *c = redis_nodes_for_key(w->redis, b->src.queue);
    if (c && redisSetTimeout(c, w->queue_timeout) != REDIS_OK) {
        log_msg(LOG_WARN, COMPONENT, "redis: cannot set the timeout");
        c = NULL;
    }
    w->q.rn = w->redis;
    w->q.c = c;
    w->q.b = b;
    return &w->q;
}

/* ---- the queues ------------------------------------------------------------ */

/* Points batch b at item's queue and claims the list it moves into. Returns
 * 0, or -1 on a Redis error. */
static int batch_from(worker *w, worker_batch *b, int64_t item)
{
    if (worker_items_claim(&w->items, w->redis, item) < 0)
        return -1;
    worker_source src;
    worker_source_init(&src, item, w->cfg->worker_id);
    worker_batch_from(b, &src);
    return 0;
}

/* Reads back the oldest orders of this worker's processing lists, those a
 * previous run (or this one, before Redis failed) moved but did not
 * acknowledge: from the first list that holds any, claimed first. Returns
 * how many are in hand (0: every list is empty), or -1 on a Redis error. */
static int recover_next(worker *w)
{
    worker_items *it = &w->items;
    if (worker_items_refresh(it, w->redis, 1) < 0)
        return -1;
    /* A list found and then emptied by a sweep before the claim is looked
     * for again; after the claim no sweep moves it. */
    for (size_t tries = 0; tries <= it->n; tries++) {
        size_t at;
        int rc = worker_items_find(it, w->redis, 1, 0, &at);
        if (rc <= 0)
            return rc;
        if (batch_from(w, w->hand, it->ids[at]) < 0)
            return -1;
        int n = worker_queue_load(queue(w, w->hand));
        if (n != 0)
            return n;
    }
    return 0;
}

/* Fills the batch in hand (worker_queue_fill). Orders already in hand
 * (moved with the last acknowledgement) are topped up from their queue.
 * An empty hand first picks a queue: the next one after the last drained
 * that holds orders (round robin), else the last drained, waited on for
 * the whole block time when it is the only one, WORKER_POLL_MS otherwise.
 * Returns how many are in hand (0: none came), or -1 on a Redis error. */
static int take_orders(worker *w)
{
    worker_batch *b = w->hand;
    worker_items *it = &w->items;
    /* Also during a turn: an item created meanwhile ends a lone queue's
     * endless turn. */
    if (worker_items_refresh(it, w->redis, 0) < 0)
        return -1;
    if (b->n > 0)
        return worker_queue_fill(queue(w, b));
    if (it->n == 0) {
        worker_conn_nap(w, WORKER_POLL_MS);
        return 0;
    }
    size_t at = it->at;
    if (it->n > 1 && worker_items_find(it, w->redis, 0, (it->at + 1) % it->n, &at) < 0)
        return -1;
    it->at = at;
    if (batch_from(w, b, it->ids[at]) < 0)
        return -1;
    w->q.block_arg = it->n == 1 ? w->block_arg : w->poll_arg;
    w->turn_ends = clock_mono_ms() + WORKER_TURN_MS;
    return worker_queue_fill(queue(w, b));
}

/* ---- the batch into PostgreSQL ------------------------------------------ */

/* Inserts the orders of the batch in hand, retrying with backoff until
 * PostgreSQL commits them; sent: worker_pg_send already sent them. Returns
 * 0, or -1 when a stop request came first (the batch stays in the
 * processing list for the next run). */
static int batch_persist(worker *w, int sent)
{
    worker_batch *b = w->hand;
    if (b->norders == 0)
        return 0;
    int64_t delay = 0;
    for (;;) {
        if (w->pg || worker_conn_pg_connect(w) == 0) {
            int64_t inserted = sent ? worker_pg_finish(w->pg, b) : worker_pg_insert(w->pg, b);
            sent = 0;
            if (inserted >= 0) {
                int64_t skipped = (int64_t)b->norders - inserted;
                w->stats.inserted += inserted;
                w->stats.skipped += skipped;
                log_msg(LOG_DEBUG, COMPONENT,
                        "batch of %zu: inserted %" PRId64 ", skipped %" PRId64
                        " (repeats, units already held, unknown items), dead %zu",
                        b->n, inserted, skipped, b->ndead);
                return 0;
            }
            /* Whatever failed, a fresh connection is the simplest known
             * state: closing rolls back anything left open. */
            worker_conn_pg_drop(w);
        }
        w->stats.pg_errors++; /* the insert failed, or the connect */
        if (worker_conn_stop_requested(w))
            return -1;
        /* Still alive while PostgreSQL is away: the sweep must not take
         * the batch. A Redis error here shows again at the acknowledgement. */
        if (w->redis && clock_mono_ms() >= w->next_beat)
            worker_conn_heartbeat(w, 0);
        delay = backoff_next(delay, w->cfg->worker_retry_max_ms);
        log_msg(LOG_INFO, COMPONENT, "postgresql: retrying %zu orders in %" PRId64 " ms",
                b->norders, delay);
        worker_conn_nap(w, delay);
    }
}

/* Counts an acknowledged batch. */
static void count_acked(worker *w, const worker_batch *done)
{
    w->stats.batches++;
    w->stats.dead += (int64_t)done->ndead;
    w->stats.last_batch = (int64_t)done->n;
    if (done->norders)
        w->stats.lag_ms = clock_wall_ms() - done->oldest_ms;
}

/* Acknowledges a committed batch, b: the one in hand or the one waiting in
 * spare; with move_next the next batch moves into b in the same round trip
 * (worker_queue_ack). Returns how many moved, or -1 when the list must be
 * read again. */
static int ack_batch(worker *w, worker_batch *b, int move_next)
{
    worker_batch done = *b; /* its counts, for the statistics */
    int n = worker_queue_ack(queue(w, b), move_next);
    if (n >= 0 || n == -2)
        count_acked(w, &done);
    return n < 0 ? -1 : n;
}

/* ---- the worker ----------------------------------------------------------- */

worker *worker_create(const config *cfg, char *err, size_t errlen)
{
    worker *w = calloc(1, sizeof(*w));
    if (!w)
        goto fail;
    if (worker_batch_init(&w->batches[0], (size_t)cfg->worker_batch_size) < 0)
        goto fail;
    if (worker_batch_init(&w->batches[1], (size_t)cfg->worker_batch_size) < 0) {
        worker_batch_close(&w->batches[0]);
        goto fail;
    }
    w->hand = &w->batches[0];
    w->spare = &w->batches[1];
    if (scripts_init(&w->sc) < 0) {
        worker_batch_close(&w->batches[0]);
        worker_batch_close(&w->batches[1]);
        free(w);
        snprintf(err, errlen, "worker: a Lua script is missing from the build");
        return NULL;
    }
    w->cfg = cfg;
    sweep_token(w->token, sizeof(w->token), cfg->worker_id);
    worker_items_init(&w->items, cfg->worker_id, w->token);
    waitlist_init(&w->wl);
    w->beat_ms = cfg->worker_sweep_ms ? cfg->worker_sweep_ms : WORKER_HEARTBEAT_DEFAULT_MS;
    /* A turn of the loop, hence a refresh and an expiry, at least once per
     * period. */
    int64_t block = w->beat_ms < WORKER_BLOCK_MS ? w->beat_ms : WORKER_BLOCK_MS;
    if (cfg->worker_expiry_ms > 0 && cfg->worker_expiry_ms < block)
        block = cfg->worker_expiry_ms;
    snprintf(w->block_arg, sizeof(w->block_arg), "%" PRId64 ".%03" PRId64, block / 1000,
             block % 1000);
    snprintf(w->poll_arg, sizeof(w->poll_arg), "0.%03d", WORKER_POLL_MS);
    /* Replies to BLMOVE may take the whole block time to come. */
    int64_t ms = WORKER_BLOCK_MS + cfg->redis_timeout_ms;
    w->queue_timeout = (struct timeval){(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    worker_queue q = {.sc = &w->sc,
                      .order_locks = cfg->order_guard == CONFIG_ORDER_GUARD_LOCK,
                      .block_arg = w->block_arg,
                      .batch_ms = cfg->worker_batch_ms,
                      .b = w->hand};
    w->q = q;
    return w;
fail:
    free(w);
    snprintf(err, errlen, "worker: out of memory");
    return NULL;
}

void worker_free(worker *w)
{
    if (!w)
        return;
    worker_conn_redis_drop(w);
    worker_conn_pg_drop(w);
    worker_batch_close(&w->batches[0]);
    worker_batch_close(&w->batches[1]);
    worker_items_close(&w->items);
    free(w);
}

/* Persists and acknowledges the batch in hand (n orders moved), as
 * worker.c's opening says. Unless the list may hold more than this batch
 * (recovering) or the worker stops, PostgreSQL inserts this batch while Redis
 * acknowledges the previous one (committed, waiting in spare) and moves the
 * next one into its place. The list holds them oldest at the tail: the
 * previous, this, the next. Without a connection to send on, the next batch
 * moves with this one's acknowledgement instead. When the queue's turn is
 * over, nothing moves with them: the hand empties and the next queue is
 * picked. Returns how many orders moved next, -1 when the list must be read
 * again, -2 when a stop request came before the batch was persisted. */
static int persist_batch(worker *w, int recovering)
{
    worker_batch *b = w->hand;
    worker_batch_sort(b);
    log_dead(b);
    /* A lone queue's turn never ends: no other is waiting. */
    int turn = w->items.n <= 1 || clock_mono_ms() < w->turn_ends;
    int steady = !recovering && !worker_conn_stop_requested(w) && turn;
    int sent = steady && b->norders && w->pg && worker_pg_send(w->pg, b) == 0;
    int moved = 0;
    if (sent && w->spare->n) {
        moved = ack_batch(w, w->spare, 1); /* the same queue's: the turn's batches */
    } else if (sent) {
        worker_batch_from(w->spare, &b->src);
        moved = worker_queue_move(queue(w, w->spare));
    } else if (w->spare->n) {
        moved = ack_batch(w, w->spare, 0); /* the previous batch first: it is at the tail */
    }
    if (batch_persist(w, sent) < 0)
        return -2;
    if (sent && moved > 0) {
        /* This batch is acknowledged with the next one's insert. */
        w->hand = w->spare;
        w->spare = b;
        return moved;
    }
    if (moved < 0)
        return -1; /* read the list again */
    return ack_batch(w, b, steady && !sent);
}

/* The totals of the run, when it stops. */
static void log_stopped(worker *w)
{
    log_msg(LOG_INFO, COMPONENT,
            "worker %s stopped: %" PRId64 " batches, %" PRId64 " inserted, %" PRId64
            " skipped, %" PRId64 " dead letters; %" PRId64 " sweeps recovered %" PRId64
            " orders of %" PRId64 " dead workers' lists; %" PRId64 " expiry passes expired %" PRId64
            " orders and gave back %" PRId64 " units",
            w->cfg->worker_id, atomic_load(&w->stats.batches), atomic_load(&w->stats.inserted),
            atomic_load(&w->stats.skipped), atomic_load(&w->stats.dead),
            atomic_load(&w->stats.sweeps), atomic_load(&w->stats.swept_orders),
            atomic_load(&w->stats.swept_lists), atomic_load(&w->stats.expiries),
            atomic_load(&w->stats.expired), atomic_load(&w->stats.returned));
}

int worker_run(worker *w, const atomic_int *stop)
{
    int64_t delay = 0;
    int recovering = 1; /* the processing list may hold orders not in hand */
    w->stop = stop;
    w->next_sweep = clock_mono_ms() + w->cfg->worker_sweep_ms;
    w->next_expiry = clock_mono_ms();
    log_msg(LOG_INFO, COMPONENT,
            "worker %s started: batches of %d orders or %d ms, lists %s, sweep every %d ms",
            w->cfg->worker_id, w->cfg->worker_batch_size, w->cfg->worker_batch_ms,
            "seckill:{item:N}:processing:<id>", w->cfg->worker_sweep_ms);
    /* Only to report a wrong conninfo at once rather than with the first
     * order; a failure here is retried when there is something to insert. */
    worker_conn_pg_connect(w);
    /* A stop waits for the batch in hand, moved with the last
     * acknowledgement, to be persisted too. */
    while (!worker_conn_stop_requested(w) || w->hand->n > 0) {
        int n = -1;
        if (w->redis || worker_conn_redis_connect(w) == 0) {
            n = worker_chores_run(w);
            if (n == 0)
                n = recovering ? recover_next(w) : take_orders(w);
        }
        if (w->id_taken)
            break;
        if (n == 0)
            recovering = 0;
        /* Only what the replicas hold goes to PostgreSQL. */
        if (n > 0 && worker_queue_replicated(queue(w, w->hand)) < 0)
            n = -1; /* read the list again once they caught up */
        if (n > 0 && (n = persist_batch(w, recovering)) == -2)
            break;
        if (n >= 0) {
            delay = 0;
            continue;
        }
        worker_batch_clear(w->hand);
        worker_batch_clear(w->spare);
        /* Redis failed somewhere: the processing list, not our copy, says
         * what is in hand, so reconnect and read it again. */
        worker_conn_redis_drop(w);
        w->stats.redis_errors++;
        recovering = 1;
        delay = backoff_next(delay, w->cfg->worker_retry_max_ms);
        log_msg(LOG_INFO, COMPONENT, "redis: reconnecting in %" PRId64 " ms", delay);
        worker_conn_nap(w, delay);
    }
    /* Committed before a stop cut the loop short: acknowledged now rather
     * than repeated by the next run. */
    if (w->spare->n && w->redis)
        ack_batch(w, w->spare, 0);
    worker_batch_clear(w->hand);
    worker_batch_clear(w->spare);
    /* A clean stop: the next run with this id need not wait for the
     * heartbeat to expire. (Not when the id is another worker's.) */
    if (w->redis && !w->id_taken)
        sweep_heartbeat_release(w->redis, &w->sc, w->cfg->worker_id, w->token);
    log_stopped(w);
    return w->id_taken ? -1 : 0;
}

const char *worker_id_of(const worker *w)
{
    return w->cfg->worker_id;
}

void worker_read_metrics(const worker *w, metrics_worker *out)
{
    /* const: the counters are only read; atomic_load wants a plain pointer. */
    worker_stats *st = (worker_stats *)&w->stats;
    out->batches = atomic_load(&st->batches);
    out->inserted = atomic_load(&st->inserted);
    out->skipped = atomic_load(&st->skipped);
    out->dead = atomic_load(&st->dead);
    out->last_batch = atomic_load(&st->last_batch);
    out->lag_ms = atomic_load(&st->lag_ms);
    out->pg_errors = atomic_load(&st->pg_errors);
    out->redis_errors = atomic_load(&st->redis_errors);
    out->expired = atomic_load(&st->expired);
    out->returned = atomic_load(&st->returned);
}
