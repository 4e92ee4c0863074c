/* draw_run.c: an item's draw (issue 28). One PostgreSQL transaction, which
 * opens with the item row FOR UPDATE (the serializer of the draw and of the
 * waitlist's serving, and what an entry's FOR SHARE waits for): the round's
 * entrants read, each one's ticket computed under K and the beacon
 * (draw_order.h), sorted, served by the rule over the round's units; then
 * five statements whatever the number of entrants (arrays unnested, never a
 * statement an entrant): every entry's position, ticket, outcome and order
 * (or the order id reserved for it, should the waitlist serve it), the item
 * marked drawn, the waitlisted entrants' events made ready, the winners'
 * orders (whose events take the outbox's lock to the commit), and last the
 * waitlisted entrants' entry.waitlisted events written. After the commit
 * the winners' units are taken in Redis (draw_grant.h); a crash before
 * leaves the grants owed, which the worker's draw chore finishes. */
#include "draw_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "digest.h"
#include "draw_order.h"
#include "log.h"
#include "pg_array.h"
#include "pg_value.h"
#include "room_order.h"

#define COMPONENT "draw"

/* The round's entrants, in the order PostgreSQL read them, into *out (the
 * caller frees it). Returns their count, or -1. */
static int64_t read_entrants(pool_session *s, const draw_item *it, draw_entrant **out)
{
    char id_s[24], round_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
    const char *p[] = {id_s, round_s};
    PGresult *res = pool_session_pg(s,
                                    "SELECT user_id, entrant, quantity FROM draw_entries "
                                    "WHERE item_id = $1 AND round = $2",
                                    2, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return -1;
    int64_t n = PQntuples(res);
    draw_entrant *v = calloc((size_t)n + 1, sizeof(*v));
    for (int64_t i = 0; v && i < n; i++) {
        pg_row f = pg_row_at(res, (int)i);
        v[i].user = pg_row_i64(&f, 0);
        snprintf(v[i].e, sizeof(v[i].e), "%s", PQgetvalue(res, (int)i, 1));
        v[i].quantity = pg_row_int(&f, 2);
        if (pg_row_check(&f, COMPONENT, "an entrant") < 0) {
            free(v);
            v = NULL;
        }
    }
    PQclear(res);
    *out = v;
    return v ? n : -1;
}

/* Every entrant's ticket under K and the beacon, then the order and the
 * outcomes. Returns 0, or -1 when libcrypto failed. */
static int order_entrants(draw_entrant *v, int64_t n, const draw_item *it, const char *beacon,
                          size_t beacon_len, int64_t stock)
{
    unsigned char k[ROOM_SECRET_LEN];
    if (digest_unhex(it->k_hex, k, sizeof(k)) < 0)
        return -1;
    for (int64_t i = 0; i < n; i++)
        if (draw_ticket(k, beacon, beacon_len, v[i].e, v[i].ticket) < 0)
            return -1;
    draw_sort(v, (size_t)n);
    draw_serve(v, (size_t)n, stock);
    return 0;
}

/* The statements' arrays: the winners' orders, and every entry's line. */
enum {
    W_ID,
    W_USER,
    W_QUANTITY,
    W_POSITION,
    E_USER,
    E_POSITION,
    E_TICKET,
    E_OUTCOME,
    E_ORDER,
    E_RESERVED,
    NA
};

/* Fills the arrays from the ordered entrants, a winner's order id from ids,
 * and the id reserved for a waitlisted entrant's order (sql/017: its
 * entry.waitlisted is keyed by it) from ids too. Returns the entrants
 * waitlisted, or -1 when out of memory. */
static int64_t fill_arrays(const draw_entrant *v, int64_t n, order_id_gen *ids, pg_array *a)
{
    int64_t waiting = 0;
    for (int64_t i = 0; i < n; i++) {
        char ticket[ROOM_HEX_LEN + 1];
        int won = v[i].outcome == DRAW_WON;
        /* A winner's order id, or the one reserved for the order of an
         * entrant not won (waitlisted or skipped: on the waitlist). */
        int64_t order_id = order_id_next(ids, clock_wall_ms());
        waiting += !won;
        digest_hex(v[i].ticket, sizeof(v[i].ticket), ticket);
        if (won) {
            pg_array_add_i64(&a[W_ID], order_id);
            pg_array_add_i64(&a[W_USER], v[i].user);
            pg_array_add_i64(&a[W_QUANTITY], v[i].quantity);
            pg_array_add_i64(&a[W_POSITION], i + 1);
        }
        pg_array_add_i64(&a[E_USER], v[i].user);
        pg_array_add_i64(&a[E_POSITION], i + 1);
        pg_array_add_text(&a[E_TICKET], ticket);
        pg_array_add_text(&a[E_OUTCOME], draw_outcome_name(v[i].outcome));
        if (won) {
            pg_array_add_i64(&a[E_ORDER], order_id);
            pg_array_add_null(&a[E_RESERVED]);
        } else {
            pg_array_add_null(&a[E_ORDER]);
            pg_array_add_i64(&a[E_RESERVED], order_id);
        }
    }
    /* An add that failed left its literal failed: checked once, here. */
    for (int k = 0; k < NA; k++)
        if (!pg_array_text(&a[k]))
            return -1;
    return waiting;
}

/* The winners' orders: persisted, awaiting payment for the item's
 * payment_timeout_s (none when 0), their position in the draw, their units
 * not yet granted; the insert emits order.won (sql/013_draw.sql). */
static const char ORDERS_SQL[] =
    "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit, pay_by, "
    "                    draw_position) "
    "SELECT o.id, $1, o.user_id, $2, now(), o.quantity, 1, "
    "  CASE WHEN $3::integer > 0 THEN now() + make_interval(secs => $3::integer) END, o.position "
    "FROM unnest($4::bigint[], $5::bigint[], $6::integer[], $7::bigint[]) "
    "  AS o(id, user_id, quantity, position)";

static const char ENTRIES_SQL[] =
    "UPDATE draw_entries d SET position = u.position, ticket = u.ticket, outcome = u.outcome, "
    "  order_id = u.order_id, waitlist_order_id = u.reserved "
    "FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], "
    "  $8::bigint[]) AS u(user_id, position, ticket, outcome, order_id, reserved) "
    "WHERE d.item_id = $1 AND d.round = $2 AND d.user_id = u.user_id";

static const char DRAWN_SQL[] =
    "UPDATE items SET drawn_at = now(), draw_beacon = $2, draw_stock = $3 WHERE id = $1";

/* The entry.waitlisted events of the waitlisted entrants
 * (sql/017_entry_events.sql): their rows made before the outbox's lock is
 * taken, then written under it, one INSERT for them all, in ticket order. */
static const char STAGE_SQL[] = "SELECT entry_events_stage($1, $2)";
static const char WAITLISTED_SQL[] = "SELECT entry_events_waitlisted()";

/* Runs one statement of the draw's; 0, or -1 (logged by the session). */
static int run_statement(pool_session *s, const char *sql, int n, const char *const *p,
                         ExecStatusType want)
{
    PGresult *res = pool_session_pg(s, sql, n, p, want, NULL);
    PQclear(res);
    return res ? 0 : -1;
}

/* The draw's writes, inside the transaction; waiting: the entrants it
 * waitlisted. 0, or -1. */
static int write_draw(pool_session *s, const draw_item *it, const pg_array *a, int64_t waiting,
                      const char *beacon, size_t beacon_len, int64_t stock)
{
    char id_s[24], round_s[24], timeout_s[12], stock_s[24], b[DRAW_BEACON_MAX + 1];
    snprintf(id_s, sizeof(id_s), "%" PRId64, it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
    snprintf(timeout_s, sizeof(timeout_s), "%d", it->payment_timeout_s);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, stock);
    memcpy(b, beacon, beacon_len);
    b[beacon_len] = '\0';
    const char *orders[] = {id_s,
                            round_s,
                            timeout_s,
                            pg_array_text(&a[W_ID]),
                            pg_array_text(&a[W_USER]),
                            pg_array_text(&a[W_QUANTITY]),
                            pg_array_text(&a[W_POSITION])};
    const char *entries[] = {id_s,
                             round_s,
                             pg_array_text(&a[E_USER]),
                             pg_array_text(&a[E_POSITION]),
                             pg_array_text(&a[E_TICKET]),
                             pg_array_text(&a[E_OUTCOME]),
                             pg_array_text(&a[E_ORDER]),
                             pg_array_text(&a[E_RESERVED])};
    const char *drawn[] = {id_s, b, stock_s};
    /* The events last: the orders' insert trigger and the waitlisted
     * events take the outbox's lock, held to the commit, which every
     * order event of the system waits for; the big update of the entries
     * (their order ids made in C, no key to the orders) and the making of
     * the waitlisted events' rows go before it. */
    return run_statement(s, ENTRIES_SQL, 8, entries, PGRES_COMMAND_OK) < 0 ||
                   run_statement(s, DRAWN_SQL, 3, drawn, PGRES_COMMAND_OK) < 0 ||
                   (waiting > 0 && run_statement(s, STAGE_SQL, 2, entries, PGRES_TUPLES_OK) < 0) ||
                   run_statement(s, ORDERS_SQL, 7, orders, PGRES_COMMAND_OK) < 0 ||
                   (waiting > 0 && run_statement(s, WAITLISTED_SQL, 0, NULL, PGRES_TUPLES_OK) < 0)
               ? -1
               : 0;
}

/* The draw of a locked item row it, not drawn yet, entries closed. */
static sk_status draw_locked(pool_session *s, order_id_gen *ids, const draw_item *it,
                             const char *beacon, size_t beacon_len)
{
    draw_entrant *v = NULL;
    pg_array a[NA] = {{0}};
    int64_t stock = it->stock;
    int64_t n = read_entrants(s, it, &v);
    sk_status st = n < 0 ? SK_BACKEND_DOWN : SK_OK;
    if (st == SK_OK && order_entrants(v, n, it, beacon, beacon_len, stock) < 0)
        st = SK_INTERNAL;
    int64_t waiting = st == SK_OK ? fill_arrays(v, n, ids, a) : 0;
    if (waiting < 0)
        st = SK_INTERNAL;
    if (st == SK_OK && write_draw(s, it, a, waiting, beacon, beacon_len, stock) < 0)
        st = SK_BACKEND_DOWN;
    free(v);
    for (int i = 0; i < NA; i++)
        pg_array_free(&a[i]);
    return st;
}

sk_status draw_run(pool_session *s, order_id_gen *ids, int64_t item, const char *beacon,
                   size_t beacon_len, draw_item *it)
{
    if (beacon_len > DRAW_BEACON_MAX)
        return SK_INVALID;
    if (pool_session_pg_command(s, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    sk_status st = draw_store_item(s, item, " FOR UPDATE", it);
    int run = 0;
    if (st == SK_OK && it->archived)
        st = SK_ARCHIVED;
    else if (st == SK_OK && !it->draw)
        st = SK_NOT_A_DRAW;
    else if (st == SK_OK && !it->drawn && it->now_ms < it->closes_ms)
        st = SK_ENTRIES_OPEN;
    else if (st == SK_OK && !it->drawn)
        run = 1;
    if (run)
        st = draw_locked(s, ids, it, beacon, beacon_len);
    if (!run || st != SK_OK) {
        pool_session_pg_command(s, "ROLLBACK");
        if (st == SK_OK) /* drawn before: its grants, should a crash have left some owed */
            pool_session_grant_owed(s, item);
        return st;
    }
    if (pool_session_pg_command(s, "COMMIT") < 0)
        return SK_BACKEND_DOWN;
    log_msg(LOG_INFO, COMPONENT, "item %" PRId64 " round %" PRId64 " drawn", item, it->round);
    /* Owed grants (this draw's, and any a crash left) are the worker's to
     * finish when Redis fails now: the draw stands. */
    pool_session_grant_owed(s, item);
    return SK_OK;
}
