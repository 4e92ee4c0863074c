/* reconcile_rebuild.c: sets items' Redis state back from PostgreSQL and the
 * pending orders, in pieces of bounded size.
 *
 * The rebuild is the repair after a Redis loss, so it must work for the
 * largest item a shop keeps. Written as one MULTI over every buyer, a bench
 * item of 537,515 buyers outlasted the client's timeout on a busy machine,
 * and the start that needed it gave up. So no command here writes more than
 * RECONCILE_PIECE fields, and PostgreSQL is read through cursors as many rows
 * at a time:
 *
 *   1. hold: the item's state is removed (each segment's), so no buyer buys
 *      from a stale stock while the rest is written: its buyers hear 404;
 *      staging keys a crashed rebuild left are removed with it;
 *   2. pieces: from one snapshot of PostgreSQL, each segment's buyers, units
 *      given back and returned marks go into staging keys (keys_staged),
 *      one HSET of at most RECONCILE_PIECE fields at a time; setting a field
 *      to its value is safe to repeat;
 *   3. last, one MULTI per segment (segment 0, whose state the servers read
 *      first, the very last): the staging keys are renamed in and the state
 *      is set. This is the step that puts the item back on sale; it is O(1)
 *      in the number of buyers (the keys replaced are UNLINKed: freed in
 *      the background).
 *
 * A crash anywhere leaves the item off sale, never selling from a half-
 * written state; `reconcile` calls it missing in Redis, and a rebuild run
 * again starts it from step 1. */
#include "reconcile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backoff.h"
#include "clock.h"
#include "keys.h"
#include "order.h"
#include "order_row.h"
#include "pg_session.h"
#include "pg_value.h"
#include "reconcile_piece.h"
#include "reconcile_segment.h"
#include "registry.h"

#define COMPONENT "reconcile"

/* Rows one FETCH reads: a piece (reconcile_piece.h). */
#define REBUILD_FETCH "4096"
/* Progress is said once a second, for items of more than a piece. */
#define REBUILD_PROGRESS_MS 1000

/* The round's orders in PostgreSQL that fall on one segment's keys (key:
 * the segment's key id, the item's own for an item of one segment), asked
 * with $1 the item, $2 the round, $3 the key:
 *   STOCK   the units its stock gave that orders hold, the cancelled or
 *           expired orders whose units it gave, and their units
 *   BUYERS  per buyer whose home it is, in order of buyer: units held,
 *           units given back, the last unit numbered (an anonymous order,
 *           whose buyer is its own id, counts nobody), and how many buyers
 *           in all (for the progress)
 *   MARKS   the cancelled or expired orders with a part of their return on
 *           it (lua/order_return.lua marks each part in its own keys)
 * BUYERS and MARKS are read through cursors. */
#define HELD "status IN ('persisted', 'paid')"
#define BACK "status IN ('cancelled', 'expired')"
#define OF_ROUND "FROM orders WHERE item_id = $1 AND round = $2 "
/* A draw's order (issue 28) ended before its grant: its units never left
 * the stock. PostgreSQL has no column for it, so it is told by the marks'
 * times: each is set after its Redis step, and the draw chore confirms the
 * grant of an order returned first (without units) after the return was
 * noted. A crash between a step and its mark can make the guess wrong, which
 * changes no unit: the rebuild counts every ended order's units back in the
 * stock and marks it returned, so a later return gives nothing either way. */
#define UNGRANTED                                                                                  \
    "draw_position IS NOT NULL AND (granted_at IS NULL OR coalesce(returned_at < granted_at, "     \
    "false))"
static const char stock_sql[] =
    "SELECT coalesce(sum(quantity) FILTER (WHERE " HELD "), 0), count(*) FILTER (WHERE " BACK
    "), coalesce(sum(quantity) FILTER (WHERE " BACK " AND NOT (" UNGRANTED ")), 0) " OF_ROUND
    "AND " ORDER_ROW_STOCK_KEY " = $3";
