/* webhook_store.c: the deliveries' statements. */
#include "webhook_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_array.h"
#include "pg_session.h"
#include "pg_value.h"

#define COMPONENT "webhooks"
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* res when its status is want, else NULL (logged; res cleared). The caller
 * PQclear()s. */
static PGresult *judged(PGresult *res, ExecStatusType want)
{
    if (PQresultStatus(res) == want)
        return res;
    log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQresultErrorMessage(res));
    PQclear(res);
    return NULL;
}

/* Runs sql with n parameters, judged. */
static PGresult *run(PGconn *pg, const char *sql, int n, const char *const *p, ExecStatusType want)
{
    return judged(PQexecParams(pg, sql, n, NULL, p, NULL, NULL, 0), want);
}

/* The first column of the first row as an integer; def without a row. */
static int64_t first_int(PGresult *res, int64_t def)
{
    int64_t v = def;
    if (res && PQntuples(res) > 0 && pg_value_i64(res, 0, 0, &v) < 0) {
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s is not a number", PQfname(res, 0));
        v = def;
    }
    PQclear(res);
    return v;
}

int64_t webhook_store_endpoint(PGconn *pg, const char *url)
{
    const char *p[] = {url};
    return first_int(run(pg,
                         "INSERT INTO webhook_endpoints (url, after_event)"
                         " VALUES ($1, (SELECT coalesce(max(id), 0) FROM order_events))"
                         " ON CONFLICT (url) DO UPDATE SET url = EXCLUDED.url RETURNING id",
                         1, p, PGRES_TUPLES_OK),
                     -1);
}

/* Reads a result of the due query into out. n or -1. */
static int due_read(PGresult *res, webhook_delivery *out, int cap)
{
    int n = PQntuples(res) < cap ? PQntuples(res) : cap;
    outbox_event *ev = malloc((size_t)(n > 0 ? n : 1) * sizeof(*ev));
    if (!ev)
        return -1;
    if (outbox_events_read(res, ev, n) < 0)
        n = -1;
    for (int i = 0; i < n; i++) {
        pg_row f = pg_row_at(res, i);
        out[i].ev = ev[i];
        out[i].endpoint_id = pg_row_i64(&f, OUTBOX_EVENT_NCOLUMNS);
        out[i].attempts = pg_row_int(&f, OUTBOX_EVENT_NCOLUMNS + 1);
        if (pg_row_check(&f, COMPONENT, "a delivery") < 0)
            n = -1;
    }
    free(ev);
    return n;
}

int webhook_store_due(PGconn *pg, const int64_t *ids, const int64_t *room, size_t n,
                      const webhook_key *busy, size_t nbusy, webhook_delivery *out, int cap)
{
    char *p[4] = {pg_array_of_i64(ids, n, sizeof(*ids)), pg_array_of_i64(room, n, sizeof(*room)),
                  pg_array_of_i64(&busy[0].endpoint_id, nbusy, sizeof(*busy)),
                  pg_array_of_i64(&busy[0].event_id, nbusy, sizeof(*busy))};
    PGresult *res = NULL;
    if (p[0] && p[1] && p[2] && p[3])
        res = run(pg,
                  "SELECT " OUTBOX_EVENT_COLUMNS
                  ", endpoint_id, attempts FROM (SELECT " OUTBOX_EVENT_INNER
                  ", d.endpoint_id, d.attempts"
                  " FROM unnest($1::bigint[], $2::bigint[]) AS ep (id, room)"
                  " CROSS JOIN LATERAL (SELECT d.endpoint_id, d.event_id, d.attempts"
                  "   FROM webhook_deliveries d"
                  "   WHERE d.endpoint_id = ep.id AND d.dead_at IS NULL AND d.next_at <= now()"
                  /* The head of its order's chain. A correlated subquery, not NOT EXISTS: a
                   * planner without statistics yet (a new table) ran that as an anti join that
                   * read every delivery of the endpoint for each row. */
                  "     AND d.event_id = (SELECT min(w.event_id) FROM webhook_deliveries w"
                  "       WHERE w.endpoint_id = d.endpoint_id AND w.order_id = d.order_id)"
                  "     AND NOT EXISTS (SELECT 1 FROM unnest($3::bigint[], $4::bigint[])"
                  "       AS b (endpoint_id, event_id)"
                  "       WHERE b.endpoint_id = d.endpoint_id AND b.event_id = d.event_id)"
                  "   ORDER BY d.event_id LIMIT ep.room) d"
                  " JOIN order_events e ON e.id = d.event_id " OUTBOX_EVENT_ORDER
                  ") x ORDER BY endpoint_id, ev_id",
                  4, (const char *const *)p, PGRES_TUPLES_OK);
    for (size_t i = 0; i < 4; i++)
        free(p[i]);
    if (!res)
        return -1;
    int got = due_read(res, out, cap);
    PQclear(res);
    return got;
}

