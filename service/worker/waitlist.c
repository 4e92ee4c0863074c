/* waitlist.c: the draw chore's pass: the drawn items found, each visited
 * under its row lock: owed grants, free units, the waitlist served, then
 * granted (waitlist.h says why each unit goes once). */
#include "waitlist.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "draw_grant.h"
#include "draw_order.h"
#include "keys.h"
#include "log.h"
#include "order_node.h"
#include "order_return.h"
#include "pg_array.h"
#include "pg_value.h"
#include "redis_reply.h"

#define COMPONENT "waitlist"
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* The items to visit, with whether they owe grants: drawn in their current
 * round with entrants waiting (a seq scan of items, whose drawn ones probe
 * draw_entries_waiting), and any with a draw order not granted yet (the
 * orders_grants_owed index). Both empty: nothing but the scan. */
static const char items_sql[] =
    "SELECT id, bool_or(owed) FROM ("
    "  SELECT i.id, false AS owed FROM items i"
    "  WHERE i.drawn_at IS NOT NULL AND i.archived_at IS NULL AND EXISTS (SELECT 1"
    "    FROM draw_entries e WHERE e.item_id = i.id AND e.round = i.round"
    "    AND e.outcome IN ('waitlisted', 'skipped'))"
    "  UNION ALL SELECT item_id, true FROM orders"
    "  WHERE draw_position IS NOT NULL AND granted_at IS NULL) v"
    " GROUP BY id ORDER BY id LIMIT " TEXT(WAITLIST_ITEMS);

/* The item's row, locked: its round, and whether its waitlist is served. */
static const char lock_sql[] =
    "SELECT round, drawn_at IS NOT NULL AND archived_at IS NULL AND admission = 'draw'"
    " FROM items WHERE id = $1 FOR UPDATE SKIP LOCKED";

/* The waitlist in position order; those whose quantity exceeds the free
 * units ($3) cannot be served now, whatever comes before them. */
static const char waiting_sql[] =
    "SELECT user_id, position, quantity FROM draw_entries"
    " WHERE item_id = $1 AND round = $2 AND outcome IN ('waitlisted', 'skipped')"
    "   AND quantity <= $3 ORDER BY position LIMIT " TEXT(WAITLIST_ENTRANTS);

/* The orders of the entrants served ($3 their positions, $4 order ids made
 * now), and their entries won_from_waitlist; returns their refs. An order
 * takes the id the draw reserved for it (sql/017: the key of its entry's
 * entry.waitlisted, so that the webhooks deliver its order.won after it);
 * only entries drawn before 017 have none and take the one made now. */
static const char serve_sql[] =
    "WITH s AS (SELECT * FROM unnest($3::bigint[], $4::bigint[]) AS s (position, id)),"
    " o AS (INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit,"
    "         pay_by, draw_position)"
    "   SELECT coalesce(e.waitlist_order_id, s.id), e.item_id, e.user_id, e.round, now(),"
    "     e.quantity, 1,"
    "     CASE WHEN i.payment_timeout_s > 0"
    "       THEN now() + make_interval(secs => i.payment_timeout_s) END, e.position"
    "   FROM s JOIN draw_entries e ON e.item_id = $1 AND e.round = $2"
    "     AND e.position = s.position AND e.outcome IN ('waitlisted', 'skipped')"
    "   JOIN items i ON i.id = e.item_id"
    "   RETURNING id, draw_position)"
    " UPDATE draw_entries e SET outcome = 'won_from_waitlist', order_id = o.id FROM o"
    " WHERE e.item_id = $1 AND e.round = $2 AND e.position = o.draw_position"
    " RETURNING o.id, e.item_id, e.round, e.user_id, e.quantity, 0, 0, e.position";

void waitlist_init(waitlist *wl)
{
    memset(wl, 0, sizeof(*wl));
}

/* Runs sql with n text parameters. Its result, when its status is want,
 * lands in *out (the caller PQclear()s it; out NULL: cleared here) and 0 is
 * returned; else -1 (logged), or -2 when the connection is gone. */