static const char buyers_sql[] =
    "DECLARE rebuild_buyers NO SCROLL CURSOR FOR SELECT user_id, held, back, last, "
    "count(*) OVER () FROM (SELECT user_id, coalesce(sum(quantity) FILTER (WHERE " HELD
    "), 0) AS held, coalesce(sum(quantity) FILTER (WHERE " BACK "), 0) AS back, "
    "max(first_unit + quantity - 1) AS last " OF_ROUND "AND " ORDER_ROW_HOME_KEY
    " = $3 AND user_id <> id GROUP BY user_id) b ORDER BY user_id";
static const char marks_sql[] =
    "DECLARE rebuild_marks NO SCROLL CURSOR FOR SELECT id::text, quantity::text " OF_ROUND
    "AND " BACK " AND $3 IN (" ORDER_ROW_STOCK_KEY ", " ORDER_ROW_HOME_KEY ")";
/* GRANTED  a draw's orders (issue 28; a draw item has one segment): every
 *          one granted, its units taken (a grant still owed is finished
 *          here: the draw chore's grant then finds the mark and takes
 *          nothing), but those ended before their grant: 0, as
 *          lua/order_return.lua marks them. */
static const char granted_sql[] =
    "DECLARE rebuild_marks NO SCROLL CURSOR FOR SELECT id::text, CASE WHEN " BACK " AND " UNGRANTED
    " THEN '0' ELSE quantity::text END " OF_ROUND "AND draw_position IS NOT NULL AND "
    "$3 = " ORDER_ROW_STOCK_KEY;

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

static void buyer_add(buyer_units *to, const buyer_units *b)
{
    to->held += b->held;
    to->back += b->back;
    to->last = b->last > to->last ? b->last : to->last;
}

/* The buyers of the pending orders counted on key, one entry a buyer,
 * sorted; *n of them, NULL when out of memory. */
static buyer_units *pending_buyers(const reconcile_report *rep, const reconcile_item *it,
                                   int64_t key, size_t *n)
{
    buyer_units *b = malloc((rep->nwaiting + 1) * sizeof(*b));
    size_t k = 0, out = 0;
    if (!b)
        return NULL;
    for (size_t i = 0; i < rep->nwaiting; i++) {
        const order *o = &rep->waiting[i];
        if (o->item_id == it->id && o->round == it->round && counted_at(o) == key &&
            o->user_id != o->id)
            b[k++] = (buyer_units){o->user_id, o->quantity, 0, o->first_unit + o->quantity - 1};
    }
    qsort(b, k, sizeof(*b), by_user);
    for (size_t i = 0; i < k; i++) {
        if (out > 0 && b[out - 1].user == b[i].user)
            buyer_add(&b[out - 1], &b[i]);
        else
            b[out++] = b[i];
    }
    *n = out;
    return b;
}

/* The work on one item. */
typedef struct rebuild {
    redis_nodes *rn;
    PGconn *pg;
    const reconcile_report *rep;
    const reconcile_item *it;
    FILE *progress;
    int64_t said_ms; /* when progress was last said */
    char *err;
    size_t errlen;
    int archived; /* archived after the scan, as the snapshot says: it stays off sale */
} rebuild;

/* Runs a statement of the rebuild's transaction: about segment sg ($1 the
 * item, $2 the round, $3 sg's key id), or with no parameters (sg NULL).
 * Returns its result when its status is want (the caller clears it), else
 * NULL with err set. */
static PGresult *query(rebuild *rb, const reconcile_segment *sg, const char *sql,
                       ExecStatusType want)
{
    char id_s[24], round_s[24], key_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, rb->it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, rb->it->round);
    snprintf(key_s, sizeof(key_s), "%" PRId64, sg ? sg->key : 0);
    const char *p[] = {id_s, round_s, key_s};
    PGresult *res = PQexecParams(rb->pg, sql, sg ? 3 : 0, NULL, sg ? p : NULL, NULL, NULL, 0);
    if (PQresultStatus(res) == want)
        return res;
    snprintf(rb->err, rb->errlen, "postgresql: %s", PQerrorMessage(rb->pg));
    PQclear(res);
    return NULL;
}

