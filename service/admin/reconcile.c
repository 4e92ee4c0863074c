/* reconcile.c: reads the books of every item from PostgreSQL (the truth of
 * what persisted) and Redis (live stock, buyers, pending orders: each key
 * read on the node that serves it). */
#include "reconcile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backend.h"
#include "keys.h"
#include "order.h"
#include "order_return.h"
#include "registry.h"

#define COMPONENT "reconcile"

static reconcile_item *find_item(const reconcile_report *r, int64_t id)
{
    size_t lo = 0, hi = r->nitems; /* items are sorted by id */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->items[mid].id == id)
            return &r->items[mid];
        if (r->items[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

typedef void (*pending_fn)(void *ctx, const order *o);

/* Calls fn for every decodable order of an item's pending hash (HSCAN, on
 * its node). */
static int for_each_pending(redis_nodes *rn, const char *pending, pending_fn fn, void *ctx)
{
    char cursor[32] = "0";
    do {
        const char *argv[] = {"HSCAN", pending, cursor, "COUNT", "1000"};
        redisReply *r = redis_nodes_command(rn, pending, 5, argv, NULL);
        if (!r)
            return -1;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
            return backend_redis_unexpected(r, COMPONENT, "HSCAN");
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *kv = r->element[1];
        for (size_t i = 1; i < kv->elements; i += 2) {
            order o;
            if (order_decode(kv->element[i]->str, kv->element[i]->len, &o) == 0)
                fn(ctx, &o);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* Keeps a copy of every pending order in r->waiting. */
static void keep_pending(void *ctx, const order *o)
{
    reconcile_report *r = ctx;
    if (r->nwaiting == r->waiting_cap) {
        size_t cap = r->waiting_cap ? r->waiting_cap * 2 : 256;
        order *grown = realloc(r->waiting, cap * sizeof(*grown));
        if (!grown) {
            r->waiting_failed = 1;
            return;
        }
        r->waiting = grown;
        r->waiting_cap = cap;
    }
    r->waiting[r->nwaiting++] = *o;
}

/* An order stays in its pending hash a moment after its commit (until the
 * worker's acknowledgement, or the sweep's for a dead worker): drops from
 * r->waiting the orders PostgreSQL already holds, so none is counted twice.
 * Returns 0, or -1 when PostgreSQL fails. */
#define RECONCILE_ID_CHUNK 5000
static int drop_persisted(PGconn *pg, reconcile_report *r)
{
    char *ids = malloc(RECONCILE_ID_CHUNK * 21 + 3);
    if (!ids)
        return -1;
    size_t kept = 0;
    for (size_t from = 0; from < r->nwaiting; from += RECONCILE_ID_CHUNK) {
        size_t to =
            from + RECONCILE_ID_CHUNK < r->nwaiting ? from + RECONCILE_ID_CHUNK : r->nwaiting;
        size_t len = 0;
        ids[len++] = '{';
        for (size_t i = from; i < to; i++)
            len += (size_t)sprintf(ids + len, "%s%" PRId64, i > from ? "," : "", r->waiting[i].id);
        ids[len++] = '}';
        ids[len] = '\0';
        const char *p[] = {ids};
        PGresult *res =
            PQexecParams(pg, "SELECT id FROM orders WHERE id = ANY($1::bigint[]) ORDER BY id", 1,
                         NULL, p, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            PQclear(res);
            free(ids);
            return -1;
        }
        int rows = PQntuples(res);
        for (size_t i = from; i < to; i++) {
            int lo = 0, hi = rows; /* the ids come sorted: a binary search */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (strtoll(PQgetvalue(res, mid, 0), NULL, 10) < r->waiting[i].id)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == rows || strtoll(PQgetvalue(res, lo, 0), NULL, 10) != r->waiting[i].id)
                r->waiting[kept++] = r->waiting[i];
        }
        PQclear(res);
    }
    r->nwaiting = kept;
    free(ids);
    return 0;
}

/* "<cmd> <key>" on key's node, an integer; 0 with *ok cleared on a
 * failure (logged). */
static int64_t redis_int(redis_nodes *rn, const char *cmd, const char *key, int *ok)
{
    const char *argv[] = {cmd, key};
    redisReply *r = redis_nodes_command(rn, key, 2, argv, NULL);
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        if (r)
            backend_redis_unexpected(r, COMPONENT, cmd);
        *ok = 0;
        return 0;
    }
    int64_t n = r->integer;
    freeReplyObject(r);
    return n;
}

typedef struct processing_sum {
    redis_nodes *rn;
    int64_t total;
    int ok;
} processing_sum;

/* One processing list's length into the sum; -1 stops the scan. */
static int add_processing(void *ctx, const char *key, size_t len)
{
    (void)len;
    processing_sum *sum = ctx;
    sum->total += redis_int(sum->rn, "LLEN", key, &sum->ok);
    return sum->ok ? 0 : -1;
}

/* Sums the lengths of every worker's processing lists, on every master. */
static int64_t processing_total(redis_nodes *rn, int *ok)
{
    processing_sum sum = {rn, 0, 1};
    if (redis_nodes_scan(rn, KEYS_PROCESSING_PATTERN, add_processing, &sum) != 0)
        *ok = 0;
    return sum.total;
}

/* One segment's state (keys.h; the item's own keys when key is the item):
 * its stock added to the item's, the round and restocks from segment 0. */
static int read_redis_segment(redis_nodes *rn, reconcile_item *it, int64_t key)
{
    char state[KEYS_MAX], buyers[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    keys_item_buyers(buyers, sizeof(buyers), key);
    const char *argv[] = {"HMGET", state, "stock", "round", "restocked"};
    redisReply *r = redis_nodes_command(rn, state, 5, argv, NULL);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return backend_redis_unexpected(r, COMPONENT, "HMGET");
    int known = r->element[0]->type == REDIS_REPLY_STRING;
    if (key == it->id) {
        it->redis_known = known;
        if (known) {
            it->redis_round = r->element[1]->type == REDIS_REPLY_STRING
                                  ? strtoll(r->element[1]->str, NULL, 10)
                                  : 0;
            it->redis_restocked = r->element[2]->type == REDIS_REPLY_STRING
                                      ? strtoll(r->element[2]->str, NULL, 10)
                                      : 0;
        }
    } else if (!known) {
        it->redis_known = 0; /* a segment lost: the item's Redis state is not whole */
    }
    if (known)
        it->remaining += strtoll(r->element[0]->str, NULL, 10);
    freeReplyObject(r);
    int ok = 1;
    it->buyers += redis_int(rn, "HLEN", buyers, &ok);
    return ok ? 0 : -1;
}

/* The item's Redis side: its segments summed. */
static int read_redis_item(redis_nodes *rn, reconcile_item *it)
{
    int segments = it->segments;
    it->remaining = it->buyers = 0;
    for (int j = 0; j < segments; j++)
        if (read_redis_segment(rn, it, keys_segment(it->id, j, segments)) < 0)
            return -1;
    return 0;
}

/* Adds the key id of every segment of r's items to queues[0..*n), and
 * leaves each id there once, sorted. 0, or -1 when out of memory. */
static int add_item_queues(const reconcile_report *r, int64_t **queues, size_t *n)
{
    size_t total = *n;
    for (size_t i = 0; i < r->nitems; i++)
        total += (size_t)r->items[i].segments;
    int64_t *q = realloc(*queues, (total ? total : 1) * sizeof(*q));
    if (!q)
        return -1;
    *queues = q;
    size_t k = *n;
    for (size_t i = 0; i < r->nitems; i++)
        for (int j = 0; j < r->items[i].segments; j++)
            q[k++] = keys_segment(r->items[i].id, j, r->items[i].segments);
    *n = registry_sort_unique(q, k);
    return 0;
}

int reconcile_scan(redis_nodes *rn, PGconn *pg, reconcile_report *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    PGresult *res =
        /* Units out of Redis's stock: the orders that hold units and the
         * cancelled or expired ones whose units are not confirmed back. */
        PQexec(pg, "SELECT i.id, i.round, i.initial_stock, "
                   "(SELECT coalesce(sum(quantity), 0) FROM orders o "
                   " WHERE o.item_id = i.id AND o.round = i.round AND o.returned_at IS NULL), "
                   "i.restocked, i.restocks, "
                   "coalesce((extract(epoch FROM i.starts_at) * 1000)::bigint, 0), "
                   "coalesce((extract(epoch FROM i.ends_at) * 1000)::bigint, 0), "
                   "i.per_buyer_limit, i.segments FROM items i "
                   /* An archived item is off sale for good: neither judged
                    * nor rebuilt, or a rebuild would put it back on sale. */
                   "WHERE i.archived_at IS NULL ORDER BY i.id");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
        PQclear(res);
        return -1;
    }
    out->nitems = (size_t)PQntuples(res);
    out->items = calloc(out->nitems ? out->nitems : 1, sizeof(*out->items));
    if (!out->items) {
        PQclear(res);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < out->nitems; i++) {
        reconcile_item *it = &out->items[i];
        it->id = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        it->round = strtoll(PQgetvalue(res, (int)i, 1), NULL, 10);
        it->initial = strtoll(PQgetvalue(res, (int)i, 2), NULL, 10);
        it->persisted = strtoll(PQgetvalue(res, (int)i, 3), NULL, 10);
        it->restocked = strtoll(PQgetvalue(res, (int)i, 4), NULL, 10);
        it->restocks = strtoll(PQgetvalue(res, (int)i, 5), NULL, 10);
        it->starts_ms = strtoll(PQgetvalue(res, (int)i, 6), NULL, 10);
        it->ends_ms = strtoll(PQgetvalue(res, (int)i, 7), NULL, 10);
        it->per_buyer_limit = (int)strtol(PQgetvalue(res, (int)i, 8), NULL, 10);
        it->segments = (int)strtol(PQgetvalue(res, (int)i, 9), NULL, 10);
        if (it->segments < 1) /* the table's check holds it to 1..64 */
            it->segments = 1;
    }
    PQclear(res);

    int ok = 1;
    for (size_t i = 0; i < out->nitems && ok; i++)
        ok = read_redis_item(rn, &out->items[i]) == 0;
    /* Every queue and pending hash: those of the registry's items, and of
     * every segment of PostgreSQL's items (a registry lost on another node
     * must not hide the pending orders of a node that kept them). */
    int64_t *queues = NULL;
    size_t nqueues = 0;
    ok = ok && registry_read(rn, &queues, &nqueues) == 0;
    ok = ok && add_item_queues(out, &queues, &nqueues) == 0;
    for (size_t q = 0; ok && q < nqueues; q++) {
        char queue[KEYS_MAX], pending[KEYS_MAX], dead[KEYS_MAX];
        keys_queue(queue, sizeof(queue), queues[q]);
        keys_pending(pending, sizeof(pending), queues[q]);
        keys_dead(dead, sizeof(dead), queues[q]);
        ok = for_each_pending(rn, pending, keep_pending, out) == 0 && !out->waiting_failed;
        out->queue += redis_int(rn, "LLEN", queue, &ok);
        out->pending += redis_int(rn, "HLEN", pending, &ok);
        out->dead += redis_int(rn, "LLEN", dead, &ok);
    }
    free(queues);
    if (ok && drop_persisted(pg, out) < 0) {
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
        reconcile_report_free(out);
        return -1;
    }
    for (size_t i = 0; ok && i < out->nwaiting; i++) {
        reconcile_item *it = find_item(out, out->waiting[i].item_id);
        if (it && out->waiting[i].round == it->round)
            it->pending += out->waiting[i].quantity;
    }
    if (ok)
        out->processing = processing_total(rn, &ok);
    if (!ok) {
        snprintf(err, errlen, "redis: %s",
                 out->waiting_failed ? "out of memory" : "a read failed (logged above)");
        reconcile_report_free(out);
        return -1;
    }
    for (size_t i = 0; i < out->nitems; i++) {
        reconcile_item *it = &out->items[i];
        if (it->redis_known && it->redis_round == it->round)
            it->drift =
                (it->initial + it->restocked - it->remaining) - (it->persisted + it->pending);
        if (!reconcile_item_ok(it))
            out->drifting++;
    }
    return 0;
}

void reconcile_report_free(reconcile_report *r)
{
    if (!r)
        return;
    free(r->items);
    free(r->waiting);
    memset(r, 0, sizeof(*r));
}

int reconcile_item_ok(const reconcile_item *it)
{
    return it->redis_known && it->redis_round == it->round &&
           it->redis_restocked == it->restocked && it->drift == 0;
}

static const char *verdict(const reconcile_item *it)
{
    if (!it->redis_known)
        return "missing in redis";
    if (it->redis_round != it->round)
        return "round differs";
    if (it->redis_restocked != it->restocked)
        return "restock differs";
    if (it->drift > 0)
        return "units sold without an order";
    if (it->drift < 0)
        return "redis forgot sales: would oversell";
    return "ok";
}

void reconcile_print(const reconcile_report *r, int json, FILE *out)
{
    if (json) {
        json_t *items = json_array();
        for (size_t i = 0; i < r->nitems; i++) {
            const reconcile_item *it = &r->items[i];
            json_array_append_new(
                items, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "id",
                                 (json_int_t)it->id, "round", (json_int_t)it->round, "initial",
                                 (json_int_t)it->initial, "restocked", (json_int_t)it->restocked,
                                 "remaining", (json_int_t)it->remaining, "persisted",
                                 (json_int_t)it->persisted, "pending", (json_int_t)it->pending,
                                 "buyers", (json_int_t)it->buyers, "drift", (json_int_t)it->drift,
                                 "verdict", verdict(it)));
        }
        json_t *root = json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "items", items, "queue",
                                 (json_int_t)r->queue, "processing", (json_int_t)r->processing,
                                 "pending", (json_int_t)r->pending, "dead", (json_int_t)r->dead,
                                 "drifting", (json_int_t)r->drifting);
        json_dumpf(root, out, JSON_INDENT(2));
        fputc('\n', out);
        json_decref(root);
        return;
    }
    fprintf(out, "%10s %8s %10s %10s %10s %10s %10s %10s %8s  %s\n", "item", "round", "initial",
            "restocked", "remaining", "persisted", "pending", "buyers", "drift", "verdict");
    for (size_t i = 0; i < r->nitems; i++) {
        const reconcile_item *it = &r->items[i];
        fprintf(out,
                "%10" PRId64 " %8" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64
                " %10" PRId64 " %10" PRId64 " %8" PRId64 "  %s\n",
                it->id, it->round, it->initial, it->restocked, it->remaining, it->persisted,
                it->pending, it->buyers, it->drift, verdict(it));
    }
    fprintf(out,
            "queue %" PRId64 ", processing %" PRId64 ", pending %" PRId64 ", dead %" PRId64
            "; %" PRId64 " item(s) drifting\n",
            r->queue, r->processing, r->pending, r->dead, r->drifting);
}

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
