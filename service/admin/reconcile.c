/* reconcile.c: reads the books of every item from PostgreSQL (the truth of
 * what persisted) and Redis (live stock, buyers, pending orders: each key
 * read on the node that serves it). The report is printed by
 * reconcile_print.c, and drifting items are rebuilt by reconcile_rebuild.c. */
#include "reconcile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "backend.h"
#include "keys.h"
#include "log.h"
#include "order.h"
#include "pg_array.h"
#include "pg_value.h"
#include "redis_reply.h"
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
            return redis_reply_unexpected(r, COMPONENT, "HSCAN");
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
    order *grown = array_grow(r->waiting, &r->waiting_cap, r->nwaiting + 1, sizeof(*grown), 256);
    if (!grown) {
        r->waiting_failed = 1;
        return;
    }
    r->waiting = grown;
    r->waiting[r->nwaiting++] = *o;
}

/* An order stays in its pending hash a moment after its commit (until the
 * worker's acknowledgement, or the sweep's for a dead worker): drops from
 * r->waiting the orders PostgreSQL already holds, so none is counted twice.
 * Returns 0, or -1 when PostgreSQL fails. */
#define RECONCILE_ID_CHUNK 5000
int reconcile_drop_persisted(PGconn *pg, reconcile_report *r)
{
    size_t kept = 0;
    for (size_t from = 0; from < r->nwaiting; from += RECONCILE_ID_CHUNK) {
        size_t to =
            from + RECONCILE_ID_CHUNK < r->nwaiting ? from + RECONCILE_ID_CHUNK : r->nwaiting;
        char *ids = pg_array_of_i64(&r->waiting[from].id, to - from, sizeof(*r->waiting));
        if (!ids)
            return -1;
        const char *p[] = {ids};
        PGresult *res =
            PQexecParams(pg, "SELECT id FROM orders WHERE id = ANY($1::bigint[]) ORDER BY id", 1,
                         NULL, p, NULL, NULL, 0);
        free(ids);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            PQclear(res);
            return -1;
        }
        int rows = PQntuples(res);
        int64_t *held = malloc(((size_t)rows + 1) * sizeof(*held));
        int bad = !held;
        for (int i = 0; !bad && i < rows; i++)
            bad = pg_value_i64(res, i, 0, &held[i]) < 0;
        PQclear(res);
        if (bad) {
            free(held);
            return -1;
        }
        for (size_t i = from; i < to; i++) {
            int lo = 0, hi = rows; /* the ids come sorted: a binary search */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (held[mid] < r->waiting[i].id)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == rows || held[lo] != r->waiting[i].id)
                r->waiting[kept++] = r->waiting[i];
        }
        free(held);
    }
    r->nwaiting = kept;
    return 0;
}

/* "<cmd> <key>" on key's node, an integer; 0 with *ok cleared on a
 * failure (logged). */
static int64_t redis_count(redis_nodes *rn, const char *cmd, const char *key, int *ok)
{
    const char *argv[] = {cmd, key};
    redisReply *r = redis_nodes_command(rn, key, 2, argv, NULL);
    int64_t n = 0;
    if (!r || redis_reply_int(r, COMPONENT, cmd, &n) < 0) /* none: logged already */
        *ok = 0;
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
    sum->total += redis_count(sum->rn, "LLEN", key, &sum->ok);
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
    const char *argv[] = {"HMGET", state, "stock", "round", "restocked", "returned"};
    redisReply *r = redis_nodes_command(rn, state, 6, argv, NULL);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4)
        return redis_reply_unexpected(r, COMPONENT, "HMGET");
    int known = r->element[0]->type != REDIS_REPLY_NIL;
    int64_t stock = 0, round = 0, restocked = 0, returned = 0;
    if (known && (redis_reply_number(r->element[0], &stock) < 0 ||
                  redis_reply_number_or(r->element[1], 0, &round) < 0 ||
                  redis_reply_number_or(r->element[2], 0, &restocked) < 0 ||
                  redis_reply_number_or(r->element[3], 0, &returned) < 0))
        return redis_reply_unexpected(r, COMPONENT, "HMGET");
    if (key == it->id) {
        it->redis_known = known;
        if (known) {
            it->redis_round = round;
            it->redis_restocked = restocked;
        }
    } else if (!known) {
        it->redis_known = 0; /* a segment lost: the item's Redis state is not whole */
    }
    it->remaining += stock;
    it->redis_returned += returned;
    freeReplyObject(r);
    int ok = 1;
    it->buyers += redis_count(rn, "HLEN", buyers, &ok);
    return ok ? 0 : -1;
}

/* The item's Redis side: its segments summed. */
static int read_redis_item(redis_nodes *rn, reconcile_item *it)
{
    int segments = it->segments;
    it->remaining = it->buyers = it->redis_returned = 0;
    for (int j = 0; j < segments; j++)
        if (read_redis_segment(rn, it, keys_segment(it->id, j, segments)) < 0)
            return -1;
    return 0;
}