/* Runs the command sql with two bigint[] parameters: n integers each, read
 * every stride bytes from a and from b. 0 or -1. */
static int run_pairs(PGconn *pg, const char *sql, const int64_t *a, const int64_t *b, size_t n,
                     size_t stride)
{
    char *p[2] = {pg_array_of_i64(a, n, stride), pg_array_of_i64(b, n, stride)};
    PGresult *res = NULL;
    if (p[0] && p[1])
        res = run(pg, sql, 2, (const char *const *)p, PGRES_COMMAND_OK);
    free(p[0]);
    free(p[1]);
    PQclear(res);
    return res ? 0 : -1;
}

int webhook_store_delivered(PGconn *pg, const webhook_key *done, size_t n)
{
    return run_pairs(pg,
                     "DELETE FROM webhook_deliveries d"
                     " USING unnest($1::bigint[], $2::bigint[]) AS x (endpoint_id, event_id)"
                     " WHERE d.endpoint_id = x.endpoint_id AND d.event_id = x.event_id",
                     &done[0].endpoint_id, &done[0].event_id, n, sizeof(*done));
}

/* The delivery's endpoint and event as text parameters. */
typedef struct delivery_keys {
    char endpoint[24], event[24], order[24];
} delivery_keys;

static void keys_of(const webhook_delivery *d, delivery_keys *k)
{
    snprintf(k->endpoint, sizeof(k->endpoint), "%" PRId64, d->endpoint_id);
    snprintf(k->event, sizeof(k->event), "%" PRId64, d->ev.id);
    snprintf(k->order, sizeof(k->order), "%" PRId64, d->ev.order.o.id);
}

int64_t webhook_store_cursor(PGconn *pg, int64_t endpoint_id)
{
    return first_int(
        judged(
            pg_exec_id(pg, "SELECT after_event FROM webhook_endpoints WHERE id = $1", endpoint_id),
            PGRES_TUPLES_OK),
        -1);
}

int webhook_store_page(PGconn *pg, int64_t after, int limit, const int64_t *ids, size_t n,
                       outbox_event *out, uint32_t *has_row)
{
    char after_s[24], limit_s[12];
    snprintf(after_s, sizeof(after_s), "%" PRId64, after);
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    char *list = pg_array_of_i64(ids, n, sizeof(*ids));
    const char *p[] = {after_s, limit_s, list};
    /* has_row: bit i when endpoint ids[i] has a row of the event's order. The
     * rows are only the failures and the events behind them: the uncorrelated
     * EXISTS runs once, so a page costs no probe at all while none fails. */
    PGresult *res =
        list ? run(pg,
                   "SELECT " OUTBOX_EVENT_COLUMNS ", has_row FROM (SELECT " OUTBOX_EVENT_INNER
                   ", CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries) THEN"
                   "   (SELECT coalesce(bit_or(1::bigint << (i.ord - 1)::int), 0)"
                   "    FROM unnest($3::bigint[]) WITH ORDINALITY AS i (id, ord)"
                   "    WHERE EXISTS (SELECT 1 FROM webhook_deliveries d"
                   "      WHERE d.endpoint_id = i.id AND d.order_id = e.order_id))"
                   "   ELSE 0 END AS has_row"
                   " FROM order_events e " OUTBOX_EVENT_ORDER
                   " WHERE e.id > $1::bigint ORDER BY e.id LIMIT $2::int) x ORDER BY ev_id",
                   3, p, PGRES_TUPLES_OK)
             : NULL;
    free(list);
    if (!res)
        return -1;
    int got = PQntuples(res) < limit ? PQntuples(res) : limit;
    if (outbox_events_read(res, out, got) < 0)
        got = -1;
    for (int i = 0; i < got; i++) {
        pg_row f = pg_row_at(res, i);
        has_row[i] = (uint32_t)pg_row_i64(&f, OUTBOX_EVENT_NCOLUMNS);
        if (pg_row_check(&f, COMPONENT, "an event's rows") < 0)
            got = -1;
    }
    PQclear(res);
    return got;
}

int webhook_store_move(PGconn *pg, const int64_t *ids, const int64_t *cursors, size_t n)
{
    return run_pairs(pg,
                     "UPDATE webhook_endpoints w SET after_event = x.cursor"
                     " FROM unnest($1::bigint[], $2::bigint[]) AS x (id, cursor)"
                     " WHERE w.id = x.id AND w.after_event < x.cursor",
                     ids, cursors, n, sizeof(*ids));
}

