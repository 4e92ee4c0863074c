/* reconcile_rebuild.c: sets drifting items' Redis state back from
 * PostgreSQL and the pending orders. */
#include "reconcile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "keys.h"
#include "order.h"
#include "order_return.h"
#include "registry.h"

#define COMPONENT "reconcile"

/* The round's orders in PostgreSQL that fall on one segment's keys (key:
 * the segment's key id, the item's own for an item of one segment), asked
 * with $1 the item, $2 the round, $3 the key:
 *   STOCK   the units its stock gave that orders hold, the cancelled or
 *           expired orders whose units it gave, and their units
 *   BUYERS  per buyer whose home it is: units held, units given back, the
 *           last unit numbered (an anonymous order, whose buyer is its own
 *           id, counts nobody)
 *   MARKS   the cancelled or expired orders with a part of their return on
 *           it (lua/order_return.lua marks each part in its own keys) */
#define HELD "status IN ('persisted', 'paid')"
#define BACK "status IN ('cancelled', 'expired')"
#define OF_ROUND "FROM orders WHERE item_id = $1 AND round = $2 "
static const char *const segment_sql[] = {
    "SELECT coalesce(sum(quantity) FILTER (WHERE " HELD "), 0), count(*) FILTER (WHERE " BACK
    "), coalesce(sum(quantity) FILTER (WHERE " BACK "), 0) " OF_ROUND
    "AND coalesce(segment_id, $1) = $3",
    "SELECT user_id, coalesce(sum(quantity) FILTER (WHERE " HELD "), 0), "
    "coalesce(sum(quantity) FILTER (WHERE " BACK "), 0), max(first_unit + quantity - 1) " OF_ROUND
    "AND coalesce(home_id, $1) = $3 AND user_id <> id GROUP BY user_id",
    "SELECT id::text, quantity " OF_ROUND "AND " BACK
    " AND $3 IN (coalesce(segment_id, $1), coalesce(home_id, $1))",
};
enum { STOCK, BUYERS, MARKS };

/* The key id an order's units came from, and the one its buyer counts on. */
static int64_t taken_from(const order *o)
{
    return keys_of_order(o->item_id, o->segment_id);
}

static int64_t counted_at(const order *o)
{
    return keys_of_order(o->item_id, o->home_id);
}

/* A buyer's units of the round, as the reserve script counts them: held
 * (the buyers hash) and given back (the given_back hash), the next order
 * numbered after both (lua/reserve_batch.lua); last: the highest unit an
 * order of theirs was numbered. */
typedef struct buyer_units {
    int64_t user, held, back, last;
} buyer_units;

static int by_user(const void *a, const void *b)
{
    int64_t x = ((const buyer_units *)a)->user, y = ((const buyer_units *)b)->user;
    return (x > y) - (x < y);
}

/* The buyers counted on key: those of PostgreSQL's rows (BUYERS) and of the
 * pending orders, one entry a buyer, sorted; *n of them, NULL when out of
 * memory. */
static buyer_units *buyers_of(const PGresult *rows, const reconcile_report *rep,
                              const reconcile_item *it, int64_t key, size_t *n)
{
    size_t cap = (size_t)PQntuples(rows) + rep->nwaiting + 1, k = 0;
    buyer_units *b = malloc(cap * sizeof(*b));
    if (!b)
        return NULL;
    for (int i = 0; i < PQntuples(rows); i++)
        b[k++] = (buyer_units){
            strtoll(PQgetvalue(rows, i, 0), NULL, 10), strtoll(PQgetvalue(rows, i, 1), NULL, 10),
            strtoll(PQgetvalue(rows, i, 2), NULL, 10), strtoll(PQgetvalue(rows, i, 3), NULL, 10)};
    for (size_t i = 0; i < rep->nwaiting; i++) {
        const order *o = &rep->waiting[i];
        if (o->item_id == it->id && o->round == it->round && counted_at(o) == key &&
            o->user_id != o->id)
            b[k++] = (buyer_units){o->user_id, o->quantity, 0, o->first_unit + o->quantity - 1};
    }
    qsort(b, k, sizeof(*b), by_user);
    size_t out = 0;
    for (size_t i = 0; i < k; i++) {
        if (out > 0 && b[out - 1].user == b[i].user) {
            b[out - 1].held += b[i].held;
            b[out - 1].back += b[i].back;
            b[out - 1].last = b[i].last > b[out - 1].last ? b[i].last : b[out - 1].last;
        } else {
            b[out++] = b[i];
        }
    }
    *n = out;
    return b;
}