/* Draw orders one HMGET of the granted hash asks about. */
#define DRAW_ORDERS_CHUNK 500

/* Counts a chunk of a draw item's orders (res rows from..to: id, quantity,
 * held, return unnoted) by their marks in the granted hash, which lists
 * their ids after its name in argv. 0, or -1 (logged). */
static int count_draw_chunk(redis_nodes *rn, reconcile_item *it, const PGresult *res, int from,
                            int to, const char **argv)
{
    redisReply *r = redis_nodes_command(rn, argv[1], 2 + to - from, argv, NULL);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)(to - from))
        return redis_reply_unexpected(r, COMPONENT, "HMGET");
    for (int i = from; i < to; i++) {
        pg_row f = pg_row_at(res, i);
        int64_t quantity = pg_row_i64(&f, 1), granted = 0;
        int held = pg_row_bool(&f, 2), unnoted = pg_row_bool(&f, 3);
        const redisReply *g = r->element[i - from];
        int known = g->type != REDIS_REPLY_NIL;
        if (pg_row_check(&f, COMPONENT, "a draw order") < 0 ||
            (known && redis_reply_number(g, &granted) < 0)) {
            freeReplyObject(r);
            return -1;
        }
        if (held && known)
            it->held += quantity;
        else if (held)
            it->grants_owed += quantity; /* its units are still in the stock */
        else if (granted > 0) {          /* ended, its units taken: a return is due */
            it->ended += quantity;
            it->unnoted += unnoted ? quantity : 0;
        } /* ended before its grant (0) or with neither run: its units never left */
    }
    freeReplyObject(r);
    return 0;
}

/* A draw item's orders of the round (issue 28), counted by their marks in
 * the item's granted hash: an order whose grant is owed holds no unit of
 * Redis yet, and one returned before its grant (marked 0) is owed nothing
 * back. PostgreSQL alone cannot tell the second: the draw chore sets
 * granted_at on it too, its grant confirmed without units. 0, or -1. */
static int read_draw_orders(redis_nodes *rn, PGconn *pg, reconcile_item *it)
{
    char id_s[24], round_s[24], granted[KEYS_MAX];
    snprintf(id_s, sizeof(id_s), "%" PRId64, it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
    keys_item_granted(granted, sizeof(granted), it->id);
    const char *p[] = {id_s, round_s};
    PGresult *res = PQexecParams(pg,
                                 "SELECT id, quantity, status IN ('persisted', 'paid'), "
                                 "returned_at IS NULL FROM orders WHERE item_id = $1 "
                                 "AND round = $2 AND draw_position IS NOT NULL",
                                 2, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0)
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQresultErrorMessage(res));
    const char *argv[2 + DRAW_ORDERS_CHUNK] = {"HMGET", granted};
    int n = rc == 0 ? PQntuples(res) : 0;
    for (int from = 0; rc == 0 && from < n; from += DRAW_ORDERS_CHUNK) {
        int to = from + DRAW_ORDERS_CHUNK < n ? from + DRAW_ORDERS_CHUNK : n;
        for (int i = from; i < to; i++)
            argv[2 + i - from] = PQgetvalue(res, i, 0);
        rc = count_draw_chunk(rn, it, res, from, to, argv);
    }
    PQclear(res);
    return rc;
}

/* keep_pending for the orders of one item's round only. */
typedef struct round_pending {
    reconcile_report *out;
    const reconcile_item *it;
} round_pending;

static void keep_round_pending(void *ctx, const order *o)
{
    round_pending *rp = ctx;
    if (o->item_id == rp->it->id && o->round == rp->it->round)
        keep_pending(rp->out, o);
}