static int run(PGconn *pg, const char *sql, int n, const char *const *p, ExecStatusType want,
               PGresult **out)
{
    PGresult *res = PQexecParams(pg, sql, n, NULL, p, NULL, NULL, 0);
    int ok = PQresultStatus(res) == want;
    if (!ok)
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQresultErrorMessage(res));
    if (ok && out)
        *out = res;
    else
        PQclear(res);
    return ok ? 0 : PQstatus(pg) == CONNECTION_OK ? -1 : -2;
}

/* The item's free units and round in Redis: 0, or -1 (no state, or Redis
 * failed). */
static int free_units(redis_nodes *rn, int64_t item, int64_t *stock, int64_t *round)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    const char *argv[] = {"HMGET", state, "stock", "round"};
    redisReply *r = redis_nodes_command(rn, state, 4, argv, NULL);
    int64_t v[2];
    int rc = r && r->elements == 2 && redis_reply_numbers(r, 0, 2, v) == 0 ? 0 : -1;
    freeReplyObject(r);
    if (rc == 0) {
        *stock = v[0];
        *round = v[1];
    }
    return rc;
}

/* Inserts the orders of the n entrants at positions pos (their ids made
 * now) and marks their entries, in the open transaction; their refs land
 * in o. Returns the orders made, or -1. */
static int insert_orders(waitlist *wl, PGconn *pg, const char *item_s, const char *round_s,
                         const int64_t *pos, size_t n, order_ref *o)
{
    int64_t *ids = malloc(n * sizeof(*ids));
    for (size_t i = 0; ids && i < n; i++)
        ids[i] = order_id_next(&wl->ids, clock_wall_ms());
    char *pos_s = pg_array_of_i64(pos, n, sizeof(*pos));
    char *ids_s = ids ? pg_array_of_i64(ids, n, sizeof(*ids)) : NULL;
    int rc = -1;
    if (pos_s && ids_s) {
        const char *p[] = {item_s, round_s, pos_s, ids_s};
        PGresult *res = NULL;
        rc = run(pg, serve_sql, 4, p, PGRES_TUPLES_OK, &res) == 0
                 ? order_refs_read(res, o, n, COMPONENT)
                 : -1;
        PQclear(res);
    }
    free(pos_s);
    free(ids_s);
    free(ids);
    return rc;
}

/* Serves the waitlist of item (round round_s) over `units` free units in
 * the open transaction: reads who may fit, applies the serving rule,
 * makes their orders. Their refs land in *out (the caller frees it).
 * Returns the orders made (0: nobody fits), or -1. */
static int serve(waitlist *wl, PGconn *pg, const char *item_s, const char *round_s, int64_t units,
                 order_ref **out)
{
    char units_s[24];
    snprintf(units_s, sizeof(units_s), "%" PRId64, units);
    const char *p[] = {item_s, round_s, units_s};
    PGresult *res = NULL;
    if (run(pg, waiting_sql, 3, p, PGRES_TUPLES_OK, &res) < 0)
        return -1;
    size_t n = (size_t)PQntuples(res), won = 0;
    draw_entrant *v = calloc(n + 1, sizeof(*v));
    int64_t *pos = malloc((n + 1) * sizeof(*pos));
    *out = malloc((n + 1) * sizeof(**out));
    int rc = v && pos && *out ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        pg_row r = pg_row_at(res, (int)i);
        v[i].user = pg_row_i64(&r, 0);
        pos[i] = pg_row_i64(&r, 1);
        v[i].quantity = pg_row_int(&r, 2);
        rc = pg_row_check(&r, COMPONENT, "a waitlisted entrant");
    }
    PQclear(res);
    if (rc == 0)
        draw_serve(v, n, units); /* in position order: the rows' */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (v[i].outcome == DRAW_WON)
            pos[won++] = pos[i];
    if (rc == 0 && won > 0)
        rc = insert_orders(wl, pg, item_s, round_s, pos, won, *out);
    free(v);
    free(pos);
    return rc;
}