int webhook_store_park(PGconn *pg, const webhook_delivery *d, const char *error, int64_t delay_ms,
                       int dead)
{
    delivery_keys k;
    keys_of(d, &k);
    char delay[24], attempts[12];
    snprintf(delay, sizeof(delay), "%" PRId64, delay_ms);
    snprintf(attempts, sizeof(attempts), "%d", d->attempts);
    const char *p[] = {k.endpoint, k.event, k.order, attempts, error, delay, dead ? "t" : "f"};
    /* Behind a dead event of its order, it joins it in the dead-letter (its
     * order's events stay in order), as its own last try would. */
    PGresult *res =
        run(pg,
            "INSERT INTO webhook_deliveries (endpoint_id, event_id, order_id, attempts, next_at,"
            "   last_error, dead_at)"
            " SELECT $1, $2, $3, $4::int, now() + make_interval(secs => $6::bigint / 1000.0),"
            "   CASE WHEN q.joined THEN 'an earlier event of its order is in the dead-letter'"
            "     ELSE $5 END, CASE WHEN $7::boolean OR q.joined THEN now() END"
            " FROM (SELECT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = $1"
            "   AND p.order_id = $3 AND p.dead_at IS NOT NULL) AS joined) q"
            " ON CONFLICT DO NOTHING",
            7, p, PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

int webhook_store_failed(PGconn *pg, const webhook_delivery *d, const char *error, int64_t delay_ms,
                         int dead)
{
    delivery_keys k;
    keys_of(d, &k);
    char delay[24];
    snprintf(delay, sizeof(delay), "%" PRId64, delay_ms);
    const char *p[] = {k.endpoint, k.event, error, delay, dead ? "t" : "f", k.order};
    PGresult *res =
        run(pg,
            "UPDATE webhook_deliveries SET"
            "  attempts = attempts + CASE WHEN event_id = $2::bigint THEN 1 ELSE 0 END,"
            "  last_error = CASE WHEN event_id = $2::bigint THEN $3"
            "    ELSE 'an earlier event of its order is in the dead-letter' END,"
            "  next_at = now() + make_interval(secs => $4::bigint / 1000.0),"
            "  dead_at = CASE WHEN $5::boolean THEN now() END"
            " WHERE endpoint_id = $1 AND (event_id = $2::bigint OR ($5::boolean AND order_id = $6"
            "   AND event_id > $2::bigint AND dead_at IS NULL))",
            6, p, PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

/* Runs the command sql, without parameters. 0 or -1. */
static int command(PGconn *pg, const char *sql)
{
    PGresult *res = run(pg, sql, 0, NULL, PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

int webhook_store_listen(PGconn *pg)
{
    return command(pg, "LISTEN " OUTBOX_CHANNEL);
}

int webhook_store_analyze(PGconn *pg)
{
    return command(pg, "ANALYZE webhook_deliveries");
}

int webhook_store_lags_ms(PGconn *pg, const int64_t *ids, size_t n, int64_t *lag_ms)
{
    /* Every endpoint registered (a handful; those no longer configured
     * too), the oldest event waiting at each (ids are in commit order): the
     * first of its deliveries, else the first not yet taken. */
    PGresult *res =
        run(pg,
            "SELECT ep.id, (coalesce(extract(epoch FROM now() - (SELECT created_at"
            "   FROM order_events WHERE id = coalesce((SELECT min(event_id)"
            "     FROM webhook_deliveries WHERE endpoint_id = ep.id AND dead_at IS NULL),"
            "   (SELECT min(id) FROM order_events WHERE id > ep.after_event)))), 0) * 1000)::bigint"
            " FROM webhook_endpoints ep",
            0, NULL, PGRES_TUPLES_OK);
    size_t found = 0;
    for (int r = 0; res && r < PQntuples(res); r++) {
        int64_t id, lag;
        if (pg_value_i64(res, r, 0, &id) < 0 || pg_value_i64(res, r, 1, &lag) < 0)
            break;
        for (size_t i = 0; i < n; i++)
            if (ids[i] == id) {
                lag_ms[i] = lag;
                found++;
            }
    }
    PQclear(res);
    return res && found == n ? 0 : -1;
}

int64_t webhook_store_head(PGconn *pg)
{
    return first_int(run(pg, "SELECT last_value FROM order_events_ids", 0, NULL, PGRES_TUPLES_OK),
                     -1);
}
