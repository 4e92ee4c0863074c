/* lab_redis.c: Redis strategies over one stock string per strategy. */
#include "lab_redis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "keys.h"
#include "lab_keys.h"
#include "redis_reply.h"
#include "reserve_batch.h"

/* GET of the stock string: SK_NOT_FOUND before its first use. */
static sk_status stock_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    (void)arg;
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, key, "GET %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    sk_status st = rep->type == REDIS_REPLY_NIL          ? SK_NOT_FOUND
                   : redis_reply_number(rep, value) == 0 ? SK_OK
                                                         : SK_INTERNAL;
    freeReplyObject(rep);
    return st;
}

/* The stock string from the item's initial stock (SET NX: concurrent first
 * users all make the same value once). */
static sk_status stock_make(lab_ctx *c, const lab_request *r, void *arg)
{
    (void)arg;
    int64_t initial;
    sk_status st = lab_initial_stock(c, r->item, &initial, NULL);
    if (st != SK_OK)
        return st;
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, key, "SET %s %" PRId64 " NX", key, initial);
    freeReplyObject(rep);
    return rep ? SK_OK : SK_BACKEND_DOWN;
}

static sk_status stock_decr(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                            int64_t *remaining)
{
    (void)arg;
    (void)seen;
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, key, "DECR %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    int ok = redis_reply_number(rep, remaining) == 0;
    freeReplyObject(rep);
    return ok ? SK_OK : SK_BACKEND_DOWN;
}

static sk_status stock_set_seen_minus_one(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                                          int64_t *remaining)
{
    (void)arg;
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, key, "SET %s %" PRId64, key, seen - 1);
    if (!rep)
        return SK_BACKEND_DOWN;
    freeReplyObject(rep);
    *remaining = seen - 1;
    return SK_OK;
}

/* WATCH, then the read; the take is MULTI/DECR/EXEC, which Redis refuses
 * (a nil reply) when the stock changed since the WATCH. A stock not made
 * yet is made outside the watch (stock_make), or its making would fail
 * every buyer who watched the missing key. */
static sk_status watched_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, key, "WATCH %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    freeReplyObject(rep);
    sk_status st = stock_read(c, r, arg, value);
    /* No take follows (nothing there, or sold out): leave the watch. */
    if (st == SK_NOT_FOUND || st == SK_INTERNAL || (st == SK_OK && *value <= 0))
        freeReplyObject(lab_ctx_redis(c, key, "UNWATCH"));
    return st;
}

/* MULTI, DECR, EXEC in one write on the connection that WATCHed (the
 * master of the key, where the WATCH went): a redirect is not followed
 * here, for a DECR sent on to another node would run outside the
 * transaction. An error inside (a MOVED mid-reshard) makes EXEC fail, so
 * no transaction is left open on the connection. */
static sk_status watched_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                              int64_t *remaining)
{
    (void)arg;
    (void)seen;
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), r->item, r->strategy);
    redisContext *rc = redis_nodes_for_key(c->redis, key);
    if (!rc)
        return SK_BACKEND_DOWN;
    if (redisAppendCommand(rc, "MULTI") != REDIS_OK ||
        redisAppendCommand(rc, "DECR %s", key) != REDIS_OK ||
        redisAppendCommand(rc, "EXEC") != REDIS_OK) {
        redis_nodes_reply(c->redis, rc, NULL, "MULTI"); /* half written: dropped */
        return SK_BACKEND_DOWN;
    }
    redisReply *rep = NULL;
    for (int k = 0; k < 3; k++) {
        rep = NULL;
        if (redisGetReply(rc, (void **)&rep) != REDIS_OK || !rep) {
            redis_nodes_reply(c->redis, rc, NULL, "EXEC"); /* lost: dropped */
            return SK_BACKEND_DOWN;
        }
        if (k < 2)
            freeReplyObject(rep); /* +OK, +QUEUED or the error EXEC reports */
    }
    rep = redis_nodes_reply(c->redis, rc, rep, "EXEC");
    if (!rep)
        return SK_BACKEND_DOWN;
    sk_status st = SK_BUSY; /* nil: the stock changed since the WATCH */
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
        redis_reply_number(rep->element[0], remaining) == 0)
        st = SK_OK;
    freeReplyObject(rep);
    return st;
}

static const lab_counter read_then_decr = {stock_read, stock_decr, stock_make};
static const lab_counter watched = {watched_read, watched_take, stock_make};
const lab_counter lab_redis_key_stock = {stock_read, stock_set_seen_minus_one, stock_make};

sk_status lab_redis_read_check_decr(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return lab_check_work_take(c, r, &read_then_decr, NULL, remaining);
}

sk_status lab_redis_watch(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return lab_retry_until_won(c, r, &watched, NULL, remaining);
}

sk_status lab_redis_lua_reserve(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    /* The product's reserve call with one buyer, bound of pending orders
     * and order lock (order_guard) included. The buyer is new each call (an
     * id of its own, as an anonymous buyer's), so that the worker's
     * one-unit-per-buyer rule never drops a lab order; named, not
     * anonymous, because the script refuses anonymous buyers where the
     * limit is below the stock, and takes their order lock as the
     * product's: the worker frees it once the order is persisted. */
    reserve_batch *b = malloc(sizeof(*b));
    if (!b)
        return SK_INTERNAL;
    reserve_batch_init(b, r->item, c->cfg->max_pending_orders);
    if (c->cfg->order_guard == CONFIG_ORDER_GUARD_LOCK)
        reserve_batch_guard(b, c->cfg->order_lock_ttl_ms);
    int64_t buyer = order_id_next(c->ids, clock_wall_ms());
    int64_t id = order_id_next(c->ids, clock_wall_ms());
    reserve_batch_add(b, buyer, 0, id, 1);
    int nargs = reserve_batch_keys_args(b);
    redisReply *rep =
        lab_ctx_script(c, SCRIPT_RESERVE_BATCH, reserve_batch_nkeys(b), nargs, b->keys_args);
    free(b);
    if (!rep)
        return SK_BACKEND_DOWN;
    reserve_answer a;
    reserve_outcome o = reserve_batch_answer(rep, 1, 0, &a);
    freeReplyObject(rep);
    if (o == RESERVE_BAD_REPLY)
        return SK_BACKEND_DOWN;
    *remaining = a.remaining;
    if (o != RESERVE_QUEUED)
        return reserve_status(o);
    lab_work(r);
    return SK_OK;
}

sk_status lab_redis_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return lab_counter_read(c, r, &read_then_decr, NULL, remaining);
}

sk_status lab_redis_state_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), r->item);
    redisReply *rep = lab_ctx_redis(c, state, "HGET %s stock", state);
    if (!rep)
        return SK_BACKEND_DOWN;
    int found = redis_reply_number(rep, remaining) == 0;
    freeReplyObject(rep);
    return found ? SK_OK : SK_NOT_FOUND;
}