/* Rewrites one segment's state, buyers and returns (the item's own keys for
 * segment 0) in one MULTI on its node, from the orders of the round in
 * PostgreSQL and the pending ones: its share of the initial stock (and for
 * segment 0 the restocks, which go there) less the units taken from it;
 * each buyer whose home it is with their units held and given back; every
 * cancelled or expired order counted as given back (so an owed return the
 * sweep finishes later adds nothing again). Returns 0, or -1 with err set. */
static int rebuild_segment(redis_nodes *rn, PGconn *pg, const reconcile_report *rep,
                           const reconcile_item *it, int j, char *err, size_t errlen)
{
    int segments = it->segments;
    int64_t key = keys_segment(it->id, j, segments);
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX], id_s[24],
        round_s[24], key_s[24];
    keys_item_state(state, sizeof(state), key);
    keys_item_buyers(buyers, sizeof(buyers), key);
    keys_item_returned(returned, sizeof(returned), key);
    keys_item_given_back(given_back, sizeof(given_back), key);
    snprintf(id_s, sizeof(id_s), "%" PRId64, it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
    snprintf(key_s, sizeof(key_s), "%" PRId64, key);
    const char *p[] = {id_s, round_s, key_s};
    PGresult *res[3] = {NULL, NULL, NULL};
    buyer_units *by = NULL;
    int rc = -1;
    for (int q = 0; q < 3; q++) {
        res[q] = PQexecParams(pg, segment_sql[q], 3, NULL, p, NULL, NULL, 0);
        if (PQresultStatus(res[q]) != PGRES_TUPLES_OK) {
            snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
            goto done;
        }
    }
    size_t nbuyers = 0;
    by = buyers_of(res[BUYERS], rep, it, key, &nbuyers);
    if (!by) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    redisContext *redis = redis_nodes_for_key(rn, state);
    if (!redis) {
        snprintf(err, errlen, "redis: the node of %s does not answer (logged above)", state);
        goto done;
    }
    int64_t held = strtoll(PQgetvalue(res[STOCK], 0, 0), NULL, 10);
    int64_t settled = strtoll(PQgetvalue(res[STOCK], 0, 1), NULL, 10);
    int64_t back = strtoll(PQgetvalue(res[STOCK], 0, 2), NULL, 10);
    int64_t pending = 0;
    for (size_t i = 0; i < rep->nwaiting; i++) {
        const order *o = &rep->waiting[i];
        if (o->item_id == it->id && o->round == it->round && taken_from(o) == key)
            pending += o->quantity;
    }
    int64_t initial = keys_segment_share(it->initial, j, segments); /* restocks: segment 0's */
    int64_t restocks = j == 0 ? it->restocks : 0, restocked = j == 0 ? it->restocked : 0;
    int64_t remaining = initial + restocked - held - pending;
    size_t replies = 4; /* MULTI, DEL, HSET, EXEC */
    redisAppendCommand(redis, "MULTI");
    redisAppendCommand(redis, "DEL %s %s %s %s", state, buyers, returned, given_back);
    redisAppendCommand(redis,
                       "HSET %s stock %lld initial %lld round %lld restocks %lld restocked %lld "
                       "returns %lld returned %lld starts %lld ends %lld limit %d segments %d",
                       state, (long long)(remaining > 0 ? remaining : 0), (long long)initial,
                       (long long)it->round, (long long)restocks, (long long)restocked,
                       (long long)settled, (long long)back, (long long)it->starts_ms,
                       (long long)it->ends_ms, it->per_buyer_limit, segments);
    /* A buyer's next order is numbered after every unit an order of theirs
     * was: units given back are counted up to the last one numbered (a hold
     * a crash left unreleased numbered one that no order holds). */
    for (size_t i = 0; i < nbuyers; i++) {
        int64_t after = by[i].last - by[i].held;
        int64_t gave = by[i].back > after ? by[i].back : after;
        redisAppendCommand(redis, "HSET %s %lld %lld", buyers, (long long)by[i].user,
                           (long long)by[i].held);
        replies++;
        if (gave > 0) {
            redisAppendCommand(redis, "HSET %s %lld %lld", given_back, (long long)by[i].user,
                               (long long)gave);
            replies++;
        }
    }
    for (int i = 0; i < PQntuples(res[MARKS]); i++) {
        redisAppendCommand(redis, "HSET %s %s %s", returned, PQgetvalue(res[MARKS], i, 0),
                           PQgetvalue(res[MARKS], i, 1));
        replies++;
    }
    redisAppendCommand(redis, "EXEC");
    int ok = 1;
    for (size_t i = 0; i < replies; i++) {
        redisReply *r = NULL;
        if (redisGetReply(redis, (void **)&r) != REDIS_OK) {
            redis_nodes_reply(rn, redis, NULL, "MULTI");
            snprintf(err, errlen, "redis: the node of %s failed (logged above)", state);
            goto done;
        }
        /* An error reply is logged (a MOVED marks the slot map stale). */
        r = redis_nodes_reply(rn, redis, r, i + 1 < replies ? "MULTI" : "EXEC");
        ok = ok && r;
        freeReplyObject(r);
    }
    if (!ok) {
        snprintf(err, errlen, "redis: the MULTI on %s failed (logged above)", state);
        goto done;
    }
    /* The stock version never goes back: every return call that gave units
     * back covered an order of its own, so `settled` is at least the returns
     * a server may have seen. Announced, so flagged servers clear at once. */
    if (restocks + settled > 0)
        order_return_announce(rn, key, it->round, restocks + settled, COMPONENT);
    rc = 0;
done:
    for (int q = 0; q < 3; q++)
        PQclear(res[q]);
    free(by);
    return rc;
}

