/* worker_queue.c: moving, reading back and acknowledging orders in Redis. */
#include "worker_queue.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "log.h"
#include "redis_reply.h"

#define COMPONENT "worker"

/* A reply to what that is not the one expected: none, or an error reply,
 * judged by redis_nodes_reply (a lost node dropped, a MOVED or ASK marking
 * the slot map stale), any other logged. Frees r. Returns -1. */
static int failed(const worker_queue *q, redisReply *r, const char *what)
{
    if (!r || r->type == REDIS_REPLY_ERROR) {
        redis_nodes_reply(q->rn, q->c, r, what);
        return -1;
    }
    return redis_reply_unexpected(r, COMPONENT, what);
}

/* Takes the reply of one (B)LMOVE. Returns 1 when an order moved into the
 * batch, 0 when the queue was empty, -1 on an error. Frees r. */
static int take_moved(const worker_queue *q, redisReply *r)
{
    if (r && r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    if (!r || r->type != REDIS_REPLY_STRING)
        return failed(q, r, "BLMOVE");
    /* The order is already in the processing list: failing to copy it only
     * means re-reading it from there. */
    int rc = worker_batch_add(q->b, r->str, r->len);
    if (rc < 0)
        log_msg(LOG_ERROR, COMPONENT, "out of memory copying an order");
    freeReplyObject(r);
    return rc < 0 ? -1 : 1;
}

/* Takes the reply of lua/queue_move.lua asked for want orders: copies them
 * into the batch, oldest first. Returns how many moved, or -1 on an error
 * (what moved stays in the processing list). Frees r. */
static int take_many(const worker_queue *q, redisReply *r, size_t want)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements > want)
        return failed(q, r, "EVAL move");
    for (size_t i = r->elements; i-- > 0;) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING)
            return failed(q, r, "EVAL move");
        if (worker_batch_add(q->b, e->str, e->len) < 0) {
            log_msg(LOG_ERROR, COMPONENT, "out of memory copying an order");
            freeReplyObject(r);
            return -1;
        }
    }
    int moved = (int)r->elements;
    freeReplyObject(r);
    return moved;
}

/* Moves up to want orders with lua/queue_move.lua into the batch, oldest first.
 * Returns how many moved, or -1 on an error (what moved stays in the
 * processing list). */
static int move_many(const worker_queue *q, size_t want)
{
    char n[24];
    snprintf(n, sizeof(n), "%zu", want);
    const char *ka[] = {q->b->src.queue, q->b->src.processing, n};
    return take_many(q, scripts_call(q->c, &q->sc->s[SCRIPT_QUEUE_MOVE], 2, 1, ka), want);
}

int worker_queue_move(const worker_queue *q)
{
    if (!q->c)
        return -1;
    return move_many(q, q->b->cap - q->b->n);
}

/* Moves orders from the queue to the processing list until the batch is full
 * or cfg->worker_batch_ms passed since the first one came. Returns how many
 * moved (0: none came within the block time), or -1 on a Redis error. */
int worker_queue_fill(const worker_queue *q)
{
    worker_batch *b = q->b;
    if (!q->c)
        return -1;
    if (b->n == 0) {
        redisReply *r = redisCommand(q->c, "BLMOVE %s %s RIGHT LEFT %s", b->src.queue,
                                     b->src.processing, q->block_arg);
        int rc = take_moved(q, r);
        if (rc <= 0)
            return rc;
    }
    /* Orders moved with the last acknowledgement came just now: the batch
     * time counts from them as from a BLMOVE's. */
    int64_t deadline = clock_mono_ms() + q->batch_ms;
    while (b->n < b->cap) {
        /* One call for the rest of the batch: one command instead of one
         * LMOVE per order, for Redis and for us. */
        size_t want = b->cap - b->n;
        int moved = move_many(q, want);
        if (moved < 0)
            return -1;
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0)
            break;
        if ((size_t)moved < want) {
            /* The queue ran dry: wait out the batch time for the next one. */
            char arg[32];
            snprintf(arg, sizeof(arg), "%" PRId64 ".%03" PRId64, left / 1000, left % 1000);
            redisReply *r = redisCommand(q->c, "BLMOVE %s %s RIGHT LEFT %s", b->src.queue,
                                         b->src.processing, arg);
            int rc = take_moved(q, r);
            if (rc <= 0)
                return rc < 0 ? -1 : (int)b->n;
        }
    }
    return (int)b->n;
}

/* Reads the oldest orders of the processing list, those a previous run (or
 * this one, before Redis failed) moved but did not acknowledge. Returns how
 * many (0: the list is empty), or -1 on a Redis error. */