/* The node number of the chore's order ids, taken once. 0, or -1. */
static int take_node(waitlist *wl, redis_nodes *rn)
{
    unsigned node;
    if (wl->have_node)
        return 0;
    if (order_node_take(rn, &node) < 0)
        return -1;
    order_id_gen_init(&wl->ids, node);
    wl->have_node = 1;
    log_msg(LOG_INFO, COMPONENT, "order-id node %u", node);
    return 0;
}

/* Visits item under its row lock as waitlist.h says; counts into out.
 * Returns 0, -1 (Redis, or a statement, failed: the rest waits for the
 * next visit) or -2 (the connection is gone). */
static int visit(waitlist *wl, redis_nodes *rn, PGconn *pg, const scripts *sc, int64_t item,
                 waitlist_result *out)
{
    char item_s[24], round_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, item);
    const char *p[] = {item_s};
    PGresult *res = NULL;
    int rc = run(pg, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL);
    if (rc < 0)
        return rc;
    if ((rc = run(pg, lock_sql, 1, p, PGRES_TUPLES_OK, &res)) < 0) {
        PQclear(PQexec(pg, "ROLLBACK"));
        return rc;
    }
    int locked = PQntuples(res) == 1;
    pg_row r = pg_row_at(res, 0);
    int64_t round = locked ? pg_row_i64(&r, 0) : 0;
    int drawn = locked && pg_row_bool(&r, 1);
    PQclear(res);
    rc = locked ? pg_row_check(&r, COMPONENT, "a drawn item") : 0;
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    /* (a) Every draw order so far takes its units before any are counted. */
    int64_t granted = locked && rc == 0 ? draw_grant_owed(rn, pg, sc, item, COMPONENT) : 0;
    if (granted < 0)
        rc = -1;
    int64_t stock = 0, redis_round = 0;
    if (drawn && rc == 0 && free_units(rn, item, &stock, &redis_round) < 0)
        rc = -1;
    order_ref *o = NULL;
    int n = 0;
    if (drawn && rc == 0 && stock > 0 && redis_round == round) {
        n = take_node(wl, rn) == 0 ? serve(wl, pg, item_s, round_s, stock, &o) : -1;
        rc = n < 0 ? -1 : 0;
    }
    int ended = run(pg, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL);
    rc = ended < 0 ? ended : rc;
    out->items += locked;
    out->granted += granted > 0 ? granted : 0;
    if (rc == 0 && n > 0) {
        /* (d) Committed: a failure from here leaves grants owed to (a). */
        unsigned char *done = malloc((size_t)n);
        rc = done ? draw_grant_units(rn, pg, sc, o, (size_t)n, done, COMPONENT) : -1;
        free(done);
        out->served += n;
        for (int i = 0; i < n; i++)
            out->units += o[i].quantity;
        log_msg(LOG_INFO, COMPONENT, "item %" PRId64 ": %d waitlisted entrants served", item, n);
    }
    free(o);
    return rc;
}

int waitlist_run(waitlist *wl, redis_nodes *rn, PGconn *pg, const scripts *sc, waitlist_result *out)
{
    memset(out, 0, sizeof(*out));
    PGresult *res = NULL;
    int rc = run(pg, items_sql, 0, NULL, PGRES_TUPLES_OK, &res);
    if (rc < 0)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n && rc != -2; i++) {
        pg_row r = pg_row_at(res, i);
        int64_t item = pg_row_i64(&r, 0), stock = 0, round = 0;
        int owed = pg_row_bool(&r, 1);
        if (pg_row_check(&r, COMPONENT, "a drawn item") < 0)
            continue;
        /* Without grants owed, only free units give the visit work: the
         * lock is not taken for nothing, every period, for every drawn
         * item whose waitlist waits. */
        if (!owed && (free_units(rn, item, &stock, &round) < 0 || stock <= 0))
            continue;
        int v = visit(wl, rn, pg, sc, item, out);
        rc = v < rc ? v : rc;
    }
    PQclear(res);
    return rc;
}