static void say_progress(rebuild *rb, const reconcile_segment *sg, int64_t done, int64_t total,
                         int last)
{
    if (!rb->progress || total <= RECONCILE_PIECE)
        return;
    int64_t now = clock_mono_ms();
    if (!last && now - rb->said_ms < REBUILD_PROGRESS_MS)
        return;
    rb->said_ms = now;
    if (rb->it->segments > 1)
        fprintf(rb->progress, "item %" PRId64 " segment %d/%d: %" PRId64 "/%" PRId64 " buyers\n",
                rb->it->id, sg->j + 1, rb->it->segments, done, total);
    else
        fprintf(rb->progress, "item %" PRId64 ": %" PRId64 "/%" PRId64 " buyers\n", rb->it->id,
                done, total);
    fflush(rb->progress);
}

/* A buyer into the staged buyers and given_back hashes. A buyer's next
 * order is numbered after every unit an order of theirs was: units given
 * back are counted up to the last one numbered (a hold a crash left
 * unreleased numbered one that no order holds). */
static int stage_buyer(rebuild *rb, reconcile_piece *buyers, reconcile_piece *given_back,
                       const buyer_units *b)
{
    int64_t after = b->last - b->held;
    int64_t gave = b->back > after ? b->back : after;
    if (reconcile_piece_add_int(buyers, b->user, b->held, rb->err, rb->errlen) < 0)
        return -1;
    return gave > 0 ? reconcile_piece_add_int(given_back, b->user, gave, rb->err, rb->errlen) : 0;
}

/* Step 2 for the segment's buyers: PostgreSQL's, in order of buyer, merged
 * with those of the pending orders. 0, or -1 with err set. */
static int stage_buyers(rebuild *rb, reconcile_segment *sg)
{
    size_t npend = 0, pi = 0;
    buyer_units *pend = pending_buyers(rb->rep, rb->it, sg->key, &npend);
    reconcile_piece buyers = {0}, given_back = {0};
    PGresult *cursor = NULL;
    int rc = -1;
    if (!pend || reconcile_piece_init(&buyers, rb->rn, sg->staged_buyers) < 0 ||
        reconcile_piece_init(&given_back, rb->rn, sg->staged_given_back) < 0) {
        snprintf(rb->err, rb->errlen, "out of memory");
        goto done;
    }
    cursor = query(rb, sg, buyers_sql, PGRES_COMMAND_OK);
    if (!cursor)
        goto done;
    int64_t done = 0, total = (int64_t)npend;
    for (int first = 1;; first = 0) {
        PGresult *rows =
            query(rb, NULL, "FETCH " REBUILD_FETCH " FROM rebuild_buyers", PGRES_TUPLES_OK);
        if (!rows)
            goto done;
        int n = PQntuples(rows);
        int64_t all = 0; /* for the progress only */
        if (first && n > 0 && pg_value_i64(rows, 0, 4, &all) == 0)
            total += all;
        for (int i = 0; i < n; i++) {
            pg_row f = pg_row_at(rows, i);
            buyer_units b = {pg_row_i64(&f, 0), pg_row_i64(&f, 1), pg_row_i64(&f, 2),
                             pg_row_i64(&f, 3)};
            int bad = pg_row_check(&f, COMPONENT, "a buyer's units") < 0;
            if (bad)
                snprintf(rb->err, rb->errlen, "postgresql: a buyer's units are not numbers");
            for (; !bad && pi < npend && pend[pi].user < b.user; pi++, done++)
                bad = stage_buyer(rb, &buyers, &given_back, &pend[pi]) < 0;
            if (pi < npend && pend[pi].user == b.user)
                buyer_add(&b, &pend[pi++]);
            if (bad || stage_buyer(rb, &buyers, &given_back, &b) < 0) {
                PQclear(rows);
                goto done;
            }
            done++;
        }
        PQclear(rows);
        if (n == 0)
            break;
        say_progress(rb, sg, done, total, 0);
    }
    for (; pi < npend; pi++, done++)
        if (stage_buyer(rb, &buyers, &given_back, &pend[pi]) < 0)
            goto done;
    if (reconcile_piece_flush(&buyers, rb->err, rb->errlen) < 0 ||
        reconcile_piece_flush(&given_back, rb->err, rb->errlen) < 0)
        goto done;
    say_progress(rb, sg, done, done, 1);
    sg->has_buyers = buyers.wrote;
    sg->has_given_back = given_back.wrote;
    PGresult *closed = query(rb, NULL, "CLOSE rebuild_buyers", PGRES_COMMAND_OK);
    rc = closed ? 0 : -1;
    PQclear(closed);
done:
    PQclear(cursor);
    reconcile_piece_close(&buyers);
    reconcile_piece_close(&given_back);
    free(pend);
    return rc;
}

