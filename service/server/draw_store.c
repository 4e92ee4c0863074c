/* draw_store.c: a draw item's entries, counts and audit in PostgreSQL. */
#include "draw_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "digest.h"
#include "log.h"
#include "pg_value.h"
#include "pow_gate.h"
#include "room_order.h"

#define COMPONENT "draw"

/* A time column as Unix ms, 0 for null. */
#define MS(col) "coalesce((extract(epoch FROM " col ") * 1000)::bigint, 0)"

sk_status draw_store_item(pool_session *s, int64_t item, const char *lock, draw_item *it)
{
    char sql[640];
    snprintf(sql, sizeof(sql),
             "SELECT round, admission = 'draw', archived_at IS NOT NULL, drawn_at IS NOT NULL, "
             "per_buyer_limit, payment_timeout_s, " MS("entries_open_at") ", " MS(
                 "entries_close_at") ", " MS("now()") ", initial_stock + restocked, "
                                                      "coalesce(room_secret, '') "
                                                      "FROM items WHERE id = $1%s",
             lock);
    PGresult *res;
    sk_status st = pool_session_pg_row(s, sql, item, &res);
    if (st != SK_OK)
        return st;
    pg_row f = pg_row_at(res, 0);
    *it = (draw_item){.id = item,
                      .round = pg_row_i64(&f, 0),
                      .draw = pg_row_bool(&f, 1),
                      .archived = pg_row_bool(&f, 2),
                      .drawn = pg_row_bool(&f, 3),
                      .per_buyer_limit = pg_row_int(&f, 4),
                      .payment_timeout_s = pg_row_int(&f, 5),
                      .opens_ms = pg_row_i64(&f, 6),
                      .closes_ms = pg_row_i64(&f, 7),
                      .now_ms = pg_row_i64(&f, 8),
                      .stock = pg_row_i64(&f, 9)};
    snprintf(it->k_hex, sizeof(it->k_hex), "%s", PQgetvalue(res, 0, 10));
    PQclear(res);
    return pg_row_check(&f, COMPONENT, "a draw's item") < 0 ? SK_INTERNAL : SK_OK;
}

/* Why it takes no entry now: SK_OK when it does, SK_ARCHIVED, SK_NOT_A_DRAW,
 * SK_ENTRIES_NOT_OPEN or SK_ENTRIES_CLOSED. */
static sk_status entries_refusal(const draw_item *it)
{
    if (it->archived)
        return SK_ARCHIVED;
    if (!it->draw)
        return SK_NOT_A_DRAW;
    if (it->drawn || it->now_ms >= it->closes_ms)
        return SK_ENTRIES_CLOSED;
    if (it->now_ms < it->opens_ms)
        return SK_ENTRIES_NOT_OPEN;
    return SK_OK;
}

/* An entry's columns, in draw_entry_read's order. */
#define ENTRY_COLUMNS                                                                              \
    "item_id, round, user_id, entrant, quantity, " MS("entered_at") ", coalesce(position, 0), "    \
                                                                    "coalesce(outcome, ''), "      \
                                                                    "coalesce(order_id, 0)"

/* One statement whose rows are entries (ENTRY_COLUMNS): SK_OK with *out the
 * first, SK_NOT_ENTERED when none, SK_INTERNAL or SK_BACKEND_DOWN. */
