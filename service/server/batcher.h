/* batcher.h: group commit, the way of one HTTP loop's purchases to Redis.
 * The buyers of one item (or one segment of it) that a loop turn gathers go
 * as one call of lua/reserve_batch.lua on the loop's own connection
 * (redis_conn.h): Redis pays for a script call once a batch instead of once
 * a buyer, which was the largest part of its work (docs/PERFORMANCE.md).
 * The reply is read by the same loop, which hands every buyer its own
 * answer: nothing crosses threads. A buyer who comes twice in one batch is
 * settled twice, one after the other, exactly as in two calls.
 *
 * A batch is sent when the loop's turn ends (an event made active by the
 * first buyer of the turn runs after the requests the turn read) or when it
 * is full (purchase_batch buyers): under light load a batch is one buyer and
 * costs no waiting; under heavy load a turn holds many. On its way a batch
 * follows MOVED, ASK and TRYAGAIN, sends the script's text after NOSCRIPT,
 * waits for the replicas asked for (reserve_wait_replicas), and is answered
 * when Redis owes its answer past the deadline.
 *
 * The buyers are its user's (purchase.c): it knows nothing of HTTP, and
 * hands each buyer back through batcher_calls. The loop's thread only. */
#ifndef SECKILL_BATCHER_H
#define SECKILL_BATCHER_H

#include <stdint.h>

#include "app.h"
#include "reserve_batch.h"

typedef struct batcher batcher;

/* How a batcher hands back each buyer it took (who, as batcher_add got it;
 * ctx, as batcher_create did). Each buyer is handed back exactly once. */
typedef struct batcher_calls {
    /* Redis answered: ans, and the item's state it (the gate learnt from
     * it already). confirmed: the batch's writes reached the replicas asked
     * for (or none were asked for). ans->outcome may be RESERVE_BAD_REPLY. */
    void (*answered)(void *ctx, void *who, const reserve_item *it, const reserve_answer *ans,
                     int confirmed);
    /* No usable answer (Redis down, an error reply): the script did not run
     * for this buyer, nothing was sold. */
    void (*failed)(void *ctx, void *who);
    /* The connection went with the answer: the script may have run. */
    void (*lost)(void *ctx, void *who);
} batcher_calls;

/* A batcher on conn's loop, for the purchases of app a. calls and ctx must
 * outlive it. NULL when out of memory. */
batcher *batcher_create(app *a, redis_conn *conn, const batcher_calls *calls, void *ctx);

/* Hands every buyer not answered yet to calls->failed (the loop stopped
 * before Redis answered: the connections are gone), and frees bt. NULL is a
 * no-op. */
void batcher_free(batcher *bt);

/* Puts buyer who into this turn's batch of the keys of key id key (item's,
 * or one segment's: keys_segment): buyer (reserve_buyer) asks for quantity
 * units as order order_id, in the script's mode. Returns 0, or -1 when out
 * of memory (who not taken). */
int batcher_add(batcher *bt, void *who, int64_t item, int64_t key, int64_t buyer, int64_t order_id,
                int quantity, const char *mode);

#endif
