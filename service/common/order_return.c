/* order_return.c: a return's two steps after PostgreSQL's decision: the
 * units into Redis, then returned_at. */
#include "order_return.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "order.h"
#include "pg_array.h"
#include "pg_session.h"
#include "pg_value.h"

int order_refs_read(const PGresult *res, order_ref *out, size_t cap, const char *component)
{
    size_t rows = (size_t)PQntuples(res);
    size_t n = rows < cap ? rows : cap;
    for (size_t i = 0; i < n; i++) {
        pg_row r = pg_row_at(res, (int)i);
        out[i] =
            (order_ref){pg_row_i64(&r, 0), pg_row_i64(&r, 1), pg_row_i64(&r, 2), pg_row_i64(&r, 3),
                        pg_row_int(&r, 4), pg_row_i64(&r, 5), pg_row_i64(&r, 6), pg_row_i64(&r, 7)};
        if (pg_row_check(&r, component, "an order to give back") < 0)
            return -1;
    }
    return (int)n;
}

void order_ref_args(const order_ref *o, char text[4][24], const char **args)
{
    snprintf(text[0], 24, "%" PRId64, o->id);
    snprintf(text[1], 24, "%" PRId64, o->round);
    snprintf(text[2], 24, "%" PRId64, o->user_id);
    snprintf(text[3], 24, "%d", o->quantity);
    for (int k = 0; k < 4; k++)
        args[k] = text[k];
}

order_ref order_ref_of(const struct order *o, int64_t draw_position)
{
    return (order_ref){.id = o->id,
                       .item_id = o->item_id,
                       .round = o->round,
                       .user_id = o->user_id,
                       .quantity = o->quantity,
                       .stock_key = o->segment_id,
                       .home_key = o->home_id,
                       .draw_position = draw_position};
}

/* The key id of the segment an order's units came from, and of its
 * buyer's home (keys.h): the item's own keys unless it is segmented. */
static int64_t stock_key(const order_ref *o)
{
    return keys_of_order(o->item_id, o->stock_key);
}

static int64_t home_key(const order_ref *o)
{
    return keys_of_order(o->item_id, o->home_key);
}

/* One script call for the orders o[0..n) on the keys of key (an item's, or
 * a segment's), for the part of their return those keys take ("all",
 * "stock" or "buyer": lua/order_return.lua; "draw" for all of a draw
 * order's, whose item has one segment). 0, or -1. */
static int return_call(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                       int64_t key, const char *part, const char *component)
{
    char keys[5][KEYS_MAX], args[ORDER_RETURN_BATCH][4][24];
    const char *ka[5 + 5 * ORDER_RETURN_BATCH];
    keys_item_state(keys[0], KEYS_MAX, key);
    keys_item_buyers(keys[1], KEYS_MAX, key);
    keys_item_returned(keys[2], KEYS_MAX, key);
    keys_item_given_back(keys[3], KEYS_MAX, key);
    keys_item_granted(keys[4], KEYS_MAX, key);
    for (int k = 0; k < 5; k++)
        ka[k] = keys[k];
    for (size_t i = 0; i < n; i++) {
        order_ref_args(&o[i], args[i], &ka[5 + 5 * i]);
        ka[5 + 5 * i + 4] = o[i].draw_position > 0 && strcmp(part, "all") == 0 ? "draw" : part;
    }
    /* The keys share their slot: the call goes to their node. No state
     * (round 0): the item is off sale while a rebuild sets it back (or Redis
     * lost it). Nothing was given back, so the return stays owed: the sweep
     * makes it once the state is back, where the rebuild's returned marks
     * say whether the units are already counted. */
    redisReply *r = order_refs_script(rn, sc, SCRIPT_ORDER_RETURN, 5, (int)(5 * n), ka, 4, key,
                                      "returns", component);
    if (!r)
        return -1;
    int64_t round = r->element[0]->integer, changes = r->element[1]->integer;
    int64_t units = r->element[3]->integer;
    freeReplyObject(r);
    if (units > 0)
        order_return_announce(rn, key, round, changes, component);
    return 0;
}

/* The return of orders o[0..n), which share their segment and their
 * buyer's home: one call when those are one, else the units to the
 * segment and the buyer's count to home. 0, or -1. */