static sk_status one_entry(pool_session *s, const char *sql, int n, const char *const *p,
                           draw_entry *out)
{
    PGresult *res = pool_session_pg(s, sql, n, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    sk_status st = PQntuples(res) == 0                          ? SK_NOT_ENTERED
                   : draw_entry_read(res, 0, 0, out, COMPONENT) ? SK_INTERNAL
                                                                : SK_OK;
    PQclear(res);
    return st;
}

/* The insert takes the item row FOR SHARE: a draw holds it FOR UPDATE, so
 * an entry either commits before the draw reads the entries or, once the
 * draw committed, finds the item drawn and adds nothing. The window is
 * PostgreSQL's clock's. */
static const char ENTER_SQL[] =
    "WITH i AS (SELECT id, round, per_buyer_limit FROM items WHERE id = $1 AND round = $2 "
    "  AND admission = 'draw' AND archived_at IS NULL AND drawn_at IS NULL "
    "  AND now() >= entries_open_at AND now() < entries_close_at FOR SHARE) "
    "INSERT INTO draw_entries (item_id, round, user_id, entrant, quantity) "
    "SELECT id, round, $3, $4, $5 FROM i WHERE $5 <= per_buyer_limit "
    "ON CONFLICT DO NOTHING RETURNING " ENTRY_COLUMNS;

static const char ENTRY_SQL[] = "SELECT " ENTRY_COLUMNS " FROM draw_entries "
                                "WHERE item_id = $1 AND round = $2 AND user_id = $3";

sk_status draw_store_enter(pool_session *s, int64_t item, int64_t user, int quantity,
                           const struct pow_gate_mark *mark, draw_entry *out, draw_item *it,
                           const char **why)
{
    char id_s[24], round_s[24], user_s[24], q_s[12], e[ROOM_HEX_LEN + 1];
    /* Twice at most: a reset, a close or the draw may come between the
     * item's read and the insert, which then finds no row to enter. */
    for (int attempt = 0; attempt < 2; attempt++) {
        sk_status st = draw_store_item(s, item, "", it);
        if (st == SK_OK)
            st = entries_refusal(it);
        if (st == SK_OK && quantity > it->per_buyer_limit) {
            *why = "quantity must be from 1 to the item's per_buyer_limit";
            st = SK_INVALID;
        }
        if (st == SK_OK && room_entrant(item, it->round, user, e) < 0)
            st = SK_INTERNAL;
        if (st == SK_OK && mark && attempt == 0)
            st = pow_gate_use(s, mark);
        if (st != SK_OK)
            return st;
        snprintf(id_s, sizeof(id_s), "%" PRId64, item);
        snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
        snprintf(user_s, sizeof(user_s), "%" PRId64, user);
        snprintf(q_s, sizeof(q_s), "%d", quantity);
        const char *p[] = {id_s, round_s, user_s, e, q_s};
        st = one_entry(s, ENTER_SQL, 5, p, out);
        if (st == SK_OK)
            return SK_CREATED;
        if (st == SK_NOT_ENTERED) /* there already, or the item changed: which? */
            st = one_entry(s, ENTRY_SQL, 3, (const char *[]){id_s, round_s, user_s}, out);
        if (st != SK_NOT_ENTERED)
            return st;
    }
    return SK_BACKEND_DOWN;
}

sk_status draw_store_entry(pool_session *s, int64_t item, int64_t user, draw_entry *out)
{
    draw_item it;
    sk_status st = draw_store_item(s, item, "", &it);
    if (st == SK_OK && !it.draw)
        st = SK_NOT_A_DRAW;
    if (st != SK_OK)
        return st;
    char id_s[24], round_s[24], user_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it.round);
    snprintf(user_s, sizeof(user_s), "%" PRId64, user);
    const char *p[] = {id_s, round_s, user_s};
    return one_entry(s, ENTRY_SQL, 3, p, out);
}