/* Step 2 for one of the segment's hashes of order marks, read by sql (its
 * cursor named rebuild_marks) into the staging key staged; *wrote set when
 * it wrote any. 0, or -1 with err set. */
static int stage_marks(rebuild *rb, reconcile_segment *sg, const char *sql, const char *staged,
                       int *wrote)
{
    reconcile_piece marks;
    if (reconcile_piece_init(&marks, rb->rn, staged) < 0) {
        reconcile_piece_close(&marks);
        snprintf(rb->err, rb->errlen, "out of memory");
        return -1;
    }
    PGresult *cursor = query(rb, sg, sql, PGRES_COMMAND_OK);
    int rc = cursor ? 0 : -1;
    PQclear(cursor);
    for (int n = 1; rc == 0 && n > 0;) {
        PGresult *rows =
            query(rb, NULL, "FETCH " REBUILD_FETCH " FROM rebuild_marks", PGRES_TUPLES_OK);
        n = rows ? PQntuples(rows) : 0;
        rc = rows ? 0 : -1;
        for (int i = 0; rc == 0 && i < n; i++)
            rc = reconcile_piece_add(&marks, PQgetvalue(rows, i, 0), PQgetvalue(rows, i, 1),
                                     rb->err, rb->errlen);
        PQclear(rows);
    }
    if (rc == 0)
        rc = reconcile_piece_flush(&marks, rb->err, rb->errlen);
    if (rc == 0) {
        PGresult *closed = query(rb, NULL, "CLOSE rebuild_marks", PGRES_COMMAND_OK);
        rc = closed ? 0 : -1;
        PQclear(closed);
    }
    *wrote = marks.wrote;
    reconcile_piece_close(&marks);
    return rc;
}

/* Step 2 for one segment: its stock from PostgreSQL and the pending orders,
 * then its buyers and marks staged. 0, or -1 with err set. */
static int stage_segment(rebuild *rb, reconcile_segment *sg)
{
    PGresult *stock = query(rb, sg, stock_sql, PGRES_TUPLES_OK);
    if (!stock)
        return -1;
    pg_row f = pg_row_at(stock, 0);
    sg->held = pg_row_i64(&f, 0);
    sg->settled = pg_row_i64(&f, 1);
    sg->back = pg_row_i64(&f, 2);
    PQclear(stock);
    if (pg_row_check(&f, COMPONENT, "a segment's stock") < 0) {
        snprintf(rb->err, rb->errlen, "postgresql: a segment's stock is not numbers");
        return -1;
    }
    for (size_t i = 0; i < rb->rep->nwaiting; i++) {
        const order *o = &rb->rep->waiting[i];
        if (o->item_id == rb->it->id && o->round == rb->it->round && taken_from(o) == sg->key)
            sg->pending += o->quantity;
    }
    /* The returned marks: every cancelled or expired order with a part of
     * its return here counts as given back, so an owed return the sweep
     * finishes later adds nothing again. */
    return stage_buyers(rb, sg) == 0 &&
                   stage_marks(rb, sg, marks_sql, sg->staged_returned, &sg->has_returned) == 0 &&
                   stage_marks(rb, sg, granted_sql, sg->staged_granted, &sg->has_granted) == 0
               ? 0
               : -1;
}

/* The three steps for one item: its queues back in the registry first (for
 * a Redis that lost it), then held, staged from one snapshot of the orders
 * (an order cancelled meanwhile is counted on each segment in the same
 * state), and committed, segment 0 last. 0, or -1 with err set: the item
 * is then off sale. */