int worker_queue_load(const worker_queue *q)
{
    worker_batch *b = q->b;
    if (!q->c)
        return -1;
    /* The oldest are at the tail; a previous run with a larger batch size
     * may have left more than one batch, taken here one batch at a time. */
    redisReply *r = redisCommand(q->c, "LRANGE %s -%lld -1", b->src.processing, (long long)b->cap);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements > b->cap)
        return failed(q, r, "LRANGE");
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING)
            return failed(q, r, "LRANGE");
        if (worker_batch_add(b, e->str, e->len) < 0) {
            log_msg(LOG_ERROR, COMPONENT, "out of memory reading %s", b->src.processing);
            freeReplyObject(r);
            return -1;
        }
    }
    freeReplyObject(r);
    if (b->n)
        log_msg(LOG_INFO, COMPONENT, "finishing %zu orders left in %s", b->n, b->src.processing);
    return (int)b->n;
}

/* Frees the far order locks of the batch just acknowledged (the last far of
 * b->locks), one call each on the node of its slot. Every reply on q->c is
 * read by then: on a single Redis that is the node they go to. One that
 * fails is logged and left to expire. */
static void release_far(const worker_queue *q, size_t far)
{
    const worker_batch *b = q->b;
    for (size_t i = b->cap - far; i < b->cap; i++) {
        const char *ka[] = {b->locks[i], b->lock_ids[i]};
        freeReplyObject(redis_nodes_script(q->rn, &q->sc->s[SCRIPT_ORDER_LOCK_RELEASE], 1, 1, ka));
    }
}

/* Appends the acknowledgement's MULTI ... EXEC, and with move_next the move
 * of the next batch after it, to q->c's buffer. Returns how many commands
 * the MULTI queues, or -1 when out of memory (half a command may wait). */
static int ack_append(const worker_queue *q, int move_next)
{
    worker_batch *b = q->b;
    long long keep_until = -(long long)b->n - 1;
    int queued = 1; /* LTRIM; LPUSH and HDEL when they have anything to do */
    int ok = redisAppendCommand(q->c, "MULTI") == REDIS_OK;
    if (ok && b->ndead) {
        ok = redisAppendCommandArgv(q->c, (int)(b->ndead + 2), b->dead_argv, b->dead_argvlen) ==
             REDIS_OK;
        queued++;
    }
    if (ok && b->norders) {
        ok = redisAppendCommandArgv(q->c, (int)(b->norders + 2), b->pending_argv,
                                    b->pending_argvlen) == REDIS_OK;
        queued++;
    }
    char lock_numkeys[12];
    if (ok && q->order_locks && b->nlocks) {
        int argc = scripts_argv(&q->sc->s[SCRIPT_ORDER_LOCK_RELEASE], 1, (int)b->nlocks,
                                (int)b->nlocks, b->lock_keys_args, b->lock_argv, b->lock_argvlen,
                                (int)(2 * b->cap + 3), lock_numkeys);
        ok = argc > 0 &&
             redisAppendCommandArgv(q->c, argc, b->lock_argv, b->lock_argvlen) == REDIS_OK;
        queued++;
    }
    ok = ok &&
         redisAppendCommand(q->c, "LTRIM %s 0 %lld", b->src.processing, keep_until) == REDIS_OK;
    ok = ok && redisAppendCommand(q->c, "EXEC") == REDIS_OK;
    char want[24];
    snprintf(want, sizeof(want), "%zu", b->cap);
    const char *ka[] = {b->src.queue, b->src.processing, want};
    const char *argv[6];
    size_t lens[6];
    char numkeys[12];
    if (ok && move_next) {
        int argc = scripts_argv(&q->sc->s[SCRIPT_QUEUE_MOVE], 0, 2, 1, ka, argv, lens, 6, numkeys);
        ok = argc > 0 && redisAppendCommandArgv(q->c, argc, argv, lens) == REDIS_OK;
    }
    return ok ? queued : -1;
}

/* Reads the replies of a MULTI that queued `queued` commands, up to its
 * EXEC's. Returns 0; -1 when one is not the one expected (every reply is
 * read all the same); -2 when the connection failed (dropped: q->c is gone). */
static int ack_read(const worker_queue *q, int queued)
{
    int rc = 0;
    for (int i = 0; i < queued + 2; i++) {
        redisReply *r = NULL;
        if (redisGetReply(q->c, (void **)&r) != REDIS_OK) {
            failed(q, NULL, "MULTI");
            return -2;
        }
        int good;
        if (i < queued + 1) { /* +OK for MULTI, +QUEUED for each command */
            good = r->type == REDIS_REPLY_STATUS;
        } else {
            good = r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)queued;
            for (size_t e = 0; good && e < r->elements; e++)
                good = r->element[e]->type != REDIS_REPLY_ERROR;
        }
        if (!good) {
            /* Keep reading: the other replies are on their way. */
            failed(q, r, i <= queued ? "MULTI" : "EXEC");
            rc = -1;
        } else {
            freeReplyObject(r);
        }
    }
    return rc;
}