/* Every segment of the item, their queues back in the registry first (for
 * a Redis that lost it). */
static int rebuild_item(redis_nodes *rn, PGconn *pg, const reconcile_report *rep,
                        const reconcile_item *it, char *err, size_t errlen)
{
    int segments = it->segments;
    for (int j = 0; j < segments; j++) {
        if (registry_add(rn, keys_segment(it->id, j, segments)) < 0) {
            snprintf(err, errlen, "redis: SADD %s failed (logged above)", KEYS_ITEMS);
            return -1;
        }
    }
    /* Every segment from one snapshot of the orders: an order cancelled
     * meanwhile is counted on each segment in the same state. */
    PGresult *begin = PQexec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    int began = PQresultStatus(begin) == PGRES_COMMAND_OK;
    PQclear(begin);
    if (!began) {
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
        return -1;
    }
    int rc = 0;
    for (int j = 0; j < segments && rc == 0; j++)
        rc = rebuild_segment(rn, pg, rep, it, j, err, errlen);
    PQclear(PQexec(pg, rc == 0 ? "COMMIT" : "ROLLBACK"));
    return rc;
}

int reconcile_rebuild(redis_nodes *rn, PGconn *pg, const reconcile_report *r, char *err,
                      size_t errlen)
{
    char why[256];
    int rebuilt = 0;
    for (size_t i = 0; i < r->nitems; i++) {
        const reconcile_item *it = &r->items[i];
        if (reconcile_item_ok(it))
            continue;
        if (rebuild_item(rn, pg, r, it, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "rebuilding item %" PRId64 " failed: %s", it->id, why);
            return -1;
        }
        rebuilt++;
    }
    return rebuilt;
}