int reconcile_read_pending(redis_nodes *rn, const reconcile_item *it, reconcile_report *out)
{
    memset(out, 0, sizeof(*out));
    round_pending rp = {out, it};
    int ok = 1;
    for (int j = 0; j < it->segments && ok; j++) {
        char pending[KEYS_MAX];
        keys_pending(pending, sizeof(pending), keys_segment(it->id, j, it->segments));
        ok = for_each_pending(rn, pending, keep_round_pending, &rp) == 0 && !out->waiting_failed;
    }
    if (!ok) {
        free(out->waiting);
        memset(out, 0, sizeof(*out));
    }
    return ok ? 0 : -1;
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

/* Reads one item's books from row of res. Returns 0, or -1 (logged). */
static int read_books_row(const PGresult *res, int row, reconcile_item *it)
{
    pg_row f = pg_row_at(res, row);
    it->id = pg_row_i64(&f, 0);
    it->round = pg_row_i64(&f, 1);
    it->initial = pg_row_i64(&f, 2);
    it->held = pg_row_i64(&f, 3);
    it->restocked = pg_row_i64(&f, 4);
    it->restocks = pg_row_i64(&f, 5);
    it->starts_ms = pg_row_i64(&f, 6);
    it->ends_ms = pg_row_i64(&f, 7);
    it->per_buyer_limit = pg_row_int(&f, 8);
    it->segments = pg_row_int(&f, 9);
    it->ended = pg_row_i64(&f, 10);
    it->unnoted = pg_row_i64(&f, 11);
    const char *admission = PQgetvalue(res, row, 12);
    it->admission = strcmp(admission, "draw") == 0   ? "draw"
                    : strcmp(admission, "room") == 0 ? "room"
                                                     : "race";
    if (it->segments < 1) /* the table's check holds it to 1..64 */
        it->segments = 1;
    return pg_row_check(&f, "reconcile", "an item's books");
}

/* PostgreSQL's books of every item not archived into out->items. Returns
 * 0, or -1 with err set. */
static int read_books(PGconn *pg, reconcile_report *out, char *err, size_t errlen)
{
    PGresult *res =
        /* Units held by the round's orders, and those that left with the
         * cancelled or expired ones, noted back or not. */
        PQexec(pg, "SELECT i.id, i.round, i.initial_stock, o.held, i.restocked, i.restocks, "
                   "coalesce((extract(epoch FROM i.starts_at) * 1000)::bigint, 0), "
                   "coalesce((extract(epoch FROM i.ends_at) * 1000)::bigint, 0), "
                   "i.per_buyer_limit, i.segments, o.ended, o.unnoted, i.admission "
                   "FROM items i "
                   "CROSS JOIN LATERAL (SELECT "
                   " coalesce(sum(quantity) FILTER (WHERE status IN ('persisted', 'paid')), 0) "
                   "  AS held, "
                   " coalesce(sum(quantity) FILTER (WHERE status IN ('cancelled', 'expired')), 0) "
                   "  AS ended, "
                   " coalesce(sum(quantity) FILTER (WHERE status IN ('cancelled', 'expired') "
                   "  AND returned_at IS NULL), 0) AS unnoted "
                   /* A draw's orders count by their grant (read_draw_orders). */
                   " FROM orders WHERE item_id = i.id AND round = i.round "
                   " AND draw_position IS NULL) o "
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
    int rc = out->items ? 0 : -1;
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    for (size_t i = 0; rc == 0 && i < out->nitems; i++)
        if ((rc = read_books_row(res, (int)i, &out->items[i])) < 0)
            snprintf(err, errlen, "postgresql: an item's books are not numbers (logged above)");
    PQclear(res);
    return rc;
}

/* Every queue and pending hash into out: those of the registry's items, and
 * of every segment of PostgreSQL's items (a registry lost on another node
 * must not hide the pending orders of a node that kept them). Returns 1, or
 * 0 when Redis failed. */
static int read_queues(redis_nodes *rn, reconcile_report *out)
{
    int64_t *queues = NULL;
    size_t nqueues = 0;
    int ok = registry_read(rn, &queues, &nqueues) == 0;
    ok = ok && add_item_queues(out, &queues, &nqueues) == 0;
    for (size_t q = 0; ok && q < nqueues; q++) {
        char queue[KEYS_MAX], pending[KEYS_MAX], dead[KEYS_MAX];
        keys_queue(queue, sizeof(queue), queues[q]);
        keys_pending(pending, sizeof(pending), queues[q]);
        keys_dead(dead, sizeof(dead), queues[q]);
        ok = for_each_pending(rn, pending, keep_pending, out) == 0 && !out->waiting_failed;
        out->queue += redis_count(rn, "LLEN", queue, &ok);
        out->pending += redis_count(rn, "HLEN", pending, &ok);
        out->dead += redis_count(rn, "LLEN", dead, &ok);
    }
    free(queues);
    return ok;
}

/* Each item's owed returns and drift, and the report's counts of them. */
static void judge_items(reconcile_report *out)
{
    for (size_t i = 0; i < out->nitems; i++) {
        reconcile_item *it = &out->items[i];
        if (it->redis_known && it->redis_round == it->round) {
            it->owed = it->ended - it->redis_returned;
            it->drift =
                (it->initial + it->restocked - it->remaining) - (it->held + it->pending + it->owed);
        }
        if (!reconcile_item_ok(it))
            out->drifting++;
        else if (reconcile_item_owes(it))
            out->owing++;
    }
}

int reconcile_scan(redis_nodes *rn, PGconn *pg, reconcile_report *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (read_books(pg, out, err, errlen) < 0) {
        reconcile_report_free(out);
        return -1;
    }
    int ok = 1;
    for (size_t i = 0; i < out->nitems && ok; i++) {
        reconcile_item *it = &out->items[i];
        ok = read_redis_item(rn, it) == 0 &&
             (strcmp(it->admission, "draw") != 0 || read_draw_orders(rn, pg, it) == 0);
    }
    ok = ok && read_queues(rn, out);
    if (ok && reconcile_drop_persisted(pg, out) < 0) {
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
    judge_items(out);
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

int reconcile_item_owes(const reconcile_item *it)
{
    return reconcile_item_ok(it) && it->owed > it->unnoted;
}

int reconcile_item_needs_rebuild(const reconcile_item *it)
{
    return !reconcile_item_ok(it) || reconcile_item_owes(it);
}