/* Acknowledges the committed batch in one MULTI, so a crash cannot leave it
 * half done: its undecodable payloads go to the dead-letter list, its orders
 * leave the pending hash (they are in PostgreSQL now), and it leaves the
 * processing list. The order locks of its buyers go in the same step, each
 * only while it holds its order's id (lua/order_lock_release.lua, sent as
 * text: a NOSCRIPT inside the MULTI would fail the acknowledgement), so a
 * late worker never frees the lock of a buyer's newer order.
 *
 * LTRIM rather than DEL: the batch is the n oldest entries, at the tail (moves
 * push at the head), and LTRIM 0 -(n+1) removes exactly those n, never more.
 * With one process per worker id the list holds just the batch and the two
 * do the same; LTRIM says what was committed, so anything that sat in the
 * list beside the batch would stay there for the next recovery instead of
 * vanishing with it.
 *
 * With move_next, the move of the next batch (lua/queue_move.lua, a whole
 * batch) goes in the same write, after the EXEC: one round trip instead of
 * three (the acknowledgement, a BLMOVE, the move) while the queue is full.
 * Redis runs the two in order, each atomic: the next orders land at the
 * head, after the committed ones left the tail, and a crash between or
 * after them leaves every unacknowledged order in the processing list, as
 * before. The batch is cleared once the acknowledgement's replies are in,
 * and the moved orders are copied into it (without move_next it stays
 * empty). Returns how many moved (0
 * without move_next), -1 when the acknowledgement failed, -2 when it was
 * done but the move failed (the list may hold orders not in hand). */
int worker_queue_ack(const worker_queue *q, int move_next)
{
    worker_batch *b = q->b;
    if (!q->c)
        return -1;
    int queued = ack_append(q, move_next);
    if (queued < 0)
        return failed(q, NULL, "MULTI"); /* out of memory: half a command may wait */
    int rc = ack_read(q, queued);
    if (rc == -2)
        return -1;
    if (rc < 0) {
        /* The move's reply too, so that the node's connection has nothing
         * left to read (redis_nodes.h); what it moved stays in the list,
         * which the caller reads again. */
        redisReply *r = NULL;
        if (move_next && redisGetReply(q->c, (void **)&r) != REDIS_OK)
            failed(q, NULL, "EVAL move");
        freeReplyObject(r);
        return rc;
    }
    size_t far = q->order_locks ? b->nfar : 0;
    worker_batch_clear(b); /* the locks stay: only worker_batch_sort writes them */
    int moved = 0;
    if (move_next) {
        redisReply *r = NULL;
        if (redisGetReply(q->c, (void **)&r) != REDIS_OK) {
            failed(q, NULL, "EVAL move");
            moved = -2;
        } else if (scripts_is_noscript(r)) {
            /* Redis forgot the script (a restart): nothing moved, and the
             * move goes again through the one fallback (scripts_run). */
            freeReplyObject(r);
            moved = move_many(q, b->cap);
            moved = moved < 0 ? -2 : moved;
        } else {
            moved = take_many(q, r, b->cap);
            moved = moved < 0 ? -2 : moved;
        }
    }
    release_far(q, far);
    return moved;
}

/* The replicas online of the node q->c is connected to (INFO replication's
 * "slaveN:...,state=online" lines), or -1 when Redis failed. */
static int replicas_online(const worker_queue *q)
{
    redisReply *r = redisCommand(q->c, "INFO replication");
    if (!r || r->type != REDIS_REPLY_STRING)
        return failed(q, r, "INFO replication");
    int n = 0;
    for (const char *at = r->str; (at = strstr(at, "state=online")) != NULL; at++)
        n++;
    freeReplyObject(r);
    return n;
}

int worker_queue_replicated(const worker_queue *q)
{
    if (!q->c)
        return failed(q, NULL, "WAIT");
    int want = replicas_online(q);
    if (want <= 0)
        return want;
    redisReply *r = redisCommand(q->c, "WAIT %d %d", want, WORKER_QUEUE_WAIT_MS);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return failed(q, r, "WAIT");
    long long got = r->integer;
    freeReplyObject(r);
    /* A replica lost meanwhile is not waited for: those left hold them. */
    if (got >= want || (got > 0 && got >= replicas_online(q)))
        return 0;
    log_msg(LOG_WARN, COMPONENT,
            "%lld of %d replicas hold the orders in hand after %d ms: not persisted yet", got, want,
            WORKER_QUEUE_WAIT_MS);
    return -1;
}