static int return_group(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                        const char *component)
{
    int64_t from = stock_key(o), home = home_key(o);
    if (from == home)
        return return_call(rn, sc, o, n, from, "all", component);
    if (return_call(rn, sc, o, n, from, "stock", component) < 0)
        return -1;
    return return_call(rn, sc, o, n, home, "buyer", component);
}

int order_return_announce(redis_nodes *rn, int64_t item, int64_t round, int64_t changes,
                          const char *component)
{
    char event[80];
    snprintf(event, sizeof(event), "return %" PRId64 " %" PRId64 " %" PRId64, item, round, changes);
    redisContext *c = redis_nodes_any(rn);
    redisReply *r = c ? redis_nodes_reply(
                            rn, c, redisCommand(c, "PUBLISH %s %s", KEYS_EVENTS, event), "PUBLISH")
                      : NULL;
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        log_msg(LOG_WARN, component, "announcing '%s' failed: servers learn it from Redis", event);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* One call may return a and b: one item, one segment, one buyer's home. */
static int same_keys(const order_ref *a, const order_ref *b)
{
    return a->item_id == b->item_id && stock_key(a) == stock_key(b) && home_key(a) == home_key(b);
}

int order_return_redis(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component)
{
    return order_refs_runs(rn, sc, o, n, ORDER_RETURN_BATCH, same_keys, return_group, done,
                           component);
}

int order_refs_runs(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n, size_t batch,
                    order_refs_same same, order_refs_call call, unsigned char *done,
                    const char *component)
{
    int rc = 0;
    memset(done, 0, n);
    for (size_t at = 0; at < n;) {
        size_t k = 1;
        while (at + k < n && k < batch && same(&o[at], &o[at + k]))
            k++;
        if (call(rn, sc, o + at, k, component) == 0)
            memset(done + at, 1, k);
        else
            rc = -1;
        at += k;
    }
    return rc;
}

redisReply *order_refs_script(redis_nodes *rn, const scripts *sc, script_id id, int nkeys,
                              int nargs, const char **keys_args, size_t elements, int64_t key,
                              const char *what, const char *component)
{
    redisReply *r = redis_nodes_script(rn, &sc->s[id], nkeys, nargs, keys_args);
    /* An error reply was logged and is NULL here (redis_nodes_reply). */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != elements) {
        if (r)
            log_msg(LOG_WARN, component, "redis %s: unexpected reply", sc->s[id].name);
        freeReplyObject(r);
        return NULL;
    }
    if (r->element[0]->integer != 0)
        return r;
    freeReplyObject(r);
    log_msg(LOG_INFO, component, "item %" PRId64 " has no state in redis: %s stay owed", key, what);
    return NULL;
}

int order_refs_mark(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                    const char *sql, const char *what, const char *component)
{
    pg_array ids = {0};
    for (size_t i = 0; i < n; i++)
        if (done[i])
            pg_array_add_i64(&ids, o[i].id);
    if (!pg_array_text(&ids)) {
        pg_array_free(&ids);
        return -1;
    }
    if (ids.n == 0)
        return 0;
    const char *p[] = {pg_array_text(&ids)};
    PGresult *res = PQexecParams(pg, sql, 1, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc < 0)
        log_msg(LOG_WARN, component, "postgresql: marking %s: %s", what, PQresultErrorMessage(res));
    PQclear(res);
    pg_array_free(&ids);
    return rc;
}

/* Sets returned_at (and round_over: order_return_units) of the orders with
 * done[i] set. Returns 0 or -1 (logged). */
static int return_mark(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                       const char *component)
{
    return order_refs_mark(pg, o, done, n,
                           "UPDATE orders o SET returned_at = now(), round_over = o.round < "
                           "  coalesce((SELECT round FROM items WHERE id = o.item_id), o.round) "
                           "WHERE id = ANY($1::bigint[]) AND returned_at IS NULL",
                           "returns", component);
}

int order_refs_steps(const order_refs_step *step, redis_nodes *rn, PGconn *pg, const scripts *sc,
                     const order_ref *o, size_t n, unsigned char *done, const char *component)
{
    int rc = step->redis(rn, sc, o, n, done, component);
    if (step->mark(pg, o, done, n, component) < 0)
        return -2;
    return rc;
}

int order_return_units(redis_nodes *rn, PGconn *pg, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component)
{
    static const order_refs_step step = {order_return_redis, return_mark};
    return order_refs_steps(&step, rn, pg, sc, o, n, done, component);
}