sk_status draw_store_counts(pool_session *s, item_view *v)
{
    unsigned char k[ROOM_SECRET_LEN];
    if (digest_unhex(v->counts.secret, k, sizeof(k)) < 0 ||
        room_commitment(k, v->counts.commitment) < 0)
        return SK_INTERNAL;
    PGresult *res = pool_session_pg_id(
        s,
        "SELECT " MS(
            "i.drawn_at") ", coalesce(i.draw_beacon, ''), coalesce(i.draw_stock, 0), "
                          "  count(d.user_id), count(*) FILTER (WHERE d.outcome = 'won'), "
                          "  count(*) FILTER (WHERE d.outcome = 'waitlisted'), "
                          "  count(*) FILTER (WHERE d.outcome = 'skipped'), "
                          "  count(*) FILTER (WHERE d.outcome = 'won_from_waitlist'), "
                          "  coalesce(sum(d.quantity) FILTER (WHERE d.order_id IS NOT NULL), 0) "
                          "FROM items i LEFT JOIN draw_entries d ON d.item_id = i.id AND d.round = "
                          "i.round "
                          "WHERE i.id = $1 GROUP BY i.id",
        v->id, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    draw_counts *d = &v->counts.draw;
    pg_row f = pg_row_at(res, 0);
    int rows = PQntuples(res);
    if (rows == 1) {
        d->drawn_ms = pg_row_i64(&f, 0);
        snprintf(d->beacon, sizeof(d->beacon), "%s", PQgetvalue(res, 0, 1));
        d->stock = pg_row_i64(&f, 2);
        d->entries = pg_row_i64(&f, 3);
        d->won = pg_row_i64(&f, 4);
        d->waitlisted = pg_row_i64(&f, 5);
        d->skipped = pg_row_i64(&f, 6);
        d->won_from_waitlist = pg_row_i64(&f, 7);
        d->units_won = pg_row_i64(&f, 8);
    }
    PQclear(res);
    return rows == 1 && pg_row_check(&f, COMPONENT, "a draw's counts") == 0 ? SK_OK : SK_INTERNAL;
}

/* The page's entrants after `after` as a JSON array; *last gets the last
 * position listed, *n how many. NULL when PostgreSQL failed or out of memory. */
static json_t *audit_lines(pool_session *s, const draw_item *it, int64_t after, int64_t limit,
                           int64_t *last, int64_t *n)
{
    char id_s[24], round_s[24], after_s[24], limit_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, it->id);
    snprintf(round_s, sizeof(round_s), "%" PRId64, it->round);
    snprintf(after_s, sizeof(after_s), "%" PRId64, after);
    snprintf(limit_s, sizeof(limit_s), "%" PRId64, limit);
    const char *p[] = {id_s, round_s, after_s, limit_s};
    PGresult *res = pool_session_pg(s,
                                    "SELECT position, entrant, quantity, outcome, ticket "
                                    "FROM draw_entries WHERE item_id = $1 AND round = $2 "
                                    "AND position > $3 ORDER BY position LIMIT $4",
                                    4, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return NULL;
    json_t *list = json_array();
    *n = PQntuples(res);
    for (int i = 0; list && i < (int)*n; i++) {
        pg_row f = pg_row_at(res, i);
        *last = pg_row_i64(&f, 0);
        int quantity = pg_row_int(&f, 2);
        if (pg_row_check(&f, COMPONENT, "an audit line") < 0 ||
            json_array_append_new(
                list, json_pack("{s:I, s:s, s:i, s:s, s:s}", "position", (json_int_t)*last,
                                "entrant", PQgetvalue(res, i, 1), "quantity", quantity, "outcome",
                                PQgetvalue(res, i, 3), "ticket", PQgetvalue(res, i, 4))) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    PQclear(res);
    return list;
}

char *draw_store_audit(pool_session *s, int64_t item, int64_t after, int64_t limit, sk_status *st)
{
    draw_item it;
    item_view v = {.id = item};
    *st = draw_store_item(s, item, "", &it);
    if (*st == SK_OK && !it.draw)
        *st = SK_NOT_A_DRAW;
    else if (*st == SK_OK && !it.drawn)
        *st = SK_NOT_DRAWN;
    if (*st == SK_OK) {
        snprintf(v.counts.secret, sizeof(v.counts.secret), "%s", it.k_hex);
        *st = draw_store_counts(s, &v);
    }
    if (*st != SK_OK)
        return NULL;
    int64_t last = after, n = 0;
    json_t *lines = audit_lines(s, &it, after, limit, &last, &n);
    const draw_counts *d = &v.counts.draw;
    json_t *o = lines ? json_pack("{s:I, s:I, s:s, s:s, s:s, s:I, s:o, s:o}", "item_id",
                                  (json_int_t)item, "round", (json_int_t)it.round, "commitment",
                                  v.counts.commitment, "secret", it.k_hex, "beacon", d->beacon,
                                  "stock", (json_int_t)d->stock, "entrants", lines, "next_after",
                                  n == limit ? json_integer(last) : json_null())
                      : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        *st = lines ? SK_INTERNAL : SK_BACKEND_DOWN;
    return text;
}