static int rebuild_item(rebuild *rb)
{
    const reconcile_item *it = rb->it;
    reconcile_segment sg[KEYS_SEGMENTS_MAX];
    int segments = it->segments < KEYS_SEGMENTS_MAX ? it->segments : KEYS_SEGMENTS_MAX;
    for (int j = 0; j < segments; j++) {
        reconcile_segment_init(&sg[j], it, j);
        if (registry_add(rb->rn, sg[j].key) < 0) {
            snprintf(rb->err, rb->errlen, "redis: SADD %s failed (logged above)", KEYS_ITEMS);
            return -1;
        }
    }
    if (reconcile_hold_item(rb->rn, it, rb->err, rb->errlen) < 0)
        return -1;
    /* The orders still pending, read again once the item is off sale (no
     * new one can come) and before the snapshot: the scan's list is older,
     * and servers may have sold until the hold. Each order is then in the
     * list or in the snapshot (the worker commits before it acknowledges),
     * and those in both are dropped from the list inside the snapshot. */
    reconcile_report now;
    if (reconcile_read_pending(rb->rn, it, &now) < 0) {
        snprintf(rb->err, rb->errlen, "redis: reading the pending orders failed (logged above)");
        return -1;
    }
    rb->rep = &now;
    PGresult *begin =
        query(rb, NULL, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PGRES_COMMAND_OK);
    int in_snapshot = begin != NULL, rc = in_snapshot ? 0 : -1;
    PQclear(begin);
    if (rc == 0 && reconcile_drop_persisted(rb->pg, &now) < 0) {
        snprintf(rb->err, rb->errlen, "postgresql: %s", PQerrorMessage(rb->pg));
        rc = -1;
    }
    /* Archived since the scan: the state set back keeps the mark, or the
     * rebuild would put it on sale again. */
    PGresult *archived =
        rc == 0
            ? pg_exec_id(rb->pg, "SELECT archived_at IS NOT NULL FROM items WHERE id = $1", it->id)
            : NULL;
    if (rc == 0 && PQresultStatus(archived) != PGRES_TUPLES_OK) {
        snprintf(rb->err, rb->errlen, "postgresql: %s", PQerrorMessage(rb->pg));
        rc = -1;
    }
    rb->archived = 0;
    if (rc == 0 && PQntuples(archived) == 1 && pg_value_bool(archived, 0, 0, &rb->archived) < 0) {
        snprintf(rb->err, rb->errlen, "postgresql: archived is not a boolean");
        rc = -1;
    }
    PQclear(archived);
    for (int j = 0; j < segments && rc == 0; j++)
        rc = stage_segment(rb, &sg[j]);
    for (int j = segments - 1; j >= 0 && rc == 0; j--)
        rc = reconcile_segment_commit(rb->rn, it, &sg[j], rb->archived, rb->err, rb->errlen);
    if (in_snapshot)
        PQclear(PQexec(rb->pg, rc == 0 ? "COMMIT" : "ROLLBACK"));
    free(now.waiting);
    return rc;
}

int reconcile_hold(redis_nodes *rn, const reconcile_report *r, char *err, size_t errlen)
{
    int held = 0;
    for (size_t i = 0; i < r->nitems; i++) {
        /* Only the items that could sell twice: one owed returns sells
         * fewer units than it may, until its rebuild. */
        if (!reconcile_item_needs_rebuild(&r->items[i]) || reconcile_item_ok(&r->items[i]))
            continue;
        if (reconcile_hold_item(rn, &r->items[i], err, errlen) < 0)
            return -1;
        held++;
    }
    return held;
}

int reconcile_rebuild(redis_nodes *rn, PGconn *pg, const reconcile_report *r, FILE *progress,
                      char *err, size_t errlen)
{
    char why[256];
    int rebuilt = 0, failed = 0;
    for (size_t i = 0; i < r->nitems; i++) {
        const reconcile_item *it = &r->items[i];
        if (!reconcile_item_needs_rebuild(it))
            continue;
        rebuild rb = {rn, pg, r, it, progress, clock_mono_ms(), why, sizeof(why), 0};
        if (rebuild_item(&rb) == 0) {
            rebuilt++;
            continue;
        }
        if (failed++ == 0)
            snprintf(err, errlen, "rebuilding item %" PRId64 " failed: %s", it->id, why);
        if (progress)
            fprintf(progress, "item %" PRId64 ": the rebuild failed, the item is off sale: %s\n",
                    it->id, why);
    }
    if (failed > 1) {
        size_t len = strlen(err);
        snprintf(err + len, errlen - len, " (and %d more)", failed - 1);
    }
    return failed ? -1 : rebuilt;
}
